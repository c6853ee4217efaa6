"""mkdocs hook: links from a page to a file of the repository outside ``docs/``.

A page links a source file or an image the way GitHub reads it, relative to the page
(``../../editors/vscode/media/chat-screenshot.png`` from ``docs/frontends/vscode.md``), so the
link works when the Markdown is read in the repository.  mkdocs knows only ``docs/``: this hook
copies each such file into the site under ``repo/`` (``on_files``) and points the link there
(``on_page_markdown``), so it works in the built site too, offline.  A link to a file that does
not exist is left alone, and ``mkdocs build --strict`` reports it; so is a link to another
Markdown file (mkdocs would make it a page): name those in code.
"""

from __future__ import annotations

import os
import posixpath
import re
from pathlib import Path
from typing import TYPE_CHECKING

from mkdocs.structure.files import File

if TYPE_CHECKING:
    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.structure.files import Files
    from mkdocs.structure.pages import Page

__all__ = ["SITE_DIR", "on_files", "on_page_markdown", "repo_target"]

#: Where the copies go, under the site.
SITE_DIR = "repo"
#: A Markdown link or image target that climbs out of the page's directory.
_LINK = re.compile(r"(\]\()(\.\./[^)\s#]+)(#[^)\s]*)?(\))")
_FENCE = re.compile(r"^(```|~~~)", re.MULTILINE)


def repo_target(page_uri: str, target: str, docs_dir: Path, root: Path) -> str | None:
    """The repository path ``target`` (relative to the page ``page_uri`` under ``docs_dir``)
    names, when it is a file of the repository outside ``docs_dir``; else None."""
    # normalised, not resolved: a symlink is followed to read the file, as git stores it
    path = Path(os.path.normpath(docs_dir / posixpath.dirname(page_uri) / target))
    if not path.is_relative_to(root) or path.is_relative_to(docs_dir) or not path.is_file():
        return None
    if path.suffix == ".md":  # it would be a page of the site, outside the nav
        return None
    return path.relative_to(root).as_posix()


def _roots(config: MkDocsConfig) -> tuple[Path, Path]:
    """The docs directory and the repository root (where ``mkdocs.yml`` is), absolute."""
    docs = Path(os.path.abspath(config.docs_dir))
    return docs, Path(os.path.abspath(config.config_file_path)).parent


def _outside_fences(markdown: str) -> list[tuple[int, int]]:
    """The spans of ``markdown`` that are not inside a fenced code block."""
    spans, start, inside = [], 0, False
    for fence in _FENCE.finditer(markdown):
        if not inside:
            spans.append((start, fence.start()))
        else:
            start = fence.end()
        inside = not inside
    if not inside:
        spans.append((start, len(markdown)))
    return spans


def on_files(files: Files, config: MkDocsConfig) -> Files:
    docs_dir, root = _roots(config)
    wanted: set[str] = set()
    for page in files.documentation_pages():
        markdown = Path(page.abs_src_path or "").read_text(encoding="utf-8")
        for match in _LINK.finditer(markdown):
            rel = repo_target(page.src_uri, match.group(2), docs_dir, root)
            if rel is not None:
                wanted.add(rel)
    for rel in sorted(wanted):
        files.append(File.generated(config, f"{SITE_DIR}/{rel}", abs_src_path=str(root / rel)))
    return files


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    docs_dir, root = _roots(config)
    here = posixpath.dirname(page.file.src_uri)

    def point(match: re.Match[str]) -> str:
        rel = repo_target(page.file.src_uri, match.group(2), docs_dir, root)
        if rel is None:
            return match.group(0)
        target = posixpath.relpath(f"{SITE_DIR}/{rel}", here or ".")
        return f"{match.group(1)}{target}{match.group(3) or ''}{match.group(4)}"

    out, last = [], 0
    for start, end in _outside_fences(markdown):
        out.append(markdown[last:start])
        out.append(_LINK.sub(point, markdown[start:end]))
        last = end
    out.append(markdown[last:])
    return "".join(out)
