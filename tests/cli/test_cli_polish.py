"""The command line as a new user meets it: versions, help, sizes, repeats, its own words.

Every case is an item a newcomer ran into: an option given twice silently won; sizes such
as --blocks 1e12 ended in MemoryError; messages spoke Python (max_evaluations=...,
method='auto', "the 'delta' parameter of bounded_ls_mean"); analyze and release used
different smoothing defaults; clipping was silent; a refusal gave no hint; yes/no
columns and one-column tables were refused.
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

import dpsense as ds
from dpsense.cli import main
from dpsense.methods.smooth import point_plan

ROOT = Path(__file__).resolve().parents[2]


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def data(tmp_path: Path) -> Path:
    x = np.random.default_rng(3).normal(50, 10, 2000)
    path = tmp_path / "data.csv"
    path.write_text("v\n" + "\n".join(f"{v:.4f}" for v in x) + "\n")
    return path


MEAN = ("-c", "v", "-s", "mean", "--lower", "0", "--upper", "100", "--epsilon", "1")


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--version")
    assert code == 0
    assert out.strip() == f"dpsense {ds.__version__}"


@pytest.mark.parametrize(
    "command",
    [
        [],
        ["analyze"],
        ["demo"],
        ["explore"],
        ["release"],
        ["ratio"],
        ["bounds"],
        ["budget"],
        ["budget", "init"],
        ["budget", "show"],
        ["caps"],
    ],
)
def test_every_help_ends_with_two_or_three_examples(
    capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    code, out, _ = run(capsys, *command, "--help")
    assert code == 0
    tail = out[out.rindex("Examples:") :]
    examples = [line for line in tail.splitlines() if line.strip().startswith("dpsense")]
    assert 2 <= len(examples) <= 3
    assert "Options:" not in tail
    assert "Commands:" not in tail


@pytest.mark.parametrize(
    ("extra", "twice"),
    [
        (["--epsilon", "2"], "--epsilon"),
        (["--statistic", "median"], "--statistic"),
        (["--json", "--json"], "--json"),
        (["--upper=5"], "--upper"),
    ],
)
def test_a_repeated_option_is_an_error(
    capsys: pytest.CaptureFixture[str], data: Path, extra: list[str], twice: str
) -> None:
    code, out, err = run(capsys, "release", str(data), *MEAN, *extra)
    assert code == 2
    assert out == ""
    assert err.startswith("error: ")
    assert f"{twice} is given twice" in err


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--method", "sample-aggregate", "--blocks", "1000000000000"], "--blocks"),
        (["--method", "smooth", "--dof", "1000000000000"], "--dof"),
    ],
)
def test_sizes_beyond_the_machine_are_clear_errors(
    capsys: pytest.CaptureFixture[str], data: Path, args: list[str], expected: str
) -> None:
    code, _, err = run(capsys, "release", str(data), *MEAN, *args)
    assert code == 2
    assert expected in err
    assert "must be" in err
    assert "MemoryError" not in err
    assert "internal error" not in err


def test_analyze_max_k_and_explore_limits(capsys: pytest.CaptureFixture[str], data: Path) -> None:
    code, _, err = run(
        capsys, "analyze", str(data), "-c", "v", "-s", "median", "--lower", "0",
        "--upper", "100", "--max-k", "100000000",
    )  # fmt: skip
    assert code == 2
    assert "--max-k must be at most" in err
    code, _, err = run(capsys, "explore", "--universe", "1,2,3", "--values", "1,2",
                       "--max-evaluations", "0")  # fmt: skip
    assert code == 2
    assert "--max-evaluations" in err


@pytest.mark.parametrize(
    ("args", "wanted", "unwanted"),
    [
        (["--method", "bounded-ls"], "--delta (with --method bounded-ls)", "bounded_ls_mean"),
        (["--method", "auto", "--noise", "laplace"], "--method auto takes no options", "='"),
        (["--method", "foo"], "sample-aggregate", "release must"),
        (["--by", "g"], "--keys FILE or --delta", "keys=["),
    ],
)
def test_messages_speak_the_command_line(
    capsys: pytest.CaptureFixture[str],
    data: Path,
    args: list[str],
    wanted: str,
    unwanted: str,
) -> None:
    code, _, err = run(capsys, "release", str(data), *MEAN, *args)
    assert code == 2
    assert wanted in err
    assert unwanted not in err


def test_explore_over_the_limit_keeps_what_it_computed(capsys: pytest.CaptureFixture[str]) -> None:
    universe = ",".join(str(v) for v in range(12))
    code, out, err = run(
        capsys, "explore", "--universe", universe, "--values", "1,2,3,5,8", "--statistics",
        "median", "--max-hamming", "6", "--max-evaluations", "20000", "--json",
    )  # fmt: skip
    assert code == 0
    payload = json.loads(out)
    done = [r for r in payload["results"] if r["sensitivity"] is not None]
    skipped = [r for r in payload["results"] if r.get("skipped")]
    assert done
    assert skipped
    assert max(r["hamming"] for r in done) < max(r["hamming"] for r in skipped)
    assert "--max-evaluations" in err
    assert "max_evaluations" not in err


def test_analyze_and_release_smooth_use_the_same_beta(
    capsys: pytest.CaptureFixture[str], data: Path
) -> None:
    code, out, _ = run(
        capsys, "analyze", str(data), "-c", "v", "-s", "median", "--lower", "0",
        "--upper", "100", "--json",
    )  # fmt: skip
    assert code == 0
    beta = json.loads(out)["beta"]
    code, out, _ = run(
        capsys, "release", str(data), "-c", "v", "-s", "median", "--lower", "0", "--upper",
        "100", "--epsilon", "1", "--method", "smooth", "--json",
    )  # fmt: skip
    assert code == 0
    # the value's beta: a quarter of epsilon bounds the noise scale for the interval
    assert json.loads(out)["parameters"]["beta"] == beta == point_plan(1.0, 0.0)[0].beta


def test_analyze_reports_how_many_values_were_clipped(
    capsys: pytest.CaptureFixture[str], data: Path
) -> None:
    x = np.loadtxt(data, skiprows=1)
    code, out, _ = run(
        capsys, "analyze", str(data), "-c", "v", "-s", "mean", "--lower", "45", "--upper",
        "60", "--json",
    )  # fmt: skip
    payload = json.loads(out)
    assert code == 0
    assert payload["clipped_below"] == int(np.sum(x < 45))
    assert payload["clipped_above"] == int(np.sum(x > 60))
    code, out, _ = run(
        capsys, "analyze", str(data), "-c", "v", "-s", "mean", "--lower", "45", "--upper", "60"
    )
    assert re.search(rf"{int(np.sum(x < 45))} below, {int(np.sum(x > 60))} above", out)


def test_a_refusal_exits_0_and_says_what_to_try(
    capsys: pytest.CaptureFixture[str], data: Path
) -> None:
    code, out, _ = run(
        capsys, "release", str(data), "-c", "v", "-s", "median", "--lower", "0", "--upper",
        "100", "--epsilon", "1", "--delta", "1e-6", "--method", "ptr", "--bound", "1e-6",
    )  # fmt: skip
    assert code == 0
    text = " ".join(out.split())
    assert "Refused" in text
    assert "exit code is 0" in text
    assert "a larger --bound" in text
    assert "--method smooth" in text


def test_yes_no_columns_and_one_column_tables(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "users.csv"
    path.write_text("clicked,visited\nyes,yes\nno,yes\nYES,true\nn,1\nFalse,0\n")
    code, out, _ = run(
        capsys, "ratio", str(path), "--numerator", "clicked", "--denominator", "visited",
        "--epsilon", "1", "--json",
    )  # fmt: skip
    assert code == 0
    assert 0.0 <= json.loads(out)["value"] <= 1.0
    path.write_text("clicked\nyes\nmaybe\n")
    code, _, err = run(capsys, "ratio", str(path), "--numerator", "clicked", "--epsilon", "1")
    assert code == 2
    assert "yes/no" in err
    assert "maybe" not in err

    import pandas as pd

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ds.SeededRandomnessWarning)
        a = ds.private_ratio([True, False, True], [True, True, True], epsilon=1, rng=1)
        frame = pd.DataFrame({"a": ["yes", "no", "yes"]})
        b = ds.private_ratio(frame, [1, 1, 1], epsilon=1, rng=1)
        one = ds.release(np.array([[1.0], [2.0]]), ds.Mean(0, 3), epsilon=1, rng=1)
        flat = ds.release(np.array([1.0, 2.0]), ds.Mean(0, 3), epsilon=1, rng=1)
    assert a.value == b.value
    assert isinstance(one, ds.Release)
    assert isinstance(flat, ds.Release)
    assert one.value == flat.value


def test_user_docs_cite_papers_not_internal_files() -> None:
    """README, docs/ and the package docstrings never point at the design seeds or the
    internal specification, which are not in the repository."""
    texts = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    texts += sorted((ROOT / "src").rglob("*.py"))
    pattern = re.compile(r"\bseed 0\d\d\b|\bSPEC\b|SPEC §|seeds/|DESIGN\.md|STYLE\.md")
    offenders = [str(p.relative_to(ROOT)) for p in texts if pattern.search(p.read_text())]
    assert offenders == []


@pytest.mark.parametrize(
    ("args", "wanted"),
    [
        (["analyze", "DATA", "-c", "v", "-s", "quantiles", "--p", "0.1,0.9"], "one number"),
        (["release", "DATA", *MEAN[:2], "-s", "quantiles", "--epsilon", "1"], "needs its"),
        (["release", "DATA", "-c", "v", "-s", "quantile", "--p", "0.1,0.9"], "one level"),
        (["release", "DATA", "-c", "v", "-s", "quantiles", "--p", "0.1,x"], "levels such as"),
        (["explore", "--universe", "1,2,3", "--values", "1", "--statistics", "quantiles"], "one"),
    ],
)
def test_several_quantiles_on_the_command_line_say_what_to_do(
    capsys: pytest.CaptureFixture[str], data: Path, args: list[str], wanted: str
) -> None:
    args = [str(data) if a == "DATA" else a for a in args]
    if args[0] != "explore":
        args += ["--lower", "0", "--upper", "100"] + (
            ["--epsilon", "1"] if "--epsilon" not in args and args[0] == "release" else []
        )
    code, _, err = run(capsys, *args)
    assert code == 2
    assert wanted in err


def test_analyze_clips_infinities_and_counts_them(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """analyze (non-private) treats inf and -inf as a release does: clipped to the bounds,
    counted among the clipped values, the profile that of the clipped data."""
    x = np.random.default_rng(4).normal(50, 10, 300).round(2)
    x[::7], x[3::11] = np.inf, -np.inf
    spelled = ["inf" if v == np.inf else "-Infinity" if v == -np.inf else str(v) for v in x]
    infinite, clipped = tmp_path / "infinite.csv", tmp_path / "clipped.csv"
    infinite.write_text("v\n" + "\n".join(spelled) + "\n")
    clipped.write_text("v\n" + "\n".join(str(v) for v in np.clip(x, 45, 60)) + "\n")
    args = ("-c", "v", "-s", "median", "--lower", "45", "--upper", "60", "--json")
    code, out, err = run(capsys, "analyze", str(infinite), *args)
    assert code == 0, err
    payload = json.loads(out)
    assert payload["clipped_below"] == int(np.sum(x < 45))
    assert payload["clipped_above"] == int(np.sum(x > 60))
    code, out, _ = run(capsys, "analyze", str(clipped), *args)
    reference = json.loads(out)
    for key in ("value", "local_sensitivity", "smooth_sensitivity", "sensitivity_at_distance"):
        assert payload[key] == reference[key], key


@pytest.mark.parametrize("width", [40, 80, 200])
def test_budget_show_never_cuts_a_field(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    width: int,
) -> None:
    """Every field of every charge is shown whole (issue 47: the time was cut to
    "2026-11-28T20…"): as wide as it needs in a pipe, whatever COLUMNS says."""
    monkeypatch.setenv("COLUMNS", str(width))
    path = tmp_path / "a_rather_long_name_of_a_salary_survey_file.csv"
    path.write_text("salary_of_the_person\n" + "".join(f"{i}\n" for i in range(30)))
    ledger = str(tmp_path / "b.db")
    assert main(["budget", "init", ledger, "--epsilon", "10"]) == 0
    argv = ["release", str(path), "-c", "salary_of_the_person", "-s", "mean", "--lower", "0"]
    assert main([*argv, "--upper", "40", "--epsilon", "1", "--ledger", ledger]) == 0
    capsys.readouterr()
    code, out, _ = run(capsys, "budget", "show", ledger)
    assert code == 0
    assert "…" not in out
    code, raw, _ = run(capsys, "budget", "show", ledger, "--json")
    (charge,) = json.loads(raw)["charges"]
    for field in (charge["time"][:19], charge["dataset"], charge["statistic"], "answered"):
        assert field in out, (field, out)
