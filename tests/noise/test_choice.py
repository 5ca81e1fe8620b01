"""The exact exponential-mechanism sampler (dpsense.noise.choice; docs/noise.md).

* Distribution: chi-square against the exact pmf accepts it and rejects a 30% wrong eta,
  on the float fast path and with every decision forced through the certified path.
* Certificates: the proposal weights bound the true weights (every acceptance probability
  is certified <= 1), and the float bounds of the fast path contain the certified
  intervals, on random instances including huge and tiny scores.
* Support: a candidate e^-60 or e^-1000 times less likely than the best has a certified
  positive probability, and the sampler returns it when the random words put U in its cell.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from mpmath import libmp
from scipy import stats

from dpsense.errors import InputError
from dpsense.noise.choice import ExponentialChoice, eta_at_most
from dpsense.noise.rng import RandomSource, SeededRandom

ALPHA = 1e-3
WEIGHTS = np.array([1.0, 3.0, 0.0, 2.0, 5.0, 1.0])
SCORES = np.array([0.0, 1.0, -4.0, 0.5, 2.0, 0.25])
ETA = 0.8


def exact_pmf(weights: np.ndarray, scores: np.ndarray, eta: float) -> np.ndarray:
    logs = np.where(weights > 0, np.log(np.where(weights > 0, weights, 1.0)), -np.inf)
    logs = logs - eta * scores
    p = np.exp(logs - logs.max())
    return np.asarray(p / p.sum())


def pvalue(samples: np.ndarray, pmf: np.ndarray) -> float:
    observed = np.bincount(samples, minlength=pmf.size).astype(float)
    keep = pmf > 0
    assert observed[~keep].sum() == 0  # zero-weight candidates never come out
    return float(stats.chisquare(observed[keep], pmf[keep] * samples.size).pvalue)


class ScriptedSource(RandomSource):
    """Words from a script, then zeros: forces U (and V) where a test wants them."""

    seeded = True

    def __init__(self, script: list[int]) -> None:
        self.script = list(script)

    def words(self, size: int) -> np.ndarray:
        out = [self.script.pop(0) if self.script else 0 for _ in range(size)]
        return np.array(out, dtype=np.uint64)


def test_fast_path_matches_the_exact_pmf() -> None:
    choice = ExponentialChoice(WEIGHTS, SCORES, ETA)
    samples = choice.sample(SeededRandom(1), 200_000)
    pmf = exact_pmf(WEIGHTS, SCORES, ETA)
    np.testing.assert_allclose(choice.pmf(), pmf, rtol=1e-12)
    assert pvalue(samples, pmf) > ALPHA
    assert pvalue(samples, exact_pmf(WEIGHTS, SCORES, 1.3 * ETA)) < ALPHA


def test_certified_path_alone_matches_the_exact_pmf() -> None:
    choice = ExponentialChoice(WEIGHTS, SCORES, ETA)
    samples = choice.sample(SeededRandom(2), 20_000, _exact=True)
    assert pvalue(samples, exact_pmf(WEIGHTS, SCORES, ETA)) > ALPHA
    assert pvalue(samples, exact_pmf(WEIGHTS, SCORES, 1.3 * ETA)) < ALPHA


def test_exact_scores_given_as_rationals() -> None:
    """Scores |i - 7/3| known exactly, passed as floats with a certified error bound."""
    target = Fraction(7, 3)
    scores = np.abs(np.arange(6) - 7 / 3)
    choice = ExponentialChoice(
        np.ones(6), scores, 1.0, exact_score=lambda i: abs(i - target), score_error=1e-15
    )
    pmf = exact_pmf(np.ones(6), scores, 1.0)
    samples = choice.sample(SeededRandom(3), 100_000)
    assert pvalue(samples, pmf) > ALPHA
    forced = choice.sample(SeededRandom(4), 10_000, _exact=True)
    assert pvalue(forced, pmf) > ALPHA


def _as_float(raw: object) -> float:
    p, q = libmp.to_rational(raw)
    return float(Fraction(p, q))


@pytest.mark.parametrize("seed", range(6))
def test_proposals_bound_the_weights_and_fast_bounds_contain_the_certified_ones(
    seed: int,
) -> None:
    rs = np.random.default_rng(seed)
    m = int(rs.integers(1, 40))
    weights = np.floor(rs.uniform(0, 2**33, m)) * (rs.random(m) < 0.8)
    weights[int(rs.integers(m))] = 1.0
    scale = float(10.0 ** rs.integers(-3, 8))
    scores = rs.normal(size=m) * scale
    eta = float(rs.uniform(0.01, 3.0))
    choice = ExponentialChoice(weights, scores, eta)
    live = np.flatnonzero(weights > 0)
    lo_fast, hi_fast = choice._fast_bounds(live)
    for t, i in enumerate(live):
        lo, hi = choice.acceptance_interval(int(i), 128)
        assert libmp.mpf_le(hi, libmp.from_int(1))  # A_i <= 1: Q_i >= 2^K W_i
        assert libmp.mpf_gt(lo, libmp.fzero)  # A_i > 0: every live candidate can come out
        assert lo_fast[t] <= _as_float(lo) * (1 + 2**-50)
        assert hi_fast[t] >= _as_float(hi) * (1 - 2**-50)


@pytest.mark.parametrize("gap", [60.0, 1000.0])
def test_a_candidate_far_below_the_best_has_positive_probability(gap: float) -> None:
    """Weight ratio e^-gap: float Gumbel-max gave it probability exactly 0 beyond ~40."""
    choice = ExponentialChoice(np.array([1.0, 1.0, 1.0]), np.array([0.0, gap, 0.5]), 1.0)
    bound = choice.probability_lower_bound(1)
    assert bound > 0
    # the bound is tight: P(1) = e^-gap / (1 + e^-gap + e^-0.5)
    assert math.log(bound.numerator) - math.log(bound.denominator) == pytest.approx(
        -gap - math.log(1 + math.exp(-0.5)), abs=1e-6
    )
    # U in candidate 1's cell (R = its first proposal slot), V = 0: the sampler returns 1
    r = int(choice._cumulative[0])
    assert choice.sample(ScriptedSource([r, 0]), 1).tolist() == [1]
    # V just above the acceptance probability: rejected, then the next proposal decides
    assert choice.sample(ScriptedSource([r, 1 << 40, 0, 0])).tolist() == [0]


def test_huge_scores_zero_eta_and_zero_weights() -> None:
    huge = ExponentialChoice(np.ones(3), np.array([-1.7e308, 1.7e308, 0.0]), 2.0)
    lo, _ = huge.acceptance_interval(1)  # about exp(-6.8e308): too small for a Fraction
    assert libmp.mpf_gt(lo, libmp.fzero)
    assert huge._proposal[1] >= 1
    assert set(huge.sample(SeededRandom(5), 1000).tolist()) == {0}
    flat = ExponentialChoice(np.array([1.0, 3.0, 0.0]), np.array([1e308, -1e308, 5.0]), 0.0)
    samples = flat.sample(SeededRandom(6), 40_000)
    assert pvalue(samples, np.array([0.25, 0.75, 0.0])) > ALPHA


def test_eta_is_rounded_down() -> None:
    for num, den in [(1.0, 3.0), (0.1, 0.7), (2.5, 2.0), (1e-300, 3e10), (7.0, 1e-5)]:
        eta = eta_at_most(num, den)
        assert Fraction(eta) <= Fraction(num) / Fraction(den)
        assert Fraction(math.nextafter(eta, math.inf)) > Fraction(num) / Fraction(den)


@pytest.mark.parametrize(
    ("weights", "scores", "eta"),
    [
        ([], [], 1.0),
        ([1.0], [1.0, 2.0], 1.0),
        ([0.0, 0.0], [1.0, 2.0], 1.0),
        ([-1.0, 1.0], [1.0, 2.0], 1.0),
        ([1.0], [float("nan")], 1.0),
        ([1.0], [1.0], -1.0),
    ],
)
def test_bad_arguments_are_refused(weights: list[float], scores: list[float], eta: float) -> None:
    with pytest.raises(InputError, match="ExponentialChoice"):
        ExponentialChoice(np.array(weights), np.array(scores), eta)
