"""The solve's bookkeeping around the method: the counted vector field and the output recorder.

:class:`CountedField` calls the user's ``f``, counts every call into the solve's
:class:`~dynkit.solvers.SolverStats` and checks what comes back; :class:`Recorder` writes the states
at the requested output times as the loops pass them, and builds the
:class:`~dynkit.solvers.Solution` (or the failure carrying the partial one).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from .control import StepControl
from .errors import SolverError, VectorFieldError, VectorFieldShapeError, VectorFieldTypeError
from .results import SUCCESS, Solution

__all__ = ["SAME_TIME_RTOL", "CountedField", "Recorder"]

# Two times closer than this fraction of a step are the same output time (grid round-off).
SAME_TIME_RTOL = 1e-9


class CountedField:
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


class Recorder:
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
        """Record every output time in ``(t_old, t_new]`` (with ``t_new`` possibly past the
        last)."""
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

    def solution(self, result: str = SUCCESS, message: str = "") -> Solution:
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
