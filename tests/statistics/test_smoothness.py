"""Smooth bounds, admissibility and distance to instability on random neighbour pairs.

SPEC §2: S is beta-smooth iff S(x) >= LS(x) and S(x) <= e^beta S(x') for neighbours;
an upper bound on A(k) is admissible iff A_x(k) <= A_y(k + 1) for neighbours; then
D(x, b) has sensitivity 1.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpsense as ds
from dpsense.statistics.quantile import _QuantileProfile

from .strategies import RELATIONS, STATISTICS, neighbour_pairs

CASES = [(name, rel) for name in STATISTICS for rel in RELATIONS]


@pytest.mark.parametrize(("name", "relation"), CASES)
def test_smooth_bound_is_smooth_and_dominates_local(name: str, relation: str) -> None:
    stat = STATISTICS[name]

    @settings(max_examples=200)
    @given(pair=neighbour_pairs(relation), beta=st.sampled_from([0.05, 0.3, 1.0, 2.0]))
    def check(pair: tuple[np.ndarray, np.ndarray], beta: float) -> None:
        x, y = pair
        if len(y) == 0:
            return
        sx = stat.smooth_sensitivity(x, beta, relation)
        sy = stat.smooth_sensitivity(y, beta, relation)
        assert sx >= stat.local_sensitivity(x, relation) - 1e-12
        assert sx <= math.exp(beta) * sy * (1 + 1e-9) + 1e-12
        assert sy <= math.exp(beta) * sx * (1 + 1e-9) + 1e-12

    check()


@pytest.mark.parametrize(("name", "relation"), CASES)
def test_distance_bound_is_admissible_and_distance_has_sensitivity_one(
    name: str, relation: str
) -> None:
    stat = STATISTICS[name]
    ks = np.arange(0, 8)

    @settings(max_examples=200)
    @given(pair=neighbour_pairs(relation), bound=st.sampled_from([0.0, 0.4, 1.0, 3.0, 6.0]))
    def check(pair: tuple[np.ndarray, np.ndarray], bound: float) -> None:
        x, y = pair
        if len(y) == 0:
            return
        ax = stat.sensitivity_at_distance(x, ks, relation)
        ay = stat.sensitivity_at_distance(y, ks, relation)
        assert np.all(ax[:-1] <= ay[1:] + 1e-12)
        assert np.all(ay[:-1] <= ax[1:] + 1e-12)
        assert np.all(np.diff(ax) >= -1e-12)  # A(k) is non-decreasing in k
        dx = stat.distance_to_instability(x, bound, relation)
        dy = stat.distance_to_instability(y, bound, relation)
        if ds.INFINITE_DISTANCE not in (dx, dy):
            assert abs(dx - dy) <= 1
        else:
            assert min(dx, dy) >= 7 or dx == dy

    check()


def _reference_quantile_smooth(stat: ds.Quantile, x: np.ndarray, beta: float, rel: str) -> float:
    """O(n^2) reference: every pair (s, t) of the fully sorted extended data, no window."""
    prof = _QuantileProfile(stat.clip(x), stat.lower, stat.upper, stat._num, stat._den, rel)
    n = x.shape[0]
    ext = np.concatenate(([stat.lower], np.sort(stat.clip(x)), [stat.upper]))
    s, t = np.meshgrid(np.arange(n + 2), np.arange(n + 2), indexing="ij")
    if rel == "substitute":
        ok = (s < t) & (s <= prof.rank) & (t >= prof.rank)
    else:
        ok = (s < t) & (s <= n) & (t >= 1)
    cost = prof._cost(s[ok], t[ok])
    return float(np.max(np.exp(-beta * cost) * (ext[t[ok]] - ext[s[ok]])))


@pytest.mark.parametrize("relation", RELATIONS)
@pytest.mark.parametrize("p", [0.5, 0.1, 0.37, 0.9])
@pytest.mark.parametrize("tied", [False, True])
def test_windowed_smooth_sensitivity_equals_full_quadratic_scan(
    relation: str, p: float, tied: bool
) -> None:
    rng = np.random.default_rng(11)
    for n in (1, 2, 7, 150, 600):
        x = rng.integers(0, 6, n).astype(float) if tied else rng.normal(50, 15, n)
        stat = ds.Quantile(p, 0.0, 100.0)
        for beta in (0.02, 0.3, 3.0):
            got = stat.smooth_sensitivity(x, beta, relation)
            want = _reference_quantile_smooth(stat, x, beta, relation)
            assert got == pytest.approx(want, rel=1e-12, abs=1e-300)


def test_median_corner_formula_matches_general_pair_costs() -> None:
    rng = np.random.default_rng(5)
    median = ds.Median(0, 10)
    for n in range(0, 40):
        x = median.clip(rng.integers(0, 11, n).astype(float))
        corner = median.profile(x, "add-remove")
        general = _QuantileProfile(x, 0.0, 10.0, 1, 2, "add-remove")
        general._corner = False
        ks = np.arange(0, n + 3)
        np.testing.assert_array_equal(corner.at(ks), general.at(ks))


def test_smooth_sensitivity_early_stopping_is_exact_on_large_tied_data() -> None:
    # a long run of ties around the median forces the window to grow several times
    rng = np.random.default_rng(2)
    x = np.concatenate([np.full(20_000, 40.0), rng.integers(17, 91, 5_000).astype(float)])
    stat = ds.Median(0, 100)
    beta = 0.01  # large enough to force growth, small enough that S* stays above 1e-300
    prof = stat.profile(stat.clip(x), "add-remove")
    ks = np.arange(0, x.shape[0] + 1)
    want = float(np.max(np.exp(-beta * ks) * prof.at(ks)))
    assert stat.smooth_sensitivity(x, beta) == pytest.approx(want, rel=1e-12)
    assert want > 0
