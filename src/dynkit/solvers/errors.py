"""Solver failures. Each carries the partial solution and the statistics reached before it.

``SolverError`` (a ``RuntimeError``) is the family; ``VectorFieldError`` and its subclasses say that
``f`` itself misbehaved. ``StepSizeWarning`` and ``ToleranceWarning`` are warnings, not failures.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "SolverError",
    "StepSizeUnderflow",
    "MaxStepsExceeded",
    "NonFiniteState",
    "StepTooLarge",
    "VectorFieldError",
    "VectorFieldShapeError",
    "VectorFieldTypeError",
    "StepSizeWarning",
    "ToleranceWarning",
    "CompilationError",
    "CompileWarning",
]


class SolverError(RuntimeError):
    """A solve that could not be completed.

    Attributes
    ----------
    solution : Solution or None
        The output times reached before the failure, their states and the statistics so far.
    t : float or None
        The time at which the solver stopped.
    """

    result = "failure"

    def __init__(self, message: str, *, solution: Any = None, t: float | None = None):
        super().__init__(message)
        self.solution = solution
        self.t = t

    @property
    def stats(self):
        return None if self.solution is None else self.solution.stats


class StepSizeUnderflow(SolverError):
    """The adaptive step fell below the resolution of the time variable."""

    result = "step_size_underflow"


class MaxStepsExceeded(SolverError):
    """More than ``max_steps`` steps were needed."""

    result = "max_steps_exceeded"


class NonFiniteState(SolverError):
    """NaN or Inf appeared in the state or in the output of ``f``."""

    result = "non_finite_state"


class StepTooLarge(SolverError):
    """A fixed step too large for the solution: it amplified a decaying mode (beyond the method's
    stability interval) or stepped across a change faster than itself (a finite-time blow-up, a fast
    transient), so the states computed from it are wrong. ``err.t`` is where it was noticed."""

    result = "step_too_large"


class VectorFieldError(SolverError):
    """``f`` failed: it raised (the user's exception is ``__cause__``) or returned something
    unusable.

    Also raised when ``jac`` or an event function raises (the message names which)."""

    result = "vector_field_error"


class VectorFieldShapeError(VectorFieldError, ValueError):
    """``f`` returned an array whose shape differs from the state's (also a ``ValueError``)."""

    result = "bad_vector_field"


class VectorFieldTypeError(VectorFieldError, TypeError):
    """``f`` returned another type than the state's library (a list, a string, numpy for a torch
    state, ...) or complex values (also a ``TypeError``)."""

    result = "bad_vector_field"


class StepSizeWarning(UserWarning):
    """A fixed step larger than the span, or beyond the method's stability interval."""


class ToleranceWarning(UserWarning):
    """An ``rtol`` outside the range where it means what it says: below the state's precision
    (raised to the smallest meaningful value, as scipy does) or above 1 (no correct digit is
    asked for)."""


class CompilationError(ValueError):
    """``compile=True`` could not compile the solve: numba is not installed
    (``pip install dynkit[jit]``), or ``f`` (or ``jac``) is not code numba compiles (numba's
    message, condensed), or returns something else than a float64 array of the state's shape. A
    ValueError, like the refusal of an option or method the compiled path lacks."""


class CompileWarning(UserWarning):
    """``compile="auto"`` ran the Python path; the message says why the compiled one was not
    taken."""
