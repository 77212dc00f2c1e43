"""Explicit steppers: one class for every Runge–Kutta tableau, one for the two-step (ARK) methods.

Both follow the stepper protocol of :mod:`dynkit.solvers.engine` (``attempt(t, y, h, k1) -> Trial``);
nothing here is specific to one method: the coefficients come from
:class:`~dynkit.solvers.tableaus.RungeKuttaTableau` or :class:`~dynkit.solvers.ark.TwoStepRK`.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .ark import TwoStepRK
from .tableaus import RungeKuttaTableau


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

    __slots__ = ("y_new", "error", "interpolant", "end_slope")

    def __init__(self, y_new, error, interpolant, end_slope: Slope):
        self.y_new, self.error, self.interpolant, self.end_slope = y_new, error, interpolant, end_slope


def hermite_weights(theta: np.ndarray, h: float) -> np.ndarray:
    """Weights of ``(y0, f0, y1, f1)`` in the cubic Hermite interpolant, one row per ``theta``."""
    t2, t3 = theta * theta, theta * theta * theta
    return np.stack((2 * t3 - 3 * t2 + 1, h * (t3 - 2 * t2 + theta), 3 * t2 - 2 * t3, h * (t3 - t2)), axis=1)


def hermite(backend, h: float, y0, f0, y1, slope1: Slope):
    """Cubic Hermite interpolant on one step from the end values and slopes ([HNW] II.6)."""

    def interpolate(theta: np.ndarray):
        return backend.lincomb_many(None, (y0, f0, y1, slope1.get()), hermite_weights(theta, h))

    return interpolate


class _Coefficients:
    """A tableau's rows as tuples of Python floats, converted once per solve.

    Scaling numpy rows by ``h`` on every stage of every step allocates an array each time and hands
    the backend numpy scalars, which are slow one by one.
    """

    def __init__(self, tableau: RungeKuttaTableau):
        self.stages = tableau.stages
        self.a = [tuple(map(float, tableau.a[i, :i])) for i in range(tableau.stages)]
        self.b, self.c = tuple(map(float, tableau.b)), tuple(map(float, tableau.c))
        self.e = None if tableau.e is None else tuple(map(float, tableau.e))
        self.e2 = None if tableau.e2 is None else tuple(map(float, tableau.e2))
        self.a_dense = [tuple(map(float, row)) for row in tableau.a_dense]
        self.c_dense = tuple(map(float, tableau.c_dense))


def _times(h: float, coeffs):
    return [h * x for x in coeffs]


class ExplicitRK:
    """The stepper of an explicit Runge–Kutta tableau (fixed step or embedded pair).

    One step computes the stages ``k_i = f(t + c_i h, y + h sum_j a_ij k_j)``, the update
    ``y + h sum b_i k_i``, the error estimate ``h sum e_i k_i`` and an interpolant: the tableau's own
    continuous extension ``y + h K^T P [θ, θ², ...]`` where it has one (its extra stages, if any,
    evaluated lazily on the first interpolation), cubic Hermite otherwise.
    """

    def __init__(self, tableau: RungeKuttaTableau, field, backend):
        self.tableau, self.field, self.backend = tableau, field, backend
        self.name = tableau.name
        self.order, self.error_order = tableau.order, tableau.error_order
        # the exponent of the step-size controller: err = O(h^k)
        self.k = min(tableau.order, tableau.error_order or tableau.order) + 1
        self.coeffs = _Coefficients(tableau)
        self.p_powers = None if tableau.p is None else np.arange(1, tableau.p.shape[1] + 1)

    def attempt(self, t: float, y, h: float, k1) -> Trial:
        field, lincomb, co = self.field, self.backend.lincomb, self.coeffs
        ks = [k1]
        last = co.stages - 1 if self.tableau.fsal else co.stages
        for i in range(1, last):
            ks.append(field(t + co.c[i] * h, lincomb(y, ks, _times(h, co.a[i]))))
        y_new = lincomb(y, ks, _times(h, co.b[:last]))
        if self.tableau.fsal:  # the last stage is f(t + h, y_new): the next step's first
            ks.append(field(t + h, y_new))
            slope = Slope(field, t + h, y_new, ks[-1])
        else:
            slope = Slope(field, t + h, y_new)
        error = None if co.e is None else lincomb(None, ks, _times(h, co.e))
        return Trial(y_new, error, self._interpolant(t, y, h, ks, k1, y_new, slope), slope)

    def error_norm(self, trial: Trial, norm) -> np.ndarray:
        """The controller's norm of the error estimate; ``norm(array)`` is the scaled RMS.

        A tableau with a second estimator (``E2``, DOP853's 3rd-order one) combines both as
        ``|e5|² / sqrt(|e5|² + 0.01 |e3|²)`` ([HNW] II.10, the DOP853 code): the 5th-order
        estimate is trusted only when the 3rd-order one does not contradict it.
        """
        e = norm(trial.error)
        if self.coeffs.e2 is None:
            return e
        ks = trial.interpolant.stages
        e2 = norm(self.backend.lincomb(None, ks, _times(trial.interpolant.h, self.coeffs.e2)))
        denom = np.sqrt(e * e + 0.01 * e2 * e2)
        return np.where(denom > 0, e * e / np.where(denom > 0, denom, 1.0), 0.0)

    def _interpolant(self, t, y, h, ks, k1, y_new, slope):
        if self.tableau.p is None:
            interp = hermite(self.backend, h, y, k1, y_new, slope)
            interp.stages, interp.h = ks, h
            return interp
        return _DenseRK(self, t, y, h, ks, slope)


class _DenseRK:
    """A tableau's continuous extension on one step, its extra stages computed on first use."""

    __slots__ = ("stepper", "t", "y", "h", "stages", "slope", "_all")

    def __init__(self, stepper: ExplicitRK, t, y, h, ks, slope: Slope):
        self.stepper, self.t, self.y, self.h, self.stages, self.slope = stepper, t, y, h, ks, slope
        self._all = None

    def _all_stages(self):
        if self._all is None:
            st = self.stepper
            ks = list(self.stages)
            if st.tableau.p_uses_slope:
                ks.append(self.slope.get())
            lincomb, h = st.backend.lincomb, self.h
            for row, c in zip(st.coeffs.a_dense, st.coeffs.c_dense):
                ks.append(st.field(self.t + c * h, lincomb(self.y, ks, _times(h, row))))
            self._all = ks
        return self._all

    def __call__(self, theta: np.ndarray):
        st = self.stepper
        powers = np.asarray(theta, dtype=np.float64)[:, None] ** st.p_powers
        return st.backend.lincomb_many(self.y, self._all_stages(), self.h * (powers @ st.tableau.p.T))


class TwoStep:
    """Stepper of a two-step ARK method: the starter first, then Eq. (9) of CSAODE (constant steps)."""

    def __init__(self, method: TwoStepRK, field, backend, h: float):
        self.field, self.backend, self.method, self.h = field, backend, method, h
        self.name, self.order, self.error_order = method.name, method.order, None
        self.k = method.order + 1
        self.coeffs = method.update_coefficients(h)
        self.starter = _Coefficients(method.starter)
        self.n = 0
        self.prev = None  # (t_{n-1}, y_{n-1}, chain at t_{n-1} or the starter's stages)

    def attempt(self, t: float, y, h: float, k1) -> Trial:
        field, backend, method = self.field, self.backend, self.method
        h = self.h  # constant steps: the two-step coefficients were made for this h
        self.n += 1
        if self.n == 1:  # a one-step method of the same order; its stages seed the recursion
            ks = [k1]
            for i in range(1, self.starter.stages):
                ks.append(field(t + self.starter.c[i] * h, backend.lincomb(y, ks, _times(h, self.starter.a[i]))))
            self.prev = (t, y, ks[: method.starter_reuse()])
            y_new = backend.lincomb(y, ks, _times(h, self.starter.b))
        else:
            t_prev, y_prev, prev_chain = self.prev
            if self.n == 2:  # complete the chain at t_0 where the starter's stages differ from it
                prev_chain = _ark_chain(field, backend, method, t_prev, y_prev, h, prev_chain)
            chain = _ark_chain(field, backend, method, t, y, h, [k1])
            self.prev = (t, y, chain)
            y_new = backend.lincomb(None, (y, y_prev, *chain, *prev_chain), self.coeffs)
        slope = Slope(field, t + h, y_new)
        return Trial(y_new, None, hermite(backend, h, y, k1, y_new, slope), slope)


def _ark_chain(field, backend, method: TwoStepRK, t, y, h, known):
    """k_1 = f(t, y), k_j = f(t + a_j h, y + a_j h k_{j-1}) for j = 2..s (Eq. (10) of CSAODE);
    the stages in ``known`` (a prefix of the chain) are not recomputed."""
    chain = list(known)
    for a_j in method.a_float[len(chain) - 1:]:
        chain.append(field(t + a_j * h, backend.lincomb(y, (chain[-1],), (a_j * h,))))
    return chain


def make_stepper(method: Any, field, backend, step_size: float | None):
    """The stepper for a method object: its own ``make_stepper`` if it has one, else the explicit ones."""
    if isinstance(method, TwoStepRK):
        return TwoStep(method, field, backend, step_size)
    if isinstance(method, RungeKuttaTableau):
        return ExplicitRK(method, field, backend)
    return method.make_stepper(field, backend)
