"""One local Spark session per test process (2 cores), shared by every Spark test, and the
helpers that build Spark frames. Nothing here imports PySpark at import time: quick-tier
modules import it to parametrize a test over the engines."""

from __future__ import annotations

import os
import sys
import warnings
from typing import Any


def local_session() -> Any:
    """The process's local Spark session (created on first use; ``getOrCreate``)."""
    from pyspark.sql import SparkSession

    # the executors' Python workers (contribution bounding hashes Arrow batches with
    # DuckDB) must run this interpreter, which has dpsense's dependencies
    os.environ["PYSPARK_PYTHON"] = sys.executable
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        session = (
            SparkSession.builder.master("local[2]")
            .appName("dpsense-tests")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "4")
            .config("spark.driver.memory", "1g")
            .config("spark.ui.showConsoleProgress", "false")
            .getOrCreate()
        )
    session.sparkContext.setLogLevel("ERROR")
    return session


def to_spark(spark: Any, frame: Any) -> Any:
    """The pandas frame as a Spark DataFrame with an explicit schema (no pandas round trip)."""
    import pandas as pd
    from pyspark.sql import types as st

    kinds = {"i": st.LongType(), "f": st.DoubleType()}
    fields = [
        st.StructField(str(c), kinds.get(frame[c].dtype.kind, st.StringType()))
        for c in frame.columns
    ]
    rows = [
        tuple(None if pd.isna(v) else (v.item() if hasattr(v, "item") else v) for v in row)
        for row in frame.itertuples(index=False)
    ]
    return spark.createDataFrame(rows, st.StructType(fields))
