"""``bdf``: variable-order (1-5) numerical differentiation formulas in backward-difference form.

The method of Shampine & Reichelt's ``ode15s`` as described in [SR] Sect. 2: the NDFs

.. math::

    \\sum_{m=1}^{k} \\frac{1}{m} \\nabla^m y_{n+1} − h f(t_{n+1}, y_{n+1})
        − κ_k γ_k \\big(y_{n+1} − y^{(0)}_{n+1}\\big) = 0,
    \\qquad γ_k = \\sum_{j=1}^{k} \\frac{1}{j},

with ``κ = (−0.1850, −1/9, −0.0823, −0.0415, 0)`` for ``k = 1 … 5`` ([SR] Table 1: the NDFs of
orders 1-4 are more efficient than the BDFs at about the same stability; order 5 is the BDF), on a
quasi-constant step: the state is kept as the backward differences ``∇^m y_n``, ``m = 0 … k + 2``,
and a change of step by ``ρ`` re-samples the interpolating polynomial at ``t_n − jρh`` (derived here
from the Newton backward form; [SR] Sect. 2.3 writes the same map as a product ``(RU)ᵀ``).

* predictor ``y^{(0)} = Σ_{m=0}^{k} ∇^m y_n``; with ``d = y_{n+1} − y^{(0)}`` the formula is
  ``(1 − κ_k) γ_k d = h f(y^{(0)} + d) − Σ_{m=1}^{k} γ_m ∇^m y_n`` ([SR] Eq. (2.4)), solved by
  simplified Newton with ``(α I − J)``, ``α = (1 − κ_k) γ_k / h``; stop when ``ρ/(1 − ρ) ‖Δ‖ ≤ κ_N``
  (``ρ`` the contraction, ``κ_N = max(10 ε / rtol, min(0.03, rtol^{1/2}))``), at most 4 iterations;
* error ``(κ_k γ_k + 1/(k + 1)) d`` (``d = ∇^{k+1} y_{n+1}``: [SR] Eq. (2.5));
* step and order: after an accepted step the step is kept until ``k + 1`` steps of one size have
  been taken (quasi-constant steps; a rejection changes it at once); then the estimates at orders
  ``k − 1`` and ``k + 1`` (from ``∇^k`` and ``∇^{k+2}``) and ``k`` each propose a step
  ``‖err_q‖^{−1/(q+1)}`` (times ``0.9 (2·4 + 1)/(2·4 + N_newt)``); the largest wins, and a growth
  below 1.2 keeps ``h``;
* Jacobian and LU reuse: ``J`` is kept across steps and refreshed only when Newton fails with a
  ``J`` that is not current (then the same step is retried); a Newton failure with a current ``J``
  halves the step (rejected, counted in ``newton_failures``). A dense ``J``: the LU is
  refactorised when ``h`` or ``k`` changes. A sparse ``J`` (``jac_sparsity=`` or a sparse
  ``jac``), where one sparse LU costs as much as thirty solves with it, follows CVODE's rules
  ([HBG] Sect. 2.1): the LU of ``α_LU I − J`` is kept while ``|α/α_LU − 1| ≤ 0.3``, each
  correction it gives scaled by ``2 α_LU / (α_LU + α)`` (which makes the iteration contract by
  ``|α − α_LU| / (α + α_LU) ≤ 0.15`` on stiff and non-stiff modes alike), and Newton's contraction
  rate is carried from step to step, so that a first correction already small against it ends
  the iteration (one call of ``f`` where two were spent). The rate is updated only on steps that
  iterate twice, so on the Brusselator (``benchmarks.bench_stiff_peers``) it stays small and
  nearly every step takes one iteration: 191 calls of ``f`` against 397, and more rejected steps
  (23 of 181 against 5 of 157), at rtol 1e-4 on 1k states, the error within the tolerance either
  way. The sparse LU is LAPACK's band LU
  when a reverse Cuthill-McKee ordering puts ``J`` in a narrow band
  (:func:`~dynkit.solvers.linalg.band_plan`), else SuperLU;
* dense output: the interpolating polynomial through ``y_{n+1}, y_n, …, y_{n+1−k}``;
* tolerance proportionality: the steps hold the local error to ``θ · (atol + rtol |y|)`` with
  ``θ = 0.25 rtol^{1/5}`` (0.1 at rtol 1e-2, 0.016 at 1e-6, 0.0025 at 1e-10). A code that controls the error
  per step at order ``k`` has a global error ``∝ tol^{k/(k+1)}`` ([HNW] II.4, [S]); ``tol^{(k+1)/k}`` restores the
  proportionality, ``k = 5`` giving the exponent ``1/5``, and the factor puts the global error within a few
  tolerances. Without it bdf returned 24-48 tolerances on HIRES at every rtol, 56-290 on OREGO below 1e-5 and up
  to 170 on Van der Pol μ = 1000 as successes (scipy's BDF alike; ``python -m benchmarks.bench_stiff
  --wrong-as-success``); with it, 0.04-3.7 tolerances on Robertson, HIRES, OREGO, VDPOL and Van der Pol
  μ = 1e3, 1e6 from rtol 1e-2 to 1e-10. The work at a given *error* is unchanged (the same steps, asked for at
  a tighter tolerance); at a given rtol it is larger. Hairer's RADAU5 transforms its tolerance for the same reason.

References
----------
.. [HBG] A. C. Hindmarsh, P. N. Brown, K. E. Grant, S. L. Lee, R. Serban, D. E. Shumaker, C. S.
   Woodward, "SUNDIALS: Suite of nonlinear and differential/algebraic equation solvers", ACM Trans.
   Math. Softw. 31 (2005) 363-396, Sect. 2.1 (CVODE's Newton iteration: the matrix kept while
   ``γ`` changes by at most 30 %, the scaled correction, the convergence rate estimate).
.. [HNW] E. Hairer, S. P. Nørsett, G. Wanner, *Solving Ordinary Differential Equations I*, 2nd ed., Springer
   1993, Sect. II.4 (tolerance proportionality).
.. [S] L. F. Shampine, "Tolerance proportionality in ODE codes", in *Numerical Methods for Ordinary Differential
   Equations*, Lecture Notes in Math. 1386, Springer 1989, 118-136.
.. [SR] L. F. Shampine, M. W. Reichelt, "The MATLAB ODE Suite", SIAM J. Sci. Comput. 18 (1997) 1-22,
   Sect. 2 (the NDFs, their backward-difference implementation, changing the step size and order).
"""  # noqa: E501

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .control import tolerance_factor as proportionality
from .explicit import Slope, Trial
from .stepper import Stepper
from .jacobian import jacobian_provider, torch_refusal
from .linalg import band_plan, shifted_lu

__all__ = [
    "MAX_ORDER",
    "NEWTON_MAX_ITERATIONS",
    "SAFETY",
    "KEEP_BELOW",
    "LU_REUSE_RATIO",
    "RATE_DECAY",
    "TOLERANCE_FACTOR",
    "TOLERANCE_EXPONENT",
    "tolerance_factor",
    "BDFMethod",
    "NDF",
    "rescale_matrix",
    "BDFStepper",
]

MAX_ORDER = 5
NEWTON_MAX_ITERATIONS = 4
SAFETY = 0.9
MIN_RATIO, MAX_RATIO = 0.2, 10.0
KEEP_BELOW = 1.2  # a proposed growth of the step below this factor keeps h (and the LU)
# a sparse J: the LU of α_LU I − J serves while |α / α_LU − 1| stays within this ([HBG]'s dgmax)
LU_REUSE_RATIO = 0.3
# a sparse J: the carried contraction rate decays by at most this factor a step ([HBG]'s 0.3
# bound on the rate estimate, which keeps one fast-converging step from vouching for the next)
RATE_DECAY = 0.3
# tolerance proportionality (module docstring): the local error is held to θ(rtol) times the user's
# tolerance, θ = TOLERANCE_FACTOR · rtol^TOLERANCE_EXPONENT (at most 1)
TOLERANCE_FACTOR = 0.25
TOLERANCE_EXPONENT = 0.2


def tolerance_factor(rtol: float) -> float:
    """``θ(rtol)``: the share of the user's tolerance that one step's local error may take."""
    return proportionality(rtol, TOLERANCE_FACTOR, TOLERANCE_EXPONENT)


@dataclass(frozen=True, eq=False)
class BDFMethod:
    """Variable-order NDF/BDF as data: ``kappa[k]`` for ``k = 1 … max_order`` (all 0: the BDFs)."""

    name: str
    kappa: tuple
    max_order: int = MAX_ORDER
    adaptive: bool = True

    @property
    def order(self) -> int:
        return self.max_order

    def gamma(self) -> np.ndarray:
        """``γ_k = Σ_{j ≤ k} 1/j`` (``γ_0 = 0``)."""
        return np.concatenate([[0.0], np.cumsum(1.0 / np.arange(1, self.max_order + 1))])

    def error_constants(self) -> np.ndarray:
        """``C_{k+1} = κ_k γ_k + 1/(k + 1)`` for ``k = 0 … max_order + 1`` ([SR] Eq. (2.5))."""
        kappa = np.concatenate([[0.0], self.kappa, [0.0]])
        gamma = np.concatenate([self.gamma(), [0.0]])
        return kappa * gamma + 1.0 / np.arange(1, self.max_order + 3)

    def make_stepper(self, field, backend):
        return BDFStepper(self, field, backend)


NDF = BDFMethod("bdf", (-0.1850, -1 / 9, -0.0823, -0.0415, 0.0))


def _rms(x: np.ndarray) -> float:
    """Root mean square of a flat array (a dot product: ``np.mean`` costs microseconds on small
    states)."""
    return math.sqrt(float(x @ x) / x.size)


def _phi(m: int, x: float) -> float:
    """``∏_{i<m} (x + i) / m!``: the weight of ``∇^m y_n`` in ``p(t_n + x h)`` (Newton backward
    form)."""
    out = 1.0
    for i in range(m):
        out *= (x + i) / (i + 1)
    return out


def rescale_matrix(order: int, ratio: float) -> np.ndarray:
    """``M`` with ``∇_new = M ∇_old`` (rows ``0 … order``) for a step changed by ``ratio``: the
    polynomial through ``y_{n−j}`` (``j = 0 … order``) re-sampled at ``t_n − j · ratio · h`` and
    differenced again."""
    k = order
    V = np.array([[_phi(m, -j * ratio) for m in range(k + 1)] for j in range(k + 1)])
    B = np.array(
        [[(-1) ** j * math.comb(m, j) for j in range(k + 1)] for m in range(k + 1)], dtype=float
    )
    return B @ V


class _LazySlope:
    """``f(t, y)`` at a step's end, evaluated (and counted) only when used: the NDFs need it only to
    start a Jacobian by differences (the base point), so most steps never call it. Behaves as the
    array where one is needed (``np.asarray``)."""

    __slots__ = ("field", "t", "y", "value")

    def __init__(self, field, t, y):
        self.field, self.t, self.y, self.value = field, t, y, None

    def get(self):
        if self.value is None:
            self.value = self.field(self.t, self.y)
        return self.value

    def __array__(self, dtype=None, copy=None):
        value = np.asarray(self.get())
        return value if dtype is None else value.astype(dtype)


def _resolve(k1):
    return k1.get() if isinstance(k1, _LazySlope) else k1


class BDFStepper(Stepper):
    """The stepper of a :class:`BDFMethod` (engine protocol plus ``accepted`` and ``step_factor``);
    numpy states, float64 arithmetic."""

    explicit = False
    # keep J across steps (module docstring); False recomputes it at every step (tests plant it to
    # show what the reuse saves)
    reuse_jacobian = True

    def __init__(self, method: BDFMethod, field, backend):
        if backend.name != "numpy":
            raise ValueError(torch_refusal(method.name))
        self.method, self.field, self.backend = method, field, backend
        self.name = method.name
        self.order, self.error_order = 1, 1  # the current order (changes)
        self.k = 2  # the controller's exponent for the initial step (order 1: error O(h^2))
        self.stats = field.stats
        self.jacobian = jacobian_provider(field, backend, getattr(field, "jac", None), False)
        self.jacobian.with_time = False
        self.shape = tuple(field.shape)
        rtol = float(getattr(field, "rtol", 1e-6))
        self.theta = tolerance_factor(rtol)
        self.rtol = (
            rtol * self.theta
        )  # the tolerance the steps work to (the engine's test sees error / θ)
        self.atol = self.theta * np.broadcast_to(
            np.asarray(getattr(field, "atol", 1e-8), float), self.shape
        ).reshape(-1)
        self.newton_tol = max(10 * np.finfo(float).eps / rtol, min(0.03, math.sqrt(rtol)))
        self.kappa = np.concatenate([[0.0], method.kappa])
        self.gamma = method.gamma()
        self.C = method.error_constants()
        self.D = None  # backward differences ∇^m y_n, m = 0 … max_order + 2, at step size self.h
        self.h = None
        self.J = None
        self.J_current = False
        self.LU = None
        self.lu_key = None
        self.sparse = False  # J is scipy.sparse: CVODE's reuse rules (module docstring)
        self.j_version = 0  # counts the Jacobians; a sparse LU records the one it factorised
        self.lu_j, self.lu_alpha = None, None
        self.rate = None  # a sparse J: Newton's contraction rate carried across steps
        self.band = None  # a sparse J with a narrow band once permuted: its plan (band LU)
        self.equal_steps = 0
        self.pending = None  # (D_new, newton iterations, y_new) of the last trial
        self.newton_failed = False

    def _rescale(self, h: float) -> None:
        if h == self.h:
            return
        k = self.order
        # a new array: the accepted steps' interpolants (dense output) hold the old one
        D = np.zeros_like(self.D)
        D[: k + 1] = (
            rescale_matrix(k, h / self.h) @ self.D[: k + 1]
        )  # differences beyond the order are dropped
        self.D = D
        self.h, self.equal_steps, self.lu_key = h, 0, None

    def _f(self, t, y_flat):
        out = self.field(t, y_flat.reshape(self.shape).astype(self.backend.dtype, copy=False))
        return np.asarray(out, dtype=np.float64).reshape(-1)

    def attempt(self, t: float, y, h: float, k1) -> Trial:
        y0 = np.asarray(y, dtype=np.float64).reshape(-1)
        if self.D is None:
            self.D = np.zeros((self.method.max_order + 3, y0.size))
            self.D[0] = y0
            self.D[1] = h * np.asarray(_resolve(k1), dtype=np.float64).reshape(-1)
            self.h = h
        self._rescale(h)
        k = self.order
        D = self.D
        t_new = t + h
        y_pred = D[: k + 1].sum(axis=0)
        psi = (self.gamma[1 : k + 1] @ D[1 : k + 1]) / ((1 - self.kappa[k]) * self.gamma[k])
        scale = self.atol + self.rtol * np.abs(y_pred)
        if not self.reuse_jacobian and not self.J_current:
            self.J = None  # planted: no reuse, a fresh J at every step
        while True:
            if self.J is None:
                self._refresh_jacobian(t, y, k1)
            alpha = (1 - self.kappa[k]) * self.gamma[k] / h
            if self._stale_lu(h, k, alpha):
                self.LU = (
                    self.band.factor(self.J, alpha)
                    if self.band is not None
                    else shifted_lu(self.J, alpha)
                )
                self.lu_key, self.lu_j, self.lu_alpha = (h, k), self.j_version, alpha
                self.stats.nlu += 1
            d, converged, iterations = (
                self._newton(t_new, y_pred, psi, alpha, scale)
                if self.LU is not None
                else (None, False, 0)
            )
            if converged or self.J_current:
                break
            self._refresh_jacobian(t, y, k1)  # a stale Jacobian: refresh it and retry the same step
        self.newton_failed = not converged
        if not converged:
            self.pending = None
            bad = np.full(self.shape, np.inf)
            return Trial(
                y, bad, lambda theta: np.stack([y] * len(theta)), Slope(self.field, t_new, y)
            )
        y_new = y_pred + d
        # the differences at t_{n+1} ([SR] Sect. 2.2): ∇^{k+1} = d, ∇^{k+2} = d − ∇^{k+1}_old, ∇^j
        # += ∇^{j+1}
        # rows 0 … k + 2 are all written below: copying only the rows beyond saves one pass over
        # the table (6 MB a step at 100k states)
        D_new = np.empty_like(D)
        D_new[k + 3 :] = D[k + 3 :]
        D_new[k + 2] = d - D[k + 1]
        D_new[k + 1] = d
        for j in range(k, -1, -1):
            D_new[j] = D[j] + D_new[j + 1]
        self.pending = (D_new, iterations, t_new)
        error = (self.C[k] / self.theta * d).reshape(self.shape)
        y_new_b = y_new.reshape(self.shape).astype(self.backend.dtype, copy=False)
        # the engine takes f(t_{n+1}, y_{n+1}) from this Slope for the next step: a lazy one (see
        # _LazySlope)
        return Trial(
            y_new_b,
            error,
            self._interpolant(D_new, k, h),
            Slope(self.field, t_new, y_new_b, _LazySlope(self.field, t_new, y_new_b)),
        )

    def _stale_lu(self, h: float, k: int, alpha: float) -> bool:
        """Whether the LU must be refactorised for the step ``h`` at order ``k`` (module
        docstring): dense, at every new ``(h, k)``; sparse, at a new ``J`` or once ``α`` has
        moved by more than :data:`LU_REUSE_RATIO` from the LU's."""
        if not self.sparse:
            return self.lu_key != (h, k)
        return self.lu_j != self.j_version or abs(alpha / self.lu_alpha - 1) > LU_REUSE_RATIO

    def _refresh_jacobian(self, t, y, k1) -> None:
        J, _ = self.jacobian(t, y, _resolve(k1))
        self.sparse = type(J).__module__.startswith("scipy.sparse")
        self.J = J if self.sparse else np.asarray(J, float).reshape(len(self.atol), len(self.atol))
        if self.sparse and (self.band is None or not self.band.covers(J)):
            # the ordering once per structure: a difference Jacobian keeps the pattern's; a user's
            # sparse jac may change it, and a J outside the band is planned again
            self.band = band_plan(J)
        self.J_current, self.lu_key = True, None
        self.j_version += 1
        self.rate = None  # the rate seen with the old J says nothing of the new one

    def _newton(self, t_new, y_pred, psi, alpha, scale):
        d = np.zeros_like(y_pred)
        y = y_pred
        norm_prev = None
        # a sparse LU factorised at another α: corrections scaled by 2 α_LU / (α_LU + α) ([HBG])
        stretch = (
            2 * self.lu_alpha / (self.lu_alpha + alpha)
            if self.sparse and self.lu_alpha != alpha
            else None
        )
        carried = self.rate if self.sparse else None
        for i in range(NEWTON_MAX_ITERATIONS):
            f = self._f(t_new, y)
            if not np.isfinite(f).all():
                return d, False, i + 1
            delta = self.LU.solve(f - alpha * (psi + d))
            if stretch is not None:
                delta *= stretch
            self.stats.newton_iterations += 1
            norm = _rms(delta / scale)
            if not math.isfinite(norm):
                return d, False, i + 1
            rate = None if norm_prev is None or norm_prev == 0 else norm / norm_prev
            if rate is not None and (
                rate >= 1
                or rate ** (NEWTON_MAX_ITERATIONS - i) / (1 - rate) * norm > self.newton_tol
            ):
                return d, False, i + 1
            if rate is not None and self.sparse:
                # [HBG]'s estimate: the rate seen, but falling by at most RATE_DECAY a step
                self.rate = rate if self.rate is None else max(RATE_DECAY * self.rate, rate)
            d = d + delta
            y = y_pred + d
            if norm == 0 or (rate is not None and rate / (1 - rate) * norm < self.newton_tol):
                return d, True, i + 1
            if (
                rate is None
                and carried is not None
                and carried / (1 - carried) * norm < (self.newton_tol)
            ):
                # a sparse J: the rate of the steps before stands in for this one's second
                # correction, which would cost a call of f and a solve ([HBG] Sect. 2.1)
                return d, True, i + 1
            if rate is None and norm < self.newton_tol * 1e-2:
                # a first correction below 1% of the Newton tolerance: the next one (smaller, if
                # Newton contracts at all) is not worth a call of f (our shortcut; [SR] always
                # iterates twice)
                return d, True, i + 1
            norm_prev = norm
        return d, False, NEWTON_MAX_ITERATIONS

    def _interpolant(self, D_new, k: int, h: float):
        shape, dtype = self.shape, self.backend.dtype

        def interpolate(theta: np.ndarray):
            x = np.asarray(theta, dtype=np.float64) - 1.0  # p(t_{n+1} + x h), x ∈ [−1, 0]
            W = np.array([[_phi(m, xi) for m in range(k + 1)] for xi in x])
            return (W @ D_new[: k + 1]).reshape((len(x), *shape)).astype(dtype, copy=False)

        return interpolate

    # -- engine hooks --------------------------------------------------------------------------

    def accepted(self, trial) -> None:
        D_new = self.pending[0]
        self.D = D_new
        self.equal_steps += 1
        self.J_current = False

    def projected(self, y) -> None:
        """The accepted state was clipped (``nonnegative=``): the predictor starts from it
        ([SR]'s ode15s keeps the differences as they are)."""
        self.D = self.D.copy()  # the step's interpolant keeps the unclipped differences
        self.D[0] = np.asarray(y, dtype=np.float64).reshape(-1)

    def step_factor(self, norm: float, accepted: bool, engine_factor: float) -> float:
        """``h_new / h`` and the next order ([SR] Sect. 2.3; module docstring)."""
        if self.newton_failed:
            self.stats.newton_failures += 1
            return 0.5
        k = self.order
        iterations = self.pending[1] if self.pending is not None else NEWTON_MAX_ITERATIONS
        fac = SAFETY * (2 * NEWTON_MAX_ITERATIONS + 1) / (2 * NEWTON_MAX_ITERATIONS + iterations)
        if not accepted:
            self.equal_steps = 0
            return max(MIN_RATIO, fac * max(norm, 1e-10) ** (-1.0 / (k + 1)))
        if self.equal_steps < k + 1:
            # quasi-constant steps: h (and the LU) change only after k + 1 steps of one size
            return 1.0
        ratios = {k: fac * max(norm, 1e-10) ** (-1.0 / (k + 1))}
        scale_norm = self._norm_fn()
        if k > 1:
            ratios[k - 1] = fac * max(self.C[k - 1] * scale_norm(self.D[k]), 1e-10) ** (-1.0 / k)
        if k < self.method.max_order:
            ratios[k + 1] = fac * max(self.C[k + 1] * scale_norm(self.D[k + 2]), 1e-10) ** (
                -1.0 / (k + 2)
            )
        new_order = max(ratios, key=ratios.get)
        ratio = min(MAX_RATIO, ratios[new_order])
        if new_order != k:
            self.order = self.error_order = new_order
            self.equal_steps = 0
            self.lu_key = None
            return max(MIN_RATIO, ratio)
        elif 1.0 <= ratio < KEEP_BELOW:
            return 1.0  # a small increase is not worth a new LU
        return max(MIN_RATIO, ratio)

    def _norm_fn(self):
        y = self.D[0]
        scale = self.atol + self.rtol * np.abs(y)
        return lambda v: _rms(v / scale)
