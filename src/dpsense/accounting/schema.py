"""The ledger's SQLite schema, its version and the migrations between versions.

A ledger file records its ``schema_version`` in the ``meta`` table. Every version after the
first is reached from the one before by one :class:`Migration`, a few SQL statements run
inside the caller's write transaction, so a crash leaves the old version or the new one,
never a mix. A new file is the first schema with every migration applied, so a migrated file
and a new one have the same tables.

Version history:

1. ``meta`` (key/value) and ``charges`` (time, labels, epsilon, delta, parallel group,
   status).
2. zCDP budgets: ``meta.budget`` ("epsilon" or "rho"; files of version 1 are "epsilon") and
   ``charges.rho`` (NULL for charges to an epsilon budget).
3. The release log: ``charges.outputs``, the released public outputs of an answered or
   refused charge as JSON (:mod:`dpsense.accounting.release_log`); NULL for charges made
   before version 3, direct charges and charges whose process stopped before the answer.

To add a version: append a :class:`Migration` to :data:`MIGRATIONS` (new columns need a
default or NULL, new tables start empty) and read the new columns where present
(:func:`columns`), so files of older versions stay readable without being written to.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Final

__all__ = [
    "FORMAT",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "Migration",
    "columns",
    "create",
    "stored_version",
    "upgrade",
]

FORMAT: Final = "dpsense-ledger"
STATUSES: Final = ("charged", "answered", "refused")

# the statuses of STATUSES, written out: version 1's schema is fixed (a file stores its text)
_VERSION_1: Final = """
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
"""


@dataclass(frozen=True)
class Migration:
    """The statements that turn a file of version ``to_version - 1`` into ``to_version``."""

    to_version: int
    statements: tuple[str, ...]
    why: str


MIGRATIONS: Final = (
    Migration(
        2,
        (
            "ALTER TABLE charges ADD COLUMN rho TEXT",
            "INSERT INTO meta (key, value) VALUES ('budget', 'epsilon')",
        ),
        "zCDP (rho) budgets: the budget kind, and the rho of each charge",
    ),
    Migration(
        3,
        ("ALTER TABLE charges ADD COLUMN outputs TEXT",),
        "the release log: the public outputs of each release (values, accuracy, receipt)",
    ),
)

SCHEMA_VERSION: Final = 1 + len(MIGRATIONS)


def stored_version(meta: dict[str, str]) -> int | None:
    """The schema version a file's meta table states (None when it is not a number)."""
    text = meta.get("schema_version", "")
    return int(text) if text.isdigit() else None


def _apply(con: sqlite3.Connection, version: int) -> None:
    for migration in MIGRATIONS[version - 1 :]:
        for statement in migration.statements:
            con.execute(statement)
    con.execute(
        "INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)",
        (str(SCHEMA_VERSION),),
    )


def create(con: sqlite3.Connection, meta: dict[str, str]) -> None:
    """Build the current schema in an empty database (autocommit) and write ``meta``."""
    con.executescript(_VERSION_1)
    con.execute("BEGIN")
    _apply(con, 1)
    con.executemany(
        "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
        [("format", FORMAT), *meta.items()],
    )
    con.execute("COMMIT")


def upgrade(con: sqlite3.Connection) -> int:
    """Migrate the file to :data:`SCHEMA_VERSION` inside the caller's write transaction;
    returns the version it had (a no-op for a current file)."""
    row = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    version = int(row[0])
    if version < SCHEMA_VERSION:
        _apply(con, version)
    return version


def columns(con: sqlite3.Connection, table: str) -> frozenset[str]:
    """The columns ``table`` has in this file (older versions lack later ones)."""
    return frozenset(
        str(r[0]) for r in con.execute("SELECT name FROM pragma_table_info(?)", (table,))
    )
