"""Error types of dpsense.

Every error a user can trigger derives from :class:`DPSenseError`. Messages name the
parameter that is wrong and say what to do; they never contain data values.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar, Generic, TypeVar

__all__ = [
    "ANY",
    "LARGE_EPSILON",
    "MANY",
    "Assign",
    "BudgetExceededError",
    "DPSenseError",
    "DPSenseWarning",
    "Door",
    "EvaluationLimitError",
    "FarBoundsWarning",
    "InputError",
    "Keys",
    "LargeEpsilonWarning",
    "Message",
    "Name",
    "OnlyWith",
    "Param",
    "Part",
    "Schema",
    "Units",
    "keys_columns",
    "keys_of_another_type",
    "keys_repeated",
    "missing_column",
    "missing_values",
    "not_numbers",
    "undeclared_filter_columns",
    "warn_large_epsilon",
]

LARGE_EPSILON = 10.0
"""Above this epsilon a release is made, with a :class:`LargeEpsilonWarning`."""


# ----------------------------------------------------------------- structured messages
#
# A message is text and typed parts (a parameter, an assignment, a mapping, a door, a
# clause that needs an option). ``str()`` of a message is its Python text; the command
# line renders the same parts as its options (``dpsense.cli.messages.cli_text``). No
# front end rewrites another's text.

ANY = "..."
"""The value of an :class:`Assign` that stands for any value: ``delta=...``."""
MANY = "[...]"
"""The value of an :class:`Assign` that stands for a list: ``keys=[...]``."""

UnitPath = str | tuple[str, str, str]
V = TypeVar("V")
"""A privacy unit: a column, or (column, table, key column) reaching one."""


@dataclass(frozen=True)
class Param:
    """A parameter named in a sentence: ``The 'delta' parameter of bounded_ls_mean``
    (``of`` a function), ``The 'dof' option of the smooth method`` (``method``), ``The
    'ids' of sample_and_aggregate`` (no ``word``: never an option)."""

    name: str
    of: str = ""
    word: str = "parameter"
    method: str = ""
    capital: bool = True

    def python(self) -> str:
        return f"{self.named()}{self.where()}"

    def where(self) -> str:
        """`` of the smooth method``, `` of bounded_ls_mean`` or nothing."""
        if self.method:
            return f" of the {self.method} method"
        return f" of {self.of}" if self.of else ""

    def named(self) -> str:
        """``The 'delta' parameter`` (``The 'ids'`` without a ``word``), without ``of``."""
        word = f" {self.word}" if self.word else ""
        return f"{'The' if self.capital else 'the'} '{self.name}'{word}"


@dataclass(frozen=True)
class Name:
    """A parameter's bare name: ``max_rows_per_unit`` (``'max_rows_per_unit'`` quoted)."""

    name: str
    quoted: bool = False

    def python(self) -> str:
        return f"'{self.name}'" if self.quoted else self.name


@dataclass(frozen=True)
class Assign:
    """A parameter given a value: ``method='ksw'`` (``quoted``), ``approx_delta=1e-5``,
    ``delta=...`` (:data:`ANY`), ``keys=[...]`` (:data:`MANY`); ``cli`` is the value as an
    option takes it where that differs (``p=(0.1, 0.9)`` is ``--p 0.1,0.9``, a count
    ``1_000`` is ``1000``)."""

    name: str
    value: str = ANY
    quoted: bool = False
    cli: str | None = None

    @classmethod
    def of(cls, name: str, value: object) -> Assign:
        """``name={value!r}``: a text quoted, anything else as its repr."""
        return cls(name, value, quoted=True) if isinstance(value, str) else cls(name, repr(value))

    def python(self) -> str:
        return f"{self.name}='{self.value}'" if self.quoted else f"{self.name}={self.value}"


@dataclass(frozen=True)
class _Entries(Generic[V]):
    """A keyword argument whose value is a dict, written ``keyword={...}``."""

    entries: tuple[tuple[str, V], ...]

    keyword: ClassVar[str]

    def python(self) -> str:
        return f"{self.keyword}={dict(self.entries)!r}"


@dataclass(frozen=True)
class Units(_Entries[UnitPath]):
    """The privacy unit of each table: ``privacy_unit={'orders': 'cid'}``."""

    keyword = "privacy_unit"


@dataclass(frozen=True)
class Keys:
    """Public keys of the named group columns: ``keys={'year': [...]}``."""

    names: tuple[str, ...]

    def python(self) -> str:
        return "keys={" + ", ".join(f"{n!r}: [...]" for n in self.names) + "}"


@dataclass(frozen=True)
class Schema(_Entries[str]):
    """Declared column types: ``schema={'age': 'int'}``."""

    keyword = "schema"


@dataclass(frozen=True)
class Door:
    """A function of the library (``ds.private_bounds``, with its arguments as written
    in ``call``); a front end may name a command instead, of ``subject`` (a path)."""

    name: str
    call: str = ""
    subject: str = ""

    def python(self) -> str:
        return self.name + self.call


@dataclass(frozen=True)
class OnlyWith:
    """A clause that holds only where the front end has the ``option`` (a parameter's
    name): the way out of :func:`not_numbers` through ``schema``."""

    option: str
    parts: tuple[Part, ...]

    def python(self) -> str:
        return "".join(p if isinstance(p, str) else p.python() for p in self.parts)


Part = str | Param | Name | Assign | Units | Keys | Schema | Door | OnlyWith
"""One piece of a :class:`Message`: text, or a token each front end renders."""


@dataclass(frozen=True, init=False)
class Message:
    """A message as parts; ``str()`` gives its Python text."""

    parts: tuple[Part, ...]

    def __init__(self, *parts: Part | Message) -> None:
        flat: list[Part] = []
        for part in parts:
            flat.extend(part.parts if isinstance(part, Message) else (part,))
        object.__setattr__(self, "parts", tuple(flat))

    def __str__(self) -> str:
        return "".join(p if isinstance(p, str) else p.python() for p in self.parts)

    @staticmethod
    def joined(parts: Iterable[Part], separator: str) -> Message:
        """``parts`` with ``separator`` between them (``method='a', method='b'``)."""
        out: list[Part] = []
        for i, part in enumerate(parts):
            out.extend((separator, part) if i else (part,))
        return Message(*out)


class DPSenseWarning(UserWarning):
    """Base class of the warnings dpsense gives (the command line prints them as one
    ``warning:`` line each, its :attr:`message` in its own words)."""

    message: Message

    def __init__(self, *parts: Part | Message) -> None:
        self.message = Message(*parts)
        super().__init__(str(self.message))


class LargeEpsilonWarning(DPSenseWarning):
    """A release's epsilon is above :data:`LARGE_EPSILON`: allowed, but the guarantee then
    says little."""


def missing_values(subject: str, *, plural: bool = False) -> InputError:
    """The one message of missing values in the data a release reads, whatever the path
    (a file, a frame, a query's columns, an array): what, and the way out. ``subject``
    names the column(s), e.g. "The column 'age' of the file 'survey.csv'"."""
    verb = "contain" if plural else "contains"
    return InputError(
        f"{subject} {verb} missing values (empty cells, nulls or NaN): pass ",
        Assign("nulls", "drop", quoted=True),
        " to drop those rows, or clean them first (the guarantee is about the cleaned data).",
    )


def keys_columns(
    subject: Part | Message, by: list[str], given: list[str], way: Part | Message
) -> InputError:
    """The one message of public keys whose columns are not the group columns (a keys
    table or file that lacks one, inline keys that name another): which columns the
    groups have, which the keys have, and how to write them (``way``)."""
    want = ", ".join(repr(b) for b in by)
    have = ", ".join(repr(g) for g in given) or "none"
    return InputError(subject, f" must have the group columns {want}; it has {have}: ", way, ".")


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
        Param("keys"),
        " lists a group more than once (after reading the keys as values "
        "of the group columns' types); give each group once.",
    )


def missing_column(name: str, where: str, columns: list[str], argument: str) -> InputError:
    """The one message of a column the data does not hold: which, where, the columns it
    does hold (names only, at most 40) and the parameter to pass one of them as."""
    shown = ", ".join(repr(c) for c in columns[:40])
    if len(columns) > 40:
        shown += f", ... ({len(columns) - 40} more)"
    way = "Check the names in " if argument == "schema" else "Pass one of them as "
    return InputError(
        f"The column {name!r} is not in {where}; its columns are {shown}. {way}",
        Assign(argument),
    )


def undeclared_filter_columns(columns: list[str], source: str) -> InputError:
    """The error of a filter (or computed column) that reads ``columns`` of ``source``
    (a phrase: the table and why their types are not public) without a declared type:
    whether it binds would depend on the values."""
    example = Schema(tuple((c, "TYPE") for c in columns[:2]))
    return InputError(
        Param("where", word="filter"),
        f" reads {', '.join(repr(c) for c in columns)} from {source} and so are not "
        "public: declare the type of each column the filter reads, e.g. ",
        example,
        " with TYPE 'int', 'float', 'decimal(p,s)' or 'text'.",
    )


def not_numbers(subject: str, column: str) -> InputError:
    """The one message of text (or another non-number) in a numeric column."""
    declare = OnlyWith(
        "schema",
        (
            "; or declare its type, ",
            Schema(((column, "float"),)),
            ", so that a value that does not fit drops its row",
        ),
    )
    return InputError(
        f"{subject} must be numeric, but some entries are not numbers (text or other "
        "values): clean or drop those rows, or choose a numeric column",
        declare,
        ".",
    )


class FarBoundsWarning(DPSenseWarning):
    """Bounds found privately reach beyond 2^50: the column probably holds infinities or
    sentinel values."""


class ClippingWarning(FarBoundsWarning):
    """Bounds found privately are absurd for the release they serve: clipping may dominate
    its value (``Release.clipping_may_dominate``). Like :class:`FarBoundsWarning` it reads
    released values only (post-processing)."""


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
            LargeEpsilonWarning(
                Param("epsilon", of=where),
                f" is {value:g}, above {LARGE_EPSILON:g}: one person may make an output up "
                f"to {factor} times more likely, so the guarantee says little; an epsilon of "
                "about 1 (at most a few) is a meaningful release.",
            ),
            stacklevel=3,
        )


class DPSenseError(Exception):
    """Base class of every error raised by dpsense.

    Built from a message's parts (text and tokens, see :class:`Message`), kept as
    :attr:`message`; ``str(error)`` is its Python text.
    """

    message: Message

    def __init__(self, *parts: Part | Message) -> None:
        self.message = Message(*parts)
        if parts:
            super().__init__(str(self.message))
        else:
            super().__init__()


class InputError(DPSenseError, ValueError):
    """A bad argument or bad data (also a :class:`ValueError`).

    The message names the parameter and the expected form; it never echoes data values.
    """


class EvaluationLimitError(InputError):
    """The brute-force explorer would evaluate f more often than its limit allows.

    ``needed`` is the number of evaluations the request needs (a function of the universe,
    the data size and the distance: the explorer is a non-private tool).
    """

    def __init__(self, message: str | Message, needed: float) -> None:
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
        message: str | Message | None = None,
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
