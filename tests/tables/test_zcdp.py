"""The zCDP price of a grouped release follows its own budget split (docs/accounting.md §3)."""

from __future__ import annotations

import math
import warnings
from fractions import Fraction
from typing import Any

import pytest

import dpsense as ds
from dpsense.mechanisms.partition_selection import SelectionRule
from dpsense.release import release, zcdp_cost
from dpsense.tables.request import SELECTION_SHARE, budget_split

# people in years; person p is in up to three years
TABLE = {
    "person": [p for p in range(400) for _ in range(3)],
    "year": [2020 + (p + k) % 4 for p in range(400) for k in range(3)],
    "hours": [float((7 * p + k) % 50) for p in range(400) for k in range(3)],
}


def _grouped(**kwargs: Any) -> ds.GroupedRelease:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = release(TABLE, column="hours", by="year", privacy_unit="person", rng=4, **kwargs)
    assert isinstance(out, ds.GroupedRelease)
    return out


@pytest.mark.parametrize(
    ("keys", "g", "method", "options"),
    [
        (None, 1, "global", {}),
        (None, 3, "global", {}),
        (None, 3, "smooth", {"noise": "lln"}),
        ([2020, 2021], 3, "global", {}),  # fewer keys than groups per person
        ([2020, 2021, 2022, 2023], 3, "smooth", {"noise": "lln"}),
    ],
)
def test_grouped_price_is_selection_plus_touched_groups(
    keys: list[int] | None, g: int, method: str, options: dict[str, Any]
) -> None:
    statistic = ds.Count() if method == "global" else ds.Mean(0, 50)
    args: dict[str, Any] = {
        "epsilon": 2.0,
        "delta": 1e-5,
        "method": method,
        "keys": keys,
        "max_groups_per_unit": g,
        **options,
    }
    out = _grouped(statistic=statistic, **args)
    cost = zcdp_cost(statistic, by="year", privacy_unit="person", **args)
    touched = min(g, len(keys)) if keys else g
    per_group = out.parameters["per_group"]
    receipts = {r.rho for _, r in out}
    assert len(out) > 0
    one = (
        Fraction(str(per_group["epsilon"])) ** 2 / 2
        if receipts == {None}
        else Fraction(receipts.pop())
    )
    expected = touched * one
    if keys is None:
        sel = out.parameters["selection"]
        scale = Fraction(sel["scale"])
        expected += Fraction(g) / (2 * scale * scale)
        # no more than the design's (epsilon_s)^2 / 2, and g times less
        assert Fraction(g) / (2 * scale * scale) <= Fraction(sel["epsilon"]) ** 2 / (2 * g)
        assert Fraction(cost.delta) == Fraction(str(sel["delta"]))
        assert sel["delta"] == SELECTION_SHARE * 1e-5
    else:
        assert cost.delta == 0
    assert Fraction(cost.rho) >= expected
    assert Fraction(cost.rho) - expected < Fraction(1, 10**40)  # rounded up, not more


def test_the_split_is_the_release_split() -> None:
    split = budget_split(1.0, 1e-6, by=("year",), public_keys=None, groups=3)
    assert split.selection == (0.5, 5e-7)
    assert split.touched == 3
    assert Fraction(split.per_group[0]) * 3 <= Fraction(0.5)
    assert budget_split(1.0, 0.0, by=("year",), public_keys=2, groups=3).touched == 2
    assert budget_split(1.0, 0.0, by=(), public_keys=None, groups=1).selection is None
    with pytest.raises(ds.InputError, match="keys"):
        budget_split(1.0, 0.0, by=("year",), public_keys=None, groups=1)


def test_a_grouped_release_without_a_zcdp_guarantee_is_refused() -> None:
    with pytest.raises(ds.InputError, match=r"method='ptr'.*no zCDP guarantee"):
        zcdp_cost(
            ds.Median(0, 50), by="year", keys=[2020], epsilon=1.0, delta=1e-6, method="ptr",
            bound=1.0,
        )  # fmt: skip


def _kept(count: int, rule: SelectionRule) -> tuple[float, float]:
    """(log P(kept), log P(dropped)) for a group of ``count`` people: kept when
    count + Z >= tau, Z discrete Laplace of the rule's scale, P(Z >= k) = q^k / (1 + q)."""
    log_q = -1.0 / float(rule.scale)
    log_norm = math.log1p(math.exp(log_q))
    k = rule.threshold - count
    if k >= 0:
        upper = k * log_q - log_norm
        return upper, math.log1p(-math.exp(upper))
    lower = (1 - k) * log_q - log_norm  # P(Z <= k - 1) = P(Z >= 1 - k)
    return math.log1p(-math.exp(lower)), lower


def _renyi(p: tuple[float, float], r: tuple[float, float], alpha: float) -> float:
    """D_alpha between two Bernoulli laws given by their log-probabilities."""
    terms = [alpha * lp + (1 - alpha) * lr for lp, lr in zip(p, r, strict=True)]
    top = max(terms)
    return (top + math.log(sum(math.exp(t - top) for t in terms))) / (alpha - 1)


@pytest.mark.parametrize(("eps_s", "g"), [(0.5, 1), (0.05, 1), (1.0, 3), (2.0, 8)])
def test_selection_on_shared_groups_is_zcdp_by_brute_force(eps_s: float, g: int) -> None:
    """Each kept-or-not decision of a group both neighbours have (count c against c + 1) is
    (1/b)-DP and (1/(2 b^2))-zCDP: its Renyi divergences, computed exactly, in both
    directions, at every count up to far past the threshold; the decisions are independent,
    so the g a person changes are g/(2 b^2)-zCDP."""
    rule = SelectionRule.for_budget(eps_s, 1e-6, g)
    b = float(rule.scale)
    alphas = [1.001, 1.1, 1.5, 2, 3, 5, 10, 30, 100, 1000]
    worst = 0.0
    for c in range(1, rule.threshold + int(30 * b) + 2):
        p, r = _kept(c, rule), _kept(c + 1, rule)
        assert abs(r[0] - p[0]) <= 1 / b + 1e-12  # pure (1/b)-DP, both outcomes
        assert abs(r[1] - p[1]) <= 1 / b + 1e-12
        for a in alphas:
            for d in (_renyi(p, r, a), _renyi(r, p, a)):
                worst = max(worst, d / a)
                assert d <= a / (2 * b * b) * (1 + 1e-9)
    assert worst > 0.1 / (2 * b * b)  # the check looked where the divergence is
