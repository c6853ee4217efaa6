"""The front door: README.md stays short, names the two commands, and its links lead somewhere.

Everything else lives in the docs site (``docs/``, ``make docs``); the README is what a new user
reads first on GitHub (issue 22 item 1): at most 15,000 bytes, with ``make demo`` and
``make test`` in it, and every relative link to a file that exists and, where it names a
heading, to a heading that exists.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
MAX_BYTES = 15_000
#: ``[text](target)`` or ``![alt](target)``, outside code blocks.
LINK = re.compile(r"\]\(([^)\s]+)\)")


def readme_text() -> str:
    return README.read_text(encoding="utf-8")


def prose(text: str) -> str:
    """``text`` without its fenced code blocks."""
    return re.sub(r"^```.*?^```$", "", text, flags=re.MULTILINE | re.DOTALL)


def github_slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading (mkdocs' ``toc`` gives the same for ours)."""
    text = re.sub(r"[`*_]|<[^>]+>", "", heading.strip().lower())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    headings = re.findall(r"^#{1,6} (.+)$", prose(path.read_text(encoding="utf-8")), re.M)
    return {github_slug(h) for h in headings}


def test_the_readme_is_at_most_15000_bytes() -> None:
    size = len(README.read_bytes())
    assert size <= MAX_BYTES, (
        f"README.md is {size:,} bytes (at most {MAX_BYTES:,}): move the detail into a page of "
        "docs/ and link it"
    )


@pytest.mark.parametrize("command", ["make demo", "make test"])
def test_the_readme_names_the_two_commands(command: str) -> None:
    assert command in readme_text()


def test_the_readme_links_into_the_docs_and_says_how_to_build_them() -> None:
    text = readme_text()
    targets = LINK.findall(prose(text))
    assert "docs/getting-started.md" in targets
    assert "docs/protocol/index.md" in targets
    assert "make docs" in text
    assert "site/index.html" in text


def test_every_relative_link_of_the_readme_resolves() -> None:
    checked = 0
    for target in LINK.findall(prose(readme_text())):
        if re.match(r"^[a-z]+:", target):
            continue  # https:, mailto:
        path, _, anchor = target.partition("#")
        file = (REPO / path) if path else README
        assert file.exists(), f"README links {target!r}: no such file"
        if anchor:
            assert anchor in anchors(file), f"README links {target!r}: no such heading"
        checked += 1
    assert checked >= 20


def test_github_slugs_are_what_the_links_use() -> None:
    assert github_slug("Installing `context-sidecar` on your PATH") == (
        "installing-context-sidecar-on-your-path"
    )
    assert github_slug("The prompt cache, turn by turn") == "the-prompt-cache-turn-by-turn"
