"""What first-order autonomous ODEs ``x' = f(x)`` can represent (Momentum ResNets, Sect. 4.1 and
appendix B.5-B.7), and the example of Sect. 4.2 of a second-order flow that is not a homeomorphism.

Prop. 9 (flows preserve orientation), Theorem 3 (a 1-D flow that is linear at time 1 has a linear
field), Prop. 10 (``diag(-1, -lambda)`` is not a real square, so no flow of (15) gives it) and the
crossing example ``x(t) = x0 exp(-t/2) cos(t/2)``. Flows are integrated with :func:`dynkit.solve`.
"""

from __future__ import annotations

import numpy as np
import scipy.optimize

from .._papers import MOMENTUM_RESNETS
from ..solvers import solve
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
    "check_flow_orientation",
    "check_linear_flow_field",
    "log_periodic_field",
    "smooth_field",
    "check_not_a_real_square",
    "check_crossing_example",
]

_CTX = MOMENTUM_RESNETS
# dopri5 at rtol 1e-11: flows and variational equations to ~1e-9 relative over t in [0, 1]
FLOW_TOL = 1e-7


def check_flow_orientation(W, b, x0, *, reflect: bool = False) -> CheckResult:
    """Prop. 9: a homeomorphism represented by ``x' = f(x)`` (here ``f = tanh(W x + b)``) is
    connected to the identity: along the flow ``det D Phi_t(x0) = exp(int_0^t div f) > 0`` for
    every t (Liouville). Measured: ``D Phi_t`` from the variational equation at 21 times, its
    determinant against Liouville's formula (relative) and its sign. ``reflect=True`` composes
    ``Phi_1`` with a reflection (a map outside the identity's component: the planted violation)."""
    context = _CTX + " Prop. 9"
    W = as_square("W", W, context=context)
    n = W.shape[-1]
    b, x0 = matching_vectors(n, "W", context=context, b=b, x0=x0)
    batch = np.broadcast_shapes(W.shape[:-2], b.shape[:-1], x0.shape[:-1])
    W, b, x0 = (
        np.broadcast_to(a, batch + a.shape[len(a.shape) - (2 if a is W else 1) :])
        for a in (W, b, x0)
    )

    def field(t, y):
        x, Y = y[..., :n], y[..., n : n + n * n].reshape(batch + (n, n))
        s = 1 - np.tanh(np.einsum("...ij,...j->...i", W, x) + b) ** 2
        J = s[..., :, None] * W
        div = np.einsum("...ii->...", J)
        return np.concatenate(
            [
                np.tanh(np.einsum("...ij,...j->...i", W, x) + b),
                (J @ Y).reshape(batch + (n * n,)),
                div[..., None],
            ],
            axis=-1,
        )

    y0 = np.concatenate(
        [x0, np.broadcast_to(np.eye(n).reshape(-1), batch + (n * n,)), np.zeros(batch + (1,))],
        axis=-1,
    )
    ys = np.asarray(
        solve(field, y0, np.linspace(0, 1, 21), method="dopri5", rtol=1e-11, atol=1e-13).ys
    )
    Y = ys[..., n : n + n * n].reshape(ys.shape[:-1] + (n, n))
    if reflect:
        Y[-1, ..., 0, :] *= -1
    det = np.linalg.det(Y)
    liouville = np.exp(ys[..., -1])
    mismatch = np.abs(det - liouville).max(axis=0) / liouville.max(axis=0)
    sign = (det <= 0).any(axis=0).astype(float)
    inst = dict(W=W, b=b, x0=x0)
    return combine(
        "flow_orientation",
        [
            verdict(
                "flow_orientation.liouville",
                mismatch,
                FLOW_TOL,
                inst,
                "det D Phi_t vs exp(int div f) over t in [0, 1] (relative)",
                sides={"det D Phi_1": det[-1], "exp(int div f)": liouville[-1]},
            ),
            verdict(
                "flow_orientation.sign",
                sign,
                0.0,
                inst,
                "det D Phi_t <= 0 somewhere (1 = yes)",
                sides={"min_t det D Phi_t": det.min(axis=0)},
            ),
        ],
    )


def log_periodic_field(a: float, delta: float):
    """``f(x) = c x (1 + delta sin(2 pi ln|x| / ln a))``, ``c = ln a / sqrt(1 - delta**2)``,
    ``f(0) = 0``: globally Lipschitz (``|f'| <= |c| (1 + delta (1 + 2 pi / |ln a|))``) and, for
    ``delta != 0``, not linear, yet its flow at time 1 is exactly ``x -> a x``: ``u = ln|x|``
    obeys ``u' = c (1 + delta sin(2 pi u / ln a))``, whose time to advance by ``ln a`` is
    ``ln a / (c sqrt(1 - delta**2)) = 1`` from every start."""
    context = _CTX + " Theorem 3 counterexample"
    a = float(as_scalar_batch("a", a, context=context, low=0.0, low_open=True))
    if abs(np.log(a)) < 1e-3:
        raise ValueError(f"a must differ from 1 (by more than 1e-3) ({context}); got {a!r}")
    delta = float(
        as_scalar_batch("delta", delta, context=context, low=0.0, high=1.0, high_open=True)
    )
    L = np.log(a)
    c = L / np.sqrt(1 - delta**2)

    def f(t, x):
        ax = np.where(x == 0, 1.0, np.abs(x))
        return np.where(x == 0, 0.0, c * x * (1 + delta * np.sin(2 * np.pi * np.log(ax) / L)))

    return f


def smooth_field(a: float, delta: float):
    """``f(x) = ln(a) x + delta x**3 / (1 + x**2)``: C^1 (smooth), globally Lipschitz, linear iff
    delta = 0."""
    context = _CTX + " Theorem 3, smooth fields"
    a = float(as_scalar_batch("a", a, context=context, low=0.0, low_open=True))
    delta = float(
        as_scalar_batch("delta", delta, context=context, low=0.0, high=1.0, high_open=True)
    )
    L = np.log(a)
    return lambda t, x: L * x + delta * x**3 / (1 + x**2)


def check_linear_flow_field(a, delta, x0, *, family: str = "log_periodic") -> CheckResult:
    """Theorem 3 (appendix B.6): in d = 1, if ``x' = f(x)`` represents ``x -> a x`` at time 1, f
    is linear. Tested on the Lipschitz fields of :func:`log_periodic_field`: the statement is
    violated by an instance when its flow maps every ``x0`` to ``a x0`` (relative error <= 1e-7,
    dk.solve at rtol 1e-12) while f is not linear (``f(x)/x`` varies by more than 1e-3). Residual
    1 for such an instance. (The proof's last step uses ``f'(0)``: with f differentiable at 0 the
    theorem holds; ``delta = 0`` gives such instances.) ``family="smooth"`` uses the C^1 fields
    of :func:`smooth_field` instead (the corrected hypothesis): a nonlinear one must not have a
    linear time-1 map."""
    if family not in ("log_periodic", "smooth"):
        raise ValueError(f"family must be 'log_periodic' or 'smooth'; got {family!r}")
    context = _CTX + " Theorem 3"
    a = np.atleast_1d(as_scalar_batch("a", a, context=context, low=0.0, low_open=True)).reshape(-1)
    if np.any(np.abs(np.log(a)) < 1e-3):
        raise ValueError(
            f"a must differ from 1 (by more than 1e-3: ln a sets the field's period) ({context}); "
            f"got {a[np.abs(np.log(a)) < 1e-3][0]!r}"
        )
    delta = np.atleast_1d(
        as_scalar_batch("delta", delta, context=context, low=0.0, high=0.95)
    ).reshape(-1)
    x0 = as_real_array("x0", x0, context=context)
    a, delta = np.broadcast_arrays(a, delta)
    x0 = (
        np.broadcast_to(x0, a.shape + x0.shape[-1:])
        if x0.ndim
        else np.broadcast_to(x0, a.shape + (1,))
    )
    bad, flow_err, spread = np.zeros(a.size), np.zeros(a.size), np.zeros(a.size)
    for i in range(a.size):
        f = (log_periodic_field if family == "log_periodic" else smooth_field)(a[i], delta[i])
        x1 = np.asarray(
            solve(f, x0[i], np.array([0.0, 1.0]), method="dopri5", rtol=1e-12, atol=1e-14).ys[-1]
        )
        gain = x1 / np.where(
            x0[i] == 0, 1.0, x0[i]
        )  # a linear time-1 map has one gain for every x0
        ref = a[i] if family == "log_periodic" else np.median(gain)
        flow_err[i] = np.max(np.abs(gain - ref) / abs(ref))
        grid = np.geomspace(1e-3, 1e3, 601)
        slope = f(0, grid) / grid
        spread[i] = (slope.max() - slope.min()) / np.abs(slope).max()
        bad[i] = float(flow_err[i] <= 1e-7 and spread[i] > 1e-3)
    return verdict(
        "linear_flow_field",
        bad,
        0.0,
        dict(a=a, delta=delta, x0=x0),
        "flow is x -> a x at time 1 while f is not linear (1 = counterexample)",
        sides={"max |x(1) - a x0| / |a x0|": flow_err, "variation of f(x)/x": spread},
    )


def check_not_a_real_square(lam, *, n_starts: int = 8, seed: int = 0) -> CheckResult:
    """Prop. 10 (appendix B.7): ``A = diag(-1, -lam)``, ``lam > 0``, ``lam != 1``, has
    ``det A > 0`` and is not the square of a real 2 x 2 matrix (hence not ``exp(M)`` of a real M,
    nor the time-1 map of a linear field). Measured: least squares
    ``min ||B**2 - A||_F / ||A||_F`` from ``n_starts`` random real starts must stay above
    ``1e-3 |lam - 1| / (1 + lam)`` (an instance with ``lam = 1``, ``A = -I`` = a rotation
    squared, plants the violation)."""
    context = _CTX + " Prop. 10"
    lam = np.atleast_1d(
        as_scalar_batch("lam", lam, context=context, low=0.0, low_open=True)
    ).reshape(-1)
    n_starts = check_count("n_starts", n_starts)
    rng = np.random.default_rng(check_seed("seed", seed))
    best = np.zeros(lam.size)
    for i, l in enumerate(lam):
        A = np.diag([-1.0, -l])

        def res(x):
            B = x.reshape(2, 2)
            return (B @ B - A).ravel()

        best[i] = min(
            np.linalg.norm(
                scipy.optimize.least_squares(
                    res,
                    rng.standard_normal(4) * np.sqrt(1 + l),
                    method="lm",
                    xtol=1e-15,
                    ftol=1e-15,
                    gtol=1e-15,
                ).fun
            )
            for _ in range(n_starts)
        ) / np.linalg.norm(A)
    floor = 1e-3 * np.abs(lam - 1) / (1 + lam)
    det = lam  # det diag(-1, -lam)
    shortfall = np.maximum(floor - best, 0) / np.maximum(floor, 1e-300) + (det <= 0)
    shortfall = np.where(floor == 0, 1.0, shortfall)
    return verdict(
        "not_a_real_square",
        shortfall,
        0.0,
        dict(lam=lam),
        "min ||B^2 - A|| / ||A|| over real B below the floor (or det A <= 0)",
        sides={"min ||B^2 - A|| / ||A||": best, "floor": floor},
    )


def check_crossing_example(x0, *, v0_factor: float = -0.5) -> CheckResult:
    """Sect. 4.2: ``x(t) = x0 exp(-t/2) cos(t/2)`` solves ``x'' + x' = -x/2`` with
    ``(x(0), x'(0)) = (x0, -x0/2)``, so all trajectories meet at ``t = pi`` (the flow is not a
    homeomorphism). Measured with dk.solve: the solution against the closed form on [0, 4] and
    ``|x(pi)|`` (must vanish). ``v0_factor`` sets ``x'(0) = v0_factor x0`` (another value plants
    a violation)."""
    context = _CTX + " Sect. 4.2 example"
    x0 = as_real_array("x0", x0, context=context).reshape(-1)
    k = float(as_scalar_batch("v0_factor", v0_factor, context=context))
    t = np.array([0.0, 1.0, 2.0, np.pi, 4.0])
    y0 = np.stack([x0, k * x0], axis=-1)
    ys = np.asarray(
        solve(
            lambda s, y: np.stack([y[..., 1], -y[..., 1] - y[..., 0] / 2], axis=-1),
            y0,
            t,
            method="dopri5",
            rtol=1e-12,
            atol=1e-14,
        ).ys[..., 0]
    )
    closed = x0 * np.exp(-t[:, None] / 2) * np.cos(t[:, None] / 2)
    scale = 1 + np.abs(x0)
    err = np.abs(ys - closed).max(axis=0) / scale
    at_pi = np.abs(ys[3]) / scale
    inst = dict(x0=x0)
    return combine(
        "crossing_example",
        [
            verdict(
                "crossing_example.closed_form",
                err,
                FLOW_TOL,
                inst,
                "dk.solve vs x0 exp(-t/2) cos(t/2)",
                sides={"x(4) solved": ys[-1], "x(4) closed form": closed[-1]},
            ),
            verdict(
                "crossing_example.meet",
                at_pi,
                FLOW_TOL,
                inst,
                "|x(pi)| / (1 + |x0|)",
                sides={"x(pi)": ys[3], "0": np.zeros_like(x0)},
            ),
        ],
    )
