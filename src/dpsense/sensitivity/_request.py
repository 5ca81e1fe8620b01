"""Validated arguments of one exploration of the brute-force sensitivity explorer.

Package-private: :func:`_validate` checks the arguments of ``empirical_sensitivity`` and
``empirical_sensitivity_profile`` (an :class:`_Arguments`) and turns the data and universe
into count vectors over the sorted distinct values (a :class:`_Request`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from dpsense._arrays import FloatArray, as_data
from dpsense.errors import Assign, InputError, Param
from dpsense.neighbours import Neighbours, validate_neighbours
from dpsense.params import check_int
from dpsense.sensitivity._enumeration import BoolArray, IntArray

_NO_LIMIT: Final = 1 << 40
"""Per-value count limit used where the model imposes none (the domain model)."""


# --------------------------------------------------------------------------- validation


def _fail(name: str, where: str, expected: str, got: object) -> InputError:
    return InputError(f"The '{name}' parameter of {where} must be {expected}. Got {got!r} instead.")


def _choice(value: object, name: str, where: str, options: tuple[str, ...]) -> str:
    if isinstance(value, str) and value.strip().lower() in options:
        return value.strip().lower()
    expected = " or ".join(repr(o) for o in options)
    raise _fail(name, where, expected, value)


def _optional_bool(value: object, name: str, where: str) -> bool | None:
    if value is None or isinstance(value, bool | np.bool_):
        return None if value is None else bool(value)
    raise _fail(name, where, "True, False or None", value)


@dataclass(frozen=True)
class _Request:
    """Validated arguments of one exploration."""

    f: Any
    values: FloatArray  # V: sorted distinct values
    x: IntArray  # counts of the data over V
    n: int  # number of records in the data
    addable: BoolArray  # values that may be added (domain: the universe values)
    pop: IntArray | None  # population counts over V (population model only)
    hamming: int
    relation: Neighbours
    scope: str
    distance: int
    min_size: int
    max_evaluations: int
    progress: bool | None
    vectorized: bool | None

    @property
    def upper(self) -> IntArray:
        """Largest allowed count of each value in any dataset."""
        if self.pop is not None:
            return self.pop
        return np.full(self.values.shape[0], _NO_LIMIT, dtype=np.int64)


@dataclass(frozen=True, kw_only=True)
class _Arguments:
    """The arguments of one exploration as the caller passed them (not yet checked)."""

    where: str
    f: object
    data: object
    universe: object
    hamming: object
    neighbours: object
    scope: object = "local"
    model: object
    distance: object
    min_size: object
    max_evaluations: object
    progress: object
    vectorized: object


@dataclass(frozen=True)
class _Counts:
    """The data (and, for the population model, the population) as counts over V."""

    values: FloatArray  # V: sorted distinct values (not yet cast to float64)
    x: IntArray
    addable: BoolArray
    pop: IntArray | None


def _check_f(f: object, where: str) -> None:
    if not callable(f) and not hasattr(f, "evaluate_batch"):
        raise InputError(
            Param("f", of=where),
            f" must be a callable that maps a 1-D array of "
            f"records to a number (or a dpsense statistic). Got an object of type "
            f"{type(f).__name__} instead.",
        )


def _check_distance(distance: object, scope: str, where: str) -> int:
    k = check_int(distance, "distance", where=where, minimum=0)
    if k > 0 and scope == "global":
        raise InputError(
            Param("distance", of=where),
            f" must be 0 with scope='global' (global "
            f"sensitivity already maximises over every dataset). Got {k!r} instead.",
        )
    return k


def _check_min_size(min_size: object, f: object, where: str) -> int:
    if min_size is None:
        return 0 if hasattr(f, "evaluate_batch") else 1
    return check_int(min_size, "min_size", where=where, minimum=0)


def _population_counts(xs: FloatArray, us: FloatArray, where: str) -> _Counts:
    n = int(xs.shape[0])
    values, pop_counts = np.unique(us, return_counts=True)
    pop = pop_counts.astype(np.int64)
    pos = np.searchsorted(values, xs)
    pos_c = np.minimum(pos, values.shape[0] - 1)
    present = values[pos_c] == xs
    x = np.bincount(pos_c[present], minlength=values.shape[0]).astype(np.int64)
    missing = int(n - np.count_nonzero(present)) + int(np.maximum(x - pop, 0).sum())
    if missing:
        raise InputError(
            "With ",
            Assign("model", "population", quoted=True),
            f" the 'data' of {where} must be a sub-multiset of "
            f"the population ('universe'), but {missing} of its {n} records are not in "
            "the population (counting repeated values). Pass the full population as "
            "'universe', or use ",
            Assign("model", "domain", quoted=True),
            ".",
        )
    addable = pop > 0
    return _Counts(values=values, x=x, addable=addable, pop=pop)


def _counts(xs: FloatArray, us: FloatArray, model: str, scope: str, where: str) -> _Counts:
    if model == "population":
        return _population_counts(xs, us, where)
    if scope == "global":
        # Only the size of the data matters: every dataset is built from the universe.
        values = np.unique(us)
        x = np.zeros(values.shape[0], dtype=np.int64)
        addable = np.ones(values.shape[0], dtype=np.bool_)
    else:
        values = np.unique(np.concatenate([us, xs]))
        x = np.bincount(np.searchsorted(values, xs), minlength=values.shape[0]).astype(np.int64)
        addable = np.isin(values, us)
    return _Counts(values=values, x=x, addable=addable, pop=None)


def _validate(args: _Arguments) -> _Request:
    where = args.where
    _check_f(args.f, where)
    h = check_int(args.hamming, "hamming", where=where, minimum=1)
    relation = validate_neighbours(args.neighbours, where=where)
    scope_ = _choice(args.scope, "scope", where, ("local", "global"))
    model_ = _choice(args.model, "model", where, ("domain", "population"))
    k = _check_distance(args.distance, scope_, where)
    min_size_ = _check_min_size(args.min_size, args.f, where)
    limit = check_int(args.max_evaluations, "max_evaluations", where=where, minimum=1)
    progress_ = _optional_bool(args.progress, "progress", where)
    vectorized_ = _optional_bool(args.vectorized, "vectorized", where)

    xs = as_data(args.data, name="data", where=where, allow_empty=min_size_ == 0)
    us = as_data(args.universe, name="universe", where=where, infinite=False)
    n = int(xs.shape[0])
    if min_size_ > n:
        raise InputError(
            Param("min_size", of=where),
            f" must be at most the number of records in the data ({n}). Got {min_size_!r} instead.",
        )
    counts = _counts(xs, us, model_, scope_, where)
    return _Request(
        f=args.f,
        values=counts.values.astype(np.float64),
        x=counts.x,
        n=n,
        addable=counts.addable,
        pop=counts.pop,
        hamming=h,
        relation=relation,
        scope=scope_,
        distance=k,
        min_size=min_size_,
        max_evaluations=limit,
        progress=progress_,
        vectorized=vectorized_,
    )
