"""``SKILL.md`` frontmatter: reading it and validating it against the Agent Skills spec.

``SKILL.md`` must start with a ``---`` line (a byte-order mark and trailing whitespace are
tolerated); the frontmatter ends at the next ``---`` line.  Discovery reads at most
:data:`FRONTMATTER_MAX_BYTES` and never the body.  It is parsed with ``yaml.safe_load`` and
must be a mapping.  Rules, each failure its own error diagnostic saying exactly why:

- ``name``: a string of 1-64 characters from ``a-z``, ``0-9`` and ``-``, not starting or
  ending with ``-``, without ``--`` (ASCII only: the spec's "lowercase alphanumeric" is read
  as ``a-z0-9``); equal to the directory name, else ``skills.name_mismatch``;
- ``description``: a string of 1-1024 characters, not only whitespace (stored stripped);
- ``license``: a string; ``compatibility``: a string of 1-500 characters;
- ``metadata``: a mapping of string keys to string values (``version: 1.0`` is a float and
  is rejected: quote it);
- ``allowed-tools``: a space-separated string, or a list of non-empty strings.

Unknown top-level keys give one ``skills.unknown_field`` warning and do not reject.  Other
codes: ``skills.invalid_frontmatter`` (every structural and field problem),
``skills.unreadable`` (not a regular file, I/O error).

Activation finds where the body starts with :func:`body_offset`, which applies the same
opening and closing ``---`` rules.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import yaml

from protocol.context import SkillInfo
from sidecar.context.skills.skill import SKILL_MD, report
from sidecar.paths import UnreadableFileError, open_regular

if TYPE_CHECKING:
    from pathlib import Path

    from protocol.context import Diagnostic

__all__ = ["FRONTMATTER_MAX_BYTES", "FrontmatterError", "body_offset", "read_skill_info"]

#: Most bytes of ``SKILL.md`` read to find the end of its frontmatter.
FRONTMATTER_MAX_BYTES = 64 * 1024

_NAME_MAX = 64
_DESCRIPTION_MAX = 1024
_COMPATIBILITY_MAX = 500
_KNOWN_FIELDS = frozenset(
    {"name", "description", "license", "compatibility", "metadata", "allowed-tools"}
)
_NAME_CHARS = re.compile(r"[a-z0-9-]+")


class FrontmatterError(Exception):
    """``SKILL.md`` has no usable frontmatter; the message says why."""


def read_skill_info(
    real_md: Path,
    root: Path,
    directory: Path,
    skill_md: Path,
    diagnostics: list[Diagnostic],
    *,
    real_root: Path | None = None,
) -> SkillInfo | None:
    """The validated metadata of the skill in ``directory``, or ``None`` once every reason
    it is not a valid skill has been reported against ``skill_md``.

    ``real_md`` is the resolved ``skill_md``, already confined to the skill directory (and
    to ``real_root``, the resolved skills root, from which it is opened by descriptor)."""
    try:
        fields = _read_frontmatter(real_md, real_root)
    except UnreadableFileError as exc:
        report(diagnostics, "error", "skills.unreadable", skill_md, f"{SKILL_MD} {exc}")
        return None
    except FrontmatterError as exc:
        report(diagnostics, "error", "skills.invalid_frontmatter", skill_md, str(exc))
        return None
    return _validate(fields, root, directory, skill_md, diagnostics)


# --- reading ---------------------------------------------------------------------------------


def _read_frontmatter(path: Path, root: Path | None) -> dict[str, Any]:
    """The parsed frontmatter of ``path``, reading no further than its closing ``---``."""
    with open_regular(path, root=root) as handle:
        try:
            first = handle.readline(FRONTMATTER_MAX_BYTES)
            if _strip_line(first.removeprefix(b"\xef\xbb\xbf")) != b"---":
                raise FrontmatterError(
                    f"{SKILL_MD} does not start with a '---' line opening YAML frontmatter"
                )
            lines: list[bytes] = []
            used = len(first)
            while used < FRONTMATTER_MAX_BYTES:
                line = handle.readline(FRONTMATTER_MAX_BYTES - used)
                if not line:
                    raise FrontmatterError("frontmatter is not closed by a '---' line")
                if _strip_line(line) == b"---":
                    return _parse_yaml(b"".join(lines))
                lines.append(line)
                used += len(line)
        except OSError as exc:
            raise UnreadableFileError(f"cannot be read: {exc.strerror or exc}") from exc
    raise FrontmatterError(
        f"frontmatter is not closed by a '---' line within {FRONTMATTER_MAX_BYTES} bytes"
    )


def body_offset(raw: bytes) -> int:
    """Where the body starts: just after the closing ``---`` line of the frontmatter."""
    lines = raw.splitlines(keepends=True)
    if not lines or _strip_line(lines[0].removeprefix(b"\xef\xbb\xbf")) != b"---":
        raise FrontmatterError(f"{SKILL_MD} no longer starts with YAML frontmatter")
    offset = len(lines[0])
    for line in lines[1:]:
        offset += len(line)
        if _strip_line(line) == b"---":
            return offset
    raise FrontmatterError("frontmatter is not closed by a '---' line")


def _strip_line(line: bytes) -> bytes:
    return line.rstrip(b" \t\r\n")


def _parse_yaml(raw: bytes) -> dict[str, Any]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FrontmatterError(f"frontmatter is not valid UTF-8 (byte {exc.start})") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise FrontmatterError(f"frontmatter is not valid YAML: {_yaml_problem(exc)}") from exc
    except RecursionError as exc:
        raise FrontmatterError("frontmatter is not valid YAML: nested too deeply") from exc
    except (ValueError, TypeError, OverflowError) as exc:
        # safe_load builds dates and numbers: ``date: 2024-13-01`` raises ValueError.
        raise FrontmatterError(f"frontmatter has a value YAML cannot build: {exc}") from exc
    if not isinstance(data, dict):
        kind = "empty" if data is None else f"a {type(data).__name__}"
        raise FrontmatterError(f"frontmatter must be a YAML mapping, got {kind}")
    return data


def _yaml_problem(exc: yaml.YAMLError) -> str:
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem:
        mark = exc.problem_mark
        where = f" (frontmatter line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        return f"{exc.problem}{where}"
    return str(exc).replace("\n", " ")


# --- validation ------------------------------------------------------------------------------


def _validate(
    fields: dict[str, Any],
    root: Path,
    directory: Path,
    skill_md: Path,
    diagnostics: list[Diagnostic],
) -> SkillInfo | None:
    problems = [
        p
        for p in (
            _name_problem(fields.get("name")),
            _text_problem(fields, "description", _DESCRIPTION_MAX, required=True),
            _text_problem(fields, "license", None, required=False),
            _text_problem(fields, "compatibility", _COMPATIBILITY_MAX, required=False),
            _metadata_problem(fields.get("metadata")),
            _allowed_tools_problem(fields.get("allowed-tools")),
        )
        if p is not None
    ]
    unknown = sorted(str(k) for k in fields if k not in _KNOWN_FIELDS)
    if unknown:
        report(
            diagnostics,
            "warning",
            "skills.unknown_field",
            skill_md,
            f"unknown frontmatter field(s) ignored: {', '.join(unknown)}",
        )
    for problem in problems:
        report(diagnostics, "error", "skills.invalid_frontmatter", skill_md, problem)
    name = fields.get("name")
    if isinstance(name, str) and _name_problem(name) is None and name != directory.name:
        report(
            diagnostics,
            "error",
            "skills.name_mismatch",
            skill_md,
            f"name {name!r} does not match the directory name {directory.name!r}",
        )
        return None
    if problems:
        return None
    return SkillInfo(
        name=fields["name"],
        description=fields["description"].strip(),
        path=str(directory),
        root=str(root),
        license=fields.get("license"),
        compatibility=fields.get("compatibility"),
        metadata=fields.get("metadata"),
        allowed_tools=_allowed_tools(fields.get("allowed-tools")),
    )


def _name_problem(name: object) -> str | None:
    if name is None:
        return "'name' is missing"
    if not isinstance(name, str):
        return f"'name' must be a string, got {type(name).__name__}"
    rules = (
        (not name, "is empty"),
        (len(name) > _NAME_MAX, f"is {len(name)} characters, more than {_NAME_MAX}"),
        (name != name.lower(), "contains uppercase letters"),
        (
            bool(name) and not _NAME_CHARS.fullmatch(name.lower()),
            "may only contain a-z, 0-9 and '-'",
        ),
        (name.startswith("-") or name.endswith("-"), "must not start or end with '-'"),
        ("--" in name, "must not contain '--'"),
    )
    broken = [why for failed, why in rules if failed]
    return f"'name' {name!r} {'; '.join(broken)}" if broken else None


def _text_problem(
    fields: dict[str, Any], key: str, limit: int | None, *, required: bool
) -> str | None:
    if key not in fields:
        return f"'{key}' is missing" if required else None
    value = fields[key]
    if not isinstance(value, str):
        return f"'{key}' must be a string, got {_type_name(value)}"
    if limit is not None and not value.strip():
        return f"'{key}' is empty"
    if limit is not None and len(value.strip()) > limit:
        return f"'{key}' is {len(value.strip())} characters, more than {limit}"
    return None


def _metadata_problem(metadata: object) -> str | None:
    if metadata is None:
        return None
    if not isinstance(metadata, dict):
        return f"'metadata' must be a mapping of strings to strings, got {_type_name(metadata)}"
    for key, value in metadata.items():
        if not isinstance(key, str):
            return f"'metadata' key {key!r} must be a string, got {_type_name(key)}"
        if not isinstance(value, str):
            return (
                f"'metadata.{key}' must be a string, got {_type_name(value)} (quote it in the YAML)"
            )
    return None


def _allowed_tools_problem(tools: object) -> str | None:
    if tools is None or isinstance(tools, str):
        return None
    if isinstance(tools, list):
        if all(isinstance(t, str) and t.strip() for t in tools):
            return None
        return "'allowed-tools' list items must be non-empty strings"
    return f"'allowed-tools' must be a space-separated string or a list, got {_type_name(tools)}"


def _allowed_tools(tools: object) -> list[str] | None:
    if isinstance(tools, str):
        return tools.split()
    if isinstance(tools, list):
        return [str(t).strip() for t in tools]
    return None


def _type_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "mapping"
    return type(value).__name__
