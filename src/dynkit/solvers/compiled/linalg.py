"""Dense LU with partial pivoting of the stiff methods' iteration matrices ``σI − J``, compiled.

The compiled counterpart of :func:`dynkit.solvers.linalg.shifted_lu` for dense ``J`` (real or
complex ``σ``): the factorisation is written into caller-owned buffers, so a kernel keeps it across
steps exactly where the Python stepper keeps its LAPACK factor (``scipy.linalg.lu_factor`` has no
numba counterpart). The pivot is the row of largest ``|a|`` for real matrices and of largest
``|Re a| + |Im a|`` for complex ones, LAPACK's ``i?amax`` rule ([GVL] Sect. 3.4), so the rows are
exchanged as ``getrf`` exchanges them; the elimination order differs from LAPACK's recursive
``getrf2`` and the factors agree to rounding, not bit for bit.

An exactly zero pivot or a non-finite entry leaves the factor unusable: :func:`shifted_lu` returns
False, as the Python path returns ``None`` (the step is then rejected and shrunk).

References
----------
.. [GVL] G. H. Golub, C. F. Van Loan, *Matrix Computations*, 4th ed., Johns Hopkins 2013, Sect. 3.4 (partial
   pivoting).
"""  # noqa: E501

from __future__ import annotations

import numba
import numpy as np

from .common import CACHE

__all__ = ["shifted_lu", "lu_solve"]


@numba.njit(cache=CACHE, inline="always")
def _magnitude(x):
    """LAPACK's pivot measure: ``|x|`` for reals, ``|Re x| + |Im x|`` for complex ``x`` (izamax's
    dcabs1)."""
    return abs(x.real) + abs(x.imag)


@numba.njit(cache=CACHE)
def shifted_lu(J, sigma, LU, piv) -> bool:
    """Factor ``σI − J`` into ``LU`` (unit lower and upper triangle in one array) and the row
    exchanges ``piv``.

    ``LU`` has ``J``'s shape and ``σ``'s dtype (float64 or complex128); False if ``σI − J`` is not
    finite or has an exactly zero pivot.
    """
    n = J.shape[0]
    for i in range(n):
        for j in range(n):
            LU[i, j] = -J[i, j]
        LU[i, i] += sigma
    for i in range(n):
        for j in range(n):
            v = LU[i, j]
            if not (np.isfinite(v.real) and np.isfinite(v.imag)):
                return False
    for k in range(n):
        p = k
        best = _magnitude(LU[k, k])
        for i in range(k + 1, n):
            m = _magnitude(LU[i, k])
            if m > best:
                best, p = m, i
        piv[k] = p
        if best == 0.0:
            return False
        if p != k:
            for j in range(n):
                LU[k, j], LU[p, j] = LU[p, j], LU[k, j]
        inv = 1.0 / LU[k, k]
        for i in range(k + 1, n):
            LU[i, k] *= inv
            l_ik = LU[i, k]
            if l_ik != 0.0:
                for j in range(k + 1, n):
                    LU[i, j] -= l_ik * LU[k, j]
    return True


@numba.njit(cache=CACHE)
def lu_solve(LU, piv, x) -> None:
    """``x ← (σI − J)⁻¹ x`` in place, from :func:`shifted_lu`'s factor."""
    n = LU.shape[0]
    for k in range(n):
        p = piv[k]
        if p != k:
            x[k], x[p] = x[p], x[k]
    for i in range(n):
        s = x[i]
        for j in range(i):
            s -= LU[i, j] * x[j]
        x[i] = s
    for i in range(n - 1, -1, -1):
        s = x[i]
        for j in range(i + 1, n):
            s -= LU[i, j] * x[j]
        x[i] = s / LU[i, i]
