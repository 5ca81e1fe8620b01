r"""Continuous noise whose *rounded* output is sampled exactly.

A release :math:`f + cZ` with a data-dependent scale c cannot be computed as the double
``f + c * z`` for a floating-point draw z: z takes finitely many values with uneven
spacing, the scale moves them onto different doubles for neighbouring datasets, and the
tails are cut (Mironov 2012). Here the released double is instead a fixed function of the
*real* number :math:`Y = f + cZ`: the point of a public lattice :math:`\gamma\mathbb{Z}` nearest
to Y, clamped to the statistic's range,

.. math:: K = \min(\max(\lfloor Y/\gamma + 1/2 \rfloor, k_{lo}), k_{hi}),
   \qquad \text{output} = K\gamma .

K is drawn exactly. Z is written as a fixed function :math:`h(U_1, \dots, U_m)` of
independent uniforms (inverse CDF, Box–Muller, chi-square as :math:`-2\ln \prod U_i`).
Each uniform is a real number whose binary digits are drawn lazily, 64 at a time: after j
digits :math:`U_i` is known to lie in a dyadic box :math:`[a_i, a_i + 2^{-j}]`. Interval
arithmetic (``mpmath.libmp.libmpi``, the routines behind ``mpmath.iv``: every operation
rounds outward, so the computed interval always contains the exact value) encloses
:math:`h` over the boxes, hence Y, hence K. When both ends of the enclosure give the same
K, that K is the value of the function at the (unknown) exact uniforms, and it is
returned; otherwise more digits are drawn and the precision raised. The set of uniforms on
which the enclosure never decides is contained in a finite union of cell boundaries and
poles, which has probability 0, so the loop ends with probability 1 and **the output has
exactly the distribution of the rounded real-valued mechanism**, tails included: every
lattice point has the positive probability the real mechanism gives
its cell. docs/exact_sampling.md gives the argument in full.

References
----------
I. Mironov. "On significance of the least significant bits for differential privacy."
CCS 2012.

G. E. P. Box, M. E. Muller. "A note on the generation of random normal deviates."
Ann. Math. Statist. 29(2), 1958.

C. F. F. Karney. "Sampling exactly from the normal distribution." ACM TOMS 42(1), 2016
(lazily drawn uniform digits for exact sampling).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Final

from dpsense.errors import InputError, Param
from dpsense.noise.rng import RandomSource

__all__ = [
    "LATTICE_BITS",
    "NOISE_SHAPES",
    "NoiseShape",
    "OutputLattice",
    "cell_probability",
    "noise_cdf",
    "sample_on_lattice",
]

LATTICE_BITS: Final = 40
"""The output lattice has spacing about 2^-40 times the width of the statistic's range."""
NOISE_SHAPES: Final = ("laplace", "cauchy", "student-t", "lln")
_MAX_DOF: Final = 64
_DIGITS: Final = 64
_MIN_EXPONENT: Final = -1074


@dataclass(frozen=True)
class OutputLattice:
    r"""The points :math:`k\gamma`, :math:`k_{lo} \le k \le k_{hi}`, fixed by public bounds.

    :math:`\gamma` is a power of two, at least :math:`2^{-40}` times the range's width
    (rounded down to a power of two) and at least the spacing of doubles at the range's
    largest magnitude, so every lattice point is an exact double and ``k`` never reaches
    :math:`2^{53}` in absolute value.
    """

    lower: float
    upper: float
    spacing: float
    first: int
    last: int

    @classmethod
    def for_range(cls, lower: float, upper: float, bits: int = LATTICE_BITS) -> OutputLattice:
        """The lattice of a statistic whose values lie in ``[lower, upper]``."""
        if not (math.isfinite(lower) and math.isfinite(upper) and lower <= upper):
            raise InputError(
                "The output range of this release must be finite; check the bounds of the "
                "statistic."
            )
        width = upper - lower
        if not math.isfinite(width):
            raise InputError(
                "The bounds are too far apart: upper - lower overflows a double. Narrow them."
            )
        exponent = _MIN_EXPONENT
        if width > 0:
            exponent = max(exponent, math.frexp(width)[1] - 1 - bits)
        magnitude = max(abs(lower), abs(upper))
        if magnitude > 0:
            exponent = max(exponent, math.frexp(magnitude)[1] - 53)
        spacing = math.ldexp(1.0, exponent)
        first = math.ceil(Fraction(lower) / Fraction(spacing))
        last = math.floor(Fraction(upper) / Fraction(spacing))
        if first > last:  # a degenerate range narrower than one step: its nearest point
            first = last = round(Fraction(lower) / Fraction(spacing))
        return cls(lower, upper, spacing, first, last)

    def value(self, k: int) -> float:
        """The double ``k * spacing`` (exact)."""
        return float(k) * self.spacing

    def cell_of(self, y: Fraction) -> int:
        """The lattice index of the real number ``y`` (nearest point, clamped)."""
        k = math.floor(y / Fraction(self.spacing) + Fraction(1, 2))
        return min(max(k, self.first), self.last)


@dataclass(frozen=True)
class NoiseShape:
    """A standard noise distribution written as a function of independent uniforms.

    * ``laplace``: :math:`\\ln(2U)` for U < 1/2, :math:`-\\ln(2 - 2U)` otherwise;
    * ``cauchy``: :math:`\\tan(\\pi(U - 1/2))`;
    * ``student-t`` with integer ``dof`` d: :math:`N_1 / \\sqrt{\\chi^2_d / d}` with
      :math:`(N_1, N_2)` from one Box–Muller pair and
      :math:`\\chi^2_d = -2\\ln(U_1 \\cdots U_{\\lfloor d/2\\rfloor}) + [d \\text{ odd}] N_2^2`;
    * ``lln`` (Laplace-log-normal, ``sigma``): :math:`X e^{\\sigma N_1}`, X Laplace.
    """

    name: str
    dof: int = 3
    sigma: float = 0.5

    def __post_init__(self) -> None:
        if self.name not in NOISE_SHAPES:
            raise InputError(
                f"The noise must be one of {', '.join(NOISE_SHAPES)}. Got {self.name!r} instead."
            )
        if self.name == "student-t" and not (
            isinstance(self.dof, int) and 1 <= self.dof <= _MAX_DOF
        ):
            raise InputError(
                Param("dof", word="option"),
                f" of Student's t noise must be an int in [1, {_MAX_DOF}]. "
                f"Got {self.dof!r} instead.",
            )
        if self.name == "lln" and not (math.isfinite(self.sigma) and self.sigma > 0):
            raise InputError(
                f"The 'sigma' option of lln noise must be a float > 0. Got {self.sigma!r} instead."
            )

    @property
    def uniforms(self) -> int:
        """How many independent uniforms one draw uses."""
        if self.name in ("laplace", "cauchy"):
            return 1
        if self.name == "student-t":
            return self.dof // 2 + 2
        return 3

    def enclose(self, boxes: list[Any], prec: int) -> Any:
        """An interval containing Z for every choice of the uniforms inside ``boxes``.

        Intervals are ``mpmath.libmp`` raw pairs ``(low, high)``; every operation rounds
        outward at ``prec`` bits (mpmath's certified interval routines, ``libmpi``).
        """
        from mpmath.libmp import fzero, mpf_gt
        from mpmath.libmp import libmpi as mi

        if self.name == "laplace":
            return _laplace(boxes[0], prec)
        if self.name == "cauchy":
            angle = mi.mpi_mul(mi.mpi_pi(prec), mi.mpi_sub(boxes[0], _const(1, -1), prec), prec)
            return mi.mpi_tan(angle, prec)
        if self.name == "lln":
            first, _ = _box_muller(boxes[1], boxes[2], prec)
            sigma = _exact(Fraction(self.sigma))
            spread = mi.mpi_exp(mi.mpi_mul(sigma, first, prec), prec)
            return mi.mpi_mul(_laplace(boxes[0], prec), spread, prec)
        d = self.dof
        first, second = _box_muller(boxes[-2], boxes[-1], prec)
        chi = _const(0)
        for box in boxes[: d // 2]:
            chi = mi.mpi_add(chi, _minus_two_log(box, prec), prec)
        if d % 2:
            chi = mi.mpi_add(chi, mi.mpi_square(second, prec), prec)
        if not mpf_gt(chi[0], fzero):
            return _unbounded()
        return mi.mpi_div(first, mi.mpi_sqrt(mi.mpi_div(chi, _const(d), prec), prec), prec)


def _const(man: int, exp: int = 0) -> Any:
    """The exact point interval ``man * 2^exp``."""
    from mpmath.libmp import from_man_exp

    value = from_man_exp(man, exp)
    return (value, value)


def _exact(q: Fraction) -> Any:
    """A dyadic rational (every double is one) as an exact point interval."""
    if q.denominator & (q.denominator - 1):
        raise ValueError("not a dyadic rational")
    return _const(q.numerator, -(q.denominator.bit_length() - 1))


def _enclose_fraction(q: Fraction, prec: int) -> Any:
    """An interval of ``prec`` bits containing the rational q."""
    from mpmath.libmp import from_int
    from mpmath.libmp import libmpi as mi

    return mi.mpi_div((from_int(q.numerator),) * 2, (from_int(q.denominator),) * 2, prec)


def _unbounded() -> Any:
    from mpmath.libmp import finf, fninf

    return (fninf, finf)


def _minus_two_log(box: Any, prec: int) -> Any:
    """-2 ln(U) over a box in (0, 1], intersected with [0, inf]."""
    from mpmath.libmp import fzero, mpf_lt
    from mpmath.libmp import libmpi as mi

    low, high = mi.mpi_mul(_const(-2), mi.mpi_log(box, prec), prec)
    # outward rounding may dip below 0 at U = 1, where the exact value is 0
    return (fzero if mpf_lt(low, fzero) else low, fzero if mpf_lt(high, fzero) else high)


def _laplace(box: Any, prec: int) -> Any:
    from mpmath.libmp import from_man_exp, mpf_ge, mpf_le
    from mpmath.libmp import libmpi as mi

    half = from_man_exp(1, -1)
    if mpf_le(box[1], half):
        return mi.mpi_log(mi.mpi_shift(box, 1), prec)
    if mpf_ge(box[0], half):
        return mi.mpi_neg(mi.mpi_log(mi.mpi_sub(_const(2), mi.mpi_shift(box, 1), prec), prec))
    return _unbounded()  # the box straddles the median: undecided, refine


def _box_muller(u: Any, v: Any, prec: int) -> tuple[Any, Any]:
    from mpmath.libmp import libmpi as mi

    radius = mi.mpi_sqrt(_minus_two_log(u, prec), prec)
    angle = mi.mpi_mul(mi.mpi_shift(mi.mpi_pi(prec), 1), v, prec)
    cosine, sine = mi.mpi_cos_sin(angle, prec)
    return mi.mpi_mul(radius, cosine, prec), mi.mpi_mul(radius, sine, prec)


class _LazyUniform:
    """A uniform real in (0, 1) of which the first ``bits`` binary digits are known."""

    __slots__ = ("bits", "numerator")

    def __init__(self, rng: RandomSource) -> None:
        self.numerator = rng.word()
        self.bits = _DIGITS

    def refine(self, rng: RandomSource) -> None:
        self.numerator = (self.numerator << _DIGITS) | rng.word()
        self.bits += _DIGITS

    def box(self) -> Any:
        """The exact dyadic box ``[m 2^-bits, (m + 1) 2^-bits]``."""
        from mpmath.libmp import from_man_exp

        return (
            from_man_exp(self.numerator, -self.bits),
            from_man_exp(self.numerator + 1, -self.bits),
        )


def _floor_endpoint(raw: Any, lattice: OutputLattice) -> int:
    """floor of a raw mpmath endpoint (possibly infinite), clamped to the lattice."""
    from mpmath import libmp

    if raw == libmp.finf:
        return lattice.last
    if raw == libmp.fninf:
        return lattice.first
    k = int(libmp.to_int(raw, libmp.round_floor))
    return min(max(k, lattice.first), lattice.last)


def sample_on_lattice(
    rng: RandomSource,
    shape: NoiseShape,
    center: float | Fraction,
    scale: Fraction,
    lattice: OutputLattice,
) -> int:
    r"""The lattice index of :math:`f + cZ`, drawn exactly (Z of the given ``shape``).

    Parameters
    ----------
    rng : RandomSource
        Where the uniform digits come from.
    shape : NoiseShape
        The standard noise Z.
    center : float or Fraction
        f, a finite double or an exact rational.
    scale : Fraction
        c > 0, an exact rational.
    lattice : OutputLattice
        The public output lattice; the result is clamped to its range.

    Returns
    -------
    int
        K with ``lattice.value(K)`` the released double.
    """
    from mpmath.libmp import libmpi as mi

    center = Fraction(center)  # exact; raises for NaN or infinity
    if not scale > 0:
        raise InputError("The noise needs a positive scale.")
    uniforms = [_LazyUniform(rng) for _ in range(shape.uniforms)]
    shift = -(math.frexp(lattice.spacing)[1] - 1)  # dividing by the spacing 2^e is exact
    # No cap on the rounds: an abort would be an event whose probability depends on the
    # data. The loop ends with probability 1 (docs/exact_sampling.md).
    while True:
        prec = uniforms[0].bits + 64
        z = shape.enclose([u.box() for u in uniforms], prec)
        noisy = mi.mpi_add(
            _enclose_fraction(center, prec),
            mi.mpi_mul(_enclose_fraction(scale, prec), z, prec),
            prec,
        )
        t = mi.mpi_add(mi.mpi_shift(noisy, shift), _const(1, -1), prec)
        low_end, high_end = t
        low = _floor_endpoint(low_end, lattice)
        high = _floor_endpoint(high_end, lattice)
        if low == high:
            return low
        for u in uniforms:
            u.refine(rng)


def noise_cdf(shape: NoiseShape, z: Any, *, upper: bool = False) -> Any:
    """P(Z <= z) (or P(Z > z) with ``upper=True``) in ``mpmath`` at its current precision.

    The distribution :func:`sample_on_lattice` samples from, written as a CDF: it lets
    tests and audits compute the exact probability of every output.
    """
    import mpmath

    z = mpmath.mpf(z)
    if upper:  # every shape is symmetric about 0
        z = -z
    if mpmath.isinf(z):
        return mpmath.mpf(1 if z > 0 else 0)
    if shape.name == "laplace":
        return mpmath.exp(z) / 2 if z < 0 else 1 - mpmath.exp(-z) / 2
    if shape.name == "cauchy":
        return mpmath.mpf(1) / 2 + mpmath.atan(z) / mpmath.pi
    if shape.name == "student-t":
        d = shape.dof
        tail = (
            mpmath.betainc(
                mpmath.mpf(d) / 2, mpmath.mpf(1) / 2, 0, d / (d + z * z), regularized=True
            )
            / 2
        )
        return tail if z < 0 else 1 - tail
    half_mass = _lln_laplace_transform(abs(z), mpmath.mpf(shape.sigma)) / 2
    return half_mass if z < 0 else 1 - half_mass


def _lln_laplace_transform(a: Any, sigma: Any) -> Any:
    r""":math:`G(a) = E[\exp(-a e^{-\sigma Y})]`, Y ~ N(0, 1), so that for the
    Laplace-log-normal Z, :math:`P(Z \le -a) = G(a)/2` (condition on Y).

    Gauss–Legendre quadrature on panels around the peak of the integrand, which lies
    where :math:`y = a\sigma e^{-\sigma y}` (found by Newton's method).
    """
    import mpmath

    if a == 0:
        return mpmath.mpf(1)
    y = mpmath.mpf(0)
    for _ in range(100):
        pull = a * sigma * mpmath.exp(-sigma * y)
        step = (y - pull) / (1 + sigma * pull)
        y -= step
        if abs(step) < mpmath.mpf(2) ** -30:
            break
    width = 1 / mpmath.sqrt(max(1 + sigma * y, mpmath.mpf(1)))

    def integrand(t: Any) -> Any:
        return mpmath.exp(-a * mpmath.exp(-sigma * t)) * mpmath.npdf(t)

    panels = [y + width * k for k in (-60, -20, -8, -3, 0, 3, 8, 20, 60)]
    return mpmath.quad(integrand, panels, method="gauss-legendre")


def cell_probability(
    shape: NoiseShape, center: float | Fraction, scale: Fraction, lattice: OutputLattice, k: int
) -> Any:
    r"""The exact probability that :func:`sample_on_lattice` returns ``k`` (an mpmath number).

    :math:`P(K = k) = F(b_{k+1}) - F(b_k)` with :math:`b_k = (\gamma(k - 1/2) - f)/c`,
    :math:`b_{k_{lo}} = -\infty` and :math:`b_{k_{hi}+1} = +\infty` (the clamped tails).
    Computed in the tail away from the centre, so tiny probabilities keep their digits.
    """
    import mpmath

    if not lattice.first <= k <= lattice.last:
        return mpmath.mpf(0)
    c = mpmath.mpf(scale.numerator) / scale.denominator
    f = mpmath.mpf(Fraction(center).numerator) / Fraction(center).denominator

    def edge(j: int) -> Any:
        if j == lattice.first:
            return -mpmath.inf
        if j == lattice.last + 1:
            return mpmath.inf
        return (mpmath.mpf(lattice.spacing) * (mpmath.mpf(j) - mpmath.mpf(0.5)) - f) / c

    low, high = edge(k), edge(k + 1)
    if low >= 0:
        return noise_cdf(shape, low, upper=True) - noise_cdf(shape, high, upper=True)
    return noise_cdf(shape, high) - noise_cdf(shape, low)
