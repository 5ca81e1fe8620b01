"""The tables' front door is :mod:`dpsense.data.source`, the one opener of files and
frames (a bare column is read through it too); its names, for the modules of tables."""

from __future__ import annotations

from dpsense.data.source import PARQUET_SUFFIXES as _PARQUET_SUFFIXES
from dpsense.data.source import (
    TableSource,
    connection,
    copy_stdin,
    is_table,
    open_table,
    quote,
    readable_twice,
)

__all__ = [
    "_PARQUET_SUFFIXES",
    "TableSource",
    "connection",
    "copy_stdin",
    "is_table",
    "open_table",
    "quote",
    "readable_twice",
]
