"""The front door: ``dpsense.release``.

``release(x, statistic, epsilon=..., method="auto")`` validates everything once, clips the
data to the statistic's public bounds, and hands it to a method of
:mod:`dpsense.methods`. It returns a :class:`~dpsense.methods.Release` receipt that never
contains a non-private quantity.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Final

from dpsense._arrays import FloatArray, as_data
from dpsense.accounting.composition import ZcdpCharge
from dpsense.bounds_in_release import (
    find_bounds,
    plan_bounds,
    readable_twice,
    with_bounds_receipt,
    with_bounds_rho,
)
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
from dpsense.params import check_delta, check_epsilon, check_int
from dpsense.statistics import BoundedStatistic, Count, Mean, Quantiles, Statistic
from dpsense.statistics.units import group_privacy_budget, rows_per_unit
from dpsense.tables.grouped import GroupedRelease, budget_split, release_table
from dpsense.tables.schema import array_type, parse_schema, schema_resolution
from dpsense.tables.zcdp import public_key_count, release_zcdp_cost

__all__ = ["METHODS", "release", "zcdp_cost"]

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


_DISPATCH: Final[dict[str, Callable[..., Release]]] = {
    "global": release_global,
    "smooth": release_smooth,
    "ptr": release_ptr,
    "exponential": release_exponential,
    "adaptive": release_adaptive,
    "ksw": _for_means("ksw", ksw_mean, takes_delta=False),
    "bounded-ls": _for_means("bounded-ls", bounded_ls_mean, takes_delta=True),
}


def _by_columns(by: str | Sequence[str] | None) -> tuple[str, ...]:
    if by is None:
        return ()
    cols = (by,) if isinstance(by, str) else tuple(by)
    if not cols or not all(isinstance(c, str) and c for c in cols):
        raise InputError("The 'by' parameter must be a column name or a list of them.")
    if len(set(cols)) != len(cols):
        raise InputError("The 'by' parameter names a column more than once.")
    return cols


def _chosen_method(
    statistic: Statistic,
    method: str,
    options: dict[str, Any],
    eps: float,
    dlt: float,
    nb: Neighbours,
) -> tuple[str, dict[str, Any]]:
    """The method that runs and its options ("auto" resolved from public information)."""
    if method not in METHODS:
        raise InputError(
            f"The 'method' parameter of release must be one of {', '.join(METHODS)}. "
            f"Got {method!r} instead."
        )
    if method != "auto":
        return method, options
    if options:
        raise InputError("method='auto' takes no options; name a method to pass options.")
    return choose_method(statistic, epsilon=eps, delta=dlt, neighbours=nb)


def _is_table(x: Any) -> bool:
    """True for inputs that are tables or paths rather than one column of numbers."""
    if isinstance(x, str | os.PathLike):
        return True
    kind = type(x).__name__
    module = type(x).__module__.split(".")[0]
    if module in ("pandas", "polars") and kind in ("DataFrame", "LazyFrame"):
        return True
    if module == "pyarrow" and kind == "Table":
        return True
    if module in ("duckdb", "pyspark"):
        return True
    return isinstance(x, Mapping)


def release(
    x: Any,
    statistic: Statistic,
    *,
    epsilon: float,
    delta: float = 0.0,
    method: str = "auto",
    neighbours: str = "add-remove",
    column: str | None = None,
    by: str | Sequence[str] | None = None,
    keys: Any = None,
    privacy_unit: str | None = None,
    max_rows_per_unit: int = 1,
    max_groups_per_unit: int = 1,
    nulls: str = "error",
    schema: Mapping[str, str] | None = None,
    rng: object = None,
    bounds: str | None = None,
    bounds_share: float | None = None,
    **options: Any,
) -> Release | GroupedRelease:
    """Release ``statistic`` of ``x`` with differential privacy.

    Parameters
    ----------
    x : array-like, table or path
        One column of numbers (list, numpy array, pandas/Polars series), or a table: a
        pandas/Polars DataFrame or LazyFrame, an Arrow table, a DuckDB relation, a mapping
        of column names to sequences, or a CSV/Parquet path. Values are clipped to the
        statistic's public bounds, ``inf`` and ``-inf`` included. Under add-remove, empty
        data is released like any other (the empty dataset is a neighbour of every
        one-record dataset, so an error would reveal that there are no records). Under
        substitute the number of records is public and empty data is an ``InputError``.
    statistic : Statistic
        e.g. ``ds.Median(0, 100)``; built without bounds (``ds.Median()``) it needs
        ``bounds="private"``.
    epsilon, delta : float
        The privacy budget of this release (delta in [0, 1)), the bounds step of
        ``bounds="private"`` included.
    method : str
        "auto" (chosen from public information only), "global", "smooth" (options
        ``noise="laplace"|"cauchy"|"student-t"|"lln"``, ``dof``, ``t``, ``sigma``),
        "ptr" (``bound=b``, ``test_fraction``), "exponential" (quantiles), "ksw" or
        "bounded-ls" (means; ``bound_fraction``).
    neighbours : {"add-remove", "substitute"}
    column : str, optional
        The value column of a table (not needed for one column, nor for ``ds.Count()``).
    by : str or list of str, optional
        Release one value per group; returns a :class:`GroupedRelease`.
    keys : list or DataFrame, optional
        The public groups (values, tuples for several by-columns, or a DataFrame of the
        by-columns): exactly these are released, absent ones included. Without keys the
        groups are chosen by private partition selection, which needs ``delta > 0``.
    privacy_unit : str, optional
        The column identifying a person (or other unit): neighbours add or remove all
        of one unit's rows.
    max_rows_per_unit, max_groups_per_unit : int
        Contribution bounds per unit (rows per group, groups), enforced by keyed-hash
        sampling; they need a privacy unit.
    nulls : {"error", "drop"}
        What to do with missing values (null, NaN, None) in the columns the release uses:
        the data owner's cleaning step, before the mechanism (the guarantee is about the
        cleaned data).
    schema : mapping of str to str, optional
        Declared types of columns, ``{"age": "int"}``: "int", "float" or "decimal(p,s)".
        The column is cast in the engine (a value that does not fit becomes a null,
        handled by ``nulls``) and its type is public. A quantile without a resolution
        takes one from the value column's declared type: 1 for integer types (numpy,
        pandas, Polars, Arrow, Parquet, DuckDB, Spark), ``10**-s`` for DECIMAL(p, s); a
        CSV's or a list's types are inferred from the values and never used
        (docs/tables.md §7). The receipt's ``resolution_source`` says where the
        resolution came from. For one column of numbers the key is its name ("value"
        for arrays and lists).
    rng : None, int or RandomSource
        None uses the OS CSPRNG; an int seed is for tests and demos (it warns and the
        receipt says ``seeded=True``).
    bounds : {None, "private"}
        ``"private"`` for a statistic built without bounds: ``bounds_share`` of epsilon is
        spent on :func:`dpsense.private_bounds` over the whole column (each privacy unit
        kept to ``max_rows_per_unit`` rows of it, before grouping, so every group gets the
        same bounds) and the rest on the release. The guarantee is the total (epsilon,
        delta); ``parameters["bounds"]`` and ``parameters["release"]`` hold the two parts
        (docs/bounds_in_release.md).
    bounds_share : float, optional
        The share of epsilon spent on the bounds, in (0, 1); 0.3 by default
        (:data:`dpsense.bounds_in_release.BOUNDS_SHARE`).

    Returns
    -------
    Release or GroupedRelease
        ``value`` (None when propose-test-release refuses), and the receipt; one per
        group when ``by`` is given.
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
    plan = plan_bounds(statistic, bounds, bounds_share, eps, nb, where=where)
    chosen, options = _chosen_method(statistic, method, options, eps, dlt, nb)
    if isinstance(statistic, Quantiles) and chosen != "exponential":
        raise InputError(
            f"Several quantiles are released with method='exponential' (the default), "
            f"not method={chosen!r}: the other methods release one number. For one level "
            "with another method use ds.Quantile(p, lower, upper)."
        )
    allowed = _OPTIONS[chosen]
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        hint = ", ".join(allowed) if allowed else "none"
        raise InputError(
            f"Unknown option(s) {', '.join(unknown)} for method={chosen!r}; allowed: {hint}."
        )
    by_cols = _by_columns(by)
    m_rows = check_int(max_rows_per_unit, "max_rows_per_unit", where=where, minimum=1)
    m_groups = check_int(max_groups_per_unit, "max_groups_per_unit", where=where, minimum=1)
    if privacy_unit is None and (m_rows != 1 or m_groups != 1):
        raise InputError(
            "max_rows_per_unit and max_groups_per_unit bound what one privacy unit "
            "contributes: pass privacy_unit=... (the column identifying a person)."
        )
    if privacy_unit is not None and not isinstance(privacy_unit, str):
        raise InputError("The 'privacy_unit' parameter must be a column name (str).")
    if keys is not None and not by_cols:
        raise InputError("The 'keys' parameter lists groups: pass by=... as well.")
    if nulls not in ("error", "drop"):
        raise InputError(f"The 'nulls' parameter must be 'error' or 'drop'. Got {nulls!r}.")
    if column is not None and not isinstance(column, str):
        raise InputError("The 'column' parameter must be a column name (str).")
    casts = parse_schema(schema, where)
    source = resolve_rng(rng, where=where)
    tabular = (
        bool(by_cols)
        or privacy_unit is not None
        or column is not None
        or bool(casts)
        or _is_table(x)
    )
    if tabular and nb == "substitute":
        raise InputError(
            "Tables, groups and privacy units use add-remove neighbours (the number of "
            "rows of a unit is private): pass neighbours='add-remove'."
        )

    def run(data: Any, stat: Statistic, eps_r: float) -> Release | GroupedRelease:
        if not tabular:
            return _release_column(data, stat, eps_r, dlt, chosen, options, nb, nulls, source)

        def one(values: FloatArray, stat_g: Statistic, eps_g: float, dlt_g: float) -> Release:
            return _DISPATCH[chosen](
                values, stat_g, epsilon=eps_g, delta=dlt_g, neighbours=nb, rng=source, **options
            )

        return release_table(
            data,
            stat,
            epsilon=eps_r,
            delta=dlt,
            method=chosen,
            column=column,
            by=by_cols,
            keys=keys,
            privacy_unit=privacy_unit,
            max_rows_per_unit=m_rows,
            max_groups_per_unit=m_groups,
            nulls=nulls,
            rng=source,
            release_one=one,
            schema=casts,
        )

    if plan is None:
        return run(x, statistic, eps)
    assert isinstance(statistic, BoundedStatistic)  # plan_bounds checked it
    if by_cols:  # the split's errors (no keys and no delta) before the bounds step
        budget_split(
            plan.rest,
            dlt,
            by=by_cols,
            public_keys=public_key_count(keys, by_cols),
            groups=m_groups if privacy_unit is not None else 1,
        )
    with readable_twice(x) as data:
        bounded, receipt = find_bounds(
            data,
            statistic,
            plan,
            column=column,
            privacy_unit=privacy_unit,
            max_rows_per_unit=m_rows,
            nulls=nulls,
            rng=source,
            schema=schema,
        )
        result = run(data, bounded, plan.rest)
    return with_bounds_receipt(result, receipt, epsilon=eps, delta=dlt, release_epsilon=plan.rest)


def _release_column(
    x: Any,
    statistic: Statistic,
    eps: float,
    dlt: float,
    chosen: str,
    options: dict[str, Any],
    nb: Neighbours,
    nulls: str,
    source: RandomSource,
) -> Release:
    """One column of numbers (not a table): clipped, then released by ``chosen``."""
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
            "The data of release has no records. Under neighbours='substitute' the number "
            "of records is public and there is nothing to release; pass "
            "neighbours='add-remove' if the number of records is private."
        )
    statistic, resolution = schema_resolution(statistic, array_type(x))
    xc = statistic.clip(data) if isinstance(statistic, BoundedStatistic) else data
    out = _DISPATCH[chosen](
        xc, statistic, epsilon=eps, delta=dlt, neighbours=nb, rng=source, **options
    )
    if "resolution_source" not in resolution:
        return out
    return replace(
        out, parameters={**out.parameters, "resolution_source": resolution["resolution_source"]}
    )


def zcdp_cost(
    statistic: Statistic,
    *,
    epsilon: float,
    delta: float = 0.0,
    method: str = "auto",
    neighbours: str = "add-remove",
    by: str | Sequence[str] | None = None,
    keys: Any = None,
    privacy_unit: str | None = None,
    max_groups_per_unit: int = 1,
    bounds: str | None = None,
    bounds_share: float | None = None,
    **options: Any,
) -> ZcdpCharge:
    """What :func:`release` with these arguments costs under a zCDP (rho) budget.

    The (rho, approximate delta) of the release (docs/accounting.md §3), from public
    parameters only, resolving ``method="auto"`` as :func:`release` does. Raises
    :class:`InputError` for a release that is (epsilon, delta)-DP with delta > 0 and has no
    zCDP guarantee (propose-test-release, smooth sensitivity with Laplace noise,
    bounded-ls), saying what to use instead. With ``bounds="private"`` the bounds step
    adds its pure epsilon's rho and the release is priced at the epsilon left.
    """
    where = "release"
    eps = check_epsilon(epsilon, where=where)
    dlt = check_delta(delta, where=where)
    nb = validate_neighbours(neighbours, where=where)
    plan = plan_bounds(statistic, bounds, bounds_share, eps, nb, where=where)
    chosen, options = _chosen_method(statistic, method, options, eps, dlt, nb)
    by_cols = _by_columns(by)
    g = 1
    if privacy_unit is not None and by_cols:
        g = check_int(max_groups_per_unit, "max_groups_per_unit", where=where, minimum=1)
    part = release_zcdp_cost(
        statistic,
        method=chosen,
        epsilon=eps if plan is None else plan.rest,
        delta=dlt,
        neighbours=nb,
        by=by_cols,
        public_keys=public_key_count(keys, by_cols),
        groups=g,
        options=dict(options),
    )
    return part if plan is None else with_bounds_rho(part, plan)
