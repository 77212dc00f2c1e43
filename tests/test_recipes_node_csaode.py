"""The recipes of the review's NODE experiments (node_recipes) and of CSAODE's (csaode_recipes):
the settings a script runs with are the ones its recipe reads (one source), the paper scale
writes the paper's values or refuses, and a planted deviation is caught."""

from __future__ import annotations

import importlib
import inspect

import pytest
import torch

import dynkit.experiments as E
from dynkit.experiments.recipes import RECIPES, RecipeError, paper_config, read_field, write_field
from dynkit.experiments.solver_variants import SUFFIX


def _run_keywords(module) -> set[str]:
    """The keyword-only parameters of ``module.run``: the settings the run takes from
    ``options``."""
    return {
        n for n, p in inspect.signature(module.run).parameters.items() if p.kind is p.KEYWORD_ONLY
    }


SCRIPTS = [
    "node_point_cloud",
    "node_images",
    "node_blowup",
    "node_adjoint_norm",
    "csaode_sensitivity",
    "csaode_attention",
]


@pytest.mark.parametrize("name", SCRIPTS)
def test_a_scripts_options_are_exactly_what_its_run_takes(name):
    """One source: every setting ``options`` returns is a keyword of ``run`` and the other way
    round, so no value the recipe reads can be left unused, and no setting of the run is missing
    from the recipe's reach."""
    module = importlib.import_module(E.get(name).module or E.get(name).run.__module__)
    for scale in ("smoke", "cpu", "full"):
        assert set(E.get(name).config(scale).options()) == _run_keywords(module), scale


def _fake_training(calls):
    """A stand-in for :func:`dynkit.tasks.node_runs.train_model` that records what it is asked to
    train with."""

    def train_model(model, task, **kwargs):
        calls.append({"model": model, "task": task, **kwargs})
        epoch = {
            "epoch": 1,
            "train_loss": 0.1,
            "forward_nfe": 20.0,
            "backward_nfe": 26.0,
            "test_acc": 1.0,
            "batch_time": 0.01,
        }
        return None, {
            "history": [epoch],
            "final": epoch,
            "n_parameters": 525,
            "trivial_train_loss": 8 / 9,
            "config": {"settings": {"n_train": None}, "batch_size": kwargs["batch_size"]},
        }

    return train_model


@pytest.mark.parametrize("name", ["node_point_cloud", "node_images"])
def test_a_node_script_trains_with_the_settings_its_recipe_reads(name, monkeypatch, tmp_path):
    """What the twin's recipe reads (its options) is what every model trains with; a planted
    tolerance on the command line moves both together, and the recipe names it."""
    module = importlib.import_module(E.get(name).module or E.get(name).run.__module__)
    calls = []
    monkeypatch.setattr(module, "train_model", _fake_training(calls))
    config = E.get(name + SUFFIX).config("cpu")
    module.main([*config.args, "--out", str(tmp_path), "--quiet"])
    settings = config.options()
    assert (
        settings["solver"] == "torchdiffeq"
    )  # the twin's own command line, read through its options
    assert [c["model"] for c in calls] == [
        m for m in settings["models"] for _ in range(settings.get("runs", 1))
    ]
    checked = set(settings) & set(calls[0]) - {"model"}
    assert checked >= {"epochs", "tol", "solver", "method", "adjoint", "batch_size", "lr"}
    for key in checked:
        assert {c[key] for c in calls} == {settings[key]}, key
    calls.clear()
    planted = config.with_option("tol", 1e-3 if settings["tol"] != 1e-3 else 1e-4)
    module.main([*planted.args, "--out", str(tmp_path), "--quiet"])
    assert {c["tol"] for c in calls} == {read_field(planted, "tol")} != {settings["tol"]}
    paper_tol = next(s.paper for s in RECIPES[name].settings if s.field == "tol")
    assert (read_field(planted, "tol") != paper_tol) == any(
        m.startswith(("solver tolerance", "training tolerance"))
        for m in RECIPES[name].mismatches(planted)
    )


@pytest.mark.parametrize("name", ["node_point_cloud", "node_point_cloud" + SUFFIX])
def test_node_point_cloud_paper_scale(name):
    recipe = RECIPES[name]
    assert recipe.missing() == []  # the authors' skeleton is built (design "authors")
    config = E.get(name).config("paper")
    assert recipe.mismatches(config) == [] and config.options()["design"] == "authors"
    planted = config.with_option(
        "design", "dynkit"
    )  # dynkit's earlier models, planted at the paper scale
    assert [m.split(":")[0] for m in recipe.mismatches(planted)] == ["model design", "loss"]
    assert config.options()["solver"] == "torchdiffeq" and config.options()["runs"] == 100
    # planted: a paper value the script cannot be given on its command line is refused, never
    # silently kept
    with pytest.raises(RecipeError, match="no command-line option for lr"):
        write_field(config, "lr", 1e-3)


@pytest.mark.parametrize("name", ["node_images", "node_images" + SUFFIX])
def test_node_images_paper_scale_refuses_while_mnist_is_missing(name):
    with pytest.raises(RecipeError, match="missing: data set: an MNIST training task") as refused:
        E.get(name).config("paper")
    assert "clipping" not in str(
        refused.value
    )  # built: train_model(clip_norm=...), the script's --clip-norm
    config = paper_config(E.get(name), strict=False)
    assert RECIPES[name].mismatches(config) == [] and config.options()["tol"] == 1e-3
    assert config.options()["clip_norm"] == 10.0
    planted = config.with_option(
        "tol", 1e-5
    )  # the cpu scale's tolerance, planted at the paper scale
    assert [m.split(":")[0] for m in RECIPES[name].mismatches(planted)] == ["training tolerance"]
    planted = config.with_option(
        "clip_norm", 1.0
    )  # ANODE's clip in mnist_anode.py, planted for every model
    assert [m.split(":")[0] for m in RECIPES[name].mismatches(planted)] == ["gradient clipping"]


@pytest.mark.parametrize("clip", [None, 1e-6])
def test_train_model_clips_exactly_when_asked(clip_calls, clip):
    from dynkit.tasks.node_runs import train_model

    _, result = train_model("node", "point_cloud", epochs=1, quiet=True, tol=1e-2, clip_norm=clip)
    if clip is None:
        assert clip_calls == []
    else:  # once per batch, each at the asked norm
        assert len(clip_calls) >= 1 and set(clip_calls) == {clip}
    assert ("clip_norm" in result["config"]) is (
        clip is not None
    )  # earlier runs' manifests stay the same
    with pytest.raises(
        ValueError, match="clip_norm must be a positive finite number or None, got 0"
    ):
        train_model("node", "point_cloud", epochs=1, quiet=True, clip_norm=0)


def test_node_blowup_paper_scale_is_the_authors_script(monkeypatch, tmp_path):
    """Nothing of Fig. 7's recipe is missing: the paper scale runs the authors' horizon, inits
    and tolerance, and the solves get the tolerance the recipe reads."""
    from dynkit.experiments.node import node_blowup

    recipe, config = RECIPES["node_blowup"], E.get("node_blowup").config("paper")
    assert recipe.missing() == [] and recipe.mismatches(config) == []
    settings = config.options()
    assert (settings["inits"], settings["t_end"], settings["rtol"], settings["atol"]) == (
        10,
        63.0,
        1e-7,
        1e-7,
    )
    solves = []
    monkeypatch.setattr(
        node_blowup,
        "trajectory_norms",
        lambda model, y0, t, rtol, atol, solver: (
            solves.append((rtol, atol, t[-1], solver)) or t * 0 + 1.0
        ),
    )
    node_blowup.main([*config.args, "--inits", "1", "--out", str(tmp_path), "--quiet"])
    assert set(solves) == {(1e-7, 1e-7, 63.0, "torchdiffeq")} and len(solves) == 5
    # the cpu scale is the authors' run itself (its results are a replication's)
    assert config.options() == E.get("node_blowup").config("cpu").options()
    # planted: the script's own tolerance, and its own engine, at the paper scale are caught
    planted = config.with_option("rtol", 1e-6)
    assert [m.split(":")[0] for m in recipe.mismatches(planted)] == ["relative tolerance"]
    planted = config.with_option("solver", "dynkit")
    assert [m.split(":")[0] for m in recipe.mismatches(planted)] == ["ODE engine"]


def test_node_blowup_norms_agree_between_the_authors_engine_and_dynkits():
    """One HBNODE init on the measured drive (it grows by orders of magnitude over 63 samples):
    torchdiffeq's and dk.solve's dopri5 at 1e-7 give the same log10 ||h(t)|| to 1e-4 (two
    implementations of one method, each within its own tolerance: a relative 1e-7 per step
    accumulates over some hundred steps, far below the rows' thresholds of one order of
    magnitude)."""
    import numpy as np
    import torch

    from dynkit.experiments.node import node_blowup

    t, y0, drive, _ = node_blowup.drive_of("measured", 63.0, 100)
    curves = {}
    for solver in ("torchdiffeq", "dynkit"):
        torch.manual_seed(100 * 100_003)  # seed 100's first init, as the run draws it
        model = node_blowup.build("hbnode", drive).double()
        curves[solver] = np.log10(node_blowup.trajectory_norms(model, y0, t, 1e-7, 1e-7, solver))
    assert np.all(np.isfinite(curves["dynkit"])) and curves["dynkit"][-1] > 2  # it grew
    assert np.max(np.abs(curves["torchdiffeq"] - curves["dynkit"])) < 1e-4


def test_node_blowup_counts_a_failed_solve_as_blown_up_on_either_engine():
    """Planted: y' = y^2 from y(0) = 1 leaves float range before t = 1. Neither engine may hand
    back a finite norm at T (torchdiffeq's underflow assertion, dynkit's failure code), so the run
    counts the init as blown up."""
    import numpy as np
    import torch

    from dynkit.experiments.node import node_blowup

    class Quadratic(torch.nn.Module):
        augment_dim = 0

        def initial_state(self, x):
            return x

        def dynamics(self, t, z):
            return z**2

    t = np.linspace(0.0, 3.0, 7)
    for solver in ("torchdiffeq", "dynkit"):
        norms = node_blowup.trajectory_norms(Quadratic(), 1.0, t, 1e-7, 1e-7, solver)
        assert np.isnan(norms[-1]), solver


def test_node_adjoint_norm_names_its_stand_in_and_refuses_the_paper_scale():
    recipe = RECIPES["node_adjoint_norm"]
    with pytest.raises(
        RecipeError, match="Walker2D's recorded training sequences.*the authors' Walker2D skeleton"
    ):
        E.get("node_adjoint_norm").config("paper")
    rows = {r["setting"]: r for r in recipe.rows(E.get("node_adjoint_norm").config("cpu"), "cpu")}
    assert (
        "simulated" in rows["data set"]["ours"]
        and "not available offline" in rows["data set"]["why"]
    )
    assert not rows["data set"]["as_paper"] and not rows["model design"]["as_paper"]
    config = paper_config(E.get("node_adjoint_norm"), strict=False)
    assert recipe.mismatches(config) == []
    assert (config.options()["length"], config.options()["shrink"]) == (
        64,
        1.0,
    )  # the walker scripts' values
    planted = config.with_option(
        "shrink", 0.01
    )  # the plane-vibration shrink, planted at the paper scale
    assert [m.split(":")[0] for m in recipe.mismatches(planted)] == ["initialisation"]


@pytest.mark.parametrize(
    "extra, shrinks", [((), [0.01]), (("--shrink", "1.0"), []), (("--cell", "overwrite"), [])]
)
def test_node_adjoint_norm_trains_with_the_safeguards_its_recipe_reads(
    extra, shrinks, monkeypatch, tmp_path
):
    from dynkit.experiments.node import node_adjoint_norm

    argv = ["--length", "12", "--iterations", "2", "--models", "hbnode", *extra]
    settings = node_adjoint_norm.options(argv)
    assert settings["shrink"] == (shrinks[0] if shrinks else 1.0)
    seen = {"shrink": [], "clip": []}
    shrink, clip = node_adjoint_norm.shrink_parameters, torch.nn.utils.clip_grad_norm_
    monkeypatch.setattr(
        node_adjoint_norm,
        "shrink_parameters",
        lambda model, factor: seen["shrink"].append(factor) or shrink(model, factor),
    )
    monkeypatch.setattr(
        torch.nn.utils,
        "clip_grad_norm_",
        lambda params, norm: seen["clip"].append(norm) or clip(params, norm),
    )
    node_adjoint_norm.main([*argv, "--out", str(tmp_path), "--quiet"])
    assert seen["shrink"] == shrinks
    assert (
        seen["clip"] == [settings["clip_norm"]] * 2 if settings["clip_norm"] else seen["clip"] == []
    )


# ---- CSAODE --------------------------------------------------------------------------------------
CV = ["csaode_cv_cr", "csaode_cv_mpqa", "csaode_cv_mr", "csaode_cv_subj"]


def test_the_cv_recipes_are_one_builder_over_the_data_set():
    from dynkit.experiments.csaode.recipe import cv_recipe

    for name in CV:
        dataset = name.rsplit("_", 1)[1]
        assert RECIPES[name] == cv_recipe(dataset)
        assert read_field(E.get(name).config("cpu"), "dataset") == dataset
        assert next(s for s in RECIPES[name].settings if s.name == "data set").paper == dataset
    others = [
        [(s.name, s.paper, s.field) for s in RECIPES[n].settings if s.name != "data set"]
        for n in CV
    ]
    assert all(o == others[0] for o in others)
    with pytest.raises(ValueError, match="dataset must be one of"):
        cv_recipe("trec")


@pytest.mark.parametrize("scale", ["smoke", "cpu", "full"])
def test_a_cv_fold_trains_with_every_value_its_recipe_reads(scale, monkeypatch, tmp_path):
    """The table's values are what the fold trains with at every scale (before, the full scale
    showed d = 32 and ran FULL_CONFIG's 300): each recipe field reaches train_csaode unchanged."""
    import dynkit.tasks.text as text
    from dynkit.experiments.csaode.csaode_cv import run_fold

    calls = []

    def train_csaode(dataset, data_dir, **kwargs):
        calls.append({"dataset": dataset, **kwargs})
        return {
            "test_accuracy": 0.9,
            "n_parameters": 1,
            "history": [{"epoch_seconds": 1.0}],
            "config": {},
        }

    monkeypatch.setattr(text, "train_csaode", train_csaode)
    config = E.get("csaode_cv_mr").config(scale)
    run_fold(config, seed=4, out=tmp_path, device="cpu")
    (call,) = calls
    assert call["fold"] == 4 and call["solver"] == config.solver
    for s in RECIPES["csaode_cv_mr"].settings:
        if s.field and s.field != "solvers":
            assert call[s.field] == read_field(config, s.field), s.name
    # planted: the full scale's d set back to the cpu's 32 is what would run, not silently
    # FULL_CONFIG's 300
    import dataclasses

    calls.clear()
    run_fold(
        dataclasses.replace(E.get("csaode_cv_mr").config("full"), d=32),
        seed=0,
        out=tmp_path,
        device="cpu",
    )
    assert calls[0]["d"] == 32 and calls[0]["full"] is True


@pytest.mark.parametrize("name", CV)
def test_a_cv_paper_scale_refuses_without_glove_300_and_catches_a_planted_value(name):
    import dataclasses

    with pytest.raises(RecipeError, match="GloVe-300 vectors") as refused:
        E.get(name).config("paper")
    assert "weight normalization" not in str(refused.value)  # built: CSAODE(weight_norm=True)
    recipe, config = RECIPES[name], paper_config(E.get(name), strict=False)
    assert recipe.mismatches(config) == [] and (
        config.d,
        config.embed_dim,
        config.weight_decay,
    ) == (300, 300, 1e-5)
    assert config.weight_norm is True
    planted = dataclasses.replace(config, weight_decay=1e-4, dataset="trec", weight_norm=False)
    assert sorted(m.split(":")[0] for m in recipe.mismatches(planted)) == [
        "L2 weight decay",
        "data set",
        "weight normalization",
    ]


def _recorded_csaode(calls):
    """A stand-in for :func:`dynkit.tasks.text.train_csaode` recording the configuration it would
    train with, resolved as it resolves it (its base configuration, the overrides, the epochs)."""
    from dynkit.tasks.text import CPU_CONFIG, FULL_CONFIG

    def train_csaode(dataset, data_dir, *, solver, epochs, full, return_model=False, **kwargs):
        config = {
            **(FULL_CONFIG if full else CPU_CONFIG),
            **{k: v for k, v in kwargs.items() if k not in ("out", "seed", "resume", "quiet")},
            "epochs": epochs,
        }
        calls.append({"dataset": dataset, "solver": solver, "full": full, **config})
        if return_model:
            # csaode_attention: the settings are what is checked, not the attention read afterwards
            raise _Stop
        return {
            "test_accuracy": 0.9,
            "best_test_accuracy": 0.9,
            "n_parameters": 1,
            "history": [{"nfe_forward": 1, "epoch_seconds": 1.0}],
        }

    return train_csaode


class _Stop(Exception):
    pass


@pytest.mark.parametrize(
    "name, changed",
    [
        ("csaode_sensitivity", {"d", "window", "step", "architecture", "n_blocks", "convolution"}),
        ("csaode_attention", set()),
    ],
)
@pytest.mark.parametrize("scale", ["cpu", "full"])
def test_a_csaode_script_trains_with_the_settings_its_recipe_reads(
    name, changed, scale, monkeypatch, tmp_path
):
    module = importlib.import_module(E.get(name).module or E.get(name).run.__module__)
    calls = []
    monkeypatch.setattr(module, "train_csaode", _recorded_csaode(calls))
    config = E.get(name).config(scale)
    with pytest.raises(_Stop) if name == "csaode_attention" else _nothing():
        module.main(
            [*config.args, "--out", str(tmp_path), "--checkpoints", str(tmp_path / "ck"), "--quiet"]
        )
    settings = config.options()
    assert calls and all(c["dataset"] == "trec" for c in calls)
    for call in calls:
        for key in set(settings) & set(call) - changed:
            assert call[key] == settings[key], key
    if name == "csaode_sensitivity":  # Table 3's d = 50 and 200 are the grid the recipe reads
        assert sorted({c["d"] for c in calls} - {settings["d"]}) == sorted(settings["d_grid"])


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@pytest.mark.parametrize("name", ["csaode_sensitivity", "csaode_attention"])
def test_a_csaode_scripts_paper_scale_refuses_and_a_planted_value_is_caught(name):
    recipe = RECIPES[name]
    with pytest.raises(RecipeError, match="GloVe-300 vectors") as refused:
        E.get(name).config("paper")
    assert "weight normalization" not in str(refused.value)  # built: the script's --weight-norm
    assert {s.name for s in recipe.settings if s.missing} == {
        "word embeddings: GloVe initialisation"
    }
    config = paper_config(E.get(name), strict=False)
    assert (
        recipe.mismatches(config) == []
        and config.options()["epochs"] == 10
        and config.options()["d"] == 300
    )
    assert (
        config.options()["schedule"] == "paper"
    )  # the script's --schedule, written by the paper scale
    assert config.options()["weight_norm"] is True  # and its --weight-norm
    assert [m.split(":")[0] for m in recipe.mismatches(config.with_option("epochs", 1))] == [
        "epochs"
    ]
    planted = config.with_option(
        "schedule", "constant"
    )  # the cpu scale's rate, planted at the paper scale
    assert [m.split(":")[0] for m in recipe.mismatches(planted)] == ["learning-rate schedule"]
    with pytest.raises(
        SystemExit
    ):  # a schedule the script does not know is refused by its parser, before any work
        config.with_option("schedule", "cosine").options()
    with pytest.raises(RecipeError, match="no command-line option for window"):
        write_field(
            config, "window", 3
        )  # planted: a value fixed in the script's code is refused, never kept
