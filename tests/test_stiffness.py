"""dk.diagnostics.stiffness_report: stiff problems flagged, nonstiff ones (even with a large
eigenvalue ratio) not; the figures behind the verdict checked against independent computations."""

import json

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

from dynkit.diagnostics.stiffness import stability_boundary, stiffness_report

torch.set_num_threads(1)


def robertson(t, y):
    return np.array(
        [
            -0.04 * y[0] + 1e4 * y[1] * y[2],
            0.04 * y[0] - 1e4 * y[1] * y[2] - 3e7 * y[1] ** 2,
            3e7 * y[1] ** 2,
        ]
    )


def van_der_pol(mu):
    return lambda t, y: np.array([y[1], mu * ((1 - y[0] ** 2) * y[1] - y[0])])


def linear(A):
    return lambda t, y: A @ y


def arenstorf(t, y):
    mu, mu1 = 0.012277471, 1 - 0.012277471
    x, v, vx, vy = y
    d1, d2 = ((x + mu) ** 2 + v**2) ** 1.5, ((x - mu1) ** 2 + v**2) ** 1.5
    return np.array(
        [
            vx,
            vy,
            x + 2 * vy - mu1 * (x + mu) / d1 - mu * (x - mu1) / d2,
            v - 2 * vx - mu1 * v / d1 - mu * v / d2,
        ]
    )


_P = np.array([[1.0, 2.0], [0.5, 1.5]])  # non-normal eigenvectors
STIFF_LINEAR = _P @ np.diag([-1.0, -1000.0]) @ np.linalg.inv(_P)
# eigenvalues -1e-3 ± 100i and -10: max|Re|/min|Re| = 1e4, yet resolving the oscillation limits the
# step
OSCILLATORY = np.array([[-1e-3, 100.0, 0.0], [-100.0, -1e-3, 0.0], [0.0, 0.0, -10.0]])
HARMONIC = np.array([[0.0, 1.0], [-1.0, 0.0]])

STIFF = {
    "robertson": (robertson, [1.0, 0.0, 0.0], [0.0, 1.0]),
    "van_der_pol_mu1000": (van_der_pol(1000.0), [2.0, 0.0], [0.0, 2.0]),
    "stiff_linear": (linear(STIFF_LINEAR), [1.0, 1.0], [0.0, 2.0]),
}
NONSTIFF = {
    "harmonic": (linear(HARMONIC), [1.0, 0.0], [0.0, 20.0]),
    "arenstorf": (
        arenstorf,
        [0.994, 0.0, 0.0, -2.00158510637908252240537862224],
        [0.0, 17.0652165601579625588917206249],
    ),
    "van_der_pol_mu1": (van_der_pol(1.0), [2.0, 0.0], [0.0, 20.0]),
    "large_imaginary": (linear(OSCILLATORY), [1.0, 1.0, 1.0], [0.0, 2.0]),
}


@pytest.mark.parametrize("name", sorted(STIFF))
def test_stiff_problems_are_flagged(name):
    f, y0, t = STIFF[name]
    report = stiffness_report(f, np.array(y0), t)
    assert report.is_stiff, report.summary()
    # pinned at the boundary: the median step uses at least 80% of dopri5's stability interval
    assert np.median(report.stability_use[len(report.times) // 2 :]) > 0.8


@pytest.mark.parametrize("name", sorted(NONSTIFF))
def test_nonstiff_problems_are_not_flagged(name):
    f, y0, t = NONSTIFF[name]
    report = stiffness_report(f, np.array(y0), t)
    assert not report.is_stiff, report.summary()
    # accuracy keeps every step far inside the stability region (stiff ones sit near 1)
    assert report.stability_use.max() < 0.3


def test_a_large_eigenvalue_ratio_alone_is_not_stiffness():
    f, y0, t = NONSTIFF["large_imaginary"]
    report = stiffness_report(f, np.array(y0), t)
    assert report.stiffness_ratio == pytest.approx(
        1e4, rel=1e-4
    )  # FD Jacobian of a linear f: ~1e-9 rel
    assert not report.is_stiff and "does not make it stiff" in report.reason


@pytest.mark.parametrize("method", ["dopri5", "rkf45", "bosh3"])
def test_every_adaptive_method_separates_stiff_from_nonstiff(method):
    stiff = stiffness_report(linear(STIFF_LINEAR), np.array([1.0, 1.0]), [0.0, 2.0], method=method)
    calm = stiffness_report(linear(HARMONIC), np.array([1.0, 0.0]), [0.0, 10.0], method=method)
    assert stiff.is_stiff and not calm.is_stiff
    assert stiff.method == method


def test_eigenvalues_steps_and_stats_are_the_solves():
    A = STIFF_LINEAR
    report = stiffness_report(linear(A), np.array([1.0, 1.0]), [0.0, 2.0])
    # central differences of a linear f are exact up to round-off (~1e-9 relative here)
    want = np.sort_complex(np.linalg.eigvals(A))
    got = np.sort(report.eigenvalues.real, axis=-1)
    np.testing.assert_allclose(got, np.broadcast_to(want.real, got.shape), rtol=1e-6)
    # the recovered accepted steps tile the interval exactly (up to round-off)
    assert report.step_sizes.sum() == pytest.approx(2.0, rel=1e-12)
    assert len(report.times) == report.stats.n_accepted == report.n_accepted_steps
    np.testing.assert_allclose(report.h_rho, np.abs(report.step_sizes) * 1000.0, rtol=1e-6)


@pytest.mark.parametrize("method", ["dopri5", "rkf45"])
def test_hairer_two_stage_estimate_tracks_the_spectral_radius(method):
    report = stiffness_report(linear(STIFF_LINEAR), np.array([1.0, 1.0]), [0.0, 2.0], method=method)
    ratio = report.hairer_rho / report.spectral_radius
    # once the fast mode has decayed, stage differences lie along the stiff eigenvector: within 1%
    # (rkf45: the last step has no f(t+h, y_new) call, hence NaN there)
    assert np.nanmedian(ratio[len(ratio) // 2 :]) == pytest.approx(1.0, abs=0.01)


def test_bosh3_has_no_two_stages_at_the_same_time():
    report = stiffness_report(linear(HARMONIC), np.array([1.0, 0.0]), [0.0, 1.0], method="bosh3")
    assert np.isnan(report.hairer_rho).all()


def test_user_jacobian_and_decreasing_time():
    report = stiffness_report(
        linear(HARMONIC), np.array([1.0, 0.0]), [5.0, 0.0], jac=lambda t, y: HARMONIC
    )
    np.testing.assert_allclose(
        np.sort(report.eigenvalues.imag, axis=-1), [[-1.0, 1.0]] * len(report.times)
    )
    assert report.step_sizes.sum() == pytest.approx(-5.0, rel=1e-12)
    assert not report.is_stiff and report.stiffness_ratio == 1.0  # all Re λ = 0: no spread


@pytest.mark.parametrize(
    "method, boundary", [("euler", 2.0), ("rk4", 2.785293563), ("bosh3", 2.512745327)]
)
def test_stability_boundary_matches_the_literature(method, boundary):
    # [HW] IV.2 Fig. 2.1: explicit RK of order p = s (p = 1, 3, 4) cross the real axis at these
    # values
    assert stability_boundary(method) == pytest.approx(boundary, abs=1e-8)


# ---- a "learned-looking" torch MLP field: Linear(2, 32) -> tanh -> Linear(32, 2)


def mlp_field(decay_rates, seed=0):
    """W2 tanh(W1 y + b1) + b2 with Jacobian -M at y = 0, M = R diag(decay_rates) R^T."""
    g = np.random.default_rng(seed)
    W1, b1 = g.normal(size=(32, 2)), 0.3 * g.normal(size=32)
    R = np.linalg.qr(g.normal(size=(2, 2)))[0]
    M = R @ np.diag(decay_rates) @ R.T
    W2 = -M @ np.linalg.pinv(np.diag(1 - np.tanh(b1) ** 2) @ W1)
    b2 = -W2 @ np.tanh(b1)
    net = torch.nn.Sequential(
        torch.nn.Linear(2, 32), torch.nn.Tanh(), torch.nn.Linear(32, 2)
    ).double()
    with torch.no_grad():
        for p, v in zip(net.parameters(), (W1, b1, W2, b2)):
            p.copy_(torch.as_tensor(v))

    def jacobian(y):  # analytic, numpy: W2 diag(sech^2(W1 y + b1)) W1
        return W2 @ np.diag(1 - np.tanh(W1 @ y + b1) ** 2) @ W1

    return (lambda t, y: net(y)), jacobian


def test_stiff_mlp_field_is_flagged_and_a_tame_one_is_not():
    y0 = torch.tensor([[0.5, -0.3]], dtype=torch.float64)
    stiff_f, _ = mlp_field([1.0, 2000.0])
    tame_f, _ = mlp_field([1.0, 2.0])
    assert stiffness_report(stiff_f, y0, [0.0, 1.0]).is_stiff
    assert not stiffness_report(tame_f, y0, [0.0, 1.0]).is_stiff


def test_batched_states_give_per_sample_eigenvalues():
    f, jacobian = mlp_field([1.0, 2000.0])
    y0 = torch.tensor([[0.5, -0.3], [0.1, 0.2], [-0.4, 0.4]], dtype=torch.float64)
    report = stiffness_report(f, y0, [0.0, 0.5], batch=True)
    assert report.eigenvalues.shape == (len(report.times), 3, 2)
    for b in range(3):  # at t0 the Jacobian of sample b is the analytic one (jacrev is exact)
        want = np.sort(np.linalg.eigvals(jacobian(y0[b].numpy())).real)
        np.testing.assert_allclose(np.sort(report.eigenvalues[0, b].real), want, rtol=1e-10)
    assert report.is_stiff
    # the batch treated as one flattened system: same verdict, a (6, 6) block-diagonal Jacobian
    flat = stiffness_report(f, y0, [0.0, 0.5])
    assert flat.is_stiff and flat.eigenvalues.shape == (len(flat.times), 6)


def test_report_serialises_and_explains_itself():
    f, y0, t = STIFF["stiff_linear"]
    report = stiffness_report(f, np.array(y0), t)
    d = json.loads(json.dumps(report.to_dict()))
    assert d["is_stiff"] is True and d["stats"]["nfe"] == report.stats.nfe
    assert len(d["eigenvalues"]) == len(report.times) and len(d["eigenvalues"][0][0]) == 2
    assert report.summary().startswith("STIFF") and "stability" in report.reason


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(method="rk4"), "adaptive"),
        (dict(method="nope"), "method"),
        (dict(threshold=0.0), "threshold"),
        (dict(min_run=0), "min_run"),
        (dict(batch=True), "batch"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        stiffness_report(linear(HARMONIC), np.array([1.0, 0.0]), [0.0, 1.0], **kwargs)


@settings(max_examples=10, deadline=None)
@given(slow=st.floats(0.1, 2.0), fast=st.floats(500.0, 5000.0), angle=st.floats(0.1, 1.4))
def test_for_all_diagonalisable_stiff_linear_systems(slow, fast, angle):
    R = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    A = R @ np.diag([-slow, -fast]) @ R.T
    report = stiffness_report(linear(A), np.array([1.0, 1.0]), [0.0, 1.0])
    assert report.is_stiff
    assert report.stiffness_ratio == pytest.approx(fast / slow, rel=1e-5)  # FD of a linear f
    assert report.step_sizes.sum() == pytest.approx(1.0, rel=1e-12)


def test_float32_torch_field():
    stiff_f, _ = mlp_field([1.0, 2000.0])
    net32 = lambda t, y: stiff_f(t, y.double()).float()  # noqa: E731 - a float32 field
    report = stiffness_report(net32, torch.tensor([[0.5, -0.3]]), [0.0, 1.0])
    assert report.is_stiff and report.step_sizes.sum() == pytest.approx(1.0, rel=1e-12)


def test_numpy_batch_of_independent_systems():
    mats = np.stack([STIFF_LINEAR, HARMONIC])

    def f(t, y):  # y: (2, 2), sample b follows its own matrix
        return np.einsum("bij,bj->bi", mats, y)

    report = stiffness_report(f, np.array([[1.0, 1.0], [1.0, 0.0]]), [0.0, 2.0], batch=True)
    assert report.eigenvalues.shape == (len(report.times), 2, 2)
    np.testing.assert_allclose(
        np.sort(report.eigenvalues[:, 0].real, axis=-1),
        np.broadcast_to([-1000.0, -1.0], (len(report.times), 2)),
        rtol=1e-6,
    )
    np.testing.assert_allclose(np.abs(report.eigenvalues[:, 1]), 1.0, rtol=1e-6)
    assert report.is_stiff  # the joint solve is held back by its stiff member


@pytest.mark.parametrize("method", ["dopri5", "rkf45", "bosh3"])
def test_many_output_times_do_not_confuse_the_step_recovery(method):
    # dense output between steps may call f at a step's end (Hermite slope); the recovered steps
    # must still match the solver's counts (else RuntimeError) and tile the interval
    f, y0, _ = STIFF["stiff_linear"]
    report = stiffness_report(f, np.array(y0), np.linspace(0.0, 2.0, 57), method=method)
    assert report.step_sizes.sum() == pytest.approx(2.0, rel=1e-12) and report.is_stiff


# ---------------------------------------------------------------------------------------------
# the stiff cases the diagnosis exists for, and the counting shared with method="auto"


def test_report_on_van_der_pol_mu_1000_stops_and_says_where():
    # dopri5 cannot finish VdP mu=1000 (millions of steps): the report is on the part integrated,
    # says so, and its verdict is "stiff" (planted contrast: a nonstiff run is complete, not stiff)
    mu = 1000.0

    def vdp(t, y):
        return np.array([y[1], mu * (1 - y[0] ** 2) * y[1] - y[0]])

    rep = stiffness_report(
        vdp, np.array([2.0, 0.0]), [0.0, 3000.0], max_steps=400, max_jacobians=100
    )
    assert rep.is_stiff and not rep.complete and rep.result == "max_steps_exceeded"
    assert 0.0 < rep.t_reached < 3000.0 and "part integrated" in rep.summary()
    assert "STIFF" in rep._repr_markdown_() and rep.to_dict()["complete"] is False
    calm = stiffness_report(lambda t, y: -y, np.array([1.0]), [0.0, 1.0])
    assert calm.complete and not calm.is_stiff and calm.t_reached == pytest.approx(1.0)


def test_streaming_detector_counts_like_hairer():
    from dynkit.diagnostics.stiffness import StiffnessDetector

    det = StiffnessDetector(min_run=15, forgive=6)
    # 14 limited steps, 5 unlimited (not enough to forgive), 1 more limited: stiff at the 15th
    assert not any(det.update(flag) for flag in [True] * 14 + [False] * 5)
    assert det.update(True)
    # planted: 6 unlimited steps in between reset the count
    det.reset()
    assert not any(det.update(flag) for flag in [True] * 14 + [False] * 6 + [True] * 14)
    with pytest.raises(ValueError, match="min_run"):
        StiffnessDetector(min_run=0)
