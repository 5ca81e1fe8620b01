"""Figures of sensitivity: the smooth-sensitivity profile and the brute-force explorer.

matplotlib is optional (``pip install 'dpsense[plot]'``) and imported only when a figure
is drawn. Figures are built with the object-oriented API on an Agg canvas, so no global
pyplot state or interactive backend is touched. Files are written atomically: the image
goes to a temporary file in the target directory, which then replaces ``path``.

Every figure shows **non-private** quantities computed from the raw data; they are
diagnostics for the data owner and say so in a footnote.
"""

from __future__ import annotations

import math
import os
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpsense._docs import doc_parts
from dpsense.errors import Assign, InputError

__all__ = ["EXPLORER_NEIGHBOURS", "EXPLORER_SCOPES", "plot_explorer", "plot_sensitivity_profile"]

EXPLORER_NEIGHBOURS: tuple[str, ...] = ("add-remove", "substitute")
EXPLORER_SCOPES: tuple[str, ...] = ("local", "global")

_NON_PRIVATE_NOTE = "Non-private diagnostic computed from the raw data: do not publish."
_DPI = 150
_WIDE_RANGE = 100.0  # max/min ratio above which a logarithmic y axis is used
_TITLE_AND_RETURNS = """\
title : str, optional
    The figure title.

Returns
-------
pathlib.Path
    The path written.
"""
"""The end of a plot's Parameters, and its Returns (dpsense._docs)."""
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "h")

_Floats = np.ndarray[Any, np.dtype[np.float64]]


def _new_figure(width: float, height: float) -> Any:
    """A matplotlib Figure attached to an Agg canvas (no pyplot, no global backend)."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise InputError("plotting needs matplotlib: pip install 'dpsense[plot]'") from None
    fig = Figure(figsize=(width, height), dpi=_DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _check_target(path: str | os.PathLike[str], fig: Any) -> tuple[Path, str]:
    target = Path(os.fspath(path))
    fmt = target.suffix.lower().lstrip(".") or "png"
    supported = fig.canvas.get_supported_filetypes()
    if fmt not in supported:
        names = ", ".join(f".{k}" for k in ("png", "pdf", "svg") if k in supported)
        raise InputError(
            f"cannot write a plot to {target}: unknown image format '.{fmt}'; use {names}."
        )
    parent = target.parent
    if not parent.is_dir():
        raise InputError(f"cannot write a plot to {target}: the directory does not exist.")
    if target.is_dir():
        raise InputError(f"cannot write a plot to {target}: it is a directory.")
    return target, fmt


def _save_atomically(fig: Any, path: str | os.PathLike[str]) -> Path:
    """Save ``fig`` to ``path`` through a temporary file and :func:`os.replace`."""
    target, fmt = _check_target(path, fig)
    tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
    try:
        with tmp.open("xb") as handle:
            fig.savefig(handle, format=fmt, dpi=_DPI)
        os.replace(tmp, target)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise InputError(f"cannot write a plot to {target}: {reason}.") from None
    finally:
        tmp.unlink(missing_ok=True)
    return target


def _as_1d(values: ArrayLike, name: str) -> np.ndarray[Any, np.dtype[np.float64]]:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1 or arr.shape[0] == 0:
        raise InputError(f"The '{name}' argument of the plot must be a non-empty 1-d sequence.")
    return arr


def _wide(values: np.ndarray[Any, np.dtype[np.float64]]) -> bool:
    positive = values[np.isfinite(values) & (values > 0)]
    return positive.size > 1 and float(positive.max() / positive.min()) > _WIDE_RANGE


def _scale_y(ax: Any, values: np.ndarray[Any, np.dtype[np.float64]]) -> None:
    """Choose the y scale: logarithmic for a wide range, else linear from 0.

    Symmetric-log keeps zeros visible on a wide range; a linear axis starts at 0 so that
    magnitudes compare honestly.
    """
    finite = values[np.isfinite(values)]
    positive = finite[finite > 0]
    if positive.size == 0:
        ax.set_ylim(-0.05, 1.0)  # all zero: avoid matplotlib's 1e-17-wide default range
        return
    if not _wide(finite):
        top = float(ax.get_ylim()[1])
        ax.set_ylim(-0.03 * top, top)  # from 0, with room for markers that sit on 0
        return
    if not np.any(finite == 0):
        ax.set_yscale("log")
        return
    from matplotlib.ticker import FixedLocator, NullLocator

    # Linear below the smallest positive value, so that zeros stay on the chart; ticks
    # only at 0 and at whole decades (the default symlog ticks crowd near 0).
    linthresh = float(positive.min())
    ax.set_yscale("symlog", linthresh=linthresh, linscale=0.6)
    first = math.ceil(math.log10(linthresh))
    last = math.ceil(math.log10(float(positive.max())))
    ax.yaxis.set_major_locator(FixedLocator([0.0] + [10.0**e for e in range(first, last + 1)]))
    ax.yaxis.set_minor_locator(NullLocator())


def _integer_ticks(ax: Any) -> None:
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))


@doc_parts(title_and_returns=_TITLE_AND_RETURNS)
def plot_sensitivity_profile(
    ks: ArrayLike,
    a_of_k: ArrayLike,
    beta: float,
    smooth: float,
    *,
    path: str | os.PathLike[str],
    title: str | None = None,
) -> Path:
    r"""Plot local sensitivity at distance k and its smoothed version (NRS07).

    Draws :math:`A(k)` and :math:`e^{-\beta k} A(k)` against k, the smooth sensitivity

    .. math:: S^*(x) = \max_{k \ge 0} e^{-k\beta} A(f, x, k)

    as a horizontal line, and marks the k where the maximum is attained among the plotted
    ks (NRS07, Definition 3.1).

    Parameters
    ----------
    ks : array-like of int
        The distances k (increasing).
    a_of_k : array-like of float
        :math:`A(k)` for each k.
    beta : float
        The smoothing parameter.
    smooth : float
        The smooth sensitivity to mark (it may come from a tail bound beyond the plotted
        ks; the argmax marker then refers to the plotted range only).
    path : str or os.PathLike
        Where to write the figure; the format follows the suffix (png, pdf, svg, ...).
    <<title_and_returns>>

    Raises
    ------
    InputError
        If matplotlib is missing, the inputs are malformed, or the file cannot be written.
    """
    k, a = _profile_inputs(ks, a_of_k, beta)
    smoothed = np.exp(-beta * k) * a
    best = int(np.nanargmax(np.where(np.isfinite(smoothed), smoothed, -np.inf)))

    fig = _new_figure(8.0, 5.0)
    ax = fig.add_subplot()
    _draw_profile(ax, k, a, smoothed, beta)
    _mark_smooth(ax, k, smoothed, best, smooth)
    _scale_y(ax, np.concatenate([a, smoothed, [smooth]]))
    _integer_ticks(ax)
    _label_profile_axes(ax, k)
    fig.suptitle(title or "Smooth sensitivity profile", fontsize=12)
    ax.set_title(_NON_PRIVATE_NOTE, fontsize=8, color="0.35")
    return _save_atomically(fig, path)


def _profile_inputs(ks: ArrayLike, a_of_k: ArrayLike, beta: float) -> tuple[_Floats, _Floats]:
    """The distances and A(k) as float arrays of one length, with a positive beta."""
    k = _as_1d(ks, "ks")
    a = _as_1d(a_of_k, "a_of_k")
    if k.shape != a.shape:
        raise InputError("The 'ks' and 'a_of_k' arguments of the plot must have equal length.")
    if not (math.isfinite(beta) and beta > 0):
        raise InputError(
            f"The 'beta' parameter of the plot must be positive. Got {beta!r} instead."
        )
    return k, a


def _label_profile_axes(ax: Any, k: _Floats) -> None:
    """Axis labels, the x range of the plotted ks, the grid and the legend."""
    ax.set_xlabel("distance k (records changed)")
    ax.set_ylabel("sensitivity")
    ax.set_xlim(float(k.min()) - 0.5, float(k.max()) + 0.5)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="best", fontsize=9, framealpha=0.9)


def _draw_profile(ax: Any, k: _Floats, a: _Floats, smoothed: _Floats, beta: float) -> None:
    """The curves A(k) and exp(-beta k) A(k)."""
    marker = "o" if k.shape[0] <= 40 else None
    ax.plot(
        k,
        a,
        marker=marker,
        markersize=4,
        linewidth=1.8,
        color="tab:blue",
        label="A(k): local sensitivity at distance k",
    )
    ax.plot(
        k,
        smoothed,
        marker=marker,
        markersize=4,
        linewidth=1.8,
        color="tab:orange",
        label=f"exp(-βk)·A(k), β = {beta:.4g}",
    )


def _mark_smooth(ax: Any, k: _Floats, smoothed: _Floats, best: int, smooth: float) -> None:
    """The smooth sensitivity as a horizontal line and the argmax k* among the plotted ks."""
    if math.isfinite(smooth):
        ax.axhline(
            smooth,
            color="tab:red",
            linestyle="--",
            linewidth=1.2,
            label=f"smooth sensitivity S* = {smooth:.4g}",
        )
    if smoothed[best] > 0:
        ax.axvline(k[best], color="0.4", linestyle=":", linewidth=1.2)
        ax.plot(
            [k[best]],
            [smoothed[best]],
            marker="*",
            markersize=14,
            color="tab:red",
            linestyle="none",
            label=f"argmax k* = {int(k[best])}",
        )


def _explorer_series(
    results: Iterable[Mapping[str, Any]],
) -> tuple[dict[tuple[str, str, str], dict[int, float]], list[str]]:
    series: dict[tuple[str, str, str], dict[int, float]] = {}
    statistics: list[str] = []
    for i, row in enumerate(results):
        try:
            stat = str(row["statistic"])
            neighbours = str(row["neighbours"])
            scope = str(row["scope"])
            hamming = int(row["hamming"])
            value = row["sensitivity"]
        except (KeyError, TypeError, ValueError):
            raise InputError(
                f"result {i} of plot_explorer must have the keys statistic, neighbours, "
                "scope, hamming and sensitivity."
            ) from None
        if neighbours not in EXPLORER_NEIGHBOURS or scope not in EXPLORER_SCOPES:
            raise InputError(
                f"result {i} of plot_explorer has ",
                Assign.of("neighbours", neighbours),
                f", scope={scope!r}; "
                f"expected one of {EXPLORER_NEIGHBOURS} and one of {EXPLORER_SCOPES}.",
            )
        if stat not in statistics:
            statistics.append(stat)
        y = float(value) if value is not None else math.nan
        series.setdefault((neighbours, scope, stat), {})[hamming] = y
    if not series:
        raise InputError("plot_explorer needs at least one result.")
    return series, statistics


@doc_parts(title_and_returns=_TITLE_AND_RETURNS)
def plot_explorer(
    results: Iterable[Mapping[str, Any]],
    *,
    path: str | os.PathLike[str],
    title: str | None = None,
) -> Path:
    """Plot brute-force sensitivities by Hamming distance.

    A 2 x 2 grid: rows are the neighbour relations (add-remove, substitute), columns the
    scope (local sensitivity of the dataset, global sensitivity over the universe). Each
    panel has Hamming distance on the x axis and one line with markers per statistic;
    the legend is shared below the panels.

    Parameters
    ----------
    results : iterable of mappings
        One record per measurement, with the keys ``statistic`` (a name), ``neighbours``
        (``"add-remove"`` or ``"substitute"``), ``scope`` (``"local"`` or ``"global"``),
        ``hamming`` (int) and ``sensitivity`` (float; ``None`` or NaN for not computed).
    path : str or os.PathLike
        Where to write the figure; the format follows the suffix.
    <<title_and_returns>>

    Raises
    ------
    InputError
        If matplotlib is missing, a record is malformed, or the file cannot be written.
    """
    series, statistics = _explorer_series(results)
    fig = _new_figure(11.0, 8.0)
    # Rows share y so that local and global sensitivity of one relation compare directly.
    axes = fig.subplots(2, 2, sharex=True, sharey="row")
    handles: dict[str, Any] = {}
    for row, neighbours in enumerate(EXPLORER_NEIGHBOURS):
        row_values: list[float] = []
        for col, scope in enumerate(EXPLORER_SCOPES):
            curves = [
                (j, stat, points)
                for j, stat in enumerate(statistics)
                if (points := series.get((neighbours, scope, stat)))
            ]
            row_values.extend(_draw_panel(axes[row][col], neighbours, scope, curves, handles))
        if row_values:
            _scale_y(axes[row][0], np.asarray(row_values, dtype=np.float64))
    _shared_legend(fig, [handles[s] for s in statistics if s in handles])
    fig.suptitle(title or "Brute-force sensitivity by Hamming distance", fontsize=13)
    return _save_atomically(fig, path)


def _draw_panel(
    ax: Any,
    neighbours: str,
    scope: str,
    curves: list[tuple[int, str, dict[int, float]]],
    handles: dict[str, Any],
) -> list[float]:
    """One panel: a line per ``(j, statistic, points)`` (``j`` picks marker and colour).

    Records the first line of each statistic in ``handles``; returns the values drawn.
    """
    values: list[float] = []
    for j, stat, points in curves:
        hs = sorted(points)
        ys = [points[h] for h in hs]
        values.extend(ys)
        (line,) = ax.plot(
            hs,
            ys,
            marker=_MARKERS[j % len(_MARKERS)],
            markersize=6,
            markerfacecolor="none" if j % 2 else None,
            linewidth=1.6,
            color=f"C{j % 10}",
            label=stat,
        )
        handles.setdefault(stat, line)
    if not curves:
        ax.text(
            0.5, 0.5, "not computed", ha="center", va="center", transform=ax.transAxes, color="0.5"
        )
    _integer_ticks(ax)
    ax.set_title(f"{scope} sensitivity, {neighbours}", fontsize=11)
    ax.set_xlabel("Hamming distance")
    ax.set_ylabel(f"{scope} sensitivity")
    ax.grid(True, alpha=0.3)
    ax.tick_params(labelbottom=True, labelleft=True)
    return values


def _shared_legend(fig: Any, ordered: list[Any]) -> None:
    """One legend for every panel, below them, titled with the non-private note."""
    legend = fig.legend(
        ordered,
        [h.get_label() for h in ordered],
        loc="outside lower center",
        ncol=min(len(ordered), 6),
        fontsize=10,
        frameon=False,
        title=_NON_PRIVATE_NOTE,
        title_fontsize=8,
    )
    legend.get_title().set_color("0.35")
