"""What every release method reads: one value object, passed whole.

A method (``global``, ``smooth``, ``ptr``, ``exponential``, ``adaptive``, and the mean
estimators behind ``ksw`` and ``bounded-ls``) releases one statistic of one set of clipped
records at one budget; its own options (``noise=``, ``bound=``, ...) are keyword
arguments beside the call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dpsense.neighbours import Neighbours
    from dpsense.noise.rng import RandomSource
    from dpsense.statistics import Statistic

__all__ = ["MethodCall"]


@dataclass(frozen=True, kw_only=True)
class MethodCall:
    """One release: the clipped records (an array, or an engine's held group), the
    statistic, the (epsilon, delta) it may spend, the neighbour relation and the random
    source its draws come from."""

    records: Any
    statistic: Statistic
    epsilon: float
    delta: float
    neighbours: Neighbours
    rng: RandomSource

    def parts(self) -> tuple[Any, Statistic, float, float, Neighbours, RandomSource]:
        """(records, statistic, epsilon, delta, neighbours, rng), in that order."""
        return self.records, self.statistic, self.epsilon, self.delta, self.neighbours, self.rng
