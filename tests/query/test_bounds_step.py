"""``ds.release(..., bounds="private")``: bounds found in the same call, charged once.

The bounds step is ``ds.private_bounds`` at bounds_share x epsilon over the whole column,
each person kept to max_rows_per_unit rows of it whatever the number of groups; the
release gets the rest. These tests check the split (exact), the single charge (memory,
ledger file, rho budget), the receipt's two parts, that the release is exactly the two
steps run in sequence, and that one person cannot weigh more than m rows in the bounds.
"""

from __future__ import annotations

import warnings
from collections import Counter
from dataclasses import replace
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dpsense as ds
import dpsense.query.bounds_step as bir
from dpsense._exact_budget import difference_down, float_up, product_down, quotient_down
from dpsense.accounting.composition import decimal_up
from dpsense.accounting.ledger import Ledger
from dpsense.datasets import make_panel
from dpsense.methods.zcdp import pure_rho
from dpsense.noise.rng import SeededRandom
from dpsense.query.bounds_step import BOUNDS_SHARE
from dpsense.release import zcdp_cost
from dpsense.tables.grouped import bounded_values
from dpsense.tables.rows.casts import Cast

pd = pytest.importorskip("pandas")

RNG = np.random.default_rng(23)
X = RNG.lognormal(3.0, 0.5, 20_000)
"""Enough rows for today's private_bounds to find bounds at epsilon 1."""
PANEL = pd.DataFrame(make_panel(people=3_000, years=(2020, 2021, 2022), seed=7))
YEARS = [2020, 2021, 2022]
PERSON: dict[str, Any] = {
    "column": "hours",
    "privacy_unit": "person",
    "max_rows_per_unit": 2,
    "max_groups_per_unit": 3,
}


@pytest.fixture(autouse=True)
def _quiet_seeds() -> None:
    warnings.simplefilter("ignore", ds.SeededRandomnessWarning)


@pytest.fixture
def bounds_calls(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The checked arguments of every draw of the bounds step (``release_bounds``, the
    draw of ``ds.private_bounds``), and the table it reads (``data``: the release's table
    handle)."""
    calls: list[dict[str, Any]] = []
    real = bir.release_bounds

    def spy(data: Any, args: Any, source: Any) -> ds.Release:
        calls.append({**vars(args), "data": data})
        return real(data, args, source)

    monkeypatch.setattr(bir, "release_bounds", spy)
    return calls


def _split(epsilon: float, share: float = BOUNDS_SHARE) -> tuple[float, float]:
    eps_b = product_down(share, epsilon)
    return eps_b, difference_down(epsilon, eps_b)


# -- errors ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "statistic",
    [ds.Median(), ds.Mean(), ds.Sum(), ds.Variance(), ds.Quantiles([0.1, 0.9]), ds.Quantile(0.3)],
)
def test_without_bounds_the_error_names_both_ways(statistic: ds.Statistic) -> None:
    with pytest.raises(ds.InputError) as info:
        ds.release(X, statistic, epsilon=1.0)
    message = str(info.value)
    assert "0, 100)" in message
    assert "bounds='private'" in message
    assert "bounds_share" in message


def test_grouped_without_bounds_is_the_same_error() -> None:
    with pytest.raises(ds.InputError, match="bounds='private'"):
        ds.release(PANEL, ds.Median(), epsilon=1.0, by="year", keys=YEARS, **PERSON)


def test_accountant_refuses_missing_bounds_before_charging(tmp_path: Path) -> None:
    for acct in (ds.Accountant(epsilon=1.0), ds.Accountant(epsilon=1.0, ledger=tmp_path / "l")):
        with pytest.raises(ds.InputError, match="bounds='private'"):
            acct.release(X, ds.Median(), epsilon=0.5)
        with pytest.raises(ds.InputError, match="bounds_share"):
            acct.release(X, ds.Median(), epsilon=0.5, bounds="private", bounds_share=1.0)
        assert acct.spent == (0.0, 0.0)


@pytest.mark.parametrize(
    ("statistic", "kwargs", "match"),
    [
        (ds.Median(0, 100), {"bounds": "private"}, "already has bounds"),
        (ds.Count(), {"bounds": "private"}, "needs no bounds"),
        (ds.Median(), {"bounds": "public"}, "must be None .* or 'private'"),
        (ds.Median(), {"bounds_share": 0.3}, "pass bounds='private' too"),
        (ds.Median(), {"bounds": "private", "neighbours": "substitute"}, "add-remove"),
    ]
    + [
        (ds.Median(), {"bounds": "private", "bounds_share": bad}, "float in \\(0, 1\\)")
        for bad in (0.0, 1.0, -0.2, 1.5, "0.3", True, float("nan"))
    ],
)
def test_bad_bounds_arguments(statistic: ds.Statistic, kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ds.InputError, match=match):
        ds.release(X, statistic, epsilon=1.0, **kwargs)


def test_a_share_that_rounds_to_nothing_is_refused() -> None:
    with pytest.raises(ds.InputError, match="leaves no epsilon"):
        ds.release(X, ds.Median(), epsilon=1e-320, bounds="private", bounds_share=1e-10)


def test_no_keys_and_no_delta_is_refused_before_the_bounds_step(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def never(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the bounds step ran")

    monkeypatch.setattr(bir, "release_bounds", never)
    with pytest.raises(ds.InputError, match="delta"):
        ds.release(PANEL, ds.Median(), epsilon=1.0, bounds="private", by="year", **PERSON)


# -- one column --------------------------------------------------------------------------
@pytest.mark.parametrize("share", [None, 0.1, 1 / 3])
def test_the_split_is_exact_and_the_receipt_has_both_parts(share: float | None) -> None:
    eps = 0.7
    rel = ds.release(X, ds.Median(), epsilon=eps, bounds="private", bounds_share=share, rng=3)
    assert isinstance(rel, ds.Release)
    eps_b, eps_r = _split(eps, BOUNDS_SHARE if share is None else share)
    bounds, part = rel.parameters["bounds"], rel.parameters["release"]
    assert bounds["source"] == "private"
    assert bounds["epsilon"] == eps_b
    assert part["epsilon"] == eps_r
    assert Fraction(eps_b) + Fraction(eps_r) <= Fraction(eps)  # never more than the total
    assert Fraction(eps) - Fraction(eps_b) - Fraction(eps_r) < Fraction(2.0**-50)
    assert (rel.epsilon, rel.delta) == (eps, 0.0)
    assert bounds["lower"] < bounds["upper"]
    assert bounds["lower"] <= rel.value <= bounds["upper"]


@pytest.mark.parametrize("statistic", [ds.Median(), ds.Mean(), ds.Quantiles([0.25, 0.75])])
def test_the_release_is_the_two_steps_in_sequence(statistic: ds.BoundedStatistic) -> None:
    eps = 1.0
    eps_b, eps_r = _split(eps)
    got = ds.release(X, statistic, epsilon=eps, bounds="private", rng=SeededRandom(11))
    source = SeededRandom(11)
    # a mean's bounds step aims at a number of clipped rows (serve="mean"), a quantile's
    # at a share of each tail
    serve = "mean" if isinstance(statistic, ds.Mean) else "quantiles"
    found = ds.private_bounds(X, epsilon=eps_b, rng=source, serve=serve)
    want = ds.release(X, statistic.with_bounds(*found.value), epsilon=eps_r, rng=source)
    assert (got.parameters["bounds"]["lower"], got.parameters["bounds"]["upper"]) == found.value
    np.testing.assert_array_equal(got.value, want.value)
    # and the bounds are useful: the median lies inside, within the data's range
    assert found.value[0] <= np.median(X) <= found.value[1]
    assert found.value[1] < 2 * X.max()


def test_an_array_and_a_table_give_the_same_release() -> None:
    frame = pd.DataFrame({"x": X})
    a = ds.release(X, ds.Median(), epsilon=1.0, bounds="private", rng=SeededRandom(2))
    b = ds.release(frame, ds.Median(), epsilon=1.0, bounds="private", rng=SeededRandom(2))
    assert a.value == b.value
    assert a.parameters["bounds"] == b.parameters["bounds"]


# -- groups and people -------------------------------------------------------------------
def test_grouped_public_keys_share_one_pair_of_bounds() -> None:
    eps = 8.0
    gr = ds.release(
        PANEL, ds.Median(), epsilon=eps, bounds="private", by="year", keys=YEARS, rng=5, **PERSON
    )
    assert isinstance(gr, ds.GroupedRelease)
    eps_b, eps_r = _split(eps)
    assert (gr.epsilon, gr.delta) == (eps, 0.0)
    bounds = gr.parameters["bounds"]
    assert bounds["epsilon"] == eps_b
    assert gr.parameters["release"]["epsilon"] == eps_r
    assert bounds["privacy_unit"] == "person"
    assert bounds["max_rows_per_unit"] == 2
    # a person is in up to 3 groups: each group gets a third of the rest
    assert gr.parameters["per_group"]["epsilon"] == quotient_down(eps_r, 3)
    assert [key for key, _ in gr] == YEARS
    for _, rel in gr:
        assert bounds["lower"] <= rel.value <= bounds["upper"]
    hours = PANEL["hours"].to_numpy()  # 1..80
    # each end clips little (the target 2%, traded against width: docs/bounds.md) and the
    # upper bound is the power of two nearest the data's top, not far beyond it
    assert np.mean(hours < bounds["lower"]) <= 0.04
    assert np.mean(hours > bounds["upper"]) <= 0.04
    assert bounds["upper"] <= 2 * 80.0


def test_grouped_private_selection_splits_the_rest() -> None:
    eps, dlt = 8.0, 1e-6
    gr = ds.release(
        PANEL, ds.Mean(), epsilon=eps, delta=dlt, bounds="private", by="year", rng=6, **PERSON
    )
    assert isinstance(gr, ds.GroupedRelease)
    eps_b, eps_r = _split(eps)
    assert (gr.epsilon, gr.delta) == (eps, dlt)
    assert gr.selection == "private"
    selection, per_group = gr.parameters["selection"], gr.parameters["per_group"]
    assert selection["epsilon"] == product_down(0.5, eps_r)
    spent = Fraction(eps_b) + Fraction(selection["epsilon"]) + 3 * Fraction(per_group["epsilon"])
    assert spent <= Fraction(eps)
    assert Fraction(selection["delta"]) + 3 * Fraction(per_group["delta"]) <= Fraction(dlt)
    assert sorted(key for key, _ in gr) == YEARS  # thousands of people a year: all kept


def test_the_bounds_step_sees_each_person_once_per_m_rows(
    bounds_calls: list[dict[str, Any]],
) -> None:
    """The bounds step gets the privacy unit and m (not g x m), once, at epsilon_b."""
    ds.release(
        PANEL, ds.Median(), epsilon=8.0, bounds="private", by="year", keys=YEARS, rng=1, **PERSON
    )
    assert len(bounds_calls) == 1
    (call,) = bounds_calls
    assert call["privacy_unit"] == "person"
    assert call["max_rows_per_unit"] == 2
    assert call["column"] == "hours"
    assert call["epsilon"] == _split(8.0)[0]


def test_a_person_in_many_groups_weighs_m_rows_in_the_bounds() -> None:
    """Four people with 3 rows at 10^6 in each of 10 groups, among 1,000 people with one
    row in [0, 100]. Kept to m = 1 row each, they are 0.4% of the bounds step's rows and
    the upper bound stays within the mechanism's width factor of the data; kept to g x m =
    10 rows each (one per group, as the release keeps them), they would be 3.8%, beyond the
    98% quantile the bounds aim at, and the upper bound would jump towards 10^6."""
    rs = np.random.default_rng(4)
    normal = pd.DataFrame(
        {"person": np.arange(1_000), "g": rs.integers(0, 10, 1_000), "v": rs.uniform(0, 100, 1_000)}
    )
    heavy = pd.DataFrame(
        {
            "person": np.repeat(np.arange(1_000, 1_004), 30),
            "g": np.tile(np.repeat(np.arange(10), 3), 4),
            "v": 1e6,
        }
    )
    table = pd.concat([normal, heavy], ignore_index=True)
    for seed in range(3):
        gr = ds.release(
            table,
            ds.Median(),
            column="v",
            by="g",
            keys=list(range(10)),
            privacy_unit="person",
            max_rows_per_unit=1,
            max_groups_per_unit=10,
            epsilon=400.0,  # the bounds step nearly noiseless: only the rows matter
            bounds="private",
            rng=seed,
        )
        # the mechanism may answer anywhere in its zero-score range (up to 2^5 times the
        # magnitude a tenth of the data reach, 2^12 here), never near 10^6
        assert gr.parameters["bounds"]["upper"] <= 4096.0


def test_what_the_bounds_step_sees_differs_by_m_rows_per_person() -> None:
    """Removing any one person (rows in all 6 groups) from a small table removes at most
    m = 2 rows from the column that the bounds step is given (private_bounds with the
    privacy unit and m), and changes no other row: neighbours in people are neighbours in
    at most m rows there, whatever the number of groups, so the step's epsilon_b for m-row
    units holds per person (docs/bounds_in_release.md)."""
    rs = np.random.default_rng(8)
    people = 40
    table = pd.DataFrame(
        {
            "person": np.repeat(np.arange(people), 6),
            "g": np.tile(np.arange(6), people),
            "v": rs.lognormal(2.0, 2.0, people * 6),
        }
    )

    def seen(frame: Any) -> Counter[float]:
        values = bounded_values(
            frame,
            column="v",
            privacy_unit="person",
            max_rows_per_unit=2,
            nulls="error",
            rng=SeededRandom(0),  # the same hash key for both neighbours
        )
        return Counter(values.tolist())

    full = seen(table)
    assert sum(full.values()) == 2 * people
    for person in range(people):
        without = seen(table[table["person"] != person])
        assert not without - full  # nothing added
        assert sum((full - without).values()) <= 2  # at most m removed


# -- one charge ----------------------------------------------------------------------------
def test_one_charge_of_the_total_in_memory() -> None:
    acct = ds.Accountant(epsilon=1.0)
    rel = acct.release(X, ds.Median(), epsilon=0.6, bounds="private", rng=1)
    assert acct.spent == (0.6, 0.0)
    assert rel.epsilon == 0.6
    with pytest.raises(ds.BudgetExceededError):
        acct.release(X, ds.Median(), epsilon=0.5, bounds="private", rng=2)
    assert acct.spent == (0.6, 0.0)


def test_one_charge_of_the_total_in_the_ledger(tmp_path: Path) -> None:
    path = tmp_path / "budget.db"
    acct = ds.Accountant(epsilon=2.0, delta=1e-5, ledger=path)
    acct.release(
        PANEL,
        ds.Median(),
        epsilon=1.5,
        delta=1e-6,
        bounds="private",
        by="year",
        rng=3,
        dataset="panel",
        **PERSON,
    )
    entries = Ledger.open(path).entries()
    assert len(entries) == 1
    assert (entries[0].epsilon, entries[0].delta) == (Decimal("1.5"), Decimal("0.000001"))
    assert entries[0].statistic == "median"
    assert entries[0].dataset == "panel"
    assert ds.Accountant(ledger=path).spent == (1.5, 1e-6)


@pytest.mark.parametrize("method", ["exponential", "global"])
def test_a_rho_budget_adds_the_bounds_rho(method: str) -> None:
    eps = 0.8
    eps_b, eps_r = _split(eps)
    stat = ds.Median() if method == "exponential" else ds.Mean()
    kwargs: dict[str, Any] = {"method": method} if method == "exponential" else {}
    cost = zcdp_cost(stat, epsilon=eps, bounds="private", **kwargs)
    assert cost.rho == decimal_up(pure_rho(eps_b) + Fraction(decimal_up(pure_rho(eps_r))))
    assert cost.rho < decimal_up(pure_rho(eps))  # zCDP composes tighter than epsilon adds
    acct = ds.Accountant(rho=1.0, delta=1e-6)
    acct.release(X, stat, epsilon=eps, bounds="private", rng=4, **kwargs)
    assert acct.spent_zcdp == (float(cost.rho), 0.0)


def test_a_zcdp_release_reports_the_rho_of_both_parts() -> None:
    eps = 2.0
    eps_b, _ = _split(eps, 0.25)
    lln: dict[str, Any] = {"method": "smooth", "noise": "lln", "delta": 1e-6, "rng": 1}
    plain = ds.release(X, ds.Std(0, 1e4), epsilon=1.5, **lln)
    rel = ds.release(X, ds.Std(), epsilon=eps, bounds="private", bounds_share=0.25, **lln)
    assert eps - eps_b == 1.5
    assert plain.rho is not None
    assert rel.rho is not None
    assert rel.rho == float_up(Fraction(plain.rho) + pure_rho(eps_b))


def test_a_resolution_lands_on_its_grid_with_private_bounds() -> None:
    counts = np.round(X)
    rel = ds.release(counts, ds.Median(resolution=1), epsilon=1.0, bounds="private", rng=2)
    lower = rel.parameters["bounds"]["lower"]
    assert float(rel.value - lower).is_integer()
    assert "resolution_dropped" not in rel.parameters["bounds"]


@pytest.mark.filterwarnings("ignore::dpsense.FarBoundsWarning")  # bounds far out on purpose
def test_bounds_too_wide_for_the_resolution_drop_it_instead_of_failing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Bounds 2^61 integer steps apart (the ends of today's bounds grid, on too little
    data) give a continuous release that says so, not an error after the budget is spent."""
    real = bir.release_bounds

    def widest(data: Any, args: Any, source: Any) -> ds.Release:
        return replace(real(data, args, source), value=(-(2.0**60), 2.0**60))

    monkeypatch.setattr(bir, "release_bounds", widest)
    acct = ds.Accountant(epsilon=1.0)
    rel = acct.release(
        np.arange(20.0), ds.Median(resolution=1), epsilon=0.5, bounds="private", rng=2
    )
    assert isinstance(rel, ds.Release)
    assert rel.parameters["bounds"]["resolution_dropped"] is True
    assert acct.spent == (0.5, 0.0)


@pytest.mark.parametrize("grouped", [False, True])
@pytest.mark.parametrize("unit", [False, True])
def test_one_charge_through_a_ledger_read_back(tmp_path: Path, grouped: bool, unit: bool) -> None:
    """Grouped or not, with a privacy unit or not: the ledger file holds one entry of the
    total (epsilon, delta), read back by a fresh Accountant, and the receipt's two parts
    are the split of exactly that total (never more, short by under one ulp)."""
    eps, dlt, share = 6.0, 1e-7, 0.25
    path = tmp_path / "budget.db"
    acct = ds.Accountant(epsilon=10.0, delta=1e-6, ledger=path)
    kwargs: dict[str, Any] = {"column": "hours"}
    if unit:
        kwargs.update(privacy_unit="person", max_rows_per_unit=2)
    if grouped:
        kwargs.update(by="year", keys=YEARS)
        if unit:
            kwargs["max_groups_per_unit"] = 3
    rel = acct.release(
        PANEL, ds.Mean(), epsilon=eps, delta=dlt, bounds="private", bounds_share=share,
        rng=9, dataset="panel", **kwargs,
    )  # fmt: skip
    assert isinstance(rel, ds.GroupedRelease if grouped else ds.Release)
    # a pure release reports the delta it used (0), as with public bounds; the charge is
    # the whole delta asked for
    assert (rel.epsilon, rel.delta) == (eps, dlt if grouped else 0.0)
    bounds, part = rel.parameters["bounds"], rel.parameters["release"]
    assert bounds["share"] == share
    assert bounds["privacy_unit"] == ("person" if unit else None)
    assert bounds["max_rows_per_unit"] == (2 if unit else 1)
    assert part["delta"] == rel.delta
    total = Fraction(bounds["epsilon"]) + Fraction(part["epsilon"])
    assert total <= Fraction(eps)
    assert Fraction(eps) - total <= Fraction(np.spacing(eps))
    assert Fraction(bounds["epsilon"]) <= Fraction(share) * Fraction(eps)
    entries = Ledger.open(path).entries()
    assert len(entries) == 1
    assert (entries[0].epsilon, entries[0].delta) == (Decimal("6"), Decimal("1E-7"))
    assert ds.Accountant(ledger=path).spent == (eps, dlt)
    assert acct.spent == (eps, dlt)


# -- with the public schema ------------------------------------------------------------------
INTS = np.random.default_rng(5).integers(0, 60, 20_000)
"""An integer column (int64: a declared type, resolution 1)."""


def test_an_integer_column_gets_resolution_1_with_private_bounds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The schema's resolution applies to the privately found bounds, moved inward to
    integers: private bounds (-0.75, 100.5) release exactly as the median on the integers
    0..100 does, after the same bounds step."""
    real = bir.release_bounds

    def off_grid(data: Any, args: Any, source: Any) -> ds.Release:
        return replace(real(data, args, source), value=(-0.75, 100.5))

    monkeypatch.setattr(bir, "release_bounds", off_grid)
    eps_b, eps_r = _split(1.0)
    for seed in range(3):
        got = ds.release(INTS, ds.Median(), epsilon=1.0, bounds="private", rng=SeededRandom(seed))
        assert got.parameters["resolution"] == 1.0
        assert got.parameters["resolution_source"] == "schema: BIGINT"
        assert (got.parameters["bounds"]["lower"], got.parameters["bounds"]["upper"]) == (
            -0.75,
            100.5,
        )
        assert float(got.value).is_integer()
        assert 0.0 <= got.value <= 100.0
        source = SeededRandom(seed)
        ds.private_bounds(INTS, epsilon=eps_b, rng=source)  # the bounds step's draws
        want = ds.release(INTS, ds.Median(0, 100, resolution=1), epsilon=eps_r, rng=source)
        assert got.value == want.value


def test_an_integer_table_column_gets_resolution_1_per_group_with_private_bounds() -> None:
    frame = pd.DataFrame(
        {"v": INTS, "person": np.arange(INTS.size) % 5_000, "g": np.arange(INTS.size) % 3}
    )
    gr = ds.release(
        frame, ds.Median(), column="v", by="g", keys=[0, 1, 2], privacy_unit="person",
        max_rows_per_unit=4, epsilon=4.0, bounds="private", rng=1,
    )  # fmt: skip
    assert isinstance(gr, ds.GroupedRelease)
    assert gr.parameters["resolution"] == 1.0
    assert gr.parameters["resolution_source"] == "schema: BIGINT"
    assert gr.parameters["bounds"]["max_rows_per_unit"] == 4
    for _, rel in gr:
        assert float(rel.value).is_integer()


def test_the_bounds_step_reads_the_column_as_the_schema_casts_it(
    bounds_calls: list[dict[str, Any]],
) -> None:
    """schema= casts the value column for both steps: a text column of whole numbers is
    found bounds for and released as integers."""
    frame = pd.DataFrame({"v": INTS.astype(str)})
    rel = ds.release(
        frame, ds.Median(), column="v", schema={"v": "int"}, epsilon=1.0, bounds="private", rng=2
    )
    # the bounds step reads the release's table handle, with the release's casts
    assert [dict(call["data"].casts) for call in bounds_calls] == [{"v": Cast("int")}]
    assert rel.parameters["resolution_source"] == "schema argument: int"
    assert float(rel.value).is_integer()
    # within the mechanism's width factor 2^5 of the data (0..59), far from the grid's end
    assert rel.parameters["bounds"]["upper"] <= 64.0 * 2**5
