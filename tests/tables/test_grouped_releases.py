"""Grouped, per-person releases on a panel table: parity across formats and row orders,
agreement with per-group computations done by hand, contribution bounding visibly applied."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dpsense as ds
from tests.tables.conftest import formats
from tests.tables.helpers import ENGINES, HOURS_BY_YEAR, YEARS, on_engine

STATISTICS = {
    "count": ds.Count(),
    "sum": ds.Sum(0, 80),
    "mean": ds.Mean(0, 80),
    "median": ds.Median(0, 80, resolution=1.0),
    "quantile": ds.Quantile(0.9, 0, 80),
}
PER_PERSON = {
    "column": "hours",
    "by": "year",
    "privacy_unit": "person",
    "max_rows_per_unit": 2,
    "max_groups_per_unit": 4,
}


def _values(result: Any) -> list[tuple[Any, float | None]]:
    return [(key, rel.value) for key, rel in result]


@pytest.mark.parametrize("name", list(STATISTICS))
@pytest.mark.parametrize("selection", ["private", "public"])
def test_same_seed_same_result_from_every_format_and_row_order(
    name: str, selection: str, frame: Any, files: dict[str, Path]
) -> None:
    keys = {"keys": [2018, 2019, 2020, 2021, 2022]} if selection == "public" else {}
    delta = 1e-6 if selection == "private" else 0.0
    # a CSV's types are inferred from its values, so not public: it declares hours and
    # the by-column year integer columns as every other format's schema does (docs/tables.md
    # §7; an undeclared by-column of a CSV is grouped as text)
    declared = {"schema": {"hours": "int", "year": "int"}}
    results = {
        label: _values(
            ds.release(
                make(),
                STATISTICS[name],
                epsilon=2.0,
                delta=delta,
                rng=17,
                **PER_PERSON,
                **keys,
                **(declared if label.startswith("csv") else {}),
            )
        )
        for label, make in formats(frame, files).items()
    }
    reference = results["pandas"]
    assert len(reference) == (5 if selection == "public" else 4)
    for label, got in results.items():
        assert got == reference, label


def _bounded_counts(frame: Any, m: int) -> dict[int, int]:
    """Rows kept per year when each person keeps at most m rows per year (no group limit)."""
    per = frame.groupby(["year", "person"]).size().clip(upper=m)
    return {int(k): int(v) for k, v in per.groupby(level="year").sum().items()}


def _huge_epsilon_counts(data: Any, rows: int, groups: int, seed: int) -> ds.GroupedRelease:
    """Per-year counts of people's rows (at most ``rows`` per person-year, ``groups`` years
    per person) at epsilon 1e6, where the noise is zero."""
    return ds.release(
        data,
        ds.Count(),
        by="year",
        keys=YEARS,
        privacy_unit="person",
        max_rows_per_unit=rows,
        max_groups_per_unit=groups,
        epsilon=1e6,
        rng=seed,
    )


@pytest.mark.parametrize(
    ("engine", "m", "seed"),
    [("duckdb", 1, 1), ("duckdb", 2, 1), pytest.param("spark", 2, 2, marks=pytest.mark.spark)],
)
def test_counts_are_the_bounded_counts(
    request: pytest.FixtureRequest, frame: Any, engine: str, m: int, seed: int
) -> None:
    """With a huge epsilon the noise is zero: the counts are exactly the bounded counts,
    m rows at most per person-year (m = 1: the number of people seen that year), in every
    engine (Spark bounds the rows in Spark)."""
    out = _huge_epsilon_counts(on_engine(engine, frame, request), m, 4, seed)
    expected = _bounded_counts(frame, m)
    assert {k: r.value for k, r in out} == expected
    raw = frame.groupby("year").size()
    # bounding is visible: fewer rows than the table has, at most m per person
    assert all(expected[y] < int(raw[y]) for y in expected)
    if m == 1:
        assert expected == {
            int(k): int(v) for k, v in frame.groupby("year")["person"].nunique().items()
        }


@pytest.mark.parametrize("engine", ENGINES)
def test_max_groups_per_unit_keeps_one_year_per_person(
    request: pytest.FixtureRequest, frame: Any, engine: str
) -> None:
    """One row per person-year and one year per person: the bounded counts (released with a
    huge epsilon) add up to the number of people, spread over the years, not all in one."""
    out = _huge_epsilon_counts(on_engine(engine, frame, request), 1, 1, 2)
    assert sum(r.value for _, r in out) == frame["person"].nunique()
    assert all(r.value > 30 for _, r in out)


def test_location_statistics_match_hand_computations(frame: Any) -> None:
    """No row dropped (m = 4 is every person-year's maximum), huge epsilon: sums, means,
    medians and 0.9-quantiles per year equal pandas' on the clipped column."""
    assert frame.groupby(["year", "person"]).size().max() <= 4
    common = {**HOURS_BY_YEAR, "max_rows_per_unit": 4, "max_groups_per_unit": 4, "rng": 3}
    clipped = frame.assign(hours=frame["hours"].clip(0, 80))
    groups = clipped.groupby("year")["hours"]
    sums = ds.release(frame, ds.Sum(0, 80), epsilon=1e7, **common)
    means = ds.release(frame, ds.Mean(0, 80), epsilon=1e7, method="global", **common)
    medians = ds.release(frame, ds.Median(0, 80, resolution=1.0), epsilon=1e5, **common)
    q90 = ds.release(frame, ds.Quantile(0.9, 0, 80, resolution=1.0), epsilon=1e5, **common)
    for year, values in groups:
        v = np.sort(values.to_numpy(dtype=float))
        assert sums[year].value == pytest.approx(v.sum(), abs=0.5)
        assert means[year].value == pytest.approx(v.mean(), abs=1e-2)
        assert medians[year].value == v[math.ceil(0.5 * v.size) - 1]
        # the exponential mechanism's optimum: the candidates of least tie-aware score
        # max(0, below - p n, above - (1 - p) n)
        grid = np.arange(0.0, 81.0)
        below = np.searchsorted(v, grid, side="left")
        above = v.size - np.searchsorted(v, grid, side="right")
        score = np.maximum(0.0, np.maximum(below - 0.9 * v.size, above - 0.1 * v.size))
        assert q90[year].value in grid[score == score.min()]
        assert abs(q90[year].value - v[math.ceil(0.9 * v.size) - 1]) <= 1.0


def test_public_keys_release_absent_groups_and_drop_others(frame: Any) -> None:
    out = ds.release(frame, ds.Count(), by="year", keys=[2020, 1999], epsilon=1e6, rng=4)
    assert out.selection == "public keys"
    assert [k for k, _ in out] == [2020, 1999]
    assert out[1999].value == 0.0
    assert out[2020].value == float((frame["year"] == 2020).sum())


def test_two_by_columns_and_tuple_keys(frame: Any) -> None:
    keys = [(2019, "north"), (2022, "west")]
    out = ds.release(frame, ds.Count(), by=["year", "region"], keys=keys, epsilon=1e6, rng=5)
    assert [k for k, _ in out] == keys
    for (year, region), rel in out:
        assert rel.value == float(((frame["year"] == year) & (frame["region"] == region)).sum())
    rows = out.to_dicts()
    assert rows[0]["year"] == 2019
    assert rows[0]["region"] == "north"
    table = out.to_pandas()
    assert list(table.columns) == [
        "year",
        "region",
        "value",
        "refused",
        "method",
        "noise",
        "scale",
        "low",
        "high",
        "unreliable",
        "accuracy",
        "rank_accuracy",
    ]


def test_private_selection_keeps_big_groups_and_says_how_it_split(frame: Any) -> None:
    out = ds.release(
        frame,
        ds.Median(0, 80, resolution=1.0),
        column="hours",
        by="year",
        privacy_unit="person",
        max_rows_per_unit=2,
        max_groups_per_unit=4,
        epsilon=1.0,
        delta=1e-6,
        rng=6,
    )
    assert out.selection == "private"
    assert sorted(k for k, _ in out) == [2019, 2020, 2021, 2022]
    assert out.epsilon == 1.0
    assert out.delta == 1e-6
    sel = out.parameters["selection"]
    per = out.parameters["per_group"]
    assert sel["epsilon"] + 4 * per["epsilon"] <= 1.0
    assert sel["delta"] + 4 * per["delta"] <= 1e-6 * (1 + 1e-12)
    for _, rel in out:
        assert rel.parameters["max_rows_per_unit"] == 2


def test_every_method_runs_per_person_and_grouped(frame: Any) -> None:
    base = {"column": "hours", **{k: v for k, v in PER_PERSON.items() if k != "column"}}
    base["keys"] = [2019, 2020]
    cases = [
        (ds.Median(0, 80), "global", {}),
        (ds.Median(0, 80), "smooth", {}),
        (ds.Median(0, 80), "ptr", {"bound": 5.0}),
        (ds.Median(0, 80), "exponential", {}),
        (ds.Median(0, 80), "adaptive", {}),
        (ds.Mean(0, 80), "ksw", {}),
        (ds.Mean(0, 80), "bounded-ls", {}),
        (ds.Mean(0, 80), "auto", {}),
        (ds.Variance(0, 80), "smooth", {}),
    ]
    for stat, method, options in cases:
        delta = 1e-6 if method in ("ptr", "bounded-ls") else 0.0
        out = ds.release(
            frame, stat, epsilon=2.0, delta=delta, method=method, rng=8, **base, **options
        )
        assert len(out) == 2
        for _, rel in out:
            assert rel.refused or 0.0 <= rel.value <= 80.0 * (
                80.0 if stat.name == "variance" else 1
            )


def test_ungrouped_per_person_release_returns_a_release(frame: Any) -> None:
    out = ds.release(
        frame,
        ds.Median(0, 80),
        column="hours",
        privacy_unit="person",
        max_rows_per_unit=3,
        epsilon=1.0,
        rng=9,
    )
    assert isinstance(out, ds.Release)
    assert out.parameters["max_rows_per_unit"] == 3


def test_accountant_charges_a_grouped_release_once(frame: Any, tmp_path: Path) -> None:
    acc = ds.Accountant(epsilon=3.0, ledger=tmp_path / "ledger.db")
    out = acc.release(
        frame,
        ds.Count(),
        by="year",
        keys=[2019, 2020, 2021],
        privacy_unit="person",
        max_groups_per_unit=3,
        epsilon=1.0,
        rng=10,
    )
    assert len(out) == 3
    assert acc.spent[0] == pytest.approx(1.0)


def test_identical_rows_of_one_person_are_capped_too() -> None:
    """Ten identical rows of one person count m = 3 times (equal rows hash alike, so a
    threshold on the hash would keep them all; the engine keeps exactly m)."""
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(
        {"person": [1] * 10 + [2, 3], "g": ["a"] * 12, "v": [7.0] * 10 + [1.0, 2.0]}
    )
    count = ds.release(
        frame,
        ds.Count(),
        by="g",
        keys=["a"],
        privacy_unit="person",
        max_rows_per_unit=3,
        epsilon=1e6,
        rng=1,
    )
    assert count["a"].value == 5.0
    total = ds.release(
        frame,
        ds.Sum(0, 10),
        column="v",
        by="g",
        keys=["a"],
        privacy_unit="person",
        max_rows_per_unit=3,
        epsilon=1e7,
        rng=1,
    )
    assert total["a"].value == pytest.approx(24.0, abs=0.01)


@pytest.mark.parametrize("m", [3, 20])
def test_bounding_keeps_at_most_m_rows_per_person(m: int) -> None:
    """Both storage paths of the engine (scalar slots for m <= 16, lists above): person 1
    has 30 rows with distinct values, person 2 has 5; the count is min(30, m) + min(5, m)
    and the kept values of person 1 are m distinct ones of theirs."""
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(
        {
            "person": [1] * 30 + [2] * 5,
            "g": ["a"] * 35,
            "v": [float(i) for i in range(30)] + [50.0] * 5,
        }
    )
    common = {"by": "g", "keys": ["a"], "privacy_unit": "person", "max_rows_per_unit": m}
    count = ds.release(frame, ds.Count(), epsilon=1e6, rng=1, **common)
    assert count["a"].value == min(30, m) + min(5, m)
    top = ds.release(
        frame, ds.Quantile(0.99, 0, 100, resolution=1.0), column="v", epsilon=1e5, rng=2, **common
    )
    assert top["a"].value == 50.0


@pytest.mark.parametrize("public", [True, False])
def test_the_kept_group_is_drawn_per_person_not_one_order_for_everyone(public: bool) -> None:
    """400 people each have one row in group "a" and one in "b", one group kept each. With
    the group order hashed per person, each group keeps about half of them (binomial,
    sd 10); one order of the groups for everybody would give 400 and 0."""
    pd = pytest.importorskip("pandas")
    people = np.arange(400)
    frame = pd.DataFrame({"person": np.repeat(people, 2), "g": ["a", "b"] * 400, "v": np.ones(800)})
    kwargs: dict[str, Any] = {"keys": ["a", "b"]} if public else {"delta": 1e-6}
    out = ds.release(
        frame,
        ds.Count(),
        by="g",
        privacy_unit="person",
        max_groups_per_unit=1,
        epsilon=1e6,
        rng=5,
        **kwargs,
    )
    counts = {key: r.value for key, r in out}
    assert counts["a"] + counts["b"] == pytest.approx(400, abs=0.01)
    assert 140 < counts["a"] < 260
