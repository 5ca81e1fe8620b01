r"""The exact tail of the discrete Laplace distribution and the margin it gives.

Package-private home of :func:`discrete_laplace_tail` and :func:`discrete_laplace_margin`,
which :mod:`dpsense.methods.bounded_ls` re-exports: they turn a noisy count into a
high-probability bound (docs/ratios.md §3).
"""

from __future__ import annotations

import math
from typing import Final

__all__ = ["discrete_laplace_margin", "discrete_laplace_tail"]

_TAIL_SLACK: Final = 1e-12
"""Relative safety margin on a computed tail probability (float error of exp and log)."""


def discrete_laplace_tail(scale: float, margin: int, *, two_sided: bool = False) -> float:
    r"""Exact tail of the discrete Laplace distribution beyond an integer margin.

    For :math:`Z` with :math:`\Pr[Z = z] = \frac{1 - q}{1 + q} q^{|z|}`,
    :math:`q = e^{-1/s}`, and an integer :math:`T \ge 0`,

    .. math::

        \Pr[Z > T] = \frac{q^{T + 1}}{1 + q}, \qquad
        \Pr[|Z| > T] = \frac{2\, q^{T + 1}}{1 + q}.

    (The often-used tail :math:`\Pr[|Z| \ge T] = q^T` is wrong; the true value is
    :math:`2 q^T / (1 + q)`.)

    Parameters
    ----------
    scale : float
        The scale s > 0.
    margin : int
        T >= 0.
    two_sided : bool, default False
        Return :math:`\Pr[|Z| > T]` instead of :math:`\Pr[Z > T]`.

    Returns
    -------
    float
        The probability.

    References
    ----------
    Inusah and Kozubowski, "A discrete analogue of the Laplace distribution", J. Statist.
    Plann. Inference 136(3), 2006. Derivation in docs/ratios.md §3.
    """
    q = math.exp(-1.0 / scale)
    tail = math.exp(-(margin + 1) / scale) / (1.0 + q)
    return 2.0 * tail if two_sided else tail


def discrete_laplace_margin(scale: float, probability: float, *, two_sided: bool) -> int:
    r"""The smallest integer margin T >= 0 whose discrete-Laplace tail is at most ``probability``.

    Solves :math:`k\, q^{T+1} / (1 + q) \le p` (k = 2 for two sides, 1 for one) exactly:

    .. math::

        T = \max\Big(0,\; \Big\lceil s \ln\frac{k}{p\,(1 + q)} \Big\rceil - 1\Big),

    then checks the candidate against :func:`discrete_laplace_tail` with a relative safety
    margin of :math:`10^{-12}` for the floating-point error of ``exp`` and ``log``.

    Parameters
    ----------
    scale : float
        The discrete Laplace scale s > 0 actually used by the sampler.
    probability : float
        The allowed failure probability p in (0, 1).
    two_sided : bool
        Bound :math:`\Pr[|Z| > T]` (True) or :math:`\Pr[Z > T]` (False).

    Returns
    -------
    int
        The margin T.

    References
    ----------
    docs/ratios.md §3.
    """
    k = 2.0 if two_sided else 1.0
    q = math.exp(-1.0 / scale)
    margin = max(0, math.ceil(scale * math.log(k / (probability * (1.0 + q)))) - 1)

    def fails(t: int) -> bool:
        return discrete_laplace_tail(scale, t, two_sided=two_sided) * (1.0 + _TAIL_SLACK) > (
            probability
        )

    while fails(margin):
        margin += 1
    while margin > 0 and not fails(margin - 1):
        margin -= 1
    return margin
