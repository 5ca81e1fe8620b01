"""The utility study's PNG figures (error against epsilon; error histograms).

Drawn on matplotlib ``Figure`` objects (no pyplot, no global backend).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Final

import numpy as np

from dpsense.lab.study_setup import DATASETS, DELTA, RESOLUTION

from .markdown import fmt
from .targets import resolution

PLOT_CELLS: Final = (
    "median/ages/n1000",
    "median/ages/n100000",
    "median/incomes/n1000",
    "median/incomes/n100000",
    "median/census-age/n10000",
    "mean/ages/n1000",
    "mean/incomes/n10000",
)


def _style(spec: dict[str, Any], index: int) -> dict[str, Any]:
    colours = [
        "#1f77b4",
        "#ff7f0e",
        "#2ca02c",
        "#d62728",
        "#9467bd",
        "#8c564b",
        "#e377c2",
        "#17becf",
        "#7f7f7f",
        "#000000",
    ]
    markers = ["o", "s", "^", "v", "D", "P", "X", "*", "h", "<"]
    if spec["source"] == "peer":
        linestyle = ":"
    elif spec["privacy"] == "approx":
        linestyle = "--"
    else:
        linestyle = "-"
    return {
        "color": colours[index % len(colours)],
        "marker": markers[index % len(markers)],
        "linestyle": linestyle,
        "linewidth": 1.6,
        "markersize": 6,
    }


def plot_mae_vs_epsilon(study: dict[str, Any], out_dir: Path) -> list[Path]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    written = []
    eps_list = list(study["config"]["epsilons"])
    for key in PLOT_CELLS:
        cell = study["cells"].get(key)
        if cell is None:
            continue
        fig = Figure(figsize=(10, 7.2))
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
        floor = resolution(cell)
        floored_any = False
        for i, entry in enumerate(cell["methods"].values()):
            maes = np.array(
                [
                    math.nan if v is None else v
                    for v in (entry["by_epsilon"][f"{e:g}"]["mae"] for e in eps_list)
                ],
                dtype=float,
            )
            label = f"{entry['label']} [{entry['privacy']}]"
            low = maes < floor
            if np.any(low):
                floored_any = True
                label += " — on the floor line at some ε"
            if np.any(np.isnan(maes)):
                label += " — crashed at some ε (gap)"
            style = _style(entry, i)
            # jitter the floored points a little so that overlapping methods stay visible
            shown = np.where(low, floor * 1.025**i, maes)
            ax.plot(eps_list, shown, label=label, **style)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(eps_list)
        ax.set_xticklabels([f"{e:g}" for e in eps_list])
        ax.set_xlabel("epsilon (privacy budget)")
        ax.set_ylabel(f"mean absolute error of the {cell['statistic']} (log scale)")
        spec = DATASETS[cell["dataset"]]
        ax.set_title(
            f"{cell['statistic']} of {spec.label}, n = {cell['n']:,}, "
            f"bounds [{cell['lower']:,g}, {cell['upper']:,g}]\n"
            f"{study['config']['trials']} trials per point; solid = dpsense pure ε, dashed = "
            f"dpsense approximate (δ = {DELTA:g}), dotted = peers (pure ε)",
            fontsize=10,
        )
        ax.grid(True, which="both", alpha=0.3)
        if floored_any:
            ax.axhspan(floor * 0.9, floor * 1.3, color="grey", alpha=0.15, linewidth=0)
            ax.text(
                eps_list[0],
                floor * 0.85,
                f"floor band: an MAE below {RESOLUTION:g}·w = {floor:g} (including exactly 0) "
                "is drawn here, offset slightly per method so overlapping lines stay visible",
                fontsize=8,
                color="dimgrey",
                va="top",
            )
            bottom, top = ax.get_ylim()
            ax.set_ylim(min(bottom, floor * 0.4), top)
        ax.legend(
            fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2, frameon=False
        )
        fig.tight_layout()
        path = out_dir / f"mae_vs_epsilon_{cell['statistic']}_{cell['dataset']}_n{cell['n']}.png"
        fig.savefig(path, dpi=110)
        written.append(path)
    return written


HIST_METHODS: Final = (
    ("global", "global sensitivity"),
    ("ptr", "PTR (b = w/1000)"),
    ("smooth-t", "smooth, Student t"),
    ("smooth-laplace", "smooth, Laplace"),
)
HIST_FLOOR: Final = 1e-6
"""Percent errors below this (including exact answers) go into the first bin."""


def plot_error_histograms(study: dict[str, Any], out_dir: Path) -> list[Path]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    keys = [
        k for k in ("mean/census-age/n10000", "median/census-age/n10000") if k in study["cells"]
    ]
    if not keys:
        return []
    eps = study["config"]["keep_errors_at"]
    fig = Figure(figsize=(6.5 * len(keys), 4.8))
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(keys), squeeze=False)
    for ax, key in zip(axes[0], keys, strict=True):
        cell = study["cells"][key]
        truth = cell["truth"]
        series = []
        for method, label in HIST_METHODS:
            entry = cell["methods"].get(method)
            if entry is None:
                continue
            stats = entry["by_epsilon"].get(f"{eps:g}", {})
            errs = stats.get("signed_errors")
            if errs is None:
                continue
            answered = np.array([e for e in errs if e is not None], dtype=float)
            refused = len(errs) - answered.size
            pct = np.abs(answered) / abs(truth) * 100.0
            exact = float(np.mean(pct < HIST_FLOOR)) if pct.size else 0.0
            text = f"{label}: MAE {fmt(stats['mae'])}"
            if refused:
                text += f", {refused} refused (not shown)"
            if exact > 0:
                text += f", {100 * exact:.0f}% < {HIST_FLOOR:g}%"
            series.append((np.maximum(pct, HIST_FLOOR), text))
        if not series:
            continue
        hi = max(float(s.max()) for s, _ in series)
        bins = np.logspace(math.log10(HIST_FLOOR), math.log10(max(hi, 10 * HIST_FLOOR)) + 0.01, 50)
        for values, text in series:
            _, _, patches = ax.hist(values, bins=bins, alpha=0.3, histtype="stepfilled")
            colour = patches[0].get_facecolor()[:3]
            ax.hist(values, bins=bins, histtype="step", linewidth=1.8, color=colour, label=text)
        ax.set_xscale("log")
        ax.set_xlabel(
            f"percent error |released − true| / true × 100 (first bin: ≤ {HIST_FLOOR:g}%)"
        )
        ax.set_ylabel(f"trials (of {study['config']['trials']})")
        ax.set_title(
            f"census age {cell['statistic']} (true = {fmt(truth)}, n = {cell['n']:,}), "
            f"ε = {eps:g}\nPTR and smooth Laplace: δ = {DELTA:g}; Student t: pure ε",
            fontsize=10,
        )
        ax.legend(fontsize=8, loc="upper left")
        ax.grid(True, alpha=0.3)
    fig.suptitle("Percent error: global sensitivity vs PTR vs smooth sensitivity", fontsize=12)
    fig.tight_layout()
    path = out_dir / f"error_histograms_census_age_eps{eps:g}.png"
    fig.savefig(path, dpi=110)
    return [path]
