"""The options of the commands: their flags and help texts, in one place.

The options are the command line's public contract: their names, types, defaults and help
texts do not change. Each is a ``typer.Option`` (or ``typer.Argument``) that a command
function uses as ``name: Annotated[type, opt.NAME] = default``, the type and the default
in the signature; typer copies it for each use, so one option serves several commands.
First the options that several commands share, then each command's own (``lab`` and
``report`` keep their few options in their signatures). Importing this module loads
typer and :mod:`dpsense.defaults` only (``dpsense release --help`` stays light).
"""

from __future__ import annotations

import typer

from dpsense.defaults import BOUNDS_SHARE as DEFAULT_BOUNDS_SHARE
from dpsense.defaults import METHODS
from dpsense.statistics.names import STATISTIC_NAMES

CLI_METHODS = (*METHODS, "sample-aggregate")
"""The --method values of ``dpsense release``."""

MAX_K = 100_000
"""Largest --max-k of ``dpsense analyze``: A(k) is listed row by row."""

# Options of several commands, defined once. The privacy of a release.
EPSILON = typer.Option(help="Privacy budget epsilon of this release.")
DELTA = typer.Option(help="Privacy parameter delta.")
NEIGHBOURS = typer.Option(help="Neighbouring relation: add-remove or substitute.")
SEED = typer.Option(help="Seed for a reproducible demo (NOT secure; marked).")

# Where a release is charged, and how the result is printed.
LEDGER = typer.Option(help="Charge this release to a ledger (dpsense budget init).")
DATASET = typer.Option(help="Dataset label recorded in the ledger (default: DATA).")
JSON = typer.Option("--json", help="Print one JSON object.")
TABLES_JSON = typer.Option("--json", help="Print one JSON object instead of tables.")

# The file a release reads (release, bounds).
DATA = typer.Argument(metavar="DATA", help="A CSV or Parquet file, or - for CSV on standard input.")

# A table's release (release, sql).
PRIVACY_UNIT = typer.Option(help="Column identifying a person: protect all their rows.")
MAX_ROWS = typer.Option(help="Rows kept per person and group (needs --privacy-unit).")
MAX_GROUPS = typer.Option(help="Groups kept per person (needs --privacy-unit).")
NULLS = typer.Option(help="Missing values in the used columns: error or drop.")
INTERVAL = typer.Option(
    help="What the intervals cover: privacy (the data's statistic) or privacy+sampling "
    "(the population's value, for a simple random sample: means, medians, quantiles)."
)
BOUNDS_SHARE = typer.Option(
    help=f"With --bounds private: the share of --epsilon spent on the bounds.  "
    f"[default: {DEFAULT_BOUNDS_SHARE:g}]"
)

# The statistic and its public bounds (release, analyze).
STATISTIC = typer.Option("--statistic", "-s", help=f"One of: {', '.join(STATISTIC_NAMES)}.")
LOWER = typer.Option(help="Public lower bound, chosen without looking at the data.")
UPPER = typer.Option(help="Public upper bound, chosen without looking at the data.")

# ``dpsense release`` alone.
RELEASE_COLUMN = typer.Option("--column", "-c", help="Column to release.")
RELEASE_BOUNDS = typer.Option(
    help="private: find the bounds privately, over the whole column and before any "
    "grouping, with --bounds-share of --epsilon (instead of --lower/--upper)."
)
RELEASE_METHOD = typer.Option(help=f"One of: {', '.join(CLI_METHODS)}.")
RELEASE_LEVELS = typer.Option(
    "--p", help="Level of quantile (0.9), or levels of quantiles (0.1,0.5,0.9)."
)
RELEASE_TRIM = typer.Option(help="Records dropped per end (trimmed-mean).")
RELEASE_RESOLUTION = typer.Option(
    help="median/quantile: public spacing of the possible values (1 for integers); "
    "the release lands on lower + k * resolution."
)
RELEASE_BOUND = typer.Option(help="ptr: proposed bound on the local sensitivity.")
RELEASE_NOISE = typer.Option(help="global: laplace|gaussian; smooth: laplace|cauchy|student-t|lln.")
RELEASE_TEST_FRACTION = typer.Option(help="ptr: share of epsilon spent on the test (0.5).")
RELEASE_DOF = typer.Option(help="smooth student-t: degrees of freedom.")
RELEASE_BLOCKS = typer.Option(help="sample-aggregate: number of disjoint blocks k.")
RELEASE_AGGREGATOR = typer.Option(help="sample-aggregate: mean (pure epsilon) or median (smooth).")
RELEASE_BY = typer.Option(help="Release one value per group of these columns (a,b).")
RELEASE_KEYS = typer.Option(
    help="The public groups: a CSV/Parquet file with the --by columns, or inline "
    "(year=1980,1981, or 1980,1981 for one --by column); an existing file wins."
)
RELEASE_SCHEMA = typer.Option(
    help="Declared column types, COL=TYPE (int, float, decimal(p,s), text); repeatable or "
    "comma-separated. Casts the column: a row whose value does not fit is dropped, "
    "never an error (which would tell whether someone's value fits); median/quantiles of "
    "an int column use resolution 1. A CSV's own types are never used."
)
RELEASE_OUTPUT = typer.Option(help="Also write the result rows to FILE.csv, .parquet or .json.")

# ``dpsense sql`` alone.
SQL_QUERY = typer.Argument(
    metavar="QUERY", help="SELECT ... FROM 'data.parquet' [WHERE ...] [GROUP BY ...]."
)
SQL_EPSILON = typer.Option(help="Privacy budget epsilon of the whole query.")
SQL_BOUNDS = typer.Option(
    help="Public bounds COL=L:U of each aggregated column (repeatable or "
    "comma-separated), or private: find them privately with --bounds-share of "
    "--epsilon."
)
SQL_KEYS = typer.Option(
    help="The public groups: a CSV/Parquet file with the GROUP BY columns, or inline "
    "(year=1980,1981); without it groups are chosen privately (needs --delta > 0)."
)
SQL_SCHEMA = typer.Option(
    help="Declared column types, COL=TYPE (int, float, decimal(p,s), text); repeatable or "
    "comma-separated. Casts the column as release --schema does (a row whose value does "
    "not fit is dropped)."
)
SQL_OUTPUT = typer.Option(help="Also write the released rows to FILE.csv, .parquet or .json.")
SQL_DATASET = typer.Option(help="Dataset label recorded in the ledger (default: FROM).")
SQL_TABLE = typer.Option(
    "--table", help="A private table the query names, NAME=PATH (CSV or Parquet); repeatable."
)
SQL_PUBLIC = typer.Option(
    "--public",
    help="A public table (codes, regions: no one's data), NAME=PATH; repeatable. Joined "
    "freely; its distinct values are the groups when every GROUP BY column comes from it.",
)
SQL_PRIVACY_UNIT = typer.Option(
    "--privacy-unit",
    help="Column identifying a person (in every private table not listed otherwise), or "
    "per table TABLE=COL, or a foreign-key path TABLE=COL:OTHER.KEY (the row belongs to "
    "the person of OTHER's row whose KEY equals COL); repeatable.",
)

# ``dpsense plan`` alone (with the options of ``dpsense sql`` it shares).
PLAN_PUBLIC = typer.Option(
    "--public",
    help="A public table of the query, NAME (or NAME=PATH, as dpsense sql takes it: nothing "
    "is read); repeatable.",
)
PLAN_ROWS_PER_GROUP = typer.Option(help="The declared number of rows in each group (or in all).")
PLAN_TARGET = typer.Option(
    help="A 95% error to reach, NAME=ERROR (value units; a share of the rows for a "
    "quantile), repeatable: the plan also gives the epsilon that meets them."
)
PLAN_SPREAD = typer.Option(
    help="For quantiles: the share of the bounds the data fill, from the lower bound "
    "(an assumption; an empty stretch inside the bounds draws a quantile away)."
)

# ``dpsense bounds`` alone.
BOUNDS_COLUMN = typer.Option(
    "--column", "-c", help="The value column (needed when there are several)."
)
BOUNDS_PRIVACY_UNIT = typer.Option(help="Column naming the person: protect all their rows.")
BOUNDS_MAX_ROWS = typer.Option(help="Rows kept per person (with --privacy-unit).")
BOUNDS_SCHEMA = typer.Option(
    help="Declared column types, COL=TYPE (int, float, decimal(p,s), text); repeatable or "
    "comma-separated. Casts the column as release --schema does (a row whose value does "
    "not fit is dropped)."
)

# ``dpsense ratio`` alone.
RATIO_DATA = typer.Argument(metavar="DATA", help="A CSV or Parquet file with one row per user.")
RATIO_NUMERATOR = typer.Option(help="Column of 0/1 (or yes/no, true/false) contributions to a.")
RATIO_DENOMINATOR = typer.Option(
    help="Column of 0/1 contributions to b (default: every user counts)."
)
RATIO_DELTA = typer.Option(help="Privacy parameter delta (local-bound).")
RATIO_METHOD = typer.Option(help="ksw, naive or local-bound.")
RATIO_BOUND_FRACTION = typer.Option(help="local-bound: share of epsilon for the bound (0.1).")

# ``dpsense audit`` alone.
AUDIT_MECHANISM = typer.Argument(
    metavar="MODULE:FUNCTION",
    help="The mechanism: a function from a dataset (a 1-D float array) to one "
    "number, noise included, e.g. mymech:noisy_mean or path/to/mech.py:noisy_mean. "
    "If it has an rng parameter it gets a numpy Generator (seeded by --seed).",
)
AUDIT_X = typer.Option("--x", help="Dataset x: a CSV or Parquet file.")
AUDIT_X_PRIME = typer.Option(
    "--x-prime", help="Dataset x': x with one record added, removed or replaced."
)
AUDIT_EPSILON = typer.Option(help="The claimed epsilon.")
AUDIT_DELTA = typer.Option(help="The claimed delta.")
AUDIT_DRAWS = typer.Option(help="Outputs tested on each dataset by the histogram audit.")
AUDIT_COLUMN = typer.Option(
    "--column", "-c", help="The column of both files (needed when there are several)."
)
AUDIT_NEIGHBOURS = typer.Option(
    help="The claim's relation, add-remove or substitute: check the pair."
)
AUDIT_ALPHA = typer.Option(help="Chance (at most) of flagging a private mechanism.")
AUDIT_SEED = typer.Option(help="Seed the mechanism's rng and numpy/random.")

# ``dpsense analyze`` alone.
ANALYZE_DATA = typer.Argument(metavar="DATA", help="A CSV or Parquet file holding the data.")
ANALYZE_COLUMN = typer.Option(
    "--column", "-c", help="Column to analyse (needed if the file has several)."
)
ANALYZE_LEVEL = typer.Option("--p", help="Level of --statistic quantile.")
ANALYZE_TRIM = typer.Option(help="Records dropped from each end (trimmed-mean).")
ANALYZE_EPSILON = typer.Option(help="Privacy parameter epsilon (sets beta).")
ANALYZE_DELTA = typer.Option(
    help="Privacy parameter delta (sets beta as 'release --method smooth' does: "
    "Laplace noise if delta > 0, else Student's t with 3 degrees of freedom)."
)
ANALYZE_BOUND = typer.Option(
    help="Proposed sensitivity bound b: report the distance to instability."
)
ANALYZE_MAX_K = typer.Option(help=f"Show A(k) for k = 0..max-k (at most {MAX_K:,}).")
ANALYZE_PLOT = typer.Option(help="Write the smooth-sensitivity profile plot (png, pdf, svg).")

# ``dpsense explore`` alone.
EXPLORE_UNIVERSE = typer.Option(help='Comma-separated values of the universe, e.g. "1,2,3,10,11".')
EXPLORE_DATA = typer.Argument(
    metavar="DATA", help="A CSV or Parquet file with the dataset (or use --values)."
)
EXPLORE_COLUMN = typer.Option("--column", "-c", help="Column of DATA to use.")
EXPLORE_VALUES = typer.Option(help='The dataset as comma-separated numbers, e.g. "1,2,3".')
EXPLORE_MODEL = typer.Option(
    help=(
        "domain: added records are any universe value; population: the universe "
        "is a finite population and the data a subset of it."
    )
)
EXPLORE_MAX_HAMMING = typer.Option(help="Largest Hamming distance h.")
EXPLORE_MAX_EVALUATIONS = typer.Option(
    help="Evaluate each statistic on at most this many datasets per cell; larger "
    "cells are skipped (and listed), the others are still shown."
)
EXPLORE_STATISTICS = typer.Option(help="Comma-separated statistics to explore.")
EXPLORE_LEVEL = typer.Option("--p", help="Level for quantile.")
EXPLORE_TRIM = typer.Option(help="Trim for trimmed-mean.")
EXPLORE_PLOT = typer.Option(help="Write the 2x2 explorer figure (png, pdf, svg).")

# ``dpsense budget init`` and ``dpsense budget show``.
BUDGET_NEW_LEDGER = typer.Argument(metavar="LEDGER", help="The ledger file to create.")
BUDGET_EPSILON = typer.Option(help="Total epsilon budget (or give --rho).")
BUDGET_DELTA = typer.Option(help="Total delta budget; with --rho, the delta' rho is converted at.")
BUDGET_COMPOSITION = typer.Option(help="basic, or advanced (needs --delta-slack).")
BUDGET_DELTA_SLACK = typer.Option(help="advanced composition: the delta' spent from --delta.")
BUDGET_RHO = typer.Option(help="Total zCDP budget instead of --epsilon (needs --delta).")
BUDGET_APPROX_DELTA = typer.Option(
    help="With --rho: the cap on the summed deltas of grouped releases without keys."
)
BUDGET_LEDGER = typer.Argument(metavar="LEDGER", help="The ledger file.")
