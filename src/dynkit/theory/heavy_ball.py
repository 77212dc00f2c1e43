"""Optimal heavy-ball momentum on quadratics: Theorem 2 and Prop. 3 of the Momentum Transformer
paper (after Sun et al. 2021), and the adaptive momentum (17)/(18).

Heavy ball (9)/(10) on ``f(x) = x^T A x / 2`` (``b = 0`` without loss: the error ``x - x*`` obeys
the same linear recursion) is linear: on each eigenvector of A with eigenvalue ``lam`` the error
follows ``r**2 - (1 + beta - step lam) r + beta = 0``. The spectral radius of the iteration is
therefore the largest root modulus over Sp(A) — computed batched, for the stated ``beta`` and for a
fine grid of ``beta``. The measured rate comes from running the iteration itself (renormalised every
step so that thousands of steps neither underflow nor lose the direction).
"""

from __future__ import annotations

import numpy as np

from ._core import (
    CheckResult,
    as_real_array,
    as_scalar_batch,
    as_square,
    check_count,
    check_seed,
    combine,
    matching_vectors,
    verdict,
)

__all__ = [
    "check_heavy_ball_rate",
    "check_heavy_ball_forms",
    "check_heavy_ball_momentum_index",
    "HB_MOMENTUM_INDICES",
    "HEAVY_BALL_FORM_INITS",
    "check_gradient_ratio_limit",
    "check_heavy_ball_contraction",
    "heavy_ball_radius",
    "optimal_momentum",
    "adaptive_momentum",
    "ratio_convergence_factor",
]

# Spectral radii from quadratic roots of eigenvalues: rounding ~ sqrt(eps) at the double root
# beta = beta*, where the discriminant vanishes; 1e-6 is comfortably above that.
RADIUS_TOL = 1e-6
# measured rate over steps [K/2, K] carries the Jordan-block factor (K/(K/2))^(2/K) at beta*;
# with K = 4000 that is 1 + 3.5e-4; 2e-3 leaves room and still rejects a sub-optimal beta.
RATE_TOL = 2e-3
# Prop. 3's ratio converges geometrically with factor r(lam_2)/r(nu); instances keep that < ~0.99,
# so after 4000 steps the relative error is far below 1e-6.
RATIO_TOL = 1e-6
# an unsettled ratio whose distance to nu still shrinks (late-half max <= SHRINK x the quarter
# before; 1/k: 0.5, an oscillation that does not decay: ~1) is undecided, not violated
SHRINK = 0.75


def _context(what: str) -> str:
    return f"Momentum Transformer {what}, f = x^T A x / 2 with A SPD"


def _spd(A, context: str) -> tuple[np.ndarray, np.ndarray]:
    A = as_square("A", A, context=context)
    if np.any(np.abs(A - np.swapaxes(A, -1, -2)) > 1e-12 * (1 + np.abs(A).max())):
        raise ValueError(f"A must be symmetric ({context}); got an asymmetric matrix")
    eig = np.linalg.eigvalsh(A)
    if np.any(eig[..., 0] <= 0):
        raise ValueError(
            f"A must be positive definite ({context}); got smallest eigenvalue "
            f"{eig[..., 0].min():.3g}"
        )
    return A, eig


def _step_batch(step, eig: np.ndarray, context: str) -> np.ndarray:
    """``step`` broadcast over the instances whose Hessian eigenvalues are ``eig`` (..., n), in
    ascending order; None gives each instance's ``1 / L``."""
    return np.broadcast_to(
        1 / eig[..., -1]
        if step is None
        else as_scalar_batch("step", step, context=context, low=0, low_open=True),
        eig.shape[:-1],
    )


def heavy_ball_radius(eigenvalues: np.ndarray, step, beta) -> np.ndarray:
    """Spectral radius of heavy ball with ``step``/``beta`` on a quadratic with Hessian eigenvalues
    ``eigenvalues`` (..., n); ``step``/``beta`` broadcast against the batch shape (...,) plus any
    trailing grid axes appended after."""
    context = _context("heavy-ball spectral radius")
    lam = as_real_array("eigenvalues", eigenvalues, context=context)
    if lam.ndim < 1 or lam.shape[-1] == 0:
        raise ValueError(
            f"eigenvalues must have shape (..., n) with n >= 1 ({context}); got shape {lam.shape}"
        )
    step = as_scalar_batch("step", step, context=context, low=0.0, low_open=True)
    beta = as_scalar_batch("beta", beta, context=context, low=0.0, high=1.0, high_open=True)
    b = (1 + beta - step * lam).astype(complex)
    disc = np.sqrt(b * b - 4 * beta)
    return np.maximum(np.abs((b + disc) / 2), np.abs((b - disc) / 2)).max(axis=-1)


def optimal_momentum(A, step=None) -> np.ndarray:
    """Theorem 2's ``beta* = (1 - sqrt(step nu))**2`` (``step`` defaults to ``1/L``)."""
    _, eig = _spd(A, _context("Theorem 2"))
    step = (
        1 / eig[..., -1]
        if step is None
        else as_scalar_batch("step", step, context=_context("Theorem 2"), low=0.0, low_open=True)
    )
    return (1 - np.sqrt(step * eig[..., 0])) ** 2


def adaptive_momentum(
    grad_k, grad_km1, x_k, x_km1, step: float, delta: float = 1e-3, *, variant: int = 17
) -> np.ndarray:
    """Adaptive momentum (17) (``variant=17``) or its gradient-descent approximation (18)."""
    context = _context("adaptive momentum (17)-(18)")
    if isinstance(variant, bool) or variant not in (17, 18):
        raise ValueError(
            f"variant must be 17 or 18 (Momentum Transformer Eq. number); got {variant!r}"
        )
    arrays = {
        name: as_real_array(name, value, context=context)
        for name, value in (
            ("grad_k", grad_k),
            ("grad_km1", grad_km1),
            ("x_k", x_k),
            ("x_km1", x_km1),
        )
    }
    for name, value in arrays.items():
        if value.shape != arrays["grad_km1"].shape or value.ndim < 1:
            raise ValueError(
                f"{name} must have the shape of grad_km1 {arrays['grad_km1'].shape} (..., n) "
                f"({context}); got {value.shape}"
            )
    step = as_scalar_batch("step", step, context=context, low=0.0, low_open=True)
    delta = float(
        as_scalar_batch(
            "delta", delta, context=context, low=0.0, high=1.0, low_open=True, high_open=True
        )
    )
    dg = np.linalg.norm(arrays["grad_k"] - arrays["grad_km1"], axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        if variant == 17:
            ratio = step * dg / np.linalg.norm(arrays["x_k"] - arrays["x_km1"], axis=-1)
        else:
            ratio = dg / np.linalg.norm(arrays["grad_km1"], axis=-1)
    return np.clip((1 - np.sqrt(ratio)) ** 2, 0.0, 1.0 - delta)


def _iterate(
    A: np.ndarray,
    step: np.ndarray,
    beta: np.ndarray,
    n_steps: int,
    rng: np.random.Generator,
    *,
    same_start: bool = False,
    record_ratio: bool = False,
) -> dict:
    """Run heavy ball (9) on x^T A x / 2 from random (x^0, x^1), renormalising the pair each
    step. Returns log-norm history of the error and the last two iterates and gradients
    (``record_ratio``: also Prop. 3's ratio ``||A (x^k - x^{k-1})|| / ||x^k - x^{k-1}||`` at
    every step, ``ratio_history``)."""
    batch, n = A.shape[:-2], A.shape[-1]
    x_prev = rng.standard_normal(batch + (n,))
    x = x_prev.copy() if same_start else rng.standard_normal(batch + (n,))
    log_norm = np.zeros(batch)
    history = np.empty((n_steps + 1,) + batch)
    history[0] = np.log(np.linalg.norm(x, axis=-1))
    ratios = np.empty((n_steps + 1,) + batch) if record_ratio else None
    with np.errstate(divide="ignore", invalid="ignore"):  # exact convergence (A = c I, step = 1/c)
        for k in range(n_steps):
            if record_ratio:
                dx = x - x_prev
                ratios[k] = np.linalg.norm(
                    np.einsum("...ij,...j->...i", A, dx), axis=-1
                ) / np.linalg.norm(dx, axis=-1)
            grad = np.einsum("...ij,...j->...i", A, x)
            x_next = x - step[..., None] * grad + beta[..., None] * (x - x_prev)
            scale = np.linalg.norm(x_next, axis=-1) + np.linalg.norm(x, axis=-1)
            scale = np.where(scale > 0, scale, 1.0)
            x_prev, x = x / scale[..., None], x_next / scale[..., None]
            log_norm += np.log(scale)
            history[k + 1] = log_norm + np.log(np.linalg.norm(x, axis=-1))
    if record_ratio:
        dx = x - x_prev
        ratios[n_steps] = np.linalg.norm(
            np.einsum("...ij,...j->...i", A, dx), axis=-1
        ) / np.linalg.norm(dx, axis=-1)
    return dict(
        history=history,
        x=x,
        x_prev=x_prev,
        ratio_history=ratios,
        grad=np.einsum("...ij,...j->...i", A, x),
        grad_prev=np.einsum("...ij,...j->...i", A, x_prev),
    )


def check_heavy_ball_rate(
    A, step=None, beta=None, *, n_steps: int = 4000, n_grid: int = 400, seed: int = 0
) -> CheckResult:
    """Theorem 2: with ``step <= 1/L`` and ``beta* = (1 - sqrt(step nu))**2`` heavy ball converges
    at rate ``1 - sqrt(step nu)``, and no ``beta`` in ``[0, 1)`` does better.

    Three parts: (i) the spectral radius of the iteration with ``beta`` equals the predicted rate
    (one-sided: larger is a violation); (ii) the rate measured by running ``n_steps`` iterations,
    ``exp(mean d log||e_k||)`` over the second half, equals the predicted rate within ``RATE_TOL``;
    (iii) the smallest radius over a grid of ``n_grid`` values of ``beta`` is not below the
    predicted rate. ``beta`` defaults to ``beta*``; passing another value (or ``step > 1/L``) plants
    a violation.
    """
    context = _context("Theorem 2")
    A, eig = _spd(A, context)
    n_steps, n_grid, seed = (
        check_count("n_steps", n_steps),
        check_count("n_grid", n_grid),
        check_seed("seed", seed),
    )
    batch = A.shape[:-2]
    nu = eig[..., 0]
    step = _step_batch(step, eig, context)
    predicted = 1 - np.sqrt(np.clip(step * nu, 0, 1))
    beta = np.broadcast_to(
        (1 - np.sqrt(np.clip(step * nu, 0, 1))) ** 2
        if beta is None
        else as_scalar_batch("beta", beta, context=context, low=0, high=1, high_open=True),
        batch,
    )
    radius = heavy_ball_radius(eig, step[..., None], beta[..., None])
    run = _iterate(A, step, beta, n_steps, np.random.default_rng(seed))
    half = n_steps // 2
    with np.errstate(invalid="ignore"):
        measured = np.exp((run["history"][-1] - run["history"][half]) / (n_steps - half))
    measured = np.where(np.isnan(measured), 0.0, measured)  # -inf - -inf: the error hit exactly 0
    grid = np.linspace(0, 1, n_grid, endpoint=False)
    best = np.stack([heavy_ball_radius(eig, step[..., None], b) for b in grid], axis=-1).min(
        axis=-1
    )
    instances = dict(A=A, step=step, beta=beta)
    return combine(
        "heavy_ball_rate",
        [
            verdict(
                "heavy_ball_rate.radius",
                np.maximum(radius - predicted, 0),
                RADIUS_TOL,
                instances,
                "spectral radius with beta minus 1 - sqrt(step nu)",
                radius=radius,
                predicted=predicted,
            ),
            # two-sided: with step <= 1/L every mode has modulus sqrt(beta*), so the rate is
            # attained too
            verdict(
                "heavy_ball_rate.measured",
                np.abs(measured - predicted),
                RATE_TOL,
                instances,
                f"|measured rate over {n_steps} steps - predicted|",
                measured=measured,
            ),
            verdict(
                "heavy_ball_rate.optimal",
                np.maximum(predicted - best, 0),
                RADIUS_TOL,
                instances,
                f"predicted rate minus best radius over {n_grid} betas in [0, 1)",
                best=best,
            ),
        ],
    )


def check_heavy_ball_contraction(A, step=None, *, n_steps: int = 300, seed: int = 0) -> CheckResult:
    """Theorem 2's inequality read literally, step by step: ``||x^{k+1} - x*|| <= (1 - sqrt(step nu))
    ||x^k - x*||`` at every k with ``beta = beta*``. Measured finding: this does NOT hold — the iteration
    matrix is not normal (and has a Jordan block at ``nu``), so single steps can expand the error; only
    the asymptotic rate (:func:`check_heavy_ball_rate`) is ``1 - sqrt(step nu)``. Residual: the largest
    per-step ratio divided by the predicted rate, minus 1 (<= 0 would mean the literal statement holds)."""  # noqa: E501
    context = _context("Theorem 2, per-step inequality")
    A, eig = _spd(A, context)
    n_steps, seed = check_count("n_steps", n_steps), check_seed("seed", seed)
    step = _step_batch(step, eig, context)
    predicted = 1 - np.sqrt(np.clip(step * eig[..., 0], 0, 1))
    beta = predicted**2
    # the usual start x^1 = x^0 (x* = 0): the expansion is not an artefact of an arbitrary pair
    # (x^0, x^1)
    run = _iterate(A, step, beta, n_steps, np.random.default_rng(seed), same_start=True)
    with np.errstate(invalid="ignore"):
        # fmax skips the NaN of (-inf) - (-inf): steps after the error became exactly 0
        per_step = np.fmax.reduce(np.exp(np.diff(run["history"], axis=0)), axis=0)
    per_step = np.nan_to_num(per_step, nan=0.0)
    excess = np.where(predicted > 0, per_step / np.where(predicted > 0, predicted, 1) - 1, 0.0)
    return verdict(
        "heavy_ball_contraction",
        np.maximum(excess, 0),
        1e-9,
        dict(A=A, step=step),
        "max_k ||e_{k+1}|| / ||e_k|| over (1 - sqrt(step nu)), minus 1",
        per_step=per_step,
        sides={"max_k ||x^{k+1} - x*|| / ||x^k - x*||": per_step, "1 - sqrt(step nu)": predicted},
    )


HEAVY_BALL_FORM_INITS = ("matched", "zero")
"""Initial momentum of (10) against (9) from (x^0, x^1): ``m^1 = (x^0 - x^1) / gamma`` (what
makes the forms equal) or ``m^1 = 0`` (the usual start; equal only when x^1 = x^0)."""


def check_heavy_ball_forms(
    A, x0, x1, step, beta, *, n_steps: int = 50, init: str = "matched"
) -> CheckResult:
    """Momentum Transformer (9) <=> (10): heavy ball
    ``x^{k+1} = x^k - gamma grad f(x^k) + beta (x^k - x^{k-1})`` and its momentum form
    ``m^{k+1} = beta m^k + grad f(x^k), x^{k+1} = x^k - gamma m^{k+1}`` give the same iterates on
    ``f(x) = x^T A x / 2`` from (x^0, x^1) when ``m^1 = (x^0 - x^1) / gamma`` (``init``, see
    :data:`HEAVY_BALL_FORM_INITS`). Residual: max over k <= n_steps of ``|x^k (9) - x^k (10)|``
    relative to the largest iterate (1e-12: both forms add the same terms in another order).

    Range: A symmetric (any sign: the identity is algebraic), gamma > 0, beta in [0, 1), any x^0,
    x^1."""
    context = _context("(9)-(10)")
    A = as_square("A", A, context=context)
    if np.any(np.abs(A - np.swapaxes(A, -1, -2)) > 1e-12 * (1 + np.abs(A).max())):
        raise ValueError(f"A must be symmetric ({context})")
    x0 = as_real_array("x0", x0, context=context)
    x1 = as_real_array("x1", x1, context=context)
    if x0.shape[-1:] != A.shape[-1:] or x1.shape != x0.shape:
        raise ValueError(
            f"x0 and x1 must have shape (..., {A.shape[-1]}) to match A ({context}); got "
            f"{x0.shape}, "
            f"{x1.shape}"
        )
    step = float(as_scalar_batch("step", step, context=context, low=0.0, low_open=True))
    beta = float(as_scalar_batch("beta", beta, context=context, low=0.0, high=1.0, high_open=True))
    n_steps = check_count("n_steps", n_steps)
    if init not in HEAVY_BALL_FORM_INITS:
        raise ValueError(f"init must be one of {HEAVY_BALL_FORM_INITS} ({context}); got {init!r}")
    grad = lambda x: np.einsum("...ij,...j->...i", A, x)  # noqa: E731
    prev, cur = x0, x1
    m = (x0 - x1) / step if init == "matched" else np.zeros_like(x1)
    y = x1
    gap = np.zeros(np.broadcast_shapes(A.shape[:-2], x0.shape[:-1]))
    size = np.maximum(np.abs(x0).max(axis=-1), np.abs(x1).max(axis=-1))
    for _ in range(n_steps):
        prev, cur = cur, cur - step * grad(cur) + beta * (cur - prev)
        m = beta * m + grad(y)
        y = y - step * m
        size = np.maximum(size, np.abs(cur).max(axis=-1))
        gap = np.maximum(gap, np.abs(cur - y).max(axis=-1))
    return verdict(
        "heavy_ball_forms",
        gap / np.maximum(size, np.finfo(float).tiny),
        1e-12,
        dict(A=A, x0=x0, x1=x1),
        f"(10) with init {init!r} vs (9), max |x^k - x^k| / max |x^k|",
        sides={"x^K (9)": cur, "x^K (10)": y},
    )


def ratio_convergence_factor(eigenvalues: np.ndarray, step, beta) -> np.ndarray:
    """Geometric factor at which Prop. 3's ratio approaches ``nu``: the largest root modulus of any
    other mode divided by the dominant root of the ``nu`` mode (< 1 iff ``beta < beta*``)."""
    lam = np.asarray(eigenvalues, dtype=float)
    step = np.asarray(step, dtype=float)[..., None]
    beta = np.asarray(beta, dtype=float)[..., None]
    b = (1 + beta - step * lam).astype(complex)
    disc = np.sqrt(b * b - 4 * beta)
    big = np.maximum(np.abs((b + disc) / 2), np.abs((b - disc) / 2))
    small = np.minimum(np.abs((b + disc) / 2), np.abs((b - disc) / 2))
    lead = big[..., 0]
    other = np.where(lam[..., 1:] > lam[..., :1] * (1 + 1e-9), big[..., 1:], 0).max(
        axis=-1, initial=0
    )
    return np.maximum(other, small[..., 0]) / lead


def check_gradient_ratio_limit(
    A, beta, step=None, *, n_steps: int | None = None, delta: float = 1e-3, seed: int = 0
) -> CheckResult:
    """Prop. 3: ``||grad f(x^k) - grad f(x^{k-1})|| / ||x^k - x^{k-1}|| -> nu``; and the adaptive
    momentum (17) then tends to ``beta*`` (clipped to ``[0, 1 - delta]``), (17) and (18) staying in
    ``[0, 1 - delta]``.

    Measured finding: the limit needs ``beta <= beta*``. For ``beta > beta*`` every mode of the
    iteration decays at the same modulus ``sqrt(beta)``, no mode dominates and the ratio keeps
    oscillating; at ``beta = beta*`` the nu mode is a Jordan block and the ratio converges only like
    1/k.

    The limit is tested as a limit: an instance holds when the ratio has settled within
    ``RATIO_TOL`` of nu; when it has not, but the distance ``|ratio - nu|`` is still shrinking (its
    maximum over the last half of the run is at most ``SHRINK`` times its maximum over the quarter
    before: 1/k gives 1/2), the instance is *undecided* (:attr:`CheckResult.is_undecided`), never
    VIOLATED: near ``beta*`` the run cannot tell a 1/k convergence (``beta = beta*``, true) from a
    rotation too slow to show within the budget (``beta = beta* (1 + 1e-9)``, false). Only a
    distance that stopped shrinking is a violation (``beta = beta*`` and ``beta* (1 - 1e-9)`` were
    reported VIOLATED).

    Range: A SPD, step in (0, 1/L], beta in [0, 1); ``n_steps`` defaults to what the geometric
    factor :func:`ratio_convergence_factor` needs for 1e-9, capped at 25 000.
    """
    context = _context("Prop. 3")
    A, eig = _spd(A, context)
    if n_steps is not None:
        n_steps = check_count("n_steps", n_steps)
    delta = float(
        as_scalar_batch(
            "delta", delta, context=context, low=0.0, high=1.0, low_open=True, high_open=True
        )
    )
    seed = check_seed("seed", seed)
    batch = A.shape[:-2]
    nu = eig[..., 0]
    step = _step_batch(step, eig, context)
    beta = np.broadcast_to(
        as_scalar_batch("beta", beta, context=context, low=0, high=1, high_open=True), batch
    )
    q = ratio_convergence_factor(eig, step, beta)
    if n_steps is None:  # enough steps for q**n < 1e-9 where q < 0.999, capped
        q_max = float(np.max(q, initial=0.0))
        n_steps = int(
            np.clip(np.ceil(np.log(1e-9) / np.log(min(max(q_max, 1e-3), 0.999))), 10, 25_000)
        )
    run = _iterate(A, step, beta, n_steps, np.random.default_rng(seed), record_ratio=True)
    dx = run["x"] - run["x_prev"]
    dg = run["grad"] - run["grad_prev"]
    ratio = np.linalg.norm(dg, axis=-1) / np.linalg.norm(dx, axis=-1)
    distance = np.abs(run["ratio_history"] - nu) / nu
    quarter = max(n_steps // 4, 1)
    late = np.nanmax(distance[n_steps - 2 * quarter :], axis=0)
    early = np.nanmax(distance[n_steps - 3 * quarter : n_steps - 2 * quarter], axis=0)
    shrinking = late <= SHRINK * early
    beta17 = adaptive_momentum(
        run["grad"], run["grad_prev"], run["x"], run["x_prev"], step, delta, variant=17
    )
    beta18 = adaptive_momentum(
        run["grad"], run["grad_prev"], run["x"], run["x_prev"], step, delta, variant=18
    )
    target = np.clip((1 - np.sqrt(step * nu)) ** 2, 0, 1 - delta)
    in_range = np.maximum(
        np.maximum(-np.minimum(beta17, beta18), 0),
        np.maximum(np.maximum(beta17, beta18) - (1 - delta), 0),
    )
    instances = dict(A=A, beta=beta, step=step)
    return combine(
        "gradient_ratio",
        [
            verdict(
                "gradient_ratio.limit",
                np.abs(ratio - nu) / nu,
                RATIO_TOL,
                instances,
                f"|ratio - nu| / nu after {n_steps} steps (undecided where still shrinking)",
                ratio=ratio,
                nu=nu,
                factor=q,
                undecided=shrinking,
                shrink=late / np.maximum(early, 1e-300),
                sides={f"gradient ratio after {n_steps} steps": ratio, "nu": nu},
            ),
            verdict(
                "gradient_ratio.adaptive_limit",
                np.abs(beta17 - target),
                1e3 * RATIO_TOL,
                instances,
                "|beta_(17) - beta*| (both clipped to [0, 1 - delta])",
            ),
            verdict(
                "gradient_ratio.adaptive_range",
                in_range,
                0.0,
                instances,
                "(17) and (18) stay in [0, 1 - delta]",
            ),
        ],
    )


HB_MOMENTUM_INDICES = ("printed", "backward")
"""The review's (21): ``m^k := (x^{k+1} - x^k)/sqrt(s)`` as printed, or the backward difference
``m^k := (x^k - x^{k-1})/sqrt(s)`` that (21)'s own second equation,
``x^{k+1} = x^k + sqrt(s) m^{k+1}``, defines."""


def check_heavy_ball_momentum_index(
    A,
    b,
    x0,
    x1,
    s: float,
    gamma: float,
    *,
    index: str = "printed",
    n_steps: int = 30,
    reference_gamma: float | None = None,
) -> CheckResult:
    """Review (21): with ``m^k := (x^{k+1} - x^k)/sqrt(s)`` and ``beta := 1 - gamma sqrt(s)``, "we
    can rewrite (1) as m^{k+1} = (1 - gamma sqrt(s)) m^k - sqrt(s) grad F(x^k); x^{k+1} = x^k +
    sqrt(s) m^{k+1}" (21). The heavy-ball iterates of (1) are run here on
    ``F(x) = x^T A x / 2 + b^T x + sum(1 - cos x)`` (a nonlinear gradient ``A x + b + sin x``) from
    (x^0, x^1); m^k is formed from them with the chosen ``index`` (:data:`HB_MOMENTUM_INDICES`), and
    both equations of (21) are measured for every k. Residual: the largest gap of either equation
    relative to ``1 + max |x|`` (1e-12). As printed the m-equation needs grad F(x^{k+1}) and the
    x-equation x^{k+2} - x^{k+1} = x^{k+1} - x^k; with the backward difference both hold exactly.

    Range: A symmetric, any b, x0, x1, s > 0, gamma in [0, 1/sqrt(s)] (beta in [0, 1]).
    ``reference_gamma`` replaces gamma in (21) (a wrong coefficient: the planted violation of the
    corrected reading)."""
    context = "review (21)"
    if index not in HB_MOMENTUM_INDICES:
        raise ValueError(f"index must be one of {HB_MOMENTUM_INDICES} ({context}); got {index!r}")
    A = as_square("A", A, context=context)
    n = A.shape[-1]
    b, x0, x1 = matching_vectors(n, "A", context=context, b=b, x0=x0, x1=x1)
    s = float(as_scalar_batch("s", s, context=context, low=0.0, low_open=True))
    gamma = float(as_scalar_batch("gamma", gamma, context=context, low=0.0, high=1 / np.sqrt(s)))
    g_ref = (
        gamma
        if reference_gamma is None
        else float(as_scalar_batch("reference_gamma", reference_gamma, context=context))
    )
    n_steps = check_count("n_steps", n_steps)
    grad = lambda x: np.einsum("...ij,...j->...i", A, x) + b + np.sin(x)  # noqa: E731
    beta, r = 1 - gamma * np.sqrt(s), np.sqrt(s)
    xs = [x0, x1]
    for _ in range(n_steps + 1):  # (1)
        xs.append(xs[-1] - s * grad(xs[-1]) + beta * (xs[-1] - xs[-2]))
    xs = np.stack(xs)
    diffs = (xs[1:] - xs[:-1]) / r  # diffs[j] = (x^{j+1} - x^j)/sqrt(s)
    # m[k] for k = 1..n_steps: forward m^k = diffs[k], backward m^k = diffs[k-1]
    m = diffs[1 : n_steps + 2] if index == "printed" else diffs[0 : n_steps + 1]
    k = np.arange(1, n_steps + 1)
    m_gap = m[1:] - ((1 - g_ref * r) * m[:-1] - r * grad(xs[k]))
    x_gap = xs[k + 1] - (xs[k] + r * m[1:])
    size = 1 + np.abs(xs).max(axis=(0, -1))
    gap_m = np.abs(m_gap).max(axis=(0, -1)) / size
    gap_x = np.abs(x_gap).max(axis=(0, -1)) / size
    instances = dict(A=A, b=b, x0=x0, x1=x1)
    what = (
        "m^k = (x^{k+1} - x^k)/sqrt(s)" if index == "printed" else "m^k = (x^k - x^{k-1})/sqrt(s)"
    )
    return combine(
        "heavy_ball_momentum_index",
        [
            verdict(
                "heavy_ball_momentum_index.m",
                gap_m,
                1e-12,
                instances,
                f"(21)'s m-equation with {what} on the iterates of (1) (relative)",
                sides={"m-equation gap": gap_m, "x-equation gap": gap_x},
            ),
            verdict(
                "heavy_ball_momentum_index.x",
                gap_x,
                1e-12,
                instances,
                f"(21)'s x-equation with {what} (relative)",
                sides={"m-equation gap": gap_m, "x-equation gap": gap_x},
            ),
        ],
    )
