"""Getting data into dpsense: files (CSV, Parquet) and DataFrame columns."""

from __future__ import annotations

from dpsense.data.files import load_column, load_indicator

__all__ = ["load_column", "load_indicator"]
