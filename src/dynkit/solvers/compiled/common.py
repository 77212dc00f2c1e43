"""Pieces every compiled kernel shares: status codes, the result record, and the controller's rules
in numba.

Each function here is the compiled twin of a piece of :mod:`dynkit.solvers.engine`, with the same
constants (read from the engine, one source of truth) and the same arithmetic, so that a kernel
built from them takes the steps the Python loop takes:

* :func:`initial_step` — ``engine._initial_step`` ([HNW] II.4, one probe evaluation of ``f``);
* :func:`pi_coefficients`, :func:`accepted_factor`, :func:`rejected_factor` — the PI controller of
  ``engine._march_adaptive`` (safety 0.9, ``β = 0.2 / k``, ``α = 1/k − 0.75 β``, factors clipped to
  [0.2, 10], no growth right after a rejection, 0.25 after a non-finite trial);
* :func:`last_step`, :func:`step_underflowed` — the last-step rule (a step that would leave less
  than 16 ulps of ``t`` before ``t_end`` is stretched to it) and the underflow test (``|h|`` below
  16 ulps of ``t``);
* :func:`rms_error_norm` — the RMS of ``err / (atol + rtol max(|y|, |y_new|))``;
* :func:`outputs_due`, :func:`hermite_into` — the output recorder's rule (output times within
  ``1e-9 |h|`` of a step's end are that end, the ones inside are interpolated) and cubic Hermite
  interpolation;
* :func:`first_slope_and_step`, :func:`step_head`, :func:`accepted_outputs`,
  :func:`rejected_trial`, :func:`push_step` — the adaptive loop itself around a method's trial step (``engine._march_adaptive``): the start, the checks before each trial (the
  result codes, :data:`RUNNING` while none applies), and the bookkeeping of an accepted or rejected
  trial, so that a kernel holds only its method's own arithmetic.

This module imports numba: import it only once :func:`dynkit.solvers.compiled.numba_available` said
yes.

References
----------
.. [HNW] E. Hairer, S. P. Nørsett, G. Wanner, *Solving Ordinary Differential Equations I*, 2nd ed., Springer 1993,
   Sects. II.4 (initial step, step-size control) and II.6 (Hermite interpolation).
"""  # noqa: E501

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import numba
import numpy as np

from .. import _diagnosis, _recorder, stepsize
from ..errors import CompileWarning
from ..results import STAT_FIELDS
from . import cache as _cache

__all__ = [
    "CACHE",
    "FIELD_SIGNATURE",
    "JACOBIAN_SIGNATURE",
    "FIELD_TYPE",
    "JACOBIAN_TYPE",
    "SUCCESS",
    "MAX_STEPS",
    "STEP_UNDERFLOW",
    "NONFINITE",
    "NEWTON_FAILURE",
    "NONFINITE_START",
    "RANGE_EDGE",
    "copy_into",
    "ABORTED",
    "RUNNING",
    "STATUS_RESULTS",
    "STAT_FIELDS",
    "SAFETY",
    "MIN_FACTOR",
    "MAX_FACTOR",
    "NONFINITE_FACTOR",
    "PI_BETA_TIMES_K",
    "SAME_TIME_RTOL",
    "OVERFLOW_STALLS",
    "ERR_PREV_FLOOR",
    "CompiledProblem",
    "CompiledResult",
    "min_step",
    "last_step",
    "step_underflowed",
    "pi_coefficients",
    "accepted_factor",
    "rejected_factor",
    "rms_error_norm",
    "safe_rms",
    "initial_step",
    "all_finite",
    "same_state",
    "overflow_stall",
    "outputs_due",
    "hermite_into",
    "first_slope_and_step",
    "step_head",
    "accepted_outputs",
    "rejected_trial",
    "push_step",
]

# -- numba's on-disk cache: a private per-user folder, keyed on the kernels' code and the constants
# they read (dynkit.solvers.compiled.cache); off, with a warning, where the folder is not private to
# the user
CACHE_FOLDER, CACHE_REASON = _cache.kernel_folder()
CACHE = CACHE_FOLDER is not None and _cache.install_locator(CACHE_FOLDER)  # the kernels' cache=
if CACHE_REASON is not None:
    warnings.warn(
        f"the compiled kernels are not cached on disk: {CACHE_REASON}; they compile anew "
        f"in each process (expected a folder of yours with mode 0700: chmod 700 it, or "
        f"set {_cache.CACHE_ENV} to another one)",
        CompileWarning,
        stacklevel=2,
    )

# -- the types of the compiled problem: f(t, y, p, out) writing dy/dt into out, and
# jac(t, y, p) -> ∂f/∂y, as numba first-class function types. A kernel declared with them compiles
# once per process (and is cached on disk), not once per user f: the user's f is then compiled alone
# (a fraction of a second) and called through a function pointer. f writes into the kernel's own
# array: a new array per call (numba's allocator and reference counts) cost a user whose f writes in
# place (dynkit.in_place) a tenth to a quarter of a small system's solve.
FIELD_SIGNATURE = numba.types.void(
    numba.types.float64,
    numba.types.float64[::1],
    numba.types.float64[::1],
    numba.types.float64[::1],
)
JACOBIAN_SIGNATURE = numba.types.float64[:, ::1](
    numba.types.float64, numba.types.float64[::1], numba.types.float64[::1]
)
FIELD_TYPE = numba.types.FunctionType(FIELD_SIGNATURE)
JACOBIAN_TYPE = numba.types.FunctionType(JACOBIAN_SIGNATURE)

# -- status codes of a compiled solve (CompiledResult.status)
SUCCESS = 0
MAX_STEPS = 1  # MaxStepsExceeded
STEP_UNDERFLOW = 2  # StepSizeUnderflow
# NonFiniteState: NaN/Inf in f at the start, on every trial down to the smallest step, or range edge
NONFINITE = 3
NEWTON_FAILURE = (
    4  # implicit kernels: Newton failed down to the smallest step (reported as StepSizeUnderflow)
)
NONFINITE_START = 5  # NonFiniteState: f returned NaN/Inf at the initial state
# NonFiniteState: the state sits at the edge of float64's range (accepted steps change nothing)
RANGE_EDGE = 6
# a trajectory of a parallel kernel that never returned: f raised inside a prange, where numba drops
# the exception (the status array starts with this code, march overwrites it when it returns)
ABORTED = 7
# step_head's answer while none of the codes above applies: the loop goes on with a trial step
RUNNING = -1

STATUS_RESULTS = {
    SUCCESS: "success",
    MAX_STEPS: "max_steps_exceeded",
    STEP_UNDERFLOW: "step_size_underflow",
    NONFINITE: "non_finite_state",
    NEWTON_FAILURE: "step_size_underflow",
    NONFINITE_START: "non_finite_state",
    RANGE_EDGE: "non_finite_state",
    ABORTED: "vector_field_error",
}

# -- positions in the stats vector: the order of SolverStats' fields (STAT_FIELDS)
NFE, N_STEPS, N_ACCEPTED, N_REJECTED, NJEV, NLU, SWITCHES, NEWTON_ITERATIONS, NEWTON_FAILURES = (
    range(len(STAT_FIELDS))
)

# -- the engine's constants, frozen into the kernels when they compile
SAFETY = stepsize.SAFETY
MIN_FACTOR = stepsize.MIN_FACTOR
MAX_FACTOR = stepsize.MAX_FACTOR
NONFINITE_FACTOR = stepsize.NONFINITE_FACTOR
PI_BETA_TIMES_K = stepsize.PI_BETA_TIMES_K
SAME_TIME_RTOL = _recorder.SAME_TIME_RTOL
OVERFLOW_STALLS = _diagnosis.OVERFLOW_STALLS
# the PI controller's remembered error starts at (and never goes below) this
ERR_PREV_FLOOR = stepsize.ERR_PREV_FLOOR


@dataclass
class CompiledProblem:
    """What :func:`dynkit.solvers.compiled.compile_problem` returns: the problem in the kernels'
    calling convention.

    Attributes
    ----------
    f : numba dispatcher
        ``f(t, y, p, out)``: writes ``dy/dt`` into ``out`` (float64, shape ``(n,)``);
        :meth:`field` calls it from Python.
    p : float64 array
        The parameter vector handed to ``f`` and ``jac`` (empty when the problem has none).
    n : int
        Number of state components.
    jac : numba dispatcher
        ``jac(t, y, p) -> float64[:, :]``; a placeholder returning a ``(0, 0)`` array when
        ``has_jac`` is False (numba needs a function of that type either way).
    has_jac : bool
    source : callable
        The user's ``f`` as given (for messages).
    """

    f: Any
    p: np.ndarray
    n: int
    jac: Any
    has_jac: bool
    source: Callable | None = None

    def field(self, t: float, y: np.ndarray) -> np.ndarray:
        """``f(t, y)`` as a new array (the compiled ``f`` called from Python)."""
        out = np.empty(self.n)
        self.f(float(t), np.ascontiguousarray(y, dtype=np.float64), self.p, out)
        return out


@dataclass
class CompiledResult:
    """What a kernel driver returns (see ``KERNELS`` in :mod:`dynkit.solvers.compiled`).

    Attributes
    ----------
    status : int
        One of the codes of this module (``SUCCESS``, ``MAX_STEPS``, ``STEP_UNDERFLOW``,
        ``NONFINITE``, ...).
    t_fail : float
        Where the solve stopped (``t_end`` on success).
    ys : float64 array ``(n_eval, n)``
        The states at the output times; rows past ``n_filled`` are NaN.
    n_filled : int
        Output rows reached (the first is ``y0``).
    stats : int64 array
        The counters in the order of :class:`~dynkit.solvers.SolverStats` (:data:`STAT_FIELDS`).
    steps : float64 array or None
        The accepted steps' end times, when the driver was asked to record them.
    h_last : float
        The step size when the solve stopped (for the failure messages).
    y_last, f_last : float64 arrays or None
        The state at ``t_fail`` and ``f`` there (an explicit kernel's ``MaxStepsExceeded`` diagnosis
        uses them).
    """

    status: int
    t_fail: float
    ys: np.ndarray
    n_filled: int
    stats: np.ndarray
    steps: np.ndarray | None = None
    h_last: float = math.nan
    y_last: np.ndarray | None = None
    f_last: np.ndarray | None = None
    extra: dict = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------
# the controller's rules


@numba.njit
def min_step(t_a: float, t_b: float) -> float:
    """The smallest step at these times: 16 ulps of the larger magnitude."""
    return 16.0 * np.spacing(max(abs(t_a), abs(t_b)))


@numba.njit
def last_step(t: float, h: float, t_end: float, direction: float):
    """``(h, last)``: a step that reaches ``t_end`` or would leave less than 16 ulps before it
    becomes ``t_end - t`` (``engine._march_adaptive``'s rule)."""
    last = direction * (t_end - (t + h)) < 16.0 * np.spacing(max(abs(t), abs(t_end)))
    if last:
        h = t_end - t
    return h, last


@numba.njit
def step_underflowed(t: float, h: float) -> bool:
    """Whether ``|h|`` is below 16 ulps of ``t`` (and of ``t + h``): a
    :class:`StepSizeUnderflow`."""
    return abs(h) < 16.0 * np.spacing(max(abs(t), abs(t + h)))


@numba.njit
def pi_coefficients(k: int, pi_beta: float, safety: float):
    """``(alpha, beta, safety)`` of the PI controller for error exponent ``k``; ``pi_beta`` NaN
    and ``safety`` NaN or 0 mean the engine's defaults (a method's own values otherwise, like
    ``RungeKuttaTableau.pi_beta``)."""
    beta = PI_BETA_TIMES_K / k if pi_beta != pi_beta else pi_beta
    alpha = 1.0 / k - 0.75 * beta
    if safety != safety or safety == 0.0:
        safety = SAFETY
    return alpha, beta, safety


@numba.njit
def accepted_factor(
    norm: float, err_prev: float, alpha: float, beta: float, safety: float, rejected_last: bool
) -> float:
    """The step factor after an accepted step (PI control, [HNW] IV.2; no growth right after a
    rejection)."""
    if norm == 0.0:
        factor = MAX_FACTOR
    else:
        factor = safety * norm ** (-alpha) * err_prev**beta
    factor = min(MAX_FACTOR, max(MIN_FACTOR, factor))
    if rejected_last:
        factor = min(1.0, factor)
    return factor


@numba.njit
def rejected_factor(norm: float, safety: float, k: int) -> float:
    """The step factor after a rejected step (0.25 after a non-finite error)."""
    if not math.isfinite(norm):
        return NONFINITE_FACTOR
    return max(MIN_FACTOR, safety * norm ** (-1.0 / k))


@numba.njit
def rms_error_norm(err, y, y_new, rtol: float, atol) -> float:
    """RMS of ``err / (atol + rtol max(|y|, |y_new|))`` (NaN stays NaN: the caller treats it as
    Inf)."""
    total = 0.0
    for j in range(err.shape[0]):
        ratio = err[j] / (atol[j] + rtol * max(abs(y[j]), abs(y_new[j])))
        total += ratio * ratio
    return math.sqrt(total / err.shape[0])


@numba.njit
def safe_rms(x) -> float:
    """RMS of ``x`` without overflow in the squares (``engine._safe_rms``)."""
    if x.shape[0] == 0:
        return 0.0
    big = 0.0
    for j in range(x.shape[0]):
        a = abs(x[j])
        if a > big or a != a:
            big = a
    if big == 0.0 or not math.isfinite(big):
        return big
    total = 0.0
    for j in range(x.shape[0]):
        r = x[j] / big
        total += r * r
    return big * math.sqrt(total / x.shape[0])


@numba.njit
def initial_step(
    f, p, t0: float, t_end: float, y0, f0, rtol: float, atol, direction: float, k: int
) -> float:
    """Automatic initial step of [HNW] II.4, as ``engine._initial_step`` (one call of ``f``: the
    caller counts it)."""
    n = y0.shape[0]
    span = abs(t_end - t0)
    scale = np.empty(n)
    scaled = np.empty(n)
    for j in range(n):
        scale[j] = atol[j] + rtol * abs(y0[j])
        scaled[j] = y0[j] / scale[j]
    d0 = safe_rms(scaled)
    for j in range(n):
        scaled[j] = f0[j] / scale[j]
    d1 = safe_rms(scaled)
    h0 = 1e-6 if (d0 < 1e-5 or d1 < 1e-5) else 0.01 * d0 / d1
    h0 = min(h0, span)
    if not h0 > 0:
        h0 = min(1e-6, span) * 1e-6
    probe = np.empty(n)
    for j in range(n):
        probe[j] = y0[j] + f0[j] * (direction * h0)
    f1 = np.empty(n)
    f(t0 + direction * h0, probe, p, f1)
    for j in range(n):
        scaled[j] = (f1[j] - f0[j]) / scale[j]
    d2 = safe_rms(scaled) / h0
    if not math.isfinite(d1) or not math.isfinite(d2):
        d2 = math.inf
    dmax = max(d1, d2)
    if dmax <= 1e-15:
        h1 = max(1e-6, h0 * 1e-3)
    else:
        h1 = (0.01 / dmax) ** (1.0 / k)
    h = min(100 * h0, h1, span)
    if not h > 0:
        h = h0 * 1e-3
    return direction * max(h, 64 * np.spacing(max(abs(t0), abs(t_end))))


@numba.njit
def all_finite(x) -> bool:
    for j in range(x.shape[0]):
        if not math.isfinite(x[j]):
            return False
    return True


@numba.njit
def same_state(a, b) -> bool:
    """Whether two states are equal component by component (``np.array_equal``)."""
    for j in range(a.shape[0]):
        if a[j] != b[j]:
            return False
    return True


@numba.njit
def overflow_stall(pending: bool, stalls: int, y, y_new):
    """The engine's range-edge watch after an accepted step: ``(pending, stalls, at_edge)``.
    Pending since an overflowed trial, it is cleared by a step that changes the state;
    ``OVERFLOW_STALLS`` accepted steps in a row that change nothing put the solve at the edge of
    float64's range (``RANGE_EDGE``)."""
    if not pending:
        return False, stalls, False
    stalled = same_state(y, y_new)
    stalls = stalls + 1 if stalled else 0
    return stalled, stalls, stalls >= OVERFLOW_STALLS


# ---------------------------------------------------------------------------------------------
# outputs


@numba.njit
def outputs_due(signed_times, next_index: int, t_old: float, t_new: float, direction: float):
    """The output times a step from ``t_old`` to ``t_new`` passes (``engine._Recorder.advance``).

    Returns ``(inner, stop, exact)``: rows ``next_index .. inner - 1`` are to be interpolated inside
    the step; with ``exact`` the row ``stop - 1`` is the step's end (its time within ``1e-9 |h|`` of
    ``t_new``); ``stop`` is the next row to fill. ``signed_times`` is ``direction * t_eval``
    (increasing).
    """
    m = signed_times.shape[0]
    if next_index >= m:
        return next_index, next_index, False
    h = t_new - t_old
    tol = SAME_TIME_RTOL * abs(h)
    end = direction * t_new
    if signed_times[next_index] > end + tol:
        return next_index, next_index, False
    stop = np.searchsorted(signed_times, end + tol, side="right")
    exact = abs(signed_times[stop - 1] - end) <= tol
    inner = stop - 1 if exact else stop
    return inner, stop, exact


@numba.njit
def hermite_into(out, theta: float, h: float, y0, f0, y1, f1) -> None:
    """Cubic Hermite interpolation on one step at the fraction ``theta`` ([HNW] II.6), written
    into ``out``."""
    t2 = theta * theta
    t3 = t2 * theta
    w0 = 2 * t3 - 3 * t2 + 1
    w1 = h * (t3 - 2 * t2 + theta)
    w2 = 3 * t2 - 2 * t3
    w3 = h * (t3 - t2)
    for j in range(out.shape[0]):
        out[j] = w0 * y0[j] + w1 * f0[j] + w2 * y1[j] + w3 * f1[j]


# ---------------------------------------------------------------------------------------------
# the adaptive loop around a method's trial step


@numba.njit
def copy_into(dst, src) -> None:
    """``dst[:] = src`` for 1-D arrays of one length, as a loop: numba's slice assignment brings a
    shape-mismatch error with a formatted message that costs seconds of compile time per kernel."""
    for i in range(dst.shape[0]):
        dst[i] = src[i]


@numba.njit(cache=CACHE)
def first_slope_and_step(f, p, t0, t_end, y, y0, rtol, atol, direction, first_step, k, stats):
    """``(k1, h, finite)``: the slope ``f(t0, y)`` at the start (``y``: the kernel's copy of
    ``y0``; counted) and the first step, ``first_step`` or the engine's automatic one for order
    ``k`` (its probe counted); ``finite`` is False (and ``h`` 0) when ``f(t0, y0)`` has a NaN or
    an infinity, which ends the solve before any step."""
    k1 = np.empty(y.size)  # the kernel's array of f's value at the step's start, from here on
    f(t0, y, p, k1)
    stats[NFE] += 1
    for i in range(k1.size):
        if not np.isfinite(k1[i]):
            return k1, 0.0, False
    if first_step != 0.0:
        return k1, first_step, True
    h = initial_step(f, p, t0, t_end, y0, k1, rtol, atol, direction, k)
    stats[NFE] += 1
    return k1, h, True


@numba.njit
def step_head(
    t: float,
    h: float,
    t_end: float,
    direction: float,
    n_steps: int,
    max_steps: int,
    nonfinite_last: bool,
):
    """What every kernel checks before a trial step, in ``engine._march_adaptive``'s order.

    Parameters
    ----------
    t, h : float
        The current time and the step to try.
    t_end, direction : float
        The end of the span and the sign of time's direction.
    n_steps, max_steps : int
        The trials so far and their limit.
    nonfinite_last : bool
        Whether the last trial was rejected for a NaN or an infinity.

    Returns
    -------
    status : int
        :data:`RUNNING` when a trial follows; :data:`SUCCESS` at ``t_end``; :data:`MAX_STEPS` when
        the trials are used up; :data:`NONFINITE` or :data:`STEP_UNDERFLOW` when the step is below
        the smallest step (the former after a non-finite trial).
    h : float
        The step, stretched to ``t_end`` on the last step (:func:`last_step`); as given with
        :data:`SUCCESS` and :data:`MAX_STEPS`, which report the step the loop would have tried.
    t_new : float
        The trial's end (``t_end`` itself on the last step, no rounding); ``t`` when not running.
    """
    if not direction * (t_end - t) > 0:
        return SUCCESS, h, t
    if n_steps >= max_steps:
        return MAX_STEPS, h, t
    h, last = last_step(t, h, t_end, direction)
    if step_underflowed(t, h):
        return (NONFINITE if nonfinite_last else STEP_UNDERFLOW), h, t
    return RUNNING, h, (t_end if last else t + h)


@numba.njit
def accepted_outputs(stats, signed_times, next_index: int, t: float, t_new: float, direction):
    """Count an accepted step and return the output rows it passes, :func:`outputs_due`'s
    ``(inner, stop, exact)``: the kernel interpolates rows ``next_index .. inner - 1`` its own
    way and writes its new state to row ``inner`` when ``exact``."""
    stats[N_ACCEPTED] += 1
    return outputs_due(signed_times, next_index, t, t_new, direction)


@numba.njit
def rejected_trial(stats, norm: float, pending: bool):
    """Count a rejected trial: ``(nonfinite_last, pending)``, whether its error was not finite
    (then a step underflow reports a :data:`NONFINITE`), and the range-edge watch armed by it."""
    stats[N_REJECTED] += 1
    nonfinite = not math.isfinite(norm)
    return nonfinite, pending or nonfinite


@numba.njit(cache=CACHE)
def push_step(steps, count, t):
    """Append ``t`` to the accepted step times (doubling the buffer when full); the buffer and
    the new count."""
    if count == steps.size:
        bigger = np.empty(2 * steps.size)
        copy_into(bigger[:count], steps)
        steps = bigger
    steps[count] = t
    return steps, count + 1
