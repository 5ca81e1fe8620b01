"""``dpsense audit``: a user's mechanism, imported from a module file, audited on two CSVs.

The mechanisms are written to ``tmp_path`` as modules and imported by name from the
current directory, the way a user runs the command. Each module gets a unique name so
that no test sees another's module in ``sys.modules``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import FakeTerminal

import dpsense.cli.app as cli
from dpsense.cli import main
from dpsense.cli.audit_cmd import EXIT_VIOLATION

SECRET = "987654.321"  # a data value that must never appear in an error message

MECHANISMS = f'''
import numpy as np

EPSILON = 1.0

def laplace_count(data, rng):
    """Correct: a count has sensitivity 1 under add-remove."""
    return len(data) + rng.laplace(0.0, 1.0 / EPSILON)

def tiny_count(data, rng):
    """Broken: 1000 times too little noise."""
    return len(data) + rng.laplace(0.0, 1.0 / EPSILON / 1000)

def laplace_mean(data, rng):
    """Correct: the mean of n values in [0, 1], substitute neighbours: sensitivity 1/n."""
    n = len(data)
    return float(np.mean(np.clip(data, 0.0, 1.0))) + rng.laplace(0.0, 1.0 / (n * EPSILON))

def tiny_mean(data, rng):
    n = len(data)
    return float(np.mean(np.clip(data, 0.0, 1.0))) + rng.laplace(0.0, 1.0 / (n * EPSILON) / 1000)

def global_laplace(data):
    """No rng parameter: the global numpy generator, seeded by --seed."""
    return len(data) + np.random.laplace(0.0, 1.0 / EPSILON)

def raises(data):
    raise ValueError("the data hold {SECRET}")

def returns_text(data):
    return "{SECRET}"

def returns_none(data):
    pass

def returns_pair(data, rng):
    return np.array([1.0, 2.0])

def returns_nan(data):
    return float("nan")

def returns_inf(data):
    return float("inf")

def chatty(data, rng):
    print("called")
    return len(data) + rng.laplace(0.0, 1.0 / EPSILON)

NOT_A_FUNCTION = 3
'''


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """``tmp_path`` as the current directory; sys.path and sys.modules restored after."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", os.getcwd())])
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        if name.startswith(("mech_", "_dpsense_audit_")):
            del sys.modules[name]


def module(folder: Path, source: str = MECHANISMS) -> str:
    name = f"mech_{uuid.uuid4().hex}"
    (folder / f"{name}.py").write_text(source, encoding="utf-8")
    return name


def csv(folder: Path, name: str, values: list[float], header: str = "v") -> str:
    path = folder / name
    path.write_text(header + "\n" + "".join(f"{v!r}\n" for v in values), encoding="utf-8")
    return str(path)


def pair(folder: Path, kind: str = "add-remove") -> list[str]:
    """--x and --x-prime: 50 values in [0, 1], and the same plus (or with) one more record."""
    x = [i / 49 for i in range(50)]
    y = [*x, 1.0] if kind == "add-remove" else [*x[:-1], 0.0]
    return ["--x", csv(folder, "x.csv", x), "--x-prime", csv(folder, "x_prime.csv", y)]


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["audit", *args])
    out, err = capsys.readouterr()
    return code, out, err


def audit_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code, out, err = run(capsys, *args, "--json")
    assert err == ""
    return code, json.loads(out)


def assert_one_line_error(err: str) -> None:
    assert err.startswith("error: ")
    assert err.count("\n") == 1
    assert "Traceback" not in err
    assert SECRET not in err


# --------------------------------------------------------------------------- the verdict


@pytest.mark.parametrize(
    ("correct", "broken", "kind"),
    [("laplace_count", "tiny_count", "add-remove"), ("laplace_mean", "tiny_mean", "substitute")],
)
def test_tells_a_broken_mechanism_from_a_correct_one_at_4000_draws(
    workdir: Path, capsys: pytest.CaptureFixture[str], correct: str, broken: str, kind: str
) -> None:
    mod = module(workdir)
    args = [*pair(workdir, kind), "--epsilon", "1", "--draws", "4000", "--seed", "11"]
    code, good = audit_json(capsys, f"{mod}:{correct}", *args)
    assert code == 0
    assert good["violation"] is False
    assert good["verdict"] == "no violation detected"
    assert good["neighbours"] == kind
    assert isinstance(good["epsilon_lower_bound"], float)
    assert 0.0 <= good["epsilon_lower_bound"] <= 1.0
    assert good["confidence"] == 0.95
    assert good["draws"] == 4000

    code, bad = audit_json(capsys, f"{mod}:{broken}", *args)
    assert code == EXIT_VIOLATION == 4
    assert bad["violation"] is True
    assert bad["verdict"] == "violation found"
    # the noise is 1000 times too small: the true loss is 1000; 4000 draws show over 2
    assert isinstance(bad["epsilon_lower_bound"], float)
    assert bad["epsilon_lower_bound"] > 2.0
    assert bad["found_by"] == "histogram"
    assert bad["histogram"]["passed"] is False


def test_json_keys_and_reproducible_with_a_seed(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mod = module(workdir)
    args = [f"{mod}:global_laplace", *pair(workdir), "--epsilon", "1", "--draws", "500"]
    code, first = audit_json(capsys, *args, "--seed", "3")
    assert code == 0
    assert set(first) == {
        "mechanism",
        "verdict",
        "violation",
        "epsilon_lower_bound",
        "confidence",
        "epsilon",
        "delta",
        "neighbours",
        "draws",
        "calls",
        "found_by",
        "worst_event",
        "direction",
        "histogram",
        "catastrophe",
        "seed",
    }
    assert first["mechanism"] == f"{mod}:global_laplace"
    assert first["seed"] == 3
    assert first["catastrophe"] is None  # continuous outputs: no point mass to test
    assert first["calls"] == 2 * (500 + 500 + 500)  # lump pilot, histogram pilot, draws
    # the seed reaches the global numpy generator of a mechanism without an rng parameter
    assert audit_json(capsys, *args, "--seed", "3") == (0, first)
    assert audit_json(capsys, *args, "--seed", "4")[1] != first


def test_what_the_mechanism_prints_goes_to_stderr(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mod = module(workdir, MECHANISMS + 'print("imported")\n')
    args = [f"{mod}:chatty", *pair(workdir), "--epsilon", "1", "--draws", "100", "--json"]
    code, out, err = run(capsys, *args)
    assert code == 0
    assert json.loads(out)["calls"] == 2 * (100 + 100 + 100)  # no lump: no catastrophe test
    assert err.startswith("imported\ncalled\n")


def test_human_output_says_what_the_verdict_means(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mod = module(workdir)
    args = [*pair(workdir), "--epsilon", "1", "--draws", "1000", "--seed", "2"]
    code, out, err = run(capsys, f"{mod}:laplace_count", *args)
    assert (code, err) == (0, "")
    assert "no violation detected at this power" in out
    assert "never prove privacy" in " ".join(out.split())
    code, out, err = run(capsys, f"{mod}:tiny_count", *args)
    assert (code, err) == (4, "")
    assert "VIOLATION FOUND" in out
    assert "is not (epsilon=1, delta=0)-DP" in " ".join(out.split())


def test_a_file_path_names_the_module(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = workdir / "mechanisms"
    folder.mkdir()
    mod = module(folder)
    code, payload = audit_json(
        capsys,
        f"{folder / mod}.py:tiny_count",
        *pair(workdir),
        "--epsilon",
        "1",
        "--draws",
        "1000",
        "--seed",
        "1",
    )
    assert code == 4
    assert payload["violation"] is True


def test_progress_bar_on_a_terminal(
    workdir: Path,
    terminal: Callable[[], FakeTerminal],
    rich_tasks: list[str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    mod = module(workdir)
    stderr = terminal()
    code = main(
        ["audit", f"{mod}:laplace_count", *pair(workdir), "--epsilon", "1", "--draws", "500"]
    )
    assert code == 0
    assert rich_tasks == ["Auditing the mechanism"]
    assert "100%" in stderr.getvalue()


def test_the_installed_command_imports_from_the_current_directory(tmp_path: Path) -> None:
    """Run as a user does: a fresh process whose sys.path lacks the current directory."""
    mod = module(tmp_path)
    env = dict(os.environ)
    src = str(Path(cli.__file__).resolve().parents[2])
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    # -P: do not put the current directory on sys.path, as for a console script
    command = [sys.executable, "-P", "-c", "import sys; from dpsense.cli import main; "
               "sys.exit(main())", "audit"]  # fmt: skip
    args = [*pair(tmp_path), "--epsilon", "1", "--draws", "1000", "--seed", "5"]
    for function, expected in (("laplace_count", 0), ("tiny_count", 4), ("raises", 2)):
        proc = subprocess.run(
            [*command, f"{mod}:{function}", *args],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=120,
            check=False,
        )
        assert proc.returncode == expected, proc.stderr
        assert "Traceback" not in proc.stderr
        assert SECRET not in proc.stderr + proc.stdout
    assert proc.stderr.startswith("error: the mechanism")


# --------------------------------------------------------------------------- bad input


def error(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    code, out, err = run(capsys, *args)
    assert code == 2, err
    assert out == ""
    assert_one_line_error(err)
    return err


@pytest.mark.parametrize(
    ("function", "needles"),
    [
        ("raises", ["mech_", ":raises raised ValueError when called on x", "not shown"]),
        ("returns_text", ["must return one number", "an object of type str"]),
        ("returns_none", ["returned None", "return statement"]),
        ("returns_pair", ["must return one number", "an array of shape (2,)"]),
        ("returns_nan", ["must return a finite number", "NaN or an infinite value"]),
        ("returns_inf", ["must return a finite number"]),
        ("no_such_function", ["has no function 'no_such_function'", "MODULE:FUNCTION"]),
        ("NOT_A_FUNCTION", ["is not callable", "of type int"]),
    ],
)
def test_a_bad_mechanism_is_one_line(
    workdir: Path, capsys: pytest.CaptureFixture[str], function: str, needles: list[str]
) -> None:
    mod = module(workdir)
    err = error(capsys, f"{mod}:{function}", *pair(workdir), "--epsilon", "1", "--draws", "100")
    for needle in needles:
        assert needle in err


@pytest.mark.parametrize(
    ("source", "spec", "needles"),
    [
        (None, "no_such_module_xyz:f", ["module 'no_such_module_xyz' was not found", "PYTHONPATH"]),
        (f"raise RuntimeError('{SECRET}')\n", None, ["raised RuntimeError", "python -c"]),
        ("def f(:\n", None, ["raised SyntaxError"]),
        ("import no_such_dependency_xyz\n", None, ["it imports 'no_such_dependency_xyz'"]),
        (None, "justaname", ["MODULE:FUNCTION", "Got 'justaname' instead"]),
        (None, "a-b:f", ["'a-b' is not a module name"]),
        (None, "missing_file.py:f", ["file not found: missing_file.py"]),
    ],
)
def test_a_module_that_does_not_import_is_one_line(
    workdir: Path,
    capsys: pytest.CaptureFixture[str],
    source: str | None,
    spec: str | None,
    needles: list[str],
) -> None:
    if source is not None:
        spec = f"{module(workdir, source)}:f"
    assert spec is not None
    err = error(capsys, spec, *pair(workdir), "--epsilon", "1")
    for needle in needles:
        assert needle in err


@pytest.mark.parametrize(
    ("options", "needle"),
    [
        (["--epsilon", "0"], "--epsilon must be a float in (0, inf). Got 0.0 instead."),
        (["--epsilon", "-1"], "--epsilon must be a float in (0, inf)"),
        (["--epsilon", "inf"], "--epsilon must be a float in (0, inf)"),
        (["--epsilon", "1", "--delta", "1"], "--delta must be a float in [0, 1)"),
        (["--epsilon", "1", "--delta", "-0.1"], "--delta must be a float in [0, 1)"),
        (["--epsilon", "1", "--draws", "99"], "--draws must be an int in [100, 10000000]. Got 99"),
        (["--epsilon", "1", "--draws", "1000000000"], "--draws must be an int in [100, "),
        (["--epsilon", "1", "--alpha", "1.5"], "--alpha"),
        (["--epsilon", "1", "--seed", "-3"], "--seed must be an int >= 0"),
        (["--epsilon", "1", "--neighbours", "bounded"], "--neighbours must be 'add-remove'"),
        (["--epsilon", "1", "--neighbours", "substitute"], "add-remove neighbours, but the claim"),
        (["--epsilon", "1", "--column", "w"], "column 'w'"),
        (["--draws", "1000"], "Missing option '--epsilon'"),
    ],
)
def test_bad_options_are_one_line(
    workdir: Path, capsys: pytest.CaptureFixture[str], options: list[str], needle: str
) -> None:
    mod = module(workdir)
    err = error(capsys, f"{mod}:laplace_count", *pair(workdir), *options)
    assert needle in err


def test_bad_options_are_checked_before_the_module_is_imported(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mod = module(workdir, f"raise RuntimeError('{SECRET}')\n")
    err = error(capsys, f"{mod}:f", *pair(workdir), "--epsilon", "-1")
    assert "--epsilon" in err


@pytest.mark.parametrize(
    ("x", "x_prime", "needle"),
    [
        ("x.csv", "missing.csv", "file not found"),
        ("empty.csv", "x.csv", "file is empty"),
        ("x.csv", "text.csv", "must be numeric"),
        ("x.csv", "two.csv", "has 2 columns"),
        ("x.csv", "x.csv", "x and x' hold the same values"),
        ("x.csv", "far.csv", "x and x' are not neighbours: they differ in more than one record"),
    ],
)
def test_bad_data_is_one_line(
    workdir: Path, capsys: pytest.CaptureFixture[str], x: str, x_prime: str, needle: str
) -> None:
    csv(workdir, "x.csv", [0.0, 0.5, 1.0])
    csv(workdir, "far.csv", [0.0, 0.25, 0.75])  # two records replaced
    csv(workdir, "text.csv", [0.0, 0.5, 1.0])
    with (workdir / "text.csv").open("a", encoding="utf-8") as handle:
        handle.write(f"x{SECRET}\n")
    (workdir / "empty.csv").write_text("", encoding="utf-8")
    (workdir / "two.csv").write_text(f"a,b\n1,{SECRET}\n", encoding="utf-8")
    mod = module(workdir)
    err = error(capsys, f"{mod}:laplace_count", "--x", x, "--x-prime", x_prime, "--epsilon", "1")
    assert needle in err


def test_an_empty_dataset_is_a_neighbour_under_add_remove(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A header without rows is the empty dataset, the add-remove neighbour of one row."""
    mod = module(workdir)
    x, y = csv(workdir, "x.csv", []), csv(workdir, "y.csv", [0.5])
    args = ["--x", x, "--x-prime", y, "--epsilon", "1", "--draws", "1000", "--seed", "4"]
    code, payload = audit_json(capsys, f"{mod}:laplace_count", *args)
    assert (code, payload["neighbours"]) == (0, "add-remove")
    assert audit_json(capsys, f"{mod}:tiny_count", *args)[0] == 4
