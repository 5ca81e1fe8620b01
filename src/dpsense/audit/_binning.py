"""The events of the histogram audit: bins fixed from a pilot sample.

Package-private: :func:`_make_bins` builds an ordered partition of the real line
(:class:`_Bins`) from the pooled pilot outputs only, never from the tested outputs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from dpsense.audit._sampling import Outputs

MAX_DISCRETE_VALUES: Final = 512
"""Integer outputs with at most this many distinct pilot values get one bin per value."""
_MIN_PILOT: Final = 2_000
"""Smallest pilot sample per dataset (capped at ``n``)."""
_PILOT_PER_BIN: Final = 250
"""Pilot outputs per dataset per requested bin, so quantile edges are stable."""


# ----------------------------------------------------------------------------- binning


@dataclass(frozen=True)
class _Bins:
    """An ordered partition of the real line by ``edges``: bin i is [e_{i-1}, e_i).

    Bin 0 is ``(-inf, e_0)`` and the last bin ``[e_{-1}, inf)``.
    """

    edges: Outputs
    integer: bool

    @property
    def count(self) -> int:
        return int(self.edges.shape[0]) + 1

    def histogram(self, outputs: Outputs) -> NDArray[np.int64]:
        index = np.searchsorted(self.edges, outputs, side="right")
        return np.bincount(index, minlength=self.count).astype(np.int64)

    def _text(self, value: Any) -> str:
        return str(int(value)) if self.integer else f"{float(value):.6g}"

    def _is_successor(self, i: int) -> bool:
        """Whether edge i is the successor of edge i - 1 (the bin between holds one value)."""
        if i <= 0:
            return False
        return bool(self.edges[i] == _successor(self.edges[i - 1 : i], self.integer)[0])

    def _from(self, i: int) -> str:
        """Text for 'outputs at or above edge i'."""
        if not self.integer and self._is_successor(i):
            return f"> {self._text(self.edges[i - 1])}"
        return f">= {self._text(self.edges[i])}"

    def _below(self, i: int) -> str:
        """Text for 'outputs below edge i'."""
        if not self.integer and self._is_successor(i):
            return f"<= {self._text(self.edges[i - 1])}"
        return f"< {self._text(self.edges[i])}"

    def bin_label(self, b: int) -> str:
        last = self.count - 1
        if b == 0:
            return f"tail {self._below(0)}"
        if b == last:
            return f"tail {self._from(last - 1)}"
        if self._is_successor(b):
            return f"value {self._text(self.edges[b - 1])}"
        upper = self._text(self.edges[b])
        if not self.integer and self._is_successor(b - 1):
            return f"bin ({self._text(self.edges[b - 2])}, {upper})"
        return f"bin [{self._text(self.edges[b - 1])}, {upper})"

    def prefix_label(self, length: int) -> str:
        return f"tail {self._below(length - 1)}"

    def suffix_label(self, start: int) -> str:
        return f"tail {self._from(start - 1)}"


def _successor(values: NDArray[Any], integer: bool) -> NDArray[Any]:
    if integer:
        return np.asarray(values + 1, dtype=np.int64)
    return np.asarray(np.nextafter(values, np.inf), dtype=np.float64)


def _make_bins(pilot: Outputs, bins: int) -> _Bins:
    """Bin edges from the pooled pilot sample only (never from the tested outputs).

    Integer outputs with few distinct values get one bin per value. Otherwise the edges
    are the pilot's ``bins``-quantiles, and values that carry a lump of probability (any
    repeated float, or an integer holding a whole quantile bin) get a bin of their own,
    so that a point mass, such as a mechanism that adds no noise, is tested as an event.
    """
    integer = pilot.dtype.kind == "i"
    values, counts = np.unique(pilot, return_counts=True)
    if integer and values.shape[0] <= MAX_DISCRETE_VALUES:
        atoms = values
        quantile_edges = values[:0]
    else:
        levels = np.arange(1, bins) / bins
        quantile_edges = np.quantile(pilot, levels, method="inverted_cdf")
        heavy = 2 if not integer else max(2, math.ceil(pilot.shape[0] / bins))
        candidates = np.flatnonzero(counts >= heavy)
        # the `bins` heaviest lumps, so rounded outputs cannot multiply the events
        order = candidates[np.argsort(-counts[candidates], kind="stable")][:bins]
        atoms = values[np.sort(order)]
    if integer:
        atoms = atoms[atoms < np.iinfo(np.int64).max]
    merged = np.unique(np.concatenate([quantile_edges, atoms, _successor(atoms, integer)]))
    edges: Outputs = merged.astype(np.int64) if integer else merged.astype(np.float64)
    return _Bins(edges=edges, integer=integer)


def _pilot_size(n: int, bins: int) -> int:
    return min(n, max(_MIN_PILOT, _PILOT_PER_BIN * bins))
