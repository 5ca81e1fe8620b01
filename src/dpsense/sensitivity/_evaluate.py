"""Evaluation of f for the brute-force sensitivity explorer.

Package-private: :class:`_Evaluator` calls ``f`` on 2-D arrays of datasets in the fastest
way that reproduces row-by-row calls; :func:`_evaluate_table` calls it on every dataset of
a table.
"""

from __future__ import annotations

import warnings
from typing import Any, Final, Protocol

import numpy as np
from numpy.typing import ArrayLike

from dpsense._arrays import FloatArray
from dpsense._progress import ProgressBar
from dpsense.errors import InputError, Param
from dpsense.sensitivity._enumeration import _CHUNK_CELLS, _datasets, _Table
from dpsense.sensitivity._request import _Request

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
                    Param("f", of="empirical_sensitivity"),
                    " must return one number "
                    f"per dataset, but it returned an array of shape {arr.shape}.",
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


# ----------------------------------------------------------------- the whole table


def _evaluate_sized(evaluate: _Evaluator, X: FloatArray, m: int, where: str) -> FloatArray:
    """``f`` on a batch of datasets of size ``m``; it must be finite everywhere."""
    try:
        out = evaluate(X)
    except InputError:
        raise
    except Exception as exc:
        exc.add_note(f"(raised by f on a dataset of size {m} in {where})")
        raise
    if not np.all(np.isfinite(out)):
        raise InputError(
            f"f returned NaN or infinity on a dataset of size {m} in {where}. If f "
            "is undefined on small datasets (for example the variance of one "
            f"record), exclude them with min_size={m + 1}; otherwise make f return "
            "a finite number on every dataset."
        )
    return out


def _evaluate_table(req: _Request, table: _Table, progress: ProgressBar, where: str) -> FloatArray:
    """``f`` on every dataset of the table, in batches of one size (warnings silenced)."""
    K = int(req.values.shape[0])
    fvals = np.empty(table.rows, dtype=np.float64)
    evaluate = _Evaluator(req.f, req.vectorized)
    with progress.running(), warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        progress.task("Evaluating f", table.rows)
        for m in np.unique(table.sizes).tolist():
            rows_m = np.flatnonzero(table.sizes == m)
            chunk = max(1, _CHUNK_CELLS // max(m, K, 1))
            for start in range(0, rows_m.shape[0], chunk):
                sel = rows_m[start : start + chunk]
                X = _datasets(req.values, table.dense(sel), m)
                fvals[sel] = _evaluate_sized(evaluate, X, m, where)
                progress.advance(int(sel.shape[0]))
    return fvals
