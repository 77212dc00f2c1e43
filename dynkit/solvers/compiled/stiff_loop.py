"""Pieces of the adaptive loop shared by the compiled stiff kernels (radau5, bdf, the Rosenbrock methods).

Each is the compiled form of one rule of :func:`dynkit.solvers.engine._march_adaptive` and its helpers, with the
same constants (imported from the engine: one source of truth): the automatic first step
(:func:`initial_step`, [HNW] II.4), the last-step and step-underflow rule (:func:`last_step`,
:func:`too_small`), the RMS error norm with ``atol + rtol max(|y|, |y_new|)`` (:func:`error_norm`), the output
times passed by a step (:func:`outputs_in_step`, the engine's ``_Recorder.advance``), and the list of accepted
step times the equivalence test compares.

References
----------
.. [HNW] E. Hairer, S. P. Nørsett, G. Wanner, *Solving Ordinary Differential Equations I*, 2nd ed., Springer
   1993, Sect. II.4 (starting step size).
"""
from __future__ import annotations

import math

import numba
import numpy as np

from ..engine import MAX_FACTOR, MIN_FACTOR, NONFINITE_FACTOR, OVERFLOW_STALLS, PI_BETA_TIMES_K, SAFETY, \
    SAME_TIME_RTOL

__all__ = ["MAX_FACTOR", "MIN_FACTOR", "NONFINITE_FACTOR", "OVERFLOW_STALLS", "PI_BETA_TIMES_K", "SAFETY"]

# result codes of a kernel
SUCCESS, MAX_STEPS, STEP_UNDERFLOW, NONFINITE, NEWTON_FAILURE = 0, 1, 2, 3, 4


@numba.njit(cache=True, inline="always")
def spacing(x: float) -> float:
    """``np.spacing(|x|)``: the gap from ``|x|`` to the next larger float."""
    a = abs(x)
    return np.nextafter(a, np.inf) - a


@numba.njit(cache=True)
def safe_rms(x) -> float:
    """RMS of ``x`` without overflow in the squares (the engine's ``_safe_rms``)."""
    if x.size == 0:
        return 0.0
    big = 0.0
    for v in x:
        big = max(big, abs(v))
    if big == 0.0 or not math.isfinite(big):
        return big
    s = 0.0
    for v in x:
        s += (v / big) ** 2
    return big * math.sqrt(s / x.size)


@numba.njit(cache=True)
def initial_step(f, t0, t_end, y0, f0, p, rtol, atol, k, stats) -> float:
    """The engine's ``_initial_step`` ([HNW] II.4): one probe call of ``f``, counted."""
    direction = 1.0 if t_end > t0 else -1.0
    span = abs(t_end - t0)
    scale = atol + rtol * np.abs(y0)
    d0, d1 = safe_rms(y0 / scale), safe_rms(f0 / scale)
    h0 = 1e-6 if (d0 < 1e-5 or d1 < 1e-5) else 0.01 * d0 / d1
    h0 = min(h0, span)
    if not h0 > 0:
        h0 = min(1e-6, span) * 1e-6
    f1 = f(t0 + direction * h0, y0 + f0 * (direction * h0), p)
    stats[0] += 1
    d2 = safe_rms((f1 - f0) / scale) / h0
    if not math.isfinite(d1) or not math.isfinite(d2):
        d2 = math.inf
    dmax = max(d1, d2)
    h1 = max(1e-6, h0 * 1e-3) if dmax <= 1e-15 else (0.01 / dmax) ** (1.0 / k)
    h = min(100 * h0, h1, span)
    if not h > 0:
        h = h0 * 1e-3
    return direction * max(h, 64 * spacing(max(abs(t0), abs(t_end))))


@numba.njit(cache=True, inline="always")
def last_step(t, h, t_end, direction) -> bool:
    """The step reaches ``t_end`` or would leave less than the smallest step (16 ulps) before it."""
    return direction * (t_end - (t + h)) < 16 * spacing(max(abs(t), abs(t_end)))


@numba.njit(cache=True, inline="always")
def too_small(t, h) -> bool:
    """A step below 16 ulps of ``t``: the solve fails (StepSizeUnderflow, or NonFiniteState after overflows)."""
    return abs(h) < 16 * spacing(max(abs(t), abs(t + h)))


@numba.njit(cache=True)
def error_norm(err, y, y_new, rtol, atol) -> float:
    """RMS of ``err / (atol + rtol max(|y|, |y_new|))`` (NaN stays NaN: the caller decides)."""
    s = 0.0
    for i in range(err.size):
        r = err[i] / (atol[i] + rtol * max(abs(y[i]), abs(y_new[i])))
        s += r * r
    return math.sqrt(s / err.size)


@numba.njit(cache=True)
def outputs_in_step(signed, direction, nxt, t_old, t_new):
    """The output rows an accepted step ``(t_old, t_new]`` passes: ``(stop, inner, exact)``; rows ``nxt …
    inner − 1`` are interpolated, row ``inner`` (when ``exact``) is the step's end; ``stop`` is the next row."""
    n = signed.size
    tol = SAME_TIME_RTOL * abs(t_new - t_old)
    end = direction * t_new
    if nxt >= n or signed[nxt] > end + tol:
        return nxt, nxt, False
    stop = np.searchsorted(signed, end + tol, side="right")
    exact = abs(signed[stop - 1] - end) <= tol
    inner = stop - 1 if exact else stop
    return stop, inner, exact


@numba.njit(cache=True)
def push_step(steps, count, t):
    """Append ``t`` to the accepted step times (doubling the buffer when full); the buffer and the new count."""
    if count == steps.size:
        bigger = np.empty(2 * steps.size)
        bigger[:count] = steps
        steps = bigger
    steps[count] = t
    return steps, count + 1


# the calling convention of a compiled problem: f(t, y, p) -> dy/dt, jac(t, y, p) -> ∂f/∂y
F_SIGNATURE = numba.types.float64[::1](numba.types.float64, numba.types.float64[::1], numba.types.float64[::1])
JAC_SIGNATURE = numba.types.float64[:, ::1](numba.types.float64, numba.types.float64[::1],
                                            numba.types.float64[::1])


def compile_kernel(loop, coefficients_example: tuple):
    """``loop`` compiled once for every problem: ``f`` and ``jac`` enter as first-class function values of
    :data:`F_SIGNATURE` / :data:`JAC_SIGNATURE` (``jac`` may be None: difference Jacobians), not as
    specialisations, so the kernel compiles once per method (and is cached on disk), not once per problem.

    The arguments after ``f`` and ``jac``: ``p, t0, t_end, y0, t_eval, rtol, atol, first_step, max_steps,
    coefficients, difference_state``.
    """
    t = numba.types
    vector = t.float64[::1]
    tail = (vector, t.float64, t.float64, vector, vector, t.float64, vector, t.float64, t.int64,
            numba.typeof(coefficients_example), t.float64[:, ::1])
    f_type = t.FunctionType(F_SIGNATURE)
    signatures = [(f_type, jac_type, *tail) for jac_type in (t.none, t.FunctionType(JAC_SIGNATURE))]
    return numba.njit(signatures, cache=True)(loop)
