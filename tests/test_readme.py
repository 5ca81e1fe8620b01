"""Every code block of the README runs: the Python blocks in order in one namespace (as a
reader pastes them into one session), the shell blocks with ``bash -e`` (the long command
line tour in the slow tier). Two blocks are not run here, and why: the install line and
``make demo`` / ``make test`` are what CI itself runs on a clean clone (``.ci/run``)."""

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


def blocks(language: str) -> list[str]:
    text = README.read_text(encoding="utf-8")
    return re.findall(rf"^```{language}\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)


# the shell blocks CI runs itself: the install and the make targets
CI_RUNS = ("pip install", "make demo")


def test_the_readme_has_its_blocks() -> None:
    assert len(blocks("python")) >= 8
    shell = blocks("bash")
    assert sum(any(word in b for word in CI_RUNS) for b in shell) == 2
    first = README.read_text(encoding="utf-8").splitlines()[:40]
    assert any("pip install" in line for line in first)  # install on the first screen
    assert any("dpsense release" in line for line in first)  # a release on a CSV too


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


def _bash(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", code],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_the_first_release_runs_from_the_clone() -> None:
    (first,) = [b for b in blocks("bash") if ".venv/bin/dpsense release" in b]
    code = first.replace(".venv/bin/dpsense", str(BIN / "dpsense"))
    done = _bash(code, ROOT)
    assert done.returncode == 0, done.stderr
    assert "Private median" in done.stdout


@pytest.mark.slow
def test_the_command_line_tour_runs(tmp_path: Path) -> None:
    (tour,) = [b for b in blocks("bash") if "dpsense analyze" in b]
    done = _bash(tour, tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    for made in ("census.csv", "panel.csv", "out.csv", "budget.db", "report.html"):
        assert (tmp_path / made).exists(), made
