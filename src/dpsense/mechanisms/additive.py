r"""Additive noise mechanisms: Laplace, Gaussian, discrete Laplace, discrete Gaussian.

Each is an immutable object validated once at construction, with its noise scale, its
privacy guarantee and an accuracy statement. The contract functions ``laplace``,
``gaussian``, ``discrete_laplace`` and ``discrete_gaussian`` wrap them and return the noisy
value only. Arrays get independent noise per coordinate; vector sensitivities are L1 for
Laplace and L2 for Gaussian (Dwork and Roth 2014, Theorems 3.6 and A.1).

All noise is exact integer noise: on the integers for the discrete mechanisms, on a
power-of-two grid fixed by public parameters for the continuous ones
(:mod:`dpsense.noise.grid`), drawn from the OS CSPRNG unless a seed is given.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dpsense._exact_budget import (
    Real,
    exact,
    float_up,
    quotient_up,
    rational_at_least,
    sqrt_bounds,
)
from dpsense.errors import InputError, Param
from dpsense.mechanisms._common import (
    MechanismResult,
    as_exact_values,
    as_float_values,
    as_int_values,
    restore_shape,
)
from dpsense.mechanisms.calibration import analytic_gaussian_sigma, classic_gaussian_sigma
from dpsense.noise.exact import discrete_gaussian as _sample_dgauss
from dpsense.noise.exact import discrete_laplace as _sample_dlap
from dpsense.noise.grid import GridNoise, grid_gaussian, grid_laplace
from dpsense.noise.rng import RandomSource, resolve_rng
from dpsense.params import check_delta, check_epsilon, check_finite

__all__ = [
    "DiscreteGaussianMechanism",
    "DiscreteLaplaceMechanism",
    "GaussianMechanism",
    "LaplaceMechanism",
    "discrete_gaussian",
    "discrete_laplace",
    "gaussian",
    "laplace",
]

_MAX_DENOMINATOR = 2**20


def _check_sensitivity(value: object, where: str) -> float:
    s = check_finite(value, "sensitivity", where=where)
    if s < 0:
        raise InputError(
            Param("sensitivity", of=where), f" must be a float >= 0. Got {value!r} instead."
        )
    return s


def _rational_at_least(value: Real) -> Fraction:
    """``value`` as a fraction with denominator <= 2^20, rounded up (never less private)."""
    return rational_at_least(value, _MAX_DENOMINATOR)


def _as_doubles(flat: Any) -> NDArray[np.float64]:
    """A copy of the values as doubles (only where no noise is added at all)."""
    return np.array([float(v) for v in flat], dtype=np.float64)


def _restore(noisy: NDArray[np.float64], like: Any, scalar: bool, exact: bool) -> Any:
    if exact and not scalar:
        return noisy.reshape(np.shape(np.asarray(like, dtype=object)))
    return restore_shape(noisy, like, scalar)


_GridSampler = Callable[[Any, float, float, RandomSource], tuple[NDArray[np.float64], GridNoise]]
"""``grid_laplace`` or ``grid_gaussian``: (values, sensitivity, epsilon or sigma, rng)."""


def _grid_release(
    mechanism: str,
    sampler: _GridSampler,
    sensitivity: float,
    parameter: float,
    value: Any,
    rng: object,
    guarantee: tuple[float, float],
    rho: float | None = None,
) -> MechanismResult:
    """``value`` plus the grid noise of ``sampler`` (none at all for sensitivity 0): the
    release of the Laplace and the Gaussian mechanisms (exact Fractions as for Laplace)."""
    exact = as_exact_values(value, mechanism)
    flat, scalar = exact if exact is not None else as_float_values(value, mechanism)
    source = resolve_rng(rng, where=mechanism)
    if sensitivity == 0.0:
        noisy, scale, grid = _as_doubles(flat), 0.0, None
    else:
        noisy, info = sampler(flat, sensitivity, parameter, source)
        scale, grid = info.scale, info.grid
    return MechanismResult(
        _restore(noisy, value, scalar, exact is not None),
        mechanism,
        *guarantee,
        scale,
        grid,
        source.seeded,
        rho,
    )


def _accuracy_sentence(accuracy: float, beta: float) -> str:
    """The accuracy statement of the Laplace and the Gaussian mechanisms."""
    return (
        f"within ±{accuracy:.4g} of the true value with probability {1 - beta:.3g} (per coordinate)"
    )


@dataclass(frozen=True)
class LaplaceMechanism:
    r"""The Laplace mechanism: :math:`f(x) + \mathrm{Lap}(\Delta_1/\varepsilon)` per coordinate.

    Pure epsilon-DP for a query with L1 sensitivity :math:`\Delta_1` (Dwork, McSherry,
    Nissim and Smith 2006; Dwork and Roth 2014, Theorem 3.6). Noise is exact discrete
    Laplace on a power-of-two grid, calibrated to the rounding-inflated sensitivity, so the
    guarantee is exact.

    Parameters
    ----------
    sensitivity : float
        L1 sensitivity of the query (>= 0).
    epsilon : float
        Privacy parameter (> 0).
    """

    sensitivity: float
    epsilon: float

    def __post_init__(self) -> None:
        where = "LaplaceMechanism"
        object.__setattr__(self, "sensitivity", _check_sensitivity(self.sensitivity, where))
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon, where=where))

    @property
    def scale(self) -> float:
        """The Laplace scale b = sensitivity / epsilon, rounded up (docs/noise.md §8)."""
        return quotient_up(self.sensitivity, self.epsilon)

    def release(self, value: Any, rng: object = None) -> MechanismResult:
        """Add noise to ``value`` (scalar or array).

        ``value`` may also be an exact :class:`~fractions.Fraction` (or a list of them):
        it is then rounded to the noise grid in exact arithmetic (a statistic's
        ``_value_exact``), and the result is a float (or a float array).
        """
        return _grid_release(
            "laplace", grid_laplace, self.sensitivity, self.epsilon, value, rng, (self.epsilon, 0.0)
        )

    def accuracy(self, beta: float = 0.05, *, dimension: int = 1) -> float:
        r"""a with :math:`P(\max_i |Z_i| > a) \le \beta`: :math:`a = b \ln(d/\beta)`."""
        return self.scale * math.log(dimension / beta)

    def accuracy_statement(self, beta: float = 0.05) -> str:
        """A sentence: within +-a with probability 1 - beta."""
        return _accuracy_sentence(self.accuracy(beta), beta)


@dataclass(frozen=True)
class GaussianMechanism:
    r"""The Gaussian mechanism: :math:`f(x) + N(0, \sigma^2)` per coordinate.

    (epsilon, delta)-DP for a query with L2 sensitivity :math:`\Delta_2`. With
    ``analytic=True`` (default) sigma is the smallest value allowed by Balle & Wang (2018,
    Theorem 8); with ``analytic=False`` the classic
    :math:`\sigma = \Delta_2\sqrt{2\ln(1.25/\delta)}/\varepsilon`, refused for epsilon >= 1.

    The noise is an exact discrete Gaussian on a power-of-two grid whose integer scale keeps
    :math:`\Delta/\sigma` of the continuous mechanism (docs/noise.md). Its provable
    guarantee is :math:`\rho`-zCDP with :math:`\rho = \Delta_2^2/(2\sigma^2)` (Canonne,
    Kamath and Steinke 2020), identical to the continuous Gaussian; the (epsilon, delta)
    reported is the continuous mechanism's, which the discrete one matches up to the
    discretisation (at least 2^20 grid steps per sigma) and which the statistical audit in
    the test suite checks.
    """

    sensitivity: float
    epsilon: float
    delta: float
    analytic: bool = True
    sigma: float = field(init=False)

    def __post_init__(self) -> None:
        where = "GaussianMechanism"
        sens = _check_sensitivity(self.sensitivity, where)
        eps = check_epsilon(self.epsilon, where=where)
        dlt = check_delta(self.delta, where=where, positive=True)
        object.__setattr__(self, "sensitivity", sens)
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "delta", dlt)
        if sens == 0.0:
            sigma = 0.0
        elif self.analytic:
            sigma = analytic_gaussian_sigma(sens, eps, dlt)
        else:
            sigma = classic_gaussian_sigma(sens, eps, dlt)
        object.__setattr__(self, "sigma", sigma)

    @property
    def scale(self) -> float:
        """The Gaussian standard deviation sigma."""
        return self.sigma

    @property
    def rho(self) -> float:
        """zCDP parameter Delta^2 / (2 sigma^2)."""
        if self.sigma == 0:
            return 0.0
        return float_up(exact(self.sensitivity) ** 2 / (2 * exact(self.sigma) ** 2))

    def release(self, value: Any, rng: object = None) -> MechanismResult:
        """Add noise to ``value`` (scalar or array; exact Fractions as for Laplace)."""
        guarantee = (self.epsilon, self.delta)
        return _grid_release(
            "gaussian", grid_gaussian, self.sensitivity, self.sigma, value, rng, guarantee, self.rho
        )

    def accuracy(self, beta: float = 0.05, *, dimension: int = 1) -> float:
        r""":math:`a = \sigma\,\Phi^{-1}(1 - \beta/(2d))`: all d coordinates within +-a
        with probability at least 1 - beta."""
        from scipy import special  # lazy: scipy costs ~0.4 s to import

        return float(self.sigma * special.ndtri(1.0 - beta / (2.0 * dimension)))

    def accuracy_statement(self, beta: float = 0.05) -> str:
        """A sentence: within +-a with probability 1 - beta."""
        return _accuracy_sentence(self.accuracy(beta), beta)


@dataclass(frozen=True)
class DiscreteLaplaceMechanism:
    r"""Integer noise with :math:`P(z) \propto e^{-|z|/s}`; integers in, integers out.

    For an integer query with L1 sensitivity :math:`\Delta` it is
    :math:`(\Delta/s)`-DP. The scale is used exactly when it is a fraction with
    denominator at most 2^20, else rounded up to one (never less private). CKS 2020,
    Algorithm 2; sampled exactly.
    """

    scale: float

    def __post_init__(self) -> None:
        s = check_epsilon(self.scale, "scale", where="DiscreteLaplaceMechanism")
        object.__setattr__(self, "scale", s)

    @classmethod
    def for_privacy(cls, sensitivity: int, epsilon: float) -> DiscreteLaplaceMechanism:
        """The mechanism with scale sensitivity / epsilon, rounded up (docs/noise.md §8)."""
        sens = _check_sensitivity(sensitivity, "DiscreteLaplaceMechanism")
        return cls(quotient_up(sens, check_epsilon(epsilon, where="DiscreteLaplaceMechanism")))

    def epsilon_for(self, sensitivity: float) -> float:
        """The pure-DP epsilon for an integer query of this L1 sensitivity (rounded up)."""
        return quotient_up(sensitivity, _rational_at_least(self.scale))

    def release(self, value: Any, rng: object = None) -> MechanismResult:
        """Add integer noise to ``value`` (integer scalar or array)."""
        flat, scalar = as_int_values(value, "discrete_laplace")
        source = resolve_rng(rng, where="discrete_laplace")
        scale = _rational_at_least(self.scale)
        noisy = flat + _sample_dlap(source, scale, flat.size)
        return MechanismResult(
            restore_shape(noisy, value, scalar),
            "discrete-laplace",
            self.epsilon_for(1.0),
            0.0,
            float_up(scale),
            None,
            source.seeded,
        )

    def accuracy(self, beta: float = 0.05) -> float:
        r"""Smallest integer a with :math:`P(|Z| > a) \le \beta`.

        :math:`P(|Z| > a) = 2 e^{-(a+1)/s} / (1 + e^{-1/s})`.
        """
        s = float(_rational_at_least(self.scale))
        q = math.exp(-1.0 / s)
        a = s * math.log(2.0 / (beta * (1.0 + q))) - 1.0
        return float(max(0, math.ceil(a)))

    def accuracy_statement(self, beta: float = 0.05) -> str:
        """A sentence: within +-a with probability 1 - beta."""
        return (
            f"within ±{self.accuracy(beta):.0f} of the true value with probability "
            f"{1 - beta:.3g} (per coordinate); epsilon = sensitivity / {self.scale:g}"
        )


@dataclass(frozen=True)
class DiscreteGaussianMechanism:
    r"""Integer noise with :math:`P(z) \propto e^{-z^2/(2\sigma^2)}`; integers in and out.

    For an integer query with L2 sensitivity :math:`\Delta` it is :math:`\rho`-zCDP with
    :math:`\rho = \Delta^2/(2\sigma^2)` (CKS 2020, Theorem 4). sigma^2 is used exactly when
    it is a fraction with denominator at most 2^20, else rounded up. CKS Algorithm 3.
    """

    sigma: float

    def __post_init__(self) -> None:
        s = check_epsilon(self.sigma, "sigma", where="DiscreteGaussianMechanism")
        object.__setattr__(self, "sigma", s)

    def rho_for(self, sensitivity: float) -> float:
        """zCDP rho for an integer query with this L2 sensitivity."""
        return float_up(exact(sensitivity) ** 2 / (2 * self._sigma2))

    @property
    def _sigma2(self) -> Fraction:
        """sigma^2 as used by the sampler: exact, or rounded up to denominator 2^20."""
        return _rational_at_least(exact(self.sigma) ** 2)

    def release(self, value: Any, rng: object = None) -> MechanismResult:
        """Add integer noise to ``value`` (integer scalar or array)."""
        flat, scalar = as_int_values(value, "discrete_gaussian")
        source = resolve_rng(rng, where="discrete_gaussian")
        sigma2 = self._sigma2
        noisy = flat + _sample_dgauss(source, sigma2, flat.size)
        return MechanismResult(
            restore_shape(noisy, value, scalar),
            "discrete-gaussian",
            math.nan,
            math.nan,
            float_up(sqrt_bounds(sigma2)[1]),
            None,
            source.seeded,
            self.rho_for(1.0),
        )

    def accuracy(self, beta: float = 0.05) -> float:
        r""":math:`a = \sigma\sqrt{2\ln(2/\beta)}`: the discrete Gaussian is sub-Gaussian
        with variance proxy sigma^2 (CKS 2020, Corollary 18), so P(|Z| >= a) <= beta."""
        return math.floor(self.sigma * math.sqrt(2.0 * math.log(2.0 / beta))) + 0.0

    def accuracy_statement(self, beta: float = 0.05) -> str:
        """A sentence: within +-a with probability 1 - beta."""
        return (
            f"within ±{self.accuracy(beta):.0f} of the true value with probability at least "
            f"{1 - beta:.3g} (per coordinate)"
        )


def laplace(value: Any, *, sensitivity: float, epsilon: float, rng: object = None) -> Any:
    """Laplace mechanism: ``value`` plus Laplace(sensitivity/epsilon) noise (pure epsilon).

    ``value`` may be a scalar or an array (L1 ``sensitivity``); see :class:`LaplaceMechanism`.
    """
    return LaplaceMechanism(sensitivity, epsilon).release(value, rng).value


def gaussian(
    value: Any,
    *,
    sensitivity: float,
    epsilon: float,
    delta: float,
    analytic: bool = True,
    rng: object = None,
) -> Any:
    """Gaussian mechanism, (epsilon, delta)-DP for L2 ``sensitivity``.

    See :class:`GaussianMechanism`; ``analytic=False`` uses the classic formula (epsilon < 1).
    """
    return GaussianMechanism(sensitivity, epsilon, delta, analytic).release(value, rng).value


def discrete_laplace(value: Any, *, scale: float, rng: object = None) -> Any:
    """Integer ``value`` plus exact discrete Laplace noise of the given scale."""
    return DiscreteLaplaceMechanism(scale).release(value, rng).value


def discrete_gaussian(value: Any, *, sigma: float, rng: object = None) -> Any:
    """Integer ``value`` plus exact discrete Gaussian noise of the given sigma."""
    return DiscreteGaussianMechanism(sigma).release(value, rng).value
