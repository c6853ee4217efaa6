"""Secrets kept out of what the sidecar writes: its log, and the messages it sends a client.

A command line a client hands the sidecar (an MCP server's ``command`` and ``args``) often
carries a credential, and the sidecar repeats that command line when it logs the start or
tells the editor the server failed.  :func:`redact_args` replaces what looks like a secret
with ``***`` and keeps the rest, so the message still says what was run:

- the value after a flag whose name suggests a secret (``--token X``, ``--api-key X``,
  ``--password X``), and the value of ``name=value`` / ``--name=value`` when ``name`` does
  (:func:`secret_name`: the same rule that keeps such names out of a command's
  environment, :mod:`sidecar.tools.command_env`, whose value check is :func:`redact_text`);
- anywhere in any text (:func:`redact_text`): values shaped like the tokens of the common
  services (``sk-…``, ``ghp_…``/``github_pat_…``, ``xox?-…``, ``glpat-…``, ``AKIA…``,
  ``AIza…``, JWTs, ``Bearer …``), a password in a URL (``://user:***@``), and any run of 32 or
  more hex digits, or of 32 or more base64 characters mixing digits and both cases.

An environment is never shown with its values: :func:`env_names` is what a message says of
it.  Over-redacting a log line costs nothing; a token left in it is a leak, so the rules lean
that way (``--max-tokens 8`` shows as ``--max-tokens ***``).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = ["MASK", "env_names", "redact_args", "redact_command", "redact_text", "secret_name"]

MASK = "***"

_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|BEARER", re.I)
_FLAG = re.compile(r"^-{1,2}([A-Za-z0-9][A-Za-z0-9_.-]*)$")
_ASSIGNMENT = re.compile(r"^(-{0,2}[A-Za-z_][A-Za-z0-9_.-]*)(\s*[=:]\s*)(.+)$", re.S)
_SHAPES = (
    # service tokens, by their documented prefixes
    re.compile(r"\bsk-[A-Za-z0-9_-]{12,}"),
    re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"),
    re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{8,}"),
    re.compile(r"\bglpat-[A-Za-z0-9_-]{16,}"),
    re.compile(r"\bAKIA[0-9A-Z]{16}\b"),
    re.compile(r"\bAIza[0-9A-Za-z_-]{30,}"),
    re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"),
    # long hex (keys, digests)
    re.compile(r"(?<![A-Za-z0-9])[0-9A-Fa-f]{32,}(?![A-Za-z0-9])"),
)
_BEARER = re.compile(r"\b(bearer|basic|token)(\s+)[A-Za-z0-9._~+/=-]{8,}", re.I)
_URL_PASSWORD = re.compile(r"(://[^/\s:@]+:)[^@\s/]+@")
_KEY_VALUE = re.compile(r"([A-Za-z0-9_.-]+)(\s*[=:]\s*)([^\s&;,?#'\"]+)")
_BASE64_RUN = re.compile(r"[A-Za-z0-9+_=-]{32,}")


def secret_name(name: str) -> bool:
    """Whether a variable, flag or parameter called ``name`` may hold a secret."""
    return bool(_SECRET_NAME.search(name))


def _mixed(run: str) -> bool:
    """A run of base64 characters that reads as random: digits and both cases."""
    return (
        any(c.isdigit() for c in run)
        and any(c.islower() for c in run)
        and any(c.isupper() for c in run)
    )


def redact_text(text: str) -> str:
    """``text`` with every value shaped like a secret replaced by ``***``."""
    for shape in _SHAPES:
        text = shape.sub(MASK, text)
    text = _BEARER.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", text)
    text = _URL_PASSWORD.sub(lambda m: f"{m.group(1)}{MASK}@", text)
    text = _KEY_VALUE.sub(
        lambda m: f"{m.group(1)}{m.group(2)}{MASK}" if secret_name(m.group(1)) else m.group(0),
        text,
    )
    return _BASE64_RUN.sub(lambda m: MASK if _mixed(m.group(0)) else m.group(0), text)


def redact_args(args: Iterable[str]) -> list[str]:
    """A command's arguments as they may be shown (see the module's rules)."""
    out: list[str] = []
    hide_next = False
    for arg in args:
        if hide_next and not arg.startswith("-"):
            out.append(MASK)
            hide_next = False
            continue
        hide_next = False
        flag = _FLAG.match(arg)
        if flag is not None:
            hide_next = secret_name(flag.group(1))
            out.append(arg)
            continue
        assignment = _ASSIGNMENT.match(arg)
        if assignment is not None and secret_name(assignment.group(1)):
            out.append(f"{assignment.group(1)}{assignment.group(2)}{MASK}")
            continue
        out.append(redact_text(arg))
    return out


def redact_command(command: str, args: Iterable[str]) -> str:
    """``command args…`` on one line, as it may be logged or shown."""
    return " ".join([redact_text(command), *redact_args(args)])


def env_names(env: Mapping[str, str] | None) -> str:
    """What a message says of an environment: its names, never a value."""
    return ", ".join(sorted(env)) if env else "none"
