r"""Exact sampling of the exponential mechanism: P(i) proportional to w_i exp(-eta s_i).

:class:`ExponentialChoice` draws index i with probability

.. math:: P(i) = \frac{w_i e^{-\eta s_i}}{\sum_j w_j e^{-\eta s_j}}

*exactly*: the weights :math:`w_i \ge 0`, the scores :math:`s_i` and :math:`\eta \ge 0` are
exact rationals (doubles, or a callable returning the exact rational score), and the
probability the code produces is this real number, tails included; every candidate with
:math:`w_i > 0` has positive probability. docs/noise.md ("The exponential mechanism, exact")
derives it. In short, it is rejection sampling:

1. **Proposal.** Integers :math:`Q_i \ge 2^K W_i` with :math:`W_i = w_i e^{-\eta(s_i - c)
   - M}` (c and M doubles fixed before sampling, common factors that cancel) and
   :math:`Q_i \ge 1` whenever :math:`w_i > 0`. Index i is proposed with probability
   :math:`Q_i / \sum_j Q_j` by one exact uniform integer below :math:`\sum_j Q_j < 2^{63}`
   and a search in the integer cumulative sums: integer arithmetic, no rounding.
2. **Acceptance.** i is accepted with probability :math:`A_i = 2^K W_i / Q_i \in (0, 1]`:
   a uniform V in [0, 1), drawn lazily 64 bits at a time, is compared with :math:`A_i`.
   A float64 evaluation of :math:`A_i`, with a proven error bound, decides when V is
   farther from it than the bound; otherwise certified interval arithmetic (mpmath's
   interval context, outward rounding) at increasing precision, with more bits of V, decides
   (V equals :math:`A_i` with probability 0, so this ends with probability 1).
3. Rejected proposals start again. Accepted index i has probability proportional to
   :math:`Q_i A_i = 2^K W_i`, i.e. exactly :math:`P(i)`.

The floating-point part only chooses the integers :math:`Q_i` and short-cuts some
comparisons. Its one assumption: numpy's ``exp`` and ``log`` return results within relative
error :math:`2^{-40}` of the true values for normal results (IEEE-754 ``+ - *`` are correctly
rounded). Libraries meet this with a margin of about :math:`2^{11}` (they are accurate to a
few units in the last place, :math:`2^{-52}`).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Final

import numpy as np

from dpsense._arrays import F64, I64
from dpsense._exact_budget import quotient_down
from dpsense.errors import InputError
from dpsense.noise.exact import uniform_below
from dpsense.noise.rng import RandomSource

__all__ = ["ExponentialChoice", "eta_at_most", "uniform_below_certified"]


_REL: Final = 2.0**-40
"""Assumed relative error of numpy's exp and log, and a generous bound on the rounding of
each float operation below (correctly rounded operations err by at most 2^-53)."""
_SLACK: Final = 2.0**-38
"""Relative slack on exp(.) for the proposal and the fast comparisons (covers _REL and the
rounding of the few products that follow)."""
_TINY_LOG: Final = -650.0
"""Below this log-ratio the float bounds are not used: exp(-650) 2^-62 > 2^-1000 keeps every
intermediate value of the fast bounds a normal double, where the relative bounds hold."""
_TINY_ACCEPT: Final = 2.0**-800
"""An upper bound on A_i when x_i + E_i < -650: A_i <= 2^61 e^-650 < 2^-876."""
_FIRST_PREC: Final = 96


def eta_at_most(numerator: float, denominator: float) -> float:
    """The largest double at most the exact ``numerator / denominator`` (both > 0).

    The exponential mechanism with a smaller eta is more private, so rounding eta down
    keeps every guarantee computed for the exact ratio.
    """
    return quotient_down(numerator, denominator)


_CONTEXTS = threading.local()


def interval_context(precision: int) -> Any:
    """This thread's private mpmath interval context (building one costs ~4 ms), set to
    ``precision`` bits; private so that no other code's precision setting is touched."""
    ctx = getattr(_CONTEXTS, "ctx", None)
    if ctx is None:
        from mpmath.ctx_iv import MPIntervalContext  # type: ignore[import-untyped,unused-ignore]

        ctx = MPIntervalContext()
        _CONTEXTS.ctx = ctx
    ctx.prec = precision
    return ctx


def uniform_below_certified(
    rng: RandomSource, word: int, interval: Callable[[int], tuple[Any, Any]]
) -> bool:
    """Decide V < a, for a uniform V = 0.word... in [0, 1) whose later bits are drawn from
    ``rng`` 64 at a time as needed, and a real a of which ``interval(precision)`` gives
    certified mpmath bounds (lo, hi) computed at ``precision`` bits. While the intervals of
    V and a overlap, the wider one is refined (V = a has probability 0, so this ends)."""
    from mpmath import libmp  # type: ignore[import-untyped,unused-ignore]

    bits, nbits, precision = word, 64, _FIRST_PREC
    while True:
        lo, hi = interval(precision)
        v_lo = libmp.from_man_exp(bits, -nbits)
        v_hi = libmp.from_man_exp(bits + 1, -nbits)
        if libmp.mpf_le(v_hi, lo):
            return True  # V < v_hi <= a
        if libmp.mpf_ge(v_lo, hi):
            return False  # V >= v_lo >= a
        # undecided: the intervals of V and a overlap; refine the wider one
        width = libmp.mpf_sub(hi, lo, 53, libmp.round_up)
        if libmp.mpf_gt(width, libmp.from_man_exp(1, -nbits)):
            precision *= 2
        else:
            bits = (bits << 64) | rng.word()
            nbits += 64


def _mpf_rational(ctx: Any, value: Fraction) -> Any:
    """An interval holding the exact rational ``value`` at the context's precision."""
    return ctx.mpf(value.numerator) / ctx.mpf(value.denominator)


@dataclass(frozen=True)
class ExponentialChoice:
    r"""The distribution :math:`P(i) \propto w_i e^{-\eta s_i}`, sampled exactly.

    Parameters
    ----------
    weights : array_like of float
        :math:`w_i \ge 0`, finite doubles (integer counts below 2^53 are exact). Candidates
        with weight 0 are never chosen.
    scores : array_like of float
        Float approximations :math:`\tilde s_i` of the exact scores, finite, with
        :math:`|\tilde s_i - s_i| \le` ``score_error``.
    eta : float
        :math:`\eta \ge 0`, a double (an exact rational).
    exact_score : callable, optional
        ``exact_score(i)`` returns :math:`s_i` as a :class:`fractions.Fraction`. By default
        the scores are the doubles themselves (``score_error`` must then be 0).
    score_error : float
        A proven bound on :math:`|\tilde s_i - s_i|`.

    Notes
    -----
    Building costs a few vectorised passes over the candidates; each draw costs one exact
    uniform integer, a binary search and one 64-bit word with probability about
    :math:`1 - 2^{-30}` (otherwise a certified evaluation of one acceptance probability,
    about 0.2 ms). The expected number of proposals per draw is below
    :math:`1 + 2^{-20} + 2m^2 2^{-61}` for m candidates.
    """

    weights: F64
    scores: F64
    eta: float
    exact_score: Callable[[int], Fraction] | None = None
    score_error: float = 0.0
    _shift_score: float = field(init=False, repr=False)
    _shift_log: float = field(init=False, repr=False)
    _scale_bits: int = field(init=False, repr=False)
    _proposal: I64 = field(init=False, repr=False)
    _cumulative: I64 = field(init=False, repr=False)
    _log_ratio: F64 = field(init=False, repr=False)
    _log_error: F64 = field(init=False, repr=False)

    def __post_init__(self) -> None:
        w = np.asarray(self.weights, dtype=np.float64).reshape(-1)
        s = np.asarray(self.scores, dtype=np.float64).reshape(-1)
        eta = float(self.eta)
        if w.size == 0 or w.size != s.size:
            raise InputError("ExponentialChoice needs one score per weight and one candidate.")
        if not (np.all(np.isfinite(w)) and np.all(w >= 0) and np.any(w > 0)):
            raise InputError("ExponentialChoice needs finite weights >= 0, at least one > 0.")
        if not np.all(np.isfinite(s)):
            raise InputError("ExponentialChoice needs finite scores.")
        if not (math.isfinite(eta) and eta >= 0):
            raise InputError("ExponentialChoice needs a finite eta >= 0.")
        if not (math.isfinite(self.score_error) and self.score_error >= 0):
            raise InputError("ExponentialChoice needs a finite score_error >= 0.")
        if self.exact_score is None and self.score_error != 0:
            raise InputError("ExponentialChoice: score_error needs exact_score.")
        live = w > 0
        # c: the smallest live score, a double; d_i = s_i - c >= 0 is computed with
        # relative error 2^-53, and eta d_i stays moderate for every candidate that matters
        c = float(s[live].min())
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            log_w = np.log(np.where(live, w, 1.0))
            # eta = 0 would turn an overflowed s - c into 0 * inf
            scaled = eta * (s - c) if eta > 0 else np.zeros_like(s)
            log_tilde = log_w - scaled
            big_m = float(log_tilde[live].max())  # finite: the argmin of s has scaled = 0
            x = np.where(live, log_tilde - big_m, -np.inf)
            # |x_i - (ln w_i - eta (s_i - c) - M)| <= E_i (docs/noise.md, "Float bounds")
            err = _REL * (np.abs(log_w) + np.abs(scaled) + np.abs(x) + 1.0) + (
                eta * self.score_error * (1.0 + _REL)
            )
            err = np.where(np.isfinite(x), err, np.inf)
            upper = np.exp(np.where(np.isfinite(x), x + err, -np.inf)) * (1.0 + _SLACK)
        top = float(upper.max())
        _, top_exp = math.frexp(top)  # top < 2^top_exp (top_exp = 1 unless E_i is large)
        scale_bits = 61 - int(w.size).bit_length() - max(top_exp, 0)
        if not math.isfinite(top) or scale_bits < 1:
            raise InputError(
                "ExponentialChoice: eta * score_error is too large for certified sampling; "
                "give a tighter score_error or fewer candidates."
            )
        # Q_i >= 2^K W_i for live i, and sum Q < 2^61 + m < 2^63
        q = np.maximum(np.ceil(np.ldexp(upper, scale_bits)), 1.0)
        proposal = np.where(live, q, 0.0).astype(np.int64)
        object.__setattr__(self, "weights", w)
        object.__setattr__(self, "scores", s)
        object.__setattr__(self, "eta", eta)
        object.__setattr__(self, "_shift_score", c)
        object.__setattr__(self, "_shift_log", big_m)
        object.__setattr__(self, "_scale_bits", scale_bits)
        object.__setattr__(self, "_proposal", proposal)
        object.__setattr__(self, "_cumulative", np.cumsum(proposal))
        object.__setattr__(self, "_log_ratio", x)
        object.__setattr__(self, "_log_error", err)

    @property
    def size(self) -> int:
        """The number of candidates."""
        return int(self.weights.size)

    def pmf(self) -> F64:
        """The selection probabilities in float64 (for inspection and tests)."""
        x = self._log_ratio
        p = np.exp(x - x.max())
        return np.asarray(p / p.sum(), dtype=np.float64)

    # ----------------------------------------------------------------------------------
    # Acceptance probabilities
    # ----------------------------------------------------------------------------------

    def _fast_bounds(self, i: I64) -> tuple[F64, F64]:
        """Float bounds lo <= A_i <= hi, valid under the assumption on exp (module doc)."""
        x, err = self._log_ratio[i], self._log_error[i]
        q = self._proposal[i].astype(np.float64)
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            # (1 -+ _SLACK) once for exp's error, once for the rounding of * and /
            lo = np.ldexp(np.exp(x - err) * (1.0 - _SLACK), self._scale_bits) / q
            hi = np.ldexp(np.exp(x + err) * (1.0 + _SLACK), self._scale_bits) / q
            lo = np.where(x - err >= _TINY_LOG, lo * (1.0 - _SLACK), 0.0)
            hi = np.where(x + err >= _TINY_LOG, hi * (1.0 + _SLACK), _TINY_ACCEPT)
        return lo, hi

    def _exact_score(self, i: int) -> Fraction:
        if self.exact_score is None:
            return Fraction(float(self.scores[i]))
        return Fraction(self.exact_score(i))

    def acceptance_interval(self, i: int, precision: int = _FIRST_PREC) -> tuple[Any, Any]:
        r"""Certified bounds on :math:`A_i = 2^K W_i / Q_i` as raw mpmath ``mpf`` values.

        Computed in mpmath's interval context (outward rounding) at ``precision`` bits:
        :math:`\ln w_i - \eta (s_i - c) - M`, then ``exp``, times :math:`2^K / Q_i`.
        """
        ctx = interval_context(precision)
        weight = Fraction(float(self.weights[i]))
        score = self._exact_score(i) - Fraction(self._shift_score)
        log_ratio = (
            ctx.log(_mpf_rational(ctx, weight))
            - ctx.mpf(self.eta) * _mpf_rational(ctx, score)
            - ctx.mpf(self._shift_log)
        )
        value = ctx.exp(log_ratio) * ctx.mpf(2**self._scale_bits)
        value = value / ctx.mpf(int(self._proposal[i]))
        lo, hi = value._mpi_
        return lo, hi

    def _accept_exact(self, rng: RandomSource, i: int, word: int) -> bool:
        """Decide V < A_i for V = 0.word... (later bits drawn lazily), certified."""
        return uniform_below_certified(rng, word, lambda prec: self.acceptance_interval(i, prec))

    def probability_lower_bound(self, i: int) -> Fraction:
        r"""A certified lower bound on P(i): :math:`Q_i \underline{A_i} / \sum_j Q_j`.

        Since :math:`\sum_j Q_j A_j \le \sum_j Q_j`, this is at most
        :math:`Q_i A_i / \sum_j Q_j A_j = P(i)`; it is > 0 for every :math:`w_i > 0`.
        """
        from mpmath import libmp  # type: ignore[import-untyped,unused-ignore]

        lo, _ = self.acceptance_interval(i)
        p, q = libmp.to_rational(lo)
        return Fraction(int(self._proposal[i]) * p, q * int(self._cumulative[-1]))

    # ----------------------------------------------------------------------------------
    # Sampling
    # ----------------------------------------------------------------------------------

    def sample(self, rng: RandomSource, size: int = 1, *, _exact: bool = False) -> I64:
        """``size`` independent indices with probability exactly P(i).

        ``_exact=True`` sends every acceptance decision to the certified path (tests).
        """
        out = np.empty(size, dtype=np.int64)
        todo = np.arange(size)
        total = np.uint64(int(self._cumulative[-1]))
        while todo.size:
            count = todo.size
            r = uniform_below(rng, np.full(count, total, dtype=np.uint64)).astype(np.int64)
            i = np.searchsorted(self._cumulative, r, side="right").astype(np.int64)
            words = rng.words(count)
            v = (words >> np.uint64(11)).astype(np.float64) * 2.0**-53  # V in [v, v + 2^-53)
            if _exact:
                accept = np.zeros(count, dtype=bool)
                unsure = np.ones(count, dtype=bool)
            else:
                lo, hi = self._fast_bounds(i)
                accept = v + 2.0**-53 <= lo
                unsure = ~accept & (v < hi)
            for t in np.flatnonzero(unsure):
                accept[t] = self._accept_exact(rng, int(i[t]), int(words[t]))
            out[todo[accept]] = i[accept]
            todo = todo[~accept]
        return out
