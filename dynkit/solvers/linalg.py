"""Sparse LU of the iteration matrices ``σI − J`` of the stiff steppers (``J`` a ``scipy.sparse`` matrix).

``σ`` may be complex (the complex pair of Radau IIA's transformed system, :mod:`dynkit.solvers.radau`).
Factorised by SuperLU (``scipy.sparse.linalg.splu``); an exactly singular matrix gives ``None``
(the stepper then rejects the step and the controller shrinks it).
"""
from __future__ import annotations

import numpy as np


class SparseLU:
    """``splu`` of ``σI − J``, solving for right-hand sides shaped like the state."""

    __slots__ = ("lu", "complex")

    def __init__(self, lu, complex_: bool):
        self.lu, self.complex = lu, complex_

    def solve(self, rhs):
        flat = rhs.reshape(-1)
        if np.iscomplexobj(flat) and not self.complex:  # a real factor, a complex right-hand side
            return (self.lu.solve(flat.real) + 1j * self.lu.solve(flat.imag)).reshape(rhs.shape)
        return self.lu.solve(flat).reshape(rhs.shape)


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


class DenseLU:
    """LAPACK LU of a dense ``σI − J`` (real or complex ``σ``)."""

    __slots__ = ("lu",)

    def __init__(self, lu):
        self.lu = lu

    def solve(self, rhs):
        import scipy.linalg

        return scipy.linalg.lu_solve(self.lu, rhs.reshape(-1), check_finite=False).reshape(rhs.shape)


def shifted_lu(J, sigma):
    """LU of ``σI − J``, dense or sparse as ``J`` is; ``None`` if singular or not finite."""
    import scipy.linalg

    if type(J).__module__.startswith("scipy.sparse"):
        return sparse_lu(J, sigma)
    W = sigma * np.eye(J.shape[0], dtype=np.result_type(J.dtype, type(sigma))) - J
    if not np.isfinite(W).all():
        return None
    lu = scipy.linalg.lu_factor(W, check_finite=False)
    if not np.all(np.diag(lu[0])):
        return None
    return DenseLU(lu)
