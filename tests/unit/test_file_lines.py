"""``sidecar.store.lines.FileLines``: a session's lines read back from disk by offset."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sidecar.errors import StoreIOError
from sidecar.store.jsonl import AppendLog
from sidecar.store.lines import FileLines


def _write(path: Path, lines: list[bytes]) -> FileLines:
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    _, loaded = AppendLog.open(path, writable=False, keep_lines=False)
    return FileLines(path, loaded.starts, loaded.end)


LINES = st.lists(
    st.dictionaries(st.sampled_from("abc"), st.text(max_size=20), max_size=3).map(
        lambda d: json.dumps(d, ensure_ascii=False).encode()
    ),
    max_size=12,
)


@settings(max_examples=100, deadline=None)
@given(LINES, st.integers(-15, 15), st.integers(-15, 15))
def test_behaves_like_the_list_of_lines(lines: list[bytes], a: int, b: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        table = _write(Path(tmp) / "h.jsonl", lines)
        try:
            assert len(table) == len(lines)
            assert list(table) == lines
            assert table[a:b] == lines[a:b]
            assert table[a:b:2] == lines[a:b:2]
            if -len(lines) <= a < len(lines):
                assert table[a] == lines[a]
            else:
                with pytest.raises(IndexError):
                    table[a]
        finally:
            table.close()


def test_appended_lines_read_back_through_the_writers_descriptor(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    path.write_bytes(b'{"seq":1}\n')
    log, loaded = AppendLog.open(path, keep_lines=False)
    assert log is not None
    table = FileLines(path, loaded.starts, loaded.end, fd=log.fd)
    new = [b'{"seq":2}', '{"seq":3,"t":"é"}'.encode()]
    log.append(b"".join(x + b"\n" for x in new))
    table.extend(new)
    assert list(table) == [b'{"seq":1}', *new]
    table.close()  # borrowed: the log's descriptor stays open
    log.append(b'{"seq":4}\n')
    log.close()


def test_a_file_cut_behind_the_store_is_an_error_not_garbage(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    table = _write(path, [b'{"seq":1}', b'{"seq":2}'])
    os.truncate(path, 5)
    with pytest.raises(StoreIOError):
        table[1]
    table.close()
