"""Jacobians ``J = ∂f/∂y`` and time derivatives ``∂f/∂t`` for the linearly implicit (Rosenbrock)
steppers.

Three providers, one interface ``provider(t, y, f0) -> (J, f_t)``:

* :class:`UserJacobian` — the user's ``jac(t, y)``;
* :class:`AutogradJacobian` — ``torch.func.jacrev`` for torch states (one reverse pass per row,
  vectorised), and ``∂f/∂t`` by ``torch.func.jvp``;
* :class:`FiniteDifferenceJacobian` — forward differences for numpy states, ``f0 = f(t, y)`` reused.

``J`` is an array of shape ``(d, d)`` with ``d = y.size`` (the state flattened), or ``(B, n, n)``
with ``n = y[0].size`` when the leading axis holds ``B`` independent samples (``batched=True``: the
Jacobian is block diagonal and only its blocks are formed). ``f_t`` has the state's shape.

Every call of ``f`` is counted in the solve's ``stats.nfe`` (finite-difference calls, the autograd
pass and the time-derivative probe included); each provider call counts one ``stats.njev``.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Callable

import numpy as np

__all__ = [
    "REFINEMENTS",
    "RESOLVE_ROWS",
    "ROUNDING_ULPS",
    "SparsityPattern",
    "PATTERN_PROBE_SHARE",
    "PATTERN_ROUNDING_ULPS",
    "PATTERN_MISSING_SHARE",
    "check_pattern",
    "JAC_CHECK_SHARE",
    "JAC_CHECK_ROUNDING_ULPS",
    "check_jacobian",
    "verify_user_jacobian",
    "UserJacobian",
    "FiniteDifferenceJacobian",
    "AutogradJacobian",
    "jacobian_provider",
    "torch_refusal",
    "is_sparse",
]


def _relative_step(backend) -> float:
    """sqrt(eps) of the state's dtype: balances truncation (O(δ)) and round-off (O(eps/δ))."""
    if backend.name == "torch":
        import torch

        return math.sqrt(torch.finfo(backend.dtype).eps)
    return math.sqrt(np.finfo(backend.dtype).eps)


# the tolerances that bound the increments' scale (atol, atol / rtol) when the field does not carry
# them
DEFAULT_RTOL, DEFAULT_ATOL = 1e-6, 1e-8
# rounds of recomputing the columns whose difference was lost in rounding
REFINEMENTS = 2
# re-probe columns with an entry lost in the rounding of a row other than the column's largest
# (_resolve_rows)
RESOLVE_ROWS = True
# rounding units of f in which a re-probed entry may differ from the first value and replace it
ROUNDING_ULPS = 8.0


class SparsityPattern:
    """The structure of ``∂f/∂y`` (``jac_sparsity=``): where entries may be nonzero, in CSC order.

    ``indptr`` / ``indices`` as in ``scipy.sparse.csc_matrix``, ``column_of_entry`` the column of
    each stored entry, ``groups`` the structurally orthogonal column groups ([CPR], see
    :class:`FiniteDifferenceJacobian`).
    """

    def __init__(self, pattern: Any, d: int):
        import scipy.sparse

        if scipy.sparse.issparse(pattern):
            S = scipy.sparse.csc_matrix(pattern)
            _check_zero_one(S.data)
        else:
            try:
                dense = np.asarray(pattern)
            except (TypeError, ValueError):
                raise TypeError(
                    f"jac_sparsity must be a (d, d) array or scipy.sparse matrix of 0/1 "
                    f"(True/False), "
                    f"got {type(pattern).__name__}"
                ) from None
            if dense.dtype.kind not in "biuf":
                raise TypeError(f"jac_sparsity must hold 0/1 or booleans, got dtype {dense.dtype}")
            _check_zero_one(dense)
            S = scipy.sparse.csc_matrix(dense != 0)
        if S.shape != (d, d):
            raise ValueError(
                f"jac_sparsity must have shape ({d}, {d}) for a state of {d} components, "
                f"got shape {S.shape}"
            )
        S = scipy.sparse.csc_matrix((np.ones(S.nnz), S.indices, S.indptr), shape=S.shape)
        S.sum_duplicates()
        S.eliminate_zeros()
        S.sort_indices()
        self.shape, self.nnz = S.shape, S.nnz
        self.indptr, self.indices = S.indptr.copy(), S.indices.copy()
        self.column_of_entry = np.repeat(np.arange(d), np.diff(self.indptr))
        self.groups = _column_groups(self.indptr, self.indices, d)
        # each group's stored entries, found once: a Jacobian reads them per group
        self.group_entries = [self.entries_of(cols) for cols in self.groups]

    def entries_of(self, cols: np.ndarray) -> np.ndarray:
        """Positions of the stored entries of the columns ``cols`` (vectorised: a loop over the
        columns cost 35 ms a Jacobian at 10k states)."""
        cols = np.asarray(cols, dtype=np.intp)
        starts, lengths = self.indptr[cols], np.diff(self.indptr)[cols]
        if lengths.sum() == 0:
            return np.zeros(0, np.intp)
        # entry k of the output: starts[c] + (k − offset of column c among the output's runs)
        offsets = np.cumsum(lengths) - lengths
        return np.repeat(starts - offsets, lengths) + np.arange(int(lengths.sum()))

    def column_argmax(self, values: np.ndarray) -> np.ndarray:
        """Per column, the position of its largest stored value (−1 for an empty column)."""
        d = self.shape[1]
        out = np.full(d, -1)
        if self.nnz == 0:
            return out
        # sort by (column, value): the last entry of each nonempty column holds its maximum
        order = np.lexsort((values, self.column_of_entry))
        ends = self.indptr[1:] - 1
        nonempty = np.diff(self.indptr) > 0
        out[nonempty] = order[ends[nonempty]]
        return out


def _check_zero_one(values: np.ndarray) -> None:
    """Refuse a pattern holding anything but 0/1 (or booleans): 0.5, 2 or NaN say the caller
    passed values of a Jacobian, or a weight, where its structure was expected."""
    if values.dtype.kind == "b":
        return
    bad = ~((values == 0) | (values == 1))
    if bad.any():
        raise ValueError(
            f"jac_sparsity must hold only 0/1 or booleans (the structure of ∂f/∂y, 1 where "
            f"an entry "
            f"may be nonzero), got {values[bad].ravel()[0]!r} among its {int(bad.sum())} "
            f"other values"
        )


# the probe that checks a sparsity pattern: a row's difference that the pattern's entries leave
# unexplained by more than this share of what they explain (or than the rounding level below) makes
# the dense check run
PATTERN_PROBE_SHARE = 1e-3
PATTERN_ROUNDING_ULPS = 1e3
# the dense check names an entry outside the pattern whose difference exceeds this share of its
# row's largest
PATTERN_MISSING_SHARE = 1e-6


def check_pattern(
    field, t: float, rows: np.ndarray, f_rows: np.ndarray, shape, dtype, pattern, D, delta
) -> None:
    """Verify ``jac_sparsity`` once, at the first Jacobian: a ValueError naming the entries it
    misses.

    One probe ``f(y + p) − f(y)`` with ``p_j = ±h_j r_j`` (``r_j`` in [0.5, 1], a fixed seed;
    ``h_j = √ε max(|y_j|, max_k |y_k|)``, large enough that a component at 0 still moves every
    ``f_i`` depending on it) is compared with ``Σ_j J_ij p_j`` from the grouped differences: the
    entries the pattern declares explain every row of it unless the pattern misses some. Only then
    (a row unexplained by more than :data:`PATTERN_PROBE_SHARE`) a dense difference Jacobian (``d``
    more calls of ``f``) names the missing entries; a false alarm of the probe costs those calls and
    raises nothing. An entry that is zero at the first Jacobian and nonzero later is not seen.
    """
    eps = float(np.finfo(dtype).eps)
    rng = np.random.default_rng(20240533)
    y = rows[0]
    size = float(np.max(np.abs(y))) or 1.0
    step = np.sqrt(eps) * np.maximum(np.abs(y), size)
    step = (y + step) - y  # the increments actually taken, after rounding
    p = step * rng.uniform(0.5, 1.0, y.size) * rng.choice((-1.0, 1.0), y.size)
    terms = (
        D / delta[0, pattern.column_of_entry] * p[pattern.column_of_entry]
    )  # J_ij p_j, declared entries
    explained, magnitude = np.zeros(y.size), np.zeros(y.size)
    np.add.at(explained, pattern.indices, terms)
    np.add.at(magnitude, pattern.indices, np.abs(terms))
    moved = y + p
    f_moved = np.asarray(
        field(t, moved.reshape(shape).astype(dtype, copy=False)), dtype=np.float64
    ).reshape(-1)
    residual = np.abs(f_moved - f_rows[0] - explained)
    floor = PATTERN_ROUNDING_ULPS * eps * np.maximum(np.abs(f_rows[0]), np.abs(f_moved))
    if not (residual > PATTERN_PROBE_SHARE * magnitude + floor).any():
        return
    d = rows.shape[1]
    dense = np.empty((d, d))
    for j in range(d):
        probe = y.copy()
        probe[j] += step[j]
        dense[:, j] = (
            np.asarray(
                field(t, probe.reshape(shape).astype(dtype, copy=False)), dtype=np.float64
            ).reshape(-1)
            - f_rows[0]
        )
    declared = np.zeros((d, d), bool)
    declared[pattern.indices, pattern.column_of_entry] = True
    row_scale = np.abs(dense).max(axis=1, keepdims=True)
    row_floor = PATTERN_ROUNDING_ULPS * eps * np.abs(f_rows[0])[:, None]
    missing = np.argwhere(
        ~declared & (np.abs(dense) > PATTERN_MISSING_SHARE * row_scale + row_floor)
    )
    if len(missing) == 0:
        return
    shown = ", ".join(f"({i}, {j})" for i, j in missing[:10]) + (
        f", ... ({len(missing)} in all)" if len(missing) > 10 else ""
    )
    raise ValueError(
        f"jac_sparsity misses nonzero entries of ∂f/∂y at t={t:.6g}: (row, column) = {shown} "
        f"(difference quotients {', '.join(f'{dense[i, j] / step[j]:.3g}' for i, j in missing[:3])}"
        f"{', ...' if len(missing) > 3 else ''}); the grouped differences would add them "
        f"into other "
        f"entries and the solve would be wrong. Add them to the pattern (expected a pattern with 1 "
        f"wherever f_i depends on y_j)"
    )


# the check of a user's jac at the start of a solve (check_jacobian): a row whose central difference
# of f the jac misses by more than this share of the larger of the two, above the rounding level
# below, is a mismatch
JAC_CHECK_SHARE = 1e-3
JAC_CHECK_ROUNDING_ULPS = 1e3


def check_jacobian(
    f: Callable, J: Any, t: float, y: np.ndarray, atol: np.ndarray, dtype: Any = np.float64
) -> None:
    """Verify a user's ``J = jac(t, y)`` against a central difference of ``f`` along one probe: a
    ValueError if they disagree beyond rounding (two calls of ``f``, whatever the state's size).

    ``f(t, y) -> array`` and ``y``, ``atol`` (float64 arrays of ``(B, n)`` rows: ``B = 1`` unless
    ``J`` holds per-sample blocks ``(B, n, n)``) are numpy; ``J`` is dense ``(d, d)``, ``(B, n, n)``
    or ``scipy.sparse``; ``dtype`` is the state's (numpy) float type, whose ``ε`` and rounding
    apply. The probe ``p_j = ±r_j ε^{1/3} max(|y_j|, atol_j)`` (``r_j`` in [0.5, 1], fixed seed) is
    scaled to each component as the difference rule of :class:`FiniteDifferenceJacobian` (a
    component of size 1e-8 moves by 1e-8 of its own size, not of another's), with the step that
    balances a central difference's truncation (``O(p²)``) against rounding (``O(ε/p)``): both are
    ``ε^{2/3}`` relative (4e-11 in float64, 2e-5 in float32). Row ``i`` fails when ``|Δ_i − (J q)_i|
    > share · max(Σ_j |J_ij q_j|, |Δ_i|) + floor_i`` with ``Δ = f(y + p) − f(y − p)``, ``q`` the
    increments actually taken, ``share`` = :data:`JAC_CHECK_SHARE` and ``floor_i = ulps · ε (|f_i(y
    + p)| + |f_i(y − p)| + 2 Σ_j |J_ij| |y_j|)`` (``ulps`` = :data:`JAC_CHECK_ROUNDING_ULPS`: the
    rounding of ``f_i``, whose terms may be far larger than ``f_i`` itself on a stiff problem's slow
    manifold). A right ``J`` misses by ``ε^{2/3}`` relative, 25 times below the share in float32 and
    1e7 times in float64; a ``J`` off by a factor ``c`` (a flipped sign ``c = −1``, a wrong scale,
    zero: ``c = 0``) misses by ``|1 − c| / max(|c|, 1)`` of the larger, which passes only within
    1e-3 of ``c = 1``. A wrong entry whose term is below the share of its row's largest term along
    the probe is not seen.
    """
    eps = float(np.finfo(dtype).eps)
    scale = np.maximum(np.abs(y), atol)
    step = eps ** (1 / 3) * scale * _probe_pattern(tuple(y.shape))
    up = (y + step).astype(dtype).astype(np.float64)  # the states f sees, in the state's type
    down = (y - step).astype(dtype).astype(np.float64)
    f_up, f_down = f(t, up), f(t, down)
    if not (np.isfinite(f_up).all() and np.isfinite(f_down).all()):
        return  # f cannot be probed here: the solve reports a non-finite f itself
    q = up - down  # the increment actually taken, after rounding
    change = f_up - f_down
    if is_sparse(J):
        predicted = (J @ q.ravel()).reshape(y.shape)
        terms = (abs(J) @ np.abs(q.ravel())).reshape(y.shape)
        sizes = (abs(J) @ np.abs(y.ravel())).reshape(y.shape)
    else:
        blocks = np.asarray(J, dtype=np.float64).reshape(y.shape[0], y.shape[1], y.shape[1])
        magnitudes = np.abs(blocks)
        predicted = np.matmul(blocks, q[..., None])[..., 0]
        terms = np.matmul(magnitudes, np.abs(q)[..., None])[..., 0]
        sizes = np.matmul(magnitudes, np.abs(y)[..., None])[..., 0]
    residual = np.abs(change - predicted)
    floor = JAC_CHECK_ROUNDING_ULPS * eps * (np.abs(f_up) + np.abs(f_down) + 2 * sizes)
    bad = residual > JAC_CHECK_SHARE * np.maximum(terms, np.abs(change)) + floor
    if not bad.any():
        return
    rows = np.flatnonzero(bad.ravel())
    jp, df = predicted.ravel(), change.ravel()
    worst = rows[np.argsort(-(residual.ravel()[rows]))][:3]
    fit = float(jp[rows] @ df[rows]) / (float(df[rows] @ df[rows]) or 1.0)
    shown = "; ".join(f"row {i}: jac gives {jp[i] / 2:.6g}, f gives {df[i] / 2:.6g}" for i in worst)
    raise ValueError(
        f"jac does not match f at t={t:.6g}: along a probe direction p (each component moved by "
        f"~{eps ** (1 / 3):.1e} of its size), jac(t, y) @ p differs from the central difference "
        f"(f(y + p) - f(y - p)) / 2 in {rows.size} of {y.size} rows ({shown})"
        f"{'' if rows.size <= 3 else '; ...'}; on those rows jac is about {fit:.3g} times the "
        f"difference. The stiff methods would return a wrong answer or take far more steps. "
        f"Expected jac(t, y)[i, j] = ∂f_i/∂y_j (check its sign, scale and orientation: not "
        f"transposed); pass jac_check=False only for a deliberately approximate Jacobian (radau5 "
        f"and bdf converge with one, the Rosenbrock methods lose their order)"
    )


@functools.lru_cache(maxsize=64)
def _probe_pattern(shape: tuple) -> np.ndarray:
    """``±r_j`` of :func:`check_jacobian`'s probe (fixed seed: the same for every call of this
    shape), read-only."""
    rng = np.random.default_rng(20240533)
    signs = rng.choice((-1.0, 1.0), shape)
    pattern = rng.uniform(0.5, 1.0, shape) * signs
    pattern.flags.writeable = False
    return pattern


def verify_user_jacobian(field, backend, t: float, y) -> None:
    """:func:`check_jacobian` for a solve's ``field.jac`` at ``(t, y)``: one counted call of ``jac``
    (``njev``) and two of ``f`` (``nfe``), before the first step."""
    provider = UserJacobian(field.jac, field, backend, field.batched)
    provider.with_time = False
    J, _ = provider(t, y, None)
    J = J if is_sparse(J) else backend.to_numpy(J)
    rows_shape = provider.want[:2] if field.batched else (1, provider.want[0])
    dtype = np.dtype(str(backend.dtype).removeprefix("torch."))
    shape = tuple(field.shape)

    def f(tt, rows):
        state = rows.reshape(shape).astype(dtype)
        if backend.name == "torch":
            import torch

            state = torch.as_tensor(state, dtype=backend.dtype, device=backend.device)
            with torch.no_grad():
                return backend.to_numpy(field(tt, state)).reshape(rows_shape)
        return np.asarray(field(tt, state), dtype=np.float64).reshape(rows_shape)

    atol = np.broadcast_to(backend.to_numpy(field.atol), shape).reshape(rows_shape)
    check_jacobian(f, J, t, backend.to_numpy(y).reshape(rows_shape), atol, dtype)


def _column_groups(indptr: np.ndarray, indices: np.ndarray, d: int) -> list[np.ndarray]:
    """Greedy grouping of structurally orthogonal columns ([CPR]): column ``j`` joins the first
    group none of whose columns has a nonzero in a row of ``j``.

    The same groups as trying each group's occupied rows in turn, found on the column intersection
    graph ``SᵀS`` instead (columns ``j`` and ``k`` are adjacent when they share a row): ``j`` takes
    the smallest group number no adjacent earlier column holds, a greedy colouring of that graph in
    column order ([CPR]; Coleman & Moré 1983 for the graph view). One pass over plain Python lists:
    the row-mask test per group cost 0.3 s at 10k states, linear in ``d`` times the groups, with a
    numpy call per test.

    References
    ----------
    .. [CM] T. F. Coleman, J. J. Moré, "Estimation of sparse Jacobian matrices and graph coloring
       problems", SIAM J. Numer. Anal. 20 (1983) 187-209.
    """
    import scipy.sparse

    if d == 0:
        return []
    S = scipy.sparse.csc_matrix((np.ones(len(indices)), indices, indptr), shape=(d, d))
    adjacency = (S.T @ S).tocsr()  # (j, k) stored iff columns j and k share a row
    adjacency.sort_indices()
    starts, neighbours = adjacency.indptr.tolist(), adjacency.indices.tolist()
    colour = [0] * d
    for j in range(d):
        taken = {colour[k] for k in neighbours[starts[j] : starts[j + 1]] if k < j}
        c = 0
        while c in taken:
            c += 1
        colour[j] = c
    colours = np.asarray(colour)
    order = np.argsort(colours, kind="stable")  # columns by group, in column order within one
    bounds = np.searchsorted(colours[order], np.arange(colours.max() + 2))
    return [order[bounds[g] : bounds[g + 1]] for g in range(colours.max() + 1)]


class UserJacobian:
    """``jac(t, y)`` from the user: ``J``, or the pair ``(J, ∂f/∂t)`` (``∂f/∂t`` may be ``0`` for
    an autonomous ``f``); for a bare ``J``, ``∂f/∂t`` by one forward difference in ``t`` (one
    counted call)."""

    with_time = True  # also ∂f/∂t (the Rosenbrock methods need it; Radau does not)

    def __init__(self, jac: Callable, field, backend, batched: bool):
        self.jac, self.field, self.backend, self.batched = jac, field, backend, batched
        shape = tuple(field.shape)
        n = int(np.prod(shape[1:])) if batched else int(np.prod(shape))
        self.want = (shape[0], n, n) if batched else (n, n)

    def __call__(self, t: float, y, f0):
        self.field.stats.njev += 1
        J = self.jac(self.backend.time(t), y)
        f_t = None
        if isinstance(J, tuple):
            if len(J) != 2:
                raise ValueError(
                    f"jac must return ∂f/∂y or the pair (∂f/∂y, ∂f/∂t), got a tuple of {len(J)}"
                )
            J, f_t = J
        if is_sparse(J) and self.backend.name == "numpy" and not self.batched:
            J = J.tocsc().astype(
                self.backend.dtype
            )  # sparse LU in the stepper (scipy.sparse.linalg.splu)
            if tuple(J.shape) != self.want:
                raise ValueError(
                    f"jac must return ∂f/∂y of shape {self.want} for a state of shape "
                    f"{tuple(self.field.shape)}, got a sparse matrix of shape {J.shape}"
                )
            return J, self._time(t, y, f0, f_t)
        J = _as_backend_matrix(self.backend, J, "jac")
        if tuple(J.shape) != self.want:
            if math.prod(J.shape) == math.prod(self.want):
                J = J.reshape(self.want)
            else:
                raise ValueError(
                    f"jac must return ∂f/∂y of shape {self.want} for a state of shape "
                    f"{tuple(self.field.shape)}{' (per sample)' if self.batched else ''}, "
                    f"got shape {tuple(J.shape)}"
                )
        return J, self._time(t, y, f0, f_t)

    def _time(self, t, y, f0, f_t):
        if not self.with_time:
            return None
        return (
            _time_derivative(self.field, self.backend, t, y, f0)
            if f_t is None
            else self._time_part(f_t, y)
        )

    def _time_part(self, f_t, y):
        """The user's ``∂f/∂t`` as an array like ``y`` (a scalar 0 for an autonomous ``f``)."""
        if isinstance(f_t, (int, float)) and f_t == 0:
            return y * 0  # zeros like y (its dtype and device); lincomb skips zero weights anyway
        f_t = _as_backend_matrix(self.backend, f_t, "jac's ∂f/∂t")
        if tuple(f_t.shape) != tuple(y.shape):
            raise ValueError(
                f"jac's ∂f/∂t must have the state's shape {tuple(y.shape)} (or be 0), "
                f"got shape {tuple(f_t.shape)}"
            )
        return f_t


class FiniteDifferenceJacobian:
    """Forward differences with increments scaled to each column's state and tolerance, refined
    where a column's difference is lost in rounding ([S] and [SR] Sect. 6; [HW] IV.8 for the
    scaling).

    Column ``j`` is perturbed by ``δ_j = φ_j · max(|y_j|, s_j)`` with the scale
    ``s_j = max(atol_j, min(atol_j / rtol, m_j))``, ``m_j`` the largest ``|y_j|`` at the Jacobians
    so far (the component's typical size). Not ``√ε · max(1, |y_j|)``, which is 1e-8 for a component
    of size 1e-13 and turns its difference quotient into a secant over a range a hundred thousand
    times its size (Robertson's y2); and not the level ``atol_j / rtol`` where the error control
    turns absolute on its own: with a scalar ``atol = rtol`` that level is 1 for Robertson's y2,
    which never exceeds 3.6e-5, and the secant made rodas5 return y1 37 tolerances off (rtol = atol
    = 1e-6) and radau5 and bdf blow up to y1 ≈ −2e7 as a success (rtol 1e-5, atol 1e-6), where the
    analytic ``jac=`` is right. ``m_j`` cannot fall, and when ``s_j`` changes ``φ_j`` is scaled
    inversely, so an increment adapted to rounding is kept. The factor ``φ_j`` starts at ``√ε`` and
    is kept per column from one Jacobian to the next (Salane's adaptive increments [S]): with
    ``Δ_j`` the column's largest difference ``|f_i(y + δ_j e_j) − f_i(y)|`` and
    ``F_j = max(|f_i(y)|, |f_i(y + δ_j e_j)|)`` in its row,

    * ``Δ_j ≤ ε^{7/8} F_j`` — the difference is lost in rounding: the column is recomputed at once
      with ``φ_j`` raised towards ``Δ_j ≈ ε^{1/2} F_j`` (×1e4 if ``Δ_j = 0``; one more call of ``f``
      for all such columns of a group; twice at most);
    * ``Δ_j < ε^{3/4} F_j`` — few digits left: ``φ_j`` ×10 for the next Jacobian;
    * ``Δ_j > ε^{1/4} F_j`` — a large change of ``f``, truncation error likely: ``φ_j`` ×0.1 next
      time;
    * an entry of another row that the increment cannot tell from that row's rounding
      (``ε F_i / δ_j`` above ``ε^{3/8}`` of the row's largest entry): the column is differenced once
      more with a larger increment, and those entries are taken from it where they agree with the
      first within rounding (dense ``J`` only; ``_resolve_rows``).

    ``φ`` stays within ``[√ε, 0.1]``: never below its start, because a difference large against
    ``|f|`` is not evidence of truncation where ``f`` is small by cancellation — on the slow
    manifold of a stiff problem (``y' = Ay``, ``|Ay| ≪ |A||y|``) shrinking ``φ`` to ``ε^{3/4}`` cost
    1e-5 relative accuracy in ``J`` and made rodas4 take 50× the steps (measured on the bench's
    linear10). With a sparsity pattern (``jac_sparsity=``), structurally orthogonal columns (no row
    in common) form a group perturbed together, one call of ``f`` per group (Curtis, Powell & Reid's
    grouping [CPR], greedy in column order), and ``J`` is a ``scipy.sparse.csc_matrix``. For a batch
    (``batched``, per-sample error control) component ``j`` of every sample is perturbed at once,
    which is exact for independent samples. One more call of ``f`` estimates ``∂f/∂t``.

    References
    ----------
    .. [S] D. E. Salane, "Adaptive routines for forming Jacobians numerically", Sandia report
       SAND86-1319 (1986).
    .. [SR] L. F. Shampine, M. W. Reichelt, "The MATLAB ODE Suite", SIAM J. Sci. Comput. 18 (1997)
       1-22, Sect. 6 (numerical Jacobians, column grouping, increments kept between evaluations).
    .. [CPR] A. R. Curtis, M. J. D. Powell, J. K. Reid, "On the estimation of sparse Jacobian
       matrices", J. Inst. Math. Appl. 13 (1974) 117-119.
    """

    with_time = True  # also ∂f/∂t (the Rosenbrock methods need it; Radau does not)

    def __init__(self, field, backend, batched: bool, sparsity=None):
        self.field, self.backend, self.batched = field, backend, batched
        eps = float(np.finfo(backend.dtype).eps)
        self.eps = eps
        self.fac_min, self.fac_max = math.sqrt(eps), 0.1
        shape = tuple(field.shape)
        self.rows_shape = (
            (shape[0], int(np.prod(shape[1:]))) if batched else (1, int(np.prod(shape)))
        )
        n = self.rows_shape[1]
        self.fac = np.full(self.rows_shape, math.sqrt(eps))
        rtol = float(getattr(field, "rtol", DEFAULT_RTOL))
        atol = np.asarray(getattr(field, "atol", DEFAULT_ATOL), dtype=np.float64)
        atol_rows = np.broadcast_to(atol, shape).reshape(self.rows_shape)
        self.level, self.floor = atol_rows / rtol, atol_rows  # s_j lies in [atol_j, atol_j / rtol]
        self.magnitude = np.zeros(self.rows_shape)  # the largest |y_j| at the Jacobians so far
        self.threshold = self.floor.copy()
        self.sparsity = None
        if sparsity is not None:
            if batched:
                raise ValueError(
                    "jac_sparsity does not combine with per_sample=True (expected "
                    "jac_sparsity=None "
                    "for a per-sample solve: its Jacobian is block diagonal already)"
                )
            self.sparsity = sparsity
            self.groups = sparsity.groups
        else:
            self.groups = [np.array([j]) for j in range(n)]
        self.pattern_checked = (
            False  # jac_sparsity is verified at the first Jacobian (check_pattern)
        )

    def __call__(self, t: float, y, f0):
        self.field.stats.njev += 1
        shape = tuple(y.shape)
        rows = y.reshape(self.rows_shape).astype(np.float64, copy=False)
        f_rows = f0.reshape(self.rows_shape).astype(np.float64, copy=False)
        n = self.rows_shape[1]
        self._rescale(rows)
        if self.sparsity is None:
            D = np.empty((self.rows_shape[0], n, n))  # D[b, i, j] = f_i(y + δ_j e_j) − f_i(y)
        else:
            D = np.zeros(self.sparsity.nnz)
        delta = np.empty(self.rows_shape)
        self._differences(t, rows, f_rows, shape, self.groups, delta, D)
        # refinement: columns whose difference was lost in rounding are recomputed with a larger φ
        # (twice at most: a difference that was exactly 0 gives no scale for the first raise)
        lost = self._adapt(f_rows, D, delta, np.ones(self.fac.shape, bool))
        for _ in range(REFINEMENTS):
            if not lost.any():
                break
            redo = [cols[lost[:, cols].any(axis=0)] for cols in self.groups]
            self._differences(
                t, rows, f_rows, shape, [cols for cols in redo if cols.size], delta, D
            )
            lost = self._adapt(f_rows, D, delta, lost)
        if self.sparsity is None:
            J = D / delta[:, None, :]
            if RESOLVE_ROWS:
                self._resolve_rows(t, rows, f_rows, shape, D, delta, J)
            J = (J if self.batched else J[0]).astype(self.backend.dtype, copy=False)
        else:
            import scipy.sparse

            pattern = self.sparsity
            if not self.pattern_checked:
                check_pattern(
                    self.field, t, rows, f_rows, shape, self.backend.dtype, pattern, D, delta
                )
                self.pattern_checked = True
            values = D / delta[0, pattern.column_of_entry]
            J = scipy.sparse.csc_matrix(
                (values.astype(self.backend.dtype), pattern.indices, pattern.indptr),
                shape=pattern.shape,
            )
        return J, (_time_derivative(self.field, self.backend, t, y, f0) if self.with_time else None)

    def _resolve_rows(self, t, rows, f_rows, shape, D, delta, J) -> None:
        """Re-probe the columns with an entry lost in the rounding of another row (dense ``J``, in
        place).

        An increment fitted to its column's largest difference can be far too small for a row
        where ``|f_i|`` is large: at HIRES's start y3 ≈ 1e-13 takes an increment ~1e-20, f3
        (tiny) resolves ∂f3/∂y3 well, and in f1 ≈ −1.7 the change 8.32 · 1e-20 is below one
        rounding unit: ∂f1/∂y3 = 8.32 came out 0. Entry ``(i, j)`` can be told apart from
        rounding down to ``ε F_i / δ_j`` (``F_i = max(|f_i(y)|, |f_i(y + δ_j e_j)|)``); where
        that exceeds ``ε^{3/8}`` of the row's largest entry, column ``j`` is differenced once
        more with the increment that resolves every such row to ``√ε`` of its scale,
        ``√ε F_i / R_i``, at most ``0.1 · max(|y_j|, atol_j / rtol)``, and only those entries are
        taken from it, and only where the new value lies within the old one's rounding
        (``ROUNDING_ULPS · ε F_i / δ_j``): the others keep the fitted increment, whose truncation
        error is smaller."""
        eps = self.eps
        R = np.abs(J).max(axis=2, keepdims=True)  # (B, n, 1): each row's largest entry
        F = np.maximum(np.abs(f_rows)[:, :, None], np.abs(f_rows[:, :, None] + D))
        with np.errstate(divide="ignore", invalid="ignore"):
            noise = (
                eps * F / delta[:, None, :]
            )  # the smallest change of entry (i, j) above f_i's rounding
            coarse = (noise > eps**0.375 * R) & (R > 0)
            if not coarse.any():
                return
            wanted = np.where(coarse, np.sqrt(eps) * F / np.where(R > 0, R, 1.0), 0.0).max(
                axis=1
            )  # (B, n)
        cap = 0.1 * np.maximum(np.abs(rows), self.level)
        cols = np.flatnonzero(coarse.any(axis=(0, 1)))
        step = np.minimum(np.maximum(wanted[:, cols], delta[:, cols]), cap[:, cols])
        moved = rows[:, cols] + step
        taken = moved - rows[:, cols]
        for k, j in enumerate(cols):
            if not (taken[:, k] > delta[:, j]).any():
                continue  # no larger increment allowed: nothing to gain
            probe = rows.copy()
            probe[:, j] = moved[:, k]
            df = self._field_change(t, probe, shape, f_rows)
            column = df / taken[:, k][:, None]
            # an entry moves only within the old value's rounding: beyond it the old value stands,
            # and the difference is the larger increment's truncation error (Robertson's ∂f2/∂y2 =
            # −121.3 became −121.8 without this)
            within = np.abs(column - J[:, :, j]) <= ROUNDING_ULPS * noise[:, :, j]
            J[:, :, j] = np.where(coarse[:, :, j] & within, column, J[:, :, j])

    def _field_change(self, t, probe, shape, f_rows):
        """``f(t, probe) - f_rows`` in float64, ``probe`` and the result as rows (one call of
        ``f``)."""
        f_probe = self.field(t, probe.reshape(shape).astype(self.backend.dtype, copy=False))
        return np.asarray(f_probe, dtype=np.float64).reshape(probe.shape) - f_rows

    def _rescale(self, rows) -> None:
        """Update each column's scale ``s_j`` from the component's largest size so far; ``φ_j``
        moves the other way, so that an increment adapted at the old scale is kept (class
        docstring)."""
        self.magnitude = np.maximum(self.magnitude, np.abs(rows))
        threshold = np.maximum(self.floor, np.minimum(self.level, self.magnitude))
        if not np.array_equal(threshold, self.threshold):
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(threshold > 0, self.threshold / threshold, 1.0)
            self.fac = np.clip(self.fac * ratio, self.fac_min, self.fac_max)
            self.threshold = threshold

    def _differences(self, t, rows, f_rows, shape, groups, delta, D):
        """Perturb each group of columns together (one call of ``f`` a group) and store the
        differences."""
        if not groups:
            return
        cols = np.concatenate(groups)
        # the perturbed values of every column at once (one vector operation, not one a column)
        step = self.fac[:, cols] * np.maximum(np.abs(rows[:, cols]), self.threshold[:, cols])
        moved = rows[:, cols] + step
        zero = (
            moved == rows[:, cols]
        )  # below the state's resolution: the smallest increment that changes y_j
        if zero.any():
            moved = np.where(zero, np.nextafter(rows[:, cols], np.inf), moved)
        delta[:, cols] = moved - rows[:, cols]  # the increment actually taken, after rounding
        start = 0
        for group in groups:
            probe = rows.copy()
            probe[:, group] = moved[:, start : start + group.size]
            start += group.size
            df = self._field_change(t, probe, shape, f_rows)
            if self.sparsity is None:
                D[:, :, group[0]] = df  # a dense group is one column
            else:
                entries = self._entries(group)
                D[entries] = df[0, self.sparsity.indices[entries]]

    def _entries(self, group: np.ndarray) -> np.ndarray:
        """The stored entries of ``group``: precomputed for a whole group of the pattern, found
        afresh for a part of one (a refinement's columns)."""
        for g, cols in enumerate(self.groups):
            if cols is group:
                return self.sparsity.group_entries[g]
        return self.sparsity.entries_of(group)

    def _adapt(self, f_rows, D, delta, only):
        """Update ``φ`` from the differences (class docstring) for the columns ``only``; return the
        columns lost in rounding."""
        eps = self.eps
        if self.sparsity is None:
            absD = np.abs(D)  # (B, n, n)
            row = absD.argmax(axis=1)  # (B, n): the row of each column's largest difference
            big = np.take_along_axis(absD, row[:, None, :], axis=1)[:, 0, :]
            f_at = np.take_along_axis(f_rows, row, axis=1)
            d_at = np.take_along_axis(D, row[:, None, :], axis=1)[:, 0, :]
        else:
            k = self.sparsity.column_argmax(
                np.abs(D)
            )  # entry of each column's largest difference (-1: none)
            has = k >= 0
            d_at = np.where(has, D[np.maximum(k, 0)], 0.0)[None]
            f_at = np.where(has, f_rows[0, self.sparsity.indices[np.maximum(k, 0)]], 0.0)[None]
            big = np.abs(d_at)
        scale = np.maximum(np.abs(f_at), np.abs(f_at + d_at))  # max(|f(y)|, |f(y + δ)|) in that row
        lost = (big <= eps**0.875 * scale) & (self.fac < self.fac_max) & (scale > 0) & only
        few = (big < eps**0.75 * scale) & ~lost & only
        large = (big > eps**0.25 * scale) & only
        raised = np.where(
            big > 0, self.fac * np.sqrt(eps) * scale / np.where(big > 0, big, 1.0), self.fac * 1e4
        )
        self.fac = np.where(lost, np.minimum(raised, self.fac_max), self.fac)
        self.fac = np.where(few, np.minimum(10 * self.fac, self.fac_max), self.fac)
        self.fac = np.where(large, np.maximum(0.1 * self.fac, self.fac_min), self.fac)
        return lost


class AutogradJacobian:
    """``torch.func.jacrev`` of ``f`` in ``y`` and ``torch.func.jvp`` in ``t`` (forward mode).

    Batched states (``B`` independent samples on the leading axis) differentiate the sum over the
    samples, ``Σ_b f_b``: its Jacobian with respect to ``y_b`` is the block ``∂f_b/∂y_b`` exactly
    when samples do not interact, so ``f`` is called on the whole batch (per-sample parameters work)
    and the cost is ``n`` reverse passes whatever ``B``. ``∂f/∂t`` by one forward-mode pass; if
    ``f`` cannot be differentiated in ``t`` (it converts ``t`` to a Python float, say), by a forward
    difference instead. Counted: one call of ``f`` per pass.
    """

    with_time = True  # also ∂f/∂t (the Rosenbrock methods need it; Radau does not)

    def __init__(self, field, backend, batched: bool):
        self.field, self.backend, self.batched = field, backend, batched
        self.time_by_autograd = True

    def __call__(self, t: float, y, f0):
        import torch
        from torch.func import jacrev, jvp

        field = self.field
        field.stats.njev += 1
        f, shape = field.f, tuple(y.shape)
        tt = self.backend.time(t)
        y = y.detach()
        with torch.enable_grad():
            if self.batched:
                B = shape[0]
                rows = y.reshape(B, -1)
                summed = lambda yy: f(tt, yy.reshape(shape)).reshape(B, -1).sum(0)  # noqa: E731
                J = jacrev(summed)(rows).permute(1, 0, 2)  # [i, b, j] -> [b, i, j]
            else:
                J = jacrev(lambda yy: f(tt, yy.reshape(shape)).reshape(-1))(y.reshape(-1))
            field.stats.nfe += (
                1  # the forward pass inside jacrev (its reverse passes are vectorised)
            )
            f_t = None
            if self.time_by_autograd and self.with_time:
                try:
                    f_t = jvp(lambda s: f(s, y), (tt,), (torch.ones_like(tt),))[1]
                    field.stats.nfe += 1
                except Exception:  # f is not differentiable in t: a difference below
                    self.time_by_autograd = False
        if f_t is None and self.with_time:
            f_t = _time_derivative(field, self.backend, t, y, f0)
        if f_t is None:
            return J.detach(), None
        return J.detach(), f_t.detach().reshape(shape)


def _time_derivative(field, backend, t: float, y, f0):
    dt = _relative_step(backend) * max(1.0, abs(t))
    dt = (t + dt) - t  # the step actually taken, after rounding
    return backend.lincomb(None, (field(t + dt, y), f0), (1.0 / dt, -1.0 / dt))


def _as_backend_matrix(backend, J: Any, name: str):
    if backend.name == "torch":
        import torch

        if not isinstance(J, torch.Tensor):
            J = torch.as_tensor(np.asarray(J), dtype=backend.dtype, device=backend.device)
        return J.detach().to(backend.dtype)
    if not isinstance(J, np.ndarray):
        try:
            J = np.asarray(J, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(
                f"{name} must return an array of numbers, got {type(J).__name__}"
            ) from None
    if J.dtype.kind not in "fiu":
        raise TypeError(f"{name} must return real numbers, got dtype {J.dtype}")
    return J.astype(backend.dtype, copy=False)


def jacobian_provider(field, backend, jac: Callable | None, batched: bool):
    """The provider for a solve: the user's ``jac``, autograd for torch, finite differences for
    numpy (grouped and sparse with ``field.jac_sparsity``)."""
    pattern = getattr(field, "jac_sparsity", None)
    if pattern is not None and not isinstance(pattern, SparsityPattern):
        if backend.name == "torch":
            raise ValueError(
                "jac_sparsity is for numpy states (expected jac_sparsity=None for a torch y0: its "
                "Jacobian comes dense from autograd)"
            )
        pattern = SparsityPattern(pattern, int(np.prod(field.shape)))
        field.jac_sparsity = pattern
    if jac is not None:
        return UserJacobian(jac, field, backend, batched)
    if backend.name == "torch":
        return AutogradJacobian(field, backend, batched)
    return FiniteDifferenceJacobian(field, backend, batched, pattern)


def torch_refusal(name: str) -> str:
    """Why ``radau5``/``bdf`` refuse a torch ``y0``, and what to do instead (their arithmetic is
    numpy/LAPACK in float64; converting a torch state silently would cut the autograd graph the
    torch solves promise)."""
    return (
        f"method {name!r} needs y0 as a numpy array, got a torch.Tensor (its Newton "
        f"iterations and LU run in "
        f"numpy float64). For a torch y0 use method='rodas4', 'rodas5', 'rosenbrock23' or "
        f"'auto' (torch "
        f"arithmetic, autograd Jacobians, differentiable); or solve with numpy yourself: "
        f"y0.detach().cpu().numpy() and an f on numpy arrays (no gradients through the solve)"
    )


def is_sparse(J: Any) -> bool:
    """Whether ``J`` is a ``scipy.sparse`` matrix (without importing scipy.sparse for dense
    ones)."""
    return type(J).__module__.startswith("scipy.sparse")
