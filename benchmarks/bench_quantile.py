"""Exponential-mechanism median on 10^6 values: dpsense against OpenDP and diffprivlib.

All three at epsilon = 1, pure DP, add-remove neighbours, bounds [0, 100], on the same
array in one process; best-of-R wall time (the data conversion OpenDP needs, numpy to a
Python list, is done once outside the timing). Peers are optional ("n/a" when missing):
``pip install opendp diffprivlib`` (diffprivlib 0.6 needs scikit-learn < 1.6).

Run: ``.venv/bin/python benchmarks/bench_quantile.py [--n 1000000]``
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Callable

import numpy as np

from dpsense.mechanisms.quantile import ExponentialQuantile

LOWER, UPPER, EPSILON = 0.0, 100.0, 1.0


def best_time(fn: Callable[[], float], repeats: int) -> tuple[float, float]:
    best, value = float("inf"), float("nan")
    for _ in range(repeats):
        start = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - start)
    return best, value


def peers(x: np.ndarray) -> dict[str, Callable[[], float]]:
    out: dict[str, Callable[[], float]] = {}
    try:
        import opendp.prelude as dp

        dp.enable_features("contrib")
        candidates = np.linspace(LOWER, UPPER, 1001).tolist()
        space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance()
        meas = dp.binary_search_chain(
            lambda s: (
                space
                >> dp.m.then_private_quantile(
                    dp.max_divergence(), candidates=candidates, alpha=0.5, scale=s
                )
            ),
            d_in=1,
            d_out=EPSILON,
        )
        as_list = x.tolist()
        out["OpenDP make_private_quantile (1001 candidates)"] = lambda: float(meas(as_list))
    except ImportError:
        pass
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from diffprivlib.tools import median as dpl_median

        def run() -> float:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return float(dpl_median(x, epsilon=EPSILON, bounds=(LOWER, UPPER)))

        out["diffprivlib tools.median"] = run
    except ImportError:
        pass
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(11)
    x = rng.normal(50.0, 10.0, args.n).clip(LOWER, UPPER)
    truth = float(np.median(x))
    mech = ExponentialQuantile(0.5, LOWER, UPPER, EPSILON)
    rows = {"dpsense ExponentialQuantile (2^32-point grid, CSPRNG)": lambda: mech.release(x).value}
    rows.update(peers(x))
    base, _ = best_time(lambda: float(np.median(x)), args.repeats)
    print(f"median of {args.n:,} normal values, epsilon = {EPSILON}, best of {args.repeats}\n")
    print("| implementation | time (s) | vs numpy.median | |error| of last run |")
    print("|---|---:|---:|---:|")
    for label, fn in rows.items():
        seconds, value = best_time(fn, args.repeats)
        print(f"| {label} | {seconds:.3f} | {seconds / base:.1f}x | {abs(value - truth):.4f} |")
    print(f"| numpy.median (not private) | {base:.3f} | 1.0x | 0 |")


if __name__ == "__main__":
    main()
