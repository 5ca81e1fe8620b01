"""``ds.caps_report`` and ``dpsense caps`` (NOT PRIVATE): the share of rows the caps leave
out is the share a release's bounding leaves out (a count at a huge epsilon, where every
unit keeps all its groups), and the output says it is not private."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

import dpsense as ds
from dpsense.caps import caps_report
from dpsense.cli import main
from dpsense.datasets import make_panel

pd = pytest.importorskip("pandas")


def _rows_kept(frame: object, m: int, g: int) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = ds.release(
            frame, ds.Count(), by="year", keys=list(range(2015, 2023)), privacy_unit="person",
            max_rows_per_unit=m, max_groups_per_unit=g, epsilon=1e9, rng=1,
        )  # fmt: skip
    return float(sum(r.value for _, r in out))


@pytest.mark.parametrize("m", [1, 2, 3])
def test_rows_left_out_match_the_release_bounding(m: int) -> None:
    panel = pd.DataFrame(make_panel())
    (row,) = caps_report(
        panel, privacy_unit="person", by="year", max_rows_per_unit=m, max_groups_per_unit=8
    ).rows
    kept = _rows_kept(panel, m, 8)  # eight years: every person keeps every year
    assert row.rows_left_out == pytest.approx(1 - kept / len(panel), abs=1e-6)
    assert row.rows_left_out > 0  # the panel has people with several jobs a year
    counts = panel.groupby(["person", "year"]).size()
    assert row.units_cut == pytest.approx((counts > m).groupby("person").any().mean(), abs=1e-12)


def test_a_group_cap_is_its_expected_share() -> None:
    """Fewer groups than a person has: the keyed choice keeps g of them; the report gives
    the expectation, which the release's bounding meets closely on 2,000 people."""
    panel = pd.DataFrame(make_panel())
    (row,) = caps_report(
        panel, privacy_unit="person", by="year", max_rows_per_unit=1, max_groups_per_unit=3
    ).rows
    kept = _rows_kept(panel, 1, 3)
    assert row.rows_left_out == pytest.approx(1 - kept / len(panel), abs=0.02)


def test_no_cap_leaves_nothing_out() -> None:
    frame = pd.DataFrame({"p": np.arange(50), "v": np.ones(50)})
    (row,) = caps_report(frame, privacy_unit="p", max_rows_per_unit=1).rows
    assert (row.rows_left_out, row.units_cut) == (0.0, 0.0)


def test_the_cli_says_it_is_not_private(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "jobs.csv"
    pd.DataFrame(make_panel()).to_csv(path, index=False)
    argv = ["caps", str(path), "--privacy-unit", "person", "--by", "year"]
    assert main([*argv, "--max-rows-per-unit", "1,2", "--max-groups-per-unit", "8"]) == 0
    out = capsys.readouterr().out
    assert "NON-PRIVATE" in out
    assert "NOT PRIVATE" in out
    assert main([*argv, "--max-rows-per-unit", "1", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["non_private"] is True
    assert [c["max_groups_per_unit"] for c in payload["caps"]] == [1, 2, 4, 8]
    assert main([*argv, "--max-rows-per-unit", "0"]) == 2
    assert "--max-rows-per-unit" in capsys.readouterr().err
