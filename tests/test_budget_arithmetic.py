"""Every noise scale, budget split and threshold holds in exact arithmetic (docs/noise.md §8).

Each check is in :class:`fractions.Fraction` (or 300-bit mpmath for transcendental
quantities), never in floating point:

* Count, Sum and Mean receipts: scale * epsilon >= sensitivity at epsilon in
  {1/3, 1/7, 0.1, 0.3, 0.7, 1e-3/3}, row-level, per person (m rows) and per group; the
  mechanism objects likewise, on random epsilons.
* Splits: grouped per-group and selection shares, Quantiles depths and group privacy add
  up to at most the budget (and are the largest doubles that do).
* Thresholds: private partition selection and propose-test-release keep their tails at
  most delta (and are the smallest integers that do); scales of the bounds histogram,
  PTR, bounded-ls, sample-and-aggregate, smooth beta, Gaussian sigma and rho.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpsense as ds
from dpsense._exact_budget import exact
from dpsense.mechanisms.additive import (
    DiscreteGaussianMechanism,
    DiscreteLaplaceMechanism,
    GaussianMechanism,
    LaplaceMechanism,
)
from dpsense.mechanisms.calibration import analytic_gaussian_sigma, classic_gaussian_sigma
from dpsense.mechanisms.partition_selection import SelectionRule
from dpsense.methods.bounded_ls import private_lower_bound
from dpsense.methods.exponential import interval_budget
from dpsense.methods.ptr import _test_scale, ptr_threshold
from dpsense.noise.rng import SeededRandom
from dpsense.params import rest_of_budget, smooth_beta
from dpsense.query.one_step import sample_and_aggregate
from dpsense.statistics.units import group_privacy_budget, per_unit

pd = pytest.importorskip("pandas")

EPSILONS = (1 / 3, 1 / 7, 0.1, 0.3, 0.7, 1e-3 / 3)
"""The cases of the issue; 1/3, 1/7 and 1e-3/3 have a float quotient 1/eps that rounds down."""
X = np.array([0.5, 1.0, 2.5, 4.0, 0.0, 3.0, 1.5])

_P = mpmath.MPContext()
_P.prec = 300


def _mp(value: Any) -> Any:
    q = exact(value)
    return _P.mpf(q.numerator) / q.denominator


def _covers(scale: float, epsilon: float, sensitivity: Fraction | int) -> bool:
    return exact(scale) * exact(epsilon) >= sensitivity


def _frame() -> Any:
    return pd.DataFrame(
        {
            "person": [1, 1, 1, 2, 2, 3, 3, 3, 3, 4],
            "g": ["a", "b", "c", "a", "a", "b", "c", "c", "a", "b"],
            "v": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 0.5],
        }
    )


def test_the_plain_float_quotient_rounds_down_on_these_epsilons() -> None:
    """Without exact arithmetic, 1/eps at these epsilons is below the exact scale."""
    for eps in (1 / 3, 1 / 7, 1e-3 / 3):
        assert not _covers(1 / eps, eps, 1)


@pytest.mark.parametrize("eps", EPSILONS)
def test_count_sum_and_mean_receipts_cover_their_sensitivity(eps: float) -> None:
    rng = SeededRandom(1)
    count = ds.release(X, ds.Count(), epsilon=eps, rng=rng)
    assert count.noise == "discrete-laplace"
    assert _covers(count.scale, eps, 1)
    total = ds.release(X, ds.Sum(-2, 5), epsilon=eps, rng=rng)
    assert _covers(total.scale, eps, 5)
    mean = ds.release(X, ds.Mean(0, 5), epsilon=eps, rng=rng)  # KSW: sums of [0, 1] values
    assert mean.method == "ksw"
    assert _covers(mean.scale, eps, 1)
    # substitute: n is public, the Laplace mechanism at w / n = 5/7
    mean = ds.release(X, ds.Mean(0, 5), epsilon=eps, neighbours="substitute", rng=rng)
    assert _covers(mean.scale, eps, Fraction(5, 7))


@pytest.mark.parametrize("eps", EPSILONS)
def test_per_person_receipts_cover_m_rows(eps: float) -> None:
    rng, m = SeededRandom(2), 3
    unit = {"privacy_unit": "person", "max_rows_per_unit": m, "epsilon": eps, "rng": rng}
    count = ds.release(_frame(), ds.Count(), **unit)
    assert _covers(count.scale, eps, m)
    total = ds.release(_frame(), ds.Sum(-2, 5), column="v", **unit)
    assert _covers(total.scale, eps, m * 5)
    mean = ds.release(_frame(), ds.Mean(0, 10), column="v", **unit)
    assert mean.method == "ksw"
    assert _covers(mean.scale, eps, m)  # row-level epsilon at most eps / m, sensitivity 1


@pytest.mark.parametrize("eps", EPSILONS)
def test_grouped_splits_add_up_and_each_group_covers_its_share(eps: float) -> None:
    rng, m, g = SeededRandom(3), 2, 3
    common = {
        "by": "g",
        "privacy_unit": "person",
        "max_rows_per_unit": m,
        "max_groups_per_unit": g,
        "epsilon": eps,
        "rng": rng,
    }
    counts = ds.release(_frame(), ds.Count(), keys=["a", "b", "c", "d"], **common)
    share = counts.parameters["per_group"]["epsilon"]
    assert exact(share) * g <= exact(eps) < exact(math.nextafter(share, math.inf)) * g
    assert math.copysign(1.0, counts.parameters["per_group"]["delta"]) == 1.0  # no "-0"
    for _, rel in counts:
        assert rel.epsilon == share
        assert _covers(rel.scale, share, m)
    sums = ds.release(_frame(), ds.Sum(-2, 5), column="v", delta=1e-6, **common)
    selection, per_group = sums.parameters["selection"], sums.parameters["per_group"]
    assert exact(selection["epsilon"]) + g * exact(per_group["epsilon"]) <= exact(eps)
    assert exact(selection["delta"]) + g * exact(per_group["delta"]) <= exact(1e-6)
    assert _covers(selection["scale"], selection["epsilon"], g)
    for _, rel in sums:
        assert _covers(rel.scale, per_group["epsilon"], m * 5)


@settings(max_examples=200, deadline=None)
@given(
    st.floats(min_value=1e-6, max_value=1e3, allow_nan=False),  # the sampler's range
    st.integers(min_value=1, max_value=1000),
)
def test_mechanism_scales_cover_the_sensitivity(eps: float, sensitivity: int) -> None:
    discrete = DiscreteLaplaceMechanism.for_privacy(sensitivity, eps)
    assert _covers(discrete.scale, eps, sensitivity)
    # the epsilon it reports for a sensitivity is at least the true one (s / scale used)
    used = DiscreteLaplaceMechanism(discrete.scale).release(0, SeededRandom(0)).scale
    assert exact(discrete.epsilon_for(sensitivity)) * exact(used) >= sensitivity
    laplace = LaplaceMechanism(float(sensitivity), eps)
    assert _covers(laplace.scale, eps, sensitivity)
    assert _covers(laplace.release(0.0, SeededRandom(0)).scale, eps, sensitivity)


@pytest.mark.parametrize("eps", EPSILONS)
@pytest.mark.parametrize(("levels", "m"), [((0.1, 0.5, 0.9), 1), ((0.2, 0.4, 0.6, 0.8), 3)])
def test_quantiles_depths_add_up_to_at_most_epsilon(
    eps: float, levels: tuple[float, ...], m: int
) -> None:
    rng = SeededRandom(4)
    if m == 1:
        rel = ds.release(X, ds.Quantiles(list(levels), 0, 5), epsilon=eps, rng=rng)
    else:
        rel = ds.release(
            _frame(),
            ds.Quantiles(list(levels), 0, 10),
            column="v",
            privacy_unit="person",
            max_rows_per_unit=m,
            epsilon=eps,
            rng=rng,
        )
    per_call, depth = rel.parameters["epsilon_per_call"], rel.parameters["depth"]
    # the values and the intervals' pair of endpoints per level, all per row, within epsilon
    each = rel.parameters["interval"]["epsilon_pair"]
    spent = exact(per_call) * depth + len(levels) * exact(each)
    assert spent * m <= exact(eps)
    # the largest such double for the values' share of the row-level budget (itself the
    # largest <= eps / m)
    row = interval_budget(group_privacy_budget(eps, 0.0, m)[0])[0]
    assert exact(math.nextafter(per_call, math.inf)) * depth > exact(row)


@pytest.mark.parametrize(
    ("eps", "delta", "g"),
    [(1 / 3, 1e-6, 1), (1 / 7, 1e-8, 3), (0.7, 5e-7, 8), (1e-3 / 3, 1e-5, 2), (3.0, 1e-12, 1)],
)
def test_selection_threshold_is_the_smallest_safe_one(eps: float, delta: float, g: int) -> None:
    rule = SelectionRule.for_budget(eps, delta, g)
    assert rule.scale * exact(eps) >= g
    q = _P.exp(-1 / _mp(rule.scale))

    def kept(threshold: int) -> Any:  # P(a one-unit group is kept), over g groups
        return g * q ** (threshold - 1) / (1 + q)

    assert kept(rule.threshold) <= _mp(delta)
    assert kept(rule.threshold - 1) > _mp(delta)


@pytest.mark.parametrize("eps", [*EPSILONS, 2.0, 5e-5])
@pytest.mark.parametrize("delta", [1e-3, 1e-6, 1e-10, 1e-30])
def test_ptr_threshold_is_the_smallest_safe_one(eps: float, delta: float) -> None:
    scale = _test_scale(eps)
    assert scale * exact(eps) >= 1
    m = ptr_threshold(eps, delta)
    q = _P.exp(-1 / _mp(scale))
    assert q**m / (1 + q) <= _mp(delta)
    assert m == 0 or q ** (m - 1) / (1 + q) > _mp(delta)


@pytest.mark.parametrize("eps", EPSILONS)
def test_ptr_release_scale_covers_the_bound(eps: float) -> None:
    med = ds.Median(0, 10)
    eps_release = rest_of_budget(eps, 0.5 * eps)
    for data, bound in ((np.full(200, 5.0), 0.5), (np.arange(4.0), 1 / 3)):
        rel = ds.release(
            data, med, epsilon=eps, delta=1e-6, method="ptr", bound=bound, rng=SeededRandom(5)
        )
        assert _covers(rel.scale, eps_release, exact(bound))


@pytest.mark.parametrize("m", [2, 3, 50])
@pytest.mark.parametrize("eps", [*EPSILONS, 7.0])
def test_group_privacy_budget_composes_back_exactly(eps: float, m: int) -> None:
    delta = 1e-6
    e, d = group_privacy_budget(eps, delta, m)
    assert exact(e) * m <= exact(eps) < exact(math.nextafter(e, math.inf)) * m
    assert m * _P.exp((m - 1) * _mp(e)) * _mp(d) <= _mp(delta)


@pytest.mark.parametrize("eps", EPSILONS)
def test_smooth_betas_are_at_most_their_exact_values(eps: float) -> None:
    for delta in (1e-3, 1e-6, 1e-9):
        assert _mp(smooth_beta(eps, delta)) <= _mp(eps) / (2 * _P.log(2 / _mp(delta)))
    assert exact(smooth_beta(eps)) * 6 <= exact(eps)


@pytest.mark.parametrize("eps", [1 / 3, 1 / 7, 0.1, 0.7, 1e-3 / 3])
def test_gaussian_sigmas_and_rho_are_on_the_safe_side(eps: float) -> None:
    for delta in (1e-5, 1e-10, 1e-30):
        sigma = classic_gaussian_sigma(1.0, eps, delta)
        assert _mp(sigma) * _mp(eps) >= _P.sqrt(2 * _P.log(_P.mpf(5) / 4 / _mp(delta)))
        mech = GaussianMechanism(3.0, eps, delta)
        assert exact(mech.rho) >= Fraction(9) / (2 * exact(mech.sigma) ** 2)
    discrete = DiscreteGaussianMechanism(1 / eps)
    assert exact(discrete.rho_for(1.0)) * 2 * discrete._sigma2 >= 1


@pytest.mark.parametrize(("eps", "delta"), [(0.01, 1e-30), (0.5, 1e-15), (1.0, 1e-15)])
def test_analytic_gaussian_sigma_holds_where_floats_cancel(eps: float, delta: float) -> None:
    """Before the 256-bit check these sigmas had a true delta up to 2.5e-11 too large."""
    sigma = _mp(analytic_gaussian_sigma(1.0, eps, delta))
    e = _mp(eps)
    true_delta = _P.ncdf(1 / (2 * sigma) - e * sigma) - _P.exp(e) * _P.ncdf(
        -1 / (2 * sigma) - e * sigma
    )
    assert true_delta <= _mp(delta)


@pytest.mark.filterwarnings("ignore::dpsense.FarBoundsWarning")  # wide data on purpose
@pytest.mark.parametrize("eps", EPSILONS)
def test_bounds_pair_draw_spends_at_most_epsilon_with_m_rows(eps: float) -> None:
    """The pair draw is 2 eta m-DP (score sensitivity m): 2 m eta <= eps, exactly."""
    out = ds.private_bounds(X, epsilon=eps, rng=SeededRandom(6))
    assert 2 * exact(out.parameters["eta"]) <= exact(eps)
    out = ds.private_bounds(
        _frame(),
        column="v",
        privacy_unit="person",
        max_rows_per_unit=3,
        epsilon=eps,
        rng=SeededRandom(6),
    )
    assert 2 * 3 * exact(out.parameters["eta"]) <= exact(eps)


@pytest.mark.parametrize("eps", EPSILONS)
def test_private_lower_bound_and_sample_aggregate_scales(eps: float) -> None:
    _, _, scale = private_lower_bound(100, epsilon=eps, delta=1e-6, source=SeededRandom(7))
    assert _covers(scale, eps, 1)
    rel = sample_and_aggregate(
        np.arange(30.0), np.mean, blocks=3, lower=0.0, upper=0.7, epsilon=eps, rng=SeededRandom(7)
    )
    assert _covers(rel.scale, eps, exact(0.7) / 3)  # w / k, with w = 0.7 exactly


@settings(max_examples=200, deadline=None)
@given(
    st.floats(min_value=-1e6, max_value=1e6, allow_nan=False),
    st.floats(min_value=1e-6, max_value=1e6, allow_nan=False),
    st.integers(min_value=2, max_value=10**6),
    st.integers(min_value=1, max_value=7),
)
def test_global_sensitivities_are_rounded_up(lower: float, span: float, n: int, m: int) -> None:
    upper = lower + span
    if not lower < upper:
        return
    w = exact(upper) - exact(lower)

    def gs(stat: ds.Statistic, neighbours: str = "add-remove") -> Fraction:
        return exact(stat.global_sensitivity(neighbours, n=n))

    assert gs(ds.Mean(lower, upper)) >= w / 2
    assert gs(ds.Mean(lower, upper), "substitute") >= w / n
    assert gs(ds.Variance(lower, upper)) >= w * w / 4
    assert gs(ds.Variance(lower, upper), "substitute") >= (n - 1) * w * w / n**2
    assert gs(ds.Std(lower, upper)) >= w / 2
    std = _mp(ds.Std(lower, upper).global_sensitivity("substitute", n=n))
    assert std >= _P.sqrt(_mp(w * w * (n - 1) / n**2))
    assert gs(ds.Median(lower, upper)) >= w
    if n > 2:
        assert gs(ds.TrimmedMean(1, lower, upper), "substitute") >= w / (n - 2)
    assert gs(per_unit(ds.Mean(lower, upper), m)) >= m * w / 2


def test_remembered_answers_are_the_answers() -> None:
    """The budget functions remember answers by exact value: an int, a double and a
    Fraction of one value give one answer, a different value another, an unhashable
    argument (a 0-d array) goes to the function itself (which refuses it, as before),
    and a refused value is refused each time."""
    from dpsense._exact_budget import float_up, quotient_down, quotient_up

    third = quotient_up(1, 3)
    assert third == quotient_up(1.0, 3) == quotient_up(Fraction(1), Fraction(3))
    assert Fraction(third) >= Fraction(1, 3) > Fraction(quotient_down(1, 3))
    with pytest.raises(TypeError, match="Rational"):
        quotient_up(np.array(1.0), 3)
    assert quotient_up(2, 3) != third
    for _ in range(2):
        with pytest.raises(ValueError, match="finite"):
            float_up(math.inf)
