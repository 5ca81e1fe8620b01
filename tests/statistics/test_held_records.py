"""Records held by an engine answer the exact sums and counts; the statistics and methods
that accept them must give exactly what they give on the array of the same records.

``Held`` answers from an array the way an engine does (its own sums are checked against
numpy in tests/spark/test_spark_held_groups.py); these tests check the dispatch: that a held
group's answers are used, and used in the same place as the array's. A release compared
with the same seed cannot see an error of one grid quantum (the output lattice absorbs it);
the exact values below can.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from dpsense.methods.ksw import unit_sums
from dpsense.statistics import Sum
from dpsense.statistics._exact import RecordGrid
from dpsense.statistics._records import HeldRecords, grid_sum, record_count


class Held:
    def __init__(self, x: np.ndarray) -> None:
        self.x = x

    @property
    def size(self) -> int:
        return int(self.x.shape[0])

    def grid_sum(self, grid: RecordGrid) -> int:
        return int(grid.integers(self.x).sum())

    def quanta_sum(self, lower: float, upper: float, quanta: int) -> int:
        unit = np.clip((np.clip(self.x, lower, upper) - lower) / (upper - lower), 0.0, 1.0)
        return int(np.rint(unit * quanta).sum())


@pytest.fixture
def xc() -> np.ndarray:
    rng = np.random.default_rng(4)
    return np.clip(np.round(rng.normal(40.0, 20.0, 501), 4), 0.0, 80.0)


def test_a_held_group_is_recognised_and_an_array_is_not(xc: np.ndarray) -> None:
    assert isinstance(Held(xc), HeldRecords)
    assert not isinstance(xc, HeldRecords)


def test_count_and_grid_sum_are_the_held_answers(xc: np.ndarray) -> None:
    grid = RecordGrid.for_bounds(0.0, 80.0)
    assert record_count(Held(xc)) == record_count(xc) == 501
    assert grid_sum(grid, Held(xc)) == grid_sum(grid, xc) == grid.integer_sum(xc)
    assert grid_sum(grid, Held(xc[:-1])) != grid_sum(grid, xc)  # the held answer is used


def test_exact_sum_of_held_records_is_the_arrays(xc: np.ndarray) -> None:
    stat = Sum(0.0, 80.0)
    got = stat._value_exact(Held(xc))  # type: ignore[arg-type]
    assert isinstance(got, Fraction)
    assert got == stat._value_exact(xc)


def test_ksw_unit_sums_of_held_records_are_the_arrays(xc: np.ndarray) -> None:
    for lower, upper in ((0.0, 80.0), (10.0, 50.0)):  # the second clips
        held = unit_sums(Held(xc), lower, upper, where="test")
        assert held == unit_sums(xc, lower, upper, where="test")
        assert held[0] + held[1] == len(xc)
