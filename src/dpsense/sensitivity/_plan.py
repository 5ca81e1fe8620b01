"""What the brute-force sensitivity explorer enumerates, counted before any work starts.

Package-private. :func:`_neighbour_steps` gives the net changes applied to every base
dataset, :func:`_plan_table` the multisets ``f`` is evaluated on (counted first, then
enumerated by ``build``) and :func:`_sorted_keys` their linear keys in sorted order (see
the module docstring of ``explorer``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpsense.neighbours import ADD_REMOVE
from dpsense.sensitivity._enumeration import (
    IndexArray,
    IntArray,
    KeyArray,
    _allowed_steps,
    _count_deltas,
    _count_multisets,
    _count_vectors,
    _distance,
    _multisets,
    _net_changes,
    _smallest_uint,
    _Sparse,
    _stack,
    _Table,
    _weights,
)
from dpsense.sensitivity._request import _Request

# ------------------------------------------------------------------- neighbour changes


@dataclass(frozen=True)
class _NeighbourSteps:
    """The net changes applied to every base: distance 1..h, generic per-value caps."""

    removable: IntArray  # copies of each value a change may remove
    addable: IntArray  # copies of each value a change may add
    steps: list[tuple[int, int]]  # (removed, added) record counts allowed
    count: float  # number of net changes

    def changes(self) -> _Sparse:
        return _net_changes(self.removable, self.addable, self.steps)


def _neighbour_steps(req: _Request) -> _NeighbourSteps:
    h = req.hamming
    K = int(req.values.shape[0])
    if req.pop is not None:
        nb_rc = np.minimum(req.pop, h)
        nb_ac = np.minimum(req.pop, h)
    else:
        nb_rc = np.full(K, h, dtype=np.int64)
        nb_ac = np.where(req.addable, h, 0).astype(np.int64)
    nb_steps = _allowed_steps(req.relation, h, include_zero=False)
    counts_nb = _count_deltas(nb_rc, nb_ac, h)
    n_deltas = float(sum(counts_nb[p, q] for p, q in nb_steps))
    return _NeighbourSteps(removable=nb_rc, addable=nb_ac, steps=nb_steps, count=n_deltas)


# ------------------------------------------------------------------------- the table


@dataclass(frozen=True)
class _LocalTable:
    """Local scope: the data changed by at most ``distance + hamming`` records."""

    removable: IntArray
    addable: IntArray
    steps: list[tuple[int, int]]
    n_eval: float  # datasets f is evaluated on
    n_base: float  # datasets whose local sensitivity is needed
    colmax: IntArray  # largest count of each value in the table

    def build(self, req: _Request) -> _Table:
        changes = _net_changes(self.removable, self.addable, self.steps)
        dist = _distance(req.relation, changes.removed, changes.added)
        return _Table(
            ref=req.x,
            sparse=changes,
            counts=None,
            sizes=req.n - changes.removed + changes.added,
            dist=dist,
            is_base=dist <= req.distance,
        )


@dataclass(frozen=True)
class _GlobalTable:
    """Global scope: every multiset of the sizes a base of size ``n`` or its neighbours has."""

    caps: IntArray
    sizes: list[int]
    n_eval: float
    n_base: float
    colmax: IntArray

    def build(self, req: _Request) -> _Table:
        n, K, caps, sizes = req.n, int(req.values.shape[0]), self.caps, self.sizes
        if max(sizes) >= K:  # few values, large datasets: dense count vectors
            counts_tab = _count_vectors(caps, min(sizes), max(sizes))
            sizes_tab = counts_tab.sum(axis=1)
            return _Table(
                ref=np.zeros(K, dtype=np.int64),
                sparse=None,
                counts=counts_tab.astype(_smallest_uint(max(sizes))),
                sizes=sizes_tab,
                dist=np.zeros(sizes_tab.shape[0], dtype=np.int64),
                is_base=sizes_tab == n,
            )
        # many values, small datasets: sorted value sequences
        by_size = _multisets(np.flatnonzero(caps > 0), caps, max(sizes), lo=min(sizes))
        seqs = _stack([(*by_size[m], 0, m) for m in sizes], max(sizes))
        return _Table(
            ref=np.zeros(K, dtype=np.int64),
            sparse=seqs,
            counts=None,
            sizes=seqs.added,
            dist=np.zeros(seqs.rows, dtype=np.int64),
            is_base=seqs.added == n,
        )


def _local_table(req: _Request) -> _LocalTable:
    h, k, relation = req.hamming, req.distance, req.relation
    n, min_size = req.n, req.min_size
    r = k + h
    tab_rc = req.x
    if req.pop is not None:
        tab_ac = req.pop - req.x
    else:
        tab_ac = np.where(req.addable, r, 0).astype(np.int64)
    steps = [
        (p, q) for p, q in _allowed_steps(relation, r, include_zero=True) if n - p + q >= min_size
    ]
    counts = _count_deltas(tab_rc, tab_ac, r)
    n_eval = float(sum(counts[p, q] for p, q in steps))
    n_base = float(
        sum(counts[p, q] for p, q in steps if (p + q if relation == ADD_REMOVE else p) <= k)
    )
    colmax = req.x + np.minimum(tab_ac, r)
    return _LocalTable(
        removable=tab_rc,
        addable=tab_ac,
        steps=steps,
        n_eval=n_eval,
        n_base=n_base,
        colmax=colmax,
    )


def _global_table(req: _Request) -> _GlobalTable:
    h, relation, n, min_size = req.hamming, req.relation, req.n, req.min_size
    K = int(req.values.shape[0])
    top = n + h if relation == ADD_REMOVE else n
    caps = req.pop if req.pop is not None else np.full(K, top, dtype=np.int64)
    sizes = list(range(max(n - h, min_size), n + h + 1)) if relation == ADD_REMOVE else [n]
    counts_m = _count_multisets(caps, top)
    n_eval = float(sum(counts_m[m] for m in sizes))
    n_base = float(counts_m[n])
    colmax = np.minimum(caps, top)
    return _GlobalTable(caps=caps, sizes=sizes, n_eval=n_eval, n_base=n_base, colmax=colmax)


def _plan_table(req: _Request) -> _LocalTable | _GlobalTable:
    """The table: every multiset f is needed on, and which of them are bases (counted)."""
    return _local_table(req) if req.scope == "local" else _global_table(req)


# -------------------------------------------------------------------------------- keys


@dataclass(frozen=True)
class _Keys:
    """The linear keys of a table: the weights, the row order and the sorted keys."""

    weights: KeyArray
    order: IndexArray  # rows of the table in key order
    sorted: KeyArray  # keys in that order


def _sorted_keys(table: _Table, colmax: IntArray) -> _Keys:
    """Keys of the table, sorted (mixed radix, or random weights with a collision check)."""
    for attempt in range(8):
        w, exact = _weights(colmax, attempt)
        tkeys = table.keys(w)
        order = np.argsort(tkeys, kind="stable")
        skeys = tkeys[order]
        if not np.any(skeys[1:] == skeys[:-1]):
            break
        if exact:  # pragma: no cover - mixed-radix keys are unique by construction
            raise RuntimeError("empirical_sensitivity: duplicate multisets in the table")
    else:  # pragma: no cover - probability about 2**-60 per attempt
        raise RuntimeError("empirical_sensitivity: could not find collision-free keys")
    return _Keys(weights=w, order=order, sorted=skeys)
