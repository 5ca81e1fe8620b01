"""The stored ledgers of tests/accounting/fixtures: copied into a test's folder, and the
digest that shows a ledger file was left as it was."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def copy_fixture(tmp_path: Path, name: str) -> Path:
    target = tmp_path / name
    shutil.copyfile(FIXTURES / name, target)
    return target
