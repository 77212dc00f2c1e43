"""The referee's cases against the theory checks: each is a test with the right answer (worked
out here), and a hypothesis property covers the check's documented range."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import dynkit as dk

T = dk.theory
FAST = settings(max_examples=15, deadline=None)


@pytest.mark.parametrize(
    "f, why",
    [(np.exp, "exp never reaches 0"), (lambda z: 1 / (1 + z**2), "1/(1 + z^2) never reaches 0")],
)
def test_lemma1_a_run_off_to_infinity_is_no_root(f, why):
    """Newton on f(z) = 0 runs off to |z| -> oo with |f| -> 0 (exp: one unit a step, from the start -100 to -180,
    |f| = 7e-79, the referee's 6.7e-79): the value alone 'holds', the Newton step (1 for exp, |z|/2 for
    1/(1 + z^2), against the tolerance 1e-6 (1 + |z|)) does not: VIOLATED."""  # noqa: E501
    result = T.check_f_eps_surjective(np.array([0.0, 1.0 + 1j]), 1.0, f=f)
    assert not result.holds and not result.is_undecided, why
    assert result.details["worst_part"] == "f_eps_surjective.root"
    assert not result.passed[0]  # w = 0 is the one missed


@FAST
@given(log_eps=st.floats(-1, 2), log_abs=st.floats(-3, 3), angle=st.floats(0, 2 * np.pi))
def test_lemma1_holds_over_its_range(log_eps, log_abs, angle):
    """Range eps in [0.1, 100], any w (|w| in [1e-3, 1e3], any argument): f_eps reaches it (Lemma
    1)."""
    w = np.array([10**log_abs * np.exp(1j * angle), 10**log_abs])
    result = T.check_f_eps_surjective(w, 10**log_eps)
    assert result.holds, result.message


def test_lemma1_row_plants_a_run_off():
    flip = T.CLAIMS["lemma1_surjective"].flip(np.random.default_rng(0))
    assert not flip.holds and flip.details["worst_part"] == "f_eps_surjective.root"


@pytest.mark.parametrize("scale", [1e-2, 1e-3])
def test_ghbnode_small_momentum_is_undecided_not_violated(scale):
    """W, b, h0 at 1e-2 (1e-3) and m0 = 0: the deviation from the heavy-ball equation, a_m (J -
    xi)(sigma'(m) - 1) - a_h sigma''(m) m', is O(m^2) and under the differences' resolution:
    undecided (the statement is true there)."""
    n = 2
    result = T.check_ghbnode_adjoint_not_heavy_ball(
        np.eye(n) * scale,
        np.full(n, scale),
        np.full(n, scale),
        np.zeros(n),
        np.ones(2 * n),
        0.5,
        0.5,
    )
    assert not result.holds and result.is_undecided
    # the predicted deviation (no differences) and the measured residual agree
    assert (
        abs(
            result.sides["predicted deviation"]
            / result.sides["|a_m'' - gamma a_m' - a_m (J - xi I)|"]
            - 1
        )
        < 0.1
    )


@settings(max_examples=8, deadline=None)
@given(
    n=st.integers(1, 4),
    log_scale=st.floats(-3, 0.3),
    m0_scale=st.floats(0, 2),
    seed=st.integers(0, 2**16),
)
def test_ghbnode_never_violated_over_its_range(n, log_scale, m0_scale, seed):
    """Range: any W, b, h0, m0 (m0 = 0 included), xi > 0: the statement is true, so never a
    counterexample."""
    rng = np.random.default_rng(seed)
    sc = 10**log_scale
    result = T.check_ghbnode_adjoint_not_heavy_ball(
        rng.standard_normal((n, n)) * sc,
        rng.standard_normal(n) * sc,
        rng.standard_normal(n) * sc,
        rng.standard_normal(n) * m0_scale,
        rng.standard_normal(2 * n),
        rng.uniform(0, 2),
        rng.uniform(0.1, 2),
    )
    assert result.holds or result.is_undecided, result.message


def test_ghbnode_plant_is_still_a_violation():
    n = 2
    result = T.check_ghbnode_adjoint_not_heavy_ball(
        np.eye(n), np.ones(n), np.ones(n), np.ones(n), np.ones(2 * n), 0.5, 0.5, plant=True
    )
    assert not result.holds and not result.is_undecided


def _slope(result):
    return float(
        result.details.get(
            "slope",
            result.details.get("parts", {})
            .get("ark_stage_form.order", result)
            .details.get("slope"),
        )
    )


@pytest.mark.parametrize("order", [3, 4])
def test_csaode_eq10_time_slip_shows_with_a_time_dependent_field(order):
    """F with sin(2 t): as printed (r twice and Z_{-j} at t_i + a_j r) the order is ~1; the time
    slip alone ~1 too; the factor slip alone ~2; the Udwadia-Farahani stages keep p (within 0.35:
    >= 3.5 for ARK4)."""
    rng = np.random.default_rng(1)
    W, b, y0 = rng.standard_normal((3, 3)) * 0.5, rng.standard_normal(3), rng.standard_normal(3)
    slopes = {
        form: _slope(T.check_ark_stage_form(W, b, y0, form=form, order=order, omega=2.0))
        for form in T.accelerated_rk.ARK_STAGE_FORMS
    }
    assert abs(slopes["printed"] - 1) < 0.35 and abs(slopes["printed_times"] - 1) < 0.35
    assert (
        abs(slopes["printed_factor"] - 2) < 0.35 and abs(slopes["udwadia_farahani"] - order) < 0.35
    )
    # autonomous: the time slip is invisible
    assert (
        abs(_slope(T.check_ark_stage_form(W, b, y0, form="printed_times", order=order)) - order)
        < 0.35
    )
    assert T.check_ark_stage_form(W, b, y0, form="udwadia_farahani", order=order, omega=2.0).holds


@settings(max_examples=6, deadline=None)
@given(
    order=st.sampled_from([3, 4]),
    omega=st.floats(0, 3),
    d=st.integers(1, 4),
    seed=st.integers(0, 2**16),
)
# found by hypothesis on a fresh clone: a nearly constant field whose error at r = 1/128 is within a
# factor 3 of the reference's (slope 3.58 read there before the floor was measured)
@example(order=4, omega=0.0, d=1, seed=264)
def test_ark_order_with_time_dependent_fields(order, omega, d, seed):
    """Claim 1 over fields that depend on t: dk.solve's ARK keeps its order; a perturbed
    coefficient does not."""
    rng = np.random.default_rng(seed)
    W, b, y0 = (
        rng.standard_normal((d, d)) * 0.7 / np.sqrt(d),
        rng.standard_normal(d),
        rng.standard_normal(d),
    )
    assert T.check_ark_order(W, b, y0, order=order, omega=omega).holds
    ark = T.accelerated_rk.ARK_PEERS[order][0]
    assert not T.check_ark_order(
        W, b, y0, order=order, omega=omega, method=T.accelerated_rk.perturbed(ark)
    ).holds


@pytest.mark.parametrize(
    "M",
    [[[1.0, 1.0], [0.0, 1.0]], [[-2.0, 1.0, 0.0], [0.0, -2.0, 0.0], [0.0, 0.0, 3.0]]],
    ids=["jordan", "negative jordan"],
)
def test_first_order_range_refuses_a_non_diagonalisable_matrix(M):
    with pytest.raises(ValueError, match="M must be diagonalisable"):
        T.check_first_order_range(np.array(M))


def test_residuals_hold_one_value_per_instance():
    """check_eigen_pairing on 10 instances (four parts): residuals has 10 entries, the worst
    part's."""
    rng = np.random.default_rng(0)
    n = 3
    result = T.check_eigen_pairing(
        rng.uniform(0.1, 1, (10, n)), rng.standard_normal((10, n, n)), 1.0
    )
    assert result.residuals.shape == (10,) == result.passed.shape
    assert np.max(result.residuals) == result.residual
    part = result.details["parts"][result.details["worst_part"]]
    np.testing.assert_array_equal(result.residuals, part.residuals)


@pytest.mark.parametrize("seed", [52, 53])
def test_ark_claim1_family_is_not_seed_dependent(seed):
    """At 10 instances, seed 52 gave a slope 0.358 off at r = 1/64..1/128 (pre-asymptotic, a
    stiff-ish W): refined to r = 1/512 it is the asymptotic order, so the row's verdict does not
    depend on the seed."""
    assert T.CLAIMS["ark_claim1_family"].sample(10, seed).holds


def test_review_eq21_index_misprint_by_hand():
    """Scalar F = x^2 / 2 + (1 - cos x): heavy ball (1) run here, m formed both ways. As printed
    (forward difference) the m-equation of (21) misses by sqrt(s) |grad F(x^{k+1}) - grad F(x^k)|
    and the x-equation by the change of step; with the backward difference both vanish to
    rounding. The check agrees with both answers."""
    s, gamma = 0.04, 2.0
    r, beta = np.sqrt(s), 1 - gamma * np.sqrt(s)
    grad = lambda x: x + np.sin(x)  # noqa: E731
    xs = [1.0, 0.9]
    for _ in range(12):
        xs.append(xs[-1] - s * grad(xs[-1]) + beta * (xs[-1] - xs[-2]))
    xs = np.array(xs)
    fwd = (xs[1:] - xs[:-1]) / r  # fwd[k] = (x^{k+1} - x^k)/sqrt(s)
    k = np.arange(1, 10)
    printed_gap = np.abs(fwd[k + 1] - ((1 - gamma * r) * fwd[k] - r * grad(xs[k]))).max()
    backward_gap = np.abs(fwd[k] - ((1 - gamma * r) * fwd[k - 1] - r * grad(xs[k]))).max()
    assert printed_gap > 1e-3 and backward_gap < 1e-14
    args = (np.eye(1), np.zeros(1), np.array([1.0]), np.array([0.9]), s, gamma)
    assert not T.check_heavy_ball_momentum_index(*args, n_steps=10).holds
    assert T.check_heavy_ball_momentum_index(*args, index="backward", n_steps=10).holds


@pytest.mark.parametrize("beta, grows", [(0.5, True), (0.99, True), (0.0, False), (-0.5, False)])
def test_momentum_attention_weights_grow_with_distance(beta, grows):
    """(13)'s weight (1 - beta^(d+1))/(1 - beta) at distance d, by hand: increasing in d for 0 <
    beta < 1 (opposite to local attention), flat at beta = 0, alternating for beta < 0; the check
    measures it from (12)."""
    d = np.arange(16)
    w = (1 - beta ** (d + 1)) / (1 - beta)
    assert (bool(np.all(np.diff(w) > 0))) == grows
    assert T.check_attention_reweighting(beta, 16).holds == grows


def test_verify_has_at_least_80_rows():
    assert len(T.CLAIMS) >= 80


@settings(max_examples=5, deadline=None)
@given(
    order=st.sampled_from([3, 4]),
    omega=st.floats(0.5, 3),
    d=st.integers(1, 4),
    seed=st.integers(0, 2**16),
)
def test_csaode_eq10_over_its_range(order, omega, d, seed):
    """Range: y' = W y + tanh(y + b) + sin(omega t), any W, b, y0: the Udwadia-Farahani stages
    keep the order (and equal dk.solve's ARK); the printed stages do not (order ~1 once F depends
    on t)."""
    rng = np.random.default_rng(seed)
    W, b, y0 = (
        rng.standard_normal((d, d)) * 0.7 / np.sqrt(d),
        rng.standard_normal(d),
        rng.standard_normal(d),
    )
    assert T.check_ark_stage_form(W, b, y0, order=order, omega=omega, form="udwadia_farahani").holds
    assert not T.check_ark_stage_form(W, b, y0, order=order, omega=omega).holds


@settings(max_examples=15, deadline=None)
@given(
    n=st.integers(1, 5), mu=st.floats(0.05, 0.95), s=st.floats(0.1, 1.0), seed=st.integers(0, 2**16)
)
def test_momentum_rnn_eq3_over_its_range(n, mu, s, seed):
    """Range: A PSD, any b, x0, mu in [0.05, 0.95), s in [0.1, 1]: the corrected (3) (gradient at
    x_{t-1}, p_0 = 0) is heavy ball from t = 1 on; the printed (3) is not (its x_0 = 0, A = 0
    corner aside)."""
    rng = np.random.default_rng(seed)
    q = np.linalg.qr(rng.standard_normal((n, n)))[0]
    A = (q * rng.uniform(0.1, 2, n)) @ q.T
    A = (A + A.T) / 2
    b, x0 = rng.standard_normal(n), rng.standard_normal(n)
    assert T.check_momentum_gd_form(A, b, x0, mu, s, gradient_at="x_{t-1}", p0="zero").holds
    assert not T.check_momentum_gd_form(A, b, x0, mu, s).holds


def test_first_order_range_refuses_what_culvers_test_cannot_decide():
    """M = N(0, 1) + 2 I from seed 38646 (n = 4): eigenvalue -3.8e-3 beside 4.7, so M^2 has 1.5e-5 against
    ||M^2|| ~ 22, inside Culver's rounding radius 1e-5 ||M^2||: a ValueError naming M, not a false violation."""  # noqa: E501
    M = np.random.default_rng(38646).standard_normal((4, 4)) + 2 * np.eye(4)
    with pytest.raises(ValueError, match="M must be far enough from singular"):
        T.check_first_order_range(M)
