"""The receipt of one release (``dpsense release`` and ``dpsense ratio``): JSON or a table."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from rich import box
from rich.table import Table

from dpsense.cli._shared import _console, _fmt, _print_json
from dpsense.defaults import ACCURACY_ALPHA
from dpsense.shown import caps_covered, power_of_two, significant

if TYPE_CHECKING:
    from dpsense.methods import Release

__all__ = ["emit_receipt", "interval_source", "power_of_two", "print_receipt", "receipt_json"]


def emit_receipt(result: Release, json_output: bool, label: str | None) -> None:
    """Print the receipt: one JSON object, or a readable table."""
    if json_output:
        _print_json(receipt_json(result))
    else:
        print_receipt(result, label)


def receipt_json(result: Release) -> dict[str, Any]:
    """The contract's ``--json`` keys first, then the rest of the receipt."""
    payload = result.to_dict()
    interval = result.interval(ACCURACY_ALPHA)
    payload["interval"] = (
        None
        if interval is None
        else [getattr(end, "tolist", lambda e=end: e)() for end in interval]
    )
    payload["unreliable"] = result.unreliable(ACCURACY_ALPHA)
    payload["accuracy"] = result.accuracy(ACCURACY_ALPHA)
    payload["rank_accuracy"] = result.rank_accuracy(ACCURACY_ALPHA)
    for key in ("value", "scale", "rho", "accuracy"):
        value = payload[key]
        if isinstance(value, float) and not math.isfinite(value):
            payload[key] = None
    return payload


def print_receipt(result: Release, column: str | None) -> None:
    """A readable receipt: the answer and how it was made."""
    from dpsense.cli.tables_io import shown_accuracy, shown_interval, shown_value

    console = _console()
    title = f"Private {result.statistic}" + (f" of {column}" if column else "")
    table = Table(title=title, box=box.SIMPLE_HEAVY, show_header=False)
    table.add_column("field")
    table.add_column("value", justify="right")
    table.add_row(
        "value",
        "refused (propose-test-release)" if result.refused else shown_value(result),
    )
    if not result.refused:
        interval, accuracy = shown_interval(result), shown_accuracy(result)
        table.add_row("95% interval", interval or "none for this method")
        if interval and result.covers:
            table.add_row("covers", result.covers)
        if accuracy or not interval:  # an interval says how accurate the value is
            table.add_row("accuracy", accuracy or "not public (the error depends on the data)")
    table.add_row("method", result.method)
    table.add_row("noise", str(result.noise))
    units = result.parameters.get("scale_units")
    if result.noise != SELECTED:  # the exponential mechanism adds no noise to scale
        table.add_row(
            "noise scale",
            "not public (depends on the data)"
            if result.scale is None
            else significant(result.scale, 3)
            + (f" ({_SCALE_UNITS.get(units, units)})" if units else ""),
        )
    table.add_row(
        "guarantee",
        f"epsilon={result.epsilon:g}, delta={result.delta:g}"
        + (f", rho={result.rho:g}-zCDP" if result.rho is not None else ""),
    )
    table.add_row("neighbours", result.neighbours)
    _add_parameter_rows(table, result)
    if result.seeded:
        table.add_row("randomness", "SEEDED: reproducible, not secure (tests/demos only)")
    console.print(table)
    unit = result.parameters.get("privacy_unit")
    if unit is not None and not result.refused:
        console.print(caps_covered(str(unit), int(result.parameters.get("max_rows_per_unit") or 1)))
    if result.refused:
        console.print(
            "Refused: the private test found the data too close to a dataset whose local "
            "sensitivity exceeds the proposed --bound. The budget is spent all the same, "
            "and the exit code is 0 (a refusal is the private answer). To try: a larger "
            "--bound (chosen without looking at the data), more epsilon for the test "
            "(--test-fraction), or a method that never refuses: --method smooth, or "
            "exponential for quantiles."
        )


_SHOWN_ABOVE = frozenset({"scale_units"})
"""Parameters the rows above already show."""
_WORDS = {
    "resolution_source": "resolution from",
    "grid": "output grid",
}
"""Receipt keys shown in words (``--json`` keeps the keys)."""
SELECTED = "exponential-mechanism"
"""The noise of a value the exponential mechanism selects: it has no scale."""
_SCALE_UNITS = {"rescaled [0, 1]": "on the bounds rescaled to [0, 1]"}


def _add_parameter_rows(table: Table, result: Release) -> None:
    """A row for each parameter of the release's receipt not said above it, in words."""
    found = result.parameters.get("bounds")
    private = isinstance(found, dict) and found.get("source") == "private"
    for key, value in result.parameters.items():
        if value is None or key in _SHOWN_ABOVE or (private and key in ("lower", "upper")):
            continue  # nothing to say, or said above (the scale's units, private bounds)
        if key == "interval":
            table.add_row("interval from", interval_source(value))
            continue
        table.add_row(_WORDS.get(key, key), _parameter(key, value))


def _parameter(key: str, value: Any) -> str:
    """A receipt parameter as printed; the two parts of --bounds private in words."""
    if key == "bounds" and isinstance(value, dict) and value.get("source") == "private":
        return (
            f"({power_of_two(value['lower'])}, {power_of_two(value['upper'])}), found "
            f"privately with epsilon={value['epsilon']:g}"
        )
    if key in ("grid", "lattice", "lower", "upper") and isinstance(value, float):
        return power_of_two(value)
    if key == "release" and isinstance(value, dict):
        return f"epsilon={value['epsilon']:g}, delta={value['delta']:g}"
    return _fmt(value) if isinstance(value, float) else str(value)


def interval_source(spec: Any) -> str:
    """Where a release's interval comes from, in words (docs/intervals.md)."""
    from dpsense.methods.intervals import built_from

    if not isinstance(spec, dict):
        return built_from(None, None)
    return built_from(spec.get("kind"), spec.get("share"))
