"""The ledger as the release log: public outputs kept with each charge, nothing private.

``fixtures/ledger_v2_*.db`` were written by the code of schema version 2 (commit bb84080):
an epsilon budget (2.0, 1e-5) with a global mean, a grouped median by public keys, a
refused propose-test-release and a direct charge; a rho budget (0.5, delta' 1e-6) with one
global mean.
"""

from __future__ import annotations

import contextlib
import json
import re
import signal
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.accounting.ledger_files import copy_fixture, file_digest

import dpsense as ds
from dpsense.accounting import SCHEMA_VERSION, Ledger
from dpsense.accounting.release_log import decode, encode, outputs_of
from dpsense.cli import main
from dpsense.methods.smooth import plan_smooth, smooth_scale
from dpsense.noise.rng import SeededRandom

# what the schema-version-2 code reported for its fixtures
V2_BASIC = {"spent": (1.4, 1e-06), "remaining": (0.6, 9e-06)}
V2_RHO = {
    "spent": (2.1826087079049556, 1.0000000000000002e-06),
    "remaining": (5.237681780424114, 0.0),
}

# raw values that cannot appear by chance in a released value, an accuracy or a label
RAW = np.array([101.2345, 103.4567, 105.6789, 194.321, 196.5432, 198.7654, 199.1357])
# many distinct values, so that a median or a mean released from them is not a raw value
N_ROWS = 4321  # the number of records: private under add-remove


def _numbers(tree: Any) -> list[float]:
    """Every number in a stored outputs dictionary."""
    if isinstance(tree, dict):
        return [v for item in tree.values() for v in _numbers(item)]
    if isinstance(tree, list):
        return [v for item in tree for v in _numbers(item)]
    if isinstance(tree, int | float) and not isinstance(tree, bool):
        return [float(tree)]
    return []


def _stored_text(path: Path) -> str:
    con = sqlite3.connect(path)
    try:
        rows = con.execute("SELECT outputs FROM charges WHERE outputs IS NOT NULL").fetchall()
    finally:
        con.close()
    return "\n".join(r[0] for r in rows)


# -- migration -------------------------------------------------------------------------------


def test_a_version_2_ledger_opens_as_it_was_and_reading_leaves_it_untouched(
    tmp_path: Path,
) -> None:
    path = copy_fixture(tmp_path, "ledger_v2_basic.db")
    digest = file_digest(path)
    acct = ds.Accountant(ledger=path)
    assert acct.spent == V2_BASIC["spent"]
    assert acct.remaining == V2_BASIC["remaining"]
    entries = acct.entries()
    assert [e.status for e in entries] == ["answered", "answered", "refused", "charged"]
    assert all(e.outputs is None for e in entries)  # version 2 kept no outputs
    rho = ds.Accountant(ledger=copy_fixture(tmp_path, "ledger_v2_rho.db"))
    assert rho.spent == V2_RHO["spent"]
    assert rho.remaining == V2_RHO["remaining"]
    assert file_digest(path) == digest


def test_a_new_release_migrates_a_version_2_ledger_and_keeps_its_outputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("ledger_v2_basic.db", "ledger_v2_rho.db"):
        path = copy_fixture(tmp_path, name)
        before = Ledger.open(path).entries()
        acct = ds.Accountant(ledger=path)
        rel = acct.release(
            RAW, ds.Mean(100, 200), epsilon=0.1, method="global", rng=SeededRandom(5)
        )
        after = acct.entries()
        assert after[: len(before)] == before  # old charges kept, still without outputs
        assert all(e.outputs is None for e in after[: len(before)])
        assert after[-1].outputs is not None
        (row,) = after[-1].outputs["statistics"][0]["rows"]
        assert row["value"] == rel.value
        con = sqlite3.connect(path)
        version = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        con.close()
        assert version == (str(SCHEMA_VERSION),) == ("3",)
        # budget show still works on the migrated file, with its old keys
        assert main(["budget", "show", str(path), "--json"]) == 0
        shown = json.loads(capsys.readouterr().out)
        assert len(shown["charges"]) == len(before) + 1
        assert "outputs" not in shown["charges"][-1]


def test_a_refused_charge_leaves_a_version_2_ledger_untouched(tmp_path: Path) -> None:
    path = copy_fixture(tmp_path, "ledger_v2_basic.db")
    digest = file_digest(path)
    with pytest.raises(ds.BudgetExceededError):
        ds.Accountant(ledger=path).release(RAW, ds.Mean(100, 200), epsilon=1.0)
    assert file_digest(path) == digest


# -- what is stored --------------------------------------------------------------------------


def _people() -> dict[str, list[Any]]:
    person = [f"p{i // 3}" for i in range(42)]
    region = ["north" if i % 2 else "south" for i in range(42)]
    income = [float(RAW[i % len(RAW)]) for i in range(42)]
    return {"person": person, "region": region, "income": income}


def test_the_log_keeps_values_accuracy_groups_and_the_guarantee(tmp_path: Path) -> None:
    acct = ds.Accountant(epsilon=3.0, delta=1e-5, ledger=tmp_path / "l.db")
    grouped = acct.release(
        _people(),
        ds.Median(100, 200),
        column="income",
        by="region",
        keys=["north", "south"],
        privacy_unit="person",
        max_rows_per_unit=3,
        epsilon=0.5,
        rng=SeededRandom(1),
        dataset="people",
    )
    mean = acct.release(
        RAW,
        ds.Mean(100, 200),
        epsilon=0.5,
        method="global",
        neighbours="substitute",  # n public: the scale and the accuracy are public
        rng=SeededRandom(2),
    )
    refused = acct.release(
        RAW,
        ds.Median(100, 200),
        epsilon=0.3,
        delta=1e-6,
        method="ptr",
        bound=1e-3,
        rng=SeededRandom(3),
    )
    assert refused.refused
    g, m, r = (e.outputs for e in acct.entries())
    assert g is not None
    assert m is not None
    assert r is not None
    assert g["guarantee"] == {
        "kind": "pure",
        "neighbours": "add-remove",
        "privacy_unit": "person",
        "max_rows_per_unit": 3,
        "max_groups_per_unit": 1,
    }
    (stat,) = g["statistics"]
    assert (stat["statistic"], stat["column"], stat["by"], stat["bounds"]) == (
        "median",
        "income",
        ["region"],
        [100.0, 200.0],
    )
    assert stat["selection"] == "public keys"
    assert [row["group"] for row in stat["rows"]] == [{"region": "north"}, {"region": "south"}]
    assert [row["value"] for row in stat["rows"]] == [grouped[k].value for k in ("north", "south")]
    (row,) = m["statistics"][0]["rows"]
    assert row["value"] == mean.value
    assert row["accuracy"] == mean.accuracy(0.05) is not None
    assert row["scale"] == mean.scale
    assert m["guarantee"]["neighbours"] == "substitute"
    assert r["guarantee"]["kind"] == "approximate"
    (row,) = r["statistics"][0]["rows"]
    assert (row["refused"], row["value"]) == (True, None)
    assert r["statistics"][0]["parameters"]["bound"] == 1e-3
    assert [e.status for e in acct.entries()] == ["answered", "answered", "refused"]


def test_no_raw_value_row_count_or_smooth_scale_is_stored(tmp_path: Path) -> None:
    """The release log holds released outputs only: never a record, n (under add-remove),
    or a smooth-sensitivity noise scale, which is a function of the data."""
    path = tmp_path / "l.db"
    acct = ds.Accountant(epsilon=5.0, delta=1e-5, ledger=path)
    spread = 100.0 + (np.arange(N_ROWS - len(RAW)) * 0.0231457) % 100.0
    big = np.concatenate([RAW, spread])
    stat = ds.Median(100, 200)
    acct.release(big, stat, epsilon=0.5, method="smooth", rng=SeededRandom(4))
    acct.release(big, ds.Mean(100, 200), epsilon=0.5, rng=SeededRandom(4))
    acct.release(
        _people(),
        ds.Mean(100, 200),
        column="income",
        by="region",
        epsilon=0.5,
        delta=1e-6,
        privacy_unit="person",
        max_rows_per_unit=3,
        rng=SeededRandom(6),
    )
    secret = float(smooth_scale(np.sort(big), stat, "add-remove", plan_smooth(0.5, 0.0, None)))
    text = _stored_text(path)
    stored = [n for e in acct.entries() if e.outputs for n in _numbers(e.outputs)]
    assert stored  # the outputs were recorded
    for raw in RAW:
        assert f"{raw}" not in text
    assert float(N_ROWS) not in stored
    assert re.search(rf"(?<![\d.]){N_ROWS}(?![\d.])", text) is None  # not as text either
    assert not any(abs(v - secret) <= 1e-9 * secret for v in stored), "smooth scale stored"
    smooth_row = acct.entries()[0].outputs["statistics"][0]["rows"][0]  # type: ignore[index]
    assert smooth_row["scale"] is None
    assert smooth_row["accuracy"] is None
    # the whole file: no raw value anywhere (labels, receipts, outputs)
    blob = path.read_bytes()
    assert not any(f"{raw}".encode() in blob for raw in RAW)


def test_an_in_memory_accountant_keeps_the_same_log() -> None:
    acct = ds.Accountant(rho=1.0, delta=1e-6)
    rel = acct.release(RAW, ds.Mean(100, 200), epsilon=0.5, method="global", rng=SeededRandom(2))
    acct.charge(0.1, dataset="direct")
    first, second = acct.entries()
    assert first.status == "answered"
    assert first.outputs is not None
    assert first.outputs["guarantee"]["kind"] == "zcdp"
    assert first.outputs["statistics"][0]["rows"][0]["value"] == rel.value
    assert (second.status, second.outputs, second.dataset) == ("charged", None, "direct")
    assert first.rho is not None
    assert first.rho > 0


def test_several_named_statistics_share_one_charge() -> None:
    """The hook for a query of several statistics: one charge, one entry per name."""
    mean = ds.release(RAW, ds.Mean(100, 200), epsilon=0.5, method="global", rng=SeededRandom(1))
    grouped = ds.release(
        _people(),
        ds.Median(100, 200),
        column="income",
        by="region",
        keys=["north", "south"],
        epsilon=0.5,
        rng=SeededRandom(2),
    )
    out = outputs_of({"avg": mean, "mid": grouped}, column={"avg": "x", "mid": "income"})
    assert [s["name"] for s in out["statistics"]] == ["avg", "mid"]
    assert [s["column"] for s in out["statistics"]] == ["x", "income"]
    assert out["statistics"][1]["by"] == ["region"]
    assert decode(encode(out)) == out
    nan = ds.Release(float("nan"), False, 1.0, 0.0, "global", "laplace", 1.0, "add-remove")
    assert outputs_of(nan)["statistics"][0]["rows"][0]["value"] == "nan"
    assert decode("not json") is None


# -- crash safety ----------------------------------------------------------------------------


class _FailAtCommit:
    """A connection whose COMMIT of an outputs write fails (raises, or kills the process)."""

    def __init__(self, con: sqlite3.Connection, action: Any) -> None:
        self._con, self._action, self._writing = con, action, False

    def execute(self, sql: str, *args: Any) -> Any:
        if "outputs" in sql and sql.startswith("UPDATE"):
            self._writing = True
        if sql == "COMMIT" and self._writing:
            self._action()
        return self._con.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._con, name)


def _boom() -> None:
    raise RuntimeError("simulated failure before the commit")


def test_a_failure_while_recording_outputs_leaves_the_ledger_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "l.db"
    acct = ds.Accountant(epsilon=1.0, ledger=path)
    acct.release(RAW, ds.Mean(100, 200), epsilon=0.25, method="global", rng=SeededRandom(1))
    original = Ledger._connection
    digests: list[str] = []

    @contextlib.contextmanager
    def failing(self: Ledger, *, write: bool) -> Iterator[Any]:
        with original(self, write=write) as con:
            digests.append(file_digest(path))  # the file before this transaction
            yield _FailAtCommit(con, _boom)

    monkeypatch.setattr(Ledger, "_connection", failing)
    with pytest.raises(RuntimeError, match="simulated"):
        acct.release(RAW, ds.Mean(100, 200), epsilon=0.25, method="global", rng=SeededRandom(2))
    monkeypatch.undo()
    assert file_digest(path) == digests[-1]  # the outcome write left no trace
    first, second = Ledger.open(path).entries()
    assert first.status == "answered"
    assert first.outputs is not None
    assert (second.status, second.outputs) == ("charged", None)  # spent, nothing recorded
    assert acct.spent == (0.5, 0.0)


_KILLED_AT_COMMIT = textwrap.dedent(
    """
    import contextlib, os, signal, sys
    import numpy as np
    import dpsense as ds
    from dpsense.accounting import Ledger
    sys.path.insert(0, sys.argv[2])
    from test_release_log import RAW, _FailAtCommit

    original = Ledger._connection

    @contextlib.contextmanager
    def dying(self, *, write):
        with original(self, write=write) as con:
            yield _FailAtCommit(con, lambda: os.kill(os.getpid(), signal.SIGKILL))

    Ledger._connection = dying
    acct = ds.Accountant(ledger=sys.argv[1])
    acct.release(RAW, ds.Mean(100, 200), epsilon=0.25, method="global", rng=1)
    """
)


def test_sigkill_while_recording_outputs_leaves_a_charged_entry(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    ds.Accountant(epsilon=1.0, ledger=path)
    proc = subprocess.run(
        [sys.executable, "-c", _KILLED_AT_COMMIT, str(path), str(Path(__file__).parent)],
        check=False,
        timeout=120,
    )
    assert proc.returncode == -signal.SIGKILL
    journal = path.with_name(path.name + "-journal")
    assert journal.exists()
    assert journal.stat().st_size > 0
    (entry,) = Ledger.open(path).entries()  # recovery rolls the outcome write back
    assert (entry.status, entry.outputs) == ("charged", None)
    assert ds.Accountant(ledger=path).spent == (0.25, 0.0)


def test_a_query_of_several_statistics_is_one_charge_with_every_output(tmp_path: Path) -> None:
    path = tmp_path / "q.db"
    acct = ds.Accountant(epsilon=2.0, delta=1e-5, ledger=path)
    query = {
        "people": ds.Count(),
        "mid": ("income", ds.Median(100, 200)),
        "avg": ("income", ds.Mean(100, 200)),
    }
    res = acct.release(
        _people(),
        query,
        by="region",
        keys=["north", "south"],
        privacy_unit="person",
        max_rows_per_unit=3,
        epsilon=0.9,
        rng=SeededRandom(8),
        where="income > 100",
        dataset="people",
    )
    (entry,) = acct.entries()
    assert entry.outputs is not None
    assert entry.outputs["where"] == "income > 100"
    assert entry.outputs["guarantee"]["privacy_unit"] == "person"
    stats = entry.outputs["statistics"]
    assert [s["name"] for s in stats] == ["people", "mid", "avg"]
    assert [s["column"] for s in stats] == [None, "income", "income"]
    assert stats[1]["bounds"] == [100.0, 200.0]
    for stat in stats:
        assert [r["group"]["region"] for r in stat["rows"]] == ["north", "south"]
        values = [r["value"] for r in stat["rows"]]
        assert values == [res[stat["name"]][k].value for k in ("north", "south")]
