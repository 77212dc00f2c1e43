"""The compiled embedded explicit Runge–Kutta loop: one kernel for every adaptive tableau, methods
as data.

:func:`march` is ``engine._march_adaptive`` driving ``explicit.ExplicitRK`` (the Python path),
written as one numba loop over a tableau given as arrays (:class:`ExplicitCoefficients`, read from
:class:`~dynkit.solvers.tableaus.RungeKuttaTableau`): the stages stored as rows ``h k_i``, FSAL, the
error estimate ``h Σ e_i k_i`` (and DOP853's second estimator), the PI controller and the output
rule of :mod:`.common`, and at the output times the tableau's own continuous extension (its extra
stages, and ``f(t + h, y_new)`` where ``P`` weighs it, evaluated only on the steps that interpolate,
as the Python path does) or cubic Hermite.

Evaluations of ``f`` happen where the Python path makes them, so ``nfe`` agrees: the stages of every
trial (FSAL's last one included), the probe of the initial step, the end slope of an accepted step
when another step follows or an output inside the step needs it. Importing this module registers a
kernel for every adaptive explicit method in :data:`dynkit.solvers.METHODS`. The fixed-step methods
have none: their loop's stability monitor (``engine._AmplificationMonitor``) has no compiled twin.
"""

from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass

import numba
import numpy as np

from ..methods import METHODS
from ..tableaus import RungeKuttaTableau
from . import register_kernel
from .common import (
    copy_into,
    CACHE,
    ERR_PREV_FLOOR,
    FIELD_TYPE,
    MAX_STEPS,
    NFE,
    NONFINITE_START,
    N_STEPS,
    RANGE_EDGE,
    RUNNING,
    CompiledResult,
    accepted_factor,
    accepted_outputs,
    first_slope_and_step,
    hermite_into,
    overflow_stall,
    pi_coefficients,
    push_step,
    rejected_factor,
    rejected_trial,
    step_head,
)

__all__ = [
    "SECOND_ESTIMATE_WEIGHT",
    "ExplicitCoefficients",
    "COEFFICIENTS",
    "MARCH_SIGNATURE",
    "march",
    "march_kernel",
    "ExplicitDriver",
]

# flags (an int64 array handed to the kernel)
FSAL, HAS_P, P_USES_SLOPE, HAS_E2, EXPONENT = range(5)
# DOP853's combination of its two error estimates ([HNW] II.10): |e5|² / sqrt(|e5|² + 0.01 |e3|²)
SECOND_ESTIMATE_WEIGHT = 0.01


@dataclass(frozen=True)
class ExplicitCoefficients:
    """A tableau as the arrays the kernel reads (all float64 unless said).

    ``a`` (s, s), ``b`` (s,) (zero past the stages before ``y_new``), ``c`` (s,), ``e`` and ``e2``
    (s,) (zeros when absent), ``p`` (rows, m) the dense-output matrix (``(0, 0)`` without one),
    ``a_dense`` (extra stages, padded rows over every earlier stage row) and ``c_dense``, ``flags``
    (int64: FSAL, has P, P weighs ``f(t + h, y_new)``, has E2, the controller's exponent k),
    ``control`` (pi_beta, safety; NaN: the defaults).
    """

    name: str
    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    e: np.ndarray
    e2: np.ndarray
    p: np.ndarray
    a_dense: np.ndarray
    c_dense: np.ndarray
    flags: np.ndarray
    control: np.ndarray

    @classmethod
    def from_tableau(cls, tableau: RungeKuttaTableau) -> "ExplicitCoefficients":
        if not isinstance(tableau, RungeKuttaTableau) or not tableau.adaptive:
            raise ValueError(
                f"the compiled explicit loop runs adaptive RungeKuttaTableau methods, got "
                f"{tableau!r:.60}"
            )
        s = tableau.stages
        last = s - 1 if tableau.fsal else s
        b = np.zeros(s)
        b[:last] = tableau.b[:last]
        rows = s + (1 if tableau.p_uses_slope else 0)
        n_dense = len(tableau.a_dense)
        a_dense = np.zeros((n_dense, rows + n_dense))
        for i, row in enumerate(tableau.a_dense):
            a_dense[i, : len(row)] = row
        k = min(tableau.order, tableau.error_order or tableau.order) + 1  # as ExplicitRK.k
        flags = np.array(
            [tableau.fsal, tableau.p is not None, tableau.p_uses_slope, tableau.e2 is not None, k],
            dtype=np.int64,
        )
        control = np.array(
            [
                math.nan if tableau.pi_beta is None else tableau.pi_beta,
                math.nan if tableau.safety is None else tableau.safety,
            ]
        )
        return cls(
            tableau.name,
            tableau.a.copy(),
            b,
            tableau.c.copy(),
            tableau.e.copy(),
            np.zeros(s) if tableau.e2 is None else tableau.e2.copy(),
            np.zeros((0, 0)) if tableau.p is None else tableau.p.copy(),
            a_dense,
            tableau.c_dense.copy(),
            flags,
            control,
        )

    def arrays(self) -> tuple:
        return (
            self.a,
            self.b,
            self.c,
            self.e,
            self.e2,
            self.p,
            self.a_dense,
            self.c_dense,
            self.flags,
            self.control,
        )


@numba.njit
def _stage_sum(out, y, weights, hK, rows: int) -> None:
    """``out = y + Σ_{r < rows} weights[r] hK[r]`` (a stage's argument; the rows hold ``h k_r``)."""
    for j in range(out.shape[0]):
        acc = y[j]
        for r in range(rows):
            acc += weights[r] * hK[r, j]
        out[j] = acc


@numba.njit
def _scaled_rms(weights, hK, rows: int, y, y_new, rtol: float, atol, err) -> float:
    """RMS of ``Σ weights[r] hK[r]`` (an error estimate) over ``atol + rtol max(|y|, |y_new|)``."""
    n = y.shape[0]
    total = 0.0
    for j in range(n):
        acc = 0.0
        for r in range(rows):
            acc += weights[r] * hK[r, j]
        err[j] = acc
        ratio = acc / (atol[j] + rtol * max(abs(y[j]), abs(y_new[j])))
        total += ratio * ratio
    return math.sqrt(total / n)


# the kernels' argument types (C-ordered float64 / int64 vectors and matrices)
F8, I8 = numba.types.float64, numba.types.int64
VEC, MAT, IVEC = F8[::1], F8[:, ::1], I8[::1]
# the type of ExplicitCoefficients.arrays(), in its order: a, b, c, e, e2, p, a_dense, c_dense,
# flags, control (the single and the ensemble kernel take them alike, as one tuple)
COEFFICIENTS = numba.types.Tuple((MAT, VEC, VEC, VEC, VEC, MAT, MAT, VEC, IVEC, VEC))
# march compiles once, on first use (march_kernel; then it loads from the disk cache, keyed on the
# package's sources: common.CACHE): f is a first-class function of FIELD_TYPE, not a type of its
# own, so a user's f is compiled alone
MARCH_SIGNATURE = numba.types.Tuple((I8, F8, F8, I8, VEC, I8))(
    FIELD_TYPE,
    VEC,
    COEFFICIENTS,
    VEC,
    VEC,
    F8,
    VEC,
    F8,
    I8,
    MAT,
    IVEC,
    VEC,
    VEC,
    VEC,
)


def march(
    f,
    p,
    coefficients,
    t_out,
    y0,
    rtol,
    atol,
    first_step,
    max_steps,
    ys,
    stats,
    y_last,
    f_last,
    steps,
):
    """Integrate from ``t_out[0]`` to ``t_out[-1]``, writing ``ys[i]`` at ``t_out[i]`` and counting
    into ``stats``.

    ``first_step`` 0 means automatic; ``steps`` (float64, length 0 to not record) receives the
    accepted steps' end times, grown as needed. Returns
    ``(status, t_stop, h, n_filled, steps, n_recorded)``; on a ``MAX_STEPS`` or ``RANGE_EDGE``
    failure ``y_last`` and ``f_last`` hold the state and ``f`` at ``t_stop``.
    ``coefficients`` is :meth:`ExplicitCoefficients.arrays`.
    """
    a, b, c, e, e2, pd, a_dense, c_dense, flags, control = coefficients
    fsal, has_p, p_uses_slope, has_e2 = (
        flags[FSAL] != 0,
        flags[HAS_P] != 0,
        flags[P_USES_SLOPE] != 0,
        flags[HAS_E2] != 0,
    )
    k = flags[EXPONENT]
    n = y0.shape[0]
    s = c.shape[0]
    last = s - 1 if fsal else s  # the stages before y_new (FSAL: the last one is f(t + h, y_new))
    slope_row = s  # where P's weight on f(t + h, y_new) sits, when it has one
    first_dense = s + 1 if p_uses_slope else s
    n_dense = c_dense.shape[0]
    hK = np.zeros((first_dense + n_dense, n))
    weights = np.zeros(first_dense + n_dense)
    m = pd.shape[1]
    record = steps.shape[0] > 0
    n_recorded = 0

    t0, t_end = t_out[0], t_out[-1]
    direction = 1.0 if t_end > t0 else -1.0
    signed = direction * t_out
    copy_into(ys[0], y0)
    n_filled = 1
    y = y0.copy()
    y_new = np.empty(n)
    stage = np.empty(n)
    err = np.empty(n)
    t = t0

    k1, h, finite = first_slope_and_step(
        f, p, t0, t_end, y, y0, rtol, atol, direction, first_step, k, stats
    )
    if not finite:
        return NONFINITE_START, t0, 0.0, n_filled, steps, n_recorded
    alpha, beta, safety = pi_coefficients(k, control[0], control[1])
    err_prev = ERR_PREV_FLOOR
    rejected_last = False
    nonfinite_last = False
    overflow_pending = False
    overflow_stalls = 0
    k_end = np.empty(n)  # f at the trial's end (FSAL or for the outputs)
    while True:
        status, h, t_new = step_head(
            t, h, t_end, direction, stats[N_STEPS], max_steps, nonfinite_last
        )
        if status != RUNNING:
            if status == MAX_STEPS:  # the failure's diagnosis starts from the state and slope here
                copy_into(y_last, y)
                copy_into(f_last, k1)
            return status, t, h, n_filled, steps, n_recorded

        # one trial step: rows h k_i, y_new, the error estimate
        for j in range(n):
            hK[0, j] = k1[j] * h
        for i in range(1, last):
            _stage_sum(stage, y, a[i], hK, i)
            f(t + c[i] * h, stage, p, hK[i])
            stats[NFE] += 1
            for j in range(n):
                hK[i, j] = hK[i, j] * h
        _stage_sum(y_new, y, b, hK, last)
        slope_known = False
        if fsal:
            f(t + h, y_new, p, k_end)
            stats[NFE] += 1
            for j in range(n):
                hK[last, j] = k_end[j] * h
            slope_known = True
        norm = _scaled_rms(e, hK, s, y, y_new, rtol, atol, err)
        if has_e2:
            norm2 = _scaled_rms(e2, hK, s, y, y_new, rtol, atol, err)
            denom = math.sqrt(norm * norm + SECOND_ESTIMATE_WEIGHT * norm2 * norm2)
            norm = norm * norm / denom if denom > 0 else 0.0
        if norm != norm:
            norm = math.inf
        stats[N_STEPS] += 1

        if norm <= 1.0:
            inner, stop, exact = accepted_outputs(stats, signed, n_filled, t, t_new, direction)
            if record:  # recorded before the range-edge test, as the Python recorder does
                steps, n_recorded = push_step(steps, n_recorded, t_new)
            if (
                inner > n_filled
            ):  # outputs inside the step: the interpolant (and what it needs) on first use
                if has_p:
                    if p_uses_slope:
                        if not slope_known:
                            f(t + h, y_new, p, k_end)
                            stats[NFE] += 1
                            slope_known = True
                        for j in range(n):
                            hK[slope_row, j] = k_end[j] * h
                    for r in range(n_dense):
                        row = first_dense + r
                        _stage_sum(stage, y, a_dense[r], hK, row)
                        f(t + c_dense[r] * h, stage, p, hK[row])
                        stats[NFE] += 1
                        for j in range(n):
                            hK[row, j] = hK[row, j] * h
                elif not slope_known:
                    f(t + h, y_new, p, k_end)
                    stats[NFE] += 1
                    slope_known = True
                h_step = t_new - t  # the recorder's step (the interpolants' own h is the trial's)
                for i in range(n_filled, inner):
                    theta = (t_out[i] - t) / h_step
                    if has_p:
                        for r in range(pd.shape[0]):
                            w = 0.0
                            power = theta
                            for q in range(m):
                                w += pd[r, q] * power
                                power *= theta
                            weights[r] = w
                        for j in range(n):
                            acc = 0.0
                            for r in range(pd.shape[0]):
                                acc += weights[r] * hK[r, j]
                            ys[i, j] = acc + y[j]
                    else:
                        hermite_into(ys[i], theta, h, y, k1, y_new, k_end)
            if exact:
                copy_into(ys[stop - 1], y_new)
            n_filled = stop
            overflow_pending, overflow_stalls, at_edge = overflow_stall(
                overflow_pending, overflow_stalls, y, y_new
            )
            if at_edge:
                copy_into(y_last, y)
                copy_into(f_last, k1)
                return RANGE_EDGE, t, h, n_filled, steps, n_recorded
            factor = accepted_factor(norm, err_prev, alpha, beta, safety, rejected_last)
            err_prev = max(norm, ERR_PREV_FLOOR)
            t = t_new
            y, y_new = y_new, y
            if direction * (t_end - t) > 0:
                if not slope_known:
                    f(t_new, y, p, k_end)
                    stats[NFE] += 1
                k1, k_end = k_end, k1  # the step's end slope is the next start's
            rejected_last = False
            nonfinite_last = False
        else:
            nonfinite_last, overflow_pending = rejected_trial(stats, norm, overflow_pending)
            factor = rejected_factor(norm, safety, k)
            rejected_last = True
        h = h * factor


class ExplicitDriver:
    """The compiled kernel of one tableau, in the drivers' calling convention (see
    :mod:`dynkit.solvers.compiled`).

    ``ExplicitDriver(tableau)(problem, t0, t_end, y0, t_eval, rtol, atol, first_step, max_steps)``;
    with ``record_steps=True`` the result's ``steps`` holds the accepted steps' end times.
    """

    def __init__(self, tableau: RungeKuttaTableau | ExplicitCoefficients):
        self.coefficients = (
            tableau
            if isinstance(tableau, ExplicitCoefficients)
            else ExplicitCoefficients.from_tableau(tableau)
        )
        self.name = self.coefficients.name

    def __call__(
        self,
        problem,
        t0: float,
        t_end: float,
        y0: np.ndarray,
        t_eval: np.ndarray,
        rtol: float,
        atol: np.ndarray,
        first_step: float,
        max_steps: int,
        *,
        record_steps: bool = False,
    ) -> CompiledResult:
        n = y0.shape[0]
        ys = np.full((len(t_eval), n), np.nan)
        stats = np.zeros(9, dtype=np.int64)
        y_last, f_last = np.full(n, np.nan), np.full(n, np.nan)
        steps = np.empty(64 if record_steps else 0)
        status, t_stop, h, n_filled, steps, n_recorded = march_kernel()(
            problem.f,
            problem.p,
            self.coefficients.arrays(),
            t_eval,
            y0,
            rtol,
            atol,
            first_step,
            max_steps,
            ys,
            stats,
            y_last,
            f_last,
            steps,
        )
        return CompiledResult(
            status=int(status),
            t_fail=float(t_stop),
            ys=ys,
            n_filled=int(n_filled),
            stats=stats,
            steps=steps[:n_recorded].copy() if record_steps else None,
            h_last=float(h),
            y_last=y_last,
            f_last=f_last,
        )


@functools.cache
def march_kernel():
    """:func:`march` compiled for :data:`MARCH_SIGNATURE` (or loaded from numba's cache) on first
    use, not on import: a stiff solve does not pay for it."""
    with warnings.catch_warnings():  # the kernel's own use of first-class functions
        warnings.simplefilter("ignore", numba.NumbaExperimentalFeatureWarning)
        return numba.njit(MARCH_SIGNATURE, cache=CACHE)(march)


def _register() -> None:
    for name, info in METHODS.items():
        if isinstance(info.implementation, RungeKuttaTableau) and info.implementation.adaptive:
            register_kernel(name, ExplicitDriver(info.implementation))


_register()
