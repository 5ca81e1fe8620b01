"""Infinities are values: clipped to the bounds by every statistic, in every input format.

For a seed, a release of a column holding ``inf`` and ``-inf`` equals the release of the
same column with the infinities replaced by the statistic's bounds (clipping equivalence),
and is the same from every format. NaN and nulls are missing values: ``nulls="error"``
refuses them in every format with the same advice, ``nulls="drop"`` drops them everywhere.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dpsense as ds
from tests.tables.conftest import PANEL, formats
from tests.tables.helpers import (
    PER_PERSON,
    infinities_to_bounds,
    release_rows,
    release_value,
    with_infinities,
)

pd = pytest.importorskip("pandas")
pl = pytest.importorskip("polars")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

STATISTICS: dict[str, ds.Statistic] = {
    "count": ds.Count(),
    "sum": ds.Sum(0, 60),
    "mean": ds.Mean(0, 60),
    "variance": ds.Variance(0, 60),
    "std": ds.Std(0, 60),
    "median": ds.Median(0, 60, resolution=1.0),
    "quantile": ds.Quantile(0.9, 0, 60),
    "quantiles": ds.Quantiles([0.1, 0.5, 0.9], 0, 60),
    "trimmed-mean": ds.TrimmedMean(2, 0, 60),
}


@pytest.fixture(scope="module")
def infinite() -> Any:
    frame = pd.DataFrame(PANEL)
    return frame.assign(hours=with_infinities(frame["hours"]))


@pytest.fixture(scope="module")
def infinite_files(tmp_path_factory: pytest.TempPathFactory, infinite: Any) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("infinite")
    csv, parquet = folder / "panel.csv", folder / "panel.parquet"
    infinite.sample(frac=1.0, random_state=3).to_csv(csv, index=False)  # "inf", "-inf"
    infinite.to_parquet(parquet)
    assert "-inf" in csv.read_text()
    return {"csv": csv, "parquet": parquet}


def _every_format(frame: Any, files: dict[str, Path]) -> dict[str, Callable[[], Any]]:
    return {
        **formats(frame, files),
        "pandas-nullable": lambda: frame.astype({"hours": "Float64"}),
    }


@pytest.mark.parametrize("name", list(STATISTICS))
def test_per_person_grouped_release_clips_infinities_in_every_format(
    name: str, infinite: Any, infinite_files: dict[str, Path]
) -> None:
    statistic = STATISTICS[name]
    replaced = infinite.assign(hours=infinities_to_bounds(infinite["hours"].to_numpy(), statistic))
    expected = release_rows(ds.release(replaced, statistic, epsilon=2.0, rng=17, **PER_PERSON))
    for label, make in _every_format(infinite, infinite_files).items():
        got = ds.release(make(), statistic, epsilon=2.0, rng=17, **PER_PERSON)
        assert release_rows(got) == expected, label


def _one_column_inputs(values: np.ndarray) -> dict[str, Any]:
    return {
        "numpy": values,
        "list": values.tolist(),
        "pandas-series": pd.Series(values),
        "pandas-nullable-series": pd.Series(values, dtype="Float64"),
        "polars-series": pl.Series(values),
        "arrow-array": pa.array(values),
        "arrow-chunked": pa.chunked_array([values[:7], values[7:]]),
        "table": pd.DataFrame({"v": values}),
        "table-with-column": {"v": values, "other": np.zeros(values.shape[0])},
    }


@pytest.mark.parametrize("name", list(STATISTICS))
def test_one_column_release_value_and_sensitivities_clip_infinities(name: str) -> None:
    statistic = STATISTICS[name]
    values = with_infinities(PANEL["hours"][:200])
    replaced = infinities_to_bounds(values, statistic)
    expected = release_rows(ds.release(replaced, statistic, epsilon=1.0, rng=5))
    for label, data in _one_column_inputs(values).items():
        column = "v" if label == "table-with-column" else None
        got = ds.release(data, statistic, column=column, epsilon=1.0, rng=5)
        assert release_rows(got) == expected, label
    # the non-private diagnostics of the data owner clip them too
    np.testing.assert_array_equal(statistic(values), statistic(replaced))
    if not isinstance(statistic, ds.Quantiles):
        assert statistic.local_sensitivity(values) == statistic.local_sensitivity(replaced)
        assert statistic.smooth_sensitivity(values, 0.1) == statistic.smooth_sensitivity(
            replaced, 0.1
        )
        assert statistic.distance_to_instability(values, 1.0) == statistic.distance_to_instability(
            replaced, 1.0
        )


@pytest.mark.parametrize(
    ("statistic", "method", "options"),
    [
        (ds.Mean(0, 60), "global", {}),
        (ds.Mean(0, 60), "smooth", {}),
        (ds.Mean(0, 60), "ksw", {}),
        (ds.Mean(0, 60), "bounded-ls", {"delta": 1e-6}),
        (ds.Median(0, 60), "smooth", {}),
        (ds.Median(0, 60), "ptr", {"delta": 1e-6, "bound": 5.0}),
        (ds.Median(0, 60), "adaptive", {}),
    ],
    ids=["mean-global", "mean-smooth", "ksw", "bounded-ls", "median-smooth", "ptr", "adaptive"],
)
def test_every_method_clips_infinities(
    statistic: ds.Statistic, method: str, options: dict[str, Any]
) -> None:
    values = with_infinities(PANEL["hours"][:300])
    out = {
        label: release_rows(
            ds.release(data, statistic, method=method, epsilon=1.0, rng=2, **options)
        )
        for label, data in {
            "infinite": values,
            "replaced": infinities_to_bounds(values, statistic),
            "table": pd.DataFrame({"v": values}),
        }.items()
    }
    assert out["infinite"] == out["replaced"] == out["table"]


def test_csv_spellings_of_infinity_are_read_as_duckdb_reads_them(tmp_path: Path) -> None:
    """inf, -inf, Infinity, -Infinity, INF: the file releases what the clipped data do."""
    spelled = ["inf", "-inf", "Infinity", "-Infinity", "INF", "+inf"]
    numbers = [np.inf, -np.inf, np.inf, -np.inf, np.inf, np.inf]
    path = tmp_path / "spelled.csv"
    cells = [str(float(v)) for v in PANEL["hours"][:60]] + spelled
    path.write_text("v\n" + "\n".join(cells) + "\n")
    values = np.array([*PANEL["hours"][:60], *numbers], dtype=float)
    for statistic in (ds.Sum(0, 60), ds.Median(0, 60)):
        expected = ds.release(
            infinities_to_bounds(values, statistic), statistic, epsilon=1.0, rng=4
        )
        got = ds.release(path, statistic, epsilon=1.0, rng=4)
        assert release_rows(got) == release_rows(expected)


def _holes(frame: Any) -> Any:
    """The infinite panel with missing hours too (NaN, read as null by some formats)."""
    hours = frame["hours"].to_numpy().copy()
    hours[3::11] = np.nan
    return frame.assign(hours=hours)


def test_nan_is_a_missing_value_in_every_format(
    infinite: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    holes = _holes(infinite)
    folder = tmp_path_factory.mktemp("holes")
    files = {"csv": folder / "holes.csv", "parquet": folder / "holes.parquet"}
    holes.sample(frac=1.0, random_state=3).to_csv(files["csv"], index=False)
    holes.to_parquet(files["parquet"])
    statistic = ds.Mean(0, 60)
    kept = holes[~np.isnan(holes["hours"].to_numpy())]
    expected = release_rows(ds.release(kept, statistic, epsilon=2.0, rng=9, **PER_PERSON))
    for label, make in _every_format(holes, files).items():
        with pytest.raises(ds.InputError, match="nulls='drop'"):
            ds.release(make(), statistic, epsilon=2.0, rng=9, **PER_PERSON)
        got = ds.release(make(), statistic, epsilon=2.0, rng=9, nulls="drop", **PER_PERSON)
        assert release_rows(got) == expected, label


def test_nan_and_none_are_missing_values_in_one_column_inputs() -> None:
    values = with_infinities(PANEL["hours"][:100])
    values[4::9] = np.nan
    kept = values[~np.isnan(values)]
    statistic = ds.Median(0, 60)
    expected = release_rows(ds.release(kept, statistic, epsilon=1.0, rng=6))
    inputs = {
        **_one_column_inputs(values),
        "list-with-none": [None if np.isnan(v) else v for v in values.tolist()],
        "arrow-with-nulls": pa.array(values, from_pandas=True),
        "pandas-with-na": pd.Series(values, dtype="Float64").mask(np.isnan(values), pd.NA),
    }
    for label, data in inputs.items():
        column = "v" if label == "table-with-column" else None
        with pytest.raises(ds.InputError, match="nulls='drop'"):
            ds.release(data, statistic, column=column, epsilon=1.0, rng=6)
        got = ds.release(data, statistic, column=column, nulls="drop", epsilon=1.0, rng=6)
        assert release_rows(got) == expected, label


def test_a_count_counts_every_record_infinite_or_missing() -> None:
    """A count uses no value, so NaN and infinities are records like any other, in an
    array as in a table."""
    values = np.array([1.0, np.nan, np.inf, -np.inf, 2.0] * 8)
    finite = np.ones(values.shape[0])
    expected = release_rows(ds.release(finite, ds.Count(), epsilon=1.0, rng=3))
    for data in (values, pd.Series(values), pd.DataFrame({"v": values})):
        assert release_rows(ds.release(data, ds.Count(), epsilon=1.0, rng=3)) == expected


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: ds.Mean(0, np.inf), "'upper'"),
        (lambda: ds.Median(-np.inf, 1), "'lower'"),
        (lambda: ds.Median(0, 1, resolution=np.inf), "'resolution'"),
        (lambda: ds.release([1.0], ds.Mean(0, 1), epsilon=np.inf), "'epsilon'"),
        (lambda: ds.release([1.0], ds.Mean(0, 1), epsilon=1.0, delta=np.inf), "'delta'"),
        (lambda: ds.Median(0, 1).smooth_sensitivity([np.inf], np.inf), "'beta'"),
        (lambda: ds.Median(0, 1).distance_to_instability([np.inf], np.inf), "'bound'"),
        (lambda: ds.laplace(np.inf, sensitivity=1.0, epsilon=1.0), "'value'"),
        (lambda: ds.empirical_sensitivity(np.median, [np.inf], [0.0, np.inf]), "'universe'"),
        (
            lambda: ds.sample_and_aggregate(
                [np.inf], np.mean, blocks=1, lower=0, upper=np.inf, epsilon=1.0
            ),
            "'upper'",
        ),
    ],
)
def test_parameters_that_are_not_data_still_reject_infinity(
    call: Callable[[], Any], name: str
) -> None:
    with pytest.raises(ds.InputError, match=name):
        call()


def test_nan_kept_as_nan_is_missing_in_every_format(tmp_path: Path) -> None:
    """NaN in the value column, a float by-column or a float privacy unit is a missing
    value whether the format keeps it as NaN (Polars; Parquet files written by Polars or
    pyarrow, whose statistics leave NaN out; a CSV's "nan") or as null (pandas)."""
    rs = np.random.default_rng(1)
    n = 120
    group = rs.integers(0, 2, n).astype(float)
    person = rs.integers(0, 40, n).astype(float)
    value = rs.normal(5, 2, n).round(2)
    group[::13], person[5::17], value[7::19] = np.nan, np.nan, np.nan
    frame = pd.DataFrame({"g": group, "u": person, "v": value})
    kwargs = {"column": "v", "by": "g", "keys": [0.0, 1.0], "privacy_unit": "u"}
    expected = release_rows(
        ds.release(frame.dropna(), ds.Mean(0, 10), epsilon=1.0, rng=2, **kwargs)
    )
    inputs: dict[str, Any] = {
        "pandas": frame,
        "polars-nan": pl.from_pandas(frame, nan_to_null=False),
        "arrow": pa.Table.from_pandas(frame, preserve_index=False),
    }
    for column in ("g", "u", "v"):  # NaN in one column at a time, in files
        only = frame.assign(**{c: frame[c].fillna(0.0) for c in "guv" if c != column})
        kept = only.dropna()
        want = release_rows(ds.release(kept, ds.Mean(0, 10), epsilon=1.0, rng=2, **kwargs))
        csv = tmp_path / f"{column}.csv"
        cells = [",".join("nan" if np.isnan(x) else str(x) for x in row) for row in only.to_numpy()]
        csv.write_text("g,u,v\n" + "\n".join(cells) + "\n")
        by_polars, by_arrow = tmp_path / f"{column}-pl.parquet", tmp_path / f"{column}-pa.parquet"
        pl.from_pandas(only, nan_to_null=False).write_parquet(by_polars)
        pq.write_table(pa.table({c: pa.array(only[c].to_numpy()) for c in "guv"}), by_arrow)
        for label, data in {
            "csv": csv,
            "polars-parquet": by_polars,
            "pyarrow-parquet": by_arrow,
        }.items():
            # a CSV's by-column matched to public keys, and its privacy unit, are text
            # unless declared (tables.key_types): declared floats, their "nan" is a NaN
            typed = {"schema": {"g": "float", "u": "float"}} if label == "csv" else {}
            with pytest.raises(ds.InputError, match="nulls='drop'"):
                ds.release(data, ds.Mean(0, 10), epsilon=1.0, rng=2, **kwargs, **typed)
            got = ds.release(
                data, ds.Mean(0, 10), epsilon=1.0, rng=2, nulls="drop", **kwargs, **typed
            )
            assert release_rows(got) == want, (label, column)
    for label, data in inputs.items():
        with pytest.raises(ds.InputError, match="nulls='drop'"):
            ds.release(data, ds.Mean(0, 10), epsilon=1.0, rng=2, **kwargs)
        got = ds.release(data, ds.Mean(0, 10), epsilon=1.0, rng=2, nulls="drop", **kwargs)
        assert release_rows(got) == expected, label


@pytest.mark.parametrize("name", ["median", "quantile", "sum", "mean", "count"])
def test_groups_held_in_duckdb_clip_infinities(
    infinite: Any, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every row a unit, every group held in DuckDB (its first pass and window pass read
    the raw values): the release equals the one with the infinities replaced by the
    bounds."""
    from dpsense.tables.engines.duckdb import held_scan

    monkeypatch.setattr(held_scan, "HOLD_ROWS", 10)
    monkeypatch.setattr(held_scan, "HOLD_DISTINCT", 0)
    statistic = {"median": ds.Median(0, 60), **STATISTICS}[name]
    kwargs: dict[str, Any] = {"by": "year", "keys": PER_PERSON["keys"], "epsilon": 2.0}
    if name != "count":
        kwargs["column"] = "hours"
    replaced = infinite.assign(hours=infinities_to_bounds(infinite["hours"].to_numpy(), statistic))
    got = ds.release(infinite, statistic, rng=3, **kwargs)
    want = ds.release(replaced, statistic, rng=3, **kwargs)
    assert [release_value(rel) for _, rel in got] == [release_value(rel) for _, rel in want]
