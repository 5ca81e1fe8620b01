"""The ledger under concurrency, SIGKILL, corruption, locks and read-only files (issue 5).

These tests start real processes (the ``dpsense`` command line and small Python workers).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest

import dpsense as ds
from dpsense.accounting import Ledger, LedgerError
from dpsense.datasets import census_path

CENSUS = str(census_path())
RELEASE = [
    sys.executable,
    "-m",
    "dpsense",
    "release",
    CENSUS,
    "--column",
    "age",
    "--statistic",
    "median",
    "--lower",
    "0",
    "--upper",
    "100",
    "--method",
    "exponential",
    "--json",
]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*args], capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.slow
def test_forty_concurrent_releases_against_a_budget_for_twenty(tmp_path: Path) -> None:
    ledger = tmp_path / "budget.db"
    assert (
        _cli(
            sys.executable, "-m", "dpsense", "budget", "init", str(ledger), "--epsilon", "1"
        ).returncode
        == 0
    )
    with ThreadPoolExecutor(max_workers=8) as pool:
        runs = list(
            pool.map(
                lambda i: _cli(
                    *RELEASE, "--epsilon", "0.05", "--ledger", str(ledger), "--dataset", f"run-{i}"
                ),
                range(40),
            )
        )
    codes = [r.returncode for r in runs]
    assert codes.count(0) == 20, [r.stderr for r in runs if r.returncode not in (0, 3)]
    assert codes.count(3) == 20
    for r in runs:
        if r.returncode == 3:
            assert r.stderr.startswith("error: privacy budget exceeded")
            assert r.stderr.count("\n") == 1
        else:
            assert json.loads(r.stdout)["epsilon"] == 0.05
    opened = Ledger.open(ledger)
    entries = opened.entries()
    assert len(entries) == 20
    assert all(e.status == "answered" for e in entries)
    assert opened.spent() == (Decimal(1), Decimal(0))  # exactly the budget, never more
    shown = json.loads(
        _cli(sys.executable, "-m", "dpsense", "budget", "show", str(ledger), "--json").stdout
    )
    assert set(shown) >= {"total_epsilon", "total_delta", "spent_epsilon", "spent_delta", "charges"}
    assert shown["spent_epsilon"] == 1.0
    assert len(shown["charges"]) == 20
    assert all("value" not in c for c in shown["charges"])  # never data or answers


_SLOW_WORKER = textwrap.dedent(
    """
    import sys, time
    import numpy as np
    import dpsense as ds
    acct = ds.Accountant(ledger=sys.argv[1])
    def slow(block):
        time.sleep(60)  # the process is killed while computing
        return float(np.mean(block))
    acct.sample_and_aggregate(np.arange(100.0), slow, blocks=2, lower=0, upper=100,
                              epsilon=0.25, dataset="slow")
    """
)

_LOOP_WORKER = textwrap.dedent(
    """
    import sys
    import numpy as np
    import dpsense as ds
    acct = ds.Accountant(ledger=sys.argv[1])
    x = np.arange(1000.0)
    while True:
        try:
            acct.release(x, ds.Median(0, 1000), epsilon=0.001, method="exponential")
        except ds.BudgetExceededError:
            break
    """
)


def _wait_for_entries(ledger: Path, count: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if len(Ledger.open(ledger, timeout=1.0).entries()) >= count:
                return
        except LedgerError:
            pass
        time.sleep(0.05)
    raise AssertionError("the worker never charged the ledger")


def _assert_consistent(ledger: Path) -> list[ds.accounting.LedgerEntry]:
    opened = Ledger.open(ledger)  # rolls back a transaction the kill interrupted
    con = sqlite3.connect(f"file:{ledger}?mode=ro", uri=True)
    try:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        con.close()
    entries = opened.entries()
    spent = opened.spent()
    assert spent[0] <= opened.total_epsilon
    assert all(e.epsilon > 0 and e.status in ("charged", "answered", "refused") for e in entries)
    return entries


def test_sigkill_mid_release_leaves_a_readable_consistent_ledger(tmp_path: Path) -> None:
    ledger = tmp_path / "budget.db"
    Ledger.create(ledger, epsilon=1.0)
    proc = subprocess.Popen([sys.executable, "-c", _SLOW_WORKER, str(ledger)])
    try:
        _wait_for_entries(ledger, 1)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    (entry,) = _assert_consistent(ledger)
    assert entry.status == "charged"  # the budget is spent although no answer came out
    # the ledger is not left locked: the next release charges normally
    acct = ds.Accountant(ledger=ledger, timeout=5.0)
    acct.release(np.arange(10.0), ds.Median(0, 10), epsilon=0.25, method="exponential")
    assert acct.spent == (0.5, 0.0)


def test_sigkill_at_random_moments_never_breaks_the_ledger(tmp_path: Path) -> None:
    ledger = tmp_path / "budget.db"
    Ledger.create(ledger, epsilon=10.0)
    rng = np.random.default_rng(0)
    for total_killed in range(1, 7):
        before = len(Ledger.open(ledger).entries())
        proc = subprocess.Popen([sys.executable, "-c", _LOOP_WORKER, str(ledger)])
        _wait_for_entries(ledger, before + 1)
        time.sleep(float(rng.uniform(0.0, 0.4)))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        entries = _assert_consistent(ledger)
        assert len(entries) > before
        # at most one charge per killed process can lack its outcome
        assert sum(e.status == "charged" for e in entries) <= total_killed


@pytest.mark.parametrize("kind", ["garbage", "other-sqlite", "truncated"])
def test_a_corrupt_ledger_gives_a_clear_error_and_is_left_untouched(
    tmp_path: Path, kind: str
) -> None:
    ledger = tmp_path / "budget.db"
    if kind == "garbage":
        ledger.write_bytes(os.urandom(4096))
    elif kind == "other-sqlite":
        con = sqlite3.connect(ledger)
        con.execute("CREATE TABLE t (x)")
        con.commit()
        con.close()
    else:
        Ledger.create(ledger, epsilon=1.0)
        data = ledger.read_bytes()
        ledger.write_bytes(data[: len(data) // 2])
    digest = _digest(ledger)
    with pytest.raises(LedgerError, match=r"corrupt|not a dpsense ledger"):
        ds.Accountant(ledger=ledger)
    run = _cli(*RELEASE, "--epsilon", "0.1", "--ledger", str(ledger))
    assert run.returncode == 2
    assert run.stderr.count("\n") == 1
    assert "Traceback" not in run.stderr
    show = _cli(sys.executable, "-m", "dpsense", "budget", "show", str(ledger))
    assert show.returncode == 2
    assert _digest(ledger) == digest


def test_a_locked_ledger_gives_a_clear_error_and_charges_nothing(tmp_path: Path) -> None:
    ledger = tmp_path / "budget.db"
    Ledger.create(ledger, epsilon=1.0)
    acct = ds.Accountant(ledger=ledger, timeout=0.3)
    holder = sqlite3.connect(ledger, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(LedgerError, match="locked"):
            acct.release(np.arange(5.0), ds.Median(0, 5), epsilon=0.1, method="exponential")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert Ledger.open(ledger).entries() == []
    acct.release(np.arange(5.0), ds.Median(0, 5), epsilon=0.1, method="exponential")
    assert len(Ledger.open(ledger).entries()) == 1


def test_a_read_only_ledger_gives_a_clear_error_and_is_left_untouched(tmp_path: Path) -> None:
    ledger = tmp_path / "budget.db"
    Ledger.create(ledger, epsilon=1.0)
    os.chmod(ledger, 0o444)
    try:
        digest = _digest(ledger)
        acct = ds.Accountant(ledger=ledger)  # opening to read is fine
        with pytest.raises(LedgerError, match="read-only"):
            acct.release(np.arange(5.0), ds.Median(0, 5), epsilon=0.1, method="exponential")
        run = _cli(*RELEASE, "--epsilon", "0.1", "--ledger", str(ledger))
        assert run.returncode == 2
        assert "read-only" in run.stderr
        assert _digest(ledger) == digest
        assert _cli(sys.executable, "-m", "dpsense", "budget", "show", str(ledger)).returncode == 0
    finally:
        os.chmod(ledger, 0o644)


def test_budget_init_never_overwrites_and_validates(tmp_path: Path) -> None:
    ledger = tmp_path / "budget.db"
    init = [sys.executable, "-m", "dpsense", "budget", "init", str(ledger)]
    assert _cli(*init, "--epsilon", "1").returncode == 0
    digest = _digest(ledger)
    again = _cli(*init, "--epsilon", "5")
    assert again.returncode == 2
    assert "already exists" in again.stderr
    assert _digest(ledger) == digest
    assert (
        _cli(
            sys.executable,
            "-m",
            "dpsense",
            "budget",
            "init",
            str(tmp_path / "b.db"),
            "--epsilon",
            "0",
        ).returncode
        == 2
    )
    missing = _cli(*RELEASE, "--epsilon", "0.1", "--ledger", str(tmp_path / "nope.db"))
    assert missing.returncode == 2
    assert "budget init" in missing.stderr


_DIE_MID_TRANSACTION = textwrap.dedent(
    """
    import os, signal, sqlite3, sys
    con = sqlite3.connect(sys.argv[1], isolation_level=None)
    con.execute("BEGIN IMMEDIATE")
    con.execute(
        "INSERT INTO charges (time, dataset, statistic, method, epsilon, delta, group_id, "
        "status) VALUES ('t', 'd', 's', 'm', '0.5', '0', NULL, 'charged')"
    )
    os.kill(os.getpid(), signal.SIGKILL)  # dies holding an uncommitted write
    """
)


def test_a_write_interrupted_by_sigkill_is_rolled_back_on_the_next_read(tmp_path: Path) -> None:
    ledger = tmp_path / "budget.db"
    acct = ds.Accountant(epsilon=1.0, ledger=ledger)
    acct.charge(0.25, dataset="committed")
    proc = subprocess.run(
        [sys.executable, "-c", _DIE_MID_TRANSACTION, str(ledger)], check=False, timeout=60
    )
    assert proc.returncode == -signal.SIGKILL
    journal = ledger.with_name(ledger.name + "-journal")
    assert journal.exists()
    assert journal.stat().st_size > 0  # a hot journal: the write was interrupted
    entries = _assert_consistent(ledger)
    assert [e.dataset for e in entries] == ["committed"]  # the half-done charge is gone
    assert ds.Accountant(ledger=ledger).spent == (0.25, 0.0)
