"""A privacy-budget ledger in a SQLite file: crash-safe and safe under concurrent use.

Guarantees (docs/accounting.md):

* **A charge is committed before the answer is computed.** :meth:`Ledger.charge` runs in
  one ``BEGIN IMMEDIATE`` transaction — it takes the database's write lock, reads every
  charge, checks the budget with exact decimal arithmetic and inserts the new charge — and
  commits (SQLite's rollback journal with ``synchronous=FULL``) before returning. A process
  killed at any point leaves either no charge or a complete one: a crash may lose an
  answer, never un-spend budget.
* **Concurrent processes** serialise on the write lock, so two analysts cannot both take
  the last of the budget; a waiting process retries for ``timeout`` seconds.
* **The file is never modified when something is wrong**: a file that is not a dpsense
  ledger, is corrupt, has another schema version, is read-only (no write permission bits,
  honoured even for root) or stays locked gives a :class:`LedgerError` and is left as it
  was. The one write a read may trigger is SQLite's own crash recovery: after a process was
  killed mid-transaction, the interrupted transaction is rolled back to the last committed
  state.
* Each charge records the time, a dataset label, the statistic, the method, epsilon,
  delta, a parallel-group id and whether the answer was refused — never data values.
  An answered or refused charge also keeps the release's public outputs (values, accuracy,
  the receipt; :mod:`dpsense.accounting.release_log`), written in the transaction that
  marks it answered, so a crash leaves the charge as it was ("charged", no outputs).
* **Two kinds of budget**: a total (epsilon, delta) under basic or advanced composition, or
  a zCDP budget (total rho, the conversion's delta' and a cap on approximate deltas,
  :class:`~dpsense.accounting.composition.RhoBudget`) whose charges record their rho and
  approximate delta. The schema is versioned (:mod:`dpsense.accounting.schema`); files of
  an older version are read as they are and migrated inside the first write transaction.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, Final

from dpsense.accounting import release_log, schema
from dpsense.accounting._files import (
    LedgerError,
    recover_hot_journal,
    sqlite_failure,
    write_new,
)
from dpsense.accounting.composition import Charge, RhoBudget, ZcdpCharge, as_decimal, compose
from dpsense.accounting.schema import SCHEMA_VERSION
from dpsense.errors import Assign, BudgetExceededError, Door, Name, Param
from dpsense.params import check_delta, check_epsilon

__all__ = ["SCHEMA_VERSION", "Ledger", "LedgerEntry", "LedgerError"]


_ENTRY_COLUMNS: Final = (
    "id", "time", "dataset", "statistic", "method", "epsilon", "delta", "group_id", "status",
    "rho", "outputs",
)  # fmt: skip
"""The columns of a charge, in :class:`LedgerEntry`'s order (a file of schema version 1
has no rho, one before version 3 no outputs)."""


@dataclass(frozen=True)
class LedgerEntry:
    """One charge as recorded (no data values)."""

    id: int
    time: str
    dataset: str
    statistic: str
    method: str
    epsilon: Decimal
    delta: Decimal
    group: str | None
    status: str
    rho: Decimal | None = None
    """The charged rho (rho budgets; ``delta`` is then the charged approximate delta and
    ``epsilon`` the release's nominal epsilon, not composed)."""
    outputs: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)
    """The released public outputs (:mod:`dpsense.accounting.release_log`); None for a
    charge with none recorded."""

    @property
    def refused(self) -> bool:
        """True when the release was refused (its budget is spent all the same)."""
        return self.status == "refused"

    def to_dict(self) -> dict[str, object]:
        """Plain data for JSON."""
        return {
            "id": self.id,
            "time": self.time,
            "dataset": self.dataset,
            "statistic": self.statistic,
            "method": self.method,
            "epsilon": float(self.epsilon),
            "delta": float(self.delta),
            "group": self.group,
            "status": self.status,
            "refused": self.refused,
            "rho": None if self.rho is None else float(self.rho),
        }


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


class Ledger:
    """A total budget and the charges against it, in one SQLite file.

    The budget is a total (epsilon, delta) (``rho_budget`` None) or a zCDP budget
    (``rho_budget``; ``total_epsilon``/``total_delta`` are then its (epsilon, delta)
    equivalent, for display). Use :meth:`create` for a new ledger and :meth:`open` for an
    existing one.
    """

    def __init__(
        self,
        path: Path,
        total: tuple[Decimal, Decimal],
        composition: str,
        delta_slack: Decimal,
        timeout: float,
        rho_budget: RhoBudget | None = None,
    ) -> None:
        self.path = path
        self.total_epsilon, self.total_delta = total
        self.composition = composition
        self.delta_slack = delta_slack
        self.timeout = timeout
        self.rho_budget = rho_budget

    @property
    def budget(self) -> str:
        """ "epsilon" or "rho": the kind of budget the file holds."""
        return "epsilon" if self.rho_budget is None else "rho"

    @staticmethod
    def _rho_view(budget: RhoBudget) -> tuple[Decimal, Decimal]:
        eps, dlt = budget.total
        return (Decimal(repr(eps)), Decimal(repr(dlt)))

    # -- opening ------------------------------------------------------------------------
    @classmethod
    def create(
        cls,
        path: str | os.PathLike[str],
        *,
        epsilon: object = None,
        delta: object = 0.0,
        composition: str = "basic",
        delta_slack: object = 0.0,
        rho: object = None,
        approx_delta: object = 0.0,
        timeout: float = 30.0,
    ) -> Ledger:
        """Create a new ledger file with a total budget; refuses to overwrite a file.

        Pass ``epsilon`` (and ``delta``, ``composition``, ``delta_slack``) for an (epsilon,
        delta) budget, or ``rho`` (with ``delta``, the conversion's delta', and
        ``approx_delta``, the cap on approximate deltas) for a zCDP budget.
        """
        p = Path(path)
        # the budget's numbers in the words every release uses for them
        if epsilon is not None and not isinstance(epsilon, Decimal):
            check_epsilon(epsilon, where="Ledger.create")
        if not isinstance(delta, Decimal):  # an Accountant's, checked there
            check_delta(delta, where="Ledger.create")
        dlt = as_decimal(delta, "delta")
        rho_budget: RhoBudget | None = None
        if rho is not None:
            if epsilon is not None:
                raise LedgerError("A ledger holds an epsilon budget or a rho budget, not both.")
            rho_budget = _rho_budget(rho, dlt, approx_delta)
            meta = {
                "budget": "rho",
                "total_rho": str(rho_budget.rho),
                "zcdp_delta": str(dlt),
                "approx_delta": str(rho_budget.approx_delta),
                "composition": "zcdp",
            }
            totals, slack, composition = cls._rho_view(rho_budget), Decimal(0), "zcdp"
        else:
            eps, slack = _epsilon_budget(epsilon, dlt, composition, delta_slack)
            meta = {
                "budget": "epsilon",
                "total_epsilon": str(eps),
                "total_delta": str(dlt),
                "composition": composition,
                "delta_slack": str(slack),
            }
            totals = (eps, dlt)
        write_new(p, lambda con: schema.create(con, {**meta, "created": _now()}))
        return cls(p, totals, composition, slack, timeout, rho_budget)

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, timeout: float = 30.0) -> Ledger:
        """Open and validate an existing ledger (read-only until a charge; a file of an
        older schema version is migrated by its first charge, not here)."""
        p = Path(path)
        if not p.is_file():
            raise LedgerError(
                f"No ledger file at {p}; create one with ",
                Door("ds.Accountant", f"(ledger={str(p)!r}, epsilon=...)", str(p)),
                ".",
            )
        recover_hot_journal(p, timeout)
        try:
            con = sqlite3.connect(f"file:{p}?mode=ro", uri=True, timeout=timeout)
        except sqlite3.Error:
            raise LedgerError(f"Cannot open the ledger file {p}.") from None
        try:
            meta = dict(con.execute("SELECT key, value FROM meta").fetchall())
            con.execute(
                "SELECT id, time, dataset, statistic, method, epsilon, delta, group_id, "
                "status FROM charges LIMIT 1"
            ).fetchall()
            check = con.execute("PRAGMA quick_check").fetchone()
        except sqlite3.DatabaseError as exc:
            if "locked" in str(exc):
                raise LedgerError(
                    f"The ledger file {p} is locked by another process; try again."
                ) from None
            raise LedgerError(
                f"The file {p} is not a dpsense ledger or is corrupt; it was left untouched."
            ) from None
        finally:
            con.close()
        if meta.get("format") != schema.FORMAT or check is None or check[0] != "ok":
            raise LedgerError(
                f"The file {p} is not a dpsense ledger or is corrupt; it was left untouched."
            )
        version = schema.stored_version(meta)
        if version is None or not 1 <= version <= SCHEMA_VERSION:
            newer = version is not None and version > SCHEMA_VERSION
            raise LedgerError(
                f"The ledger {p} has schema version {meta.get('schema_version')!r}; this "
                f"dpsense reads versions 1 to {SCHEMA_VERSION}"
                + ("; upgrade dpsense to use it." if newer else ".")
            )
        try:
            if meta.get("budget", "epsilon") == "rho":
                budget = RhoBudget(
                    Decimal(meta["total_rho"]),
                    Decimal(meta["zcdp_delta"]),
                    Decimal(meta["approx_delta"]),
                )
                return cls(p, cls._rho_view(budget), "zcdp", Decimal(0), timeout, budget)
            total = (Decimal(meta["total_epsilon"]), Decimal(meta["total_delta"]))
            slack = Decimal(meta.get("delta_slack", "0"))
            composition = meta.get("composition", "basic")
        except (KeyError, ArithmeticError):
            raise LedgerError(
                f"The ledger {p} is corrupt (bad totals); it was left untouched."
            ) from None
        return cls(p, total, composition, slack, timeout)

    # -- reading ------------------------------------------------------------------------
    @contextlib.contextmanager
    def _connection(self, *, write: bool) -> Iterator[sqlite3.Connection]:
        if write and not (
            os.stat(self.path).st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
        ):
            raise LedgerError(
                f"The ledger file {self.path} is read-only; make it writable to record "
                "charges. It was left untouched."
            )
        if not write:
            recover_hot_journal(self.path, self.timeout)
        mode = "rw" if write else "ro"
        try:
            con = sqlite3.connect(
                f"file:{self.path}?mode={mode}",
                uri=True,
                timeout=self.timeout,
                isolation_level=None,
            )
        except sqlite3.Error:
            raise LedgerError(f"Cannot open the ledger file {self.path}.") from None
        try:
            con.execute("PRAGMA synchronous = FULL")
            yield con
        except sqlite3.DatabaseError as exc:
            raise sqlite_failure(
                exc,
                locked=f"The ledger file {self.path} stayed locked by another process for "
                f"{self.timeout:g} s; nothing was charged. Try again.",
                read_only=f"The ledger file {self.path} is read-only; nothing was charged.",
                failed=f"The ledger file {self.path} could not be used ({exc}).",
                corrupt=f"The ledger file {self.path} is corrupt; nothing was charged.",
            ) from None
        finally:
            con.close()

    @staticmethod
    def _entries(con: sqlite3.Connection) -> list[LedgerEntry]:
        # a file of schema version 1 has no rho column: its charges are epsilon charges;
        # one before version 3 has no outputs
        # (one static statement: every column, picked by name; a missing one reads NULL)
        cursor = con.execute("SELECT * FROM charges ORDER BY id")
        names = [d[0] for d in cursor.description]
        at = [names.index(c) if c in names else None for c in _ENTRY_COLUMNS]
        rows: list[tuple[Any, ...]] = [
            tuple(None if i is None else row[i] for i in at) for row in cursor.fetchall()
        ]
        return [
            LedgerEntry(
                r[0],
                r[1],
                r[2],
                r[3],
                r[4],
                Decimal(r[5]),
                Decimal(r[6]),
                r[7],
                r[8],
                None if r[9] is None else Decimal(r[9]),
                release_log.decode(r[10]),
            )
            for r in rows
        ]

    def entries(self) -> list[LedgerEntry]:
        """Every charge, oldest first."""
        with self._connection(write=False) as con:
            return self._entries(con)

    @staticmethod
    def _zcdp(entries: list[LedgerEntry]) -> list[ZcdpCharge]:
        return [ZcdpCharge(e.rho or Decimal(0), e.delta) for e in entries]

    def zcdp_charges(self) -> list[ZcdpCharge]:
        """The (rho, approximate delta) of every charge of a rho ledger, oldest first."""
        return self._zcdp(self.entries())

    def _spent_of(
        self, entries: list[LedgerEntry], extra: Charge | None = None
    ) -> tuple[Decimal, Decimal]:
        charges = [Charge(e.epsilon, e.delta, e.group) for e in entries]
        if extra is not None:
            charges.append(extra)
        return compose(charges, composition=self.composition, delta_slack=self.delta_slack)

    def spent(self) -> tuple[Decimal, Decimal]:
        """(epsilon, delta) spent so far under the ledger's composition rule (for a rho
        ledger, the (epsilon, delta) its spent rho and approximate deltas amount to)."""
        if self.rho_budget is not None:
            eps, dlt = self.rho_budget.spent(self.zcdp_charges())
            return (Decimal(repr(eps)), Decimal(repr(dlt)))
        return self._spent_of(self.entries())

    def remaining(self) -> tuple[Decimal, Decimal]:
        """(epsilon, delta) still available (never negative)."""
        if self.rho_budget is not None:
            left = self.rho_budget.remaining(self.zcdp_charges())
            return (Decimal(repr(left[0])), Decimal(repr(left[1])))
        eps, dlt = self.spent()
        return (max(self.total_epsilon - eps, Decimal(0)), max(self.total_delta - dlt, Decimal(0)))

    # -- charging -----------------------------------------------------------------------
    def _insert(
        self,
        check: Callable[[list[LedgerEntry]], None],
        values: tuple[str, str, str, str, str, str | None, str | None],
    ) -> int:
        """One write transaction: migrate an older file, read every charge, ``check`` the
        budget (it raises to refuse), insert the charge and commit. A refusal or a crash
        rolls everything back, the migration included."""
        with self._connection(write=True) as con:
            con.execute("BEGIN IMMEDIATE")
            try:
                schema.upgrade(con)
                check(self._entries(con))
                cur = con.execute(
                    "INSERT INTO charges (time, dataset, statistic, method, epsilon, delta, "
                    "group_id, rho, status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'charged')",
                    (_now(), *values),
                )
                con.execute("COMMIT")
            except BaseException:
                if con.in_transaction:
                    con.execute("ROLLBACK")
                raise
            return int(cur.lastrowid or 0)

    def charge(
        self,
        epsilon: object,
        delta: object = 0.0,
        *,
        dataset: str = "",
        statistic: str = "",
        method: str = "",
        group: str | None = None,
    ) -> int:
        """Record a charge to an (epsilon, delta) budget, atomically, or raise
        :class:`BudgetExceededError`.

        Returns the charge id, for :meth:`record_outcome`. The charge is committed to disk
        before this returns.
        """
        if self.rho_budget is not None:
            raise LedgerError(
                f"The ledger {self.path} holds a rho budget; charge it with charge_zcdp."
            )
        request = Charge(as_decimal(epsilon, "epsilon"), as_decimal(delta, "delta"), group)

        def check(entries: list[LedgerEntry]) -> None:
            after = self._spent_of(entries, request)
            if after[0] > self.total_epsilon or after[1] > self.total_delta:
                before = self._spent_of(entries)
                remaining = (
                    float(max(self.total_epsilon - before[0], Decimal(0))),
                    float(max(self.total_delta - before[1], Decimal(0))),
                )
                raise BudgetExceededError(remaining, (float(request.epsilon), float(request.delta)))

        values = (dataset, statistic, method, str(request.epsilon), str(request.delta))
        return self._insert(check, (*values, group, None))

    def charge_zcdp(
        self,
        request: ZcdpCharge,
        *,
        epsilon: object = 0.0,
        dataset: str = "",
        statistic: str = "",
        method: str = "",
    ) -> int:
        """Record a charge of (rho, approximate delta) to a rho budget, atomically, or raise
        :class:`BudgetExceededError`. ``epsilon`` is the release's nominal epsilon, kept as
        a label. Returns the charge id; the charge is committed before this returns."""
        budget = self.rho_budget
        if budget is None:
            raise LedgerError(
                f"The ledger {self.path} holds an (epsilon, delta) budget; charge it with charge."
            )

        def check(entries: list[LedgerEntry]) -> None:
            if not budget.admits(self._zcdp(entries), request):
                raise budget.exceeded(self._zcdp(entries), request)

        nominal = str(as_decimal(epsilon, "epsilon"))
        values = (dataset, statistic, method, nominal, str(request.delta))
        return self._insert(check, (*values, None, str(request.rho)))

    def record_outcome(
        self,
        charge_id: int,
        *,
        refused: bool,
        method: str | None = None,
        outputs: Mapping[str, Any] | None = None,
    ) -> None:
        """Mark a charge answered or refused (its budget stays spent either way) and store
        the release's public ``outputs`` (:func:`~dpsense.accounting.release_log.outputs_of`)
        in the same transaction: both are written, or neither."""
        status = "refused" if refused else "answered"
        text = None if outputs is None else release_log.encode(outputs)  # before the write
        with self._connection(write=True) as con:
            con.execute("BEGIN IMMEDIATE")
            try:
                schema.upgrade(con)
                con.execute(
                    "UPDATE charges SET status = ?, method = COALESCE(?, method), "
                    "outputs = COALESCE(?, outputs) WHERE id = ?",
                    (status, method, text, charge_id),
                )
                con.execute("COMMIT")
            except BaseException:
                if con.in_transaction:
                    con.execute("ROLLBACK")
                raise


def _rho_budget(rho: object, dlt: Decimal, approx_delta: object) -> RhoBudget:
    """A checked zCDP budget: rho > 0, the conversion's delta in (0, 1), and the cap on
    approximate deltas such that both sum below 1."""
    if not isinstance(rho, Decimal):  # an Accountant's is checked there
        check_epsilon(rho, "rho", where="Ledger.create")
    total_rho = as_decimal(rho, "rho")
    approx = as_decimal(approx_delta, "approx_delta")
    if total_rho <= 0 or not 0 < dlt < 1 or dlt + approx >= 1:
        raise LedgerError(
            "A rho ledger needs rho > 0, a delta in (0, 1) and delta + ",
            Name("approx_delta"),
            " < 1.",
        )
    return RhoBudget(total_rho, dlt, approx)


def _epsilon_budget(
    epsilon: object, dlt: Decimal, composition: str, delta_slack: object
) -> tuple[Decimal, Decimal]:
    """A checked (epsilon, delta) budget's total epsilon and delta slack."""
    if epsilon is None:
        raise LedgerError(
            "A new ledger needs a total budget: ", Assign("epsilon"), " or ", Assign("rho"), "."
        )
    eps = as_decimal(epsilon, "epsilon")
    slack = as_decimal(delta_slack, "delta_slack")
    if eps <= 0 or dlt >= 1 or slack >= 1:
        raise LedgerError("A ledger needs a total epsilon > 0 and a delta in [0, 1).")
    if composition not in ("basic", "advanced"):
        raise LedgerError(
            Param("composition", of="Ledger.create"),
            f" must be 'basic' or 'advanced'. Got {composition!r} instead.",
        )
    if composition == "advanced" and not 0 < slack <= dlt:
        raise LedgerError(
            "Advanced composition needs a ",
            Name("delta_slack"),
            " in (0, delta]: it is spent from the total delta.",
        )
    return eps, slack
