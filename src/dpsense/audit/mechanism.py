r"""Audit a user's mechanism: a callable from a dataset to a number, on two neighbours.

:func:`audit_mechanism` calls the mechanism many times on ``x`` and on its neighbour
``x'`` and runs the package's two tests on the outputs: the catastrophe test, on the
heaviest point mass of a pilot sample (pure DP only), and the histogram audit. The two
share the significance level ``alpha`` (Bonferroni), so a mechanism that satisfies its
claim is flagged with probability at most ``alpha``; a pass proves nothing.
``docs/audit.md`` ("Auditing your own mechanism") derives the combination.
"""

from __future__ import annotations

import random
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
from numpy.typing import ArrayLike

from dpsense._progress import ProgressBar, show_progress
from dpsense.audit._binning import _pilot_size
from dpsense.audit._calls import (
    MAX_DRAWS,
    MIN_DRAWS,
    FloatArray,
    _check_pair,
    _dataset,
    _lump,
    _Mechanism,
    check_draws,
    neighbour_relation,
)
from dpsense.audit.catastrophe import CatastropheResult, catastrophe_test
from dpsense.audit.histogram import DEFAULT_BINS, AuditResult, histogram_audit
from dpsense.errors import InputError, Param
from dpsense.noise import SeededRandomnessWarning
from dpsense.params import check_delta, check_epsilon, check_int, check_probability

__all__ = [
    "DEFAULT_DRAWS",
    "MAX_DRAWS",
    "MIN_DRAWS",
    "MechanismAudit",
    "audit_mechanism",
    "check_draws",
    "neighbour_relation",
]

DEFAULT_DRAWS: Final = 10_000
"""Outputs the histogram audit tests on each dataset when ``draws`` is not given."""
_LUMP_PILOT: Final = 500
"""Pilot outputs per dataset that look for a point mass for the catastrophe test."""
_LUMP_DRAWS: Final = 1_000
"""Outputs per dataset of the catastrophe test (at most ``draws``)."""
_WHERE: Final = "audit_mechanism"
_RELATIONS: Final = ("add-remove", "substitute")


# --------------------------------------------------------------------------- the result


@dataclass(frozen=True)
class MechanismAudit:
    r"""The outcome of :func:`audit_mechanism`.

    Attributes
    ----------
    violation : bool
        True if a test found a violation of the claim on this pair: a mechanism that
        satisfies the claim is flagged with probability at most ``alpha``. False proves
        nothing ("no violation detected at this power").
    epsilon_lower_bound : float
        The measured privacy loss: a lower confidence bound, at level ``confidence``, on
        the smallest epsilon for which the mechanism is (epsilon, ``delta``)-DP on this
        pair and the tested events (the larger of the two tests' bounds).
    confidence : float
        ``1 - alpha``: both tests' bounds hold together with at least this probability.
    epsilon, delta : float
        The claim under audit.
    neighbours : str
        How x and x' are related: ``"add-remove"`` or ``"substitute"``.
    draws : int
        Outputs the histogram audit tested on each dataset.
    calls : int
        Calls of the mechanism in all (both datasets, pilot samples and both tests).
    found_by : str
        ``"histogram"`` or ``"catastrophe"``: the test that gave ``epsilon_lower_bound``.
    worst_event, direction : str
        That test's worst event (e.g. ``"bin [1.25, 1.5)"`` or ``"value 0.5"``) and
        which dataset makes it too likely (``"x over x'"`` or ``"x' over x"``).
    histogram : AuditResult
        The histogram audit, run at level ``histogram.alpha``.
    catastrophe : CatastropheResult or None
        The catastrophe test on ``catastrophe_event``, or None when it did not run (the
        claim has ``delta > 0``, or the pilot sample showed no point mass).
    catastrophe_event : str or None
        The event of the catastrophe test, e.g. ``"value 0.5"``.
    """

    violation: bool
    epsilon_lower_bound: float
    confidence: float
    epsilon: float
    delta: float
    neighbours: str
    draws: int
    calls: int
    found_by: str
    worst_event: str
    direction: str
    histogram: AuditResult
    catastrophe: CatastropheResult | None
    catastrophe_event: str | None

    @property
    def verdict(self) -> str:
        """``"violation found"`` or ``"no violation detected"``."""
        return "violation found" if self.violation else "no violation detected"

    def __str__(self) -> str:
        claim = f"(epsilon={self.epsilon:g}, delta={self.delta:g})"
        measured = (
            f"The measured privacy loss is epsilon >= {self.epsilon_lower_bound:.4g} at "
            f"{100 * self.confidence:g}% confidence ({self.found_by} test, worst event "
            f"{self.worst_event}, {self.direction}), from {self.draws} draws on each of x "
            f"and x' ({self.calls} calls in all) on this {self.neighbours} pair."
        )
        if self.violation:
            return (
                f"VIOLATION FOUND: the mechanism is not {claim}-DP. {measured} A mechanism "
                f"that satisfies its claim is flagged with probability at most "
                f"{1 - self.confidence:g}."
            )
        return (
            f"No violation detected at this power for the claim {claim}. {measured} An "
            "audit can only catch a violation, never prove privacy: other pairs, other "
            "events or a smaller leak may still break the claim."
        )


# --------------------------------------------------------------------------- the audit


def audit_mechanism(
    function: Callable[..., Any],
    x: ArrayLike,
    x_prime: ArrayLike,
    *,
    epsilon: float,
    delta: float = 0.0,
    draws: int = DEFAULT_DRAWS,
    alpha: float = 0.05,
    neighbours: str | None = None,
    seed: int | None = None,
    progress: bool | None = None,
    name: str | None = None,
) -> MechanismAudit:
    r"""Audit an (epsilon, delta)-DP claim of ``function`` on the neighbours ``x``, ``x'``.

    ``function(data)`` (or ``function(data, rng=generator)`` if it has an ``rng``
    parameter) must return one number: one run of the mechanism on ``data``, a read-only
    1-D float64 NumPy array. It is called anew for every output, so its noise must be
    drawn inside the call.

    With ``delta = 0`` a pilot sample of up to 500 outputs per dataset looks for a point
    mass (a value seen twice); if there is one, the catastrophe test checks the event
    "output = that value" on up to 1,000 fresh outputs per dataset at level
    ``alpha / 2``. The histogram audit then tests ``draws`` outputs per dataset (after
    its own pilot) at the rest of ``alpha``. Every event is fixed by a pilot sample that
    is independent of the outputs it is tested on, so by the union bound a mechanism
    satisfying the claim is flagged with probability at most ``alpha``.

    Parameters
    ----------
    function : callable
        The mechanism: one dataset (a 1-D float array) to one number.
    x, x_prime : array_like
        The two datasets, 1-D arrays of numbers (``inf`` allowed, NaN not). As multisets
        of values they must be neighbours: ``x'`` is ``x`` with one record added or
        removed (add-remove), or replaced (substitute).
    epsilon : float
        Claimed epsilon, in (0, inf).
    delta : float, default 0.0
        Claimed delta, in [0, 1). With ``delta > 0`` only the histogram audit runs (the
        catastrophe test is a test of pure DP).
    draws : int, default 10_000
        Outputs the histogram audit tests on each dataset, in [100, 10_000_000]. The
        mechanism is called more often than ``2 * draws`` times: see ``calls`` of the
        result.
    alpha : float, default 0.05
        Probability (at most) that a mechanism satisfying the claim is flagged, in (0, 1).
    neighbours : {"add-remove", "substitute"}, optional
        The relation of the claim; if given, x and x' must be neighbours under it.
    seed : int, optional
        Makes the audit reproducible: seeds the generator passed as ``rng`` and the global
        generators of ``random`` and ``numpy.random`` (which it changes). A mechanism
        that draws from a generator of its own, such as a CSPRNG, stays unseeded.
    progress : bool or None, default None
        Show a transient progress bar on stderr (``None``: when stderr is a terminal).
    name : str, optional
        The mechanism's name in messages (default: its module and qualified name).

    Returns
    -------
    MechanismAudit
        The verdict, the epsilon lower bound, its confidence and both tests' results.

    Raises
    ------
    InputError
        If a parameter is out of range, x and x' are not neighbours (or not under
        ``neighbours``), or the mechanism raises, or returns something other than one
        finite number. Messages give the exception's type, never its text or a data value.

    References
    ----------
    Ding, Wang, Wang, Zhang and Kifer, "Detecting violations of differential privacy",
    CCS 2018. Jagielski, Ullman and Oprea, NeurIPS 2020, Section 3.

    Examples
    --------
    >>> def noisy_count(data, rng):
    ...     return len(data) + rng.laplace(0.0, 1.0)
    >>> result = audit_mechanism(
    ...     noisy_count, [1.0, 2.0], [1.0, 2.0, 3.0], epsilon=1.0, draws=2_000, seed=1
    ... )
    >>> result.violation, result.neighbours
    (False, 'add-remove')
    """
    _check_callable(function)
    eps = check_epsilon(epsilon, where=_WHERE)
    dlt = check_delta(delta, where=_WHERE)
    size = check_draws(draws)
    level = check_probability(alpha, "alpha", where=_WHERE)
    _check_neighbours(neighbours)
    if seed is not None:
        seed = check_int(seed, "seed", where=_WHERE, minimum=0)
    data_x, data_y = _dataset(x, "x"), _dataset(x_prime, "x_prime")
    relation = _check_pair(data_x, data_y, neighbours)
    label = name or _default_name(function)

    rng = _seeded_generator(seed)
    bar = ProgressBar(show_progress(progress))
    mechanism = _Mechanism(function, label, rng, bar)
    claim = _Claim(epsilon=eps, delta=dlt, draws=size, alpha=level)
    histogram, catastrophe, event = _run_tests(mechanism, data_x, data_y, claim)
    return _combine(histogram, catastrophe, event, relation, level, mechanism.calls)


@dataclass(frozen=True, kw_only=True)
class _Claim:
    """The checked claim under audit and the size of the histogram audit."""

    epsilon: float
    delta: float
    draws: int
    alpha: float


def _check_callable(function: object) -> None:
    if not callable(function):
        raise InputError(
            Param("function", of=_WHERE),
            f" must be a callable from a dataset to a "
            f"number. Got an object of type {type(function).__name__} instead.",
        )


def _check_neighbours(neighbours: str | None) -> None:
    if neighbours is not None and neighbours not in _RELATIONS:
        raise InputError(
            Param("neighbours", of=_WHERE),
            f" must be 'add-remove' or 'substitute'. Got {neighbours!r} instead.",
        )


def _seeded_generator(seed: int | None) -> np.random.Generator:
    """The generator passed as ``rng``; with a seed, also seeds the global generators."""
    rng = np.random.default_rng(seed)  # None: fresh entropy from the OS
    if seed is not None:
        random.seed(seed)
        # the legacy global generator, for mechanisms that call np.random.laplace & co.
        np.random.seed(int(np.random.SeedSequence(seed).generate_state(1)[0]))  # noqa: NPY002
    return rng


def _run_tests(
    mechanism: _Mechanism, data_x: FloatArray, data_y: FloatArray, claim: _Claim
) -> tuple[AuditResult, CatastropheResult | None, str | None]:
    """Both tests on the outputs of the mechanism, sharing ``alpha``.

    The catastrophe test runs (at ``alpha / 2``) only for pure DP and when the pilot sample
    shows a point mass; the histogram audit runs at the rest of ``alpha``.
    """
    eps, dlt, size, level = claim.epsilon, claim.delta, claim.draws, claim.alpha
    lump_pilot = min(size, _LUMP_PILOT) if dlt == 0.0 else 0
    lump_draws = min(size, _LUMP_DRAWS) if dlt == 0.0 else 0
    total = 2 * (lump_pilot + lump_draws + _pilot_size(size, DEFAULT_BINS) + size)
    bar = mechanism.bar
    sample_x, sample_y = mechanism.sampler(data_x, "x"), mechanism.sampler(data_y, "x'")

    with bar.running(), warnings.catch_warnings():
        # a seeded generator is the point of a reproducible audit, not a mistake
        warnings.simplefilter("ignore", SeededRandomnessWarning)
        bar.task("Auditing the mechanism", total)
        catastrophe: CatastropheResult | None = None
        event: str | None = None
        if dlt == 0.0:
            value = _lump(sample_x(lump_pilot), sample_y(lump_pilot))
            if value is None:
                bar.advance(2 * lump_draws)
            else:
                event = f"value {value!r}"
                catastrophe = catastrophe_test(
                    sample_x,
                    sample_y,
                    event=lambda out: np.asarray(out) == value,
                    n=lump_draws,
                    epsilon=eps,
                    alpha=level / 2,
                )
        histogram = histogram_audit(
            sample_x,
            sample_y,
            epsilon=eps,
            delta=dlt,
            n=size,
            alpha=level if catastrophe is None else level / 2,
            progress=False,
        )
    return histogram, catastrophe, event


def _default_name(function: Callable[..., Any]) -> str:
    module = getattr(function, "__module__", None)
    qualname = getattr(function, "__qualname__", None) or type(function).__name__
    return f"{module}:{qualname}" if module else str(qualname)


def _combine(
    histogram: AuditResult,
    catastrophe: CatastropheResult | None,
    event: str | None,
    relation: str,
    alpha: float,
    calls: int,
) -> MechanismAudit:
    # The test with the larger bound is a failing one whenever either fails: each test
    # fails exactly when its bound exceeds the claimed epsilon (docs/audit.md, section 4).
    found_by, bound = "histogram", histogram.epsilon_lower_bound
    worst, direction = histogram.worst_event, histogram.direction
    if catastrophe is not None and catastrophe.epsilon_lower_bound > bound:
        found_by, bound = "catastrophe", catastrophe.epsilon_lower_bound
        worst, direction = str(event), catastrophe.direction
    return MechanismAudit(
        violation=not histogram.passed or (catastrophe is not None and not catastrophe.passed),
        epsilon_lower_bound=bound,
        confidence=1.0 - alpha,
        epsilon=histogram.claimed_epsilon,
        delta=histogram.claimed_delta,
        neighbours=relation,
        draws=histogram.n,
        calls=calls,
        found_by=found_by,
        worst_event=worst,
        direction=direction,
        histogram=histogram,
        catastrophe=catastrophe,
        catastrophe_event=event,
    )
