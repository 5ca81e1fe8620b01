"""One first pass and one window pass for a query's statistics with every row a unit.

``tables.engines.duckdb.held_scan`` runs the engine's first pass (counts, value-hash
samples, exact sums, checks) once for every statistic a query announces, and the median and the 90th
percentile of one column share their window pass. Both are speed only: each statistic's
release equals the release of that statistic alone, at its share and with its seed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpsense as ds
from dpsense.noise.rng import SeededRandom
from dpsense.query.run import statistic_sources
from dpsense.tables.engines.duckdb import groups as duck_groups
from dpsense.tables.engines.duckdb import held_scan

pytestmark = pytest.mark.filterwarnings("ignore::dpsense.SeededRandomnessWarning")

KEYS = [0, 1, 2]


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    rng = np.random.default_rng(5)
    n = 9000
    return pd.DataFrame(
        {
            "g": rng.integers(0, 3, n),
            "v": np.round(rng.gamma(2.0, 15.0, n), 2),
            "w": rng.normal(3.0, 2.0, n),
        }
    )


def _query() -> dict[str, Any]:
    return {
        "n": ds.Count(),
        "median": ("v", ds.Median(0.0, 100.0)),
        "mean": ("v", ds.Mean(0.0, 100.0)),
        "p90": ("v", ds.Quantile(0.9, 0.0, 100.0)),
        "w_sum": ("w", ds.Sum(-5.0, 10.0)),
    }


@pytest.fixture
def spies(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Any]]:
    """Every group held; the first passes run and the DuckGroups made, listed."""
    monkeypatch.setattr(held_scan, "HOLD_ROWS", 100)
    monkeypatch.setattr(held_scan, "HOLD_DISTINCT", 0)
    seen: dict[str, list[Any]] = {"passes": [], "groups": []}
    first_pass = held_scan._first_pass

    def spy_pass(*args: Any) -> Any:
        seen["passes"].append(args[2])
        return first_pass(*args)

    original = duck_groups.DuckGroups.__init__

    def spy_groups(self: Any, *args: Any) -> None:
        original(self, *args)
        seen["groups"].append(self)

    monkeypatch.setattr(held_scan, "_first_pass", spy_pass)
    monkeypatch.setattr(duck_groups.DuckGroups, "__init__", spy_groups)
    return seen


def _values(result: Any) -> list[Any]:
    return [(key, rel.value) for key, rel in result]


def test_one_first_pass_and_one_window_pass(table: Any, spies: dict[str, list[Any]]) -> None:
    res = ds.release(table, _query(), by="g", keys=KEYS, epsilon=2.0, rng=7)
    assert len(spies["passes"]) == 1  # one aggregation for five statistics
    assert {n.column for n in spies["passes"][0]} == {None, "v", "w"}
    windows = [g for g in spies["groups"] if g.samples or g.buckets]  # buckets: no sample
    assert len(windows) == 1  # the median and the 90th percentile share their groups
    # ... and their window pass; the first pass counted their intervals' counts
    assert windows[0].queries == 1
    assert windows[0].fallbacks == 0
    assert all(g.queries == 0 for g in spies["groups"] if g not in windows)  # sums came first
    assert len(res["median"]) == len(KEYS)


def test_each_statistic_equals_its_release_alone(table: Any, spies: dict[str, list[Any]]) -> None:
    query = _query()
    res = ds.release(table, query, by="g", keys=KEYS, epsilon=2.0, rng=7)
    seeds = statistic_sources(SeededRandom(7), len(query))
    for (name, entry), rng in zip(query.items(), seeds, strict=True):
        column, stat = entry if isinstance(entry, tuple) else (None, entry)
        alone = ds.release(
            table,
            stat,
            column=column,
            by="g",
            keys=KEYS,
            epsilon=res.parameters["split"][name]["epsilon"],
            rng=rng,
        )
        assert _values(res[name]) == _values(alone), name
    other = ds.release(table, query, by="g", keys=KEYS, epsilon=2.0, rng=8)
    assert _values(other["median"]) != _values(res["median"])


def test_the_shared_pass_checks_every_column(table: Any, spies: dict[str, list[Any]]) -> None:
    bad = table.copy()
    bad.loc[5, "w"] = np.nan
    with pytest.raises(ds.InputError, match="missing values"):
        ds.release(bad, _query(), by="g", keys=KEYS, epsilon=2.0, rng=7)
    dropped = ds.release(bad, _query(), by="g", keys=KEYS, epsilon=2.0, rng=7, nulls="drop")
    clean = ds.release(bad.drop(index=5), _query(), by="g", keys=KEYS, epsilon=2.0, rng=7)
    for name in _query():
        assert _values(dropped[name]) == _values(clean[name]), name
    text = table.astype({"w": str})  # numbers written as text read as numbers
    text.loc[3, "w"] = "12,5"
    with pytest.raises(ds.InputError, match="must be numeric") as err:
        ds.release(text, _query(), by="g", keys=KEYS, epsilon=2.0, rng=7)
    assert "12,5" not in str(err.value)
    nulls = table.astype({"g": "Int64"})
    nulls.loc[2, "g"] = pd.NA
    with pytest.raises(ds.InputError, match="missing values"):
        ds.release(nulls, _query(), by="g", keys=KEYS, epsilon=2.0, rng=7)
