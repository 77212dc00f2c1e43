"""CSAODE's claims about the accelerated Runge-Kutta (ARK) solver, measured with
:func:`dynkit.solve`'s statistics: Claim 1 (local truncation error ``O(r**5)``, the order of RK4),
"fewer evaluations" (per step and per unit time at a fixed step) and "similar accuracy ... while the
training speed is higher" read as fewer evaluations at equal accuracy.

Problems: ``y' = W y + tanh(y + b)`` (any d; ``W = None`` gives the linear test equation
``y' = -y``), integrated over [0, 1] with fixed steps ``1/N``; the reference is dopri5 at rtol
1e-13.
"""

from __future__ import annotations

import numpy as np

from ..solvers import solve
from ..solvers.ark import ARK3, ARK4, SSPRK3
from ..solvers.tableaus import RungeKuttaTableau
from ._core import (
    CheckResult,
    as_real_array,
    as_scalar_batch,
    as_square,
    combine,
    matching_vectors,
    verdict,
)

__all__ = [
    "ARK_PEERS",
    "ARK_FAMILY",
    "ark_member",
    "check_ark_order",
    "check_ark_evaluations",
    "check_ark_stage_form",
    "check_ark_final_time",
    "ARK_STAGE_FORMS",
    "check_ark_equal_accuracy",
    "check_ark_family_equal_accuracy",
    "check_ark_start",
]

# an ARK method of order p and the classical RK method of the same order it is compared with
ARK_PEERS = {3: (ARK3, SSPRK3), 4: (ARK4, "rk4")}
STEPS = (16, 32, 64)
ORDER_STEPS = (
    8,
    16,
    32,
    64,
    128,
)  # the order is read from the two finest steps whose error is above rounding
REFINE_STEPS = (256, 512)  # for an instance whose slope is still pre-asymptotic at 1/128
# errors below this are the reference's (dopri5 at rtol 1e-13) or rounding: they carry no order
# information
ERROR_FLOOR = 1e-12
# after refining, an error within this factor of the smallest the instance reached is at its floor
# (the reference's error or rounding, e.g. 4e-13 for a nearly constant field): a slope read from it
# bends (measured 3.58 for ARK4 at r = 1/64..1/128, 3.98 one step coarser)
FLOOR_MARGIN = 10.0


def _problem(W, b, y0, context, omega=0.0):
    """``y' = W y + tanh(y + b) + sin(omega t)`` (each component; omega = 0: autonomous)."""
    y0 = as_real_array("y0", y0, context=context)
    omega = float(as_scalar_batch("omega", omega, context=context))
    if W is None:
        return (lambda t, y: -y + np.sin(omega * t)), y0
    W = as_square("W", W, context=context)
    b, y0 = matching_vectors(W.shape[-1], "W", context=context, b=b, y0=y0)
    return (
        lambda t, y: np.einsum("...ij,...j->...i", W, y) + np.tanh(y + b) + np.sin(omega * t)
    ), y0


def _runs(f, y0, method, steps=STEPS):
    """Errors over t in [0, 1] (max over the times k/8 and the components, per instance: a global
    error that happens to cross zero at t = 1 must not fake an order) and NFE for each number of
    steps."""
    times = np.linspace(0.0, 1.0, 9)  # on every step grid 1/N, N a multiple of 8
    ref = np.asarray(solve(f, y0, times, method="dopri5", rtol=1e-13, atol=1e-15).ys)
    errors, nfe, n_steps = [], [], []
    for N in steps:
        sol = solve(f, y0, times, method=method, step_size=1.0 / N)
        errors.append(np.abs(np.asarray(sol.ys) - ref)[1:].max(axis=(0, -1)))
        nfe.append(sol.stats.nfe)
        n_steps.append(sol.stats.n_steps)
    return np.array(errors), np.array(nfe, dtype=float), np.array(n_steps, dtype=float)


def _method(name: str, method, context: str):
    from ..solvers import METHODS, TwoStepRK

    if (
        isinstance(method, str)
        and method in METHODS
        or isinstance(method, (RungeKuttaTableau, TwoStepRK))
    ):
        return method
    raise ValueError(
        f"{name} must be a fixed-step method name from dk.solvers.METHODS {sorted(METHODS)} or a "
        f"tableau / TwoStepRK ({context}); got {method!r}"[:200]
    )


def _order(order: int):
    if isinstance(order, bool) or order not in ARK_PEERS:
        raise ValueError(f"order must be one of {sorted(ARK_PEERS)} (ARK3, ARK4); got {order!r}")
    return ARK_PEERS[order]


def check_ark_order(W, b, y0, *, order: int = 4, method=None, omega: float = 0.0) -> CheckResult:
    """CSAODE Claim 1: the ARK solver's local truncation error is ``O(r**(p+1))`` like RK's (p =
    4; ARK3: p = 3), so its global error (max over t = k/8) falls like ``r**p``. Residual:
    ``|measured log-log slope - p|`` between the two finest of ``r = 1/8 ... 1/128`` whose errors
    are above rounding (tolerance 0.35). ``method`` replaces the ARK method (a perturbed
    coefficient plants a violation); ``omega`` adds the forcing ``sin(omega t)`` (a field that
    depends on t, as CSAODE's F does: the stages' times then matter)."""
    context = "CSAODE Claim 1"
    ark, _ = _order(order)
    f, y0 = _problem(W, b, y0, context, omega)
    method = ark if method is None else _method("method", method, context)
    errors, _, _ = _runs(f, y0, method, ORDER_STEPS)
    steps = ORDER_STEPS
    slope = _finest_slope(errors, steps)
    # pre-asymptotic errors can bend the slope at r = 1/64..1/128 (a stiff-ish W at scale 3: 0.36
    # off at 1/128, seed-dependent); an instance off by more than the tolerance is refined until its
    # error reaches rounding, so the verdict is the asymptotic order, not the instance's distance
    # from its asymptote
    if np.any(np.abs(slope - order) > 0.35) and np.any(errors[-1] > ERROR_FLOOR):
        finer, _, _ = _runs(f, y0, method, REFINE_STEPS)
        steps = ORDER_STEPS + REFINE_STEPS
        errors = np.concatenate([errors, finer])
        slope = _finest_slope(errors, steps, refined=True)
    return verdict(
        "ark_order",
        np.abs(slope - order),
        0.35,
        dict(y0=y0),
        f"|global-error slope - {order}|",
        sides={"measured order": slope, "claimed order": np.full(slope.shape, order)},
    )


def _finest_slope(errors: np.ndarray, steps, refined: bool = False) -> np.ndarray:
    """Log-log slope of the error between the two finest steps whose error is above rounding
    (NaN, a failure, where fewer than two are); ``refined``: above :data:`FLOOR_MARGIN` times the
    smallest error of the ladder, too (its floor, once the refinement has reached it)."""
    x = np.log(np.array(steps, dtype=float))
    flat = errors.reshape(len(steps), -1)
    slope = np.full(flat.shape[1], np.nan)
    for i in range(flat.shape[1]):
        floor = max(ERROR_FLOOR, FLOOR_MARGIN * flat[:, i].min()) if refined else ERROR_FLOOR
        kept = np.flatnonzero(flat[:, i] > floor)[-2:]
        if kept.size == 2:
            slope[i] = -np.diff(np.log(flat[kept, i]))[0] / np.diff(x[kept])[0]
    return slope.reshape(errors.shape[1:])


def check_ark_evaluations(W, b, y0, *, order: int = 4, peer=None) -> CheckResult:
    """CSAODE (ARKNet "reduces computing costs"; Udwadia & Farahani): an ARK method of order p
    needs fewer function evaluations than the RK method of order p, per step (new evaluations per
    step, measured from dk.solve's ``stats.nfe`` between two step counts) and per unit time at
    the same fixed step (NFE over [0, 1], the ARK starter step included). Residual:
    ``max(ratio) - 1 + 1e-9`` clipped at 0 (holds when every ARK/RK ratio is < 1). ``peer``
    replaces the RK method (a cheaper one, e.g. ``"heun"``, plants a violation)."""
    context = "CSAODE ARK evaluations"
    ark, rk = _order(order)
    rk = rk if peer is None else _method("peer", peer, context)
    f, y0 = _problem(W, b, y0, context)
    _, nfe_a, st_a = _runs(f, y0, ark)
    _, nfe_r, st_r = _runs(f, y0, rk)
    per_step = ((nfe_a[-1] - nfe_a[0]) / (st_a[-1] - st_a[0])) / (
        (nfe_r[-1] - nfe_r[0]) / (st_r[-1] - st_r[0])
    )
    per_time = np.max(nfe_a / nfe_r)
    worst = max(per_step, per_time)
    batch = y0.shape[:-1]
    return combine(
        "ark_evaluations",
        [
            verdict(
                "ark_evaluations.per_step",
                np.full(batch, max(per_step - 1 + 1e-9, 0)),
                0.0,
                dict(y0=y0),
                "new evaluations per step, ARK / RK, must be < 1",
                sides={
                    "ARK per step": np.full(batch, (nfe_a[-1] - nfe_a[0]) / (st_a[-1] - st_a[0])),
                    "RK per step": np.full(batch, (nfe_r[-1] - nfe_r[0]) / (st_r[-1] - st_r[0])),
                },
            ),
            verdict(
                "ark_evaluations.per_time",
                np.full(batch, max(per_time - 1 + 1e-9, 0)),
                0.0,
                dict(y0=y0),
                f"NFE over [0, 1] at steps 1/{STEPS}, ARK / RK, must be < 1",
                sides={"ARK NFE": np.full(batch, nfe_a[-1]), "RK NFE": np.full(batch, nfe_r[-1])},
            ),
        ],
    )


def check_ark_equal_accuracy(W, b, y0, *, order: int = 4) -> CheckResult:
    """CSAODE after Claim 1: "the same truncation error means ARKNet and RKNet have similar
    accuracy, while the training speed of ARKNet is higher", read as: to reach the same error at
    t = 1 the ARK method needs fewer evaluations than RK of the same order. From the fixed-step
    runs, ``error ~ C N**-p`` for each method, so at equal error the NFE ratio is
    ``(e_A / e_R)**(1/p) (nfe_A / nfe_R)`` at the same N (finest step). Residual: that ratio
    minus 1, clipped at 0. False for the linear test equation ``y' = -y`` (ARK4: 1.14, ARK3:
    1.06): ARK's larger error constant outweighs its saved evaluations."""
    context = "CSAODE ARK cost at equal accuracy"
    ark, rk = _order(order)
    f, y0 = _problem(W, b, y0, context)
    e_a, nfe_a, _ = _runs(f, y0, ark)
    e_r, nfe_r, _ = _runs(f, y0, rk)
    ratio = (e_a[-1] / np.maximum(e_r[-1], 1e-300)) ** (1 / order) * nfe_a[-1] / nfe_r[-1]
    return verdict(
        "ark_equal_accuracy",
        np.maximum(ratio - 1, 0),
        0.0,
        dict(y0=y0),
        "NFE ratio ARK / RK at equal error, beyond 1",
        sides={"ARK NFE at equal error / RK NFE": ratio, "claimed below": np.ones_like(ratio)},
    )


# The one-parameter families of coefficients (CSAODE: "c_0, c_{-0} and other coefficients are
# hyper-parameters") that satisfy the order conditions with c_0 = 1, c_{-0} = 0: ARK3 in c_{-1},
# ARK4 in a_2. The closed forms are those dk.symbolic.ark_family derives (a test compares them;
# theory cannot import symbolic, a sibling layer); dynkit's members are c_{-1} = 1/12 and a_2 = 1/2.
# The members compared span the family away from its poles (ARK3: c_{-1} = 1/2; ARK4: a_2 = 0, 6/5).
ARK_FAMILY = {3: ("c_m1", ("-1/4", "1/12", "1/3")), 4: ("a2", ("1/4", "1/2", "9/10"))}


def ark_member(order: int, parameter) -> "TwoStepRK":
    """The member of the ARK family of ``order`` (3: parameter ``c_{-1}``, 4: parameter ``a_2``)
    as a :class:`dynkit.solvers.TwoStepRK` (exact fractions)."""
    import dataclasses
    from fractions import Fraction as Fr

    base, _ = _order(order)
    try:
        if isinstance(parameter, bool):
            raise TypeError
        x = Fr(parameter)
    except (TypeError, ValueError, ZeroDivisionError):
        raise ValueError(
            f"parameter must be a rational number (int, Fraction, float or a string like '1/12'); "
            f"got {parameter!r}"[:160]
        ) from None
    if order == 3:
        if x == Fr(1, 2):
            raise ValueError(
                "parameter c_{-1} = 1/2 is a pole of the ARK3 family (a_2 = 5/(6 - 12 "
                "c_{-1})); got 1/2"
            )
        return dataclasses.replace(
            base,
            name=f"ark3[c_m1={x}]",
            c1=x + 1,
            c_m1=x,
            c=(Fr(1, 2) - x,),
            a=(Fr(5) / (6 - 12 * x),),
        )
    if x == 0 or x == Fr(6, 5):
        raise ValueError(f"parameter a_2 must avoid the ARK4 family's poles 0 and 6/5; got {x}")
    den = 12 * x * x * (5 * x - 6)
    return dataclasses.replace(
        base,
        name=f"ark4[a2={x}]",
        c1=(90 * x**3 - 133 * x**2 + 40 * x - 8) / den,
        c_m1=(30 * x**3 - 61 * x**2 + 40 * x - 8) / den,
        c=((5 * x - 2) / (12 * x * x), -1 / (3 * x * x * (5 * x - 6))),
        a=(x, x * (6 - 5 * x) / 2),
    )


def _equal_error_ratio(f, y0, method, peer, order):
    e_a, nfe_a, _ = _runs(f, y0, method)
    e_r, nfe_r, _ = _runs(f, y0, peer)
    return (e_a[-1] / np.maximum(e_r[-1], 1e-300)) ** (1 / order) * nfe_a[-1] / nfe_r[-1]


# on y' = -y every member needs >= 1.06x RK's evaluations at equal error (measured: ARK3 1.06-1.07,
# ARK4 1.14)
LINEAR_MARGIN = 0.02


def check_ark_family_equal_accuracy(W, b, y0, *, members=None) -> CheckResult:
    """dynkit's own analysis of CSAODE's ARK method (not a statement of the paper, whose sentence —
    "the same truncation error means ARKNet and RKNNet have similar accuracy, while the
    training speed of ARKNet is higher" — is about the networks, tested by the experiments
    ledger): is "fewer evaluations at equal ODE error" a property of the ARK family? For every
    member (``members``: ``[(order, parameter), ...]``, default the three of each order in
    :data:`ARK_FAMILY`), the equal-error NFE ratio ARK / RK of the same order (SSPRK3, RK4; fixed
    steps, ``(e_A/e_R)**(1/p) nfe_A/nfe_R`` at the finest step) must be at least
    ``1 + LINEAR_MARGIN`` on the linear test equation ``y' = -y`` and above 1 on at least one of
    the problems ``y' = W y + tanh(y + b)`` given. Residual: the larger shortfall, over members."""
    context = "dynkit analysis of the ARK family at equal error"
    f_lin, y_lin = _problem(None, None, np.ones((1, 1)), context)
    f, y0 = _problem(W, b, y0, context)
    if members is None:
        members = [(o, p) for o, (_, ps) in ARK_FAMILY.items() for p in ps]
    else:
        try:
            members = [(o, p) for o, p in members]
        except (TypeError, ValueError):
            raise ValueError(
                f"members must be a list of (order, parameter) pairs, e.g. [(3, '1/12'), (4, "
                f"'1/2')]; "
                f"got {members!r}"[:160]
            ) from None
        if not members:
            raise ValueError(
                "members must name at least one (order, parameter) pair; got an empty list"
            )
        for o, p in members:
            try:
                ark_member(o, p)
            except ValueError as exc:
                raise ValueError(
                    f"members: ({o!r}, {p!r}) is not an ARK family member: {exc}"
                ) from None
    names, lin, worst_nonlin = [], [], []
    for order, parameter in members:
        method, peer = ark_member(order, parameter), ARK_PEERS[order][1]
        names.append(method.name)
        lin.append(float(_equal_error_ratio(f_lin, y_lin, method, peer, order).reshape(-1)[0]))
        worst_nonlin.append(float(np.max(_equal_error_ratio(f, y0, method, peer, order))))
    lin, worst_nonlin = np.array(lin), np.array(worst_nonlin)
    shortfall = np.maximum(np.maximum(1 + LINEAR_MARGIN - lin, 0), np.maximum(1 - worst_nonlin, 0))
    return verdict(
        "ark_family_equal_accuracy",
        shortfall,
        0.0,
        dict(member=np.array(names)),
        "per ARK member: equal-error NFE ratio vs RK on y' = -y (>= 1.02) and its largest "
        "value on the "
        "nonlinear problems (> 1)",
        sides={"ratio on y' = -y": lin, "largest ratio on y' = W y + tanh(y + b)": worst_nonlin},
    )


def check_ark_start(W, b, y0, *, order: int = 4, r: float = 0.25, method=None) -> CheckResult:
    """CSAODE after (9)-(10): "the self-attention ARK solver shown as Equation (9) cannot be
    self-started, that is, G(t_1) is computed by Equation (8). When the step size r = 1.0, the
    Equation (9) will not be calculated" (and Sect. 5: "when the step size r is 1.0, the
    computation of CSAARK is equivalent to CSARK"). Measured with dk.solve at fixed steps: the
    ARK solution at t_1 = r equals one step of RK of the same order (its starter), and over [0,
    1] with r = 1 the ARK and RK solutions are equal. Residual: the larger relative difference
    (tolerance 1e-14: the same arithmetic). ``method`` replaces the ARK method (one with another
    starter plants a violation)."""
    context = "CSAODE (9) start, r = 1"
    ark, rk = _order(order)
    ark = ark if method is None else _method("method", method, context)
    r = float(as_scalar_batch("r", r, context=context, low=0.0, high=1.0, low_open=True))
    f, y0 = _problem(W, b, y0, context)

    def at(times, m, step):
        return np.asarray(solve(f, y0, np.asarray(times), method=m, step_size=step).ys[-1])

    scale = 1 + np.abs(y0).max(axis=-1)
    first = np.abs(at([0.0, r], ark, r) - at([0.0, r], rk, r)).max(axis=-1) / scale
    whole = np.abs(at([0.0, 1.0], ark, 1.0) - at([0.0, 1.0], rk, 1.0)).max(axis=-1) / scale
    instances = dict(y0=y0)
    return combine(
        "ark_start",
        [
            verdict(
                "ark_start.first_step",
                first,
                1e-14,
                instances,
                f"ARK G(t_1) vs one RK step (8), r = {r:g}",
            ),
            verdict(
                "ark_start.r_equals_1", whole, 1e-14, instances, "ARK vs RK over [0, 1] with r = 1"
            ),
        ],
    )


def perturbed(method, delta: float = 1e-2):
    """A copy of a two-step method with ``c1`` and ``c_{-1}`` moved by ``delta`` (consistent, but
    of order 1: a planted violation of its order)."""
    import dataclasses
    from fractions import Fraction

    d = Fraction(delta).limit_denominator(10**6)
    return dataclasses.replace(
        method, name=method.name + "_perturbed", c1=method.c1 + d, c_m1=method.c_m1 + d
    )


# ------------------------------------------------------------------------------ CSAODE (10) as
# printed; T = ceil(1/r)

ARK_STAGE_FORMS = ("printed", "printed_factor", "printed_times", "udwadia_farahani")
"""CSAODE (10)'s stages. As printed, ``Z_j = r F(t_i + a_j r, G(t_i) + a_j r Z_{j-1})`` and
``Z_{-j} = r F(t_i + a_j r, G(t_{i-1}) + a_j r Z_{-j+1})``: two slips, r applied twice (Z already
carries r) and Z_{-j} evaluated at t_i + a_j r instead of t_{i-1} + a_j r (visible only when F
depends on t). ``printed_factor`` and ``printed_times`` keep one slip each; ``udwadia_farahani``
is the form dynkit implements (``k_j = F(t + a_j h, y + a_j h k_{j-1})``, Z = h k, the previous
step's stages at the previous step's times)."""


def _ark_by_hand(f, y0, method, r: float, n_steps: int, form: str) -> np.ndarray:
    """(9) with the stages (10) in ``form``, written out here (not dk.solve's loop): G(t_1) from one
        starter step
    (8), then n_steps - 1 two-step updates from t_1 = r. P = 0."""
    coef = [float(x) for x in (method.c0, method.c_m0, method.c1, method.c_m1)]
    c, a = [float(x) for x in method.c], [float(x) for x in method.a]
    prev = y0
    cur = np.asarray(
        solve(lambda t, y: f(t, y), y0, np.array([0.0, r]), method=method.starter, step_size=r).ys[
            -1
        ]
    )
    factor = r if form in ("printed", "printed_factor") else 1.0
    slipped = form in ("printed", "printed_times")

    def chain(t_own, t_stage, G):
        """Z_1 = r F(t_own, G), Z_j = r F(t_stage + a_j r, G + a_j factor Z_{j-1})."""
        Z = [r * f(t_own, G)]
        for aj in a:
            Z.append(r * f(t_stage + aj * r, G + aj * factor * Z[-1]))
        return Z

    for i in range(1, n_steps):
        t_i, t_prev = i * r, (i - 1) * r
        Zp, Zm = chain(t_i, t_i, cur), chain(t_prev, t_i if slipped else t_prev, prev)
        new = (
            coef[0] * cur
            - coef[1] * prev
            + coef[2] * Zp[0]
            - coef[3] * Zm[0]
            + sum(cj * (zp - zm) for cj, zp, zm in zip(c, Zp[1:], Zm[1:]))
        )
        prev, cur = cur, new
    return cur


def check_ark_stage_form(
    W, b, y0, *, order: int = 4, form: str = "printed", omega: float = 0.0
) -> CheckResult:
    """CSAODE (10), ``Z_j = r F(t_i + a_j r, G(t_i) + P + a_j r Z_{j-1})``,
    ``Z_{-j} = r F(t_i + a_j r, G(t_{i-1}) + P + a_j r Z_{-j+1})``, with (9) and Claim 1 ("local
    truncation error O(r^5)", ARK of Udwadia & Farahani 2008): the global error at t = 1 of (9)-(10)
    over r = 1/16 .. 1/128 falls like r^p (p = 4; ARK3: 3). Residual ``|slope - p|`` from the two
    finest steps whose error is above rounding (tolerance 0.35, as ark_claim1_order). ``form``
    (:data:`ARK_STAGE_FORMS`): as printed (both slips), one slip, or the Udwadia-Farahani form; the
    latter also equals dk.solve's ARK (to 1e-12, a second part). ``omega`` adds ``sin(omega t)`` to
    the field: with omega = 0 the field is autonomous and the time slip is invisible (as printed:
    order 2; with omega > 0: order 1).

    Range: y' = W y + tanh(y + b) + sin(omega t), any real W (n <= 6), b, y0, omega; P = 0;
    dynkit's ARK3 / ARK4."""
    context = "CSAODE (10)"
    if form not in ARK_STAGE_FORMS:
        raise ValueError(f"form must be one of {ARK_STAGE_FORMS} ({context}); got {form!r}")
    ark, _ = _order(order)
    f, y0 = _problem(W, b, y0, context, omega)
    ref = np.asarray(
        solve(f, y0, np.array([0.0, 1.0]), method="dopri5", rtol=1e-13, atol=1e-15).ys[-1]
    )

    def errors_at(steps):
        return np.stack(
            [np.abs(_ark_by_hand(f, y0, ark, 1.0 / N, N, form) - ref).max(axis=-1) for N in steps]
        )

    steps = (16, 32, 64, 128)
    errors = errors_at(steps)
    slope = _finest_slope(errors, steps)
    if np.any(np.abs(slope - ark.order) > 0.35) and np.any(
        errors[-1] > ERROR_FLOOR
    ):  # pre-asymptotic: refine
        steps = steps + REFINE_STEPS
        errors = np.concatenate([errors, errors_at(REFINE_STEPS)])
        slope = _finest_slope(errors, steps, refined=True)
    slope = np.where(
        np.isnan(slope), float(ark.order), slope
    )  # every error at rounding: nothing above p to see
    parts = [
        verdict(
            "ark_stage_form.order",
            np.abs(slope - ark.order),
            0.35,
            dict(y0=y0),
            f"|observed order - {ark.order}| of (9)-(10) with {form} stages",
            slope=slope,
            sides={"observed order": slope, "p": np.full(slope.shape, float(ark.order))},
        )
    ]
    if form == "udwadia_farahani":
        by_solver = np.asarray(
            solve(f, y0, np.array([0.0, 1.0]), method=ark, step_size=1.0 / 32).ys[-1]
        )
        gap = np.abs(_ark_by_hand(f, y0, ark, 1.0 / 32, 32, form) - by_solver).max(axis=-1) / (
            1 + np.abs(ref).max(-1)
        )
        parts.append(
            verdict(
                "ark_stage_form.solver",
                gap,
                1e-12,
                dict(y0=y0),
                "Udwadia-Farahani stages by hand vs dk.solve's ARK, r = 1/32",
            )
        )
        return combine("ark_stage_form", parts)
    return parts[0]


def check_ark_final_time(W, b, y0, r, *, order: int = 4, at: str = "r_ceil") -> CheckResult:
    """CSAODE after (8) and (9): "the output is H^G = G(t_T) (T = ceil(1/r))", t_i - t_{i-1} = r
    from t_0 = 0. T is the number of steps (CSAODE's (6) calls the final time T and never says the
    run ends at t = 1), so the output is the solution at ``t_T = r ceil(1/r)``, in ``[1, 1 + r)``: 1
    only when r divides 1 (r = 0.4, 0.6, 0.8 end at t = 1.2, 1.2, 1.6).

    ``at="r_ceil"`` (the reading checked): G(t_T) from T = ceil(1/r) steps of (9) written out by
    hand equals dk.solve's ARK solution at ``t = r ceil(1/r)`` (relative 1e-12: an independent
    loop), and ``1 <= t_T < 1 + r``. ``at="one"`` holds G(t_T) to dk.solve's ARK solution at t = 1
    instead (an output at t = 1: it fails unless r divides 1, the planted violation). Sides: t_T and
    ``|G(t_T) - y(1)|`` (dopri5).

    Range: r in (0, 1); y' = W y + tanh(y + b), any real W, b, y0."""
    context = "CSAODE T = ceil(1/r)"
    if at not in ("r_ceil", "one"):
        raise ValueError(f"at must be 'r_ceil' or 'one' ({context}); got {at!r}")
    ark, _ = _order(order)
    r_arr = np.atleast_1d(
        as_scalar_batch("r", r, context=context, low=0.0, high=1.0, low_open=True, high_open=True)
    ).reshape(-1)
    f, y0 = _problem(W, b, y0, context)
    at_one = np.asarray(
        solve(f, y0, np.array([0.0, 1.0]), method="dopri5", rtol=1e-12, atol=1e-14).ys[-1]
    )
    T = np.ceil(1 / r_arr - 1e-12)  # ceil(1/r) without a rounding artefact at r = 1/N
    t_T = T * r_arr
    outputs = [
        _ark_by_hand(f, y0, ark, float(ri), int(Ti), "udwadia_farahani") for ri, Ti in zip(r_arr, T)
    ]
    scale = 1 + np.abs(at_one).max()
    gap = []
    for o, ri, ti in zip(outputs, r_arr, t_T):
        end = float(ti) if at == "r_ceil" else 1.0
        ref = np.asarray(solve(f, y0, np.array([0.0, end]), method=ark, step_size=float(ri)).ys[-1])
        gap.append(np.abs(o - ref).max() / scale)
    window = np.maximum(1 - t_T, 0) + np.maximum(t_T - (1 + r_arr) + 1e-12, 0)
    instances = dict(r=r_arr)
    to_one = np.array([np.abs(o - at_one).max() for o in outputs])
    return combine(
        "ark_final_time",
        [
            verdict(
                "ark_final_time.output",
                np.array(gap),
                1e-12,
                instances,
                f"|G(t_T) - ARK solution at t = {'r ceil(1/r)' if at == 'r_ceil' else '1'}| "
                f"(relative)",
                sides={"t_T": t_T, "|G(t_T) - y(1)|": to_one},
            ),
            verdict(
                "ark_final_time.window",
                window,
                0.0,
                instances,
                "1 <= t_T = r ceil(1/r) < 1 + r",
                sides={"t_T": t_T},
            ),
        ],
    )
