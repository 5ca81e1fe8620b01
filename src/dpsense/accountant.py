"""``ds.Accountant``: a privacy budget that every release is charged against first.

>>> import dpsense as ds
>>> acct = ds.Accountant(epsilon=1.0)
>>> r = acct.release([31, 45, 45, 52], ds.Median(0, 100), epsilon=0.4, method="exponential")
>>> acct.spent
(0.4, 0.0)
>>> acct.remaining
(0.6, 0.0)

A release is charged *before* any noise is drawn; a request over budget raises
:class:`~dpsense.errors.BudgetExceededError` and draws nothing. With ``ledger=PATH`` the
budget lives in a SQLite file (:class:`~dpsense.accounting.ledger.Ledger`) shared by every
process that uses it; without one it lives in memory. The budget is a total (epsilon,
delta), or a zCDP budget ``rho`` (with ``delta``, the conversion's delta', and
``approx_delta``, the cap on the deltas of private partition selection).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from dpsense.accounting.budget import Budget
from dpsense.accounting.release_log import outputs_of
from dpsense.methods import Release
from dpsense.pipeline import Request, execute
from dpsense.query import QueryResult
from dpsense.query.one_step import AggregateRequest, BoundsRequest, RatioRequest, released
from dpsense.query.plan import release_arguments
from dpsense.query.price import Price
from dpsense.statistics import Statistic
from dpsense.tables import GroupedRelease

R = TypeVar("R", bound=Release | GroupedRelease | QueryResult)

__all__ = ["Accountant"]


def _releases(result: Release | GroupedRelease | QueryResult) -> list[Release]:
    """Every Release inside ``result`` (for the ledger's outcome)."""
    if isinstance(result, QueryResult):
        return [r for name in result for r in _releases(result[name])]
    if isinstance(result, GroupedRelease):
        return [r for _, r in result]
    return [result]


class Accountant(Budget):
    """A total privacy budget, charged before every release.

    Parameters
    ----------
    epsilon, delta : float
        The total (epsilon, delta) budget. Required unless ``ledger`` names an existing
        ledger (whose totals are then used) or ``rho`` is given.
    rho : float, optional
        A total zero-concentrated DP budget instead (Bun & Steinke 2016); ``delta`` is then
        the delta' at which ``spent``/``remaining`` are converted to (epsilon, delta). Pure
        epsilon releases cost epsilon^2/2; Gaussian and Laplace-log-normal ones their rho;
        other releases with delta > 0 (propose-test-release, smooth sensitivity with
        Laplace noise, bounded-ls) are refused before anything is drawn.
    approx_delta : float
        With ``rho``: the cap on the summed deltas of approximately zCDP releases — grouped
        releases without public keys, whose private partition selection releases a group
        only the larger neighbour has with probability at most its delta. The total is then
        (rho + 2 sqrt(rho ln(1/delta)), delta + approx_delta)-DP (docs/accounting.md §3).
        0 (the default) refuses such releases.
    ledger : path, optional
        A SQLite ledger file: created with this budget if missing, else opened (its totals
        must match the ones given, if any).
    composition : {"basic", "advanced"}
        Sequential composition rule of an epsilon budget; "advanced" spends
        ``delta_slack`` of the delta budget and uses the advanced bound whenever it beats
        the basic sum.
    delta_slack : float
        The delta' of advanced composition.

    Notes
    -----
    Parallel composition: releases inside ``with acct.parallel():`` must be on disjoint
    parts of the data (your promise); the group costs the largest of its members.
    """

    # -- charged releases -----------------------------------------------------------------
    def charged(
        self,
        cost: Price,
        labels: dict[str, str],
        make: Callable[[], R],
        context: Mapping[str, Any] | None = None,
    ) -> R:
        """Charge ``cost`` (:func:`dpsense.query.price.price`: its zCDP price under a rho
        budget, else its (epsilon, delta)), then release, then log the release's public
        outputs (``context``: the statistic, column and privacy unit, see
        :func:`~dpsense.accounting.release_log.outputs_of`) with its outcome. The
        pipeline's ledger step (:class:`dpsense.pipeline.Charger`), through which every
        method charges."""
        if self._rho is not None:
            charge_id = self._charge_zcdp(cost.zcdp(), cost.epsilon, labels)
        else:
            charge_id = self._charge(cost.epsilon, cost.delta, labels)
        result = make()
        releases = _releases(result)
        refused = bool(releases) and all(r.refused for r in releases)
        method = releases[0].method if releases else labels.get("method", "")
        outputs = outputs_of(result, zcdp=self._rho is not None, **(context or {}))
        self._record(charge_id, refused=refused, method=method, outputs=outputs)
        return result

    def release(
        self,
        x: Any,
        statistic: Statistic | Mapping[str, Any],
        *,
        epsilon: float,
        delta: float = 0.0,
        rng: object = None,
        dataset: str = "",
        **kwargs: Any,
    ) -> Release | GroupedRelease | QueryResult:
        """:func:`dpsense.release` (every keyword argument of it), charged first.
        ``dataset`` labels the ledger entry.

        A grouped release is one charge of its total (epsilon, delta): a unit loses at most
        that much over all groups. So is a release with ``bounds="private"`` (its bounds
        step and the release), and a dict of statistics (every statistic, the shared
        partition selection and the bounds steps: docs/queries.md). Under a rho budget the
        charge is what :func:`dpsense.release.zcdp_cost` computes (a release with no zCDP
        guarantee is refused before anything is drawn). Every argument is checked before
        the charge.
        """
        args, options = release_arguments(kwargs)
        where = "Accountant.release"
        return execute(
            Request(x, statistic, args, epsilon, delta, rng, options, where, dataset), self
        )

    def sql(
        self, query: str, *, epsilon: float, dataset: str | None = None, **kwargs: Any
    ) -> QueryResult:
        """:func:`dpsense.sql` (every keyword argument of it), charged first: one charge of
        the query's total (epsilon, delta), every argument and the tables' columns checked
        before it. ``dataset`` labels the ledger entry (default: the FROM table)."""
        from dpsense.sql_release import sql

        return sql(query, epsilon=epsilon, accountant=self, dataset=dataset, **kwargs)

    def sample_and_aggregate(
        self,
        x: Any,
        func: Callable[..., float],
        *,
        epsilon: float,
        delta: float = 0.0,
        dataset: str = "",
        **kwargs: Any,
    ) -> Release:
        """:func:`dpsense.sample_and_aggregate`, charged first."""
        rng = kwargs.pop("rng", None)
        where = "Accountant.sample_and_aggregate"
        return released(
            AggregateRequest(epsilon, delta, rng, kwargs, where, dataset, x, func), self
        )

    def private_bounds(
        self,
        x: Any,
        *,
        epsilon: float,
        delta: float = 0.0,
        dataset: str = "",
        **kwargs: Any,
    ) -> Release:
        """:func:`dpsense.private_bounds`, charged first."""
        rng = kwargs.pop("rng", None)
        where = "Accountant.private_bounds"
        return released(BoundsRequest(epsilon, delta, rng, kwargs, where, dataset, x), self)

    def private_ratio(
        self,
        a: Any,
        b: Any,
        *,
        epsilon: float,
        delta: float = 0.0,
        dataset: str = "",
        **kwargs: Any,
    ) -> Release:
        """:func:`dpsense.private_ratio`, charged first."""
        rng = kwargs.pop("rng", None)
        where = "Accountant.private_ratio"
        return released(RatioRequest(epsilon, delta, rng, kwargs, where, dataset, a, b), self)

    def __repr__(self) -> str:
        where = f", ledger={str(self._ledger.path)!r}" if self._ledger is not None else ""
        if self._rho is not None:
            b = self._rho
            return f"Accountant(rho={b.rho}, delta={b.delta}, approx_delta={b.approx_delta}{where})"
        eps, dlt = self.total
        return f"Accountant(epsilon={eps:g}, delta={dlt:g}{where})"
