"""Files of the ledger: crash recovery before reading, and publishing a new file atomically."""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import stat
import uuid
from collections.abc import Callable
from pathlib import Path

from dpsense.errors import DPSenseError

__all__ = ["LedgerError", "publish", "recover_hot_journal", "sqlite_failure", "write_new"]


class LedgerError(DPSenseError):
    """The ledger file cannot be used (missing, corrupt, locked, read-only, wrong version).

    The file is left untouched.
    """


def sqlite_failure(
    exc: sqlite3.DatabaseError,
    *,
    locked: str,
    failed: str,
    corrupt: str,
    read_only: str | None = None,
) -> LedgerError:
    """The LedgerError for SQLite's ``exc`` on a ledger file: ``locked`` when another
    process holds it (locked or busy), ``read_only`` (when given) when it cannot be
    written, ``failed`` for any other operational error, ``corrupt`` when the file is not
    a database."""
    if not isinstance(exc, sqlite3.OperationalError):
        return LedgerError(corrupt)
    text = str(exc)
    if "locked" in text or "busy" in text:
        return LedgerError(locked)
    if read_only is not None and ("readonly" in text or "read-only" in text):
        return LedgerError(read_only)
    return LedgerError(failed)


def recover_hot_journal(path: Path, timeout: float) -> None:
    """Roll back a transaction interrupted by a crash before reading.

    A process killed inside a write transaction leaves a "hot" rollback journal; only a
    read-write connection can roll it back, restoring the last committed state (SQLite's
    own crash recovery). Reads therefore open read-write once when such a journal exists.
    A read-only file that needs recovery is reported, not touched.
    """
    journal = path.with_name(path.name + "-journal")
    try:
        # one stat, not exists() then stat(): another process's commit may delete the
        # journal in between (a live transaction's journal, not a hot one)
        if journal.stat().st_size == 0:
            return
    except FileNotFoundError:
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
    except sqlite3.DatabaseError as exc:
        raise sqlite_failure(
            exc,
            locked=f"The ledger file {path} is locked by another process; try again.",
            failed=f"The ledger file {path} could not be recovered.",
            corrupt=f"The file {path} is not a dpsense ledger or is corrupt; it was left "
            "untouched.",
        ) from None


def publish(tmp: Path, target: Path) -> None:
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


def write_new(p: Path, fill: Callable[[sqlite3.Connection], None]) -> None:
    """Write a new ledger file at ``p`` whole or not at all: ``fill`` writes a temporary
    file, published with a link that refuses to overwrite, never over an existing file."""
    if p.exists():
        raise LedgerError(f"The ledger file {p} already exists; it was left untouched.")
    if not p.parent.exists():
        raise LedgerError(f"The folder of the ledger file {p} does not exist.")
    tmp = p.with_name(f".{p.name}.{uuid.uuid4().hex}.tmp")
    try:
        con = sqlite3.connect(tmp, isolation_level=None)
        try:
            fill(con)
        finally:
            con.close()
        publish(tmp, p)
    except FileExistsError:
        raise LedgerError(f"The ledger file {p} already exists; it was left untouched.") from None
    except OSError as exc:
        raise LedgerError(f"Cannot create the ledger file {p}: {exc.strerror}.") from None
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
