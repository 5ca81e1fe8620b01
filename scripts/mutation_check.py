"""Mutation check of the privacy tests: break a mechanism on purpose, watch tests fail.

Each mutant is a small textual change to ``src/dpsense`` that makes a release less private
than it claims. The script copies the working tree to a temporary directory, applies one
mutant there (the checkout itself is never modified), runs the given test files against the
mutated copy and reports which tests failed. A mutant that no test kills means the tests
are not done; a mutant whose text no longer matches the source is reported as stale, so
the check cannot pass silently after a refactor.

Each mutant runs the tests of the normal suite (``-m "not slow"``, what ``make unit``
runs) in the files it names, killing tests first, and stops at the first failure (``-x``);
hypothesis does not shrink a failing example. A mutant marked ``slow_audit`` is one that
only a statistical audit can see: its named tests may be slow ones.

Run: ``.venv/bin/python scripts/mutation_check.py [--only NAME ...] [--list]``
Exit status: 0 when every mutant is killed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Mutant:
    name: str
    description: str
    path: str
    edits: tuple[tuple[str, str], ...]
    tests: tuple[str, ...]
    slow_audit: bool = False


MUTANTS = (
    Mutant(
        "join-ignores-path",
        "a row whose unit is found through a foreign-key path takes the key as its unit",
        "src/dpsense/tables/joined.py",
        (
            (
                "    joins: list[Join] = []\n    current_alias, current = alias, table\n",
                "    return (alias, path.via[0]), ()\n"
                "    joins: list[Join] = []\n    current_alias, current = alias, table\n",
            ),
        ),
        ("tests/tables/test_join_definition.py",),
    ),
    Mutant(
        "join-shared-key-unchecked",
        "a path key held by two units is not refused (an item would belong to two people "
        "and removing one would remove the other's copy)",
        "src/dpsense/tables/engines/duckdb/joined.py",
        (("            raise shared_key(check.table, check.key)\n", "            pass\n"),),
        ("tests/tables/test_join_definition.py",),
    ),
    Mutant(
        "join-loses-unit",
        "the joined rows lose their unit (each row its own): bounding after the join "
        "bounds nothing, as if rows were bounded before a join that fans them out",
        "src/dpsense/tables/rows/joins.py",
        (
            (
                "    unit = _column(relation.unit)\n",
                "    unit = exp.DPipe(this=_column(relation.unit), expression=exp.Rand())\n",
            ),
        ),
        ("tests/tables/test_join_definition.py",),
    ),
    Mutant(
        "per-unit-keeps-rows",
        "per-unit aggregation: a person keeps several rows per group (grouped by the value "
        "too), so the outer release no longer reads one row per person",
        "src/dpsense/tables/rows/per_unit.py",
        (
            (
                '    return str(tree.group_by(*(k.copy() for k in keys)).sql(dialect="duckdb"))\n',
                "    values = [exp.column(exp.to_identifier(v.column, quoted=True)) "
                "for v in rows.values if v.column]\n"
                "    return str(tree.group_by(*(k.copy() for k in keys), *values)"
                '.sql(dialect="duckdb"))\n',
            ),
        ),
        ("tests/tables/test_per_unit_definition.py",),
    ),
    Mutant(
        "per-unit-loses-unit",
        "per-unit aggregation: the release of the per-person table forgets its unit (each "
        "row its own), so a person reaches every group they have rows in, not g",
        "src/dpsense/query/per_unit.py",
        (("        privacy_unit=joined.unit,\n", "        privacy_unit=None,\n"),),
        ("tests/tables/test_per_unit_definition.py",),
    ),
    Mutant(
        "unit-inferred-type",
        "one table: an undeclared privacy unit compared by the type the engine infers from "
        "every id (ids 1 and 1.0 one person until someone's id abc makes them two)",
        "src/dpsense/query/steps.py",
        (
            (
                "    keyed = (*plan.by, *([plan.unit] if plan.unit is not None else []))\n",
                "    keyed = plan.by\n",
            ),
        ),
        ("tests/neighbours/test_join_identity.py",),
    ),
    Mutant(
        "sample-aggregate-on-error-raise",
        "the withdrawn on_error='raise' allowed again: a failing block raises, so one record "
        "can decide whether a release errs",
        "src/dpsense/methods/sample_aggregate.py",
        (
            ('    if on_error == "raise":\n', '    if on_error == "never":\n'),
            ('    if on_error != "midpoint":\n', '    if on_error not in ("midpoint", "raise"):\n'),
        ),
        ("tests/methods/test_sample_aggregate.py", "tests/neighbours/test_aggregate_neighbours.py"),
    ),
    Mutant(
        "numpy-object-unit-by-values",
        "a numpy object array of unit ids in a mapping converted by its values (all numbers: "
        "floats, so id 1 reads '1.0' until someone's id is a word)",
        "src/dpsense/data/in_memory.py",
        (
            (
                '                isinstance(values, np.ndarray) and values.dtype.kind == "O"\n',
                "                False\n",
            ),
        ),
        ("tests/tables/test_table_handle.py",),
    ),
    Mutant(
        "join-unit-inferred-type",
        "joins: a private table's undeclared unit column compared by its inferred type",
        "src/dpsense/query/join_form.py",
        (
            (
                "    for table, column in sorted({c for pair in plan.compared for c in pair} "
                "| own_units):\n",
                "    for table, column in sorted({c for pair in plan.compared for c in pair}):\n",
            ),
        ),
        ("tests/neighbours/test_join_identity.py",),
    ),
    Mutant(
        "left-join-nulls-kept",
        "a LEFT JOIN's unmatched rows (NULL public columns) kept: the missing-values check "
        "then refuses on a NULL the analyst's join made",
        "src/dpsense/tables/rows/joins.py",
        (("    if relation.not_null:\n", "    if False:\n"),),
        ("tests/neighbours/test_join_identity.py",),
    ),
    Mutant(
        "quantile-interval-tightened",
        "a quantile interval that is not the whole range tightened to the data's own "
        "smallest and largest values",
        "src/dpsense/methods/quantile_interval.py",
        (
            (
                "    high = float(grid[min(j_high + 1, INTERVAL_STEPS)])\n",
                "    high = float(grid[min(j_high + 1, INTERVAL_STEPS)])\n"
                "    if (low, high) != (lower, upper) and isinstance(records, np.ndarray) "
                "and records.size:\n"
                "        low = max(low, float(np.min(records)))\n"
                "        high = min(high, float(np.max(records)))\n",
            ),
        ),
        ("tests/methods/test_intervals.py",),
    ),
    Mutant(
        "interval-pair-eta-doubled",
        "a quantile interval's pair of endpoints drawn with twice the multiplier its share "
        "allows (noise too small)",
        "src/dpsense/methods/quantile_interval.py",
        (
            (
                "        eta=score.eta,\n        exact_score=exact_score,\n",
                "        eta=2 * score.eta,\n        exact_score=exact_score,\n",
            ),
        ),
        ("tests/methods/test_intervals.py",),
    ),
    Mutant(
        "sampling-widening-dropped",
        "interval='privacy+sampling' gives the privacy interval of a mean without the "
        "sampling term z s / sqrt(n): it says it covers the population's mean and does not",
        "src/dpsense/methods/sampling_interval.py",
        (("    half = sampling_halfwidth(spec, alpha)\n", "    half = 0.0\n"),),
        ("tests/methods/test_sampling_interval.py",),
    ),
    Mutant(
        "sampling-spread-noise-dropped",
        "a population interval's sum of squares (its private standard deviation) released "
        "without its noise",
        "src/dpsense/methods/sampling_interval.py",
        (('        "noisy_squares": int(squares.value),\n', '        "noisy_squares": total,\n'),),
        ("tests/methods/test_sampling_interval.py",),
    ),
    Mutant(
        "sampling-binomial-ranks-dropped",
        "a quantile's population interval at the sample quantile's ranks, not moved out to "
        "the binomial ranks r +- b",
        "src/dpsense/methods/sampling_interval.py",
        (("        extra_rows=extra,\n", "        extra_rows=0,\n"),),
        ("tests/methods/test_sampling_interval.py",),
    ),
    Mutant(
        "sampling-ingredients-data-dependent",
        "a population interval's ingredients drawn only for an even number of records: "
        "what the interval covers, and its receipt, depend on one person",
        "src/dpsense/methods/sampling_interval.py",
        (
            (
                "    if out.refused or out.value is None or (mean and not out.interval_parts):\n",
                "    size = call.records.shape[0] if isinstance(call.records, np.ndarray) "
                "else call.records.size\n"
                "    if out.refused or out.value is None or (mean and not out.interval_parts) "
                "or size % 2:\n",
            ),
        ),
        ("tests/neighbours/test_sampling_neighbours.py",),
    ),
    Mutant(
        "interval-halved",
        "the interval of a noise-law release (counts, sums, global statistics) halved",
        "src/dpsense/methods/intervals.py",
        (
            (
                '    return _clipped(value - halfwidth, value + halfwidth, spec["range"])\n',
                '    return _clipped(value - halfwidth / 2, value + halfwidth / 2, spec["range"])'
                "\n",
            ),
        ),
        ("tests/methods/test_intervals.py",),
    ),
    Mutant(
        "quantile-interval-shift-halved",
        "a quantile's interval endpoints moved half as far as the selection's tail needs",
        "src/dpsense/methods/quantile_interval.py",
        (
            (
                "    return max(1, math.ceil(log_ratio / per_row))\n",
                "    return max(1, math.ceil(log_ratio / per_row) // 2)\n",
            ),
        ),
        ("tests/methods/test_intervals.py",),
    ),
    Mutant(
        "mean-interval-count-noise-ignored",
        "the noisy-sum-over-noisy-count mean's interval without the count's noise",
        "src/dpsense/methods/intervals.py",
        (
            (
                '    c_half = float(discrete_laplace_halfwidth(spec["count_scale"], half))\n',
                "    c_half = 0.0\n",
            ),
        ),
        ("tests/methods/test_intervals.py",),
    ),
    Mutant(
        "smooth-noise-divided-by-3",
        "smooth sensitivity noise scale divided by 3",
        "src/dpsense/methods/smooth.py",
        (
            (
                "    return bound / plan.divisor, value\n",
                "    return bound / plan.divisor / 3, value\n",
            ),
        ),
        ("tests/methods/test_smooth_support.py", "tests/methods/test_framework_audits.py"),
    ),
    Mutant(
        "n-treated-as-public",
        "add-remove mean: the whole budget on the sum, divided by the true count",
        "src/dpsense/methods/global_sensitivity.py",
        (
            (
                "LaplaceMechanism(sensitivity, half).release(centred_sum, rng)",
                "LaplaceMechanism(sensitivity, epsilon).release(centred_sum, rng)",
            ),
            (
                "    value = grid.centre + noisy_sum / max(noisy_count, 1)\n",
                "    value = grid.centre + noisy_sum / max(xc.shape[0], 1)\n",
            ),
        ),
        ("tests/methods/test_global_mean_budget.py", "tests/methods/test_framework_audits.py"),
    ),
    Mutant(
        "sample-aggregate-noise-halved",
        "sample-and-aggregate mean aggregator with half the Laplace noise",
        "src/dpsense/methods/sample_aggregate.py",
        (
            (
                "inflated_sensitivity((exact(b.upper) - exact(b.lower)) / k, aggregate)",
                "inflated_sensitivity((exact(b.upper) - exact(b.lower)) / (2 * k), aggregate)",
            ),
        ),
        ("tests/test_budget_arithmetic.py", "tests/methods/test_sample_aggregate_audit.py"),
    ),
    Mutant(
        "smooth-floor-removed-beta-doubled",
        "smooth bound computed at 2 beta and without its floor",
        "src/dpsense/methods/smooth.py",
        (
            (
                "profile.smooth(plan.bound_beta, float(floor))",
                "profile.smooth(2 * plan.bound_beta)",
            ),
            (
                "    bound = max(computed, cap * _FLOOR, _ABSOLUTE_FLOOR)\n",
                "    bound = computed\n",
            ),
        ),
        ("tests/methods/test_smooth_support.py", "tests/methods/test_framework_audits.py"),
    ),
    Mutant(
        "grouped-budget-not-split",
        "every group of a grouped release gets the whole epsilon (no split over g groups)",
        "src/dpsense/tables/request.py",
        (("    eps_g = quotient_down(eps_rest, touched)\n", "    eps_g = eps_rest\n"),),
        ("tests/test_budget_arithmetic.py", "tests/tables/test_grouped_releases.py"),
    ),
    Mutant(
        "unit-rows-ignored-in-counts",
        "a per-person count calibrated to one row instead of m rows",
        "src/dpsense/methods/global_sensitivity.py",
        (("for_privacy(rows_per_unit(statistic), epsilon)", "for_privacy(1, epsilon)"),),
        ("tests/test_budget_arithmetic.py", "tests/tables/test_unit_privacy.py"),
    ),
    Mutant(
        "unit-profile-without-factor-m",
        "per-unit local sensitivities of non-quantiles without the factor m",
        "src/dpsense/statistics/units.py",
        (
            (
                "out = self._rows * self._inner.at((ks + 1) * self._rows - 1)",
                "out = self._inner.at((ks + 1) * self._rows - 1)",
            ),
        ),
        ("tests/tables/test_unit_shortcuts.py", "tests/tables/test_unit_privacy.py"),
    ),
    Mutant(
        "old-quantile-unit-profile",
        "per-person quantiles with the old profile A_row((k+1)m - 1), false for p != 1/2",
        "src/dpsense/statistics/units.py",
        (
            (
                "            lag = quantile_unit_lag(m, *self.level)\n",
                "            lag = m - 1\n",
            ),
        ),
        ("tests/tables/test_unit_quantile_profile.py",),
    ),
    Mutant(
        "quantile-unit-lag-of-m",
        "per-person quantiles with the profile A_row((k+1)m), false at m = 3 for p = 0.1, 0.9",
        "src/dpsense/statistics/units.py",
        (
            (
                "            lag = quantile_unit_lag(m, *self.level)\n",
                "            lag = m\n",
            ),
        ),
        ("tests/tables/test_unit_quantile_profile.py",),
    ),
    Mutant(
        "exponential-without-group-privacy",
        "a per-person exponential-mechanism quantile run at the row-level epsilon",
        "src/dpsense/methods/exponential.py",
        (
            (
                "    row_epsilon = group_privacy_budget(epsilon, 0.0, "
                "rows_per_unit(statistic))[0]\n"
                "    point, pair = interval_budget(row_epsilon)\n",
                "    row_epsilon = epsilon\n    point, pair = interval_budget(row_epsilon)\n",
            ),
        ),
        ("tests/tables/test_unit_shortcuts.py",),
    ),
    Mutant(
        "selection-threshold-lowered",
        "private partition selection with its threshold lowered by 20",
        "src/dpsense/mechanisms/partition_selection.py",
        (("noise >= rule.threshold)", "noise >= rule.threshold - 20)"),),
        ("tests/tables/test_unit_privacy.py",),
    ),
    Mutant(
        "pure-rho-charge",
        "under a rho budget, private partition selection charged as pure rho (its delta dropped)",
        "src/dpsense/tables/request.py",
        (
            (
                "    return ZcdpPrice(Fraction(groups) / (2 * scale * scale), amount(dlt_sel))\n",
                "    return ZcdpPrice(Fraction(groups) / (2 * scale * scale), Fraction(0))\n",
            ),
        ),
        ("tests/accounting/test_zcdp_budget.py", "tests/tables/test_zcdp.py"),
    ),
    Mutant(
        "price-forgets-bounds-steps",
        "under a rho budget, a release with bounds='private' is priced without its bounds steps",
        "src/dpsense/query/price.py",
        (
            (
                "    steps += [private_bounds_step(plan.bounds_epsilon) "
                "for _ in plan.bounds_columns]\n",
                "",
            ),
        ),
        ("tests/query/test_price.py", "tests/query/test_bounds_step.py"),
    ),
    Mutant(
        "price-forgets-shared-selection",
        "under a rho budget, a query's shared partition selection is not priced",
        "src/dpsense/query/price.py",
        (("    if plan.selection is not None:\n", "    if False:\n"),),
        ("tests/query/test_price.py", "tests/query/test_query.py"),
    ),
    Mutant(
        "price-one-group-per-unit",
        "under a rho budget, a grouped statistic is priced as one group's release, not the "
        "touched groups a unit can change",
        "src/dpsense/tables/request.py",
        (("        own = ZcdpPrice(self.touched * one)\n", "        own = ZcdpPrice(one)\n"),),
        ("tests/tables/test_zcdp.py", "tests/query/test_price.py"),
    ),
    Mutant(
        "zcdp-split-over-selected-groups",
        "a query's statistic split over the min(g, s) selected groups, priced over g",
        "src/dpsense/tables/grouped.py",
        (
            (
                "    chosen = _selected_groups(table, request.split, g, rng, params)\n"
                "    eps_g, dlt_g = request.split.per_group\n",
                "    from dpsense.tables.request import budget_split\n"
                "    split = budget_split(request.budget.epsilon, request.budget.delta, by=by,\n"
                "        groups=g, public_keys=None if public is None else len(public))\n"
                "    chosen = _selected_groups(table, split, g, rng, params)\n"
                "    eps_g, dlt_g = split.per_group\n",
            ),
        ),
        ("tests/accounting/test_zcdp_charged_what_runs.py",),
    ),
    Mutant(
        "charge-before-table-check",
        "Accountant.release charges before the table's columns are checked (the release checks)",
        "src/dpsense/pipeline.py",
        (("                plan = checked_table(plan, table)\n", "                pass\n"),),
        ("tests/accounting/test_validate_then_charge.py",),
    ),
    Mutant(
        "sql-not-charged",
        "ds.sql and Accountant.sql run the pipeline without the accountant's ledger",
        "src/dpsense/sql_release.py",
        (("    result = execute(request, accountant)\n", "    result = execute(request)\n"),),
        ("tests/accounting/test_accountant.py",),
    ),
    Mutant(
        "ratio-not-charged",
        "Accountant.private_ratio runs the pipeline without the accountant's ledger",
        "src/dpsense/accountant.py",
        (
            (
                "released(RatioRequest(epsilon, delta, rng, kwargs, where, dataset, a, b), self)",
                "released(RatioRequest(epsilon, delta, rng, kwargs, where, dataset, a, b))",
            ),
        ),
        ("tests/accounting/test_one_door.py",),
    ),
    Mutant(
        "charge-before-method-check",
        "the plan leaves a method's checks of its parameters to the release, after the charge",
        "src/dpsense/query/plan.py",
        (
            (
                "        check_parameters(stat, entry.chosen, dict(entry.options), eps_g, dlt_g, "
                "plan.neighbours)\n",
                "        pass\n",
            ),
        ),
        ("tests/accounting/test_validate_then_charge.py",),
    ),
    Mutant(
        "bounds-column-left-unnamed",
        "a query's private bounds step keeps the column None when the input's one column is used",
        "src/dpsense/query/steps.py",
        (
            (
                "    bounds = tuple(column if c is None else c for c in plan.bounds_columns)\n",
                "    bounds = plan.bounds_columns\n",
            ),
        ),
        ("tests/accounting/test_validate_then_charge.py",),
    ),
    Mutant(
        "count-col-ignores-col",
        "SQL COUNT(col) (a dict's (col, ds.Count()) pair) counts every row, col ignored",
        "src/dpsense/query/_plan_items.py",
        (
            (
                "None if count else col, col if count and paired else None))",
                "None if count else col, None))",
            ),
        ),
        ("tests/query/test_sql_count_col.py",),
    ),
    Mutant(
        "keys-by-inferred-type",
        "public keys cast to a CSV by-column's type as DuckDB infers it from the values",
        "src/dpsense/tables/handle.py",
        (("    casts = {**given, **implied}\n", "    casts = dict(given)\n"),),
        ("tests/tables/test_key_types.py",),
    ),
    Mutant(
        "float-quotient-scale",
        "discrete-Laplace scale as a float quotient (a count at epsilon = 1/3 gets scale 3.0)",
        "src/dpsense/mechanisms/additive.py",
        (
            (
                'cls(quotient_up(sens, check_epsilon(epsilon, where="DiscreteLaplaceMechanism")))',
                'cls(sens / check_epsilon(epsilon, where="DiscreteLaplaceMechanism"))',
            ),
        ),
        ("tests/test_budget_arithmetic.py",),
    ),
    Mutant(
        "inf-is-an-error",
        "an infinite value in a one-column input is an error instead of being clipped",
        "src/dpsense/_arrays.py",
        (("    if not infinite and np.isinf(out).any():\n", "    if np.isinf(out).any():\n"),),
        ("tests/tables/test_infinities.py",),
    ),
    Mutant(
        "inf-is-an-error-in-tables",
        "an infinite value in a table column is an error instead of being clipped",
        "src/dpsense/tables/engines/duckdb/rows_sql.py",
        (
            (
                '        nan = "" if exact_numeric(sql_type) else f" OR {is_nan(num)}"\n',
                '        nan = f" OR {is_nan(num)} OR isinf({num})"\n',
            ),
        ),
        ("tests/tables/test_infinities.py",),
    ),
    Mutant(
        "histogram-window-one-rank-wide",
        "a tied group read as its histogram answers a window one rank wider than asked",
        "src/dpsense/tables/rows/windows.py",
        (
            (
                "cut_window(self.values, self.counts, *ranks, self._n)",
                "cut_window(self.values, self.counts, ranks[0], ranks[1] + 1, self._n)",
            ),
        ),
        ("tests/tables/test_histogram_records.py",),
    ),
    Mutant(
        "histogram-count-below-inclusive",
        "a tied group read as its histogram counts the records at v as below v (tail step)",
        "src/dpsense/tables/rows/windows.py",
        (
            (
                'self.counts[: np.searchsorted(self.values, v, "left")]',
                'self.counts[: np.searchsorted(self.values, v, "right")]',
            ),
        ),
        ("tests/tables/test_histogram_records.py",),
    ),
    Mutant(
        "quantile-score-sensitivity-min",
        "the tie-aware quantile score's sensitivity taken as min(p, 1 - p), not max",
        "src/dpsense/mechanisms/quantile.py",
        (
            (
                "    scaled_sensitivity = max(num, den - num) if",
                "    scaled_sensitivity = min(num, den - num) if",
            ),
        ),
        (
            "tests/mechanisms/test_tie_aware_score.py",
            "tests/mechanisms/test_quantile_mechanisms.py",
        ),
    ),
    Mutant(
        "rank-halfwidth-without-candidates",
        "rank error bars forget the union over the G candidates (ln(1/alpha), not ln(G/alpha))",
        "src/dpsense/mechanisms/accuracy.py",
        (
            (
                "    _, log_ratio = log_bounds(Fraction(candidates) / exact(alpha))\n",
                "    _, log_ratio = log_bounds(Fraction(1) / exact(alpha))\n",
            ),
        ),
        ("tests/methods/test_rank_accuracy.py",),
    ),
    Mutant(
        "private-bounds-step-not-subtracted",
        "bounds='private': the release spends the whole epsilon after the bounds step",
        "src/dpsense/query/bounds_step.py",
        (
            (
                "    return BoundsPlan(float(share), eps_b, rest)\n",
                "    return BoundsPlan(float(share), eps_b, epsilon)\n",
            ),
        ),
        ("tests/query/test_bounds_step.py",),
    ),
    Mutant(
        "mean-bounds-cap-counts-missing-rows",
        "bounds for a mean: the width cap adds s times the rows missing on v's side of 0 "
        "(n - 2 n_v), which rises by s as a row of v's side leaves while r_j drops by 1: "
        "a score moves by 1 + s per row",
        "src/dpsense/bounds.py",
        (
            (
                "    missing = [WIDTH_SHARE * other for _, other in sides]\n",
                "    missing = [WIDTH_SHARE * max(0, n - 2 * side) for side, _ in sides]\n",
            ),
        ),
        ("tests/bounds/test_mean_bounds.py",),
    ),
    Mutant(
        "private-bounds-clipping-never-flagged",
        "bounds='private': a release whose interval reaches a bound is not flagged, so a "
        "mean far from the raw one on tiny data says nothing",
        "src/dpsense/methods/_release.py",
        (
            (
                "        return bool(np.any(low <= lo) or np.any(high >= hi))\n",
                "        return False\n",
            ),
        ),
        ("tests/bounds/test_mean_bounds.py",),
    ),
    Mutant(
        "audit-never-flags",
        "dpsense audit: the combined verdict never reports a violation",
        "src/dpsense/audit/mechanism.py",
        (
            (
                "violation=not histogram.passed or (catastrophe is not None and not "
                "catastrophe.passed),",
                "violation=False,",
            ),
        ),
        ("tests/cli/test_audit_cli.py",),
    ),
    Mutant(
        "audit-alpha-not-split",
        "dpsense audit: the histogram audit at the whole alpha beside the catastrophe test",
        "src/dpsense/audit/mechanism.py",
        (("alpha=level if catastrophe is None else level / 2,", "alpha=level,"),),
        ("tests/audit/test_mechanism_audit.py",),
    ),
    Mutant(
        "where-mod-without-try",
        "a row filter's % is allowed but evaluated as written (no TRY): it raises on a zero",
        "src/dpsense/tables/row_filter.py",
        (
            ('    "Mod",\n    "Neg",\n', '    "Neg",\n'),
            ('    "Day",\n)\n', '    "Day",\n    "Mod",\n)\n'),
            (
                "        return exp.Try(this=exp.Paren(this=inner))\n",
                "        return inner\n",
            ),
        ),
        ("tests/tables/test_total_where.py", "tests/neighbours/test_entry_points.py"),
    ),
    Mutant(
        "schema-cast-failure-becomes-null",
        "a value that does not fit its declared type becomes a null (nulls='error' raises)",
        "src/dpsense/tables/engines/duckdb/casts.py",
        (
            (
                '    return f"SELECT * REPLACE ({exprs_sql}) FROM {view} WHERE {fits_sql}"\n',
                '    return f"SELECT * REPLACE ({exprs_sql}) FROM {view}"\n',
            ),
        ),
        ("tests/tables/test_total_where.py", "tests/neighbours/test_entry_points.py"),
    ),
    Mutant(
        "quantile-levels-one-share",
        "a multi-level quantile statistic gets one share of the split for all its levels",
        "src/dpsense/query/joint_merge.py",
        (
            (
                "    return len(statistic.ps) if isinstance(statistic, Quantiles) else 1\n",
                "    return 1\n",
            ),
        ),
        ("tests/query/test_split_per_value.py",),
    ),
    Mutant(
        "quantile-level-whole-share",
        "released one level at a time, each level spends the whole of the levels' epsilon",
        "src/dpsense/methods/exponential.py",
        (("    each = quotient_down(point, len(statistic.ps))\n", "    each = point\n"),),
        ("tests/tables/test_unit_shortcuts.py",),
    ),
    Mutant(
        "joint-merge-double-epsilon",
        "quantiles of one column merged into one joint release spend twice the sum of their "
        "shares (more epsilon than the query charges)",
        "src/dpsense/query/joint_merge.py",
        (
            (
                "                epsilon=float_down(sum(exact(e.epsilon) for e in members)),\n",
                "                epsilon=float_down(2 * sum(exact(e.epsilon) for e in members)),\n",
            ),
        ),
        ("tests/query/test_joint_merge.py",),
    ),
)


def _copy_tree(destination: Path) -> None:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    for name in listed:
        source = ROOT / name
        if source.is_file():
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


def _apply(mutant: Mutant, tree: Path) -> str | None:
    path = tree / mutant.path
    text = path.read_text()
    for old, new in mutant.edits:
        if text.count(old) != 1:
            return f"stale: {old.strip()!r} is not found exactly once in {mutant.path}"
        text = text.replace(old, new)
    path.write_text(text)
    return None


def run(mutant: Mutant, workers: int) -> tuple[bool, list[str]]:
    with tempfile.TemporaryDirectory(prefix="dpsense-mutant-") as tmp:
        tree = Path(tmp)
        _copy_tree(tree)
        problem = _apply(mutant, tree)
        if problem is not None:
            return False, [problem]
        env = {
            **os.environ,
            "PYTHONPATH": str(tree / "src"),
            "DPSENSE_HYPOTHESIS_PROFILE": "mutation",
        }
        command = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-rf"]
        if not mutant.slow_audit:
            command += ["-m", "not slow"]
        if workers > 1:
            command += ["-n", str(workers)]
        result = subprocess.run(
            [*command, *mutant.tests], cwd=tree, env=env, capture_output=True, text=True
        )
        failed = re.findall(r"^FAILED (\S+)", result.stdout, flags=re.MULTILINE)
        if not failed and result.returncode not in (0, 1, 5):
            return False, [f"pytest exit {result.returncode}: {result.stdout[-400:]}"]
        return bool(failed), failed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", nargs="*", default=None, help="mutant names to run")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    args = parser.parse_args()
    if args.list:
        for mutant in MUTANTS:
            print(f"{mutant.name}: {mutant.description} ({mutant.path})")
        return
    survivors = 0
    start = time.monotonic()
    for mutant in MUTANTS:
        if args.only and mutant.name not in args.only:
            continue
        began = time.monotonic()
        killed, details = run(mutant, args.workers)
        survivors += not killed
        status = "killed" if killed else "SURVIVED"
        kind = " (statistical audit)" if mutant.slow_audit else ""
        took = time.monotonic() - began
        print(f"[{status}] {mutant.name}{kind}: {mutant.description} ({took:.0f} s)", flush=True)
        for line in details:
            print(f"    {line}", flush=True)
    print(f"{time.monotonic() - start:.0f} s in all", flush=True)
    sys.exit(1 if survivors else 0)


if __name__ == "__main__":
    main()
