"""``radau5``: the 3-stage Radau IIA method of order 5, as described by Hairer & Wanner [HW] IV.8.

The method as data (:class:`RadauIIA`: nodes ``c``, matrix ``A``, and what the implementation
derives from them), the stepper (:class:`RadauStepper`) on the engine's protocol.

One step from ``(t_0, y_0)`` with step ``h`` solves the collocation system for the stage increments
``Z_i = Y_i − y_0`` ([HW] IV.8, Eq. (8.2)), ``Z = h (A ⊗ I) F(Z)``,
``F_i = f(t_0 + c_i h, y_0 + Z_i)``, by simplified Newton iterations with one Jacobian ``J`` ([HW]
Eq. (8.4)-(8.5)). In the variables ``W = (T⁻¹ ⊗ I) Z``, with
``T⁻¹ A⁻¹ T = diag(γ̂, [[α̂, −β̂], [β̂, α̂]])`` (one real and a complex pair of eigenvalues of
``A⁻¹``), the ``3n`` linear system splits into one real system with ``E_1 = γ̂/h I − J`` and one
complex with ``E_2 = (α̂ + iβ̂)/h I − J`` ([HW] Eq. (8.14)-(8.16)): two LU factorisations per step
size (a complex one of size ``n``), counted together as one ``nlu``.

* Newton: the iteration stops when ``η_k ‖ΔW_k‖ ≤ κ``, ``η_k = θ_k / (1 − θ_k)``,
  ``θ_k = ‖ΔW_k‖ / ‖ΔW_{k−1}‖`` ([HW] Eq. (8.10)-(8.13)),
  ``κ = max(10 ε / rtol, min(0.03, rtol^{1/2}))``; it fails (the step is rejected and halved, with a
  fresh Jacobian if the one in use is old) when ``θ_k ≥ 1``, when the contraction predicts no
  convergence within ``k_max = 7`` iterations (``θ_k^{k_max − k} / (1 − θ_k) ‖ΔW_k‖ > κ``), or after
  ``k_max`` iterations. The first iterate is the previous step's collocation polynomial extrapolated
  ([HW] Eq. (8.12)), zero on the first step. Ours: the iteration goes on (within ``k_max``) until
  ``η_k ‖ΔW_k‖ ≤ κ · min(1, max(10 ‖err‖, 10⁻²))`` with ``‖err‖`` the last accepted step's error
  estimate, accepting [HW]'s ``κ`` only when the iterations run out (the step size and the
  Jacobian's reuse go by the iterations to ``κ``; a contraction ``θ ≥ 1`` in the extra iterations
  fails the step as in [HW]). The tighter stop is never below the rounding level ``10 ε / rtol`` of
  [HW]'s ``κ``: below it, at rtol 1e-10, the extra iterations stalled in rounding (``θ ≥ 1``), and
  the failed steps were halved until ``max_steps`` on a 10-state linear system. Where the step size
  is limited by Newton's convergence, not accuracy, the truncation error is far below the tolerance
  (1e-3 of it on Robertson's late phase), and an iteration stopped at ``κ`` of the tolerance leaves
  an error larger than the step's own in components far below ``atol``: on Robertson at rtol 1e-3,
  atol (1e-5, 1e-11, 1e-5) it pushed y1 (~1e-8) negative, from where the equations blow up (y1' ≈
  −4.8e-4 y1² on the slow manifold), and the solve returned y1 = −2e7 as a success (scipy's Radau,
  with [HW]'s test, returns −1.3e7). Steps with ``‖err‖ ≥ 0.1`` keep [HW]'s ``κ``; measured cost ≤ 9
  % more calls of ``f`` at rtol 1e-4 (HIRES, OREGO, Van der Pol), none at 1e-6 and 1e-8.
* Error estimate ([HW] Eq. (8.19)-(8.20)): the embedded formula
  ``ŷ_1 = y_0 + h(γ_0 f(y_0) + Σ b̂_i f(Y_i))`` of order 3, ``γ_0 = 1/γ̂``, gives
  ``ŷ_1 − y_1 = γ_0 h f(y_0) + Σ e_i Z_i``; the estimate is ``err = (I − hγ_0 J)⁻¹ (ŷ_1 − y_1)``
  (with ``E_1``: no new factorisation), and on the first step and after a rejection, if
  ``‖err‖ > 1``, the refined ``(I − hγ_0 J)⁻¹ (γ_0 h f(y_0 + err) + Σ e_i Z_i)`` (one more call of
  ``f``).
* Step size ([HW] IV.8, "Step size selection"): ``h_new = fac · h · ‖err‖^{−1/4}`` with
  ``fac = 0.9 (2 k_max + 1) / (2 k_max + N_newt)``, and after an accepted step the smaller of that
  and Gustafsson's predictive controller
  ``fac · h · (h_n / h_{n−1}) (‖err_{n−1}‖ / ‖err_n‖)^{1/4} ‖err_n‖^{−1/4}`` ([HW] Eq. (8.25));
  ``h_new / h ∈ [1/5, 8]``, no growth right after a rejection.
* Reuse: after an accepted step the Jacobian is kept when Newton contracted fast (``θ ≤ 10⁻³``, [HW]
  IV.8) or converged within two iterations (ours: see :meth:`RadauStepper.step_factor`), and then,
  if the new step would be within ``[1, 1.2]`` times the old, the step is kept as it is so that the
  LU can be reused too ([HW] IV.8, "Some implementation details").
* Dense output: the collocation polynomial through ``(0, 0), (c_i, Z_i)`` ([HW] Eq. (8.9)) is of
  order 3 only, and radau5's steps are long (measured: 7e-4 inside the steps of
  ``y' = −1e6 (y − cos t)`` at rtol 1e-6, 1e-8 at their ends). So each requested time ``t_0 + θh``
  inside a step is reached by one step of the method of size ``θh`` from ``y_0`` with the step's
  Jacobian (a new LU pair and 1-3 Newton iterations, counted; Newton starts from the collocation
  polynomial, which is also the fallback if it does not converge): order 5, L-stable. Output times
  inside steps therefore cost work: ask for the times you need.

``sol.stats``: ``nfe`` (every call of ``f``, the Jacobian's differences included), ``njev``, ``nlu``
(one per pair ``E_1``, ``E_2``) and ``newton_iterations``; ``newton_failures`` counts the steps
rejected because Newton did not converge.

References
----------
.. [HW] E. Hairer, G. Wanner, *Solving Ordinary Differential Equations II: Stiff and
   Differential-Algebraic Problems*, 2nd ed., Springer 1996: Sect. IV.5 (Radau IIA, Table 5.6),
   Sect. IV.8 (implementation of implicit Runge–Kutta methods).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field as dataclass_field

import numpy as np

from .explicit import Slope, Trial
from .stepper import Stepper
from .jacobian import is_sparse, jacobian_provider, torch_refusal
from .linalg import shifted_lu

__all__ = [
    "NEWTON_MAX_ITERATIONS",
    "SAFETY",
    "REUSE_JACOBIAN_THETA",
    "FIRST_ITERATE_MAX",
    "KEEP_STEP",
    "NEWTON_SHARE_FLOOR",
    "NEWTON_SHARE_ERROR",
    "radau_nodes",
    "collocation_matrix",
    "RadauIIA",
    "RADAU5",
    "RadauStepper",
]

NEWTON_MAX_ITERATIONS = 7
SAFETY = 0.9
REUSE_JACOBIAN_THETA = 1e-3  # Newton contraction below which J is kept for the next step
FIRST_ITERATE_MAX = (
    1.0  # a one-iteration Newton is accepted only if its correction is at most this (scaled)
)
KEEP_STEP = (1.0, 1.2)  # proposed h_new / h in this range: keep h (and the LU)
MIN_RATIO, MAX_RATIO = 0.2, 8.0
# Newton stops at κ times the last accepted step's error norm (not below this share of κ): see
# _newton
NEWTON_SHARE_FLOOR = 1e-2
NEWTON_SHARE_ERROR = 0.1  # ... on steps whose error was below this (above it: [HW]'s κ as it is)


def radau_nodes(stages: int) -> np.ndarray:
    """Radau IIA nodes: the zeros of ``d^{s−1}/dx^{s−1} (x^{s−1} (x − 1)^s)`` ([HW] IV.5, Eq.
    (5.3))."""
    p = (
        np.polynomial.Polynomial([0, 1]) ** (stages - 1)
        * np.polynomial.Polynomial([-1, 1]) ** stages
    )
    c = np.sort(p.deriv(stages - 1).roots().real)
    c[-1] = 1.0
    return c


def collocation_matrix(c: np.ndarray) -> np.ndarray:
    """``a_ij = ∫_0^{c_i} ℓ_j(τ) dτ`` with ``ℓ_j`` the Lagrange basis on the nodes (collocation,
    [HW] IV.5)."""
    s = len(c)
    V = np.vander(c, s, increasing=True)  # V[i, p] = c_i^p
    coeffs = np.linalg.inv(V)  # ℓ_j(τ) = Σ_p coeffs[p, j] τ^p
    powers = np.arange(1, s + 1)
    return (c[:, None] ** powers / powers) @ coeffs


@dataclass(frozen=True, eq=False)
class RadauIIA:
    """A Radau IIA method as data: ``c`` and ``A`` (``b`` is ``A``'s last row: stiffly accurate).

    Everything else is derived here: the transformation ``T`` to the real/complex eigenvalues of
    ``A⁻¹`` (three stages: one real ``γ̂`` and a pair ``α̂ ± iβ̂``), the error weights ``e``
    ([HW] Eq. (8.19)) and the dense-output weights. ``order``/``error_order`` are what the method
    claims (tests measure them).
    """

    name: str
    order: int
    error_order: int
    c: np.ndarray
    A: np.ndarray
    adaptive: bool = True
    T: np.ndarray = dataclass_field(init=False, repr=False)
    T_inv: np.ndarray = dataclass_field(init=False, repr=False)
    gamma: float = dataclass_field(init=False)  # γ̂, the real eigenvalue of A⁻¹
    alpha_beta: complex = dataclass_field(init=False)  # α̂ + iβ̂, the complex one with β̂ > 0
    e: np.ndarray = dataclass_field(init=False, repr=False)

    def __post_init__(self):
        A_inv = np.linalg.inv(self.A)
        lam, V = np.linalg.eig(A_inv)
        real = int(np.argmin(np.abs(lam.imag)))
        pair = [i for i in range(3) if i != real and lam[i].imag > 0][0]
        u = V[:, real].real
        w = V[:, pair]
        # A⁻¹ (x + iy) = (α + iβ)(x + iy): A⁻¹ x = αx − βy, A⁻¹ y = βx + αy, so in the basis (u, x,
        # y) T⁻¹ A⁻¹ T = diag(γ, [[α, β], [−β, α]])
        T = np.stack([u, w.real, w.imag], axis=1)
        object.__setattr__(self, "T", T)
        object.__setattr__(self, "T_inv", np.linalg.inv(T))
        object.__setattr__(self, "gamma", float(lam[real].real))
        object.__setattr__(self, "alpha_beta", complex(lam[pair]))
        # embedded order-3 weights with b̂_0 = γ_0 = 1/γ̂: γ_0 [q = 1] + Σ b̂_i c_i^{q−1} = 1/q, q =
        # 1, 2, 3
        gamma0 = 1.0 / self.gamma
        q = np.arange(1, 4)
        b_hat = np.linalg.solve(self.c[None, :] ** (q[:, None] - 1), 1.0 / q - gamma0 * (q == 1))
        # ŷ − y = hγ_0 f_0 + h Σ (b̂_i − b_i) f(Y_i) and h F = (A⁻¹ ⊗ I) Z: e = (b̂ − b)ᵀ A⁻¹
        object.__setattr__(self, "e", (b_hat - self.A[-1]) @ A_inv)

    @property
    def stages(self) -> int:
        return len(self.c)

    def dense_weights(self, theta: np.ndarray) -> np.ndarray:
        """Weights ``w[m, i]`` of ``Z_i`` in the collocation polynomial ``u(θ_m) − y_0`` ([HW]
        Eq. (8.9))."""
        s = self.stages
        V = self.c[:, None] ** np.arange(1, s + 1)  # nodes c_i, powers θ^1..θ^s (zero at θ = 0)
        return (np.asarray(theta, float)[:, None] ** np.arange(1, s + 1)) @ np.linalg.inv(V)

    def make_stepper(self, field, backend):
        return RadauStepper(self, field, backend)


def _radau5() -> RadauIIA:
    c = radau_nodes(3)
    return RadauIIA("radau5", 5, 3, c, collocation_matrix(c))


RADAU5 = _radau5()


class RadauStepper(Stepper):
    """The stepper of a :class:`RadauIIA` (engine protocol: ``attempt``, ``error_norm``,
    ``accepted``, ``step_factor``); numpy states (the arithmetic in float64, ``f`` called with
    the state's dtype)."""

    explicit = False

    def __init__(self, method: RadauIIA, field, backend):
        if backend.name != "numpy":
            raise ValueError(torch_refusal(method.name))
        if method.stages != 3:
            raise ValueError(
                f"RadauStepper implements 3-stage Radau IIA, got {method.stages} stages"
            )
        self.method, self.field, self.backend = method, field, backend
        self.name, self.order, self.error_order = method.name, method.order, method.error_order
        self.k = method.error_order + 1  # the controller's exponent: ‖err‖ = O(h^4)
        self.stats = field.stats
        self.jacobian = jacobian_provider(field, backend, getattr(field, "jac", None), False)
        self.jacobian.with_time = False  # Radau needs no ∂f/∂t: no call of f for it
        self.shape = tuple(field.shape)
        rtol = float(getattr(field, "rtol", 1e-6))
        atol = getattr(field, "atol", 1e-8)
        self.rtol = rtol
        self.atol = np.broadcast_to(np.asarray(atol, float), self.shape).reshape(-1)
        eps = float(np.finfo(np.float64).eps)
        self.kappa_floor = 10 * eps / rtol  # the rounding level
        self.kappa = max(self.kappa_floor, min(0.03, math.sqrt(rtol)))
        self.c = method.c
        self.T, self.T_inv = method.T, method.T_inv
        self.gamma, self.alpha_beta = method.gamma, method.alpha_beta
        self.dd = method.e * method.gamma  # e / γ_0
        self.J = None
        self.J_point = None  # (t, id of y) where J was taken
        self.J_fresh = False  # J taken at the current step's start
        self.lu_h = None
        self.LU1 = self.LU2 = None
        self.eta = (
            1.0  # η of the last converged Newton iteration ([HW] Eq. (8.13)); 1: nothing known yet
        )
        self.theta = 1.0  # the last measured contraction θ (decides the Jacobian's reuse)
        self.previous = None  # (h, coefficients of the last accepted step's collocation polynomial)
        self.first = True
        self.rejected_last = False
        self.err_last = None  # (h, ‖err‖) of the last accepted step, for Gustafsson's controller
        self.newton_share = (
            1.0  # Newton stops at κ · this: min(1, max(‖err‖ of the last step, floor))
        )
        self.newton_failed = False
        self.newton_iterations = 0
        self.refresh_jacobian = True
        self._step = None
        self._h = None
        self._iterations_before = 0
        self.kappa_iterations = (
            None  # iterations of the last Newton to reach [HW]'s κ (None: never reached)
        )

    def restart(self) -> None:
        """Forget the previous steps (``method="auto"`` switching back to this stepper): a fresh
        Jacobian, no extrapolated Newton start, no step-size history."""
        self.previous = self.err_last = None
        self.newton_share = 1.0
        self.refresh_jacobian, self.first, self.rejected_last = True, True, False
        self.eta, self.theta = 1.0, 1.0

    # -- linear algebra ---------------------------------------------------------------------------

    def _factor(self, h: float) -> bool:
        """LU of ``E_1 = γ̂/h I − J`` and ``E_2 = (α̂ + iβ̂)/h I − J``; False if singular."""
        self.stats.nlu += 1
        self.lu_h = h
        self.LU1, self.LU2 = (
            shifted_lu(self.J, self.gamma / h),
            shifted_lu(self.J, self.alpha_beta / h),
        )
        if self.LU1 is None or self.LU2 is None:
            self.LU1 = self.LU2 = None
            return False
        return True

    # -- one step -----------------------------------------------------------------------------

    def _f(self, t: float, y_flat: np.ndarray) -> np.ndarray:
        out = self.field(t, y_flat.reshape(self.shape).astype(self.backend.dtype, copy=False))
        return np.asarray(out, dtype=np.float64).reshape(-1)

    def attempt(self, t: float, y, h: float, k1) -> Trial:
        y0 = np.asarray(y, dtype=np.float64).reshape(-1)
        f0 = np.asarray(k1, dtype=np.float64).reshape(-1)
        if self.refresh_jacobian or self.J is None:
            J, _ = self.jacobian(t, y, k1)
            self.J = (
                J if is_sparse(J) else np.asarray(J, dtype=np.float64).reshape(y0.size, y0.size)
            )
            self.J_point, self.lu_h, self.refresh_jacobian = (t, y), None, False
        # a Jacobian kept from an earlier point (Newton contracted fast there) is not "fresh"
        self.J_fresh = self.J_point[0] == t and self.J_point[1] is y
        self._h = h
        if self.lu_h != h and not self._factor(h):
            return self._failed(t, y, h)
        Z, converged = self._newton(t, y0, h, self._starting_stages(h, y0.size), self.LU1, self.LU2)
        self.newton_failed = not converged
        if not converged:
            return self._failed(t, y, h)
        y_new = y0 + Z[2]
        rhs = f0 + (self.dd @ Z) / h
        err = self.LU1.solve(rhs)
        self._step = (t, h, y0, Z)
        y_new_b = y_new.reshape(self.shape).astype(self.backend.dtype, copy=False)
        trial = Trial(
            y_new_b,
            err.reshape(self.shape),
            self._interpolant(t, y0, h, Z),
            Slope(self.field, t + h, y_new_b),
        )
        trial.error2 = (t, y0, Z, h)  # for the refined estimate in error_norm
        return trial

    def _starting_stages(self, h: float, n: int) -> np.ndarray:
        """Newton's first iterate: the last collocation polynomial extrapolated ([HW] Eq.
        (8.12)), or 0."""
        if self.previous is None:
            return np.zeros((3, n))
        h_prev, K = self.previous
        theta = 1.0 + self.c * h / h_prev
        P = theta[:, None] ** np.arange(1, 4)
        return P @ K - (K.sum(axis=0))[None, :]  # u(1 + c_i h / h_prev) − u(1), u's increments

    def _newton(
        self, t: float, y0: np.ndarray, h: float, Z: np.ndarray, LU1, LU2, record: bool = True
    ):
        """Simplified Newton on the transformed stages from ``Z``; ``(Z, converged)``.
        ``record``: keep the contraction (θ, η) for the next step (not for the sub-steps of dense
        output)."""
        c = self.c
        W = self.T_inv @ Z
        scale = self.atol + self.rtol * np.abs(y0)
        g, ab = self.gamma / h, self.alpha_beta / h
        a, b = ab.real, ab.imag
        eta = max(self.eta, np.finfo(float).eps) ** 0.8
        # stop here (≤ κ: see newton_share), never below the rounding level 10 ε / rtol of [HW]'s κ
        target = max(self.kappa * self.newton_share, self.kappa_floor)
        norm_prev = None
        met_kappa = False  # η ‖ΔW‖ ≤ κ reached ([HW]'s test), if not yet the tighter target
        if record:
            self.kappa_iterations = None
        for k in range(NEWTON_MAX_ITERATIONS):
            F = np.empty_like(Z)
            for i in range(3):
                F[i] = self._f(t + c[i] * h, y0 + Z[i])
            if not np.isfinite(F).all():
                return Z, False
            TF = self.T_inv @ F
            # the transformed right-hand sides −(Λ/h) W + T⁻¹ F, Λ = diag(γ̂, [[α̂, β̂], [−β̂, α̂]])
            r1 = TF[0] - g * W[0]
            r2 = TF[1] - (a * W[1] + b * W[2])
            r3 = TF[2] - (-b * W[1] + a * W[2])
            dW1 = LU1.solve(r1)
            # the 2n real system with the block [[α̂, β̂], [−β̂, α̂]]/h ⊗ I − I ⊗ J is, in v = ΔW_2
            # − iΔW_3, (α̂ + iβ̂)/h v − J v = r_2 − i r_3
            v = LU2.solve(r2 - 1j * r3)
            dW = np.array([dW1, v.real, -v.imag])
            self.stats.newton_iterations += 1
            if record:
                self.newton_iterations += 1
            scaled = (dW / scale).ravel()
            norm = math.sqrt(float(scaled @ scaled) / scaled.size)
            if not math.isfinite(norm):
                return Z, False
            if norm_prev is not None:
                theta = norm / norm_prev if norm_prev > 0 else 0.0
                if record:
                    self.theta = theta
                if theta >= 1.0:
                    return Z, False
                left = NEWTON_MAX_ITERATIONS - 1 - k
                if theta**left / (1.0 - theta) * norm > self.kappa:
                    return Z, False
                eta = theta / (1.0 - theta)
            W = W + dW
            Z = self.T @ W
            # after one iteration (no contraction measured yet) η_0 comes from the last step; we
            # also ask the correction itself to be within tolerance (‖ΔW_0‖ ≤ 1), so that a rate
            # measured on a nearly linear step cannot pass a first iterate far off (a guard of ours,
            # not in [HW])
            trusted = norm_prev is not None or norm <= FIRST_ITERATE_MAX
            if trusted and eta * norm <= self.kappa and not met_kappa:
                met_kappa = True
                # the step size and the Jacobian's reuse go by [HW]'s count, not the extra
                # iterations
                if record:
                    self.kappa_iterations = k + 1
            if norm == 0.0 or (eta * norm <= target and trusted):
                if record:
                    self.eta = eta
                return Z, True
            norm_prev = norm
        if (
            met_kappa
        ):  # out of iterations short of the tighter target but within [HW]'s κ: converged
            if record:
                self.eta = eta
            return Z, True
        return Z, False

    def _interpolant(self, t: float, y0: np.ndarray, h: float, Z: np.ndarray):
        """Dense output on the step (module docstring): a sub-step of size ``θh`` per requested
        time."""
        shape, dtype = self.shape, self.backend.dtype
        J = self.J

        def interpolate(theta: np.ndarray):
            out = [
                self._substep(t, y0, h, Z, J, float(th))
                for th in np.asarray(theta, dtype=np.float64)
            ]
            return np.stack(out).reshape((len(out), *shape)).astype(dtype, copy=False)

        return interpolate

    def _substep(self, t, y0, h, Z, J, theta: float) -> np.ndarray:
        """``y(t + θh)`` by one step of the method of size ``θh`` from the step's start with the
        step's Jacobian (its own LU pair and Newton iterations, counted), started from the
        collocation polynomial; the collocation polynomial itself where that Newton does not
        converge."""
        collocation = y0 + self.method.dense_weights(np.array([theta]))[0] @ Z
        if theta <= 0.0 or theta >= 1.0:
            return y0 if theta <= 0.0 else y0 + Z[2]
        saved = self.J, self.LU1, self.LU2, self.lu_h
        try:
            self.J = J
            hs = theta * h
            if not self._factor(hs):
                return collocation
            start = self.method.dense_weights(theta * self.c) @ Z  # u(θ c_i) − y_0
            Zs, ok = self._newton(t, y0, hs, start, self.LU1, self.LU2, record=False)
            return y0 + Zs[2] if ok else collocation
        finally:
            self.J, self.LU1, self.LU2, self.lu_h = saved

    def _failed(self, t, y, h) -> Trial:
        self.newton_failed = True
        bad = np.full(self.shape, np.inf)
        return Trial(y, bad, lambda theta: np.stack([y] * len(theta)), Slope(self.field, t + h, y))

    # -- engine hooks --------------------------------------------------------------------------

    def error_norm(self, trial, norm):
        value = norm(trial.error)
        if self.newton_failed:
            return np.asarray(math.inf)
        if float(np.max(value)) > 1.0 and (self.first or self.rejected_last):
            # refined estimate ([HW] Eq. (8.20)): one more call of f, through the stiff modes'
            # damping
            t, y0, Z, h = trial.error2
            err = trial.error.reshape(-1)
            f_pert = self._f(t, y0 + err)
            err = self.LU1.solve(f_pert + (self.dd @ Z) / h)
            trial.error = err.reshape(self.shape)
            value = norm(trial.error)
        return value

    def accepted(self, trial) -> None:
        _, h, _, Z = self._step
        # the collocation polynomial u(θ) − y_0 = Σ_p θ^p K_p, for the next step's first Newton
        # iterate
        V = self.c[:, None] ** np.arange(1, 4)
        self.previous = (h, np.linalg.solve(V, Z))

    def step_factor(self, norm: float, accepted: bool, engine_factor: float) -> float:
        """``h_new / h`` ([HW] IV.8, step-size selection; module docstring)."""
        if self.newton_failed:
            self.rejected_last = True
            if not self.J_fresh:
                self.refresh_jacobian = True
            self.stats.newton_failures += 1
            return 0.5
        h = self._h
        iterations = self._iterations_this_step()
        if (
            self.kappa_iterations is not None
        ):  # iterations to [HW]'s κ (those beyond it only sharpen Z)
            iterations = min(iterations, self.kappa_iterations)
        fac = SAFETY * (2 * NEWTON_MAX_ITERATIONS + 1) / (2 * NEWTON_MAX_ITERATIONS + iterations)
        err = max(norm, 1e-10)
        ratio = fac * err**-0.25
        if accepted:
            if self.err_last is not None:  # Gustafsson's predictive controller ([HW] Eq. (8.25))
                h_last, err_last = self.err_last
                ratio = min(ratio, fac * (h / h_last) * (err_last / err) ** 0.25 * err**-0.25)
            self.err_last = (h, max(err, 1e-2))
            self.newton_share = min(1.0, max(norm / NEWTON_SHARE_ERROR, NEWTON_SHARE_FLOOR))
            ratio = min(MAX_RATIO, max(MIN_RATIO, ratio))
            if self.rejected_last:
                ratio = min(ratio, 1.0)
            self.first = self.rejected_last = False
            # J is kept unless Newton was slow: more than two iterations at a rate above 1e-3. [HW]
            # refresh it whenever θ > 1e-3; with difference Jacobians (θ of an approximate J) that
            # meant one per step or two, and a Jacobian that let Newton converge in two iterations
            # is good enough
            if iterations <= 2 or self.theta <= REUSE_JACOBIAN_THETA:
                if KEEP_STEP[0] <= ratio <= KEEP_STEP[1]:
                    ratio = 1.0  # same h: the LU is reused as well
            else:
                self.refresh_jacobian = True
            return ratio
        # rejected for its error
        ratio = 0.1 if self.first else min(MAX_RATIO, max(MIN_RATIO, ratio))
        self.rejected_last = True
        if not self.J_fresh:
            self.refresh_jacobian = True
        return ratio

    def _iterations_this_step(self) -> int:
        count = self.newton_iterations - self._iterations_before
        self._iterations_before = self.newton_iterations
        return max(count, 1)
