"""Checks that the review and the Momentum Transformer share: momentum attention, the momentum
connection, linear attention as an RNN, the heavy-ball forms, the adaptive momentum and the
attention reweighting (the review repeats the Momentum Transformer's results under its own
numbering), so their rows draw the same instances through these functions.
"""

from __future__ import annotations

import numpy as np

from .. import attention, heavy_ball
from .._core import CheckResult, combine, random_matrices, split_by_size
from ._sampling import by_size, patched, random_spd, scaled_result, stack_groups


def attention_check(n_inst: int, rng: np.random.Generator) -> CheckResult:
    out = []
    for d, count in split_by_size(n_inst, rng):
        N = int(rng.integers(1, 33))
        q, k, v = (
            rng.standard_normal((count, N, d)) * 10 ** rng.uniform(-1, 0.5) for _ in range(3)
        )
        out.append(
            attention.check_momentum_attention(q, k, v, rng.uniform(0, 0.99), rng.uniform(0.1, 2))
        )
    return stack_groups("momentum_attention", out)


def connection_check(
    n_inst: int, rng: np.random.Generator, reading: str = "previous_input", beta_low: float = 0.0
) -> CheckResult:
    """(15) over stacks of 1-24 layers. ||W_V|| <= 0.1 keeps the heavy-ball growth over 24 layers at
    beta~ = 0.99 below ~1e3 and ||W_Q||, ||W_K|| <= 0.3 keep phi(q)^T phi(k) (elu + 1 ~ exp of
    negative entries) far from underflow; the readings of T_{l-1}(X) still differ by O(||W_V||),
    eight orders above the tolerance."""
    out = []
    for d, count in split_by_size(n_inst, rng, range(1, 9)):
        N, L = int(rng.integers(1, 17)), int(rng.integers(2 if beta_low else 1, 25))
        X = rng.standard_normal((count, N, d)) * 10 ** rng.uniform(-1, 0.5)
        scale = np.array(
            [0.3 * rng.uniform(0.1, 1), 0.3 * rng.uniform(0.1, 1), rng.uniform(0.01, 0.1)]
        )
        W = rng.standard_normal((count, L, 3, d, d)) * scale[:, None, None] / np.sqrt(d)
        out.append(attention.check_momentum_connection(X, W, rng.uniform(beta_low, 0.99), reading))
    return stack_groups("momentum_connection", out)


def prop3_above(rng):
    A = random_spd(rng, 3, 3, 100.0, 2.0)
    step = 1 / np.linalg.eigvalsh(A)[:, -1]
    beta_star = heavy_ball.optimal_momentum(A, step)
    return heavy_ball.check_gradient_ratio_limit(
        A, beta_star + (1 - beta_star) * 0.5, step, n_steps=3000
    )


def prop3_quadratics(rng, count, n):
    """Prop. 3's instances: A SPD (kappa <= 100, every eigenvalue but the smallest at least twice
    it) and a step in [0.5, 1]/L."""
    A = random_spd(rng, count, n, 100.0, 2.0)
    return A, rng.uniform(0.5, 1.0, count) / np.linalg.eigvalsh(A)[:, -1]


def gradient_ratio_below(rng, count, n):
    """Prop. 3's gradient ratio on its instances with beta in [0, beta~/2], where it converges."""
    A, step = prop3_quadratics(rng, count, n)
    beta = heavy_ball.optimal_momentum(A, step) * rng.uniform(0, 0.5, count)
    return heavy_ball.check_gradient_ratio_limit(A, beta, step, seed=int(rng.integers(2**31)))


def attention_wrong(rng):
    with patched(attention, "_weights", scaled_result(1 + 1e-6)):
        return attention_check(3, rng)


def _adaptive_parts(result: CheckResult) -> CheckResult:
    parts = result.details["parts"]
    return combine(
        "adaptive_momentum",
        [parts["gradient_ratio.adaptive_limit"], parts["gradient_ratio.adaptive_range"]],
    )


def adaptive_check(n_inst, rng):
    """(17)-(18) on Prop. 3's instances below beta~ (where the ratio converges): the parts of that
    check about the adaptive momenta, (17) -> beta~ = (1 - sqrt(step nu))^2 and (17), (18) in [0, 1
    - delta]."""

    return by_size(
        "adaptive_momentum",
        min(n_inst, 400),
        rng,
        lambda n, count: _adaptive_parts(gradient_ratio_below(rng, count, n)),
    )


def adaptive_above(rng):
    """beta above beta~: the gradient ratio oscillates and (17) does not settle at beta~."""
    return _adaptive_parts(prop3_above(rng))


def linear_attention_check(n_inst, rng, z_weight=1.0):
    def make(d, c):
        N = int(rng.integers(1, 33))
        q, k, v = (rng.standard_normal((c, N, d)) * 10 ** rng.uniform(-1, 0.5) for _ in range(3))
        return attention.check_linear_attention_rnn(q, k, v, z_weight=z_weight)

    return by_size("linear_attention_rnn", n_inst, rng, make)


def hb_forms_check(n_inst, rng, init="matched"):
    def make(n, c):
        A = random_matrices(rng, c, n, log10_cond=3, scale=1.0)
        A = (A + np.swapaxes(A, -1, -2)) / 2
        x0, x1 = rng.standard_normal((c, n)), rng.standard_normal((c, n))
        return heavy_ball.check_heavy_ball_forms(
            A, x0, x1, rng.uniform(0.01, 0.5), rng.uniform(0, 0.99), n_steps=40, init=init
        )

    return by_size("heavy_ball_forms", min(n_inst, 400), rng, make)


def reweighting_check(n_inst, rng, beta_low=0.01, beta_high=0.99):
    n = min(n_inst, 400)
    return attention.check_attention_reweighting(
        rng.uniform(beta_low, beta_high, n), int(rng.integers(2, 65)), float(rng.uniform(0.1, 2))
    )


# The planted flips that a statement's row in each paper uses, declared once.


def linear_attention_wrong(rng: np.random.Generator) -> CheckResult:
    """The RNN form with its normaliser z_i weighted 1.001: no longer the causal closed form."""
    return linear_attention_check(3, rng, z_weight=1.001)


def connection_layer_applied(rng: np.random.Generator) -> CheckResult:
    """(15) with T_{l-1}(X) read as layer l - 1 applied to X, which is not heavy ball."""
    return connection_check(3, rng, reading="layer_applied", beta_low=0.1)


def reweighting_negative_momentum(rng: np.random.Generator) -> CheckResult:
    """Momentum in (-0.9, -0.1), where the weights alternate instead of growing with the
    distance."""
    return reweighting_check(20, rng, beta_low=-0.9, beta_high=-0.1)


def hb_forms_zero_momentum(rng: np.random.Generator) -> CheckResult:
    """The momentum form started from m^1 = 0, which differs from the two-step form unless
    x^1 = x^0."""
    return hb_forms_check(3, rng, init="zero")
