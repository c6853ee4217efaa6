"""Agent Skills: discovery (metadata only), activation (body and references), the catalog.

This module owns everything the sidecar does with ``SKILL.md`` directories
(agentskills.io/specification, thndrs' limits).  Skills are read as text, never executed:
``scripts/`` is only ever shown as text when the body links to a file in it.

Discovery
    Roots, in order: for each workspace root ``.agents/skills``, ``.claude/skills``,
    ``.codex/skills``; then the same three under ``home``.  A missing root is skipped
    silently.  A root that resolves to a directory already scanned (e.g. ``.claude/skills``
    symlinked to ``.agents/skills``) is skipped silently, so one skill is not reported as its
    own duplicate.  A workspace's roots must resolve inside that workspace; home roots may
    live anywhere (they are the user's own configuration).  A skill is an immediate,
    non-dot subdirectory of a root (sorted by name); plain files in a root are ignored.  A
    subdirectory without ``SKILL.md`` is reported (``skills.missing_skill_md``).  A skill
    directory, or its ``SKILL.md``, that resolves outside its root is refused
    (``skills.outside_root``) before it is read.  First root wins on a name clash; each later
    skill of the same name gets a ``skills.duplicate_name`` warning naming both directories.
    Only valid skills claim a name.

Frontmatter
    ``SKILL.md`` must start with a ``---`` line (a byte-order mark and trailing whitespace
    are tolerated); the frontmatter ends at the next ``---`` line.  Discovery reads at most
    :data:`FRONTMATTER_MAX_BYTES` and never the body.  It is parsed with ``yaml.safe_load``
    and must be a mapping.  Rules, each failure its own error diagnostic saying exactly why:

    - ``name``: a string of 1-64 characters from ``a-z``, ``0-9`` and ``-``, not starting or
      ending with ``-``, without ``--`` (ASCII only: the spec's "lowercase alphanumeric" is
      read as ``a-z0-9``); equal to the directory name, else ``skills.name_mismatch``;
    - ``description``: a string of 1-1024 characters, not only whitespace (stored stripped);
    - ``license``: a string; ``compatibility``: a string of 1-500 characters;
    - ``metadata``: a mapping of string keys to string values (``version: 1.0`` is a float
      and is rejected: quote it);
    - ``allowed-tools``: a space-separated string, or a list of non-empty strings.

    Unknown top-level keys give one ``skills.unknown_field`` warning and do not reject.
    Other codes: ``skills.invalid_frontmatter`` (every structural and field problem),
    ``skills.unreadable`` (not a regular file, I/O error).

Activation
    The body is ``SKILL.md`` after the frontmatter, without leading and trailing newlines.
    References are relative inline Markdown links ``[text](target)`` outside fenced code blocks;
    image links ``![alt](...)``, links with a URL scheme, ``//host`` links, pure anchors and
    absolute paths are ignored; ``#fragment`` and ``?query`` are dropped and ``%xx`` decoded.
    A link is relative to the file containing it.  Links are followed breadth-first (so
    shallow files win under the limits) through ``.md`` files: SKILL.md's links are depth 1,
    links found at ``max_depth`` are reported (``skills.reference_limit``) and not followed.
    A target that resolves outside the skill directory (``..`` or a symlink) is refused
    (``skills.reference_outside``) without being opened.  Links to directories and to
    ``SKILL.md`` itself are ignored; a missing target gets ``skills.reference_missing``; a
    file that is not UTF-8 text (or contains NUL bytes) gets ``skills.reference_unreadable``.
    Each file is cut at ``max_file_bytes`` on a UTF-8 boundary (``truncated``; only that
    prefix is read).  ``max_total_bytes`` bounds everything activation adds: the body plus
    the references' text; a body alone over it is cut (``skills.body_truncated``).  When the
    next reference would exceed ``max_files`` or ``max_total_bytes``, loading stops: it and
    every reference still queued get ``skills.reference_limit``.  Activation diagnostics name
    a reference by its skill-relative path (as :class:`SkillReference` does); discovery
    diagnostics use absolute paths, root-level problems first, then skills in order.

Rendered text
    ``<skill name="...">``, the body, then each reference as ``<reference path="...">`` (plus
    ``truncated="true"`` when cut) ... ``</reference>``, then ``</skill>``, one per line.
    Attribute values are XML-escaped; texts are not (they are prompt text, not markup).

Catalog
    ``<available_skills>``, one ``- name: description`` line per skill (whitespace in the
    description collapsed to single spaces), ``</available_skills>``.  It holds the longest
    prefix of the skills, in discovery order, whose whole rendered text counts within the
    budget (found by binary search, assuming appending a line never lowers the count); the
    rest are omitted.  When not even one skill fits, the text is empty.
"""

from __future__ import annotations

import html
import os
import posixpath
import re
import urllib.parse
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml

from protocol.context import Diagnostic, SkillInfo, SkillReference
from sidecar.context.paths import (
    UnreadableFileError,
    cut_utf8,
    is_within,
    open_regular,
    real_path,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

__all__ = [
    "FRONTMATTER_MAX_BYTES",
    "SKILL_ROOTS",
    "Activation",
    "Skill",
    "SkillScan",
    "activate_skill",
    "discover_skills",
    "render_catalog",
]

#: Skill roots, relative to each workspace root and then to the home directory.
SKILL_ROOTS = (".agents/skills", ".claude/skills", ".codex/skills")
#: Most bytes of ``SKILL.md`` read to find the end of its frontmatter.
FRONTMATTER_MAX_BYTES = 64 * 1024

_SKILL_MD = "SKILL.md"
_NAME_MAX = 64
_DESCRIPTION_MAX = 1024
_COMPATIBILITY_MAX = 500
_KNOWN_FIELDS = frozenset(
    {"name", "description", "license", "compatibility", "metadata", "allowed-tools"}
)
_NAME_CHARS = re.compile(r"[a-z0-9-]+")
_LINK = re.compile(r"(!?)\[[^\]\n]*\]\(\s*(<[^>\n]*>|[^)\s]+)(?:\s+[^)\n]*)?\)")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")

Severity = Literal["warning", "error"]


@dataclass(frozen=True, slots=True)
class Skill:
    info: SkillInfo
    directory: Path
    """The skill directory as found under its root (absolute, symlinks not resolved)."""
    skill_md: Path


@dataclass(frozen=True, slots=True)
class SkillScan:
    skills: list[Skill]
    diagnostics: list[Diagnostic]


@dataclass(frozen=True, slots=True)
class Activation:
    skill: Skill
    body: str
    references: list[SkillReference]
    text: str
    """The activated skill as the model sees it (see the module doc)."""
    diagnostics: list[Diagnostic]


class _FrontmatterError(Exception):
    """``SKILL.md`` has no usable frontmatter; the message says why."""


# --- discovery -------------------------------------------------------------------------------


def discover_skills(workspace_roots: Sequence[Path], home: Path | None) -> SkillScan:
    """Every valid skill under the workspace roots and ``home``, first root winning."""
    diagnostics: list[Diagnostic] = []
    skills: list[Skill] = []
    by_name: dict[str, Skill] = {}
    for root, confine in _skill_roots(workspace_roots, home, diagnostics):
        for skill in _skills_in_root(root, confine, diagnostics):
            first = by_name.get(skill.info.name)
            if first is None:
                by_name[skill.info.name] = skill
                skills.append(skill)
                continue
            _report(
                diagnostics,
                "warning",
                "skills.duplicate_name",
                skill.directory,
                f"skill {skill.info.name!r} at {skill.directory} is ignored: "
                f"{first.directory} has the same name and comes first",
            )
    return SkillScan(skills=skills, diagnostics=diagnostics)


def _skill_roots(
    workspace_roots: Sequence[Path], home: Path | None, diagnostics: list[Diagnostic]
) -> list[tuple[Path, Path]]:
    """``(root as written, real root)`` for each existing, not yet seen skills root."""
    bases: list[tuple[Path, bool]] = [(w.absolute(), True) for w in workspace_roots]
    if home is not None:
        bases.append((home.absolute(), False))
    seen: set[Path] = set()
    roots: list[tuple[Path, Path]] = []
    for base, confined in bases:
        real_base = real_path(base)
        for relative in SKILL_ROOTS:
            root = base / relative
            real_root = real_path(root)
            if real_root in seen or not real_root.is_dir():
                continue
            if confined and not is_within(real_root, real_base):
                _report(
                    diagnostics,
                    "error",
                    "skills.outside_root",
                    root,
                    f"skills root resolves to {real_root}, outside the workspace root {base}; "
                    "not read",
                )
                continue
            seen.add(real_root)
            roots.append((root, real_root))
    return roots


def _skills_in_root(root: Path, real_root: Path, diagnostics: list[Diagnostic]) -> list[Skill]:
    try:
        with os.scandir(root) as entries:
            names = sorted(e.name for e in entries if not e.name.startswith("."))
    except OSError as exc:
        _report(diagnostics, "error", "skills.unreadable", root, f"cannot list: {exc}")
        return []
    skills: list[Skill] = []
    for name in names:
        directory = root / name
        if not directory.is_dir():
            continue
        skill = _load_skill(root, real_root, directory, diagnostics)
        if skill is not None:
            skills.append(skill)
    return skills


def _load_skill(
    root: Path, real_root: Path, directory: Path, diagnostics: list[Diagnostic]
) -> Skill | None:
    real_dir = real_path(directory)
    if not is_within(real_dir, real_root) or real_dir == real_root:
        _report(
            diagnostics,
            "error",
            "skills.outside_root",
            directory,
            f"skill directory resolves to {real_dir}, outside its root {root}; not read",
        )
        return None
    skill_md = directory / _SKILL_MD
    if not os.path.lexists(skill_md):
        _report(
            diagnostics,
            "error",
            "skills.missing_skill_md",
            directory,
            f"directory has no {_SKILL_MD}; not a skill",
        )
        return None
    real_md = real_path(skill_md)
    if not is_within(real_md, real_dir):
        _report(
            diagnostics,
            "error",
            "skills.outside_root",
            skill_md,
            f"{_SKILL_MD} resolves to {real_md}, outside its skill directory; not read",
        )
        return None
    try:
        fields = _read_frontmatter(real_md)
    except UnreadableFileError as exc:
        _report(diagnostics, "error", "skills.unreadable", skill_md, f"{_SKILL_MD} {exc}")
        return None
    except _FrontmatterError as exc:
        _report(diagnostics, "error", "skills.invalid_frontmatter", skill_md, str(exc))
        return None
    info = _validate(fields, root, directory, skill_md, diagnostics)
    return None if info is None else Skill(info=info, directory=directory, skill_md=skill_md)


def _read_frontmatter(path: Path) -> dict[str, Any]:
    """The parsed frontmatter of ``path``, reading no further than its closing ``---``."""
    with open_regular(path) as handle:
        try:
            first = handle.readline(FRONTMATTER_MAX_BYTES)
            if _strip_line(first.removeprefix(b"\xef\xbb\xbf")) != b"---":
                raise _FrontmatterError(
                    f"{_SKILL_MD} does not start with a '---' line opening YAML frontmatter"
                )
            lines: list[bytes] = []
            used = len(first)
            while used < FRONTMATTER_MAX_BYTES:
                line = handle.readline(FRONTMATTER_MAX_BYTES - used)
                if not line:
                    raise _FrontmatterError("frontmatter is not closed by a '---' line")
                if _strip_line(line) == b"---":
                    return _parse_yaml(b"".join(lines))
                lines.append(line)
                used += len(line)
        except OSError as exc:
            raise UnreadableFileError(f"cannot be read: {exc.strerror or exc}") from exc
    raise _FrontmatterError(
        f"frontmatter is not closed by a '---' line within {FRONTMATTER_MAX_BYTES} bytes"
    )


def _strip_line(line: bytes) -> bytes:
    return line.rstrip(b" \t\r\n")


def _parse_yaml(raw: bytes) -> dict[str, Any]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _FrontmatterError(f"frontmatter is not valid UTF-8 (byte {exc.start})") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise _FrontmatterError(f"frontmatter is not valid YAML: {_yaml_problem(exc)}") from exc
    except RecursionError as exc:
        raise _FrontmatterError("frontmatter is not valid YAML: nested too deeply") from exc
    except (ValueError, TypeError, OverflowError) as exc:
        # safe_load builds dates and numbers: ``date: 2024-13-01`` raises ValueError.
        raise _FrontmatterError(f"frontmatter has a value YAML cannot build: {exc}") from exc
    if not isinstance(data, dict):
        kind = "empty" if data is None else f"a {type(data).__name__}"
        raise _FrontmatterError(f"frontmatter must be a YAML mapping, got {kind}")
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
        _report(
            diagnostics,
            "warning",
            "skills.unknown_field",
            skill_md,
            f"unknown frontmatter field(s) ignored: {', '.join(unknown)}",
        )
    for problem in problems:
        _report(diagnostics, "error", "skills.invalid_frontmatter", skill_md, problem)
    name = fields.get("name")
    if isinstance(name, str) and _name_problem(name) is None and name != directory.name:
        _report(
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


# --- activation ------------------------------------------------------------------------------


@dataclass(slots=True)
class _Loader:
    """The state of one activation's reference walk."""

    skill_dir: Path
    """Resolved skill directory."""
    max_depth: int
    max_files: int
    max_file_bytes: int
    budget: int
    """Bytes still allowed (``max_total_bytes`` minus the body and loaded references)."""
    diagnostics: list[Diagnostic]
    references: list[tuple[SkillReference, str]]
    seen: set[str]
    stopped: str | None = None
    """Why loading stopped at a limit, once it has."""


def activate_skill(
    skill: Skill,
    *,
    max_depth: int = 3,
    max_files: int = 24,
    max_total_bytes: int = 65536,
    max_file_bytes: int = 16384,
) -> Activation:
    """The body of ``skill`` and the files it links to, within the limits (see module doc).

    Never raises for anything found on disk: problems become diagnostics."""
    diagnostics: list[Diagnostic] = []
    skill_dir = real_path(skill.directory)
    body = _read_body(skill, skill_dir, max_total_bytes, diagnostics)
    loader = _Loader(
        skill_dir=skill_dir,
        max_depth=max_depth,
        max_files=max_files,
        max_file_bytes=max_file_bytes,
        budget=max_total_bytes - len(body.encode()),
        diagnostics=diagnostics,
        references=[],
        seen={_SKILL_MD},
    )
    _load_references(loader, body)
    references = [ref for ref, _ in loader.references]
    text = _render_skill(skill.info.name, body, loader.references)
    return Activation(
        skill=skill, body=body, references=references, text=text, diagnostics=diagnostics
    )


def _read_body(
    skill: Skill, skill_dir: Path, max_total_bytes: int, diagnostics: list[Diagnostic]
) -> str:
    real_md = real_path(skill.skill_md)
    if not is_within(real_md, skill_dir):
        _report(
            diagnostics,
            "error",
            "skills.outside_root",
            skill.skill_md,
            f"{_SKILL_MD} resolves outside its skill directory; not read",
        )
        return ""
    try:
        raw, size = _read_prefix(real_md, FRONTMATTER_MAX_BYTES + max_total_bytes + 4)
        offset = _body_offset(raw)
        body_bytes = raw[offset:]
        cut = cut_utf8(body_bytes, max_total_bytes)
        body = cut.decode("utf-8").strip("\r\n")
    except UnreadableFileError as exc:
        _report(diagnostics, "error", "skills.unreadable", skill.skill_md, f"{_SKILL_MD} {exc}")
        return ""
    except _FrontmatterError as exc:
        _report(diagnostics, "error", "skills.invalid_frontmatter", skill.skill_md, str(exc))
        return ""
    except UnicodeDecodeError as exc:
        message = f"{_SKILL_MD} body is not valid UTF-8 (byte {offset + exc.start})"
        _report(diagnostics, "error", "skills.unreadable", skill.skill_md, message)
        return ""
    if len(cut) < len(body_bytes) or size > len(raw):
        _report(
            diagnostics,
            "warning",
            "skills.body_truncated",
            skill.skill_md,
            f"body is over the {max_total_bytes}-byte activation limit; cut on a UTF-8 boundary",
        )
    return body


def _read_prefix(path: Path, limit: int) -> tuple[bytes, int]:
    """At most ``limit`` bytes of ``path`` and the file's full size."""
    with open_regular(path) as handle:
        try:
            size = os.fstat(handle.fileno()).st_size
            return handle.read(limit), size
        except OSError as exc:
            raise UnreadableFileError(f"cannot be read: {exc.strerror or exc}") from exc


def _body_offset(raw: bytes) -> int:
    """Where the body starts: just after the closing ``---`` line of the frontmatter."""
    lines = raw.splitlines(keepends=True)
    if not lines or _strip_line(lines[0].removeprefix(b"\xef\xbb\xbf")) != b"---":
        raise _FrontmatterError(f"{_SKILL_MD} no longer starts with YAML frontmatter")
    offset = len(lines[0])
    for line in lines[1:]:
        offset += len(line)
        if _strip_line(line) == b"---":
            return offset
    raise _FrontmatterError("frontmatter is not closed by a '---' line")


def _load_references(loader: _Loader, body: str) -> None:
    queue: deque[tuple[str, int]] = deque((t, 1) for t in _link_targets(body, ""))
    while queue:
        rel, depth = queue.popleft()
        if rel in loader.seen:
            continue
        loader.seen.add(rel)
        if depth > loader.max_depth:
            _limit(loader, rel, f"linked beyond the depth limit of {loader.max_depth}")
            continue
        loaded = _load_reference(loader, rel)
        if loader.stopped is not None:
            for pending, _ in queue:
                if pending not in loader.seen:
                    loader.seen.add(pending)
                    _limit(loader, pending, loader.stopped)
            return
        if loaded is None:
            continue
        if rel.lower().endswith(".md"):
            queue.extend((t, depth + 1) for t in _link_targets(loaded, posixpath.dirname(rel)))


def _load_reference(loader: _Loader, rel: str) -> str | None:
    """Load one reference: its text, or ``None`` when it is skipped or a limit stops
    loading (then ``loader.stopped`` says which)."""
    path = loader.skill_dir / rel
    real = real_path(path)
    if not is_within(real, loader.skill_dir):
        _reference_outside(loader, rel)
        return None
    if real.is_dir() or real == loader.skill_dir / _SKILL_MD:
        return None
    if not os.path.lexists(path):
        message = "linked file does not exist"
        _report(loader.diagnostics, "warning", "skills.reference_missing", rel, message)
        return None
    if len(loader.references) >= loader.max_files:
        _stop(loader, rel, f"not loaded: the {loader.max_files}-file limit is reached")
        return None
    try:
        raw, size = _read_prefix(real, loader.max_file_bytes + 4)
        cut = cut_utf8(raw, loader.max_file_bytes)
        if b"\0" in cut:
            raise UnicodeError
        text = cut.decode("utf-8")
    except UnreadableFileError as exc:
        _report(loader.diagnostics, "warning", "skills.reference_unreadable", rel, f"file {exc}")
        return None
    except UnicodeError:
        message = "file is not UTF-8 text (binary?); not loaded"
        _report(loader.diagnostics, "warning", "skills.reference_unreadable", rel, message)
        return None
    if len(cut) > loader.budget:
        _stop(loader, rel, "not loaded: the total byte limit of the activation is reached")
        return None
    loader.budget -= len(cut)
    reference = SkillReference(path=rel, bytes=size, truncated=size > len(cut))
    loader.references.append((reference, text))
    return text


def _stop(loader: _Loader, rel: str, reason: str) -> None:
    loader.stopped = reason
    _limit(loader, rel, reason)


def _reference_outside(loader: _Loader, rel: str) -> None:
    message = "link resolves outside the skill directory; refused, not read"
    _report(loader.diagnostics, "error", "skills.reference_outside", rel, message)


def _limit(loader: _Loader, rel: str, message: str) -> None:
    _report(loader.diagnostics, "warning", "skills.reference_limit", rel, message)


def _link_targets(markdown: str, base: str) -> list[str]:
    """Skill-relative, normalized targets of the relative links in ``markdown``, in order.

    ``base`` is the linking file's directory relative to the skill (``""`` for SKILL.md)."""
    targets: list[str] = []
    fence: str | None = None
    for line in markdown.splitlines():
        opened = _FENCE.match(line)
        if opened is not None:
            marker = opened.group(1)
            if fence is None:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence):
                fence = None
            continue
        if fence is not None:
            continue
        for match in _LINK.finditer(line):
            target = _relative_target(match.group(2), image=bool(match.group(1)))
            if target is not None:
                targets.append(posixpath.normpath(posixpath.join(base, target)))
    return targets


def _relative_target(raw: str, *, image: bool) -> str | None:
    target = raw[1:-1].strip() if raw.startswith("<") else raw
    target = urllib.parse.unquote(target.split("#", 1)[0].split("?", 1)[0])
    if image or not target or _SCHEME.match(target) or target.startswith(("/", "\\")):
        return None
    return target


def _render_skill(name: str, body: str, references: list[tuple[SkillReference, str]]) -> str:
    parts = [f'<skill name="{_attr(name)}">', body]
    for reference, text in references:
        truncated = ' truncated="true"' if reference.truncated else ""
        parts.append(f'<reference path="{_attr(reference.path)}"{truncated}>')
        parts.append(text.strip("\r\n"))
        parts.append("</reference>")
    parts.append("</skill>")
    return "\n".join(parts)


def _attr(value: str) -> str:
    return html.escape(value, quote=True)


# --- catalog ---------------------------------------------------------------------------------


def render_catalog(
    skills: Sequence[Skill], budget_tokens: int, count: Callable[[str], int]
) -> tuple[str, list[str], list[str]]:
    """The ``<available_skills>`` block within ``budget_tokens``: (text, included, omitted)."""
    names = [s.info.name for s in skills]
    low, high = 0, len(skills)  # invariant: a prefix of `low` skills fits
    while low < high:
        mid = (low + high + 1) // 2
        if count(_catalog_text(skills[:mid])) <= budget_tokens:
            low = mid
        else:
            high = mid - 1
    text = _catalog_text(skills[:low]) if low else ""
    return text, names[:low], names[low:]


def _catalog_text(skills: Sequence[Skill]) -> str:
    lines = ["<available_skills>"]
    lines.extend(f"- {s.info.name}: {' '.join(s.info.description.split())}" for s in skills)
    lines.append("</available_skills>")
    return "\n".join(lines)


def _report(
    diagnostics: list[Diagnostic], severity: Severity, code: str, path: Path | str, message: str
) -> None:
    diagnostics.append(Diagnostic(severity=severity, code=code, path=str(path), message=message))
