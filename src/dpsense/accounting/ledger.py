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
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import stat
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Final

from dpsense.accounting.composition import Charge, as_decimal, compose
from dpsense.errors import BudgetExceededError, DPSenseError

__all__ = ["SCHEMA_VERSION", "Ledger", "LedgerEntry", "LedgerError"]

SCHEMA_VERSION: Final = 1
_FORMAT: Final = "dpsense-ledger"
_STATUSES: Final = ("charged", "answered", "refused")
_SCHEMA: Final = f"""
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
    status TEXT NOT NULL CHECK (status IN {_STATUSES!r})
);
"""


class LedgerError(DPSenseError):
    """The ledger file cannot be used (missing, corrupt, locked, read-only, wrong version).

    The file is left untouched.
    """


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
        }


def _recover_hot_journal(path: Path, timeout: float) -> None:
    """Roll back a transaction interrupted by a crash before reading.

    A process killed inside a write transaction leaves a "hot" rollback journal; only a
    read-write connection can roll it back, restoring the last committed state (SQLite's
    own crash recovery). Reads therefore open read-write once when such a journal exists.
    A read-only file that needs recovery is reported, not touched.
    """
    journal = path.with_name(path.name + "-journal")
    if not journal.exists() or journal.stat().st_size == 0:
        return
    if not os.stat(path).st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        raise LedgerError(
            f"The ledger file {path} was interrupted mid-write and needs recovery, but it is "
            "read-only; make it writable and retry. It was left untouched."
        )
    try:
        con = sqlite3.connect(f"file:{path}?mode=rw", uri=True, timeout=timeout)
        try:
            con.execute("SELECT count(*) FROM sqlite_master").fetchone()
        finally:
            con.close()
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc) or "busy" in str(exc):
            raise LedgerError(
                f"The ledger file {path} is locked by another process; try again."
            ) from None
        raise LedgerError(f"The ledger file {path} could not be recovered.") from None
    except sqlite3.DatabaseError:
        raise LedgerError(
            f"The file {path} is not a dpsense ledger or is corrupt; it was left untouched."
        ) from None


def _publish(tmp: Path, target: Path) -> None:
    """Move a finished ledger into place atomically without overwriting anything.

    A hard link fails if the target exists, so a crash leaves either no ledger or a
    complete one. Where hard links are not supported, the name is reserved with an
    exclusive create and the finished file replaces the (empty) reservation atomically.
    """
    try:
        os.link(tmp, target)
        return
    except FileExistsError:
        raise
    except OSError as exc:
        if exc.errno not in (
            errno.EPERM,
            errno.ENOTSUP,
            errno.EOPNOTSUPP,
            errno.ENOSYS,
            errno.EXDEV,
            errno.EMLINK,
        ):
            raise
    fd = os.open(target, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    os.close(fd)
    os.replace(tmp, target)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


class Ledger:
    """A total (epsilon, delta) budget and the charges against it, in one SQLite file.

    Use :meth:`create` for a new ledger and :meth:`open` for an existing one.
    """

    def __init__(
        self,
        path: Path,
        total: tuple[Decimal, Decimal],
        composition: str,
        delta_slack: Decimal,
        timeout: float,
    ) -> None:
        self.path = path
        self.total_epsilon, self.total_delta = total
        self.composition = composition
        self.delta_slack = delta_slack
        self.timeout = timeout

    # -- opening ------------------------------------------------------------------------
    @classmethod
    def create(
        cls,
        path: str | os.PathLike[str],
        *,
        epsilon: object,
        delta: object = 0.0,
        composition: str = "basic",
        delta_slack: object = 0.0,
        timeout: float = 30.0,
    ) -> Ledger:
        """Create a new ledger file with a total budget; refuses to overwrite a file."""
        p = Path(path)
        eps = as_decimal(epsilon, "epsilon")
        dlt = as_decimal(delta, "delta")
        slack = as_decimal(delta_slack, "delta_slack")
        if eps <= 0 or dlt >= 1 or slack >= 1:
            raise LedgerError("A ledger needs a total epsilon > 0 and a delta in [0, 1).")
        if composition not in ("basic", "advanced"):
            raise LedgerError("The composition of a ledger must be 'basic' or 'advanced'.")
        if composition == "advanced" and not 0 < slack <= dlt:
            raise LedgerError(
                "Advanced composition needs a delta_slack in (0, delta]: it is spent from the "
                "total delta."
            )
        if p.exists():
            raise LedgerError(f"The ledger file {p} already exists; it was left untouched.")
        if not p.parent.exists():
            raise LedgerError(f"The folder of the ledger file {p} does not exist.")
        tmp = p.with_name(f".{p.name}.{uuid.uuid4().hex}.tmp")
        try:
            con = sqlite3.connect(tmp, isolation_level=None)
            try:
                con.executescript(_SCHEMA)
                con.executemany(
                    "INSERT INTO meta (key, value) VALUES (?, ?)",
                    [
                        ("format", _FORMAT),
                        ("schema_version", str(SCHEMA_VERSION)),
                        ("total_epsilon", str(eps)),
                        ("total_delta", str(dlt)),
                        ("composition", composition),
                        ("delta_slack", str(slack)),
                        ("created", _now()),
                    ],
                )
            finally:
                con.close()
            _publish(tmp, p)
        except FileExistsError:
            raise LedgerError(
                f"The ledger file {p} already exists; it was left untouched."
            ) from None
        except OSError as exc:
            raise LedgerError(f"Cannot create the ledger file {p}: {exc.strerror}.") from None
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink()
        return cls(p, (eps, dlt), composition, slack, timeout)

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, timeout: float = 30.0) -> Ledger:
        """Open and validate an existing ledger (read-only until a charge)."""
        p = Path(path)
        if not p.is_file():
            raise LedgerError(
                f"No ledger file at {p}; create one with 'dpsense budget init {p} --epsilon E'."
            )
        _recover_hot_journal(p, timeout)
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
        if meta.get("format") != _FORMAT or check is None or check[0] != "ok":
            raise LedgerError(
                f"The file {p} is not a dpsense ledger or is corrupt; it was left untouched."
            )
        if meta.get("schema_version") != str(SCHEMA_VERSION):
            raise LedgerError(
                f"The ledger {p} has schema version {meta.get('schema_version')!r}; this "
                f"dpsense reads version {SCHEMA_VERSION}."
            )
        try:
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
            _recover_hot_journal(self.path, self.timeout)
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
        except sqlite3.OperationalError as exc:
            text = str(exc)
            if "locked" in text or "busy" in text:
                raise LedgerError(
                    f"The ledger file {self.path} stayed locked by another process for "
                    f"{self.timeout:g} s; nothing was charged. Try again."
                ) from None
            if "readonly" in text or "read-only" in text:
                raise LedgerError(
                    f"The ledger file {self.path} is read-only; nothing was charged."
                ) from None
            raise LedgerError(f"The ledger file {self.path} could not be used ({text}).") from None
        except sqlite3.DatabaseError:
            raise LedgerError(
                f"The ledger file {self.path} is corrupt; nothing was charged."
            ) from None
        finally:
            con.close()

    @staticmethod
    def _entries(con: sqlite3.Connection) -> list[LedgerEntry]:
        rows = con.execute(
            "SELECT id, time, dataset, statistic, method, epsilon, delta, group_id, status "
            "FROM charges ORDER BY id"
        ).fetchall()
        return [
            LedgerEntry(r[0], r[1], r[2], r[3], r[4], Decimal(r[5]), Decimal(r[6]), r[7], r[8])
            for r in rows
        ]

    def entries(self) -> list[LedgerEntry]:
        """Every charge, oldest first."""
        with self._connection(write=False) as con:
            return self._entries(con)

    def _spent_of(
        self, entries: list[LedgerEntry], extra: Charge | None = None
    ) -> tuple[Decimal, Decimal]:
        charges = [Charge(e.epsilon, e.delta, e.group) for e in entries]
        if extra is not None:
            charges.append(extra)
        return compose(charges, composition=self.composition, delta_slack=self.delta_slack)

    def spent(self) -> tuple[Decimal, Decimal]:
        """(epsilon, delta) spent so far under the ledger's composition rule."""
        return self._spent_of(self.entries())

    def remaining(self) -> tuple[Decimal, Decimal]:
        """(epsilon, delta) still available (never negative)."""
        eps, dlt = self.spent()
        return (max(self.total_epsilon - eps, Decimal(0)), max(self.total_delta - dlt, Decimal(0)))

    # -- charging -----------------------------------------------------------------------
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
        """Record a charge, atomically, or raise :class:`BudgetExceededError`.

        Returns the charge id, for :meth:`record_outcome`. The charge is committed to disk
        before this returns.
        """
        request = Charge(as_decimal(epsilon, "epsilon"), as_decimal(delta, "delta"), group)
        with self._connection(write=True) as con:
            con.execute("BEGIN IMMEDIATE")
            try:
                entries = self._entries(con)
                before = self._spent_of(entries)
                after = self._spent_of(entries, request)
                if after[0] > self.total_epsilon or after[1] > self.total_delta:
                    remaining = (
                        float(max(self.total_epsilon - before[0], Decimal(0))),
                        float(max(self.total_delta - before[1], Decimal(0))),
                    )
                    raise BudgetExceededError(
                        remaining, (float(request.epsilon), float(request.delta))
                    )
                cur = con.execute(
                    "INSERT INTO charges (time, dataset, statistic, method, epsilon, delta, "
                    "group_id, status) VALUES (?, ?, ?, ?, ?, ?, ?, 'charged')",
                    (
                        _now(),
                        dataset,
                        statistic,
                        method,
                        str(request.epsilon),
                        str(request.delta),
                        group,
                    ),
                )
                con.execute("COMMIT")
            except BaseException:
                if con.in_transaction:
                    con.execute("ROLLBACK")
                raise
            return int(cur.lastrowid or 0)

    def record_outcome(self, charge_id: int, *, refused: bool, method: str | None = None) -> None:
        """Mark a charge answered or refused (its budget stays spent either way)."""
        status = "refused" if refused else "answered"
        with self._connection(write=True) as con:
            con.execute("BEGIN IMMEDIATE")
            try:
                if method is None:
                    con.execute("UPDATE charges SET status = ? WHERE id = ?", (status, charge_id))
                else:
                    con.execute(
                        "UPDATE charges SET status = ?, method = ? WHERE id = ?",
                        (status, method, charge_id),
                    )
                con.execute("COMMIT")
            except BaseException:
                if con.in_transaction:
                    con.execute("ROLLBACK")
                raise
