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

In a long-running process the root's inotify watcher (:mod:`sidecar.checkpoints.watch`)
says which directories had an event since the last capture: only those are stat-checked,
their ancestors descended, and every other directory is taken whole from its memo (its tree,
file count and the directories below it) without a syscall.  When the watcher cannot vouch
(the first capture, an overflow, a directory moved...) the capture is the stat walk above.

With ``write=False`` nothing is stored (``checkpoint/list`` and ``checkpoint/diff`` compare
the workspace now with a checkpoint): blob and tree ids are computed, the trees kept in
memory for the comparison, and the stat cache learns nothing (it vouches only for files
whose blobs are in the store).
"""

from __future__ import annotations

import logging
import os
import stat
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sidecar.checkpoints.ignore import Rules, base_rules, rules_at
from sidecar.checkpoints.stat_cache import CacheKey, Memo, StatCache
from sidecar.checkpoints.trees import DIR, EXEC, FILE, LINK, Entry, encode_tree
from sidecar.checkpoints.watch import Since, Watcher
from sidecar.store.blobs import BlobStore, git_blob_id

if TYPE_CHECKING:
    from pathlib import Path


__all__ = ["RACY_NS", "RootCapture", "StatCache", "TooManyFiles", "capture_root"]

RACY_NS = 50_000_000
"""A file whose mtime or ctime is this close to the capture's start is hashed again next time
(file-system clocks tick coarsely: a write right after the hash may keep the same times)."""
_MANY = 32
_MAX_TREES = 200_000
"""Trees remembered by their entries (an unchanged directory is not encoded again)."""
"""More new objects than this in one capture: written without fsync each, then ``os.sync``."""


logger = logging.getLogger(__name__)


class TooManyFiles(Exception):
    """The root holds more entries than a checkpoint walks (``checkpoints.maxFiles``): a
    root such as a home directory is refused rather than walked for minutes."""


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
    walked: str = "stat"
    """How: ``stat`` (every file ``lstat``-ed: no watcher, or a full walk of a watched root),
    ``watcher`` (only what the watcher saw change), ``off`` (the watcher gave up: the limit
    of watches)."""


@dataclass(slots=True)
class _Walk:
    blobs: BlobStore
    cache: StatCache
    write: bool
    max_file_bytes: int
    racy: int
    """Files whose mtime or ctime is at or past this (ns) are not vouched for next time."""
    visited: set[str] = field(default_factory=set)
    trees: dict[str, bytes] = field(default_factory=dict)
    pending: list[tuple[bytes, str, str]] = field(default_factory=list)
    """Objects to store: (body, id, kind)."""
    files: int = 0
    not_captured: list[dict[str, Any]] = field(default_factory=list)
    entries_left: int = 0
    tree: str | None = None
    since: Since | None = None
    """What the watcher saw change (``None``: every directory stat-checked)."""
    watch: Watcher | None = None


class _Lost(Exception):
    """A directory the watcher vouches for has no memo: the capture is done again whole."""


_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | os.O_NOFOLLOW | os.O_CLOEXEC


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
    watch: Watcher | None = None,
) -> RootCapture:
    """The files of ``root`` as a git tree (see the module docstring).  ``known``: object ids
    this process has stored already (not checked or written again); grown with the new ones.
    :class:`TooManyFiles` past ``max_files`` entries walked (files and directories).

    The walk goes by descriptor (``scandir`` of a directory's descriptor, each subdirectory
    opened from its parent without following a symlink): a stat resolves one name, not the
    whole path, and nothing outside the root is reached through a swapped directory.

    ``watch``: the root's watcher (:mod:`sidecar.checkpoints.watch`): the directories it saw
    no change in are taken from the memo of the last capture without a syscall."""
    rules = base_rules(root, global_excludes)
    since = watch.begin(cache.dirs.keys()) if watch is not None else None
    try:
        try:
            walk = _walk(root, rules, since, watch, blobs, cache, write, max_file_bytes, max_files)
        except _Lost as lost:
            assert watch is not None
            logger.warning("checkpoints of %s: %s; walked again whole", root, lost)
            watch.lose(str(lost))
            since = watch.begin(cache.dirs.keys())
            walk = _walk(root, rules, since, watch, blobs, cache, write, max_file_bytes, max_files)
    except BaseException:
        if watch is not None:  # the events drained were not acted upon
            watch.lose("a capture that did not finish")
        raise
    tree = walk.tree
    if tree is None:
        body = encode_tree([])
        tree = git_blob_id(body, blobs.object_format, "tree")
        walk.trees[tree] = body
    for gone in [d for d in cache.entries if d not in walk.visited]:  # directories gone since
        del cache.entries[gone]
        cache.changed = True
    for gone in [d for d in cache.dirs if d not in walk.visited]:
        del cache.dirs[gone]
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
    how = "stat" if since is None else "watcher"
    if watch is not None and watch.off is not None:
        how = "off"
    return RootCapture(str(root), tree, walk.files, walk.not_captured, walk.trees, new, how)


def _walk(
    root: Path,
    rules: list[Rules],
    since: Since | None,
    watch: Watcher | None,
    blobs: BlobStore,
    cache: StatCache,
    write: bool,
    max_file_bytes: int,
    max_files: int,
) -> _Walk:
    walk = _Walk(blobs, cache, write, max_file_bytes, time.time_ns() - RACY_NS)
    walk.entries_left = max_files
    walk.since = since
    walk.watch = watch if watch is not None and watch.off is None else None
    if since is not None:
        for rel in since.gitignores:  # read again, whatever its times say
            cache.ignore_files.pop(rel, None)
    fd = os.open(root, _DIR_FLAGS & ~os.O_NOFOLLOW)  # the root itself is trusted, as given
    try:
        walk.tree = _directory(walk, fd, str(root), "", rules)
    finally:
        os.close(fd)
    return walk


def _ignored(rules: list[Rules], rel: str) -> bool:
    for rule in reversed(rules):
        verdict = rule.verdict(rel)
        if verdict is not None:
            return verdict
    return False


def _rules_of(walk: _Walk, fd: int, rel: str) -> Rules | None:
    """The directory's ``.gitignore`` rules, compiled again only when the file changed."""
    try:
        st = os.stat(".gitignore", dir_fd=fd, follow_symlinks=False)
    except OSError:
        walk.cache.ignore_files.pop(rel, None)
        return None
    key: CacheKey = (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino, st.st_mode)
    known = walk.cache.ignore_files.get(rel)
    if known is not None and known[0] == key:
        return known[1]
    rules = rules_at(fd, rel)
    walk.cache.ignore_files[rel] = (key, rules)
    return rules


def _directory(walk: _Walk, fd: int, path: str, rel: str, rules: list[Rules]) -> str | None:
    """The tree id of the directory held by ``fd`` (``path`` names it in messages;
    ``None``: nothing in it is captured).

    A directory whose ``(mtime_ns, ctime_ns, inode)`` and rules are what they were at the
    last capture holds the same names (creating, removing or renaming a name changes its
    directory's mtime), so its listing and ignore verdicts are reused (:class:`Memo`); each
    of its files is still ``lstat``-ed (a file's content can change without its directory's
    mtime) — unless the watcher saw no event in it since (``walk.since``); a subdirectory
    in which it saw none, nor below, is taken whole from its memo (:func:`_reused`)."""
    if walk.watch is not None:
        walk.watch.enter(fd, rel)  # before the listing: nothing after it is missed
    own = _rules_of(walk, fd, rel)
    here = [*rules, own] if own is not None else rules
    try:
        dst = os.fstat(fd)
    except OSError:
        return None
    dkey = (dst.st_mtime_ns, dst.st_ctime_ns, dst.st_ino)
    signature = tuple(r.token for r in here)
    cache = walk.cache
    memo = cache.dirs.get(rel)
    if memo is None or memo.key != dkey or memo.signature != signature:
        memo = None
        listing = _listing(walk, fd, rel, here, signature)
        if listing is None:
            return None
        files, subdirs, listed = listing
    else:
        files, subdirs, listed = memo.files, memo.subdirs, memo.listed
    walk.entries_left -= listed
    if walk.entries_left < 0:
        raise TooManyFiles(f"more than the bound of entries under {path}")
    walk.visited.add(rel)
    since = walk.since
    sub_entries: list[Entry] = []
    for name in subdirs:
        sub_rel = f"{rel}{name}/"
        if since is not None and sub_rel not in since.visit:
            reused = _reused(walk, sub_rel, here)
            if reused is not None:
                if reused[0] is not None:
                    sub_entries.append((name, DIR, reused[0]))
                continue
        try:
            sub_fd = os.open(name, _DIR_FLAGS, dir_fd=fd)
        except OSError:
            continue  # gone, or swapped for a symlink since the listing
        try:
            sub = _directory(walk, sub_fd, f"{path}/{name}", sub_rel, here)
        finally:
            os.close(sub_fd)
        if sub is not None:
            sub_entries.append((name, DIR, sub))
    if memo is not None and since is not None and rel not in since.dirty:
        keys = memo.keys  # no event in it: its files are as the memo has them
    else:
        keys = _stat_keys(fd, files)
    old = cache.entries.get(rel) or {}
    if memo is not None and keys == memo.keys:  # every file as it was: vouched for, not read
        file_entries = memo.file_entries
        now = old
    else:
        file_entries, now = _files(walk, fd, rel, files, keys, old)
    walk.files += len(file_entries)
    if now is not old:
        if len(now) != len(old) or now.keys() != old.keys():
            cache.changed = True
        if now or old:
            cache.entries[rel] = now
    if memo is not None and file_entries is memo.file_entries and sub_entries == memo.subs:
        made = memo.made
    else:
        made = _tree(walk, file_entries + sub_entries)
    racy = walk.racy
    if dkey[0] < racy and dkey[1] < racy and len(now) == len(files) == len(file_entries):
        # every file vouched for (none racy, over the bound or unreadable): remembered
        whole = all(f"{rel}{name}/" in cache.dirs for name in subdirs)
        cache.dirs[rel] = Memo(
            dkey, signature, files, subdirs, listed, keys, file_entries, sub_entries, made, whole
        )
    else:
        cache.dirs.pop(rel, None)
    if made is None:
        return None
    walk.trees[made[0]] = made[1]
    return made[0]


def _reused(walk: _Walk, rel: str, rules: list[Rules]) -> tuple[str | None] | None:
    """The tree id of a directory the watcher saw no change in, nor below, taken from its
    memo and its subdirectories' (no syscall); ``None`` when its memo cannot stand for it."""
    cache = walk.cache
    memo = cache.dirs.get(rel)
    if memo is None or not memo.whole:
        return None
    own = cache.ignore_files.get(rel)
    signature = tuple(r.token for r in rules)
    if own is not None and own[1] is not None:
        signature = (*signature, own[1].token)
    if memo.signature != signature:  # the rules above it changed (a .gitignore, the base)
        return None
    _take(walk, rel, memo)
    return (memo.made[0] if memo.made is not None else None,)


def _take(walk: _Walk, rel: str, memo: Memo) -> None:
    walk.entries_left -= memo.listed
    if walk.entries_left < 0:
        raise TooManyFiles(f"more than the bound of entries under {rel}")
    walk.visited.add(rel)
    walk.files += len(memo.file_entries)
    for name in memo.subdirs:
        sub_rel = f"{rel}{name}/"
        sub = walk.cache.dirs.get(sub_rel)
        if sub is None or not sub.whole:
            raise _Lost(f"no memo of {sub_rel} under a directory vouched for")
        _take(walk, sub_rel, sub)
    if memo.made is not None:
        walk.trees[memo.made[0]] = memo.made[1]


def _listing(
    walk: _Walk, fd: int, rel: str, here: list[Rules], signature: tuple[str, ...]
) -> tuple[tuple[str, ...], tuple[str, ...], int] | None:
    """The directory's names not ignored, ``(files, subdirectories, entries listed)``."""
    try:
        with os.scandir(fd) as scan:
            items = list(scan)
    except OSError:
        return None
    cache = walk.cache
    memo = cache.verdicts.get(rel)
    if memo is None or memo[0] != signature:
        memo = cache.verdicts[rel] = (signature, {})
    verdicts = memo[1]
    files: list[str] = []
    subdirs: list[str] = []
    for item in items:
        name = item.name
        if name == ".git":
            continue
        try:
            is_dir = item.is_dir(follow_symlinks=False)
        except OSError:
            continue
        if is_dir:
            sub_rel = f"{rel}{name}/"
            keep = verdicts.get(sub_rel)
            if keep is None:
                keep = verdicts[sub_rel] = not (here and _ignored(here, sub_rel))
            if keep:
                subdirs.append(name)
            continue
        keep = verdicts.get(name)
        if keep is None:
            keep = verdicts[name] = not (here and _ignored(here, rel + name))
        if keep:
            files.append(name)
    if len(verdicts) > 2 * len(items) + 16:  # names gone since: forget them
        verdicts.clear()
    return tuple(files), tuple(subdirs), len(items)


def _files(
    walk: _Walk,
    fd: int,
    rel: str,
    names: tuple[str, ...],
    keys: list[CacheKey | None],
    old: dict[str, tuple[CacheKey, str, str]],
) -> tuple[list[Entry], dict[str, tuple[CacheKey, str, str]]]:
    """The entries of a directory's files, each vouched for by the stat cache or hashed."""
    now: dict[str, tuple[CacheKey, str, str]] = {}
    racy = walk.racy
    max_bytes = walk.max_file_bytes
    entries: list[Entry] = []
    for name, key in zip(names, keys, strict=True):
        if key is None:
            continue
        cached = old.get(name)
        if cached is not None and cached[0] == key:  # unchanged: not read (the stat cache)
            now[name] = cached
            entries.append((name, cached[2], cached[1]))
            continue
        mode = key[4]
        is_link = stat.S_ISLNK(mode)
        if not is_link and not stat.S_ISREG(mode):
            continue
        git_mode = LINK if is_link else EXEC if mode & stat.S_IXUSR else FILE
        if not is_link and key[2] > max_bytes:
            walk.not_captured.append({"path": rel + name, "size": key[2], "mode": git_mode})
            continue
        oid = _blob(walk, fd, name, key, is_link)
        if oid is None:
            continue
        if walk.write and key[0] < racy and key[1] < racy:  # vouched for once it is stored
            now[name] = (key, oid, git_mode)
        entries.append((name, git_mode, oid))
    return entries, now


def _tree(walk: _Walk, entries: list[Entry]) -> tuple[str, bytes] | None:
    """A tree's id and body, encoded again only for entries not seen before."""
    if not entries:
        return None
    trees = walk.cache.trees
    shape = tuple(entries)
    made = trees.get(shape)
    if made is None:
        body = encode_tree(entries)
        made = (git_blob_id(body, walk.blobs.object_format, "tree"), body)
        if len(trees) > _MAX_TREES:
            trees.clear()
        trees[shape] = made
    return made


def _stat_keys(fd: int, names: tuple[str, ...]) -> list[CacheKey | None]:
    """The stat key of each name in the directory ``fd`` (``None``: gone); symlinks are not
    followed."""
    out: list[CacheKey | None] = []
    append = out.append
    lstat = os.stat
    for name in names:
        try:
            st = lstat(name, dir_fd=fd, follow_symlinks=False)
        except OSError:
            append(None)
            continue
        append((st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino, st.st_mode))
    return out


def _blob(walk: _Walk, fd: int, name: str, key: CacheKey, is_link: bool) -> str | None:
    """Hash (and keep, to store) a file the stat cache does not vouch for."""
    try:
        data = os.fsencode(os.readlink(name, dir_fd=fd)) if is_link else _read(fd, name, key[3])
    except OSError:
        return None
    if data is None:
        return None
    oid = git_blob_id(data, walk.blobs.object_format)
    if walk.write:
        walk.pending.append((data, oid, "blob"))
    walk.cache.changed = True
    return oid


def _read(dir_fd: int, name: str, inode: int) -> bytes | None:
    """The bytes of a regular file, or ``None`` when it is no longer the file stat saw."""
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        now = os.fstat(fd)
        if not stat.S_ISREG(now.st_mode) or now.st_ino != inode:
            return None
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
