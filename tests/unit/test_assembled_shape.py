"""The shape an assembly hands back (``Assembled.shape``): what the session's next request is
planned against, taken from the units the transcript groups built once instead of rebuilt
from the prompt (``request_shape``) after every assembly."""

from __future__ import annotations

import random
import tempfile
from pathlib import Path
from typing import Any

from sidecar.context.cache_accounting import request_shape
from tests.unit.selection_kit import READ_FILE, GrowingSession, coding_turn

PROFILE: dict[str, Any] = {"window": 60_000, "masking": "off"}
REMINDER = {
    "identifier": "reminder",
    "role": "system",
    "position": "inChat",
    "depth": 3,
    "content": "Keep answers short.",
}


def test_the_shape_is_the_prompts_own_and_its_transcript_units_are_shared_by_the_next() -> None:
    """Equal to ``request_shape`` of the prompt (units, tools, system, markers) with and without
    an in-chat component (which makes the messages, and their units, anew); the next assembly's
    plan compares the same unit objects for the transcript it repeats."""
    with tempfile.TemporaryDirectory() as tmp:
        session = GrowingSession(Path(tmp), PROFILE, [READ_FILE])
        rng = random.Random(5)
        try:
            previous = None
            shapes = []
            for i in range(4):
                session.append(coding_turn(i, [rng.randint(100, 400) for _ in range(2)]))
                for components in (None, [REMINDER]):
                    made = session.assembled(components=components, previous=previous)
                    assert made.result["cacheBreakpoints"]
                    assert made.shape == request_shape(made.result)
                    assert made.shape.markers  # the breakpoints, where the prompt has them
                    previous = made.shape
                    if components is None:
                        shapes.append(made.shape)
            before, after = shapes[-2], shapes[-1]
            first = after.tools + after.system
            repeated = len(before.units) - first - 1  # the transcript, not the user turn
            assert repeated > 8
            same = before.units[first : first + repeated]
            assert all(a is b for a, b in zip(same, after.units[first:], strict=False))
        finally:
            session.close()
