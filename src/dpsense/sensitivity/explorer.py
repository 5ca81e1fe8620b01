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
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Literal

import numpy as np
from numpy.typing import ArrayLike

from dpsense._arrays import FloatArray
from dpsense._progress import ProgressBar, show_progress
from dpsense.errors import EvaluationLimitError, InputError
from dpsense.neighbours import ADD_REMOVE, Neighbours
from dpsense.params import check_int
from dpsense.sensitivity._enumeration import (
    _CHUNK_CELLS,
    IntArray,
    _allowed_steps,
    _count_deltas,
    _count_multisets,
    _count_vectors,
    _datasets,
    _distance,
    _multisets,
    _net_changes,
    _signed_keys,
    _smallest_uint,
    _stack,
    _Table,
    _weights,
)
from dpsense.sensitivity._evaluate import _Evaluator, _SupportsEvaluateBatch
from dpsense.sensitivity._request import _Request, _validate

__all__ = ["empirical_sensitivity", "empirical_sensitivity_profile"]

Scope = Literal["local", "global"]
Model = Literal["domain", "population"]

_PROGRESS_THRESHOLD: Final = 200_000
"""With progress=None a bar is shown (on a terminal) when f runs on more datasets than this."""
_PAIR_FACTOR: Final = 20
"""The number of (dataset, neighbour) comparisons may be this multiple of max_evaluations."""


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
        raise EvaluationLimitError(
            f"{where} would evaluate f on {_format_count(n_eval)} distinct datasets, more "
            f"than max_evaluations={limit:,}. Use a smaller universe, hamming or distance, "
            f"or raise the limit, e.g. max_evaluations={_suggest(n_eval)}.",
            n_eval,
        )
    n_pairs = n_base * n_deltas
    if n_pairs > _PAIR_FACTOR * limit:
        raise EvaluationLimitError(
            f"{where} would compare {_format_count(n_pairs)} (dataset, neighbour) pairs, "
            f"more than {_PAIR_FACTOR} x max_evaluations = {_PAIR_FACTOR * limit:,}. Use a "
            "smaller universe, hamming or distance, or raise the limit, e.g. "
            f"max_evaluations={_suggest(n_pairs / _PAIR_FACTOR)}.",
            n_pairs / _PAIR_FACTOR,
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

    progress = ProgressBar(show_progress(req.progress, large=n_eval > _PROGRESS_THRESHOLD))
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
        Show a transient progress bar on stderr. ``None``: only when stderr is a
        terminal and ``f`` is evaluated on more than 200,000 datasets.
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
