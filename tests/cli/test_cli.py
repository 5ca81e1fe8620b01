"""Tests of the dpsense command line (exit codes, JSON contract, error hygiene)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import dpsense.cli.analyze_cmd as analyze_cmd
import dpsense.cli.app as cli
from dpsense.cli import main
from dpsense.datasets import census_path
from dpsense.errors import BudgetExceededError

CENSUS = str(census_path())
SECRET = "987654.321"  # a data value that must never appear in output on error
ANALYZE_KEYS = {
    "statistic",
    "neighbours",
    "value",
    "global_sensitivity",
    "local_sensitivity",
    "smooth_sensitivity",
    "beta",
    "sensitivity_at_distance",
}
MEDIAN_AGE = ["--column", "age", "--statistic", "median", "--lower", "0", "--upper", "100"]


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def words(command: str) -> list[str]:
    """A command line's options, split at spaces (none of them holds one)."""
    return command.split()


def assert_one_line_error(err: str) -> None:
    assert err.startswith("error: ")
    assert err.count("\n") == 1
    assert "Traceback" not in err


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "data.csv"
    path.write_text(text, encoding="utf-8")
    return str(path)


# --------------------------------------------------------------------------- analyze


def test_analyze_json_contract(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "analyze", CENSUS, *MEDIAN_AGE, "--json")
    assert code == 0, err
    payload = json.loads(out)
    assert set(payload) >= ANALYZE_KEYS
    assert payload["statistic"] == "median"
    assert payload["neighbours"] == "add-remove"
    assert payload["non_private"] is True
    assert len(payload["sensitivity_at_distance"]) == 11
    assert payload["sensitivity_at_distance"][0] == payload["local_sensitivity"]
    assert payload["smooth_sensitivity"] >= payload["local_sensitivity"]
    assert payload["global_sensitivity"] == 100.0
    # the beta of release --method smooth at the same defaults (delta = 0: Student's t, 3
    # dof; the value has three quarters of epsilon, the rest is its interval's)
    assert payload["beta"] == pytest.approx(0.75 / 4 / 2)
    assert payload["smooth_noise"] == "student-t"
    assert "distance_to_instability" not in payload


def test_analyze_json_substitute_bound_and_max_k(capsys: pytest.CaptureFixture[str]) -> None:
    options = words(
        "--column income --statistic mean --lower 0 --upper 500000 --neighbours substitute"
        " --bound 100 --max-k 3 --epsilon 0.5 --json"
    )
    code, out, err = run(capsys, "analyze", CENSUS, *options)
    assert code == 0, err
    payload = json.loads(out)
    assert payload["neighbours"] == "substitute"
    assert len(payload["sensitivity_at_distance"]) == 4
    assert payload["global_sensitivity"] == pytest.approx(500000 / 10000)
    assert isinstance(payload["distance_to_instability"], int) or (
        payload["distance_to_instability"] is None and payload["distance_to_instability_infinite"]
    )


def test_analyze_quantile_count_and_table(capsys: pytest.CaptureFixture[str]) -> None:
    options = words("-c age -s quantile --p 0.25 --lower 0 --upper 100 --bound 5")
    code, out, _ = run(capsys, "analyze", CENSUS, *options)
    assert code == 0
    assert "NON-PRIVATE" in out
    assert "smooth sensitivity" in out
    assert "distance to instability" in out
    code, out, _ = run(capsys, "analyze", CENSUS, "-c", "age", "-s", "count", "--json")
    assert code == 0
    assert json.loads(out)["value"] == 10000


def test_analyze_plot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    target = tmp_path / "profile.png"
    code, out, err = run(capsys, "analyze", CENSUS, *MEDIAN_AGE, "--plot", str(target), "--json")
    assert code == 0, err
    assert json.loads(out)["plot"] == str(target)
    assert target.read_bytes().startswith(b"\x89PNG")
    assert target.stat().st_size > 10_000


def test_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.csv"
    code, out, err = run(capsys, "analyze", str(missing), *MEDIAN_AGE)
    assert code == 2
    assert out == ""
    assert_one_line_error(err)
    assert f"file not found: {missing}" in err


def test_missing_column_lists_names(capsys: pytest.CaptureFixture[str]) -> None:
    options = words("--column salary --statistic median --lower 0 --upper 1")
    code, _, err = run(capsys, "analyze", CENSUS, *options)
    assert code == 2
    assert_one_line_error(err)
    assert "column 'salary' is not in" in err
    assert "'income'" in err


def test_reversed_bounds(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(
        capsys, "analyze", CENSUS, "-c", "age", "-s", "median", "--lower", "100", "--upper", "0"
    )
    assert code == 2
    assert_one_line_error(err)
    assert "lower < upper" in err


def test_missing_bounds(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "analyze", CENSUS, "-c", "age", "-s", "mean")
    assert code == 2
    assert_one_line_error(err)
    assert "bounds" in err


def analyze_refused_csv(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
) -> tuple[str, str, str]:
    """Analyze the median age of a CSV that must be refused (exit 2, one line) without
    showing its SECRET value; the file's path, what was printed, and the error."""
    path = write(tmp_path, text)
    code, out, err = run(capsys, "analyze", path, *MEDIAN_AGE)
    assert code == 2
    assert_one_line_error(err)
    assert SECRET not in err + out
    return path, out, err


def test_nan_in_a_csv_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, _, err = analyze_refused_csv(tmp_path, capsys, f"age\n{SECRET}\nnan\n3\n")
    assert "NaN" in err


def test_strings_in_a_numeric_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = f"age,name\n{SECRET},a\nJane Doe,b\n3,c\n"
    path, out, err = analyze_refused_csv(tmp_path, capsys, text)
    assert "some entries are not numbers" in err
    assert not any(ch.isdigit() for ch in err.replace(path, ""))
    assert "Jane" not in err + out


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--epsilon", "-1"], "epsilon"),
        (["--delta", "1"], "delta"),
        (["--neighbours", "sideways"], "neighbours"),
        (["--max-k", "-1"], "--max-k"),
        (["--bound", "-1"], "bound"),
        (["--p", "0.5"], "--p applies only"),
    ],
)
def test_bad_parameters(capsys: pytest.CaptureFixture[str], extra: list[str], needle: str) -> None:
    code, _, err = run(capsys, "analyze", CENSUS, *MEDIAN_AGE, *extra)
    assert code == 2
    assert_one_line_error(err)
    assert needle in err


def test_unknown_statistic_and_missing_p(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(
        capsys, "analyze", CENSUS, "-c", "age", "-s", "mode", "--lower", "0", "--upper", "1"
    )
    assert code == 2
    assert_one_line_error(err)
    code, _, err = run(
        capsys, "analyze", CENSUS, "-c", "age", "-s", "quantile", "--lower", "0", "--upper", "1"
    )
    assert code == 2
    assert_one_line_error(err)


def test_usage_errors_are_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    for args in (
        ["analyze", CENSUS, "--column", "age"],  # --statistic missing
        ["analyze", CENSUS, *MEDIAN_AGE[:6], "--upper", "abc"],
        ["analyze", CENSUS, *MEDIAN_AGE, "--no-such-option"],
        ["frobnicate"],
    ):
        code, out, err = run(capsys, *args)
        assert code == 2, args
        assert out == ""
        assert_one_line_error(err)


def test_plot_into_missing_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    code, _, err = run(
        capsys, "analyze", CENSUS, *MEDIAN_AGE, "--plot", str(tmp_path / "no" / "p.png")
    )
    assert code == 2
    assert_one_line_error(err)


def test_help(capsys: pytest.CaptureFixture[str]) -> None:
    for args in (["--help"], ["analyze", "--help"], ["explore", "-h"], ["demo", "--help"]):
        code, out, _ = run(capsys, *args)
        assert code == 0
        assert "Usage:" in out


def test_budget_exceeded_exits_3(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise BudgetExceededError((0.1, 0.0), (1.0, 0.0))

    monkeypatch.setattr(analyze_cmd, "load_column", refuse)
    code, _, err = run(capsys, "analyze", CENSUS, *MEDIAN_AGE)
    assert code == 3
    assert_one_line_error(err)
    assert "budget exceeded" in err


def test_internal_errors_hide_their_message(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def crash(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"value {SECRET} broke it")

    monkeypatch.setattr(analyze_cmd, "load_column", crash)
    code, _, err = run(capsys, "analyze", CENSUS, *MEDIAN_AGE)
    assert code == 1
    assert_one_line_error(err)
    assert "RuntimeError" in err
    assert SECRET not in err


# ------------------------------------------------------------------------------ demo


def test_demo(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "demo")
    assert code == 0, err
    assert "SYNTHETIC" in out
    assert "NON-PRIVATE" in out
    assert "median(age)" in out
    assert "local sensitivity" in out
    # every private release of the demo carries its 95% interval (README: every release
    # does)
    table = out[out.index("Differentially private releases") :]
    rows = [line for line in table.splitlines() if re.search(r"\(1, [0-9e.-]+\)|^ quantile", line)]
    assert len(rows) == 10
    for line in rows:
        cells = re.search(r"(-?[0-9.]+)\s+\[(-?[0-9.]+), (-?[0-9.]+)\]\s*$", line)
        assert cells is not None, line
        low, high = float(cells.group(2)), float(cells.group(3))
        assert low <= high, line
    assert "not public" not in table


# --------------------------------------------------------------------------- explore

EXPLORE = ["explore", "--values", "1,2,3", "--universe", "1,2,3,10,11", "--max-hamming", "2"]


def test_explore_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, *EXPLORE, "--model", "population", "--json")
    assert code == 0, err
    payload = json.loads(out)
    assert payload["non_private"] is True
    assert payload["lower"] == 1.0
    assert payload["upper"] == 11.0
    results = payload["results"]
    assert len(results) == 6 * 2 * 2 * 2
    assert {r["scope"] for r in results} == {"local", "global"}
    assert {r["neighbours"] for r in results} == {"add-remove", "substitute"}
    assert {r["hamming"] for r in results} == {1, 2}
    count = {
        (r["neighbours"], r["hamming"]): r["sensitivity"]
        for r in results
        if r["statistic"] == "count" and r["scope"] == "local"
    }
    assert count[("add-remove", 1)] == 1.0
    assert count[("add-remove", 2)] == 2.0
    assert count[("substitute", 1)] == 0.0
    for r in results:
        if r["scope"] == "local":
            twin = next(
                g
                for g in results
                if g["scope"] == "global"
                and (g["statistic"], g["neighbours"], g["hamming"])
                == (r["statistic"], r["neighbours"], r["hamming"])
            )
            assert r["sensitivity"] <= twin["sensitivity"] + 1e-9


def test_explore_table_and_plot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    target = tmp_path / "e.png"
    code, out, err = run(capsys, *EXPLORE, "--statistics", "mean,median", "--plot", str(target))
    assert code == 0, err
    assert "NON-PRIVATE" in out
    assert "h=2" in out
    assert target.read_bytes().startswith(b"\x89PNG")


def test_explore_from_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "v\n1\n2\n3\n")
    options = words("--universe 1,2,3,10 --max-hamming 1 --statistics mean --json")
    code, out, err = run(capsys, "explore", path, *options)
    assert code == 0, err
    assert json.loads(out)["n"] == 3


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--values", "1,2", "--universe", "1,x,3"], "--universe"),
        (["--values", "1,,2", "--universe", "1,2,3"], "--values"),
        (["--values", "1,2", "--universe", "2,2"], "two distinct values"),
        (["--universe", "1,2,3"], "either as a DATA file or with --values"),
        (["--values", "1,2", "--universe", "1,2", "--model", "galaxy"], "--model"),
        (["--values", "1,2", "--universe", "1,2", "--statistics", "mode"], "statistic"),
    ],
)
def test_explore_bad_input(
    capsys: pytest.CaptureFixture[str], args: list[str], needle: str
) -> None:
    code, _, err = run(capsys, "explore", *args)
    assert code == 2
    assert_one_line_error(err)
    assert needle in err


# ---------------------------------------------------------------------- subprocess


def test_python_dash_m_runs_without_traceback(tmp_path: Path) -> None:
    env = dict(os.environ)
    src = str(Path(cli.__file__).resolve().parents[2])
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    missing = str(tmp_path / "missing.csv")
    proc = subprocess.run(
        [sys.executable, "-m", "dpsense", "analyze", missing, *MEDIAN_AGE],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr == f"error: file not found: {missing}\n"
    proc = subprocess.run(
        [sys.executable, "-m", "dpsense", "analyze", CENSUS, *MEDIAN_AGE, "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert set(json.loads(proc.stdout)) >= ANALYZE_KEYS
