"""``rosenbrock23``, ``rodas4``, ``rodas5`` compiled: one loop over a
:class:`~dynkit.solvers.rosenbrock.RosenbrockTableau`.

Loops only: ``γ``, ``a``, ``C``, ``c``, ``d``, ``m``, ``e``, the dense-output weights ``P``, FSAL,
the bootstrapped and sub-step dense outputs and the tolerance proportionality are read from the
tableau objects of :mod:`dynkit.solvers.rosenbrock` (one source of truth). As
:class:`~dynkit.solvers.rosenbrock.RosenbrockStepper`: one Jacobian and ``∂f/∂t`` per step start (a
rejected step reuses them), one LU of ``W = I/(hγ) − J`` per new ``h``, the stages of [HW] IV.7 Eq.
(7.4), and the engine's PI controller. Output times inside a step: on a stiff step
(``|h| ‖J‖_∞ > 1``) or for a tableau with ``dense_by_substeps`` a sub-step of the method per time
(an LU and ``s − 1`` calls of ``f``, counted); otherwise the bootstrapped quartic (one more call of
``f`` per step) or the tableau's interpolant. See :mod:`dynkit.solvers.rosenbrock` for the methods
and references.
"""

from __future__ import annotations

import functools
import math

import numba
import numpy as np

from .. import rosenbrock as py
from ..control import tolerance_factor
from . import register_kernel
from .common import (
    copy_into,
    CACHE,
    ERR_PREV_FLOOR,
    NFE,
    NLU,
    NONFINITE_START,
    N_ACCEPTED,
    N_STEPS,
    RANGE_EDGE,
    RUNNING,
    accepted_factor,
    accepted_outputs,
    first_slope_and_step,
    overflow_stall,
    pi_coefficients,
    push_step,
    rejected_factor,
    rejected_trial,
    rms_error_norm,
    step_head,
)
from .jacobian import jacobian, time_derivative
from .linalg import lu_solve, shifted_lu
from .addresses import user_functions
from .stiff_loop import StiffDriver, StiffKernel, output_buffers

__all__ = ["TABLEAUS", "coefficients", "KERNEL"]

TABLEAUS = {"rosenbrock23": py.ROSENBROCK23, "rodas4": py.RODAS4, "rodas5": py.RODAS5}


@functools.cache
def _bootstrap_basis() -> np.ndarray:
    """``B`` with ``bootstrap_weights(θ, 1)[m] = Σ_q θ_m^q B[q]`` (rows: powers 0-4), from the
    Python function."""
    theta = np.linspace(0.1, 0.9, 5)
    weights = py.bootstrap_weights(theta, 1.0)  # (5 θ, 5 data)
    powers = theta[:, None] ** np.arange(5)
    return np.linalg.solve(powers, weights)


def coefficients(tableau, rtol: float) -> tuple:
    """The numbers the kernel reads, from the tableau (and ``θ(rtol)`` of its tolerance
    proportionality)."""
    return _coefficients(tableau, float(rtol), py.BOOTSTRAP_H_NORM, py.DAMPED_H_J)


# a tableau is frozen (hashed by identity), the constants tests plant are in the key, and the
# kernels only read these arrays
@functools.lru_cache(maxsize=256)
def _coefficients(tableau, rtol: float, bootstrap_h_norm: float, damped_h_j: float) -> tuple:
    rule = tableau.tolerance_proportionality
    theta = 1.0 if rule is None else tolerance_factor(rtol, *rule)
    flags = np.array(
        [
            float(tableau.gamma),
            float(min(tableau.order, tableau.error_order) + 1),
            float(tableau.fsal),
            float(tableau.bootstrap_dense),
            float(tableau.dense_by_substeps),
            bootstrap_h_norm,
            1.0 / theta,  # the error's factor on the components the step does not damp
            damped_h_j,
        ]
    )
    a, C, c, d, m, e, P = (
        np.ascontiguousarray(x, dtype=np.float64)
        for x in (tableau.a, tableau.C, tableau.c, tableau.d, tableau.m, tableau.e, tableau.P)
    )
    return a, C, c, d, m, e, P, flags, _bootstrap_basis()


@numba.njit(cache=CACHE)
def _stages(f, p, t, y, h, k1, f_t, LU, piv, co, u, arg, last, stats) -> None:
    """The ``u_i`` of one step of size ``h`` into ``u`` (Eq. (7.4); ``arg``: scratch of ``y``'s
    size), and ``f`` at the last stage into ``last``."""
    a, C, c, d = co[0], co[1], co[2], co[3]
    s = c.size
    n = y.size
    if s == 1:
        copy_into(last, k1)
    for i in range(s):
        if i == 0:
            copy_into(u[0], k1)
        else:
            copy_into(arg, y)
            for j in range(i):
                if a[i, j] != 0.0:
                    for q in range(n):
                        arg[q] = arg[q] + u[j, q] * a[i, j]
            if i == s - 1:
                f(t + c[i] * h, arg, p, last)
                copy_into(u[i], last)
            else:
                f(t + c[i] * h, arg, p, u[i])
            stats[NFE] += 1
        for j in range(i):
            if C[i, j] != 0.0:
                w = C[i, j] / h
                for q in range(n):
                    u[i, q] = u[i, q] + u[j, q] * w
        if d[i] != 0.0:
            w = d[i] * h
            for q in range(n):
                u[i, q] = u[i, q] + f_t[q] * w
        lu_solve(LU, piv, u[i])


@numba.njit(cache=CACHE)
def _combine(y, u, weights, out) -> None:
    """``out ← y + Σ_j weights_j u_j`` (zero weights skipped, in the Python ``lincomb``'s order)."""
    copy_into(out, y)
    for j in range(weights.size):
        if weights[j] != 0.0:
            for q in range(out.size):
                out[q] = out[q] + u[j, q] * weights[j]


@numba.njit(cache=CACHE)
def _interpolant(y, u, P, theta, w, out) -> None:
    """``out ← y + Σ_i w_i u_i`` with ``w_i = Σ_q θ^(q+1) P[i, q]``: the tableau's interpolant at
    ``θ`` (``w``: scratch of the stages' size)."""
    for i in range(w.size):
        w[i] = 0.0
        for q in range(P.shape[1]):
            w[i] += theta ** (q + 1) * P[i, q]
    _combine(y, u, w, out)


def _rosenbrock_kernel_loop(
    addresses, p, t0, t_end, y0, t_eval, rtol, atol, first_step, max_steps, co, fd_state
):
    """The whole solve: ``(status, t, h, ys, n_filled, stats, steps, y, k1)`` (``steps``: the
    accepted steps' end times; ``t``, ``h``, ``y``, ``k1`` where the solve stopped)."""
    f, jac = user_functions(addresses)  # .addresses: the user's compiled f and jac
    a, C, c, d, m, e, P, flags, B = co
    gamma, k = flags[0], flags[1]
    fsal, bootstrap, by_substeps, bootstrap_h_norm = (
        flags[2] != 0.0,
        flags[3] != 0.0,
        flags[4] != 0.0,
        flags[5],
    )
    inv_theta, damped_h_j = flags[6], flags[7]
    s = c.size
    n = y0.size
    stats, ys, direction, signed, steps = output_buffers(y0, t0, t_end, t_eval)
    nxt = 1
    n_steps_out = 0
    alpha, beta, safety = pi_coefficients(int(k), math.nan, math.nan)  # the engine's PI controller
    J = np.zeros((n, n))
    f_t = np.zeros(n)
    LU = np.empty((n, n))
    piv = np.empty(n, dtype=np.int64)
    sLU = np.empty((n, n))
    spiv = np.empty(n, dtype=np.int64)
    u = np.empty((s, n))
    us = np.empty((s, n))
    y_new = np.empty(n)
    err = np.empty(n)
    out = np.empty(n)
    arg = np.empty(n)
    last = np.empty(n)  # f at the last stage, or at the step's end: the next k1 when accepted
    mid = np.empty(n)
    sub_last = np.empty(n)
    w = np.empty(s)
    J_t, J_at = math.nan, -1
    lu_h = math.nan
    lu_ok = False
    J_norm = 0.0
    t = t0
    y = y0.copy()
    k1, h, finite = first_slope_and_step(
        f, p, t0, t_end, y, y0, rtol, atol, direction, first_step, int(k), stats
    )
    if not finite:
        return NONFINITE_START, t0, 0.0, ys, nxt, stats, steps[:0], y, k1
    err_prev, rejected_last, nonfinite_last = ERR_PREV_FLOOR, False, False
    overflow_pending, overflow_stalls = False, 0
    while True:
        status, h, t_new = step_head(
            t, h, t_end, direction, stats[N_STEPS], max_steps, nonfinite_last
        )
        if status != RUNNING:
            return status, t, h, ys, nxt, stats, steps[:n_steps_out], y, k1
        # -- attempt: J and ∂f/∂t once per step start, the LU once per h
        if not (J_t == t and J_at == stats[N_ACCEPTED]):
            jacobian(f, jac, t, y, k1, p, fd_state, J, stats)
            time_derivative(f, t, y, k1, p, f_t, stats)
            J_t, J_at, lu_h = t, stats[N_ACCEPTED], math.nan
            J_norm = 0.0
            for i in range(n):
                row = 0.0
                for j in range(n):
                    row += abs(J[i, j])
                J_norm = max(J_norm, row)
        if lu_h != h:
            lu_ok = shifted_lu(J, 1.0 / (h * gamma), LU, piv)
            lu_h = h
            stats[NLU] += 1
        have_end_slope = False
        end_slope = k1
        if lu_ok:
            _stages(f, p, t, y, h, k1, f_t, LU, piv, co, u, arg, last, stats)
            _combine(y, u, m, y_new)
            err[:] = 0.0
            started = False
            for j in range(s):  # lincomb(None, u, e): the first nonzero term, then sums
                if e[j] != 0.0:
                    for q in range(n):
                        err[q] = err[q] + u[j, q] * e[j] if started else u[j, q] * e[j]
                    started = True
            if inv_theta != 1.0:  # tolerance proportionality, as RosenbrockStepper.error_weights
                for q in range(n):
                    if abs(h * J[q, q]) < damped_h_j:
                        err[q] = err[q] * inv_theta
            if fsal:
                have_end_slope, end_slope = True, last
            norm = rms_error_norm(err, y, y_new, rtol, atol)
            if norm != norm:
                norm = math.inf
        else:  # W singular or not finite: a trial the controller rejects as non-finite
            copy_into(y_new, y)
            norm = math.inf
        stats[N_STEPS] += 1
        if norm <= 1.0:
            inner, stop, exact = accepted_outputs(stats, signed, nxt, t, t_new, direction)
            if inner > nxt:
                stiff = abs(h) * J_norm > bootstrap_h_norm
                if stiff or by_substeps:
                    for row in range(nxt, inner):
                        th = (t_eval[row] - t) / h
                        if th <= 0.0 or th >= 1.0:
                            ys[row] = y if th <= 0.0 else y_new
                            continue
                        hs = th * h
                        stats[NLU] += 1
                        if shifted_lu(J, 1.0 / (hs * gamma), sLU, spiv):
                            _stages(
                                f, p, t, y, hs, k1, f_t, sLU, spiv, co, us, arg, sub_last, stats
                            )
                            _combine(y, us, m, out)
                        else:
                            _interpolant(y, u, P, th, w, out)
                        copy_into(ys[row], out)
                elif not bootstrap:
                    for row in range(nxt, inner):
                        th = (t_eval[row] - t) / h
                        _interpolant(y, u, P, th, w, out)
                        copy_into(ys[row], out)
                else:
                    # P's interpolant at θ = 1/3, and f there (one call per step)
                    _interpolant(y, u, P, 1.0 / 3.0, w, out)
                    f(t + h / 3, out, p, mid)
                    stats[NFE] += 1
                    if not have_end_slope:
                        f(t + h, y_new, p, last)
                        end_slope = last
                        stats[NFE] += 1
                        have_end_slope = True
                    for row in range(nxt, inner):
                        th = (t_eval[row] - t) / h
                        bw = np.zeros(5)
                        for r in range(5):
                            for q in range(5):
                                bw[r] += th**q * B[q, r]
                        bw[1] *= h
                        bw[3] *= h
                        bw[4] *= h
                        for i in range(n):
                            out[i] = (
                                y[i] * bw[0]
                                + k1[i] * bw[1]
                                + y_new[i] * bw[2]
                                + end_slope[i] * bw[3]
                                + mid[i] * bw[4]
                            )
                        copy_into(ys[row], out)
            if exact:
                copy_into(ys[inner], y_new)
            nxt = stop
            overflow_pending, overflow_stalls, at_edge = overflow_stall(
                overflow_pending, overflow_stalls, y, y_new
            )
            if at_edge:
                return RANGE_EDGE, t, h, ys, nxt, stats, steps[:n_steps_out], y, k1
            factor = accepted_factor(norm, err_prev, alpha, beta, safety, rejected_last)
            err_prev = max(norm, ERR_PREV_FLOOR)
            steps, n_steps_out = push_step(steps, n_steps_out, t_new)
            t = t_new
            copy_into(y, y_new)
            if direction * (t_end - t) > 0:
                if have_end_slope:  # end_slope is last: the two arrays trade places
                    k1, last = last, k1
                else:
                    f(t_new, y, p, k1)
                    stats[NFE] += 1
            rejected_last = nonfinite_last = False
        else:
            nonfinite_last, overflow_pending = rejected_trial(stats, norm, overflow_pending)
            factor = rejected_factor(norm, safety, int(k))
            rejected_last = True
        h = h * factor


KERNEL = StiffKernel(_rosenbrock_kernel_loop, lambda: coefficients(py.RODAS4, 1e-6))
kernel = KERNEL.kernel


for _name, _tableau in TABLEAUS.items():
    register_kernel(_name, StiffDriver(_name, KERNEL, functools.partial(coefficients, _tableau)))
