"""Requests with row-wise expressions for the neighbour harness (ds.sql and dpsense sql).

A histogram of ``FLOOR(v / 10) * 10``, a ``CASE WHEN`` grouping, a failing cast and a
division by zero aimed at the added person, grouped by the expression, its alias or its
position; aggregates of expressions (``AVG(v * x) AS s0``, bounded by the alias or found
privately) and ``COUNT(CASE WHEN ... END)``. Each computed column is total, and a NULL or
NaN it gives drops its row under either ``nulls=``, so what a request says and charges
must not depend on the person (docs/sql.md §3).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from tests.neighbours.harness import FULL_SCHEMA, Request, Stat, Tables, draw_request

__all__ = ["rowwise_request"]


def _groups(new_id: int) -> list[tuple[str, str, list[list[Any]]]]:
    """(alias, expression, choices of public keys)."""
    return [
        ("decade", "FLOOR(v / 10) * 10", [[0, 10, 20], [0, 10, 100]]),
        ("band", "CASE WHEN x < 5 THEN 'low' ELSE 'high' END", [["low", "high"], ["low", "mid"]]),
        ("bucket", "CAST(FLOOR(x) AS INTEGER)", [[0, 1, 5], [3, 4, 5, 6]]),
        ("t", f"CASE WHEN id = {new_id} THEN v // 0 ELSE grp END", [[1, 2, 3]]),
        ("n3", "COALESCE(grp, 0) % 3", [[0, 1, 2]]),
    ]


def _values(new_id: int) -> list[str]:
    return [
        "v * x",
        "COALESCE(x, 0) + v",
        f"CASE WHEN id = {new_id} THEN x / 0 ELSE x END",
        "CAST(s AS DOUBLE)",
        "v * 9223372036854775807",
        "ABS(v) % 7",
        "ROUND(x, 1) - FLOOR(x)",
    ]


_EXPR_BOUNDS = [(0.0, 10.0), (-100.0, 100.0), (0.0, 1e6)]


def rowwise_request(rs: np.random.Generator, entry: str, tables: Tables, index: int) -> Request:
    """A ``draw_request`` of ``entry`` ("sql" or "cli-sql") with row-wise expressions."""
    request = draw_request(rs, entry, tables, index)
    pick = lambda items: items[int(rs.integers(len(items)))]  # noqa: E731
    if rs.random() < 0.75:
        alias, expr, choices = pick(_groups(tables.new_id))
        form = str(pick(["expr", "alias", "position"]))
        keys = tuple(pick(choices)) if rs.random() < 0.7 else None
        delta = request.delta if keys is not None else 1e-3
        request = replace(
            request, by=(alias,), keys=keys, delta=delta, group_expr=(alias, expr, form)
        )
    stats = []
    for stat in request.stats:
        if stat.kind == "count" and rs.random() < 0.3:
            stat = Stat(stat.name, "count", None, None, expr="CASE WHEN v > 5 THEN 1 END")
        elif stat.kind != "count" and rs.random() < 0.6:
            bounds = None if request.private_bounds else pick(_EXPR_BOUNDS)
            stat = Stat(
                stat.name, stat.kind, None, bounds, stat.ps, expr=pick(_values(tables.new_id))
            )
        stats.append(stat)
    request = replace(request, stats=tuple(stats))
    if tables.container == "csv" and rs.random() < 0.7:
        # an expression on a CSV reads declared columns only (else refused from the text)
        request = replace(request, schema=tuple(sorted(FULL_SCHEMA.items())))
    return request
