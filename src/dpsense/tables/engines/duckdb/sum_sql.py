"""SQL of the value tests and exact sums a DuckDB release runs on held groups.

Split from ``groups``: the value-hash sample's test, numpy's ``rint`` in SQL, and the
integer keys of the exact sums (``grid_sum_sql``, ``quanta_sum_sql``) that the first pass
(``held_scan``) and :class:`~dpsense.tables.engines.duckdb.groups.DuckGroups` both run.
"""

from __future__ import annotations

import math
from typing import Any

from dpsense.statistics._exact import RecordGrid
from dpsense.tables.rows.windows import SAMPLE_MOD

__all__ = ["clip_sql", "grid_sum_sql", "quanta_sum_sql", "rint_sql", "sample_test"]


def sample_test(v: str) -> str:
    """SQL true for the sampled values: about one distinct value in ``SAMPLE_MOD``, all
    copies of it. ``hash(v)`` alone is not used: DuckDB's hash of a double keeps a
    pattern of its bits, and its low bits sample small values more often than large ones
    (seen on two-decimal data); combining it with a constant mixes them."""
    return f"hash({v}, 40503) % {SAMPLE_MOD} = 0"


def rint_sql(x: str) -> str:
    """numpy's ``rint`` (halves to even) of a double SQL expression, as a BIGINT: DuckDB
    casts a double to an integer with ``nearbyint`` (the rounding mode is to nearest,
    halves to even), several times cheaper than writing the rounding out with ``floor``.
    ``x`` must lie within the BIGINT range (the callers clamp it first)."""
    return f"({x})::BIGINT"


def clip_sql(v: str, lower: float | None, upper: float | None) -> str:
    if lower is None or upper is None:
        return v
    return f"greatest(least({v}, {upper!r}::DOUBLE), {lower!r}::DOUBLE)"


def grid_sum_sql(
    grid: RecordGrid, lower: float | None, upper: float | None, v: str = "v"
) -> tuple[tuple[Any, ...], str]:
    """The cache key and the SQL of ``grid.integers(clip(v, lower, upper))`` (numpy's rint,
    then clamped); ``v`` may be the raw value (the clip is idempotent on clipped ones)."""
    # clamping to the integers k_low..k_high before rounding equals clamping after
    # (rint is monotone and keeps integers), and keeps the cast within BIGINT
    k = f"({clip_sql(v, lower, upper)} - {grid.centre!r}::DOUBLE) / {grid.grid!r}::DOUBLE"
    lo, hi = f"{float(grid.k_low)!r}::DOUBLE", f"{float(grid.k_high)!r}::DOUBLE"
    k = rint_sql(f"least(greatest({k}, {lo}), {hi})")
    return ("grid", grid.centre, grid.grid, grid.k_low, grid.k_high), k


def quanta_sum_sql(
    lower: float, upper: float, quanta: int, v: str = "v"
) -> tuple[tuple[Any, ...], str]:
    """The cache key and the SQL of ``rint(clip((clip(v, l, u) - l) / (u - l), 0, 1) *
    quanta)``, as ``methods.ksw.unit_sums`` computes it in numpy."""
    unit = f"({clip_sql(v, lower, upper)} - {lower!r}::DOUBLE) / {upper - lower!r}::DOUBLE"
    if not math.isfinite(upper - lower):
        # with u - l finite the quotient of two correctly rounded differences, the first
        # at most the second, lies in [0, 1] already and the outer clip is a no-op
        unit = f"greatest(least({unit}, 1.0::DOUBLE), 0.0::DOUBLE)"
    return (
        "quanta",
        lower,
        upper,
        quanta,
    ), rint_sql(f"{unit} * {float(quanta)!r}::DOUBLE")
