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
process that uses it; without one it lives in memory.
"""

from __future__ import annotations

import contextlib
import os
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any, TypeVar

from dpsense.accounting.composition import Charge, as_decimal, compose, zcdp_to_dp_epsilon
from dpsense.accounting.ledger import Ledger
from dpsense.bounds import private_bounds
from dpsense.errors import BudgetExceededError, InputError
from dpsense.methods import Release
from dpsense.methods.ratio import private_ratio
from dpsense.methods.sample_aggregate import sample_and_aggregate
from dpsense.params import check_delta, check_epsilon
from dpsense.release import release
from dpsense.statistics import Statistic
from dpsense.tables import GroupedRelease

R = TypeVar("R", bound=Release | GroupedRelease)

__all__ = ["Accountant"]


class Accountant:
    """A total privacy budget, charged before every release.

    Parameters
    ----------
    epsilon, delta : float
        The total (epsilon, delta) budget. Required unless ``ledger`` names an existing
        ledger (whose totals are then used) or ``rho`` is given.
    rho : float, optional
        A total zero-concentrated DP budget instead (Bun & Steinke 2016). Pure epsilon
        releases cost epsilon^2/2; releases with a native rho (Gaussian, Laplace-log-normal
        smooth sensitivity) cost that rho; other (epsilon, delta) releases are refused.
        ``spent``/``remaining`` are then reported as (epsilon, delta) at ``delta``.
    ledger : path, optional
        A SQLite ledger file: created with this budget if missing, else opened (its totals
        must match the ones given, if any).
    composition : {"basic", "advanced"}
        Sequential composition rule; "advanced" spends ``delta_slack`` of the delta budget
        and uses the advanced bound whenever it beats the basic sum.
    delta_slack : float
        The delta' of advanced composition.

    Notes
    -----
    Parallel composition: releases inside ``with acct.parallel():`` must be on disjoint
    parts of the data (your promise); the group costs the largest of its members.
    """

    def __init__(
        self,
        *,
        epsilon: float | None = None,
        delta: float = 0.0,
        rho: float | None = None,
        ledger: str | os.PathLike[str] | None = None,
        composition: str = "basic",
        delta_slack: float = 0.0,
        timeout: float = 30.0,
    ) -> None:
        where = "Accountant"
        if composition not in ("basic", "advanced"):
            raise InputError(
                f"The 'composition' parameter of {where} must be 'basic' or 'advanced'. "
                f"Got {composition!r} instead."
            )
        self._lock = threading.Lock()
        self._group: str | None = None
        self._rho_total: float | None = None
        self._rho_spent = 0.0
        self._delta_target = check_delta(delta, where=where)
        if rho is not None:
            if ledger is not None:
                raise InputError("A zCDP (rho) budget is kept in memory; drop 'ledger'.")
            self._rho_total = check_epsilon(rho, "rho", where=where)
            if self._delta_target == 0.0:
                raise InputError(
                    "A rho budget needs delta > 0 to report its (epsilon, delta) equivalent."
                )
            self._ledger: Ledger | None = None
            self._memory: list[Charge] = []
            self._total = (Decimal(0), Decimal(0))
            self._composition = "basic"
            self._slack = Decimal(0)
            return
        self._composition = composition
        self._slack = as_decimal(delta_slack, "delta_slack")
        self._memory = []
        if ledger is not None:
            path = Path(ledger)
            if path.exists():
                self._ledger = Ledger.open(path, timeout=timeout)
                if epsilon is not None and (
                    as_decimal(epsilon, "epsilon") != self._ledger.total_epsilon
                    or as_decimal(delta, "delta") != self._ledger.total_delta
                ):
                    raise InputError(
                        "The budget given differs from the one stored in the ledger; omit "
                        "epsilon/delta to use the ledger's."
                    )
                self._composition = self._ledger.composition
                self._slack = self._ledger.delta_slack
            else:
                if epsilon is None:
                    raise InputError("A new ledger needs a total budget: pass epsilon=...")
                self._ledger = Ledger.create(
                    path,
                    epsilon=check_epsilon(epsilon, where=where),
                    delta=self._delta_target,
                    composition=composition,
                    delta_slack=delta_slack,
                    timeout=timeout,
                )
            self._total = (self._ledger.total_epsilon, self._ledger.total_delta)
        else:
            if epsilon is None:
                raise InputError(
                    f"The 'epsilon' parameter of {where} is required (the total budget)."
                )
            self._ledger = None
            self._total = (
                as_decimal(check_epsilon(epsilon, where=where), "epsilon"),
                as_decimal(self._delta_target, "delta"),
            )
            if composition == "advanced" and not 0 < self._slack <= self._total[1]:
                raise InputError(
                    "Advanced composition needs 0 < delta_slack <= delta (it is spent from "
                    "the total delta)."
                )

    # -- the budget ---------------------------------------------------------------------
    @property
    def spent(self) -> tuple[float, float]:
        """(epsilon, delta) spent so far."""
        if self._rho_total is not None:
            if self._rho_spent == 0:
                return (0.0, 0.0)
            return (zcdp_to_dp_epsilon(self._rho_spent, self._delta_target), self._delta_target)
        eps, dlt = self._spent_decimal()
        return (float(eps), float(dlt))

    @property
    def remaining(self) -> tuple[float, float]:
        """(epsilon, delta) still available."""
        if self._rho_total is not None:
            left = max(self._rho_total - self._rho_spent, 0.0)
            return (zcdp_to_dp_epsilon(left, self._delta_target), self._delta_target)
        eps, dlt = self._spent_decimal()
        return (
            float(max(self._total[0] - eps, Decimal(0))),
            float(max(self._total[1] - dlt, Decimal(0))),
        )

    @property
    def total(self) -> tuple[float, float]:
        """The total (epsilon, delta) budget."""
        if self._rho_total is not None:
            return (zcdp_to_dp_epsilon(self._rho_total, self._delta_target), self._delta_target)
        return (float(self._total[0]), float(self._total[1]))

    @property
    def spent_rho(self) -> float | None:
        """zCDP rho spent (None unless this is a rho budget)."""
        return None if self._rho_total is None else self._rho_spent

    def _spent_decimal(self) -> tuple[Decimal, Decimal]:
        if self._ledger is not None:
            return self._ledger.spent()
        return compose(self._memory, composition=self._composition, delta_slack=self._slack)

    # -- charging -----------------------------------------------------------------------
    def charge(
        self,
        epsilon: float,
        delta: float = 0.0,
        *,
        dataset: str = "",
        statistic: str = "",
        method: str = "",
        rho: float | None = None,
    ) -> int | None:
        """Spend (epsilon, delta) — or rho — now, or raise BudgetExceededError.

        Returns the ledger charge id (None without a ledger).
        """
        where = "Accountant.charge"
        eps = check_epsilon(epsilon, where=where)
        dlt = check_delta(delta, where=where)
        with self._lock:
            if self._rho_total is not None:
                cost = self._rho_cost(eps, dlt, rho)
                if self._rho_spent + cost > self._rho_total * (1 + 1e-12):
                    left = self.remaining
                    raise BudgetExceededError(left, (eps, dlt))
                self._rho_spent += cost
                return None
            if self._ledger is not None:
                return self._ledger.charge(
                    eps, dlt, dataset=dataset, statistic=statistic, method=method, group=self._group
                )
            request = Charge(as_decimal(eps, "epsilon"), as_decimal(dlt, "delta"), self._group)
            after = compose(
                [*self._memory, request], composition=self._composition, delta_slack=self._slack
            )
            if after[0] > self._total[0] or after[1] > self._total[1]:
                raise BudgetExceededError(self.remaining, (eps, dlt))
            self._memory.append(request)
            return None

    @staticmethod
    def _rho_cost(epsilon: float, delta: float, rho: float | None) -> float:
        if rho is not None:
            return rho
        if delta == 0.0:
            return epsilon * epsilon / 2.0
        raise InputError(
            "This release is (epsilon, delta)-DP with delta > 0, which has no zCDP cost; "
            "use a pure-epsilon method or a Gaussian / lln one with a rho budget."
        )

    @contextlib.contextmanager
    def parallel(self) -> Iterator[Accountant]:
        """Releases inside the block are on disjoint data; the block costs their maximum."""
        if self._group is not None:
            raise InputError("Parallel blocks cannot be nested.")
        if self._rho_total is not None:
            raise InputError("Parallel composition is not available for a rho budget.")
        self._group = uuid.uuid4().hex
        try:
            yield self
        finally:
            self._group = None

    # -- charged releases -----------------------------------------------------------------
    def _run(
        self,
        eps: float,
        dlt: float,
        labels: dict[str, str],
        make: Callable[[], R],
        rho_hint: float | None = None,
    ) -> R:
        charge_id = self.charge(eps, dlt, rho=rho_hint, **labels)
        result = make()
        if self._ledger is not None and charge_id is not None:
            if isinstance(result, GroupedRelease):
                releases = [r for _, r in result]
                refused = bool(releases) and all(r.refused for r in releases)
                method = releases[0].method if releases else labels.get("method", "")
            else:
                assert isinstance(result, Release)
                refused, method = result.refused, result.method
            self._ledger.record_outcome(charge_id, refused=refused, method=method)
        return result

    def release(
        self,
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
        rng: object = None,
        dataset: str = "",
        **options: Any,
    ) -> Release | GroupedRelease:
        """:func:`dpsense.release`, charged first. ``dataset`` labels the ledger entry.

        A grouped release is one charge of its total (epsilon, delta): a unit loses at most
        that much over all groups.
        """
        eps = check_epsilon(epsilon, where="Accountant.release")
        dlt = check_delta(delta, where="Accountant.release")
        labels = {"dataset": dataset, "statistic": getattr(statistic, "name", ""), "method": method}
        rho_hint = self._gaussian_rho(method, options, eps, dlt)
        return self._run(
            eps,
            dlt,
            labels,
            lambda: release(
                x,
                statistic,
                epsilon=eps,
                delta=dlt,
                method=method,
                neighbours=neighbours,
                column=column,
                by=by,
                keys=keys,
                privacy_unit=privacy_unit,
                max_rows_per_unit=max_rows_per_unit,
                max_groups_per_unit=max_groups_per_unit,
                nulls=nulls,
                rng=rng,
                **options,
            ),
            rho_hint,
        )

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
        return self._run(
            eps,
            dlt,
            labels,
            lambda: sample_and_aggregate(x, func, epsilon=eps, delta=dlt, **kwargs),
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
        labels = {"dataset": dataset, "statistic": "bounds", "method": "exponential"}
        return self._run(
            eps, dlt, labels, lambda: private_bounds(x, epsilon=eps, delta=dlt, **kwargs)
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
        labels = {
            "dataset": dataset,
            "statistic": "ratio",
            "method": str(kwargs.get("method", "ksw")),
        }
        return self._run(
            eps, dlt, labels, lambda: private_ratio(a, b, epsilon=eps, delta=dlt, **kwargs)
        )

    @staticmethod
    def _gaussian_rho(method: str, options: dict[str, Any], eps: float, dlt: float) -> float | None:
        if method == "smooth" and options.get("noise") == "lln" and dlt > 0:
            from dpsense.methods.smooth import zcdp_rho_for

            return zcdp_rho_for(eps, dlt)
        return None

    def __repr__(self) -> str:
        where = f", ledger={str(self._ledger.path)!r}" if self._ledger is not None else ""
        eps, dlt = self.total
        return f"Accountant(epsilon={eps:g}, delta={dlt:g}{where})"
