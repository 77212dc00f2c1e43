"""Linearly implicit Rosenbrock methods as data, and their stepper.

A Rosenbrock method replaces the Newton iterations of an implicit Runge–Kutta method by one linear
solve per stage with the same matrix ``W = I/(hγ) − J``, ``J = ∂f/∂y(t_n, y_n)``. In the
transformed variables ``u_i`` of [HW] IV.7, Eq. (7.4) (no products with ``J`` in the stages):

.. math::

    (I/(hγ) − J)\\, u_i = f\\big(t + c_i h,\\; y + \\sum_{j<i} a_{ij} u_j\\big)
        + \\sum_{j<i} \\frac{C_{ij}}{h} u_j + d_i h\\, ∂f/∂t,
    \\qquad y_{n+1} = y + \\sum_i m_i u_i, \\qquad \\text{err} = \\sum_i e_i u_i .

One Jacobian (and ``∂f/∂t``) per step, one LU factorisation per attempted step (all stages share
it); after a rejection the Jacobian at the same point is reused and only ``W`` is refactorised.
Dense output is a polynomial in the step fraction θ: ``y(t + θh) = y + Σ_i u_i Σ_p P_ip θ^p``.

Methods:

* ``rosenbrock23`` — Shampine & Reichelt's ode23s pair [SR]: order 2, L-stable, with a 3rd-order
  error estimate, FSAL (the third stage is ``f(t + h, y_{n+1})``), 2nd-order dense output ([SR]
  Sect. 2). For crude tolerances (rtol ≳ 1e-4). Given here in the classical form derived from [SR]
  and transformed by :meth:`RosenbrockTableau.from_classical`. With tolerance proportionality
  (:data:`ROSENBROCK23_PROPORTIONALITY`): each step's error is held to ``θ = 0.5 rtol^{1/2}`` of the
  tolerance, so that the global error of its 2nd-order solution falls like the tolerance, not like
  its 2/3 power. The work at a given *error* is unchanged (OREGO, VDPOL: within 2 % along the
  work-error curve), at a given rtol it is larger. θ is not applied to the components the step damps
  (``|h J_ii| ≥`` :data:`DAMPED_H_J`), whose error does not accumulate: on Robertson to 1e11 with θ
  on them the steps stayed tiny (no finish within 100,000 steps at rtol 1e-6).
* ``rodas4`` — Hairer & Wanner's RODAS [HW] IV.7 (Table 7.?/the code RODAS): order 4, 3rd-order
  embedded, L-stable and stiffly accurate (``y_{n+1}`` is the last stage value plus ``u_6``; the
  error estimate is ``u_6``), 3rd-order dense output from the code's coefficients. For rtol ≲ 1e-4.
* ``rodas5`` — Di Marzo's RODAS5 [DM]: order 5(4), 8 stages (7 new calls of ``f``), L-stable,
  stiffly accurate; output times inside a step by sub-steps of the method (its 4th-degree
  interpolant is of lower order than the step).

References
----------
.. [HW] E. Hairer, G. Wanner, *Solving Ordinary Differential Equations II: Stiff and
   Differential-Algebraic Problems*, 2nd ed., Springer 1996, Sect. IV.7 (Rosenbrock methods,
   Eq. (7.4) transformed form, the RODAS coefficients and its dense output).
.. [DM] G. A. Di Marzo, *RODAS5(4) — Méthodes de Rosenbrock d'ordre 5(4) adaptées aux problèmes
   différentiels-algébriques*, Master's thesis, University of Geneva (1993).
.. [SR] L. F. Shampine, M. W. Reichelt, "The MATLAB ODE Suite", SIAM J. Sci. Comput. 18 (1997) 1-22,
   Sect. 2 (the modified Rosenbrock formula of ode23s, its error estimate and interpolant).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from .control import tolerance_factor
from .explicit import Slope, Trial
from .stepper import Stepper
from .jacobian import is_sparse, jacobian_provider
from .linalg import shifted_lu

__all__ = [
    "RosenbrockTableau",
    "ROSENBROCK23_PROPORTIONALITY",
    "DAMPED_H_J",
    "bootstrap_weights",
    "BOOTSTRAP_H_NORM",
    "ROSENBROCK23",
    "RODAS4",
    "RODAS5",
    "RosenbrockStepper",
]


@dataclass(frozen=True, eq=False)
class RosenbrockTableau:
    """Coefficients of a Rosenbrock method in the transformed form of [HW] IV.7, Eq. (7.4).

    Parameters
    ----------
    name : str
    order, error_order : int
        Orders of the propagated solution and of the embedded one.
    gamma : float
        The diagonal ``γ`` (``W = I/(hγ) − J``).
    a, C : (s, s) arrays, strictly lower triangular
        Stage arguments ``y + Σ a_ij u_j`` and the ``C_ij / h`` couplings.
    c, d : (s,) arrays
        Stage times ``t + c_i h`` and the ``∂f/∂t`` weights ``d_i h``.
    m, e : (s,) arrays
        Weights of the solution and of the error estimate.
    P : (s, q) array
        Dense output: ``y(t + θh) = y + Σ_i u_i Σ_p P[i, p] θ^{p+1}``.
    bootstrap_dense : bool
        Raise the dense output's order by one (see :func:`bootstrap_weights`): the quartic through
        ``y_n, f_n, y_{n+1}, f_{n+1}`` and ``f`` at ``P``'s interpolant at θ = ⅓
        (one more call of ``f`` per step, made only for steps that are interpolated, and only on
        nonstiff steps, ``|h| ‖J‖_∞ ≤ 1``: elsewhere ``P``'s interpolant, which is stiff-safe).
    smooth_field : bool
        Always True: read by ``nonnegative=`` (:meth:`dynkit.solvers.constraints.NonNegative.wrap`).
    dense_by_substeps : bool
        Reach every output time inside a step by a sub-step of the method (as on stiff steps) on
        every step: for a method whose ``P`` is of lower order than the method (rodas5: measured 20×
        the step-end error on a harmonic oscillator at rtol 1e-8).
    tolerance_proportionality : (factor, exponent), optional
        Hold each step's local error to ``θ · (atol + rtol |y|)``,
        ``θ = min(1, factor · rtol^exponent)`` (:func:`dynkit.solvers.control.tolerance_factor`):
        the error estimate is divided by ``θ``, on the components the step does not damp
        (``|h J_ii| <`` :data:`DAMPED_H_J`). ``None``: ``θ = 1``.
    """

    name: str
    order: int
    error_order: int
    gamma: float
    a: np.ndarray
    C: np.ndarray
    c: np.ndarray
    d: np.ndarray
    m: np.ndarray
    e: np.ndarray
    P: np.ndarray
    bootstrap_dense: bool = False
    adaptive: bool = True
    dense_by_substeps: bool = False
    tolerance_proportionality: tuple[float, float] | None = None
    # nonnegative=: f is modified only where a constrained component is exactly 0, not wherever it
    # is ≤ 0 (a Rosenbrock step's order needs a smooth f and J; see dynkit.solvers.constraints)
    smooth_field: bool = True

    @property
    def stages(self) -> int:
        return len(self.c)

    @property
    def fsal(self) -> bool:
        """The last stage is evaluated at ``(t + h, y_{n+1})``: its ``f`` is the next step's
        first."""
        return bool(self.c[-1] == 1.0 and np.array_equal(self.a[-1], self.m))

    @classmethod
    def from_classical(cls, name: str, order: int, error_order: int, alpha, Gamma, b, e_k, P_k):
        """From the classical form ``(I − hγJ) k_i = h f(t + α_i h, y + Σ α_ij k_j) + γ_i h² f_t
        + hJ Σ_{j<i} γ_ij k_j`` ([HW] IV.7, Eq. (7.1)) by ``u = Γ k``: ``a = α Γ⁻¹``,
        ``C = diag(Γ)⁻¹ − Γ⁻¹``, ``m = b Γ⁻¹``, ``d_i = Σ_j Γ_ij`` (Eq. (7.4)); ``e_k`` and the
        dense weights ``P_k`` (on the ``k_i``) transform like ``b``."""
        alpha, Gamma = np.asarray(alpha, float), np.asarray(Gamma, float)
        inv = np.linalg.inv(Gamma)
        gamma = float(Gamma[0, 0])
        return cls(
            name,
            order,
            error_order,
            gamma,
            a=alpha @ inv,
            C=np.diag(1.0 / np.diag(Gamma)) - inv,
            c=alpha.sum(axis=1),
            d=Gamma.sum(axis=1),
            m=np.asarray(b, float) @ inv,
            e=np.asarray(e_k, float) @ inv,
            P=inv.T @ np.asarray(P_k, float),
        )

    def make_stepper(self, field, backend):
        return RosenbrockStepper(self, field, backend)


# rosenbrock23's tolerance proportionality (factor, exponent): θ = 0.5 rtol^{1/2} (0.05 at rtol
# 1e-2, 5e-4 at 1e-6). Its 2nd-order solution under per-step control of an O(h^3) local error has a
# global error ∝ tol^{2/3}; θ ∝ tol^{1/2} makes it ∝ tol. Measured without it (bench_stiff
# --wrong-as-success): OREGO 43-420 tolerances at rtol 1e-2..1e-6, VDPOL 16 and Van der Pol μ = 1e3
# / 1e6 15-32 at 1e-5..1e-6, all reported as success; with it 0.1-5.6.
ROSENBROCK23_PROPORTIONALITY = (0.5, 0.5)

# |h J_ii| from which a component counts as damped by the step: tolerance proportionality's θ is not
# applied to its error. A damped component's global error is its last local error, not the sum of
# them (|R(-100)| = 0.044 for rosenbrock23), so θ there buys no accuracy and only holds the steps
# small: with θ on every component Robertson to 1e11 at rtol 1e-6 ran out of 100,000 steps at
# t = 1.3e6; with this rule 46,058 steps. A lower bound damps less and leaks more error into the
# coupled slow components: HIRES at rtol 1e-2 ends 4.2 tolerances off with 1, 3.0 with 10, 0.67
# with 100 (0.19 with θ on all), Robertson at 1e-6 takes 4,725, 25,107, 46,058 steps.
DAMPED_H_J = 100.0


def _rosenbrock23() -> RosenbrockTableau:
    """ode23s of [SR] Sect. 2: ``d = 1/(2 + √2)``, ``e32 = 6 + √2``, ``W = I − h d J``;
    ``k1 = W⁻¹(F0 + h d T)``, ``k2 = W⁻¹(F1 − k1) + k1`` with ``F1 = f(t + h/2, y + h k1/2)``,
    ``y_new = y + h k2``, ``k3 = W⁻¹(F2 − e32 (k2 − F1) − 2 (k1 − F0) + h d T)`` with
    ``F2 = f(t + h, y_new)``, error ``h (k1 − 2 k2 + k3) / 6``, interpolant
    ``y + h (θ(1−θ) k1 + θ(θ − 2d) k2) / (1 − 2d)``. Eliminating the differences
    (``k2 − F1 = hdJ(k2 − k1)``, ``k1 − F0 = hdJ k1 + hdT``) gives the classical coefficients
    below (``k`` scaled by ``h``)."""
    d = 1.0 / (2.0 + math.sqrt(2.0))
    e32 = 6.0 + math.sqrt(2.0)
    alpha = [[0, 0, 0], [0.5, 0, 0], [0, 1, 0]]
    Gamma = [[d, 0, 0], [-d, d, 0], [d * (e32 - 2.0), -e32 * d, d]]
    b = [0, 1, 0]
    e_k = [1 / 6, -1 / 3, 1 / 6]
    P_k = [[1 / (1 - 2 * d), -1 / (1 - 2 * d)], [-2 * d / (1 - 2 * d), 1 / (1 - 2 * d)], [0, 0]]
    tab = RosenbrockTableau.from_classical("rosenbrock23", 2, 3, alpha, Gamma, b, e_k, P_k)
    return dataclasses.replace(tab, tolerance_proportionality=ROSENBROCK23_PROPORTIONALITY)


def _rodas4() -> RosenbrockTableau:
    """RODAS of [HW] IV.7 in the transformed form of its code (coefficients of the code RODAS4,
    ``METH = 1``). ``m`` is the last row of ``a`` plus ``u_6`` (stiffly accurate);
    ``e = (0, …, 0, 1)``. Dense output ([HW] IV.7 / the code's CONTRO):
    ``y(θ) = (1−θ) y_0 + θ (y_1 + (1−θ)(h_1 + θ h_2))``, ``h_r = Σ_i H_ri u_i``, i.e.
    ``P = [m + H_1, H_2 − H_1, −H_2]`` on the powers θ, θ², θ³."""
    a = np.zeros((6, 6))
    a[1, 0] = 1.544
    a[2, :2] = 0.9466785280815826, 0.2557011698983284
    a[3, :3] = 3.314825187068521, 2.896124015972201, 0.9986419139977817
    a[4, :4] = 1.221224509226641, 6.019134481288629, 12.53708332932087, -0.6878860361058950
    a[5, :5] = *a[4, :4], 1.0
    C = np.zeros((6, 6))
    C[1, 0] = -5.6688
    C[2, :2] = -2.430093356833875, -0.2063599157091915
    C[3, :3] = -0.1073529058151375, -9.594562251023355, -20.47028614809616
    C[4, :4] = 7.496443313967647, -10.24680431464352, -33.99990352819905, 11.70890893206160
    C[5, :5] = (
        8.083246795921522,
        -7.981132988064893,
        -31.52159432874371,
        16.31930543123136,
        -6.058818238834054,
    )
    c = np.array([0.0, 0.386, 0.21, 0.63, 1.0, 1.0])
    d = np.array([0.25, -0.1043, 0.1035, -0.0362, 0.0, 0.0])
    m = np.append(a[5, :5], 1.0)
    e = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 1.0])
    H1 = np.array(
        [
            10.12623508344586,
            -7.487995877610167,
            -34.80091861555747,
            -7.992771707568823,
            1.025137723295662,
            0.0,
        ]
    )
    H2 = np.array(
        [
            -0.6762803392801253,
            6.087714651680015,
            16.43084320892478,
            24.76722511418386,
            -6.594389125716872,
            0.0,
        ]
    )
    P = np.stack([m + H1, H2 - H1, -H2], axis=1)
    return RosenbrockTableau("rodas4", 4, 3, 0.25, a, C, c, d, m, e, P, bootstrap_dense=True)


def _rodas5() -> RosenbrockTableau:
    """RODAS5 of Di Marzo [DM] (Hairer & Wanner's code RODAS, 5th-order coefficients), 8 stages
    in the transformed form: order 5 with a 4th-order embedded solution, L-stable, stiffly
    accurate (the last two stages are evaluated at ``t + h`` and ``y_{n+1}`` is the last stage
    value plus ``u_8``; the error is ``u_8``). Dense output of 4th degree in θ,
    ``y(θ) = (1−θ) y_0 + θ (y_1 + (1−θ)(K_1 + θ (K_2 + θ K_3)))``, ``K_r = Σ_i H_ri u_i``, with
    the ``H`` of OrdinaryDiffEq.jl's Rodas5 (read there for the numbers), i.e.
    ``P = [m + H_1, H_2 − H_1, H_3 − H_2, −H_3]``. The coefficients are checked by the order
    tests."""
    a = np.zeros((8, 8))
    a[1, 0] = 2.0
    a[2, :2] = 3.040894194418781, 1.041747909077569
    a[3, :3] = 2.576417536461461, 1.622083060776640, -0.9089668560264532
    a[4, :4] = 2.760842080225597, 1.446624659844071, -0.3036980084553738, 0.2877498600325443
    a[5, :5] = (
        -14.09640773051259,
        6.925207756232704,
        -41.47510893210728,
        2.343771018586405,
        24.13215229196062,
    )
    a[6, :6] = *a[5, :5], 1.0
    a[7, :7] = *a[6, :6], 1.0
    C = np.zeros((8, 8))
    C[1, 0] = -10.31323885133993
    C[2, :2] = -21.04823117650003, -7.234992135176716
    C[3, :3] = 32.22751541853323, -4.943732386540191, 19.44922031041879
    C[4, :4] = -20.69865579590063, -8.816374604402768, 1.260436877740897, -0.7495647613787146
    C[5, :5] = (
        -46.22004352711257,
        -17.49534862857472,
        -289.6389582892057,
        93.60855400400906,
        318.3822534212147,
    )
    C[6, :6] = (
        34.20013733472935,
        -14.15535402717690,
        57.82335640988400,
        25.83362985412365,
        1.408950972071624,
        -6.551835421242162,
    )
    C[7, :7] = (
        42.57076742291101,
        -13.80770672017997,
        93.98938432427124,
        18.77919633714503,
        -31.58359187223370,
        -6.685968952921985,
        -5.810979938412932,
    )
    gamma = 0.19
    c = np.array(
        [0.0, 0.38, 0.3878509998321533, 0.4839718937873840, 0.4570477008819580, 1.0, 1.0, 1.0]
    )
    d = np.array(
        [
            gamma,
            -0.1823079225333714636,
            -0.319231832186874912,
            0.3449828624725343,
            -0.377417564392089818,
            0.0,
            0.0,
            0.0,
        ]
    )
    m = np.append(a[7, :7], 1.0)
    e = np.zeros(8)
    e[-1] = 1.0
    H1 = np.array(
        [
            27.354592673333357,
            -6.925207756232857,
            26.40037733258859,
            0.5635230501052979,
            -4.699151156849391,
            -1.6008677469422725,
            -1.5306074446748028,
            -1.3929872940716344,
        ]
    )
    H2 = np.array(
        [
            44.19024239501722,
            1.3677947663381929e-13,
            202.93261852171622,
            -35.5669339789154,
            -181.91095152160645,
            3.4116351403665033,
            2.5793540257308067,
            2.2435122582734066,
        ]
    )
    H3 = np.array(
        [
            -44.0988150021747,
            -5.755396159656812e-13,
            -181.26175034586677,
            56.99302194811676,
            183.21182741427398,
            -7.480257918273637,
            -5.792426076169686,
            -5.32503859794143,
        ]
    )
    P = np.stack([m + H1, H2 - H1, H3 - H2, -H3], axis=1)
    return RosenbrockTableau("rodas5", 5, 4, gamma, a, C, c, d, m, e, P, dense_by_substeps=True)


def bootstrap_weights(theta: np.ndarray, h: float) -> np.ndarray:
    """Weights of ``(y_0, f_0, y_1, f_1, f_⅓)`` in the quartic ``p`` with ``p(0) = y_0``,
    ``p(1) = y_1``, ``p'(θ) = h f_θ`` at ``θ = 0, ⅓, 1`` (derivatives in θ), one row per θ. (Not θ =
    ½: a cubic ``p'`` through its values at 0, ½, 1 has Simpson's integral whatever ``p``, so
    ``y_1 − y_0`` would not pin the quartic.)

    With ``f_⅓ = f(t + h/3, q(⅓))`` for a dense output ``q`` of local order ``h^4`` (RODAS's), the
    slope error is ``O(h^4)``, which enters ``p`` multiplied by ``h``: ``p`` has local error
    ``O(h^5)``, the order of the step itself (the "bootstrapping" of dense output, Enright et al.
    1986, and [HW] II.6).
    """
    conditions = np.array(
        [
            [1, 0, 0, 0, 0],  # p(0)
            [0, 1, 0, 0, 0],  # p'(0)
            [1, 1, 1, 1, 1],  # p(1)
            [0, 1, 2, 3, 4],  # p'(1)
            [0, 1, 2 / 3, 1 / 3, 4 / 27],
        ],
        float,
    )  # p'(1/3)
    powers = np.asarray(theta, dtype=np.float64)[:, None] ** np.arange(5)
    weights = powers @ np.linalg.inv(conditions)
    weights[:, [1, 3, 4]] *= h
    return weights


# h ‖J‖_∞ up to which a step's dense output is bootstrapped (beyond: the step is stiff, see attempt)
BOOTSTRAP_H_NORM = 1.0

ROSENBROCK23 = _rosenbrock23()
RODAS4 = _rodas4()
RODAS5 = _rodas5()


# ---------------------------------------------------------------------------------------------
# linear algebra of W = I/(hγ) − J, per library, whole state or per sample


class _NumpyLU:
    """LU of ``W`` by LAPACK (scipy); a batch ``(B, n, n)`` by one batched inverse (small
    blocks)."""

    def factor(self, J, scale: float):
        if J.ndim == 3:
            with np.errstate(all="ignore"):
                try:
                    return np.linalg.inv(scale * np.eye(J.shape[-1], dtype=J.dtype) - J)
                except np.linalg.LinAlgError:
                    return None
        return shifted_lu(J, scale)

    def solve(self, LU, rhs):
        if isinstance(LU, np.ndarray):  # batched inverse
            flat = rhs.reshape(len(rhs), -1)
            return np.einsum("bij,bj->bi", LU, flat).reshape(rhs.shape)
        return LU.solve(rhs)


class _TorchLU:
    """``torch.linalg.lu_factor`` / ``lu_solve``, batched over samples when ``J`` is
    ``(B, n, n)``."""

    def factor(self, J, scale: float):
        import torch

        W = scale * torch.eye(J.shape[-1], dtype=J.dtype, device=J.device) - J
        LU, piv, info = torch.linalg.lu_factor_ex(W)
        if bool((info != 0).any()) or not bool(torch.isfinite(LU).all()):
            return None
        return LU, piv

    def solve(self, LU, rhs):
        import torch

        lu, piv = LU
        flat = rhs.reshape(len(rhs), -1, 1) if lu.ndim == 3 else rhs.reshape(-1, 1)
        return torch.linalg.lu_solve(lu, piv, flat).reshape(rhs.shape)


class RosenbrockStepper(Stepper):
    """The stepper of a :class:`RosenbrockTableau` (engine protocol:
    ``attempt(t, y, h, k1) -> Trial``).

    The Jacobian comes from ``field.jac`` (the user's ``jac=``), else autograd (torch) or finite
    differences (numpy); with ``field.batched`` (``per_sample=True``) only the diagonal blocks of
    the independent samples are formed and factorised. ``stats.njev`` counts Jacobians,
    ``stats.nlu`` factorisations (a batched factorisation counts once).
    """

    explicit = False

    def __init__(self, tableau: RosenbrockTableau, field, backend):
        self.tableau, self.field, self.backend = tableau, field, backend
        self.name = tableau.name
        self.order, self.error_order = tableau.order, tableau.error_order
        self.k = min(tableau.order, tableau.error_order) + 1
        batched = bool(getattr(field, "batched", False))
        self.jacobian = jacobian_provider(field, backend, getattr(field, "jac", None), batched)
        self.linalg = _TorchLU() if backend.name == "torch" else _NumpyLU()
        tab = tableau
        self.s = tab.stages
        self.a = [tuple(map(float, tab.a[i, :i])) for i in range(self.s)]
        self.C = [tuple(map(float, tab.C[i, :i])) for i in range(self.s)]
        self.c, self.d = tuple(map(float, tab.c)), tuple(map(float, tab.d))
        # tolerance proportionality: the error measured against θ · tol is the estimate divided by θ
        rule = tab.tolerance_proportionality
        self.theta = (
            1.0 if rule is None else tolerance_factor(float(getattr(field, "rtol", 1e-6)), *rule)
        )
        self.m, self.e = tuple(map(float, tab.m)), tuple(map(float, tab.e))
        self._error_weights = None  # (h, 1/θ per component, 1 on the damped ones), once per J and h
        self.fsal = tab.fsal
        self.P_t = tab.P.T.copy()
        self.powers = np.arange(1, tab.P.shape[1] + 1)
        self._point = None  # (t, y) of the cached Jacobian
        self.J = self.f_t = None
        self._lu_h = None
        self._LU = None
        self._J_norm = None

    def jacobian_norm(self) -> float:
        """``‖J‖_∞`` (the largest over a batch), once per Jacobian: bounds ``h ρ(J)``."""
        if self._J_norm is None:
            if is_sparse(self.J):
                self._J_norm = float(abs(self.J).sum(axis=1).max()) if self.J.nnz else 0.0
            else:
                A = self.J.abs() if self.backend.name == "torch" else np.abs(self.J)
                self._J_norm = float(A.sum(-1).max())
        return self._J_norm

    def jacobian_at(self, t: float, y, k1):
        """``(J, ∂f/∂t)`` at ``(t, y)``, computed once per point (a rejected step reuses it)."""
        if self._point is None or self._point[0] != t or self._point[1] is not y:
            self.J, self.f_t = self.jacobian(t, y, k1)
            self._point, self._lu_h, self._J_norm = (t, y), None, None
            self._error_weights = None
        return self.J, self.f_t

    def error_weights(self, h: float, like):
        """The error estimate's factor per component: ``1/θ``, but 1 where ``|h J_ii| ≥``
        :data:`DAMPED_H_J` (once per Jacobian and ``h``; shaped like ``like``, the state)."""
        if self._error_weights is None or self._error_weights[0] != h:
            J = self.J
            if is_sparse(J):
                diagonal = np.asarray(J.diagonal())
            elif self.backend.name == "torch":
                diagonal = J.detach().diagonal(dim1=-2, dim2=-1)
            else:
                diagonal = np.diagonal(J, axis1=-2, axis2=-1)
            undamped = abs(h * diagonal) < DAMPED_H_J
            if self.backend.name == "torch":
                import torch

                weights = torch.where(undamped, 1.0 / self.theta, 1.0).to(like.dtype)
            else:
                weights = np.where(undamped, 1.0 / self.theta, 1.0).astype(like.dtype, copy=False)
            self._error_weights = (h, weights.reshape(like.shape))
        return self._error_weights[1]

    def attempt(self, t: float, y, h: float, k1) -> Trial:
        be, field, stats = self.backend, self.field, self.field.stats
        J, f_t = self.jacobian_at(t, y, k1)
        if self._lu_h != h:
            self._LU = self.linalg.factor(J, 1.0 / (h * self.tableau.gamma))
            self._lu_h = h
            stats.nlu += 1
        if self._LU is None:  # W singular or not finite at this h: reject, the controller shrinks h
            return _failed_trial(be, field, t, y, h)
        u, f_last = self._stages(t, y, h, k1, f_t, self._LU)
        y_new = be.lincomb(y, u, self.m)
        error = be.lincomb(None, u, self.e)
        if self.theta != 1.0:
            error = error * self.error_weights(h, error)
        slope = Slope(field, t + h, y_new, f_last if self.fsal else None)
        # bootstrapping evaluates f off the solution: its O(h^4) deviation comes back multiplied by
        # h‖J‖, harmless on a nonstiff step, ruinous on a stiff one (h‖J‖ ≫ 1)
        stiff = abs(h) * self.jacobian_norm() > BOOTSTRAP_H_NORM
        # a stiff step's dense output re-steps with this Jacobian: it keeps a reference (None
        # otherwise)
        jac = (J, f_t) if stiff or self.tableau.dense_by_substeps else None
        return Trial(y_new, error, _RosenbrockDense(self, t, h, y, k1, u, y_new, slope, jac), slope)

    def _stages(self, t, y, h, k1, f_t, LU):
        """The ``u_i`` of one step of size ``h`` (Eq. (7.4)) and ``f`` at the last stage."""
        be, field = self.backend, self.field
        u, f_last = [], None
        for i in range(self.s):
            if i == 0:
                fi = k1
            else:
                fi = field(t + self.c[i] * h, be.lincomb(y, u, self.a[i]))
                if i == self.s - 1:
                    f_last = fi
            rhs = be.lincomb(fi, (*u, f_t), (*(x / h for x in self.C[i]), self.d[i] * h))
            u.append(self.linalg.solve(LU, rhs))
        return u, f_last

    def substep(self, t, y, h: float, k1, J, f_t):
        """The state at ``t + h`` by one step of the method from ``(t, y)`` with the Jacobian at
        hand (for dense output on stiff steps: a new LU and ``s − 1`` calls of ``f``, both
        counted)."""
        LU = self.linalg.factor(J, 1.0 / (h * self.tableau.gamma))
        self.field.stats.nlu += 1
        if LU is None:
            return None
        u, _ = self._stages(t, y, h, k1, f_t, LU)
        return self.backend.lincomb(y, u, self.m)


class _RosenbrockDense:
    """Dense output on one step, three ways (each computed on first use).

    * nonstiff step (``|h| ‖J‖_∞ ≤ 1``), tableau with ``bootstrap_dense``: the bootstrapped quartic
      (one more call of ``f``), of the step's own order;
    * nonstiff step otherwise: the tableau's interpolant ``P`` (from the ``u_i``, no extra work);
    * stiff step: the tableau's interpolants lose orders in the stiff limit (RODAS's: local error
      O(h^3) instead of O(h^4) at λh → −∞; measured 1e-5 at h = 0.1 on y' = −1e6 (y − cos t), 3000×
      the step-end error), so each requested time ``t + θh`` is reached by one step of the method of
      size ``θh`` from the step's start with the same Jacobian: L-stable and of the method's order,
      at the price of an LU and ``s − 1`` calls of ``f`` per time (counted).
    """

    __slots__ = ("stepper", "t", "h", "y", "k1", "u", "y_new", "slope", "f_mid", "jac")

    def __init__(self, stepper: RosenbrockStepper, t, h, y, k1, u, y_new, slope: Slope, jac):
        self.stepper, self.t, self.h, self.y, self.k1, self.u = stepper, t, h, y, k1, u
        self.y_new, self.slope, self.f_mid, self.jac = (
            y_new,
            slope,
            None,
            jac,
        )  # jac: (J, f_t) if stiff

    def substeps(self, theta: np.ndarray):
        st, be = self.stepper, self.stepper.backend
        out = []
        for th in np.asarray(theta, dtype=np.float64):
            if th <= 0.0 or th >= 1.0:
                out.append(self.y if th <= 0.0 else self.y_new)
                continue
            y = st.substep(self.t, self.y, th * self.h, self.k1, *self.jac)
            out.append(y if y is not None else self.own(np.array([th]))[0])
        return be.stack(out)

    def own(self, theta: np.ndarray):
        st = self.stepper
        weights = (np.asarray(theta, dtype=np.float64)[:, None] ** st.powers) @ st.P_t
        return st.backend.lincomb_many(self.y, self.u, weights)

    def __call__(self, theta: np.ndarray):
        st = self.stepper
        if self.jac is not None:
            return self.substeps(theta)
        if not st.tableau.bootstrap_dense:
            return self.own(theta)
        if self.f_mid is None:
            self.f_mid = st.field(self.t + self.h / 3, self.own(np.array([1 / 3]))[0])
        data = (self.y, self.k1, self.y_new, self.slope.get(), self.f_mid)
        return st.backend.lincomb_many(
            None, data, bootstrap_weights(np.asarray(theta, float), self.h)
        )


def _failed_trial(backend, field, t, y, h) -> Trial:
    """A trial the controller rejects as non-finite (it then shrinks the step by a fixed factor)."""
    bad = backend.lincomb(None, (y,), (math.inf,))
    return Trial(y, bad, lambda theta: backend.stack([y] * len(theta)), Slope(field, t + h, y))
