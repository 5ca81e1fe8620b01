"""Tests of dpsense.data.load_column and the bundled census data."""

from __future__ import annotations

import gzip
import runpy
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dpsense as ds
from dpsense.data import load_column
from dpsense.data.source import open_table, quote
from dpsense.datasets import census_path, load_census
from dpsense.errors import InputError

SECRET = "987654.321"  # a data value that must never appear in an error message


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# ------------------------------------------------------------------------------ CSV


def test_reads_a_numeric_column(tmp_path: Path) -> None:
    path = write(tmp_path, "d.csv", "name,age\nann,30\nbob,41.5\n")
    np.testing.assert_array_equal(load_column(path, "age"), [30.0, 41.5])
    assert load_column(str(path), "age").dtype == np.float64


def test_single_column_file_needs_no_column_name(tmp_path: Path) -> None:
    path = write(tmp_path, "d.csv", "x\n1\n2\n\n3\n")
    np.testing.assert_array_equal(load_column(path), [1.0, 2.0, 3.0])


@pytest.mark.parametrize("delimiter", [";", "\t", "|"])
def test_other_delimiters(tmp_path: Path, delimiter: str) -> None:
    path = write(tmp_path, "d.csv", f"a{delimiter}b\n1{delimiter}2\n3{delimiter}4\n")
    np.testing.assert_array_equal(load_column(path, "b"), [2.0, 4.0])


def test_quoted_cells_bom_and_case_insensitive_column(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_bytes('\ufeff"Age","Note"\n"12","a, b"\n 13 ,c\n'.encode())
    np.testing.assert_array_equal(load_column(path, "age"), [12.0, 13.0])


def test_gzip_csv(tmp_path: Path) -> None:
    path = tmp_path / "d.csv.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write("v\n1\n2\n")
    np.testing.assert_array_equal(load_column(path, "v"), [1.0, 2.0])


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.csv"
    with pytest.raises(InputError, match=r"^file not found: .*nope\.csv$"):
        load_column(path, "x")


def test_directory_is_not_a_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="directory"):
        load_column(tmp_path, "x")


def test_empty_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="file is empty"):
        load_column(write(tmp_path, "e.csv", ""), "x")


def test_header_without_rows_is_an_empty_column(tmp_path: Path) -> None:
    # under add-remove an error here would tell the empty dataset from a one-row one
    path = write(tmp_path, "h.csv", "a,b\n")
    assert load_column(path, "a").shape == (0,)
    assert load_column(write(tmp_path, "blank.csv", "a,b\n\n\n"), "b").shape == (0,)
    with pytest.raises(InputError, match="no data rows") as info:
        load_column(path, "a", allow_empty=False)
    assert not any(ch.isdigit() for ch in str(info.value).replace(str(path), ""))


def test_empty_in_memory_column() -> None:
    assert load_column({"a": []}, "a").shape == (0,)
    assert load_column(np.array([])).shape == (0,)
    with pytest.raises(InputError, match="no data rows"):
        load_column({"a": []}, "a", allow_empty=False)


def test_binary_file_is_unreadable(tmp_path: Path) -> None:
    path = tmp_path / "b.csv"
    path.write_bytes(b"a,b\n\xff\xfe\x00\x81,2\n")
    with pytest.raises(InputError, match="not a UTF-8 text file"):
        load_column(path, "a")


def test_missing_column_lists_names_not_values(tmp_path: Path) -> None:
    path = write(tmp_path, "d.csv", f"income,age\n{SECRET},30\n")
    with pytest.raises(InputError) as info:
        load_column(path, "salary")
    message = str(info.value)
    assert "column 'salary' is not in" in message
    assert "'income'" in message
    assert "'age'" in message
    assert SECRET not in message


def test_several_columns_and_no_choice(tmp_path: Path) -> None:
    path = write(tmp_path, "d.csv", "a,b\n1,2\n")
    with pytest.raises(InputError, match="2 columns; name the one to use"):
        load_column(path)


def test_non_numeric_entries_are_neither_shown_nor_counted(tmp_path: Path) -> None:
    path = write(tmp_path, "d.csv", f"v,w\n1,x\nJohn Smith,y\n,z\n{SECRET},\n3,4\n")
    for column in ("w", "v"):
        with pytest.raises(InputError) as info:
            load_column(path, column)
        message = str(info.value)
        assert "some entries are not numbers" in message
        assert not any(ch.isdigit() for ch in message.replace(str(path), ""))
        assert "John" not in message
        assert SECRET not in message
        assert "\n" not in message


@pytest.mark.filterwarnings("ignore::dpsense.SeededRandomnessWarning")
@pytest.mark.parametrize("row", [f"{SECRET}", f"3,{SECRET},5"])
def test_rows_with_more_or_fewer_fields_are_refused(tmp_path: Path, row: str) -> None:
    """A row whose fields do not match the header row is an error for the whole file (a
    table release reads the file the same way), without its values or its position."""
    path = write(tmp_path, "d.csv", f"v,w\n1,2\n{row}\n3,4\n")
    for read in (
        lambda: load_column(path, "v"),
        lambda: ds.release(path, ds.Sum(0, 10), column="v", epsilon=1.0),
    ):
        with pytest.raises(InputError, match="more or fewer fields than the header") as info:
            read()
        message = str(info.value)
        assert SECRET not in message
        assert not any(ch.isdigit() for ch in message.replace(str(path), ""))


@pytest.mark.parametrize("bad", ["nan", "NaN"])
def test_nan_is_a_missing_value(tmp_path: Path, bad: str) -> None:
    path = write(tmp_path, "d.csv", f"v\n{SECRET}\n{bad}\n2\n")
    with pytest.raises(InputError, match="contains missing values") as info:
        load_column(path, "v")
    assert SECRET not in str(info.value)
    assert not any(ch.isdigit() for ch in str(info.value).replace(str(path), ""))


def test_empty_cells_are_missing_values(tmp_path: Path) -> None:
    path = write(tmp_path, "d.csv", f"v,w\n{SECRET},1\n,2\n")
    with pytest.raises(InputError, match="contains missing values") as info:
        load_column(path, "v")
    assert SECRET not in str(info.value)


def test_infinities_are_values(tmp_path: Path) -> None:
    """inf, -inf, Infinity, -Infinity (any case) are read as the infinities, which a
    release clips to its bounds."""
    path = write(tmp_path, "d.csv", "v\n1.5\ninf\n-inf\nInfinity\n-INFINITY\n2\n")
    np.testing.assert_array_equal(
        load_column(path, "v"), [1.5, np.inf, -np.inf, np.inf, -np.inf, 2.0]
    )


def test_headerless_numbers_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="looks like data, not a header"):
        load_column(write(tmp_path, "d.csv", "1\n2\n3\n"))


CLEAN_FILES = {
    "comma.csv": "name,age\nann,30\nbob,41.5\ncy, 7\n",
    "semicolon.csv": "a;b\n1;2.5\n3;-4e3\n",
    "tab.csv": "a\tb\n1\t2\n3\t4\n",
    "quoted.csv": '"name","the age"\n"ann","30"\n"bob","41"\n',
    "header-only.csv": "x,y\n",
    "single.csv": "x\n1\n2\n3\n",
}


@pytest.mark.parametrize("name", sorted(CLEAN_FILES))
def test_a_bare_column_reads_as_the_table_path_and_as_python_floats(
    tmp_path: Path, name: str
) -> None:
    """One reader: load_column gives the values a release on the table reads (the same
    opened view), each the double Python's float() makes of the cell."""
    path = write(tmp_path, name, CLEAN_FILES[name])
    header = CLEAN_FILES[name].splitlines()[0]
    column = header.replace('"', "").replace(";", ",").replace("\t", ",").split(",")[-1]
    cells = [
        line.replace(";", ",").replace("\t", ",").split(",")[-1].strip().strip('"')
        for line in CLEAN_FILES[name].splitlines()[1:]
    ]
    values = load_column(path, column)
    np.testing.assert_array_equal(values, [float(c) for c in cells])
    with open_table(path) as source:
        table = source.con.execute(f"SELECT {quote(column)} FROM src").fetchall()
    np.testing.assert_array_equal(values, [float(row[0]) for row in table])


@pytest.mark.filterwarnings("ignore::dpsense.SeededRandomnessWarning")
def test_a_blank_line_is_no_row(tmp_path: Path) -> None:
    """In a file of one column as in a file of several, a blank line is no row: for the
    bare column and the table alike."""
    path = write(tmp_path, "d.csv", "x\n1\n2\n\n3\n\n")
    np.testing.assert_array_equal(load_column(path), [1.0, 2.0, 3.0])
    count = ds.release(path, ds.Count(), epsilon=1e9, rng=1)
    assert isinstance(count, ds.Release)
    assert count.value is not None
    assert round(count.value) == 3


def test_booleans_read_as_zero_and_one(tmp_path: Path) -> None:
    """A column of true/false reads as 1 and 0, as booleans do in memory and in a table."""
    path = write(tmp_path, "d.csv", "v\ntrue\nfalse\nTRUE\n")
    np.testing.assert_array_equal(load_column(path, "v"), [1.0, 0.0, 1.0])


def test_gzipped_csv_through_duckdb(tmp_path: Path) -> None:
    path = tmp_path / "d.csv.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write("x\n" + "\n".join(str(i) for i in range(1000)) + "\n")
    np.testing.assert_array_equal(load_column(path, "x"), np.arange(1000.0))


def test_parquet_round_trip(tmp_path: Path) -> None:
    import duckdb

    path = tmp_path / "d.parquet"
    con = duckdb.connect()
    con.execute(
        f"COPY (SELECT range::DOUBLE AS v, range % 7 AS g FROM range(5000)) TO '{path}'"
        " (FORMAT parquet)"
    )
    con.close()
    np.testing.assert_array_equal(load_column(path, "v"), np.arange(5000.0))
    with pytest.raises(InputError, match="column 'w' is not in"):
        load_column(path, "w")


def test_missing_parquet_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="file not found"):
        load_column(tmp_path / "d.parquet", "x")


# ---------------------------------------------------------------------- in-memory data


def test_list_and_array() -> None:
    np.testing.assert_array_equal(load_column([3, 1, 2]), [3.0, 1.0, 2.0])
    np.testing.assert_array_equal(load_column(np.arange(3)), [0.0, 1.0, 2.0])


def test_mapping_of_columns() -> None:
    table = {"age": [30, 41], "name": ["a", "b"]}
    np.testing.assert_array_equal(load_column(table, "age"), [30.0, 41.0])
    with pytest.raises(InputError, match="its columns are 'age', 'name'"):
        load_column(table, "x")
    with pytest.raises(InputError, match="must be numeric"):
        load_column(table, "name")


def test_in_memory_tables_are_opened_as_a_release_opens_them() -> None:
    """A pandas, Polars (eager or lazy) or Arrow table, a DuckDB relation and a mapping of
    columns are read through the opener of the table path: the same values, and the same
    refusals."""
    import duckdb
    import pandas as pd
    import polars as pl
    import pyarrow as pa

    values = [1.5, -2.0, 2.0**62 + 1]
    frames = [
        pd.DataFrame({"v": values, "w": ["a", "b", "c"]}),
        pl.DataFrame({"v": values, "w": ["a", "b", "c"]}),
        pl.DataFrame({"v": values}).lazy(),
        pa.table({"v": values}),
        duckdb.sql("SELECT unnest([1.5, -2.0, 4611686018427387905::DOUBLE]) AS v"),
        {"v": values, "w": ["a", "b", "c"]},
    ]
    for frame in frames:
        np.testing.assert_array_equal(load_column(frame, "v"), values)
    with pytest.raises(InputError, match="must be numeric"):
        load_column(frames[0], "w")
    with pytest.raises(InputError, match="contains missing values"):
        load_column(pd.DataFrame({"v": pd.array([1, None], dtype="Int64")}), "v")
    with pytest.raises(InputError, match="equal length"):
        load_column({"v": [1.0, 2.0], "w": [1.0]}, "v")
    with pytest.raises(InputError, match="has no columns"):
        load_column({}, None)


def test_pandas_na_is_a_missing_value_in_a_series_as_in_a_table() -> None:
    """pandas' NA (here in a nullable boolean column) is a missing value whether the
    column is read alone or from its table."""
    import pandas as pd

    series = pd.Series([True, None, False], dtype="boolean", name="v")
    for read in (lambda: load_column(series), lambda: load_column(series.to_frame(), "v")):
        with pytest.raises(InputError, match="contains missing values"):
            read()
    np.testing.assert_array_equal(load_column(series.dropna()), [1.0, 0.0])


def test_structured_array() -> None:
    arr = np.array([(1, 2.5), (3, 4.5)], dtype=[("a", "i8"), ("b", "f8")])
    np.testing.assert_array_equal(load_column(arr, "b"), [2.5, 4.5])


class FakeSeries:
    """Duck-typed stand-in for a pandas/Polars Series."""

    def __init__(self, values: list[Any], name: str | None = None) -> None:
        self.values = values
        self.name = name

    def to_numpy(self) -> np.ndarray[Any, Any]:
        return np.asarray(self.values, dtype=object)


class FakeFrame:
    """Duck-typed stand-in for a pandas/Polars DataFrame."""

    def __init__(self, data: dict[str, list[Any]]) -> None:
        self.data = data
        self.columns = list(data)

    def __getitem__(self, key: str) -> FakeSeries:
        return FakeSeries(self.data[key], key)


class FakeArrowTable:
    """Duck-typed stand-in for a pyarrow Table."""

    def __init__(self, data: dict[str, list[Any]]) -> None:
        self.data = data
        self.column_names = list(data)

    def column(self, index: int) -> FakeSeries:
        return FakeSeries(self.data[self.column_names[index]])


def test_dataframe_like_objects() -> None:
    frame = FakeFrame({"a": [1, 2], "b": [3.5, None]})
    np.testing.assert_array_equal(load_column(frame, "a"), [1.0, 2.0])
    with pytest.raises(InputError, match="contains missing values"):
        load_column(frame, "b")
    with pytest.raises(InputError, match="2 columns"):
        load_column(frame)
    table = FakeArrowTable({"x": [1.0], "y": [2.0]})
    np.testing.assert_array_equal(load_column(table, "y"), [2.0])


def test_series_like_object() -> None:
    np.testing.assert_array_equal(load_column(FakeSeries([1, 2], "age")), [1.0, 2.0])
    np.testing.assert_array_equal(load_column(FakeSeries([1, 2], "age"), "age"), [1.0, 2.0])
    with pytest.raises(InputError, match="single unnamed sequence"):
        load_column(FakeSeries([1, 2], "age"), "income")


def test_bad_column_type() -> None:
    with pytest.raises(InputError, match="'column' parameter"):
        load_column([1, 2], 3)  # type: ignore[arg-type]


# ------------------------------------------------------------------------ census data


def test_census_is_bundled_and_consistent() -> None:
    table = load_census()
    assert census_path().is_file()
    assert census_path().stat().st_size < 600_000
    assert set(table) >= {
        "age",
        "sex",
        "education_years",
        "hours_per_week",
        "income",
        "capital_gain",
    }
    assert all(len(v) == 10_000 for v in table.values())
    age = table["age"]
    assert age.min() >= 17
    assert age.max() <= 90
    assert 30 < np.median(age) < 45
    assert np.mean(table["hours_per_week"] == 40) > 0.3
    assert table["education_years"].min() >= 1
    assert table["education_years"].max() <= 16
    assert np.mean(table["capital_gain"] == 0) > 0.8
    assert np.all(table["income"] > 0)
    assert set(np.unique(table["sex"])) == {"Female", "Male"}
    np.testing.assert_array_equal(load_column(census_path(), "age"), age.astype(float))


def test_census_file_matches_its_generator() -> None:
    script = Path(__file__).resolve().parents[2] / "scripts" / "make_census.py"
    if not script.is_file():
        pytest.skip("scripts/ is not available (installed package)")
    namespace = runpy.run_path(str(script), run_name="make_census")
    assert namespace["main"](["--check"]) == 0


@pytest.mark.parametrize(
    "cells",
    [
        ["1", "2", "3"],
        ["007", "-0", "+2", " 3 ", "1e3", "1E-400", "2.5"],
        [str(2**53 + 1), str(2**63 - 1), str(2**63), str(-(2**63))],
        ["inf", "-inf", "1", "Infinity"],
        ["-inf"],
        ["0.1", "0.2", "0.30000000000000004", "1_0"],
    ],
)
def test_column_read_as_text_is_the_inferred_read(tmp_path: Path, cells: list[str]) -> None:
    """load_column reads a CSV column as text and casts each cell (one pass); a release
    reads it with the types inferred from every row. For numbers both give the same
    doubles, bit for bit."""
    path = write(tmp_path, "d.csv", "v,w\n" + "".join(f"{c},x\n" for c in cells))
    with open_table(path, ["v"]) as source:
        inferred = source.con.execute(
            f"SELECT TRY_CAST(v AS DOUBLE) AS v FROM {source.view}"
        ).fetchnumpy()["v"]
        kind = source.con.execute(f"DESCRIBE SELECT {quote('v')} FROM {source.view}").fetchall()
    if str(kind[0][1]) == "VARCHAR":  # text inferred: the release reads it trimmed
        with open_table(path, ["v"]) as source:
            inferred = source.con.execute(
                f"SELECT TRY_CAST(trim(v) AS DOUBLE) AS v FROM {source.view}"
            ).fetchnumpy()["v"]
    got = load_column(path, "v")
    assert not np.ma.getmaskarray(inferred).any()
    np.testing.assert_array_equal(
        got.view(np.int64), np.asarray(inferred, np.float64).view(np.int64)
    )


def test_a_malformed_row_past_the_sample_is_the_files_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A row with more fields than the header, far past any sample a CSV reader takes, is
    refused with the file's own message on every path (a bare column, a release on the
    table, SQL, the CLI), never with the reader's text, which quotes the line."""
    from dpsense.cli import main

    rows = [f"{i},{i % 7}" for i in range(50_000)]
    path = write(tmp_path, "d.csv", "a,b\n" + "\n".join(rows) + "\n901,902,903\n4,5\n")
    mean = ds.Mean(0, 10)
    calls = [
        lambda: load_column(path, "a"),
        lambda: ds.release(path, mean, column="a", epsilon=1.0),
        lambda: ds.release(path, mean, column="a", by="b", keys=[0, 1], epsilon=1.0),
        lambda: ds.sql(
            "SELECT AVG(a) AS m FROM t",
            tables={"t": str(path)},
            bounds={"a": (0, 10)},
            epsilon=1.0,
        ),
    ]
    for call in calls:
        with pytest.raises(InputError, match="more or fewer fields than the header") as info:
            call()
        assert "901" not in str(info.value)
    code = main(
        [
            "release",
            str(path),
            "-c",
            "a",
            "-s",
            "mean",
            "--lower",
            "0",
            "--upper",
            "10",
            "--epsilon",
            "1",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert "more or fewer fields" in err
    assert "901" not in err


def test_a_value_met_while_reading_is_refused_without_it(tmp_path: Path) -> None:
    """Parquet files of one folder whose column types differ: the value that does not
    convert is met only as a release reads the rows. Every path refuses with one message
    that names the data, never the value (DuckDB's own text quotes it)."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    folder = tmp_path / "parts"
    folder.mkdir()
    pq.write_table(pa.table({"g": ["a", "b"], "v": [1.5, 2.5]}), folder / "a.parquet")
    pq.write_table(pa.table({"g": ["a", "b"], "v": ["SECRETV", "x"]}), folder / "b.parquet")
    mean = ds.Mean(0, 10)
    calls = [
        lambda: ds.release(str(folder), mean, column="v", epsilon=1.0),
        lambda: ds.release(str(folder), mean, column="v", by="g", keys=["a", "b"], epsilon=1.0),
        lambda: ds.sql(
            "SELECT g, AVG(v) AS m FROM t GROUP BY g",
            tables={"t": str(folder)},
            bounds={"v": (0, 10)},
            keys={"g": ["a", "b"]},
            epsilon=1.0,
        ),
    ]
    for call in calls:
        with pytest.raises(InputError, match="parts") as info:
            call()
        assert "SECRETV" not in str(info.value)
