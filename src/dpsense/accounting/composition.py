r"""Composition rules for privacy budgets.

Charges are exact decimals (``Decimal(repr(x))`` for floats), so twenty charges of 0.05
add up to exactly 1 — a budget check must never be off by a rounding error, in either
direction.

* **Basic sequential** composition: epsilons and deltas add (Dwork & Roth 2014, Thm 3.16).
* **Parallel** composition over disjoint partitions (McSherry 2009): a group of releases on
  disjoint parts of the data costs the maximum of its members.
* **Advanced** composition (Dwork, Rothblum & Vadhan 2010, Thm III.3; Dwork & Roth 2014,
  Thm 3.20, in its heterogeneous form — the same Azuma argument with step bounds
  :math:`\varepsilon_i`): for any :math:`\delta' > 0`,

  .. math::
      \varepsilon_{\mathrm{tot}} = \sqrt{2 \ln(1/\delta') \textstyle\sum_i \varepsilon_i^2}
      + \textstyle\sum_i \varepsilon_i (e^{\varepsilon_i} - 1),
      \qquad \delta_{\mathrm{tot}} = \textstyle\sum_i \delta_i + \delta'.

  The accountant uses the smaller of the basic and the advanced epsilon.
* **zCDP**: rhos add (Bun & Steinke 2016, Lemma 2.3); pure epsilon-DP is
  :math:`\varepsilon^2/2`-zCDP (Prop. 1.4); rho-zCDP implies
  :math:`(\rho + 2\sqrt{\rho\ln(1/\delta)}, \delta)`-DP (Prop. 1.3).
* **Approximate zCDP** (:class:`RhoBudget`): a charge is a pair
  :math:`(\rho_i, \delta_i)` (:math:`\delta_i > 0` only for private partition selection);
  rhos add and deltas add, and the whole is reported as
  :math:`(\rho + 2\sqrt{\rho\ln(1/\delta')}, \delta' + \sum_i \delta_i)`-DP
  (Bun & Steinke 2016, Def. 8.1 and Prop. 1.3; docs/accounting.md §3 proves it for the
  releases dpsense makes, adaptively chosen ones included).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal, getcontext, localcontext
from fractions import Fraction

from dpsense.errors import BudgetExceededError, InputError, Name

__all__ = [
    "Charge",
    "RhoBudget",
    "ZcdpCharge",
    "advanced_epsilon",
    "as_decimal",
    "compose",
    "decimal_up",
    "zcdp_to_dp_epsilon",
]

getcontext().prec = 50


def as_decimal(value: object, name: str) -> Decimal:
    """A non-negative finite number as an exact decimal (floats by their shortest repr)."""
    if isinstance(value, Decimal):
        out = value
    elif isinstance(value, bool) or not isinstance(value, int | float | str):
        raise InputError(f"The '{name}' of a charge must be a number. Got {value!r} instead.")
    else:
        try:
            out = Decimal(repr(value) if isinstance(value, float) else str(value))
        except ArithmeticError:
            raise InputError(f"The '{name}' of a charge must be a number.") from None
    if not out.is_finite() or out < 0:
        raise InputError(f"The '{name}' of a charge must be a finite number >= 0.")
    return out


@dataclass(frozen=True)
class Charge:
    """One spend: (epsilon, delta), optionally inside a parallel group."""

    epsilon: Decimal
    delta: Decimal
    group: str | None = None


def _grouped(charges: Iterable[Charge]) -> list[tuple[Decimal, Decimal]]:
    """Sequential items: ungrouped charges, and each parallel group as its maximum."""
    items: list[tuple[Decimal, Decimal]] = []
    groups: dict[str, tuple[Decimal, Decimal]] = {}
    for c in charges:
        if c.group is None:
            items.append((c.epsilon, c.delta))
        else:
            e, d = groups.get(c.group, (Decimal(0), Decimal(0)))
            groups[c.group] = (max(e, c.epsilon), max(d, c.delta))
    return items + list(groups.values())


def advanced_epsilon(epsilons: Sequence[Decimal], delta_slack: Decimal) -> Decimal:
    """The advanced-composition epsilon (heterogeneous DRV bound), rounded up."""
    if delta_slack <= 0:
        return Decimal("Infinity")
    eps = [float(e) for e in epsilons]
    value = math.sqrt(2.0 * math.log(1.0 / float(delta_slack)) * sum(e * e for e in eps))
    value += sum(e * math.expm1(e) for e in eps)
    # round the float up by a relative 1e-12 so the bound stays an upper bound
    return Decimal(repr(value * (1.0 + 1e-12)))


def compose(
    charges: Iterable[Charge], *, composition: str = "basic", delta_slack: Decimal = Decimal(0)
) -> tuple[Decimal, Decimal]:
    """Total (epsilon, delta) of a list of charges under the chosen composition."""
    items = _grouped(charges)
    basic_eps = sum((e for e, _ in items), Decimal(0))
    basic_delta = sum((d for _, d in items), Decimal(0))
    if composition == "basic" or not items:
        return basic_eps, basic_delta
    adv = advanced_epsilon([e for e, _ in items], delta_slack)
    if adv < basic_eps:
        return adv, basic_delta + delta_slack
    return basic_eps, basic_delta


def zcdp_to_dp_epsilon(rho: float, delta: float) -> float:
    """rho-zCDP implies (rho + 2 sqrt(rho ln(1/delta)), delta)-DP."""
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


def decimal_up(value: Fraction) -> Decimal:
    """The smallest decimal of 50 significant digits that is >= ``value`` (exact when it
    has that many digits or fewer): charges are stored as text and must never shrink."""
    with localcontext() as ctx:
        ctx.prec = 50
        ctx.rounding = ROUND_CEILING
        return Decimal(value.numerator) / Decimal(value.denominator)


def _up(value: float) -> float:
    """A float nudged up by a relative 1e-12 (it covers the rounding of log and sqrt): a
    reported bound stays a bound."""
    return value * (1.0 + 1e-12)


def _float_up(value: Fraction) -> float:
    """The smallest float >= ``value``."""
    out = float(value)
    return math.nextafter(out, math.inf) if Fraction(out) < value else out


@dataclass(frozen=True)
class ZcdpCharge:
    """One charge to a rho budget: the release is ``delta``-approximately ``rho``-zCDP
    (``delta`` is 0 except for private partition selection)."""

    rho: Decimal
    delta: Decimal = Decimal(0)

    @classmethod
    def exact(cls, rho: Fraction, delta: Fraction = Fraction(0)) -> ZcdpCharge:
        """Rounded up to stored decimals (never below the exact cost)."""
        return cls(decimal_up(rho), decimal_up(delta))


@dataclass(frozen=True)
class RhoBudget:
    """A total zCDP budget with approximate parts.

    ``rho`` bounds the sum of the charges' rhos and ``approx_delta`` the sum of their
    deltas; ``delta`` is the delta' of the conversion to (epsilon, delta). The whole is
    (rho + 2 sqrt(rho ln(1/delta')), delta' + sum of deltas)-DP.
    Sums and the budget check are exact (fractions); only reported floats are rounded,
    upwards.
    """

    rho: Decimal
    delta: Decimal
    approx_delta: Decimal = Decimal(0)

    @classmethod
    def checked(cls, rho: float, delta: float, approx_delta: float) -> RhoBudget:
        """A budget from checked floats (rho > 0, delta > 0), or an InputError."""
        if delta == 0.0:
            raise InputError(
                "A rho budget needs delta > 0 to report its (epsilon, delta) equivalent."
            )
        budget = cls(
            as_decimal(rho, "rho"), as_decimal(delta, "delta"), as_decimal(approx_delta, "approx")
        )
        if budget.delta + budget.approx_delta >= 1:
            raise InputError("A rho budget needs delta + ", Name("approx_delta"), " < 1.")
        return budget

    @staticmethod
    def spent_of(charges: Iterable[ZcdpCharge]) -> tuple[Fraction, Fraction]:
        """(sum of rhos, sum of deltas), exactly."""
        rho, delta = Fraction(0), Fraction(0)
        for c in charges:
            rho += Fraction(c.rho)
            delta += Fraction(c.delta)
        return rho, delta

    def admits(self, charges: Iterable[ZcdpCharge], request: ZcdpCharge) -> bool:
        """True when ``request`` fits after ``charges``: both sums stay within the totals."""
        rho, delta = self.spent_of([*charges, request])
        return rho <= Fraction(self.rho) and delta <= Fraction(self.approx_delta)

    def as_dp(self, rho: Fraction, approx: Fraction) -> tuple[float, float]:
        """The (epsilon, delta) that ``rho`` and approximate deltas ``approx`` amount to
        (nothing spent is (0, 0): the conversion's delta' is spent with the first rho)."""
        if rho == 0 and approx == 0:
            return (0.0, 0.0)
        eps = _up(zcdp_to_dp_epsilon(_float_up(rho), float(self.delta))) if rho > 0 else 0.0
        return (eps, _float_up(Fraction(self.delta) + approx))

    @property
    def total(self) -> tuple[float, float]:
        """The total budget as (epsilon, delta) (the delta as the nearest float, like the
        totals of an epsilon budget)."""
        eps = self.as_dp(Fraction(self.rho), Fraction(0))[0]
        return (eps, float(Fraction(self.delta) + Fraction(self.approx_delta)))

    def spent(self, charges: Iterable[ZcdpCharge]) -> tuple[float, float]:
        """(epsilon, delta) spent: 0 before the first charge."""
        return self.as_dp(*self.spent_of(charges))

    def remaining(self, charges: Iterable[ZcdpCharge]) -> tuple[float, float]:
        """(the epsilon of the rho left, the total delta minus the delta spent); never
        negative."""
        rho, approx = self.spent_of(charges)
        left_rho = max(Fraction(self.rho) - rho, Fraction(0))
        eps = self.as_dp(left_rho, Fraction(0))[0]
        total_delta = Fraction(self.delta) + Fraction(self.approx_delta)
        spent_delta = Fraction(0) if rho == 0 and approx == 0 else Fraction(self.delta) + approx
        return (eps, float(max(total_delta - spent_delta, Fraction(0))))

    def exceeded(self, charges: Iterable[ZcdpCharge], request: ZcdpCharge) -> BudgetExceededError:
        """The error for a request that does not fit (rho and approximate delta named)."""
        charges = list(charges)
        rho, delta = self.spent_of(charges)
        left_rho = float(max(Fraction(self.rho) - rho, Fraction(0)))
        left_delta = float(max(Fraction(self.approx_delta) - delta, Fraction(0)))
        message = (
            f"privacy budget exceeded: this release costs rho={float(request.rho):g} "
            f"(approximate delta={float(request.delta):g}) but only rho={left_rho:g}, "
            f"approximate delta={left_delta:g} remain. Ask for less, or start a new budget."
        )
        return BudgetExceededError(
            self.remaining(charges),
            self.as_dp(Fraction(request.rho), Fraction(request.delta)),
            message,
        )
