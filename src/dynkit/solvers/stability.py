"""The stability side of stiffness for explicit Runge–Kutta methods, without heavy imports.

* :func:`stability_polynomial` and :func:`stability_boundary`: ``R(z)`` of a tableau and the radius
  ``r`` of its stability region on the negative real axis ([HW] IV.2);
* :class:`StiffnessDetector`: the counting that turns "this step was limited by stability" into a
  verdict, shared by :func:`dynkit.diagnostics.stiffness_report` (after the solve) and
  ``method="auto"`` (during it).

References
----------
.. [HW] E. Hairer, G. Wanner, *Solving Ordinary Differential Equations II*, 2nd ed., Springer 1996,
   Sect. IV.2.
"""

from __future__ import annotations

import numpy as np

from .tableaus import TABLEAUS, RungeKuttaTableau

__all__ = ["DEFAULT_MIN_RUN", "StiffnessDetector", "stability_polynomial", "stability_boundary"]

# Hairer's DOPRI5 code declares stiffness after 15 steps near the stability boundary
DEFAULT_MIN_RUN = 15


class StiffnessDetector:
    """The verdict's counting, one step at a time (what ``method="auto"`` runs along its solve).

    ``update(limited)`` is called once per accepted step with whether that step was limited by
    stability; it returns True once ``min_run`` such steps have occurred without ``forgive``
    consecutive unlimited steps in between — Hairer's DOPRI5 code counts this way (15 and 6, [HW]
    IV.2); ``forgive=1`` asks for ``min_run`` consecutive steps, as :func:`stiffness_report` does.
    """

    def __init__(self, min_run: int = DEFAULT_MIN_RUN, forgive: int = 6):
        if not (isinstance(min_run, (int, np.integer)) and min_run >= 1):
            raise ValueError(f"min_run must be a positive integer, got {min_run!r}")
        if not (isinstance(forgive, (int, np.integer)) and forgive >= 1):
            raise ValueError(f"forgive must be a positive integer, got {forgive!r}")
        self.min_run, self.forgive = int(min_run), int(forgive)
        self.reset()

    def reset(self) -> None:
        self.limited = self.unlimited = 0

    def update(self, limited: bool) -> bool:
        """Count one accepted step; True once the verdict is "stiff" (until :meth:`reset`)."""
        if limited:
            self.limited += 1
            self.unlimited = 0
        else:
            self.unlimited += 1
            if self.unlimited >= self.forgive:
                self.limited = 0
        return self.limited >= self.min_run


# ---------------------------------------------------------------------------------------------
# the method's stability region


def stability_polynomial(tableau: RungeKuttaTableau) -> np.ndarray:
    """Coefficients ``γ_0..γ_s`` of ``R(z) = Σ γ_k z^k = 1 + z bᵀ(I − zA)⁻¹𝟙`` ([HW] IV.2, Eq.
    (2.3)), ``γ_k = bᵀ A^{k-1} 𝟙`` for an explicit method."""
    s = tableau.stages
    gamma = [1.0]
    v = np.ones(s)
    for _ in range(s):
        gamma.append(float(tableau.b @ v))
        v = tableau.a @ v
    return np.array(gamma)


def stability_boundary(method: str | RungeKuttaTableau) -> float:
    """Radius ``r`` of the stability region on the negative real axis: ``|R(−x)| ≤ 1`` for
    ``0 ≤ x ≤ r``."""
    if isinstance(method, str) and method in TABLEAUS:  # the one-step RK methods of METHODS
        method = TABLEAUS[method]
    if not isinstance(method, RungeKuttaTableau):
        raise ValueError(
            f"method must be a one-step Runge-Kutta method name or tableau, got {method!r}"
        )
    poly = np.polynomial.Polynomial(stability_polynomial(method))
    xs = np.linspace(1e-3, 20.0, 20_001)
    unstable = np.abs(poly(-xs)) > 1.0 + 1e-12
    if not unstable.any():  # pragma: no cover - no explicit method of this kind
        return float(xs[-1])
    lo, hi = xs[max(int(np.argmax(unstable)) - 1, 0)], xs[int(np.argmax(unstable))]
    for _ in range(60):  # bisection to machine precision
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if abs(poly(-mid)) <= 1.0 + 1e-12 else (lo, mid)
    return float(lo)
