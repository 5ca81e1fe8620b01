"""The neighbour harness for sample and aggregate (``ds.sample_and_aggregate`` and
``Accountant.sample_and_aggregate``, both requests of the one pipeline): once the request
is fixed, whether it releases or raises, what it says and what it charges do not change
when one record is added.

D is a random column of finite values (some outside the declared output range, some
making the function fail on its block), from empty to a few more records than blocks; D'
adds one record. A request that is invalid on its own (epsilon <= 0, delta outside
[0, 1), no blocks, reversed bounds, an unknown aggregator or on_error, Gaussian noise
without delta) must give its own error, with the same words, on both, and charge
nothing."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import dpsense as ds
from dpsense.methods.sample_aggregate import check_sample_and_aggregate

VALID: dict[str, list[Any]] = {
    "epsilon": [0.5, 1.0, 3.0],
    "delta": [0.0, 1e-6],
    "blocks": [1, 3, 5],
    "aggregator": ["mean", "median"],
}
INVALID: list[dict[str, Any]] = [
    {"epsilon": 0.0},
    {"epsilon": -1.0},
    {"delta": 1.0},
    {"blocks": 0},
    {"lower": 5.0, "upper": -5.0},
    {"aggregator": "mode"},
    {"on_error": "ignore"},
    {"on_error": "raise"},  # withdrawn: refused before the data is read, nothing charged
    {"noise": "gaussian", "delta": 0.0},
]


def _func(block: np.ndarray) -> float:
    """A statistic of a block that fails on some blocks (a record of exactly 7.0)."""
    if np.any(block == 7.0):
        raise ValueError("a block this function cannot take")
    return float(np.mean(block)) if block.size else 0.0


def _request(rs: np.random.Generator) -> dict[str, Any]:
    request: dict[str, Any] = {k: v[int(rs.integers(len(v)))] for k, v in VALID.items()}
    request |= {"lower": -5.0, "upper": 5.0}
    if rs.random() < 0.5:
        request.update(INVALID[int(rs.integers(len(INVALID)))])
    return request


def _outcome(values: np.ndarray, request: dict[str, Any], seed: int) -> tuple[Any, ...]:
    """What the accountant's door does, what it charged, and what the uncharged door does
    (each names itself in its messages)."""
    acct = ds.Accountant(epsilon=100.0, delta=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            acct.sample_and_aggregate(values, _func, rng=seed, **request)
            charged = ("released", "")
        except (ds.InputError, ValueError) as exc:
            charged = (type(exc).__name__, str(exc))
        try:
            ds.sample_and_aggregate(values, _func, rng=seed, **request)
            free = ("released", "")
        except (ds.InputError, ValueError) as exc:
            free = (type(exc).__name__, str(exc))
    assert charged[0] == free[0], (charged, free)  # both release, or both raise alike
    return (*charged, *free, float(acct.spent[0]))


@pytest.mark.parametrize("seed", range(80))
def test_sample_and_aggregate_does_not_depend_on_one_record(seed: int) -> None:
    rs = np.random.default_rng(seed)
    request = _request(rs)
    try:
        check_sample_and_aggregate(_func, **request)
        invalid = False
    except ds.InputError:
        invalid = True
    n = int(rs.integers(0, 9))
    values = rs.choice([-9.0, -1.5, 0.0, 2.0, 4.5, 7.0, 12.0], size=n)
    added = float(rs.choice([-9.0, 0.5, 7.0, 30.0]))
    d = _outcome(values, request, seed)
    d_plus = _outcome(np.append(values, added), request, seed)
    assert d == d_plus, (request, values.tolist(), added, d, d_plus)
    if invalid:
        assert d[0] != "released"
        assert d[-1] == 0.0  # nothing charged


def test_a_failing_block_does_not_decide_the_outcome() -> None:
    """One added record on which the function fails (7.0) leaves the outcome a release:
    the block gives the midpoint. (The withdrawn on_error="raise" turned it into an
    error; it is now refused for every data set, above.)"""
    request = {"epsilon": 1.0, "blocks": 3, "lower": -5.0, "upper": 5.0}
    values = np.array([1.0, 2.0, 3.0])
    assert _outcome(values, request, 1)[0] == "released"
    assert _outcome(np.append(values, 7.0), request, 1)[0] == "released"
    request["on_error"] = "raise"
    assert _outcome(values, request, 1)[0] == "InputError"
    assert _outcome(np.append(values, 7.0), request, 1)[0] == "InputError"
