"""Brute-force sensitivity explorer.

Local, distance-k and global sensitivity of an arbitrary function by exhaustive
enumeration over a small universe, for both neighbour relations and both universe models.

How it is fast
--------------
A dataset is a multiset, so it is stored as a *count vector* over the sorted distinct
values ``V`` of the universe (and of the data). The explorer

1. enumerates, once, every distinct multiset that the definition needs (the "table"),
2. evaluates ``f`` once per table entry, in batches (``f.evaluate_batch``, ``f(X)`` or
   ``f(X, axis=-1)`` when that reproduces row-by-row calls, else row by row),
3. gives each count vector an integer key that is *linear* in the counts
   (``key(c) = sum_j c_j w_j`` modulo ``2**64``, with mixed-radix weights when they fit,
   otherwise random odd weights and a collision check), so the key of
   ``base + delta`` is ``key(base) + key(delta)``, and
4. for every base dataset gathers ``f`` of all its neighbours at once by looking the keys
   of ``base + delta`` up in the sorted table keys, for a fixed set of sparse ``delta``
   vectors (the net changes of at most ``hamming`` records).

Position-based enumeration (``itertools.combinations`` over records, as in earlier
published implementations) evaluates ``f`` many times on the same multiset; this one never
does.
"""

from __future__ import annotations

import math
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpsense._arrays import FloatArray, as_data
from dpsense.errors import InputError
from dpsense.neighbours import ADD_REMOVE, Neighbours, validate_neighbours
from dpsense.params import check_int

__all__ = ["empirical_sensitivity", "empirical_sensitivity_profile"]

IntArray = NDArray[np.int64]
IndexArray = NDArray[np.intp]
SlotArray = NDArray[np.int32]
KeyArray = NDArray[np.uint64]
BoolArray = NDArray[np.bool_]

Scope = Literal["local", "global"]
Model = Literal["domain", "population"]

_PROGRESS_THRESHOLD: Final = 200_000
"""Show a progress bar by default when f is evaluated on more datasets than this."""
_PAIR_FACTOR: Final = 20
"""The number of (dataset, neighbour) comparisons may be this multiple of max_evaluations."""
_CHUNK_CELLS: Final = 1 << 20
"""Target number of cells in the working arrays of one chunk (bounds the memory)."""
_COUNT_CAP: Final = 1e150
"""Counts are computed in floating point and saturate here (far above any limit)."""
_NO_LIMIT: Final = 1 << 40
"""Per-value count limit used where the model imposes none (the domain model)."""
_DETECTION_TOL: Final = {"rtol": 1e-9, "atol": 1e-12}


class _SupportsEvaluateBatch(Protocol):
    """A dpsense statistic: evaluates itself on every row of a 2-D array."""

    def evaluate_batch(self, X: FloatArray, /) -> ArrayLike: ...


# --------------------------------------------------------------------------- validation


def _fail(name: str, where: str, expected: str, got: object) -> InputError:
    return InputError(f"The '{name}' parameter of {where} must be {expected}. Got {got!r} instead.")


def _choice(value: object, name: str, where: str, options: tuple[str, ...]) -> str:
    if isinstance(value, str) and value.strip().lower() in options:
        return value.strip().lower()
    expected = " or ".join(repr(o) for o in options)
    raise _fail(name, where, expected, value)


def _optional_bool(value: object, name: str, where: str) -> bool | None:
    if value is None or isinstance(value, bool | np.bool_):
        return None if value is None else bool(value)
    raise _fail(name, where, "True, False or None", value)


@dataclass(frozen=True)
class _Request:
    """Validated arguments of one exploration."""

    f: Any
    values: FloatArray  # V: sorted distinct values
    x: IntArray  # counts of the data over V
    n: int  # number of records in the data
    addable: BoolArray  # values that may be added (domain: the universe values)
    pop: IntArray | None  # population counts over V (population model only)
    hamming: int
    relation: Neighbours
    scope: str
    distance: int
    min_size: int
    max_evaluations: int
    progress: bool | None
    vectorized: bool | None

    @property
    def upper(self) -> IntArray:
        """Largest allowed count of each value in any dataset."""
        if self.pop is not None:
            return self.pop
        return np.full(self.values.shape[0], _NO_LIMIT, dtype=np.int64)


def _validate(
    where: str,
    f: object,
    data: object,
    universe: object,
    *,
    hamming: object,
    neighbours: object,
    scope: object,
    model: object,
    distance: object,
    min_size: object,
    max_evaluations: object,
    progress: object,
    vectorized: object,
) -> _Request:
    if not callable(f) and not hasattr(f, "evaluate_batch"):
        raise InputError(
            f"The 'f' parameter of {where} must be a callable that maps a 1-D array of "
            f"records to a number (or a dpsense statistic). Got an object of type "
            f"{type(f).__name__} instead."
        )
    h = check_int(hamming, "hamming", where=where, minimum=1)
    relation = validate_neighbours(neighbours, where=where)
    scope_ = _choice(scope, "scope", where, ("local", "global"))
    model_ = _choice(model, "model", where, ("domain", "population"))
    k = check_int(distance, "distance", where=where, minimum=0)
    if k > 0 and scope_ == "global":
        raise InputError(
            f"The 'distance' parameter of {where} must be 0 with scope='global' (global "
            f"sensitivity already maximises over every dataset). Got {k!r} instead."
        )
    if min_size is None:
        min_size_ = 0 if hasattr(f, "evaluate_batch") else 1
    else:
        min_size_ = check_int(min_size, "min_size", where=where, minimum=0)
    limit = check_int(max_evaluations, "max_evaluations", where=where, minimum=1)
    progress_ = _optional_bool(progress, "progress", where)
    vectorized_ = _optional_bool(vectorized, "vectorized", where)

    xs = as_data(data, name="data", where=where, allow_empty=min_size_ == 0)
    us = as_data(universe, name="universe", where=where)
    n = int(xs.shape[0])
    if min_size_ > n:
        raise InputError(
            f"The 'min_size' parameter of {where} must be at most the number of records in "
            f"the data ({n}). Got {min_size_!r} instead."
        )

    pop: IntArray | None = None
    if model_ == "population":
        values, pop_counts = np.unique(us, return_counts=True)
        pop = pop_counts.astype(np.int64)
        pos = np.searchsorted(values, xs)
        pos_c = np.minimum(pos, values.shape[0] - 1)
        present = values[pos_c] == xs
        x = np.bincount(pos_c[present], minlength=values.shape[0]).astype(np.int64)
        missing = int(n - np.count_nonzero(present)) + int(np.maximum(x - pop, 0).sum())
        if missing:
            raise InputError(
                f"With model='population' the 'data' of {where} must be a sub-multiset of "
                f"the population ('universe'), but {missing} of its {n} records are not in "
                "the population (counting repeated values). Pass the full population as "
                "'universe', or use model='domain'."
            )
        addable = pop > 0
    elif scope_ == "global":
        # Only the size of the data matters: every dataset is built from the universe.
        values = np.unique(us)
        x = np.zeros(values.shape[0], dtype=np.int64)
        addable = np.ones(values.shape[0], dtype=np.bool_)
    else:
        values = np.unique(np.concatenate([us, xs]))
        x = np.bincount(np.searchsorted(values, xs), minlength=values.shape[0]).astype(np.int64)
        addable = np.isin(values, us)
    return _Request(
        f=f,
        values=values.astype(np.float64),
        x=x,
        n=n,
        addable=addable,
        pop=pop,
        hamming=h,
        relation=relation,
        scope=scope_,
        distance=k,
        min_size=min_size_,
        max_evaluations=limit,
        progress=progress_,
        vectorized=vectorized_,
    )


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


# ------------------------------------------------------------------------ evaluation


class _Evaluator:
    """Evaluates ``f`` on the rows of 2-D arrays of datasets (one size per call).

    Modes: ``"batch"`` (``f.evaluate_batch(X)``), ``"vector"`` (``f(X)``), ``"axis"``
    (``f(X, axis=-1)``, numpy reductions such as ``np.median``) and ``"rows"`` (``f``
    called on each row). With ``vectorized=None`` the first two-dimensional call picks
    the first of ``"vector"`` and ``"axis"`` that reproduces row-by-row calls on a few
    datasets, else ``"rows"``.
    """

    def __init__(self, f: Any, vectorized: bool | None) -> None:
        self.f = f
        self.mode: str | None
        if callable(getattr(f, "evaluate_batch", None)):
            self.mode = "batch"
        elif vectorized is None:
            self.mode = None
        else:
            self.mode = "vector" if vectorized else "rows"

    def _rows(self, X: FloatArray) -> FloatArray:
        f = self.f
        out = np.empty(X.shape[0], dtype=np.float64)
        for i in range(X.shape[0]):
            value = f(X[i])
            if isinstance(value, float | int | np.number):
                out[i] = value
                continue
            arr = np.asarray(value, dtype=np.float64)
            if arr.size != 1:
                raise InputError(
                    "The 'f' parameter of empirical_sensitivity must return one number "
                    f"per dataset, but it returned an array of shape {arr.shape}."
                )
            out[i] = arr.reshape(())
        return out

    def _call(self, mode: str, X: FloatArray) -> FloatArray:
        if mode == "batch":
            return np.asarray(self.f.evaluate_batch(X), dtype=np.float64)
        if mode == "vector":
            return np.asarray(self.f(X), dtype=np.float64)
        if mode == "axis":
            return np.asarray(self.f(X, axis=-1), dtype=np.float64)
        return self._rows(X)

    def _detect(self, X: FloatArray) -> str:
        m = X.shape[1]
        b = 4 if m == 3 else 3  # b != m, so a reduction over the wrong axis is caught
        sample = X[:b] if X.shape[0] >= b else np.resize(X, (b, m))
        expected = self._rows(sample)
        for mode in ("vector", "axis"):
            try:
                got = self._call(mode, sample)
            except Exception:
                continue
            if got.shape == (b,) and np.allclose(got, expected, equal_nan=True, **_DETECTION_TOL):
                return mode
        return "rows"

    def __call__(self, X: FloatArray) -> FloatArray:
        if self.mode is None:
            if X.shape[1] == 0:
                return self._rows(X)
            self.mode = self._detect(X)
        out = self._call(self.mode, X)
        if out.shape != (X.shape[0],):
            what = {"batch": "evaluate_batch", "axis": "f(X, axis=-1)"}.get(
                self.mode, "f (with vectorized=True)"
            )
            raise InputError(
                f"{what} must return one number per row of its 2-D input: for an input of "
                f"shape {X.shape} it returned shape {out.shape}. Pass vectorized=False to "
                "call f on one dataset at a time."
            )
        return out


class _Progress:
    """A transient rich progress bar on stderr, or nothing."""

    def __init__(self, show: bool) -> None:
        self.show = show
        self._bar: Any = None
        self._task: Any = None

    @contextmanager
    def running(self) -> Iterator[_Progress]:
        if not self.show:
            yield self
            return
        from rich.console import Console
        from rich.progress import Progress

        with Progress(transient=True, console=Console(stderr=True)) as bar:
            self._bar = bar
            try:
                yield self
            finally:
                self._bar = None

    def task(self, description: str, total: int) -> None:
        if self._bar is not None:
            self._task = self._bar.add_task(description, total=total)

    def advance(self, amount: int) -> None:
        if self._bar is not None and self._task is not None:
            self._bar.advance(self._task, amount)


# -------------------------------------------------------------------------- the core


@dataclass(frozen=True)
class _Result:
    ls: FloatArray  # local sensitivity of every base dataset
    dist: IntArray  # distance of every base dataset from the data (local scope)


def _format_count(v: float) -> str:
    return f"{int(v):,}" if v < 2**53 else f"about {v:.3g}"


def _explore(req: _Request, where: str) -> _Result:
    h, k, relation = req.hamming, req.distance, req.relation
    n, min_size = req.n, req.min_size
    K = int(req.values.shape[0])
    upper = req.upper

    # The neighbour changes applied to every base: distance 1..h, generic per-value caps.
    if req.pop is not None:
        nb_rc = np.minimum(req.pop, h)
        nb_ac = np.minimum(req.pop, h)
    else:
        nb_rc = np.full(K, h, dtype=np.int64)
        nb_ac = np.where(req.addable, h, 0).astype(np.int64)
    nb_steps = _allowed_steps(relation, h, include_zero=False)
    counts_nb = _count_deltas(nb_rc, nb_ac, h)
    n_deltas = float(sum(counts_nb[p, q] for p, q in nb_steps))

    # The table: every multiset f is needed on, and which of them are bases.
    if req.scope == "local":
        r = k + h
        tab_rc = req.x
        if req.pop is not None:
            tab_ac = req.pop - req.x
        else:
            tab_ac = np.where(req.addable, r, 0).astype(np.int64)
        steps = [
            (p, q)
            for p, q in _allowed_steps(relation, r, include_zero=True)
            if n - p + q >= min_size
        ]
        counts = _count_deltas(tab_rc, tab_ac, r)
        n_eval = float(sum(counts[p, q] for p, q in steps))
        n_base = float(
            sum(counts[p, q] for p, q in steps if (p + q if relation == ADD_REMOVE else p) <= k)
        )
        colmax = req.x + np.minimum(tab_ac, r)
    else:
        top = n + h if relation == ADD_REMOVE else n
        caps = req.pop if req.pop is not None else np.full(K, top, dtype=np.int64)
        sizes = list(range(max(n - h, min_size), n + h + 1)) if relation == ADD_REMOVE else [n]
        counts_m = _count_multisets(caps, top)
        n_eval = float(sum(counts_m[m] for m in sizes))
        n_base = float(counts_m[n])
        colmax = np.minimum(caps, top)

    limit = req.max_evaluations
    if n_eval > limit:
        raise InputError(
            f"{where} would evaluate f on {_format_count(n_eval)} distinct datasets, more "
            f"than max_evaluations={limit:,}. Use a smaller universe, hamming or distance, "
            f"or raise the limit, e.g. max_evaluations={_suggest(n_eval)}."
        )
    n_pairs = n_base * n_deltas
    if n_pairs > _PAIR_FACTOR * limit:
        raise InputError(
            f"{where} would compare {_format_count(n_pairs)} (dataset, neighbour) pairs, "
            f"more than {_PAIR_FACTOR} x max_evaluations = {_PAIR_FACTOR * limit:,}. Use a "
            "smaller universe, hamming or distance, or raise the limit, e.g. "
            f"max_evaluations={_suggest(n_pairs / _PAIR_FACTOR)}."
        )

    # Enumerate the table.
    if req.scope == "local":
        changes = _net_changes(tab_rc, tab_ac, steps)
        dist = _distance(relation, changes.removed, changes.added)
        table = _Table(
            ref=req.x,
            sparse=changes,
            counts=None,
            sizes=n - changes.removed + changes.added,
            dist=dist,
            is_base=dist <= k,
        )
    elif max(sizes) >= K:  # few values, large datasets: dense count vectors
        counts_tab = _count_vectors(caps, min(sizes), max(sizes))
        sizes_tab = counts_tab.sum(axis=1)
        table = _Table(
            ref=np.zeros(K, dtype=np.int64),
            sparse=None,
            counts=counts_tab.astype(_smallest_uint(max(sizes))),
            sizes=sizes_tab,
            dist=np.zeros(sizes_tab.shape[0], dtype=np.int64),
            is_base=sizes_tab == n,
        )
    else:  # many values, small datasets: sorted value sequences
        by_size = _multisets(np.flatnonzero(caps > 0), caps, max(sizes), lo=min(sizes))
        seqs = _stack([(*by_size[m], 0, m) for m in sizes], max(sizes))
        table = _Table(
            ref=np.zeros(K, dtype=np.int64),
            sparse=seqs,
            counts=None,
            sizes=seqs.added,
            dist=np.zeros(seqs.rows, dtype=np.int64),
            is_base=seqs.added == n,
        )
    deltas = _net_changes(nb_rc, nb_ac, nb_steps)

    # Keys of the table, sorted (mixed radix, or random weights with a collision check).
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

    show = req.progress if req.progress is not None else n_eval > _PROGRESS_THRESHOLD
    progress = _Progress(show)
    fvals = np.empty(table.rows, dtype=np.float64)
    evaluate = _Evaluator(req.f, req.vectorized)
    with progress.running(), warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        progress.task("Evaluating f", table.rows)
        for m in np.unique(table.sizes).tolist():
            rows_m = np.flatnonzero(table.sizes == m)
            chunk = max(1, _CHUNK_CELLS // max(m, K, 1))
            for start in range(0, rows_m.shape[0], chunk):
                sel = rows_m[start : start + chunk]
                X = _datasets(req.values, table.dense(sel), m)
                try:
                    out = evaluate(X)
                except InputError:
                    raise
                except Exception as exc:
                    exc.add_note(f"(raised by f on a dataset of size {m} in {where})")
                    raise
                if not np.all(np.isfinite(out)):
                    raise InputError(
                        f"f returned NaN or infinity on a dataset of size {m} in {where}. If f "
                        "is undefined on small datasets (for example the variance of one "
                        f"record), exclude them with min_size={m + 1}; otherwise make f return "
                        "a finite number on every dataset."
                    )
                fvals[sel] = out
                progress.advance(int(sel.shape[0]))
    sf = fvals[order]

    # Local sensitivity of every base, by key lookup of all its neighbours at once. The
    # bases are taken in key order and the lookups made delta by delta, so every run of
    # queries is sorted (exact keys add without wrapping), which keeps the binary
    # searches cache-friendly.
    base_pos = np.flatnonzero(table.is_base[order])
    n_bases = int(base_pos.shape[0])
    kd = _signed_keys(w, deltas.idx, deltas.run)
    dsize = deltas.added - deltas.removed
    nd = deltas.rows
    ls = np.zeros(n_bases, dtype=np.float64)
    if nd and n_bases:
        b_chunk = max(1, min(n_bases, 1 << 16, _CHUNK_CELLS // K))
        d_chunk = max(1, _CHUNK_CELLS // b_chunk)
        upper_d = upper[deltas.idx]
        with progress.running():
            progress.task("Comparing neighbours", n_bases)
            for b0 in range(0, n_bases, b_chunk):
                pos_b = base_pos[b0 : b0 + b_chunk]
                rows_b = order[pos_b]
                BT = table.dense(rows_b).T.copy()  # (K, bases)
                kb, fb, size_b = skeys[pos_b], sf[pos_b], table.sizes[rows_b]
                best = np.zeros(pos_b.shape[0], dtype=np.float64)
                for d0 in range(0, nd, d_chunk):
                    dsl = slice(d0, d0 + d_chunk)
                    valid = (dsize[dsl, None] + size_b[None, :]) >= min_size  # (deltas, bases)
                    for slot in range(deltas.idx.shape[1]):
                        v = BT[deltas.idx[dsl, slot]] + deltas.run[dsl, slot, None]
                        valid &= (v >= 0) & (v <= upper_d[dsl, slot, None])
                    di, bi = np.nonzero(valid)
                    keys = kd[dsl][di] + kb[bi]
                    pos = np.minimum(np.searchsorted(skeys, keys), skeys.shape[0] - 1)
                    if not np.array_equal(skeys[pos], keys):  # pragma: no cover - invariant
                        raise RuntimeError("empirical_sensitivity: a neighbour is missing")
                    diff = np.zeros(valid.shape, dtype=np.float64)
                    diff[di, bi] = np.abs(sf[pos] - fb[bi])
                    np.maximum(best, diff.max(axis=0), out=best)
                ls[b0 : b0 + pos_b.shape[0]] = best
                progress.advance(int(pos_b.shape[0]))
    return _Result(ls=ls, dist=table.dist[order[base_pos]])


def _suggest(count: float) -> str:
    if count >= 1e15:
        return f"{count:.0e}".replace("+", "")
    return f"{math.ceil(count):_}"


# ------------------------------------------------------------------------ public API


def empirical_sensitivity(
    f: Callable[[FloatArray], Any] | _SupportsEvaluateBatch,
    data: ArrayLike,
    universe: ArrayLike,
    *,
    hamming: int = 1,
    neighbours: Neighbours | str = "add-remove",
    scope: Scope | str = "local",
    model: Model | str = "domain",
    distance: int = 0,
    min_size: int | None = None,
    max_evaluations: int = 5_000_000,
    progress: bool | None = None,
    vectorized: bool | None = None,
) -> float:
    r"""Local, distance-k or global sensitivity of ``f`` by exhaustive enumeration.

    Datasets are multisets of numbers and ``f`` is assumed not to depend on the order of
    the records (it always receives them sorted). For ``d`` the neighbour distance,
    the local sensitivity at Hamming distance ``h`` of a dataset ``x`` is

    .. math:: LS_h(f, x) = \max \{ |f(x) - f(x')| : 1 \le d(x, x') \le h \},

    and 0 when ``x`` has no admissible neighbour.

    * ``neighbours="add-remove"``: ``d`` is the size of the multiset symmetric
      difference, so removing one record and adding another is distance 2.
    * ``neighbours="substitute"``: ``x'`` has the size of ``x`` and ``d`` is the number of
      records replaced.

    Parameters
    ----------
    f : callable or dpsense statistic
        Maps a 1-D float array (one dataset, sorted) to a number. If ``f`` has a method
        ``evaluate_batch(X)`` (dpsense statistics) it is called on 2-D arrays, one
        dataset per row. Otherwise see ``vectorized``.
    data : array-like of float
        The dataset ``x`` (one column). Only its size matters for ``scope="global"``.
    universe : array-like of float
        ``model="domain"``: the set of values a record may take (duplicates are
        ignored). ``model="population"``: the population, a finite multiset of which
        ``data`` must be a sub-multiset.
    hamming : int, default 1
        ``h >= 1``: neighbours are all datasets at distance 1 to ``h`` inclusive.
    neighbours : {"add-remove", "substitute"}, default "add-remove"
        The neighbour relation (``"unbounded"``/``"bounded"`` are accepted aliases).
    scope : {"local", "global"}, default "local"
        ``"local"``: the sensitivity at ``data``. ``"global"``: the maximum of the local
        sensitivity over every dataset of the size of ``data`` that the model allows
        (all size-``n`` multisets of universe values, or all size-``n`` sub-multisets of
        the population). This is global sensitivity for a fixed ``n``, as earlier
        empirical explorations compute it.
    model : {"domain", "population"}, default "domain"
        ``"domain"``: added or substituted-in records are any universe values, with
        repetition; removed records are records of the current dataset (data values
        need not lie in the universe). ``"population"``: added records come from the
        population minus the current dataset (multiset difference), so every dataset
        considered is a sub-multiset of the population.
    distance : int, default 0
        ``k >= 0``, local scope only: return
        :math:`A(f, x, k) = \max \{ LS_h(f, y) : d(x, y) \le k \}` (NRS07, Definition
        3.1), where ``y`` ranges over the datasets allowed by the model and ``min_size``.
        ``k = 0`` is the local sensitivity.
    min_size : int or None, default None
        Datasets (bases and neighbours) with fewer records are left out. ``None`` means
        0 when ``f`` has ``evaluate_batch`` (dpsense statistics are defined on the empty
        dataset) and 1 otherwise. Must not exceed the size of ``data``.
    max_evaluations : int, default 5_000_000
        Upper limit on the number of distinct datasets ``f`` is evaluated on; the number
        of (dataset, neighbour) comparisons, which are much cheaper, may be up to 20
        times this. Both are counted exactly before any work starts.
    progress : bool or None, default None
        Show a transient progress bar on stderr. ``None``: only when ``f`` is evaluated
        on more than 200,000 datasets.
    vectorized : bool or None, default None
        Whether ``f`` accepts a 2-D array and returns one value per row (reducing over
        the last axis, e.g. ``lambda X: np.median(X, axis=-1)``). ``None`` detects it:
        on a few datasets, ``f(X)`` and then ``f(X, axis=-1)`` (numpy reductions such as
        ``np.median`` or ``np.var``) are compared with row-by-row calls, and the first
        that agrees is used for every batch; otherwise ``f`` is called once per dataset.
        ``True`` means ``f(X)``; ``False`` forces row-by-row calls. Ignored when ``f``
        has ``evaluate_batch``.

    Returns
    -------
    float
        The sensitivity.

    Raises
    ------
    InputError
        For invalid arguments, data that are not numeric and finite, data outside the
        population, a non-finite value of ``f`` on some dataset (suggests ``min_size``),
        or more work than ``max_evaluations`` allows. Messages never contain data values.

    See Also
    --------
    empirical_sensitivity_profile : ``A(f, x, k)`` for every ``k`` up to a maximum.

    Notes
    -----
    Every multiset is a count vector over the sorted distinct values; ``f`` is evaluated
    once per distinct multiset, and neighbours are found by vectorised key lookups, so
    the cost does not depend on how many records share a value. Runtime warnings emitted
    by ``f`` (such as numpy's "mean of empty slice") are silenced during the evaluation;
    non-finite results are reported as an :class:`~dpsense.errors.InputError` instead.

    Differences from an earlier published implementation (a notebook computing empirical
    local sensitivity):

    * Its add-remove code considers only neighbours that add exactly ``h``
      records or remove exactly ``h`` records. Here every dataset at distance 1 to ``h``
      counts, including mixed changes (remove one record and add another is distance 2),
      as the definition of Hamming distance requires.
    * Its substitute code compares pairs of neighbours with each other rather
      than with the released dataset; here local sensitivity compares the dataset with
      each of its neighbours.

    Examples
    --------
    That notebook's example, the median of 3 records from the population {1, 2, 3, 10, 11}:

    >>> import numpy as np
    >>> med = lambda X: np.median(X, axis=-1)
    >>> pop = [1, 2, 3, 10, 11]
    >>> empirical_sensitivity(med, [1, 2, 3], pop, model="population")
    0.5
    >>> empirical_sensitivity(med, [1, 10, 11], pop, model="population")
    4.5
    >>> empirical_sensitivity(med, [1, 2, 3], pop, model="population", scope="global",
    ...                       neighbours="substitute")
    8.0
    """
    where = "empirical_sensitivity"
    req = _validate(
        where,
        f,
        data,
        universe,
        hamming=hamming,
        neighbours=neighbours,
        scope=scope,
        model=model,
        distance=distance,
        min_size=min_size,
        max_evaluations=max_evaluations,
        progress=progress,
        vectorized=vectorized,
    )
    result = _explore(req, where)
    return float(result.ls.max()) if result.ls.size else 0.0


def empirical_sensitivity_profile(
    f: Callable[[FloatArray], Any] | _SupportsEvaluateBatch,
    data: ArrayLike,
    universe: ArrayLike,
    *,
    max_distance: int,
    hamming: int = 1,
    neighbours: Neighbours | str = "add-remove",
    model: Model | str = "domain",
    min_size: int | None = None,
    max_evaluations: int = 5_000_000,
    progress: bool | None = None,
    vectorized: bool | None = None,
) -> FloatArray:
    r"""Local sensitivity at distance ``k``, ``A(f, x, k)``, for ``k = 0..max_distance``.

    One enumeration gives every entry: ``out[k]`` equals
    ``empirical_sensitivity(f, data, universe, distance=k, ...)`` (see there for the
    definitions and every other parameter). The profile is non-decreasing in ``k``.
    It is what the smooth sensitivity :math:`S^* = \max_k e^{-k\beta} A(f, x, k)` and the
    distance to instability are built from.

    Parameters
    ----------
    f, data, universe, hamming, neighbours, model, min_size, max_evaluations, progress, \
vectorized
        As in :func:`empirical_sensitivity` (the scope is local).
    max_distance : int
        The largest ``k`` (>= 0).

    Returns
    -------
    numpy.ndarray of float, shape (max_distance + 1,)
        ``A(f, x, 0), ..., A(f, x, max_distance)``.

    Examples
    --------
    >>> import numpy as np
    >>> med = lambda X: np.median(X, axis=-1)
    >>> empirical_sensitivity_profile(med, [1, 2, 3], [1, 2, 3, 10, 11],
    ...                               model="population", max_distance=2).tolist()
    [0.5, 1.0, 5.0]
    """
    where = "empirical_sensitivity_profile"
    k_max = check_int(max_distance, "max_distance", where=where, minimum=0)
    req = _validate(
        where,
        f,
        data,
        universe,
        hamming=hamming,
        neighbours=neighbours,
        scope="local",
        model=model,
        distance=k_max,
        min_size=min_size,
        max_evaluations=max_evaluations,
        progress=progress,
        vectorized=vectorized,
    )
    result = _explore(req, where)
    out = np.zeros(k_max + 1, dtype=np.float64)
    for k in range(k_max + 1):
        sel = result.ls[result.dist <= k]
        out[k] = float(sel.max()) if sel.size else 0.0
    return out
