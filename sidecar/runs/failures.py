"""How a run ends badly: the failure as it goes on the wire, and the exception that carries it.

Every way the loop stops (round limit, repeated call, provider error, a host that did not
answer, compaction that failed) raises :class:`RunStopped`; the manager turns it into the one
``run.completed {status: failed, failure}`` of the run.  Both retry flags are always present.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol._base import dump_wire
from protocol.runs import RunFailure

if TYPE_CHECKING:
    from sidecar.runs.providers.base import ProviderError

__all__ = ["RunStopped", "run_failure"]


def run_failure(
    code: str,
    message: str,
    *,
    retryable: bool = False,
    user_retryable: bool = True,
    details: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A ``RunFailure`` as it goes on the wire, with both retry flags always present."""
    failure = RunFailure(
        code=code,
        message=message,
        retryable=retryable,
        user_retryable=user_retryable,
        details=details,
    )
    return dump_wire(failure)


class RunStopped(Exception):
    """Ends a run with a failure the host should see.

    Every failure the loop builds goes through here, so each carries the whole
    :class:`~protocol.runs.RunFailure`: ``retryable`` (the same request may succeed later:
    rate limit, overload, a host that did not answer) and ``userRetryable`` (worth offering
    ``run/resume``; true for every way the loop stops, since a resumed run starts afresh).
    """

    def __init__(
        self, code: str, message: str, *, retryable: bool = False, user_retryable: bool = True
    ) -> None:
        super().__init__(message)
        self.failure = run_failure(
            code, message, retryable=retryable, user_retryable=user_retryable
        )

    @classmethod
    def from_provider(cls, exc: ProviderError) -> RunStopped:
        """The model call failed: the run ends with the provider's code and retry hint."""
        return cls(exc.code, str(exc), retryable=exc.retryable)
