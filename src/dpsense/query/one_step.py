"""The requests of one step: private bounds, a ratio, sample and aggregate.

Each is a kind of request of :func:`dpsense.pipeline.execute` (a
:class:`~dpsense.pipeline.Door`): it owns its warning, its check of every argument, its
step for :func:`dpsense.query.price.price`, its run and what its ledger entry says. Their
doors: ``ds.private_bounds``, ``ds.private_ratio`` and ``ds.sample_and_aggregate`` (no
ledger), the accountant's methods of the same names (its ledger), and the command line's
``bounds``, ``ratio`` and ``release --method sample-aggregate`` (either).

A request names its door in ``where``: an accountant's door checks the budget's epsilon and
delta under its own name first, as it always has; every other message, the large-epsilon
warning and the seed's warning name the function (``private_bounds``...), whichever door.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from numpy.typing import NDArray

from dpsense.bounds import PRIVATE_BOUNDS_DOC, BoundsArgs, check_private_bounds, release_bounds
from dpsense.errors import warn_large_epsilon
from dpsense.methods import Release
from dpsense.methods import ratio as _ratio
from dpsense.methods import sample_aggregate as _aggregate
from dpsense.methods.ratio import RatioArgs, check_ratio_request, release_ratio
from dpsense.methods.sample_aggregate import (
    AggregateArgs,
    check_sample_and_aggregate,
    release_sample_and_aggregate,
)
from dpsense.noise.rng import RandomSource
from dpsense.params import check_delta, check_epsilon
from dpsense.pipeline import Charger, execute
from dpsense.query.price import Step, aggregate_step, private_bounds_step, ratio_step

__all__ = [
    "AggregateRequest",
    "BoundsRequest",
    "RatioRequest",
    "door_name",
    "private_bounds",
    "private_ratio",
    "released",
    "sample_and_aggregate",
]


@dataclass(frozen=True)
class _OneStep:
    """What the three kinds share: the budget, the random source, the door's name and the
    ledger's label; :meth:`budget` checks the budget under an accountant's name."""

    epsilon: float
    delta: float
    rng: object
    options: dict[str, Any] = field(default_factory=dict)
    where: str = ""
    dataset: str = ""

    name = ""
    """The function's name, in its messages and warnings."""

    @property
    def rng_where(self) -> str:
        return self.name

    def warn(self) -> None:
        warn_large_epsilon(self.epsilon, self.name)

    def budget(self) -> tuple[float, float]:
        """The budget, checked under the accountant's name by its doors (the function's
        own check says the rest)."""
        if self.where in ("", self.name):
            return self.epsilon, self.delta
        return (
            check_epsilon(self.epsilon, where=self.where),
            check_delta(self.delta, where=self.where),
        )


@dataclass(frozen=True)
class _Checked:
    """A checked request of one step: its price, labels and log, and its run."""

    cost: Step
    labels: dict[str, str]
    log: Mapping[str, Any] | None
    run_with: Callable[[RandomSource], Release]

    @contextmanager
    def opened(self) -> Iterator[_Checked]:
        yield self  # nothing of the data is checked before the charge

    def run(self, source: RandomSource) -> Release:
        return self.run_with(source)


@dataclass(frozen=True)
class BoundsRequest(_OneStep):
    """Private bounds of ``data`` (:func:`dpsense.private_bounds`); ``options``:
    its keyword arguments but the budget and ``rng``."""

    data: Any = None
    name = "private_bounds"

    def check(self) -> _Checked:
        eps, dlt = self.budget()
        args: BoundsArgs = check_private_bounds(eps, dlt, **self.options)
        labels = {"dataset": self.dataset, "statistic": "bounds", "method": "exponential"}
        log = {
            "column": self.options.get("column"),
            "privacy_unit": self.options.get("privacy_unit"),
            "max_rows_per_unit": self.options.get("max_rows_per_unit", 1),
        }
        step = private_bounds_step(args.epsilon)  # pure epsilon (delta is 0)
        return _Checked(step, labels, log, lambda source: release_bounds(self.data, args, source))


@dataclass(frozen=True)
class RatioRequest(_OneStep):
    """A private ratio a/b (:func:`dpsense.private_ratio`); ``options``: its
    ``method``, ``neighbours`` and method options."""

    a: Any = None
    b: Any = None
    name = "private_ratio"

    def check(self) -> _Checked:
        eps, dlt = self.budget()
        options = dict(self.options)
        method = options.pop("method", "ksw")
        neighbours = options.pop("neighbours", "add-remove")
        # the whole request is checked before the charge: an invalid one costs nothing
        args: RatioArgs = check_ratio_request(eps, dlt, method, neighbours, options)
        labels = {"dataset": self.dataset, "statistic": "ratio", "method": str(method)}
        step = ratio_step(labels["method"], neighbours, args[0], args[1])
        return _Checked(
            step, labels, None, lambda source: release_ratio(self.a, self.b, args, source)
        )


@dataclass(frozen=True)
class AggregateRequest(_OneStep):
    """Sample and aggregate (:func:`dpsense.sample_and_aggregate`);
    ``options``: its keyword arguments but the budget and ``rng``."""

    x: Any = None
    func: Callable[[NDArray[Any]], float] | None = None
    name = "sample_and_aggregate"

    def check(self) -> _Checked:
        eps, dlt = self.budget()
        args: AggregateArgs = check_sample_and_aggregate(
            self.func,  # type: ignore[arg-type]  # checked callable there
            epsilon=eps,
            delta=dlt,
            **self.options,
        )
        labels = {
            "dataset": self.dataset,
            "statistic": "sample-aggregate",
            "method": "sample-aggregate",
        }
        options = self.options
        step = aggregate_step(options.get("aggregator", "mean"), options.get("noise"), eps, dlt)
        return _Checked(
            step, labels, None, lambda source: release_sample_and_aggregate(self.x, args, source)
        )


def released(
    request: BoundsRequest | RatioRequest | AggregateRequest, ledger: Charger | None = None
) -> Release:
    """``request`` through the pipeline, charged to ``ledger`` first when one is given."""
    result = execute(request, ledger)
    assert isinstance(result, Release)
    return result


def door_name(kind: type[_OneStep], charged: bool) -> str:
    """The ``where`` of a request of ``kind``: the accountant's method's name when it is
    charged, else the function's."""
    return f"Accountant.{kind.name}" if charged else kind.name


def private_bounds(
    data: Any,
    *,
    epsilon: float,
    delta: float = 0.0,
    column: str | None = None,
    privacy_unit: str | None = None,
    max_rows_per_unit: int = 1,
    nulls: str = "error",
    quantiles: tuple[float, float] = (0.02, 0.98),
    rng: object = None,
    schema: Mapping[str, str] | None = None,
    serve: str = "quantiles",
) -> Release:
    options = {
        "column": column,
        "privacy_unit": privacy_unit,
        "max_rows_per_unit": max_rows_per_unit,
        "nulls": nulls,
        "quantiles": quantiles,
        "schema": schema,
        "serve": serve,
    }
    return released(BoundsRequest(epsilon, delta, rng, options, data=data))


def private_ratio(
    a: Any,
    b: Any,
    *,
    epsilon: float,
    delta: float = 0.0,
    method: str = "ksw",
    neighbours: str = "add-remove",
    rng: object = None,
    **options: object,
) -> Release:
    options = {"method": method, "neighbours": neighbours, **options}
    return released(RatioRequest(epsilon, delta, rng, options, a=a, b=b))


def sample_and_aggregate(
    x: Any,
    func: Callable[[NDArray[Any]], float],
    *,
    blocks: int,
    lower: float,
    upper: float,
    epsilon: float,
    delta: float = 0.0,
    aggregator: str = "mean",
    neighbours: str = "add-remove",
    rng: object = None,
    ids: Any = None,
    on_error: str = "midpoint",
    noise: str | None = None,
    function_name: str | None = None,
) -> Release:
    options = {
        "blocks": blocks,
        "lower": lower,
        "upper": upper,
        "aggregator": aggregator,
        "neighbours": neighbours,
        "ids": ids,
        "on_error": on_error,
        "noise": noise,
        "function_name": function_name,
    }
    return released(AggregateRequest(epsilon, delta, rng, options, x=x, func=func))


private_bounds.__doc__ = PRIVATE_BOUNDS_DOC
private_ratio.__doc__ = _ratio.PRIVATE_RATIO_DOC
sample_and_aggregate.__doc__ = _aggregate.SAMPLE_AND_AGGREGATE_DOC
