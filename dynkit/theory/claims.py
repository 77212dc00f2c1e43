"""The registry: each claim of the papers with its random-instance generator.

Every generator draws sizes 1-12 (where a size applies) and mixes well- and ill-conditioned instances;
instances of one size are checked in one batch. ``Claim.run(n, seed)`` returns a :class:`ClaimRow`.
"""
from __future__ import annotations

import numpy as np

from . import adjoint, attention, heavy_ball, momentum_resnet, representation, rnn, spectra
from ._core import CheckResult, Claim, ClaimTable, check_count, check_seed, combine, random_matrices, \
    split_by_size, verdict

__all__ = ["CLAIMS", "run_all"]


def _stack(claim: str, groups: list[CheckResult]) -> CheckResult:
    worst = max(groups, key=lambda g: (not g.holds, g.residual / g.tolerance if g.tolerance else g.residual))
    passed = np.concatenate([g.passed for g in groups])
    return CheckResult(claim, bool(passed.all()), worst.residual, worst.tolerance, worst.instance,
                       worst.message, np.concatenate([g.residuals for g in groups]), passed,
                       {"worst_part": worst.details.get("worst_part", worst.claim)})


def _parts(claim: str, parts: list[list[CheckResult]]) -> CheckResult:
    """Each entry of ``parts`` is one sub-check over size groups; sub-checks saw the same instances."""
    return combine(claim, [_stack(p[0].claim, p) for p in parts])


def _split(n: int, k: int) -> list[int]:
    """n instances over k sub-checks that see disjoint instances (each at least 1)."""
    base = [n // k + (i < n % k) for i in range(k)]
    return [max(b, 1) for b in base] if n >= k else [1 if i < n else 0 for i in range(k)]


# -------------------------------------------------------------------------------------------------


def _eigen_pairing(n_inst: int, rng: np.random.Generator) -> CheckResult:
    out = []
    for n, count in split_by_size(n_inst, rng):
        F = random_matrices(rng, count, n, log10_cond=6, scale=10 ** rng.uniform(-1, 1)) * \
            rng.choice([-1.0, 1.0], size=(count, 1, 1))
        J = 10 ** rng.uniform(-3, 0, size=(count, n))
        gamma = rng.uniform(0, 4, size=count)
        out.append(spectra.check_eigen_pairing(J, F, gamma, scale=-rng.uniform(0.1, 5), a=2.0))
    return _stack("eigen_pairing", out)


def _adjoint(n_inst: int, rng: np.random.Generator) -> CheckResult:
    out = []
    for n, count in split_by_size(n_inst, rng):
        if n % 2 == 0 and rng.uniform() < 0.5:  # HBNODE: K = [[0, I], [df/dh, -gamma I]] of size n
            K = adjoint.hbnode_jacobian(random_matrices(rng, count, n // 2, log10_cond=4, scale=2.0),
                                        rng.uniform(0, 2, count))
        else:  # NODE: K = df/dh
            K = random_matrices(rng, count, n, log10_cond=4, scale=2.0)
        out.append(adjoint.check_adjoint_norm(K, rng.standard_normal((count, n)), t=0.0, T=1.0))
    return _stack("adjoint_norm", out)


def _momentum_rnn(n_inst: int, rng: np.random.Generator) -> CheckResult:
    cells, jac, slope = [], [], []
    for n, count in split_by_size(n_inst, rng):
        act = rnn.ACTIVATIONS[int(rng.integers(2))]
        T, m = int(rng.integers(2, 9)), int(rng.integers(1, 6))
        U = random_matrices(rng, count, n, log10_cond=3, scale=1.5)
        W = rng.standard_normal((count, n, m)) / np.sqrt(m)
        x = rng.standard_normal((count, T, m))
        h = rng.uniform(-0.5, 0.5, (count, n))
        v0 = 0.3 * rng.standard_normal((count, n))
        mu, s = rng.uniform(0, 0.95), rng.uniform(0.1, 1.0)
        cells.append(rnn.check_momentum_rnn(U, W, x, h, v0, mu, s, activation=act))
        jac.append(rnn.check_rnn_jacobian(U, W, x, h + (0.5 if act == "sigmoid" else 0.0), activation=act))
        lo = -1.0 if act == "tanh" else 0.0
        slope.append(rnn.check_inverse_activation_slope(rng.uniform(lo, 1.0, count) * (1 - 1e-9) + 1e-12,
                                                        activation=act))
    return _parts("momentum_rnn", [cells, jac, slope])


def _spd(rng: np.random.Generator, count: int, n: int, kappa_max: float, gap: float) -> np.ndarray:
    q = np.linalg.qr(rng.standard_normal((count, n, n)))[0]
    kappa = 10 ** rng.uniform(np.log10(max(gap, 1.01) + 0.01), np.log10(kappa_max), (count, 1))
    rest = gap + (kappa - gap) * rng.uniform(0, 1, (count, n - 1))
    ev = np.concatenate([np.ones((count, 1)), rest], axis=1) * 10 ** rng.uniform(-2, 2, (count, 1))
    A = (q * ev[:, None, :]) @ np.swapaxes(q, -1, -2)
    return (A + np.swapaxes(A, -1, -2)) / 2


def _heavy_ball(n_inst: int, rng: np.random.Generator) -> CheckResult:
    n_rate, n_ratio = _split(n_inst, 2)
    rate, ratio = [], []
    for n, count in split_by_size(n_rate, rng):
        rate.append(heavy_ball.check_heavy_ball_rate(_spd(rng, count, n, 1e3, 1.0), n_steps=2000,
                                                     seed=int(rng.integers(2**31))))
    for n, count in (split_by_size(n_ratio, rng) if n_ratio else []):
        A = _spd(rng, count, n, 100.0, 2.0)
        L = np.linalg.eigvalsh(A)[:, -1]
        step = rng.uniform(0.5, 1.0, count) / L
        beta = heavy_ball.optimal_momentum(A, step) * rng.uniform(0, 0.5, count)
        ratio.append(heavy_ball.check_gradient_ratio_limit(A, beta, step, seed=int(rng.integers(2**31))))
    return combine("heavy_ball", [_stack("heavy_ball_rate", rate)] + ([_stack("gradient_ratio", ratio)]
                                                                       if ratio else []), disjoint=True)


def _attention(n_inst: int, rng: np.random.Generator) -> CheckResult:
    out = []
    for d, count in split_by_size(n_inst, rng):
        N = int(rng.integers(1, 33))
        q, k, v = (rng.standard_normal((count, N, d)) * 10 ** rng.uniform(-1, 0.5) for _ in range(3))
        out.append(attention.check_momentum_attention(q, k, v, rng.uniform(0, 0.99), rng.uniform(0.1, 2)))
    return _stack("momentum_attention", out)


def _revnet(n_inst: int, rng: np.random.Generator) -> CheckResult:
    disc, cont, dyn = [], [], []
    for n, count in split_by_size(n_inst, rng):
        A = random_matrices(rng, count, n, log10_cond=4, scale=10 ** rng.uniform(-1, 1))
        B = random_matrices(rng, count, n, log10_cond=4, scale=10 ** rng.uniform(-1, 1))
        disc.append(spectra.check_revnet_instability(A, B))
        cont.append(spectra.check_revnet_continuous(A, B))
        q = np.linalg.qr(rng.standard_normal((count, n, n)))[0]
        S = (q * rng.uniform(0.2, 1.0, (count, 1, n))) @ np.swapaxes(q, -1, -2)
        dyn.append(spectra.check_fixed_point_iterations(A, B, (S + np.swapaxes(S, -1, -2)) / 2,
                                                        rng.uniform(0, 0.9), seed=int(rng.integers(2**31))))
    return _parts("revnet_instability", [disc, cont, dyn])


def _psi(n_inst: int, rng: np.random.Generator) -> CheckResult:
    out = []
    for n, count in split_by_size(n_inst, rng):
        theta = random_matrices(rng, count, n, log10_cond=4, scale=3.0) * \
            rng.choice([-1.0, 1.0], size=(count, 1, 1))
        eps = 10 ** rng.uniform(-1, 1, count)
        out.append(representation.check_psi_series(theta, eps))
    return _stack("psi_series", out)


def _random_representable(rng: np.random.Generator, n: int, eps: float) -> tuple[np.ndarray, bool]:
    """A real n x n matrix with a known answer to Theorem 1/2: eigenvalues drawn as single reals above
    lambda_eps, complex pairs, paired reals below lambda_eps, single reals below lambda_eps (not
    representable) and, sometimes, Jordan blocks: 2 x 2 above lambda_eps (representable), 2 x 2 below
    lambda_eps (once: not representable) or two equal 2 x 2 blocks below lambda_eps (representable)."""
    lam = representation.lambda_eps(eps)
    blocks, ok, used = [], True, 0
    values = set()

    def fresh(lo, hi):
        for _ in range(100):
            x = round(rng.uniform(lo, hi), 2)
            # 0.2 apart: closer eigenvalues next to a Jordan block fall below the numerical rank
            # threshold of momentum_logarithm's Jordan chains (a documented limit, not the claim)
            if all(abs(x - y) > 0.2 for y in values):
                values.add(x)
                return x
        raise RuntimeError("could not draw a separated eigenvalue")

    while used < n:
        room = n - used
        kind = rng.choice(["above", "complex", "pair", "single", "jordan", "jordan_above", "jordan_pair"],
                          p=[.28, .22, .18, .14, .06, .06, .06])
        if kind == "jordan_pair" and room < 4:
            kind = "pair"
        if kind in ("complex", "pair", "jordan", "jordan_above") and room < 2:
            kind = "above" if rng.uniform() < 0.7 else "single"
        if kind == "above":
            blocks.append(np.array([[fresh(lam * 0.8, 3.0)]]))
            used += 1
        elif kind == "single":
            blocks.append(np.array([[fresh(3 * lam - 1, lam * 1.3)]]))
            ok, used = False, used + 1
        elif kind == "pair":
            x = fresh(3 * lam - 1, lam * 1.3)
            blocks.append(np.diag([x, x]))
            used += 2
        elif kind == "complex":
            r, phi = rng.uniform(0.3, 2.5), rng.uniform(0.3, 2.8)
            blocks.append(r * np.array([[np.cos(phi), -np.sin(phi)], [np.sin(phi), np.cos(phi)]]))
            used += 2
        elif kind == "jordan_above":
            x = fresh(lam * 0.8, 3.0)
            blocks.append(np.array([[x, 1.0], [0.0, x]]))
            used += 2
        elif kind == "jordan_pair":
            x = fresh(3 * lam - 1, lam * 1.3)
            blocks.append(np.kron(np.eye(2), np.array([[x, 1.0], [0.0, x]])))
            used += 4
        else:
            x = fresh(3 * lam - 1, lam * 1.3)
            blocks.append(np.array([[x, 1.0], [0.0, x]]))
            ok, used = False, used + 2
    D = np.zeros((n, n))
    i = 0
    for blk in blocks:
        k = blk.shape[0]
        D[i:i + k, i:i + k] = blk
        i += k
    V = random_matrices(rng, 1, n, log10_cond=1.5)[0]
    return V @ D @ np.linalg.inv(V), ok


def _representation(n_inst: int, rng: np.random.Generator) -> CheckResult:
    eps_lambda = 10 ** rng.uniform(-2, 3, n_inst)
    lam_part = representation.check_lambda_eps(eps_lambda)
    decisions, log_residual, log_tol = [], np.zeros(n_inst), 1e-7
    Ds, epss, expected, thetas = [], [], [], {}
    for i in range(n_inst):
        n = int(rng.integers(1, 9))
        eps = float(10 ** rng.uniform(np.log10(0.2), 1))
        D, ok = _random_representable(rng, n, eps)
        Ds.append(D), epss.append(eps), expected.append(ok)
        got = representation.is_representable(D, eps).representable
        decisions.append(float(got is None or got != ok))
        if ok and got:
            thetas.setdefault(n, []).append((i, representation.momentum_logarithm(D, eps)))
    for n, items in thetas.items():  # one batched expm per size
        idx = [i for i, _ in items]
        psi = representation.psi_eps(np.stack([t for _, t in items]), np.array(epss)[idx])
        target = np.stack([Ds[i] for i in idx])
        log_residual[idx] = np.abs(psi - target).max(axis=(-1, -2)) / (1 + np.abs(target).max(axis=(-1, -2)))
    inst = dict(eps=np.array(epss), expected=np.array(expected))
    return combine("representation", [
        lam_part,
        verdict("representation.decision", np.array(decisions), 0.0, inst,
                "is_representable vs the known answer (1 = disagreement)"),
        verdict("representation.logarithm", log_residual, log_tol, inst,
                "||Psi_eps(momentum_logarithm(D)) - D|| / (1 + ||D||)"),
    ])


def _limits(n_inst: int, rng: np.random.Generator) -> CheckResult:
    counts = _split(n_inst, 6)
    parts: list[list[CheckResult]] = [[] for _ in range(6)]

    def net(count, n):
        W = random_matrices(rng, count, n, log10_cond=2, scale=1.5)
        return W, rng.standard_normal((count, n)), rng.standard_normal((count, n))

    for n, count in (split_by_size(counts[0], rng, range(1, 13, 3)) if counts[0] else []):
        W, b, x0 = net(count, n)
        parts[0].append(momentum_resnet.check_small_eps_limit(W, b, x0, rng.standard_normal((count, n))))
    for n, count in (split_by_size(counts[1], rng, range(1, 13, 3)) if counts[1] else []):
        W, b, x0 = net(count, n)
        parts[1].append(momentum_resnet.check_large_eps_limit(W, b, x0, rng.standard_normal((count, n))))
    for n, count in (split_by_size(counts[2], rng, range(1, 13, 3)) if counts[2] else []):
        W, b, x0 = net(count, n)
        parts[2].append(momentum_resnet.check_first_order_embedding(W, b, x0, rng.uniform(0.05, 2)))
    for n, count in (split_by_size(counts[3], rng) if counts[3] else []):
        M = random_matrices(rng, 1, n, log10_cond=2)[0]
        parts[3].append(momentum_resnet.check_free_velocity(
            lambda x: np.sin(3 * x) @ M.T - x ** 2, rng.standard_normal((count, n))))
    if counts[4]:
        parts[4].append(momentum_resnet.check_prop8_closed_form(rng.standard_normal((counts[4], 3)),
                                                                10 ** rng.uniform(-1, 1.5, counts[4])))
    if counts[5]:
        parts[5].append(momentum_resnet.check_negative_scaling_obstruction(
            -1 - rng.exponential(1.0, counts[5]), 10 ** rng.uniform(-1, 1.5, counts[5]), n_cubic=200,
            seed=int(rng.integers(2**31))))
    return combine("momentum_limits", [_stack(p[0].claim, p) for p in parts if p], disjoint=True)


def _network(n_inst: int, rng: np.random.Generator) -> CheckResult:
    inv, mem, bp = [], [], []
    for n, count in split_by_size(n_inst, rng):
        depth = int(rng.integers(5, 60))
        gamma = float(rng.choice([0.5, 0.75, 0.9, 0.95, 0.99]))
        W = rng.standard_normal((depth, count, n, n)) / np.sqrt(n)
        b = rng.standard_normal((depth, count, n))
        x0, v0 = rng.standard_normal((count, n)), rng.standard_normal((count, n))
        inv.append(momentum_resnet.check_inversion(x0, v0, W, b, gamma))
        mem.append(momentum_resnet.check_memory_bits(x0, v0, W, b, gamma))
        bp.append(momentum_resnet.check_backprop_formula(x0, v0, W, b, gamma, seed=int(rng.integers(2**31))))
    return _parts("momentum_network", [inv, mem, bp])


_SPECS = [
    ("eigen_pairing", "review (000)", "Prop. 4, (59)-(63)",
     "The 2n eigenvalues of H = [[0, J], [F, -gamma I]] (and of -M = -(t-T)H) are the roots of "
     "lam(lam+gamma) = mu, mu in Sp(JF): n pairs summing to -gamma; with gamma <= 2a each pair has Re >= -a.",
     "J diagonal with entries in (0, 1], F real, gamma >= 0.", _eigen_pairing),
    ("adjoint_norm", "review (000)", "(54)-(58)",
     "For a linear NODE/HBNODE field the adjoint norm from exp(-int_T^t K) equals the norm from solving "
     "the adjoint ODE backward with dk.solve.",
     "Constant (or commuting) Jacobian K along the trajectory; t < T.", _adjoint),
    ("momentum_rnn", "review (000) / MomentumRNN (002)", "(11), (13)-(15)",
     "The rewritten cell (14) equals the momentum cell (11); (13) and each factor of (15) equal autograd "
     "Jacobians; (sigma^-1)' >= 1 on the range of sigmoid and tanh.",
     "sigma in {tanh, sigmoid}, mu >= 0, s > 0; (15) factors at fixed h_{k-1}.", _momentum_rnn),
    ("heavy_ball", "Momentum Transformer (001)", "Thm. 2, Prop. 3, (17)-(18)",
     "With step <= 1/L and beta* = (1 - sqrt(step nu))^2 heavy ball converges at rate 1 - sqrt(step nu), "
     "no beta does better; the gradient ratio tends to nu and (17) tends to beta*, in [0, 1 - delta].",
     "A SPD; step <= 1/L; Prop. 3 measured for beta < beta* (it fails for beta >= beta*).", _heavy_ball),
    ("momentum_attention", "Momentum Transformer (001)", "(12)-(14)",
     "The recurrence (12) and the closed forms (13) (causal) and (14) (non-causal) give the same outputs.",
     "0 <= beta < 1, gamma > 0, positive feature map elu + 1.", _attention),
    ("revnet_instability", "Momentum ResNets (003)", "Prop. 1 and remark",
     "J(A, B) = [[I, A], [B, I + BA]] has an eigenvalue |lam| >= 1, lam != 1, each solving "
     "lam^2 - (2 + mu) lam + 1 = 0, mu in Sp(AB); [[0, A], [B, 0]] has eigenvalues +-sqrt(Sp(AB)); "
     "linearised RevNet iterations do not converge while Momentum ResNet ones (gamma < 1) can.",
     "A and B invertible; for convergence f'(x*) = -S, S SPD with Sp(S) in (0, 1].", _revnet),
    ("psi_series", "Momentum ResNets (003)", "Prop. 4",
     "The series Psi_eps(theta) equals x(1) of eps x'' + x' = theta x, x'(0) = 0, from the block-matrix "
     "exponential and from dk.solve.",
     "eps > 0, theta any real square matrix (here eps in [0.1, 10], ||theta|| <= 3).", _psi),
    ("representation", "Momentum ResNets (003)", "Thm. 1, Thm. 2, lambda_eps",
     "lambda_eps = min G_eps (global, mpmath-verified) and Psi_eps(R) = [lambda_eps, inf), non-increasing in "
     "eps; is_representable decides Theorems 1/2; momentum_logarithm builds theta with Psi_eps(theta) = D.",
     "eps > 0; D real (Jordan blocks allowed); eigenvalues separated by > 1e-5 ||D||.", _representation),
    ("momentum_limits", "Momentum ResNets (003)", "Props. 2, 3, 5, 6, 7, 8",
     "x_eps -> x* as eps -> 0 (rate eps) and as eps -> inf (rate 1/eps); first-order solutions embed; free v0 "
     "represents any map; x -> lam x, lam <= -1 is not reached from v0 = 0; Prop. 8's closed form.",
     "f(x) = tanh(W x + b) (Props. 2, 3, 5); 1-D autonomous f for Prop. 7.", _limits),
    ("momentum_network", "Momentum ResNets (003)", "(2), (3), Sect. 3.2, App. C, App. E",
     "Inversion (3) reconstructs the input (bit-exact with the App. C buffer); the buffer holds "
     "~k log2(1/gamma) ~ k(1-gamma)/ln 2 bits; the App. E backprop formula equals autograd.",
     "0 < gamma < 1 rational (n/d, d <= 1000).", _network),
]

CLAIMS: dict[str, Claim] = {cid: Claim(cid, paper, eq, statement, hyp, fn)
                            for cid, paper, eq, statement, hyp, fn in _SPECS}


def run_all(n_instances: int = 1000, seed: int = 0, claims=None, *, progress: bool = False) -> ClaimTable:
    """Run every claim (or those whose ids are in ``claims``) on ``n_instances`` random instances each,
    seeded by ``seed`` (claim number i uses ``seed + i``, so a claim's instances do not depend on which
    others run). Returns a :class:`ClaimTable`; ``progress=True`` shows a tqdm bar."""
    n_instances = check_count("n_instances", n_instances)
    seed = check_seed("seed", seed)
    if claims is None:
        selected = list(CLAIMS)
    else:
        selected = [claims] if isinstance(claims, str) else list(claims)
        unknown = [c for c in selected if c not in CLAIMS]
        if unknown:
            raise ValueError(f"claims must be ids from dk.theory.CLAIMS {sorted(CLAIMS)}; got unknown "
                             f"{unknown}")
    todo = [(i, cid) for i, cid in enumerate(CLAIMS) if cid in selected]
    if progress:
        from tqdm.auto import tqdm
        todo = tqdm(todo, desc="dk.theory claims", unit="claim")
    rows = [CLAIMS[cid].run(n_instances, seed + i) for i, cid in todo]
    return ClaimTable(rows, n_instances, seed)
