"""The recipes (:mod:`~dynkit.experiments.recipes`) of the review's NODE experiments (Sect. 3.3-3.4,
Table 4): ``node_trained`` (image classification, Sect. 3.4.2, Figs. 10-11, Tables 4-5),
``node_images`` (Figs. 6 and 10), ``node_point_cloud`` (Sect. 3.4.1, Fig. 9), their torchdiffeq
twins (the same recipe), ``node_blowup`` (Sect. 3.2.3, Fig. 7) and ``node_adjoint_norm`` (Sect. 3.3,
Fig. 8: Walker2D, run on a simulated stand-in).

The paper's values are read from the review and from its authors' code,
github.com/hedixia/HeavyBallNODE at commit cd1065f (``mnist/mnist_hbnode.py``,
``mnist/mnist_train.py``, ``point_cloud/nested_n_spheres_*.ipynb``, ``silverbox_init.py``,
``walker2d/*_rnn_walker.py``); where the two disagree the recipe names both. Our values of a
script-registered experiment are read from its ``options`` (what its command line runs with). Kept
apart from the experiment modules so that a recipe's wording is not part of the shards' code
identity.
"""

from __future__ import annotations

import dataclasses

from ..recipes import NOT_STATED, PLAN_SEEDS, RECIPES, Recipe, Setting, add_recipe, plan_seeds
from ..solver_variants import SUFFIX

MNIST = "HeavyBallNODE mnist/mnist_hbnode.py"
SMOKE = {"smoke": "smoke: seconds for the tests, nothing is decided from it"}


def _both(why: str) -> dict:
    """The same reason at the ``cpu`` and ``full`` scales."""
    return {"cpu": why, "full": why}


PLAN_WHY = _both("a decision needs the seeds its plan fixes in advance")


def _optimiser(source: str) -> Setting:
    """Adam, as every experiment of the review (Sect. 3.4) and ``source``."""
    return Setting("optimiser", "Adam", f"review Sect. 3.4; {source}", fixed="Adam")


def _engine(source: str, twin: str) -> Setting:
    """The ODE engine: the authors' torchdiffeq (``source``); ours dynkit's, ``twin`` runs
    theirs."""
    why = f"dynkit's own solver counts every evaluation; {twin + SUFFIX} runs the authors' engine"
    return Setting("ODE engine", "torchdiffeq", source, field="solver", reasons=_both(why))


def _seeds(paper: str, source: str, ours: str = PLAN_SEEDS) -> Setting:
    return plan_seeds(paper, source, PLAN_WHY, ours)


IMAGE_DATA = Setting(
    "data set",
    "mnist",
    "review Sect. 3.4.2 (MNIST and CIFAR10, Figs. 10-11)",
    field="task",
    missing="an MNIST training task (dynkit.tasks.node_runs trains point_cloud, digits, "
    "fashion_mnist; MNIST is not "
    "available offline)",
    reasons={
        "cpu": "CPU time: scikit-learn's 8x8 digits stand in for MNIST",
        "full": "Fashion-MNIST (1x28x28, the MNIST-size models of Table 5) stands in: MNIST is not "
        "available "
        "offline",
    },
)
DIGITS_FLOOR_WHY = (
    "1e-5: at 1e-3 every model on 8x8 digits sat on dopri5's floor (20 evaluations per "
    "batch), so the "
    "per-epoch NFE rows measured the tolerance, not the model"
)
IMAGE_CLIPPING = Setting(
    "gradient clipping",
    10.0,
    "HeavyBallNODE mnist/mnist_train.py (clip_grad_norm_ 10.0, the loop of mnist_hbnode.py and "
    "mnist_full_run.py; ANODE's own mnist_anode.py clips at 1.0, which one value for every model "
    "does not separate)",
    field="clip_norm",
)


def _image_models(rows: str) -> Setting:
    return Setting(
        "models",
        ("node", "anode", "sonode", "hbnode", "ghbnode"),
        "review Sect. 3.4.2, Table 5",
        field="models",
        reasons={"cpu": f"CPU time: the three models {rows}"},
    )


def _image_tolerance(field: str, source: str = "", full_why: str = "") -> Setting:
    return Setting(
        "training tolerance",
        1e-3,
        f"{MNIST} (--tol default 1e-3){source}",
        field=field,
        reasons={"cpu": DIGITS_FLOOR_WHY, **({"full": full_why} if full_why else {})},
    )


def _image_epochs(full_why: str) -> Setting:
    return Setting(
        "epochs",
        40,
        f"{MNIST} (--niters default 40)",
        field="epochs",
        reasons={"cpu": "CPU time: 3 epochs of 8x8 digits", "full": full_why},
    )


TRAINED = add_recipe(
    Recipe(
        "node_trained",
        "review Sect. 3.4.2",
        (
            IMAGE_DATA,
            _image_models("the claims compare"),
            _image_tolerance(
                "train_tol",
                full_why="None: the task's tolerance of dynkit.models.node_paper.PAPER_TOLERANCE "
                "(1e-3)",
            ),
            Setting(
                "tolerances of the NFE sweep",
                NOT_STATED,
                "review Fig. 11 (the text lists no values)",
                field="tolerances",
            ),
            _optimiser(f"{MNIST} (optim.Adam)"),
            IMAGE_CLIPPING,
            _image_epochs("10 epochs of a Fashion-MNIST subset"),
            _seeds("5 runs (for tries in range(5))", MNIST),
        ),
        default_reasons=SMOKE,
    )
)

AUTHORS_ODEINT = (
    "HeavyBallNODE base.py NODElayer (misc.py's odeint, which is torchdiffeq's odeint_adjoint)"
)
add_recipe(
    Recipe(
        "node_images",
        "review Sect. 3.4.2, Figs. 6 and 10, Tables 4-5",
        (
            IMAGE_DATA,
            _image_models("the rows compare (ANODE, SONODE, HBNODE)"),
            _engine(AUTHORS_ODEINT, "node_images"),
            Setting(
                "solver",
                "dopri5",
                f"{AUTHORS_ODEINT}: dopri5, torchdiffeq's default",
                field="method",
            ),
            _image_tolerance("tol", "; review Sect. 3.1 trains Fig. 6's CIFAR10 models at 1e-5"),
            Setting("adjoint", True, AUTHORS_ODEINT, field="adjoint"),
            _optimiser(f"{MNIST} (optim.Adam)"),
            Setting(
                "learning rate", 1e-3, f"review Table 4 (MNIST); {MNIST} (--lr 0.001)", field="lr"
            ),
            Setting(
                "batch size",
                64,
                f"review Table 4 (MNIST; {MNIST} loads mnist(batch_size=256))",
                field="batch_size",
            ),
            IMAGE_CLIPPING,
            _image_epochs("10 epochs of all of Fashion-MNIST"),
            _seeds(
                "5 runs (for tries in range(5))",
                MNIST,
                "the plan's seeds, each mapped to a model seed of this "
                "experiment's own stream (dynkit.experiments.node.node_images.model_seed)",
            ),
        ),
        default_reasons=SMOKE,
    )
)


PC = "HeavyBallNODE point_cloud/nested_n_spheres_*.ipynb"
PC_SECT = "review Sect. 3.4.1"
PC_DATA = "120 points: 40 uniform in |r| < 0.5, 80 uniform in 0.85 < |r| < 1"


def _point_cloud_counts() -> tuple[int, ...]:
    """Our point-cloud models' parameter counts, counted (NODE, ANODE, SONODE, HBNODE, GHBNODE;
    the authors' design)."""
    from ...models.node_paper import count_parameters, from_paper

    return tuple(
        count_parameters(from_paper(m, "point_cloud", design="authors"))
        for m in ("node", "anode", "sonode", "hbnode", "ghbnode")
    )


PC_COUNTS_WHY = (
    "the authors' widths (20, 20, 13, 14, 14): the review's 528 for SONODE counts the "
    "notebook's damping "
    "parameter, created in every second-order model's field and used by HBNODE's and GHBNODE's only"
)
add_recipe(
    Recipe(
        "node_point_cloud",
        "review Sect. 3.4.1, Fig. 9",
        (
            Setting(
                "data set", PC_DATA, PC_SECT, fixed=PC_DATA
            ),  # dynkit.tasks.point_cloud, a new draw per run
            Setting(
                "models",
                ("node", "anode", "sonode", "hbnode", "ghbnode"),
                f"{PC_SECT}, Fig. 9",
                field="models",
                reasons={
                    "cpu": "CPU time: the three models the rows compare (NODE, HBNODE, GHBNODE)"
                },
            ),
            Setting(
                "parameter counts",
                (525, 567, 528, 568, 568),
                f"{PC_SECT} (NODE, ANODE, SONODE, HBNODE, GHBNODE)",
                fixed=", ".join(map(str, _point_cloud_counts()))
                + " (dynkit.models.node_paper.AUTHORS_POINT_CLOUD)",
                reasons=_both(PC_COUNTS_WHY),
            ),
            Setting(
                "model design",
                "authors",
                f"{PC}: an ELU 3-layer field (hidden 20; SONODE 13; HBNODE, GHBNODE 14), "
                "ANODE one zero dimension, SONODE/HBNODE/GHBNODE's initial velocity a "
                "3-layer hardtanh(-5, 5) network of "
                "the point, GHBNODE's restoring term 2 z with sigma the identity, a dense "
                "layer to one output bounded by "
                "hardtanh(-1, 1) (dynkit.models.node_paper.AUTHORS_POINT_CLOUD)",
                field="design",
            ),
            Setting(
                "loss",
                "mse",
                f"{PC} (nn.MSELoss of the bounded output against the labels, -1 and 1 as in the "
                "nested-spheres data of Dupont et al.)",
                field="objective",
            ),
            _engine(f"{PC} (torchdiffeq's odeint_adjoint)", "node_point_cloud"),
            Setting("solver", "dopri5", f"{PC} (odeint's default method)", field="method"),
            Setting(
                "solver tolerance",
                1e-7,
                f"{PC_SECT} (tolerance 1e-7); {PC} (--tol 1e-7)",
                field="tol",
            ),
            Setting(
                "adjoint",
                True,
                f"{PC} (from torchdiffeq import odeint_adjoint as odeint)",
                field="adjoint",
            ),
            _optimiser(f"{PC} (optim.Adam)"),
            Setting("learning rate", 0.01, f"review Table 4; {PC} (--lr 0.01)", field="lr"),
            Setting(
                "batch size",
                50,
                "review Table 4 (the notebook steps on its whole data file)",
                field="batch_size",
            ),
            Setting(
                "epochs",
                100,
                f"{PC} (--niters 300: 300 Adam steps; at Table 4's batch 50, the 120 points "
                f"make 3 steps "
                "an epoch, so 100 epochs)",
                field="epochs",
            ),
            Setting(
                "independent runs",
                100,
                f"{PC_SECT} (100 independent runs); {PC} (range(100))",
                field="runs",
                reasons={
                    "cpu": "CPU time (about 2 min a run): one run per seed, the plan's seeds are "
                    "the runs"
                },
            ),
            _seeds(
                "unseeded",
                f"{PC} (no manual seed)",
                "the plan's seeds: run r of seed s from seed 10,000 s + r",
            ),
        ),
        default_reasons=SMOKE,
    )
)

SB = "HeavyBallNODE silverbox_init.py"
BLOWUP_SECT = "review Sect. 3.2.3"
UNTRAINED = "untrained models: no optimiser, learning rate or epochs (review Sect. 3.2.3, Fig. 7)"
NORM = "||h(t)||"
GHB = "sigma = hardtanh on [-5, 5], xi = ln 2"
add_recipe(
    Recipe(
        "node_blowup",
        "review Sect. 3.2.3, Fig. 7",
        (
            Setting(
                "data set",
                "measured",
                f"{BLOWUP_SECT} (the Silverbox task of its ref. [65]); {SB} (data/sb.csv: V1 "
                "of the first 1,000 samples x100, linear between samples, time in samples; "
                "h(0) = V2(0))",
                field="source",
            ),
            Setting(
                "models",
                ("node", "anode", "sonode", "hbnode", "ghbnode"),
                f"{BLOWUP_SECT}, Fig. 7",
                field="models",
            ),
            Setting(
                "field",
                "a dense layer of [h, V1(t)]",
                f"{BLOWUP_SECT} (footnote 4: no h^3 term); {SB} (DF)",
                fixed="a dense layer of [h, V1(t)]",
            ),  # node_blowup.DrivenDense
            Setting(
                "initial state",
                "ANODE: one zero dimension; SONODE/HBNODE/GHBNODE: velocity from a dense network",
                f"{BLOWUP_SECT}; {SB} (initial_velocity: a dense layer without bias, of a "
                f"constant 1)",
                fixed="ANODE: one zero dimension; SONODE/HBNODE/GHBNODE: velocity from a dense "
                "network",
            ),
            # ours: node_blowup.build, nn.Linear(1, 1) of h(0), in the review's words
            Setting("damping gamma", "sigmoid(-3)", BLOWUP_SECT, fixed="sigmoid(-3)"),
            Setting(
                "GHBNODE",
                GHB,
                f"{BLOWUP_SECT}; {SB} (corr=0: xi = softplus(0), actv_h Hardtanh(-5, 5))",
                fixed=GHB,
            ),
            Setting(
                "initialisations",
                10,
                f"{SB} (for r in range(10))",
                field="inits",
                reasons={
                    "full": "100: the rows compare fractions of inits (one in ten is the smallest "
                    "effect of "
                    "interest)"
                },
            ),
            Setting(
                "horizon (samples)",
                63.0,
                f"{SB} (evaluation_times = arange(64); the review's text gives none)",
                field="t_end",
                reasons={
                    "full": "ours: a longer horizon than the authors' 63 samples (400), so that "
                    "the growth the rows count (||h(T)|| above 10 and 1e8) shows further; the "
                    "cpu scale runs the authors' 63"
                },
            ),
            Setting(
                "ODE engine",
                "torchdiffeq",
                f"{SB} (NODEintegrate: torchdiffeq, dopri5)",
                field="solver",
                reasons={
                    "full": "dk.solve: an engine moves an untrained trajectory by the tolerance "
                    "only, and no row here counts evaluations; the cpu scale runs torchdiffeq"
                },
            ),
            Setting("solver", "dopri5", f"{SB} (torchdiffeq's default)", fixed="dopri5"),
            *(
                Setting(
                    f"{kind} tolerance",
                    1e-7,
                    f"{SB} (NODEintegrate tol=1e-7)",
                    field=field,
                    reasons={
                        "full": "ours (relative 1e-6, absolute 1e-8: the script's defaults); "
                        "the cpu scale runs the authors' 1e-7"
                    },
                )
                for kind, field in (("relative", "rtol"), ("absolute", "atol"))
            ),
            Setting(
                "measured norm",
                NORM,
                f"review Sect. 3.2.3 and Fig. 7 (||h(t)||; the authors' {SB} norms the whole "
                "state [h, m])",
                fixed=NORM,
            ),  # node_blowup.trajectory_norms: h with ANODE's augmentation
            Setting(
                "statistic",
                "log10 of the mean norm over the inits",
                f"{SB} (np.log10(np.mean(odesizelist, axis=0)))",
                # recorded in every shard (node_blowup.json: log10_mean_norm over t); the rows
                # read per-init statistics (their metrics name them: a mean is one init's blow-up)
                fixed="log10 of the mean norm over the inits",
            ),
            Setting(
                "training",
                UNTRAINED,
                f"{BLOWUP_SECT}; {SB} (the models are never trained)",
                fixed=UNTRAINED,
            ),
            _seeds(
                "unseeded",
                f"{SB} (no manual seed)",
                "the plan's seeds: init i of seed s from torch seed 100,003 s + i",
            ),
        ),
        default_reasons=SMOKE,
    )
)

WK = "HeavyBallNODE walker2d/*_rnn_walker.py"
WK_SECT = "review Sect. 3.3 (Fig. 8) and Sect. 3.4.4"
WALKER_DATA = (
    "Walker2D's recorded training sequences (not available offline; this experiment runs a "
    "simulated "
    "oscillator in their place)"
)
STAND_IN = (
    "the recorded Walker2D set is not available offline: 8 windows of a simulated driven "
    "Duffing oscillator "
    "(Silverbox-like) stand in, 7 to train, 1 held out whose adjoint is measured"
)
STAND_IN_WHY = _both(STAND_IN)
DESIGN_WHY = _both(
    "dynkit's hybrid with the authors' residual cell and safeguards from their "
    "plane-vibration script "
    "(node_adjoint_norm.hybrid), sized for the stand-in's 2 inputs"
)
add_recipe(
    Recipe(
        "node_adjoint_norm",
        "review Sect. 3.3, Fig. 8 (settings of Sect. 3.4.4)",
        (
            Setting(
                "data set",
                "Walker2D kinematics (the recorded set of the review's ref. [8])",
                f"{WK_SECT}; {WK} (odelstm_data.Walker2dImitationData)",
                fixed="simulated driven Duffing oscillator, 10 % of the samples "
                "dropped (node_adjoint_norm.make_data)",
                missing=WALKER_DATA,
                reasons=STAND_IN_WHY,
            ),
            Setting(
                "irregular sampling",
                "10 % of the samples removed",
                "review Sect. 3.4.4",
                fixed="10 % of the samples removed",
            ),  # node_adjoint_norm.make_data
            Setting(
                "sequence length",
                64,
                f"review Sect. 3.4.4 (64 time stamps); {WK} (seqlen = 64)",
                field="length",
                reasons=_both(
                    "ours: longer windows than the paper's 64 stamps, so that the adjoint is "
                    "followed over a "
                    "larger gap T - t"
                ),
            ),
            Setting(
                "models",
                ("node", "hbnode", "ghbnode"),
                f"{WK_SECT} (Fig. 8: ODE-RNN, HBNODE-RNN, GHBNODE-RNN)",
                field="models",
            ),
            Setting(
                "model design",
                "authors",
                f"{WK}: hidden 24, the ODE a dense layer of h, a 3-layer tanh cell, zero "
                "initial state; HBNODE's restoring term fixed at softplus(0) h (corr=0, "
                "frozen), GHBNODE's learnable "
                "from softplus(1) with tanh on dh",
                fixed="hidden 16, a tanh 3-layer field of width 32, HBNODE's "
                "restoring term learnable (node_adjoint_norm.hybrid)",
                missing="the authors' Walker2D skeleton (a dense-layer field, hidden 24)",
                reasons=DESIGN_WHY,
            ),
            Setting(
                "jump cell",
                "residual for (G)HBNODE-RNN, overwrite for ODE-RNN",
                f"{WK} temprnn (HBNODE/GHBNODE: out "
                "= dense3(...) + h; node_rnn_walker.py: out = dense3(...))",
                field="cell",
                missing="a jump cell per model (the script's --cell applies to every model)",
                reasons=_both(
                    "one cell for every model (the script's --cell): the residual one of the "
                    "authors' two "
                    "heavy-ball hybrids, so that the models differ in their ODE alone"
                ),
            ),
            Setting(
                "solver",
                "dopri5 at tolerance 1e-7, gradients by the adjoint",
                f"{WK} (ODE_RNN_with_Grad_Listener tol=1e-7; misc.py's odeint is odeint_adjoint)",
                fixed="RK4, one step per gap, backpropagation through "
                "the steps (node_adjoint_norm.hybrid)",
                missing="an adaptive solver with the adjoint in this script",
                reasons=_both(
                    "CPU time: one RK4 step per gap (ours; dL/dz_t is read at the same "
                    "observation states)"
                ),
            ),
            Setting(
                "time scaling",
                1 / 64,
                f"{WK} (train_times / 64.0)",
                fixed="the stand-in's own clock (0.15 a sample)",
                reasons=STAND_IN_WHY,
            ),
            _optimiser(f"{WK} (torch.optim.Adam)"),
            Setting(
                "learning rate",
                3e-3,
                f"review Table 4 (Walker2D); {WK} (ODE-RNN's rate throughout, (G)HBNODE-RNN's "
                "from epoch 50)",
                field="lr",
            ),
            Setting(
                "learning-rate schedule",
                "(G)HBNODE-RNN: 1e-3 for 50 epochs, then 3e-3 (a fresh Adam)",
                f"{WK} lr_dict {{0: 1e-3, 50: 3e-3}} (node_rnn_walker.py: {{0: 3e-3}})",
                fixed="constant",
                missing="a learning-rate schedule in this script",
                reasons=_both("ours: Table 4's rate throughout a short run"),
            ),
            Setting("gradient clipping", 1.0, f"{WK} (clip_grad_norm_ 1.0)", field="clip_norm"),
            Setting(
                "initialisation",
                1.0,
                f"{WK} (no shrink_parameters: torch's default initialisation)",
                field="shrink",
                reasons=_both(
                    "ours: every parameter times 0.01 (the authors' plane-vibration "
                    "pre_shrink), the residual "
                    "cell's safeguard; --shrink 1 is the walker scripts'"
                ),
            ),
            Setting(
                "loss",
                "one-step MSE",
                f"{WK} (criteria(predict, train_y), nn.MSELoss)",
                fixed="one-step MSE",
            ),
            Setting(
                "batch (sequences a step)",
                256,
                f"review Table 4; {WK} (batchsize = 256)",
                field="batch_windows",
                missing=WALKER_DATA,
                reasons=STAND_IN_WHY,
            ),
            Setting(
                "training length",
                "500 epochs",
                f"{WK} (range(500))",
                field="iterations",
                missing=WALKER_DATA,
                reasons=_both("ours: 300 Adam steps (after 30 no model beat persistence)"),
            ),
            Setting(
                "measured",
                "||dL/dz_t|| of the loss on the last output, on every training batch",
                f"{WK} (gradrec: lossf on predict[-1], the grads of ode_rnn.h_rnn)",
                fixed="||dL/dz_t|| of the loss on the last output, "
                "once, on the held-out window after training",
                reasons=_both("measured where the trained bar is checked (the held-out window)"),
            ),
            _seeds("one run, torch.manual_seed(0)", f"{WK} (torch.manual_seed(0))"),
        ),
        default_reasons=SMOKE,
    )
)

for _name in (
    "node_trained",
    "node_point_cloud",
    "node_images",
):  # the torchdiffeq twins: the same recipe
    add_recipe(dataclasses.replace(RECIPES[_name], experiment=_name + SUFFIX))
