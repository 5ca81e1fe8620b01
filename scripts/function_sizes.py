"""Functions of a source tree over 60 lines (with and without their docstring) and over
10 parameters (``self``/``cls`` not counted): the size targets of the code.

Run: ``python scripts/function_sizes.py src/dpsense``
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

LIMIT_LINES = 60
LIMIT_PARAMS = 10


def _docstring_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    first = node.body[0] if node.body else None
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        return (first.end_lineno or first.lineno) - first.lineno + 1
    return 0


def _parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    a = node.args
    count = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs)
    return count - (1 if a.args and a.args[0].arg in ("self", "cls") else 0)


def measure(root: Path) -> dict[str, list[tuple[int, str]]]:
    """By target, the (size, "path:line name") of each function of ``root`` over it."""
    out: dict[str, list[tuple[int, str]]] = {"lines": [], "code": [], "params": []}
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            name = f"{path.relative_to(root)}:{node.lineno} {node.name}"
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            code = lines - _docstring_lines(node)
            if lines > LIMIT_LINES:
                out["lines"].append((lines, name))
            if code > LIMIT_LINES:
                out["code"].append((code, name))
            if _parameters(node) > LIMIT_PARAMS:
                out["params"].append((_parameters(node), name))
    return out


def main(argv: list[str]) -> None:
    found = measure(Path(argv[1] if len(argv) > 1 else "src/dpsense"))
    titles = {
        "lines": f"over {LIMIT_LINES} lines",
        "code": f"over {LIMIT_LINES} lines without the docstring",
        "params": f"over {LIMIT_PARAMS} parameters",
    }
    for key, title in titles.items():
        print(f"{title}: {len(found[key])}")
        for size, name in sorted(found[key], reverse=True):
            print(f"   {size:4d} {name}")


if __name__ == "__main__":
    main(sys.argv)
