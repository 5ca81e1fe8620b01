"""The benchmarks' hard table at 2e5 rows: each person's rows spread over 100 groups,
continuous values with two decimals. The same seed gives the same release from a Parquet
file and a shuffled pandas copy, with and without a privacy unit, and the same release
whether the engine keeps large groups in DuckDB or hands every value to Python."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dpsense as ds
from dpsense.tables.engines.duckdb import groups as duck_groups
from dpsense.tables.engines.duckdb import held_scan

pd = pytest.importorskip("pandas")
duckdb = pytest.importorskip("duckdb")

ROWS, GROUPS, PEOPLE = 200_000, 100, 10_000


def _uniform(salt: int) -> str:
    return f"((hash(i * 8 + {salt}) >> 11)::DOUBLE + 0.5) / 9007199254740992.0"


def hard_table(kind: str, folder: Path) -> tuple[Path, Any]:
    """benchmarks/bench_tables.py's ``hard`` or ``hard-int`` table (the same SQL), as
    Parquet and a shuffled pandas copy."""
    gamma = f"(-150.0 * (ln({_uniform(3)}) + ln({_uniform(4)})))"
    value = f"round({gamma}, 2)" if kind == "hard" else f"round({gamma} / 10.0)"
    sql = (
        f"SELECT (hash(i * 8 + 1) % {PEOPLE})::BIGINT AS person, "
        f"(hash(i * 8 + 2) % {GROUPS})::BIGINT AS g, {value}::DOUBLE AS v "
        f"FROM range({ROWS}) t(i)"
    )
    path = folder / f"{kind}.parquet"
    con = duckdb.connect()
    con.execute(f"COPY ({sql}) TO '{path}' (FORMAT PARQUET)")
    frame = con.execute(f"SELECT * FROM '{path}'").df().sample(frac=1.0, random_state=2)
    return path, frame


@pytest.fixture(scope="module")
def hard(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    """benchmarks/bench_tables.py's ``hard`` table, as Parquet and pandas."""
    return hard_table("hard", tmp_path_factory.mktemp("hard"))


STATS = {
    "median": ds.Median(0.0, 1000.0),
    "mean": ds.Mean(0.0, 1000.0),
    "count": ds.Count(),
}


def _release(data: Any, stat: str, unit: bool) -> list[tuple[Any, Any]]:
    extra: dict[str, Any] = {"privacy_unit": "person", "max_rows_per_unit": 5} if unit else {}
    got = ds.release(
        data,
        STATS[stat],
        column=None if stat == "count" else "v",
        by="g",
        keys=list(range(GROUPS)),
        epsilon=1.0,
        rng=3,
        **extra,
    )
    return [(key, rel.value) for key, rel in got]


@pytest.mark.parametrize("unit", [False, True])
@pytest.mark.parametrize("stat", list(STATS))
def test_parquet_and_pandas_give_the_same_release(
    hard: tuple[Path, Any], stat: str, unit: bool
) -> None:
    path, frame = hard
    got = _release(path, stat, unit)
    assert len(got) == GROUPS
    assert all(value is not None and np.isfinite(value) for _, value in got)
    assert got == _release(frame, stat, unit)


@pytest.mark.parametrize("stat", ["median", "mean"])
def test_held_groups_release_the_same_as_every_value_in_python(
    hard: tuple[Path, Any], stat: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _ = hard
    monkeypatch.setattr(held_scan, "HOLD_ROWS", 10**12)
    monkeypatch.setattr(held_scan, "HOLD_SUM_ROWS", 10**12)
    want = _release(path, stat, False)
    monkeypatch.setattr(held_scan, "HOLD_ROWS", 500)  # every group (about 2000 rows) held
    monkeypatch.setattr(held_scan, "HOLD_SUM_ROWS", 500)
    monkeypatch.setattr(held_scan, "HOLD_DISTINCT", 0)
    made: list[Any] = []
    original = duck_groups.DuckGroups.__init__

    def spy(self: Any, *args: Any) -> None:
        original(self, *args)
        made.append(self)

    monkeypatch.setattr(duck_groups.DuckGroups, "__init__", spy)
    assert _release(path, stat, False) == want
    assert len(made) == 1
    assert len(made[0].sizes) == GROUPS
    assert made[0].fallbacks == 0  # the sampled brackets held every window (speed only)
