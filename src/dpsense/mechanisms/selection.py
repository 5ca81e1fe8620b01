r"""Selection mechanisms: the exponential mechanism and report-noisy-max.

Exponential mechanism (McSherry & Talwar 2007): choose candidate r with probability

.. math:: P(r) \propto \exp\left(\frac{\varepsilon\, u(x, r)}{2\Delta u}\right)

(:math:`\varepsilon u / \Delta u` when the utility is monotone in the data), sampled
exactly by :class:`dpsense.noise.choice.ExponentialChoice` (rejection from integer
proposal weights, acceptance decided with certified interval arithmetic where floats cannot
decide; docs/noise.md). The multiplier :math:`\eta` is the largest double at most
:math:`\varepsilon/(2\Delta u)`, so every candidate's probability is exactly that of the
exponential mechanism with :math:`\eta`, which is :math:`\varepsilon`-DP. Only an index is
released.

Report-noisy-max (Dwork & Roth 2014, Claim 3.9): the index of the largest score after
independent Laplace noise of scale :math:`2\Delta/\varepsilon` (:math:`\Delta/\varepsilon`
for monotone scores), with exact integer noise on a grid and ties broken towards the lowest
index.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Generic, TypeVar

import numpy as np
from numpy.typing import NDArray

from dpsense.errors import InputError, Param
from dpsense.noise.choice import ExponentialChoice, eta_at_most
from dpsense.noise.exact import discrete_laplace as _sample_dlap
from dpsense.noise.grid import pow2_at_most, round_to_grid
from dpsense.noise.rng import resolve_rng
from dpsense.params import check_epsilon, check_sensitivity

__all__ = ["ExponentialMechanism", "Selection", "exponential", "report_noisy_max"]

T = TypeVar("T")


def _scores(scores: Any, n: int | None, where: str) -> NDArray[np.float64]:
    try:
        arr = np.asarray(scores, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise InputError(f"The 'scores' parameter of {where} must be numbers.") from None
    if arr.size == 0 or (n is not None and arr.size != n):
        raise (
            InputError(
                Param("scores", of=where), f" must have one score per candidate ({n} candidates)."
            )
            if n is not None
            else InputError(f"{where} needs at least one score.")
        )
    if not np.all(np.isfinite(arr)):
        raise InputError(f"The 'scores' parameter of {where} contains NaN or infinity.")
    return arr


@dataclass(frozen=True)
class Selection(Generic[T]):
    """The outcome of a selection mechanism: an index and the candidate it names."""

    index: int
    candidate: T
    epsilon: float
    seeded: bool


@dataclass(frozen=True)
class ExponentialMechanism:
    r"""The exponential mechanism with utility sensitivity :math:`\Delta u`.

    Parameters
    ----------
    sensitivity : float
        :math:`\Delta u`, the largest change of any candidate's utility between neighbours.
    epsilon : float
    monotonic : bool
        True when every utility moves in the same direction between neighbours, which
        halves the noise (McSherry & Talwar 2007).
    """

    sensitivity: float
    epsilon: float
    monotonic: bool = False

    def __post_init__(self) -> None:
        where = "ExponentialMechanism"
        object.__setattr__(
            self, "sensitivity", check_sensitivity(self.sensitivity, where=where, positive=True)
        )
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon, where=where))

    @property
    def temperature(self) -> float:
        """The multiplier of the utility in the log-probabilities: the largest double at
        most epsilon / (2 sensitivity) (epsilon / sensitivity when monotonic)."""
        factor = 1.0 if self.monotonic else 2.0
        return eta_at_most(self.epsilon, factor * self.sensitivity)

    def _choice(self, arr: NDArray[np.float64]) -> ExponentialChoice:
        # P(r) proportional to exp(eta u_r) = exp(-eta s_r) with s_r = -u_r (exact negation)
        return ExponentialChoice(np.ones(arr.size), -arr, self.temperature)

    def probabilities(self, scores: Any) -> NDArray[np.float64]:
        """The exact selection probabilities (softmax), for inspection and tests."""
        logits = self.temperature * _scores(scores, None, "ExponentialMechanism")
        logits -= logits.max()
        weights = np.exp(logits)
        return np.asarray(weights / weights.sum(), dtype=np.float64)

    def select(self, candidates: Sequence[T], scores: Any, rng: object = None) -> Selection[T]:
        """Choose one candidate, with exactly the exponential mechanism's probabilities."""
        cands = list(candidates)
        arr = _scores(scores, len(cands), "exponential")
        source = resolve_rng(rng, where="exponential")
        i = int(self._choice(arr).sample(source, 1)[0])
        return Selection(i, cands[i], self.epsilon, source.seeded)

    def sample_indices(self, scores: Any, size: int, rng: object = None) -> NDArray[np.int64]:
        """``size`` independent selections (indices), vectorised; each is epsilon-DP."""
        arr = _scores(scores, None, "exponential")
        source = resolve_rng(rng, where="exponential")
        return self._choice(arr).sample(source, size)

    def accuracy(self, n_candidates: int, beta: float = 0.05) -> float:
        r"""With probability :math:`1-\beta` the chosen utility is within
        :math:`\frac{2\Delta u}{\varepsilon}(\ln|R| + \ln(1/\beta))` of the best
        (Dwork & Roth 2014, Theorem 3.11)."""
        return (math.log(n_candidates) + math.log(1.0 / beta)) / self.temperature

    def accuracy_statement(self, n_candidates: int, beta: float = 0.05) -> str:
        """A sentence: within a of the best utility with probability 1 - beta."""
        return (
            f"utility within {self.accuracy(n_candidates, beta):.4g} of the best with "
            f"probability {1 - beta:.3g}"
        )


def exponential(
    candidates: Sequence[T],
    scores: Any,
    *,
    sensitivity: float,
    epsilon: float,
    rng: object = None,
) -> T:
    """Exponential mechanism: one candidate, chosen with probability
    proportional to exp(epsilon * score / (2 sensitivity))."""
    return ExponentialMechanism(sensitivity, epsilon).select(candidates, scores, rng).candidate


def report_noisy_max(
    scores: Any,
    *,
    sensitivity: float,
    epsilon: float,
    monotonic: bool = False,
    rng: object = None,
) -> int:
    r"""Index of the largest score plus Laplace noise; epsilon-DP.

    Each score is rounded to a power-of-two grid :math:`\gamma \approx \Delta 2^{-20}`, which
    raises its sensitivity to :math:`\Delta_g = \lfloor\Delta/\gamma\rfloor + 1` grid units,
    and receives exact discrete Laplace noise with integer scale
    :math:`t = \lceil 2\Delta_g/\varepsilon \rceil` (:math:`\Delta_g/\varepsilon` when
    monotonic). Ties go to the lowest index, a rule that does not depend on the data.
    """
    where = "report_noisy_max"
    arr = _scores(scores, None, where)
    sens = check_sensitivity(sensitivity, where=where, positive=True)
    eps = check_epsilon(epsilon, where=where)
    source = resolve_rng(rng, where=where)
    grid = pow2_at_most(sens * 2.0**-20)
    delta_g = math.floor(sens / grid) + 1
    factor = 1 if monotonic else 2
    t = math.ceil(Fraction(factor * delta_g) / Fraction(eps))
    m = round_to_grid(arr, grid)
    noisy = m + _sample_dlap(source, Fraction(t), arr.size).astype(np.float64)
    return int(np.argmax(noisy))
