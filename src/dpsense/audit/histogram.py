r"""Histogram audit of a mechanism on one pair of neighbouring datasets (Ding et al. 2018).

The audit draws many outputs of the mechanism on ``x`` and on its neighbour ``x'``,
sorts them into events fixed in advance (bins, and for approximate DP also the tails),
and bounds each event's probability under ``x`` and ``x'`` with Clopper–Pearson
intervals, made simultaneous by a Bonferroni correction. An event whose probabilities
are *certainly* (up to probability ``alpha``) too far apart,

.. math:: \underline{P}_x(E) - e^{\varepsilon}\, \overline{P}_{x'}(E) > \delta,

is a proof that the mechanism is not :math:`(\varepsilon, \delta)`-DP. The converse does
not hold: a passed audit only means that no violation was found. ``docs/audit.md``
derives the bound.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np
from numpy.typing import NDArray

from dpsense._progress import ProgressBar, show_progress
from dpsense.audit._binning import MAX_DISCRETE_VALUES as MAX_DISCRETE_VALUES
from dpsense.audit._binning import _Bins, _make_bins, _pilot_size
from dpsense.audit._confidence import _headline, _judge, clopper_pearson
from dpsense.audit._sampling import Outputs as Outputs
from dpsense.audit._sampling import Sampler, _check_sampler, _common, _draw, _fail
from dpsense.params import check_delta, check_epsilon, check_int, check_probability

__all__ = ["AuditResult", "Sampler", "clopper_pearson", "histogram_audit"]

FloatArray = NDArray[np.float64]

DEFAULT_BINS: Final = 40
"""Number of quantile bins of continuous outputs when ``bins`` is not given."""


# ----------------------------------------------------------------------------- the audit


@dataclass(frozen=True)
class AuditResult:
    r"""The outcome of :func:`histogram_audit`.

    Attributes
    ----------
    passed : bool
        False if the audit found a violation of the claim: with probability at least
        ``1 - alpha`` a mechanism that satisfies the claim passes. True proves nothing.
    epsilon_lower_bound : float
        A ``1 - alpha`` lower confidence bound on the smallest epsilon for which the
        mechanism is (epsilon, ``claimed_delta``)-DP on this pair of datasets:
        :math:`\max_E \ln\big((\underline{P}_x(E) - \delta) / \overline{P}_{x'}(E)\big)`
        over the events and directions tested (0 if no event gives evidence).
    claimed_epsilon, claimed_delta : float
        The privacy claim under audit.
    worst_event : str
        The most violating event, e.g. ``"bin [1.25, 1.5)"``, ``"value 3"`` or
        ``"tail >= 2.1"``: under pure DP the event that gives ``epsilon_lower_bound``,
        under approximate DP the one with the largest ``delta_excess``.
    direction : str
        ``"x over x'"`` if the worst event is more likely under ``x`` than ``x'`` allows,
        ``"x' over x"`` for the reverse.
    n : int
        Outputs drawn on each dataset (besides the pilot sample used for the bin edges).
    alpha : float
        Probability that a mechanism which satisfies the claim fails the audit (at most).
    delta_excess : float
        :math:`\max_E \underline{P}_x(E) - e^{\varepsilon}\overline{P}_{x'}(E) - \delta`
        over events and directions; positive exactly when the audit fails, and negative
        values measure the margin of a pass.
    events_tested : int
        The number ``m`` of probabilities bounded: events times directions (Bonferroni).
    """

    passed: bool
    epsilon_lower_bound: float
    claimed_epsilon: float
    claimed_delta: float
    worst_event: str
    direction: str
    n: int
    alpha: float
    delta_excess: float
    events_tested: int

    def __str__(self) -> str:
        verdict, confidence = _headline(self.passed, self.alpha)
        claim = f"(epsilon={self.claimed_epsilon:g}, delta={self.claimed_delta:g})"
        summary = (
            f"Histogram audit {verdict} for the claim {claim} with n={self.n} outputs on "
            f"each of x and x': the empirical epsilon lower bound is "
            f"{self.epsilon_lower_bound:.4g} at {confidence} confidence (Clopper–Pearson "
            f"intervals, Bonferroni over {self.events_tested} probabilities). The worst "
            f"event is {self.worst_event}, tested as {_compared(self.direction)}. The "
            "largest delta excess over all events (the lower bound of one probability "
            "minus e^epsilon times the upper bound of the other, minus delta) is "
            f"{self.delta_excess:.4g}; a positive excess is a violation."
        )
        if self.passed:
            return summary + (
                " No violation was found; an audit cannot prove that the mechanism is "
                "private, only catch it when it is not."
            )
        return summary + (
            f" The mechanism violates its claim on this pair of datasets (a private "
            f"mechanism fails with probability at most {self.alpha:g})."
        )


def _compared(direction: str) -> str:
    first, second = ("x", "x'") if direction == "x over x'" else ("x'", "x")
    return f"P_{first}(E) against P_{second}(E)"


def histogram_audit(
    sample_x: Sampler,
    sample_y: Sampler,
    *,
    epsilon: float,
    delta: float = 0.0,
    n: int = 200_000,
    bins: int | None = None,
    alpha: float = 0.05,
    both_directions: bool = True,
    progress: bool | None = None,
) -> AuditResult:
    r"""Audit an (epsilon, delta)-DP claim on one pair of neighbouring datasets.

    Draws a pilot sample from both samplers to fix the events, then ``n`` outputs from
    each, and tests every event :math:`E` in both directions:

    .. math::

        \underline{P}_x(E) - e^{\varepsilon}\, \overline{P}_{x'}(E) > \delta
        \quad\Longleftrightarrow\quad
        \ln \frac{\underline{P}_x(E) - \delta}{\overline{P}_{x'}(E)} > \varepsilon,

    where the bounds are Clopper–Pearson intervals at level :math:`1 - \alpha/m` and
    :math:`m` counts every probability bounded (events times directions). By the union
    bound all intervals hold together with probability at least :math:`1 - \alpha`, so a
    mechanism that is :math:`(\varepsilon, \delta)`-DP fails with probability at most
    :math:`\alpha`.

    The events are the bins: one per value for integer outputs with at most 512
    distinct pilot values, otherwise ``bins`` quantile bins of the pooled pilot sample
    with open-ended extreme bins (and a bin of its own for each lump of probability). With
    ``delta > 0`` they also include every tail (union of the first or last bins), since
    for additive noise the event that maximises :math:`P_x(E) - e^\varepsilon P_{x'}(E)`
    is a tail.

    Parameters
    ----------
    sample_x, sample_y : callable
        ``sample_x(k)`` returns ``k`` independent outputs of the mechanism on ``x`` as a
        1-D array of floats or integers; ``sample_y`` the same on the neighbour ``x'``.
    epsilon : float
        Claimed epsilon, in (0, inf).
    delta : float, default 0.0
        Claimed delta, in [0, 1).
    n : int, default 200_000
        Outputs drawn on each dataset (at least 100), besides the pilot sample of
        ``min(n, max(2000, 250 * bins))`` outputs each.
    bins : int, optional
        Number of quantile bins of continuous outputs (at least 2; default 40).
    alpha : float, default 0.05
        Significance level in (0, 1): the probability that a mechanism satisfying the
        claim fails is at most ``alpha``.
    both_directions : bool, default True
        Test ``P_x`` against ``P_x'`` and ``P_x'`` against ``P_x``. With False only the
        first is tested (and the Bonferroni factor halves).
    progress : bool or None, default None
        Show a transient progress bar on stderr while the outputs are drawn (it advances
        after each call of a sampler). ``None``: only when stderr is a terminal.

    Returns
    -------
    AuditResult
        Verdict, empirical epsilon lower bound, worst event and delta excess.

    Raises
    ------
    InputError
        If a parameter is out of range, or a sampler does not return ``k`` finite numbers
        in a 1-D array.

    Notes
    -----
    An audit can only find violations. It tests one pair of datasets, finitely many
    events and a violation larger than the sampling error; passing says nothing about
    other pairs, other events or smaller violations.

    References
    ----------
    Clopper and Pearson, Biometrika 26(4), 1934 (the intervals). Ding, Wang, Wang, Zhang
    and Kifer, "Detecting violations of differential privacy", CCS 2018 (auditing by
    event counts on neighbouring inputs). Jagielski, Ullman and Oprea, "Auditing
    differentially private machine learning: how private is private SGD?", NeurIPS 2020,
    Section 3 (Clopper–Pearson lower bounds on epsilon). Dwork and Roth, "The algorithmic
    foundations of differential privacy", 2014, Definition 2.4.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(1)
    >>> result = histogram_audit(
    ...     lambda k: rng.laplace(0.0, 1.0, k),
    ...     lambda k: 1.0 + rng.laplace(0.0, 1.0, k),
    ...     epsilon=1.0,
    ...     n=20_000,
    ... )
    >>> result.passed, result.epsilon_lower_bound <= 1.0
    (True, True)
    """
    sx, sy = _check_samplers(sample_x, sample_y)
    eps, dlt, size, n_bins, level = _check_numbers(epsilon, delta, n, bins, alpha)
    _check_flags(both_directions, progress)
    pilot = _pilot_size(size, n_bins)
    pilot_x, pilot_y, out_x, out_y = _draw_outputs(sx, sy, pilot, size, progress)
    partition = _make_bins(np.concatenate([pilot_x, pilot_y]), n_bins)
    events = _events(partition, out_x, out_y, dlt)
    judgement = _judge(
        np.concatenate(events.counts_x),
        np.concatenate(events.counts_y),
        size,
        epsilon=eps,
        delta=dlt,
        alpha=level,
        both_directions=bool(both_directions),
        prefer="ratio" if dlt == 0.0 else "excess",
    )
    return AuditResult(
        passed=judgement.delta_excess <= 0.0,
        epsilon_lower_bound=judgement.epsilon_lower_bound,
        claimed_epsilon=eps,
        claimed_delta=dlt,
        worst_event=events.labels[judgement.worst],
        direction=judgement.direction,
        n=size,
        alpha=level,
        delta_excess=judgement.delta_excess,
        events_tested=judgement.events_tested,
    )


_WHERE: Final = "histogram_audit"


def _check_samplers(sample_x: Sampler, sample_y: Sampler) -> tuple[Sampler, Sampler]:
    return (
        _check_sampler(sample_x, "sample_x", _WHERE),
        _check_sampler(sample_y, "sample_y", _WHERE),
    )


def _check_numbers(
    epsilon: float, delta: float, n: int, bins: int | None, alpha: float
) -> tuple[float, float, int, int, float]:
    """The checked epsilon, delta, n, number of bins and alpha, in that order."""
    eps = check_epsilon(epsilon, where=_WHERE)
    dlt = check_delta(delta, where=_WHERE)
    size = check_int(n, "n", where=_WHERE, minimum=100)
    n_bins = DEFAULT_BINS if bins is None else check_int(bins, "bins", where=_WHERE, minimum=2)
    return eps, dlt, size, n_bins, check_probability(alpha, "alpha", where=_WHERE)


def _check_flags(both_directions: object, progress: object) -> None:
    if not isinstance(both_directions, bool | np.bool_):
        raise _fail("both_directions", _WHERE, "True or False", both_directions)
    if progress is not None and not isinstance(progress, bool | np.bool_):
        raise _fail("progress", _WHERE, "True, False or None", progress)


def _draw_outputs(
    sx: Sampler, sy: Sampler, pilot: int, size: int, progress: bool | None
) -> list[Outputs]:
    """The pilot samples and the tested outputs on x and x', as arrays of one type."""
    where = "histogram_audit"
    bar = ProgressBar(show_progress(None if progress is None else bool(progress)))
    with bar.running():
        bar.task("Drawing outputs", 2 * (pilot + size))
        pilot_x = _draw(sx, pilot, "sample_x", where)
        bar.advance(pilot)
        pilot_y = _draw(sy, pilot, "sample_y", where)
        bar.advance(pilot)
        out_x = _draw(sx, size, "sample_x", where)
        bar.advance(size)
        out_y = _draw(sy, size, "sample_y", where)
        bar.advance(size)
    return _common([pilot_x, pilot_y, out_x, out_y])


@dataclass(frozen=True)
class _Events:
    """The tested events: counts among the outputs on x and on x', and their labels."""

    counts_x: list[NDArray[np.int64]]
    counts_y: list[NDArray[np.int64]]
    labels: list[str]


def _events(partition: _Bins, out_x: Outputs, out_y: Outputs, dlt: float) -> _Events:
    """The bins, and with ``delta > 0`` also every tail (first or last ``k`` bins)."""
    hist_x, hist_y = partition.histogram(out_x), partition.histogram(out_y)
    labels = [partition.bin_label(b) for b in range(partition.count)]
    counts_x, counts_y = [hist_x], [hist_y]
    if dlt > 0.0:
        # tails: the first k bins and the last k bins, 2 <= k < number of bins
        lengths = np.arange(2, partition.count)
        counts_x += [np.cumsum(hist_x)[lengths - 1], np.cumsum(hist_x[::-1])[lengths - 1]]
        counts_y += [np.cumsum(hist_y)[lengths - 1], np.cumsum(hist_y[::-1])[lengths - 1]]
        labels += [partition.prefix_label(int(k)) for k in lengths]
        labels += [partition.suffix_label(partition.count - int(k)) for k in lengths]
    return _Events(counts_x=counts_x, counts_y=counts_y, labels=labels)
