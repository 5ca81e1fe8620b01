"""DuckDB SQL written with sqlglot's expression builder: every identifier quoted and every
literal escaped by sqlglot, never spliced into text.

The statements outside the engines (a file's view, a column's type, the rows of a keys
file) are built here from a few parts. sqlglot is imported on first use, so that
``import dpsense`` stays light; each statement is built once per request, not per row or
group.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "call",
    "column",
    "create_view",
    "describe",
    "duckdb_sql",
    "ident",
    "literal",
    "parse_list",
    "select",
    "star",
    "table",
]


def _exp() -> Any:
    from sqlglot import expressions as exp

    return exp


def ident(name: str) -> Any:
    """``name`` as a quoted identifier."""
    return _exp().to_identifier(name, quoted=True)


def column(name: str) -> Any:
    """The column ``name``, quoted."""
    exp = _exp()
    return exp.Column(this=ident(name))


def table(name: str) -> Any:
    """The table or view ``name``, quoted."""
    exp = _exp()
    return exp.Table(this=ident(name))


def literal(value: Any) -> Any:
    """A Python value as a SQL literal: text (escaped), a bool, an int, or a list or mapping
    of them (a DuckDB list ``[...]`` or struct ``{'k': v}``)."""
    exp = _exp()
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, int):
        return exp.Literal.number(value)
    if isinstance(value, str):
        return exp.Literal.string(value)
    if isinstance(value, Mapping):
        pairs = [
            exp.PropertyEQ(this=exp.Literal.string(k), expression=literal(v))
            for k, v in value.items()
        ]
        return exp.Struct(expressions=pairs)
    return exp.Array(expressions=[literal(v) for v in value])


def call(name: str, *args: Any, options: Sequence[tuple[str, Any]] = ()) -> Any:
    """The table function ``name(args..., option = value, ...)``; ``args`` are sqlglot
    expressions, ``options`` (name, Python value) pairs."""
    exp = _exp()
    named = [
        exp.EQ(this=exp.Column(this=exp.to_identifier(n)), expression=literal(v))
        for n, v in options
    ]
    return exp.Anonymous(this=name, expressions=[*args, *named])


def select(columns: Sequence[Any], source: Any, where: Any = None) -> Any:
    """``SELECT columns FROM source [WHERE where]``; ``columns`` are sqlglot expressions
    (``exp.Star()`` for every column), ``source`` a table, a table function or a query
    (parenthesised)."""
    exp = _exp()
    if isinstance(source, exp.Query):
        source = source.subquery()
    tree = exp.Select(expressions=list(columns)).from_(source, copy=False)
    if where is not None:
        tree = tree.where(where, copy=False)
    return tree


def star(source: Any, where: Any = None) -> Any:
    """``SELECT * FROM source [WHERE where]``."""
    return select([_exp().Star()], source, where)


def create_view(name: str, query: Any, *, replace: bool = False) -> str:
    """``CREATE [OR REPLACE] TEMP VIEW name AS query`` in DuckDB SQL."""
    exp = _exp()
    tree = exp.Create(
        this=table(name),
        kind="VIEW",
        expression=query,
        replace=replace,
        properties=exp.Properties(expressions=[exp.TemporaryProperty()]),
    )
    return duckdb_sql(tree)


def describe(query: Any) -> str:
    """``DESCRIBE query`` in DuckDB SQL (the types of its columns; no row is read)."""
    return duckdb_sql(_exp().Describe(this=query))


def duckdb_sql(tree: Any) -> str:
    """The tree as DuckDB SQL."""
    return str(tree.sql(dialect="duckdb"))


def parse_list(text: str, dialect: str = "duckdb") -> list[Any]:
    """The expressions of ``text``, a comma-separated list of SQL expressions of
    ``dialect`` (``a, CAST(b AS DECIMAL(10,2))``), each parsed by sqlglot: split at the
    commas outside parentheses, brackets and braces, found by sqlglot's tokenizer."""
    import sqlglot
    from sqlglot import TokenType
    from sqlglot.dialects.dialect import Dialect

    opening = {TokenType.L_PAREN, TokenType.L_BRACKET, TokenType.L_BRACE}
    closing = {TokenType.R_PAREN, TokenType.R_BRACKET, TokenType.R_BRACE}
    depth, start, parts = 0, 0, []
    for token in Dialect.get_or_raise(dialect).tokenize(text):
        if token.token_type in opening:
            depth += 1
        elif token.token_type in closing:
            depth -= 1
        elif token.token_type == TokenType.COMMA and depth == 0:
            parts.append(text[start : token.start])
            start = token.end + 1
    parts.append(text[start:])
    return [sqlglot.parse_one(part, read=dialect) for part in parts]
