"""One local Spark session per test process (2 cores), shared by every Spark test."""

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
