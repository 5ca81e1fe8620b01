"""sample_and_aggregate's handling of f's answers (its privacy audits are in
test_sample_aggregate_audit.py, marked slow)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import dpsense as ds
from dpsense.noise.rng import SeededRandom


@pytest.mark.parametrize("aggregator", ["mean", "median"])
def test_infinite_block_answers_are_clipped_and_nan_is_a_failure(aggregator: str) -> None:
    """f answering inf (or -inf) releases what f answering the upper (lower) bound
    releases; NaN, or an exception, is a failed block, which gives the midpoint."""
    records = np.array([*np.arange(59.0), np.inf])  # f sees the records as they are

    def run(func: Callable[[np.ndarray], float]) -> float:
        out = ds.sample_and_aggregate(
            records, func, blocks=4, lower=0.0, upper=1.0, epsilon=1.0,
            aggregator=aggregator, rng=SeededRandom(3),
        )  # fmt: skip
        return float(out.value)

    assert run(lambda block: np.inf) == run(lambda block: 1.0)
    assert run(lambda block: -np.inf) == run(lambda block: 0.0)
    assert run(lambda block: float(np.max(block))) == run(
        lambda block: min(float(np.max(block)), 1.0)
    )
    assert run(lambda block: np.nan) == run(lambda block: 0.5)
    assert run(lambda block: 1 / 0) == run(lambda block: 0.5)


@pytest.mark.parametrize("door", ["ds", "accountant"])
def test_on_error_raise_is_withdrawn_before_any_charge(door: str) -> None:
    """The former debugging mode is refused on every door, before a charge, whatever f
    does: one record could decide whether a release raised (docs/frameworks.md, 4)."""
    accountant = ds.Accountant(epsilon=2.0)
    call = ds.sample_and_aggregate if door == "ds" else accountant.sample_and_aggregate
    with pytest.raises(ds.InputError, match="withdrawn") as info:
        call([1.0, 2.0, 3.0], np.mean, blocks=2, lower=0, upper=5, epsilon=1.0,
             on_error="raise")  # fmt: skip
    assert "midpoint" in str(info.value)
    assert accountant.spent == (0.0, 0.0)
