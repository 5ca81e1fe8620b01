"""``QueryResult``: the releases of several statistics over one bounded table."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from dpsense.methods import Release
from dpsense.shown import parameter
from dpsense.tables.grouped_result import (
    INTERVAL_PARTS,
    GroupedRelease,
    interval_columns,
    rows_frame,
    shown_value,
)

__all__ = ["QueryResult"]


@dataclass(frozen=True)
class QueryResult:
    """Several statistics released as one query, with one total guarantee.

    ``epsilon`` and ``delta`` are what one privacy unit can lose over the whole query
    (every statistic, the partition selection and any private bounds); ``parameters``
    holds the split (``parameters["split"][name]``), the selection's share and the bounds
    receipts. ``res[name]`` is that statistic's :class:`Release` (no ``by``) or
    :class:`GroupedRelease`; iterating yields the names.
    """

    epsilon: float
    delta: float
    by: tuple[str, ...]
    results: Mapping[str, Release | GroupedRelease]
    parameters: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "results", MappingProxyType(dict(self.results)))
        object.__setattr__(self, "parameters", MappingProxyType(dict(self.parameters)))

    def __getitem__(self, name: str) -> Release | GroupedRelease:
        try:
            return self.results[name]
        except KeyError:
            raise KeyError(
                f"{name!r} is not a statistic of this query; its statistics are "
                f"{', '.join(repr(n) for n in self.results)}."
            ) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)

    def __contains__(self, name: object) -> bool:
        return name in self.results

    def keys(self) -> list[str]:
        """The statistics' names, in the query's order."""
        return list(self.results)

    def _groups(self) -> list[Any]:
        """The released groups in order (every statistic has the same ones)."""
        if not self.by:
            return [None]
        first = next(iter(self.results.values()))
        assert isinstance(first, GroupedRelease)
        return [key for key, _ in first]

    def columns(self) -> list[str]:
        """The frame's columns: the by-columns, then per statistic its value, its 95%
        interval ``<name>_low`` / ``<name>_high``, ``<name>_unreliable``,
        ``<name>_accuracy`` and ``<name>_rank_accuracy``."""
        out = list(self.by)
        for name in self.results:
            out += [name, *(f"{name}_{part}" for part in INTERVAL_PARTS)]
        return out

    def to_dicts(self) -> list[dict[str, Any]]:
        """One dict per group (one without ``by``): the by-columns, each statistic's value
        (None when refused), its 95% interval ``<name>_low`` / ``<name>_high``
        (:meth:`Release.interval`), ``<name>_unreliable`` (:meth:`Release.unreliable`),
        its 95% half-width ``<name>_accuracy`` and rank error bar ``<name>_rank_accuracy``
        (None where they would depend on the data)."""
        rows = []
        for key in self._groups():
            parts = key if len(self.by) > 1 else (key,)
            row: dict[str, Any] = dict(zip(self.by, parts, strict=True)) if self.by else {}
            for name, result in self.results.items():
                rel = result[key] if isinstance(result, GroupedRelease) else result
                value = rel.value.tolist() if isinstance(rel.value, np.ndarray) else rel.value
                row[name] = value
                for part, shown in interval_columns(rel).items():
                    row[f"{name}_{part}"] = shown
            rows.append(row)
        return rows

    def to_pandas(self) -> Any:
        """A pandas DataFrame, one row per group (needs pandas)."""
        return rows_frame(self.to_dicts(), self.columns(), "pandas", self)

    def to_arrow(self) -> Any:
        """A pyarrow Table, one row per group (needs pyarrow)."""
        return rows_frame(self.to_dicts(), self.columns(), "arrow", self)

    def __str__(self) -> str:
        head = (
            f"query of {len(self)} statistic{'s' if len(self) != 1 else ''} "
            f"({', '.join(self.results)})"
            + (f" by {', '.join(self.by)}" if self.by else "")
            + f"; total epsilon={self.epsilon:g}, delta={self.delta:g}"
        )
        lines = [head]
        split = self.parameters.get("split", {})
        for name, part in split.items():
            eps, dlt = parameter(part["epsilon"]), parameter(part["delta"])
            how = ""
            if "values" in part:  # several quantiles: how many values, and how released
                together = "jointly" if part["joint"] else "one at a time"
                how = f" ({part['values']} values, released {together})"
            if part.get("released_with"):  # one joint release with other statistics
                how += f" (one joint release with {', '.join(part['released_with'])})"
            lines.append(f"  {name}: epsilon={eps}, delta={dlt}{how}")
        for key in self._groups():
            shown = []
            for name, result in self.results.items():
                rel = result[key] if isinstance(result, GroupedRelease) else result
                shown.append(f"{name}={shown_value(rel)}")
            prefix = f"  {key!r}: " if self.by else "  "
            lines.append(prefix + "; ".join(shown))
        return "\n".join(lines)

    def __repr__(self) -> str:
        by = f", by={list(self.by)!r}" if self.by else ""
        return (
            f"QueryResult(statistics={list(self.results)!r}{by}, groups="
            f"{len(self._groups()) if self.by else 1}, epsilon={self.epsilon:g}, "
            f"delta={self.delta:g})"
        )
