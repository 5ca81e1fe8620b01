"""A query's plan: its statistics, their columns and methods, and the budget split.

Everything here is validated from public parameters only, before any data is read or any
charge is made: an :class:`~dpsense.errors.InputError` at this stage costs nothing.

The split of a query of several statistics (docs/queries.md §2), all rounded down:

* ``bounds="private"``: ``bounds_share`` x epsilon for the bounds, shared equally by the
  columns that need them (one :func:`dpsense.private_bounds` step per column);
* private partition selection (``by`` without ``keys``): half of the epsilon left and half
  of delta, as for one statistic (``tables.request.SELECTION_SHARE``);
* the rest to the released values in proportion to ``weights``: each released value
  (each level of a multi-level quantile) one share by default, as a user splitting the
  query into one query per value would; a statistic's weight is per value, so a weight
  w on ``ds.Quantiles`` of k levels gives it k w shares (:func:`released_values`).

Several quantiles (``ds.Quantiles``) are released jointly or one level at a time, as
:func:`dpsense.mechanisms.quantiles.joint_is_better` picks from public quantities; the
``joint`` option carries the pick, and the receipt says it. Quantile statistics of one
column may be merged into one joint release (``query.joint_merge``, ``QueryPlan.merges``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

from dpsense._exact_budget import difference_down, product_down, quotient_down
from dpsense.errors import Assign, InputError, Name, Param
from dpsense.mechanisms.quantiles import joint_is_better
from dpsense.methods.sampling_interval import POPULATION, check_interval, sampling_budget
from dpsense.neighbours import Neighbours, validate_neighbours
from dpsense.params import check_delta, check_epsilon, check_int
from dpsense.query._plan_items import statistic_items
from dpsense.query.bounds_step import BoundsPlan, plan_bounds
from dpsense.query.joint_merge import (
    JointMerge,
    joined,
    plan_merges,
    released_values,
    split_receipt,
)
from dpsense.query.methods import check_parameters, checked_method
from dpsense.statistics import BoundedStatistic, Count, Quantile, Quantiles, Statistic
from dpsense.statistics.units import per_unit
from dpsense.tables.request import BudgetSplit, budget_split, public_key_count
from dpsense.tables.row_filter import RowFilter, parse_row_filter
from dpsense.tables.row_map import with_computed
from dpsense.tables.schema import Cast, parse_schema

__all__ = [
    "Entry",
    "QueryPlan",
    "ReleaseArgs",
    "asks_for_table",
    "by_columns",
    "plan_query",
    "release_arguments",
    "released_values",
    "statistic_split",
]


@dataclass(frozen=True)
class Entry:
    """One statistic of a query."""

    name: str
    statistic: Statistic
    column: str | None
    method: str
    """The method asked for ("auto" is resolved per statistic at its share)."""
    chosen: str
    """The method that runs."""
    options: Mapping[str, Any]
    weight: Fraction
    epsilon: float
    delta: float
    present: str | None = None
    """For a count: the column whose rows with a value it counts (SQL ``COUNT(col)``, a
    dict's ``(column, ds.Count())`` pair; ``tables.presence``); None counts every row."""
    interval: str = "privacy"
    """What its interval covers: "privacy" (the data's statistic) or "privacy+sampling"
    (the population's: :mod:`dpsense.methods.sampling_interval`, which gives the method
    the point's share of each group's epsilon and the ingredients the rest)."""


@dataclass(frozen=True)
class QueryPlan:
    """A validated query: one bounding, one selection, one split, one charge."""

    entries: tuple[Entry, ...]
    single: bool
    """A bare statistic (not a dict): the result is its Release or GroupedRelease."""
    epsilon: float
    delta: float
    neighbours: Neighbours
    by: tuple[str, ...]
    keys: Any
    public_keys: int | None
    unit: str | None
    max_rows: int
    max_groups: int
    nulls: str
    casts: Mapping[str, Cast]
    schema: Mapping[str, str] | None
    row_filter: RowFilter | None
    bounds: BoundsPlan | None
    """With ``bounds="private"``: the bounds' share and the epsilon left."""
    bounds_columns: tuple[str | None, ...] = ()
    """The columns whose bounds are found privately, one step each."""
    selection: tuple[float, float] | None = None
    """(epsilon, delta) of the shared private partition selection, for several statistics."""
    parameters: Mapping[str, Any] = field(default_factory=dict)
    table_arguments: bool = False
    """The arguments ask something only a table has (:func:`asks_for_table`)."""
    merges: tuple[JointMerge, ...] = ()
    """Quantile statistics of one column released jointly (``query.joint_merge``)."""

    @property
    def bounds_epsilon(self) -> float:
        """Epsilon of each column's private bounds step."""
        if self.bounds is None or not self.bounds_columns:
            return 0.0
        return quotient_down(self.bounds.epsilon, len(self.bounds_columns))

    @property
    def release_epsilon(self) -> float:
        """Epsilon left after the bounds."""
        return self.epsilon if self.bounds is None else self.bounds.rest

    @property
    def groups_per_unit(self) -> int:
        """g: the most groups one unit is in after contribution bounding (1 without a
        privacy unit, where a unit is a row, or without groups)."""
        return self.max_groups if (self.unit is not None and self.by) else 1


def statistic_split(plan: QueryPlan, entry: Entry) -> BudgetSplit:
    """How one statistic of ``plan`` spends its (epsilon, delta) over its groups: THE split,
    the one the release runs (``query.steps.engine_arguments`` hands it to the engine's
    ``tables.grouped.release_opened``) and the one the zCDP charge prices
    (``query.price.price``), so that the charge is what runs.

    With public keys, or with a statistic's own private partition selection, it is
    :func:`~dpsense.tables.request.budget_split` of the statistic's share: each of the
    ``touched = min(g, public keys)`` groups (``g`` without keys) a unit can change gets
    ``epsilon / touched``.

    After a query's *shared* selection, the statistic releases the s selected groups.
    Their number s is an output of the selection, so it is data: a unit is in at most
    min(g, s) of them. Splitting over min(g, s) would be (epsilon, delta)-DP by adaptive
    composition, but its zCDP cost, ``min(g, s) (eps / min(g, s))^2 / 2 = eps^2 / (2
    min(g, s))``, would depend on s, which the charge, fixed before anything is read,
    cannot (priced at ``eps^2 / (2 g)`` it was up to g times too small). So the split
    never reads s: each selected group gets ``epsilon / g``, a unit changes at most
    min(g, s) <= g of them, and the release costs at most ``g (eps / g)^2 / 2 = eps^2 /
    (2 g)`` rho (and at most epsilon, delta under pure and approximate DP) whatever s is
    (docs/accounting.md §3, docs/queries.md §2)."""
    g = plan.groups_per_unit
    # after the shared selection, its g groups per unit are the statistic's "keys"
    public = g if plan.selection is not None else plan.public_keys
    return budget_split(entry.epsilon, entry.delta, by=plan.by, public_keys=public, groups=g)


def by_columns(by: str | Sequence[str] | None) -> tuple[str, ...]:
    """``by`` as a tuple of column names (an InputError for anything else)."""
    if by is None:
        return ()
    cols = (by,) if isinstance(by, str) else tuple(by)
    if not cols or not all(isinstance(c, str) and c for c in cols):
        raise InputError(Param("by"), " must be a column name or a list of them.")
    if len(set(cols)) != len(cols):
        raise InputError(Param("by"), " names a column more than once.")
    return cols


@dataclass(frozen=True)
class ReleaseArgs:
    """The data-independent arguments of ``dpsense.release`` besides the budget, ``rng``
    and the method's options, shared by its front doors (``release``,
    ``Accountant.release``, ``zcdp_cost``)."""

    method: str = "auto"
    neighbours: str = "add-remove"
    column: str | None = None
    by: str | Sequence[str] | None = None
    keys: Any = None
    privacy_unit: str | None = None
    max_rows_per_unit: int = 1
    max_groups_per_unit: int = 1
    nulls: str = "error"
    schema: Mapping[str, str] | None = None
    bounds: str | None = None
    bounds_share: float | None = None
    weights: Mapping[str, float] | None = None
    where: str | None = None
    computed: Mapping[str, str] | None = None
    """Computed columns, ``{name: SQL expression over one row}``, added before the
    bounding (``tables.row_map``; SQL's row-wise expressions)."""
    interval: str = "privacy"


def asks_for_table(args: ReleaseArgs) -> bool:
    """True when ``args`` ask something only a table has: groups or public keys, a privacy
    unit or its contribution bounds, a named column (a count's included), declared types or
    a ``where`` filter. One column of numbers is then read as a table (of one column,
    "value"), not released as a column (``query.run.reads_column``; the CLI asks the
    same of its options before it reads a file)."""
    return (
        args.by is not None
        or args.keys is not None
        or args.privacy_unit is not None
        or args.max_rows_per_unit != 1
        or args.max_groups_per_unit != 1
        or args.column is not None
        or bool(args.schema)
        or args.where is not None
        or bool(args.computed)
    )


def release_arguments(kwargs: Mapping[str, Any]) -> tuple[ReleaseArgs, dict[str, Any]]:
    """The :class:`ReleaseArgs` among ``kwargs`` (keyword arguments of ``release`` other
    than the budget and ``rng``), and the rest: the method's options."""
    names = set(ReleaseArgs.__dataclass_fields__)
    args = ReleaseArgs(**{k: v for k, v in kwargs.items() if k in names})
    return args, {k: v for k, v in kwargs.items() if k not in names}


def plan_query(
    statistics: Any,
    args: ReleaseArgs,
    *,
    epsilon: float,
    delta: float,
    options: dict[str, Any],
    where: str = "release",
) -> QueryPlan:
    """The checked plan of a release or query (an InputError before any data is read):
    its parameters, each statistic's column (all named, or none), method and options, the
    budget split, and each method's checks of its parameters at its per-group budget
    (:func:`~dpsense.query.methods.check_parameters`), so that nothing a release refuses
    from its parameters alone is refused after a charge."""
    epsilon = check_epsilon(epsilon, where=where)
    delta = check_delta(delta, where=where)
    neighbours = validate_neighbours(args.neighbours, where=where)
    single = isinstance(statistics, Statistic)
    items, w = statistic_items(statistics, args.column, args.weights, where)
    interval = check_interval(args.interval, [(n, stat) for n, stat, _, _ in items], where)
    by_cols, m_rows, m_groups = _units_and_groups(args, where)
    casts = parse_schema(args.schema, where)
    row_filter = _row_filter(args, items, by_cols, where)
    public = public_key_count(args.keys, by_cols)
    groups = m_groups if args.privacy_unit is not None else 1
    bounds_plan, bounds_cols = _bounds_steps(
        items, args, epsilon=epsilon, neighbours=neighbours, where=where
    )
    rest = epsilon if bounds_plan is None else bounds_plan.rest
    selection, eps_stats, dlt_stats = _shared_selection(
        len(items) > 1, rest, delta, by_cols, public, groups
    )
    entries = _entries_at_shares(items, w, (eps_stats, dlt_stats), args, options, neighbours)
    entries, merges = _merged_entries(entries, interval, options, neighbours)
    plan = QueryPlan(
        entries=tuple(entries),
        single=single,
        epsilon=epsilon,
        delta=delta,
        neighbours=neighbours,
        by=by_cols,
        keys=args.keys,
        public_keys=public,
        unit=args.privacy_unit,
        max_rows=m_rows,
        max_groups=m_groups,
        nulls=args.nulls,
        casts=casts,
        schema=args.schema,
        row_filter=row_filter,
        bounds=bounds_plan,
        bounds_columns=tuple(bounds_cols),
        selection=selection,
        parameters=split_receipt(entries, selection, merges),
        table_arguments=asks_for_table(args),
        merges=merges,
    )
    _check_methods(plan)
    return plan


def _row_filter(
    args: ReleaseArgs,
    items: list[tuple[str, Any, Any, str | None]],
    by: tuple[str, ...],
    where: str,
) -> RowFilter | None:
    """The rows a query keeps: its ``where`` filter, with its computed columns (SQL's
    row-wise expressions; ``tables.row_map``), numeric when a statistic other than a count
    reads them."""
    row_filter = None if args.where is None else parse_row_filter(args.where, where=where)
    if args.computed:
        numeric = {c for _, stat, c, _ in items if c is not None and not isinstance(stat, Count)}
        row_filter = with_computed(row_filter, args.computed, _read(items, by), where, numeric)
    return row_filter


def _merged_entries(
    entries: list[Entry], interval: str, options: dict[str, Any], neighbours: Neighbours
) -> tuple[list[Entry], tuple[JointMerge, ...]]:
    """``entries`` with what their intervals cover, and the joint releases of quantile
    statistics of one column (``query.joint_merge``), each entry joined to its own."""
    entries = [replace(e, interval=interval) for e in entries]
    # a population interval is one statistic's own (several quantiles have none): no merge
    merges = () if interval == POPULATION else plan_merges(entries, options, neighbours)
    return [joined(e, merges) for e in entries], merges


def _read(items: list[tuple[str, Any, Any, str | None]], by: tuple[str, ...]) -> set[str]:
    """The columns a query aggregates or groups by (a computed column among them drops
    its rows where it is missing; one only counted keeps them: ``tables.row_map``)."""
    return {*by, *(col for _, _, col, _ in items if col is not None)}


def _shared_selection(
    shared: bool,
    rest: float,
    delta: float,
    by_cols: tuple[str, ...],
    public: int | None,
    groups: int,
) -> tuple[tuple[float, float] | None, float, float]:
    """The partition selection a query's statistics share (None: public keys, no groups
    or one statistic) and the (epsilon, delta) left for the statistics; the split's
    errors (no keys and no delta) come here, before the bounds step runs."""
    if not by_cols:
        return None, rest, delta
    split = budget_split(rest, delta, by=by_cols, public_keys=public, groups=groups)
    if not shared or split.selection is None:
        return None, rest, delta
    selection = split.selection
    return selection, difference_down(rest, selection[0]), difference_down(delta, selection[1])


def _entries_at_shares(
    items: list[tuple[str, Any, Any, str | None]],
    weights: dict[str, Fraction],
    budget: tuple[float, float],
    args: ReleaseArgs,
    options: dict[str, Any],
    neighbours: Neighbours,
) -> list[Entry]:
    """Each statistic at its share of ``budget`` (the whole of it alone): its weight times
    the number of values it releases, over the sum of those (module docstring), with its
    method chosen and checked at that share, and for several quantiles the pick of a joint
    or a per-level release."""
    shares = {name: weights[name] * released_values(stat) for name, stat, _, _ in items}
    total = sum(shares.values())
    entries = []
    for name, stat, col, present in items:
        share = shares[name] / total
        eps_i = budget[0] if len(items) == 1 else product_down(share, budget[0])
        dlt_i = budget[1] if len(items) == 1 else product_down(share, budget[1])
        asked = dict(options)
        if len(items) > 1 and isinstance(stat, Quantile) and isinstance(asked.get("joint"), bool):
            del asked["joint"]  # one level: joint= only says if it may merge (joint_merge)
        chosen, opts = checked_method(stat, args.method, asked, eps_i, dlt_i, neighbours)
        if isinstance(stat, Quantiles) and chosen == "exponential" and "joint" not in opts:
            opts["joint"] = joint_is_better(len(stat.ps), neighbours)
        entries.append(
            Entry(name, stat, col, args.method, chosen, opts, weights[name], eps_i, dlt_i, present)
        )
    return entries


def _units_and_groups(args: ReleaseArgs, where: str) -> tuple[tuple[str, ...], int, int]:
    """The by-columns and the checked contribution bounds of ``args`` (with the checks of
    the privacy unit, the keys and the rule for missing values)."""
    by_cols = by_columns(args.by)
    m_rows = check_int(args.max_rows_per_unit, "max_rows_per_unit", where=where, minimum=1)
    m_groups = check_int(args.max_groups_per_unit, "max_groups_per_unit", where=where, minimum=1)
    if args.privacy_unit is None and (m_rows != 1 or m_groups != 1):
        raise InputError(
            Name("max_rows_per_unit"),
            " and ",
            Name("max_groups_per_unit"),
            " bound what one privacy unit contributes: pass ",
            Assign("privacy_unit"),
            " (the column identifying a person).",
        )
    if args.privacy_unit is not None and not isinstance(args.privacy_unit, str):
        raise InputError(Param("privacy_unit"), " must be a column name (str).")
    if args.keys is not None and not by_cols:
        raise InputError(Param("keys"), " lists groups: pass ", Assign("by"), " as well.")
    if args.nulls not in ("error", "drop"):
        raise InputError(Param("nulls"), f" must be 'error' or 'drop'. Got {args.nulls!r} instead.")
    return by_cols, m_rows, m_groups


def _bounds_steps(
    items: list[tuple[str, Statistic, str | None, str | None]],
    args: ReleaseArgs,
    *,
    epsilon: float,
    neighbours: Neighbours,
    where: str,
) -> tuple[BoundsPlan | None, list[str | None]]:
    """The bounds step's plan and the columns it finds bounds for: one step per column
    whose statistics are built without bounds (a bare statistic's one)."""
    bounds, share = args.bounds, args.bounds_share
    bounds_plan: BoundsPlan | None = None
    bounds_cols: list[str | None] = []
    if bounds is None:
        for _, stat, _, _ in items:
            plan_bounds(stat, bounds, share, epsilon, neighbours, where=where)
        return None, []
    for _, stat, col, _ in items:
        if isinstance(stat, BoundedStatistic) and not stat.has_bounds:
            bounds_plan = plan_bounds(stat, bounds, share, epsilon, neighbours, where=where)
            if col not in bounds_cols:
                bounds_cols.append(col)
    if bounds_plan is None:  # the error plan_bounds gives a statistic with bounds
        plan_bounds(items[0][1], bounds, share, epsilon, neighbours, where=where)
    return bounds_plan, bounds_cols


def _check_methods(plan: QueryPlan) -> None:
    """What the methods refuse from their parameters alone, at the budget they run with."""
    m = plan.max_rows if plan.unit is not None else 1
    for entry in plan.entries:
        eps_g, dlt_g = statistic_split(plan, entry).per_group
        stat = per_unit(entry.statistic, m)
        if entry.interval == POPULATION:  # the method runs at the point's share
            eps_g = sampling_budget(stat, eps_g).point
        check_parameters(stat, entry.chosen, dict(entry.options), eps_g, dlt_g, plan.neighbours)
