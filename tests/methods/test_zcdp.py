"""The zCDP price of a release, computed before it runs, agrees with its receipt.

The accountant charges :func:`dpsense.release.zcdp_cost` before anything is drawn; the
receipt states what the release guaranteed. A release whose receipt is pure (delta 0, no
rho) must be priced at epsilon^2/2; one with a rho at no less than that rho; one that is
(epsilon, delta)-DP without a rho must be refused.
"""

from __future__ import annotations

import warnings
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

import dpsense as ds
from dpsense.methods import Release
from dpsense.methods.zcdp import method_rho, pure_rho
from dpsense.noise.rng import SeededRandom
from dpsense.release import release, zcdp_cost

X = np.array([31.0, 45, 45, 52, 60, 61, 70, 12, 88, 45])
EPS, DELTA = 0.7, 1e-6

CASES: list[tuple[Any, str, dict[str, Any], str]] = [
    (ds.Median(0, 100), "exponential", {}, "add-remove"),
    (ds.Median(0, 100), "adaptive", {}, "add-remove"),
    (ds.Mean(0, 100), "ksw", {}, "add-remove"),
    (ds.Count(), "global", {}, "add-remove"),
    (ds.Count(), "global", {"noise": "gaussian"}, "add-remove"),  # counts: discrete Laplace
    (ds.Mean(0, 100), "global", {"noise": "gaussian"}, "add-remove"),  # noisy sum / count
    (ds.Sum(0, 100), "global", {}, "add-remove"),
    (ds.Sum(0, 100), "global", {"noise": "gaussian"}, "add-remove"),
    (ds.Sum(-3, 7), "global", {"noise": "gaussian"}, "add-remove"),
    (ds.Mean(0, 100), "global", {"noise": "gaussian"}, "substitute"),  # sigma uses n
    (ds.Variance(0, 100), "global", {"noise": "gaussian"}, "substitute"),
    (ds.Median(0, 100), "smooth", {"noise": "cauchy"}, "add-remove"),
    (ds.Median(0, 100), "smooth", {"noise": "student-t"}, "add-remove"),
    (ds.Variance(0, 100), "smooth", {"noise": "lln"}, "add-remove"),
    (ds.Median(0, 100), "smooth", {"noise": "lln", "sigma": 0.8}, "substitute"),
    (ds.Median(0, 100), "smooth", {}, "add-remove"),  # Laplace when delta > 0
    (ds.Median(0, 100), "ptr", {"bound": 5.0}, "add-remove"),
    (ds.Mean(0, 100), "bounded-ls", {}, "add-remove"),
    (ds.Variance(0, 100), "auto", {}, "add-remove"),  # smooth with Laplace noise
    (ds.Mean(0, 100), "auto", {}, "add-remove"),  # ksw
]


def _receipt(statistic: Any, method: str, options: dict[str, Any], nb: str, seed: int) -> Release:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = release(
            X,
            statistic,
            epsilon=EPS,
            delta=DELTA,
            method=method,
            neighbours=nb,
            rng=seed,
            **options,
        )
    assert isinstance(out, Release)
    return out


@pytest.mark.parametrize(("statistic", "method", "options", "nb"), CASES)
def test_the_price_agrees_with_the_receipt(
    statistic: Any, method: str, options: dict[str, Any], nb: str
) -> None:
    out = _receipt(statistic, method, options, nb, seed=11)
    args = {"epsilon": EPS, "delta": DELTA, "method": method, "neighbours": nb, **options}
    if out.rho is None and out.delta > 0:  # (epsilon, delta) with no zCDP guarantee
        with pytest.raises(ds.InputError, match="no zCDP guarantee"):
            zcdp_cost(statistic, **args)
        return
    cost = zcdp_cost(statistic, **args)
    assert cost.delta == 0
    if out.rho is None:
        assert out.delta == 0.0
        assert Fraction(cost.rho) == pure_rho(EPS)
    else:
        assert Fraction(out.rho) <= Fraction(cost.rho)
        assert float(cost.rho) == pytest.approx(out.rho, rel=1e-8)


@pytest.mark.parametrize("bounds", [(0.0, 1.0), (0.0, 1e6), (-1e-3, 2e-3), (-7.0, 3.0)])
def test_the_gaussian_price_covers_every_sensitivity(bounds: tuple[float, float]) -> None:
    for eps, dlt in ((0.1, 1e-9), (1.0, 1e-6), (4.0, 0.05)):
        out = release(
            X, ds.Sum(*bounds), epsilon=eps, delta=dlt, method="global", noise="gaussian",
            rng=SeededRandom(1),
        )  # fmt: skip
        assert isinstance(out, Release)
        assert out.rho is not None
        rho = method_rho(
            "global",
            ds.Sum(*bounds),
            epsilon=eps,
            delta=dlt,
            neighbours="add-remove",
            options={"noise": "gaussian"},
        )
        assert rho is not None
        assert Fraction(out.rho) <= rho


def test_auto_is_resolved_as_release_resolves_it() -> None:
    # a variance by auto is smooth with Laplace noise when delta > 0 (refused), Student's t
    # when delta = 0 (pure)
    with pytest.raises(ds.InputError, match="method='smooth'"):
        zcdp_cost(ds.Variance(0, 100), epsilon=1.0, delta=1e-6)
    assert Fraction(zcdp_cost(ds.Variance(0, 100), epsilon=1.0).rho) == Fraction(1, 2)
    with pytest.raises(ds.InputError, match="'method'"):
        zcdp_cost(ds.Median(0, 1), epsilon=1.0, method="magic")
