r"""Continuous noise drawn from CSPRNG bits by inversion (documented, not exact).

These samplers serve the mechanisms whose noise has no exact integer sampler here:
Gumbel (for the exponential mechanism), Cauchy and Student's t (smooth sensitivity, pure
epsilon) and Laplace-log-normal (smooth sensitivity, zCDP). Each draw inverts the CDF at a
uniform ``(k + 1/2) 2^{-52}`` built from 52 random bits. What is *not* exact:

* the uniform has 2^52 values, so quantiles beyond probability 2^-53 in either tail are
  never produced (the distribution is truncated there);
* the inverse CDF is evaluated in double precision (relative error ~1e-15).

Callers never release these doubles directly: the output is rounded to a grid fixed by
public parameters only (see :func:`dpsense.noise.grid.round_to_grid`), so the set of
possible outputs does not depend on the data (the floating-point attack of Mironov 2012
needs exactly that dependence). docs/noise.md bounds the effect of both approximations.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy import special

from dpsense.noise.rng import RandomSource

__all__ = ["cauchy", "gumbel", "laplace_log_normal", "standard_laplace", "student_t"]

F64 = NDArray[np.float64]


def gumbel(rng: RandomSource, size: int) -> F64:
    """Standard Gumbel variates ``-log(-log U)``."""
    return np.asarray(-np.log(-np.log(rng.uniform(size))), dtype=np.float64)


def cauchy(rng: RandomSource, size: int) -> F64:
    r"""Standard Cauchy, density :math:`1/(\pi(1+z^2))`: ``tan(pi (U - 1/2))``."""
    return np.asarray(np.tan(np.pi * (rng.uniform(size) - 0.5)), dtype=np.float64)


def student_t(rng: RandomSource, dof: float, size: int) -> F64:
    """Student's t with ``dof`` degrees of freedom, by scipy's inverse CDF ``stdtrit``."""
    return np.asarray(special.stdtrit(dof, rng.uniform(size)), dtype=np.float64)


def standard_laplace(rng: RandomSource, size: int) -> F64:
    """Laplace(0, 1) by inversion (only as a factor of the log-normal product)."""
    u = rng.uniform(size) - 0.5
    return np.asarray(-np.sign(u) * np.log1p(-2.0 * np.abs(u)), dtype=np.float64)


def laplace_log_normal(rng: RandomSource, sigma: float, size: int) -> F64:
    r"""Laplace-log-normal (Bun & Steinke 2019): :math:`X e^{\sigma Y}`, X ~ Laplace(1),
    Y ~ N(0, 1) (Y by scipy's ``ndtri``)."""
    y = special.ndtri(rng.uniform(size))
    return np.asarray(standard_laplace(rng, size) * np.exp(sigma * y), dtype=np.float64)
