"""Utility study: mean absolute error of dpsense's release methods against OpenDP and diffprivlib.

For every cell (statistic, dataset, n) and every epsilon in {0.1, 0.5, 1, 2}, each method
releases the statistic ``--trials`` times (default 500) on the same fixed dataset; the
table entry is the mean absolute error (MAE) against the non-private value. Results go to
``benchmarks/results/``: ``utility.md`` (tables and the three targets, computed here),
``utility.json`` (every number) and PNG plots.

Datasets
    * ``census-age`` / ``census-income``: the bundled synthetic census (n = 10,000);
      age in [0, 100] (median and mean), income in [0, 500000] (median).
    * ``ages``: synthetic tied integer ages 17..90 with an adult-census-like right skew
      (17 + floor(Gamma(2, 10.5)), top-coded at 90), bounds [0, 100].
    * ``incomes``: synthetic continuous log-normal incomes (median 50,000, sigma 0.75, in
      cents), bounds [0, 500000].
    Each synthetic dataset is drawn once per n from a fixed seed.

Methods (privacy type in brackets; every guarantee is under add-remove neighbours)
    median: dpsense smooth with Student's t (d = 3) and Cauchy noise [pure], exponential
    mechanism [pure], global sensitivity [pure], auto with delta = 0 [pure]; smooth with
    Laplace noise, propose-test-release and auto, all with delta = 1e-6 [approx]; OpenDP
    ``then_private_quantile`` and diffprivlib ``tools.median`` [pure peers].
    mean: dpsense global (noisy sum / noisy count), KSW, smooth (Student's t),
    sample-and-aggregate (mean aggregator), auto [pure]; bounded local sensitivity
    (``bounded-ls``), smooth (Laplace), propose-test-release, auto [approx];
    diffprivlib ``tools.mean`` [pure peer, flagged: it treats n as public].

Public choices (none looks at the data)
    * PTR proposes b = w / 1000 (w = upper - lower) and spends half of epsilon on the test.
    * Sample-and-aggregate uses k = 200 blocks at every epsilon (a constant rule; k may not
      depend on n, which is private under add-remove). 200 blocks leave about e^-5 = 0.7 %
      of the blocks empty at n = 1000.
    * OpenDP's candidates are the 1001-point uniform grid over the bounds (step w / 1000:
      0.1 years, 500 dollars).
    * A PTR refusal counts as an error of |f(x) - (lower + upper) / 2|: the analyst who is
      refused can only fall back on a public guess, and the midpoint is the natural one.

Randomness: dpsense draws from ``SeededRandom`` streams (one per cell, method and epsilon,
seeded from a CRC32 of their names), diffprivlib from a seeded ``RandomState``; OpenDP
cannot be seeded, so its rows vary from run to run within their Monte Carlo error.

The study lives in ``benchmarks/utility_study`` (its data and releases in
``dpsense.lab.study_setup``, shared with ``dpsense lab``);
this script adds the peers and writes the files.

Run: ``.venv/bin/python benchmarks/utility.py`` (about 10-30 minutes on 2 cores), or
``--quick`` (50 trials, n in {10^3, 10^4}) while developing.
"""

from __future__ import annotations

import argparse
import json
import math
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

import numpy as np

from dpsense.lab.study_setup import (
    NS,
    OPENDP_CANDIDATES,
    QUICK_NS,
    QUICK_TRIALS,
    TRIALS,
    Draw,
    FloatArray,
)
from dpsense.statistics import BoundedStatistic
from utility_study.markdown import render_markdown, summary_markdown
from utility_study.plots import plot_error_histograms, plot_mae_vs_epsilon
from utility_study.run import StudyConfig, run_study
from utility_study.targets import evaluate_targets

DEFAULT_OUT: Final = Path(__file__).resolve().parent / "results"

# --------------------------------------------------------------------------- peers


def _opendp_median(
    xs: list[float], lower: float, upper: float, epsilon: float
) -> Callable[[], float]:
    import opendp.prelude as dp

    dp.enable_features("contrib")
    candidates = np.linspace(lower, upper, OPENDP_CANDIDATES).tolist()
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance()
    meas = dp.binary_search_chain(
        lambda s: (
            space
            >> dp.m.then_private_quantile(
                dp.max_divergence(), candidates=candidates, alpha=0.5, scale=s
            )
        ),
        d_in=1,
        d_out=epsilon,
    )
    return lambda: float(meas(xs))


def _diffprivlib(
    statistic: str, x: FloatArray, lower: float, upper: float, epsilon: float, seed: int
) -> Callable[[], float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from diffprivlib import BudgetAccountant
        from diffprivlib.tools import mean as dpl_mean
        from diffprivlib.tools import median as dpl_median
    tool = dpl_median if statistic == "median" else dpl_mean
    state = np.random.RandomState(seed)

    def run() -> float:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return float(
                tool(
                    x,
                    epsilon=epsilon,
                    bounds=(lower, upper),
                    random_state=state,
                    accountant=BudgetAccountant(),
                )
            )

    return run


def peer_draw(
    statistic: str,
    method: str,
    xc: FloatArray,
    stat: BoundedStatistic,
    epsilon: float,
    seed: int,
    as_list: Callable[[], list[float]],
) -> Draw:
    """One release by a peer library (the study's ``peer_draw`` hook)."""
    if method == "opendp":
        return _opendp_median(as_list(), stat.lower, stat.upper, epsilon)
    if method == "diffprivlib":
        return _diffprivlib(statistic, xc, stat.lower, stat.upper, epsilon, seed % 2**32)
    raise ValueError(f"unknown peer {method!r}")


# --------------------------------------------------------------------------- output


def _json_default(o: object) -> object:
    if isinstance(o, np.generic):
        return o.item()
    raise TypeError(type(o).__name__)


def _finite(o: Any) -> Any:
    """JSON has no inf/nan: write them as strings."""
    if isinstance(o, float) and not math.isfinite(o):
        return str(o)
    if isinstance(o, dict):
        return {k: _finite(v) for k, v in o.items()}
    if isinstance(o, list | tuple):
        return [_finite(v) for v in o]
    return o


def write_outputs(
    study: dict[str, Any], out_dir: Path, *, plots: bool = True
) -> dict[str, Path | list[Path]]:
    """Write utility.md, utility.json and (optionally) the PNGs; return their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    targets = evaluate_targets(study)
    md = out_dir / "utility.md"
    md.write_text(render_markdown(study, targets), encoding="utf-8")
    js = out_dir / "utility.json"
    payload = _finite({**study, "targets": targets})
    js.write_text(json.dumps(payload, indent=1, default=_json_default), encoding="utf-8")
    written: dict[str, Path | list[Path]] = {"markdown": md, "json": js}
    if plots:
        written["mae_plots"] = plot_mae_vs_epsilon(study, out_dir)
        written["histograms"] = plot_error_histograms(study, out_dir)
    return written


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="MAE of dpsense's release methods against OpenDP and diffprivlib."
    )
    parser.add_argument("--trials", type=int, default=None, help=f"default {TRIALS}")
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"{QUICK_TRIALS} trials and n in {{10^3, 10^4}} (development)",
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--no-peers", action="store_true", help="skip OpenDP and diffprivlib")
    parser.add_argument("--no-plots", action="store_true")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument(
        "--from-json",
        type=Path,
        default=None,
        help="re-render utility.md and the plots from a saved utility.json (no new trials)",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    if args.from_json is not None:
        study = json.loads(args.from_json.read_text(encoding="utf-8"))
        study.pop("targets", None)
        write_outputs(study, args.out, plots=not args.no_plots)
        print(summary_markdown(evaluate_targets(study)))
        return
    trials = args.trials if args.trials is not None else (QUICK_TRIALS if args.quick else TRIALS)
    config = StudyConfig(
        trials=trials,
        ns=QUICK_NS if args.quick else NS,
        peers=not args.no_peers,
        workers=args.workers,
    )
    study = run_study(config, progress=lambda m: print(m, flush=True), peer_draw=peer_draw)
    written = write_outputs(study, args.out, plots=not args.no_plots)
    targets = evaluate_targets(study)
    print(summary_markdown(targets))
    print(f"total runtime {study['runtime_seconds']:.0f}s; wrote:")
    for value in written.values():
        for path in value if isinstance(value, list) else [value]:
            print(f"  {path}")


if __name__ == "__main__":
    main()
