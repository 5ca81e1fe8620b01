"""The catalog of statistics (``dpsense.statistics.names``) is what every door reads.

A statistic is added in ``statistics/`` alone (docs/architecture.md, "Adding a
statistic"): these tests hold each entry to that, and keep the newcomer's example, the
variance and standard deviation, out of every other folder.
"""

from __future__ import annotations

import ast
import importlib
import math
import subprocess
import sys
from pathlib import Path

import pytest
from sqlglot import expressions as exp

import dpsense as ds
from dpsense import statistics as stats
from dpsense.query.sql import parse_sql
from dpsense.report.reproduce import reproduce_code
from dpsense.statistics.build import make_statistic, statistic_key
from dpsense.statistics.names import CATALOG, SQL_AGGREGATES, STATISTIC_NAMES, spelling_of

SRC = Path(ds.__file__).parent
ENTRIES = [pytest.param(s, id=s.key) for s in CATALOG]


@pytest.mark.parametrize("spelling", ENTRIES)
def test_each_entry_names_its_class_everywhere(spelling: object) -> None:
    from dpsense.statistics.names import Spelling

    assert isinstance(spelling, Spelling)
    module = importlib.import_module(f"dpsense.statistics.{spelling.module}")
    cls = getattr(module, spelling.cls)
    assert getattr(stats, spelling.cls) is cls
    assert getattr(ds, spelling.cls) is cls
    assert spelling.cls in stats.__all__
    assert spelling.cls in ds.__all__
    assert cls.kind == spelling.key  # the receipt's name is the catalog's key
    for alias in (spelling.key, *spelling.aliases, spelling.key.upper().replace("-", "_")):
        assert statistic_key(alias) == spelling.key
    for node in spelling.sql_nodes:
        assert issubclass(getattr(exp, node), exp.Expression)


@pytest.mark.parametrize(
    "spelling", [p for p in ENTRIES if p.values[0].key not in ("quantile", "quantiles")]
)
def test_built_from_its_name(spelling: object) -> None:
    from dpsense.statistics.names import Spelling

    assert isinstance(spelling, Spelling)
    built = make_statistic(spelling.key, 0, 10, trim=1)
    assert type(built).__name__ == spelling.cls
    lo, hi = built.output_range(5)
    assert lo <= hi
    assert not math.isnan(lo + hi)


def test_names_and_sql_aggregates_derive_from_the_catalog() -> None:
    assert STATISTIC_NAMES == (
        "count", "sum", "mean", "variance", "std", "median", "quantile", "quantiles",
        "trimmed-mean",
    )  # fmt: skip
    assert SQL_AGGREGATES[:2] == ("COUNT(*)", "COUNT(col)")
    assert set(SQL_AGGREGATES) == {f for s in CATALOG for f in s.sql}
    assert spelling_of("nonsense") is None


@pytest.mark.parametrize(
    ("function", "statistic", "name"),
    [
        ("VAR_POP(v)", "variance", "var_v"),
        ("VARIANCE(v)", "variance", "var_v"),
        ("STDDEV(v)", "std", "stddev_v"),
        ("AVG(v)", "mean", "avg_v"),
        ("MEDIAN(v)", "median", "median_v"),
    ],
)
def test_sql_functions_map_to_their_statistic(function: str, statistic: str, name: str) -> None:
    (item,) = parse_sql(f"SELECT {function} FROM t").aggregates
    assert (item.statistic, item.name) == (statistic, name)


def test_reproduced_code_names_the_class() -> None:
    outputs = {"statistics": [{"statistic": "variance", "bounds": [0, 4], "column": "v"}]}
    assert "ds.Variance(0, 4)" in reproduce_code(outputs, 1.0, 0.0, "data")


def test_output_ranges_are_the_statistics_own() -> None:
    assert ds.Variance(0, 4).output_range() == (0.0, 4.0)
    assert ds.Std(0, 4).output_range() == (0.0, 2.0)
    assert ds.Sum(-1, 2).output_range(3) == (-3.0, 6.0)
    assert ds.Sum(-1, 2).output_range() == (-math.inf, math.inf)
    assert ds.Count().output_range() == (0.0, math.inf)
    assert ds.Median(1, 3).output_range() == (1.0, 3.0)


def _names_used(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    # classes by attribute (ds.Variance), not methods (an array's .std())
    used |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr.istitle()}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            used |= {a.name for a in node.names}
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            used.add(node.value)
    return used


def test_the_newcomers_statistic_lives_in_one_folder() -> None:
    """The variance and the standard deviation (the newcomer's example) are named, in
    code or as a name string, only inside statistics/: every other door reads the
    catalog. (Prose in docstrings is not a name.)"""
    named = {"Variance", "Std", "variance", "std", "var", "stddev", "VAR_POP", "STDDEV"}
    outside = []
    for path in sorted(SRC.rglob("*.py")):
        if path.parent.name == "statistics" and path.parent.parent == SRC:
            continue
        hits = _names_used(path) & named
        if hits:
            outside.append(f"{path.relative_to(SRC)}: {sorted(hits)}")
    assert outside == []


def test_the_catalog_loads_without_numpy() -> None:
    code = (
        "import sys; import dpsense.statistics.names as n; "
        "assert n.STATISTIC_NAMES; assert 'numpy' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
