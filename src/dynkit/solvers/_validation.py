"""The checks of :func:`dynkit.solvers.solve`'s arguments, before any work, and their messages.

Every function here raises ValueError or TypeError naming the argument, the expected and the
received value (or warns, :class:`~dynkit.solvers.ToleranceWarning`, where a value is usable but
suspicious). The Python path (:mod:`dynkit.solvers.engine`) and the compiled one
(:mod:`dynkit.solvers.compiled`, its ensembles included) call the same ones, so both refuse the
same arguments with the same words.
"""

from __future__ import annotations

import math
import os
import sys
import warnings

import numpy as np

from .ark import TwoStepRK
from .backend import is_torch
from .control import StepControl
from .errors import ToleranceWarning
from .jacobian import SparsityPattern
from .tableaus import RungeKuttaTableau

__all__ = [
    "RAISED_RTOLS",
    "real_array",
    "refuse_adjoint_options",
    "sparsity_pattern",
    "user_stacklevel",
    "validate_method",
    "validate_method_options",
    "validate_options",
    "validate_state",
    "validate_step_size",
    "validate_times",
    "validate_tolerances",
]


def refuse_adjoint_options(dense, events, per_sample, jac, jac_sparsity, nonnegative) -> None:
    """ValueError naming the arguments that ``adjoint=True`` does not combine with."""
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
            + (
                " (independent samples, each with its own steps and adjoint: "
                "dynkit.solvers.seedwise.solve_seeds)"
                if per_sample is not False
                else ""
            )
        )


def validate_options(f, y0, max_steps, flags, per_sample, jac, control) -> None:
    """``max_steps``, the boolean ``flags`` (``(name, value)`` pairs), ``per_sample`` against
    ``y0``'s shape, ``f``, ``jac`` and ``control``, in that order."""
    if (
        not isinstance(max_steps, (int, np.integer))
        or isinstance(max_steps, (bool, np.bool_))
        or max_steps < 1
    ):
        raise ValueError(
            f"max_steps must be a positive integer, got {type(max_steps).__name__} "
            f"{max_steps!r:.60}"
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


def validate_method(method, methods):
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


def validate_method_options(
    method_obj, adaptive: bool, step_size, first_step, per_sample, jac, jac_sparsity=None
):
    """Refuse (or warn about) arguments that the method would ignore or reinterpret; the step to
    use."""
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
            f"that replace a missing jac, so with jac= it would be ignored (expected "
            f"jac_sparsity=None, "
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
                f"first_step is for adaptive methods; the fixed-step method {name!r} takes "
                f"step_size "
                f"(got first_step={first_step!r:.60})"
            )
        if step_size is not None:
            raise ValueError(
                f"give first_step or step_size, not both (got step_size={step_size!r:.30} and "
                f"first_step={first_step!r:.30})"
            )
        return first_step
    return step_size


def sparsity_pattern(jac_sparsity, y0):
    """``jac_sparsity`` checked (shape, 0/1 values, numpy state) before any work, as a
    :class:`~dynkit.solvers.jacobian.SparsityPattern`."""
    if jac_sparsity is None:
        return None
    if is_torch(y0):
        raise ValueError(
            "jac_sparsity is for numpy states (expected jac_sparsity=None for a torch y0: its "
            "Jacobian comes dense from autograd)"
        )
    return SparsityPattern(jac_sparsity, int(np.prod(y0.shape)))


def validate_state(y0):
    if isinstance(y0, np.ma.MaskedArray):
        raise TypeError(
            "y0 must be a plain numpy array, got a masked array (solve would drop its mask): pass "
            "y0.filled(value) to choose the masked entries, or solve the unmasked components"
        )
    if isinstance(y0, np.matrix):
        raise TypeError(
            "y0 must be a plain numpy array or torch tensor, got a numpy.matrix (its * is "
            "the matrix "
            "product, so f would compute something else on the states): pass np.asarray(y0)"
        )
    if is_torch(y0):
        torch = sys.modules["torch"]
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


def real_array(value, name: str, what: str) -> np.ndarray:
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


def validate_times(t) -> np.ndarray:
    t_out = real_array(t, "t", "a 1-D array of real times")
    if t_out.ndim == 1 and 2 <= t_out.size <= _FEW_TIMES and _monotone_finite(t_out.tolist()):
        return t_out  # the checks below, in Python floats: numpy's per-call cost dominates here
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


_FEW_TIMES = 64


def _monotone_finite(times: list) -> bool:
    """Whether ``times`` are finite, strictly monotone and span a finite interval."""
    steps = [b - a for a, b in zip(times, times[1:])]
    if not all(math.isfinite(x) for x in times) or not all(math.isfinite(d) for d in steps):
        return False
    return all(d > 0 for d in steps) or all(d < 0 for d in steps)


def validate_tolerances(rtol, atol, y0):
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
    scalar = type(atol) is float  # the common case: judged without making an array
    if not scalar:
        atol_np = real_array(atol, "atol", "a positive float or an array of them")
        scalar = atol_np.ndim == 0 and not is_torch(atol)
        atol = float(atol_np) if scalar else atol
    if scalar:
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
        torch = sys.modules["torch"]
        return rtol, torch.as_tensor(atol_np, dtype=y0.dtype, device=y0.device)
    return rtol, atol_np.astype(y0.dtype)


def _warn_large_atol(atol: float, y0) -> None:
    """A :class:`ToleranceWarning` when ``atol`` (its largest component) exceeds
    ``max(1, max|y0|)``: errors as large as the state itself then pass the error test (like
    ``rtol > 1``), so the result may have no correct digit (``atol=1e308`` turns the error
    control off)."""
    if atol <= 1.0:  # the scale below is at least 1: no state needs looking at
        return
    if is_torch(y0):
        with sys.modules["torch"].no_grad():
            size = float(y0.detach().abs().max())
    else:
        size = float(np.abs(y0).max())
    scale = max(1.0, size)
    if atol > scale:
        warnings.warn(
            f"atol={atol:.3g} exceeds the size of the state (max(1, max|y0|) = {scale:.3g}): "
            f"errors as "
            f"large as the solution pass the error test and the result may have no correct digit "
            f"(expected atol below the size of the components, typically 1e-6 to 1e-12 of it)",
            ToleranceWarning,
            stacklevel=user_stacklevel(),
        )


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # .../dynkit/


def user_stacklevel() -> int:
    """The ``stacklevel`` of a warning raised where this is called that names the first caller
    outside dynkit (the user's line, however many of dynkit's frames lie between: fixed levels went
    wrong whenever a check moved into a helper)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level


_NUMPY_EPS = {np.dtype(d): float(np.finfo(d).eps) for d in (np.float32, np.float64)}
RAISED_RTOLS: set = set()  # (rtol, dtype) pairs already warned about in this process


def _sane_rtol(rtol: float, y0) -> float:
    """``rtol`` raised to ``max(100 eps_float64, eps_state)`` with a warning (scipy's ``solve_ivp``
    does the first: a relative error below the rounding of the state cannot be controlled, the steps
    would underflow); a warning for ``rtol > 1``, which asks for no correct digit.

    The raise is announced once per process for each ``(rtol, dtype)``: a training loop (or
    torchdiffeq's default ``rtol=1e-7`` with a float32 state) calls the solver thousands of times
    with the same setting, and one line says all there is to say."""
    eps = _NUMPY_EPS.get(y0.dtype) if isinstance(y0, np.ndarray) else None
    if eps is None:
        eps = float(
            sys.modules["torch"].finfo(y0.dtype).eps if is_torch(y0) else np.finfo(y0.dtype).eps
        )
    smallest = max(100 * _NUMPY_EPS[np.dtype(np.float64)], eps)
    if rtol < smallest:
        key = (rtol, str(y0.dtype))
        if key not in RAISED_RTOLS:
            RAISED_RTOLS.add(key)
            warnings.warn(
                f"rtol={rtol:.3g} is below the precision of the state ({y0.dtype}): raised to "
                f"rtol={smallest:.3g} (expected rtol >= {smallest:.3g}; accuracy beyond it "
                f"comes from "
                f"atol). Said once per process for this rtol and dtype.",
                ToleranceWarning,
                stacklevel=user_stacklevel(),
            )
        return smallest
    if rtol > 1:
        warnings.warn(
            f"rtol={rtol:.3g} > 1 accepts errors larger than the state itself: the result has no "
            f"correct digit (expected 0 < rtol <= 1, typically 1e-3 to 1e-10)",
            ToleranceWarning,
            stacklevel=user_stacklevel(),
        )
    return rtol


def validate_step_size(step_size, direction, adaptive, name, t0, t_end, arg: str = "step_size"):
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
