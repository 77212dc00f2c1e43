"""``method="auto"``: an explicit pair while the problem is not stiff, a Rosenbrock method while it is.

The switch is dynkit's own stiffness test (:mod:`dynkit.diagnostics.stiffness`, its counting in
:mod:`dynkit.solvers.stability`) run along the solve:

* explicit → stiff: after every accepted dopri5 step, Hairer's estimate of the dominant eigenvalue
  from the two stages at ``t + h`` ([HW] IV.2, Eq. (2.11)), ``ρ̂ = ‖k_7 − k_6‖ / ‖y_{n+1} − Y_6‖``,
  gives the *stability use* ``u = h ρ̂ / r`` (``r`` = 3.31, dopri5's stability boundary on the
  negative real axis); :class:`~dynkit.solvers.stability.StiffnessDetector` counts the steps with
  ``u`` at the boundary the way Hairer's DOPRI5 code does (stiff after 15 such steps, the count
  forgiven after 6 steps below). Stiff → switch to rodas4 (costs nothing: no extra call of ``f``).
* stiff → explicit: after every accepted rodas4 step, the Jacobian already at hand gives the largest
  modulus of its decaying eigenvalues ``ρ``; when ``h ρ / r`` stays below 1/2 (dopri5 could take the
  same step with room to spare) for 15 consecutive steps, switch back.

``sol.stats.switches`` counts the switches and ``sol.switch_log`` lists them as
``(t, from_method, to_method)``.

References
----------
.. [HW] E. Hairer, G. Wanner, *Solving Ordinary Differential Equations II*, 2nd ed., Springer 1996,
   Sect. IV.2 (automatic stiffness detection).
"""
from __future__ import annotations

import numpy as np

from .explicit import ExplicitRK
from .rosenbrock import RODAS4, RosenbrockStepper, RosenbrockTableau
from .stability import StiffnessDetector, stability_boundary
from .tableaus import DOPRI5, RungeKuttaTableau

# u = h ρ̂ / r at or above which an explicit step counts as stability-limited (Hairer's DOPRI5 code:
# h ρ̂ > 3.25 with r = 3.31)
SWITCH_THRESHOLD = 0.95
# u = h ρ(J) / r at or below which the explicit method could take the stiff method's step with room to spare
BACK_THRESHOLD = 0.5


class AutoSwitching:
    """A method object for :func:`dynkit.solve`: ``explicit`` while not stiff, ``stiff`` while stiff."""

    adaptive = True

    def __init__(self, explicit: RungeKuttaTableau = DOPRI5, stiff: RosenbrockTableau = RODAS4,
                 name: str = "auto"):
        self.explicit, self.stiff, self.name = explicit, stiff, name

    def make_stepper(self, field, backend):
        return AutoStepper(self, field, backend)


AUTO = AutoSwitching()


class _Tap:
    """The counted field, remembering its last two calls (for Hairer's two-stage estimate)."""

    def __init__(self, field):
        self.field = field
        self.stats = field.stats
        self.last = self.before = None

    def __call__(self, t, y):
        out = self.field(t, y)
        self.before, self.last = self.last, (t, y, out)
        return out


class AutoStepper:
    """Delegates to the explicit or the stiff stepper and switches between them (module docstring)."""

    def __init__(self, method: AutoSwitching, field, backend):
        self.name, self.field, self.backend = method.name, field, backend
        self.tap = _Tap(field)
        self.explicit_stepper = ExplicitRK(method.explicit, self.tap, backend)
        self.stiff_stepper = RosenbrockStepper(method.stiff, field, backend)
        self.boundary = stability_boundary(method.explicit)
        self.to_stiff = StiffnessDetector()
        self.to_explicit = StiffnessDetector(forgive=1)  # consecutive steps well inside the boundary
        self.active = self.explicit_stepper
        self.switch_log: list[tuple[float, str, str]] = []
        self._t = self._h = None

    # the controller reads these on every step: a switch changes the error exponent and safety
    @property
    def k(self):
        return self.active.k

    @property
    def safety(self):
        return getattr(self.active, "safety", None)

    @property
    def pi_beta(self):
        return getattr(self.active, "pi_beta", None)

    @property
    def explicit(self) -> bool:
        return self.active is self.explicit_stepper

    def attempt(self, t, y, h, k1):
        self._t, self._h = t, h
        self.tap.last = self.tap.before = None
        return self.active.attempt(t, y, h, k1)

    def error_norm(self, trial, norm):
        own = getattr(self.active, "error_norm", None)
        return own(trial, norm) if own is not None else norm(trial.error)

    def accepted(self, trial) -> None:
        h = abs(self._h)
        if self.explicit:
            use = h * self._hairer_rho(trial) / self.boundary
            if self.to_stiff.update(use >= SWITCH_THRESHOLD):
                self._switch(self.stiff_stepper)
        else:
            use = h * self._decaying_radius() / self.boundary
            if self.to_explicit.update(use <= BACK_THRESHOLD):
                self._switch(self.explicit_stepper)

    def _switch(self, to) -> None:
        self.switch_log.append((self._t + self._h, self.active.name, to.name))
        self.field.stats.switches += 1
        self.active = to
        self.to_stiff.reset()
        self.to_explicit.reset()

    def _hairer_rho(self, trial) -> float:
        """``‖k_j − k_i‖ / ‖Y_j − Y_i‖`` for the last two calls of ``f`` if they were at the same time."""
        last, before = self.tap.last, self.tap.before
        if last is None or before is None or last[0] != before[0]:
            return 0.0
        be = self.backend
        dy = be.to_numpy(last[1]) - be.to_numpy(before[1])
        dk = be.to_numpy(last[2]) - be.to_numpy(before[2])
        ny = float(np.linalg.norm(dy))
        return float(np.linalg.norm(dk)) / ny if ny > 0 else 0.0

    def _decaying_radius(self) -> float:
        """Largest ``|λ|`` over the eigenvalues with ``Re λ < 0`` of the stiff stepper's Jacobian."""
        J = self.backend.to_numpy(self.stiff_stepper.J)
        lam = np.linalg.eigvals(J) if J.shape[-1] <= 64 else _power_radius(J)
        decaying = np.abs(lam)[lam.real < 0]
        return float(decaying.max()) if decaying.size else 0.0


def _power_radius(J: np.ndarray, iterations: int = 20) -> np.ndarray:
    """Spectral radius by power iteration (a large ``J``), returned as one negative real eigenvalue
    (the stiff modes of a dissipative problem)."""
    v = np.ones(J.shape[:-1])
    rho = 0.0
    for _ in range(iterations):
        w = np.einsum("...ij,...j->...i", J, v)
        nw, nv = float(np.linalg.norm(w)), float(np.linalg.norm(v))
        if not nw > 0 or not nv > 0:
            break
        rho, v = nw / nv, w / nw
    return np.array([-rho])
