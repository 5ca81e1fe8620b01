"""Queries: several statistics over one table as one plan (DESIGN layer 6).

``ds.release(data, {"n": ds.Count(), "median_wage": ("wage", ds.Median(-1, 4))}, ...)``
is one contribution bounding, one partition selection shared by every statistic, one
budget split by ``weights`` and one charge (docs/queries.md). A bare statistic is a query
of one. :mod:`.plan` validates and splits, :mod:`.run` runs, :mod:`.bounding` bounds the
rows of several columns at once, :mod:`.result` holds :class:`QueryResult`.
"""

from __future__ import annotations

from dpsense.query.result import QueryResult

__all__ = ["QueryResult"]
