"""Why a solve failed, or is about to go wrong: the diagnoses behind the loops' messages and
warnings.

* :class:`AmplificationMonitor`: a fixed-step solve whose steps amplify instead of following the
  solution (:class:`~dynkit.solvers.StepTooLarge`), and a step outside the method's stability
  region (:class:`~dynkit.solvers.StepSizeWarning`), from values every step has anyway;
* :func:`max_steps_failure`: a :class:`~dynkit.solvers.MaxStepsExceeded` that says whether the last
  steps chatter across a discontinuity of ``f``, are limited by float32 precision, or look stiff
  (a few counted calls of ``f``, only on failure);
* :func:`underflow_message`, :func:`range_edge_message`: what a step-size underflow, or a state at
  the edge of its dtype's range, means.

Both the Python loops (:mod:`dynkit.solvers.engine`) and the compiled path
(:mod:`dynkit.solvers.compiled`) build their failures with these functions.
"""

from __future__ import annotations

import contextlib
import math
import sys
import warnings
from typing import Callable

import numpy as np

from .errors import MaxStepsExceeded, SolverError, StepSizeWarning, StepTooLarge
from .stability import stability_polynomial
from .tableaus import RungeKuttaTableau

__all__ = [
    "OVERFLOW_STALLS",
    "AmplificationMonitor",
    "max_steps_failure",
    "range_edge_message",
    "stability_function",
    "unchanged",
    "underflow_message",
    "warn_if_unstable",
]

# h * (spectral radius estimate) above which the last steps of an explicit method look
# stability-limited
STIFF_H_LAMBDA = 1.5
# h * |Δf| / |Δy| above which a fixed step is warned about (explicit RK stability intervals are
# ~2-3)
UNSTABLE_H_LAMBDA = 3.0
# An underflowed step is blamed on the time variable's resolution when 16 ulps of t exceed this
# share of the span
TIME_RESOLUTION_SHARE = 1e-8
# |f| along the motion on both sides of a bisected reversal above this share: f jumps (chattering)
JUMP_SHARE = 0.1
# A fixed-step solve fails (StepTooLarge) after AMPLIFYING_RUN consecutive steps whose changes |Δy|
# and |Δf| grew by AMPLIFYING_GROWTH or more while h * |Δf| / |Δy| > AMPLIFYING_H_LAMBDA (1: the
# step is longer than the solution's local time scale; below the real stability intervals of every
# method here, ark4's ~1.35 the smallest, and a stable step makes a decaying mode's changes shrink)
AMPLIFYING_H_LAMBDA = 1.0
# ... and, for a growing mode (Δf·Δy > 0, genuine growth or a blow-up), h * |Δf| / |Δy| > 2: there
# even RK4 misses e^{hλ} by 5 % per step, Euler by a factor 2.5
GROWING_H_LAMBDA = 2.0
AMPLIFYING_GROWTH = 1.01
AMPLIFYING_RUN = 3
# A fixed step is warned about when an eigenvalue estimate λ of ∂f/∂y with Re λ <
# -UNSTABLE_MODE_DECAY |λ| (a mode that decays) has |R(hλ)| > 1 and |R(hλ)|^(number of steps) >=
# UNSTABLE_MODE_GROWTH: over the solve the mode grows by 10 % or more where it should shrink
UNSTABLE_MODE_DECAY = 1e-3
UNSTABLE_MODE_GROWTH = 1.1
# An adaptive solve fails (NonFiniteState) after this many accepted steps that changed nothing (the
# step below the state's precision) between trials that overflowed: the state sits at the edge of
# its dtype's range
OVERFLOW_STALLS = 3


class AmplificationMonitor:
    """Notices a fixed-step solve whose steps amplify instead of following the solution.

    From the values every step has anyway (``y``, ``y_new`` and the slopes ``f`` at both ends) it
    forms ``λ_h = |h|·|Δf|/|Δy|``, the step times the secant Lipschitz constant along the step: the
    scale on which the solution changes, measured in steps. A step resolves the solution when
    ``λ_h`` is small; a stable step on a decaying mode (``λ_h`` up to the method's stability
    interval: 2 for Euler, 2.79 for RK4, about 1.35 for ARK4) makes the changes ``|Δy|`` and
    ``|Δf|`` shrink. When ``λ_h > 1`` (``λ_h > 2`` for a mode growing along the steps,
    ``h Δf·Δy > 0``: the sign of ``h`` reads the direction of time) *and* both grow on
    :data:`AMPLIFYING_RUN` consecutive steps (by 1 % or more each), the states are the method's, not
    the solution's: a decaying mode amplified beyond the stability interval (``h Δf·Δy < 0``), or a
    solution growing faster than the step can follow (``h Δf·Δy > 0``: a finite-time blow-up, where
    the ratio of successive changes itself grows). It costs three reductions over the state per step
    (one device sync for torch) and no call of ``f``.
    """

    def __init__(self, backend, rec, h: float, stability=None, n_total: int = 1):
        self.backend, self.rec, self.h, self.signed_h = backend, rec, abs(h), h
        self.prev_change = self.prev_slope_change = 0.0
        self.run = 0
        self.first_t = None
        self.h_lambda = 0.0  # the last step's |h|·|Δf|/|Δy| (read by the stability warning)
        self.stability, self.n_total = stability, n_total
        self.previous = None  # the last step's (Δy, Δf, Δy·Δy, Δy·Δf) for the Ritz values
        self.warned = False  # one stability warning per solve

    def check(self, t: float, t_new: float, y, y_new, k, k_new) -> None:
        if self.stability is not None and not self.warned:
            change, slope_change, dot = self._check_eigenvalues(t_new, y, y_new, k, k_new)
        else:
            change, slope_change, dot = _change_norms(self.backend, y, y_new, k, k_new)
        h_lambda = (
            self.h * slope_change / change if change > 0 else math.inf if slope_change > 0 else 0.0
        )
        self.h_lambda = h_lambda
        growth = change / self.prev_change if self.prev_change > 0 else math.inf
        # the slope's change must grow too: a slow mode whose change grows genuinely beside a stiff
        # mode that decays (and makes λ_h large) shrinks the slope's change
        slope_growth = (
            slope_change / self.prev_slope_change if self.prev_slope_change > 0 else math.inf
        )
        growing = dot * self.signed_h > 0  # the mode grows along the steps (h < 0: backward)
        threshold = GROWING_H_LAMBDA if growing else AMPLIFYING_H_LAMBDA
        if (
            h_lambda > threshold
            and min(growth, slope_growth) >= AMPLIFYING_GROWTH
            and math.isfinite(change)
        ):
            self.run += 1
            self.first_t = t if self.run == 1 else self.first_t
        else:
            self.run = 0
        self.prev_change, self.prev_slope_change = change, slope_change
        if self.run < AMPLIFYING_RUN:
            return
        what = (
            "a decaying (stiff) mode amplified: the step is beyond the method's stability interval"
            if not growing
            else "the solution grows faster than the step can follow (a finite-"
            "time blow-up, or "
            "growth the step cannot resolve)"
        )
        raise self.rec.failure(
            StepTooLarge,
            f"step_size={self.h:g} is too large for this solution: from t={self.first_t:.6g} to "
            f"t={t_new:.6g} each step's change |Δy| grew (×{growth:.3g} on the last) with "
            f"|h|·|Δf|/|Δy| ≈ "
            f"{h_lambda:.3g} > {threshold:g} — {what}; the states from t={self.first_t:.6g} "
            f"on are not "
            f"the solution. Take a smaller step, an adaptive method, or a stiff one "
            f"(method='rodas4' or 'auto')",
            t,
        )

    def _check_eigenvalues(self, t_new: float, y, y_new, k, k_new) -> tuple[float, float, float]:
        """Ritz values of ``J`` from the last two steps' changes, checked against the stability
        region.

        ``Δy`` and ``Δf ≈ J Δy`` are what power iteration with the step map ``R(hJ)`` produces for
        free: the mode that the steps amplify most comes to dominate ``Δy``. The 2×2 projection
        ``(YᵀY)⁻¹ YᵀF`` of ``J`` on ``Y = [Δy_prev, Δy]`` (``F = [Δf_prev, Δf]``) gives a real
        eigenvalue or a complex pair; a decaying mode (``Re(hλ) < 0``: ``Re λ < 0`` forward in time,
        ``> 0`` backward) with ``|R(hλ)| > 1`` grows where it should decay, warned about (once) when
        it would grow by :data:`UNSTABLE_MODE_GROWTH` or more over the solve's steps. No call of
        ``f``; three more reductions per step than the amplification test (one device sync for
        torch).
        """
        backend = self.backend
        if backend.name == "torch":
            torch = sys.modules["torch"]
            with torch.no_grad():
                dy, df = (y_new - y).reshape(-1).double(), (k_new - k).reshape(-1).double()
                prods = [dy @ dy, df @ df, dy @ df]
                if self.previous is not None:
                    a, fa = self.previous[0], self.previous[1]
                    prods += [a @ dy, a @ df, dy @ fa]
                values = torch.stack(prods).tolist()
        else:
            dy, df = (y_new - y).reshape(-1), (k_new - k).reshape(-1)
            values = [float(dy @ dy), float(df @ df), float(dy @ df)]
            if self.previous is not None:
                a, fa = self.previous[0], self.previous[1]
                values += [float(a @ dy), float(a @ df), float(dy @ fa)]
        if not all(
            map(math.isfinite, values)
        ):  # huge states: the overflow-safe norms, no eigenvalue check
            self.previous = None
            return _change_norms(backend, y, y_new, k, k_new)
        bb, ff, bf = values[0], values[1], values[2]
        ritz = []
        if bb > 0:
            ritz = [complex(bf / bb)]  # the Rayleigh quotient along the last change
            if self.previous is not None:
                aa, afa = self.previous[2], self.previous[3]
                ab, afb, bfa = values[3], values[4], values[5]
                gram = np.array([[aa, ab], [ab, bb]])
                if (
                    np.linalg.det(gram) > 1e-6 * aa * bb
                ):  # two independent directions: the 2x2 projection
                    ritz = list(
                        np.linalg.eigvals(np.linalg.solve(gram, np.array([[afa, afb], [bfa, bf]])))
                    )
        self.previous = (dy, df, bb, bf)
        for lam in ritz:
            z = self.signed_h * lam  # h < 0 backward: decaying along the steps if Re(hλ) < 0
            if not z.real < -UNSTABLE_MODE_DECAY * abs(z):
                # growing or oscillating without decay: |R| > 1 may be the solution's own growth
                continue
            amplification = abs(self.stability(z))
            if amplification > 1.0 and amplification**self.n_total >= UNSTABLE_MODE_GROWTH:
                self._warn_unstable_mode(t_new, lam, amplification)
                break
        return math.sqrt(bb), math.sqrt(ff), bf

    def _warn_unstable_mode(self, t_new: float, lam: complex, amplification: float) -> None:
        self.warned = True

        def show(z: complex) -> str:
            return (
                f"{z.real:.4g}" if abs(z.imag) <= 1e-12 * abs(z) else f"{z.real:.4g}{z.imag:+.4g}i"
            )

        eig, growth = show(lam), amplification**self.n_total
        warnings.warn(
            f"{self.rec.method}: step_size={self.signed_h:.6g} lies outside the method's "
            f"stability region "
            f"for a decaying mode of this problem: eigenvalue λ ≈ {eig} of ∂f/∂y (estimated "
            f"from the "
            f"steps' changes of f, at t={t_new:.6g}), h·λ ≈ {show(self.signed_h * lam)} and "
            f"|R(hλ)| ≈ "
            f"{amplification:.6g} > 1, so that mode grows ×{growth:.3g} over the "
            f"{self.n_total} steps where "
            f"it should decay: the result is wrong. Take a smaller step (|h·λ| inside the "
            f"stability "
            f"region), an adaptive method, or a stiff one",
            StepSizeWarning,
            stacklevel=4,
        )


def stability_function(method_obj) -> Callable[[complex], complex] | None:
    """``R(z)`` of a one-step explicit Runge–Kutta method (None for the others: their stability
    is not a polynomial of one step)."""
    if not isinstance(method_obj, RungeKuttaTableau):
        return None
    gamma = stability_polynomial(method_obj)[::-1]
    return lambda z: complex(np.polyval(gamma, z))


def _change_norms(backend, y, y_new, k, k_new) -> tuple[float, float, float]:
    """``(|y_new - y|, |k_new - k|, (y_new - y)·(k_new - k))`` as floats, outside autograd."""
    if backend.name == "torch":
        torch = sys.modules["torch"]
        with torch.no_grad():
            dy, dk = (y_new - y).reshape(-1).double(), (k_new - k).reshape(-1).double()
            values = torch.stack(
                (torch.linalg.vector_norm(dy), torch.linalg.vector_norm(dk), dy @ dk)
            ).tolist()
        return values[0], values[1], values[2]
    dy, dk = y_new - y, k_new - k
    if dy.ndim != 1:
        dy, dk = dy.reshape(-1), dk.reshape(-1)
    dy_dy, dk_dk, dy_dk = (
        float(dy.dot(dy)),
        float(dk.dot(dk)),
        float(dy.dot(dk)),
    )  # the fastest numpy spelling
    if math.isinf(dy_dy) or math.isinf(dk_dk) or math.isinf(dy_dk):  # huge states: squares overflow
        big = max(float(np.max(np.abs(dy))), float(np.max(np.abs(dk))))
        dy, dk = dy / big, dk / big
        return (
            big * math.sqrt(float(np.dot(dy, dy))),
            big * math.sqrt(float(np.dot(dk, dk))),
            math.copysign(math.inf, float(np.dot(dy, dk))),
        )
    return math.sqrt(dy_dy), math.sqrt(dk_dk), dy_dk


def warn_if_unstable(rec, h, h_lambda: float, t_new) -> bool:
    """Warn (once per solve) when the step's ``|h|·|Δf|/|Δy|``, measured by the amplification
    monitor, lies beyond the explicit methods' stability intervals; True when it warned."""
    if not UNSTABLE_H_LAMBDA < h_lambda < math.inf:
        return False
    warnings.warn(
        f"{rec.method}: step_size={h:.6g} looks too large for an explicit method here: "
        f"h·|Δf|/|Δy| ≈ {h_lambda:.3g} at t={t_new:.6g} (stability intervals are about 2-3); "
        f"the result may be unstable — take a smaller step or an adaptive method",
        StepSizeWarning,
        stacklevel=4,
    )
    return True


def unchanged(backend, y, y_new) -> bool:
    """Whether a step left every component of the state exactly as it was (its change below the
    state's precision)."""
    if backend.name == "torch":
        torch = sys.modules["torch"]
        with torch.no_grad():
            return bool(torch.equal(y, y_new))
    return bool(np.array_equal(y, y_new))


def range_edge_message(backend, y, t: float, h: float) -> str:
    """Why a solve whose every changing step overflows cannot go on: the state is at the edge of
    its dtype."""
    dtype = backend.dtype
    largest = float(
        sys.modules["torch"].finfo(dtype).max if backend.name == "torch" else np.finfo(dtype).max
    )
    size = float(np.max(np.abs(backend.to_numpy(y))))
    return (
        f"the solution leaves the range of {str(dtype).replace('torch.', '')} at t={t:.6g}: "
        f"|y| reached "
        f"{size:.3g} (the largest finite value is {largest:.3g}); every step that changes "
        f"the state in its "
        f"precision overflows to Inf, the ones that do not (down to {abs(h):.3g}) leave it "
        f"unchanged. "
        f"Rescale the problem or solve in float64"
    )


def underflow_message(h: float, t: float, t0: float, t_end: float) -> str:
    """What an underflowed step means: time resolution lost at this magnitude of t, or a
    singularity."""
    magnitude = max(abs(t), abs(t0), abs(t_end))
    resolution = float(np.spacing(magnitude))
    if 16 * resolution > TIME_RESOLUTION_SHARE * abs(t_end - t0):
        return (
            f"step size {h:.3g} underflowed at t={t:.17g}: time resolution lost at this "
            f"magnitude — float64 "
            f"times near {magnitude:.3g} are {resolution:.3g} apart, too coarse for a span of "
            f"{abs(t_end - t0):.3g} (a step must be at least {16 * resolution:.3g}). Shift "
            f"the times: solve "
            f"from 0 to t[-1] - t[0] with f(t + t[0], y)"
        )
    return (
        f"step size {h:.3g} underflowed at t={t:.17g} (a singularity, or rtol/atol too tight "
        f"for the "
        f"state's precision?)"
    )


def max_steps_failure(field, backend, rec, stepper, t, y, k1, h, max_steps) -> SolverError:
    """MaxStepsExceeded, saying whether the last steps look stability-limited (a stiff problem) or
    chatter across a discontinuity of ``f``."""
    message = f"max_steps={max_steps} reached at t={t:.6g} (last step {h:.3g})"
    with sys.modules["torch"].no_grad() if backend.name == "torch" else contextlib.nullcontext():
        jump = _slope_jump(field, backend, t, y, k1, h)
        rho = None if jump is not None else _spectral_radius_estimate(field, backend, t, y, k1)
    if jump is not None:
        message += (
            f"; discontinuity/chattering suspected: f jumps across a surface at distance "
            f"{jump[0]:.3g} from the state, its component along the motion reversing from "
            f"{jump[1]:+.3g} to {jump[2]:+.3g} (relative to |f|) — the solution slides along a "
            f"discontinuity of f (e.g. sign(y)) and every step crosses it, so the steps stay tiny. "
            f"Smooth f (e.g. tanh(y/ε) for sign(y)), stop there with a terminal event "
            f"(events=), or "
            f"raise max_steps"
        )
    elif (precision := _precision_limit(backend, y, k1, h)) is not None:
        message += (
            f"; {precision} precision limits the steps, not stiffness: the last step changes "
            f"the state by "
            f"at most {_PRECISION_CHANGE_ULPS} ulps of {precision}, so its error estimates "
            f"are rounding "
            f"noise. Solve in float64 (y0.double() / y0.astype(np.float64)), or loosen rtol/atol"
        )
    elif (
        stepper.explicit
        and rho is not None
        and math.isfinite(rho)
        and abs(h) * rho > STIFF_H_LAMBDA
    ):
        message += (
            f"; the problem looks stiff: the steps are limited by stability, not accuracy "
            f"(|h|·ρ(J) ≈ {abs(h) * rho:.3g} with ρ(J) ≈ {rho:.3g} estimated at t={t:.6g}). "
            f"Use a stiff "
            f"method (method='rodas4' or 'rosenbrock23') or method='auto'"
        )
    else:
        message += "; loosen rtol/atol or raise max_steps"
    return rec.failure(MaxStepsExceeded, message, t)


_PRECISION_CHANGE_ULPS = 64


def _precision_limit(backend, y, k1, h) -> str | None:
    """The dtype's name (``"float32"``) when a float32 state's last step ``h·f`` changes no
    component by more than a few dozen ulps: the step has shrunk to the rounding level of the
    state, not to a stability limit."""
    if "float32" not in str(backend.dtype):
        return None
    y_np, k_np = backend.to_numpy(y).reshape(-1), backend.to_numpy(k1).reshape(-1)
    eps = float(np.finfo(np.float32).eps)
    change = np.abs(h * k_np)
    if not np.isfinite(change).all() or not change.any():
        return None
    return (
        "float32" if bool(np.all(change <= _PRECISION_CHANGE_ULPS * eps * np.abs(y_np))) else None
    )


def _slope_jump(field, backend, t, y, k1, h, probes: int = 6, bisections: int = 60):
    """``(distance, before, after)`` when ``f`` jumps along the direction of motion near ``y``, else
    None.

    ``φ(σ) = f(t, y + σ h k1)·k1 / |k1|²`` is 1 at σ = 0. If it turns negative within a few
    multiples of the last step (the motion reverses: chattering), bisection shrinks the bracket to a
    few ulps: a smooth ``f`` passes φ through 0 there, a discontinuous one leaves ``|φ|`` of order 1
    on both sides. A few dozen counted calls of ``f``, only on a MaxStepsExceeded.
    """
    try:
        k_np = backend.to_numpy(k1)
        kk = float(np.dot(k_np.reshape(-1), k_np.reshape(-1)))
        if not kk > 0 or not math.isfinite(kk):
            return None

        def phi(sigma: float) -> float:
            probe = backend.lincomb(y, (k1,), (sigma * h,))
            return (
                float(np.dot(backend.to_numpy(field(t, probe)).reshape(-1), k_np.reshape(-1))) / kk
            )

        lo, hi, phi_lo, phi_hi = 0.0, None, 1.0, None
        for sigma in 4.0 ** np.arange(probes):
            value = phi(float(sigma))
            if value < 0:
                hi, phi_hi = float(sigma), value
                break
            lo, phi_lo = float(sigma), value
        if hi is None:
            return None
        for _ in range(bisections):
            mid = 0.5 * (lo + hi)
            if not lo < mid < hi:
                break
            value = phi(mid)
            if value < 0:
                hi, phi_hi = mid, value
            # an exact 0 (sign(0) on the surface itself) moves the bracket but is no side's value
            else:
                lo, phi_lo = mid, (value if value > 0 else phi_lo)
        if (
            min(phi_lo, -phi_hi) < JUMP_SHARE
        ):  # φ went continuously through 0: a smooth turn, not a jump
            return None
        return hi * abs(h) * math.sqrt(kk), phi_lo, phi_hi
    except SolverError:
        return None


def _spectral_radius_estimate(field, backend, t, y, k1, iterations: int = 8) -> float | None:
    """Power iteration on finite differences of ``f`` (a few counted calls, only on failure)."""
    try:
        y_np = backend.to_numpy(y)
        f0 = backend.to_numpy(k1)
        v = f0.copy() if np.any(f0) else np.ones_like(y_np)
        rho = None
        for _ in range(iterations):
            nv = float(np.linalg.norm(v))
            if not nv > 0 or not math.isfinite(nv):
                return rho
            eps = 1e-7 * max(1.0, float(np.linalg.norm(y_np))) / nv
            probe = backend.lincomb(y, (_like(backend, v, y),), (eps,))
            jv = (backend.to_numpy(field(t, probe)) - f0) / eps
            rho = float(np.linalg.norm(jv)) / nv
            v = jv
        return rho
    except SolverError:
        return None


def _like(backend, x: np.ndarray, y):
    if backend.name == "torch":
        torch = sys.modules["torch"]
        return torch.as_tensor(x, dtype=y.dtype, device=y.device)
    return x.astype(y.dtype)
