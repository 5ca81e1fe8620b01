"""The one pipeline behind every release door (docs/architecture.md, "The pipeline").

Every door builds a request and hands it to :func:`execute`, which runs the same steps in
the same order whichever door it came from:

1. warn about a large epsilon (a public parameter);
2. check the request (:meth:`Door.check`): everything refused from the arguments alone is
   refused here, before any data is read;
3. resolve the random source;
4. a release types its table once: its handle (``tables.handle.TableHandle``: its
   engine, casts and every column's type, decided from the declarations and the
   container, never from the values), which every later step reads;
5. with a ledger: check what the charge must not precede (a release's table columns,
   :meth:`Checked.opened`), charge the request's price (:func:`dpsense.query.price.price`,
   by the accountant's :meth:`~dpsense.accountant.Accountant.charged`), run and log its
   public outputs; without one, run (a release's first opening of its table makes the
   same checks, before anything is drawn).

An uncharged release is the same pipeline with no ledger. The kinds of request:
:class:`Request` (``ds.release``, ``ds.sql``, ``ds.join``, ``Accountant.release``,
``Accountant.sql`` and the CLI's ``release`` and ``sql``: a plan, :func:`prepare_release`)
and the requests of one step of :mod:`dpsense.query.one_step` (``private_bounds``,
``private_ratio``, ``sample_and_aggregate``, charged or not, and the CLI's ``bounds``,
``ratio`` and ``release --method sample-aggregate``). What a request costs is decided in one
place, :func:`dpsense.query.price.price`: a plan's total under an (epsilon, delta) budget,
the sum of its steps' prices under a zCDP one; a request of one step costs that step.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from dpsense.errors import Assign, InputError, warn_large_epsilon
from dpsense.methods import Release
from dpsense.noise.rng import RandomSource, resolve_rng
from dpsense.query import QueryResult
from dpsense.query.join_form import resolve_joined
from dpsense.query.per_unit import resolve_per_unit
from dpsense.query.plan import QueryPlan, ReleaseArgs, plan_query
from dpsense.query.price import Price, Step, price
from dpsense.query.run import readable_input, reads_column, run_plan, typed_input
from dpsense.query.steps import checked_table
from dpsense.statistics import Statistic
from dpsense.tables.grouped import GroupedRelease
from dpsense.tables.handle import TableHandle

__all__ = ["Charger", "Checked", "Door", "Request", "execute", "prepare_release"]

Result = Release | GroupedRelease | QueryResult


class Checked(Protocol):
    """A checked request: what it costs (a plan, or one step), how the ledger labels and
    logs it, and how it runs."""

    @property
    def cost(self) -> QueryPlan | Step: ...

    @property
    def labels(self) -> dict[str, str]: ...

    @property
    def log(self) -> Mapping[str, Any] | None: ...

    def opened(self) -> AbstractContextManager[Checked]:
        """The request with what must precede its charge checked (a release: its table's
        columns), for as long as the charge and the run need the data."""
        ...

    def run(self, source: RandomSource) -> Result: ...


class Door(Protocol):
    """A request as a door hands it to :func:`execute` (module docstring)."""

    @property
    def rng(self) -> object: ...

    @property
    def rng_where(self) -> str:
        """How the seed's warning and the random source's refusal name the request."""
        ...

    def warn(self) -> None:
        """Warn about a large epsilon."""
        ...

    def check(self) -> Checked:
        """Check every argument (an InputError before any data is read)."""
        ...


class Charger(Protocol):
    """What the pipeline needs of a ledger: charge the price first, then run, then log."""

    def charged(
        self,
        cost: Price,
        labels: dict[str, str],
        make: Callable[[], Result],
        context: Mapping[str, Any] | None = None,
    ) -> Result: ...


def execute(request: Door, ledger: Charger | None = None) -> Result:
    """Run ``request`` through the pipeline of the module docstring, charged to
    ``ledger`` first when one is given."""
    request.warn()
    checked = request.check()
    source = resolve_rng(request.rng, where=request.rng_where)
    if ledger is None:  # a release's own first opening checks the table (nothing to charge)
        return checked.run(source)
    with checked.opened() as ready:
        return ledger.charged(price(ready.cost), ready.labels, lambda: ready.run(source), ready.log)


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

    @property
    def rng_where(self) -> str:
        return self.where

    def warn(self) -> None:
        warn_large_epsilon(self.epsilon, self.where)

    def check(self) -> CheckedRelease:
        """Resolve a ``ds.join`` or ``ds.per_unit`` handle to its table, then check the
        request and build its plan (:func:`prepare_release`)."""
        x, args = resolve_per_unit(self.data, self.args, self.where)
        x, args = resolve_joined(x, self.statistic, args, self.where)
        return CheckedRelease(self, x, args, prepare_release(replace(self, data=x, args=args)))


@dataclass(frozen=True)
class CheckedRelease:
    """A release's checked plan, on its (resolved) data."""

    request: Request
    data: Any
    args: ReleaseArgs
    plan: QueryPlan

    @property
    def cost(self) -> QueryPlan:
        return self.plan

    @property
    def labels(self) -> dict[str, str]:
        return _labels(self.request, self.plan, self.args)

    @property
    def log(self) -> dict[str, Any]:
        return _log_request(self.plan, self.args)

    typed: bool = False
    """Whether ``data`` is already the table's handle (:meth:`opened`)."""

    @contextmanager
    def opened(self) -> Iterator[CheckedRelease]:
        """The table typed once (its handle) and its columns checked against the plan
        (``query.steps``) before anything is charged."""
        plan, table = typed_input(self.plan, self.data)
        with readable_input(table) as table:
            if isinstance(table, TableHandle):
                plan = checked_table(plan, table)
            yield replace(self, data=table, plan=plan, typed=True)

    def run(self, source: RandomSource) -> Result:
        if self.typed:
            return run_plan(self.plan, self.data, source)
        plan, table = typed_input(self.plan, self.data)  # the handle: every column typed
        return run_plan(plan, table, source)


def prepare_release(request: Request) -> QueryPlan:
    """The checked plan of ``request`` (an InputError for anything refused from the
    arguments alone, before any data is read)."""
    r = request
    plan = plan_query(
        r.statistic, r.args, epsilon=r.epsilon, delta=r.delta, options=r.options, where=r.where
    )
    if plan.neighbours == "substitute" and not reads_column(plan, r.data):
        raise InputError(
            "Tables, groups and privacy units use add-remove neighbours (the number of "
            "rows of a unit is private): pass ",
            Assign("neighbours", "add-remove", quoted=True),
            ".",
        )
    return plan


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
