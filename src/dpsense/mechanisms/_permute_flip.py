r"""Permute-and-flip quantiles on small candidate grids, sampled exactly.

Permute-and-flip (McKenna and Sheldon 2020) visits the candidates in a uniformly random
order and stops at candidate k with probability :math:`p_k = e^{-\eta (S_k - S^*)}`, where
:math:`S^*` is the smallest score; it is :math:`\varepsilon`-DP with the same
:math:`\eta = \varepsilon / (2 \Delta u)` as the exponential mechanism and never less
accurate (their Theorem 2), up to twice as accurate when a few candidates dominate, as on
tied or integer data with a declared resolution.

**Equivalent form.** Flip every coin first, independently: candidate k is *active* with
probability :math:`p_k`. The visit order is independent of the coins, so the first active
candidate in it is a uniformly random active candidate; the best candidate is always active,
so there is one. dpsense samples exactly this: exact Bernoulli(exp(-q)) coins (Canonne,
Kamath and Steinke 2020) for rational q, then a uniform integer.

**Multiplier.** :math:`\eta'` is :math:`\eta` rounded down to a multiple of :math:`2^{-62}`
(integer coin arithmetic); a smaller multiplier is more private.

**Window and tail.** The window of ranks of :mod:`._quantile_sampler` gives the exact scores
of the candidates in :math:`[\alpha, \beta]`; every other (tail) candidate has score at
least :math:`S_{min}`. If the window's best score :math:`S^*` is at most :math:`S_{min}`, it
is the global minimum. Each tail candidate g is then active with probability
:math:`p_g = \bar p \cdot e^{-\eta'(S_g - S_{min})}` with
:math:`\bar p = e^{-\eta'(S_{min} - S^*)}`: first *pre-active* with probability
:math:`\bar p`, then active with probability :math:`e^{-\eta'(S_g - S_{min})}`. All C tail
candidates are pre-inactive with probability :math:`(1 - \bar p)^C`, decided by a certified
comparison of a lazily drawn uniform with interval enclosures of that number. Otherwise
(probability below about :math:`2^{-40}`) the pre-active set is drawn conditionally on being
non-empty: the first pre-active tail candidate J is proposed uniformly and accepted with
probability :math:`(1 - \bar p)^J` (certified), which gives
:math:`P(J = j) \propto (1 - \bar p)^j \bar p`; the candidates after J are pre-active
independently with probability :math:`\bar p`; each pre-active candidate's score is counted
over the data and its second coin flipped. The active set then has exactly the law of the
independent coins, so the output is exactly permute-and-flip.

Grids above :data:`MAX_GRID` candidates keep the exponential mechanism (a continuous
power-of-two grid has 2^32 candidates; there the two mechanisms nearly coincide, since each
block holds many candidates of equal score).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from dpsense._arrays import F64, I64
from dpsense.mechanisms._quantile_sampler import (
    QuantileScore,
    RecordSource,
    _as_source,
    _Blocks,
    _full_blocks,
    _window_blocks,
)
from dpsense.noise.choice import interval_context, uniform_below_certified
from dpsense.noise.exact import bernoulli_exp, bernoulli_exp_py, uniform_below
from dpsense.noise.rng import RandomSource
from dpsense.statistics._grid import CandidateGrid

__all__ = ["MAX_GRID", "pf_eta", "sample_permute_and_flip"]


MAX_GRID: Final = 1 << 16
"""Permute-and-flip is used on candidate grids of at most this many values."""
_ETA_BITS: Final = 62


def pf_eta(score: QuantileScore) -> Fraction:
    """The multiplier eta rounded down to a multiple of 2^-62 (more private)."""
    return Fraction(math.floor(Fraction(score.eta) * 2**_ETA_BITS), 2**_ETA_BITS)


def _coins(rng: RandomSource, eta: Fraction, excess: I64) -> NDArray[np.bool_]:
    """Independent Bernoulli(exp(-eta * excess_i)) coins, exact."""
    num, den = eta.numerator, eta.denominator  # den = 2^62 at most
    out = np.empty(excess.shape[0], dtype=bool)
    limit = (2**63 - 1) // max(num, 1)
    small = excess <= limit  # num * excess fits in 63 bits
    if small.any():
        idx = np.flatnonzero(small)
        out[idx] = bernoulli_exp(
            rng,
            excess[idx].astype(np.uint64) * np.uint64(num),
            np.full(idx.size, den, dtype=np.uint64),
        )
    for i in np.flatnonzero(~small).tolist():
        out[i] = bernoulli_exp_py(rng, num * int(excess[i]), den)
    return out


def _certified_bernoulli(
    rng: RandomSource,
    enclose: Callable[[Any], Any],
    estimate: tuple[float, float] | None = None,
) -> bool:
    """Bernoulli(q) for a real q in [0, 1] given by ``enclose(ctx)``, an mpmath interval
    computed in the interval context ``ctx``: a uniform V drawn 64 bits at a time is
    compared with certified enclosures of q at increasing precision (V = q has probability
    0, so this ends). ``estimate = (q~, e)`` with ``|q~ - q| <= e`` decides first when V is
    farther than e from q~ (the float shortcut of docs/noise.md, same assumption on exp
    and log)."""
    bits = rng.word()
    if estimate is not None:
        value, error = estimate
        v = bits * 2.0**-64  # exact: bits < 2^64 has at most 64 significant bits... rounded
        if v + 2.0**-52 <= value - error:
            return True  # V < v + 2^-64 (+ rounding of v) <= q
        if v - 2.0**-52 >= value + error:
            return False

    def interval(precision: int) -> tuple[Any, Any]:
        lo, hi = enclose(interval_context(precision))._mpi_
        return lo, hi

    return uniform_below_certified(rng, bits, interval)


def _survival_estimate(eta: Fraction, gap: int, power: int) -> tuple[float, float]:
    """A float value of (1 - e^{-eta gap})^power and a bound on its error (exp, log1p
    within a relative 2^-40 of the truth, as docs/noise.md assumes)."""
    x = float(eta) * gap
    arg = power * math.log1p(-math.exp(-x)) if x > 0 else -math.inf
    if not math.isfinite(arg):
        return 0.0, 1.0  # no shortcut
    value = math.exp(arg)
    return value, value * (abs(arg) + 4.0) * 2.0**-38 + 2.0**-1000


def _survival(eta: Fraction, gap: int, power: int) -> Callable[[Any], Any]:
    """Encloses (1 - e^{-eta gap})^power."""

    def enclose(ctx: Any) -> Any:
        p = ctx.exp(-(ctx.mpf(eta.numerator) / ctx.mpf(eta.denominator)) * gap)
        if power == 0:
            return ctx.mpf(1)
        return ctx.exp(ctx.mpf(power) * ctx.log(1 - p))

    return enclose


def _expand(blocks: _Blocks) -> tuple[I64, I64]:
    """Grid indices and scores of every candidate in the blocks."""
    live = blocks.count > 0
    counts = blocks.count[live]
    starts = np.repeat(blocks.start[live], counts)
    offsets = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
    return starts + offsets, np.repeat(blocks.score[live], counts)


def _tail_actives(
    rng: RandomSource,
    x: RecordSource,
    grid: CandidateGrid,
    score: QuantileScore,
    blocks: _Blocks,
    eta: Fraction,
    best: int,
) -> list[int]:
    """The active tail candidates (usually none), with exactly their joint law."""
    low, high = blocks.tail_low, blocks.tail_high
    count = low + grid.size - high
    gap = blocks.tail_score - best
    if count == 0 or _certified_bernoulli(
        rng, _survival(eta, gap, count), _survival_estimate(eta, gap, count)
    ):
        return []
    # the pre-active set is not empty: its first member J, then independent coins after it
    while True:
        j = int(uniform_below(rng, np.array([count], dtype=np.uint64))[0])
        if _certified_bernoulli(rng, _survival(eta, gap, j), _survival_estimate(eta, gap, j)):
            break
    rest = _coins(rng, eta, np.full(count - j - 1, gap, dtype=np.int64))
    positions = [j, *(j + 1 + np.flatnonzero(rest)).tolist()]
    active = []
    for pos in positions:
        g = pos if pos < low else high + (pos - low)
        v = grid.values(np.array([g], dtype=np.int64))[0]
        below, above = x.count_below(float(v)), x.count_above(float(v))
        s = int(score.scores(np.array([below]), np.array([above]), x.size)[0])
        excess = eta * (s - blocks.tail_score)
        if bernoulli_exp_py(rng, excess.numerator, excess.denominator):
            active.append(g)
    return active


def sample_permute_and_flip(
    rng: RandomSource,
    x: F64 | RecordSource,
    grid: CandidateGrid,
    score: QuantileScore,
    draws: int = 1,
    *,
    _full: bool = False,
    _window: int | None = None,
) -> I64:
    """``draws`` independent grid indices drawn by permute-and-flip (grid of at most
    :data:`MAX_GRID` values).

    ``x`` (clipped records) is reordered in place, or is a :class:`RecordSource` that
    answers for records held elsewhere (only the window around the target and, rarely,
    two counts per tail candidate are read); ``_full`` / ``_window`` as in
    :func:`~dpsense.mechanisms._quantile_sampler.sample_quantile_indices`.
    """
    eta = pf_eta(score)
    x = _as_source(x)
    if x.size == 0:  # every score is 0: every candidate active
        sizes = np.full(draws, grid.size, dtype=np.uint64)
        return uniform_below(rng, sizes).astype(np.int64)
    blocks = None if _full else _window_blocks(x, grid, score, _window)
    if blocks is not None:
        tail = blocks.tail_low + grid.size - blocks.tail_high
        live = blocks.count > 0
        if not live.any() or (tail and int(blocks.score[live].min()) > blocks.tail_score):
            blocks = None  # the global minimum may lie in the tail: score everything
    if blocks is None:
        blocks = _full_blocks(x, grid, score)
    index, scores = _expand(blocks)
    best = int(scores.min())
    m = index.shape[0]
    # every draw's window coins at once (rows are draws), exact and independent
    coins = _coins(rng, eta, np.tile(scores - best, draws)).reshape(draws, m)
    out = np.empty(draws, dtype=np.int64)
    for row in range(draws):
        active = index[coins[row]].tolist()
        active += _tail_actives(rng, x, grid, score, blocks, eta, best)
        pick = int(uniform_below(rng, np.array([len(active)], dtype=np.uint64))[0])
        out[row] = active[pick]
    return out
