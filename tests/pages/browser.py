"""Open a dpsense HTML page in headless Chromium (the OS package) through Playwright.

Shared by the report and lab tests. Playwright cannot download its own browser here, so
it is pointed at the system Chromium (``apt-get install chromium``); without either,
the browser tests are skipped locally and fail in CI (``DPSENSE_REQUIRE_BROWSER=1``).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest


def chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


@dataclass
class OpenedPage:
    """A loaded page with what happened while it loaded."""

    page: Any  # playwright.sync_api.Page
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    def outside_requests(self, path: Path) -> list[str]:
        """Requests for anything but the page file itself (data: URLs are inline)."""
        own = path.resolve().as_uri()
        return [u for u in self.requests if u != own and not u.startswith("data:")]

    def drawn_figures(self) -> list[tuple[float, float]]:
        """Width and height of every inline SVG figure as laid out by the browser."""
        boxes = self.page.eval_on_selector_all(
            "figure svg",
            "els => els.map(e => { const r = e.getBoundingClientRect();"
            " return [r.width, r.height]; })",
        )
        return [(float(w), float(h)) for w, h in boxes]

    def text(self) -> str:
        return str(self.page.inner_text("body"))

    def page_width(self) -> tuple[int, int]:
        """(the page's scroll width, the window's width): equal when nothing sticks out."""
        got = self.page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        return int(got[0]), int(got[1])

    def figure_font_px(self) -> float:
        """The smallest font size, in CSS pixels as drawn, of the text in the figures."""
        return float(
            self.page.evaluate(
                """() => { let least = Infinity;
                for (const t of document.querySelectorAll('figure svg text')) {
                  const r = t.getBoundingClientRect();
                  if (r.height > 0) least = Math.min(least, r.height); }
                return least; }"""
            )
        )


@contextmanager
def open_page(
    path: Path, screenshot: Path | None = None, width: int = 1280, height: int = 900
) -> Iterator[OpenedPage]:
    """Load ``path`` (a local HTML file) and yield it with console errors and requests."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("playwright is not installed (pip install playwright)")
    exe = chromium_path()
    if exe is None:
        _missing("no system Chromium (apt-get install chromium)")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            opened = OpenedPage(page)
            page.on(
                "console",
                lambda m: opened.console_errors.append(m.text) if m.type == "error" else None,
            )
            page.on("pageerror", lambda e: opened.page_errors.append(str(e)))
            page.on("request", lambda r: opened.requests.append(r.url))
            page.goto(path.resolve().as_uri(), wait_until="load")
            if screenshot is not None:
                page.screenshot(path=str(screenshot), full_page=True)
            yield opened
        finally:
            browser.close()


def _missing(why: str) -> Any:
    if os.environ.get("DPSENSE_REQUIRE_BROWSER") == "1":
        pytest.fail(f"browser tests required but {why}")
    pytest.skip(why)
