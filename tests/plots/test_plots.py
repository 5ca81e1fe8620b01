"""Tests of the sensitivity figures (dpsense.plots)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from dpsense.errors import InputError
from dpsense.plots import plot_explorer, plot_sensitivity_profile

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def profile_inputs() -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], float, float]:
    ks = np.arange(60)
    a = np.minimum(100.0, np.r_[0.0, 0.0, 1.0, 1.0, 2.0, 3.0 * np.arange(1, 56) ** 1.2])
    beta = 0.05
    return ks, a, beta, float(np.max(np.exp(-beta * ks) * a))


def explorer_results(zero_count: bool = True) -> list[dict[str, Any]]:
    rows = []
    for neighbours in ("add-remove", "substitute"):
        for scope in ("local", "global"):
            for stat, base in (("mean", 2.0), ("median", 1.0), ("count", 1.0), ("var", 400.0)):
                for h in (1, 2, 3):
                    zero = zero_count and stat == "count" and neighbours == "substitute"
                    rows.append(
                        {
                            "statistic": stat,
                            "neighbours": neighbours,
                            "scope": scope,
                            "hamming": h,
                            "sensitivity": 0.0 if zero else base * h,
                        }
                    )
    return rows


def assert_png(path: Path) -> None:
    data = path.read_bytes()
    assert data.startswith(PNG_SIGNATURE)
    assert len(data) > 10_000


def only_file(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def test_profile_plot_writes_a_png(tmp_path: Path) -> None:
    ks, a, beta, smooth = profile_inputs()
    out = plot_sensitivity_profile(ks, a, beta, smooth, path=tmp_path / "p.png", title="t")
    assert out == tmp_path / "p.png"
    assert_png(out)
    assert only_file(tmp_path) == ["p.png"]


def test_profile_plot_narrow_range_and_other_formats(tmp_path: Path) -> None:
    ks = np.arange(5)
    out = plot_sensitivity_profile(ks, np.full(5, 2.0), 0.1, 2.0, path=tmp_path / "p.svg")
    assert out.read_text(encoding="utf-8").lstrip().startswith("<?xml")


def test_explorer_plot_writes_a_png(tmp_path: Path) -> None:
    out = plot_explorer(explorer_results(), path=tmp_path / "e.png", title="explorer")
    assert_png(out)
    assert only_file(tmp_path) == ["e.png"]


def test_explorer_plot_with_missing_panels(tmp_path: Path) -> None:
    rows = [r for r in explorer_results(zero_count=False) if r["scope"] == "local"]
    assert_png(plot_explorer(rows, path=tmp_path / "e.png"))


def test_explorer_rejects_malformed_records(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="must have the keys"):
        plot_explorer([{"statistic": "mean"}], path=tmp_path / "e.png")
    bad = dict(explorer_results()[0], scope="sideways")
    with pytest.raises(InputError, match="scope='sideways'"):
        plot_explorer([bad], path=tmp_path / "e.png")
    with pytest.raises(InputError, match="at least one result"):
        plot_explorer([], path=tmp_path / "e.png")


def test_bad_inputs_to_profile(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="equal length"):
        plot_sensitivity_profile([0, 1], [1.0], 0.1, 1.0, path=tmp_path / "p.png")
    with pytest.raises(InputError, match="beta"):
        plot_sensitivity_profile([0, 1], [1.0, 2.0], 0.0, 1.0, path=tmp_path / "p.png")


def test_unknown_format_and_missing_directory(tmp_path: Path) -> None:
    ks, a, beta, smooth = profile_inputs()
    with pytest.raises(InputError, match=r"unknown image format '\.xyz'"):
        plot_sensitivity_profile(ks, a, beta, smooth, path=tmp_path / "p.xyz")
    with pytest.raises(InputError, match="directory does not exist"):
        plot_sensitivity_profile(ks, a, beta, smooth, path=tmp_path / "no" / "p.png")
    assert only_file(tmp_path) == []


def test_failed_write_leaves_the_old_file_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from matplotlib.figure import Figure

    target = tmp_path / "p.png"
    target.write_bytes(b"old")

    def broken_savefig(self: Any, *args: Any, **kwargs: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Figure, "savefig", broken_savefig)
    ks, a, beta, smooth = profile_inputs()
    with pytest.raises(InputError, match="No space left on device"):
        plot_sensitivity_profile(ks, a, beta, smooth, path=target)
    assert target.read_bytes() == b"old"
    assert only_file(tmp_path) == ["p.png"]


def test_missing_matplotlib_says_how_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    ks, a, beta, smooth = profile_inputs()
    with pytest.raises(
        InputError, match=r"plotting needs matplotlib: pip install 'dpsense\[plot\]'"
    ):
        plot_sensitivity_profile(ks, a, beta, smooth, path=tmp_path / "p.png")
    with pytest.raises(InputError, match="plotting needs matplotlib"):
        plot_explorer(explorer_results(), path=tmp_path / "e.png")
