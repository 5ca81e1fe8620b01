"""DuckDB's keyed hash (``engine.keyed_hash``) as native Spark column expressions.

Contribution bounding keeps rows by ``hash(key, unit, ...) >> 1``, DuckDB's hash, so that
every engine keeps the same rows. Evaluating it with DuckDB on Arrow batches in the
executors' Python (``spark._with_keyed_hash``) moves every row through Python; this module
writes the same function with Spark's own long arithmetic instead (whole-stage code
generation, no Python).

DuckDB (1.1 and later) hashes a BIGINT ``x`` as ``murmur(x)`` and a DOUBLE as ``murmur``
of its IEEE bits (``-0.0`` read as ``0.0``), where ``murmur(x)`` is ``x ^= x >> 32; x *=
K; x ^= x >> 32; x *= K; x ^= x >> 32`` on 64 bits, ``K = 0xd6e8feb86659fd93``; several
arguments combine left to right as ``combine(a, b) = ((a ^ (a >> 32)) * K) ^ b``.
:func:`reference_hash` is that in Python, and :func:`native_hash_available` checks it
against the driver's DuckDB once per process: a DuckDB whose hash differs makes the
engine fall back to DuckDB on the executors, never keep other rows.

Spark's longs are signed and, with ANSI mode on (Spark 4's default), a multiplication
that overflows is an error rather than a wrap. A classic session fixes an expression's
overflow mode when it builds the DataFrame, so the hash is built with ANSI mode off for
that moment (``_wrapping_longs``); where that cannot be done (Spark Connect), the product
modulo 2^64 is built from 32-bit halves and 16-bit limbs whose partial products stay
below 2^49, joined by shifts and bitwise operations, which never check for overflow
(several times slower: the generated code grows too large for the JIT).
"""

from __future__ import annotations

import functools
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final

__all__ = ["native_hash", "native_hash_available", "reference_hash"]

K: Final = 0xD6E8FEB86659FD93
_M64: Final = (1 << 64) - 1
_M32: Final = (1 << 32) - 1
_M16: Final = (1 << 16) - 1


def _murmur(x: int) -> int:
    x &= _M64
    x ^= x >> 32
    x = (x * K) & _M64
    x ^= x >> 32
    x = (x * K) & _M64
    return x ^ (x >> 32)


def _bits(value: int | float) -> int:
    if isinstance(value, float):
        value = 0.0 if value == 0.0 else value
        return int(struct.unpack("<Q", struct.pack("<d", value))[0])
    return value & _M64


def reference_hash(salt: int, *values: int | float) -> int:
    """``(hash(salt, *values) >> 1)::BIGINT`` as DuckDB computes it (ints as BIGINT,
    floats as DOUBLE)."""
    h = _murmur(_bits(salt))
    for value in values:
        h = (((h ^ (h >> 32)) * K) & _M64) ^ _murmur(_bits(value))
    return h >> 1


@functools.cache
def native_hash_available() -> bool:
    """True when the driver's DuckDB hashes as :func:`reference_hash` does (checked on a
    few hundred fixed values, integers and doubles, once per process)."""
    import duckdb
    import numpy as np

    rng = np.random.default_rng(20240917)
    salts = [int(s) for s in rng.integers(0, 1 << 62, 64, dtype=np.int64)]
    units = [int(u) for u in rng.integers(-(1 << 63), (1 << 63) - 1, 64, dtype=np.int64)]
    doubles = [float(x) for x in np.round(rng.gamma(2.0, 150.0, 60), 2)]
    doubles += [0.0, -0.0, float("inf"), -float("inf")]
    groups = list(range(64))
    con = duckdb.connect()
    try:
        got = con.execute(
            "SELECT (hash(s, u, g) >> 1)::BIGINT, (hash(s, u, d) >> 1)::BIGINT FROM "
            "(SELECT unnest($1::BIGINT[]) AS s, unnest($2::BIGINT[]) AS u, "
            "unnest($3::BIGINT[]) AS g, unnest($4::DOUBLE[]) AS d)",
            [salts, units, groups, doubles],
        ).fetchall()
    finally:
        con.close()
    want = [
        (reference_hash(s, u, g), reference_hash(s, u, d))
        for s, u, g, d in zip(salts, units, groups, doubles, strict=True)
    ]
    return [tuple(int(x) for x in row) for row in got] == want


def _signed(x: int) -> int:
    """A 64-bit pattern as the signed long Spark holds."""
    x &= _M64
    return x - (1 << 64) if x >> 63 else x


def _mul_k(sf: Any, x: Any) -> Any:
    """``x * K`` modulo 2^64 for a long column ``x`` (read as 64 unsigned bits)."""
    xl = x.bitwiseAND(sf.lit(_M32))
    xh = sf.shiftrightunsigned(x, 32)
    kl, kh = K & _M32, K >> 32
    # xl * kl exactly, as a low and a high 32-bit half: kl in two 16-bit limbs
    a = xl * sf.lit(kl & _M16)  # < 2^48
    b = xl * sf.lit(kl >> 16)  # < 2^48
    low = a.bitwiseAND(sf.lit(_M32)) + sf.shiftleft(b.bitwiseAND(sf.lit(_M16)), 16)
    high = sf.shiftright(a, 32) + sf.shiftright(b, 16) + sf.shiftright(low, 32)
    # the cross terms only matter modulo 2^32
    cross = _mul_low32(sf, xh, kl) + _mul_low32(sf, xl, kh)
    hi32 = (high + cross).bitwiseAND(sf.lit(_M32))
    return sf.shiftleft(hi32, 32).bitwiseOR(low.bitwiseAND(sf.lit(_M32)))


def _mul_low32(sf: Any, x: Any, k: int) -> Any:
    """``(x * k) mod 2^32`` for ``0 <= x, k < 2^32`` (a long below 2^33 is returned; the
    caller masks)."""
    a = x * sf.lit(k & _M16)  # < 2^48
    b = (x * sf.lit(k >> 16)).bitwiseAND(sf.lit(_M16))  # only its low 16 bits survive
    return (a + sf.shiftleft(b, 16)).bitwiseAND(sf.lit(_M32))


def _xor_shift(sf: Any, x: Any) -> Any:
    return x.bitwiseXOR(sf.shiftrightunsigned(x, 32))


def _steps(frame: Any, name: str, expressions: list[Any]) -> Any:
    """Apply each expression of ``x`` as its own projection of column ``name`` (each reads
    the previous one: a nested expression would repeat its argument many times over)."""
    for expression in expressions:
        frame = frame.withColumn(name, expression)
    return frame


@contextmanager
def _wrapping_longs(frame: Any) -> Iterator[bool]:
    """Build columns whose long products wrap modulo 2^64 (yields True), or yields False
    when that cannot be arranged (Spark Connect with ANSI mode on: the limbs are used).

    A classic session analyses each DataFrame as it is built, and an arithmetic
    expression keeps the overflow mode of that moment; ANSI mode is therefore switched off
    while the hash columns are built and restored at once (under a lock, for other
    threads of this process that build DataFrames on the same session)."""
    conf = frame.sparkSession.conf
    ansi = str(conf.get("spark.sql.ansi.enabled")).lower() == "true"
    if not ansi:
        yield True
        return
    if not hasattr(frame, "_jdf"):  # Spark Connect analyses at execution time
        yield False
        return
    with _LOCK:
        conf.set("spark.sql.ansi.enabled", "false")
        try:
            yield True
        finally:
            conf.set("spark.sql.ansi.enabled", "true")


_LOCK = threading.Lock()


def native_hash(frame: Any, name: str, salt: int, columns: list[tuple[str, bool]]) -> Any:
    """``frame`` with a long column ``name`` = ``(hash(salt, *columns) >> 1)::BIGINT``,
    DuckDB's hash, computed by Spark. ``columns``: (column name, True for a double column;
    False for a long column)."""
    from pyspark.sql import functions as sf

    tmp = f"{name}__x"
    h = sf.col(name)
    x = sf.col(tmp)
    with _wrapping_longs(frame) as wraps:

        def mul(col: Any) -> Any:
            return col * sf.lit(_signed(K)) if wraps else _mul_k(sf, col)

        frame = frame.withColumn(name, sf.lit(_signed(_murmur(_bits(salt)))))
        for column, is_double in columns:
            if is_double:
                # -0.0 hashes as 0.0; the bits of the double from its own JVM method
                d = f"CAST(`{column}` AS DOUBLE)"
                bits = sf.expr(
                    "CAST(reflect('java.lang.Double', 'doubleToRawLongBits', "
                    f"CASE WHEN {d} = 0 THEN 0.0D ELSE {d} END) AS BIGINT)"
                )
            else:
                bits = sf.col(column).cast("long")
            frame = frame.withColumn(tmp, bits)
            frame = _steps(
                frame,
                tmp,
                [_xor_shift(sf, x), mul(x), _xor_shift(sf, x), mul(x), _xor_shift(sf, x)],
            )
            frame = _steps(frame, name, [_xor_shift(sf, h), mul(h)])
            frame = frame.withColumn(name, h.bitwiseXOR(x))
        return frame.withColumn(name, sf.shiftrightunsigned(h, 1)).drop(tmp)


def bound_natively(
    stage: Any,
    salt: tuple[int, int],
    max_rows: int,
    max_groups: int | None,
    group_cols: list[str],
    canon: list[tuple[str, bool]],
) -> Any:
    """The rows of ``stage`` (u, v, group columns) that contribution bounding keeps
    (docs/tables.md §2), with a column ``first`` that is 1 on one row of each kept (unit,
    group) pair; ``max_groups`` None keeps every group of a unit. ``canon``: the columns
    the group hash reads (name, True for doubles).

    One shuffle by unit and one sort, by (unit, group hash, group): each unit's pairs in
    the order of their hash, so a dense rank picks the ``g`` first pairs and a count over
    peers gives each pair's rows. Only the pairs with more than ``m`` rows compute the
    row hash, and only their rows are ranked by it (a second sort of those rows alone).
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as sf

    salt_g, salt_r = salt
    order = list(group_cols)
    if max_groups is not None:
        stage = native_hash(stage, "hg", salt_g, [("u", False), *canon])
        order = ["hg", *group_cols]
    w = Window.partitionBy("u").orderBy(*order)
    ranked = stage.withColumn("n_pair", sf.count(sf.lit(1)).over(w.rangeBetween(0, 0)))
    ranked = ranked.withColumn("pos", sf.row_number().over(w))
    ranked = ranked.withColumn("start", sf.rank().over(w))
    if max_groups is not None:
        ranked = ranked.withColumn("pair", sf.dense_rank().over(w))
        ranked = ranked.where(sf.col("pair") <= int(max_groups))
    ranked = ranked.withColumn("first", (sf.col("pos") == sf.col("start")).cast("int"))
    ranked = ranked.select("u", "v", *group_cols, "n_pair", "first")
    few = ranked.where(sf.col("n_pair") <= int(max_rows)).drop("n_pair")
    many = native_hash(
        ranked.where(sf.col("n_pair") > int(max_rows)), "hr", salt_r, [("u", False), ("v", True)]
    )
    within = Window.partitionBy("u", *group_cols).orderBy("hr", "v")
    many = (
        many.withColumn("r", sf.row_number().over(within))
        .where(sf.col("r") <= int(max_rows))
        .withColumn("first", (sf.col("r") == 1).cast("int"))
        .select("u", "v", *group_cols, "first")
    )
    return few.unionByName(many)
