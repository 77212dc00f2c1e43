"""``solve_seeds``: S independent copies of an ODE in one batched solve, each seed taking the steps
of its own solve (forward and adjoint), against S separate ``dk.solve`` runs as the reference."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import dynkit as dk
from dynkit.solvers import seedwise
from dynkit.solvers.seedwise import solve_seeds

SEEDS, BATCH, DIM, WIDTH = 3, 4, 2, 8
SPAN = [0.0, 2.0]
TOL = dict(rtol=1e-7, atol=1e-7)


class SeededField(torch.nn.Module):
    """``f(t, y) = tanh(y W1 + b1 + t) W2 + b2`` per seed (y: (S, B, d)); ``t`` of shape (S,) or
    0-d. ``coupling`` plants an interaction between seeds (the mean state over seeds)."""

    def __init__(self, params, coupling: float = 0.0):
        super().__init__()
        self.params = torch.nn.ParameterList(torch.nn.Parameter(p.clone()) for p in params)
        self.coupling = coupling

    def forward(self, t, y):
        w1, b1, w2, b2 = self.params
        hidden = torch.tanh(torch.baddbmm(b1, y, w1) + t.reshape(-1, 1, 1))
        out = torch.baddbmm(b2, hidden, w2)
        return out + self.coupling * y.mean(0, keepdim=True) if self.coupling else out


def seeded_params(dtype=torch.float64):
    gen = torch.Generator().manual_seed(0)
    # the seeds' fields differ in stiffness (scales 0.5, 1.5, 3): different step counts per seed
    scales = torch.tensor([0.5, 1.5, 3.0], dtype=dtype).view(SEEDS, 1, 1)
    return [
        torch.randn(SEEDS, DIM, WIDTH, generator=gen, dtype=dtype),
        0.1 * torch.randn(SEEDS, 1, WIDTH, generator=gen, dtype=dtype),
        scales * torch.randn(SEEDS, WIDTH, DIM, generator=gen, dtype=dtype),
        torch.randn(SEEDS, 1, DIM, generator=gen, dtype=dtype),
    ]


def batched_and_separate(batched_solve, coupling=0.0, **options):
    """Gradients and counts of one batched solve and of each seed's own ``dk.solve``: a dict of
    the largest differences (state, gradients) and the two sets of per-seed counts."""
    params = seeded_params()
    gen = torch.Generator().manual_seed(1)
    y0 = torch.randn(SEEDS, BATCH, DIM, generator=gen, dtype=torch.float64)
    cotangent = torch.randn(SEEDS, BATCH, DIM, generator=gen, dtype=torch.float64)
    field = SeededField(params, coupling)
    y0_batched = y0.clone().requires_grad_(True)
    sol = batched_solve(field, y0_batched, SPAN, adjoint=True, **options)
    (sol.ys[-1] * cotangent).sum().backward()
    worst = {"state": 0.0, "grad": 0.0}
    separate = {"nfe": [], "n_steps": [], "backward_nfe": [], "backward_steps": []}
    for s in range(SEEDS):
        alone = SeededField([p[s : s + 1] for p in params])
        y0_alone = y0[s : s + 1].clone().requires_grad_(True)
        ref = dk.solve(alone, y0_alone, SPAN, adjoint=True, **options)
        (ref.ys[-1] * cotangent[s : s + 1]).sum().backward()
        worst["state"] = max(worst["state"], _relative(sol.ys[-1][s : s + 1], ref.ys[-1]))
        grads = [(y0_batched.grad, y0_alone.grad)]
        grads += [(p.grad, q.grad) for p, q in zip(field.parameters(), alone.parameters())]
        for batched, single in grads:
            worst["grad"] = max(worst["grad"], _relative(batched[s : s + 1], single))
        separate["nfe"].append(ref.stats.nfe)
        separate["n_steps"].append(ref.stats.n_steps)
        separate["backward_nfe"].append(ref.backward_stats.nfe)
        separate["backward_steps"].append(ref.backward_stats.n_steps)
    return worst, sol, {k: np.array(v) for k, v in separate.items()}


def _relative(a, b) -> float:
    a, b = a.detach(), b.detach()
    return float((a - b).abs().max() / b.abs().max().clamp_min(1e-300))


def _counts(sol):
    return {
        "nfe": sol.stats.nfe,
        "n_steps": sol.stats.n_steps,
        "backward_nfe": sol.backward_stats.nfe,
        "backward_steps": sol.backward_stats.n_steps,
    }


@pytest.mark.parametrize("method", ["dopri5", "tsit5", "bosh3"])
def test_each_seed_takes_its_own_solves_steps_and_gradients(method):
    worst, sol, separate = batched_and_separate(solve_seeds, method=method, **TOL)
    counts = _counts(sol)
    for name, values in separate.items():
        np.testing.assert_array_equal(counts[name], values, err_msg=name)
    # the check means something: the seeds' own counts differ (and dopri5's backward rejects steps)
    assert len(set(separate["n_steps"])) > 1
    assert method != "dopri5" or sol.backward_stats.n_rejected.sum() > 0
    # the same steps: only rounding differs (a batched product against a single seed's, the
    # stage sums formed as h · sum(a_j k_j) against dk.solve's sum((h a_j) k_j)); float64, ~30
    # steps: 1e-13 seen, 1e-10 leaves room and is 1e3 below the tolerance, which another step
    # sequence would show
    assert worst["state"] < 1e-10 and worst["grad"] < 1e-10, worst
    assert sol.stats.calls == sol.stats.nfe.max()  # every call serves every seed still running


def test_fixed_steps_stacked_parameters_adjoint_matches_separate_solves():
    # a fixed step is every seed's: dk.solve's adjoint of the stacked field is the batched run
    options = dict(method="rk4", step_size=0.05)
    worst, sol, separate = batched_and_separate(dk.solve, **options)
    assert (
        sol.stats.nfe == separate["nfe"][0]
        and sol.backward_stats.nfe == separate["backward_nfe"][0]
    )
    assert worst["state"] < 1e-12 and worst["grad"] < 1e-12, worst  # rounding only (1e-15 seen)


def test_a_field_that_couples_seeds_is_caught():
    worst, _, _ = batched_and_separate(solve_seeds, coupling=0.1, **TOL)
    assert worst["grad"] > 1e-4, worst


def test_a_norm_shared_by_the_seeds_is_caught(monkeypatch):
    # the hardest seed's error for every seed (per_sample's rule): seed 0 then takes seed 2's steps
    shared = seedwise._Seeds.norms
    monkeypatch.setattr(
        seedwise._Seeds,
        "norms",
        lambda self, err, scale: np.full(SEEDS, shared(self, err, scale).max()),
    )
    _, sol, separate = batched_and_separate(solve_seeds, **TOL)
    assert not np.array_equal(sol.stats.n_steps, separate["n_steps"])


def test_forward_without_adjoint_takes_each_seeds_steps():
    params = seeded_params()
    y0 = torch.randn(
        SEEDS, BATCH, DIM, dtype=torch.float64, generator=torch.Generator().manual_seed(2)
    )
    sol = solve_seeds(SeededField(params), y0, SPAN, **TOL)
    for s in range(SEEDS):
        ref = dk.solve(SeededField([p[s : s + 1] for p in params]), y0[s : s + 1], SPAN, **TOL)
        assert sol.stats.nfe[s] == ref.stats.nfe and sol.stats.n_rejected[s] == ref.stats.n_rejected
        assert _relative(sol.ys[-1][s : s + 1], ref.ys[-1]) < 1e-10


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(method="rk4"), "method must be an explicit embedded pair"),
        (dict(t=[0.0, 1.0, 2.0]), "t must hold two times"),
        (dict(adjoint=True, adjoint_params=[torch.ones(2, 2)]), r"adjoint_params\[0\] .*seed axis"),
        (dict(adjoint_params=[torch.ones(3)]), "only used with adjoint=True"),
        (dict(atol=np.full(2, 1e-6)), "atol must be a scalar"),
        (dict(first_step=-0.1), "first_step must be"),
    ],
)
def test_bad_arguments_are_named(kwargs, match):
    kwargs = {"t": [0.0, 1.0], **kwargs}
    with pytest.raises(ValueError, match=match):
        solve_seeds(lambda t, y: -y, torch.ones(3, 2), **kwargs)


def test_solve_with_adjoint_and_per_sample_points_to_solve_seeds():
    # per_sample shares one step among the samples (the hardest one's): its adjoint is refused
    with pytest.raises(ValueError, match=r"per_sample=False.*seedwise\.solve_seeds"):
        dk.solve(
            lambda t, y: -y,
            torch.ones(3, 2),
            [0.0, 1.0],
            adjoint=True,
            per_sample=True,
            adjoint_params=(),
        )


def test_a_field_of_the_wrong_shape_is_named():
    with pytest.raises(
        dk.solvers.VectorFieldShapeError, match=r"state's shape \(3, 2\), got \(3,\)"
    ):
        solve_seeds(lambda t, y: y.sum(1), torch.ones(3, 2), [0.0, 1.0])


def test_a_failing_seed_is_named():
    # seed 1's field is 1000 times stiffer: it alone runs out of steps
    rates = torch.tensor([[1.0], [1000.0], [1.0]], dtype=torch.float64)
    with pytest.raises(dk.solvers.MaxStepsExceeded, match="seed 1: max_steps=20"):
        solve_seeds(
            lambda t, y: -rates * y, torch.ones(3, 1, dtype=torch.float64), [0.0, 1.0], max_steps=20
        )
