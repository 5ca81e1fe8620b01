"""The types a ``schema=`` argument declares (engine-neutral: each engine casts to them
in its own SQL, ``tables.engines.*.casts``)."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Final

__all__ = ["INT64_LIMIT", "Cast", "ColumnType"]

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
