"""Per release in the report: the released values as a CSV download, and the call that
makes the same release again (on the same data, with fresh noise).

Both read the release log's public outputs only (values, intervals, group names that were
released, the receipt's parameters): post-processing of released values.
"""

from __future__ import annotations

import base64
import csv
import io
from collections.abc import Mapping, Sequence
from typing import Any

from dpsense.statistics.names import class_name

__all__ = ["csv_href", "reproduce_code"]


def _cell(value: Any) -> Any:
    if isinstance(value, list):
        return " ".join(str(v) for v in value)
    return "" if value is None else value


def released_csv(outputs: Mapping[str, Any]) -> str:
    """One row per statistic and group: the by-columns, then the value, its 95% interval
    and accuracy, and whether it was refused or is unreliable."""
    stats = list(outputs.get("statistics") or [])
    by: list[str] = []
    for stat in stats:
        by += [b for b in stat.get("by") or [] if b not in by]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["statistic", *by, "value", "low", "high", "unreliable", "accuracy", "refused"])
    for stat in stats:
        name = stat.get("name") or stat.get("statistic") or "release"
        for row in stat.get("rows") or []:
            group = row.get("group") or {}
            writer.writerow(
                [
                    name,
                    *(_cell(group.get(b)) for b in by),
                    _cell(row.get("value")),
                    _cell(row.get("low")),
                    _cell(row.get("high")),
                    bool(row.get("unreliable")),
                    _cell(row.get("accuracy")),
                    bool(row.get("refused")),
                ]
            )
    return out.getvalue()


def csv_href(outputs: Mapping[str, Any]) -> str:
    """A ``data:`` link to :func:`released_csv` (the page stays one offline file)."""
    encoded = base64.b64encode(released_csv(outputs).encode("utf-8")).decode("ascii")
    return f"data:text/csv;charset=utf-8;base64,{encoded}"


def _number(value: Any) -> str:
    return repr(float(value)) if not float(value).is_integer() else repr(int(value))


def _statistic_code(stat: Mapping[str, Any]) -> tuple[str, bool]:
    """``ds.Median(0, 100)`` for the stored statistic, and whether its bounds were found
    privately (then the statistic is built without them)."""
    name = str(stat.get("statistic") or "")  # "quantiles(p=0.1,0.9)", "trimmed-mean(trim=5)"
    kind = name.split("(")[0].strip()
    if name == "count(distinct units)":
        return "ds.Count(distinct_units=True)", False
    cls = class_name(kind)
    if cls is None:
        return f"ds.make_statistic({kind!r})", False
    source = stat.get("bounds_source") or {}
    private = isinstance(source, Mapping) and source.get("source") == "private"
    args: list[str] = []
    p = stat.get("p")
    if kind == "quantile" and p is not None:
        args.append(_number(p))
    if kind == "quantiles" and p is not None:
        args.append("[" + ", ".join(_number(v) for v in p) + "]")
    if kind == "trimmed-mean":
        trim = name.partition("trim=")[2].rstrip(")")
        if not trim.isdigit():
            return f"ds.make_statistic({kind!r})", False
        args.append(trim)
    bounds = stat.get("bounds")
    if kind != "count" and bounds is not None and not private:
        args += [_number(bounds[0]), _number(bounds[1])]
    return f"ds.{cls}({', '.join(args)})", private


def reproduce_code(outputs: Mapping[str, Any], epsilon: float, delta: float, dataset: str) -> str:
    """Python that makes the same release of the same data again (``data``: the dataset
    the ledger names), with fresh noise."""
    stats: Sequence[Mapping[str, Any]] = list(outputs.get("statistics") or [])
    if not stats:
        return ""
    lines = ["import dpsense as ds", "", "release = ds.release("]
    label = f"  # {dataset}" if dataset else ""
    lines.append(f"    data,{label}")
    private = False
    if len(stats) == 1 and not stats[0].get("share"):
        stat = stats[0]
        code, private = _statistic_code(stat)
        lines.append(f"    {code},")
        if stat.get("column"):
            lines.append(f"    column={stat['column']!r},")
        method = stat.get("method")
        if method and method not in ("global",):
            lines.append(f"    method={method!r},")
    else:
        lines.append("    {")
        for stat in stats:
            code, found = _statistic_code(stat)
            private = private or found
            name = stat.get("name") or stat.get("statistic")
            item = code if stat.get("column") is None else f"({stat['column']!r}, {code})"
            lines.append(f"        {name!r}: {item},")
        lines.append("    },")
    first = stats[0]
    by = list(first.get("by") or [])
    if by:
        lines.append(f"    by={by[0]!r}," if len(by) == 1 else f"    by={by!r},")
        if first.get("selection") == "public keys":
            keys = [
                tuple((r.get("group") or {}).get(b) for b in by) for r in first.get("rows") or []
            ]
            shown = [k[0] for k in keys] if len(by) == 1 else keys
            lines.append(f"    keys={shown!r},")
    guarantee = outputs.get("guarantee") or {}
    unit = guarantee.get("privacy_unit")
    if unit:
        lines.append(f"    privacy_unit={unit!r},")
        lines.append(f"    max_rows_per_unit={int(guarantee.get('max_rows_per_unit', 1))},")
        lines.append(f"    max_groups_per_unit={int(guarantee.get('max_groups_per_unit', 1))},")
    if outputs.get("where"):
        lines.append(f"    where={outputs['where']!r},")
    if private:
        sources = [s["bounds_source"] for s in stats if isinstance(s.get("bounds_source"), Mapping)]
        source: Mapping[str, Any] = sources[0] if sources else {}
        lines.append('    bounds="private",')
        if source.get("share") is not None:
            lines.append(f"    bounds_share={float(source['share'])!r},")
    lines.append(f"    epsilon={epsilon!r},")
    if delta:
        lines.append(f"    delta={delta!r},")
    lines.append(")")
    return "\n".join(lines)
