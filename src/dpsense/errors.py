"""Error types of dpsense.

Every error a user can trigger derives from :class:`DPSenseError`. Messages name the
parameter that is wrong and say what to do; they never contain data values.
"""

from __future__ import annotations

import math
import warnings

__all__ = [
    "DECLARE_TYPE_WAY",
    "LARGE_EPSILON",
    "BudgetExceededError",
    "DPSenseError",
    "DPSenseWarning",
    "EvaluationLimitError",
    "FarBoundsWarning",
    "InputError",
    "LargeEpsilonWarning",
    "keys_columns",
    "keys_of_another_type",
    "keys_repeated",
    "missing_column",
    "missing_values",
    "not_numbers",
    "warn_large_epsilon",
]

LARGE_EPSILON = 10.0
"""Above this epsilon a release is made, with a :class:`LargeEpsilonWarning`."""


class DPSenseWarning(UserWarning):
    """Base class of the warnings dpsense gives (the command line prints them as one
    ``warning:`` line each)."""


class LargeEpsilonWarning(DPSenseWarning):
    """A release's epsilon is above :data:`LARGE_EPSILON`: allowed, but the guarantee then
    says little."""


def missing_values(subject: str, *, plural: bool = False) -> InputError:
    """The one message of missing values in the data a release reads, whatever the path
    (a file, a frame, a query's columns, an array): what, and the way out. ``subject``
    names the column(s), e.g. "The column 'age' of the file 'survey.csv'"."""
    verb = "contain" if plural else "contains"
    return InputError(
        f"{subject} {verb} missing values (empty cells, nulls or NaN): pass nulls='drop' to "
        "drop those rows, or clean them first (the guarantee is about the cleaned data)."
    )


def keys_columns(subject: str, by: list[str], given: list[str], way: str) -> InputError:
    """The one message of public keys whose columns are not the group columns (a keys
    table or file that lacks one, inline keys that name another): which columns the
    groups have, which the keys have, and how to write them (``way``)."""
    want = ", ".join(repr(b) for b in by)
    have = ", ".join(repr(g) for g in given) or "none"
    return InputError(f"{subject} must have the group columns {want}; it has {have}: {way}.")


def type_word(engine_type: str) -> str:
    """An engine's type name (DuckDB's BIGINT, Spark's bigint) in the words of the
    ``schema`` parameter: 'int', 'float', 'decimal(p,s)', 'text' (others lower-cased)."""
    name = engine_type.strip().lower()
    if name in ("tinyint", "smallint", "integer", "int", "bigint", "hugeint", "long", "short"):
        return "int"
    if name in ("double", "float", "real"):
        return "float"
    if name in ("varchar", "string", "text"):
        return "text"
    return name  # decimal(p,s), date, timestamp, boolean


def keys_of_another_type(by: list[str], types: list[str]) -> InputError:
    """The one message of public keys that do not fit the group columns' types."""
    shown = ", ".join(f"{b}: {type_word(t)}" for b, t in zip(by, types, strict=True))
    return InputError(
        f"Some keys cannot be read as values of the group columns ({shown}); pass keys of "
        "those types."
    )


def keys_repeated() -> InputError:
    """The one message of public keys that list a group twice."""
    return InputError(
        "The 'keys' parameter lists a group more than once (after reading the keys as values "
        "of the group columns' types); give each group once."
    )


def missing_column(name: str, where: str, columns: list[str], argument: str) -> InputError:
    """The one message of a column the data does not hold: which, where, the columns it
    does hold (names only, at most 40) and the parameter to pass one of them as."""
    shown = ", ".join(repr(c) for c in columns[:40])
    if len(columns) > 40:
        shown += f", ... ({len(columns) - 40} more)"
    way = (
        f"Check the names in {argument}=..."
        if argument == "schema"
        else f"Pass one of them as {argument}=..."
    )
    return InputError(f"The column {name!r} is not in {where}; its columns are {shown}. {way}")


def not_numbers(subject: str, column: str) -> InputError:
    """The one message of text (or another non-number) in a numeric column."""
    return InputError(
        f"{subject} must be numeric, but some entries are not numbers (text or other "
        "values): clean or drop those rows, or choose a numeric column; or declare its "
        f"type, schema={{{column!r}: 'float'}}, so that a value that does not fit drops its "
        "row."
    )


DECLARE_TYPE_WAY = (
    r"; or declare its type, schema=\{[^}]*\}, so that a value that does not fit drops its row"
)
"""The way out of :func:`not_numbers` that needs a ``schema`` parameter (a pattern):
the command line leaves it out where a command has no ``--schema``."""


class FarBoundsWarning(DPSenseWarning):
    """Bounds found privately reach beyond 2^50: the column probably holds infinities or
    sentinel values."""


def warn_large_epsilon(epsilon: object, where: str) -> None:
    """Warn when a release's total ``epsilon`` is above :data:`LARGE_EPSILON` (a public
    parameter: the warning never depends on the data)."""
    try:
        value = float(epsilon)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return  # the release's own check says what is wrong
    if math.isfinite(value) and value > LARGE_EPSILON:
        factor = f"e^{value:g}" + (f" ≈ {math.exp(value):.3g}" if value <= 700 else "")
        warnings.warn(
            f"The 'epsilon' parameter of {where} is {value:g}, above {LARGE_EPSILON:g}: one "
            f"person may make an output up to {factor} times more likely, so the "
            "guarantee says little; an epsilon of about 1 (at most a few) is a meaningful "
            "release.",
            LargeEpsilonWarning,
            stacklevel=3,
        )


class DPSenseError(Exception):
    """Base class of every error raised by dpsense."""


class InputError(DPSenseError, ValueError):
    """A bad argument or bad data (also a :class:`ValueError`).

    The message names the parameter and the expected form; it never echoes data values.
    """


class EvaluationLimitError(InputError):
    """The brute-force explorer would evaluate f more often than its limit allows.

    ``needed`` is the number of evaluations the request needs (a function of the universe,
    the data size and the distance: the explorer is a non-private tool).
    """

    def __init__(self, message: str, needed: float) -> None:
        super().__init__(message)
        self.needed = needed


class BudgetExceededError(DPSenseError):
    """A privacy ledger or accountant refused a charge.

    Parameters
    ----------
    remaining : tuple of float
        The (epsilon, delta) budget that remains.
    requested : tuple of float
        The (epsilon, delta) that was asked for.
    """

    def __init__(
        self,
        remaining: tuple[float, float],
        requested: tuple[float, float],
        message: str | None = None,
    ) -> None:
        self.remaining = remaining
        self.requested = requested
        if message is None:
            message = (
                f"privacy budget exceeded: requested epsilon={requested[0]:g}, "
                f"delta={requested[1]:g} but only epsilon={remaining[0]:g}, "
                f"delta={remaining[1]:g} remain. Ask for less, or start a new budget."
            )
        super().__init__(message)
