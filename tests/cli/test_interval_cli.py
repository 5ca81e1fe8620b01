"""``--interval privacy+sampling`` on ``dpsense release`` and ``dpsense sql``: the
population interval on the receipt and in the rows, with what it covers; the statistics
without one refused before anything is read or spent (exit 2, one line)."""

from __future__ import annotations

import json
import warnings

import pytest

import dpsense as ds
from dpsense.cli import main
from dpsense.data import load_column
from dpsense.datasets import census_path
from dpsense.methods.sampling_interval import COVERS_POPULATION

CENSUS = str(census_path())
AGE = ["--column", "age", "--lower", "0", "--upper", "100", "--epsilon", "1", "--seed", "3"]
POPULATION = ["--interval", "privacy+sampling"]


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("statistic", ["mean", "median"])
def test_release_prints_the_population_interval(
    capsys: pytest.CaptureFixture[str], statistic: str
) -> None:
    """The JSON receipt's interval is the library's for the same request, and says what
    it covers; the text receipt says where the interval comes from."""
    code, out, err = run(capsys, "release", CENSUS, "-s", statistic, *AGE, *POPULATION, "--json")
    assert (code, err) == (0, "")
    payload = json.loads(out)
    assert payload["parameters"]["interval"]["covers"] == COVERS_POPULATION
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ds.SeededRandomnessWarning)
        library = ds.release(
            load_column(CENSUS, "age"),
            ds.make_statistic(statistic, 0.0, 100.0),
            epsilon=1.0,
            rng=3,
            interval="privacy+sampling",
        )
    assert payload["interval"] == list(library.interval())
    code, out, _ = run(capsys, "release", CENSUS, "-s", statistic, *AGE, *POPULATION)
    assert code == 0
    assert "the population's value" in " ".join(out.split())


def test_sql_rows_hold_the_population_interval(capsys: pytest.CaptureFixture[str]) -> None:
    query = "SELECT AVG(age) AS m, MEDIAN(age) AS med FROM t"
    base = ["sql", query, "--table", f"t={CENSUS}", "--bounds", "age=0:100", "--epsilon", "1"]
    code, out, err = run(capsys, *base, "--seed", "2", *POPULATION, "--json")
    assert (code, err) == (0, "")
    (row,) = json.loads(out)["rows"]
    assert row["m_low"] <= row["m"] <= row["m_high"]
    code, out, _ = run(capsys, *base, "--seed", "2", *POPULATION)
    assert code == 0
    assert "The intervals cover the population's value" in " ".join(out.split())


@pytest.mark.parametrize(
    "argv",
    [
        ["release", CENSUS, "-s", "sum", *AGE, *POPULATION],
        ["release", CENSUS, "-s", "mean", *AGE, "--interval", "population"],
        ["sql", "SELECT COUNT(*) AS n FROM t", "--table", f"t={CENSUS}", "--epsilon", "1",
         *POPULATION],
    ],
)  # fmt: skip
def test_what_has_no_population_interval_is_refused(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1
    assert "--interval" in err
