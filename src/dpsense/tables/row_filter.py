"""A row predicate applied in the engine before contribution bounding (``where=``, SQL WHERE).

A predicate that reads one row only is a stable transformation: adding or removing a
unit's rows adds or removes at most those rows of the filtered table, so every guarantee
of the release holds for the filtered table's neighbours as for the original's
(docs/queries.md §3). That holds only if the predicate is **total**: if evaluating it on
one row could raise, the error would end the release exactly when that row is present,
and whether a release happens would itself reveal a person (docs/entry_points.md).

So one allow-list of syntax serves ``where=`` and SQL's WHERE (:func:`refused_reason`):
column references, literals, comparisons, boolean connectives, IN, BETWEEN, LIKE/ILIKE
with a literal pattern, IS NULL, arithmetic, CASE/IF/COALESCE, ABS, LOWER/UPPER/LENGTH,
ROUND/FLOOR/CEIL, CAST and the date parts. Each is either total, or evaluated so that an
error becomes NULL:

* DuckDB: every operation that can raise on a value (arithmetic, which overflows or divides
  by zero; ABS, ROUND, FLOOR, CEIL, which overflow) is wrapped in ``TRY(...)``, every CAST
  is a ``TRY_CAST``, and the whole predicate is wrapped in ``TRY(...)`` as well (an implicit
  cast is covered too);
* Spark: arithmetic becomes ``try_add``/``try_subtract``/``try_multiply``/``try_divide``/
  ``try_mod``, and the filter is parsed and analysed with ANSI mode off, under which a
  failed cast (explicit or implicit), an integer division by zero and an overflow of ABS,
  ROUND, FLOOR or CEIL give NULL or a value instead of raising.

A NULL predicate keeps no row. Anything outside the list is refused from the text alone.
Binding errors (a column compared with a value of another type) depend only on the text and
the declared types, never on values; they are checked before any row is read. Error
messages name the argument and the construct, never a value of the data.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any, Final

from dpsense.errors import InputError, Param

if TYPE_CHECKING:
    from sqlglot import expressions as exp

__all__ = [
    "ALLOWED_SUMMARY",
    "RowFilter",
    "parse_row_filter",
    "refused_reason",
    "total_sql",
    "total_tree",
]

ALLOWED_SUMMARY: Final = (
    "comparisons (=, <, IN, BETWEEN, LIKE with a quoted pattern, IS NULL) joined by AND, "
    "OR, NOT, with arithmetic (+ - * / // %), CASE, IF, COALESCE, CAST, ABS, LOWER, UPPER, "
    "LENGTH, ROUND, FLOOR, CEIL, EXTRACT, YEAR, MONTH, DAY"
)
"""The allowed syntax, in words, for messages and docs."""


_STRUCTURE: Final = (
    "Column",
    "Identifier",
    "Literal",
    "Boolean",
    "Null",
    "Paren",
    "Tuple",
    "And",
    "Or",
    "Not",
    "EQ",
    "NEQ",
    "NullSafeEQ",
    "NullSafeNEQ",
    "GT",
    "GTE",
    "LT",
    "LTE",
    "Is",
    "In",
    "Between",
    "Like",
    "ILike",
    "Escape",
    "Lower",
    "Upper",
    "Length",
    "Coalesce",
    "Case",
    "If",
    "Cast",
    "TryCast",
    "DataType",
    "DataTypeParam",
    "Var",
    "Extract",
    "Year",
    "Month",
    "Day",
)
"""Scalar syntax a row predicate may use (sqlglot's node names): a row-level predicate
reads one row at a time."""

_PARTIAL: Final = (
    "Add",
    "Sub",
    "Mul",
    "Div",
    "IntDiv",
    "Mod",
    "Neg",
    "Abs",
    "Round",
    "Floor",
    "Ceil",
)
"""Operations that can raise on some value (overflow, division by zero): made total."""

_SPARK_TRY: Final = {
    "Add": "try_add",
    "Sub": "try_subtract",
    "Mul": "try_multiply",
    "Div": "try_divide",
    "Mod": "try_mod",
}
"""Spark's error-free forms of the partial binary operations."""


@cache
def _nodes() -> tuple[tuple[type[Any], ...], tuple[type[Any], ...], dict[type[Any], str]]:
    """(allowed structure, partial operations made total, Spark's try_ forms) as sqlglot's
    classes: resolved on first use so that ``import dpsense`` does not import sqlglot."""
    from sqlglot import expressions as exp

    structure = tuple(getattr(exp, name) for name in _STRUCTURE)
    partial = tuple(getattr(exp, name) for name in _PARTIAL)
    spark = {getattr(exp, name): form for name, form in _SPARK_TRY.items()}
    return structure, partial, spark


def function_name(node: exp.Expression) -> str:
    """The SQL name of a node for a message (a function's name, else its kind)."""
    from sqlglot import expressions as exp

    if isinstance(node, exp.Anonymous):
        return str(node.name).upper()
    if isinstance(node, exp.Func):
        return str(node.sql_name())
    if isinstance(node, exp.Binary):  # an operator, as it is written: >>, &
        with contextlib.suppress(Exception):  # sqlglot may not print every operator
            text = type(node)(this=exp.column("a"), expression=exp.column("b")).sql()
            if text.startswith("a ") and text.endswith(" b"):
                return text[2:-2]
    return str(node.key).upper()


def refused_reason(node: Any) -> str | None:
    """Why ``node`` may not appear in a row predicate (a phrase after "uses"), or None.

    Subqueries, aggregates and window functions read other rows; other functions and
    syntax are outside the allow-list of total row-level operations."""
    from sqlglot import expressions as exp

    structure, partial, _ = _nodes()
    if isinstance(node, exp.Subquery | exp.Select | exp.Exists) or (
        not isinstance(node, exp.Column | exp.Identifier) and node.args.get("query")
    ):
        return "a subquery (a subquery over private data)"
    if isinstance(node, exp.Window):
        return "a window function"
    if isinstance(node, exp.AggFunc):
        return f"the aggregate {node.key.upper()}"
    if isinstance(node, exp.Star):
        return "'*'"
    if isinstance(node, exp.Placeholder):
        return "a parameter placeholder"
    if isinstance(node, exp.Like | exp.ILike) and not _is_text_literal(node.expression):
        return "LIKE with a pattern that is not a quoted text"
    if isinstance(node, exp.Escape) and not _is_text_literal(node.expression):
        return "an ESCAPE that is not a quoted text"
    if not isinstance(node, structure + partial):
        return function_name(node)
    return None


def _is_text_literal(node: exp.Expression | None) -> bool:
    from sqlglot import expressions as exp

    return isinstance(node, exp.Literal) and node.is_string


def total_sql(tree: Any, dialect: str) -> str:
    """``tree`` (an allowed predicate) as SQL of ``dialect`` ("duckdb" or "spark") that
    cannot raise on any row: see the module docstring."""
    return str(total_tree(tree, dialect).sql(dialect=dialect))


def total_tree(tree: Any, dialect: str) -> Any:
    """``tree`` (an allowed predicate) as a sqlglot tree that, emitted in ``dialect``
    ("duckdb" or "spark"), cannot raise on any row (:func:`total_sql`)."""
    from sqlglot import expressions as exp

    _, partial, spark_try = _nodes()

    def duck(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Cast) and not isinstance(node, exp.TryCast):
            return exp.TryCast(this=node.this, to=node.args["to"])
        if isinstance(node, partial):
            return exp.Try(this=node)
        return node

    def spark(node: exp.Expression) -> exp.Expression:
        name = spark_try.get(type(node))
        if name is not None and isinstance(node, exp.Binary):
            return exp.Anonymous(this=name, expressions=[node.this, node.expression])
        if isinstance(node, exp.Neg) and not (
            isinstance(node.this, exp.Literal) and node.this.is_number
        ):
            # a negated column or expression can overflow; a negated number is a literal
            # (kept as one: ROUND's scale, say, takes only a constant)
            zero = exp.Literal.number(0)
            return exp.Anonymous(this="try_subtract", expressions=[zero, node.this])
        return node

    if dialect == "duckdb":
        inner = _bottom_up(tree.copy(), duck)
        return exp.Try(this=exp.Paren(this=inner))
    return _bottom_up(tree.copy(), spark)


def _bottom_up(tree: Any, rewrite: Any) -> Any:
    """``tree`` with ``rewrite`` applied to every node, children before their parents (so
    an operation inside another is rewritten too)."""
    from sqlglot import expressions as exp

    root = tree
    for node in reversed(list(tree.walk(bfs=True))):
        if node is root:
            root = rewrite(node)
            continue
        placeholder = exp.Null()
        node.replace(placeholder)
        placeholder.replace(rewrite(node))
    return root


@dataclass(frozen=True)
class RowFilter:
    """A parsed, checked row predicate."""

    sql: str
    """The predicate in DuckDB's dialect, made total (see the module docstring)."""
    spark_sql: str
    """The same predicate in Spark SQL, made total."""
    columns: tuple[str, ...]
    """The columns it reads (each must be a column of the table)."""
    text: str = ""
    """The predicate as the user wrote it (DuckDB dialect, printed back by sqlglot)."""
    tree: Any = field(default=None, compare=False, repr=False)
    """``sql`` as its sqlglot tree (built into the view's SQL; None: parsed from ``sql``)."""
    computed: tuple[Any, ...] = ()
    """The computed columns added after the predicate (``tables.row_map.Computed``; an
    empty ``sql`` then means no predicate)."""

    def require(self, source: Any) -> None:
        """An InputError naming the column when ``source`` lacks one it reads."""
        for name in self.columns:
            source.require(name, "where")

    def duckdb_view(self, source: Any) -> None:
        """Point ``source`` (a DuckDB TableSource) at a view of its rows that pass.

        The view is checked by binding it (no row is read): an unknown function or a
        type error is an InputError here, with DuckDB's message left out (it may quote a
        value). Binding depends on the text and the columns' declared types only."""
        import duckdb
        import sqlglot

        from dpsense.data.sql_build import create_view, duckdb_sql, star, table
        from dpsense.tables.row_map import duckdb_computed

        self.require(source)
        view = "dpsense_where"
        if self.sql:
            tree = self.tree or sqlglot.parse_one(self.sql, read="duckdb")
            try:
                source.con.execute(create_view(view, star(table(source.view), tree.copy())))
                source.con.execute(duckdb_sql(star(table(view)).limit(0))).fetchall()
            except duckdb.Error as exc:
                raise _not_evaluated(type(exc).__name__) from None
            source.view = view
        if self.computed:
            duckdb_computed(source, self.computed)

    def failed(self, kind: str) -> InputError:
        """The error for a predicate that failed while the engine ran it. A total
        predicate cannot fail on a value, so this is reached only on an engine fault; its
        text names no value."""
        return _not_evaluated(kind)

    def spark_frame(self, frame: Any) -> Any:
        """``frame`` (a PySpark DataFrame) with the rows that pass, analysed with ANSI
        mode off so that no value can make it raise."""
        for name in self.columns:
            if name not in frame.columns:
                raise InputError(
                    Param("where"),
                    f" reads the column {name!r}, which is not in the "
                    "Spark DataFrame. Name one of its columns.",
                )
        if not self.sql:
            return frame  # computed columns only: added after the casts (spark_computed)
        try:
            with _ansi_off(frame.sparkSession):
                return frame.filter(self.spark_sql)
        except Exception as exc:  # Spark's analysis errors may quote the expression only
            raise _not_evaluated(type(exc).__name__) from None

    def spark_computed(self, source: Any) -> None:
        """``source`` (a SparkSource, its casts applied) with the computed columns added
        (``tables.row_map.spark_computed``)."""
        from dpsense.tables.row_map import spark_computed

        if not self.computed:
            return
        from dpsense.tables.row_map import not_evaluated

        try:
            spark_computed(source, self.computed, _ansi_off)
        except InputError:
            raise
        except Exception as exc:  # Spark's analysis errors may quote the expression only
            raise not_evaluated(self.computed, type(exc).__name__) from None


@contextmanager
def _ansi_off(session: Any) -> Iterator[None]:
    """Spark's ANSI mode off while an expression is parsed and analysed (each operation
    records the mode it was built under), restored afterwards."""
    key = "spark.sql.ansi.enabled"
    before = session.conf.get(key, None)
    session.conf.set(key, "false")
    try:
        yield
    finally:
        if before is None:
            session.conf.unset(key)
        else:
            session.conf.set(key, before)


def _not_evaluated(kind: str) -> InputError:
    return InputError(
        Param("where"),
        f" could not be evaluated on the table ({kind}): check that "
        "it compares columns with values of their declared types and uses only "
        f"{ALLOWED_SUMMARY}.",
    )


def parse_row_filter(text: object, *, where: str = "release") -> RowFilter:
    """Parse and check ``text``, a SQL boolean expression over one row (DuckDB dialect).

    Raises
    ------
    InputError
        When it is not a string, does not parse as one expression, or uses anything
        outside the allow-list (an aggregate, a window function, a subquery, a column of
        another table, a function that is not total).
    """
    import sqlglot
    from sqlglot import expressions as exp

    if not isinstance(text, str) or not text.strip():
        raise InputError(
            Param("where", of=where),
            f" must be a SQL boolean expression over one "
            'row, such as "educ >= 12 AND year > 1980" (DuckDB dialect). '
            f"Got {type(text).__name__ if not isinstance(text, str) else 'an empty string'}.",
        )
    try:
        tree = sqlglot.parse_one(text, read="duckdb", into=exp.Condition)
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError):
        tree = None
    if tree is None or isinstance(tree, exp.Query | exp.Command | exp.Alias):
        raise InputError(
            Param("where", of=where),
            " must be one SQL boolean expression over "
            'the columns of a row (DuckDB dialect), such as "educ >= 12"; it does not '
            "parse as one. Check its quotes and parentheses.",
        )
    for node in tree.walk():
        reason = refused_reason(node)
        if reason is not None:
            raise InputError(
                Param("where", of=where),
                f" uses {reason}, which is not supported: "
                f"it must read one row at a time with {ALLOWED_SUMMARY}.",
            )
        if isinstance(node, exp.Column) and node.table:
            raise InputError(
                Param("where", of=where),
                f" names the column {node.name!r} of "
                f"another table ({node.table!r}): use the table's own column names.",
            )
    columns = tuple(dict.fromkeys(c.name for c in tree.find_all(exp.Column)))
    duck = total_tree(tree, "duckdb")
    return RowFilter(
        str(duck.sql(dialect="duckdb")),
        total_sql(tree, "spark"),
        columns,
        text=str(tree.sql(dialect="duckdb")),
        tree=duck,
    )
