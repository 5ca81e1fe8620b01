"""Statistics built from their names (as the command line and the SQL parser do)."""

from __future__ import annotations

import importlib
from collections.abc import Sequence

from dpsense.errors import Assign, InputError, Param
from dpsense.statistics.base import NO_BOUND, BoundedStatistic, Statistic
from dpsense.statistics.moments import Count
from dpsense.statistics.names import STATISTIC_NAMES, spelling_of
from dpsense.statistics.quantile import Median, Quantile
from dpsense.statistics.quantiles import Quantiles
from dpsense.statistics.trimmed import TrimmedMean

__all__ = ["make_statistic", "statistic_key"]

_LEVELS = Assign("p", "(0.1, 0.5, 0.9)", cli="0.1,0.5,0.9")
"""Example levels of a quantiles statistic: ``p=(0.1, 0.5, 0.9)``, ``--p 0.1,0.5,0.9``."""


def statistic_key(name: str) -> str:
    """A statistic's name as :data:`STATISTIC_NAMES` spells it (``var``, ``stddev`` and
    ``trimmed`` accepted), or the InputError of an unknown one."""
    spelling = spelling_of(name)
    if spelling is None:
        raise InputError(
            Param("statistic"),
            f" must be one of {', '.join(STATISTIC_NAMES)}. Got {name!r} instead.",
        )
    return spelling.key


def _quantile_statistic(
    key: str, p: float | Sequence[float] | None, lo: float, hi: float, resolution: float | None
) -> Statistic:
    """The quantile (one level ``p``) or quantiles (levels ``p``) of :func:`make_statistic`."""
    if key == "quantile":
        if p is None:
            raise InputError(
                "The quantile statistic needs its level: pass ", Assign("p", "0.9"), ", say."
            )
        if not isinstance(p, int | float):
            raise InputError(
                "The quantile statistic takes one level (",
                Assign("p", "0.9"),
                ", say); for several use ",
                Assign("statistic", "quantiles", quoted=True),
                " with ",
                _LEVELS,
                ", say.",
            )
        return Quantile(p, lo, hi, resolution)
    if p is None:
        raise InputError("The quantiles statistic needs its levels: pass ", _LEVELS, ", say.")
    levels = (p,) if isinstance(p, int | float) else tuple(p)
    return Quantiles(levels, lo, hi, resolution)


def make_statistic(
    name: str,
    lower: float | None = None,
    upper: float | None = None,
    *,
    p: float | Sequence[float] | None = None,
    trim: int | None = None,
    resolution: float | None = None,
) -> Statistic:
    """Build a statistic from its name (as the command line does).

    ``p`` is one level for ``quantile`` and a list of levels for ``quantiles``. Without
    ``lower`` and ``upper`` the statistic is built without bounds (see
    :meth:`BoundedStatistic.with_bounds`).
    ``resolution`` (the public spacing of the values, e.g. 1 for integers) applies to the
    median and quantiles only.

    Raises
    ------
    InputError
        For an unknown name, one bound without the other, or a missing ``p`` / ``trim``.
    """
    key = statistic_key(name)
    if key == "count":
        return Count()
    from dpsense.params import validate_bounds

    lo, hi = NO_BOUND, NO_BOUND  # both missing: built without bounds (bounds="private")
    if lower is not None or upper is not None:
        checked = validate_bounds(lower, upper, where=f"statistic {key!r}")
        lo, hi = checked.lower, checked.upper
    if resolution is not None and key not in ("median", "quantile", "quantiles"):
        raise InputError(
            f"A resolution applies to the median and quantiles, not to {key}; drop it."
        )
    if key in ("quantile", "quantiles"):
        return _quantile_statistic(key, p, lo, hi, resolution)
    if key == "median":
        return Median(lo, hi, resolution)
    if key == "trimmed-mean":
        if trim is None:
            raise InputError(
                "The trimmed-mean statistic needs the number of records dropped from each "
                "end: pass ",
                Assign("trim", "5"),
                ", say.",
            )
        return TrimmedMean(trim, lo, hi)
    return _bounded_class(key)(lo, hi)  # type: ignore[call-arg]


def _bounded_class(key: str) -> type[BoundedStatistic]:
    """The class of a statistic built from its bounds alone (sum, mean, variance, ...)."""
    spelling = spelling_of(key)
    assert spelling is not None  # statistic_key checked the name
    module = importlib.import_module(f"dpsense.statistics.{spelling.module}")
    cls: type[BoundedStatistic] = getattr(module, spelling.cls)
    return cls
