"""Tumult Analytics on the survey query, for benchmarks/survey_tumult.py.

Runs in a separate virtualenv with tmlt.analytics 0.21 (it needs Spark): reads one JSON
object on standard input (``wage``, ``female``, ``runs``, ``epsilon`` per query,
``bounds``) and prints one JSON object: per statistic (``n``, ``med``, ``mean``, ``p10``,
``p90``) a list of ``[run, female, value]``.

The five aggregates are five queries, each at ``epsilon`` (the peer's user splitting the
query into one query per statistic). The runs are one query each: the data are repeated
once per run with a public ``run`` column, and the query is grouped by (run, female) with
public keys. Under ``AddOneRow`` every group of a grouped aggregation gets its own
independent noise calibrated to one row, so each (run, group) release has exactly the law
of the same query run alone on the original data; one query per statistic instead of one
per run keeps Spark's fixed cost (seconds a query) out of the benchmark.
"""

from __future__ import annotations

import json
import sys
from typing import Any


def main() -> None:
    from _tumult_bounds import tumult_spark  # this script's folder is on sys.path

    payload = json.load(sys.stdin)
    print(json.dumps(_run(tumult_spark(), payload)), flush=True)


def _run(spark: Any, payload: dict[str, Any]) -> dict[str, list[list[float]]]:
    from tmlt.analytics import AddOneRow, KeySet, PureDPBudget, QueryBuilder, Session

    runs, eps = int(payload["runs"]), float(payload["epsilon"])
    low, high = (float(b) for b in payload["bounds"])
    rows = [
        (r, int(f), float(w))
        for r in range(runs)
        for w, f in zip(payload["wage"], payload["female"], strict=True)
    ]
    frame = spark.createDataFrame(rows, schema="run long, female long, wage double")
    session = Session.from_dataframe(
        privacy_budget=PureDPBudget(5 * eps),
        source_id="data",
        dataframe=frame,
        protected_change=AddOneRow(),
    )
    keys = KeySet.from_dict({"run": list(range(runs)), "female": [0, 1]})
    queries = {
        "n": lambda g: g.count(name="v"),
        "med": lambda g: g.median("wage", low, high, name="v"),
        "mean": lambda g: g.average("wage", low, high, name="v"),
        "p10": lambda g: g.quantile("wage", 0.1, low, high, name="v"),
        "p90": lambda g: g.quantile("wage", 0.9, low, high, name="v"),
    }
    out: dict[str, list[list[float]]] = {}
    for name, build in queries.items():
        query = build(QueryBuilder("data").groupby(keys))
        answer = session.evaluate(query, PureDPBudget(eps)).collect()
        out[name] = [[int(a["run"]), int(a["female"]), float(a["v"])] for a in answer]
    return out


if __name__ == "__main__":
    main()
