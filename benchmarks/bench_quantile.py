"""Speed and memory of private medians against numpy.median, in one process.

For n in ``--sizes`` (default 10^6, 10^7, 10^8) and two data kinds (continuous log-normal
values; tied integers 0..99 declared with ``resolution=1``), times ``ds.release`` with the
smooth, exponential and auto methods (epsilon = 1, add-remove) and the median's smooth
sensitivity (``Median.smooth_sensitivity``), each as a ratio to ``numpy.median`` on the same
array (best of R, the calls interleaved). Peak numpy memory of each release is measured
with ``tracemalloc`` and reported as a multiple of the input's bytes. A second table times
the exponential median against OpenDP (numpy input, 1001 candidates, scale calibrated to
epsilon by ``binary_search_chain``) and diffprivlib when they are installed (``pip install
opendp diffprivlib``). Results: ``benchmarks/results/quantile_speed.md``.

Run: ``.venv/bin/python benchmarks/bench_quantile.py [--sizes 1000000 10000000]``
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
import tracemalloc
import warnings
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import dpsense as ds
from bench_tables import interleaved
from dpsense._progress import track
from dpsense.noise.rng import SeededRandom

RESULTS = Path(__file__).resolve().parent / "results"
LOWER, UPPER, EPSILON = 0.0, 100.0, 1.0
METHODS = ("smooth", "exponential", "auto")


def best_of(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def peak_bytes(fn: Callable[[], object]) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def data(kind: str, n: int) -> tuple[np.ndarray, ds.Median]:
    rs = np.random.default_rng(7)
    if kind == "continuous":
        return rs.lognormal(3.0, 0.5, n), ds.Median(LOWER, UPPER)
    return rs.integers(0, 100, n).astype(np.float64), ds.Median(LOWER, UPPER, resolution=1.0)


def release_figures(
    kind: str,
    n: int,
    repeats: int,
    methods: tuple[str, ...] = METHODS,
    sensitivity: bool = True,
) -> dict[str, float]:
    """The figures of one row (``kind`` data of size ``n``): the time of ``ds.release`` by
    each method (and of the median's smooth sensitivity) over ``numpy.median``'s on the same
    array, best of ``repeats`` with the calls interleaved (load from other processes falls on
    all alike); ``"numpy"``: numpy's time in seconds; ``"memory"``: tracemalloc's peak over
    the methods' releases, over the input's bytes. ``benchmarks/guard.py`` calls it too."""
    x, stat = data(kind, n)
    rng = SeededRandom(1)
    fns: dict[str, Callable[[], object]] = {"numpy": lambda: np.median(x)}
    for method in methods:
        fns[method] = partial(ds.release, x, stat, epsilon=EPSILON, method=method, rng=rng)
    if sensitivity:
        beta = ds.smooth_beta(EPSILON, 0.0)
        fns["smooth sensitivity"] = partial(stat.smooth_sensitivity, x, beta)
    gc.collect()
    best = interleaved(fns, repeats)
    out = {name: seconds / best["numpy"] for name, seconds in best.items()}
    out["numpy"] = best["numpy"]
    out["memory"] = max(peak_bytes(fns[method]) for method in methods) / x.nbytes
    return out


def speed_table(sizes: list[int], repeats: int) -> list[str]:
    lines = [
        "| data | n | numpy.median (s) | "
        + " | ".join(f"{m} (ratio)" for m in METHODS)
        + " | smooth sensitivity (ratio) | peak memory / input |",
        "|---|---:|---:|" + "---:|" * (len(METHODS) + 2),
    ]
    cases = [(n, kind) for n in sizes for kind in ("continuous", "tied")]
    for n, kind in track(cases, "Timing medians", auto_refresh=False):
        reps = repeats if n <= 10**7 else max(1, repeats // 2)
        r = release_figures(kind, n, reps)
        lines.append(
            f"| {kind} | {n:,} | {r['numpy']:.3f} | "
            + " | ".join(f"{r[m]:.2f}" for m in METHODS)
            + f" | {r['smooth sensitivity']:.2f} | {r['memory']:.2f} |"
        )
        print(lines[-1], flush=True)
    return lines


def peer_table(n: int, repeats: int) -> list[str]:
    x, stat = data("continuous", n)
    rows: dict[str, Callable[[], float]] = {
        "dpsense release, exponential (2^32-point grid, CSPRNG)": lambda: float(
            ds.release(x, stat, epsilon=EPSILON, method="exponential").value  # type: ignore[arg-type]
        )
    }
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
        rows["OpenDP then_private_quantile (1001 candidates, numpy input)"] = lambda: float(meas(x))
    except ImportError:
        pass
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from diffprivlib.tools import median as dpl_median

        def dpl() -> float:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return float(dpl_median(x, epsilon=EPSILON, bounds=(LOWER, UPPER)))

        rows["diffprivlib tools.median"] = dpl
    except ImportError:
        pass
    base = best_of(lambda: np.median(x), repeats)
    lines = [
        f"Median of {n:,} log-normal values, epsilon = {EPSILON}, best of {repeats}:",
        "",
        "| implementation | time (s) | vs numpy.median |",
        "|---|---:|---:|",
    ]
    for label, fn in track(rows.items(), "Timing peers", auto_refresh=False):
        seconds = best_of(fn, repeats)
        lines.append(f"| {label} | {seconds:.3f} | {seconds / base:.2f}x |")
    lines.append(f"| numpy.median (not private) | {base:.3f} | 1.00x |")
    print("\n".join(lines), flush=True)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10**6, 10**7, 10**8])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--peer-n", type=int, default=10**6)
    args = parser.parse_args()
    warnings.simplefilter("ignore", ds.SeededRandomnessWarning)
    speed = speed_table(args.sizes, args.repeats)
    peers = peer_table(args.peer_n, 3)
    RESULTS.mkdir(exist_ok=True)
    text = [
        "# Private medians: speed and memory (`benchmarks/bench_quantile.py`)",
        "",
        "Ratios are time / numpy.median on the same array, same process (best of R; R "
        "halved at 10^8); peak memory is tracemalloc's peak of numpy allocations during the "
        "slowest-memory method, over the input's bytes. epsilon = 1, add-remove.",
        "",
        *speed,
        "",
        *peers,
    ]
    (RESULTS / "quantile_speed.md").write_text("\n".join(text) + "\n")


if __name__ == "__main__":
    main()
