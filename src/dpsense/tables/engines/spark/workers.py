"""Spark executors running DuckDB's keyed hash (the fallback when Spark's own arithmetic
cannot reproduce it), and the errors an executor environment can cause."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from dpsense.errors import InputError

__all__ = ["_VERSION_MARK", "_with_keyed_hash", "_worker_error", "worker_errors"]


def _with_keyed_hash(frame: Any, name: str, expression: str, columns: list[str]) -> Any:
    """``frame`` with a column ``name``: DuckDB's ``expression`` (``engine.keyed_hash``) of
    ``columns``, evaluated on each Arrow batch by the executors (``mapInArrow``), so that
    Spark bounds contributions with exactly the hash the DuckDB engine uses.

    The function shipped to the executors is built here (cloudpickle sends it by value),
    so their Python needs duckdb and pyarrow, not dpsense. DuckDB's hash may change between
    DuckDB versions, so an executor whose DuckDB differs from the driver's stops the job
    instead of keeping other rows.
    """
    import duckdb
    from pyspark.sql import types as st

    schema = st.StructType([*frame.schema.fields, st.StructField(name, st.LongType(), True)])
    query = f"SELECT {expression} AS h FROM batch"
    version = duckdb.__version__

    def add_hash(batches: Iterator[Any]) -> Iterator[Any]:
        import duckdb as executor_duckdb
        import pyarrow as pa

        if executor_duckdb.__version__ != version:
            raise RuntimeError(
                f"{_VERSION_MARK}: the driver has DuckDB {version}, this executor "
                f"{executor_duckdb.__version__}"
            )
        con = executor_duckdb.connect(config={"threads": 1})
        try:
            for batch in batches:
                con.register("batch", pa.Table.from_batches([batch]).select(columns))
                got = con.execute(query).fetchnumpy()["h"]
                con.unregister("batch")
                yield batch.append_column(name, pa.array(got, type=pa.int64()))
        finally:
            con.close()

    return frame.mapInArrow(add_hash, schema)


_VERSION_MARK = "dpsense-duckdb-version"


def _worker_error(exc: Exception) -> InputError | None:
    """The InputError for an executor that cannot run the bounding hash, or None."""
    text = str(exc)
    if _VERSION_MARK in text:
        return InputError(
            "Spark's executors run another DuckDB version than the driver, and DuckDB's "
            "hash (which bounds contributions) may differ between versions. Install the "
            "driver's duckdb version in the executors' Python environment."
        )
    missing = re.search(r"No module named '(duckdb|pyarrow)", text)
    if missing:
        return InputError(
            f"Spark's Python workers cannot import {missing.group(1)}, which contribution "
            "bounding needs on the executors. Run them with the Python environment that has "
            "dpsense (set PYSPARK_PYTHON, or spark.pyspark.python)."
        )
    return None


@contextmanager
def worker_errors(active: bool) -> Iterator[None]:
    """Turn an executor environment's failure (``_worker_error``) into its InputError
    when ``active`` (a release whose bounding hashes on the executors)."""
    try:
        yield
    except Exception as exc:
        friendly = _worker_error(exc) if active else None
        if friendly is not None:
            raise friendly from None
        raise
