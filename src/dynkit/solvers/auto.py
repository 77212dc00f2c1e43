"""``method="auto"``: an explicit pair while the problem is not stiff, a Rosenbrock method while it
is.

The switch is dynkit's own stiffness test (:mod:`dynkit.diagnostics.stiffness`, its counting in
:mod:`dynkit.solvers.stability`) run along the solve:

* explicit → stiff: after every accepted dopri5 step, Hairer's estimate of the dominant eigenvalue
  from the two stages at ``t + h`` ([HW] IV.2, Eq. (2.11)), ``ρ̂ = ‖k_7 − k_6‖ / ‖y_{n+1} − Y_6‖``,
  gives the *stability use* ``u = h ρ̂ / r`` (``r`` = 3.31, dopri5's stability boundary on the
  negative real axis); :class:`~dynkit.solvers.stability.StiffnessDetector` counts the steps with
  ``u`` at the boundary the way Hairer's DOPRI5 code does (stiff after 15 such steps, the count
  forgiven after 6 steps below). At tight tolerances the error estimate holds dopri5's step below
  the boundary (``u`` ≈ 0.85-0.95 for 858 steps on Robertson at rtol 1e-10 before the 15th step at
  0.95), so at ``rtol ≤ 1e-7`` a second count (ours) also switches: ``u ≥ 1/2 (rtol/1e-7)^{1/5}`` on
  45 steps, with the same forgiveness (not at crude tolerances, where nonstiff steps limited by
  accuracy may sit at ``u ≥ 1/2``). The threshold falls with the tolerance as an accuracy-limited
  dopri5 step does (``∝ rtol^{1/5}``); with 1/2 at every rtol, auto ran dopri5 on Robertson to t =
  3.8 (rtol 1e-10) and 8.9 (1e-11): 2.0× and 3.1× radau5's work, now 0.93× and 0.91×
  (``bench_stiff --method-ratios``). The switch costs nothing (no extra call of ``f``);
  ``switch_log`` says which count fired.
* which stiff method: chosen once per solve from the tolerance and the state. ``radau5`` (order 5,
  its error falls fastest with the tolerance) when ``rtol ≤ 1e-5`` and the state is a numpy array;
  ``rodas5`` then for torch states (which ``radau5`` does not take): with an exact Jacobian
  (autograd's) it needs 0.2-0.8× rodas4's work at matched error 1e-5..1e-9 on HIRES, OREGO and Van
  der Pol μ = 1000, and at the same rtol 0.35-0.87× on those and Robertson (with rodas4, auto cost
  2.2-5.0× rodas5's work at matched error 1e-7..1e-9 on the first three); ``rodas4`` at crude
  tolerances, where its cheaper step and dense output win.
* stiff → explicit: after every accepted stiff step, the Jacobian already at hand gives the largest
  modulus of its decaying eigenvalues ``ρ``; when ``h ρ / r`` stays below 1/2 (dopri5 could take the
  same step with room to spare) for 15 consecutive steps, none below half the first of them, switch
  back. (Steps that shrink through the run are a fast transient under way, such as a relaxation
  jump, after which the stiffness returns: see :func:`_steady`.)
* explicit again costlier: stability alone does not say the explicit step will be as long; at a
  tight tolerance its error estimate may hold it far below the stiff method's step (HIRES at rtol
  1e-11: radau5 switched back at t = 302, after which dopri5 took 808 steps, 4850 calls of ``f``,
  for the last 20 time units, radau5 alone 244 steps and 1920 calls; auto 2.16× bdf's work at that
  rtol). So after a switch back the first ``COST_STEPS`` (15) accepted explicit steps' calls of
  ``f`` per unit time are compared with the stiff method's over the run that qualified for the
  switch back; above ``COST_MARGIN`` (3) times, switch to the stiff method again, and the next
  switch back needs twice as many qualifying steps (each such trial costs about 15 explicit steps
  and they get rarer, so a problem that alternates between stiff and non-stiff stretches still
  switches).

``sol.stats.switches`` counts the switches and ``sol.switch_log`` lists them as :class:`Switch`
``(t, from_method, to_method, reason)``, the reason in words with the measured numbers.

References
----------
.. [HW] E. Hairer, G. Wanner, *Solving Ordinary Differential Equations II*, 2nd ed., Springer 1996,
   Sect. IV.2 (automatic stiffness detection).
"""

from __future__ import annotations

import numpy as np

from typing import NamedTuple

from .explicit import ExplicitRK
from .stepper import Stepper
from .jacobian import is_sparse
from .radau import RADAU5, RadauIIA
from .rosenbrock import RODAS4, RODAS5, RosenbrockTableau
from .stability import StiffnessDetector, stability_boundary
from .tableaus import DOPRI5, RungeKuttaTableau

__all__ = [
    "SWITCH_THRESHOLD",
    "PINNED_THRESHOLD",
    "PINNED_RUN",
    "PINNED_RTOL",
    "BACK_THRESHOLD",
    "STEADY_SHARE",
    "TIGHT_RTOL",
    "COST_STEPS",
    "COST_MARGIN",
    "Switch",
    "AutoSwitching",
    "AUTO",
    "AutoStepper",
]

# u = h ρ̂ / r at or above which an explicit step counts as stability-limited (Hairer's DOPRI5 code:
# h ρ̂ > 3.25 with r = 3.31)
SWITCH_THRESHOLD = 0.95
# ... and the second count: u at or above this on PINNED_RUN steps (no 6 unlimited steps in
# between). At tight tolerances dopri5's error estimate holds the step below the boundary: on
# Robertson at rtol 1e-10 u sat at 0.85-0.95 for 858 steps before the 15th step at 0.95 came (the
# first count alone)
PINNED_THRESHOLD = 0.5
PINNED_RUN = 45
# ... counted only at rtol at or below this: at crude tolerances Hairer's count works (the step
# reaches the boundary), and nonstiff steps limited by accuracy may sit at u ≥ 1/2 (Lorenz, Van der
# Pol μ = 5 at rtol 1e-2)
PINNED_RTOL = 1e-7
# u = h ρ(J) / r at or below which the explicit method could take the stiff method's step with room
# to spare
BACK_THRESHOLD = 0.5
# an accepted stiff step below this share of the first step of its run does not count towards the
# switch back (a fast transient under way: see _steady)
STEADY_SHARE = 0.5
# rtol at or below which the tight-tolerance stiff method (radau5) is used for numpy states
TIGHT_RTOL = 1e-5
# accepted explicit steps after a switch back over which their calls of f per unit time are compared
# with the stiff method's over its last run (see AutoStepper._costlier)
COST_STEPS = 15
# ... and the factor by which the explicit steps' calls per unit time must exceed the stiff run's to
# switch again: the two rates are over different stretches of time, and a solution speeding up
# raises the later one (Van der Pol μ = 1000 nearing a jump: 1.1-1.9× on the 15 steps after a switch
# back, where going on with dopri5 is still the cheaper run; HIRES at rtol 1e-11, dopri5's step held
# at a third of radau5's: 3.7-4.8×)
COST_MARGIN = 3.0


class Switch(NamedTuple):
    """One switch of ``method="auto"``: at the end of the step ending at ``t``, why."""

    t: float
    from_method: str
    to_method: str
    reason: str


class AutoSwitching:
    """A method object for :func:`dynkit.solve`: ``explicit`` while not stiff, a stiff method
    while stiff (``stiff`` at crude tolerances, ``tight_stiff`` for numpy states and
    ``tight_torch`` for torch states at ``rtol ≤ tight_rtol``; ``tight_stiff=None``: always
    ``stiff``; ``tight_torch=None``: ``stiff`` for torch)."""

    adaptive = True

    def __init__(
        self,
        explicit: RungeKuttaTableau = DOPRI5,
        stiff: RosenbrockTableau = RODAS4,
        name: str = "auto",
        tight_stiff: RadauIIA | None = RADAU5,
        tight_rtol: float = TIGHT_RTOL,
        tight_torch: RosenbrockTableau | None = RODAS5,
    ):
        self.explicit, self.stiff, self.name = explicit, stiff, name
        self.tight_stiff, self.tight_rtol, self.tight_torch = tight_stiff, tight_rtol, tight_torch

    def choose_stiff(self, field, backend) -> tuple[object, str]:
        """The stiff method for this solve and why."""
        rtol = float(getattr(field, "rtol", 1e-6))
        if self.tight_stiff is None:
            return self.stiff, f"{self.stiff.name} (the only stiff method configured)"
        if backend.name != "numpy":
            if self.tight_torch is not None and rtol <= self.tight_rtol:
                return self.tight_torch, (
                    f"{self.tight_torch.name} (rtol {rtol:g} ≤ {self.tight_rtol:g}: order 5; "
                    f"{self.tight_stiff.name} takes numpy states only)"
                )
            return (
                self.stiff,
                f"{self.stiff.name} ({self.tight_stiff.name} takes numpy states only)",
            )
        if rtol <= self.tight_rtol:
            return (
                self.tight_stiff,
                f"{self.tight_stiff.name} (rtol {rtol:g} ≤ {self.tight_rtol:g}: order 5)",
            )
        return (
            self.stiff,
            f"{self.stiff.name} (rtol {rtol:g} > {self.tight_rtol:g}: crude tolerance)",
        )

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


class AutoStepper(Stepper):
    """Delegates to the explicit or the stiff stepper and switches between them (module
    docstring)."""

    def __init__(self, method: AutoSwitching, field, backend):
        self.name, self.field, self.backend = method.name, field, backend
        self.tap = _Tap(field)
        self.explicit_stepper = ExplicitRK(method.explicit, self.tap, backend)
        stiff, self.stiff_choice = method.choose_stiff(field, backend)
        self.stiff_stepper = stiff.make_stepper(field, backend)
        self.boundary = stability_boundary(method.explicit)
        self.to_stiff = StiffnessDetector()
        self.pinned = StiffnessDetector(min_run=PINNED_RUN)
        rtol = float(getattr(field, "rtol", 1e-6))
        self.pinned_on = rtol <= PINNED_RTOL
        # below PINNED_RTOL the threshold falls as a non-stiff problem's accuracy-limited step does,
        # ∝ rtol^{1/5} (dopri5's local error is O(h^5)): the same problem's u sits lower by that
        # factor, so no problem caught at PINNED_RTOL only for accuracy is caught below it; a stiff
        # transient whose step is still held by the error estimate is (Robertson at rtol 1e-11 ran
        # dopri5 to t = 8.9 with the fixed threshold: 3x radau5)
        self.pinned_threshold = (
            PINNED_THRESHOLD * (rtol / PINNED_RTOL) ** 0.2 if self.pinned_on else PINNED_THRESHOLD
        )
        self.to_explicit = StiffnessDetector(
            forgive=1
        )  # consecutive steps well inside the boundary
        self.active = self.explicit_stepper
        self.switch_log: list[Switch] = []
        self._t = self._h = None
        self._made_by = None  # the stepper of the last trial
        self._use = 0.0
        self._h_run = None  # the first step of the current run towards the switch back
        self._mark = None  # (t, calls of f) at the end of the last accepted step
        self._run_mark = None  # ... at the start of the current run towards the switch back
        self._stiff_rate = (
            None  # the stiff method's calls of f per unit time over the run that switched back
        )
        self._cost_check = (
            None  # the mark at the switch back while the explicit method's cost is under test
        )
        self._steps_since = 0  # accepted explicit steps since that switch back

    # the controller reads these on every step: a switch changes the error exponent and safety
    @property
    def k(self):
        return self.active.k

    @property
    def safety(self):
        return self.active.safety

    @property
    def pi_beta(self):
        return self.active.pi_beta

    @property
    def explicit(self) -> bool:
        return self.active is self.explicit_stepper

    def attempt(self, t, y, h, k1):
        self._t, self._h = t, h
        self.tap.last = self.tap.before = None
        self._made_by = self.active
        return self.active.attempt(t, y, h, k1)

    def step_factor(self, norm, accepted, engine_factor):
        """The step factor of the stepper that made the trial, if it has its own controller."""
        return self._made_by.step_factor(norm, accepted, engine_factor)

    def error_norm(self, trial, norm):
        return self.active.error_norm(trial, norm)

    def accepted(self, trial) -> None:
        self.active.accepted(trial)
        h = abs(self._h)
        mark, self._mark = self._mark, (float(self._t + self._h), self.field.stats.nfe)
        if self.explicit:
            if self._costlier():
                return
            use = h * self._hairer_rho(trial) / self.boundary
            at_boundary = self.to_stiff.update(use >= SWITCH_THRESHOLD)
            pinned = self.pinned_on and self.pinned.update(use >= self.pinned_threshold)
            if at_boundary:
                self._switch(
                    self.stiff_stepper,
                    f"{self.explicit_stepper.name} stability-limited: h·ρ̂/r ≥ "
                    f"{SWITCH_THRESHOLD} on {self.to_stiff.min_run} steps (last {use:.3g}); "
                    f"stiff method {self.stiff_choice}",
                )
            elif pinned:
                self._switch(
                    self.stiff_stepper,
                    f"{self.explicit_stepper.name} step pinned near its stability "
                    f"boundary: h·ρ̂/r ≥ {self.pinned_threshold:.3g} on "
                    f"{self.pinned.min_run} steps (last {use:.3g}; "
                    f"below {SWITCH_THRESHOLD}: the error estimate holds the step there at a tight "
                    f"tolerance); stiff method {self.stiff_choice}",
                )
        else:
            use = h * self._decaying_radius() / self.boundary
            if self.to_explicit.limited == 0:  # this step would start a run towards the switch back
                self._h_run = h
                self._run_mark = (
                    mark if mark is not None else (float(self._t), self.field.stats.nfe)
                )
            if self.to_explicit.update(use <= BACK_THRESHOLD and _steady(h, self._h_run)):
                self._stiff_rate = _rate(self._run_mark, self._mark)
                self._cost_check, self._steps_since = self._mark, 0
                self._switch(
                    self.explicit_stepper,
                    f"not stiff: h·ρ(J)/r ≤ {BACK_THRESHOLD} on "
                    f"{self.to_explicit.min_run} consecutive steps, none below "
                    f"{STEADY_SHARE:g}× the first "
                    f"(last {use:.3g})",
                )

    def _costlier(self) -> bool:
        """After a switch back, at the ``COST_STEPS``-th accepted explicit step: if the explicit
        method has used over ``COST_MARGIN`` times the calls of ``f`` per unit time that the
        stiff method did over the run that qualified for the switch back, switch to the stiff
        method again and double the run the next switch back needs (module docstring)."""
        if self._cost_check is None:
            return False
        self._steps_since += 1
        if self._steps_since < COST_STEPS:
            return False
        start, self._cost_check = self._cost_check, None
        rate = _rate(start, self._mark)
        if not rate > COST_MARGIN * self._stiff_rate:
            return False
        back = self.to_explicit.min_run
        self._switch(
            self.stiff_stepper,
            f"{self.explicit_stepper.name} costlier than {self.stiff_stepper.name}: "
            f"{rate:.3g} calls of f per unit time on {COST_STEPS} steps, over {COST_MARGIN:g}× the "
            f"{self._stiff_rate:.3g} before the switch back (the error estimate, not "
            f"stability, limits its step); next switch back after "
            f"{2 * back} steps",
        )
        self.to_explicit.min_run = 2 * back
        return True

    def projected(self, y) -> None:
        self.active.projected(y)

    def _switch(self, to, reason: str) -> None:
        self.switch_log.append(Switch(float(self._t + self._h), self.active.name, to.name, reason))
        self.field.stats.switches += 1
        self.active = to
        if to is self.stiff_stepper:  # the explicit method's cost test ends with its run
            self._cost_check = None
        to.restart()  # a stepper with memory (radau5's extrapolation, Jacobian reuse) starts afresh
        self.to_stiff.reset()
        self.pinned.reset()
        self.to_explicit.reset()

    def _hairer_rho(self, trial) -> float:
        """``‖k_j − k_i‖ / ‖Y_j − Y_i‖`` for the last two calls of ``f`` if they were at the same
        time."""
        last, before = self.tap.last, self.tap.before
        if last is None or before is None or last[0] != before[0]:
            return 0.0
        be = self.backend
        dy = be.to_numpy(last[1]) - be.to_numpy(before[1])
        dk = be.to_numpy(last[2]) - be.to_numpy(before[2])
        ny = float(np.linalg.norm(dy))
        return float(np.linalg.norm(dk)) / ny if ny > 0 else 0.0

    def _decaying_radius(self) -> float:
        """Largest ``|λ|`` over the eigenvalues with ``Re λ < 0`` of the stiff stepper's
        Jacobian."""
        J = self.stiff_stepper.J
        if is_sparse(J):
            lam = _power_radius(J)
        else:
            J = self.backend.to_numpy(J)
            lam = np.linalg.eigvals(J) if J.shape[-1] <= 64 else _power_radius(J)
        decaying = np.abs(lam)[lam.real < 0]
        return float(decaying.max()) if decaying.size else 0.0


def _rate(start: tuple[float, int], end: tuple[float, int]) -> float:
    """Calls of ``f`` per unit time between two ``(t, calls)`` marks (``inf`` over no time)."""
    span = abs(end[0] - start[0])
    return (end[1] - start[1]) / span if span > 0 else float("inf")


def _steady(h: float, h_run: float) -> bool:
    """Whether an accepted stiff step may count towards the switch back: not below half the first
    step of the run (``h_run``). Steps that shrink through the run are a fast transient under
    way, not a nonstiff stretch: on Van der Pol μ = 1000 the steps into a relaxation jump shrink
    ×0.7 a step while ``J``'s eigenvalues turn positive (no decaying one: ``h ρ / r = 0``);
    switched back there, dopri5 crossed the jump and ran 15 steps at its stability boundary
    before the stiffness was seen again, at rtol 1e-2 the answer 12.8 tolerances off (0.30
    without the switch back; bench_stiff --wrong-as-success). Half, not the step before: steps
    that alternate by a few per cent (rodas4 on Robertson with a component held at 0 by
    ``nonnegative=True``) still count."""
    return h >= STEADY_SHARE * h_run


def _power_radius(J: np.ndarray, iterations: int = 20) -> np.ndarray:
    """Spectral radius by power iteration (a large ``J``), returned as one negative real eigenvalue
    (the stiff modes of a dissipative problem)."""
    v = np.ones(J.shape[:-1])
    rho = 0.0
    for _ in range(iterations):
        w = J @ v if is_sparse(J) else np.einsum("...ij,...j->...i", J, v)
        nw, nv = float(np.linalg.norm(w)), float(np.linalg.norm(v))
        if not nw > 0 or not nv > 0:
            break
        rho, v = nw / nv, w / nw
    return np.array([-rho])
