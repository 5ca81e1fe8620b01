"""Several quantiles at once: a vector statistic released in one go.

Its value is the array of the quantiles (each with the rank rule of :class:`Quantile`). It
has no scalar sensitivity: it is released by the exponential mechanism with recursive
halving (Kaplan, Schnapp and Stemmer 2022; :mod:`dpsense.mechanisms.quantiles`), whose
error grows with log m instead of m.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar, Final

import numpy as np

from dpsense._arrays import FloatArray
from dpsense.errors import Assign, InputError, Param
from dpsense.neighbours import Neighbours
from dpsense.params import check_probability
from dpsense.statistics._grid import CandidateGrid
from dpsense.statistics._profile import Profile
from dpsense.statistics.base import NO_BOUND, BoundedStatistic
from dpsense.statistics.quantile import Quantile

__all__ = ["Quantiles"]

_MAX_DENOMINATOR: Final = 1_000_000
_MAX_LEVELS: Final = 1000


def _vector_error(what: str) -> InputError:
    return InputError(
        f"Quantiles is a vector of several quantiles and has no single {what}; use "
        "ds.Quantile(p, lower, upper) for one level's sensitivities, and release "
        "Quantiles with ",
        Assign("method", "exponential", quoted=True),
        " (the default).",
    )


@dataclass(frozen=True)
class Quantiles(BoundedStatistic):
    """Several quantiles of records clipped to ``[lower, upper]``, released together.

    Parameters
    ----------
    ps : sequence of float
        The levels, strictly increasing, each in (0, 1) (as exact fractions with
        denominator at most 10^6, like :class:`Quantile`); at most 1000 of them.
    lower, upper : float
        Public bounds.
    resolution : float or None
        The public spacing of the values the data can take (1 for integers), or None for
        continuous data; see :class:`Quantile`.

    Notes
    -----
    ``ds.release(x, ds.Quantiles([0.1, 0.5, 0.9], 0, 100), epsilon=1)`` returns a Release
    whose ``value`` is a non-decreasing float array, one entry per level. The release
    spends epsilon over :math:`\\lfloor \\log_2 m \\rfloor + 1` rounds of the exponential
    mechanism on disjoint parts of the data (docs/quantile_mechanisms.md §7).
    """

    ps: tuple[float, ...]
    lower: float = NO_BOUND
    upper: float = NO_BOUND
    resolution: float | None = None
    kind: ClassVar[str] = "quantiles"
    _levels: tuple[Fraction, ...] = field(init=False, repr=False, compare=False, default=())
    _single: tuple[Quantile, ...] = field(init=False, repr=False, compare=False, default=())

    def __post_init__(self) -> None:
        name = type(self).__name__
        raw = self.ps
        if isinstance(raw, str | bytes) or not isinstance(raw, Iterable | np.ndarray):
            raise InputError(
                Param("ps", of=name),
                f" must be a list of levels in (0, 1), e.g. "
                f"[0.1, 0.5, 0.9]. Got {type(raw).__name__} instead.",
            )
        ps = tuple(check_probability(p, "ps", where=name) for p in raw)
        if not ps:
            raise InputError(Param("ps", of=name), " needs at least one level.")
        if len(ps) > _MAX_LEVELS:
            raise InputError(
                Param("ps", of=name),
                f" has {len(ps)} levels; at most {_MAX_LEVELS} "
                "are supported (more levels than that do not make a private CDF better).",
            )
        levels = tuple(Fraction(p).limit_denominator(_MAX_DENOMINATOR) for p in ps)
        if any(not 0 < q < 1 for q in levels):
            raise InputError(
                f"The levels of {name} must be in (0, 1), at least 1e-6 away from 0 and 1."
            )
        if any(b <= a for a, b in itertools.pairwise(levels)):
            raise InputError(
                f"The levels of {name} must be strictly increasing, e.g. ",
                Assign("p", "(0.1, 0.5, 0.9)", cli="0.1,0.5,0.9"),
                "; sort them and drop repeats.",
            )
        object.__setattr__(self, "ps", ps)
        object.__setattr__(self, "_levels", levels)
        super().__post_init__()
        singles = tuple(Quantile(p, self.lower, self.upper, self.resolution) for p in ps)
        object.__setattr__(self, "resolution", singles[0].resolution)
        object.__setattr__(self, "_single", singles)

    @property
    def levels(self) -> tuple[Fraction, ...]:
        """The levels as exact fractions (used for ranks and scores)."""
        return self._levels

    def candidates(self, where: str = "release") -> CandidateGrid:
        """The public grid every released quantile lies on (see :meth:`Quantile.candidates`)."""
        return self._single[0].candidates(where)

    @property
    def name(self) -> str:
        return "quantiles(p=" + ",".join(f"{p:g}" for p in self.ps) + ")"

    def __call__(self, x: Any) -> FloatArray:  # type: ignore[override]
        """The true quantiles of ``x`` clipped to the bounds (non-private), one per level."""
        xc = self._prepare(x, f"{self.name}(x)")
        return np.array([q._value(xc) for q in self._single], dtype=np.float64)

    def _value(self, xc: FloatArray) -> float:
        raise _vector_error("value as a number (call it: quantiles(x) returns the array)")

    def _global(self, neighbours: Neighbours, n: int | None) -> float:
        raise _vector_error("global sensitivity")

    def profile(self, xc: FloatArray, neighbours: Neighbours) -> Profile:
        raise _vector_error("local or smooth sensitivity")

    def sensitivity_is_exact(self, neighbours: str = "add-remove") -> bool:
        return False

    def evaluate_batch(self, datasets: Any) -> FloatArray:
        raise _vector_error("batch value")
