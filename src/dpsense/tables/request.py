"""The value objects of a table release: who a person is (:class:`PrivacyUnit`), how rows
are grouped (:class:`Grouping`), what is spent (:class:`Budget`, :class:`BudgetSplit`),
one statistic's whole request (:class:`StatisticRelease`) and a whole query's
(:class:`TableQuery`, its statistics :class:`QueryStatistic`). Each is validated where the
public call is parsed (``query.plan``) and passed down whole, never as a chain of loose
arguments.

Beside the split, the zCDP prices of its two steps (:func:`selection_price`,
:meth:`BudgetSplit.zcdp_price`), which :func:`dpsense.query.price.price` sums."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpsense._exact_budget import difference_down, product_down, quotient_down
from dpsense.errors import MANY, Assign, InputError, Param, keys_columns
from dpsense.mechanisms.partition_selection import SelectionRule
from dpsense.methods import Release
from dpsense.methods.zcdp import ZcdpPrice, amount
from dpsense.noise.rng import RandomSource
from dpsense.statistics import Statistic
from dpsense.tables.row_filter import RowFilter

__all__ = [
    "SELECTION_SHARE",
    "Budget",
    "BudgetSplit",
    "Grouping",
    "PrivacyUnit",
    "QueryStatistic",
    "StatisticRelease",
    "TableQuery",
    "budget_split",
    "normalise_keys",
    "public_key_count",
    "selection_price",
    "signless_zero",
]

SELECTION_SHARE = 0.5
"""Share of epsilon (and of delta) spent on private partition selection."""


@dataclass(frozen=True)
class BudgetSplit:
    """How a table release spends its (epsilon, delta) (docs/tables.md §4), from public
    parameters only: the accountant prices a release with it before anything is drawn."""

    selection: tuple[float, float] | None
    """(epsilon, delta) of private partition selection; None with public keys or no groups."""
    per_group: tuple[float, float]
    """(epsilon, delta) of each group's release."""
    touched: int
    """The number of released groups one unit can change."""

    def zcdp_price(self, one: Fraction, groups: int) -> ZcdpPrice:
        """The zCDP price of the release that runs with this split, each group's release
        ``one``-zCDP at ``per_group``, when a unit is in at most ``groups`` groups: a unit
        changes at most ``touched`` of the released groups, and zCDP composes by adding
        rhos (Bun & Steinke 2016, Lemma 2.3), so ``touched * one``; plus, with its own
        selection, the selection's price (:func:`selection_price`)."""
        own = ZcdpPrice(self.touched * one)
        return own if self.selection is None else own + selection_price(self.selection, groups)


def budget_split(
    epsilon: float, delta: float, *, by: tuple[str, ...], public_keys: int | None, groups: int
) -> BudgetSplit:
    """The split of a release by ``by`` with ``public_keys`` keys (None: private selection)
    when a unit is in at most ``groups`` groups."""
    selection = None
    eps_rest, dlt_rest = epsilon, delta
    if by and public_keys is None:
        if delta == 0.0:
            raise InputError(
                "Releasing groups without public keys needs private partition selection, "
                "which needs delta > 0: pass ",
                Assign("keys", MANY),
                " or ",
                Assign("delta"),
                " (e.g. 1e-6).",
            )
        # shares rounded down, the rests exact differences rounded down (docs/noise.md §8)
        selection = (product_down(SELECTION_SHARE, epsilon), product_down(SELECTION_SHARE, delta))
        eps_rest = difference_down(epsilon, selection[0])
        dlt_rest = difference_down(delta, selection[1])
    # a unit touches at most g groups, and never more than the public keys
    touched = min(groups, public_keys) if public_keys else groups
    eps_g = quotient_down(eps_rest, touched)
    dlt_g = quotient_down(dlt_rest, touched)
    return BudgetSplit(selection, (eps_g, dlt_g), touched)


def selection_price(selection: tuple[float, float], groups: int) -> ZcdpPrice:
    r"""The zCDP price of private partition selection at (epsilon, delta) ``selection``
    when a unit is in at most ``groups`` groups.

    Each of the at most g noisy counts a unit changes moves by one under discrete Laplace
    noise of scale b (``SelectionRule.for_budget``), so it is (1/b)-DP, hence
    :math:`1/(2b^2)`-zCDP (Bun & Steinke 2016, Prop. 1.4), and the selection restricted to
    the groups both neighbours have is :math:`g/(2b^2)`-zCDP (Lemma 2.3; at most
    :math:`\varepsilon_s^2/(2g)`); a group only the larger neighbour has is kept with
    probability at most :math:`\delta_s`. So selection is :math:`\delta_s`-approximately
    :math:`g/(2b^2)`-zCDP (Def. 8.1; docs/accounting.md §3)."""
    eps_sel, dlt_sel = selection
    scale = SelectionRule.for_budget(eps_sel, dlt_sel, groups).scale
    return ZcdpPrice(Fraction(groups) / (2 * scale * scale), amount(dlt_sel))


@dataclass(frozen=True, kw_only=True)
class PrivacyUnit:
    """All the rows of one person: the column that names them (None: every row is its
    own unit), and how many rows (``max_rows``) and groups (``max_groups``) of one person
    a release keeps."""

    column: str | None = None
    max_rows: int = 1
    max_groups: int = 1

    @property
    def rows_bound(self) -> int:
        """The rows of one unit a release can change (m): 1 when every row is a unit."""
        return self.max_rows if self.column is not None else 1

    def groups_bound(self, grouped: bool) -> int:
        """The groups of one unit a release can change (g): 1 without a unit or groups."""
        return self.max_groups if (self.column is not None and grouped) else 1

    def receipt(self, grouped: bool) -> dict[str, Any]:
        """The unit and the contribution bounds as a release's receipt states them."""
        return {
            "privacy_unit": self.column,
            "max_rows_per_unit": self.rows_bound,
            "max_groups_per_unit": self.groups_bound(grouped),
        }


@dataclass(frozen=True, kw_only=True)
class Grouping:
    """The by-columns and the public keys as the caller gave them (None: the groups are
    chosen by private partition selection)."""

    by: tuple[str, ...] = ()
    keys: Any = None


@dataclass(frozen=True, kw_only=True)
class Budget:
    """The (epsilon, delta) a release is given."""

    epsilon: float
    delta: float


@dataclass(frozen=True, kw_only=True)
class StatisticRelease:
    """One statistic's grouped release, everything but the data and its random source:
    the method, the value column, the budget and how it is split (``split``, the split the
    charge prices), the grouping, the privacy unit, the rule for missing values, the
    0/1 column a ``COUNT(col)`` counts, and the method's release of
    one group's clipped records at ``(epsilon, delta)`` (``release_one``)."""

    method: str
    column: str | None
    budget: Budget
    split: BudgetSplit
    grouping: Grouping
    unit: PrivacyUnit
    nulls: str
    release_one: Callable[[Any, Statistic, float, float], Release]
    present: str | None = None


@dataclass(frozen=True, kw_only=True)
class QueryStatistic:
    """One statistic of a query: its name, the statistic (with the bounds it releases
    with), its request (its ``grouping.keys`` the query's public keys, replaced by the
    shared selection's groups when there is one; its ``present`` the column a
    ``COUNT(col)`` counts) and its own random source."""

    name: str
    statistic: Statistic
    request: StatisticRelease
    rng: RandomSource


@dataclass(frozen=True, kw_only=True)
class TableQuery:
    """A whole query as the tables release it (``tables.query_release``): its statistics
    in the order they draw, the grouping, the privacy unit, the rule for missing values,
    the ``where`` filter (the casts are the table handle's, ``tables.handle``), and the
    (epsilon, delta) of the partition selection its statistics share (None: public keys,
    no groups, or one statistic)."""

    statistics: tuple[QueryStatistic, ...]
    grouping: Grouping
    unit: PrivacyUnit
    nulls: str
    row_filter: RowFilter | None
    selection: tuple[float, float] | None


def signless_zero(key: tuple[Any, ...]) -> tuple[Any, ...]:
    """A group found in the data, its float zeros without a sign: -0.0 and 0.0 are one
    group, and the one a group shows must not be its first row's (``CEIL(-0.3)`` is -0.0;
    whether the zero group reads "-0.0" would tell that such a row came first)."""
    return tuple(0.0 if isinstance(v, float | np.floating) and v == 0 else v for v in key)


def normalise_keys(keys: Any, by: tuple[str, ...]) -> list[tuple[Any, ...]]:
    """Public keys as a list of tuples of by-values (a DataFrame, values or tuples)."""
    if hasattr(keys, "columns") and not isinstance(keys, list | tuple):
        columns = [str(c) for c in keys.columns]
        missing = [b for b in by if b not in columns]
        if missing:
            raise keys_columns("The keys table", list(by), columns, "add or rename its columns")
        native = keys.to_dict("list") if hasattr(keys, "to_dict") else keys.to_dict(as_series=False)
        return list(zip(*(native[b] for b in by), strict=True))
    if isinstance(keys, str | bytes) or not isinstance(keys, Sequence | np.ndarray | set):
        raise InputError(
            Param("keys"),
            " must be a list of group values (tuples for several "
            "group columns) or a DataFrame of the group columns.",
        )
    out: list[tuple[Any, ...]] = []
    for key in keys:
        tup = tuple(key) if isinstance(key, tuple | list) else (key,)
        if len(tup) != len(by):
            raise InputError(
                f"Each key must have one value per group column ({len(by)}); got {key!r}."
            )
        out.append(tuple(v.item() if isinstance(v, np.generic) else v for v in tup))
    if len(set(out)) != len(out):
        raise InputError(Param("keys"), " lists a group more than once.")
    return out


def public_key_count(keys: Any, by: tuple[str, ...]) -> int | None:
    """The number of public keys a release gets (None: private selection, or no groups)."""
    return len(normalise_keys(keys, by)) if (by and keys is not None) else None
