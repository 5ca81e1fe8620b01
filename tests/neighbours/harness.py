"""The neighbour harness: random tables, one adversarial person, random requests, and the
outcome of a request on D and on D' = D + that person through every public entry point.

The principle (docs: "no outcome may depend on one person"): once the analyst's request
is fixed, the kind of outcome (a release, or which error class with which exact message),
the charge, the set of output columns and, with public keys, the set of groups never
depend on the data. :func:`check_cases` draws cases, runs each on both neighbours with the
same seed and fails with the first case whose outcomes differ (its index, the request and
both outcomes, after a greedy shrink), or with every such case when the environment sets
``DPSENSE_NEIGHBOURS_ALL=1``.

What counts as the data owner's precondition (allowed to differ), and why, is in the
docstring of ``tests/neighbours/test_entry_points.py``.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import os
import re
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

import duckdb
import numpy as np
import pandas as pd

import dpsense as ds

COLUMNS = ("id", "grp", "v", "x", "s")
INT_COLUMNS = ("id", "grp", "v")
TABLE = "tbl"  # the table's name in ds.sql
# evaluations of the greedy shrink after a failure (0 skips it: scripts/mutation_check.py
# needs a failing request, not a small one)
MAX_SHRINK = int(os.environ.get("DPSENSE_NEIGHBOURS_SHRINK", "40"))

# ---------------------------------------------------------------------------------------
# tables and the adversarial person
# ---------------------------------------------------------------------------------------

INF = math.inf
NAN = math.nan
# the person's adversarial values, by column; every one keeps the column's dtype in a typed
# container (None in an int column makes both neighbours use pandas' nullable Int64)
ADVERSARIAL: dict[str, list[Any]] = {
    "grp": [0, -1, 4, 99, 2**62, None],  # a new group key (or none)
    "v": [0, -1, -7, 101, 2**31, 2**62, -(2**62), 2**63 - 1, -(2**63), None],
    "x": [0.0, -0.0, -2.5, 3.5, 1e300, -1e300, INF, -INF, NAN, 5e-324, None],
    "s": ["", "a", "Z", "%", "_", "O'Brien", "ümlaut", "x" * 300, "123", "NULL",
          "2020-01-01", None],
}  # fmt: skip
# CSV only: a CSV's column types are inferred from its values (not public), so one person
# may put text where a number is expected, or a value off the type (3.5 in an int column)
ADVERSARIAL_CSV: dict[str, list[Any]] = {
    "grp": ["n/a", "unknown", "3.5", "2015"],
    "v": ["abc", "3.5", "1e300", str(2**64), "n/a", "-0"],
    "x": ["n/a", "abc", "1e999"],
}
NEW_IDS = (17, 0, -3, 2**62, 2**63 - 1)

CONTAINERS = ("pandas", "parquet", "csv", "duckdb")


def is_missing(value: Any) -> bool:
    """A raw null: None, NaN, or an empty CSV field."""
    return value is None or value == "" or (isinstance(value, float) and math.isnan(value))


def is_number_text(value: Any) -> bool:
    if not isinstance(value, str):
        return True
    try:
        float(value)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class Tables:
    """D (``base``) and the person added to make D' (rows in :data:`COLUMNS` order)."""

    base: tuple[tuple[Any, ...], ...]
    person: tuple[tuple[Any, ...], ...]
    new_id: int
    container: str

    @property
    def neighbour(self) -> tuple[tuple[Any, ...], ...]:
        return self.base + self.person

    def nullable(self) -> frozenset[str]:
        """Int columns that hold a None in D' (both neighbours then use Int64)."""
        rows = self.neighbour
        return frozenset(
            c for i, c in enumerate(COLUMNS) if c in INT_COLUMNS and any(r[i] is None for r in rows)
        )

    def person_values(self, column: str) -> list[Any]:
        i = COLUMNS.index(column)
        return [r[i] for r in self.person]


def draw_tables(rs: np.random.Generator, container: str) -> Tables:
    """A small random table D and one adversarial person (1 to 3 rows, a new id)."""
    people = int(rs.choice([0, 1, 2, 3, 5, 8], p=[0.06, 0.12, 0.2, 0.22, 0.22, 0.18]))
    base = []
    for pid in range(1, people + 1):
        for _ in range(int(rs.integers(1, 4))):
            base.append(
                (
                    pid,
                    int(rs.integers(1, 4)),
                    int(rs.integers(0, 12)),
                    float(np.round(rs.normal(5.0, 3.0), 2)),
                    str(rs.choice(["a", "b", "c"])),
                )
            )
    new_id = int(rs.choice(NEW_IDS)) if rs.random() < 0.3 else 17
    person = []
    for _ in range(int(rs.choice([1, 2, 3], p=[0.6, 0.25, 0.15]))):
        if base and rs.random() < 0.2:  # a duplicate of an existing row (under a new id)
            person.append((new_id, *base[int(rs.integers(len(base)))][1:]))
            continue
        row: list[Any] = [new_id]
        for column in COLUMNS[1:]:
            if rs.random() < 0.5:
                pool = list(ADVERSARIAL[column])
                if container == "csv":
                    pool += ADVERSARIAL_CSV.get(column, [])
                row.append(pool[int(rs.integers(len(pool)))])
            else:
                row.append(_benign(rs, column))
        person.append(tuple(row))
    return Tables(tuple(base), tuple(person), new_id, container)


def _benign(rs: np.random.Generator, column: str) -> Any:
    if column == "grp":
        return int(rs.integers(1, 4))
    if column == "v":
        return int(rs.integers(0, 12))
    if column == "x":
        return float(np.round(rs.normal(5.0, 3.0), 2))
    return str(rs.choice(["a", "b", "c"]))


def frame(rows: Sequence[tuple[Any, ...]], nullable: frozenset[str]) -> pd.DataFrame:
    """A typed pandas DataFrame: int64 (Int64 when nullable), float64, string."""
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in COLUMNS]
    data = {}
    for name, values in zip(COLUMNS, columns, strict=True):
        if name in INT_COLUMNS:
            dtype = "Int64" if name in nullable else "int64"
            data[name] = pd.Series(list(values), dtype=dtype)
        elif name == "x":
            data[name] = pd.Series([NAN if v is None else v for v in values], dtype="float64")
        else:
            data[name] = pd.Series(list(values), dtype="string")
    return pd.DataFrame(data)


def _csv_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)  # inf, -inf, nan, 1e+300, -0.0
    return str(value)


def write_csv(path: Path, rows: Sequence[tuple[Any, ...]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(COLUMNS)
        for row in rows:
            writer.writerow([_csv_text(v) for v in row])


def materialise(tables: Tables, which: str, folder: Path) -> Any:
    """D (``which="D"``) or D' in the tables' container. Files keep one path for both
    neighbours (a message that names the path must not differ by it)."""
    rows = tables.base if which == "D" else tables.neighbour
    container = tables.container
    if container == "csv":
        path = folder / "people.csv"
        write_csv(path, rows)
        return path
    df = frame(rows, tables.nullable())
    if container == "pandas":
        return df
    if container == "duckdb":
        return duckdb.from_df(df)
    path = folder / "people.parquet"
    df.to_parquet(path, index=False)
    return path


# ---------------------------------------------------------------------------------------
# requests
# ---------------------------------------------------------------------------------------

KINDS = ("count", "sum", "mean", "median", "quantile", "quantiles", "variance", "std")
BOUNDS: dict[str, list[tuple[float, float]]] = {
    "v": [(0.0, 10.0), (-5.0, 100.0), (0.0, 99.0), (-1e6, 1e6)],
    "x": [(0.0, 10.0), (-10.0, 10.0), (0.5, 2.5), (-1e300, 1e300)],
}
# every column declared ("text" for s): a WHERE on a CSV reads declared columns only
FULL_SCHEMA = {"id": "int", "grp": "int", "v": "int", "x": "float", "s": "text"}
SCHEMAS: list[dict[str, str]] = [
    {"v": "int"},
    {"v": "decimal(2,0)"},
    {"v": "decimal(10,2)"},
    {"v": "float"},
    {"x": "int"},
    {"x": "float"},
    {"x": "decimal(4,1)"},
    {"grp": "int"},
    {"v": "int", "x": "double"},
    {"s": "int"},
    {"grp": "text"},
    {"s": "text", "x": "float"},
    FULL_SCHEMA,
]
KEYS: dict[tuple[str, ...], list[list[Any]]] = {
    ("grp",): [[1, 2, 3], [1, 2, 99], [1, 2, "unknown"], [2015, 2016, "unknown"], [1.0, 2.5]],
    ("s",): [["a", "b", "zz"], ["a", ""], ["a", "b", "c", "Z"]],
    ("grp", "s"): [[(1, "a"), (2, "b"), (99, "Z")], [(1, "a"), (3, "c")]],
}


@dataclass(frozen=True)
class Stat:
    """One statistic of a request: a kind, its column (None: COUNT(*)), bounds or None."""

    name: str
    kind: str
    column: str | None
    bounds: tuple[float, float] | None
    ps: tuple[float, ...] = ()
    expr: str | None = None  # SQL only: a row-wise expression aggregated instead of a column

    def build(self) -> ds.Statistic:
        lo_hi = () if self.bounds is None else self.bounds
        if self.kind == "count":
            return ds.Count()
        if self.kind == "quantile":
            return ds.Quantile(self.ps[0], *lo_hi)
        if self.kind == "quantiles":
            return ds.Quantiles(list(self.ps), *lo_hi)
        cls = {
            "sum": ds.Sum,
            "mean": ds.Mean,
            "median": ds.Median,
            "variance": ds.Variance,
            "std": ds.Std,
        }[self.kind]
        return cls(*lo_hi)

    def code(self) -> str:
        lo_hi = "" if self.bounds is None else f"{self.bounds[0]!r}, {self.bounds[1]!r}"
        if self.kind == "count":
            return "ds.Count()"
        if self.kind == "quantile":
            return f"ds.Quantile({self.ps[0]!r}{', ' if lo_hi else ''}{lo_hi})"
        if self.kind == "quantiles":
            return f"ds.Quantiles({list(self.ps)!r}{', ' if lo_hi else ''}{lo_hi})"
        return f"ds.{self.kind.capitalize()}({lo_hi})"

    def sql(self) -> str:
        col = self.expr if self.expr is not None else self.column
        if self.kind == "count":
            text = "COUNT(*)" if col is None else f"COUNT({col})"
        elif self.kind == "quantile":
            text = f"QUANTILE_CONT({col}, {self.ps[0]})"
        elif self.kind == "quantiles":
            text = f"QUANTILE_CONT({col}, [{', '.join(str(p) for p in self.ps)}])"
        else:
            fn = {
                "sum": "SUM",
                "mean": "AVG",
                "median": "MEDIAN",
                "variance": "VAR_POP",
                "std": "STDDEV_POP",
            }[self.kind]
            text = f"{fn}({col})"
        return f"{text} AS {self.name}"


@dataclass(frozen=True)
class Request:
    """One analyst request, fixed before the data: the entry point and its arguments."""

    entry: str
    stats: tuple[Stat, ...]
    epsilon: float
    delta: float = 0.0
    where: str | None = None
    schema: tuple[tuple[str, str], ...] = ()
    by: tuple[str, ...] = ()
    keys: tuple[Any, ...] | None = None
    privacy_unit: str | None = None
    max_rows_per_unit: int = 1
    max_groups_per_unit: int = 1
    nulls: str = "error"
    private_bounds: bool = False
    seed: int = 0
    json: bool = True  # the CLI's --json, else its text output (numbers masked)
    ledger: bool = False  # the CLI's --ledger
    column_bounds: tuple[tuple[str, tuple[float, float]], ...] = ()
    interval: str = "privacy"  # ds.release / ds.sql's interval=, the CLI's --interval
    # SQL only: the one by-column is a row-wise expression (alias, expression, how GROUP BY
    # names it: "expr", "alias" or "position"); tests/neighbours/rowwise.py
    group_expr: tuple[str, str, str] | None = None
    # a per-person subquery (PER_UNIT_ENTRIES): the aggregates of v and x per id (and grp)
    per_unit: tuple[str, str] = ()

    # columns the release reads (the value columns, the by-columns, the unit, the schema)
    def value_columns(self) -> set[str]:
        return {s.column for s in self.stats if s.column is not None}

    def used_columns(self) -> set[str]:
        # a row-wise expression's columns are not "used": a NULL it meets drops its row
        by = {b for b in self.by if b in COLUMNS}
        used = self.value_columns() | by | {c for c, _ in self.schema}
        if self.privacy_unit is not None:
            used.add(self.privacy_unit)
        return used

    def common(self) -> dict[str, Any]:
        """Keyword arguments shared by ds.release and Accountant.release."""
        kw: dict[str, Any] = {"epsilon": self.epsilon, "rng": self.seed}
        if self.delta:
            kw["delta"] = self.delta
        if self.where is not None:
            kw["where"] = self.where
        if self.schema:
            kw["schema"] = dict(self.schema)
        if self.by:
            kw["by"] = self.by[0] if len(self.by) == 1 else list(self.by)
        if self.keys is not None:
            kw["keys"] = list(self.keys)
        if self.privacy_unit is not None:
            kw["privacy_unit"] = self.privacy_unit
            kw["max_rows_per_unit"] = self.max_rows_per_unit
            kw["max_groups_per_unit"] = self.max_groups_per_unit
        if self.nulls != "error":
            kw["nulls"] = self.nulls
        if self.private_bounds:
            kw["bounds"] = "private"
        if self.interval != "privacy":
            kw["interval"] = self.interval
        return kw

    def statistic_argument(self) -> tuple[Any, dict[str, Any]]:
        """(statistic, extra keyword arguments) of ds.release for this request."""
        if len(self.stats) == 1 and self.stats[0].name == "":
            stat = self.stats[0]
            extra = {} if stat.column is None else {"column": stat.column}
            return stat.build(), extra
        query: dict[str, Any] = {}
        for stat in self.stats:
            query[stat.name] = stat.build() if stat.column is None else (stat.column, stat.build())
        return query, {}

    def sql_text(self, source: str) -> str:
        if self.per_unit:
            return self.per_unit_text(source)
        by = ("label",) if self.entry == "sql-join-public" else self.by
        selected = list(by)
        if self.group_expr is not None and by == (self.group_expr[0],):
            alias, expr, form = self.group_expr
            selected = [f"{expr} AS {alias}"]
            by = ({"expr": expr, "alias": alias, "position": "1"}[form],)
        select = [*selected, *(s.sql() for s in self.stats)]
        text = f"SELECT {', '.join(select)} FROM {source}"
        if self.entry in JOIN_ENTRIES:
            # the person's rows, their row in the people table, a public lookup (fan-out)
            text += f" JOIN people USING (id) JOIN lk ON {source}.grp = lk.g2"
        if self.where is not None:
            text += f" WHERE {self.where}"
        if by:
            text += f" GROUP BY {', '.join(by)}"
        return text

    def per_unit_text(self, source: str) -> str:
        """The query over a subquery grouped by id (and grp): v and x per person."""
        keys = ", ".join(("id", *self.by))
        fv, fx = self.per_unit
        inner = f"SELECT {keys}, {fv}(v) AS v, {fx}(x) AS x FROM {source}"
        if self.where is not None:
            inner += f" WHERE {self.where}"
        inner += f" GROUP BY {keys}"
        text = f"SELECT {', '.join([*self.by, *(s.sql() for s in self.stats)])} FROM ({inner})"
        return text + (f" GROUP BY {', '.join(self.by)}" if self.by else "")

    def per_unit_handle(self, data: Any) -> Any:
        """The ds.per_unit of the same subquery."""
        fv, fx = self.per_unit
        return ds.per_unit(
            data,
            privacy_unit="id",
            values={"v": ("v", fv.lower()), "x": ("x", fx.lower())},
            by=list(self.by) or None,
            where=self.where,
            name=TABLE,
        )

    def sql_keys(self) -> dict[str, list[Any]] | None:
        if self.keys is None:
            return None
        if len(self.by) == 1:
            return {self.by[0]: list(self.keys)}
        return {c: sorted({k[i] for k in self.keys}, key=repr) for i, c in enumerate(self.by)}

    def sql_bounds(self) -> dict[str, tuple[float, float]] | str | None:
        if self.private_bounds:
            return "private"
        bounds = dict(self.column_bounds)
        needed = {s.column for s in self.stats if s.kind != "count" and s.column is not None}
        out = {c: bounds[c] for c in sorted(needed)}
        for s in self.stats:  # an aggregated expression is bounded by its aggregate's alias
            if s.expr is not None and s.kind != "count" and s.bounds is not None:
                out[s.name] = s.bounds
        return out or None

    def code(self, data: str = "data") -> str:
        """The request as Python (for the failure report)."""
        kw = self.common()
        if self.entry in JOIN_ENTRIES:
            return (
                f"ds.sql({self.sql_text(TABLE)!r}, tables={{{TABLE!r}: {data}, 'people': "
                f"people, 'lk': lk}}, privacy_unit='id', public_tables=['lk'], "
                f"max_rows_per_unit={self.max_rows_per_unit}, max_groups_per_unit="
                f"{self.max_groups_per_unit}, schema={dict(self.schema)!r}, bounds="
                f"{self.sql_bounds()!r}, keys={self.sql_keys()!r}, nulls={self.nulls!r}, "
                f"epsilon={self.epsilon!r}, delta={self.delta!r}, rng={self.seed})"
            )
        if self.entry in SQL_ENTRIES:
            args = [
                repr(self.sql_text(TABLE)),
                f"tables={{{TABLE!r}: {data}}}",
                f"epsilon={self.epsilon!r}",
            ]
            if self.delta:
                args.append(f"delta={self.delta!r}")
            for name in ("privacy_unit", "max_rows_per_unit", "max_groups_per_unit",
                         "nulls", "schema", "interval"):  # fmt: skip
                if name in kw:
                    args.append(f"{name}={kw[name]!r}")
            if self.sql_bounds() is not None:
                args.append(f"bounds={self.sql_bounds()!r}")
            if self.sql_keys() is not None:
                args.append(f"keys={self.sql_keys()!r}")
            if self.entry == "sql-accountant":
                args.append(f"accountant={_ACCOUNTANT_CODE['epsilon']}")
            if self.entry == "sql-accountant-method":
                return f"{_ACCOUNTANT_CODE['epsilon']}.sql({', '.join(args)}, rng={self.seed})"
            return f"ds.sql({', '.join(args)}, rng={self.seed})"
        if self.entry == "private_bounds":
            stat = self.stats[0]
            kw = {k: v for k, v in kw.items() if k not in ("by", "keys", "max_groups_per_unit")}
            kw.pop("where", None)
            return f"ds.private_bounds({data}, column={stat.column!r}, {_kw(kw)})"
        if self.entry.startswith("cli-"):
            return "main(" + repr(cli_argv(self, Path("DATA"), Path("LEDGER"), Path("KEYS"))) + ")"
        statistic, extra = (None, {})
        if len(self.stats) == 1 and self.stats[0].name == "":
            stat = self.stats[0]
            statistic = stat.code()
            if stat.column is not None:
                extra = {"column": stat.column}
        else:
            parts = [
                f"{s.name!r}: {s.code() if s.column is None else f'({s.column!r}, {s.code()})'}"
                for s in self.stats
            ]
            statistic = "{" + ", ".join(parts) + "}"
        call = f"({data}, {statistic}, {_kw({**extra, **kw})})"
        if self.entry == "accountant":
            return f"{_ACCOUNTANT_CODE['epsilon']}.release{call}"
        if self.entry == "accountant-rho":
            return f"{_ACCOUNTANT_CODE['rho']}.release{call}"
        return f"ds.release{call}"


_ACCOUNTANT_CODE = {
    "epsilon": "ds.Accountant(epsilon=50.0, delta=0.5)",
    "rho": "ds.Accountant(rho=50.0, delta=1e-6, approx_delta=0.5)",
}


def _kw(kw: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in kw.items())


class WhereGrammar:
    """Random row-level predicates over id (int), grp (int), v (int), x (float), s (text),
    from every node and function WHERE allows, with adversarial members (division by
    zero, integer overflow, casts that fail, the target person's id)."""

    OPS = ("=", "<>", "<", "<=", ">", ">=")
    INT_LITERALS = ("0", "1", "-3", "7", "99", "9223372036854775807", "-9223372036854775808",
                    "4611686018427387904")  # fmt: skip
    FLOAT_LITERALS = ("2.5", "-0.0", "1e300", "0.1", "-1e308")
    TEXT_LITERALS = ("'a'", "'b'", "''", "'Z'", "'O''Brien'", "'n/a'", "'123'", "'2020-01-01'")

    def __init__(self, rs: np.random.Generator, new_id: int) -> None:
        self.rs = rs
        self.new_id = new_id

    def pick(self, options: Sequence[Any]) -> Any:
        return options[int(self.rs.integers(len(options)))]

    def risky(self) -> str:
        """An expression that raises in a plain engine on some value (or on the target)."""
        return self.pick(
            [
                "v % 0 = 1",
                "v // 0 = 1",
                "v * 9223372036854775807 > 0",
                "v + 9223372036854775807 > 0",
                "-v > 0",
                "ABS(v) > 0",
                "CAST(s AS INTEGER) > 0",
                "CAST(x AS INTEGER) > 0",
                "CAST(x AS DECIMAL(2,0)) > 0",
                "CAST(v AS DECIMAL(2,0)) > 0",
                "CAST(v AS INTEGER) > 0",
                "x / 0 > 1",
                "LENGTH(s) % 0 = 0",
                "ROUND(x, 400) > 0",
                "YEAR(CAST(s AS DATE)) > 2000",
                "EXTRACT(month FROM CAST(s AS DATE)) = 1",
                "MONTH(CAST(s AS DATE)) + DAY(CAST(s AS DATE)) > 2",
                "CAST(CAST(x AS BIGINT) AS SMALLINT) > 0",
                "CAST(s AS DOUBLE) > 0",
                "grp // 0 = 1",
                "(v * v * v * v) > 0",
                "FLOOR(x) // 0 = 0",
            ]
        )

    def boolean(self, depth: int = 2) -> str:
        r = self.rs.random()
        if depth <= 0 or r < 0.25:
            return self.atom()
        choice = self.pick(["and", "or", "not", "case", "target", "atom", "if"])
        if choice == "and":
            return f"({self.boolean(depth - 1)} AND {self.boolean(depth - 1)})"
        if choice == "or":
            return f"({self.boolean(depth - 1)} OR {self.boolean(depth - 1)})"
        if choice == "not":
            return f"NOT ({self.boolean(depth - 1)})"
        if choice == "case":
            return (
                f"CASE WHEN {self.boolean(depth - 1)} THEN {self.boolean(depth - 1)} "
                f"ELSE {self.boolean(depth - 1)} END"
            )
        if choice == "if":
            return f"IF({self.boolean(depth - 1)}, {self.boolean(depth - 1)}, TRUE)"
        if choice == "target":
            return f"CASE WHEN id = {self.new_id} THEN {self.risky()} ELSE TRUE END"
        return self.atom()

    def atom(self) -> str:
        choice = self.pick(
            ["cmp", "cmp", "text", "in", "between", "like", "null", "literal", "risky"]
        )
        if choice == "cmp":
            return f"{self.number(2)} {self.pick(self.OPS)} {self.number(1)}"
        if choice == "text":
            return f"{self.text(1)} {self.pick(self.OPS)} {self.pick(self.TEXT_LITERALS)}"
        if choice == "in":
            if self.rs.random() < 0.5:
                return f"{self.number(1)} {self.pick(['IN', 'NOT IN'])} (1, 2, 99)"
            return f"{self.text(1)} IN ('a', 'Z', '')"
        if choice == "between":
            return f"{self.number(1)} BETWEEN {self.literal()} AND {self.literal()}"
        if choice == "like":
            op = self.pick(["LIKE", "ILIKE", "NOT LIKE"])
            pattern = self.pick(["'a%'", "'%b'", "'_'", "'%'"])
            return f"{self.text(1)} {op} {pattern}"
        if choice == "null":
            what = self.pick([self.number(1), self.text(0), "x", "v", "grp"])
            return f"{what} IS {self.pick(['NULL', 'NOT NULL'])}"
        if choice == "literal":
            return self.pick(["TRUE", "FALSE", "NULL = 1", "v IS NOT DISTINCT FROM 5"])
        return self.risky()

    def literal(self) -> str:
        return self.pick(self.INT_LITERALS + self.FLOAT_LITERALS)

    def number(self, depth: int) -> str:
        if depth <= 0 or self.rs.random() < 0.35:
            return self.pick(["v", "x", "id", "grp", "v", "x", self.literal()])
        choice = self.pick(["arith", "arith", "fn", "cast", "case", "coalesce", "length"])
        if choice == "arith":
            op = self.pick(["+", "-", "*", "/", "%", "//"])
            return f"({self.number(depth - 1)} {op} {self.number(depth - 1)})"
        if choice == "fn":
            fn = self.pick(["ABS", "ROUND", "FLOOR", "CEIL"])
            if fn == "ROUND" and self.rs.random() < 0.5:
                return f"ROUND({self.number(depth - 1)}, {self.pick(['1', '-1', '2'])})"
            return f"{fn}({self.number(depth - 1)})"
        if choice == "cast":
            source = self.pick([self.number(depth - 1), "s", "x", "v"])
            target = self.pick(["INTEGER", "DOUBLE", "BIGINT", "DECIMAL(4,1)", "SMALLINT"])
            return f"CAST({source} AS {target})"
        if choice == "case":
            return (
                f"CASE WHEN {self.boolean(0)} THEN {self.number(depth - 1)} "
                f"ELSE {self.number(depth - 1)} END"
            )
        if choice == "coalesce":
            return f"COALESCE({self.pick(['v', 'x', 'grp'])}, {self.literal()})"
        return f"LENGTH({self.text(depth - 1)})"

    def text(self, depth: int) -> str:
        if depth <= 0 or self.rs.random() < 0.4:
            return self.pick(["s", "s", self.pick(self.TEXT_LITERALS)])
        choice = self.pick(["LOWER", "UPPER", "COALESCE", "CAST"])
        if choice == "COALESCE":
            return f"COALESCE(s, {self.pick(self.TEXT_LITERALS)})"
        if choice == "CAST":
            return f"CAST({self.pick(['v', 'x', 'grp'])} AS VARCHAR)"
        return f"{choice}({self.text(depth - 1)})"


def draw_stat(rs: np.random.Generator, name: str, kinds: Sequence[str] = KINDS) -> Stat:
    kind = str(rs.choice(list(kinds)))
    if kind == "count":
        column = None if rs.random() < 0.6 else str(rs.choice(["v", "x"]))
        return Stat(name, kind, column, None)
    column = str(rs.choice(["v", "x"]))
    ps: tuple[float, ...] = ()
    if kind == "quantile":
        ps = (float(rs.choice([0.1, 0.25, 0.75, 0.9])),)
    elif kind == "quantiles":
        ps = (0.1, 0.5, 0.9) if rs.random() < 0.5 else (0.25, 0.75)
    return Stat(name, kind, column, None, ps)


def draw_request(rs: np.random.Generator, entry: str, tables: Tables, index: int) -> Request:
    """A random request for ``entry``; ``tables`` gives only the public target id (and,
    for the nulls rule of :func:`with_precondition`, the person's values)."""
    grammar = WhereGrammar(rs, tables.new_id)
    where = None
    if entry not in ("private_bounds", "cli-release", "cli-bounds") and rs.random() < 0.55:
        where = grammar.boolean(int(rs.integers(0, 3)))
    column_bounds = tuple((c, BOUNDS[c][int(rs.integers(len(BOUNDS[c])))]) for c in ("v", "x"))
    private_bounds = rs.random() < 0.2
    if entry in ("private_bounds", "cli-bounds"):
        stats: tuple[Stat, ...] = (Stat("", "bounds", str(rs.choice(["v", "x"])), None),)
        private_bounds = False
    elif entry in ("release", "cli-release") or (
        entry.startswith("accountant") and rs.random() < 0.5
    ):
        stats = (draw_stat(rs, ""),)
    else:
        n = int(rs.choice([1, 2, 3]))
        stats = tuple(draw_stat(rs, f"s{i}") for i in range(n))
    bounded = dict(column_bounds)
    stats = tuple(
        s
        if s.kind in ("count", "bounds") or private_bounds or s.column is None
        else replace(s, bounds=bounded[s.column])
        for s in stats
    )
    by: tuple[str, ...] = ()
    keys = None
    delta = float(rs.choice([0.0, 0.0, 1e-3]))
    if entry in ("private_bounds", "cli-bounds") and rs.random() < 0.9:
        delta = 0.0  # private bounds spend no delta (a delta is refused from the text)
    if entry not in ("private_bounds", "cli-bounds") and rs.random() < 0.5:
        by = [("grp",), ("s",), ("grp", "s")][int(rs.choice(3, p=[0.55, 0.25, 0.2]))]
        if rs.random() < 0.7:
            options = KEYS[by]
            keys = tuple(options[int(rs.integers(len(options)))])
        else:
            delta = 1e-3  # private partition selection needs a delta
    unit = None
    m = g = 1
    if rs.random() < 0.5:
        unit = "id"
        m = int(rs.integers(1, 4))
        g = int(rs.integers(1, 3)) if entry not in ("private_bounds", "cli-bounds") else 1
    schema: tuple[tuple[str, str], ...] = ()
    if where is not None and tables.container == "csv" and rs.random() < 0.6:
        schema = tuple(sorted(FULL_SCHEMA.items()))
    elif rs.random() < 0.35:
        schema = tuple(sorted(SCHEMAS[int(rs.integers(len(SCHEMAS)))].items()))
    if all(s.kind == "count" for s in stats):
        private_bounds = False
    request = Request(
        entry=entry,
        stats=stats,
        epsilon=float(rs.choice([0.5, 1.0, 2.0])),
        delta=delta,
        where=where,
        schema=schema,
        by=by,
        keys=keys,
        privacy_unit=unit,
        max_rows_per_unit=m,
        max_groups_per_unit=g,
        nulls="drop" if rs.random() < 0.3 else "error",
        private_bounds=private_bounds,
        seed=1000 + index,
        json=bool(rs.random() < 0.7),
        ledger=bool(rs.random() < 0.4),
        column_bounds=column_bounds,
    )
    return with_precondition(request, tables)


def precondition_text(request: Request, tables: Tables) -> bool:
    """True when, in a CSV, the person holds text that is not a number in a value column
    whose type is not declared: "Text in a numeric column is an InputError"
    (docs/tables.md), the data owner's precondition even with ``nulls="drop"`` on the
    one-column path. Such a pair is not compared."""
    if tables.container != "csv":
        return False
    declared = {c for c, _ in request.schema}
    return any(
        not is_missing(value) and not is_number_text(value)
        for column in request.value_columns() - declared
        for value in tables.person_values(column)
    )


def with_precondition(request: Request, tables: Tables) -> Request:
    """``nulls="drop"`` when the person holds a raw null (None, NaN, an empty CSV field)
    in a column the release uses, or, in a CSV, text that is not a number in a value
    column without a declared type: the data owner's precondition (see the test module's
    docstring), which ``nulls="drop"`` meets."""
    if request.nulls == "drop":
        return request
    declared = {c for c, _ in request.schema}
    for column in request.used_columns():
        for value in tables.person_values(column):
            if is_missing(value):
                return replace(request, nulls="drop")
            if (
                tables.container == "csv"
                and column in request.value_columns()
                and column not in declared
                and not is_number_text(value)
            ):
                return replace(request, nulls="drop")
    return request


# ---------------------------------------------------------------------------------------
# outcomes
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """What an observer sees of one run, but for the released numbers."""

    kind: str  # "release" or "error"
    error: tuple[str, str] | None = None  # (class, message)
    charge: Any = None
    columns: Any = None
    groups: Any = None  # with public keys
    receipt: Any = None  # type, method, noise, parameter names...
    warnings: tuple[str, ...] = ()
    refused: bool = False  # a propose-test-release refusal: the private answer

    def differences(self, other: Outcome, public_keys: bool, receipts: bool = True) -> list[str]:
        """What an observer can tell apart. ``receipts=False`` leaves out the receipt
        (method, parameter names, the CLI's masked text), which may legitimately follow
        released values such as bounds found privately (post-processing)."""
        out = [
            f"charged before an error on {which}: {o.charge!r}"
            for which, o in (("D", self), ("D'", other))
            if o.kind == "error" and o.charge is not None and not _nothing_spent(o.charge)
        ]
        for name in ("kind", "error", "charge", "columns", "receipt", "warnings"):
            if name == "receipt" and (not receipts or self.refused or other.refused):
                continue
            a, b = getattr(self, name), getattr(other, name)
            if a != b:
                out.append(f"{name}: {a!r} != {b!r}")
        if public_keys and self.groups != other.groups:
            out.append(f"groups: {self.groups!r} != {other.groups!r}")
        return out

    def short(self) -> str:
        if self.kind == "error":
            return f"{self.error[0]}: {self.error[1]}  [charge {self.charge!r}]"
        return (
            f"release {self.receipt!r}; charge {self.charge!r}; columns {self.columns!r}; "
            f"groups {self.groups!r}" + (f"; warnings {self.warnings!r}" if self.warnings else "")
        )


def _nothing_spent(charge: Any) -> bool:
    """An Accountant's (epsilon, delta) or a ledger's (epsilon, delta, charges) is zero."""
    return all(c == 0 for c in charge)


def _group_label(key: Any) -> str:
    return repr(key)


def describe(result: Any) -> tuple[Any, Any, Any]:
    """(columns, groups, receipt) of a Release, GroupedRelease or QueryResult."""
    if isinstance(result, ds.QueryResult):
        columns = tuple(result.columns())
        groups = tuple(
            sorted(_group_label(tuple(row[c] for c in result.by)) for row in result.to_dicts())
        ) if result.by else None  # fmt: skip
        receipt = (
            "QueryResult",
            result.by,
            tuple(sorted(result.parameters)),
            tuple((name, describe(result[name])[2]) for name in result),
        )
        return columns, groups, receipt
    if isinstance(result, ds.GroupedRelease):
        columns = tuple(result.to_pandas().columns)
        groups = tuple(sorted(_group_label(k) for k, _ in result))
        # the groups' methods: only under public keys (privately selected groups may be none)
        methods = (
            tuple(sorted({(r.method, r.noise, *_interval_says(r)) for _, r in result}))
            if result.selection == "public keys"
            else None
        )
        receipt = ("GroupedRelease", result.by, result.selection, methods)
        return columns, groups, receipt
    assert isinstance(result, ds.Release)
    shape = np.shape(result.value) if result.value is not None else None
    receipt = (
        "Release",
        result.method,
        result.noise,
        result.statistic,
        shape,
        tuple(sorted(result.parameters)),
        _interval_says(result),
    )
    return None, None, receipt


def _interval_says(result: ds.Release) -> tuple[Any, ...]:
    """What a release's interval says: what it covers, its kind and its shown keys."""
    shown = result.parameters.get("interval")
    keys = tuple(sorted(shown)) if isinstance(shown, dict | MappingProxyType) else ()
    kind = shown.get("kind") if keys else None
    # what it covers names the bounds, released ones under bounds="private": masked
    return (mask(str(result.covers)), str(kind), keys)


@contextlib.contextmanager
def _recorded() -> Iterator[list[warnings.WarningMessage]]:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        yield seen


def _warning_texts(seen: list[warnings.WarningMessage]) -> tuple[str, ...]:
    """The warnings an observer compares: all but the seed's, and but the one about bounds
    found far out (it reads the released bounds: post-processing, like the receipt)."""
    return tuple(
        f"{w.category.__name__}: {w.message}"
        for w in seen
        if not issubclass(w.category, ds.SeededRandomnessWarning | ds.FarBoundsWarning)
    )


def observe(call: Callable[[], Any], accountant: Any = None) -> Outcome:
    """The outcome of ``call()`` (a release, or the error), charged to ``accountant`` if
    given (its ``.spent`` is then the charge), with the warnings it gave."""
    with _recorded() as seen:
        try:
            result = call()
        except Exception as exc:
            return Outcome(
                "error",
                error=(type(exc).__name__, str(exc)),
                charge=None if accountant is None else accountant.spent,
                warnings=_warning_texts(seen),
            )
    if isinstance(result, ds.Release) and isinstance(result.value, tuple):  # private bounds
        columns, groups, receipt = None, None, ("Release", result.method, len(result.value))
    else:
        columns, groups, receipt = describe(result)
    charge = (result.epsilon, result.delta) if accountant is None else accountant.spent
    return Outcome(
        "release",
        charge=charge,
        columns=columns,
        groups=groups,
        receipt=receipt,
        warnings=_warning_texts(seen),
        refused=bool(getattr(result, "refused", False)),
    )


def run_python(request: Request, data: Any) -> Outcome:
    """The request through its Python entry point on ``data``."""
    accountant = None
    if request.entry in ("accountant", "sql-accountant", "sql-accountant-method"):
        accountant = ds.Accountant(epsilon=50.0, delta=0.5)
    elif request.entry == "accountant-rho":
        accountant = ds.Accountant(rho=50.0, delta=1e-6, approx_delta=0.5)
    return observe(lambda: _call(request, data, accountant), accountant)


def _call(request: Request, data: Any, accountant: Any) -> Any:
    kw = request.common()
    if request.entry == "release-per-unit":
        kw = {k: v for k, v in kw.items() if k not in ("where", "privacy_unit")}
        statistic, extra = request.statistic_argument()
        return ds.release(request.per_unit_handle(data), statistic, **extra, **kw)
    if request.entry == "release-join":
        joined = ds.join(
            data, on=[(TABLE, "people", "id"), (TABLE, "lk", "grp", "g2")], public_tables=["lk"]
        )
        statistic, extra = request.statistic_argument()
        return ds.release(joined, statistic, **extra, **kw)
    if request.entry in JOIN_ENTRIES:
        kw = {k: v for k, v in kw.items() if k in ("epsilon", "delta", "max_rows_per_unit",
              "max_groups_per_unit", "nulls", "schema", "rng", "interval")}  # fmt: skip
        if request.sql_bounds() is not None:
            kw["bounds"] = request.sql_bounds()
        if request.sql_keys() is not None and request.entry == "sql-join":
            kw["keys"] = request.sql_keys()
        return ds.sql(
            request.sql_text(TABLE),
            tables=data,
            privacy_unit="id",
            public_tables=["lk"],
            **kw,
        )
    if request.entry in SQL_ENTRIES:
        kw = {
            k: v
            for k, v in kw.items()
            if k
            in (
                "epsilon",
                "delta",
                "privacy_unit",
                "max_rows_per_unit",
                "max_groups_per_unit",
                "nulls",
                "schema",
                "rng",
                "interval",
            )
        }
        if request.sql_bounds() is not None:
            kw["bounds"] = request.sql_bounds()
        if request.sql_keys() is not None:
            kw["keys"] = request.sql_keys()
        if request.entry == "sql-accountant-method":  # Accountant.sql
            return accountant.sql(request.sql_text(TABLE), tables={TABLE: data}, **kw)
        if accountant is not None:
            kw["accountant"] = accountant
        return ds.sql(request.sql_text(TABLE), tables={TABLE: data}, **kw)
    if request.entry == "private_bounds":
        kw = {k: v for k, v in kw.items() if k not in ("by", "keys", "max_groups_per_unit")}
        kw.pop("where", None)
        return ds.private_bounds(data, column=request.stats[0].column, **kw)
    statistic, extra = request.statistic_argument()
    if accountant is not None:
        return accountant.release(data, statistic, **extra, **kw)
    return ds.release(data, statistic, **extra, **kw)


# -- the command line ----------------------------------------------------------------------


def cli_argv(request: Request, data: Path, ledger: Path, keys_file: Path) -> list[str]:
    """The argv of ``dpsense`` for a CLI request (a file path as DATA)."""
    argv: list[str]
    stat = request.stats[0]
    if request.entry == "cli-bounds":
        argv = ["bounds", str(data), "--column", str(stat.column)]
    elif request.entry == "cli-release":
        argv = ["release", str(data), "--statistic", stat.kind, "--column", stat.column or "id"]
        if stat.ps:
            argv += ["--p", ",".join(str(p) for p in stat.ps)]
        if stat.kind != "count":
            if request.private_bounds:
                argv += ["--bounds", "private"]
            else:
                assert stat.bounds is not None
                argv += ["--lower", repr(stat.bounds[0]), "--upper", repr(stat.bounds[1])]
        if request.by:
            argv += ["--by", ",".join(request.by)]
    else:
        argv = ["sql", request.sql_text(f"'{data}'")]
        bounds = request.sql_bounds()
        if bounds == "private":
            argv += ["--bounds", "private"]
        elif bounds:
            for col, (lo, hi) in bounds.items():
                argv += ["--bounds", f"{col}={lo!r}:{hi!r}"]
    argv += ["--epsilon", repr(request.epsilon)]
    if request.delta and request.entry != "cli-bounds":
        argv += ["--delta", repr(request.delta)]
    if request.keys is not None:
        if len(request.by) == 1 and request.entry == "cli-release":
            argv += ["--keys", ",".join(str(k) for k in request.keys)]
        elif len(request.by) == 1:
            argv += ["--keys", f"{request.by[0]}=" + ",".join(str(k) for k in request.keys)]
        else:
            argv += ["--keys", str(keys_file)]
    if request.privacy_unit is not None:
        argv += ["--privacy-unit", request.privacy_unit]
        argv += ["--max-rows-per-unit", str(request.max_rows_per_unit)]
        if request.entry != "cli-bounds":
            argv += ["--max-groups-per-unit", str(request.max_groups_per_unit)]
    if request.nulls != "error":
        argv += ["--nulls", request.nulls]
    for col, kind in request.schema:
        argv += ["--schema", f"{col}={kind}"]
    if request.interval != "privacy" and request.entry != "cli-bounds":
        argv += ["--interval", request.interval]
    argv += ["--seed", str(request.seed)]
    if request.json:
        argv.append("--json")
    if request.ledger:
        argv += ["--ledger", str(ledger)]
    return argv


_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|\b(?:inf|nan|None)\b")


def mask(text: str) -> str:
    """Text output without the released numbers (and without the layout they move)."""
    text = _NUMBER.sub("#", text)
    # a released interval's "unreliable" mark is read off the released interval (wider
    # than half the bounds): post-processing of the private output, like its numbers
    text = re.sub(r"\bunreliable\b(?!:)", "", text)
    text = re.sub(r"[━─]+", "-", text)
    return " ".join(text.split())


def _json_shape(payload: Any, public_keys: bool) -> tuple[Any, Any, Any]:
    """(columns, groups, receipt) of a --json payload."""
    if not isinstance(payload, dict):
        return None, None, type(payload).__name__
    charge = (payload.get("epsilon"), payload.get("delta"))
    if "groups" in payload:  # release --by
        rows = payload["groups"]
        by = payload.get("by", [])
    elif "rows" in payload:  # sql
        rows = payload["rows"]
        by = payload.get("by", [])
    else:
        receipt = tuple(sorted(payload))
        extra = tuple(payload.get(k) for k in ("method", "noise", "statistic", "neighbours"))
        return charge, None, (receipt, extra)
    # under private selection there may be no row to show the columns
    columns = sorted({tuple(sorted(r)) for r in rows}) if public_keys or not by else None
    groups = sorted(repr(tuple(r.get(c) for c in by)) for r in rows) if public_keys else None
    receipt = (tuple(sorted(payload)), tuple(by), tuple(sorted(payload.get("parameters", {}))))
    return (
        charge,
        (
            tuple(columns) if columns is not None else None,
            tuple(groups) if groups is not None else None,
        ),
        receipt,
    )


def _main(argv: list[str]) -> tuple[int, str, str]:
    """``dpsense`` in-process: (exit code, stdout, stderr)."""
    from dpsense.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


_FAR_BOUNDS = "warning: The bounds found by"


def run_cli(request: Request, data: Path, folder: Path) -> Outcome:
    """The request through ``dpsense`` in-process; the ledger (``--ledger``) is fresh."""
    ledger = folder / "budget.db"
    keys_file = folder / "keys.csv"
    if ledger.exists():
        ledger.unlink()
    if request.keys is not None and len(request.by) > 1:
        with keys_file.open("w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(request.by)
            writer.writerows(request.keys)
    if request.ledger:
        made = _main(["budget", "init", str(ledger), "--epsilon", "50", "--delta", "0.5"])
        assert made[0] == 0, made
    with _recorded() as seen:
        code, out, err = _main(cli_argv(request, data, ledger, keys_file))
    # the warning about bounds found far out reads the released bounds (post-processing)
    err = "".join(line for line in err.splitlines(True) if not line.startswith(_FAR_BOUNDS))
    spent = None
    if request.ledger:
        shown = _main(["budget", "show", str(ledger), "--json"])
        assert shown[0] == 0, shown
        payload = json.loads(shown[1])
        spent = (payload["spent_epsilon"], payload["spent_delta"], len(payload["charges"]))
    if code != 0:
        return Outcome(
            "error", error=(f"exit {code}", err), charge=spent, warnings=_warning_texts(seen)
        )
    public = request.keys is not None
    if request.json:
        try:
            payload = json.loads(out)
        except ValueError:
            return Outcome("release", receipt=("stdout", mask(out)), charge=spent)
        charge, columns_groups, receipt = _json_shape(payload, public)
        columns, groups = columns_groups if columns_groups else (None, None)
    else:  # the text table, numbers masked (its rows are private under private selection)
        private_rows = bool(request.by) and request.keys is None
        charge, columns, groups = None, None, None
        receipt = ("text", None if private_rows else mask(out))
    return Outcome(
        "release",
        error=("exit 0", err) if err else None,
        charge=(charge, spent),
        columns=columns,
        groups=groups,
        receipt=receipt,
        warnings=_warning_texts(seen),
    )


# ---------------------------------------------------------------------------------------
# the harness
# ---------------------------------------------------------------------------------------


# D (``which="D"``) or D' of the tables as the entry point reads it
Source = Callable[[Tables, str, Path], Any]

SQL_ENTRIES = ("sql", "sql-accountant", "sql-accountant-method", "sql-per-unit")
"""ds.sql on the one table; with accountant=; and Accountant.sql."""
JOIN_ENTRIES = ("sql-join", "sql-join-public")
# ds.release of ds.join(the table, people, lookup): the same joins without SQL
FORM_ENTRIES = ("release-join",)
"""ds.sql of the table joined with a people table (the person's row is in it) and a
public lookup table whose keys repeat (each row fans out): grouped by the table's own
columns, or (``sql-join-public``) by the lookup's label, whose groups are public."""
LOOKUP = pd.DataFrame({"g2": [1, 2, 2, 3, 5], "label": ["one", "two", "deux", "three", "five"]})


def joined_tables(tables: Tables, which: str, folder: Path) -> dict[str, Any]:
    """D or D' as three tables: the rows (in the tables' container), the people (one row
    per id, the person's included in D'), the public lookup."""
    rows = tables.base if which == "D" else tables.neighbour
    ids = sorted({r[0] for r in rows if r[0] is not None})
    people = pd.DataFrame({"id": pd.Series(ids, dtype="int64"), "since": [2000 + i for i in ids]})
    return {TABLE: materialise(tables, which, folder), "people": people, "lk": LOOKUP}


@dataclass
class Case:
    index: int
    tables: Tables
    request: Request
    source: Source = materialise  # another container plugs in here (tests/spark)

    def run(self, folder: Path) -> tuple[Outcome, Outcome]:
        outcomes = []
        for which in ("D", "D'"):
            data = self.source(self.tables, which, folder)
            if self.request.entry.startswith("cli-"):
                outcomes.append(run_cli(self.request, data, folder))
            else:
                outcomes.append(run_python(self.request, data))
        return outcomes[0], outcomes[1]

    def differences(self, folder: Path) -> tuple[list[str], Outcome, Outcome]:
        a, b = self.run(folder)
        if precondition_text(self.request, self.tables):
            return [], a, b
        public_keys = self.request.keys is not None
        return a.differences(b, public_keys, not self.request.private_bounds), a, b

    def report(self, a: Outcome, b: Outcome, diffs: list[str], tried: int) -> str:
        t = self.tables
        data = {"pandas": "df", "parquet": "'people.parquet'", "csv": "'people.csv'",
                "duckdb": "duckdb.from_df(df)", "spark": "spark_df"}[t.container]  # fmt: skip
        lines = [
            f"case #{self.index} (found after {self.index + 1} random requests) on "
            f"{t.container}, shrunk in {tried} evaluations:",
            f"  columns {COLUMNS}",
            f"  D  rows: {list(t.base)!r}",
            f"  person : {list(t.person)!r}",
            f"  request: {self.request.code(data)}",
            f"  on D : {a.short()}",
            f"  on D': {b.short()}",
            "  differs in: " + " | ".join(diffs),
        ]
        return "\n".join(lines)


def _where_parts(where: str) -> list[str]:
    """The boolean sub-expressions of a WHERE text (candidates for a smaller one)."""
    import sqlglot
    from sqlglot import expressions as exp

    try:
        tree = sqlglot.parse_one(where, read="duckdb")
    except Exception:
        return []
    kinds = (exp.Predicate, exp.Connector, exp.Not, exp.Case, exp.If)
    parts = []
    for node in tree.walk():
        if node is not tree and isinstance(node, kinds):
            text = node.sql(dialect="duckdb")
            if text not in parts and text != where:
                parts.append(text)
    return parts


def _category(difference: str) -> str:
    return difference.split(":")[0].split(" on ")[0]


def shrink(case: Case, folder: Path, first: str) -> tuple[Case, int]:
    """Greedy: keep any simpler case whose neighbours still differ in the same way (the
    category of the first difference, ``first``)."""
    tried = 0

    def still_fails(candidate: Case) -> bool:
        nonlocal tried
        tried += 1
        try:
            diffs, _, _ = candidate.differences(folder)
        except Exception:
            return False
        return first in {_category(d) for d in diffs}

    def candidates(c: Case) -> Iterator[Case]:
        r, t = c.request, c.tables
        fix = lambda req, tab=t: with_precondition(req, tab)  # noqa: E731
        if r.where is not None:
            yield replace(c, request=fix(replace(r, where=None)))
            for part in _where_parts(r.where):
                yield replace(c, request=fix(replace(r, where=part)))
        if r.private_bounds:
            bounds = dict(r.column_bounds)
            stats = tuple(
                s if s.column is None or s.kind in ("count", "bounds")
                else replace(s, bounds=bounds[s.column])
                for s in r.stats
            )  # fmt: skip
            yield replace(c, request=replace(r, private_bounds=False, stats=stats))
        if r.schema:
            yield replace(c, request=fix(replace(r, schema=())))
        if r.by:
            yield replace(c, request=fix(replace(r, by=(), keys=None)))
        if r.privacy_unit is not None:
            plain_unit = replace(r, privacy_unit=None, max_rows_per_unit=1, max_groups_per_unit=1)
            yield replace(c, request=fix(plain_unit))
        if len(r.stats) > 1:
            for i in range(len(r.stats)):
                yield replace(c, request=fix(replace(r, stats=(r.stats[i],))))
        if r.ledger:
            yield replace(c, request=replace(r, ledger=False))
        if not r.json:
            yield replace(c, request=replace(r, json=True))
        if r.nulls == "drop":
            yield replace(c, request=fix(replace(r, nulls="error")))
        if r.delta and (r.keys is not None or not r.by):
            yield replace(c, request=replace(r, delta=0.0))
        if len(t.base) > 1:
            half = len(t.base) // 2
            yield replace(c, tables=replace(t, base=t.base[:half]))
            yield replace(c, tables=replace(t, base=t.base[half:]))
        for i in range(len(t.base)):
            yield replace(c, tables=replace(t, base=t.base[:i] + t.base[i + 1 :]))
        if len(t.person) > 1:
            for i in range(len(t.person)):
                yield replace(c, tables=replace(t, person=(t.person[i],)))
        for i, row in enumerate(t.person):
            for j, column in enumerate(COLUMNS[1:], start=1):
                plain = {"grp": 1, "v": 5, "x": 5.0, "s": "a"}[column]
                if row[j] != plain:
                    new_row = (*row[:j], plain, *row[j + 1 :])
                    person = (*t.person[:i], new_row, *t.person[i + 1 :])
                    yield replace(c, tables=replace(t, person=person))

    current = case
    progress = True
    while progress and tried < MAX_SHRINK:
        progress = False
        for candidate in candidates(current):
            if tried >= MAX_SHRINK:
                break
            if still_fails(candidate):
                current = candidate
                progress = True
                break
    return current, tried


@dataclass
class Findings:
    reports: list[str] = field(default_factory=list)
    cases: int = 0


def check_cases(
    entry: str,
    containers: Sequence[str],
    count: int,
    seed: int,
    folder: Path,
    make: Callable[[np.random.Generator, str, Tables, int], Request] = draw_request,
    source: Source = materialise,
) -> None:
    """Draw ``count`` cases for ``entry`` (the container rotates), run each on D and D',
    and fail on the first that differs (all of them with DPSENSE_NEIGHBOURS_ALL=1)."""
    every = os.environ.get("DPSENSE_NEIGHBOURS_ALL") == "1"
    findings = Findings()
    for index in range(count):
        rs = np.random.default_rng([seed, index])
        container = containers[index % len(containers)]
        tables = draw_tables(rs, container)
        request = make(rs, entry, tables, index)
        case = Case(index, tables, request, source)
        if precondition_text(request, tables):
            continue
        findings.cases += 1
        diffs, _, _ = case.differences(folder)
        if not diffs:
            continue
        small, tried = shrink(case, folder, _category(diffs[0]))
        diffs, a, b = small.differences(folder)
        if not diffs:  # flaky shrink: report the original
            small = case
            diffs, a, b = case.differences(folder)
        findings.reports.append(small.report(a, b, diffs, tried))
        if not every:
            break
    if findings.reports:
        raise AssertionError(
            f"{entry}: {len(findings.reports)} of {findings.cases} random requests give "
            "outcomes that depend on one person (first at the request index shown):\n"
            + "\n".join(findings.reports)
        )
