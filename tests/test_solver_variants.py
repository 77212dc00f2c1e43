"""The NFE experiments with torchdiffeq (issue 21, "One engine"): dk.solve is the default engine,
and each experiment behind an NFE claim group has a ``<name>_torchdiffeq`` twin that differs only
in it."""

import dataclasses

import pytest
import torch

import dynkit.experiments as E
from dynkit.experiments.registry import register_variant
from dynkit.experiments.scripting import ScriptConfig
from dynkit.experiments.solver_variants import SUFFIX, TWINS, with_solver

torch.set_num_threads(1)
E.EXPERIMENTS  # the families register the twins (TWINS) when the registry is first read


NFE_EXPERIMENTS = (  # the experiments behind the ledger's NFE rows (review Figs. 6, 9-13)
    "node_trained",
    "node_point_cloud",
    "node_images",
    "ode_rnn_walker2d",
    "ode_rnn_plane_vibration",
    "ode_rnn_silverbox",
)


def test_the_twins_are_those_of_the_nfe_experiments():
    assert set(TWINS) == set(NFE_EXPERIMENTS)
    assert TWINS["ode_rnn_walker2d"] == ("node", "hbnode")  # only the models its rows compare


@pytest.mark.parametrize("name", NFE_EXPERIMENTS)
def test_each_nfe_experiment_has_a_torchdiffeq_twin_differing_only_in_the_solver(name):
    # (and, where TWINS names them, in training only the models its rows compare)
    base, twin = E.EXPERIMENTS[name], E.EXPERIMENTS[name + SUFFIX]
    assert (twin.run, twin.points, twin.render) == (base.run, base.points, base.render)
    assert twin.code() == base.code()  # stale together when the experiment's code changes
    for scale in E.SCALES:
        config, changed = base.config(scale), twin.config(scale)
        if isinstance(config, ScriptConfig):
            assert changed.args == (*config.args, "--solver", "torchdiffeq")
            assert "--solver" not in config.args  # the base runs the default engine, dk.solve
        else:
            assert config.solver == "dynkit"
            models = TWINS[name] or config.models
            assert set(models) <= set(config.models)
            assert changed == dataclasses.replace(config, solver="torchdiffeq", models=models)


def test_with_solver_refuses_a_config_without_the_key():
    @dataclasses.dataclass(frozen=True)
    class NoSolver:
        epochs: int = 1

    with pytest.raises(TypeError, match="config must have a 'solver' field, got NoSolver"):
        with_solver(NoSolver(), "torchdiffeq")
    with pytest.raises(ValueError, match="experiment must be one of"):
        register_variant("no_such_experiment", "x", lambda c: c, summary="")


@pytest.fixture
def torchdiffeq_calls(monkeypatch):
    """Counts the calls of torchdiffeq's solvers (the twin must use them, the base must not)."""
    import torchdiffeq

    calls = []
    for fn in ("odeint", "odeint_adjoint"):
        original = getattr(torchdiffeq, fn)
        monkeypatch.setattr(
            torchdiffeq, fn, lambda *a, _f=original, **k: calls.append(1) or _f(*a, **k)
        )
    return calls


@pytest.mark.parametrize("name", ["node_trained", "ode_rnn_silverbox", "node_point_cloud"])
def test_the_twin_solves_with_torchdiffeq_and_the_base_with_dynkit(
    name, tmp_path, torchdiffeq_calls
):
    counts = {}
    for which in (name, name + SUFFIX):
        exp = E.EXPERIMENTS[which]
        _, config = exp.config_points(exp.config("smoke"))[0]
        before = len(torchdiffeq_calls)
        result = exp.run(config, seed=0, out=tmp_path / which, device="cpu")
        counts[which] = len(torchdiffeq_calls) - before
        assert result["metrics"]
    assert counts[name] == 0 and counts[name + SUFFIX] > 0, counts
