"""``dpsense ratio``: a private ratio a/b of user contributions (Kulesza, Suresh and Wang)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from dpsense.cli import _options as opt
from dpsense.cli._shared import _accountant, _seeded_quietly
from dpsense.cli.receipt import emit_receipt
from dpsense.errors import InputError

__all__ = ["RATIO_EXAMPLES", "ratio_command"]

RATIO_EXAMPLES = (
    "Examples:\n\n\b\n"
    "  dpsense ratio users.csv --numerator clicked --epsilon 1\n"
    "  dpsense ratio users.csv --numerator bought --denominator visited --epsilon 0.5 --json\n"
)
"""The examples that end ``--help``."""


def ratio_command(
    data: Annotated[Path, opt.RATIO_DATA],
    numerator: Annotated[str, opt.RATIO_NUMERATOR],
    epsilon: Annotated[float, opt.EPSILON],
    denominator: Annotated[str | None, opt.RATIO_DENOMINATOR] = None,
    delta: Annotated[float, opt.RATIO_DELTA] = 0.0,
    method: Annotated[str, opt.RATIO_METHOD] = "ksw",
    neighbours: Annotated[str, opt.NEIGHBOURS] = "add-remove",
    bound_fraction: Annotated[float | None, opt.RATIO_BOUND_FRACTION] = None,
    seed: Annotated[int | None, opt.SEED] = None,
    ledger: Annotated[Path | None, opt.LEDGER] = None,
    dataset: Annotated[str | None, opt.DATASET] = None,
    json_output: Annotated[bool, opt.JSON] = False,
) -> None:
    """Release the ratio a/b of user contributions (Kulesza, Suresh and Wang 2024).

    The columns hold 0/1 (or yes/no, true/false) per user.
    """
    from dpsense.data import load_indicator
    from dpsense.methods.ratio import check_ratio_request
    from dpsense.query.one_step import RatioRequest, door_name, released

    options: dict[str, Any] = {}
    if bound_fraction is not None:
        options["bound_fraction"] = bound_fraction
    # the request is checked before a column is read: what a bad request says never
    # depends on the data
    check_ratio_request(epsilon, delta, method, neighbours, options)
    a = load_indicator(data, numerator, argument="numerator")
    b = None
    if denominator is not None:
        b = load_indicator(data, denominator, argument="denominator")
        if (a > b).any():  # the data's precondition, in the command line's words
            raise InputError(
                f"Every user counted in --numerator {numerator!r} must be counted in "
                f"--denominator {denominator!r}, but some have a 1 in the first and a 0 "
                "in the second. Fix those rows (a ratio a/b counts a subset of b)."
            )
    accountant = _accountant(ledger)
    where = door_name(RatioRequest, accountant is not None)
    label = dataset if dataset is not None else data.name
    options = {"method": method, "neighbours": neighbours, **options}
    denominators = b if b is not None else [1.0] * len(a)
    with _seeded_quietly():  # the receipt says so
        result = released(
            RatioRequest(epsilon, delta, seed, options, where, label, a, denominators),
            accountant,
        )
    emit_receipt(result, json_output, numerator)
