"""Privacy-budget accounting: composition rules and the SQLite ledger (layer 4).

The user-facing :class:`dpsense.Accountant` lives in :mod:`dpsense.accountant`.
"""

from __future__ import annotations

from dpsense.accounting.composition import (
    RhoBudget,
    ZcdpCharge,
    advanced_epsilon,
    compose,
    zcdp_to_dp_epsilon,
)
from dpsense.accounting.ledger import SCHEMA_VERSION, Ledger, LedgerEntry, LedgerError

__all__ = [
    "SCHEMA_VERSION",
    "Ledger",
    "LedgerEntry",
    "LedgerError",
    "RhoBudget",
    "ZcdpCharge",
    "advanced_epsilon",
    "compose",
    "zcdp_to_dp_epsilon",
]
