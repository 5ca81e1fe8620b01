r"""Private partition selection: which groups to release when no keys are public.

Each group's number of distinct units (after contribution bounding) gets independent
discrete Laplace noise of scale :math:`b \ge g/\epsilon_s` and the group is kept when the
noisy count reaches an integer threshold :math:`\tau`. A unit changes at most ``g`` counts
by one, so on the groups both neighbours share the noisy counts are
:math:`\epsilon_s`-DP; a group that only the larger neighbour has holds exactly that one
unit (count 1) and is kept with probability
:math:`P(Z \ge \tau - 1) = q^{\tau-1}/(1+q)`, :math:`q = e^{-1/b}`; over at most g such
groups this is at most :math:`\delta_s` when
:math:`\tau - 1 \ge b \ln(g / (\delta_s (1 + q)))` (Korolova et al. 2009; Wilson et al.
2020, with the discrete Laplace tail computed exactly). docs/tables.md §4 has the proof.
The noise is exact (integer) and the noisy counts are never published.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from dpsense._exact_budget import exact, exp_bounds, log_bounds, rational_ceil
from dpsense.noise.exact import discrete_laplace
from dpsense.noise.rng import RandomSource

__all__ = ["SelectionRule", "select_groups"]

_SCALE_GRID = 2**20


@dataclass(frozen=True)
class SelectionRule:
    """Scale and threshold of the selection (public)."""

    scale: Fraction
    threshold: int

    @classmethod
    def for_budget(cls, epsilon: float, delta: float, groups_per_unit: int) -> SelectionRule:
        g = groups_per_unit
        # a coarser denominator keeps the exact sampler fast; rounding up only adds privacy
        scale = rational_ceil(g / exact(epsilon), _SCALE_GRID)
        # tau - 1 >= b ln(g / (delta (1 + q))): q from below, the log from above, the
        # product in exact rationals (docs/noise.md §8)
        q_low = exp_bounds(-1 / scale)[0]
        steps = math.ceil(scale * log_bounds(g / (exact(delta) * (1 + q_low)))[1])
        return cls(scale, 1 + max(steps, 0))

    def tail(self, groups_per_unit: int) -> float:
        """The probability bound that a one-unit group is kept, summed over g groups."""
        q = math.exp(-1.0 / float(self.scale))
        return groups_per_unit * q ** (self.threshold - 1) / (1.0 + q)


def select_groups(units: np.ndarray, rule: SelectionRule, rng: RandomSource) -> np.ndarray:
    """Indices of the groups whose noisy unit count reaches the threshold."""
    if units.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    noise = discrete_laplace(rng, rule.scale, int(units.shape[0]))
    return np.flatnonzero(units.astype(np.int64) + noise >= rule.threshold)
