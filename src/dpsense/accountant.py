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

from dpsense.accounting.budget import Budget, not_zcdp
from dpsense.accounting.composition import ZcdpCharge
from dpsense.accounting.release_log import outputs_of
from dpsense.bounds import check_bounds_delta, private_bounds
from dpsense.methods import Release
from dpsense.methods.ratio import check_ratio_request, private_ratio
from dpsense.methods.sample_aggregate import sample_and_aggregate
from dpsense.methods.zcdp import aggregate_rho, pure_rho, ratio_rho
from dpsense.params import check_delta, check_epsilon
from dpsense.pipeline import Request, execute
from dpsense.query import QueryResult
from dpsense.query.plan import release_arguments
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
        eps: float,
        dlt: float,
        labels: dict[str, str],
        make: Callable[[], R],
        price: Callable[[], ZcdpCharge],
        context: Mapping[str, Any] | None = None,
    ) -> R:
        """Charge (``price()`` under a rho budget, else (eps, dlt)), then release, then log
        the release's public outputs (``context``: the statistic, column and privacy unit,
        see :func:`~dpsense.accounting.release_log.outputs_of`) with its outcome. The
        pipeline's ledger step (:class:`dpsense.pipeline.Charger`)."""
        if self._rho is not None:
            charge_id = self._charge_zcdp(price(), eps, labels)
        else:
            charge_id = self._charge(eps, dlt, labels)
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
        eps = check_epsilon(epsilon, where="Accountant.sample_and_aggregate")
        dlt = check_delta(delta, where="Accountant.sample_and_aggregate")
        labels = {"dataset": dataset, "statistic": "sample-aggregate", "method": "sample-aggregate"}

        def price() -> ZcdpCharge:
            rho = aggregate_rho(kwargs.get("aggregator", "mean"), kwargs.get("noise"), eps, dlt)
            if rho is None:
                what = "This sample-and-aggregate release (a median with Laplace noise)"
                raise not_zcdp(what)
            return ZcdpCharge.exact(rho)

        return self.charged(
            eps,
            dlt,
            labels,
            lambda: sample_and_aggregate(x, func, epsilon=eps, delta=dlt, **kwargs),
            price,
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
        eps = check_epsilon(epsilon, where="Accountant.private_bounds")
        dlt = check_delta(delta, where="Accountant.private_bounds")
        check_bounds_delta(dlt)  # refused before the charge, not after it
        labels = {"dataset": dataset, "statistic": "bounds", "method": "exponential"}
        return self.charged(
            eps,
            dlt,
            labels,
            lambda: private_bounds(x, epsilon=eps, delta=dlt, **kwargs),
            lambda: ZcdpCharge.exact(pure_rho(eps)),  # pure epsilon (delta must be 0)
            {
                "column": kwargs.get("column"),
                "privacy_unit": kwargs.get("privacy_unit"),
                "max_rows_per_unit": kwargs.get("max_rows_per_unit", 1),
            },
        )

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
        eps = check_epsilon(epsilon, where="Accountant.private_ratio")
        dlt = check_delta(delta, where="Accountant.private_ratio")
        # the whole request is checked before the charge: an invalid one costs nothing
        options = {k: v for k, v in kwargs.items() if k not in ("method", "neighbours", "rng")}
        check_ratio_request(
            eps, dlt, kwargs.get("method", "ksw"), kwargs.get("neighbours", "add-remove"), options
        )
        labels = {
            "dataset": dataset,
            "statistic": "ratio",
            "method": str(kwargs.get("method", "ksw")),
        }

        def price() -> ZcdpCharge:
            rho = ratio_rho(labels["method"], kwargs.get("neighbours", "add-remove"), eps)
            if rho is None:
                raise not_zcdp("A local-bound ratio")
            return ZcdpCharge.exact(rho)

        return self.charged(
            eps, dlt, labels, lambda: private_ratio(a, b, epsilon=eps, delta=dlt, **kwargs), price
        )

    def __repr__(self) -> str:
        where = f", ledger={str(self._ledger.path)!r}" if self._ledger is not None else ""
        if self._rho is not None:
            b = self._rho
            return f"Accountant(rho={b.rho}, delta={b.delta}, approx_delta={b.approx_delta}{where})"
        eps, dlt = self.total
        return f"Accountant(epsilon={eps:g}, delta={dlt:g}{where})"
