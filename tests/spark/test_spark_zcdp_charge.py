"""zCDP on Spark: a query's charge is at least the rho of the per-group releases that run
(the check of ``tests/accounting/test_zcdp_charged_what_runs.py``, on a Spark frame)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.accounting.test_zcdp_charged_what_runs import (
    PATHS,
    _table,
    check_charged_what_runs,
)
from tests.spark.conftest import to_spark

pytestmark = [pytest.mark.spark, pytest.mark.filterwarnings("ignore::UserWarning")]


@pytest.mark.parametrize("s", [1, 12])
@pytest.mark.parametrize("path", ["dict", "statistic"])
def test_spark_zcdp_charge_covers_the_per_group_releases(
    spark: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, path: str, s: int
) -> None:
    data = to_spark(spark, _table(s))
    check_charged_what_runs(monkeypatch, tmp_path, PATHS[path], data, s)
