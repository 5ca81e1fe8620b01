"""``dpsense plan``: the accuracy a SQL release would have, before anything is spent."""

from __future__ import annotations

import math
from typing import Annotated, Any

from rich import box
from rich.table import Table

from dpsense.cli import _options as opt
from dpsense.cli._shared import _console, _fmt, _print_json
from dpsense.errors import InputError
from dpsense.shown import parameter, rounded

__all__ = ["PLAN_EXAMPLES", "plan_command"]

PLAN_EXAMPLES = (
    "Examples:\n\n\b\n"
    "  dpsense plan \"SELECT female, COUNT(*) AS n, MEDIAN(wage) AS med FROM 'wage1.csv' \\\n"
    '      GROUP BY female" --epsilon 1 --rows-per-group 250 --bounds wage=0:50 \\\n'
    "      --keys female=0,1 --privacy-unit pid\n"
    "  dpsense plan \"SELECT AVG(hours) FROM 'panel.csv'\" --epsilon 1 --rows-per-group 1000 \\\n"
    "      --bounds hours=0:80 --target hours=1\n"
)
"""The examples that end ``--help``."""


def _targets(items: list[str] | None) -> dict[str, float] | None:
    if not items:
        return None
    out: dict[str, float] = {}
    for item in (part for text in items for part in text.split(",") if part):
        name, sep, value = item.partition("=")
        try:
            number = float(value)
        except ValueError:
            number = float("nan")
        if not sep or not name or not number > 0:
            raise InputError(
                f"--target takes NAME=ERROR with ERROR > 0, e.g. med=0.5; got {item!r}."
            )
        out[name] = number
    return out


def plan_command(
    query: Annotated[str, opt.SQL_QUERY],
    epsilon: Annotated[float, opt.SQL_EPSILON],
    rows_per_group: Annotated[int, opt.PLAN_ROWS_PER_GROUP],
    delta: Annotated[float, opt.DELTA] = 0.0,
    privacy_unit: Annotated[list[str] | None, opt.SQL_PRIVACY_UNIT] = None,
    public: Annotated[list[str] | None, opt.PLAN_PUBLIC] = None,
    max_rows_per_unit: Annotated[int | None, opt.MAX_ROWS] = None,
    max_groups_per_unit: Annotated[int | None, opt.MAX_GROUPS] = None,
    bounds: Annotated[list[str] | None, opt.SQL_BOUNDS] = None,
    bounds_share: Annotated[float | None, opt.BOUNDS_SHARE] = None,
    keys: Annotated[str | None, opt.SQL_KEYS] = None,
    target: Annotated[list[str] | None, opt.PLAN_TARGET] = None,
    spread: Annotated[float, opt.PLAN_SPREAD] = 1.0,
    json_output: Annotated[bool, opt.JSON] = False,
) -> None:
    """Forecast the error of each aggregate of a SQL query at a declared group size (or the
    epsilon that reaches --target), as `dpsense sql` would release it: nothing is spent and
    no data is read."""
    from dpsense.cli.sql_cmd import _checked, _privacy_unit
    from dpsense.planning import plan

    spec, bounds_arg, key_list = _checked(query, bounds, keys, None)
    public_names = [p.partition("=")[0].strip() for p in public] if public else None
    private = [s.table for s in spec.sources if s.table not in (public_names or [])]
    result = plan(
        None,
        query,
        epsilon=epsilon,
        delta=delta,
        rows_per_group=rows_per_group,
        target=_targets(target),
        spread=spread,
        privacy_unit=_privacy_unit(privacy_unit, private),
        public_tables=public_names,
        max_rows_per_unit=1 if max_rows_per_unit is None else max_rows_per_unit,
        max_groups_per_unit=1 if max_groups_per_unit is None else max_groups_per_unit,
        bounds=bounds_arg,
        keys=key_list,
        bounds_share=bounds_share,
    )
    if json_output:
        _print_json(
            {
                "epsilon": result.epsilon,
                "delta": result.delta,
                "rows_per_group": result.rows_per_group,
                "target_epsilon": result.target_epsilon,
                "statistics": result.to_dicts(),
            }
        )
        return
    _table(result)


def _two_digits(value: float) -> str:
    """A simulated forecast to the two significant digits it has (4,000 draws): 132.262
    shows as 130, 0.01234 as 0.012; ``--json`` keeps every digit."""
    if value == 0 or not math.isfinite(value):
        return _fmt(value)
    # two significant digits, more where rounding would change the leading one (99.7)
    return rounded(value, 1 - math.floor(math.log10(abs(value))))


def _table(result: Any) -> None:
    console = _console()
    table = Table(title="Planned accuracy (nothing spent, no data read)", box=box.SIMPLE_HEAVY)
    for col in ("statistic", "method", "epsilon per group", "median error", "95% error",
                "95% interval width"):  # fmt: skip
        table.add_column(col, justify="left" if col in ("statistic", "method") else "right")
    for f in result.statistics:
        unit = " ranks" if f.units == "ranks" else ""

        def shown(v: float | None, unit: str = unit) -> str:
            return "—" if v is None else _two_digits(v) + unit

        table.add_row(
            f.name,
            f.method,
            parameter(f.epsilon, 3),
            shown(f.median_error),
            shown(f.error_95),
            shown(f.interval_width),
        )
    console.print(table)
    console.print(
        f"{result.rows_per_group} rows per group; total epsilon={result.epsilon:g}, "
        f"delta={result.delta:g}. Quantiles in ranks (rows); '—': depends on the data."
    )
    if result.target_epsilon is not None:
        console.print(f"The target is met from epsilon = {parameter(result.target_epsilon)}.")
