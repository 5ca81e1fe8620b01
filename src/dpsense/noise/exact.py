r"""Exact samplers in integer arithmetic (Canonne, Kamath and Steinke 2020).

Every probability here is a ratio of integers, decided by comparing uniform integers drawn
by rejection sampling from uniform 64-bit words: no floating point touches a sampled value.
The samplers are vectorised over numpy ``uint64`` arrays; the rare element whose
intermediate values would not fit in 64 bits continues in Python integers, so the result
is exact in every case.

References
----------
C. L. Canonne, G. Kamath, T. Steinke. "The Discrete Gaussian for Differential Privacy."
NeurIPS 2020 (arXiv:2004.00010), Algorithms 1 (Bernoulli(exp(-gamma))),
2 (discrete Laplace) and 3 (discrete Gaussian).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Final

import numpy as np
from numpy.typing import NDArray

from dpsense._arrays import I64, U64
from dpsense.noise.rng import RandomSource

__all__ = [
    "bernoulli_exp",
    "bernoulli_ratio",
    "discrete_gaussian",
    "discrete_laplace",
    "geometric_exp1",
    "uniform_below",
]

_MAX: Final = np.uint64(2**64 - 1)
_FIT: Final = 2**63  # intermediate integers below this stay in numpy


def _below_small(rng: RandomSource, m: U64) -> U64:
    """Uniform in [0, m) for bounds below 2^32: Lemire's multiply-shift, exact.

    With a 32-bit word w, ``w * m`` fits in 64 bits; its high half is uniform on [0, m)
    once the rare low halves below ``2^32 mod m`` are rejected (Lemire 2019).
    """
    out = np.empty(m.shape, dtype=np.uint64)
    todo: NDArray[np.intp] | None = None
    mm = m
    while True:
        count = mm.size
        w = rng.words(-(-count // 2)).view(np.uint32)[:count].astype(np.uint64)
        x = w * mm
        low = x & np.uint64(0xFFFFFFFF)
        bad = low < mm
        if bad.any():
            thr = (np.uint64(2**32) - mm[bad]) % mm[bad]
            reject = np.zeros(count, dtype=bool)
            reject[bad] = low[bad] < thr
        else:
            reject = bad
        good = ~reject
        value = x >> np.uint64(32)
        if todo is None:
            out[good] = value[good]
            todo = np.flatnonzero(reject)
        else:
            out[todo[good]] = value[good]
            todo = todo[reject]
        if not todo.size:
            return out
        mm = m[todo]


def uniform_below(rng: RandomSource, bound: U64) -> U64:
    """Uniform integers in ``[0, bound_i)`` for each ``bound_i >= 1`` (exact rejection)."""
    flat = np.asarray(bound, dtype=np.uint64).reshape(-1)
    if flat.size and int(flat.max()) < 2**32:
        return _below_small(rng, flat).reshape(np.shape(bound))
    out = np.empty(flat.shape, dtype=np.uint64)
    todo = np.arange(flat.size)
    while todo.size:
        m = flat[todo]
        u = rng.words(todo.size)
        # r = 2^64 mod m; the top r values of a word would bias the remainder
        r = (np.zeros_like(m) - m) % m
        ok = (r == 0) | (u < np.zeros_like(r) - r)
        out[todo[ok]] = u[ok] % m[ok]
        todo = todo[~ok]
    return out.reshape(np.shape(bound))


def bernoulli_ratio(rng: RandomSource, num: U64, den: U64) -> NDArray[np.bool_]:
    """Bernoulli(num / den) for ``0 <= num <= den``, ``den >= 1``."""
    return uniform_below(rng, den) < np.asarray(num, dtype=np.uint64)


def _bernoulli_exp_fraction_py(rng: RandomSource, num: int, den: int, k: int) -> bool:
    """Continue CKS Algorithm 1 for exp(-num/den) (num <= den) from counter k."""
    while rng.randbelow(den * k) < num:
        k += 1
    return k % 2 == 1


def _bernoulli_exp_fraction(rng: RandomSource, num: U64, den: U64) -> NDArray[np.bool_]:
    """Bernoulli(exp(-num/den)) for ``0 <= num <= den`` (CKS Algorithm 1).

    K = 1; while Bernoulli(gamma / K): K += 1; return K odd.
    """
    num = np.asarray(num, dtype=np.uint64)
    den = np.asarray(den, dtype=np.uint64)
    n = num.size
    result = np.empty(n, dtype=bool)
    k = np.ones(n, dtype=np.uint64)
    active = np.arange(n)
    wide = bool(den.size) and int(den.max()) >= 2**31
    while active.size:
        d, kk, a = den[active], k[active], num[active]
        # d * k stays below 2^63 while d < 2^31 and k < 2^32; otherwise check exactly
        overflow = (kk > (_MAX // d)) if wide else (kk >= np.uint64(2**32))
        if overflow.any():
            for i in active[overflow].tolist():
                result[i] = _bernoulli_exp_fraction_py(rng, int(num[i]), int(den[i]), int(k[i]))
            keep = ~overflow
            active, d, kk, a = active[keep], d[keep], kk[keep], a[keep]
            if not active.size:
                break
        success = uniform_below(rng, d * kk) < a
        stop = ~success
        result[active[stop]] = (kk[stop] % np.uint64(2)) == 1
        k[active[success]] += np.uint64(1)
        active = active[success]
    return result


def bernoulli_exp(rng: RandomSource, num: U64, den: U64) -> NDArray[np.bool_]:
    """Bernoulli(exp(-num/den)) for ``num >= 0``, ``den >= 1`` (CKS Algorithm 1).

    The integer part of num/den is handled as that many independent Bernoulli(exp(-1))
    trials, stopping at the first failure; the fractional part by the series algorithm.
    """
    num = np.asarray(num, dtype=np.uint64).reshape(-1)
    den = np.asarray(den, dtype=np.uint64).reshape(-1)
    q = num // den
    r = num % den
    result = np.ones(num.size, dtype=bool)
    remaining = q.copy()
    alive = np.flatnonzero(remaining > 0)
    while alive.size:
        ones = np.ones(alive.size, dtype=np.uint64)
        ok = _bernoulli_exp_fraction(rng, ones, ones)
        result[alive[~ok]] = False
        survivors = alive[ok]
        remaining[survivors] -= np.uint64(1)
        alive = survivors[remaining[survivors] > 0]
    frac = np.flatnonzero(result & (r > 0))
    if frac.size:
        result[frac] = _bernoulli_exp_fraction(rng, r[frac], den[frac])
    return result


def geometric_exp1(rng: RandomSource, size: int) -> U64:
    """Failures-free run lengths: P(V = v) = e^{-v} (1 - e^{-1}), from Bernoulli(exp(-1))."""
    v = np.zeros(size, dtype=np.uint64)
    active = np.arange(size)
    while active.size:
        ones = np.ones(active.size, dtype=np.uint64)
        ok = _bernoulli_exp_fraction(rng, ones, ones)
        v[active[ok]] += np.uint64(1)
        active = active[ok]
    return v


def _laplace_batch(rng: RandomSource, t: int, s: int, m: int) -> I64:
    """One round of CKS Algorithm 2; returns the accepted samples (fewer than m)."""
    tt = np.full(m, t, dtype=np.uint64)
    u = uniform_below(rng, tt)
    keep = bernoulli_exp(rng, u, tt)
    u = u[keep]
    v = geometric_exp1(rng, u.size)
    x = u + np.uint64(t) * v  # Geometric(1 - e^{-1/t}) exactly
    y = (x // np.uint64(s)).astype(np.int64)
    neg = rng.bits(y.size)
    ok = ~(neg & (y == 0))
    return np.asarray(np.where(neg, -y, y)[ok], dtype=np.int64)


_SCALAR_LIMIT: Final = 16  # below this many draws, pure Python beats numpy's call overhead


def _discrete_laplace_py(rng: RandomSource, t: int, s: int) -> int:
    """One draw of CKS Algorithm 2 in Python integers."""
    while True:
        u = rng.randbelow(t)
        if not bernoulli_exp_py(rng, u, t):
            continue
        v = 0
        while _bernoulli_exp_fraction_py(rng, 1, 1, 1):
            v += 1
        y = (u + t * v) // s
        negative = rng.word() & 1
        if negative and y == 0:
            continue
        return -y if negative else y


def discrete_laplace(rng: RandomSource, scale: Fraction, size: int) -> I64:
    r"""Samples with :math:`P(z) \propto e^{-|z| / \text{scale}}` on the integers, exactly.

    ``scale = t/s`` must have ``t < 2^52`` and ``s < 2^52`` (callers round the scale up to
    such a fraction, which only adds privacy). CKS Algorithm 2.
    """
    t, s = scale.numerator, scale.denominator
    if not (0 < t < 2**52 and 0 < s < 2**52):
        raise ValueError("discrete_laplace needs a scale t/s with 0 < t, s < 2^52")
    if size <= _SCALAR_LIMIT:
        return np.array([_discrete_laplace_py(rng, t, s) for _ in range(size)], dtype=np.int64)
    out = np.empty(size, dtype=np.int64)
    filled = 0
    while filled < size:
        need = size - filled
        batch = _laplace_batch(rng, t, s, int(need * 1.3 * max(1.0, s / t)) + 16)
        take = min(need, batch.size)
        out[filled : filled + take] = batch[:take]
        filled += take
    return out


def discrete_gaussian(rng: RandomSource, sigma2: Fraction, size: int) -> I64:
    r"""Samples with :math:`P(z) \propto e^{-z^2 / (2\sigma^2)}` on the integers, exactly.

    CKS Algorithm 3: propose Y from the discrete Laplace with integer scale t and accept
    with probability :math:`\exp(-(|Y| - \sigma^2/t)^2 / (2\sigma^2))`. Any t > 0 is
    correct; t = sigma when sigma is an integer (then the exponent is
    :math:`(|Y| - t)^2 / (2t^2)`), else :math:`t = \lfloor\sigma\rfloor + 1`.
    """
    if sigma2 <= 0:
        raise ValueError("discrete_gaussian needs sigma^2 > 0")
    a, b = sigma2.numerator, sigma2.denominator
    root = math.isqrt(a)
    square = b == 1 and root * root == a
    t = root if square else math.isqrt(a // b) + 1
    if size <= _SCALAR_LIMIT:
        draws: list[int] = []
        while len(draws) < size:
            proposal = _discrete_laplace_py(rng, t, 1)
            if bernoulli_exp_py(rng, *_gauss_exponent(abs(proposal), t, a, b)):
                draws.append(proposal)
        return np.array(draws, dtype=np.int64)
    out = np.empty(size, dtype=np.int64)
    filled = 0
    while filled < size:
        need = size - filled
        y = discrete_laplace(rng, Fraction(t), int(need * 1.5) + 16)
        ay = np.abs(y).astype(np.uint64)
        big = int(ay.max(initial=0))
        if square:
            fits = (big + t) ** 2 < _FIT and 2 * t * t < _FIT
        else:
            fits = (big * t * b + a) ** 2 < _FIT and 2 * a * b * t * t < _FIT
        if fits:
            if square:
                diff = np.where(ay >= np.uint64(t), ay - np.uint64(t), np.uint64(t) - ay)
                num = diff * diff
                den = np.full(y.size, 2 * t * t, dtype=np.uint64)
            else:
                lhs = ay * np.uint64(t * b)
                rhs = np.uint64(a)
                diff = np.where(lhs >= rhs, lhs - rhs, rhs - lhs)
                num = diff * diff
                den = np.full(y.size, 2 * a * b * t * t, dtype=np.uint64)
            accept = bernoulli_exp(rng, num, den)
        else:
            accept = np.array(
                [bernoulli_exp_py(rng, *_gauss_exponent(int(v), t, a, b)) for v in ay.tolist()],
                dtype=bool,
            )
        batch = y[accept]
        take = min(need, batch.size)
        out[filled : filled + take] = batch[:take]
        filled += take
    return out


def _gauss_exponent(abs_y: int, t: int, a: int, b: int) -> tuple[int, int]:
    """(|y| - sigma^2/t)^2 / (2 sigma^2) as num/den with sigma^2 = a/b."""
    return (abs_y * t * b - a) ** 2, 2 * a * b * t * t


def bernoulli_exp_py(rng: RandomSource, num: int, den: int) -> bool:
    """Bernoulli(exp(-num/den)) in Python integers (the rare oversized case)."""
    q, r = divmod(num, den)
    for _ in range(q):
        if not _bernoulli_exp_fraction_py(rng, 1, 1, 1):
            return False
    return r == 0 or _bernoulli_exp_fraction_py(rng, r, den, 1)
