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
    "shown": 1,
    "_docs": 1,
    "noise": 2,
    "statistics": 2,
    "sensitivity": 3,
    "mechanisms": 3,
    "methods": 4,
    "accounting": 4,
    "data": 4,
    "datasets": 4,
    "tables": 5,
    "pipeline": 6,
    "release": 6,
    "sql_release": 6,
    "planning": 6,
    "bounds": 6,
    "caps": 6,
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


# inside tables: the engine-neutral rows (plans, summaries, the embedded store) at the
# bottom, one room per engine above them, the engine interface above the engines, and the
# orchestration (tables/*.py) on top. The two engines never import each other.
TABLE_FLOORS = {
    ("rows",): 1,
    ("engines", "duckdb"): 2,
    ("engines", "spark"): 2,
    ("engines",): 3,
    (): 4,
}
TABLES = SRC / "tables"


def _table_room(parts: tuple[str, ...]) -> tuple[str, ...]:
    """The room of a module of dpsense.tables by its path parts below tables/."""
    folders = parts[:-1] if parts and parts[-1].endswith(".py") else parts
    for size in (2, 1, 0):
        if folders[:size] in TABLE_FLOORS and len(folders) >= size:
            return tuple(folders[:size])
    return ()


def _room_of_module(name: str) -> tuple[str, ...] | None:
    parts = name.split(".")
    if parts[:2] != ["dpsense", "tables"]:
        return None
    below = tuple(parts[2:])
    path = TABLES.joinpath(*below)
    if path.with_suffix(".py").exists():
        return _table_room((*below[:-1], below[-1] + ".py"))
    return _table_room(below)


@pytest.mark.parametrize(
    "path", sorted(TABLES.rglob("*.py")), ids=lambda p: str(p.relative_to(TABLES))
)
def test_tables_floors_point_down(path: Path) -> None:
    here = _table_room(path.relative_to(TABLES).parts)
    for name in _dpsense_imports(path):
        there = _room_of_module(name)
        if there is None or there == here:
            continue
        assert TABLE_FLOORS[there] < TABLE_FLOORS[here], (
            f"tables/{path.relative_to(TABLES)} ({'/'.join(here) or 'tables'}) imports "
            f"{name} ({'/'.join(there) or 'tables'}): rooms of tables point down only"
        )


ENGINE_ROOMS = (SRC / "tables" / "engines" / "duckdb", SRC / "tables" / "engines" / "spark")


@pytest.mark.parametrize("path", sorted(SRC.rglob("*.py")), ids=lambda p: str(p.relative_to(SRC)))
def test_only_the_engines_choose_an_engine(path: Path) -> None:
    """Outside tables/engines, no module imports an engine's own modules or PySpark's
    DataFrame machinery: the query layer is written once, against ``tables.engines``."""
    if any(room in path.parents for room in ENGINE_ROOMS):
        return
    for name in _dpsense_imports(path):
        assert not name.startswith(
            ("dpsense.tables.engines.duckdb", "dpsense.tables.engines.spark")
        ) or (path.parent == SRC / "tables" / "engines"), (
            f"{path.relative_to(SRC)} imports {name}: go through dpsense.tables.engines"
        )


def _private_names_from_other_packages(path: Path) -> list[str]:
    """``from dpsense.<other package>... import _name``: a private name taken across a
    package's wall."""
    here = path.relative_to(SRC).parts[0].removesuffix(".py")
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not (isinstance(node, ast.ImportFrom) and node.module and node.level == 0):
            continue
        parts = node.module.split(".")
        if parts[0] != "dpsense" or len(parts) < 2 or parts[1] == here:
            continue
        found += [
            f"{node.module}.{a.name}"
            for a in node.names
            if a.name.startswith("_") and not a.name.startswith("__")
        ]
    return found


@pytest.mark.parametrize("path", sorted(SRC.rglob("*.py")), ids=lambda p: str(p.relative_to(SRC)))
def test_no_private_name_crosses_a_package(path: Path) -> None:
    """A package uses another through its public names: a private name (``_x``) is for its
    own package only."""
    assert _private_names_from_other_packages(path) == []
