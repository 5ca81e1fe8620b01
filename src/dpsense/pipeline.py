"""The one pipeline behind every release door (docs/architecture.md, "The pipeline").

``ds.release``, ``ds.sql``, ``Accountant.release`` and ``Accountant.sql`` build a
:class:`Request` and hand it to :func:`execute`, which runs the same steps in the same
order whichever door it came from:

1. warn about a large epsilon (a public parameter);
2. resolve a ``ds.join`` handle to the joined table;
3. check the request and build its plan (:func:`prepare_release`): everything refused
   from the arguments alone is refused here, before any data is read;
4. resolve the random source, and type the table once: its handle
   (``tables.handle.TableHandle``: its engine, casts and every column's type, decided
   from the declarations and the container, never from the values), which every later
   step reads;
5. with a ledger: check the table's columns against the plan (``query.steps``) before
   anything is charged, charge the plan's price (:func:`dpsense.query.price.price`, by
   the accountant's :meth:`~dpsense.accountant.Accountant.charged`), run the plan
   (:func:`dpsense.query.run.run_plan`) and log its public outputs; without one, run the
   plan (its first opening of the table makes the same checks, before anything is
   drawn).

An uncharged release is the same pipeline with no ledger. What a request costs is decided
in one place, :func:`dpsense.query.price.price`: the plan's total under an (epsilon, delta)
budget, the sum of its steps' prices under a zCDP one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from dpsense.errors import Assign, InputError, warn_large_epsilon
from dpsense.methods import Release
from dpsense.noise.rng import resolve_rng
from dpsense.query import QueryResult
from dpsense.query.join_form import resolve_joined
from dpsense.query.plan import QueryPlan, ReleaseArgs, plan_query
from dpsense.query.price import Price, price
from dpsense.query.run import readable_input, reads_column, run_plan, typed_input
from dpsense.query.steps import checked_table
from dpsense.statistics import Statistic
from dpsense.tables.grouped import GroupedRelease
from dpsense.tables.handle import TableHandle

__all__ = ["Charger", "Request", "execute", "prepare_release"]

Result = Release | GroupedRelease | QueryResult


@dataclass(frozen=True)
class Request:
    """One release as a door hands it to the pipeline: the data, what to release, its
    data-independent arguments, the budget and the random source; ``where`` names the
    door in messages, ``dataset`` labels a ledger entry."""

    data: Any
    statistic: Statistic | Mapping[str, Any]
    args: ReleaseArgs
    epsilon: float
    delta: float
    rng: object
    options: dict[str, Any] = field(default_factory=dict)
    where: str = "release"
    dataset: str = ""


class Charger(Protocol):
    """What the pipeline needs of a ledger: charge the price first, then run, then log."""

    def charged(
        self,
        cost: Price,
        labels: dict[str, str],
        make: Callable[[], Result],
        context: Mapping[str, Any] | None = None,
    ) -> Result: ...


def prepare_release(
    x: Any,
    statistic: Any,
    args: ReleaseArgs,
    *,
    epsilon: float,
    delta: float,
    options: dict[str, Any],
    where: str = "release",
) -> QueryPlan:
    """The checked plan of a request (an InputError for anything refused from the
    arguments alone, before any data is read)."""
    plan = plan_query(statistic, args, epsilon=epsilon, delta=delta, options=options, where=where)
    if plan.neighbours == "substitute" and not reads_column(plan, x):
        raise InputError(
            "Tables, groups and privacy units use add-remove neighbours (the number of "
            "rows of a unit is private): pass ",
            Assign("neighbours", "add-remove", quoted=True),
            ".",
        )
    return plan


def execute(request: Request, ledger: Charger | None = None) -> Result:
    """Run ``request`` through the pipeline of the module docstring, charged to
    ``ledger`` first when one is given."""
    where = request.where
    warn_large_epsilon(request.epsilon, where)
    x, args = resolve_joined(request.data, request.statistic, request.args, where)
    plan = prepare_release(
        x,
        request.statistic,
        args,
        epsilon=request.epsilon,
        delta=request.delta,
        options=request.options,
        where=where,
    )
    source = resolve_rng(request.rng, where=where)
    plan, table = typed_input(plan, x)  # the table's handle: every column typed, once
    if ledger is None:  # the run's own first opening checks the table (nothing to charge)
        return run_plan(plan, table, source)
    with readable_input(table) as table:
        if isinstance(table, TableHandle):
            plan = checked_table(plan, table)
        checked = plan
        return ledger.charged(
            price(checked),
            _labels(request, checked, args),
            lambda: run_plan(checked, table, source),
            _log_request(checked, args),
        )


def _labels(request: Request, plan: QueryPlan, args: ReleaseArgs) -> dict[str, str]:
    statistic = request.statistic
    name = (
        getattr(statistic, "name", "")
        if isinstance(statistic, Statistic)
        else "query(" + ", ".join(e.name for e in plan.entries) + ")"
    )
    return {"dataset": request.dataset, "statistic": name, "method": args.method}


def _log_request(plan: QueryPlan, args: ReleaseArgs) -> dict[str, Any]:
    """What the release log keeps of a release's request (public: its statistics, columns
    and contribution bounds, and the ``where`` text)."""
    single = plan.single
    return {
        "statistic": (
            plan.entries[0].statistic if single else {e.name: e.statistic for e in plan.entries}
        ),
        "column": plan.entries[0].column if single else {e.name: e.column for e in plan.entries},
        "privacy_unit": args.privacy_unit,
        "max_rows_per_unit": args.max_rows_per_unit,
        "max_groups_per_unit": args.max_groups_per_unit,
        "where": args.where,
    }
