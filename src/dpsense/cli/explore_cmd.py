"""``dpsense explore``: brute-force sensitivity by Hamming distance (NON-PRIVATE)."""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from rich.console import Console
from rich.table import Table

from dpsense._arrays import FloatArray
from dpsense.cli import _options as opt
from dpsense.cli._shared import (
    _fmt,
    _json_number,
    _parse_numbers,
    _print_json,
)
from dpsense.cli.analyze_cmd import show_non_private
from dpsense.data import load_column
from dpsense.errors import EvaluationLimitError, InputError
from dpsense.neighbours import NEIGHBOURS
from dpsense.params import check_int
from dpsense.statistics import Statistic, make_statistic

__all__ = ["explore"]

EXPLORE_EXAMPLES = (
    "Examples:\n\n\b\n"
    "  dpsense explore --universe 0,1,2,5,10 --values 1,2,2,5 --statistics median,mean\n"
    "  dpsense explore --universe 0,1,2,3,4,5,6 --values 1,3,5 --max-hamming 4 --plot h.png\n"
    "  dpsense explore data.csv --column x --universe 0,10,20,50,100 --json\n"
)
"""The examples that end ``--help``."""

# --------------------------------------------------------------------------- explore

_DEFAULT_EXPLORE_STATISTICS = "mean,median,sum,count,std,variance"
_SCOPES = ("local", "global")


def explore(
    universe: Annotated[str, opt.EXPLORE_UNIVERSE],
    data: Annotated[str | None, opt.EXPLORE_DATA] = None,
    column: Annotated[str | None, opt.EXPLORE_COLUMN] = None,
    nulls: Annotated[str, opt.NULLS] = "error",
    values: Annotated[str | None, opt.EXPLORE_VALUES] = None,
    model: Annotated[str, opt.EXPLORE_MODEL] = "domain",
    max_hamming: Annotated[int, opt.EXPLORE_MAX_HAMMING] = 3,
    max_evaluations: Annotated[int, opt.EXPLORE_MAX_EVALUATIONS] = 5_000_000,
    statistics: Annotated[str, opt.EXPLORE_STATISTICS] = _DEFAULT_EXPLORE_STATISTICS,
    p: Annotated[float | None, opt.EXPLORE_LEVEL] = None,
    trim: Annotated[int | None, opt.EXPLORE_TRIM] = None,
    json_output: Annotated[bool, opt.TABLES_JSON] = False,
    plot: Annotated[Path | None, opt.EXPLORE_PLOT] = None,
) -> None:
    """Brute-force local and global sensitivity by Hamming distance (NON-PRIVATE).

    Enumerates neighbours over a small universe for add-remove and substitute, local
    and global scope, h = 1..max-hamming. Bounds are the universe's min/max.
    """
    where = "dpsense explore"
    h_max = check_int(max_hamming, "max_hamming", where=where, minimum=1)
    model_key = model.strip().lower()
    if model_key not in ("domain", "population"):
        raise InputError(f"--model must be 'domain' or 'population'. Got {model!r} instead.")
    pool = _parse_numbers(universe, "--universe")
    lower, upper = min(pool), max(pool)
    if not lower < upper:
        raise InputError("--universe needs at least two distinct values (they set the bounds).")
    x = _dataset(data, column, values, nulls)
    stats = _statistics(statistics, lower, upper, p, trim)
    limit = check_int(max_evaluations, "max_evaluations", where=where, minimum=1)
    grid = _Grid(stats=stats, x=x, pool=pool, model=model_key, h_max=h_max, limit=limit)
    results = _sensitivities(grid)
    written = None
    if plot is not None:
        from dpsense.plots import plot_explorer

        written = plot_explorer(
            [r for r in results if not r.get("skipped")],
            path=plot,
            title=(
                f"Brute-force sensitivity, {model_key} model, universe of {len(pool)} "
                f"values, n = {x.shape[0]}"
            ),
        )
    if json_output:
        _print_json(_payload(grid, results, written))
        return
    show_non_private(lambda console: _print_explorer(console, results, grid), written)


@dataclass(frozen=True)
class _Grid:
    """What ``explore`` enumerates: each statistic on the dataset ``x``, its neighbours
    drawn from the universe ``pool``, at Hamming distances 1..h_max."""

    stats: list[Statistic]
    x: FloatArray
    pool: list[float]
    model: str  # domain or population
    h_max: int
    limit: int  # --max-evaluations per cell

    @property
    def lower(self) -> float:
        return min(self.pool)

    @property
    def upper(self) -> float:
        return max(self.pool)


def _dataset(data: str | None, column: str | None, values: str | None, nulls: str) -> FloatArray:
    """The dataset: a DATA file's column, or --values."""
    if (data is None) == (values is None):
        raise InputError("give the dataset either as a DATA file or with --values (one of them).")
    if values is not None:
        if column is not None:
            raise InputError("--column applies to a DATA file, not to --values.")
        return load_column(_parse_numbers(values, "--values", data=True))
    return load_column(data, column, allow_empty=False, nulls=nulls)


def _statistics(
    statistics: str, lower: float, upper: float, p: float | None, trim: int | None
) -> list[Statistic]:
    """The statistics of --statistics, bounded by the universe; --p and --trim go to the
    ones that take them."""
    names = [s.strip() for s in statistics.split(",") if s.strip()]
    if not names:
        raise InputError("--statistics must name at least one statistic.")
    if any(name.lower() == "quantiles" for name in names):
        raise InputError(
            "explore compares numbers; for several quantiles explore one level with "
            "--statistics quantile --p P."
        )
    return [
        make_statistic(
            name,
            lower,
            upper,
            p=p if name.lower() == "quantile" else None,
            trim=trim if name.lower().startswith("trim") else None,
        )
        for name in names
    ]


def _sensitivities(grid: _Grid) -> list[dict[str, Any]]:
    """One row per cell (statistic, neighbours, scope, h); a cell that needs more than
    --max-evaluations evaluations is skipped, with a note on stderr (an error if all are)."""
    results: list[dict[str, Any]] = []
    needed: list[float] = []
    for stat in grid.stats:
        for nb in NEIGHBOURS:
            for scope in _SCOPES:
                rows, need = _cells(grid, stat, nb, scope)
                results.extend(rows)
                needed.extend(need)
    limit = grid.limit
    if needed and all(r.get("skipped") for r in results):
        raise InputError(
            f"every cell needs more than --max-evaluations {limit} evaluations (at least "
            f"{min(needed):,.0f}); use a smaller --universe or --max-hamming, or raise "
            "--max-evaluations."
        )
    if needed:
        sys.stderr.write(
            f"note: cells that need more than --max-evaluations {limit} evaluations are "
            f"skipped (shown as 'skipped'; the smallest needs {min(needed):,.0f}); raise "
            "--max-evaluations to compute them.\n"
        )
    return results


def _cells(
    grid: _Grid, stat: Statistic, nb: str, scope: str
) -> tuple[list[dict[str, Any]], list[float]]:
    """The cells h = 1..h_max of one statistic, relation and scope, and the evaluations
    the first skipped one needs (larger h needs more: once one is over, the rest are)."""
    from dpsense.sensitivity import empirical_sensitivity

    rows: list[dict[str, Any]] = []
    needed: list[float] = []  # set by the first cell over --max-evaluations: skip the rest
    for h in range(1, grid.h_max + 1):
        row: dict[str, Any] = {
            "statistic": stat.name,
            "neighbours": nb,
            "scope": scope,
            "hamming": h,
        }
        if not needed:
            try:
                row["sensitivity"] = float(
                    empirical_sensitivity(
                        stat,
                        grid.x,
                        grid.pool,
                        hamming=h,
                        neighbours=nb,
                        scope=scope,
                        model=grid.model,
                        max_evaluations=grid.limit,
                    )
                )
            except EvaluationLimitError as exc:
                needed.append(exc.needed)
        if needed:
            row.update(sensitivity=math.nan, skipped=True)
        rows.append(row)
    return rows, needed


def _payload(grid: _Grid, results: list[dict[str, Any]], written: Path | None) -> dict[str, Any]:
    """The ``--json`` object."""
    payload: dict[str, Any] = {
        "model": grid.model,
        "universe_size": len(grid.pool),
        "lower": grid.lower,
        "upper": grid.upper,
        "n": int(grid.x.shape[0]),
        "max_hamming": grid.h_max,
        "statistics": [s.name for s in grid.stats],
        "non_private": True,
        "results": [{**r, "sensitivity": _json_number(r["sensitivity"])} for r in results],
        "max_evaluations": grid.limit,
    }
    if written is not None:
        payload["plot"] = str(written)
    return payload


def _cell(value: float) -> str:
    return "skipped" if math.isnan(value) else _fmt(value)


def _print_explorer(console: Console, results: list[dict[str, Any]], grid: _Grid) -> None:
    names, h_max = [s.name for s in grid.stats], grid.h_max
    lookup = {
        (r["statistic"], r["neighbours"], r["scope"], r["hamming"]): r["sensitivity"]
        for r in results
    }
    for scope in _SCOPES:
        table = Table(
            title=(
                f"{scope.capitalize()} sensitivity by Hamming distance h "
                f"({grid.model} model, bounds [{grid.lower:g}, {grid.upper:g}])"
            )
        )
        table.add_column("statistic")
        table.add_column("neighbours")
        for h in range(1, h_max + 1):
            table.add_column(f"h={h}", justify="right")
        for name in names:
            for i, nb in enumerate(NEIGHBOURS):
                cells = [_cell(lookup[(name, nb, scope, h)]) for h in range(1, h_max + 1)]
                table.add_row(name if i == 0 else "", nb, *cells, end_section=i == 1)
        console.print(table)
