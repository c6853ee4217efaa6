"""What the time-bound tests of the look-around tools share, on both faces: a directory whose
search blocks ripgrep (an ignore file that is a FIFO: ripgrep's ``open`` waits for a writer
that never comes), a file that grows while it is searched, a 200,000-file tree, and a look at
``/proc`` for a ripgrep left running."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

__all__ = ["Grower", "make_tree", "ripgreps", "stuck_dir", "wait_no_ripgrep"]


def stuck_dir(root: Path) -> Path:
    """``root/stuck``: a file to find and a FIFO ``.ignore``, on which ripgrep blocks."""
    stuck = root / "stuck"
    stuck.mkdir(parents=True)
    (stuck / "a.txt").write_text("needle\n")
    os.mkfifo(stuck / ".ignore")
    return stuck


def make_tree(root: Path, dirs: int = 200, per_dir: int = 1000) -> float:
    """``dirs`` directories of ``per_dir`` empty files (and one needle); seconds it took."""
    started = time.monotonic()
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    for d in range(dirs):
        directory = root / f"d{d:03d}"
        directory.mkdir(parents=True)
        base = str(directory)
        for f in range(per_dir):
            os.close(os.open(f"{base}/f{f:04d}.txt", flags, 0o644))
    (root / "d000" / "needle.txt").write_text("a needle in the tree\n")
    return time.monotonic() - started


class Grower:
    """Appends matching lines to ``path`` from a thread until stopped (about 30 MB/s: far
    more results than a reader of ripgrep's JSON takes in, far less than a disk fills)."""

    def __init__(self, path: Path, token: str) -> None:
        self.path = path
        self._chunk = (f"{token} grows\n" * 4096).encode()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="grower", daemon=True)
        with open(path, "wb") as out:
            out.write(self._chunk * 16)

    def __enter__(self) -> Grower:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        with open(self.path, "ab", buffering=0) as out:
            while not self._stop.is_set():
                out.write(self._chunk)
                time.sleep(0.002)


def ripgreps(token: str) -> list[int]:
    """Running (not zombie) processes whose command line holds ``token`` and is a ripgrep."""
    found: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            state = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        if "\nState:\tZ" in state or not argv or not argv[0].endswith(b"rg"):
            continue
        if any(token.encode() in arg for arg in argv):
            found.append(int(entry))
    return found


def wait_no_ripgrep(token: str, within_s: float = 3.0) -> list[int]:
    """The ripgreps still running after ``within_s`` seconds (none, normally: at once)."""
    end = time.monotonic() + within_s
    while (left := ripgreps(token)) and time.monotonic() < end:
        time.sleep(0.05)
    return left
