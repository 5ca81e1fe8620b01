"""Drawing outputs for the audits: the sampler type and the checks of what it returns.

Package-private, shared by :func:`~dpsense.audit.histogram_audit` and
:func:`~dpsense.audit.catastrophe_test`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpsense.errors import InputError

Sampler = Callable[[int], ArrayLike]
"""``sampler(n)`` returns ``n`` independent outputs of a mechanism on one fixed dataset."""

Outputs = NDArray[np.float64] | NDArray[np.int64]


# ----------------------------------------------------------------------------- sampling


def _fail(name: str, where: str, expected: str, got: object) -> InputError:
    return InputError(f"The '{name}' parameter of {where} must be {expected}. Got {got!r} instead.")


def _check_sampler(sampler: object, name: str, where: str) -> Sampler:
    if not callable(sampler):
        raise _fail(name, where, "a callable that takes n and returns n outputs", sampler)
    return cast(Sampler, sampler)


def _draw(sampler: Sampler, n: int, name: str, where: str) -> Outputs:
    """Call ``sampler(n)`` and check it returned ``n`` finite numbers in a 1-D array."""
    result = sampler(n)
    try:
        out = np.asarray(result)
    except (TypeError, ValueError) as exc:
        raise InputError(
            f"The '{name}' parameter of {where} must return a 1-D numeric array of n={n} "
            f"outputs; its result could not be read as an array ({type(exc).__name__})."
        ) from exc
    if out.dtype.kind not in "biuf":
        raise InputError(
            f"The '{name}' parameter of {where} must return a 1-D array of numbers. "
            f"Got an array of dtype {out.dtype} instead; return floats or integers."
        )
    if out.shape != (n,):
        raise InputError(
            f"The '{name}' parameter of {where} must return a 1-D array of n={n} outputs. "
            f"Got an array of shape {out.shape} instead; it must honour its argument n."
        )
    if out.dtype.kind == "f":
        finite = np.isfinite(out)
        if not np.all(finite):
            bad = int(np.count_nonzero(~finite))
            raise InputError(
                f"The '{name}' parameter of {where} must return finite outputs. Got {bad} "
                f"NaN or infinite values among {n} instead; an audit needs finite outputs."
            )
        return np.asarray(out, dtype=np.float64)
    return np.asarray(out, dtype=np.int64)


def _common(arrays: list[Outputs]) -> list[Outputs]:
    """All integer (int64) if every array is integer, otherwise all float64."""
    if all(a.dtype.kind == "i" for a in arrays):
        return arrays
    return [np.asarray(a, dtype=np.float64) for a in arrays]
