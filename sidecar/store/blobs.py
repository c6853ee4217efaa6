"""Content-addressed blobs in git's loose-object format.

A blob's id is ``sha1(b"blob <len>\\0" + data)`` (or sha256 for a sha256 store), exactly as
git computes it, and it is stored zlib-compressed under ``objects/<2 hex>/<rest>``.  The blob
directory is laid out as a bare git repository, so ``git --git-dir <store>/blobs cat-file -p
<id>`` reads any blob, and a workspace file tracked by git has the same id here as in its
repository.  Writes are atomic (temp file + rename) and idempotent, from any number of
threads and processes at once: each write has its own temporary file, and whichever rename
lands last replaces a complete object with an identical one.  Storing bytes that are there
already touches the object's time, as git "freshens" an object it would have written: a gc
running meanwhile in another process counts it as new (its grace age) and keeps it.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import zlib
from typing import TYPE_CHECKING, Literal

from protocol.error_codes import ErrorCode
from sidecar.errors import NotFoundError, StoreCorruptError
from sidecar.store.jsonl import fsync_dir, write_file_atomic

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["BlobStore", "git_blob_id"]

ObjectFormat = Literal["sha1", "sha256"]

#: Objects are written under a temporary name first (``.tmp-<pid>-<n>-<name>``); a process
#: killed mid-write leaves that file behind, and ``gc`` removes it.
_TEMP_PREFIX = ".tmp-"
_temp_ids = itertools.count()  # next() is atomic under the GIL: one name per write


def git_blob_id(data: bytes, object_format: ObjectFormat = "sha1", kind: str = "blob") -> str:
    """The git object id of ``data`` as a blob (what ``git hash-object`` prints); ``kind``
    ``tree`` for a tree object (the workspace checkpoints, :mod:`sidecar.checkpoints`)."""
    import hashlib  # here: loading OpenSSL is a tenth of opening the store

    h = hashlib.new(object_format)
    h.update(b"%s %d\0" % (kind.encode(), len(data)))
    h.update(data)
    return h.hexdigest()


class BlobStore:
    """Blobs under ``root`` (a bare-git-repository layout)."""

    def __init__(self, root: Path, object_format: ObjectFormat = "sha1") -> None:
        self.root = root
        self.object_format: ObjectFormat = object_format
        self._hex_len = 40 if object_format == "sha1" else 64
        self._objects = root / "objects"
        self._writing: set[str] = set()

    def init(self) -> None:
        """Create the bare-repository skeleton if it is missing (idempotent)."""
        (self._objects).mkdir(parents=True, exist_ok=True)
        (self.root / "refs" / "heads").mkdir(parents=True, exist_ok=True)
        (self.root / "refs" / "tags").mkdir(parents=True, exist_ok=True)
        head = self.root / "HEAD"
        if not head.exists():  # atomically: another process may be reading it, or writing it
            write_file_atomic(head, b"ref: refs/heads/main\n")
        config = self.root / "config"
        if not config.exists():
            lines = ["[core]", "\trepositoryformatversion = 1", "\tbare = true"]
            if self.object_format == "sha256":
                lines += ["[extensions]", "\tobjectformat = sha256"]
            else:
                lines[1] = "\trepositoryformatversion = 0"
            write_file_atomic(config, ("\n".join(lines) + "\n").encode())

    def _path(self, blob_id: str) -> Path:
        blob_id = blob_id.lower()
        if len(blob_id) != self._hex_len or any(c not in "0123456789abcdef" for c in blob_id):
            raise NotFoundError(
                ErrorCode.BLOB_NOT_FOUND,
                f"not a {self.object_format} object id: {blob_id!r}",
                details={"blob": blob_id},
            )
        return self._objects / blob_id[:2] / blob_id[2:]

    def put(
        self, data: bytes, *, blob_id: str | None = None, kind: str = "blob", durable: bool = True
    ) -> str:
        """Store ``data``; return its id.  Storing the same bytes twice writes once.
        ``blob_id``: ``git_blob_id(data)`` in this store's format, when the caller has it
        already (it hashed the bytes where hashing belongs: in the CPU lane).
        ``durable=False``: neither the object nor its directory is fsynced (a caller storing
        thousands at once makes them durable together, ``os.sync``); still atomic.

        Safe when several threads store the same bytes at once: each writes its own
        temporary file (a shared name let one writer truncate the file another had just
        renamed into place, and fail the other's rename), and whichever rename lands last
        replaces a complete object with an identical one."""
        if blob_id is None:
            blob_id = git_blob_id(data, self.object_format, kind)
        path = self._path(blob_id)
        if path.exists():
            try:
                os.utime(path)  # freshen: a gc under way elsewhere keeps it (grace age)
            except FileNotFoundError:
                pass  # collected just now: write it again
            except OSError:
                return blob_id  # not ours to touch (another user's store): it is there
            else:
                return blob_id
        try:
            path.parent.mkdir()
        except FileExistsError:
            pass
        else:
            fsync_dir(self._objects)  # the new fan-out directory itself must be durable
        tmp_name = f"{_TEMP_PREFIX}{os.getpid()}-{next(_temp_ids)}-{path.name}"
        payload = zlib.compress(b"%s %d\0" % (kind.encode(), len(data)) + data, 1)
        self._writing.add(tmp_name)
        try:
            if durable:
                write_file_atomic(path, payload, tmp_name=tmp_name, mode=0o444)
            else:
                _write_quick(path.with_name(tmp_name), path, payload)
        finally:
            self._writing.discard(tmp_name)
        return blob_id

    def writing(self, name: str) -> bool:
        """Whether ``name`` is the temporary file of a write in progress in this process."""
        return name in self._writing

    def has(self, blob_id: str) -> bool:
        try:
            return self._path(blob_id).exists()
        except NotFoundError:
            return False

    def get(self, blob_id: str, kind: str = "blob") -> bytes:
        """The bytes of a blob (or of a ``tree`` object with ``kind``); ``blob.not_found`` if
        absent, ``store.corrupt`` if damaged or of another kind."""
        path = self._path(blob_id)
        try:
            raw = zlib.decompress(path.read_bytes())
        except FileNotFoundError:
            raise NotFoundError(
                ErrorCode.BLOB_NOT_FOUND, f"no blob {blob_id}", details={"blob": blob_id}
            ) from None
        except zlib.error as exc:
            raise StoreCorruptError(f"blob {blob_id} is damaged: {exc}") from exc
        header, sep, data = raw.partition(b"\0")
        if not sep or header != b"%s %d" % (kind.encode(), len(data)):
            raise StoreCorruptError(f"blob {blob_id} has a bad header", details={"blob": blob_id})
        return data


def _write_quick(tmp: Path, path: Path, payload: bytes) -> None:
    """``payload`` at ``path`` by a temporary file and a rename, without fsync."""
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
    try:
        try:
            view = memoryview(payload)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
