"""Sparse and dense LU of the iteration matrices ``σI − J`` of the stiff steppers (``J`` a
``scipy.sparse`` matrix).

``σ`` may be complex (the complex pair of Radau IIA's transformed system,
:mod:`dynkit.solvers.radau`). Sparse: SuperLU (``scipy.sparse.linalg.splu``); dense: LAPACK. An
exactly singular matrix gives ``None`` (the stepper then rejects the step and the controller shrinks
it).
"""

from __future__ import annotations

import numpy as np

__all__ = ["SparseLU", "sparse_lu", "DenseLU", "dense_lu", "shifted_lu"]


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
