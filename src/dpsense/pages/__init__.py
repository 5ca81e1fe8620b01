"""Self-contained HTML pages (the report and the lab): Jinja2 templates, inline SVG figures.

A page is one file: its styles are inline, its figures are SVG elements written into the
HTML, and it loads nothing from the network, so it opens offline and can be mailed to a
privacy officer. Jinja2 autoescapes every value placed in a template; only the SVG markup
produced here by matplotlib is marked safe.

Jinja2 and matplotlib are imported only when a page is rendered (``pip install
'dpsense[report]'``).
"""

from __future__ import annotations

import io
import os
import re
from typing import TYPE_CHECKING, Any

from dpsense.errors import InputError

if TYPE_CHECKING:
    from markupsafe import Markup
    from matplotlib.figure import Figure

__all__ = ["figure_svg", "new_figure", "render_page", "write_page"]

_INSTALL = "pip install 'dpsense[report]'"


def render_page(template: str, **context: Any) -> str:
    """Render ``templates/<template>`` (which extends ``base.html.j2``) to an HTML string.

    Parameters
    ----------
    template : str
        File name under ``dpsense/pages/templates``.
    **context : Any
        Values for the template; strings are autoescaped.

    Returns
    -------
    str
        The page.
    """
    try:
        import jinja2
    except ImportError:
        raise InputError(f"HTML pages need Jinja2: {_INSTALL}") from None
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("dpsense.pages", "templates"),
        autoescape=jinja2.select_autoescape(["html", "j2"], default=True),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return env.get_template(template).render(**context)


def write_page(html: str, path: str | os.PathLike[str]) -> None:
    """Write ``html`` to ``path`` atomically (a temporary file renamed into place)."""
    target = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(target))
    if not os.path.isdir(directory):
        raise InputError(
            f"The output folder {directory!r} does not exist. Create it or pass another path."
        )
    tmp = f"{target}.tmp-{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(html)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def new_figure(width: float = 6.4, height: float = 3.6) -> Figure:
    """A matplotlib Figure on an SVG canvas (no pyplot, no global backend)."""
    try:
        from matplotlib.backends.backend_svg import FigureCanvasSVG
        from matplotlib.figure import Figure
    except ImportError:
        raise InputError(f"figures need matplotlib: {_INSTALL}") from None
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasSVG(fig)
    return fig


_SVG_START = re.compile(r"<svg\b")


def figure_svg(fig: Figure, title: str) -> Markup:
    """The figure as an inline ``<svg>`` element with an accessible title.

    Text is kept as text (``svg.fonttype = 'none'``), so released numbers in labels can be
    found in the page; the XML prologue and DOCTYPE are dropped.
    """
    import matplotlib
    from markupsafe import Markup, escape

    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "dpsense"}):
        fig.savefig(buffer, format="svg")
    text = buffer.getvalue()
    match = _SVG_START.search(text)
    if match is None:  # pragma: no cover - matplotlib always writes an <svg> root
        raise RuntimeError("matplotlib wrote no <svg> element")
    svg = text[match.start() :]
    svg = svg.replace(">", f' role="img" aria-label="{escape(title)}">', 1)
    return Markup(svg)
