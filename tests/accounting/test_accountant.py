"""ds.Accountant: charged first, never over budget, refusals and crashes still cost."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tests.accounting.counting import CountingRandom

import dpsense as ds
import dpsense.pipeline as pipeline_module
from dpsense.accounting import Ledger
from dpsense.noise.rng import SeededRandom

X = np.array([31.0, 45, 45, 52, 60, 61, 70])
MEDIAN = ds.Median(0, 100)


def test_in_memory_budget_spends_and_refuses_before_drawing_noise() -> None:
    acct = ds.Accountant(epsilon=1.0)
    rng = CountingRandom()
    acct.release(X, MEDIAN, epsilon=0.6, method="exponential", rng=rng)
    assert acct.spent == (0.6, 0.0)
    assert acct.remaining == (0.4, 0.0)
    before = rng.drawn
    with pytest.raises(ds.BudgetExceededError) as info:
        acct.release(X, MEDIAN, epsilon=0.5, method="exponential", rng=rng)
    assert rng.drawn == before  # no noise was drawn for the refused request
    assert info.value.remaining == (0.4, 0.0)
    assert info.value.requested == (0.5, 0.0)
    acct.release(X, MEDIAN, epsilon=0.4, method="exponential", rng=rng)
    assert acct.remaining == (0.0, 0.0)


def test_every_charged_entry_point_spends() -> None:
    acct = ds.Accountant(epsilon=3.0, delta=1e-5)
    rng = SeededRandom(1)
    acct.sample_and_aggregate(X, np.median, blocks=3, lower=0, upper=100, epsilon=1.0, rng=rng)
    acct.private_ratio(30, 100, epsilon=1.0, rng=rng)
    acct.release(X, MEDIAN, epsilon=0.5, delta=1e-6, method="ptr", bound=1.0, rng=rng)
    assert acct.spent == pytest.approx((2.5, 1e-6))


def test_a_refused_ptr_answer_costs_its_budget_and_is_recorded(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    acct = ds.Accountant(epsilon=1.0, delta=1e-5, ledger=path)
    spread = np.arange(0, 101, 10, dtype=float)
    r = acct.release(
        spread,
        MEDIAN,
        epsilon=0.5,
        delta=1e-6,
        method="ptr",
        bound=1e-3,
        rng=SeededRandom(2),
        dataset="spread",
    )
    assert r.refused
    assert acct.spent == (0.5, 1e-6)
    (entry,) = Ledger.open(path).entries()
    assert entry.status == "refused"
    assert entry.dataset == "spread"
    assert entry.epsilon == pytest.approx(0.5)


def test_a_crash_after_the_charge_loses_the_answer_not_the_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "ledger.db"
    acct = ds.Accountant(epsilon=1.0, ledger=path)

    def crash(*args: object, **kwargs: object) -> None:
        raise RuntimeError("killed while computing")

    monkeypatch.setattr(pipeline_module, "run_plan", crash)  # the pipeline runs the plan
    with pytest.raises(RuntimeError):
        acct.release(X, MEDIAN, epsilon=0.3)
    (entry,) = Ledger.open(path).entries()
    assert entry.status == "charged"  # committed before the answer; no outcome recorded
    assert ds.Accountant(ledger=path).spent == (0.3, 0.0)


def test_ledger_totals_are_used_and_checked(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    ds.Accountant(epsilon=2.0, delta=1e-6, ledger=path)
    assert ds.Accountant(ledger=path).total == (2.0, 1e-6)
    with pytest.raises(ds.InputError, match="differs"):
        ds.Accountant(epsilon=3.0, ledger=path)
    with pytest.raises(ds.InputError, match="epsilon"):
        ds.Accountant(ledger=tmp_path / "new.db")


def test_parallel_composition_charges_the_largest_member(tmp_path: Path) -> None:
    for ledger in (None, tmp_path / "p.db"):
        acct = ds.Accountant(epsilon=1.0, ledger=ledger)
        rng = SeededRandom(3)
        with acct.parallel():
            for part in (X[:3], X[3:5], X[5:]):
                acct.release(part, MEDIAN, epsilon=0.8, method="exponential", rng=rng)
        assert acct.spent == (0.8, 0.0)
        with pytest.raises(ds.BudgetExceededError):
            acct.release(X, MEDIAN, epsilon=0.3, method="exponential", rng=rng)


def test_advanced_composition_admits_more_small_releases() -> None:
    basic = ds.Accountant(epsilon=2.0, delta=1e-5)
    advanced = ds.Accountant(epsilon=2.0, delta=1e-5, composition="advanced", delta_slack=1e-6)
    counts = []
    for acct in (basic, advanced):
        n = 0
        while True:
            try:
                acct.charge(0.02)
            except ds.BudgetExceededError:
                break
            n += 1
        counts.append(n)
    assert counts[0] == 100
    assert counts[1] > 200


def test_rho_budget_costs_pure_epsilon_as_eps_squared_over_two() -> None:
    acct = ds.Accountant(rho=0.5, delta=1e-6)
    acct.release(X, MEDIAN, epsilon=0.5, method="exponential", rng=SeededRandom(4))
    assert acct.spent_rho == pytest.approx(0.125)
    acct.release(
        X, MEDIAN, epsilon=1.0, delta=1e-6, method="smooth", noise="lln", rng=SeededRandom(5)
    )
    assert acct.spent_rho > 0.125
    with pytest.raises(ds.InputError, match="zCDP"):
        acct.release(X, MEDIAN, epsilon=0.1, delta=1e-6, method="ptr", bound=1.0)


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"epsilon": 0.0}, "'epsilon'"),
        ({"epsilon": 1.0, "delta": 1.0}, "'delta'"),
        ({"epsilon": 1.0, "composition": "fancy"}, "'composition'"),
        ({"epsilon": 1.0, "composition": "advanced"}, "delta_slack"),
        ({}, "'epsilon'"),
    ],
)
def test_bad_accountant_arguments(kwargs: dict, fragment: str) -> None:
    with pytest.raises(ds.InputError, match=fragment):
        ds.Accountant(**kwargs)


def test_ledger_creation_works_where_hard_links_are_not_supported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno
    import os

    def no_links(src: object, dst: object) -> None:
        raise OSError(errno.EPERM, "hard links not supported")

    monkeypatch.setattr(os, "link", no_links)
    path = tmp_path / "ledger.db"
    Ledger.create(path, epsilon=1.0)
    assert Ledger.open(path).total_epsilon == 1
    with pytest.raises(ds.LedgerError, match="already exists"):
        Ledger.create(path, epsilon=2.0)
    assert Ledger.open(path).total_epsilon == 1
    assert [p.name for p in tmp_path.iterdir()] == ["ledger.db"]  # no temporary file left


SQL_TABLE = {"g": ["a", "b", "a", "b", "a", "b", "a"], "v": [31.0, 45, 45, 52, 60, 61, 70]}
SQL_QUERY = "SELECT g, COUNT(*) AS n, MEDIAN(v) AS med FROM t GROUP BY g"


def test_accountant_sql_is_ds_sql_charged_once(tmp_path: Path) -> None:
    """Accountant.sql is the pipeline of ds.sql with the accountant as its ledger: one
    charge of the query's total, labelled by the FROM table, and seed for seed the same
    result as ds.sql(..., accountant=...)."""
    kwargs = {"tables": {"t": SQL_TABLE}, "keys": {"g": ["a", "b"]}, "bounds": {"v": (0, 100)}}
    path = tmp_path / "ledger.db"
    acct = ds.Accountant(epsilon=2.0, ledger=path)
    with pytest.warns(ds.SeededRandomnessWarning):
        got = acct.sql(SQL_QUERY, epsilon=0.5, rng=7, **kwargs)
    assert acct.spent == (0.5, 0.0)
    (entry,) = Ledger.open(path).entries()
    assert entry.dataset == "t"
    other = ds.Accountant(epsilon=2.0)
    with pytest.warns(ds.SeededRandomnessWarning):
        same = ds.sql(SQL_QUERY, epsilon=0.5, rng=7, accountant=other, **kwargs)
    assert got.to_dicts() == same.to_dicts()
    assert other.spent == acct.spent


def test_accountant_sql_refuses_before_the_charge_and_over_budget_draws_nothing() -> None:
    acct = ds.Accountant(epsilon=1.0)
    tables = {"t": SQL_TABLE}
    with pytest.raises(ds.InputError, match="HAVING"):
        acct.sql(SQL_QUERY + " HAVING COUNT(*) > 1", tables=tables, epsilon=0.5)
    with pytest.raises(ds.InputError, match="nope"):
        acct.sql("SELECT MEDIAN(nope) FROM t", tables=tables, epsilon=0.5, bounds={"nope": (0, 1)})
    assert acct.spent == (0.0, 0.0)
    rng = CountingRandom()
    with pytest.raises(ds.BudgetExceededError):
        acct.sql(
            SQL_QUERY, tables=tables, epsilon=1.5, keys={"g": ["a"]}, bounds={"v": (0, 9)}, rng=rng
        )
    assert rng.drawn == 0
    assert acct.spent == (0.0, 0.0)
