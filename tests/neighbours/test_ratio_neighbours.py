"""The neighbour harness for the ratio (``ds.private_ratio``, ``Accountant.private_ratio``
and ``dpsense ratio``): once the request is fixed, whether it releases or raises, what it
says and what it charges do not change when one user is added.

D is a random table of per-user 0/1 columns (a <= b); D' adds one user. Under the data
owner's precondition (docs/ratios.md: per-user indicators, a_i <= b_i, and b_i = 1 under
substitute) the added user is a valid one. For a request that is invalid on its own
(epsilon <= 0, delta outside [0, 1), an unknown method, local-bound without delta, a bad
bound fraction) the added user may also break the precondition (a 2, a NaN, text, a 1
over a 0), and the request's own error must still come first, with the same words on both tables."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dpsense as ds
from dpsense.cli import main
from dpsense.methods.ratio import check_ratio_request

VALID = {
    "epsilon": [0.5, 1.0, 3.0],
    "delta": [0.0, 1e-6],
    "method": ["ksw", "naive", "local-bound"],
    "neighbours": ["add-remove", "substitute"],
}
INVALID = [
    {"epsilon": 0.0},
    {"epsilon": -1.0},
    {"delta": 1.0},
    {"delta": -0.1},
    {"method": "hourglass"},
    {"method": "local-bound", "delta": 0.0, "neighbours": "add-remove"},
    {"method": "local-bound", "delta": 1e-6, "bound_fraction": 1.5},
]
BROKEN_USERS = [("2", "1"), ("nan", "1"), ("yes", "1"), ("1", "0"), ("abc", "1"), ("", "1")]


def _request(rs: np.random.Generator) -> dict[str, Any]:
    request = {k: v[int(rs.integers(len(v)))] for k, v in VALID.items()}
    if rs.random() < 0.5:
        request.update(INVALID[int(rs.integers(len(INVALID)))])
    return request


def _tables(
    rs: np.random.Generator, may_break: bool, substitute: bool
) -> tuple[list[tuple[str, str]], tuple[str, str]]:
    """D and the added user. Under substitute every user is in the denominator (b is the
    public number of users: the precondition of that relation)."""
    n = int(rs.integers(0, 8))
    b = np.ones(n, dtype=int) if substitute else rs.integers(0, 2, n)
    a = b * rs.integers(0, 2, n)
    rows = [(str(x), str(y)) for x, y in zip(a, b, strict=True)]
    if may_break and rs.random() < 0.6:
        return rows, BROKEN_USERS[int(rs.integers(len(BROKEN_USERS)))]
    y = 1 if substitute else int(rs.integers(0, 2))
    return rows, (str(y * int(rs.integers(0, 2))), str(y))


def _write(path: Path, rows: list[tuple[str, str]]) -> Path:
    path.write_text("a,b\n" + "".join(f"{x},{y}\n" for x, y in rows))
    return path


def _cli(
    path: Path, request: dict[str, Any], ledger: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, float]:
    argv = ["ratio", str(path), "--numerator", "a", "--denominator", "b", "--seed", "3"]
    for key in ("epsilon", "delta", "method", "neighbours", "bound_fraction"):
        if key in request:
            argv += [f"--{key.replace('_', '-')}", str(request[key])]
    ds.Accountant(epsilon=100.0, delta=0.5, ledger=ledger)
    argv += ["--ledger", str(ledger), "--json"]
    code = main(argv)
    _, err = capsys.readouterr()
    spent = ds.Accountant(ledger=ledger).spent[0]
    return code, err if code else "", spent


def _python(rows: list[tuple[str, str]], request: dict[str, Any]) -> tuple[str, str, float]:
    def value(text: str) -> Any:
        try:
            return float(text) if text else None
        except ValueError:
            return text

    a = [value(x) for x, _ in rows]
    b = [value(y) for _, y in rows]
    acct = ds.Accountant(epsilon=100.0, delta=0.5)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ds.SeededRandomnessWarning)
            acct.private_ratio(a, b, rng=3, **request)
    except ds.DPSenseError as exc:
        return type(exc).__name__, str(exc), float(acct.spent[0])
    return "released", "", float(acct.spent[0])


@pytest.mark.parametrize("seed", range(60))
def test_the_ratio_does_not_depend_on_one_user(
    seed: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rs = np.random.default_rng(seed)
    request = _request(rs)
    options = {"bound_fraction": request["bound_fraction"]} if "bound_fraction" in request else {}
    try:
        check_ratio_request(
            request["epsilon"], request["delta"], request["method"], request["neighbours"], options
        )
        invalid = False
    except ds.InputError:
        invalid = True
    # the data owner's precondition: only an invalid request meets a broken user, whose
    # entry must not change what the request's own error says
    rows, person = _tables(rs, may_break=invalid, substitute=request["neighbours"] == "substitute")
    d = _write(tmp_path / "d.csv", rows)
    d_plus = _write(tmp_path / "d_plus.csv", [*rows, person])
    cli_d = _cli(d, request, tmp_path / "l1.db", capsys)
    cli_plus = _cli(d_plus, request, tmp_path / "l2.db", capsys)
    assert cli_d == cli_plus, (request, rows, person)
    py_d, py_plus = _python(rows, request), _python([*rows, person], request)
    assert py_d == py_plus, (request, rows, person)
    if invalid:
        assert cli_d[0] == 2
        assert py_d[0] != "released"
        assert cli_d[2] == py_d[2] == 0.0  # nothing charged
