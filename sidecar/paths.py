"""Confined, read-only file access for the context sources (instructions, skills, captured files).

This module owns the two rules every source reader follows (DESIGN §8):

- **Confinement.**  A path is used only if its real location (every symlink followed, as
  :func:`os.path.realpath` does) is inside an allowed root.  A symlink whose target escapes is
  refused before anything behind it is opened or even stat-ed.
- **Read, never run.**  Files are opened read-only, without following a final symlink
  (``O_NOFOLLOW``), non-blocking (so a FIFO cannot hang the sidecar), and only regular files
  are read.  Nothing here executes, imports or interprets a file beyond decoding it as UTF-8.

Confinement is checked on resolved paths just before opening.  A caller that names the root
(``root=``) has the file opened by descriptor from that root down (:mod:`sidecar.beneath`),
so a directory swapped for a symlink between the check and the ``open`` is refused, never
followed; without a root the resolved path is opened as it is (its last name not followed).

It also holds the one UTF-8 rule both readers share: a text cut at a byte cap backs off to the
start of the character that straddles the cap, so a cut text always decodes.
"""

from __future__ import annotations

import codecs
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import xxhash

from sidecar import beneath

__all__ = [
    "CappedText",
    "MissingFileError",
    "UnreadableFileError",
    "cut_utf8",
    "file_kind",
    "is_within",
    "open_regular",
    "read_capped_text",
    "real_path",
    "relative_posix",
]

_CHUNK = 1 << 16
_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)
_BOM = "\ufeff"


class UnreadableFileError(Exception):
    """A file that exists but cannot be used as text; ``str(error)`` says why, for a user."""


class MissingFileError(UnreadableFileError):
    """There is no such file (or a directory on its way is missing)."""


@dataclass(frozen=True, slots=True)
class CappedText:
    """A text file read whole (hashed and validated) but kept only up to a byte cap."""

    text: str
    """The content cut at the cap on a UTF-8 boundary, without a leading byte-order mark."""
    size: int
    """Bytes of the full file."""
    hash: str
    """xxh3-128 (hex) of the full file's bytes."""
    truncated: bool


def real_path(path: Path) -> Path:
    """``path`` with every symlink followed (non-strict: a missing tail stays as written)."""
    return Path(os.path.realpath(path))


def is_within(path: Path, root: Path) -> bool:
    """Whether resolved ``path`` is ``root`` or below it (both must already be resolved)."""
    return path == root or root in path.parents


def relative_posix(path: Path, root: Path) -> str:
    """``path`` relative to ``root`` as a ``/``-separated string; ``.`` for the root itself."""
    return path.relative_to(root).as_posix()


def cut_utf8(data: bytes, limit: int) -> bytes:
    """The longest prefix of UTF-8 ``data`` of at most ``limit`` bytes ending on a character
    boundary: when the cap falls inside a multi-byte character, the whole character goes."""
    if len(data) <= limit:
        return data
    cut = max(limit, 0)
    # 0b10xxxxxx is a continuation byte: the character started before the cap.
    while cut > 0 and data[cut] & 0xC0 == 0x80:
        cut -= 1
    return data[:cut]


def open_regular(path: Path, *, root: Path | None = None) -> BinaryIO:
    """Open ``path`` (already resolved and confined) for reading, if it is a regular file;
    with ``root`` (the resolved root holding it) by descriptor from the root down.

    Raises :class:`UnreadableFileError` with a user-facing reason for anything else: missing,
    permission denied, a directory, FIFO, socket or device, or a symlink that appeared after
    resolution."""
    try:
        fd = os.open(path, _OPEN_FLAGS) if root is None else beneath.open_file(root, path)
    except FileNotFoundError as exc:
        raise MissingFileError("does not exist") from exc
    except beneath.NotAFile as exc:
        raise UnreadableFileError(f"is not a regular file ({file_kind(exc.mode)})") from exc
    except (OSError, ValueError) as exc:  # beneath.Escaped too: its reason says why
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise UnreadableFileError(f"cannot be opened: {reason}") from exc
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise UnreadableFileError(f"is not a regular file ({file_kind(mode)})")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_capped_text(path: Path, max_bytes: int, *, root: Path | None = None) -> CappedText:
    """Read ``path`` whole, streaming: hash and UTF-8-validate every byte, keep ``max_bytes``
    (opened as :func:`open_regular` opens it, from ``root`` down when it is given).

    Raises :class:`UnreadableFileError` when the file cannot be read or is not valid UTF-8."""
    digest = xxhash.xxh3_128()
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    kept = bytearray()
    size = 0
    with open_regular(path, root=root) as handle:
        try:
            for chunk in iter(lambda: handle.read(_CHUNK), b""):
                _validate(decoder, chunk, size)
                digest.update(chunk)
                size += len(chunk)
                room = max_bytes + 4 - len(kept)  # 4 = longest UTF-8 character
                if room > 0:
                    kept += chunk[:room]
            _validate(decoder, b"", size, final=True)
        except OSError as exc:
            raise UnreadableFileError(f"cannot be read: {exc.strerror or exc}") from exc
    text = cut_utf8(bytes(kept), max_bytes).decode("utf-8")
    return CappedText(
        text=text.removeprefix(_BOM),
        size=size,
        hash=digest.hexdigest(),
        truncated=size > max_bytes,
    )


def _validate(
    decoder: codecs.IncrementalDecoder, chunk: bytes, offset: int, *, final: bool = False
) -> None:
    try:
        decoder.decode(chunk, final)
    except UnicodeDecodeError as exc:
        # exc.start is relative to the decoder's pending bytes + chunk: "near" is honest.
        raise UnreadableFileError(
            f"is not valid UTF-8 text (invalid byte near offset {offset + max(exc.start, 0)})"
        ) from exc


def file_kind(mode: int) -> str:
    """What a ``st_mode`` is, for a reason a user reads ("a FIFO", "a directory", …)."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISREG(mode):
        return "a regular file"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a file"
