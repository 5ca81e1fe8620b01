r"""Histogram audit of a mechanism on one pair of neighbouring datasets (Ding et al. 2018).

The audit draws many outputs of the mechanism on ``x`` and on its neighbour ``x'``,
sorts them into events fixed in advance (bins, and for approximate DP also the tails),
and bounds each event's probability under ``x`` and ``x'`` with Clopper–Pearson
intervals, made simultaneous by a Bonferroni correction. An event whose probabilities
are *certainly* (up to probability ``alpha``) too far apart,

.. math:: \underline{P}_x(E) - e^{\varepsilon}\, \overline{P}_{x'}(E) > \delta,

is a proof that the mechanism is not :math:`(\varepsilon, \delta)`-DP. The converse does
not hold: a passed audit only means that no violation was found. ``docs/audit.md``
derives the bound.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from dpsense.errors import InputError
from dpsense.params import check_delta, check_epsilon, check_int, check_probability

__all__ = ["AuditResult", "Sampler", "clopper_pearson", "histogram_audit"]

Sampler = Callable[[int], ArrayLike]
"""``sampler(n)`` returns ``n`` independent outputs of a mechanism on one fixed dataset."""

Outputs = NDArray[np.float64] | NDArray[np.int64]
FloatArray = NDArray[np.float64]

DEFAULT_BINS: Final = 40
"""Number of quantile bins of continuous outputs when ``bins`` is not given."""
MAX_DISCRETE_VALUES: Final = 512
"""Integer outputs with at most this many distinct pilot values get one bin per value."""
_MIN_PILOT: Final = 2_000
"""Smallest pilot sample per dataset (capped at ``n``)."""
_PILOT_PER_BIN: Final = 250
"""Pilot outputs per dataset per requested bin, so quantile edges are stable."""
_MAX_LOG: Final = 700.0
"""``exp`` of anything larger overflows float64; ``e^epsilon`` is capped here."""


# ----------------------------------------------------------------------------- statistics


def clopper_pearson(
    count: ArrayLike, n: int, alpha: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    r"""Two-sided Clopper–Pearson confidence interval for a binomial proportion.

    For ``count`` successes in ``n`` trials the interval is

    .. math::

        \underline{p} = B^{-1}\!\left(\tfrac{\alpha}{2};\, k,\, n - k + 1\right), \qquad
        \overline{p} = B^{-1}\!\left(1 - \tfrac{\alpha}{2};\, k + 1,\, n - k\right),

    with :math:`\underline{p} = 0` when :math:`k = 0` and :math:`\overline{p} = 1` when
    :math:`k = n`; :math:`B^{-1}(q; a, b)` is the quantile function of the Beta(a, b)
    distribution. Each side fails with probability at most :math:`\alpha / 2`, for every
    true proportion, so the interval is conservative (exact coverage >= 1 - alpha). At
    :math:`k = 0` the upper end is :math:`1 - (\alpha/2)^{1/n}`.

    Parameters
    ----------
    count : array_like of int
        Numbers of successes, each in ``[0, n]``.
    n : int
        Number of trials (at least 1).
    alpha : float
        Level: the interval covers the true proportion with probability >= 1 - alpha.

    Returns
    -------
    lower, upper : ndarray of float
        The interval ends, with the shape of ``count``.

    References
    ----------
    Clopper and Pearson, "The use of confidence or fiducial limits illustrated in the
    case of the binomial", Biometrika 26(4), 1934, pp. 404–413.

    Examples
    --------
    >>> lower, upper = clopper_pearson([0, 50, 100], 100, 0.05)
    >>> [round(float(v), 4) for v in upper]
    [0.0362, 0.6017, 1.0]
    """
    where = "clopper_pearson"
    trials = check_int(n, "n", where=where, minimum=1)
    level = check_probability(alpha, "alpha", where=where)
    k = np.asarray(count)
    if k.dtype.kind not in "iu" or np.any(k < 0) or np.any(k > trials):
        raise InputError(
            f"The 'count' parameter of {where} must hold integers in [0, n={trials}]. "
            "Got values outside that range or of a non-integer type instead."
        )
    kf = k.astype(np.float64)
    # Evaluate the Beta quantiles only where they are defined (shape parameters > 0).
    safe_lo = np.maximum(kf, 1.0)
    safe_hi = np.minimum(kf, trials - 1.0)
    lower = np.where(k > 0, stats.beta.ppf(level / 2, safe_lo, trials - safe_lo + 1.0), 0.0)
    upper = np.where(k < trials, stats.beta.isf(level / 2, safe_hi + 1.0, trials - safe_hi), 1.0)
    return np.asarray(lower, dtype=np.float64), np.asarray(upper, dtype=np.float64)


def _exp_epsilon(epsilon: float) -> float:
    return math.exp(min(epsilon, _MAX_LOG))


@dataclass(frozen=True)
class _Judgement:
    """The verdict on a family of events, for one or both directions."""

    epsilon_lower_bound: float
    delta_excess: float
    worst: int  # index of the worst event
    direction: str
    events_tested: int


def _judge(
    counts_x: NDArray[np.int64],
    counts_y: NDArray[np.int64],
    n: int,
    *,
    epsilon: float,
    delta: float,
    alpha: float,
    both_directions: bool,
    prefer: str,
) -> _Judgement:
    """Bonferroni-corrected Clopper–Pearson verdict over events with the given counts.

    ``prefer`` chooses the worst event: ``"ratio"`` (the one giving the epsilon lower
    bound) or ``"excess"`` (the one with the largest delta excess).
    """
    directions = [("x over x'", counts_x, counts_y)]
    if both_directions:
        directions.append(("x' over x", counts_y, counts_x))
    # m probabilities are bounded, each by a two-sided interval at level alpha / m.
    m = counts_x.shape[0] * len(directions)
    growth = _exp_epsilon(epsilon)
    best_ratio, best_excess = -math.inf, -math.inf
    ratio_at = excess_at = (0, directions[0][0])
    for name, c_num, c_den in directions:
        lower, _ = clopper_pearson(c_num, n, alpha / m)
        _, upper = clopper_pearson(c_den, n, alpha / m)
        excess = lower - growth * upper - delta
        i = int(np.argmax(excess))
        if excess[i] > best_excess:
            best_excess, excess_at = float(excess[i]), (i, name)
        usable = lower > delta
        if np.any(usable):
            ratio = np.full(lower.shape, -math.inf)
            ratio[usable] = np.log(lower[usable] - delta) - np.log(upper[usable])
            j = int(np.argmax(ratio))
            if ratio[j] > best_ratio:
                best_ratio, ratio_at = float(ratio[j]), (j, name)
    if prefer == "ratio" and best_ratio > -math.inf:
        worst, direction = ratio_at
    else:
        worst, direction = excess_at
    return _Judgement(
        epsilon_lower_bound=max(best_ratio, 0.0),
        delta_excess=best_excess,
        worst=worst,
        direction=direction,
        events_tested=m,
    )


# ----------------------------------------------------------------------------- sampling


def _fail(name: str, where: str, expected: str, got: object) -> InputError:
    return InputError(f"The '{name}' parameter of {where} must be {expected}. Got {got!r} instead.")


def _check_sampler(sampler: object, name: str, where: str) -> Sampler:
    if not callable(sampler):
        raise _fail(name, where, "a callable that takes n and returns n outputs", sampler)
    return cast(Sampler, sampler)


def _draw(sampler: Sampler, n: int, name: str, where: str) -> Outputs:
    """Call ``sampler(n)`` and check it returned ``n`` finite numbers in a 1-D array."""
    result = sampler(n)
    try:
        out = np.asarray(result)
    except (TypeError, ValueError) as exc:
        raise InputError(
            f"The '{name}' parameter of {where} must return a 1-D numeric array of n={n} "
            f"outputs; its result could not be read as an array ({type(exc).__name__})."
        ) from exc
    if out.dtype.kind not in "biuf":
        raise InputError(
            f"The '{name}' parameter of {where} must return a 1-D array of numbers. "
            f"Got an array of dtype {out.dtype} instead; return floats or integers."
        )
    if out.shape != (n,):
        raise InputError(
            f"The '{name}' parameter of {where} must return a 1-D array of n={n} outputs. "
            f"Got an array of shape {out.shape} instead; it must honour its argument n."
        )
    if out.dtype.kind == "f":
        finite = np.isfinite(out)
        if not np.all(finite):
            bad = int(np.count_nonzero(~finite))
            raise InputError(
                f"The '{name}' parameter of {where} must return finite outputs. Got {bad} "
                f"NaN or infinite values among {n} instead; an audit needs finite outputs."
            )
        return np.asarray(out, dtype=np.float64)
    return np.asarray(out, dtype=np.int64)


def _common(arrays: list[Outputs]) -> list[Outputs]:
    """All integer (int64) if every array is integer, otherwise all float64."""
    if all(a.dtype.kind == "i" for a in arrays):
        return arrays
    return [np.asarray(a, dtype=np.float64) for a in arrays]


# ----------------------------------------------------------------------------- binning


@dataclass(frozen=True)
class _Bins:
    """An ordered partition of the real line by ``edges``: bin i is [e_{i-1}, e_i).

    Bin 0 is ``(-inf, e_0)`` and the last bin ``[e_{-1}, inf)``.
    """

    edges: Outputs
    integer: bool

    @property
    def count(self) -> int:
        return int(self.edges.shape[0]) + 1

    def histogram(self, outputs: Outputs) -> NDArray[np.int64]:
        index = np.searchsorted(self.edges, outputs, side="right")
        return np.bincount(index, minlength=self.count).astype(np.int64)

    def _text(self, value: Any) -> str:
        return str(int(value)) if self.integer else f"{float(value):.6g}"

    def _is_successor(self, i: int) -> bool:
        """Whether edge i is the successor of edge i - 1 (the bin between holds one value)."""
        if i <= 0:
            return False
        return bool(self.edges[i] == _successor(self.edges[i - 1 : i], self.integer)[0])

    def _from(self, i: int) -> str:
        """Text for 'outputs at or above edge i'."""
        if not self.integer and self._is_successor(i):
            return f"> {self._text(self.edges[i - 1])}"
        return f">= {self._text(self.edges[i])}"

    def _below(self, i: int) -> str:
        """Text for 'outputs below edge i'."""
        if not self.integer and self._is_successor(i):
            return f"<= {self._text(self.edges[i - 1])}"
        return f"< {self._text(self.edges[i])}"

    def bin_label(self, b: int) -> str:
        last = self.count - 1
        if b == 0:
            return f"tail {self._below(0)}"
        if b == last:
            return f"tail {self._from(last - 1)}"
        if self._is_successor(b):
            return f"value {self._text(self.edges[b - 1])}"
        upper = self._text(self.edges[b])
        if not self.integer and self._is_successor(b - 1):
            return f"bin ({self._text(self.edges[b - 2])}, {upper})"
        return f"bin [{self._text(self.edges[b - 1])}, {upper})"

    def prefix_label(self, length: int) -> str:
        return f"tail {self._below(length - 1)}"

    def suffix_label(self, start: int) -> str:
        return f"tail {self._from(start - 1)}"


def _successor(values: NDArray[Any], integer: bool) -> NDArray[Any]:
    if integer:
        return np.asarray(values + 1, dtype=np.int64)
    return np.asarray(np.nextafter(values, np.inf), dtype=np.float64)


def _make_bins(pilot: Outputs, bins: int) -> _Bins:
    """Bin edges from the pooled pilot sample only (never from the tested outputs).

    Integer outputs with few distinct values get one bin per value. Otherwise the edges
    are the pilot's ``bins``-quantiles, and values that carry a lump of probability (any
    repeated float, or an integer holding a whole quantile bin) get a bin of their own,
    so that a point mass, such as a mechanism that adds no noise, is tested as an event.
    """
    integer = pilot.dtype.kind == "i"
    values, counts = np.unique(pilot, return_counts=True)
    if integer and values.shape[0] <= MAX_DISCRETE_VALUES:
        atoms = values
        quantile_edges = values[:0]
    else:
        levels = np.arange(1, bins) / bins
        quantile_edges = np.quantile(pilot, levels, method="inverted_cdf")
        heavy = 2 if not integer else max(2, math.ceil(pilot.shape[0] / bins))
        candidates = np.flatnonzero(counts >= heavy)
        # the `bins` heaviest lumps, so rounded outputs cannot multiply the events
        order = candidates[np.argsort(-counts[candidates], kind="stable")][:bins]
        atoms = values[np.sort(order)]
    if integer:
        atoms = atoms[atoms < np.iinfo(np.int64).max]
    merged = np.unique(np.concatenate([quantile_edges, atoms, _successor(atoms, integer)]))
    edges: Outputs = merged.astype(np.int64) if integer else merged.astype(np.float64)
    return _Bins(edges=edges, integer=integer)


def _pilot_size(n: int, bins: int) -> int:
    return min(n, max(_MIN_PILOT, _PILOT_PER_BIN * bins))


# ----------------------------------------------------------------------------- the audit


@dataclass(frozen=True)
class AuditResult:
    r"""The outcome of :func:`histogram_audit`.

    Attributes
    ----------
    passed : bool
        False if the audit found a violation of the claim: with probability at least
        ``1 - alpha`` a mechanism that satisfies the claim passes. True proves nothing.
    epsilon_lower_bound : float
        A ``1 - alpha`` lower confidence bound on the smallest epsilon for which the
        mechanism is (epsilon, ``claimed_delta``)-DP on this pair of datasets:
        :math:`\max_E \ln\big((\underline{P}_x(E) - \delta) / \overline{P}_{x'}(E)\big)`
        over the events and directions tested (0 if no event gives evidence).
    claimed_epsilon, claimed_delta : float
        The privacy claim under audit.
    worst_event : str
        The most violating event, e.g. ``"bin [1.25, 1.5)"``, ``"value 3"`` or
        ``"tail >= 2.1"``: under pure DP the event that gives ``epsilon_lower_bound``,
        under approximate DP the one with the largest ``delta_excess``.
    direction : str
        ``"x over x'"`` if the worst event is more likely under ``x`` than ``x'`` allows,
        ``"x' over x"`` for the reverse.
    n : int
        Outputs drawn on each dataset (besides the pilot sample used for the bin edges).
    alpha : float
        Probability that a mechanism which satisfies the claim fails the audit (at most).
    delta_excess : float
        :math:`\max_E \underline{P}_x(E) - e^{\varepsilon}\overline{P}_{x'}(E) - \delta`
        over events and directions; positive exactly when the audit fails, and negative
        values measure the margin of a pass.
    events_tested : int
        The number ``m`` of probabilities bounded: events times directions (Bonferroni).
    """

    passed: bool
    epsilon_lower_bound: float
    claimed_epsilon: float
    claimed_delta: float
    worst_event: str
    direction: str
    n: int
    alpha: float
    delta_excess: float
    events_tested: int

    def __str__(self) -> str:
        verdict = "PASSED" if self.passed else "FAILED"
        confidence = f"{100 * (1 - self.alpha):g}%"
        claim = f"(epsilon={self.claimed_epsilon:g}, delta={self.claimed_delta:g})"
        summary = (
            f"Histogram audit {verdict} for the claim {claim} with n={self.n} outputs on "
            f"each of x and x': the empirical epsilon lower bound is "
            f"{self.epsilon_lower_bound:.4g} at {confidence} confidence (Clopper–Pearson "
            f"intervals, Bonferroni over {self.events_tested} probabilities). The worst "
            f"event is {self.worst_event}, tested as {_compared(self.direction)}. The "
            "largest delta excess over all events (the lower bound of one probability "
            "minus e^epsilon times the upper bound of the other, minus delta) is "
            f"{self.delta_excess:.4g}; a positive excess is a violation."
        )
        if self.passed:
            return summary + (
                " No violation was found; an audit cannot prove that the mechanism is "
                "private, only catch it when it is not."
            )
        return summary + (
            f" The mechanism violates its claim on this pair of datasets (a private "
            f"mechanism fails with probability at most {self.alpha:g})."
        )


def _compared(direction: str) -> str:
    first, second = ("x", "x'") if direction == "x over x'" else ("x'", "x")
    return f"P_{first}(E) against P_{second}(E)"


def histogram_audit(
    sample_x: Sampler,
    sample_y: Sampler,
    *,
    epsilon: float,
    delta: float = 0.0,
    n: int = 200_000,
    bins: int | None = None,
    alpha: float = 0.05,
    both_directions: bool = True,
) -> AuditResult:
    r"""Audit an (epsilon, delta)-DP claim on one pair of neighbouring datasets.

    Draws a pilot sample from both samplers to fix the events, then ``n`` outputs from
    each, and tests every event :math:`E` in both directions:

    .. math::

        \underline{P}_x(E) - e^{\varepsilon}\, \overline{P}_{x'}(E) > \delta
        \quad\Longleftrightarrow\quad
        \ln \frac{\underline{P}_x(E) - \delta}{\overline{P}_{x'}(E)} > \varepsilon,

    where the bounds are Clopper–Pearson intervals at level :math:`1 - \alpha/m` and
    :math:`m` counts every probability bounded (events times directions). By the union
    bound all intervals hold together with probability at least :math:`1 - \alpha`, so a
    mechanism that is :math:`(\varepsilon, \delta)`-DP fails with probability at most
    :math:`\alpha`.

    The events are the bins: one per value for integer outputs with at most 512
    distinct pilot values, otherwise ``bins`` quantile bins of the pooled pilot sample
    with open-ended extreme bins (and a bin of its own for each lump of probability). With
    ``delta > 0`` they also include every tail (union of the first or last bins), since
    for additive noise the event that maximises :math:`P_x(E) - e^\varepsilon P_{x'}(E)`
    is a tail.

    Parameters
    ----------
    sample_x, sample_y : callable
        ``sample_x(k)`` returns ``k`` independent outputs of the mechanism on ``x`` as a
        1-D array of floats or integers; ``sample_y`` the same on the neighbour ``x'``.
    epsilon : float
        Claimed epsilon, in (0, inf).
    delta : float, default 0.0
        Claimed delta, in [0, 1).
    n : int, default 200_000
        Outputs drawn on each dataset (at least 100), besides the pilot sample of
        ``min(n, max(2000, 250 * bins))`` outputs each.
    bins : int, optional
        Number of quantile bins of continuous outputs (at least 2; default 40).
    alpha : float, default 0.05
        Significance level in (0, 1): the probability that a mechanism satisfying the
        claim fails is at most ``alpha``.
    both_directions : bool, default True
        Test ``P_x`` against ``P_x'`` and ``P_x'`` against ``P_x``. With False only the
        first is tested (and the Bonferroni factor halves).

    Returns
    -------
    AuditResult
        Verdict, empirical epsilon lower bound, worst event and delta excess.

    Raises
    ------
    InputError
        If a parameter is out of range, or a sampler does not return ``k`` finite numbers
        in a 1-D array.

    Notes
    -----
    An audit can only find violations. It tests one pair of datasets, finitely many
    events and a violation larger than the sampling error; passing says nothing about
    other pairs, other events or smaller violations.

    References
    ----------
    Clopper and Pearson, Biometrika 26(4), 1934 (the intervals). Ding, Wang, Wang, Zhang
    and Kifer, "Detecting violations of differential privacy", CCS 2018 (auditing by
    event counts on neighbouring inputs). Jagielski, Ullman and Oprea, "Auditing
    differentially private machine learning: how private is private SGD?", NeurIPS 2020,
    Section 3 (Clopper–Pearson lower bounds on epsilon). Dwork and Roth, "The algorithmic
    foundations of differential privacy", 2014, Definition 2.4.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(1)
    >>> result = histogram_audit(
    ...     lambda k: rng.laplace(0.0, 1.0, k),
    ...     lambda k: 1.0 + rng.laplace(0.0, 1.0, k),
    ...     epsilon=1.0,
    ...     n=20_000,
    ... )
    >>> result.passed, result.epsilon_lower_bound <= 1.0
    (True, True)
    """
    where = "histogram_audit"
    sx = _check_sampler(sample_x, "sample_x", where)
    sy = _check_sampler(sample_y, "sample_y", where)
    eps = check_epsilon(epsilon, where=where)
    dlt = check_delta(delta, where=where)
    size = check_int(n, "n", where=where, minimum=100)
    n_bins = DEFAULT_BINS if bins is None else check_int(bins, "bins", where=where, minimum=2)
    level = check_probability(alpha, "alpha", where=where)
    if not isinstance(both_directions, bool | np.bool_):
        raise _fail("both_directions", where, "True or False", both_directions)

    pilot = _pilot_size(size, n_bins)
    pilot_x = _draw(sx, pilot, "sample_x", where)
    pilot_y = _draw(sy, pilot, "sample_y", where)
    out_x = _draw(sx, size, "sample_x", where)
    out_y = _draw(sy, size, "sample_y", where)
    pilot_x, pilot_y, out_x, out_y = _common([pilot_x, pilot_y, out_x, out_y])

    partition = _make_bins(np.concatenate([pilot_x, pilot_y]), n_bins)
    hist_x, hist_y = partition.histogram(out_x), partition.histogram(out_y)
    labels = [partition.bin_label(b) for b in range(partition.count)]
    counts_x, counts_y = [hist_x], [hist_y]
    if dlt > 0.0:
        # tails: the first k bins and the last k bins, 2 <= k < number of bins
        lengths = np.arange(2, partition.count)
        counts_x += [np.cumsum(hist_x)[lengths - 1], np.cumsum(hist_x[::-1])[lengths - 1]]
        counts_y += [np.cumsum(hist_y)[lengths - 1], np.cumsum(hist_y[::-1])[lengths - 1]]
        labels += [partition.prefix_label(int(k)) for k in lengths]
        labels += [partition.suffix_label(partition.count - int(k)) for k in lengths]

    judgement = _judge(
        np.concatenate(counts_x),
        np.concatenate(counts_y),
        size,
        epsilon=eps,
        delta=dlt,
        alpha=level,
        both_directions=bool(both_directions),
        prefer="ratio" if dlt == 0.0 else "excess",
    )
    return AuditResult(
        passed=judgement.delta_excess <= 0.0,
        epsilon_lower_bound=judgement.epsilon_lower_bound,
        claimed_epsilon=eps,
        claimed_delta=dlt,
        worst_event=labels[judgement.worst],
        direction=judgement.direction,
        n=size,
        alpha=level,
        delta_excess=judgement.delta_excess,
        events_tested=judgement.events_tested,
    )
