"""``ds.plan``: the accuracy a release would have, before anything is spent or read.

The request is planned exactly as :func:`dpsense.release` / :func:`dpsense.sql` plan it
(the same split, methods and per-group budgets: ``query.plan.plan_query``), nothing is
charged and no data is read. For each statistic the noise of its method is simulated at
the declared number of rows per group (docs/intervals.md §7):

* counts, sums, variances and the other global-noise statistics: the noise law itself
  (exact up to the simulation);
* means (KSW, or a noisy sum over a noisy count): the noise on both parts, wherever
  between its bounds the mean lies that makes the error largest;
* quantiles by the exponential mechanism: the error in **ranks** (rows), for records that
  are evenly spread (no ties, no empty stretch: real data with a long empty tail inside
  the bounds do worse), and the width of the 95% interval in ranks;
* smooth sensitivity and the other data-dependent methods: no forecast (None), since
  their noise scale is a function of the data.

``target={"med": 0.05}`` finds the smallest total epsilon at which every named
statistic's 95% error is at most its target (value units; a share of the rows for a
quantile).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from dpsense.defaults import ACCURACY_ALPHA, INTERVAL_SHARE
from dpsense.errors import InputError, Param
from dpsense.mechanisms.quantiles import halving_depth
from dpsense.methods.sampling_interval import (
    POPULATION,
    SamplingBudget,
    binomial_rows,
    sampling_budget,
)
from dpsense.params import check_int
from dpsense.query.joint_merge import JointMerge, merge_of, merged_entry
from dpsense.query.plan import Entry, QueryPlan, plan_query, release_arguments, statistic_split
from dpsense.shown import parameter, significant
from dpsense.statistics import Count, Mean, Quantile, Statistic
from dpsense.statistics.units import counted_rows

__all__ = ["Plan", "StatisticForecast", "plan"]

DRAWS: Final = 4000
"""Simulated releases per statistic (fixed seed: the same draws at every epsilon)."""
F64 = NDArray[np.float64]


@dataclass(frozen=True)
class StatisticForecast:
    """The forecast accuracy of one statistic of a planned release, per group."""

    name: str
    statistic: str
    method: str
    epsilon: float
    """The epsilon of one group of this statistic (after the split)."""
    units: str
    """"value" (the statistic's units) or "ranks" (rows, for a quantile)."""
    median_error: float | None
    error_95: float | None
    """95% of releases are within this of the value (None: depends on the data)."""
    interval_width: float | None
    """The expected width of the release's 95% interval (same units)."""
    note: str = ""


@dataclass(frozen=True)
class Plan:
    """What :func:`plan` returns: the forecast of each statistic, and the epsilon that
    meets a target when one was given."""

    epsilon: float
    delta: float
    rows_per_group: int
    statistics: tuple[StatisticForecast, ...]
    target_epsilon: float | None = None
    parameters: Mapping[str, Any] = field(default_factory=dict)
    weights: Mapping[str, float] = field(default_factory=dict)
    """Weights that give every forecast statistic the same 95% error relative to its scale
    (a count's rows, a bounded statistic's half-range, a quantile's rows): pass them as
    ``weights=`` to spend where the question needs it (docs/intervals.md §7)."""

    def __getitem__(self, name: str) -> StatisticForecast:
        for forecast in self.statistics:
            if forecast.name == name:
                return forecast
        raise KeyError(name)

    def to_dicts(self) -> list[dict[str, Any]]:
        """One dict per statistic."""
        return [dict(f.__dict__) for f in self.statistics]

    def to_pandas(self) -> Any:
        """A pandas DataFrame, one row per statistic (needs pandas)."""
        from dpsense.tables.grouped_result import rows_frame

        columns = list(StatisticForecast.__dataclass_fields__)
        return rows_frame(self.to_dicts(), columns, "pandas", self)

    def __str__(self) -> str:
        lines = [
            f"plan at epsilon={self.epsilon:g}, delta={self.delta:g}, "
            f"{self.rows_per_group} rows per group (nothing spent, no data read)"
        ]
        for f in self.statistics:
            if f.error_95 is None:
                lines.append(f"  {f.name} ({f.method}): {f.note}")
                continue
            unit = " ranks" if f.units == "ranks" else ""
            lines.append(
                f"  {f.name} ({f.method}, epsilon {parameter(f.epsilon, 3)} per group): "
                f"median error {significant(f.median_error or 0.0, 3)}{unit}, "
                f"95% within {significant(f.error_95, 3)}{unit}"
                + (
                    ""
                    if f.interval_width is None
                    else f"; interval ~{significant(f.interval_width, 3)}{unit}"
                )
                + (f"; {f.note}" if f.interval_width is None and f.note else "")
            )
        if self.target_epsilon is not None:
            target = parameter(self.target_epsilon)
            lines.append(f"  the target is met from epsilon = {target}")
        if self.weights:
            shown = ", ".join(f"{k}: {parameter(v, 3)}" for k, v in self.weights.items())
            lines.append(f"  weights for equal relative errors: {{{shown}}}")
        return "\n".join(lines)


def _laplace(rng: np.random.Generator, scale: float) -> F64:
    return rng.laplace(0.0, scale, DRAWS)


def _mean_errors(entry: Entry, stat: Mean, eps: float, m: int, n: int, rng: Any) -> F64:
    """The errors of the mean's noise where they are largest over where the mean lies
    (its position f in [0, 1] of the bounds, on a public grid of positions)."""
    width = stat.upper - stat.lower
    e1, e2 = _laplace(rng, m / eps), _laplace(rng, m / eps)
    e_sum = _laplace(rng, m * (width / 2) / (eps / 2))
    e_count = np.round(_laplace(rng, m / (eps / 2)))
    worst: F64 | None = None
    for f in (0.0, 0.05, 0.1, 0.2, 0.35, 0.5):
        if entry.chosen == "ksw":
            # s = f n, z = (1 - f) n in [0, 1] units, each with Laplace(m / eps)
            total = n + e1 + e2
            est = np.where(total > 0, np.clip((f * n + e1) / np.maximum(total, 1e-300), 0, 1), 0.5)
            errors = width * np.abs(est - f)
        else:  # a noisy centred sum over a noisy count
            centred = (f - 0.5) * width
            est = (n * centred + e_sum) / np.maximum(n + e_count, 1.0)
            errors = np.abs(np.clip(est, -width / 2, width / 2) - centred)
        if worst is None or np.quantile(errors, 0.95) > np.quantile(worst, 0.95):
            worst = np.asarray(errors, dtype=np.float64)
    assert worst is not None
    return worst


def _quantile_ranks(stat: Quantile, eps_point: float, n: int, spread: float, rng: Any) -> F64:
    """Rank errors of the exponential mechanism on n records evenly spread over the lower
    ``spread`` share of the bounds (the rest empty): P(gap k) ∝ length x exp(-eta u(k)),
    u the tie-aware score in rows, eta = eps / (2 max(p, 1 - p)); the empty stretch is
    one more candidate region above every record."""
    p = stat.p
    eta = eps_point / (2.0 * max(p, 1.0 - p))
    k = np.arange(n + 2)  # the gap with k records below it; k = n + 1: the empty stretch
    k[-1] = n
    score = np.maximum(0.0, np.maximum(k - p * n, (n - k) - (1 - p) * n))
    length = np.ones(n + 2)
    length[-1] = (1.0 - spread) / spread * (n + 1)  # in units of one gap's length
    logw = -eta * score + np.log(np.maximum(length, 1e-300))
    prob = np.exp(logw - logw.max())
    prob[-1] = prob[-1] if spread < 1.0 else 0.0
    prob /= prob.sum()
    ranks = k[rng.choice(n + 2, size=DRAWS, p=prob)]
    target = max(1, math.ceil(p * n))
    return np.asarray(np.abs(ranks - target), dtype=np.float64)


def _forecast(plan_: QueryPlan, entry: Entry, n: int, spread: float = 1.0) -> StatisticForecast:
    eps_g, _ = statistic_split(plan_, entry).per_group
    if entry.interval != POPULATION:
        return _forecast_at(plan_, entry, n, spread, eps_g)
    # interval="privacy+sampling": the point at its share; the population interval's width
    budget = sampling_budget(entry.statistic, eps_g)
    point = _forecast_at(plan_, entry, n, spread, budget.point)
    stat = entry.statistic
    if isinstance(stat, Quantile) and entry.chosen == "exponential":
        width = _population_ranks(plan_, stat, budget, n)
        return replace(point, epsilon=eps_g, interval_width=width)
    return replace(
        point,
        epsilon=eps_g,
        interval_width=None,
        note="the population interval adds the sampling error, set by the population's "
        "spread, which no schema shows",
    )


def _population_ranks(plan_: QueryPlan, stat: Quantile, budget: SamplingBudget, n: int) -> float:
    """About the width in ranks of a quantile's population interval: its endpoints
    target p n -/+ (s + b), b the binomial ranks at n (docs/intervals.md §8)."""
    from dpsense.methods.quantile_interval import interval_shift

    m = counted_rows(stat, plan_.max_rows) if plan_.unit is not None else 1
    s = interval_shift(stat.p, budget.spread / m, plan_.neighbours, 0.3 * ACCURACY_ALPHA)
    b = binomial_rows(float(n), stat.p, 0.6 * ACCURACY_ALPHA)
    return float(min(2.0 * (s * m + b), n))


def _forecast_at(
    plan_: QueryPlan, entry: Entry, n: int, spread: float, eps_g: float
) -> StatisticForecast:
    """The forecast of ``entry``'s release at ``eps_g`` per group."""
    stat = entry.statistic
    m = counted_rows(stat, plan_.max_rows) if plan_.unit is not None else 1
    rng = np.random.default_rng(0)
    common: dict[str, Any] = {
        "name": entry.name,
        "statistic": stat.name,
        "method": entry.chosen,
        "epsilon": eps_g,
    }
    if isinstance(stat, Count) and entry.chosen == "global":
        errors = np.abs(np.round(_laplace(rng, m / eps_g)))
        return _from_errors(common, "value", errors, interval=True)
    if isinstance(stat, Mean) and entry.chosen in ("ksw", "global"):
        return _from_errors(common, "value", _mean_errors(entry, stat, eps_g, m, n, rng), True)
    if entry.chosen == "global" and not isinstance(stat, Quantile):
        public_n = n if plan_.neighbours == "substitute" else None
        sens = stat.global_sensitivity(plan_.neighbours, n=public_n)
        errors = np.abs(_laplace(rng, m * sens / eps_g))
        return _from_errors(common, "value", errors, interval=True)
    if isinstance(stat, Quantile) and entry.chosen == "exponential":
        row_eps = eps_g / m
        point = row_eps * (1.0 - INTERVAL_SHARE)
        merge = merge_of(plan_.merges, entry.name)
        if merge is None:
            errors = _quantile_ranks(stat, point, n, spread, rng) * m
        else:
            errors = _joint_ranks(plan_, merge, stat.p, m, n, spread, rng) * m
        width = _quantile_interval_ranks(stat, row_eps * INTERVAL_SHARE, n, plan_) * m
        joint = (
            ""
            if merge is None
            else "; released jointly with "
            + ", ".join(name for name in merge.names if name != entry.name)
        )
        return StatisticForecast(
            **common,
            units="ranks",
            median_error=float(np.median(errors)),
            error_95=float(np.quantile(errors, 0.95)),
            interval_width=float(min(width, n)),
            note=f"in ranks (rows), records spread over {spread:.0%} of the bounds{joint}",
        )
    return StatisticForecast(
        **common,
        units="value",
        median_error=None,
        error_95=None,
        interval_width=None,
        note=f"no forecast: the noise of method {entry.chosen!r} depends on the data",
    )


def _joint_ranks(
    plan_: QueryPlan, merge: JointMerge, p: float, m: int, n: int, spread: float, rng: Any
) -> F64:
    """Rank errors of level ``p`` released jointly (``query.joint_merge``): recursive
    halving releases it in one call at ``per_call`` on the records between the two levels
    released before it on either side (about n (hi - lo) of them), at its level rescaled
    to them; the part above the highest of them holds the empty stretch of the bounds.
    The errors of the levels released before it are not carried over."""
    eps_g, _ = statistic_split(plan_, merged_entry(merge, plan_.entries)).per_group
    depth = halving_depth(len(merge.ps))
    calls = depth if plan_.neighbours == "add-remove" else 2 * depth
    per_call = eps_g / m * (1.0 - INTERVAL_SHARE) / calls
    levels, lo, hi = list(merge.ps), 0.0, 1.0
    while (mid := levels[(len(levels) - 1) // 2]) != p:
        i = (len(levels) - 1) // 2
        lo, hi, levels = (lo, mid, levels[:i]) if p < mid else (mid, hi, levels[i + 1 :])
    start = lo * spread  # the records spread evenly over [0, spread] of the bounds
    part = 1.0 if hi < 1.0 else (spread - start) / (1.0 - start)
    level = Quantile((p - lo) / (hi - lo), 0.0, 1.0)
    return _quantile_ranks(level, per_call, max(1, round(n * (hi - lo))), part, rng)


def _quantile_interval_ranks(stat: Quantile, eps_pair: float, n: int, plan_: QueryPlan) -> float:
    """About the width in ranks of the interval: the endpoints target p n -/+ s."""
    from dpsense.methods.quantile_interval import interval_shift

    s = interval_shift(stat.p, eps_pair, plan_.neighbours, 0.05)
    low = max(0.0, stat.p * n - s)
    high = min(float(n), stat.p * n + s)
    return high - low


def _from_errors(
    common: dict[str, Any], units: str, errors: F64, interval: bool
) -> StatisticForecast:
    e95 = float(np.quantile(errors, 0.95))
    return StatisticForecast(
        **common,
        units=units,
        median_error=float(np.median(errors)),
        error_95=e95,
        interval_width=2.0 * e95 if interval else None,
    )


def _planned(statistics: Any, kwargs: dict[str, Any], epsilon: float, delta: float) -> QueryPlan:
    args, options = release_arguments(kwargs)
    return plan_query(statistics, args, epsilon=epsilon, delta=delta, options=options, where="plan")


def plan(
    data_or_schema: Any,
    request: Any,
    *,
    epsilon: float,
    delta: float = 0.0,
    rows_per_group: int,
    target: Mapping[str, float] | None = None,
    spread: float = 1.0,
    **kwargs: Any,
) -> Plan:
    """Forecast the accuracy of a release before spending anything.

    Parameters
    ----------
    data_or_schema : any
        The data the release would read, or None: it is not read (the forecast depends on
        public parameters only).
    request : Statistic, dict of statistics, or str
        What :func:`dpsense.release` takes, or a SQL query as :func:`dpsense.sql` takes
        (with its ``bounds=`` and ``keys=`` among ``kwargs``).
    epsilon, delta : float
        The budget the release would have.
    rows_per_group : int
        The declared number of rows in each group (or in the data, without groups).
    target : dict of str to float, optional
        A 95% error per statistic name (value units; for a quantile a share of the rows,
        e.g. 0.05): the plan also gives the smallest epsilon that meets them all.
    spread : float, default 1
        For quantiles: the share of the bounds' width the records occupy, from the lower
        bound (an assumption, not read from the data). An empty stretch inside the
        bounds draws the exponential mechanism away from a quantile near it: wages in
        bounds (0, 50) that stop at 25 have ``spread=0.5``.
    **kwargs
        The other arguments of the release (method, by, keys, privacy_unit,
        max_rows_per_unit, bounds, weights, ...).

    Returns
    -------
    Plan
        One :class:`StatisticForecast` per statistic, and ``target_epsilon``.
    """
    del data_or_schema  # never read: a plan depends on public parameters only
    n = check_int(rows_per_group, "rows_per_group", where="plan", minimum=1)
    _check_spread(spread)
    statistics, kwargs = _request(request, dict(kwargs))
    planned = _planned(statistics, kwargs, epsilon, delta)
    forecasts = tuple(_forecast(planned, e, n, spread) for e in planned.entries)
    found = (
        None if target is None else _target_epsilon(statistics, kwargs, delta, n, spread, target)
    )
    return Plan(
        epsilon=planned.epsilon,
        delta=planned.delta,
        rows_per_group=n,
        statistics=forecasts,
        target_epsilon=found,
        parameters=dict(planned.parameters),
        weights=_needs(planned, forecasts, n),
    )


def _check_spread(spread: object) -> None:
    if not (isinstance(spread, int | float) and 0.0 < spread <= 1.0):
        raise InputError(Param("spread", of="plan"), f" must be in (0, 1]. Got {spread!r} instead.")


def _needs(
    planned: QueryPlan, forecasts: tuple[StatisticForecast, ...], n: int
) -> dict[str, float]:
    """Weights proportional to the epsilon each statistic needs for a common relative 95%
    error: its error scales as 1/epsilon, so its need is error x epsilon / scale. A
    statistic without a forecast keeps weight 1; one statistic alone needs no weights."""
    if len(forecasts) < 2:
        return {}
    needs: dict[str, float | None] = {}
    for entry, f in zip(planned.entries, forecasts, strict=True):
        stat = entry.statistic
        if f.error_95 is None:
            needs[f.name] = None
            continue
        if f.units == "ranks" or isinstance(stat, Count):
            scale = float(n)
        else:
            lower, upper = getattr(stat, "lower", None), getattr(stat, "upper", None)
            scale = 0.5 * (upper - lower) if lower is not None and upper is not None else 1.0
            scale *= n if stat.name == "sum" else 1.0
        needs[f.name] = f.error_95 * f.epsilon / max(scale, 1e-300)
    known = [v for v in needs.values() if v is not None and v > 0]
    if not known:
        return {}
    unit = float(np.exp(np.mean(np.log(known))))  # the geometric mean weighs 1
    return {k: (1.0 if v is None or v <= 0 else round(v / unit, 3)) for k, v in needs.items()}


def _request(request: Any, kwargs: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The statistics and release arguments of a request (a SQL query translated)."""
    if not isinstance(request, str):
        if isinstance(request, Statistic | Mapping):
            return request, kwargs
        raise InputError(
            "The request of plan must be a statistic, a dict of statistics or a SQL query."
        )
    from dpsense.query.sql import parse_sql
    from dpsense.sql_release import sql_arguments

    spec = parse_sql(request)
    public = kwargs.pop("public_tables", None)
    unit = kwargs.get("privacy_unit")
    from dpsense.query.join_form import public_groups, reads_several_tables, unit_names

    if reads_several_tables(spec, unit, public):
        # the declared units alone (no table is read): the joined table's unit column
        kwargs["privacy_unit"], names = unit_names(spec, unit, public)
        if kwargs.get("keys") is None and public_groups(spec, public):
            # groups from public tables: public, no selection (their values do not change
            # a group's forecast, so none is read)
            kwargs["keys"] = {column: ["(public)"] for column in spec.released_by}
    else:
        names = frozenset({unit}) if isinstance(unit, str) else frozenset()
    args = sql_arguments(
        spec,
        kwargs.pop("bounds", None),
        kwargs.pop("keys", None),
        names,
    )
    statistics = args.pop("statistics")
    return statistics, {**kwargs, **{k: v for k, v in args.items() if v is not None}}


def _target_epsilon(
    statistics: Any,
    kwargs: dict[str, Any],
    delta: float,
    n: int,
    spread: float,
    target: Mapping[str, float],
) -> float:
    """The smallest total epsilon (to 0.1%) whose forecast 95% errors meet ``target``."""
    if not isinstance(target, Mapping) or not target:
        raise InputError(
            Param("target", of="plan"), " must be a dict of statistic names to errors."
        )

    def excess(eps: float) -> float:
        planned = _planned(statistics, kwargs, eps, delta)
        names = {e.name: e for e in planned.entries}
        worst = -math.inf
        for name, goal in target.items():
            if name not in names:
                raise InputError(
                    f"The target names {name!r}, which is not a statistic of the request."
                )
            if not (isinstance(goal, int | float) and goal > 0):
                raise InputError(f"The target of {name!r} must be a number > 0.")
            f = _forecast(planned, names[name], n, spread)
            if f.error_95 is None:
                raise InputError(f"{name!r} has no forecast ({f.note}): it cannot be targeted.")
            error = f.error_95 / n if f.units == "ranks" else f.error_95
            worst = max(worst, error / goal)
        return worst

    low, high = 1e-4, 1e4
    if excess(high) > 1:
        raise InputError("The target cannot be met at any epsilon up to 1e4: relax it.")
    for _ in range(60):  # bisection on a log scale
        mid = math.sqrt(low * high)
        if excess(mid) > 1:
            low = mid
        else:
            high = mid
        if high / low < 1.001:
            break
    return high
