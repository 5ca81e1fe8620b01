"""The utility study's setup: datasets, methods and one release per call (shared with the lab).

The study measures the mean absolute error of dpsense's release methods on fixed datasets
(``benchmarks/utility.py`` runs it and writes ``benchmarks/results/utility.md``). Peer
libraries (OpenDP, diffprivlib) stay in the benchmark: :func:`make_draw` takes them through
a ``peer_draw`` hook so that dpsense itself never imports them.
"""

from __future__ import annotations

import math
import warnings
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final, Literal

import numpy as np
from numpy.typing import NDArray

from dpsense.datasets import load_census
from dpsense.methods import Release
from dpsense.noise.rng import SeededRandom
from dpsense.query.one_step import sample_and_aggregate
from dpsense.release import release
from dpsense.statistics import BoundedStatistic, Mean, Median

FloatArray = NDArray[np.float64]
Privacy = Literal["pure", "approx"]
Draw = Callable[[], float | None]
PeerDraw = Callable[
    [str, str, FloatArray, BoundedStatistic, float, int, Callable[[], list[float]]], Draw
]
"""A benchmark's release function for peer libraries: (statistic, method, clipped data,
statistic object, epsilon, seed, data as a list) to a zero-argument draw."""

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
        return Median(spec.lower, spec.upper)
    if statistic == "mean":
        return Mean(spec.lower, spec.upper)
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


# the rows of both tables (the same method, label and privacy for the median and the mean)
_SMOOTH_T: Final = MethodSpec("smooth-t", "dpsense smooth, Student t (d=3)", "pure", "dpsense")
_AUTO: Final = MethodSpec("auto", "dpsense auto (delta=0)", "pure", "dpsense")
_SMOOTH_LAPLACE: Final = MethodSpec(
    "smooth-laplace", "dpsense smooth, Laplace", "approx", "dpsense"
)
_PTR: Final = MethodSpec("ptr", "dpsense PTR (b = w/1000)", "approx", "dpsense")
_AUTO_APPROX: Final = MethodSpec("auto-approx", "dpsense auto (delta=1e-6)", "approx", "dpsense")

MEDIAN_METHODS: Final = (
    _SMOOTH_T,
    MethodSpec("smooth-cauchy", "dpsense smooth, Cauchy", "pure", "dpsense"),
    MethodSpec("exponential", "dpsense exponential", "pure", "dpsense"),
    MethodSpec("global", "dpsense global", "pure", "dpsense"),
    _AUTO,
    _SMOOTH_LAPLACE,
    _PTR,
    _AUTO_APPROX,
    MethodSpec("opendp", "OpenDP private_quantile", "pure", "peer"),
    MethodSpec("diffprivlib", "diffprivlib median", "pure", "peer"),
)
MEAN_METHODS: Final = (
    MethodSpec("global", "dpsense global (noisy sum / noisy count)", "pure", "dpsense"),
    MethodSpec("ksw", "dpsense KSW", "pure", "dpsense"),
    _SMOOTH_T,
    MethodSpec("sample-aggregate", "dpsense sample-and-aggregate (k=200)", "pure", "dpsense"),
    _AUTO,
    MethodSpec("bounded-ls", "dpsense bounded-ls", "approx", "dpsense"),
    _SMOOTH_LAPLACE,
    _PTR,
    _AUTO_APPROX,
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


PEERS: Final = ("opendp", "diffprivlib")

# the lab's methods that are one release: the release's method and its options
_RELEASES: Final[dict[str, tuple[str, dict[str, Any]]]] = {
    "smooth-t": ("smooth", {"noise": "student-t"}),
    "smooth-cauchy": ("smooth", {"noise": "cauchy"}),
    "smooth-laplace": ("smooth", {"noise": "laplace", "delta": DELTA}),
    "exponential": ("exponential", {}),
    "global": ("global", {}),
    "ksw": ("ksw", {}),
    "bounded-ls": ("bounded-ls", {"delta": DELTA}),
    "auto": ("auto", {"delta": 0.0}),
    "auto-approx": ("auto", {"delta": DELTA}),
}


def make_draw(
    statistic: str,
    method: str,
    xc: FloatArray,
    stat: BoundedStatistic,
    epsilon: float,
    seed: int,
    as_list: Callable[[], list[float]],
    peer_draw: PeerDraw | None = None,
) -> Draw:
    """A zero-argument function that performs one release and returns its value.

    Sample-and-aggregate evaluates the statistic itself on each block (``np.median`` for
    the median, ``np.mean`` for the mean); a peer method goes to ``peer_draw``.
    """
    rng = SeededRandom(seed)

    def via(method_name: str, **kw: Any) -> Draw:
        return lambda: (
            one_release(
                xc, stat, epsilon=epsilon, method=method_name, neighbours=NEIGHBOURS, rng=rng, **kw
            ).value
        )

    if method in _RELEASES:
        name, options = _RELEASES[method]
        return via(name, **options)
    if method == "ptr":
        return via("ptr", delta=DELTA, bound=ptr_bound(stat))
    if method == "sample-aggregate":
        return _saa_draw(statistic, xc, stat, epsilon, rng)
    if method in PEERS and peer_draw is not None:
        return peer_draw(statistic, method, xc, stat, epsilon, seed, as_list)
    raise ValueError(f"unknown method {method!r}")


def _saa_draw(
    statistic: str, xc: FloatArray, stat: BoundedStatistic, epsilon: float, rng: SeededRandom
) -> Draw:
    """Sample-and-aggregate's draw: the statistic on each block, the mean of the blocks."""
    lo, hi = stat.lower, stat.upper
    k = saa_blocks(epsilon)
    block_function = np.median if statistic == "median" else np.mean
    return lambda: (
        sample_and_aggregate(
            xc,
            block_function,
            blocks=k,
            lower=lo,
            upper=hi,
            epsilon=epsilon,
            aggregator="mean",
            neighbours=NEIGHBOURS,
            rng=rng,
        ).value
    )


def one_release(x: FloatArray, stat: BoundedStatistic, **options: Any) -> Release:
    """``release`` of one ungrouped statistic (never a grouped release)."""
    result = release(x, stat, **options)
    if not isinstance(result, Release):  # pragma: no cover - no ``by`` is passed
        raise TypeError("expected a single release")
    return result


def stream_seed(*parts: object) -> int:
    """A reproducible 32-bit seed from names (CRC32; Python's hash() is salted)."""
    return zlib.crc32("|".join(str(p) for p in parts).encode())
