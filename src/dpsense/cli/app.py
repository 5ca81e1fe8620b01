"""The ``dpsense`` command line.

Exit codes: 0 success; 2 bad input or usage (one line on stderr, no traceback); 3 privacy
budget exceeded; 4 ``audit`` found a violation; 1 an internal error (a bug: please report
it).

``analyze``, ``demo`` and ``explore`` print **non-private** diagnostics for the data
owner: local and smooth sensitivities are functions of the raw data and must never be
published. ``lab`` shows them for the bundled example data only, to teach.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Annotated, Any

import typer

from dpsense.cli.messages import cli_text, invoked, option_names, repeated_option
from dpsense.errors import BudgetExceededError, DPSenseError, DPSenseWarning

__all__ = ["app", "main"]

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_INPUT = 2
EXIT_BUDGET = 3
EXIT_VIOLATION = 4  # dpsense audit found a violation (audit_cmd.EXIT_VIOLATION)

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


# Each command's module loads when the command runs (or its help is shown), so that
# `dpsense --version` and `dpsense release --help` do not import every engine and method:
# name -> (module, function, its examples, options of app.command)
_COMMANDS: dict[str, tuple[str, str, str, dict[str, Any]]] = {
    "analyze": ("analyze_cmd", "analyze", "ANALYZE_EXAMPLES", {"no_args_is_help": True}),
    "demo": ("demo_cmd", "demo", "DEMO_EXAMPLES", {}),
    "explore": ("explore_cmd", "explore", "EXPLORE_EXAMPLES", {"no_args_is_help": True}),
    "release": ("release_cmd", "release_command", "RELEASE_EXAMPLES", {"no_args_is_help": True}),
    "ratio": ("ratio_cmd", "ratio_command", "RATIO_EXAMPLES", {"no_args_is_help": True}),
    "bounds": ("bounds_cmd", "bounds_command", "BOUNDS_EXAMPLES", {"no_args_is_help": True}),
    "sql": ("sql_cmd", "sql_command", "SQL_EXAMPLES", {"no_args_is_help": True}),
    "plan": ("plan_cmd", "plan_command", "PLAN_EXAMPLES", {"no_args_is_help": True}),
    "caps": ("caps_cmd", "caps_command", "CAPS_EXAMPLES", {"no_args_is_help": True}),
    "audit": ("audit_cmd", "audit_command", "AUDIT_EXAMPLES", {"no_args_is_help": True}),
    "budget": ("budget_cmd", "budget_app", "", {}),
    "report": ("report_cmd", "report_command", "REPORT_EXAMPLES", {"no_args_is_help": True}),
    "lab": ("lab_cmd", "lab_command", "LAB_EXAMPLES", {"no_args_is_help": True}),
}


def _load(name: str) -> Any:
    """The click command ``name``, built by typer from its module (imported now)."""
    module_name, attribute, examples, options = _COMMANDS[name]
    module = importlib.import_module(f"dpsense.cli.{module_name}")
    target = getattr(module, attribute)
    if isinstance(target, typer.Typer):  # a group of its own (budget)
        group = typer.main.get_command(target)
        group.name = name
        return group
    single = typer.Typer(
        add_completion=False,
        rich_markup_mode=None,
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    single.command(name=name, epilog=getattr(module, examples), **options)(target)
    return typer.main.get_command(single)


class _LazyCommands(Mapping[str, Any]):
    """The root group's subcommands, each built on first access (``click.Group`` reads
    ``commands`` as a mapping: a name test, a lookup, the names in order)."""

    def __init__(self) -> None:
        self._built: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in _COMMANDS:
            raise KeyError(name)
        if name not in self._built:
            self._built[name] = _load(name)
        return self._built[name]

    def __iter__(self) -> Iterator[str]:
        return iter(_COMMANDS)

    def __len__(self) -> int:
        return len(_COMMANDS)


def root_command() -> Any:
    """The click command of ``dpsense``, its subcommands loaded on first use."""
    command = typer.main.get_command(app)
    command.commands = _LazyCommands()  # type: ignore[attr-defined]
    return command


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
    _plain_types(exc)
    message = _one_line(format_message())
    ctx = getattr(exc, "ctx", None)
    command_path = getattr(ctx, "command_path", None)
    if isinstance(command_path, str) and command_path:
        message += f" (see '{command_path} --help')"
    return EXIT_INPUT, message


_TYPE_WORDS = {
    "float_parsing": "give a number",
    "int_parsing": "give a whole number",
    "int_from_float": "give a whole number",
}
"""The type checker's errors (pydantic's error types, the cause typer gives a value it
cannot convert), in the command line's words."""


def _plain_types(exc: BaseException) -> None:
    """Say a value of the wrong type in the command line's words: the error's cause is
    pydantic's ``ValidationError`` (typer converts values with it), whose error type
    (``float_parsing``, ...) picks the words; the sentence it wrote is not read."""
    errors = getattr(exc.__cause__, "errors", None)
    if not callable(errors) or not hasattr(exc, "message"):
        return
    kinds = [e.get("type") for e in errors() if isinstance(e, dict)]
    words = [_TYPE_WORDS[k] for k in kinds if k in _TYPE_WORDS]
    if len(words) == len(kinds) == 1:
        exc.message = words[0]


def _show_warning(options: Callable[[], set[str]]) -> Any:
    """``warnings.showwarning`` for the command line: a dpsense warning is one ``warning:``
    line on stderr in the command line's words; others as Python prints them."""
    default = warnings.showwarning

    def show(message: Any, category: Any, filename: str, lineno: int, *rest: Any) -> None:
        if isinstance(message, DPSenseWarning):
            sys.stderr.write(f"warning: {cli_text(message.message, options())}\n")
            return
        default(message, category, filename, lineno, *rest)

    return show


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
    command = root_command()
    args = list(argv) if argv is not None else sys.argv[1:]
    twice = repeated_option(command, args)
    if twice is not None:
        _error(twice)
        return EXIT_INPUT
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always", DPSenseWarning)
            # the option names load every command: only when a warning shows
            warnings.showwarning = _show_warning(lambda: _options_of(command, args))
            result = command.main(args=args, prog_name="dpsense", standalone_mode=False)
    except BudgetExceededError as exc:
        _error(str(exc))
        return EXIT_BUDGET
    except DPSenseError as exc:
        _error(cli_text(exc.message, _options_of(command, args)))
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


def _options_of(command: Any, args: Sequence[str]) -> set[str]:
    """The long options a message may name: those of the command ``args`` invoke, and
    those of ``dpsense budget`` (a refusal by a ledger says how to create a fitting one)."""
    return option_names(invoked(command, args)[0]) | option_names(command.commands["budget"])


def _error(message: str) -> None:
    sys.stderr.write(f"error: {_one_line(message)}\n")
    sys.stderr.flush()
