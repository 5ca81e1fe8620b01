"""The first pass of a DuckDB release with every row a unit, shared by a query's statistics.

Without a privacy unit, and with public keys or no grouping, a release that reads held
records (``grouped.reads_held``) needs one aggregation over the table before anything
else: each group's row count, the value checks, the exact sums the sum and the means read,
and, for the exponential-mechanism quantile, a value-hash sample of each group
(``duck_groups``), or, when the pass is grouped by buckets of the value too (a quantile
interval's counts, ``pass_cells``), those buckets instead (the sample cost half of that
pass; the buckets bracket the windows exactly). This module runs that aggregation

* on the raw values (clipping is monotone: the sums clip inside their own expressions and
  the sample is clipped in numpy), so DuckDB reads the columns as they are stored;
* grouped by the by-columns' own values, then joined to the public keys (a join of one row
  per group instead of one per row of the table);
* once for every statistic a query announces (:func:`announce`): the rows, samples and
  sums of all of them in one pass, and one :class:`~dpsense.tables.engines.duckdb.groups.DuckGroups`
  per column, bounds and need, so that the median and the 90th percentile of one column
  also share their window pass.

Every answer is exact: a release from here equals the release from an array of the same
clipped records, for the same seed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any, Final

import numpy as np

from dpsense.data.source import TableSource, quote
from dpsense.methods.ksw import QUANTA
from dpsense.statistics._exact import RecordGrid
from dpsense.tables.engines.duckdb.groups import (
    SAMPLE_MOD,
    DuckGroups,
    RawRows,
    grid_sum_sql,
    quanta_sum_sql,
    sample_test,
)
from dpsense.tables.engines.duckdb.pass_cells import Buckets, cell_need, read_cells
from dpsense.tables.engines.duckdb.rows_sql import check_exprs, stage_sql
from dpsense.tables.rows.bounded import BoundedTable, TablePlan, summarise
from dpsense.tables.rows.checks import FLOAT_TYPES, exact_numeric, raise_on_flags
from dpsense.tables.rows.windows import split_by_group

__all__ = ["HOLD_DISTINCT", "HOLD_ROWS", "HOLD_SUM_ROWS", "ScanNeed", "announce", "held_table"]

HOLD_ROWS: Final = 1 << 12
"""Groups with more rows than this are held in DuckDB for a quantile's window."""
HOLD_DISTINCT: Final = 1 << 11
"""... and more distinct values than this (estimated from the sample): a group with fewer
(tied data) has a small histogram, which is cheaper to build and move whole (measured on
the benchmarks' tied tables, where the histogram path is faster by a third)."""
HOLD_SUM_ROWS: Final = 0
"""Groups with more rows than this are held for an exact sum (computed in the pass)."""
_FEW_OUTSIDE: Final = 1 << 16
"""Rows outside the public keys that the histogram pass may aggregate for nothing rather
than test every row's key (the test cost a third of the pass on the tied table)."""


@dataclass(frozen=True)
class ScanNeed:
    """What one statistic reads from the first pass (all public)."""

    column: str | None
    lower: float | None
    upper: float | None
    hold: str
    """"window", "grid", "quanta" (``TablePlan.hold``) or "count" (no value column)."""
    level: tuple[int, int] | None = field(default=None, compare=False)
    """A quantile's level as num/den (a hint for the shared window pass: speed only)."""

    @staticmethod
    def of(plan: TablePlan, level: float | None = None) -> ScanNeed:
        frac = Fraction(level).limit_denominator(1_000_000) if level is not None else None
        return ScanNeed(
            plan.column,
            plan.lower,
            plan.upper,
            plan.hold if plan.column is not None else "count",
            (frac.numerator, frac.denominator) if frac is not None and 0 < frac < 1 else None,
        )


@dataclass
class _Pass:
    """One first pass: rows per group, samples per column, sums per key."""

    row_test: str
    rows: np.ndarray
    samples: dict[str | None, dict[int, np.ndarray]]
    """Each group's value-hash sample of a column, raw (not clipped)."""
    sums: dict[tuple[Any, ...], dict[int, int]]
    outside: int = 0
    """Rows whose group is not among the public keys."""
    groups: dict[tuple[Any, ...], DuckGroups] = field(default_factory=dict)
    cells: dict[tuple[Any, ...], tuple[np.ndarray, dict[int, np.ndarray]]] = field(
        default_factory=dict
    )
    """A quantile interval's counts below its points per group, by column and bounds."""
    buckets: dict[str | None, dict[int, Buckets]] = field(default_factory=dict)
    """Each group's buckets of a bucketed column (``pass_cells``), instead of a sample."""


def announce(source: TableSource, needs: list[ScanNeed]) -> None:
    """Tell the engine every statistic of a query before the first runs: the first
    pass then serves them all (keyed by the by-columns, the keys and the null rule)."""
    source.scan_needs = tuple(needs)  # equal needs of other levels: each level is a hint
    source.scans = {}


def _raw(column: str, types: dict[str, str]) -> str:
    v = quote(column)
    return v if types.get(column) == "DOUBLE" else f"TRY_CAST({v} AS DOUBLE)"


def _first_pass(
    source: TableSource,
    plan: TablePlan,
    needs: tuple[ScanNeed, ...],
    keys: list[tuple[Any, ...]] | None,
    types: dict[str, str],
    row_test: str | None,
) -> _Pass:
    """The aggregation of the module docstring for ``needs``. The checks are aggregates of
    it rather than row tests: a value column has a non-numeric entry when fewer of its
    entries read as numbers than are present (``count``), a missing one when fewer read
    as numbers than there are rows, or a NaN when its ``max`` is NaN (NaN sorts above every
    number); a by-column has a missing value when a group's key is null or NaN. With
    ``row_test`` None and missing values under nulls='drop', the pass is taken again
    with those rows dropped (``row_test`` the SQL test of a kept row)."""
    con = source.con
    columns = list(dict.fromkeys(n.column for n in needs if n.column is not None))
    alias = {c: f"x{i}" for i, c in enumerate(columns)}
    gs = [f"g{i}" for i in range(len(plan.by))]
    cols = [f"{_raw(c, types)} AS {alias[c]}" for c in columns]
    texts = [c for c in columns if not _numeric(types.get(c, ""))]
    cols += [f"{quote(c)} AS y{i}" for i, c in enumerate(texts)]
    cols += [f"{quote(b)} AS {g}" for b, g in zip(plan.by, gs, strict=True)]
    inner = f"SELECT {', '.join(cols) or '1 AS one'} FROM {source.view} WHERE {row_test or 'TRUE'}"
    sum_sql = _sum_sqls(needs, alias)
    ngroups = len(keys) if keys is not None else 1
    cell = cell_need(needs, alias, ngroups)
    # a bucketed column needs no sample: its buckets bracket the windows (the sample
    # costs half the bucketed pass)
    bucketed = cell[0].column if cell is not None else None
    sampled = [
        c
        for c in columns
        if c != bucketed and any(n.column == c and n.hold == "window" for n in needs)
    ]
    parts = _aggregates(columns, alias, sampled, [k for _, k in sum_sql], len(texts))
    sql = _pass_sql(con, gs, inner, parts, cell, alias)
    got = _fetch_pass(con, sql, [alias[c] for c in sampled])
    first = 1 + len(gs)  # n
    if row_test is None and _checks(plan, got, columns, texts, first, len(sampled) + len(sum_sql)):
        any_null = " OR ".join(
            f"({t})"
            for c in _or_none(columns)
            if (t := check_exprs(replace(plan, column=c), types)[1])
        )
        return _first_pass(source, plan, needs, keys, types, f"NOT ({any_null})")
    sampled_cols = {c: alias[c] for c in sampled}
    scan = _read_pass(con, got, first, ngroups, sampled_cols, sum_sql, row_test or "TRUE")
    if cell is not None:
        scan.cells, buckets = read_cells(con, cell[0], alias[str(cell[0].column)], gs)
        scan.buckets[str(cell[0].column)] = buckets
    return scan


def _pass_sql(
    con: Any,
    gs: list[str],
    inner: str,
    parts: list[tuple[str, str]],
    cell: tuple[Any, str] | None,
    alias: dict[str, str],
) -> str:
    """The query of the first pass: the aggregates ``parts`` per group of ``gs`` of the
    rows ``inner``, with each group's gid (0 without grouping)."""
    if cell is None:
        aggs = [f"{a}{'::VARCHAR' if name[0] == 't' else ''} AS {name}" for name, a in parts]
    else:  # grouped by bucket too (``pass_cells``), then summed over the buckets
        x = alias[str(cell[0].column)]
        by_bucket = [*gs, "b", *(f"{a} AS {name}" for name, a in parts), f"min({x}) AS lo"]
        con.execute(
            f"CREATE OR REPLACE TEMP TABLE dpsense_cells AS SELECT {', '.join(by_bucket)} "
            f"FROM (SELECT *, {cell[1]} AS b FROM ({inner})) GROUP BY ALL"
        )
        inner = "SELECT * FROM dpsense_cells"
        aggs = [f"{_OVER[name[0]].format(name)} AS {name}" for name, _ in parts]
    if gs:
        agg = f"SELECT {', '.join([*gs, *aggs])} FROM ({inner}) GROUP BY ALL"
        on = ", ".join(gs)
        return f"SELECT kt.gid, a.* FROM ({agg}) a LEFT JOIN dpsense_keys kt USING ({on})"
    return f"SELECT 0::BIGINT AS gid, {', '.join(aggs)} FROM ({inner})"


def _fetch_pass(con: Any, sql: str, sampled: list[str]) -> list[Any]:
    """The rows of ``sql``; with ``sampled`` (aliases), their samples are kept in
    ``dpsense_scan`` and fetched as NULL."""
    if not sampled:
        return list(con.execute(sql).fetchall())
    # the samples leave as numpy columns, not as lists of Python floats
    con.execute(f"CREATE OR REPLACE TEMP TABLE dpsense_scan AS {sql}")
    blank = ", ".join(f"NULL AS s_{a}" for a in sampled)
    return list(con.execute(f"SELECT * REPLACE ({blank}) FROM dpsense_scan").fetchall())


_OVER: Final = {
    "n": "coalesce(sum({}), 0)::BIGINT",
    "s": "flatten(list({}))",
    "t": "sum({})::HUGEINT::VARCHAR",
    "c": "coalesce(sum({}), 0)::BIGINT",
    "m": "max({})",
}
"""Each aggregate of :func:`_aggregates` (by its name's first letter) over the buckets."""


def _aggregates(
    columns: list[str], alias: dict[str, str], sampled: list[str], sums: list[str], texts: int
) -> list[tuple[str, str]]:
    """(name, SQL) of the first pass's aggregates, in the order :func:`_checks` and
    :func:`_read_pass` read them: the rows, the samples, the sums (HUGEINT), each
    column's count of numbers and its max, each text column's count of entries."""
    out = [("n", "count(*)::BIGINT")]
    out += [
        (f"s_{alias[c]}", f"list({alias[c]}) FILTER (WHERE {sample_test(alias[c])})")
        for c in sampled
    ]
    out += [(f"t{i}", f"sum({k})::HUGEINT") for i, k in enumerate(sums)]
    for c in columns:
        out += [
            (f"c_{alias[c]}", f"count({alias[c]})::BIGINT"),
            (f"m_{alias[c]}", f"max({alias[c]})"),
        ]
    out += [(f"cy{i}", f"count(y{i})::BIGINT") for i in range(texts)]
    return out


def _read_pass(
    con: Any,
    got: list[tuple[Any, ...]],
    first: int,
    ngroups: int,
    sampled: dict[str, str],
    sum_sql: list[tuple[tuple[Any, ...], str]],
    row_test: str,
) -> _Pass:
    """The first pass's rows (``got``: gid, group columns, n, then the samples' and the
    sums' columns) as rows per group, the value-hash samples (read from ``dpsense_scan``
    as numpy columns) of the ``sampled`` columns (by their alias) and the exact sums."""
    rows = np.zeros(ngroups, dtype=np.int64)
    samples: dict[str | None, dict[int, np.ndarray]] = {c: {} for c in sampled}
    sums: dict[tuple[Any, ...], dict[int, int]] = {key: {} for key, _ in sum_sql}
    outside = 0
    for r in got:
        if r[0] is None:  # rows outside the public keys: only their checks count
            outside += int(r[first])
            continue
        g = int(r[0])
        rows[g] = int(r[first])
        for i, (key, _) in enumerate(sum_sql):
            sums[key][g] = int(r[first + 1 + len(sampled) + i] or 0)
    for c, name in sampled.items():
        flat = con.execute(
            f"SELECT gid, unnest(s_{name}) AS x FROM dpsense_scan WHERE gid IS NOT NULL"
        ).fetchnumpy()
        got_c = split_by_group(
            np.asarray(flat["gid"], dtype=np.int64), np.asarray(flat["x"], dtype=np.float64)
        )
        for gid in np.flatnonzero(rows).tolist():
            samples[c][gid] = got_c.get(gid, np.zeros(0))  # raw values
    if sampled:
        con.execute("DROP TABLE dpsense_scan")
    return _Pass(row_test, rows, samples, sums, outside)


def _checks(
    plan: TablePlan,
    got: list[Any],
    columns: list[str],
    texts: list[str],
    first: int,
    skip: int,
) -> bool:
    """Raise on the checks read from the pass's aggregates (``first``: the index of the
    row count, then ``skip`` samples and sums, then per column its count and max, then
    per text column its count of entries); True when rows must be dropped."""
    at = first + 1 + skip
    nonnumeric = dict.fromkeys(columns, False)
    missing: dict[str | None, bool] = dict.fromkeys(columns, False)
    keyed = False  # a missing by-value
    for r in got:
        for b in r[1:first]:
            keyed = keyed or b is None or (isinstance(b, float) and math.isnan(b))
        n = int(r[first])
        for i, c in enumerate(columns):
            numbers, top = int(r[at + 2 * i]), r[at + 2 * i + 1]
            missing[c] = missing[c] or numbers < n or (top is not None and math.isnan(top))
            if c in texts:
                present = int(r[at + 2 * len(columns) + texts.index(c)])
                nonnumeric[c] = nonnumeric[c] or present > numbers
    for name in columns:  # non-numeric entries first: they also read as missing
        raise_on_flags(replace(plan, column=name), [nonnumeric[name], False])
    drop = False
    for col in _or_none(columns):
        flags = [False] if col is not None else []
        found = keyed or missing.get(col, False)
        drop = raise_on_flags(replace(plan, column=col), [*flags, found]) or drop
    return drop


def _numeric(sql_type: str) -> bool:
    return sql_type in FLOAT_TYPES or exact_numeric(sql_type)


def _sum_sqls(needs: tuple[ScanNeed, ...], alias: dict[str, str]) -> list[tuple[Any, str]]:
    """(cache key, SQL) of each exact sum the needs read, with the column in the key."""
    out: dict[tuple[Any, ...], str] = {}
    for n in needs:
        if n.column is None or n.lower is None or n.upper is None:
            continue
        if n.hold == "grid":
            key, k = grid_sum_sql(
                RecordGrid.for_bounds(n.lower, n.upper), n.lower, n.upper, alias[n.column]
            )
        elif n.hold == "quanta":
            key, k = quanta_sum_sql(n.lower, n.upper, QUANTA, alias[n.column])
        else:
            continue
        out[(n.column, *key)] = k
    return list(out.items())


def held_table(
    source: TableSource,
    plan: TablePlan,
    keys: list[tuple[Any, ...]] | None,
    types: dict[str, str],
) -> BoundedTable:
    """The bounded table of a release with every row a unit and groups by gid (public
    keys, or no grouping): groups are held in DuckDB as the need allows, the others get
    their histogram as usual (``engine.summarise``)."""
    need = ScanNeed.of(plan)
    scan, needs = _shared_pass(source, plan, need, keys, types)
    con = source.con
    group_keys = list(keys) if keys is not None else [()]
    rows = scan.rows
    if need.hold == "count":
        empty = np.zeros(len(rows), dtype=np.int64)
        return BoundedTable(source, group_keys, rows.copy(), rows.copy(), empty, False)
    public = keys is not None
    kept = stage_sql(source, plan, types, scan.row_test, public)
    stage = f"SELECT gid, v FROM ({kept})"
    samples = {
        g: np.unique(_clip(s, plan.lower, plan.upper), return_counts=True)
        for g, s in (scan.samples.get(need.column, {}) if need.hold == "window" else {}).items()
    }
    buckets = scan.buckets.get(need.column, {}) if need.hold == "window" else {}
    held = _held(rows, need, samples, buckets)
    large = [int(g) for g in np.flatnonzero(held)]
    small = [int(g) for g in np.flatnonzero((rows > 0) & ~held)]
    raw = _raw_rows(source, plan, need, scan, types)
    # every row the histogram reads is wanted (no held group, few rows outside the keys):
    # aggregate them all and keep the groups after, rather than test each row's key
    every = not large and scan.outside <= _FEW_OUTSIDE
    con.execute("DROP TABLE IF EXISTS dpsense_hist")
    con.execute(
        f"CREATE TEMP TABLE dpsense_hist AS {_histogram_sql(raw, small, every)}"
        if small
        else "CREATE TEMP TABLE dpsense_hist (gid BIGINT, v DOUBLE, c BIGINT)"
    )
    table = summarise(source, group_keys, None, True)
    table.rows[large] = rows[large]
    table.units[large] = rows[large]
    if large:
        groups = _groups(source, need, scan, stage, raw, large, (samples, buckets), needs)
        table.held = {g: groups.group(g) for g in large}
    return table


def _shared_pass(
    source: TableSource,
    plan: TablePlan,
    need: ScanNeed,
    keys: list[tuple[Any, ...]] | None,
    types: dict[str, str],
) -> tuple[_Pass, tuple[ScanNeed, ...]]:
    """The first pass for ``need`` and the needs it serves: one pass for every announced
    need, kept on ``source`` for the others (keyed by the by-columns, keys and nulls)."""
    announced: tuple[ScanNeed, ...] = getattr(source, "scan_needs", ())
    shared = need in announced
    needs = announced if shared else (need,)
    cache: dict[Any, _Pass] = getattr(source, "scans", {}) if shared else {}
    ident = (plan.by, plan.nulls, None if keys is None else tuple(keys))
    scan = cache.get(ident)
    if scan is None:
        scan = _first_pass(source, plan, needs, keys, types, None)
        if shared:
            cache[ident] = scan
    return scan, needs


def _held(rows: np.ndarray, need: ScanNeed, samples: dict[Any, Any], buckets: Any) -> np.ndarray:
    """Which groups are held in DuckDB rather than read as a histogram."""
    if need.hold != "window":
        return rows > HOLD_SUM_ROWS
    distinct = np.zeros(len(rows), dtype=np.int64)  # distinct values in the sample
    for g, (values, _) in samples.items():
        distinct[g] = values.shape[0] * SAMPLE_MOD
    for g, (_, least, most) in buckets.items():
        # at most one value per bucket: few distinct values; otherwise held
        single = bool(np.all(np.isnan(least) | (least == most)))
        distinct[g] = np.count_nonzero(~np.isnan(least)) if single else HOLD_DISTINCT + 1
    # tied data: a small histogram is cheaper than the window pass
    return np.asarray((rows > HOLD_ROWS) & (distinct > HOLD_DISTINCT))


def _raw_rows(
    source: TableSource, plan: TablePlan, need: ScanNeed, scan: _Pass, types: dict[str, str]
) -> RawRows:
    """The rows of ``need``'s column as the window and histogram passes read them: the
    by-columns' own values (matched to the keys by a join of the small result) and the
    raw value."""
    assert need.column is not None
    gs = tuple(f"g{i}" for i in range(len(plan.by)))
    x = _raw(need.column, types)
    if gs:
        cols = ", ".join(f"{quote(b)} AS {g}" for b, g in zip(plan.by, gs, strict=True))
        return RawRows(
            f"SELECT {cols}, {x} AS x FROM {source.view} WHERE {scan.row_test}",
            gs,
            "SELECT * FROM dpsense_keys",
            need.lower,
            need.upper,
        )
    return RawRows(
        f"SELECT 0::BIGINT AS gid, {x} AS x FROM {source.view} WHERE {scan.row_test}",
        ("gid",),
        None,
        need.lower,
        need.upper,
    )


def _histogram_sql(raw: RawRows, gids: list[int], every: bool = False) -> str:
    """(gid, v, c): the clipped histogram of the groups ``gids``, aggregated on the raw
    values first (the clip and the keys then touch one row per distinct value). With
    ``every``, the aggregation reads every row and the groups are chosen after it (no
    per-row test of the key: for when the other groups hold few rows)."""
    listed = ", ".join(str(g) for g in gids)
    on = ", ".join(raw.on)
    v = f"greatest(least(a.x, {raw.upper!r}::DOUBLE), {raw.lower!r}::DOUBLE)"
    if raw.keys is None:
        rows = f"SELECT * FROM ({raw.sql}) WHERE gid IN ({listed})"
        keyed = f"(SELECT {on}, x, count(*) AS c FROM ({rows}) GROUP BY ALL) a"
    else:
        chosen = f"(SELECT * FROM ({raw.keys}) WHERE gid IN ({listed}))"
        if every:
            keyed = (
                f"(SELECT {on}, x, count(*) AS c FROM ({raw.sql}) GROUP BY ALL) a "
                f"JOIN {chosen} k USING ({on})"
            )
        else:
            ons = f"(SELECT {on} FROM {chosen})"
            rows = f"SELECT s.* FROM ({raw.sql}) s SEMI JOIN {ons} k USING ({on})"
            keyed = (
                f"(SELECT {on}, x, count(*) AS c FROM ({rows}) GROUP BY ALL) a "
                f"JOIN ({raw.keys}) k USING ({on})"
            )
    return f"SELECT gid, {v} AS v, sum(a.c)::BIGINT AS c FROM {keyed} GROUP BY ALL"


def _groups(
    source: TableSource,
    need: ScanNeed,
    scan: _Pass,
    stage: str,
    raw: RawRows,
    large: list[int],
    guides: tuple[dict[int, Any], dict[int, Buckets]],
    needs: tuple[ScanNeed, ...],
) -> DuckGroups:
    """The held groups of ``need`` (one object per column, bounds and need for a query,
    carrying the sums of the pass and the other levels of the column as hints)."""
    ident = (need.column, need.lower, need.upper, need.hold, tuple(large))
    if ident in scan.groups:
        return scan.groups[ident]
    hints = tuple(
        n.level
        for n in needs
        if n.level is not None
        and (n.column, n.lower, n.upper, n.hold) == (need.column, need.lower, need.upper, "window")
    )
    bounds = (need.lower, need.upper) if need.lower is not None and need.upper is not None else None
    groups = DuckGroups(
        source.con,
        stage,
        {g: int(scan.rows[g]) for g in large},
        {g: guides[0][g] for g in large if g in guides[0]},
        raw,
        hints,
        bounds,
        {g: guides[1][g] for g in large if g in guides[1]},
    )
    for key, sums in scan.sums.items():
        if key[0] == need.column:
            groups.preset_sums(key[1:], sums)
    if (cells := scan.cells.get((need.column, need.lower, need.upper))) is not None:
        groups.preset_counts(*cells)
    scan.groups[ident] = groups
    return groups


def _clip(x: np.ndarray, lower: float | None, upper: float | None) -> np.ndarray:
    if lower is None or upper is None:
        return x
    return np.asarray(np.minimum(np.maximum(x, lower), upper), dtype=np.float64)


def _or_none(columns: list[str]) -> list[str | None]:
    """The columns, or one None for a pass without a value column (a count)."""
    return [*columns] if columns else [None]
