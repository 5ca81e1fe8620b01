"""Rho budgets with approximate parts (issue 22): private partition selection under zCDP.

A grouped release without public keys keeps a group when its noisy person count reaches a
threshold, so a group that only one extra person makes can appear: with probability at most
the selection's delta per release. Under a rho budget that delta is not a zCDP delta; the
accountant keeps approximate zCDP, and the reported delta must cover the probability that
the group ever appears.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest
from tests.accounting.counting import CountingRandom

import dpsense as ds
from dpsense.accounting import Ledger
from dpsense.mechanisms.partition_selection import SelectionRule, select_groups
from dpsense.noise.rng import SeededRandom
from dpsense.tables.request import budget_split

# x' : two large groups, and one extra person who makes a third group alone
TABLE = {"g": ["a"] * 60 + ["b"] * 60 + ["new"], "x": list(np.linspace(0.0, 100.0, 121))}
MEAN = ds.Mean(0, 100)
EPS, DELTA = 1.0, 0.018  # per release; half of each goes to selection (delta_s = 0.009)
RELEASES = 100
TARGET_DELTA = 0.02  # the delta' of the rho -> (epsilon, delta) conversion
TRIALS = 4000  # simulated runs of 100 releases for the measured probability


def _grouped(acct: ds.Accountant, rng: SeededRandom) -> ds.GroupedRelease:
    out = acct.release(
        TABLE,
        MEAN,
        column="x",
        by="g",
        epsilon=EPS,
        delta=DELTA,
        method="smooth",
        noise="lln",
        rng=rng,
    )
    assert isinstance(out, ds.GroupedRelease)
    return out


def _selection_rule() -> SelectionRule:
    split = budget_split(EPS, DELTA, by=("g",), public_keys=None, groups=1)
    assert split.selection is not None
    return SelectionRule.for_budget(*split.selection, 1)


def _exact_probability_new_group_appears() -> float:
    """P(the one-person group is kept in at least one of the releases), from the rule: it
    is kept when 1 + Z >= tau, Z discrete Laplace of scale b, P(Z >= k) = q^k / (1 + q)."""
    rule = _selection_rule()
    q = math.exp(-1.0 / float(rule.scale))
    once = q ** (rule.threshold - 1) / (1.0 + q)
    return 1.0 - (1.0 - once) ** RELEASES


def _measured_probability_new_group_appears() -> tuple[float, float, float]:
    """The same probability measured with the library's sampler (seeded), and a 99.9%
    normal-approximation interval around it."""
    rule = _selection_rule()
    counts = np.ones(TRIALS * RELEASES, dtype=np.int64)  # the new group's one person
    kept = np.zeros(TRIALS * RELEASES, dtype=bool)
    kept[select_groups(counts, rule, SeededRandom(2201))] = True
    p = float(kept.reshape(TRIALS, RELEASES).any(axis=1).mean())
    half = 3.29 * math.sqrt(p * (1 - p) / TRIALS)
    return p, p - half, p + half


@pytest.fixture(scope="module")
def probabilities() -> tuple[float, float, float, float]:
    exact = _exact_probability_new_group_appears()
    return (exact, *_measured_probability_new_group_appears())


def _run_hundred(acct: ds.Accountant) -> tuple[list[float], int]:
    """100 grouped releases without keys; the reported delta after each, and how often the
    one-person group appeared."""
    rng = SeededRandom(22)
    deltas, appeared = [], 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded runs warn
        for _ in range(RELEASES):
            out = _grouped(acct, rng)
            appeared += "new" in out
            deltas.append(acct.spent[1])
    return deltas, appeared


@pytest.mark.parametrize("where", ["memory", "ledger"])
def test_hundred_grouped_releases_report_a_delta_that_covers_the_new_group(
    tmp_path: Path, where: str, probabilities: tuple[float, float, float, float]
) -> None:
    exact, _, low, high = probabilities
    assert low <= exact <= high  # the simulation measures what the rule says
    ledger = tmp_path / "rho.db" if where == "ledger" else None
    acct = ds.Accountant(rho=20.0, delta=TARGET_DELTA, approx_delta=0.95, ledger=ledger)
    deltas, appeared = _run_hundred(acct)
    assert 0 <= appeared <= RELEASES
    # every release with private selection makes the reported delta grow
    assert all(b > a for a, b in itertools.pairwise(deltas))
    reported = deltas[-1]
    assert reported == pytest.approx(TARGET_DELTA + RELEASES * DELTA / 2, rel=1e-12)
    assert reported >= exact
    assert reported >= high
    # what charging selection as pure rho reported: delta' alone, far below the measured
    # probability (the issue: 0.02 reported, 0.34 exact)
    assert low > TARGET_DELTA
    rho, approx = acct.spent_zcdp or (0.0, 0.0)
    assert approx == pytest.approx(RELEASES * DELTA / 2, rel=1e-12)
    assert rho > RELEASES * 0.125  # selection alone: 1/(2 b^2) with b = 2, per release
    if ledger is not None:
        entries = Ledger.open(ledger).entries()
        assert len(entries) == RELEASES
        assert {(e.rho, e.delta) for e in entries} == {(entries[0].rho, Decimal("0.009"))}
        assert ds.Accountant(ledger=ledger).spent == acct.spent


def test_selection_charge_is_the_split_of_the_release() -> None:
    acct = ds.Accountant(rho=1.0, delta=1e-6, approx_delta=0.05)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = _grouped(acct, SeededRandom(3))
    sel = out.parameters["selection"]
    per_group = out.parameters["per_group"]
    rho, approx = acct.spent_zcdp or (0.0, 0.0)
    receipts = [r.rho for _, r in out]
    assert all(r == receipts[0] for r in receipts)
    assert receipts[0] is not None
    # selection 1/(2 b^2) with the receipt's scale, plus one group's lln rho (a person is
    # in one group); the charge is rounded up to 50 digits, never down
    expected = 1 / (2 * sel["scale"] ** 2) + receipts[0]
    assert rho == pytest.approx(expected, rel=1e-12)
    assert rho >= expected
    assert approx == sel["delta"] == DELTA / 2
    assert per_group["epsilon"] == EPS / 2


def test_without_a_cap_on_approximate_deltas_selection_is_refused_before_drawing() -> None:
    acct = ds.Accountant(rho=10.0, delta=1e-6)
    rng = CountingRandom()
    with pytest.raises(ds.InputError, match=r"approximately zCDP.*approx_delta.*keys") as info:
        acct.release(TABLE, ds.Count(), by="g", epsilon=1.0, delta=1e-6, rng=rng)
    assert rng.drawn == 0
    assert acct.spent == (0.0, 0.0)
    assert "60" not in str(info.value)  # no counts
    assert "121" not in str(info.value)
    # with public keys nothing is approximate: the same release is charged as pure rho
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        acct.release(TABLE, ds.Count(), by="g", keys=["a", "b"], epsilon=1.0, rng=rng)
    assert acct.spent_zcdp == (0.5, 0.0)


def _refused_calls() -> dict[str, Callable[[ds.Accountant, SeededRandom], object]]:
    x, eps, dlt = TABLE["x"], 1.0, 1e-6
    return {
        "ptr": lambda a, r: a.release(
            x, MEAN, epsilon=eps, delta=dlt, method="ptr", bound=1, rng=r
        ),
        "smooth": lambda a, r: a.release(x, ds.Variance(0, 100), epsilon=eps, delta=dlt, rng=r),
        "noise='laplace'": lambda a, r: a.release(
            x, ds.Median(0, 100), epsilon=eps, delta=dlt, method="smooth", noise="laplace", rng=r
        ),
        "bounded-ls": lambda a, r: a.release(
            x, MEAN, epsilon=eps, delta=dlt, method="bounded-ls", rng=r
        ),
        "method='ptr'": lambda a, r: a.release(
            TABLE, MEAN, column="x", by="g", keys=["a"], epsilon=eps, delta=dlt, method="ptr",
            bound=1, rng=r,
        ),
        "local-bound": lambda a, r: a.private_ratio(
            30, 100, epsilon=eps, delta=dlt, method="local-bound", rng=r
        ),
        "sample-and-aggregate": lambda a, r: a.sample_and_aggregate(
            x, np.median, blocks=4, lower=0, upper=100, aggregator="median", epsilon=eps,
            delta=dlt, rng=r,
        ),
        # the neighbours' aliases are the relation private_ratio runs under
        "local-bound ratio": lambda a, r: a.private_ratio(
            30, 100, epsilon=eps, delta=dlt, method="local-bound", neighbours="unbounded", rng=r
        ),
        "charge": lambda a, r: a.charge(0.5, dlt),
        "charge with delta": lambda a, r: a.charge(0.5, dlt, rho=0.1),
    }  # fmt: skip


@pytest.mark.parametrize("fragment", list(_refused_calls()))
def test_releases_without_a_zcdp_guarantee_are_refused_before_drawing(fragment: str) -> None:
    acct = ds.Accountant(rho=10.0, delta=1e-6, approx_delta=1e-3)
    rng = CountingRandom()
    with pytest.raises(ds.InputError, match="no zCDP guarantee") as info:
        _refused_calls()[fragment](acct, rng)
    message = str(info.value)
    assert fragment in message
    assert "noise='lln'" in message  # says what to use instead
    assert "(epsilon, delta) budget" in message
    assert rng.drawn == 0
    assert acct.spent == (0.0, 0.0)


def test_private_bounds_with_a_delta_is_refused_before_its_charge() -> None:
    for acct in (ds.Accountant(rho=1.0, delta=1e-6), ds.Accountant(epsilon=1.0)):
        with pytest.raises(ds.InputError, match="pure epsilon-DP"):
            acct.private_bounds(TABLE["x"], epsilon=0.5, delta=1e-6)
        assert acct.spent == (0.0, 0.0)


def test_zcdp_releases_of_every_entry_point_are_charged() -> None:
    acct = ds.Accountant(rho=10.0, delta=1e-6, approx_delta=1e-3)
    rng = SeededRandom(5)
    x, dlt = TABLE["x"], 1e-6
    gaussian = {"method": "global", "noise": "gaussian"}
    blocks = {"blocks": 4, "lower": 0, "upper": 100}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        acct.release(x, ds.Sum(0, 100), epsilon=1.0, delta=dlt, rng=rng, **gaussian)
        acct.release(x, MEAN, epsilon=1.0, delta=dlt, rng=rng, **gaussian)
        acct.sample_and_aggregate(x, np.median, epsilon=1.0, rng=rng, **blocks)
        acct.sample_and_aggregate(
            x, np.median, aggregator="median", noise="lln", epsilon=1.0, delta=dlt, rng=rng,
            **blocks,
        )  # fmt: skip
        acct.private_ratio(30, 100, epsilon=1.0, rng=rng)
        acct.private_bounds(x, epsilon=1.0, rng=rng)
    rho, approx = acct.spent_zcdp or (0.0, 0.0)
    # the Gaussian sum (rho < 1/2), a mean under add-remove that global releases with
    # Laplace noise whatever noise says (1/2), three pure ones (1/2 each), one lln
    assert 4 * 0.5 < rho < 6 * 0.5
    assert approx == 0.0


def test_budget_checks_are_exact() -> None:
    # four pure releases of epsilon 0.1 cost exactly 4 * 0.1^2 / 2 = 0.02 (read as decimals)
    acct = ds.Accountant(rho=0.02, delta=1e-6)
    for _ in range(4):
        acct.charge(0.1)
    assert acct.spent_rho == 0.02
    with pytest.raises(ds.BudgetExceededError, match=r"rho=0\.005.*only rho=0"):
        acct.charge(0.1)
    # approximate deltas: a cap of exactly two selections admits two and refuses the third
    acct = ds.Accountant(rho=10.0, delta=1e-6, approx_delta=2 * 0.5e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in range(2):
            acct.release(TABLE, ds.Count(), by="g", epsilon=1.0, delta=1e-6, rng=seed)
        rng = CountingRandom()
        with pytest.raises(
            ds.BudgetExceededError, match=r"approximate delta=5e-07\).*approximate delta=0 remain"
        ):
            acct.release(TABLE, ds.Count(), by="g", epsilon=1.0, delta=1e-6, rng=rng)
    assert rng.drawn == 0
    assert acct.spent_zcdp == (0.5, 1e-6)  # each: 1/(2 * 2^2) + 0.5^2/2
    assert acct.remaining[1] == 0.0


def test_spent_remaining_and_total_agree_between_memory_and_ledger(tmp_path: Path) -> None:
    path = tmp_path / "rho.db"
    memory = ds.Accountant(rho=2.0, delta=1e-6, approx_delta=1e-4)
    ledger = ds.Accountant(rho=2.0, delta=1e-6, approx_delta=1e-4, ledger=path)
    assert memory.spent == ledger.spent == (0.0, 0.0)
    assert memory.total == ledger.total
    assert memory.remaining == ledger.remaining == memory.total
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for acct in (memory, ledger):
            acct.release(TABLE["x"], ds.Median(0, 100), epsilon=0.3, rng=1)
            acct.release(TABLE, ds.Count(), by="g", epsilon=0.7, delta=1e-5, rng=2)
            acct.charge(0.2, rho=0.01, approx_delta=3e-6)
            acct.release(
                TABLE["x"], MEAN, epsilon=0.5, delta=1e-7, method="smooth", noise="lln", rng=3
            )
    reopened = ds.Accountant(ledger=path)
    for view in (ledger, reopened):
        assert view.spent == memory.spent
        assert view.remaining == memory.remaining
        assert view.total == memory.total
        assert view.spent_zcdp == memory.spent_zcdp
    eps, dlt = memory.spent
    rho, approx = memory.spent_zcdp or (0.0, 0.0)
    assert dlt == pytest.approx(1e-6 + approx)
    assert eps == pytest.approx(rho + 2 * math.sqrt(rho * math.log(1e6)))
    assert approx == pytest.approx(0.5e-5 + 3e-6)
    entries = Ledger.open(path).entries()
    assert [e.method for e in entries] == ["exponential", "global", "", "smooth"]
    assert [float(e.epsilon) for e in entries] == [0.3, 0.7, 0.2, 0.5]  # nominal labels


def test_rho_budget_arguments_and_ledger_mismatch(tmp_path: Path) -> None:
    with pytest.raises(ds.InputError, match="not both"):
        ds.Accountant(epsilon=1.0, rho=0.5, delta=1e-6)
    with pytest.raises(ds.InputError, match="delta > 0"):
        ds.Accountant(rho=0.5)
    with pytest.raises(ds.InputError, match=r"approx_delta.*rho"):
        ds.Accountant(epsilon=1.0, approx_delta=1e-5)
    with pytest.raises(ds.InputError, match="composition"):
        ds.Accountant(rho=0.5, delta=1e-6, composition="advanced", delta_slack=1e-7)
    with pytest.raises(ds.InputError, match=r"delta \+ approx_delta < 1"):
        ds.Accountant(rho=0.5, delta=0.5, approx_delta=0.5)
    with (
        pytest.raises(ds.InputError, match="not available for a rho budget"),
        ds.Accountant(rho=0.5, delta=1e-6).parallel(),
    ):
        pass
    path = tmp_path / "rho.db"
    ds.Accountant(rho=0.5, delta=1e-6, approx_delta=1e-5, ledger=path)
    assert ds.Accountant(rho=0.5, delta=1e-6, approx_delta=1e-5, ledger=path).total[1] == 1.1e-5
    for other in ({"rho": 0.4, "delta": 1e-6, "approx_delta": 1e-5}, {"epsilon": 1.0}):
        with pytest.raises(ds.InputError, match="differs"):
            ds.Accountant(ledger=path, **other)  # type: ignore[arg-type]
    eps_path = tmp_path / "eps.db"
    ds.Accountant(epsilon=1.0, ledger=eps_path)
    with pytest.raises(ds.InputError, match="differs"):
        ds.Accountant(rho=0.5, delta=1e-6, ledger=eps_path)
    with pytest.raises(ds.InputError, match="rho budget"):
        ds.Accountant(ledger=eps_path).charge(0.1, rho=0.01)
    with pytest.raises(ds.LedgerError, match="charge_zcdp"):
        Ledger.open(path).charge(0.1)


def test_a_release_the_method_would_reject_is_rejected_before_the_charge() -> None:
    acct = ds.Accountant(rho=10.0, delta=1e-6)
    rng = CountingRandom()
    with pytest.raises(ds.InputError, match="needs delta > 0"):
        acct.release(TABLE["x"], MEAN, epsilon=1.0, method="smooth", noise="lln", rng=rng)
    assert rng.drawn == 0
    assert acct.spent == (0.0, 0.0)
