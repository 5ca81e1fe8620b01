"""``dpsense release``: the receipt, the JSON contract, refusals and error hygiene."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dpsense.cli import main
from dpsense.datasets import census_path

CENSUS = str(census_path())
RELEASE_KEYS = {"value", "refused", "epsilon", "delta", "method", "noise", "scale"}
AGE = ["--column", "age", "--lower", "0", "--upper", "100"]


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def release_age(
    capsys: pytest.CaptureFixture[str], options: str, *extra: str
) -> tuple[int, str, str]:
    """``dpsense release`` of the census ages in [0, 100] with these options (a command
    line's words, split at spaces), then ``extra``."""
    return run(capsys, "release", CENSUS, *AGE, *options.split(), *extra)


@pytest.mark.parametrize(
    ("statistic", "method", "extra"),
    [
        ("median", "auto", []),
        ("median", "smooth", ["--noise", "cauchy"]),
        ("median", "exponential", []),
        ("median", "ptr", ["--bound", "2", "--delta", "1e-6"]),
        ("median", "global", []),
        ("mean", "ksw", []),
        ("mean", "bounded-ls", ["--delta", "1e-6"]),
        ("count", "auto", []),
        ("quantile", "smooth", ["--p", "0.9"]),
        ("std", "smooth", ["--delta", "1e-6", "--noise", "laplace"]),
    ],
)
def test_release_json_has_the_contract_keys(
    capsys: pytest.CaptureFixture[str], statistic: str, method: str, extra: list[str]
) -> None:
    options = f"--statistic {statistic} --epsilon 1 --method {method} --json"
    code, out, err = release_age(capsys, options, *extra)
    assert code == 0, err
    payload = json.loads(out)
    assert set(payload) >= RELEASE_KEYS
    assert payload["method"] != "auto"
    assert payload["refused"] is False
    assert isinstance(payload["value"], float)


def test_release_prints_a_readable_receipt_without_non_private_numbers(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = release_age(capsys, "--statistic median --epsilon 1 --method smooth")
    assert code == 0
    assert "value" in out
    assert "not public" in out  # the smooth noise scale is data-dependent
    assert "local" not in out.lower()


PTR_JSON = ["--method", "ptr", "--bound", "0.001", "--json"]


def test_a_refusal_is_a_normal_outcome(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # every value distinct and far apart: tiny proposed bound, distance 0, always refused
    data = tmp_path / "spread.csv"
    data.write_text("v\n" + "\n".join(str(10 * i) for i in range(11)) + "\n")
    options = "--column v --statistic median --lower 0 --upper 100 --epsilon 1 --delta 1e-9"
    code, out, _ = run(capsys, "release", str(data), *options.split(), *PTR_JSON)
    assert code == 0
    payload = json.loads(out)
    assert payload["refused"] is True
    assert payload["value"] is None


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--statistic", "median", "--epsilon", "0"], "epsilon"),
        (["--statistic", "median", "--epsilon", "1", "--delta", "1"], "delta"),
        (["--statistic", "median", "--epsilon", "1", "--method", "magic"], "method"),
        (
            ["--statistic", "median", "--epsilon", "1", "--method", "ptr", "--delta", "1e-6"],
            "bound",
        ),
        (
            ["--statistic", "mean", "--epsilon", "1", "--method", "ksw", "--bound", "3"],
            "Unknown option",
        ),
    ],
)
def test_bad_input_exits_2_with_one_line(
    capsys: pytest.CaptureFixture[str], args: list[str], fragment: str
) -> None:
    code, out, err = run(capsys, "release", CENSUS, *AGE, *args)
    assert code == 2
    assert err.startswith("error: ")
    assert err.count("\n") == 1
    assert fragment in err
    assert "Traceback" not in err + out


def test_missing_bounds_and_missing_file_are_input_errors(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = run(
        capsys, "release", CENSUS, "--column", "age", "--statistic", "median", "--epsilon", "1"
    )
    assert code == 2
    assert "lower" in err
    options = "--statistic median --epsilon 1"
    code, _, err = run(capsys, "release", str(tmp_path / "nope.csv"), *AGE, *options.split())
    assert code == 2
    assert "not found" in err


def test_seeded_release_is_marked(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = release_age(capsys, "--statistic median --epsilon 1 --seed 7 --json")
    assert code == 0
    assert json.loads(out)["seeded"] is True


def test_sample_aggregate_and_ratio_are_reachable_from_the_cli(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = release_age(
        capsys, "--statistic median --epsilon 1 --method sample-aggregate --blocks 50 --json"
    )
    assert code == 0, err
    payload = json.loads(out)
    assert payload["method"] == "sample-aggregate"
    assert payload["parameters"]["aggregator"] == "mean"
    assert payload["parameters"]["function"] == "median"
    assert payload["parameters"]["blocks"] == 50
    users = tmp_path / "users.csv"
    users.write_text("clicked,active\n" + "1,1\n0,1\n0,0\n" * 200)
    for method, extra in [("ksw", []), ("naive", []), ("local-bound", ["--delta", "1e-6"])]:
        options = f"--numerator clicked --denominator active --epsilon 1 --method {method} --json"
        code, out, err = run(capsys, "ratio", str(users), *options.split(), *extra)
        assert code == 0, err
        payload = json.loads(out)
        assert payload["method"] == method
        assert 0.0 <= payload["value"] <= 1.0
    code, _, err = release_age(capsys, "--statistic median --epsilon 1 --method sample-aggregate")
    assert code == 2
    assert "--blocks" in err


def test_sample_aggregate_receipt_shows_aggregator_function_and_blocks(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = release_age(
        capsys,
        "--statistic mean --epsilon 1 --method sample-aggregate --blocks 20 --aggregator median",
        "--seed",
        "3",
    )
    assert code == 0, err
    rows = {line.split()[0]: line.split()[-1] for line in out.splitlines() if line.split()}
    assert rows["aggregator"] == "median"
    assert rows["function"] == "mean"
    assert rows["blocks"] == "20"


@pytest.mark.parametrize("method", ["auto", "exponential", "smooth", "global"])
def test_resolution_puts_the_release_on_the_declared_grid(
    capsys: pytest.CaptureFixture[str], method: str
) -> None:
    code, out, err = release_age(
        capsys, f"--statistic median --resolution 1 --epsilon 0.5 --method {method} --seed 3 --json"
    )
    assert code == 0, err
    payload = json.loads(out)
    assert float(payload["value"]).is_integer()
    assert 0 <= payload["value"] <= 100


def test_resolution_is_refused_for_other_statistics(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--statistic", "mean", "--resolution", "1", "--epsilon", "1"]
    code, _, err = run(capsys, "release", CENSUS, *AGE, *args)
    assert code == 2
    assert "--resolution applies only" in err
