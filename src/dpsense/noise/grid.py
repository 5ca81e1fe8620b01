r"""Floating-point-safe noise: exact integer noise on a power-of-two grid.

A mechanism ``f(x) + noise`` computed in doubles leaks through the low-order bits of its
output (Mironov 2012). Here the value is rounded to a grid :math:`\gamma = 2^k` chosen from
public parameters only (sensitivity, epsilon, dimension), exact integer noise is added on
that grid, and the double output is a function of the resulting integer alone:

.. math:: M(x) = \gamma \left(\operatorname{rint}(f(x)/\gamma) + Z\right).

Rounding moves each coordinate by at most :math:`\gamma/2`, so the integer vector
:math:`\operatorname{rint}(f/\gamma)` has sensitivity at most
:math:`\lfloor\Delta_1/\gamma\rfloor + d` in L1 and :math:`\Delta_2/\gamma + \sqrt d` in L2;
the integer noise is calibrated to those inflated sensitivities, so the guarantee holds
exactly with respect to the real-valued sensitivity. This is the approach of OpenDP and of
Google's library; docs/noise.md gives the derivation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Final, TypeAlias

import numpy as np
from numpy.typing import NDArray

from dpsense._arrays import F64
from dpsense._exact_budget import float_up, sqrt_bounds
from dpsense.errors import InputError
from dpsense.noise.exact import discrete_gaussian, discrete_laplace
from dpsense.noise.rng import RandomSource

__all__ = [
    "GridNoise",
    "grid_gaussian",
    "grid_laplace",
    "pow2_at_most",
    "round_exact_to_grid",
    "round_to_grid",
]

Values: TypeAlias = "F64 | Sequence[Fraction]"
"""Doubles, or exact rationals (rounded to the grid in exact arithmetic, never via a double)."""
_LAPLACE_BITS: Final = 20  # grid = sensitivity / (d 2^20): inflation of at most 2^-20
_GAUSS_BITS: Final = 20  # integer sigma of at least 2^20 ...
_GAUSS_MAX_BITS: Final = 24  # ... and below 2^25
_INT_LIMIT: Final = 2.0**62


@dataclass(frozen=True)
class GridNoise:
    """What a grid mechanism did: the grid and the noise actually used."""

    grid: float
    """The grid spacing gamma = 2^k: every output is a multiple of it."""
    integer_scale: int
    """Noise scale in grid units (Laplace t, or the integer Gaussian sigma)."""
    scale: float
    """The effective noise scale in data units: ``integer_scale * grid`` (rounded up)."""


def pow2_at_most(value: float) -> float:
    """The largest power of two <= value (value > 0, finite)."""
    _, exponent = math.frexp(value)  # value = m 2^exponent with 0.5 <= m < 1
    return math.ldexp(1.0, exponent - 1)


def round_to_grid(values: F64, grid: float) -> NDArray[np.float64]:
    """``rint(values / grid)`` as integer-valued doubles (exact for a power-of-two grid)."""
    scaled = np.asarray(values, dtype=np.float64) / grid
    if not np.all(np.isfinite(scaled)):
        raise InputError(
            "A value is too large for the noise grid implied by the sensitivity; "
            "check the bounds and the sensitivity."
        )
    return np.rint(scaled)


def round_exact_to_grid(values: Sequence[Fraction], grid: float) -> list[int]:
    """``round(v / grid)`` (half to even, like ``rint``) in exact rational arithmetic.

    An exact value far from 0 relative to the grid (a mean near 2^52 with a sensitivity
    of 1) keeps every bit: nothing is rounded to a double before the noise is added.
    """
    g = Fraction(grid)
    cache: dict[Fraction, int] = {}
    out = []
    for v in values:
        m = cache.get(v)
        if m is None:
            m = cache[v] = round(v / g)
        out.append(m)
    return out


def _to_double(total: int, grid: float) -> float:
    try:
        return float(total) * grid
    except OverflowError:
        raise InputError(
            "A value is too large for the noise grid implied by the sensitivity; "
            "check the bounds and the sensitivity."
        ) from None


def _add_integer_noise(m: F64 | list[int], z: NDArray[np.int64], grid: float) -> F64:
    """grid * (m + z) where the sum is formed exactly as an integer, then converted.

    The conversion of the integer m + z to a double is post-processing of the private
    integer; int64 arithmetic is used only where it cannot overflow.
    """
    small = isinstance(m, np.ndarray) and np.all(np.abs(m) < _INT_LIMIT)
    if small and np.all(np.abs(z) < _INT_LIMIT):
        assert isinstance(m, np.ndarray)
        total = m.astype(np.int64) + z
        return np.asarray(total.astype(np.float64) * grid, dtype=np.float64)
    ms = m.tolist() if isinstance(m, np.ndarray) else m
    out = np.empty(len(ms), dtype=np.float64)
    for i, (mi, zi) in enumerate(zip(ms, z.tolist(), strict=True)):
        out[i] = _to_double(int(mi) + int(zi), grid)
    return out


def _integers(values: Values, grid: float) -> F64 | list[int]:
    if isinstance(values, np.ndarray) and values.dtype != object:
        return round_to_grid(values, grid)
    return round_exact_to_grid([Fraction(v) for v in values], grid)


def _size(values: Values) -> int:
    if isinstance(values, np.ndarray):
        return int(values.size)
    return len(values)


def grid_laplace(
    values: Values, l1_sensitivity: float, epsilon: float, rng: RandomSource
) -> tuple[F64, GridNoise]:
    r"""Pure epsilon-DP Laplace noise on a power-of-two grid (exact integer noise).

    With d coordinates, :math:`\gamma = 2^{\lfloor \log_2(\Delta_1 / (d\,2^{20}))\rfloor}`,
    integer sensitivity :math:`\Delta_g = \lfloor \Delta_1/\gamma \rfloor + d` and integer
    scale :math:`t = \lceil \Delta_g / \varepsilon \rceil`, the discrete Laplace
    :math:`P(z) \propto e^{-|z|/t}` gives :math:`\Delta_g / t \le \varepsilon`.

    ``values`` is a flat float array, or a sequence of exact :class:`~fractions.Fraction`
    values, rounded to the grid in exact arithmetic.
    """
    size = _size(values)
    d = max(1, size)
    grid = pow2_at_most(l1_sensitivity / (d * 2.0**_LAPLACE_BITS))
    delta_g = math.floor(l1_sensitivity / grid) + d
    t = math.ceil(Fraction(delta_g) / Fraction(epsilon))
    m = _integers(values, grid)
    z = discrete_laplace(rng, Fraction(t), size)
    return _add_integer_noise(m, z, grid), GridNoise(grid, t, float_up(t * Fraction(grid)))


def grid_gaussian(
    values: Values, l2_sensitivity: float, sigma: float, rng: RandomSource
) -> tuple[F64, GridNoise]:
    r"""Gaussian noise of scale at least ``sigma`` on a power-of-two grid (exact integers).

    :math:`\gamma \approx \sigma / (2^{20}\sqrt d)` (a power of two, at least
    :math:`\sigma 2^{-25}`); the rounded values have L2
    sensitivity at most :math:`\Delta_2 + \gamma\sqrt d`, so the scale is raised in
    proportion, :math:`\sigma' = \sigma (\Delta_2 + \gamma \sqrt d)/\Delta_2`, and the
    integer scale is :math:`t = \lceil \sigma' / \gamma \rceil`. The noise-to-sensitivity
    ratio — hence every (epsilon, delta) and zCDP guarantee of the continuous Gaussian
    with scale sigma — is preserved or improved (docs/noise.md).
    """
    size = _size(values)
    d = max(1, size)
    # fine enough that rounding inflates the sensitivity by ~2^-20, but with the integer
    # sigma at most ~2^25 so the exact sampler stays in 64-bit arithmetic
    grid = max(
        pow2_at_most(sigma / math.sqrt(d)) * 2.0**-_GAUSS_BITS,
        pow2_at_most(sigma) * 2.0**-_GAUSS_MAX_BITS,
    )
    inflated = Fraction(sigma) * (Fraction(l2_sensitivity) + Fraction(grid) * sqrt_bounds(d, 20)[1])
    t = math.ceil(inflated / (Fraction(l2_sensitivity) * Fraction(grid)))
    m = _integers(values, grid)
    z = discrete_gaussian(rng, Fraction(t * t), size)
    return _add_integer_noise(m, z, grid), GridNoise(grid, t, float_up(t * Fraction(grid)))
