"""The types a ``schema=`` argument declares (engine-neutral: each engine casts to them
in its own SQL, ``tables.engines.*.casts``)."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Final

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

    try_cast: str
    """The cast that gives NULL where a value does not convert ("TRY_CAST")."""
    text_type: str
    """The SQL text type ("VARCHAR")."""
    integer_types: frozenset[str]
    """The engine's names of the column types that a declared int reads exactly."""
    whole_number: str
    """SQL for the double ``{d}`` as a BIGINT when it is a whole number in the int64 range
    (``{limit}`` is 2^63), else NULL: an int declared on a column of another type."""


def fitting_cast(
    dialect: CastDialect, column: str, value: str, cast: Cast, column_type: str
) -> str:
    """SQL for a column cast to ``cast``: NULL where a value does not fit (a fraction for an
    int, more digits than the decimal holds, text that is not a number). ``column`` is the
    quoted column (cast to text as it is), ``value`` what is cast to a number, and
    ``column_type`` the engine's name of the column's own type. The engines' casts round,
    so a value fits only when it survives the cast unchanged, compared as doubles."""
    if cast.kind == "text":
        return f"CAST({column} AS {dialect.text_type})"
    d = f"{dialect.try_cast}({value} AS DOUBLE)"
    if cast.kind == "float":
        return d
    if cast.kind == "int":
        if column_type in dialect.integer_types:
            return f"{dialect.try_cast}({value} AS BIGINT)"
        return dialect.whole_number.format(d=d, limit=INT64_LIMIT)
    q = f"{dialect.try_cast}({value} AS DECIMAL({cast.precision},{cast.scale}))"
    return f"CASE WHEN CAST({q} AS DOUBLE) = {d} THEN {q} END"
