"""Helpers shared by the lab's experiments: number formatting, seeds, progress, axes."""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from dpsense.noise.rng import SeededRandom

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

Advance = Callable[[int], None]
"""Called with the units of work just finished (drives the progress bar)."""

COLOURS: Final = {
    "global": "#d62728",
    "smooth": "#1f77b4",
    "ptr": "#2ca02c",
    "sample-aggregate": "#9467bd",
    "exponential": "#ff7f0e",
    "naive": "#d62728",
    "local-bound": "#2ca02c",
    "ksw": "#1f77b4",
}


def no_progress(units: int) -> None:
    """An :data:`Advance` that reports nowhere."""
    del units


def stream(seed: int, *names: object) -> int:
    """A reproducible 32-bit seed for one named stream of a run (CRC32 of the names)."""
    return zlib.crc32("|".join(str(p) for p in (seed, *names)).encode())


def seeded(seed: int, *names: object) -> SeededRandom:
    """dpsense's seeded noise source for one named stream."""
    return SeededRandom(stream(seed, *names))


def sampler(seed: int, *names: object) -> np.random.Generator:
    """numpy generator for drawing samples of the data (not noise)."""
    return np.random.default_rng(stream(seed, *names))


def num(v: float) -> str:
    """A number for a sentence: 3 significant digits, thousands separated."""
    if v == 0.0:
        return "0"
    if not math.isfinite(v):
        return "infinite"
    a = abs(v)
    if a >= 1000:
        return f"{v:,.0f}"
    if a >= 0.01:
        return f"{v:.3g}"
    return f"{v:.2e}"


def times(big: float, small: float) -> str:
    """How many times ``big`` is ``small``, for a sentence ("7.3x")."""
    if small == 0.0:
        return "infinitely many times" if big > 0 else "1x"
    r = big / small
    return f"{r:,.0f}x" if r >= 100 else f"{r:.2g}x"


def relation(value: float, reference: float) -> str:
    """``value`` compared with ``reference`` for a sentence: "7.3x smaller than", "about
    the same as" (within 10 %) or "1.5x larger than"."""
    if value == reference or (reference > 0 and 1 / 1.1 <= value / reference <= 1.1):
        return "about the same as"
    if value < reference:
        return f"{times(reference, value)} smaller than"
    return f"{times(value, reference)} larger than"


def log_log_axes(
    ax: Axes,
    ticks: tuple[Sequence[float], list[str]],
    xlabel: str,
    ylabel: str,
    title: str,
) -> None:
    """Both axes logarithmic, x ticks only at ``ticks`` (positions, labels), the labels and
    title, and a light grid at the major ticks."""
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(*ticks)
    ax.minorticks_off()
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="major", alpha=0.3)


def panel_row(height: float, columns: int) -> tuple[Figure, Any]:
    """A lab figure: 10 inches wide, ``height`` high, and its row of ``columns`` axes."""
    from dpsense.pages import new_figure

    fig = new_figure(10, height)
    return fig, fig.subplots(1, columns)
