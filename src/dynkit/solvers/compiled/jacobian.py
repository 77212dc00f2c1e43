"""``∂f/∂y`` (and ``∂f/∂t``) for the compiled stiff kernels: the user's ``jac`` or forward
differences.

The compiled counterpart of :class:`dynkit.solvers.jacobian.FiniteDifferenceJacobian` (dense, one
sample) and :class:`~dynkit.solvers.jacobian.UserJacobian`: the same rule, step by step, so that
both paths take the same increments and count the same calls of ``f``:

* per column ``j`` the increment ``δ_j = φ_j max(|y_j|, s_j)`` with the scale ``s_j`` in
  ``[atol_j, atol_j/rtol]`` following the largest ``|y_j|`` seen so far, and ``φ_j`` (from ``√ε``,
  within ``[√ε, 0.1]``) adapted after each Jacobian to the size of the column's largest difference;
  the increment actually taken after rounding (the next float where ``y_j + δ_j`` rounds back to
  ``y_j``);
* up to :data:`~dynkit.solvers.jacobian.REFINEMENTS` rounds recomputing the columns lost in
  rounding;
* with :data:`~dynkit.solvers.jacobian.RESOLVE_ROWS`, columns with an entry lost in the rounding of
  another row are re-probed with a larger increment, an entry taken from the re-probe only within
  the old value's rounding.

The persistent state of the rule (``φ``, the largest ``|y|``, the scale and its bounds, and the
rule's constants) is the first 8 rows of an array made by :func:`difference_state`, kept by the
kernel for the whole solve as the Python provider keeps its attributes; its other rows are the
rule's scratch (the differences, increments, masks), so that a Jacobian allocates nothing. Every
call of ``f`` is counted in ``stats[NFE]``, every Jacobian in ``stats[NJEV]``.
"""

from __future__ import annotations

import functools
import math

import numba
import numpy as np

from ..jacobian import REFINEMENTS, RESOLVE_ROWS, ROUNDING_ULPS
from .addresses import is_present
from .common import CACHE, NFE, NJEV

__all__ = [
    "EPS",
    "SQRT_EPS",
    "difference_state",
    "difference_jacobian",
    "time_derivative",
    "jacobian",
]


EPS = float(np.finfo(np.float64).eps)
SQRT_EPS = math.sqrt(EPS)
FAC_MIN, FAC_MAX = SQRT_EPS, 0.1  # FiniteDifferenceJacobian's fac_min, fac_max
# the difference-Jacobian state rows: φ, the largest |y| so far, the scale s and its bounds, then
# the rule's constants (each a row of one value: read at run time, so that the compiled kernels,
# cached on disk, follow the Python module)
FAC, MAGNITUDE, THRESHOLD, LEVEL, FLOOR, RULE_REFINEMENTS, RULE_RESOLVE_ROWS, RULE_ROUNDING_ULPS = (
    range(8)
)
# the scratch rows: vectors (FIELD: f's value at a probe), then three (n, n) blocks (masks as
# 0.0 / 1.0)
DELTA, PROBE, RESCALED, ROW_SIZE, WANTED, ONLY, LOST, FIELD, VECTORS = range(8, 17)


@numba.njit(cache=CACHE, inline="always")
def _block(st, k: int):
    """Scratch block ``k`` (0: the differences ``D``, 1: their rounding noise, 2: the coarse
    entries) of a state ``st`` of ``n`` columns."""
    n = st.shape[1]
    return st[VECTORS + k * n : VECTORS + (k + 1) * n]


def difference_state(atol: np.ndarray, rtol: float, scratch: bool = True) -> np.ndarray:
    """The rule's state at the start of a solve, ``(17 + 3n, n)``: ``φ = √ε``, no magnitude seen,
    scale ``atol``, bounds ``[atol, atol/rtol]`` (as
    :class:`~dynkit.solvers.jacobian.FiniteDifferenceJacobian` starts), the rule's constants, then
    its scratch rows (see the module docstring: 9 vectors, three ``(n, n)`` blocks).
    ``scratch=False`` leaves the blocks out, ``(17, n)``: for a solve with the user's ``jac``,
    which never differences."""
    atol = np.ascontiguousarray(atol, dtype=np.float64).reshape(-1)
    rule = (float(REFINEMENTS), float(RESOLVE_ROWS), float(ROUNDING_ULPS))  # read now: see above
    return _state_at_start(atol.tobytes(), float(rtol), rule, bool(scratch)).copy()


@functools.lru_cache(maxsize=64)
def _state_at_start(atol_bytes: bytes, rtol: float, rule: tuple, scratch: bool) -> np.ndarray:
    """The start state of :func:`difference_state`, made once per (atol, rtol, rule constants,
    scratch): a solve copies it (a small solve would otherwise spend a twentieth of its time
    here)."""
    atol = np.frombuffer(atol_bytes, dtype=np.float64)
    rows = VECTORS + 3 * atol.size if scratch else VECTORS
    state = _start_state(atol.copy(), rtol, *rule, rows)
    state.flags.writeable = False  # the template: only its copies are handed to kernels
    return state


@numba.njit(cache=CACHE)
def _start_state(atol, rtol, refinements, resolve_rows, rounding_ulps, rows):
    # compiled: a solve of a small system pays this once, and numpy's row writes cost more
    st = np.empty((rows, atol.size))
    for j in range(atol.size):
        st[FAC, j] = SQRT_EPS
        st[MAGNITUDE, j] = 0.0
        st[THRESHOLD, j] = atol[j]
        st[LEVEL, j] = atol[j] / rtol
        st[FLOOR, j] = atol[j]
        st[RULE_REFINEMENTS, j] = refinements
        st[RULE_RESOLVE_ROWS, j] = resolve_rows
        st[RULE_ROUNDING_ULPS, j] = rounding_ulps
    return st


@numba.njit(cache=CACHE)
def _rescale(y, st) -> None:
    n = y.size
    changed = False
    new = st[RESCALED]
    for j in range(n):
        st[MAGNITUDE, j] = max(st[MAGNITUDE, j], abs(y[j]))
        new[j] = max(st[FLOOR, j], min(st[LEVEL, j], st[MAGNITUDE, j]))
        if new[j] != st[THRESHOLD, j]:
            changed = True
    if changed:
        for j in range(n):
            ratio = st[THRESHOLD, j] / new[j] if new[j] > 0 else 1.0
            st[FAC, j] = min(max(st[FAC, j] * ratio, FAC_MIN), FAC_MAX)
            st[THRESHOLD, j] = new[j]


@numba.njit(cache=CACHE)
def _differences(f, t, y, f0, p, st, cols, D, delta, stats) -> None:
    """Column ``j`` (``cols[j]`` True) of ``D = f(y + δ_j e_j) − f(y)``, one counted call of
    ``f`` each."""
    n = y.size
    probe = st[PROBE]
    probe[:] = y
    for j in range(n):
        if not cols[j]:
            continue
        moved = y[j] + st[FAC, j] * max(abs(y[j]), st[THRESHOLD, j])
        if moved == y[j]:  # below the state's resolution: the smallest increment that changes y_j
            moved = np.nextafter(y[j], np.inf)
        delta[j] = moved - y[j]
        probe[j] = moved
        fj = st[FIELD]
        f(t, probe, p, fj)
        stats[NFE] += 1
        probe[j] = y[j]
        for i in range(n):
            D[i, j] = fj[i] - f0[i]


@numba.njit(cache=CACHE)
def _adapt(f0, D, st, only, lost) -> bool:
    """Update ``φ`` of the columns ``only`` from their largest difference; mark the columns lost
    in rounding."""
    n = f0.size
    any_lost = False
    for j in range(n):
        lost[j] = 0.0
        if not only[j]:
            continue
        row, big = 0, abs(D[0, j])
        for i in range(1, n):
            if abs(D[i, j]) > big:
                row, big = i, abs(D[i, j])
        f_at, d_at = f0[row], D[row, j]
        scale = max(abs(f_at), abs(f_at + d_at))
        fac = st[FAC, j]
        if big <= EPS**0.875 * scale and fac < FAC_MAX and scale > 0:
            raised = fac * SQRT_EPS * scale / big if big > 0 else fac * 1e4
            st[FAC, j] = min(raised, FAC_MAX)
            lost[j] = 1.0
            any_lost = True
        elif big < EPS**0.75 * scale:
            st[FAC, j] = min(10 * fac, FAC_MAX)
        elif big > EPS**0.25 * scale:
            st[FAC, j] = max(0.1 * fac, FAC_MIN)
    return any_lost


@numba.njit(cache=CACHE)
def _resolve_rows(f, t, y, f0, p, st, D, delta, J, stats) -> None:
    """Re-probe the columns with an entry lost in another row's rounding (the Python
    ``_resolve_rows``)."""
    n = y.size
    R, wanted = st[ROW_SIZE], st[WANTED]
    noise, coarse = _block(st, 1), _block(st, 2)
    for i in range(n):
        R[i] = 0.0
        wanted[i] = 0.0
        for j in range(n):
            R[i] = max(R[i], abs(J[i, j]))
    any_coarse = False
    for i in range(n):
        for j in range(n):
            F = max(abs(f0[i]), abs(f0[i] + D[i, j]))
            noise[i, j] = EPS * F / delta[j]
            coarse[i, j] = 0.0
            if noise[i, j] > EPS**0.375 * R[i] and R[i] > 0:
                coarse[i, j] = 1.0
                any_coarse = True
                wanted[j] = max(wanted[j], SQRT_EPS * F / R[i])
    if not any_coarse:
        return
    probe = st[PROBE]
    probe[:] = y
    for j in range(n):
        has = False
        for i in range(n):
            has = has or coarse[i, j] != 0.0
        if not has:
            continue
        step = min(max(wanted[j], delta[j]), 0.1 * max(abs(y[j]), st[LEVEL, j]))
        moved = y[j] + step
        taken = moved - y[j]
        if not taken > delta[j]:
            continue  # no larger increment allowed: nothing to gain
        probe[j] = moved
        fj = st[FIELD]
        f(t, probe, p, fj)
        stats[NFE] += 1
        probe[j] = y[j]
        for i in range(n):
            column = (fj[i] - f0[i]) / taken
            near = abs(column - J[i, j]) <= st[RULE_ROUNDING_ULPS, 0] * noise[i, j]
            if coarse[i, j] != 0.0 and near:
                J[i, j] = column


@numba.njit(cache=CACHE)
def difference_jacobian(f, t, y, f0, p, st, J, stats) -> None:
    """``J ← ∂f/∂y(t, y)`` by forward differences (``f0 = f(t, y)``), the rule of the module
    docstring."""
    n = y.size
    stats[NJEV] += 1
    _rescale(y, st)
    D, delta, only, lost = _block(st, 0), st[DELTA], st[ONLY], st[LOST]
    only[:] = 1.0
    _differences(f, t, y, f0, p, st, only, D, delta, stats)
    any_lost = _adapt(f0, D, st, only, lost)
    for _ in range(int(st[RULE_REFINEMENTS, 0])):
        if not any_lost:
            break
        only[:] = lost
        _differences(f, t, y, f0, p, st, only, D, delta, stats)
        any_lost = _adapt(f0, D, st, only, lost)
    for i in range(n):
        for j in range(n):
            J[i, j] = D[i, j] / delta[j]
    if st[RULE_RESOLVE_ROWS, 0] != 0.0:
        _resolve_rows(f, t, y, f0, p, st, D, delta, J, stats)


@numba.njit(cache=CACHE)
def time_derivative(f, t, y, f0, p, out, stats) -> None:
    """``out ← ∂f/∂t`` by one forward difference in ``t`` (one counted call), as the Python path."""
    dt = SQRT_EPS * max(1.0, abs(t))
    dt = (t + dt) - t  # the step actually taken, after rounding
    f(t + dt, y, p, out)  # f(t + dt, y) first, then the difference in place
    stats[NFE] += 1
    for i in range(y.size):
        out[i] = out[i] * (1.0 / dt) + f0[i] * (-1.0 / dt)


@numba.njit(cache=CACHE)
def jacobian(f, jac, t, y, f0, p, st, J, stats) -> None:
    """``J ← ∂f/∂y``: the user's ``jac(t, y, p)`` (one ``njev``), or differences when ``jac`` is
    None or has no code (:func:`.addresses.is_present`)."""
    if jac is None or not is_present(jac):
        difference_jacobian(f, t, y, f0, p, st, J, stats)
    else:
        stats[NJEV] += 1
        Ju = jac(t, y, p)
        n = y.size
        for i in range(n):
            for j in range(n):
                J[i, j] = Ju[i, j]
