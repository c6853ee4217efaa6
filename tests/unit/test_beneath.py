"""The descriptor walk (:mod:`sidecar.beneath`): a symlink is refused wherever it is (the last
name or a directory on the way), names that could climb are refused before anything opens,
a FIFO is refused without blocking, and a write replaces (never writes through) what was
there, keeping its mode."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from sidecar import beneath
from sidecar.paths import UnreadableFileError, read_capped_text


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    """``root`` with ``a/b/in.txt``, ``outside/`` beside it holding ``secret.txt``."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "in.txt").write_text("inside")
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    return root, outside


def _read(root: Path, path: Path) -> bytes:
    fd = beneath.open_file(root, path)
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


def test_a_file_is_read_from_the_root_down(tree: tuple[Path, Path]) -> None:
    root, _ = tree
    assert _read(root, root / "a" / "b" / "in.txt") == b"inside"
    assert _read(root, Path("a/b/in.txt")) == b"inside"


def test_a_symlink_as_the_last_name_is_refused(tree: tuple[Path, Path]) -> None:
    root, outside = tree
    (root / "a" / "link.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(beneath.Escaped):
        beneath.open_file(root, root / "a" / "link.txt")
    # even one that stays inside: the check resolved it, so a link here appeared since
    (root / "a" / "near.txt").symlink_to(root / "a" / "b" / "in.txt")
    with pytest.raises(beneath.Escaped):
        beneath.open_file(root, root / "a" / "near.txt")


def test_a_symlink_as_a_middle_name_is_refused(tree: tuple[Path, Path]) -> None:
    root, outside = tree
    (root / "a" / "out").symlink_to(outside)
    with pytest.raises(beneath.Escaped):
        beneath.open_file(root, root / "a" / "out" / "secret.txt")
    with pytest.raises(beneath.Escaped):
        beneath.write_atomic(root, root / "a" / "out" / "secret.txt", b"planted")
    with pytest.raises(beneath.Escaped):  # nor is a missing directory made through it
        beneath.write_atomic(root, root / "a" / "out" / "new" / "planted.txt", b"planted")
    with pytest.raises(beneath.Escaped):
        beneath.open_dir(root, root / "a" / "out")
    with pytest.raises(beneath.Escaped):  # a file where a directory should be
        beneath.open_file(root, root / "a" / "b" / "in.txt" / "x")
    assert (outside / "secret.txt").read_text() == "secret"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


@pytest.mark.parametrize("name", ["..", "a/../..", "a/b/../../../outside/secret.txt", "../x"])
def test_names_that_could_climb_are_refused(tree: tuple[Path, Path], name: str) -> None:
    root, _ = tree
    for path in (Path(name), root / name):  # relative to the root, or absolute below it
        with pytest.raises(ValueError):
            beneath.open_file(root, path)
        with pytest.raises(ValueError):
            beneath.write_atomic(root, path, b"x")
        with pytest.raises(ValueError):
            beneath.open_dir(root, path)


def test_an_absolute_path_outside_the_root_is_refused(tree: tuple[Path, Path]) -> None:
    root, outside = tree
    for path in (outside / "secret.txt", Path("/etc/passwd"), root.parent):
        with pytest.raises(ValueError):
            beneath.open_file(root, path)
        with pytest.raises(ValueError):
            beneath.write_atomic(root, path, b"x")
    assert (outside / "secret.txt").read_text() == "secret"


def test_a_fifo_is_refused_without_blocking(tree: tuple[Path, Path]) -> None:
    root, _ = tree
    os.mkfifo(root / "a" / "pipe")
    outcome: list[BaseException] = []

    def read() -> None:
        try:
            beneath.open_file(root, root / "a" / "pipe")
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=read, daemon=True)
    worker.start()
    worker.join(5)
    assert not worker.is_alive(), "opening a FIFO blocked"
    assert isinstance(outcome[0], beneath.NotAFile) and stat.S_ISFIFO(outcome[0].mode)
    with pytest.raises(beneath.NotAFile):
        beneath.write_atomic(root, root / "a" / "pipe", b"x")
    with pytest.raises(UnreadableFileError, match="FIFO"):
        read_capped_text(root / "a" / "pipe", 100, root=root)


def test_a_write_replaces_a_hard_link_and_keeps_the_mode(tree: tuple[Path, Path]) -> None:
    root, outside = tree
    os.link(outside / "secret.txt", root / "linked.txt")
    (root / "linked.txt").chmod(0o640)
    assert beneath.write_atomic(root, root / "linked.txt", b"new") is False
    assert (root / "linked.txt").read_bytes() == b"new"
    assert (outside / "secret.txt").read_text() == "secret"  # the other name is untouched
    assert stat.S_IMODE((root / "linked.txt").stat().st_mode) == 0o640
    assert (root / "linked.txt").stat().st_nlink == 1


def test_a_write_makes_missing_directories_and_leaves_no_temporary(
    tree: tuple[Path, Path],
) -> None:
    root, _ = tree
    assert beneath.write_atomic(root, root / "new" / "deep" / "f.txt", b"made") is True
    assert (root / "new" / "deep" / "f.txt").read_bytes() == b"made"
    assert sorted(p.name for p in (root / "new" / "deep").iterdir()) == ["f.txt"]
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE((root / "new" / "deep" / "f.txt").stat().st_mode) == 0o666 & ~umask


def test_a_symlink_where_the_file_is_is_refused_not_replaced(tree: tuple[Path, Path]) -> None:
    root, outside = tree
    (root / "a" / "link.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(beneath.Escaped):
        beneath.write_atomic(root, root / "a" / "link.txt", b"x")
    assert (outside / "secret.txt").read_text() == "secret"
    assert (root / "a" / "link.txt").is_symlink()
