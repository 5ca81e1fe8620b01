"""What the report shows, as plain data: the budget, each release and its guarantee.

Built from the release log only (:meth:`dpsense.Accountant.entries`): labels, charges and
the public outputs each charge stored. Nothing here reads data, so nothing here can show
a data value, a row count or a sensitivity (docs/report.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dpsense.accounting import LedgerEntry
from dpsense.report.reproduce import csv_href, reproduce_code
from dpsense.shown import caps_covered, decimals_of, power_of_two, rounded, significant

__all__ = [
    "BudgetView",
    "ReleaseView",
    "RowView",
    "StatisticView",
    "budget_kind_words",
    "format_number",
    "guarantee_words",
    "release_views",
]


def format_number(value: Any) -> str:
    """A stored value as shown: 6 significant digits, ``[a, b]`` for several values,
    "n/a" for NaN, "inf" for infinities (the CLI's format)."""
    if value is None:
        return "—"
    if isinstance(value, list):
        return "[" + ", ".join(format_number(v) for v in value) + "]"
    if isinstance(value, str):  # non-finite numbers are stored as text
        return "n/a" if value == "nan" else value
    number = float(value)
    if math.isnan(number):
        return "n/a"
    return significant(number)


@dataclass(frozen=True)
class BudgetView:
    """The budget: totals, spent, remaining (epsilon, delta; rho for a zCDP budget)."""

    source: str
    kind: str
    """ "pure", "approximate" or "zcdp"."""
    composition: str
    total: tuple[float, float]
    spent: tuple[float, float]
    remaining: tuple[float, float]
    total_rho: float | None
    spent_rho: float | None
    spent_after_each: Sequence[tuple[float, float]]
    rho_after_each: Sequence[float] = ()
    """zCDP budgets: the rho spent after each charge (rhos add up)."""

    @property
    def words(self) -> str:
        """The budget's guarantee in a sentence."""
        return budget_kind_words(self.kind, self.total, self.total_rho, self.composition)

    @property
    def spent_share(self) -> float:
        """Share of the total spent, in [0, 1]: of the rho for a zCDP budget (rhos add
        up; their epsilons do not), else of the epsilon."""
        if self.total_rho is not None:
            return min((self.spent_rho or 0.0) / self.total_rho, 1.0)
        return min(self.spent[0] / self.total[0], 1.0) if self.total[0] > 0 else 0.0

    @property
    def measure(self) -> str:
        """What the share and the chart count: "rho" or "epsilon"."""
        return "rho" if self.total_rho is not None else "epsilon"


def budget_kind_words(
    kind: str, total: tuple[float, float], rho: float | None, composition: str
) -> str:
    """The budget's guarantee in plain words."""
    eps, dlt = total
    if kind == "zcdp":
        return (
            f"Zero-concentrated differential privacy (zCDP): a total rho = {rho:g}, which "
            f"amounts to (epsilon = {eps:.4g}, delta = {dlt:.3g})-differential privacy. "
            "Each release is charged its rho and the rhos add up."
        )
    rule = (
        "the epsilons and deltas of the releases add up (basic composition)"
        if composition == "basic"
        else "releases compose by the advanced composition theorem"
    )
    if kind == "pure":
        return f"Pure differential privacy: a total epsilon = {eps:g}; {rule}."
    return (
        f"Approximate differential privacy: a total epsilon = {eps:g} and delta = {dlt:g} "
        f"(delta bounds the probability that the epsilon guarantee fails); {rule}."
    )


def _unit_words(guarantee: Mapping[str, Any], grouped: bool) -> tuple[str, str]:
    """(who is protected, how much of them a release may use) in words."""
    unit = guarantee.get("privacy_unit")
    if unit is None:
        return "each row of the data", ""
    rows = int(guarantee.get("max_rows_per_unit", 1))
    groups = int(guarantee.get("max_groups_per_unit", 1))
    rows_text = f"{rows} row{'s' if rows != 1 else ''}"
    use = (
        f" Each {unit} contributes at most {rows_text} per group and to at most {groups} "
        f"group{'s' if groups != 1 else ''}; extra rows are left out. "
        if grouped
        else f" Each {unit} contributes at most {rows_text}; extra rows are left out. "
    ) + caps_covered(str(unit), rows, groups if grouped else None)
    return f"each {unit} (all rows that share one value of the column '{unit}')", use


def guarantee_words(
    guarantee: Mapping[str, Any],
    epsilon: float,
    delta: float,
    rho: float | None,
    grouped: bool = False,
) -> str:
    """One release's guarantee in plain words: who is protected, from what, how much."""
    who, use = _unit_words(guarantee, grouped)
    if guarantee.get("neighbours") == "substitute":
        neighbours = (
            f"Protects {who} against changes to its values: two datasets that differ in one "
            "unit's values look alike. The number of rows is treated as public."
        )
    else:
        neighbours = (
            f"Protects {who} against adding or removing it: the output looks alike whether "
            "or not it is in the data, so even its presence is hidden."
        )
    kind = guarantee.get("kind", "pure")
    factor = math.exp(epsilon) if epsilon < 50 else math.inf
    if kind == "zcdp":
        strength = (
            f" Zero-concentrated differential privacy with rho = {rho:.4g} "
            f"(nominal epsilon = {epsilon:g}), charged to the zCDP budget."
        )
    elif kind == "approximate":
        strength = (
            f" Approximate differential privacy, epsilon = {epsilon:g} and delta = {delta:g}: "
            f"any outcome becomes at most {factor:.3g} times more likely, except with "
            f"probability at most {delta:g}."
        )
    else:
        strength = (
            f" Pure differential privacy, epsilon = {epsilon:g}: any outcome becomes at most "
            f"{factor:.3g} times more likely."
        )
    return neighbours + use + strength


@dataclass(frozen=True)
class RowView:
    """One released value (one group, or the only row of an ungrouped release)."""

    group: Sequence[str]
    value: str
    refused: bool
    accuracy: str
    rank_accuracy: str
    number: float | None
    """The value as a float for a figure (None: refused, several values, non-finite)."""
    halfwidth: float | None
    interval: str = ""
    """"[low, high]" (the 95% interval), with "unreliable" when it is wider than half the
    bounds; "" without one."""
    low: float | None = None
    high: float | None = None
    unreliable: bool = False


@dataclass(frozen=True)
class StatisticView:
    """One released statistic: its receipt and its values."""

    title: str
    receipt: Sequence[tuple[str, str]]
    by: Sequence[str]
    rows: Sequence[RowView]
    figure_rows: Sequence[RowView] = field(default_factory=tuple)

    @property
    def grouped(self) -> bool:
        return bool(self.by)


@dataclass(frozen=True)
class ReleaseView:
    """One charge: its receipt, its guarantee and what it released."""

    number: int
    time: str
    dataset: str
    status: str
    epsilon: float
    delta: float
    rho: float | None
    method: str
    parallel: bool
    guarantee: str
    statistics: Sequence[StatisticView]
    note: str
    where: str = ""
    """A query's row filter, as the analyst wrote it."""
    csv_href: str = ""
    """The released values as a CSV file (a ``data:`` link); "" without outputs."""
    reproduce: str = ""
    """The call that makes the same release again; "" without outputs."""


def _row(stored: Mapping[str, Any], by: Sequence[str]) -> RowView:
    group = stored.get("group") or {}
    value = stored.get("value")
    refused = bool(stored.get("refused"))
    accuracy = stored.get("accuracy")
    rank = stored.get("rank_accuracy")
    number = value if isinstance(value, int | float) and not isinstance(value, bool) else None
    low, high = stored.get("low"), stored.get("high")
    if isinstance(low, list) and isinstance(high, list) and not refused:  # several quantiles
        low_text = ", ".join(
            f"[{format_number(a)}, {format_number(b)}]" for a, b in zip(low, high, strict=True)
        )
        low = high = None
    else:
        low_text = ""
    has_interval = not refused and isinstance(low, int | float) and isinstance(high, int | float)
    unreliable = bool(stored.get("unreliable")) and (has_interval or bool(low_text))
    # to the digits the accuracy gives, the interval rounded outward (the CSV keeps all)
    decimals = decimals_of(
        number, (low, high) if has_interval else None, None if refused else accuracy
    )
    if has_interval and decimals is not None and low is not None and high is not None:
        ends = f"[{rounded(float(low), decimals, 'down')}, {rounded(float(high), decimals, 'up')}]"
    elif has_interval:
        ends = f"[{format_number(low)}, {format_number(high)}]"
    else:
        ends = low_text
    interval = ends + (" unreliable" if unreliable and (has_interval or low_text) else "")
    shown = (
        format_number(value)
        if decimals is None or number is None
        else rounded(float(number), decimals)
    )
    if refused or accuracy is None:
        half = ""
    elif decimals is None:
        half = f"± {format_number(accuracy)}"
    else:
        half = f"± {rounded(float(accuracy), decimals, 'up')}"
    return RowView(
        group=[
            format_number(group.get(b)) if not isinstance(group.get(b), str) else group[b]
            for b in by
        ],
        value="refused" if refused else shown,
        refused=refused,
        accuracy=half,
        rank_accuracy="" if refused or rank is None else f"± {rank} ranks",
        number=None if refused or number is None else float(number),
        halfwidth=None if refused or not isinstance(accuracy, int | float) else float(accuracy),
        interval=interval,
        low=float(low) if isinstance(low, int | float) and has_interval else None,
        high=float(high) if isinstance(high, int | float) and has_interval else None,
        unreliable=unreliable,
    )


_SCALE_UNITS = {"rescaled [0, 1]": "on the bounds rescaled to [0, 1]"}


def _receipt(stat: Mapping[str, Any]) -> list[tuple[str, str]]:
    out = [("statistic", str(stat.get("statistic") or "—"))]
    if stat.get("p") is not None:
        out.append(("p", format_number(stat["p"])))
    out.append(("column", str(stat.get("column") or "—")))
    if stat.get("bounds") is not None:
        lower, upper = stat["bounds"]
        out.append(("clipping bounds", f"[{power_of_two(lower)}, {power_of_two(upper)}]"))
    source = stat.get("bounds_source")
    if isinstance(source, Mapping):
        out.append(("bounds from", _bounds_words(source)))
    if stat.get("share") is not None:
        out.append(("share of the query", f"{100 * float(stat['share']):.3g}% of its epsilon"))
    interval = stat.get("interval")
    if isinstance(interval, Mapping):
        out.append(("95% interval from", _interval_words(interval)))
    if stat.get("by"):
        out.append(("grouped by", ", ".join(stat["by"])))
        selection = stat.get("selection")
        out.append(
            (
                "groups",
                "public keys (every key released)"
                if selection == "public keys"
                else "chosen by private partition selection",
            )
        )
    out.append(("method", str(stat.get("method") or "—")))
    out.append(("noise", str(stat.get("noise") or "—")))
    scale = stat.get("scale")
    params = stat.get("parameters") or {}
    if not stat.get("by") and stat.get("noise") != "exponential-mechanism":  # it has no scale
        units = params.get("scale_units")
        units = f" ({_SCALE_UNITS.get(units, units)})" if units else ""
        out.append(
            (
                "noise scale",
                significant(float(scale), 3) + units
                if scale is not None
                else "not public (it depends on the data)",
            )
        )
    for key, value in sorted(params.items()):
        if value is not None and key != "scale_units":
            if key in ("grid", "lattice", "lower", "upper") and isinstance(value, float):
                text = power_of_two(value)
            else:
                text = format_number(value) if not isinstance(value, str) else value
            out.append((key.replace("_", " "), text))
    if stat.get("seeded"):
        out.append(("randomness", "SEEDED: reproducible, not secure (tests and demos only)"))
    return out


def _bounds_words(source: Mapping[str, Any]) -> str:
    if source.get("source") != "private":
        return "given by the analyst (public, chosen without the data)"
    share, eps = source.get("share"), source.get("epsilon")
    spent = f"{format_number(share)} of epsilon" if share is not None else "a share of epsilon"
    if eps is not None:
        spent += f" (epsilon {format_number(eps)})"
    return f"found privately, with {spent}, before the release"


def _interval_words(interval: Mapping[str, Any]) -> str:
    from dpsense.methods.intervals import built_from

    return built_from(interval.get("kind"), interval.get("share"))


def _title(stat: Mapping[str, Any]) -> str:
    name = str(stat.get("name") or stat.get("statistic") or "release")
    title = name if stat.get("statistic") in (None, "", name) else f"{name} ({stat['statistic']})"
    if stat.get("column"):
        title += f" of {stat['column']}"
    if stat.get("by"):
        title += " by " + ", ".join(stat["by"])
    return title


def _statistic(stat: Mapping[str, Any]) -> StatisticView:
    by = list(stat.get("by") or [])
    rows = [_row(r, by) for r in stat.get("rows") or []]
    return StatisticView(_title(stat), _receipt(stat), by, rows, rows if by else ())


_NO_OUTPUTS = {
    "charged": (
        "No answer was recorded: the process stopped before the release was computed, or "
        "the budget was charged directly. The budget is spent all the same."
    ),
    "answered": "Recorded by an older dpsense, before the release log: no outputs were kept.",
    "refused": "Refused. Recorded by an older dpsense, before the release log.",
}


def _when(time: str) -> str:
    return time[:19].replace("T", " ") + " UTC"


def release_views(entries: Sequence[LedgerEntry]) -> list[ReleaseView]:
    """The report's view of every charge, oldest first."""
    out = []
    for e in entries:
        outputs = e.outputs or {}
        stats = [_statistic(s) for s in outputs.get("statistics") or []]
        rho = None if e.rho is None else float(e.rho)
        words = (
            guarantee_words(
                outputs["guarantee"],
                float(e.epsilon),
                float(e.delta),
                rho,
                grouped=any(s.grouped for s in stats),
            )
            if "guarantee" in outputs
            else ""
        )
        out.append(
            ReleaseView(
                number=e.id,
                time=_when(e.time),
                dataset=e.dataset,
                status=e.status,
                epsilon=float(e.epsilon),
                delta=float(e.delta),
                rho=rho,
                method=e.method,
                parallel=e.group is not None,
                guarantee=words,
                statistics=stats,
                note="" if e.outputs else _NO_OUTPUTS.get(e.status, ""),
                where=str(outputs.get("where") or ""),
                csv_href=csv_href(outputs) if stats else "",
                reproduce=(
                    reproduce_code(outputs, float(e.epsilon), float(e.delta), e.dataset)
                    if stats
                    else ""
                ),
            )
        )
    return out
