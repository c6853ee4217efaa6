"""Hypothesis fuzzing of the framing layer and of every method's params (DESIGN.md §8).

Each test starts one real sidecar and drives many generated examples through it.  Hypothesis
runs its (synchronous) examples in a worker thread; each example calls back into the event
loop that owns the client with :func:`anyio.from_thread.run`.  Whatever is sent, every
request gets an answer (never an internal error, never a traceback), the connection survives
and the sidecar answers a valid ``server/ping`` afterwards.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
import re
import time
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
import pytest
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

from protocol.framing import FrameDecoder, encode_frame
from protocol.methods import ALL_METHODS
from sidecar.client import RpcError, SidecarClient
from tests.conftest import SidecarFactory, assert_valid_frames

pytestmark = pytest.mark.anyio

LIMIT = 262_144
ARGS = ("--max-message-bytes", str(LIMIT))
#: Codes a request may legitimately be refused with; -32603 (internal) is always a defect.
ALLOWED_CODES = {-32600, -32601, -32602, -32000, -32002, -32800}
DOTTED = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$", re.IGNORECASE)
REPLY_TIMEOUT = 10.0

FUZZ_SETTINGS = settings(
    deadline=None,
    derandomize=True,
    database=None,
    print_blob=False,
    # one live sidecar carries state from example to example: report the first failure as it
    # happened rather than shrinking against a process that may have died
    phases=(Phase.explicit, Phase.generate),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

REQUEST_METHODS = [
    m for m in ALL_METHODS if m.kind == "request" and m.direction == "clientToServer"
]


# --- helpers ---------------------------------------------------------------------------------


class Tap:
    """Reads the messages the sidecar wrote since the last call (strictly framed)."""

    def __init__(self, client: SidecarClient) -> None:
        self.client = client
        self.pos = len(client.stdout_bytes)
        self.decoder = FrameDecoder(max_body=1 << 31)
        self.seen: list[dict[str, Any]] = []

    def poll(self) -> list[dict[str, Any]]:
        data = bytes(self.client.stdout_bytes[self.pos :])
        self.pos += len(data)
        fresh: list[dict[str, Any]] = []
        for item in self.decoder.feed(data):
            assert isinstance(item, bytes), f"stdout carried a broken frame: {item}"
            message = json.loads(item)
            assert isinstance(message, dict) and message.get("jsonrpc") == "2.0", message
            fresh.append(message)
        self.seen.extend(fresh)
        return fresh

    async def reply_to(self, msg_id: object, timeout: float = REPLY_TIMEOUT) -> dict[str, Any]:
        """The response whose id is ``msg_id`` (already seen or still to come)."""
        deadline = time.monotonic() + timeout
        while True:
            self.poll()
            for message in self.seen:
                if "method" not in message and message.get("id") == msg_id:
                    return message
            assert self.client.process.returncode is None, "the sidecar died"
            assert time.monotonic() < deadline, f"no answer to id {msg_id!r} in {timeout}s"
            await asyncio.sleep(0.005)

    def null_id_errors(self) -> list[dict[str, Any]]:
        self.poll()
        return [m for m in self.seen if "error" in m and m.get("id") is None]


def check_error(error: dict[str, Any], what: str) -> None:
    """A well-formed refusal: an allowed code, a dotted ``data.code``, no traceback."""
    assert error.get("code") != -32603, f"internal error for {what}: {error}"
    assert error.get("code") in ALLOWED_CODES | {-32700}, f"unexpected code for {what}: {error}"
    data = error.get("data")
    assert isinstance(data, dict), f"error without data for {what}: {error}"
    code = data.get("code")
    assert isinstance(code, str) and DOTTED.match(code), f"bad data.code for {what}: {error}"
    text = json.dumps(error)
    assert "Traceback" not in text and 'File \\"' not in text, f"traceback leaked: {what}"


async def ping(client: SidecarClient) -> None:
    pong = await asyncio.wait_for(client.request("server/ping", {}), REPLY_TIMEOUT)
    assert "time" in pong


class Guard:
    """Calls into the event loop from hypothesis' thread.

    Once the sidecar died, every later example (and hypothesis' replay of the failing one)
    re-raises the first failure, so the report names the example that killed it.
    """

    def __init__(self, client: SidecarClient) -> None:
        self.client = client
        self.fatal: BaseException | None = None

    def run(self, fn: Any, *args: Any) -> None:
        if self.fatal is not None:
            raise self.fatal
        try:
            anyio.from_thread.run(fn, *args)
        except BaseException as exc:
            if self.client.process.returncode is None:
                raise
            self.fatal = AssertionError(
                f"the sidecar died (exit {self.client.process.returncode}) on {args!r:.600}"
            )
            raise self.fatal from exc


def run_examples(test: Any) -> Any:
    """Run a hypothesis-decorated sync function in a worker thread (it calls back in)."""
    return anyio.to_thread.run_sync(test)


# --- strategies ------------------------------------------------------------------------------

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
    | st.sampled_from(["", "ses_x", "run_x", "inp_x", "snap_x", "../..", "\x00", "a" * 300])
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)

FRAGMENTS = [
    b"\r\n\r\n",
    b"\r\n",
    b"\n\n",
    b"Content-Length:",
    b"Content-Length: ",
    b"Content-Length: 12\r\n",
    b"content-length: 7\r\n\r\n",
    b"Content-Length: 300000\r\n\r\n",
    b"Content-Length: -1\r\n\r\n",
    b"Content-Length: 1e3\r\n\r\n",
    b"Content-Length: 5\r\nContent-Length: 9\r\n\r\n",
    b"Content-Type: application/json\r\n",
    b'Content-Length: 5\r\n\r\n{"a":',
    b"Content-Length: 2\r\n\r\n{}",
    b"Content-Le",
    b"ngth: 3\r\n\r\n",
    b"\xff\xfe\xfd",
    b"\xc3\x28",
    b"\xed\xa0\x80",
    b"\x00",
    b"X" * 9000,
    b"Name" + b"x" * 9000 + b": 1\r\n",
    b'{"jsonrpc":"2.0","id":1,"method":"server/ping"}',
]
garbage_streams = st.lists(
    st.binary(max_size=48) | st.sampled_from(FRAGMENTS), min_size=1, max_size=10
).map(b"".join)


# --- (1) random byte streams -----------------------------------------------------------------


async def test_random_byte_streams_never_kill_the_connection(sidecars: SidecarFactory) -> None:
    client = await sidecars.start(args=ARGS)
    guard = Guard(client)
    tap = Tap(client)
    mirror = FrameDecoder(LIMIT)  # the sidecar's decoder, replayed here
    counter = itertools.count()
    examples = 0

    async def send_and_ping(data: bytes, ping_id: str) -> None:
        client.send_raw(data)
        reply = await tap.reply_to(ping_id, timeout=5)
        assert "result" in reply and "time" in reply["result"], reply

    @settings(FUZZ_SETTINGS, max_examples=120)
    @given(garbage=garbage_streams)
    def one(garbage: bytes) -> None:
        nonlocal mirror, examples
        ping_id = f"ping-{next(counter):06d}"
        body = json.dumps({"jsonrpc": "2.0", "id": ping_id, "method": "server/ping"}).encode()
        frame = encode_frame(body)
        # Garbage may open a header block or announce a body that would swallow the ping:
        # find the fewest blank lines that bring the stream back to a frame boundary.
        pairs = 0
        while True:
            trial = copy.deepcopy(mirror)
            if body in trial.feed(garbage + b"\r\n" * pairs + frame):
                break
            pairs = max(1, pairs * 2)
            assume(pairs <= 1 << 19)
        data = garbage + b"\r\n" * pairs + frame
        mirror.feed(data)
        guard.run(send_and_ping, data, ping_id)
        examples += 1

    await run_examples(one)
    await ping(client)
    assert client.process.returncode is None
    assert_valid_frames(client.stdout_bytes)
    print(f"random streams: {examples} examples")  # noqa: T201


# --- (2) well-framed hostile bodies ----------------------------------------------------------


def wire_fields(spec: Any) -> list[str]:
    return [f.alias or name for name, f in spec.params.model_fields.items()]


#: Where deep values go: every field of every method (``x`` when it takes no params).
DEEP_TARGETS = [
    f"{m.name}:{field}"
    for m in REQUEST_METHODS
    if m.name != "server/sleep"
    for field in (wire_fields(m) or ["x"])
]


def nested(depth: int, kind: str) -> str:
    if kind == "list":
        return "[" * depth + "]" * depth
    return '{"a":' * depth + "1" + "}" * depth


bodies = st.one_of(
    # not JSON (random bytes, invalid UTF-8, truncated JSON)
    st.tuples(st.just("garbage"), st.binary(max_size=200)),
    st.tuples(st.just("truncated"), st.integers(min_value=0, max_value=60)),
    # JSON that is not an object
    st.tuples(st.just("not_object"), json_values.filter(lambda v: not isinstance(v, dict))),
    # deep nesting, inside params of a request with an id
    st.tuples(
        st.just("deep"),
        st.tuples(
            st.integers(min_value=1, max_value=10_000),
            st.sampled_from(["list", "dict"]),
            st.sampled_from(DEEP_TARGETS),
        ),
    ),
    # huge strings around the limit
    st.tuples(st.just("huge"), st.integers(min_value=LIMIT - 3_000, max_value=LIMIT + 3_000)),
    # envelopes of the wrong shape
    st.tuples(
        st.just("envelope"),
        st.dictionaries(
            st.sampled_from(["jsonrpc", "method", "params", "extra"]), json_values, max_size=4
        ),
    ),
)


async def test_hostile_bodies_get_error_answers(sidecars: SidecarFactory) -> None:
    client = await sidecars.start(args=ARGS)
    guard = Guard(client)
    tap = Tap(client)
    ids = itertools.count(1_000_000)
    examples = 0

    async def expect_null_id_error(body: bytes, what: str) -> None:
        before = len(tap.null_id_errors())
        client.send_raw(encode_frame(body))
        await ping(client)
        errors = tap.null_id_errors()[before:]
        assert len(errors) == 1, f"{what}: expected one id-null error, got {errors}"
        check_error(errors[0]["error"], what)

    async def expect_answer(body: bytes, msg_id: int, what: str) -> None:
        client.send_raw(encode_frame(body))
        reply = await tap.reply_to(msg_id)
        if "error" in reply:
            check_error(reply["error"], what)
        else:
            assert "result" in reply, reply
        await ping(client)

    @settings(FUZZ_SETTINGS, max_examples=100)
    @given(case=bodies)
    def one(case: tuple[str, Any]) -> None:
        nonlocal examples
        kind, value = case
        msg_id = next(ids)
        head = f'{{"jsonrpc":"2.0","id":{msg_id},"method":'
        what = f"{kind} {str(value)[:200]}"
        if kind == "garbage":
            assert isinstance(value, bytes)
            try:
                parsed = json.loads(value)
            except ValueError:
                parsed = None
            assume(not isinstance(parsed, dict))
            guard.run(expect_null_id_error, value, what)
        elif kind == "truncated":
            full = (head + '"session/create","params":{"title":"t"}}').encode()
            guard.run(expect_null_id_error, full[: min(value, len(full) - 1)], what)
        elif kind == "not_object":
            body = json.dumps(value).encode()
            guard.run(expect_null_id_error, body, what)
        elif kind == "deep":
            depth, shape, target = value
            method, field = target.split(":")
            deep = nested(depth, shape)
            params = f'{{"k":{deep}}}' if target == "session/create:meta" else deep
            text = head + f'"{method}","params":{{"{field}":{params}}}}}'
            guard.run(expect_answer, text.encode(), msg_id, what)
        elif kind == "huge":
            body = (head + '"tokens/count","params":{"texts":["' + "x" * value + '"]}}').encode()
            guard.run(expect_answer, body, msg_id, f"huge string of {value}")
        else:
            envelope = {**value, "id": msg_id}
            body = json.dumps(envelope).encode()
            if envelope.get("method") == "server/sleep":
                return
            guard.run(expect_answer, body, msg_id, what)
        examples += 1

    await run_examples(one)
    await ping(client)
    assert client.process.returncode is None
    assert_valid_frames(client.stdout_bytes)
    print(f"hostile bodies: {examples} examples")  # noqa: T201


@pytest.mark.parametrize("depth", [300, 10_000])
async def test_deep_nesting_in_every_field(sidecars: SidecarFactory, depth: int) -> None:
    """Every field of every method, given a value nested ``depth`` levels deep."""
    client = await sidecars.start(args=ARGS)
    tap = Tap(client)
    failures: list[str] = []
    for msg_id, (target, shape) in enumerate(itertools.product(DEEP_TARGETS, ["dict", "list"])):
        method, field = target.split(":")
        deep = nested(depth, shape)
        params = f'{{"k":{deep}}}' if target == "session/create:meta" else deep
        body = (
            f'{{"jsonrpc":"2.0","id":{msg_id},"method":"{method}","params":{{"{field}":{params}}}}}'
        )
        what = f"{method} params={{{field!r}: <{shape} nested {depth} deep>}}"
        client.send_raw(encode_frame(body.encode()))
        try:
            reply = await tap.reply_to(msg_id)
        except AssertionError as err:
            raise AssertionError(f"{what}: {err}; earlier: {failures}") from None
        if "error" in reply:
            try:
                check_error(reply["error"], what)
            except AssertionError as err:
                failures.append(str(err).splitlines()[0])
        if isinstance(reply.get("result"), dict) and isinstance(reply["result"].get("runId"), str):
            await client.request("run/cancel", {"runId": reply["result"]["runId"]})
    await ping(client)
    assert client.process.returncode is None
    assert_valid_frames(client.stdout_bytes)
    assert not failures, "\n".join(failures)


# --- (3) every method's params ---------------------------------------------------------------


def params_for(fields: list[str], pool: list[str]) -> st.SearchStrategy[Any]:
    values = json_values | st.sampled_from(pool)
    keys = st.sampled_from([*fields, "bogus", "session_id"]) if fields else st.text(max_size=8)
    return st.one_of(
        st.none(),
        json_values,
        st.dictionaries(keys, values, max_size=max(3, len(fields))),
        st.fixed_dictionaries({f: values for f in fields}),
    )


async def test_every_method_refuses_bad_params_cleanly(sidecars: SidecarFactory) -> None:
    client = await sidecars.start(args=ARGS)
    guard = Guard(client)
    session = await client.request("session/create", {"title": "fuzz"})
    pool = [session["id"] if "id" in session else session.get("sessionId", "ses_x")]
    examples = 0
    runs_started = 0

    async def call(method: str, params: Any) -> None:
        nonlocal runs_started
        what = f"{method} params={json.dumps(params)[:2000]}"
        msg_id, future = client.start_request(method, params)
        wait = 1.0 if method == "server/sleep" else REPLY_TIMEOUT
        try:
            result = await asyncio.wait_for(asyncio.shield(future), wait)
        except TimeoutError:
            assert method == "server/sleep", f"no answer in {wait}s: {what}"
            client.cancel(msg_id)
            result = None
            try:
                await asyncio.wait_for(future, REPLY_TIMEOUT)
            except RpcError as err:
                assert err.code == -32800, f"{what}: {err.code} {err.data}"
        except RpcError as err:
            check_error({"code": err.code, "message": err.message, "data": err.data}, what)
            assert "Traceback" not in str(err.message), what
            result = None
        if isinstance(result, dict) and isinstance(result.get("runId"), str):
            runs_started += 1
            try:
                await asyncio.wait_for(
                    client.request("run/cancel", {"runId": result["runId"]}), REPLY_TIMEOUT
                )
            except RpcError as err:
                check_error({"code": err.code, "message": err.message, "data": err.data}, what)
        await ping(client)

    def examples_for(method: str, fields: list[str]) -> Any:
        @settings(FUZZ_SETTINGS, max_examples=20)
        @given(params=params_for(fields, pool))
        def one(params: Any) -> None:
            nonlocal examples
            guard.run(call, method, params)
            examples += 1

        return one

    for spec in REQUEST_METHODS:
        await run_examples(examples_for(spec.name, wire_fields(spec)))

    await ping(client)
    assert client.process.returncode is None
    assert_valid_frames(client.stdout_bytes)
    print(  # noqa: T201
        f"params: {examples} examples over {len(REQUEST_METHODS)} methods, "
        f"{runs_started} runs started"
    )
