"""Empty data under add-remove is released like any other data.

Under add-remove the empty dataset is a neighbour of every one-record dataset, so a release
on it must be drawn like any other: no error, no refusal and no receipt an observer could
tell apart from a one-record release (the value aside). Under substitute the number of
records is public and empty data is an informative error.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dpsense as ds
from dpsense.audit import histogram_audit
from dpsense.cli import main
from dpsense.methods.global_sensitivity import output_range
from dpsense.noise.rng import SeededRandom

L, U = 0.0, 10.0
STATISTICS: dict[str, Callable[[], ds.Statistic]] = {
    "count": ds.Count,
    "sum": lambda: ds.Sum(L, U),
    "mean": lambda: ds.Mean(L, U),
    "variance": lambda: ds.Variance(L, U),
    "std": lambda: ds.Std(L, U),
    "median": lambda: ds.Median(L, U),
    "quantile": lambda: ds.Quantile(0.3, L, U),
    "trimmed-mean": lambda: ds.TrimmedMean(1, L, U),
}
METHODS: dict[str, tuple[dict[str, Any], float]] = {
    "auto": ({}, 0.0),
    "global": ({}, 0.0),
    "smooth": ({}, 0.0),
    "smooth-laplace": ({"noise": "laplace"}, 1e-6),
    "ptr": ({"bound": 1.0}, 1e-6),
    "exponential": ({}, 0.0),
    "adaptive": ({}, 0.0),
    "ksw": ({}, 0.0),
    "bounded-ls": ({}, 1e-6),
}
ONE_RECORD = ([0.0], [3.0], [10.0])


def _release(data: list[float], stat: str, method: str, seed: int) -> ds.Release | str:
    """The receipt, or the error message: what an observer of the call sees."""
    options, delta = METHODS[method]
    try:
        return ds.release(
            np.array(data, dtype=float),
            STATISTICS[stat](),
            epsilon=1.0,
            delta=delta,
            method=method.split("-")[0] if method.startswith("smooth") else method,
            rng=SeededRandom(seed),
            **options,
        )
    except ds.InputError as exc:
        return f"InputError: {exc}"


def _public(receipt: ds.Release) -> dict[str, Any]:
    """Everything on the receipt but the value; the adaptive method's branch is part of
    its private output, so its branch-specific parameters are compared only by name."""
    out = receipt.to_dict()
    out.pop("value")
    if receipt.method == "adaptive":
        out["parameters"] = {"branch": out["parameters"]["branch"]}
    return out


@pytest.mark.parametrize("method", list(METHODS))
@pytest.mark.parametrize("stat", list(STATISTICS))
def test_release_on_empty_data_looks_like_a_release_on_one_record(stat: str, method: str) -> None:
    empty = _release([], stat, method, 11)
    for one in ONE_RECORD:
        other = _release(one, stat, method, 11)
        if isinstance(other, str):
            # a misuse of the method, whatever the data: the same error on both
            assert empty == other
            continue
        assert isinstance(empty, ds.Release), empty
        assert not empty.refused or method == "ptr"
        if empty.method == "adaptive" and other.method == "adaptive":
            assert set(empty.parameters) >= {"branch", "test_fraction", "test_threshold"}
        if empty.parameters.get("branch") == other.parameters.get("branch"):
            assert _public(empty) == _public(other)
        if empty.value is not None:
            lo, hi = output_range(STATISTICS[stat]())
            assert np.isfinite(empty.value)
            assert lo <= empty.value <= hi


@pytest.mark.parametrize("stat", ["median", "mean", "variance", "count"])
def test_substitute_empty_data_is_an_informative_error(stat: str) -> None:
    # n is public under substitute, so saying that there are no records reveals nothing
    with pytest.raises(ds.InputError, match="substitute") as info:
        ds.release([], STATISTICS[stat](), epsilon=1.0, neighbours="substitute")
    assert "add-remove" in str(info.value)


@pytest.mark.parametrize("relation", ["add-remove", "substitute"])
@pytest.mark.parametrize(
    ("aggregator", "delta"), [("mean", 0.0), ("median", 0.0), ("median", 1e-6)]
)
def test_sample_and_aggregate_on_empty_data_and_fewer_records_than_blocks(
    aggregator: str, delta: float, relation: str
) -> None:
    receipts = []
    for data in ([], [4.0], [1.0, 2.0]):  # all fewer records than blocks
        r = ds.sample_and_aggregate(
            np.array(data),
            np.mean,
            blocks=5,
            lower=L,
            upper=U,
            epsilon=1.0,
            delta=delta,
            aggregator=aggregator,
            neighbours=relation,
            rng=SeededRandom(12),
        )
        assert r.value is not None
        assert L <= r.value <= U
        receipts.append(_public(r))
    assert receipts[0] == receipts[1] == receipts[2]


@pytest.mark.parametrize("method", ["ksw", "naive", "local-bound"])
def test_private_ratio_on_no_users(method: str) -> None:
    delta = 1e-6 if method == "local-bound" else 0.0
    receipts = [
        _public(
            ds.private_ratio(a, b, epsilon=1.0, delta=delta, method=method, rng=SeededRandom(13))
        )
        for a, b in (([], []), ([1.0], [1.0]), ([0.0], [1.0]), (0, 0), (1, 1))
    ]
    assert all(r == receipts[0] for r in receipts)


def test_the_accountant_releases_empty_data_and_charges_it() -> None:
    acct = ds.Accountant(epsilon=3.0)
    r1 = acct.release([], ds.Median(L, U), epsilon=1.0, method="exponential", rng=SeededRandom(1))
    r2 = acct.sample_and_aggregate(
        [], np.mean, epsilon=1.0, blocks=3, lower=L, upper=U, rng=SeededRandom(2)
    )
    r3 = acct.private_ratio([], [], epsilon=1.0, rng=SeededRandom(3))
    assert all(r.value is not None for r in (r1, r2, r3))
    assert acct.spent == pytest.approx((3.0, 0.0))


# ------------------------------------------------------------------ the command line

CLI_CASES = [
    ("median", "auto", []),
    ("median", "global", []),
    ("median", "smooth", []),
    ("median", "ptr", ["--bound", "1", "--delta", "1e-6"]),
    ("median", "exponential", []),
    ("median", "adaptive", []),
    ("mean", "ksw", []),
    ("mean", "bounded-ls", ["--delta", "1e-6"]),
    ("mean", "global", []),
    ("variance", "smooth", []),
    ("count", "auto", []),
    ("median", "sample-aggregate", ["--blocks", "3", "--aggregator", "median"]),
    ("mean", "sample-aggregate", ["--blocks", "3"]),
]


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(("stat", "method", "extra"), CLI_CASES)
def test_cli_release_of_a_header_only_csv(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, stat: str, method: str, extra: list[str]
) -> None:
    payloads = []
    for name, text in (("empty.csv", "age,name\n"), ("one.csv", "age,name\n7,a\n")):
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        code, out, err = _cli(
            capsys,
            "release",
            str(path),
            "--column",
            "age",
            "--statistic",
            stat,
            "--lower",
            "0",
            "--upper",
            "10",
            "--epsilon",
            "1",
            "--method",
            method,
            "--seed",
            "5",
            "--json",
            *extra,
        )
        assert code == 0, err
        payload = json.loads(out)
        # the value and its interval are the release's private output
        for released in ("value", "interval", "unreliable"):
            payload.pop(released)
        if payload["method"] == "adaptive":
            payload["parameters"] = {"branch": payload["parameters"]["branch"]}
        payloads.append(payload)
    if payloads[0].get("parameters", {}).get("branch") == payloads[1].get("parameters", {}).get(
        "branch"
    ):
        assert payloads[0] == payloads[1]


def test_cli_ratio_of_a_header_only_csv(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "users.csv"
    path.write_text("clicked,active\n", encoding="utf-8")
    code, out, err = _cli(
        capsys, "ratio", str(path), "--numerator", "clicked", "--denominator", "active",
        "--epsilon", "1", "--json",
    )  # fmt: skip
    assert code == 0, err
    assert 0.0 <= json.loads(out)["value"] <= 1.0


def test_cli_substitute_on_a_header_only_csv_is_a_clear_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "empty.csv"
    path.write_text("age\n", encoding="utf-8")
    code, _, err = _cli(
        capsys, "release", str(path), "--column", "age", "--statistic", "median",
        "--lower", "0", "--upper", "10", "--epsilon", "1", "--neighbours", "substitute",
    )  # fmt: skip
    assert code == 2
    assert "substitute" in err
    assert err.count("\n") == 1


# -------------------------------------------- audits: empty data next to one record


def _sampler(data: list[float], stat: ds.Statistic, method: str, seed: int) -> Callable:
    rng = SeededRandom(seed)
    x = np.array(data, dtype=float)
    return lambda n: np.array(
        [ds.release(x, stat, epsilon=1.0, method=method, rng=rng).value for _ in range(n)]
    )


@pytest.mark.parametrize(
    ("stat", "method", "seed"),
    [
        # statistical audits of thousands of releases: the slow tier (make slow)
        pytest.param(ds.Count(), "global", 901, marks=pytest.mark.slow),
        pytest.param(ds.Mean(0.0, 1.0), "global", 911, marks=pytest.mark.slow),
        (ds.Mean(0.0, 1.0), "ksw", 921),
        pytest.param(ds.Median(0.0, 1.0), "exponential", 931, marks=pytest.mark.slow),
    ],
)
def test_empty_and_one_record_pass_the_histogram_audit(
    stat: ds.Statistic, method: str, seed: int
) -> None:
    audit = histogram_audit(
        _sampler([], stat, method, seed),
        _sampler([1.0], stat, method, seed + 1),
        epsilon=1.0,
        n=5_000,
        bins=10,
    )
    assert audit.passed, str(audit)
