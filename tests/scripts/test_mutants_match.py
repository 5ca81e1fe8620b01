"""Every mutant of scripts/mutation_check.py still applies to the source it names.

A refactor that moves the mutated line makes its mutant stale: the mutation check reports
it when run, but nothing runs it in CI. This test does, cheaply: each edit's text must occur
exactly once in its file (and the named test files must exist), so a stale mutant fails the
normal suite instead of silently protecting nothing.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _mutants() -> tuple:
    spec = importlib.util.spec_from_file_location(
        "mutation_check", ROOT / "scripts" / "mutation_check.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return tuple(module.MUTANTS)


MUTANTS = _mutants()


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.name)
def test_the_mutant_applies_once_and_names_real_tests(mutant: object) -> None:
    source = (ROOT / mutant.path).read_text()  # type: ignore[attr-defined]
    for old, _new in mutant.edits:  # type: ignore[attr-defined]
        assert source.count(old) == 1, f"{mutant.name}: {old.strip()[:70]!r} is stale"  # type: ignore[attr-defined]
    for test_file in mutant.tests:  # type: ignore[attr-defined]
        assert (ROOT / test_file).is_file(), test_file
