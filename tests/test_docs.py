"""The README is a front door (at most 200 lines) and the manual lives in docs/: every relative link in
README.md and docs/*.md points to a file or folder that exists, so nothing the README sends a reader to
has moved away."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# [text](target) and ![alt](target); the target ends at a space (a title follows) or the closing bracket
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def relative_links(text: str) -> list[str]:
    """Link targets that name a file of this repository (no scheme, no bare #anchor)."""
    return [t for t in LINK.findall(text) if not re.match(r"^[a-z][a-z0-9+.-]*:", t, re.I) and not t.startswith("#")]


def test_readme_is_at_most_200_lines():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; move the manual to docs/"


def test_links_are_found_including_relative_and_image_ones():
    text = "[a](docs/x.md) ![b](img/y.png \"t\") [c](https://e.org/z) [d](#top) [e](../README.md#colab)"
    assert relative_links(text) == ["docs/x.md", "img/y.png", "../README.md#colab"]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_points_to_an_existing_file(page):
    broken = [t for t in relative_links(page.read_text()) if not (page.parent / t.split("#")[0]).exists()]
    assert not broken, f"{page.relative_to(ROOT)}: links to missing files {broken}"


def test_the_readme_links_every_page_of_docs():
    linked = {(ROOT / t.split("#")[0]).resolve() for t in relative_links((ROOT / "README.md").read_text())}
    unlinked = [p.name for p in PAGES[1:] if p.resolve() not in linked]
    assert not unlinked, f"docs/ pages the README never links: {unlinked}"
