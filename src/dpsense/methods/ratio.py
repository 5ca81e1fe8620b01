r"""Private ratios a/b: naive, local-bound (published method, fixed) and Kulesza–Suresh–Wang.

Every user contributes :math:`(a_i, b_i)` with :math:`a_i \le b_i \in \{0, 1\}` (a user
counts towards b, or towards a and b); the statistic is

.. math::

    f(a, b) = \begin{cases} a / b & b \ge 1 \\ 1/2 & b = 0 \end{cases}

(the value 1/2 for the empty case is a data-independent convention). Three methods:

* ``"naive"``: noisy a over noisy b. Under add-remove the vector (a, b) has L1
  sensitivity 2, so each count gets :math:`\mathrm{Lap}(2/\varepsilon)`; under substitute b
  is public and only a is noised, with :math:`\mathrm{Lap}(1/\varepsilon)`.
* ``"local-bound"``: the algorithm of a published blog post with its bugs fixed: spend
  :math:`\varepsilon_1` on noisy counts, turn them into intervals that hold with
  probability :math:`1 - \delta` (exact discrete-Laplace tails, union bound), bound the
  local sensitivity of a/b on those intervals and add Laplace noise scaled to that bound
  with the remaining :math:`\varepsilon_2`; fall back to the naive method with
  :math:`\varepsilon_2` when the lower bound on b is at most 1.
* ``"ksw"`` (default): the two-count estimator of Kulesza, Suresh and Wang on
  :math:`(a, b - a)`, L1 sensitivity 1 under add-remove and 2 under substitute.

All outputs are clipped to [0, 1] (post-processing). docs/ratios.md has the derivations
and the list of that blog post's bugs.

References
----------
A published blog post on privately bounding local sensitivity, "Private ratios" (the naive
and local-bound methods). Kulesza, Suresh and Wang, "Mean estimation in the add-remove model
of differential privacy", ICML 2024.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias

import numpy as np

from dpsense._arrays import as_indicator
from dpsense.errors import Assign, InputError, Name, Param
from dpsense.methods._ratio_estimators import FloatArray as FloatArray
from dpsense.methods._ratio_estimators import (
    _local_bound,
    count_intervals,
    naive_draws,
    ratio_sensitivity_bound,
)
from dpsense.methods._release import Release
from dpsense.methods.bounded_ls import check_bound_fraction
from dpsense.methods.ksw import ksw_fraction
from dpsense.neighbours import ADD_REMOVE, Neighbours, validate_neighbours
from dpsense.noise.rng import RandomSource
from dpsense.params import check_delta, check_epsilon

__all__ = [
    "DEFAULT_BOUND_FRACTION",
    "METHODS",
    "PRIVATE_RATIO_DOC",
    "RatioMethod",
    "count_intervals",
    "naive_draws",
    "ratio_counts",
    "ratio_sensitivity_bound",
    "release_ratio",
]

RatioMethod: TypeAlias = Literal["ksw", "naive", "local-bound"]
METHODS: Final[tuple[RatioMethod, ...]] = ("ksw", "naive", "local-bound")
DEFAULT_BOUND_FRACTION: Final = 0.1
"""Share of epsilon spent on bounding the local sensitivity (the blog post's default)."""


# ----------------------------------------------------------------------------- inputs


def _total(value: object, name: str, where: str) -> int:
    """A non-negative integer total; the message never repeats the value."""
    if isinstance(value, np.ndarray):
        value = value.item()
    if isinstance(value, bool | np.bool_):
        raise InputError(
            f"The '{name}' parameter of {where} must be a non-negative integer total. "
            "Got a boolean instead."
        )
    if isinstance(value, numbers.Integral):
        total = int(value)
    elif isinstance(value, numbers.Real) and math.isfinite(value) and float(value).is_integer():
        total = int(float(value))
    else:
        raise InputError(
            f"The '{name}' parameter of {where} must be a non-negative integer total or a "
            f"per-user array of 0/1 values. Got an object of type {type(value).__name__} "
            "that is not an integer."
        )
    if total < 0:
        raise InputError(
            f"The '{name}' parameter of {where} must be a non-negative integer total. "
            "Got a negative value instead."
        )
    return total


def ratio_counts(a: Any, b: Any, neighbours: Neighbours, *, where: str) -> tuple[int, int]:
    r"""Validate the inputs of a ratio and return the totals (a, b).

    ``a`` and ``b`` are either two non-negative integer totals with ``a <= b`` (trusted to
    come from per-user contributions :math:`(a_i, 1)`, :math:`a_i \in \{0, 1\}`), or two
    per-user arrays of equal length with :math:`a_i, b_i \in \{0, 1\}` and
    :math:`a_i \le b_i`. Under substitute the denominator is the public number of users,
    so every :math:`b_i` must be 1. Messages never contain data values.
    """
    scalar_a, scalar_b = np.ndim(a) == 0, np.ndim(b) == 0
    if scalar_a and scalar_b:
        ones, total = _total(a, "a", where), _total(b, "b", where)
        if ones > total:
            raise InputError(
                f"The totals of {where} must satisfy a <= b (a counts users who are also "
                "counted in b). Got a > b instead; check which total is which."
            )
        return ones, total
    if scalar_a != scalar_b:
        raise InputError(
            f"The 'a' and 'b' parameters of {where} must both be integer totals or both be "
            "per-user arrays. Got one of each instead."
        )
    per_a = as_indicator(a, name="a", where=where)
    per_b = as_indicator(b, name="b", where=where)
    if per_a.shape != per_b.shape:
        raise InputError(
            f"The per-user arrays 'a' and 'b' of {where} must have the same length "
            "(one entry per user in each)."
        )
    if np.any(per_a > per_b):
        raise InputError(
            f"The per-user arrays of {where} must satisfy a_i <= b_i (a user counted in a "
            "is also counted in b), but some users have a_i = 1 and b_i = 0."
        )
    if neighbours != ADD_REMOVE and not np.all(per_b == 1.0):
        raise InputError(
            f"Under substitute neighbours the denominator of {where} is the public number "
            "of users, so every b_i must be 1. Drop the users outside the denominator "
            "before the release, or use ",
            Assign("neighbours", "add-remove", quoted=True),
            ".",
        )
    return int(np.count_nonzero(per_a)), int(np.count_nonzero(per_b))


def _check_method(method: object, where: str) -> RatioMethod:
    for name in METHODS:
        if method == name:
            return name
    raise InputError(
        Param("method", of=where),
        f" must be one of 'ksw', 'naive' or 'local-bound'. Got {method!r} instead.",
    )


def _bound_fraction(options: Mapping[str, object], method: RatioMethod, where: str) -> float:
    unknown = sorted(set(options) - {"bound_fraction"})
    if unknown:
        raise InputError(
            f"{where} got unexpected option(s) {', '.join(map(repr, unknown))}; the only "
            "option is ",
            Name("bound_fraction", quoted=True),
            " (",
            Assign("method", "local-bound", quoted=True),
            ").",
        )
    if "bound_fraction" not in options:
        return DEFAULT_BOUND_FRACTION
    if method != "local-bound":
        raise InputError(
            Param("bound_fraction", word="option", of=where),
            " applies only to ",
            Assign("method", "local-bound", quoted=True),
            ". Got it with ",
            Assign.of("method", method),
            "; remove it.",
        )
    return check_bound_fraction(options["bound_fraction"], where=where)


# ----------------------------------------------------------------------------- front door


PRIVATE_RATIO_DOC = r"""A differentially private estimate of the ratio a/b, clipped to [0, 1].

    Users contribute :math:`(a_i, b_i)` with :math:`a_i \le b_i`, both in {0, 1}; the
    ratio of no users (b = 0) is 1/2 by convention.

    ``method="ksw"`` (pure :math:`\varepsilon`):

    .. math::

        (\hat s, \hat z) = (a, b - a) + \mathrm{Lap}(\Delta/\varepsilon)^2, \quad
        \hat r = \operatorname{clip}\Big(\frac{\hat s}{\hat s + \hat z}, 0, 1\Big),
        \quad \Delta = 1 \text{ (add-remove)},\; 2 \text{ (substitute)}.

    ``method="naive"`` (pure :math:`\varepsilon`): add-remove
    :math:`\hat r = \operatorname{clip}(\hat a / \hat b, 0, 1)` with
    :math:`\mathrm{Lap}(2/\varepsilon)` on each count; substitute (b public)
    :math:`\hat r = \operatorname{clip}((a + \mathrm{Lap}(1/\varepsilon))/b, 0, 1)`.

    ``method="local-bound"`` (:math:`(\varepsilon, \delta)`, add-remove): with
    :math:`\varepsilon_1 = f\varepsilon` (``bound_fraction`` f, default 0.1 as in the blog post)
    and :math:`\varepsilon_2 = \varepsilon - \varepsilon_1`,

    .. math::

        \hat a = a + \mathrm{DLap}(2/\varepsilon_1), \quad
        \hat b = b + \mathrm{DLap}(2/\varepsilon_1), \quad
        T = \min\Big\{t : \frac{2 q^{t+1}}{1 + q} \le \frac{\delta}{2}\Big\},\;
        q = e^{-\varepsilon_1/2},

    intervals :math:`\hat a \pm T`, :math:`\hat b \pm T` (both hold with probability
    :math:`\ge 1 - \delta`), a bound g on :math:`LS(a/b)` over them
    (:func:`ratio_sensitivity_bound`) and :math:`\hat r = \operatorname{clip}(a/b +
    \mathrm{Lap}(g/\varepsilon_2), 0, 1)`; if :math:`b_\ell = \hat b - T \le 1` the naive
    method runs on (a, b) with :math:`\varepsilon_2`. Total :math:`(\varepsilon_1 +
    \varepsilon_2, \delta)`. Under substitute b is public and :math:`LS = 1/b` exactly, so
    the method *is* the naive one (pure :math:`\varepsilon`, no budget spent on a bound).

    Parameters
    ----------
    a, b : int or array_like
        Two non-negative integer totals with ``a <= b`` — trusted to come from per-user
        contributions :math:`(a_i \in \{0, 1\}, 1)`; the guarantee is per user only then —
        or two per-user 0/1 arrays of equal length with :math:`a_i \le b_i`. Under
        substitute every :math:`b_i` must be 1 (b is the public number of users).
    epsilon : float
        Privacy parameter in (0, inf).
    delta : float, default 0.0
        In [0, 1); ``method="local-bound"`` under add-remove needs delta > 0. The pure
        methods report delta = 0 whatever is passed.
    method : {"ksw", "naive", "local-bound"}, default "ksw"
        The estimator.
    neighbours : {"add-remove", "substitute"}, default "add-remove"
        The neighbour relation.
    rng : None, int, numpy.random.Generator or RandomSource, optional
        None uses the OS CSPRNG; a seed is reproducible but insecure (it warns, and the
        release is marked ``seeded``).
    **options
        ``bound_fraction`` (float in (0, 1), default 0.1): the share of epsilon spent on
        bounding the local sensitivity; only with ``method="local-bound"``.

    Returns
    -------
    Release
        ``statistic="ratio"``, ``noise="laplace"``. ``scale`` is the Laplace scale added to
        each noised count for ``"naive"`` and ``"ksw"`` (public); for ``"local-bound"``
        under add-remove it is None (the scale of its final noise is itself a private
        output and is not reported); under substitute it is the scale on a.
        ``parameters`` holds the budget split and the tail margin T (all public).

    Raises
    ------
    InputError
        For a bad parameter, an unknown method or option, ``method="local-bound"`` without
        delta under add-remove, negative totals, a > b, or per-user values that are not
        0/1 with :math:`a_i \le b_i`. Messages never contain data values.

    References
    ----------
    A published blog post on privately bounding local sensitivity (naive and local-bound
    methods; its bugs and their fixes are listed in docs/ratios.md §7). Kulesza, Suresh and
    Wang, "Mean estimation in the add-remove model of differential privacy", ICML 2024.
    Dwork and Roth 2014, Theorem 3.16 (composition).

    Examples
    --------
    >>> from dpsense.noise.rng import SeededRandom
    >>> release = private_ratio(3000, 10000, epsilon=1.0, rng=SeededRandom(0))
    >>> release.method, abs(release.value - 0.3) < 0.01
    ('ksw', True)
    """
"""The docstring of ``dpsense.private_ratio`` (``query/one_step.py``, the door that
releases through the pipeline): the method's math, beside its code."""

RatioArgs: TypeAlias = tuple[float, float, RatioMethod, Neighbours, float]
"""The checked request of :func:`private_ratio` (:func:`check_ratio_request`)."""


def release_ratio(a: Any, b: Any, checked: RatioArgs, source: RandomSource) -> Release:
    """The estimate of :func:`private_ratio` on (a, b), its request checked."""
    eps, dlt, chosen, relation, fraction = checked
    ones, total = ratio_counts(a, b, relation, where="private_ratio")
    estimate = _estimate(chosen, ones, total, relation, eps, dlt, fraction, source)
    return Release(
        value=estimate.value,
        refused=False,
        epsilon=eps,
        delta=estimate.delta,
        method=chosen,
        noise="laplace",
        scale=estimate.scale,
        neighbours=relation,
        statistic="ratio",
        seeded=source.seeded,
        parameters=estimate.parameters,
    )


def check_ratio_request(
    epsilon: object, delta: object, method: object, neighbours: object, options: dict[str, Any]
) -> RatioArgs:
    """The checked request of :func:`private_ratio` (epsilon, delta, method, neighbours,
    bound fraction): everything but the data, so that a caller can refuse a bad request
    before it reads a column (what an invalid request says never depends on the data)."""
    where = "private_ratio"
    eps = check_epsilon(epsilon, where=where)
    dlt = check_delta(delta, where=where)
    chosen = _check_method(method, where)
    relation = validate_neighbours(neighbours, where=where)
    fraction = _bound_fraction(options, chosen, where)
    _check_local_bound_delta(chosen, relation, dlt)
    return eps, dlt, chosen, relation, fraction


def _check_local_bound_delta(chosen: RatioMethod, relation: Neighbours, dlt: float) -> None:
    if chosen == "local-bound" and relation == ADD_REMOVE and dlt == 0.0:
        raise InputError(
            "local-bound needs delta > 0 under add-remove neighbours: its bound on the local "
            "sensitivity fails with probability delta. Pass ",
            Assign("delta"),
            " (e.g. 1e-6), or use ",
            Assign("method", "ksw", quoted=True),
            " for pure epsilon-DP.",
        )


@dataclass(frozen=True)
class _Estimate:
    """The released ratio, its public noise scale and parameters, and the delta spent."""

    value: float
    scale: float | None
    parameters: dict[str, Any]
    delta: float


def _estimate(
    chosen: RatioMethod,
    ones: int,
    total: int,
    relation: Neighbours,
    eps: float,
    dlt: float,
    fraction: float,
    source: RandomSource,
) -> _Estimate:
    """The estimate of the chosen method (naive under substitute, see the docstring)."""
    guarantee_delta = 0.0
    parameters: dict[str, Any] = {}
    scale: float | None
    if chosen == "ksw":
        pair = (float(ones), float(total - ones))
        value, scale, interval = ksw_fraction(
            pair, relation, eps, source, span=(0.0, 1.0), value_error=0.0
        )
        parameters = {"interval": interval}
    elif chosen == "naive" or relation != ADD_REMOVE:
        estimate, scale = naive_draws(ones, total, epsilon=eps, neighbours=relation, source=source)
        value = float(estimate[0])
        if chosen == "local-bound":
            parameters = {
                "bound_fraction": 0.0,
                "sensitivity_bound": "1/b with b public (substitute): same as naive",
            }
    else:
        value, parameters = _local_bound(
            ones, total, epsilon=eps, delta=dlt, fraction=fraction, source=source
        )
        scale = None
        guarantee_delta = dlt
    return _Estimate(value, scale, parameters, guarantee_delta)
