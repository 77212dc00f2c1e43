"""The recipes (:mod:`~dynkit.experiments.recipes`) of the review's ODE-RNN hybrid experiments
(``ode_rnn_plane_vibration``, ``ode_rnn_walker2d``, ``ode_rnn_silverbox``; Sect. 3.3-3.4, Table 4).

The paper's values are read from the review and from its authors' code, github.com/hedixia/HeavyBallNODE at
commit cd1065f (``plane_vibration/trainpv.py`` and ``hbnode_rnn_pv.py``, ``walker2d/hbnode_rnn_walker.py``,
``misc.py``, ``silverbox_init.py``); where the two disagree the recipe names both. Kept apart from
:mod:`~dynkit.experiments.time_series_hybrids` so that a recipe's wording is not part of the shards' code identity.
"""
from __future__ import annotations

import dataclasses

from .recipes import ALL, NOT_STATED, RECIPES, Recipe, Setting, add_recipe
from .solver_variants import SUFFIX

REPO = "HeavyBallNODE"
SMOKE = {"smoke": "smoke: seconds for the tests, nothing is decided from it"}
ADJOINT = Setting("adjoint", "adjoint (torchdiffeq odeint_adjoint)",
                  f"{REPO} misc.py (odeint is odeint_adjoint), used by base.py ODE_RNN_with_Grad_Listener",
                  fixed="backpropagation through the solver steps (ODEBlock adjoint=False)",
                  missing="an adjoint option in HybridConfig")
OPTIMISER = Setting("optimiser", "Adam", "review Sect. 3.4 (all experiments use Adam)",
                    fixed="Adam")  # dynkit.tasks.time_series.train_hybrid
STEP_SCHEDULE = "a step learning-rate schedule in train_hybrid (it offers constant and cosine)"
ENGINE_WHY = {"cpu": "dynkit's own solver counts every evaluation; ode_rnn_*_torchdiffeq runs the authors' engine",
              "full": "dynkit's own solver counts every evaluation; ode_rnn_*_torchdiffeq runs the authors' engine"}


def _cell(source: str) -> Setting:
    return Setting("jump cell", "residual: h + cell([h, x]), linear output", source,
                   fixed="tanh cell overwriting the state (HybridConfig has no cell option)",
                   missing="the authors' residual jump cell as a HybridConfig option (ODERNN(residual=True) exists, "
                           "the experiment does not use it)")


def _clip(source: str) -> Setting:
    return Setting("gradient clipping", "global norm 1.0", source, fixed="none (train_hybrid)",
                   missing="gradient clipping in train_hybrid")


def _seeds(source: str) -> Setting:
    return Setting("seeds", "one run, torch.manual_seed(0)", source, fixed="the plan's seeds (analysis/plans)",
                   reasons={"cpu": "a decision needs several seeds (the plan fixes them in advance)",
                            "full": "a decision needs several seeds (the plan fixes them in advance)"})


PV = f"{REPO} plane_vibration/trainpv.py"
PV_MODEL = f"{REPO} plane_vibration/hbnode_rnn_pv.py"
add_recipe(Recipe("ode_rnn_plane_vibration", "review Sect. 3.4.3", (
    Setting("data set", "measured", "review Sect. 3.4.3; the F-16 ground vibration series, "
            f"{REPO} data/pv.csv", field="source"),
    Setting("training windows", ALL, f"{REPO} pvdat.py (90 % of start indices, seed 1, split 2:1:1)",
            field="data.max_windows",
            reasons={"cpu": "CPU time: the first 25 windows of each part (of 509 / 254 / 254)"}),
    _cell(f"{PV_MODEL} temprnn (out = m_ + h)"),
    Setting("ODE engine", "torchdiffeq", f"{REPO} misc.py (torchdiffeq, dopri5 by default)", field="solver",
            reasons=ENGINE_WHY),
    Setting("solver tolerance", 1e-7, f"{PV_MODEL} (ODE_RNN_with_Grad_Listener tol=1e-7)", field="tol",
            reasons={"cpu": "CPU time: 1e-3 in training; the NFE rows are measured at nfe_tol 1e-6"}),
    ADJOINT,
    OPTIMISER,
    Setting("learning rate", 1e-3, f"{PV} lr_dict {{0: 1e-3, 50: 1e-4}} (review Table 4 lists 1e-4, the rate "
            "after epoch 50)", field="lr",
            reasons={"cpu": "3e-3 with a cosine decay so that 40 epochs end on a plateau",
                     "full": "1e-4, Table 4's value, constant (no step schedule yet)"}),
    Setting("learning-rate schedule", "step: 1e-4 from epoch 50 (Adam restarted)", f"{PV} lr_dict", field="lr_schedule",
            missing=STEP_SCHEDULE,
            reasons={"cpu": "cosine decay to 0 over 40 epochs (a plateau within the CPU budget)",
                     "full": "constant (no step schedule yet)"}),
    _clip(f"{PV} (clip_grad_norm_ 1.0)"),
    Setting("epochs", 500, f"{PV} niter=500", field="epochs",
            reasons={"cpu": "CPU time: 40 epochs (about a minute per shard)", "full": "100 epochs"}),
    Setting("batch size", 64, f"{PV} batchsize=64; review Table 4", field="batch_size",
            reasons={"cpu": "16: the cpu scale's 25 windows give 2 steps an epoch"}),
    Setting("initialisation", "PyTorch default, every parameter scaled by 0.01",
            f"{PV} pre_shrink=0.01 (misc.py shrink_parameters)", fixed="PyTorch default",
            missing="the authors' 0.01 parameter shrink"),
    Setting("loss", "0.1 x (one-step + reconstruction MSE) + 8-step forecast MSE", f"{PV} total_loss",
            fixed="one-step MSE + forecast MSE (train_hybrid forecast_weight 1.0)",
            missing="the authors' loss weights and reconstruction term"),
    _seeds(f"{PV} torch.manual_seed(0)"),
), default_reasons=SMOKE))

WK = f"{REPO} walker2d/hbnode_rnn_walker.py"
add_recipe(Recipe("ode_rnn_walker2d", "review Sect. 3.4.4", (
    Setting("data set", "measured", "review Sect. 3.4.4: the recorded walker kinematics of its ref. [8]",
            field="source", missing="the recorded walker set (not available offline; a MuJoCo simulation stands in)",
            reasons={"cpu": "the recorded set is not available offline: a simulated walker stands in",
                     "full": "the recorded set is not available offline: a simulated walker stands in"}),
    _cell(f"{WK} temprnn (out = dense3(...) + h)"),
    Setting("time scaling", "gaps divided by 64", f"{WK} (train_times / 64.0)", fixed="raw gaps",
            missing="the authors' time scaling as a HybridConfig option"),
    Setting("ODE engine", "torchdiffeq", f"{REPO} misc.py (torchdiffeq, dopri5 by default)", field="solver",
            reasons=ENGINE_WHY),
    Setting("solver tolerance", 1e-7, f"{WK} (ODE_RNN_with_Grad_Listener tol=1e-7)", field="tol",
            reasons={"cpu": "CPU time: 1e-3 in training; the NFE rows are measured at nfe_tol 1e-6",
                     "full": "1e-3, not yet the authors' 1e-7"}),
    ADJOINT,
    OPTIMISER,
    Setting("learning rate", 1e-3, f"{WK} lr_dict {{0: 1e-3, 50: 3e-3}} (review Table 4 lists 3e-3, the rate "
            "from epoch 50)", field="lr",
            reasons={"cpu": "3e-3 (Table 4's) with a cosine decay so that 80 epochs end on a plateau",
                     "full": "3e-3, Table 4's value, constant (no step schedule yet)"}),
    Setting("learning-rate schedule", "step: 3e-3 from epoch 50 (Adam restarted)", f"{WK} lr_dict",
            field="lr_schedule", missing=STEP_SCHEDULE,
            reasons={"cpu": "cosine decay to 0 over 80 epochs (a plateau within the CPU budget)",
                     "full": "constant (no step schedule yet)"}),
    _clip(f"{WK} (clip_grad_norm_ 1.0)"),
    Setting("epochs", 500, f"{WK} range(500)", field="epochs",
            reasons={"cpu": "CPU time: 80 epochs", "full": "100 epochs"}),
    Setting("batch size", 256, f"{WK} batchsize=256; review Table 4", field="batch_size",
            reasons={"cpu": "16: the cpu scale's few simulated windows"}),
    _seeds(f"{WK} torch.manual_seed(0)"),
), default_reasons=SMOKE))

SB = f"{REPO} silverbox_init.py"
NO_TRAINING = ("the review trains no Silverbox hybrid: its Silverbox run (Sect. 3.3, GHBNODE) integrates untrained "
               f"models, {SB}")
add_recipe(Recipe("ode_rnn_silverbox", "review Sect. 3.3 (Silverbox); no hybrid recipe in the review", (
    Setting("data set", "measured", f"review Sect. 3.3 (the Silverbox task of its ref. [65]); {REPO} data/sb.csv",
            field="source"),
    Setting("training windows", ALL, f"{SB} (first 1,000 samples for training, next 4,000 for testing)",
            field="data.max_windows"),
    Setting("ODE engine", "torchdiffeq", f"{REPO} misc.py (torchdiffeq, dopri5 by default)", field="solver",
            reasons=ENGINE_WHY),
    Setting("solver tolerance", NOT_STATED, NO_TRAINING, field="tol"),
    OPTIMISER,
    Setting("learning rate", NOT_STATED, NO_TRAINING, field="lr"),
    Setting("epochs", NOT_STATED, NO_TRAINING, field="epochs"),
    Setting("batch size", NOT_STATED, NO_TRAINING, field="batch_size"),
), default_reasons=SMOKE, no_paper_run=NO_TRAINING))
for _name in ("ode_rnn_plane_vibration", "ode_rnn_walker2d", "ode_rnn_silverbox"):  # the torchdiffeq twins: same recipe
    add_recipe(dataclasses.replace(RECIPES[_name], experiment=_name + SUFFIX))
