"""Neighbouring-dataset relations.

* ``"add-remove"`` (unbounded DP, the default): a neighbour adds or removes one record, so
  the number of records ``n`` is private.
* ``"substitute"`` (bounded DP): a neighbour replaces one record; ``n`` is public.

Under add-remove a substitution is two steps, so distances are not interchangeable.
"""

from __future__ import annotations

from typing import Final, Literal, TypeAlias

from dpsense.errors import InputError, Param

__all__ = ["ADD_REMOVE", "NEIGHBOURS", "SUBSTITUTE", "Neighbours", "validate_neighbours"]

Neighbours: TypeAlias = Literal["add-remove", "substitute"]
ADD_REMOVE: Final = "add-remove"
SUBSTITUTE: Final = "substitute"
NEIGHBOURS: Final[tuple[Neighbours, ...]] = (ADD_REMOVE, SUBSTITUTE)

_ALIASES: Final[dict[str, Neighbours]] = {
    "add-remove": ADD_REMOVE,
    "add_remove": ADD_REMOVE,
    "addremove": ADD_REMOVE,
    "unbounded": ADD_REMOVE,
    "substitute": SUBSTITUTE,
    "substitution": SUBSTITUTE,
    "replace": SUBSTITUTE,
    "bounded": SUBSTITUTE,
}


def validate_neighbours(neighbours: object, *, where: str = "dpsense") -> Neighbours:
    """Return the canonical name of a neighbour relation or raise :class:`InputError`.

    ``"unbounded"`` and ``"bounded"`` (the terms of Kifer and Machanavajjhala 2011) are
    accepted as aliases.
    """
    if isinstance(neighbours, str):
        key = neighbours.strip().lower()
        if key in _ALIASES:
            return _ALIASES[key]
    raise InputError(
        Param("neighbours", of=where),
        f" must be 'add-remove' or 'substitute'. Got {neighbours!r} instead.",
    )
