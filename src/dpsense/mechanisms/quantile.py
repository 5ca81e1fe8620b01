r"""Quantiles by the exponential mechanism, on a data-independent power-of-two grid.

Two mechanisms, both pure :math:`\varepsilon`-DP under add-remove *and* substitute
neighbours (docs/quantile_mechanisms.md derives every claim):

* :func:`exponential_quantile` / :class:`ExponentialQuantile`: one quantile (Smith 2011);
* :func:`joint_quantiles` / :class:`JointExponentialQuantiles`: m quantiles at once, JointExp
  (Gillenwater, Joseph and Kulesza 2021).

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
mechanisms pick intervals first (Gumbel-max in log space) and then grid points inside them
uniformly with exact integer sampling.

References
----------
A. Smith. "Privacy-preserving statistical estimation with optimal convergence rates."
STOC 2011, Section 3 (the exponential mechanism for quantiles).

J. Gillenwater, M. Joseph, A. Kulesza. "Differentially Private Quantiles." ICML 2021,
Section 3 (JointExp: utility, sensitivity Lemma, sampling by dynamic programming).

F. McSherry, K. Talwar. "Mechanism Design via Differential Privacy." FOCS 2007
(the exponential mechanism).

I. Mironov. "On significance of the least significant bits for differential privacy."
CCS 2012 (floating-point attacks).

J. Bentley, R. Floyd. "Programming pearls: a sample of brilliance." CACM 30(9), 1987
(uniform random subsets with one draw per element).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from dpsense._arrays import as_data
from dpsense.errors import InputError
from dpsense.noise.continuous import gumbel
from dpsense.noise.exact import uniform_below
from dpsense.noise.rng import RandomSource, resolve_rng
from dpsense.params import check_epsilon, check_int, check_probability, validate_bounds

__all__ = [
    "ExponentialQuantile",
    "JointExponentialQuantiles",
    "JointQuantileResult",
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
_SENTINEL: Final = np.iinfo(np.int64).max


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


def _gumbel(rng: RandomSource, size: int) -> F64:
    """Standard Gumbel variates with every value finite.

    ``RandomSource.uniform`` can round ``(k + 1/2) 2^-53`` up to exactly 1.0 for the largest
    k (probability 2^-53), which gives an infinite Gumbel; that draw is repeated, so the
    uniform is conditioned on the values strictly inside (0, 1) that it is meant to take.
    """
    with np.errstate(divide="ignore"):
        g = gumbel(rng, size)
        bad = np.flatnonzero(~np.isfinite(g))
        while bad.size:
            g[bad] = gumbel(rng, bad.size)
            bad = bad[~np.isfinite(g[bad])]
    return g


def _argmax_gumbel_rows(rng: RandomSource, log_weights: F64) -> I64:
    """One index per row, with probability proportional to exp(log_weights) (Gumbel-max)."""
    rows, cols = log_weights.shape
    noisy = log_weights + _gumbel(rng, rows * cols).reshape(rows, cols)
    return np.asarray(np.argmax(noisy, axis=1), dtype=np.int64)


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


def _single_log_weights(counts: I64, p: float, epsilon: float) -> F64:
    r"""log c_i - (eps/2)|i - p n| for non-empty intervals, -inf for empty ones."""
    n = counts.size - 1
    log_weights = np.full(counts.size, -np.inf)
    ranks = np.flatnonzero(counts > 0)
    log_weights[ranks] = np.log(counts[ranks]) - 0.5 * epsilon * np.abs(ranks - p * n)
    return log_weights


def _sample_single(
    rng: RandomSource, sorted_offsets: I64, size: int, p: float, epsilon: float, draws: int
) -> I64:
    """``draws`` independent outputs (grid offsets) of the single-quantile mechanism."""
    edges, counts = _interval_edges(sorted_offsets, size)
    log_weights = _single_log_weights(counts, p, epsilon)
    candidates = np.flatnonzero(counts > 0)
    chosen = candidates[_argmax_gumbel_rows(rng, np.tile(log_weights[candidates], (draws, 1)))]
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
    probability :math:`\propto c_i \exp(-\varepsilon |i - pn| / 2)` by Gumbel-max over
    :math:`\log c_i - \varepsilon |i - pn|/2` (empty intervals excluded), then a uniform
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
    is uniform over the grid. The Gumbel variates come from 53-bit uniforms, so interval
    probabilities are not exact (docs/quantile_mechanisms.md, "What is exact").

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
# Several quantiles (JointExp, Gillenwater, Joseph and Kulesza 2021)
# --------------------------------------------------------------------------------------


def _window_logsumexp(values: F64, width: int) -> F64:
    """``out[t] = log sum exp(values[max(0, t-width+1) .. t])`` in O(len) without subtraction.

    Blocks of ``width``: a window is a suffix of one block and a prefix of the next
    (van Herk / Gil-Werman), so only additions in log space are needed.
    """
    length = values.size
    if width >= length:
        return np.asarray(np.logaddexp.accumulate(values), dtype=np.float64)
    blocks = -(-length // width)
    padded = np.full(blocks * width, -np.inf)
    padded[:length] = values
    table = padded.reshape(blocks, width)
    prefix = np.logaddexp.accumulate(table, axis=1).reshape(-1)[:length]
    suffix = np.logaddexp.accumulate(table[:, ::-1], axis=1)[:, ::-1].reshape(-1)[:length]
    out = prefix.copy()
    t = np.arange(length)
    start = t - width + 1
    spans = (start > 0) & (t % width != width - 1)
    out[spans] = np.logaddexp(suffix[start[spans]], prefix[spans])
    return np.asarray(out, dtype=np.float64)


def _log_convolve_past(log_f: F64, rate: float, target: float) -> F64:
    r"""``out[i] = log sum_{i' < i} exp(log_f[i'] - rate |i - i' - target|)`` in O(len).

    With :math:`\Delta = i - i' \ge 1` and :math:`T = \max(\lceil target\rceil, 1)`, the
    kernel is :math:`e^{rate\cdot target} e^{-rate \Delta}` for :math:`\Delta \ge T` (a
    prefix sum of :math:`f_{i'} e^{rate\, i'}`) and :math:`e^{-rate\cdot target}
    e^{rate \Delta}` for :math:`1 \le \Delta < T` (a sliding window of
    :math:`f_{i'} e^{-rate\, i'}`).
    """
    length = log_f.size
    index = np.arange(length, dtype=np.float64)
    out = np.full(length, -np.inf)
    first = max(math.ceil(target), 1)
    if first < length:
        prefix = np.logaddexp.accumulate(log_f + rate * index)
        out[first:] = prefix[: length - first] + rate * (target - index[first:])
    width = first - 1
    if width >= 1 and length >= 2:
        window = _window_logsumexp(log_f - rate * index, width)
        out[1:] = np.logaddexp(out[1:], window[:-1] + rate * (index[1:] - target))
    return out


@dataclass(frozen=True)
class _JointTables:
    """The forward tables of the JointExp dynamic program (all in log space).

    ``log_f[j, i]``: total weight of quantiles 1..j with quantile j the *last* of its group
    in interval i. ``log_g[j, i]``: weight of quantiles 1..j followed by quantile j+1 opening
    a group in interval i (the gap factor of quantile j+1 included). ``log_mult[r, i]``:
    log C(c_i + r - 1, r), the number of non-decreasing r-tuples of grid points in
    interval i. ``stay[j, r]``: the gap factors of quantiles j-r+2..j (gap 0).
    """

    edges: I64
    counts: I64
    rate: float
    targets: F64
    log_mult: F64
    stay: F64
    log_f: F64
    log_g: F64

    @property
    def n(self) -> int:
        return int(self.counts.size - 1)

    def log_total(self) -> F64:
        """Weight of each interval for the last quantile, the final gap included."""
        m = self.log_f.shape[0] - 1
        index = np.arange(self.counts.size, dtype=np.float64)
        gap = self.n - index - self.targets[m + 1]
        return np.asarray(self.log_f[m] - self.rate * np.abs(gap), dtype=np.float64)

    def group_terms(self, j: I64, i: I64) -> F64:
        """Log weight of each group size r = 1..m for last quantile j in interval i."""
        m = self.log_f.shape[0] - 1
        sizes = np.arange(1, m + 1)
        rows = j[:, None] - sizes[None, :]
        terms = (
            self.log_mult[sizes[None, :], i[:, None]]
            + self.stay[j[:, None], sizes[None, :]]
            + self.log_g[np.maximum(rows, 0), i[:, None]]
        )
        return np.asarray(np.where(rows >= 0, terms, -np.inf), dtype=np.float64)


def _joint_tables(
    sorted_offsets: I64, size: int, ps: tuple[float, ...], epsilon: float
) -> _JointTables:
    r"""Forward pass: O(m n) for the gaps, O(m^2 n) for the group sizes."""
    edges, counts = _interval_edges(sorted_offsets, size)
    n = int(sorted_offsets.size)
    length = n + 1
    m = len(ps)
    rate = epsilon / 4.0  # eps / (2 Delta u) with Delta u = 2
    levels = np.concatenate(([0.0], np.asarray(ps, dtype=np.float64), [1.0]))
    targets = np.concatenate(([0.0], np.diff(levels) * n))  # targets[j] = (p_j - p_{j-1}) n

    log_mult = np.zeros((m + 1, length))
    empty = counts == 0
    log_mult[:, empty] = -np.inf
    full = ~empty
    for r in range(1, m + 1):
        # C(c + r - 1, r) = C(c + r - 2, r - 1) (c + r - 1) / r
        log_mult[r, full] = log_mult[r - 1, full] + np.log1p((counts[full] - 1) / r)

    stay = np.zeros((m + 1, m + 1))
    for j in range(1, m + 1):
        for r in range(2, j + 1):
            stay[j, r] = stay[j, r - 1] - rate * targets[j - r + 2]

    index = np.arange(length, dtype=np.float64)
    log_f = np.full((m + 1, length), -np.inf)
    log_g = np.full((m, length), -np.inf)
    log_g[0] = -rate * np.abs(index - targets[1])
    for j in range(1, m + 1):
        acc = np.full(length, -np.inf)
        for r in range(1, j + 1):
            acc = np.logaddexp(acc, log_mult[r] + stay[j, r] + log_g[j - r])
        log_f[j] = acc
        if j < m:
            log_g[j] = _log_convolve_past(log_f[j], rate, float(targets[j + 1]))
    return _JointTables(edges, counts, rate, targets, log_mult, stay, log_f, log_g)


def _uniform_multisets(rng: RandomSource, points: I64, sizes: I64) -> I64:
    """For each group g a uniform non-decreasing ``sizes[g]``-tuple from ``[0, points[g])``.

    A k-multiset of c points is a k-subset of c + k - 1 stars-and-bars positions
    (s_1 < ... < s_k maps to s_t - (t - 1)); the subset is drawn by Floyd's algorithm, one
    exact uniform integer per element. Row g holds the tuple in columns ``[0, sizes[g])``.
    """
    groups = points.size
    widest = int(sizes.max(initial=0))
    chosen = np.full((groups, widest), _SENTINEL, dtype=np.int64)
    for step in range(widest):
        rows = np.flatnonzero(sizes > step)
        top = points[rows] - 1 + step  # Floyd: t runs over N - k .. N - 1, N = c + k - 1
        draw = uniform_below(rng, (top + 1).astype(np.uint64)).astype(np.int64)
        taken = (chosen[rows, :step] == draw[:, None]).any(axis=1)
        chosen[rows, step] = np.where(taken, top, draw)
    chosen.sort(axis=1)
    return np.asarray(chosen - np.arange(widest)[None, :], dtype=np.int64)


def _sample_joint(
    rng: RandomSource,
    sorted_offsets: I64,
    size: int,
    ps: tuple[float, ...],
    epsilon: float,
    draws: int,
) -> I64:
    """``draws`` independent outputs (rows of m non-decreasing grid offsets) of JointExp."""
    tables = _joint_tables(sorted_offsets, size, ps, epsilon)
    m = len(ps)
    length = tables.counts.size
    index = np.arange(length)

    current_j = np.full(draws, m, dtype=np.int64)
    current_i = _argmax_gumbel_rows(rng, np.tile(tables.log_total(), (draws, 1)))
    group_draw: list[I64] = []
    group_interval: list[I64] = []
    group_size: list[I64] = []
    group_first: list[I64] = []
    active = np.arange(draws)
    while active.size:
        j, i = current_j[active], current_i[active]
        r = 1 + _argmax_gumbel_rows(rng, tables.group_terms(j, i))
        group_draw.append(active)
        group_interval.append(i)
        group_size.append(r)
        group_first.append(j - r)
        j = j - r
        current_j[active] = j
        more = j > 0
        active, j, i = active[more], j[more], i[more]
        if active.size:
            gap = i[:, None] - index[None, :] - tables.targets[j + 1][:, None]
            log_w = tables.log_f[j] - tables.rate * np.abs(gap)
            log_w = np.where(index[None, :] < i[:, None], log_w, -np.inf)
            current_i[active] = _argmax_gumbel_rows(rng, log_w)

    draw_of = np.concatenate(group_draw)
    interval = np.concatenate(group_interval)
    sizes = np.concatenate(group_size)
    first = np.concatenate(group_first)
    inside = _uniform_multisets(rng, tables.counts[interval], sizes)
    out = np.empty((draws, m), dtype=np.int64)
    for position in range(int(sizes.max(initial=0))):
        rows = np.flatnonzero(sizes > position)
        out[draw_of[rows], first[rows] + position] = (
            tables.edges[interval[rows]] + inside[rows, position]
        )
    return out


def _check_levels(ps: object, where: str) -> tuple[float, ...]:
    if isinstance(ps, str | bytes) or not isinstance(ps, Iterable | np.ndarray):
        raise InputError(
            f"The 'ps' parameter of {where} must be a sequence of quantile levels in (0, 1). "
            f"Got an object of type {type(ps).__name__} instead."
        )
    levels = tuple(check_probability(v, "ps", where=where) for v in list(ps))
    if not levels:
        raise InputError(f"The 'ps' parameter of {where} must hold at least one level in (0, 1).")
    if any(b <= a for a, b in itertools.pairwise(levels)):
        raise InputError(
            f"The 'ps' parameter of {where} must be strictly increasing. Got {levels!r} "
            "instead; sort the levels and drop duplicates."
        )
    return levels


@dataclass(frozen=True)
class JointQuantileResult:
    """Several released quantiles and how they were made.

    Attributes
    ----------
    values : tuple of float
        The released quantiles, non-decreasing, multiples of ``grid`` in ``[lower, upper]``.
    ps : tuple of float
        The quantile levels, strictly increasing.
    epsilon : float
        The privacy guarantee for the whole tuple (pure epsilon-DP under both relations).
    grid : float
        The output grid spacing, a power of two fixed by the bounds alone.
    seeded : bool
        True when a reproducible, non-cryptographic generator produced the randomness.
    mechanism : str
        ``"joint-exponential-quantiles"``.
    """

    values: tuple[float, ...]
    ps: tuple[float, ...]
    epsilon: float
    grid: float
    seeded: bool
    mechanism: str = "joint-exponential-quantiles"

    @property
    def array(self) -> F64:
        """The values as a numpy array."""
        return np.asarray(self.values, dtype=np.float64)


@dataclass(frozen=True)
class JointExponentialQuantiles(_OnGrid):
    r"""JointExp: m quantiles from one exponential mechanism (Gillenwater et al. 2021).

    For non-decreasing grid points :math:`k_1 \le \dots \le k_m`, with
    :math:`k_0 = K_{lo} - 1`, :math:`k_{m+1} = K_{hi}`, :math:`p_0 = 0`, :math:`p_{m+1} = 1`,

    .. math::

        u(x, k) = -\sum_{j=1}^{m+1} \left| \#\{t : k_{j-1} < z_t \le k_j\}
                  - (p_j - p_{j-1})\, n \right|,
        \qquad
        P(k) \propto \exp\left(\frac{\varepsilon\, u(x, k)}{2 \Delta u}\right),
        \quad \Delta u = 2.

    The j-th count is :math:`N(k_j) - N(k_{j-1}) = i_j - i_{j-1}` for the intervals
    :math:`i_j` of the outputs, so the weight of an interval tuple
    :math:`i_1 \le \dots \le i_m` is the product of its gap factors
    :math:`\exp(-\varepsilon |i_j - i_{j-1} - (p_j - p_{j-1}) n| / 4)` and, for each run of
    r outputs sharing an interval of c grid points, the number of non-decreasing r-tuples
    :math:`\binom{c + r - 1}{r}`.

    Sensitivity: a substitution moves one record between two counts (each changes by at
    most 1, n fixed); adding or removing a record changes one count by 1 and the targets
    by :math:`(p_j - p_{j-1})`, which sum to 1. Either way :math:`|\Delta u| \le 2`.

    Parameters
    ----------
    ps : sequence of float
        Strictly increasing quantile levels in (0, 1).
    lower, upper : float
        Public bounds.
    epsilon : float
        The privacy budget for all m quantiles together.

    Notes
    -----
    Sampling is exact given the weights: a forward dynamic program over (quantile j,
    interval i) in log space, then backward sampling of intervals and group sizes
    (Gumbel-max), then a uniform non-decreasing tuple of grid points in each interval
    (stars and bars, exact integers). Time :math:`O(n \log n + m^2 n)` (one sort, then
    :math:`O(mn)` per quantile: the gap sums are prefix and sliding-window sums of
    exponentials, :math:`O(n)` each, and the run lengths cost :math:`O(jn)` at quantile j);
    memory :math:`O(mn)`.

    With m = 1 the utility is :math:`-2|N(k) - pn|` and :math:`\Delta u = 2`, so the output
    distribution :math:`\propto \exp(-\varepsilon |N(k) - pn|/2)` is exactly that of
    :class:`ExponentialQuantile` (Smith's mechanism with :math:`\Delta u = 1`).

    Counts use half-open ranges :math:`(k_{j-1}, k_j]`, the mirror image of the paper's
    :math:`[o_{j-1}, o_j)`: on a grid, where an output can coincide with a record, this
    counts a record at the output below it, as :math:`N(k)` does for the single quantile.

    References
    ----------
    J. Gillenwater, M. Joseph, A. Kulesza, "Differentially Private Quantiles", ICML 2021,
    Section 3; docs/quantile_mechanisms.md.
    """

    ps: tuple[float, ...]
    lower: float
    upper: float
    epsilon: float
    _grid_bits: int = field(default=_GRID_BITS, repr=False)
    _grid: _QuantileGrid = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        where = "JointExponentialQuantiles"
        levels = _check_levels(self.ps, where)
        self._set_grid(where)
        object.__setattr__(self, "ps", levels)
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon, where=where))

    def release(self, x: Any, rng: object = None) -> JointQuantileResult:
        """Release all m quantiles of ``x`` (clipped to the bounds); epsilon-DP in total.

        Parameters
        ----------
        x : array_like
            One-dimensional finite numbers; may be empty.
        rng : None, int, numpy.random.Generator or RandomSource
            None (default) uses the OS CSPRNG; a seed is for tests and demos and warns.

        Returns
        -------
        JointQuantileResult
        """
        where = "JointExponentialQuantiles.release"
        data = as_data(x, where=where, allow_empty=True)
        source = resolve_rng(rng, where=where)
        offsets = np.sort(self._grid.offsets(data))
        out = _sample_joint(source, offsets, self._grid.size, self.ps, self.epsilon, 1)[0]
        values = tuple(float(v) for v in self._grid.values(out))
        return JointQuantileResult(values, self.ps, self.epsilon, self._grid.spacing, source.seeded)


def joint_quantiles(
    x: Any,
    ps: Iterable[float],
    *,
    lower: float,
    upper: float,
    epsilon: float,
    rng: object = None,
    _grid_bits: int = _GRID_BITS,
) -> F64:
    r"""m quantiles at once by JointExp (Gillenwater, Joseph and Kulesza 2021); epsilon-DP.

    The non-decreasing grid-point tuple k is drawn with probability

    .. math::

        P(k) \propto \exp\left(-\frac{\varepsilon}{4} \sum_{j=1}^{m+1}
        \left|\#\{t : k_{j-1} < z_t \le k_j\} - (p_j - p_{j-1})\, n\right|\right)

    (utility sensitivity 2). See :class:`JointExponentialQuantiles`. Time
    :math:`O(n \log n + m^2 n)`.

    Parameters
    ----------
    x : array_like
        One-dimensional finite numbers; may be empty.
    ps : sequence of float
        Strictly increasing quantile levels in (0, 1).
    lower, upper : float
        Public bounds.
    epsilon : float
        The privacy budget for all m quantiles together.
    rng : None, int, numpy.random.Generator or RandomSource
        None (default) uses the OS CSPRNG.

    Returns
    -------
    numpy.ndarray
        m non-decreasing values, multiples of the grid spacing in [lower, upper].

    References
    ----------
    J. Gillenwater, M. Joseph, A. Kulesza, ICML 2021, Section 3;
    docs/quantile_mechanisms.md.
    """
    levels = _check_levels(ps, "joint_quantiles")
    source = resolve_rng(rng, where="joint_quantiles")
    mechanism = JointExponentialQuantiles(levels, lower, upper, epsilon, _grid_bits=_grid_bits)
    return mechanism.release(x, source).array
