"""The budget of :class:`dpsense.Accountant`: totals, charges, spent and remaining.

Everything here is about numbers, never about data: a charge is (epsilon, delta) against an
(epsilon, delta) budget, or (rho, approximate delta) against a zCDP one (docs/accounting.md),
in memory or in a SQLite :class:`~dpsense.accounting.ledger.Ledger`. The charged releases
are in :mod:`dpsense.accountant`.
"""

from __future__ import annotations

import contextlib
import os
import threading
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, Self

from dpsense.accounting.composition import (
    Charge,
    RhoBudget,
    ZcdpCharge,
    as_decimal,
    compose,
    decimal_up,
)
from dpsense.accounting.ledger import Ledger, LedgerEntry
from dpsense.errors import Assign, BudgetExceededError, InputError, Name, Param, Part
from dpsense.methods.zcdp import amount, pure_rho
from dpsense.params import check_delta, check_epsilon

__all__ = ["Budget", "not_zcdp"]


def not_zcdp(*what: Part) -> InputError:
    """The refusal of a release with no zCDP guarantee by a rho budget; ``what`` names
    the release."""
    method = [Assign("method", m, quoted=True) for m in ("global", "exponential", "ksw")]
    return InputError(
        *what,
        " is (epsilon, delta)-DP with delta > 0 and has no zCDP guarantee, so a rho budget "
        "cannot charge it. Use a pure-epsilon or zCDP method instead: ",
        *(p for m in method for p in (m, ", ")),
        "or ",
        Assign("method", "smooth", quoted=True),
        " with ",
        Assign("noise", "lln", quoted=True),
        " or ",
        Assign("noise", "student-t", quoted=True),
        ". Or charge it to an (epsilon, delta) budget instead of a rho budget.",
    )


class Budget:
    """A total privacy budget and its charges (the base of :class:`dpsense.Accountant`,
    whose docstring describes the parameters)."""

    def __init__(
        self,
        *,
        epsilon: float | None = None,
        delta: float = 0.0,
        rho: float | None = None,
        approx_delta: float = 0.0,
        ledger: str | os.PathLike[str] | None = None,
        composition: str = "basic",
        delta_slack: float = 0.0,
        timeout: float = 30.0,
    ) -> None:
        where = "Accountant"
        if composition not in ("basic", "advanced"):
            raise InputError(
                Param("composition", of=where),
                f" must be 'basic' or 'advanced'. Got {composition!r} instead.",
            )
        self._lock = threading.Lock()
        self._group: str | None = None
        self._memory: list[Charge] = []
        self._zcdp: list[ZcdpCharge] = []
        self._log: list[LedgerEntry] = []  # the in-memory release log (a ledger has its own)
        self._composition = composition
        self._slack = as_decimal(delta_slack, "delta_slack")
        dlt = check_delta(delta, where=where)
        approx = check_delta(approx_delta, "approx_delta", where=where)
        wanted = self._rho_budget(epsilon, dlt, rho, approx) if rho is not None else None
        if rho is None and approx != 0.0:
            raise InputError(
                Param("approx_delta", of="Accountant"),
                " caps the approximate deltas of a zCDP budget: pass ",
                Assign("rho"),
                " too, or drop it.",
            )
        self._rho: RhoBudget | None = wanted
        self._ledger: Ledger | None = None
        if ledger is not None:
            self._open_ledger(Path(ledger), epsilon, dlt, wanted, timeout)
            return
        if wanted is not None:
            self._total = (Decimal(0), Decimal(0))  # unused: the rho budget is the total
            return
        if epsilon is None:
            raise InputError(Param("epsilon", of=where), " is required (the total budget).")
        self._total = (
            as_decimal(check_epsilon(epsilon, where=where), "epsilon"),
            as_decimal(dlt, "delta"),
        )
        if composition == "advanced" and not 0 < self._slack <= self._total[1]:
            raise InputError(
                "Advanced composition needs 0 < ",
                Name("delta_slack"),
                " <= delta (it is spent from the total delta).",
            )

    def _rho_budget(
        self, epsilon: float | None, delta: float, rho: float, approx: float
    ) -> RhoBudget:
        if epsilon is not None:
            raise InputError("Pass a total epsilon or a total rho to Accountant, not both.")
        if self._composition != "basic" or self._slack != 0:
            raise InputError(
                "A rho budget adds rhos: drop 'composition' and ",
                Name("delta_slack", quoted=True),
                " (they apply to epsilon budgets).",
            )
        return RhoBudget.checked(check_epsilon(rho, "rho", where="Accountant"), delta, approx)

    def _open_ledger(
        self,
        path: Path,
        epsilon: float | None,
        delta: float,
        wanted: RhoBudget | None,
        timeout: float,
    ) -> None:
        where = "Accountant"
        if path.exists():
            opened = Ledger.open(path, timeout=timeout)
            differs = (
                opened.rho_budget != wanted
                if wanted is not None
                else epsilon is not None
                and (
                    opened.rho_budget is not None
                    or as_decimal(epsilon, "epsilon") != opened.total_epsilon
                    or as_decimal(delta, "delta") != opened.total_delta
                )
            )
            if differs:
                raise InputError(
                    "The budget given differs from the one stored in the ledger; omit "
                    "epsilon/rho/delta to use the ledger's."
                )
            self._composition = opened.composition
            self._slack = opened.delta_slack
        elif wanted is not None:
            opened = Ledger.create(
                path,
                rho=wanted.rho,
                delta=wanted.delta,
                approx_delta=wanted.approx_delta,
                timeout=timeout,
            )
        elif epsilon is None:
            raise InputError(
                "A new ledger needs a total budget: pass ",
                Assign("epsilon"),
                " (or ",
                Assign("rho"),
                ").",
            )
        else:
            opened = Ledger.create(
                path,
                epsilon=check_epsilon(epsilon, where=where),
                delta=delta,
                composition=self._composition,
                delta_slack=self._slack,
                timeout=timeout,
            )
        self._ledger = opened
        self._rho = opened.rho_budget
        self._total = (opened.total_epsilon, opened.total_delta)

    # -- the budget ---------------------------------------------------------------------
    def _zcdp_charges(self) -> list[ZcdpCharge]:
        return self._ledger.zcdp_charges() if self._ledger is not None else list(self._zcdp)

    @property
    def spent(self) -> tuple[float, float]:
        """(epsilon, delta) spent so far (for a rho budget, what the spent rho and
        approximate deltas amount to: (rho + 2 sqrt(rho ln(1/delta')), delta' + sum))."""
        if self._rho is not None:
            return self._rho.spent(self._zcdp_charges())
        eps, dlt = self._spent_decimal()
        return (float(eps), float(dlt))

    @property
    def remaining(self) -> tuple[float, float]:
        """(epsilon, delta) still available (for a rho budget, the epsilon of the rho left
        and the delta left)."""
        if self._rho is not None:
            return self._rho.remaining(self._zcdp_charges())
        eps, dlt = self._spent_decimal()
        return (
            float(max(self._total[0] - eps, Decimal(0))),
            float(max(self._total[1] - dlt, Decimal(0))),
        )

    @property
    def total(self) -> tuple[float, float]:
        """The total (epsilon, delta) budget."""
        if self._rho is not None:
            return self._rho.total
        return (float(self._total[0]), float(self._total[1]))

    @property
    def spent_rho(self) -> float | None:
        """zCDP rho spent (None unless this is a rho budget)."""
        spent = self.spent_zcdp
        return None if spent is None else spent[0]

    @property
    def spent_zcdp(self) -> tuple[float, float] | None:
        """(rho, summed approximate delta) spent, rounded up (None unless a rho budget)."""
        if self._rho is None:
            return None
        rho, approx = RhoBudget.spent_of(self._zcdp_charges())
        return (float(decimal_up(rho)), float(decimal_up(approx)))

    @property
    def composition(self) -> str:
        """The composition rule: "basic" or "advanced" (epsilon budgets), "zcdp" (rho)."""
        return "zcdp" if self._rho is not None else self._composition

    @property
    def total_rho(self) -> float | None:
        """The total zCDP rho (None unless this is a rho budget)."""
        return None if self._rho is None else float(self._rho.rho)

    @property
    def ledger_path(self) -> Path | None:
        """The ledger file (None for a budget kept in memory)."""
        return None if self._ledger is None else self._ledger.path

    def spent_after_each(self) -> list[tuple[float, float]]:
        """(epsilon, delta) spent after each charge of :meth:`entries`, oldest first, under
        the budget's composition rule (the spending over time)."""
        entries = self.entries()
        if self._rho is not None:
            zcdp = [ZcdpCharge(e.rho or Decimal(0), e.delta) for e in entries]
            return [self._rho.spent(zcdp[: k + 1]) for k in range(len(zcdp))]
        charges = [Charge(e.epsilon, e.delta, e.group) for e in entries]
        out = []
        for k in range(len(charges)):
            eps, dlt = compose(
                charges[: k + 1], composition=self._composition, delta_slack=self._slack
            )
            out.append((float(eps), float(dlt)))
        return out

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
        approx_delta: float = 0.0,
    ) -> int | None:
        """Spend (epsilon, delta) now, or raise BudgetExceededError.

        Against a rho budget, the charge is ``rho`` (with ``approx_delta``) when given,
        else epsilon^2/2 for a pure-epsilon charge; a charge with delta > 0 is refused
        (a zCDP mechanism has no delta of its own, and an (epsilon, delta) guarantee has no
        zCDP cost). ``approx_delta`` is for mechanisms that are delta-approximately
        rho-zCDP through a failure event of their output, of probability at most
        ``approx_delta`` whatever came before, the form docs/accounting.md §3 proves
        composition for (private partition selection is one). Returns the ledger charge
        id (None without a ledger).
        """
        charge_id = self._charge(
            epsilon,
            delta,
            {"dataset": dataset, "statistic": statistic, "method": method},
            rho=rho,
            approx_delta=approx_delta,
        )
        return charge_id if self._ledger is not None else None

    def _charge(
        self,
        epsilon: float,
        delta: float,
        labels: dict[str, str],
        *,
        rho: float | None = None,
        approx_delta: float = 0.0,
    ) -> int:
        """:meth:`charge`; returns the charge's id in the ledger or in the memory log."""
        where = "Accountant.charge"
        eps = check_epsilon(epsilon, where=where)
        dlt = check_delta(delta, where=where)
        approx = check_delta(approx_delta, "approx_delta", where=where)
        if self._rho is not None:
            if dlt > 0.0:
                raise not_zcdp("A charge with delta > 0")
            if rho is not None:
                cost = ZcdpCharge.exact(
                    amount(check_epsilon(rho, "rho", where=where)), amount(approx)
                )
            elif dlt == 0.0 and approx == 0.0:
                cost = ZcdpCharge.exact(pure_rho(eps))
            else:
                raise not_zcdp("This charge")
            return self._charge_zcdp(cost, eps, labels)
        if rho is not None or approx != 0.0:
            raise InputError(
                "'rho' and ",
                Name("approx_delta", quoted=True),
                " are charged to a rho budget; this Accountant holds an (epsilon, delta) budget.",
            )
        with self._lock:
            if self._ledger is not None:
                return self._ledger.charge(eps, dlt, group=self._group, **labels)
            request = Charge(as_decimal(eps, "epsilon"), as_decimal(dlt, "delta"), self._group)
            after = compose(
                [*self._memory, request], composition=self._composition, delta_slack=self._slack
            )
            if after[0] > self._total[0] or after[1] > self._total[1]:
                raise BudgetExceededError(self.remaining, (eps, dlt))
            self._memory.append(request)
            return self._logged(request.epsilon, request.delta, None, labels)

    def _logged(
        self, epsilon: Decimal, delta: Decimal, rho: Decimal | None, labels: dict[str, str]
    ) -> int:
        """Append a charge to the in-memory log (under the lock); returns its id."""
        entry = LedgerEntry(
            len(self._log) + 1,
            datetime.now(UTC).isoformat(timespec="microseconds"),
            labels["dataset"],
            labels["statistic"],
            labels["method"],
            epsilon,
            delta,
            self._group,
            "charged",
            rho,
        )
        self._log.append(entry)
        return entry.id

    def _record(
        self, charge_id: int, *, refused: bool, method: str, outputs: Mapping[str, Any]
    ) -> None:
        """Mark a charge answered or refused with its public outputs (ledger or memory)."""
        if self._ledger is not None:
            self._ledger.record_outcome(charge_id, refused=refused, method=method, outputs=outputs)
            return
        with self._lock:
            i = charge_id - 1
            status = "refused" if refused else "answered"
            self._log[i] = replace(
                self._log[i], status=status, method=method or self._log[i].method, outputs=outputs
            )

    def entries(self) -> list[LedgerEntry]:
        """Every charge, oldest first, with the public outputs of each release (the
        ledger's, or the ones kept in memory by this Accountant)."""
        if self._ledger is not None:
            return self._ledger.entries()
        with self._lock:
            return list(self._log)

    def _charge_zcdp(self, cost: ZcdpCharge, epsilon: float, labels: dict[str, str]) -> int:
        """Charge (rho, approximate delta) to the rho budget, or raise."""
        budget = self._rho
        assert budget is not None
        if cost.delta > 0 and budget.approx_delta == 0:
            raise InputError(
                "This release is only approximately zCDP: without public keys, private "
                "partition selection may release a group that holds one person, with "
                f"probability up to {float(cost.delta):.3g}, and this rho budget has no cap "
                "for such probabilities. Create the budget with one (",
                Assign("approx_delta", "1e-5"),
                ", say), or pass ",
                Assign("keys", "[...]"),
                " to the release.",
            )
        with self._lock:
            if self._ledger is not None:
                return self._ledger.charge_zcdp(cost, epsilon=epsilon, **labels)
            if not budget.admits(self._zcdp, cost):
                raise budget.exceeded(self._zcdp, cost)
            self._zcdp.append(cost)
            nominal = as_decimal(epsilon, "epsilon")
            return self._logged(nominal, cost.delta, cost.rho, labels)

    @contextlib.contextmanager
    def parallel(self) -> Iterator[Self]:
        """Releases inside the block are on disjoint data; the block costs their maximum."""
        if self._group is not None:
            raise InputError("Parallel blocks cannot be nested.")
        if self._rho is not None:
            raise InputError("Parallel composition is not available for a rho budget.")
        self._group = uuid.uuid4().hex
        try:
            yield self
        finally:
            self._group = None
