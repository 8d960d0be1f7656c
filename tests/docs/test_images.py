"""Every picture README.md and docs/*.md show is a committed file (a PNG drawn by the gate's own plots.write)."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_each_image_a_page_shows_is_a_png_beside_it(page):
    for target in IMAGE.findall(page.read_text()):
        path = (page.parent / target).resolve()
        assert path.is_file(), f"{page.name} shows {target}, which is not there"
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", f"{target} is not a PNG"


def test_the_readme_shows_a_plot():
    assert IMAGE.findall((ROOT / "README.md").read_text()), "README.md shows no plot"
