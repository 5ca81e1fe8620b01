"""``dpsense explore``: brute-force sensitivity by Hamming distance (NON-PRIVATE)."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from dpsense.cli._shared import (
    _console,
    _fmt,
    _json_number,
    _parse_numbers,
    _print_json,
)
from dpsense.cli.analyze_cmd import banner
from dpsense.data import load_column
from dpsense.errors import EvaluationLimitError, InputError
from dpsense.neighbours import NEIGHBOURS
from dpsense.params import check_int
from dpsense.statistics import make_statistic

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
    universe: Annotated[
        str,
        typer.Option(help='Comma-separated values of the universe, e.g. "1,2,3,10,11".'),
    ],
    data: Annotated[
        str | None,
        typer.Argument(metavar="[DATA]", help="CSV file with the dataset (or use --values)."),
    ] = None,
    column: Annotated[
        str | None, typer.Option("--column", "-c", help="Column of DATA to use.")
    ] = None,
    values: Annotated[
        str | None,
        typer.Option(help='The dataset as comma-separated numbers, e.g. "1,2,3".'),
    ] = None,
    model: Annotated[
        str,
        typer.Option(
            help=(
                "domain: added records are any universe value; population: the universe "
                "is a finite population and the data a subset of it."
            )
        ),
    ] = "domain",
    max_hamming: Annotated[int, typer.Option(help="Largest Hamming distance h.")] = 3,
    max_evaluations: Annotated[
        int,
        typer.Option(
            help="Evaluate each statistic on at most this many datasets per cell; larger "
            "cells are skipped (and listed), the others are still shown."
        ),
    ] = 5_000_000,
    statistics: Annotated[
        str, typer.Option(help="Comma-separated statistics to explore.")
    ] = _DEFAULT_EXPLORE_STATISTICS,
    p: Annotated[float | None, typer.Option("--p", help="Level for quantile.")] = None,
    trim: Annotated[int | None, typer.Option(help="Trim for trimmed-mean.")] = None,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print one JSON object instead of tables.")
    ] = False,
    plot: Annotated[
        Path | None, typer.Option(help="Write the 2x2 explorer figure (png, pdf, svg).")
    ] = None,
) -> None:
    """Brute-force local and global sensitivity by Hamming distance (NON-PRIVATE).

    Enumerates neighbours over a small universe for add-remove and substitute, local
    and global scope, h = 1..max-hamming. Bounds are the universe's min/max.
    """
    from dpsense.sensitivity import empirical_sensitivity

    where = "dpsense explore"
    h_max = check_int(max_hamming, "max_hamming", where=where, minimum=1)
    model_key = model.strip().lower()
    if model_key not in ("domain", "population"):
        raise InputError(f"--model must be 'domain' or 'population'. Got {model!r} instead.")
    pool = _parse_numbers(universe, "--universe")
    lower, upper = min(pool), max(pool)
    if not lower < upper:
        raise InputError("--universe needs at least two distinct values (they set the bounds).")
    if (data is None) == (values is None):
        raise InputError("give the dataset either as a DATA file or with --values (one of them).")
    if values is not None:
        if column is not None:
            raise InputError("--column applies to a DATA file, not to --values.")
        x = load_column(_parse_numbers(values, "--values", data=True))
    else:
        x = load_column(data, column, allow_empty=False)
    names = [s.strip() for s in statistics.split(",") if s.strip()]
    if not names:
        raise InputError("--statistics must name at least one statistic.")
    if any(name.lower() == "quantiles" for name in names):
        raise InputError(
            "explore compares numbers; for several quantiles explore one level with "
            "--statistics quantile --p P."
        )
    stats = [
        make_statistic(
            name,
            lower,
            upper,
            p=p if name.lower() == "quantile" else None,
            trim=trim if name.lower().startswith("trim") else None,
        )
        for name in names
    ]

    limit = check_int(max_evaluations, "max_evaluations", where=where, minimum=1)
    results: list[dict[str, Any]] = []
    needed: list[float] = []
    for stat in stats:
        for nb in NEIGHBOURS:
            for scope in _SCOPES:
                over = False  # larger h needs more evaluations: skip them once one is over
                for h in range(1, h_max + 1):
                    row: dict[str, Any] = {
                        "statistic": stat.name,
                        "neighbours": nb,
                        "scope": scope,
                        "hamming": h,
                    }
                    if not over:
                        try:
                            row["sensitivity"] = float(
                                empirical_sensitivity(
                                    stat,
                                    x,
                                    pool,
                                    hamming=h,
                                    neighbours=nb,
                                    scope=scope,
                                    model=model_key,
                                    max_evaluations=limit,
                                )
                            )
                        except EvaluationLimitError as exc:
                            over = True
                            needed.append(exc.needed)
                    if over:
                        row.update(sensitivity=math.nan, skipped=True)
                    results.append(row)
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
        payload: dict[str, Any] = {
            "model": model_key,
            "universe_size": len(pool),
            "lower": lower,
            "upper": upper,
            "n": int(x.shape[0]),
            "max_hamming": h_max,
            "statistics": [s.name for s in stats],
            "non_private": True,
            "results": [{**r, "sensitivity": _json_number(r["sensitivity"])} for r in results],
            "max_evaluations": limit,
        }
        if written is not None:
            payload["plot"] = str(written)
        _print_json(payload)
        return
    console = _console()
    banner(console)
    _print_explorer(console, results, [s.name for s in stats], h_max, model_key, lower, upper)
    if written is not None:
        console.print(f"plot written to {written}")


def _cell(value: float) -> str:
    return "skipped" if math.isnan(value) else _fmt(value)


def _print_explorer(
    console: Console,
    results: list[dict[str, Any]],
    names: list[str],
    h_max: int,
    model: str,
    lower: float,
    upper: float,
) -> None:
    lookup = {
        (r["statistic"], r["neighbours"], r["scope"], r["hamming"]): r["sensitivity"]
        for r in results
    }
    for scope in _SCOPES:
        table = Table(
            title=(
                f"{scope.capitalize()} sensitivity by Hamming distance h "
                f"({model} model, bounds [{lower:g}, {upper:g}])"
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
