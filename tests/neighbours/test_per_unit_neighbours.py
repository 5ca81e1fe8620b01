"""The neighbour harness on per-person queries: a subquery (or ``ds.per_unit``) grouped by
the person's id, and by grp, then a release of the per-person values (docs/queries.md §7).

What the request says and charges (the kind of outcome, the error's class and message, the
charge, the columns, the groups under public keys) must not change when one person is
added, whatever their rows: several rows per group, infinities of both signs, NaN, nulls,
values at the ends of their types (``tests/neighbours/harness.py``)."""

from __future__ import annotations

import zlib
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from tests.neighbours.harness import (
    CONTAINERS,
    FULL_SCHEMA,
    KEYS,
    Request,
    Tables,
    check_cases,
    draw_request,
    with_precondition,
)

pytestmark = pytest.mark.filterwarnings("ignore::dpsense.SeededRandomnessWarning")

ENTRIES = ("sql-per-unit", "release-per-unit")
FUNCTIONS = ("SUM", "COUNT", "AVG", "MIN", "MAX")


def per_unit_request(rs: np.random.Generator, entry: str, tables: Tables, index: int) -> Request:
    """A random request of the harness's grammar, read through a per-person subquery: the
    unit is id (one row per person per group), the groups grp or none."""
    request = draw_request(rs, "sql" if entry == "sql-per-unit" else "query", tables, index)
    by: tuple[str, ...] = ("grp",) if request.by else ()
    keys = request.keys
    delta = request.delta
    if by and (keys is None or isinstance(keys[0], tuple)):
        if rs.random() < 0.7:
            options = KEYS[("grp",)]
            keys = tuple(options[int(rs.integers(len(options)))])
        else:
            keys, delta = None, 1e-3  # private partition selection needs a delta
    fv, fx = (str(rs.choice(FUNCTIONS)) for _ in range(2))
    if tables.container == "csv" and rs.random() < 0.7:
        # the aggregated columns of a CSV need declared types (else refused, always)
        request = replace(request, schema=tuple(sorted(FULL_SCHEMA.items())))
    request = replace(
        request,
        entry=entry,
        by=by,
        keys=keys if by else None,
        delta=delta,
        privacy_unit="id",
        max_rows_per_unit=1,
        max_groups_per_unit=int(rs.integers(1, 3)),
        per_unit=(fv, fx),
    )
    return with_precondition(request, tables)


def _seed(entry: str, tier: str) -> int:
    return zlib.crc32(f"{entry}/{tier}".encode())


@pytest.mark.parametrize("entry", ENTRIES)
def test_per_person_queries(entry: str, tmp_path: Path) -> None:
    check_cases(entry, CONTAINERS, 40, _seed(entry, "quick"), tmp_path, per_unit_request)


@pytest.mark.slow
@pytest.mark.parametrize("entry", ENTRIES)
def test_per_person_queries_many(entry: str, tmp_path: Path) -> None:
    check_cases(entry, CONTAINERS, 300, _seed(entry, "slow"), tmp_path, per_unit_request)
