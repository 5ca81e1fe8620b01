"""No SQL is built by splicing text outside the engines' compilers: outside
``tables/engines/``, SQL is built with sqlglot's expression builder (identifiers quoted and
literals escaped by it), or is a static, parameterised statement.

The scan reads every module's syntax tree for strings built from parts (f-strings,
``"..." + x`` and ``"...".format(...)``) in which a SQL keyword is followed by an
interpolated part (``f"SELECT {cols} FROM {view}"``, ``f"CAST({c} AS ...)"``), or an
identifier is spliced between double quotes (``f'"{name}"'``; a text literal between
single quotes is left to the keyword patterns: prose quotes names that way). A message may read
like that ("uses GROUP BY {key}"): each such message is listed below, by module and a
piece of its text, with why it is not SQL. A new hit fails the test: build the SQL with
sqlglot (``dpsense.data.sql_build``), or move it into an engine's compiler."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "dpsense"
ENGINES = SRC / "tables" / "engines"

_KEYWORDS = (
    r"SELECT|FROM|WHERE|JOIN|USING|ON|GROUP BY|ORDER BY|HAVING|LIMIT|UNION( ALL)?|AS|"
    r"CAST|TRY_CAST|CASE|WHEN|THEN|ELSE|AND|OR|NOT|IN|IS|INTO|VALUES|VIEW|TABLE|DESCRIBE|"
    r"PRAGMA|COPY|TO|UPDATE|SET|DELETE|INSERT|CREATE|DROP|ALTER|DISTINCT|BY|WITH"
)
_MARK = "\x00"
"""What an interpolated part is rendered as, in the text the patterns read."""
_SPLICED = re.compile(
    rf"\b({_KEYWORDS})\s*\(?\s*{_MARK}"  # a keyword, then a part: "FROM {view}"
    rf"|{_MARK}\s*\)?\s+(AS|FROM|WHERE|IS|AND|OR|IN)\b"  # a part, then one: "{c} AS v"
    rf"|(?<![=\w])\"{_MARK}\""  # a quoted identifier: '"{name}"' (not an HTML attribute)
)

# Messages (errors and hints of the SQL front end) that quote the user's query back around
# a name: no SQL is run from them. Each entry: (module below src/dpsense, a piece of it).
MESSAGES = {
    # "uses GROUP BY CUBE; list plain columns": names the user's grouping construct
    ("query/_sql_groups.py", "uses GROUP BY {}; list plain columns"),
    # "... groups by x, which is both the alias ...: write GROUP BY y": a hint to the user
    ("query/_sql_groups.py", "which is both the alias of the column"),
    # "reads FROM data.parquet without quotes; quote a file path: FROM 'data.parquet'"
    ("query/sql_joins.py", "without quotes; quote a file path"),
    # "ORDER BY year in the SQL query compares values of different types"
    ("query/sql_plan.py", "in the SQL query compares values of different types"),
}


def _render(node: ast.AST) -> str | None:
    """The text a string-building node makes, each interpolated part as ``_MARK``; None
    for a node that builds no string from parts."""
    if isinstance(node, ast.JoinedStr):
        parts = [v.value if isinstance(v, ast.Constant) else _MARK for v in node.values]
        return "".join(str(p) for p in parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        sides = [node.left, node.right]
        if not any(isinstance(s, ast.Constant) and isinstance(s.value, str) for s in sides):
            return None
        return "".join(
            s.value if isinstance(s, ast.Constant) and isinstance(s.value, str) else _MARK
            for s in sides
        )
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "format"
        and isinstance(node.func.value, ast.Constant)
        and isinstance(node.func.value.value, str)
    ):
        return re.sub(r"\{[^{}]*\}", _MARK, node.func.value.value)
    return None


def spliced_sql(path: Path) -> list[tuple[int, str]]:
    """(line, text) of each string of ``path`` built by splicing parts into SQL."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        text = _render(node)
        if text is not None and _SPLICED.search(text):
            found.append((getattr(node, "lineno", 0), text.replace(_MARK, "{}")))
    return found


def _allowed(module: str, text: str) -> bool:
    return any(module == m and piece in text for m, piece in MESSAGES)


def _modules() -> list[Path]:
    return sorted(p for p in SRC.rglob("*.py") if ENGINES not in p.parents)


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_no_sql_spliced_outside_the_engines(path: Path) -> None:
    module = path.relative_to(SRC).as_posix()
    bad = [(line, t) for line, t in spliced_sql(path) if not _allowed(module, t)]
    assert not bad, (
        f"{module} splices parts into SQL text: "
        + "; ".join(f"line {line}: {t[:80]!r}" for line, t in bad)
        + " (build it with sqlglot, dpsense.data.sql_build, or move it into an engine)"
    )


def test_every_listed_message_is_still_there() -> None:
    """The allow-list names only messages that exist (a stale entry would hide a new
    hit that happens to share its text)."""
    hits = {(p.relative_to(SRC).as_posix(), t) for p in _modules() for _, t in spliced_sql(p)}
    stale = [
        (m, piece) for m, piece in MESSAGES if not any(m == hm and piece in t for hm, t in hits)
    ]
    assert not stale, stale


@pytest.mark.parametrize(
    "code",
    [
        'con.execute(f"SELECT {cols} FROM {view}")',
        'sql = f"CAST({c} AS DOUBLE)"',
        "name = f'\"{column}\"'",
        'sql = "SELECT * FROM " + view',
        'sql = "DESCRIBE SELECT {} FROM src".format(col)',
        'sql = f"{expr} AS v"',
        'con.execute(f"COPY out TO {path} (FORMAT PARQUET)")',
    ],
)
def test_the_scan_finds_spliced_sql(tmp_path: Path, code: str) -> None:
    path = tmp_path / "module.py"
    path.write_text(code + "\n")
    assert spliced_sql(path)


@pytest.mark.parametrize(
    "code",
    [
        'con.execute("SELECT gid, v FROM dpsense_hist WHERE gid BETWEEN ? AND ?", [a, b])',
        'raise InputError(f"The column {name!r} is missing; pass another column.")',
        'text = f"{count} groups"',
    ],
)
def test_the_scan_passes_static_sql_and_prose(tmp_path: Path, code: str) -> None:
    path = tmp_path / "module.py"
    path.write_text(code + "\n")
    assert not spliced_sql(path)
