"""How one statistic is released once the data are in hand: the methods and their options.

``METHODS`` names the frameworks of :mod:`dpsense.methods`; ``checked_method`` resolves
"auto" from public information only; ``DISPATCH`` runs a method on clipped values;
``release_column`` is the path of one column of numbers (not a table);
``check_parameters`` runs the checks a method makes of its parameters (before reading
data), so that what it refuses from them alone is refused before any charge.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, Final

from dpsense._arrays import as_data
from dpsense.defaults import METHODS
from dpsense.errors import Assign, InputError, Param
from dpsense.methods import Release
from dpsense.methods._release import with_covers
from dpsense.methods.adaptive import checked_adaptive, release_adaptive
from dpsense.methods.auto import choose_method
from dpsense.methods.bounded_ls import bounded_ls_mean, check_bound_fraction
from dpsense.methods.call import MethodCall
from dpsense.methods.exponential import check_exponential, check_joint, release_exponential
from dpsense.methods.global_sensitivity import checked_global_noise, release_global
from dpsense.methods.ksw import ksw_mean
from dpsense.methods.ptr import checked_ptr_options, release_ptr
from dpsense.methods.sampling_interval import POPULATION, release_with_sampling
from dpsense.methods.smooth import check_smooth, release_smooth
from dpsense.neighbours import Neighbours
from dpsense.noise.rng import RandomSource
from dpsense.params import check_delta
from dpsense.statistics import BoundedStatistic, Count, Mean, Quantiles, Statistic
from dpsense.statistics.units import group_privacy_budget, rows_per_unit
from dpsense.tables.schema import array_type, schema_resolution

__all__ = [
    "DISPATCH",
    "METHODS",
    "check_parameters",
    "checked_method",
    "release_column",
    "run_method",
]

_OPTIONS: Final[dict[str, tuple[str, ...]]] = {
    "global": ("noise",),
    "smooth": ("noise", "dof", "t", "sigma"),
    "ptr": ("bound", "test_fraction"),
    "exponential": ("joint",),
    "adaptive": ("test_fraction",),
    "ksw": (),
    "bounded-ls": ("bound_fraction",),
}


def _check_mean(method: str, statistic: Statistic) -> None:
    if not isinstance(statistic, Mean):
        raise InputError(Assign.of("method", method), f" releases means; got {statistic.name}.")


def _for_means(
    method: str, fn: Callable[..., Release], *, takes_delta: bool
) -> Callable[..., Release]:
    """Adapt a mean estimator (ksw, bounded-ls) to the common method signature."""

    def run(call: MethodCall, **options: Any) -> Release:
        xc, statistic, epsilon, delta, neighbours, rng = call.parts()
        _check_mean(method, statistic)
        assert isinstance(statistic, Mean)
        # per unit of m rows: group privacy (docs/tables.md §3); m = 1 without a unit
        m = rows_per_unit(statistic)
        eps, dlt = group_privacy_budget(epsilon, delta, m)
        if takes_delta:
            options["delta"] = dlt
        out = fn(
            xc,
            lower=statistic.lower,
            upper=statistic.upper,
            epsilon=eps,
            neighbours=neighbours,
            rng=rng,
            **options,
        )
        if m == 1:
            return out
        return replace(
            out,
            epsilon=epsilon,
            delta=delta if out.delta > 0 else 0.0,
            parameters={**out.parameters, "group_privacy_rows": m},
        )

    return run


DISPATCH: Final[dict[str, Callable[..., Release]]] = {
    "global": release_global,
    "smooth": release_smooth,
    "ptr": release_ptr,
    "exponential": release_exponential,
    "adaptive": release_adaptive,
    "ksw": _for_means("ksw", ksw_mean, takes_delta=False),
    "bounded-ls": _for_means("bounded-ls", bounded_ls_mean, takes_delta=True),
}


def run_method(
    chosen: str, call: MethodCall, options: dict[str, Any], interval: str = "privacy"
) -> Release:
    """``chosen``'s release of ``call``; with ``interval="privacy+sampling"``, at the
    point's share, with the population interval's ingredients (``methods.sampling_interval``)."""
    if interval == POPULATION:
        return release_with_sampling(DISPATCH[chosen], call, options)
    return DISPATCH[chosen](call, **options)


def release_column(
    x: Any,
    statistic: Statistic,
    eps: float,
    dlt: float,
    chosen: str,
    options: dict[str, Any],
    nb: Neighbours,
    nulls: str,
    source: RandomSource,
    interval: str = "privacy",
) -> Release:
    """One column of numbers (not a table): clipped, then released by ``chosen``
    (:func:`run_method`)."""
    where = "release"
    # a count uses no value: like a table's, it counts every record, NaN included
    data = as_data(
        x, where=where, allow_empty=True, nulls="keep" if isinstance(statistic, Count) else nulls
    )
    if nb == "add-remove":
        # the table path draws a bounding key from the generator first: drawing it here
        # too keeps seeded releases equal whatever the input's format
        source.words(2)
    if nb == "substitute" and data.shape[0] == 0:
        # Under substitute the number of records is public, so saying so reveals nothing;
        # under add-remove empty data is released like any other (it is a neighbour of
        # every one-record dataset, and an error would single it out).
        raise InputError(
            "The data of release has no records. Under ",
            Assign("neighbours", "substitute", quoted=True),
            " the number of records is public and there is nothing to release; pass ",
            Assign("neighbours", "add-remove", quoted=True),
            " if the number of records is private.",
        )
    statistic, resolution = schema_resolution(statistic, array_type(x))
    xc = statistic.clip(data) if isinstance(statistic, BoundedStatistic) else data
    call = MethodCall(
        records=xc, statistic=statistic, epsilon=eps, delta=dlt, neighbours=nb, rng=source
    )
    out = with_covers(run_method(chosen, call, options, interval), statistic)
    if "resolution_source" not in resolution:
        return out
    return replace(
        out, parameters={**out.parameters, "resolution_source": resolution["resolution_source"]}
    )


def checked_method(
    statistic: Statistic,
    method: str,
    options: dict[str, Any],
    eps: float,
    dlt: float,
    nb: Neighbours,
) -> tuple[str, dict[str, Any]]:
    """The method that runs and its options ("auto" resolved from public information
    only), checked: it fits ``statistic`` and takes ``options``."""
    if method not in METHODS:
        raise InputError(
            Param("method", of="release"),
            f" must be one of {', '.join(METHODS)}. Got {method!r} instead.",
        )
    if method == "auto":
        known = {name for names in _OPTIONS.values() for name in names}
        strange = sorted(set(options) - known)
        if strange:
            raise InputError(
                f"release got an unexpected keyword argument {', '.join(map(repr, strange))}: "
                "check its spelling (the methods' options are "
                f"{', '.join(sorted(known))})."
            )
        if options:
            raise InputError(
                Assign("method", "auto", quoted=True),
                " takes no options; name a method to pass options.",
            )
        chosen, options = choose_method(statistic, epsilon=eps, delta=dlt, neighbours=nb)
    else:
        chosen = method
    if isinstance(statistic, Quantiles) and chosen != "exponential":
        raise InputError(
            "Several quantiles are released with ",
            Assign("method", "exponential", quoted=True),
            " (the default), not ",
            Assign.of("method", chosen),
            ": the other methods release one number. For one level with another method use "
            "ds.Quantile(p, lower, upper).",
        )
    allowed = _OPTIONS[chosen]
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        hint = ", ".join(allowed) if allowed else "none"
        raise InputError(
            f"Unknown option(s) {', '.join(unknown)} for ",
            Assign.of("method", chosen),
            f"; allowed: {hint}.",
        )
    return chosen, options


def check_parameters(
    statistic: Statistic,
    chosen: str,
    options: dict[str, Any],
    eps: float,
    dlt: float,
    nb: Neighbours,
) -> None:
    """What ``chosen`` refuses from its parameters alone, at the (per-group) ``(eps, dlt)``
    a release gives it: whether it fits the statistic (``method='ksw'`` releases means), its
    options (``noise``, ``bound``, ``test_fraction``, ...) and what they need
    (``delta > 0``). The methods run the same functions as they start; run here too, from
    the plan, they refuse a request before any charge and before any data is read."""
    if chosen == "global":
        checked_global_noise(options.get("noise"), dlt)
    elif chosen == "smooth":
        check_smooth(statistic, epsilon=eps, delta=dlt, **options)
    elif chosen == "ptr":
        checked_ptr_options(dlt, **options)
    elif chosen == "exponential":
        check_exponential(statistic)
        check_joint(statistic, options.get("joint"))
    elif chosen == "adaptive":
        checked_adaptive(statistic, **options)
    elif chosen in ("ksw", "bounded-ls"):
        _check_mean(chosen, statistic)
        if chosen == "bounded-ls":
            where = "bounded_ls_mean"
            check_delta(dlt, where=where, positive=nb == "add-remove")
            if "bound_fraction" in options:
                check_bound_fraction(options["bound_fraction"], where=where)
