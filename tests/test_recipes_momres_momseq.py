"""The recipes of the Momentum ResNets, Momentum Transformer and MomentumRNN experiments (issue
31 item 1): the paper scale writes the authors' values onto each script's command line and the
script then runs with them; a planted deviation is caught; a value the script fixes in code, or a
piece it lacks, is refused by name."""

from __future__ import annotations

import pytest
import torch

import dynkit.experiments as E
from dynkit.experiments.recipes import RECIPES, RecipeError, paper_config, write_field

E.load_all()


def test_cubic_paper_scale_is_the_authors_example():
    """momres_cubic: every setting of the authors' plot_dynamics_1D.py is expressible, so the
    paper scale runs."""
    exp, recipe = E.get("momres_cubic"), RECIPES["momres_cubic"]
    assert recipe.missing() == []
    options = exp.config("paper").options()
    assert (options["optimiser"], options["lr"], options["sampling"], options["train_points"]) == (
        "SGD",
        0.01,
        "uniform",
        200,
    )
    assert (
        options["iterations"],
        options["resnet_iterations"],
        options["hidden"],
        options["gamma"],
    ) == (301, 2001, 16, 0.9)
    assert recipe.mismatches(exp.config("paper")) == []
    # planted: the cpu scale's Adam written into the paper config is caught by name
    planted = exp.config("paper").with_option("optimiser", "Adam")
    assert [m.split(":")[0] for m in recipe.mismatches(planted)] == ["optimiser"]


def test_cubic_uniform_points_are_fresh_draws_on_the_interval():
    from dynkit.experiments.momres.momres_cubic import training_points

    g = torch.Generator().manual_seed(0)
    a, b = training_points("uniform", 500, g), training_points("uniform", 500, g)
    assert a.shape == (500, 1) and not torch.equal(a, b)  # fresh each iteration
    assert (
        a.min() >= -1 and a.max() <= 1 and a.min() < -0.9 and a.max() > 0.9
    )  # 500 draws: tails reached
    grid = training_points("grid", 5, g)
    assert torch.equal(grid.squeeze(1), torch.linspace(-1, 1, 5))  # the grid: the same every call


@pytest.mark.parametrize("name", ["momres_rings", "momres_rings_tied"])
def test_rings_paper_scale_is_the_authors_example(name):
    exp, recipe = E.get(name), RECIPES[name]
    assert recipe.missing() == []
    options = exp.config("paper").options()
    assert (
        options["tied"],
        options["lr"],
        options["iterations"],
        options["resnet_iterations"],
        options["points_per_ring"],
        options["test_points_per_ring"],
    ) == (True, 0.2, 1500, 5000, 2000, 500)
    assert (
        options["rings"],
        options["fresh_draws"],
        options["head"],
        options["resnet_lr"],
        options["resnet_lr_schedule"],
    ) == ("authors", True, "none", 0.01, "authors")
    # planted: the logistic head of the registered scales in the paper config is caught by name
    planted = exp.config("paper").with_option("head", "logistic")
    assert [m.split(":")[0] for m in recipe.mismatches(planted)] == ["classifier head"]


def test_the_authors_rings_and_schedule():
    """The authors' rings (radii 3 (k/2 + 0.2 u)) and the ResNet's schedule (their lr_list: 1,
    1/2, 1/20)."""
    from dynkit.experiments.momres.momres_rings import authors_rings, lr_factor

    x, y = authors_rings(1000, torch.Generator().manual_seed(0))
    radius = x.norm(dim=1).reshape(4, 1000)
    for k in range(4):  # ring k + 1: radius in [1.5 (k + 1), 1.5 (k + 1) + 0.6); round-off only
        assert (
            radius[k].min() >= 1.5 * (k + 1) - 1e-5 and radius[k].max() < 1.5 * (k + 1) + 0.6 + 1e-5
        )
    assert y.reshape(4, 1000)[:, 0].tolist() == [0.0, 1.0, 0.0, 1.0]
    assert [lr_factor("authors", i, 5000) for i in (0, 2499, 2500, 3749, 3750, 4999)] == [
        1,
        1,
        0.5,
        0.5,
        0.05,
        0.05,
    ]
    assert {lr_factor("constant", i, 5000) for i in range(0, 5000, 250)} == {1.0}


def test_rings_runs_the_authors_pieces(tmp_path):
    """A few iterations with every authors' option: the head-less net classifies by argmax of
    x_15."""
    from dynkit.experiments.momres import momres_rings

    argv = [
        "--tied",
        "--iterations",
        "3",
        "--resnet-iterations",
        "4",
        "--points-per-ring",
        "5",
        "--test-points-per-ring",
        "5",
        "--rings",
        "authors",
        "--fresh-draws",
        "--head",
        "none",
        "--lr",
        "0.2",
        "--resnet-lr",
        "0.01",
        "--resnet-lr-schedule",
        "authors",
        "--quiet",
        "--out",
        str(tmp_path),
    ]
    result = momres_rings.main(argv)
    assert result["config"]["head"] == "none" and result["config"]["resnet_iterations"] == 4
    assert (
        len(result["resnet"]["loss_curve"]) == 1 and 0 <= result["momentum"]["test_accuracy"] <= 1
    )
    model = momres_rings.Classifier(0.9, True, head="none")
    assert model.head is None and model(torch.zeros(3, 2)).shape == (3, 2)


def test_the_untied_rings_row_says_it_is_not_the_authors_net():
    rows = {
        r["setting"]: r
        for r in RECIPES["momres_rings"].rows(E.get("momres_rings").config("cpu"), "cpu")
    }
    assert not rows["tied weights"]["as_paper"] and "untied variant" in rows["tied weights"]["why"]
    tied = {
        r["setting"]: r
        for r in RECIPES["momres_rings_tied"].rows(E.get("momres_rings_tied").config("cpu"), "cpu")
    }
    assert tied["tied weights"]["as_paper"]


@pytest.mark.parametrize(
    "name, field, value",
    [
        ("momres_cubic", "hidden", 32),
        ("momres_cubic", "depth", 20),
        ("momres_rings", "hidden", 32),
        ("momres_rings", "optimiser", "SGD"),
    ],
)
def test_a_value_fixed_in_the_scripts_code_is_refused(name, field, value):
    """Planted: a paper value the script cannot be given on its command line (fixed in its code)."""
    with pytest.raises(RecipeError, match=f"no command-line option for {field}"):
        write_field(E.get(name).config("full"), field, value)


def test_lista_paper_scale_is_appendix_d():
    """momres_lista: every stated value of Appendix D is expressible; the paper scale writes them
    all."""
    exp, recipe = E.get("momres_lista"), RECIPES["momres_lista"]
    assert recipe.missing() == []
    options = exp.config("paper").options()
    assert (options["optimiser"], options["lr"], options["n_train"], options["iterations"]) == (
        "SGD",
        0.001,
        1000,
        10000,
    )
    assert (
        options["gamma"],
        options["momentum_residual"],
        options["columns"],
        options["lasso_lambda"],
    ) == (0.9, "plain", "unit-variance", 0.1)
    # planted: dynkit's gamma 0.5 in the paper config is caught by name
    planted = exp.config("paper").with_option("gamma", 0.5)
    assert [m.split(":")[0] for m in recipe.mismatches(planted)] == ["momentum gamma"]


def test_lista_unit_variance_columns_and_plain_residual():
    """The two options the paper's recipe needs do what they say (the references: closed forms)."""
    from dynkit.experiments.momres.momres_lista import ISTAResidual, make_model, make_problem

    D_norm, *_ = make_problem(4, 4, torch.Generator().manual_seed(3))
    D_var, *_ = make_problem(4, 4, torch.Generator().manual_seed(3), "unit-variance")
    # unit variance (mean of squares 1 over d = 16 entries) is norm sqrt(16) = 4; round-off only
    assert torch.allclose(D_var.norm(dim=0), torch.full((32,), 4.0, dtype=D_var.dtype), rtol=1e-12)
    assert torch.allclose(D_var, 4 * D_norm, rtol=1e-12)
    scaled = make_model("momentum", D_norm, 2, gamma=0.9)
    plain = make_model("momentum", D_norm, 2, gamma=0.9, residual="plain")
    assert all(isinstance(f, ISTAResidual) for f in plain.functions)
    assert [f.scale for f in plain.functions] == [1.0, 1.0]
    assert [f.scale for f in scaled.functions] == pytest.approx(
        [10.0, 10.0], rel=1e-12
    )  # 1 / (1 - 0.9)


@pytest.mark.parametrize(
    "name, reason",
    [
        ("momres_buffer_bits", "measures no buffer sizes"),
        ("momres_reference_accuracy", "no gradient-accuracy measurement"),
    ],
)
def test_measurements_without_a_paper_run_refuse_the_paper_scale(name, reason):
    with pytest.raises(RecipeError, match=reason):
        E.get(name).config("paper")
    recipe = RECIPES[name]
    assert recipe.expressible() == []  # nothing stated to write: every value is ours, and says so
    rows = recipe.rows(E.get(name).config("cpu"), "cpu")
    assert all(r["as_paper"] or r["why"] == "the paper states none: ours" for r in rows)


@pytest.mark.parametrize(
    "name, scale, iterations", [("momres_cubic", "smoke", 5), ("momres_rings", "smoke", 5)]
)
def test_the_resnets_count_follows_iterations_unless_given(name, scale, iterations):
    config = E.get(name).config(
        scale
    )  # momres_rings' cpu scale gives the authors' two counts (1500, 5000)
    assert config.options()["resnet_iterations"] == config.options()["iterations"] == iterations
    moved = write_field(config, "iterations", 77)
    assert moved.options()["resnet_iterations"] == 77
    apart = write_field(moved, "resnet_iterations", 5)
    assert (apart.options()["iterations"], apart.options()["resnet_iterations"]) == (77, 5)


@pytest.mark.parametrize(
    "module, argv, expected",
    [
        ("momres_cubic", ["--lr", "0"], "--lr: expected a finite number > 0, got '0'"),
        ("momres_cubic", ["--gamma", "-0.1"], "--gamma: expected a number in [0, 1), got '-0.1'"),
        (
            "momres_cubic",
            ["--train-points", "-3"],
            "--train-points: expected a positive integer, got '-3'",
        ),
        (
            "momres_rings",
            ["--points-per-ring", "x"],
            "--points-per-ring: expected a positive integer, got 'x'",
        ),
        ("momres_lista", ["--gamma", "1"], "--gamma: expected a number in [0, 1), got '1'"),
        ("momres_lista", ["--lr", "inf"], "--lr: expected a finite number > 0, got 'inf'"),
        ("momres_buffer_bits", ["--batch", "0"], "--batch: expected a positive integer, got '0'"),
        (
            "momres_reference_accuracy",
            ["--batch", "2.5"],
            "--batch: expected a positive integer, got '2.5'",
        ),
        (
            "momseq_copy",
            ["--lr-drop-after", "0"],
            "--lr-drop-after: expected a positive integer, got '0'",
        ),
        ("momseq_copy", ["--optimiser", "SGD"], "--optimiser: invalid choice: 'SGD'"),
    ],
)
def test_a_bad_option_is_refused_by_name_before_any_work(module, argv, expected, capsys):
    import importlib

    script = importlib.import_module(E.get(module).module or E.get(module).run.__module__)
    with pytest.raises(SystemExit):
        script.options(argv)
    assert expected in capsys.readouterr().err


def test_copy_paper_scale_is_sect_4_1_and_table_1():
    """momseq_copy: Sect. 4.1's sizes and training, Table 1's momentum values; the paper scale
    runs them."""
    exp, recipe = E.get("momseq_copy"), RECIPES["momseq_copy"]
    assert recipe.missing() == []
    options = exp.config("paper").options()
    assert (
        options["max_length"],
        options["layers"],
        options["heads"],
        options["d_model"],
        options["batch"],
    ) == (128, 4, 8, 32, 64)
    assert (options["optimiser"], options["lr"], options["lr_drop_after"]) == ("RAdam", 0.001, 3000)
    assert (
        options["beta"],
        options["step"],
        options["connection_beta"],
        options["connection_step"],
        options["adaptive_step"],
    ) == (0.1, 0.6, 0.99, 0.99, 0.99)
    # planted: the cpu scale's learning rate in the paper config is caught by name
    planted = exp.config("paper").with_option("lr", 0.002)
    assert [m.split(":")[0] for m in recipe.mismatches(planted)] == ["learning rate"]


def test_copy_models_are_built_from_the_recipes_values():
    """The models the run trains carry the options' Table 1 values (one source): a planted change
    moves them."""
    from dynkit.experiments.momseq import momseq_copy

    settings = momseq_copy.options([])
    built = momseq_copy.model_settings(**{k: settings[k] for k in momseq_copy.MOMENTUM})
    assert built == momseq_copy.MODELS and tuple(built) == settings["models"]
    assert built["momentum+connection"] == dict(
        attention="momentum",
        beta=0.1,
        gamma=0.6,
        connection="momentum",
        connection_beta=0.99,
        connection_step=0.99,
    )
    planted = momseq_copy.model_settings(
        **{**{k: settings[k] for k in momseq_copy.MOMENTUM}, "beta": 0.3}
    )
    assert planted["adaptive"]["beta"] == 0.3 and planted != built


def test_copy_lr_drop_divides_the_rate_by_ten_after_the_given_steps(tmp_path):
    from dynkit.experiments.momseq import momseq_copy

    argv = [
        "--epochs",
        "2",
        "--max-length",
        "6",
        "--steps-per-epoch",
        "2",
        "--batch",
        "4",
        "--test-size",
        "4",
        "--d-model",
        "8",
        "--heads",
        "2",
        "--layers",
        "1",
        "--d-ff",
        "8",
        "--lr",
        "0.01",
        "--lr-drop-after",
        "3",
        "--optimiser",
        "RAdam",
        "--quiet",
        "--out",
        str(tmp_path),
    ]
    results = momseq_copy.main(argv)
    # 2 steps per epoch: the rate is 0.01 after step 2 and 0.001 from step 3 on (MultiStepLR's
    # closed form)
    assert [e["lr"] for e in results["linear"]["history"]] == pytest.approx(
        [0.01, 0.001], rel=1e-12
    )


@pytest.mark.parametrize(
    "name, reason",
    [("momseq_attention_scaling", "measures no cost against N"), ("momseq_vanishing", "MNIST")],
)
def test_the_sequence_paper_scales_refuse_by_name(name, reason):
    with pytest.raises(RecipeError, match=reason):
        E.get(name).config("paper")


def test_vanishing_cells_follow_the_options():
    from dynkit.experiments.momseq import momseq_vanishing

    settings = momseq_vanishing.options(["--models", "RNN,MomentumRNN"])
    assert settings["models"] == ("RNN", "MomentumRNN") and (settings["mu"], settings["s"]) == (
        0.6,
        0.6,
    )
    cells = momseq_vanishing.model_settings(**{k: settings[k] for k in momseq_vanishing.CELL})
    assert cells["MomentumRNN"] == dict(cell="rnn", rule="momentum", mu=0.6, s=0.6)
    assert {**momseq_vanishing.MODELS, **momseq_vanishing.FULL_EXTRA} == cells
    assert momseq_vanishing.options(["--full"])["models"] == tuple(cells)  # --full: all seven
    # the recipe's paper scale writes a tuple space-separated: the same subset as the registered
    # comma form
    assert (
        momseq_vanishing.options(["--models", "RNN", "MomentumRNN"])["models"] == settings["models"]
    )


@pytest.mark.parametrize("name", ["momres_rings", "momres_rings_tied"])
def test_the_rings_cpu_scale_is_the_authors_training_whole(name):
    recipe, config = RECIPES[name], E.get(name).config("cpu")
    # only the seeds differ (and the untied row's tying, its variant of Fig. 5)
    allowed = {"seeds"} | ({"tied weights"} if name == "momres_rings" else set())
    assert {r["setting"] for r in recipe.rows(config, "cpu") if not r["as_paper"]} == allowed
    planted = write_field(config, "lr", 0.01)  # the results of record's rate
    assert "learning rate" in {
        r["setting"] for r in recipe.rows(planted, "cpu") if not r["as_paper"]
    }
    planted = write_field(
        config, "gamma", 0.9
    )  # the paper's image experiments' gamma, not the rings script's
    assert "momentum gamma" in {
        r["setting"] for r in recipe.rows(planted, "cpu") if not r["as_paper"]
    }
