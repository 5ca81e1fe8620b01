"""Generate the bundled example table ``src/dpsense/datasets/census.csv``.

The data is **synthetic**: every row is drawn from the hand-written model below with
``numpy.random.default_rng(2026)``. No real person is described, and no real data set was
read or resampled to make it. The marginal shapes are chosen to look like the
adult-census tables used in differential-privacy teaching material (seeds 000 and 004):
a right-skewed age distribution starting at 17, a spike of working hours at 40,
education coded as years of schooling, a log-normal income and a capital-gain column
that is zero for most people and heavy-tailed for the rest.

The generative model, one person at a time:

* ``age``: ``16.6 + Gamma(shape=2.3, scale=9.4)``, rounded and clipped to 17..90 (mean
  about 38).
* ``sex``: ``Male`` with probability 0.66, else ``Female``.
* ``education_years``: 1..16 from fixed probabilities peaking at 9 (high school) and 13
  (bachelor); people under 26 cannot have more than ``age - 10`` years.
* ``marital_status``: probabilities that depend on the age band (young people are mostly
  never married, older people more often widowed).
* ``occupation``: weights that shift towards professional and managerial jobs with more
  education.
* ``hours_per_week``: about half exactly 40 (a quarter for people under 22 or over 64);
  otherwise a normal with sd 11 around 43 (28 for the young, 25 for the old), rounded to
  a multiple of 5 with probability 0.6; 0.3 % report 99; clipped to 1..99.
* ``income``: ``exp(N(mu, 0.55^2))`` with ``mu`` increasing in education, concave in age,
  higher for longer hours and slightly higher for men; rounded to cents.
* ``capital_gain``: 0 with probability about 0.92 (less for high incomes); otherwise a
  log-normal amount in dollars, and the top-coded value 99999 with probability 0.004.

Run from the repository root::

    python scripts/make_census.py            # writes src/dpsense/datasets/census.csv
    python scripts/make_census.py --check    # fails if the file on disk differs

The output is deterministic for a given numpy version's ``default_rng`` stream.
"""

from __future__ import annotations

import argparse
import csv
import io
import sys
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

SEED = 2026
N_ROWS = 10_000
OUTPUT = Path(__file__).resolve().parent.parent / "src" / "dpsense" / "datasets" / "census.csv"

COLUMNS = (
    "age",
    "sex",
    "education_years",
    "marital_status",
    "occupation",
    "hours_per_week",
    "income",
    "capital_gain",
)

# Years of schooling 1..16; shape modelled on the "education-num" column of adult-census
# tables (most mass at 9 = high-school graduate, 10 = some college, 13 = bachelor).
EDUCATION_P = np.array(
    [0.002, 0.005, 0.010, 0.020, 0.016, 0.029, 0.036, 0.013,
     0.322, 0.224, 0.042, 0.033, 0.164, 0.053, 0.018, 0.013]
)  # fmt: skip

MARITAL = ("Married", "Never-married", "Divorced", "Separated", "Widowed")
# Rows: age bands <25, 25-34, 35-54, 55-69, 70+; columns follow MARITAL.
MARITAL_P = np.array(
    [
        [0.06, 0.91, 0.01, 0.02, 0.00],
        [0.45, 0.44, 0.08, 0.03, 0.00],
        [0.58, 0.15, 0.20, 0.04, 0.03],
        [0.60, 0.07, 0.17, 0.03, 0.13],
        [0.48, 0.04, 0.10, 0.02, 0.36],
    ]
)
AGE_BAND_EDGES = np.array([25, 35, 55, 70])

OCCUPATIONS = (
    "Prof-specialty",
    "Exec-managerial",
    "Tech-support",
    "Sales",
    "Adm-clerical",
    "Craft-repair",
    "Transport",
    "Machine-op",
    "Service",
    "Farming",
)
# Base weights and the change of log-weight per extra year of schooling above 10.
OCCUPATION_BASE = np.array([0.10, 0.11, 0.04, 0.12, 0.13, 0.14, 0.06, 0.07, 0.16, 0.04])
OCCUPATION_SLOPE = np.array([0.45, 0.25, 0.15, 0.0, 0.0, -0.2, -0.25, -0.3, -0.25, -0.2])


def _age(rng: np.random.Generator, n: int) -> NDArray[np.int64]:
    raw = 16.6 + rng.gamma(shape=2.3, scale=9.4, size=n)
    return np.clip(np.rint(raw), 17, 90).astype(np.int64)


def _education(rng: np.random.Generator, age: NDArray[np.int64]) -> NDArray[np.int64]:
    years: NDArray[np.int64] = rng.choice(
        np.arange(1, 17), size=age.shape[0], p=EDUCATION_P / EDUCATION_P.sum()
    )
    young = age < 26
    return np.where(young, np.minimum(years, age - 10), years).astype(np.int64)


def _marital(rng: np.random.Generator, age: NDArray[np.int64]) -> list[str]:
    band = np.searchsorted(AGE_BAND_EDGES, age, side="right")
    probs = MARITAL_P / MARITAL_P.sum(axis=1, keepdims=True)
    u = rng.random(size=int(age.shape[0]))
    idx = (u[:, None] > np.cumsum(probs, axis=1)[band]).sum(axis=1)
    return [MARITAL[min(i, len(MARITAL) - 1)] for i in idx.tolist()]


def _occupation(rng: np.random.Generator, education: NDArray[np.int64]) -> list[str]:
    logits = np.log(OCCUPATION_BASE)[None, :] + OCCUPATION_SLOPE[None, :] * (
        education[:, None] - 10
    )
    weights = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs = weights / weights.sum(axis=1, keepdims=True)
    u = rng.random(size=int(education.shape[0]))
    idx = (u[:, None] > np.cumsum(probs, axis=1)).sum(axis=1)
    return [OCCUPATIONS[min(i, len(OCCUPATIONS) - 1)] for i in idx.tolist()]


def _hours(rng: np.random.Generator, age: NDArray[np.int64]) -> NDArray[np.int64]:
    n = age.shape[0]
    centre = np.where(age < 22, 28.0, np.where(age > 64, 25.0, 43.0))
    hours = rng.normal(centre, 11.0)
    to_five = rng.random(n) < 0.6
    hours = np.where(to_five, 5.0 * np.rint(hours / 5.0), np.rint(hours))
    spike = rng.random(n) < np.where((age < 22) | (age > 64), 0.25, 0.5)
    hours = np.where(spike, 40.0, hours)
    hours = np.where(rng.random(n) < 0.003, 99.0, hours)
    return np.clip(hours, 1, 99).astype(np.int64)


def _income(
    rng: np.random.Generator,
    age: NDArray[np.int64],
    education: NDArray[np.int64],
    hours: NDArray[np.int64],
    male: NDArray[np.bool_],
) -> NDArray[np.float64]:
    a = age.astype(np.float64)
    mu = (
        8.35
        + 0.085 * education
        + 0.075 * a
        - 0.00078 * a * a
        + 0.55 * np.log(hours / 40.0)
        + 0.12 * male
    )
    income = np.exp(rng.normal(mu, 0.55))
    return np.round(np.clip(income, 500.0, 2_000_000.0), 2)


def _capital_gain(rng: np.random.Generator, income: NDArray[np.float64]) -> NDArray[np.int64]:
    n = income.shape[0]
    p_gain = np.clip(0.05 + 0.05 * np.log(income / 40_000.0), 0.02, 0.35)
    has_gain = rng.random(n) < p_gain
    amount = np.rint(np.exp(rng.normal(8.3, 1.0, size=n)))
    top_coded = rng.random(n) < 0.004
    gain = np.where(has_gain, np.minimum(amount, 99_998), 0)
    return np.where(top_coded, 99_999, gain).astype(np.int64)


def generate(seed: int = SEED, n: int = N_ROWS) -> dict[str, list[object]]:
    """Draw the synthetic table, one list per column (in :data:`COLUMNS` order)."""
    rng = np.random.default_rng(seed)
    age = _age(rng, n)
    male = rng.random(n) < 0.66
    education = _education(rng, age)
    marital = _marital(rng, age)
    occupation = _occupation(rng, education)
    hours = _hours(rng, age)
    income = _income(rng, age, education, hours, male)
    gain = _capital_gain(rng, income)
    return {
        "age": age.tolist(),
        "sex": ["Male" if m else "Female" for m in male.tolist()],
        "education_years": education.tolist(),
        "marital_status": marital,
        "occupation": occupation,
        "hours_per_week": hours.tolist(),
        "income": [f"{v:.2f}" for v in income.tolist()],
        "capital_gain": gain.tolist(),
    }


def to_csv(table: dict[str, list[object]]) -> str:
    """Render the table as CSV text with a header row and ``\\n`` line endings."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(COLUMNS)
    writer.writerows(zip(*(table[c] for c in COLUMNS), strict=True))
    return buffer.getvalue()


def main(argv: list[str] | None = None) -> int:
    """Write (or with ``--check``, verify) the bundled census CSV."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=OUTPUT, help="where to write the CSV")
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if the file on disk is not up to date"
    )
    args = parser.parse_args(argv)
    text = to_csv(generate())
    if args.check:
        current = args.output.read_text(encoding="utf-8") if args.output.exists() else ""
        if current != text:
            print(f"{args.output} is out of date; run scripts/make_census.py", file=sys.stderr)
            return 1
        return 0
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text, encoding="utf-8")
    print(f"wrote {N_ROWS} synthetic rows ({len(text.encode()) // 1024} KiB) to {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
