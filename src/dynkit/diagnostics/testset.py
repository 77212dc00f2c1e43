"""Stiff problems of the Bari IVP test set with their published reference solutions.

Each :class:`StiffProblem` holds ``f(t, y)``, its analytic Jacobian ``jac(t, y)`` (derived here by
hand from ``f``; the tests check it against finite differences), the initial state, the final time
and the test set's reference value at that time.

Source of the problems and of the reference values: F. Mazzia, C. Magherini, *Test Set for Initial
Value Problem Solvers*, release 2.4, University of Bari and INdAM (2008),
https://archimede.uniba.it/~testset/ — problem descriptions ``rober``, ``hires``, ``vdpol``,
``orego`` and their Fortran files' ``solut`` routines (references computed with RADAU5 in quadruple
precision, rtol = atol = 1.1e-18). The same values appear in Hairer's ``testset`` pages.

* ``robertson`` — ROBER, chemical kinetics, 3 equations, ``t ∈ [0, 1e11]``;
* ``hires`` — HIRES, plant physiology, 8 equations, ``t ∈ [0, 321.8122]``;
* ``vdpol`` — VDPOL in the test set's *scaled* form ``y1' = y2``, ``y2' = ((1 − y1²) y2 − y1) / ε``,
  ``ε = 1e-6``, ``t ∈ [0, 2]``: Van der Pol with ``μ = 1/√ε = 1000`` and time measured in units
  of ``μ`` (the unscaled ``x'' − μ(1 − x²)x' + x = 0`` on ``[0, 2000]``);
* ``orego`` — OREGO, the Oregonator, 3 equations, ``t ∈ [0, 360]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

__all__ = ["StiffProblem", "TESTSET"]


@dataclass(frozen=True)
class StiffProblem:
    name: str
    f: Callable
    jac: Callable
    y0: np.ndarray
    t_end: float
    reference: np.ndarray
    description: str


def _rober(t, y):
    a, b, c = 0.04 * y[0], 1e4 * y[1] * y[2], 3e7 * y[1] ** 2
    return np.array([-a + b, a - b - c, c])


def _rober_jac(t, y):
    return np.array(
        [
            [-0.04, 1e4 * y[2], 1e4 * y[1]],
            [0.04, -1e4 * y[2] - 6e7 * y[1], -1e4 * y[1]],
            [0.0, 6e7 * y[1], 0.0],
        ]
    )


def _hires(t, y):
    r = 280.0 * y[5] * y[7]
    return np.array(
        [
            -1.71 * y[0] + 0.43 * y[1] + 8.32 * y[2] + 0.0007,
            1.71 * y[0] - 8.75 * y[1],
            -10.03 * y[2] + 0.43 * y[3] + 0.035 * y[4],
            8.32 * y[1] + 1.71 * y[2] - 1.12 * y[3],
            -1.745 * y[4] + 0.43 * y[5] + 0.43 * y[6],
            -r + 0.69 * y[3] + 1.71 * y[4] - 0.43 * y[5] + 0.69 * y[6],
            r - 1.81 * y[6],
            -r + 1.81 * y[6],
        ]
    )


def _hires_jac(t, y):
    J = np.zeros((8, 8))
    J[0, :3] = -1.71, 0.43, 8.32
    J[1, :2] = 1.71, -8.75
    J[2, 2:5] = -10.03, 0.43, 0.035
    J[3, 1:4] = 8.32, 1.71, -1.12
    J[4, 4:7] = -1.745, 0.43, 0.43
    J[5, 3:8] = 0.69, 1.71, -0.43 - 280.0 * y[7], 0.69, -280.0 * y[5]
    J[6, 5:8] = 280.0 * y[7], -1.81, 280.0 * y[5]
    J[7, 5:8] = -280.0 * y[7], 1.81, -280.0 * y[5]
    return J


_EPS = 1e-6


def _vdpol(t, y):
    return np.array([y[1], ((1.0 - y[0] ** 2) * y[1] - y[0]) / _EPS])


def _vdpol_jac(t, y):
    return np.array([[0.0, 1.0], [(-2.0 * y[0] * y[1] - 1.0) / _EPS, (1.0 - y[0] ** 2) / _EPS]])


_S, _Q, _W = 77.27, 8.375e-6, 0.161


def _orego(t, y):
    return np.array(
        [
            _S * (y[1] + y[0] * (1.0 - _Q * y[0] - y[1])),
            (y[2] - (1.0 + y[0]) * y[1]) / _S,
            _W * (y[0] - y[2]),
        ]
    )


def _orego_jac(t, y):
    return np.array(
        [
            [_S * (1.0 - 2.0 * _Q * y[0] - y[1]), _S * (1.0 - y[0]), 0.0],
            [-y[1] / _S, -(1.0 + y[0]) / _S, 1.0 / _S],
            [_W, 0.0, -_W],
        ]
    )


TESTSET: dict[str, StiffProblem] = {
    p.name: p
    for p in (
        StiffProblem(
            "robertson",
            _rober,
            _rober_jac,
            np.array([1.0, 0.0, 0.0]),
            1e11,
            np.array([0.2083340149701255e-07, 0.8333360770334713e-13, 0.9999999791665050]),
            "ROBER: Robertson's chemical kinetics to t = 1e11",
        ),
        StiffProblem(
            "hires",
            _hires,
            _hires_jac,
            np.array([1.0, 0, 0, 0, 0, 0, 0, 0.0057]),
            321.8122,
            np.array(
                [
                    0.7371312573325668e-3,
                    0.1442485726316185e-3,
                    0.5888729740967575e-4,
                    0.1175651343283149e-2,
                    0.2386356198831331e-2,
                    0.6238968252742796e-2,
                    0.2849998395185769e-2,
                    0.2850001604814231e-2,
                ]
            ),
            "HIRES: high irradiance responses of photomorphogenesis",
        ),
        StiffProblem(
            "vdpol",
            _vdpol,
            _vdpol_jac,
            np.array([2.0, 0.0]),
            2.0,
            np.array([0.1706167732170483e1, -0.8928097010247975e0]),
            "VDPOL: Van der Pol, scaled form, eps = 1e-6 (mu = 1000)",
        ),
        StiffProblem(
            "orego",
            _orego,
            _orego_jac,
            np.array([1.0, 2.0, 3.0]),
            360.0,
            np.array([0.1000814870318523e1, 0.1228178521549917e4, 0.1320554942846706e3]),
            "OREGO: the Oregonator",
        ),
    )
}
