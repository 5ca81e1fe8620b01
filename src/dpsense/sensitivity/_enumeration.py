"""Count vectors of the brute-force sensitivity explorer: counting, enumeration, keys.

Package-private. A dataset is a multiset, stored as a count vector over the sorted distinct
values of the universe. This module counts the multisets and net changes a definition
needs (before any work starts), enumerates them, and gives each count vector an integer
key that is linear in the counts (see the module docstring of ``explorer``).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from dpsense._arrays import FloatArray
from dpsense.neighbours import ADD_REMOVE, Neighbours

IntArray = NDArray[np.int64]
IndexArray = NDArray[np.intp]
SlotArray = NDArray[np.int32]
KeyArray = NDArray[np.uint64]
BoolArray = NDArray[np.bool_]

_CHUNK_CELLS: Final = 1 << 20
"""Target number of cells in the working arrays of one chunk (bounds the memory)."""
_COUNT_CAP: Final = 1e150
"""Counts are computed in floating point and saturate here (far above any limit)."""


# ---------------------------------------------------------------------------- counting


def _poly_mul2(a: FloatArray, b: FloatArray) -> FloatArray:
    """Product of two bivariate polynomials truncated to the degrees of ``a``."""
    r0, r1 = a.shape
    out = np.zeros_like(a)
    for i, j in zip(*np.nonzero(a), strict=True):
        out[i:, j:] += a[i, j] * b[: r0 - i, : r1 - j]
    return np.minimum(out, _COUNT_CAP)


def _poly_pow2(g: FloatArray, e: int) -> FloatArray:
    """``g ** e`` (``e >= 1``) by repeated squaring, truncated like ``g``."""
    out: FloatArray | None = None
    while True:
        if e & 1:
            out = g if out is None else _poly_mul2(out, g)
        e >>= 1
        if not e:
            assert out is not None
            return out
        g = _poly_mul2(g, g)


def _count_deltas(rc: IntArray, ac: IntArray, r: int) -> FloatArray:
    """``P[p, q]``: number of net changes removing ``p`` and adding ``q`` records.

    Value ``j`` may lose up to ``rc[j]`` or gain up to ``ac[j]`` copies (not both: a net
    change has disjoint removal and addition supports).
    """
    kinds = Counter(zip(np.minimum(rc, r).tolist(), np.minimum(ac, r).tolist(), strict=True))
    out = np.zeros((r + 1, r + 1))
    out[0, 0] = 1.0
    for (a, b), e in kinds.items():
        g = np.zeros((r + 1, r + 1))
        g[: a + 1, 0] = 1.0
        g[0, 1 : b + 1] = 1.0
        out = _poly_mul2(out, _poly_pow2(g, e))
    return out


def _count_multisets(caps: IntArray, top: int) -> FloatArray:
    """``M[m]``: number of count vectors with sum ``m`` (``m <= top``) and ``c <= caps``."""
    capped, mult = np.unique(np.minimum(caps, top), return_counts=True)
    out = np.zeros((top + 1, 1))
    out[0, 0] = 1.0
    for a, e in zip(capped.tolist(), mult.tolist(), strict=True):
        g = np.zeros((top + 1, 1))
        g[: a + 1, 0] = 1.0
        out = _poly_mul2(out, _poly_pow2(g, e))
    return out[:, 0]


def _allowed_steps(relation: Neighbours, r: int, *, include_zero: bool) -> list[tuple[int, int]]:
    """The (removed, added) totals of the net changes within distance ``r``."""
    steps = []
    for p in range(r + 1):
        for q in range(r + 1):
            ok = p + q <= r if relation == ADD_REMOVE else p == q
            if ok and (include_zero or p + q > 0):
                steps.append((p, q))
    return steps


def _distance(relation: Neighbours, removed: IntArray, added: IntArray) -> IntArray:
    out: IntArray = removed + added if relation == ADD_REMOVE else removed
    return out


# ---------------------------------------------------------------------- enumeration


@dataclass(frozen=True)
class _Sparse:
    """Count vectors ``ref + delta`` with sparse ``delta`` (int32 storage).

    ``idx[i, s]`` is the value touched by slot ``s`` of row ``i`` and ``run[i, s]`` its
    signed running multiplicity inside the row (``-1, -2, ...`` for removed copies,
    ``+1, +2, ...`` for added copies, ``0`` for padding, which always points at value 0).
    Every slot is one record, so ``sign(run)`` summed per value gives ``delta``.
    """

    idx: SlotArray
    run: SlotArray
    removed: IntArray
    added: IntArray

    @property
    def rows(self) -> int:
        return int(self.idx.shape[0])

    def take(self, sel: IndexArray) -> _Sparse:
        return _Sparse(self.idx[sel], self.run[sel], self.removed[sel], self.added[sel])


def _multisets(
    allowed: IndexArray, caps: IntArray, top: int, lo: int = 0
) -> list[tuple[IndexArray, IntArray]]:
    """All multisets of the values ``allowed`` with multiplicities <= caps, by size.

    Entry ``s`` (for ``lo <= s <= top``; smaller sizes are left empty) holds the
    multisets of size ``s`` as non-decreasing index sequences ``(N, s)`` and the running
    multiplicity of each slot. Sizes are built one from the other in a single pass.
    """
    a = int(allowed.shape[0])
    cap = np.minimum(caps[allowed], max(top, 0))
    pos = np.zeros((1, 0), dtype=np.intp)
    run = np.zeros((1, 0), dtype=np.int64)
    last = np.zeros(1, dtype=np.intp)
    empty = (np.zeros((0, 0), dtype=np.intp), np.zeros((0, 0), dtype=np.int64))
    out = [(allowed[pos], run) if lo <= 0 else empty]
    for step in range(top):
        n_choice = a - last
        parent = np.repeat(np.arange(pos.shape[0]), n_choice)
        offsets = np.arange(parent.shape[0]) - np.repeat(np.cumsum(n_choice) - n_choice, n_choice)
        new = last[parent] + offsets
        if step == 0:
            new_run = np.ones(new.shape[0], dtype=np.int64)
        else:
            new_run = np.where(new == pos[parent, -1], run[parent, -1] + 1, 1)
        ok = new_run <= cap[new]
        parent, new, new_run = parent[ok], new[ok], new_run[ok]
        pos = np.concatenate([pos[parent], new[:, None]], axis=1)
        run = np.concatenate([run[parent], new_run[:, None]], axis=1)
        last = new
        out.append((allowed[pos], run) if step + 1 >= lo else empty)
    return out


def _stack(parts: list[tuple[IndexArray, IntArray, int, int]], width: int) -> _Sparse:
    """Concatenate blocks ``(idx, run, removed, added)``, padding the slots to ``width``."""
    total = sum(int(idx.shape[0]) for idx, _, _, _ in parts)
    idx_out = np.zeros((total, width), dtype=np.int32)
    run_out = np.zeros((total, width), dtype=np.int32)
    removed = np.zeros(total, dtype=np.int64)
    added = np.zeros(total, dtype=np.int64)
    at = 0
    for idx, run, p, q in parts:
        rows, cols = idx.shape
        idx_out[at : at + rows, :cols] = idx
        run_out[at : at + rows, :cols] = run
        removed[at : at + rows] = p
        added[at : at + rows] = q
        at += rows
    return _Sparse(idx_out, run_out, removed, added)


def _count_vectors(caps: IntArray, lo: int, hi: int) -> IntArray:
    """Every count vector ``0 <= c <= caps`` with ``lo <= sum(c) <= hi``, built value by value.

    Partial vectors that cannot reach ``lo`` are pruned, so no intermediate step holds
    more rows than the result.
    """
    k = int(caps.shape[0])
    cap = np.minimum(caps, hi)
    suffix = np.concatenate([np.cumsum(cap[::-1])[::-1], [0]])
    rows = np.zeros((1, 0), dtype=np.int64)
    total = np.zeros(1, dtype=np.int64)
    for j in range(k):
        t_lo = np.maximum(0, lo - total - suffix[j + 1])
        t_hi = np.minimum(cap[j], hi - total)
        n_choice = np.maximum(t_hi - t_lo + 1, 0)
        parent = np.repeat(np.arange(rows.shape[0]), n_choice)
        t = t_lo[parent] + (
            np.arange(parent.shape[0]) - np.repeat(np.cumsum(n_choice) - n_choice, n_choice)
        )
        rows = np.concatenate([rows[parent], t[:, None]], axis=1)
        total = total[parent] + t
    return rows


@dataclass(frozen=True)
class _Table:
    """The datasets ``f`` is evaluated on, as dense counts or as ``ref + sparse changes``."""

    ref: IntArray
    sparse: _Sparse | None
    counts: NDArray[np.unsignedinteger[Any]] | None
    sizes: IntArray  # records in each dataset
    dist: IntArray  # distance from the data (local scope; 0 for global)
    is_base: BoolArray  # datasets whose local sensitivity is maximised

    @property
    def rows(self) -> int:
        return int(self.sizes.shape[0])

    def dense(self, sel: IndexArray) -> IntArray:
        """Count vectors ``(len(sel), K)`` of the rows ``sel``."""
        if self.counts is not None:
            return self.counts[sel].astype(np.int64)
        assert self.sparse is not None
        return _densify(self.ref, self.sparse.take(sel))

    def keys(self, w: KeyArray) -> KeyArray:
        """The linear keys of every row."""
        if self.sparse is not None:
            key_ref = (self.ref.astype(np.uint64) * w).sum(dtype=np.uint64)
            out: KeyArray = key_ref + _signed_keys(w, self.sparse.idx, self.sparse.run)
            return out
        assert self.counts is not None
        out = np.empty(self.rows, dtype=np.uint64)
        step = max(1, _CHUNK_CELLS // max(int(w.shape[0]), 1))
        for start in range(0, self.rows, step):
            block = self.counts[start : start + step].astype(np.uint64)
            out[start : start + step] = (block * w).sum(axis=1, dtype=np.uint64)
        return out


def _smallest_uint(top: int) -> type[np.unsignedinteger[Any]]:
    for dtype in (np.uint8, np.uint16, np.uint32):
        if top <= np.iinfo(dtype).max:
            return dtype
    return np.uint64


def _net_changes(rc: IntArray, ac: IntArray, steps: list[tuple[int, int]]) -> _Sparse:
    """Every net change removing ``p`` and adding ``q`` records, for ``(p, q)`` in steps.

    Value ``j`` loses at most ``rc[j]`` or gains at most ``ac[j]`` copies; removals and
    additions have disjoint supports (a net change).
    """
    removable = np.flatnonzero(rc > 0)
    addable = np.flatnonzero(ac > 0)
    width = max((p + q for p, q in steps), default=0)
    removals = _multisets(removable, rc, max((p for p, _ in steps), default=0))
    additions = _multisets(addable, ac, max((q for _, q in steps), default=0))
    parts: list[tuple[IndexArray, IntArray, int, int]] = []
    for p, q in steps:
        r_idx, r_run = removals[p]
        a_idx, a_run = additions[q]
        n_r, n_a = r_idx.shape[0], a_idx.shape[0]
        if n_r == 0 or n_a == 0:
            continue
        if p == 0 or q == 0:
            rr, aa = np.divmod(np.arange(n_r * n_a), n_a)
            parts.append(
                (
                    np.concatenate([r_idx[rr], a_idx[aa]], axis=1),
                    np.concatenate([-r_run[rr], a_run[aa]], axis=1),
                    p,
                    q,
                )
            )
            continue
        chunk = max(1, _CHUNK_CELLS // n_a)
        for start in range(0, n_r, chunk):
            ri = r_idx[start : start + chunk]
            ok = np.ones((ri.shape[0], n_a), dtype=np.bool_)
            for i in range(p):  # disjoint supports
                for j in range(q):
                    ok &= ri[:, i, None] != a_idx[None, :, j]
            rr, aa = np.nonzero(ok)
            idx = np.concatenate([ri[rr], a_idx[aa]], axis=1)
            run = np.concatenate([-r_run[start + rr], a_run[aa]], axis=1)
            parts.append((idx, run, p, q))
    return _stack(parts, width)


def _densify(ref: IntArray, rows: _Sparse) -> IntArray:
    """Dense count vectors ``(rows, K)`` of ``ref + delta``."""
    c, k = rows.rows, int(ref.shape[0])
    flat = (np.arange(c)[:, None] * k + rows.idx.astype(np.intp)).ravel()
    delta = np.bincount(flat, weights=np.sign(rows.run).ravel(), minlength=c * k)
    out: IntArray = ref[None, :] + np.rint(delta).astype(np.int64).reshape(c, k)
    return out


def _datasets(values: FloatArray, counts: IntArray, m: int) -> FloatArray:
    """The sorted datasets ``(rows, m)`` of count vectors that all have ``m`` records."""
    c, k = counts.shape
    seq = np.repeat(np.arange(c * k) % k, counts.ravel()).reshape(c, m)
    out: FloatArray = values[seq]
    return out


# ------------------------------------------------------------------------------ keys


def _signed_keys(w: KeyArray, idx: SlotArray, run: SlotArray) -> KeyArray:
    """``sum_s sign(run_s) * w[idx_s]`` modulo 2**64, row by row."""
    wv = w[idx]
    neg = np.invert(wv) + np.uint64(1)  # two's complement: -w modulo 2**64
    zero = np.zeros_like(wv)
    contrib = np.where(run > 0, wv, np.where(run < 0, neg, zero))
    out: KeyArray = contrib.sum(axis=1, dtype=np.uint64)
    return out


def _weights(colmax: IntArray, attempt: int) -> tuple[KeyArray, bool]:
    """Key weights: exact mixed radix when it fits in 64 bits, else random odd numbers."""
    radix = [int(v) + 1 for v in colmax.tolist()]
    if math.prod(radix) < 2**64:
        place = [1]
        for r in radix[:-1]:
            place.append(place[-1] * r)
        return np.array(place, dtype=np.uint64), True
    rng = np.random.default_rng(0x5EED + attempt)
    w = rng.integers(0, 2**63, size=len(radix), dtype=np.uint64, endpoint=False)
    return (w << np.uint64(1)) | np.uint64(1), False
