r"""What a request costs: the one place where a request becomes its price.

:func:`price` turns a request (a checked :class:`~dpsense.query.plan.QueryPlan`, or one
:class:`Step` of the accountant's other doors) into a :class:`Price`, which the accountant
charges once, before anything is drawn (``pipeline.Charger``). It computes no cost of its
own: each step states its price beside its privacy argument, and the price sums them.

* **An (epsilon, delta) budget** charges the request's total. Basic composition: the
  plan's steps (each column's bounds, the shared selection, each statistic at its share,
  which pays for its groups, its own selection and its interval) run at shares of the total
  rounded down (docs/noise.md §8, ``query.plan``), so their epsilons and deltas sum to at
  most the total (Dwork & Roth 2014, Thm. 3.16); ``tests/query/test_price.py`` checks it.
* **A rho budget** charges the sum of the steps' zCDP prices: zCDP composes by adding rhos
  and approximate deltas (Bun & Steinke 2016, Lemma 2.3, Def. 8.1; docs/accounting.md §3).
  A step's price is computed when asked, so a step with no zCDP guarantee is refused
  (an :class:`~dpsense.errors.InputError`) under a rho budget only.

The steps' own prices:

* each column's private bounds step: :func:`dpsense.bounds.bounds_price`;
* private partition selection: :func:`dpsense.tables.request.selection_price`;
* each statistic: its method's price for one group
  (:func:`dpsense.methods.zcdp.method_rho`; its interval's share is part of the
  statistic's epsilon, so of that price), over the groups of the split it runs with
  (:meth:`dpsense.tables.request.BudgetSplit.zcdp_price`);
* the accountant's other doors: :func:`dpsense.methods.zcdp.aggregate_rho`
  (``sample_and_aggregate``), :func:`dpsense.methods.zcdp.ratio_rho` (``private_ratio``),
  the bounds step's (``private_bounds``).

Bounding each unit's rows and groups has no price of its own: it bounds what one unit can
change (m rows, g groups), which each statistic's calibration and split already pay for.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

from dpsense._exact_budget import exact
from dpsense.accounting.budget import not_zcdp
from dpsense.accounting.composition import ZcdpCharge
from dpsense.bounds import bounds_price
from dpsense.errors import Assign, Part
from dpsense.methods.sampling_interval import POPULATION, sampling_budget
from dpsense.methods.zcdp import ZcdpPrice, aggregate_rho, method_rho, pure_rho, ratio_rho
from dpsense.query.joint_merge import merge_of, merged_entry
from dpsense.query.plan import Entry, QueryPlan, statistic_split
from dpsense.tables.request import selection_price

__all__ = [
    "Price",
    "Step",
    "aggregate_step",
    "price",
    "private_bounds_step",
    "ratio_step",
]


@dataclass(frozen=True)
class Step:
    """One step of a request: the (epsilon, delta) it runs with and its own exact zCDP
    ``price``, computed when asked (from the function stated beside the step's privacy
    argument: module docstring)."""

    name: str
    epsilon: float
    delta: float
    price: Callable[[], ZcdpPrice]


@dataclass(frozen=True)
class Price:
    """What a request costs: its total (epsilon, delta), charged to an (epsilon, delta)
    budget, and its steps, whose zCDP prices :meth:`zcdp` sums for a rho budget."""

    epsilon: float
    delta: float
    steps: tuple[Step, ...]

    def zcdp(self) -> ZcdpCharge:
        """The sum of the steps' zCDP prices (module docstring), rounded up once to the
        stored decimals (never below the exact sum)."""
        total = ZcdpPrice(Fraction(0))
        for step in self.steps:
            total += step.price()
        return ZcdpCharge.exact(total.rho, total.delta)


def price(request: QueryPlan | Step) -> Price:
    """What ``request`` costs: a checked plan's total and its steps (module docstring), or
    one step alone (the accountant's ``private_bounds``, ``private_ratio`` and
    ``sample_and_aggregate``) at its own (epsilon, delta)."""
    if isinstance(request, Step):
        return Price(request.epsilon, request.delta, (request,))
    plan = request
    steps = [_part_step(plan, entry) for entry in plan.entries]
    if plan.selection is not None:
        selection, g = plan.selection, plan.groups_per_unit
        steps.append(Step("selection", *selection, lambda: selection_price(selection, g)))
    steps += [private_bounds_step(plan.bounds_epsilon) for _ in plan.bounds_columns]
    return Price(plan.epsilon, plan.delta, tuple(steps))


def _statistic_step(plan: QueryPlan, entry: Entry) -> Step:
    """One statistic of ``plan`` at its share, priced at
    :func:`~dpsense.query.plan.statistic_split`, the split its release runs with (after a
    shared selection: over g groups, never over the number selected, which is data), so
    that the rho charged is the rho of the per-group releases that run, from public
    parameters only. Its price is rounded up to the stored decimals, as it always was."""

    def zcdp() -> ZcdpPrice:
        split = statistic_split(plan, entry)
        eps_g, dlt_g = split.per_group
        options = dict(entry.options)
        ingredients = Fraction(0)
        if entry.interval == POPULATION:  # the point's share, and its pure-epsilon parts
            budget = sampling_budget(entry.statistic, eps_g)
            eps_g = budget.point
            ingredients = pure_rho(budget.count) + pure_rho(budget.spread)
        one = method_rho(
            entry.chosen,
            entry.statistic,
            epsilon=eps_g,
            delta=dlt_g,
            neighbours=plan.neighbours,
            options=options,
        )
        if one is None:
            noise: tuple[Part, ...] = ()
            if "noise" in options:
                noise = (" with ", Assign.of("noise", options["noise"]))
            elif entry.chosen == "smooth":
                noise = (" with Laplace noise, its default when delta > 0",)
            raise not_zcdp("This release (", Assign.of("method", entry.chosen), *noise, ")")
        exact = split.zcdp_price(one + ingredients, plan.groups_per_unit)
        part = ZcdpCharge.exact(exact.rho, exact.delta)
        return ZcdpPrice(Fraction(part.rho), Fraction(part.delta))

    return Step(entry.name, entry.epsilon, entry.delta, zcdp)


def _part_step(plan: QueryPlan, entry: Entry) -> Step:
    """One statistic of ``plan`` at its share; a statistic released jointly with others
    (``query.joint_merge``) is its part of the joint release: the joint release's price
    (one release at the sum of their shares) times its share of that sum, so that the
    parts add up to the release that runs."""
    merge = merge_of(plan.merges, entry.name)
    if merge is None:
        return _statistic_step(plan, entry)
    whole = _statistic_step(plan, merged_entry(merge, plan.entries))
    members = [e for e in plan.entries if e.name in merge.names]
    part = exact(entry.epsilon) / sum(exact(e.epsilon) for e in members)

    def zcdp() -> ZcdpPrice:
        price = whole.price()
        return ZcdpPrice(price.rho * part, price.delta * part)

    return Step(entry.name, entry.epsilon, entry.delta, zcdp)


def private_bounds_step(epsilon: float) -> Step:
    """A private bounds step at ``epsilon`` (pure: delta 0)."""
    return Step("bounds", epsilon, 0.0, lambda: bounds_price(epsilon))


def aggregate_step(aggregator: str, noise: str | None, epsilon: float, delta: float) -> Step:
    """A :func:`dpsense.sample_and_aggregate` release."""

    def zcdp() -> ZcdpPrice:
        rho = aggregate_rho(aggregator, noise, epsilon, delta)
        if rho is None:
            what = "This sample-and-aggregate release (a median with Laplace noise)"
            raise not_zcdp(what)
        return ZcdpPrice(rho)

    return Step("sample-aggregate", epsilon, delta, zcdp)


def ratio_step(method: str, neighbours: str, epsilon: float, delta: float) -> Step:
    """A :func:`dpsense.private_ratio` release."""

    def zcdp() -> ZcdpPrice:
        rho = ratio_rho(method, neighbours, epsilon)
        if rho is None:
            raise not_zcdp("A local-bound ratio")
        return ZcdpPrice(rho)

    return Step("ratio", epsilon, delta, zcdp)
