"""NFE accounting (forward calls, backward vector-Jacobian products), the NFE-vs-tolerance sweep,
and training runs that resume exactly and stop cleanly on solver failures."""

import json

import pytest
import torch

import dynkit as dk
from dynkit import cli
from dynkit.diagnostics import BatchNFE, NFECounter
from dynkit.experiments import nfe_vs_tolerance
from dynkit.models import HBNODE, NODE, MLPField, from_paper
from dynkit.tasks.training import TrainingError, fit

torch.set_num_threads(1)


@pytest.mark.parametrize(
    "solver, adjoint",
    [("torchdiffeq", False), ("torchdiffeq", True), ("dynkit", False), ("dynkit", True)],
)
def test_rk4_counts_are_four_per_step_forward_and_backward(solver, adjoint):
    # RK4 with h = 0.25 on [0, 1]: 4 steps of 4 stages = 16 evaluations forward. Backward: every
    # stage is backpropagated once (direct), or the adjoint RK4 solve takes 4 steps of 4 stages with
    # one vector-Jacobian product each.
    model = HBNODE(MLPField(2, 8), method="rk4", step_size=0.25, solver=solver, adjoint=adjoint)
    with BatchNFE(model) as nfe:
        out = model(torch.randn(3, 2))
        nfe.mark_forward()
        out.pow(2).sum().backward()
    assert (nfe.forward, nfe.backward) == (16, 16)


def test_forward_count_equals_dynkit_solver_statistics():
    # An independent count: dk.solve's own stats.nfe for the same solve.
    torch.manual_seed(0)
    field = NFECounter(MLPField(3, 6))
    y0 = torch.randn(4, 3)
    sol = dk.solve(field, y0, torch.tensor([0.0, 1.0]), rtol=1e-6, atol=1e-8)
    assert field.calls == sol.stats.nfe > 6


def test_counter_resets_per_batch():
    model = NODE(MLPField(2, 4), method="rk4", step_size=0.5)
    for _ in range(2):
        with BatchNFE(model) as nfe:
            model(torch.randn(2, 2)).sum().backward()
            # mark_forward after backward would count adjoint calls; without adjoint they are equal
            nfe.mark_forward()
        assert (nfe.forward, nfe.backward) == (8, 8)


def test_nfe_vs_tolerance_structure_files_and_monotone_forward(tmp_path):
    torch.manual_seed(0)
    module = from_paper("hbnode", "point_cloud")
    res = nfe_vs_tolerance(
        models={"node": "node", "mine": module},
        task="point_cloud",
        tolerances=(1e-2, 1e-6),
        n_batches=2,
        batch_size=8,
        quiet=True,
        out=tmp_path,
    )
    assert list(res) == ["node", "mine"] and list(res["node"]) == ["1e-02", "1e-06"]
    for per_tol in res.values():
        for entry in per_tol.values():
            assert (
                set(entry["forward_nfe"]) == {"mean", "std"} and entry["backward_nfe"]["mean"] > 0
            )
        # a 10^4 times tighter tolerance needs more dopri5 steps, forward and backward
        assert per_tol["1e-06"]["forward_nfe"]["mean"] > per_tol["1e-02"]["forward_nfe"]["mean"]
        assert per_tol["1e-06"]["backward_nfe"]["mean"] > per_tol["1e-02"]["backward_nfe"]["mean"]
    saved = json.loads((tmp_path / "nfe_vs_tolerance.json").read_text())
    assert saved["results"]["mine"] == json.loads(json.dumps(res["mine"])) and "versions" in saved
    # the name was measured as initialised, the module's training is not known: neither is recorded
    # as 0 epochs
    assert (
        saved["training"]["node"]["state"].startswith("UNTRAINED")
        and saved["training"]["node"]["epochs"] == 0
    )
    assert saved["training"]["mine"]["epochs"] == "unknown (given trained modules)"
    assert saved["training"] == res.training
    assert (tmp_path / "nfe_vs_tolerance.png").stat().st_size > 1000
    assert module.ode.block.rtol == 1e-6  # a given module is measured in place


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"tolerances": (0.0,)}, "tolerances"),
        ({"n_batches": 0}, "n_batches"),
        ({"models": ("nodes",)}, "model must be one of"),
        ({"models": (torch.nn.Linear(2, 2),)}, "NFECounter"),
    ],
)
def test_nfe_vs_tolerance_rejects_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        nfe_vs_tolerance(**{"task": "point_cloud", "quiet": True, **kwargs})


def _metrics(result):
    return [{k: v for k, v in e.items() if k != "batch_time"} for e in result["history"]]


def test_training_resumes_exactly(tmp_path):
    opts = dict(seed=3, quiet=True, tol=1e-3)
    whole = dk.tasks.run_training("hbnode", "point_cloud", epochs=3, out=tmp_path / "a", **opts)
    dk.tasks.run_training("hbnode", "point_cloud", epochs=1, out=tmp_path / "b", **opts)
    resumed = dk.tasks.run_training(
        "hbnode", "point_cloud", epochs=3, out=tmp_path / "b", resume=True, **opts
    )
    assert _metrics(resumed) == _metrics(
        whole
    )  # bit-identical: same seed, same data order, same states
    assert len(whole["history"]) == 3 and whole["final"]["forward_nfe"] > 0
    other_seed = dk.tasks.run_training(
        "hbnode", "point_cloud", epochs=1, seed=4, quiet=True, tol=1e-3
    )
    assert _metrics(other_seed)[0] != _metrics(whole)[0]  # the comparison can fail


def test_solver_failure_stops_training_naming_batch_and_keeps_checkpoint(tmp_path):
    class Explodes(torch.nn.Module):
        """Non-finite from call 61 on: 16 rk4 calls a batch, 2 batches an epoch -> epoch 2, batch
        2."""

        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(2, 2)
            self.calls = 0

        def forward(self, t, h):
            self.calls += 1
            out = self.lin(h)
            return out * float("inf") if self.calls > 60 else out

    model = NODE(Explodes(), solver="dynkit", method="rk4", step_size=0.25)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(6, 2)

    def step(m, batch):
        return m(batch).pow(2).mean(), {}

    with pytest.raises(TrainingError, match=r"epoch \d+, batch \d+: NonFiniteState.*at t=") as info:
        fit(model, opt, lambda g: [x[:3], x[3:]], step, 10, checkpoint_dir=tmp_path, progress=False)
    assert info.value.epoch >= 1 and info.value.checkpoint.exists()
    assert torch.load(info.value.checkpoint, weights_only=True)["epoch"] == info.value.epoch - 1


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"model": "resnet"}, "model must be one of"),
        ({"task": "cifar10"}, "task must be one of"),
        ({"epochs": 0}, "epochs"),
        ({"resume": True}, "resume"),
        ({"tol": -1.0}, "tol"),
    ],
)
def test_run_training_rejects_bad_configuration(kwargs, match):
    args = {"model": "hbnode", "task": "point_cloud", **kwargs}
    with pytest.raises(ValueError, match=match):
        dk.tasks.run_training(args.pop("model"), args.pop("task"), quiet=True, **args)


def test_run_training_defaults_to_dynkit_with_its_adjoint_and_keeps_torchdiffeq():
    # issue 21: dk.solve is every model's engine, its adjoint standing in for torchdiffeq's
    # odeint_adjoint
    runs = {
        solver: dk.tasks.run_training(
            "ghbnode",
            "point_cloud",
            epochs=1,
            tol=1e-3,
            quiet=True,
            **({} if solver is None else {"solver": solver}),
        )
        for solver in (None, "torchdiffeq")
    }
    assert (runs[None]["config"]["solver"], runs[None]["config"]["adjoint"]) == ("dynkit", True)
    assert (runs["torchdiffeq"]["config"]["solver"], runs["torchdiffeq"]["config"]["adjoint"]) == (
        "torchdiffeq",
        True,
    )
    for run in runs.values():
        assert run["final"]["forward_nfe"] > 0 and run["final"]["backward_nfe"] > 0
    backprop = dk.tasks.run_training(
        "ghbnode", "point_cloud", epochs=1, tol=1e-3, quiet=True, adjoint=False
    )
    assert backprop["config"]["adjoint"] is False and backprop["final"]["backward_nfe"] > 0


def test_dynkit_adjoint_backward_count_equals_its_own_statistics():
    # An independent count of the adjoint's backward work: dk.solve's backward_stats (one VJP per
    # call of f except the time_calls, none here as t needs no gradient).
    torch.manual_seed(0)
    field = NFECounter(MLPField(3, 6))
    sol = dk.solve(
        field, torch.randn(4, 3), torch.tensor([0.0, 1.0]), rtol=1e-5, atol=1e-7, adjoint=True
    )
    field.reset()
    sol.ys[-1].pow(2).sum().backward()
    assert field.vjps == sol.backward_stats.nfe - sol.backward_stats.time_calls > 6


def test_cli_train_records_the_solver(capsys):
    for argv, solver in (([], "dynkit"), (["--solver", "torchdiffeq"], "torchdiffeq")):
        code = cli.main(
            [
                "train",
                "--model",
                "node",
                "--task",
                "point_cloud",
                "--epochs",
                "1",
                "--method",
                "rk4",
                "--quiet",
                *argv,
            ]
        )
        out = capsys.readouterr().out
        assert code == 0 and f"config.solver            {solver}" in out, out
