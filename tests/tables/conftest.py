"""A small panel (people x years, several rows per person-year) in every input format."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.tables.panel import PANEL as PANEL
from tests.tables.panel import _quiet_seeds as _quiet_seeds
from tests.tables.panel import frame as frame

pd = pytest.importorskip("pandas")
pl = pytest.importorskip("polars")
pa = pytest.importorskip("pyarrow")
duckdb = pytest.importorskip("duckdb")


@pytest.fixture(scope="session")
def files(tmp_path_factory: pytest.TempPathFactory, frame: Any) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("panel")
    csv, parquet = folder / "panel.csv", folder / "panel.parquet"
    frame.sample(frac=1.0, random_state=3).to_csv(csv, index=False)
    frame.to_parquet(parquet)
    return {"csv": csv, "parquet": parquet}


def formats(frame: Any, files: dict[str, Path]) -> dict[str, Callable[[], Any]]:
    """Every supported input format of the same table (some shuffled)."""
    return {
        "pandas": lambda: frame,
        "pandas-shuffled": lambda: frame.sample(frac=1.0, random_state=11),
        "polars": lambda: pl.from_pandas(frame),
        "polars-lazy": lambda: pl.from_pandas(frame).lazy(),
        "arrow": lambda: pa.Table.from_pandas(frame, preserve_index=False),
        "numpy-columns": lambda: {c: np.asarray(frame[c]) for c in frame.columns},
        "csv-shuffled": lambda: str(files["csv"]),
        "parquet": lambda: files["parquet"],
        "duckdb": lambda: duckdb.from_df(frame),
    }
