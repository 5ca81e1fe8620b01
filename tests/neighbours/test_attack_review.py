"""An attacker's review of row-wise expressions, the caps tool and sample-and-aggregate:
each test is one hole found, on a pair of neighbouring tables D and D' = D + one person,
where what a fixed request says (release or error, its message, its warnings, the text of
its groups) must not differ (docs/sql.md §3: "What a request says and charges is decided
from its text, the declared types and the public arguments alone")."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpsense as ds
from dpsense.errors import InputError

pytestmark = pytest.mark.filterwarnings("ignore::dpsense.SeededRandomnessWarning")

PERSON = 17000


def _outcome(run: Callable[[], Any]) -> tuple[str, str]:
    """("release", its columns) or (the error's class, its message)."""
    try:
        result = run()
    except Exception as exc:
        return type(exc).__name__, str(exc)
    frame = result.to_pandas() if hasattr(result, "to_pandas") else None
    return "release", "" if frame is None else ",".join(map(str, frame.columns))


def _with_person(frame: pd.DataFrame, **values: Any) -> pd.DataFrame:
    row = pd.DataFrame({"id": [PERSON], **{k: [v] for k, v in values.items()}})
    return pd.concat([frame, row.astype(frame.dtypes.to_dict())], ignore_index=True)


def _sql(query: str, frame: pd.DataFrame, **args: Any) -> Callable[[], Any]:
    base: dict[str, Any] = {"epsilon": 1.0, "privacy_unit": "id", "rng": 3}
    return lambda: ds.sql(query, tables={"t": frame}, **{**base, **args})


# --- an aggregated expression whose type is not a number ---------------------------------


@pytest.mark.parametrize(
    "expression",
    [
        f"CASE WHEN id = {PERSON} THEN 'x' ELSE '1' END",  # text
        "CAST(s AS DATE)",  # a date: its rows fail the cast on D, one parses on D'
        "(x, x)",  # a row value
    ],
)
@pytest.mark.parametrize("nulls", ["error", "drop"])
def test_an_aggregated_expression_of_text_or_dates_says_the_same_on_both_neighbours(
    expression: str, nulls: str
) -> None:
    """AVG(CASE WHEN id = 17000 THEN 'x' ELSE '1' END) released on D and raised "some
    entries are not numbers" on D + person 17000: the value check of a computed column
    read its values. Its type is public (bound from the declared types), so a computed
    column that is not a number is refused from the text on both."""
    d = pd.DataFrame({"id": np.arange(60), "x": np.ones(60), "s": ["nope"] * 60})
    d2 = _with_person(d, x=1.0, s="2020-01-01")
    query = f"SELECT COUNT(*) AS n, AVG({expression}) AS k FROM t"
    args = {"bounds": {"k": (0.0, 10.0)}, "nulls": nulls}
    first, second = _outcome(_sql(query, d, **args)), _outcome(_sql(query, d2, **args))
    assert first == second
    assert first[0] == "InputError"
    assert "'k'" in first[1]


def test_a_boolean_or_decimal_expression_is_still_aggregated() -> None:
    d = pd.DataFrame({"id": np.arange(60), "x": np.ones(60)})
    for expression in ("x > 0", "CAST(x AS DECIMAL(6, 2))", "CAST(x AS INTEGER)"):
        got = _outcome(_sql(f"SELECT SUM({expression}) AS k FROM t", d, bounds={"k": (0, 1)}))
        assert got[0] == "release", (expression, got)


# --- a pandas object column read by an expression or WHERE ---------------------------------


@pytest.mark.parametrize(
    ("query", "args"),
    [
        ("SELECT SUM(o + 1) AS k FROM t", {"bounds": {"k": (0.0, 10.0)}}),
        ("SELECT o * 2 AS k, COUNT(*) AS n FROM t GROUP BY k", {"keys": {"k": [2]}}),
        ("SELECT COUNT(*) AS n FROM t WHERE o + 1 > 0", {}),
    ],
)
def test_an_object_column_read_by_an_expression_says_the_same_on_both_neighbours(
    query: str, args: dict[str, Any]
) -> None:
    """A pandas object column's type is inferred by DuckDB from its values: numbers on D,
    text once the person's "n/a" is in, and ``o + 1`` then no longer binds. It must be
    declared (``schema=``), as a CSV file's column must."""
    d = pd.DataFrame({"id": np.arange(60), "o": pd.Series([1] * 60, dtype=object)})
    d2 = pd.concat(
        [d, pd.DataFrame({"id": [PERSON], "o": pd.Series(["n/a"], dtype=object)})],
        ignore_index=True,
    )
    first, second = _outcome(_sql(query, d, **args)), _outcome(_sql(query, d2, **args))
    assert first == second
    assert first[0] == "InputError"
    assert "schema" in first[1]
    declared = _outcome(_sql(query, d, schema={"o": "int"}, **args))
    assert declared[0] == "release"


# --- a computed column named like a column of the table, up to case --------------------------


@pytest.mark.parametrize(
    "alias", ["ID", "Id", "X", "dpsense_has_0", "DPSENSE_COMPUTED", "dpsense_owner"]
)
def test_an_alias_equal_to_a_column_up_to_case_or_an_internal_name_is_refused(
    alias: str,
) -> None:
    """DuckDB (and Spark) resolve names without regard to case: ``SUM(x + 1) AS "ID"``
    with the privacy unit ``id`` summed the unit's ids (DuckDB) or failed with a KeyError
    (Spark), and ``AS dpsense_has_0`` beside ``COUNT(x)`` made that count read the
    computed column. Both are refused from the text, as an exact name is."""
    d = pd.DataFrame({"id": np.arange(60), "x": np.ones(60)})
    query = f'SELECT COUNT(x) AS c, SUM(x + 1) AS "{alias}" FROM t'
    with pytest.raises(InputError, match=repr(alias)):
        _sql(query, d, bounds={alias: (0.0, 10.0)})()


# --- the sign of a zero group key ---------------------------------------------------------


@pytest.mark.parametrize(
    "query",
    [
        "SELECT CEIL(x / 10) * 10 AS b, COUNT(*) AS n FROM t GROUP BY b",
        "SELECT x, COUNT(*) AS n FROM t GROUP BY x",
        "SELECT x, COUNT(*) AS n, SUM(x) AS s FROM t GROUP BY x",  # one shared selection
    ],
)
def test_a_selected_zero_key_is_shown_the_same_whoever_is_in_it(query: str) -> None:
    """CEIL(-0.3) is -0.0: with private partition selection the released key of the
    zero group was the first row's, "-0.0" when the person's row came first, "0.0"
    otherwise."""
    d = pd.DataFrame({"id": np.arange(200), "x": np.zeros(200)})
    args: dict[str, Any] = {"epsilon": 5.0, "delta": 1e-3, "max_groups_per_unit": 1}
    if "SUM" in query:
        args["bounds"] = {"x": (-1.0, 1.0)}
    signs = set()
    for person in (1000, 1001, PERSON):  # which row the group shows turns on the unit
        row = pd.DataFrame({"id": [person], "x": [-3.0 if "CEIL" in query else -0.0]})
        d2 = pd.concat([row, d], ignore_index=True)
        for frame in (d, d2):
            keys = _sql(query, frame, **args)().to_pandas().iloc[:, 0].tolist()
            signs |= {math.copysign(1.0, k) for k in keys}
    assert signs == {1.0}


# --- sample-and-aggregate: the warnings of f --------------------------------------------


def test_sample_and_aggregate_says_nothing_of_what_f_warns_on_a_block() -> None:
    """f = log(min(block)) warns "divide by zero" on the block holding the person's 0: a
    warning an observer sees, only on D'. A failed or warning block gives its value or the
    midpoint, silently."""
    x = np.linspace(1, 10, 200)
    seen = []
    for data in (x, np.append(x, 0.0)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ds.sample_and_aggregate(
                data,
                lambda b: float(np.log(np.min(b))),
                epsilon=1.0,
                lower=0,
                upper=5,
                blocks=20,
                rng=1,
            )
        seeded = ds.SeededRandomnessWarning
        seen.append([str(w.message) for w in caught if not issubclass(w.category, seeded)])
    assert seen == [[], []]
