"""One front door for data: every supported format becomes a DuckDB relation.

Both a release on a table and a bare column (:func:`dpsense.data.load_column`) open their
data here, so a file is read the same way whichever asks: the same CSV dialect
(:mod:`dpsense.data.csv_files`), the same parsing of numbers, nulls and text, the same
messages for a file that cannot be read.

DuckDB is the embedded engine: files and relations are scanned where they are, and
pandas, Polars and Arrow objects are read in place through DuckDB's replacement scans (no
copy into Python objects). Polars LazyFrames are collected with only the columns a release
uses. Nothing here looks at the values: errors name the argument and say what to do.
"""

from __future__ import annotations

import glob
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from dpsense.data.csv_files import csv_delimiter, csv_problem
from dpsense.data.in_memory import as_text, in_memory
from dpsense.data.sql_build import (
    call,
    column,
    create_view,
    duckdb_sql,
    literal,
    select,
    star,
    table,
)
from dpsense.errors import Assign, InputError, Param, missing_column

__all__ = [
    "PARQUET_SUFFIXES",
    "TableSource",
    "as_text",
    "connection",
    "is_csv_path",
    "is_table",
    "open_table",
    "path_view",
    "scannable",
    "unreadable",
]

PARQUET_SUFFIXES = (".parquet", ".pq")
CsvReader = Callable[[Mapping[str, str]], str]
"""A CSV file's ``read_csv(...)`` call, given the column types to override."""
"""The suffixes of a Parquet file (any other file is read as CSV)."""


class TableSource:
    """A DuckDB connection and the name of a view holding the user's table."""

    def __init__(
        self,
        con: Any,
        view: str,
        columns: Sequence[str],
        label: str,
        *,
        declared_types: bool = True,
    ) -> None:
        self.con = con
        self.view = view
        self.columns = list(columns)
        self.label = label
        self.declared_types = declared_types
        """False when DuckDB inferred the column types from the values (CSV): such types
        are not public (docs/tables.md §7)."""
        self.csv_reader: CsvReader | None = None
        """For a CSV file: its ``read_csv(...)`` call with some column types overridden
        (column name to DuckDB type), so declared columns can be read as the file's own
        text."""
        self.scan_needs: tuple[Any, ...] = ()
        """What a query's statistics read from the engine's first pass
        (``held_scan.announce``); empty for a release of one statistic."""
        self.scans: dict[Any, Any] = {}
        """That pass, once run (shared by the query's statistics)."""

    def require(self, name: str, argument: str) -> None:
        """An InputError naming ``argument`` when the table has no column ``name``."""
        if name not in self.columns:
            shown = ", ".join(repr(c) for c in self.columns[:40])
            more = ", ..." if len(self.columns) > 40 else ""
            if argument == "where":
                raise InputError(
                    Param("where", word="filter"),
                    f" reads the column {name!r}, which is not in "
                    f"{self.label}; its columns are {shown}{more}. Check the name.",
                )
            raise missing_column(name, self.label, self.columns, argument)


_DATABASE: Any = None
_DATABASE_LOCK = threading.Lock()


def _duckdb() -> Any:
    import duckdb

    return duckdb


def _connection() -> Any:
    """A fresh connection (cursor) to the process's in-memory DuckDB database.

    Opening a database costs tens of milliseconds; a cursor costs well under one. Each
    release works in its own cursor with temporary views and tables only, so concurrent
    releases do not see each other's data.
    """
    global _DATABASE
    with _DATABASE_LOCK:
        if _DATABASE is None:
            _DATABASE = _duckdb().connect(":memory:")
        return _DATABASE.cursor()


def connection() -> Any:
    """A fresh cursor to the process's in-memory DuckDB database (close it when done)."""
    return _connection()


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def is_csv_path(path: str) -> bool:
    """True for a path read as CSV (column types inferred from the values): ``-``, or
    any file, glob or path that is not Parquet (a ``.parquet``/``.pq`` file, a glob of
    ``.parquet`` files, a directory of them), from the path alone."""
    if path == "-":
        return True
    lowered = path.lower()
    is_glob = any(ch in path for ch in "*?[")
    if os.path.isdir(path):
        return False
    return not (lowered.endswith(PARQUET_SUFFIXES) or (is_glob and ".parquet" in lowered))


def _path_source(
    con: Any, path: str, where: str, *, infer_types: bool = True, view: str = "src"
) -> CsvReader | None:
    """Create view ``view`` (``src``) over the file; its CSV reader (:func:`_csv_reader`), or
    None for
    Parquet (typed: a CSV file's types are inferred from its values). ``where`` names the
    file in messages (its path, or standard input)."""
    is_glob = any(ch in path for ch in "*?[")
    if os.path.isdir(path):
        if next(Path(path).rglob("*.parquet"), None) is None:
            raise InputError(
                f"cannot read {where}: it is a directory without Parquet files; pass a "
                "data file (CSV or Parquet) or a folder of Parquet files."
            )
        pattern = os.path.join(path, "**", "*.parquet")
        con.execute(create_view(view, star(call("read_parquet", literal(pattern)))))
        return None
    if not is_glob and not os.path.exists(path):
        raise InputError(f"file not found: {where}")
    if not is_csv_path(path):
        con.execute(create_view(view, star(call("read_parquet", literal(path)))))
        return None
    first = sorted(glob.glob(path))[:1] if is_glob else [path]
    delimiter = csv_delimiter(Path(first[0]), where) if first else ","
    dialect = _csv_dialect(delimiter)
    typed: list[tuple[str, str]] | None = None
    if not is_glob:
        # the types, inferred once from every row; the view then reads with them stated,
        # so that a query on it does not infer them again (without infer_types, every
        # column is the file's text: its names come from the header, no pass over the rows)
        sniff = _SNIFF if infer_types else (("all_varchar", True),)
        sniffed = call("sniff_csv", literal(path), options=(*dialect, *sniff))
        found = con.execute(duckdb_sql(select([column("Columns")], sniffed))).fetchone()
        typed = [(str(c["name"]), str(c["type"])) for c in found[0]] if found else None
    reader = _csv_reader(path, dialect, typed)
    con.execute(create_view(view, star(_csv_call(path, dialect, typed))))
    if infer_types:
        # one parse of every row now, so that a malformed row (more or fewer fields than
        # the header) is refused here, with the file's message, and never by a later query
        # with DuckDB's, which quotes the line; without infer_types the caller reads every
        # row at once and maps the error itself (:func:`unreadable`)
        con.execute(duckdb_sql(select([_count_star()], table(view)))).fetchall()
    columns = [d[0] for d in con.execute(duckdb_sql(star(table(view)).limit(0))).description]
    if len(columns) == 1:
        reader = _csv_reader(path, dialect, typed, columns[0])
        tree = _csv_call(path, dialect, typed, columns[0])
        con.execute(create_view(view, star(tree), replace=True))
    return reader


CsvOptions = tuple[tuple[str, Any], ...]
"""Named options of ``read_csv``/``sniff_csv``: (name, Python value) pairs."""


def _csv_dialect(delimiter: str) -> CsvOptions:
    """The stated CSV dialect (module docstring of :mod:`dpsense.data.csv_files`)."""
    return (
        ("header", True),
        ("delim", delimiter),
        ("quote", '"'),
        ("escape", '"'),
        ("skip", 0),
        ("comment", ""),
        ("strict_mode", True),
        ("null_padding", False),
    )


# numbers, booleans and text only: DuckDB would read a lone "-inf" as a DATE (the infinite
# date), which no longer converts to a number once a finite row is gone
_SNIFF: CsvOptions = (
    ("sample_size", -1),
    ("auto_type_candidates", ["BOOLEAN", "BIGINT", "DOUBLE", "VARCHAR"]),
)


def _count_star() -> Any:
    from sqlglot import expressions as exp

    return exp.Count(this=exp.Star())


def _csv_reader(
    path: str,
    dialect: CsvOptions,
    typed: list[tuple[str, str]] | None,
    one_column: str | None = None,
) -> CsvReader:
    """``read_csv`` of ``path`` with some column types overridden (a mapping of column
    names to DuckDB types, or empty), as DuckDB SQL (:func:`_csv_call`)."""

    def reader(types: Mapping[str, str]) -> str:
        return duckdb_sql(_csv_call(path, dialect, typed, one_column, types))

    return reader


def _csv_call(
    path: str,
    dialect: CsvOptions,
    typed: list[tuple[str, str]] | None,
    one_column: str | None = None,
    types: Mapping[str, str] | None = None,
) -> Any:
    """``read_csv`` of ``path`` with the column types ``types`` overridden, a sqlglot tree.

    The dialect is stated (module docstring of :mod:`dpsense.data.csv_files`), not
    sniffed: a row with more or fewer fields than the header is an error, never a reason
    to read another line as the header. ``typed`` lists the columns and their inferred
    types (None for a glob of files: inferred at each read). ``one_column`` names the
    column of a file that has one: its blank lines are no rows (as in a file of several
    columns)."""
    from sqlglot import expressions as exp

    types = types or {}
    options: CsvOptions
    if typed is not None:
        stated = {n: types.get(n, t) for n, t in typed}
        options = (("auto_detect", False), ("columns", stated))
    else:
        extra = (("types", dict(types)),) if types else ()
        options = (("auto_detect", True), *_SNIFF, *extra)
    tree = call("read_csv", literal(path), options=(*dialect, *options))
    if one_column is None:
        return tree
    present = exp.not_(exp.Is(this=column(one_column), expression=exp.Null()))
    return star(tree, present).subquery()


def _value_errors(duckdb: Any) -> tuple[type[Exception], ...]:
    """DuckDB's errors about the data itself (a value that does not convert, a file or page
    that cannot be read), as opposed to errors in the SQL dpsense writes."""
    return (duckdb.ConversionException, duckdb.InvalidInputException, duckdb.IOException)


def _unreadable_rows(data: Any, label: str, where: str, exc: Exception) -> InputError:
    """The message for a value or a part of the source DuckDB could not read once the
    source was open (:func:`open_table`)."""
    if isinstance(data, str | os.PathLike):
        path = os.fspath(data)
        problem = unreadable(path, where, label, exc)
        if not problem.args[0].startswith("Could not read"):
            return problem
    return InputError(
        f"Could not read every row of {label}: some value cannot be read as its column's "
        f"type, or part of the data is damaged ({type(exc).__name__}). Check the data "
        "(for a CSV file, declare the columns' types with ",
        Assign("schema"),
        " to read them as text first), or convert it to Parquet.",
    )


def unreadable(path: str, where: str, label: str, exc: Exception) -> InputError:
    """The one message for a file DuckDB could not read (``exc``): the precise cause of a
    malformed CSV file (:func:`dpsense.data.csv_files.csv_problem`) where it can be named,
    else a generic one. Never DuckDB's own text, which quotes the offending line."""
    plain_csv = os.path.isfile(path) and is_csv_path(path)
    problem = csv_problem(Path(path), where) if plain_csv else None
    if problem is not None:
        return problem
    return InputError(
        f"Could not read {label}: it is not a readable CSV (with a header row) or "
        "Parquet file. Check that the file is complete and of the kind its name says."
    )


@contextmanager
def open_table(
    data: Any, needed: Sequence[str] | None = None, *, infer_types: bool = True
) -> Iterator[TableSource]:
    """A private DuckDB connection with the data as view ``src`` (closed on exit).

    ``needed`` names the columns the release uses; sources that must be computed first
    (a Polars LazyFrame) compute only those. ``infer_types=False`` reads every column of a
    CSV file as its text (VARCHAR), with the same dialect, without the pass over every row
    that infers the types.
    """
    duckdb = _duckdb()
    stdin_copy: str | None = None
    if isinstance(data, str) and data == "-":
        stdin_copy = copy_stdin()
        data = stdin_copy
    con = _connection()
    declared = True
    csv_reader: CsvReader | None = None
    try:
        if isinstance(data, str | os.PathLike):
            path = os.fspath(data)
            label = "standard input" if stdin_copy else f"the file {Path(path).name!r}"
            where = "standard input" if stdin_copy else path
            try:
                csv_reader = _path_source(con, path, where, infer_types=infer_types)
                declared = csv_reader is None
                columns = [d[0] for d in con.execute("SELECT * FROM src LIMIT 0").description]
            except duckdb.Error as exc:
                raise unreadable(path, where, label, exc) from None
        elif isinstance(data, duckdb.DuckDBPyRelation):
            label = "the DuckDB relation"
            arrow = _relation_to_scan(data)
            con.register("src_obj", arrow)
            con.execute("CREATE TEMP VIEW src AS SELECT * FROM src_obj")
            columns = [d[0] for d in con.execute("SELECT * FROM src LIMIT 0").description]
        else:
            scan, label = in_memory(data, needed)
            con.register("src_obj", scan)
            con.execute("CREATE TEMP VIEW src AS SELECT * FROM src_obj")
            columns = [d[0] for d in con.execute("SELECT * FROM src LIMIT 0").description]
        source = TableSource(con, "src", columns, label, declared_types=declared)
        source.csv_reader = csv_reader
        try:
            yield source
        except _value_errors(duckdb) as exc:
            # a value DuckDB could not read as its column's type, or a file it could not
            # read, met while a release reads the rows: DuckDB's text quotes the value or
            # the line, so the message is the file's own (never the reader's)
            where = "standard input" if stdin_copy else label
            raise _unreadable_rows(data, label, where, exc) from None
    finally:
        con.close()
        if stdin_copy:
            shutil.rmtree(os.path.dirname(stdin_copy), ignore_errors=True)


def _relation_to_scan(relation: Any) -> Any:
    """A DuckDB relation lives on its own connection: read it as an Arrow stream."""
    try:
        return relation.to_arrow_table()
    except Exception:
        return relation.fetchnumpy()


def scannable(data: Any) -> Any:
    """In-memory data (a frame, Arrow table, mapping or array) as an object DuckDB scans;
    a DuckDB relation (which lives on its own connection) as an Arrow stream."""
    if isinstance(data, _duckdb().DuckDBPyRelation):
        return _relation_to_scan(data)
    return in_memory(data)[0]


def path_view(con: Any, path: str, view: str) -> CsvReader | None:
    """Create view ``view`` over a CSV or Parquet file (as a release of the file reads
    it); the CSV file's reader, or None for Parquet. Raises InputError for a missing or
    unreadable file (no line of it quoted)."""
    duckdb = _duckdb()
    try:
        return _path_source(con, path, path, view=view)
    except duckdb.Error as exc:
        raise unreadable(path, path, f"the file {Path(path).name!r}", exc) from None


def copy_stdin() -> str:
    folder = tempfile.mkdtemp(prefix="dpsense-stdin-")
    path = os.path.join(folder, "stdin.csv")
    with open(path, "wb") as out:
        shutil.copyfileobj(sys.stdin.buffer, out)
    return path


def quote(name: str) -> str:
    """A column name quoted for SQL."""
    return _quote(name)


def is_table(x: Any) -> bool:
    """True for inputs that are tables or paths rather than one column of numbers."""
    if isinstance(x, str | os.PathLike):
        return True
    kind = type(x).__name__
    module = type(x).__module__.split(".")[0]
    if module in ("pandas", "polars") and kind in ("DataFrame", "LazyFrame"):
        return True
    if module == "pyarrow" and kind == "Table":
        return True
    if module in ("duckdb", "pyspark") or kind == "JoinedTables":
        return True
    return isinstance(x, Mapping)


@contextmanager
def readable_twice(x: Any) -> Iterator[Any]:
    """``x``, or for ``"-"`` (CSV on standard input) a copy of standard input that both
    steps can read (standard input can be read once)."""
    if not (isinstance(x, str) and x == "-"):
        yield x
        return
    path = copy_stdin()
    try:
        yield path
    finally:
        shutil.rmtree(os.path.dirname(path), ignore_errors=True)
