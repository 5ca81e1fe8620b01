"""Hypothesis strategies shared by the statistics tests: small tied or continuous data."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import dpsense as ds

LOWER, UPPER = 0.0, 10.0
GRID = (0.0, 1.0, 2.0, 4.0, 5.0, 7.0, 10.0)

STATISTICS: dict[str, ds.Statistic] = {
    "count": ds.Count(),
    "sum": ds.Sum(-3.0, UPPER),
    "mean": ds.Mean(LOWER, UPPER),
    "variance": ds.Variance(LOWER, UPPER),
    "std": ds.Std(LOWER, UPPER),
    "median": ds.Median(LOWER, UPPER),
    "quantile-0.3": ds.Quantile(0.3, LOWER, UPPER),
    "quantile-0.8": ds.Quantile(0.8, LOWER, UPPER),
    "trimmed-mean": ds.TrimmedMean(1, LOWER, UPPER),
}
RELATIONS = ("add-remove", "substitute")


def bounds_of(stat: ds.Statistic) -> tuple[float, float]:
    return (getattr(stat, "lower", LOWER), getattr(stat, "upper", UPPER))


tied = st.lists(st.sampled_from(GRID), min_size=1, max_size=5)
continuous = st.lists(
    st.floats(LOWER, UPPER, allow_nan=False).map(lambda v: round(v, 3)), min_size=1, max_size=5
)
small_data = st.one_of(tied, continuous).map(lambda v: np.array(v, dtype=np.float64))


@st.composite
def neighbour_pairs(draw: st.DrawFn, relation: str) -> tuple[np.ndarray, np.ndarray]:
    """A dataset and one of its neighbours under ``relation``."""
    x = draw(st.one_of(tied, continuous).filter(lambda v: len(v) >= 1))
    x = np.array(x, dtype=np.float64)
    new = draw(st.one_of(st.sampled_from(GRID), st.floats(LOWER, UPPER, allow_nan=False)))
    i = draw(st.integers(0, len(x) - 1))
    if relation == "substitute":
        y = x.copy()
        y[i] = new
    elif draw(st.booleans()) and len(x) >= 2:
        y = np.delete(x, i)
    else:
        y = np.append(x, new)
    return x, y
