"""Spectral claims: eigenvalue pairing of HBNODE's adjoint matrix (review, Prop. 4, (59)-(63)) and the
instability of tied-weight RevNet fixed points (Momentum ResNets, Prop. 1 and its continuous remark).

Both have the same shape: the eigenvalues of a 2n x 2n block matrix are the roots of n quadratics,
one per eigenvalue ``mu`` of an n x n product. A check verifies it two independent ways, batched:

* *backward error of the constructed roots*: each root ``r`` built from ``mu`` makes ``H - r I``
  singular, measured by ``sigma_min(H - r I) / (1 + ||H||)`` (robust to defective eigenvalues, whose
  forward error would be ~ sqrt(machine eps));
* *the characteristic-polynomial identity* (60): ``det(z I - H) = det(q(z) I - P)`` at random points
  ``z`` on a circle enclosing the spectrum, relative mismatch of the log-determinants. This one pins
  the multiplicities, so together the roots are exactly the spectrum with its multiplicities.
"""
from __future__ import annotations

import numpy as np

from ._core import (CheckResult, as_real_array, as_scalar_batch, as_square, check_count, check_seed, combine,
                    same_size, verdict, worst_sv)

__all__ = ["check_eigen_pairing", "pairing_roots", "check_revnet_instability",
           "check_revnet_continuous", "revnet_jacobian", "check_fixed_point_iterations",
           "momentum_jacobian"]

# Backward errors are a few ulps times n for a backward-stable eigen/SVD; 1e-9 leaves room for
# n <= 12 and for the roots' own rounding when |mu| is large.
BACKWARD_TOL = 1e-9
# log|det| at points on a circle of radius 2(1 + ||H||): each determinant is well conditioned there,
# relative agreement to 1e-8 is a safe bound for n <= 12 in float64.
CHARPOLY_TOL = 1e-8


def _quadratic_roots(b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Both roots of ``r**2 + b r + c = 0`` (complex), stacked on a new last axis; stable formula."""
    b = b.astype(complex)
    c = np.asarray(c, dtype=complex)
    disc = np.sqrt(b * b - 4 * c)
    disc = np.where((np.conj(b) * disc).real < 0, -disc, disc)  # pick the sign that avoids cancellation
    big = -(b + disc) / 2
    small = np.where(big != 0, c / np.where(big != 0, big, 1), 0)
    return np.stack([big, small], axis=-1)


def _roots_backward_error(H: np.ndarray, roots: np.ndarray) -> np.ndarray:
    """max over roots of sigma_min(H - r I) / (1 + ||H||_2), per batch element."""
    m = H.shape[-1]
    shifted = H[..., None, :, :].astype(complex) - roots[..., :, None, None] * np.eye(m)
    norm = np.linalg.norm(H, ord=2, axis=(-2, -1))
    return worst_sv(shifted).max(axis=-1) / (1 + norm)


def _charpoly_mismatch(H: np.ndarray, P: np.ndarray, q, z_power: int = 0, n_points: int = 4,
                       rng: np.random.Generator | None = None) -> np.ndarray:
    """Relative mismatch of det(zI - H) and z**z_power det(q(z) I - P) at points z on a circle
    enclosing Sp(H)."""
    rng = rng or np.random.default_rng(12345)
    radius = 2 * (1 + np.linalg.norm(H, ord=2, axis=(-2, -1)))
    angles = rng.uniform(0, 2 * np.pi, size=n_points)
    z = radius[..., None] * np.exp(1j * angles)  # (..., k)
    m, n = H.shape[-1], P.shape[-1]
    lhs = np.linalg.slogdet(z[..., None, None] * np.eye(m) - H[..., None, :, :])
    rhs = np.linalg.slogdet(q(z)[..., None, None] * np.eye(n) - P[..., None, :, :])
    log_l = np.log(lhs[0]) + lhs[1]
    log_r = np.log(rhs[0]) + rhs[1] + z_power * np.log(z)
    diff = np.abs(np.exp(log_l - log_r) - 1)  # relative mismatch of the two determinants
    return diff.max(axis=-1)


def _as_diag_J(J, F: np.ndarray, context: str) -> np.ndarray:
    """J given as its diagonal (..., n) or, when it has F's number of axes, as diagonal matrices."""
    n = F.shape[-1]
    J = as_real_array("J", J, context=context)
    if J.ndim == F.ndim and J.shape[-2:] == (n, n):
        off = J - np.einsum("...ii->...i", J)[..., None] * np.eye(n)
        if np.any(off != 0):
            raise ValueError(f"J must be diagonal ({context}: J is the average of dsigma/dm, a diagonal "
                             f"matrix); got off-diagonal entries up to {np.abs(off).max():.3g}")
        J = np.einsum("...ii->...i", J)
    if J.shape[-1:] != (n,):
        raise ValueError(f"J must have shape (..., {n}) (its diagonal) or (..., {n}, {n}) to match F "
                         f"({context}); got shape {J.shape}")
    if np.any((J <= 0) | (J > 1)):
        raise ValueError(f"J's diagonal entries must lie in (0, 1] ({context}: derivatives of a "
                         f"sigmoid/tanh-like sigma); got {J[(J <= 0) | (J > 1)].reshape(-1)[0]!r}")
    return J


def pairing_roots(J, F, gamma) -> np.ndarray:
    """The constructive pairing of Prop. 4 of the review: for each eigenvalue ``mu`` of ``JF`` the two
    roots of ``lam (lam + gamma) = mu`` (Eq. (62)). Shape ``(..., n, 2)``; each pair sums to ``-gamma``.
    """
    context = "review Prop. 4, H = [[0, J], [F, -gamma I]]"
    F = as_square("F", F, context=context)
    n = F.shape[-1]
    J = _as_diag_J(J, F, context)
    gamma = as_scalar_batch("gamma", gamma, context=context, low=0.0)
    mu = np.linalg.eigvals(J[..., :, None] * F)
    g = np.broadcast_to(gamma, mu.shape[:-1])[..., None]
    return _quadratic_roots(np.broadcast_to(g, mu.shape), -mu)


def check_eigen_pairing(J, F, gamma, *, scale: float = 1.0, a: float | None = None,
                        claimed_sum=None) -> CheckResult:
    """Prop. 4 of the review, Eqs. (59)-(62): the 2n eigenvalues of ``H = [[0, J], [F, -gamma I]]``
    split into n pairs each summing to ``-gamma``, the pairs being the roots of
    ``lam (lam + gamma) = mu`` for ``mu`` in Sp(JF).

    Parameters
    ----------
    J : array (..., n) or (..., n, n)
        Diagonal of J (entries in (0, 1]) or the diagonal matrix itself.
    F : array (..., n, n)
        Any real matrix.
    gamma : float or array (...)
        Damping, ``gamma >= 0``.
    scale : float
        ``t - T``: also checks the statement for ``-M = -(t - T) H`` of (55), whose pairs sum to
        ``(t - T) gamma``.
    a : float, optional
        If given, also checks the consequence stated after (63): with ``0 <= gamma <= 2a`` every pair
        has an eigenvalue with real part ``>= -a``. (With ``gamma > 2a`` this may fail: that is the
        hypothesis.)
    claimed_sum : float or array, optional
        The pair sum being claimed; defaults to ``-gamma``. A wrong value is detected.

    Returns
    -------
    CheckResult
        ``residual`` is the worst of the relative backward error of the constructed eigenvalues, the
        relative mismatch of the characteristic polynomials (60) and the pair-sum error.
    """
    context = "review Prop. 4, H = [[0, J], [F, -gamma I]]"
    F = as_square("F", F, context=context)
    n = F.shape[-1]
    Jd = _as_diag_J(J, F, context)
    gamma = as_scalar_batch("gamma", gamma, context=context, low=0.0)
    scale = float(as_scalar_batch("scale", scale, context=context))
    if scale == 0:
        raise ValueError(f"scale must be non-zero ({context}: it is t - T with t != T); got 0.0")
    batch = np.broadcast_shapes(F.shape[:-2], Jd.shape[:-1], gamma.shape)
    F = np.broadcast_to(F, batch + (n, n))
    Jd = np.broadcast_to(Jd, batch + (n,))
    g = np.broadcast_to(gamma, batch)
    H = np.zeros(batch + (2 * n, 2 * n))
    H[..., :n, n:] = Jd[..., :, None] * np.eye(n)
    H[..., n:, :n] = F
    H[..., n:, n:] = -g[..., None, None] * np.eye(n)
    JF = Jd[..., :, None] * F
    roots = pairing_roots(Jd, F, g)  # (..., n, 2)

    # the statement for -M = -(t - T) H: roots scale by -(t - T)
    Ms = -scale * H
    roots_M = -scale * roots
    backward = _roots_backward_error(Ms, roots_M.reshape(batch + (2 * n,)))
    charpoly = _charpoly_mismatch(H, JF, lambda z: z * (z + g[..., None]))
    target = scale * g if claimed_sum is None else np.broadcast_to(
        as_real_array("claimed_sum", claimed_sum, context=context), batch)
    pair_sums = roots_M.sum(axis=-1)
    sum_error = np.abs(pair_sums - target[..., None]).max(axis=-1) / (1 + np.abs(roots_M).max(axis=(-1, -2)))
    instances = dict(J=Jd, F=F, gamma=g)
    parts = [
        verdict("eigen_pairing.spectrum", backward, BACKWARD_TOL, instances,
                "roots of lam(lam+gamma)=mu are eigenvalues of -M (relative backward error)"),
        verdict("eigen_pairing.charpoly", charpoly, CHARPOLY_TOL, instances,
                "det(zI - H) = det(z(z+gamma)I - JF), Eq. (60) (relative mismatch)"),
        verdict("eigen_pairing.pair_sum", sum_error, BACKWARD_TOL, instances,
                "each pair sums to (t - T) gamma (relative error)"),
    ]
    if a is not None:
        a_val = float(as_scalar_batch("a", a, context=context, low=0.0, low_open=True))
        # margin: for each pair the larger real part must be >= -a (in H's units)
        best = roots.real.max(axis=-1).min(axis=-1)
        shortfall = np.maximum(-a_val - best, 0.0) / (1 + a_val)
        parts.append(verdict("eigen_pairing.decay_bound", shortfall, BACKWARD_TOL, instances,
                             f"every pair has Re(lam) >= -a with a = {a_val:g} (needs gamma <= 2a)",
                             a=a_val))
    return combine("eigen_pairing", parts)


# ------------------------------------------------------------------------------------------------
# Momentum ResNets, Prop. 1 (RevNet instability)

# |lam| - 1 is computed from roots of lam^2 - (2 + mu) lam + 1 whose product is 1; a root with
# |lam| < 1 - 1e-9 would be a genuine counterexample, not rounding, for n <= 12.
INSTABILITY_TOL = 1e-9


def revnet_jacobian(A, B) -> np.ndarray:
    """``J(A, B) = [[I, A], [B, I + BA]]``: Jacobian of the tied-weight RevNet map (4) at a fixed point."""
    context = "Momentum ResNets Prop. 1"
    A = as_square("A", A, context=context)
    B = same_size("B", as_square("B", B, context=context), A.shape[-1], context=context, against="A")
    n = A.shape[-1]
    batch = np.broadcast_shapes(A.shape[:-2], B.shape[:-2])
    A, B = np.broadcast_to(A, batch + (n, n)), np.broadcast_to(B, batch + (n, n))
    eye = np.broadcast_to(np.eye(n), batch + (n, n))
    return np.block([[eye, A], [B, eye + B @ A]])


def _require_invertible(name: str, M: np.ndarray, context: str) -> None:
    s = np.linalg.svd(M, compute_uv=False)
    rel = s[..., -1] / np.maximum(s[..., 0], np.finfo(float).tiny)
    if np.any(rel < 1e3 * np.finfo(float).eps * M.shape[-1]):
        raise ValueError(f"{name} must be invertible ({context} assumes A and B invertible); got a "
                         f"matrix with relative smallest singular value {rel.min():.3g}")


def check_revnet_instability(A, B) -> CheckResult:
    """Prop. 1 of the Momentum ResNets paper: for invertible A, B the RevNet Jacobian J(A, B) has an
    eigenvalue with ``|lam| >= 1`` and ``lam != 1``; each eigenvalue solves
    ``lam**2 - (2 + mu) lam + 1 = 0`` for some ``mu`` in Sp(AB) (Eq. (11) of its appendix A.0).

    The residual is the worst of: the backward error of the roots built from Sp(AB), the mismatch of
    ``det(zI - J) = det((z - 1)**2 I - z AB)``, and the shortfall ``1 - max |lam|`` over eigenvalues
    ``lam != 1`` (which must be <= 0).
    """
    context = "Momentum ResNets Prop. 1"
    A = as_square("A", A, context=context)
    B = same_size("B", as_square("B", B, context=context), A.shape[-1], context=context, against="A")
    _require_invertible("A", A, context)
    _require_invertible("B", B, context)
    Jm = revnet_jacobian(A, B)
    batch, n = Jm.shape[:-2], A.shape[-1]
    AB = np.broadcast_to(A, batch + (n, n)) @ np.broadcast_to(B, batch + (n, n))
    mu = np.linalg.eigvals(AB)
    roots = _quadratic_roots(-(2 + mu), np.ones_like(mu)).reshape(batch + (2 * n,))
    backward = _roots_backward_error(Jm, roots)
    # det(zI - J) = det((z-1)^2 I - z AB) = z^n det(((z-1)^2/z) I - AB)
    charpoly = _charpoly_mismatch(Jm, AB, lambda z: (z - 1) ** 2 / z, z_power=n)
    eig = np.linalg.eigvals(Jm)
    away = np.abs(eig - 1) > 1e-6
    top = np.where(away, np.abs(eig), -np.inf).max(axis=-1)
    shortfall = np.maximum(1 - top, 0.0)
    instances = dict(A=np.broadcast_to(A, batch + (n, n)), B=np.broadcast_to(B, batch + (n, n)))
    return combine("revnet_instability", [
        verdict("revnet_instability.spectrum", backward, BACKWARD_TOL, instances,
                "roots of lam^2-(2+mu)lam+1 are eigenvalues of J(A,B) (relative backward error)"),
        verdict("revnet_instability.charpoly", charpoly, CHARPOLY_TOL, instances,
                "det(zI - J) = z^n det(((z-1)^2/z) I - AB) (relative mismatch)"),
        verdict("revnet_instability.unstable", shortfall, INSTABILITY_TOL, instances,
                "some eigenvalue lam != 1 has |lam| >= 1 (shortfall 1 - max|lam|)"),
    ])


def check_revnet_continuous(A, B) -> CheckResult:
    """The continuous remark after Prop. 1: ``[[0, A], [B, 0]]`` has eigenvalues ``+-sqrt(mu)``, mu in
    Sp(AB), so they cannot all have negative real part. Residual: backward error of ``+-sqrt(mu)`` and
    the shortfall ``-max Re(lam)`` (must be <= 0)."""
    context = "Momentum ResNets Prop. 1, continuous remark"
    A = as_square("A", A, context=context)
    B = same_size("B", as_square("B", B, context=context), A.shape[-1], context=context, against="A")
    n = A.shape[-1]
    batch = np.broadcast_shapes(A.shape[:-2], B.shape[:-2])
    A, B = np.broadcast_to(A, batch + (n, n)), np.broadcast_to(B, batch + (n, n))
    zero = np.zeros(batch + (n, n))
    K = np.block([[zero, A], [B, zero]])
    mu = np.linalg.eigvals(A @ B)
    root = np.sqrt(mu.astype(complex))
    roots = np.concatenate([root, -root], axis=-1)
    backward = _roots_backward_error(K, roots)
    eig = np.linalg.eigvals(K)
    # +-sqrt(mu) sum to zero, so max Re >= 0 up to rounding of size eps * ||K||
    shortfall = np.maximum(-eig.real.max(axis=-1), 0.0) / (1 + np.linalg.norm(K, 2, axis=(-2, -1)))
    instances = dict(A=A, B=B)
    return combine("revnet_continuous", [
        verdict("revnet_continuous.spectrum", backward, BACKWARD_TOL, instances,
                "+-sqrt(mu), mu in Sp(AB), are eigenvalues of [[0,A],[B,0]] (backward error)"),
        verdict("revnet_continuous.not_stable", shortfall, BACKWARD_TOL, instances,
                "not all eigenvalues have Re < 0 (shortfall -max Re / (1+||K||))"),
    ])


# ------------------------------------------------------------------------------------------------
# the dynamical consequence of Prop. 1: iterating near a fixed point

def momentum_jacobian(A, gamma) -> np.ndarray:
    """Jacobian at a fixed point of the tied-weight Momentum ResNet (2) with f'(x*) = A, in (v, x):
    ``[[gamma I, (1 - gamma) A], [gamma I, I + (1 - gamma) A]]``."""
    context = "Momentum ResNets (2) linearised"
    A = as_square("A", A, context=context)
    g = as_scalar_batch("gamma", gamma, context=context, low=0.0, high=1.0)
    n = A.shape[-1]
    g = np.broadcast_to(g, A.shape[:-2])[..., None, None]
    eye = np.broadcast_to(np.eye(n), A.shape)
    return np.block([[g * eye, (1 - g) * A], [g * eye, eye + (1 - g) * A]])


def _log_growth(Jm: np.ndarray, n_steps: int, rng: np.random.Generator) -> np.ndarray:
    """log10 ||J^n_steps z0|| / ||z0|| for a random z0, renormalising every step."""
    z = rng.standard_normal(Jm.shape[:-1])
    z /= np.linalg.norm(z, axis=-1, keepdims=True)
    log = np.zeros(Jm.shape[:-2])
    for _ in range(n_steps):
        z = np.einsum("...ij,...j->...i", Jm, z)
        norm = np.linalg.norm(z, axis=-1)
        log += np.log10(np.where(norm > 0, norm, 1e-300))
        z /= np.where(norm > 0, norm, 1.0)[..., None]
    return log


# a converging linear iteration loses >= 3 digits per 100 steps once rho <= 0.93; a RevNet one (rho >= 1)
# can only shrink by the conditioning of its eigenvector basis, far less than 6 digits here.
NO_CONVERGENCE_DIGITS = 6.0


def check_fixed_point_iterations(A, B, S, gamma, *, n_steps: int = 400, seed: int = 0) -> CheckResult:
    """The consequence of Prop. 1 (Momentum ResNets Sect. 3.3): tied-weight RevNet iterations linearised at
    a fixed point (Jacobian J(A, B)) do not converge — ``||z_n|| / ||z_0||`` stays above ``1e-6`` over
    ``n_steps`` from a random start — while Momentum ResNet iterations with ``gamma < 1`` and
    ``f'(x*) = -S`` (S SPD, eigenvalues in (0, 1]) do: the ratio falls below ``1e-6``.
    Residual: the shortfall in decades (0 when both behave as claimed)."""
    context = "Momentum ResNets Prop. 1 consequence"
    A = as_square("A", A, context=context)
    B = same_size("B", as_square("B", B, context=context), A.shape[-1], context=context, against="A")
    S = same_size("S", as_square("S", S, context=context), A.shape[-1], context=context, against="A")
    n_steps, seed = check_count("n_steps", n_steps), check_seed("seed", seed)
    ev = np.linalg.eigvalsh((S + np.swapaxes(S, -1, -2)) / 2)
    if np.any(np.abs(S - np.swapaxes(S, -1, -2)) > 1e-12) or np.any(ev <= 0) or np.any(ev > 1 + 1e-12):
        raise ValueError(f"S must be symmetric with eigenvalues in (0, 1] ({context}); got eigenvalues "
                         f"in [{ev.min():.3g}, {ev.max():.3g}]")
    g = as_scalar_batch("gamma", gamma, context=context, low=0.0, high=1.0, high_open=True)
    rng = np.random.default_rng(seed)
    rev = _log_growth(revnet_jacobian(A, B), n_steps, rng)
    mom = _log_growth(momentum_jacobian(-S, g), n_steps, rng)
    batch = np.broadcast_shapes(rev.shape, mom.shape)
    instances = dict(A=np.broadcast_to(A, batch + A.shape[-2:]), S=np.broadcast_to(S, batch + S.shape[-2:]))
    return combine("fixed_point_iterations", [
        verdict("fixed_point_iterations.revnet", np.broadcast_to(np.maximum(-NO_CONVERGENCE_DIGITS - rev, 0),
                                                                  batch), 0.0, instances,
                f"RevNet iterations shrink by more than 1e-6 over {n_steps} steps (decades)"),
        verdict("fixed_point_iterations.momentum", np.broadcast_to(np.maximum(mom + NO_CONVERGENCE_DIGITS, 0),
                                                                    batch), 0.0, instances,
                f"Momentum ResNet iterations fail to shrink below 1e-6 in {n_steps} steps (decades)"),
    ])
