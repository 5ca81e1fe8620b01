"""``dpsense demo``: profiles and private releases on the bundled synthetic data."""

from __future__ import annotations

import math
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from dpsense.cli._shared import (
    _console,
    _percent,
    _short,
)
from dpsense.cli.analyze_cmd import WHY_NOT_LOCAL, banner, profile_of
from dpsense.data import load_column
from dpsense.params import smooth_beta
from dpsense.statistics import Quantiles, make_statistic

__all__ = ["demo"]

DEMO_EXAMPLES = "Examples:\n\n\b\n  dpsense demo\n  dpsense demo | less -R\n"
"""The examples that end ``--help``."""

# ------------------------------------------------------------------------------ demo

_DEMO_QUERIES: tuple[tuple[str, str, float | None, float | None, float | None], ...] = (
    ("age", "count", None, None, None),
    ("age", "mean", 0.0, 100.0, None),
    ("age", "median", 0.0, 100.0, None),
    ("age", "quantile", 0.0, 100.0, 0.9),
    ("education_years", "median", 0.0, 20.0, None),
    ("hours_per_week", "mean", 0.0, 100.0, None),
    ("hours_per_week", "median", 0.0, 100.0, None),
    ("income", "median", 0.0, 500_000.0, None),
    ("income", "mean", 0.0, 500_000.0, None),
    ("capital_gain", "mean", 0.0, 100_000.0, None),
)


def demo() -> None:
    """Profile several statistics of the bundled synthetic census table (NON-PRIVATE),
    then make a few private releases of it.
    """
    from dpsense.datasets import census_path, load_census

    console = _console(min_width=100)
    table_data = load_census()
    n = len(next(iter(table_data.values())))
    console.print(
        Text(
            f"Data: {census_path().name}, a SYNTHETIC census-like table bundled with dpsense "
            f"({n} rows; columns {', '.join(table_data)}). It was generated from a "
            "hand-written model with a fixed seed (scripts/make_census.py); no real person "
            "is in it.",
        )
    )
    console.print()
    banner(console)
    _demo_profiles(console, table_data)
    console.print(Text(WHY_NOT_LOCAL))
    console.print()
    _demo_releases(console, table_data)
    console.print()
    _demo_grouped(console)
    console.print()
    console.print(
        "Try: dpsense analyze "
        f"{census_path()} --column age --statistic median --lower 0 --upper 100 "
        "--plot profile.png",
        soft_wrap=True,
    )


def _demo_profiles(console: Console, table_data: dict[str, Any]) -> None:
    """The sensitivity profiles of _DEMO_QUERIES (NON-PRIVATE), one row each."""
    epsilon, delta = 1.0, 1e-6
    beta = smooth_beta(epsilon, delta)
    table = Table(
        title=(
            f"Sensitivity profiles: add-remove neighbours, epsilon={epsilon:g}, "
            f"delta={delta:g}, beta={beta:.4g}"
        ),
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    table.add_column("query", no_wrap=True)
    table.add_column("bounds", no_wrap=True)
    for name in ("value", "global", "local", "smooth", "S*/GS"):
        table.add_column(name, justify="right", no_wrap=True)
    for column, name, lower, upper, p in _DEMO_QUERIES:
        x = load_column(table_data, column)
        stat = make_statistic(name, lower, upper, p=p)
        prof = profile_of(x, stat, "add-remove", epsilon=epsilon, delta=delta, max_k=0, bound=None)
        gs = float(prof["global_sensitivity"])
        smooth = float(prof["smooth_sensitivity"])
        ratio = _percent(smooth / gs) if gs > 0 and math.isfinite(gs) else "n/a"
        bounds = "-" if lower is None or upper is None else f"[{lower:g}, {upper:g}]"
        table.add_row(
            f"{stat.name}({column})",
            bounds,
            _short(prof["value"], 5),
            _short(gs),
            _short(prof["local_sensitivity"]),
            _short(smooth),
            ratio,
        )
    console.print(table)


_DEMO_RELEASES: tuple[tuple[str, str, float, float, str, float, dict[str, Any]], ...] = (
    # column, statistic, lower, upper, method, delta, options
    ("age", "median", 0.0, 100.0, "smooth", 0.0, {}),
    ("age", "median", 0.0, 100.0, "exponential", 0.0, {}),
    ("age", "median", 0.0, 100.0, "ptr", 1e-6, {"bound": 1.0}),
    ("income", "median", 0.0, 500_000.0, "auto", 0.0, {}),
    ("hours_per_week", "mean", 0.0, 100.0, "ksw", 0.0, {}),
    ("hours_per_week", "mean", 0.0, 100.0, "global", 0.0, {}),
    ("age", "count", 0.0, 0.0, "global", 0.0, {}),
)


def _demo_grouped(console: Console) -> None:
    """A grouped, per-person release on the synthetic panel (people x years)."""
    from dpsense.cli.tables_io import emit_grouped
    from dpsense.datasets import make_panel
    from dpsense.release import release
    from dpsense.tables import GroupedRelease

    console.print(
        Text(
            "Per person and per year: median weekly hours of a synthetic panel of 2,000 "
            "people over 8 years (1-4 jobs per person-year). Each person keeps one job per "
            "year; epsilon = 1 protects ALL of a person's rows over the eight years.",
            style="bold",
        )
    )
    result = release(
        make_panel(),
        make_statistic("median", 0.0, 80.0, resolution=1.0),
        column="hours",
        by="year",
        keys=list(range(2015, 2023)),
        privacy_unit="person",
        max_rows_per_unit=1,
        max_groups_per_unit=8,
        epsilon=1.0,
    )
    assert isinstance(result, GroupedRelease)
    emit_grouped(result, False, "hours")


def interval_cell(result: Any) -> str:
    """The release's 95% interval, else its public half-width, else why neither is
    public, in one short line."""
    from dpsense.cli.tables_io import shown_accuracy, shown_interval

    if result.refused:
        return "none (refused)"
    return (
        shown_interval(result)
        or shown_accuracy(result)
        or "not public: this method's error depends on the data"
    )


def _add_quantile_rows(table: Table, table_data: dict[str, Any]) -> None:
    """The demo's three quantiles of age, one release, a row each with its interval."""
    from dpsense.methods import Release
    from dpsense.release import release
    from dpsense.shown import decimals_of, rounded

    quantiles = release(
        load_column(table_data, "age"), Quantiles((0.1, 0.5, 0.9), 0.0, 100.0), epsilon=1.0
    )
    assert isinstance(quantiles, Release)
    ends = quantiles.interval()
    assert ends is not None  # the exponential mechanism's quantiles carry their intervals
    for i, (p, value) in enumerate(zip((10, 50, 90), quantiles.value, strict=True)):
        low, high = float(ends[0][i]), float(ends[1][i])
        decimals = decimals_of(float(value), (low, high), None)
        table.add_row(
            f"quantile {p}% (age)",
            quantiles.method if i == 0 else "",
            f"({quantiles.epsilon:g}, {quantiles.delta:g})" if i == 0 else "",
            rounded(float(value), decimals),
            f"[{rounded(low, decimals, 'down')}, {rounded(high, decimals, 'up')}]",
        )


def _demo_releases(console: Console, table_data: dict[str, Any]) -> None:
    """A few differentially private releases with their receipts (OS CSPRNG noise)."""
    from dpsense.cli.tables_io import shown_value
    from dpsense.methods import Release
    from dpsense.release import release

    table = Table(
        title="Differentially private releases (epsilon = 1 each; fresh noise every run)",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    for name in ("query", "method", "(epsilon, delta)", "private value", "95% interval"):
        right = name in ("private value", "95% interval")
        table.add_column(name, no_wrap=True, justify="right" if right else "left")
    for column, name, lower, upper, method, delta, options in _DEMO_RELEASES:
        stat = make_statistic(name, lower, upper) if name != "count" else make_statistic(name)
        result = release(
            load_column(table_data, column),
            stat,
            epsilon=1.0,
            delta=delta,
            method=method,
            **options,
        )
        assert isinstance(result, Release)
        guarantee = f"({result.epsilon:g}, {result.delta:g})"
        table.add_row(
            f"{stat.name}({column})",
            result.method,
            guarantee,
            shown_value(result),
            interval_cell(result),
        )
    _add_quantile_rows(table, table_data)
    console.print(table)
    console.print(
        Text(
            "These values are differentially private: they may be published. Each used "
            "epsilon = 1 (the three quantiles one release); together they spent epsilon = 8 "
            "(and delta = 1e-6) by basic sequential composition. Each 95% interval is "
            "itself private (a share of its release's epsilon) and holds the statistic of "
            "the data as given 95% of the time. Keep the account in a ledger: "
            "dpsense budget init budget.db --epsilon 10, then dpsense release ... --ledger "
            "budget.db."
        )
    )
