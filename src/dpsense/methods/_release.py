"""The receipt of a private release."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

import numpy as np

from dpsense.defaults import FAR_BOUND
from dpsense.neighbours import Neighbours, validate_neighbours
from dpsense.params import Bounds, check_epsilon, validate_bounds
from dpsense.shown import significant

__all__ = [
    "Release",
    "accuracy_parameters",
    "checked_mean_request",
    "covers_text",
    "format_value",
    "on_resolution",
    "resolution_parameters",
    "with_covers",
]


def checked_mean_request(
    lower: float, upper: float, epsilon: float, neighbours: str, where: str
) -> tuple[Bounds, float, Neighbours]:
    """The public bounds, epsilon and neighbour relation of a mean's release, checked in
    that order."""
    bounds = validate_bounds(lower, upper, where=where)
    eps = check_epsilon(epsilon, where=where)
    return bounds, eps, validate_neighbours(neighbours, where=where)


def on_resolution(statistic: object, value: float) -> float:
    """Post-processing: a quantile with a declared ``resolution`` lands on its grid."""
    from dpsense.statistics import Quantile

    if isinstance(statistic, Quantile):
        return statistic.round_to_resolution(value)
    return value


def resolution_parameters(statistic: object) -> dict[str, Any]:
    """``{"resolution": r}`` for a quantile with a declared resolution, else ``{}``."""
    from dpsense.statistics import Quantile

    if isinstance(statistic, Quantile) and statistic.resolution is not None:
        return {"resolution": statistic.resolution}
    return {}


def covers_text(statistic: object, max_rows: int | None = None) -> str:
    """What a release's interval covers, in words, from the request only (its statistic,
    bounds and contribution bound): e.g. "the mean of the values clipped to [0, 100]",
    ", over the rows kept after each person's rows are capped at 3" with a privacy unit
    (``max_rows``). The same for every release (every group) of one request."""
    from dpsense.statistics import BoundedStatistic, Count

    name = str(getattr(statistic, "name", "statistic"))
    if isinstance(statistic, Count):
        text = "the number of rows"
    elif isinstance(statistic, BoundedStatistic) and statistic.has_bounds:
        lo, hi = format_value(statistic.lower), format_value(statistic.upper)
        text = f"the {name} of the values clipped to [{lo}, {hi}]"
    else:
        text = f"the {name} of the rows as released"
    if max_rows is not None:
        text += f", over the rows kept after each person's rows are capped at {max_rows}"
    return text


def with_covers(release: Release, statistic: object, max_rows: int | None = None) -> Release:
    """``release`` saying what it covers (:func:`covers_text`), unless it already does
    (a method that covers something else sets its own)."""
    if release.covers:
        return release
    return replace(release, covers=covers_text(statistic, max_rows))


def format_value(value: Any) -> str:
    """A released value as printed: 6 significant digits; ``[a, b, c]`` for several
    quantiles, ``(lower, upper)`` for bounds, "inf"/"n/a" for non-finite numbers."""
    if isinstance(value, np.ndarray):
        return "[" + ", ".join(format_value(float(v)) for v in value) + "]"
    if isinstance(value, tuple):
        return "(" + ", ".join(format_value(float(v)) for v in value) + ")"
    number = float(value)
    if math.isnan(number):
        return "n/a"
    return significant(number)


def accuracy_parameters(statistic: object, grid: float) -> dict[str, Any]:
    """Public quantities :meth:`Release.accuracy` needs: the noise grid, the proven error of
    the statistic's value and, for a declared resolution, the most that rounding to its
    grid can move a value of ``[lower, upper]`` (half a step, or the gap between the last
    grid point and ``upper`` when the bounds are not a whole number of steps apart)."""
    from dpsense.statistics import Quantile

    out: dict[str, Any] = {
        "noise_grid": grid,
        "value_error": float(getattr(statistic, "exact_value_error", 0.0)),
    }
    if isinstance(statistic, Quantile) and statistic.resolution is not None:
        grid_points = statistic.candidates()
        last = float(grid_points.values(np.array([grid_points.size - 1]))[0])
        out["rounding_error"] = max(0.5 * statistic.resolution, statistic.upper - last)
    return out


_PUBLIC_SCALE = frozenset({"global", "ptr", "bounded-ls"})
"""Methods whose noise scale is public or released, so that :meth:`Release.accuracy` is
a function of released values."""

_SHOWN = frozenset(
    {
        "kind",
        "share",
        "alpha",
        "steps",
        "shift_rows",
        "epsilon_pair",
        "covers",
        "epsilon_count",
        "epsilon_spread",
    }
)
"""The keys of an interval's record shown in ``parameters``: how it was built. The rest
(released values, scales, ranges) stay in ``interval_parts``."""


def _frozen(mapping: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return MappingProxyType(dict(mapping or {}))


@dataclass(frozen=True)
class Release:
    """A differentially private answer, or a refusal, with the receipt of how it was made.

    Attributes
    ----------
    value : float, (float, float), numpy.ndarray or None
        The private value; a ``(lower, upper)`` pair for private bounds; a non-decreasing
        array for several quantiles (read-only); None when the method refused to answer
        (propose-test-release).
    refused : bool
        True for a refusal. A refusal costs the same privacy budget as an answer.
    epsilon, delta : float
        The (epsilon, delta)-DP guarantee of the whole release (test and answer included).
    method : str
        "global", "smooth", "ptr", "sample-aggregate", "bounded-ls", "ksw", "exponential",
        "adaptive", "naive" or "local-bound" (the method actually used, also when chosen by
        "auto"; for "adaptive" the branch taken is in ``parameters``).
    noise : str or None
        The noise distribution ("laplace", "gaussian", "discrete-laplace", "cauchy",
        "student-t", "lln", "exponential-mechanism").
    scale : float or None
        The noise scale when it is public (it depends only on public parameters). None when
        it depends on the data — e.g. smooth sensitivity — because revealing it would
        reveal a non-private quantity.
    neighbours : str
        "add-remove" or "substitute".
    statistic : str
        What was released (e.g. "median", "ratio").
    seeded : bool
        True when a reproducible, non-cryptographic generator made the noise (tests and
        demos only).
    rho : float or None
        zero-concentrated DP parameter, for methods whose native guarantee is zCDP.
    parameters : mapping
        Public parameters of the method (proposed bound, budget split, blocks, ...). Never
        data-dependent values.
    covers : str
        What :meth:`interval` (and :meth:`accuracy`) covers, in words, e.g. "the mean of
        the values clipped to [0, 100]": the clipped, bounded statistic (the default), the
        raw one, or the population's (``interval="privacy+sampling"``). The same for every
        release of one request; empty where nothing says (private bounds, which have no
        interval).
    """

    value: Any
    refused: bool
    epsilon: float
    delta: float
    method: str
    noise: str | None
    scale: float | None
    neighbours: str
    statistic: str = ""
    seeded: bool = False
    rho: float | None = None
    parameters: Mapping[str, Any] = field(default_factory=dict)
    interval_parts: Mapping[str, Any] = field(default_factory=dict, repr=False)
    """What :meth:`interval` is built from: public quantities and values released with
    the value (noisy parts, endpoints). A method hands them over as
    ``parameters["interval"]``; the released ones are moved here, so that ``parameters``
    keeps only public ones (docs/intervals.md)."""
    covers: str = ""
    """What the interval covers, in words (the class docstring; :func:`covers_text`)."""

    def __post_init__(self) -> None:
        params = dict(self.parameters or {})
        spec = params.get("interval")
        if isinstance(spec, Mapping) and spec.keys() - _SHOWN:
            object.__setattr__(self, "interval_parts", _frozen(spec))
            params["interval"] = {k: v for k, v in spec.items() if k in _SHOWN}
        else:
            object.__setattr__(self, "interval_parts", _frozen(self.interval_parts))
        object.__setattr__(self, "parameters", _frozen(params))
        if self.refused and self.value is not None:
            raise ValueError("a refused release carries no value")

    def accuracy(self, alpha: float = 0.05) -> float | None:
        r"""A half-width a with :math:`P(|\text{value} - f(x)| \le a) \ge 1 - \alpha`.

        The probability is over the noise; f(x) is the statistic of the records clipped to
        the bounds. Computed from public quantities only (the noise scale and grid, the
        proven floating-point error of the statistic), exact for the noise drawn
        (:mod:`dpsense.mechanisms.accuracy`): discrete Laplace and discrete Gaussian on the
        noise grid, discrete Laplace on the integers for counts, 0 for a count under
        substitute (public).

        The bounded-local-sensitivity mean's scale is a function of its released bound,
        so its half-width is one too. None where the error depends on the data, and so
        would itself be private: smooth sensitivity and the means' data-dependent scales
        (``scale`` is None), the exponential mechanism (its error in value units is the
        gap between records), sample-and-aggregate (the estimate differs from f(x) by more
        than the noise), private ratios and bounds, refusals.
        """
        from dpsense.mechanisms.accuracy import discrete_laplace_halfwidth, grid_halfwidth
        from dpsense.params import check_probability

        a = check_probability(alpha, "alpha", where="Release.accuracy")
        if self.refused or self.scale is None or self.method not in _PUBLIC_SCALE:
            return None
        if not isinstance(self.value, float | int) or isinstance(self.value, bool):
            return None
        if self.noise is None or (self.method == "bounded-ls" and self.scale == 0.0):
            return 0.0  # no noise: a public count, or the empty mean's convention
        if self.noise == "discrete-laplace":  # integer counts, exact as doubles
            return float(discrete_laplace_halfwidth(self.scale, a))
        grid = self.parameters.get("noise_grid")
        if grid is None or self.noise not in ("laplace", "gaussian"):
            return None
        error = float(self.parameters.get("value_error", 0.0))
        rounding = float(self.parameters.get("rounding_error", 0.0))  # to a resolution
        # the noisy grid value becomes a double (half an ulp, unless clipped to a bound)
        to_double = 0.5 * math.ulp(abs(float(self.value)) + rounding)
        return grid_halfwidth(self.noise, self.scale, float(grid), error, a) + rounding + to_double

    def interval(self, alpha: float = 0.05) -> tuple[Any, Any] | None:
        r"""A ``(low, high)`` that holds the statistic's value f(x) with probability at
        least :math:`1 - \alpha` over the release's randomness, built only from public
        quantities and released values (docs/intervals.md).

        f(x) is the statistic of the records as released (clipped to the bounds, bounded
        per unit). Counts, sums, other global-noise statistics and the bounded-local-
        sensitivity mean (noise of a released scale): the value plus or minus
        :meth:`accuracy`, within the statistic's range. A mean released as a noisy sum over
        a noisy count: the range of the quotient over both parts' noise intervals at
        ``alpha / 2``. A quantile by the exponential mechanism: two more quantiles released
        with a share of its budget at ranks moved outward (docs/intervals.md §3); they are
        released for alpha = 0.05, so a smaller ``alpha`` gives None; several quantiles give
        two arrays, one interval per level. A KSW mean or ratio: from its released pair of
        noisy sums. Smooth sensitivity: from a private upper bound on its noise scale. None
        for refusals and where none is built (sample-and-aggregate, Laplace-log-normal
        smooth noise, private bounds: docs/intervals.md §5 says why). With
        ``interval="privacy+sampling"`` (a mean, a median or a quantile) it holds the
        population's value instead, for a simple random sample (:attr:`covers`;
        docs/intervals.md §8).
        """
        from dpsense.methods.intervals import (
            fraction_interval,
            noise_interval,
            ratio_interval,
            released_interval,
        )
        from dpsense.params import check_probability

        a = check_probability(alpha, "alpha", where="Release.interval")
        spec = self.interval_parts
        if self.refused or not spec:
            return None
        if isinstance(self.value, np.ndarray) and spec["kind"] == "released":
            return released_interval(self.value, spec, a)  # several quantiles: arrays
        if not isinstance(self.value, float | int):
            return None
        value = float(self.value)
        if spec["kind"] == "noise":
            return noise_interval(value, self.accuracy(a), spec)
        if spec["kind"] in ("ratio", "fraction"):
            build = ratio_interval if spec["kind"] == "ratio" else fraction_interval
            low, high = build(spec, a)
            return min(low, value), max(high, value)
        if spec["kind"] == "released":
            return released_interval(value, spec, a)
        if spec["kind"] == "smooth":
            from dpsense.methods.smooth_interval import smooth_interval

            return smooth_interval(value, spec, a)
        if spec["kind"] == "population":
            from dpsense.methods.sampling_interval import population_interval

            return population_interval(self, value, spec, a)
        return None

    def unreliable(self, alpha: float = 0.05) -> bool:
        """True when the :meth:`interval` is wider than half the statistic's public range
        (its bounds' width, for a mean or a quantile): the release says little about the
        value. False without an interval or a finite range (counts, sums).

        Under bounds found privately (``parameters["bounds"]["source"] == "private"``)
        also when clipping may dominate (:meth:`clipping_may_dominate`)."""
        interval = self.interval(alpha)
        spec = self.interval_parts
        if interval is not None and self.clipping_may_dominate(alpha):
            return True
        if interval is None or "range" not in spec:
            return False
        lo, hi = (float(v) for v in spec["range"])
        if not (math.isfinite(lo) and math.isfinite(hi)):
            return False
        width = np.asarray(interval[1], dtype=np.float64) - np.asarray(
            interval[0], dtype=np.float64
        )
        return bool(np.any(width > 0.5 * (hi - lo)))

    def clipping_may_dominate(self, alpha: float = 0.05) -> bool:
        """True for a release under bounds found privately whose bounds are absurd for it:
        a bound beyond 2^50, or the :meth:`interval` reaching a bound (the value sits at
        an end of the bounds, where the clipped rows pile up: the raw statistic may lie
        far outside). A function of released values and public parameters only
        (docs/bounds_in_release.md §6). False under public bounds: the interval then
        covers the clipped statistic, as :attr:`covers` says."""
        bounds = self.parameters.get("bounds")
        if not isinstance(bounds, Mapping) or bounds.get("source") != "private":
            return False
        lo, hi = float(bounds["lower"]), float(bounds["upper"])
        if max(abs(lo), abs(hi)) >= FAR_BOUND:
            return True
        interval = self.interval(alpha)
        if interval is None:
            return False
        low = np.asarray(interval[0], dtype=np.float64)
        high = np.asarray(interval[1], dtype=np.float64)
        return bool(np.any(low <= lo) or np.any(high >= hi))

    def rank_accuracy(self, alpha: float = 0.05) -> int | None:
        r"""A number of ranks t: with probability at least :math:`1 - \alpha` the released
        value lies between the records of ranks :math:`r - t` and :math:`r + t`, r the
        target rank :math:`\max(1, \lceil p n \rceil)` (per unit of ``max_rows_per_unit``
        rows: t counts rows).

        For a quantile released by the exponential mechanism or permute-and-flip over a
        finite public candidate set that holds every value the data can take (a declared
        resolution, or one from the column's type, with both bounds on its grid):
        :math:`t = \lceil (\ln G + \ln(1/\alpha)) / \eta \rceil` from the number of
        candidates G and the selection's multiplier :math:`\eta = \varepsilon / (2\Delta)`
        only (docs/accuracy.md). None elsewhere: continuous candidates (the rank error then
        depends on how the records fall between grid points), several quantiles, other
        methods, refusals.
        """
        from dpsense.mechanisms.accuracy import selection_rank_halfwidth
        from dpsense.params import check_probability

        a = check_probability(alpha, "alpha", where="Release.rank_accuracy")
        bound = self.parameters.get("rank_bound")
        if self.refused or bound is None:
            return None
        return selection_rank_halfwidth(float(bound["eta"]), int(bound["candidates"]), a)

    def to_dict(self) -> dict[str, Any]:
        """The receipt as plain data (the CLI's ``--json`` keys first)."""
        value = self.value.tolist() if isinstance(self.value, np.ndarray) else self.value
        return {
            "value": value,
            "refused": self.refused,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "method": self.method,
            "noise": self.noise,
            "scale": self.scale,
            "neighbours": self.neighbours,
            "statistic": self.statistic,
            "seeded": self.seeded,
            "rho": self.rho,
            "parameters": dict(self.parameters),
            "covers": self.covers,
        }

    def __str__(self) -> str:
        if self.refused:
            head = f"{self.statistic or 'release'}: refused (propose-test-release)"
        else:
            head = f"{self.statistic or 'release'} = {format_value(self.value)}"
        guarantee = f"epsilon={self.epsilon:g}, delta={self.delta:g}"
        if self.rho is not None and not math.isnan(self.rho):
            guarantee += f" (rho={self.rho:g}-zCDP)"
        scale = (
            "data-dependent (not revealed)" if self.scale is None else significant(self.scale, 4)
        )
        if self.scale is not None and self.parameters.get("scale_units"):
            scale += f" ({self.parameters['scale_units']})"
        seeded = "  [SEEDED: reproducible, not secure]" if self.seeded else ""
        return (
            f"{head}\n  method={self.method}, noise={self.noise}, scale={scale}, "
            f"neighbours={self.neighbours}, {guarantee}{seeded}"
        )
