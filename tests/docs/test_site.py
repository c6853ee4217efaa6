"""The docs site as a reader gets it: ``mkdocs build --strict`` (what ``make docs`` runs) into a
temp dir, then what must be true of the result (issue 22 item 2).

- Search works from ``file://``: the index is there as a script (Material's ``offline``
  plugin), and the Web Worker shim it needs is served from the site, not a CDN.
- Nothing is fetched at run time: no page loads a script, a style sheet, a font or an image
  from the network (links to other sites are fine: the reader follows them).
- The generated parts are there: the performance plots (``docs/hooks/plots.py``), the picture
  of the layers (``docs/hooks/layers.py``) and the repository files pages link GitHub's way
  (``docs/hooks/repo_files.py``).
- Strict means strict: a copy of the docs with a broken link, a broken anchor or a page left
  out of the nav fails to build.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

REPO = Path(__file__).resolve().parents[2]
#: An attribute that makes the browser fetch: src=, a stylesheet's href=, url() in CSS.
FETCHED = re.compile(
    r"""<(?:script|img|iframe|source|audio|video|embed)\b[^>]*\bsrc=["']?(https?:)?//"""
    r"""|<link\b[^>]*\brel=["']?(?:stylesheet|preload|modulepreload|icon)[^>]*\bhref=["']?(https?:)?//"""
    r"""|<link\b[^>]*\bhref=["']?(https?:)?//[^>]*\brel=["']?(?:stylesheet|preload|modulepreload|icon)"""
    r"""|@import\s+(?:url\()?["']?(https?:)?//|url\(["']?(https?:)?//""",
    re.IGNORECASE,
)


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        cwd=config.parent,
        capture_output=True,
        text=True,
        timeout=150,
        check=False,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = build(REPO / "mkdocs.yml", out)
    assert done.returncode == 0, done.stderr
    return out


def test_search_works_offline(site: Path) -> None:
    index = (site / "search" / "search_index.js").read_text(encoding="utf-8")
    assert index.startswith("var __index = {")
    assert '"location":"guide/context-policy.html' in index.replace(" ", "")
    assert "masking" in index
    shim = [p for p in site.rglob("*.js") if "iframe-worker" in p.name]
    assert shim, "the Web Worker shim for file:// is not in the site"
    home = (site / "index.html").read_text(encoding="utf-8")
    assert re.search(r'<script src="assets/javascripts/iframe-worker-shim\.js"', home)


def test_nothing_is_fetched_from_the_network(site: Path) -> None:
    pages = sorted(site.rglob("*.html"))
    assert len(pages) > 30
    fetched = {
        p.relative_to(site).as_posix(): m.group(0)
        for p in [*pages, *site.rglob("*.css")]
        for m in [FETCHED.search(p.read_text(encoding="utf-8"))]
        if m
    }
    assert not fetched, f"assets from the network: {fetched}"
    home = (site / "index.html").read_text(encoding="utf-8")
    assert "fonts.googleapis.com" not in home
    assert "unpkg.com" not in home


def test_the_fetch_check_can_fail() -> None:
    assert FETCHED.search('<script src="https://unpkg.com/iframe-worker/shim"></script>')
    assert FETCHED.search('<link rel="stylesheet" href="https://fonts.googleapis.com/css">')
    assert FETCHED.search("@import url(https://fonts.googleapis.com/css)")
    assert not FETCHED.search('<a href="https://agentclientprotocol.com">ACP</a>')


def test_the_generated_parts_are_there(site: Path) -> None:
    plots = sorted(p.name for p in (site / "assets" / "plots").glob("*.svg"))
    performance_plots = ["sessions.svg", "turns-chat.svg", "turns-coding.svg"]
    performance_plots.append("turns-huge-results.svg")
    assert plots == ["layers.svg", *performance_plots]
    for svg in performance_plots:
        text = (site / "assets" / "plots" / svg).read_text(encoding="utf-8")
        assert text.startswith("<svg ") and "context-sidecar" in text and "LangChain" in text
    performance = (site / "performance.html").read_text(encoding="utf-8")
    assert 'src="assets/plots/turns-coding.svg"' in performance
    vscode = (site / "frontends" / "vscode.html").read_text(encoding="utf-8")
    assert 'src="../repo/editors/vscode/media/chat-screenshot.png"' in vscode
    assert (site / "repo/editors/vscode/media/chat-screenshot.png").read_bytes() == (
        REPO / "editors/vscode/media/chat-screenshot.png"
    ).read_bytes()
    layers = (site / "assets" / "plots" / "layers.svg").read_text(encoding="utf-8")
    for package in ("rpc", "acp", "store", "context", "runs"):
        assert f">{package}</text>" in layers, package
    assert 'src="../assets/plots/layers.svg"' in (site / "develop" / "layout.html").read_text()
    reference = (site / "protocol" / "session.html").read_text(encoding="utf-8")
    assert 'id="sessioncreateparams"' in reference


def docs_copy(tmp_path: Path) -> Path:
    """The repository as mkdocs sees it, with ``docs/`` and ``mkdocs.yml`` copied (to break)
    and everything else linked."""
    root = tmp_path / "repo"
    root.mkdir()
    shutil.copytree(REPO / "docs", root / "docs", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "mkdocs.yml", root / "mkdocs.yml")
    for entry in REPO.iterdir():
        if entry.name not in {"docs", "mkdocs.yml", "site", ".git", ".venv"}:
            (root / entry.name).symlink_to(entry)
    return root


#: What is broken -> (the page, what is appended to it, what the warning names).
BREAKAGES = {
    "a link to a missing page": (
        "guide/runs.md",
        "\nSee [the missing page](missing.md).\n",
        "'guide/missing.md' is not found",
    ),
    "a link to a missing heading": (
        "guide/runs.md",
        "\nSee [the store](store.md#no-such-heading).\n",
        "'#no-such-heading'",
    ),
    "a link to a missing repository file": (
        "guide/runs.md",
        "\nSee [it](../../no/such/file.py).\n",
        "../../no/such/file.py",
    ),
    "a page left out of the nav": (
        "guide/orphan.md",
        "# An orphan\n",
        "guide/orphan.md",
    ),
}


def test_a_copy_of_the_docs_builds(tmp_path: Path) -> None:
    """The control of the test below: the copy itself is fine."""
    root = docs_copy(tmp_path)
    done = build(root / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0, done.stderr


def test_strict_fails_on_each_breakage(tmp_path: Path) -> None:
    """All of them in one build (each build takes seconds), each named by a warning."""
    root = docs_copy(tmp_path)
    for page, text, _ in BREAKAGES.values():
        with (root / "docs" / page).open("a", encoding="utf-8") as f:
            f.write(text)
    done = build(root / "mkdocs.yml", tmp_path / "site")
    assert done.returncode != 0, "the broken copy built"
    warnings = done.stderr[done.stderr.index("WARNING") :]
    for breakage, (_, _, named) in BREAKAGES.items():
        assert named in warnings, f"{breakage}: no warning names {named!r}\n{done.stderr}"
