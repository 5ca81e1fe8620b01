"""Contribution bounding in Spark keeps exactly the rows of the definition (docs/tables.md
§2), computed by brute force from DuckDB's hashes; Spark's native copy of DuckDB's hash
equals DuckDB's, with ANSI mode on and off; and the hard table's 2e5-row sibling gives the
same releases from Spark as from its Parquet file in DuckDB."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dpsense.tables.engines.duckdb.bound import TablePlan
from dpsense.tables.engines.spark import frame as spark_engine
from dpsense.tables.engines.spark import long_hash as spark_hash
from tests.spark.conftest import to_spark
from tests.tables.test_bounding_definition import SALT, _brute_force, people_frame
from tests.tables.test_hard_table_parity import GROUPS, _release
from tests.tables.test_hard_table_parity import hard as hard

pytestmark = pytest.mark.spark
pd = pytest.importorskip("pandas")
duckdb = pytest.importorskip("duckdb")


@pytest.mark.parametrize("ansi", ["true", "false"])
def test_native_hash_is_duckdbs(spark: Any, ansi: str) -> None:
    rng = np.random.default_rng(4)
    n = 3000
    units = rng.integers(-(1 << 63), (1 << 63) - 1, n, dtype=np.int64)
    groups = rng.integers(0, 100, n)
    values = np.round(rng.gamma(2.0, 150.0, n), 2)
    values[:7] = [0.0, -0.0, np.inf, -np.inf, 5e-324, -1.5, 1e308]
    frame = pd.DataFrame({"u": units, "gid": groups, "v": values})
    salt = int(rng.integers(0, 1 << 62))
    con = duckdb.connect()
    con.register("f", frame)
    want = con.execute(
        f"SELECT (hash({salt}, u, gid) >> 1)::BIGINT AS hg, "
        f"(hash({salt + 1}, u, v) >> 1)::BIGINT AS hr FROM f"
    ).fetchnumpy()
    previous = spark.conf.get("spark.sql.ansi.enabled")
    spark.conf.set("spark.sql.ansi.enabled", ansi)
    try:
        got = spark_hash.native_hash(
            to_spark(spark, frame), "hg", salt, [("u", False), ("gid", False)]
        )
        got = spark_hash.native_hash(got, "hr", salt + 1, [("u", False), ("v", True)])
        rows = got.select("hg", "hr").collect()
    finally:
        spark.conf.set("spark.sql.ansi.enabled", previous)
    assert [r["hg"] for r in rows] == [int(x) for x in want["hg"]]
    assert [r["hr"] for r in rows] == [int(x) for x in want["hr"]]
    assert spark_hash.native_hash_available()


def test_the_limbs_multiply_modulo_two_to_the_64(spark: Any) -> None:
    """The product Spark Connect uses (no overflow anywhere) wraps as DuckDB's does."""
    from pyspark.sql import functions as sf

    rng = np.random.default_rng(5)
    xs = [int(x) for x in rng.integers(-(1 << 63), (1 << 63) - 1, 500, dtype=np.int64)]
    xs += [0, 1, -1, (1 << 63) - 1, -(1 << 63)]
    frame = spark.createDataFrame([(x,) for x in xs], "x long")
    got = [r[0] for r in frame.select(spark_hash._mul_k(sf, sf.col("x"))).collect()]
    assert got == [spark_hash._signed(x * spark_hash.K) for x in xs]


@pytest.fixture(scope="module")
def people() -> Any:
    return people_frame()


@pytest.mark.parametrize("native", [True, False])
@pytest.mark.parametrize(("m", "g"), [(1, 1), (3, 2), (2, 5)])
def test_kept_rows_are_the_definitions(
    spark: Any, people: Any, m: int, g: int, native: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not native:  # the executors' DuckDB hashes instead
        monkeypatch.setattr(spark_engine, "_native_unit", lambda *a: False)
    keys = [0, 1, 2, 3, 4]  # group 5 is not a key: its rows never count
    plan = TablePlan("v", ("g",), "person", m, g, "error", 0.0, 50.0, SALT)
    with spark_engine.open_spark(to_spark(spark, people)) as source:
        table = spark_engine.bound_spark_table(source, plan, [(k,) for k in keys])
        got = {
            gid: sorted(np.asarray(values, dtype=float).tolist())
            for gid, values in table.values(range(len(keys)))
        }
        units = table.units.tolist()
    want = _brute_force(people, keys, m, g)
    assert {k: v for k, v in got.items() if v} == want
    # a group's units are the people who keep rows in it
    kept_people = _brute_force_people(people, keys, m, g)
    assert units == [kept_people.get(k, 0) for k in range(len(keys))]


def _brute_force_people(frame: Any, keys: list[int], m: int, g: int) -> dict[int, int]:
    con = duckdb.connect()
    con.register("f", frame)
    con.register("k", pd.DataFrame({"g": keys, "gid": np.arange(len(keys))}))
    pairs = con.execute(
        f"SELECT DISTINCT person::BIGINT AS u, gid, (hash({SALT[0]}, person::BIGINT, gid) >> 1)"
        "::BIGINT AS hg FROM f JOIN k USING (g)"
    ).df()
    chosen = pairs.sort_values(["u", "hg"]).groupby("u").head(g)
    return {int(k): int(v) for k, v in chosen.groupby("gid").size().items()}


@pytest.mark.parametrize("unit", [False, True])
def test_hard_table_spark_matches_parquet(spark: Any, hard: tuple[Path, Any], unit: bool) -> None:
    path, _ = hard
    frame = spark.read.parquet(str(path))
    for stat in ("median", "mean", "count"):
        assert _release(frame, stat, unit) == _release(path, stat, unit), stat
    assert GROUPS == 100
