"""``dpsense release`` at work: its options checked, then the release made, charged and shown.

:func:`run_release` follows the command's options in this order: every option is checked
before anything is read or spent; the ledger is opened; the column (or table) is released,
by ``--method sample-aggregate`` or by :func:`dpsense.release.release`; --output is
written; the receipt (or the table of groups) is printed. The library is imported when a
release runs, not when this module loads (``dpsense release --help`` stays light).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpsense.cli._options import CLI_METHODS
from dpsense.cli._shared import _accountant, _seeded_quietly, _statistic
from dpsense.defaults import BOUNDS_SHARE
from dpsense.errors import InputError

if TYPE_CHECKING:
    from dpsense.accountant import Accountant
    from dpsense.methods import Release
    from dpsense.statistics import Statistic
    from dpsense.tables import GroupedRelease

__all__ = ["ReleaseRequest", "run_release"]


@dataclass(frozen=True, kw_only=True)
class ReleaseRequest:
    """The options of ``dpsense release`` as the command received them: one field each,
    named as the command's parameters (their help is in ``release_cmd``)."""

    data: Path
    statistic: str
    epsilon: float
    column: str | None
    lower: float | None
    upper: float | None
    bounds: str | None
    bounds_share: float | None
    delta: float
    method: str
    neighbours: str
    p: str | None
    trim: int | None
    resolution: float | None
    bound: float | None
    noise: str | None
    test_fraction: float | None
    dof: int | None
    blocks: int | None
    aggregator: str
    by: str | None
    keys: str | None
    privacy_unit: str | None
    max_rows_per_unit: int | None
    max_groups_per_unit: int | None
    nulls: str
    interval: str
    schema: list[str] | None
    output: Path | None
    seed: int | None
    ledger: Path | None
    dataset: str | None
    json_output: bool


@dataclass(frozen=True)
class _Checked:
    """What the options give once checked, before anything is read or spent."""

    stat: Statistic
    bounds: dict[str, Any]  # bounds="private" and its share for --bounds private, else empty
    schema: dict[str, str] | None  # --schema, parsed
    tabular: bool  # DATA is read as a table (groups, privacy unit, schema...), not as a column


def run_release(request: ReleaseRequest) -> None:
    """Release as the options say, charge --ledger, write --output and print the result."""
    from dpsense.cli.receipt import emit_receipt
    from dpsense.cli.tables_io import emit_grouped, write_output
    from dpsense.tables import GroupedRelease

    checked = _check(request)
    accountant = _accountant(request.ledger)
    data, column = request.data, request.column
    label = request.dataset if request.dataset is not None else f"{data.name}:{column or ''}"
    with _seeded_quietly():  # the receipt says so
        if request.method == "sample-aggregate":
            result: Release | GroupedRelease = _sample_aggregate(
                request, checked, accountant, label
            )
        else:
            result = _release_column_or_table(request, checked, accountant, label)
    if request.output is not None:
        write_output(request.output, result)
    if isinstance(result, GroupedRelease):
        emit_grouped(result, request.json_output, request.column)
        return
    emit_receipt(result, request.json_output, request.column)


def _check(request: ReleaseRequest) -> _Checked:
    """Every option checked, in the order the errors are reported: nothing is read or
    spent yet."""
    from dpsense.cli.tables_io import check_output
    from dpsense.query.plan import ReleaseArgs, asks_for_table
    from dpsense.tables.schema import parse_schema_items

    if request.method not in CLI_METHODS:
        raise InputError(
            f"--method must be one of {', '.join(map(repr, CLI_METHODS))}. Got "
            f"{request.method!r} instead."
        )
    bounds = _bounds_option(request)
    p, trim, resolution = request.p, request.trim, request.resolution
    stat = _statistic(
        request.statistic, request.lower, request.upper, p, trim, resolution, bounds_optional=True
    )
    if request.output is not None:
        check_output(request.output)  # before any budget is spent
    schema = parse_schema_items(request.schema) if request.schema else None
    # the release's own test of its arguments (a table, or one column of numbers), and
    # the reasons to read DATA as a table that only a file has
    args = ReleaseArgs(
        by=request.by,
        keys=request.keys,
        privacy_unit=request.privacy_unit,
        max_rows_per_unit=1 if request.max_rows_per_unit is None else request.max_rows_per_unit,
        max_groups_per_unit=(
            1 if request.max_groups_per_unit is None else request.max_groups_per_unit
        ),
        schema=schema,
    )
    tabular = (
        asks_for_table(args)
        or _source(request.data) == "-"  # standard input is a CSV table
        or bool(bounds)  # both steps read the file (and a Parquet file's types)
        or request.nulls != "error"  # the table reader drops (or refuses) missing values
    )
    return _Checked(stat=stat, bounds=bounds, schema=schema, tabular=tabular)


def _source(data: Path) -> Path | str:
    """DATA as the release reads it: "-" (CSV on standard input) or the file."""
    return "-" if str(data) == "-" else data


def _bounds_option(request: ReleaseRequest) -> dict[str, Any]:
    """The release's ``bounds``/``bounds_share`` from --bounds, or an InputError that names
    --lower/--upper and --bounds private when neither way is given."""
    from dpsense.statistics import statistic_key

    statistic, lower, upper = request.statistic, request.lower, request.upper
    statistic_key(statistic)  # an unknown name first, not its bounds
    bounds, bounds_share = request.bounds, request.bounds_share
    if bounds is not None and bounds != "private":
        raise InputError(
            f"--bounds takes 'private' (find the bounds privately); got {bounds!r}. For public "
            "bounds pass --lower and --upper."
        )
    if bounds_share is not None and bounds is None:
        raise InputError(
            "--bounds-share is the share of epsilon spent on private bounds: pass --bounds "
            "private too, or drop it."
        )
    given = lower is not None or upper is not None
    if bounds is not None:
        if given:
            raise InputError("Pass --lower and --upper, or --bounds private, not both.")
        if request.method == "sample-aggregate":
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


def _release_column_or_table(
    request: ReleaseRequest, checked: _Checked, accountant: Accountant | None, label: str
) -> Release | GroupedRelease:
    """:func:`dpsense.release.release` of the column or table (charged to the ledger)."""
    import numpy as np

    from dpsense.data import load_column
    from dpsense.methods import Release
    from dpsense.pipeline import Request, prepare_release
    from dpsense.query.plan import ReleaseArgs
    from dpsense.release import release
    from dpsense.tables.handle import parquet_column_type
    from dpsense.tables.schema import schema_resolution

    if request.blocks is not None:
        raise InputError("--blocks applies only to --method sample-aggregate.")
    run: Any = release
    if accountant is not None:
        run = functools.partial(accountant.release, dataset=label)
    stat = checked.stat
    table_options: dict[str, Any] = {}
    from_schema: dict[str, Any] = {}
    if checked.tabular:
        table_options = _table_options(request, checked.schema)
    else:
        # every argument checked before the column is read (the release checks them again
        # on it): a bad request's error never depends on the data (docs/entry_points.md)
        args = ReleaseArgs(
            method=request.method,
            neighbours=request.neighbours,
            interval=request.interval,
            **checked.bounds,
        )
        eps, dlt = request.epsilon, request.delta
        prepare_release(Request(np.zeros(0), stat, args, eps, dlt, None, _method_options(request)))
        # a Parquet file's declared type, read here: the column arrives as floats
        stat, from_schema = schema_resolution(
            stat, parquet_column_type(request.data, request.column)
        )
    result: Release | GroupedRelease = run(
        _source(request.data) if checked.tabular else load_column(request.data, request.column),
        stat,
        epsilon=request.epsilon,
        delta=request.delta,
        method=request.method,
        neighbours=request.neighbours,
        rng=request.seed,
        interval=request.interval,
        **table_options,
        **checked.bounds,
        **_method_options(request),
    )
    if not checked.tabular and isinstance(result, Release) and from_schema:
        source_note = {"resolution_source": from_schema["resolution_source"]}
        result = replace(result, parameters={**result.parameters, **source_note})
    return result


def _table_options(request: ReleaseRequest, schema: dict[str, str] | None) -> dict[str, Any]:
    """The release's table options: groups, public keys, privacy unit, nulls, schema."""
    from dpsense.cli.tables_io import keys_option

    by = tuple(c.strip() for c in request.by.split(",")) if request.by else None
    rows, groups = request.max_rows_per_unit, request.max_groups_per_unit
    options = {
        "column": request.column,
        "by": by,
        "keys": keys_option(request.keys, by) if request.keys and by else request.keys,
        "privacy_unit": request.privacy_unit,
        "max_rows_per_unit": 1 if rows is None else rows,
        "max_groups_per_unit": 1 if groups is None else groups,
        "nulls": request.nulls,
        "schema": schema,
    }
    if request.keys is not None and not by:
        raise InputError("--keys lists groups: pass --by as well.")
    return options


def _method_options(request: ReleaseRequest) -> dict[str, Any]:
    """The method's own options that were given: --bound, --noise, --test-fraction, --dof."""
    given = {
        "bound": request.bound,
        "noise": request.noise,
        "test_fraction": request.test_fraction,
        "dof": request.dof,
    }
    return {name: value for name, value in given.items() if value is not None}


def _sample_aggregate(
    request: ReleaseRequest, checked: _Checked, accountant: Accountant | None, label: str
) -> Release:
    """--method sample-aggregate: the statistic on each of --blocks blocks, aggregated."""
    from dpsense.data import load_column
    from dpsense.methods.global_sensitivity import output_range
    from dpsense.methods.sample_aggregate import check_arguments
    from dpsense.query.one_step import AggregateRequest, door_name, released
    from dpsense.statistics import BoundedStatistic, Count, Sum

    stat = checked.stat
    if checked.tabular:
        raise InputError(
            "--method sample-aggregate takes one column without groups or a privacy "
            "unit; use another --method with --by or --privacy-unit."
        )
    if request.blocks is None:
        raise InputError("--method sample-aggregate needs --blocks K (the number of blocks).")
    if request.interval != "privacy":
        raise InputError(
            "--interval privacy+sampling applies to the other methods: a sample-and-aggregate "
            "release has no interval."
        )
    if isinstance(stat, Count | Sum) or not isinstance(stat, BoundedStatistic):
        raise InputError(
            "sample-aggregate needs a statistic with a bounded output (mean, median, "
            "quantile, variance, std, trimmed-mean)."
        )
    lo, hi = output_range(stat)
    # every argument checked before the column is read: a bad request's error never
    # depends on the data (docs/entry_points.md)
    check_arguments(
        request.blocks, lo, hi, request.epsilon, request.delta, request.neighbours,
        request.aggregator,
    )  # fmt: skip
    values = load_column(request.data, request.column)
    options: dict[str, Any] = {
        "blocks": request.blocks,
        "lower": lo,
        "upper": hi,
        "aggregator": request.aggregator,
        "neighbours": request.neighbours,
        "noise": request.noise,
        "function_name": stat.name,  # the receipt names f by the statistic evaluated per block
    }
    where = door_name(AggregateRequest, accountant is not None)
    eps, dlt, seed = request.epsilon, request.delta, request.seed
    return released(
        AggregateRequest(eps, dlt, seed, options, where, label, values, stat._value), accountant
    )
