"""Context items: a locator, a preview, and the full content as a blob (git-internal style).

- ``file``: read from the workspace (confined to the session's roots, symlinks that escape
  refused) unless the host sends ``content``; its blob id is computed exactly as git does, so a
  file tracked by git has the same id here as its git blob.  The bytes are also kept in the
  sidecar's own store: a snapshot must stay reproducible when the workspace changes or the
  repository is gone (the ids make deduplication with git possible later).
- ``url``, ``snippet``, ``command``, ``other``: the host supplies the text (the sidecar fetches
  nothing and runs nothing).
- ``image``: the host supplies the bytes (base64).

Previews are at most 500 characters and never split a character.
"""

from __future__ import annotations

import base64
import binascii
import os
from typing import TYPE_CHECKING, Protocol

from protocol.errors import ErrorCode
from protocol.inputs import ContextItem, ContextItemInput
from sidecar.errors import InvalidRequestError
from sidecar.paths import UnreadableFileError, is_within, open_regular, real_path

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["MAX_ITEM_BYTES", "PREVIEW_CHARS", "BlobSink", "capture_item", "preview_of"]

PREVIEW_CHARS = 500
#: Largest item accepted (a whole file or attachment).
MAX_ITEM_BYTES = 32 * 1024 * 1024


def preview_of(text: str) -> str | None:
    """At most 500 characters (code points: a character is never split)."""
    if not text:
        return None
    return text[:PREVIEW_CHARS]


def _invalid(message: str, **details: object) -> InvalidRequestError:
    return InvalidRequestError(ErrorCode.PARAMS_INVALID, message, details=dict(details))


def read_workspace_file(roots: list[Path], locator: str) -> bytes:
    """The bytes of a workspace file named by a root-relative path, confined to the roots."""
    if os.path.isabs(locator) or not roots:
        raise InvalidRequestError(
            ErrorCode.PATH_OUTSIDE_WORKSPACE,
            f"{locator!r} must be a path relative to the session's workspace root",
            details={"path": locator},
        )
    root = real_path(roots[0])
    path = real_path(roots[0] / locator)
    if not is_within(path, root):
        raise InvalidRequestError(
            ErrorCode.PATH_OUTSIDE_WORKSPACE,
            f"{locator!r} resolves outside the workspace (symlinks that escape are refused)",
            details={"path": locator},
        )
    try:
        with open_regular(path, root=root) as handle:  # by descriptor from the root down
            data = handle.read(MAX_ITEM_BYTES + 1)
    except UnreadableFileError as exc:
        raise _invalid(f"{locator}: {exc}", path=locator) from exc
    if len(data) > MAX_ITEM_BYTES:
        raise _invalid(f"{locator} is larger than {MAX_ITEM_BYTES} bytes", path=locator)
    return data


class BlobSink(Protocol):
    """Where item bytes go: the blob store, or a capture that may keep them in memory."""

    def put(self, data: bytes) -> str: ...


def capture_item(item: ContextItemInput, roots: list[Path], blobs: BlobSink) -> ContextItem:
    """Store an attachment's content as a blob and describe it."""
    if item.kind == "image":
        if item.data_base64 is None:
            raise _invalid(f"image {item.path!r} needs dataBase64", path=item.path)
        try:
            data = base64.b64decode(item.data_base64, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise _invalid(
                f"image {item.path!r}: dataBase64 is not base64", path=item.path
            ) from exc
        return ContextItem(kind="image", path=item.path, blob=blobs.put(data))
    if item.content is not None:
        data = item.content.encode("utf-8", "surrogatepass")
    elif item.data_base64 is not None:
        try:
            data = base64.b64decode(item.data_base64, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise _invalid(f"{item.path!r}: dataBase64 is not base64", path=item.path) from exc
    elif item.kind == "file":
        data = read_workspace_file(roots, item.path)
    else:
        raise _invalid(
            f"{item.kind} item {item.path!r} needs its content (the sidecar fetches nothing)",
            path=item.path,
        )
    text = data.decode("utf-8", errors="replace")
    return ContextItem(
        kind=item.kind, path=item.path, preview=preview_of(text), blob=blobs.put(data)
    )
