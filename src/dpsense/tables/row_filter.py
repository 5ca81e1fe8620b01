"""A row predicate applied in the engine before contribution bounding (``where=``).

A predicate that reads one row only is a stable transformation: adding or removing a
unit's rows adds or removes at most those rows of the filtered table, so every guarantee
of the release holds for the filtered table's neighbours as for the original's
(docs/queries.md §3). Hence only row-level SQL is accepted: no aggregate, window
function, subquery or reference to another table. The text is parsed with sqlglot in
DuckDB's dialect, checked, and run by the data's engine: DuckDB as written, Spark after
``sqlglot.transpile(..., read="duckdb", write="spark")``. Error messages name the
argument and the construct, never a value of the data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dpsense.errors import InputError

__all__ = ["RowFilter", "parse_row_filter"]


@dataclass(frozen=True)
class RowFilter:
    """A parsed, checked row predicate."""

    sql: str
    """The predicate in DuckDB's dialect (as sqlglot prints it back)."""
    spark_sql: str
    """The same predicate in Spark SQL."""
    columns: tuple[str, ...]
    """The columns it reads (each must be a column of the table)."""

    def require(self, source: Any) -> None:
        """An InputError naming the column when ``source`` lacks one it reads."""
        for name in self.columns:
            source.require(name, "where")

    def duckdb_view(self, source: Any) -> None:
        """Point ``source`` (a DuckDB TableSource) at a view of its rows that pass.

        The view is checked by binding it (no row is read): an unknown function or a
        type error is an InputError here, with DuckDB's message left out (it may quote a
        value)."""
        import duckdb

        self.require(source)
        view = "dpsense_where"
        try:
            source.con.execute(
                f"CREATE TEMP VIEW {view} AS SELECT * FROM {source.view} WHERE {self.sql}"
            )
            source.con.execute(f"SELECT * FROM {view} LIMIT 0").fetchall()
        except duckdb.Error as exc:
            raise _not_evaluated(type(exc).__name__) from None
        source.view = view

    def failed(self, kind: str) -> InputError:
        """The error for a predicate that failed while the engine ran it."""
        return _not_evaluated(kind)

    def spark_frame(self, frame: Any) -> Any:
        """``frame`` (a PySpark DataFrame) with the rows that pass."""
        for name in self.columns:
            if name not in frame.columns:
                raise InputError(
                    f"The 'where' parameter reads the column {name!r}, which is not in the "
                    "Spark DataFrame. Name one of its columns."
                )
        try:
            return frame.filter(self.spark_sql)
        except Exception as exc:  # Spark's analysis errors may quote the expression only
            raise _not_evaluated(type(exc).__name__) from None


def _not_evaluated(kind: str) -> InputError:
    return InputError(
        f"The 'where' parameter could not be evaluated on the table ({kind}): check that "
        "it compares columns with values of their types and uses DuckDB SQL functions."
    )


_REFUSED = {
    "AggFunc": "an aggregate function",
    "Window": "a window function",
    "Subquery": "a subquery",
    "Select": "a subquery",
    "Exists": "a subquery",
    "Star": "'*'",
    "Placeholder": "a parameter placeholder",
}


def parse_row_filter(text: object, *, where: str = "release") -> RowFilter:
    """Parse and check ``text``, a SQL boolean expression over one row (DuckDB dialect).

    Raises
    ------
    InputError
        When it is not a string, does not parse as one expression, or uses an aggregate,
        a window function, a subquery or a column of another table.
    """
    import sqlglot
    from sqlglot import exp

    if not isinstance(text, str) or not text.strip():
        raise InputError(
            f"The 'where' parameter of {where} must be a SQL boolean expression over one "
            'row, such as "educ >= 12 AND year > 1980" (DuckDB dialect). '
            f"Got {type(text).__name__ if not isinstance(text, str) else 'an empty string'}."
        )
    try:
        tree = sqlglot.parse_one(text, read="duckdb", into=exp.Condition)
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError):
        tree = None
    if tree is None or isinstance(tree, exp.Query | exp.Command | exp.Alias):
        raise InputError(
            f"The 'where' parameter of {where} must be one SQL boolean expression over "
            'the columns of a row (DuckDB dialect), such as "educ >= 12"; it does not '
            "parse as one. Check its quotes and parentheses."
        )
    for node in tree.walk():
        for kind, what in _REFUSED.items():
            if isinstance(node, getattr(exp, kind)):
                raise InputError(
                    f"The 'where' parameter of {where} uses {what}: it must read one row "
                    "at a time (a row-level predicate). Filter with column comparisons "
                    "and row functions only."
                )
        if isinstance(node, exp.Column) and node.table:
            raise InputError(
                f"The 'where' parameter of {where} names the column {node.name!r} of "
                f"another table ({node.table!r}): use the table's own column names."
            )
    columns = tuple(dict.fromkeys(c.name for c in tree.find_all(exp.Column)))
    duck = tree.sql(dialect="duckdb")
    spark = sqlglot.transpile(duck, read="duckdb", write="spark")[0]
    return RowFilter(duck, spark, columns)
