"""Solver failures. Each carries the partial solution and the statistics reached before it."""
from __future__ import annotations

from typing import Any


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


class VectorFieldShapeError(SolverError, ValueError):
    """``f`` returned an array whose shape differs from the state's (also a ``ValueError``)."""

    result = "bad_vector_field"
