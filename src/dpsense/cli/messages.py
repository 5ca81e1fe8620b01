"""Messages in the language of the command line, and one value per option.

The library's errors name Python parameters (``max_evaluations=...``, ``method='auto'``,
"the 'delta' parameter of bounded_ls_mean"); on the command line they are options
(``--max-evaluations``, ``--method auto``, ``--delta``). :func:`cli_speak` rewrites a message
for the options that exist, and leaves anything else as it is. :func:`repeated_option`
finds an option given twice, which click would silently let the last one win.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from dpsense.errors import DECLARE_TYPE_WAY

__all__ = ["cli_speak", "invoked", "option_names", "repeated_option"]

_PYTHON_NAMES = {"ds.private_bounds": "dpsense bounds", "ds.plan": "dpsense plan"}
"""Functions whose command is named instead on the command line."""
_WHERE = {
    "bounded_ls_mean": "--method bounded-ls",
    "ksw_mean": "--method ksw",
    "sample_and_aggregate": "--method sample-aggregate",
    "empirical_sensitivity": "explore",
    "private_ratio": "ratio",
    "private_bounds": "bounds",
}
_METHOD_WORDS = {"ptr": "ptr", "smooth": "smooth", "global": "global", "exponential": "exponential"}


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


def _units(match: re.Match[str]) -> str:
    """privacy_unit={'orders': 'cid', 'items': ('oid', 'orders', 'id')} as the options
    that say it: --privacy-unit orders=cid --privacy-unit items=oid:orders.id"""
    entries = re.findall(
        r"'([^']*)': (?:'([^']*)'|\('([^']*)', '([^']*)', '([^']*)'\))", match.group(0)
    )
    if not entries:
        return match.group(0)
    return " ".join(
        f"--privacy-unit {table}={column}" if column else f"--privacy-unit {table}={k}:{o}.{key}"
        for table, column, k, o, key in entries
    )


def cli_speak(message: str, options: Iterable[str]) -> str:
    """``message`` with Python parameter syntax replaced by the command line's options."""
    opts = set(options)
    out = _speak_parameters(message, opts)
    out = _speak_assignments(out, opts)
    out = _speak_mappings(out, opts)
    return _speak_names(out, opts)


def _speak_parameters(message: str, opts: set[str]) -> str:
    """Privacy units, the WHERE clause, the ledger and "the 'x' parameter" phrases."""

    def parameter(match: re.Match[str]) -> str:
        flag = _option(match.group(1), opts)
        if flag is None:
            return match.group(0)
        named = match.group(3) or ""
        context = _WHERE.get(named, "") or (
            f"--method {_METHOD_WORDS[named]}" if named in _METHOD_WORDS else ""
        )
        return flag + (f" (with {context})" if context.startswith("--") else "")

    message = re.sub(r"\bprivacy_unit=\{[^{}]*\}", _units, message)
    if "--where" not in opts:  # dpsense sql: the query's own WHERE
        message = re.sub(r"[Tt]he 'where' (?:filter|parameter)", "The WHERE clause", message)
    # a ledger is created by its own command on the command line
    message = re.sub(
        r"ds\.Accountant\(ledger='([^']*)', epsilon=\.\.\.\)",
        r"'dpsense budget init \1 --epsilon E'",
        message,
    )
    return re.sub(
        r"[Tt]he '([a-z_]+)' (parameter|option)(?: of (?:the )?((?:dpsense )?[\w.]+)(?: method)?)?",
        parameter,
        message,
    )


def _speak_assignments(out: str, opts: set[str]) -> str:
    """``name='text'`` and ``name=number`` (or ``...``) as ``--name value``."""

    def quoted(match: re.Match[str]) -> str:
        flag = _option(match.group(1), opts)
        return match.group(0) if flag is None else f"{flag} {match.group(2)}"

    out = re.sub(r"\b([a-z_]+)='([^']*)'", quoted, out)

    def assigned(match: re.Match[str]) -> str:
        flag = _option(match.group(1), opts)
        if flag is None:
            return match.group(0)
        value = match.group(2)
        if value == "[...]":
            value = {"--keys": "FILE", "--public": "NAME=PATH", "--table": "NAME=PATH"}.get(
                flag, "..."
            )
        return f"{flag} {value.replace('_', '').replace(',', '')}"

    return re.sub(r"\b([a-z_]+)=(\.\.\.|\[\.\.\.\]|-?[0-9](?:[0-9_,.e+-]*[0-9])?)", assigned, out)


def _speak_mappings(out: str, opts: set[str]) -> str:
    """``keys={...}`` and ``schema={...}`` as their repeated options."""

    def declared(match: re.Match[str]) -> str:  # schema={'age': 'int'} -> --schema age=int
        if "--schema" not in opts:
            return match.group(0)
        pairs = re.findall(r"'([^']*)': '([^']*)'", match.group(0))
        return " ".join(f"--schema {name}={kind}" for name, kind in pairs)

    def listed(match: re.Match[str]) -> str:  # keys={'year': [...]} -> --keys year=A,B
        if "--keys" not in opts:
            return match.group(0)
        names = re.findall(r"'([^']*)': \[\.\.\.\]", match.group(0))
        if len(names) == 1:
            return f"--keys {names[0]}=A,B"
        return "--keys FILE (a CSV or Parquet file with those columns)"

    out = re.sub(r"\bkeys=\{(?:'[^']*': \[\.\.\.\](?:, )?)+\}", listed, out)
    if "--schema" not in opts:
        out = re.sub(DECLARE_TYPE_WAY, "", out)
    return re.sub(r"\bschema=\{(?:'[^']*': '[^']*'(?:, )?)+\}", declared, out)


def _speak_names(out: str, opts: set[str]) -> str:
    """Tuples of levels, bare parameter names and the Python names of the doors."""

    def levels(match: re.Match[str]) -> str:  # p=(0.1, 0.5) -> --p 0.1,0.5
        flag = _option(match.group(1), opts)
        return match.group(0) if flag is None else f"{flag} {match.group(2).replace(' ', '')}"

    out = re.sub(r"\b([a-z_]+)=\(([0-9., ]+)\)", levels, out)
    out = re.sub(r"(--[a-z-]+ [^\s(]+) \(\1\)", r"\1", out)  # "--keys FILE (--keys FILE)"

    def bare(match: re.Match[str]) -> str:  # max_rows_per_unit, 'privacy_unit'
        flag = _option(match.group(1), opts)
        return match.group(0) if flag is None else flag

    out = re.sub(r"'?\b([a-z]+(?:_[a-z]+)+)\b'?", bare, out)
    for name, cli in _PYTHON_NAMES.items():
        out = re.sub(rf"\b{re.escape(name)}(?:\(\.\.\.\)|\b(?!\())", f"'{cli}'", out)
    for name, cli in _WHERE.items():
        out = out.replace(f" of {name}", "" if cli.startswith("--") else f" of {cli}")
    return out


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
