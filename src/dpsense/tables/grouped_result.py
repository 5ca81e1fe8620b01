"""``GroupedRelease``: one receipt per group, with one total guarantee."""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from dpsense.defaults import ACCURACY_ALPHA
from dpsense.errors import InputError
from dpsense.methods import Release
from dpsense.methods._release import format_value
from dpsense.shown import significant

__all__ = ["INTERVAL_PARTS", "GroupedRelease", "interval_columns", "rows_frame"]


@dataclass(frozen=True)
class GroupedRelease:
    """The releases of one statistic per group, with one total guarantee.

    ``epsilon`` and ``delta`` are what one privacy unit can lose over the whole grouped
    release; ``parameters`` says how they were split (selection, per group). Iterating
    yields ``(key, Release)``; ``gr[key]`` returns one group's Release.
    """

    epsilon: float
    delta: float
    by: tuple[str, ...]
    selection: str
    groups: Mapping[Any, Release]
    parameters: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "groups", MappingProxyType(dict(self.groups)))
        object.__setattr__(self, "parameters", MappingProxyType(dict(self.parameters)))

    def __len__(self) -> int:
        return len(self.groups)

    def __iter__(self) -> Iterator[tuple[Any, Release]]:
        return iter(self.groups.items())

    def __getitem__(self, key: Any) -> Release:
        try:
            return self.groups[key]
        except KeyError:
            raise KeyError(
                f"{key!r} is not a released group (released: public keys, or the groups "
                "private selection kept)."
            ) from None

    def __contains__(self, key: object) -> bool:
        return key in self.groups

    def to_dicts(self) -> list[dict[str, Any]]:
        """One dict per group: the by-columns, value, refused, method, noise, scale, the
        95% interval low / high (:meth:`Release.interval`), unreliable, accuracy (the 95%
        half-width of :meth:`Release.accuracy`, None where it would
        depend on the data) and rank_accuracy (:meth:`Release.rank_accuracy` at 95%)."""
        rows = []
        for key, rel in self.groups.items():
            parts = key if len(self.by) > 1 else (key,)
            row: dict[str, Any] = dict(zip(self.by, parts, strict=True))
            value = rel.value.tolist() if isinstance(rel.value, np.ndarray) else rel.value
            row.update(
                value=value,
                refused=rel.refused,
                method=rel.method,
                noise=rel.noise,
                scale=rel.scale,
                **interval_columns(rel),
            )
            rows.append(row)
        return rows

    def to_pandas(self) -> Any:
        """A pandas DataFrame, one row per group (needs pandas)."""
        return rows_frame(self.to_dicts(), [*self.by, *_RESULT_COLUMNS], "pandas", self)

    def to_arrow(self) -> Any:
        """A pyarrow Table, one row per group (needs pyarrow)."""
        return rows_frame(self.to_dicts(), [*self.by, *_RESULT_COLUMNS], "arrow", self)

    def __str__(self) -> str:
        head = (
            f"{len(self)} groups by {', '.join(self.by)} ({self.selection}); "
            f"total epsilon={self.epsilon:g}, delta={self.delta:g}"
        )
        lines = [head]
        for key, rel in self.groups.items():
            lines.append(f"  {key!r}: {shown_value(rel)}")
        return "\n".join(lines)


def rows_frame(rows: list[dict[str, Any]], columns: list[str], kind: str, owner: object) -> Any:
    """``rows`` as a pandas DataFrame (``kind="pandas"``) or a pyarrow Table with
    ``columns``; an InputError saying how to install the library when it is missing."""
    library = "pandas" if kind == "pandas" else "pyarrow"
    try:
        module = importlib.import_module(library)
    except ImportError:
        name = f"{type(owner).__name__}.to_{kind}"
        raise InputError(f"{name} needs {library}: pip install {library}.") from None
    if kind == "pandas":
        return module.DataFrame(rows, columns=columns)
    return module.table({n: [r[n] for r in rows] for n in columns})


INTERVAL_PARTS = ("low", "high", "unreliable", "accuracy", "rank_accuracy")
"""The columns of a release's accuracy, at 95%, in every table of results."""
_RESULT_COLUMNS = ("value", "refused", "method", "noise", "scale", *INTERVAL_PARTS)


def interval_columns(rel: Release) -> dict[str, Any]:
    """A release's 95% interval (low, high: None without one), whether it is unreliable
    (wider than half the bounds), its 95% half-width and rank error bar."""
    interval = rel.interval(ACCURACY_ALPHA)
    low, high = (None, None) if interval is None else interval
    return {  # several quantiles: a list per end, one interval per level
        "low": low.tolist() if isinstance(low, np.ndarray) else low,
        "high": high.tolist() if isinstance(high, np.ndarray) else high,
        "unreliable": rel.unreliable(ACCURACY_ALPHA),
        "accuracy": rel.accuracy(ACCURACY_ALPHA),
        "rank_accuracy": rel.rank_accuracy(ACCURACY_ALPHA),
    }


def shown_value(rel: Release) -> str:
    if rel.refused:
        return "refused"
    a = rel.accuracy(ACCURACY_ALPHA)
    if a is not None:
        return format_value(rel.value) + f" ± {significant(a, 3)} (95%)"
    t = rel.rank_accuracy(ACCURACY_ALPHA)
    return format_value(rel.value) + ("" if t is None else f" ± {t} ranks (95%)")
