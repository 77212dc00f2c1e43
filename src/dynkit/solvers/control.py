"""Optional controls of the step loop: a user's error norm, step bounds and per-step callbacks.

:func:`dynkit.solve` takes them as one object, ``control=StepControl(...)``; every field defaults to
"as without it", so a solve without ``control`` is unchanged. They are what torchdiffeq users know
as the ``norm``, ``min_step`` and ``max_step`` options and the ``callback_step`` /
``callback_accept_step`` / ``callback_reject_step`` methods of a module (:func:`dynkit.odeint` maps
those onto this).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

__all__ = ["StepControl"]


def tolerance_factor(rtol: float, factor: float, exponent: float) -> float:
    """Tolerance proportionality: ``θ = min(1, factor · rtol^exponent)``, the share of the user's
    tolerance that one step's local error may take. A code that holds the local error of an
    order-``p`` solution to ``tol`` has a global error ``∝ tol^{p/(p+1)}`` ([HNW] II.4); a local
    tolerance ``θ · tol`` with ``exponent ≤ 1/p`` brings the global error back towards ``∝ tol``.

    References
    ----------
    E. Hairer, S. P. Nørsett, G. Wanner, *Solving Ordinary Differential Equations I*, 2nd ed., Springer 1993,
    Sect. II.4. L. F. Shampine, "Tolerance proportionality in ODE codes", Lecture Notes in Math. 1386 (1989) 118-136.
    """  # noqa: E501
    return min(1.0, factor * rtol**exponent)


@dataclass(frozen=True)
class StepControl:
    """Controls of the adaptive step loop (and the callbacks of the fixed-step one).

    Parameters
    ----------
    norm : callable, optional
        ``norm(scaled_error) -> scalar``: the error measure of a trial step, given the error
        estimate divided componentwise by ``atol + rtol * max(|y|, |y_new|)`` (an array or tensor
        shaped like the state); the step is accepted when it is at most 1. Default: the root mean
        square (dynkit's and torchdiffeq's). A *seminorm* (one that ignores some components)
        controls only the others: the adjoint's backward solves use one to leave the parameter
        gradients out of the error test (Kidger, Chen & Lyons 2021).
    min_step, max_step : float
        Bounds on ``|h|`` for the adaptive methods (defaults 0 and infinity). A step proposed below
        ``min_step`` is taken at ``min_step`` **and accepted whatever its error** (torchdiffeq's
        rule): the tolerance is then not met, which the solution's ``message`` says.
    on_step, on_accept, on_reject : callable, optional
        Called as ``callback(t, y, h)`` before each step attempt (every method), after an accepted
        and after a rejected attempt (adaptive methods); ``t`` is a float, ``y`` the state at ``t``.
        Their return value is ignored.

    References
    ----------
    P. Kidger, R. T. Q. Chen, T. Lyons, "'Hey, that's not an ODE': faster ODE adjoints via seminorms",
    ICML 2021.
    """  # noqa: E501

    norm: Callable[[Any], Any] | None = None
    min_step: float = 0.0
    max_step: float = math.inf
    on_step: Callable[[float, Any, float], Any] | None = None
    on_accept: Callable[[float, Any, float], Any] | None = None
    on_reject: Callable[[float, Any, float], Any] | None = None

    def __post_init__(self):
        for name in ("norm", "on_step", "on_accept", "on_reject"):
            value = getattr(self, name)
            if value is not None and not callable(value):
                raise TypeError(
                    f"StepControl.{name} must be None or a callable, got {type(value).__name__}"
                )
        for name in ("min_step", "max_step"):
            value = getattr(self, name)
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or math.isnan(value)
                or value < 0
            ):
                raise ValueError(f"StepControl.{name} must be a number >= 0, got {value!r}")
            object.__setattr__(self, name, float(value))
        if self.min_step > self.max_step:
            raise ValueError(
                f"StepControl.min_step must be <= max_step, got min_step={self.min_step!r} > "
                f"max_step={self.max_step!r}"
            )
        if self.max_step == 0:
            raise ValueError("StepControl.max_step must be > 0, got 0")

    @property
    def bounds_steps(self) -> bool:
        return self.min_step > 0 or self.max_step < math.inf

    def clamp(self, h: float) -> float:
        """``h`` with its magnitude brought into ``[min_step, max_step]`` (its sign kept)."""
        return math.copysign(min(max(abs(h), self.min_step), self.max_step), h)

    def error(self, error, scale) -> float:
        """The user's norm of the scaled error, as a float (NaN counts as an overflow)."""
        value = self.norm(error / scale)
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise TypeError(
                f"StepControl.norm must return a scalar, got {type(value).__name__} "
                f"{getattr(value, 'shape', '')}"
            ) from None
        return math.inf if value != value else value
