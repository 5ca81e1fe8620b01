"""``dpsense sql``: the aggregates of one SQL SELECT, released privately as one table."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import numpy as np
from rich import box
from rich.table import Table

from dpsense.cli import _options as opt
from dpsense.cli._shared import _accountant, _console, _print_json, _seeded_quietly
from dpsense.errors import InputError

if TYPE_CHECKING:  # sqlglot is imported when the command runs, not at every start
    from dpsense.query.sql import SqlQuery

__all__ = ["SQL_EXAMPLES", "parse_bounds_items", "sql_command"]

SQL_EXAMPLES = (
    "Examples:\n\n\b\n"
    '  dpsense sql "SELECT year, COUNT(*) AS n, MEDIAN(lwage) AS median_wage \\\n'
    "      FROM 'wagepan.parquet' GROUP BY year\" --epsilon 1 --bounds lwage=-1:4 \\\n"
    "      --privacy-unit nr --max-groups-per-unit 8 --keys year=1980,1981,1982\n"
    "  dpsense sql \"SELECT AVG(hours) FROM 'panel.csv' WHERE educ >= 12\" --epsilon 0.5 \\\n"
    "      --bounds private --json\n"
    '  dpsense sql "SELECT r.region, COUNT(DISTINCT c.id) AS people FROM orders o \\\n'
    "      JOIN customers c ON o.id = c.id JOIN regions r ON c.country = r.country \\\n"
    '      GROUP BY r.region" --table orders=orders.csv --table customers=customers.csv \\\n'
    "      --public regions=regions.csv --privacy-unit id --schema id=int --epsilon 1\n"
)
"""The examples that end ``--help``."""


def parse_bounds_items(items: list[str]) -> dict[str, tuple[float, float]] | str:
    """--bounds COL=L:U (repeatable or comma-separated), or --bounds private."""
    parts = [p.strip() for item in items for p in item.split(",") if p.strip()]
    if parts == ["private"]:
        return "private"
    if "private" in parts:
        raise InputError(
            "--bounds private finds every column's bounds privately; do not mix it with COL=L:U."
        )
    out: dict[str, tuple[float, float]] = {}
    for i, part in enumerate(parts, start=1):
        column, sep, span = part.partition("=")
        lower, colon, upper = span.rpartition(":") if ":" in span else ("", "", "")
        if not sep or not colon or not column.strip():
            raise InputError(
                f"--bounds entry {i} must be COL=LOWER:UPPER (e.g. --bounds wage=-1:4), or "
                "--bounds private."
            )
        try:
            pair = (float(lower), float(upper))
        except ValueError:
            raise InputError(
                f"--bounds entry {i} must be COL=LOWER:UPPER with numbers (e.g. wage=-1:4)."
            ) from None
        if column.strip() in out:
            raise InputError(f"--bounds gives the column {column.strip()!r} twice.")
        if pair[0] >= pair[1]:
            raise InputError(
                f"--bounds {column.strip()}={lower}:{upper} must have LOWER < UPPER; swap them "
                f"(--bounds {column.strip()}={upper}:{lower}) or widen the interval."
            )
        out[column.strip()] = pair
    if not out:
        raise InputError("--bounds is empty; write --bounds wage=-1:4 or --bounds private.")
    return out


def _check_bounds(spec: SqlQuery, bounds: dict[str, tuple[float, float]] | str | None) -> None:
    """A missing bound, in the command line's words (before anything is read)."""
    if bounds == "private":
        return
    for agg in spec.aggregates:
        if agg.statistic not in ("count", "people") and (
            bounds is None or agg.column not in bounds
        ):
            others = [k for k in (bounds or {}) if k != agg.column]
            hint = f" (it names {', '.join(map(repr, others))}: a typo?)" if others else ""
            raise InputError(
                f"--bounds has no bounds for the column {agg.column!r} (aggregated as "
                f"{agg.name!r}){hint}; SQL carries none. Pass --bounds {agg.column}=LOWER:UPPER, "
                "public and chosen without looking at the data, or --bounds private to find "
                "them privately ('dpsense bounds')."
            )


def _named_paths(items: list[str] | None, option: str) -> dict[str, str]:
    """--table / --public NAME=PATH entries (each path must exist)."""
    out: dict[str, str] = {}
    for item in items or []:
        name, sep, path = item.partition("=")
        name, path = name.strip(), path.strip()
        if not sep or not name or not path:
            raise InputError(f"{option} takes NAME=PATH (e.g. {option} orders=orders.csv).")
        if name in out:
            raise InputError(f"{option} names the table {name!r} twice.")
        if not Path(path).exists() and not any(ch in path for ch in "*?["):
            raise InputError(f"file not found: {path}")
        out[name] = path
    return out


def _tables_of(spec: SqlQuery, private: dict[str, str], public: dict[str, str]) -> dict[str, str]:
    """The file of each table the query reads: --table/--public, or a quoted path."""
    both = set(private) & set(public)
    if both:
        raise InputError(
            f"--table and --public both name {', '.join(map(repr, sorted(both)))}; a table "
            "is private or public."
        )
    named = {**private, **public}
    out: dict[str, str] = {}
    for source in spec.sources:
        if source.table in named:
            out[source.table] = named[source.table]
        elif source.is_path:
            out[source.table] = source.table
        else:
            raise InputError(
                f"The query reads {source.table!r}; on the command line pass its file with "
                f"--table {source.table}=PATH (--public for a public table), or write FROM "
                f"'{source.table}.parquet' (a quoted path)."
            )
    return {**named, **out}


def _privacy_unit(
    items: list[str] | None, tables: list[str] | None = None
) -> str | dict[str, Any] | None:
    """--privacy-unit COL (every private table's unit column), per table TABLE=COL or
    TABLE=COL:OTHER.KEY, or COL for the tables not listed (``tables``: the private tables
    of the query) and entries for the others."""
    if not items:
        return None
    plain = [i.strip() for i in items if "=" not in i]
    if plain and len(items) == 1:
        return plain[0]
    if len(plain) > 1:
        raise InputError(
            "--privacy-unit takes one column for every table (COL) and entries per table "
            "(TABLE=COL or TABLE=COL:OTHER.KEY); it names two columns without a table."
        )
    out: dict[str, Any] = {}
    for item in (i for i in items if "=" in i):
        table, _, target = (p.strip() for p in item.partition("="))
        column, colon, path = target.partition(":")
        other, dot, key = path.partition(".")
        if not table or not column or (colon and not (dot and other and key)):
            raise InputError(
                "--privacy-unit entries are TABLE=COL or TABLE=COL:OTHER.KEY (e.g. "
                "--privacy-unit items=order_id:orders.order_id)."
            )
        if table in out:
            raise InputError(f"--privacy-unit names the table {table!r} twice.")
        out[table] = (column, other, key) if colon else column
    if plain:
        for table in tables or ():
            out.setdefault(table, plain[0])
    return out


def _cell(value: Any, statistic: bool) -> str:
    """A released cell: a refused value (None) shows "refused"; an accuracy that is not
    public (None) shows nothing."""
    from dpsense.methods._release import format_value

    if value is None:
        return "refused" if statistic else ""
    if isinstance(value, bool) or not isinstance(value, int | float | list):
        return str(value)
    if isinstance(value, int):
        return str(value)
    return format_value(np.asarray(value, dtype=float) if isinstance(value, list) else value)


def _screen_parts(name: str) -> tuple[str, ...]:
    """The accuracy columns shown on screen (--json has them all): the 95% interval as one
    column, then the public half-widths."""
    return (f"{name}{_INTERVAL}", f"{name}_accuracy", f"{name}_rank_accuracy")


_INTERVAL = " 95%"
"""The suffix of the screen's interval column: "[low, high]", marked "unreliable"."""


def _with_intervals(spec: SqlQuery, row: dict[str, Any]) -> dict[str, Any]:
    """The row as the screen shows it: each statistic's interval as one cell (None
    without one), and a scalar value, its interval and its half-width to the digits its
    accuracy gives (two significant digits of the half-width; ``--json`` keeps them all),
    the interval rounded outward so that it holds the one released."""
    from dpsense.cli._shared import _fmt
    from dpsense.shown import decimals_of, rounded

    out = dict(row)
    for agg in spec.aggregates:
        name = agg.name
        value: Any = row.get(name)
        low: Any = row.get(f"{name}_low")
        high: Any = row.get(f"{name}_high")
        interval = None if low is None or high is None else (low, high)
        decimals = decimals_of(value, interval, row.get(f"{name}_accuracy"))
        if decimals is not None:
            out[name] = rounded(float(value), decimals)
            if row.get(f"{name}_accuracy") is not None:
                out[f"{name}_accuracy"] = rounded(float(row[f"{name}_accuracy"]), decimals, "up")
        if interval is None:
            out[f"{name}{_INTERVAL}"] = None
            continue
        pairs = zip(np.atleast_1d(low), np.atleast_1d(high), strict=True)
        if decimals is None:
            shown = ", ".join(f"[{_fmt(float(a))}, {_fmt(float(b))}]" for a, b in pairs)
        else:
            shown = ", ".join(
                f"[{rounded(float(a), decimals, 'down')}, {rounded(float(b), decimals, 'up')}]"
                for a, b in pairs
            )
        unreliable = np.any(np.asarray(row.get(f"{name}_unreliable", False), dtype=bool))
        out[f"{name}{_INTERVAL}"] = shown + (" unreliable" if unreliable else "")
    return out


def _columns(spec: SqlQuery, rows: list[dict[str, Any]], *, all_accuracy: bool) -> list[str]:
    """The released columns: by-columns, then each statistic and its accuracy columns
    (on screen only those that are public for some row: which are is a property of the
    statistic and method, not of the data)."""
    from dpsense.tables.grouped_result import INTERVAL_PARTS

    out = list(spec.released_by)
    for agg in spec.aggregates:
        out.append(agg.name)
        every = tuple(f"{agg.name}_{part}" for part in INTERVAL_PARTS)
        for extra in every if all_accuracy else _screen_parts(agg.name):
            if any(extra in r for r in rows) and (
                all_accuracy or any(r.get(extra) is not None for r in rows)
            ):
                out.append(extra)
    return out


def _selection(result: Any) -> dict[str, Any] | None:
    """The private partition selection's public parameters (None with public groups)."""
    from dpsense.tables import GroupedRelease

    for name in result:
        released = result[name]
        if isinstance(released, GroupedRelease) and "selection" in released.parameters:
            return dict(released.parameters["selection"])
    return None


def _releases(result: Any) -> list[Any]:
    """Every Release of a query's result (one per statistic and group)."""
    from dpsense.tables import GroupedRelease

    out = []
    for name in result:
        released = result[name]
        out += [rel for _, rel in released] if isinstance(released, GroupedRelease) else [released]
    return out


def _seeded(result: Any) -> bool:
    return any(rel.seeded for rel in _releases(result))


def _covers(result: Any) -> str | None:
    """What the intervals cover when some cover more than the data's statistic
    (``--interval privacy+sampling``: the population's value)."""
    from dpsense.methods.sampling_interval import COVERS_POPULATION

    return next((c for rel in _releases(result) if (c := rel.covers) == COVERS_POPULATION), None)


def _emit(spec: SqlQuery, result: Any, json_output: bool) -> None:
    from dpsense.cli.tables_io import _fit, _jsonable

    rows = [dict(r) for r in result.to_dicts()]
    if not json_output:
        rows = [_with_intervals(spec, r) for r in rows]
    columns = _columns(spec, rows, all_accuracy=json_output)
    if json_output:
        _print_json(
            {
                "epsilon": result.epsilon,
                "delta": result.delta,
                "by": list(spec.released_by),
                "rows": [_jsonable({c: r.get(c) for c in columns}) for r in rows],
                "parameters": _jsonable(dict(result.parameters)),
            }
        )
        return
    console = _console()
    table = Table(title="Private SQL release", box=box.SIMPLE_HEAVY)
    for col in columns:
        table.add_column(col, justify="left" if col in spec.released_by else "right")
    for row in rows:
        names = {agg.name for agg in spec.aggregates}
        table.add_row(*(_cell(row.get(c), c in names) for c in columns))
    _fit(console, table)  # one group, one row: never wrapped when written to a pipe or file
    console.print(table)
    console.print(
        f"{len(rows)} {'row' if len(rows) == 1 else 'rows'}; total guarantee per "
        f"{result.parameters.get('privacy_unit') or 'row'}: epsilon={result.epsilon:g}, "
        f"delta={result.delta:g}; 95%: intervals (unreliable: wider than half the bounds); "
        "accuracy columns are 95% half-widths where public."
    )
    unit = result.parameters.get("privacy_unit")
    if unit is not None:
        from dpsense.shown import caps_covered

        rows_cap = int(result.parameters.get("max_rows_per_unit") or 1)
        groups = int(result.parameters.get("max_groups_per_unit") or 1) if spec.by else None
        console.print(caps_covered(str(unit), rows_cap, groups))
    covers = _covers(result)
    if covers is not None:
        console.print(f"The intervals cover {covers}.")
    selection = _selection(result)
    if selection is not None:
        from dpsense.cli.tables_io import selection_note

        console.print(selection_note(selection, len(rows)))
    if _seeded(result):
        console.print("SEEDED: reproducible, not secure (tests and demos only).")


def sql_command(
    query: Annotated[str, opt.SQL_QUERY],
    epsilon: Annotated[float, opt.SQL_EPSILON],
    delta: Annotated[float, opt.DELTA] = 0.0,
    privacy_unit: Annotated[list[str] | None, opt.SQL_PRIVACY_UNIT] = None,
    table: Annotated[list[str] | None, opt.SQL_TABLE] = None,
    public: Annotated[list[str] | None, opt.SQL_PUBLIC] = None,
    max_rows_per_unit: Annotated[int | None, opt.MAX_ROWS] = None,
    max_groups_per_unit: Annotated[int | None, opt.MAX_GROUPS] = None,
    bounds: Annotated[list[str] | None, opt.SQL_BOUNDS] = None,
    bounds_share: Annotated[float | None, opt.BOUNDS_SHARE] = None,
    keys: Annotated[str | None, opt.SQL_KEYS] = None,
    nulls: Annotated[str, opt.NULLS] = "error",
    interval: Annotated[str, opt.INTERVAL] = "privacy",
    schema: Annotated[list[str] | None, opt.SQL_SCHEMA] = None,
    output: Annotated[Path | None, opt.SQL_OUTPUT] = None,
    seed: Annotated[int | None, opt.SEED] = None,
    ledger: Annotated[Path | None, opt.LEDGER] = None,
    dataset: Annotated[str | None, opt.SQL_DATASET] = None,
    json_output: Annotated[bool, opt.JSON] = False,
) -> None:
    """Release the aggregates of one SQL SELECT as one private table (one charge).

    Supported: SELECT of GROUP BY columns and COUNT(*), COUNT(col), SUM, AVG, MEDIAN,
    QUANTILE_CONT/QUANTILE_DISC/PERCENTILE_CONT (a list of levels for several),
    VAR_POP/VARIANCE, STDDEV_POP/STDDEV, COUNT(DISTINCT unit); FROM a quoted CSV/Parquet
    path or tables named with --table/--public, JOIN ... ON equalities (private tables on
    their privacy units, public tables on any keys); WHERE on rows; GROUP BY; ORDER BY and
    LIMIT on the released rows. Subqueries, other DISTINCT, HAVING, window functions and
    MIN/MAX are refused with what to do instead.
    """
    from dpsense.sql_release import sql
    from dpsense.tables.schema import parse_schema_items

    spec, bounds_arg, key_list = _checked(query, bounds, keys, output)
    files, unit, public_tables, label = _sources(spec, privacy_unit, table, public, dataset)
    accountant = _accountant(ledger)
    with _seeded_quietly():  # the output says so
        result = sql(
            query,
            tables=files,
            public_tables=public_tables,
            epsilon=epsilon,
            delta=delta,
            privacy_unit=unit,
            max_rows_per_unit=1 if max_rows_per_unit is None else max_rows_per_unit,
            max_groups_per_unit=1 if max_groups_per_unit is None else max_groups_per_unit,
            bounds=bounds_arg,
            keys=key_list,
            nulls=nulls,
            schema=parse_schema_items(schema) if schema else None,
            rng=seed,
            bounds_share=bounds_share,
            interval=interval,
            accountant=accountant,
            dataset=label,
        )
    _write_and_emit(spec, result, output, json_output)


def _write_and_emit(spec: SqlQuery, result: Any, output: Path | None, json_output: bool) -> None:
    """The released rows written to ``--output`` (when given), then shown."""
    from dpsense.cli.tables_io import write_output

    if output is not None:
        write_output(output, result)
    _emit(spec, result, json_output)


def _sources(
    spec: SqlQuery,
    privacy_unit: list[str] | None,
    table: list[str] | None,
    public: list[str] | None,
    dataset: str | None,
) -> tuple[dict[str, str], str | dict[str, Any] | None, list[str] | None, str | None]:
    """The query's files by table name, its privacy unit, its public tables (None for one
    private table) and the dataset's name in the log."""
    private_files = _named_paths(table, "--table")
    public_files = _named_paths(public, "--public")
    files = _tables_of(spec, private_files, public_files)
    private = [s.table for s in spec.sources if s.table not in public_files]
    unit = _privacy_unit(privacy_unit, private)
    several = len(spec.sources) > 1 or isinstance(unit, dict) or bool(public_files)
    label = dataset if dataset is not None else (None if several else Path(files[spec.table]).name)
    return files, unit, sorted(public_files) if several else None, label


def _checked(
    query: str, bounds: list[str] | None, keys: str | None, output: Path | None
) -> tuple[SqlQuery, dict[str, tuple[float, float]] | str | None, list[Any] | None]:
    """The query parsed and --bounds, --output and --keys checked against it, before
    anything is read or spent: the query, its bounds and its public keys."""
    from dpsense.cli.tables_io import check_output, keys_option
    from dpsense.query.sql import parse_sql

    spec = parse_sql(query)
    bounds_arg = parse_bounds_items(bounds) if bounds else None
    _check_bounds(spec, bounds_arg)
    if output is not None:
        check_output(output)  # before any budget is spent
    if keys is not None and not spec.by:
        raise InputError("--keys lists groups, but the query has no GROUP BY.")
    key_list = keys_option(keys, spec.released_by) if keys is not None else None
    return spec, bounds_arg, key_list
