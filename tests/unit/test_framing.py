"""``protocol.framing``: the sans-IO ``Content-Length`` decoder shared by server and clients."""

from __future__ import annotations

import json
import tracemalloc

import pytest

from protocol.framing import BadHeader, FrameDecoder, TooLarge, encode_frame, peek_members

Item = bytes | TooLarge | BadHeader


def feed_all(decoder: FrameDecoder, data: bytes, chunk: int | None = None) -> list[Item]:
    """Feed ``data`` whole, or ``chunk`` bytes at a time; collect everything decoded."""
    if chunk is None:
        return decoder.feed(data)
    out: list[Item] = []
    for i in range(0, len(data), chunk):
        out.extend(decoder.feed(data[i : i + chunk]))
    return out


def request(rid: int, method: str = "server/ping", params: object = None) -> bytes:
    message: dict[str, object] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message).encode()


# --- encode ----------------------------------------------------------------------------------


def test_encode_frame_counts_bytes_not_characters() -> None:
    body = '{"t":"é€😀"}'.encode()
    assert len(body) != len(body.decode())
    assert len(body) == 17  # 8 ASCII + 2 + 3 + 4 bytes for é € 😀
    assert encode_frame(body) == b"Content-Length: 17\r\n\r\n" + body


# --- well-formed streams ----------------------------------------------------------------------


def test_a_frame_fed_one_byte_at_a_time() -> None:
    body = request(1)
    decoder = FrameDecoder(max_body=1024)
    out: list[Item] = []
    stream = encode_frame(body)
    for i in range(len(stream)):
        got = decoder.feed(stream[i : i + 1])
        if i < len(stream) - 1:
            assert got == [], f"frame emitted early, after {i + 1} of {len(stream)} bytes"
            assert decoder.pending <= i + 1
        out.extend(got)
    assert out == [body]
    assert decoder.pending == 0


def test_several_frames_in_one_chunk() -> None:
    bodies = [request(i) for i in range(5)]
    decoder = FrameDecoder(max_body=1024)
    assert decoder.feed(b"".join(encode_frame(b) for b in bodies)) == bodies
    assert decoder.pending == 0


def test_frames_split_across_chunks_at_every_offset() -> None:
    bodies = [request(1), b"{}", request(2, "session/get", {"sessionId": "ses_x"})]
    stream = b"".join(encode_frame(b) for b in bodies)
    for cut in range(1, len(stream)):
        decoder = FrameDecoder(max_body=1024)
        out = decoder.feed(stream[:cut]) + decoder.feed(stream[cut:])
        assert out == bodies, f"split at byte {cut}"
        assert decoder.pending == 0


@pytest.mark.parametrize(
    "header",
    [
        b"Content-Length: 2\r\n\r\n",
        b"Content-Length: 2\n\n",
        b"Content-Length: 2\r\n\n",
        b"content-length: 2\r\n\r\n",
        b"CONTENT-LENGTH:2\r\n\r\n",
        b"cOnTeNt-LeNgTh:   2  \r\n\r\n",
        b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: 2\r\n\r\n",
        b"Content-Length: 2\r\nContent-Type: application/json\r\nX-Other: a:b:c\r\n\r\n",
    ],
    ids=[
        "crlf",
        "bare-lf",
        "mixed",
        "lowercase",
        "uppercase-no-space",
        "mixed-case-padded",
        "content-type-first",
        "extra-headers-after",
    ],
)
def test_header_variants_are_accepted(header: bytes) -> None:
    decoder = FrameDecoder(max_body=1024)
    tail = encode_frame(b"[1]")
    assert decoder.feed(header + b"{}" + tail) == [b"{}", b"[1]"]
    assert decoder.pending == 0


def test_multibyte_utf8_body_length_is_in_bytes() -> None:
    body = json.dumps({"text": "naïve café — 日本語 😀"}, ensure_ascii=False).encode()
    chars = len(body.decode())
    assert chars < len(body)
    decoder = FrameDecoder(max_body=1024)
    # A decoder counting characters would cut the body short and misread the next frame.
    out = feed_all(decoder, encode_frame(body) + encode_frame(b"{}"), chunk=3)
    assert out == [body, b"{}"]
    assert json.loads(out[0])["text"] == "naïve café — 日本語 😀"  # type: ignore[arg-type]


def test_zero_length_body() -> None:
    decoder = FrameDecoder(max_body=1024)
    assert decoder.feed(b"Content-Length: 0\r\n\r\n" + encode_frame(b"{}")) == [b"", b"{}"]
    assert decoder.pending == 0


def test_body_of_exactly_max_body_is_accepted() -> None:
    body = b"[" + b"1," * 49 + b"1]"
    decoder = FrameDecoder(max_body=len(body))
    assert decoder.feed(encode_frame(body)) == [body]


# --- oversized bodies ------------------------------------------------------------------------


def test_oversized_body_reports_id_and_method_and_the_next_frame_decodes() -> None:
    body = request(42, "session/append", {"blob": "x" * 5000})
    decoder = FrameDecoder(max_body=1000)
    out = feed_all(decoder, encode_frame(body) + encode_frame(request(43)), chunk=512)
    assert out == [
        TooLarge(size=len(body), limit=1000, request_id=42, method="session/append"),
        request(43),
    ]
    assert decoder.pending == 0


def test_oversized_body_with_a_string_id() -> None:
    body = b'{"jsonrpc":"2.0","id":"req-7","method":"tokens/count","params":{"texts":["%s"]}}' % (
        b"y" * 3000
    )
    out = FrameDecoder(max_body=100).feed(encode_frame(body))
    assert out == [TooLarge(size=len(body), limit=100, request_id="req-7", method="tokens/count")]


def test_oversized_notification_has_no_id() -> None:
    body = json.dumps({"jsonrpc": "2.0", "method": "$/note", "params": {"x": "z" * 500}}).encode()
    out = FrameDecoder(max_body=100).feed(encode_frame(body))
    assert out == [TooLarge(size=len(body), limit=100, request_id=None, method="$/note")]


def test_id_after_a_huge_params_is_not_found() -> None:
    # Only a prefix of an oversized body is kept; an id written after a params larger than
    # that prefix cannot be read, and the decoder must say so rather than guess.
    params = {"texts": ["p" * (200 * 1024)]}
    body = json.dumps({"jsonrpc": "2.0", "method": "tokens/count", "params": params, "id": 9})
    decoder = FrameDecoder(max_body=1024)
    out = feed_all(decoder, encode_frame(body.encode()) + encode_frame(b"{}"), chunk=64 * 1024)
    assert out == [
        TooLarge(size=len(body), limit=1024, request_id=None, method="tokens/count"),
        b"{}",
    ]


def test_huge_body_is_skipped_without_being_buffered() -> None:
    chunk = 64 * 1024
    size = 32 * 1024 * 1024
    head = b'{"jsonrpc":"2.0","id":5,"method":"session/append","params":{"x":"'
    filler = b"a" * chunk
    decoder = FrameDecoder(max_body=1024 * 1024)
    tracemalloc.start()
    try:
        items = decoder.feed(b"Content-Length: %d\r\n\r\n" % size + head)
        sent = len(head)
        while sent < size:
            piece = filler[: min(chunk, size - sent)]
            items += decoder.feed(piece)
            sent += len(piece)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert items == [TooLarge(size=size, limit=1024 * 1024, request_id=5, method="session/append")]
    # The 32 MiB body never sits in memory; only its 64 KiB prefix and one chunk at a time.
    assert peak < 4 * 1024 * 1024, f"peak {peak} bytes while skipping a {size}-byte body"
    assert decoder.feed(encode_frame(b"{}")) == [b"{}"]
    assert decoder.pending == 0


def test_pending_stays_bounded_while_a_huge_body_streams_past() -> None:
    # ``pending`` is documented as "bytes buffered towards an incomplete frame": while an
    # oversized body is skipped nothing accumulates, so it must stay within one chunk.
    chunk = 64 * 1024
    size = 8 * 1024 * 1024
    decoder = FrameDecoder(max_body=1024 * 1024)
    assert decoder.feed(b"Content-Length: %d\r\n\r\n" % size) == []
    highest = decoder.pending
    sent = 0
    while sent < size:
        n = min(chunk, size - sent)
        out = decoder.feed(b"b" * n)
        sent += n
        highest = max(highest, decoder.pending)
        if sent < size:
            assert out == []
    assert highest <= chunk, f"pending reached {highest} bytes for {chunk}-byte chunks"
    assert decoder.pending == 0


# --- malformed headers -----------------------------------------------------------------------


BAD_HEADERS = [
    (b"Content-Length: abc\r\n\r\n{}", "not a number"),
    (b"Content-Length: -5\r\n\r\n{}", "not a number"),
    (b"Content-Length: 1.5\r\n\r\n{}", "not a number"),
    (b"Content-Length: \r\n\r\n{}", "not a number"),
    (b"Content-Type: application/json\r\n\r\n{}", "no Content-Length"),
    (b"Content-Length: 2\r\nthis line has no colon\r\n\r\n{}", "without a colon"),
    (b"garbage\r\n\r\n{}", "without a colon"),
]
BAD_IDS = ["letters", "negative", "fraction", "empty", "missing", "no-colon", "garbage"]


@pytest.mark.parametrize(("bad", "reason"), BAD_HEADERS, ids=BAD_IDS)
def test_bad_header_is_reported_then_the_next_frame_decodes(bad: bytes, reason: str) -> None:
    good = request(2)
    decoder = FrameDecoder(max_body=1024)
    out = decoder.feed(bad + encode_frame(good))
    assert len(out) == 2, out
    assert isinstance(out[0], BadHeader)
    assert reason in out[0].reason
    assert out[1] == good
    assert decoder.pending == 0


def test_bad_header_resyncs_when_the_stream_arrives_in_small_reads() -> None:
    # The streams above, cut into small reads (a pipe may deliver a frame's header and its
    # body in different reads): the valid frame that follows must still be decoded.
    good = request(2)
    lost = []
    for (bad, _), name in zip(BAD_HEADERS, BAD_IDS, strict=True):
        for chunk in (1, 7):
            decoder = FrameDecoder(max_body=1024)
            out = feed_all(decoder, bad + encode_frame(good), chunk=chunk)
            assert out and isinstance(out[0], BadHeader), (name, chunk, out)
            if out[1:] != [good] or decoder.pending != 0:
                lost.append((name, chunk, out[1:]))
    assert lost == [], f"valid frame not decoded after a bad header: {lost}"


def test_bad_header_then_its_body_in_a_later_read() -> None:
    decoder = FrameDecoder(max_body=1024)
    first = decoder.feed(b"Content-Length: abc\r\n\r\n")
    assert len(first) == 1 and isinstance(first[0], BadHeader)
    rest = decoder.feed(b'{"jsonrpc":"2.0","id":1}') + decoder.feed(encode_frame(request(2)))
    assert rest == [request(2)]


@pytest.mark.parametrize(
    "garbage", [b"junk\r\n", b"\x00\x01 noise ", b"x" * 1000], ids=["line", "noise", "long"]
)
def test_garbage_before_a_frame_in_the_same_read(garbage: bytes) -> None:
    good = request(5)
    decoder = FrameDecoder(max_body=1024, max_header=256)
    out = decoder.feed(garbage + encode_frame(good))
    assert out[-1:] == [good], out
    assert out[:-1] and all(isinstance(item, BadHeader) for item in out[:-1]), out
    assert decoder.pending == 0


def test_header_block_over_max_header_fed_in_pieces() -> None:
    bloated = b"Content-Length: 2\r\nX-Padding: " + b"p" * 20_000 + b"\r\n\r\n{}"
    good = request(3)
    decoder = FrameDecoder(max_body=1024, max_header=4096)
    out = feed_all(decoder, bloated + encode_frame(good), chunk=1000)
    assert out, "nothing decoded"
    assert any(isinstance(item, BadHeader) for item in out), out
    assert all(isinstance(item, BadHeader) for item in out[:-1]), out
    assert out[-1] == good
    assert not any(item == b"{}" for item in out), "the bloated frame's body was delivered"
    assert decoder.pending == 0


def test_header_block_over_max_header_is_rejected_however_it_is_chunked() -> None:
    # A sans-IO decoder's output must not depend on how the stream is cut into reads: the
    # same bloated header block is refused when it arrives in one read too.
    bloated = b"Content-Length: 2\r\nX-Padding: " + b"p" * 20_000 + b"\r\n\r\n{}"
    good = request(3)
    results = {}
    for chunk in (None, 1000):
        decoder = FrameDecoder(max_body=1024, max_header=4096)
        out = feed_all(decoder, bloated + encode_frame(good), chunk=chunk)
        results[chunk] = (
            any(isinstance(item, BadHeader) for item in out),
            [item for item in out if isinstance(item, bytes)],
        )
    assert results[None] == results[1000] == (True, [good]), results


def test_header_without_end_is_bounded_and_resyncs() -> None:
    decoder = FrameDecoder(max_body=1024, max_header=256)
    out = decoder.feed(b"x" * 1000)
    assert len(out) == 1 and isinstance(out[0], BadHeader)
    assert "256" in out[0].reason
    assert decoder.pending < 256
    good = request(4)
    assert decoder.feed(encode_frame(good)) == [good]
    assert decoder.pending == 0


def test_blank_lines_between_frames_are_ignored() -> None:
    decoder = FrameDecoder(max_body=1024)
    out = decoder.feed(encode_frame(b"{}") + b"\r\n\n\r\n" + encode_frame(b"[]"))
    assert out == [b"{}", b"[]"]


# --- peek_members ----------------------------------------------------------------------------


def test_peek_members_reads_a_truncated_object() -> None:
    prefix = b' { "jsonrpc" : "2.0", "id" : 17 , "method": "a/b", "params": {"x": [1, 2'
    assert peek_members(prefix, ("id", "method")) == {"id": 17, "method": "a/b"}


def test_peek_members_stops_at_an_unreadable_value() -> None:
    prefix = b'{"method": "a/b", "params": {"big": "unterminated'
    assert peek_members(prefix, ("id", "method")) == {"method": "a/b"}


def test_peek_members_ignores_nested_members_and_non_objects() -> None:
    assert peek_members(b'{"params": {"id": 1, "method": "x"}, "id": 2}', ("id", "method")) == {
        "id": 2
    }
    assert peek_members(b'[{"id": 1}]', ("id",)) == {}
    assert peek_members(b"", ("id",)) == {}
    assert peek_members(b"{}", ("id",)) == {}


def test_peek_members_survives_a_multibyte_character_cut_in_half() -> None:
    text = '{"method": "a/b", "id": 3, "params": {"t": "日本"}}'.encode()
    prefix = text[: text.index("日".encode()) + 1]
    assert peek_members(prefix, ("id", "method")) == {"method": "a/b", "id": 3}
