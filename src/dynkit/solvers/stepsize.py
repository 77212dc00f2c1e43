"""Step-size control of the adaptive loop: the controller interface, the PI controller, the first
step.

:func:`dynkit.solvers.solve`'s adaptive loop asks a :class:`StepSizeController` for the factor
``h_new / h`` after each trial step (:meth:`~StepSizeController.accept` or
:meth:`~StepSizeController.reject`); a stepper with a rule of its own (``radau5``, ``bdf``) may then
replace that factor through :meth:`~dynkit.solvers.stepper.Stepper.step_factor`. The constants are
those of [HNW] II.4 and of Hairer's DOPRI5 code for the PI part; the compiled kernels
(:mod:`dynkit.solvers.compiled.common`) read them from here, so both paths take the same steps.

References
----------
.. [HNW] E. Hairer, S. P. Nørsett, G. Wanner, *Solving Ordinary Differential Equations I*, 2nd ed.,
   Springer 1993, Sect. II.4; and [HW] Vol. II, Sect. IV.2 for the PI controller.
"""

from __future__ import annotations

import contextlib
import math
import sys

import numpy as np

__all__ = [
    "MAX_FACTOR",
    "MIN_FACTOR",
    "NONFINITE_FACTOR",
    "PI_BETA_TIMES_K",
    "SAFETY",
    "PIController",
    "StepSizeController",
    "initial_step",
]

# Step-size control constants ([HNW] II.4, and Hairer's DOPRI5 code for the PI part).
SAFETY = 0.9
MIN_FACTOR = 0.2
MAX_FACTOR = 10.0
NONFINITE_FACTOR = 0.25  # shrink after a trial step whose stages overflowed
PI_BETA_TIMES_K = 0.2  # beta = 0.2 / k, alpha = 1/k - 0.75 beta: Hairer's beta = 0.04 for k = 5
ERR_PREV_FLOOR = 1e-4  # the PI controller's remembered error starts at (and never goes below) this


class StepSizeController:
    """What the adaptive loop asks after each trial step: the factor ``h_new / h``.

    The loop calls :meth:`set_order` before the first step and whenever the stepper's error
    exponent ``k`` changes (a switching stepper), then :meth:`accept` or :meth:`reject` once per
    trial. A subclass implements the three; the controller's state (errors remembered from earlier
    steps) lives in it, one controller per solve.
    """

    def set_order(self, k: int, safety: float | None = None, beta: float | None = None) -> None:
        """Take the stepper's error exponent ``k`` (local error O(h^k)) and its overrides.

        Parameters
        ----------
        k : int
            The stepper's :attr:`~dynkit.solvers.stepper.Stepper.k`.
        safety, beta : float or None
            The stepper's :attr:`~dynkit.solvers.stepper.Stepper.safety` and
            :attr:`~dynkit.solvers.stepper.Stepper.pi_beta` (None: the controller's defaults).
        """
        raise NotImplementedError

    def accept(self, norm: float) -> float:
        """The factor for the step after an accepted trial whose error measure was ``norm``.

        ``norm`` is at most 1, or above it for a step forced at ``control.min_step``.
        """
        raise NotImplementedError

    def reject(self, norm: float) -> float:
        """The factor for the retry after a rejected trial (``norm > 1``, ``inf`` when the trial
        overflowed or returned NaN)."""
        raise NotImplementedError


class PIController(StepSizeController):
    """The PI step-size controller of [HW] IV.2 with Hairer's DOPRI5 constants.

    After an accepted step with error measure ``err_n``, ``h_new = h · fac``,
    ``fac = safety · err_n^(-α) · err_{n-1}^β`` clipped to ``[MIN_FACTOR, MAX_FACTOR]`` (and to at
    most 1 right after a rejection), ``β = 0.2 / k`` and ``α = 1/k − 0.75 β`` unless the stepper
    gives its own ``β``; ``err_{n-1}`` starts at, and never goes below, :data:`ERR_PREV_FLOOR`.
    After a rejection ``fac = max(MIN_FACTOR, safety · err^(-1/k))``, or
    :data:`NONFINITE_FACTOR` when the trial overflowed.

    Attributes
    ----------
    k : int or None
        The error exponent in use (None before :meth:`set_order`).
    alpha, beta, safety : float
        The coefficients in use.
    err_prev : float
        The last accepted step's error measure (floored).
    rejected_last : bool
        Whether the last trial was rejected.
    """

    def __init__(self):
        self.k = None
        self.alpha = self.beta = self.safety = math.nan
        self.err_prev, self.rejected_last = ERR_PREV_FLOOR, False

    def set_order(self, k: int, safety: float | None = None, beta: float | None = None) -> None:
        self.k = k
        self.beta = PI_BETA_TIMES_K / k if beta is None else beta
        self.alpha = 1.0 / k - 0.75 * self.beta
        self.safety = safety or SAFETY

    def accept(self, norm: float) -> float:
        if norm == 0.0:
            factor = MAX_FACTOR
        else:
            factor = self.safety * norm ** (-self.alpha) * self.err_prev**self.beta
        factor = min(MAX_FACTOR, max(MIN_FACTOR, factor))
        if self.rejected_last:
            factor = min(1.0, factor)
        self.err_prev = max(norm, ERR_PREV_FLOOR)
        self.rejected_last = False
        return factor

    def reject(self, norm: float) -> float:
        self.rejected_last = True
        if not math.isfinite(norm):
            return NONFINITE_FACTOR
        return max(MIN_FACTOR, self.safety * norm ** (-1.0 / self.k))


def initial_step(field, backend, k: int, t0, t_end, y0, f0, rtol, atol, direction) -> float:
    """Automatic initial step of [HNW] II.4 (one probe evaluation of ``f``, counted).

    The norms are taken in float64 and safe from overflow; a probe that overflows, or an estimate
    that underflows to 0, makes the solve start small: the controller grows the step.

    Parameters
    ----------
    field : callable
        The counted vector field (the probe ``f(t0 + h0, y0 + h0 f0)`` is one counted call).
    backend : module-like
        The solve's numpy/torch backend.
    k : int
        The stepper's error exponent (local error O(h^k)).
    t0, t_end : float
        The span.
    y0, f0 : array
        The initial state and ``f(t0, y0)``.
    rtol, atol : float or array
        The tolerances.
    direction : float
        +1.0 forward in time, -1.0 backward.

    Returns
    -------
    float
        The signed first step, at least 64 ulps of the times.
    """
    span = abs(t_end - t0)
    no_grad = (
        sys.modules["torch"].no_grad() if backend.name == "torch" else contextlib.nullcontext()
    )
    with no_grad:
        scale = backend.to_numpy(backend.scale(y0, rtol, atol))
        d0, d1 = safe_rms(backend.to_numpy(y0) / scale), safe_rms(backend.to_numpy(f0) / scale)
        h0 = 1e-6 if (d0 < 1e-5 or d1 < 1e-5) else 0.01 * d0 / d1
        h0 = min(h0, span)
        if not h0 > 0:
            h0 = min(1e-6, span) * 1e-6
        f1 = field(t0 + direction * h0, backend.lincomb(y0, (f0,), (direction * h0,)))
        d2 = safe_rms((backend.to_numpy(f1) - backend.to_numpy(f0)) / scale) / h0
    if not math.isfinite(d1) or not math.isfinite(d2):
        d2 = math.inf  # a probe that overflowed: start small, the controller will grow the step
    dmax = max(d1, d2)
    h1 = max(1e-6, h0 * 1e-3) if dmax <= 1e-15 else (0.01 / dmax) ** (1.0 / k)
    h = min(100 * h0, h1, span)
    if (
        not h > 0
    ):  # the estimate underflowed (huge slopes): a tiny first step, grown by the controller
        h = h0 * 1e-3
    return direction * max(h, 64 * np.spacing(max(abs(t0), abs(t_end))))


def safe_rms(x: np.ndarray) -> float:
    """RMS of ``x`` without overflow in the squares (slopes of 1e150 have a finite RMS)."""
    if x.size == 0:
        return 0.0
    big = float(np.max(np.abs(x)))
    if big == 0.0 or not math.isfinite(big):
        return big
    return big * float(np.sqrt(np.mean(np.square(x / big))))
