"""Tables about people: privacy units, contribution bounding, groups, every input format.

The engine (DuckDB) does the row work; noise is drawn in Python. See docs/tables.md.
"""

from __future__ import annotations

from dpsense.tables.grouped import GroupedRelease

__all__ = ["GroupedRelease"]
