"""The machinery every paper's checks share: joining size groups into one result, common random
instances, and patching a topic module while a planted violation runs.

Every generator draws sizes 1-12 (where a size applies) and mixes well- and ill-conditioned
instances; instances of one size are checked in one batch (:func:`by_size`, :func:`stack_groups`).
"""

from __future__ import annotations

import contextlib
import dataclasses

import numpy as np

from .._core import CheckResult, combine, random_matrices, split_by_size


def _size(result: CheckResult) -> int:
    return int(sum(np.size(v) for v in result.instance.values()))


def stack_groups(claim: str, groups: list[CheckResult]) -> CheckResult:
    """Join the size groups of one check; keeps the worst group's instance and, when some group
    fails, the smallest failing one (``details['smallest_failing']``: the counterexample a table row
    shows)."""
    worst = max(
        groups, key=lambda g: (not g.holds, g.residual / g.tolerance if g.tolerance else g.residual)
    )
    passed = np.concatenate([g.passed for g in groups])
    details = {"worst_part": worst.details.get("worst_part", worst.claim)}
    failing = [g for g in groups if not g.holds]
    if failing:
        details["smallest_failing"] = min(failing, key=lambda g: (_size(g), g.residual))
    undecided = np.concatenate(
        [
            g.undecided if g.undecided.size == g.passed.size else np.zeros(g.passed.size, bool)
            for g in groups
        ]
    )
    return CheckResult(
        claim,
        bool(passed.all()),
        worst.residual,
        worst.tolerance,
        worst.instance,
        worst.message,
        np.concatenate([g.residuals for g in groups]),
        passed,
        details,
        worst.sides,
        undecided,
    )


def join_parts(claim: str, parts: list[list[CheckResult]]) -> CheckResult:
    """Each entry of ``parts`` is one sub-check over size groups; sub-checks saw the same
    instances."""
    return combine(claim, [stack_groups(p[0].claim, p) for p in parts])


def random_spd(
    rng: np.random.Generator, count: int, n: int, kappa_max: float, gap: float
) -> np.ndarray:
    """``count`` symmetric positive definite n x n matrices: smallest eigenvalue 1 (times a scale
    over 4 decades), the others in [gap, kappa], kappa log-uniform up to ``kappa_max``."""
    q = np.linalg.qr(rng.standard_normal((count, n, n)))[0]
    kappa = 10 ** rng.uniform(np.log10(max(gap, 1.01) + 0.01), np.log10(kappa_max), (count, 1))
    rest = gap + (kappa - gap) * rng.uniform(0, 1, (count, n - 1))
    ev = np.concatenate([np.ones((count, 1)), rest], axis=1) * 10 ** rng.uniform(-2, 2, (count, 1))
    A = (q * ev[:, None, :]) @ np.swapaxes(q, -1, -2)
    return (A + np.swapaxes(A, -1, -2)) / 2


def random_nets(rng, count, n):
    """A tanh field's weights and start: W (cond <= 1e2, norm ~1.5), b and x0 standard normal."""
    W = random_matrices(rng, count, n, log10_cond=2, scale=1.5)
    return W, rng.standard_normal((count, n)), rng.standard_normal((count, n))


def random_signed_matrices(rng, count, n, *, log10_cond, scale=1.0):
    """:func:`random_matrices`, each times a random sign (so that both orientations are drawn)."""
    matrices = random_matrices(rng, count, n, log10_cond=log10_cond, scale=scale)
    return matrices * rng.choice([-1.0, 1.0], size=(count, 1, 1))


def by_size(name, n_inst, rng, make, sizes=range(1, 13)):
    """``make(n, count)`` for each size group of ``n_inst`` instances, stacked under ``name``."""
    return stack_groups(name, [make(n, count) for n, count in split_by_size(n_inst, rng, sizes)])


def random_psd(rng, count, n, singular: bool):
    """``count`` positive semi-definite n x n matrices, eigenvalues over 6 decades (one of them 0
    when ``singular``)."""
    q = np.linalg.qr(rng.standard_normal((count, n, n)))[0]
    ev = 10 ** rng.uniform(-6, 0, (count, n)) * 10 ** rng.uniform(-2, 2, (count, 1))
    if singular:
        ev[:, 0] = 0.0
    A = (q * ev[:, None, :]) @ np.swapaxes(q, -1, -2)
    return (A + np.swapaxes(A, -1, -2)) / 2


# Each ``flip`` runs a claim's check where its verdict must change: a perturbed formula or instance
# for a true claim, an instance inside the corrected hypotheses for a false one.
@contextlib.contextmanager
def patched(module, name, make):
    """``module.name`` replaced by ``make(original)`` inside the ``with`` block only."""
    original = getattr(module, name)
    setattr(module, name, make(original))
    try:
        yield
    finally:
        setattr(module, name, original)


def scaled_result(factor):
    """A ``make`` for :func:`patched`: the original with its result multiplied by ``factor`` (each
    item, where it returns a tuple)."""

    def make(original):
        def scaled(*args, **kwargs):
            result = original(*args, **kwargs)
            if isinstance(result, tuple):
                return tuple(item * factor for item in result)
            return result * factor

        return scaled

    return make


def scaled_solve(factor):
    """A ``make`` for :func:`patched`: ``solve`` whose solution values are scaled by ``factor``."""

    def make(original):
        def solve(*args, **kwargs):
            sol = original(*args, **kwargs)
            return dataclasses.replace(sol, ys=sol.ys * factor)

        return solve

    return make
