"""One explicit Runge–Kutta engine for every method in :data:`dynkit.solvers.METHODS`.

Three loops share the same pieces (counted vector field, output recorder, interpolants):
fixed-step one-step methods, adaptive embedded pairs, and constant-step two-step (ARK) methods.
Methods are data (:mod:`~dynkit.solvers.tableaus`, :mod:`~dynkit.solvers.ark`); nothing here is
specific to one of them.
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .ark import TwoStepRK
from .backend import backend_for, is_torch
from .errors import MaxStepsExceeded, NonFiniteState, SolverError, StepSizeUnderflow, VectorFieldShapeError
from .tableaus import RungeKuttaTableau

# Step-size control constants ([HNW] II.4, and Hairer's DOPRI5 code for the PI part).
SAFETY = 0.9
MIN_FACTOR = 0.2
MAX_FACTOR = 10.0
NONFINITE_FACTOR = 0.25  # shrink after a trial step whose stages overflowed
PI_BETA_TIMES_K = 0.2  # beta = 0.2 / k, alpha = 1/k - 0.75 beta: Hairer's beta = 0.04 for k = 5
# Two times closer than this fraction of a step are the same output time (grid round-off).
SAME_TIME_RTOL = 1e-9


@dataclass
class SolverStats:
    """Work done by a solve. ``nfe`` counts every call of ``f``, whatever it was for."""

    nfe: int = 0
    n_steps: int = 0
    n_accepted: int = 0
    n_rejected: int = 0

    def as_dict(self) -> dict:
        return dict(nfe=self.nfe, n_steps=self.n_steps, n_accepted=self.n_accepted,
                    n_rejected=self.n_rejected)


@dataclass
class Solution:
    """Result of :func:`solve`.

    Attributes
    ----------
    ts : array
        The requested output times, in the library, dtype and device of ``y0``.
    ys : array
        ``ys[i]`` is the state at ``ts[i]``; shape ``(len(ts), *y0.shape)``.
    stats : SolverStats
    result : str
        ``"success"``, or on a failure returned with ``throw=False`` the failure's code
        (``"step_size_underflow"``, ``"max_steps_exceeded"``, ``"non_finite_state"``, …).
    message : str
    method : str
    """

    ts: Any
    ys: Any
    stats: SolverStats
    result: str = "success"
    message: str = ""
    method: str = ""

    @property
    def success(self) -> bool:
        return self.result == "success"


# ---------------------------------------------------------------------------------------------
# shared pieces


class _CountedField:
    """Calls ``f``, counts every call and checks the shape of what comes back."""

    def __init__(self, f, backend, shape, stats, recorder):
        self.f, self.backend, self.shape, self.stats, self.recorder = f, backend, shape, stats, recorder

    def __call__(self, t: float, y):
        self.stats.nfe += 1
        out = self.f(self.backend.time(t), y)
        if getattr(out, "shape", None) != self.shape:
            got = getattr(out, "shape", type(out).__name__)
            raise self.recorder.failure(
                VectorFieldShapeError,
                f"f returned shape {tuple(got) if not isinstance(got, str) else got} at t={t:g}; "
                f"expected the state's shape {tuple(self.shape)}", t)
        return out


class _Recorder:
    """Collects the states at the requested output times as the integration passes them."""

    def __init__(self, t_out: np.ndarray, y0, backend, stats, method_name: str, y0_is_output: bool = True):
        self.t_out, self.backend, self.stats, self.method = t_out, backend, stats, method_name
        self.ys = [y0]
        self.next = 1
        self.direction = 1.0 if t_out[-1] > t_out[0] else -1.0

    @property
    def done(self) -> bool:
        return self.next >= len(self.t_out)

    def advance(self, t_old: float, t_new: float, y_new, interpolate: Callable[[float], Any]):
        """Record every output time in ``(t_old, t_new]`` (with ``t_new`` possibly past the last)."""
        tol = SAME_TIME_RTOL * abs(t_new - t_old)
        while not self.done:
            t_req = self.t_out[self.next]
            if abs(t_req - t_new) <= tol:
                self.ys.append(y_new)
            elif self.direction * (t_new - t_req) > 0:
                self.ys.append(interpolate((t_req - t_old) / (t_new - t_old)))
            else:
                break
            self.next += 1

    def solution(self, result: str = "success", message: str = "") -> Solution:
        n = len(self.ys)
        return Solution(ts=self.backend.output_times(self.t_out[:n]), ys=self.backend.stack(self.ys),
                        stats=self.stats, result=result, message=message, method=self.method)

    def failure(self, cls, message: str, t: float | None) -> SolverError:
        message = f"{self.method}: {message}"
        return cls(message, solution=self.solution(cls.result, message), t=t)


class _Slope:
    """``f(t, y)`` at a step end, computed at most once and only if someone needs it."""

    def __init__(self, field: _CountedField, t: float, y, value=None):
        self.field, self.t, self.y, self.value = field, t, y, value

    def get(self):
        if self.value is None:
            self.value = self.field(self.t, self.y)
        return self.value


def _hermite(backend, h: float, y0, f0, y1, slope1: _Slope):
    """Cubic Hermite interpolant on one step from the end values and slopes."""

    def interpolate(theta: float):
        t2, t3 = theta * theta, theta * theta * theta
        return backend.lincomb(None, (y0, f0, y1, slope1.get()),
                               (2 * t3 - 3 * t2 + 1, h * (t3 - 2 * t2 + theta), -2 * t3 + 3 * t2, h * (t3 - t2)))

    return interpolate


def _dense_polynomial(backend, tableau: RungeKuttaTableau, h: float, y0, ks):
    """The method's own continuous extension ``y0 + h K^T P [θ, θ², …]``."""

    def interpolate(theta: float):
        powers = theta ** np.arange(1, tableau.p.shape[1] + 1)
        return backend.lincomb(y0, ks, h * (tableau.p @ powers))

    return interpolate


class _LazyAppend:
    """The stages followed by the end slope, evaluated only when an interpolation needs it."""

    def __init__(self, ks, slope: _Slope):
        self.ks, self.slope = ks, slope

    def __iter__(self):
        yield from self.ks
        yield self.slope.get()


class _Coefficients:
    """A tableau's ``a`` (row ``i`` left of the diagonal), ``b``, ``c``, ``e`` as tuples of Python floats.

    Converted once per solve: scaling numpy rows by ``h`` on every stage of every step allocates
    an array each time and hands the backend numpy scalars, which are slow one by one.
    """

    def __init__(self, tableau: RungeKuttaTableau):
        self.stages = tableau.stages
        self.a = [tuple(map(float, tableau.a[i, :i])) for i in range(tableau.stages)]
        self.b, self.c = tuple(map(float, tableau.b)), tuple(map(float, tableau.c))
        self.e = None if tableau.e is None else tuple(map(float, tableau.e))


def _times(h: float, coeffs):
    return [h * x for x in coeffs]


def _rk_stages(field, backend, coeffs: _Coefficients, t: float, y, h: float, k1):
    """All stages of one explicit RK step, ``k1 = f(t, y)`` given."""
    ks = [k1]
    for i in range(1, coeffs.stages):
        ks.append(field(t + coeffs.c[i] * h, backend.lincomb(y, ks, _times(h, coeffs.a[i]))))
    return ks


def _fsal_stages(field, backend, coeffs: _Coefficients, t: float, y, h: float, k1, t_new: float):
    """Stages of an FSAL step: the last one is ``f(t_new, y_new)``, so ``y_new`` is formed first."""
    ks = [k1]
    for i in range(1, coeffs.stages - 1):
        ks.append(field(t + coeffs.c[i] * h, backend.lincomb(y, ks, _times(h, coeffs.a[i]))))
    y_new = backend.lincomb(y, ks, _times(h, coeffs.b[:-1]))
    ks.append(field(t_new, y_new))
    return y_new, ks


def _grid(t0: float, t_end: float, h: float) -> int:
    """Number of constant steps of size ``h`` needed to reach or pass ``t_end``."""
    n = (t_end - t0) / h
    return max(1, math.ceil(n - SAME_TIME_RTOL * max(1.0, n)))


def _grid_time(t0: float, t_end: float, h: float, n: int, n_total: int) -> float:
    # t0 + n h, not repeated addition (no drift); the last grid point snaps to t_end when it lands on it
    t = t0 + n * h
    return t_end if n == n_total and abs(t - t_end) <= SAME_TIME_RTOL * abs(h) else t


# ---------------------------------------------------------------------------------------------
# the three loops


def _march_constant_steps(field, backend, rec, stats, t0, t_end, y0, h, max_steps, step):
    """Constant steps ``t0 + n h`` until ``t_end`` is reached or passed (never shortened).

    ``step(n, t, y, k1) -> y_new`` advances one step given ``k1 = f(t, y)``; outputs inside a step
    come from cubic Hermite interpolation.
    """
    n_total = _grid(t0, t_end, h)
    t, y, slope = t0, y0, _Slope(field, t0, y0)
    for n in range(1, n_total + 1):
        if stats.n_steps >= max_steps:
            raise rec.failure(MaxStepsExceeded, f"max_steps={max_steps} reached at t={t:g} "
                              f"({n_total} steps of {h:g} are needed)", t)
        k1 = slope.get()
        y_new = step(n, t, y, k1)
        t_new = _grid_time(t0, t_end, h, n, n_total)
        stats.n_steps += 1
        stats.n_accepted += 1
        if not backend.all_finite(y_new):
            raise rec.failure(NonFiniteState, f"NaN/Inf in the state at t={t_new:g} "
                              f"(step from t={t:g} with step {h:g})", t_new)
        slope = _Slope(field, t_new, y_new)
        rec.advance(t, t_new, y_new, _hermite(backend, h, y, k1, y_new, slope))
        t, y = t_new, y_new


def _one_step(field, backend, tableau: RungeKuttaTableau, h: float):
    coeffs = _Coefficients(tableau)
    weights = _times(h, coeffs.b)

    def step(n, t, y, k1):
        return backend.lincomb(y, _rk_stages(field, backend, coeffs, t, y, h, k1), weights)

    return step


class _TwoStep:
    """Step function of a two-step ARK method: the starter first, then Eq. (9) of CSAODE."""

    def __init__(self, field, backend, method: TwoStepRK, h: float):
        self.field, self.backend, self.method, self.h = field, backend, method, h
        self.coeffs = method.update_coefficients(h)
        self.starter = _Coefficients(method.starter)
        self.prev = None  # (t_{n-1}, y_{n-1}, chain at t_{n-1} or the starter's stages)

    def __call__(self, n, t, y, k1):
        field, backend, method, h = self.field, self.backend, self.method, self.h
        if n == 1:  # a one-step method of the same order; its stages seed the recursion
            ks = _rk_stages(field, backend, self.starter, t, y, h, k1)
            self.prev = (t, y, ks[: method.starter_reuse()])
            return backend.lincomb(y, ks, _times(h, self.starter.b))
        t_prev, y_prev, prev_chain = self.prev
        if n == 2:  # complete the chain at t_0 where the starter's stages differ from it
            prev_chain = _ark_chain(field, backend, method, t_prev, y_prev, h, prev_chain)
        chain = _ark_chain(field, backend, method, t, y, h, [k1])
        self.prev = (t, y, chain)
        return backend.lincomb(None, (y, y_prev, *chain, *prev_chain), self.coeffs)


def _ark_chain(field, backend, method: TwoStepRK, t, y, h, known):
    """k_1 = f(t, y), k_j = f(t + a_j h, y + a_j h k_{j-1}) for j = 2..s (Eq. (10) of CSAODE);
    the stages in ``known`` (a prefix of the chain) are not recomputed."""
    chain = list(known)
    for a_j in method.a_float[len(chain) - 1:]:
        chain.append(field(t + a_j * h, backend.lincomb(y, (chain[-1],), (a_j * h,))))
    return chain


def _initial_step(field, backend, tableau, t0, t_end, y0, f0, rtol, atol, direction):
    """Automatic initial step of [HNW] II.4 (one probe evaluation of ``f``, counted)."""
    k = min(tableau.order, tableau.error_order) + 1
    no_grad = sys.modules["torch"].no_grad() if backend.name == "torch" else _nullcontext()
    with no_grad:
        scale = backend.scale(y0, rtol, atol)
        d0, d1 = backend.rms(y0, scale), backend.rms(f0, scale)
        h0 = 1e-6 if (d0 < 1e-5 or d1 < 1e-5) else 0.01 * d0 / d1
        h0 = min(h0, abs(t_end - t0))
        f1 = field(t0 + direction * h0, backend.lincomb(y0, (f0,), (direction * h0,)))
        d2 = backend.rms(backend.lincomb(f1, (f0,), (-1.0,)), scale) / h0
    if not math.isfinite(d1) or not math.isfinite(d2):
        d2 = math.inf  # a probe that overflowed: start small, the controller will grow the step
    dmax = max(d1, d2)
    h1 = max(1e-6, h0 * 1e-3) if dmax <= 1e-15 else (0.01 / dmax) ** (1.0 / k)
    return direction * min(100 * h0, h1, abs(t_end - t0))


class _nullcontext:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def _solve_adaptive(field, backend, rec, stats, tableau, t0, t_end, y0, h, rtol, atol, max_steps):
    direction = 1.0 if t_end > t0 else -1.0
    k = min(tableau.order, tableau.error_order) + 1
    beta = PI_BETA_TIMES_K / k
    alpha = 1.0 / k - 0.75 * beta
    t, y = t0, y0
    coeffs = _Coefficients(tableau)
    k1 = field(t0, y0)
    if not backend.all_finite(k1):
        raise rec.failure(NonFiniteState, f"f returned NaN/Inf at the initial state (t={t0:g})", t0)
    if h is None:
        h = _initial_step(field, backend, tableau, t0, t_end, y0, k1, rtol, atol, direction)
    err_prev, rejected_last, nonfinite_last = 1e-4, False, False
    while direction * (t_end - t) > 0:
        if stats.n_steps >= max_steps:
            raise rec.failure(MaxStepsExceeded, f"max_steps={max_steps} reached at t={t:g} "
                              f"(last step {h:g}; loosen rtol/atol or raise max_steps)", t)
        if direction * (t + h - t_end) > 0:
            h = t_end - t
        if abs(h) < 16 * np.spacing(max(abs(t), abs(t + h))):
            if nonfinite_last:
                raise rec.failure(NonFiniteState, f"f returned NaN/Inf on every trial step beyond t={t:.17g} "
                                  f"(the step shrank to {h:.3g})", t)
            raise rec.failure(StepSizeUnderflow, f"step size {h:.3g} underflowed at t={t:.17g} (a singularity, "
                              f"or rtol/atol too tight for the state's precision?)", t)
        t_new = t_end if direction * (t + h - t_end) >= 0 else t + h
        if tableau.fsal:
            y_new, ks = _fsal_stages(field, backend, coeffs, t, y, h, k1, t_new)
        else:
            ks = _rk_stages(field, backend, coeffs, t, y, h, k1)
            y_new = backend.lincomb(y, ks, _times(h, coeffs.b))
        err = backend.lincomb(None, ks, _times(h, coeffs.e))
        norm = backend.error_norm(err, y, y_new, rtol, atol)
        stats.n_steps += 1
        if norm <= 1.0:
            stats.n_accepted += 1
            slope = _Slope(field, t_new, y_new, ks[-1] if tableau.fsal else None)
            if tableau.p is not None:
                stages = ks if len(tableau.p) == tableau.stages else _LazyAppend(ks, slope)
                interp = _dense_polynomial(backend, tableau, h, y, stages)
            else:
                interp = _hermite(backend, h, y, k1, y_new, slope)
            rec.advance(t, t_new, y_new, interp)
            factor = MAX_FACTOR if norm == 0.0 else SAFETY * norm ** (-alpha) * err_prev ** beta
            factor = min(MAX_FACTOR, max(MIN_FACTOR, factor))
            if rejected_last:
                factor = min(1.0, factor)
            err_prev = max(norm, 1e-4)
            t, y = t_new, y_new
            k1 = slope.get() if direction * (t_end - t) > 0 else None
            rejected_last = nonfinite_last = False
        else:
            stats.n_rejected += 1
            nonfinite_last = not math.isfinite(norm)
            factor = NONFINITE_FACTOR if nonfinite_last else max(MIN_FACTOR, SAFETY * norm ** (-1.0 / k))
            rejected_last = True
        h = h * factor


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
    adjoint: bool = False,
    adjoint_params: Any = None,
) -> Solution:
    """Integrate ``dy/dt = f(t, y)`` from ``y(t[0]) = y0`` and return the states at the times ``t``.

    Parameters
    ----------
    f : callable
        ``f(t, y) -> dy/dt`` with the shape of ``y``. For torch states ``t`` is passed as a 0-d
        tensor of the state's dtype and device, for numpy states as a float.
    y0 : numpy.ndarray or torch.Tensor
        Initial state, float32 or float64, any shape (leading batch dimensions are just more
        components of the state; the error norm is taken over all of them).
    t : 1-D array-like
        Strictly increasing or strictly decreasing output times, at least two.
    method : str, RungeKuttaTableau or TwoStepRK
        A name from :data:`METHODS` (``euler``, ``midpoint``, ``heun``, ``rk4``, ``ark3``, ``ark4``,
        ``bosh3``, ``rkf45``, ``dopri5``), or a user-defined tableau or two-step method.
    rtol, atol : float
        Relative and absolute tolerances of the adaptive methods: a step is accepted when the RMS
        over all components of ``err / (atol + rtol * max(|y|, |y_new|))`` is at most 1.
        ``atol`` may be an array broadcastable to the state.
    step_size : float, optional
        The step of a fixed-step method (required), or the first step of an adaptive one (chosen
        automatically when omitted, [HNW] II.4). Its sign must be that of ``t[-1] - t[0]``.
        Fixed-step methods never shorten a step: outputs between grid points, and a final time that
        is not on the grid, are reached by dense output (cubic Hermite) after stepping past them.
    max_steps : int
        Most steps (accepted and rejected) before :class:`MaxStepsExceeded`.
    throw : bool
        If False, a solver failure returns the partial :class:`Solution` with ``result`` set to
        the failure's code instead of raising.
    adjoint : bool
        Torch only: gradients by the continuous adjoint solved backward with the same method
        (memory flat in the number of steps); see :mod:`dynkit.solvers.adjoint`. The solution's
        ``backward_stats`` count the backward pass.
    adjoint_params : sequence of tensors, optional
        With ``adjoint=True``: the tensors ``f`` depends on that receive gradients (default: the
        parameters of ``f`` when it is an ``nn.Module``).

    Returns
    -------
    Solution
        ``ts`` and ``ys`` in the array library, dtype and device of ``y0``; ``stats`` with
        ``nfe`` (every call of ``f``), ``n_steps``, ``n_accepted``, ``n_rejected``.

    Raises
    ------
    ValueError
        Bad arguments (the message names the argument and what was expected), or ``f`` returning
        the wrong shape (:class:`VectorFieldShapeError`, carrying the partial solution).
    StepSizeUnderflow, MaxStepsExceeded, NonFiniteState
        Subclasses of :class:`SolverError`; ``err.solution`` holds the outputs and stats reached.

    Notes
    -----
    Torch solves are differentiable by autograd (discretise-then-optimise): the step sizes are
    chosen from detached error norms, the states are ordinary differentiable tensor operations.

    References
    ----------
    E. Hairer, S. P. Nørsett, G. Wanner, *Solving Ordinary Differential Equations I*, Springer
    1993, Sects. II.4 (step-size control, initial step) and II.6 (dense output).
    """
    from . import METHODS  # late: the registry lives in the package's __init__

    if adjoint or adjoint_params is not None:
        from .adjoint import validated_adjoint_call

        return validated_adjoint_call(f, y0, t, adjoint, adjoint_params, method=method, rtol=rtol, atol=atol,
                                      step_size=step_size, max_steps=max_steps, throw=throw)

    method_obj = _validate_method(method, METHODS)
    y0 = _validate_state(y0)
    t_out = _validate_times(t)
    rtol, atol = _validate_tolerances(rtol, atol, y0)
    if not isinstance(max_steps, (int, np.integer)) or isinstance(max_steps, bool) or max_steps < 1:
        raise ValueError(f"max_steps must be a positive integer, got {max_steps!r}")
    t0, t_end = float(t_out[0]), float(t_out[-1])
    direction = 1.0 if t_end > t0 else -1.0
    adaptive = isinstance(method_obj, RungeKuttaTableau) and method_obj.adaptive
    step_size = _validate_step_size(step_size, direction, adaptive, method_obj.name)

    backend = backend_for(y0)
    stats = SolverStats()
    rec = _Recorder(t_out, y0, backend, stats, method_obj.name)
    field = _CountedField(f, backend, y0.shape, stats, rec)
    try:
        if adaptive:
            _solve_adaptive(field, backend, rec, stats, method_obj, t0, t_end, y0, step_size,
                            rtol, atol, max_steps)
        else:
            step = (_TwoStep(field, backend, method_obj, step_size) if isinstance(method_obj, TwoStepRK)
                    else _one_step(field, backend, method_obj, step_size))
            _march_constant_steps(field, backend, rec, stats, t0, t_end, y0, step_size, max_steps, step)
    except SolverError as err:
        if throw or isinstance(err, ValueError):
            raise
        return err.solution
    return rec.solution()


def _validate_method(method, methods):
    if isinstance(method, (RungeKuttaTableau, TwoStepRK)):
        return method
    if isinstance(method, str) and method in methods:
        return methods[method].implementation
    known = ", ".join(sorted(methods))
    raise ValueError(f"method must be one of {known} (or a RungeKuttaTableau / TwoStepRK), got {method!r}")


def _validate_state(y0):
    if is_torch(y0):
        import torch

        if y0.dtype not in (torch.float32, torch.float64):
            raise ValueError(f"y0 must be a float32 or float64 tensor, got dtype {y0.dtype}")
        with torch.no_grad():
            finite = bool(torch.isfinite(y0).all())
    elif isinstance(y0, np.ndarray):
        if y0.dtype not in (np.float32, np.float64):
            raise ValueError(f"y0 must be a float32 or float64 array, got dtype {y0.dtype} "
                             f"(use np.asarray(y0, dtype=float))")
        finite = bool(np.isfinite(y0).all())
    else:
        raise ValueError(f"y0 must be a numpy array or torch tensor of floats, got {type(y0).__name__} "
                         f"(use np.asarray(y0, dtype=float))")
    if not finite:
        raise ValueError("y0 must be finite; it contains NaN or Inf")
    return y0


def _validate_times(t) -> np.ndarray:
    if is_torch(t):
        t = t.detach().cpu().numpy()
    try:
        t_out = np.asarray(t, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"t must be a 1-D array of times, got {type(t).__name__}") from None
    if t_out.ndim != 1 or len(t_out) < 2:
        raise ValueError(f"t must be a 1-D array of at least 2 times, got shape {t_out.shape}")
    if not np.isfinite(t_out).all():
        raise ValueError("t must be finite")
    dt = np.diff(t_out)
    if not ((dt > 0).all() or (dt < 0).all()):
        raise ValueError("t must be strictly increasing or strictly decreasing (non-monotone or repeated "
                         f"times at index {int(np.argmax((dt <= 0) if dt[0] > 0 else (dt >= 0))) + 1})")
    return t_out


def _validate_tolerances(rtol, atol, y0):
    try:
        rtol = float(rtol)
    except (TypeError, ValueError):
        raise ValueError(f"rtol must be a positive float, got {rtol!r}") from None
    if not rtol > 0 or not math.isfinite(rtol):
        raise ValueError(f"rtol must be a positive finite float, got {rtol!r}")
    if np.ndim(atol) == 0 and not is_torch(atol):
        atol = float(atol)
        if not atol > 0 or not math.isfinite(atol):
            raise ValueError(f"atol must be a positive finite float (or array), got {atol!r}")
        return rtol, atol
    atol_np = atol.detach().cpu().numpy() if is_torch(atol) else np.asarray(atol, dtype=np.float64)
    if not (atol_np > 0).all() or not np.isfinite(atol_np).all():
        raise ValueError("atol must be positive and finite in every component")
    try:
        np.broadcast_shapes(atol_np.shape, tuple(y0.shape))
    except ValueError:
        raise ValueError(f"atol of shape {atol_np.shape} does not broadcast to y0's shape {tuple(y0.shape)}") from None
    if is_torch(y0):
        import torch

        return rtol, torch.as_tensor(atol_np, dtype=y0.dtype, device=y0.device)
    return rtol, atol_np.astype(y0.dtype)


def _validate_step_size(step_size, direction, adaptive, name):
    if step_size is None:
        if adaptive:
            return None
        raise ValueError(f"step_size is required for the fixed-step method {name!r} "
                         f"(a float with the sign of t[-1] - t[0])")
    try:
        h = float(step_size)
    except (TypeError, ValueError):
        raise ValueError(f"step_size must be a float, got {step_size!r}") from None
    if not math.isfinite(h) or h == 0.0 or math.copysign(1.0, h) != direction:
        sign = "positive" if direction > 0 else "negative"
        raise ValueError(f"step_size must be {sign} and finite for t going from t[0] towards t[-1] "
                         f"({'increasing' if direction > 0 else 'decreasing'} times), got {step_size!r}")
    return h
