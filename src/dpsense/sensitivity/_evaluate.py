"""Evaluation of f for the brute-force sensitivity explorer.

Package-private: :class:`_Evaluator` calls ``f`` on 2-D arrays of datasets in the fastest
way that reproduces row-by-row calls.
"""

from __future__ import annotations

from typing import Any, Final, Protocol

import numpy as np
from numpy.typing import ArrayLike

from dpsense._arrays import FloatArray
from dpsense.errors import InputError

_DETECTION_TOL: Final = {"rtol": 1e-9, "atol": 1e-12}


class _SupportsEvaluateBatch(Protocol):
    """A dpsense statistic: evaluates itself on every row of a 2-D array."""

    def evaluate_batch(self, X: FloatArray, /) -> ArrayLike: ...


# ------------------------------------------------------------------------ evaluation


class _Evaluator:
    """Evaluates ``f`` on the rows of 2-D arrays of datasets (one size per call).

    Modes: ``"batch"`` (``f.evaluate_batch(X)``), ``"vector"`` (``f(X)``), ``"axis"``
    (``f(X, axis=-1)``, numpy reductions such as ``np.median``) and ``"rows"`` (``f``
    called on each row). With ``vectorized=None`` the first two-dimensional call picks
    the first of ``"vector"`` and ``"axis"`` that reproduces row-by-row calls on a few
    datasets, else ``"rows"``.
    """

    def __init__(self, f: Any, vectorized: bool | None) -> None:
        self.f = f
        self.mode: str | None
        if callable(getattr(f, "evaluate_batch", None)):
            self.mode = "batch"
        elif vectorized is None:
            self.mode = None
        else:
            self.mode = "vector" if vectorized else "rows"

    def _rows(self, X: FloatArray) -> FloatArray:
        f = self.f
        out = np.empty(X.shape[0], dtype=np.float64)
        for i in range(X.shape[0]):
            value = f(X[i])
            if isinstance(value, float | int | np.number):
                out[i] = value
                continue
            arr = np.asarray(value, dtype=np.float64)
            if arr.size != 1:
                raise InputError(
                    "The 'f' parameter of empirical_sensitivity must return one number "
                    f"per dataset, but it returned an array of shape {arr.shape}."
                )
            out[i] = arr.reshape(())
        return out

    def _call(self, mode: str, X: FloatArray) -> FloatArray:
        if mode == "batch":
            return np.asarray(self.f.evaluate_batch(X), dtype=np.float64)
        if mode == "vector":
            return np.asarray(self.f(X), dtype=np.float64)
        if mode == "axis":
            return np.asarray(self.f(X, axis=-1), dtype=np.float64)
        return self._rows(X)

    def _detect(self, X: FloatArray) -> str:
        m = X.shape[1]
        b = 4 if m == 3 else 3  # b != m, so a reduction over the wrong axis is caught
        sample = X[:b] if X.shape[0] >= b else np.resize(X, (b, m))
        expected = self._rows(sample)
        for mode in ("vector", "axis"):
            try:
                got = self._call(mode, sample)
            except Exception:
                continue
            if got.shape == (b,) and np.allclose(got, expected, equal_nan=True, **_DETECTION_TOL):
                return mode
        return "rows"

    def __call__(self, X: FloatArray) -> FloatArray:
        if self.mode is None:
            if X.shape[1] == 0:
                return self._rows(X)
            self.mode = self._detect(X)
        out = self._call(self.mode, X)
        if out.shape != (X.shape[0],):
            what = {"batch": "evaluate_batch", "axis": "f(X, axis=-1)"}.get(
                self.mode, "f (with vectorized=True)"
            )
            raise InputError(
                f"{what} must return one number per row of its 2-D input: for an input of "
                f"shape {X.shape} it returned shape {out.shape}. Pass vectorized=False to "
                "call f on one dataset at a time."
            )
        return out
