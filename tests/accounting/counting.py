"""A random source that counts what is drawn from it: "nothing is drawn" made testable."""

from __future__ import annotations

import numpy as np

from dpsense.noise.rng import SeededRandom


class CountingRandom(SeededRandom):
    """A source that counts the random words drawn from it."""

    def __init__(self, seed: int = 0) -> None:
        super().__init__(seed)
        self.drawn = 0

    def words(self, size: int) -> np.ndarray:
        self.drawn += size
        return super().words(size)
