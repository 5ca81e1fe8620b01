"""Randomness and noise: the OS CSPRNG, exact integer samplers and grid-safe noise."""

from __future__ import annotations

from dpsense.noise.choice import ExponentialChoice
from dpsense.noise.rng import (
    RandomSource,
    SeededRandom,
    SeededRandomnessWarning,
    SystemRandom,
    resolve_rng,
)

__all__ = [
    "ExponentialChoice",
    "RandomSource",
    "SeededRandom",
    "SeededRandomnessWarning",
    "SystemRandom",
    "resolve_rng",
]
