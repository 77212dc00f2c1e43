"""Recipes as data (issue 31 item 1): each experiment's settings against the paper, ours read
from its configs, the ``paper`` scale built from the paper's values or refused while the code
lacks a piece of the recipe."""

from __future__ import annotations

import dataclasses
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

import dynkit.experiments as E
from dynkit.cli import main
from dynkit.experiments.judging.ledger import COMPARISONS, Ledger, LedgerRow
from dynkit.experiments.recipes import (
    ALL,
    NOT_STATED,
    RECIPES,
    Recipe,
    RecipeError,
    Setting,
    paper_config,
    read_field,
    setup_markdown,
    setup_table,
    write_field,
)
from dynkit.experiments.registry import Experiment
from dynkit.experiments.scripting import ScriptConfig

# the recipes register with their families: loaded before the parametrisations below read
# RECIPES, so that this file alone sees them all
E.load_all()

HYBRIDS = ("ode_rnn_plane_vibration", "ode_rnn_silverbox", "ode_rnn_walker2d")


def _field_value(config, name: str):
    """The config's value of ``name`` read independently of the recipes module
    (``dataclasses.asdict``; a script's config: its module's ``options`` function on the command
    line)."""
    if isinstance(config, ScriptConfig):
        return sys.modules[config._options.__module__].options(list(config.args))[name]
    d = dataclasses.asdict(config)
    if name.startswith("data."):
        return dict(map(tuple, d["data"])).get(name[5:], ALL)
    return d[name]


def assert_paper_config_faithful(recipe: Recipe, config) -> None:
    """Every setting the recipe can express holds the paper's value in ``config`` (the issue's
    check)."""
    for s in recipe.settings:
        if s.field and s.paper != NOT_STATED and not s.missing:
            value = _field_value(config, s.field)
            if isinstance(
                s.paper, float
            ):  # tolerances and rates: equal up to float round-off, nothing looser
                assert value == pytest.approx(s.paper, rel=1e-12), f"{recipe.experiment}: {s.name}"
            else:
                assert value == s.paper, f"{recipe.experiment}: {s.name}"


def test_every_registered_experiment_has_a_recipe():
    assert set(E.load_all()) == set(
        RECIPES
    )  # issue 31: every experiment shows its setup against the paper
    assert {*HYBRIDS, "node_trained"} <= set(RECIPES)
    for name in RECIPES:
        E.get(name)  # each recipe belongs to a registered experiment


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_paper_values_are_what_the_paper_scale_builds(name):
    recipe, exp = RECIPES[name], E.get(name)
    config = paper_config(exp, strict=False)
    assert type(config) is type(exp.config("full"))
    assert_paper_config_faithful(recipe, config)
    assert recipe.mismatches(config) == []


@pytest.mark.parametrize(
    "name, field, setting, planted_value",
    [
        (
            "ode_rnn_plane_vibration",
            "tol",
            "solver tolerance",
            1e-3,
        ),  # the example: 1e-3 where they use 1e-7
        # each piece of the authors' design, planted back to dynkit's earlier value
        ("ode_rnn_plane_vibration", "cell", "jump cell", "overwrite"),
        ("ode_rnn_plane_vibration", "design", "model design", "dynkit"),
        ("ode_rnn_plane_vibration", "restoring", "restoring term", "none"),
        ("ode_rnn_plane_vibration", "initial_state", "initial state", "zeros"),
        ("ode_rnn_plane_vibration", "adjoint", "adjoint", False),
        ("ode_rnn_plane_vibration", "clip_norm", "gradient clipping", None),
        ("ode_rnn_plane_vibration", "lr_schedule", "learning-rate schedule", "cosine"),
        ("ode_rnn_plane_vibration", "lr_steps", "learning-rate steps", ((5, 1e-4),)),
        ("ode_rnn_plane_vibration", "shrink", "initialisation", 1.0),
        ("ode_rnn_plane_vibration", "loss_weights", "loss weights", (1.0, 0.0, 1.0)),
        ("ode_rnn_walker2d", "tol", "solver tolerance", 1e-3),
        ("ode_rnn_walker2d", "time_scale", "time scaling", 1.0),
        # the authors' Walker2D design (issue 31 item 4), each piece planted back to dynkit's
        # earlier value
        ("ode_rnn_walker2d", "design", "model design", "dynkit"),
        ("ode_rnn_walker2d", "restoring", "restoring term", "none"),
        ("ode_rnn_walker2d", "prediction", "prediction order", "skeleton"),
        ("ode_rnn_walker2d", "model_lr", "ODE-RNN and ANODE-RNN rates", ()),
        ("ode_rnn_walker2d", "loss_weights", "loss weights", (1.0, 0.0, 1.0)),
        ("ode_rnn_walker2d", "lr_schedule", "learning-rate schedule", "cosine"),
        ("node_trained", "train_tol", "training tolerance", 1e-5),
    ],
)  # the paper's 1e-3 here: plant the cpu scale's
def test_a_planted_tolerance_in_the_paper_config_fails(name, field, setting, planted_value):
    recipe = RECIPES[name]
    planted = dataclasses.replace(paper_config(E.get(name), strict=False), **{field: planted_value})
    with pytest.raises(AssertionError, match=setting):
        assert_paper_config_faithful(recipe, planted)
    assert any(m.startswith(setting) for m in recipe.mismatches(planted))


@pytest.mark.parametrize("name", sorted(RECIPES))
@pytest.mark.parametrize("scale", ["cpu", "full"])
def test_every_setting_has_a_source_and_a_reason_where_ours_differs(name, scale):
    recipe = RECIPES[name]
    rows = recipe.rows(E.get(name).config(scale), scale)
    assert len(rows) == len(recipe.settings) > 0
    for r in rows:
        assert r["source"].strip(), r
        if not r["as_paper"]:
            assert r["why"].strip(), (
                f"{name} at {scale}: {r['setting']} differs from the paper with no reason"
            )


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_ours_is_the_registered_cpu_config(name, monkeypatch):
    recipe, exp = RECIPES[name], E.get(name)
    table = setup_table(name)

    def text(x):  # a tuple's items joined (nested ones too), floats as %g
        if isinstance(x, tuple):
            return ", ".join(map(text, x)) or "–"
        return f"{x:g}" if isinstance(x, float) else str(x)

    for s, row in zip(recipe.settings, table):
        expected = _field_value(exp.config("cpu"), s.field) if s.field else s.fixed
        assert row["cpu"] == text(expected), s.name
    # planted: change the registered cpu config, and the table follows (read, never retyped)
    # a training length; where nothing is trained (node_blowup, the measurements) a count or a size
    counted = next(
        s.field
        for s in sorted(
            recipe.settings,
            key=lambda s: COUNTED.index(s.field) if s.field in COUNTED else len(COUNTED),
        )
        if s.field in COUNTED
    )
    cpu = exp.scales["cpu"]
    changed = {**exp.scales, "cpu": write_field(cpu, counted, read_field(cpu, counted) + 7)}
    monkeypatch.setitem(E.EXPERIMENTS, name, dataclasses.replace(exp, scales=changed))
    after = {r["setting"]: r["cpu"] for r in setup_table(name)}
    before = {r["setting"]: r["cpu"] for r in table}
    assert after != before


def test_a_reasonless_difference_is_caught():
    exp = E.get("ode_rnn_plane_vibration")
    recipe = Recipe(
        "ode_rnn_plane_vibration", "review", (Setting("epochs", 500, "trainpv.py", field="epochs"),)
    )
    rows = recipe.rows(exp.config("cpu"), "cpu")
    assert (
        not rows[0]["as_paper"] and rows[0]["why"] == ""
    )  # the check above would fail on this recipe


@pytest.mark.parametrize(
    "name, piece",
    [
        ("ode_rnn_walker2d", "the recorded walker set"),
        ("ode_rnn_silverbox", "trains no Silverbox hybrid"),
        ("node_trained", "an MNIST training task"),
    ],
)
def test_the_paper_scale_refuses_and_names_the_missing_piece(name, piece, tmp_path, capsys):
    exp = E.get(name)
    with pytest.raises(RecipeError, match=piece):
        exp.config("paper")
    with pytest.raises(RecipeError, match=piece):
        E.run(name, scale="paper", seeds=(0,), out=tmp_path / "runner")
    out = tmp_path / "cli"
    assert (
        main(["run", name, "--scale", "paper", "--seeds", "0", "--out", str(out), "--quiet"]) != 0
    )
    assert piece in capsys.readouterr().err
    assert not out.exists() and not (tmp_path / "runner" / "results.json").exists()


def test_the_paper_scale_of_plane_vibration_is_the_authors_recipe():
    """Every piece of the authors' plane-vibration design is built: the paper scale runs, and it
    is their recipe."""
    exp, recipe = E.get("ode_rnn_plane_vibration"), RECIPES["ode_rnn_plane_vibration"]
    assert recipe.missing() == []
    config = exp.config("paper")
    assert_paper_config_faithful(recipe, config)
    assert (config.tol, config.adjoint, config.clip_norm, config.shrink, config.epochs) == (
        1e-7,
        True,
        1.0,
        0.01,
        500,
    )
    assert (config.cell, config.restoring, config.initial_state, config.design) == (
        "residual",
        "learnable",
        "window",
        "authors",
    )


def test_the_walker2d_recipe_lacks_only_the_recorded_set():
    """The authors' Walker2D skeleton is built (issue 31 item 4): the paper scale refuses for the
    data alone, and every other setting of its full config is the authors' (read from the config,
    never typed into the recipe)."""
    exp, recipe = E.get("ode_rnn_walker2d"), RECIPES["ode_rnn_walker2d"]
    assert [m.split(":")[0] for m in recipe.missing()] == ["data set"]
    config = paper_config(exp, strict=False)
    assert_paper_config_faithful(recipe, config)
    assert (
        config.design,
        config.cell,
        config.restoring,
        config.time_scale,
        config.tol,
        config.adjoint,
        config.clip_norm,
        config.batch_size,
        config.epochs,
    ) == ("authors", "residual", "fixed", 1 / 64, 1e-7, True, 1.0, 256, 500)
    assert dict(config.data)["preprocessing"] == "authors"
    # planted: the earlier loader at the paper scale is caught
    planted = dataclasses.replace(config, data=(("preprocessing", "dynkit"),))
    with pytest.raises(AssertionError, match="preprocessing"):
        assert_paper_config_faithful(recipe, planted)


def test_no_recipe_no_paper_scale():
    exp = Experiment(
        "toy_without_recipe",
        toy_run,
        {"smoke": ToyConfig(), "cpu": ToyConfig(5), "full": ToyConfig(9)},
    )
    with pytest.raises(RecipeError, match="one with a recipe"):
        exp.config("paper")


@dataclass(frozen=True)
class ToyConfig:
    size: int = 3
    tol: float = 1e-2
    data: tuple = ()


def toy_run(config, *, seed: int, out: Path, device: str) -> dict:
    return {"metrics": {"value": config.size + seed / 10}}


def test_a_complete_recipe_runs_the_paper_values(monkeypatch, tmp_path):
    exp = Experiment(
        "toy_recipe", toy_run, {"smoke": ToyConfig(), "cpu": ToyConfig(5), "full": ToyConfig(9)}
    )
    monkeypatch.setitem(E.EXPERIMENTS, "toy_recipe", exp)
    recipe = Recipe(
        "toy_recipe",
        "toy",
        (
            Setting("size", 11, "Table 0", field="size"),
            Setting("tolerance", 1e-7, "Sect. 0", field="tol"),
            Setting("windows", 4, "Sect. 0", field="data.max_windows"),
            Setting("optimiser", "Adam", "Sect. 0", fixed="Adam"),
        ),
    )
    monkeypatch.setitem(RECIPES, "toy_recipe", recipe)
    res = E.run("toy_recipe", scale="paper", seeds=(0,), out=tmp_path)
    assert res["scale"] == "paper" and res["config"]["size"] == 11 and res["config"]["tol"] == 1e-7
    assert res["config"]["data"] == [["max_windows", 4]]
    assert json.loads((tmp_path / "results.json").read_text())["metrics"]["value"]["mean"] == 11
    assert all(r["as_paper"] for r in recipe.rows(exp.config("paper"), "paper"))


def test_malformed_settings_are_refused():
    with pytest.raises(RecipeError, match="exactly one of field"):
        Setting("x", 1, "Table 1", field="tol", fixed="y")
    with pytest.raises(RecipeError, match="source"):
        Setting("x", 1, " ", field="tol")
    with pytest.raises(RecipeError, match="unique"):
        Recipe("e", "p", (Setting("x", 1, "s", field="tol"), Setting("x", 2, "s", field="lr")))


def test_the_ledger_shows_the_setup_against_the_paper():
    claim = next(c for c in COMPARISONS.values() if c.experiment == "ode_rnn_plane_vibration")
    table = Ledger([LedgerRow(claim, "inconclusive", "not run")])
    md = table.to_markdown()
    assert "## Setup against the paper" in md and "### ode_rnn_plane_vibration" in md
    assert setup_markdown("ode_rnn_plane_vibration") in md
    assert "| solver tolerance | 1e-07 (" in md and "| gradient clipping | 1 (" in md
    row = next(line for line in md.splitlines() if line.startswith(f"| {claim.id} |"))
    assert (
        "Setup differs from the paper in: " in row
        and "solver tolerance" in row
        and "optimiser" not in row
    )
    setups = table.to_dict()["setups"]
    assert list(setups) == ["ode_rnn_plane_vibration"]
    assert {r["setting"] for r in setups["ode_rnn_plane_vibration"]} >= {
        "solver tolerance",
        "gradient clipping",
        "epochs",
        "batch size",
        "learning rate",
    }


def test_the_ledger_says_where_the_results_of_record_ran_another_config():
    claim = next(c for c in COMPARISONS.values() if c.experiment == "ode_rnn_plane_vibration")
    cpu = json.loads(
        json.dumps(E.runner.jsonable(dataclasses.asdict(E.get(claim.experiment).config("cpu"))))
    )
    same = Ledger([LedgerRow(claim, "inconclusive", "")], {claim.experiment: cpu})
    assert same.stale_setups() == {} and "were run with another config" not in same.to_markdown()
    planted = Ledger(
        [LedgerRow(claim, "inconclusive", "")], {claim.experiment: {**cpu, "tol": 1e-7}}
    )
    assert planted.stale_setups() == {claim.experiment: {"tol": [1e-7, cpu["tol"]]}}
    assert (
        f"were run with another config: tol 1e-07 (registered cpu: {cpu['tol']:g})"
        in planted.to_markdown()
    )
    # a record that predates an option reads as its default (the behaviour before it), nothing else
    walker = next(c for c in COMPARISONS.values() if c.experiment == "ode_rnn_walker2d")
    now = json.loads(
        json.dumps(E.runner.jsonable(dataclasses.asdict(E.get(walker.experiment).config("cpu"))))
    )
    older = {
        k: v for k, v in now.items() if k not in ("initial_state", "shrink", "solver")
    }  # at their defaults
    assert (
        Ledger([LedgerRow(walker, "inconclusive", "")], {walker.experiment: older}).stale_setups()
        == {}
    )
    assert Ledger(
        [LedgerRow(walker, "inconclusive", "")],
        {walker.experiment: {**older, "initial_state": "window"}},
    ).stale_setups() == {walker.experiment: {"initial_state": ["window", "zeros"]}}


def test_the_docs_ledger_page_shows_the_setups(tmp_path):
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "docs" / "_ext"))
    import dynkit_pages

    claim = next(c for c in COMPARISONS.values() if c.experiment == "ode_rnn_walker2d")
    dynkit_pages.ledger_page(
        tmp_path / "with.md", lambda: Ledger([LedgerRow(claim, "inconclusive", "")])
    )
    text = (tmp_path / "with.md").read_text()
    assert "## Setup against the paper" in text and "### ode_rnn_walker2d" in text
    assert (
        "| time scaling | 0.015625 (" in text and "not built yet: the recorded walker set" in text
    )
    other = dataclasses.replace(
        claim, id="toy.no_recipe", experiment="toy_without_recipe"
    )  # no recipe, no table
    dynkit_pages.ledger_page(
        tmp_path / "without.md", lambda: Ledger([LedgerRow(other, "inconclusive", "")])
    )
    assert "Setup against the paper" not in (tmp_path / "without.md").read_text()


COUNTED = ("epochs", "iterations", "inits", "batch", "repeats")
"""The config fields the planted change of a cpu config may count up, in order of preference."""
SCRIPTS = sorted(n for n in RECIPES if isinstance(E.get(n).config("cpu"), ScriptConfig))
"""The recipes of experiments registered from scripts (their values read from the script's
``options``)."""


@settings(max_examples=40, deadline=None)
@given(
    name=st.sampled_from(sorted(set(RECIPES) - set(SCRIPTS))),
    scale=st.sampled_from(["smoke", "cpu", "full"]),
    value=st.one_of(st.integers(1, 10**6), st.floats(1e-12, 1.0), st.just(ALL)),
    data=st.data(),
)
def test_a_written_field_reads_back_and_nothing_else_moves(name, scale, value, data):
    """For all recipes, scales and values: what the paper scale writes into a field is what the
    table reads."""
    config = E.get(name).config(scale)
    fields = sorted(
        {
            s.field
            for s in RECIPES[name].settings
            if s.field.startswith("data.")
            or s.field in ("epochs", "batch_size", "lr", "tol", "train_tol")
        }
    )
    if not fields:
        return
    name_of = data.draw(st.sampled_from(fields))
    if value == ALL and not name_of.startswith("data."):
        value = 3
    written = write_field(config, name_of, value)
    assert read_field(written, name_of) == value
    others = [s.field for s in RECIPES[name].settings if s.field and s.field != name_of]
    assert [read_field(written, f) for f in others] == [read_field(config, f) for f in others]


def test_a_scripts_settings_are_read_from_its_command_line_and_written_onto_it():
    """A script's config (``momres_cubic``): the recipe reads what its command line runs with,
    and the paper scale can only write an option the script has; a value fixed in its code is
    refused, never silently kept."""
    config = E.get("momres_cubic").config("cpu")
    from dynkit.experiments.momres import momres_cubic

    assert (
        config.options() == momres_cubic.options(list(config.args))
        and read_field(config, "iterations") == 301
    )
    written = write_field(config, "iterations", 77)
    assert written.args.count("--iterations") == 1 and "301" not in written.args
    assert read_field(written, "iterations") == 77
    others = [
        s.field
        for s in RECIPES[
            "momres_cubic"
        ].settings  # the ResNet's count follows --iterations by default
        if s.field and s.field not in ("iterations", "resnet_iterations")
    ]
    assert [read_field(written, f) for f in others] == [read_field(config, f) for f in others]
    assert write_field(config, "depth", 15) is config  # already the paper's: nothing to write
    with pytest.raises(RecipeError, match="no command-line option for depth"):
        write_field(config, "depth", 3)  # planted: a paper value the script cannot be given
    with pytest.raises(RecipeError, match="must name a setting of the script's options"):
        read_field(config, "epochs")
    flagged = config.with_option("full", True)
    assert (
        flagged.args == (*config.args, "--full")
        and flagged.with_option("full", False).args == config.args
    )
    assert (
        read_field(
            flagged.with_option("iterations", None).with_option("iterations", False), "iterations"
        )
        == 3000
    )


@pytest.mark.parametrize("name", SCRIPTS)
def test_a_scripts_paper_scale_changes_only_its_command_line(name):
    exp = E.get(name)
    config = paper_config(exp, strict=False)
    assert isinstance(config, ScriptConfig) and config.checkpoints == exp.config("full").checkpoints
    assert_paper_config_faithful(RECIPES[name], config)
