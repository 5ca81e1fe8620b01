r"""Quantiles by the exponential mechanism, on a data-independent power-of-two grid.

:func:`exponential_quantile` / :class:`ExponentialQuantile`: one quantile (Smith 2011),
pure :math:`\varepsilon`-DP under add-remove *and* substitute neighbours, sampled exactly
(docs/quantile_mechanisms.md derives every claim). JointExp (Gillenwater, Joseph and
Kulesza 2021; :func:`joint_quantiles`, :class:`JointExponentialQuantiles`) is withdrawn
until it has an exact sampler: those names raise an :class:`~dpsense.errors.InputError`
that names the alternative (one exponential quantile per level with a split budget).

**The grid.** From the public bounds only, :math:`\gamma = 2^{\lfloor \log_2(u - l)\rfloor
- 32}`; the candidate outputs are the grid points :math:`k\gamma` with integer
:math:`k \in [K_{lo}, K_{hi}] = [\lceil l/\gamma\rceil, \lfloor u/\gamma\rfloor]` (from
:math:`2^{32} - 1` to :math:`2^{33} + 1` of them). Each record is clipped to :math:`[l, u]` and
rounded to its nearest grid point, a per-record map, so neighbouring datasets stay
neighbours and no sensitivity changes. Every output is one of these grid points: the set of
possible outputs never depends on the data, which is what defeats the floating-point attack
of Mironov (2012) on mechanisms whose output support moves with the data.

**Intervals.** Write :math:`z_1 \le \dots \le z_n` for the sorted rounded records (as grid
indices), :math:`z_0 = K_{lo}`, :math:`z_{n+1} = K_{hi} + 1` and
:math:`N(k) = \#\{t : z_t \le k\}`. Interval :math:`i \in \{0, \dots, n\}` is the integer range
:math:`[z_i, z_{i+1})`; it holds :math:`c_i = z_{i+1} - z_i` grid points (0 for ties) and
:math:`N(k) = i` on all of them. Utilities depend on k only through :math:`N(k)`, so the
mechanism picks an interval first, with exactly the exponential mechanism's probability
(:class:`dpsense.noise.choice.ExponentialChoice`), then a grid point inside it uniformly
with exact integer sampling.

References
----------
A. Smith. "Privacy-preserving statistical estimation with optimal convergence rates."
STOC 2011, Section 3 (the exponential mechanism for quantiles).

J. Gillenwater, M. Joseph, A. Kulesza. "Differentially Private Quantiles." ICML 2021,
Section 3 (JointExp, withdrawn here).

F. McSherry, K. Talwar. "Mechanism Design via Differential Privacy." FOCS 2007
(the exponential mechanism).

I. Mironov. "On significance of the least significant bits for differential privacy."
CCS 2012 (floating-point attacks).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from dpsense._arrays import as_data
from dpsense.errors import InputError
from dpsense.noise.choice import ExponentialChoice, eta_at_most
from dpsense.noise.exact import uniform_below
from dpsense.noise.rng import RandomSource, resolve_rng
from dpsense.params import check_epsilon, check_int, check_probability, validate_bounds

__all__ = [
    "ExponentialQuantile",
    "JointExponentialQuantiles",
    "QuantileResult",
    "exponential_quantile",
    "joint_quantiles",
]

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]

_GRID_BITS: Final = 32
"""gamma = 2^(floor(log2(u - l)) - 32): at least 2^32 grid points between the bounds."""
_MAX_GRID_BITS: Final = 48
_MIN_NORMAL_EXPONENT: Final = -1022


# --------------------------------------------------------------------------------------
# The grid
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _QuantileGrid:
    """The candidate outputs :math:`k\\gamma`, :math:`K_{lo} \\le k \\le K_{hi}`.

    Grid points are handled as offsets ``k - K_lo`` in ``[0, size)``, which fit in int64
    even when ``K_lo`` itself does not.
    """

    lower: float
    upper: float
    spacing: float
    first: int
    size: int

    @classmethod
    def build(cls, lower: float, upper: float, bits: int, where: str) -> _QuantileGrid:
        width = upper - lower
        if not math.isfinite(width):
            raise InputError(
                f"The bounds of {where} are too far apart: upper - lower overflows a double. "
                "Narrow the interval."
            )
        _, exponent = math.frexp(width)  # width = m 2^e with 1/2 <= m < 1
        grid_exponent = exponent - 1 - bits  # floor(log2(width)) - bits
        if grid_exponent < _MIN_NORMAL_EXPONENT:
            raise InputError(
                f"The bounds of {where} are too close together for the output grid "
                f"(upper - lower = {width:g}); widen the interval."
            )
        spacing = math.ldexp(1.0, grid_exponent)
        # lower/spacing is exact (division by a power of two) and so are ceil and floor,
        # except for a quotient that underflows (a subnormal bound over a spacing > 1)
        first = math.ceil(lower / spacing)
        last = math.floor(upper / spacing)
        if first * spacing < lower:
            first += 1
        if last * spacing > upper:
            last -= 1
        return cls(lower, upper, spacing, first, last - first + 1)

    def offsets(self, x: F64) -> I64:
        """Each record clipped to [lower, upper] and rounded to its nearest grid point."""
        scaled = np.rint(np.clip(x, self.lower, self.upper) / self.spacing)
        # both operands are integer-valued doubles and the difference is an integer below
        # 2^50, so the subtraction is exact
        offsets = np.clip(scaled - float(self.first), 0.0, float(self.size - 1))
        return offsets.astype(np.int64)

    def values(self, offsets: I64) -> F64:
        """The doubles ``(K_lo + offset) * spacing`` (exact while K_lo + offset < 2^53).

        Beyond 2^53 the integer is rounded to the nearest double before the (exact)
        multiplication: still a fixed, data-independent, non-decreasing function of the
        offset, with values in [lower, upper].
        """
        k = float(self.first) + np.asarray(offsets, dtype=np.float64)
        return np.asarray(k * self.spacing, dtype=np.float64)


def _check_grid_bits(bits: object, where: str) -> int:
    value = check_int(bits, "_grid_bits", where=where, minimum=1)
    if value > _MAX_GRID_BITS:
        raise InputError(
            f"The '_grid_bits' parameter of {where} must be an int in [1, {_MAX_GRID_BITS}]. "
            f"Got {bits!r} instead."
        )
    return value


def _interval_edges(sorted_offsets: I64, size: int) -> tuple[I64, I64]:
    """Edges z_0 = 0, z_1..z_n, z_{n+1} = size (as offsets) and the counts c_i."""
    n = sorted_offsets.size
    edges = np.empty(n + 2, dtype=np.int64)
    edges[0] = 0
    edges[1:-1] = sorted_offsets
    edges[-1] = size
    return edges, np.diff(edges)


# --------------------------------------------------------------------------------------
# One quantile (Smith 2011)
# --------------------------------------------------------------------------------------


def _single_choice(counts: I64, p: float, epsilon: float) -> ExponentialChoice:
    r"""Interval i with probability exactly :math:`\propto c_i e^{-(\varepsilon/2)|i - pn|}`.

    The exact score is the rational :math:`|i - pn|` (p a double); its float evaluation
    ``|i - p*n|`` rounds twice, each time by at most :math:`2^{-53}` of a value below
    :math:`2n`, hence the certified ``score_error`` :math:`2^{-50}(n + 1)`. The multiplier
    is :math:`\varepsilon/2`, rounded down if halving is inexact.
    """
    n = counts.size - 1
    target = Fraction(p) * n
    scores = np.abs(np.arange(n + 1, dtype=np.float64) - p * n)
    return ExponentialChoice(
        counts.astype(np.float64),
        scores,
        eta_at_most(epsilon, 2.0),
        exact_score=lambda i: abs(i - target),
        score_error=2.0**-50 * (n + 1),
    )


def _sample_single(
    rng: RandomSource,
    sorted_offsets: I64,
    size: int,
    p: float,
    epsilon: float,
    draws: int,
    *,
    _exact: bool = False,
) -> I64:
    """``draws`` independent outputs (grid offsets) of the single-quantile mechanism."""
    edges, counts = _interval_edges(sorted_offsets, size)
    chosen = _single_choice(counts, p, epsilon).sample(rng, draws, _exact=_exact)
    inside = uniform_below(rng, counts[chosen].astype(np.uint64)).astype(np.int64)
    return np.asarray(edges[chosen] + inside, dtype=np.int64)


class _OnGrid:
    """Grid plumbing shared by the quantile mechanisms (the grid is public: bounds only)."""

    lower: float
    upper: float
    _grid_bits: int
    _grid: _QuantileGrid

    def _set_grid(self, where: str) -> None:
        bounds = validate_bounds(self.lower, self.upper, where=where)
        bits = _check_grid_bits(self._grid_bits, where)
        object.__setattr__(self, "lower", bounds.lower)
        object.__setattr__(self, "upper", bounds.upper)
        object.__setattr__(self, "_grid_bits", bits)
        object.__setattr__(
            self, "_grid", _QuantileGrid.build(bounds.lower, bounds.upper, bits, where)
        )

    @property
    def grid(self) -> float:
        """The grid spacing gamma (a power of two): every output is a multiple of it."""
        return self._grid.spacing

    @property
    def grid_size(self) -> int:
        """The number G of candidate outputs (grid points in [lower, upper])."""
        return self._grid.size


@dataclass(frozen=True)
class QuantileResult:
    """A released quantile and how it was made.

    Attributes
    ----------
    value : float
        The released quantile, a multiple of ``grid`` in ``[lower, upper]``.
    epsilon : float
        The privacy guarantee (pure epsilon-DP under add-remove and substitute).
    grid : float
        The output grid spacing, a power of two fixed by the bounds alone.
    seeded : bool
        True when a reproducible, non-cryptographic generator produced the randomness.
    mechanism : str
        ``"exponential-quantile"``.
    """

    value: float
    epsilon: float
    grid: float
    seeded: bool
    mechanism: str = "exponential-quantile"


@dataclass(frozen=True)
class ExponentialQuantile(_OnGrid):
    r"""The exponential mechanism for one quantile (Smith 2011), on a power-of-two grid.

    The output is the grid point k with probability

    .. math::

        P(k) \propto \exp\left(\frac{\varepsilon\, u(x, k)}{2 \Delta u}\right),
        \qquad u(x, k) = -\left| N(k) - p n \right|, \qquad \Delta u = 1,

    where :math:`N(k)` counts the rounded records at or below grid point k. All grid points
    of interval i share :math:`u = -|i - pn|`, so the sampler picks interval i with
    probability exactly :math:`\propto c_i \exp(-\varepsilon |i - pn| / 2)` (empty
    intervals never), by :class:`dpsense.noise.choice.ExponentialChoice`, then a uniform
    grid point inside it with exact integer sampling.

    Sensitivity: adding a record changes :math:`N(k) - pn` by :math:`1 - p` or
    :math:`-p`; removing one by :math:`p - 1` or :math:`p`; a substitution changes
    :math:`N(k)` by at most 1 and leaves n fixed. So :math:`\Delta u = 1` under both
    relations and the mechanism is :math:`\varepsilon`-DP under both.

    Parameters
    ----------
    p : float
        The quantile level in (0, 1).
    lower, upper : float
        Public bounds; records are clipped to them, and every output lies in them.
    epsilon : float
        The privacy budget.

    Notes
    -----
    Time O(n log n) (one sort) and memory O(n). The empty dataset is allowed: its output
    is uniform over the grid. Every probability above is the one the code produces,
    tails included (docs/quantile_mechanisms.md, "What is exact").

    References
    ----------
    A. Smith, STOC 2011, Section 3; F. McSherry and K. Talwar, FOCS 2007;
    docs/quantile_mechanisms.md.
    """

    p: float
    lower: float
    upper: float
    epsilon: float
    _grid_bits: int = field(default=_GRID_BITS, repr=False)
    _grid: _QuantileGrid = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        where = "ExponentialQuantile"
        self._set_grid(where)
        object.__setattr__(self, "p", check_probability(self.p, where=where))
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon, where=where))

    def release(self, x: Any, rng: object = None) -> QuantileResult:
        """Release the quantile of ``x`` (clipped to the bounds); epsilon-DP.

        Parameters
        ----------
        x : array_like
            One-dimensional finite numbers; may be empty.
        rng : None, int, numpy.random.Generator or RandomSource
            None (default) uses the OS CSPRNG; a seed is for tests and demos and warns.

        Returns
        -------
        QuantileResult
        """
        where = "ExponentialQuantile.release"
        data = as_data(x, where=where, allow_empty=True)
        source = resolve_rng(rng, where=where)
        offsets = np.sort(self._grid.offsets(data))
        out = _sample_single(source, offsets, self._grid.size, self.p, self.epsilon, 1)
        value = float(self._grid.values(out)[0])
        return QuantileResult(value, self.epsilon, self._grid.spacing, source.seeded)

    def accuracy(self, n: int, beta: float = 0.05) -> float:
        r"""A rank-error bound that holds with probability at least ``1 - beta``.

        With :math:`E(k) = |N(k) - pn|` the rank error of grid point k and
        :math:`E^* = \min_k E(k)` the best achievable one (at most 1/2 when the rounded
        records are distinct), the exponential mechanism over the G grid points gives

        .. math::

            P\left[E(o) > E^* + t\right] \le G\, e^{-\varepsilon t / (2 \Delta u)},
            \qquad
            t_\beta = \frac{2 \Delta u}{\varepsilon}\left(\ln G + \ln\frac{1}{\beta}\right),

        with :math:`\Delta u = 1`. The returned value is :math:`\min(t_\beta,
        \max(p, 1-p)\, n)` (no output has a rank error above :math:`\max(p, 1-p) n`).

        The often-quoted :math:`\frac{2}{\varepsilon}(\ln(n+1) + \ln\frac{1}{\beta})`
        assumes the best interval holds a 1/(n+1) share of the grid and is false in
        general: a wide gap between records, a few ranks from the target, can attract
        almost all the probability (docs/quantile_mechanisms.md gives the example).

        Parameters
        ----------
        n : int
            The number of records (a planning value: under add-remove n is private).
        beta : float
            The failure probability, in (0, 1).

        Returns
        -------
        float
            The bound on :math:`E(o) - E^*`, in ranks.

        References
        ----------
        C. Dwork and A. Roth, "The Algorithmic Foundations of Differential Privacy",
        2014, Theorem 3.11.
        """
        where = "ExponentialQuantile.accuracy"
        records = check_int(n, "n", where=where, minimum=0)
        failure = check_probability(beta, "beta", where=where)
        bound = 2.0 / self.epsilon * (math.log(self._grid.size) + math.log(1.0 / failure))
        return min(bound, max(self.p, 1.0 - self.p) * records)


def exponential_quantile(
    x: Any,
    p: float,
    *,
    lower: float,
    upper: float,
    epsilon: float,
    rng: object = None,
    _grid_bits: int = _GRID_BITS,
) -> float:
    r"""An epsilon-DP quantile by the exponential mechanism (Smith 2011).

    The output is the grid point k (a multiple of
    :math:`\gamma = 2^{\lfloor\log_2(u-l)\rfloor - 32}` in [lower, upper]) with probability

    .. math:: P(k) \propto \exp\left(-\frac{\varepsilon}{2} \left|N(k) - p n\right|\right),

    :math:`N(k)` the number of rounded records at or below k. See
    :class:`ExponentialQuantile` for the sampler and the sensitivity argument.

    Parameters
    ----------
    x : array_like
        One-dimensional finite numbers; may be empty.
    p : float
        The quantile level in (0, 1).
    lower, upper : float
        Public bounds.
    epsilon : float
        The privacy budget.
    rng : None, int, numpy.random.Generator or RandomSource
        None (default) uses the OS CSPRNG.

    Returns
    -------
    float

    References
    ----------
    A. Smith, STOC 2011, Section 3; docs/quantile_mechanisms.md.
    """
    source = resolve_rng(rng, where="exponential_quantile")
    mechanism = ExponentialQuantile(p, lower, upper, epsilon, _grid_bits=_grid_bits)
    return mechanism.release(x, source).value


# --------------------------------------------------------------------------------------
# Several quantiles: JointExp (Gillenwater, Joseph and Kulesza 2021), withdrawn
# --------------------------------------------------------------------------------------


def _withdrawn(where: str) -> InputError:
    return InputError(
        f"{where}: JointExp is withdrawn because its sampler is not exact in floating "
        "point, which breaks its pure epsilon-DP claim. Release each of the m quantiles "
        "with exponential_quantile (or ExponentialQuantile) and epsilon / m each: by "
        "sequential composition the m releases together are epsilon-DP."
    )


@dataclass(frozen=True)
class JointExponentialQuantiles:
    """Withdrawn: constructing it raises :class:`~dpsense.errors.InputError`.

    JointExp (Gillenwater, Joseph and Kulesza 2021) samples its tuples from the
    conditional distributions of a dynamic program computed in floating point; no exact
    sampler exists here yet, so it is not offered (docs/quantile_mechanisms.md, section 4).
    Use :class:`ExponentialQuantile` once per level with a split budget.
    """

    ps: tuple[float, ...]
    lower: float
    upper: float
    epsilon: float

    def __post_init__(self) -> None:
        raise _withdrawn("JointExponentialQuantiles")


def joint_quantiles(
    x: Any,
    ps: Iterable[float],
    *,
    lower: float,
    upper: float,
    epsilon: float,
    rng: object = None,
) -> F64:
    """Withdrawn: always raises :class:`~dpsense.errors.InputError`.

    Release each quantile with :func:`exponential_quantile` and ``epsilon / m``
    (sequential composition gives epsilon for the m releases together).
    """
    raise _withdrawn("joint_quantiles")
