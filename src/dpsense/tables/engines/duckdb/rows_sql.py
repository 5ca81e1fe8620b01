"""The DuckDB engine's SQL of the rows it bounds: the value checks (non-numeric entries,
missing values), the staged rows to bound, and the contribution bounding itself
(docs/tables.md §2; the keys it hashes with are :mod:`dpsense.tables.rows.unit_bounding`'s).

This is engine SQL, composed as DuckDB text for the engine's own statements.

:func:`bound_units` writes the kept values as ``dpsense_pairs``: one row per kept (unit,
group) pair. The groups are chosen first (one arg-min per unit for one group per unit, a
top-g over the distinct (unit, group) pairs otherwise) and a semi-join keeps their rows
for the top-m aggregate, which then runs on the kept rows only. A count ranks no rows: all
of a pair's rows have the same value, and the pair keeps ``min(c, m)`` of its ``c`` rows.

One aggregation over the units instead (each unit's m rows of smallest ``hg * 2^63 + hr``
by one ``min_by``: the chosen group's rows come first) was tried and is far slower:
DuckDB's top-m aggregate over all 2e7 rows of the hard table in 1e6 groups cost tens of
seconds, against a few for the arg-min and the semi-join.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from dpsense.data.source import TableSource, quote
from dpsense.tables.rows.checks import FLOAT_TYPES, exact_numeric, raise_on_flags
from dpsense.tables.rows.plan import TablePlan
from dpsense.tables.rows.unit_bounding import SCALAR_ROWS, canonical, keyed_hash

__all__ = ["bound_units", "check_exprs", "check_table", "is_nan", "stage_sql"]

_STAGE: Final = "dpsense_stage"


def is_nan(expr: str) -> str:
    """SQL that is true where the double ``expr`` is NaN.

    ``isnan`` alone is not enough: DuckDB folds it to false on a Parquet column whose
    statistics are finite, and writers leave NaN out of the statistics (a Parquet file
    written by Polars or pyarrow with NaN in it would pass the check). ``isfinite`` is
    evaluated, and NaN is the one double that is neither finite nor infinite."""
    return f"(isnan({expr}) OR NOT (isfinite({expr}) OR isinf({expr})))"


def check_exprs(plan: TablePlan, types: dict[str, str]) -> tuple[list[str], str | None]:
    """The row tests of the checks, in the order :func:`raise_on_flags` reads their
    ``bool_or``: a non-numeric entry in the value column (when there is one), then a
    missing value in a used column (that test last; None when nothing can be missing).
    The column's type drops the tests that cannot hold: a number column has no
    non-numeric entries, an integer or decimal one no NaN."""
    checks: list[str] = []
    null_tests: list[str] = []
    if plan.column is not None:
        v = quote(plan.column)
        sql_type = types.get(plan.column, "")
        num = v if sql_type == "DOUBLE" else f"TRY_CAST({v} AS DOUBLE)"
        # infinities are values: clipped to the bounds below, never an error
        numeric = sql_type in FLOAT_TYPES or exact_numeric(sql_type)
        checks.append("FALSE" if numeric else f"({v} IS NOT NULL AND {num} IS NULL)")
        nan = "" if exact_numeric(sql_type) else f" OR {is_nan(num)}"
        null_tests.append(f"({v} IS NULL{nan})")
    for name in (*plan.by, *([plan.unit] if plan.unit else [])):
        # NaN in a float key is missing too, as pandas' NaN (read as null) is; Polars,
        # Parquet and CSV ("nan") keep it as NaN
        nan = f" OR {is_nan(quote(name))}" if types.get(name) in FLOAT_TYPES else ""
        null_tests.append(f"({quote(name)} IS NULL{nan})")
    return checks, (" OR ".join(null_tests) if null_tests else None)


def check_table(source: TableSource, plan: TablePlan, types: dict[str, str]) -> str:
    """Raise on bad values (a pass over the table); return the WHERE clause that drops
    nulls (or 'TRUE')."""
    checks, any_null = check_exprs(plan, types)
    if not checks and any_null is None:
        return "TRUE"
    tests = [*checks, any_null or "FALSE"]
    row = source.con.execute(
        f"SELECT {', '.join(f'bool_or({t})' for t in tests)} FROM {source.view}"
    ).fetchone()
    flags = [bool(f) for f in row] if row is not None else []
    return f"NOT ({any_null})" if raise_on_flags(plan, flags) else "TRUE"


def stage_sql(
    source: TableSource,
    plan: TablePlan,
    types: dict[str, str],
    row_test: str,
    public: bool,
    flags: Sequence[str] = (),
) -> str:
    """SQL of the rows to bound: ``v`` (clipped), ``g0, g1, ...`` and ``u``, with ``gid``
    for public keys (matched by a join) or no grouping; ``flags`` are extra columns
    (``f0, f1, ...``). With flags, rows outside the public keys are kept (a left join,
    ``gid`` NULL) so that the flags see every row."""
    cols = []
    if plan.column is not None:
        num = f"TRY_CAST({quote(plan.column)} AS DOUBLE)"
        if plan.lower is not None and plan.upper is not None:
            num = f"greatest(least({num}, {plan.upper!r}::DOUBLE), {plan.lower!r}::DOUBLE)"
        cols.append(f"{num} AS v")
    cols += [f"{quote(b)} AS g{i}" for i, b in enumerate(plan.by)]
    if plan.unit is not None:
        cols.append(f"{canonical(quote(plan.unit), types[plan.unit])} AS u")
    cols += [f"{f} AS f{i}" for i, f in enumerate(flags)]
    if not cols:
        cols.append("1 AS one")
    stage = f"SELECT {', '.join(cols)} FROM {source.view} WHERE {row_test}"
    if public:
        gs = ", ".join(f"g{i}" for i in range(len(plan.by)))
        join = "LEFT JOIN" if flags else "JOIN"
        return f"SELECT s.*, kt.gid FROM ({stage}) s {join} dpsense_keys kt USING ({gs})"
    if not plan.by:
        return f"SELECT *, 0::BIGINT AS gid FROM ({stage})"
    return stage


def bound_units(
    con: Any,
    plan: TablePlan,
    stage: str,
    group_cols: list[str],
    canon: str | None,
    value: str,
    *,
    text_unit: bool = False,
) -> str:
    """Create ``dpsense_pairs``, one row per kept (unit, group) pair: the group columns,
    then the kept values as ``v1..vm`` (a list ``vs`` when m > ``SCALAR_ROWS``), or for a
    count (``plan.column`` None) the number of kept rows ``k``; return SQL of the bounded
    histogram (group columns, v, c).

    ``canon`` is the canonical SQL of the group (hashed to choose the groups), or None
    when every unit keeps every group (no by, or at least as many groups as keys)."""
    salt_r = plan.salt[1]
    keyed = ", ".join(group_cols)
    m = int(plan.max_rows)
    hr = keyed_hash(salt_r, value, text_unit=text_unit)
    rows = (
        f"({stage})"
        if canon is None
        else f"({_chosen_rows(plan, stage, group_cols, canon, text_unit)})"
    )
    if plan.column is None:
        # a count: every row of a pair has the same value (0) and so the same row hash,
        # and the pair keeps min(c, m) of its c rows: counted, not ranked
        con.execute(
            f"CREATE TEMP TABLE dpsense_pairs AS SELECT {keyed}, least(count(*), {m})::BIGINT "
            f"AS k FROM {rows} GROUP BY u, {keyed}"
        )
        return (
            f"SELECT {keyed}, 0::DOUBLE AS v, sum(k)::BIGINT AS c FROM dpsense_pairs GROUP BY ALL"
        )
    # the hash shifted to a signed 63-bit key: same order (ties only where two 64-bit
    # hashes differ in their last bit), and DuckDB's top-m aggregate is about 25% faster
    # on BIGINT keys than on UBIGINT ones
    pairs = f"SELECT u, {keyed}, min_by({value}, {hr}, {m}) AS vs FROM {rows} GROUP BY ALL"
    if m <= SCALAR_ROWS:
        # m scalar columns materialise far faster than a list column
        slots = ", ".join(f"vs[{i}] AS v{i}" for i in range(1, m + 1))
        con.execute(f"CREATE TEMP TABLE dpsense_pairs AS SELECT {keyed}, {slots} FROM ({pairs})")
        kept = " UNION ALL ".join(
            f"SELECT {keyed}, v{i} AS v FROM dpsense_pairs WHERE v{i} IS NOT NULL"
            for i in range(1, m + 1)
        )
    else:
        con.execute(f"CREATE TEMP TABLE dpsense_pairs AS {pairs}")
        kept = f"SELECT {keyed}, unnest(vs) AS v FROM dpsense_pairs"
    return f"SELECT {keyed}, v, count(*)::BIGINT AS c FROM ({kept}) GROUP BY ALL"


def _chosen_rows(
    plan: TablePlan, stage: str, group_cols: list[str], canon: str, text_unit: bool
) -> str:
    """SQL of the rows of each unit's chosen groups (a semi-join), for the top-m rows of
    each kept pair.

    Which groups a unit keeps does not depend on which rows it keeps, so the (unit,
    group) pairs a unit drops never reach a top-m aggregate (most pairs of a table whose
    people spread over the groups); the bounded table is the same."""
    keyed = ", ".join(group_cols)
    G = int(plan.max_groups)
    hg = keyed_hash(plan.salt[0], canon, text_unit=text_unit)
    if G == 1 and len(group_cols) == 1:
        # one group per unit: an arg-min per unit over its rows; ties between two
        # groups' 63-bit hashes are broken arbitrarily, as by the top-G aggregate
        chosen = f"SELECT u, arg_min({keyed}, {hg}) AS {keyed} FROM {_STAGE} GROUP BY u"
    else:
        # each unit's G (unit, group) pairs of smallest hash(key, unit, group), chosen
        # from the distinct pairs
        distinct = f"SELECT DISTINCT u, {keyed}, {hg} AS hg FROM {_STAGE}"
        if len(group_cols) == 1:
            top = f"unnest(min_by({keyed}, hg, {G})) AS {keyed}"
        else:
            struct = ", ".join(f"'{c}': {c}" for c in group_cols)
            top = f"unnest(min_by({{{struct}}}, hg, {G}), recursive := true)"
        chosen = f"SELECT u, {top} FROM ({distinct}) GROUP BY u"
    # the staged rows (a join, say) are one CTE read twice: computed once
    return (
        f"WITH {_STAGE} AS ({stage}) "
        f"SELECT s.* FROM {_STAGE} s SEMI JOIN ({chosen}) c USING (u, {keyed})"
    )
