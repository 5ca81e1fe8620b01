"""The types a ``schema=`` argument declares (engine-neutral: each engine casts to them
in its own SQL, ``tables.engines.*.casts``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Final

__all__ = ["INT64_LIMIT", "Cast", "CastDialect", "ColumnType", "fitting_cast"]

INT64_LIMIT: Final = "9223372036854775808.0"  # 2^63, exact as a double


@dataclass(frozen=True)
class ColumnType:
    """What a release learns from a column's type.

    Attributes
    ----------
    name : str
        The type by its SQL name, whatever the input ("BIGINT" for numpy's and pandas'
        int64, Polars' Int64, Arrow's int64, Parquet's INT64 and Spark's LongType;
        "DECIMAL(10,2)"), so that receipts agree across formats; for the ``schema=``
        argument, its normalised text ("int", "decimal(10,2)").
    scale : int or None
        0 for integers and booleans, s for ``DECIMAL(p, s)``, None for every other type
        (no resolution).
    argument : bool
        True when the type comes from the ``schema=`` argument rather than the input.
    """

    name: str
    scale: int | None
    argument: bool = False

    @property
    def step(self) -> Fraction | None:
        """The spacing ``10**-scale`` as an exact fraction (None without a scale)."""
        return None if self.scale is None else Fraction(10) ** -self.scale

    @property
    def source(self) -> str:
        """The receipt's ``resolution_source``: "schema: BIGINT" or "schema argument: int"."""
        return f"schema argument: {self.name}" if self.argument else f"schema: {self.name}"


@dataclass(frozen=True)
class Cast:
    """One entry of the ``schema=`` argument: the type a column is cast to."""

    kind: str
    """"int", "float", "decimal" or "text"."""
    precision: int = 0
    scale: int = 0

    @property
    def text(self) -> str:
        """The normalised type ("int", "float", "decimal(10,2)")."""
        if self.kind == "decimal":
            return f"decimal({self.precision},{self.scale})"
        return self.kind

    @property
    def declared(self) -> ColumnType:
        """The column's type once cast."""
        scale = {"int": 0, "float": None, "text": None}.get(self.kind, self.scale)
        return ColumnType(self.text, scale, argument=True)


@dataclass(frozen=True)
class CastDialect:
    """What is engine-specific in the casts of :func:`fitting_cast`."""

    name: str
    """sqlglot's name of the engine's SQL dialect ("duckdb", "spark")."""
    integer_types: frozenset[str]
    """The engine's names of the column types that a declared int reads exactly."""
    whole_number: Callable[[Any, Any], Any]
    """Given the double ``d`` and ``limit`` (2^63), both sqlglot expressions: ``d`` as a
    BIGINT when it is a whole number in the int64 range, else NULL (an int declared on a
    column of another type), as a sqlglot expression."""


def fitting_cast(
    dialect: CastDialect, column: str, cast: Cast, column_type: str, *, trim: bool = False
) -> str:
    """SQL of ``dialect`` for the column named ``column`` cast to ``cast``: NULL where a
    value does not fit (a fraction for an int, more digits than the decimal holds, text
    that is not a number). The column is cast to text as it is, and to a number trimmed
    first when ``trim``; ``column_type`` is the engine's name of the column's own type.
    The engines' casts round, so a value fits only when it survives the cast unchanged,
    compared as doubles. Built with sqlglot (the column's name quoted by it)."""
    from sqlglot import expressions as exp

    def build(type_name: str) -> Any:
        return exp.DataType.build(type_name, dialect="duckdb")

    col = exp.Column(this=exp.to_identifier(column, quoted=True))
    value = exp.Trim(this=col.copy()) if trim else col.copy()
    tree: Any
    d = exp.TryCast(this=value.copy(), to=build("DOUBLE"), safe=True)
    if cast.kind == "text":
        tree = exp.Cast(this=col, to=build("VARCHAR"))
    elif cast.kind == "float":
        tree = d
    elif cast.kind == "int" and column_type in dialect.integer_types:
        tree = exp.TryCast(this=value, to=build("BIGINT"), safe=True)
    elif cast.kind == "int":
        tree = dialect.whole_number(d, exp.Literal.number(INT64_LIMIT))
    else:
        params = [
            exp.DataTypeParam(this=exp.Literal.number(n)) for n in (cast.precision, cast.scale)
        ]
        decimal = exp.DataType(this=exp.DataType.Type.DECIMAL, expressions=params)
        q = exp.TryCast(this=value, to=decimal, safe=True)
        same = exp.EQ(this=exp.Cast(this=q.copy(), to=build("DOUBLE")), expression=d)
        tree = exp.Case(ifs=[exp.If(this=same, true=q)])
    return str(tree.sql(dialect=dialect.name))
