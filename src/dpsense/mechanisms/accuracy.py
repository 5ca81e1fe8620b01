r"""Accuracy half-widths of the noise dpsense actually draws, from public quantities only.

A release :math:`y = \gamma(\mathrm{rint}(\hat f/\gamma) + Z)` (Laplace and Gaussian on a
power-of-two grid :math:`\gamma`, :mod:`dpsense.noise.grid`), where :math:`\hat f` is the
computed statistic, within a proven :math:`E` of the exact :math:`f`, satisfies

.. math:: |y - f| \le \gamma |Z| + \gamma/2 + E,

so :math:`P(|y - f| \le \gamma k + \gamma/2 + E) \ge 1 - \alpha` for the smallest integer k
with :math:`P(|Z| > k) \le \alpha`. Clipping the output to the statistic's range (which
contains f) only moves it closer to f. The integer tails:

* discrete Laplace, :math:`P(z) \propto e^{-|z|/t}`:
  :math:`P(|Z| > k) = 2 e^{-(k+1)/t} / (1 + e^{-1/t})` (exact);
* discrete Gaussian, :math:`P(z) \propto e^{-z^2/(2t^2)}`: comparing the sums with
  integrals of the decreasing tails,
  :math:`P(|Z| > k) \le 2\sqrt{2\pi}\,t\,Q(k/t) / (\sqrt{2\pi}\,t - 1)`, with Q the
  standard normal upper tail; for t of at least 2^20 grid steps this is within a relative
  2^-20 of the exact tail.

For continuous noise these are the textbook :math:`b \ln(1/\alpha)` (Laplace, scale b) and
:math:`\sigma \Phi^{-1}(1 - \alpha/2)` (Gaussian) up to a grid step.

**Ranks of a selection** (:func:`selection_rank_halfwidth`). The exponential mechanism or
permute-and-flip over G candidates with :math:`P \propto e^{-\eta u}` outputs a candidate
whose score exceeds the best one by more than t with probability at most
:math:`G e^{-\eta t}` (McSherry and Talwar 2007; for permute-and-flip each worse candidate is
accepted before the best with probability at most :math:`e^{-\eta t}`). For the tie-aware
quantile score, which is 0 at the released statistic when the data lie on the candidate
grid, a score of at most t means a rank within t of the target (docs/accuracy.md).
"""

from __future__ import annotations

import math
from fractions import Fraction

from dpsense._exact_budget import exact, log_bounds

__all__ = [
    "discrete_gaussian_halfwidth",
    "discrete_laplace_halfwidth",
    "grid_halfwidth",
    "selection_rank_halfwidth",
]


def _laplace_tail(k: int, t: float) -> float:
    """P(|Z| > k) for the discrete Laplace of scale t."""
    return 2.0 * math.exp(-(k + 1) / t) / (1.0 + math.exp(-1.0 / t))


def discrete_laplace_halfwidth(t: float, alpha: float) -> int:
    """The smallest integer k >= 0 with P(|Z| > k) <= alpha, Z ~ discrete Laplace(t)."""
    q = math.exp(-1.0 / t)
    k = max(0, math.ceil(t * math.log(2.0 / (alpha * (1.0 + q))) - 1.0))
    while _laplace_tail(k, t) > alpha:
        k += 1
    while k > 0 and _laplace_tail(k - 1, t) <= alpha:
        k -= 1
    return k


def _gaussian_tail(k: int, t: float) -> float:
    """An upper bound on P(|Z| > k) for the discrete Gaussian of scale t (see above)."""
    from scipy import special  # lazy: scipy costs ~0.4 s to import

    mass = math.sqrt(2.0 * math.pi) * t
    if mass <= 1.0:
        return 1.0
    return float(2.0 * mass * special.ndtr(-k / t) / (mass - 1.0))


def discrete_gaussian_halfwidth(t: float, alpha: float) -> int:
    """The smallest integer k >= 0 whose tail bound P(|Z| > k) is at most alpha."""
    from scipy import special

    k = max(0, math.ceil(t * float(special.ndtri(1.0 - alpha / 2.0))) - 1)
    while _gaussian_tail(k, t) > alpha:
        k += 1
    while k > 0 and _gaussian_tail(k - 1, t) <= alpha:
        k -= 1
    return k


def grid_halfwidth(
    noise: str, scale: float, grid: float, value_error: float, alpha: float
) -> float:
    """The half-width for a value released on a noise grid (see the module docstring).

    ``scale`` is the noise scale in data units (``t * grid``).
    """
    t = round(scale / grid)
    if noise == "laplace":
        k = discrete_laplace_halfwidth(t, alpha)
    elif noise == "gaussian":
        k = discrete_gaussian_halfwidth(t, alpha)
    else:
        raise ValueError(f"no half-width for {noise!r} noise")
    return grid * k + grid / 2.0 + value_error


def selection_rank_halfwidth(eta: float, candidates: int, alpha: float) -> int:
    r"""The smallest integer t >= 0 with :math:`G e^{-\eta t} \le \alpha`.

    ``eta`` is the selection's multiplier per unit of score (a rank for the quantile
    score), ``candidates`` the number G of candidates. The logarithm is a certified upper
    enclosure, so t is never too small.
    """
    _, log_ratio = log_bounds(Fraction(candidates) / exact(alpha))
    return max(0, math.ceil(log_ratio / exact(eta)))
