"""``dpsense sql`` over several tables: --table / --public / --privacy-unit, the same
seeded rows as ds.sql, and every refused join shape as one line with exit 2 and no data
in the text."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
from tests.query.test_sql_joins import SECRET, UNITS, shop

import dpsense as ds
from dpsense.cli import main

QUERY = (
    "SELECT r.region, COUNT(DISTINCT c.customer_id) AS people, AVG(o.amount) AS mean "
    "FROM items i JOIN orders o ON i.order_id = o.order_id JOIN customers c ON "
    "o.customer_id = c.customer_id JOIN regions r ON c.country = r.country "
    "WHERE o.amount < 95 GROUP BY r.region"
)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("joins")
    out = {}
    for name, frame in shop(seed=9, n_customers=200).items():
        path = folder / (f"{name}.csv" if name in ("customers", "regions") else f"{name}.parquet")
        if path.suffix == ".csv":
            frame.to_csv(path, index=False)
        else:
            frame.to_parquet(path, index=False)
        out[name] = path
    return out


def tables(files: dict[str, Path]) -> list[str]:
    return [
        "--table", f"items={files['items']}", "--table", f"orders={files['orders']}",
        "--table", f"customers={files['customers']}", "--public", f"regions={files['regions']}",
    ]  # fmt: skip


UNIT_ARGS = [
    "--privacy-unit", "customers=customer_id", "--privacy-unit", "orders=customer_id",
    "--privacy-unit", "items=order_id:orders.order_id",
]  # fmt: skip
COMMON = ["--schema", "customer_id=int,country=text", "--bounds", "amount=0:100",
          "--epsilon", "1", "--seed", "5"]  # fmt: skip


@pytest.mark.parametrize("m", [1, 4])
def test_json_rows_equal_ds_sql(
    files: dict[str, Path], m: int, capsys: pytest.CaptureFixture[str]
) -> None:
    """People are counted at any --max-rows-per-unit (docs/joins.md §4)."""
    rows_args = ["--max-rows-per-unit", str(m)]
    code = main(["sql", QUERY, *tables(files), *UNIT_ARGS, *COMMON, *rows_args, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    rows = json.loads(out)["rows"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ds.SeededRandomnessWarning)
        want = ds.sql(
            QUERY,
            tables={k: str(v) for k, v in files.items()},
            privacy_unit=UNITS,
            public_tables=["regions"],
            schema={"customer_id": "int", "country": "text"},
            bounds={"amount": (0, 100)},
            max_rows_per_unit=m,
            epsilon=1.0,
            rng=5,
        ).to_dicts()
    assert [r["region"] for r in rows] == ["Asia", "Europe", "Oceania"]
    assert [(r["people"], r["mean"]) for r in rows] == [(w["people"], w["mean"]) for w in want]


def test_the_ledger_names_the_join(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ledger = tmp_path / "ledger.json"
    assert main(["budget", "init", str(ledger), "--epsilon", "2"]) == 0
    code = main(["sql", QUERY, *tables(files), *UNIT_ARGS, *COMMON, "--ledger", str(ledger)])
    _, err = capsys.readouterr()
    assert code == 0, err
    assert main(["budget", "show", str(ledger), "--json"]) == 0
    shown = json.loads(capsys.readouterr()[0])
    assert "the join of 'items', 'orders', 'customers', 'regions'" in json.dumps(shown)


REFUSED = [
    # shapes refused from the text
    ("SELECT COUNT(*) FROM orders o CROSS JOIN customers c", []),
    ("SELECT COUNT(*) FROM orders, customers", []),
    ("SELECT COUNT(*) FROM orders o FULL JOIN customers c ON o.customer_id = c.customer_id", []),
    ("SELECT COUNT(*) FROM orders o JOIN customers c ON o.amount > c.customer_id", []),
    ("SELECT COUNT(*) FROM orders o JOIN customers c ON o.customer_id = c.customer_id OR "
     "o.order_id = 1", []),
    ("SELECT COUNT(*) FROM orders NATURAL JOIN customers", []),
    # shapes refused from the declared units
    ("SELECT COUNT(*) FROM regions r LEFT JOIN customers c ON r.country = c.country", []),
    ("SELECT COUNT(*) FROM orders o JOIN customers c ON o.order_id = c.customer_id", []),
    ("SELECT COUNT(*) FROM orders o JOIN orders p ON o.amount = p.amount", []),
    ("SELECT COUNT(DISTINCT o.order_id) AS k FROM orders o JOIN customers c ON "
     "o.customer_id = c.customer_id", []),
    ("SELECT COUNT(*) FROM orders o JOIN customers c ON o.customer_id = c.customer_id", ["bad"]),
    ("SELECT COUNT(*) FROM orders o JOIN missing m ON o.customer_id = m.customer_id", []),
    ("SELECT COUNT(*) FROM regions", []),
]  # fmt: skip


@pytest.mark.parametrize(("query", "units"), REFUSED)
def test_every_refused_join_is_one_line_and_exit_2(
    files: dict[str, Path], query: str, units: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    unit_args = UNIT_ARGS if not units else ["--privacy-unit", "orders=customer_id"]
    code = main(["sql", query, *tables(files), *unit_args, *COMMON])
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    assert err.startswith("error: "), err
    assert err.count("\n") == 1, err
    assert "Traceback" not in err
    assert "987654" not in err
    assert str(SECRET) not in err


def test_one_unit_column_with_a_path_for_one_table(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """--privacy-unit COL for every private table, with an entry for the one that finds its
    unit through a path: the same rows as the entries written out."""
    mixed = ["--privacy-unit", "customer_id", "--privacy-unit", "items=order_id:orders.order_id"]
    assert main(["sql", QUERY, *tables(files), *mixed, *COMMON, "--json"]) == 0
    got = json.loads(capsys.readouterr()[0])["rows"]
    assert main(["sql", QUERY, *tables(files), *UNIT_ARGS, *COMMON, "--json"]) == 0
    assert got == json.loads(capsys.readouterr()[0])["rows"]
    two = ["--privacy-unit", "customer_id", "--privacy-unit", "order_id"]
    assert main(["sql", QUERY, *tables(files), *two, *COMMON]) == 2
    assert "two columns without a table" in capsys.readouterr()[1]


def test_a_table_without_a_file_says_which_option_to_use(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["sql", QUERY, "--table", f"orders={files['orders']}", *UNIT_ARGS, *COMMON])
    _, err = capsys.readouterr()
    assert code == 2
    assert "--table items=PATH" in err
    code = main(["sql", QUERY, *tables(files), "--table", "x=nowhere.csv", *UNIT_ARGS, *COMMON])
    _, err = capsys.readouterr()
    assert code == 2
    assert "file not found: nowhere.csv" in err
