"""Smoke test of the utility study (benchmarks/utility_study, run by benchmarks/utility.py).

n = 200, 20 trials, one epsilon, one worker; the peers take part only if importable.
Checks the structure of the results and of the written files, never timings or MAEs.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from dpsense.lab.study_setup import METHODS, T3_FACTOR, peer_available

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "utility.py"
# the study's modules live beside the script, which imports them as utility_study.*
sys.path.insert(0, str(SCRIPT.parent))

from utility_study.run import StudyConfig, run_study  # noqa: E402
from utility_study.targets import evaluate_targets  # noqa: E402


@pytest.fixture(scope="module")
def utility() -> ModuleType:
    spec = importlib.util.spec_from_file_location("dpsense_benchmark_utility", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up here
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def study(utility: ModuleType) -> dict[str, Any]:
    config = StudyConfig(
        trials=20,
        epsilons=(1.0,),
        ns=(200,),
        datasets=("ages", "incomes"),
        workers=1,
    )
    result: dict[str, Any] = run_study(config, peer_draw=utility.peer_draw)
    return result


def test_cells_and_methods(study: dict[str, Any]) -> None:
    expected = {f"{s}/{d}/n200" for s in ("median", "mean") for d in ("ages", "incomes")}
    assert set(study["cells"]) == expected
    for key, cell in study["cells"].items():
        statistic = key.split("/")[0]
        wanted = [
            m.key for m in METHODS[statistic] if m.source == "dpsense" or peer_available(m.key)
        ]
        assert list(cell["methods"]) == wanted
        assert cell["lower"] < cell["truth"] < cell["upper"]
        for entry in cell["methods"].values():
            assert entry["privacy"] in ("pure", "approx")
            assert set(entry["by_epsilon"]) == {"1"}
            stats = entry["by_epsilon"]["1"]
            assert stats["trials"] == 20
            assert stats["mae"] >= 0.0
            assert 0.0 <= stats["refusal_rate"] <= 1.0
            assert stats["refusals"] == round(20 * stats["refusal_rate"])
        if statistic == "median":
            assert cell["ties_at_median"] >= 1
            assert cell["rank_to_tie_edge"] >= 0


def test_refusals_only_from_ptr(study: dict[str, Any]) -> None:
    for cell in study["cells"].values():
        for key, entry in cell["methods"].items():
            if key != "ptr":
                assert entry["by_epsilon"]["1"]["refusals"] == 0


def test_targets_structure(study: dict[str, Any]) -> None:
    targets = evaluate_targets(study)
    assert targets["epsilon"] == 1.0
    assert {r["cell"] for r in targets["T1"]["rows"]} == {"median/ages/n200"}
    assert {r["cell"] for r in targets["T2"]["rows"]} == {"median/incomes/n200"}
    assert len(targets["T3"]["rows"]) == 2 * len(study["cells"])  # pure and approx auto
    for row in targets["T3"]["rows"]:
        assert row["holds"] == (row["ratio"] <= T3_FACTOR)
    assert targets["T3"]["holds"] in (True, False)
    rules = targets["auto_rules"]
    assert {(r["statistic"], r["privacy"]) for r in rules} == {
        (s, p) for s in ("median", "mean") for p in ("pure", "approx")
    }


def test_outputs(utility: ModuleType, study: dict[str, Any], tmp_path: Path) -> None:
    written = utility.write_outputs(study, tmp_path, plots=False)
    text = written["markdown"].read_text(encoding="utf-8")
    assert "## Summary: targets at epsilon = 1" in text
    for name in ("**T1**", "**T2**", "**T3**", "### median", "### mean", "ref."):
        assert name in text
    data = json.loads(written["json"].read_text(encoding="utf-8"))
    assert set(data) >= {"config", "choices", "environment", "cells", "targets"}
    assert data["config"]["trials"] == 20
