"""The quick lab page in a real browser (headless Chromium through Playwright)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from dpsense.lab import LabResults
from tests.pages.browser import OpenedPage, open_page

pytestmark = pytest.mark.browser

pytest.importorskip("jinja2")
pytest.importorskip("matplotlib")

SHOT = os.environ.get("DPSENSE_LAB_SCREENSHOT")
"""Set to a path to keep the full-page screenshot (to look at it)."""


@pytest.fixture(scope="module")
def opened(quick_lab: tuple[Path, LabResults]) -> Iterator[OpenedPage]:
    path, _ = quick_lab
    shot = Path(SHOT) if SHOT else path.with_suffix(".png")
    with open_page(path, screenshot=shot) as page:
        yield page


def test_no_console_errors(opened: OpenedPage) -> None:
    assert opened.console_errors == []
    assert opened.page_errors == []


def test_no_request_leaves_the_file(opened: OpenedPage, quick_lab: tuple[Path, LabResults]) -> None:
    assert opened.outside_requests(quick_lab[0]) == []


def test_every_figure_is_drawn(opened: OpenedPage) -> None:
    figures = opened.drawn_figures()
    assert len(figures) == 4
    for width, height in figures:
        assert width > 300
        assert height > 150


def test_each_finding_is_on_the_page(
    opened: OpenedPage, quick_lab: tuple[Path, LabResults]
) -> None:
    text = " ".join(opened.text().split())
    for finding in quick_lab[1].findings:
        assert " ".join(finding.split()) in text


def test_the_lab_reads_on_a_phone(opened: OpenedPage, tmp_path: Path) -> None:
    """At 390 px nothing sticks out of the page (wide tables and figures scroll inside
    their box) and the figures' text stays readable (at least 7 px tall as drawn)."""
    page = opened.page
    wide = page.viewport_size
    page.set_viewport_size({"width": 390, "height": 844})
    try:
        shot = Path(SHOT).with_name("lab-phone.png") if SHOT else tmp_path / "phone.png"
        page.screenshot(path=str(shot), full_page=True)
        scroll, window = opened.page_width()
        assert scroll <= window, (scroll, window)
        assert opened.figure_font_px() >= 7.0
    finally:
        page.set_viewport_size(wide)
    assert opened.console_errors == []
