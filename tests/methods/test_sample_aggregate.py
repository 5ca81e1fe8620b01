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
    releases, also with on_error='raise'; NaN is a failed block."""
    records = np.array([*np.arange(59.0), np.inf])  # f sees the records as they are

    def run(func: Callable[[np.ndarray], float], on_error: str = "raise") -> float:
        out = ds.sample_and_aggregate(
            records, func, blocks=4, lower=0.0, upper=1.0, epsilon=1.0,
            aggregator=aggregator, rng=SeededRandom(3), on_error=on_error,
        )  # fmt: skip
        return float(out.value)

    assert run(lambda block: np.inf) == run(lambda block: 1.0)
    assert run(lambda block: -np.inf) == run(lambda block: 0.0)
    assert run(lambda block: float(np.max(block))) == run(
        lambda block: min(float(np.max(block)), 1.0)
    )
    with pytest.raises(ds.InputError, match="NaN"):
        run(lambda block: np.nan)
    assert run(lambda block: np.nan, on_error="midpoint") == run(lambda block: 0.5)
