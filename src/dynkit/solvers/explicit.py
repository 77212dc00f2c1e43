"""Explicit steppers: one class for every Runge–Kutta tableau, one for the two-step (ARK) methods.

Both are :class:`~dynkit.solvers.stepper.Stepper` subclasses (``attempt(t, y, h, k1) -> Trial``);
nothing here is specific to one method: the coefficients come from
:class:`~dynkit.solvers.tableaus.RungeKuttaTableau` or :class:`~dynkit.solvers.ark.TwoStepRK`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .ark import TwoStepRK
from .stepper import Slope, Stepper, Trial
from .tableaus import RungeKuttaTableau

__all__ = ["hermite_weights", "hermite", "ExplicitRK", "TwoStep", "make_stepper"]


def hermite_weights(theta: np.ndarray, h: float) -> np.ndarray:
    """Weights of ``(y0, f0, y1, f1)`` in the cubic Hermite interpolant, one row per ``theta``."""
    t2, t3 = theta * theta, theta * theta * theta
    return np.stack(
        (2 * t3 - 3 * t2 + 1, h * (t3 - 2 * t2 + theta), 3 * t2 - 2 * t3, h * (t3 - t2)), axis=1
    )


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


def _times(h: float, coeffs):
    return [h * x for x in coeffs]


class ExplicitRK(Stepper):
    """The stepper of an explicit Runge–Kutta tableau (fixed step or embedded pair).

    One step computes the stages ``k_i = f(t + c_i h, y + h sum_j a_ij k_j)``, the update
    ``y + h sum b_i k_i``, the error estimate ``h sum e_i k_i`` and an interpolant: the tableau's
    own continuous extension ``y + h K^T P [θ, θ², ...]`` where it has one (its extra stages, if
    any, evaluated lazily on the first interpolation), cubic Hermite otherwise. The stage sums are
    the backend's: one matrix-vector product per stage for numpy, in-place accumulation for torch.
    """

    def __init__(self, tableau: RungeKuttaTableau, field, backend):
        self.tableau, self.field, self.backend = tableau, field, backend
        self.name = tableau.name
        self.order, self.error_order = tableau.order, tableau.error_order
        # the exponent of the step-size controller: err = O(h^k)
        self.k = min(tableau.order, tableau.error_order or tableau.order) + 1
        self.safety, self.pi_beta = (
            tableau.safety,
            tableau.pi_beta,
        )  # None: the controller's defaults
        s = tableau.stages
        self.last = (
            s - 1 if tableau.fsal else s
        )  # stages before y_new (FSAL: the last one is f(t + h, y_new))
        rows = backend.coefficient_rows
        self.c = tuple(map(float, tableau.c))
        self.a_rows = rows([tableau.a[i, :i] for i in range(s)])
        self.b_row = rows([tableau.b[: self.last]])[0]
        self.e_row = None if tableau.e is None else rows([tableau.e])[0]
        self.e2_row = None if tableau.e2 is None else rows([tableau.e2])[0]
        self.slope_row = s if tableau.p_uses_slope else None
        self.dense_rows = rows(list(tableau.a_dense))
        self.c_dense = tuple(map(float, tableau.c_dense))
        self.n_rows = s + (1 if tableau.p_uses_slope else 0) + len(tableau.a_dense)
        self.p_powers = None if tableau.p is None else np.arange(1, tableau.p.shape[1] + 1)
        self.p_t = None if tableau.p is None else tableau.p.T.copy()

    def attempt(self, t: float, y, h: float, k1) -> Trial:
        field, be, c, a_rows = self.field, self.backend, self.c, self.a_rows
        K = be.new_stages(self.n_rows, y, h)
        be.set_stage(K, 0, k1)
        for i in range(1, self.last):
            be.set_stage(K, i, field(t + c[i] * h, be.combine(y, K, i, a_rows[i], h)))
        y_new = be.combine(y, K, self.last, self.b_row, h)
        if self.tableau.fsal:  # the last stage is f(t + h, y_new): the next step's first
            k_last = field(t + h, y_new)
            be.set_stage(K, self.last, k_last)
            slope = Slope(field, t + h, y_new, k_last)
        else:
            slope = Slope(field, t + h, y_new)
        s = self.tableau.stages
        trial = Trial(
            y_new,
            None if self.e_row is None else be.combine(None, K, s, self.e_row, h),
            self._interpolant(t, y, h, K, k1, y_new, slope),
            slope,
        )
        if self.e2_row is not None:
            trial.error2 = be.combine(None, K, s, self.e2_row, h)
        return trial

    def error_norm(self, trial: Trial, norm) -> np.ndarray:
        """The controller's norm of the error estimate; ``norm(array)`` is the scaled RMS.

        A tableau with a second estimator (``E2``, DOP853's 3rd-order one) combines both as
        ``|e5|² / sqrt(|e5|² + 0.01 |e3|²)`` ([HNW] II.10, the DOP853 code): the 5th-order
        estimate is trusted only where the 3rd-order one does not contradict it.
        """
        e = norm(trial.error)
        if self.e2_row is None:
            return e
        e2 = norm(trial.error2)
        denom = np.sqrt(e * e + 0.01 * e2 * e2)
        return np.where(denom > 0, e * e / np.where(denom > 0, denom, 1.0), 0.0)

    def _interpolant(self, t, y, h, K, k1, y_new, slope):
        if self.tableau.p is None:
            return hermite(self.backend, h, y, k1, y_new, slope)
        return _DenseRK(self, t, y, h, K, slope)


class _DenseRK:
    """A tableau's continuous extension on one step, its extra stages computed on first use."""

    __slots__ = ("stepper", "t", "y", "h", "stages", "slope", "complete")

    def __init__(self, stepper: ExplicitRK, t, y, h, K, slope: Slope):
        self.stepper, self.t, self.y, self.h, self.stages, self.slope = stepper, t, y, h, K, slope
        self.complete = False

    def _all_stages(self):
        if not self.complete:
            st, be, K, h = self.stepper, self.stepper.backend, self.stages, self.h
            n = st.tableau.stages
            if st.slope_row is not None:
                be.set_stage(K, n, self.slope.get())
                n += 1
            for row, c in zip(st.dense_rows, st.c_dense):
                be.set_stage(K, n, st.field(self.t + c * h, be.combine(self.y, K, n, row, h)))
                n += 1
            self.complete = True
        return self.stages

    def __call__(self, theta: np.ndarray):
        st = self.stepper
        powers = np.asarray(theta, dtype=np.float64)[:, None] ** st.p_powers
        return st.backend.lincomb_many(self.y, self._all_stages(), powers @ st.p_t, self.h)


class TwoStep(Stepper):
    """Stepper of a two-step ARK method: the starter first, then Eq. (9) of CSAODE (constant
    steps)."""

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
                ks.append(
                    field(
                        t + self.starter.c[i] * h,
                        backend.lincomb(y, ks, _times(h, self.starter.a[i])),
                    )
                )
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
    for a_j in method.a_float[len(chain) - 1 :]:
        chain.append(field(t + a_j * h, backend.lincomb(y, (chain[-1],), (a_j * h,))))
    return chain


def make_stepper(method: Any, field, backend, step_size: float | None):
    """The stepper for a method object: its own ``make_stepper`` if it has one, else the explicit
    ones."""
    if isinstance(method, TwoStepRK):
        return TwoStep(method, field, backend, step_size)
    if isinstance(method, RungeKuttaTableau):
        return ExplicitRK(method, field, backend)
    return method.make_stepper(field, backend)
