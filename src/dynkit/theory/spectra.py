"""Spectral claims: eigenvalue pairing of HBNODE's adjoint matrix (review, Prop. 4, (59)-(63)) and
the instability of tied-weight RevNet fixed points (Momentum ResNets, Prop. 1 and its continuous
remark).

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

from ._core import (
    CheckResult,
    as_real_array,
    as_scalar_batch,
    as_square,
    check_count,
    check_seed,
    combine,
    same_size,
    verdict,
    worst_sv,
)

__all__ = [
    "check_eigen_pairing",
    "pairing_roots",
    "hbnode_adjoint_matrix",
    "check_revnet_instability",
    "check_revnet_continuous",
    "revnet_jacobian",
    "check_fixed_point_iterations",
    "momentum_jacobian",
]

# Backward errors are a few ulps times n for a backward-stable eigen/SVD; 1e-9 leaves room for
# n <= 12 and for the roots' own rounding when |mu| is large.
BACKWARD_TOL = 1e-9
# log|det| at points on a circle of radius 2(1 + ||H||): each determinant is well conditioned there,
# relative agreement to 1e-8 is a safe bound for n <= 12 in float64.
CHARPOLY_TOL = 1e-8


def _quadratic_roots(b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Both roots of ``r**2 + b r + c = 0`` (complex), stacked on a new last axis; stable
    formula."""
    b = b.astype(complex)
    c = np.asarray(c, dtype=complex)
    disc = np.sqrt(b * b - 4 * c)
    disc = np.where(
        (np.conj(b) * disc).real < 0, -disc, disc
    )  # pick the sign that avoids cancellation
    big = -(b + disc) / 2
    small = np.where(big != 0, c / np.where(big != 0, big, 1), 0)
    return np.stack([big, small], axis=-1)


def _roots_backward_error(H: np.ndarray, roots: np.ndarray) -> np.ndarray:
    """max over roots of sigma_min(H - r I) / (1 + ||H||_2), per batch element."""
    m = H.shape[-1]
    shifted = H[..., None, :, :].astype(complex) - roots[..., :, None, None] * np.eye(m)
    norm = np.linalg.norm(H, ord=2, axis=(-2, -1))
    return worst_sv(shifted).max(axis=-1) / (1 + norm)


def _charpoly_mismatch(
    H: np.ndarray,
    P: np.ndarray,
    q,
    z_power: int = 0,
    n_points: int = 4,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
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
            raise ValueError(
                f"J must be diagonal ({context}: J is the average of dsigma/dm, a diagonal "
                f"matrix); got off-diagonal entries up to {np.abs(off).max():.3g}"
            )
        J = np.einsum("...ii->...i", J)
    if J.shape[-1:] != (n,):
        raise ValueError(
            f"J must have shape (..., {n}) (its diagonal) or (..., {n}, {n}) to match F "
            f"({context}); got shape {J.shape}"
        )
    if np.any((J <= 0) | (J > 1)):
        raise ValueError(
            f"J's diagonal entries must lie in (0, 1] ({context}: derivatives of a "
            f"sigmoid/tanh-like sigma); got {J[(J <= 0) | (J > 1)].reshape(-1)[0]!r}"
        )
    return J


def hbnode_adjoint_matrix(J, F, gamma) -> np.ndarray:
    """``H = [[0, J], [F, -gamma I]]`` of the review's (59) (J diagonal, given as its diagonal)."""
    n = F.shape[-1]
    batch = np.broadcast_shapes(F.shape[:-2], np.shape(J)[:-1], np.shape(gamma))
    H = np.zeros(batch + (2 * n, 2 * n))
    H[..., :n, n:] = np.asarray(J)[..., :, None] * np.eye(n)
    H[..., n:, :n] = F
    H[..., n:, n:] = -np.asarray(gamma)[..., None, None] * np.eye(n)
    return H


def _match(eig: np.ndarray, radius: np.ndarray, roots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each batch member, the eigenvalues (and their radii) reordered to match ``roots`` one
    to one (minimal total distance, scipy's linear_sum_assignment)."""
    from scipy.optimize import linear_sum_assignment

    flat_e, flat_r, flat_z = (x.reshape(-1, x.shape[-1]) for x in (eig, radius, roots))
    out_e, out_r = np.empty_like(flat_e), np.empty_like(flat_r)
    for i, (e, r, z) in enumerate(zip(flat_e, flat_r, flat_z)):
        rows, cols = linear_sum_assignment(np.abs(z[:, None] - e[None, :]))
        out_e[i, rows], out_r[i, rows] = e[cols], r[cols]
    return out_e.reshape(eig.shape), out_r.reshape(radius.shape)


def pairing_roots(J, F, gamma) -> np.ndarray:
    """The constructive pairing of Prop. 4 of the review: for each eigenvalue ``mu`` of ``JF`` the
    two roots of ``lam (lam + gamma) = mu`` (Eq. (62)). Shape ``(..., n, 2)``; each pair sums to
    ``-gamma``.
    """
    context = "review Prop. 4, H = [[0, J], [F, -gamma I]]"
    F = as_square("F", F, context=context)
    n = F.shape[-1]
    J = _as_diag_J(J, F, context)
    gamma = as_scalar_batch("gamma", gamma, context=context, low=0.0)
    mu = np.linalg.eigvals(J[..., :, None] * F)
    g = np.broadcast_to(gamma, mu.shape[:-1])[..., None]
    return _quadratic_roots(np.broadcast_to(g, mu.shape), -mu)


def check_eigen_pairing(
    J, F, gamma, *, scale: float = 1.0, a: float | None = None, claimed_sum=None
) -> CheckResult:
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
        If given, also checks the consequence stated after (63): with ``0 <= gamma <= 2a`` every
        pair has an eigenvalue with real part ``>= -a``. (With ``gamma > 2a`` this may fail: that is
        the hypothesis.)
    claimed_sum : float or array, optional
        The pair sum being claimed; defaults to ``-gamma``. A wrong value is detected.

    Returns
    -------
    CheckResult
        ``residual`` is the worst of the relative backward error of the constructed roots, the
        relative mismatch of the characteristic polynomials (60), the distance of H's own
        eigenvalues (``numpy.linalg.eig``, matched one to one with the roots) from the roots beyond
        their rounding radii, and the error of the pair sums of those eigenvalues (the pairing is a
        statement about H's eigenvalues: it is checked on them, not on the roots, whose pairs sum to
        ``-gamma`` by construction).
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
    H = hbnode_adjoint_matrix(Jd, F, g)
    JF = Jd[..., :, None] * F
    roots = pairing_roots(Jd, F, g)  # (..., n, 2)

    # the statement for -M = -(t - T) H: roots scale by -(t - T)
    Ms = -scale * H
    roots_M = -scale * roots
    backward = _roots_backward_error(Ms, roots_M.reshape(batch + (2 * n,)))
    charpoly = _charpoly_mismatch(H, JF, lambda z: z * (z + g[..., None]))
    # the substance, on H's own eigenvalues (numpy.linalg.eig, independent of the roots): match them
    # one to one with the roots; each must lie within its rounding radius of its root, and the pairs
    # of *eigenvalues* must sum to (t - T) gamma within their radii
    eig, radius = _eigenvalues_with_radius(Ms)
    matched, matched_radius = _match(eig, radius, roots_M.reshape(batch + (2 * n,)))
    match_error = (
        np.maximum(np.abs(matched - roots_M.reshape(batch + (2 * n,))) - matched_radius, 0)
        / (1 + np.abs(roots_M).max(axis=(-1, -2)))[..., None]
    ).max(axis=-1)
    target = (
        scale * g
        if claimed_sum is None
        else np.broadcast_to(as_real_array("claimed_sum", claimed_sum, context=context), batch)
    )
    pairs = matched.reshape(batch + (n, 2))
    pair_radius = matched_radius.reshape(batch + (n, 2)).sum(axis=-1)
    pair_sums = pairs.sum(axis=-1)
    sum_error = (
        np.maximum(np.abs(pair_sums - target[..., None]) - pair_radius, 0)
        / (1 + np.abs(pairs).max(axis=(-1, -2))[..., None])
    ).max(axis=-1)
    instances = dict(J=Jd, F=F, gamma=g)
    parts = [
        verdict(
            "eigen_pairing.spectrum",
            backward,
            BACKWARD_TOL,
            instances,
            "roots of lam(lam+gamma)=mu are eigenvalues of -M (relative backward error)",
        ),
        verdict(
            "eigen_pairing.charpoly",
            charpoly,
            CHARPOLY_TOL,
            instances,
            "det(zI - H) = det(z(z+gamma)I - JF), Eq. (60) (relative mismatch)",
        ),
        verdict(
            "eigen_pairing.eigenvalues",
            match_error,
            BACKWARD_TOL,
            instances,
            "eigenvalues of -M (numpy) vs the roots, beyond each one's rounding radius (relative)",
        ),
        verdict(
            "eigen_pairing.pair_sum",
            sum_error,
            BACKWARD_TOL,
            instances,
            "each pair of eigenvalues of -M sums to (t - T) gamma, beyond rounding (relative)",
            sides={
                "pair sums (eigenvalues of -M)": pair_sums.real,
                "claimed": np.broadcast_to(target, batch),
            },
        ),
    ]
    if a is not None:
        a_val = float(as_scalar_batch("a", a, context=context, low=0.0, low_open=True))
        # margin: for each pair of H's eigenvalues the larger real part must be >= -a (in H's
        # units), up to rounding
        in_H = pairs / -scale
        best = (
            (in_H.real + matched_radius.reshape(batch + (n, 2)) / abs(scale))
            .max(axis=-1)
            .min(axis=-1)
        )
        shortfall = np.maximum(-a_val - best, 0.0) / (1 + a_val)
        parts.append(
            verdict(
                "eigen_pairing.decay_bound",
                shortfall,
                BACKWARD_TOL,
                instances,
                f"every pair has Re(lam) >= -a with a = {a_val:g} (needs gamma <= 2a)",
                a=a_val,
            )
        )
    return combine("eigen_pairing", parts)


# ------------------------------------------------------------------------------------------------
# Momentum ResNets, Prop. 1 (RevNet instability)

# |lam| - 1 is computed from roots of lam^2 - (2 + mu) lam + 1 whose product is 1; a root with
# |lam| < 1 - 1e-9 would be a genuine counterexample, not rounding, for n <= 12.
INSTABILITY_TOL = 1e-9


def _square_pair(A, B, context: str) -> tuple[np.ndarray, np.ndarray]:
    """``A`` and ``B`` validated as square matrices of one size, broadcast to one batch shape."""
    A = as_square("A", A, context=context)
    B = same_size(
        "B", as_square("B", B, context=context), A.shape[-1], context=context, against="A"
    )
    n = A.shape[-1]
    batch = np.broadcast_shapes(A.shape[:-2], B.shape[:-2])
    return np.broadcast_to(A, batch + (n, n)), np.broadcast_to(B, batch + (n, n))


def revnet_jacobian(A, B) -> np.ndarray:
    """``J(A, B) = [[I, A], [B, I + BA]]``: Jacobian of the tied-weight RevNet map (4) at a fixed
    point."""
    A, B = _square_pair(A, B, "Momentum ResNets Prop. 1")
    eye = np.broadcast_to(np.eye(A.shape[-1]), A.shape)
    return np.block([[eye, A], [B, eye + B @ A]])


def _require_invertible(name: str, M: np.ndarray, context: str) -> None:
    s = np.linalg.svd(M, compute_uv=False)
    rel = s[..., -1] / np.maximum(s[..., 0], np.finfo(float).tiny)
    if np.any(rel < 1e3 * np.finfo(float).eps * M.shape[-1]):
        raise ValueError(
            f"{name} must be invertible ({context} assumes A and B invertible); got a "
            f"matrix with relative smallest singular value {rel.min():.3g}"
        )


def _eigenvalues_with_radius(M: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues of a batch of matrices and each one's rounding radius ``10 m u ||M|| kappa_i``
    (``kappa_i`` = ``||x_i|| ||y_i||`` from the right eigenvectors and the rows of their
    inverse), capped by the Hoelder bound ``(10 m u)**(1/m) ||M||`` of a size-m Jordan block."""
    m = M.shape[-1]
    w, X = np.linalg.eig(M)
    norm = np.linalg.norm(M, ord=2, axis=(-2, -1))[..., None]
    unit = 10 * m * np.finfo(float).eps
    try:
        Y = np.linalg.inv(X)
        kappa = np.linalg.norm(X, axis=-2) * np.linalg.norm(Y, axis=-1)
    except np.linalg.LinAlgError:  # a numerically defective batch member: the Hoelder cap decides
        kappa = np.full(w.shape, np.inf)
    return w, np.minimum(unit * norm * kappa, unit ** (1 / m) * norm)


def check_revnet_instability(A, B) -> CheckResult:
    """Prop. 1 of the Momentum ResNets paper: for invertible A, B the RevNet Jacobian J(A, B) has an
    eigenvalue with ``|lam| >= 1`` and ``lam != 1``; each eigenvalue solves
    ``lam**2 - (2 + mu) lam + 1 = 0`` for some ``mu`` in Sp(AB) (Eq. (11) of its appendix A.0).

    The residual is the worst of: the backward error of the roots built from Sp(AB), the mismatch of
    ``det(zI - J) = det((z - 1)**2 I - z AB)``, and the shortfall ``1 - max |lam|`` over J's own
    eigenvalues (``numpy.linalg.eigvals``) that are decidably ``!= 1``, i.e. farther from 1 than
    their rounding radius (:func:`_eigenvalues_with_radius`; ``A = B = 1e-7 I`` gives ``1 +- 1e-7``,
    a radius of ~1e-14).
    """
    context = "Momentum ResNets Prop. 1"
    A, B = _square_pair(A, B, context)
    _require_invertible("A", A, context)
    _require_invertible("B", B, context)
    Jm = revnet_jacobian(A, B)
    batch, n = Jm.shape[:-2], A.shape[-1]
    AB = A @ B
    mu = np.linalg.eigvals(AB)
    # lam = 1 + delta with delta^2 - mu delta - mu = 0: the form lam^2 - (2 + mu) lam + 1 loses mu's
    # digits to 2 + mu when |mu| is small (roots near the double root 1 are then off by ~sqrt(u))
    roots = 1 + _quadratic_roots(-mu, -mu).reshape(batch + (2 * n,))
    backward = _roots_backward_error(Jm, roots)
    # det(zI - J) = det((z-1)^2 I - z AB) = z^n det(((z-1)^2/z) I - AB)
    charpoly = _charpoly_mismatch(Jm, AB, lambda z: (z - 1) ** 2 / z, z_power=n)
    # the substance on J's own eigenvalues (computed independently of Sp(AB)): which are decidably
    # != 1? Within the rounding radius of 1 they are not (a fixed 1e-6 treated 1 +- 1e-7 as 1 and
    # found no witness)
    eig, radius = _eigenvalues_with_radius(Jm)
    away = np.abs(eig - 1) > radius
    top = np.where(away, np.abs(eig), -np.inf).max(axis=-1)
    shortfall = np.maximum(1 - top, 0.0)
    instances = dict(A=A, B=B)
    return combine(
        "revnet_instability",
        [
            verdict(
                "revnet_instability.spectrum",
                backward,
                BACKWARD_TOL,
                instances,
                "roots of lam^2-(2+mu)lam+1 are eigenvalues of J(A,B) (relative backward error)",
            ),
            verdict(
                "revnet_instability.charpoly",
                charpoly,
                CHARPOLY_TOL,
                instances,
                "det(zI - J) = z^n det(((z-1)^2/z) I - AB) (relative mismatch)",
            ),
            verdict(
                "revnet_instability.unstable",
                shortfall,
                INSTABILITY_TOL,
                instances,
                "some eigenvalue lam != 1 has |lam| >= 1 (shortfall 1 - max|lam|)",
            ),
        ],
    )


def check_revnet_continuous(A, B) -> CheckResult:
    """The continuous remark after Prop. 1: ``[[0, A], [B, 0]]`` has eigenvalues ``+-sqrt(mu)``,
    mu in Sp(AB), so they cannot all have negative real part. Residual: backward error of
    ``+-sqrt(mu)`` and the shortfall ``-max Re(lam)`` (must be <= 0)."""
    A, B = _square_pair(A, B, "Momentum ResNets Prop. 1, continuous remark")
    zero = np.zeros(A.shape)
    K = np.block([[zero, A], [B, zero]])
    mu = np.linalg.eigvals(A @ B)
    root = np.sqrt(mu.astype(complex))
    roots = np.concatenate([root, -root], axis=-1)
    backward = _roots_backward_error(K, roots)
    eig = np.linalg.eigvals(K)
    # +-sqrt(mu) sum to zero, so max Re >= 0 up to rounding of size eps * ||K||
    shortfall = np.maximum(-eig.real.max(axis=-1), 0.0) / (1 + np.linalg.norm(K, 2, axis=(-2, -1)))
    instances = dict(A=A, B=B)
    return combine(
        "revnet_continuous",
        [
            verdict(
                "revnet_continuous.spectrum",
                backward,
                BACKWARD_TOL,
                instances,
                "+-sqrt(mu), mu in Sp(AB), are eigenvalues of [[0,A],[B,0]] (backward error)",
            ),
            verdict(
                "revnet_continuous.not_stable",
                shortfall,
                BACKWARD_TOL,
                instances,
                "not all eigenvalues have Re < 0 (shortfall -max Re / (1+||K||))",
            ),
        ],
    )


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


# a converging linear iteration loses >= 3 digits per 100 steps once rho <= 0.93; a RevNet one (rho
# >= 1) can only shrink by the conditioning of its eigenvector basis, far less than 6 digits here.
NO_CONVERGENCE_DIGITS = 6.0


def check_fixed_point_iterations(
    A, B, S, gamma, *, n_steps: int = 400, seed: int = 0
) -> CheckResult:
    """The consequence of Prop. 1 (Momentum ResNets Sect. 3.3): tied-weight RevNet iterations
    linearised at a fixed point (Jacobian J(A, B)) do not converge — ``||z_n|| / ||z_0||`` stays
    above ``1e-6`` over ``n_steps`` from a random start — while Momentum ResNet iterations with
    ``gamma < 1`` and ``f'(x*) = -S`` (S SPD, eigenvalues in (0, 1]) do: the ratio falls below
    ``1e-6``. Residual: the shortfall in decades (0 when both behave as claimed)."""
    context = "Momentum ResNets Prop. 1 consequence"
    A, B = _square_pair(A, B, context)
    S = same_size(
        "S", as_square("S", S, context=context), A.shape[-1], context=context, against="A"
    )
    n_steps, seed = check_count("n_steps", n_steps), check_seed("seed", seed)
    ev = np.linalg.eigvalsh((S + np.swapaxes(S, -1, -2)) / 2)
    if (
        np.any(np.abs(S - np.swapaxes(S, -1, -2)) > 1e-12)
        or np.any(ev <= 0)
        or np.any(ev > 1 + 1e-12)
    ):
        raise ValueError(
            f"S must be symmetric with eigenvalues in (0, 1] ({context}); got eigenvalues "
            f"in [{ev.min():.3g}, {ev.max():.3g}]"
        )
    g = as_scalar_batch("gamma", gamma, context=context, low=0.0, high=1.0, high_open=True)
    rng = np.random.default_rng(seed)
    rev = _log_growth(revnet_jacobian(A, B), n_steps, rng)
    mom = _log_growth(momentum_jacobian(-S, g), n_steps, rng)
    batch = np.broadcast_shapes(rev.shape, mom.shape)
    instances = dict(
        A=np.broadcast_to(A, batch + A.shape[-2:]), S=np.broadcast_to(S, batch + S.shape[-2:])
    )
    return combine(
        "fixed_point_iterations",
        [
            verdict(
                "fixed_point_iterations.revnet",
                np.broadcast_to(np.maximum(-NO_CONVERGENCE_DIGITS - rev, 0), batch),
                0.0,
                instances,
                f"RevNet iterations shrink by more than 1e-6 over {n_steps} steps (decades)",
            ),
            verdict(
                "fixed_point_iterations.momentum",
                np.broadcast_to(np.maximum(mom + NO_CONVERGENCE_DIGITS, 0), batch),
                0.0,
                instances,
                f"Momentum ResNet iterations fail to shrink below 1e-6 in {n_steps} steps "
                f"(decades)",
            ),
        ],
    )
