"""A checkpoint of one workspace root: its files as git tree objects in the store.

Walks the root as git sees it (:mod:`sidecar.checkpoints.ignore`: ignored directories are
never entered, ``.git`` never, symlinks never followed) and records every regular file and
symlink: a file as ``100644`` or ``100755`` (the owner's exec bit, as git keeps it), a symlink
as ``120000`` with its target as the blob.  A file over ``max_file_bytes`` is listed by path,
size and mode, its content not read ("not captured").  Fifos, sockets and devices are skipped.

A stat cache makes an unchanged tree cheap, as git's index does: a file whose
``(mtime_ns, ctime_ns, size, inode, mode)`` is what it was when it was last hashed is not
read again.  An entry is kept only for a file whose times are older than the capture's start
by more than :data:`RACY_NS` (a file written in the same tick as it was hashed could change
again without its times changing: git's "racily clean" entries), so such a file is hashed
again next time.  The cache lives in memory and, between processes, in the store
(``checkpoints/stat-<hash of the root>``, rewritten whole; a damaged one is dropped); a
``store/gc`` that collected objects bumps ``checkpoints/epoch`` and every cache made before
is dropped (its blob ids may name collected objects).

With ``write=False`` nothing is stored (``checkpoint/list`` and ``checkpoint/diff`` compare
the workspace now with a checkpoint): blob and tree ids are computed, the trees kept in
memory for the comparison.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import stat
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sidecar.checkpoints.ignore import Rules, base_rules, rules_in
from sidecar.checkpoints.trees import DIR, EXEC, FILE, LINK, Entry, encode_tree
from sidecar.store.blobs import BlobStore, git_blob_id

if TYPE_CHECKING:
    from pathlib import Path


__all__ = ["RACY_NS", "RootCapture", "StatCache", "TooManyFiles", "capture_root"]

RACY_NS = 50_000_000
"""A file whose mtime or ctime is this close to the capture's start is hashed again next time
(file-system clocks tick coarsely: a write right after the hash may keep the same times)."""
_MANY = 32
"""More new objects than this in one capture: written without fsync each, then ``os.sync``."""

CacheKey = tuple[int, int, int, int, int]


class TooManyFiles(Exception):
    """The root holds more entries than a checkpoint walks (``checkpoints.maxFiles``): a
    root such as a home directory is refused rather than walked for minutes."""


@dataclass(slots=True)
class StatCache:
    """One root's stat cache: relative path -> (stat key, blob id)."""

    epoch: int = 0
    entries: dict[str, tuple[CacheKey, str]] = field(default_factory=dict)
    changed: bool = False

    @classmethod
    def load(cls, path: Path, epoch: int) -> StatCache:
        try:
            raw: Any = marshal.loads(path.read_bytes())
            if raw["epoch"] == epoch and isinstance(raw["entries"], dict):
                return cls(epoch, raw["entries"])
        except (OSError, ValueError, EOFError, TypeError, KeyError):
            pass
        return cls(epoch)

    def save(self, path: Path) -> None:
        """Rewrite the cache file (atomic, not fsynced: a cache lost is rebuilt)."""
        if not self.changed:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with contextlib.suppress(OSError):
            tmp.write_bytes(marshal.dumps({"epoch": self.epoch, "entries": self.entries}))
            os.replace(tmp, path)
            self.changed = False


@dataclass(slots=True)
class RootCapture:
    root: str
    tree: str
    files: int
    not_captured: list[dict[str, Any]]
    """``{path, size, mode}`` of each file over the bound."""
    trees: dict[str, bytes]
    """Every tree object of the capture, by id (written to the store unless ``write=False``)."""
    new_objects: int = 0


@dataclass(slots=True)
class _Walk:
    blobs: BlobStore
    cache: StatCache
    write: bool
    max_file_bytes: int
    started_ns: int
    seen: set[str]
    trees: dict[str, bytes] = field(default_factory=dict)
    pending: list[tuple[bytes, str, str]] = field(default_factory=list)
    """Objects to store: (body, id, kind)."""
    files: int = 0
    not_captured: list[dict[str, Any]] = field(default_factory=list)
    entries_left: int = 0


def capture_root(
    root: Path,
    *,
    blobs: BlobStore,
    cache: StatCache,
    write: bool,
    max_file_bytes: int,
    global_excludes: Path | None,
    known: set[str] | None = None,
    max_files: int = 200_000,
) -> RootCapture:
    """The files of ``root`` as a git tree (see the module docstring).  ``known``: object ids
    this process has stored already (not checked or written again); grown with the new ones.
    :class:`TooManyFiles` past ``max_files`` entries walked (files and directories)."""
    walk = _Walk(blobs, cache, write, max_file_bytes, time.time_ns(), set())
    walk.entries_left = max_files
    rules = base_rules(root, global_excludes)
    tree = _directory(walk, str(root), "", rules)
    if tree is None:
        body = encode_tree([])
        tree = git_blob_id(body, blobs.object_format, "tree")
        walk.trees[tree] = body
    if cache.entries.keys() - walk.seen:  # files gone since: forget them
        for gone in cache.entries.keys() - walk.seen:
            del cache.entries[gone]
        cache.changed = True
    new = 0
    if write:
        known = known if known is not None else set()
        todo = [(b, i, k) for b, i, k in walk.pending if i not in known]
        todo += [(b, i, "tree") for i, b in walk.trees.items() if i not in known]
        many = len(todo) > _MANY
        for body, oid, kind in todo:
            if not blobs.has(oid):
                new += 1
            blobs.put(body, blob_id=oid, kind=kind, durable=not many)
            known.add(oid)
        if many:
            os.sync()
    return RootCapture(str(root), tree, walk.files, walk.not_captured, walk.trees, new)


def _ignored(rules: list[Rules], rel: str) -> bool:
    for rule in reversed(rules):
        verdict = rule.verdict(rel)
        if verdict is not None:
            return verdict
    return False


def _directory(walk: _Walk, path: str, rel: str, rules: list[Rules]) -> str | None:
    """The tree id of the directory ``path`` (``None``: nothing in it is captured)."""
    own = rules_in(path, rel)
    here = [*rules, own] if own is not None else rules
    try:
        with os.scandir(path) as scan:
            items = list(scan)
    except OSError:
        return None
    walk.entries_left -= len(items)
    if walk.entries_left < 0:
        raise TooManyFiles(f"more than the bound of entries under {path}")
    entries: list[Entry] = []
    for item in items:
        name = item.name
        if name == ".git":
            continue
        try:
            st = item.stat(follow_symlinks=False)
        except OSError:
            continue
        mode = st.st_mode
        if stat.S_ISDIR(mode):
            sub_rel = f"{rel}{name}/"
            if here and _ignored(here, sub_rel):
                continue
            sub = _directory(walk, item.path, sub_rel, here)
            if sub is not None:
                entries.append((name, DIR, sub))
            continue
        is_link = stat.S_ISLNK(mode)
        if not (is_link or stat.S_ISREG(mode)):
            continue
        file_rel = rel + name
        if here and _ignored(here, file_rel):
            continue
        git_mode = LINK if is_link else EXEC if mode & stat.S_IXUSR else FILE
        if not is_link and st.st_size > walk.max_file_bytes:
            walk.not_captured.append({"path": file_rel, "size": st.st_size, "mode": git_mode})
            continue
        oid = _blob(walk, item.path, file_rel, st, is_link)
        if oid is not None:
            entries.append((name, git_mode, oid))
            walk.files += 1
    if not entries:
        return None
    body = encode_tree(entries)
    tree_id = git_blob_id(body, walk.blobs.object_format, "tree")
    walk.trees[tree_id] = body
    return tree_id


def _blob(walk: _Walk, path: str, rel: str, st: os.stat_result, is_link: bool) -> str | None:
    key: CacheKey = (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino, st.st_mode)
    walk.seen.add(rel)
    cached = walk.cache.entries.get(rel)
    if cached is not None and cached[0] == key:
        return cached[1]
    try:
        data = os.fsencode(os.readlink(path)) if is_link else _read(path, st)
    except OSError:
        return None
    if data is None:
        return None
    oid = git_blob_id(data, walk.blobs.object_format)
    if walk.write:
        walk.pending.append((data, oid, "blob"))
    racy = walk.started_ns - RACY_NS
    if st.st_mtime_ns < racy and st.st_ctime_ns < racy:
        walk.cache.entries[rel] = (key, oid)
        walk.cache.changed = True
    elif cached is not None:
        del walk.cache.entries[rel]
        walk.cache.changed = True
    return oid


def _read(path: str, st: os.stat_result) -> bytes | None:
    """The bytes of a regular file, or ``None`` when it is no longer the file ``st`` saw."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        now = os.fstat(fd)
        if not stat.S_ISREG(now.st_mode) or now.st_ino != st.st_ino:
            return None
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
