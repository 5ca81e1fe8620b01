"""The front door: ``dpsense.release``.

``release(x, statistic, epsilon=..., method="auto")`` validates everything once, clips the
data to the statistic's public bounds, and hands it to a method of
:mod:`dpsense.methods`. It returns a :class:`~dpsense.methods.Release` receipt that never
contains a non-private quantity.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from dpsense._arrays import FloatArray, as_data
from dpsense.errors import InputError
from dpsense.methods import Release
from dpsense.methods.adaptive import release_adaptive
from dpsense.methods.auto import choose_method
from dpsense.methods.bounded_ls import bounded_ls_mean
from dpsense.methods.exponential import release_exponential
from dpsense.methods.global_sensitivity import release_global
from dpsense.methods.ksw import ksw_mean
from dpsense.methods.ptr import release_ptr
from dpsense.methods.smooth import release_smooth
from dpsense.neighbours import Neighbours, validate_neighbours
from dpsense.noise.rng import RandomSource, resolve_rng
from dpsense.params import check_delta, check_epsilon
from dpsense.statistics import BoundedStatistic, Mean, Statistic

__all__ = ["METHODS", "release"]

METHODS: Final = (
    "auto",
    "global",
    "smooth",
    "ptr",
    "exponential",
    "adaptive",
    "ksw",
    "bounded-ls",
)
_OPTIONS: Final[dict[str, tuple[str, ...]]] = {
    "global": ("noise",),
    "smooth": ("noise", "dof", "t", "sigma"),
    "ptr": ("bound", "test_fraction"),
    "exponential": (),
    "adaptive": ("test_fraction",),
    "ksw": (),
    "bounded-ls": ("bound_fraction",),
}


def _for_means(
    method: str, fn: Callable[..., Release], *, takes_delta: bool
) -> Callable[..., Release]:
    """Adapt a mean estimator (ksw, bounded-ls) to the common method signature."""

    def run(
        xc: FloatArray,
        statistic: Statistic,
        *,
        epsilon: float,
        delta: float,
        neighbours: Neighbours,
        rng: RandomSource,
        **options: Any,
    ) -> Release:
        if not isinstance(statistic, Mean):
            raise InputError(f"method={method!r} releases means; got {statistic.name}.")
        if takes_delta:
            options["delta"] = delta
        return fn(
            xc,
            lower=statistic.lower,
            upper=statistic.upper,
            epsilon=epsilon,
            neighbours=neighbours,
            rng=rng,
            **options,
        )

    return run


_DISPATCH: Final[dict[str, Callable[..., Release]]] = {
    "global": release_global,
    "smooth": release_smooth,
    "ptr": release_ptr,
    "exponential": release_exponential,
    "adaptive": release_adaptive,
    "ksw": _for_means("ksw", ksw_mean, takes_delta=False),
    "bounded-ls": _for_means("bounded-ls", bounded_ls_mean, takes_delta=True),
}


def release(
    x: Any,
    statistic: Statistic,
    *,
    epsilon: float,
    delta: float = 0.0,
    method: str = "auto",
    neighbours: str = "add-remove",
    rng: object = None,
    **options: Any,
) -> Release:
    """Release ``statistic`` of ``x`` with differential privacy.

    Parameters
    ----------
    x : array-like
        One column of numbers (list, numpy array, pandas/Polars series). Values are
        clipped to the statistic's public bounds. Under add-remove, empty data is
        released like any other (the empty dataset is a neighbour of every one-record
        dataset, so an error would reveal that there are no records). Under substitute
        the number of records is public and empty data is an ``InputError``.
    statistic : Statistic
        e.g. ``ds.Median(0, 100)``.
    epsilon, delta : float
        The privacy budget of this release (delta in [0, 1)).
    method : str
        "auto" (chosen from public information only), "global", "smooth" (options
        ``noise="laplace"|"cauchy"|"student-t"|"lln"``, ``dof``, ``t``, ``sigma``),
        "ptr" (``bound=b``, ``test_fraction``), "exponential" (quantiles), "ksw" or
        "bounded-ls" (means; ``bound_fraction``).
    neighbours : {"add-remove", "substitute"}
    rng : None, int or RandomSource
        None uses the OS CSPRNG; an int seed is for tests and demos (it warns and the
        receipt says ``seeded=True``).

    Returns
    -------
    Release
        ``value`` (None when propose-test-release refuses), and the receipt.
    """
    where = "release"
    if not isinstance(statistic, Statistic):
        raise InputError(
            "The 'statistic' parameter of release must be a dpsense statistic such as "
            f"ds.Median(lower, upper). Got an object of type {type(statistic).__name__} instead."
        )
    eps = check_epsilon(epsilon, where=where)
    dlt = check_delta(delta, where=where)
    nb = validate_neighbours(neighbours, where=where)
    if method not in METHODS:
        raise InputError(
            f"The 'method' parameter of release must be one of {', '.join(METHODS)}. "
            f"Got {method!r} instead."
        )
    chosen = method
    if method == "auto":
        if options:
            raise InputError("method='auto' takes no options; name a method to pass options.")
        chosen, options = choose_method(statistic, epsilon=eps, delta=dlt, neighbours=nb)
    allowed = _OPTIONS[chosen]
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        hint = ", ".join(allowed) if allowed else "none"
        raise InputError(
            f"Unknown option(s) {', '.join(unknown)} for method={chosen!r}; allowed: {hint}."
        )
    data = as_data(x, where=where, allow_empty=True)
    if nb == "substitute" and data.shape[0] == 0:
        # Under substitute the number of records is public, so saying so reveals nothing;
        # under add-remove empty data is released like any other (it is a neighbour of
        # every one-record dataset, and an error would single it out).
        raise InputError(
            "The data of release has no records. Under neighbours='substitute' the number "
            "of records is public and there is nothing to release; pass "
            "neighbours='add-remove' if the number of records is private."
        )
    xc = statistic.clip(data) if isinstance(statistic, BoundedStatistic) else data
    source = resolve_rng(rng, where=where)
    return _DISPATCH[chosen](
        xc, statistic, epsilon=eps, delta=dlt, neighbours=nb, rng=source, **options
    )
