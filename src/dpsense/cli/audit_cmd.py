"""``dpsense audit``: look for a violation of a user mechanism's privacy claim.

The mechanism is named ``MODULE:FUNCTION`` (or ``FILE.py:FUNCTION``) and imported the way
``python -m`` would, with the current directory first on ``sys.path``. It is run many times
on two neighbouring datasets read from files, and :func:`dpsense.audit.audit_mechanism`
judges the outputs. Exit code 4 means "violation found", 0 "no violation detected".
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final

import typer
from rich import box
from rich.table import Table

from dpsense.audit.mechanism import DEFAULT_DRAWS
from dpsense.cli import _options as opt
from dpsense.cli._shared import _console, _json_number, _print_json
from dpsense.errors import InputError
from dpsense.params import check_delta, check_epsilon, check_int, check_probability

if TYPE_CHECKING:
    from dpsense.audit import MechanismAudit

__all__ = ["AUDIT_EXAMPLES", "EXIT_VIOLATION", "audit_command", "load_mechanism"]

EXIT_VIOLATION: Final = 4
"""Exit code of ``dpsense audit`` when it finds a violation (0: none detected)."""

AUDIT_EXAMPLES = (
    "Examples:\n\n\b\n"
    "  dpsense audit mymech:noisy_mean --x x.csv --x-prime x_prime.csv --epsilon 1\n"
    "  dpsense audit mechs/count.py:release --x a.csv --x-prime b.csv --epsilon 0.5 \\\n"
    "      --draws 50000 --seed 7 --json\n\n"
    "Exit codes: 0 no violation detected (which does not prove privacy); 4 violation "
    "found; 2 bad input (one line on stderr).\n"
)
"""The examples that end ``--help``."""

_WHERE: Final = "audit_mechanism"
_SPEC_HELP: Final = (
    "name the mechanism as MODULE:FUNCTION (e.g. mymech:noisy_mean, with mymech.py in the "
    "current directory or on PYTHONPATH) or as FILE.py:FUNCTION"
)


# --------------------------------------------------------------------------- loading


def _import_module(module: str) -> Any:
    """Import ``module`` as ``python -m`` would: the current directory first on sys.path."""
    if module.startswith(".") or not all(part.isidentifier() for part in module.split(".")):
        raise InputError(f"'{module}' is not a module name; {_SPEC_HELP}.")
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        missing = exc.name or module
        if missing == module or module.startswith(missing + "."):
            raise InputError(
                f"module '{module}' was not found: run dpsense audit from the directory "
                f"that holds {module.split('.')[0]}.py, or add that directory to PYTHONPATH."
            ) from None
        raise InputError(
            f"importing module '{module}' failed: it imports '{missing}', which is not "
            "installed or not on PYTHONPATH (ModuleNotFoundError)."
        ) from None
    except (Exception, SystemExit) as exc:
        # The exception's text may quote data the module loads, so only its type is shown.
        raise InputError(
            f"importing module '{module}' raised {type(exc).__name__}; run "
            f'python -c "import {module}" to see why.'
        ) from None


def _import_file(path_text: str) -> Any:
    """Load a ``.py`` file as a module, its directory on sys.path as for ``python FILE``."""
    path = Path(path_text)
    if not path.is_file():
        raise InputError(f"file not found: {path_text} (the FILE of FILE.py:FUNCTION).")
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    name = f"_dpsense_audit_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise InputError(f"cannot load {path_text} as Python source; {_SPEC_HELP}.")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look the module up by name
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:
        sys.modules.pop(name, None)
        raise InputError(
            f"running {path_text} raised {type(exc).__name__}; run python {path_text} to see why."
        ) from None
    return module


def load_mechanism(spec: str) -> tuple[Callable[..., Any], str]:
    """The callable named by ``MODULE:FUNCTION`` or ``FILE.py:FUNCTION``, and its name.

    ``FUNCTION`` may be dotted (``Class.method``).

    Raises
    ------
    InputError
        If the name is malformed, the module does not import, or it has no such callable.
    """
    module_name, colon, attribute = spec.rpartition(":")
    if not colon or not module_name or not attribute:
        raise InputError(f"{_SPEC_HELP[0].upper()}{_SPEC_HELP[1:]}. Got '{spec}' instead.")
    if module_name.endswith(".py"):
        obj: Any = _import_file(module_name)
    else:
        obj = _import_module(module_name)
    for part in attribute.split("."):
        if not part.isidentifier() or not hasattr(obj, part):
            raise InputError(
                f"module '{module_name}' has no function '{attribute}'; check the name "
                "after the colon of MODULE:FUNCTION."
            )
        obj = getattr(obj, part)
    if not callable(obj):
        raise InputError(
            f"'{spec}' is not callable (it is an object of type {type(obj).__name__}); "
            "name a function from a dataset to a number."
        )
    return obj, spec


# --------------------------------------------------------------------------- output


def _payload(result: MechanismAudit, mechanism: str, seed: int | None) -> dict[str, Any]:
    hist = result.histogram
    cat = result.catastrophe
    return {
        "mechanism": mechanism,
        "verdict": result.verdict,
        "violation": result.violation,
        "epsilon_lower_bound": _json_number(result.epsilon_lower_bound),
        "confidence": result.confidence,
        "epsilon": result.epsilon,
        "delta": result.delta,
        "neighbours": result.neighbours,
        "draws": result.draws,
        "calls": result.calls,
        "found_by": result.found_by,
        "worst_event": result.worst_event,
        "direction": result.direction,
        "histogram": {
            "passed": hist.passed,
            "epsilon_lower_bound": _json_number(hist.epsilon_lower_bound),
            "delta_excess": _json_number(hist.delta_excess),
            "worst_event": hist.worst_event,
            "direction": hist.direction,
            "events_tested": hist.events_tested,
            "alpha": hist.alpha,
        },
        "catastrophe": None
        if cat is None
        else {
            "passed": cat.passed,
            "event": result.catastrophe_event,
            "epsilon_lower_bound": _json_number(cat.epsilon_lower_bound),
            "count_x": cat.count_x,
            "count_x_prime": cat.count_y,
            "draws": cat.n,
            "alpha": cat.alpha,
        },
        "seed": seed,
    }


def _print_table(result: MechanismAudit, mechanism: str) -> None:
    console = _console()
    table = Table(title=f"Audit of {mechanism}", box=box.SIMPLE_HEAVY, show_header=False)
    table.add_column("field")
    table.add_column("value")
    confidence = f"{100 * result.confidence:g}%"
    verdict = "VIOLATION FOUND" if result.violation else "no violation detected at this power"
    table.add_row("verdict", verdict)
    table.add_row("claim", f"epsilon={result.epsilon:g}, delta={result.delta:g}")
    table.add_row(
        "measured epsilon", f">= {result.epsilon_lower_bound:.4g} ({confidence} confidence)"
    )
    table.add_row(
        "worst event", f"{result.worst_event}, {result.direction} ({result.found_by} test)"
    )
    table.add_row("pair", f"{result.neighbours} neighbours")
    table.add_row("draws", f"{result.draws} on each of x and x' ({result.calls} calls in all)")
    hist = result.histogram
    table.add_row(
        "histogram audit",
        f"{'passed' if hist.passed else 'FAILED'}: epsilon >= "
        f"{hist.epsilon_lower_bound:.4g} at {100 * (1 - hist.alpha):g}%, "
        f"{hist.events_tested} probabilities bounded",
    )
    cat = result.catastrophe
    if cat is None:
        reason = "the claim has delta > 0" if result.delta > 0 else "no point mass in the pilot"
        table.add_row("catastrophe test", f"not run ({reason})")
    else:
        table.add_row(
            "catastrophe test",
            f"{'passed' if cat.passed else 'FAILED'} on {result.catastrophe_event}: "
            f"{cat.count_x} of {cat.n} on x, {cat.count_y} of {cat.n} on x'",
        )
    console.print(table)
    if result.violation:
        console.print(
            f"The mechanism is not (epsilon={result.epsilon:g}, delta={result.delta:g})-DP "
            f"on this pair: a private mechanism is flagged with probability at most "
            f"{1 - result.confidence:.2g}."
        )
    else:
        console.print(
            "No violation was found; an audit can find a violation but never prove privacy "
            "(other pairs, other events or a smaller leak may still break the claim). This "
            f"audit drew {result.draws} outputs on each dataset; more draws detect smaller "
            f"leaks (e.g. --draws {10 * result.draws}, about ten times the time)."
        )


# --------------------------------------------------------------------------- command


def audit_command(
    mechanism: Annotated[str, opt.AUDIT_MECHANISM],
    x: Annotated[Path, opt.AUDIT_X],
    x_prime: Annotated[Path, opt.AUDIT_X_PRIME],
    epsilon: Annotated[float, opt.AUDIT_EPSILON],
    delta: Annotated[float, opt.AUDIT_DELTA] = 0.0,
    draws: Annotated[int, opt.AUDIT_DRAWS] = DEFAULT_DRAWS,
    column: Annotated[str | None, opt.AUDIT_COLUMN] = None,
    nulls: Annotated[str, opt.NULLS] = "error",
    neighbours: Annotated[str | None, opt.AUDIT_NEIGHBOURS] = None,
    alpha: Annotated[float, opt.AUDIT_ALPHA] = 0.05,
    seed: Annotated[int | None, opt.AUDIT_SEED] = None,
    json_output: Annotated[bool, opt.JSON] = False,
) -> None:
    """Audit a mechanism's (epsilon, delta)-DP claim on two neighbouring datasets.

    Runs MODULE:FUNCTION many times on x and on x' and looks for outputs that are likelier
    on one than the claim allows (histogram audit; catastrophe test on a point mass).
    Prints the verdict and the measured privacy loss, a lower confidence bound on epsilon.
    A violation found is a proof (up to --alpha); no violation detected proves nothing.
    """
    from dpsense.audit import audit_mechanism
    from dpsense.data import load_column

    _check_claim(epsilon, delta, draws, alpha, seed)
    data_x = load_column(x, column, nulls=nulls)
    data_y = load_column(x_prime, column, nulls=nulls)
    # What the user's module prints goes to stderr, so that stdout holds only the result.
    with contextlib.redirect_stdout(sys.stderr):
        function, name = load_mechanism(mechanism)
        result = audit_mechanism(
            function,
            data_x,
            data_y,
            epsilon=epsilon,
            delta=delta,
            draws=draws,
            alpha=alpha,
            neighbours=neighbours,
            seed=seed,
            name=name,
        )
    if json_output:
        _print_json(_payload(result, name, seed))
    else:
        _print_table(result, name)
    if result.violation:
        raise typer.Exit(code=EXIT_VIOLATION)


def _check_claim(epsilon: float, delta: float, draws: int, alpha: float, seed: int | None) -> None:
    """The claim, the number of draws, --alpha and --seed checked before any data is read."""
    from dpsense.audit.mechanism import check_draws

    check_epsilon(epsilon, where=_WHERE)
    check_delta(delta, where=_WHERE)
    check_draws(draws)
    check_probability(alpha, "alpha", where=_WHERE)
    if seed is not None:
        check_int(seed, "seed", where=_WHERE, minimum=0)
