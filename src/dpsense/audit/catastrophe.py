r"""Catastrophe test: one event that a private mechanism can never make near-certain.

Local sensitivity can be zero on one dataset and positive on its neighbour; a mechanism
that scales its noise to the raw local sensitivity then outputs :math:`f(x')` exactly,
every time, on the dataset with zero sensitivity, and (almost) never on the other. The
event "output equals :math:`f(x')`" has probability 1 under one dataset and 0 under the
other, which no :math:`\varepsilon` can cover (NRS07, Section 1.1). The test
counts such an event on ``n`` draws from each dataset and needs only about a hundred.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpsense.audit._confidence import _headline, _judge
from dpsense.audit._sampling import Sampler, _check_sampler, _draw, _fail
from dpsense.errors import InputError, Param
from dpsense.params import check_epsilon, check_int, check_probability

__all__ = ["CatastropheResult", "Event", "catastrophe_test"]

Event = Callable[[Any], ArrayLike]
"""``event(outputs)`` returns a boolean array: which of the outputs lie in the event."""


@dataclass(frozen=True)
class CatastropheResult:
    r"""The outcome of :func:`catastrophe_test`.

    Attributes
    ----------
    passed : bool
        False if the event's probability under one dataset is certainly (up to ``alpha``)
        more than :math:`e^\varepsilon` times its probability under the other.
    epsilon_lower_bound : float
        A ``1 - alpha`` lower confidence bound on epsilon from this event:
        :math:`\max \ln(\underline{P}_x(E) / \overline{P}_{x'}(E))` over both directions,
        0 if the event was never seen.
    claimed_epsilon : float
        The epsilon under test.
    count_x, count_y : int
        How many of the ``n`` outputs on ``x`` and on ``x'`` lie in the event.
    direction : str
        ``"x over x'"`` if the event is too likely under ``x``, else ``"x' over x"``.
    n : int
        Outputs drawn on each dataset.
    alpha : float
        Probability (at most) that a mechanism satisfying the claim fails.
    """

    passed: bool
    epsilon_lower_bound: float
    claimed_epsilon: float
    count_x: int
    count_y: int
    direction: str
    n: int
    alpha: float

    def __str__(self) -> str:
        verdict, confidence = _headline(self.passed, self.alpha)
        summary = (
            f"Catastrophe test {verdict} for epsilon={self.claimed_epsilon:g}: the event "
            f"occurred in {self.count_x} of {self.n} outputs on x and {self.count_y} of "
            f"{self.n} on x', giving an epsilon lower bound of "
            f"{self.epsilon_lower_bound:.4g} at {confidence} confidence "
            f"(Clopper–Pearson, both directions, worst {self.direction})."
        )
        if self.passed:
            return summary + " No violation was found, which does not prove privacy."
        return summary + (
            " The event is far likelier under one dataset than epsilon allows: the "
            "mechanism is not epsilon-DP on this pair of datasets."
        )


def _hits(event: Event, outputs: Any, n: int, name: str) -> int:
    """Count the outputs in the event, after checking that it answered with n booleans."""
    answer = np.asarray(event(outputs))
    if answer.dtype != np.bool_ or answer.shape != (n,):
        raise InputError(
            Param("event", of="catastrophe_test"),
            f" must return a boolean array with "
            f"one entry per output. Got an array of dtype {answer.dtype} and shape "
            f"{answer.shape} on the {n} outputs of {name} instead; return e.g. "
            "outputs == value.",
        )
    return int(np.count_nonzero(answer))


def catastrophe_test(
    sample_x: Sampler,
    sample_y: Sampler,
    *,
    event: Event,
    n: int = 1_000,
    epsilon: float,
    alpha: float = 0.05,
) -> CatastropheResult:
    r"""Test an epsilon-DP claim on a single event chosen in advance.

    With :math:`k_x, k_{x'}` occurrences among ``n`` outputs on each dataset, the test
    fails when, in either direction,

    .. math::

        \underline{P}_x(E) > e^{\varepsilon}\, \overline{P}_{x'}(E),

    with Clopper–Pearson bounds at level :math:`1 - \alpha/2` for each of the two
    probabilities (Bonferroni). A failure needs :math:`k_x > 0`. When :math:`k_{x'} = 0`
    the upper bound is :math:`1 - (\alpha/4)^{1/n}`, about :math:`\ln(4/\alpha)/n`, so
    an event that always happens on ``x`` and never on ``x'`` fails as soon as
    :math:`(\alpha/4)^{1/n} > e^{\varepsilon}(1 - (\alpha/4)^{1/n})`: at
    :math:`\varepsilon = 1`, ``alpha = 0.05``, from ``n = 14`` draws on (the test asks
    for at least 100).

    Parameters
    ----------
    sample_x, sample_y : callable
        ``sample_x(k)`` returns ``k`` independent outputs of the mechanism on ``x`` (1-D
        array of floats or integers); ``sample_y`` the same on the neighbour ``x'``.
    event : callable
        ``event(outputs)`` returns a boolean array marking the outputs in the event, for
        example ``lambda out: out == 0.5`` for "the output equals f(x') exactly". It must
        be chosen before seeing the outputs.
    n : int, default 1000
        Outputs drawn on each dataset (at least 100).
    epsilon : float
        Claimed epsilon, in (0, inf).
    alpha : float, default 0.05
        Probability (at most) that a mechanism satisfying the claim fails, in (0, 1).

    Returns
    -------
    CatastropheResult
        Verdict, counts and the epsilon lower bound from the event.

    Raises
    ------
    InputError
        If a parameter is out of range, a sampler does not return ``k`` finite numbers,
        or the event does not return one boolean per output.

    References
    ----------
    Nissim, Raskhodnikova and Smith, "Smooth sensitivity and sampling in private data
    analysis", STOC 2007, Section 1.1 (why noise scaled to local sensitivity leaks).
    Clopper and Pearson, Biometrika 26(4), 1934 (the intervals).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> result = catastrophe_test(
    ...     lambda k: 0.5 + rng.laplace(0.0, 0.5, k),  # local sensitivity 0.5 on x
    ...     lambda k: np.full(k, 0.5),  # local sensitivity 0 on x': no noise at all
    ...     event=lambda out: out == 0.5,
    ...     n=100,
    ...     epsilon=1.0,
    ... )
    >>> result.passed, result.count_x, result.count_y
    (False, 0, 100)
    """
    where = "catastrophe_test"
    sx = _check_sampler(sample_x, "sample_x", where)
    sy = _check_sampler(sample_y, "sample_y", where)
    if not callable(event):
        raise _fail("event", where, "a callable returning a boolean array", event)
    size = check_int(n, "n", where=where, minimum=100)
    eps = check_epsilon(epsilon, where=where)
    level = check_probability(alpha, "alpha", where=where)

    hits_x = _hits(event, _draw(sx, size, "sample_x", where), size, "x")
    hits_y = _hits(event, _draw(sy, size, "sample_y", where), size, "x'")
    return _verdict(hits_x, hits_y, size, eps, level)


def _verdict(hits_x: int, hits_y: int, size: int, eps: float, level: float) -> CatastropheResult:
    """Judge the event in both directions from its counts among ``size`` outputs each."""
    judgement = _judge(
        np.array([hits_x], dtype=np.int64),
        np.array([hits_y], dtype=np.int64),
        size,
        epsilon=eps,
        delta=0.0,
        alpha=level,
        both_directions=True,
        prefer="ratio",
    )
    return CatastropheResult(
        passed=judgement.delta_excess <= 0.0,
        epsilon_lower_bound=judgement.epsilon_lower_bound,
        claimed_epsilon=eps,
        count_x=hits_x,
        count_y=hits_y,
        direction=judgement.direction,
        n=size,
        alpha=level,
    )
