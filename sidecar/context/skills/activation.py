"""Skill activation: the body of ``SKILL.md`` and the files it links to, within limits.

Skills are read as text, never executed: ``scripts/`` is only ever shown as text when the
body links to a file in it.

The body is ``SKILL.md`` after the frontmatter, without leading and trailing newlines.
References are relative inline Markdown links ``[text](target)`` outside fenced code blocks;
image links ``![alt](...)``, links with a URL scheme, ``//host`` links, pure anchors and
absolute paths are ignored; ``#fragment`` and ``?query`` are dropped and ``%xx`` decoded.  A
link is relative to the file containing it.  Links are followed breadth-first (so shallow
files win under the limits) through ``.md`` files: SKILL.md's links are depth 1, links found
at ``max_depth`` are reported (``skills.reference_limit``) and not followed.  A target that
resolves outside the skill directory (``..`` or a symlink) is refused
(``skills.reference_outside``) without being opened.  Links to directories and to
``SKILL.md`` itself are ignored; a missing target gets ``skills.reference_missing``; a file
that is not UTF-8 text (or contains NUL bytes) gets ``skills.reference_unreadable``.  Each
file is cut at ``max_file_bytes`` on a UTF-8 boundary (``truncated``; only that prefix is
read).  ``max_total_bytes`` bounds everything activation adds: the body plus the references'
text; a body alone over it is cut (``skills.body_truncated``).  When the next reference would
exceed ``max_files`` or ``max_total_bytes``, loading stops: it and every reference still
queued get ``skills.reference_limit``.  Activation diagnostics name a reference by its
skill-relative path (as :class:`~protocol.context.SkillReference` does), where discovery
diagnostics use absolute paths.

Rendered text
    ``<skill name="...">``, the body, then each reference as ``<reference path="...">`` (plus
    ``truncated="true"`` when cut) ... ``</reference>``, then ``</skill>``, one per line.
    Attribute values are XML-escaped; texts are not (they are prompt text, not markup).
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

from protocol.context import Diagnostic, SkillReference
from sidecar.context.skills.frontmatter import FRONTMATTER_MAX_BYTES, FrontmatterError, body_offset
from sidecar.context.skills.skill import SKILL_MD, Skill, report
from sidecar.paths import UnreadableFileError, cut_utf8, is_within, open_regular, real_path

__all__ = ["Activation", "activate_skill"]

_LINK = re.compile(r"(!?)\[[^\]\n]*\]\(\s*(<[^>\n]*>|[^)\s]+)(?:\s+[^)\n]*)?\)")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")


@dataclass(frozen=True, slots=True)
class Activation:
    skill: Skill
    body: str
    references: list[SkillReference]
    text: str
    """The activated skill as the model sees it (see the module doc)."""
    diagnostics: list[Diagnostic]


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
        seen={SKILL_MD},
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
        report(
            diagnostics,
            "error",
            "skills.outside_root",
            skill.skill_md,
            f"{SKILL_MD} resolves outside its skill directory; not read",
        )
        return ""
    try:
        raw, size = _read_prefix(real_md, skill_dir, FRONTMATTER_MAX_BYTES + max_total_bytes + 4)
        offset = body_offset(raw)
        body_bytes = raw[offset:]
        cut = cut_utf8(body_bytes, max_total_bytes)
        body = cut.decode("utf-8").strip("\r\n")
    except UnreadableFileError as exc:
        report(diagnostics, "error", "skills.unreadable", skill.skill_md, f"{SKILL_MD} {exc}")
        return ""
    except FrontmatterError as exc:
        report(diagnostics, "error", "skills.invalid_frontmatter", skill.skill_md, str(exc))
        return ""
    except UnicodeDecodeError as exc:
        message = f"{SKILL_MD} body is not valid UTF-8 (byte {offset + exc.start})"
        report(diagnostics, "error", "skills.unreadable", skill.skill_md, message)
        return ""
    if len(cut) < len(body_bytes) or size > len(raw):
        report(
            diagnostics,
            "warning",
            "skills.body_truncated",
            skill.skill_md,
            f"body is over the {max_total_bytes}-byte activation limit; cut on a UTF-8 boundary",
        )
    return body


def _read_prefix(path: Path, skill_dir: Path, limit: int) -> tuple[bytes, int]:
    """At most ``limit`` bytes of ``path`` (opened by descriptor from ``skill_dir`` down)
    and the file's full size."""
    with open_regular(path, root=skill_dir) as handle:
        try:
            size = os.fstat(handle.fileno()).st_size
            return handle.read(limit), size
        except OSError as exc:
            raise UnreadableFileError(f"cannot be read: {exc.strerror or exc}") from exc


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
    if real.is_dir() or real == loader.skill_dir / SKILL_MD:
        return None
    if not os.path.lexists(path):
        message = "linked file does not exist"
        report(loader.diagnostics, "warning", "skills.reference_missing", rel, message)
        return None
    if len(loader.references) >= loader.max_files:
        _stop(loader, rel, f"not loaded: the {loader.max_files}-file limit is reached")
        return None
    try:
        raw, size = _read_prefix(real, loader.skill_dir, loader.max_file_bytes + 4)
        cut = cut_utf8(raw, loader.max_file_bytes)
        if b"\0" in cut:
            raise UnicodeError
        text = cut.decode("utf-8")
    except UnreadableFileError as exc:
        report(loader.diagnostics, "warning", "skills.reference_unreadable", rel, f"file {exc}")
        return None
    except UnicodeError:
        message = "file is not UTF-8 text (binary?); not loaded"
        report(loader.diagnostics, "warning", "skills.reference_unreadable", rel, message)
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
    report(loader.diagnostics, "error", "skills.reference_outside", rel, message)


def _limit(loader: _Loader, rel: str, message: str) -> None:
    report(loader.diagnostics, "warning", "skills.reference_limit", rel, message)


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
