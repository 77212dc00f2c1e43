"""ODE-RNN hybrids: the ODE between observations against matrix exponentials, the observation update,
the adjoint read-out, the paper presets' sizes and the input checks."""
import numpy as np
import pytest
import torch
from scipy.linalg import expm

import dynkit as dk
from dynkit.models.node_paper import PAPER_PARAMETERS
from dynkit.models.ode_rnn import HYBRIDS, ODERNN, adjoint_norms





def linear_generator(model: ODERNN) -> np.ndarray:
    """The matrix G with d[z, 1]/dt = G [z, 1] for a hybrid whose f is one dense layer (sigma = identity)."""
    dyn = model.scaled.dynamics
    W = dyn.f.layer.weight.detach().numpy()
    b = dyn.f.layer.bias.detach().numpy()
    P = model.position
    n = model.n_states * P
    G = np.zeros((n + 1, n + 1))
    if model.model in ("node", "anode"):
        G[:P, :P], G[:P, n] = W, b
    elif model.model == "sonode":
        G[:P, P:2 * P] = np.eye(P)
        G[P:2 * P, :2 * P], G[P:2 * P, n] = W, b
    else:
        gamma = float(dyn.gamma().detach())
        G[:P, P:2 * P] = np.eye(P)
        G[P:2 * P, :P], G[P:2 * P, P:2 * P], G[P:2 * P, n] = W, -gamma * np.eye(P), b
        if model.model == "ghbnode":
            G[P:2 * P, :P] -= float(dyn.xi().detach()) * np.eye(P)
    return G


@pytest.mark.parametrize("name", HYBRIDS)
def test_evolve_matches_matrix_exponential_with_per_sequence_gaps(name):
    # f linear -> z(dt) = expm(dt G) [z0, 1] exactly; dopri5 at 1e-10 agrees to ~1e-8 (tolerance 1e-6 leaves
    # margin for the error accumulated over the gap). Each sequence of the batch has its own gap.
    torch.manual_seed(0)
    model = ODERNN(name, 2, 1, 3, augment=1, sigma=lambda m: m, activation=lambda v: v, method="dopri5",
                   rtol=1e-10, atol=1e-10).double()
    z0 = torch.randn(3, model.n_states * model.position, dtype=torch.float64)
    gaps = torch.tensor([0.3, 1.0, 2.5], dtype=torch.float64)
    got = model.evolve(z0, gaps).detach().numpy()
    G = linear_generator(model)
    for i, gap in enumerate(gaps.tolist()):
        want = expm(gap * G) @ np.append(z0[i].numpy(), 1.0)
        np.testing.assert_allclose(got[i], want[:-1], rtol=1e-6, atol=1e-6)


def test_evolve_reference_detects_a_wrong_gap():
    # the check above can fail: integrating the first sequence over the second one's gap misses it
    torch.manual_seed(0)
    model = ODERNN("hbnode", 2, 1, 3, activation=lambda v: v, method="dopri5", rtol=1e-10, atol=1e-10).double()
    z0 = torch.randn(1, 2 * model.position, dtype=torch.float64)
    got = model.evolve(z0, torch.tensor([1.0], dtype=torch.float64)).detach().numpy()[0]
    want = (expm(0.3 * linear_generator(model)) @ np.append(z0[0].numpy(), 1.0))[:-1]
    assert not np.allclose(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", HYBRIDS)
@pytest.mark.parametrize("residual", [False, True])
def test_update_writes_the_whole_state_and_zeroes_anode_augmentation(name, residual):
    # the cell maps [z, x] to the new state (tanh) or adds a linear increment to it (residual, the authors'
    # design), velocity/momentum included; ANODE's augmentation restarts at zero. The by-hand value uses
    # the cell's own layer.
    torch.manual_seed(1)
    model = ODERNN(name, 2, 1, 3, augment=2, residual=residual)
    P, H = model.position, model.hidden
    z = torch.randn(4, model.n_states * P)
    x = torch.randn(4, 2)
    new = model.update(z, x)
    dense = model.cell[0]
    kept = H if name == "anode" else model.n_states * P
    affine = torch.cat([z, x], 1) @ dense.weight.T + dense.bias
    by_hand = z[:, :kept] + affine if residual else torch.tanh(affine)
    assert new.shape == z.shape
    torch.testing.assert_close(new[:, :kept], by_hand, rtol=1e-6, atol=1e-6)
    if name == "anode":
        assert bool((new[:, H:] == 0).all())


def test_forecast_over_zero_gaps_repeats_the_readout():
    # a zero gap leaves the state unchanged (dz/ds = 0 * g), so every forecast equals read(z)
    torch.manual_seed(2)
    model = ODERNN("ghbnode", 2, 2, 4, field_width=8)
    z = torch.randn(3, 2 * model.position)
    out = model.forecast(z, torch.zeros(3, 4))
    torch.testing.assert_close(out, model.read(z)[:, None].expand(3, 4, 2), rtol=1e-6, atol=1e-6)


def test_adjoint_norm_at_the_last_observation_is_the_readout_gradient():
    # loss = sum (W h_T + b - y)^2 on the last output: dL/dz_T = [2 W^T (pred - y), 0] by hand
    torch.manual_seed(3)
    model = ODERNN("hbnode", 2, 1, 4, field_width=8, method="rk4", step_size=1.0)
    x, gaps = torch.randn(2, 5, 2), torch.rand(2, 5) + 0.5
    pred, states, _ = model(x, gaps, keep_states=True)
    y = torch.randn(2)
    (pred[:, -1, 0] - y).pow(2).sum().backward()
    norms = adjoint_norms(states)
    residual = (pred[:, -1, 0] - y).detach()
    by_hand = 2 * residual[:, None] * model.readout.weight.detach()  # (B, P), zero on the momentum
    assert len(norms) == 5
    assert norms[-1] == pytest.approx(float(by_hand.norm()), rel=1e-6)
    assert all(n > 0 for n in norms[:-1])  # earlier states reach the loss through the ODE


def test_adjoint_norms_needs_a_backward_pass():
    model = ODERNN("node", 1, 1, 2, method="rk4", step_size=1.0)
    _, states, _ = model(torch.randn(1, 3, 1), torch.ones(1, 3), keep_states=True)
    with pytest.raises(ValueError, match=r"states\[0\] has no gradient"):
        adjoint_norms(states)


@pytest.mark.parametrize("task", ["walker2d", "plane_vibration"])
def test_presets_match_the_review_parameter_counts(task):
    # the review's counts (Sect. 3.4.3/3.4.4); ours within 1% (widths are not given in the review)
    for name in HYBRIDS:
        model = dk.models.from_paper(name, task)
        assert isinstance(model, ODERNN) and model.model == name
        paper = PAPER_PARAMETERS[task][name]
        if paper is not None:
            assert abs(dk.models.count_parameters(model) - paper) / paper < 0.01, (task, name)


def test_presets_use_the_review_tolerance_and_accept_overrides():
    assert dk.models.from_paper("hbnode", "plane_vibration").block.rtol == 1e-7
    assert dk.models.from_paper("hbnode", "silverbox", rtol=1e-4).block.rtol == 1e-4


@pytest.mark.parametrize("kwargs, match", [
    (dict(model="lstm"), "model must be one of"),
    (dict(hidden=0), "hidden must be an integer >= 1"),
    (dict(augment=-1), "augment must be an integer >= 0"),
])
def test_bad_construction_is_named(kwargs, match):
    args = dict(model="node", n_inputs=2, n_outputs=1, hidden=3) | kwargs
    with pytest.raises(ValueError, match=match):
        ODERNN(args.pop("model"), args.pop("n_inputs"), args.pop("n_outputs"), args.pop("hidden"), **args)


@pytest.mark.parametrize("x, gaps, match", [
    (torch.zeros(2, 3, 5), torch.ones(2, 3), r"x must have shape \(batch, length, 2\)"),
    (torch.zeros(2, 3, 2), torch.ones(2, 4), r"gaps must have shape \(2, 3\)"),
    (torch.zeros(2, 3, 2), -torch.ones(2, 3), "gaps must be >= 0"),
])
def test_bad_sequences_are_named(x, gaps, match):
    model = ODERNN("node", 2, 1, 3, method="rk4", step_size=1.0)
    with pytest.raises(ValueError, match=match):
        model(x, gaps)


def test_tight_nfe_reads_the_trained_model_at_its_own_tolerance_and_restores_the_training_one():
    # the NFE rows of the hybrids are measured at rtol 1e-6 on the trained model: per interval solve, more than
    # at 1e-3 on the same model (the check can fail: a measurement left at the training tolerance gives equal
    # counts), and the block's tolerance is the training one again afterwards
    from dynkit.tasks.time_series import _tight_nfe
    from dynkit.tasks.windows import TimeSeriesTask, Windows

    torch.manual_seed(3)
    n, length = 4, 6
    x = torch.randn(n, length, 2)
    windows = Windows(x, torch.full((n, length), 2.0), torch.randn(n, length, 1), torch.randn(n, 2, 1),
                      torch.full((n, 2), 2.0))
    task = TimeSeriesTask("tiny", windows, windows, windows, ("u", "y"), ("y",), "a test")
    model = ODERNN("hbnode", 2, 1, 4, field_width=8, method="dopri5", rtol=1e-3, atol=1e-3)
    loose = _tight_nfe(model, task, 1e-3, 1.0)
    tight = _tight_nfe(model, task, 1e-6, 1.0)
    assert (model.block.rtol, model.block.atol) == (1e-3, 1e-3)
    assert loose["interval_solves"] == tight["interval_solves"] == (length - 1) + 2  # gaps in the window + forecast
    for key in ("forward_per_solve", "backward_per_solve", "test_per_solve"):
        assert tight[key] > loose[key] >= 14 - 1e-9  # 14: two accepted dopri5 steps, the floor
    assert all(p.grad is None for p in model.parameters())  # the measurement leaves no gradient behind
