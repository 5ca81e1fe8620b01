"""The typed table handle (``dpsense.tables.handle``): a column's type comes from the
``schema=`` declaration or from its container, never from its values, and the pipeline
decides it once (docs/architecture.md §2)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dpsense as ds
import dpsense.tables.handle as handle_module
from dpsense.tables.handle import container_types, table_handle
from dpsense.tables.rows.casts import Cast, ColumnType

pd = pytest.importorskip("pandas")

BIGINT = ColumnType("BIGINT", 0)


def _csv(path: Path, ids: list[Any]) -> str:
    path.write_text("person,v\n" + "".join(f"{i},{k}\n" for k, i in enumerate(ids)))
    return str(path)


@pytest.mark.parametrize("added", ["7", 7, 7.5, "abc", None])
def test_an_object_column_of_digit_strings_stays_text_whatever_another_value(added: Any) -> None:
    """A pandas object column is undeclared: as a group or a unit it is read as the text
    of each value, and no one's value (a number, a fraction, a word) changes that."""
    frame = pd.DataFrame({"g": pd.Series(["1", "2", "1.0", added], dtype=object), "v": 1.0})
    handle = table_handle(frame, keyed=("g",), keep=("v",))
    assert handle.types["g"] is None
    assert handle.casts == {"g": Cast("text")}
    assert handle.declared("g") == Cast("text").declared
    # each value's own text, never a type read off the column
    texts = list(handle.data["g"])
    assert texts[:3] == ["1", "2", "1.0"]
    assert all(isinstance(t, str) or pd.isna(t) for t in texts)  # a missing value stays missing


def test_a_declared_column_keeps_its_declaration_over_the_container() -> None:
    frame = pd.DataFrame({"g": pd.Series(["1", "2"], dtype=object), "v": [1, 2]})
    handle = table_handle(frame, {"g": Cast("int")}, keyed=("g",), keep=("v",))
    assert handle.casts == {"g": Cast("int")}
    assert handle.declared("g") == Cast("int").declared
    assert handle.declared("v") == BIGINT  # the container's int64


@pytest.mark.parametrize(
    ("first", "second"),
    [([1, 2, 3], [1, 2, 4]), ([1.5, 2.0], [1.0, 2.0]), ([True, False], [True, True])],
)
def test_a_typed_container_types_a_column_by_its_dtype_not_its_values(
    first: list[Any], second: list[Any]
) -> None:
    a, b = pd.DataFrame({"x": first}), pd.DataFrame({"x": second})
    assert container_types(a) == container_types(b)


@pytest.mark.parametrize("added", ["4", "4.0", "abc", ""])
def test_a_csv_unit_column_is_text_whatever_the_ids(tmp_path: Path, added: str) -> None:
    """A CSV file declares no type: its unit column is read as text, however DuckDB would
    infer it from the ids (BIGINT, DOUBLE or VARCHAR)."""
    path = _csv(tmp_path / "t.csv", ["1", "2", "1.0", added])
    handle = table_handle(path, keyed=("person",), keep=("v",), unit="person")
    assert handle.types == {}
    assert handle.casts == {"person": Cast("text")}
    assert handle.unit == "person"


def test_a_unit_id_column_is_typed_by_the_container_on_duckdb(tmp_path: Path) -> None:
    """pandas, Arrow, a DuckDB relation and a Parquet file declare the unit column's type:
    it is compared in that type (no text cast), whatever the ids."""
    import duckdb
    import pyarrow as pa
    import pyarrow.parquet as pq

    frame = pd.DataFrame({"person": np.array([1, 2, 2], dtype=np.int64), "v": [1.0, 2.0, 3.0]})
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), tmp_path / "t.parquet")
    con = duckdb.connect()
    inputs = [
        frame,
        pa.Table.from_pandas(frame, preserve_index=False),
        con.from_df(frame),
        str(tmp_path / "t.parquet"),
    ]
    for data in inputs:
        handle = table_handle(data, keyed=("person",), keep=("v",), unit="person")
        assert handle.engine.name == "duckdb"
        assert handle.types["person"] == BIGINT, type(data)
        assert handle.casts == {}, type(data)


@pytest.mark.spark
def test_a_unit_id_column_is_typed_by_the_container_on_spark(spark: Any) -> None:
    """A Spark DataFrame's schema declares every column: a LongType unit is BIGINT, a
    StringType unit is text by its declaration (never a cast decided from the ids)."""
    frame = spark.createDataFrame(
        [(1, "1", 1.0), (2, "1.0", 2.0)], "person long, code string, v double"
    )
    handle = table_handle(frame, keyed=("person", "code"), keep=("v",), unit="person")
    assert handle.engine.name == "spark"
    assert handle.types["person"] == BIGINT
    assert handle.types["code"] == ColumnType("StringType", None)
    assert handle.casts == {}


def test_a_join_types_each_column_by_its_own_table(tmp_path: Path) -> None:
    """A joined column's type is its table's: a frame's dtype, none for a CSV file's
    undeclared column; the undeclared unit column is read as text."""
    visits = _csv(tmp_path / "visits.csv", ["1", "2", "2"])
    people = pd.DataFrame({"person": ["1", "2"], "age": np.array([30, 40], dtype=np.int64)})
    joined = ds.join({"visits": visits, "people": people}, on=[("visits", "people", "person")])
    from dpsense.query.join_form import resolve_joined
    from dpsense.query.plan import ReleaseArgs

    data, args = resolve_joined(joined, ds.Count(), ReleaseArgs(by="age", privacy_unit="person"))
    handle = table_handle(data, keyed=("age",), unit=args.privacy_unit)
    assert handle.types["age"] == BIGINT
    assert handle.undeclared("age") is False
    # the CSV file's undeclared unit column is compared as text (tables.joined)
    assert handle.types[args.privacy_unit] == Cast("text").declared


def test_the_pipeline_types_the_table_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A charged release with private bounds reads its table three times (the check, the
    bounds step, the release) and types it once."""
    calls: list[Any] = []
    real = handle_module.container_types

    def spy(data: Any) -> Any:
        calls.append(type(data).__name__)
        return real(data)

    monkeypatch.setattr(handle_module, "container_types", spy)
    rs = np.random.default_rng(3)
    frame = pd.DataFrame(
        {
            "person": pd.Series([str(i % 50) for i in range(200)], dtype=object),
            "g": rs.integers(0, 3, 200),
            "v": rs.normal(50.0, 10.0, 200),
        }
    )
    acc = ds.Accountant(epsilon=10.0)
    acc.release(
        frame,
        ds.Median(),
        column="v",
        by="g",
        keys=[0, 1, 2],
        privacy_unit="person",
        max_rows_per_unit=4,
        bounds="private",
        epsilon=1.0,
        rng=5,
    )
    assert calls == ["DataFrame"]


@pytest.mark.parametrize("added", ["a", 7.5, None])
def test_a_numpy_object_unit_column_is_the_text_of_each_id_whatever_another_id(
    added: Any,
) -> None:
    """A numpy ``object`` array in a mapping declares no type: as a unit it is the text of
    each id alone, so one person's id (a word, a fraction) never turns "1" into "1.0" for
    everyone else (which would change every unit's bounding key)."""
    ids = np.array([1, 2, 1, added], dtype=object)
    with_added = table_handle(
        {"person": ids, "v": np.ones(4)}, keyed=("person",), keep=("v",), unit="person"
    )
    without = table_handle(
        {"person": ids[:3], "v": np.ones(3)}, keyed=("person",), keep=("v",), unit="person"
    )
    texts = list(with_added.data["person"])
    assert texts[:3] == ["1", "2", "1"]
    assert list(without.data["person"]) == ["1", "2", "1"]


def test_a_numpy_object_unit_column_bounds_the_same_units_whatever_another_id() -> None:
    """End to end: the same seeded release of the rows the two tables share (the person
    'a' is outside the groups released), whatever that person's id."""
    v = np.array([3.0, 5.0, 7.0, 1.0])
    g = np.array(["x", "x", "x", "y"], dtype=object)

    def run(last_id: Any) -> Any:
        ids = np.array([1, 2, 1, last_id], dtype=object)
        data = {"person": ids, "g": g, "v": v}
        return ds.release(
            data, ds.Sum(0, 10), column="v", by="g", keys=["x"], privacy_unit="person",
            epsilon=1.0, rng=5,
        )  # fmt: skip

    assert run(3).to_dicts() == run("a").to_dicts()
