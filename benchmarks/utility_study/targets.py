"""The utility study's targets (T1-T3) and the search for a data-independent ``auto`` rule."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from dpsense.lab.study_setup import (
    AUTO_KEYS,
    DELTA,
    METHODS,
    RESOLUTION,
    T1_FACTOR,
    T3_FACTOR,
    TARGET_EPSILON,
)


def _se(cell: dict[str, Any], method: str, eps: float) -> float:
    """Standard error of an MAE (0 when unknown)."""
    se = cell["methods"][method]["by_epsilon"][f"{eps:g}"].get("mae_se")
    return 0.0 if se is None else float(se)


def _mae(cell: dict[str, Any], method: str, eps: float) -> float | None:
    entry = cell["methods"].get(method)
    if entry is None:
        return None
    stats = entry["by_epsilon"].get(f"{eps:g}")
    if stats is None or stats["mae"] is None:
        return None
    return float(stats["mae"])


def _best(
    cell: dict[str, Any],
    eps: float,
    *,
    source: str,
    privacy: str | None,
    exclude: Sequence[str] = (),
) -> tuple[str, float] | None:
    best: tuple[str, float] | None = None
    for key, entry in cell["methods"].items():
        if key in exclude or entry["source"] != source:
            continue
        if privacy is not None and entry["privacy"] != privacy:
            continue
        mae = _mae(cell, key, eps)
        if mae is not None and (best is None or mae < best[1]):
            best = (key, mae)
    return best


def floored_ratio(a: float, b: float, floor: float) -> float:
    """a / b with both MAEs raised to ``floor`` first (differences below it are ties)."""
    return max(a, floor) / max(b, floor)


def resolution(cell: dict[str, Any]) -> float:
    """MAEs below RESOLUTION * w count as exact for the floored comparisons."""
    return RESOLUTION * float(cell["upper"] - cell["lower"])


def ratio(a: float, b: float) -> float:
    """a / b with 0/0 = 1 and a/0 = inf."""
    if b == 0.0:
        return 1.0 if a == 0.0 else math.inf
    return a / b


def evaluate_targets(study: dict[str, Any], eps: float = TARGET_EPSILON) -> dict[str, Any]:
    """T1, T2 and T3 at one epsilon (plus T3 at every epsilon, for the report)."""
    cells = study["cells"]
    t1: list[dict[str, Any]] = []
    t2: list[dict[str, Any]] = []
    for key, cell in cells.items():
        if (
            cell["statistic"] != "median"
            or f"{eps:g}" not in next(iter(cell["methods"].values()))["by_epsilon"]
        ):
            continue
        best = _best(cell, eps, source="dpsense", privacy="pure")
        if best is None:
            continue
        peers: dict[str, float] = {}
        for k, e in cell["methods"].items():
            peer_mae = _mae(cell, k, eps)
            if e["source"] == "peer" and e["privacy"] == "pure" and peer_mae is not None:
                peers[k] = peer_mae
        row: dict[str, Any] = {
            "cell": key,
            "dataset": cell["dataset"],
            "n": cell["n"],
            "best_dpsense": best[0],
            "best_dpsense_mae": best[1],
            "peers": peers,
        }
        if cell["dataset"] in ("ages", "census-age"):
            ratios = {k: ratio(v, best[1]) for k, v in peers.items()}
            row["peer_over_dpsense"] = ratios
            # ratio(0, 0) = 1: an exact peer is never beaten 10x, even by an exact dpsense
            row["holds"] = bool(peers) and all(r >= T1_FACTOR for r in ratios.values())
            row["counts"] = cell["dataset"] == "ages"
            t1.append(row)
        elif cell["dataset"] in ("incomes", "census-income"):
            if peers:
                peer_key = min(peers, key=lambda k: peers[k])
                row["best_peer"] = peer_key
                row["best_peer_mae"] = peers[peer_key]
                row["dpsense_over_peer"] = ratio(best[1], peers[peer_key])
                row["holds"] = best[1] <= peers[peer_key]
                se_ds, se_peer = _se(cell, best[0], eps), _se(cell, peer_key, eps)
                row["best_dpsense_se"], row["best_peer_se"] = se_ds, se_peer
                spread = math.hypot(se_ds, se_peer)
                # Monte Carlo tie: the dpsense MAE exceeds the peer's by less than 2 SE
                row["within_2se"] = best[1] - peers[peer_key] <= 2.0 * spread
            else:
                row["holds"] = None
            row["counts"] = cell["dataset"] == "incomes"
            t2.append(row)

    def t3_rows(at: float) -> list[dict[str, Any]]:
        rows = []
        for key, cell in cells.items():
            for auto, privacy in (("auto", "pure"), ("auto-approx", "approx")):
                mae = _mae(cell, auto, at)
                if mae is None:
                    continue
                best = _best(
                    cell, at, source="dpsense", privacy=privacy, exclude=("auto", "auto-approx")
                )
                any_type = _best(
                    cell, at, source="dpsense", privacy=None, exclude=("auto", "auto-approx")
                )
                if best is None:
                    continue
                rows.append(
                    {
                        "cell": key,
                        "epsilon": at,
                        "auto": auto,
                        "privacy": privacy,
                        "auto_mae": mae,
                        "best": best[0],
                        "best_mae": best[1],
                        "ratio": ratio(mae, best[1]),
                        "holds": ratio(mae, best[1]) <= T3_FACTOR,
                        "floored_ratio": floored_ratio(mae, best[1], resolution(cell)),
                        "holds_floored": floored_ratio(mae, best[1], resolution(cell)) <= T3_FACTOR,
                        "best_any_type": any_type[0] if any_type else None,
                        "ratio_any_type": ratio(mae, any_type[1]) if any_type else None,
                    }
                )
        return rows

    t3 = t3_rows(eps)
    t3_all = [r for e in study["config"]["epsilons"] for r in t3_rows(e)]

    def verdict(rows: list[dict[str, Any]], field: str = "holds") -> bool | None:
        counted = [r[field] for r in rows if r.get("counts", True)]
        if not counted or any(h is None for h in counted):
            return None
        return all(counted)

    return {
        "epsilon": eps,
        "T1": {"holds": verdict(t1), "rows": t1},
        "T2": {"holds": verdict(t2), "rows": t2},
        "T3": {
            "holds": verdict(t3),
            "holds_floored": verdict(t3, "holds_floored"),
            "rows": t3,
        },
        "T3_all_epsilons": {
            "holds": verdict(t3_all),
            "holds_floored": verdict(t3_all, "holds_floored"),
            "violations": [r for r in t3_all if not r["holds"]],
        },
        "auto_rules": auto_rule_search(study),
    }


def _worst_ratio(
    group: Sequence[dict[str, Any]], method: str, eps: float, privacy: str
) -> tuple[float, str]:
    """Largest floored ratio of ``method`` to the best non-auto same-type method, and where."""
    result = (0.0, "")
    for c in group:
        mae = _mae(c, method, eps)
        best = _best(c, eps, source="dpsense", privacy=privacy, exclude=AUTO_KEYS)
        if mae is None or best is None:
            continue
        r = floored_ratio(mae, best[1], resolution(c))
        if r > result[0]:
            result = (r, f"{c['statistic']}/{c['dataset']}/n{c['n']}")
    return result


def auto_rule_search(study: dict[str, Any]) -> list[dict[str, Any]]:
    """The best data-independent rule for ``auto``, from the measured MAEs.

    A rule may depend only on the statistic, epsilon, delta (the privacy type) and the
    neighbour relation (add-remove here), never on n or the data. For each (statistic,
    privacy type, epsilon) this picks, among the non-auto dpsense methods allowed for that
    type (pure methods for delta = 0; every method for delta > 0, since a pure method is
    also (epsilon, delta)-DP), the one whose worst floored ratio to the best same-type method
    over all cells is smallest (minimax). If even that worst ratio exceeds T3_FACTOR, no rule
    of this kind meets T3 at that epsilon with the methods studied here.
    """
    cells = list(study["cells"].values())
    out: list[dict[str, Any]] = []
    for statistic in ("median", "mean"):
        group = [c for c in cells if c["statistic"] == statistic]
        if not group:
            continue
        for auto, privacy in (("auto", "pure"), ("auto-approx", "approx")):
            candidates = [
                s.key
                for s in METHODS[statistic]
                if s.source == "dpsense"
                and s.key not in AUTO_KEYS
                and (s.privacy == privacy or privacy == "approx")
            ]
            for eps in study["config"]["epsilons"]:
                scored = {m: _worst_ratio(group, m, eps, privacy) for m in candidates}
                if not scored:
                    continue
                pick = min(scored, key=lambda m: scored[m][0])
                current = _worst_ratio(group, auto, eps, privacy)
                out.append(
                    {
                        "statistic": statistic,
                        "privacy": privacy,
                        "epsilon": eps,
                        "auto_resolves_to": study["choices"]["auto_rule"][statistic][
                            f"delta={0.0 if privacy == 'pure' else DELTA:g}"
                        ],
                        "auto_worst_ratio": current[0],
                        "auto_worst_cell": current[1],
                        "minimax_method": pick,
                        "minimax_worst_ratio": scored[pick][0],
                        "minimax_worst_cell": scored[pick][1],
                        "all_worst_ratios": {m: v[0] for m, v in scored.items()},
                        "fixable": scored[pick][0] <= T3_FACTOR,
                    }
                )
    return out
