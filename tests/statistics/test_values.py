"""Values, conventions and validation of the statistics."""

from __future__ import annotations

import numpy as np
import pytest

import dpsense as ds
from dpsense.statistics import make_statistic


def test_quantile_rank_is_inverted_cdf() -> None:
    x = np.array([4.0, 1.0, 3.0, 2.0])
    assert ds.Median(0, 10)(x) == 2.0  # lower middle value, rank ceil(n/2)
    assert np.median(x) == 2.5  # numpy averages: the documented difference
    assert ds.Quantile(0.25, 0, 10)(x) == 1.0
    assert ds.Quantile(0.26, 0, 10)(x) == 2.0
    assert ds.Quantile(0.75, 0, 10)(x) == 3.0
    # exact rational ranks: ceil(0.1 * 30) is 3, not the float artefact 4
    assert ds.Quantile(0.1, 0, 100).rank(30) == 3


def test_values_are_clipped_to_bounds() -> None:
    x = np.array([-5.0, 2.0, 50.0])
    assert ds.Sum(0, 10)(x) == 12.0
    assert ds.Mean(0, 10)(x) == pytest.approx(4.0)
    assert ds.Count()(x) == 3.0
    assert ds.Median(0, 10)(x) == 2.0


def test_batch_matches_single_evaluation() -> None:
    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 11, size=(20, 7))
    stats = [
        ds.Count(),
        ds.Sum(0, 10),
        ds.Mean(0, 10),
        ds.Variance(0, 10),
        ds.Std(0, 10),
        ds.Median(0, 10),
        ds.Quantile(0.3, 0, 10),
        ds.TrimmedMean(2, 0, 10),
    ]
    for s in stats:
        batch = s.evaluate_batch(X)
        single = np.array([s(row) for row in X])
        np.testing.assert_allclose(batch, single, rtol=1e-12, atol=1e-12)


def test_empty_dataset_conventions_in_batches() -> None:
    empty = np.empty((2, 0))
    assert ds.Mean(0, 10).evaluate_batch(empty).tolist() == [5.0, 5.0]
    assert ds.Median(2, 10).evaluate_batch(empty).tolist() == [2.0, 2.0]
    assert ds.Variance(0, 10).evaluate_batch(empty).tolist() == [0.0, 0.0]
    assert ds.TrimmedMean(1, 0, 10).evaluate_batch(np.ones((1, 2))).tolist() == [5.0]


@pytest.mark.parametrize(
    ("call", "fragment"),
    [
        (lambda: ds.Mean(10, 0), "lower < upper"),
        (lambda: ds.Mean(0, float("nan")), "'upper'"),
        (lambda: ds.Quantile(1.5, 0, 1), "'p' parameter"),
        (lambda: ds.Quantile(0.0, 0, 1), "'p' parameter"),
        (lambda: ds.TrimmedMean(-1, 0, 1), "'trim' parameter"),
        (lambda: ds.Median(0, 1).smooth_sensitivity([0.5], 0.0), "'beta' parameter"),
        (lambda: ds.Median(0, 1).smooth_sensitivity([0.5], -1), "'beta' parameter"),
        (lambda: ds.Median(0, 1).local_sensitivity([0.5], "sideways"), "'neighbours'"),
        (lambda: ds.Median(0, 1).local_sensitivity([]), "empty"),
        (lambda: ds.Median(0, 1).local_sensitivity([0.1, np.nan]), "missing values"),
        (lambda: ds.Median(0, 1).local_sensitivity([0.1, None]), "missing values"),
        (lambda: ds.Median(0, 1).local_sensitivity(["0.1", "oops"]), "not numbers"),
        (lambda: ds.Median(0, 1).sensitivity_at_distance([0.5], -1), "'k' parameter"),
        (lambda: ds.Median(0, 1).distance_to_instability([0.5], -1.0), "'bound'"),
        (lambda: ds.Mean(0, 1).global_sensitivity("substitute"), "pass n="),
        (lambda: make_statistic("median", None, 1), "'lower' parameter"),
        (lambda: make_statistic("mode", 0, 1), "'statistic' parameter"),
        (lambda: make_statistic("quantile", 0, 1), "needs its level"),
    ],
)
def test_bad_input_gives_one_clear_input_error(call: object, fragment: str) -> None:
    with pytest.raises(ds.InputError) as info:
        call()  # type: ignore[operator]
    message = str(info.value)
    assert fragment in message
    assert "\n" not in message
    assert isinstance(info.value, ValueError)


def test_error_messages_never_contain_data_values() -> None:
    secret = [0.123456789, 98765.4321, float("nan")]
    with pytest.raises(ds.InputError) as info:
        ds.Mean(0, 1e6).local_sensitivity(secret)
    assert "0.123456789" not in str(info.value)
    assert "98765" not in str(info.value)
    with pytest.raises(ds.InputError) as info:
        ds.Mean(0, 1e6).local_sensitivity(["31337", "secret-name"])
    assert "secret-name" not in str(info.value)
    assert "31337" not in str(info.value)


def test_statistics_are_immutable_and_comparable() -> None:
    m = ds.Median(0, 100)
    with pytest.raises(AttributeError):
        m.lower = 5  # type: ignore[misc]
    assert m == ds.Median(0, 100)
    assert ds.Quantile(0.5, 0, 100).rank(7) == m.rank(7) == 4


def test_make_statistic_builds_every_statistic() -> None:
    assert make_statistic("count") == ds.Count()
    assert make_statistic("median", 0, 1) == ds.Median(0, 1)
    assert make_statistic("quantile", 0, 1, p=0.9) == ds.Quantile(0.9, 0, 1)
    assert make_statistic("trimmed-mean", 0, 1, trim=3) == ds.TrimmedMean(3, 0, 1)
    assert make_statistic("var", 0, 1) == ds.Variance(0, 1)
