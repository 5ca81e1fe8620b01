"""Private median releases with smooth sensitivity against numpy.median, in one process.

A release validates and clips the data, computes the exact smooth bound and draws the
exact lattice sample (docs/exact_sampling.md). Prints best-of-R wall times and the ratio
``time(ds.release(..., method="smooth")) / time(numpy.median)`` for continuous and tied
data; the target is <= 1.5 at n = 10^7.

Run: ``.venv/bin/python benchmarks/bench_release.py [--sizes 1000000 10000000]``
"""

from __future__ import annotations

import argparse
import time
import warnings
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--noises", nargs="+", default=["student-t", "cauchy"])
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    warnings.simplefilter("ignore", ds.SeededRandomnessWarning)
    print("| data | n | noise | numpy.median (s) | release smooth (s) | ratio |")
    print("|---|---:|---|---:|---:|---:|")
    bar = ProgressBar(show_progress(None), auto_refresh=False)
    with bar.running():
        bar.task("Timing releases", len(args.sizes) * 2 * len(args.noises))
        for n in args.sizes:
            data = {
                "continuous (log-normal)": (rng.lognormal(10.5, 0.8, n), 0.0, 500_000.0),
                "tied (integers 0-99)": (rng.integers(0, 100, n).astype(np.float64), 0.0, 100.0),
            }
            for label, (x, lo, hi) in data.items():
                median = ds.Median(lo, hi)
                base = best_of(lambda x=x: np.median(x), args.repeats)
                for noise in args.noises:
                    ours = best_of(
                        lambda x=x, m=median, z=noise: ds.release(
                            x, m, epsilon=1.0, method="smooth", noise=z
                        ),
                        args.repeats,
                    )
                    print(
                        f"| {label} | {n:,} | {noise} | {base:.4f} | {ours:.4f} |"
                        f" {ours / base:.2f} |"
                    )
                    bar.advance(1)


if __name__ == "__main__":
    main()
