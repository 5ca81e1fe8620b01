"""Utility study: mean absolute error of dpsense's release methods against OpenDP and diffprivlib.

For every cell (statistic, dataset, n) and every epsilon in {0.1, 0.5, 1, 2}, each method
releases the statistic ``--trials`` times (default 500) on the same fixed dataset; the
table entry is the mean absolute error (MAE) against the non-private value. Results go to
``benchmarks/results/``: ``utility.md`` (tables and the three targets, computed here),
``utility.json`` (every number) and PNG plots.

Datasets
    * ``census-age`` / ``census-income``: the bundled synthetic census (n = 10,000);
      age in [0, 100] (median and mean), income in [0, 500000] (median).
    * ``ages``: synthetic tied integer ages 17..90 with an adult-census-like right skew
      (17 + floor(Gamma(2, 10.5)), top-coded at 90), bounds [0, 100].
    * ``incomes``: synthetic continuous log-normal incomes (median 50,000, sigma 0.75, in
      cents), bounds [0, 500000].
    Each synthetic dataset is drawn once per n from a fixed seed.

Methods (privacy type in brackets; every guarantee is under add-remove neighbours)
    median: dpsense smooth with Student's t (d = 3) and Cauchy noise [pure], exponential
    mechanism [pure], global sensitivity [pure], auto with delta = 0 [pure]; smooth with
    Laplace noise, propose-test-release and auto, all with delta = 1e-6 [approx]; OpenDP
    ``then_private_quantile`` and diffprivlib ``tools.median`` [pure peers].
    mean: dpsense global (noisy sum / noisy count), KSW, smooth (Student's t),
    sample-and-aggregate (mean aggregator), auto [pure]; bounded local sensitivity
    (``bounded-ls``), smooth (Laplace), propose-test-release, auto [approx];
    diffprivlib ``tools.mean`` [pure peer, flagged: it treats n as public].

Public choices (none looks at the data)
    * PTR proposes b = w / 1000 (w = upper - lower) and spends half of epsilon on the test.
    * Sample-and-aggregate uses k = 200 blocks at every epsilon (a constant rule; k may not
      depend on n, which is private under add-remove). 200 blocks leave about e^-5 = 0.7 %
      of the blocks empty at n = 1000.
    * OpenDP's candidates are the 1001-point uniform grid over the bounds (step w / 1000:
      0.1 years, 500 dollars).
    * A PTR refusal counts as an error of |f(x) - (lower + upper) / 2|: the analyst who is
      refused can only fall back on a public guess, and the midpoint is the natural one.

Randomness: dpsense draws from ``SeededRandom`` streams (one per cell, method and epsilon,
seeded from a CRC32 of their names), diffprivlib from a seeded ``RandomState``; OpenDP
cannot be seeded, so its rows vary from run to run within their Monte Carlo error.

Run: ``.venv/bin/python benchmarks/utility.py`` (about 10-30 minutes on 2 cores), or
``--quick`` (50 trials, n in {10^3, 10^4}) while developing.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import time
import warnings
import zlib
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Final, Literal

import numpy as np
from numpy.typing import NDArray

import dpsense as ds
from dpsense._progress import ProgressBar, show_progress
from dpsense.datasets import load_census
from dpsense.methods.auto import choose_method
from dpsense.methods.sample_aggregate import sample_and_aggregate
from dpsense.noise.rng import SeededRandom
from dpsense.release import release
from dpsense.statistics import BoundedStatistic

FloatArray = NDArray[np.float64]
Privacy = Literal["pure", "approx"]

EPSILONS: Final = (0.1, 0.5, 1.0, 2.0)
NS: Final = (1_000, 10_000, 100_000)
QUICK_NS: Final = (1_000, 10_000)
TRIALS: Final = 500
QUICK_TRIALS: Final = 50
DELTA: Final = 1e-6
TARGET_EPSILON: Final = 1.0
NEIGHBOURS: Final = "add-remove"

PTR_BOUND_FRACTION: Final = 1e-3
"""PTR proposes b = PTR_BOUND_FRACTION * (upper - lower): public, data-independent."""
SAA_BLOCKS: Final = 200
"""Blocks of sample-and-aggregate, the same at every epsilon (see :func:`saa_blocks`)."""
OPENDP_CANDIDATES: Final = 1001
"""OpenDP quantile candidates: a uniform grid over the public bounds."""

T1_FACTOR: Final = 10.0
T3_FACTOR: Final = 1.5
RESOLUTION: Final = 1e-6
"""Floored comparisons treat an MAE below 1e-6 * w (1e-4 years, 0.5 dollars) as exact."""
AUTO_KEYS: Final = ("auto", "auto-approx")

AGES_SEED: Final = 20_260_101
INCOMES_SEED: Final = 20_260_202

DEFAULT_OUT: Final = Path(__file__).resolve().parent / "results"


# --------------------------------------------------------------------------- datasets


@dataclass(frozen=True)
class DatasetSpec:
    """A dataset family: its public bounds and the statistics studied on it."""

    name: str
    label: str
    lower: float
    upper: float
    statistics: tuple[str, ...]
    synthetic: bool


DATASETS: Final[dict[str, DatasetSpec]] = {
    "census-age": DatasetSpec(
        "census-age", "bundled census, age", 0.0, 100.0, ("median", "mean"), False
    ),
    "census-income": DatasetSpec(
        "census-income", "bundled census, income", 0.0, 500_000.0, ("median",), False
    ),
    "ages": DatasetSpec(
        "ages", "synthetic tied integer ages", 0.0, 100.0, ("median", "mean"), True
    ),
    "incomes": DatasetSpec(
        "incomes", "synthetic log-normal incomes", 0.0, 500_000.0, ("median", "mean"), True
    ),
}
CENSUS_N: Final = 10_000


def make_ages(n: int) -> FloatArray:
    """Integer ages 17..90, right-skewed like the adult census (mean ~38, many ties)."""
    gen = np.random.default_rng([AGES_SEED, n])
    ages = 17.0 + np.floor(gen.gamma(shape=2.0, scale=10.5, size=n))
    return np.minimum(ages, 90.0)


def make_incomes(n: int) -> FloatArray:
    """Continuous log-normal incomes in dollars and cents (median 50,000)."""
    gen = np.random.default_rng([INCOMES_SEED, n])
    return np.round(gen.lognormal(mean=math.log(50_000.0), sigma=0.75, size=n), 2)


@lru_cache(maxsize=8)
def load_data(dataset: str, n: int) -> FloatArray:
    """The (unclipped) values of one dataset at one size; fixed across runs."""
    if dataset == "census-age":
        return load_census()["age"].astype(np.float64)
    if dataset == "census-income":
        return load_census()["income"].astype(np.float64)
    if dataset == "ages":
        return make_ages(n)
    if dataset == "incomes":
        return make_incomes(n)
    raise ValueError(f"unknown dataset {dataset!r}")


def make_statistic(statistic: str, spec: DatasetSpec) -> BoundedStatistic:
    if statistic == "median":
        return ds.Median(spec.lower, spec.upper)
    if statistic == "mean":
        return ds.Mean(spec.lower, spec.upper)
    raise ValueError(f"unknown statistic {statistic!r}")


# --------------------------------------------------------------------------- methods


@dataclass(frozen=True)
class MethodSpec:
    """One row of a table."""

    key: str
    label: str
    privacy: Privacy
    source: Literal["dpsense", "peer"]
    note: str = ""


MEDIAN_METHODS: Final = (
    MethodSpec("smooth-t", "dpsense smooth, Student t (d=3)", "pure", "dpsense"),
    MethodSpec("smooth-cauchy", "dpsense smooth, Cauchy", "pure", "dpsense"),
    MethodSpec("exponential", "dpsense exponential", "pure", "dpsense"),
    MethodSpec("global", "dpsense global", "pure", "dpsense"),
    MethodSpec("auto", "dpsense auto (delta=0)", "pure", "dpsense"),
    MethodSpec("smooth-laplace", "dpsense smooth, Laplace", "approx", "dpsense"),
    MethodSpec("ptr", "dpsense PTR (b = w/1000)", "approx", "dpsense"),
    MethodSpec("auto-approx", "dpsense auto (delta=1e-6)", "approx", "dpsense"),
    MethodSpec("opendp", "OpenDP private_quantile", "pure", "peer"),
    MethodSpec("diffprivlib", "diffprivlib median", "pure", "peer"),
)
MEAN_METHODS: Final = (
    MethodSpec("global", "dpsense global (noisy sum / noisy count)", "pure", "dpsense"),
    MethodSpec("ksw", "dpsense KSW", "pure", "dpsense"),
    MethodSpec("smooth-t", "dpsense smooth, Student t (d=3)", "pure", "dpsense"),
    MethodSpec("sample-aggregate", "dpsense sample-and-aggregate (k=200)", "pure", "dpsense"),
    MethodSpec("auto", "dpsense auto (delta=0)", "pure", "dpsense"),
    MethodSpec("bounded-ls", "dpsense bounded-ls", "approx", "dpsense"),
    MethodSpec("smooth-laplace", "dpsense smooth, Laplace", "approx", "dpsense"),
    MethodSpec("ptr", "dpsense PTR (b = w/1000)", "approx", "dpsense"),
    MethodSpec("auto-approx", "dpsense auto (delta=1e-6)", "approx", "dpsense"),
    MethodSpec(
        "diffprivlib",
        "diffprivlib mean (n public!)",
        "pure",
        "peer",
        "treats n as public: not add-remove DP",
    ),
)
METHODS: Final[dict[str, tuple[MethodSpec, ...]]] = {
    "median": MEDIAN_METHODS,
    "mean": MEAN_METHODS,
}


def method_spec(statistic: str, key: str) -> MethodSpec:
    for spec in METHODS[statistic]:
        if spec.key == key:
            return spec
    raise KeyError(f"{statistic}/{key}")


def saa_blocks(epsilon: float) -> int:
    """Blocks for sample-and-aggregate: a public function of epsilon only (a constant)."""
    del epsilon
    return SAA_BLOCKS


def ptr_bound(statistic: BoundedStatistic) -> float:
    """PTR's proposed bound on the local sensitivity: w / 1000, fixed before seeing data."""
    return PTR_BOUND_FRACTION * statistic.width


def peer_available(key: str) -> bool:
    """Whether the peer library of a row can be imported."""
    module = {"opendp": "opendp.prelude", "diffprivlib": "diffprivlib.tools"}[key]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            __import__(module)
    except ImportError:
        return False
    return True


Draw = Callable[[], float | None]
PEERS: Final = ("opendp", "diffprivlib")


def _opendp_median(
    xs: list[float], lower: float, upper: float, epsilon: float
) -> Callable[[], float]:
    import opendp.prelude as dp

    dp.enable_features("contrib")
    candidates = np.linspace(lower, upper, OPENDP_CANDIDATES).tolist()
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance()
    meas = dp.binary_search_chain(
        lambda s: (
            space
            >> dp.m.then_private_quantile(
                dp.max_divergence(), candidates=candidates, alpha=0.5, scale=s
            )
        ),
        d_in=1,
        d_out=epsilon,
    )
    return lambda: float(meas(xs))


def _diffprivlib(
    statistic: str, x: FloatArray, lower: float, upper: float, epsilon: float, seed: int
) -> Callable[[], float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from diffprivlib import BudgetAccountant
        from diffprivlib.tools import mean as dpl_mean
        from diffprivlib.tools import median as dpl_median
    tool = dpl_median if statistic == "median" else dpl_mean
    state = np.random.RandomState(seed)

    def run() -> float:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return float(
                tool(
                    x,
                    epsilon=epsilon,
                    bounds=(lower, upper),
                    random_state=state,
                    accountant=BudgetAccountant(),
                )
            )

    return run


def make_draw(
    statistic: str,
    method: str,
    xc: FloatArray,
    stat: BoundedStatistic,
    epsilon: float,
    seed: int,
    as_list: Callable[[], list[float]],
) -> Draw:
    """A zero-argument function that performs one release and returns its value."""
    rng = SeededRandom(seed)
    lo, hi = stat.lower, stat.upper

    def via(method_name: str, **kw: Any) -> Draw:
        return lambda: (
            release(
                xc, stat, epsilon=epsilon, method=method_name, neighbours=NEIGHBOURS, rng=rng, **kw
            ).value
        )

    if method == "smooth-t":
        return via("smooth", noise="student-t")
    if method == "smooth-cauchy":
        return via("smooth", noise="cauchy")
    if method == "smooth-laplace":
        return via("smooth", noise="laplace", delta=DELTA)
    if method == "exponential":
        return via("exponential")
    if method == "global":
        return via("global")
    if method == "ksw":
        return via("ksw")
    if method == "bounded-ls":
        return via("bounded-ls", delta=DELTA)
    if method == "ptr":
        return via("ptr", delta=DELTA, bound=ptr_bound(stat))
    if method == "auto":
        return via("auto", delta=0.0)
    if method == "auto-approx":
        return via("auto", delta=DELTA)
    if method == "sample-aggregate":
        k = saa_blocks(epsilon)
        return lambda: (
            sample_and_aggregate(
                xc,
                np.mean,
                blocks=k,
                lower=lo,
                upper=hi,
                epsilon=epsilon,
                aggregator="mean",
                neighbours=NEIGHBOURS,
                rng=rng,
            ).value
        )
    if method == "opendp":
        return _opendp_median(as_list(), lo, hi, epsilon)
    if method == "diffprivlib":
        return _diffprivlib(statistic, xc, lo, hi, epsilon, seed % 2**32)
    raise ValueError(f"unknown method {method!r}")


def stream_seed(*parts: object) -> int:
    """A reproducible 32-bit seed from names (CRC32; Python's hash() is salted)."""
    return zlib.crc32("|".join(str(p) for p in parts).encode())


# --------------------------------------------------------------------------- cells


@dataclass(frozen=True)
class Cell:
    statistic: str
    dataset: str
    n: int

    @property
    def key(self) -> str:
        return f"{self.statistic}/{self.dataset}/n{self.n}"


@dataclass(frozen=True)
class StudyConfig:
    """What to run. The defaults are the full study."""

    trials: int = TRIALS
    epsilons: tuple[float, ...] = EPSILONS
    ns: tuple[int, ...] = NS
    datasets: tuple[str, ...] = tuple(DATASETS)
    peers: bool = True
    workers: int = 2
    keep_errors_at: float | None = TARGET_EPSILON
    """Keep per-trial errors of the census cells at this epsilon (for the histograms)."""


def cells_of(config: StudyConfig) -> list[Cell]:
    out: list[Cell] = []
    for name in config.datasets:
        spec = DATASETS[name]
        sizes: Iterable[int] = config.ns if spec.synthetic else (CENSUS_N,)
        for n in sizes:
            for statistic in spec.statistics:
                out.append(Cell(statistic, name, n))
    return out


def methods_of(cell: Cell, config: StudyConfig) -> list[MethodSpec]:
    out = []
    for spec in METHODS[cell.statistic]:
        if spec.source == "peer" and not (config.peers and peer_available(spec.key)):
            continue
        out.append(spec)
    return out


def cell_data(cell: Cell) -> tuple[FloatArray, BoundedStatistic, float]:
    """Clipped data, the statistic and its true (non-private) value."""
    spec = DATASETS[cell.dataset]
    stat = make_statistic(cell.statistic, spec)
    x = load_data(cell.dataset, cell.n)
    xc = np.clip(x, spec.lower, spec.upper)
    return xc, stat, float(stat(xc))


def tie_diagnostics(xc: FloatArray, truth: float, statistic: str) -> dict[str, int]:
    """Records tied with the median, and how many ranks its rank ceil(n/2) is from the edge
    of that tie block (0: the median sits on a boundary, so its local sensitivity is > 0)."""
    if statistic != "median":
        return {}
    s = np.sort(xc)
    r = -(-s.shape[0] // 2)
    first = int(np.searchsorted(s, truth, "left")) + 1
    last = int(np.searchsorted(s, truth, "right"))
    return {"ties_at_median": last - first + 1, "rank_to_tie_edge": min(r - first, last - r)}


def summarise(
    errors: FloatArray, refused: NDArray[np.bool_], failed: NDArray[np.bool_]
) -> dict[str, float | int | None]:
    """Error summaries of one (cell, method, epsilon); errors are absolute.

    Failed trials (a peer library raised) are left out of the error statistics and
    counted; if every trial failed the statistics are None.
    """
    trials = int(errors.shape[0])
    refusals = int(refused.sum())
    ok = errors[~failed]
    out: dict[str, float | int | None] = {
        "trials": trials,
        "refusals": refusals,
        "refusal_rate": refusals / trials,
        "failures": int(failed.sum()),
        "failure_rate": float(failed.mean()),
    }
    if ok.size == 0:
        return {**out, "mae": None, "mae_se": None, "median_ae": None, "p90_ae": None}
    return {
        **out,
        "mae": float(ok.mean()),
        "mae_se": float(ok.std(ddof=1) / math.sqrt(ok.size)) if ok.size > 1 else None,
        "median_ae": float(np.median(ok)),
        "p90_ae": float(np.quantile(ok, 0.9)),
        "max_ae": float(ok.max()),
        "exact_rate": float(np.mean(ok == 0.0)),
    }


def run_task(
    cell: Cell, method: str, config: StudyConfig
) -> tuple[str, str, dict[str, dict[str, Any]]]:
    """All epsilons and trials of one method on one cell (one unit of parallel work)."""
    xc, stat, truth = cell_data(cell)
    fallback = stat.midpoint
    cached: list[list[float]] = []

    def as_list() -> list[float]:
        if not cached:
            cached.append(xc.tolist())
        return cached[0]

    out: dict[str, dict[str, Any]] = {}
    for eps in config.epsilons:
        draw = make_draw(
            cell.statistic, method, xc, stat, eps, stream_seed(cell.key, method, eps), as_list
        )
        signed = np.full(config.trials, math.nan)
        refused = np.zeros(config.trials, dtype=bool)
        failed = np.zeros(config.trials, dtype=bool)
        message = ""
        start = time.perf_counter()
        for i in range(config.trials):
            try:
                value = draw()
            except Exception as exc:  # a peer library crashed; dpsense errors propagate
                if method not in PEERS:
                    raise
                failed[i] = True
                message = message or f"{type(exc).__name__}: {str(exc)[:120]}"
                continue
            if value is None:
                refused[i] = True
                signed[i] = fallback - truth
            else:
                signed[i] = value - truth
        seconds = time.perf_counter() - start
        entry: dict[str, Any] = summarise(np.abs(signed), refused, failed)
        answered = signed[~refused & ~failed]
        entry["bias"] = float(answered.mean()) if answered.size else None
        entry["seconds"] = seconds
        if message:
            entry["failure_message"] = message
        if (
            config.keep_errors_at is not None
            and eps == config.keep_errors_at
            and not DATASETS[cell.dataset].synthetic
        ):
            entry["signed_errors"] = [
                None if math.isnan(e) else float(e) for e in np.where(refused, math.nan, signed)
            ]
        out[f"{eps:g}"] = entry
    return cell.key, method, out


def _task_cost(cell: Cell, method: str) -> float:
    """Rough relative cost, to start the slowest tasks first."""
    per_call = {"opendp": 40.0, "diffprivlib": 60.0, "sample-aggregate": 8.0}.get(method, 2.0)
    if method == "diffprivlib" and cell.statistic == "mean":
        per_call = 0.3
    return per_call * cell.n / 1e5


def run_study(config: StudyConfig, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run every (cell, method) and return the raw results (the content of utility.json)."""
    started = time.perf_counter()
    cells = cells_of(config)
    tasks = [(cell, spec.key) for cell in cells for spec in methods_of(cell, config)]
    tasks.sort(key=lambda t: -_task_cost(*t))
    results: dict[str, dict[str, Any]] = {}
    for cell in cells:
        xc, stat, truth = cell_data(cell)
        results[cell.key] = {
            "statistic": cell.statistic,
            "dataset": cell.dataset,
            "n": cell.n,
            "lower": stat.lower,
            "upper": stat.upper,
            "truth": truth,
            "numpy_median_gap": float(abs(np.median(xc) - truth))
            if cell.statistic == "median"
            else 0.0,
            "distinct_values": int(np.unique(xc).size),
            **tie_diagnostics(xc, truth, cell.statistic),
            "methods": {},
        }
    done = 0
    bar = ProgressBar(show_progress(None))

    def record(key: str, method: str, out: dict[str, dict[str, Any]]) -> None:
        nonlocal done
        done += 1
        spec = method_spec(results[key]["statistic"], method)
        results[key]["methods"][method] = {
            "label": spec.label,
            "privacy": spec.privacy,
            "source": spec.source,
            "note": spec.note,
            "by_epsilon": out,
        }
        if progress is not None:
            secs = sum(v["seconds"] for v in out.values())
            elapsed = time.perf_counter() - started
            progress(f"[{done}/{len(tasks)}] {key} {method}: {secs:.1f}s (elapsed {elapsed:.0f}s)")
        bar.advance(1)

    if config.workers <= 1:
        with bar.running():
            bar.task("Utility study", len(tasks))
            for cell, method in tasks:
                record(*run_task(cell, method, config))
    else:
        with ProcessPoolExecutor(max_workers=config.workers) as pool:
            futures = [pool.submit(run_task, cell, method, config) for cell, method in tasks]
            # the bar starts once the workers are forked: none inherits its lock or stdout
            with bar.running():
                bar.task("Utility study", len(tasks))
                try:
                    for future in as_completed(futures):
                        record(*future.result())
                except BaseException:
                    pool.shutdown(wait=False, cancel_futures=True)
                    raise
    # keep the table order of METHODS
    for entry in results.values():
        order = [s.key for s in METHODS[entry["statistic"]]]
        entry["methods"] = {k: entry["methods"][k] for k in order if k in entry["methods"]}
    return {
        "config": asdict(config),
        "choices": {
            "delta_approx": DELTA,
            "neighbours": NEIGHBOURS,
            "ptr_bound": "w / 1000",
            "ptr_test_fraction": 0.5,
            "sample_aggregate_blocks": SAA_BLOCKS,
            "opendp_candidates": f"{OPENDP_CANDIDATES}-point uniform grid over the bounds",
            "refusal_error": "|f(x) - (lower + upper) / 2|",
            "truth": "dpsense convention: order statistic at rank ceil(n/2) for the median",
            "auto_rule": auto_rule(),
        },
        "environment": environment(),
        "runtime_seconds": time.perf_counter() - started,
        "cells": results,
    }


def auto_rule() -> dict[str, dict[str, str]]:
    """What ``method='auto'`` resolves to (method and noise), per statistic and delta."""
    out: dict[str, dict[str, str]] = {}
    for stat in ("median", "mean"):
        statistic = make_statistic(stat, DATASETS["ages"])
        out[stat] = {}
        for d in (0.0, DELTA):
            method, options = choose_method(
                statistic, epsilon=TARGET_EPSILON, delta=d, neighbours=NEIGHBOURS
            )
            probe = release(
                np.array([30.0, 40.0, 50.0]),
                statistic,
                epsilon=TARGET_EPSILON,
                delta=d,
                neighbours=NEIGHBOURS,
                rng=SeededRandom(0),
            )
            noise = f", noise={probe.noise}" if probe.noise else ""
            out[stat][f"delta={d:g}"] = f"{method}{noise}" + (f" {options}" if options else "")
    return out


def environment() -> dict[str, str]:
    def version(module: str) -> str:
        try:
            from importlib.metadata import version as v

            return v(module)
        except Exception:
            return "not installed"

    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "dpsense": ds.__version__,
        "opendp": version("opendp"),
        "diffprivlib": version("diffprivlib"),
        "cpus": str(os.cpu_count()),
        "machine": platform.machine(),
    }


# --------------------------------------------------------------------------- targets


def _se(cell: dict[str, Any], method: str, eps: float) -> float:
    """Standard error of an MAE (0 when unknown)."""
    se = cell["methods"][method]["by_epsilon"][f"{eps:g}"].get("mae_se")
    return 0.0 if se is None else float(se)


def _mae(cell: dict[str, Any], method: str, eps: float) -> float | None:
    entry = cell["methods"].get(method)
    if entry is None:
        return None
    stats = entry["by_epsilon"].get(f"{eps:g}")
    if stats is None or stats["mae"] is None:
        return None
    return float(stats["mae"])


def _best(
    cell: dict[str, Any],
    eps: float,
    *,
    source: str,
    privacy: str | None,
    exclude: Sequence[str] = (),
) -> tuple[str, float] | None:
    best: tuple[str, float] | None = None
    for key, entry in cell["methods"].items():
        if key in exclude or entry["source"] != source:
            continue
        if privacy is not None and entry["privacy"] != privacy:
            continue
        mae = _mae(cell, key, eps)
        if mae is not None and (best is None or mae < best[1]):
            best = (key, mae)
    return best


def floored_ratio(a: float, b: float, floor: float) -> float:
    """a / b with both MAEs raised to ``floor`` first (differences below it are ties)."""
    return max(a, floor) / max(b, floor)


def resolution(cell: dict[str, Any]) -> float:
    """MAEs below RESOLUTION * w count as exact for the floored comparisons."""
    return RESOLUTION * float(cell["upper"] - cell["lower"])


def ratio(a: float, b: float) -> float:
    """a / b with 0/0 = 1 and a/0 = inf."""
    if b == 0.0:
        return 1.0 if a == 0.0 else math.inf
    return a / b


def evaluate_targets(study: dict[str, Any], eps: float = TARGET_EPSILON) -> dict[str, Any]:
    """T1, T2 and T3 at one epsilon (plus T3 at every epsilon, for the report)."""
    cells = study["cells"]
    t1: list[dict[str, Any]] = []
    t2: list[dict[str, Any]] = []
    for key, cell in cells.items():
        if (
            cell["statistic"] != "median"
            or f"{eps:g}" not in next(iter(cell["methods"].values()))["by_epsilon"]
        ):
            continue
        best = _best(cell, eps, source="dpsense", privacy="pure")
        if best is None:
            continue
        peers: dict[str, float] = {}
        for k, e in cell["methods"].items():
            peer_mae = _mae(cell, k, eps)
            if e["source"] == "peer" and e["privacy"] == "pure" and peer_mae is not None:
                peers[k] = peer_mae
        row: dict[str, Any] = {
            "cell": key,
            "dataset": cell["dataset"],
            "n": cell["n"],
            "best_dpsense": best[0],
            "best_dpsense_mae": best[1],
            "peers": peers,
        }
        if cell["dataset"] in ("ages", "census-age"):
            ratios = {k: ratio(v, best[1]) for k, v in peers.items()}
            row["peer_over_dpsense"] = ratios
            # ratio(0, 0) = 1: an exact peer is never beaten 10x, even by an exact dpsense
            row["holds"] = bool(peers) and all(r >= T1_FACTOR for r in ratios.values())
            row["counts"] = cell["dataset"] == "ages"
            t1.append(row)
        elif cell["dataset"] in ("incomes", "census-income"):
            if peers:
                peer_key = min(peers, key=lambda k: peers[k])
                row["best_peer"] = peer_key
                row["best_peer_mae"] = peers[peer_key]
                row["dpsense_over_peer"] = ratio(best[1], peers[peer_key])
                row["holds"] = best[1] <= peers[peer_key]
                se_ds, se_peer = _se(cell, best[0], eps), _se(cell, peer_key, eps)
                row["best_dpsense_se"], row["best_peer_se"] = se_ds, se_peer
                spread = math.hypot(se_ds, se_peer)
                # Monte Carlo tie: the dpsense MAE exceeds the peer's by less than 2 SE
                row["within_2se"] = best[1] - peers[peer_key] <= 2.0 * spread
            else:
                row["holds"] = None
            row["counts"] = cell["dataset"] == "incomes"
            t2.append(row)

    def t3_rows(at: float) -> list[dict[str, Any]]:
        rows = []
        for key, cell in cells.items():
            for auto, privacy in (("auto", "pure"), ("auto-approx", "approx")):
                mae = _mae(cell, auto, at)
                if mae is None:
                    continue
                best = _best(
                    cell, at, source="dpsense", privacy=privacy, exclude=("auto", "auto-approx")
                )
                any_type = _best(
                    cell, at, source="dpsense", privacy=None, exclude=("auto", "auto-approx")
                )
                if best is None:
                    continue
                rows.append(
                    {
                        "cell": key,
                        "epsilon": at,
                        "auto": auto,
                        "privacy": privacy,
                        "auto_mae": mae,
                        "best": best[0],
                        "best_mae": best[1],
                        "ratio": ratio(mae, best[1]),
                        "holds": ratio(mae, best[1]) <= T3_FACTOR,
                        "floored_ratio": floored_ratio(mae, best[1], resolution(cell)),
                        "holds_floored": floored_ratio(mae, best[1], resolution(cell)) <= T3_FACTOR,
                        "best_any_type": any_type[0] if any_type else None,
                        "ratio_any_type": ratio(mae, any_type[1]) if any_type else None,
                    }
                )
        return rows

    t3 = t3_rows(eps)
    t3_all = [r for e in study["config"]["epsilons"] for r in t3_rows(e)]

    def verdict(rows: list[dict[str, Any]], field: str = "holds") -> bool | None:
        counted = [r[field] for r in rows if r.get("counts", True)]
        if not counted or any(h is None for h in counted):
            return None
        return all(counted)

    return {
        "epsilon": eps,
        "T1": {"holds": verdict(t1), "rows": t1},
        "T2": {"holds": verdict(t2), "rows": t2},
        "T3": {
            "holds": verdict(t3),
            "holds_floored": verdict(t3, "holds_floored"),
            "rows": t3,
        },
        "T3_all_epsilons": {
            "holds": verdict(t3_all),
            "holds_floored": verdict(t3_all, "holds_floored"),
            "violations": [r for r in t3_all if not r["holds"]],
        },
        "auto_rules": auto_rule_search(study),
    }


def _worst_ratio(
    group: Sequence[dict[str, Any]], method: str, eps: float, privacy: str
) -> tuple[float, str]:
    """Largest floored ratio of ``method`` to the best non-auto same-type method, and where."""
    result = (0.0, "")
    for c in group:
        mae = _mae(c, method, eps)
        best = _best(c, eps, source="dpsense", privacy=privacy, exclude=AUTO_KEYS)
        if mae is None or best is None:
            continue
        r = floored_ratio(mae, best[1], resolution(c))
        if r > result[0]:
            result = (r, f"{c['statistic']}/{c['dataset']}/n{c['n']}")
    return result


def auto_rule_search(study: dict[str, Any]) -> list[dict[str, Any]]:
    """The best data-independent rule for ``auto``, from the measured MAEs.

    A rule may depend only on the statistic, epsilon, delta (the privacy type) and the
    neighbour relation (add-remove here), never on n or the data. For each (statistic,
    privacy type, epsilon) this picks, among the non-auto dpsense methods allowed for that
    type (pure methods for delta = 0; every method for delta > 0, since a pure method is
    also (epsilon, delta)-DP), the one whose worst floored ratio to the best same-type method
    over all cells is smallest (minimax). If even that worst ratio exceeds T3_FACTOR, no rule
    of this kind meets T3 at that epsilon with the methods studied here.
    """
    cells = list(study["cells"].values())
    out: list[dict[str, Any]] = []
    for statistic in ("median", "mean"):
        group = [c for c in cells if c["statistic"] == statistic]
        if not group:
            continue
        for auto, privacy in (("auto", "pure"), ("auto-approx", "approx")):
            candidates = [
                s.key
                for s in METHODS[statistic]
                if s.source == "dpsense"
                and s.key not in AUTO_KEYS
                and (s.privacy == privacy or privacy == "approx")
            ]
            for eps in study["config"]["epsilons"]:
                scored = {m: _worst_ratio(group, m, eps, privacy) for m in candidates}
                if not scored:
                    continue
                pick = min(scored, key=lambda m: scored[m][0])
                current = _worst_ratio(group, auto, eps, privacy)
                out.append(
                    {
                        "statistic": statistic,
                        "privacy": privacy,
                        "epsilon": eps,
                        "auto_resolves_to": study["choices"]["auto_rule"][statistic][
                            f"delta={0.0 if privacy == 'pure' else DELTA:g}"
                        ],
                        "auto_worst_ratio": current[0],
                        "auto_worst_cell": current[1],
                        "minimax_method": pick,
                        "minimax_worst_ratio": scored[pick][0],
                        "minimax_worst_cell": scored[pick][1],
                        "all_worst_ratios": {m: v[0] for m, v in scored.items()},
                        "fixable": scored[pick][0] <= T3_FACTOR,
                    }
                )
    return out


# --------------------------------------------------------------------------- markdown


def fmt(v: float | None) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    if v == 0.0:
        return "0"
    if math.isinf(v):
        return "∞"
    a = abs(v)
    if a >= 1e5 or a < 1e-3:
        return f"{v:.2e}"
    if a >= 100:
        return f"{v:,.0f}"
    return f"{v:.3g}"


def fmt_ratio(v: float | None) -> str:
    if v is None:
        return "—"
    if math.isinf(v):
        return "∞"
    return f"{v:.3g}x" if v < 1e4 else f"{v:.2e}x"


def yes_no(v: bool | None) -> str:
    return "n/a (peers missing)" if v is None else ("**holds**" if v else "**fails**")


def cell_table(cell: dict[str, Any], epsilons: Sequence[float]) -> list[str]:
    head = "| method | privacy | " + " | ".join(f"ε = {e:g}" for e in epsilons) + " |"
    lines = [head, "|---|---|" + "---:|" * len(epsilons)]
    best_pure = {e: _best(cell, e, source="dpsense", privacy="pure") for e in epsilons}
    for key, entry in cell["methods"].items():
        cols = []
        for e in epsilons:
            stats = entry["by_epsilon"].get(f"{e:g}")
            if stats is None:
                cols.append("—")
                continue
            text = fmt(stats["mae"])
            best = best_pure[e]
            if best is not None and best[0] == key:
                text = f"**{text}**"
            if key == "ptr":
                text += f" (ref. {100 * stats['refusal_rate']:.0f}%)"
            if stats.get("failures"):
                text = (
                    "crashed ‡"
                    if stats["mae"] is None
                    else f"{text} ({100 * stats['failure_rate']:.0f}% crashed ‡)"
                )
            cols.append(text)
        privacy = entry["privacy"] + (" (peer)" if entry["source"] == "peer" else "")
        label = entry["label"] + (" †" if entry["note"] else "")
        lines.append(f"| {label} | {privacy} | " + " | ".join(cols) + " |")
    return lines


def render_markdown(study: dict[str, Any], targets: dict[str, Any]) -> str:
    cfg = study["config"]
    env = study["environment"]
    eps_list: list[float] = list(cfg["epsilons"])
    out: list[str] = []
    add = out.append
    eps_text = ", ".join(f"{e:g}" for e in eps_list)
    add("# dpsense utility study: mean absolute error against epsilon\n")
    add(
        "Generated by `benchmarks/utility.py` — do not edit by hand. "
        f"{cfg['trials']} trials per entry; epsilon in {{{eps_text}}}; "
        f"add-remove neighbours throughout; approximate methods use delta = {DELTA:g}. "
        f"Runtime {study['runtime_seconds'] / 60:.1f} min with {cfg['workers']} worker process(es) "
        f"(Python {env['python']}, numpy {env['numpy']}, OpenDP {env['opendp']}, "
        f"diffprivlib {env['diffprivlib']}, {env['cpus']} CPUs).\n"
    )
    add("## How to read this\n")
    add(
        "* Each entry is the MAE over the trials, |released − f(x)|, where f(x) is the "
        "non-private statistic of the clipped data. For the median f(x) follows dpsense's "
        "convention (order statistic at rank ceil(n/2)); every method, peers included, is "
        "scored against it (the gap to `numpy.median` is listed under each table and is far "
        "below the errors). **Bold**: best pure-epsilon dpsense method of the column.\n"
        "* **PTR refusals** (⊥) are scored as |f(x) − (lower + upper)/2|: a refused analyst "
        "can only fall back on a public guess, and the midpoint of the public bounds is the "
        "natural one. The refusal rate is shown next to the MAE (`ref.`).\n"
        "* Privacy types: *pure* = epsilon-DP (delta = 0); *approx* = (epsilon, 1e-6)-DP. "
        "Pure-DP rows are compared with pure-DP rows, approximate with approximate.\n"
        "* Public choices (none looks at the data): PTR proposes **b = w/1000** "
        "(w = upper − lower: 0.1 years, 500 dollars) with half of epsilon for the test; "
        f"sample-and-aggregate uses **k = {SAA_BLOCKS} blocks at every epsilon** (k may not "
        "depend on n, which is private under add-remove; at n = 1000 about 0.7 % of blocks "
        "are empty and contribute the midpoint); OpenDP gets the **1001-point uniform grid** "
        "over the bounds as candidates (step w/1000).\n"
        "* † diffprivlib's `tools.mean` divides a noisy sum by the **exact n**: it treats n "
        "as public, so it is **not** add-remove DP (it is substitute-DP). It is reported, "
        "flagged, but it takes part in no target.\n"
        "* Smooth-sensitivity releases with Cauchy noise have no finite mean error "
        "before clipping; every release is clipped to the public bounds, so the MAE is "
        "finite but dominated by rare huge draws.\n"
        "* OpenDP cannot be seeded, so its rows change slightly from run to run; everything "
        "else is reproducible (seeded streams; datasets drawn once per n from fixed seeds).\n"
        "* `auto` is `release(..., method='auto')` as implemented in "
        "`src/dpsense/methods/auto.py`; it resolved to: "
        + "; ".join(
            f"{stat} with {d}: `{v}`"
            for stat, rules in study["choices"]["auto_rule"].items()
            for d, v in rules.items()
        )
        + ".\n"
    )
    add(summary_markdown(targets))
    add("## Tables (MAE; rows = methods, columns = epsilon)\n")
    for key, cell in study["cells"].items():
        spec = DATASETS[cell["dataset"]]
        add(
            f"### {cell['statistic']} — {spec.label} — n = {cell['n']:,}  (`{key}`)\n\n"
            f"Bounds [{cell['lower']:,g}, {cell['upper']:,g}]; f(x) = {fmt(cell['truth'])}; "
            f"{cell['distinct_values']:,} distinct values"
            + (
                f"; |f(x) − numpy.median| = {fmt(cell['numpy_median_gap'])}; "
                f"{cell['ties_at_median']:,} records equal f(x), and rank ceil(n/2) is "
                f"{cell['rank_to_tie_edge']:,} ranks from the edge of that tie block"
                if cell["statistic"] == "median"
                else ""
            )
            + ".\n"
        )
        add("\n".join(cell_table(cell, eps_list)) + "\n")
        for entry in cell["methods"].values():
            for e, stats in entry["by_epsilon"].items():
                if stats.get("failures"):
                    add(
                        f"‡ {entry['label']} at ε = {e} raised in {stats['failures']} of "
                        f"{stats['trials']} trials (left out of its MAE): "
                        f"`{stats['failure_message']}`\n"
                    )
    return "\n".join(out)


def t1_mark(row: dict[str, Any]) -> str:
    if row["holds"]:
        return "yes"
    exact_peers = [k for k, v in row["peers"].items() if v == 0.0]
    if exact_peers and row["best_dpsense_mae"] == 0.0:
        return "no (tie: both exact)"
    return "no"


def summary_markdown(targets: dict[str, Any]) -> str:
    eps = targets["epsilon"]
    lines = [f"## Summary: targets at epsilon = {eps:g}\n"]
    t1, t2, t3 = targets["T1"], targets["T2"], targets["T3"]
    lines.append(
        f"**T1** (tied integer ages: the best pure-epsilon dpsense median has at least "
        f"{T1_FACTOR:g}x lower MAE than both peers, at every n): {yes_no(t1['holds'])}.\n"
    )
    lines.append("| cell | best pure dpsense | MAE | peer MAEs | peer / dpsense | holds |")
    lines.append("|---|---|---:|---|---|---|")
    for r in t1["rows"]:
        peers = ", ".join(f"{k} {fmt(v)}" for k, v in r["peers"].items()) or "—"
        ratios = ", ".join(f"{k} {fmt_ratio(v)}" for k, v in r["peer_over_dpsense"].items())
        tag = "" if r["counts"] else " (informational)"
        lines.append(
            f"| `{r['cell']}`{tag} | {r['best_dpsense']} | {fmt(r['best_dpsense_mae'])} | "
            f"{peers} | {ratios or '—'} | {t1_mark(r)} |"
        )
    lines.append(
        f"\n**T2** (continuous incomes: the best pure-epsilon dpsense median is no worse "
        f"than the best pure-epsilon peer, at every n): {yes_no(t2['holds'])}.\n"
    )
    lines.append(
        "| cell | best pure dpsense | MAE ± SE | best peer | MAE ± SE | dpsense / peer | holds | "
        "within 2 SE |"
    )
    lines.append("|---|---|---:|---|---:|---:|---|---|")
    for r in t2["rows"]:
        tag = "" if r["counts"] else " (informational)"
        holds = "—" if r["holds"] is None else ("yes" if r["holds"] else "no")
        lines.append(
            f"| `{r['cell']}`{tag} | {r['best_dpsense']} | "
            f"{fmt(r['best_dpsense_mae'])} ± {fmt(r.get('best_dpsense_se'))} | "
            f"{r.get('best_peer', '—')} | "
            f"{fmt(r.get('best_peer_mae'))} ± {fmt(r.get('best_peer_se'))} | "
            f"{fmt_ratio(r.get('dpsense_over_peer'))} | {holds} | "
            f"{'yes' if r.get('within_2se') else 'no'} |"
        )
    counted = [r for r in t2["rows"] if r["counts"] and r["holds"] is not None]
    if counted:
        tie = all(r["within_2se"] for r in counted)
        lines.append(
            "\nT2 allowing for Monte Carlo error (dpsense worse by less than 2 standard "
            f"errors of the difference, at every n): {yes_no(tie)}.\n"
        )
    lines.append(
        f"\n**T3** (`auto` within {T3_FACTOR:g}x of the best dpsense method of the same "
        f"privacy type, in every cell): {yes_no(t3['holds'])}.\n"
    )
    lines.append(
        "| cell | auto | auto MAE | best same-type method | its MAE | ratio | holds | "
        "ratio to best of any type |"
    )
    lines.append("|---|---|---:|---|---:|---:|---|---:|")
    for r in t3["rows"]:
        lines.append(
            f"| `{r['cell']}` | {r['auto']} | {fmt(r['auto_mae'])} | {r['best']} | "
            f"{fmt(r['best_mae'])} | {fmt_ratio(r['ratio'])} | "
            f"{'yes' if r['holds'] else '**no**'} | {fmt_ratio(r['ratio_any_type'])} |"
        )
    lines.append(
        "\n(The last column compares `auto-approx` also with the pure methods, which are "
        "(epsilon, delta)-DP too; informational.)\n"
    )
    lines.append(
        f"With MAEs below {RESOLUTION:g}·w counted as exact (differences far below the "
        f"data's resolution are ties), T3 at epsilon = {eps:g}: "
        f"{yes_no(t3['holds_floored'])} (column 'ratio' is the strict one).\n"
    )
    viol = targets["T3_all_epsilons"]["violations"]
    lines.append(
        f"\n**T3 at every epsilon**: {len(viol)} (cell, epsilon, auto) combinations exceed "
        f"{T3_FACTOR:g}x strictly; floored verdict over all epsilons: "
        f"{yes_no(targets['T3_all_epsilons']['holds_floored'])}.\n"
    )
    if viol:
        lines.append(
            "| cell | ε | auto | auto MAE | best same-type | its MAE | ratio | floored ratio |"
        )
        lines.append("|---|---:|---|---:|---|---:|---:|---:|")
        for r in viol:
            lines.append(
                f"| `{r['cell']}` | {r['epsilon']:g} | {r['auto']} | {fmt(r['auto_mae'])} | "
                f"{r['best']} | {fmt(r['best_mae'])} | {fmt_ratio(r['ratio'])} | "
                f"{fmt_ratio(r['floored_ratio'])} |"
            )
    lines.append(
        "\n### Which data-independent rule would fix `auto`?\n\n"
        "A rule may use only the statistic, epsilon, delta and the neighbour relation — not n "
        "(private under add-remove) and not the data. For each (statistic, privacy type, "
        "epsilon) the table gives the worst floored ratio of the current `auto` over all "
        "cells, and the non-auto method of that type whose worst ratio is smallest "
        "(minimax over the cells; for delta > 0 pure methods are candidates too, since "
        "they are (epsilon, delta)-DP as well — the reference stays the best approximate "
        "method, as in T3). 'fixable' = that minimax ratio is within "
        f"{T3_FACTOR:g}x, i.e. some method choice by epsilon alone would meet T3 there.\n"
    )
    lines.append(
        "| statistic | type | ε | auto is | auto worst ratio (cell) | minimax method | "
        "its worst ratio (cell) | fixable |"
    )
    lines.append("|---|---|---:|---|---|---|---|---|")
    for r in targets["auto_rules"]:
        lines.append(
            f"| {r['statistic']} | {r['privacy']} | {r['epsilon']:g} | "
            f"{r['auto_resolves_to']} | "
            f"{fmt_ratio(r['auto_worst_ratio'])} (`{r['auto_worst_cell']}`) | "
            f"{r['minimax_method']} | {fmt_ratio(r['minimax_worst_ratio'])} "
            f"(`{r['minimax_worst_cell']}`) | {'yes' if r['fixable'] else 'no'} |"
        )
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- plots

PLOT_CELLS: Final = (
    "median/ages/n1000",
    "median/ages/n100000",
    "median/incomes/n1000",
    "median/incomes/n100000",
    "median/census-age/n10000",
    "mean/ages/n1000",
    "mean/incomes/n10000",
)


def _style(spec: dict[str, Any], index: int) -> dict[str, Any]:
    colours = [
        "#1f77b4",
        "#ff7f0e",
        "#2ca02c",
        "#d62728",
        "#9467bd",
        "#8c564b",
        "#e377c2",
        "#17becf",
        "#7f7f7f",
        "#000000",
    ]
    markers = ["o", "s", "^", "v", "D", "P", "X", "*", "h", "<"]
    if spec["source"] == "peer":
        linestyle = ":"
    elif spec["privacy"] == "approx":
        linestyle = "--"
    else:
        linestyle = "-"
    return {
        "color": colours[index % len(colours)],
        "marker": markers[index % len(markers)],
        "linestyle": linestyle,
        "linewidth": 1.6,
        "markersize": 6,
    }


def plot_mae_vs_epsilon(study: dict[str, Any], out_dir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    eps_list = list(study["config"]["epsilons"])
    for key in PLOT_CELLS:
        cell = study["cells"].get(key)
        if cell is None:
            continue
        fig, ax = plt.subplots(figsize=(10, 7.2))
        floor = resolution(cell)
        floored_any = False
        for i, entry in enumerate(cell["methods"].values()):
            maes = np.array(
                [
                    math.nan if v is None else v
                    for v in (entry["by_epsilon"][f"{e:g}"]["mae"] for e in eps_list)
                ],
                dtype=float,
            )
            label = f"{entry['label']} [{entry['privacy']}]"
            low = maes < floor
            if np.any(low):
                floored_any = True
                label += " — on the floor line at some ε"
            if np.any(np.isnan(maes)):
                label += " — crashed at some ε (gap)"
            style = _style(entry, i)
            # jitter the floored points a little so that overlapping methods stay visible
            shown = np.where(low, floor * 1.025**i, maes)
            ax.plot(eps_list, shown, label=label, **style)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(eps_list)
        ax.set_xticklabels([f"{e:g}" for e in eps_list])
        ax.set_xlabel("epsilon (privacy budget)")
        ax.set_ylabel(f"mean absolute error of the {cell['statistic']} (log scale)")
        spec = DATASETS[cell["dataset"]]
        ax.set_title(
            f"{cell['statistic']} of {spec.label}, n = {cell['n']:,}, "
            f"bounds [{cell['lower']:,g}, {cell['upper']:,g}]\n"
            f"{study['config']['trials']} trials per point; solid = dpsense pure ε, dashed = "
            f"dpsense approximate (δ = {DELTA:g}), dotted = peers (pure ε)",
            fontsize=10,
        )
        ax.grid(True, which="both", alpha=0.3)
        if floored_any:
            ax.axhspan(floor * 0.9, floor * 1.3, color="grey", alpha=0.15, linewidth=0)
            ax.text(
                eps_list[0],
                floor * 0.85,
                f"floor band: an MAE below {RESOLUTION:g}·w = {floor:g} (including exactly 0) "
                "is drawn here, offset slightly per method so overlapping lines stay visible",
                fontsize=8,
                color="dimgrey",
                va="top",
            )
            bottom, top = ax.get_ylim()
            ax.set_ylim(min(bottom, floor * 0.4), top)
        ax.legend(
            fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2, frameon=False
        )
        fig.tight_layout()
        path = out_dir / f"mae_vs_epsilon_{cell['statistic']}_{cell['dataset']}_n{cell['n']}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


HIST_METHODS: Final = (
    ("global", "global sensitivity"),
    ("ptr", "PTR (b = w/1000)"),
    ("smooth-t", "smooth, Student t"),
    ("smooth-laplace", "smooth, Laplace"),
)
HIST_FLOOR: Final = 1e-6
"""Percent errors below this (including exact answers) go into the first bin."""


def plot_error_histograms(study: dict[str, Any], out_dir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = [
        k for k in ("mean/census-age/n10000", "median/census-age/n10000") if k in study["cells"]
    ]
    if not keys:
        return []
    eps = study["config"]["keep_errors_at"]
    fig, axes = plt.subplots(1, len(keys), figsize=(6.5 * len(keys), 4.8), squeeze=False)
    for ax, key in zip(axes[0], keys, strict=True):
        cell = study["cells"][key]
        truth = cell["truth"]
        series = []
        for method, label in HIST_METHODS:
            entry = cell["methods"].get(method)
            if entry is None:
                continue
            stats = entry["by_epsilon"].get(f"{eps:g}", {})
            errs = stats.get("signed_errors")
            if errs is None:
                continue
            answered = np.array([e for e in errs if e is not None], dtype=float)
            refused = len(errs) - answered.size
            pct = np.abs(answered) / abs(truth) * 100.0
            exact = float(np.mean(pct < HIST_FLOOR)) if pct.size else 0.0
            text = f"{label}: MAE {fmt(stats['mae'])}"
            if refused:
                text += f", {refused} refused (not shown)"
            if exact > 0:
                text += f", {100 * exact:.0f}% < {HIST_FLOOR:g}%"
            series.append((np.maximum(pct, HIST_FLOOR), text))
        if not series:
            continue
        hi = max(float(s.max()) for s, _ in series)
        bins = np.logspace(math.log10(HIST_FLOOR), math.log10(max(hi, 10 * HIST_FLOOR)) + 0.01, 50)
        for values, text in series:
            _, _, patches = ax.hist(values, bins=bins, alpha=0.3, histtype="stepfilled")
            colour = patches[0].get_facecolor()[:3]
            ax.hist(values, bins=bins, histtype="step", linewidth=1.8, color=colour, label=text)
        ax.set_xscale("log")
        ax.set_xlabel(
            f"percent error |released − true| / true × 100 (first bin: ≤ {HIST_FLOOR:g}%)"
        )
        ax.set_ylabel(f"trials (of {study['config']['trials']})")
        ax.set_title(
            f"census age {cell['statistic']} (true = {fmt(truth)}, n = {cell['n']:,}), "
            f"ε = {eps:g}\nPTR and smooth Laplace: δ = {DELTA:g}; Student t: pure ε",
            fontsize=10,
        )
        ax.legend(fontsize=8, loc="upper left")
        ax.grid(True, alpha=0.3)
    fig.suptitle("Percent error: global sensitivity vs PTR vs smooth sensitivity", fontsize=12)
    fig.tight_layout()
    path = out_dir / f"error_histograms_census_age_eps{eps:g}.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path]


# --------------------------------------------------------------------------- output


def _json_default(o: object) -> object:
    if isinstance(o, np.generic):
        return o.item()
    raise TypeError(type(o).__name__)


def _finite(o: Any) -> Any:
    """JSON has no inf/nan: write them as strings."""
    if isinstance(o, float) and not math.isfinite(o):
        return str(o)
    if isinstance(o, dict):
        return {k: _finite(v) for k, v in o.items()}
    if isinstance(o, list | tuple):
        return [_finite(v) for v in o]
    return o


def write_outputs(
    study: dict[str, Any], out_dir: Path, *, plots: bool = True
) -> dict[str, Path | list[Path]]:
    """Write utility.md, utility.json and (optionally) the PNGs; return their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    targets = evaluate_targets(study)
    md = out_dir / "utility.md"
    md.write_text(render_markdown(study, targets), encoding="utf-8")
    js = out_dir / "utility.json"
    payload = _finite({**study, "targets": targets})
    js.write_text(json.dumps(payload, indent=1, default=_json_default), encoding="utf-8")
    written: dict[str, Path | list[Path]] = {"markdown": md, "json": js}
    if plots:
        written["mae_plots"] = plot_mae_vs_epsilon(study, out_dir)
        written["histograms"] = plot_error_histograms(study, out_dir)
    return written


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="MAE of dpsense's release methods against OpenDP and diffprivlib."
    )
    parser.add_argument("--trials", type=int, default=None, help=f"default {TRIALS}")
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"{QUICK_TRIALS} trials and n in {{10^3, 10^4}} (development)",
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--no-peers", action="store_true", help="skip OpenDP and diffprivlib")
    parser.add_argument("--no-plots", action="store_true")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument(
        "--from-json",
        type=Path,
        default=None,
        help="re-render utility.md and the plots from a saved utility.json (no new trials)",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    if args.from_json is not None:
        study = json.loads(args.from_json.read_text(encoding="utf-8"))
        study.pop("targets", None)
        write_outputs(study, args.out, plots=not args.no_plots)
        print(summary_markdown(evaluate_targets(study)))
        return
    trials = args.trials if args.trials is not None else (QUICK_TRIALS if args.quick else TRIALS)
    config = StudyConfig(
        trials=trials,
        ns=QUICK_NS if args.quick else NS,
        peers=not args.no_peers,
        workers=args.workers,
    )
    study = run_study(config, progress=lambda m: print(m, flush=True))
    written = write_outputs(study, args.out, plots=not args.no_plots)
    targets = evaluate_targets(study)
    print(summary_markdown(targets))
    print(f"total runtime {study['runtime_seconds']:.0f}s; wrote:")
    for value in written.values():
        for path in value if isinstance(value, list) else [value]:
            print(f"  {path}")


if __name__ == "__main__":
    main()
