"""Putting a checkpoint's files back, per file, journaled, confined to the session's roots.

A restore (:func:`restore_files`) goes in this order:

1. the workspace is captured now (stored: it becomes the ``restore`` checkpoint) and compared
   with the checkpoint (:mod:`sidecar.checkpoints.diff`);
2. **conflicts**: a file whose state now is in no checkpoint of the session and no state a
   mutating call left (``after`` records) was changed outside the agent.  Unless ``force``,
   any conflict stops the restore there: nothing written, no checkpoint taken;
3. the ``restore`` checkpoint is recorded (restoring it undoes this restore), then the
   journal's ``restore`` line with the plan;
4. each file in turn: its content written to a temporary file beside it
   (``.<name>.ckpt-<restore id>.tmp``, by descriptor from the root: :mod:`sidecar.beneath`),
   its mode set, fsynced, renamed over the name; a symlink made under the temporary name and
   renamed; a file the checkpoint lacks unlinked (and its directories, once empty, if the
   checkpoint has nothing under them).  After each, a ``restored`` line, fsynced: a
   ``kill -9`` leaves every file as it was or as restored, and the journal says which;
5. ``restoreEnd``.  A restore found without its end (the process was killed) is closed by
   :func:`close_interrupted` on the session's next restore: its temporary files removed, an
   end written with ``interrupted: true``.

Never touched: ``.git`` (no path through it is ever written), ignored files (in no capture),
files the checkpoint did not capture (over the size bound: ``notRestored``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sidecar.beneath import open_parent
from sidecar.checkpoints.diff import Change, changes
from sidecar.checkpoints.trees import EXEC, LINK
from sidecar.ids import new_id, now_iso

if TYPE_CHECKING:
    from sidecar.checkpoints.service import Checkpoints

__all__ = ["STALL_ENV", "close_interrupted", "restore_files"]

logger = logging.getLogger(__name__)


def _read_umask() -> int:
    umask = os.umask(0o022)  # read once, at import: setting it is process-wide
    os.umask(umask)
    return umask


_UMASK = _read_umask()

STALL_ENV = "CONTEXT_SIDECAR_TEST_RESTORE_STALL_S"
"""Seconds to wait after each restored file: lets a test kill the process mid-restore."""


def _lookup(read: Any, tree: str, path: str) -> tuple[str, str] | None:
    """The state of ``path`` in ``tree`` (``None``: absent)."""
    names = path.split("/")
    current = tree
    for i, name in enumerate(names):
        try:
            entries = read(current)
        except Exception:
            return None
        found = next(((mode, oid) for n, mode, oid in entries if n == name), None)
        if found is None:
            return None
        if i == len(names) - 1:
            return None if found[0] == "40000" else found
        if found[0] != "40000":
            return None
        current = found[1]
    return None


def _conflicts(service: Checkpoints, session_id: str, found: list[Change]) -> list[dict[str, str]]:
    """The changes whose file now is in no state the session knows (see the module doc)."""
    journal = service.journal(session_id).read()
    known = [r for r in journal if r["type"] in ("checkpoint", "after")]
    since = known[-1]["createdAt"] if known else "the first checkpoint"
    read = service.tree_reader()
    out = []
    for change in found:
        if change.not_captured or (change.after is not None and not change.after[1]):
            continue  # too large to know: not judged
        seen = False
        for record in known:
            for root in record.get("roots", []):
                if root["root"] == change.root and _lookup(read, root["tree"], change.path) == (
                    change.after
                ):
                    seen = True
                    break
            if seen:
                break
        if not seen:
            out.append({"path": change.path, "reason": f"changed outside the agent since {since}"})
    return out


def close_interrupted(service: Checkpoints, session_id: str) -> None:
    """Close a restore a killed process left open: remove its temporary files, end it."""
    journal = service.journal(session_id)
    records = journal.read()
    ended = {r["restoreId"] for r in records if r["type"] == "restoreEnd"}
    for record in records:
        if record["type"] != "restore" or record["restoreId"] in ended:
            continue
        rid = record["restoreId"]
        for step in record.get("plan", []):
            target = Path(step["root"], *step["path"].split("/"))
            tmp = target.with_name(f".{target.name[:200]}.ckpt-{rid}.tmp")
            with contextlib.suppress(OSError):
                if tmp.is_symlink() or tmp.is_file():
                    tmp.unlink()
        done = [r["path"] for r in records if r["type"] == "restored" and r.get("restoreId") == rid]
        logger.warning("restore %s was interrupted after %d files", rid, len(done))
        journal.append(
            {"type": "restoreEnd", "restoreId": rid, "createdAt": now_iso(), "interrupted": True}
        )


def restore_files(
    service: Checkpoints, session_id: str, record: dict[str, Any], *, force: bool
) -> dict[str, Any]:
    """Restore the files of the checkpoint ``record`` (see the module docstring); the wire
    answer's file part: ``status, restored, conflicts, notRestored, undoCheckpointId``."""
    roots, settings, _ = service.session(session_id)
    service.store.sessions.hold(session_id)
    close_interrupted(service, session_id)
    now = service.capture(roots, settings, write=True)
    extra: dict[str, bytes] = {}
    for captured in now:
        extra.update(captured.trees)
    found = changes(record, now, service.tree_reader(), service.tree_reader(extra))
    conflicts = [] if force else _conflicts(service, session_id, found)
    if conflicts:
        return {"status": "conflicts", "conflicts": conflicts}
    undo = service.take(
        session_id, reason="restore", seq=None, turn_seq=record.get("turnSeq"), captured=now
    )
    rid = new_id("rst")
    plan, not_restored = [], []
    for change in found:
        if change.not_captured:
            not_restored.append(
                {"path": change.path, "reason": "not captured: over maxFileBytes then"}
            )
            continue
        action = (
            "deleted"
            if change.before is None
            else "created"
            if change.after is None
            else ("written")
        )
        plan.append((change, action))
    journal = service.journal(session_id)
    journal.append(
        {
            "type": "restore",
            "restoreId": rid,
            "checkpointId": record["checkpointId"],
            "undoCheckpointId": undo["checkpointId"] if undo else None,
            "createdAt": now_iso(),
            "plan": [{"root": c.root, "path": c.path, "action": a} for c, a in plan],
        }
    )
    stall = float(os.environ.get(STALL_ENV) or 0)
    keep_dirs = _checkpoint_dirs(service, record)
    restored = []
    for change, action in plan:
        try:
            _apply(service, change, rid, keep_dirs)
        except OSError as exc:
            not_restored.append({"path": change.path, "reason": f"{exc.strerror or exc}"})
            continue
        journal.append(
            {"type": "restored", "restoreId": rid, "root": change.root, "path": change.path}
        )
        restored.append({"path": change.path, "action": action})
        if stall:
            time.sleep(stall)
    journal.append({"type": "restoreEnd", "restoreId": rid, "createdAt": now_iso()})
    return {
        "status": "restored",
        "restored": restored,
        "notRestored": not_restored,
        "undoCheckpointId": undo["checkpointId"] if undo else None,
    }


def _checkpoint_dirs(service: Checkpoints, record: dict[str, Any]) -> set[tuple[str, str]]:
    """``(root, directory)`` of every directory the checkpoint has files under (not removed
    when a restore's deletes empty them)."""
    out: set[tuple[str, str]] = set()
    read = service.tree_reader()

    def visit(root: str, tree: str, prefix: str) -> None:
        for name, mode, oid in read(tree):
            if mode == "40000":
                out.add((root, prefix + name))
                visit(root, oid, f"{prefix}{name}/")

    for root in record.get("roots", []):
        visit(root["root"], root["tree"], "")
    return out


def _apply(service: Checkpoints, change: Change, rid: str, keep_dirs: set[tuple[str, str]]) -> None:
    root = Path(change.root)
    names = change.path.split("/")
    if ".git" in names:
        raise PermissionError(1, "a path through .git is never written")
    target = root.joinpath(*names)
    if change.before is None:  # the checkpoint lacks it: delete
        parent, name = open_parent(root, target)
        try:
            os.unlink(name, dir_fd=parent)
            os.fsync(parent)
        finally:
            os.close(parent)
        _prune(root, names[:-1], keep_dirs)
        return
    mode, oid = change.before
    data = service.store.blobs.get(oid)
    parent, name = open_parent(root, target, create=True)
    try:
        tmp = f".{name[:200]}.ckpt-{rid}.tmp"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=parent)  # left by an earlier attempt of the same restore
        if mode == LINK:
            os.symlink(os.fsdecode(data), tmp, dir_fd=parent)
        else:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            fd = os.open(tmp, flags, 0o600, dir_fd=parent)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fchmod(fd, _permissions(parent, name, mode == EXEC))
                os.fsync(fd)
            finally:
                os.close(fd)
        try:
            os.rename(tmp, name, src_dir_fd=parent, dst_dir_fd=parent)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=parent)
            raise
        os.fsync(parent)
    finally:
        os.close(parent)


def _permissions(parent: int, name: str, executable: bool) -> int:
    """The permission bits a restored file gets: the file's own when it is there and is (or
    is not) executable as the checkpoint says, else a new file's (``0o666``/``0o777`` less the
    umask)."""
    with contextlib.suppress(OSError):
        now = os.stat(name, dir_fd=parent, follow_symlinks=False)
        if stat.S_ISREG(now.st_mode) and bool(now.st_mode & stat.S_IXUSR) == executable:
            return stat.S_IMODE(now.st_mode)
    return (0o777 if executable else 0o666) & ~_UMASK


def _prune(root: Path, dirs: list[str], keep_dirs: set[tuple[str, str]]) -> None:
    """Remove the directories a delete left empty that the checkpoint has nothing under."""
    while dirs:
        rel = "/".join(dirs)
        if (str(root), rel) in keep_dirs:
            return
        try:
            parent, name = open_parent(root, root.joinpath(*dirs))
        except OSError:
            return
        try:
            os.rmdir(name, dir_fd=parent)
        except OSError:
            return  # not empty, or not ours to remove
        finally:
            os.close(parent)
        dirs = dirs[:-1]
