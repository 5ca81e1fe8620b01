"""The report's figures (inline SVG): the budget spent over time, and grouped values."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from dpsense.pages import figure_svg, new_figure
from dpsense.report.model import BudgetView, RowView, StatisticView

if TYPE_CHECKING:
    from markupsafe import Markup

__all__ = ["grouped_figure", "spending_figure"]

_ACCENT = "#1f5fa8"
_BAD = "#a8321f"
_MAX_GROUPS = 60
"""A figure shows at most this many groups (the table below it shows them all)."""


def spending_figure(budget: BudgetView, statuses: Sequence[str]) -> Markup | None:
    """Epsilon (rho for a zCDP budget) spent after each charge, against the total (None
    before any charge)."""
    measure = budget.measure
    if measure == "rho":
        spent = list(budget.rho_after_each)
    else:
        spent = [eps for eps, _ in budget.spent_after_each]
    if not spent:
        return None
    fig = new_figure(7.5, 3.2)
    ax = fig.add_subplot()
    xs = list(range(1, len(spent) + 1))
    ax.step([0, *xs], [0.0, *spent], where="post", color=_ACCENT, linewidth=2, label="spent")
    for x, y, status in zip(xs, spent, statuses, strict=True):
        refused = status == "refused"
        ax.plot(
            [x],
            [y],
            marker="x" if refused else "o",
            color=_BAD if refused else _ACCENT,
            markersize=6,
        )
    total = budget.total_rho if budget.total_rho is not None else budget.total[0]
    ax.axhline(total, color="#5b6570", linestyle="--", linewidth=1)
    ax.annotate(
        f"total {measure} {total:g}",
        (0, total),
        xytext=(4, -12),
        textcoords="offset points",
        color="#5b6570",
        fontsize=9,
    )
    ax.set_xlim(0, len(spent) + 0.5)
    ax.set_ylim(0, max(total, max(spent)) * 1.08)
    ax.set_xlabel("charge number (in time order; x: a refused release)")
    ax.set_ylabel(f"{measure} spent")
    if len(xs) <= 30:
        ax.set_xticks(xs)
    ax.spines[["top", "right"]].set_visible(False)
    return figure_svg(fig, f"{measure} spent after each charge, against the total budget")


def _bar(r: RowView) -> list[list[float]] | None:
    """The error bar of a row: its 95% interval, else its accuracy, else none."""
    assert r.number is not None
    if r.low is not None and r.high is not None:
        return [[max(r.number - r.low, 0.0)], [max(r.high - r.number, 0.0)]]
    return None if r.halfwidth is None else [[r.halfwidth], [r.halfwidth]]


def grouped_figure(stat: StatisticView) -> Markup | None:
    """Value per group with its 95% accuracy as an error bar; refused groups marked."""
    rows: list[RowView] = list(stat.figure_rows)[:_MAX_GROUPS]
    if not rows or all(r.number is None and not r.refused for r in rows):
        return None
    labels = [", ".join(r.group) for r in rows]
    fig = new_figure(7.5, 0.9 + 0.38 * len(rows))
    ax = fig.add_subplot()
    ys = list(range(len(rows)))[::-1]  # first group on top
    drawn = [(y, r) for y, r in zip(ys, rows, strict=True) if r.number is not None]
    for y, r in drawn:
        assert r.number is not None
        ax.errorbar(
            [r.number],
            [y],
            xerr=_bar(r),
            fmt="o",
            color=_BAD if r.unreliable else _ACCENT,
            capsize=4,
        )
    numbers = [r.number for _, r in drawn if r.number is not None]
    lows = [r.low if r.low is not None else r.number for _, r in drawn if r.number is not None]
    highs = [
        r.high if r.high is not None else r.number + (r.halfwidth or 0.0)
        for _, r in drawn
        if r.number is not None
    ]
    left = min(min(numbers), min(lows)) if numbers else 0.0
    right = max(highs) if highs else 1.0
    pad = (right - left) * 0.25 or 1.0
    ax.set_xlim(left - pad, right + pad)
    for y, r in zip(ys, rows, strict=True):
        if r.refused:
            ax.text(left, y, "refused", color=_BAD, va="center", fontsize=10, fontweight="bold")
        elif r.number is not None:
            text = r.value + (f" {r.interval}" if r.interval else "")
            ax.annotate(
                text,
                (r.number, y),
                xytext=(0, 7),
                textcoords="offset points",
                ha="center",
                fontsize=8,
                color="#1b1f24",
            )
    ax.set_yticks(ys)
    ax.set_yticklabels(labels)
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.set_xlabel(
        "released value (bars: 95% intervals; red: wider than half the bounds)"
        if any(r.low is not None or r.halfwidth for r in rows)
        else "released value (no interval for this method)"
    )
    ax.set_ylabel(", ".join(stat.by))
    ax.spines[["top", "right"]].set_visible(False)
    ax.grid(axis="x", color="#e6e9ed")
    return figure_svg(fig, f"{stat.title}: released value per group")
