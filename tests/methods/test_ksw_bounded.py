"""The KSW mean and the mean with a privately bounded local sensitivity (seed 001).

Sensitivities are checked by enumerating neighbours, privacy by histogram audits on
neighbouring datasets (a mis-calibrated KSW must fail), and the private lower bound on n by
its empirical failure rate against the exact discrete-Laplace tail.
"""

from __future__ import annotations

import math
from itertools import product

import numpy as np
import pytest

from dpsense.audit import histogram_audit
from dpsense.errors import InputError
from dpsense.methods.bounded_ls import (
    bounded_ls_mean,
    bounded_ls_mean_draws,
    discrete_laplace_tail,
    laplace_with_private_bound,
    mean_sensitivity_bound,
    private_lower_bound,
)
from dpsense.methods.ksw import ksw_draws, ksw_mean, ksw_sensitivity, unit_sums
from dpsense.noise.rng import SeededRandom, SeededRandomnessWarning

AUDIT_N = 200_000


def mean_or_midpoint(values: list[float], lower: float, upper: float) -> float:
    return sum(values) / len(values) if values else (lower + upper) / 2


def add_remove_neighbours(values: list[float], universe: list[float]) -> list[list[float]]:
    removed = [values[:i] + values[i + 1 :] for i in range(len(values))]
    return removed + [[*values, v] for v in universe]


# ----------------------------------------------------------------------------- KSW


def test_ksw_vector_sensitivity_by_enumeration() -> None:
    """(sum y, sum (1 - y)) moves by exactly 1 in L1 per add/remove, by <= 2 per swap."""
    universe = [0.0, 0.25, 0.5, 0.75, 1.0]
    largest = {"add-remove": 0.0, "substitute": 0.0}
    for size in range(4):
        for values in product(universe, repeat=size):
            s, z = unit_sums(list(values), 0.0, 1.0, where="test")
            for other in add_remove_neighbours(list(values), universe):
                s2, z2 = unit_sums(other, 0.0, 1.0, where="test")
                assert abs(s - s2) + abs(z - z2) == 1.0  # exact in floating point
                largest["add-remove"] = max(largest["add-remove"], abs(s - s2) + abs(z - z2))
            for i, v in product(range(size), universe):
                swapped = [*values[:i], v, *values[i + 1 :]]
                s2, z2 = unit_sums(swapped, 0.0, 1.0, where="test")
                largest["substitute"] = max(largest["substitute"], abs(s - s2) + abs(z - z2))
    assert largest["add-remove"] == ksw_sensitivity("add-remove") == 1.0
    assert largest["substitute"] == ksw_sensitivity("substitute") == 2.0


def test_unit_sums_clip_and_rescale() -> None:
    s, z = unit_sums([-5.0, 10.0, 20.0, 99.0], 10.0, 20.0, where="test")
    assert (s, z) == (2.0, 2.0)


def _ksw_mean_sampler(x: list[float], sensitivity: float, seed: int):  # type: ignore[no-untyped-def]
    ones, zeros = unit_sums(x, 0.0, 1.0, where="test")
    rng = SeededRandom(seed)
    return lambda k: ksw_draws(
        ones, zeros, sensitivity=sensitivity, epsilon=1.0, source=rng, size=k
    )[0]


@pytest.mark.parametrize(
    ("x", "y"),
    [([0.0, 1.0], [0.0, 1.0, 1.0]), ([0.0, 1.0], [0.0]), ([], [1.0])],
    ids=["add-u", "remove-u", "from-empty"],
)
def test_ksw_mean_add_remove_passes_audit(x: list[float], y: list[float]) -> None:
    result = histogram_audit(
        _ksw_mean_sampler(x, 1.0, 51), _ksw_mean_sampler(y, 1.0, 52), epsilon=1.0, n=AUDIT_N
    )
    assert result.passed, str(result)


def test_ksw_mean_substitute_passes_audit_and_a_mis_calibrated_one_fails() -> None:
    x, y = [0.0, 0.0], [0.0, 1.0]
    good = histogram_audit(
        _ksw_mean_sampler(x, 2.0, 53), _ksw_mean_sampler(y, 2.0, 54), epsilon=1.0, n=AUDIT_N
    )
    assert good.passed, str(good)
    bad = histogram_audit(
        _ksw_mean_sampler(x, 1.0, 55), _ksw_mean_sampler(y, 1.0, 56), epsilon=1.0, n=AUDIT_N
    )
    assert not bad.passed, str(bad)


def test_ksw_mean_is_the_audited_draw() -> None:
    x = [0.1, 0.4, 0.4, 0.9, 2.0]
    for neighbours in ("add-remove", "substitute"):
        release = ksw_mean(
            x, lower=0.0, upper=1.0, epsilon=0.5, neighbours=neighbours, rng=SeededRandom(8)
        )
        ones, zeros = unit_sums(x, 0.0, 1.0, where="test")
        fraction, scale = ksw_draws(
            ones,
            zeros,
            sensitivity=ksw_sensitivity(neighbours),  # type: ignore[arg-type]
            epsilon=0.5,
            source=SeededRandom(8),
        )
        assert release.value == float(fraction[0])
        assert release.scale == scale
        assert release.method == "ksw"
        assert release.statistic == "mean"
        assert release.delta == 0.0
        assert release.neighbours == neighbours


def test_ksw_mean_of_empty_data_falls_back_to_the_midpoint_half_the_time() -> None:
    """With s = z = 0 the noisy denominator is <= 0 with probability about 1/2."""
    rng = SeededRandom(9)
    values = np.array(
        [ksw_mean([], lower=10.0, upper=20.0, epsilon=1.0, rng=rng).value for _ in range(2000)]
    )
    assert np.all((values >= 10.0) & (values <= 20.0))
    assert 0.45 < np.mean(values == 15.0) < 0.55


def test_ksw_mean_bad_input() -> None:
    with pytest.raises(InputError, match="'lower'"):
        ksw_mean([1.0], lower=None, upper=1.0, epsilon=1.0)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="lower < upper"):
        ksw_mean([1.0], lower=1.0, upper=0.0, epsilon=1.0)
    with pytest.raises(InputError, match="'epsilon'"):
        ksw_mean([1.0], lower=0.0, upper=1.0, epsilon=0.0)
    with pytest.raises(InputError, match="'neighbours'"):
        ksw_mean([1.0], lower=0.0, upper=1.0, epsilon=1.0, neighbours="swap")
    with pytest.raises(InputError, match="NaN"):
        ksw_mean([1.0, math.nan], lower=0.0, upper=1.0, epsilon=1.0)


def test_ksw_mean_int_seed_warns() -> None:
    with pytest.warns(SeededRandomnessWarning):
        release = ksw_mean([0.5], lower=0.0, upper=1.0, epsilon=1.0, rng=3)
    assert release.seeded


# ----------------------------------------------------------------------------- bounded LS


def test_mean_local_sensitivity_bound_by_enumeration() -> None:
    """LS(mean, x) <= w / max(n, 2) under add-remove (docs/sensitivity.md §4), and the
    bound is non-increasing in n, so a lower bound on n gives an upper bound on LS."""
    universe = [0.0, 0.3, 1.0]
    for size in range(6):
        for values in product(universe, repeat=size):
            mu = mean_or_midpoint(list(values), 0.0, 1.0)
            ls = max(
                abs(mu - mean_or_midpoint(other, 0.0, 1.0))
                for other in add_remove_neighbours(list(values), [0.0, 1.0])
            )
            for n_low in range(-2, size + 1):
                assert ls <= mean_sensitivity_bound(n_low, 0.0, 1.0)
    assert mean_sensitivity_bound(0, 0.0, 1.0) == pytest.approx(0.5)  # = GS: never worse


def test_private_lower_bound_fails_with_probability_at_most_delta() -> None:
    n, eps1, delta, trials = 1000, 0.2, 0.05, 200_000
    lows, margin, scale = private_lower_bound(
        n, epsilon=eps1, delta=delta, source=SeededRandom(61), size=trials
    )
    exact = discrete_laplace_tail(scale, margin)
    assert exact <= delta < discrete_laplace_tail(scale, margin - 1)  # smallest margin
    failures = np.mean(lows > n)
    assert failures <= delta + 3.1 * math.sqrt(delta * (1 - delta) / trials)
    assert abs(failures - exact) <= 4 * math.sqrt(exact / trials)


def test_bounded_ls_mean_reports_a_scale_from_the_private_bound() -> None:
    x = np.random.default_rng(0).uniform(0.0, 10.0, 500)
    release = bounded_ls_mean(
        x, lower=0.0, upper=10.0, epsilon=1.0, delta=1e-6, rng=SeededRandom(62)
    )
    lows, margin, _ = private_lower_bound(500, epsilon=0.2, delta=1e-6, source=SeededRandom(62))
    assert release.parameters["tail_margin"] == margin
    assert release.parameters["bound_fraction"] == 0.2
    assert release.parameters["epsilon_bound"] == pytest.approx(0.2)
    assert release.parameters["epsilon_noise"] == pytest.approx(0.8)
    assert release.scale == pytest.approx(10.0 / max(int(lows[0]), 2) / 0.8, rel=1e-5)
    assert release.method == "bounded-ls"
    assert release.statistic == "mean"
    assert release.delta == 1e-6
    assert release.epsilon == 1.0
    assert release.value is not None
    assert 0.0 <= release.value <= 10.0


def test_bounded_ls_mean_is_the_audited_draw() -> None:
    x = [0.2, 0.9, 0.5, 0.5]
    release = bounded_ls_mean(x, lower=0.0, upper=1.0, epsilon=1.0, delta=0.01, rng=SeededRandom(7))
    values, _, _ = bounded_ls_mean_draws(
        float(np.mean(x)),
        4,
        lower=0.0,
        upper=1.0,
        epsilon_bound=0.2,
        epsilon_noise=0.8,
        delta=0.01,
        source=SeededRandom(7),
    )
    assert release.value == float(values[0])


def test_bounded_ls_mean_passes_audit_on_neighbours() -> None:
    """The whole composed mechanism (private n bound, then Laplace) at its (eps, delta)."""
    base = [0.0] + [0.5] * 199  # removing the 0 moves the mean by about w/n
    delta = 1e-3

    def sampler(x: list[float], seed: int):  # type: ignore[no-untyped-def]
        rng = SeededRandom(seed)
        mu = float(np.mean(x))
        return lambda k: bounded_ls_mean_draws(
            mu,
            len(x),
            lower=0.0,
            upper=1.0,
            epsilon_bound=0.2,
            epsilon_noise=0.8,
            delta=delta,
            source=rng,
            size=k,
        )[0]

    result = histogram_audit(
        sampler(base, 63), sampler(base[1:], 64), epsilon=1.0, delta=delta, n=AUDIT_N
    )
    assert result.passed, str(result)


def test_bounded_ls_mean_accuracy_is_close_to_the_public_n_laplace_mean() -> None:
    """At n = 10^4 the private bound costs about 1/(1 - bound_fraction) in error against
    the mean with public n (substitute: the global Laplace mean w/(n epsilon))."""
    x = np.random.default_rng(1).uniform(0.0, 1.0, 10_000)
    mu = float(np.mean(x))

    def mae(neighbours: str, seed: int) -> float:
        rng = SeededRandom(seed)
        values = [
            bounded_ls_mean(
                x, lower=0.0, upper=1.0, epsilon=1.0, delta=1e-6, neighbours=neighbours, rng=rng
            ).value
            for _ in range(2000)
        ]
        return float(np.mean(np.abs(np.array(values) - mu)))

    private_n = mae("add-remove", 65)
    public_n = mae("substitute", 66)
    assert public_n == pytest.approx(1e-4, rel=0.1)  # E|Lap(b)| = b = w/(n eps)
    assert private_n < 1.4 * public_n  # measured ratio ~1.25 = 1/0.8
    ksw = np.mean(
        [
            abs(ksw_mean(x, lower=0.0, upper=1.0, epsilon=1.0, rng=SeededRandom(67 + i)).value - mu)
            for i in range(500)
        ]
    )
    assert ksw < private_n  # KSW spends no budget on n at all


def test_bounded_ls_mean_substitute_uses_public_n() -> None:
    release = bounded_ls_mean(
        [0.0, 1.0, 0.5, 0.5],
        lower=0.0,
        upper=1.0,
        epsilon=2.0,
        delta=0.0,
        neighbours="substitute",
        rng=SeededRandom(68),
    )
    assert release.delta == 0.0
    assert release.scale == pytest.approx(1.0 / 4 / 2.0, rel=1e-5)
    assert release.parameters["bound_fraction"] == 0.0
    assert "no budget" in release.parameters["sensitivity_bound"]
    single = bounded_ls_mean(
        [0.3], lower=0.0, upper=1.0, epsilon=1.0, delta=0.0, neighbours="substitute"
    )
    assert single.scale == pytest.approx(1.0, rel=1e-5)  # LS = w for n = 1 under substitute
    empty = bounded_ls_mean([], lower=0.0, upper=4.0, epsilon=1.0, delta=0.0, neighbours="bounded")
    assert empty.value == 2.0


def test_bounded_ls_mean_of_empty_data_under_add_remove() -> None:
    release = bounded_ls_mean([], lower=0.0, upper=4.0, epsilon=1.0, delta=1e-6)
    assert release.value is not None
    assert 0.0 <= release.value <= 4.0
    assert release.scale == pytest.approx(2.0 / 0.8, rel=1e-5)  # g = w/2 = GS when n_low < 2


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"delta": 0.0}, "'delta'"),
        ({"delta": 1e-6, "bound_fraction": 0.0}, "'bound_fraction'"),
        ({"delta": 1e-6, "bound_fraction": 1.0}, "'bound_fraction'"),
        ({"delta": 1e-6, "epsilon": -1.0}, "'epsilon'"),
        ({"delta": 1e-6, "upper": None}, "'upper'"),
        ({"delta": 1e-6, "neighbours": "swap"}, "'neighbours'"),
    ],
)
def test_bounded_ls_mean_bad_input(kwargs: dict[str, object], match: str) -> None:
    options: dict[str, object] = {"lower": 0.0, "upper": 1.0, "epsilon": 1.0, **kwargs}
    with pytest.raises(InputError, match=match):
        bounded_ls_mean([0.5], **options)  # type: ignore[arg-type]


def test_laplace_with_private_bound() -> None:
    result = laplace_with_private_bound(0.25, 0.01, epsilon=0.5, rng=SeededRandom(69))
    assert result.epsilon == 0.5
    assert result.scale == pytest.approx(0.02, rel=1e-5)
    assert result.seeded
    for bad in (0.0, -1.0, math.inf):
        with pytest.raises(InputError, match="'bound'"):
            laplace_with_private_bound(0.25, bad, epsilon=0.5)
    with pytest.raises(InputError, match="'epsilon'"):
        laplace_with_private_bound(0.25, 1.0, epsilon=0.0)


def test_bounded_ls_mean_int_seed_warns() -> None:
    with pytest.warns(SeededRandomnessWarning):
        release = bounded_ls_mean([0.5], lower=0.0, upper=1.0, epsilon=1.0, delta=1e-6, rng=4)
    assert release.seeded


def test_ksw_mean_scale_is_labelled_as_rescaled_units() -> None:
    release = ksw_mean([3.0, 7.0], lower=0.0, upper=100.0, epsilon=1.0, rng=SeededRandom(2))
    assert release.parameters["scale_units"] == "rescaled [0, 1]"
    assert release.scale is not None
    assert release.scale == pytest.approx(1.0, rel=1e-5)  # sensitivity 1 on [0, 1], not w


def test_unit_sums_are_exact_rationals_and_ksw_draws_accept_them() -> None:
    from fractions import Fraction

    s, z = unit_sums([0.1, 0.7, 1 / 3], 0.0, 1.0, where="test")
    assert isinstance(s, Fraction)
    assert s + z == 3  # exact: sum y + sum (1 - y) = n
    assert (s * 2**24).denominator == 1
    # a pair that is not a double (as for more than 2^29 records) stays exact
    big = Fraction(2**60 + 1, 2**24)
    estimate, _ = ksw_draws(big, big, sensitivity=1.0, epsilon=1.0, source=SeededRandom(3))
    assert estimate[0] == pytest.approx(0.5, abs=1e-6)
