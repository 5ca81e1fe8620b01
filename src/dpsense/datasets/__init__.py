"""Example data bundled with dpsense.

``census.csv`` is a **synthetic** census-like table of 10,000 rows made by
``scripts/make_census.py`` from a hand-written generative model with a fixed seed
(``numpy.random.default_rng(2026)``). No real person is described. Its columns:

=============== ======= =========================================================
column          type    content
=============== ======= =========================================================
age             int     17..90, right-skewed (mean about 38)
sex             str     ``Male`` / ``Female``
education_years int     years of schooling, 1..16 (peaks at 9 and 13)
marital_status  str     ``Married``, ``Never-married``, ``Divorced``, ...
occupation      str     ten occupation groups
hours_per_week  int     1..99, about half exactly 40
income          float   log-normal, in dollars with cents
capital_gain    int     0 for about 93 % of rows, heavy tail, top-coded at 99999
=============== ======= =========================================================

Examples
--------
>>> from dpsense.datasets import load_census
>>> table = load_census()
>>> table["age"].shape
(10000,)
"""

from __future__ import annotations

import csv
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dpsense.datasets.panel import make_panel

__all__ = ["census_path", "load_census", "make_panel"]

_INTEGER_COLUMNS = frozenset({"age", "education_years", "hours_per_week", "capital_gain"})
_FLOAT_COLUMNS = frozenset({"income"})


def census_path() -> Path:
    """Return the path of the bundled synthetic ``census.csv``.

    Returns
    -------
    pathlib.Path
        The file inside the installed package.
    """
    return Path(str(resources.files(__name__).joinpath("census.csv")))


def load_census() -> dict[str, NDArray[Any]]:
    """Load the bundled synthetic census table, one numpy array per column.

    Returns
    -------
    dict of str to numpy.ndarray
        Integer columns (``age``, ``education_years``, ``hours_per_week``,
        ``capital_gain``) as ``int64``, ``income`` as ``float64``, and the categorical
        columns (``sex``, ``marital_status``, ``occupation``) as unicode string arrays.
        Columns keep the order of the file.
    """
    text = resources.files(__name__).joinpath("census.csv").read_text(encoding="utf-8")
    reader = csv.reader(text.splitlines())
    header = next(reader)
    cells: list[list[str]] = [[] for _ in header]
    for row in reader:
        for j, cell in enumerate(row):
            cells[j].append(cell)
    table: dict[str, NDArray[Any]] = {}
    for name, column in zip(header, cells, strict=True):
        if name in _INTEGER_COLUMNS:
            table[name] = np.array(column, dtype=np.int64)
        elif name in _FLOAT_COLUMNS:
            table[name] = np.array(column, dtype=np.float64)
        else:
            table[name] = np.array(column, dtype=np.str_)
    return table
