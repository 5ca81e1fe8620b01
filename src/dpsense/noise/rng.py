"""Sources of random bits.

Every random draw in dpsense goes through a :class:`RandomSource`. ``rng=None`` means the
operating system's CSPRNG (``os.urandom``, read in bulk); an int seed gives a reproducible
PCG64 generator for tests and demos only — it is not cryptographically secure, so it emits
a :class:`SeededRandomnessWarning` and every result made with it says so (``seeded``).
"""

from __future__ import annotations

import numbers
import os
import warnings
from abc import ABC, abstractmethod
from typing import Final

import numpy as np
from numpy.typing import NDArray

from dpsense._arrays import U64
from dpsense.errors import InputError, Param

__all__ = [
    "RandomSource",
    "SeededRandom",
    "SeededRandomnessWarning",
    "SystemRandom",
    "resolve_rng",
]

_SYSTEM: Final[list[SystemRandom]] = []
_BUFFER_WORDS: Final = 256


class SeededRandomnessWarning(UserWarning):
    """A seeded (reproducible, not cryptographically secure) generator is in use."""


class RandomSource(ABC):
    """Uniform 64-bit words; everything else is built from them exactly."""

    seeded: bool

    @abstractmethod
    def words(self, size: int) -> U64:
        """``size`` independent uniform 64-bit words."""

    def bits(self, size: int) -> NDArray[np.bool_]:
        """``size`` independent fair bits (64 per word)."""
        nwords = -(-size // 64)
        raw = self.words(nwords).view(np.uint8)
        return np.unpackbits(raw)[:size].astype(bool)

    def word(self) -> int:
        """One uniform 64-bit word as a Python int (buffered: cheap for scalar samplers)."""
        buffer: list[int] | None = getattr(self, "_buffer", None)
        if not buffer:
            buffer = self.words(_BUFFER_WORDS).tolist()
            buffer.reverse()
            self._buffer = buffer
        return buffer.pop()

    def randbelow(self, bound: int) -> int:
        """One uniform integer in ``[0, bound)`` for an arbitrarily large Python int."""
        if bound <= 0:
            raise InputError("randbelow needs a positive bound.")
        nbits = bound.bit_length()
        nwords = -(-nbits // 64)
        while True:
            value = 0
            for _ in range(nwords):
                value = (value << 64) | self.word()
            value >>= nwords * 64 - nbits
            if value < bound:
                return value


class SystemRandom(RandomSource):
    """The operating system's CSPRNG (``os.urandom``), read in one call per request."""

    seeded = False

    def words(self, size: int) -> U64:
        if size <= 0:
            return np.empty(0, dtype=np.uint64)
        return np.frombuffer(os.urandom(8 * size), dtype=np.uint64)

    def __repr__(self) -> str:
        return "SystemRandom()"


class SeededRandom(RandomSource):
    """A reproducible PCG64 generator: for tests and demos, never for real releases."""

    seeded = True

    def __init__(self, seed: int | np.random.Generator) -> None:
        if isinstance(seed, np.random.Generator):
            self._gen = seed
            self.seed: int | None = None
        else:
            self._gen = np.random.Generator(np.random.PCG64(seed))
            self.seed = int(seed)

    def words(self, size: int) -> U64:
        if size <= 0:
            return np.empty(0, dtype=np.uint64)
        return np.asarray(self._gen.bit_generator.random_raw(size), dtype=np.uint64)

    def __repr__(self) -> str:
        return f"SeededRandom(seed={self.seed!r})"


def resolve_rng(rng: object = None, *, where: str = "dpsense") -> RandomSource:
    """Turn the public ``rng`` argument into a :class:`RandomSource`.

    ``None`` gives the OS CSPRNG; an int or a ``numpy.random.Generator`` gives a seeded,
    reproducible source and warns with :class:`SeededRandomnessWarning`.
    """
    if rng is None:
        if not _SYSTEM:
            _SYSTEM.append(SystemRandom())
        return _SYSTEM[0]
    if isinstance(rng, RandomSource):
        return rng
    if isinstance(rng, np.random.Generator) or (
        isinstance(rng, numbers.Integral) and not isinstance(rng, bool)
    ):
        if isinstance(rng, numbers.Integral) and int(rng) < 0:
            raise InputError(
                Param("rng", of=where),
                f" must be None, a non-negative int seed or a "
                f"numpy Generator. Got {rng!r} instead.",
            )
        warnings.warn(
            f"{where}: a seeded generator is reproducible but not cryptographically secure; "
            "use it for tests and demos only (rng=None uses the OS CSPRNG).",
            SeededRandomnessWarning,
            stacklevel=3,
        )
        return SeededRandom(rng if isinstance(rng, np.random.Generator) else int(rng))
    raise InputError(
        Param("rng", of=where),
        f" must be None, a non-negative int seed or a numpy "
        f"Generator. Got an object of type {type(rng).__name__} instead.",
    )
