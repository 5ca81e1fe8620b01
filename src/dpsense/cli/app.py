"""The ``dpsense`` command line.

Exit codes: 0 success; 2 bad input or usage (one line on stderr, no traceback); 3 privacy
budget exceeded; 4 ``audit`` found a violation; 1 an internal error (a bug: please report
it).

``analyze``, ``demo`` and ``explore`` print **non-private** diagnostics for the data
owner: local and smooth sensitivities are functions of the raw data and must never be
published. ``lab`` shows them for the bundled example data only, to teach.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Annotated

import typer

from dpsense.cli.analyze_cmd import ANALYZE_EXAMPLES, analyze
from dpsense.cli.audit_cmd import AUDIT_EXAMPLES, audit_command
from dpsense.cli.audit_cmd import EXIT_VIOLATION as AUDIT_VIOLATION
from dpsense.cli.bounds_cmd import BOUNDS_EXAMPLES, bounds_command
from dpsense.cli.budget_cmd import budget_app
from dpsense.cli.demo_cmd import DEMO_EXAMPLES, demo
from dpsense.cli.explore_cmd import EXPLORE_EXAMPLES, explore
from dpsense.cli.lab_cmd import LAB_EXAMPLES, lab_command
from dpsense.cli.messages import cli_speak, option_names, repeated_option
from dpsense.cli.ratio_cmd import RATIO_EXAMPLES, ratio_command
from dpsense.cli.release_cmd import RELEASE_EXAMPLES, release_command
from dpsense.cli.report_cmd import REPORT_EXAMPLES, report_command
from dpsense.cli.sql_cmd import SQL_EXAMPLES, sql_command
from dpsense.errors import BudgetExceededError, DPSenseError

__all__ = ["app", "main"]

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_INPUT = 2
EXIT_BUDGET = 3
EXIT_VIOLATION = AUDIT_VIOLATION  # dpsense audit found a violation (4)

app = typer.Typer(
    name="dpsense",
    help=(
        "Differentially private statistics that spend noise where the data needs it: "
        "global, local, distance-k and smooth sensitivity."
    ),
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog=(
        "Exit codes: 0 success (a propose-test-release refusal included: it is the "
        "private answer, and its budget is spent); 2 bad input or usage; 3 privacy budget "
        "exceeded; 4 dpsense audit found a violation; 1 an internal error (a bug: please "
        "report it).\n\n"
        "Examples:\n\n\b\n"
        "  dpsense demo\n"
        "  dpsense release census.csv -c age -s median --lower 0 --upper 100 --epsilon 1\n"
        "  dpsense release --help\n"
    ),
)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        typer.echo(f"dpsense {version('dpsense')}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Differentially private statistics that spend noise where the data needs it.

    Exit codes: 0 success (a propose-test-release refusal included: it is the private
    answer, and its budget is spent); 2 bad input or usage; 3 privacy budget exceeded;
    4 ``dpsense audit`` found a violation; 1 an internal error (a bug: please report it).
    """


app.command(no_args_is_help=True, epilog=ANALYZE_EXAMPLES)(analyze)
app.command(epilog=DEMO_EXAMPLES)(demo)
app.command(no_args_is_help=True, epilog=EXPLORE_EXAMPLES)(explore)
app.command(name="release", no_args_is_help=True, epilog=RELEASE_EXAMPLES)(release_command)
app.command(name="ratio", no_args_is_help=True, epilog=RATIO_EXAMPLES)(ratio_command)
app.command(name="bounds", no_args_is_help=True, epilog=BOUNDS_EXAMPLES)(bounds_command)
app.command(name="sql", no_args_is_help=True, epilog=SQL_EXAMPLES)(sql_command)
app.command(name="audit", no_args_is_help=True, epilog=AUDIT_EXAMPLES)(audit_command)
app.add_typer(budget_app, name="budget")
app.command(name="report", no_args_is_help=True, epilog=REPORT_EXAMPLES)(report_command)
app.command(name="lab", no_args_is_help=True, epilog=LAB_EXAMPLES)(lab_command)


# ------------------------------------------------------------------------ entry point


def _one_line(message: str) -> str:
    return " ".join(message.split())


def _usage_error(exc: BaseException) -> tuple[int, str] | None:
    """Exit code and message of a command-line parsing error, if ``exc`` is one.

    Recognised by shape, so this works whether typer uses click or its vendored copy.
    """
    format_message: Callable[[], str] | None = getattr(exc, "format_message", None)
    exit_code = getattr(exc, "exit_code", None)
    if format_message is None or not isinstance(exit_code, int):
        return None
    if type(exc).__name__ == "NoArgsIsHelpError":
        return EXIT_INPUT, format_message()
    message = _one_line(format_message())
    ctx = getattr(exc, "ctx", None)
    command_path = getattr(ctx, "command_path", None)
    if isinstance(command_path, str) and command_path:
        message += f" (see '{command_path} --help')"
    return EXIT_INPUT, message


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return its exit code.

    Every :class:`~dpsense.errors.InputError` (and other
    :class:`~dpsense.errors.DPSenseError`) and every usage error becomes one line on
    stderr and exit code 2; :class:`~dpsense.errors.BudgetExceededError` gives exit
    code 3. No traceback is printed.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments (without the program name); ``sys.argv[1:]`` by default.

    Returns
    -------
    int
        The exit code.
    """
    command = typer.main.get_command(app)
    args = list(argv) if argv is not None else sys.argv[1:]
    twice = repeated_option(command, args)
    if twice is not None:
        _error(twice)
        return EXIT_INPUT
    try:
        result = command.main(args=args, prog_name="dpsense", standalone_mode=False)
    except BudgetExceededError as exc:
        _error(str(exc))
        return EXIT_BUDGET
    except DPSenseError as exc:
        _error(cli_speak(str(exc), option_names(command)))
        return EXIT_INPUT
    except KeyboardInterrupt:
        _error("interrupted")
        return 130
    except Exception as exc:
        usage = _usage_error(exc)
        if usage is not None:
            code, message = usage
            if "\n" in message:  # help text for a bare command
                sys.stderr.write(message.rstrip() + "\n")
            else:
                _error(message)
            return code
        if type(exc).__name__ == "Abort":
            _error("aborted")
            return EXIT_INTERNAL
        # Messages of unexpected errors may quote data, so only the type is shown.
        _error(f"internal error ({type(exc).__name__}); please report this as a bug")
        return EXIT_INTERNAL
    return result if isinstance(result, int) else EXIT_OK


def _error(message: str) -> None:
    sys.stderr.write(f"error: {_one_line(message)}\n")
    sys.stderr.flush()
