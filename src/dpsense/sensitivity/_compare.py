"""Local sensitivity of every base dataset of the brute-force sensitivity explorer.

Package-private: :func:`_local_sensitivities` looks up ``f`` of all the neighbours of
every base at once, by the keys of ``base + delta`` in the sorted table keys.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpsense._arrays import FloatArray
from dpsense._progress import ProgressBar
from dpsense.sensitivity._enumeration import (
    _CHUNK_CELLS,
    IntArray,
    KeyArray,
    _signed_keys,
    _Sparse,
    _Table,
)
from dpsense.sensitivity._plan import _Keys
from dpsense.sensitivity._request import _Request


@dataclass(frozen=True)
class _Result:
    ls: FloatArray  # local sensitivity of every base dataset
    dist: IntArray  # distance of every base dataset from the data (local scope)

    def profile(self, k_max: int) -> FloatArray:
        """``A(f, x, k)`` for ``k = 0..k_max``: the largest local sensitivity within ``k``."""
        out = np.zeros(k_max + 1, dtype=np.float64)
        for k in range(k_max + 1):
            sel = self.ls[self.dist <= k]
            out[k] = float(sel.max()) if sel.size else 0.0
        return out


@dataclass(frozen=True, kw_only=True)
class _Lookup:
    """What the neighbour lookups of every chunk of bases share."""

    skeys: KeyArray  # sorted keys of the table
    sf: FloatArray  # f of the table, in key order
    kd: KeyArray  # signed key of every delta
    dsize: IntArray  # change of size made by every delta
    deltas: _Sparse
    upper_d: IntArray  # largest allowed count of the value of every delta slot
    min_size: int
    d_chunk: int


def _best(lk: _Lookup, BT: IntArray, kb: KeyArray, fb: FloatArray, size_b: IntArray) -> FloatArray:
    """Largest ``|f(base) - f(neighbour)|`` of each base of one chunk (0 without any)."""
    deltas, skeys, sf = lk.deltas, lk.skeys, lk.sf
    best = np.zeros(kb.shape[0], dtype=np.float64)
    for d0 in range(0, deltas.rows, lk.d_chunk):
        dsl = slice(d0, d0 + lk.d_chunk)
        valid = (lk.dsize[dsl, None] + size_b[None, :]) >= lk.min_size  # (deltas, bases)
        for slot in range(deltas.idx.shape[1]):
            v = BT[deltas.idx[dsl, slot]] + deltas.run[dsl, slot, None]
            valid &= (v >= 0) & (v <= lk.upper_d[dsl, slot, None])
        di, bi = np.nonzero(valid)
        keys = lk.kd[dsl][di] + kb[bi]
        pos = np.minimum(np.searchsorted(skeys, keys), skeys.shape[0] - 1)
        if not np.array_equal(skeys[pos], keys):  # pragma: no cover - invariant
            raise RuntimeError("empirical_sensitivity: a neighbour is missing")
        diff = np.zeros(valid.shape, dtype=np.float64)
        diff[di, bi] = np.abs(sf[pos] - fb[bi])
        np.maximum(best, diff.max(axis=0), out=best)
    return best


def _local_sensitivities(
    req: _Request,
    table: _Table,
    keys: _Keys,
    sf: FloatArray,
    deltas: _Sparse,
    progress: ProgressBar,
) -> _Result:
    """Local sensitivity of every base, by key lookup of all its neighbours at once.

    The bases are taken in key order and the lookups made delta by delta, so every run of
    queries is sorted (exact keys add without wrapping), which keeps the binary searches
    cache-friendly.
    """
    K = int(req.values.shape[0])
    order, skeys = keys.order, keys.sorted
    base_pos = np.flatnonzero(table.is_base[order])
    n_bases = int(base_pos.shape[0])
    kd = _signed_keys(keys.weights, deltas.idx, deltas.run)
    dsize = deltas.added - deltas.removed
    nd = deltas.rows
    ls = np.zeros(n_bases, dtype=np.float64)
    if nd and n_bases:
        b_chunk = max(1, min(n_bases, 1 << 16, _CHUNK_CELLS // K))
        d_chunk = max(1, _CHUNK_CELLS // b_chunk)
        upper_d = req.upper[deltas.idx]
        lookup = _Lookup(
            skeys=skeys,
            sf=sf,
            kd=kd,
            dsize=dsize,
            deltas=deltas,
            upper_d=upper_d,
            min_size=req.min_size,
            d_chunk=d_chunk,
        )
        with progress.running():
            progress.task("Comparing neighbours", n_bases)
            for b0 in range(0, n_bases, b_chunk):
                pos_b = base_pos[b0 : b0 + b_chunk]
                rows_b = order[pos_b]
                BT = table.dense(rows_b).T.copy()  # (K, bases)
                kb, fb, size_b = skeys[pos_b], sf[pos_b], table.sizes[rows_b]
                ls[b0 : b0 + pos_b.shape[0]] = _best(lookup, BT, kb, fb, size_b)
                progress.advance(int(pos_b.shape[0]))
    return _Result(ls=ls, dist=table.dist[order[base_pos]])
