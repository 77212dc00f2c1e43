"""The claims of Momentum ResNets (Sander, Ablin, Blondel, Peyré): RevNet instability, Psi_eps and
the representable linear maps (Thms. 1-2, Lemmas 1-2), the limits in eps (Props. 2-8), the
first-order results (Props. 9-10, Thm. 3), exact inversion, its memory cost and the backprop
formula.
"""

from __future__ import annotations

import numpy as np

from ..._papers import MOMENTUM_RESNETS
from .. import first_order, momentum_resnet, representation, spectra
from .._core import CheckResult, Claim, combine, random_matrices, split_by_size, verdict
from ._sampling import (
    by_size,
    join_parts,
    patched,
    random_nets,
    random_signed_matrices,
    scaled_result,
    scaled_solve,
    stack_groups,
)

__all__ = ["CLAIMS"]


def _revnet(n_inst: int, rng: np.random.Generator) -> CheckResult:
    disc, cont, dyn = [], [], []
    for n, count in split_by_size(n_inst, rng):
        A = random_matrices(rng, count, n, log10_cond=4, scale=10 ** rng.uniform(-1, 1))
        B = random_matrices(rng, count, n, log10_cond=4, scale=10 ** rng.uniform(-1, 1))
        # the spectra also at tiny weights (down to 1e-8: eigenvalues 1 +- 1e-8, where an earlier
        # check raised a false alarm at 1e-7)
        tiny = (10 ** rng.uniform(-8, 0, (count, 1, 1))) ** (np.arange(count) % 2)[:, None, None]
        disc.append(spectra.check_revnet_instability(A * tiny, B * tiny))
        cont.append(spectra.check_revnet_continuous(A * tiny, B * tiny))
        q = np.linalg.qr(rng.standard_normal((count, n, n)))[0]
        S = (q * rng.uniform(0.2, 1.0, (count, 1, n))) @ np.swapaxes(q, -1, -2)
        dyn.append(
            spectra.check_fixed_point_iterations(
                A,
                B,
                (S + np.swapaxes(S, -1, -2)) / 2,
                rng.uniform(0, 0.9),
                seed=int(rng.integers(2**31)),
            )
        )
    return join_parts("revnet_instability", [disc, cont, dyn])


def _psi(n_inst: int, rng: np.random.Generator) -> CheckResult:
    """Prop. 4 over its whole range: eps > 0 and theta any real matrix. Against expm: ||theta|| in
    [1e-2, 1e3], eps in [1e-2, 1e2] (||theta / eps|| up to 1e5, large negative theta / eps where the
    plain series cancels). Against dk.solve: a third of the instances, eps in [0.1, 1e2], ||theta /
    eps|| <= 1e3 (the ODE's cost). Against the 50-digit closed form: the 1 x 1 instances, theta to
    +-1e4 and eps to 1e-3."""
    out = []
    n_ode = max(n_inst // 3, 1)
    for n, count in split_by_size(n_inst, rng):
        theta = (
            random_matrices(rng, count, n, log10_cond=4, scale=1.0)
            * 10 ** rng.uniform(-2, 3, (count, 1, 1))
            * rng.choice([-1.0, 1.0], size=(count, 1, 1))
        )
        eps = 10 ** rng.uniform(-2, 2, count)
        if n == 1:
            theta = theta * 10 ** rng.uniform(0, 1, (count, 1, 1))
            eps = 10 ** rng.uniform(-3, 3, count)
        out.append(representation.check_psi_series(_psi_finite(theta, eps), eps, ode=False))
    for n, count in split_by_size(n_ode, rng):
        eps = 10 ** rng.uniform(-1, 2, count)
        theta = (
            random_matrices(rng, count, n, log10_cond=4, scale=1.0)
            * (eps * 10 ** rng.uniform(-2, 3, count))[:, None, None]
            * rng.choice([-1.0, 1.0], size=(count, 1, 1))
        )
        out.append(representation.check_psi_series(theta, eps, ode=True))
    return stack_groups("psi_series", out)


def _psi_finite(theta: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """Scale down the instances whose Psi_eps would overflow float64: the growth rate of x(1) is at
    most sqrt(r/eps + 1/(4 eps^2)) - 1/(2 eps) for spectral radius r <= ||theta||_inf, which stays
    <= 600 (Psi <= e^600) for ||theta||_inf <= 360000 eps + 600 (the proposition holds there too;
    float64 cannot hold the value)."""
    norm = np.abs(theta).sum(axis=-1).max(axis=-1)
    cap = 360000 * eps + 600
    return theta * np.minimum(1.0, cap / np.maximum(norm, 1e-300))[:, None, None]


def _random_representable(rng: np.random.Generator, n: int, eps: float) -> tuple[np.ndarray, bool]:
    """A real n x n matrix with a known answer to Theorem 1/2: eigenvalues drawn as single reals
    above lambda_eps, complex pairs, paired reals below lambda_eps, single reals below lambda_eps
    (not representable) and, sometimes, Jordan blocks: 2 x 2 above lambda_eps (representable), 2 x 2
    below lambda_eps (once: not representable) or two equal 2 x 2 blocks below lambda_eps
    (representable), and two distinct simple eigenvalues 1e-7..1e-3 apart below lambda_eps (not
    representable)."""
    lam = representation.lambda_eps(eps)
    blocks, ok, used = [], True, 0
    values = set()
    near_used = False

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
        kind = rng.choice(
            [
                "above",
                "complex",
                "pair",
                "single",
                "jordan",
                "jordan_above",
                "jordan_pair",
                "near_above",
                "near_single",
                "near_pair",
                "close_distinct",
            ],
            p=[0.2, 0.2, 0.13, 0.1, 0.06, 0.06, 0.06, 0.06, 0.06, 0.04, 0.03],
        )
        if kind.startswith("near") and near_used:
            kind = "above"
        if kind == "near_pair" and room < 2:
            kind = "near_single"
        if kind.startswith(
            "near"
        ):  # within 1e-6 relative of lambda_eps, on either side (at most one per D)
            near_used = True
            x = lam * (
                1
                + rng.choice(
                    [-1.0, 1.0] if kind == "near_pair" else [-1.0 if kind == "near_above" else 1.0]
                )
                * 10 ** rng.uniform(-7, -6)
            )
            if kind == "near_pair":
                blocks.append(np.diag([x, x]))
                used += 2
            else:
                blocks.append(np.array([[x]]))
                ok, used = bool(ok and x >= lam), used + 1
            continue
        if kind == "jordan_pair" and room < 4:
            kind = "pair"
        if kind == "close_distinct" and room >= 2:
            # two distinct simple eigenvalues below lambda_eps, 1e-7..1e-3 apart (a fixed clustering
            # tolerance called them a pair); not representable
            x = fresh(3 * lam - 1, lam * 1.3)
            blocks.append(np.diag([x, x + 10 ** rng.uniform(-7, -3)]))
            ok, used = False, used + 2
            continue
        if kind == "close_distinct":
            kind = "single"
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
        D[i : i + k, i : i + k] = blk
        i += k
    V = random_matrices(rng, 1, n, log10_cond=1.5)[0]
    return V @ D @ np.linalg.inv(V), ok


def _representation(n_inst: int, rng: np.random.Generator) -> CheckResult:
    n_inst = min(
        n_inst, 500
    )  # eigen-decomposition, Jordan ranks and a constructed logarithm per instance
    # lambda_eps against 40-digit mpmath over [1e-3, 1e8] (capped: ~15 ms of mpmath per value)
    eps_lambda = 10 ** rng.uniform(-3, 8, min(n_inst, 50))
    lam_part = representation.check_lambda_eps(eps_lambda)
    # 1e-6: near a critical point of f_eps (eigenvalues within 1e-6 of lambda_eps) inverting f_eps
    # loses half the digits (forward error ~ sqrt(machine eps)); a wrong construction errs by O(1)
    decisions, log_residual, log_tol = [], np.zeros(n_inst), 1e-6
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
        log_residual[idx] = np.abs(psi - target).max(axis=(-1, -2)) / (
            1 + np.abs(target).max(axis=(-1, -2))
        )
    inst = dict(eps=np.array(epss), expected=np.array(expected))
    return combine(
        "representation",
        [
            lam_part,
            verdict(
                "representation.decision",
                np.array(decisions),
                0.0,
                inst,
                "is_representable vs the known answer (1 = disagreement)",
            ),
            verdict(
                "representation.logarithm",
                log_residual,
                log_tol,
                inst,
                "||Psi_eps(momentum_logarithm(D)) - D|| / (1 + ||D||)",
            ),
        ],
        disjoint=True,
    )


def _eps_limit(n_inst, rng, *, large: bool = False):
    """Prop. 2's limit eps -> 0 (``large``: Prop. 5's eps -> +inf) on tanh fields, n in {1, 4, 7,
    10}."""
    check = (
        momentum_resnet.check_large_eps_limit if large else momentum_resnet.check_small_eps_limit
    )
    return by_size(
        "large_eps_limit" if large else "small_eps_limit",
        n_inst,
        rng,
        lambda n, c: check(*random_nets(rng, c, n), rng.standard_normal((c, n))),
        range(1, 13, 3),
    )


def _embedding(n_inst, rng, v0=None):
    def make(n, c):
        W, b, x0 = random_nets(rng, c, n)
        return momentum_resnet.check_first_order_embedding(
            W, b, x0, rng.uniform(0.05, 2), v0=None if v0 is None else v0(c, n)
        )

    return by_size("first_order_embedding", n_inst, rng, make, range(1, 13, 3))


def _free_velocity(n_inst, rng):
    def make(n, c):
        M = random_matrices(rng, 1, n, log10_cond=2)[0]
        return momentum_resnet.check_free_velocity(
            lambda x: np.sin(3 * x) @ M.T - x**2, rng.standard_normal((c, n))
        )

    return by_size("free_velocity", n_inst, rng, make)


def _prop7(n_inst, rng, lam=None):
    n_inst = min(n_inst, 100)  # an ODE solve of 100 cubics per instance
    lam = -1 - rng.exponential(1.0, n_inst) if lam is None else lam
    return momentum_resnet.check_negative_scaling_obstruction(
        lam, 10 ** rng.uniform(-1, 1.5, np.size(lam)), n_cubic=100, seed=int(rng.integers(2**31))
    )


def _prop8(n_inst, rng):
    return momentum_resnet.check_prop8_closed_form(
        rng.standard_normal((n_inst, 3)), 10 ** rng.uniform(-1, 1.5, n_inst)
    )


def _network_part(which, gammas=(0.5, 0.75, 0.9, 0.95, 0.99)):
    def gen(n_inst, rng):
        out = []
        for n, count in split_by_size(n_inst, rng):
            depth = int(rng.integers(5, 60))
            gamma = float(rng.choice(gammas))
            W = rng.standard_normal((depth, count, n, n)) / np.sqrt(n)
            b = rng.standard_normal((depth, count, n))
            x0, v0 = rng.standard_normal((count, n)), rng.standard_normal((count, n))
            if which == "inversion":
                out.append(momentum_resnet.check_inversion(x0, v0, W, b, gamma))
            elif which == "memory":
                out.append(momentum_resnet.check_memory_bits(x0, v0, W, b, gamma))
            else:
                out.append(
                    momentum_resnet.check_backprop_formula(
                        x0, v0, W, b, gamma, seed=int(rng.integers(2**31))
                    )
                )
        return stack_groups(out[0].claim, out)

    return gen


def _caption(n_inst, rng, *, start: float):
    n = min(n_inst, 40)  # 40-digit mpmath per value
    eps = (
        np.concatenate([[start], 10 ** rng.uniform(np.log10(start), 8, n - 1)])[:n]
        if n > 1
        else np.array([start])
    )
    small = 10 ** rng.uniform(-3, -1, max(n // 4, 1))
    # "close to -1" read as nearer to -1 than to 0 (the caption sets no threshold: the row is
    # informal)
    return representation.check_lambda_eps_closeness(
        np.concatenate([eps, small]), near_minus_one_from=start, closeness=0.5
    )


def _lemma1(n_inst, rng, f=None):
    n = min(n_inst, 200)  # 30-digit re-evaluation per target
    out = []
    for e in 10 ** rng.uniform(-1, 2, max(1, n // 20)):
        w = rng.standard_normal(20) * 10 ** rng.uniform(-3, 3, 20) + 1j * rng.standard_normal(
            20
        ) * 10 ** rng.uniform(-3, 3, 20) * (rng.uniform(size=20) < 0.8)
        w[0] = representation.lambda_eps(e) * (
            1 + rng.uniform(0.01, 2)
        )  # below lambda_eps: a non-real preimage
        out.append(representation.check_f_eps_surjective(w, e, f=f))
    return stack_groups("f_eps_surjective", out)


def _lemma1_run_off(rng):
    """exp and 1/(1 + z^2) miss w = 0, but Newton runs off to |z| -> oo with |f - w| -> 0: only the
    root part (Newton's step at the best start) shows the violation."""
    w = np.concatenate([[0.0], rng.standard_normal(3) + 1j * rng.standard_normal(3)])
    return stack_groups(
        "f_eps_surjective",
        [
            representation.check_f_eps_surjective(w, 1.0, f=f)
            for f in (np.exp, lambda z: 1 / (1 + z**2))
        ],
    )


def _lemma2(n_inst, rng, fprime=None):
    n = min(n_inst, 50)
    return representation.check_f_eps_prime_zeros_real(
        10 ** rng.uniform(-1, 2, n),
        rng.integers(1, 7, n),
        rng.uniform(1, 40, n),
        rng.uniform(0.5, 60, n),
        fprime=fprime,
    )


def _grows(n_inst, rng, reverse=False):
    n = min(n_inst, 40)  # two 40-digit values per pair
    e1 = 10 ** rng.uniform(-3, 8, n)
    e2 = e1 * (1 + 10 ** rng.uniform(-3, 1, n))
    return representation.check_representable_set_grows(
        e2 if reverse else e1, e1 if reverse else e2
    )


def _prop9(n_inst, rng, reflect=False):
    return by_size(
        "flow_orientation",
        n_inst,
        rng,
        lambda n, c: first_order.check_flow_orientation(*random_nets(rng, c, n), reflect=reflect),
        range(1, 7),
    )


def _thm3(n_inst, rng, delta_max=0.9, family="log_periodic"):
    n = min(n_inst, 25)  # one tight solve per instance
    a = np.exp(rng.uniform(0.05, 2, n) * rng.choice([-1, 1], n))
    x0 = rng.standard_normal(5) * 10 ** rng.uniform(-2, 1, 5)
    return first_order.check_linear_flow_field(
        a, rng.uniform(0.05, delta_max, n) if delta_max else np.zeros(n), x0, family=family
    )


def _prop10(n_inst, rng, lam=None):
    n = min(n_inst, 5)  # least squares from 8 starts per instance
    if lam is None:
        lam = np.exp(rng.uniform(-3, 3, n))
        lam = np.where(np.abs(lam - 1) < 1e-2, 2.0, lam)  # the hypothesis lambda != 1
    return first_order.check_not_a_real_square(lam, seed=int(rng.integers(2**31)))


def _crossing(n_inst, rng, v0_factor=-0.5):
    return first_order.check_crossing_example(
        rng.standard_normal(n_inst) * 10 ** rng.uniform(-3, 3, n_inst), v0_factor=v0_factor
    )


def _revnet_contracting(rng):
    with patched(spectra, "revnet_jacobian", scaled_result(0.5)):
        return _revnet(3, rng)


def _psi_wrong(rng):
    with patched(representation, "psi_eps_series", scaled_result(1 + 1e-6)):
        return _psi(3, rng)


def _representation_wrong(rng):
    def make(f):
        return lambda eps, *a, **k: (lambda v: (v[0] * (1 + 1e-9), v[1]))(f(eps, *a, **k))

    representation._lambda_scalar.cache_clear()
    try:
        with patched(representation, "_lambda_eps_with_argmin", make):
            return _representation(3, rng)
    finally:
        representation._lambda_scalar.cache_clear()


def _limit_wrong(rng, large=False):
    """An offset that does not shrink with eps (not added to the eps = inf reference of Prop. 5)."""

    def make(f):
        return lambda field, x0, v0, t, eps, **k: (
            f(field, x0, v0, t, eps, **k) + (0.1 if np.isfinite(eps) else 0.0)
        )

    with patched(momentum_resnet, "_second_order", make):
        return _eps_limit(2, rng, large=large)


def _free_velocity_wrong(rng):
    with patched(momentum_resnet, "_second_order", scaled_result(1 + 1e-5)):
        return _free_velocity(3, rng)


def _prop8_wrong(rng):
    with patched(momentum_resnet, "solve", scaled_solve(1 + 1e-5)):
        return _prop8(3, rng)


def _inversion_wrong(rng):
    """(3) perturbed by 1e-9 relative (22 bits above rounding) at gamma = 0.9, depth 20 (3 bits
    predicted): the float part must see more bits lost than Sect. 3.2 accounts for; and the exact
    part a wrong inverse."""
    W, b = rng.standard_normal((20, 2, 3, 3)) / np.sqrt(3), rng.standard_normal((20, 2, 3))
    x0, v0 = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    with patched(momentum_resnet, "momentum_inverse", scaled_result(1 + 1e-9)):
        return momentum_resnet.check_inversion(x0, v0, W, b, 0.9)


def _memory_empty(rng):
    """A buffer that keeps nothing, at gamma = 0.95 and 0.99 (where the old check's slack hid
    it)."""

    def make(f):
        def layers(x, v, W, b, gamma, buf=None):
            for x_, v_, _ in f(x, v, W, b, gamma, buf):
                yield x_, v_, buf

        return layers

    out = []
    with patched(momentum_resnet, "_exact_layers", make):
        for gamma in (0.95, 0.99):
            W, b = rng.standard_normal((5, 2, 3, 3)), rng.standard_normal((5, 2, 3))
            out.append(
                momentum_resnet.check_memory_bits(
                    rng.standard_normal((2, 3)), rng.standard_normal((2, 3)), W, b, gamma
                )
            )
    return stack_groups("memory_bits", out)


def _backprop_wrong(rng):
    with patched(momentum_resnet, "backprop_formula", scaled_result(1 + 1e-7)):
        return _network_part("backprop")(2, rng)


def _boundary(n_inst, rng, shift=0.0):
    n = min(n_inst, 100)
    return representation.check_threshold_boundary(
        10 ** rng.uniform(np.log10(0.2), 1, n),
        random_matrices(rng, n, 3, log10_cond=1.5),
        shift=shift,
    )


def _up_to_scale(n_inst, rng, alpha=None):
    def make(n, c):
        D = random_signed_matrices(rng, c, n, log10_cond=2, scale=10 ** rng.uniform(-1, 2))
        if (
            alpha is not None
        ):  # planted: a lone eigenvalue -1 (scaled by alpha = 1 it stays below lambda_eps)
            D = np.broadcast_to(
                np.diag(np.concatenate([[-1.0], 1 + np.arange(n - 1)])), (c, n, n)
            ).copy()
        return representation.check_representable_up_to_scale(
            D, 10 ** rng.uniform(-1, 2, c), alpha=alpha
        )

    return by_size("representable_up_to_scale", min(n_inst, 300), rng, make, range(1, 9))


def _scaling_v0(n_inst, rng, planted=False):
    n = min(n_inst, 200)
    if planted:  # lambda <= -1: outside the statement, no eps reaches it (lambda_eps > -1)
        return representation.check_scaling_representable(
            np.concatenate([[-1.0], rng.uniform(-3, -1, n - 1)])
        )
    lam = np.concatenate(
        [
            -1 + 10 ** rng.uniform(-6, 0, n // 2),
            rng.uniform(0, 1, n - n // 2) * 10 ** rng.uniform(-2, 3, n - n // 2),
        ]
    )
    return representation.check_scaling_representable(lam)


def _prop7_general(n_inst, rng, free=False):
    n = min(
        n_inst, 12
    )  # 100 fields and 4 rounds of 100 mutants, two starts each, per instance (~0.3 s each)
    return momentum_resnet.check_prop7_criterion(
        10 ** rng.uniform(-1, 1, n),
        10 ** rng.uniform(-1, 1.5, n),
        n_fields=100,
        seed=int(rng.integers(2**31)),
        free_velocity=free,
    )


def _first_order_range(n_inst, rng, singular=False):
    def make(n, c):
        M = random_signed_matrices(rng, c, n, log10_cond=2, scale=1.0)
        if n >= 2:  # half: a purely imaginary eigenvalue pair (M^2 then has a negative pair)
            q = np.linalg.qr(rng.standard_normal((c, n, n)))[0]
            J = np.zeros((c, n, n))
            w = rng.uniform(0.3, 3, c)
            J[:, 0, 1], J[:, 1, 0] = -w, w
            J[:, 2:, 2:] = random_matrices(rng, c, n - 2, log10_cond=1, scale=1.0) if n > 2 else 0
            Mi = q @ J @ np.swapaxes(q, -1, -2)
            M = np.where((np.arange(c) % 2 == 0)[:, None, None], Mi, M)
        if singular:
            M = M.copy()
            M[..., :, 0] = 0.0
        return representation.check_first_order_range(M, singular_ok=singular)

    return by_size("first_order_range", min(n_inst, 300), rng, make, range(1, 9))


_LINEAR_FLOW_THM3_STATEMENT = (
    "Theorem 3 (Linearity). Suppose d = 1. If (15) represents a linear "
    "mapping x -> ax at time 1, we have that f is linear."
)

CLAIMS: tuple[Claim, ...] = (
    Claim(
        id="revnet_instability",
        paper=MOMENTUM_RESNETS,
        equation="Prop. 1 and remark",
        statement="If A and B are invertible, then there exists lambda in Sp(J(A, B)) such that "
        "|lambda| >= 1 and lambda != 1. [...] a RevNet cannot have converging iterations.",
        hypotheses="A and B invertible (condition number up to 1e4, norms 1e-9 to 10), n <= 12; "
        "for convergence f'(x*) = -S, S SPD.",
        check=_revnet,
        summary="Sp(J) from Sp(AB); some |lambda| >= 1; iterations",
        expected_verdict="holds",
        flip=lambda rng: _revnet_contracting(rng),
        reading="J(A, B) = [[I, A], [B, I + BA]] has an eigenvalue (computed) decidably != 1 with "
        "|lambda| >= 1; its spectrum is the roots of lambda^2 - (2 + mu) lambda + 1, mu in "
        "Sp(AB); fixed-point iterations of a RevNet diverge, a Momentum ResNet's converge",
        number=18,
    ),
    Claim(
        id="psi_series",
        paper=MOMENTUM_RESNETS,
        equation="Prop. 4",
        statement="At time 1, (7) defines the linear mapping x0 -> Psi_eps(theta) x0 where "
        "Psi_eps(theta) = e^{-1/(2eps)} sum_n (1/(2n)! + 1/(2eps(2n+1)!)) (theta/eps + Id/(4 "
        "eps^2))^n.",
        hypotheses="eps > 0 and theta any real square matrix: ||theta|| in [1e-2, 1e3], eps in "
        "[1e-2, 1e2], n <= 12 (||theta/eps|| to 1e5); 1 x 1: |theta| to 1e4, eps in [1e-3, 1e3].",
        check=_psi,
        summary="series vs expm, the 50-digit closed form (1 x 1) and dk.solve",
        expected_verdict="holds",
        flip=lambda rng: _psi_wrong(rng),
        reading="Prop. 4's series equals x(1) of eps x'' + x' = theta x, x(0) = I, x'(0) = 0 "
        "(block expm, dk.solve, and a 50-digit closed form for 1 x 1)",
        number=19,
    ),
    Claim(
        id="representation",
        paper=MOMENTUM_RESNETS,
        equation="Thm. 1, Thm. 2, lambda_eps",
        statement="Theorem 1: Let D in D_d^C(R). Then D is represented by a second-order model "
        "(7) if and only if for all lambda in Sp(D) such that lambda < lambda_eps, lambda is of "
        "even multiplicity order.",
        hypotheses="eps in [0.2, 10]; D real n <= 8 with eigenvalues above/below lambda_eps, "
        "complex pairs, Jordan blocks, distinct eigenvalues 1e-7..1e-3 apart below lambda_eps, "
        "and eigenvalues within 1e-6 relative of lambda_eps on both sides; lambda_eps for eps in "
        "[1e-3, 1e8].",
        check=_representation,
        summary="decisions vs the known answer; theta constructed; lambda_eps vs mpmath",
        expected_verdict="holds",
        flip=lambda rng: _representation_wrong(rng),
        reading="is_representable(D, eps) gives Theorem 1/2's answer on matrices with a known "
        "answer; for representable D, Psi_eps(momentum_logarithm(D)) = D; lambda_eps = 40-digit "
        "value",
        number=20,
    ),
    Claim(
        id="lambda_eps_caption",
        paper=MOMENTUM_RESNETS,
        equation="Fig. 4 caption",
        statement="Figure 4. Left: Evolution of lambda_eps defined in Theorem 1. lambda_eps is "
        "non increasing, stays close to 0 when eps << 1 and close to -1 when eps >= 2.",
        hypotheses="eps in [2, 1e8] (eps = 2 included) and eps in [1e-3, 0.1]; lambda_eps at 40 "
        "digits.",
        check=lambda n, rng: _caption(n, rng, start=2.0),
        summary="lambda_eps nearer -1 than 0 for eps >= 2, nearer 0 for eps <= 0.1",
        expected_verdict="undecided",
        flip=lambda rng: _caption(3, rng, start=0.5),
        reading="'close to -1' read as 'nearer to -1 than to 0' (|lambda_eps + 1| <= 1/2) for eps "
        ">= 2, and 'close to 0' as |lambda_eps| <= 1/2 for eps <= 0.1 (monotonicity: row "
        "representable_set_grows)",
        informal="an informal caption: 'close to' sets no threshold, so there is nothing to call "
        "true or false. Its checkable content holds (nearer -1 than 0 from eps = 2 on: lambda_2 = "
        "-0.781); within 0.1 of -1 only from eps ~ 5 on (lambda_5 = -0.905).",
        number=21,
    ),
    Claim(
        id="lemma1_surjective",
        paper=MOMENTUM_RESNETS,
        equation="Lemma 1 (A.4.1)",
        statement="Lemma 1 (Surjectivity of f_eps). For eps > 0, f_eps is surjective on C.",
        hypotheses="eps in [0.1, 100]; targets w over 6 decades, real (incl. below lambda_eps) "
        "and complex.",
        check=_lemma1,
        summary="min |f_eps(z) - w| over Newton starts (30-digit re-evaluation)",
        expected_verdict="holds",
        flip=lambda rng: _lemma1_run_off(rng),
        reading="for every target w in C some z has f_eps(z) = w (Newton from several starts, "
        "residual re-evaluated at 30 digits)",
        number=22,
    ),
    Claim(
        id="lemma2_derivative_zeros",
        paper=MOMENTUM_RESNETS,
        equation="Lemma 2 (A.4.3)",
        statement="Lemma 2 (On the zeros of f'_eps). For all z in C - R we have f'_eps(z) != 0.",
        hypotheses="eps in [0.1, 100]; boxes [-((k+1/2)pi)^2, x] x [-h, h], k <= 6, x <= 40, h <= "
        "60.",
        check=_lemma2,
        summary="zeros in the box (argument principle) = real zeros",
        expected_verdict="holds",
        flip=lambda rng: representation.check_f_eps_prime_zeros_real(
            1.0,
            3,
            10.0,
            20.0,
            fprime=lambda z: representation._f_eps_prime(z, 0.5) * (z + 20 - 3j) * (z + 20 + 3j),
        ),
        reading="in boxes around the real axis the number of zeros of f'_eps (argument principle) "
        "equals the number of its real zeros",
        number=23,
    ),
    Claim(
        id="representable_set_grows",
        paper=MOMENTUM_RESNETS,
        equation="Sect. 4.2 after Thm. 1",
        statement="A consequence of this result is that the set of representable linear mappings "
        "is strictly increasing with eps.",
        hypotheses="0 < eps1 < eps2, eps1 in [1e-3, 1e8], eps2/eps1 - 1 in [1e-3, 10]; 40-digit "
        "lambda_eps.",
        check=_grows,
        summary="lambda_eps2 < lambda_eps1 and a witness",
        expected_verdict="holds",
        flip=lambda rng: _grows(3, rng, reverse=True),
        reading="lambda_eps2 < lambda_eps1 for eps1 < eps2 (40 digits), with a matrix "
        "representable for eps2 but not for eps1",
        number=24,
    ),
    Claim(
        id="small_eps_limit",
        paper=MOMENTUM_RESNETS,
        equation="Prop. 2",
        statement="Proposition 2 (Continuity of the solutions). [...] Then ||x_eps - x*||_inf -> "
        "0 as eps -> 0.",
        hypotheses="f = tanh(W x + b), any v0, n in {1, 4, 7, 10}.",
        check=_eps_limit,
        summary="log-log slope of the error (rate eps)",
        expected_verdict="holds",
        flip=lambda rng: _limit_wrong(rng),
        reading="sup_t |x_eps(t) - x*(t)| -> 0 as eps -> 0, at rate eps (log-log slope of three "
        "eps)",
        number=25,
    ),
    Claim(
        id="first_order_embedding",
        paper=MOMENTUM_RESNETS,
        equation="Prop. 3",
        statement="There exists a function f^ such that for all x solution of (5), x is also "
        "solution of the second-order model eps x'' + x' = f^(x, theta) with (x(0), x'(0)) = (x0, "
        "f(x0, theta0)).",
        hypotheses="f = tanh(W x + b), eps in [0.05, 2], f^ = eps f' f + f.",
        check=_embedding,
        summary="sup |x^ - x*|",
        expected_verdict="holds",
        flip=lambda rng: _embedding(2, rng, v0=lambda c, n: np.zeros((c, n))),
        reading="x of (5) solves eps x'' + x' = f^(x) with f^ = eps f' f + f and x'(0) = f(x0)",
        number=26,
    ),
    Claim(
        id="large_eps_limit",
        paper=MOMENTUM_RESNETS,
        equation="Prop. 5",
        statement="Proposition 5 (Convergence of the solution when eps -> +inf). [...] Then x_eps "
        "converges uniformly to x* as eps -> +inf.",
        hypotheses="f = tanh(W x + b), any v0.",
        check=lambda n, rng: _eps_limit(n, rng, large=True),
        summary="log-log slope (rate 1/eps)",
        expected_verdict="holds",
        flip=lambda rng: _limit_wrong(rng, large=True),
        reading="sup_t |x_eps(t) - x*(t)| -> 0 as eps -> inf, at rate 1/eps (x* of x'' = f(x))",
        number=27,
    ),
    Claim(
        id="free_velocity",
        paper=MOMENTUM_RESNETS,
        equation="Prop. 6",
        statement="Consider h: R^d -> R^d, and the ODE x'' + x' = 0, (x(0), x'(0)) = (x0, (h(x0) "
        "- x0)/(1 - 1/e)). Then phi_1(x0) = h(x0).",
        hypotheses="h(x) = sin(3x) M^T - x^2, n <= 12.",
        check=_free_velocity,
        summary="|x(1) - h(x0)|",
        expected_verdict="holds",
        flip=lambda rng: _free_velocity_wrong(rng),
        reading="x'' + x' = 0 from (x0, (h(x0) - x0)/(1 - 1/e)) reaches h(x0) at t = 1",
        number=28,
    ),
    Claim(
        id="negative_scaling",
        paper=MOMENTUM_RESNETS,
        equation="Prop. 7",
        statement="This in particular proves that x -> lambda x for lambda <= -1 cannot be "
        "represented by this ODE with initial conditions (x0, 0).",
        hypotheses="d = 1, lambda <= -1, eps in [0.1, 30]; linear and odd cubic f searched.",
        check=_prop7,
        summary="no searched f reaches lambda x0",
        expected_verdict="holds",
        flip=lambda rng: _prop7(2, rng, lam=np.array([-0.001, -0.002])),
        reading="no f among linear and odd cubic fields maps x0 to lambda x0 at time 1 from (x0, "
        "0) when lambda <= -1",
        number=29,
    ),
    Claim(
        id="prop8_closed_form",
        paper=MOMENTUM_RESNETS,
        equation="Prop. 8",
        statement="There exits f such that the solution of x'' + x'/eps = f(x) with initial "
        "condition (x0, 0) at time 1 is x(1) = -x0 exp(-1/(2eps)).",
        hypotheses="f(x) = (-pi^2 - 1/(4 eps^2)) x, eps in [0.1, 30].",
        check=_prop8,
        summary="dk.solve vs -x0 exp(-1/(2 eps))",
        expected_verdict="holds",
        flip=lambda rng: _prop8_wrong(rng),
        reading="f(x) = (-pi^2 - 1/(4 eps^2)) x gives x(1) = -x0 exp(-1/(2 eps)) from (x0, 0)",
        number=30,
    ),
    Claim(
        id="orientation_prop9",
        paper=MOMENTUM_RESNETS,
        equation="Prop. 9 (B.5)",
        statement="Proposition 9 (The homeomorphisms represented by (5) are orientation "
        "preserving.) If K is a compact set and h: K -> R^d is a homeomorphism represented by "
        "(5), then h is in the connected component of the identity function on K.",
        hypotheses="f = tanh(W x + b), n <= 6; det D Phi_t along t in [0, 1].",
        check=_prop9,
        summary="det D Phi_t > 0 = Liouville",
        expected_verdict="holds",
        flip=lambda rng: _prop9(2, rng, reflect=True),
        reading="det D Phi_t(x) > 0 along t in [0, 1] (Liouville: exp of the integrated "
        "divergence)",
        number=31,
    ),
    Claim(
        id="linear_flow_thm3",
        paper=MOMENTUM_RESNETS,
        equation="Thm. 3 (B.6)",
        statement=_LINEAR_FLOW_THM3_STATEMENT,
        hypotheses="d = 1, f globally Lipschitz (the standing assumption of (15)), a in (0, inf) "
        "minus {1}.",
        check=_thm3,
        summary="a Lipschitz non-linear f whose flow is x -> a x",
        expected_verdict="false as stated",
        flip=lambda rng: _thm3(3, rng, delta_max=0.0),
        reading="d = 1, f globally Lipschitz: if the time-1 map of (15) is x -> a x, then f(x)/x "
        "is constant",
        number=32,
    ),
    Claim(
        id="linear_flow_thm3_smooth",
        paper=MOMENTUM_RESNETS,
        equation="Thm. 3 (B.6), corrected",
        statement=_LINEAR_FLOW_THM3_STATEMENT,
        hypotheses="f(x) = ln(a) x + delta x^3/(1 + x^2), delta in [0.05, 0.9): no such nonlinear "
        "f has a linear time-1 map.",
        check=lambda n, rng: _thm3(n, rng, family="smooth"),
        summary="a nonlinear C^1 f whose flow is linear",
        expected_verdict="holds with correction",
        correction="f must be differentiable at 0 (the proof's last step uses f'(0)); Lipschitz "
        "is not enough",
        flip=lambda rng: _thm3(3, rng),
        reading="Suppose d = 1 and f is differentiable at 0 (here C^1). If (15) represents a "
        "linear mapping x -> ax at time 1, f is linear.",
        number=33,
    ),
    Claim(
        id="non_square_prop10",
        paper=MOMENTUM_RESNETS,
        equation="Prop. 10 (B.7)",
        statement="Consider the matrix A = diag(-1, -lambda), where lambda > 0 and lambda != 1. "
        "Then A in GL_2^+(R) - GL_2(R)^2 and A cannot be represented by (15).",
        hypotheses="lambda in [e^-3, e^3] minus (0.99, 1.01).",
        check=_prop10,
        summary="det A > 0 and min ||B^2 - A|| > 0",
        expected_verdict="holds",
        flip=lambda rng: _prop10(1, rng, lam=np.array([1.0])),
        reading="A = diag(-1, -lambda) has det A > 0 and no real B with B^2 = A (least squares "
        "from 8 starts stays away from 0)",
        number=34,
    ),
    Claim(
        id="crossing_example",
        paper=MOMENTUM_RESNETS,
        equation="Sect. 4.2",
        statement="For instance, phi_t(x0) = x0 exp(-t/2) cos(t/2) solves x'' + x' = -x/2 with "
        "(x(0), x'(0)) = (x0, -x0/2). All the trajectories intersect at time pi.",
        hypotheses="x0 over 6 decades, both signs.",
        check=_crossing,
        summary="dk.solve vs closed form; x(pi) = 0",
        expected_verdict="holds",
        flip=lambda rng: _crossing(3, rng, v0_factor=0.0),
        reading="x0 exp(-t/2) cos(t/2) solves x'' + x' = -x/2 with (x0, -x0/2) (dk.solve), and "
        "x(pi) = 0",
        number=35,
    ),
    Claim(
        id="inversion",
        paper=MOMENTUM_RESNETS,
        equation="(3), App. C",
        statement="x_n = x_{n+1} - v_{n+1}, v_n = (v_{n+1} - (1 - gamma) f(x_n, theta_n)) / gamma "
        "(3) [...] In practice, in order to exactly reverse the dynamics, the information lost by "
        "the finite-precision multiplication by gamma in (2) has to be efficiently stored.",
        hypotheses="f = tanh(W x + b), depth 5-60, gamma in {0.1, 0.3, 0.5, 0.75, 0.9, 0.95, "
        "0.99}.",
        check=_network_part("inversion", (0.1, 0.3, 0.5, 0.75, 0.9, 0.95, 0.99)),
        summary="float64 (3): bits lost vs k log2(1/gamma); fixed point with the buffer: bit-exact",
        expected_verdict="holds",
        flip=lambda rng: _inversion_wrong(rng),
        reading="float64 (3) after (2) loses about k log2(1/gamma) bits (Sect. 3.2's "
        "log2((1/gamma)^k): at most that + log2(16k), at least half of it - log2(16k)); with the "
        "buffer of App. C the inversion is exact bit for bit",
        number=36,
    ),
    Claim(
        id="memory_bits",
        paper=MOMENTUM_RESNETS,
        equation="Sect. 3.2",
        statement="For an architecture of depth k, this corresponds to storing log_2((1/gamma)^k) "
        "values for each sample (k(1 - gamma)/ln(2) if gamma is close to 1).",
        hypotheses="As inversion; buffer of App. C (Maclaurin et al.).",
        check=_network_part("memory"),
        summary="buffer bits = k log2(1/gamma); first-order approximation",
        expected_verdict="holds",
        flip=lambda rng: _memory_empty(rng),
        reading="the App. C buffer gains k log2(1/gamma) bits per coordinate over depth k; k(1 - "
        "gamma)/ln 2 is within 1 - gamma relative of it",
        number=37,
    ),
    Claim(
        id="backprop_formula",
        paper=MOMENTUM_RESNETS,
        equation="App. E",
        statement="grad_{z_{k-1}} L = [[I + (1-gamma) df, gamma I], [(1-gamma) df, gamma I]]^T "
        "grad_{z_k} L and grad_{theta_{k-1}} L = (1-gamma) [d_theta f; d_theta f]^T grad_{z_k} L.",
        hypotheses="As inversion.",
        check=_network_part("backprop"),
        summary="formula vs autograd",
        expected_verdict="holds",
        flip=lambda rng: _backprop_wrong(rng),
        reading="App. E's backward recursion equals torch autograd's gradients w.r.t. x0, v0, W, b",
        number=38,
    ),
    Claim(
        id="theorem2_boundary",
        paper=MOMENTUM_RESNETS,
        equation="Thm. 2 at lambda = lambda_eps",
        statement="Theorem 2 [...] If A can be represented by a second-order model (7), then each "
        "Jordan block of A corresponding to an eigen value lambda < lambda_eps occurs an even "
        "number of time. Reciprocally, if each Jordan block of A corresponding to an eigen value "
        "lambda <= lambda_eps occurs an even number of time, then A can be represented by a "
        "second-order model.",
        hypotheses="eps in [0.2, 10]; 3 x 3 matrices V J_3(z*) V^-1, cond(V) <= 10^1.5.",
        check=_boundary,
        summary="Psi_eps(theta) for X = V J_3(z*) V^-1: Jordan blocks {2, 1} at lambda_eps",
        expected_verdict="holds",
        flip=lambda rng: _boundary(3, rng, shift=0.1),
        reading="the theorem leaves lambda = lambda_eps with an odd number of blocks open; dynkit "
        "finds there: X = V J_3(z*) V^-1 (z* = -alpha*^2, f'_eps(z*) = 0) gives Psi_eps = "
        "f_eps(X) with blocks {2, 1} at lambda_eps (representable, although is_representable, "
        "following Theorem 2, says undecided); a lone 2 x 2 block at lambda_eps is not "
        "representable (no real preimage with f'_eps != 0)",
        number=53,
    ),
    Claim(
        id="representable_up_to_scale",
        paper=MOMENTUM_RESNETS,
        equation="Sect. 4.3 after Thm. 1",
        statement="Another consequence is that one can learn any mapping up to scale using the "
        "ODE (7): if D in D_d^C(R), there exists alpha_eps > 0 such that for all lambda in "
        "Sp(alpha_eps D), one has lambda > lambda_eps. Theorem 1 shows that alpha_eps D is "
        "represented by a second-order model (7).",
        hypotheses="Real D (n <= 8, cond <= 1e2, any sign, scale 0.1-100), eps in [0.1, 100] "
        "(below, alpha_eps D ~ lambda_eps is under 1e-3 and the block-expm reference loses its "
        "relative accuracy).",
        check=_up_to_scale,
        summary="alpha_eps D's real eigenvalues above lambda_eps, Psi_eps(theta) = alpha_eps D",
        expected_verdict="holds",
        flip=lambda rng: _up_to_scale(3, rng, alpha=1.0),
        reading="with alpha_eps = |lambda_eps| / (2 rho(D)) the real eigenvalues of alpha_eps D "
        "exceed lambda_eps (complex ones carry no condition) and momentum_logarithm builds a real "
        "theta with Psi_eps(theta) = alpha_eps D (block expm, relative 1e-8 cond)",
        number=68,
    ),
    Claim(
        id="scaling_v0_zero",
        paper=MOMENTUM_RESNETS,
        equation="Sect. 4.2 after Prop. 3; App. B.4",
        statement="Furthermore, even with the restrictive initial condition v_0 = 0, x -> lambda "
        "x for lambda > -1 can always be represented by a second-order model (6) (see details in "
        "Appendix B.4).",
        hypotheses="lambda in (-1 + 1e-6, -1 + 1] and [0, 1e3] (log-spread), v0 = 0, linear f = "
        "theta x, eps found.",
        check=_scaling_v0,
        summary="x(1) = lambda for the constructed (eps, theta), dk.solve",
        expected_verdict="holds",
        flip=lambda rng: _scaling_v0(3, rng, planted=True),
        reading="for each lambda > -1 some eps > 0 and theta give x(1) = lambda x0 from (x0, 0) "
        "for eps x'' + x' = theta x (eps the first of 1e-2 2^k with lambda_eps < lambda; theta "
        "from f_eps's inverse; verified by dk.solve, relative 1e-7)",
        number=69,
    ),
    Claim(
        id="prop7_criterion",
        paper=MOMENTUM_RESNETS,
        equation="Prop. 7 (B.3)",
        statement="If there exists x0 in R+ such that h(x0) <= -x0 and x0 <= h(-x0) then h cannot "
        "be represented by (13).",
        hypotheses="d = 1, x0 in [0.1, 10], eps in [0.1, 30], v0 = 0; per instance 100 random "
        "autonomous fields a x + b x^2 + c x^3 + d sin(k x) (not odd), then 4 rounds mutating the "
        "best tenth towards the forbidden quadrant.",
        check=_prop7_general,
        summary="no field has phi(x0) <= -x0 and phi(-x0) >= x0",
        expected_verdict="holds",
        flip=lambda rng: _prop7_general(2, rng, free=True),
        reading="no autonomous f gives a time-1 map phi of eps x'' + x' = f(x), x'(0) = 0, with "
        "phi(x0) <= -x0 and phi(-x0) >= x0 (a seeded adversarial search of non-odd fields, which "
        "comes within ~2% of x0 and no closer; only its lambda <= -1 corollary had a row)",
        number=70,
    ),
    Claim(
        id="first_order_range",
        paper=MOMENTUM_RESNETS,
        equation="Sect. 4.3, (8)",
        statement="and this range is known (Andrica & Rohan, 2010) to be Psi_0(R^{dxd}) = "
        "exp(R^{dxd}) = {M^2 | M in GL_d(R)}.",
        hypotheses="M real invertible n x n (n <= 8, cond <= 1e2), half of them with a purely "
        "imaginary eigenvalue pair.",
        check=_first_order_range,
        summary="M^2 has a real logarithm (Culver; expm(log M^2) = M^2)",
        expected_verdict="holds",
        flip=lambda rng: _first_order_range(3, rng, singular=True),
        reading="exp(X) = exp(X/2)^2 gives one inclusion; the other: every M^2, M in GL_d(R), "
        "passes Culver's test and a real logarithm L with expm(L) = M^2 is built (relative 1e-8)",
        number=71,
    ),
)
