"""opencode logs: not read yet (the parser lands in the next commit)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sidecar.transcripts.model import Transcript, TranscriptError

if TYPE_CHECKING:
    from pathlib import Path


def parse(path: Path, source: Any) -> Transcript:
    raise TranscriptError(str(path), 0, "the opencode format is not read yet")
