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
from collections.abc import Callable
from typing import Any, Final, Literal

from numpy.typing import ArrayLike

from dpsense._arrays import FloatArray
from dpsense._progress import ProgressBar, show_progress
from dpsense.errors import Assign, EvaluationLimitError, Message, Name
from dpsense.neighbours import Neighbours
from dpsense.params import check_int
from dpsense.sensitivity._compare import _local_sensitivities, _Result
from dpsense.sensitivity._evaluate import _evaluate_table, _SupportsEvaluateBatch
from dpsense.sensitivity._plan import _neighbour_steps, _plan_table, _sorted_keys
from dpsense.sensitivity._request import _Arguments, _Request, _validate

__all__ = ["empirical_sensitivity", "empirical_sensitivity_profile"]

Scope = Literal["local", "global"]
Model = Literal["domain", "population"]

_PROGRESS_THRESHOLD: Final = 200_000
"""With progress=None a bar is shown (on a terminal) when f runs on more datasets than this."""
_PAIR_FACTOR: Final = 20
"""The number of (dataset, neighbour) comparisons may be this multiple of max_evaluations."""


# -------------------------------------------------------------------------- the core


def _format_count(v: float) -> str:
    return f"{int(v):,}" if v < 2**53 else f"about {v:.3g}"


def _check_work(where: str, limit: int, n_eval: float, n_pairs: float) -> None:
    """Refuse, before any work starts, more evaluations or comparisons than allowed."""
    if n_eval > limit:
        raise EvaluationLimitError(
            Message(
                f"{where} would evaluate f on {_format_count(n_eval)} distinct datasets, more "
                "than ",
                _limit(f"{limit:,}"),
                ". Use a smaller universe, hamming or distance, or raise the limit, e.g. ",
                _limit(_suggest(n_eval)),
                ".",
            ),
            n_eval,
        )
    if n_pairs > _PAIR_FACTOR * limit:
        raise EvaluationLimitError(
            Message(
                f"{where} would compare {_format_count(n_pairs)} (dataset, neighbour) pairs, "
                f"more than {_PAIR_FACTOR} x ",
                Name("max_evaluations"),
                f" = {_PAIR_FACTOR * limit:,}. Use a smaller universe, hamming or distance, "
                "or raise the limit, e.g. ",
                _limit(_suggest(n_pairs / _PAIR_FACTOR)),
                ".",
            ),
            n_pairs / _PAIR_FACTOR,
        )


def _explore(req: _Request, where: str) -> _Result:
    neighbours = _neighbour_steps(req)
    plan = _plan_table(req)
    _check_work(where, req.max_evaluations, plan.n_eval, plan.n_base * neighbours.count)
    table = plan.build(req)
    deltas = neighbours.changes()
    keys = _sorted_keys(table, plan.colmax)
    progress = ProgressBar(show_progress(req.progress, large=plan.n_eval > _PROGRESS_THRESHOLD))
    fvals = _evaluate_table(req, table, progress, where)
    return _local_sensitivities(req, table, keys, fvals[keys.order], deltas, progress)


def _limit(value: str) -> Assign:
    """``max_evaluations=1_000`` (``--max-evaluations 1000``: an option takes no separators)."""
    return Assign("max_evaluations", value, cli=value.replace("_", "").replace(",", ""))


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
    # the parameters and ``where``, and only they, are the local names here: one field each
    args = _Arguments(**locals())
    result = _explore(_validate(args), where)
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
    args = _Arguments(
        where=where,
        f=f,
        data=data,
        universe=universe,
        hamming=hamming,
        neighbours=neighbours,
        model=model,
        distance=k_max,
        min_size=min_size,
        max_evaluations=max_evaluations,
        progress=progress,
        vectorized=vectorized,
    )
    return _explore(_validate(args), where).profile(k_max)
