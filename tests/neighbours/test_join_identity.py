"""The neighbour harness's shapes of unit identity and of the analyst's own NULLs
(docs/entry_points.md, "Types"; docs/joins.md §1 and §4).

1. **Who is one person is decided by declaration, never by the values.** Random tables
   whose undeclared unit ids read alike as numbers but differ as text (``1``, ``1.0``,
   ``+1``, ``5e0``, ``007``; in a pandas object column or a Python list, mixed ints,
   floats and strings) and one added person with a new id (``abc``, ``1.00``, ...). The
   count of rows kept after bounding each unit to m rows is released at an epsilon so
   large that the noise is zero, and must equal the brute-force count with units told
   apart by the text of each id alone; D and D' must differ by at most m. The same on a
   join of two private tables on the unit, through ``ds.sql``, ``ds.join`` and ``dpsense
   sql``. A path key held by customers ``1`` and ``1.0`` (two units by their text) is
   refused on D and on D' alike, whatever the added customer's id.
2. **NULLs made by the analyst's LEFT JOIN are in no group.** A private people table LEFT
   JOINed to a public regions table (countries without a region row; a region row whose
   region is NULL), grouped by the region: the added person may have an unmatched country
   or match the NULL region. Outcome (kind, words, charge, columns, groups) the same on D
   and D' through ``ds.sql`` under an Accountant, ``ds.join`` + ``Accountant.release`` and
   ``dpsense sql --ledger``; each group's count equals the rows of people whose country has
   that region (brute force).

The mutation check (scripts/mutation_check.py) breaks each rule: the unit compared by the
type the engine infers (``unit-inferred-type``), and the LEFT JOIN's NULLs kept
(``left-join-nulls-kept``); these tests kill both.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpsense as ds
from tests.neighbours.harness import Outcome, _main, observe

pytestmark = [
    pytest.mark.filterwarnings("ignore::dpsense.SeededRandomnessWarning"),
    pytest.mark.filterwarnings("ignore::dpsense.LargeEpsilonWarning"),
]

EXACT = 1e5  # epsilon at which a count's discrete noise is zero (P(nonzero) ~ e^-1e5)
# ids a CSV reader takes for numbers when no other id is text (so 1 and 1.0 would be one
# number), and a few it may not (+1, 007, 5e0)
TEXT_IDS = ("1", "1.0", "1.00", "2", "2.0", "2.5", "2.50", "7", "7.0", "-3", "-3.0", "5")
ODD_TEXT_IDS = ("+1", "5e0", "007", "01", "1e0")
NEW_TEXT_IDS = ("abc", "1.000", "+7", "0x1", "n/a", "8", "5.0", "-0")
OBJECT_IDS: tuple[Any, ...] = (1, 1.0, "1", "1.0", 7, 7.0, "007", 5, "5e0", 2.5, "2.50", -3)
NEW_OBJECT_IDS: tuple[Any, ...] = ("abc", "1.00", 8, 8.5, "+7", "n/a", 9.0)
CONTAINERS = ("csv", "pandas-object", "lists")


def _text(value: Any) -> str:
    """Who a unit is: the text of its id alone (``str``; a CSV file's cell as written)."""
    return str(value)


def _draw_ids(rs: np.random.Generator, container: str, n: int) -> tuple[list[Any], Any]:
    """``n`` row ids of D and one new id (a new unit by its text)."""
    pool, new = (TEXT_IDS, NEW_TEXT_IDS) if container == "csv" else (OBJECT_IDS, NEW_OBJECT_IDS)
    if container == "csv" and rs.random() < 0.3:
        pool = pool + ODD_TEXT_IDS
    if container != "csv" and rs.random() < 0.5:
        # numbers only: an engine would read 1 and 1.0 as one number
        pool = tuple(v for v in pool if not isinstance(v, str))
    ids = [pool[i] for i in rs.integers(0, len(pool), n)]
    seen = {_text(v) for v in ids}
    fresh = [v for v in new if _text(v) not in seen]
    return ids, fresh[int(rs.integers(0, len(fresh)))]


def _table(container: str, columns: dict[str, list[Any]], path: Path) -> Any:
    """The table in ``container``: a CSV file of the texts, a pandas frame whose id column
    is an ``object`` column, or a mapping of Python lists."""
    if container == "csv":
        lines = [",".join(columns)]
        lines += [",".join(str(v) for v in row) for row in zip(*columns.values(), strict=True)]
        path.write_text("\n".join(lines) + "\n")
        return str(path)
    if container == "pandas-object":
        return pd.DataFrame(
            {k: pd.Series(v, dtype=object if k in ("id", "customer") else None)
             for k, v in columns.items()}
        )  # fmt: skip
    return {k: list(v) for k, v in columns.items()}


def _count(result: Any) -> float:
    value = result.value if isinstance(result, ds.Release) else result["n"].value
    return float(value)


def _kept(ids: list[Any], m: int) -> int:
    """Brute force: the rows kept when each unit (an id's text) keeps at most m."""
    return sum(min(c, m) for c in Counter(_text(v) for v in ids).values())


@pytest.mark.parametrize("container", CONTAINERS)
def test_one_table_units_are_told_apart_by_their_text(container: str, tmp_path: Path) -> None:
    rs = np.random.default_rng(zlib_seed(container))
    for case in range(25):
        ids, new = _draw_ids(rs, container, int(rs.integers(3, 12)))
        m = int(rs.choice([1, 1, 2]))  # at m = 1 the count is the number of units
        extra = int(rs.integers(1, 4))
        counts = []
        for which, rows in (("D", ids), ("D'", ids + [new] * extra)):
            data = _table(container, {"id": rows, "x": [5] * len(rows)}, tmp_path / f"{which}.csv")
            released = _count(
                ds.release(
                    data, ds.Count(), privacy_unit="id", max_rows_per_unit=m, epsilon=EXACT, rng=3
                )
            )
            assert released == _kept(rows, m), (
                f"case {case} ({container}, {which}): ids {rows!r}, m={m}: released "
                f"{released}, the units by their text keep {_kept(rows, m)}"
            )
            counts.append(released)
        assert abs(counts[1] - counts[0]) <= m, (case, ids, new, counts)


def zlib_seed(label: str) -> int:
    import zlib

    return zlib.crc32(label.encode())


def _join_tables(
    container: str, people: list[Any], visits: list[Any], folder: Path, which: str
) -> dict[str, Any]:
    return {
        "visits": _table(
            container, {"id": visits, "hours": [3] * len(visits)}, folder / f"visits{which}.csv"
        ),
        "people": _table(
            container,
            {"id": people, "since": [2000] * len(people)},
            folder / f"people{which}.csv",
        ),
    }


_JOIN_SQL = "SELECT COUNT(*) AS n FROM visits v JOIN people p ON v.id = p.id"


@pytest.mark.parametrize("entry", ["sql", "join", "cli"])
@pytest.mark.parametrize("container", ["csv", "pandas-object"])
def test_joined_units_are_told_apart_by_their_text(
    entry: str, container: str, tmp_path: Path
) -> None:
    """Private tables joined on the unit: a visit joins the person whose id has its text;
    a person present in one table only has no joined row."""
    if entry == "cli" and container != "csv":
        pytest.skip("the command line reads files")
    rs = np.random.default_rng(zlib_seed(f"join/{entry}/{container}"))
    for case in range(12 if entry == "cli" else 20):
        ids, new = _draw_ids(rs, container, 10)
        people = list({_text(v): v for v in ids[:6]}.values())  # one row per person
        visits = ids[3:]  # some people without visits, some visits without a person
        m = int(rs.choice([1, 1, 2]))  # at m = 1 the count is the number of units
        placement = rs.integers(0, 3)  # the new person: in both tables, people only, visits only
        counts = []
        for which in ("D", "D'"):
            p, v = list(people), list(visits)
            if which == "D'":
                p += [new] if placement in (0, 1) else []
                v += [new] * int(rs.integers(1, 4)) if placement in (0, 2) else []
            tables = _join_tables(container, p, v, tmp_path, which.replace("'", "p"))
            known = {_text(x) for x in p}
            expected = _kept([x for x in v if _text(x) in known], m)
            released = _run_join(entry, tables, m, tmp_path)
            assert released == expected, (
                f"case {case} ({entry}, {container}, {which}): people {p!r}, visits {v!r}, "
                f"m={m}: released {released}, by the ids' text {expected}"
            )
            counts.append(released)
        assert abs(counts[1] - counts[0]) <= m, (case, counts)


def _run_join(entry: str, tables: dict[str, Any], m: int, folder: Path) -> float:
    common = {"max_rows_per_unit": m, "epsilon": EXACT, "rng": 3}
    if entry == "sql":
        return _count(ds.sql(_JOIN_SQL, tables=tables, privacy_unit="id", **common))
    if entry == "join":
        joined = ds.join(tables, on=[("visits", "people", "id")])
        return _count(ds.release(joined, ds.Count(), privacy_unit="id", **common))
    argv = ["sql", _JOIN_SQL, "--table", f"visits={tables['visits']}", "--table",
            f"people={tables['people']}", "--privacy-unit", "id", "--max-rows-per-unit",
            str(m), "--epsilon", str(EXACT), "--seed", "3", "--json"]  # fmt: skip
    code, out, err = _main(argv)
    assert code == 0, err
    payload = json.loads(out)
    rows = payload.get("rows") or payload.get("groups") or [payload]
    return float(rows[0]["n"])


@pytest.mark.parametrize("container", ["csv", "pandas-object"])
def test_a_path_key_of_two_ids_is_refused_whatever_the_added_id(
    container: str, tmp_path: Path
) -> None:
    """An order held by customers ``1`` and ``1.0``: two units by their text, so the path
    items -> orders is refused on D and on D' alike (with the type inferred from every
    value, ``1`` and ``1.0`` were one customer until an ``abc`` arrived)."""
    rs = np.random.default_rng(zlib_seed(f"path/{container}"))
    one, other = ("1", "1.0") if container == "csv" else (1, 1.0)
    sql = "SELECT COUNT(*) AS n FROM items i JOIN orders o ON i.order_id = o.order_id"
    units = {"orders": "customer", "items": ("order_id", "orders", "order_id")}
    for case in range(8):
        orders_c = [one, other, 2, 3]
        orders_k = [10, 10, 11, 12]
        new = ["abc", "1.00", "+1", 4][case % 4]
        outcomes = []
        for which in ("D", "D'"):
            c, k = list(orders_c), list(orders_k)
            if which == "D'":
                c.append(new)
                k.append(20 + int(rs.integers(0, 5)))
            tables = {
                "orders": _table(
                    container, {"customer": c, "order_id": k}, tmp_path / f"o{case}{len(c)}.csv"
                ),
                "items": _table(
                    container,
                    {"order_id": [10, 11, 12, 10], "amount": [1, 2, 3, 4]},
                    tmp_path / f"i{case}{len(c)}.csv",
                ),
            }
            acc = ds.Accountant(epsilon=10.0)
            outcomes.append(
                observe(
                    lambda t=tables, a=acc: ds.sql(  # type: ignore[misc]
                        sql, tables=t, privacy_unit=units, epsilon=1.0, accountant=a, rng=1
                    ),
                    acc,
                )
            )
        _same(outcomes[0], outcomes[1], f"path case {case} ({container}, added {new!r})")
        assert outcomes[0].kind == "error", outcomes[0].short()
        assert outcomes[0].error is not None
        assert "more than one unit" in outcomes[0].error[1]


def _same(a: Outcome, b: Outcome, what: str) -> None:
    differences = a.differences(b, public_keys=True)
    assert not differences, (
        f"{what}: the outcome depends on one person\n  on D : {a.short()}\n  on D': {b.short()}"
        "\n  differs in: " + " | ".join(differences)
    )


# -- LEFT JOIN: the analyst's NULLs ------------------------------------------------------

REGIONS = pd.DataFrame(
    {"country": ["FR", "DE", "IT", "ES"], "region": ["west", "centre", "south", None]}
)
COUNTRIES = ("FR", "DE", "IT", "ES", "PT", "XX")  # ES: a NULL region; PT, XX: no row
LEFT_SQL = (
    "SELECT r.region, COUNT(*) AS n, AVG(p.age) AS age FROM people p "
    "LEFT JOIN regions r ON p.country = r.country GROUP BY r.region"
)
REGION_OF = dict(zip(REGIONS["country"], REGIONS["region"], strict=True))


def _people(rs: np.random.Generator, n: int, start: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "id": pd.Series(range(start, start + n), dtype="int64"),
            "country": [COUNTRIES[i] for i in rs.integers(0, len(COUNTRIES), n)],
            "age": pd.Series(rs.integers(18, 90, n), dtype="int64"),
        }
    )


def _left_outcome(entry: str, people: pd.DataFrame, folder: Path) -> tuple[Outcome, Any]:
    """The outcome of the LEFT JOIN query through ``entry``, and its released rows."""
    common: dict[str, Any] = {"privacy_unit": "id", "epsilon": EXACT}
    bounds = {"age": (0, 100)}
    if entry == "cli":
        people_csv, regions_csv = folder / "people.csv", folder / "regions.csv"
        people.to_csv(people_csv, index=False)
        REGIONS.to_csv(regions_csv, index=False)
        ledger = folder / "ledger.db"
        if ledger.exists():
            ledger.unlink()
        assert _main(["budget", "init", str(ledger), "--epsilon", "1e6"])[0] == 0
        argv = ["sql", LEFT_SQL, "--table", f"people={people_csv}", "--public",
                f"regions={regions_csv}", "--privacy-unit", "id", "--bounds", "age=0:100",
                "--epsilon", str(EXACT), "--seed", "5", "--ledger", str(ledger), "--json",
                "--schema", "id=int"]  # fmt: skip
        code, out, err = _main(argv)
        show = json.loads(_main(["budget", "show", str(ledger), "--json"])[1])
        charge = (show["spent_epsilon"], show["spent_delta"], len(show["charges"]))
        if code != 0:
            return Outcome("error", error=(str(code), err), charge=charge), None
        payload = json.loads(out)
        rows = payload.get("rows") or payload.get("groups")
        groups = tuple(sorted(str(r["region"]) for r in rows))
        return Outcome("release", charge=charge, groups=groups, columns=tuple(rows[0])), rows
    acc = ds.Accountant(epsilon=1e6)
    tables = {"people": people, "regions": REGIONS}
    released: list[Any] = []
    if entry == "sql":

        def call() -> Any:
            res = ds.sql(
                LEFT_SQL, tables=tables, public_tables=["regions"], bounds=bounds,
                accountant=acc, rng=5, **common,
            )  # fmt: skip
            released.append(res)
            return res
    else:
        joined = ds.join(
            tables, on=[("people", "regions", "country")], how="left", public_tables=["regions"]
        )

        def call() -> Any:
            res = acc.release(
                joined, {"n": ds.Count(), "age": ("age", ds.Mean(0, 100))}, by="region",
                rng=5, **common,
            )  # fmt: skip
            released.append(res)
            return res

    outcome = observe(call, acc)
    return outcome, (released[0].to_dicts() if released else None)


@pytest.mark.parametrize("entry", ["sql", "join", "cli"])
def test_left_join_nulls_are_in_no_group(entry: str, tmp_path: Path) -> None:
    rs = np.random.default_rng(zlib_seed(f"left/{entry}"))
    for case in range(10 if entry == "cli" else 20):
        base = _people(rs, int(rs.integers(4, 10)), 1)
        person = _people(rs, 1, 100)
        person["country"] = [("PT", "XX", "ES", "FR")[case % 4]]  # unmatched, NULL, matched
        results = []
        for which, people in (("D", base), ("D'", pd.concat([base, person], ignore_index=True))):
            outcome, rows = _left_outcome(entry, people, tmp_path)
            assert outcome.kind == "release", f"case {case} ({entry}, {which}): {outcome.short()}"
            counts = Counter(REGION_OF.get(c) for c in people["country"])
            got = {str(r["region"]): round(float(r["n"])) for r in rows}
            want = {str(g): counts.get(g, 0) for g in ("west", "centre", "south")}
            assert got == want, f"case {case} ({entry}, {which}): {got} != {want}"
            results.append(outcome)
        _same(results[0], results[1], f"LEFT JOIN case {case} ({entry})")
