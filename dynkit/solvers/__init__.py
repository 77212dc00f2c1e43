"""Numerical integration: one explicit Runge–Kutta engine, methods as data.

>>> import numpy as np, dynkit as dk
>>> sol = dk.solve(lambda t, y: -y, np.array([1.0]), [0.0, 1.0], method="dopri5", rtol=1e-8)
>>> round(float(sol.ys[-1, 0]), 6), sol.stats.nfe > 0
(0.367879, True)
"""
from __future__ import annotations

from dataclasses import dataclass

from .ark import ARK3, ARK4, TwoStepRK
from .engine import Solution, SolverStats, solve
from .errors import (MaxStepsExceeded, NonFiniteState, SolverError, StepSizeUnderflow, StepSizeWarning,
                     VectorFieldError, VectorFieldShapeError, VectorFieldTypeError)
from .tableaus import BOSH3, DOP853, DOPRI5, EULER, HEUN, MIDPOINT, RK4, RKF45, SSPRK3, TSIT5, RungeKuttaTableau


@dataclass(frozen=True)
class MethodInfo:
    """What a method is: ``order``, ``stages`` (values of ``f`` combined in one step's update),
    ``new_evaluations_per_step``, ``adaptive`` and, for embedded pairs, ``error_order``."""

    name: str
    order: int
    stages: int
    new_evaluations_per_step: int
    adaptive: bool
    error_order: int | None
    description: str
    implementation: RungeKuttaTableau | TwoStepRK


def _rk_info(tab: RungeKuttaTableau, description: str) -> MethodInfo:
    return MethodInfo(tab.name, tab.order, tab.stages, tab.new_evaluations_per_step, tab.adaptive,
                      tab.error_order, description, tab)


def _ark_info(m: TwoStepRK, description: str) -> MethodInfo:
    return MethodInfo(m.name, m.order, 2 * m.stages, m.stages, False, None, description, m)


METHODS: dict[str, MethodInfo] = {info.name: info for info in (
    _rk_info(EULER, "explicit Euler, order 1"),
    _rk_info(MIDPOINT, "explicit midpoint, order 2"),
    _rk_info(HEUN, "Heun's method (explicit trapezoid), order 2"),
    _rk_info(RK4, "classical Runge–Kutta, order 4"),
    _ark_info(ARK3, "accelerated two-step RK, order 3, 2 new evaluations per step (SSPRK3 starter)"),
    _ark_info(ARK4, "accelerated two-step RK, order 4, 3 new evaluations per step (RK4 starter)"),
    _rk_info(BOSH3, "Bogacki–Shampine 3(2), FSAL, adaptive"),
    _rk_info(RKF45, "Runge–Kutta–Fehlberg 4(5), adaptive, propagates the 4th-order solution"),
    _rk_info(DOPRI5, "Dormand–Prince 5(4), FSAL, adaptive, 4th-order dense output"),
    _rk_info(TSIT5, "Tsitouras 5(4), FSAL, adaptive, 4th-order dense output"),
    _rk_info(DOP853, "Dormand–Prince 8(5,3), FSAL, adaptive, 7th-order dense output (3 extra stages on use)"),
)}

__all__ = [
    "solve", "Solution", "SolverStats", "METHODS", "MethodInfo", "RungeKuttaTableau", "TwoStepRK",
    "SolverError", "StepSizeUnderflow", "MaxStepsExceeded", "NonFiniteState", "VectorFieldError",
    "VectorFieldShapeError", "VectorFieldTypeError", "StepSizeWarning",
    "ARK3", "ARK4", "EULER", "MIDPOINT", "HEUN", "RK4", "SSPRK3", "BOSH3", "RKF45", "DOPRI5", "TSIT5", "DOP853",
]
