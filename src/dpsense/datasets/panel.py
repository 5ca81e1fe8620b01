"""A synthetic panel: people observed over several years, several rows per person-year.

Made for the "tables and people" guide, the tests and the benchmarks: a generative model
with a fixed seed, describing no real person. Each person has a stable level (education,
a personal wage effect) and appears in most years; in a year they may have several jobs,
one row each, so one person contributes several rows per year and rows in several years,
exactly the case that contribution bounding is for.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["make_panel"]


def make_panel(
    people: int = 2_000, years: tuple[int, ...] = tuple(range(2015, 2023)), seed: int = 0
) -> dict[str, NDArray[Any]]:
    """A synthetic panel table, one numpy array per column.

    Parameters
    ----------
    people : int
        Number of people.
    years : tuple of int
        The years observed; each person appears in a year with probability 0.85.
    seed : int
        Seed of the generator (the table is a deterministic function of the arguments).

    Returns
    -------
    dict of str to numpy.ndarray
        ``person`` (int), ``year`` (int), ``region`` (str, five regions), ``hours`` (int,
        weekly hours of one job, 1..80, many exactly 40), ``log_wage`` (float) and
        ``education`` (int, years of schooling, constant per person). One row per job:
        1 to 4 rows per person-year (most have one).

    Examples
    --------
    >>> from dpsense.datasets import make_panel
    >>> table = make_panel(people=10, seed=1)
    >>> sorted(table)
    ['education', 'hours', 'log_wage', 'person', 'region', 'year']
    """
    rs = np.random.default_rng(seed)
    regions = np.array(["north", "south", "east", "west", "centre"])
    education = np.clip(np.round(rs.normal(12.5, 2.5, people)), 6, 20).astype(np.int64)
    region = regions[rs.integers(0, regions.shape[0], people)]
    effect = rs.normal(0.0, 0.35, people)
    ys = np.asarray(years, dtype=np.int64)
    present = rs.random((people, ys.shape[0])) < 0.85
    person_idx, year_idx = np.nonzero(present)
    jobs = 1 + rs.binomial(3, 0.15, person_idx.shape[0])
    person_rows = np.repeat(person_idx, jobs)
    year_rows = np.repeat(year_idx, jobs)
    n = person_rows.shape[0]
    full_time = rs.random(n) < 0.45
    hours = np.where(full_time, 40, np.clip(np.round(rs.gamma(4.0, 8.0, n)), 1, 80))
    trend = 0.02 * year_rows
    log_wage = (
        2.3
        + 0.08 * (education[person_rows] - 12)
        + effect[person_rows]
        + trend
        + rs.normal(0.0, 0.25, n)
    )
    return {
        "person": person_rows.astype(np.int64),
        "year": ys[year_rows],
        "region": region[person_rows],
        "hours": hours.astype(np.int64),
        "log_wage": log_wage,
        "education": education[person_rows],
    }
