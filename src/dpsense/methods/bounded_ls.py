r"""Laplace noise scaled to a privately released upper bound on the local sensitivity.

Theorem (privately bounded local sensitivity, with the inequality the right way round).
Let :math:`g` be an :math:`\varepsilon_1`-DP mechanism such that for every dataset :math:`x`

.. math:: \Pr\big[g(x) \ge LS(f, x)\big] \ge 1 - \delta .

Then releasing :math:`\big(g(x),\; f(x) + \mathrm{Lap}(g(x)/\varepsilon_2)\big)` is
:math:`(\varepsilon_1 + \varepsilon_2, \delta)`-DP. The bound itself is part of the output,
so the noise scale :math:`g(x)/\varepsilon_2` may be published. docs/ratios.md §5 gives the
proof (a sum over the values of :math:`g`, not a conditioning argument on the event
:math:`g \ge LS`).

This module has the general step, :func:`laplace_with_private_bound`, the exact
discrete-Laplace tail used to turn a noisy count into a high-probability bound,
:func:`discrete_laplace_margin`, and the mean instance, :func:`bounded_ls_mean`, which
lower-bounds n privately.

References
----------
A published blog post on privately bounding local sensitivity, Theorem 1 (stated there
with the inequality reversed). Nissim, Raskhodnikova and Smith, "Smooth sensitivity and
sampling in private data analysis", STOC 2007 (local sensitivity). Dwork and Roth, "The
algorithmic foundations of differential privacy", 2014, Theorem 3.16 (composition).
Canonne, Kamath and Steinke, "The discrete Gaussian for differential privacy", NeurIPS 2020,
Algorithm 2 (exact discrete Laplace sampling).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from dpsense._arrays import as_data
from dpsense._docs import NEIGHBOURS_AND_RNG, doc_parts
from dpsense.errors import InputError, Param
from dpsense.mechanisms._common import MechanismResult
from dpsense.mechanisms.additive import DiscreteLaplaceMechanism, LaplaceMechanism
from dpsense.methods._discrete_laplace_tail import (
    discrete_laplace_margin as discrete_laplace_margin,
)
from dpsense.methods._discrete_laplace_tail import discrete_laplace_tail as discrete_laplace_tail
from dpsense.methods._release import Release, accuracy_parameters, checked_mean_request
from dpsense.neighbours import ADD_REMOVE
from dpsense.noise.rng import RandomSource, resolve_rng
from dpsense.params import (
    Bounds,
    check_delta,
    check_epsilon,
    check_finite,
    rest_of_budget,
)
from dpsense.statistics import Mean

__all__ = [
    "DEFAULT_MEAN_BOUND_FRACTION",
    "bounded_ls_mean",
    "bounded_ls_mean_draws",
    "check_bound_fraction",
    "discrete_laplace_margin",
    "discrete_laplace_tail",
    "laplace_with_private_bound",
    "mean_sensitivity_bound",
    "private_lower_bound",
]

FloatArray = NDArray[np.float64]

DEFAULT_MEAN_BOUND_FRACTION: Final = 0.2
"""Share of epsilon that :func:`bounded_ls_mean` spends on the lower bound of n."""

_SCALE_SLACK: Final = 2.0**-40
"""Relative widening of a reported scale before a tail is computed from it (float safety)."""


def check_bound_fraction(value: object, *, where: str) -> float:
    """The share of epsilon spent on the bound: a float in the open interval (0, 1)."""
    fraction = check_finite(value, "bound_fraction", where=where)
    if not 0.0 < fraction < 1.0:
        raise InputError(
            Param("bound_fraction", of=where), f" must be a float in (0, 1). Got {value!r} instead."
        )
    return fraction


def laplace_with_private_bound(
    value: Any, bound: float, *, epsilon: float, rng: object = None
) -> MechanismResult:
    r"""Add :math:`\mathrm{Lap}(g/\varepsilon_2)` to ``value``, where g is a private bound.

    If ``bound`` :math:`= g(x)` was released by an :math:`\varepsilon_1`-DP mechanism with

    .. math:: \Pr\big[g(x) \ge LS(f, x)\big] \ge 1 - \delta \quad \text{for every } x,

    then releasing ``bound`` and the result together is
    :math:`(\varepsilon_1 + \varepsilon_2, \delta)`-DP, with :math:`\varepsilon_2` =
    ``epsilon``. This function is the second step only: it cannot check the first, and it
    accounts for ``epsilon`` alone. The caller composes: the total is
    :math:`(\varepsilon_1 + \varepsilon_2, \delta)`.

    The noise is the exact grid Laplace mechanism with sensitivity g; a vector ``value``
    needs g to bound its L1 local sensitivity.

    Parameters
    ----------
    value : float or array_like
        f(x), computed on the private data.
    bound : float
        The private upper bound g(x) > 0 on the local sensitivity. Zero is refused: a zero
        bound adds no noise, so any error in the caller's bound would publish f(x) exactly.
    epsilon : float
        :math:`\varepsilon_2` in (0, inf).
    rng : None, int, numpy.random.Generator or RandomSource, optional
        Source of randomness (None: the OS CSPRNG).

    Returns
    -------
    MechanismResult
        The noisy value with ``epsilon`` = :math:`\varepsilon_2` and the scale used
        (a function of g, hence publishable).

    References
    ----------
    The bounded-local-sensitivity theorem (corrected:
    :math:`\Pr[g \ge LS] \ge 1 - \delta`); proof in docs/ratios.md §5.
    """
    where = "laplace_with_private_bound"
    eps = check_epsilon(epsilon, where=where)
    g = check_finite(bound, "bound", where=where)
    if not g > 0.0:
        raise InputError(
            Param("bound", of=where),
            f" must be a float in (0, inf). Got {bound!r} "
            "instead; a private sensitivity bound must be positive.",
        )
    return LaplaceMechanism(g, eps).release(value, rng)


def private_lower_bound(
    count: int, *, epsilon: float, delta: float, source: RandomSource, size: int = 1
) -> tuple[NDArray[np.int64], int, float]:
    r"""An epsilon-DP lower bound on a count that exceeds it with probability at most delta.

    .. math::

        \underline{n} = n + Z - T, \qquad Z \sim \mathrm{DLap}(1/\varepsilon), \qquad
        T = \min\Big\{t \in \mathbb{N} : \frac{q^{t+1}}{1 + q} \le \delta\Big\},

    so :math:`\Pr[\underline n > n] = \Pr[Z > T] \le \delta` exactly. A count has
    sensitivity 1 under add-remove, so the noisy count is :math:`\varepsilon`-DP and the
    margin depends only on public parameters.

    Parameters
    ----------
    count : int
        The true count n >= 0.
    epsilon : float
        Privacy parameter of the noisy count.
    delta : float
        Allowed probability that the bound exceeds n.
    source : RandomSource
        Source of randomness (already resolved).
    size : int, default 1
        Number of independent repetitions (for tests); 1 for a release.

    Returns
    -------
    lower : ndarray of int, shape (size,)
        The lower bounds (may be negative).
    margin : int
        T (public).
    scale : float
        The discrete Laplace scale actually used.
    """
    result = DiscreteLaplaceMechanism.for_privacy(1, epsilon).release(
        np.full(size, count, dtype=np.int64), source
    )
    scale = float(result.scale) * (1.0 + _SCALE_SLACK)
    margin = discrete_laplace_margin(scale, delta, two_sided=False)
    noisy = np.asarray(result.value, dtype=np.int64).reshape(size)
    return noisy - margin, margin, float(result.scale)


def _float_pad(lower: float, upper: float) -> float:
    """Twice the proven error of the released mean (``Mean.exact_value_error``, about
    ``2^-52 w``): the computed mean's local sensitivity is at most the exact one plus this.
    """
    return 2.0 * Mean(lower, upper).exact_value_error


def mean_sensitivity_bound(count: int, lower: float, upper: float) -> float:
    r"""Add-remove bound :math:`w / \max(m, 2)` on :math:`LS(\mu, y)` for all y of size >= m.

    Rounded up by a relative :math:`2^{-40}` (the rounding of ``upper - lower`` and of the
    division) plus twice the proven error E of the computed mean
    (:attr:`Mean.exact_value_error`): :math:`LS(\hat\mu, y) \le LS(\mu, y) + 2E`.
    """
    width = upper - lower
    return width / max(count, 2) * (1.0 + _SCALE_SLACK) + _float_pad(lower, upper)


def bounded_ls_mean_draws(
    mean: float | Fraction,
    count: int,
    *,
    lower: float,
    upper: float,
    epsilon_bound: float,
    epsilon_noise: float,
    delta: float,
    source: RandomSource,
    size: int = 1,
) -> tuple[FloatArray, FloatArray, int]:
    r"""``size`` independent add-remove releases of :func:`bounded_ls_mean` from (mean, n).

    Each repetition draws :math:`\underline n` (:func:`private_lower_bound`), sets
    :math:`g = w/\max(\underline n, 2)` (:func:`mean_sensitivity_bound`) and releases
    :math:`\operatorname{clip}(\mu + \mathrm{Lap}(g/\varepsilon_2), \ell, u)` through
    :func:`laplace_with_private_bound`. With ``size = 1`` this is exactly the release of
    :func:`bounded_ls_mean`; with ``size > 1`` (audits) the repetitions that share a value
    of :math:`\underline n` are noised as one vector (finer grid, each still private).

    Returns
    -------
    values : ndarray of float, shape (size,)
        The released means.
    scales : ndarray of float, shape (size,)
        The Laplace scale of each release (a function of the private bound).
    margin : int
        The public tail margin T.
    """
    values, scales, _, margin = _draws(
        mean, count, (lower, upper), (epsilon_bound, epsilon_noise), delta, source, size
    )
    return values, scales, margin


def _draws(
    mean: float | Fraction,
    count: int,
    bounds: tuple[float, float],
    epsilons: tuple[float, float],
    delta: float,
    source: RandomSource,
    size: int,
) -> tuple[FloatArray, FloatArray, FloatArray, int]:
    """:func:`bounded_ls_mean_draws`, with each draw's noise grid (public: a function of
    the released bound), which its interval needs."""
    lower, upper = bounds
    lows, margin, _ = private_lower_bound(
        count, epsilon=epsilons[0], delta=delta, source=source, size=size
    )
    values = np.empty(size, dtype=np.float64)
    scales = np.empty(size, dtype=np.float64)
    grids = np.empty(size, dtype=np.float64)
    for low in np.unique(lows).tolist():
        chosen = lows == low
        bound = mean_sensitivity_bound(int(low), lower, upper)
        count_chosen = int(np.count_nonzero(chosen))
        repeated: Any = (
            [mean] * count_chosen if isinstance(mean, Fraction) else np.full(count_chosen, mean)
        )
        result = laplace_with_private_bound(repeated, bound, epsilon=epsilons[1], rng=source)
        values[chosen] = result.value
        scales[chosen] = result.scale
        grids[chosen] = result.grid
    return np.clip(values, lower, upper), scales, grids, margin


@doc_parts(neighbours_and_rng=NEIGHBOURS_AND_RNG)
def bounded_ls_mean(
    x: Any,
    *,
    lower: float,
    upper: float,
    epsilon: float,
    delta: float,
    bound_fraction: float = DEFAULT_MEAN_BOUND_FRACTION,
    neighbours: str = "add-remove",
    rng: object = None,
) -> Release:
    r"""Mean of bounded data with Laplace noise scaled to a private bound on its sensitivity.

    *Add-remove* (n private). Spend :math:`\varepsilon_1 = f\varepsilon` (``bound_fraction``
    f) on a private lower bound of n and :math:`\varepsilon_2 = \varepsilon - \varepsilon_1`
    on the mean:

    .. math::

        \underline n = n + \mathrm{DLap}(1/\varepsilon_1) - T, \qquad
        g = \frac{w}{\max(\underline n, 2)}, \qquad
        \hat\mu = \operatorname{clip}\big(\mu(x) + \mathrm{Lap}(g/\varepsilon_2),\,
        \ell, u\big),

    with T the exact one-sided discrete-Laplace margin, so that
    :math:`\Pr[\underline n > n] \le \delta`. For data in :math:`[\ell, u]`,
    :math:`w = u - \ell`, the local sensitivity of the mean satisfies
    :math:`LS(\mu, x) \le w / \max(n, 2)` (docs/sensitivity.md §4), which is non-increasing
    in n; hence :math:`\underline n \le n` implies :math:`g \ge LS(\mu, x)`, and the corrected
    Theorem 1 gives :math:`(\varepsilon, \delta)`-DP. Since :math:`g \le w/2 = GS`, no
    fall-back is needed. The scale :math:`g/\varepsilon_2` is a post-processing of the
    private :math:`\underline n`, so it is reported in ``Release.scale``.

    *Substitute* (n public). :math:`LS(\mu, x) \le w / n` is public, so the whole budget goes
    to :math:`\mu(x) + \mathrm{Lap}(w/(n\varepsilon))`; the guarantee is pure
    (:math:`\delta = 0` is reported) and no budget is spent on the bound.

    The mean of empty data is the midpoint :math:`(\ell + u)/2` by convention. The mean is
    computed as the exact rational :math:`c + \mathrm{fsum}(x - c)/n` (within
    :math:`E \approx 2^{-52} w` of the real mean, docs/sensitivity.md) and rounded to the
    noise grid exactly; the bound is rounded up by a relative :math:`2^{-40}` plus 2E so that
    it covers the local sensitivity of the computed mean.

    Parameters
    ----------
    x : array_like
        The data (one column); empty data is allowed.
    lower, upper : float
        Public clipping bounds, ``lower < upper``.
    epsilon : float
        Total privacy parameter in (0, inf).
    delta : float
        In (0, 1) under add-remove (the probability that the bound on n fails); in [0, 1)
        under substitute, where it is not used.
    bound_fraction : float, default 0.2
        Share of epsilon spent on the lower bound of n, in (0, 1) (add-remove only).
    <<neighbours_and_rng>>

    Returns
    -------
    Release
        ``method="bounded-ls"``, ``noise="laplace"``, ``statistic="mean"``; ``scale`` is the
        Laplace scale of the noise on the mean.

    Raises
    ------
    InputError
        For a bad parameter (including delta = 0 under add-remove) or non-numeric data.

    References
    ----------
    The bounded-local-sensitivity theorem (corrected) and its mean instance, which
    lower-bounds n privately; docs/ratios.md §5–6; docs/sensitivity.md §4 for the bound.

    Examples
    --------
    >>> from dpsense.noise.rng import SeededRandom
    >>> release = bounded_ls_mean([0.25, 0.75] * 5000, lower=0.0, upper=1.0, epsilon=1.0,
    ...                           delta=1e-6, rng=SeededRandom(0))
    >>> abs(release.value - 0.5) < 0.01
    True
    """
    where = "bounded_ls_mean"
    bounds, eps, relation = checked_mean_request(lower, upper, epsilon, neighbours, where)
    dlt = check_delta(delta, where=where, positive=relation == ADD_REMOVE)
    fraction = check_bound_fraction(bound_fraction, where=where)
    values = np.clip(as_data(x, where=where, allow_empty=True), bounds.lower, bounds.upper)
    source = resolve_rng(rng, where=where)

    n = int(values.shape[0])
    statistic = Mean(bounds.lower, bounds.upper)
    midpoint = statistic.midpoint
    # the exact rational c + fsum(x - c)/n, within Mean.exact_value_error of the mean
    mean = statistic._value_exact(values)
    if relation == ADD_REMOVE:
        outcome = _add_remove_mean(mean, n, bounds, eps, dlt, fraction, source)
    else:
        outcome = _substitute_mean(mean, n, bounds, eps, midpoint, source)
    return Release(
        value=min(max(outcome.value, bounds.lower), bounds.upper),
        refused=False,
        epsilon=outcome.guarantee[0],
        delta=outcome.guarantee[1],
        method="bounded-ls",
        noise="laplace",
        scale=outcome.scale,
        neighbours=relation,
        statistic="mean",
        seeded=source.seeded,
        parameters=outcome.parameters,
    )


@dataclass(frozen=True)
class _MeanOutcome:
    """The released mean before clipping, its Laplace scale, the guarantee and parameters."""

    value: float
    scale: float | None
    guarantee: tuple[float, float]
    parameters: dict[str, Any]


def _add_remove_mean(
    mean: Fraction,
    n: int,
    bounds: Bounds,
    eps: float,
    dlt: float,
    fraction: float,
    source: RandomSource,
) -> _MeanOutcome:
    """n private: a private lower bound of n, then noise scaled to the bound it implies."""
    eps_bound = fraction * eps
    eps_noise = rest_of_budget(eps, eps_bound)
    draws, scales, grids, margin = _draws(
        mean, n, (bounds.lower, bounds.upper), (eps_bound, eps_noise), dlt, source, 1
    )
    value = float(draws[0])
    scale: float | None = float(scales[0])
    guarantee = (eps, dlt)
    parameters: dict[str, Any] = {
        "bound_fraction": fraction,
        "epsilon_bound": eps_bound,
        "epsilon_noise": eps_noise,
        "tail_margin": margin,
        **_interval_parameters(bounds, float(grids[0])),
    }
    return _MeanOutcome(value, scale, guarantee, parameters)


def _interval_parameters(bounds: Bounds, grid: float | None) -> dict[str, Any]:
    """The released value is the mean plus grid Laplace noise of the released scale, so
    its interval is the value plus or minus that noise's half-width (docs/intervals.md
    §1): the noise grid, the proven error of the computed mean, the mean's range."""
    statistic = Mean(bounds.lower, bounds.upper)
    out: dict[str, Any] = {"interval": {"kind": "noise", "range": (bounds.lower, bounds.upper)}}
    if grid is not None:
        out.update(accuracy_parameters(statistic, grid))
    return out


def _substitute_mean(
    mean: Fraction, n: int, bounds: Bounds, eps: float, midpoint: float, source: RandomSource
) -> _MeanOutcome:
    """n public: the whole budget on the mean, with noise scaled to w/n."""
    width = bounds.upper - bounds.lower
    parameters: dict[str, Any] = {
        "bound_fraction": 0.0,
        "sensitivity_bound": "w/n with n public (substitute): no budget spent on it",
    }
    guarantee = (eps, 0.0)
    scale: float | None
    if n == 0:  # the public convention, exactly: an interval of one point
        value, scale = midpoint, 0.0
        parameters["interval"] = {"kind": "noise", "range": (midpoint, midpoint)}
    else:
        # LS <= w/n (n public); w/max(n, 2) would be wrong for n = 1 (LS = w there)
        bound = width / n * (1.0 + _SCALE_SLACK) + _float_pad(bounds.lower, bounds.upper)
        released = LaplaceMechanism(bound, eps).release(mean, source)
        value, scale = float(released.value), float(released.scale)
        parameters.update(_interval_parameters(bounds, released.grid))
    return _MeanOutcome(value, scale, guarantee, parameters)
