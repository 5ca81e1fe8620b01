"""The catalog of statistics: each one's name, class and SQL spellings, in one table.

This module imports nothing (the command line builds ``--statistic``'s help from it
without loading numpy), and everything that names statistics reads it: ``make_statistic``
and ``--statistic`` (:data:`STATISTIC_NAMES`), the package's exports, the SQL parser's
aggregates (:data:`SQL_AGGREGATES`), the report's reproducible code. Adding a statistic
is a class in this folder and one :class:`Spelling` here (docs/architecture.md, "Adding a
statistic").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = [
    "CATALOG",
    "SQL_AGGREGATES",
    "STATISTIC_NAMES",
    "Spelling",
    "class_name",
    "spelling_of",
]


@dataclass(frozen=True)
class Spelling:
    """How one statistic is named outside Python.

    Attributes
    ----------
    key : str
        Its name (``make_statistic``, ``--statistic``, the receipt's ``statistic``).
    cls : str
        Its class, as exported by ``dpsense.statistics`` and ``dpsense``.
    module : str
        The module of this folder that defines the class.
    aliases : tuple of str
        Other names ``make_statistic`` accepts for it.
    sql : tuple of str
        The SQL aggregates that release it, as messages and docs list them.
    sql_nodes : tuple of str
        The sqlglot expression classes of those aggregates.
    sql_prefix : str
        The start of a released column's default name (``var`` in ``var_wage``).
    sql_rank : int
        Its place in the SQL aggregates' list.
    """

    key: str
    cls: str
    module: str
    aliases: tuple[str, ...] = ()
    sql: tuple[str, ...] = ()
    sql_nodes: tuple[str, ...] = ()
    sql_prefix: str = ""
    sql_rank: int = 99


CATALOG: Final = (
    Spelling("count", "Count", "moments", (), ("COUNT(*)", "COUNT(col)"), ("Count",), "count", 0),
    Spelling("sum", "Sum", "moments", (), ("SUM",), ("Sum",), "sum", 1),
    Spelling("mean", "Mean", "moments", (), ("AVG",), ("Avg",), "avg", 2),
    Spelling(
        "variance",
        "Variance",
        "variance",
        ("var",),
        ("VAR_POP", "VARIANCE"),
        ("Variance", "VariancePop"),
        "var",
        5,
    ),
    Spelling(
        "std",
        "Std",
        "variance",
        ("stddev",),
        ("STDDEV_POP", "STDDEV"),
        ("Stddev", "StddevPop", "StddevSamp"),
        "stddev",
        6,
    ),
    Spelling("median", "Median", "quantile", (), ("MEDIAN",), ("Median",), "median", 3),
    Spelling(
        "quantile",
        "Quantile",
        "quantile",
        (),
        ("QUANTILE_CONT", "QUANTILE_DISC", "PERCENTILE_CONT"),
        ("PercentileCont", "PercentileDisc", "Quantile"),
        "quantile",
        4,
    ),
    Spelling("quantiles", "Quantiles", "quantiles"),  # QUANTILE_CONT(col, [p, q])
    Spelling("trimmed-mean", "TrimmedMean", "trimmed", ("trimmed",)),
)
"""Every statistic a name can build, in the order ``--statistic``'s help lists them."""

STATISTIC_NAMES: Final = tuple(s.key for s in CATALOG)
"""The statistics by name (``make_statistic``, ``--statistic``)."""

SQL_AGGREGATES: Final = tuple(f for s in sorted(CATALOG, key=lambda s: s.sql_rank) for f in s.sql)
"""The aggregates a query may use (docs/sql.md)."""


def spelling_of(name: str) -> Spelling | None:
    """The catalog's entry of a name or alias (case, ``_`` and spaces forgiven), or None."""
    key = name.strip().lower().replace("_", "-")
    for s in CATALOG:
        if key == s.key or key in s.aliases:
            return s
    return None


def class_name(key: str) -> str | None:
    """The class of the statistic named ``key`` (``'Variance'`` for ``'variance'``)."""
    s = spelling_of(key)
    return None if s is None else s.cls
