"""Convergence rates of the momentum schemes behind the MomentumRNN cells (MomentumRNN paper, Sect.
2.4): NAG with ``mu_t = (t - 1)/(t + 2)`` converges at ``O(1/t**2)`` on convex problems, and the
scheduled restart ``mu_t = (t mod F)/(t mod F + 3)`` converges linearly.

Iterations run on quadratics ``f(x) = x^T A x / 2`` (A symmetric positive semi-definite: convex and
L-smooth, L = max eig A), batched, with step ``s = 1/L``: ``y = x_t + mu_t (x_t - x_{t-1})``,
``x_{t+1} = y - s A y`` (the NAG form of Su, Boyd and Candes, whose bound is
``f(x_t) - f* <= 2 ||x_0 - x*||**2 / (s (t + 1)**2)``).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ._core import (
    CheckResult,
    as_real_array,
    as_scalar_batch,
    as_square,
    check_callable,
    check_count,
    matching_vectors,
    verdict,
)

__all__ = [
    "nag_momentum",
    "restart_momentum",
    "check_nag_rate",
    "check_restart_rate",
    "check_momentum_gd_rate",
    "check_momentum_gd_form",
    "GRADIENT_POINTS",
]


def nag_momentum(t: int) -> float:
    """``(t - 1)/(t + 2)`` (MomentumRNN paper, Sect. 2.4), t = 1, 2, ..."""
    t = check_count("t", t)
    return (t - 1) / (t + 2)


def restart_momentum(F: int) -> Callable[[int], float]:
    """``(t mod F)/(t mod F + 3)``: NAG restarted every F iterations."""
    F = check_count("F", F)
    return lambda t: (t % F) / (t % F + 3)


def _psd(A, context):
    A = as_square("A", A, context=context)
    if np.any(np.abs(A - np.swapaxes(A, -1, -2)) > 1e-12 * (1 + np.abs(A).max())):
        raise ValueError(f"A must be symmetric ({context}); got an asymmetric matrix")
    eig = np.linalg.eigvalsh(A)
    if np.any(eig[..., 0] < -1e-12 * np.abs(eig).max(axis=-1)) or np.any(eig[..., -1] <= 0):
        raise ValueError(
            f"A must be positive semi-definite and non-zero ({context}); got eigenvalues down to "
            f"{eig[..., 0].min():.3g}"
        )
    return A, eig


def _run(A, x0, mu: Callable[[int], float], n_steps: int) -> tuple[np.ndarray, np.ndarray]:
    """``log(f(x_t) - f*)`` for t = 0..n_steps (the iteration is linear in (x_t, x_{t-1}): the
    pair is renormalised each step and the log scale accumulated), and ``||x_0 - x*||**2``."""
    w, V = np.linalg.eigh(A)
    L = w[..., -1]
    s = 1 / L
    z = np.einsum("...ji,...j->...i", V, x0)  # eigen-coordinates; null directions do not move f
    z = np.where(w > 1e-14 * L[..., None], z, 0.0)
    dist2 = np.sum(z * z, axis=-1)
    # the loop is overhead-bound (a few numpy calls per step on small arrays): keep (x_t, x_{t-1})
    # in one array, reduce with einsum, and take the logs once at the end (log of a product = sum of
    # logs)
    pair = np.stack([z, z])  # (2, ..., n): x_t, x_{t-1}
    step_w = (
        s[..., None] * w
    )  # y - (s w) y, not (1 - s w) y: the same rounding as the plain update where s w = 1
    half_w = 0.5 * w
    f_scaled = np.empty((n_steps + 1,) + L.shape)  # f(x_t) / prod of the scales^2 up to t
    scales = np.ones((n_steps + 1,) + L.shape)
    f_scaled[0] = np.einsum("...i,...i,...i->...", half_w, z, z)
    for t in range(1, n_steps + 1):
        y = pair[0] + mu(t) * (pair[0] - pair[1])
        x = y - step_w * y
        pair[1] = pair[0]
        pair[0] = x
        scale = np.sqrt(np.einsum("k...i,k...i->...", pair, pair))
        scale = np.where(scale > 0, scale, 1.0)  # an array also for an unbatched instance
        pair /= scale[..., None]
        scales[t] = scale
        f_scaled[t] = np.einsum("...i,...i,...i->...", half_w, pair[0], pair[0])
    with np.errstate(divide="ignore"):
        logf = np.log(f_scaled) + 2 * np.cumsum(np.log(scales), axis=0)
    return logf, dist2


def _inputs(A, x0, n_steps, context):
    A, eig = _psd(A, context)
    x0 = as_real_array("x0", x0, context=context)
    if x0.shape[-1:] != A.shape[-1:]:
        raise ValueError(
            f"x0 must have shape (..., {A.shape[-1]}) to match A ({context}); got {x0.shape}"
        )
    batch = np.broadcast_shapes(A.shape[:-2], x0.shape[:-1])
    return (
        np.broadcast_to(A, batch + A.shape[-2:]),
        np.broadcast_to(x0, batch + x0.shape[-1:]),
        eig,
        check_count("n_steps", n_steps),
    )


def check_nag_rate(
    A, x0, *, n_steps: int = 500, momentum: Callable[[int], float] = nag_momentum
) -> CheckResult:
    """MomentumRNN paper, Sect. 2.4: "for convex optimization, NAG has a convergence rate
    O(1/t**2)". Checked with Su-Boyd-Candes' constant:
    ``max_t (t + 1)**2 s (f(x_t) - f*) / (2 ||x_0 - x*||**2) <= 1``. ``momentum`` replaces the
    schedule (``lambda t: 0.0``, gradient descent, is only O(1/t) and plants a violation on
    ill-conditioned A)."""
    context = "MomentumRNN Sect. 2.4, NAG rate"
    A, x0, eig, n_steps = _inputs(A, x0, n_steps, context)
    check_callable("momentum", momentum, context=context)
    logf, dist2 = _run(A, x0, momentum, n_steps)
    t = np.arange(n_steps + 1).reshape((-1,) + (1,) * dist2.ndim)
    L = eig[..., -1]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.exp(
            logf + 2 * np.log(t + 1) - np.log(L) - np.log(2 * np.where(dist2 > 0, dist2, 1))
        )
    ratio = np.where(dist2 > 0, np.nan_to_num(ratio, nan=0.0), 0.0).max(axis=0)
    return verdict(
        "nag_rate",
        np.maximum(ratio - 1, 0),
        1e-9,
        dict(A=A, x0=x0),
        "max_t (t+1)^2 (f(x_t) - f*) / (2 L ||x0 - x*||^2) beyond 1",
        sides={"max_t (t+1)^2 (f - f*) / L": ratio * 2 * dist2, "2 ||x0 - x*||^2": 2 * dist2},
    )


# restarted NAG's linear rate per step of f, alpha <= exp(-c / sqrt(kappa)): measured c >= 0.56 for
# kappa <= 3e4
RESTART_RATE_CONSTANT = 0.4


def check_restart_rate(
    A,
    x0,
    *,
    restart: int | None = None,
    n_cycles: int = 30,
    momentum: Callable[[int], float] | None = None,
    literal: bool = False,
) -> CheckResult:
    """MomentumRNN paper, Sect. 2.4: scheduled restart accelerates NAG "to a linear convergence
    rate" on strongly convex problems (the paper writes ``O(alpha**-t)`` with ``0 < alpha < 1``,
    which grows: read as ``O(alpha**t)``). With ``F = restart`` (default ``ceil(2 sqrt(kappa))``)
    the measured rate ``alpha = (f(x_N) / f(x_{N/2}))**(2/N)`` over ``N = n_cycles F`` steps must be
    an *accelerated* linear rate, ``alpha <= exp(-RESTART_RATE_CONSTANT / sqrt(kappa))``.

    Range and power: strongly convex quadratics with kappa in [1, 3e4] (the measured exponent
    ``-sqrt(kappa) log(alpha)`` of the schedule falls from 6.4 at kappa = 1.01 to 0.56 at kappa =
    3e4 and levels off near 0.55; the constant 0.4 keeps a margin). Gradient descent's rate
    ``(1 - 1/kappa)**2`` lies above this bound for every kappa > 30, so
    ``momentum=lambda t: 0.0`` (no acceleration) fails there (the former bound
    ``1 - 1/(4 kappa)`` was weaker than gradient descent's and a planted momentum = 0 "held" at
    kappa = 1e3); for kappa <= 30 this bound does not separate the two rates (the check then has
    no power against GD). ``momentum`` replaces the schedule (``lambda t: 1.0`` never damps,
    ``lambda t: 0.0`` is gradient descent). ``literal=True`` checks the rate as printed,
    ``O(alpha**-t)`` with ``0 < alpha < 1``: a per-step factor ``1/alpha > 1``; residual
    ``max(1 - factor, 0)`` (a converging run violates it)."""
    context = "MomentumRNN Sect. 2.4, scheduled restart"
    A, x0, eig, _ = _inputs(A, x0, 1, context)
    if momentum is not None:
        check_callable("momentum", momentum, context=context)
    if np.any(eig[..., 0] <= 1e-12 * eig[..., -1]):
        raise ValueError(
            f"A must be positive definite (strongly convex: the hypothesis of the linear rate) "
            f"({context}); got smallest eigenvalue {eig[..., 0].min():.3g}"
        )
    kappa = eig[..., -1] / eig[..., 0]
    F = (
        int(np.ceil(2 * np.sqrt(kappa.max())))
        if restart is None
        else check_count("restart", restart)
    )
    n = F * check_count("n_cycles", n_cycles)
    logf, _ = _run(A, x0, restart_momentum(F) if momentum is None else momentum, n)
    with np.errstate(invalid="ignore"):
        alpha = np.exp((logf[-1] - logf[n // 2]) / (n - n // 2))
    alpha = np.where(np.isfinite(alpha), alpha, 0.0)  # exact convergence (f = 0) counts as fast
    bound = np.exp(-RESTART_RATE_CONSTANT / np.sqrt(kappa))
    if literal:
        return verdict(
            "restart_rate.literal",
            np.maximum(1 - alpha, 0),
            0.0,
            dict(A=A, x0=x0, restart=np.full(kappa.shape, F)),
            "printed rate O(alpha^-t), 0 < alpha < 1: measured per-step factor must exceed 1",
            sides={"measured factor": alpha, "printed factor 1/alpha >": np.ones_like(alpha)},
        )
    return verdict(
        "restart_rate",
        np.maximum(alpha - bound, 0),
        0.0,
        dict(A=A, x0=x0, restart=np.full(kappa.shape, F)),
        f"measured linear rate alpha minus the accelerated bound "
        f"exp(-{RESTART_RATE_CONSTANT:g} / sqrt(kappa))",
        sides={
            "alpha": alpha,
            f"exp(-{RESTART_RATE_CONSTANT:g} / sqrt(kappa))": bound,
            "gradient descent (1 - 1/kappa)^2": (1 - 1 / kappa) ** 2,
        },
    )


def check_momentum_gd_rate(
    A, x0, mu: float, *, step: float | None = None, n_steps: int = 500
) -> CheckResult:
    """MomentumRNN Sect. 2.4 (and the review's Sect. 2.4): "GD or GD with constant momentum whose
    convergence rate is O(1/t)". Heavy ball ``x_{t+1} = x_t - s grad f(x_t) + mu (x_t - x_{t-1})``
    (x_{-1} = x_0) on convex quadratics (A PSD, possibly singular), checked with an explicit
    constant: ``max_t t s (f(x_t) - f*) / ||x_0 - x*||**2 <= 1 / (2 (1 - mu))`` (gradient descent's
    1/2 at mu = 0; each mode decays like GD with step s / (1 - mu), so the constant grows like 1 /
    (1 - mu): measured at most 0.23 / (1 - mu) for mu <= 0.99 on random spectra over 8 decades).

    Range: A symmetric PSD, mu in [0, 1), step in (0, 1/L] (default 1/L). ``step`` above
    ``2 (1 + mu) / L`` (outside the hypotheses) makes the iteration diverge: the planted
    violation."""
    context = "MomentumRNN Sect. 2.4, GD with constant momentum"
    A, x0, eig, n_steps = _inputs(A, x0, n_steps, context)
    mu = float(as_scalar_batch("mu", mu, context=context, low=0.0, high=1.0, high_open=True))
    w, V = np.linalg.eigh(A)
    L = w[..., -1]
    s = (
        1 / L
        if step is None
        else np.broadcast_to(
            float(as_scalar_batch("step", step, context=context, low=0.0, low_open=True)), L.shape
        )
    )
    z = np.einsum("...ji,...j->...i", V, x0)
    z = np.where(
        w > 1e-14 * L[..., None], z, 0.0
    )  # null directions do not move: x0 - x* is the rest
    dist2 = np.maximum(np.sum(z * z, axis=-1), np.finfo(float).tiny)
    x, prev = z.copy(), z.copy()
    worst = np.zeros(L.shape)
    with np.errstate(over="ignore", invalid="ignore"):
        for t in range(1, n_steps + 1):
            x, prev = x - s[..., None] * w * x + mu * (x - prev), x
            f = 0.5 * np.einsum("...i,...i,...i->...", w, x, x)
            worst = np.maximum(worst, np.nan_to_num(t * s * f / dist2, nan=np.inf))
    bound = 1 / (2 * (1 - mu))
    return verdict(
        "momentum_gd_rate",
        worst / bound,
        1.0,
        dict(A=A, x0=x0),
        f"max_t t s (f(x_t) - f*) / ||x0 - x*||^2 over the constant 1/(2 (1 - mu)) = {bound:.3g}",
        sides={
            "max_t t s (f - f*) / ||x0 - x*||^2": worst,
            "1 / (2 (1 - mu))": np.full(L.shape, bound),
        },
        mu=mu,
    )


GRADIENT_POINTS = ("x_t", "x_{t-1}")
"""Where (3)'s gradient is evaluated: at x_t as printed (an implicit step) or at x_{t-1}
(Polyak's heavy ball)."""


def check_momentum_gd_form(
    A,
    b,
    x0,
    mu: float,
    s: float,
    *,
    gradient_at: str = "x_t",
    p0: str = "x0",
    n_steps: int = 30,
    reference_mu: float | None = None,
) -> CheckResult:
    """MomentumRNN (3): ``p_0 = x_0; p_t = mu p_{t-1} + s grad f(x_t); x_t = x_{t-1} - p_t`` is
    presented as GD "significantly accelerated by using the momentum [55]" (Polyak's heavy ball).
    Checked on ``f(x) = x^T A x / 2 + b^T x``: the iterates of (3) satisfy the heavy-ball recurrence
    ``x_t = x_{t-1} - s grad f(x_{t-1}) + mu (x_{t-1} - x_{t-2})`` for every t >= 1, started at rest
    (``x_{-1} = x_0``: Polyak's first step is a gradient step). As printed (``gradient_at="x_t"``)
    every step is implicit, ``(I + s A) x_t = x_{t-1} - mu p_{t-1} - s b`` (the same slip as the
    paper's GD sentence, ``x_t = x_{t-1} - s grad f(x_t)``, and its LMC update (4)); with
    ``"x_{t-1}"`` it is heavy ball from t = 2 on. ``p0``: ``"x0"`` as printed (then x_1 = (1 - mu)
    x_0 - s grad f(x_0): the first step pulls x towards the coordinate origin, off heavy ball by
    ``mu |x_0|``) or ``"zero"`` (at rest). Residual: the largest gap relative to the largest iterate
    (1e-12).

    Range: A symmetric PSD (A = 0: a linear f, where both gradient points coincide), any b, x0,
    mu >= 0, s > 0. ``reference_mu`` replaces mu in the heavy-ball recurrence (a wrong reference:
    the planted violation)."""
    context = "MomentumRNN (3)"
    if gradient_at not in GRADIENT_POINTS:
        raise ValueError(
            f"gradient_at must be one of {GRADIENT_POINTS} ({context}); got {gradient_at!r}"
        )
    if p0 not in ("x0", "zero"):
        raise ValueError(f"p0 must be 'x0' (as printed) or 'zero' ({context}); got {p0!r}")
    A = as_square("A", A, context=context)
    if np.any(np.abs(A - np.swapaxes(A, -1, -2)) > 1e-12 * (1 + np.abs(A).max())) or np.any(
        np.linalg.eigvalsh(A)[..., 0] < -1e-12 * (1 + np.abs(A).max())
    ):
        raise ValueError(f"A must be symmetric positive semi-definite ({context})")
    n = A.shape[-1]
    b, x0 = matching_vectors(n, "A", context=context, b=b, x0=x0)
    mu = float(as_scalar_batch("mu", mu, context=context, low=0.0))
    s = float(as_scalar_batch("s", s, context=context, low=0.0, low_open=True))
    ref_mu = (
        mu
        if reference_mu is None
        else float(as_scalar_batch("reference_mu", reference_mu, context=context))
    )
    n_steps = check_count("n_steps", n_steps)
    grad = lambda x: np.einsum("...ij,...j->...i", A, x) + b  # noqa: E731
    implicit = np.eye(n) + s * A
    xs, p = (
        [x0, x0],
        (x0 if p0 == "x0" else np.zeros_like(x0)),
    )  # xs[0] = x_{-1} = x_0: heavy ball at rest
    for _ in range(n_steps):
        if gradient_at == "x_t":
            rhs = xs[-1] - mu * p - s * b
            x = np.linalg.solve(implicit, rhs[..., None])[..., 0]
            p = xs[-1] - x
        else:
            p = mu * p + s * grad(xs[-1])
            x = xs[-1] - p
        xs.append(x)
    xs = np.stack(xs)
    heavy_ball = xs[1:-1] - s * grad(xs[1:-1]) + ref_mu * (xs[1:-1] - xs[:-2])
    size = np.maximum(np.abs(xs).max(axis=(0, -1)), np.finfo(float).tiny)
    gap = np.abs(xs[2:] - heavy_ball).max(axis=(0, -1)) / size
    return verdict(
        "momentum_gd_form",
        gap,
        1e-12,
        dict(A=A, b=b, x0=x0),
        f"(3) with grad f({gradient_at}), p_0 = {'x_0' if p0 == 'x0' else '0'}, vs Polyak's "
        f"heavy ball "
        f"from rest, t >= 1, max relative gap",
        sides={"x_T (3)": xs[-1], "heavy ball step from (x_{T-1}, x_{T-2})": heavy_ball[-1]},
    )
