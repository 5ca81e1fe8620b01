"""The global mean under add-remove: noisy sum over noisy count, one budget.

n is private under add-remove, so the count is released with noise and the two halves of
the budget add up to epsilon. Spies on the two mechanisms of the method record what they
are given and what they return; the released value must be the post-processing
``centre + noisy_sum / max(noisy_count, 1)`` of those two outputs (clipped to the bounds).
A mean that gave the sum the whole budget, or divided by the true count, fails here
(the statistical audit of docs/audit.md sees the same, slowly).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import pytest

import dpsense as ds
from dpsense.mechanisms import additive
from dpsense.noise.rng import SeededRandomnessWarning
from dpsense.statistics._exact import RecordGrid


def _record(monkeypatch: pytest.MonkeyPatch, log: list[tuple[str, Any]]) -> None:
    """Log every mechanism's release output, and the epsilon the count is built for."""
    for cls in (additive.LaplaceMechanism, additive.DiscreteLaplaceMechanism):

        def release(self: Any, value: Any, rng: Any, _original: Any = cls.release) -> Any:
            out = _original(self, value, rng)
            log.append((type(self).__name__, (self, out)))
            return out

        monkeypatch.setattr(cls, "release", release)
    made = additive.DiscreteLaplaceMechanism.for_privacy.__func__  # type: ignore[attr-defined]

    def for_privacy(cls: Any, sensitivity: float, epsilon: float) -> Any:
        log.append(("count epsilon", epsilon))
        return made(cls, sensitivity, epsilon)

    monkeypatch.setattr(additive.DiscreteLaplaceMechanism, "for_privacy", classmethod(for_privacy))


@pytest.mark.parametrize("data", [[], [3.0], [1.0, 2.0, 9.0, 9.0, 4.0] * 20])
@pytest.mark.parametrize("eps", [1 / 3, 1.0])
def test_sum_and_count_share_the_budget_and_the_value_uses_the_noisy_count(
    monkeypatch: pytest.MonkeyPatch, data: list[float], eps: float
) -> None:
    log: list[tuple[str, Any]] = []
    _record(monkeypatch, log)
    with pytest.warns(SeededRandomnessWarning):
        out = ds.release(np.array(data), ds.Mean(0, 10), epsilon=eps, method="global", rng=7)
    ((laplace, sum_out),) = (v for k, v in log if k == "LaplaceMechanism")
    ((_, count_out),) = (v for k, v in log if k == "DiscreteLaplaceMechanism")
    (count_eps,) = (v for k, v in log if k == "count epsilon")
    assert Fraction(laplace.epsilon) + Fraction(count_eps) <= Fraction(eps)
    grid = RecordGrid.for_bounds(0.0, 10.0)
    expected = min(max(grid.centre + sum_out.value / max(count_out.value, 1), 0.0), 10.0)
    assert out.value == expected
