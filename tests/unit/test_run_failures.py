"""Failures the run loop builds: both retry flags always on the wire, as documented."""

from __future__ import annotations

from protocol.errors import ErrorCode
from sidecar.runs.failures import RunStopped, run_failure
from sidecar.runs.providers.base import ProviderError


def test_a_failure_always_carries_both_retry_flags() -> None:
    failure = RunStopped(ErrorCode.TOOL_LOOP, "looped").failure
    assert failure == {
        "code": "agent.tool_loop_detected",
        "message": "looped",
        "retryable": False,
        "userRetryable": True,
    }
    assert run_failure("x.y", "m", user_retryable=False, details={"a": 1})["userRetryable"] is False


def test_a_provider_failure_keeps_its_retry_hint() -> None:
    busy = RunStopped.from_provider(ProviderError("model.overloaded", "busy", retryable=True))
    assert busy.failure["retryable"] is True and busy.failure["userRetryable"] is True
    assert str(busy) == "busy"
