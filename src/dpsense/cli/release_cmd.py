"""``dpsense release``: one differentially private answer and its receipt."""

from __future__ import annotations

import functools
import math
import warnings
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich import box
from rich.table import Table

from dpsense.cli._shared import _console, _fmt, _print_json, _statistic
from dpsense.defaults import ACCURACY_ALPHA, BOUNDS_SHARE, METHODS, STATISTIC_NAMES
from dpsense.errors import InputError

if TYPE_CHECKING:
    from dpsense.accountant import Accountant
    from dpsense.methods import Release
    from dpsense.statistics import Statistic
    from dpsense.tables import GroupedRelease

__all__ = ["CLI_METHODS", "release_command"]

RELEASE_EXAMPLES = (
    "Examples:\n\n\b\n"
    "  dpsense release census.csv -c age -s median --lower 0 --upper 100 --epsilon 1\n"
    "  dpsense release census.csv -c age -s quantiles --p 0.1,0.5,0.9 \\\n"
    "      --lower 0 --upper 100 --epsilon 1\n"
    "  dpsense release panel.csv -c hours -s median --bounds private --epsilon 1 \\\n"
    "      --by year --keys year=2015,2016,2017 --privacy-unit person --ledger budget.db\n"
)
"""The examples that end ``--help``."""

CLI_METHODS = (*METHODS, "sample-aggregate")
"""The --method values of ``dpsense release``."""


# Options shared by ``release`` and ``ratio``.
EpsilonOpt = Annotated[float, typer.Option(help="Privacy budget epsilon of this release.")]
NeighboursOpt = Annotated[
    str, typer.Option(help="Neighbouring relation: add-remove or substitute.")
]
SeedOpt = Annotated[
    int | None, typer.Option(help="Seed for a reproducible demo (NOT secure; marked).")
]
LedgerOpt = Annotated[
    Path | None, typer.Option(help="Charge this release to a ledger (dpsense budget init).")
]
DatasetOpt = Annotated[
    str | None, typer.Option(help="Dataset label recorded in the ledger (default: DATA).")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]
# Options of a table's release, shared by ``release`` and ``sql``.
PrivacyUnitOpt = Annotated[
    str | None, typer.Option(help="Column identifying a person: protect all their rows.")
]
MaxRowsOpt = Annotated[
    int | None, typer.Option(help="Rows kept per person and group (needs --privacy-unit).")
]
MaxGroupsOpt = Annotated[
    int | None, typer.Option(help="Groups kept per person (needs --privacy-unit).")
]
NullsOpt = Annotated[str, typer.Option(help="Missing values in the used columns: error or drop.")]


def _options(
    bound: float | None, noise: str | None, test_fraction: float | None, dof: int | None
) -> dict[str, Any]:
    options: dict[str, Any] = {}
    if bound is not None:
        options["bound"] = bound
    if noise is not None:
        options["noise"] = noise
    if test_fraction is not None:
        options["test_fraction"] = test_fraction
    if dof is not None:
        options["dof"] = dof
    return options


def _sample_aggregate(
    values: Any,
    stat: Statistic,
    blocks: int | None,
    aggregator: str,
    epsilon: float,
    delta: float,
    neighbours: str,
    seed: int | None,
    noise: str | None,
    accountant: Accountant | None = None,
    label: str = "",
) -> Release:
    from dpsense.methods.global_sensitivity import output_range
    from dpsense.methods.sample_aggregate import sample_and_aggregate
    from dpsense.statistics import BoundedStatistic, Count, Sum

    if blocks is None:
        raise InputError("--method sample-aggregate needs --blocks K (the number of blocks).")
    if isinstance(stat, Count | Sum) or not isinstance(stat, BoundedStatistic):
        raise InputError(
            "sample-aggregate needs a statistic with a bounded output (mean, median, "
            "quantile, variance, std, trimmed-mean)."
        )
    lo, hi = output_range(stat)
    kwargs: dict[str, Any] = {
        "blocks": blocks,
        "lower": lo,
        "upper": hi,
        "aggregator": aggregator,
        "neighbours": neighbours,
        "rng": seed,
        "noise": noise,
        "function_name": stat.name,  # the receipt names f by the statistic evaluated per block
    }
    if accountant is not None:
        return accountant.sample_and_aggregate(
            values, stat._value, epsilon=epsilon, delta=delta, dataset=label, **kwargs
        )
    return sample_and_aggregate(values, stat._value, epsilon=epsilon, delta=delta, **kwargs)


def _bounds_option(
    statistic: str,
    lower: float | None,
    upper: float | None,
    bounds: str | None,
    bounds_share: float | None,
    method: str,
) -> dict[str, Any]:
    """The release's ``bounds``/``bounds_share`` from --bounds, or an InputError that names
    --lower/--upper and --bounds private when neither way is given."""
    if bounds is not None and bounds != "private":
        raise InputError(
            f"--bounds takes 'private' (find the bounds privately); got {bounds!r}. For public "
            "bounds pass --lower and --upper."
        )
    if bounds_share is not None and bounds is None:
        raise InputError(
            "--bounds-share is the share of --epsilon for --bounds private; pass both."
        )
    given = lower is not None or upper is not None
    if bounds is not None:
        if given:
            raise InputError("Pass --lower and --upper, or --bounds private, not both.")
        if method == "sample-aggregate":
            raise InputError(
                "--method sample-aggregate needs --lower and --upper; --bounds private "
                "works with the other methods."
            )
        return {"bounds": "private", "bounds_share": bounds_share}
    needs = statistic.strip().lower() != "count"
    if needs and (lower is None or upper is None):
        what = "--upper" if lower is not None else "--lower" if upper is not None else ""
        raise InputError(
            (f"{what} is missing: pass" if what else f"--statistic {statistic} needs bounds: pass")
            + " --lower L --upper U (public, chosen without looking at the data), or "
            "--bounds private to find them privately with --bounds-share of --epsilon "
            f"({BOUNDS_SHARE:g} by default)."
        )
    return {}


def _accountant(ledger: Path | None) -> Accountant | None:
    """The ledger-backed accountant for --ledger (the ledger must already exist)."""
    from dpsense.accountant import Accountant

    if ledger is None:
        return None
    if not ledger.exists():
        raise InputError(
            f"No ledger file at {ledger}; create one with 'dpsense budget init {ledger} "
            "--epsilon E'."
        )
    return Accountant(ledger=ledger)


def _emit(result: Release, json_output: bool, label: str | None) -> None:
    """Print the receipt: one JSON object, or a readable table."""
    if json_output:
        _print_json(receipt_json(result))
    else:
        print_receipt(result, label)


def receipt_json(result: Release) -> dict[str, Any]:
    """The contract's ``--json`` keys first, then the rest of the receipt."""
    payload = result.to_dict()
    payload["accuracy"] = result.accuracy(ACCURACY_ALPHA)
    payload["rank_accuracy"] = result.rank_accuracy(ACCURACY_ALPHA)
    for key in ("value", "scale", "rho", "accuracy"):
        value = payload[key]
        if isinstance(value, float) and not math.isfinite(value):
            payload[key] = None
    return payload


def print_receipt(result: Release, column: str | None) -> None:
    """A readable receipt: the answer and how it was made."""
    from dpsense.cli.tables_io import shown_accuracy, shown_value

    console = _console()
    title = f"Private {result.statistic}" + (f" of {column}" if column else "")
    table = Table(title=title, box=box.SIMPLE_HEAVY, show_header=False)
    table.add_column("field")
    table.add_column("value", justify="right")
    table.add_row(
        "value",
        "refused (propose-test-release)" if result.refused else shown_value(result),
    )
    if not result.refused:
        table.add_row(
            "accuracy",
            shown_accuracy(result) or "not public (the error depends on the data)",
        )
    table.add_row("method", result.method)
    table.add_row("noise", str(result.noise))
    table.add_row(
        "noise scale",
        "not public (depends on the data)"
        if result.scale is None
        else _fmt(result.scale)
        + (
            f" ({result.parameters['scale_units']})" if result.parameters.get("scale_units") else ""
        ),
    )
    table.add_row(
        "guarantee",
        f"epsilon={result.epsilon:g}, delta={result.delta:g}"
        + (f", rho={result.rho:g}-zCDP" if result.rho is not None else ""),
    )
    table.add_row("neighbours", result.neighbours)
    for key, value in result.parameters.items():
        table.add_row(key, _parameter(key, value))
    if result.seeded:
        table.add_row("randomness", "SEEDED: reproducible, not secure (tests/demos only)")
    console.print(table)
    if result.refused:
        console.print(
            "Refused: the private test found the data too close to a dataset whose local "
            "sensitivity exceeds the proposed --bound. The budget is spent all the same, "
            "and the exit code is 0 (a refusal is the private answer). To try: a larger "
            "--bound (chosen without looking at the data), more epsilon for the test "
            "(--test-fraction), or a method that never refuses: --method smooth, or "
            "exponential for quantiles."
        )


def _parameter(key: str, value: Any) -> str:
    """A receipt parameter as printed; the two parts of --bounds private in words."""
    if key == "bounds" and isinstance(value, dict) and value.get("source") == "private":
        return (
            f"({_fmt(value['lower'])}, {_fmt(value['upper'])}), found privately with "
            f"epsilon={value['epsilon']:g}"
        )
    if key == "release" and isinstance(value, dict):
        return f"epsilon={value['epsilon']:g}, delta={value['delta']:g}"
    return _fmt(value) if isinstance(value, float) else str(value)


def release_command(
    data: Annotated[
        Path, typer.Argument(help="A CSV or Parquet file, or - for CSV on standard input.")
    ],
    statistic: Annotated[
        str, typer.Option("--statistic", "-s", help=f"One of: {', '.join(STATISTIC_NAMES)}.")
    ],
    epsilon: EpsilonOpt,
    column: Annotated[str | None, typer.Option("--column", "-c", help="Column to release.")] = None,
    lower: Annotated[
        float | None, typer.Option(help="Public lower bound, chosen without looking at the data.")
    ] = None,
    upper: Annotated[
        float | None, typer.Option(help="Public upper bound, chosen without looking at the data.")
    ] = None,
    bounds: Annotated[
        str | None,
        typer.Option(
            help="private: find the bounds privately, over the whole column and before any "
            "grouping, with --bounds-share of --epsilon (instead of --lower/--upper)."
        ),
    ] = None,
    bounds_share: Annotated[
        float | None,
        typer.Option(help=f"With --bounds private: the share of --epsilon ({BOUNDS_SHARE:g})."),
    ] = None,
    delta: Annotated[float, typer.Option(help="Privacy parameter delta.")] = 0.0,
    method: Annotated[str, typer.Option(help=f"One of: {', '.join(CLI_METHODS)}.")] = "auto",
    neighbours: NeighboursOpt = "add-remove",
    p: Annotated[
        str | None,
        typer.Option("--p", help="Level of quantile (0.9), or levels of quantiles (0.1,0.5,0.9)."),
    ] = None,
    trim: Annotated[
        int | None, typer.Option(help="Records dropped per end (trimmed-mean).")
    ] = None,
    resolution: Annotated[
        float | None,
        typer.Option(
            help="median/quantile: public spacing of the possible values (1 for integers); "
            "the release lands on lower + k * resolution."
        ),
    ] = None,
    bound: Annotated[
        float | None, typer.Option(help="ptr: proposed bound on the local sensitivity.")
    ] = None,
    noise: Annotated[
        str | None,
        typer.Option(help="global: laplace|gaussian; smooth: laplace|cauchy|student-t|lln."),
    ] = None,
    test_fraction: Annotated[
        float | None, typer.Option(help="ptr: share of epsilon spent on the test (0.5).")
    ] = None,
    dof: Annotated[int | None, typer.Option(help="smooth student-t: degrees of freedom.")] = None,
    blocks: Annotated[
        int | None, typer.Option(help="sample-aggregate: number of disjoint blocks k.")
    ] = None,
    aggregator: Annotated[
        str, typer.Option(help="sample-aggregate: mean (pure epsilon) or median (smooth).")
    ] = "mean",
    by: Annotated[
        str | None, typer.Option(help="Release one value per group of these columns (a,b).")
    ] = None,
    keys: Annotated[
        str | None,
        typer.Option(
            help="The public groups: a CSV/Parquet file with the --by columns, or inline "
            "(year=1980,1981, or 1980,1981 for one --by column); an existing file wins."
        ),
    ] = None,
    privacy_unit: PrivacyUnitOpt = None,
    max_rows_per_unit: MaxRowsOpt = None,
    max_groups_per_unit: MaxGroupsOpt = None,
    nulls: NullsOpt = "error",
    schema: Annotated[
        list[str] | None,
        typer.Option(
            help="Declared column types, COL=TYPE (int, float, decimal(p,s), text); repeatable or "
            "comma-separated. Casts the column (values that do not fit become missing, see "
            "--nulls); median/quantiles of an int column use resolution 1. A CSV's own types "
            "are never used."
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(help="Also write the result rows to FILE.csv, .parquet or .json."),
    ] = None,
    seed: SeedOpt = None,
    ledger: LedgerOpt = None,
    dataset: DatasetOpt = None,
    json_output: JsonOpt = False,
) -> None:
    """Release one differentially private statistic of a column and print its receipt.

    The receipt gives the value, the method and noise, the guarantee and, where it depends
    on public quantities only, the accuracy "± a (95%)". A propose-test-release refusal
    exits 0 (the refusal is the private answer; its budget is spent).

    With --by, one value per group (public groups from --keys, otherwise chosen by private
    partition selection, which needs --delta > 0); with --privacy-unit, neighbours add or
    remove all rows of one person, bounded by --max-rows-per-unit and
    --max-groups-per-unit.

    Without --lower/--upper, --bounds private spends --bounds-share of --epsilon on private
    bounds over the whole column (per person with --privacy-unit) and the rest on the
    release: one charge of --epsilon; the receipt shows both parts.

    With --method sample-aggregate the statistic is evaluated on each of --blocks disjoint
    blocks and the block answers are aggregated privately (Nissim, Raskhodnikova and
    Smith 2007, Section 4); the receipt names the aggregator, the statistic and k.
    """
    from dpsense.cli.tables_io import check_output, emit_grouped, keys_option, write_output
    from dpsense.data import load_column
    from dpsense.methods import Release
    from dpsense.noise import SeededRandomnessWarning
    from dpsense.release import release
    from dpsense.tables import GroupedRelease
    from dpsense.tables.schema import parquet_column_type, parse_schema_items, schema_resolution

    if method not in CLI_METHODS:
        raise InputError(f"--method must be one of {', '.join(CLI_METHODS)}. Got {method!r}.")
    bounds_options = _bounds_option(statistic, lower, upper, bounds, bounds_share, method)
    stat = _statistic(statistic, lower, upper, p, trim, resolution, bounds_optional=True)
    if output is not None:
        check_output(output)  # before any budget is spent
    source = "-" if str(data) == "-" else data
    schema_map = parse_schema_items(schema) if schema else None
    tabular = (
        source == "-"
        or schema_map is not None
        or bool(bounds_options)  # both steps read the file (and a Parquet file's types)
        or by is not None
        or keys is not None
        or privacy_unit is not None
        or max_rows_per_unit is not None
        or max_groups_per_unit is not None
        or nulls != "error"
    )
    accountant = _accountant(ledger)
    label = dataset if dataset is not None else f"{data.name}:{column or ''}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededRandomnessWarning)  # the receipt says so
        if method == "sample-aggregate":
            if tabular:
                raise InputError(
                    "--method sample-aggregate takes one column without groups or a privacy "
                    "unit; use another --method with --by or --privacy-unit."
                )
            result: Release | GroupedRelease = _sample_aggregate(
                load_column(data, column),
                stat,
                blocks,
                aggregator,
                epsilon,
                delta,
                neighbours,
                seed,
                noise,
                accountant,
                label,
            )
        else:
            if blocks is not None:
                raise InputError("--blocks applies only to --method sample-aggregate.")
            run: Any = release
            if accountant is not None:
                run = functools.partial(accountant.release, dataset=label)
            table_options: dict[str, Any] = {}
            from_schema: dict[str, Any] = {}
            if tabular:
                by_cols = tuple(c.strip() for c in by.split(",")) if by else None
                table_options = {
                    "column": column,
                    "by": by_cols,
                    "keys": keys_option(keys, by_cols) if keys and by_cols else keys,
                    "privacy_unit": privacy_unit,
                    "max_rows_per_unit": 1 if max_rows_per_unit is None else max_rows_per_unit,
                    "max_groups_per_unit": 1
                    if max_groups_per_unit is None
                    else max_groups_per_unit,
                    "nulls": nulls,
                    "schema": schema_map,
                }
                if keys is not None and not by_cols:
                    raise InputError("--keys lists groups: pass --by as well.")
            else:  # a Parquet file's declared type, read here: the column arrives as floats
                stat, from_schema = schema_resolution(stat, parquet_column_type(data, column))
            result = run(
                source if tabular else load_column(data, column),
                stat,
                epsilon=epsilon,
                delta=delta,
                method=method,
                neighbours=neighbours,
                rng=seed,
                **table_options,
                **bounds_options,
                **_options(bound, noise, test_fraction, dof),
            )
            if not tabular and isinstance(result, Release) and from_schema:
                source_note = {"resolution_source": from_schema["resolution_source"]}
                result = replace(result, parameters={**result.parameters, **source_note})
    if output is not None:
        write_output(output, result)
    if isinstance(result, GroupedRelease):
        emit_grouped(result, json_output, column)
        return
    _emit(result, json_output, column)
