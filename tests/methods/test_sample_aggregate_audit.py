"""Statistical privacy audits of sample-and-aggregate, through ``ds.sample_and_aggregate``.

The pairs are built so that the block answers are known whatever the random partition:
``f = max`` on records that are all 0 except possibly one 1, with enough records that
every block is non-empty (a block is empty with probability below 2^-38 per release).

* Mean aggregator, k = 2 blocks: on x every block answers 0; adding (add-remove) or
  substituting (substitute) one record 1 turns exactly one block's answer into 1, so the
  mean of the answers moves by w/k, the whole sensitivity. Laplace at w/(k epsilon) is
  exactly epsilon on this pair, and half that noise is 2 epsilon: the audit's
  Clopper-Pearson lower bound is about 1.8 then, far above the claim.
* Median aggregator, k = 1 block: the single answer moves from 0 to 1 = w. Smooth
  sensitivity spends only part of epsilon on such a shift (the rest pays for the change of
  the smooth bound between neighbours), so on no pair does halving its noise exceed the
  claim by a margin an audit can see; the median's scale is therefore also checked
  directly against the smooth release on the block answers (two-sample test below), which
  does catch a halved scale.

Seeds are fixed integers, so every run draws the same outputs.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from scipy import stats

import dpsense as ds
from dpsense.audit import histogram_audit
from dpsense.noise.rng import SeededRandom

# statistical audits of tens of seconds each: `make test-all` and CI run them
pytestmark = pytest.mark.slow

ZEROS = 40
MEAN_BLOCKS = 2


def _pair(relation: str, zeros: int) -> tuple[list[float], list[float]]:
    x = [0.0] * zeros
    y = [*x, 1.0] if relation == "add-remove" else [0.0] * (zeros - 1) + [1.0]
    return x, y


def _sampler(
    data: list[float],
    seed: int,
    *,
    blocks: int,
    aggregator: str,
    relation: str,
    delta: float = 0.0,
    noise: str | None = None,
    func: Callable[[np.ndarray], float] = np.max,
) -> Callable[[int], np.ndarray]:
    rng = SeededRandom(seed)
    records = np.array(data, dtype=float)

    def sample(count: int) -> np.ndarray:
        return np.array(
            [
                ds.sample_and_aggregate(
                    records,
                    func,
                    blocks=blocks,
                    lower=0.0,
                    upper=1.0,
                    epsilon=1.0,
                    delta=delta,
                    aggregator=aggregator,
                    neighbours=relation,
                    rng=rng,
                    noise=noise,
                ).value
                for _ in range(count)
            ]
        )

    return sample


def test_the_mean_pair_detects_half_the_noise() -> None:
    """The pair and audit size have the power to see the mutant (a reference in numpy)."""
    rng = np.random.default_rng(20_240_901)
    half = 1.0 / (2 * MEAN_BLOCKS)  # w / (2 k epsilon)

    def halved(centre: float) -> Callable[[int], np.ndarray]:
        return lambda k: np.clip(centre + rng.laplace(0.0, half, k), 0.0, 1.0)

    audit = histogram_audit(halved(0.0), halved(1.0 / MEAN_BLOCKS), epsilon=1.0, n=5_000, bins=10)
    assert not audit.passed
    assert audit.epsilon_lower_bound > 1.5


@pytest.mark.parametrize(("relation", "seed"), [("add-remove", 101), ("substitute", 201)])
def test_mean_aggregator_passes_the_histogram_audit(relation: str, seed: int) -> None:
    x, y = _pair(relation, ZEROS)
    options = {"blocks": MEAN_BLOCKS, "aggregator": "mean", "relation": relation}
    audit = histogram_audit(
        _sampler(x, seed, **options),
        _sampler(y, seed + 1, **options),
        epsilon=1.0,
        n=5_000,
        bins=10,
    )
    assert audit.passed, str(audit)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("relation", "noise", "delta", "seed"),
    [("add-remove", "student-t", 0.0, 301), ("substitute", "laplace", 1e-6, 401)],
)
def test_median_aggregator_passes_the_histogram_audit(
    relation: str, noise: str, delta: float, seed: int
) -> None:
    x, y = _pair(relation, 5)
    options = {
        "blocks": 1,
        "aggregator": "median",
        "relation": relation,
        "delta": delta,
        "noise": noise,
    }
    audit = histogram_audit(
        _sampler(x, seed, **options),
        _sampler(y, seed + 1, **options),
        epsilon=1.0,
        delta=delta,
        n=4_000,
        bins=10,
    )
    assert audit.passed, str(audit)


def test_median_aggregator_noise_is_the_smooth_release_of_the_block_answers() -> None:
    """Five blocks that all answer 1/2: the release must be distributed exactly as the
    smooth median of (1/2, ..., 1/2) under substitute; the same test rejects half the noise
    (the smooth release at twice the epsilon)."""
    size = 1_500
    blocks = 5
    records = [0.5] * 60  # an empty block also answers the midpoint 1/2
    sa = _sampler(records, 501, blocks=blocks, aggregator="median", relation="add-remove")(size)
    answers = np.full(blocks, 0.5)
    median = ds.Median(0.0, 1.0)

    def smooth(epsilon: float, seed: int) -> np.ndarray:
        rng = SeededRandom(seed)
        return np.array(
            [
                ds.release(
                    answers,
                    median,
                    epsilon=epsilon,
                    method="smooth",
                    neighbours="substitute",
                    noise="student-t",
                    rng=rng,
                ).value
                for _ in range(size)
            ]
        )

    assert stats.ks_2samp(sa, smooth(1.0, 502)).pvalue > 1e-3
    assert stats.ks_2samp(sa, smooth(2.0, 503)).pvalue < 1e-6


# ----------------------------------------------------------------------------- receipts


class _HoldsData:
    """A callable whose repr would show data: the receipt must not use it."""

    def __init__(self) -> None:
        self.secret = 123_456.789

    def __call__(self, block: np.ndarray) -> float:
        return float(np.mean(block))

    def __repr__(self) -> str:
        return f"_HoldsData(secret={self.secret})"


@pytest.mark.parametrize("aggregator", ["mean", "median"])
def test_the_receipt_names_the_aggregator_the_function_and_the_blocks(aggregator: str) -> None:
    release = ds.sample_and_aggregate(
        np.linspace(0.0, 1.0, 30),
        np.median,
        blocks=3,
        lower=0.0,
        upper=1.0,
        epsilon=1.0,
        aggregator=aggregator,
        rng=SeededRandom(7),
    )
    params = release.parameters
    assert params["aggregator"] == aggregator
    assert params["function"] == "numpy.median"
    assert params["blocks"] == 3
    assert release.method == "sample-aggregate"
    assert release.to_dict()["parameters"]["function"] == "numpy.median"


def test_the_function_label_never_uses_repr() -> None:
    release = ds.sample_and_aggregate(
        [0.2, 0.4], _HoldsData(), blocks=2, lower=0.0, upper=1.0, epsilon=1.0, rng=SeededRandom(8)
    )
    assert release.parameters["function"].endswith("_HoldsData")
    assert "123456" not in str(release.to_dict())
    named = ds.sample_and_aggregate(
        [0.2, 0.4],
        lambda b: float(b.mean()),
        blocks=2,
        lower=0.0,
        upper=1.0,
        epsilon=1.0,
        rng=SeededRandom(9),
        function_name="average age",
    )
    assert named.parameters["function"] == "average age"
