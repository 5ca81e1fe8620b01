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
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal, getcontext

from dpsense.errors import InputError

__all__ = [
    "Charge",
    "advanced_epsilon",
    "as_decimal",
    "compose",
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
