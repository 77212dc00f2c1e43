"""Linear maps represented by a Momentum ResNet in the continuous limit: Prop. 4 (Psi_eps), Theorems
1 and 2 (representable maps, lambda_eps) of the Momentum ResNets paper, and the eps -> 0 limit
(Culver's real-logarithm criterion).

``eps x'' + x' = theta x`` with ``(x(0), x'(0)) = (x0, 0)`` maps ``x0`` to ``Psi_eps(theta) x0`` at
``t = 1`` (Prop. 4). With
``f_eps(z) = exp(-1/(2 eps)) (cosh(sqrt z) + sinh(sqrt z) / (2 eps sqrt z))`` one has
``Psi_eps(theta) = f_eps(theta / eps + I / (4 eps**2))`` (appendix A.4);
``f_eps(R) = [lambda_eps, inf)`` with ``lambda_eps = min_alpha G_eps(alpha)``,
``G_eps(alpha) = exp(-1/(2 eps)) (cos alpha + sin(alpha) / (2 eps alpha))``.
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass, field

import mpmath
import numpy as np
import scipy.linalg

from ..solvers import solve
from ._core import (
    CheckResult,
    as_scalar_batch,
    as_square,
    check_callable,
    check_count,
    combine,
    verdict,
)

__all__ = [
    "psi_eps",
    "psi_eps_series",
    "psi_eps_ode",
    "f_eps",
    "lambda_eps",
    "lambda_eps_mp",
    "check_f_eps_surjective",
    "check_f_eps_prime_zeros_real",
    "check_representable_set_grows",
    "check_lambda_eps_closeness",
    "is_representable",
    "Representability",
    "momentum_logarithm",
    "check_psi_series",
    "psi_eps_scalar_mp",
    "check_lambda_eps",
    "check_momentum_logarithm",
    "check_representability",
    "check_threshold_boundary",
    "check_representable_up_to_scale",
    "check_scaling_representable",
    "check_first_order_range",
]

_CTX = "Momentum ResNets Prop. 4 / Theorems 1-2"


def _eps(eps, *, allow_zero: bool = False) -> np.ndarray:
    return as_scalar_batch(
        "eps",
        eps,
        context=_CTX + (", eps >= 0 (0: first-order model (8))" if allow_zero else ", eps > 0"),
        low=0.0,
        low_open=not allow_zero,
    )


# ------------------------------------------------------------------------------------------------
# Psi_eps three ways


def psi_eps_series(theta, eps, *, max_terms: int = 60) -> np.ndarray:
    """Prop. 4's series ``exp(-1/(2 eps)) sum_n (1/(2n)! + 1/(2 eps (2n+1)!)) X**n``,
    ``X = theta/eps + I/(4 eps**2)`` (batched over leading axes of ``theta``/``eps``), summed in a
    form that keeps its accuracy for any ``eps`` and ``||theta / eps||``.

    The series is ``C(X) + S(X) / (2 eps)`` with ``C = sum X**n/(2n)!`` and
    ``S = sum X**n/(2n+1)!`` (``cosh(sqrt X)`` and ``sinh(sqrt X)/sqrt X``). Summed directly in
    float64 it cancels catastrophically for large negative ``theta/eps`` (terms ``|X|**n/(2n)!``
    up to ``e**sqrt|X|`` for a sum of size 1) and overflows ``(2n)!``. Here both series are
    summed term by term at ``X / 4**k`` with ``||X|| / 4**k <= 1/4`` (about 20 terms, no
    cancellation), then brought back with the exact doubling identities of the series,
    ``C(4Y) = 2 C(Y)**2 - I`` and ``S(4Y) = S(Y) C(Y)`` (``cosh 2s = 2 cosh**2 s - 1``,
    ``sinh 2s / 2s = (sinh s / s) cosh s``), carrying scalar scale factors in log form so that
    ``exp(-1/(2 eps))`` and ``cosh(sqrt X)`` never overflow separately."""
    theta = as_square("theta", theta, context=_CTX)
    e = _eps(eps)
    max_terms = check_count("max_terms", max_terms)
    d = theta.shape[-1]
    batch = np.broadcast_shapes(theta.shape[:-2], e.shape)
    e = np.broadcast_to(e, batch)[..., None, None]
    X = theta / e + np.eye(d) / (4 * e * e)
    norm = np.abs(X).sum(axis=-1).max(axis=-1)  # infinity norm per instance
    k = np.maximum(np.ceil(np.log(np.maximum(norm, 1e-300) * 4) / np.log(4)), 0).astype(int)
    Y = X / (4.0**k)[..., None, None]
    eye = np.broadcast_to(np.eye(d), batch + (d, d))
    power, C, S = eye.copy(), eye.copy(), eye.copy()
    fact_even, fact_odd = 1.0, 1.0  # (2n)!, (2n+1)!
    for n in range(1, max_terms):
        power = power @ Y
        fact_even *= (2 * n - 1) * (2 * n)
        fact_odd *= (2 * n) * (2 * n + 1)
        C = C + power / fact_even
        S = S + power / fact_odd
        if np.all(
            np.abs(power).max(axis=(-1, -2)) / fact_even <= 1e-17
        ):  # ||Y|| <= 1/4: terms fall 40x a step
            break
    log_c, log_s = np.zeros(batch), np.zeros(batch)  # C_true = exp(log_c) C, S_true = exp(log_s) S
    for step in range(int(k.max()) if k.size else 0):
        active = (step < k)[..., None, None]
        new_C = 2 * C @ C - eye * np.exp(-2 * log_c)[..., None, None]
        new_S = S @ C
        log_c_new, log_s_new = 2 * log_c, log_s + log_c
        # renormalise (scale factors move into the logs) so entries stay O(1)
        mc = np.maximum(np.abs(new_C).max(axis=(-1, -2)), 1e-300)
        ms = np.maximum(np.abs(new_S).max(axis=(-1, -2)), 1e-300)
        new_C, new_S = new_C / mc[..., None, None], new_S / ms[..., None, None]
        log_c_new, log_s_new = log_c_new + np.log(mc), log_s_new + np.log(ms)
        C, S = np.where(active, new_C, C), np.where(active, new_S, S)
        log_c, log_s = (
            np.where(active[..., 0, 0], log_c_new, log_c),
            np.where(active[..., 0, 0], log_s_new, log_s),
        )
    half = 1 / (2 * e[..., 0, 0])
    return (
        np.exp(log_c - half)[..., None, None] * C
        + (half * np.exp(log_s - half))[..., None, None] * S
    )


def psi_eps(theta, eps) -> np.ndarray:
    """``Psi_eps(theta)`` as the top-left block of ``expm([[0, I], [theta/eps, -I/eps]])``
    (appendix A.3)."""
    theta = as_square("theta", theta, context=_CTX)
    e = _eps(eps)
    d = theta.shape[-1]
    batch = np.broadcast_shapes(theta.shape[:-2], e.shape)
    e = np.broadcast_to(e, batch)[..., None, None]
    big = np.zeros(batch + (2 * d, 2 * d))
    big[..., :d, d:] = np.eye(d)
    big[..., d:, :d] = theta / e
    big[..., d:, d:] = -np.eye(d) / e
    return scipy.linalg.expm(big)[..., :d, :d]


def psi_eps_ode(theta, eps, *, rtol: float = 1e-10, atol: float = 1e-12) -> np.ndarray:
    """``Psi_eps(theta)``: solve ``eps X'' + X' = theta X``, ``X(0) = I``, ``X'(0) = 0`` to
    ``t = 1`` with :func:`dynkit.solve` (dopri5), all columns and the whole batch in one solve."""
    theta = as_square("theta", theta, context=_CTX)
    e = _eps(eps)
    rtol = float(as_scalar_batch("rtol", rtol, context=_CTX, low=0.0, low_open=True))
    atol = float(as_scalar_batch("atol", atol, context=_CTX, low=0.0, low_open=True))
    d = theta.shape[-1]
    batch = np.broadcast_shapes(theta.shape[:-2], e.shape)
    th = np.broadcast_to(theta, batch + (d, d))
    e = np.broadcast_to(e, batch)[..., None, None]
    y0 = np.zeros(batch + (2, d, d))
    y0[..., 0, :, :] = np.eye(d)

    def field(t, y):
        x, v = y[..., 0, :, :], y[..., 1, :, :]
        return np.stack([v, (th @ x - v) / e], axis=-3)

    sol = solve(field, y0, np.array([0.0, 1.0]), method="dopri5", rtol=rtol, atol=atol)
    return np.asarray(sol.ys[-1][..., 0, :, :])


def f_eps(z, eps) -> np.ndarray:
    """Scalar ``f_eps(z) = exp(-1/(2 eps)) (cosh w + sinh(w) / (2 eps w))``, ``w = sqrt(z)``
    (complex ok)."""
    z = np.asarray(z)
    if z.dtype.kind not in "biufc" or not np.all(np.isfinite(z)):
        raise ValueError(
            f"z must be finite real or complex numbers ({_CTX}, f_eps); got {z!r}"[:160]
        )
    z = z.astype(complex)
    c = 1 / (2 * _eps(eps))
    w = np.sqrt(z)
    sinhc = np.where(np.abs(w) > 1e-8, np.sinh(w) / np.where(w == 0, 1, w), 1 + z / 6)
    return np.exp(-c) * (np.cosh(w) + c * sinhc)


# ------------------------------------------------------------------------------------------------
# lambda_eps


def _g(alpha, c):
    return np.cos(alpha) + c * np.sin(alpha) / alpha


def _g1(alpha, c):
    return -np.sin(alpha) + c * (alpha * np.cos(alpha) - np.sin(alpha)) / alpha**2


def _g2(alpha, c):
    return (
        -np.cos(alpha)
        + c
        * (-(alpha**2) * np.sin(alpha) - 2 * alpha * np.cos(alpha) + 2 * np.sin(alpha))
        / alpha**3
    )


def _lambda_eps_with_argmin(eps: np.ndarray, n_grid: int = 2048) -> tuple[np.ndarray, np.ndarray]:
    """``lambda_eps`` and the argmin of G_eps, vectorised over eps (:func:`_scaled_min_g` times
    ``exp(-1/(2 eps))``; 0 or subnormal where that factor underflows, see :func:`lambda_eps`)."""
    best, alpha = _scaled_min_g(eps, n_grid)
    return np.exp(-1 / (2 * eps)) * best, alpha


# below this |lambda_eps| a float64 value is subnormal (fewer than 53 bits) or 0: lambda_eps raises
# there
_LAMBDA_FLOOR = np.finfo(float).tiny


def _scaled_min_g(eps: np.ndarray, n_grid: int = 2048) -> tuple[np.ndarray, np.ndarray]:
    """``exp(1/(2 eps)) lambda_eps`` (the minimum of ``cos a + c sin(a) / a``, c = 1/(2 eps), which
    never under- or overflows) and its argmin, vectorised over eps.

    Why the minimum lies in (pi, 2 pi): on (0, pi] ``G(alpha) >= cos(alpha) >= -1`` (sin >= 0 there)
    while ``G(pi) = -1`` and ``G'(pi) = -c/pi < 0``, so min G < -1 is attained beyond pi. Write
    ``G(alpha) = A(alpha) cos(alpha - phi(alpha))`` with amplitude ``A = sqrt(1 + c**2/alpha**2)``
    decreasing and ``phi = arctan(c/alpha)`` in (0, pi/2): the point ``alpha_1 < 3 pi/2`` with
    ``alpha_1 - phi(alpha_1) = pi`` has ``G = -A(alpha_1) < -A(2 pi) <= G(alpha)`` for every
    ``alpha >= 2 pi``. So a dense grid of (pi, 2 pi] and Newton on G' from its best point give the
    global minimum; the first trough sits near ``pi + c/pi`` for small c (large eps) and near 4.493
    (``tan alpha = alpha``) for large c.
    """
    c = 1 / (2 * eps)
    spacing = np.pi / n_grid
    grid = np.pi + spacing * np.arange(1, n_grid + 1)
    values = _g(grid[None, :], c[..., None])
    k = values.argmin(axis=-1)
    alpha = grid[k]
    for _ in range(40):  # Newton on G' (quadratic convergence from a grid point within a spacing)
        step = _g1(alpha, c) / _g2(alpha, c)
        alpha = np.clip(alpha - np.clip(step, -spacing, spacing), np.pi, 2 * np.pi)
    best = np.minimum(_g(alpha, c), values.min(axis=-1))
    return best, alpha


@functools.lru_cache(maxsize=4096)
def _lambda_scalar(eps: float) -> tuple[float, float]:
    """(lambda_eps, argmin) for one eps, cached: Theorem 1/2 decisions ask for it repeatedly."""
    value, alpha = _lambda_eps_with_argmin(np.array([eps]))
    return float(value[0]), float(alpha[0])


def lambda_eps(eps):
    """``lambda_eps = min_alpha G_eps(alpha)`` (Theorem 1 of the Momentum ResNets paper): the lower
    end of ``Psi_eps(R) = [lambda_eps, inf)``.

    Vectorised float64: the minimum lies in the first trough, ``alpha`` in (pi, 2 pi) (proof in
    :func:`_lambda_eps_with_argmin`), found on a grid and polished by Newton. Accuracy: within 1e-13
    relative of an independent 40-digit mpmath computation (:func:`lambda_eps_mp`) for every eps in
    [1e-3, 1e8] (tested on a log-spaced grid, and by a property test over eps in [7.2e-4, 1e8]).
    Returns a float for scalar input.

    Raises
    ------
    ValueError
        For eps below ~7.1e-4, where ``|lambda_eps| < 2.2e-308`` (``exp(-1/(2 eps))`` underflows
        float64: eps = 1e-4 gives -3.7e-2169). :func:`lambda_eps_mp` returns those values as mpmath
        numbers.
    """
    e = _eps(eps)
    value = (
        _lambda_scalar(float(e))[0]
        if e.ndim == 0
        else _lambda_eps_with_argmin(e.reshape(-1))[0].reshape(e.shape)
    )
    tiny = np.abs(value) < _LAMBDA_FLOOR
    if np.any(tiny):
        worst = float(np.max(np.where(tiny, e, 0)))
        raise ValueError(
            f"eps = {worst:.6g}: lambda_eps = -exp(-1/(2 eps)) x O(1/eps) underflows float64 "
            f"for eps "
            f"below ~7.1e-4 ({_CTX}); use lambda_eps_mp(eps) for its mpmath value"
        )
    return value


def _threshold(eps: float) -> float | mpmath.mpf:
    """``lambda_eps`` as a float where float64 holds it, else (eps below ~7.1e-4) as a 30-digit
    mpmath number: the threshold Theorem 1/2's decisions compare eigenvalues with (an mpf
    compares with floats exactly)."""
    value = _lambda_scalar(float(eps))[0]
    return value if abs(value) >= _LAMBDA_FLOOR else lambda_eps_mp(float(eps), 30)


def lambda_eps_mp(eps: float, dps: int = 40) -> mpmath.mpf:
    """``lambda_eps`` to ``dps`` digits with mpmath, independently of the float64 code: scan
    G_eps on (pi, 2 pi) at ``dps`` digits (where the global minimum lies, see
    :func:`_lambda_eps_with_argmin`), then bisect G' between the neighbours of the best scan
    point."""
    e = float(_eps(eps))
    if isinstance(dps, bool) or not isinstance(dps, (int, np.integer)) or not 15 <= dps <= 1000:
        raise ValueError(f"dps must be an integer in [15, 1000] (mpmath digits); got {dps!r}")
    with mpmath.workdps(int(dps) + 10):
        c = 1 / (2 * mpmath.mpf(e))
        g = lambda a: mpmath.cos(a) + c * mpmath.sin(a) / a  # noqa: E731
        dg = lambda a: -mpmath.sin(a) + c * (a * mpmath.cos(a) - mpmath.sin(a)) / a**2  # noqa: E731
        n = 120  # one trough in (pi, 2 pi): the best of 120 points brackets its minimum
        points = [mpmath.pi * (1 + mpmath.mpf(i) / n) for i in range(1, n)]
        best = min(range(len(points)), key=lambda i: g(points[i]))
        lo = points[best - 1] if best > 0 else mpmath.pi
        hi = points[best + 1] if best + 1 < len(points) else 2 * mpmath.pi
        for _ in range(int(3.4 * (dps + 10)) + 10):  # bisection: one bit per step
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if dg(mid) < 0 else (lo, mid)
        value = mpmath.exp(-c) * g((lo + hi) / 2)
    return +value


# ------------------------------------------------------------------------------------------------
# Theorems 1 / 2: representability


@dataclass(frozen=True)
class Representability:
    """Decision of :func:`is_representable`: ``representable`` is True, False, or None where
    Theorem 2 leaves the case open (Jordan blocks of size >= 2 at exactly ``lambda_eps``
    occurring an odd number of times) or where the matrix's conditioning cannot decide its Jordan
    structure below the threshold. ``reason`` says which condition decided; ``blocks`` maps each
    real eigenvalue below the threshold to its Jordan block sizes."""

    representable: bool | None
    reason: str
    theorem: str
    threshold: float
    blocks: dict = field(default_factory=dict)
    # None only because some eigenvalue with unpaired simple blocks is lambda_eps to rounding: D is
    # then within rounding of a representable matrix (its eigenvalue moved onto lambda_eps), which
    # momentum_logarithm constructs
    within_rounding: bool = False

    def __bool__(self) -> bool:  # pragma: no cover - convenience; None counts as False
        return bool(self.representable)


# clustering of computed eigenvalues: a Jordan block of size s perturbs them by ~eps**(1/s) * ||D||;
# 1e-5 groups blocks up to size 3 in float64 while keeping distinct eigenvalues of test matrices
# apart.
CLUSTER_TOL = 1e-5
# momentum_logarithm: an eigenvalue within THRESHOLD_TOL * max(1, ||D||) of lambda_eps is inverted
# on the real branch
THRESHOLD_TOL = 1e-10
# is_representable's gray zone around lambda_eps: the eigenvalue's own rounding uncertainty (its
# cluster radius, scaled by ||D||, not by max(1, ||D||): D and c D have the same structure) plus
# LAMBDA_RTOL |lambda_eps| (lambda_eps's float64 accuracy is 1e-13 relative). Outside it the side of
# lambda_eps is decided; inside it an eigenvalue whose Jordan blocks are not paired makes the answer
# "cannot decide" (an absolute band 1e-10 max(1, ||D||) answered "representable" for diag(1e6,
# lambda_eps - 1e-5) and for a lone -1e-20 at eps = 1e-3).
LAMBDA_RTOL = 1e-12


def _norm_scale(D: np.ndarray) -> float:
    """||D||_2 (at least the smallest normal float): the scale of D's eigenvalues' rounding errors."""  # noqa: E501
    return max(float(np.linalg.norm(D, 2)), np.finfo(float).tiny)


def _jordan_block_sizes(D: np.ndarray, lam: float, mult: int) -> list[int]:
    """Sizes of the Jordan blocks of the real matrix D at real eigenvalue lam (algebraic
    multiplicity mult), from the numerical ranks of (D - lam I)^k."""
    n = D.shape[-1]
    N = D - lam * np.eye(n)
    scale = max(1.0, np.linalg.norm(D, 2))
    ranks = [n]
    P = np.eye(n)
    for k in range(1, mult + 1):
        P = P @ N
        s = np.linalg.svd(P, compute_uv=False)
        ranks.append(int(np.sum(s > 1e-7 * n * scale**k)))
    ranks.append(ranks[-1])
    sizes = []
    for s in range(1, mult + 1):
        exact = (ranks[s - 1] - ranks[s]) - (ranks[s] - ranks[s + 1])
        sizes += [s] * max(exact, 0)
    return sizes


def _real_clusters(eig: np.ndarray, scale: float) -> list[tuple[float, int]]:
    tol = CLUSTER_TOL * scale
    real = np.sort(eig[np.abs(eig.imag) <= tol].real)
    clusters: list[list[float]] = []
    for x in real:
        if clusters and x - clusters[-1][-1] <= tol:
            clusters[-1].append(x)
        else:
            clusters.append([x])
    return [(float(np.mean(c)), len(c)) for c in clusters]


# Jordan structure from the matrix's own conditioning (a fixed 1e-5 clustering merged two distinct
# simple eigenvalues 1e-6 apart into one "pair"). A computed eigenvalue lambda_i with condition
# number kappa_i (left/right eigenvectors) is uncertain by ~ kappa_i * u * ||D|| (first order;
# near-defective eigenvalues have huge kappa_i, so a Jordan block's computed spread u**(1/s) stays
# inside). RADIUS_FACTOR * n widens that to a safe bound; two eigenvalues whose disks overlap are
# one eigenvalue, two more than GAP_FACTOR times their radii apart are distinct, and in between the
# decision is "cannot decide".
RADIUS_FACTOR = 10.0
GAP_FACTOR = 1e3
# a rank decision needs its nonzero singular values RANK_GAP times above what the noise can reach
RANK_GAP = 1e2


@dataclass(frozen=True)
class _Cluster:
    value: float  # the cluster's mean (real)
    size: int  # algebraic multiplicity
    members: np.ndarray  # computed eigenvalues
    # the cluster's own uncertainty (spread plus rounding, or the first-order radius if simple)
    radius: float
    ambiguous: bool  # some member is within GAP_FACTOR radii of an eigenvalue outside the cluster


def _eigen_clusters(D: np.ndarray) -> tuple[list[_Cluster], np.ndarray]:
    """Real eigenvalue clusters of D, grouped by overlapping rounding disks (see RADIUS_FACTOR).

    A disk's radius is the first-order bound ``RADIUS_FACTOR n u ||D|| kappa_i``, capped by the
    Hoelder bound of a Jordan block of size n, ``(RADIUS_FACTOR n u)**(1/n) ||D||`` (a computed
    double eigenvalue that happens to split by 1e-16 has kappa ~ 1e16, whose first-order radius
    means nothing). Whether a cluster is too close to another to tell distinct from multiple uses
    the clusters' own spread (plus rounding) for multiple clusters and the first-order radius for
    simple eigenvalues."""
    n = D.shape[-1]
    scale = _norm_scale(D)
    unit = RADIUS_FACTOR * n * np.finfo(float).eps
    # eigenvalues of D / ||D|| (LAPACK loses tiny matrices to underflow: eig([[-7e-216]]) gave
    # -6.7e-139)
    w, vl, vr = scipy.linalg.eig(D / scale, left=True, right=True)
    w = w * scale
    dots = np.abs(np.einsum("ij,ij->j", vl.conj(), vr))
    norms = np.linalg.norm(vl, axis=0) * np.linalg.norm(vr, axis=0)
    kappa = norms / np.maximum(dots, 1e-300)
    radius = np.minimum(unit * scale * kappa, unit ** (1 / n) * scale)
    parent = list(range(n))

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    dist = np.abs(w[:, None] - w[None, :])
    for i in range(n):
        for j in range(i + 1, n):
            if dist[i, j] <= radius[i] + radius[j]:
                parent[find(i)] = find(j)
    roots = np.array([find(i) for i in range(n)])
    groups = [np.flatnonzero(roots == r) for r in dict.fromkeys(roots)]
    means = [complex(np.mean(w[idx])) for idx in groups]
    # a cluster's own uncertainty: its spread plus rounding (multiple), the first-order radius
    # (simple)
    fuzz = [
        float(np.abs(w[idx] - mu).max()) + unit * scale if idx.size > 1 else float(radius[idx[0]])
        for idx, mu in zip(groups, means)
    ]
    out = []
    for g, (idx, mu) in enumerate(zip(groups, means)):
        if abs(mu.imag) > fuzz[g] + float(radius[idx].max()):
            continue  # a complex pair's member: Theorems 1-2 put no condition on it
        ambiguous = any(
            abs(mu - other) <= GAP_FACTOR * (fuzz[g] + fuzz[h])
            for h, other in enumerate(means)
            if h != g
        )
        out.append(_Cluster(mu.real, idx.size, w[idx], fuzz[g], ambiguous))
    return out, w


def _cluster_jordan_sizes(D: np.ndarray, cluster: _Cluster) -> list[int] | None:
    """Jordan block sizes of D at a cluster of multiplicity m, or None when the numbers cannot
    decide.

    The cluster is moved to the top-left of an ordered complex Schur form (a unitary similarity:
    no loss of conditioning), ``T11 = mu I + S + Delta`` with ``S`` strictly upper triangular
    (exactly nilpotent) and ``||Delta|| <= eta`` = the cluster's spread plus rounding. The block
    sizes are those of S, from the ranks of ``(T11 - mu I)**k``: a singular value at most
    ``tau_k = (||S|| + eta)**k - ||S||**k`` (what Delta can move a zero one to) is zero, one
    above ``RANK_GAP * tau_k`` is not, and one in between leaves the rank undecided."""
    m = cluster.size
    if m == 1:
        return [1]
    n = D.shape[-1]
    mu = cluster.value
    # select the m Schur eigenvalues nearest mu (the cut halfway to the (m+1)-th)
    T = scipy.linalg.schur(D.astype(complex), output="complex")[0]
    if m < n:
        dist = np.sort(np.abs(np.diag(T) - mu))
        cut = (dist[m - 1] + dist[m]) / 2
        T, _, sdim = scipy.linalg.schur(
            D.astype(complex), output="complex", sort=lambda x: abs(x - mu) <= cut
        )
        if sdim != m:
            return None
    N = T[:m, :m] - mu * np.eye(m)
    S_norm = float(np.linalg.norm(np.triu(N, 1), 2))
    # the norm of the cluster's spectral projector, sqrt(1 + ||X||^2) with T11 X - X T22 = -T12: how
    # much the rounding of D (u ||D||) is amplified in T11 (a derogatory multiple eigenvalue of V
    # diag V^-1 carries noise ~ u kappa(V) ||D|| in its off-diagonal Schur entries, not only in its
    # diagonal)
    projector = 1.0
    if m < n:
        X = scipy.linalg.solve_sylvester(T[:m, :m], -T[m:, m:], -T[:m, m:])
        projector = float(np.sqrt(1 + np.linalg.norm(X, 2) ** 2))
    noise = RADIUS_FACTOR * n * np.finfo(float).eps * _norm_scale(D) * projector
    eta = float(np.abs(np.diag(N)).max()) + noise
    ranks = [m]
    P = np.eye(m, dtype=complex)
    for k in range(1, m + 1):
        P = P @ N
        sv = np.linalg.svd(P, compute_uv=False)
        tau = (S_norm + eta) ** k - S_norm**k
        if np.any((sv > tau) & (sv <= RANK_GAP * tau)):
            return None
        ranks.append(int(np.sum(sv > tau)))
    ranks.append(ranks[-1])
    sizes = []
    for s_ in range(1, m + 1):
        sizes += [s_] * max((ranks[s_ - 1] - ranks[s_]) - (ranks[s_] - ranks[s_ + 1]), 0)
    return sizes if sum(sizes) == m else None


def is_representable(D, eps) -> Representability:
    """Whether the real matrix ``D`` is ``Psi_eps(theta)`` for some real ``theta`` (Theorem 1 for
    diagonalisable D, Theorem 2 with Jordan blocks). ``eps = 0`` is the first-order model (8):
    Culver's criterion (D non-singular, every Jordan block at a negative eigenvalue occurring an
    even number of times).

    Numerical: computed eigenvalues whose rounding disks (radius
    ``RADIUS_FACTOR n u ||D|| kappa_i``, ``kappa_i`` the eigenvalue's condition number) overlap are
    one eigenvalue; its Jordan blocks come from an ordered Schur form
    (:func:`_cluster_jordan_sizes`). Where the numbers cannot separate distinct eigenvalues from a
    multiple one below the threshold (eigenvalues within ``GAP_FACTOR`` radii of each other, or a
    singular value in the gray zone of the rank decision) and the answer depends on it,
    ``representable`` is None and ``reason`` says so.

    Range: any real square D (any scale: the decisions are invariant under D -> c D for c > 0 at eps
    = 0 and use ``||D||``-relative rounding radii) and any eps >= 0 (below eps ~ 7.1e-4, where
    lambda_eps underflows float64, the threshold is its mpmath value). An eigenvalue's side of
    ``lambda_eps`` is decided when it lies outside its gray zone, its rounding radius plus
    ``LAMBDA_RTOL |lambda_eps|``; inside it, unpaired Jordan blocks give ``None`` ("cannot decide"),
    never a confident answer that rounding could reverse.
    """
    D = as_square("D", D, context=_CTX)
    if D.ndim != 2:
        raise ValueError(f"D must be one square matrix (n, n) ({_CTX}); got shape {D.shape}")
    e = float(_eps(eps, allow_zero=True))
    scale = _norm_scale(D)
    clusters, eig = _eigen_clusters(D)
    if e == 0:
        theorem, threshold = "Culver (1966), eps = 0", 0.0
        if np.min(np.abs(eig)) <= CLUSTER_TOL * scale:
            return Representability(
                False, "D is singular: exp(theta) is always invertible", theorem, 0.0
            )
    else:
        theorem, threshold = "Theorem 1/2 (Momentum ResNets)", _threshold(e)
    blocks = {}
    undecided, cannot, gray = [], [], []
    for cluster in clusters:
        lam = cluster.value
        # the gray zone: the cluster's rounding radius (the mean of a Jordan block's computed
        # eigenvalues is more accurate than its spread, so this is safe) plus lambda_eps's own
        # accuracy
        band = float(cluster.radius + LAMBDA_RTOL * abs(threshold))
        if lam - threshold > band:
            continue
        sizes = _cluster_jordan_sizes(D, cluster)
        if sizes is None:
            cannot.append(
                f"the Jordan structure at {lam:.6g} (multiplicity {cluster.size}) is not "
                f"decidable at this "
                f"conditioning"
            )
            continue
        blocks[lam] = sizes
        odd = sorted({s for s in sizes if sizes.count(s) % 2 == 1})
        if cluster.ambiguous:
            cannot.append(
                f"eigenvalue {lam:.6g} is within {GAP_FACTOR:g}x its rounding uncertainty "
                f"({cluster.radius:.3g}) of another eigenvalue: distinct or multiple cannot "
                f"be decided"
            )
            continue
        if not odd:
            continue
        at_threshold = abs(lam - threshold) <= band and e > 0
        if not at_threshold:
            return Representability(
                False,
                f"real eigenvalue {lam:.6g} < {'lambda_eps' if e else 'threshold 0'} = "
                f"{mpmath.nstr(threshold, 7)} has Jordan blocks of "
                f"size(s) {odd} occurring an odd number of times",
                theorem,
                float(threshold),
                blocks,
            )
        if any(s > 1 for s in odd):
            undecided.append(lam)
        # simple blocks: representable at or above lambda_eps, not below; rounding cannot tell which
        else:
            gray.append(lam)
            cannot.append(
                f"eigenvalue {lam:.6g} (unpaired Jordan blocks {odd}) is within its gray "
                f"zone {band:.3g} "
                f"(rounding radius + {LAMBDA_RTOL:g} |lambda_eps|) of lambda_eps = "
                f"{mpmath.nstr(threshold, 7)}: which side it lies on cannot be decided"
            )
    threshold = float(threshold)
    if cannot:
        return Representability(
            None,
            "cannot decide: " + "; ".join(cannot),
            theorem,
            threshold,
            blocks,
            within_rounding=len(gray) == len(cannot) and not undecided,
        )
    if undecided:
        return Representability(
            None,
            f"eigenvalue {undecided[0]:.6g} = lambda_eps (to rounding) has an odd number of "
            f"Jordan blocks of a "
            f"size >= 2: Theorem 2 decides neither way",
            theorem,
            threshold,
            blocks,
        )
    what = "non-singular and " if e == 0 else ""
    return Representability(
        True,
        f"{what}every real eigenvalue below {threshold:.6g} has its Jordan blocks in pairs",
        theorem,
        threshold,
        blocks,
    )


# ------------------------------------------------------------------------------------------------
# constructing theta (Theorem 1's sufficiency proof, eigenvalue by eigenvalue)


def _f_inverse(y: np.ndarray, eps: float, threshold: float) -> np.ndarray:
    """z with f_eps(z) = y: real z for real y >= lambda_eps (monotone branch), non-real z otherwise
    (Newton on w = sqrt(z) from w0 = arccosh(y e^c)). Raises if Newton does not converge."""
    c = 1 / (2 * eps)
    y = np.asarray(y, dtype=complex)
    z = np.empty_like(y)
    # lambda_eps itself (to rounding) is on the real branch: its root is the real minimiser
    # -alpha*^2
    real = (np.abs(y.imag) <= 1e-12 * (1 + np.abs(y))) & (
        y.real >= threshold - 1e-12 * (1 + abs(threshold))
    )
    if np.any(real):
        yr = y.real[real]
        f0 = np.exp(-c) * (1 + c)
        alpha_star = _lambda_scalar(float(eps))[1]
        # x >= 0: bisection on w = sqrt(x) in [0, w_hi];  x < 0: bisection on alpha in [0, alpha*]
        pos = yr >= f0
        lo = np.zeros_like(yr)
        hi = np.where(pos, 1.0, alpha_star)
        fpos = lambda w: np.exp(-c) * (np.cosh(w) + c * np.sinh(w) / np.where(w == 0, 1, w))  # noqa
        while np.any(pos & (fpos(hi) < yr)):
            hi = np.where(pos & (fpos(hi) < yr), 2 * hi, hi)
        for _ in range(64):  # interval <= 2^k: 64 halvings reach float64 resolution
            mid = (lo + hi) / 2
            val = np.where(pos, fpos(mid), np.exp(-c) * _g(np.where(mid == 0, 1e-300, mid), c))
            go_up = np.where(pos, val < yr, val > yr)
            lo, hi = np.where(go_up, mid, lo), np.where(go_up, hi, mid)
        w = (lo + hi) / 2
        z[real] = np.where(pos, w * w, -w * w)
    other = ~real
    if np.any(other):
        target = y[other] * np.exp(c)
        w = np.arccosh(target)
        w = np.where(np.abs(w.imag) < 1e-3, w + 0.5j, w)  # off the real/imaginary axes
        for _ in range(100):
            F = np.cosh(w) + c * np.sinh(w) / w - target
            dF = np.sinh(w) + c * (w * np.cosh(w) - np.sinh(w)) / (w * w)
            step = F / dF
            w = w - step * np.minimum(1, 1 / np.maximum(np.abs(step), 1e-300))
        F = np.cosh(w) + c * np.sinh(w) / w - target
        if np.any(np.abs(F) > 1e-9 * (1 + np.abs(target))):
            raise ValueError(
                f"momentum_logarithm: Newton did not converge for eigenvalue(s) "
                f"{y[other][np.abs(F) > 1e-9 * (1 + np.abs(target))]} (eps={eps})"
            )
        z[other] = w * w
    return z


def _has_jordan_block(D: np.ndarray, eig: np.ndarray, scale: float) -> bool:
    """Whether some eigenvalue cluster has geometric multiplicity below its algebraic
    multiplicity."""
    n = D.shape[-1]
    for lam, mult in _clusters(eig, scale):
        if mult > 1:
            sv = np.linalg.svd(D - lam * np.eye(n), compute_uv=False)
            if np.count_nonzero(sv <= 1e-7 * n * scale) < mult:
                return True
    return False


def _clusters(eig: np.ndarray, scale: float) -> list[tuple[complex, int]]:
    """Eigenvalue clusters (mean, algebraic multiplicity): real ones, and complex ones with Im >
    0 (their conjugates are implied)."""
    tol = CLUSTER_TOL * scale
    out: list[tuple[complex, int]] = [(complex(lam), m) for lam, m in _real_clusters(eig, scale)]
    upper = list(eig[eig.imag > tol])
    while upper:
        seed = upper.pop(0)
        group = [seed] + [z for z in upper if abs(z - seed) <= tol]
        upper = [z for z in upper if abs(z - seed) > tol]
        out.append((complex(np.mean(group)), len(group)))
    return out


def _jordan_chains(D: np.ndarray, lam: complex, mult: int, scale: float) -> list[np.ndarray]:
    """Jordan chains of D at eigenvalue lam: a list of (n, s) arrays whose columns v_1..v_s satisfy
    (D - lam) v_1 = 0, (D - lam) v_{j+1} = v_j. Numerical ranks with threshold 1e-7 n scale^k."""
    n = D.shape[-1]
    A = D - lam * np.eye(n)
    kernels = [np.zeros((n, 0), dtype=A.dtype)]
    P = np.eye(n, dtype=A.dtype)
    while kernels[-1].shape[1] < mult and len(kernels) <= mult:
        P = P @ A
        _, sv, vh = np.linalg.svd(P)
        k = len(kernels)
        kernels.append(vh[sv <= 1e-7 * n * scale**k].conj().T)
    if kernels[-1].shape[1] != mult:
        raise ValueError(
            f"momentum_logarithm: generalised eigenspace of {lam:.6g} has dimension "
            f"{kernels[-1].shape[1]}, expected {mult} (eigenvalues too close to separate)"
        )
    chains: list[np.ndarray] = []
    for s in range(len(kernels) - 1, 0, -1):
        # level-s vectors already produced by longer chains, plus ker A^(s-1), span what we must
        # avoid
        known = [c[:, s - 1] for c in chains] + list(kernels[s - 1].T)
        Q = np.linalg.qr(np.array(known).T)[0] if known else np.zeros((n, 0), dtype=A.dtype)
        rest = kernels[s] - Q @ (Q.conj().T @ kernels[s])
        u, sv, _ = np.linalg.svd(rest, full_matrices=False)
        for top in u[:, sv > 1e-6].T:
            chain = [top]
            for _ in range(s - 1):
                chain.append(A @ chain[-1])
            chains.append(np.array(chain[::-1]).T)  # v_1 = A^(s-1) top, ..., v_s = top
    if sum(c.shape[1] for c in chains) != mult:
        raise ValueError(f"momentum_logarithm: could not build Jordan chains at {lam:.6g}")
    return chains


def _inverse_taylor(z: complex, eps: float, order: int) -> np.ndarray:
    """Taylor coefficients g_0..g_order of the local inverse g of f_eps at f_eps(z) (g_0 = z):
    Taylor coefficients of f_eps at z by FFT on the unit circle, then series reversion by
    fixed-point iteration."""
    m = 64
    points = z + np.exp(2j * np.pi * np.arange(m) / m)
    a = np.fft.fft(f_eps(points, eps)) / m  # a_j = f^(j)(z) / j!, radius 1
    a = a[: order + 1]
    if abs(a[1]) < 1e-12 * max(1.0, abs(a[0])):
        raise ValueError(
            f"momentum_logarithm: f_eps'(z) = 0 at z = {z:.6g}; no analytic inverse branch"
        )
    h = np.zeros(order + 1, dtype=complex)  # h(u) with f(z + h(u)) = f(z) + u, h(0) = 0
    h[1] = 1 / a[1]
    for _ in range(order):
        comp = np.zeros(order + 1, dtype=complex)  # f(z + h(u)) - f(z), truncated
        power = np.zeros(order + 1, dtype=complex)
        power[0] = 1
        for j in range(1, order + 1):
            power = np.convolve(power, h)[: order + 1]
            comp += a[j] * power
        target = np.zeros(order + 1, dtype=complex)
        if order >= 1:
            target[1] = 1
        h = h - (comp - target) / a[1]
    h[0] = z
    return h


def _momentum_logarithm_jordan(D: np.ndarray, e: float, decision: Representability) -> np.ndarray:
    """Theorem 2's construction (appendix A.4.4) for D with Jordan blocks: in a real Jordan
    basis, each block gets ``g(lam + N) = sum_j g_j N^j`` with g the local inverse of f_eps;
    complex g_j act through x + iy -> [[x, -y], [y, x]] on (Re v, -Im v) pairs of a complex
    chain, or on two paired real chains of an eigenvalue below lambda_eps (non-real branch z,
    conj(z))."""
    n = D.shape[-1]
    threshold = decision.threshold
    scale = _norm_scale(D)  # D's own scale (max(1, ||D||) merged the eigenvalues of a tiny D)
    tol = CLUSTER_TOL * scale
    columns, blocks = [], []

    def complex_block(coeffs: np.ndarray, s: int) -> np.ndarray:
        N = np.eye(s, k=1)
        Y = np.zeros((2 * s, 2 * s))
        for j, g in enumerate(coeffs[:s]):
            Y += np.kron(
                np.linalg.matrix_power(N, j), np.array([[g.real, -g.imag], [g.imag, g.real]])
            )
        return Y

    for lam, mult in _clusters(np.linalg.eigvals(D), scale):
        if abs(lam.imag) > tol:  # complex pair: chains at lam, real basis (Re v, -Im v) interleaved
            z = _f_inverse(np.array([lam]), e, threshold)[0]
            for chain in _jordan_chains(D.astype(complex), lam, mult, scale):
                s = chain.shape[1]
                columns += [c for j in range(s) for c in (chain[:, j].real, -chain[:, j].imag)]
                blocks.append(complex_block(_inverse_taylor(z, e, s), s))
            continue
        lam = lam.real
        chains = _jordan_chains(D, lam, mult, scale)
        if lam > threshold + tol or (
            abs(lam - threshold) <= tol and all(c.shape[1] == 1 for c in chains)
        ):
            z = _f_inverse(np.array([max(lam, threshold)], dtype=complex), e, threshold)[0].real
            for chain in chains:
                s = chain.shape[1]
                coeffs = _inverse_taylor(complex(z), e, s).real if s > 1 else np.array([z])
                columns += list(chain.T)
                blocks.append(sum(c * np.eye(s, k=j) for j, c in enumerate(coeffs[:s])))
            continue
        # below (or at) lambda_eps: pair chains of equal length, non-real branch
        z = (
            _f_inverse(np.array([lam - 1e-300j]), e, threshold)[0]
            if lam < threshold - tol
            else _f_inverse(np.array([threshold * (1 + 1e-14) - 0j]), e, threshold)[0]
        )
        by_size: dict[int, list[np.ndarray]] = {}
        for chain in chains:
            by_size.setdefault(chain.shape[1], []).append(chain)
        for s, group in by_size.items():
            if len(group) % 2:
                raise ValueError(
                    f"momentum_logarithm: {len(group)} Jordan block(s) of size {s} at {lam:.6g}; "
                    f"they must come in pairs (Theorem 2)"
                )
            for u, w in zip(group[::2], group[1::2]):
                columns += [c for j in range(s) for c in (u[:, j], w[:, j])]
                blocks.append(complex_block(_inverse_taylor(z, e, s), s))
    V = np.array(columns).T.real
    if V.shape != (n, n):
        raise ValueError(f"momentum_logarithm: built {V.shape[1]} basis vectors for n = {n}")
    Y = scipy.linalg.block_diag(*blocks)
    X = V @ Y @ np.linalg.inv(V)
    return e * X - np.eye(n) / (4 * e)


def momentum_logarithm(D, eps) -> np.ndarray:
    """A real ``theta`` with ``Psi_eps(theta) = D`` for a representable real matrix D
    (:func:`is_representable`): the constructions of Theorem 1 (diagonalisable D) and Theorem 2
    (Jordan blocks).

    ``f_eps`` is inverted eigenvalue by eigenvalue: a real root on the monotone branch for real
    eigenvalues >= lambda_eps, conjugate roots for conjugate pairs, and for each pair of equal real
    eigenvalues below lambda_eps the pair ``z, conj(z)`` on eigenvectors ``u1 +- i u2``, so that
    ``X = V Z V^-1`` is real; then ``theta = eps X - I / (4 eps)`` (as
    ``Psi_eps(theta) = f_eps(theta/eps + I/(4 eps**2))``).

    D with Jordan blocks (Theorem 2) goes through :func:`_momentum_logarithm_jordan`: numerical
    Jordan chains (ranks of powers of ``D - lam I``, so eigenvalues must be separated by more than
    ``CLUSTER_TOL * ||D||``) and the local inverse of f_eps as a power series in the nilpotent part.

    Raises ValueError when D is not representable (or Theorem 2 leaves it undecided); an eigenvalue
    equal to lambda_eps to rounding (``Representability.within_rounding``) is inverted at the real
    minimiser.
    """
    D = as_square("D", D, context=_CTX)
    e = float(_eps(eps))
    decision = is_representable(D, e)
    # an eigenvalue at lambda_eps to rounding (is_representable cannot tell its side) is inverted at
    # the real minimiser: theta then gives D to rounding, the best any float64 construction can do
    if decision.representable is not True and not decision.within_rounding:
        raise ValueError(
            f"D is not representable by eps x'' + x' = theta x with eps={e:g} "
            f"({decision.theorem}): {decision.reason}"
        )
    n = D.shape[-1]
    threshold = decision.threshold
    scale = _norm_scale(D)  # D's own scale (max(1, ||D||) merged the eigenvalues of a tiny D)
    tol = CLUSTER_TOL * scale
    eigval, eigvec = np.linalg.eig(D)
    if _has_jordan_block(D, eigval, scale):
        return _momentum_logarithm_jordan(D, e, decision)
    columns, values = [], []
    used = np.zeros(n, dtype=bool)
    # real eigenvalues below threshold: real orthonormal basis of each eigenspace, paired
    for lam, mult in _real_clusters(eigval, scale):
        members = (np.abs(eigval.imag) <= tol) & (np.abs(eigval.real - lam) <= tol) & ~used
        if (
            lam >= threshold + THRESHOLD_TOL * scale
            or abs(lam - threshold) <= THRESHOLD_TOL * scale
        ):
            if (
                mult > 1
            ):  # a repeated real eigenvalue on the real branch: a real basis of its eigenspace
                _, sv, vh = np.linalg.svd(D - lam * np.eye(n))
                basis = vh[sv <= 1e-7 * n * scale].T
                if basis.shape[1] == mult:
                    zval = _f_inverse(np.array([lam + 0j]), e, threshold)[0].real
                    columns += [basis[:, i].astype(complex) for i in range(mult)]
                    values += [zval + 0j] * mult
                    used |= members
            continue
        if any(s > 1 for s in decision.blocks.get(lam, [1])):
            raise ValueError(
                f"momentum_logarithm constructs theta for diagonalisable D (Theorem 1); D has "
                f"a Jordan block of size > 1 at {lam:.6g}"
            )
        _, sv, vh = np.linalg.svd(D - lam * np.eye(n))
        basis = vh[sv <= 1e-7 * n * scale].T  # absolute threshold: D - lam I may be ~0 (D = lam I)
        if basis.shape[1] != mult or mult % 2:
            raise ValueError(
                f"momentum_logarithm: eigenspace of {lam:.6g} has dimension "
                f"{basis.shape[1]} for multiplicity {mult}; D is not diagonalisable"
            )
        zval = _f_inverse(np.array([lam]), e, threshold)[0]
        for i in range(0, mult, 2):
            columns += [basis[:, i] + 1j * basis[:, i + 1], basis[:, i] - 1j * basis[:, i + 1]]
            values += [zval, np.conj(zval)]
        used |= members
    rest = np.flatnonzero(~used)
    upper = rest[eigval[rest].imag > tol]
    real_rest = rest[np.abs(eigval[rest].imag) <= tol]
    z_upper = _f_inverse(eigval[upper], e, threshold)
    z_real = _f_inverse(eigval[real_rest].real.astype(complex), e, threshold)
    for idx, zv in zip(upper, z_upper):
        partner = rest[np.argmin(np.abs(eigval[rest] - np.conj(eigval[idx])))]
        columns += [eigvec[:, idx], eigvec[:, partner]]
        values += [zv, np.conj(zv)]
    for idx, zv in zip(real_rest, z_real):
        columns.append(eigvec[:, idx].real.astype(complex))
        values.append(zv.real + 0j)
    V = np.stack(columns, axis=1)
    if V.shape != (n, n):
        raise ValueError(
            f"momentum_logarithm: could not match eigenvectors ({V.shape[1]} for n={n})"
        )
    X = V @ np.diag(values) @ np.linalg.inv(V)
    return e * X.real - np.eye(n) / (4 * e)


# ------------------------------------------------------------------------------------------------
# checks

# Series (summed at X/4^k and doubled back) vs expm, relative to max|Psi|: 5e-13 at worst over 400
# random instances with ||theta|| in [1e-2, 1e3], eps in [1e-2, 1e2] (||theta/eps|| to 1e5,
# non-normal, cond <= 1e4); 1e-9 leaves three decades for conditioning and still sees a 1e-6 error
# of the series.
PSI_TOL = 1e-9
# dopri5 at rtol 1e-10 / atol 1e-12 over t in [0, 1]: 3e-9 relative at worst for ||theta / eps|| <=
# 1e4.
PSI_ODE_TOL = 1e-7
# the ODE reference's absolute floor: x(t) starts at I and is controlled to atol = 1e-12, so a Psi
# far below 1 (eps = 0.01, theta = -30: 3.4e-22) is known to ~1e-15 absolute only (relative
# residuals up to 1e202). The ODE part is relative to max(max |Psi|, PSI_ODE_FLOOR); the series is
# held to its relative accuracy there by expm and, for 1 x 1 instances, the 50-digit closed form.
PSI_ODE_FLOOR = 1e-12 / PSI_ODE_TOL


def psi_eps_scalar_mp(theta: float, eps: float, dps: int = 50) -> float:
    """Independent reference for a scalar ``theta``: the solution ``x(1)`` of
    ``eps x'' + x' = theta x``, ``x(0) = 1``, ``x'(0) = 0`` in closed form,
    ``exp(-1/(2 eps)) (cosh s + sinh(s) / (2 eps s))`` with
    ``s = sqrt(1 + 4 eps theta) / (2 eps)`` (complex when ``theta < -1/(4 eps)``), in
    ``dps``-digit mpmath."""
    with mpmath.workdps(dps):
        t, e = mpmath.mpf(float(theta)), mpmath.mpf(float(eps))
        s = mpmath.sqrt(mpmath.mpc(1 + 4 * e * t)) / (2 * e)
        ratio = mpmath.sinh(s) / s if s != 0 else mpmath.mpf(1)
        return float(mpmath.re(mpmath.exp(-1 / (2 * e)) * (mpmath.cosh(s) + ratio / (2 * e))))


def check_psi_series(theta, eps, *, ode: bool = True) -> CheckResult:
    """Prop. 4: the series Psi_eps(theta) equals x(1) of ``eps x'' + x' = theta x``, ``x'(0) = 0``,
    from the block-matrix exponential and (``ode=True``) from :func:`dynkit.solve` (scalar or
    matrix, symmetric or not), relative to ``max |Psi|``. For 1 x 1 instances the 50-digit closed
    form :func:`psi_eps_scalar_mp` is a third, independent reference.

    Range: eps > 0 and any real theta whose Psi fits float64 (where the series overflows, a
    ValueError names theta before the references are computed: eps = 1e-3, theta = 1e4 gives Psi ~
    e^2700). The expm and mpmath parts are relative to ``max |Psi|`` however small Psi is (eps =
    1e-3, theta = -1e4: Psi = 6.6e-218); the ODE part is relative to ``max(max |Psi|, 1e-5)``
    (``PSI_ODE_FLOOR``: dopri5 at atol 1e-12 knows a Psi far below 1 to ~1e-15 absolute only) and
    costs steps in proportion to ``sqrt(||theta / eps||) + 1/eps``: ``ode=True`` is meant for
    ``||theta / eps|| <= 1e4``, eps >= 1e-3.
    """
    theta = as_square("theta", theta, context=_CTX)
    e = _eps(eps)
    with np.errstate(over="ignore", invalid="ignore"):
        series = psi_eps_series(theta, e)
    if not np.all(np.isfinite(series)):
        raise ValueError(
            f"theta too large for eps ({_CTX}): Psi_eps(theta) overflows float64 (largest |Psi| "
            f"above 1.8e308); the proposition holds there too, but float64 cannot hold the value"
        )
    exact = psi_eps(theta, e)
    scale = np.maximum(np.abs(exact).max(axis=(-1, -2)), np.finfo(float).tiny)
    batch = exact.shape[:-2]
    instances = dict(theta=np.broadcast_to(theta, exact.shape), eps=np.broadcast_to(e, batch))
    parts = [
        verdict(
            "psi_series.expm",
            np.abs(series - exact).max(axis=(-1, -2)) / scale,
            PSI_TOL,
            instances,
            "series vs block-matrix exponential (relative to max |Psi|)",
            sides={"series": series, "expm": exact},
        )
    ]
    if exact.shape[-1] == 1:
        flat_t, flat_e = instances["theta"].reshape(-1), np.broadcast_to(e, batch).reshape(-1)
        mp = np.array([psi_eps_scalar_mp(t, x) for t, x in zip(flat_t, flat_e)]).reshape(batch)
        parts.append(
            verdict(
                "psi_series.mpmath",
                np.abs(series[..., 0, 0] - mp) / np.maximum(np.abs(mp), 1e-300),
                PSI_TOL,
                instances,
                "series vs 50-digit closed form x(1) (relative)",
                sides={"series": series[..., 0, 0], "mpmath": mp},
            )
        )
    if ode:
        sol = psi_eps_ode(theta, e)
        parts.append(
            verdict(
                "psi_series.ode",
                np.abs(series - sol).max(axis=(-1, -2)) / np.maximum(scale, PSI_ODE_FLOOR),
                PSI_ODE_TOL,
                instances,
                f"series vs dk.solve(dopri5) of eps x'' + x' = theta x (relative to max(|Psi|, "
                f"{PSI_ODE_FLOOR:g}), the ODE's absolute floor)",
                sides={"series": series, "dk.solve": sol},
            )
        )
    return combine("psi_series", parts)


def check_lambda_eps(eps, *, dps: int = 40) -> CheckResult:
    """Theorem 1's ``lambda_eps``: (i) float value = independent 40-digit mpmath value (relative
    1e-13); (ii) it is the global minimum: a 10x finer offset grid of G_eps never goes below it;
    (iii) the range ``f_eps(R) = [lambda_eps, inf)``: f_eps on a wide real grid stays >= lambda_eps,
    attains it, and grows past ``1/lambda``-sized targets; (iv) across the given eps (sorted),
    lambda_eps is non-increasing; (v) the limits: ``lambda_eps -> 0`` as eps -> 0 and ``-> -1`` as
    eps -> inf (values at eps = 1e-3 and 1e4).

    Range: every eps > 0. All five parts are relative, so they are computed on the scaled
    quantities ``exp(1/(2 eps)) lambda_eps`` and ``log |f_eps|``: for eps below ~7.1e-4, where
    lambda_eps itself underflows float64 (:func:`lambda_eps` raises there), the check still
    measures the float64 minimum of G_eps against mpmath (it reported VIOLATED at eps = 1e-4 from
    an underflowed -0.0)."""
    e = np.atleast_1d(_eps(eps)).reshape(-1)
    lam, alpha = _lambda_eps_with_argmin(e)
    c = 1 / (2 * e)
    # exp(c) lambda_eps: from the float value where it is a normal float (so a wrong float value is
    # seen), else from the scaled minimum (the float value is then 0 or subnormal)
    scaled = _scaled_min_g(e)[0]
    normal = np.abs(lam) >= _LAMBDA_FLOOR
    with mpmath.workdps(30):
        from_float = np.array(
            [float(mpmath.mpf(float(v)) * mpmath.exp(mpmath.mpf(float(x)))) for v, x in zip(lam, c)]
        )
    scaled = np.where(normal, from_float, scaled)
    with mpmath.workdps(dps + 10):
        mp = np.array(
            [float(lambda_eps_mp(x, dps) * mpmath.exp(1 / (2 * mpmath.mpf(float(x))))) for x in e]
        )
    rel_mp = np.abs(scaled - mp) / np.abs(mp)
    u = (np.arange(1, 10001) + 0.37) / 10000  # offset from the search grid, 2.5x finer
    span = np.maximum(8 * np.pi, 4 * alpha)
    fine = _g(span[:, None] * u, c[:, None])
    below = np.maximum(scaled - fine.min(axis=1), 0) / np.abs(scaled)
    # range on the real line: x = -alpha^2 side is G, x >= 0 side is increasing and unbounded, in
    # log form: log f_eps(x) = -c + log(cosh w + c sinh(w)/w), w = sqrt(x) up to c + 20 (f_eps >
    # e^19 there)
    w = (c[:, None] + 20) * np.linspace(0, 1, 2001)
    log_cosh = w + np.log1p(np.exp(-2 * w)) - np.log(2)
    log_sinhc = np.where(
        w > 1e-8,
        w + np.log1p(-np.exp(-2 * np.maximum(w, 1e-8))) - np.log(2) - np.log(np.maximum(w, 1e-8)),
        0.0,
    )
    log_f = -c[:, None] + np.logaddexp(log_cosh, np.log(c)[:, None] + log_sinhc)
    # f_eps >= 0 > lambda_eps on x >= 0 (cosh, sinh(w)/w > 0): the range part asks for the growth
    # past 1e8
    range_gap = np.maximum(np.log(1e8) - log_f[:, -1], 0)
    order = np.argsort(e)
    log_abs = np.log(np.abs(scaled)) - c  # log |lambda_eps|, non-decreasing in eps
    increases = np.maximum(np.expm1(log_abs[order[:-1]] - log_abs[order[1:]]), 0)
    monotone = np.zeros_like(e)
    monotone[order[1:]] = increases
    # the limits: lambda_eps -> 0 as eps -> 0 and -> -1 as eps -> inf. For eps = 1e-3 the value is
    # ~ -e^{-500} * 108 (far below 1e-12); for eps = 1e4, -1 - lambda is ~ 1/(2 eps) = 5e-5.
    lam_small, lam_large = lambda_eps(1e-3), lambda_eps(1e4)
    limit_gap = max(abs(lam_small) / 1e-12, abs(lam_large + 1) / 1e-4) - 1
    limits = np.full(e.shape, max(limit_gap, 0.0))
    instances = dict(eps=e)
    return combine(
        "lambda_eps",
        [
            verdict(
                "lambda_eps.limits",
                limits,
                0.0,
                instances,
                f"|lambda(1e-3)| <= 1e-12 and |lambda(1e4) + 1| <= 1e-4 (got {lam_small:.3g}, "
                f"{lam_large + 1:.3g}); excess",
                small=lam_small,
                large=lam_large,
            ),
            verdict(
                "lambda_eps.mpmath",
                rel_mp,
                1e-13,
                instances,
                f"float64 vs {dps}-digit mpmath, exp(1/(2 eps)) lambda_eps (relative)",
                sides={"float64": scaled, "mpmath": mp},
            ),
            verdict(
                "lambda_eps.global_min",
                below,
                1e-12,
                instances,
                "finer grid of G_eps below lambda_eps (relative)",
            ),
            verdict(
                "lambda_eps.range",
                range_gap,
                1e-12,
                instances,
                "f_eps(R) = [lambda_eps, inf) on a grid (log)",
            ),
            verdict(
                "lambda_eps.monotone",
                monotone,
                1e-12,
                instances,
                "lambda_eps non-increasing in eps (relative increase)",
            ),
        ],
    )


def check_momentum_logarithm(D, eps) -> CheckResult:
    """Theorems 1/2 (sufficiency): for representable D, :func:`momentum_logarithm` returns a real
    theta with ``Psi_eps(theta) = D`` (checked with the block exponential). Tolerance scales with
    the eigenvector condition number of D (the construction's forward error), between 1e-9 and
    1e-6."""
    D = as_square("D", D, context=_CTX)
    e = np.broadcast_to(_eps(eps), D.shape[:-2])
    flatD = D.reshape((-1,) + D.shape[-2:])
    flate = e.reshape(-1)
    residual = np.empty(len(flatD))
    tolerance = np.empty(len(flatD))
    thetas = np.empty_like(flatD)
    for i, (Di, ei) in enumerate(zip(flatD, flate)):
        theta = momentum_logarithm(Di, ei)
        thetas[i] = theta
        residual[i] = np.abs(psi_eps(theta, ei) - Di).max() / (1 + np.abs(Di).max())
        # forward error grows with the conditioning of the eigenvector basis (infinite for Jordan
        # blocks, whose chains are computed separately): 1e-11 cond, clipped to [1e-9, 1e-6]
        tolerance[i] = np.clip(1e-11 * np.linalg.cond(np.linalg.eig(Di)[1]), 1e-9, 1e-6)
    tol = float(max(1e-9, np.max(tolerance)))
    instances = dict(D=D, eps=e, theta=thetas.reshape(D.shape))
    return verdict(
        "momentum_logarithm",
        residual.reshape(D.shape[:-2]),
        tol,
        instances,
        "||Psi_eps(theta) - D|| / (1 + ||D||) for theta = momentum_logarithm(D, eps)",
    )


def check_representability(D, eps, expected) -> CheckResult:
    """``is_representable(D, eps)`` agrees with the known answer ``expected`` (bool per
    instance), e.g. D built with a chosen multiset of eigenvalues below lambda_eps; residual 1
    per disagreement."""
    D = as_square("D", D, context=_CTX)
    batch = D.shape[:-2]
    e = np.broadcast_to(_eps(eps, allow_zero=True), batch)
    expected = np.asarray(expected)
    if expected.dtype.kind not in "bi" or np.any((expected != 0) & (expected != 1)):
        raise ValueError(
            f"expected must be booleans (the known answer per instance) ({_CTX}); got {expected!r}"[
                :160
            ]
        )
    try:
        exp = np.broadcast_to(expected.astype(bool), batch)
    except ValueError:
        raise ValueError(
            f"expected must broadcast to D's batch shape {batch} ({_CTX}); got {expected.shape}"
        ) from None
    got = np.array(
        [
            is_representable(Di, ei).representable
            for Di, ei in zip(D.reshape((-1,) + D.shape[-2:]), e.reshape(-1))
        ],
        dtype=object,
    ).reshape(batch)
    wrong = np.array(
        [g is None or bool(g) != bool(x) for g, x in zip(got.reshape(-1), exp.reshape(-1))],
        dtype=float,
    )
    return verdict(
        "representability",
        wrong.reshape(batch),
        0.0,
        dict(D=D, eps=e, expected=exp),
        "is_representable disagrees with the known answer (1 = disagreement)",
    )


# ------------------------------------------------------------------------------------------------
# appendix A.4: Lemmas 1-2, the growth of the representable set, Fig. 4's caption


def _f_eps_prime(z, c):
    """``f_eps'(z)`` up to the factor ``exp(-c)``: ``F'(w) / (2 w)``, ``w = sqrt(z)``,
    ``F(w) = cosh w + c sinh(w)/w`` (even in w, so entire in z); the series ``1/6 + c/60 + ...``
    near 0."""
    z = np.asarray(z, dtype=complex)
    w = np.sqrt(z)
    small = np.abs(w) < 1e-3
    ws = np.where(small, 1.0, w)
    big = (np.sinh(ws) + c * (ws * np.cosh(ws) - np.sinh(ws)) / ws**2) / (2 * ws)
    series = (
        0.5 + c / 6 + z * (1 / 24 + c / 120)
    )  # d/dz of sum (1/(2n)! + c/(2n+1)!) z^n, two terms
    return np.where(small, series, big)


def check_f_eps_surjective(w, eps, *, f=None) -> CheckResult:
    """Lemma 1 (Momentum ResNets, A.4.1): for eps > 0, ``f_eps`` is surjective on C. For each target
    ``w``, Newton (with numerical derivative) from a grid of starts looks for ``z`` with
    ``f(z) = w``; the residual is ``min |f(z) - w| / (1 + |w|)``, re-evaluated at 30 digits with
    mpmath for the default f, over the starts whose last Newton step is below
    ``NEWTON_STEP_TOL (1 + |z|)`` (a second part: a residual that only decays as Newton runs off to
    ``|z| -> oo`` is no root). ``f`` replaces f_eps (a map that misses a value, e.g. ``exp`` or
    ``1/(1 + z^2)`` at 0, plants a violation).

    Range: eps > 0 (checked for eps in [0.1, 100]), w any finite complex number (``|w|`` up to
    1e3 checked)."""
    context = _CTX + " Lemma 1"
    e = float(_eps(eps))
    if f is not None:
        check_callable("f", f, context=_CTX + " Lemma 1")
    w = np.asarray(w)
    if w.dtype.kind not in "biufc" or not np.all(np.isfinite(w)):
        raise ValueError(f"w must be finite complex numbers ({context}); got {w!r}"[:200])
    w = w.astype(complex).reshape(-1)
    fn = (lambda z: f_eps(z, e)) if f is None else f
    starts = np.array(
        [
            r * np.exp(1j * t)
            for r in (0.5, 3.0, 20.0, 100.0)
            for t in np.linspace(0, 2 * np.pi, 9)[:-1]
        ]
    )
    c = 1 / (2 * e)
    guess = np.arccosh(np.clip(np.abs(w), 1, None) * np.exp(c) * np.exp(1j * np.angle(w))) ** 2
    z = np.concatenate([guess[:, None], np.broadcast_to(starts, (w.size, starts.size))], axis=1)
    with np.errstate(all="ignore"):
        for _ in range(80):
            h = 1e-7 * (1 + np.abs(z))
            val = fn(z) - w[:, None]
            deriv = (fn(z + h) - fn(z - h)) / (2 * h)
            step = val / np.where(deriv == 0, 1, deriv)
            step = np.where(np.isfinite(step), step, 0)
            z = z - step * np.minimum(1, 10 * (1 + np.abs(z)) / np.maximum(np.abs(step), 1e-300))
        err = np.abs(fn(z) - w[:, None])
        # a root, not a run-off: Newton's last step must be small against |z| (at a simple root it
        # falls quadratically; where |f - w| only decays as |z| -> oo, as exp at w = 0 or 1/(1 +
        # z^2) at w = 0, it stays of the size of z's own scale: step 1 for exp, |z|/2 for 1/(1 +
        # z^2))
        h = 1e-7 * (1 + np.abs(z))
        slope = np.abs((fn(z + h) - fn(z - h)) / (2 * h))
        newton = np.where(slope > 0, err / np.where(slope > 0, slope, 1), np.inf) / (1 + np.abs(z))
    err = np.where(np.isfinite(err) & np.isfinite(z), err, np.inf)
    newton = np.where(np.isfinite(newton), newton, np.inf)
    certified = newton <= NEWTON_STEP_TOL
    best = np.where(certified, err, np.inf).argmin(axis=1)
    best = np.where(certified.any(axis=1), best, err.argmin(axis=1))
    zb = z[np.arange(w.size), best]
    step_b = newton[np.arange(w.size), best]
    if f is None:  # independent re-evaluation at 30 digits
        with mpmath.workdps(30):
            cc = 1 / (2 * mpmath.mpf(e))

            def fm(zz):
                s = mpmath.sqrt(mpmath.mpc(zz))
                sinhc = mpmath.sinh(s) / s if s != 0 else mpmath.mpf(1)
                return mpmath.exp(-cc) * (mpmath.cosh(s) + cc * sinhc)

            resid = np.array(
                [float(abs(fm(complex(zz)) - mpmath.mpc(complex(ww)))) for zz, ww in zip(zb, w)]
            )
    else:
        resid = err[np.arange(w.size), best]
    resid = resid / (1 + np.abs(w))
    instances = dict(w=w, eps=np.full(w.size, e), z=zb)
    return combine(
        "f_eps_surjective",
        [
            verdict(
                "f_eps_surjective.value",
                resid,
                1e-9,
                instances,
                "min over Newton starts of |f_eps(z) - w| / (1 + |w|)",
                sides={"f_eps(z)": w + resid * (1 + np.abs(w)), "w": w},
            ),
            verdict(
                "f_eps_surjective.root",
                step_b,
                NEWTON_STEP_TOL,
                instances,
                "Newton's step |f(z) - w| / |f'(z)| / (1 + |z|) at that z (a root, not |z| -> oo)",
                sides={"|z|": np.abs(zb), "Newton step": step_b},
            ),
        ],
    )


NEWTON_STEP_TOL = 1e-6
"""Largest Newton step, relative to ``1 + |z|``, at which a zero of ``f - w`` counts as found (at
a simple root of f_eps the step is ~1e-12 and below; a run-off to infinity keeps it of order 1)."""


def _winding(values: np.ndarray) -> tuple[float, float]:
    """Winding number of a closed sampled curve around 0, and the largest angle step (must be
    small)."""
    steps = np.angle(np.roll(values, -1) / values)
    return float(np.sum(steps) / (2 * np.pi)), float(np.max(np.abs(steps)))


def check_f_eps_prime_zeros_real(eps, k, x_right, height, *, fprime=None) -> CheckResult:
    """Lemma 2 (A.4.3): ``f_eps'(z) != 0`` for ``z`` in C - R. In the rectangle
    ``[-((k + 1/2) pi)**2, x_right] x [-height, height]`` the number of zeros of f_eps' (argument
    principle: the winding number of f_eps' along the boundary) must equal the number of its real
    zeros there (sign changes on the real segment). Residual: the difference (an integer; 0
    holds). ``fprime`` replaces f_eps' (a factor ``(z - z0)(z - conj z0)`` with z0 inside plants
    non-real zeros)."""
    context = _CTX + " Lemma 2"
    if fprime is not None:
        check_callable("fprime", fprime, context=context)
    e = np.atleast_1d(_eps(eps)).reshape(-1)
    kk = np.atleast_1d(as_scalar_batch("k", k, context=context, low=0)).reshape(-1)
    xr = np.atleast_1d(
        as_scalar_batch("x_right", x_right, context=context, low=0.0, low_open=True)
    ).reshape(-1)
    hh = np.atleast_1d(
        as_scalar_batch("height", height, context=context, low=0.0, low_open=True)
    ).reshape(-1)
    e, kk, xr, hh = np.broadcast_arrays(e, kk, xr, hh)
    diff, real_counts, box_counts = np.zeros(e.size), np.zeros(e.size), np.zeros(e.size)
    for i in range(e.size):
        c = 1 / (2 * e[i])
        fp = (lambda z: _f_eps_prime(z, c)) if fprime is None else fprime
        x_left = -(((kk[i] + 0.5) * np.pi) ** 2)
        for m in (4000, 16000, 64000):
            s = np.linspace(0, 1, m, endpoint=False)
            path = np.concatenate(
                [
                    x_left + (xr[i] - x_left) * s - 1j * hh[i],
                    xr[i] + 1j * hh[i] * (2 * s - 1),
                    xr[i] - (xr[i] - x_left) * s + 1j * hh[i],
                    x_left - 1j * hh[i] * (2 * s - 1),
                ]
            )
            count, worst = _winding(fp(path))
            if worst < 0.3:
                break
        alpha = np.linspace(1e-9, (kk[i] + 0.5) * np.pi, 20001)  # z = -alpha^2 covers [x_left, 0)
        vals = np.concatenate([fp(-(alpha[::-1] ** 2)).real, fp(np.linspace(0, xr[i], 2001)).real])
        real = np.count_nonzero(np.sign(vals[1:]) * np.sign(vals[:-1]) < 0)
        box_counts[i], real_counts[i] = round(count), real
        diff[i] = abs(round(count) - real) + (worst >= 0.3)
    return verdict(
        "f_eps_prime_zeros",
        diff,
        0.0,
        dict(eps=e, k=kk, x_right=xr, height=hh),
        "zeros of f_eps' in the box (winding number) minus its real zeros there",
        sides={"zeros in box": box_counts, "real zeros": real_counts},
    )


def check_representable_set_grows(eps1, eps2, *, dps: int = 40) -> CheckResult:
    """Theorem 1's consequence (Momentum ResNets, Sect. 4.2): the set of representable linear
    maps is strictly increasing with eps. By Theorem 1 it is decided by lambda_eps, so for
    ``eps1 < eps2`` the claim is ``lambda_eps2 < lambda_eps1`` (then ``diag(x)``,
    ``lambda_eps2 <= x < lambda_eps1``, is representable at eps2 only). Checked with the
    independent mpmath value (:func:`lambda_eps_mp`) and, where the gap exceeds 1e-6, by
    constructing theta for the witness at eps2 (``Psi_eps2(theta) = x``). Residual: 1 where
    ``lambda_eps2 >= lambda_eps1`` or the witness fails (passing ``eps2 <= eps1`` plants a
    violation)."""
    context = _CTX + " Theorem 1, growth in eps"
    e1, e2 = np.broadcast_arrays(
        np.atleast_1d(
            as_scalar_batch("eps1", eps1, context=context, low=0.0, low_open=True)
        ).reshape(-1),
        np.atleast_1d(
            as_scalar_batch("eps2", eps2, context=context, low=0.0, low_open=True)
        ).reshape(-1),
    )
    lam1 = np.array([lambda_eps_mp(x, dps) for x in e1], dtype=object)
    lam2 = np.array([lambda_eps_mp(x, dps) for x in e2], dtype=object)
    bad = np.array([float(b >= a) for a, b in zip(lam1, lam2)])
    gap = np.array([float(a - b) for a, b in zip(lam1, lam2)])
    for i in np.flatnonzero((bad == 0) & (gap > 1e-6)):
        x = float((lam1[i] + lam2[i]) / 2)
        theta = momentum_logarithm(np.array([[x]]), e2[i])
        if abs(psi_eps(theta, e2[i])[0, 0] - x) > 1e-9 * (1 + abs(x)):
            bad[i] = 1.0
    return verdict(
        "representable_set_grows",
        bad,
        0.0,
        dict(eps1=e1, eps2=e2),
        "lambda_eps2 < lambda_eps1 for eps1 < eps2 (1 = not strictly smaller)",
        sides={
            "lambda_eps1": np.array([float(v) for v in lam1]),
            "lambda_eps2": np.array([float(v) for v in lam2]),
        },
    )


def check_lambda_eps_closeness(
    eps,
    *,
    near_minus_one_from: float = 2.0,
    near_zero_below: float = 0.1,
    closeness: float = 0.1,
    dps: int = 40,
) -> CheckResult:
    """Fig. 4's caption (Momentum ResNets): "lambda_eps is non increasing, stays close to 0 when
    eps << 1 and close to -1 when eps >= 2". "Close" is read as within ``closeness`` (0.1, a
    tenth of the range [-1, 0]) and "eps << 1" as eps <= ``near_zero_below``. Residual per eps:
    the excess of ``|lambda_eps + 1|`` (eps >= ``near_minus_one_from``) or ``|lambda_eps|`` (eps
    <= ``near_zero_below``) over ``closeness``, with lambda_eps from the independent mpmath
    computation. The caption sets no threshold (the registry's row is ``undecided``: informal
    wording) and reads "close" as nearer to -1 than to 0 (``closeness=0.5``), which holds from
    eps = 2 on (lambda_2 = -0.781); within 0.1 of -1 it holds only from eps ~ 5 on (lambda_5 =
    -0.9053)."""
    context = _CTX + " Fig. 4 caption"
    e = np.atleast_1d(_eps(eps)).reshape(-1)
    for name, value in (
        ("near_minus_one_from", near_minus_one_from),
        ("near_zero_below", near_zero_below),
        ("closeness", closeness),
    ):
        as_scalar_batch(name, value, context=context, low=0.0, low_open=True)
    lam = np.array([float(lambda_eps_mp(x, dps)) for x in e])
    target = np.where(e >= near_minus_one_from, -1.0, np.where(e <= near_zero_below, 0.0, np.nan))
    excess = np.where(
        np.isnan(target), 0.0, np.maximum(np.abs(lam - np.nan_to_num(target)) - closeness, 0)
    )
    return verdict(
        "lambda_eps_caption",
        excess,
        0.0,
        dict(eps=e),
        f"|lambda_eps - (-1 for eps >= {near_minus_one_from:g}, 0 for eps <= {near_zero_below:g})| "
        f"beyond {closeness:g}",
        sides={"lambda_eps": lam, "claimed value": target},
    )


def check_threshold_boundary(eps, V, *, shift: float = 0.0) -> CheckResult:
    """Theorem 2 at the boundary ``lambda = lambda_eps``, which it leaves open (necessity is stated
    for ``lambda < lambda_eps``, sufficiency asks even Jordan blocks for ``lambda <= lambda_eps``).
    What dynkit finds: ``f_eps`` has the real critical point ``z* = -alpha*^2`` with
    ``f_eps(z*) = lambda_eps``, ``f'_eps(z*) = 0``, ``f''_eps(z*) != 0``, so
    ``theta = eps X - I/(4 eps)`` with ``X = V J_3(z*) V^-1`` (a size-3 Jordan block) gives
    ``Psi_eps(theta) = f_eps(X)`` with Jordan blocks of sizes {2, 1} at lambda_eps: one block of
    size 2 (an odd number) is representable next to a 1 x 1 block. (A lone 2 x 2 block at lambda_eps
    is not: a real 2 x 2 preimage would need a real eigenvalue z with f_eps(z) = lambda_eps and
    f'_eps(z) != 0, and there is none.)

    Residuals per instance (``V``: (..., 3, 3) invertible): ``|eigenvalues of Psi - lambda_eps|``
    (relative), ``sigma_2(N) / sigma_1(N)`` (N = Psi - lambda_eps I has rank 1) and
    ``||N^2|| / ||N||^2`` (N is nilpotent of index 2: blocks {2, 1}). ``shift`` moves z off z* (a
    planted violation: one block of size 3 elsewhere)."""
    context = _CTX + " Theorem 2 at lambda_eps"
    e = np.atleast_1d(_eps(eps)).reshape(-1)
    V = as_square("V", V, context=context)
    if V.shape[-1] != 3:
        raise ValueError(
            f"V must be (..., 3, 3) (a basis for the 3 x 3 Jordan block) ({context}); got {V.shape}"
        )
    V = np.broadcast_to(V, e.shape + (3, 3))
    shift = float(as_scalar_batch("shift", shift, context=context))
    res_eig, res_rank, res_nil, lams = (np.empty(e.shape) for _ in range(4))
    for i, (x, Vi) in enumerate(zip(e, V)):
        lam, alpha = _lambda_scalar(float(x))
        z = -(alpha**2) + shift
        X = Vi @ (z * np.eye(3) + np.diag([1.0, 1.0], 1)) @ np.linalg.inv(Vi)
        psi = psi_eps(x * X - np.eye(3) / (4 * x), x)
        N = psi - lam * np.eye(3)
        sv = np.linalg.svd(N, compute_uv=False)
        res_eig[i] = np.abs(np.linalg.eigvals(psi) - lam).max() / (1 + abs(lam))
        res_rank[i] = sv[1] / max(sv[0], 1e-300)
        res_nil[i] = np.linalg.norm(N @ N, 2) / max(sv[0] ** 2, 1e-300)
        lams[i] = lam
    instances = dict(eps=e, V=V)
    # a double/triple eigenvalue: computed eigenvalues spread by ~u^(1/2); 1e-6 leaves room for
    # cond(V) <= 1e2
    return combine(
        "threshold_boundary",
        [
            verdict(
                "threshold_boundary.eigenvalues",
                res_eig,
                1e-6,
                instances,
                "|Sp(Psi) - lambda_eps| (relative)",
                sides={"lambda_eps": lams, "max |Sp(Psi) - lambda_eps|": res_eig},
            ),
            verdict(
                "threshold_boundary.rank_one",
                res_rank,
                1e-8,
                instances,
                "sigma_2 / sigma_1 of Psi - lambda_eps I",
            ),
            verdict(
                "threshold_boundary.nilpotent",
                res_nil,
                1e-8,
                instances,
                "||N^2|| / ||N||^2, N = Psi - lambda_eps I",
            ),
        ],
    )


# ------------------------------------------------------------------------------------------------
# consequences of Theorem 1 (Sect. 4.2) and the first-order range (Culver; Andrica & Rohan)


def _logarithm_residual(D: np.ndarray, e: float) -> float:
    """``||Psi_eps(theta) - D|| / (1 + ||D||)`` for theta = momentum_logarithm(D, eps) (block
    expm), inf when D is not representable (momentum_logarithm refuses it)."""
    try:
        theta = momentum_logarithm(D, e)
    except ValueError:
        return np.inf
    return float(np.abs(psi_eps(theta, e) - D).max() / max(np.abs(D).max(), np.finfo(float).tiny))


def check_representable_up_to_scale(D, eps, *, alpha=None) -> CheckResult:
    """Momentum ResNets Sect. 4.3 after Theorem 1: "one can learn any mapping up to scale using the
    ODE (7): if D is diagonalizable in C, there exists alpha_eps > 0 such that for all lambda in
    Sp(alpha_eps D), lambda > lambda_eps" and alpha_eps D is represented. Checked with
    ``alpha_eps = |lambda_eps| / (2 rho(D))`` (every eigenvalue of alpha D inside the disk of radius
    ``|lambda_eps| / 2``): (i) the real eigenvalues of alpha D exceed lambda_eps (margin relative to
    ``|lambda_eps|``); (ii) momentum_logarithm(alpha D) gives a real theta with Psi_eps(theta) =
    alpha D (block exponential, relative to ``max |alpha D|``: 1e-8 x cond of the eigenvectors).

    Range: real n x n D != 0 with cond(eigenvectors) <= 1e4, eps in [0.1, 100] (for smaller eps
    alpha_eps D is tiny, about ``|lambda_eps|``, and the block-expm reference is accurate only to
    ~1e-16 absolute). ``alpha`` overrides alpha_eps (a large alpha on a D with a lone negative
    eigenvalue plants a violation)."""
    D = as_square("D", D, context=_CTX + ", up to scale")
    e = np.broadcast_to(_eps(eps), D.shape[:-2])
    flatD, flate = D.reshape((-1,) + D.shape[-2:]), e.reshape(-1)
    margin, construct, tol = np.empty(len(flatD)), np.empty(len(flatD)), np.empty(len(flatD))
    alphas = np.empty(len(flatD))
    for i, (Di, ei) in enumerate(zip(flatD, flate)):
        w, V = np.linalg.eig(Di)
        rho = np.abs(w).max()
        if rho == 0:
            raise ValueError(
                f"D must not be nilpotent ({_CTX}, up to scale): its scale is arbitrary"
            )
        lam = lambda_eps(float(ei))
        a = (
            abs(lam) / (2 * rho)
            if alpha is None
            else float(as_scalar_batch("alpha", alpha, context=_CTX, low=0.0, low_open=True))
        )
        alphas[i] = a
        real = (a * w)[np.abs(w.imag) <= 1e-9 * rho].real
        margin[i] = (
            max(0.0, float((lam - real).max(initial=-np.inf)) / abs(lam)) if real.size else 0.0
        )
        construct[i] = _logarithm_residual(a * Di, float(ei))
        tol[i] = np.clip(1e-8 * np.linalg.cond(V), 1e-8, 1e-5)
    shape = D.shape[:-2]
    instances = dict(D=D, eps=e)
    return combine(
        "representable_up_to_scale",
        [
            verdict(
                "up_to_scale.spectrum",
                margin.reshape(shape),
                0.0,
                instances,
                "real eigenvalues of alpha D below lambda_eps (relative)",
                alpha=alphas,
            ),
            verdict(
                "up_to_scale.construction",
                (construct / tol).reshape(shape),
                1.0,
                instances,
                "max |Psi_eps(momentum_logarithm(alpha D)) - alpha D| / max |alpha D| over "
                "1e-8 cond(V)",
                sides={
                    "alpha_eps": alphas.reshape(shape),
                    "relative residual": construct.reshape(shape),
                },
            ),
        ],
    )


def check_scaling_representable(lam, *, eps_max: float = 1e8) -> CheckResult:
    """Momentum ResNets Sect. 4.2 (after Prop. 3; App. B.4): "even with the restrictive initial
    condition v_0 = 0, x -> lambda x for lambda > -1 can always be represented by a second-order
    model (6)". Reading: for every lambda > -1 some eps > 0 and a linear f(x) = theta x give x(1) =
    lambda x0 from (x0, 0). Constructed: the smallest eps in 1e-2 * 2^k (up to ``eps_max``) with
    lambda_eps < lambda (lambda_eps decreases to -1), theta from f_eps's inverse (momentum_logarithm
    of the 1 x 1 matrix); verified by :func:`dynkit.solve` of eps x'' + x' = theta x from (1, 0)
    (dopri5, rtol 1e-11), relative 1e-7.

    Range: lambda in (-1 + 1e-7, 1e3]. For lambda <= -1 no eps exists (lambda_eps > -1 for all
    eps): residual inf."""
    context = _CTX + ", x -> lambda x with v0 = 0"
    lam = np.atleast_1d(as_scalar_batch("lam", lam, context=context)).reshape(-1)
    eps_max = float(as_scalar_batch("eps_max", eps_max, context=context, low=1.0))
    eps_found, thetas = np.full(lam.shape, np.nan), np.zeros(lam.shape)
    for i, target in enumerate(lam):
        e = 1e-2
        while e <= eps_max and not lambda_eps(e) < target:
            e *= 2
        if e > eps_max:
            continue
        try:
            thetas[i] = momentum_logarithm(np.array([[target]]), e)[0, 0]
            eps_found[i] = e
        except ValueError:
            continue
    ok = np.isfinite(eps_found)
    e_ode = np.where(ok, eps_found, 1.0)
    y0 = np.zeros(lam.shape + (2,))
    y0[..., 0] = 1.0
    th = np.where(ok, thetas, 0.0)
    sol = solve(
        lambda t, y: np.stack([y[..., 1], (th * y[..., 0] - y[..., 1]) / e_ode], axis=-1),
        y0,
        np.array([0.0, 1.0]),
        method="dopri5",
        rtol=1e-11,
        atol=1e-13,
    )
    x1 = np.asarray(sol.ys[-1][..., 0])
    gap = np.where(ok, np.abs(x1 - lam) / np.maximum(np.abs(lam), 1e-3), np.inf)
    return verdict(
        "scaling_representable",
        gap,
        1e-7,
        dict(lam=lam),
        "|x(1) - lambda| / |lambda| for the constructed (eps, theta), dk.solve from (1, 0) "
        "(inf: no eps)",
        sides={"x(1) (dk.solve)": x1, "lambda": lam},
        eps=eps_found,
        theta=thetas,
    )


def check_first_order_range(M, *, singular_ok: bool = False) -> CheckResult:
    """Momentum ResNets Sect. 4.3: "Psi_0(R^{dxd}) = exp(R^{dxd}) = {M^2 | M in GL_d(R)}" (Andrica &
    Rohan). The inclusion exp(X) = (exp(X / 2))^2 is an identity; the check is the other one: D =
    M^2 for invertible M (the registry includes M with purely imaginary eigenvalue pairs, where D
    has negative eigenvalues in pairs) passes Culver's test (``is_representable(D, 0)``) and has a
    real logarithm, built here (eigenvectors of D's real Schur form; each pair of equal negative
    eigenvalues gets the conjugate logarithms log|l| +- i pi on a conjugate basis u +- i v of its
    eigenspace) and verified by expm(log D) = D (relative 1e-8).

    Range: real n x n diagonalisable M (n <= 12), invertible with the eigenvalues of M^2 above
    ``CLUSTER_TOL ||M^2||`` (1e-5: Culver's test reads smaller ones as 0; roughly cond(M) <=
    300); outside it a ValueError names M. ``singular_ok=True`` accepts a singular M (outside
    GL_d): M^2 is then singular and has no logarithm, which the check flags (the planted
    violation)."""
    context = _CTX + ", Psi_0 = exp = squares"
    M = as_square("M", M, context=context)
    flat = M.reshape((-1,) + M.shape[-2:])
    for i, Mi in enumerate(flat):  # refuse what is outside the range before any work
        where = f" (instance {i})" if len(flat) > 1 else ""
        if not singular_ok and np.linalg.cond(Mi) > 1e12:
            raise ValueError(
                f"M must be invertible (GL_d) ({context}); got cond {np.linalg.cond(Mi):.3g}{where}"
            )
        # a defective eigenvalue (a Jordan block) leaves the eigenvector basis singular: the
        # logarithm built from it does not exist, so such an M is outside the check's range, not a
        # counterexample
        basis = np.linalg.cond(np.linalg.eig(Mi)[1])
        if not np.isfinite(basis) or basis > 1e10:
            raise ValueError(
                f"M must be diagonalisable (the check's range; a Jordan block, e.g. [[1, 1], "
                f"[0, 1]], is "
                f"not) ({context}); got an eigenvector basis of condition number {basis:.3g}{where}"
            )
        # Culver's test (is_representable at eps = 0) reads an eigenvalue of M^2 within CLUSTER_TOL
        # ||M^2|| of 0 as 0 (rounding): such an M is beyond what the check can decide, not a
        # counterexample
        D = Mi @ Mi
        smallest = float(np.min(np.abs(np.linalg.eigvals(D))))
        if not singular_ok and smallest <= CLUSTER_TOL * _norm_scale(D):
            raise ValueError(
                f"M must be far enough from singular that M^2's eigenvalues exceed "
                f"{CLUSTER_TOL:g} ||M^2|| "
                f"(the rounding radius of Culver's test; roughly cond(M) <= 300) ({context}); got "
                f"|lambda|min = {smallest:.3g} against ||M^2|| = {_norm_scale(D):.3g}{where}"
            )
    res = np.empty(len(flat))
    for i, Mi in enumerate(flat):
        D = Mi @ Mi
        decision = is_representable(D, 0.0)
        if decision.representable is not True:
            res[i] = np.inf
            continue
        # a real logarithm of D: 2 x (a real logarithm of M where M has one; else via D's own real
        # Schur form)
        T, Z = scipy.linalg.schur(D, output="real")
        L = _real_log_quasi_triangular(T)
        logD = Z @ L @ Z.T
        res[i] = np.abs(scipy.linalg.expm(logD) - D).max() / (1 + np.abs(D).max())
    return verdict(
        "first_order_range",
        res.reshape(M.shape[:-2]),
        1e-8,
        dict(M=M),
        "M^2 passes Culver's test and expm(real log(M^2)) = M^2 (relative; inf: no real log)",
    )


def _real_log_quasi_triangular(T: np.ndarray) -> np.ndarray:
    """A real logarithm of a real quasi-triangular T: scipy's logm where no eigenvalue is real
    and negative, else from an eigendecomposition whose equal negative eigenvalues are paired
    (Culver: they come in pairs) and given the conjugate logarithms log|l| +- i pi on the
    conjugate basis u +- i v of their eigenspace (the result is real). The caller verifies expm
    of the result."""
    w = np.linalg.eigvals(T)
    if np.all((w.real > 0) | (np.abs(w.imag) > 1e-12 * (1 + np.abs(w)))):
        with (
            warnings.catch_warnings()
        ):  # logm's "may be inaccurate (err ~ 1e-13)": the caller measures expm(L) - T
            warnings.simplefilter("ignore", RuntimeWarning)
            return np.real(scipy.linalg.logm(T))
    vals, vecs = np.linalg.eig(T)
    order = np.argsort(vals.real)
    logs = np.log(vals.astype(complex))
    # give the paired negative eigenvalues conjugate logarithms: +i pi on one, -i pi on its partner
    neg = [j for j in order if vals[j].real < 0 and abs(vals[j].imag) <= 1e-9 * (1 + abs(vals[j]))]
    for a, b in zip(neg[0::2], neg[1::2]):
        logs[a] = np.log(-vals[a].real) + 1j * np.pi
        logs[b] = np.log(-vals[b].real) - 1j * np.pi
    # eigenvectors of a negative pair can be chosen real; make the pair's basis conjugate: u +- i v
    V = vecs.astype(complex)
    for a, b in zip(
        neg[0::2], neg[1::2]
    ):  # a real basis of the pair's eigenspace: T's null space at their mean
        mean = (vals[a].real + vals[b].real) / 2
        u, v = np.linalg.svd(T - mean * np.eye(T.shape[-1]))[2][-2:]
        V[:, a], V[:, b] = u + 1j * v, u - 1j * v
    return np.real(V @ np.diag(logs) @ np.linalg.inv(V))
