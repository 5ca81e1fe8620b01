"""Benchmark: the multiset explorer against seed 004's enumeration over record positions.

Run with ``python benchmarks/bench_explorer.py``; prints a markdown table. Both methods
implement the same definitions (neighbours at distance 1..h, mixed adds and removes under
add-remove; the population model); the answers must agree.

The baseline calls ``np.median`` once per (dataset, neighbour) pair of record positions.
The explorer evaluates the statistic once per distinct multiset; given ``np.median`` it
detects that ``np.median(X, axis=-1)`` reproduces row-by-row calls and evaluates whole
batches (the ``vectorized=False`` row shows the gain of the caching alone).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from itertools import combinations
from typing import Any

import numpy as np

from dpsense._progress import track
from dpsense.sensitivity import empirical_sensitivity

POPULATION = [18, 18, 22, 25, 25, 25, 31, 40, 40, 52, 60, 60]
DATA = [18, 22, 25, 25, 31, 40, 52, 60]  # positions 0, 2, 3, 4, 6, 7, 9, 10
DATA_POSITIONS = (0, 2, 3, 4, 6, 7, 9, 10)
HAMMING = 2
REPEATS = 3


# ------------------------------------------------------------ seed 004's approach


def _steps(h: int, relation: str) -> list[tuple[int, int]]:
    """(records removed, records added) of the neighbours at distance 1..h."""
    out = []
    for a in range(h + 1):
        for b in range(h + 1):
            ok = 1 <= a + b <= h if relation == "add-remove" else a == b and 1 <= a <= h
            if ok:
                out.append((a, b))
    return out


def positions_within(
    pop: np.ndarray, ds: tuple[int, ...], h: int, relation: str
) -> list[tuple[int, ...]]:
    """Every neighbour of the position set ``ds``: combinations over positions."""
    outside = [i for i in range(pop.shape[0]) if i not in ds]
    out = []
    for a, b in _steps(h, relation):
        for removed in combinations(ds, a):
            rest = [i for i in ds if i not in removed]
            for added in combinations(outside, b):
                out.append(tuple(sorted(rest + list(added))))
    return out


def baseline_local(pop: np.ndarray, ds: tuple[int, ...], h: int, relation: str) -> float:
    fx = np.median(pop[list(ds)])
    best = 0.0
    for nb in positions_within(pop, ds, h, relation):
        if nb:
            best = max(best, abs(float(np.median(pop[list(nb)]) - fx)))
    return best


def baseline_global(pop: np.ndarray, n: int, h: int, relation: str) -> float:
    return max(baseline_local(pop, ds, h, relation) for ds in combinations(range(pop.shape[0]), n))


def baseline_distance(pop: np.ndarray, ds: tuple[int, ...], k: int, h: int, relation: str) -> float:
    ball = {ds, *positions_within(pop, ds, k, relation)}
    return max(baseline_local(pop, y, h, relation) for y in ball if y)


# ------------------------------------------------------------------------ harness


def best_of(fn: Callable[[], float]) -> tuple[float, float]:
    best = float("inf")
    value = float("nan")
    for _ in range(REPEATS):
        start = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - start)
    return value, best


def _ratio(r: float) -> str:
    return f"{r:.1f}x" if r < 10 else f"{r:,.0f}x"


def median_rows(X: np.ndarray) -> Any:
    return np.median(X, axis=-1)


def main() -> None:
    pop = np.array(POPULATION, dtype=np.float64)
    assert sorted(pop[list(DATA_POSITIONS)].tolist()) == sorted(DATA)
    n = len(DATA)
    kw: dict[str, Any] = {"model": "population", "hamming": HAMMING}
    cases: list[tuple[str, Callable[[], float], Callable[[], float]]] = [
        (
            "global, add-remove, np.median",
            lambda: baseline_global(pop, n, HAMMING, "add-remove"),
            lambda: empirical_sensitivity(np.median, DATA, POPULATION, scope="global", **kw),
        ),
        (
            "global, add-remove, np.median, vectorized=False (caching only)",
            lambda: baseline_global(pop, n, HAMMING, "add-remove"),
            lambda: empirical_sensitivity(
                np.median, DATA, POPULATION, scope="global", vectorized=False, **kw
            ),
        ),
        (
            "global, add-remove, vectorised median",
            lambda: baseline_global(pop, n, HAMMING, "add-remove"),
            lambda: empirical_sensitivity(median_rows, DATA, POPULATION, scope="global", **kw),
        ),
        (
            "global, substitute, np.median",
            lambda: baseline_global(pop, n, HAMMING, "substitute"),
            lambda: empirical_sensitivity(
                np.median, DATA, POPULATION, scope="global", neighbours="substitute", **kw
            ),
        ),
        (
            "local, add-remove, np.median",
            lambda: baseline_local(pop, DATA_POSITIONS, HAMMING, "add-remove"),
            lambda: empirical_sensitivity(np.median, DATA, POPULATION, **kw),
        ),
        (
            "local A(f, x, 2), add-remove, np.median",
            lambda: baseline_distance(pop, DATA_POSITIONS, 2, HAMMING, "add-remove"),
            lambda: empirical_sensitivity(np.median, DATA, POPULATION, distance=2, **kw),
        ),
    ]
    print(
        f"Population of {len(POPULATION)} values with ties, data of {n} records, "
        f"h = {HAMMING}, population model; best of {REPEATS} runs.\n"
    )
    print("| case | baseline answer | explorer answer | baseline (s) | explorer (s) | speed-up |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, base_fn, expl_fn in track(cases, "Timing", auto_refresh=False):
        base_value, base_time = best_of(base_fn)
        expl_value, expl_time = best_of(expl_fn)
        assert base_value == expl_value, (name, base_value, expl_value)
        print(
            f"| {name} | {base_value:g} | {expl_value:g} | {base_time:.4f} | "
            f"{expl_time:.5f} | {_ratio(base_time / expl_time)} |"
        )


if __name__ == "__main__":
    main()
