"""Tests of the brute-force sensitivity explorer against hand values and a naive reference."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Sequence
from itertools import combinations, combinations_with_replacement
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.conftest import FakeTerminal

import dpsense as ds
from dpsense.errors import InputError
from dpsense.sensitivity import empirical_sensitivity, empirical_sensitivity_profile, explorer

POP = [1, 2, 3, 10, 11]


def vec_median(X: np.ndarray) -> Any:
    return np.median(X, axis=-1)


def vec_mean(X: np.ndarray) -> Any:
    return np.mean(X, axis=-1)


class BatchSum:
    """Minimal stand-in for a dpsense statistic (defined on the empty dataset)."""

    def __call__(self, x: np.ndarray) -> float:
        return float(np.sum(x))

    def evaluate_batch(self, X: np.ndarray) -> np.ndarray:
        return np.asarray(X.sum(axis=1), dtype=np.float64)


class BatchCount:
    def __call__(self, x: np.ndarray) -> float:
        return float(len(x))

    def evaluate_batch(self, X: np.ndarray) -> np.ndarray:
        return np.full(X.shape[0], float(X.shape[1]))


FUNCS: dict[str, Callable[..., Any]] = {
    "mean": np.mean,
    "median": np.median,
    "sum": np.sum,
    "var": np.var,
    "std": np.std,
    "max": np.max,
    "len": len,
    "median_vec": vec_median,
    "mean_vec": vec_mean,
    "batch_sum": BatchSum(),
    "batch_count": BatchCount(),
}


# ------------------------------------------------------------------ naive reference
# Positions and per-candidate Python calls, straight from the definitions.


def _ref_f(f: Callable[..., Any], values: Iterable[float]) -> float:
    arr = np.array(sorted(values), dtype=np.float64)
    if hasattr(f, "evaluate_batch"):
        return float(f.evaluate_batch(arr[None, :])[0])
    return float(f(arr))


def _ref_within(
    ds: tuple[Any, ...],
    r: int,
    relation: str,
    model: str,
    universe: Sequence[float],
    min_size: int,
) -> set[tuple[Any, ...]]:
    """Datasets at distance 1..r from ``ds``.

    Domain model: datasets are sorted tuples of values. Population model: sorted tuples
    of positions in the population list ``universe``.
    """
    out: set[tuple[Any, ...]] = set()
    for a in range(r + 1):  # records removed
        for b in range(r + 1):  # records added
            ok = 1 <= a + b <= r if relation == "add-remove" else a == b and 1 <= a <= r
            if not ok:
                continue
            if model == "domain":
                for removed in combinations(range(len(ds)), a):
                    rest = [v for i, v in enumerate(ds) if i not in removed]
                    for added in combinations_with_replacement(sorted(set(universe)), b):
                        y = tuple(sorted(rest + list(added)))
                        if len(y) >= min_size:
                            out.add(y)
            else:
                outside = [i for i in range(len(universe)) if i not in ds]
                for removed_pos in combinations(ds, a):
                    for added_pos in combinations(outside, b):
                        y = tuple(sorted((set(ds) - set(removed_pos)) | set(added_pos)))
                        if len(y) >= min_size:
                            out.add(y)
    return out


def reference(
    f: Callable[..., Any],
    data: Sequence[float],
    universe: Sequence[float],
    *,
    hamming: int = 1,
    neighbours: str = "add-remove",
    scope: str = "local",
    model: str = "domain",
    distance: int = 0,
    min_size: int | None = None,
) -> float:
    if min_size is None:
        min_size = 0 if hasattr(f, "evaluate_batch") else 1
    n = len(data)

    def values(ds: tuple[Any, ...]) -> list[float]:
        return [universe[i] for i in ds] if model == "population" else list(ds)

    def local(ds: tuple[Any, ...]) -> float:
        fx = _ref_f(f, values(ds))
        nbs = _ref_within(ds, hamming, neighbours, model, universe, min_size)
        return max((abs(fx - _ref_f(f, values(y))) for y in nbs), default=0.0)

    if model == "population":
        free = list(range(len(universe)))
        x_pos = []
        for v in data:
            i = next(i for i in free if universe[i] == v)
            free.remove(i)
            x_pos.append(i)
        x: tuple[Any, ...] = tuple(sorted(x_pos))
    else:
        x = tuple(sorted(data))

    if scope == "global":
        if model == "domain":
            bases: Iterable[tuple[Any, ...]] = combinations_with_replacement(
                sorted(set(universe)), n
            )
        else:
            bases = combinations(range(len(universe)), n)
    else:
        bases = {x} | _ref_within(x, distance, neighbours, model, universe, min_size)
    return max((local(b) for b in bases), default=0.0)


# ----------------------------------------------------------------- seed 004's example
# Population {1, 2, 3, 10, 11}, datasets of 3 records, h = 1, the median.
# add-remove, x = {1,2,3} (median 2): removals give 2.5, 2, 1.5; adding 10 or 11 gives
#   2.5, so LS = 0.5.
# add-remove, x = {1,10,11} (median 10): removing 1 gives 10.5, 10 gives 6, 11 gives 5.5;
#   adding 2 gives 6, adding 3 gives 6.5, so LS = 4.5.
# add-remove, global: a 2-record neighbour has median (a+b)/2 and a 4-record one the mean
#   of its middle two; the largest change is 4.5 ({1,2,11} -> {2,11}; {1,10,11} -> {1,10}).
# substitute, x = {1,2,3}: swapping 1 or 2 for 10/11 gives median 3, swapping 3 gives 2,
#   so LS = 1.
# substitute, global: a 3-record median is between 2 and 10 (distinct values), and
#   {1,2,10} -> {2,10,11} moves it from 2 to 10, so GS = 8.


@pytest.mark.parametrize("f", [vec_median, np.median], ids=["vectorised", "row-by-row"])
def test_seed_004_add_remove(f: Callable[..., Any]) -> None:
    kw: dict[str, Any] = {"model": "population"}
    assert empirical_sensitivity(f, [1, 2, 3], POP, **kw) == 0.5
    assert empirical_sensitivity(f, [1, 10, 11], POP, **kw) == 4.5
    assert empirical_sensitivity(f, [1, 2, 3], POP, scope="global", **kw) == 4.5
    assert empirical_sensitivity(f, [1, 10, 11], POP, scope="global", **kw) == 4.5


@pytest.mark.parametrize("f", [vec_median, np.median], ids=["vectorised", "row-by-row"])
def test_seed_004_substitute(f: Callable[..., Any]) -> None:
    kw: dict[str, Any] = {"model": "population", "neighbours": "substitute"}
    assert empirical_sensitivity(f, [1, 2, 3], POP, **kw) == 1.0
    assert empirical_sensitivity(f, [1, 2, 3], POP, scope="global", **kw) == 8.0


def test_seed_004_matches_reference() -> None:
    for neighbours in ("add-remove", "substitute"):
        for scope in ("local", "global"):
            for data in ([1, 2, 3], [1, 10, 11], [2, 3, 10]):
                kw: dict[str, Any] = {"neighbours": neighbours, "scope": scope}
                got = empirical_sensitivity(np.median, data, POP, model="population", **kw)
                want = reference(np.median, data, POP, model="population", **kw)
                assert got == pytest.approx(want)


def test_aliases_of_seed_004() -> None:
    assert (
        empirical_sensitivity(vec_median, [1, 2, 3], POP, model="population", neighbours="bounded")
        == 1.0
    )


# --------------------------------------------------------------------- multisets


def test_duplicates_are_multisets_domain() -> None:
    # remove a 1 -> 1; add a 1 -> 1; add a 2 -> 2.
    assert empirical_sensitivity(np.sum, [1, 1, 1], [1, 2]) == 2.0
    assert empirical_sensitivity(np.sum, [1, 1, 1], [1, 2], hamming=2) == 4.0


def test_duplicates_are_multisets_population() -> None:
    pop = [1, 1, 1, 2]
    assert empirical_sensitivity(np.sum, [1, 1], pop, model="population") == 2.0
    # Only one 2 exists: adding two records adds at most 1 + 2.
    assert empirical_sensitivity(np.sum, [1, 1], pop, model="population", hamming=2) == 3.0
    assert empirical_sensitivity(np.sum, [1, 1, 1, 2], pop, model="population") == 2.0


def test_each_distinct_multiset_is_evaluated_once() -> None:
    calls: list[int] = []

    def f(x: np.ndarray) -> float:
        calls.append(len(x))
        return float(np.median(x))

    # {1,2,3}, three removals, two additions: 6 distinct multisets.
    empirical_sensitivity(f, [1, 2, 3], POP, model="population", vectorized=False)
    assert len(calls) == 6
    calls.clear()
    # Population with ties: 8 records from 12, global, h = 2.
    pop = [18, 18, 22, 25, 25, 25, 31, 40, 40, 52, 60, 60]
    data = [18, 22, 25, 25, 31, 40, 52, 60]
    got = empirical_sensitivity(
        f, data, pop, model="population", scope="global", hamming=2, vectorized=False
    )
    sizes = np.bincount(calls)
    assert sizes.sum() == len(calls)
    # number of sub-multisets of each size 6..10 of the population
    caps = np.unique(pop, return_counts=True)[1]
    poly = np.array([1])
    for c in caps:
        poly = np.convolve(poly, np.ones(c + 1, dtype=int))
    assert sizes[6:11].tolist() == poly[6:11].tolist()
    assert got == reference(np.median, data, pop, model="population", scope="global", hamming=2)


def test_data_outside_domain_universe() -> None:
    # Removing the 100 (outside the universe) is allowed; it is never added back.
    got = empirical_sensitivity(np.max, [1, 100], [1, 2])
    assert got == 99.0
    assert got == reference(np.max, [1, 100], [1, 2])


# ---------------------------------------------------------------- distance k, profile


def test_profile_matches_distance() -> None:
    prof = empirical_sensitivity_profile(
        vec_median, [1, 2, 3], POP, model="population", max_distance=3
    )
    for k in range(4):
        assert prof[k] == empirical_sensitivity(
            vec_median, [1, 2, 3], POP, model="population", distance=k
        )
        assert prof[k] == pytest.approx(
            reference(np.median, [1, 2, 3], POP, model="population", distance=k)
        )
    assert np.all(np.diff(prof) >= 0)
    assert prof.tolist() == [0.5, 1.0, 5.0, 5.0]


def test_statistic_object_defaults_to_min_size_zero() -> None:
    # The empty dataset is a neighbour of {5}: sum drops by 5; adding 9 raises it by 9.
    assert empirical_sensitivity(BatchSum(), [5], [5, 9]) == 9.0
    assert empirical_sensitivity(BatchSum(), [], [5, 9]) == 9.0
    assert empirical_sensitivity(BatchCount(), [], [5, 9], hamming=2) == 2.0


def test_min_size_excludes_small_neighbours() -> None:
    assert empirical_sensitivity(np.max, [1, 5], [1, 5]) == 4.0
    assert empirical_sensitivity(np.max, [1, 5], [1, 5], min_size=2) == 0.0


def test_vectorised_f_is_called_on_batches() -> None:
    shapes: list[tuple[int, ...]] = []

    def f(X: np.ndarray) -> Any:
        shapes.append(X.shape)
        return np.mean(X, axis=-1)

    pop = list(range(12))
    got = empirical_sensitivity(f, pop[:6], pop, model="population", scope="global")
    assert got == pytest.approx(
        reference(vec_mean, pop[:6], pop, model="population", scope="global")
    )
    assert len(shapes) < 20  # a few detection calls and one batch per size
    assert max(s[0] for s in shapes if len(s) == 2) > 100


def test_vectorized_flags() -> None:
    assert empirical_sensitivity(vec_median, [1, 2, 3], POP, vectorized=True) == 0.5
    assert empirical_sensitivity(np.median, [1, 2, 3], POP, vectorized=False) == 0.5


def test_progress_bar(capsys: pytest.CaptureFixture[str], rich_tasks: list[str]) -> None:
    got = empirical_sensitivity(vec_median, [1, 2, 3], POP, model="population", progress=True)
    assert got == 0.5
    assert rich_tasks == ["Evaluating f", "Comparing neighbours"]  # forced: rich draws it
    assert capsys.readouterr().out == ""


@pytest.fixture
def small_jobs_are_large(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every job is large enough for a progress bar by default."""
    monkeypatch.setattr(explorer, "_PROGRESS_THRESHOLD", 0)


@pytest.mark.usefixtures("small_jobs_are_large")
def test_no_progress_bar_off_a_terminal(
    capsys: pytest.CaptureFixture[str], rich_tasks: list[str]
) -> None:
    assert not sys.stderr.isatty()
    got = empirical_sensitivity(vec_median, [1, 2, 3], POP, model="population")
    assert got == 0.5
    assert rich_tasks == []
    assert capsys.readouterr() == ("", "")


@pytest.mark.usefixtures("small_jobs_are_large")
def test_progress_bar_on_a_terminal(
    terminal: Callable[[], FakeTerminal], rich_tasks: list[str]
) -> None:
    stderr = terminal()
    got = empirical_sensitivity(vec_median, [1, 2, 3], POP, model="population")
    assert got == 0.5
    assert rich_tasks == ["Evaluating f", "Comparing neighbours"]
    assert "Evaluating f" in stderr.getvalue()
    assert "Comparing neighbours" in stderr.getvalue()


def test_progress_bar_only_for_large_jobs_or_when_asked(
    terminal: Callable[[], FakeTerminal], rich_tasks: list[str]
) -> None:
    stderr = terminal()
    empirical_sensitivity(vec_median, [1, 2, 3], POP, model="population")  # small job
    empirical_sensitivity(vec_median, [1, 2, 3], POP, model="population", progress=False)
    assert rich_tasks == []
    assert stderr.getvalue() == ""


# ----------------------------------------------------------------- property test

values_st = st.integers(-3, 9).map(float)


@st.composite
def cases(draw: st.DrawFn) -> dict[str, Any]:
    model = draw(st.sampled_from(["domain", "population"]))
    scope = draw(st.sampled_from(["local", "global"]))
    if model == "domain":
        universe = draw(st.lists(values_st, min_size=1, max_size=4))
        data = draw(st.lists(st.integers(-3, 12).map(float), min_size=1, max_size=4))
    else:
        universe = draw(st.lists(st.integers(-2, 4).map(float), min_size=1, max_size=6))
        keep = draw(st.lists(st.booleans(), min_size=len(universe), max_size=len(universe)))
        if not any(keep):
            keep[0] = True
        data = [u for u, k in zip(universe, keep, strict=True) if k]
    fname = draw(st.sampled_from(sorted(FUNCS)))
    min_size = draw(st.sampled_from([None, None, 1, len(data)]))
    return {
        "f": FUNCS[fname],
        "data": data,
        "universe": universe,
        "hamming": draw(st.integers(1, 2)),
        "neighbours": draw(st.sampled_from(["add-remove", "substitute"])),
        "scope": scope,
        "model": model,
        "distance": draw(st.integers(0, 1)) if scope == "local" else 0,
        "min_size": min_size,
    }


@settings(max_examples=300, deadline=None, derandomize=True)
@given(cases())
def test_matches_reference(case: dict[str, Any]) -> None:
    f, data, universe = case.pop("f"), case.pop("data"), case.pop("universe")
    got = empirical_sensitivity(f, data, universe, **case)
    want = reference(f, data, universe, **case)
    assert got == pytest.approx(want, rel=1e-9, abs=1e-9)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(cases(), st.integers(0, 2))
def test_profile_matches_reference(case: dict[str, Any], k_max: int) -> None:
    f, data, universe = case.pop("f"), case.pop("data"), case.pop("universe")
    case.pop("scope")
    case.pop("distance")
    prof = empirical_sensitivity_profile(f, data, universe, max_distance=k_max, **case)
    for k in range(k_max + 1):
        want = reference(f, data, universe, distance=k, **case)
        assert prof[k] == pytest.approx(want, rel=1e-9, abs=1e-9)


# ------------------------------------------------------------------------- errors


def test_hamming_message() -> None:
    with pytest.raises(InputError) as info:
        empirical_sensitivity(np.median, [1, 2, 3], POP, hamming=0)
    assert str(info.value) == (
        "The 'hamming' parameter of empirical_sensitivity must be an int >= 1. Got 0 instead."
    )


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"neighbours": "sideways"}, "neighbours"),
        ({"scope": "everywhere"}, "scope"),
        ({"model": "world"}, "model"),
        ({"distance": -1}, "distance"),
        ({"distance": 1, "scope": "global"}, "distance"),
        ({"min_size": -1}, "min_size"),
        ({"min_size": 4}, "min_size"),
        ({"max_evaluations": 0}, "max_evaluations"),
        ({"progress": "yes"}, "progress"),
        ({"vectorized": 1}, "vectorized"),
        ({"hamming": 1.5}, "hamming"),
    ],
)
def test_bad_arguments(kwargs: dict[str, Any], name: str) -> None:
    with pytest.raises(InputError, match=f"'{name}' parameter of empirical_sensitivity"):
        empirical_sensitivity(np.median, [1, 2, 3], POP, **kwargs)


def test_bad_f() -> None:
    with pytest.raises(InputError, match="'f' parameter"):
        empirical_sensitivity(42, [1, 2, 3], POP)  # type: ignore[arg-type]


def test_data_not_in_population() -> None:
    with pytest.raises(InputError, match="2 of its 3 records are not in") as info:
        empirical_sensitivity(np.median, [1, 987.25, 987.25], POP, model="population")
    assert "987" not in str(info.value)
    # multiplicity counts: the population has one 1
    with pytest.raises(InputError, match="1 of its 2 records"):
        empirical_sensitivity(np.median, [1, 1], POP, model="population")


def test_bad_data() -> None:
    with pytest.raises(InputError, match="missing values"):
        empirical_sensitivity(np.median, [1, float("nan")], POP)
    # the universe is a public set of values, not data: it must be finite
    with pytest.raises(InputError, match="'universe' of empirical_sensitivity contains infinite"):
        empirical_sensitivity(np.median, [1, 2], [1, float("inf")])
    with pytest.raises(InputError, match="empty"):
        empirical_sensitivity(np.median, [], POP)
    with pytest.raises(InputError, match="empty"):
        empirical_sensitivity(np.median, [1], [])


def test_infinite_data_are_clipped_by_a_statistic() -> None:
    """The data (not the universe) may hold infinities: a dpsense statistic clips them, so
    the brute force equals the one on the clipped data; a plain function that answers inf
    is reported as such."""
    median = ds.Median(1, 11)
    for neighbours in ("add-remove", "substitute"):
        got = empirical_sensitivity(median, [2, np.inf, -np.inf], POP, neighbours=neighbours)
        assert got == empirical_sensitivity(median, [2, 11, 1], POP, neighbours=neighbours)
    with pytest.raises(InputError, match="NaN or infinity"):
        empirical_sensitivity(np.max, [2, np.inf], POP)


def test_max_evaluations() -> None:
    # global substitute over {1..5}, size 3: C(7, 3) = 35 multisets
    kw: dict[str, Any] = {"scope": "global", "neighbours": "substitute"}
    assert empirical_sensitivity(np.max, [1, 2, 3], [1, 2, 3, 4, 5], max_evaluations=35, **kw)
    with pytest.raises(InputError, match=r"on 35 distinct datasets.*max_evaluations=34") as info:
        empirical_sensitivity(np.max, [1, 2, 3], [1, 2, 3, 4, 5], max_evaluations=34, **kw)
    assert "raise the limit" in str(info.value)
    with pytest.raises(InputError, match="max_evaluations"):
        empirical_sensitivity(np.max, list(range(20)), list(range(60)), scope="global")


def test_f_returning_nan() -> None:
    def var1(x: np.ndarray) -> float:
        return float(np.var(x, ddof=1))

    with pytest.raises(InputError, match=r"NaN or infinity on a dataset of size 1.*min_size=2"):
        empirical_sensitivity(var1, [1, 2], [1, 2, 3])
    assert empirical_sensitivity(var1, [1, 2], [1, 2, 3], min_size=2) == pytest.approx(
        reference(var1, [1, 2], [1, 2, 3], min_size=2)
    )


def test_f_with_wrong_output() -> None:
    with pytest.raises(InputError, match="one number"):
        empirical_sensitivity(lambda x: np.array([1.0, 2.0]), [1, 2], [1, 2, 3])
    with pytest.raises(InputError, match="vectorized=False"):
        empirical_sensitivity(np.median, [1, 2], [1, 2, 3], vectorized=True)


def test_errors_raised_by_f_propagate() -> None:
    def boom(x: np.ndarray) -> float:
        raise KeyError("boom")

    with pytest.raises(KeyError):
        empirical_sensitivity(boom, [1, 2], [1, 2, 3])


# ----------------------------------------------------------- scale and closed forms


@pytest.mark.parametrize(
    "data", [[0, 0, 5], [1, 2, 3, 4], [5, 5, 5, 0, 2], [3, 3], [0, 5, 1, 1, 4, 2]]
)
def test_mean_add_remove_matches_closed_form(data: list[int]) -> None:
    # SPEC §2: LS = max(max(u - mu, mu - l) / (n + 1), max_i |x_i - mu| / (n - 1)).
    lo, hi = 0, 5
    x = np.array(data, dtype=float)
    n, mu = len(x), float(np.mean(x))
    want = max(max(hi - mu, mu - lo) / (n + 1), float(np.max(np.abs(x - mu))) / (n - 1))
    got = empirical_sensitivity(vec_mean, data, list(range(lo, hi + 1)))
    assert got == pytest.approx(want, rel=1e-12)


def test_global_with_many_records_and_few_values() -> None:
    # Mean of 30 records in {0, 1}: removing the only 1 (or 0) moves the mean by 1/30.
    got = empirical_sensitivity(np.mean, [0, 1] * 15, [0, 1], scope="global")
    assert got == pytest.approx(1 / 30)


def test_many_values_use_hashed_keys() -> None:
    # 70 distinct values: mixed-radix keys would need more than 64 bits.
    universe = list(range(70))
    data = [0, 5, 69, 69]
    for f in (np.max, np.median, np.var):
        for neighbours in ("add-remove", "substitute"):
            got = empirical_sensitivity(f, data, universe, neighbours=neighbours)
            assert got == pytest.approx(reference(f, data, universe, neighbours=neighbours))


def test_pair_limit() -> None:
    # Global over 10 values and 10 records with h = 2: about 627 thousand distinct
    # datasets but 20 million (dataset, neighbour) pairs.
    with pytest.raises(InputError, match=r"pairs, more than 20 x max_evaluations"):
        empirical_sensitivity(
            np.mean,
            list(range(10)),
            list(range(10)),
            scope="global",
            hamming=2,
            max_evaluations=700_000,
        )


def test_axis_keyword_is_detected() -> None:
    calls: list[int | None] = []

    def med(x: np.ndarray, axis: int | None = None) -> Any:
        calls.append(axis)
        return np.median(x, axis=axis)

    pop = list(range(12))
    got = empirical_sensitivity(med, pop[:6], pop, model="population", scope="global")
    assert got == reference(np.median, pop[:6], pop, model="population", scope="global")
    assert calls.count(-1) >= 2  # the detection call and the batches
    assert len(calls) < 20
