"""``sidecar.store.jsonl``: durable append-only JSONL with torn-tail repair on open."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from sidecar.errors import StoreCorruptError
from sidecar.store.jsonl import AppendLog, LoadedLog, write_file_atomic


def line(record: dict[str, object]) -> bytes:
    return json.dumps(record, separators=(",", ":")).encode() + b"\n"


def records(loaded: LoadedLog) -> list[dict[str, object]]:
    return [json.loads(x) for x in loaded.lines]


def open_writable(path: Path) -> AppendLog:
    log, _ = AppendLog.open(path)
    assert log is not None
    return log


def test_append_writes_then_fsyncs_then_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An append is acknowledged (returns) only after its bytes were written and fsynced.
    A ``kill -9`` test cannot see a missing fsync (the page cache outlives the process);
    this spy on the module's ``os.write`` / ``os.fsync`` can."""
    log = open_writable(tmp_path / "history.jsonl")
    events: list[tuple[str, bytes]] = []
    real_write, real_fsync = os.write, os.fsync

    def write(fd: int, data: bytes | memoryview) -> int:
        written = real_write(fd, data)
        if fd == log.fd:
            events.append(("write", bytes(data[:written])))
        return written

    def fsync(fd: int) -> None:
        real_fsync(fd)
        if fd == log.fd:
            events.append(("fsync", b""))

    monkeypatch.setattr("sidecar.store.jsonl.os.write", write)
    monkeypatch.setattr("sidecar.store.jsonl.os.fsync", fsync)
    payload = line({"seq": 1}) + line({"seq": 2})
    log.append(payload)
    events.append(("returned", b""))
    monkeypatch.undo()
    log.close()
    assert events == [("write", payload), ("fsync", b""), ("returned", b"")]


def test_append_then_reopen(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    log, loaded = AppendLog.open(path)
    assert log is not None
    assert (records(loaded), loaded.lines, loaded.repaired_bytes) == ([], [], 0)
    assert log.size == 0
    log.append(line({"seq": 1}))
    log.append(line({"seq": 2, "text": "é"}) + line({"seq": 3}))
    assert log.size == path.stat().st_size
    log.close()

    log2, loaded2 = AppendLog.open(path)
    assert log2 is not None
    try:
        assert records(loaded2) == [{"seq": 1}, {"seq": 2, "text": "é"}, {"seq": 3}]
        assert loaded2.lines == [line(r)[:-1] for r in records(loaded2)]
        assert loaded2.repaired_bytes == 0
        assert log2.size == path.stat().st_size
        log2.append(line({"seq": 4}))
    finally:
        log2.close()
    _, loaded3 = AppendLog.open(path, writable=False)
    assert [r["seq"] for r in records(loaded3)] == [1, 2, 3, 4]
    assert not (tmp_path / "history.jsonl.torn").exists()


@pytest.mark.parametrize(
    "tail",
    [b'{"seq":3,"te', b'{"seq":3}', b'{"seq":3,"text":"broken\n', b"[3]\n", b"\n"],
    ids=[
        "partial-no-newline",
        "complete-json-no-newline",
        "invalid-json-line",
        "not-object",
        "blank",
    ],
)
def test_torn_tail_is_cut_and_saved(tmp_path: Path, tail: bytes) -> None:
    path = tmp_path / "history.jsonl"
    good = line({"seq": 1}) + line({"seq": 2})
    path.write_bytes(good + tail)

    log, loaded = AppendLog.open(path)
    assert log is not None
    try:
        assert records(loaded) == [{"seq": 1}, {"seq": 2}]
        assert loaded.repaired_bytes == len(tail)
        assert path.read_bytes() == good
        assert path.read_bytes().endswith(b"\n")
        torn = (tmp_path / "history.jsonl.torn").read_bytes()
        assert torn == tail + b"\n"
        # Appends land right after the good prefix, on a line of their own.
        assert log.size == len(good)
        log.append(line({"seq": 3}))
    finally:
        log.close()
    _, again = AppendLog.open(path, writable=False)
    assert records(again) == [{"seq": 1}, {"seq": 2}, {"seq": 3}]
    assert again.repaired_bytes == 0


def test_torn_tail_of_an_otherwise_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    path.write_bytes(b'{"se')
    log, loaded = AppendLog.open(path)
    assert log is not None
    log.close()
    assert records(loaded) == []
    assert loaded.repaired_bytes == 4
    assert path.read_bytes() == b""


def test_repeated_repairs_keep_every_torn_tail(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    path.write_bytes(line({"seq": 1}) + b"first")
    open_writable(path).close()
    with path.open("ab") as f:
        f.write(b"second")
    open_writable(path).close()
    assert (tmp_path / "history.jsonl.torn").read_bytes() == b"first\nsecond\n"
    assert path.read_bytes() == line({"seq": 1})


@pytest.mark.parametrize(
    "bad", [b"not json\n", b'{"seq":2\n', b"[2]\n", b"\n"], ids=["text", "cut", "array", "blank"]
)
def test_damage_in_the_middle_is_corruption(tmp_path: Path, bad: bytes) -> None:
    path = tmp_path / "history.jsonl"
    data = line({"seq": 1}) + bad + line({"seq": 3})
    path.write_bytes(data)
    with pytest.raises(StoreCorruptError) as info:
        AppendLog.open(path)
    assert info.value.code == "store.corrupt"
    assert info.value.details == {"path": str(path), "offset": len(line({"seq": 1}))}
    with pytest.raises(StoreCorruptError):
        AppendLog.open(path, writable=False)
    # Nothing is cut or moved aside: corruption is for a human to look at.
    assert path.read_bytes() == data
    assert not (tmp_path / "history.jsonl.torn").exists()


def test_read_only_open_leaves_a_torn_file_alone(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    data = line({"seq": 1}) + b'{"seq":2,'
    path.write_bytes(data)
    stat = path.stat()

    log, loaded = AppendLog.open(path, writable=False)
    assert log is None
    assert records(loaded) == [{"seq": 1}]
    assert loaded.repaired_bytes == len(b'{"seq":2,')
    assert path.read_bytes() == data
    assert path.stat().st_mtime_ns == stat.st_mtime_ns
    assert not (tmp_path / "history.jsonl.torn").exists()


def test_read_only_open_of_a_missing_file_creates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    log, loaded = AppendLog.open(path, writable=False)
    assert log is None
    assert records(loaded) == []
    assert not path.exists()


def test_write_file_atomic_replaces_content(tmp_path: Path) -> None:
    path = tmp_path / "session.json"
    write_file_atomic(path, b'{"title":"a"}')
    assert path.read_bytes() == b'{"title":"a"}'
    write_file_atomic(path, b'{"title":"longer title"}')
    assert path.read_bytes() == b'{"title":"longer title"}'
    write_file_atomic(path, b"x")
    assert path.read_bytes() == b"x"
    # No temporary file is left behind.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["session.json"]


def test_write_file_atomic_never_writes_through_the_old_inode(tmp_path: Path) -> None:
    # A reader holding the old file keeps seeing the old bytes: the file is replaced, not
    # rewritten in place (which a crash could leave half-written).
    path = tmp_path / "session.json"
    write_file_atomic(path, b"old")
    with path.open("rb") as old:
        write_file_atomic(path, b"new content")
        assert old.read() == b"old"
    assert path.read_bytes() == b"new content"


def test_each_record_is_visited_once_in_order(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    path.write_bytes(line({"seq": 1}) + line({"seq": 2}) + b'{"seq": 3')  # torn tail
    seen: list[tuple[int, dict[str, object]]] = []
    _, loaded = AppendLog.open(path, writable=False, visit=lambda i, r: seen.append((i, r)))
    assert seen == [(0, {"seq": 1}), (1, {"seq": 2})]
    assert len(loaded.lines) == 2
