r"""The Kulesza–Suresh–Wang (KSW) estimator of a fraction, for ratios and means.

Under add-remove neighbours the number of records is private, so a mean is a ratio of two
private quantities. KSW observe that for values :math:`y_i \in [0, 1]` the
two-dimensional query

.. math::

    q(y) = \Big(\sum_i y_i,\; \sum_i (1 - y_i)\Big)

has L1 sensitivity 1 under add-remove (adding or removing :math:`y` changes the two
coordinates by :math:`y` and :math:`1 - y`) and 2 under substitution (replacing
:math:`y` by :math:`y'` changes each coordinate by :math:`|y - y'| \le 1`). One Laplace
release :math:`(\hat s, \hat z) = q(y) + \mathrm{Lap}(\Delta_1/\varepsilon)^2` therefore
costs :math:`\varepsilon` and estimates the fraction

.. math::

    \hat p = \operatorname{clip}\!\Big(\frac{\hat s}{\hat s + \hat z},\, 0,\, 1\Big),
    \qquad \hat p = \tfrac12 \text{ if } \hat s + \hat z \le 0,

which needs no separate budget for the count :math:`n = s + z`. For a ratio ``a / b`` with
per-user contributions :math:`(a_i, 1)`, :math:`a_i \in \{0, 1\}`, the query is
``(a, b - a)``; for a mean of values in ``[lower, upper]`` it is applied to the values
rescaled to ``[0, 1]``. docs/ratios.md derives both sensitivities.

References
----------
Kulesza, Suresh and Wang, "Mean estimation in the add-remove model of differential
privacy", ICML 2024, PMLR 235, pp. 25642–25661 (the simple two-count algorithm; the paper's
optimal version replaces the Laplace noise by its hourglass mechanism). Its use for ratios
follows the "Private ratios" comparison of a published blog post on privately bounding
local sensitivity.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from dpsense._arrays import as_data
from dpsense._docs import NEIGHBOURS_AND_RNG, doc_parts
from dpsense.mechanisms.additive import LaplaceMechanism
from dpsense.methods._release import Release, checked_mean_request
from dpsense.methods.intervals import fraction_parts
from dpsense.neighbours import ADD_REMOVE, Neighbours
from dpsense.noise.rng import RandomSource, resolve_rng
from dpsense.statistics._records import HeldRecords

__all__ = [
    "QUANTA",
    "fractions_of",
    "ksw_draws",
    "ksw_fraction",
    "ksw_mean",
    "ksw_sensitivity",
    "noisy_pairs",
]

FloatArray = NDArray[np.float64]

UNIT_QUANTUM: Final = 2.0**-24
"""Rescaled values are rounded to multiples of this (a per-record map into [0, 1]), and the
two sums are accumulated exactly in integers, whatever the number of records."""
QUANTA: Final = 2**24
_BLOCK: Final = 1 << 30  # a block of 2^30 records sums below 2^54 quanta: exact in int64
SCALE_UNITS: Final = "rescaled [0, 1]"
"""What the ``scale`` of a KSW mean is measured in: the values rescaled to [0, 1]."""


def ksw_sensitivity(neighbours: Neighbours) -> float:
    r"""L1 sensitivity of :math:`(\sum y_i, \sum (1 - y_i))` for :math:`y_i \in [0, 1]`.

    .. math::

        \Delta_1 = \begin{cases} 1 & \text{add-remove} \\ 2 & \text{substitute} \end{cases}

    Parameters
    ----------
    neighbours : {"add-remove", "substitute"}
        The neighbour relation (already validated).

    Returns
    -------
    float
        1.0 under add-remove, 2.0 under substitute.

    References
    ----------
    Kulesza, Suresh and Wang, ICML 2024; derivation in docs/ratios.md §4.
    """
    return 1.0 if neighbours == ADD_REMOVE else 2.0


def ksw_draws(
    ones: float | Fraction,
    zeros: float | Fraction,
    *,
    sensitivity: float,
    epsilon: float,
    source: RandomSource,
    size: int = 1,
) -> tuple[FloatArray, float]:
    r"""``size`` independent KSW estimates of :math:`s / (s + z)` from the counts (s, z).

    Each repetition releases :math:`(s + L_1, z + L_2)` with Laplace noise of scale
    ``sensitivity / epsilon`` (the exact grid Laplace mechanism) and post-processes it to
    :math:`\operatorname{clip}(\hat s/(\hat s + \hat z), 0, 1)`, or 1/2 when
    :math:`\hat s + \hat z \le 0` (a data-independent fallback).

    With ``size = 1`` this is exactly the release made by :func:`ksw_mean` and by
    ``private_ratio(method="ksw")``. With ``size > 1`` (used by the audits) all
    repetitions are noised as one vector, so the grid is finer; each repetition is still
    ``epsilon``-DP for a query of this L1 sensitivity.

    Parameters
    ----------
    ones, zeros : float or Fraction
        The two coordinates :math:`s = \sum y_i` and :math:`z = \sum (1 - y_i)`, exact
        (a Fraction that is not a double is rounded to the noise grid exactly).
    sensitivity : float
        L1 sensitivity of (s, z), from :func:`ksw_sensitivity`.
    epsilon : float
        Privacy parameter of each repetition.
    source : RandomSource
        Source of randomness (already resolved).
    size : int, default 1
        Number of independent repetitions.

    Returns
    -------
    estimates : ndarray of float, shape (size,)
        The clipped fractions.
    scale : float
        The Laplace scale actually used per coordinate (public).
    """
    noisy, scale, _ = noisy_pairs(
        (ones, zeros), sensitivity=sensitivity, epsilon=epsilon, source=source, size=size
    )
    return fractions_of(noisy), scale


def noisy_pairs(
    pair: tuple[float | Fraction, float | Fraction],
    *,
    sensitivity: float,
    epsilon: float,
    source: RandomSource,
    size: int = 1,
) -> tuple[FloatArray, float, float | None]:
    r"""The released pairs :math:`(\hat s, \hat z)` of :func:`ksw_draws` (shape (size, 2)),
    the Laplace scale per coordinate and the noise grid (both public), from the exact pair
    (s, z)."""
    exact = [Fraction(v) for v in pair]
    mechanism = LaplaceMechanism(sensitivity, epsilon)
    if all(Fraction(float(v)) == v for v in exact):
        counts: Any = np.tile(np.array([float(v) for v in exact], dtype=np.float64), size)
    else:  # beyond 2^53 quanta: keep the sums exact (rounded to the grid in integers)
        counts = exact * size
    result = mechanism.release(counts, source)
    noisy = np.asarray(result.value, dtype=np.float64).reshape(size, 2)
    return noisy, float(result.scale), result.grid


def fractions_of(noisy: FloatArray) -> FloatArray:
    """Post-processing: clip(s / (s + z), 0, 1) of each released pair, 1/2 when s + z <= 0."""
    size = noisy.shape[0]
    denominator = noisy[:, 0] + noisy[:, 1]
    positive = denominator > 0.0
    fraction = np.full(size, 0.5)
    fraction[positive] = noisy[positive, 0] / denominator[positive]
    return np.asarray(np.clip(fraction, 0.0, 1.0), dtype=np.float64)


def unit_sums(x: Any, lower: float, upper: float, *, where: str) -> tuple[Fraction, Fraction]:
    """Clip ``x`` to ``[lower, upper]``, rescale to [0, 1] and return (sum y, sum (1 - y)).

    Each rescaled value is rounded to a multiple of :data:`UNIT_QUANTUM` (a per-record map
    into [0, 1], so the sensitivities hold for the rounded values) and both sums are
    accumulated exactly in integers: the pair is exact, for any number of records, and
    the released vector moves by at most its claimed L1 sensitivity between neighbours.
    """
    if isinstance(x, HeldRecords):  # a group kept by its engine: the same exact sums
        ones = x.quanta_sum(lower, upper, QUANTA)
        total = x.size * QUANTA
        return Fraction(ones, QUANTA), Fraction(total - ones, QUANTA)
    values = as_data(x, where=where, allow_empty=True)
    width = upper - lower
    unit = np.clip((np.clip(values, lower, upper) - lower) / width, 0.0, 1.0)
    quanta = np.rint(unit * QUANTA).astype(np.int64)
    ones = sum(int(quanta[i : i + _BLOCK].sum()) for i in range(0, quanta.shape[0], _BLOCK))
    total = int(quanta.shape[0]) * QUANTA
    return Fraction(ones, QUANTA), Fraction(total - ones, QUANTA)


def ksw_fraction(
    pair: tuple[float | Fraction, float | Fraction],
    relation: Neighbours,
    epsilon: float,
    source: RandomSource,
    *,
    span: tuple[float, float],
    value_error: float,
) -> tuple[float, float, dict[str, Any]]:
    """One KSW release of the exact pair (s, z) under ``relation``: the fraction of the
    released pair, the Laplace scale per coordinate and the interval's parts of the
    fraction mapped onto ``span`` (``value_error``: the error of the exact value there).
    The release of :func:`ksw_mean` and of ``private_ratio(method="ksw")``."""
    noisy, scale, grid = noisy_pairs(
        pair, sensitivity=ksw_sensitivity(relation), epsilon=epsilon, source=source
    )
    # the interval reads the released pair (post-processing, docs/intervals.md §2)
    interval = fraction_parts(
        noisy=(float(noisy[0, 0]), float(noisy[0, 1])),
        scale=scale,
        grid=grid,
        span=span,
        value_error=value_error,
    )
    return float(fractions_of(noisy)[0]), scale, interval


@doc_parts(neighbours_and_rng=NEIGHBOURS_AND_RNG)
def ksw_mean(
    x: Any,
    *,
    lower: float,
    upper: float,
    epsilon: float,
    neighbours: str = "add-remove",
    rng: object = None,
) -> Release:
    r"""Pure epsilon-DP mean of bounded data with the Kulesza–Suresh–Wang construction.

    The values are clipped to the public bounds and rescaled to :math:`y_i \in [0, 1]`;
    the vector :math:`(s, z) = (\sum y_i, \sum(1 - y_i))` is released with Laplace noise
    calibrated to its L1 sensitivity, and the estimate is

    .. math::

        \hat\mu = \ell + w \cdot \operatorname{clip}\!\Big(\frac{\hat s}{\hat s + \hat z},
        0, 1\Big), \qquad w = u - \ell,

    or the midpoint :math:`(\ell + u)/2` when :math:`\hat s + \hat z \le 0`. The
    sensitivity is

    .. math::

        \Delta_1 = 1 \text{ (add-remove)}, \qquad \Delta_1 = 2 \text{ (substitute)},

    so the release is :math:`\varepsilon`-DP (Laplace mechanism, then post-processing). The
    count n is never released or used on its own.

    Parameters
    ----------
    x : array_like
        The data (one column). Empty data is allowed: the answer is then noise around the
        midpoint, and nothing reveals that n = 0.
    lower, upper : float
        Public clipping bounds, ``lower < upper``; never inferred from the data.
    epsilon : float
        Privacy parameter in (0, inf).
    <<neighbours_and_rng>>

    Returns
    -------
    Release
        ``method="ksw"``, ``noise="laplace"``, ``statistic="mean"``, ``delta=0``. ``scale``
        is the Laplace scale added to each of the two sums of the values **rescaled to
        [0, 1]** (public), not a scale in the data's units; ``parameters["scale_units"]``
        says so (``"rescaled [0, 1]"``).

    Raises
    ------
    InputError
        For a bad parameter or non-numeric data (messages never contain data values).

    References
    ----------
    Kulesza, Suresh and Wang, "Mean estimation in the add-remove model of differential
    privacy", ICML 2024, PMLR 235. docs/ratios.md §4.

    Examples
    --------
    >>> from dpsense.noise.rng import SeededRandom
    >>> release = ksw_mean([0.2, 0.4, 0.9] * 1000, lower=0.0, upper=1.0, epsilon=1.0,
    ...                    rng=SeededRandom(0))
    >>> abs(release.value - 0.5) < 0.01
    True
    """
    where = "ksw_mean"
    bounds, eps, relation = checked_mean_request(lower, upper, epsilon, neighbours, where)
    span = (bounds.lower, bounds.upper)
    pair = unit_sums(x, *span, where=where)
    source = resolve_rng(rng, where=where)
    # the rescaled records are rounded to 2^-24, so their mean moves by at most w 2^-25
    width = bounds.upper - bounds.lower
    fraction, scale, interval = ksw_fraction(
        pair, relation, eps, source, span=span, value_error=width * UNIT_QUANTUM
    )
    value = min(max(bounds.lower + width * fraction, bounds.lower), bounds.upper)
    return Release(
        value=value,
        refused=False,
        epsilon=eps,
        delta=0.0,
        method="ksw",
        noise="laplace",
        scale=scale,
        neighbours=relation,
        statistic="mean",
        seeded=source.seeded,
        parameters={
            "lower": bounds.lower,
            "upper": bounds.upper,
            "scale_units": SCALE_UNITS,
            "interval": interval,
        },
    )
