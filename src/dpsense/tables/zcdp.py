r"""What a release — grouped or not — costs under a zCDP (rho) budget.

The cost is a pair :math:`(\rho, \delta)`: the release is :math:`\delta`-approximately
:math:`\rho`-zCDP (Bun & Steinke 2016, Def. 8.1). It prices the release's own budget split
(:func:`~dpsense.query.plan.statistic_split`, the split the release runs with) and is
computed from public parameters only, before anything is drawn:

* **Private partition selection** (groups without public keys): each of the at most g noisy
  counts a unit changes moves by one under discrete Laplace noise of scale b, so it is
  (1/b)-DP and the selection, restricted to the groups both neighbours have, is
  :math:`g/(2b^2)`-zCDP (:math:`\le \varepsilon_s^2/(2g)`); a group only the larger
  neighbour has is kept with probability at most :math:`\delta_s`. So selection is
  :math:`\delta_s`-approximately :math:`g/(2b^2)`-zCDP (docs/accounting.md §3).
* **Per-group values**: a unit changes at most ``touched`` of them, each released at the
  per-group (epsilon, delta) by a method whose rho :func:`~dpsense.methods.zcdp.method_rho`
  gives; zCDP composition adds ``touched`` of them.

A release whose method has no zCDP guarantee (delta > 0 without one) is refused with an
:class:`~dpsense.errors.InputError` that says what to use instead.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from dpsense.accounting.budget import not_zcdp
from dpsense.accounting.composition import ZcdpCharge
from dpsense.errors import Assign, Part
from dpsense.mechanisms.partition_selection import SelectionRule
from dpsense.methods.zcdp import amount, method_rho
from dpsense.neighbours import Neighbours
from dpsense.statistics import Statistic
from dpsense.tables.request import BudgetSplit, normalise_keys

__all__ = ["public_key_count", "release_zcdp_cost", "selection_rho"]


def release_zcdp_cost(
    statistic: Statistic,
    *,
    method: str,
    split: BudgetSplit,
    neighbours: Neighbours,
    groups: int,
    options: dict[str, Any],
) -> ZcdpCharge:
    """The (rho, approximate delta) of one release by ``method`` (resolved, not "auto")
    that runs with the budget ``split`` (the very split its release uses,
    ``query.plan.statistic_split``) when a unit is in at most ``groups`` groups; an
    InputError when it has no zCDP guarantee."""
    eps_g, dlt_g = split.per_group
    one = method_rho(
        method, statistic, epsilon=eps_g, delta=dlt_g, neighbours=neighbours, options=options
    )
    if one is None:
        noise: tuple[Part, ...] = ()
        if "noise" in options:
            noise = (" with ", Assign.of("noise", options["noise"]))
        elif method == "smooth":
            noise = (" with Laplace noise, its default when delta > 0",)
        raise not_zcdp("This release (", Assign.of("method", method), *noise, ")")
    # a unit changes at most ``touched`` of the released groups, each rho_g-zCDP
    rho = split.touched * one
    approx = Fraction(0)
    if split.selection is not None:
        sel_rho, approx = selection_rho(split.selection, groups)
        rho += sel_rho
    return ZcdpCharge.exact(rho, approx)


def selection_rho(selection: tuple[float, float], groups: int) -> tuple[Fraction, Fraction]:
    """(rho, approximate delta) of private partition selection at (epsilon, delta)
    ``selection`` when a unit is in at most ``groups`` groups (module docstring)."""
    eps_sel, dlt_sel = selection
    scale = SelectionRule.for_budget(eps_sel, dlt_sel, groups).scale
    return Fraction(groups) / (2 * scale * scale), amount(dlt_sel)


def public_key_count(keys: Any, by: tuple[str, ...]) -> int | None:
    """The number of public keys a release gets (None: private selection, or no groups)."""
    return len(normalise_keys(keys, by)) if (by and keys is not None) else None
