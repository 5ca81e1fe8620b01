"""Messages in the language of the command line, and one value per option.

The library's errors are built of text and tokens (:class:`~dpsense.errors.Message`): a
parameter, an assignment, a mapping of units, keys or types, a door, a clause that needs
an option. Python prints them as Python (``max_evaluations=...``, ``method='auto'``, "the
'delta' parameter of bounded_ls_mean"); :func:`cli_text` renders the same tokens as the
options of the command that runs (``--max-evaluations``, ``--method auto``, ``--delta
(with --method bounded-ls)``), and a token whose option the command lacks as Python says
it. No text is rewritten. :func:`repeated_option` finds an option given twice, which click
would silently let the last one win.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from dpsense.errors import (
    ANY,
    MANY,
    Assign,
    Door,
    Keys,
    Message,
    Name,
    OnlyWith,
    Param,
    Part,
    Schema,
    Units,
)

__all__ = ["cli_text", "invoked", "option_names", "repeated_option"]

_DOORS = {
    "ds.private_bounds": "dpsense bounds",
    "ds.plan": "dpsense plan",
    "ds.Accountant": "dpsense budget init {subject} --epsilon E",
}
"""Functions whose command is named instead on the command line (a ledger is created by
its own command)."""
_WHERE = {
    "bounded_ls_mean": "--method bounded-ls",
    "ksw_mean": "--method ksw",
    "sample_and_aggregate": "--method sample-aggregate",
    "empirical_sensitivity": "explore",
    "private_ratio": "ratio",
    "private_bounds": "bounds",
}
"""Functions of the library and the command (or method option) that stands for them."""
_METHOD_WORDS = {"ptr": "ptr", "smooth": "smooth", "global": "global", "exponential": "exponential"}
_LISTS = {"--keys": "FILE", "--public": "NAME=PATH", "--table": "NAME=PATH"}
"""What a list of values (``keys=[...]``) is given as, by option."""
_ABSENT = {"where": "WHERE clause"}
"""A parameter that a command without its option says in other words (``dpsense sql``:
the query's own WHERE)."""


def option_names(command: Any) -> set[str]:
    """Every long option of a click command and its subcommands, e.g. ``--epsilon``, and
    the names of its arguments in capitals (``QUERY``)."""
    names: set[str] = set()
    for param in getattr(command, "params", []):
        names.update(o for o in getattr(param, "opts", []) if o.startswith("--"))
        if getattr(param, "param_type_name", "") == "argument" and param.name:
            names.add(param.name.upper())
    for sub in getattr(command, "commands", {}).values():
        names |= option_names(sub)
    return names


_ALIASES = {
    "public_tables": "--public",
    "tables": "--table",
    "ps": "--p",
    "statistic": "--statistics",  # explore's list of statistics
}
"""Python parameters whose option is named otherwise."""


def _option(name: str, options: set[str]) -> str | None:
    flag = "--" + name.replace("_", "-")
    if flag in options:
        return flag
    if _ALIASES.get(name) in options:
        return _ALIASES[name]
    if name.upper() in options:  # an argument: QUERY, DATA, LEDGER
        return name.upper()
    if name == "hamming" and "--max-hamming" in options:
        return "--max-hamming"
    return None


def cli_text(message: Message, options: Iterable[str]) -> str:
    """``message`` in the command line's words, for a command with ``options``."""
    opts = set(options)
    return "".join(_part(part, opts) for part in message.parts)


def _part(part: Part, opts: set[str]) -> str:
    if isinstance(part, str):
        return part
    if isinstance(part, Param):
        return _param(part, opts)
    if isinstance(part, Assign):
        return _assign(part, opts)
    if isinstance(part, Units):
        return " ".join(
            f"--privacy-unit {table}={unit}"
            if isinstance(unit, str)
            else f"--privacy-unit {table}={unit[0]}:{unit[1]}.{unit[2]}"
            for table, unit in part.entries
        )
    if isinstance(part, Keys):
        return _keys(part, opts)
    if isinstance(part, Schema):
        if "--schema" not in opts:
            return part.python()
        return " ".join(f"--schema {name}={kind}" for name, kind in part.entries)
    if isinstance(part, Door):
        command = _DOORS.get(part.name)
        return part.python() if command is None else f"'{command.format(subject=part.subject)}'"
    if isinstance(part, OnlyWith):
        if _option(part.option, opts) is None:
            return ""
        return "".join(_part(p, opts) for p in part.parts)
    return _name(part, opts)


def _param(param: Param, opts: set[str]) -> str:
    """``--delta (with --method bounded-ls)``; as Python says it without the option."""
    flag = _option(param.name, opts) if param.word in ("parameter", "option") else None
    if flag is not None:
        context = _WHERE.get(param.of, "")
        method = _METHOD_WORDS.get(param.method or param.of)
        context = f"--method {method}" if method else context
        return flag + (f" (with {context})" if context.startswith("--") else "")
    named = param.named()
    if param.name in _ABSENT and f"--{param.name}" not in opts:
        named = f"The {_ABSENT[param.name]}"
    if param.method or param.of not in _WHERE:
        return named + param.where()
    command = _WHERE[param.of]
    return named + ("" if command.startswith("--") else f" of {command}")


def _assign(assign: Assign, opts: set[str]) -> str:
    """``--method ksw``, ``--approx-delta 1e-5``, ``--delta ...``, ``--keys FILE``."""
    flag = _option(assign.name, opts)
    if flag is None:
        return assign.python()
    value = assign.value if assign.cli is None else assign.cli
    if not assign.quoted and value == MANY:
        value = _LISTS.get(flag, ANY)
    return f"{flag} {value}"


def _keys(keys: Keys, opts: set[str]) -> str:
    """``--keys year=A,B``; for several columns, a file of them."""
    if "--keys" not in opts:
        return keys.python()
    if len(keys.names) == 1:
        return f"--keys {keys.names[0]}=A,B"
    return "--keys FILE (a CSV or Parquet file with those columns)"


def _name(name: Name, opts: set[str]) -> str:
    flag = _option(name.name, opts)
    return name.python() if flag is None else flag


def invoked(command: Any, args: Sequence[str]) -> tuple[Any, list[str]]:
    """The (sub)command ``args`` invoke, and the arguments that follow its name."""
    node = command
    rest = list(args)
    while rest and getattr(node, "commands", None):
        tokens = [a for a in rest if not a.startswith("-")]
        if not tokens or tokens[0] not in node.commands:
            break
        rest = rest[rest.index(tokens[0]) + 1 :]
        node = node.commands[tokens[0]]
    return node, rest


def repeated_option(command: Any, args: Sequence[str]) -> str | None:
    """The first option of the invoked command given more than once, or None."""
    node, rest = invoked(command, args)
    aliases: dict[str, str] = {}
    for param in getattr(node, "params", []):
        if getattr(param, "multiple", False):
            continue  # a list option (--bounds a=0:1 --bounds b=0:2) is meant to repeat
        opts = [*getattr(param, "opts", []), *getattr(param, "secondary_opts", [])]
        long = next((o for o in opts if o.startswith("--")), opts[0] if opts else "")
        for opt in opts:
            aliases[opt] = long
    seen: dict[str, str] = {}
    for arg in rest:
        if arg == "--":
            break
        flag = arg.split("=", 1)[0]
        name = aliases.get(flag)
        if name is None:
            continue
        if name in seen:
            return f"{name} is given twice; give each option once."
        seen[name] = flag
    return None
