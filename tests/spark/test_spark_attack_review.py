"""The attack review's holes on Spark (tests/neighbours/test_attack_review.py): an
aggregated expression that is not a number, an alias equal to a column up to case, and
the sign of a selected zero key, on a Spark DataFrame as on DuckDB."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpsense as ds
from tests.spark.conftest import to_spark

pytestmark = [
    pytest.mark.spark,
    pytest.mark.filterwarnings("ignore::dpsense.SeededRandomnessWarning"),
]

PERSON = 17000


def _sql(query: str, frame: Any, **args: Any) -> Any:
    base: dict[str, Any] = {"epsilon": 1.0, "privacy_unit": "id", "rng": 3}
    return ds.sql(query, tables={"t": frame}, **{**base, **args})


def test_an_aggregated_text_expression_is_refused_from_its_type(spark: Any) -> None:
    d = pd.DataFrame({"id": np.arange(30), "x": np.ones(30)})
    d2 = pd.concat([d, pd.DataFrame({"id": [PERSON], "x": [1.0]})], ignore_index=True)
    query = f"SELECT AVG(CASE WHEN id = {PERSON} THEN 'x' ELSE '1' END) AS k FROM t"
    messages = []
    for frame in (d, d2):
        with pytest.raises(ds.InputError, match="aggregated as a number") as err:
            _sql(query, to_spark(spark, frame), bounds={"k": (0.0, 10.0)})
        messages.append(str(err.value))
    assert messages[0] == messages[1]


def test_an_alias_equal_to_the_unit_up_to_case_is_refused(spark: Any) -> None:
    """``withColumn("ID", ...)`` replaced the unit ``id`` (Spark matches names without
    regard to case), and the release then failed with a KeyError."""
    d = pd.DataFrame({"id": np.arange(30), "x": np.ones(30)})
    with pytest.raises(ds.InputError, match="'ID'"):
        _sql('SELECT SUM(x + 1) AS "ID" FROM t', to_spark(spark, d), bounds={"ID": (0, 10)})


def test_a_selected_zero_key_is_shown_without_a_sign(spark: Any) -> None:
    d = pd.DataFrame({"id": np.arange(200), "x": np.zeros(200)})
    query = "SELECT CEIL(x / 10) * 10 AS b, COUNT(*) AS n FROM t GROUP BY b"
    signs = set()
    for person in (1000, PERSON):
        row = pd.DataFrame({"id": [person], "x": [-3.0]})
        frame = to_spark(spark, pd.concat([row, d], ignore_index=True))
        got = _sql(query, frame, epsilon=5.0, delta=1e-3).to_pandas()["b"].tolist()
        signs |= {math.copysign(1.0, k) for k in got}
    assert signs == {1.0}


_EXTREMES = pd.DataFrame(
    {
        "id": np.arange(400),
        "x": np.r_[np.full(200, 1e300), np.full(200, 3e9)],
        "v": np.r_[np.full(200, -(2**31)), np.full(200, -(2**63))].astype(np.int64),
    }
)


@pytest.mark.xfail(
    strict=True,
    reason="the engines differ on a value out of its type's range: DuckDB gives NULL (the "
    "row is dropped) where Spark with ANSI mode off saturates (CAST(1e300 AS INTEGER) is "
    "2147483647; FLOOR of a double is a BIGINT, saturated) or wraps (ABS and // of the "
    "least BIGINT); a float cast to text is '1e+300' in DuckDB, '1.0E300' in Spark. Each "
    "engine's map is still of one row (the release is private on either); docs/sql.md "
    "lists the differences",
)
@pytest.mark.parametrize(
    "expression",
    ["FLOOR(x) * 10", "CAST(x AS INTEGER)", "ABS(v)", "v // -1", "CAST(x AS VARCHAR)"],
)
def test_an_expression_out_of_range_groups_the_same_on_both_engines(
    spark: Any, expression: str
) -> None:
    query = f"SELECT {expression} AS b, COUNT(*) AS n FROM t GROUP BY b"
    args = {"epsilon": 10.0, "delta": 1e-3}
    got = [
        _sql(query, frame, **args).to_pandas()["b"].tolist()
        for frame in (_EXTREMES, to_spark(spark, _EXTREMES))
    ]
    assert got[0] == got[1]
