"""Checkpoints of a session's workspace: git trees in the store's object database.

Taken before a run's first change to the workspace (``turn``), before every mutating tool call
(``edit``, ``command``) and before a restore (``restore``); each names the history seq it
stands before.  :mod:`~sidecar.checkpoints.capture` walks a root as git sees it (ignored files
and ``.git`` never read) with a stat cache; :mod:`~sidecar.checkpoints.records` is the
per-session journal; :mod:`~sidecar.checkpoints.diff` compares a checkpoint with the
workspace; :mod:`~sidecar.checkpoints.restore` puts files back; :mod:`~sidecar.checkpoints.
service` owns them per store (retention, what gc keeps, stats).  Core: no face imports here,
and nothing here imports a face, the run loop or the method table.
"""

from __future__ import annotations

from sidecar.checkpoints import diff, restore
from sidecar.checkpoints.service import Checkpoints, Settings, checkpoints_of, settings_of

__all__ = ["Checkpoints", "Settings", "checkpoints_of", "diff", "restore", "settings_of"]
