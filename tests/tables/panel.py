"""The small panel (people x years, several rows per person-year) that the table tests of
both engines release from, and the fixtures tables/conftest.py and spark/conftest.py both
take from here: the panel as a pandas frame, and the seeded-release warnings silenced."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from dpsense.datasets import make_panel

pd = pytest.importorskip("pandas")

PANEL = make_panel(people=300, years=(2019, 2020, 2021, 2022), seed=5)


@pytest.fixture(autouse=True)
def _quiet_seeds() -> None:
    warnings.simplefilter("ignore")


@pytest.fixture(scope="session")
def frame() -> Any:
    return pd.DataFrame(PANEL)
