"""The step loops behind :func:`solve`: one for adaptive methods, one for fixed steps.

How it fits together
--------------------
:func:`solve` validates the arguments (:mod:`~dynkit.solvers._validation`), wraps ``f`` in a
counting, checking :class:`~dynkit.solvers._recorder.CountedField`, builds the method's
:class:`~dynkit.solvers.stepper.Stepper` and hands it to one of two loops: :func:`_march_adaptive`
(embedded pairs and any other method with an error estimate) or :func:`_march_constant`
(fixed-step methods). The loops own everything that is not the method: step-size control (a
:class:`~dynkit.solvers.stepsize.PIController`, [HNW] IV.2 / II.4), rejection, failures
(:mod:`~dynkit.solvers._diagnosis` says why), the output times
(:class:`~dynkit.solvers._recorder.Recorder`, several per step filled at once), dense output
(:class:`~dynkit.solvers.dense.DenseOutput`) and events
(:class:`~dynkit.solvers.events.EventTracker`). What a new method must provide is the stepper
protocol of :mod:`dynkit.solvers.stepper`.

``solve(adjoint=True)`` and ``solve(compile=...)`` hand over to :mod:`dynkit.solvers.adjoint` and
:mod:`dynkit.solvers.compiled`, which sit above this module and register themselves in
:mod:`dynkit.solvers._seam`.

Methods are data (:mod:`~dynkit.solvers.tableaus`, :mod:`~dynkit.solvers.ark`); nothing here is
specific to one of them.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Callable

import numpy as np

from . import _diagnosis, _seam
from ._recorder import SAME_TIME_RTOL, CountedField, Recorder
from ._seam import register_adjoint
from ._time_gradients import (
    times_requiring_grad,
    with_output_time_gradients,
    with_start_time_gradient,
)
from ._validation import (
    refuse_adjoint_options,
    sparsity_pattern,
    user_stacklevel,
    validate_method,
    validate_method_options,
    validate_options,
    validate_state,
    validate_step_size,
    validate_times,
    validate_tolerances,
)
from .ark import TwoStepRK
from .backend import backend_for, is_torch
from .constraints import NonNegative
from .control import StepControl
from .dense import DenseOutput
from .errors import (
    MaxStepsExceeded,
    NonFiniteState,
    SolverError,
    StepSizeUnderflow,
    StepSizeWarning,
    ToleranceWarning,
    VectorFieldError,
)
from .events import EventTracker
from .explicit import make_stepper
from .jacobian import verify_user_jacobian
from .methods import METHODS
from .results import EVENT, Solution, SolverStats
from .stepper import Stepper, Trial, as_stepper
from .stepsize import PIController, initial_step
from .tableaus import RungeKuttaTableau

__all__ = ["Solution", "SolverStats", "register_adjoint", "solve", "validated_arguments"]


def _grid(t0: float, t_end: float, h: float) -> int:
    """Number of constant steps of size ``h`` needed to reach or pass ``t_end``."""
    n = (t_end - t0) / h
    return max(1, math.ceil(n - SAME_TIME_RTOL * max(1.0, n)))


def _grid_time(t0: float, t_end: float, h: float, n: int, n_total: int) -> float:
    # t0 + n h, not repeated addition (no drift); the last grid point snaps to t_end when it lands
    # on it
    t = t0 + n * h
    return t_end if n == n_total and abs(t - t_end) <= SAME_TIME_RTOL * abs(h) else t


def _accept(rec: Recorder, stepper: Stepper, trial: Trial, t: float, t_new: float) -> float | None:
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
    stepper.accepted(trial)
    return t_stop


# ---------------------------------------------------------------------------------------------
# the two loops


def _march_constant(
    field, backend, rec, stats, stepper, t0, t_end, y0, h, max_steps, stability=None
):
    """Constant steps ``t0 + n h`` until ``t_end`` is reached or passed (never shortened);
    ``stability`` is the method's stability function ``R(z)`` (None: not checked against the
    steps' eigenvalue estimates)."""
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
    monitor = _diagnosis.AmplificationMonitor(backend, rec, h, stability, n_total)
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
            checked = (
                3 if _diagnosis.warn_if_unstable(rec, h, monitor.h_lambda, t_new) else checked + 1
            )
            monitor.warned = checked == 3
        t, y, k1 = t_new, trial.y_new, trial.end_slope.get()


def _march_adaptive(
    field,
    backend,
    rec,
    stats,
    stepper: Stepper,
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
        h = initial_step(field, backend, stepper.k, t0, t_end, y0, k1, rtol, atol, direction)
    control = rec.control
    bounded = control is not None and control.bounds_steps
    if bounded:
        h = control.clamp(h)
    controller = PIController()
    nonfinite_last, k = False, None
    # accepted steps that changed nothing since an overflowed trial
    overflow_pending, overflow_stalls = False, 0
    while direction * (t_end - t) > 0:
        if stats.n_steps >= max_steps:
            # a stepper may hand over its end slope unevaluated (bdf's _LazySlope): the diagnosis
            # needs the array
            slope = k1.get() if hasattr(k1, "get") and not hasattr(k1, "shape") else k1
            raise _diagnosis.max_steps_failure(
                field, backend, rec, stepper, t, y, slope, h, max_steps
            )
        if k != stepper.k:
            k = stepper.k
            controller.set_order(k, stepper.safety, stepper.pi_beta)
        # the last step: one that reaches t_end, or would leave less than the smallest step (16
        # ulps) before it (that remainder could not be stepped: a StepSizeUnderflow one ulp-sized
        # step short of t_end)
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
            message = _diagnosis.underflow_message(h, t, t0, t_end)
            raise rec.failure(StepSizeUnderflow, message, t)
        t_new = t_end if last else t + h
        if control is not None and control.on_step is not None:
            control.on_step(t, y, h)
        trial = stepper.attempt(t, y, h, k1)
        y_new = trial.y_new
        scale = backend.error_scale(y, y_new, rtol, atol)
        if control is not None and control.norm is not None:
            norms = stepper.error_norm(trial, lambda e: np.float64(control.error(e, scale)))
        else:
            norms = stepper.error_norm(trial, lambda e: backend.norms(e, scale, per_sample))
        norm = float(norms.max()) if norms.ndim else float(norms)
        if norm != norm:  # NaN: treat like an overflow
            norm = math.inf
        if constraint is not None:
            # negative parts of constrained components count as error (constraints.py)
            norm = max(
                norm, constraint.violation(y_new, lambda e: backend.norms(e, scale, per_sample))
            )
        stats.n_steps += 1
        # torchdiffeq's min_step rule: a finite error at the smallest allowed step is accepted (and
        # counted)
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
                stepper.projected(y_new)
            if overflow_pending:  # cleared by a step that changes the state
                stalled = _diagnosis.unchanged(backend, y, y_new)
                overflow_pending, overflow_stalls = stalled, overflow_stalls + 1 if stalled else 0
                if overflow_stalls >= _diagnosis.OVERFLOW_STALLS:
                    message = _diagnosis.range_edge_message(backend, y, t, h)
                    raise rec.failure(NonFiniteState, message, t)
            factor = controller.accept(norm)
            t, y = t_new, y_new
            if direction * (t_end - t) > 0:
                if clipped:  # the end slope belongs to the unclipped state
                    k1 = field(t_new, y_new)
                else:
                    trial.end_slope.t = t_new
                    k1 = trial.end_slope.get()
            nonfinite_last = False
        else:
            stats.n_rejected += 1
            if control is not None and control.on_reject is not None:
                control.on_reject(t, y, h)
            nonfinite_last = not math.isfinite(norm)
            overflow_pending = overflow_pending or nonfinite_last
            factor = controller.reject(norm)
        h = h * stepper.step_factor(norm, norm <= 1.0, factor)
        if bounded:
            h = control.clamp(h)


def _clip(constraint, trial: Trial) -> bool:
    """Clip an accepted trial's constrained components at 0 (state and interpolant); True if the
    state changed."""
    trial.interpolant = constraint.interpolant(trial.interpolant)
    projected = constraint.project(trial.y_new)
    if projected is trial.y_new:
        return False
    trial.y_new = projected
    return True


def validated_arguments(
    *,
    f,
    y0,
    t,
    method,
    rtol,
    atol,
    step_size,
    max_steps,
    first_step,
    throw,
    dense,
    per_sample,
    jac,
    jac_sparsity,
    control,
    jac_check,
) -> tuple:
    """:func:`solve`'s checks of its arguments before any work, in its order:
    ``(method_obj, y0, t_out, rtol, atol, step_size)`` validated (``step_size``: the fixed step,
    or an adaptive method's first one). Shared with
    :func:`dynkit.solvers.compiled.prepare`, which must refuse what ``solve`` refuses."""
    method_obj = validate_method(method, METHODS)
    y0 = validate_state(y0)
    t_out = validate_times(t)
    rtol, atol = validate_tolerances(rtol, atol, y0)
    flags = (
        ("throw", throw),
        ("dense", dense),
        ("per_sample", per_sample),
        ("jac_check", jac_check),
    )
    validate_options(f, y0, max_steps, flags, per_sample, jac, control)
    t0, t_end = float(t_out[0]), float(t_out[-1])
    direction = 1.0 if t_end > t0 else -1.0
    adaptive = bool(getattr(method_obj, "adaptive", False))
    step_size = validate_method_options(
        method_obj, adaptive, step_size, first_step, per_sample, jac, jac_sparsity
    )
    step_size = validate_step_size(
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
            f"{method_obj.name}: step_size={step_size:.6g} with the adaptive method "
            f"{method_obj.name!r} "
            f"is only its first step: rtol/atol choose the others. Pass first_step= to say "
            f"so, or a "
            f"fixed-step method ('rk4', 'euler', ...) for constant steps",
            StepSizeWarning,
            stacklevel=user_stacklevel(),
        )
    return method_obj, y0, t_out, rtol, atol, step_size


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
        ``t`` is passed as a 0-d tensor of the state's dtype and device, for numpy states as a
        float. Values of another float dtype are cast to ``y0``'s (a float32 state stays float32).
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
        ``bosh3``, ``rkf45``, ``dopri5``, ``tsit5``, ``dop853``; stiff: ``rosenbrock23``,
        ``rodas4``, ``rodas5``, ``radau5``, ``bdf``, and ``auto``), or a user-defined tableau,
        two-step method or any method object whose ``make_stepper`` returns a
        :class:`~dynkit.solvers.stepper.Stepper`.
    rtol, atol : float
        Relative and absolute tolerances of the adaptive methods: a step is accepted when the RMS
        over all components of ``err / (atol + rtol * max(|y|, |y_new|))`` is at most 1.
        ``atol`` may be an array broadcastable to the state. An ``rtol`` below
        ``max(100 eps_float64, eps_state)`` is raised to it (as scipy does), one above 1 asks for no
        correct digit: both with a :class:`ToleranceWarning`.
    step_size : float, optional
        The step of a fixed-step method (required). Its sign must be that of ``t[-1] - t[0]``. Given
        to an adaptive method it is only the first step, with a :class:`StepSizeWarning` (pass
        ``first_step`` instead). Fixed-step methods never shorten a step: outputs between grid
        points, and a final time that is not on the grid, are reached by dense output (cubic
        Hermite) after stepping past them. A step larger than the span, or one beyond the method's
        stability interval on the first steps, is warned about (:class:`StepSizeWarning`). A solve
        whose steps amplify instead of following the solution (a decaying mode beyond the stability
        interval, a finite-time blow-up) fails with :class:`StepTooLarge`: never ``"success"``. The
        test: ``|h|·|Δf|/|Δy|`` above 1 (2 for a growing mode) while ``|Δy|`` and ``|Δf|`` grow over
        3 consecutive steps; the last step is checked only when its end slope was computed for an
        interpolated output (so a blow-up within the last two steps of the span can go unnoticed).
    max_steps : int
        Most steps (accepted and rejected) before :class:`MaxStepsExceeded`.
    throw : bool
        If False, a solver failure returns the partial :class:`Solution` with ``result`` set to
        the failure's code instead of raising.
    dense : bool
        Keep each step's continuous extension: ``sol.evaluate(tq)`` then gives the state at any
        time of the span (the method's own interpolant: 4th order for dopri5/tsit5, 7th for dop853).
    events : callable or sequence of callables, optional
        Event functions ``g(t, y)`` returning a scalar, or one value per sample (shape ``(B,)`` for
        a batch on the leading axis). Each is sampled at 17 equally spaced points of every step on
        the interpolant, and every sign change between samples is located to machine precision
        (Brent's method): several zeros per step are found unless two fall within 1/16 of a step. A
        zero exactly at ``t[0]`` counts when ``g`` leaves 0 in an allowed direction during the first
        step (scipy's convention: a terminal one stops the solve at ``t[0]``). An event function
        returning NaN fails the solve (:class:`NonFiniteState` naming it); one that raises gives a
        :class:`VectorFieldError` (its exception as ``__cause__``). Optional attributes as in scipy:
        ``g.terminal`` (bool, or the number of zeros after which to stop; for per-sample ``g``: the
        solve stops when every sample has had that many) and ``g.direction`` (+1: only upward
        crossings, -1: only downward, 0: both). A terminal event ends the solve with
        ``result == "event"``; ``sol.t_events`` / ``sol.y_events`` / ``sol.event_indices`` hold the
        zeros.
    jac : callable, optional
        ``jac(t, y) -> ∂f/∂y`` for the stiff methods (``rosenbrock23``, ``rodas4``, ``rodas5``,
        ``radau5``, ``bdf``, ``auto``): shape ``(y0.size, y0.size)``, or ``(B, n, n)`` per sample
        with ``per_sample=True`` (whose samples must then be independent); or the pair
        ``(∂f/∂y, ∂f/∂t)`` (``∂f/∂t`` may be ``0`` for an autonomous ``f``), which saves the one
        call of ``f`` per Jacobian that estimates ``∂f/∂t`` otherwise. Default:
        ``torch.func.jacrev`` for torch states, forward differences for numpy states (see
        :mod:`dynkit.solvers.jacobian`). A numpy ``jac`` may return a ``scipy.sparse`` matrix: the
        stiff methods then factorise sparsely (SuperLU). Refused (ValueError) with an explicit
        method, which would ignore it; an exception raised in ``jac`` becomes a
        :class:`VectorFieldError` like one in ``f``. Checked before the first step (``jac_check``).
    jac_check : bool
        With a ``jac``: compare ``jac(t0, y0)`` with a central difference of ``f`` along one probe
        direction scaled to each component (two more calls of ``f``, one of ``jac``, counted; the
        rule and its tolerance in :func:`dynkit.solvers.jacobian.check_jacobian`) and raise a
        ValueError when they disagree beyond rounding: a wrong ``jac`` (sign, scale, transposed)
        makes the Rosenbrock methods end tens to thousands of tolerances off as a "success".
        ``False`` skips the check (for a deliberately approximate Jacobian, which radau5 and bdf
        tolerate). Default True.
    jac_sparsity : array or scipy.sparse matrix, optional
        The nonzero structure of ``∂f/∂y`` (``(y0.size, y0.size)``, numpy states): finite
        differences then perturb structurally orthogonal columns together and the LU is sparse.
    nonnegative : bool, boolean mask or sequence of int, optional
        Components kept at or above 0 (``True``: all; a mask of ``y0``'s shape; indices into
        ``y0.ravel()``): a step that takes one below 0 by more than the tolerance is rejected, a
        smaller excursion is set to 0 (:mod:`dynkit.solvers.constraints`, after Shampine et al.
        2005). For concentrations and populations whose ``atol`` exceeds their size somewhere.
        Adaptive methods, numpy states, not with ``adjoint=True``; ``y0`` must satisfy it.
    control : StepControl, optional
        A user's error norm (a seminorm, say), bounds on the step size and per-step callbacks
        (:class:`~dynkit.solvers.StepControl`); default: none of them.
    compile : bool or "auto"
        Run the whole step loop compiled with numba (:mod:`dynkit.solvers.compiled`;
        ``pip install dynkit[jit]``): ``f`` written with numba, or plain numpy code that numba
        compiles, a 1-D float64 numpy ``y0``, a method with a compiled kernel (the adaptive explicit
        pairs ``bosh3``, ``rkf45``, ``dopri5``, ``tsit5``, ``dop853``, and the stiff ones that have
        one). Same steps, ``nfe``, :class:`SolverStats`, results and failures as the Python path
        (``throw=False`` included); the first solve of an ``f`` pays numba's compile time (seconds),
        later ones reuse it. ``True`` refuses what it cannot compile (:class:`CompilationError`:
        numba missing, ``f`` not compilable, numba's message condensed; ValueError: ``dense``,
        ``events``, ``per_sample``, ``control``, ``nonnegative``, ``jac_sparsity``, ``adjoint``, a
        torch or non-1-D state, a method without a kernel, named); ``"auto"`` then runs the Python
        path with a :class:`CompileWarning` saying why. Default False.
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
        The first step of an adaptive method (chosen automatically when omitted, [HNW] II.4); the
        sign of ``t[-1] - t[0]`` (with ``adjoint``, the backward solves start with its reverse). Not
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
    compiled = _seam.compiled_entry()
    compile = compiled.validate(compile)
    checkpoints_given = not (type(adjoint_checkpoints) is int and adjoint_checkpoints == 0)
    if adjoint or adjoint_params is not None or checkpoints_given:
        if compile is not False:
            compiled.refuse_or_warn(
                compile,
                "the compiled path does not support adjoint (solve with compile=False for it)",
            )
        validated_adjoint_call = _seam.adjoint_entry()
        refuse_adjoint_options(dense, events, per_sample, jac, jac_sparsity, nonnegative)
        # the backward solves' first step is the reverse of this one
        first = {} if first_step is None else {"first_step": first_step}
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

    checked = validated_arguments(
        f=f,
        y0=y0,
        t=t,
        method=method,
        rtol=rtol,
        atol=atol,
        step_size=step_size,
        max_steps=max_steps,
        first_step=first_step,
        throw=throw,
        dense=dense,
        per_sample=per_sample,
        jac=jac,
        jac_sparsity=jac_sparsity,
        control=control,
        jac_check=jac_check,
    )
    method_obj, y0, t_out, rtol, atol, step_size = checked
    t0, t_end = float(t_out[0]), float(t_out[-1])
    direction = 1.0 if t_end > t0 else -1.0
    adaptive = bool(getattr(method_obj, "adaptive", False))
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
        solution = compiled.solve_or_fallback(
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
    t_grad = times_requiring_grad(t, y0)

    backend = backend_for(y0)
    stats = SolverStats()
    rec = Recorder(t_out, y0, backend, stats, method_obj.name)
    field = CountedField(f, backend, y0, stats, rec)
    field.jac = (
        _wrap_user_jacobian(jac, backend, rec) if callable(jac) else jac
    )  # read by the stiff steppers
    field.batched = bool(per_sample)
    field.jac_sparsity, field.rtol, field.atol = sparsity_pattern(jac_sparsity, y0), rtol, atol
    if dense:
        rec.dense = DenseOutput(backend, t0, y0)
    if events is not None:
        rec.events = EventTracker(events, backend, t0, y0, rec)
    if t_grad is not None:
        y0 = with_start_time_gradient(field, t_grad, y0)
    stepper = as_stepper(make_stepper(method_obj, field, backend, step_size))
    rec.switch_log = stepper.switch_log
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
                _diagnosis.stability_function(method_obj),
            )
    except SolverError as err:
        if throw or isinstance(err, (ValueError, TypeError)):
            raise
        return err.solution
    if rec.forced_steps:
        warnings.warn(
            f"{method_obj.name}: {rec.forced_steps} step(s) accepted at control.min_step="
            f"{control.min_step:g} with an error above the tolerance (rtol={rtol:g}): the "
            f"solution is "
            f"not controlled to it there",
            ToleranceWarning,
            stacklevel=2,
        )
    if rec.events is not None and rec.events.stopped is not None:
        solution = rec.solution(EVENT, rec.events.stopped)
    else:
        solution = rec.solution()
    if t_grad is not None:
        solution.ys = with_output_time_gradients(field, t_grad, solution.ys)
    return solution


def _private_copy(y0):
    """A copy of ``y0`` that only the solve sees (a torch copy stays in y0's autograd graph)."""
    return y0.clone() if is_torch(y0) else np.array(y0, copy=True)


def _wrap_user_jacobian(jac, backend, rec):
    """``jac`` whose exceptions become a :class:`VectorFieldError` with ``t`` and the partial
    solution."""

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
