"""The method registry: :data:`METHODS`, each name's :class:`MethodInfo` and implementation.

``dk.solve(method=name)`` looks the name up here; the implementation is the method object whose
``make_stepper`` builds the stepper (:mod:`dynkit.solvers.stepper`).
"""

from __future__ import annotations

from dataclasses import dataclass

from .ark import ARK3, ARK4, TwoStepRK
from .auto import AUTO, AutoSwitching
from .bdf import NDF, BDFMethod
from .radau import RADAU5, RadauIIA
from .rosenbrock import RODAS4, RODAS5, ROSENBROCK23, RosenbrockTableau
from .tableaus import (
    BOSH3,
    DOP853,
    DOPRI5,
    EULER,
    HEUN,
    MIDPOINT,
    RK4,
    RKF45,
    TSIT5,
    RungeKuttaTableau,
)

__all__ = ["METHODS", "MethodInfo"]


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
    implementation: (
        RungeKuttaTableau | TwoStepRK | RosenbrockTableau | RadauIIA | BDFMethod | AutoSwitching
    )


def _rk_info(tab: RungeKuttaTableau, description: str) -> MethodInfo:
    return MethodInfo(
        tab.name,
        tab.order,
        tab.stages,
        tab.new_evaluations_per_step,
        tab.adaptive,
        tab.error_order,
        description,
        tab,
    )


def _ark_info(m: TwoStepRK, description: str) -> MethodInfo:
    return MethodInfo(m.name, m.order, 2 * m.stages, m.stages, False, None, description, m)


def _rosenbrock_info(tab: RosenbrockTableau, description: str) -> MethodInfo:
    # new evaluations: the stages after the first, plus f(t + h, y_new) unless the last stage is it
    # (the Jacobian's own calls of f, and the one for ∂f/∂t, come on top: see stats.njev)
    new = tab.stages - 1 + (0 if tab.fsal else 1)
    return MethodInfo(tab.name, tab.order, tab.stages, new, True, tab.error_order, description, tab)


METHODS: dict[str, MethodInfo] = {
    info.name: info
    for info in (
        _rk_info(EULER, "explicit Euler, order 1"),
        _rk_info(MIDPOINT, "explicit midpoint, order 2"),
        _rk_info(HEUN, "Heun's method (explicit trapezoid), order 2"),
        _rk_info(RK4, "classical Runge–Kutta, order 4"),
        _ark_info(
            ARK3, "accelerated two-step RK, order 3, 2 new evaluations per step (SSPRK3 starter)"
        ),
        _ark_info(
            ARK4, "accelerated two-step RK, order 4, 3 new evaluations per step (RK4 starter)"
        ),
        _rk_info(BOSH3, "Bogacki–Shampine 3(2), FSAL, adaptive"),
        _rk_info(RKF45, "Runge–Kutta–Fehlberg 4(5), adaptive, propagates the 4th-order solution"),
        _rk_info(DOPRI5, "Dormand–Prince 5(4), FSAL, adaptive, 4th-order dense output"),
        _rk_info(TSIT5, "Tsitouras 5(4), FSAL, adaptive, 4th-order dense output"),
        _rk_info(
            DOP853,
            "Dormand–Prince 8(5,3), FSAL, adaptive, 7th-order dense output (3 extra stages on use)",
        ),
        _rosenbrock_info(
            ROSENBROCK23,
            "Rosenbrock 2(3), Shampine–Reichelt ode23s, L-stable, FSAL, stiff, crude tolerances",
        ),
        _rosenbrock_info(
            RODAS4,
            "Rosenbrock 4(3), Hairer–Wanner RODAS, L-stable, stiffly accurate, stiff, "
            "3rd-order dense output",
        ),
        _rosenbrock_info(
            RODAS5,
            "Rosenbrock 5(4), Di Marzo's RODAS5, L-stable, stiffly accurate, stiff, 4th-degree "
            "dense output",
        ),
        # new evaluations: 3 stages per Newton iteration (typically 1-3) + f(t + h, y_new) for the
        # error estimate
        MethodInfo(
            RADAU5.name,
            RADAU5.order,
            RADAU5.stages,
            3 * 2 + 1,
            True,
            RADAU5.error_order,
            "Radau IIA 5(3), 3-stage implicit collocation, L-stable, stiffly accurate, "
            "simplified Newton "
            "with Jacobian and LU reuse (Hairer–Wanner IV.8), 3rd-order dense output; numpy states",
            RADAU5,
        ),
        # new evaluations: 1-4 Newton iterations per step, typically 1-2
        MethodInfo(
            NDF.name,
            NDF.max_order,
            1,
            2,
            True,
            None,
            "variable-order (1-5) NDFs (Shampine–Reichelt's ode15s), backward differences, "
            "simplified Newton, "
            "Jacobian kept until Newton fails, LU per step size/order; numpy states",
            NDF,
        ),
        MethodInfo(
            "auto",
            5,
            7,
            6,
            True,
            4,
            "dopri5, switching while the steps are limited by stability "
            "(dynkit's stiffness test) to radau5 (numpy, rtol ≤ 1e-5) or rodas4 (otherwise), "
            "and back; "
            "sol.switch_log says when and why",
            AUTO,
        ),
    )
}
