r"""Quantiles by the exponential mechanism, exactly sampled on a public grid.

:func:`exponential_quantile` / :class:`ExponentialQuantile`: one quantile (Smith 2011) with
the tie-aware score, pure :math:`\varepsilon`-DP under the chosen neighbour relation and
sampled exactly (docs/quantile_mechanisms.md derives every claim). JointExp (Gillenwater,
Joseph and Kulesza 2021; :func:`joint_quantiles`, :class:`JointExponentialQuantiles`) is
withdrawn until it has an exact sampler: those names raise an
:class:`~dpsense.errors.InputError` that names the alternative.

**Candidates.** A public grid fixed by the bounds (and the declared ``resolution``), never by
the data (:mod:`dpsense.statistics._grid`): the multiples of a power of two
:math:`\gamma \approx 2^{-32}(u - l)` for continuous data, or ``lower + k * resolution``
when the data's possible values are declared (1 for integers). The set of possible outputs
never depends on the data, which defeats the floating-point attack of Mironov (2012).

**Score.** For candidate value v, with :math:`a = \#\{x < v\}`, :math:`b = \#\{x > v\}` and n
records, the tie-aware score :math:`u(v) = \max(0,\ a - pn,\ b - (1-p)n)`. It is 0 exactly when
v is a p-quantile of the records (at least :math:`pn` records at or below v and at least
:math:`(1-p)n` at or above it), ties included, and it equals the symmetric score
:math:`|(1 - p) a - p b|` of Gillenwater, Joseph and Kulesza (2021, Section 3.1) when no
record equals v. (On a grid, the symmetric score is wrong at a tied value: with many records
equal to the median it can prefer the next grid value.) Adding or removing one record moves
:math:`a - pn` and :math:`b - (1-p)n` each by :math:`1 - p` or :math:`p` (or leaves them),
so the score's sensitivity is :math:`\max(p, 1-p)` under add-remove (1/2 for the median);
a substitution moves each by at most 1. The output is v with probability
:math:`\propto \exp(-\varepsilon u(v) / (2 \Delta u))`.

**Sampler.** :mod:`dpsense.mechanisms._quantile_sampler`: O(n) time (one
``np.partition``, a sorted window of a few thousand ranks sized from public parameters, an
exact rejection step for the rest of the grid), every probability exact.

References
----------
A. Smith. "Privacy-preserving statistical estimation with optimal convergence rates."
STOC 2011, Section 3 (the exponential mechanism for quantiles).

J. Gillenwater, M. Joseph, A. Kulesza. "Differentially Private Quantiles." ICML 2021
(the symmetric utility, Section 3.1; JointExp, Section 3, withdrawn here).

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

from dpsense._arrays import F64, as_data
from dpsense._exact_budget import product_down
from dpsense.errors import Assign, InputError, Param
from dpsense.mechanisms._permute_flip import MAX_GRID as PF_MAX_GRID
from dpsense.mechanisms._permute_flip import pf_eta, sample_permute_and_flip
from dpsense.mechanisms._quantile_sampler import (
    QuantileScore,
    RecordSource,
    sample_quantile_indices,
)
from dpsense.neighbours import Neighbours, validate_neighbours
from dpsense.noise.choice import eta_at_most
from dpsense.noise.rng import RandomSource, resolve_rng
from dpsense.params import (
    check_epsilon,
    check_finite,
    check_int,
    check_probability,
    validate_bounds,
)
from dpsense.statistics._grid import (
    GRID_BITS,
    CandidateGrid,
    PowerOfTwoGrid,
    ResolutionGrid,
)

__all__ = [
    "ExponentialQuantile",
    "JointExponentialQuantiles",
    "QuantileResult",
    "exponential_quantile",
    "grid_selection",
    "joint_quantiles",
    "sample_on_grid",
]


_MAX_GRID_BITS: Final = 48
_MAX_DENOMINATOR: Final = 1_000_000


def _check_grid_bits(bits: object, where: str) -> int:
    value = check_int(bits, "_grid_bits", where=where, minimum=1)
    if value > _MAX_GRID_BITS:
        raise InputError(
            Param("_grid_bits", of=where),
            f" must be an int in [1, {_MAX_GRID_BITS}]. Got {bits!r} instead.",
        )
    return value


def quantile_score(p: float, epsilon: float, neighbours: Neighbours, where: str) -> QuantileScore:
    """The exact level p = num/den (denominator at most 10^6, as for ranks) and the
    multiplier eta = epsilon / (2 den Delta), rounded down, of the integer score."""
    frac = Fraction(p).limit_denominator(_MAX_DENOMINATOR)
    if not 0 < frac < 1:
        raise InputError(
            Param("p", of=where),
            f" must be a float in (0, 1) at least 1e-6 away from 0 and 1. Got {p!r} instead.",
        )
    num, den = frac.numerator, frac.denominator
    # den * Delta: max(num, den - num) under add-remove, den under substitute
    scaled_sensitivity = max(num, den - num) if neighbours == "add-remove" else den
    return QuantileScore(num, den, eta_at_most(epsilon, 2.0 * scaled_sensitivity))


def grid_selection(grid: CandidateGrid) -> str:
    """ "permute-and-flip" on grids of at most 2^16 candidates, else "exponential-mechanism"."""
    return "permute-and-flip" if grid.size <= PF_MAX_GRID else "exponential-mechanism"


def sample_on_grid(
    rng: RandomSource,
    xc: F64 | RecordSource,
    grid: CandidateGrid,
    score: QuantileScore,
    draws: int = 1,
    **private: Any,
) -> NDArray[np.int64]:
    """``draws`` grid indices, each an epsilon-DP choice for ``score`` (permute-and-flip on
    small grids, the exponential mechanism otherwise; both exact). ``xc`` is reordered, or
    is a :class:`RecordSource` for records held elsewhere (both read only a window of
    them, and all of them sorted only when the window does not suffice)."""
    if grid_selection(grid) == "permute-and-flip":
        return sample_permute_and_flip(rng, xc, grid, score, draws, **private)
    return sample_quantile_indices(rng, xc, grid, score, draws, **private)


@dataclass(frozen=True)
class QuantileResult:
    """A released quantile and how it was made.

    Attributes
    ----------
    value : float
        The released quantile, a grid value in ``[lower, upper]``.
    epsilon : float
        The privacy guarantee (pure epsilon-DP under ``neighbours``).
    grid : float
        The grid spacing (the power of two gamma, or the declared resolution).
    seeded : bool
        True when a reproducible, non-cryptographic generator produced the randomness.
    mechanism : str
        ``"exponential-quantile"``, or ``"permute-and-flip-quantile"`` on grids of at most
        2^16 candidates.
    """

    value: float
    epsilon: float
    grid: float
    seeded: bool
    mechanism: str = "exponential-quantile"


@dataclass(frozen=True)
class ExponentialQuantile:
    r"""The exponential mechanism for one quantile (Smith 2011), tie-aware score, exact.

    The output is the grid value :math:`v_k` with probability

    .. math::

        P(k) \propto \exp\left(-\frac{\varepsilon\, u(x, v_k)}{2 \Delta u}\right),
        \qquad u(x, v) = \left| (1 - p)\,\#\{x_i < v\} - p\,\#\{x_i > v\} \right|,

    with :math:`\Delta u = \max(p, 1 - p)` under add-remove and 1 under substitute, so the
    mechanism is :math:`\varepsilon`-DP under ``neighbours``. For the median under
    add-remove that is :math:`P \propto e^{-\varepsilon u}`: half the rank error of the
    rank-distance score at the same epsilon.

    Parameters
    ----------
    p : float
        The quantile level in (0, 1) (used as the nearest fraction with denominator at most
        10^6, as for ranks).
    lower, upper : float
        Public bounds; records are clipped to them, and every output lies in them.
    epsilon : float
        The privacy budget.
    resolution : float or None
        The public spacing of the values the data can take (1 for integers): the candidates
        are ``lower + k * resolution``. None (default): the power-of-two grid of at least
        2^32 points.
    neighbours : {"add-remove", "substitute"}
        The neighbour relation of the guarantee.

    Notes
    -----
    Time O(n) (one ``np.partition`` and a sorted window of O(log(G)/epsilon) ranks; the full
    sort only on small or degenerate data), memory one copy of the data. The empty dataset
    is allowed under add-remove: its output is uniform over the grid. Every probability
    above is the one the code produces, tails included (docs/quantile_mechanisms.md).

    References
    ----------
    A. Smith, STOC 2011, Section 3; J. Gillenwater, M. Joseph and A. Kulesza, ICML 2021,
    Section 3.1; F. McSherry and K. Talwar, FOCS 2007; docs/quantile_mechanisms.md.
    """

    p: float
    lower: float
    upper: float
    epsilon: float
    resolution: float | None = None
    neighbours: str = "add-remove"
    _grid_bits: int = field(default=GRID_BITS, repr=False)
    _grid: CandidateGrid = field(init=False, repr=False, compare=False)
    _score: QuantileScore = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        where = "ExponentialQuantile"
        bounds = validate_bounds(self.lower, self.upper, where=where)
        bits = _check_grid_bits(self._grid_bits, where)
        p = check_probability(self.p, where=where)
        eps = check_epsilon(self.epsilon, where=where)
        nb = validate_neighbours(self.neighbours, where=where)
        grid: CandidateGrid
        if self.resolution is None:
            grid = PowerOfTwoGrid.build(bounds.lower, bounds.upper, where, bits)
        else:
            res = check_finite(self.resolution, "resolution", where=where)
            if not res > 0:
                raise InputError(
                    Param("resolution", of=where),
                    f" must be a float > 0 or None. Got {self.resolution!r} instead.",
                )
            object.__setattr__(self, "resolution", res)
            grid = ResolutionGrid.build(bounds.lower, bounds.upper, res, where)
        object.__setattr__(self, "lower", bounds.lower)
        object.__setattr__(self, "upper", bounds.upper)
        object.__setattr__(self, "p", p)
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "neighbours", nb)
        object.__setattr__(self, "_grid_bits", bits)
        object.__setattr__(self, "_grid", grid)
        object.__setattr__(self, "_score", quantile_score(p, eps, nb, where))

    @property
    def grid(self) -> float:
        """The grid spacing (gamma, or the declared resolution)."""
        return self._grid.spacing

    @property
    def grid_size(self) -> int:
        """The number G of candidate outputs."""
        return self._grid.size

    @property
    def selection(self) -> str:
        """ "permute-and-flip" on grids of at most 2^16 candidates (never less accurate
        than the exponential mechanism, same epsilon), else "exponential-mechanism"."""
        return grid_selection(self._grid)

    def sample(
        self, xc: F64 | RecordSource, rng: RandomSource, draws: int = 1, **private: Any
    ) -> F64:
        """``draws`` independent outputs on the clipped records ``xc``, which are reordered
        in place (pass a copy you own). For :meth:`release`, methods and tests."""
        return self._grid.values(sample_on_grid(rng, xc, self._grid, self._score, draws, **private))

    def release(self, x: Any, rng: object = None) -> QuantileResult:
        """Release the quantile of ``x`` (clipped to the bounds); epsilon-DP.

        Parameters
        ----------
        x : array_like
            One-dimensional finite numbers; may be empty under add-remove.
        rng : None, int, numpy.random.Generator or RandomSource
            None (default) uses the OS CSPRNG; a seed is for tests and demos and warns.

        Returns
        -------
        QuantileResult
        """
        where = "ExponentialQuantile.release"
        data = as_data(x, where=where, allow_empty=True)
        if self.neighbours == "substitute" and data.shape[0] == 0:
            raise InputError(
                "The data of ExponentialQuantile.release has no records. Under ",
                Assign("neighbours", "substitute", quoted=True),
                " the number of records is public and there is nothing to release.",
            )
        source = resolve_rng(rng, where=where)
        return self.release_clipped(np.clip(data, self.lower, self.upper), source)

    def release_clipped(self, xc: F64 | RecordSource, rng: RandomSource) -> QuantileResult:
        """:meth:`release` on records already clipped, in a buffer the caller owns (it is
        reordered in place), or held by an engine (a :class:`RecordSource`)."""
        value = float(self.sample(xc, rng)[0])
        kind = f"{self.selection}-quantile".replace("exponential-mechanism", "exponential")
        return QuantileResult(value, self.epsilon, self.grid, rng.seeded, kind)

    def rank_bound(self) -> tuple[float, int] | None:
        """``(eta, G)`` for :func:`~dpsense.mechanisms.accuracy.selection_rank_halfwidth`:
        the selection's multiplier per rank of score (rounded down) and the number of
        candidates, when every value the clipped records can take is a candidate — a
        resolution grid whose last point is the upper bound (the lower bound is its first),
        the records being on the grid as its resolution declares. None otherwise (the
        power-of-two grid of continuous data: the best candidate's score, and so the rank
        error, depends on the data)."""
        grid = self._grid
        if not isinstance(grid, ResolutionGrid):
            return None
        if float(grid.values(np.array([grid.size - 1]))[0]) != grid.upper:
            return None
        eta = pf_eta(self._score) if self.selection == "permute-and-flip" else self._score.eta
        return product_down(eta, self._score.den), grid.size

    def accuracy(self, n: int, beta: float = 0.05) -> float:
        r"""A bound on the score error that holds with probability at least ``1 - beta``.

        With :math:`E(v) = |(1-p)\#\{x < v\} - p\#\{x > v\}|` (about the rank error of v)
        and :math:`E^*` its minimum over the grid, the exponential mechanism over G
        candidates gives (Dwork and Roth 2014, Theorem 3.11)

        .. math::

            P\left[E(o) > E^* + t\right] \le G\, e^{-\varepsilon t / (2 \Delta u)},
            \qquad
            t_\beta = \frac{2 \Delta u}{\varepsilon}\left(\ln G + \ln\frac{1}{\beta}\right).

        The returned value is :math:`\min(t_\beta, \max(p, 1-p)\, n)`.

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
        """
        where = "ExponentialQuantile.accuracy"
        records = check_int(n, "n", where=where, minimum=0)
        failure = check_probability(beta, "beta", where=where)
        sensitivity = max(self.p, 1.0 - self.p) if self.neighbours == "add-remove" else 1.0
        bound = (
            2.0 * sensitivity / self.epsilon * (math.log(self._grid.size) + math.log(1.0 / failure))
        )
        return min(bound, max(self.p, 1.0 - self.p) * records)


def exponential_quantile(
    x: Any,
    p: float,
    *,
    lower: float,
    upper: float,
    epsilon: float,
    resolution: float | None = None,
    neighbours: str = "add-remove",
    rng: object = None,
    _grid_bits: int = GRID_BITS,
) -> float:
    r"""An epsilon-DP quantile by the exponential mechanism (Smith 2011), tie-aware score.

    See :class:`ExponentialQuantile` for the distribution, the grid and the sensitivity.

    Parameters
    ----------
    x : array_like
        One-dimensional finite numbers; may be empty under add-remove.
    p : float
        The quantile level in (0, 1).
    lower, upper : float
        Public bounds.
    epsilon : float
        The privacy budget.
    resolution : float or None
        Public spacing of the possible values (1 for integers), or None.
    neighbours : {"add-remove", "substitute"}
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
    mechanism = ExponentialQuantile(
        p, lower, upper, epsilon, resolution, neighbours, _grid_bits=_grid_bits
    )
    return mechanism.release(x, source).value


# --------------------------------------------------------------------------------------
# Several quantiles: JointExp (Gillenwater, Joseph and Kulesza 2021), withdrawn
# --------------------------------------------------------------------------------------


def _withdrawn(where: str) -> InputError:
    return InputError(
        f"{where}: JointExp is withdrawn because its sampler is not exact in floating "
        "point, which breaks its pure epsilon-DP claim. Release several quantiles with "
        "ds.release(x, ds.Quantiles(ps, lower, upper), ",
        Assign("epsilon"),
        ") (recursive halving, exact), or each one with exponential_quantile and epsilon / m.",
    )


@dataclass(frozen=True)
class JointExponentialQuantiles:
    """Withdrawn: constructing it raises :class:`~dpsense.errors.InputError`.

    JointExp (Gillenwater, Joseph and Kulesza 2021) samples its tuples from the
    conditional distributions of a dynamic program computed in floating point; no exact
    sampler exists here yet, so it is not offered (docs/quantile_mechanisms.md, section 7).
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
