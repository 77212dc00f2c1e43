"""dk.theory: Momentum ResNets (Prop. 4, Thms. 1-2, lambda_eps, Props. 2-8, inversion, memory,
App. E) and MomentumRNN ((11)-(15)). Holds on generated instances; says holds=False on planted
violations."""

import mpmath
import numpy as np
import pytest
from scipy.linalg import block_diag as scipy_block_diag
from hypothesis import given, settings, strategies as st

import dynkit as dk
from dynkit.theory import momentum_resnet, representation
from dynkit.theory._core import random_matrices, single_threaded_blas

seeds = st.integers(0, 2**31 - 1)


@pytest.fixture(autouse=True, scope="module")
def _one_blas_thread():
    # tiny batched matrices: threaded OpenBLAS only adds contention on the shared machine
    with single_threaded_blas():
        yield


# ------------------------------------------------------------------------------------ Psi_eps


@settings(max_examples=10, deadline=None)
@given(seed=seeds, n=st.integers(1, 12), cond=st.sampled_from([0.0, 3.0]), eps=st.floats(0.1, 10.0))
def test_psi_series_matches_expm_and_ode(seed, n, cond, eps):
    rng = np.random.default_rng(seed)
    theta = random_matrices(rng, 2, n, log10_cond=cond, scale=3.0) * rng.choice([-1, 1], (2, 1, 1))
    assert dk.theory.check_psi_series(theta, eps).holds


def test_psi_series_complex_eigenvalues_scalar_and_closed_form():
    # non-symmetric theta with complex eigenvalues, and the scalar closed form of Prop. 8:
    # theta = -(pi^2 eps + 1/(4 eps)) gives Psi = -exp(-1/(2 eps))
    rotation = np.array([[0.0, -2.0], [2.0, -0.3]])
    assert dk.theory.check_psi_series(rotation, 0.7).holds
    eps = 0.5
    theta = np.array([[-(np.pi**2 * eps + 1 / (4 * eps))]])
    np.testing.assert_allclose(
        dk.theory.psi_eps_series(theta, eps), -np.exp(-1 / (2 * eps)), rtol=1e-10
    )


def _psi_reference(theta: float, eps: float) -> float:
    """Independent of dynkit: x(1) of eps x'' + x' = theta x, x(0) = 1, x'(0) = 0, from the
    characteristic roots r = (-1 +- sqrt(1 + 4 eps theta)) / (2 eps) in 60-digit mpmath: x = (r2
    e^{r1} - r1 e^{r2}) / (r2 - r1)."""
    with mpmath.workdps(60):
        t, e = mpmath.mpf(theta), mpmath.mpf(eps)
        root = mpmath.sqrt(mpmath.mpc(1 + 4 * e * t))
        r1, r2 = (-1 + root) / (2 * e), (-1 - root) / (2 * e)
        return float(mpmath.re((r2 * mpmath.exp(r1) - r1 * mpmath.exp(r2)) / (r2 - r1)))


# issue 22: the plain float64 series lost all digits here (residual 2.3e-4 at theta = -1000, eps =
# 1; relative error 5e4 at theta = -50, eps = 0.01; inf at theta = 300, eps = 0.01) while Prop. 4 is
# true
@pytest.mark.parametrize(
    "theta, eps",
    [
        (-1000.0, 1.0),
        (-100.0, 0.1),
        (-50.0, 0.01),
        (300.0, 0.01),
        (-1e4, 0.1),
        (1e4, 1.0),
        (5.0, 1e-3),
        (-5.0, 1e-3),
        (3.0, 1e3),
        (-0.26, 1.0),
    ],
)
def test_psi_series_keeps_its_accuracy_at_large_theta_over_eps(theta, eps):
    """Tolerance 1e-12 relative: the doubled-back series is good to ~1e-13 here (measured); the
    old sum's errors were 1e-4 to inf."""
    ref = _psi_reference(theta, eps)
    got = dk.theory.psi_eps_series(np.array([[theta]]), eps)[0, 0]
    assert abs(got - ref) <= 1e-12 * abs(ref), (got, ref)
    result = dk.theory.check_psi_series(
        np.array([[theta]]), eps, ode=abs(theta / eps) <= 1e4 and eps >= 0.1
    )
    assert result.holds, result.message


@settings(max_examples=10, deadline=None)
@given(
    seed=seeds,
    log_theta=st.floats(-2, 4),
    log_eps=st.floats(-3, 3),
    sign=st.sampled_from([-1.0, 1.0]),
)
def test_psi_series_against_mpmath_over_the_range(seed, log_theta, log_eps, sign):
    """For all eps > 0 and scalar theta where Psi is a float64 number: series = 60-digit x(1) to
    1e-11 relative."""
    theta, eps = sign * 10**log_theta, 10**log_eps
    ref = _psi_reference(theta, eps)
    if not np.isfinite(ref) or abs(ref) > 1e300 or abs(ref) < 1e-300:
        return  # outside float64, not outside the proposition
    got = dk.theory.psi_eps_series(np.array([[theta]]), eps)[0, 0]
    assert abs(got - ref) <= 1e-11 * abs(ref), (theta, eps, got, ref)


@settings(max_examples=6, deadline=None)
@given(seed=seeds, n=st.integers(2, 12))
def test_psi_series_matrices_with_large_theta_over_eps(seed, n):
    """Non-normal matrices with ||theta / eps|| up to 1e5, negative and positive: the check
    holds."""
    rng = np.random.default_rng(seed)
    eps = 10 ** rng.uniform(-2, 0, 2)
    theta = (
        random_matrices(rng, 2, n, log10_cond=4, scale=1.0)
        * (eps * 10 ** rng.uniform(2, 5, 2))[:, None, None]
        * rng.choice([-1, 1], (2, 1, 1))
    )
    theta = (
        theta * np.minimum(1, (360000 * eps + 600) / np.abs(theta).sum(-1).max(-1))[:, None, None]
    )  # finite Psi
    assert dk.theory.check_psi_series(theta, eps, ode=False).holds


def test_psi_series_detects_a_dropped_term(monkeypatch):
    original = representation.psi_eps_series
    # dropping the e^{-1/(2 eps)} prefactor's partner term: use the first-order exponential instead
    monkeypatch.setattr(
        representation, "psi_eps_series", lambda theta, eps: original(theta, eps) * (1 + 1e-5)
    )
    assert not dk.theory.check_psi_series(np.array([[0.3]]), 1.0).holds
    # and at large |theta / eps| (where the check is now accurate enough to see a 1e-6 error)
    monkeypatch.setattr(
        representation, "psi_eps_series", lambda theta, eps: original(theta, eps) * (1 + 1e-6)
    )
    assert not dk.theory.check_psi_series(np.array([[-1000.0]]), 1.0, ode=False).holds


# ------------------------------------------------------------------------------------ lambda_eps


def test_lambda_eps_is_the_global_minimum_by_brute_force():
    """Independent of the implementation: a 200k-point mpmath-free grid of G_eps over (0, 60]
    plus mpmath polishing of the best point; for small eps the minimum is not at the first lobe
    of cos."""
    for eps in [0.01, 0.1, 1.0, 100.0]:
        c = 1 / (2 * eps)
        a = np.linspace(1e-6, 60, 200_001)
        g = np.exp(-c) * (np.cos(a) + c * np.sin(a) / a)
        with mpmath.workdps(30):
            cm = 1 / (2 * mpmath.mpf(eps))
            best = mpmath.findroot(
                lambda x: -mpmath.sin(x) + cm * (x * mpmath.cos(x) - mpmath.sin(x)) / x**2,
                a[np.argmin(g)],
            )
            value = float(mpmath.exp(-cm) * (mpmath.cos(best) + cm * mpmath.sin(best) / best))
        # accuracy claimed in the docstring: ~1e-15 relative
        assert dk.theory.lambda_eps(eps) == pytest.approx(value, rel=1e-13)
        assert float(dk.theory.lambda_eps_mp(eps)) == pytest.approx(value, rel=1e-13)


def test_lambda_eps_limits_and_monotonicity():
    eps = np.logspace(-2, 3, 60)
    lam = dk.theory.lambda_eps(eps)
    assert np.all(np.diff(lam) <= 1e-15)  # non-increasing
    assert abs(dk.theory.lambda_eps(1e-2)) < 1e-15  # -> 0 as eps -> 0 (it is ~ -2e-21)
    assert dk.theory.lambda_eps(1e3) == pytest.approx(-1, abs=1e-3)  # -> -1 as eps -> inf
    assert dk.theory.check_lambda_eps(eps[::6]).holds


def test_lambda_eps_bad_eps():
    for bad in (0.0, -1.0, np.nan):
        with pytest.raises(ValueError, match="eps"):
            dk.theory.lambda_eps(bad)


# ------------------------------------------------------------------------------------ Theorems 1 /
# 2


def _conj(rng, blocks, n):
    V = random_matrices(rng, 1, n, log10_cond=1.0)[0]
    return V @ blocks @ np.linalg.inv(V)


@pytest.mark.parametrize("eps", [0.3, 1.0, 5.0])
def test_is_representable_theorem_1_and_2(eps):
    rng = np.random.default_rng(0)
    lam = dk.theory.lambda_eps(eps)
    below = 2 * lam - 0.3
    cases = [
        (np.diag([below, 0.5, 1.2]), False),  # single eigenvalue below lambda_eps
        (np.diag([below, below, 0.5]), True),  # paired
        (np.diag([lam / 2, 0.5]), True),  # negative but above lambda_eps
        # lambda_eps to rounding, then a similarity: which side the eigenvalue lies on is within
        # rounding, so "cannot decide" (issue 32: a confident True could be wrong by 1e-16)
        (np.diag([lam, 0.5]), None),
        (np.array([[below, 1, 0], [0, below, 0], [0, 0, 1]]), False),  # one Jordan block (Thm. 2)
        (np.kron(np.eye(2), np.array([[below, 1], [0, below]])), True),  # two equal Jordan blocks
        (np.array([[below, 1, 0], [0, below, 0], [0, 0, below]]), False),  # blocks of sizes 2 and 1
    ]
    for D, expected in cases:
        decision = dk.theory.is_representable(_conj(rng, D, D.shape[0]), eps)
        assert decision.representable is expected, (D, decision.reason)
        assert decision.reason


@pytest.mark.parametrize("delta", [1e-3, 1e-6, 1e-7, 1e-9, 1e-11])
def test_close_distinct_eigenvalues_below_lambda_eps_are_not_a_pair(delta):
    """Issue 22: diag(lambda_eps - 0.05, lambda_eps - 0.05 + delta) has two distinct simple
    eigenvalues below lambda_eps, which Theorem 1 rules out; a fixed 1e-5 clustering called it
    representable for delta <= 1e-6. The eigenvalues of a diagonal matrix are exact (condition
    number 1): any delta above ~1e-11 is resolved."""
    lam = dk.theory.lambda_eps(1.0)
    decision = dk.theory.is_representable(np.diag([lam - 0.05, lam - 0.05 + delta]), 1.0)
    assert decision.representable is False, decision.reason
    if delta >= 1e-7:  # and after a similarity of condition ~10 (eigenvalue condition numbers ~10)
        rng = np.random.default_rng(3)
        V = random_matrices(rng, 1, 2, log10_cond=1.0)[0]
        D = V @ np.diag([lam - 0.05, lam - 0.05 + delta]) @ np.linalg.inv(V)
        assert dk.theory.is_representable(D, 1.0).representable is False


def test_is_representable_says_when_it_cannot_decide():
    """Eigenvalues 1e-13 apart (within 1000x their rounding uncertainty): distinct or a double
    eigenvalue cannot be told apart, and the answer depends on it: None, with the reason. Exactly
    equal: a pair (representable)."""
    lam = dk.theory.lambda_eps(1.0)
    decision = dk.theory.is_representable(np.diag([lam - 0.05, lam - 0.05 + 1e-13]), 1.0)
    assert decision.representable is None and "cannot decide" in decision.reason
    assert dk.theory.is_representable(np.diag([lam - 0.05, lam - 0.05]), 1.0).representable is True
    # the same separation above lambda_eps does not matter: decided
    assert dk.theory.is_representable(np.diag([0.5, 0.5 + 1e-13]), 1.0).representable is True


@settings(max_examples=25, deadline=None)
@given(
    seed=seeds,
    eps=st.floats(0.2, 10.0),
    log_delta=st.floats(-7, -2),
    kind=st.sampled_from(["distinct", "pair", "jordan", "jordan_pair"]),
    extra=st.integers(0, 4),
)
def test_jordan_structure_below_lambda_eps_on_adversarial_instances(
    seed, eps, log_delta, kind, extra
):
    """For all conditionings up to 10^1.5 and separations down to 1e-7: distinct close
    eigenvalues and a single Jordan block below lambda_eps are not representable; an exact pair
    and two equal Jordan blocks are."""
    rng = np.random.default_rng(seed)
    lam = dk.theory.lambda_eps(eps)
    x = lam - 0.05 - rng.uniform(0, 1)
    block = {
        "distinct": np.diag([x, x + 10**log_delta]),
        "pair": np.diag([x, x]),
        "jordan": np.array([[x, 1.0], [0.0, x]]),
        "jordan_pair": np.kron(np.eye(2), np.array([[x, 1.0], [0.0, x]])),
    }[kind]
    rest = np.diag(
        rng.uniform(0.3, 3.0, extra) + 0.5 * np.arange(extra)
    )  # above lambda_eps, 0.5 apart
    D = scipy_block_diag(block, rest) if extra else block
    n = D.shape[0]
    V = random_matrices(rng, 1, n, log10_cond=1.5)[0]
    decision = dk.theory.is_representable(V @ D @ np.linalg.inv(V), eps)
    assert decision.representable is (kind in ("pair", "jordan_pair")), decision.reason


def test_is_representable_eps_zero_is_culver():
    assert dk.theory.is_representable(np.diag([-1.0, -1.0, 2.0]), 0).representable is True
    assert dk.theory.is_representable(np.diag([-1.0, 2.0]), 0).representable is False
    assert dk.theory.is_representable(np.diag([0.0, 2.0]), 0).representable is False  # singular
    # with eps > 0, a single -lambda above lambda_eps and 0 are representable
    assert dk.theory.is_representable(np.diag([0.0, 2.0]), 1.0).representable is True


@settings(max_examples=15, deadline=None)
@given(seed=seeds, n=st.integers(1, 8))
def test_small_eps_reduces_to_culver(seed, n):
    """eps -> 0: lambda_eps -> 0-, so away from [lambda_eps, 0] Theorems 1/2 decide like Culver's
    criterion."""
    rng = np.random.default_rng(seed)
    kinds = rng.integers(0, 3, n)
    values = np.where(kinds == 0, rng.uniform(0.1, 3, n), -rng.choice([0.5, 1.0, 2.0], n))
    D = np.diag(values)
    if rng.uniform() < 0.5 and n >= 2:  # force a pair
        D[1, 1] = D[0, 0]
    D = _conj(rng, D, n)
    assert (
        dk.theory.is_representable(D, 0.02).representable
        is dk.theory.is_representable(D, 0).representable
    )


@settings(max_examples=10, deadline=None)
@given(seed=seeds, n=st.integers(1, 8), eps=st.floats(0.2, 10.0))
def test_momentum_logarithm_round_trip(seed, n, eps):
    from dynkit.theory.claims.momentum_resnets import _random_representable

    rng = np.random.default_rng(seed)
    D, ok = _random_representable(rng, n, eps)
    decision = dk.theory.is_representable(D, eps)
    assert decision.representable is ok, decision.reason
    if ok:
        theta = dk.theory.momentum_logarithm(D, eps)
        assert np.isrealobj(theta)
        assert dk.theory.check_momentum_logarithm(D, eps).holds
    else:
        with pytest.raises(ValueError, match="not representable"):
            dk.theory.momentum_logarithm(D, eps)


@pytest.mark.parametrize("eps", [0.3, 1.0, 5.0])
@pytest.mark.parametrize(
    "case",
    [
        "jordan_positive",
        "jordan3",
        "jordan_negative_above",
        "pair_below",
        "complex_jordan",
        "mixed",
        "at_lambda_eps",
    ],
)
def test_momentum_logarithm_jordan_blocks(eps, case):
    """Theorem 2's construction: D with Jordan blocks gets a real theta with Psi_eps(theta) = D (and
    lambda_eps itself, with odd multiplicity, is reached from the real minimiser)."""
    lam = dk.theory.lambda_eps(eps)
    below = 2 * lam - 0.3
    R = np.array([[0.5, -1.2], [1.2, 0.5]])
    pair_below = np.kron(np.eye(2), np.array([[below, 1], [0, below]]))
    J = {
        "jordan_positive": np.array([[0.7, 1, 0], [0, 0.7, 0], [0, 0, 1.5]]),
        "jordan3": np.array([[1.3, 1, 0], [0, 1.3, 1], [0, 0, 1.3]]),
        "jordan_negative_above": np.array([[lam / 2, 1], [0, lam / 2]]),
        "pair_below": pair_below,
        "complex_jordan": np.block([[R, np.eye(2)], [np.zeros((2, 2)), R]]),
        "mixed": scipy_block_diag(pair_below, R, [[2.0]]),
        "at_lambda_eps": np.diag([lam, lam, lam, 0.5]),
    }[case]  # three times the real minimum itself
    D = _conj(np.random.default_rng(1), J, J.shape[0])
    theta = dk.theory.momentum_logarithm(D, eps)
    assert np.isrealobj(theta)
    result = dk.theory.check_momentum_logarithm(D, eps)
    assert result.holds, result.message


def test_representation_claim_detects_a_coarse_clustering(monkeypatch):
    """Planted: disks 1e9 times too wide merge the close distinct eigenvalues into a pair (the
    old behaviour); the registry's decision part must fail on its close_distinct instances."""
    from dynkit.theory.claims import momentum_resnets

    monkeypatch.setattr(representation, "RADIUS_FACTOR", 1e10)
    lam = dk.theory.lambda_eps(1.0)
    assert (
        dk.theory.is_representable(np.diag([lam - 0.05, lam - 0.05 + 1e-6]), 1.0).representable
        is not False
    )
    result = momentum_resnets._representation(60, np.random.default_rng(11))
    assert not result.details["parts"]["representation.decision"].holds


def test_representation_checks_detect_wrong_answers(monkeypatch):
    eps = 1.0
    below = 2 * dk.theory.lambda_eps(eps) - 0.3
    D = np.diag([below, 0.5])  # not representable
    assert dk.theory.check_representability(D, eps, expected=False).holds
    assert not dk.theory.check_representability(D, eps, expected=True).holds
    # a logarithm built with a perturbed inverse of f_eps must be caught
    original = representation._f_inverse
    monkeypatch.setattr(
        representation, "_f_inverse", lambda y, e, t: original(y, e, t) * (1 + 1e-6)
    )
    assert not dk.theory.check_momentum_logarithm(np.diag([0.5, 2.0]), eps).holds


def test_random_theta_maps_are_representable():
    """Necessity side of Theorem 1: any Psi_eps(theta) must be classed representable."""
    rng = np.random.default_rng(5)
    for n in (1, 2, 5):
        theta = rng.standard_normal((n, n)) * 2
        D = dk.theory.psi_eps(theta, 0.8)
        assert dk.theory.is_representable(D, 0.8).representable is True


# ------------------------------------------------------------------------------------ Props. 2-8


def _net(seed, n, count=3):
    rng = np.random.default_rng(seed)
    return (
        rng,
        random_matrices(rng, count, n, log10_cond=1, scale=1.5),
        rng.standard_normal((count, n)),
        rng.standard_normal((count, n)),
    )


def test_limits_hold():
    rng, W, b, x0 = _net(0, 3)
    v0 = rng.standard_normal(x0.shape)
    small = dk.theory.check_small_eps_limit(W, b, x0, v0)
    assert small.holds and np.all(small.details["errors"][-1] < small.details["errors"][0])
    assert dk.theory.check_large_eps_limit(W, b, x0, v0).holds
    assert dk.theory.check_first_order_embedding(W, b, x0, 0.4).holds
    assert dk.theory.check_free_velocity(lambda x: -(x**3) + 2, x0).holds
    assert dk.theory.check_prop8_closed_form(x0, np.array([0.2, 1.0, 7.0])).holds


def test_small_eps_limit_detects_a_non_convergent_family(monkeypatch):
    rng, W, b, x0 = _net(1, 2)
    original = momentum_resnet._second_order
    # an offset that does not shrink with eps: no convergence, slope ~ 0
    monkeypatch.setattr(momentum_resnet, "_second_order", lambda *a, **k: original(*a, **k) + 0.1)
    assert not dk.theory.check_small_eps_limit(W, b, x0, np.zeros_like(x0)).holds


def test_first_order_embedding_needs_v0_equal_f_x0():
    rng, W, b, x0 = _net(2, 3)
    assert dk.theory.check_first_order_embedding(W, b, x0, 0.5).holds
    assert not dk.theory.check_first_order_embedding(W, b, x0, 0.5, v0=np.zeros_like(x0)).holds


def test_negative_scaling_obstruction():
    result = dk.theory.check_negative_scaling_obstruction(
        np.array([-1.0, -2.5]), np.array([0.5, 20.0]), n_cubic=50
    )
    assert result.holds and np.all(result.details["margin"] > 0)
    # lam above lambda_eps is reached by a linear f: the search finds it, the "claim" fails
    lam = dk.theory.lambda_eps(1.0)
    assert not dk.theory.check_negative_scaling_obstruction(lam / 2, 1.0, n_cubic=20).holds


# ------------------------------------------------------------------------------------ the network


@settings(max_examples=8, deadline=None)
@given(
    seed=seeds,
    n=st.integers(1, 12),
    depth=st.integers(1, 40),
    gamma=st.sampled_from([0.5, 0.9, 0.99]),
)
def test_inversion_memory_backprop_hold(seed, n, depth, gamma):
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((depth, 2, n, n)) / np.sqrt(n)
    b = rng.standard_normal((depth, 2, n))
    x0, v0 = rng.standard_normal((2, n)), rng.standard_normal((2, n))
    assert dk.theory.check_inversion(x0, v0, W, b, gamma).holds
    assert dk.theory.check_memory_bits(x0, v0, W, b, gamma).holds
    assert dk.theory.check_backprop_formula(x0, v0, W, b, gamma).holds


def test_network_checks_detect_perturbations(monkeypatch):
    rng = np.random.default_rng(0)
    W, b = rng.standard_normal((20, 2, 3, 3)), rng.standard_normal((20, 2, 3))
    x0, v0 = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    original_inv = momentum_resnet.momentum_inverse
    monkeypatch.setattr(
        momentum_resnet,
        "momentum_inverse",
        lambda x, v, W, b, g: original_inv(x, v, W, b, g * (1 + 1e-6)),
    )
    assert not dk.theory.check_inversion(x0, v0, W, b, 0.9).holds
    original_bp = momentum_resnet.backprop_formula

    def perturbed(*args):  # gradients off by one part in 1e7 must be caught (tolerance 1e-10)
        return tuple(a * (1 + 1e-7) for a in original_bp(*args))

    monkeypatch.setattr(momentum_resnet, "backprop_formula", perturbed)
    assert not dk.theory.check_backprop_formula(x0, v0, W, b, 0.9).holds


def _float_loss_reference(x0, v0, W, b, gamma):
    """Independent of dynkit: (2) forward and (3) backward written out here in float64; bits lost =
    log2(max reconstruction error / (1 + max |x0|, |v0|) / machine epsilon), at least 0."""
    x, v = x0.copy(), v0.copy()
    for Wn, bn in zip(W, b):
        v = gamma * v + (1 - gamma) * np.tanh(np.einsum("...ij,...j->...i", Wn, x) + bn)
        x = x + v
    for Wn, bn in zip(W[::-1], b[::-1]):
        x = x - v
        v = (v - (1 - gamma) * np.tanh(np.einsum("...ij,...j->...i", Wn, x) + bn)) / gamma
    err = np.maximum(np.abs(x - x0).max(-1), np.abs(v - v0).max(-1)) / (
        1 + np.maximum(np.abs(x0).max(-1), np.abs(v0).max(-1))
    )
    return np.log2(np.maximum(err / np.finfo(float).eps, 1.0))


def test_inversion_float_part_tests_the_bits_lost_per_layer(monkeypatch):
    """Issue 22: at gamma = 0.1, depth 40 the float64 reconstruction error is ~1e23 and the old
    tolerance (64 eps depth gamma^-depth ~ 1e28) could never fail. Sect. 3.2: about log2(1/gamma)
    bits lost a layer, 40 log2(10) = 133 bits. The measured loss (independent reference above) is
    within the check's band, and the check fails for an inverse that loses 2^20 times more, or
    one that loses nothing (the paper says 133 bits)."""
    rng = np.random.default_rng(5)
    W, b = rng.standard_normal((40, 3, 4, 4)) / 2, rng.standard_normal((40, 3, 4))
    x0, v0 = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    lost = _float_loss_reference(x0, v0, W, b, 0.1)
    assert np.all(np.abs(lost - 40 * np.log2(10)) < 30), lost
    np.testing.assert_allclose(momentum_resnet.float_bits_lost(x0, v0, W, b, 0.1), lost, atol=1e-9)
    result = dk.theory.check_inversion(x0, v0, W, b, 0.1)
    assert result.holds, result.message
    original = momentum_resnet.momentum_inverse
    monkeypatch.setattr(
        momentum_resnet,
        "momentum_inverse",  # the same reconstruction error, 2^20 times larger
        lambda *a: tuple(start + 2.0**20 * (r - start) for r, start in zip(original(*a), (x0, v0))),
    )
    assert not dk.theory.check_inversion(x0, v0, W, b, 0.1).holds
    monkeypatch.setattr(
        momentum_resnet, "momentum_inverse", lambda xK, vK, W, b, g: (x0.copy(), v0.copy())
    )
    assert not dk.theory.check_inversion(
        x0, v0, W, b, 0.1
    ).holds  # loses nothing: not what Sect. 3.2 says


@settings(max_examples=8, deadline=None)
@given(
    seed=seeds,
    n=st.integers(1, 12),
    depth=st.integers(1, 60),
    gamma=st.sampled_from([0.1, 0.3, 0.5, 0.9, 0.99]),
)
def test_inversion_bits_band_holds_adversarially(seed, n, depth, gamma):
    """Across depth 1-60, gamma 0.1-0.99, n 1-12, weights up to 2x the registry's: the float band
    and the bit-exact buffer (Python-integer buffer past 62 bits) both hold."""
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((depth, 2, n, n)) * rng.uniform(0.1, 2) / np.sqrt(n)
    b = rng.standard_normal((depth, 2, n))
    x0, v0 = rng.standard_normal((2, n)), rng.standard_normal((2, n))
    result = dk.theory.check_inversion(x0, v0, W, b, gamma)
    assert result.holds, result.message


@pytest.mark.parametrize("gamma", [0.5, 0.95, 0.99])
def test_memory_bits_detects_a_buffer_that_keeps_nothing(monkeypatch, gamma):
    """The old check's slack (2 log2(d) + 2 bits) let a buffer that keeps nothing pass at gamma =
    0.95 and 0.99; the primed buffer measures the bits to 1e-9, so an empty one (or one digit
    short) is caught at any gamma."""
    rng = np.random.default_rng(4)
    W, b = rng.standard_normal((5, 2, 3, 3)), rng.standard_normal((5, 2, 3))
    x0, v0 = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    assert dk.theory.check_memory_bits(x0, v0, W, b, gamma).holds
    original = momentum_resnet._exact_layers

    def keeps_nothing(x, v, W, b, gamma, buf=None):
        for x_, v_, _ in original(x, v, W, b, gamma, buf):
            yield x_, v_, buf

    monkeypatch.setattr(momentum_resnet, "_exact_layers", keeps_nothing)
    assert not dk.theory.check_memory_bits(x0, v0, W, b, gamma).holds

    def one_digit_short(x, v, W, b, gamma, buf=None):
        for k, (x_, v_, buf_) in enumerate(original(x, v, W, b, gamma, buf)):
            yield x_, v_, (buf_ // 2 if k == W.shape[0] - 1 else buf_)

    monkeypatch.setattr(momentum_resnet, "_exact_layers", one_digit_short)
    assert not dk.theory.check_memory_bits(x0, v0, W, b, gamma).holds


def test_network_bad_gamma():
    with pytest.raises(ValueError, match="gamma"):
        dk.theory.check_inversion(np.ones(2), np.ones(2), np.ones((1, 2, 2)), np.ones((1, 2)), 1.0)


# ------------------------------------------------------------------------------------ MomentumRNN


@settings(max_examples=8, deadline=None)
@given(
    seed=seeds,
    n=st.integers(1, 12),
    T=st.integers(1, 6),
    act=st.sampled_from(["tanh", "sigmoid"]),
    mu=st.floats(0, 0.95),
)
def test_momentum_rnn_holds(seed, n, T, act, mu):
    rng = np.random.default_rng(seed)
    U = random_matrices(rng, 2, n, log10_cond=2, scale=1.5)
    W, x = rng.standard_normal((2, n, 3)), rng.standard_normal((2, T, 3))
    h = rng.uniform(-0.5, 0.5, (2, n))
    assert dk.theory.check_momentum_rnn(
        U, W, x, h, 0.3 * rng.standard_normal((2, n)), mu, 0.5, activation=act
    ).holds
    assert dk.theory.check_rnn_jacobian(
        U, W, x, h + (0.5 if act == "sigmoid" else 0), activation=act
    ).holds


def test_momentum_rnn_detects_perturbed_cell_and_factor(monkeypatch):
    from dynkit.theory import rnn

    rng = np.random.default_rng(3)
    U, W, x = (
        rng.standard_normal((2, 4, 4)) / 2,
        rng.standard_normal((2, 4, 3)),
        rng.standard_normal((2, 5, 3)),
    )
    h, v0 = rng.uniform(-0.5, 0.5, (2, 4)), 0.3 * rng.standard_normal((2, 4))
    args = (U, W, x, h, v0, 0.6, 0.5)
    assert dk.theory.check_momentum_rnn(*args).holds
    with monkeypatch.context() as m:  # (15) without the mu Sigma_k term: the plain-RNN factor
        m.setattr(rnn, "factor15", lambda dsig, dinv, U, mu: dsig.unsqueeze(-1) * U)
        result = dk.theory.check_momentum_rnn(*args)
        assert not result.holds and not result.details["parts"]["momentum_rnn.factor15"].holds
    original = rnn.cell14
    with monkeypatch.context() as m:  # (14) with mu h_{t-2} dropped: no longer (11)
        m.setattr(
            rnn,
            "cell14",
            lambda U, Wx, hp, hc, mu, s, sig, inv: original(U, Wx, 0 * hp, hc, mu, s, sig, inv),
        )
        result = dk.theory.check_momentum_rnn(*args)
        assert not result.details["parts"]["momentum_rnn.rewrite"].holds


def test_momentum_rnn_jacobian_product_is_not_the_total_derivative():
    """Measured: the product of (15)'s factors differs from dh_T/dh_0 of (14) once T >= 2 and mu
    > 0; it is exact for mu = 0 (then (14) is the plain cell) and for a single step."""
    rng = np.random.default_rng(0)
    U, W, x = (
        rng.standard_normal((2, 4, 4)) / 2,
        rng.standard_normal((2, 4, 3)),
        rng.standard_normal((2, 5, 3)),
    )
    h, v0 = rng.uniform(-0.5, 0.5, (2, 4)), 0.3 * rng.standard_normal((2, 4))
    assert not dk.theory.check_momentum_jacobian_product(U, W, x, h, v0, 0.6, 0.5).holds
    assert dk.theory.check_momentum_jacobian_product(U, W, x, h, v0, 0.0, 0.5).holds
    assert dk.theory.check_momentum_jacobian_product(U, W, x[:, :1], h, v0, 0.6, 0.5).holds


def test_companion_blocks_are_the_sympy_derivation_and_match_autograd():
    """Issue 22: the correction of (15) is a product of 2n x 2n companion blocks. (i) the block
    dynkit multiplies (rnn.companion15) equals the sympy Jacobian of (14) evaluated at random
    numbers (n = 2, tanh); (ii) the top-left block of the product equals autograd's dh_T/dh_0
    (tolerance 1e-9: float64, T <= 8) where the paper's product of D^(U + mu Sigma) does not."""
    import sympy as sp
    import torch
    from dynkit.theory import rnn

    d = dk.symbolic.DERIVATIONS["momentum_rnn_jacobian"]()
    rng = np.random.default_rng(0)
    U, hk, hp, wx = (
        rng.standard_normal((2, 2)) / 2,
        rng.uniform(-0.5, 0.5, 2),
        rng.uniform(-0.5, 0.5, 2),
        rng.standard_normal(2),
    )
    mu, s_ = 0.6, 0.4
    values = {sp.Symbol(f"U_{i + 1}{j + 1}"): U[i, j] for i in range(2) for j in range(2)}
    values.update({sp.Symbol(f"h_k{i + 1}"): hk[i] for i in range(2)})
    values.update({sp.Symbol(f"h_km1_{i + 1}"): hp[i] for i in range(2)})
    values.update({sp.Symbol(f"wx_{i + 1}"): wx[i] for i in range(2)})
    values.update({sp.Symbol("mu", positive=True): mu, sp.Symbol("s", positive=True): s_})
    concrete = d.result.replace(sp.Function("sigma"), sp.tanh).replace(
        sp.Function("sigma_inv"), sp.atanh
    )
    sym = np.array(concrete.subs(values).doit().evalf(), dtype=float)
    pre = U @ (hk - mu * hp) + mu * np.arctanh(hk) + s_ * wx
    block = rnn.companion15(
        torch.tensor(1 - np.tanh(pre) ** 2), torch.tensor(1 / (1 - hk**2)), torch.tensor(U), mu
    ).numpy()
    np.testing.assert_allclose(block, sym, atol=1e-12)
    U3, W3 = random_matrices(rng, 3, 4, scale=1.5), rng.standard_normal((3, 4, 2))
    x3, h3, v3 = (
        rng.standard_normal((3, 6, 2)),
        rng.uniform(-0.5, 0.5, (3, 4)),
        0.3 * rng.standard_normal((3, 4)),
    )
    assert dk.theory.check_momentum_jacobian_product(
        U3, W3, x3, h3, v3, mu, s_, form="companion"
    ).holds
    assert not dk.theory.check_momentum_jacobian_product(
        U3, W3, x3, h3, v3, mu, s_, form="paper"
    ).holds


def test_rnn_jacobian_literal_transpose_mismatch_is_reported():
    rng = np.random.default_rng(1)
    U = rng.standard_normal((1, 4, 4))
    res = dk.theory.check_rnn_jacobian(
        U,
        rng.standard_normal((1, 4, 2)),
        rng.standard_normal((1, 3, 2)),
        rng.uniform(-0.5, 0.5, (1, 4)),
    )
    assert res.holds and res.details["literal_mismatch"].max() > 1e-3
    sym = U + np.swapaxes(U, -1, -2)
    res = dk.theory.check_rnn_jacobian(
        sym,
        rng.standard_normal((1, 4, 2)),
        rng.standard_normal((1, 3, 2)),
        rng.uniform(-0.5, 0.5, (1, 4)),
    )
    assert res.details["literal_mismatch"].max() < 1e-12


def test_inverse_activation_slope():
    y = np.linspace(-0.999, 0.999, 101)
    res = dk.theory.check_inverse_activation_slope(y, activation="tanh")
    assert res.holds and res.details["min_slope"] == pytest.approx(1.0)  # equality at y = 0
    res = dk.theory.check_inverse_activation_slope((y + 1) / 2, activation="sigmoid")
    assert res.holds and res.details["min_slope"] >= 4 - 1e-12
    with pytest.raises(ValueError, match="open range"):
        dk.theory.check_inverse_activation_slope(np.array([1.0]))
    with pytest.raises(ValueError, match="activation"):
        dk.theory.check_inverse_activation_slope(np.array([0.1]), activation="relu")
