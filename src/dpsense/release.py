"""The front door: ``dpsense.release``.

``release(x, statistic, epsilon=..., method="auto")`` checks the budget and the
neighbours, turns the statistic (or a dict of them) into a query plan
(:mod:`dpsense.query`) and runs it. It returns a :class:`~dpsense.methods.Release`
receipt (a :class:`GroupedRelease` with ``by``, a :class:`QueryResult` for a dict) that
never contains a non-private quantity.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from dpsense._docs import doc_parts
from dpsense.accounting.composition import ZcdpCharge
from dpsense.methods import Release
from dpsense.pipeline import Request, execute, prepare_release
from dpsense.query import QueryResult
from dpsense.query.methods import METHODS
from dpsense.query.plan import ReleaseArgs, plan_query, release_arguments
from dpsense.query.price import price
from dpsense.statistics import Statistic
from dpsense.tables.grouped import GroupedRelease

__all__ = [
    "METHODS",
    "prepare_release",
    "release",
    "zcdp_cost",
]


# the Parameters section of release's docstring (dpsense._docs)
_RELEASE_PARAMETERS: Final = """\
x : array-like, table or path
    One column of numbers (list, numpy array, pandas/Polars series), or a table: a
    pandas/Polars DataFrame or LazyFrame, an Arrow table, a DuckDB relation, a mapping
    of column names to sequences, or a CSV/Parquet path. Values are clipped to the
    statistic's public bounds, ``inf`` and ``-inf`` included. Under add-remove, empty
    data is released like any other (the empty dataset is a neighbour of every
    one-record dataset, so an error would reveal that there are no records). Under
    substitute the number of records is public and empty data is an ``InputError``.
statistic : Statistic or dict
    e.g. ``ds.Median(0, 100)``; built without bounds (``ds.Median()``) it needs
    ``bounds="private"``. A dict of statistics by name is one query
    (docs/queries.md): ``{"n": ds.Count(), "median_wage": ("wage", ds.Median(-1, 4))}``
    (a statistic reads ``column``, or the column of its ``(column, statistic)``
    pair). Its statistics share one contribution bounding, one partition selection
    and one budget, split by ``weights``; it returns a :class:`QueryResult`.
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
    Declared types of columns, ``{"age": "int"}``: "int", "float", "decimal(p,s)" or
    "text". The column is cast in the engine and its type is public; a row whose
    value is not null but does not fit its declared type is dropped, as a ``where``
    drops rows (never turned into a null: ``nulls`` applies to the data's own nulls).
    A quantile without a resolution takes one from the value column's declared type:
    1 for integer types (numpy, pandas, Polars, Arrow, Parquet, DuckDB, Spark),
    ``10**-s`` for DECIMAL(p, s); a CSV's or a list's types are inferred from the
    values and never used (docs/tables.md §7). The receipt's ``resolution_source``
    says where the resolution came from. For one column of numbers the key is its name ("value"
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
    (:data:`dpsense.query.bounds_step.BOUNDS_SHARE`). In a query the share is split
    equally between the columns whose statistics have no bounds (one step each).
weights : dict of str to float, optional
    For a dict of statistics: each one's share of the epsilon and delta left after
    the bounds and the partition selection is proportional to its weight (1 unless
    named). ``weights={"median_wage": 2}`` gives the median twice the others' share.
where : str, optional
    A SQL boolean expression over one row, in DuckDB's dialect (``"educ >= 12 AND
    year > 1980"``): only the rows where it is true are used, selected in the engine
    before anything else, contribution bounding included (Spark gets it transpiled to
    Spark SQL by sqlglot). Aggregates, window functions and subqueries are refused: a
    row-level filter is a stable transformation, so the guarantee holds as stated.
interval : {"privacy", "privacy+sampling"}
    What the intervals cover (``Release.interval``, the ``_low``/``_high`` columns):
    "privacy" (the default), the statistic of the records as released;
    "privacy+sampling", the population's value when the data are a simple random
    sample of it (means, medians and quantiles; other statistics are an
    ``InputError``). A quarter of each statistic's epsilon buys a private count and
    spread that widen the interval by the sampling error (docs/intervals.md §8);
    ``Release.covers`` says which.
"""


@doc_parts(parameters=_RELEASE_PARAMETERS)
def release(
    x: Any,
    statistic: Statistic | Mapping[str, Any],
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
    weights: Mapping[str, float] | None = None,
    where: str | None = None,
    interval: str = "privacy",
    **options: Any,
) -> Release | GroupedRelease | QueryResult:
    """Release ``statistic`` of ``x`` with differential privacy.

    Parameters
    ----------
    <<parameters>>

    Returns
    -------
    Release, GroupedRelease or QueryResult
        ``value`` (None when propose-test-release refuses), and the receipt; one per
        group when ``by`` is given; a :class:`QueryResult` for a dict of statistics.
    """
    args = ReleaseArgs(
        method,
        neighbours,
        column,
        by,
        keys,
        privacy_unit,
        max_rows_per_unit,
        max_groups_per_unit,
        nulls,
        schema,
        bounds,
        bounds_share,
        weights,
        where,
        interval=interval,
    )
    return execute(Request(x, statistic, args, epsilon, delta, rng, options))  # no ledger


def zcdp_cost(
    statistic: Statistic | Mapping[str, Any],
    *,
    epsilon: float,
    delta: float = 0.0,
    **kwargs: Any,
) -> ZcdpCharge:
    """What :func:`release` with these arguments costs under a zCDP (rho) budget.

    The (rho, approximate delta) of the release (docs/accounting.md §3), from public
    parameters only, resolving ``method="auto"`` as :func:`release` does. Raises
    :class:`InputError` for a release that is (epsilon, delta)-DP with delta > 0 and has no
    zCDP guarantee (propose-test-release, smooth sensitivity with Laplace noise,
    bounded-ls), saying what to use instead. With ``bounds="private"`` the bounds step
    adds its pure epsilon's rho and the release is priced at the epsilon left. A dict of
    statistics costs the sum of its parts (zCDP composes by adding): each column's bounds
    step, the shared selection, and each statistic at its share. ``kwargs`` are
    :func:`release`'s other keyword arguments (``by``, ``keys``, ``privacy_unit``,
    ``max_groups_per_unit``, ``bounds``, ``weights``, ...) and the method's options,
    priced as :class:`dpsense.Accountant` prices that release.
    """
    args, options = release_arguments(kwargs)
    plan = plan_query(statistic, args, epsilon=epsilon, delta=delta, options=options)
    return price(plan).zcdp()
