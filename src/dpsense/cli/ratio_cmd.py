"""``dpsense ratio``: a private ratio a/b of user contributions (Kulesza, Suresh and Wang)."""

from __future__ import annotations

import functools
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from dpsense.cli.release_cmd import (
    DatasetOpt,
    EpsilonOpt,
    JsonOpt,
    LedgerOpt,
    NeighboursOpt,
    SeedOpt,
    _accountant,
    _emit,
)

if TYPE_CHECKING:
    pass

__all__ = ["RATIO_EXAMPLES", "ratio_command"]

RATIO_EXAMPLES = (
    "Examples:\n\n\b\n"
    "  dpsense ratio users.csv --numerator clicked --epsilon 1\n"
    "  dpsense ratio users.csv --numerator bought --denominator visited --epsilon 0.5 --json\n"
)
"""The examples that end ``--help``."""


def ratio_command(
    data: Annotated[Path, typer.Argument(help="A CSV file with one row per user.")],
    numerator: Annotated[
        str,
        typer.Option(help="Column of 0/1 (or yes/no, true/false) contributions to a."),
    ],
    epsilon: EpsilonOpt,
    denominator: Annotated[
        str | None,
        typer.Option(help="Column of 0/1 contributions to b (default: every user counts)."),
    ] = None,
    delta: Annotated[float, typer.Option(help="Privacy parameter delta (local-bound).")] = 0.0,
    method: Annotated[str, typer.Option(help="ksw, naive or local-bound.")] = "ksw",
    neighbours: NeighboursOpt = "add-remove",
    bound_fraction: Annotated[
        float | None, typer.Option(help="local-bound: share of epsilon for the bound (0.1).")
    ] = None,
    seed: SeedOpt = None,
    ledger: LedgerOpt = None,
    dataset: DatasetOpt = None,
    json_output: JsonOpt = False,
) -> None:
    """Release the ratio a/b of user contributions (Kulesza, Suresh and Wang 2024).

    The columns hold 0/1 (or yes/no, true/false) per user.
    """
    from dpsense.data import load_indicator
    from dpsense.methods.ratio import private_ratio
    from dpsense.noise import SeededRandomnessWarning

    a = load_indicator(data, numerator)
    b = load_indicator(data, denominator) if denominator is not None else None
    options: dict[str, Any] = {}
    if bound_fraction is not None:
        options["bound_fraction"] = bound_fraction
    accountant = _accountant(ledger)
    ratio_run: Any = private_ratio
    if accountant is not None:
        ratio_run = functools.partial(
            accountant.private_ratio, dataset=dataset if dataset is not None else data.name
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededRandomnessWarning)  # the receipt says so
        result = ratio_run(
            a,
            b if b is not None else [1.0] * len(a),
            epsilon=epsilon,
            delta=delta,
            method=method,
            neighbours=neighbours,
            rng=seed,
            **options,
        )
    _emit(result, json_output, numerator)
