"""Checks that the review and the MomentumRNN paper share: both state the momentum cell, its
Jacobian products, the inverse-activation slope, the Adam/RMSProp cells, scheduled restart and the
gradient-descent analogy (the review repeats the MomentumRNN paper's results under its own
numbering), so their rows draw the same instances through these functions. Where the review quotes
the MomentumRNN paper word for word, the quote and the reading both rows check are here too.
"""

from __future__ import annotations

import numpy as np

from .. import optimizers, rnn
from .._core import CheckResult, random_matrices, split_by_size
from ._sampling import by_size, patched, random_signed_matrices, scaled_result, stack_groups


# The words that the review quotes from the MomentumRNN paper, and the readings that both papers'
# rows check.
NAG_RATE_STATEMENT = (
    "For convex optimization, NAG has a convergence rate O(1/t^2), which is significantly faster "
    "than GD or GD with constant momentum whose convergence rate is O(1/t)."
)
INVERSE_SLOPE_STATEMENT = (
    "For mostly used sigma, e.g., sigmoid and tanh, (sigma^{-1}(.))' > 1 and mu Sigma_k dominates "
    "U^T."
)
INVERSE_SLOPE_CORRECTION = (
    "(sigma^{-1})' >= 1 on the range of sigmoid (> 4 there) and tanh (equality only at y = 0)."
)
INVERSE_SLOPE_READING = (
    "(sigma^{-1})'(y) > 1 for every y in the range of sigma, sigma in {sigmoid, tanh}"
)
RESTART_READING = (
    "f(x_t) - f* behaves as alpha^{-t} with 0 < alpha < 1: the per-step factor alpha^{-1} exceeds 1"
)
RESTART_INTENT = (
    "accelerates NAG to a linear convergence rate [...] but also stabilizes the NAG iteration (a "
    "rate that grows, alpha^{-t} with alpha < 1, is neither linear convergence nor stable)"
)


def adam_rnn_check(
    n_inst: int,
    rng: np.random.Generator,
    product: str = "(Uv)/r",
    *,
    diagonal: bool = False,
    relaxed_moment: bool = False,
) -> CheckResult:
    """Remark 4's cells against torch.optim: half the size groups RMSPropRNN (mu = 0), half AdamRNN;
    U well conditioned (cond <= 10) so that W^ = U^-1 W is a fair trainable matrix; T = 8 steps."""
    out = []
    for n, count in split_by_size(min(n_inst, 400), rng, range(1, 9)):
        U = random_signed_matrices(rng, count, n, log10_cond=1)
        if diagonal:  # where both readings of U v / sqrt(m + eps) coincide
            U = np.eye(n) * rng.uniform(0.3, 1.5, (count, n, 1))
        k = int(rng.integers(1, 6))
        mu = 0.0 if rng.uniform() < 0.5 else float(rng.uniform(0.05, 0.95))
        out.append(
            rnn.check_adam_rnn_remark4(
                U,
                rng.standard_normal((count, n, k)),
                rng.standard_normal((count, 8, k)),
                rng.uniform(-0.5, 0.5, (count, n)),
                mu,
                float(rng.uniform(0.5, 0.999)),
                float(rng.uniform(0.1, 1)),
                product=product,
                relaxed_moment=relaxed_moment,
            )
        )
    return stack_groups("adam_rnn_remark4", out)


def rnn_cells(rng, count, n):
    T, m = int(rng.integers(2, 9)), int(rng.integers(1, 6))
    U = random_matrices(rng, count, n, log10_cond=3, scale=1.5)
    W = rng.standard_normal((count, n, m)) / np.sqrt(m)
    x = rng.standard_normal((count, T, m))
    h = rng.uniform(-0.5, 0.5, (count, n))
    v0 = 0.3 * rng.standard_normal((count, n))
    return U, W, x, h, v0


def rnn_check(n_inst, rng, *, part: str, mu=None, symmetric=False):
    n_inst = min(n_inst, 100)  # torch autograd per size group
    out = []
    # (13) with U^T: for n = 1 U^T = U, so the literal statement is sampled where it can
    # differ, n >= 2
    for n, count in split_by_size(n_inst, rng, range(2 if part == "literal13" else 1, 13)):
        act = rnn.ACTIVATIONS[int(rng.integers(2))]
        U, W, x, h, v0 = rnn_cells(rng, count, n)
        if symmetric:
            U = (U + np.swapaxes(U, -1, -2)) / 2
        m, s = (rng.uniform(0, 0.95) if mu is None else mu), rng.uniform(0.1, 1.0)
        if part in ("rewrite", "factor15"):
            res = rnn.check_momentum_rnn(U, W, x, h, v0, m, s, activation=act)
            out.append(res.details["parts"][f"momentum_rnn.{part}"])
        elif part in ("product15", "companion15"):
            out.append(
                rnn.check_momentum_jacobian_product(
                    U,
                    W,
                    x,
                    h,
                    v0,
                    m,
                    s,
                    activation=act,
                    form="paper" if part == "product15" else "companion",
                )
            )
        else:
            out.append(
                rnn.check_rnn_jacobian(
                    U,
                    W,
                    x,
                    h + (0.5 if act == "sigmoid" else 0.0),
                    activation=act,
                    literal=part == "literal13",
                )
            )
    return stack_groups(out[0].claim, out)


def slope_check(n_inst, rng, *, strict: bool, avoid_zero: bool = False):
    out = []
    for act in rnn.ACTIVATIONS:
        lo = -1.0 if act == "tanh" else 0.0
        y = rng.uniform(lo, 1.0, max(n_inst // 2, 1)) * (1 - 1e-9) + 1e-12
        if act == "tanh" and not avoid_zero:
            y[0] = (
                0.0  # inside the paper's hypothesis set (the range of tanh); the case it overlooks
            )
        if avoid_zero:
            y = np.where(np.abs(y) < 1e-3, 0.5, y)
        out.append(rnn.check_inverse_activation_slope(y, activation=act, strict=strict))
    return stack_groups("inverse_slope", out)


def restart_check(n_inst, rng, momentum=None, literal=False):
    def make(n, c):
        q = np.linalg.qr(rng.standard_normal((c, n, n)))[0]
        ev = 10 ** rng.uniform(-3, 0, (c, n))
        A = (q * ev[:, None, :]) @ np.swapaxes(q, -1, -2)
        return optimizers.check_restart_rate(
            (A + np.swapaxes(A, -1, -2)) / 2,
            rng.standard_normal((c, n)),
            momentum=momentum,
            literal=literal,
        )

    return by_size("restart_rate", n_inst, rng, make)


def perturbed_rewrite(rng):
    with patched(rnn, "cell14", scaled_result(1 + 1e-6)):
        return rnn_check(2, rng, part="rewrite")


def rnn_jacobian_wrong(rng):
    """The autograd reference perturbed by 1e-6 relative: the corrected (13) must fail."""
    with patched(rnn, "_batched_jacobian", scaled_result(1 + 1e-6)):
        return rnn_check(2, rng, part="jacobian13")


def slope_wrong(rng):
    """sigma^{-1} scaled by 0.99: its slope at tanh's 0 is 0.99 < 1, the corrected (>= 1) must
    fail."""
    with patched(
        rnn, "_act", lambda f: lambda name: (lambda s, i: (s, lambda z: 0.99 * i(z)))(*f(name))
    ):
        return slope_check(8, rng, strict=False)


def reparam_check(n_inst, rng, *, wrong: bool = False):
    def make(n, c):
        U = random_matrices(rng, c, n, log10_cond=1, scale=1.0)
        W = rng.standard_normal((c, n, 3))
        return rnn.check_reparametrisation(
            U,
            W,
            rng.standard_normal((c, 8, 3)),
            rng.uniform(-0.5, 0.5, (c, n)),
            rng.standard_normal((c, n)),
            rng.uniform(0, 0.95),
            rng.uniform(0.1, 1),
            w_hat=W if wrong else None,
        )

    return by_size("reparametrisation", min(n_inst, 200), rng, make)


def gd_analogy_check(n_inst, rng, pair, plant=False):
    def make(n, c):
        U = random_signed_matrices(rng, c, n, log10_cond=3, scale=1.0)
        m = int(rng.integers(1, 6))
        return rnn.check_gd_analogy(
            U,
            rng.standard_normal((c, n, m)) / np.sqrt(m),
            rng.standard_normal((c, int(rng.integers(2, 9)), m)),
            rng.uniform(-0.5, 0.5, (c, n)),
            pair=pair,
            mu=rng.uniform(0, 0.95),
            s=rng.uniform(0.1, 1),
            plant=plant,
        )

    return by_size("gd_analogy", min(n_inst, 400), rng, make)


# The checks and planted flips that a statement's row in each paper uses, declared once.


def rewrite_check(n_inst: int, rng: np.random.Generator) -> CheckResult:
    """The momentum cell's second-order rewrite ((12) of the MomentumRNN paper, (14) of the review)
    against the cell, step by step."""
    return rnn_check(n_inst, rng, part="rewrite")


def jacobian_literal_check(n_inst: int, rng: np.random.Generator) -> CheckResult:
    """The plain cell's Jacobian product as printed, with U^T, against autograd."""
    return rnn_check(n_inst, rng, part="literal13")


def jacobian_literal_symmetric(rng: np.random.Generator) -> CheckResult:
    """The printed product on symmetric U, where U^T = U makes it right."""
    return rnn_check(2, rng, part="literal13", symmetric=True)


def jacobian_check(n_inst: int, rng: np.random.Generator) -> CheckResult:
    """The corrected product of D_k U against autograd."""
    return rnn_check(n_inst, rng, part="jacobian13")


def momentum_product_check(n_inst: int, rng: np.random.Generator) -> CheckResult:
    """The momentum cell's printed product of D^_k (U^T + mu Sigma_k) against autograd."""
    return rnn_check(n_inst, rng, part="product15")


def momentum_product_without_momentum(rng: np.random.Generator) -> CheckResult:
    """The printed product at mu = 0, where the cell is the plain one."""
    return rnn_check(2, rng, part="product15", mu=0.0)


def slope_strict_check(n_inst: int, rng: np.random.Generator) -> CheckResult:
    """(sigma^-1)' > 1 as printed, on the whole range of sigma (tanh's 0 included)."""
    return slope_check(n_inst, rng, strict=True)


def slope_strict_off_zero(rng: np.random.Generator) -> CheckResult:
    """(sigma^-1)' > 1 away from tanh's 0, where it holds."""
    return slope_check(8, rng, strict=True, avoid_zero=True)


def slope_corrected_check(n_inst: int, rng: np.random.Generator) -> CheckResult:
    """The corrected (sigma^-1)' >= 1 on the whole range of sigma."""
    return slope_check(n_inst, rng, strict=False)


def restart_literal_check(n_inst: int, rng: np.random.Generator) -> CheckResult:
    """Scheduled restart's rate read as printed, alpha^{-t} with 0 < alpha < 1 (a growing
    factor)."""
    return restart_check(n_inst, rng, literal=True)


def restart_growing(rng: np.random.Generator) -> CheckResult:
    """The printed reading on a momentum of 1.2, whose iterates do grow."""
    return restart_check(2, rng, momentum=lambda t: 1.2, literal=True)


def restart_unit_momentum(rng: np.random.Generator) -> CheckResult:
    """The corrected (accelerated) rate on a constant momentum of 1, which never damps."""
    return restart_check(2, rng, momentum=lambda t: 1.0)


def plain_analogy_check(n_inst: int, rng: np.random.Generator) -> CheckResult:
    """The plain cell rewritten as a gradient step, h_t = phi(h_{t-1} + u_t)."""
    return gd_analogy_check(n_inst, rng, "(6)-(7)")


def plain_analogy_planted(rng: np.random.Generator) -> CheckResult:
    """The plain cell's rewrite with U^T in place of U^-1."""
    return gd_analogy_check(3, rng, "(6)-(7)", plant=True)


def momentum_analogy_check(n_inst: int, rng: np.random.Generator) -> CheckResult:
    """The momentum cell from the heavy-ball step on that rewrite, v_t := -U p_t."""
    return gd_analogy_check(n_inst, rng, "(8)-(9)")


def momentum_analogy_planted(rng: np.random.Generator) -> CheckResult:
    """The momentum cell's derivation with v_t := -p_t in place of -U p_t."""
    return gd_analogy_check(3, rng, "(8)-(9)", plant=True)


def reparam_wrong(rng: np.random.Generator) -> CheckResult:
    """The reparametrised cell with W in place of W^ = U^-1 W."""
    return reparam_check(3, rng, wrong=True)


def adam_rnn_diagonal(rng: np.random.Generator) -> CheckResult:
    """Remark 4's cells on diagonal U, where both readings of U v / sqrt(m + eps) coincide."""
    return adam_rnn_check(3, rng, diagonal=True)


def adam_rnn_corrected_check(n_inst: int, rng: np.random.Generator) -> CheckResult:
    """The corrected cell, U applied after the entry-wise quotient, against torch.optim."""
    return adam_rnn_check(n_inst, rng, product="U(v/r)")


def adam_rnn_relaxed_moment(rng: np.random.Generator) -> CheckResult:
    """The corrected cell with (17)'s second moment of W x_t = U W^ x_t, the relaxation Remark 4
    says it avoids."""
    return adam_rnn_check(3, rng, product="U(v/r)", relaxed_moment=True)
