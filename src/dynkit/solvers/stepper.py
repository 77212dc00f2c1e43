"""The stepper protocol: what a method hands the step loops of :mod:`dynkit.solvers.engine`.

A *method object* (what ``METHODS[name].implementation`` holds, or what a user passes as
``method``) has ``name`` (str), ``adaptive`` (bool) and ``make_stepper(field, backend)``
(:class:`~dynkit.solvers.tableaus.RungeKuttaTableau` and :class:`~dynkit.solvers.ark.TwoStepRK`
are handled by :func:`~dynkit.solvers.explicit.make_stepper`). ``field(t, y)`` is the solve's
counted vector field (``field.stats`` is its :class:`~dynkit.solvers.SolverStats`: a stepper that
evaluates Jacobians or factorises increments ``njev`` / ``nlu`` there), ``backend`` the numpy/torch
:mod:`~dynkit.solvers.backend`. ``make_stepper`` returns a :class:`Stepper`: one trial step at a
time (:meth:`Stepper.attempt`), everything else being hooks with defaults that a method overrides
where it differs. The loops own what is not the method: step-size control
(:mod:`~dynkit.solvers.stepsize`), rejection, failures, outputs, dense output and events.

A minimal adaptive method::

    class MyMethod:
        name, adaptive = "mine", True

        def make_stepper(self, field, backend):
            return MyStepper(field, backend)  # a Stepper subclass: k and attempt

    dk.solve(f, y0, t, method=MyMethod())

To appear under a name, add a :class:`~dynkit.solvers.MethodInfo` to ``METHODS``. A stepper
object that does not derive from :class:`Stepper` but has ``k`` and ``attempt`` (and any of the
hooks) is still accepted: :func:`as_stepper` gives the loops a :class:`Stepper` view of it.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

__all__ = ["Slope", "Stepper", "Trial", "as_stepper"]


class Slope:
    """``f(t, y)`` at a step end, computed at most once and only if someone needs it."""

    __slots__ = ("field", "t", "y", "value")

    def __init__(self, field, t: float, y, value=None):
        self.field, self.t, self.y, self.value = field, t, y, value

    def get(self):
        if self.value is None:
            self.value = self.field(self.t, self.y)
        return self.value


class Trial:
    """One attempted step, as a stepper hands it to the controller.

    Attributes
    ----------
    y_new : array
        The proposed state at ``t + h``.
    error : array or None
        Local error estimate, an array like ``y`` (None for fixed-step methods).
    interpolant : callable
        ``interpolant(theta)`` with ``theta`` a 1-D numpy array of step fractions in [0, 1]
        returns the stacked states at ``t + theta * h`` (leading axis: ``len(theta)``).
    end_slope : Slope
        ``f(t + h, y_new)``, lazily: FSAL steps fill it in, others compute it on first use.
    """

    __slots__ = ("y_new", "error", "interpolant", "end_slope", "error2")

    def __init__(self, y_new, error, interpolant, end_slope: Slope):
        self.y_new, self.error, self.interpolant, self.end_slope = (
            y_new,
            error,
            interpolant,
            end_slope,
        )
        self.error2 = None  # a second error estimate, for steppers whose error_norm combines two


class Stepper:
    """Base class of the steppers the step loops drive: one trial step, and hooks with defaults.

    A subclass sets :attr:`k` and implements :meth:`attempt`; it overrides a hook only where its
    method needs something other than the default. The loops read :attr:`k` on every step and the
    step-size attributes (:attr:`safety`, :attr:`pi_beta`) whenever ``k`` changes, so a stepper
    that switches methods (``method="auto"``) may change all three along a solve.

    Attributes
    ----------
    k : int
        Exponent of the step-size controller: the local error is O(h^k), ``k = min(order,
        error_order) + 1``.
    explicit : bool
        False for implicit and linearly implicit steppers: a ``MaxStepsExceeded`` then does not
        suggest a stiff method. Default True.
    safety : float or None
        The controller's safety factor (None: :data:`~dynkit.solvers.stepsize.SAFETY`, 0.9).
    pi_beta : float or None
        The PI controller's β (None: ``PI_BETA_TIMES_K / k``, 0.2 / k).
    switch_log : list or None
        The method switches made so far (``method="auto"``), handed to
        :attr:`~dynkit.solvers.Solution.switch_log`; None for a stepper that never switches.
    """

    k: int
    explicit: bool = True
    safety: float | None = None
    pi_beta: float | None = None
    switch_log: list | None = None

    def attempt(self, t: float, y: Any, h: float, k1: Any) -> Trial:
        """One trial step from ``(t, y)`` with the signed step ``h``, given ``k1 = f(t, y)``.

        Must not change the stepper's state in a way a rejection would have to undo (or undo it
        itself on the next call): the loop may reject the trial and call again with a smaller
        ``h``.

        Parameters
        ----------
        t : float
            Start of the step.
        y : array
            State at ``t`` (numpy array or torch tensor, as the solve's ``y0``).
        h : float
            The step, negative when integrating backward in time.
        k1 : array
            ``f(t, y)`` (an FSAL method's last stage of the previous step).

        Returns
        -------
        Trial
            ``y_new``, ``error`` (None for a fixed-step method), ``interpolant`` and ``end_slope``.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement attempt(t, y, h, k1)")

    def error_norm(self, trial: Trial, norm: Callable[[Any], np.ndarray]) -> np.ndarray:
        """The error measure of ``trial`` that the controller compares with 1.

        Parameters
        ----------
        trial : Trial
            The trial step returned by :meth:`attempt`.
        norm : callable
            ``norm(array)``: the loop's scaled RMS (per sample with ``per_sample=True``, or the
            user's ``control.norm``).

        Returns
        -------
        numpy.ndarray
            A 0-d array, or one value per sample. Default: ``norm(trial.error)``.
        """
        return norm(trial.error)

    def accepted(self, trial: Trial) -> None:
        """Called after the loop accepted ``trial`` (Jacobian reuse, stiffness tests, ...).

        Default: nothing.
        """

    def projected(self, y: Any) -> None:
        """Called when the loop replaced the accepted state by ``y`` (``nonnegative=`` clipping).

        A stepper that keeps the state itself (``bdf``'s difference table) updates it here.
        Default: nothing.
        """

    def step_factor(self, norm: float, accepted: bool, factor: float) -> float:
        """The factor by which the next step is ``h * factor``, given the controller's ``factor``.

        A stepper with its own step-size rule (``radau5``'s predictive controller, ``bdf``'s order
        selection) returns its factor here; ``accepted`` is ``norm <= 1``. Default: ``factor``.
        """
        return factor

    def restart(self) -> None:
        """Forget what the previous steps left (extrapolations, reused Jacobians): ``method="auto"``
        calls it when it switches to this stepper. Default: nothing."""


class _ProtocolView(Stepper):
    """A :class:`Stepper` view of an object that follows the protocol without deriving from it.

    The object's hooks are looked up once; :attr:`k` is read from it on every step (it may
    change).
    """

    def __init__(self, stepper: Any):
        self._stepper = stepper
        self.attempt = stepper.attempt
        for name in ("error_norm", "accepted", "projected", "step_factor", "restart"):
            hook = getattr(stepper, name, None)
            if hook is not None:
                setattr(self, name, hook)
        self.switch_log = getattr(stepper, "switch_log", None)

    @property
    def k(self) -> int:
        return self._stepper.k

    @property
    def explicit(self) -> bool:
        return getattr(self._stepper, "explicit", True)

    @property
    def safety(self) -> float | None:
        return getattr(self._stepper, "safety", None)

    @property
    def pi_beta(self) -> float | None:
        return getattr(self._stepper, "pi_beta", None)


def as_stepper(stepper: Any) -> Stepper:
    """``stepper`` itself if it is a :class:`Stepper`, else a :class:`Stepper` view of it.

    Parameters
    ----------
    stepper : object
        What a method's ``make_stepper`` returned: a :class:`Stepper`, or any object with ``k`` and
        ``attempt`` (and optionally the hooks of :class:`Stepper`).

    Returns
    -------
    Stepper
    """
    return stepper if isinstance(stepper, Stepper) else _ProtocolView(stepper)
