"""Ledger schema versions: files written by dpsense before rho budgets still work.

``fixtures/ledger_v1_*.db`` were written by the code before schema version 2 (commit
e4f41ea): an epsilon budget with an answered release, a parallel pair, a refused
propose-test-release and a charge whose process died; and an advanced-composition budget
with 30 charges of 0.02.
"""

from __future__ import annotations

import sqlite3
import threading
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest
from tests.accounting.ledger_files import copy_fixture, file_digest

import dpsense as ds
from dpsense.accounting import SCHEMA_VERSION, Ledger, LedgerError
from dpsense.accounting import schema as ledger_schema
from dpsense.noise.rng import SeededRandom

X = np.array([31.0, 45, 45, 52, 60, 61, 70])

# what the code of schema version 1 reported for its fixtures
V1_BASIC = {"spent": (0.925, 1e-06), "remaining": (1.075, 9e-06), "total": (2.0, 1e-5)}
V1_ADVANCED = {"spent": (0.5879439134792112, 1e-06), "remaining": (0.4120560865207888, 9e-06)}

# the schema of version 1, as its code created it (meta rows included)
_V1_SQL = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE charges (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    time TEXT NOT NULL,
    dataset TEXT NOT NULL,
    statistic TEXT NOT NULL,
    method TEXT NOT NULL,
    epsilon TEXT NOT NULL,
    delta TEXT NOT NULL,
    group_id TEXT,
    status TEXT NOT NULL CHECK (status IN ('charged', 'answered', 'refused'))
);
INSERT INTO meta VALUES ('format', 'dpsense-ledger'), ('schema_version', '1'),
    ('total_epsilon', '1.0'), ('total_delta', '0.0'), ('composition', 'basic'),
    ('delta_slack', '0.0'), ('created', '2026-11-25T00:00:00+00:00');
INSERT INTO charges (time, dataset, statistic, method, epsilon, delta, group_id, status)
    VALUES ('2026-11-25T00:00:01+00:00', 'd', 'median', 'exponential', '0.25', '0.0', NULL,
            'answered');
"""


def _meta(path: Path) -> dict[str, str]:
    con = sqlite3.connect(path)
    try:
        return dict(con.execute("SELECT key, value FROM meta").fetchall())
    finally:
        con.close()


def _tables(path: Path) -> list[tuple[str, str]]:
    con = sqlite3.connect(path)
    try:
        rows = con.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name"
        ).fetchall()
        return [(n, " ".join(sql.split())) for n, sql in rows]
    finally:
        con.close()


def test_a_version_1_ledger_is_read_as_it_was_and_left_untouched(tmp_path: Path) -> None:
    path = copy_fixture(tmp_path, "ledger_v1_basic.db")
    digest = file_digest(path)
    acct = ds.Accountant(ledger=path)
    assert acct.spent == V1_BASIC["spent"]
    assert acct.remaining == V1_BASIC["remaining"]
    assert acct.total == V1_BASIC["total"]
    ledger = Ledger.open(path)
    assert ledger.budget == "epsilon"
    entries = ledger.entries()
    assert [e.status for e in entries] == ["answered", "answered", "answered", "refused", "charged"]
    assert all(e.rho is None for e in entries)
    assert entries[1].group == entries[2].group is not None
    assert file_digest(path) == digest  # reading never migrates
    advanced = ds.Accountant(ledger=copy_fixture(tmp_path, "ledger_v1_advanced.db"))
    assert advanced.spent == V1_ADVANCED["spent"]
    assert advanced.remaining == V1_ADVANCED["remaining"]


def test_the_first_charge_migrates_a_version_1_ledger(tmp_path: Path) -> None:
    path = copy_fixture(tmp_path, "ledger_v1_basic.db")
    before = Ledger.open(path).entries()
    acct = ds.Accountant(ledger=path)
    acct.release(X, ds.Median(0, 100), epsilon=0.075, method="exponential", rng=SeededRandom(1))
    meta = _meta(path)
    assert meta["schema_version"] == str(SCHEMA_VERSION) == "3"
    assert meta["budget"] == "epsilon"
    assert meta["total_epsilon"] == "2.0"  # the budget itself is unchanged
    after = Ledger.open(path).entries()
    assert after[: len(before)] == before  # old charges kept as they were
    assert after[-1].epsilon == Decimal("0.075")
    assert after[-1].status == "answered"
    assert acct.spent == (1.0, 1e-6)
    # a migrated file has the tables of a new one
    fresh = tmp_path / "fresh.db"
    Ledger.create(fresh, epsilon=1.0)
    assert _tables(path) == _tables(fresh)
    assert set(_meta(path)) == set(_meta(fresh))


def test_a_refused_charge_leaves_a_version_1_ledger_untouched(tmp_path: Path) -> None:
    path = copy_fixture(tmp_path, "ledger_v1_advanced.db")
    digest = file_digest(path)
    with pytest.raises(ds.BudgetExceededError):
        ds.Accountant(ledger=path).charge(0.9)
    assert file_digest(path) == digest  # the migration rolled back with the refused charge
    assert _meta(path)["schema_version"] == "1"


def test_a_version_1_ledger_written_by_raw_sql_migrates(tmp_path: Path) -> None:
    path = tmp_path / "raw.db"
    con = sqlite3.connect(path)
    con.executescript(_V1_SQL)
    con.close()
    acct = ds.Accountant(ledger=path)
    assert acct.spent == (0.25, 0.0)
    acct.charge(0.5, dataset="after")
    assert acct.spent == (0.75, 0.0)
    assert _meta(path)["schema_version"] == str(SCHEMA_VERSION)
    assert [e.dataset for e in Ledger.open(path).entries()] == ["d", "after"]


def test_concurrent_first_charges_migrate_once(tmp_path: Path) -> None:
    path = copy_fixture(tmp_path, "ledger_v1_basic.db")
    errors: list[BaseException] = []

    def charge(i: int) -> None:
        try:
            Ledger.open(path).charge(0.0625, dataset=f"t{i}")
        except BaseException as exc:  # collected for the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=charge, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    entries = Ledger.open(path).entries()
    assert len(entries) == 5 + 8
    assert ds.Accountant(ledger=path).spent == (1.425, 1e-6)
    assert _meta(path)["schema_version"] == str(SCHEMA_VERSION)
    con = sqlite3.connect(path)
    columns = [r[1] for r in con.execute("PRAGMA table_info(charges)")]
    con.close()
    assert columns.count("rho") == 1


def test_newer_and_unknown_schema_versions_are_refused_untouched(tmp_path: Path) -> None:
    for version, fragment in ((str(SCHEMA_VERSION + 1), "upgrade dpsense"), ("x", "versions 1")):
        path = tmp_path / f"v{version}.db"
        Ledger.create(path, epsilon=1.0)
        con = sqlite3.connect(path)
        con.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (version,))
        con.commit()
        con.close()
        digest = file_digest(path)
        with pytest.raises(LedgerError, match=fragment):
            Ledger.open(path)
        assert file_digest(path) == digest


def test_migrations_lead_from_version_1_to_the_current_one() -> None:
    assert [m.to_version for m in ledger_schema.MIGRATIONS] == list(range(2, SCHEMA_VERSION + 1))
    assert all(m.statements and m.why for m in ledger_schema.MIGRATIONS)


def test_a_rho_ledger_stores_its_budget_and_each_charge_split(tmp_path: Path) -> None:
    path = tmp_path / "rho.db"
    Ledger.create(path, rho=0.5, delta=1e-6, approx_delta=1e-5)
    meta = _meta(path)
    assert (meta["budget"], meta["total_rho"], meta["zcdp_delta"], meta["approx_delta"]) == (
        "rho",
        "0.5",
        "0.000001",
        "0.00001",
    )
    ledger = Ledger.open(path)
    assert ledger.budget == "rho"
    assert ledger.composition == "zcdp"
    acct = ds.Accountant(ledger=path)
    acct.charge(0.2, rho=0.01, approx_delta=2e-6, dataset="sel")
    acct.charge(0.4)
    (first, second) = Ledger.open(path).entries()
    assert (first.rho, first.delta, first.epsilon) == (
        Decimal("0.01"),
        Decimal("0.000002"),
        Decimal("0.2"),
    )
    assert (second.rho, second.delta) == (Decimal("0.08"), Decimal(0))
    assert first.to_dict()["rho"] == 0.01
    with pytest.raises(LedgerError, match=r"rho > 0"):
        Ledger.create(tmp_path / "bad.db", rho=0.5, delta=0.0)
    with pytest.raises(LedgerError, match="not both"):
        Ledger.create(tmp_path / "bad.db", rho=0.5, epsilon=1.0, delta=1e-6)
