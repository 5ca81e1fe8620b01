"""An error of zero on the lab's log axes: a gap in the method's line and a marker at the
panel's foot, never a line plunging to an arbitrary floor."""

from __future__ import annotations

import numpy as np
import pytest

from dpsense.lab.methods_lab import METHODS_OF, PLOT_FLOOR, MethodsResult

pytest.importorskip("matplotlib")


def test_exact_errors_are_gaps_with_a_marker_at_the_foot() -> None:
    eps = (0.1, 0.3, 1.0, 3.0)
    mae = {
        s: {m: np.array([5.0, 2.0, 0.5, 0.1]) * (i + 1) for i, m in enumerate(ms)}
        for s, ms in METHODS_OF.items()
    }
    mae["median"]["ptr"] = np.array([3.0, 0.0, 0.0, 0.0])
    result = MethodsResult(
        n=1000, epsilons=eps, trials=50, compare_at=1.0, truth={"median": 40.0, "mean": 41.0},
        mae=mae, refusal_rate={"median": np.zeros(4), "mean": np.zeros(4)},
    )  # fmt: skip
    ax = result.figure().axes[0]
    ys = [np.asarray(line.get_ydata(), dtype=float) for line in ax.get_lines()]
    assert not any(np.any(y <= PLOT_FLOOR) for y in ys)  # nothing drawn at the floor
    ptr_line = next(y for y in ys if y.size == 4 and np.isnan(y[1:]).all())
    assert ptr_line[0] == 3.0
    markers = [y for y in ys if y.size == 3]  # the three exact points, at the foot
    assert len(markers) == 1
    assert np.all(markers[0] < 0.1)  # below every drawn error
