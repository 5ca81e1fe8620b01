"""The ``dpsense`` command line.

Exit codes: 0 success; 2 bad input or usage (one line on stderr, no traceback); 3 privacy
budget exceeded; 1 an internal error (a bug: please report it).

``analyze``, ``demo`` and ``explore`` print **non-private** diagnostics for the data
owner: local and smooth sensitivities are functions of the raw data and must never be
published.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer
from rich import box
from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from dpsense._arrays import FloatArray
from dpsense.cli._shared import (
    _console,
    _fmt,
    _json_number,
    _parse_numbers,
    _percent,
    _print_json,
    _short,
    _statistic,
)
from dpsense.cli.bounds_cmd import bounds_command
from dpsense.cli.budget_cmd import budget_app
from dpsense.cli.release_cmd import ratio_command, release_command
from dpsense.data import load_column
from dpsense.errors import BudgetExceededError, DPSenseError, InputError
from dpsense.neighbours import NEIGHBOURS, Neighbours, validate_neighbours
from dpsense.params import check_delta, check_epsilon, check_finite, check_int, smooth_beta
from dpsense.statistics import INFINITE_DISTANCE, STATISTIC_NAMES, Statistic, make_statistic

__all__ = ["app", "main"]

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_INPUT = 2
EXIT_BUDGET = 3

_PLOT_K_CAP = 5000  # longest A(k) curve drawn by ``analyze --plot``
_NON_PRIVATE_BANNER = (
    "NON-PRIVATE DIAGNOSTICS for the data owner only. Every number below is computed "
    "from the raw data and can reveal individual records: do not publish or share them. "
    "Use a differentially private release for anything that leaves your hands."
)
_WHY_NOT_LOCAL = (
    "Why not add noise scaled to the local sensitivity? Local sensitivity is itself a "
    "function of the data: two datasets that differ in one person can have very different "
    "local sensitivities (a median can have local sensitivity 0 on one and a large value "
    "on its neighbour), so noise calibrated to it reveals which dataset was used. Smooth "
    "sensitivity S* = max_k exp(-beta k) A(k) is an upper bound that changes by at most a "
    "factor exp(beta) between neighbours; noise scaled to S* with the matching "
    "distribution is differentially private, and S* is often far below the global "
    "sensitivity."
)

app = typer.Typer(
    name="dpsense",
    help=(
        "Differentially private statistics that spend noise where the data needs it: "
        "global, local, distance-k and smooth sensitivity."
    ),
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)


# --------------------------------------------------------------------------- helpers


def _banner(console: Console) -> None:
    console.print(
        Panel(Text(_NON_PRIVATE_BANNER, style="bold"), border_style="red", title="warning")
    )


def _global_sensitivity(stat: Statistic, neighbours: Neighbours, n: int) -> float:
    # n is public under substitute only; under add-remove it must not be used.
    if neighbours == "substitute":
        return float(stat.global_sensitivity(neighbours, n=n))
    return float(stat.global_sensitivity(neighbours))


def _profile(
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
    beta = smooth_beta(epsilon, delta)
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


@app.command(no_args_is_help=True)
def analyze(
    data: Annotated[
        str,
        typer.Argument(metavar="DATA", help="CSV or Parquet file holding the data."),
    ],
    statistic: Annotated[
        str,
        typer.Option("--statistic", "-s", help=f"One of: {', '.join(STATISTIC_NAMES)}."),
    ],
    column: Annotated[
        str | None,
        typer.Option("--column", "-c", help="Column to analyse (needed if the file has several)."),
    ] = None,
    lower: Annotated[
        float | None,
        typer.Option(help="Public lower bound, chosen without looking at the data."),
    ] = None,
    upper: Annotated[
        float | None,
        typer.Option(help="Public upper bound, chosen without looking at the data."),
    ] = None,
    p: Annotated[float | None, typer.Option("--p", help="Level of --statistic quantile.")] = None,
    trim: Annotated[
        int | None, typer.Option(help="Records dropped from each end (trimmed-mean).")
    ] = None,
    neighbours: Annotated[
        str, typer.Option(help="Neighbouring relation: add-remove or substitute.")
    ] = "add-remove",
    epsilon: Annotated[float, typer.Option(help="Privacy parameter epsilon (sets beta).")] = 1.0,
    delta: Annotated[
        float, typer.Option(help="Privacy parameter delta (sets beta; 0 = Cauchy noise).")
    ] = 1e-6,
    bound: Annotated[
        float | None,
        typer.Option(help="Proposed sensitivity bound b: report the distance to instability."),
    ] = None,
    max_k: Annotated[int, typer.Option(help="Show A(k) for k = 0..max-k.")] = 10,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print one JSON object instead of tables.")
    ] = False,
    plot: Annotated[
        Path | None,
        typer.Option(help="Write the smooth-sensitivity profile plot (png, pdf, svg)."),
    ] = None,
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
    nb = validate_neighbours(neighbours, where=where)
    b = None
    if bound is not None:
        b = check_finite(bound, "bound", where=where)
        if b < 0:
            raise InputError(f"The 'bound' parameter of {where} must be >= 0. Got {b:g}.")
    stat = _statistic(statistic, lower, upper, p, trim)
    x = load_column(data, column, allow_empty=False)
    profile = _profile(x, stat, nb, epsilon=eps, delta=dlt, max_k=k_max, bound=b)
    if lower is not None and upper is not None:
        profile["lower"], profile["upper"] = lower, upper

    written = None
    if plot is not None:
        label = column if column is not None else Path(data).name
        written = _write_profile_plot(
            x, stat, profile, k_max, plot, f"{stat.name} of {label}, {nb} (n = {x.shape[0]})"
        )
        profile["plot"] = str(written)

    if json_output:
        _print_json(_jsonable_profile(profile))
        return
    console = _console()
    _banner(console)
    _print_profile(console, profile, column)
    if written is not None:
        console.print(f"plot written to {written}")


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
    table.add_row("value", _fmt(profile["value"]))
    table.add_row("global sensitivity", _fmt(profile["global_sensitivity"]))
    table.add_row("local sensitivity A(0)", _fmt(profile["local_sensitivity"]))
    table.add_row(
        f"beta (epsilon={profile['epsilon']:g}, delta={profile['delta']:g})",
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


# ------------------------------------------------------------------------------ demo

_DEMO_QUERIES: tuple[tuple[str, str, float | None, float | None, float | None], ...] = (
    ("age", "count", None, None, None),
    ("age", "mean", 0.0, 100.0, None),
    ("age", "median", 0.0, 100.0, None),
    ("age", "quantile", 0.0, 100.0, 0.9),
    ("education_years", "median", 0.0, 20.0, None),
    ("hours_per_week", "mean", 0.0, 100.0, None),
    ("hours_per_week", "median", 0.0, 100.0, None),
    ("income", "median", 0.0, 500_000.0, None),
    ("income", "mean", 0.0, 500_000.0, None),
    ("capital_gain", "mean", 0.0, 100_000.0, None),
)


@app.command()
def demo() -> None:
    """Profile several statistics of the bundled synthetic census table (NON-PRIVATE)."""
    from dpsense.datasets import census_path, load_census

    console = _console(min_width=100)
    table_data = load_census()
    n = len(next(iter(table_data.values())))
    console.print(
        Text(
            f"Data: {census_path().name}, a SYNTHETIC census-like table bundled with dpsense "
            f"({n} rows; columns {', '.join(table_data)}). It was generated from a "
            "hand-written model with a fixed seed (scripts/make_census.py); no real person "
            "is in it.",
        )
    )
    console.print()
    _banner(console)
    epsilon, delta = 1.0, 1e-6
    beta = smooth_beta(epsilon, delta)
    table = Table(
        title=(
            f"Sensitivity profiles: add-remove neighbours, epsilon={epsilon:g}, "
            f"delta={delta:g}, beta={beta:.4g}"
        ),
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    table.add_column("query", no_wrap=True)
    table.add_column("bounds", no_wrap=True)
    for name in ("value", "global", "local", "smooth", "S*/GS"):
        table.add_column(name, justify="right", no_wrap=True)
    for column, name, lower, upper, p in _DEMO_QUERIES:
        x = load_column(table_data, column)
        stat = make_statistic(name, lower, upper, p=p)
        prof = _profile(x, stat, "add-remove", epsilon=epsilon, delta=delta, max_k=0, bound=None)
        gs = float(prof["global_sensitivity"])
        smooth = float(prof["smooth_sensitivity"])
        ratio = _percent(smooth / gs) if gs > 0 and math.isfinite(gs) else "n/a"
        bounds = "-" if lower is None or upper is None else f"[{lower:g}, {upper:g}]"
        table.add_row(
            f"{stat.name}({column})",
            bounds,
            _short(prof["value"], 5),
            _short(gs),
            _short(prof["local_sensitivity"]),
            _short(smooth),
            ratio,
        )
    console.print(table)
    console.print(Text(_WHY_NOT_LOCAL))
    console.print()
    _demo_releases(console, table_data)
    console.print()
    _demo_grouped(console)
    console.print()
    console.print(
        "Try: dpsense analyze "
        f"{census_path()} --column age --statistic median --lower 0 --upper 100 "
        "--plot profile.png",
        soft_wrap=True,
    )


_DEMO_RELEASES: tuple[tuple[str, str, float, float, str, float, dict[str, Any]], ...] = (
    # column, statistic, lower, upper, method, delta, options
    ("age", "median", 0.0, 100.0, "smooth", 0.0, {}),
    ("age", "median", 0.0, 100.0, "exponential", 0.0, {}),
    ("age", "median", 0.0, 100.0, "ptr", 1e-6, {"bound": 1.0}),
    ("income", "median", 0.0, 500_000.0, "auto", 0.0, {}),
    ("hours_per_week", "mean", 0.0, 100.0, "ksw", 0.0, {}),
    ("hours_per_week", "mean", 0.0, 100.0, "global", 0.0, {}),
)


def _demo_grouped(console: Console) -> None:
    """A grouped, per-person release on the synthetic panel (people x years)."""
    from dpsense.cli.tables_io import emit_grouped
    from dpsense.datasets import make_panel
    from dpsense.release import release
    from dpsense.tables import GroupedRelease

    console.print(
        Text(
            "Per person and per year: median weekly hours of a synthetic panel of 2,000 "
            "people over 8 years (1-4 jobs per person-year). Each person keeps one job per "
            "year; epsilon = 1 protects ALL of a person's rows over the eight years.",
            style="bold",
        )
    )
    result = release(
        make_panel(),
        make_statistic("median", 0.0, 80.0, resolution=1.0),
        column="hours",
        by="year",
        keys=list(range(2015, 2023)),
        privacy_unit="person",
        max_rows_per_unit=1,
        max_groups_per_unit=8,
        epsilon=1.0,
    )
    assert isinstance(result, GroupedRelease)
    emit_grouped(result, False, "hours")


def _demo_releases(console: Console, table_data: dict[str, Any]) -> None:
    """A few differentially private releases with their receipts (OS CSPRNG noise)."""
    from dpsense.methods import Release
    from dpsense.release import release

    table = Table(
        title="Differentially private releases (epsilon = 1 each; fresh noise every run)",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    for name in ("query", "method", "noise", "guarantee", "private value"):
        table.add_column(name, no_wrap=True, justify="right" if name == "private value" else "left")
    for column, name, lower, upper, method, delta, options in _DEMO_RELEASES:
        stat = make_statistic(name, lower, upper)
        result = release(
            load_column(table_data, column),
            stat,
            epsilon=1.0,
            delta=delta,
            method=method,
            **options,
        )
        assert isinstance(result, Release)
        value = "refused" if result.value is None else _short(result.value, 6)
        guarantee = f"({result.epsilon:g}, {result.delta:g})"
        table.add_row(f"{stat.name}({column})", result.method, str(result.noise), guarantee, value)
    console.print(table)
    console.print(
        Text(
            "These values are differentially private: they may be published. Each used "
            "epsilon = 1; together they spent epsilon = 6 (and delta = 1e-6) by basic "
            "sequential composition. Keep the account in a ledger: dpsense budget init "
            "budget.db --epsilon 10, then dpsense release ... --ledger budget.db."
        )
    )


# --------------------------------------------------------------------------- explore

_DEFAULT_EXPLORE_STATISTICS = "mean,median,sum,count,std,variance"
_SCOPES = ("local", "global")


@app.command(no_args_is_help=True)
def explore(
    universe: Annotated[
        str,
        typer.Option(help='Comma-separated values of the universe, e.g. "1,2,3,10,11".'),
    ],
    data: Annotated[
        str | None,
        typer.Argument(metavar="[DATA]", help="CSV file with the dataset (or use --values)."),
    ] = None,
    column: Annotated[
        str | None, typer.Option("--column", "-c", help="Column of DATA to use.")
    ] = None,
    values: Annotated[
        str | None,
        typer.Option(help='The dataset as comma-separated numbers, e.g. "1,2,3".'),
    ] = None,
    model: Annotated[
        str,
        typer.Option(
            help=(
                "domain: added records are any universe value; population: the universe "
                "is a finite population and the data a subset of it."
            )
        ),
    ] = "domain",
    max_hamming: Annotated[int, typer.Option(help="Largest Hamming distance h.")] = 3,
    statistics: Annotated[
        str, typer.Option(help="Comma-separated statistics to explore.")
    ] = _DEFAULT_EXPLORE_STATISTICS,
    p: Annotated[float | None, typer.Option("--p", help="Level for quantile.")] = None,
    trim: Annotated[int | None, typer.Option(help="Trim for trimmed-mean.")] = None,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print one JSON object instead of tables.")
    ] = False,
    plot: Annotated[
        Path | None, typer.Option(help="Write the 2x2 explorer figure (png, pdf, svg).")
    ] = None,
) -> None:
    """Brute-force local and global sensitivity by Hamming distance (NON-PRIVATE).

    Enumerates neighbours over a small universe for add-remove and substitute, local
    and global scope, h = 1..max-hamming. Bounds are the universe's min/max.
    """
    from dpsense.sensitivity import empirical_sensitivity

    where = "dpsense explore"
    h_max = check_int(max_hamming, "max_hamming", where=where, minimum=1)
    model_key = model.strip().lower()
    if model_key not in ("domain", "population"):
        raise InputError(f"--model must be 'domain' or 'population'. Got {model!r} instead.")
    pool = _parse_numbers(universe, "--universe")
    lower, upper = min(pool), max(pool)
    if not lower < upper:
        raise InputError("--universe needs at least two distinct values (they set the bounds).")
    if (data is None) == (values is None):
        raise InputError("give the dataset either as a DATA file or with --values (one of them).")
    if values is not None:
        if column is not None:
            raise InputError("--column applies to a DATA file, not to --values.")
        x = load_column(_parse_numbers(values, "--values"))
    else:
        x = load_column(data, column, allow_empty=False)
    names = [s.strip() for s in statistics.split(",") if s.strip()]
    if not names:
        raise InputError("--statistics must name at least one statistic.")
    stats = [
        make_statistic(
            name,
            lower,
            upper,
            p=p if name.lower() == "quantile" else None,
            trim=trim if name.lower().startswith("trim") else None,
        )
        for name in names
    ]

    results: list[dict[str, Any]] = []
    for stat in stats:
        for nb in NEIGHBOURS:
            for scope in _SCOPES:
                for h in range(1, h_max + 1):
                    value = empirical_sensitivity(
                        stat,
                        x,
                        pool,
                        hamming=h,
                        neighbours=nb,
                        scope=scope,
                        model=model_key,
                    )
                    results.append(
                        {
                            "statistic": stat.name,
                            "neighbours": nb,
                            "scope": scope,
                            "hamming": h,
                            "sensitivity": float(value),
                        }
                    )

    written = None
    if plot is not None:
        from dpsense.plots import plot_explorer

        written = plot_explorer(
            results,
            path=plot,
            title=(
                f"Brute-force sensitivity, {model_key} model, universe of {len(pool)} "
                f"values, n = {x.shape[0]}"
            ),
        )

    if json_output:
        payload: dict[str, Any] = {
            "model": model_key,
            "universe_size": len(pool),
            "lower": lower,
            "upper": upper,
            "n": int(x.shape[0]),
            "max_hamming": h_max,
            "statistics": [s.name for s in stats],
            "non_private": True,
            "results": [{**r, "sensitivity": _json_number(r["sensitivity"])} for r in results],
        }
        if written is not None:
            payload["plot"] = str(written)
        _print_json(payload)
        return
    console = _console()
    _banner(console)
    _print_explorer(console, results, [s.name for s in stats], h_max, model_key, lower, upper)
    if written is not None:
        console.print(f"plot written to {written}")


def _print_explorer(
    console: Console,
    results: list[dict[str, Any]],
    names: list[str],
    h_max: int,
    model: str,
    lower: float,
    upper: float,
) -> None:
    lookup = {
        (r["statistic"], r["neighbours"], r["scope"], r["hamming"]): r["sensitivity"]
        for r in results
    }
    for scope in _SCOPES:
        table = Table(
            title=(
                f"{scope.capitalize()} sensitivity by Hamming distance h "
                f"({model} model, bounds [{lower:g}, {upper:g}])"
            )
        )
        table.add_column("statistic")
        table.add_column("neighbours")
        for h in range(1, h_max + 1):
            table.add_column(f"h={h}", justify="right")
        for name in names:
            for i, nb in enumerate(NEIGHBOURS):
                cells = [_fmt(lookup[(name, nb, scope, h)]) for h in range(1, h_max + 1)]
                table.add_row(name if i == 0 else "", nb, *cells, end_section=i == 1)
        console.print(table)


app.command(name="release", no_args_is_help=True)(release_command)
app.command(name="ratio", no_args_is_help=True)(ratio_command)
app.command(name="bounds", no_args_is_help=True)(bounds_command)
app.add_typer(budget_app, name="budget")


# ------------------------------------------------------------------------ entry point


def _one_line(message: str) -> str:
    return " ".join(message.split())


def _usage_error(exc: BaseException) -> tuple[int, str] | None:
    """Exit code and message of a command-line parsing error, if ``exc`` is one.

    Recognised by shape, so this works whether typer uses click or its vendored copy.
    """
    format_message: Callable[[], str] | None = getattr(exc, "format_message", None)
    exit_code = getattr(exc, "exit_code", None)
    if format_message is None or not isinstance(exit_code, int):
        return None
    if type(exc).__name__ == "NoArgsIsHelpError":
        return EXIT_INPUT, format_message()
    message = _one_line(format_message())
    ctx = getattr(exc, "ctx", None)
    command_path = getattr(ctx, "command_path", None)
    if isinstance(command_path, str) and command_path:
        message += f" (see '{command_path} --help')"
    return EXIT_INPUT, message


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return its exit code.

    Every :class:`~dpsense.errors.InputError` (and other
    :class:`~dpsense.errors.DPSenseError`) and every usage error becomes one line on
    stderr and exit code 2; :class:`~dpsense.errors.BudgetExceededError` gives exit
    code 3. No traceback is printed.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments (without the program name); ``sys.argv[1:]`` by default.

    Returns
    -------
    int
        The exit code.
    """
    command = typer.main.get_command(app)
    args = list(argv) if argv is not None else sys.argv[1:]
    try:
        result = command.main(args=args, prog_name="dpsense", standalone_mode=False)
    except BudgetExceededError as exc:
        _error(str(exc))
        return EXIT_BUDGET
    except DPSenseError as exc:
        _error(str(exc))
        return EXIT_INPUT
    except KeyboardInterrupt:
        _error("interrupted")
        return 130
    except Exception as exc:
        usage = _usage_error(exc)
        if usage is not None:
            code, message = usage
            if "\n" in message:  # help text for a bare command
                sys.stderr.write(message.rstrip() + "\n")
            else:
                _error(message)
            return code
        if type(exc).__name__ == "Abort":
            _error("aborted")
            return EXIT_INTERNAL
        # Messages of unexpected errors may quote data, so only the type is shown.
        _error(f"internal error ({type(exc).__name__}); please report this as a bug")
        return EXIT_INTERNAL
    return result if isinstance(result, int) else EXIT_OK


def _error(message: str) -> None:
    sys.stderr.write(f"error: {_one_line(message)}\n")
    sys.stderr.flush()
