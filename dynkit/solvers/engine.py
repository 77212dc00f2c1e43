"""One controller loop for every method in :data:`dynkit.solvers.METHODS`, driving a small stepper.

How it fits together
--------------------
:func:`solve` validates the arguments, wraps ``f`` in a counting, checking :class:`_CountedField`,
builds a *stepper* for the method and hands it to one of two loops: :func:`_march_adaptive` (embedded
pairs and any other method with an error estimate) or :func:`_march_constant` (fixed-step methods).
The loops own everything that is not the method: step-size control (PI controller, [HNW] IV.2 /
II.4), rejection, failures, the output times (:class:`_Recorder`, several per step filled at once),
dense output (:class:`~dynkit.solvers.dense.DenseOutput`) and events
(:class:`~dynkit.solvers.events.EventTracker`).

The stepper protocol (how a new stepper kind plugs in)
------------------------------------------------------
A *method object* (what ``METHODS[name].implementation`` holds, or what a user passes as
``method``) needs ``name`` (str), ``adaptive`` (bool) and ``make_stepper(field, backend)``
(:class:`~dynkit.solvers.tableaus.RungeKuttaTableau` and
:class:`~dynkit.solvers.ark.TwoStepRK` are handled by :func:`~dynkit.solvers.explicit.make_stepper`).
``field(t, y)`` is the counted vector field (``field.stats`` is the solve's :class:`SolverStats`:
a stepper that factorises or evaluates Jacobians increments ``njev`` / ``nlu`` there), ``backend``
the numpy/torch :mod:`~dynkit.solvers.backend`. The stepper it returns has

``k`` : int
    exponent of the controller, the local error being O(h^k) (``min(order, error_order) + 1``);
    read on every step, so a switching stepper may change it (``safety`` and ``pi_beta``, optional,
    override the controller's safety factor 0.9 and PI coefficient 0.2 / k, read when ``k`` changes).
``attempt(t, y, h, k1) -> Trial``
    one trial step from ``(t, y)`` with step ``h`` (signed), given ``k1 = f(t, y)``; returns a
    :class:`~dynkit.solvers.explicit.Trial`: ``y_new``, ``error`` (array like ``y``, or None for
    fixed-step methods), ``interpolant`` (a 1-D numpy array of step fractions θ → the stacked
    states at ``t + θ h``, leading axis ``len(θ)``) and ``end_slope``
    (a :class:`~dynkit.solvers.explicit.Slope`: ``f(t + h, y_new)``, filled in by FSAL methods,
    computed lazily otherwise). ``attempt`` must not change the stepper's state in a way that a
    rejection would have to undo, or it must undo it itself on the next call.
``error_norm(trial, norm) -> numpy array`` (optional)
    the scalar (or per-sample) error measure from ``norm(array)`` (the controller's scaled RMS,
    per sample when ``per_sample=True``); the default is ``norm(trial.error)``.
``accepted(trial)`` (optional)
    called after the controller accepts a trial (reuse of Jacobians, stiffness switching, ...).
``explicit`` (optional, default True)
    False for implicit/linearly implicit steppers: a ``MaxStepsExceeded`` then does not suggest
    a stiff method.

A minimal example: ``class Euler2: adaptive = True; name = "my"; def make_stepper(self, field,
backend): return MyStepper(field, backend)`` and ``dk.solve(f, y0, t, method=Euler2())``; to
appear under a name, add a :class:`~dynkit.solvers.MethodInfo` to ``METHODS``.

Methods are data (:mod:`~dynkit.solvers.tableaus`, :mod:`~dynkit.solvers.ark`); nothing here is
specific to one of them.
"""

from __future__ import annotations

import math
import sys
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .ark import TwoStepRK
from .backend import backend_for, is_torch
from .dense import DenseOutput
from .errors import (
    MaxStepsExceeded,
    NonFiniteState,
    SolverError,
    StepSizeUnderflow,
    StepSizeWarning,
    StepTooLarge,
    ToleranceWarning,
    VectorFieldError,
    VectorFieldShapeError,
    VectorFieldTypeError,
)
from .events import EventTracker
from .constraints import NonNegative
from .control import StepControl
from .explicit import Slope, Trial, make_stepper
from .jacobian import verify_user_jacobian
from .tableaus import RungeKuttaTableau

# Step-size control constants ([HNW] II.4, and Hairer's DOPRI5 code for the PI part).
SAFETY = 0.9
MIN_FACTOR = 0.2
MAX_FACTOR = 10.0
NONFINITE_FACTOR = 0.25  # shrink after a trial step whose stages overflowed
PI_BETA_TIMES_K = 0.2  # beta = 0.2 / k, alpha = 1/k - 0.75 beta: Hairer's beta = 0.04 for k = 5
# Two times closer than this fraction of a step are the same output time (grid round-off).
SAME_TIME_RTOL = 1e-9
# h * (spectral radius estimate) above which the last steps of an explicit method look stability-limited
STIFF_H_LAMBDA = 1.5
# h * |Δf| / |Δy| above which a fixed step is warned about (explicit RK stability intervals are ~2-3)
UNSTABLE_H_LAMBDA = 3.0
# An underflowed step is blamed on the time variable's resolution when 16 ulps of t exceed this share of the span
TIME_RESOLUTION_SHARE = 1e-8
# |f| along the motion on both sides of a bisected reversal above this share: f jumps (chattering)
JUMP_SHARE = 0.1
# A fixed-step solve fails (StepTooLarge) after AMPLIFYING_RUN consecutive steps whose changes |Δy| and
# |Δf| grew by AMPLIFYING_GROWTH or more while h * |Δf| / |Δy| > AMPLIFYING_H_LAMBDA (1: the step is longer
# than the solution's local time scale; below the real stability intervals of every method here, ark4's
# ~1.35 the smallest, and a stable step makes a decaying mode's changes shrink)
AMPLIFYING_H_LAMBDA = 1.0
# ... and, for a growing mode (Δf·Δy > 0, genuine growth or a blow-up), h * |Δf| / |Δy| > 2: there even RK4
# misses e^{hλ} by 5 % per step, Euler by a factor 2.5
GROWING_H_LAMBDA = 2.0
AMPLIFYING_GROWTH = 1.01
AMPLIFYING_RUN = 3
# A fixed step is warned about when an eigenvalue estimate λ of ∂f/∂y with Re λ < -UNSTABLE_MODE_DECAY |λ| (a mode
# that decays) has |R(hλ)| > 1 and |R(hλ)|^(number of steps) >= UNSTABLE_MODE_GROWTH: over the solve the mode grows
# by 10 % or more where it should shrink
UNSTABLE_MODE_DECAY = 1e-3
UNSTABLE_MODE_GROWTH = 1.1
# An adaptive solve fails (NonFiniteState) after this many accepted steps that changed nothing (the step below
# the state's precision) between trials that overflowed: the state sits at the edge of its dtype's range
OVERFLOW_STALLS = 3


# solve(adjoint=True) hands over to dynkit.solvers.adjoint, which sits above this module (it imports
# solve); it registers its entry point here when imported (the package's __init__ imports it), so that
# this module never imports it
_ADJOINT_ENTRY: list[Callable] = []


def register_adjoint(entry: Callable) -> None:
    """Set the function ``solve(adjoint=True)`` calls (``dynkit.solvers.adjoint.validated_adjoint_call``)."""
    _ADJOINT_ENTRY[:] = [entry]


@dataclass
class SolverStats:
    """Work done by a solve. ``nfe`` counts every call of ``f``, whatever it was for.

    ``njev`` (Jacobian evaluations), ``nlu`` (LU factorisations), ``switches`` (explicit ↔ stiff
    switches of ``method="auto"``), ``newton_iterations`` and ``newton_failures`` (steps rejected
    because Newton did not converge; implicit methods such as ``radau5``) stay 0 for the explicit methods.
    """

    nfe: int = 0
    n_steps: int = 0
    n_accepted: int = 0
    n_rejected: int = 0
    njev: int = 0
    nlu: int = 0
    switches: int = 0
    newton_iterations: int = 0
    newton_failures: int = 0

    def as_dict(self) -> dict:
        return dict(
            nfe=self.nfe,
            n_steps=self.n_steps,
            n_accepted=self.n_accepted,
            n_rejected=self.n_rejected,
            njev=self.njev,
            nlu=self.nlu,
            switches=self.switches,
            newton_iterations=self.newton_iterations,
            newton_failures=self.newton_failures,
        )


@dataclass
class Solution:
    """Result of :func:`solve`.

    Attributes
    ----------
    ts : array
        The requested output times reached, in the library, dtype and device of ``y0``.
    ys : array
        ``ys[i]`` is the state at ``ts[i]``; shape ``(len(ts), *y0.shape)``.
    stats : SolverStats
    result : str
        ``"success"``, ``"event"`` (a terminal event ended the solve), or on a failure returned with
        ``throw=False`` the failure's code (``"step_size_underflow"``, ``"max_steps_exceeded"``,
        ``"step_too_large"``, …).
    message : str
    method : str
    t_events, y_events : list or None
        With ``events=[g, ...]``: for each ``g`` the times of its zeros (1-D numpy float64 array) and
        the states there (stacked like ``ys``); ``event_indices[i]`` holds, for an event function
        returning one value per sample, the sample index of each zero (``None`` for scalar ``g``).
    dense : DenseOutput or None
        With ``dense=True``: the piecewise continuous extension over the steps taken.
    switch_log : list or None
        ``method="auto"``: each switch as ``Switch(t, from_method, to_method, reason)`` (``stats.switches``
        counts them; ``reason`` names the stiffness count that fired and its numbers).
    """

    ts: Any
    ys: Any
    stats: SolverStats
    result: str = "success"
    message: str = ""
    method: str = ""
    t_events: list | None = None
    y_events: list | None = None
    event_indices: list | None = None
    dense: DenseOutput | None = None
    switch_log: list | None = None

    @property
    def success(self) -> bool:
        return self.result in ("success", "event")

    def _summary(self) -> list[tuple[str, str]]:
        """``(label, value)`` lines shared by ``repr`` and the notebook display: never the arrays themselves."""
        n = len(self.ts)
        span = f"[{float(self.ts[0]):.6g}, {float(self.ts[-1]):.6g}]" if n else "[]"
        lib = "torch" if is_torch(self.ys) else "numpy"
        s = self.stats
        lines = [
            ("method", self.method),
            (
                "result",
                self.result + (f": {self.message}" if self.message and not self.success else ""),
            ),
            ("outputs", f"{n} times in {span}, ys {tuple(self.ys.shape)} {self.ys.dtype} ({lib})"),
            (
                "work",
                f"nfe={s.nfe}, steps={s.n_steps} ({s.n_accepted} accepted, {s.n_rejected} rejected)"
                + (f", njev={s.njev}, nlu={s.nlu}" if s.njev or s.nlu else "")
                + (f", switches={s.switches}" if s.switches else "")
                + (f", newton={s.newton_iterations}" if s.newton_iterations else ""),
            ),
        ]
        if self.t_events is not None:
            lines.append(
                (
                    "events",
                    ", ".join(str(len(te)) for te in self.t_events) + " zero(s) per event function",
                )
            )
        if self.dense is not None:
            lines.append(("dense", "evaluate(t) available"))
        return lines

    def __repr__(self) -> str:
        return "Solution(" + ", ".join(f"{k}: {v}" for k, v in self._summary()) + ")"

    def _repr_html_(self) -> str:
        import html

        rows = "".join(
            f"<tr><th style='text-align:left'>{html.escape(k)}</th><td style='text-align:left'>"
            f"{html.escape(v)}</td></tr>"
            for k, v in self._summary()
        )
        return f"<table><caption>dynkit Solution</caption>{rows}</table>"

    def evaluate(self, t: Any):
        """States at the times ``t`` (any order, within the span integrated) from the dense output.

        Needs ``dense=True`` in :func:`solve`. Returns an array ``(len(t), *y0.shape)`` (or
        ``y0.shape`` for a scalar ``t``) in the library, dtype and device of ``y0``.
        """
        if self.dense is None:
            raise ValueError("evaluate needs dense output: call dk.solve(..., dense=True)")
        return self.dense(t)


# ---------------------------------------------------------------------------------------------
# shared pieces


class _CountedField:
    """Calls ``f``, counts every call and checks what comes back (library, shape, dtype, device)."""

    def __init__(self, f, backend, y0, stats, recorder):
        self.f, self.backend, self.shape, self.stats, self.recorder = (
            f,
            backend,
            y0.shape,
            stats,
            recorder,
        )
        self.dtype, self.device = y0.dtype, getattr(y0, "device", None)
        self.array_type = backend.array_type

    def __call__(self, t: float, y):
        self.stats.nfe += 1
        try:
            out = self.f(self.backend.time(t), y)
        except Exception as exc:  # the user's error, with where it happened and what was reached
            raise self.recorder.failure(
                VectorFieldError, f"f raised {type(exc).__name__} at t={t:.6g}: {exc}", t
            ) from exc
        if (
            type(out) is not self.array_type
            or out.shape != self.shape
            or out.dtype != self.dtype
            or (self.device is not None and out.device != self.device)
        ):  # a meta tensor: shape without data
            out = self._check(out, t)
        return out

    def _check(self, out, t):
        expected = "a numpy array" if self.backend.name == "numpy" else "a torch tensor"
        if not isinstance(out, self.array_type):
            raise self.recorder.failure(
                VectorFieldTypeError,
                f"f must return {expected} like y0 (y0 is "
                f"{'a numpy array' if self.backend.name == 'numpy' else 'a torch tensor'}), got "
                f"{type(out).__module__}.{type(out).__name__} at t={t:.6g}",
                t,
            )
        if out.shape != self.shape:
            raise self.recorder.failure(
                VectorFieldShapeError,
                f"f returned shape {tuple(out.shape)} at t={t:.6g}; "
                f"expected the state's shape {tuple(self.shape)}",
                t,
            )
        if self.device is not None and out.device != self.device:
            raise self.recorder.failure(
                VectorFieldTypeError,
                f"f returned a tensor on {out.device} at t={t:.6g}; expected y0's "
                f"device {self.device}",
                t,
            )
        kind = getattr(out.dtype, "kind", None) or ("c" if out.dtype.is_complex else "f")
        if kind not in "fiub":
            raise self.recorder.failure(
                VectorFieldTypeError,
                f"f returned dtype {out.dtype} at t={t:.6g}; expected real values "
                f"of y0's dtype {self.dtype}",
                t,
            )
        return self.backend.cast(out)  # y0's dtype is the contract (float32 stays float32)


class _Recorder:
    """Writes the states at the requested output times as the integration passes them.

    All output times inside one step are interpolated in one call and written into a preallocated
    array (numpy) or one chunk (torch).
    """

    def __init__(self, t_out: np.ndarray, y0, backend, stats, method_name: str):
        self.control: StepControl | None = None  # dk.solve(control=): read by the step loops
        self.forced_steps = (
            0  # steps accepted at control.min_step with an error above the tolerance
        )
        self.t_out, self.backend, self.stats, self.method = t_out, backend, stats, method_name
        self.direction = 1.0 if t_out[-1] > t_out[0] else -1.0
        self.signed = self.direction * t_out  # increasing: searchsorted works both ways
        self.out = backend.output_buffer(len(t_out), y0)
        self.next = 1
        self.next_signed = float(self.signed[1])
        self.events = None
        self.dense = None
        self.stop = None  # (result, message) when an event ends the solve
        self.switch_log = None  # the stepper's list of (t, from, to), for method="auto"

    @property
    def done(self) -> bool:
        return self.next >= len(self.t_out)

    def advance(self, t_old: float, t_new: float, y_new, interpolate: Callable[[np.ndarray], Any]):
        """Record every output time in ``(t_old, t_new]`` (with ``t_new`` possibly past the last)."""
        h = t_new - t_old
        tol = SAME_TIME_RTOL * abs(h)
        end = self.direction * t_new
        if self.next_signed > end + tol:  # the common case: no output in this step
            return
        stop = int(np.searchsorted(self.signed, end + tol, side="right"))
        exact = abs(self.signed[stop - 1] - end) <= tol
        inner = stop - 1 if exact else stop
        if inner > self.next:
            theta = (self.t_out[self.next : inner] - t_old) / h
            self.out.put(interpolate(theta))
        if exact:
            self.out.put(y_new[None])
        self.next = stop
        self.next_signed = float(self.signed[stop]) if stop < len(self.signed) else math.inf

    def solution(self, result: str = "success", message: str = "") -> Solution:
        n = self.out.count
        sol = Solution(
            ts=self.backend.output_times(self.t_out[:n]),
            ys=self.out.result(),
            stats=self.stats,
            result=result,
            message=message,
            method=self.method,
        )
        if self.events is not None:
            sol.t_events, sol.y_events, sol.event_indices = self.events.results()
        sol.dense = self.dense
        sol.switch_log = self.switch_log
        return sol

    def failure(self, cls, message: str, t: float | None) -> SolverError:
        message = f"{self.method}: {message}"
        return cls(message, solution=self.solution(cls.result, message), t=t)


def _grid(t0: float, t_end: float, h: float) -> int:
    """Number of constant steps of size ``h`` needed to reach or pass ``t_end``."""
    n = (t_end - t0) / h
    return max(1, math.ceil(n - SAME_TIME_RTOL * max(1.0, n)))


def _grid_time(t0: float, t_end: float, h: float, n: int, n_total: int) -> float:
    # t0 + n h, not repeated addition (no drift); the last grid point snaps to t_end when it lands on it
    t = t0 + n * h
    return t_end if n == n_total and abs(t - t_end) <= SAME_TIME_RTOL * abs(h) else t


def _accept(rec: _Recorder, stepper, trial: Trial, t: float, t_new: float) -> float | None:
    """Everything that follows an accepted step: dense output, events, outputs.

    Returns the time at which a terminal event ends the solve (None to go on).
    """
    interp = trial.interpolant
    if rec.dense is not None:
        rec.dense.append(t, t_new, trial.y_new, interp)
    t_stop = None
    if rec.events is not None:
        t_stop = rec.events.step(t, t_new, trial.y_new, interp)
    if t_stop is None:
        rec.advance(t, t_new, trial.y_new, interp)
    else:  # outputs (and the dense output's span) up to the event only
        if rec.dense is not None:
            rec.dense.stop = t_stop
        y_stop = interp(np.array([(t_stop - t) / (t_new - t)]))[0]
        rec.advance(t, t_stop, y_stop, lambda theta: interp(theta * ((t_stop - t) / (t_new - t))))
    hook = getattr(stepper, "accepted", None)
    if hook is not None:
        hook(trial)
    return t_stop


# ---------------------------------------------------------------------------------------------
# the two loops


def _march_constant(
    field, backend, rec, stats, stepper, t0, t_end, y0, h, max_steps, stability=None
):
    """Constant steps ``t0 + n h`` until ``t_end`` is reached or passed (never shortened); ``stability`` is the
    method's stability function ``R(z)`` (None: not checked against the steps' eigenvalue estimates)."""
    n_total = _grid(t0, t_end, h)
    if abs(h) > abs(t_end - t0) * (1 + SAME_TIME_RTOL):
        warnings.warn(
            f"{rec.method}: step_size={h:.6g} is larger than the whole span "
            f"|t[-1] - t[0]| = {abs(t_end - t0):.6g}: one step, outputs interpolated",
            StepSizeWarning,
            stacklevel=3,
        )
    t, y, k1 = t0, y0, field(t0, y0)
    checked = 0
    monitor = _AmplificationMonitor(backend, rec, h, stability, n_total)
    for n in range(1, n_total + 1):
        if stats.n_steps >= max_steps:
            raise rec.failure(
                MaxStepsExceeded,
                f"max_steps={max_steps} reached at t={t:g} "
                f"({n_total:.3g} steps of {h:g} are needed)",
                t,
            )
        if rec.control is not None and rec.control.on_step is not None:
            rec.control.on_step(t, y, h)
        trial = stepper.attempt(t, y, h, k1)
        t_new = _grid_time(t0, t_end, h, n, n_total)
        stats.n_steps += 1
        stats.n_accepted += 1
        if not backend.all_finite(trial.y_new):
            raise rec.failure(
                NonFiniteState,
                f"NaN/Inf in the state at t={t_new:g} (step from t={t:g} with step {h:g})",
                t_new,
            )
        if n < n_total:  # no slope beyond the end: f is not called for nothing
            monitor.check(t, t_new, y, trial.y_new, k1, trial.end_slope.get())
        if _accept(rec, stepper, trial, t, t_new) is not None:
            return
        if (
            n == n_total
        ):  # the last step is checked only if its end slope was needed (an interpolated output)
            if trial.end_slope.value is not None:
                monitor.check(t, t_new, y, trial.y_new, k1, trial.end_slope.value)
            return
        if (
            checked < 3 and not monitor.warned
        ):  # the first steps: is h beyond the stability interval? (once)
            checked = 3 if _warn_if_unstable(rec, h, monitor.h_lambda, t_new) else checked + 1
            monitor.warned = checked == 3
        t, y, k1 = t_new, trial.y_new, trial.end_slope.get()


class _AmplificationMonitor:
    """Notices a fixed-step solve whose steps amplify instead of following the solution.

    From the values every step has anyway (``y``, ``y_new`` and the slopes ``f`` at both ends) it
    forms ``λ_h = |h|·|Δf|/|Δy|``, the step times the secant Lipschitz constant along the step: the
    scale on which the solution changes, measured in steps. A step resolves the solution when
    ``λ_h`` is small; a stable step on a decaying mode (``λ_h`` up to the method's stability
    interval: 2 for Euler, 2.79 for RK4, about 1.35 for ARK4) makes the changes ``|Δy|`` and ``|Δf|``
    shrink. When ``λ_h > 1`` (``λ_h > 2`` for a mode growing along the steps, ``h Δf·Δy > 0``:
    the sign of ``h`` reads the direction of time) *and* both grow on :data:`AMPLIFYING_RUN`
    consecutive steps (by 1 % or more each), the states are the method's, not the solution's: a
    decaying mode amplified beyond the stability interval (``h Δf·Δy < 0``), or a solution growing
    faster than the step can follow (``h Δf·Δy > 0``: a finite-time blow-up, where the
    ratio of successive changes itself grows). It costs three reductions over the state per step (one
    device sync for torch) and no call of ``f``.
    """

    def __init__(self, backend, rec, h: float, stability=None, n_total: int = 1):
        self.backend, self.rec, self.h, self.signed_h = backend, rec, abs(h), h
        self.prev_change = self.prev_slope_change = 0.0
        self.run = 0
        self.first_t = None
        self.h_lambda = 0.0  # the last step's |h|·|Δf|/|Δy| (read by the stability warning)
        self.stability, self.n_total = stability, n_total
        self.previous = None  # the last step's (Δy, Δf, Δy·Δy, Δy·Δf) for the Ritz values
        self.warned = False  # one stability warning per solve

    def check(self, t: float, t_new: float, y, y_new, k, k_new) -> None:
        if self.stability is not None and not self.warned:
            change, slope_change, dot = self._check_eigenvalues(t_new, y, y_new, k, k_new)
        else:
            change, slope_change, dot = _change_norms(self.backend, y, y_new, k, k_new)
        h_lambda = (
            self.h * slope_change / change if change > 0 else math.inf if slope_change > 0 else 0.0
        )
        self.h_lambda = h_lambda
        growth = change / self.prev_change if self.prev_change > 0 else math.inf
        # the slope's change must grow too: a slow mode whose change grows genuinely beside a stiff mode
        # that decays (and makes λ_h large) shrinks the slope's change
        slope_growth = (
            slope_change / self.prev_slope_change if self.prev_slope_change > 0 else math.inf
        )
        growing = dot * self.signed_h > 0  # the mode grows along the steps (h < 0: backward)
        threshold = GROWING_H_LAMBDA if growing else AMPLIFYING_H_LAMBDA
        if (
            h_lambda > threshold
            and min(growth, slope_growth) >= AMPLIFYING_GROWTH
            and math.isfinite(change)
        ):
            self.run += 1
            self.first_t = t if self.run == 1 else self.first_t
        else:
            self.run = 0
        self.prev_change, self.prev_slope_change = change, slope_change
        if self.run < AMPLIFYING_RUN:
            return
        what = (
            "a decaying (stiff) mode amplified: the step is beyond the method's stability interval"
            if not growing
            else "the solution grows faster than the step can follow (a finite-"
            "time blow-up, or "
            "growth the step cannot resolve)"
        )
        raise self.rec.failure(
            StepTooLarge,
            f"step_size={self.h:g} is too large for this solution: from t={self.first_t:.6g} to "
            f"t={t_new:.6g} each step's change |Δy| grew (×{growth:.3g} on the last) with |h|·|Δf|/|Δy| ≈ "
            f"{h_lambda:.3g} > {threshold:g} — {what}; the states from t={self.first_t:.6g} on are not "
            f"the solution. Take a smaller step, an adaptive method, or a stiff one (method='rodas4' or 'auto')",
            t,
        )

    def _check_eigenvalues(self, t_new: float, y, y_new, k, k_new) -> tuple[float, float, float]:
        """Ritz values of ``J`` from the last two steps' changes, checked against the stability region.

        ``Δy`` and ``Δf ≈ J Δy`` are what power iteration with the step map ``R(hJ)`` produces for free: the
        mode that the steps amplify most comes to dominate ``Δy``. The 2×2 projection ``(YᵀY)⁻¹ YᵀF`` of ``J``
        on ``Y = [Δy_prev, Δy]`` (``F = [Δf_prev, Δf]``) gives a real eigenvalue or a complex pair; a decaying
        mode (``Re(hλ) < 0``: ``Re λ < 0`` forward in time, ``> 0`` backward) with ``|R(hλ)| > 1``
        grows where it should decay, warned about (once) when it would
        grow by :data:`UNSTABLE_MODE_GROWTH` or more over the solve's steps. No call of ``f``; three more
        reductions per step than the amplification test (one device sync for torch).
        """
        backend = self.backend
        if backend.name == "torch":
            torch = sys.modules["torch"]
            with torch.no_grad():
                dy, df = (y_new - y).reshape(-1).double(), (k_new - k).reshape(-1).double()
                prods = [dy @ dy, df @ df, dy @ df]
                if self.previous is not None:
                    a, fa = self.previous[0], self.previous[1]
                    prods += [a @ dy, a @ df, dy @ fa]
                values = torch.stack(prods).tolist()
        else:
            dy, df = (y_new - y).reshape(-1), (k_new - k).reshape(-1)
            values = [float(dy @ dy), float(df @ df), float(dy @ df)]
            if self.previous is not None:
                a, fa = self.previous[0], self.previous[1]
                values += [float(a @ dy), float(a @ df), float(dy @ fa)]
        if not all(
            map(math.isfinite, values)
        ):  # huge states: the overflow-safe norms, no eigenvalue check
            self.previous = None
            return _change_norms(backend, y, y_new, k, k_new)
        bb, ff, bf = values[0], values[1], values[2]
        ritz = []
        if bb > 0:
            ritz = [complex(bf / bb)]  # the Rayleigh quotient along the last change
            if self.previous is not None:
                aa, afa = self.previous[2], self.previous[3]
                ab, afb, bfa = values[3], values[4], values[5]
                gram = np.array([[aa, ab], [ab, bb]])
                if (
                    np.linalg.det(gram) > 1e-6 * aa * bb
                ):  # two independent directions: the 2x2 projection
                    ritz = list(
                        np.linalg.eigvals(np.linalg.solve(gram, np.array([[afa, afb], [bfa, bf]])))
                    )
        self.previous = (dy, df, bb, bf)
        for lam in ritz:
            z = self.signed_h * lam  # h < 0 backward: decaying along the steps if Re(hλ) < 0
            if not z.real < -UNSTABLE_MODE_DECAY * abs(z):
                continue  # growing or oscillating without decay: |R| > 1 may be the solution's own growth
            amplification = abs(self.stability(z))
            if amplification > 1.0 and amplification**self.n_total >= UNSTABLE_MODE_GROWTH:
                self._warn_unstable_mode(t_new, lam, amplification)
                break
        return math.sqrt(bb), math.sqrt(ff), bf

    def _warn_unstable_mode(self, t_new: float, lam: complex, amplification: float) -> None:
        self.warned = True

        def show(z: complex) -> str:
            return (
                f"{z.real:.4g}" if abs(z.imag) <= 1e-12 * abs(z) else f"{z.real:.4g}{z.imag:+.4g}i"
            )

        eig, growth = show(lam), amplification**self.n_total
        warnings.warn(
            f"{self.rec.method}: step_size={self.signed_h:.6g} lies outside the method's stability region "
            f"for a decaying mode of this problem: eigenvalue λ ≈ {eig} of ∂f/∂y (estimated from the "
            f"steps' changes of f, at t={t_new:.6g}), h·λ ≈ {show(self.signed_h * lam)} and |R(hλ)| ≈ "
            f"{amplification:.6g} > 1, so that mode grows ×{growth:.3g} over the {self.n_total} steps where "
            f"it should decay: the result is wrong. Take a smaller step (|h·λ| inside the stability "
            f"region), an adaptive method, or a stiff one",
            StepSizeWarning,
            stacklevel=4,
        )


def _stability_function(method_obj) -> Callable[[complex], complex] | None:
    """``R(z)`` of a one-step explicit Runge–Kutta method (None for the others: their stability is not a
    polynomial of one step)."""
    if not isinstance(method_obj, RungeKuttaTableau):
        return None
    from .stability import stability_polynomial

    gamma = stability_polynomial(method_obj)[::-1]
    return lambda z: complex(np.polyval(gamma, z))


def _change_norms(backend, y, y_new, k, k_new) -> tuple[float, float, float]:
    """``(|y_new - y|, |k_new - k|, (y_new - y)·(k_new - k))`` as floats, outside autograd."""
    if backend.name == "torch":
        torch = sys.modules["torch"]
        with torch.no_grad():
            dy, dk = (y_new - y).reshape(-1).double(), (k_new - k).reshape(-1).double()
            values = torch.stack(
                (torch.linalg.vector_norm(dy), torch.linalg.vector_norm(dk), dy @ dk)
            ).tolist()
        return values[0], values[1], values[2]
    dy, dk = y_new - y, k_new - k
    if dy.ndim != 1:
        dy, dk = dy.reshape(-1), dk.reshape(-1)
    dy_dy, dk_dk, dy_dk = (
        float(dy.dot(dy)),
        float(dk.dot(dk)),
        float(dy.dot(dk)),
    )  # the fastest numpy spelling
    if math.isinf(dy_dy) or math.isinf(dk_dk) or math.isinf(dy_dk):  # huge states: squares overflow
        big = max(float(np.max(np.abs(dy))), float(np.max(np.abs(dk))))
        dy, dk = dy / big, dk / big
        return (
            big * math.sqrt(float(np.dot(dy, dy))),
            big * math.sqrt(float(np.dot(dk, dk))),
            math.copysign(math.inf, float(np.dot(dy, dk))),
        )
    return math.sqrt(dy_dy), math.sqrt(dk_dk), dy_dk


def _warn_if_unstable(rec, h, h_lambda: float, t_new) -> bool:
    """Warn (once per solve) when the step's ``|h|·|Δf|/|Δy|``, measured by the amplification monitor, lies
    beyond the explicit methods' stability intervals; True when it warned."""
    if not UNSTABLE_H_LAMBDA < h_lambda < math.inf:
        return False
    warnings.warn(
        f"{rec.method}: step_size={h:.6g} looks too large for an explicit method here: "
        f"h·|Δf|/|Δy| ≈ {h_lambda:.3g} at t={t_new:.6g} (stability intervals are about 2-3); "
        f"the result may be unstable — take a smaller step or an adaptive method",
        StepSizeWarning,
        stacklevel=4,
    )
    return True


def _initial_step(field, backend, stepper, t0, t_end, y0, f0, rtol, atol, direction):
    """Automatic initial step of [HNW] II.4 (one probe evaluation of ``f``, counted).

    The norms are taken in float64 and safe from overflow; a probe that overflows, or an estimate
    that underflows to 0, makes the solve start small: the controller grows the step.
    """
    k = stepper.k
    span = abs(t_end - t0)
    no_grad = sys.modules["torch"].no_grad() if backend.name == "torch" else _nullcontext()
    with no_grad:
        scale = backend.to_numpy(backend.scale(y0, rtol, atol))
        d0, d1 = _safe_rms(backend.to_numpy(y0) / scale), _safe_rms(backend.to_numpy(f0) / scale)
        h0 = 1e-6 if (d0 < 1e-5 or d1 < 1e-5) else 0.01 * d0 / d1
        h0 = min(h0, span)
        if not h0 > 0:
            h0 = min(1e-6, span) * 1e-6
        f1 = field(t0 + direction * h0, backend.lincomb(y0, (f0,), (direction * h0,)))
        d2 = _safe_rms((backend.to_numpy(f1) - backend.to_numpy(f0)) / scale) / h0
    if not math.isfinite(d1) or not math.isfinite(d2):
        d2 = math.inf  # a probe that overflowed: start small, the controller will grow the step
    dmax = max(d1, d2)
    h1 = max(1e-6, h0 * 1e-3) if dmax <= 1e-15 else (0.01 / dmax) ** (1.0 / k)
    h = min(100 * h0, h1, span)
    if (
        not h > 0
    ):  # the estimate underflowed (huge slopes): a tiny first step, grown by the controller
        h = h0 * 1e-3
    return direction * max(h, 64 * np.spacing(max(abs(t0), abs(t_end))))


def _safe_rms(x: np.ndarray) -> float:
    """RMS of ``x`` without overflow in the squares (slopes of 1e150 have a finite RMS)."""
    if x.size == 0:
        return 0.0
    big = float(np.max(np.abs(x)))
    if big == 0.0 or not math.isfinite(big):
        return big
    return big * float(np.sqrt(np.mean(np.square(x / big))))


class _nullcontext:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def _default_error_norm(trial, norm):
    return norm(trial.error)


def _march_adaptive(
    field,
    backend,
    rec,
    stats,
    stepper,
    t0,
    t_end,
    y0,
    h,
    rtol,
    atol,
    max_steps,
    per_sample,
    constraint=None,
):
    """The adaptive loop: PI step-size control ([HNW] IV.2), rejection, outputs, events."""
    direction = 1.0 if t_end > t0 else -1.0
    t, y = t0, y0
    k1 = field(t0, y0)
    if not backend.all_finite(k1):
        raise rec.failure(NonFiniteState, f"f returned NaN/Inf at the initial state (t={t0:g})", t0)
    if h is None:
        h = _initial_step(field, backend, stepper, t0, t_end, y0, k1, rtol, atol, direction)
    control = rec.control
    bounded = control is not None and control.bounds_steps
    if bounded:
        h = control.clamp(h)
    error_norm = getattr(stepper, "error_norm", None) or _default_error_norm
    step_factor = getattr(
        stepper, "step_factor", None
    )  # a stepper with its own controller (radau5)
    err_prev, rejected_last, nonfinite_last, k = 1e-4, False, False, None
    overflow_pending, overflow_stalls = (
        False,
        0,
    )  # accepted steps that changed nothing since an overflowed trial
    while direction * (t_end - t) > 0:
        if stats.n_steps >= max_steps:
            # a stepper may hand over its end slope unevaluated (bdf's _LazySlope): the diagnosis needs the array
            slope = k1.get() if hasattr(k1, "get") and not hasattr(k1, "shape") else k1
            raise _max_steps_failure(field, backend, rec, stepper, t, y, slope, h, max_steps)
        if k != stepper.k:
            k = stepper.k
            beta = getattr(stepper, "pi_beta", None)
            beta = PI_BETA_TIMES_K / k if beta is None else beta
            alpha = 1.0 / k - 0.75 * beta
            safety = getattr(stepper, "safety", None) or SAFETY
        # the last step: one that reaches t_end, or would leave less than the smallest step (16 ulps) before
        # it (that remainder could not be stepped: a StepSizeUnderflow one ulp-sized step short of t_end)
        last = direction * (t_end - (t + h)) < 16 * np.spacing(max(abs(t), abs(t_end)))
        if last:
            h = t_end - t
        if abs(h) < 16 * np.spacing(max(abs(t), abs(t + h))):
            if nonfinite_last:
                raise rec.failure(
                    NonFiniteState,
                    f"f returned NaN/Inf on every trial step beyond t={t:.17g} "
                    f"(the step shrank to {h:.3g})",
                    t,
                )
            raise rec.failure(StepSizeUnderflow, _underflow_message(h, t, t0, t_end), t)
        t_new = t_end if last else t + h
        if control is not None and control.on_step is not None:
            control.on_step(t, y, h)
        trial = stepper.attempt(t, y, h, k1)
        y_new = trial.y_new
        scale = backend.error_scale(y, y_new, rtol, atol)
        if control is not None and control.norm is not None:
            norms = error_norm(trial, lambda e: np.float64(control.error(e, scale)))
        else:
            norms = error_norm(trial, lambda e: backend.norms(e, scale, per_sample))
        norm = float(norms.max()) if norms.ndim else float(norms)
        if norm != norm:  # NaN: treat like an overflow
            norm = math.inf
        if (
            constraint is not None
        ):  # negative parts of constrained components count as error (constraints.py)
            norm = max(
                norm, constraint.violation(y_new, lambda e: backend.norms(e, scale, per_sample))
            )
        stats.n_steps += 1
        # torchdiffeq's min_step rule: a finite error at the smallest allowed step is accepted (and counted)
        forced = bounded and 1.0 < norm < math.inf and abs(h) <= control.min_step
        if norm <= 1.0 or forced:
            rec.forced_steps += forced
            stats.n_accepted += 1
            if control is not None and control.on_accept is not None:
                control.on_accept(t, y, h)
            clipped = constraint is not None and _clip(constraint, trial)
            t_stop = _accept(rec, stepper, trial, t, t_new)
            if t_stop is not None:
                return
            if clipped:
                y_new = trial.y_new
                hook = getattr(
                    stepper, "projected", None
                )  # a stepper that keeps the state itself (bdf)
                if hook is not None:
                    hook(y_new)
            if overflow_pending:  # cleared by a step that changes the state
                stalled = _unchanged(backend, y, y_new)
                overflow_pending, overflow_stalls = stalled, overflow_stalls + 1 if stalled else 0
                if overflow_stalls >= OVERFLOW_STALLS:
                    raise rec.failure(NonFiniteState, _range_edge_message(backend, y, t, h), t)
            factor = MAX_FACTOR if norm == 0.0 else safety * norm ** (-alpha) * err_prev**beta
            factor = min(MAX_FACTOR, max(MIN_FACTOR, factor))
            if rejected_last:
                factor = min(1.0, factor)
            err_prev = max(norm, 1e-4)
            t, y = t_new, y_new
            if direction * (t_end - t) > 0:
                if clipped:  # the end slope belongs to the unclipped state
                    k1 = field(t_new, y_new)
                else:
                    trial.end_slope.t = t_new
                    k1 = trial.end_slope.get()
            rejected_last = nonfinite_last = False
        else:
            stats.n_rejected += 1
            if control is not None and control.on_reject is not None:
                control.on_reject(t, y, h)
            nonfinite_last = not math.isfinite(norm)
            overflow_pending = overflow_pending or nonfinite_last
            factor = (
                NONFINITE_FACTOR if nonfinite_last else max(MIN_FACTOR, safety * norm ** (-1.0 / k))
            )
            rejected_last = True
        if step_factor is not None:
            factor = step_factor(norm, norm <= 1.0, factor)
        h = h * factor
        if bounded:
            h = control.clamp(h)


def _unchanged(backend, y, y_new) -> bool:
    """Whether a step left every component of the state exactly as it was (its change below the state's
    precision)."""
    if backend.name == "torch":
        torch = sys.modules["torch"]
        with torch.no_grad():
            return bool(torch.equal(y, y_new))
    return bool(np.array_equal(y, y_new))


def _range_edge_message(backend, y, t: float, h: float) -> str:
    """Why a solve whose every changing step overflows cannot go on: the state is at the edge of its dtype."""
    dtype = backend.dtype
    largest = float(
        sys.modules["torch"].finfo(dtype).max if backend.name == "torch" else np.finfo(dtype).max
    )
    size = float(np.max(np.abs(backend.to_numpy(y))))
    return (
        f"the solution leaves the range of {str(dtype).replace('torch.', '')} at t={t:.6g}: |y| reached "
        f"{size:.3g} (the largest finite value is {largest:.3g}); every step that changes the state in its "
        f"precision overflows to Inf, the ones that do not (down to {abs(h):.3g}) leave it unchanged. "
        f"Rescale the problem or solve in float64"
    )


def _clip(constraint, trial: Trial) -> bool:
    """Clip an accepted trial's constrained components at 0 (state and interpolant); True if the state changed."""
    trial.interpolant = constraint.interpolant(trial.interpolant)
    projected = constraint.project(trial.y_new)
    if projected is trial.y_new:
        return False
    trial.y_new = projected
    return True


def _underflow_message(h: float, t: float, t0: float, t_end: float) -> str:
    """What an underflowed step means: time resolution lost at this magnitude of t, or a singularity."""
    magnitude = max(abs(t), abs(t0), abs(t_end))
    resolution = float(np.spacing(magnitude))
    if 16 * resolution > TIME_RESOLUTION_SHARE * abs(t_end - t0):
        return (
            f"step size {h:.3g} underflowed at t={t:.17g}: time resolution lost at this magnitude — float64 "
            f"times near {magnitude:.3g} are {resolution:.3g} apart, too coarse for a span of "
            f"{abs(t_end - t0):.3g} (a step must be at least {16 * resolution:.3g}). Shift the times: solve "
            f"from 0 to t[-1] - t[0] with f(t + t[0], y)"
        )
    return (
        f"step size {h:.3g} underflowed at t={t:.17g} (a singularity, or rtol/atol too tight for the "
        f"state's precision?)"
    )


def _max_steps_failure(field, backend, rec, stepper, t, y, k1, h, max_steps) -> SolverError:
    """MaxStepsExceeded, saying whether the last steps look stability-limited (a stiff problem) or
    chatter across a discontinuity of ``f``."""
    message = f"max_steps={max_steps} reached at t={t:.6g} (last step {h:.3g})"
    with sys.modules["torch"].no_grad() if backend.name == "torch" else _nullcontext():
        jump = _slope_jump(field, backend, t, y, k1, h)
        rho = None if jump is not None else _spectral_radius_estimate(field, backend, t, y, k1)
    if jump is not None:
        message += (
            f"; discontinuity/chattering suspected: f jumps across a surface at distance "
            f"{jump[0]:.3g} from the state, its component along the motion reversing from "
            f"{jump[1]:+.3g} to {jump[2]:+.3g} (relative to |f|) — the solution slides along a "
            f"discontinuity of f (e.g. sign(y)) and every step crosses it, so the steps stay tiny. "
            f"Smooth f (e.g. tanh(y/ε) for sign(y)), stop there with a terminal event (events=), or "
            f"raise max_steps"
        )
    elif (precision := _precision_limit(backend, y, k1, h)) is not None:
        message += (
            f"; {precision} precision limits the steps, not stiffness: the last step changes the state by "
            f"at most {_PRECISION_CHANGE_ULPS} ulps of {precision}, so its error estimates are rounding "
            f"noise. Solve in float64 (y0.double() / y0.astype(np.float64)), or loosen rtol/atol"
        )
    elif (
        getattr(stepper, "explicit", True)
        and rho is not None
        and math.isfinite(rho)
        and abs(h) * rho > STIFF_H_LAMBDA
    ):
        message += (
            f"; the problem looks stiff: the steps are limited by stability, not accuracy "
            f"(|h|·ρ(J) ≈ {abs(h) * rho:.3g} with ρ(J) ≈ {rho:.3g} estimated at t={t:.6g}). Use a stiff "
            f"method (method='rodas4' or 'rosenbrock23') or method='auto'"
        )
    else:
        message += "; loosen rtol/atol or raise max_steps"
    return rec.failure(MaxStepsExceeded, message, t)


_PRECISION_CHANGE_ULPS = 64


def _precision_limit(backend, y, k1, h) -> str | None:
    """The dtype's name (``"float32"``) when a float32 state's last step ``h·f`` changes no component by more
    than a few dozen ulps: the step has shrunk to the rounding level of the state, not to a stability limit."""
    if "float32" not in str(backend.dtype):
        return None
    y_np, k_np = backend.to_numpy(y).reshape(-1), backend.to_numpy(k1).reshape(-1)
    eps = float(np.finfo(np.float32).eps)
    change = np.abs(h * k_np)
    if not np.isfinite(change).all() or not change.any():
        return None
    return (
        "float32" if bool(np.all(change <= _PRECISION_CHANGE_ULPS * eps * np.abs(y_np))) else None
    )


def _slope_jump(field, backend, t, y, k1, h, probes: int = 6, bisections: int = 60):
    """``(distance, before, after)`` when ``f`` jumps along the direction of motion near ``y``, else None.

    ``φ(σ) = f(t, y + σ h k1)·k1 / |k1|²`` is 1 at σ = 0. If it turns negative within a few
    multiples of the last step (the motion reverses: chattering), bisection shrinks the bracket to a
    few ulps: a smooth ``f`` passes φ through 0 there, a discontinuous one leaves ``|φ|`` of order 1
    on both sides. A few dozen counted calls of ``f``, only on a MaxStepsExceeded.
    """
    try:
        k_np = backend.to_numpy(k1)
        kk = float(np.dot(k_np.reshape(-1), k_np.reshape(-1)))
        if not kk > 0 or not math.isfinite(kk):
            return None

        def phi(sigma: float) -> float:
            probe = backend.lincomb(y, (k1,), (sigma * h,))
            return (
                float(np.dot(backend.to_numpy(field(t, probe)).reshape(-1), k_np.reshape(-1))) / kk
            )

        lo, hi, phi_lo, phi_hi = 0.0, None, 1.0, None
        for sigma in 4.0 ** np.arange(probes):
            value = phi(float(sigma))
            if value < 0:
                hi, phi_hi = float(sigma), value
                break
            lo, phi_lo = float(sigma), value
        if hi is None:
            return None
        for _ in range(bisections):
            mid = 0.5 * (lo + hi)
            if not lo < mid < hi:
                break
            value = phi(mid)
            if value < 0:
                hi, phi_hi = mid, value
            else:  # an exact 0 (sign(0) on the surface itself) moves the bracket but is no side's value
                lo, phi_lo = mid, (value if value > 0 else phi_lo)
        if (
            min(phi_lo, -phi_hi) < JUMP_SHARE
        ):  # φ went continuously through 0: a smooth turn, not a jump
            return None
        return hi * abs(h) * math.sqrt(kk), phi_lo, phi_hi
    except SolverError:
        return None


def _spectral_radius_estimate(field, backend, t, y, k1, iterations: int = 8) -> float | None:
    """Power iteration on finite differences of ``f`` (a few counted calls, only on failure)."""
    try:
        y_np = backend.to_numpy(y)
        f0 = backend.to_numpy(k1)
        v = f0.copy() if np.any(f0) else np.ones_like(y_np)
        rho = None
        for _ in range(iterations):
            nv = float(np.linalg.norm(v))
            if not nv > 0 or not math.isfinite(nv):
                return rho
            eps = 1e-7 * max(1.0, float(np.linalg.norm(y_np))) / nv
            probe = backend.lincomb(y, (_like(backend, v, y),), (eps,))
            jv = (backend.to_numpy(field(t, probe)) - f0) / eps
            rho = float(np.linalg.norm(jv)) / nv
            v = jv
        return rho
    except SolverError:
        return None


def _like(backend, x: np.ndarray, y):
    if backend.name == "torch":
        import torch

        return torch.as_tensor(x, dtype=y.dtype, device=y.device)
    return x.astype(y.dtype)


# ---------------------------------------------------------------------------------------------
# the public entry point


def solve(
    f: Callable[[Any, Any], Any],
    y0: Any,
    t: Any,
    method: str | RungeKuttaTableau | TwoStepRK = "dopri5",
    rtol: float = 1e-6,
    atol: float | Any = 1e-8,
    step_size: float | None = None,
    max_steps: int = 100_000,
    *,
    throw: bool = True,
    dense: bool = False,
    events: Any = None,
    adjoint: bool = False,
    adjoint_params: Any = None,
    adjoint_checkpoints: int = 0,
    per_sample: bool = False,
    jac: Callable[[Any, Any], Any] | None = None,
    first_step: float | None = None,
    jac_sparsity: Any = None,
    nonnegative: Any = None,
    control: StepControl | None = None,
    compile: bool | str = False,
    jac_check: bool = True,
) -> Solution:
    """Integrate ``dy/dt = f(t, y)`` from ``y(t[0]) = y0`` and return the states at the times ``t``.

    Parameters
    ----------
    f : callable
        ``f(t, y) -> dy/dt`` with the shape of ``y``, in the same array library. For torch states
        ``t`` is passed as a 0-d tensor of the state's dtype and device, for numpy states as a float.
        Values of another float dtype are cast to ``y0``'s (a float32 state stays float32).
    y0 : numpy.ndarray or torch.Tensor
        Initial state, float32 or float64, any shape with at least one component (leading batch
        dimensions are just more components of the state; the error norm is taken over all of them
        unless ``per_sample``). The solve works on a copy (as scipy's ``solve_ivp`` does): an ``f``
        that writes into its argument cannot change the caller's ``y0`` (a torch copy stays in
        ``y0``'s autograd graph). An empty state (shape ``(0,)``, ``(0, 3)``, ...) is refused with a
        ValueError rather than "solved" (scipy returns a trivial success): it is almost always an
        empty batch or slice upstream. A masked array is refused (its mask would be lost).
    t : 1-D array-like
        Strictly increasing or strictly decreasing real output times, at least two.
    method : str, RungeKuttaTableau or TwoStepRK
        A name from :data:`METHODS` (``euler``, ``midpoint``, ``heun``, ``rk4``, ``ark3``, ``ark4``,
        ``bosh3``, ``rkf45``, ``dopri5``, ``tsit5``, ``dop853``; stiff: ``rosenbrock23``, ``rodas4``,
        ``rodas5``, ``radau5``, ``bdf``, and ``auto``), or a user-defined tableau,
        two-step method or any method object following the stepper protocol of this module.
    rtol, atol : float
        Relative and absolute tolerances of the adaptive methods: a step is accepted when the RMS
        over all components of ``err / (atol + rtol * max(|y|, |y_new|))`` is at most 1.
        ``atol`` may be an array broadcastable to the state. An ``rtol`` below
        ``max(100 eps_float64, eps_state)`` is raised to it (as scipy does), one above 1 asks for no
        correct digit: both with a :class:`ToleranceWarning`.
    step_size : float, optional
        The step of a fixed-step method (required). Its sign must be that of ``t[-1] - t[0]``. Given to
        an adaptive method it is only the first step, with a :class:`StepSizeWarning` (pass
        ``first_step`` instead).
        Fixed-step methods never shorten a step: outputs between grid points, and a final time that
        is not on the grid, are reached by dense output (cubic Hermite) after stepping past them.
        A step larger than the span, or one beyond the method's stability interval on the first
        steps, is warned about (:class:`StepSizeWarning`). A solve whose steps amplify instead of
        following the solution (a decaying mode beyond the stability interval, a finite-time
        blow-up) fails with :class:`StepTooLarge`: never ``"success"``. The test: ``|h|·|Δf|/|Δy|``
        above 1 (2 for a growing mode) while ``|Δy|`` and ``|Δf|`` grow over 3 consecutive steps; the
        last step is checked only when its end slope was computed for an interpolated output (so a
        blow-up within the last two steps of the span can go unnoticed).
    max_steps : int
        Most steps (accepted and rejected) before :class:`MaxStepsExceeded`.
    throw : bool
        If False, a solver failure returns the partial :class:`Solution` with ``result`` set to
        the failure's code instead of raising.
    dense : bool
        Keep each step's continuous extension: ``sol.evaluate(tq)`` then gives the state at any
        time of the span (the method's own interpolant: 4th order for dopri5/tsit5, 7th for dop853).
    events : callable or sequence of callables, optional
        Event functions ``g(t, y)`` returning a scalar, or one value per sample (shape ``(B,)`` for a
        batch on the leading axis). Each is sampled at 17 equally spaced points of every step on the
        interpolant, and every sign change between samples is located to machine precision
        (Brent's method): several zeros per step are found unless two fall within 1/16 of a step.
        A zero exactly at ``t[0]`` counts when ``g`` leaves 0 in an allowed direction during the
        first step (scipy's convention: a terminal one stops the solve at ``t[0]``). An event
        function returning NaN fails the solve (:class:`NonFiniteState` naming it); one that raises
        gives a :class:`VectorFieldError` (its exception as ``__cause__``). Optional attributes as
        in scipy: ``g.terminal`` (bool, or the number of zeros after which to stop; for per-sample
        ``g``: the solve stops when every sample has had that many) and ``g.direction`` (+1: only
        upward crossings, -1: only downward, 0: both).
        A terminal event ends the solve with ``result == "event"``; ``sol.t_events`` /
        ``sol.y_events`` / ``sol.event_indices`` hold the zeros.
    jac : callable, optional
        ``jac(t, y) -> ∂f/∂y`` for the stiff methods (``rosenbrock23``, ``rodas4``, ``rodas5``, ``radau5``, ``bdf``,
        ``auto``):
        shape ``(y0.size, y0.size)``, or ``(B, n, n)`` per sample with ``per_sample=True`` (whose
        samples must then be independent); or the pair ``(∂f/∂y, ∂f/∂t)`` (``∂f/∂t`` may be ``0``
        for an autonomous ``f``), which saves the one call of ``f`` per Jacobian that estimates
        ``∂f/∂t`` otherwise. Default: ``torch.func.jacrev`` for torch states, forward differences
        for numpy states (see :mod:`dynkit.solvers.jacobian`). A numpy ``jac`` may return a
        ``scipy.sparse`` matrix: the stiff methods then factorise sparsely (SuperLU). Refused
        (ValueError) with an explicit method, which would ignore it; an exception raised in ``jac``
        becomes a :class:`VectorFieldError` like one in ``f``. Checked before the first step
        (``jac_check``).
    jac_check : bool
        With a ``jac``: compare ``jac(t0, y0)`` with a central difference of ``f`` along one probe
        direction scaled to each component (two more calls of ``f``, one of ``jac``, counted; the
        rule and its tolerance in :func:`dynkit.solvers.jacobian.check_jacobian`) and raise a
        ValueError when they disagree beyond rounding: a wrong ``jac`` (sign, scale, transposed)
        makes the Rosenbrock methods end tens to thousands of tolerances off as a "success".
        ``False`` skips the check (for a deliberately approximate Jacobian, which radau5 and bdf
        tolerate). Default True.
    jac_sparsity : array or scipy.sparse matrix, optional
        The nonzero structure of ``∂f/∂y`` (``(y0.size, y0.size)``, numpy states): finite differences
        then perturb structurally orthogonal columns together and the LU is sparse.
    nonnegative : bool, boolean mask or sequence of int, optional
        Components kept at or above 0 (``True``: all; a mask of ``y0``'s shape; indices into
        ``y0.ravel()``): a step that takes one below 0 by more than the tolerance is rejected, a
        smaller excursion is set to 0 (:mod:`dynkit.solvers.constraints`, after Shampine et al. 2005).
        For concentrations and populations whose ``atol`` exceeds their size somewhere. Adaptive
        methods, numpy states, not with ``adjoint=True``; ``y0`` must satisfy it.
    control : StepControl, optional
        A user's error norm (a seminorm, say), bounds on the step size and per-step callbacks
        (:class:`~dynkit.solvers.StepControl`); default: none of them.
    compile : bool or "auto"
        Run the whole step loop compiled with numba (:mod:`dynkit.solvers.compiled`; ``pip install dynkit[jit]``):
        ``f`` written with numba, or plain numpy code that numba compiles, a 1-D float64 numpy ``y0``, a method with
        a compiled kernel (the adaptive explicit pairs ``bosh3``, ``rkf45``, ``dopri5``, ``tsit5``, ``dop853``, and
        the stiff ones that have one). Same steps, ``nfe``, :class:`SolverStats`, results and failures as the Python
        path (``throw=False`` included); the first solve of an ``f`` pays numba's compile time (seconds), later ones
        reuse it. ``True`` refuses what it cannot compile (:class:`CompilationError`: numba missing, ``f`` not
        compilable, numba's message condensed; ValueError: ``dense``, ``events``, ``per_sample``, ``control``,
        ``nonnegative``, ``jac_sparsity``, ``adjoint``, a torch or non-1-D state, a method without a kernel, named);
        ``"auto"`` then runs the Python path with a :class:`CompileWarning` saying why. Default False.
    adjoint : bool
        Torch only: gradients by the continuous adjoint solved backward with the same method
        (memory flat in the number of steps); see :mod:`dynkit.solvers.adjoint`. The solution's
        ``backward_stats`` count the backward pass.
    adjoint_params : sequence of tensors, optional
        With ``adjoint=True``: the tensors ``f`` depends on that receive gradients (default: the
        parameters of ``f`` when it is an ``nn.Module``; required otherwise, ``()`` for none).
    adjoint_checkpoints : int
        With ``adjoint=True``: ``N``, the forward keeps its states at ``N + 1`` evenly spaced
        times over ``t`` and the backward restarts its ``y`` from each (gradients closer to the
        exact ones; memory ``O(N · dim)``; default 0: from the output times only); see
        :func:`dynkit.solvers.adjoint.check_adjoint_checkpoints`.
    per_sample : bool
        Error control per sample: the leading axis of ``y0`` indexes independent samples, the RMS is
        taken within each sample and a step is accepted only if every sample's error is within
        tolerance (the hardest sample sets the shared step). Without it one RMS over the whole batch
        lets an easy sample's error exceed the tolerance when another sample is hard. Adaptive
        methods only (a fixed-step method has no error control: ValueError).
    first_step : float, optional
        The first step of an adaptive method (chosen automatically when omitted, [HNW] II.4);
        the sign of ``t[-1] - t[0]`` (with ``adjoint``, the backward solves start with its reverse). Not
        for fixed-step methods (ValueError).

    Returns
    -------
    Solution
        ``ts`` and ``ys`` in the array library, dtype and device of ``y0``; ``stats`` with
        ``nfe`` (every call of ``f``), ``n_steps``, ``n_accepted``, ``n_rejected``.

    Raises
    ------
    ValueError, TypeError
        Bad arguments (the message names the argument, the expected and the received value).
    VectorFieldError
        ``f`` raised (the user's exception is ``__cause__``), or returned the wrong library, shape
        or dtype (:class:`VectorFieldShapeError` is also a ValueError, :class:`VectorFieldTypeError`
        also a TypeError); each carries ``t`` and the partial solution.
    StepSizeUnderflow, MaxStepsExceeded, NonFiniteState, StepTooLarge
        Subclasses of :class:`SolverError`; ``err.solution`` holds the outputs and stats reached.
        The messages say what happened: a MaxStepsExceeded diagnoses stiffness or chattering on a
        discontinuity of ``f``, a StepSizeUnderflow a singularity or times too large for float64 to
        resolve the span.

    Notes
    -----
    Torch solves are differentiable by autograd (discretise-then-optimise): the step sizes are
    chosen from detached error norms, the states are ordinary differentiable tensor operations.

    References
    ----------
    E. Hairer, S. P. Nørsett, G. Wanner, *Solving Ordinary Differential Equations I*, Springer
    1993, Sects. II.4 (step-size control, initial step), II.6 (dense output, event location) and
    II.10 (DOP853).
    """
    from . import METHODS  # late: the registry lives in the package's __init__
    from .compiled import refuse_or_warn, solve_or_fallback, validate_compile

    compile = validate_compile(compile)
    checkpoints_given = not (type(adjoint_checkpoints) is int and adjoint_checkpoints == 0)
    if adjoint or adjoint_params is not None or checkpoints_given:
        if compile is not False:
            refuse_or_warn(
                compile,
                "the compiled path does not support adjoint (solve with compile=False for it)",
            )
        validated_adjoint_call = _ADJOINT_ENTRY[
            0
        ]  # registered by dynkit.solvers.adjoint (above this module)

        unsupported = [
            name
            for name, value in (
                ("dense", dense),
                ("events", events is not None),
                ("per_sample", per_sample),
                ("jac", jac is not None),
                ("jac_sparsity", jac_sparsity is not None),
                ("nonnegative", nonnegative not in (None, False)),
            )
            if value is not False
        ]
        if unsupported:
            nones = ("events", "jac", "jac_sparsity", "nonnegative")
            raise ValueError(
                f"adjoint=True does not combine with {', '.join(unsupported)} (expected "
                f"{', '.join(n + '=' + ('None' if n in nones else 'False') for n in unsupported)}); "
                f"solve with autograd (adjoint=False) for those"
            )

        first = (
            {} if first_step is None else {"first_step": first_step}
        )  # the backward solves' is reversed
        y0 = _private_copy(y0) if is_torch(y0) else y0  # as below: f cannot change the caller's y0
        return validated_adjoint_call(
            f,
            y0,
            t,
            adjoint,
            adjoint_params,
            adjoint_checkpoints,
            method=method,
            rtol=rtol,
            atol=atol,
            step_size=step_size,
            max_steps=max_steps,
            throw=throw,
            **first,
        )

    method_obj = _validate_method(method, METHODS)
    y0 = _validate_state(y0)
    t_out = _validate_times(t)
    rtol, atol = _validate_tolerances(rtol, atol, y0)
    if (
        not isinstance(max_steps, (int, np.integer))
        or isinstance(max_steps, (bool, np.bool_))
        or max_steps < 1
    ):
        raise ValueError(
            f"max_steps must be a positive integer, got {type(max_steps).__name__} {max_steps!r:.60}"
        )
    flags = (
        ("throw", throw),
        ("dense", dense),
        ("per_sample", per_sample),
        ("jac_check", jac_check),
    )
    for name, value in flags:
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"{name} must be True or False, got {value!r}")
    if per_sample and (y0.ndim < 1 or y0.shape[0] < 1):
        raise ValueError(
            f"per_sample=True needs a leading sample axis in y0, got shape {tuple(y0.shape)}"
        )
    if not callable(f):
        raise TypeError(f"f must be a callable f(t, y), got {type(f).__name__}")
    if jac is not None and not callable(jac):
        raise TypeError(
            f"jac must be None or a callable jac(t, y) -> ∂f/∂y, got {type(jac).__name__}"
        )
    if control is not None and not isinstance(control, StepControl):
        raise TypeError(
            f"control must be None or a dynkit.solvers.StepControl, got {type(control).__name__}"
        )
    if control is not None and control.norm is not None and per_sample:
        raise ValueError(
            "control.norm and per_sample=True do not combine (per_sample measures each sample's "
            "error with the RMS norm); expected control.norm=None or per_sample=False"
        )
    t0, t_end = float(t_out[0]), float(t_out[-1])
    direction = 1.0 if t_end > t0 else -1.0
    adaptive = bool(getattr(method_obj, "adaptive", False))
    step_size = _validate_method_options(
        method_obj, adaptive, step_size, first_step, per_sample, jac, jac_sparsity
    )
    step_size = _validate_step_size(
        step_size,
        direction,
        adaptive,
        method_obj.name,
        t0,
        t_end,
        "first_step" if first_step is not None else "step_size",
    )
    if adaptive and step_size is not None and first_step is None:
        warnings.warn(
            f"{method_obj.name}: step_size={step_size:.6g} with the adaptive method {method_obj.name!r} "
            f"is only its first step: rtol/atol choose the others. Pass first_step= to say so, or a "
            f"fixed-step method ('rk4', 'euler', ...) for constant steps",
            StepSizeWarning,
            stacklevel=2,
        )
    constraint = NonNegative.from_argument(nonnegative, y0)
    if constraint is not None:
        if not adaptive:
            raise ValueError(
                f"nonnegative= needs an adaptive method (it rejects steps that go negative); "
                f"{method_obj.name!r} has fixed steps (expected nonnegative=None)"
            )
        constraint.check_initial(y0)
        f = constraint.wrap(f, at_zero_only=bool(getattr(method_obj, "smooth_field", False)))
    if (
        compile is not False
    ):  # the whole loop in numba (dynkit.solvers.compiled), or the reason it cannot be
        options = {
            "dense": dense,
            "events": events is not None,
            "per_sample": per_sample,
            "control": control is not None,
            "nonnegative": constraint is not None,
            "jac_sparsity": jac_sparsity is not None,
        }
        solution = solve_or_fallback(
            compile,
            f,
            y0,
            t_out,
            method,
            rtol,
            atol,
            step_size if adaptive else None,
            max_steps,
            throw,
            options,
            jac=jac,
            jac_check=jac_check,
        )
        if solution is not None:
            return solution
    y0 = _private_copy(y0)  # f may write into its argument: the caller's y0 stays as it was
    t_grad = _times_requiring_grad(t, y0)

    backend = backend_for(y0)
    stats = SolverStats()
    rec = _Recorder(t_out, y0, backend, stats, method_obj.name)
    field = _CountedField(f, backend, y0, stats, rec)
    field.jac = (
        _wrap_user_jacobian(jac, backend, rec) if callable(jac) else jac
    )  # read by the stiff steppers
    field.batched = bool(per_sample)
    field.jac_sparsity, field.rtol, field.atol = _sparsity_pattern(jac_sparsity, y0), rtol, atol
    if dense:
        rec.dense = DenseOutput(backend, t0, y0)
    if events is not None:
        rec.events = EventTracker(events, backend, t0, y0, rec)
    if t_grad is not None:
        y0 = _with_start_time_gradient(field, t_grad, y0)
    stepper = make_stepper(method_obj, field, backend, step_size)
    rec.switch_log = getattr(stepper, "switch_log", None)
    rec.control = control
    try:
        if jac is not None and jac_check:
            verify_user_jacobian(field, backend, t0, y0.detach() if backend.name == "torch" else y0)
        if adaptive:
            _march_adaptive(
                field,
                backend,
                rec,
                stats,
                stepper,
                t0,
                t_end,
                y0,
                step_size,
                rtol,
                atol,
                max_steps,
                bool(per_sample),
                constraint,
            )
        else:
            _march_constant(
                field,
                backend,
                rec,
                stats,
                stepper,
                t0,
                t_end,
                y0,
                step_size,
                max_steps,
                _stability_function(method_obj),
            )
    except SolverError as err:
        if throw or isinstance(err, (ValueError, TypeError)):
            raise
        return err.solution
    if rec.forced_steps:
        warnings.warn(
            f"{method_obj.name}: {rec.forced_steps} step(s) accepted at control.min_step="
            f"{control.min_step:g} with an error above the tolerance (rtol={rtol:g}): the solution is "
            f"not controlled to it there",
            ToleranceWarning,
            stacklevel=2,
        )
    if rec.events is not None and rec.events.stopped is not None:
        solution = rec.solution("event", rec.events.stopped)
    else:
        solution = rec.solution()
    if t_grad is not None:
        solution.ys = _with_output_time_gradients(field, t_grad, solution.ys)
    return solution


def _times_requiring_grad(t, y0):
    """``t`` when autograd should differentiate the outputs in it (a torch ``t`` that requires grad, a torch
    state, grad mode on), else None."""
    if not (is_torch(t) and is_torch(y0) and t.requires_grad):
        return None
    return t if sys.modules["torch"].is_grad_enabled() else None


def _with_start_time_gradient(field, t, y0):
    """``y0`` unchanged in value, with ``∂/∂t_0 = −f(t_0, y_0)``: the flow carries it to every output, where
    ``∂y(t_i)/∂t_0 = −Φ(t_i, t_0) f(t_0, y_0)`` (one counted call of ``f``).

    ``(t_0 − t_0.detach())`` is exactly 0, so the values are untouched; only the graph gains the term.
    """
    torch = sys.modules["torch"]
    with torch.no_grad():
        f0 = field(float(t[0].detach()), y0.detach())
    if not bool(torch.isfinite(f0).all()):
        return y0  # 0 * Inf would poison the state; the solve reports the non-finite slope itself
    return y0 - (t[0] - t[0].detach()).to(y0.dtype) * f0


def _with_output_time_gradients(field, t, ys):
    """Outputs unchanged in value, with ``∂y(t_i)/∂t_i = f(t_i, y_i)`` (one counted call of ``f`` per output).

    With :func:`_with_start_time_gradient` this gives autograd the exact first derivatives in every ``t_i``
    (the first output is ``y0`` itself: ``∂y(t_0)/∂t_0 = 0``); the slopes are detached, so second derivatives in
    ``t`` are not included.
    """
    torch = sys.modules["torch"]
    n = ys.shape[0]
    with torch.no_grad():
        slopes = torch.stack([field(float(t[i].detach()), ys[i].detach()) for i in range(n)])
    if not bool(torch.isfinite(slopes).all()):
        return ys
    shift = (t[:n] - t[:n].detach()).to(ys.dtype).reshape((n,) + (1,) * (ys.ndim - 1))
    # the recorder's first row is the caller's y0 itself, not the start-time-shifted state the steps start from:
    # y(t_0) = y0 does not move with t_0 (adding f_0 there would give it ∂/∂t_0 = f_0)
    shift = torch.cat([torch.zeros_like(shift[:1]), shift[1:]])
    return ys + shift * slopes


def _validate_method(method, methods):
    if isinstance(method, (RungeKuttaTableau, TwoStepRK)) or callable(
        getattr(method, "make_stepper", None)
    ):
        return method
    if isinstance(method, str) and method in methods:
        return methods[method].implementation
    known = ", ".join(sorted(methods))
    raise ValueError(
        f"method must be one of {known} (or a RungeKuttaTableau / TwoStepRK), got {method!r}"
    )


def _validate_method_options(
    method_obj, adaptive: bool, step_size, first_step, per_sample, jac, jac_sparsity=None
):
    """Refuse (or warn about) arguments that the method would ignore or reinterpret; the step to use."""
    name = getattr(method_obj, "name", "")
    for arg, value in (("jac", jac), ("jac_sparsity", jac_sparsity)):
        if value is not None and isinstance(method_obj, (RungeKuttaTableau, TwoStepRK)):
            raise ValueError(
                f"{arg} is only used by the stiff (Rosenbrock/implicit) methods and 'auto'; the "
                f"explicit method {name!r} never evaluates a Jacobian (expected {arg}=None, got "
                f"{value!r:.60})"
            )
    if jac is not None and jac_sparsity is not None:
        raise ValueError(
            f"give jac or jac_sparsity, not both: jac_sparsity only groups the finite differences "
            f"that replace a missing jac, so with jac= it would be ignored (expected jac_sparsity=None, "
            f"or jac=None to difference f; a sparse pattern of your own jac comes from returning a "
            f"scipy.sparse matrix), got jac={getattr(jac, '__name__', type(jac).__name__)} and a "
            f"jac_sparsity"
        )
    if per_sample and not adaptive:
        raise ValueError(
            f"per_sample=True controls the error per sample of an adaptive method; the fixed-step "
            f"method {name!r} has no error control (expected per_sample=False, got True)"
        )
    if first_step is not None:
        if not adaptive:
            raise ValueError(
                f"first_step is for adaptive methods; the fixed-step method {name!r} takes step_size "
                f"(got first_step={first_step!r:.60})"
            )
        if step_size is not None:
            raise ValueError(
                f"give first_step or step_size, not both (got step_size={step_size!r:.30} and "
                f"first_step={first_step!r:.30})"
            )
        return first_step
    return step_size


def _sparsity_pattern(jac_sparsity, y0):
    """``jac_sparsity`` checked (shape, 0/1 values, numpy state) before any work, as a
    :class:`~dynkit.solvers.jacobian.SparsityPattern`."""
    if jac_sparsity is None:
        return None
    if is_torch(y0):
        raise ValueError(
            "jac_sparsity is for numpy states (expected jac_sparsity=None for a torch y0: its "
            "Jacobian comes dense from autograd)"
        )
    from .jacobian import SparsityPattern

    return SparsityPattern(jac_sparsity, int(np.prod(y0.shape)))


def _private_copy(y0):
    """A copy of ``y0`` that only the solve sees (a torch copy stays in y0's autograd graph)."""
    return y0.clone() if is_torch(y0) else np.array(y0, copy=True)


def _wrap_user_jacobian(jac, backend, rec):
    """``jac`` whose exceptions become a :class:`VectorFieldError` with ``t`` and the partial solution."""

    def wrapped(t, y):
        try:
            return jac(t, y)
        except Exception as exc:  # the user's error, with where it happened and what was reached
            t_float = float(backend.to_numpy(t)) if backend.name == "torch" else float(t)
            raise rec.failure(
                VectorFieldError,
                f"jac raised {type(exc).__name__} at t={t_float:.6g}: {exc}",
                t_float,
            ) from exc

    return wrapped


def _validate_state(y0):
    if isinstance(y0, np.ma.MaskedArray):
        raise TypeError(
            "y0 must be a plain numpy array, got a masked array (solve would drop its mask): pass "
            "y0.filled(value) to choose the masked entries, or solve the unmasked components"
        )
    if isinstance(y0, np.matrix):
        raise TypeError(
            "y0 must be a plain numpy array or torch tensor, got a numpy.matrix (its * is the matrix "
            "product, so f would compute something else on the states): pass np.asarray(y0)"
        )
    if is_torch(y0):
        import torch

        if y0.dtype not in (torch.float32, torch.float64):
            raise ValueError(f"y0 must be a float32 or float64 tensor, got dtype {y0.dtype}")
        with torch.no_grad():
            finite = bool(torch.isfinite(y0).all())
    elif isinstance(y0, np.ndarray):
        if y0.dtype not in (np.float32, np.float64):
            raise ValueError(
                f"y0 must be a float32 or float64 array, got dtype {y0.dtype} "
                f"(use np.asarray(y0, dtype=float))"
            )
        finite = bool(np.isfinite(y0).all())
    else:
        raise ValueError(
            f"y0 must be a numpy array or torch tensor of floats, got {type(y0).__name__} "
            f"(use np.asarray(y0, dtype=float))"
        )
    if not finite:
        raise ValueError("y0 must be finite; it contains NaN or Inf")
    if (
        math.prod(y0.shape) == 0
    ):  # nothing to integrate: almost always an empty batch or slice upstream
        raise ValueError(
            f"y0 must have at least one component, got shape {tuple(y0.shape)} (an empty state: "
            f"nothing to integrate)"
        )
    return y0


def _real_array(value, name: str, what: str) -> np.ndarray:
    """``value`` as a float64 array, refusing what numpy would convert silently (strings, bools,
    complex numbers, objects)."""
    if is_torch(value):
        value = value.detach().cpu().numpy()
    if isinstance(value, (str, bytes, dict, set)) or value is None:
        raise TypeError(f"{name} must be {what}, got {type(value).__name__} {value!r:.60}")
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError):  # ragged nested sequences
        raise TypeError(
            f"{name} must be {what}, got a ragged or mixed {type(value).__name__}"
        ) from None
    if raw.dtype.kind not in "fiu":
        kind = {"c": "complex", "b": "boolean", "U": "string", "S": "bytes"}.get(
            raw.dtype.kind, "non-numeric"
        )
        raise TypeError(f"{name} must be {what}, got {kind} values (dtype {raw.dtype})")
    return raw.astype(np.float64)


def _validate_times(t) -> np.ndarray:
    t_out = _real_array(t, "t", "a 1-D array of real times")
    if t_out.ndim != 1 or len(t_out) < 2:
        raise ValueError(f"t must be a 1-D array of at least 2 times, got shape {t_out.shape}")
    if not np.isfinite(t_out).all():
        raise ValueError(
            f"t must be finite, got {t_out[~np.isfinite(t_out)][0]!r} at index "
            f"{int(np.argmin(np.isfinite(t_out)))}"
        )
    dt = np.diff(t_out)
    if not ((dt > 0).all() or (dt < 0).all()):
        i = int(np.argmax((dt <= 0) if dt[0] > 0 else (dt >= 0))) + 1
        raise ValueError(
            "t must be strictly increasing or strictly decreasing, got non-monotone or repeated "
            f"times at index {i} (t[{i - 1}] = {t_out[i - 1]!r}, t[{i}] = {t_out[i]!r})"
        )
    if not np.isfinite(dt).all():
        raise ValueError(
            f"t must span a finite interval, got t[0] = {t_out[0]!r} and t[-1] = {t_out[-1]!r}"
        )
    return t_out


def _validate_tolerances(rtol, atol, y0):
    if isinstance(rtol, (bool, np.bool_)) or not isinstance(
        rtol, (int, float, np.integer, np.floating)
    ):
        raise TypeError(f"rtol must be a positive float, got {type(rtol).__name__} {rtol!r:.60}")
    rtol = float(rtol)
    if not rtol > 0 or not math.isfinite(rtol):
        raise ValueError(f"rtol must be a positive finite float, got {rtol!r}")
    rtol = _sane_rtol(rtol, y0)
    if isinstance(atol, (bool, np.bool_)):
        raise TypeError(f"atol must be a positive float or array, got {atol!r}")
    atol_np = _real_array(atol, "atol", "a positive float or an array of them")
    if atol_np.ndim == 0 and not is_torch(atol):
        atol = float(atol_np)
        if not atol > 0 or not math.isfinite(atol):
            raise ValueError(f"atol must be a positive finite float (or array), got {atol!r}")
        _warn_large_atol(atol, y0)
        return rtol, atol
    if not (atol_np > 0).all() or not np.isfinite(atol_np).all():
        raise ValueError("atol must be positive and finite in every component")
    _warn_large_atol(float(atol_np.max()), y0)
    try:
        np.broadcast_shapes(atol_np.shape, tuple(y0.shape))
    except ValueError:
        raise ValueError(
            f"atol must broadcast to y0's shape {tuple(y0.shape)}, got shape {atol_np.shape}"
        ) from None
    if is_torch(y0):
        import torch

        return rtol, torch.as_tensor(atol_np, dtype=y0.dtype, device=y0.device)
    return rtol, atol_np.astype(y0.dtype)


def _warn_large_atol(atol: float, y0) -> None:
    """A :class:`ToleranceWarning` when ``atol`` (its largest component) exceeds ``max(1, max|y0|)``: errors
    as large as the state itself then pass the error test (like ``rtol > 1``), so the result may have no
    correct digit (``atol=1e308`` turns the error control off)."""
    if is_torch(y0):
        with sys.modules["torch"].no_grad():
            size = float(y0.detach().abs().max())
    else:
        size = float(np.abs(y0).max())
    scale = max(1.0, size)
    if atol > scale:
        warnings.warn(
            f"atol={atol:.3g} exceeds the size of the state (max(1, max|y0|) = {scale:.3g}): errors as "
            f"large as the solution pass the error test and the result may have no correct digit "
            f"(expected atol below the size of the components, typically 1e-6 to 1e-12 of it)",
            ToleranceWarning,
            stacklevel=5,
        )


_RAISED_RTOLS: set = set()  # (rtol, dtype) pairs already warned about in this process


def _sane_rtol(rtol: float, y0) -> float:
    """``rtol`` raised to ``max(100 eps_float64, eps_state)`` with a warning (scipy's ``solve_ivp`` does
    the first: a relative error below the rounding of the state cannot be controlled, the steps would
    underflow); a warning for ``rtol > 1``, which asks for no correct digit.

    The raise is announced once per process for each ``(rtol, dtype)``: a training loop (or torchdiffeq's
    default ``rtol=1e-7`` with a float32 state) calls the solver thousands of times with the same setting,
    and one line says all there is to say."""
    eps = float(
        sys.modules["torch"].finfo(y0.dtype).eps if is_torch(y0) else np.finfo(y0.dtype).eps
    )
    smallest = max(100 * float(np.finfo(np.float64).eps), eps)
    if rtol < smallest:
        key = (rtol, str(y0.dtype))
        if key not in _RAISED_RTOLS:
            _RAISED_RTOLS.add(key)
            warnings.warn(
                f"rtol={rtol:.3g} is below the precision of the state ({y0.dtype}): raised to "
                f"rtol={smallest:.3g} (expected rtol >= {smallest:.3g}; accuracy beyond it comes from "
                f"atol). Said once per process for this rtol and dtype.",
                ToleranceWarning,
                stacklevel=4,
            )
        return smallest
    if rtol > 1:
        warnings.warn(
            f"rtol={rtol:.3g} > 1 accepts errors larger than the state itself: the result has no "
            f"correct digit (expected 0 < rtol <= 1, typically 1e-3 to 1e-10)",
            ToleranceWarning,
            stacklevel=4,
        )
    return rtol


def _validate_step_size(step_size, direction, adaptive, name, t0, t_end, arg: str = "step_size"):
    if step_size is None:
        if adaptive:
            return None
        raise ValueError(
            f"step_size is required for the fixed-step method {name!r} "
            f"(a float with the sign of t[-1] - t[0])"
        )
    if isinstance(step_size, (bool, np.bool_)) or not isinstance(
        step_size, (int, float, np.integer, np.floating)
    ):
        raise TypeError(
            f"{arg} must be a real float, got {type(step_size).__name__} {step_size!r:.60}"
        )
    h = float(step_size)
    if not math.isfinite(h) or h == 0.0 or math.copysign(1.0, h) != direction:
        sign = "positive" if direction > 0 else "negative"
        raise ValueError(
            f"{arg} must be {sign} and finite for t going from t[0] towards t[-1] "
            f"({'increasing' if direction > 0 else 'decreasing'} times), got {step_size!r}"
        )
    if abs(h) < 16 * np.spacing(max(abs(t0), abs(t_end))):
        raise ValueError(
            f"{arg}={h:.3g} is below the resolution of t near {max(abs(t0), abs(t_end)):.3g} "
            f"(expected at least {16 * np.spacing(max(abs(t0), abs(t_end))):.3g} in magnitude)"
        )
    if not adaptive and not math.isfinite((t_end - t0) / h):
        raise ValueError(
            f"step_size={h:.3g} is too small for the span |t[-1] - t[0]| = {abs(t_end - t0):.3g}: "
            f"the number of steps overflows (expected a step of at least "
            f"{abs(t_end - t0) / 1e300:.3g})"
        )
    return h
