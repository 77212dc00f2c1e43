"""The recipes (:mod:`~dynkit.experiments.recipes`) of the Momentum ResNets experiments (Sander,
Ablin, Blondel, Peyré, ``shared/papers/003``): ``momres_cubic`` (Fig. 1), ``momres_rings`` and
``momres_rings_tied`` (Fig. 5), ``momres_lista`` (Fig. 10, Appendix D), ``momres_buffer_bits``
(Sect. 3.2, Appendix C) and ``momres_reference_accuracy`` (Sect. 3.2, Appendix E).

The paper's values are read from the paper and from its authors' public code,
github.com/michaelsdr/momentumnet (``examples/plot_dynamics_1D.py``,
``examples/run_separation_nested_rings.py``, ``momentumnet/toy_datasets.py``,
``examples/plot_memory.py``; read, never copied; their values are the same from the first commit,
a410930 of February 2021, the paper's, to the last). Where the paper and the code disagree, the
paper's text wins and the source names both. Our values are read from each script's ``options``
(what its command line runs with). Kept apart from the experiment modules so that a recipe's wording
is not part of the shards' code identity.
"""

from __future__ import annotations

from ..recipes import NOT_STATED, Recipe, Setting, add_recipe, plan_seeds

PAPER = "Momentum ResNets"
SMOKE = {"smoke": "smoke: seconds for the tests, nothing is decided from it"}
SEEDS = {
    "cpu": "a decision needs the seeds its plan fixes in advance",
    "full": "a decision needs the seeds its plan fixes in advance",
}
RECORD = {
    "cpu": "kept as the results of record ran it (their registered arguments stay)",
    "full": "the registered full scale predates the recipe and stays (the paper scale writes the "
    "authors')",
}
NONE_STATED = {s: "the paper states none: ours" for s in ("smoke", "cpu", "full")}
FIG1 = f"{PAPER}, Fig. 1"
DYNAMICS_1D = "momentumnet examples/plot_dynamics_1D.py"

add_recipe(
    Recipe(
        "momres_cubic",
        FIG1,
        (
            Setting("depth", 15, f"{FIG1} (depth 15); {DYNAMICS_1D} (n_iters = 15)", field="depth"),
            Setting(
                "momentum gamma",
                0.9,
                f"{FIG1} (gamma = 0.9; {DYNAMICS_1D} sets 0.99: the paper's text wins; "
                "--gamma 0.99 runs the code's)",
                field="gamma",
            ),
            Setting(
                "tied weights",
                True,
                f"{FIG1} (theta_n = theta for all n); {DYNAMICS_1D} (one function)",
                field="tied_weights",
            ),
            Setting("residual function width", 16, f"{DYNAMICS_1D} (hidden = 16)", field="hidden"),
            Setting(
                "initial velocity", "v_0 = 0", f"{DYNAMICS_1D} (init_speed=0)", fixed="v_0 = 0"
            ),
            Setting(
                "optimiser", "SGD", f"{DYNAMICS_1D} (optim.SGD, no momentum)", field="optimiser"
            ),
            Setting("learning rate", 0.01, f"{DYNAMICS_1D} (lr=0.01)", field="lr"),
            Setting(
                "training points per iteration",
                200,
                f"{DYNAMICS_1D} (make_data_1D(200))",
                field="train_points",
            ),
            Setting(
                "training points",
                "uniform",
                f"{DYNAMICS_1D}; momentumnet toy_datasets.py (fresh uniform draws on "
                "[-1, 1] every iteration)",
                field="sampling",
            ),
            Setting(
                "iterations",
                301,
                f"{DYNAMICS_1D} (the Momentum ResNet: range(301))",
                field="iterations",
            ),
            Setting(
                "ResNet iterations",
                2001,
                f"{DYNAMICS_1D} (the ResNet: range(2001))",
                field="resnet_iterations",
            ),
            plan_seeds("one run (torch.manual_seed(1))", DYNAMICS_1D, SEEDS),
        ),
        default_reasons={**SMOKE, "full": RECORD["full"]},
    )
)
"""Fig. 1: learn x -> -x^3 with tied weights, depth 15."""

SECT51 = f"{PAPER}, Sect. 5.1, Fig. 5"
RINGS_RUN = "momentumnet examples/run_separation_nested_rings.py"
TOY_DATA = "momentumnet momentumnet/toy_datasets.py (make_data)"


def _rings(name: str, tied_reason: dict) -> Recipe:
    """Fig. 5 (the authors tie the weights); ``tied_reason``: why the experiment's tied setting
    differs, per scale."""
    return add_recipe(
        Recipe(
            name,
            SECT51,
            (
                Setting(
                    "depth", 15, f"{SECT51} (depth 15); {RINGS_RUN} (n_iters = 15)", field="depth"
                ),
                Setting(
                    "residual function width", 16, f"{SECT51} (W1, W2 in R^(16x2))", field="hidden"
                ),
                Setting(
                    "tied weights",
                    True,
                    f"{RINGS_RUN} (one function for all layers)",
                    field="tied",
                    reasons=tied_reason,
                ),
                Setting(
                    "momentum gamma",
                    0.99,
                    f"{RINGS_RUN} (gamma = 0.99 with the rate 0.2); Sect. 5.1 states none for "
                    "Fig. 5 (Sect. 5.2's 'gamma = 0.9 in the experiments' is the image "
                    "experiments'; read as Fig. 5's "
                    "until 2026-11-28: at 0.9 the authors' rate 0.2 left the untied Momentum "
                    "ResNet at 0.53 test accuracy)",
                    field="gamma",
                ),
                Setting(
                    "initial velocity", "v_0 = 0", f"{RINGS_RUN} (init_speed=0)", fixed="v_0 = 0"
                ),
                Setting(
                    "rings",
                    "authors",
                    f"{TOY_DATA}: 4 rings of radius 3 (k/2 + 0.2 u), u uniform, labels alternating",
                    field="rings",
                ),
                Setting(
                    "training points per ring",
                    2000,
                    f"{RINGS_RUN} (make_data(2000))",
                    field="points_per_ring",
                ),
                Setting(
                    "fresh training points every iteration",
                    True,
                    f"{RINGS_RUN} (make_data inside the loop)",
                    field="fresh_draws",
                ),
                Setting(
                    "test points per ring",
                    500,
                    f"{RINGS_RUN} (make_data(500))",
                    field="test_points_per_ring",
                ),
                Setting(
                    "classifier head",
                    "none",
                    f"{RINGS_RUN} (nn.CrossEntropyLoss on the network's 2-D output)",
                    field="head",
                ),
                Setting(
                    "optimiser", "Adam", f"{RINGS_RUN} (optim.Adam, full batch)", field="optimiser"
                ),
                Setting(
                    "learning rate",
                    0.2,
                    f"{RINGS_RUN} (the Momentum ResNet: 0.2, constant)",
                    field="lr",
                ),
                Setting(
                    "iterations",
                    1500,
                    f"{RINGS_RUN} (the Momentum ResNet: n_epochs = 1500)",
                    field="iterations",
                ),
                Setting(
                    "ResNet learning rate",
                    0.01,
                    f"{RINGS_RUN} (the ResNet's lr_list starts at 0.01)",
                    field="resnet_lr",
                ),
                Setting(
                    "ResNet learning-rate schedule",
                    "authors",
                    f"{RINGS_RUN} (the ResNet's lr_list: halved from "
                    "iteration 2500, divided by 10 more from 3750)",
                    field="resnet_lr_schedule",
                ),
                Setting(
                    "ResNet iterations",
                    5000,
                    f"{RINGS_RUN} (the ResNet: n_epochs = 5000)",
                    field="resnet_iterations",
                ),
                plan_seeds("one run (torch.manual_seed(1))", RINGS_RUN, SEEDS),
            ),
            default_reasons={**SMOKE, **RECORD},
        )
    )


_rings(
    "momres_rings",
    {
        scale: "this row is the untied variant (issue 21's Fig. 5 row); momres_rings_tied has the "
        "authors' tied weights"
        for scale in ("smoke", "cpu", "full")
    },
)
_rings("momres_rings_tied", {})

SECT53 = f"{PAPER}, Sect. 5.3, Fig. 10"
APPD = f"{PAPER}, Appendix D"
NO_LISTA_CODE = "the authors' LISTA code is not in their public repository"

add_recipe(
    Recipe(
        "momres_lista",
        SECT53,
        (
            Setting(
                "dictionary D",
                (16, 32),
                f"{SECT53} (d = 16, p = 32, i.i.d. Gaussian); {APPD}",
                field="dictionary",
            ),
            Setting(
                "dictionary columns",
                "unit-variance",
                f"{SECT53}; {APPD} (columns normalised to unit variance)",
                field="columns",
            ),
            Setting(
                "samples",
                "y = y~ / ||D^T y~||_inf, y~ Gaussian",
                APPD,
                fixed="y = y~ / ||D^T y~||_inf, y~ Gaussian",
            ),
            Setting("Lasso lambda", 0.1, APPD, field="lasso_lambda"),
            Setting(
                "momentum gamma",
                0.9,
                f"{PAPER}, Sect. 3.1 (gamma = 0.9 in the experiments; Sect. 5.3 names none)",
                field="gamma",
                reasons={
                    s: "dynkit's choice since the first version (commit 1c46acb, no reason "
                    "recorded): "
                    "at initialisation the net is ISTA with heavy-ball momentum 0.5"
                    for s in ("smoke", "cpu", "full")
                },
            ),
            Setting(
                "Momentum ResNet residual",
                "plain",
                f"{SECT53} (the residual function f = g - x)",
                field="momentum_residual",
                reasons={
                    s: "dynkit scales f by 1/(1 - gamma) so that the initialised net is "
                    "heavy-ball ISTA with step eta"
                    for s in ("smoke", "cpu", "full")
                },
            ),
            Setting(
                "RevNet",
                "activations duplicated, two residuals per layer",
                SECT53,
                fixed="activations duplicated, two residuals per layer",
            ),
            Setting(
                "initialisation",
                NOT_STATED,
                f"{SECT53} ({NO_LISTA_CODE})",
                fixed="every layer at ISTA",
                reasons=NONE_STATED,
            ),
            Setting(
                "depths",
                NOT_STATED,
                f"{SECT53} (Fig. 10's axis; not in the text, {NO_LISTA_CODE})",
                field="depths",
                reasons=NONE_STATED,
            ),
            Setting("optimiser", "SGD", f"{APPD} (stochastic gradient descent)", field="optimiser"),
            Setting("learning rate", 0.001, APPD, field="lr"),
            Setting(
                "batch size",
                1000,
                f"{APPD} (one batch of the training samples per iteration here)",
                field="n_train",
            ),
            Setting(
                "iterations",
                10000,
                APPD,
                field="iterations",
                reasons={
                    "cpu": "CPU time: 300 iterations x 7 depths x 3 models (the results of record)"
                },
            ),
            Setting(
                "test samples",
                NOT_STATED,
                f"{APPD} ({NO_LISTA_CODE})",
                field="n_test",
                reasons=NONE_STATED,
            ),
            plan_seeds(NOT_STATED, f"{SECT53} ({NO_LISTA_CODE})", NONE_STATED),
        ),
        default_reasons={**SMOKE, **RECORD},
    )
)
"""Fig. 10: LISTA, RevNet and Momentum ResNet, test Lasso loss against depth."""

SECT32 = f"{PAPER}, Sect. 3.2"
MEMORY_PY = "momentumnet examples/plot_memory.py"


def _measurement(name: str, no_paper_run: str, settings: tuple[Setting, ...]) -> Recipe:
    """A deterministic measurement of a statement the paper makes without a run of its own
    (``no_paper_run``)."""
    return add_recipe(
        Recipe(
            name,
            SECT32,
            settings,
            default_reasons={**SMOKE, **NONE_STATED},
            no_paper_run=no_paper_run,
        )
    )


_measurement(
    "momres_buffer_bits",
    "the paper measures no buffer sizes: Sect. 3.2 states k log2(1/gamma) bits per "
    "element, and Fig. 2 profiles the memory of a whole backward pass (dynkit's memory "
    "benchmark, not this "
    "experiment)",
    (
        Setting(
            "gammas",
            NOT_STATED,
            f"{SECT32} (the formula, for every gamma; Fig. 2's profile uses 1 - 1/(50k))",
            field="gammas",
        ),
        Setting(
            "depths",
            NOT_STATED,
            f"{SECT32} (every k; Fig. 2: 1 to 401, {MEMORY_PY})",
            field="depths",
        ),
        Setting(
            "residual function width",
            NOT_STATED,
            f"{SECT32} (f = W2^T sigma(W1 x + b); Fig. 2: d = 500, hidden 8 in {MEMORY_PY})",
            field="width",
        ),
        Setting("hidden units", NOT_STATED, f"{SECT32} (Fig. 2: 8 in {MEMORY_PY})", field="hidden"),
        Setting("batch", NOT_STATED, f"{SECT32} (Fig. 2: n_batch = 500)", field="batch"),
        Setting(
            "precision",
            NOT_STATED,
            f"{PAPER}, Appendix C (the buffer of Maclaurin et al.)",
            field="dtype",
        ),
        Setting(
            "exact multiplication",
            "Maclaurin et al.'s algorithm (Appendix C, Algorithm 1)",
            f"{PAPER}, Appendix C",
            fixed="Maclaurin et al.'s algorithm (Appendix C, Algorithm 1)",
        ),
    ),
)
_measurement(
    "momres_reference_accuracy",
    "the paper reports no gradient-accuracy measurement: Appendix E gives the "
    "backward formula and Sect. 3.1 notes a small loss of floating-point precision; this "
    "experiment "
    "compares dynkit's exact mode with the authors' package on the same net",
    (
        Setting(
            "gammas",
            NOT_STATED,
            f"{PAPER}, Sect. 3.1 (the experiments use 0.9; the authors' examples 0.99)",
            field="gammas",
        ),
        Setting("depths", NOT_STATED, f"{PAPER}, Appendix E (every k)", field="depths"),
        Setting(
            "residual function width",
            NOT_STATED,
            f"{SECT32} (f = W2^T sigma(W1 x + b))",
            field="width",
        ),
        Setting("hidden units", NOT_STATED, SECT32, field="hidden"),
        Setting(
            "tied weights",
            NOT_STATED,
            f"{SECT32} (the toy example ties them)",
            field="tied_weights",
        ),
        Setting("batch", NOT_STATED, SECT32, field="batch"),
        Setting("precision", NOT_STATED, f"{PAPER}, Sect. 3.1", field="dtype"),
        Setting(
            "reference",
            "the authors' package momentumnet (MomentumNet, use_backprop False and True)",
            "github.com/michaelsdr/momentumnet",
            fixed="the authors' package momentumnet (MomentumNet, use_backprop False and True)",
        ),
    ),
)
