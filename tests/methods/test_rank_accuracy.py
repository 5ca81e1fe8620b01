"""Rank error bars (``Release.rank_accuracy``, docs/accuracy.md): coverage by simulation.

The claim: with probability at least 1 - alpha the released value lies between the records of
ranks r - t and r + t (r the target rank), t computed from epsilon, the score's sensitivity
and the number of candidates only. Checked on seeded draws of the mechanism the release uses,
at small epsilon, on spread, tied and sparse integer data: the share of draws outside the
bar is at most alpha, and the bar is within a small factor of the observed 1 - alpha rank
error (the figures are in docs/accuracy.md).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpsense as ds
from dpsense.mechanisms.accuracy import selection_rank_halfwidth
from dpsense.mechanisms.quantile import ExponentialQuantile
from dpsense.methods.exponential import interval_budget
from dpsense.noise.rng import SeededRandom

ALPHA = 0.05


def rank_errors(x: np.ndarray, p: float, values: np.ndarray) -> np.ndarray:
    """Each value's distance in ranks from the target rank r = max(1, ceil(pn)): 0 when it
    equals x_(r), else how far r lies outside the ranks [a + 1, a + e] it covers."""
    xs = np.sort(x)
    n = xs.shape[0]
    r = max(1, math.ceil(p * n - 1e-9))
    below = np.searchsorted(xs, values, side="left")  # a
    upto = np.searchsorted(xs, values, side="right")  # a + e
    return np.maximum(0, np.maximum(below + 1 - r, r - upto))


def _data(kind: str, n: int) -> np.ndarray:
    rs = np.random.default_rng(n + len(kind))
    if kind == "spread":
        return rs.integers(0, 101, n).astype(float)
    if kind == "tied":
        return rs.choice([10.0, 11.0, 12.0, 13.0], n, p=[0.2, 0.3, 0.3, 0.2])
    return np.round(rs.lognormal(3.0, 0.6, n)).clip(0, 100)  # sparse in the tails


@pytest.mark.parametrize(
    ("kind", "n", "p", "eps"),
    [
        ("spread", 2_000, 0.5, 0.05),
        ("spread", 300, 0.9, 0.1),
        ("tied", 1_000, 0.5, 0.02),
        ("tied", 400, 0.25, 0.05),
        ("sparse", 500, 0.5, 0.1),
        ("sparse", 500, 0.1, 0.2),
    ],
)
def test_the_bar_covers_and_is_not_much_wider_than_needed(
    kind: str, n: int, p: float, eps: float
) -> None:
    x = _data(kind, n)
    mech = ExponentialQuantile(p, 0.0, 100.0, eps, resolution=1.0)
    bound = mech.rank_bound()
    assert bound is not None
    t = selection_rank_halfwidth(*bound, ALPHA)
    draws = mech.sample(x.copy(), SeededRandom(n), 4_000)
    errors = rank_errors(x, p, draws)
    assert float(np.mean(errors > t)) <= ALPHA
    if kind == "spread":  # rank errors spread like the noise: the bar is a few times them
        assert t <= 4 * float(np.quantile(errors, 1 - ALPHA))


def test_the_bar_is_nearly_attained_on_adversarial_data() -> None:
    """97 candidates (3..99) sit e + 1 ranks above the median with score e + 1/2: half the
    data at 0, one record at 1 (the median), e at 2 and the rest at 100. With e = 0.75 t the
    draws outside e ranks exceed alpha: no data-independent bar can be much narrower."""
    mech = ExponentialQuantile(0.5, 0.0, 100.0, 0.1, resolution=1.0)
    t = selection_rank_halfwidth(*mech.rank_bound(), ALPHA)  # type: ignore[misc]
    assert t == math.ceil(math.log(101 / ALPHA) / 0.1) == 77  # eta = 0.1 / (2 * 1/2)
    e = 57  # 0.75 t
    x = np.repeat([0.0, 1.0, 2.0, 100.0], [200, 1, e, 200 - e])
    errors = rank_errors(x, 0.5, mech.sample(x.copy(), SeededRandom(9), 4_000))
    assert float(np.mean(errors > t)) <= ALPHA
    assert float(np.mean(errors > e)) > ALPHA


def test_the_bar_of_a_release_is_that_of_its_mechanism() -> None:
    x = _data("spread", 500)
    out = ds.release(x, ds.Median(0, 100, resolution=1), epsilon=0.5, rng=SeededRandom(1))
    # the value is released with 0.85 of epsilon (the rest: its interval's endpoints)
    point = interval_budget(0.5)[0]
    mech = ExponentialQuantile(0.5, 0.0, 100.0, point, resolution=1.0)
    assert out.rank_accuracy() == selection_rank_halfwidth(*mech.rank_bound(), ALPHA)  # type: ignore[misc]
    assert out.rank_accuracy(0.01) > out.rank_accuracy(0.1)  # type: ignore[operator]
    # ln(101 / 0.05) / (0.425 / (2 * 1/2)) = 17.9: permute-and-flip's multiplier is eps / 2 Delta
    assert out.rank_accuracy() == 18
    with pytest.raises(ds.InputError, match="alpha"):
        out.rank_accuracy(1.5)


@pytest.mark.parametrize(
    "case",
    ["continuous", "upper-off-grid", "smooth", "quantiles", "count"],
)
def test_none_where_the_rank_error_is_not_public(case: str) -> None:
    x = _data("spread", 200)
    releases: dict[str, Any] = {
        "continuous": lambda: ds.release(x, ds.Median(0, 100), epsilon=1.0, rng=SeededRandom(2)),
        "upper-off-grid": lambda: ds.release(
            x, ds.Median(0, 100.5, resolution=1), epsilon=1.0, rng=SeededRandom(2)
        ),
        "smooth": lambda: ds.release(
            x, ds.Median(0, 100, resolution=1), epsilon=1.0, method="smooth", rng=SeededRandom(2)
        ),
        "quantiles": lambda: ds.release(
            x, ds.Quantiles([0.25, 0.75], 0, 100, resolution=1), epsilon=1.0, rng=SeededRandom(2)
        ),
        "count": lambda: ds.release(x, ds.Count(), epsilon=1.0, rng=SeededRandom(2)),
    }
    assert releases[case]().rank_accuracy() is None


def test_grouped_per_person_bars_count_rows_and_reach_the_table() -> None:
    rs = np.random.default_rng(3)
    frame = pd.DataFrame(
        {
            "person": np.repeat(np.arange(400), 2),
            "year": np.tile([2020, 2021], 400),
            "v": rs.integers(0, 51, 800).astype(float),
        }
    )
    kwargs: dict[str, Any] = {
        "column": "v",
        "by": "year",
        "keys": [2020, 2021],
        "privacy_unit": "person",
        "max_groups_per_unit": 2,
        "epsilon": 1.0,
    }
    out = ds.release(frame, ds.Median(0, 50, resolution=1), rng=SeededRandom(4), **kwargs)
    table = out.to_pandas()
    assert "rank_accuracy" in table.columns
    # each year at epsilon 1/2, the value at 0.85 of it, one row per person and year:
    # ln(51/0.05)/(0.425) = 16.3
    assert table["rank_accuracy"].tolist() == [17, 17]
    twice = ds.release(
        pd.concat([frame, frame]),
        ds.Median(0, 50, resolution=1),
        max_rows_per_unit=2,
        rng=SeededRandom(4),
        **kwargs,
    )
    # two rows per person: the mechanism runs at epsilon / 2 per row, the bar doubles (in rows)
    assert twice.to_pandas()["rank_accuracy"].tolist() == [33, 33]  # ln(51/0.05)/0.2125 = 32.6
    assert "ranks (95%)" in str(out)
