"""The ``dpsense`` command-line interface.

The console script is ``dpsense.cli.app:main``; the typer application is
``dpsense.cli.app.app`` (not re-exported here, so that ``dpsense.cli.app`` stays the
module).
"""

from __future__ import annotations

from dpsense.cli.app import main

__all__ = ["main"]
