"""``dpsense bounds``: private (lower, upper) bounds of a column, to use in a release."""

from __future__ import annotations

import functools
import warnings
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich import box
from rich.table import Table

from dpsense.cli._shared import _console, _fmt, _print_json
from dpsense.cli.release_cmd import DatasetOpt, EpsilonOpt, JsonOpt, LedgerOpt, SeedOpt, _accountant

if TYPE_CHECKING:
    pass

__all__ = ["bounds_command"]

BOUNDS_EXAMPLES = (
    "Examples:\n\n\b\n"
    "  dpsense bounds incomes.csv --column income --epsilon 0.2\n"
    "  dpsense bounds panel.parquet --column hours --privacy-unit person --epsilon 0.2 --json\n"
    "  dpsense bounds incomes.csv --column income --epsilon 0.2 --ledger budget.db\n"
)
"""The examples that end ``--help``."""


def bounds_command(
    data: Annotated[
        str, typer.Argument(help="A CSV or Parquet file (or - for CSV on standard input).")
    ],
    epsilon: EpsilonOpt,
    column: Annotated[
        str | None, typer.Option(help="The value column (needed when there are several).")
    ] = None,
    privacy_unit: Annotated[
        str | None, typer.Option(help="Column naming the person: protect all their rows.")
    ] = None,
    max_rows_per_unit: Annotated[
        int, typer.Option(help="Rows kept per person (with --privacy-unit).")
    ] = 1,
    nulls: Annotated[str, typer.Option(help="error (default) or drop.")] = "error",
    schema: Annotated[
        list[str] | None,
        typer.Option(
            help="Declared column types, COL=TYPE (int, float, decimal(p,s), text); repeatable or "
            "comma-separated. Casts the column as release --schema does (values that do not "
            "fit become missing, see --nulls)."
        ),
    ] = None,
    seed: SeedOpt = None,
    ledger: LedgerOpt = None,
    dataset: DatasetOpt = None,
    json_output: JsonOpt = False,
) -> None:
    """Private bounds [lower, upper] of a column (epsilon-DP): grid points 0 or +-2^k that
    aim to clip at most 2% of the rows at each end (noise adds a few rows per person / eps).

    One exponential mechanism over pairs of grid points (docs/bounds.md). Pass them as
    --lower/--upper of a later release; charge both to one ledger to spend one budget.
    """
    from dpsense.bounds import private_bounds
    from dpsense.noise import SeededRandomnessWarning
    from dpsense.tables.schema import parse_schema_items

    accountant = _accountant(ledger)
    run: Any = private_bounds
    if accountant is not None:
        run = functools.partial(
            accountant.private_bounds, dataset=dataset if dataset is not None else data
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededRandomnessWarning)  # the receipt says so
        result = run(
            data,
            epsilon=epsilon,
            column=column,
            privacy_unit=privacy_unit,
            max_rows_per_unit=max_rows_per_unit,
            nulls=nulls,
            schema=parse_schema_items(schema) if schema else None,
            rng=seed,
        )
    lower, upper = result.value
    if json_output:
        _print_json({"lower": lower, "upper": upper, "epsilon": result.epsilon, "delta": 0.0})
        return
    console = _console()
    table = Table(
        title="Private bounds" + (f" of {column}" if column else ""),
        box=box.SIMPLE_HEAVY,
        show_header=False,
    )
    table.add_column("field")
    table.add_column("value", justify="right")
    table.add_row("lower", _fmt(lower))
    table.add_row("upper", _fmt(upper))
    table.add_row("method", "exponential mechanism over pairs of log-scale grid points")
    table.add_row("epsilon", f"{result.epsilon:g}")
    if result.seeded:
        table.add_row("seeded", "yes: reproducible, NOT secure")
    console.print(table)
    console.print(f"Use them as: --lower {lower:.17g} --upper {upper:.17g}")
