"""Public keys are matched by a public type (issue 32, item 3; ``tables.key_types``).

A CSV column of years used to be read as BIGINT, so ``keys=[2015, 2016, "unknown"]`` was
an error naming BIGINT; one person's "n/a" made it text and the same keys released. Now a
by-column whose type would be inferred from the values is matched as text, and the outcome
(release, or which error with which text) is the same with and without that person: here
for ``ds.release`` with a statistic and a dict, ``Accountant.release`` and ``ds.sql``, on
CSV files, pandas object columns and mappings of lists. A declared type (``schema=`` or a
typed container) is still matched as declared, and a key that does not fit it is an error
whose text is the same on both neighbours.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dpsense as ds
from dpsense.noise.rng import SeededRandom

pd = pytest.importorskip("pandas")

N = 240
KEYS = [2015, 2016, "unknown"]
ROWS = [(i, 2015 + i % 2, round(float(i % 7), 1)) for i in range(N)]
EXTRA = (9999, "n/a", 3.0)  # one person whose year is text


def _csv(tmp_path: Path, name: str, extra: bool) -> Path:
    path = tmp_path / f"{name}.csv"
    lines = ["id,year,x", *(",".join(map(str, r)) for r in ROWS + ([EXTRA] if extra else []))]
    path.write_text("\n".join(lines) + "\n")
    return path


def _frame(extra: bool) -> Any:
    rows = ROWS + ([EXTRA] if extra else [])
    return pd.DataFrame(
        {
            "id": [r[0] for r in rows],
            "year": pd.Series([r[1] for r in rows], dtype=object),
            "x": [r[2] for r in rows],
        }
    )


def _mapping(extra: bool) -> dict[str, list[Any]]:
    rows = ROWS + ([EXTRA] if extra else [])
    return {"id": [r[0] for r in rows], "year": [r[1] for r in rows], "x": [r[2] for r in rows]}


def _outcome(run: Callable[[], Any]) -> tuple[str, Any]:
    """The kind of outcome and its public content: the rows, or the error's type and text."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            result = run()
        except ds.InputError as exc:
            return "error", (type(exc).__name__, str(exc))
    if isinstance(result, ds.GroupedRelease):
        return "release", [(key, r.value) for key, r in result]
    return "release", result.to_dicts()


def _requests(data: Any) -> dict[str, Callable[[], Any]]:
    unit: dict[str, Any] = {"privacy_unit": "id"}
    return {
        "count": lambda: ds.release(
            data, ds.Count(), by="year", keys=KEYS, epsilon=1.0, rng=SeededRandom(1)
        ),
        "mean per person": lambda: ds.release(
            data,
            ds.Mean(0, 10),
            column="x",
            by="year",
            keys=KEYS,
            epsilon=1.0,
            rng=SeededRandom(2),
            **unit,
        ),
        "dict": lambda: ds.release(
            data,
            {"n": ds.Count(), "m": ("x", ds.Median(0, 10))},
            by="year",
            keys=KEYS,
            epsilon=1.0,
            rng=SeededRandom(3),
            **unit,
        ),
        "accountant": lambda: ds.Accountant(epsilon=5.0).release(
            data, ds.Count(), by="year", keys=KEYS, epsilon=1.0, rng=SeededRandom(4)
        ),
        "sql": lambda: ds.sql(
            "SELECT year, COUNT(*) AS n, AVG(x) AS m FROM t GROUP BY year",
            tables={"t": data},
            keys={"year": KEYS},
            bounds={"x": (0, 10)},
            epsilon=1.0,
            rng=SeededRandom(5),
        ),
    }


INPUTS: dict[str, Callable[[Path, bool], Any]] = {
    "csv": lambda tmp, extra: _csv(tmp, "extra" if extra else "plain", extra),
    "pandas object column": lambda _, extra: _frame(extra),
    "mapping of lists": lambda _, extra: _mapping(extra),
}


@pytest.mark.parametrize("kind", sorted(INPUTS))
def test_keys_give_the_same_outcome_with_and_without_a_text_value(
    tmp_path: Path, kind: str
) -> None:
    plain = _requests(INPUTS[kind](tmp_path, False))
    extra = _requests(INPUTS[kind](tmp_path, True))
    for name in plain:
        a, b = _outcome(plain[name]), _outcome(extra[name])
        assert a == b, (kind, name)
        assert a[0] == "release", (kind, name, a)


def test_keys_on_an_undeclared_csv_column_are_matched_as_text(tmp_path: Path) -> None:
    path = _csv(tmp_path, "years", extra=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = ds.release(
            path, ds.Count(), by="year", keys=[2015, "2016", 2017], epsilon=100.0, rng=1
        )
    assert isinstance(got, ds.GroupedRelease)
    counts = {key: round(r.value) for key, r in got}
    assert counts == {2015: N // 2, "2016": N // 2, 2017: 0}
    # each key by its own text: 2016.0 is "2016.0", which no row holds
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = ds.release(path, ds.Count(), by="year", keys=[2015, 2016.0], epsilon=100.0, rng=1)
    assert isinstance(got, ds.GroupedRelease)
    assert {key: round(r.value) for key, r in got} == {2015: N // 2, 2016.0: 0}


@pytest.mark.parametrize(
    "declared",
    ["schema", "typed container"],
)
def test_a_key_that_does_not_fit_a_declared_type_is_the_same_error(
    tmp_path: Path, declared: str
) -> None:
    outcomes = []
    for extra in (False, True):
        if declared == "schema":
            data: Any = _csv(tmp_path, f"declared-{extra}", extra)
            kwargs: dict[str, Any] = {"schema": {"year": "int"}}
        else:  # an int64 column cannot hold "n/a": the neighbour is a new year
            rows = ROWS + ([(9999, 2031, 3.0)] if extra else [])
            data = pd.DataFrame({"id": [r[0] for r in rows], "year": [r[1] for r in rows]})
            kwargs = {}

        def run(data: Any = data, kwargs: dict[str, Any] = kwargs) -> Any:
            return ds.release(data, ds.Count(), by="year", keys=KEYS, epsilon=1.0, rng=1, **kwargs)

        outcomes.append(_outcome(run))
    assert outcomes[0] == outcomes[1]
    kind, (_name, text) = outcomes[0]
    assert kind == "error"
    assert "cannot be read" in text
    assert "n/a" not in text


def test_no_key_message_names_an_inferred_type(tmp_path: Path) -> None:
    for extra in (False, True):
        path = _csv(tmp_path, f"t{extra}", extra)

        def run(keys: list[Any], path: Path = path) -> Any:
            return ds.release(path, ds.Count(), by="year", keys=keys, epsilon=1.0, rng=1)

        kind, content = _outcome(lambda: run([("a",)]))
        assert kind == "release"
        kind, content = _outcome(lambda: run([2015, 2015.0]))
        # two keys that read as one group: refused from the keys alone, no type named
        assert kind == "error"
        assert "BIGINT" not in content[1]
        assert "VARCHAR" not in content[1]


def test_a_typed_by_column_still_matches_numbers_as_numbers() -> None:
    frame = pd.DataFrame({"year": np.array([2015, 2016] * 50, dtype=np.int64)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = ds.release(frame, ds.Count(), by="year", keys=[2015, 2016.0], epsilon=100.0, rng=1)
    assert isinstance(got, ds.GroupedRelease)
    assert {key: round(r.value) for key, r in got} == {2015: 50, 2016.0: 50}


def test_private_selection_groups_a_csv_column_as_text(tmp_path: Path) -> None:
    # "2015" and "2015.0" are one group if DuckDB infers DOUBLE, two if one person's "n/a"
    # makes the column text: the grouping must not depend on that person
    rows = ["2015"] * 40 + ["2015.0"] * 40
    groups = []
    for extra in ([], ["n/a"]):
        path = tmp_path / f"years{len(extra)}.csv"
        path.write_text("year\n" + "\n".join(rows + extra) + "\n")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            released = ds.release(str(path), ds.Count(), by="year", epsilon=50.0, delta=1e-3, rng=2)
        groups.append({key for key, _ in released})
    assert groups[0] == {"2015", "2015.0"}
    assert groups[1] - {"n/a"} == groups[0]
