"""The statistic base class: a callable with sensitivity methods (the public contract)."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, fields, replace
from fractions import Fraction
from typing import Any, ClassVar, Final, Self, cast

import numpy as np
from numpy.typing import ArrayLike

from dpsense._arrays import FloatArray, as_data
from dpsense.errors import Assign, Door, InputError, Name, Param
from dpsense.neighbours import Neighbours, validate_neighbours
from dpsense.params import check_beta, check_finite, check_int, validate_bounds
from dpsense.statistics._profile import Profile, as_ks

__all__ = ["NO_BOUND", "BoundedStatistic", "Statistic"]

NO_BOUND: Final = cast(float, None)
"""The default ``lower`` and ``upper`` of a statistic built without bounds: None, typed as a
float because every method that reads a bound first calls
:meth:`BoundedStatistic.require_bounds`, which raises while it is None."""


@dataclass(frozen=True)
class Statistic(ABC):
    """A real-valued statistic of a multiset of records, with its sensitivities.

    Subclasses implement the value (one dataset and a batch of equal-size datasets), the
    global sensitivity and :meth:`profile`, from which every data-dependent sensitivity
    is derived. Every method takes the neighbour relation explicitly; the default is
    ``"add-remove"``, under which the number of records is private.
    """

    kind: ClassVar[str] = "statistic"

    # -- to implement -------------------------------------------------------------------
    @abstractmethod
    def _value(self, xc: FloatArray) -> float:
        """The statistic on clipped data (``xc`` may be empty)."""

    @abstractmethod
    def _global(self, neighbours: Neighbours, n: int | None) -> float:
        """Global sensitivity (``n`` is the public size under substitute, or None)."""

    @abstractmethod
    def profile(self, xc: FloatArray, neighbours: Neighbours) -> Profile:
        """The sensitivity profile of this statistic at clipped data ``xc``."""

    @abstractmethod
    def sensitivity_is_exact(self, neighbours: str = "add-remove") -> bool:
        """Whether A(k) for k >= 1 is exact (True) or an admissible upper bound (False).

        The local sensitivity (k = 0) is always exact.
        """

    # -- floating-point error of the value ---------------------------------------------
    @property
    def value_error(self) -> float:
        """A bound on ``|self._value(xc) - f(xc)|`` valid for every dataset within the bounds.

        ``f`` is the exact real statistic; the bound depends only on public parameters
        (bounds, trim, p), never on the data or on n, and holds under both neighbour
        relations, the empty dataset included. A method that releases ``_value`` must
        cover it: the computed value's local sensitivity is at most the exact one plus
        ``2 * value_error``. ``inf`` where no finite bound is proved (the base class, and
        :class:`Sum`, whose double cannot hold every sum: use :meth:`_value_exact`).
        docs/sensitivity.md §Floating-point error of f proves every bound.
        """
        return math.inf

    @property
    def exact_value_error(self) -> float:
        """A bound on ``|self._value_exact(xc) - f(xc)|`` (at most :attr:`value_error`).

        Smaller than :attr:`value_error` where the last rounding to a double is the
        dominant error (a mean far from 0 relative to its width).
        """
        return self.value_error

    def _value_exact(self, xc: FloatArray) -> Fraction:
        """The computed value as an exact rational, within :attr:`exact_value_error` of f.

        The mechanisms round this number to their noise grid in exact arithmetic, so no
        rounding to a double happens before the noise is added.
        """
        return Fraction(self._value(xc))

    # -- shared machinery ---------------------------------------------------------------
    @property
    def name(self) -> str:
        """A short human-readable name, e.g. ``"median"``."""
        return self.kind

    def clip(self, x: FloatArray) -> FloatArray:
        """Clip data to the statistic's bounds (identity for statistics that use no value)."""
        return x

    def output_range(self, n: int | None = None) -> tuple[float, float]:
        """The public range of the statistic's values, to which a release is clipped
        (post-processing). ``n``: the public number of records, under 'substitute' only.
        None known here: a statistic with a range overrides this."""
        return (-math.inf, math.inf)

    def require_bounds(self, where: str) -> None:
        """Raise an InputError when the statistic needs bounds it was built without (a
        statistic that uses no value, such as the count, needs none)."""
        return None

    def _prepare(self, x: Any, where: str) -> FloatArray:
        self.require_bounds(where)
        return self.clip(as_data(x, where=where))

    def __call__(self, x: Any) -> float:
        """The statistic on ``x`` clipped to ``[lower, upper]``."""
        return self._value(self._prepare(x, f"{self.name}(x)"))

    def evaluate_batch(self, datasets: ArrayLike) -> FloatArray:
        """The statistic on each row of a 2-D array (rows are datasets of equal size)."""
        self.require_bounds(f"{self.name}.evaluate_batch")
        arr = np.asarray(datasets, dtype=np.float64)
        if arr.ndim != 2:
            raise InputError("evaluate_batch needs a 2-D array: one dataset per row.")
        return self._batch(self.clip(arr))

    def _batch(self, xc: FloatArray) -> FloatArray:
        return np.array([self._value(row) for row in xc], dtype=np.float64)

    def global_sensitivity(self, neighbours: str = "add-remove", *, n: int | None = None) -> float:
        """Global sensitivity: the largest change over all pairs of neighbours.

        Parameters
        ----------
        neighbours : {"add-remove", "substitute"}
        n : int, optional
            The public number of records. Some statistics (mean, variance, ...) need it
            under ``"substitute"``, where n is public; it is ignored under add-remove,
            where n is private.
        """
        where = f"{self.name}.global_sensitivity"
        self.require_bounds(where)
        nb = validate_neighbours(neighbours, where=where)
        size = None if n is None else check_int(n, "n", where=where, minimum=0)
        return float(self._global(nb, size if nb == "substitute" else None))

    def local_sensitivity(self, x: Any, neighbours: str = "add-remove") -> float:
        """Exact local sensitivity LS(f, x): the largest change over neighbours of x.

        This is a non-private quantity: never publish it, and never scale noise to it.
        """
        where = f"{self.name}.local_sensitivity"
        nb = validate_neighbours(neighbours, where=where)
        prof = self.profile(self._prepare(x, where), nb)
        return float(prof.at(np.zeros(1, dtype=np.int64))[0])

    def sensitivity_at_distance(
        self, x: Any, k: ArrayLike, neighbours: str = "add-remove"
    ) -> float | FloatArray:
        """A(f, x, k): the largest local sensitivity within distance k of x.

        ``k`` may be an int or an array of ints (vectorised). Where
        :meth:`sensitivity_is_exact` is False this is an admissible upper bound
        (docs/sensitivity.md §2): it never underestimates and it keeps smoothness and the
        sensitivity 1 of the distance to instability. Non-private.
        """
        where = f"{self.name}.sensitivity_at_distance"
        nb = validate_neighbours(neighbours, where=where)
        ks = as_ks(k)
        prof = self.profile(self._prepare(x, where), nb)
        vals = prof.at(ks.reshape(-1)).reshape(ks.shape)
        if ks.ndim == 0:
            return float(vals)
        return vals

    def smooth_sensitivity(self, x: Any, beta: float, neighbours: str = "add-remove") -> float:
        r"""The beta-smooth upper bound :math:`\max_k e^{-k\beta} A(f, x, k)` (NRS07).

        Exact :math:`S^*` when :meth:`sensitivity_is_exact`; otherwise the smooth bound
        built from the admissible upper bound on A(k). Non-private.
        """
        where = f"{self.name}.smooth_sensitivity"
        nb = validate_neighbours(neighbours, where=where)
        b = check_beta(beta, where=where)
        return float(self.profile(self._prepare(x, where), nb).smooth(b))

    def distance_to_instability(self, x: Any, bound: float, neighbours: str = "add-remove") -> int:
        """D(x, b) = min{k : A(f, x, k) > b}; sensitivity 1 (propose-test-release).

        Returns :data:`dpsense.statistics.INFINITE_DISTANCE` when no k exceeds ``bound``
        (b at or above the largest possible local sensitivity). Non-private.
        """
        where = f"{self.name}.distance_to_instability"
        nb = validate_neighbours(neighbours, where=where)
        b = check_finite(bound, "bound", where=where)
        if b < 0:
            raise InputError(
                Param("bound", of=where), f" must be a float >= 0. Got {bound!r} instead."
            )
        return self.profile(self._prepare(x, where), nb).distance(b)


class BoundedStatistic(Statistic):
    """A statistic of records clipped to public bounds ``[lower, upper]``.

    Concrete subclasses are frozen dataclasses that declare ``lower`` and ``upper`` (after
    any leading parameter such as the quantile level ``p``), both defaulting to None: a
    statistic built without bounds (``ds.Median()``) has no value or sensitivity until
    they are given, by :meth:`with_bounds` or by ``ds.release(..., bounds="private")``,
    which finds them with part of the budget. They are never inferred from the data.
    """

    lower: float
    upper: float
    max_magnitude: ClassVar[float | None] = None
    """The largest |bound| the statistic computes with in doubles (None: any finite
    bound); checked with the bounds, from them alone, before anything is read."""

    def __post_init__(self) -> None:
        if self.lower is None and self.upper is None:
            return  # built without bounds: with_bounds or bounds="private" gives them
        if self.lower is None or self.upper is None:
            missing = "lower" if self.lower is None else "upper"
            raise InputError(
                Param(missing, of=type(self).__name__),
                f" is missing: give both bounds, e.g. {self._example()}, or neither and "
                "release with ",
                Assign("bounds", "private", quoted=True),
                " to find them privately (or spend part of the budget on ",
                Door("ds.private_bounds"),
                ").",
            )
        bounds = validate_bounds(self.lower, self.upper, where=type(self).__name__)
        limit = self.max_magnitude
        if limit is not None and max(abs(bounds.lower), abs(bounds.upper)) > limit:
            raise InputError(
                f"The bounds of {type(self).__name__} must lie within ±{limit:.3g} (2^500): "
                "its sensitivities square the bounds, which must stay finite doubles. "
                "Rescale the column (e.g. to thousands) or choose narrower bounds."
            )
        object.__setattr__(self, "lower", bounds.lower)
        object.__setattr__(self, "upper", bounds.upper)

    @property
    def has_bounds(self) -> bool:
        """True when the statistic was given its bounds."""
        return self.lower is not None

    def with_bounds(self, lower: float, upper: float) -> Self:
        """The same statistic with public bounds ``[lower, upper]`` (a new object)."""
        bounded: Self = replace(cast(Any, self), lower=lower, upper=upper)  # re-validated
        return bounded

    def require_bounds(self, where: str) -> None:
        if self.lower is None:
            raise InputError(
                f"{where} needs bounds, and {type(self).__name__} was built without them: give "
                f"public bounds chosen without looking at the data, e.g. {self._example()}, or "
                "pass ",
                Assign("bounds", "private", quoted=True),
                " to ds.release to find them privately (",
                Name("bounds_share"),
                " of epsilon; or ",
                Door("ds.private_bounds"),
                ", then with_bounds). dpsense never infers bounds from the data.",
            )

    def _example(self) -> str:
        """The constructor call with bounds 0 and 100, e.g. ``ds.Quantile(0.9, 0, 100)``."""
        lead = []
        for f in fields(self):
            if not f.init or f.name in ("lower", "upper") or f.name.startswith("_"):
                continue
            if f.name == "resolution":
                break
            value = getattr(self, f.name)
            lead.append(repr(list(value)) if isinstance(value, tuple) else f"{value!r}")
        return f"ds.{type(self).__name__}({', '.join([*lead, '0', '100'])})"

    @property
    def width(self) -> float:
        """``upper - lower``."""
        return self.upper - self.lower

    @property
    def _width_exact(self) -> Fraction:
        """``upper - lower`` exactly: global sensitivities are rounded up from it."""
        return Fraction(self.upper) - Fraction(self.lower)

    @property
    def midpoint(self) -> float:
        """``(lower + upper) / 2``: the value of mean-like statistics on empty data."""
        return 0.5 * (self.lower + self.upper)

    def clip(self, x: FloatArray) -> FloatArray:
        self.require_bounds(f"{self.name}.clip")
        return np.clip(x, self.lower, self.upper)

    def output_range(self, n: int | None = None) -> tuple[float, float]:
        """The clipped data's range [l, u]: a mean, a quantile or a trimmed mean of values
        in [l, u] lies in it."""
        return (self.lower, self.upper)

    def _need_n(self, n: int | None) -> int:
        if n is None:
            raise InputError(
                f"The global sensitivity of {self.name} under 'substitute' depends on the "
                "public number of records: pass n=... (under 'substitute' n is public)."
            )
        return n


def finite_or_zero(v: float) -> float:
    """Guard against 0/0 in degenerate closed forms."""
    return v if math.isfinite(v) else 0.0
