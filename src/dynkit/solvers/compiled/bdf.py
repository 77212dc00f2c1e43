"""``bdf`` compiled: the variable-order NDF loop of :class:`dynkit.solvers.bdf.BDFStepper`.

Loops only: ``κ_k``, ``γ_k``, the error constants and the maximum order come from
:data:`dynkit.solvers.bdf.NDF`, the controller's constants (Newton's iteration limit, safety,
step-ratio bounds, the keep-``h`` band, the tolerance proportionality) from
:mod:`dynkit.solvers.bdf`. As the Python stepper: backward differences re-sampled when ``h``
changes, the predictor and the simplified Newton iteration with its stopping rules, the Jacobian
kept across steps and refreshed only when Newton fails with a Jacobian that is not current (then the
same step is retried), the LU refactorised when ``h`` or the order changes, quasi-constant steps
(``k + 1`` steps of one size before a change), the order chosen from the estimates at ``k − 1``,
``k``, ``k + 1``, the end slope evaluated only when a difference Jacobian needs it as its base
point, and output times inside a step from the interpolating polynomial. See
:mod:`dynkit.solvers.bdf` for the method and references.
"""

from __future__ import annotations

import functools
import math

import numba
import numpy as np

from .. import bdf as py
from . import register_kernel
from .common import (
    copy_into,
    CACHE,
    MAX_STEPS,
    NEWTON_FAILURES,
    NEWTON_ITERATIONS,
    NFE,
    NLU,
    NONFINITE_START,
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
    """``(κ, γ, error constants, binomial)`` of a method (a frozen object: computed once per solve
    would be a tenth of a small solve's time)."""
    kappa = np.concatenate([[0.0], np.asarray(method.kappa, float)])
    size = method.max_order + 1
    binomial = np.array(
        [[(-1) ** j * math.comb(m, j) for j in range(size)] for m in range(size)], dtype=float
    )
    return kappa, method.gamma(), method.error_constants(), binomial


def coefficients(method, rtol: float) -> tuple:
    """The numbers the kernel reads: the method's ``κ``, ``γ``, error constants, and the
    stepper's constants."""
    kappa, gamma, error_constants, binomial = _method_arrays(method)
    controls = np.array(
        [
            float(method.max_order),
            py.NEWTON_MAX_ITERATIONS,
            py.SAFETY,
            py.MIN_RATIO,
            py.MAX_RATIO,
            py.KEEP_BELOW,
            py.tolerance_factor(float(rtol)),
        ]
    )
    return kappa, gamma, error_constants, controls, binomial


@numba.njit(cache=CACHE)
def _phi(m, x) -> float:
    """``∏_{i<m} (x + i) / m!``: the weight of ``∇^m y_n`` in ``p(t_n + x h)`` (Newton backward
    form)."""
    out = 1.0
    for i in range(m):
        out *= (x + i) / (i + 1)
    return out


@numba.njit(cache=CACHE)
def _rescale(D, k, ratio, binomial) -> None:
    """``∇_new = M ∇_old`` for rows ``0 … k`` (the polynomial re-sampled at
    ``t_n − j · ratio · h``); the differences beyond the order are dropped."""
    n = D.shape[1]
    V = np.empty((k + 1, k + 1))
    for j in range(k + 1):
        for m in range(k + 1):
            V[j, m] = _phi(m, -j * ratio)
    M = np.zeros((k + 1, k + 1))
    for r in range(k + 1):
        for j in range(k + 1):
            for m in range(k + 1):
                M[r, m] += binomial[r, j] * V[j, m]
    old = D[: k + 1].copy()
    D[:] = 0.0
    for r in range(k + 1):
        for m in range(k + 1):
            w = M[r, m]
            for i in range(n):
                D[r, i] += w * old[m, i]


@numba.njit(cache=CACHE)
def _newton(
    f, p, t_new, y_pred, psi, alpha, scale, LU, piv, max_iterations, newton_tol, d, y, delta, stats
):
    """Simplified Newton for the correction ``d`` (in place; ``y``, ``delta``: scratch of its
    size); ``(converged, iterations)``."""
    n = y_pred.size
    d[:] = 0.0
    copy_into(y, y_pred)
    norm_prev = -1.0
    for i in range(max_iterations):
        f(t_new, y, p, delta)  # f's value first, then the residual in place
        stats[NFE] += 1
        for q in range(n):
            if not math.isfinite(delta[q]):
                return False, i + 1
        for q in range(n):
            delta[q] = delta[q] - alpha * (psi[q] + d[q])
        lu_solve(LU, piv, delta)
        stats[NEWTON_ITERATIONS] += 1
        s = 0.0
        for q in range(n):
            r = delta[q] / scale[q]
            s += r * r
        norm = math.sqrt(s / n)
        if not math.isfinite(norm):
            return False, i + 1
        has_rate = norm_prev > 0.0
        rate = norm / norm_prev if has_rate else 0.0
        if has_rate and (
            rate >= 1 or rate ** (max_iterations - i) / (1 - rate) * norm > newton_tol
        ):
            return False, i + 1
        for q in range(n):
            d[q] = d[q] + delta[q]
            y[q] = y_pred[q] + d[q]
        if norm == 0 or (has_rate and rate / (1 - rate) * norm < newton_tol):
            return True, i + 1
        if not has_rate and norm < newton_tol * 1e-2:
            return True, i + 1
        norm_prev = norm
    return False, max_iterations


@numba.njit(cache=CACHE)
def _scaled_rms(v, y, atol_s, rtol_s) -> float:
    s = 0.0
    for q in range(v.size):
        r = v[q] / (atol_s[q] + rtol_s * abs(y[q]))
        s += r * r
    return math.sqrt(s / v.size)


def _bdf_kernel_loop(
    addresses, p, t0, t_end, y0, t_eval, rtol, atol, first_step, max_steps, co, fd_state
):
    """The whole solve: ``(status, t, h, ys, n_filled, stats, steps, y, k1)`` (``steps``: the
    accepted steps' end times; ``t``, ``h``, ``y``, ``k1`` where the solve stopped)."""
    f, jac = user_functions(addresses)  # .addresses: the user's compiled f and jac
    kappa, gamma, C, controls, binomial = co
    max_order = int(controls[0])
    max_iterations = int(controls[1])
    safety, min_ratio, max_ratio, keep_below, theta = (
        controls[2],
        controls[3],
        controls[4],
        controls[5],
        controls[6],
    )
    n = y0.size
    stats, ys, direction, signed, steps = output_buffers(y0, t0, t_end, t_eval)
    nxt = 1
    n_steps_out = 0
    rtol_s = rtol * theta  # the tolerance the steps work to (the error test sees error / θ)
    atol_s = theta * atol
    newton_tol = max(10 * EPS / rtol, min(0.03, math.sqrt(rtol)))
    D = np.zeros((max_order + 3, n))
    D_new = np.zeros((max_order + 3, n))
    have_D = False
    h_D = 0.0
    order = 1
    J = np.zeros((n, n))
    have_J, J_current = False, False
    LU = np.empty((n, n))
    piv = np.empty(n, dtype=np.int64)
    lu_h, lu_order, lu_ok = math.nan, -1, False
    equal_steps = 0
    pending_iterations = -1
    y_pred = np.empty(n)
    psi = np.empty(n)
    scale = np.empty(n)
    d = np.empty(n)
    y_new = np.empty(n)
    err = np.empty(n)
    y_iterate = np.empty(n)
    delta = np.empty(n)
    t = t0
    y = y0.copy()
    k1, h, finite = first_slope_and_step(
        f, p, t0, t_end, y, y0, rtol, atol, direction, first_step, 2, stats
    )
    k1_ready = True
    if not finite:
        return NONFINITE_START, t0, 0.0, ys, nxt, stats, steps[:0], y, k1
    nonfinite_last = False
    overflow_pending, overflow_stalls = False, 0
    while True:
        status, h, t_new = step_head(
            t, h, t_end, direction, stats[N_STEPS], max_steps, nonfinite_last
        )
        if status != RUNNING:
            if status == MAX_STEPS and not k1_ready:
                # the failure's diagnosis needs f here (the Python path evaluates it, counted)
                f(t, y, p, k1)
                stats[NFE] += 1
            return status, t, h, ys, nxt, stats, steps[:n_steps_out], y, k1
        # -- attempt
        if not have_D:
            copy_into(D[0], y)
            for q in range(n):
                D[1, q] = h * k1[q]
            h_D, have_D = h, True
        if h != h_D:
            _rescale(D, order, h / h_D, binomial)
            h_D, equal_steps, lu_h = h, 0, math.nan
        k = order
        t_step = t + h
        denominator = (1 - kappa[k]) * gamma[k]
        for q in range(n):
            s = 0.0
            for r in range(k + 1):
                s += D[r, q]
            y_pred[q] = s
            s = 0.0
            for r in range(1, k + 1):
                s += gamma[r] * D[r, q]
            psi[q] = s / denominator
            scale[q] = atol_s[q] + rtol_s * abs(y_pred[q])
        converged = False
        iterations = 0
        while True:
            if not have_J:
                if not k1_ready:
                    f(t, y, p, k1)
                    stats[NFE] += 1
                    k1_ready = True
                jacobian(f, jac, t, y, k1, p, fd_state, J, stats)
                have_J, J_current, lu_h = True, True, math.nan
            alpha = denominator / h
            if lu_h != h or lu_order != k:
                lu_ok = shifted_lu(J, alpha, LU, piv)
                lu_h, lu_order = h, k
                stats[NLU] += 1
            if lu_ok:
                converged, iterations = _newton(
                    f,
                    p,
                    t_step,
                    y_pred,
                    psi,
                    alpha,
                    scale,
                    LU,
                    piv,
                    max_iterations,
                    newton_tol,
                    d,
                    y_iterate,
                    delta,
                    stats,
                )
            else:
                converged, iterations = False, 0
            if converged or J_current:
                break
            have_J = False  # a stale Jacobian: refresh it and retry the same step
        newton_failed = not converged
        if newton_failed:
            pending_iterations = -1
            norm = math.inf
        else:
            for q in range(n):
                y_new[q] = y_pred[q] + d[q]
                err[q] = C[k] / theta * d[q]
            for r in range(D.shape[0]):  # row by row: a ravel() view costs a reshape call
                copy_into(D_new[r], D[r])
            for q in range(n):
                D_new[k + 2, q] = d[q] - D[k + 1, q]
                D_new[k + 1, q] = d[q]
            for j in range(k, -1, -1):
                for q in range(n):
                    D_new[j, q] = D[j, q] + D_new[j + 1, q]
            pending_iterations = iterations
            norm = rms_error_norm(err, y, y_new, rtol, atol)
            if norm != norm:
                norm = math.inf
        stats[N_STEPS] += 1
        accepted = norm <= 1.0
        if accepted:
            inner, stop, exact = accepted_outputs(stats, signed, nxt, t, t_new, direction)
            for row in range(nxt, inner):
                x = (t_eval[row] - t) / h - 1.0  # p(t_{n+1} + x h), x in [-1, 0]
                for q in range(n):
                    ys[row, q] = 0.0
                for m in range(k + 1):
                    w = _phi(m, x)
                    for q in range(n):
                        ys[row, q] += w * D_new[m, q]
            if exact:
                copy_into(ys[inner], y_new)
            nxt = stop
            D, D_new = D_new, D
            equal_steps += 1
            J_current = False
            overflow_pending, overflow_stalls, at_edge = overflow_stall(
                overflow_pending, overflow_stalls, y, y_new
            )
            if at_edge:
                return RANGE_EDGE, t, h, ys, nxt, stats, steps[:n_steps_out], y, k1
            steps, n_steps_out = push_step(steps, n_steps_out, t_new)
            t = t_new
            copy_into(y, y_new)
            # f at the step's end is evaluated only if a difference Jacobian needs it
            k1_ready = False
            nonfinite_last = False
        else:
            nonfinite_last, overflow_pending = rejected_trial(stats, norm, overflow_pending)
        # -- the stepper's step factor and order
        if newton_failed:
            stats[NEWTON_FAILURES] += 1
            ratio = 0.5
        else:
            its = pending_iterations if pending_iterations >= 0 else max_iterations
            fac = safety * (2 * max_iterations + 1) / (2 * max_iterations + its)
            if not accepted:
                equal_steps = 0
                ratio = max(min_ratio, fac * max(norm, 1e-10) ** (-1.0 / (k + 1)))
            elif equal_steps < k + 1:
                ratio = 1.0
            else:
                best_order = k
                best = fac * max(norm, 1e-10) ** (-1.0 / (k + 1))
                if k > 1:
                    r_down = fac * max(
                        C[k - 1] * _scaled_rms(D[k], D[0], atol_s, rtol_s), 1e-10
                    ) ** (-1.0 / k)
                    if r_down > best:
                        best_order, best = k - 1, r_down
                if k < max_order:
                    r_up = fac * max(
                        C[k + 1] * _scaled_rms(D[k + 2], D[0], atol_s, rtol_s), 1e-10
                    ) ** (-1.0 / (k + 2))
                    if r_up > best:
                        best_order, best = k + 1, r_up
                ratio = min(max_ratio, best)
                if best_order != k:
                    order = best_order
                    equal_steps = 0
                    lu_order = -1
                    ratio = max(min_ratio, ratio)
                elif 1.0 <= ratio < keep_below:
                    ratio = 1.0
                else:
                    ratio = max(min_ratio, ratio)
        h = h * ratio


KERNEL = StiffKernel(_bdf_kernel_loop, lambda: coefficients(py.NDF, 1e-6))
kernel = KERNEL.kernel


register_kernel("bdf", StiffDriver("bdf", KERNEL, functools.partial(coefficients, py.NDF)))
