"""The page toolkit: escaping, inline SVG, atomic writes, and a real browser load."""

from __future__ import annotations

from pathlib import Path

import pytest

from dpsense.errors import InputError
from dpsense.pages import figure_svg, new_figure, render_page, write_page
from tests.pages.browser import open_page

pytest.importorskip("jinja2")
pytest.importorskip("matplotlib")


def _page(tmp_path: Path, title: str) -> Path:
    fig = new_figure(4, 3)
    ax = fig.add_subplot()
    ax.plot([0, 1, 2], [1.5, 2.5, 0.5])
    ax.set_title("released 12.75")
    html = render_page(
        "_toolkit_test.html.j2", title=title, svg=figure_svg(fig, "a test line"), version="t"
    )
    out = tmp_path / "page.html"
    write_page(html, out)
    return out


def test_values_are_escaped_and_svg_is_inline(tmp_path: Path) -> None:
    out = _page(tmp_path, "<script>alert(1)</script>")
    html = out.read_text()
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;" in html
    assert "<svg" in html
    assert 'aria-label="a test line"' in html
    assert "released 12.75" in html  # text kept as text, searchable in the page
    assert "<?xml" not in html


def test_write_page_refuses_a_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        write_page("<p>x</p>", tmp_path / "nope" / "page.html")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.browser
def test_page_loads_offline_in_chromium(tmp_path: Path) -> None:
    out = _page(tmp_path, "toolkit")
    with open_page(out, screenshot=tmp_path / "shot.png") as opened:
        assert opened.console_errors == []
        assert opened.page_errors == []
        assert opened.outside_requests(out) == []
        figures = opened.drawn_figures()
        assert len(figures) == 1
        assert min(figures[0]) > 50
        assert "toolkit" in opened.text()
