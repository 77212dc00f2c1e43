"""Sparse and dense LU of the iteration matrices ``σI − J`` of the stiff steppers (``J`` a
``scipy.sparse`` matrix).

``σ`` may be complex (the complex pair of Radau IIA's transformed system,
:mod:`dynkit.solvers.radau`). Sparse: SuperLU (``scipy.sparse.linalg.splu``), or, for a pattern
that a symmetric permutation makes narrowly banded (:class:`BandPlan`), LAPACK's band LU; dense:
LAPACK. An exactly singular matrix gives ``None`` (the stepper then rejects the step and the
controller shrinks it).

References
----------
.. [CM] E. Cuthill, J. McKee, "Reducing the bandwidth of sparse symmetric matrices", Proc. 24th
   ACM National Conference (1969) 157-172 (the ordering; reversed as A. George's RCM).
.. [GV] G. H. Golub, C. F. Van Loan, *Matrix Computations*, 4th ed., Johns Hopkins 2013,
   Sect. 4.3 (band LU with partial pivoting: ``O(n · kl · (kl + ku))`` work, ``kl`` more
   superdiagonals of fill).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "BAND_FILL",
    "SparseLU",
    "sparse_lu",
    "BandPlan",
    "band_plan",
    "BandLU",
    "DenseLU",
    "dense_lu",
    "shifted_lu",
]

# a band LU is chosen when its storage, (2 kl + ku + 1) n, is at most this many times the
# pattern's entries and diagonal: a band that wide holds little more than the sparse LU's own
# fill, and LAPACK's band kernels run without SuperLU's per-column supernode bookkeeping (100k
# Brusselator states, kl = ku = 2: 14 ms a factorisation against splu's 87 ms)
BAND_FILL = 4.0


class _Factor:
    """A factorised matrix solving for right-hand sides shaped like the state; a complex
    right-hand side of a real factor is solved as its real and imaginary parts."""

    __slots__ = ("complex",)

    def solve(self, rhs):
        flat = rhs.reshape(-1)
        if np.iscomplexobj(flat) and not self.complex:
            return (self._solve(flat.real) + 1j * self._solve(flat.imag)).reshape(rhs.shape)
        return self._solve(flat).reshape(rhs.shape)


class SparseLU(_Factor):
    """``splu`` of ``σI − J``."""

    __slots__ = ("lu",)

    def __init__(self, lu, complex_: bool):
        self.lu, self.complex = lu, complex_

    def _solve(self, flat):
        return self.lu.solve(flat)


def sparse_lu(J, sigma) -> SparseLU | None:
    """LU of ``σI − J`` for a sparse ``J`` (``None`` if singular or not finite)."""
    import scipy.sparse
    import scipy.sparse.linalg

    dtype = np.result_type(J.dtype, type(sigma))
    W = (scipy.sparse.identity(J.shape[0], dtype=dtype, format="csc") * sigma - J).tocsc()
    if not np.isfinite(W.data).all():
        return None
    try:
        return SparseLU(scipy.sparse.linalg.splu(W), np.iscomplexobj(W.data))
    except RuntimeError:  # "Factor is exactly singular"
        return None


class BandPlan:
    """A symmetric permutation ``p`` (reverse Cuthill-McKee, [CM]) that puts the structure of
    ``σI − J`` into a band of ``kl`` sub- and ``ku`` superdiagonals, and the positions of a
    matrix of that structure in LAPACK's band storage."""

    def __init__(self, perm: np.ndarray, kl: int, ku: int):
        self.perm, self.kl, self.ku = perm, kl, ku
        self.inverse = np.empty_like(perm)
        self.inverse[perm] = np.arange(perm.size)
        self.structure = None  # (indptr, indices) of the last J placed, and its positions
        self.rows = self.cols = None

    def covers(self, J) -> bool:
        """Whether every stored entry of the sparse ``J`` falls inside the band once permuted."""
        coo = J.tocoo()
        offset = self.inverse[coo.row] - self.inverse[coo.col]
        return offset.size == 0 or (offset.max() <= self.kl and -offset.min() <= self.ku)

    def factor(self, J, sigma) -> "BandLU | None":
        """Band LU of ``P (σI − J) Pᵀ`` (real ``σ``; ``None`` if singular or not finite)."""
        from scipy.linalg import get_lapack_funcs

        J = J.tocsc()
        if self.structure is None or not (
            np.array_equal(self.structure[0], J.indptr)
            and np.array_equal(self.structure[1], J.indices)
        ):
            # positions in the band storage ab[kl + ku + i − j, j] of the permuted (i, j), found
            # once per structure (a difference Jacobian keeps the pattern's)
            cols = np.repeat(np.arange(J.shape[1]), np.diff(J.indptr))
            i, j = self.inverse[J.indices], self.inverse[cols]
            self.rows, self.cols = self.kl + self.ku + i - j, j
            self.structure = (J.indptr.copy(), J.indices.copy())
        if not np.isfinite(J.data).all() or not np.isfinite(sigma):
            return None
        n = J.shape[0]
        ab = np.zeros((2 * self.kl + self.ku + 1, n))
        if J.has_canonical_format:
            ab[self.rows, self.cols] = -J.data
        else:  # duplicate entries add up, as in scipy's own conversions
            np.add.at(ab, (self.rows, self.cols), -J.data)
        ab[self.kl + self.ku] += sigma  # the diagonal, whose permuted position is its own
        gbtrf, gbtrs = get_lapack_funcs(("gbtrf", "gbtrs"), (ab,))
        lu, piv, info = gbtrf(ab, self.kl, self.ku)
        if info != 0:  # info > 0: an exactly zero pivot
            return None
        return BandLU(self, lu, piv, gbtrs)


class BandLU(_Factor):
    """LAPACK band LU (``gbtrf``/``gbtrs``) of a permuted sparse ``σI − J`` (:class:`BandPlan`)."""

    __slots__ = ("plan", "lu", "piv", "getrs")

    def __init__(self, plan: BandPlan, lu, piv, gbtrs):
        self.plan, self.lu, self.piv, self.getrs = plan, lu, piv, gbtrs
        self.complex = False

    def _solve(self, flat):
        plan = self.plan
        x = self.getrs(self.lu, plan.kl, plan.ku, flat[plan.perm], self.piv)[0]
        out = np.empty_like(x)
        out[plan.perm] = x
        return out


def band_plan(J) -> BandPlan | None:
    """A :class:`BandPlan` for the sparse ``J`` if its reverse Cuthill-McKee ordering gives a band
    within :data:`BAND_FILL` of its entries (module docstring), else ``None`` (SuperLU)."""
    import scipy.sparse
    from scipy.sparse.csgraph import reverse_cuthill_mckee

    n = J.shape[0]
    if n < 2:
        return None
    coo = J.tocoo()
    # the structure (stored entries, zero or not) of σI − J, made symmetric for the ordering
    S = scipy.sparse.coo_matrix((np.ones(coo.nnz, np.int8), (coo.row, coo.col)), shape=J.shape)
    S = (S + S.T + scipy.sparse.identity(n, dtype=np.int8)).tocsr()
    perm = reverse_cuthill_mckee(S, symmetric_mode=True).astype(np.intp)
    inverse = np.empty_like(perm)
    inverse[perm] = np.arange(n)
    offset = inverse[coo.row] - inverse[coo.col]
    kl = int(max(offset.max(initial=0), 0))
    ku = int(max(-offset.min(initial=0), 0))
    if (2 * kl + ku + 1) * n > BAND_FILL * (J.nnz + n):
        return None
    return BandPlan(perm, kl, ku)


class DenseLU(_Factor):
    """LAPACK LU (``getrf``/``getrs``, called directly: ``scipy.linalg.lu_solve`` costs ~5 µs a
    call in argument checks, ten times the solve itself for the small systems of the stiff test
    set) of a dense matrix."""

    __slots__ = ("lu", "piv", "getrs")

    def __init__(self, lu, piv, getrs):
        self.lu, self.piv, self.getrs = lu, piv, getrs
        self.complex = np.iscomplexobj(lu)

    def _solve(self, flat):
        return self.getrs(self.lu, self.piv, flat)[0]


def dense_lu(W) -> DenseLU | None:
    """LU of the dense matrix ``W`` (``None`` if it is singular or not finite)."""
    from scipy.linalg import get_lapack_funcs

    if not np.isfinite(W).all():
        return None
    getrf, getrs = get_lapack_funcs(("getrf", "getrs"), (W,))
    lu, piv, info = getrf(W)
    if info != 0:  # info > 0: an exactly zero pivot
        return None
    return DenseLU(lu, piv, getrs)


def shifted_lu(J, sigma):
    """LU of ``σI − J``, dense or sparse as ``J`` is; ``None`` if singular or not finite."""
    if type(J).__module__.startswith("scipy.sparse"):
        return sparse_lu(J, sigma)
    return dense_lu(
        sigma * np.eye(J.shape[0], dtype=np.result_type(J.dtype, sigma)) - J
    )  # a float32 J stays float32
