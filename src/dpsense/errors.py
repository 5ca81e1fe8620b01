"""Error types of dpsense.

Every error a user can trigger derives from :class:`DPSenseError`. Messages name the
parameter that is wrong and say what to do; they never contain data values.
"""

from __future__ import annotations

__all__ = ["BudgetExceededError", "DPSenseError", "EvaluationLimitError", "InputError"]


class DPSenseError(Exception):
    """Base class of every error raised by dpsense."""


class InputError(DPSenseError, ValueError):
    """A bad argument or bad data (also a :class:`ValueError`).

    The message names the parameter and the expected form; it never echoes data values.
    """


class EvaluationLimitError(InputError):
    """The brute-force explorer would evaluate f more often than its limit allows.

    ``needed`` is the number of evaluations the request needs (a function of the universe,
    the data size and the distance: the explorer is a non-private tool).
    """

    def __init__(self, message: str, needed: float) -> None:
        super().__init__(message)
        self.needed = needed


class BudgetExceededError(DPSenseError):
    """A privacy ledger or accountant refused a charge.

    Parameters
    ----------
    remaining : tuple of float
        The (epsilon, delta) budget that remains.
    requested : tuple of float
        The (epsilon, delta) that was asked for.
    """

    def __init__(
        self,
        remaining: tuple[float, float],
        requested: tuple[float, float],
        message: str | None = None,
    ) -> None:
        self.remaining = remaining
        self.requested = requested
        if message is None:
            message = (
                f"privacy budget exceeded: requested epsilon={requested[0]:g}, "
                f"delta={requested[1]:g} but only epsilon={remaining[0]:g}, "
                f"delta={remaining[1]:g} remain. Ask for less, or start a new budget."
            )
        super().__init__(message)
