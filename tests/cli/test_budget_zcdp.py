"""``dpsense budget`` with a zCDP (rho) budget, and releases charged to it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import dpsense as ds
from dpsense.accounting import Ledger
from dpsense.cli import main
from dpsense.datasets import census_path

CENSUS = str(census_path())
OLD_KEYS = {"total_epsilon", "total_delta", "spent_epsilon", "spent_delta", "charges"}
RHO_KEYS = {"total_rho", "spent_rho", "remaining_rho", "zcdp_delta", "approx_delta"}
COUNT_BY_SEX = ["--column", "age", "--by", "sex", "--statistic", "count", "--epsilon", "1"]


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_rho_ledger_is_created_charged_and_shown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ledger = str(tmp_path / "rho.db")
    code, out, err = run(
        capsys, "budget", "init", ledger, "--rho", "2", "--delta", "1e-6", "--approx-delta", "1e-5"
    )
    assert code == 0, err
    assert "rho=2" in out
    release = ["release", CENSUS, *COUNT_BY_SEX, "--delta", "1e-6", "--ledger", ledger, "--json"]
    code, _, err = run(capsys, *release)
    assert code == 0, err
    code, out, err = run(capsys, "budget", "show", ledger, "--json")
    assert code == 0, err
    shown = json.loads(out)
    assert set(shown) >= OLD_KEYS | RHO_KEYS | {"budget"}
    acct = ds.Accountant(ledger=ledger)
    assert (shown["spent_epsilon"], shown["spent_delta"]) == acct.spent
    assert (shown["remaining_epsilon"], shown["remaining_delta"]) == acct.remaining
    assert (shown["total_epsilon"], shown["total_delta"]) == acct.total
    assert (shown["spent_rho"], shown["spent_approx_delta"]) == acct.spent_zcdp
    assert shown["spent_rho"] == 0.25  # selection 1/(2 * 2^2) and counts 0.5^2 / 2
    assert shown["spent_approx_delta"] == 5e-7
    assert shown["budget"] == "rho"
    (charge,) = shown["charges"]
    assert (charge["rho"], charge["delta"], charge["epsilon"]) == (0.25, 5e-7, 1.0)
    code, out, _ = run(capsys, "budget", "show", ledger)
    assert code == 0
    assert "rho" in out
    assert "approximate deltas" in out


def test_a_release_with_no_zcdp_guarantee_is_refused_and_charges_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ledger = tmp_path / "rho.db"
    assert run(capsys, "budget", "init", str(ledger), "--rho", "1", "--delta", "1e-6")[0] == 0
    ptr = ["--statistic", "median", "--lower", "0", "--upper", "100", "--method", "ptr"]
    code, _, err = run(
        capsys, "release", CENSUS, "--column", "age", *ptr, "--bound", "1", "--epsilon", "1",
        "--delta", "1e-6", "--ledger", str(ledger),
    )  # fmt: skip
    assert code == 2
    assert err.count("\n") == 1
    assert "no zCDP guarantee" in err
    assert "--method exponential" in err  # what to use instead, in the CLI's words
    # grouped without keys needs a cap on approximate deltas, which this ledger lacks
    grouped = ["release", CENSUS, *COUNT_BY_SEX, "--delta", "1e-6", "--ledger", str(ledger)]
    code, _, err = run(capsys, *grouped)
    assert code == 2
    assert "--approx-delta" in err
    assert "--keys" in err
    assert Ledger.open(ledger).entries() == []


def test_budget_init_rejects_mixed_or_missing_budgets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(tmp_path / "b.db")
    for args in (
        ["--rho", "1", "--epsilon", "1", "--delta", "1e-6"],
        ["--rho", "1"],
        [],
        ["--epsilon", "1", "--approx-delta", "1e-5"],
    ):
        code, _, err = run(capsys, "budget", "init", path, *args)
        assert code == 2, args
        assert err.startswith("error: ")
    assert not Path(path).exists()


def test_an_epsilon_ledger_shows_its_old_keys_and_empty_rho_fields(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ledger = str(tmp_path / "eps.db")
    assert run(capsys, "budget", "init", ledger, "--epsilon", "1", "--delta", "1e-6")[0] == 0
    code, out, _ = run(capsys, "budget", "show", ledger, "--json")
    assert code == 0
    shown = json.loads(out)
    assert set(shown) >= OLD_KEYS
    assert shown["budget"] == "epsilon"
    assert all(shown[k] is None for k in RHO_KEYS)
    assert (shown["total_epsilon"], shown["total_delta"]) == (1.0, 1e-6)
