"""``python -m dpsense``: the command line."""

from __future__ import annotations

from dpsense.cli.app import main

if __name__ == "__main__":
    raise SystemExit(main())
