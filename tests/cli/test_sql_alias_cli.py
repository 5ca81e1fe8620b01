"""``dpsense sql`` with aliases of group columns (renamed in SELECT, GROUP BY an alias or a
position), on one file and on a join: the same seeded rows as the unaliased query under the
aliases, --keys named by the alias, and bad positions refused in one line with exit 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.cli.test_sql_join_cli import COMMON, UNIT_ARGS, files, tables  # noqa: F401

from dpsense.cli import main

pd = pytest.importorskip("pandas")


@pytest.fixture(scope="module")
def people(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = np.random.default_rng(5)
    n = 300
    frame = pd.DataFrame(
        {
            "pid": np.arange(n),
            "year": rng.choice([2000, 2001, 2002], n),
            "wage": rng.uniform(0, 10, n).round(2),
        }
    )
    path = tmp_path_factory.mktemp("alias") / "people.parquet"
    frame.to_parquet(path, index=False)
    return path


def _rows(capsys: pytest.CaptureFixture[str], args: list[str]) -> list[dict[str, Any]]:
    code = main(["sql", *args, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return list(json.loads(out)["rows"])


def _one_table(people: Path, select: str, group: str, keys: str) -> list[str]:
    query = f"SELECT {select}, COUNT(*) AS n, AVG(wage) AS m FROM '{people}' GROUP BY {group}"
    return [query, "--privacy-unit", "pid", "--bounds", "wage=0:10", "--epsilon", "1",
            "--seed", "3", "--keys", keys]  # fmt: skip


@pytest.mark.parametrize(
    ("group", "keys"),
    [("year", "y=2000,2001,2002"), ("y", "2000,2001,2002"), ("1", "y=2000,2001,2002")],
)
def test_an_aliased_group_gives_the_unaliased_rows(
    people: Path, group: str, keys: str, capsys: pytest.CaptureFixture[str]
) -> None:
    want = _rows(capsys, _one_table(people, "year", "year", "year=2000,2001,2002"))
    got = _rows(capsys, _one_table(people, "year AS y", group, keys))
    assert got == [{("y" if k == "year" else k): v for k, v in r.items()} for r in want]
    assert [r["y"] for r in got] == [2000, 2001, 2002]


def test_keys_named_by_the_column_are_refused(
    people: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["sql", *_one_table(people, "year AS y", "1", "year=2000,2001")])
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    assert "--keys must have the group columns 'y'" in err


@pytest.mark.parametrize(
    ("group", "words"),
    [("5", "groups by position 5; the SELECT list has 3 items"),
     ("2", "groups by position 2 ('n'), which is not a column")],
)  # fmt: skip
def test_a_bad_position_is_one_line_and_exit_2(
    people: Path, group: str, words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["sql", *_one_table(people, "year AS y", group, "y=2000")])
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    assert err.startswith("error: "), err
    assert err.count("\n") == 1, err
    assert words in err


JOIN = (
    "FROM items i JOIN orders o ON i.order_id = o.order_id JOIN customers c ON "
    "o.customer_id = c.customer_id JOIN regions r ON c.country = r.country"
)


def test_a_join_grouped_by_an_aliased_public_column(
    files: dict[str, Path],  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    base = [*tables(files), *UNIT_ARGS, *COMMON]
    plain = f"SELECT r.region, COUNT(*) AS n, AVG(o.amount) AS mean {JOIN} GROUP BY r.region"
    want = _rows(capsys, [plain, *base])
    for group in ("reg", "1", "r.region"):
        query = (
            f"SELECT r.region AS reg, COUNT(*) AS n, AVG(o.amount) AS mean {JOIN} GROUP BY {group}"
        )
        got = _rows(capsys, [query, *base])
        assert got == [{("reg" if k == "region" else k): v for k, v in r.items()} for r in want]
    assert [r["reg"] for r in got] == ["Asia", "Europe", "Oceania"]
