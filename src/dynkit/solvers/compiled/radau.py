"""``radau5`` compiled: the loop of :class:`dynkit.solvers.radau.RadauStepper` and the engine's
adaptive loop.

Loops only: the method's numbers (nodes ``c``, the transformation ``T``, ``T⁻¹``, the eigenvalues
``γ̂`` and ``α̂ + iβ̂`` of ``A⁻¹``, the error weights ``e``) are read from
:data:`dynkit.solvers.radau.RADAU5`, and the controller's constants (``k_max``, the safety factor,
the Jacobian-reuse contraction, the keep-the-step band, the Newton stopping share) from
:mod:`dynkit.solvers.radau`. The kernel decides exactly as the Python stepper: the simplified Newton
iteration on the transformed stages with its stopping and failure tests, the Jacobian taken anew
only where the Python stepper takes it (``refresh_jacobian``), the LU pair refactorised only when
``h`` changes, the refined error estimate on the first step and after a rejection, Gustafsson's
predictive step factor, and output times inside a step reached by a sub-step of the method with the
step's Jacobian (its own LU pair and Newton iterations, counted). See :mod:`dynkit.solvers.radau`
for the method and its references.
"""

from __future__ import annotations

import functools
import math

import numba
import numpy as np

from .. import radau as py
from . import register_kernel
from .common import (
    copy_into,
    CACHE,
    NEWTON_FAILURES,
    NEWTON_ITERATIONS,
    NFE,
    NLU,
    NONFINITE_START,
    N_ACCEPTED,
    N_STEPS,
    RANGE_EDGE,
    RUNNING,
    accepted_outputs,
    first_slope_and_step,
    overflow_stall,
    push_step,
    rejected_trial,
    rms_error_norm,
    step_head,
)
from .jacobian import jacobian
from .linalg import lu_solve, shifted_lu
from .addresses import user_functions
from .stiff_loop import StiffDriver, StiffKernel, output_buffers

__all__ = ["EPS", "coefficients", "KERNEL"]

EPS = float(np.finfo(np.float64).eps)


@functools.cache
def _method_arrays(method) -> tuple:
    """The method's numbers the kernel reads (a frozen object: once per process, not per solve)."""
    V = method.c[:, None] ** np.arange(1, 4)  # the collocation polynomial's powers at the nodes
    return (
        np.ascontiguousarray(method.c),
        np.ascontiguousarray(method.T),
        np.ascontiguousarray(method.T_inv),
        float(method.gamma),
        complex(method.alpha_beta),
        np.ascontiguousarray(method.e * method.gamma),
        np.ascontiguousarray(V),
        np.ascontiguousarray(
            np.linalg.inv(V)
        ),  # here, not in the kernel: numba's linalg compiles slowly
    )


def coefficients(method=py.RADAU5) -> tuple:
    """The numbers the kernel reads, from the method object and the stepper's constants (one
    source of truth)."""
    controls = np.array(
        [
            py.NEWTON_MAX_ITERATIONS,
            py.SAFETY,
            py.REUSE_JACOBIAN_THETA,
            py.FIRST_ITERATE_MAX,
            py.KEEP_STEP[0],
            py.KEEP_STEP[1],
            py.MIN_RATIO,
            py.MAX_RATIO,
            py.NEWTON_SHARE_FLOOR,
            py.NEWTON_SHARE_ERROR,
            float(method.error_order + 1),
        ]
    )
    c, T, T_inv, gamma, alpha_beta, dd, V, V_inv = _method_arrays(method)
    return c, T, T_inv, gamma, alpha_beta, dd, V, controls, V_inv


@numba.njit(cache=CACHE)
def _factor(J, h, gamma, alpha_beta, LU1, piv1, LU2, piv2) -> bool:
    """The LU pair ``γ̂/h I − J`` and ``(α̂ + iβ̂)/h I − J``; False if either is singular or not
    finite."""
    ok1 = shifted_lu(J, gamma / h, LU1, piv1)
    ok2 = shifted_lu(J, alpha_beta / h, LU2, piv2)
    return ok1 and ok2


@numba.njit(cache=CACHE)
def _newton(
    f,
    p,
    t,
    y0,
    h,
    Z,
    LU1,
    piv1,
    LU2,
    piv2,
    co,
    rtol,
    atol,
    kappa,
    kappa_floor,
    newton_share,
    memory,
    record,
    stats,
    work,
):
    """Simplified Newton on the transformed stages from ``Z`` (updated in place); True if converged.

    ``memory = [η, θ, iterations to κ (−1: none), iterations recorded]``: read (η) and, when
    ``record``, written as the Python stepper keeps them for the step-size and Jacobian decisions.
    """
    c, T, T_inv, gamma, alpha_beta, _, _, controls, _ = co
    k_max = int(controls[0])
    first_iterate_max = controls[3]
    n = y0.size
    W, F, dW, v, stage, scale = work  # scratch of the solve (_newton_work)
    W[:] = 0.0
    for r in range(3):
        for q in range(3):
            for i in range(n):
                W[r, i] += T_inv[r, q] * Z[q, i]
    for i in range(n):
        scale[i] = atol[i] + rtol * abs(y0[i])
    g = gamma / h
    ab = alpha_beta / h
    a, b = ab.real, ab.imag
    eta = max(memory[0], EPS) ** 0.8
    target = max(kappa * newton_share, kappa_floor)
    norm_prev = -1.0  # none yet
    met_kappa = False
    if record:
        memory[2] = -1.0
    for k in range(k_max):
        for r in range(3):
            for i in range(n):
                stage[i] = y0[i] + Z[r, i]
            f(t + c[r] * h, stage, p, F[r])
            stats[NFE] += 1
        for r in range(3):
            for i in range(n):
                if not math.isfinite(F[r, i]):
                    return False
        for i in range(n):
            tf0 = T_inv[0, 0] * F[0, i] + T_inv[0, 1] * F[1, i] + T_inv[0, 2] * F[2, i]
            tf1 = T_inv[1, 0] * F[0, i] + T_inv[1, 1] * F[1, i] + T_inv[1, 2] * F[2, i]
            tf2 = T_inv[2, 0] * F[0, i] + T_inv[2, 1] * F[1, i] + T_inv[2, 2] * F[2, i]
            dW[0, i] = tf0 - g * W[0, i]
            r2 = tf1 - (a * W[1, i] + b * W[2, i])
            r3 = tf2 - (-b * W[1, i] + a * W[2, i])
            v[i] = complex(r2, -r3)
        lu_solve(LU1, piv1, dW[0])
        lu_solve(LU2, piv2, v)
        s = 0.0
        for i in range(n):
            dW[1, i] = v[i].real
            dW[2, i] = -v[i].imag
        for r in range(3):
            for i in range(n):
                q = dW[r, i] / scale[i]
                s += q * q
        stats[NEWTON_ITERATIONS] += 1
        if record:
            memory[3] += 1.0
        norm = math.sqrt(s / (3 * n))
        if not math.isfinite(norm):
            return False
        if norm_prev >= 0.0:
            theta = norm / norm_prev if norm_prev > 0 else 0.0
            if record:
                memory[1] = theta
            if theta >= 1.0:
                return False
            left = k_max - 1 - k
            if theta**left / (1.0 - theta) * norm > kappa:
                return False
            eta = theta / (1.0 - theta)
        for r in range(3):
            for i in range(n):
                W[r, i] += dW[r, i]
        for r in range(3):
            for i in range(n):
                Z[r, i] = T[r, 0] * W[0, i] + T[r, 1] * W[1, i] + T[r, 2] * W[2, i]
        trusted = norm_prev >= 0.0 or norm <= first_iterate_max
        if trusted and eta * norm <= kappa and not met_kappa:
            met_kappa = True
            if record:
                memory[2] = k + 1
        if norm == 0.0 or (eta * norm <= target and trusted):
            if record:
                memory[0] = eta
            return True
        norm_prev = norm
    if met_kappa:
        if record:
            memory[0] = eta
        return True
    return False


@numba.njit(cache=CACHE)
def _newton_work(n):
    """:func:`_newton`'s scratch arrays, made once per solve: ``W, F, dW`` (3, n), ``v``, ``stage``,
    ``scale``."""
    return (
        np.empty((3, n)),
        np.empty((3, n)),
        np.empty((3, n)),
        np.empty(n, dtype=np.complex128),
        np.empty(n),
        np.empty(n),
    )


@numba.njit(cache=CACHE)
def _dense_weights(theta, V_inv):
    """Weights of ``Z_i`` in the collocation polynomial at ``θ`` ([HW] Eq. (8.9))."""
    w = np.zeros(3)
    for i in range(3):
        for q in range(3):
            w[i] += theta ** (q + 1) * V_inv[q, i]
    return w


@numba.njit(cache=CACHE)
def _substep(
    f,
    p,
    t,
    y0,
    h,
    Z,
    J,
    theta,
    co,
    V_inv,
    rtol,
    atol,
    kappa,
    kappa_floor,
    newton_share,
    memory,
    LU1,
    piv1,
    LU2,
    piv2,
    out,
    stats,
    work,
) -> None:
    """``out ← y(t + θh)``: one step of size ``θh`` from ``y0`` with the step's ``J`` (own LU
    pair, Newton from the collocation polynomial, all counted), or the collocation polynomial
    where that Newton fails."""
    c = co[0]
    n = y0.size
    w = _dense_weights(theta, V_inv)
    for i in range(n):
        out[i] = y0[i] + (w[0] * Z[0, i] + w[1] * Z[1, i] + w[2] * Z[2, i])
    if theta <= 0.0 or theta >= 1.0:
        for i in range(n):
            out[i] = y0[i] if theta <= 0.0 else y0[i] + Z[2, i]
        return
    hs = theta * h
    stats[NLU] += 1
    if not _factor(J, hs, co[3], co[4], LU1, piv1, LU2, piv2):
        return
    Zs = np.zeros((3, n))
    for r in range(3):
        wr = _dense_weights(theta * c[r], V_inv)
        for i in range(n):
            Zs[r, i] = wr[0] * Z[0, i] + wr[1] * Z[1, i] + wr[2] * Z[2, i]
    if _newton(
        f,
        p,
        t,
        y0,
        hs,
        Zs,
        LU1,
        piv1,
        LU2,
        piv2,
        co,
        rtol,
        atol,
        kappa,
        kappa_floor,
        newton_share,
        memory,
        False,
        stats,
        work,
    ):
        for i in range(n):
            out[i] = y0[i] + Zs[2, i]


def _radau_kernel_loop(
    addresses, p, t0, t_end, y0, t_eval, rtol, atol, first_step, max_steps, co, fd_state
):
    """The whole solve: ``(status, t, h, ys, n_filled, stats, steps, y, k1)`` (``steps``: the
    accepted steps' end times; ``t``, ``h``, ``y``, ``k1`` where the solve stopped)."""
    f, jac = user_functions(addresses)  # .addresses: the user's compiled f and jac
    c, T, T_inv, gamma, alpha_beta, dd, V, controls, V_inv = co
    k_max = controls[0]
    safety, reuse_theta = controls[1], controls[2]
    keep_lo, keep_hi, min_ratio, max_ratio = controls[4], controls[5], controls[6], controls[7]
    share_floor, share_error, k_exp = controls[8], controls[9], controls[10]
    n = y0.size
    stats, ys, direction, signed, steps = output_buffers(y0, t0, t_end, t_eval)
    nxt = 1
    n_steps_out = 0
    kappa_floor = 10 * EPS / rtol
    kappa = max(kappa_floor, min(0.03, math.sqrt(rtol)))
    # the stepper's state
    J = np.zeros((n, n))
    have_J = False
    J_t, J_at = (
        0.0,
        -1,
    )  # where J was taken: time and accepted-step count (the Python stepper's id of y)
    LU1 = np.empty((n, n))
    LU2 = np.empty((n, n), dtype=np.complex128)
    piv1 = np.empty(n, dtype=np.int64)
    piv2 = np.empty(n, dtype=np.int64)
    sLU1 = np.empty((n, n))
    sLU2 = np.empty((n, n), dtype=np.complex128)
    spiv1 = np.empty(n, dtype=np.int64)
    spiv2 = np.empty(n, dtype=np.int64)
    lu_h = math.nan
    lu_ok = False
    memory = np.array([1.0, 1.0, -1.0, 0.0])  # η, θ, iterations to κ, Newton iterations recorded
    have_previous = False
    h_prev = 0.0
    K = np.zeros((3, n))
    first, rejected_last = True, False
    have_err_last = False
    h_last, err_last = 0.0, 0.0
    newton_share = 1.0
    refresh = True
    iterations_before = 0.0
    Z = np.zeros((3, n))
    y_new = np.empty(n)
    err = np.empty(n)
    rhs = np.empty(n)
    out = np.empty(n)
    work = _newton_work(n)
    # the loop's state
    t = t0
    y = y0.copy()
    k1, h, finite = first_slope_and_step(
        f, p, t0, t_end, y, y0, rtol, atol, direction, first_step, int(k_exp), stats
    )
    if not finite:
        return NONFINITE_START, t0, 0.0, ys, nxt, stats, steps[:0], y, k1
    nonfinite_last = False
    overflow_pending, overflow_stalls = False, 0
    while True:
        status, h, t_new = step_head(
            t, h, t_end, direction, stats[N_STEPS], max_steps, nonfinite_last
        )
        if status != RUNNING:
            return status, t, h, ys, nxt, stats, steps[:n_steps_out], y, k1
        # -- attempt
        accepted_so_far = stats[N_ACCEPTED]
        if refresh or not have_J:
            jacobian(f, jac, t, y, k1, p, fd_state, J, stats)
            have_J, J_t, J_at, lu_h, refresh = True, t, accepted_so_far, math.nan, False
        J_fresh = J_t == t and J_at == accepted_so_far
        newton_failed = False
        if lu_h != h:
            stats[NLU] += 1
            lu_h = h
            lu_ok = _factor(J, h, gamma, alpha_beta, LU1, piv1, LU2, piv2)
        if not lu_ok:
            newton_failed = True
        else:
            if have_previous:  # the last collocation polynomial extrapolated ([HW] Eq. (8.12))
                for r in range(3):
                    th = 1.0 + c[r] * h / h_prev
                    for i in range(n):
                        s = th * K[0, i] + th * th * K[1, i] + th * th * th * K[2, i]
                        Z[r, i] = s - (K[0, i] + K[1, i] + K[2, i])
            else:
                Z[:] = 0.0
            newton_failed = not _newton(
                f,
                p,
                t,
                y,
                h,
                Z,
                LU1,
                piv1,
                LU2,
                piv2,
                co,
                rtol,
                atol,
                kappa,
                kappa_floor,
                newton_share,
                memory,
                True,
                stats,
                work,
            )
        if newton_failed:
            norm = math.inf
        else:
            for i in range(n):
                y_new[i] = y[i] + Z[2, i]
                rhs[i] = k1[i] + (dd[0] * Z[0, i] + dd[1] * Z[1, i] + dd[2] * Z[2, i]) / h
            copy_into(err, rhs)
            lu_solve(LU1, piv1, err)
            norm = rms_error_norm(err, y, y_new, rtol, atol)
            if norm > 1.0 and (first or rejected_last):  # the refined estimate ([HW] Eq. (8.20))
                for i in range(n):
                    out[i] = y[i] + err[i]
                f(t, out, p, err)  # f's value first, then the estimate in place
                stats[NFE] += 1
                for i in range(n):
                    err[i] = err[i] + (dd[0] * Z[0, i] + dd[1] * Z[1, i] + dd[2] * Z[2, i]) / h
                lu_solve(LU1, piv1, err)
                norm = rms_error_norm(err, y, y_new, rtol, atol)
            if norm != norm:  # NaN: treated like an overflow
                norm = math.inf
        stats[N_STEPS] += 1
        accepted = norm <= 1.0
        if accepted:
            inner, stop, exact = accepted_outputs(stats, signed, nxt, t, t_new, direction)
            for row in range(nxt, inner):
                _substep(
                    f,
                    p,
                    t,
                    y,
                    h,
                    Z,
                    J,
                    (t_eval[row] - t) / h,
                    co,
                    V_inv,
                    rtol,
                    atol,
                    kappa,
                    kappa_floor,
                    newton_share,
                    memory,
                    sLU1,
                    spiv1,
                    sLU2,
                    spiv2,
                    out,
                    stats,
                    work,
                )
                copy_into(ys[row], out)
            if exact:
                copy_into(ys[inner], y_new)
            nxt = stop
            for r in range(3):  # the collocation polynomial V⁻¹ Z, for the next Newton start
                for i in range(n):
                    K[r, i] = V_inv[r, 0] * Z[0, i] + V_inv[r, 1] * Z[1, i] + V_inv[r, 2] * Z[2, i]
            h_prev, have_previous = h, True
            overflow_pending, overflow_stalls, at_edge = overflow_stall(
                overflow_pending, overflow_stalls, y, y_new
            )
            if at_edge:
                return RANGE_EDGE, t, h, ys, nxt, stats, steps[:n_steps_out], y, k1
            steps, n_steps_out = push_step(steps, n_steps_out, t_new)
            t = t_new
            copy_into(y, y_new)
            if direction * (t_end - t) > 0:
                f(t_new, y, p, k1)
                stats[NFE] += 1
            nonfinite_last = False
        else:
            nonfinite_last, overflow_pending = rejected_trial(stats, norm, overflow_pending)
        # -- the stepper's step factor
        if newton_failed:
            rejected_last = True
            if not J_fresh:
                refresh = True
            stats[NEWTON_FAILURES] += 1
            ratio = 0.5
        else:
            iterations = max(memory[3] - iterations_before, 1.0)
            iterations_before = memory[3]
            if memory[2] >= 0.0:
                iterations = min(iterations, memory[2])
            fac = safety * (2 * k_max + 1) / (2 * k_max + iterations)
            e = max(norm, 1e-10)
            ratio = fac * e**-0.25
            if accepted:
                if have_err_last:  # Gustafsson's predictive controller ([HW] Eq. (8.25))
                    ratio = min(ratio, fac * (h / h_last) * (err_last / e) ** 0.25 * e**-0.25)
                have_err_last, h_last, err_last = True, h, max(e, 1e-2)
                newton_share = min(1.0, max(norm / share_error, share_floor))
                ratio = min(max_ratio, max(min_ratio, ratio))
                if rejected_last:
                    ratio = min(ratio, 1.0)
                first = rejected_last = False
                if iterations <= 2 or memory[1] <= reuse_theta:
                    if keep_lo <= ratio <= keep_hi:
                        ratio = 1.0
                else:
                    refresh = True
            else:
                ratio = 0.1 if first else min(max_ratio, max(min_ratio, ratio))
                rejected_last = True
                if not J_fresh:
                    refresh = True
        h = h * ratio


KERNEL = StiffKernel(_radau_kernel_loop, coefficients)
kernel = KERNEL.kernel


register_kernel("radau5", StiffDriver("radau5", KERNEL, lambda rtol: coefficients()))
