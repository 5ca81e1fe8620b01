"""The user's side of :func:`~dpsense.audit.audit_mechanism`: the pair and the calls.

Package-private except :func:`neighbour_relation` and :func:`check_draws` (re-exported by
:mod:`dpsense.audit.mechanism`): the datasets as read-only arrays, the check that they are
neighbours, and the calls of the user's function with the check of each answer.
"""

from __future__ import annotations

import inspect
import math
import numbers
from collections import Counter
from collections.abc import Callable
from typing import Any, Final

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpsense._progress import ProgressBar
from dpsense.audit._sampling import Outputs
from dpsense.errors import InputError, Param

FloatArray = NDArray[np.float64]

MIN_DRAWS: Final = 100
"""Fewest draws: the histogram audit needs at least 100 outputs per dataset."""
MAX_DRAWS: Final = 10_000_000
"""Most draws: more would hold gigabytes of outputs and run for hours in Python."""
_STEP: Final = 128
"""Calls between two advances of the progress bar (an advance costs a lock)."""
_INT64: Final = 2**63 - 1
_WHERE: Final = "audit_mechanism"


# --------------------------------------------------------------------------- the pair


def check_draws(draws: object) -> int:
    """``draws`` as an int in [MIN_DRAWS, MAX_DRAWS], or an InputError naming the range."""
    if isinstance(draws, float) and draws.is_integer():
        draws = int(draws)
    if (
        isinstance(draws, bool)
        or not isinstance(draws, numbers.Integral)
        or not MIN_DRAWS <= int(draws) <= MAX_DRAWS
    ):
        raise InputError(
            Param("draws", of=_WHERE),
            f" must be an int in [{MIN_DRAWS}, {MAX_DRAWS}]. Got {draws!r} instead.",
        )
    return int(draws)


def neighbour_relation(x: ArrayLike, x_prime: ArrayLike) -> str:
    """How two datasets, as multisets of values, are related.

    Returns
    -------
    str
        ``"add-remove"`` if one is the other plus one record, ``"substitute"`` if they
        have the same size and differ in one record, ``"identical"`` if they hold the
        same values, ``"neither"`` otherwise (they differ in more than one record).

    Examples
    --------
    >>> neighbour_relation([1.0, 2.0], [2.0, 1.0, 5.0])
    'add-remove'
    >>> neighbour_relation([1.0, 2.0], [1.0, 3.0])
    'substitute'
    """
    left = Counter(np.asarray(x, dtype=np.float64).tolist())
    right = Counter(np.asarray(x_prime, dtype=np.float64).tolist())
    only_left, only_right = left - right, right - left
    sizes = (sum(only_left.values()), sum(only_right.values()))
    if sizes == (0, 0):
        return "identical"
    if sizes in ((1, 0), (0, 1)):
        return "add-remove"
    if sizes == (1, 1):
        return "substitute"
    return "neither"


def _dataset(values: ArrayLike, name: str) -> FloatArray:
    """A read-only 1-D float copy: the mechanism cannot change it between calls."""
    try:
        array = np.array(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(
            f"The '{name}' parameter of {_WHERE} must be a 1-D array of numbers. Got values "
            "that are not numbers instead."
        ) from None
    if array.ndim != 1:
        raise InputError(
            f"The '{name}' parameter of {_WHERE} must be a 1-D array of numbers. Got an "
            f"array with {array.ndim} dimensions instead."
        )
    if np.isnan(array).any():
        raise InputError(
            f"The '{name}' parameter of {_WHERE} must hold numbers. Got NaN (a missing "
            "value) instead; drop or fill missing values first."
        )
    array.setflags(write=False)
    return array


def _check_pair(x: FloatArray, y: FloatArray, neighbours: str | None) -> str:
    relation = neighbour_relation(x, y)
    how = "make x' from x by adding, removing or replacing one record"
    if relation == "identical":
        raise InputError(
            f"x and x' hold the same values, so no mechanism can tell them apart; {how}."
        )
    if relation == "neither":
        raise InputError(
            "x and x' are not neighbours: they differ in more than one record (compared as "
            "multisets of values), and differential privacy bounds the privacy loss between "
            f"neighbours only; {how}."
        )
    if neighbours is not None and relation != neighbours:
        change = "adding or removing" if neighbours == "add-remove" else "replacing"
        raise InputError(
            f"x and x' are {relation} neighbours, but the claim under audit is for "
            f"{neighbours} neighbours; make x' from x by {change} one record."
        )
    return relation


# --------------------------------------------------------------------------- calls


def _describe(value: object) -> str:
    if value is None:
        return "None (does the function end with a return statement?)"
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape} and dtype {value.dtype}"
    return f"an object of type {type(value).__name__}"


class _Mechanism:
    """Calls the user's function on one dataset at a time and checks each answer."""

    def __init__(
        self,
        function: Callable[..., Any],
        name: str,
        rng: np.random.Generator,
        bar: ProgressBar,
    ) -> None:
        self.function = function
        self.name = name
        self.rng = rng
        self.bar = bar
        self.calls = 0
        try:
            parameters = inspect.signature(function).parameters
        except (TypeError, ValueError):  # some builtins have no signature
            parameters = {}  # type: ignore[assignment]
        self.wants_rng = "rng" in parameters

    def _call(self, data: FloatArray, which: str) -> Any:
        try:
            if self.wants_rng:
                return self.function(data, rng=self.rng)
            return self.function(data)
        except (Exception, SystemExit) as exc:  # the user's code may raise anything
            # The exception's message may quote data, so only its type is reported.
            raise InputError(
                f"the mechanism {self.name} raised {type(exc).__name__} when called on "
                f"{which}, and the audit stopped; call it on that data yourself to see the "
                "message (not shown here: it may quote data)."
            ) from exc

    def _number(self, value: object, which: str) -> int | float:
        if isinstance(value, np.ndarray) and value.size == 1 and value.dtype.kind in "biuf":
            value = value.item()
        if isinstance(value, bool | np.bool_):
            return int(value)
        if isinstance(value, numbers.Integral):
            number: int | float = int(value)
            if abs(number) <= _INT64:
                return number
            number = float(number)
        elif isinstance(value, numbers.Real):
            number = float(value)
        else:
            raise InputError(
                f"the mechanism {self.name} must return one number, but it returned "
                f"{_describe(value)} when called on {which}; return a float or an int."
            )
        if not math.isfinite(number):
            raise InputError(
                f"the mechanism {self.name} must return a finite number, but it returned NaN "
                f"or an infinite value when called on {which}; an audit needs finite outputs."
            )
        return number

    def sampler(self, data: FloatArray, which: str) -> Callable[[int], Outputs]:
        def draw(k: int) -> Outputs:
            values = []
            for i in range(k):
                values.append(self._number(self._call(data, which), which))
                self.calls += 1
                if (i + 1) % _STEP == 0:
                    self.bar.advance(_STEP)
            self.bar.advance(k % _STEP)
            if all(isinstance(v, int) for v in values):
                return np.array(values, dtype=np.int64)
            return np.array(values, dtype=np.float64)

        return draw


def _lump(pilot_x: Outputs, pilot_y: Outputs) -> float | int | None:
    """The pilot value that most separates x from x' among values seen at least twice.

    A continuous output distribution essentially never repeats a value, so a repeat is a
    point mass; ``None`` when there is none.
    """
    count_x = Counter(pilot_x.tolist())
    count_y = Counter(pilot_y.tolist())
    pooled = count_x + count_y
    repeated = [v for v, c in pooled.items() if c >= 2]
    if not repeated:
        return None
    best: float | int = max(
        repeated, key=lambda v: (abs(count_x[v] - count_y[v]), pooled[v], -abs(v))
    )
    return best
