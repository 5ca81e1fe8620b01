"""Sampler throughput: dpsense (exact, OS CSPRNG) against numpy (insecure) and OpenDP.

Every row draws the same number of samples in this process and reports samples per second
(best of R runs). OpenDP's vectorised Laplace and Gaussian are slow enough that they are
timed on fewer draws; rates are comparable regardless. Peers are optional: a missing one
prints "n/a".

Run: ``.venv/bin/python benchmarks/bench_noise.py [--n 1000000]``
(peers: ``pip install opendp diffprivlib``)
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from fractions import Fraction

import numpy as np

import dpsense as ds
from dpsense._progress import track
from dpsense.noise import SystemRandom, exact
from dpsense.noise.lattice import NoiseShape, OutputLattice, sample_on_lattice


def rate(fn: Callable[[int], object], n: int, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn(n)
        best = min(best, time.perf_counter() - start)
    return n / best


def opendp_samplers() -> dict[str, Callable[[int], object]]:
    try:
        import opendp.prelude as dp
    except ImportError:
        return {}
    dp.enable_features("contrib")

    def make(kind: str, integer: bool) -> Callable[[int], object]:
        t = int if integer else float
        atom = dp.atom_domain(T=t) if integer else dp.atom_domain(T=t, nan=False)
        scale = 3.0 if integer else 1.0
        metric = dp.l1_distance(T=t) if kind == "laplace" else dp.l2_distance(T=t)
        then = dp.m.then_laplace if kind == "laplace" else dp.m.then_gaussian

        def run(n: int) -> object:
            meas = (dp.vector_domain(atom, size=n), metric) >> then(scale=scale)
            return meas([t(0)] * n)

        return run

    return {
        "laplace": make("laplace", False),
        "gaussian": make("gaussian", False),
        "dlaplace": make("laplace", True),
        "dgaussian": make("gaussian", True),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--peer-n", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    n, rep = args.n, args.repeats
    src = SystemRandom()
    gen = np.random.default_rng()
    peer = opendp_samplers()
    zeros = np.zeros(n)
    rows: list[tuple[str, Callable[[int], object], Callable[[int], object] | None, str]] = [
        (
            "Laplace (grid, exact integer noise)",
            lambda k: ds.laplace(zeros[:k], sensitivity=1.0, epsilon=1.0),
            lambda k: gen.laplace(0, 1, k),
            "laplace",
        ),
        (
            "Gaussian (grid, exact discrete Gaussian)",
            lambda k: ds.gaussian(zeros[:k], sensitivity=1.0, epsilon=1.0, delta=1e-6),
            lambda k: gen.normal(0, 1, k),
            "gaussian",
        ),
        (
            "discrete Laplace, scale 3",
            lambda k: exact.discrete_laplace(src, Fraction(3), k),
            lambda k: gen.geometric(1 - np.exp(-1 / 3), k) - gen.geometric(1 - np.exp(-1 / 3), k),
            "dlaplace",
        ),
        (
            "discrete Gaussian, sigma 3",
            lambda k: exact.discrete_gaussian(src, Fraction(9), k),
            lambda k: np.rint(gen.normal(0, 3, k)),
            "dgaussian",
        ),
        (
            "Bernoulli(exp(-1/3))",
            lambda k: exact.bernoulli_exp(
                src, np.ones(k, dtype=np.uint64), np.full(k, 3, dtype=np.uint64)
            ),
            lambda k: gen.random(k) < np.exp(-1 / 3),
            "",
        ),
    ]
    print(f"{n:,} draws per row (OpenDP: {args.peer_n:,}), best of {rep}; samples per second\n")
    print("| sampler | dpsense (CSPRNG) | numpy (insecure) | OpenDP | dpsense / OpenDP |")
    print("|---|---:|---:|---:|---:|")
    for label, ours, base, peer_key in track(rows, "Timing samplers", auto_refresh=False):
        r_ours = rate(ours, n, rep)
        r_base = rate(base, n, rep) if base is not None else float("nan")
        if peer_key and peer_key in peer:
            r_peer = rate(peer[peer_key], args.peer_n, 1)
            peer_txt, ratio = f"{r_peer:,.0f}", f"{r_ours / r_peer:.0f}x"
        else:
            peer_txt, ratio = "n/a", ""
        print(f"| {label} | {r_ours:,.0f} | {r_base:,.0f} | {peer_txt} | {ratio} |")
    lattice_rates(src, gen, rep)


def lattice_rates(src: SystemRandom, gen: np.random.Generator, rep: int) -> None:
    """Exact lattice samples (data-dependent scales) against numpy's inexact doubles."""
    lattice = OutputLattice.for_range(0.0, 100.0)
    draws = 2_000
    shapes = [
        (NoiseShape("laplace"), lambda k: gen.laplace(size=k)),
        (NoiseShape("cauchy"), gen.standard_cauchy),
        (NoiseShape("student-t", dof=3), lambda k: gen.standard_t(3.0, k)),
        (
            NoiseShape("lln", sigma=0.5),
            lambda k: gen.laplace(size=k) * np.exp(0.5 * gen.standard_normal(k)),
        ),
    ]
    print(
        f"\nExact lattice sampling ({draws:,} draws, scale 3.7 on [0, 100]); samples per second\n"
    )
    print("| noise | dpsense exact lattice | numpy float (inexact) | ratio |")
    print("|---|---:|---:|---:|")
    for shape, base in track(shapes, "Timing lattice samplers", auto_refresh=False):

        def ours(k: int, shape: NoiseShape = shape) -> object:
            return [
                sample_on_lattice(src, shape, 50.0, Fraction(37, 10), lattice) for _ in range(k)
            ]

        r_ours = rate(ours, draws, rep)
        r_base = rate(base, 1_000_000, rep)
        name = f"{shape.name}" + (f" ({shape.dof} dof)" if shape.name == "student-t" else "")
        print(f"| {name} | {r_ours:,.0f} | {r_base:,.0f} | {r_base / r_ours:,.0f}x slower |")


if __name__ == "__main__":
    main()
