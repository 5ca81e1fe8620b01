"""Structured messages: each token in Python's words and in the command line's.

An error is built of text and tokens (``dpsense.errors.Message``); ``str()`` gives the
Python text and ``cli_text`` renders the same tokens as options. The command line never
rewrites text: the last tests fail if its words were derived from the Python text.
"""

from __future__ import annotations

import pytest

from dpsense.cli.messages import cli_text
from dpsense.errors import (
    MANY,
    Assign,
    BudgetExceededError,
    Door,
    EvaluationLimitError,
    InputError,
    Keys,
    LargeEpsilonWarning,
    Message,
    Name,
    OnlyWith,
    Param,
    Part,
    Schema,
    Units,
)

OPTIONS = {
    "--epsilon",
    "--delta",
    "--method",
    "--max-rows-per-unit",
    "--privacy-unit",
    "--keys",
    "--schema",
    "--nulls",
    "--public",
    "--statistics",
}

# (token, Python text, command-line text with OPTIONS, command-line text without options)
CASES: list[tuple[Part, str, str, str]] = [
    (
        Param("epsilon", of="release"),
        "The 'epsilon' parameter of release",
        "--epsilon",
        "The 'epsilon' parameter of release",
    ),
    (
        Param("delta", of="bounded_ls_mean"),
        "The 'delta' parameter of bounded_ls_mean",
        "--delta (with --method bounded-ls)",
        "The 'delta' parameter",
    ),
    (
        Param("epsilon", of="private_ratio", capital=False),
        "the 'epsilon' parameter of private_ratio",
        "--epsilon",
        "the 'epsilon' parameter of ratio",
    ),
    (
        Param("dof", word="option", method="smooth"),
        "The 'dof' option of the smooth method",
        "The 'dof' option of the smooth method",  # no --dof among OPTIONS
        "The 'dof' option of the smooth method",
    ),
    (
        Param("where", word="filter"),
        "The 'where' filter",
        "The WHERE clause",
        "The WHERE clause",
    ),
    (
        Param("where", of="ds.join"),
        "The 'where' parameter of ds.join",
        "The WHERE clause of ds.join",
        "The WHERE clause of ds.join",
    ),
    (
        Param("ids", of="sample_and_aggregate", word=""),
        "The 'ids' of sample_and_aggregate",
        "The 'ids'",
        "The 'ids'",
    ),
    (
        Param("quantiles", of="private_bounds", word=""),
        "The 'quantiles' of private_bounds",
        "The 'quantiles' of bounds",
        "The 'quantiles' of bounds",
    ),
    (Param("statistic"), "The 'statistic' parameter", "--statistics", "The 'statistic' parameter"),
    (Name("max_rows_per_unit"), "max_rows_per_unit", "--max-rows-per-unit", "max_rows_per_unit"),
    (Name("privacy_unit", quoted=True), "'privacy_unit'", "--privacy-unit", "'privacy_unit'"),
    (Assign("method", "ksw", quoted=True), "method='ksw'", "--method ksw", "method='ksw'"),
    (Assign("delta", "1e-5"), "delta=1e-5", "--delta 1e-5", "delta=1e-5"),
    (Assign("delta"), "delta=...", "--delta ...", "delta=..."),
    (
        Assign("delta", "(0.1, 0.9)", cli="0.1,0.9"),
        "delta=(0.1, 0.9)",
        "--delta 0.1,0.9",
        "delta=(0.1, 0.9)",
    ),
    (Assign("keys", MANY), "keys=[...]", "--keys FILE", "keys=[...]"),
    (
        Assign("public_tables", MANY),
        "public_tables=[...]",
        "--public NAME=PATH",
        "public_tables=[...]",
    ),
    (Assign.of("nulls", "drop"), "nulls='drop'", "--nulls drop", "nulls='drop'"),
    (
        Units((("orders", "cid"), ("items", ("oid", "orders", "id")))),
        "privacy_unit={'orders': 'cid', 'items': ('oid', 'orders', 'id')}",
        "--privacy-unit orders=cid --privacy-unit items=oid:orders.id",
        "--privacy-unit orders=cid --privacy-unit items=oid:orders.id",
    ),
    (Keys(("year",)), "keys={'year': [...]}", "--keys year=A,B", "keys={'year': [...]}"),
    (
        Keys(("year", "region")),
        "keys={'year': [...], 'region': [...]}",
        "--keys FILE (a CSV or Parquet file with those columns)",
        "keys={'year': [...], 'region': [...]}",
    ),
    (
        Schema((("age", "int"), ("wage", "float"))),
        "schema={'age': 'int', 'wage': 'float'}",
        "--schema age=int --schema wage=float",
        "schema={'age': 'int', 'wage': 'float'}",
    ),
    (
        Door("ds.private_bounds", "(...)"),
        "ds.private_bounds(...)",
        "'dpsense bounds'",
        "'dpsense bounds'",
    ),
    (
        Door("ds.Accountant", "(ledger='b.db', epsilon=...)", "b.db"),
        "ds.Accountant(ledger='b.db', epsilon=...)",
        "'dpsense budget init b.db --epsilon E'",
        "'dpsense budget init b.db --epsilon E'",
    ),
    (Door("ds.release"), "ds.release", "ds.release", "ds.release"),
    (
        OnlyWith("schema", ("; or ", Schema((("v", "float"),)))),
        "; or schema={'v': 'float'}",
        "; or --schema v=float",
        "",
    ),
]


@pytest.mark.parametrize(("token", "python", "cli", "bare"), CASES)
def test_each_token_in_both_front_ends(token: Part, python: str, cli: str, bare: str) -> None:
    message = Message("<", token, ">")
    assert str(message) == f"<{python}>"
    assert str(InputError(message)) == f"<{python}>"
    assert cli_text(message, OPTIONS) == f"<{cli}>"
    assert cli_text(message, set()) == f"<{bare}>"


def test_errors_keep_their_classes_and_constructors() -> None:
    error = InputError("The ", Param("epsilon", capital=False), " must be positive.")
    assert isinstance(error, ValueError)
    assert str(error) == "The the 'epsilon' parameter must be positive."
    assert error.args == (str(error),)
    assert str(InputError("plain")) == "plain"
    assert cli_text(InputError("plain").message, OPTIONS) == "plain"
    limit = EvaluationLimitError(Message(Assign("max_evaluations", "10")), 11.0)
    assert (str(limit), limit.needed) == ("max_evaluations=10", 11.0)
    refused = BudgetExceededError((0.5, 0.0), (1.0, 0.0))
    assert refused.remaining == (0.5, 0.0)
    assert "requested epsilon=1" in str(refused)
    assert str(BudgetExceededError((0.0, 0.0), (1.0, 0.0), "no")) == "no"
    warning = LargeEpsilonWarning(Param("epsilon", of="release"), " is 20")
    assert str(warning) == "The 'epsilon' parameter of release is 20"
    assert cli_text(warning.message, OPTIONS) == "--epsilon is 20"


def test_text_is_never_rewritten() -> None:
    """Python syntax written as plain text stays as it is: only tokens become options."""
    text = (
        "The 'epsilon' parameter of release: pass nulls='drop', delta=1e-6, keys=[...], "
        "max_rows_per_unit, schema={'age': 'int'}, privacy_unit={'a': 'b'} or ds.private_bounds."
    )
    assert cli_text(Message(text), OPTIONS) == text


@pytest.mark.parametrize(("token", "python", "cli", "bare"), CASES)
def test_the_command_line_does_not_read_the_python_text(
    monkeypatch: pytest.MonkeyPatch, token: Part, python: str, cli: str, bare: str
) -> None:
    """A mutant Python renderer changes str() and not the command line's words where the
    command has the option (without it, a token is said as Python says it)."""
    if isinstance(token, str):
        pytest.skip("text")
    monkeypatch.setattr(type(token), "python", lambda self: "MUTANT")
    assert "MUTANT" in str(Message(token))
    shown = cli_text(Message(token), OPTIONS)
    if cli != python:
        assert shown == cli
