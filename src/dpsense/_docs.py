"""Docstrings assembled from parts, so that a long section can stand beside its function.

A docstring may hold a line ``<<name>>``, alone and indented as the section it stands in;
:func:`doc_parts` replaces it, when the function is defined, with the text ``name``
indented the same, so that ``help()``, doctests and the documentation read the whole
docstring.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable
from typing import Final, TypeVar

__all__ = ["NEIGHBOURS_AND_RNG", "doc_parts"]

NEIGHBOURS_AND_RNG: Final = """\
neighbours : {"add-remove", "substitute"}, default "add-remove"
    The neighbour relation.
rng : None, int, numpy.random.Generator or RandomSource, optional
    None uses the OS CSPRNG; a seed is reproducible but insecure (it warns).
"""
"""The ``neighbours`` and ``rng`` parameters of a release of one column by one method."""

_F = TypeVar("_F", bound=Callable[..., object])
_FIELD = re.compile(r"^([ ]*)<<(\w+)>>$", re.MULTILINE)


def doc_parts(**parts: str) -> Callable[[_F], _F]:
    """A decorator that puts each of ``parts`` (dedented text) in its ``<<name>>`` line of
    the function's docstring; every part must have its line, and every line its part."""

    def fill(func: _F) -> _F:
        doc = func.__doc__
        if doc is None:  # python -OO
            return func
        named = set(_FIELD.findall(doc))
        if {name for _, name in named} != set(parts):
            raise ValueError(f"the parts of {func.__qualname__}'s docstring do not match")

        def part(match: re.Match[str]) -> str:
            text = textwrap.dedent(parts[match.group(2)]).strip("\n")
            return textwrap.indent(text, match.group(1))

        func.__doc__ = _FIELD.sub(part, doc)
        return func

    return fill
