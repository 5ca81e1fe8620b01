"""Every release method on hard neighbouring pairs: catastrophe test and histogram audit.

SPEC §6. Pairs (checked by brute force below): for the median, a dataset whose local
sensitivity is 0 next to one whose local sensitivity is not — exactly where noise scaled to
the raw local sensitivity leaks. A refusal (propose-test-release) is mapped to a sentinel
output so the audit sees it as its own outcome. Seeded with fixed integers (never ``hash()``,
which changes with PYTHONHASHSEED); each sampler calls the real ``ds.release`` code path.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import dpsense as ds
from dpsense.audit import catastrophe_test, histogram_audit
from dpsense.noise.rng import SeededRandom
from dpsense.release import release

# statistical audits of tens of seconds each: `make test-all` and CI run them
pytestmark = pytest.mark.slow

REFUSED = -1e9
N_AUDIT = 30_000
RELATIONS = ("add-remove", "substitute")

MEDIAN = ds.Median(0.0, 1.0)
MEAN = ds.Mean(0.0, 1.0)
PAIRS = {
    # (x, x') with LS(x) = 0 < LS(x'), one step apart under the relation
    ("median", "substitute"): ([0, 0.5, 0.5, 0.5, 1], [0, 0, 0.5, 0.5, 1]),
    ("median", "add-remove"): ([0, 0.5, 0.5, 1], [0, 0.5, 1]),
    ("mean", "substitute"): ([0, 1, 1, 1], [1, 1, 1, 1]),
    ("mean", "add-remove"): ([0, 1, 1, 1], [0, 1, 1]),
}

CASES = [
    # (statistic, method, options, delta)
    ("median", "global", {}, 0.0),
    ("median", "smooth", {"noise": "student-t"}, 0.0),
    ("median", "smooth", {"noise": "cauchy"}, 0.0),
    ("median", "smooth", {"noise": "laplace"}, 1e-6),
    ("median", "smooth", {"noise": "lln"}, 1e-6),
    ("median", "ptr", {"bound": 0.25}, 1e-6),
    ("median", "exponential", {}, 0.0),
    ("median", "adaptive", {}, 0.0),
    ("median", "adaptive", {"test_fraction": 0.5}, 0.0),
    ("mean", "global", {}, 0.0),
    ("mean", "smooth", {"noise": "student-t"}, 0.0),
    ("mean", "ksw", {}, 0.0),
    ("mean", "bounded-ls", {}, 1e-6),
]
# Adaptive with test_fraction 0.5 is audited where its private test is a coin flip (below):
# on the pairs above it takes the exponential branch in 300 of 300 seeded releases, so the
# matrix would repeat the exponential case at twice the cost. (CASES keeps it: the seeds of
# the other cases come from their index in CASES.)
AUDITED = [c for c in CASES if c != ("median", "adaptive", {"test_fraction": 0.5}, 0.0)]


def _stat(name: str) -> ds.Statistic:
    return MEDIAN if name == "median" else MEAN


def _sampler(
    data: list[float],
    name: str,
    method: str,
    options: dict,
    delta: float,
    relation: str,
    seed: int,
) -> Callable[[int], np.ndarray]:
    rng = SeededRandom(seed)
    x = np.array(data, dtype=float)

    def sample(n: int) -> np.ndarray:
        out = np.empty(n)
        for i in range(n):
            r = release(
                x,
                _stat(name),
                epsilon=1.0,
                delta=delta,
                method=method,
                neighbours=relation,
                rng=rng,
                **options,
            )
            out[i] = REFUSED if r.refused else r.value
        return out

    return sample


def test_the_pairs_are_neighbours_with_local_sensitivity_zero_and_positive() -> None:
    for (name, relation), (x, y) in PAIRS.items():
        stat = _stat(name)
        universe = sorted({*x, *y, 0.0, 1.0})
        # y is within distance 1 of x: brute force finds f(y) among the neighbours of x
        assert ds.empirical_sensitivity(stat, x, universe, neighbours=relation) >= abs(
            stat(x) - stat(y)
        )
        if name == "median":
            assert stat.local_sensitivity(x, relation) == 0.0
            assert stat.local_sensitivity(y, relation) > 0.0


@pytest.mark.parametrize("relation", ["add-remove", "substitute"])
def test_laplace_scaled_to_the_raw_local_sensitivity_fails_the_catastrophe_test(
    relation: str,
) -> None:
    x, y = (np.array(v, dtype=float) for v in PAIRS[("median", relation)])
    rng = np.random.default_rng(0)

    def raw_local(data: np.ndarray) -> Callable[[int], np.ndarray]:
        ls = MEDIAN.local_sensitivity(data, relation)
        return lambda n: MEDIAN(data) + (rng.laplace(0.0, ls, n) if ls > 0 else np.zeros(n))

    result = catastrophe_test(
        raw_local(x),
        raw_local(y),
        event=lambda out: np.asarray(out) == 0.5,
        n=100,
        epsilon=1.0,
    )
    assert not result.passed


@pytest.mark.parametrize("relation", ["add-remove", "substitute"])
@pytest.mark.parametrize(("name", "method", "options", "delta"), AUDITED)
def test_every_method_passes_catastrophe_and_histogram_audits(
    name: str, method: str, options: dict, delta: float, relation: str
) -> None:
    x, y = PAIRS[(name, relation)]
    # a fixed integer per case: hash() of strings changes with PYTHONHASHSEED
    seed = 7_000 + 20 * CASES.index((name, method, options, delta)) + RELATIONS.index(relation)
    sx = _sampler(x, name, method, options, delta, relation, seed)
    sy = _sampler(y, name, method, options, delta, relation, seed + 1)
    exact_value = _stat(name)(np.array(x, dtype=float))
    cat = catastrophe_test(
        sx, sy, event=lambda out: np.asarray(out) == exact_value, n=2_000, epsilon=1.0
    )
    assert cat.passed, str(cat)
    audit = histogram_audit(sx, sy, epsilon=1.0, delta=delta, n=N_AUDIT)
    assert audit.passed, str(audit)


@pytest.mark.parametrize("relation", ["add-remove", "substitute"])
def test_adaptive_passes_the_audit_where_its_private_test_is_a_coin_flip(relation: str) -> None:
    # a tie block whose distance to instability sits at the test threshold T (a public
    # function of epsilon and test_fraction, read from a receipt: 50 for epsilon = 1,
    # test_fraction = 0.5), so both branches are taken often (under substitute the window
    # can slide, so the block must be about twice as long)
    probe = release(
        np.array([0.0, 0.5, 1.0]),
        MEDIAN,
        epsilon=1.0,
        method="adaptive",
        neighbours=relation,
        rng=SeededRandom(0),
        test_fraction=0.5,
    )
    threshold = int(probe.parameters["test_threshold"])
    block = threshold if relation == "add-remove" else 2 * threshold + 1
    x = [0.0] * 30 + [0.5] * block + [1.0] * 30
    y = [0.0] * 29 + [0.5] * (block + 1) + [1.0] * 30 if relation == "substitute" else [0.5, *x]
    options = {"test_fraction": 0.5}
    sx = _sampler(x, "median", "adaptive", options, 0.0, relation, 71)
    sy = _sampler(y, "median", "adaptive", options, 0.0, relation, 72)
    branches = {
        release(
            np.array(x),
            MEDIAN,
            epsilon=1.0,
            method="adaptive",
            neighbours=relation,
            rng=SeededRandom(s),
            **options,
        ).parameters["branch"]
        for s in range(40)
    }
    assert branches == {"smooth", "exponential"}
    audit = histogram_audit(sx, sy, epsilon=1.0, n=N_AUDIT)
    assert audit.passed, str(audit)


# ------------------------------------------- the mean under add-remove: n is not public


def _mean_sampler(data: list[float], method: str, epsilon: float, seed: int) -> Callable:
    rng = SeededRandom(seed)
    x = np.array(data, dtype=float)
    delta = 1e-6 if method == "bounded-ls" else 0.0

    def sample(n: int) -> np.ndarray:
        return np.array(
            [
                release(x, MEAN, epsilon=epsilon, delta=delta, method=method, rng=rng).value
                for _ in range(n)
            ]
        )

    return sample


def test_a_mean_that_divides_by_the_true_count_fails_this_audit() -> None:
    """Power check of the pair below, on a reference in numpy: a noisy sum over the TRUE
    count (sum noise Lap(w/epsilon), i.e. half the budget) on x = (1) and x' = (1, 1) lands
    inside (0, 1) about twice as often on x' as on x: ln 2, seven times epsilon."""
    rng = np.random.default_rng(5_150)
    eps = 0.1

    def true_count(n_records: int) -> Callable[[int], np.ndarray]:
        # centred sum n/2 plus Lap(w / eps), over the true n, plus the midpoint
        return lambda k: np.clip(
            0.5 + (0.5 * n_records + rng.laplace(0.0, 1.0 / eps, k)) / n_records, 0.0, 1.0
        )

    audit = histogram_audit(true_count(1), true_count(2), epsilon=eps, n=8_000, bins=10)
    assert not audit.passed
    assert audit.epsilon_lower_bound > 2 * eps


@pytest.mark.parametrize(
    ("method", "seed"),
    [("global", 811), ("ksw", 821), pytest.param("bounded-ls", 831, marks=pytest.mark.slow)],
)
def test_add_remove_mean_keeps_n_private_when_n_is_tiny(method: str, seed: int) -> None:
    """Neighbours (1) and (1, 1) under add-remove at epsilon = 0.1: their means are equal,
    but a release that treats n as public (a noisy sum over the true count, or the whole
    budget on the sum) has noise of scale w/(n epsilon) and leaks n by ln 2 per release;
    the budget split between sum and count (or the KSW / bounded-ls constructions) must
    not."""
    eps = 0.1
    audit = histogram_audit(
        _mean_sampler([1.0], method, eps, seed),
        _mean_sampler([1.0, 1.0], method, eps, seed + 1),
        epsilon=eps,
        delta=1e-6 if method == "bounded-ls" else 0.0,
        n=8_000,
        bins=10,
    )
    assert audit.passed, str(audit)
