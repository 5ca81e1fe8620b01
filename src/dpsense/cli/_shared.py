"""Helpers shared by the command-line modules (formatting, parsing, statistics, the ledger,
seeded runs)."""

from __future__ import annotations

import contextlib
import json
import math
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from dpsense.errors import InputError

if TYPE_CHECKING:
    from dpsense.accountant import Accountant
    from dpsense.statistics import Statistic

__all__ = [
    "_accountant",
    "_console",
    "_fmt",
    "_json_number",
    "_parse_numbers",
    "_percent",
    "_print_json",
    "_seeded_quietly",
    "_short",
    "_statistic",
]


def _console(min_width: int = 80) -> Console:
    # Created per command so that it writes to the current sys.stdout (tests capture it).
    console = Console(markup=False, highlight=False, emoji=False, soft_wrap=False)
    if not console.is_terminal and console.width < min_width:
        # Rich assumes 80 columns when writing to a pipe or file; wide tables need more.
        console.width = min_width
    return console


def _fmt(value: float) -> str:
    """A number in six significant digits (:func:`dpsense.shown.plain`)."""
    from dpsense.shown import plain

    return plain(value)


def _short(value: float, digits: int = 3) -> str:
    """Compact: ``digits`` significant digits, positional for everyday magnitudes."""
    if value == 0:
        return "0"
    if not math.isfinite(value) or not 1e-4 <= abs(value) < 1e7:
        return _fmt(value) if not math.isfinite(value) else f"{value:.{digits}g}"
    import numpy as np

    return np.format_float_positional(
        value, precision=digits, unique=False, fractional=False, trim="-"
    )


def _percent(fraction: float) -> str:
    percent = 100.0 * fraction
    return f"{percent:.0f}%" if percent >= 1 else f"{percent:.2g}%"


def _json_number(value: float) -> float | None:
    """JSON has no infinity: non-finite numbers become null."""
    return float(value) if math.isfinite(value) else None


def _print_json(payload: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(payload, allow_nan=False) + "\n")


def _parse_numbers(text: str, option: str, *, data: bool = False) -> list[float]:
    """Comma-separated numbers; errors name the option and the position, not the text.

    Parameters (levels, a universe) must be finite; ``data`` (a dataset) may hold ``inf``
    and ``-inf``, which the statistics clip to their bounds, but not NaN."""
    parts = [p.strip() for p in text.split(",")]
    if not any(parts):
        raise InputError(f"{option} must be a comma-separated list of numbers; it is empty.")
    out: list[float] = []
    for i, part in enumerate(parts, start=1):
        try:
            value = float(part)
        except ValueError:
            raise InputError(
                f"{option} must be a comma-separated list of numbers; entry {i} is not a number."
            ) from None
        if math.isnan(value):
            raise InputError(f"{option} must hold numbers; entry {i} is NaN.")
        if math.isinf(value) and not data:
            raise InputError(f"{option} must hold finite numbers; entry {i} is not finite.")
        out.append(value)
    return out


def _levels(p: str | float | None, name: str) -> float | tuple[float, ...] | None:
    """--p as one level (quantile) or a comma-separated list of levels (quantiles)."""
    if p is None or isinstance(p, float | int):
        return p
    option = "--p (a level such as 0.9, or levels such as 0.1,0.5,0.9)"
    levels = tuple(_parse_numbers(str(p), option))
    if name == "quantile":
        if len(levels) != 1:
            raise InputError(
                "--statistic quantile takes one level (--p 0.9); for several use "
                "--statistic quantiles --p 0.1,0.5,0.9."
            )
        return levels[0]
    return levels


def _statistic(
    name: str,
    lower: float | None,
    upper: float | None,
    p: str | float | None,
    trim: int | None,
    resolution: float | None = None,
    *,
    bounds_optional: bool = False,
) -> Statistic:
    """The statistic of the options; without ``bounds_optional`` a missing bound is an
    error here (commands other than ``release`` have no --bounds private)."""
    from dpsense.statistics import make_statistic, statistic_key

    statistic_key(name)  # an unknown name first: its checks below read the name
    key = name.strip().lower()
    if p is not None and key not in ("quantile", "quantiles"):
        raise InputError("--p applies only to --statistic quantile and quantiles.")
    if trim is not None and key.replace("_", "-") not in (
        "trimmed-mean",
        "trimmed",
    ):
        raise InputError("--trim applies only to --statistic trimmed-mean.")
    if resolution is not None and key not in ("median", "quantile", "quantiles"):
        raise InputError("--resolution applies only to --statistic median, quantile and quantiles.")
    if p is None and key in ("quantile", "quantiles"):
        # the words of the statistic's own message (statistics.statistic), on the command line
        raise InputError(
            "The quantile statistic needs its level: pass --p 0.9, say."
            if key == "quantile"
            else "The quantiles statistic needs its levels: pass --p 0.1,0.5,0.9, say."
        )
    levels = _levels(p, key)
    if not bounds_optional and key != "count" and (lower is None or upper is None):
        what = "--upper is missing" if lower is not None else "--lower is missing"
        raise InputError(
            (what if lower is not None or upper is not None else f"--statistic {key} needs bounds")
            + ": pass --lower L --upper U, public and chosen without looking at the data "
            "('dpsense bounds' finds them privately)."
        )
    return make_statistic(name, lower, upper, p=levels, trim=trim, resolution=resolution)


def _accountant(ledger: Path | None) -> Accountant | None:
    """The ledger-backed accountant for --ledger (the ledger must already exist)."""
    from dpsense.accountant import Accountant

    if ledger is None:
        return None
    if not ledger.exists():
        raise InputError(
            f"No ledger file at {ledger}; create one with 'dpsense budget init {ledger} "
            "--epsilon E'."
        )
    return Accountant(ledger=ledger)


@contextlib.contextmanager
def _seeded_quietly() -> Iterator[None]:
    """No SeededRandomnessWarning inside: the receipt or the output says the run is seeded."""
    from dpsense.noise import SeededRandomnessWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededRandomnessWarning)
        yield
