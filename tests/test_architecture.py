"""The layers of DESIGN.md: a lower layer never imports a higher one."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "dpsense"

# layer of each top-level module or package of dpsense (DESIGN.md, "Layers")
LAYERS = {
    "errors": 1,
    "params": 1,
    "neighbours": 1,
    "_arrays": 1,
    "_progress": 1,
    "_exact_budget": 1,
    "defaults": 1,
    "noise": 2,
    "statistics": 2,
    "sensitivity": 3,
    "mechanisms": 3,
    "methods": 4,
    "accounting": 4,
    "data": 4,
    "datasets": 4,
    "tables": 5,
    "release": 6,
    "sql_release": 6,
    "bounds": 6,
    "bounds_in_release": 6,
    "accountant": 6,
    "cli": 6,
    "plots": 6,
    "pages": 6,
    "query": 6,
    "report": 6,
    "lab": 6,
    "audit": 6,
    "__init__": 6,
    "__main__": 6,
}


def _layer_of(path: Path) -> int:
    part = path.relative_to(SRC).parts[0].removesuffix(".py")
    return LAYERS[part]


def _dpsense_imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        found += [n for n in names if n == "dpsense" or n.startswith("dpsense.")]
    return found


@pytest.mark.parametrize("path", sorted(SRC.rglob("*.py")), ids=lambda p: str(p.relative_to(SRC)))
def test_no_upward_imports(path: Path) -> None:
    here = _layer_of(path)
    for name in _dpsense_imports(path):
        parts = name.split(".")
        if len(parts) == 1:
            assert here == 5, f"{path.name} imports the top-level package"
            continue
        target = LAYERS[parts[1]]
        assert target <= here, f"{path.relative_to(SRC)} (layer {here}) imports {name} ({target})"
