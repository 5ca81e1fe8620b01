"""``dpsense bounds --schema``: the column cast as ``release --schema`` casts it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import dpsense as ds
from dpsense.cli import main


def _csv(tmp_path: Path) -> Path:
    rs = np.random.default_rng(3)
    path = tmp_path / "v.csv"
    values = [str(v) for v in rs.integers(1, 80, 600)] + ["n/a"]  # one value no int fits
    path.write_text("v\n" + "\n".join(values) + "\n")
    return path


@pytest.mark.filterwarnings("ignore::dpsense.noise.SeededRandomnessWarning")
def test_schema_casts_the_column_before_the_bounds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    csv = _csv(tmp_path)
    base = ["bounds", str(csv), "--column", "v", "--epsilon", "1", "--seed", "4", "--json"]
    # read as text, the column is not numeric: one clear message, exit 2
    assert main(base) == 2
    assert "numeric" in capsys.readouterr().err.lower()
    # cast to int, "n/a" becomes missing, dropped on request
    assert main([*base, "--schema", "v=int", "--nulls", "drop"]) == 0
    payload = json.loads(capsys.readouterr().out)
    python = ds.private_bounds(
        csv, column="v", epsilon=1.0, schema={"v": "int"}, nulls="drop", rng=4
    )
    assert (payload["lower"], payload["upper"]) == python.value
    assert payload["lower"] <= 1.0
    assert payload["upper"] >= 79.0


def test_a_malformed_schema_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["bounds", str(_csv(tmp_path)), "--epsilon", "1", "--schema", "v"])
    err = capsys.readouterr().err
    assert code == 2
    assert "--schema takes COL=TYPE" in err
    assert "Traceback" not in err
