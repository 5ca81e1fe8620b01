"""Tumult's ``get_bounds`` on one cell, for benchmarks/bounds_coverage.py.

Runs in a separate virtualenv with tmlt.analytics (it needs Spark): reads a JSON list of
cells (values, person ids, unit, epsilon, trials) on standard input and prints, one line
per cell, the JSON list of its ``(lower, upper)`` pairs. Per cell, one session holds
trials x epsilon and answers ``trials`` queries of epsilon each (fresh noise each time).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any


def tumult_spark() -> Any:
    """A local Spark session for Tumult, its Python workers on this virtualenv's Python
    (which has tmlt); shared with ``_tumult_survey.py``."""
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    spark = (
        SparkSession.builder.master("local[1]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def main() -> None:
    cells = json.load(sys.stdin)
    spark = tumult_spark()
    for payload in cells:
        print(json.dumps(_cell(spark, payload)), flush=True)


def _cell(spark: Any, payload: dict[str, Any]) -> list[tuple[float, float]]:
    from tmlt.analytics import (
        AddOneRow,
        AddRowsWithID,
        MaxRowsPerID,
        PureDPBudget,
        QueryBuilder,
        Session,
    )

    rows = [(float(v), int(i)) for v, i in zip(payload["x"], payload["ids"], strict=True)]
    frame = spark.createDataFrame(rows, schema="v double, person long")
    eps, trials = float(payload["epsilon"]), int(payload["trials"])
    per_person = payload["unit"] == "person"
    session = Session.from_dataframe(
        privacy_budget=PureDPBudget(eps * trials),
        source_id="data",
        dataframe=frame,
        protected_change=AddRowsWithID("person") if per_person else AddOneRow(),
    )
    base = QueryBuilder("data")
    if per_person:
        base = base.enforce(MaxRowsPerID(int(payload["rows_per_person"])))
    out = []
    for _ in range(trials):
        answer = session.evaluate(base.get_bounds("v"), PureDPBudget(eps)).collect()[0]
        out.append((float(answer["v_lower_bound"]), float(answer["v_upper_bound"])))
    return out


if __name__ == "__main__":
    main()
