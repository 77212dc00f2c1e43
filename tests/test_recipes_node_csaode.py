"""The recipes of the review's NODE experiments (node_recipes) and of CSAODE's (csaode_recipes): the settings a script
runs with are the ones its recipe reads (one source), the paper scale writes the paper's values or refuses, and a
planted deviation is caught."""
from __future__ import annotations

import importlib
import inspect

import pytest

import dynkit.experiments as E
from dynkit.experiments.recipes import RECIPES, RecipeError, paper_config, read_field, write_field
from dynkit.experiments.solver_variants import SUFFIX


def _run_keywords(module) -> set[str]:
    """The keyword-only parameters of ``module.run``: the settings the run takes from ``options``."""
    return {n for n, p in inspect.signature(module.run).parameters.items() if p.kind is p.KEYWORD_ONLY}


SCRIPTS = ["node_point_cloud"]


@pytest.mark.parametrize("name", SCRIPTS)
def test_a_scripts_options_are_exactly_what_its_run_takes(name):
    """One source: every setting ``options`` returns is a keyword of ``run`` and the other way round, so no value the
    recipe reads can be left unused, and no setting of the run is missing from the recipe's reach."""
    module = importlib.import_module(f"dynkit.experiments.{name}")
    for scale in ("smoke", "cpu", "full"):
        assert set(E.get(name).config(scale).options()) == _run_keywords(module), scale


def _fake_point_cloud_training(calls):
    def train_model(model, task, **kwargs):
        calls.append({"model": model, "task": task, **kwargs})
        history = [{"train_loss": 0.1, "forward_nfe": 20.0, "backward_nfe": 26.0, "test_acc": 1.0}]
        return None, {"history": history, "n_parameters": 525}
    return train_model


def test_node_point_cloud_trains_with_the_settings_its_recipe_reads(monkeypatch, tmp_path):
    from dynkit.experiments import node_point_cloud

    calls = []
    monkeypatch.setattr(node_point_cloud, "train_model", _fake_point_cloud_training(calls))
    config = E.get("node_point_cloud" + SUFFIX).config("cpu")
    node_point_cloud.main([*config.args, "--out", str(tmp_path), "--quiet"])
    settings = config.options()
    assert [c["model"] for c in calls] == list(settings["models"]) and len(calls) == settings["runs"] * 3
    for key in ("epochs", "tol", "solver", "method", "adjoint", "batch_size", "lr"):
        assert {c[key] for c in calls} == {settings[key]}, key
    assert settings["solver"] == "torchdiffeq"  # the twin's own command line, read through its options
    # planted: a tolerance on the command line moves what the recipe reads and what the run trains with, together
    calls.clear()
    planted = config.with_option("tol", 1e-3)
    node_point_cloud.main([*planted.args, "--out", str(tmp_path), "--quiet"])
    assert read_field(planted, "tol") == 1e-3 and {c["tol"] for c in calls} == {1e-3}
    assert any(m.startswith("solver tolerance") for m in RECIPES["node_point_cloud"].mismatches(planted))


@pytest.mark.parametrize("name", ["node_point_cloud", "node_point_cloud" + SUFFIX])
def test_node_point_cloud_paper_scale(name):
    recipe = RECIPES[name]
    with pytest.raises(RecipeError, match="the authors' point-cloud skeleton"):
        E.get(name).config("paper")
    config = paper_config(E.get(name), strict=False)
    assert recipe.mismatches(config) == []
    assert config.options()["solver"] == "torchdiffeq" and config.options()["runs"] == 100
    # planted: a paper value the script cannot be given on its command line is refused, never silently kept
    with pytest.raises(RecipeError, match="no command-line option for lr"):
        write_field(config, "lr", 1e-3)
