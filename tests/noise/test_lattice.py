"""The exact lattice sampler: lattice construction, goodness of fit against the exact
cell probabilities (accepting the truth, rejecting a 30% wrong scale), tails beyond any
52-bit inversion, and the certified decision logic."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from scipy import stats

from dpsense.errors import InputError
from dpsense.noise.lattice import (
    NoiseShape,
    OutputLattice,
    cell_probability,
    sample_on_lattice,
)
from dpsense.noise.rng import RandomSource, SeededRandom

SHAPES = [
    NoiseShape("laplace"),
    NoiseShape("cauchy"),
    NoiseShape("student-t", dof=1),
    NoiseShape("student-t", dof=3),
    NoiseShape("student-t", dof=4),
    NoiseShape("lln", sigma=0.5),
]


@pytest.mark.parametrize(
    ("lower", "upper"),
    [(0.0, 100.0), (-3.5, 1e-3), (2.0**52, 2.0**52 + 4), (-1e300, 1e300), (5e-324, 1e-320)],
)
def test_lattice_points_are_exact_doubles(lower: float, upper: float) -> None:
    lat = OutputLattice.for_range(lower, upper)
    assert math.frexp(lat.spacing)[0] == 0.5  # a power of two
    for k in (lat.first, lat.last, (lat.first + lat.last) // 2):
        v = lat.value(k)
        assert Fraction(v) == k * Fraction(lat.spacing)
        assert lower <= v <= upper
    assert abs(lat.first) < 2**53
    assert abs(lat.last) < 2**53
    if upper - lower > 0:  # fine relative to the width unless doubles are coarser there
        ulp_bound = max(2.0 ** (math.frexp(max(abs(lower), abs(upper)))[1] - 53), 5e-324)
        assert lat.spacing <= max(2.0**-40 * (upper - lower), ulp_bound)


def test_lattice_rejects_an_infinite_range() -> None:
    with pytest.raises(InputError, match="finite"):
        OutputLattice.for_range(0.0, math.inf)
    with pytest.raises(InputError, match="overflows"):
        OutputLattice.for_range(-1.7e308, 1.7e308)


def _chi_square(counts: np.ndarray, probs: np.ndarray) -> float:
    n = counts.sum()
    keep = probs * n >= 5
    expected = np.append(probs[keep], probs[~keep].sum()) * n
    observed = np.append(counts[keep], counts[~keep].sum())
    mask = expected > 0
    statistic = float((((observed - expected) ** 2)[mask] / expected[mask]).sum())
    return float(stats.chi2.sf(statistic, mask.sum() - 1))


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s.name}-{s.dof}")
def test_distribution_matches_exact_cell_probabilities(shape: NoiseShape) -> None:
    lat = OutputLattice.for_range(-48.0, 48.0, bits=3)  # spacing 4: 25 points
    center, scale = 1.25, Fraction(5)
    rng = SeededRandom(2024)
    draws = np.array([sample_on_lattice(rng, shape, center, scale, lat) for _ in range(2500)])
    ks = np.arange(lat.first, lat.last + 1)
    counts = np.array([(draws == k).sum() for k in ks])
    with mpmath.workdps(20):
        truth = np.array([float(cell_probability(shape, center, scale, lat, k)) for k in ks])
        wrong = np.array(
            [float(cell_probability(shape, center, scale * Fraction(13, 10), lat, k)) for k in ks]
        )
    assert truth.sum() == pytest.approx(1.0, abs=1e-9)
    assert _chi_square(counts, truth) > 1e-3
    assert _chi_square(counts, wrong) < 1e-3


class _Scripted(RandomSource):
    """Returns the given 64-bit words in order, then a fixed word forever."""

    seeded = True

    def __init__(self, words: list[int], then: int = 2**63) -> None:
        self._words = list(words)
        self._then = then

    def words(self, size: int) -> np.ndarray:
        out = [self._words.pop(0) if self._words else self._then for _ in range(size)]
        return np.array(out, dtype=np.uint64)

    def word(self) -> int:
        return self._words.pop(0) if self._words else self._then


def test_far_tail_cells_are_reached_exactly() -> None:
    # U = 2^-150 (two zero words, then 2^42 in the third): Laplace Z = ln(2 U) = -103.28...,
    # a quantile of probability 2^-150 that inversion of a 52-bit uniform never produces.
    lat = OutputLattice.for_range(-1000.0, 1000.0, bits=10)  # spacing 1
    rng = _Scripted([0, 0, 1 << 42], then=0)
    k = sample_on_lattice(rng, NoiseShape("laplace"), 0.0, Fraction(1), lat)
    assert k == round(math.log(2.0) - 150 * math.log(2.0))
    with mpmath.workdps(30):
        p = cell_probability(NoiseShape("laplace"), 0.0, Fraction(1), lat, k)
    assert 0 < p < 1e-40


def test_clamped_ends_carry_the_whole_tails() -> None:
    lat = OutputLattice.for_range(0.0, 8.0, bits=3)
    shape = NoiseShape("cauchy")
    with mpmath.workdps(30):
        total = sum(cell_probability(shape, 4.0, Fraction(100), lat, k) for k in range(9))
        end = cell_probability(shape, 4.0, Fraction(100), lat, lat.last)
    assert total == pytest.approx(1, abs=1e-25)
    assert end > 0.45  # nearly half the mass lies above the range


def test_undecided_draws_refine_and_stay_exact() -> None:
    # a huge scale relative to the spacing: 64 digits cannot decide the cell, so the
    # sampler must draw more; the result still follows the exact cell probabilities
    lat = OutputLattice.for_range(-1.0, 1.0, bits=2)
    shape = NoiseShape("laplace")
    scale = Fraction(2**80)
    rng = SeededRandom(5)
    draws = [sample_on_lattice(rng, shape, 0.0, scale, lat) for _ in range(2000)]
    counts = np.array([draws.count(k) for k in range(lat.first, lat.last + 1)])
    with mpmath.workdps(40):
        truth = np.array(
            [
                float(cell_probability(shape, 0.0, scale, lat, k))
                for k in range(lat.first, lat.last + 1)
            ]
        )
    assert _chi_square(counts, truth) > 1e-3


def test_invalid_noise_parameters() -> None:
    with pytest.raises(InputError, match="dof"):
        NoiseShape("student-t", dof=0)
    with pytest.raises(InputError, match="sigma"):
        NoiseShape("lln", sigma=-1.0)
    with pytest.raises(InputError, match="noise must be"):
        NoiseShape("gumbel")
    lat = OutputLattice.for_range(0.0, 1.0)
    with pytest.raises(InputError, match="positive scale"):
        sample_on_lattice(SeededRandom(1), NoiseShape("laplace"), 0.5, Fraction(0), lat)
