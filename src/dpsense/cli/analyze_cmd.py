"""``dpsense analyze``: the sensitivity profile of a statistic on your data (NON-PRIVATE)."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import numpy as np
from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from dpsense._arrays import FloatArray
from dpsense.cli import _options as opt
from dpsense.cli._options import MAX_K
from dpsense.cli._shared import (
    _console,
    _fmt,
    _json_number,
    _print_json,
    _statistic,
)
from dpsense.data import load_column
from dpsense.errors import InputError, Param
from dpsense.methods.smooth import point_plan
from dpsense.neighbours import Neighbours, validate_neighbours
from dpsense.params import check_delta, check_epsilon, check_finite, check_int
from dpsense.statistics import (
    INFINITE_DISTANCE,
    BoundedStatistic,
    Quantiles,
    Statistic,
)

__all__ = ["WHY_NOT_LOCAL", "analyze", "banner", "profile_of", "show_non_private"]

ANALYZE_EXAMPLES = (
    "Examples:\n\n\b\n"
    "  dpsense analyze census.csv --column age --statistic median --lower 0 --upper 100\n"
    "  dpsense analyze census.csv -c income -s mean --lower 0 --upper 500000 --bound 100\n"
    "  dpsense analyze census.csv -c age -s median --lower 0 --upper 100 --plot age.png\n"
)
"""The examples that end ``--help``."""

_PLOT_K_CAP = 5000  # longest A(k) curve drawn by ``analyze --plot``
_NON_PRIVATE_BANNER = (
    "NON-PRIVATE DIAGNOSTICS for the data owner only. Every number below is computed "
    "from the raw data and can reveal individual records: do not publish or share them. "
    "Use a differentially private release for anything that leaves your hands."
)
WHY_NOT_LOCAL = (
    "Why not add noise scaled to the local sensitivity? Local sensitivity is itself a "
    "function of the data: two datasets that differ in one person can have very different "
    "local sensitivities (a median can have local sensitivity 0 on one and a large value "
    "on its neighbour), so noise calibrated to it reveals which dataset was used. Smooth "
    "sensitivity S* = max_k exp(-beta k) A(k) is an upper bound that changes by at most a "
    "factor exp(beta) between neighbours; noise scaled to S* with the matching "
    "distribution is differentially private, and S* is often far below the global "
    "sensitivity."
)

# --------------------------------------------------------------------------- helpers


def banner(console: Console) -> None:
    console.print(
        Panel(Text(_NON_PRIVATE_BANNER, style="bold"), border_style="red", title="warning")
    )


def show_non_private(tables: Callable[[Console], None], written: Path | None) -> None:
    """The warning banner, then ``tables`` (printed on the console), then where the plot
    was written, if one was."""
    console = _console()
    banner(console)
    tables(console)
    if written is not None:
        console.print(f"plot written to {written}")


def _global_sensitivity(stat: Statistic, neighbours: Neighbours, n: int) -> float:
    # n is public under substitute only; under add-remove it must not be used.
    if neighbours == "substitute":
        return float(stat.global_sensitivity(neighbours, n=n))
    return float(stat.global_sensitivity(neighbours))


def profile_of(
    x: FloatArray,
    stat: Statistic,
    neighbours: Neighbours,
    *,
    epsilon: float,
    delta: float,
    max_k: int,
    bound: float | None,
) -> dict[str, Any]:
    """Every diagnostic of ``analyze`` as plain Python numbers (non-finite kept)."""
    n = int(x.shape[0])
    plan, _ = point_plan(epsilon, delta)  # the beta 'release --method smooth' would use
    beta = plan.beta
    a_of_k = np.atleast_1d(
        np.asarray(stat.sensitivity_at_distance(x, np.arange(max_k + 1), neighbours), float)
    )
    profile: dict[str, Any] = {
        "statistic": stat.name,
        "neighbours": neighbours,
        "value": float(stat(x)),
        "global_sensitivity": _global_sensitivity(stat, neighbours, n),
        "local_sensitivity": float(stat.local_sensitivity(x, neighbours)),
        "smooth_sensitivity": float(stat.smooth_sensitivity(x, beta, neighbours)),
        "beta": beta,
        "smooth_noise": plan.noise,
        "sensitivity_at_distance": [float(v) for v in a_of_k],
        "epsilon": epsilon,
        "delta": delta,
        "n": n,
        "exact": bool(stat.sensitivity_is_exact(neighbours)),
        "non_private": True,
    }
    if bound is not None:
        distance = int(stat.distance_to_instability(x, bound, neighbours))
        profile["bound"] = bound
        profile["distance_to_instability"] = distance
    return profile


def _plot_range(profile: dict[str, Any], max_k: int) -> int:
    """Last k to draw so that the argmax of exp(-beta k) A(k) is on the chart.

    With ``A(k) <= GS`` the maximiser satisfies ``exp(-beta k*) GS >= S*``, that is
    ``k* <= ln(GS / S*) / beta``; a quarter more shows the decline after it.
    """
    beta = float(profile["beta"])
    gs = float(profile["global_sensitivity"])
    smooth = float(profile["smooth_sensitivity"])
    if math.isfinite(gs) and smooth > 0 and gs > smooth:
        k_star = math.log(gs / smooth) / beta
    else:
        k_star = 3.0 / beta
    return max(max_k, min(_PLOT_K_CAP, math.ceil(1.25 * k_star) + 2))


def _write_profile_plot(
    x: FloatArray,
    stat: Statistic,
    profile: dict[str, Any],
    max_k: int,
    plot: Path,
    title: str,
) -> Path:
    from dpsense.plots import plot_sensitivity_profile

    neighbours = profile["neighbours"]
    beta = float(profile["beta"])
    ks = np.arange(_plot_range(profile, max_k) + 1)
    a_of_k = np.asarray(stat.sensitivity_at_distance(x, ks, neighbours), dtype=np.float64)
    # The bound on k* used above is loose: show the argmax and a stretch after it only.
    k_best = int(np.argmax(np.exp(-beta * ks) * a_of_k))
    shown = max(max_k, min(int(ks[-1]), math.ceil(1.5 * k_best) + 10)) + 1
    ks, a_of_k = ks[:shown], a_of_k[:shown]
    return plot_sensitivity_profile(
        ks,
        a_of_k,
        beta,
        float(profile["smooth_sensitivity"]),
        path=plot,
        title=title,
    )


def _distance_text(distance: int) -> str:
    if distance >= INFINITE_DISTANCE:
        return "infinite (no k exceeds the bound)"
    return str(distance)


# --------------------------------------------------------------------------- analyze


def analyze(
    data: Annotated[str, opt.ANALYZE_DATA],
    statistic: Annotated[str, opt.STATISTIC],
    column: Annotated[str | None, opt.ANALYZE_COLUMN] = None,
    nulls: Annotated[str, opt.NULLS] = "error",
    lower: Annotated[float | None, opt.LOWER] = None,
    upper: Annotated[float | None, opt.UPPER] = None,
    p: Annotated[str | None, opt.ANALYZE_LEVEL] = None,
    trim: Annotated[int | None, opt.ANALYZE_TRIM] = None,
    neighbours: Annotated[str, opt.NEIGHBOURS] = "add-remove",
    epsilon: Annotated[float, opt.ANALYZE_EPSILON] = 1.0,
    delta: Annotated[float, opt.ANALYZE_DELTA] = 0.0,
    bound: Annotated[float | None, opt.ANALYZE_BOUND] = None,
    max_k: Annotated[int, opt.ANALYZE_MAX_K] = 10,
    json_output: Annotated[bool, opt.TABLES_JSON] = False,
    plot: Annotated[Path | None, opt.ANALYZE_PLOT] = None,
) -> None:
    """Show the sensitivity profile of a statistic on your data (NON-PRIVATE).

    Prints the value, global, local, distance-k and smooth sensitivity and, with
    --bound, the distance to instability: diagnostics for the data owner that must not
    be published.
    """
    where = "dpsense analyze"
    eps = check_epsilon(epsilon, where=where)
    dlt = check_delta(delta, where=where)
    k_max = check_int(max_k, "max_k", where=where, minimum=0)
    if k_max > MAX_K:
        raise InputError(
            f"--max-k must be at most {MAX_K:,}: A(k) is listed row by row (the --plot "
            "figure draws the whole curve on its own)."
        )
    nb = validate_neighbours(neighbours, where=where)
    b = _bound(bound, where)
    stat = _one_number(_statistic(statistic, lower, upper, p, trim))
    x = load_column(data, column, allow_empty=False, nulls=nulls)
    profile = profile_of(x, stat, nb, epsilon=eps, delta=dlt, max_k=k_max, bound=b)
    if isinstance(stat, BoundedStatistic):
        profile["lower"], profile["upper"] = stat.lower, stat.upper
        # non-private, for the data owner: how much the bounds change the data
        profile["clipped_below"] = int(np.count_nonzero(x < stat.lower))
        profile["clipped_above"] = int(np.count_nonzero(x > stat.upper))
    written = None
    if plot is not None:
        label = column if column is not None else Path(data).name
        written = _write_profile_plot(
            x, stat, profile, k_max, plot, f"{stat.name} of {label}, {nb} (n = {x.shape[0]})"
        )
        profile["plot"] = str(written)
    _emit_profile(profile, column, written, json_output)


def _bound(bound: float | None, where: str) -> float | None:
    """--bound checked: a finite sensitivity bound >= 0, or None."""
    if bound is None:
        return None
    b = check_finite(bound, "bound", where=where)
    if b < 0:
        raise InputError(Param("bound", of=where), f" must be >= 0. Got {b:g}.")
    return b


def _one_number(stat: Statistic) -> Statistic:
    """``stat``, unless it has several values (quantiles): analyze shows one number."""
    if isinstance(stat, Quantiles):
        raise InputError(
            "analyze shows the sensitivity of one number; for several quantiles analyze "
            "each level with --statistic quantile --p P."
        )
    return stat


def _emit_profile(
    profile: dict[str, Any], column: str | None, written: Path | None, json_output: bool
) -> None:
    """The profile as one JSON object, or the warning banner, its tables and the plot."""
    if json_output:
        _print_json(_jsonable_profile(profile))
        return
    show_non_private(lambda console: _print_profile(console, profile, column), written)


def _jsonable_profile(profile: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in profile.items():
        if isinstance(value, float):
            out[key] = _json_number(value)
        elif isinstance(value, list):
            out[key] = [_json_number(v) for v in value]
        else:
            out[key] = value
    distance = profile.get("distance_to_instability")
    if distance is not None and distance >= INFINITE_DISTANCE:
        out["distance_to_instability"] = None
        out["distance_to_instability_infinite"] = True
    return out


def _print_profile(console: Console, profile: dict[str, Any], column: str | None) -> None:
    subject = profile["statistic"] + (f" of {column}" if column else "")
    table = Table(title=f"Sensitivity profile: {subject}", show_header=True)
    table.add_column("quantity")
    table.add_column("value", justify="right")
    if "lower" in profile:
        table.add_row("bounds", f"[{_fmt(profile['lower'])}, {_fmt(profile['upper'])}]")
    table.add_row("neighbours", profile["neighbours"])
    table.add_row("records n", str(profile["n"]))
    if "clipped_below" in profile:
        table.add_row(
            "clipped to the bounds",
            f"{profile['clipped_below']} below, {profile['clipped_above']} above",
        )
    table.add_row("value", _fmt(profile["value"]))
    table.add_row("global sensitivity", _fmt(profile["global_sensitivity"]))
    table.add_row("local sensitivity A(0)", _fmt(profile["local_sensitivity"]))
    table.add_row(
        f"beta (epsilon={profile['epsilon']:g}, delta={profile['delta']:g}, "
        f"{profile['smooth_noise']} noise)",
        _fmt(profile["beta"]),
    )
    table.add_row("smooth sensitivity S*", _fmt(profile["smooth_sensitivity"]))
    if "distance_to_instability" in profile:
        table.add_row(
            f"distance to instability for b={profile['bound']:g}",
            _distance_text(profile["distance_to_instability"]),
        )
    table.add_row("A(k) for k >= 1", "exact" if profile["exact"] else "upper bound")
    console.print(table)

    beta = float(profile["beta"])
    ktable = Table(title="Local sensitivity at distance k", show_header=True)
    ktable.add_column("k", justify="right")
    ktable.add_column("A(k)", justify="right")
    ktable.add_column("exp(-beta k) A(k)", justify="right")
    for k, a in enumerate(profile["sensitivity_at_distance"]):
        ktable.add_row(str(k), _fmt(a), _fmt(math.exp(-beta * k) * a))
    console.print(ktable)
