"""A value is never displayed as something it is not (dpsense.shown): rounding to the
interval's precision keeps the released value's leading digit and its place, over many
magnitudes and half-widths (half-widths much larger than the value included), and every
output that shows a released value keeps it: the CLI receipt and table, the report, the
query result's text, a grouped release's text, and the plan's forecasts."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpsense as ds
from dpsense.cli import main
from dpsense.noise.rng import SeededRandom
from dpsense.shown import decimals_of, leading_digit, plain, rounded, significant

MAGNITUDES = st.integers(min_value=-9, max_value=12)
MANTISSAS = st.floats(min_value=1.0, max_value=9.999999999, allow_nan=False)


def _lead(text: str) -> tuple[int, int] | None:
    return leading_digit(float(text))


def _same(value: float, text: str) -> bool:
    """``text`` shows ``value``'s leading digit in its place, and its sign."""
    shown = float(text)
    if value == 0:
        return shown == 0
    return _lead(text) == leading_digit(value) and (shown < 0) == (value < 0)


@settings(max_examples=400, deadline=None)
@given(
    mantissa=MANTISSAS,
    magnitude=MAGNITUDES,
    negative=st.booleans(),
    ratio=st.integers(min_value=-8, max_value=9),
    half_mantissa=MANTISSAS,
    whole=st.booleans(),
)
def test_rounding_to_the_interval_keeps_the_leading_digit(
    mantissa: float,
    magnitude: int,
    negative: bool,
    ratio: int,
    half_mantissa: float,
    whole: bool,
) -> None:
    value = (-1 if negative else 1) * mantissa * 10.0**magnitude
    if whole:
        value = float(round(value)) or 1.0
    half = half_mantissa * 10.0 ** (magnitude + ratio)  # up to 10^9 times the value
    interval = (value - half, value + half)
    decimals = decimals_of(value, interval, None)
    assert decimals is not None
    text = rounded(value, decimals)
    assert _same(value, text), (value, half, text)
    assert abs(float(text) - value) <= max(half, abs(value)) * 0.06  # still close
    low, high = rounded(interval[0], decimals, "down"), rounded(interval[1], decimals, "up")
    assert float(low) <= interval[0]  # outward
    assert float(high) >= interval[1]


@pytest.mark.parametrize(
    ("value", "half", "want"),
    [
        (367083.0, 2.0e7, "370000"),  # was "0": the interval's precision erased the value
        (773.0, 1000.0, "770"),  # was "800"
        (9.9999996, 100.0, "9.9999996"),  # not "10"
        (0.00994, 5.0, "0.0099"),
        (-0.3, 40.0, "-0.30"),
        (12345.678, 0.4, "12345.68"),  # a narrow interval: its own precision, as before
        (1234.0, 3.0, "1234"),  # a count stays whole
    ],
)
def test_the_filed_cases(value: float, half: float, want: str) -> None:
    decimals = decimals_of(value, (value - half, value + half), None)
    assert rounded(value, decimals) == want


@pytest.mark.parametrize("value", [9.9999996, 99999.97, -9.9999999e-5, 0.99999999, 7.7e22])
def test_six_significant_digits_never_carry_into_a_new_leading_digit(value: float) -> None:
    assert _same(value, plain(value))
    assert _same(value, significant(value, 3))
    assert plain(123.456789) == "123.457"  # otherwise six digits, as before


# ---- every output that shows a released value ---------------------------------------


def _csv(tmp: Path, scale: float) -> Path:
    rng = np.random.default_rng(7)
    path = tmp / f"values_{scale:g}.csv"
    values = scale * rng.uniform(3.0, 4.0, 240)
    groups = rng.choice(["a", "b"], 240)
    path.write_text(
        "g,v\n" + "".join(f"{g},{v:.15f}\n" for g, v in zip(groups, values, strict=True))
    )
    return path


SCALES = [1e-3, 1.0, 7.7, 1e3, 1e6]


def _cell(out: str, label: str) -> str:
    match = re.search(rf"^\s*{label}\s+(\S+)", out, flags=re.MULTILINE)
    assert match is not None, out
    return match.group(1)


@pytest.mark.parametrize("scale", SCALES)
def test_the_cli_receipt_and_table_keep_the_leading_digit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], scale: float
) -> None:
    path = _csv(tmp_path, scale)
    wide = ["--lower", "0", "--upper", f"{scale * 1e5:g}", "--seed", "3"]
    for statistic, epsilon in (("median", "0.3"), ("mean", "0.05")):
        argv = ["release", str(path), "-c", "v", "-s", statistic, "--epsilon", epsilon, *wide]
        assert main(argv) == 0
        out = capsys.readouterr().out
        assert main([*argv, "--json"]) == 0
        value = json.loads(capsys.readouterr().out)["value"]
        assert _same(value, _cell(out, "value")), out
        grouped = [*argv, "--by", "g", "--keys", "g=a,b"]
        assert main(grouped) == 0
        out = capsys.readouterr().out
        assert main([*grouped, "--json"]) == 0
        rows = json.loads(capsys.readouterr().out)["groups"]
        for row in rows:
            line = re.search(rf"^\s*{row['g']}\s+(\S+)", out, flags=re.MULTILINE)
            assert line is not None, out
            assert _same(row["value"], line.group(1)), out


@pytest.mark.parametrize("scale", SCALES)
def test_the_report_and_the_texts_keep_the_leading_digit(tmp_path: Path, scale: float) -> None:
    pytest.importorskip("jinja2")
    pytest.importorskip("matplotlib")
    from dpsense.report import render_report

    rng = np.random.default_rng(1)
    x = scale * rng.uniform(3.0, 4.0, 300)
    acct = ds.Accountant(epsilon=10.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = acct.release(
            x, ds.Median(lower=0.0, upper=scale * 1e6), epsilon=0.3, rng=SeededRandom(2)
        )
        table = {"g": rng.choice(["a", "b"], 300).tolist(), "v": x.tolist()}
        result = ds.sql(
            "SELECT g, AVG(v) AS m FROM t GROUP BY g",
            tables={"t": table},
            epsilon=0.2,
            bounds={"v": (0.0, scale * 1e5)},
            keys={"g": ["a", "b"]},
            rng=SeededRandom(4),
        )
    assert isinstance(rel, ds.Release)
    page = render_report(acct)
    shown = re.search(r"median = ([-0-9.e+]+)", page)
    assert shown is not None
    assert _same(float(rel.value), shown.group(1))
    text = str(result)
    for g in ("a", "b"):
        released = float(result["m"][g].value)
        match = re.search(rf"'{g}'.*m=([-0-9.e+]+)", text)
        assert match is not None, text
        assert _same(released, match.group(1)), text
        grouped = str(result["m"])
        match = re.search(rf"'{g}': ([-0-9.e+]+)", grouped)
        assert match is not None, grouped
        assert _same(released, match.group(1)), grouped


def test_the_plan_keeps_the_leading_digits_of_its_forecasts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    query = "SELECT g, COUNT(*) AS n, AVG(v) AS m FROM 'missing.csv' GROUP BY g"
    args: dict[str, Any] = {"bounds": {"v": (0.0, 997.0)}, "keys": {"g": ["a", "b"]}}
    for rows in (7, 37, 997):
        forecast = ds.plan(None, query, epsilon=0.7, rows_per_group=rows, **args)
        text = str(forecast)
        numbers = re.findall(r"[0-9][0-9.e+-]*", text)
        for f in forecast.statistics:
            for number in (f.median_error, f.error_95):
                assert number is not None
                assert any(_same(number, t) for t in numbers), text
        argv = ["plan", query, "--epsilon", "0.7", "--rows-per-group", str(rows)]
        argv += ["--bounds", "v=0:997", "--keys", "g=a,b"]
        assert main(argv) == 0, capsys.readouterr().err
        out = capsys.readouterr().out
        cells = re.findall(r"[0-9][0-9.e+-]*", out)
        assert main([*argv, "--json"]) == 0
        payload = json.loads(capsys.readouterr().out)
        for f in payload["statistics"]:
            assert any(_same(f["error_95"], c) for c in cells), out
