"""The neighbour harness for ``interval="privacy+sampling"`` (population intervals) on
``ds.release``, a query, the accountant (epsilon and rho budgets), ``ds.sql`` and the
command line's ``release`` and ``sql``: once the request is fixed, whether it releases or
raises (a statistic without a population interval is an InputError from the request
alone), what it says, its columns and its charge do not change when one person is added.

The requests are the harness's own (``draw_request``), with the option set; in most of
them every statistic is made one that has a population interval (a mean, a median or a
quantile), so that most cases release."""

from __future__ import annotations

import zlib
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from tests.neighbours.harness import (
    CONTAINERS,
    Request,
    Stat,
    Tables,
    check_cases,
    draw_request,
    with_precondition,
)

pytestmark = pytest.mark.filterwarnings("ignore::dpsense.SeededRandomnessWarning")

POPULATION = "privacy+sampling"
SUPPORTED = ("mean", "median", "quantile")
QUICK = {"release": 30, "query": 20, "accountant-rho": 15, "sql": 25, "cli-release": 12,
         "cli-sql": 12}  # fmt: skip
FILES = ("csv", "parquet")


def _supported(rs: np.random.Generator, stat: Stat, request: Request) -> Stat:
    """``stat`` as a mean, a median or a quantile of a value column (its bounds unless
    they are found privately)."""
    kind = str(rs.choice(SUPPORTED))
    column = stat.column or str(rs.choice(["v", "x"]))
    bounds = None if request.private_bounds else dict(request.column_bounds)[column]
    ps = (float(rs.choice([0.1, 0.5, 0.9])),) if kind == "quantile" else ()
    return Stat(stat.name, kind, column, bounds, ps)


def population_request(rs: np.random.Generator, entry: str, tables: Tables, index: int) -> Request:
    """The harness's request for ``entry`` with ``interval="privacy+sampling"``; in four
    cases of five every statistic has a population interval."""
    request = draw_request(rs, entry, tables, index)
    if rs.random() < 0.8:
        stats = tuple(_supported(rs, s, request) for s in request.stats)
        request = with_precondition(replace(request, stats=stats), tables)
    return replace(request, interval=POPULATION)


def _seed(entry: str) -> int:
    return zlib.crc32(f"{entry}/population".encode())


@pytest.mark.parametrize("entry", ["release", "query", "accountant-rho", "sql"])
def test_python_doors(entry: str, tmp_path: Path) -> None:
    check_cases(entry, CONTAINERS, QUICK[entry], _seed(entry), tmp_path, population_request)


@pytest.mark.parametrize("entry", ["cli-release", "cli-sql"])
def test_command_line(entry: str, tmp_path: Path) -> None:
    check_cases(entry, FILES, QUICK[entry], _seed(entry), tmp_path, population_request)


@pytest.mark.slow
@pytest.mark.parametrize("entry", ["release", "query", "accountant", "accountant-rho", "sql"])
def test_python_doors_many(entry: str, tmp_path: Path) -> None:
    check_cases(entry, CONTAINERS, 200, _seed(entry) + 1, tmp_path, population_request)
