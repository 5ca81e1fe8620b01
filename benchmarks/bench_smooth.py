"""Median smooth sensitivity against numpy.median, on the same array, in one process.

Prints a markdown table of best-of-R wall times and the ratio
``time(Median.smooth_sensitivity) / time(numpy.median)``; the target is <= 2.

Run: ``.venv/bin/python benchmarks/bench_smooth.py [--sizes 1000000 10000000]``
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

import dpsense as ds
from dpsense._progress import ProgressBar, show_progress


def best_of(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def datasets(n: int, rng: np.random.Generator) -> dict[str, tuple[np.ndarray, float, float]]:
    return {
        "continuous (log-normal incomes)": (rng.lognormal(10.5, 0.8, n), 0.0, 500_000.0),
        "tied integers (ages 17-90)": (rng.integers(17, 91, n).astype(np.float64), 0.0, 100.0),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    beta = ds.smooth_beta(1.0, 1e-6)
    print(f"beta = {beta:.5f} (epsilon = 1, delta = 1e-6, Laplace smooth framework)\n")
    print("| data | n | relation | numpy.median (s) | smooth sensitivity (s) | ratio |")
    print("|---|---:|---|---:|---:|---:|")
    bar = ProgressBar(show_progress(None), auto_refresh=False)
    with bar.running():
        bar.task("Timing smooth sensitivity", len(args.sizes) * 2 * 2)
        for n in args.sizes:
            for label, (x, lo, hi) in datasets(n, rng).items():
                median = ds.Median(lo, hi)
                base = best_of(lambda x=x: np.median(x), args.repeats)
                for nb in ("add-remove", "substitute"):
                    ours = best_of(
                        lambda x=x, m=median, nb=nb: m.smooth_sensitivity(x, beta, nb),
                        args.repeats,
                    )
                    print(
                        f"| {label} | {n:,} | {nb} | {base:.4f} | {ours:.4f} | {ours / base:.2f} |"
                    )
                    bar.advance(1)


if __name__ == "__main__":
    main()
