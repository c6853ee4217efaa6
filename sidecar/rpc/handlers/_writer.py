"""The single-writer rule for handlers that write outside session history.

Session writes are refused inside the store while another sidecar holds the store's lock
(``store.locked``, retryable).  Blobs, profiles, presets, snapshots, run journals and
``store/gc`` have no such check in the store yet, so a read-only second sidecar would write
into (or, with ``gc``, delete from) a store another process owns.  Every handler that writes
any of those calls :func:`require_writer` before writing anything.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sidecar.store import Store

__all__ = ["require_writer"]


def require_writer(store: Store) -> None:
    """Raise ``store.locked`` unless this sidecar holds (or can now take) the write lock.

    Goes through the session store's check on purpose: taking the lock also reloads the
    sessions it had loaded read-only.  (Its right home is a public ``Store.require_writer``
    used by the blob and document stores themselves.)"""
    store.sessions._require_writer()
