"""The one error a built-in tool raises: a reason the model (and the user) can act on."""

from __future__ import annotations

__all__ = ["ToolError"]


class ToolError(Exception):
    """Raised when a tool refuses or fails; ``code`` is dotted, ``str(error)`` is for the model.

    Codes: ``tool.path_invalid`` (NUL byte, absurd length, not a string),
    ``tool.path_outside_roots`` (the real path leaves every workspace root),
    ``tool.not_found``, ``tool.not_a_file`` / ``tool.not_a_directory`` (FIFO, socket, device
    or the wrong kind), ``tool.binary``, ``tool.too_large``, ``tool.edit_no_match``,
    ``tool.edit_ambiguous``, ``tool.bad_pattern``, ``tool.timeout`` (a look-around call ran
    out of time: the message says what it did and how to narrow it), ``tool.cancelled``,
    ``tool.failed``.
    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
