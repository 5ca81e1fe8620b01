"""Every code block of the README runs as written: the Python blocks in order in one
namespace (as a reader pastes them into one session), the shell blocks each in a fresh
``bash -e`` started in the clone, with the clone's ``.venv`` as ``make demo`` / ``make
test`` leave it and nothing of this process's environment but ``HOME``, ``TMPDIR`` and
``PYTHONPATH`` (so that a checkout's sources are the ones run). A block is skipped only
where the README says so and why, in an HTML comment just above it
(``<!-- readme-test: skip (reason) -->``): the install line and the ``make`` targets, which
CI runs itself on a clean clone. The long command-line tour is in the slow tier."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BIN = Path(sys.executable).parent

pd = pytest.importorskip("pandas")


SKIP = re.compile(r"<!-- readme-test: skip \((?P<why>[^)]+)\) -->\n")


def marked_blocks(language: str) -> list[tuple[str, str | None]]:
    """Each block of ``language`` with the reason it is skipped (None: it runs)."""
    text = README.read_text(encoding="utf-8")
    pattern = rf"^(?P<skip>{SKIP.pattern})?```{language}\n(?P<code>.*?)^```"
    return [
        (m["code"], m["why"]) for m in re.finditer(pattern, text, flags=re.MULTILINE | re.DOTALL)
    ]


def blocks(language: str) -> list[str]:
    return [code for code, _ in marked_blocks(language)]


def test_the_readme_has_its_blocks() -> None:
    assert len(blocks("python")) >= 8
    shell = marked_blocks("bash")
    skipped = [(code, why) for code, why in shell if why]
    assert len(skipped) == 2  # the install line and the make targets, each with its reason
    assert all(len(why.split()) >= 3 for _, why in skipped)
    assert any("pip install" in code for code, _ in skipped)
    assert any("make demo" in code for code, _ in skipped)
    # every block that runs a command of the environment activates it first (or names
    # .venv/bin/): a fresh shell has no dpsense on its PATH
    for code, why in shell:
        if why is None:
            assert code.startswith("source .venv/bin/activate"), code[:200]


def test_the_first_screen_shows_what_the_tool_is_for() -> None:
    """A release on a CSV file, a grouped SQL query with a privacy unit and a join, in the
    first 60 lines, with the install and the activation."""
    first = "\n".join(README.read_text(encoding="utf-8").splitlines()[:60])
    assert "pip install" in first
    assert "source .venv/bin/activate" in first
    assert re.search(r"dpsense release \S+\.csv", first)
    assert re.search(r"ds\.sql\(\s*\"SELECT [^\"]*GROUP BY", first)
    assert "privacy_unit=" in first
    assert "ds.join(" in first
    assert "capped" in first  # what an interval covers


def _tables() -> dict[str, Any]:
    """The tables the join example names (a reader has their own): visits of people in
    countries, and a public table of regions."""
    rng = np.random.default_rng(0)
    people = pd.DataFrame(
        {"person": np.arange(300), "country": rng.choice(["fr", "de", "jp"], 300)}
    )
    visits = pd.DataFrame(
        {"person": rng.integers(0, 300, 900), "hours": rng.uniform(0, 12, 900).round(1)}
    )
    regions = pd.DataFrame({"country": ["fr", "de", "jp"], "region": ["EU", "EU", "Asia"]})
    return {"visits": visits, "people": people, "regions": regions}


def test_every_python_block_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    datasets = tmp_path / "src" / "dpsense" / "datasets"
    datasets.mkdir(parents=True)
    shutil.copy(ROOT / "src" / "dpsense" / "datasets" / "census.csv", datasets)
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": "readme", **_tables()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the README's seeded lines warn, as they say
        for i, code in enumerate(blocks("python")):
            try:
                exec(compile(code, f"README python block {i + 1}", "exec"), namespace)
            except Exception as exc:  # pragma: no cover - the failure message
                raise AssertionError(f"README python block {i + 1} fails: {exc!r}") from exc
    assert (tmp_path / "report.html").exists()


VENV = ROOT / ".venv"


def _fresh_env(tmp: Path) -> dict[str, str]:
    """A fresh shell's environment: the system's PATH (no virtual environment on it), a
    home, a temporary folder, and this checkout's sources when the tests run them from
    ``PYTHONPATH`` (made absolute: the tour changes folder)."""
    env = {"PATH": os.defpath + ":/usr/local/bin", "HOME": str(tmp), "TMPDIR": str(tmp)}
    env["LANG"] = "C.UTF-8"
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if paths:
        env["PYTHONPATH"] = os.pathsep.join(str(Path(p).resolve()) for p in paths)
    return env


def _bash(code: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", code],
        cwd=ROOT,
        env=_fresh_env(tmp),
        capture_output=True,
        text=True,
        timeout=900,
    )


def _shell_blocks() -> list[Any]:
    out = []
    for i, (code, why) in enumerate(marked_blocks("bash")):
        if why is not None:
            continue  # the README says why, above the block
        slow = "dpsense analyze" in code  # the tour: minutes
        out.append(pytest.param(code, id=f"bash-{i + 1}", marks=[pytest.mark.slow] if slow else []))
    return out


@pytest.mark.parametrize("code", _shell_blocks())
def test_every_shell_block_runs_as_written(code: str, tmp_path: Path) -> None:
    if not (VENV / "bin" / "activate").exists():
        pytest.skip("no .venv in the clone: the README's blocks start after make demo")
    done = _bash(code, tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    if "dpsense release src/" in code:
        assert "Private median" in done.stdout
    if "dpsense analyze" in code:  # the tour made its files in a fresh folder
        made = {p.name for p in tmp_path.rglob("*") if p.is_file()}
        for name in ("census.csv", "panel.csv", "out.csv", "budget.db", "report.html"):
            assert name in made, name
        assert "NOT PRIVATE" in done.stdout  # dpsense caps says so
