"""Start-up stays light: `import dpsense`, `dpsense --version` and `dpsense release --help`
do not load the engines, SciPy or the methods (timed in benchmarks, checked here by what
is imported, which does not depend on the machine's speed)."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("duckdb", "scipy", "sqlglot", "pyarrow", "pandas", "dpsense.accountant", "dpsense.tables")


def _loaded(code: str) -> set[str]:
    script = f"import sys\n{code}\nprint(' '.join(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", script], check=True, capture_output=True, text=True
    ).stdout
    return set(out.strip().splitlines()[-1].split())


def test_import_dpsense_loads_no_engine() -> None:
    loaded = _loaded("import dpsense")
    assert not {m for m in HEAVY if m in loaded}
    assert "numpy" not in loaded


def test_version_and_release_help_load_no_engine() -> None:
    version = _loaded(
        "from dpsense.cli.app import main\n"
        "import contextlib, io\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['--version'])"
    )
    assert not {m for m in HEAVY if m in version}
    assert "numpy" not in version
    helped = _loaded(
        "from dpsense.cli.app import main\n"
        "import contextlib, io\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['release', '--help'])"
    )
    assert not {m for m in HEAVY if m in helped}
    assert "dpsense.cli.release_cmd" in helped
    assert "dpsense.cli.sql_cmd" not in helped  # other commands are not loaded


def test_every_command_still_loads_and_helps() -> None:
    from dpsense.cli.app import _COMMANDS, root_command

    command = root_command()
    for name in _COMMANDS:
        assert command.commands[name].name == name
