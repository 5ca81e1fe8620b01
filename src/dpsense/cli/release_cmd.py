"""``dpsense release``: one differentially private answer and its receipt."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from dpsense.cli import _options as opt
from dpsense.cli._options import CLI_METHODS
from dpsense.cli._release_run import ReleaseRequest, run_release

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


def release_command(
    data: Annotated[Path, opt.DATA],
    statistic: Annotated[str, opt.STATISTIC],
    epsilon: Annotated[float, opt.EPSILON],
    column: Annotated[str | None, opt.RELEASE_COLUMN] = None,
    lower: Annotated[float | None, opt.LOWER] = None,
    upper: Annotated[float | None, opt.UPPER] = None,
    bounds: Annotated[str | None, opt.RELEASE_BOUNDS] = None,
    bounds_share: Annotated[float | None, opt.BOUNDS_SHARE] = None,
    delta: Annotated[float, opt.DELTA] = 0.0,
    method: Annotated[str, opt.RELEASE_METHOD] = "auto",
    neighbours: Annotated[str, opt.NEIGHBOURS] = "add-remove",
    p: Annotated[str | None, opt.RELEASE_LEVELS] = None,
    trim: Annotated[int | None, opt.RELEASE_TRIM] = None,
    resolution: Annotated[float | None, opt.RELEASE_RESOLUTION] = None,
    bound: Annotated[float | None, opt.RELEASE_BOUND] = None,
    noise: Annotated[str | None, opt.RELEASE_NOISE] = None,
    test_fraction: Annotated[float | None, opt.RELEASE_TEST_FRACTION] = None,
    dof: Annotated[int | None, opt.RELEASE_DOF] = None,
    blocks: Annotated[int | None, opt.RELEASE_BLOCKS] = None,
    aggregator: Annotated[str, opt.RELEASE_AGGREGATOR] = "mean",
    by: Annotated[str | None, opt.RELEASE_BY] = None,
    keys: Annotated[str | None, opt.RELEASE_KEYS] = None,
    privacy_unit: Annotated[str | None, opt.PRIVACY_UNIT] = None,
    max_rows_per_unit: Annotated[int | None, opt.MAX_ROWS] = None,
    max_groups_per_unit: Annotated[int | None, opt.MAX_GROUPS] = None,
    nulls: Annotated[str, opt.NULLS] = "error",
    interval: Annotated[str, opt.INTERVAL] = "privacy",
    schema: Annotated[list[str] | None, opt.RELEASE_SCHEMA] = None,
    output: Annotated[Path | None, opt.RELEASE_OUTPUT] = None,
    seed: Annotated[int | None, opt.SEED] = None,
    ledger: Annotated[Path | None, opt.LEDGER] = None,
    dataset: Annotated[str | None, opt.DATASET] = None,
    json_output: Annotated[bool, opt.JSON] = False,
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
    # The parameters, and only they, are the local names here: one field each.
    run_release(ReleaseRequest(**locals()))
