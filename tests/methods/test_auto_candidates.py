"""The candidates ``auto`` gives a median come from public inputs only.

The rule (docs/quantile_mechanisms.md §4c): a resolution (declared, or from an integer or
decimal column type) gives its grid, sampled by permute-and-flip up to 2^16 points; no
resolution gives the continuous power-of-two grid. Never the group's size or its values:
groups of 0, 1, 545 and 5,450 rows with the same bounds, epsilon and column type get the
same candidates and selection, and every released value is a point of that grid. The
privacy of the two samplers on those grids is audited by brute force in
tests/mechanisms/test_quantile_mechanisms.py and tests/mechanisms/test_permute_flip.py.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

import dpsense as ds
from dpsense.noise.rng import SeededRandom
from dpsense.statistics._grid import ResolutionGrid

SIZES = {1: 1, 2: 545, 3: 5_450}  # key: rows (key 0 has none)
PUBLIC = ("grid", "resolution", "resolution_source", "rank_bound")


def panel(values: np.ndarray) -> pd.DataFrame:
    """Groups 1, 2, 3 of the sizes above (group 0 empty), one row per person."""
    keys = np.repeat(list(SIZES), list(SIZES.values()))
    return pd.DataFrame({"g": keys, "v": values[: keys.size], "person": np.arange(keys.size)})


def grouped(frame: pd.DataFrame, stat: ds.Median, seed: int) -> list[ds.Release]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded releases warn
        out = ds.release(
            frame,
            stat,
            column="v",
            by="g",
            keys=[0, *SIZES],
            privacy_unit="person",
            epsilon=0.125,
            rng=SeededRandom(seed),
        )
    return [r for _, r in out]


def receipt(r: ds.Release) -> str:
    return repr((r.method, r.noise, *(r.parameters.get(k) for k in PUBLIC)))


rs = np.random.default_rng(23)
HOURS = rs.integers(0, 5001, 7_000).astype(np.int64)  # an int64 column: resolution 1
LWAGE = rs.normal(1.6, 0.5, 7_000)  # a float64 column: no resolution


@pytest.mark.parametrize(
    ("values", "stat", "noise", "candidates"),
    [
        (HOURS, ds.Median(0, 5000), "permute-and-flip", 5001),
        (LWAGE, ds.Median(-4.0, 5.0), "exponential-mechanism", None),
        (LWAGE, ds.Median(-4.0, 5.0, resolution=0.009), "permute-and-flip", 1001),
    ],
)
def test_every_group_gets_the_same_candidates_whatever_its_size(
    values: np.ndarray, stat: ds.Median, noise: str, candidates: int | None
) -> None:
    releases = grouped(panel(values), stat, seed=1)
    assert len({receipt(r) for r in releases}) == 1
    assert releases[0].noise == noise
    bound = releases[0].parameters.get("rank_bound")
    assert (None if bound is None else bound["candidates"]) == candidates


def test_wide_integer_medians_are_integers_in_the_bounds() -> None:
    for seed in range(5):
        for r in grouped(panel(HOURS), ds.Median(0, 5000), seed):
            assert r.value == math.floor(r.value)
            assert 0 <= r.value <= 5000


def test_continuous_medians_lie_on_the_power_of_two_grid() -> None:
    for seed in range(5):
        for r in grouped(panel(LWAGE), ds.Median(-4.0, 5.0), seed):
            gamma = r.parameters["grid"]
            assert gamma == 2.0**-29  # 2^(floor(log2 9) - 32)
            assert (r.value / gamma).is_integer()
            assert -4.0 <= r.value <= 5.0


def test_declared_grid_medians_lie_on_the_declared_grid() -> None:
    grid = ResolutionGrid.build(-4.0, 5.0, 0.009, "test")
    for seed in range(5):
        for r in grouped(panel(LWAGE), ds.Median(-4.0, 5.0, resolution=0.009), seed):
            k = grid.count_below(np.array([r.value]))
            assert float(grid.values(k)[0]) == r.value
