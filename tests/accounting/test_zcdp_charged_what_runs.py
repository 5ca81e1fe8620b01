"""zCDP: the rho charged is at least the rho of the releases that run (issue 32, item 4).

A statistic of a query with private partition selection is priced as spread over the g =
``max_groups_per_unit`` groups a unit can be in. Its release used to split its epsilon
over min(g, s) groups, s the number of groups selected (which is data): with s < g a unit's
groups then cost ``eps^2 / (2 min(g, s))``, up to g times the charge. Price and split now
come from one function (``query.plan.statistic_split``), which never reads s.

These tests watch the releases as they run: every per-group (epsilon, delta) handed to a
method and every selection rule, then compute in exact fractions the rho a unit in
min(g, s) of the released groups can lose, and compare it with the accountant's charge (the
ledger's exact decimal), for 1, 2 and many selected groups, through a bare statistic, a
dict of statistics and ``ds.sql``. ``tests/spark/test_spark_zcdp_charge.py`` runs the same
check on Spark.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dpsense as ds
from dpsense.accounting import Ledger
from dpsense.mechanisms.partition_selection import SelectionRule
from dpsense.methods.zcdp import method_rho
from dpsense.neighbours import Neighbours
from dpsense.noise.rng import SeededRandom
from dpsense.query import methods as query_methods
from dpsense.tables import grouped, query_release

pd = pytest.importorskip("pandas")

G = 8  # max_groups_per_unit: the public bound the charge uses
PER_GROUP = 400  # units per group: far above the selection threshold (about 230)
EPS, DELTA = 1.0, 1e-5


@dataclass
class Spy:
    """What the releases ran: each method call's (method, statistic, epsilon, delta) and
    each selection's rule with its g."""

    calls: list[tuple[str, Any, float, float, Neighbours, dict[str, Any]]] = field(
        default_factory=list
    )
    selections: list[tuple[SelectionRule, int]] = field(default_factory=list)

    def rho_spent(self, g: int) -> Fraction:
        """The most rho one unit can lose: in at most min(g, s) of each statistic's s
        released groups (the largest of their per-group rhos), plus each selection's
        g / (2 b^2) (docs/accounting.md §3)."""
        by_statistic: dict[tuple[str, str], list[Fraction]] = defaultdict(list)
        for method, stat, eps, dlt, neighbours, options in self.calls:
            one = method_rho(
                method, stat, epsilon=eps, delta=dlt, neighbours=neighbours, options=options
            )
            assert one is not None
            by_statistic[(method, repr(stat))].append(one)
        total = Fraction(0)
        for rhos in by_statistic.values():
            touched = min(g, len(rhos))
            total += sum(sorted(rhos, reverse=True)[:touched], Fraction(0))
        for rule, groups in self.selections:
            total += Fraction(groups) / (2 * rule.scale * rule.scale)
        return total


@contextmanager
def watched(monkeypatch: pytest.MonkeyPatch) -> Iterator[Spy]:
    """Record every method call and every partition selection of the releases run inside."""
    spy = Spy()
    for name, release in list(query_methods.DISPATCH.items()):

        def wrapped(
            call: Any,
            _name: str = name,
            _release: Callable[..., Any] = release,
            **options: Any,
        ) -> Any:
            spy.calls.append(
                (_name, call.statistic, call.epsilon, call.delta, call.neighbours, options)
            )
            return _release(call, **options)

        monkeypatch.setitem(query_methods.DISPATCH, name, wrapped)
    for module in (query_release, grouped):
        select = module.select_groups

        def selecting(units: Any, rule: SelectionRule, rng: Any, _select: Any = select) -> Any:
            spy.selections.append((rule, G))
            return _select(units, rule, rng)

        monkeypatch.setattr(module, "select_groups", selecting)
    yield spy


def _table(groups: int) -> Any:
    """``groups`` groups of PER_GROUP people with one row each."""
    n = groups * PER_GROUP
    return pd.DataFrame(
        {
            "id": np.arange(n),
            "g": np.repeat([f"g{i:02d}" for i in range(groups)], PER_GROUP),
            "x": np.linspace(0.0, 100.0, n),
        }
    )


def _accountant(tmp_path: Path) -> tuple[ds.Accountant, Path]:
    path = tmp_path / "rho.db"
    return ds.Accountant(rho=50.0, delta=1e-6, approx_delta=0.5, ledger=path), path


def _charge(path: Path) -> Fraction:
    entries = Ledger.open(path).entries()
    assert len(entries) == 1
    assert entries[0].rho is not None
    return Fraction(entries[0].rho)


UNIT: dict[str, Any] = {"privacy_unit": "id", "max_groups_per_unit": G}
QUERY = {
    "n": ds.Count(),
    "mean": ("x", ds.Mean(0, 100)),
    "median": ("x", ds.Median(0, 100)),
}


def _release_single(acct: ds.Accountant, data: Any) -> Any:
    return acct.release(
        data,
        ds.Mean(0, 100),
        column="x",
        by="g",
        epsilon=EPS,
        delta=DELTA,
        rng=SeededRandom(1),
        **UNIT,
    )


def _release_dict(acct: ds.Accountant, data: Any) -> Any:
    return acct.release(data, QUERY, by="g", epsilon=EPS, delta=DELTA, rng=SeededRandom(2), **UNIT)


def _release_sql(acct: ds.Accountant, data: Any) -> Any:
    return ds.sql(
        "SELECT g, COUNT(*) AS n, AVG(x) AS mean, MEDIAN(x) AS median FROM t GROUP BY g",
        tables={"t": data},
        bounds={"x": (0, 100)},
        epsilon=EPS,
        delta=DELTA,
        rng=SeededRandom(3),
        accountant=acct,
        **UNIT,
    )


PATHS = {"statistic": _release_single, "dict": _release_dict, "sql": _release_sql}


def check_charged_what_runs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, run: Callable[..., Any], data: Any, s: int
) -> None:
    """Run ``run(accountant, data)`` (s groups, all selected) and compare the rho of what
    ran with the charge: equal when s >= g, and below it (by the factor s / g on the
    statistics' part) when s < g."""
    acct, path = _accountant(tmp_path)
    with warnings.catch_warnings(), watched(monkeypatch) as spy:
        warnings.simplefilter("ignore")  # seeded releases warn
        result = run(acct, data)
    released = result if isinstance(result, ds.GroupedRelease) else result[next(iter(result))]
    assert len(list(released)) == s  # every group is selected: the case under test
    charge = _charge(path)
    spent = spy.rho_spent(G)
    assert spy.selections, "a private partition selection ran"
    assert spent <= charge, f"rho spent {float(spent)} > charged {float(charge)} (s={s})"
    if s >= G:
        # the charge is the cost of what runs, not a loose bound (stored decimals round up)
        assert charge - spent < Fraction(1, 10**40)


@pytest.mark.parametrize("s", [1, 2, 12])
@pytest.mark.parametrize("path", sorted(PATHS))
def test_zcdp_charge_covers_the_per_group_releases(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, path: str, s: int
) -> None:
    check_charged_what_runs(monkeypatch, tmp_path, PATHS[path], _table(s), s)


def test_the_split_does_not_read_the_number_of_selected_groups(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Each statistic's per-group epsilon is its share over g, for 1 group as for 12."""
    seen = []
    for s in (1, 12):
        (tmp_path / str(s)).mkdir()
        acct, _ = _accountant(tmp_path / str(s))
        with warnings.catch_warnings(), watched(monkeypatch) as spy:
            warnings.simplefilter("ignore")
            _release_dict(acct, _table(s))
        seen.append(sorted({(m, repr(stat), e) for m, stat, e, *_ in spy.calls}))
    assert seen[0] == seen[1]
