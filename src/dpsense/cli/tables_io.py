"""Tables on the command line: a keys file in, one row per group out (screen, JSON, file)."""

from __future__ import annotations

import csv
import json
import math
import os
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from rich import box
from rich.measure import Measurement
from rich.table import Table

from dpsense.cli._shared import _console, _fmt, _print_json
from dpsense.data.source import open_table
from dpsense.data.sql_build import column as sql_column
from dpsense.data.sql_build import duckdb_sql, ident, literal, select, table
from dpsense.defaults import ACCURACY_ALPHA
from dpsense.errors import InputError, keys_columns
from dpsense.methods import Release
from dpsense.methods._release import format_value
from dpsense.query import QueryResult
from dpsense.shown import caps_covered, decimals_of, rounded
from dpsense.tables import GroupedRelease
from dpsense.tables.grouped_result import INTERVAL_PARTS, interval_columns

__all__ = [
    "check_output",
    "emit_grouped",
    "keys_option",
    "read_keys",
    "result_rows",
    "shown_accuracy",
    "shown_interval",
    "shown_value",
    "write_output",
]

_RESULT_COLUMNS = ("value", "refused", "method", "noise", "scale", *INTERVAL_PARTS)
_OUTPUT_SUFFIXES = (".csv", ".parquet", ".json")
_WIDEST = 10_000
"""Measure tables as if the page were this wide (their natural width)."""


def read_keys(path: Path, by: tuple[str, ...]) -> list[tuple[Any, ...]]:
    """The public keys in a CSV or Parquet file that has the by-columns."""
    with open_table(path) as source:
        missing = [b for b in by if b not in source.columns]
        if missing:
            raise keys_columns(
                f"The keys file {path.name!r}",
                list(by),
                source.columns,
                "add or rename its columns",
            )
        query = select([sql_column(b) for b in by], table(source.view))
        rows = source.con.execute(duckdb_sql(query)).fetchall()
    return list(dict.fromkeys(tuple(r) for r in rows))  # distinct, in the file's order


def keys_option(text: str, by: tuple[str, ...]) -> list[tuple[Any, ...]]:
    """The public keys of ``--keys``: a CSV/Parquet file, or inline values.

    An existing file wins. Otherwise ``COL=V1,V2`` (COL the by-column; an "=" before any
    comma) or ``V1,V2`` (a comma, one by-column) are inline keys; a value that holds "="
    or "," needs a file. Each value is an int when it is written as one
    (``1980``, not ``01980``), a float when written as a plain decimal (``2.5``), else the
    text itself: read from the option alone, never from the data, and the engine matches
    keys to the by-column by value after casting them to its type.
    """
    if Path(text).is_file():
        return read_keys(Path(text), by)
    name, sep, rest = text.partition("=")
    named = bool(sep) and "," not in name  # COL=...: the "=" before any comma
    if not named and "," not in text:
        raise InputError(
            f"The keys file {text!r} does not exist. Pass a CSV/Parquet file with the "
            f"group columns, or the keys inline: --keys {by[0]}=A,B (or --keys A,B for one "
            "group column)."
        )
    if len(by) != 1:
        raise InputError(
            "Inline --keys list the values of one group column; with several ("
            f"{', '.join(by)}) pass a CSV/Parquet file with those columns."
        )
    if named and name.strip() != by[0]:
        raise keys_columns("--keys", list(by), [name.strip()], f"write --keys {by[0]}=A,B")
    parts = [p.strip() for p in (rest if named else text).split(",")]
    if not all(parts):
        raise InputError(
            f"--keys has an empty value; write the keys separated by commas, e.g. --keys "
            f"{by[0]}=A,B."
        )
    values = [(_key_value(p),) for p in parts]
    if len(set(values)) != len(values):
        raise InputError("--keys lists a group more than once; give each key once.")
    return values


def _key_value(text: str) -> Any:
    """An inline key: int or float when written as one (canonically), else the text."""
    if re.fullmatch(r"-?(0|[1-9][0-9]*)", text):
        return int(text)
    if re.fullmatch(r"-?(0|[1-9][0-9]*)\.[0-9]*[1-9]", text):
        return float(text)
    return text


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


def _decimals(rel: Release) -> int | None:
    """The decimals a receipt shows a scalar release with: two significant digits of its
    95% interval's half-width (its accuracy without one); None when neither is public, or
    for several values. ``--json`` keeps every digit."""
    if rel.refused or np.ndim(rel.value) != 0:
        return None
    return decimals_of(rel.value, rel.interval(ACCURACY_ALPHA), rel.accuracy(ACCURACY_ALPHA))


def shown_value(rel: Release) -> str:
    """The value as printed: a number (to the digits its accuracy gives), a list for
    several quantiles, or "refused"."""
    if rel.refused:
        return "refused"
    decimals = _decimals(rel)
    return format_value(rel.value) if decimals is None else rounded(float(rel.value), decimals)


def shown_interval(rel: Release) -> str:
    """ "[low, high]" (the 95% interval of :meth:`Release.interval`), marked "unreliable"
    when it is wider than half the bounds; "" without one."""
    interval = rel.interval(ACCURACY_ALPHA)
    if interval is None or rel.refused:
        return ""
    decimals = _decimals(rel)
    low, high = (np.atleast_1d(np.asarray(end, dtype=np.float64)) for end in interval)
    shown = ", ".join(
        f"[{rounded(float(a), decimals, 'down')}, {rounded(float(b), decimals, 'up')}]"
        for a, b in zip(low, high, strict=True)
    )
    return shown + (" unreliable" if rel.unreliable(ACCURACY_ALPHA) else "")


def shown_accuracy(rel: Release) -> str:
    """ "± a (95%)" where the half-width is public, "± t ranks (95%)" where the rank error
    is, else "" (docs/accuracy.md)."""
    a = rel.accuracy(ACCURACY_ALPHA)
    if a is not None:
        return f"± {rounded(float(a), _decimals(rel))} (95%)"
    t = rel.rank_accuracy(ACCURACY_ALPHA)
    return "" if t is None else f"± {t} ranks (95%)"


def result_rows(
    result: Release | GroupedRelease | QueryResult,
) -> tuple[list[str], list[dict[str, Any]]]:
    """Column names and one dict per group (one row for an ungrouped release)."""
    if isinstance(result, QueryResult):
        return result.columns(), [{k: _clean(v) for k, v in r.items()} for r in result.to_dicts()]
    if isinstance(result, GroupedRelease):
        return [*result.by, *_RESULT_COLUMNS], [
            {k: _clean(v) for k, v in row.items()} for row in result.to_dicts()
        ]
    row = {k: _clean(getattr(result, k)) for k in _RESULT_COLUMNS if k not in INTERVAL_PARTS}
    row.update(interval_columns(result))
    return list(_RESULT_COLUMNS), [row]


def emit_grouped(result: GroupedRelease, json_output: bool, column: str | None) -> None:
    """A rich table with one row per group, or the DESIGN ``--json`` object."""
    if json_output:
        _print_json(_grouped_json(result))
        return
    console = _console()
    table = _grouped_table(result, column)
    _fit(console, table)
    console.print(table)
    console.print(" ".join(_grouped_notes(result)))


def _grouped_json(result: GroupedRelease) -> dict[str, Any]:
    """The ``--json`` object of a grouped release: the guarantee, then one dict a group."""
    return {
        "epsilon": result.epsilon,
        "delta": result.delta,
        "by": list(result.by),
        "selection": result.selection,
        "groups": [{k: _clean(v) for k, v in row.items()} for row in result.to_dicts()],
        "parameters": _jsonable(dict(result.parameters)),
    }


def _grouped_table(result: GroupedRelease, column: str | None) -> Table:
    """One row per group: its key, the value, its accuracy, the method and the noise."""
    stat = next((rel.statistic for _, rel in result), "statistic")
    title = f"Private {stat}" + (f" of {column}" if column else "") + f" by {', '.join(result.by)}"
    table = Table(title=title, box=box.SIMPLE_HEAVY)
    for i, name in enumerate(result.by):
        # a group name is never cut short (two names must not look alike), nor split
        # inside a word when the screen is narrow
        words = [w for key, _ in result for w in str(_part(key, i, result.by)).split()]
        table.add_column(name, overflow="fold", min_width=min(max(map(len, words), default=1), 30))
    table.add_column("value", justify="right")
    table.add_column("95% interval", justify="right")
    table.add_column("method")
    table.add_column("noise")
    for key, rel in result:
        parts = key if len(result.by) > 1 else (key,)
        table.add_row(
            *(str(p) for p in parts),
            shown_value(rel),
            shown_interval(rel) or shown_accuracy(rel),
            rel.method,
            str(rel.noise),
        )
    return table


def _grouped_notes(result: GroupedRelease) -> list[str]:
    """The sentences under the table: the guarantee, how the groups and the bounds were
    found, the resolution, and whether the noise was seeded."""
    split = result.parameters.get("per_group", {})
    lines = [
        f"{len(result)} {'group' if len(result) == 1 else 'groups'} ({result.selection}); "
        "total guarantee per "
        f"{result.parameters.get('privacy_unit') or 'row'}: epsilon={result.epsilon:g}, "
        f"delta={result.delta:g}."
    ]
    if "selection" in result.parameters:
        sel = result.parameters["selection"]
        lines.append(
            f"Groups chosen by private partition selection with epsilon={sel['epsilon']:g}, "
            f"delta={sel['delta']:g}; each group released with "
            f"epsilon={split.get('epsilon', 0):g}, delta={split.get('delta', 0):g}."
        )
        lines.append(selection_note(sel, len(result)))
    elif split:
        lines.append(
            f"Each group released with epsilon={split['epsilon']:g}, delta={split['delta']:g}."
        )
    found = result.parameters.get("bounds")
    if found:
        lines.append(
            f"Bounds ({_fmt(found['lower'])}, {_fmt(found['upper'])}) found privately over "
            f"the whole column with epsilon={found['epsilon']:g} of the total, for every "
            "group."
        )
    if result.parameters.get("resolution") is not None:
        lines.append(
            f"Values on multiples of {result.parameters['resolution']:g} (resolution from "
            f"the {result.parameters.get('resolution_source')})."
        )
    unit = result.parameters.get("privacy_unit")
    if unit is not None:
        rows = int(result.parameters.get("max_rows_per_unit") or 1)
        groups = int(result.parameters.get("max_groups_per_unit") or 1)
        lines.append(caps_covered(str(unit), rows, groups))
    if any(rel.seeded for _, rel in result):
        lines.append("SEEDED: reproducible, not secure (tests and demos only).")
    return lines


def selection_note(selection: Mapping[str, Any], released: int) -> str:
    """What private partition selection needs of a group, from its public parameters: a
    group appears when its noisy number of people reaches the threshold; with none
    released, what would release them."""
    threshold = selection.get("threshold")
    if threshold is None:
        return ""
    note = (
        f"A group appears when its number of people plus noise (scale "
        f"{float(selection.get('scale', 0.0)):.3g}) reaches {int(threshold)}: groups of "
        f"fewer than about {int(threshold)} people rarely appear."
    )
    if released == 0:
        note += (
            " No group reached it: give the selection more epsilon or delta, keep fewer "
            "groups per person (--max-groups-per-unit), or pass the groups as public "
            "--keys (every key is then released)."
        )
    return note


def _fit(console: Any, table: Table) -> None:
    """One group, one row: a table wider than the screen would wrap a long group name onto
    a line of its own, read as a group without a value. Written to a pipe or a file, the
    page is made as wide as the table (nothing wraps); on a terminal narrower than the
    table, rows are ruled off so that a wrapped name stays visibly inside its row."""
    wide = console.options.update(width=_WIDEST, max_width=_WIDEST)
    needed = Measurement.get(console, wide, table).maximum
    if needed <= console.width:
        return
    if console.is_terminal:
        table.box = box.HORIZONTALS
        table.show_lines = True
    else:
        console.width = needed


def _part(key: Any, i: int, by: tuple[str, ...]) -> Any:
    return key[i] if len(by) > 1 else key


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return _clean(value)


def check_output(path: Path) -> Path:
    """The folder of a valid --output path (checked before any budget is spent)."""
    if path.suffix.lower() not in _OUTPUT_SUFFIXES:
        raise InputError(f"--output must end in {', '.join(_OUTPUT_SUFFIXES)}; got {path.name!r}.")
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise InputError(f"The folder of --output {str(folder)!r} does not exist.")
    return folder


def write_output(path: Path, result: Release | GroupedRelease | QueryResult) -> None:
    """Write the result rows to CSV, Parquet or JSON atomically (temporary file, rename)."""
    folder = check_output(path)
    suffix = path.suffix.lower()
    columns, rows = result_rows(result)
    handle, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=folder)
    os.close(handle)
    try:
        if suffix == ".csv":
            with open(tmp, "w", newline="", encoding="utf-8") as out:
                writer = csv.DictWriter(out, fieldnames=columns)
                writer.writeheader()
                writer.writerows(
                    {k: json.dumps(v) if isinstance(v, list) else v for k, v in row.items()}
                    for row in rows
                )
        elif suffix == ".json":
            with open(tmp, "w", encoding="utf-8") as out:
                json.dump(rows, out, indent=2, default=str)
                out.write("\n")
        else:
            _write_parquet(tmp, columns, rows)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _write_parquet(tmp: str, columns: list[str], rows: list[dict[str, Any]]) -> None:
    import duckdb
    from sqlglot import expressions as exp

    out = table("out")
    defs = [
        exp.ColumnDef(
            this=ident(c),
            kind=exp.DataType.build(_sql_type([r[c] for r in rows]), dialect="duckdb"),
        )
        for c in columns
    ]
    create = exp.Create(kind="TABLE", this=exp.Schema(this=out, expressions=defs))
    insert = exp.insert(exp.values([tuple(exp.Placeholder() for _ in columns)]), out)
    parquet = exp.CopyParameter(this=exp.var("FORMAT"), expression=exp.var("PARQUET"))
    copy = exp.Copy(this=out.copy(), kind=False, files=[literal(tmp)], params=[parquet])
    con = duckdb.connect(":memory:")
    try:
        con.execute(duckdb_sql(create))
        if rows:
            con.executemany(duckdb_sql(insert), [[r[c] for c in columns] for r in rows])
        con.execute(duckdb_sql(copy))
    finally:
        con.close()


def _sql_type(values: list[Any]) -> str:
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, bool) for v in present):
        return "BOOLEAN"
    if present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        return "BIGINT"
    if present and all(isinstance(v, int | float) and not isinstance(v, bool) for v in present):
        return "DOUBLE"
    if present and all(isinstance(v, list) for v in present):
        return "DOUBLE[]"
    return "VARCHAR"
