r"""Clopper–Pearson intervals and the Bonferroni-corrected verdict of the audits.

:func:`clopper_pearson` bounds each event's probability; :func:`_judge` (package-private)
compares the bounds under ``x`` and ``x'`` with the claim,
:math:`\underline{P}_x(E) - e^{\varepsilon}\, \overline{P}_{x'}(E) > \delta`, over a
family of events, for :func:`~dpsense.audit.histogram_audit` and
:func:`~dpsense.audit.catastrophe_test`. ``docs/audit.md`` derives the bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpsense.errors import InputError, Param
from dpsense.params import check_int, check_probability

__all__ = ["clopper_pearson"]

_MAX_LOG: Final = 700.0
"""``exp`` of anything larger overflows float64; ``e^epsilon`` is capped here."""


# ----------------------------------------------------------------------------- statistics


def _headline(passed: bool, alpha: float) -> tuple[str, str]:
    """The verdict (PASSED or FAILED) and the confidence (``1 - alpha``, in %) that a
    test's summary opens with."""
    return ("PASSED" if passed else "FAILED"), f"{100 * (1 - alpha):g}%"


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
    k = _check_counts(count, trials, where)
    kf = k.astype(np.float64)
    # Evaluate the Beta quantiles only where they are defined (shape parameters > 0).
    safe_lo = np.maximum(kf, 1.0)
    safe_hi = np.minimum(kf, trials - 1.0)
    from scipy import stats  # loaded on first use: it costs most of a CLI start

    lower = np.where(k > 0, stats.beta.ppf(level / 2, safe_lo, trials - safe_lo + 1.0), 0.0)
    upper = np.where(k < trials, stats.beta.isf(level / 2, safe_hi + 1.0, trials - safe_hi), 1.0)
    return np.asarray(lower, dtype=np.float64), np.asarray(upper, dtype=np.float64)


def _check_counts(count: ArrayLike, trials: int, where: str) -> NDArray[Any]:
    """``count`` as an array of integers in ``[0, trials]``."""
    k = np.asarray(count)
    if k.dtype.kind not in "iu" or np.any(k < 0) or np.any(k > trials):
        raise InputError(
            Param("count", of=where),
            f" must hold integers in [0, n={trials}]. "
            "Got values outside that range or of a non-integer type instead.",
        )
    return k


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
