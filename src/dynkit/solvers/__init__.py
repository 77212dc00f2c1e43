"""Numerical integration: one explicit Runge–Kutta engine, methods as data.

>>> import numpy as np, dynkit as dk
>>> sol = dk.solve(lambda t, y: -y, np.array([1.0]), [0.0, 1.0], method="dopri5", rtol=1e-8)
>>> round(float(sol.ys[-1, 0]), 6), sol.stats.nfe > 0
(0.367879, True)
"""

from __future__ import annotations

from . import adjoint as _adjoint  # noqa: F401  (registers solve(adjoint=True); it sits above the engine)
from .auto import AUTO, AutoSwitching
from .ark import ARK3, ARK4, TwoStepRK
from .control import StepControl
from .engine import Solution, SolverStats, solve
from .in_place_field import InPlace, in_place
from .methods import METHODS, MethodInfo
from .bdf import NDF, BDFMethod
from .odeint import odeint, odeint_adjoint
from .radau import RADAU5, RadauIIA
from .rosenbrock import RODAS4, RODAS5, ROSENBROCK23, RosenbrockTableau
from .compiled import EnsembleSolution, PreparedSolve, prepare, solve_ensemble
from .errors import (
    CompilationError,
    CompileWarning,
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
from .tableaus import (
    BOSH3,
    DOP853,
    DOPRI5,
    EULER,
    HEUN,
    MIDPOINT,
    RK4,
    RKF45,
    SSPRK3,
    TSIT5,
    RungeKuttaTableau,
)


__all__ = [
    "solve",
    "solve_ensemble",
    "EnsembleSolution",
    "in_place",
    "InPlace",
    "prepare",
    "PreparedSolve",
    "odeint",
    "odeint_adjoint",
    "Solution",
    "SolverStats",
    "StepControl",
    "METHODS",
    "MethodInfo",
    "CompilationError",
    "CompileWarning",
    "RungeKuttaTableau",
    "TwoStepRK",
    "SolverError",
    "StepSizeUnderflow",
    "MaxStepsExceeded",
    "NonFiniteState",
    "VectorFieldError",
    "VectorFieldShapeError",
    "VectorFieldTypeError",
    "StepSizeWarning",
    "StepTooLarge",
    "ToleranceWarning",
    "RosenbrockTableau",
    "ROSENBROCK23",
    "RODAS4",
    "RODAS5",
    "RadauIIA",
    "RADAU5",
    "BDFMethod",
    "NDF",
    "AutoSwitching",
    "AUTO",
    "ARK3",
    "ARK4",
    "EULER",
    "MIDPOINT",
    "HEUN",
    "RK4",
    "SSPRK3",
    "BOSH3",
    "RKF45",
    "DOPRI5",
    "TSIT5",
    "DOP853",
]
