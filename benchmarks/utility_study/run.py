"""Running the utility study: cells, trials, error summaries (parallel over processes)."""

from __future__ import annotations

import math
import os
import platform
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dpsense._progress import ProgressBar, show_progress
from dpsense.lab.study_setup import (
    CENSUS_N,
    DATASETS,
    DELTA,
    EPSILONS,
    METHODS,
    NEIGHBOURS,
    NS,
    OPENDP_CANDIDATES,
    PEERS,
    SAA_BLOCKS,
    TARGET_EPSILON,
    TRIALS,
    FloatArray,
    MethodSpec,
    PeerDraw,
    load_data,
    make_draw,
    make_statistic,
    method_spec,
    one_release,
    peer_available,
    stream_seed,
)
from dpsense.methods.auto import choose_method
from dpsense.noise.rng import SeededRandom
from dpsense.statistics import BoundedStatistic


@dataclass(frozen=True)
class Cell:
    statistic: str
    dataset: str
    n: int

    @property
    def key(self) -> str:
        return f"{self.statistic}/{self.dataset}/n{self.n}"


@dataclass(frozen=True)
class StudyConfig:
    """What to run. The defaults are the full study."""

    trials: int = TRIALS
    epsilons: tuple[float, ...] = EPSILONS
    ns: tuple[int, ...] = NS
    datasets: tuple[str, ...] = tuple(DATASETS)
    peers: bool = True
    workers: int = 2
    keep_errors_at: float | None = TARGET_EPSILON
    """Keep per-trial errors of the census cells at this epsilon (for the histograms)."""


def cells_of(config: StudyConfig) -> list[Cell]:
    out: list[Cell] = []
    for name in config.datasets:
        spec = DATASETS[name]
        sizes: Iterable[int] = config.ns if spec.synthetic else (CENSUS_N,)
        for n in sizes:
            for statistic in spec.statistics:
                out.append(Cell(statistic, name, n))
    return out


def methods_of(cell: Cell, config: StudyConfig, with_peers: bool = True) -> list[MethodSpec]:
    out = []
    for spec in METHODS[cell.statistic]:
        if spec.source == "peer" and not (with_peers and config.peers and peer_available(spec.key)):
            continue
        out.append(spec)
    return out


def cell_data(cell: Cell) -> tuple[FloatArray, BoundedStatistic, float]:
    """Clipped data, the statistic and its true (non-private) value."""
    spec = DATASETS[cell.dataset]
    stat = make_statistic(cell.statistic, spec)
    x = load_data(cell.dataset, cell.n)
    xc = np.clip(x, spec.lower, spec.upper)
    return xc, stat, float(stat(xc))


def tie_diagnostics(xc: FloatArray, truth: float, statistic: str) -> dict[str, int]:
    """Records tied with the median, and how many ranks its rank ceil(n/2) is from the edge
    of that tie block (0: the median sits on a boundary, so its local sensitivity is > 0)."""
    if statistic != "median":
        return {}
    s = np.sort(xc)
    r = -(-s.shape[0] // 2)
    first = int(np.searchsorted(s, truth, "left")) + 1
    last = int(np.searchsorted(s, truth, "right"))
    return {"ties_at_median": last - first + 1, "rank_to_tie_edge": min(r - first, last - r)}


def summarise(
    errors: FloatArray, refused: NDArray[np.bool_], failed: NDArray[np.bool_]
) -> dict[str, float | int | None]:
    """Error summaries of one (cell, method, epsilon); errors are absolute.

    Failed trials (a peer library raised) are left out of the error statistics and
    counted; if every trial failed the statistics are None.
    """
    trials = int(errors.shape[0])
    refusals = int(refused.sum())
    ok = errors[~failed]
    out: dict[str, float | int | None] = {
        "trials": trials,
        "refusals": refusals,
        "refusal_rate": refusals / trials,
        "failures": int(failed.sum()),
        "failure_rate": float(failed.mean()),
    }
    if ok.size == 0:
        return {**out, "mae": None, "mae_se": None, "median_ae": None, "p90_ae": None}
    return {
        **out,
        "mae": float(ok.mean()),
        "mae_se": float(ok.std(ddof=1) / math.sqrt(ok.size)) if ok.size > 1 else None,
        "median_ae": float(np.median(ok)),
        "p90_ae": float(np.quantile(ok, 0.9)),
        "max_ae": float(ok.max()),
        "exact_rate": float(np.mean(ok == 0.0)),
    }


def run_task(
    cell: Cell, method: str, config: StudyConfig, peer_draw: PeerDraw | None = None
) -> tuple[str, str, dict[str, dict[str, Any]]]:
    """All epsilons and trials of one method on one cell (one unit of parallel work)."""
    xc, stat, truth = cell_data(cell)
    fallback = stat.midpoint
    cached: list[list[float]] = []

    def as_list() -> list[float]:
        if not cached:
            cached.append(xc.tolist())
        return cached[0]

    out: dict[str, dict[str, Any]] = {}
    for eps in config.epsilons:
        draw = make_draw(
            cell.statistic,
            method,
            xc,
            stat,
            eps,
            stream_seed(cell.key, method, eps),
            as_list,
            peer_draw,
        )
        signed = np.full(config.trials, math.nan)
        refused = np.zeros(config.trials, dtype=bool)
        failed = np.zeros(config.trials, dtype=bool)
        message = ""
        start = time.perf_counter()
        for i in range(config.trials):
            try:
                value = draw()
            except Exception as exc:  # a peer library crashed; dpsense errors propagate
                if method not in PEERS:
                    raise
                failed[i] = True
                message = message or f"{type(exc).__name__}: {str(exc)[:120]}"
                continue
            if value is None:
                refused[i] = True
                signed[i] = fallback - truth
            else:
                signed[i] = value - truth
        seconds = time.perf_counter() - start
        entry: dict[str, Any] = summarise(np.abs(signed), refused, failed)
        answered = signed[~refused & ~failed]
        entry["bias"] = float(answered.mean()) if answered.size else None
        entry["seconds"] = seconds
        if message:
            entry["failure_message"] = message
        if (
            config.keep_errors_at is not None
            and eps == config.keep_errors_at
            and not DATASETS[cell.dataset].synthetic
        ):
            entry["signed_errors"] = [
                None if math.isnan(e) else float(e) for e in np.where(refused, math.nan, signed)
            ]
        out[f"{eps:g}"] = entry
    return cell.key, method, out


def _task_cost(cell: Cell, method: str) -> float:
    """Rough relative cost, to start the slowest tasks first."""
    per_call = {"opendp": 40.0, "diffprivlib": 60.0, "sample-aggregate": 8.0}.get(method, 2.0)
    if method == "diffprivlib" and cell.statistic == "mean":
        per_call = 0.3
    return per_call * cell.n / 1e5


def run_study(
    config: StudyConfig,
    progress: Callable[[str], None] | None = None,
    peer_draw: PeerDraw | None = None,
) -> dict[str, Any]:
    """Run every (cell, method) and return the raw results (the content of utility.json).

    ``peer_draw`` releases the peer libraries' rows (see :func:`make_draw`); without it the
    study has no peer rows. Passed to worker processes, it must be a module-level function.
    """
    started = time.perf_counter()
    cells = cells_of(config)
    tasks = [
        (cell, spec.key)
        for cell in cells
        for spec in methods_of(cell, config, peer_draw is not None)
    ]
    tasks.sort(key=lambda t: -_task_cost(*t))
    results: dict[str, dict[str, Any]] = {}
    for cell in cells:
        xc, stat, truth = cell_data(cell)
        results[cell.key] = {
            "statistic": cell.statistic,
            "dataset": cell.dataset,
            "n": cell.n,
            "lower": stat.lower,
            "upper": stat.upper,
            "truth": truth,
            "numpy_median_gap": float(abs(np.median(xc) - truth))
            if cell.statistic == "median"
            else 0.0,
            "distinct_values": int(np.unique(xc).size),
            **tie_diagnostics(xc, truth, cell.statistic),
            "methods": {},
        }
    done = 0
    bar = ProgressBar(show_progress(None))

    def record(key: str, method: str, out: dict[str, dict[str, Any]]) -> None:
        nonlocal done
        done += 1
        spec = method_spec(results[key]["statistic"], method)
        results[key]["methods"][method] = {
            "label": spec.label,
            "privacy": spec.privacy,
            "source": spec.source,
            "note": spec.note,
            "by_epsilon": out,
        }
        if progress is not None:
            secs = sum(v["seconds"] for v in out.values())
            elapsed = time.perf_counter() - started
            progress(f"[{done}/{len(tasks)}] {key} {method}: {secs:.1f}s (elapsed {elapsed:.0f}s)")
        bar.advance(1)

    if config.workers <= 1:
        with bar.running():
            bar.task("Utility study", len(tasks))
            for cell, method in tasks:
                record(*run_task(cell, method, config, peer_draw))
    else:
        with ProcessPoolExecutor(max_workers=config.workers) as pool:
            futures = [
                pool.submit(run_task, cell, method, config, peer_draw) for cell, method in tasks
            ]
            # the bar starts once the workers are forked: none inherits its lock or stdout
            with bar.running():
                bar.task("Utility study", len(tasks))
                try:
                    for future in as_completed(futures):
                        record(*future.result())
                except BaseException:
                    pool.shutdown(wait=False, cancel_futures=True)
                    raise
    # keep the table order of METHODS
    for entry in results.values():
        order = [s.key for s in METHODS[entry["statistic"]]]
        entry["methods"] = {k: entry["methods"][k] for k in order if k in entry["methods"]}
    return {
        "config": asdict(config),
        "choices": {
            "delta_approx": DELTA,
            "neighbours": NEIGHBOURS,
            "ptr_bound": "w / 1000",
            "ptr_test_fraction": 0.5,
            "sample_aggregate_blocks": SAA_BLOCKS,
            "opendp_candidates": f"{OPENDP_CANDIDATES}-point uniform grid over the bounds",
            "refusal_error": "|f(x) - (lower + upper) / 2|",
            "truth": "dpsense convention: order statistic at rank ceil(n/2) for the median",
            "auto_rule": auto_rule(),
        },
        "environment": environment(),
        "runtime_seconds": time.perf_counter() - started,
        "cells": results,
    }


def auto_rule() -> dict[str, dict[str, str]]:
    """What ``method='auto'`` resolves to (method and noise), per statistic and delta."""
    out: dict[str, dict[str, str]] = {}
    for stat in ("median", "mean"):
        statistic = make_statistic(stat, DATASETS["ages"])
        out[stat] = {}
        for d in (0.0, DELTA):
            method, options = choose_method(
                statistic, epsilon=TARGET_EPSILON, delta=d, neighbours=NEIGHBOURS
            )
            probe = one_release(
                np.array([30.0, 40.0, 50.0]),
                statistic,
                epsilon=TARGET_EPSILON,
                delta=d,
                neighbours=NEIGHBOURS,
                rng=SeededRandom(0),
            )
            noise = f", noise={probe.noise}" if probe.noise else ""
            out[stat][f"delta={d:g}"] = f"{method}{noise}" + (f" {options}" if options else "")
    return out


def environment() -> dict[str, str]:
    def version(module: str) -> str:
        try:
            from importlib.metadata import version as v

            return v(module)
        except Exception:
            return "not installed"

    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "dpsense": version("dpsense"),
        "opendp": version("opendp"),
        "diffprivlib": version("diffprivlib"),
        "cpus": str(os.cpu_count()),
        "machine": platform.machine(),
    }
