"""The neighbour harness over every public entry point (SPEC: "no outcome may depend on
one person").

Once the analyst's request is fixed, the kind of outcome (a release, or which error class
with which exact message), the charge (a release's epsilon and delta, an Accountant's
``.spent``, a ledger's spent budget and number of charges), the set of output columns and,
with public keys, the set of groups must not depend on the data. Each test draws small
random tables D (columns id, grp, v: int; x: float; s: text), adds ONE person (one to three
rows under a new id, 17 or an extreme id) with adversarial values (0, negatives, 2**62,
+-2**63, +-1e300, +-inf, NaN, null, a new group key, a duplicate of an existing row, odd
text), and a random request from a small grammar (every allowed WHERE node and function,
adversarial ones such as ``CASE WHEN id = 17 THEN v % 0 = 1 ELSE TRUE END``, ``v // 0``,
``v * 9223372036854775807 > 0``, failing casts; every aggregate; schema casts; GROUP BY
with public keys and with private selection; a privacy unit; bounds="private"), runs it
on D and on D' with the same seed and compares the outcomes (harness.py). The released
numbers are not compared; neither are refusals of propose-test-release (they are the
private answer). Warnings other than the seed warning are compared too (an observer sees
them). The failure message gives the index of the first random request that found a
difference (so "how many requests it took"), a shrunk reproduction and both outcomes;
``DPSENSE_NEIGHBOURS_ALL=1`` lists every failing request instead of the first.

Containers: pandas DataFrames, Parquet files and DuckDB relations keep D' with the same
column dtypes as D (a typed container's schema is public; a null in an int column makes
both neighbours use pandas' nullable Int64). CSV files are written from the values, so
their column types are inferred by DuckDB and are NOT public: there the person may also
put text where a number is expected ("abc", "n/a"), a value off the type ("3.5" in an int
column) or a number beyond BIGINT. A WHERE that reads an undeclared CSV column must read
it the same way on both neighbours (as text, say) or be refused the same way.

The data owner's precondition (allowed to differ, so the harness steers around it).
docs/tables.md ("Missing values and non-numbers: the data owner's precondition") says raw
nulls (None, NaN, an empty CSV field) in a column the release uses are an InputError
under the default ``nulls="error"``, and that text in a numeric column is one too: the
data owner's cleaning step, not an analyst's channel. The current code reads a CSV value
column that holds text with TRY_CAST(... AS DOUBLE), so such text is a missing value
("contain missing values (null or NaN, ...)"), exactly like a raw null. So when the
person holds a raw null in a column the release uses (value columns, by-columns, the
privacy unit, and, conservatively, the columns of ``schema=``), or, in a CSV, text that
is not a number in a value column whose type is not declared, the request uses
``nulls="drop"`` (harness.with_precondition) and must then give the same outcome. Text
in a CSV column that is only a by-column or only read by WHERE is NOT a precondition
(keys are matched by declared or Python types, WHERE is total), and neither is a value
off a declared ``schema=`` type (e.g. 101 for decimal(2,0), 3.5 or "abc" for int): that
follows one fixed data-independent rule (dropped or clamped), never ``nulls=``.

Sizes: the quick tier (``-m "not slow"``) runs a few dozen requests per entry point,
about a minute in all; the ``slow`` tier runs many more with other seeds.
"""

from __future__ import annotations

import zlib
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from tests.neighbours.harness import (
    CONTAINERS,
    FORM_ENTRIES,
    FULL_SCHEMA,
    JOIN_ENTRIES,
    Request,
    Tables,
    check_cases,
    draw_request,
    joined_tables,
)
from tests.neighbours.rowwise import rowwise_request

pytestmark = pytest.mark.filterwarnings("ignore::dpsense.SeededRandomnessWarning")

PYTHON = (
    "release",  # ds.release with one statistic
    "query",  # ds.release with a dict of statistics
    "accountant",  # ds.Accountant(epsilon=...).release, one statistic or a dict
    "accountant-rho",  # ds.Accountant(rho=...).release
    "sql",  # ds.sql
    "sql-accountant",  # ds.sql(..., accountant=acc)
    "sql-accountant-method",  # ds.Accountant(epsilon=...).sql
    "private_bounds",  # ds.private_bounds
)
CLI = ("cli-release", "cli-sql", "cli-bounds")
FILES = ("csv", "parquet")

QUICK = {"release": 60, "query": 50, "accountant": 40, "accountant-rho": 30, "sql": 60,
         "sql-accountant": 30, "sql-accountant-method": 20, "private_bounds": 30,
         "cli-release": 25, "cli-sql": 25, "cli-bounds": 15}  # fmt: skip
SLOW = 300


def _seed(entry: str, tier: str) -> int:
    return zlib.crc32(f"{entry}/{tier}".encode())


@pytest.mark.parametrize("entry", PYTHON)
def test_python_entry_point(entry: str, tmp_path: Path) -> None:
    check_cases(entry, CONTAINERS, QUICK[entry], _seed(entry, "quick"), tmp_path)


@pytest.mark.parametrize("entry", CLI)
def test_command_line(entry: str, tmp_path: Path) -> None:
    check_cases(entry, FILES, QUICK[entry], _seed(entry, "quick"), tmp_path)


def _join_request(rs: np.random.Generator, entry: str, tables: Tables, index: int) -> Request:
    """A ds.sql request on the joined tables: the unit is the person's id; with public
    groups (``sql-join-public``) no keys and no selection."""
    request = draw_request(rs, entry, tables, index)
    request = replace(request, privacy_unit="id")
    if tables.container == "csv" and rs.random() < 0.8:
        # a join compares CSV columns only once their types are declared
        request = replace(request, schema=tuple(sorted(FULL_SCHEMA.items())))
    if entry == "sql-join-public":
        request = replace(request, by=(), keys=None)
    return request


@pytest.mark.parametrize("entry", [*JOIN_ENTRIES, *FORM_ENTRIES])
def test_joins(entry: str, tmp_path: Path) -> None:
    check_cases(
        entry, CONTAINERS, 40, _seed(entry, "quick"), tmp_path, _join_request, joined_tables
    )


@pytest.mark.slow
@pytest.mark.parametrize("entry", [*JOIN_ENTRIES, *FORM_ENTRIES])
def test_joins_many(entry: str, tmp_path: Path) -> None:
    check_cases(
        entry, CONTAINERS, SLOW, _seed(entry, "slow"), tmp_path, _join_request, joined_tables
    )


@pytest.mark.slow
@pytest.mark.parametrize("entry", PYTHON)
def test_python_entry_point_many(entry: str, tmp_path: Path) -> None:
    check_cases(entry, CONTAINERS, SLOW, _seed(entry, "slow"), tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("entry", CLI)
def test_command_line_many(entry: str, tmp_path: Path) -> None:
    check_cases(entry, FILES, SLOW // 2, _seed(entry, "slow"), tmp_path)


@pytest.mark.parametrize("entry", ["sql", "cli-sql"])
def test_row_wise_expressions(entry: str, tmp_path: Path) -> None:
    """Histograms of FLOOR(v / 10) * 10, CASE WHEN groupings and aggregates of
    expressions, adversarial ones aimed at the person (tests/neighbours/rowwise.py)."""
    containers = CONTAINERS if entry == "sql" else FILES
    check_cases(entry, containers, 40, _seed(entry, "rowwise"), tmp_path, rowwise_request)


@pytest.mark.slow
@pytest.mark.parametrize("entry", ["sql", "cli-sql"])
def test_row_wise_expressions_many(entry: str, tmp_path: Path) -> None:
    containers = CONTAINERS if entry == "sql" else FILES
    check_cases(entry, containers, SLOW, _seed(entry, "rowwise-slow"), tmp_path, rowwise_request)
