"""Adjoint-state norms of NODE and (G)HBNODE, review Eqs. (54)-(58).

For a linear vector field ``z' = K z`` the adjoint row vector obeys ``a' = -a K`` with ``a(T) = dL/dz_T``,
so ``a(t) = a(T) exp(-int_T^t K ds)`` ((54) for NODE, (55) for (G)HBNODE with
``K = [[0, J], [F, -gamma I]]``). The check compares the norm from the matrix exponential with the norm
from integrating the adjoint ODE backward with :func:`dynkit.solve` — batched, one solve per batch.

When ``K`` depends on time and its values do not commute, ``exp(-int K)`` is *not* the propagator; the
formula's hypothesis (a constant, or commuting, Jacobian along the trajectory) then fails and so does
the check — that is the planted violation of the tests.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import scipy.linalg

from ..solvers import solve
from ._core import CheckResult, as_real_array, as_scalar_batch, as_square, combine, verdict

__all__ = ["check_adjoint_norm", "hbnode_jacobian"]

# the adjoint solve runs at rtol 1e-10 / atol 1e-12; over |t - T| <= a few units with ||K|| <= ~5
# the relative error of the norm stays below 1e-7, so 1e-6 separates rounding from a wrong formula.
ADJOINT_TOL = 1e-6
_GAUSS_NODES, _GAUSS_WEIGHTS = np.polynomial.legendre.leggauss(16)


def hbnode_jacobian(dfdh, gamma, *, J=None, xi: float = 0.0) -> np.ndarray:
    """``[[0, J], [dfdh - xi I, -gamma I]]``: the matrix of (55) (HBNODE: ``J = I, xi = 0``)."""
    context = "review (55), (G)HBNODE adjoint matrix"
    F = as_square("dfdh", dfdh, context=context)
    n = F.shape[-1]
    g = as_scalar_batch("gamma", gamma, context=context, low=0.0)
    Jd = np.ones(F.shape[:-2] + (n,)) if J is None else as_real_array("J", J, context=context)
    batch = np.broadcast_shapes(F.shape[:-2], g.shape, Jd.shape[:-1])
    K = np.zeros(batch + (2 * n, 2 * n))
    K[..., :n, n:] = np.broadcast_to(Jd, batch + (n,))[..., :, None] * np.eye(n)
    K[..., n:, :n] = F - xi * np.eye(n)
    K[..., n:, n:] = -np.broadcast_to(g, batch)[..., None, None] * np.eye(n)
    return K


def check_adjoint_norm(K: np.ndarray | Callable[[float], np.ndarray], grad_T, *, t: float = 0.0,
                       T: float = 1.0) -> CheckResult:
    """Review (54)/(55)/(58): ``||dL/dz_t|| = ||dL/dz_T exp(-int_T^t K ds)||`` equals the norm of the
    adjoint ODE ``a' = -a K`` solved backward from ``a(T) = dL/dz_T`` with :func:`dynkit.solve`.

    Parameters
    ----------
    K : array (..., d, d) or callable s -> array (..., d, d)
        Jacobian of the linear vector field (constant, or a function of time).
    grad_T : array (..., d)
        ``dL/dz_T``.
    t, T : float
        ``t < T``: the adjoint is carried from ``T`` back to ``t``.

    Returns
    -------
    CheckResult
        Residual: relative difference of the two norms.
    """
    context = "review (54)-(58), adjoint of a linear (G)HBNODE/NODE"
    t, T = float(t), float(T)
    if not (np.isfinite(t) and np.isfinite(T) and t < T):
        raise ValueError(f"t and T must be finite with t < T ({context}); got t={t!r}, T={T!r}")
    K_of = K if callable(K) else None
    K0 = as_square("K", K_of(T) if K_of else K, context=context)
    d = K0.shape[-1]
    a_T = as_real_array("grad_T", grad_T, context=context)
    if a_T.shape[-1:] != (d,):
        raise ValueError(f"grad_T must have shape (..., {d}) to match K ({context}); got {a_T.shape}")
    batch = np.broadcast_shapes(K0.shape[:-2], a_T.shape[:-1])
    a_T = np.broadcast_to(a_T, batch + (d,)).copy()

    if K_of is None:
        Kc = np.broadcast_to(K0, batch + (d, d))
        K_at = lambda s: Kc  # noqa: E731
        integral = (t - T) * Kc
    else:
        K_at = lambda s: np.broadcast_to(as_square("K(s)", K_of(s), context=context), batch + (d, d))  # noqa
        nodes = T + (t - T) * (_GAUSS_NODES + 1) / 2  # Gauss-Legendre, exact for K polynomial of degree < 32
        integral = sum(w * (t - T) / 2 * K_at(s) for s, w in zip(nodes, _GAUSS_WEIGHTS))

    def field(s, a):
        return -np.einsum("...i,...ij->...j", a, K_at(s))

    a_formula = np.einsum("...i,...ij->...j", a_T, scipy.linalg.expm(-integral))
    sol = solve(field, a_T, np.array([T, t]), method="dopri5", rtol=1e-10, atol=1e-12)
    a_ode = np.asarray(sol.ys[-1])
    n_formula = np.linalg.norm(a_formula, axis=-1)
    n_ode = np.linalg.norm(a_ode, axis=-1)
    residual = np.abs(n_formula - n_ode) / np.maximum(n_ode, np.finfo(float).tiny)
    # (56)-(58): with the Schur form -int K = Q U Q^*, ||a_t|| = ||v^T exp(U)||, v = Q^T a_T
    n_schur = np.empty(batch)
    for index in np.ndindex(*batch):
        U, Q = scipy.linalg.schur(-integral[index], output="complex")
        n_schur[index] = np.linalg.norm((a_T[index] @ Q) @ scipy.linalg.expm(U))
    residual_schur = np.abs(n_schur - n_ode) / np.maximum(n_ode, np.finfo(float).tiny)
    instances = dict(K=np.broadcast_to(K0, batch + (d, d)), grad_T=a_T)
    return combine("adjoint_norm", [
        verdict("adjoint_norm.expm", residual, ADJOINT_TOL, instances,
                "||a_T exp(-int_T^t K)|| vs ||a(t)|| from dk.solve (relative)",
                norm_formula=n_formula, norm_ode=n_ode, nfe=sol.stats.nfe),
        verdict("adjoint_norm.schur", residual_schur, ADJOINT_TOL, instances,
                "||v^T exp(U)|| of (58) via the Schur form (56) vs dk.solve (relative)"),
    ])
