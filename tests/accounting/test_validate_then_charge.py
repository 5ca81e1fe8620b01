"""Validate, then charge, then release (issue 32, item 5).

Everything a release refuses from its arguments and the table's columns alone must be
refused before ``Accountant.release`` (and ``ds.sql(..., accountant=...)``) charges: a
request that fails leaves ``spent`` as it was, on an epsilon budget, a rho budget and a
ledger. The requests below each used to fail after the charge: an IndexError (a dict of
two statistics without bounds on a one-column input with ``bounds="private"``), a bad
``rng``, substitute neighbours on a table, a column the table lacks, a dict mixing named
and unnamed columns, a method that does not fit its statistic, an option out of range, a
public key that does not fit the by-column's declared type.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dpsense as ds
from dpsense.accounting import Ledger
from dpsense.noise.rng import SeededRandom

pd = pytest.importorskip("pandas")

X = np.linspace(0.0, 100.0, 300)
TABLE = pd.DataFrame({"id": np.arange(300) % 60, "g": ["a", "b", "c"] * 100, "x": X, "y": X / 2})
M, A = ds.Median(0, 100), ds.Mean(0, 100)

# (data, statistic, keyword arguments) of a request refused from public things alone
REFUSED: dict[str, tuple[Any, Any, dict[str, Any]]] = {
    "dict mixing named and unnamed columns": (TABLE, {"a": ("x", M), "b": A}, {}),
    "dict without columns on a table of several": (TABLE, {"a": M, "b": A}, {}),
    "bad rng": (X, M, {"rng": "seed"}),
    "negative rng seed, dict": (X, {"a": M, "n": ds.Count()}, {"rng": -1}),
    "substitute neighbours on a table": (TABLE, M, {"column": "x", "neighbours": "substitute"}),
    "missing value column": (TABLE, A, {"column": "nope"}),
    "missing by column": (TABLE, ds.Count(), {"by": "nope", "keys": ["a"]}),
    "missing privacy unit": (TABLE, ds.Count(), {"privacy_unit": "nope"}),
    "missing column of a dict": (TABLE, {"a": ("nope", A), "n": ds.Count()}, {}),
    "missing schema column": (TABLE, A, {"column": "x", "schema": {"nope": "int"}}),
    "missing where column": (TABLE, A, {"column": "x", "where": "nope > 1"}),
    "by on an array": (X, ds.Count(), {"by": "g", "keys": ["a"]}),
    "a key off the by-column's declared type": (
        TABLE,
        ds.Count(),
        {"by": "id", "keys": [1, "unknown"]},
    ),
    "a key off the declared type, dict": (
        TABLE,
        {"n": ds.Count(), "m": ("x", M)},
        {"by": "id", "keys": [1, "unknown"]},
    ),
    "ksw for a median": (X, M, {"method": "ksw"}),
    "exponential for a mean": (X, A, {"method": "exponential"}),
    "smooth for a count": (X, ds.Count(), {"method": "smooth"}),
    "adaptive for a sum": (X, ds.Sum(0, 100), {"method": "adaptive"}),
    "ksw for a median in a dict": (TABLE, {"m": ("x", M), "a": ("x", A)}, {"method": "ksw"}),
    "gaussian noise without delta": (X, A, {"method": "global", "noise": "gaussian"}),
    "unknown smooth noise, grouped": (
        TABLE,
        M,
        {"method": "smooth", "noise": "xyz", "column": "x", "by": "g", "keys": ["a", "b"]},
    ),
    "ptr without a bound": (X, M, {"method": "ptr", "delta": 1e-6}),
    "ptr without delta": (X, M, {"method": "ptr", "bound": 1.0}),
    "adaptive test fraction out of range": (X, M, {"method": "adaptive", "test_fraction": 2}),
    "bounded-ls without delta": (X, A, {"method": "bounded-ls"}),
    "bounded-ls bound fraction out of range": (
        X,
        A,
        {"method": "bounded-ls", "delta": 1e-6, "bound_fraction": 2},
    ),
}


def _accountants(tmp_path: Path) -> dict[str, ds.Accountant]:
    return {
        "epsilon": ds.Accountant(epsilon=10.0, delta=1e-3),
        "rho": ds.Accountant(rho=10.0, delta=1e-6, approx_delta=0.1),
        "ledger": ds.Accountant(epsilon=10.0, delta=1e-3, ledger=tmp_path / "l.db"),
    }


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_refused_request_is_not_charged(tmp_path: Path, name: str) -> None:
    data, statistic, kwargs = REFUSED[name]
    kwargs = {"epsilon": 1.0, **kwargs}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded requests warn
        messages = set()
        for kind, acct in _accountants(tmp_path).items():
            before = acct.spent
            with pytest.raises(ds.InputError) as err:
                acct.release(data, statistic, **kwargs)
            assert acct.spent == before, f"{kind}: charged, then refused"
            messages.add(str(err.value).replace("Accountant.release", "release"))
        # ds.release refuses it too, with the same words
        with pytest.raises(ds.InputError) as err:
            ds.release(data, statistic, **kwargs)
        messages.add(str(err.value))
    assert len(messages) == 1
    assert Ledger.open(tmp_path / "l.db").entries() == []


@pytest.mark.parametrize("data", [X, pd.DataFrame({"x": X})], ids=["array", "one-column frame"])
def test_two_statistics_without_bounds_on_one_column_release(data: Any) -> None:
    """Was an IndexError after the charge: the private bounds step looked for the column
    None, which the query had replaced by the input's one column."""
    acct = ds.Accountant(epsilon=10.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = acct.release(
            data,
            {"a": ds.Median(), "b": ds.Mean()},
            epsilon=1.0,
            bounds="private",
            rng=SeededRandom(4),
        )
    assert isinstance(out, ds.QueryResult)
    assert set(out) == {"a", "b"}
    assert acct.spent == (1.0, 0.0)
    # one bounds step for the one column, shared by both statistics
    assert list(out.parameters["bounds"]) == ["x" if isinstance(data, pd.DataFrame) else "value"]


SQL_REFUSED: dict[str, tuple[str, dict[str, Any]]] = {
    "a column the table lacks": (
        "SELECT AVG(nope) AS m FROM t",
        {"bounds": {"nope": (0, 1)}},
    ),
    "a group column the table lacks": (
        "SELECT nope, COUNT(*) AS n FROM t GROUP BY nope",
        {"keys": {"nope": [1, 2]}},
    ),
    "a where column the table lacks": (
        "SELECT COUNT(*) AS n FROM t WHERE nope > 1",
        {},
    ),
    "a bad rng": ("SELECT COUNT(*) AS n FROM t", {"rng": "seed"}),
    "a key off the declared type": (
        "SELECT id, COUNT(*) AS n FROM t GROUP BY id",
        {"keys": {"id": [1, "unknown"]}},
    ),
}


@pytest.mark.parametrize("name", sorted(SQL_REFUSED))
def test_a_refused_sql_query_is_not_charged(tmp_path: Path, name: str) -> None:
    query, kwargs = SQL_REFUSED[name]
    for acct in _accountants(tmp_path).values():
        before = acct.spent
        with pytest.raises(ds.InputError):
            ds.sql(query, tables={"t": TABLE}, epsilon=1.0, accountant=acct, **kwargs)
        assert acct.spent == before
