r"""Sample and aggregate (Nissim, Raskhodnikova and Smith 2007, Section 4).

Split the records into k disjoint blocks, evaluate any function f on each block, clip
:math:`a_i = \mathrm{clip}(f(\text{block}_i), l, u)`, and aggregate privately:

* ``mean``: :math:`\bar a + \mathrm{Lap}(w/(k\varepsilon))` — pure epsilon: one record
  lies in one block, so it moves one :math:`a_i` by at most w and the mean by w/k;
* ``median``: the median of :math:`a_1..a_k` with smooth-sensitivity noise, treating the
  k values as a dataset under *substitute* (k is public; one record changes one value).

The partition must not depend on the data beyond each record's own block. Under
add-remove every record gets its block independently — from a keyed hash (HMAC-SHA256 with
a fresh random key) of its identifier when ``ids`` are given, else from the CSPRNG — so
adding or removing a record leaves every other record where it was. (A random split into
equal sizes is not valid there: one more record reshuffles everyone.) Under substitute,
where n is public, a uniformly random permutation is cut into k equal blocks.

f is arbitrary user code. Its answers are clipped to [l, u], ``inf`` and ``-inf``
included. A block on which f raises or returns NaN contributes the midpoint (l + u)/2 —
silently, because reporting which blocks failed would reveal something about them (the
former ``on_error="raise"`` debugging mode is withdrawn for that reason: test f on your own
data outside a release); the warnings f raises on a block are dropped for the same
reason. The records may hold infinities: f receives them as they are.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from dpsense._exact_budget import exact
from dpsense.errors import InputError, Param
from dpsense.mechanisms.additive import LaplaceMechanism
from dpsense.methods._release import Release
from dpsense.methods.call import MethodCall
from dpsense.methods.global_sensitivity import inflated_sensitivity
from dpsense.methods.smooth import release_smooth
from dpsense.neighbours import Neighbours, validate_neighbours
from dpsense.noise.exact import uniform_below
from dpsense.noise.rng import RandomSource
from dpsense.params import Bounds, check_delta, check_epsilon, check_int, validate_bounds
from dpsense.statistics import Mean, Median

__all__ = [
    "MAX_BLOCKS",
    "SAMPLE_AND_AGGREGATE_DOC",
    "AggregateArgs",
    "assign_blocks",
    "check_sample_and_aggregate",
    "function_label",
    "release_sample_and_aggregate",
]

MAX_BLOCKS = 10_000_000
"""The most blocks a release may ask for (k block estimates are held in memory)."""


_WHERE: Final = "sample_and_aggregate"
_Pair = tuple[float, float]


def function_label(func: Callable[..., Any]) -> str:
    """A public label for ``func`` on the receipt: its module and qualified name.

    Only names from the code are used, never ``repr(func)``: the repr of a callable object
    or of a bound method can show the state of an object that holds data.
    """
    target: Any = func
    name = getattr(target, "__qualname__", None) or getattr(target, "__name__", None)
    if not isinstance(name, str):
        target = type(func)
        name = target.__qualname__
    module = getattr(target, "__module__", None)
    if isinstance(module, str) and module not in ("builtins", "__main__"):
        return f"{module}.{name}"
    return name


def _as_records(x: Any) -> NDArray[Any]:
    if hasattr(x, "to_numpy") and not isinstance(x, np.ndarray):
        x = x.to_numpy()
    arr = np.asarray(x)
    if arr.ndim == 0:
        raise InputError("sample_and_aggregate needs a sequence of records (1-D or 2-D array).")
    return arr


def assign_blocks(
    n: int,
    blocks: int,
    neighbours: Neighbours,
    rng: RandomSource,
    ids: Sequence[object] | None = None,
) -> NDArray[np.int64]:
    """Block index of each of n records (see the module docstring for why)."""
    if neighbours == "substitute":
        keys = rng.words(n)
        order = np.argsort(keys, kind="stable")  # a uniform permutation (ties: prob ~n^2/2^64)
        out = np.empty(n, dtype=np.int64)
        out[order] = np.arange(n) % blocks
        return out
    if ids is None:
        return uniform_below(rng, np.full(n, blocks, dtype=np.uint64)).astype(np.int64)
    if len(ids) != n:
        raise InputError(
            Param("ids", of="sample_and_aggregate", word=""), " must have one entry per record."
        )
    key = rng.words(4).tobytes()
    out = np.empty(n, dtype=np.int64)
    for i, record_id in enumerate(ids):
        digest = hmac.new(key, repr(record_id).encode(), hashlib.sha256).digest()
        out[i] = int.from_bytes(digest[:16], "big") % blocks
    return out


SAMPLE_AND_AGGREGATE_DOC = """\
Release an aggregate of ``func`` over k disjoint blocks of the records.

    Parameters
    ----------
    x : array-like
        Records: a 1-D array of values or a 2-D array with one record per row.
    func : callable
        Any function of a block (a sub-array of ``x``) returning a number.
    blocks : int
        The number of blocks k (public).
    lower, upper : float
        Public bounds on ``func``'s output.
    aggregator : {"mean", "median"}
        "mean" is pure epsilon; "median" uses smooth sensitivity (Student's t noise when
        delta = 0, Laplace when delta > 0, or ``noise=``).
    ids : sequence, optional
        One identifier per record, hashed with a fresh key to assign blocks under
        add-remove (otherwise blocks are drawn independently per record).
    on_error : {"midpoint"}
        What a failing block contributes: the midpoint of the bounds. ("raise", a
        non-private debugging mode, is withdrawn: it is refused before anything is charged.)
    noise : str, optional
        The smooth-sensitivity noise of the "median" aggregator.
    function_name : str, optional
        How the receipt names ``func`` (default: its module and qualified name).

    Returns
    -------
    Release
        ``parameters`` holds the public description of the release: ``aggregator``,
        ``function`` (the name of ``func``), ``blocks`` (k) and the output bounds.
    """
"""The docstring of ``dpsense.sample_and_aggregate`` (``query/one_step.py``, the door that
releases through the pipeline): the method's math, beside its code."""


@dataclass(frozen=True)
class AggregateArgs:
    """The checked arguments of :func:`sample_and_aggregate` (everything but the data)."""

    func: Callable[[NDArray[Any]], float]
    k: int
    bounds: Bounds
    epsilon: float
    delta: float
    neighbours: Neighbours
    aggregator: str
    on_error: str
    label: str
    ids: Sequence[object] | None
    noise: str | None


def check_sample_and_aggregate(
    func: Callable[[NDArray[Any]], float],
    *,
    blocks: int,
    lower: float,
    upper: float,
    epsilon: float,
    delta: float = 0.0,
    aggregator: str = "mean",
    neighbours: str = "add-remove",
    ids: Sequence[object] | None = None,
    on_error: str = "midpoint",
    noise: str | None = None,
    function_name: str | None = None,
) -> AggregateArgs:
    """The arguments of :func:`sample_and_aggregate` checked, in its order, before any
    record is read."""
    k, b, eps, dlt, nb = _checked(blocks, (lower, upper), (epsilon, delta), neighbours, _WHERE)
    label = _check_options(func, aggregator, on_error, function_name, _WHERE)
    return AggregateArgs(func, k, b, eps, dlt, nb, aggregator, on_error, label, ids, noise)


def release_sample_and_aggregate(x: Any, args: AggregateArgs, source: RandomSource) -> Release:
    """:func:`sample_and_aggregate` on the records ``x``, its arguments checked."""
    k, b = args.k, args.bounds
    records = _as_records(x)
    assignment = assign_blocks(records.shape[0], k, args.neighbours, source, args.ids)
    answers = _block_answers(records, args.func, assignment, k, b, args.on_error)
    params = _public_parameters(args.aggregator, args.label, k, b)
    aggregation = _Aggregation(
        bounds=b,
        k=k,
        epsilon=args.epsilon,
        delta=args.delta,
        neighbours=args.neighbours,
        source=source,
        params=params,
    )
    if args.aggregator == "mean":
        return _aggregate_mean(answers, aggregation)
    return _aggregate_median(answers, aggregation, args.noise)


def check_arguments(
    blocks: int,
    lower: float,
    upper: float,
    epsilon: float,
    delta: float,
    neighbours: str,
    aggregator: str = "mean",
    where: str = "sample_and_aggregate",
) -> None:
    """The arguments of :func:`sample_and_aggregate` that do not read the data, checked in
    its order: a caller that reads the data first (the command line) checks them before,
    so that the error of a bad request never depends on the data."""
    _checked(blocks, (lower, upper), (epsilon, delta), neighbours, where)
    _check_options(len, aggregator, "midpoint", None, where)


def _checked(
    blocks: int, bounds: _Pair, budget: _Pair, neighbours: str, where: str
) -> tuple[int, Bounds, float, float, Neighbours]:
    """The checked blocks, bounds, epsilon, delta and neighbours, in that order."""
    k = _check_blocks(blocks, where)
    b = validate_bounds(*bounds, where=where)
    eps = check_epsilon(budget[0], where=where)
    dlt = check_delta(budget[1], where=where)
    return k, b, eps, dlt, validate_neighbours(neighbours, where=where)


def _check_blocks(blocks: int, where: str) -> int:
    k = check_int(blocks, "blocks", where=where, minimum=1)
    if k > MAX_BLOCKS:
        raise InputError(
            Param("blocks", of=where),
            f" must be at most {MAX_BLOCKS:,} (each block needs records of its own, and the "
            "blocks are held in memory); use fewer blocks.",
        )
    return k


def _check_options(
    func: object, aggregator: str, on_error: str, function_name: str | None, where: str
) -> str:
    """The checked options, and the receipt's label of ``func``."""
    if aggregator not in ("mean", "median"):
        raise InputError(
            Param("aggregator", of=where),
            f" must be 'mean' or 'median'. Got {aggregator!r} instead.",
        )
    if on_error == "raise":
        # withdrawn: whether one block's function fails can turn on one record, so a
        # release that raises on it would tell (docs/frameworks.md, section 4)
        raise InputError(
            Param("on_error", of=where),
            " 'raise' is withdrawn: whether func fails on a block can depend on one record, "
            "so raising would reveal it. Test func on your own data outside a release (that "
            "is not private), and release with on_error='midpoint', where a failed block "
            "gives the midpoint of the bounds.",
        )
    if on_error != "midpoint":
        raise InputError(
            Param("on_error", of=where),
            f" must be 'midpoint'. Got {on_error!r} instead.",
        )
    if not callable(func):
        raise InputError(f"The 'func' parameter of {where} must be callable.")
    if function_name is not None and not isinstance(function_name, str):
        raise InputError(f"The 'function_name' parameter of {where} must be a string.")
    return function_name if function_name is not None else function_label(func)


def _block_answers(
    records: NDArray[Any],
    func: Callable[[NDArray[Any]], float],
    assignment: NDArray[np.int64],
    k: int,
    b: Bounds,
    on_error: str,
) -> NDArray[np.float64]:
    """``func`` of every block, clipped to the bounds; the midpoint where it fails. The
    warnings ``func`` raises on a block (numpy's "divide by zero", say) are dropped: which
    blocks warn can turn on one record, as which blocks fail can."""
    order = np.argsort(assignment, kind="stable")
    starts = np.searchsorted(assignment[order], np.arange(k + 1))
    mid = 0.5 * (b.lower + b.upper)
    answers = np.full(k, mid)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for i in range(k):
            block = records[order[starts[i] : starts[i + 1]]]
            if block.shape[0] == 0:
                continue
            try:
                value = float(func(block))
            except Exception:
                continue
            if not math.isnan(value):  # an infinite answer is clipped like any other
                answers[i] = min(max(value, b.lower), b.upper)
    return answers


def _public_parameters(aggregator: str, label: str, k: int, b: Bounds) -> dict[str, Any]:
    """The receipt's public description: aggregator, function name, k and the bounds."""
    return {
        "aggregator": aggregator,
        "function": label,
        "blocks": k,
        "lower": b.lower,
        "upper": b.upper,
    }


@dataclass(frozen=True, kw_only=True)
class _Aggregation:
    """The public parameters of the private aggregation of the block answers."""

    bounds: Bounds
    k: int
    epsilon: float
    delta: float
    neighbours: Neighbours
    source: RandomSource
    params: dict[str, Any]


def _aggregate_mean(answers: NDArray[np.float64], aggregation: _Aggregation) -> Release:
    b, k, eps, source = aggregation.bounds, aggregation.k, aggregation.epsilon, aggregation.source
    # the mean of the clipped block answers, exactly rounded, with its sensitivity
    # w/k (exact, rounded up once) inflated by twice the mean's proven error
    aggregate = Mean(b.lower, b.upper)
    sensitivity = inflated_sensitivity((exact(b.upper) - exact(b.lower)) / k, aggregate)
    out = LaplaceMechanism(sensitivity, eps).release(
        aggregate._value_exact(aggregate.clip(answers)), source
    )
    value = float(min(max(out.value, b.lower), b.upper))
    return Release(
        value,
        False,
        eps,
        0.0,
        "sample-aggregate",
        "laplace",
        out.scale,
        aggregation.neighbours,
        "sample-aggregate mean",
        source.seeded,
        None,
        aggregation.params,
    )


def _aggregate_median(
    answers: NDArray[np.float64], aggregation: _Aggregation, noise: str | None
) -> Release:
    b, source = aggregation.bounds, aggregation.source
    median = Median(b.lower, b.upper)
    call = MethodCall(
        records=median.clip(answers),
        statistic=median,
        epsilon=aggregation.epsilon,
        delta=aggregation.delta,
        neighbours="substitute",
        rng=source,
    )
    # no interval: the aggregate differs from f(x) by more than the noise
    inner = release_smooth(call, noise=noise, with_interval=False)
    return Release(
        inner.value,
        False,
        inner.epsilon,
        inner.delta,
        "sample-aggregate",
        inner.noise,
        None,
        aggregation.neighbours,
        "sample-aggregate median",
        source.seeded,
        inner.rho,
        # no interval: the estimate differs from f(x) by more than the noise
        {**{k: v for k, v in inner.parameters.items() if k != "interval"}, **aggregation.params},
    )
