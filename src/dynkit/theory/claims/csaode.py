"""The claims of CSAODE (Zhang, Zhang, Kong, Wei, Jiang) about its accelerated Runge-Kutta solver,
and dynkit's own analysis of the ARK family at equal ODE error (a row labelled
``dynkit analysis``, not a verdict on the paper).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..._papers import CSAODE, DYNKIT_ANALYSIS
from .. import accelerated_rk
from .._core import Claim, split_by_size
from ._sampling import patched, random_signed_matrices, stack_groups

__all__ = ["CLAIMS"]


def _field_weights(rng, count, d):
    """W of the test fields y' = W y + tanh(y + b): norm ~1-3, either sign, so that solutions move
    and the errors stay above rounding at r = 1/64."""
    return random_signed_matrices(rng, count, d, log10_cond=1, scale=3.0)


def _ark(kind, n_inst, rng, **kw):
    n = min(n_inst, 60)  # six fixed-step solves per size group
    out = []
    if kind == "equal_accuracy":  # the linear test equation first: part of "any ODE"
        out.append(
            accelerated_rk.check_ark_equal_accuracy(
                None, None, np.ones((1, 1)), order=int(rng.choice([3, 4]))
            )
        )
    for d, count in split_by_size(n, rng, range(1, 7)):
        W = _field_weights(rng, count, d)
        b, y0 = rng.standard_normal((count, d)), rng.standard_normal((count, d))
        order = int(rng.choice([3, 4]))
        if kind == "order":  # half the groups with a field that depends on t (CSAODE's F takes t)
            omega = float(rng.uniform(0.5, 3)) if rng.uniform() < 0.5 else 0.0
            out.append(accelerated_rk.check_ark_order(W, b, y0, order=order, omega=omega, **kw))
        elif kind == "evaluations":
            out.append(accelerated_rk.check_ark_evaluations(W, b, y0, order=order, **kw))
        else:
            out.append(accelerated_rk.check_ark_equal_accuracy(W, b, y0, order=order))
    return stack_groups(out[0].claim, out)


def _ark_family(n_inst, rng):
    n = min(n_inst, 8)  # 6 members x 2 methods x 3 fixed-step solves per problem
    d = int(rng.integers(1, 7))
    W = _field_weights(rng, n, d)
    return accelerated_rk.check_ark_family_equal_accuracy(
        W, rng.standard_normal((n, d)), rng.standard_normal((n, d))
    )


def _ark_family_cheap_peer(rng):
    """Planted: RK's evaluation count doubled (a peer twice as costly): ARK is then the cheaper at
    equal error on y' = -y for every member, and the analysis must fail."""

    def make(f):
        def runs(fun, y0, method, steps=accelerated_rk.STEPS):
            errors, nfe, n_steps = f(fun, y0, method, steps)
            return errors, nfe * (2 if method in ("rk4", accelerated_rk.SSPRK3) else 1), n_steps

        return runs

    with patched(accelerated_rk, "_runs", make):
        return _ark_family(2, rng)


def _ark_start(n_inst, rng, method=None):
    n = min(n_inst, 60)
    out = []
    for d, count in split_by_size(n, rng, range(1, 7)):
        W = _field_weights(rng, count, d)
        order = int(rng.choice([3, 4]))
        out.append(
            accelerated_rk.check_ark_start(
                W,
                rng.standard_normal((count, d)),
                rng.standard_normal((count, d)),
                order=order,
                r=float(rng.choice([0.5, 0.25, 0.2, 0.1])),
                method=None if method is None else method(order),
            )
        )
    return stack_groups("ark_start", out)


def _ark_start_wrong(rng):
    """ARK started with the midpoint rule instead of (8): its first step (and r = 1) differ from
    RK's."""
    from ...solvers.tableaus import MIDPOINT

    return _ark_start(
        3,
        rng,
        method=lambda order: dataclasses.replace(
            accelerated_rk.ARK_PEERS[order][0], starter=MIDPOINT
        ),
    )


def _ark_family_order(n_inst, rng, perturb: bool = False):
    n = min(n_inst, 30)  # five fixed-step solves per member and problem
    out = []
    for d, count in split_by_size(n, rng, range(1, 7)):
        W = _field_weights(rng, count, d)
        order = int(rng.choice([3, 4]))
        param = rng.choice(accelerated_rk.ARK_FAMILY[order][1])
        method = accelerated_rk.ark_member(order, param)
        if perturb:
            method = accelerated_rk.perturbed(method)
        out.append(
            accelerated_rk.check_ark_order(
                W,
                rng.standard_normal((count, d)),
                rng.standard_normal((count, d)),
                order=order,
                method=method,
            )
        )
    return stack_groups("ark_order", out)


def _ark_stage(n_inst, rng, form="printed", constant=False):
    n = min(n_inst, 30)
    out = []
    for d, count in split_by_size(n, rng, range(1, 7)):
        W = rng.standard_normal((count, d, d)) * 0.7 / np.sqrt(d) * (0.0 if constant else 1.0)
        b = rng.standard_normal((count, d)) + (
            40.0 if constant else 0.0
        )  # tanh(y + 40) = 1: F constant
        order = int(rng.choice([3, 4]))
        # most groups with a field that depends on t (where Z_{-j}'s time matters); the plant is
        # constant in y and t
        omega = 0.0 if constant or rng.uniform() < 0.3 else float(rng.uniform(0.5, 3))
        out.append(
            accelerated_rk.check_ark_stage_form(
                W, b, rng.standard_normal((count, d)), order=order, form=form, omega=omega
            )
        )
    return stack_groups("ark_stage_form", out)


def _ark_final(n_inst, rng, at="r_ceil"):
    n = min(n_inst, 40)
    d = int(rng.integers(1, 5))
    r = rng.uniform(0.02, 0.98, n)
    if at == "one":  # the planted violation needs an r that does not divide 1
        r = np.where(np.abs(1 / r - np.round(1 / r)) < 1e-3, r + 0.01, r)
    return accelerated_rk.check_ark_final_time(
        rng.standard_normal((d, d)) * 0.7, rng.standard_normal(d), rng.standard_normal(d), r, at=at
    )


CLAIMS: tuple[Claim, ...] = (
    Claim(
        id="ark_claim1_order",
        paper=CSAODE,
        equation="Claim 1",
        statement="Claim 1 The order of local truncation error of the self-attention accelerated "
        "Runge-Kutta (ARK) solver shown as Equation (9) is O(r^5), which is the same as the "
        "self-attention Runge-Kutta (RK) solver written as Equation (8).",
        hypotheses="y' = W y + tanh(y + b), ||W|| in [0.3, 3], d <= 6; ARK4 (and ARK3: O(r^4)); "
        "steps 1/16-1/64.",
        check=lambda n, rng: _ark("order", n, rng),
        summary="global-error slope = p",
        expected_verdict="holds",
        flip=lambda rng: _ark(
            "order", 2, rng, method=accelerated_rk.perturbed(accelerated_rk.ARK4)
        ),
        reading="the global error (max over t = k/8) of ARK4 (ARK3) falls like r^4 (r^3): local "
        "truncation O(r^5) (O(r^4))",
        number=39,
    ),
    Claim(
        id="ark_fewer_evaluations",
        paper=CSAODE,
        equation="Sect. ARK solver; Udwadia & Farahani",
        statement="We design a novel continuous dynamical model named as ARKNet, by proposing an "
        "accelerated Runge-Kutta method, which improves the training speed compared to RKNet.",
        hypotheses="As ark_claim1_order; dk.solve stats at fixed steps.",
        check=lambda n, rng: _ark("evaluations", n, rng),
        summary="NFE per step and over [0, 1], ARK / RK < 1",
        expected_verdict="holds",
        flip=lambda rng: _ark("evaluations", 2, rng, peer="heun"),
        reading="ARK of order p needs fewer function evaluations than RK of order p (2, 3 vs 3, 4 "
        "per step, and over [0, 1] at the same fixed step, starter included)",
        number=40,
    ),
    Claim(
        id="ark_equal_accuracy",
        paper=DYNKIT_ANALYSIS,
        equation="ARK family at equal ODE error",
        statement="dynkit's own analysis of the method, not a verdict on CSAODE: at equal ODE "
        "error, no member of the ARK family (ARK3: c_{-1} in [-1/4, 1/3]; ARK4: a_2 in [1/4, "
        "9/10]; CSAODE calls the coefficients hyper-parameters) needs fewer evaluations than RK "
        "of the same order on every problem: on y' = -y each needs 1.06-1.14x RK's evaluations, "
        "and on random y' = W y + tanh(y + b) some problem needs more.",
        hypotheses="Members c_{-1} in {-1/4, 1/12, 1/3} (ARK3 vs SSPRK3) and a_2 in {1/4, 1/2, "
        "9/10} (ARK4 vs RK4); y' = -y and up to 8 problems y' = W y + tanh(y + b), d <= 6; fixed "
        "steps 1/16-1/64.",
        check=_ark_family,
        summary="equal-error NFE ratio ARK / RK per member",
        expected_verdict="holds",
        flip=lambda rng: _ark_family_cheap_peer(rng),
        reading="CSAODE's sentence - 'The same truncation error means ARKNet and RKNNet have "
        "similar accuracy, while the training speed of ARKNet is higher than RKNNet' - is about "
        "the networks (the experiments ledger tests it); 'fewer evaluations at equal ODE error' "
        "is dynkit's own question about the method, answered here for the whole coefficient family",
        number=41,
    ),
    Claim(
        id="ark_start",
        paper=CSAODE,
        equation="(9)-(10); Sect. 5",
        statement="It is worth noting that the self-attention ARK solver shown as Equation (9) "
        "cannot be self-started, that is, G(t_1) is computed by Equation (8). When the step size "
        "r = 1.0, the Equation (9) will not be calculated [...] when the step size r is 1.0, the "
        "computation of CSAARK is equivalent to CSARK.",
        hypotheses="y' = W y + tanh(y + b), d <= 6; ARK3 (starter SSPRK3) and ARK4 (starter RK4); "
        "r in {0.5, 0.25, 0.2, 0.1}.",
        check=_ark_start,
        summary="ARK's first step vs one RK step; ARK vs RK at r = 1",
        expected_verdict="holds",
        flip=_ark_start_wrong,
        reading="dk.solve's ARK at fixed step r: G(t_1) equals one step of RK of the same order "
        "(8); with r = 1 the ARK and RK solutions over [0, 1] are equal (to rounding: 1e-14)",
        number=51,
    ),
    Claim(
        id="ark_claim1_family",
        paper=CSAODE,
        equation="Claim 1 (coefficient family)",
        statement="Claim 1 The order of local truncation error of the self-attention accelerated "
        "Runge-Kutta (ARK) solver shown as Equation (9) is O(r^5) [...] where c_0, c_{-0} and "
        "other coefficients are hyper-parameters.",
        hypotheses="Members c_{-1} in {-1/4, 1/12, 1/3} (ARK3) and a_2 in {1/4, 1/2, 9/10} "
        "(ARK4); y' = W y + tanh(y + b), d <= 6.",
        check=_ark_family_order,
        summary="global-error slope = p for each member",
        expected_verdict="holds",
        flip=lambda rng: _ark_family_order(2, rng, perturb=True),
        reading="every member of the one-parameter family that satisfies the order conditions "
        "(not only dynkit's) has global error O(r^4) (ARK4; ARK3: O(r^3)) on nonlinear problems; "
        "a member off the family (a perturbed coefficient) does not",
        number=52,
    ),
    Claim(
        id="ark_stage_form",
        paper=CSAODE,
        equation="(10)",
        statement="Z_j = rF(t_i + a_j r, G(t_i) + P + a_j r Z_{j-1}; theta), Z_{-j} = rF(t_i + "
        "a_j r, G(t_{i-1}) + P + a_j r Z_{-j+1}; theta) (10) where a_j (j in {2, 3}) are the "
        "stable hyper-parameters which can be calculated by accelerated Runge-Kutta algorithm.",
        hypotheses="y' = W y + tanh(y + b) + sin(omega t) (omega = 0 or in [0.5, 3]: F depends on "
        "t, as CSAODE's does; P = 0), d <= 6, ARK3 / ARK4 (dynkit's members), r = 1/16 .. 1/128.",
        check=lambda n, rng: _ark_stage(n, rng),
        summary="observed order of (9)-(10) as printed; corrected: Udwadia-Farahani stages",
        expected_verdict="erratum",
        correction="Z_j = r F(t_i + a_j r, G(t_i) + P + a_j Z_{j-1}), Z_{-j} = r F(t_{i-1} + a_j "
        "r, G(t_{i-1}) + P + a_j Z_{-j+1}) (Udwadia & Farahani's k_j = F(t + a_j h, y + a_j h "
        "k_{j-1}) with Z = h k, the previous step's stages at its own times): Z_{j-1} already "
        "carries r, so the printed a_j r Z_{j-1} applies r twice (order 2), and Z_{-j} at t_i + "
        "a_j r instead of t_{i-1} + a_j r drops the order to 1 when F depends on t.",
        flip=lambda rng: _ark_stage(3, rng, constant=True),
        reading="(9) with the stages (10) as printed (r twice, Z_{-j} at t_i + a_j r) has global "
        "error O(r^p) (p = 4 for ARK4, 3 for ARK3): Claim 1",
        intent="we propose a new continuous dynamical model named ARKNet via accelerated "
        "Runge-Kutta (ARK) algorithm (Udwadia and Farahani 2008), which has a truncation error of "
        "O(r^5) as RKNNet [...] and (8)'s own stages Z_j = F(..., G(t_{i-1}) + P + a_j r Z_{j-1}) "
        "carry no r: the factor r belongs to one place",
        corrected_check=lambda n, rng: _ark_stage(n, rng, form="udwadia_farahani"),
        corrected_flip=lambda rng: _ark_stage(3, rng, form="printed"),
        number=72,
    ),
    Claim(
        id="ark_final_time",
        paper=CSAODE,
        equation="(8)-(9): T = ceil(1/r)",
        statement="The input of the solver is G(t_0) = H^L(t_0 = 0), the output is H^G = G(t_T) "
        "(T = ceil(1/r)), and ceil(.) indicates rounding",
        hypotheses="r in (0.02, 0.98) uniform; y' = W y + tanh(y + b), d <= 4; ARK4 "
        "(Udwadia-Farahani stages).",
        check=_ark_final,
        summary="G(t_T) vs dk.solve's ARK at t = r ceil(1/r); 1 <= t_T < 1 + r",
        expected_verdict="holds with correction",
        correction="T = ceil(1/r) is the number of steps: the output G(t_T) is the solution at "
        "t_T = r ceil(1/r), in [1, 1 + r) (t = 1 only when r divides 1: r = 0.4, 0.6, 0.8 end at "
        "t = 1.2, 1.2, 1.6)",
        flip=lambda rng: _ark_final(3, rng, at="one"),
        reading="t_i - t_{i-1} = r from t_0 = 0 and T = ceil(1/r) steps: G(t_T) is the ODE "
        "block's solution at t_T = r ceil(1/r) (CSAODE never says the run ends at t = 1; its (6) "
        "calls the final time T), with 1 <= t_T < 1 + r; the sides show |G(t_T) - y(1)|",
        number=73,
    ),
)
