"""The ledger's comparisons of the ODE-RNN hybrids (the review's Walker2D, plane vibration and
Silverbox), their validity checks, the design each ran and its data."""

from __future__ import annotations

from dataclasses import replace

from ..judging.baselines import beats_baseline
from ..judging.checks import Check
from ..judging.ledger import (
    COMPARISONS,
    RowValues,
    add_comparison,
    add_comparisons,
    at_most,
    declare_data,
    declare_validity,
    difference,
    greater,
    less,
    metric,
    off_floor,
    plateau,
    ratio,
)
from ..judging.papers import REVIEW
from ..registry import get
from .time_series_hybrids import data_label


# Where our hybrids differ from the authors' public code (hedixia/HeavyBallNODE): a failure of these
# rows may be ours, not the method's. Plane vibration and Silverbox run the authors' design
# (dynkit.experiments.hybrids.recipe lists every setting); Walker2D too, on its simulated stand-in,
# its cpu training read from the registered config (its torchdiffeq twin the same).
def _authors_design(name: str, what: str) -> str:
    """The design note of a hybrid experiment run on the authors' plane-vibration design, its cpu
    training read from the registered config (so that the note cannot drift from what the cpu
    scale runs)."""
    cpu = get(name).config("cpu")
    windows = dict(cpu.data).get("max_windows")
    on = (
        f"the first {windows} training windows of each part" if windows else "every training window"
    )
    rates = ", then ".join(f"{rate:g}" for rate in (cpu.lr, *(r for _, r in cpu.lr_steps)))
    return (
        f"{what} (hedixia/HeavyBallNODE: their sizes, residual cell, restoring term, initial "
        f"state read from the "
        f"window, adjoint, clipping, 0.01 shrink, loss weights); at the cpu scale "
        f"{cpu.epochs} epochs of batch "
        f"{cpu.batch_size} on {on} (theirs 500 epochs of 64) at {rates} (theirs 1e-3 then "
        f"1e-4), at tolerance "
        f"{cpu.tol:g} (theirs 1e-7)"
    )


_WALKER_CPU = get("ode_rnn_walker2d").config("cpu")
WALKER2D_DESIGN = (
    f"the authors' Walker2D design (hedixia/HeavyBallNODE walker2d/*_rnn_walker.py: their "
    f"sizes, a linear "
    f"field, a 3-layer tanh cell, residual for SONODE/HBNODE/GHBNODE, HBNODE's frozen "
    f"restoring term, "
    f"gaps / 64, the adjoint, clipping; their loader odelstm_data.py: raw observations, "
    f"overlapping "
    f"windows) with every model's output one stamp after its observation as the review "
    f"states it (their "
    f"ODE-RNN/ANODE-RNN code reads it two stamps ahead); at the cpu scale "
    f"{_WALKER_CPU.epochs} epochs of "
    f"batch {_WALKER_CPU.batch_size} (theirs 500 of 256) on {dict(_WALKER_CPU.data)['n_episodes']} "
    f"simulated episodes, tolerance {_WALKER_CPU.tol:g} (theirs 1e-7)"
)
HYBRID_DESIGNS = {
    "ode_rnn_plane_vibration": _authors_design("ode_rnn_plane_vibration", "the authors' design"),
    "ode_rnn_silverbox": _authors_design(
        "ode_rnn_silverbox",
        "the authors' plane-vibration design, as they train no Silverbox hybrid",
    ),
    "ode_rnn_walker2d": WALKER2D_DESIGN,
}
HYBRID_DESIGN = (
    "ours, not the authors': the paper's parameter counts reached with a wider state (the "
    "authors keep "
    "data channels + a few augmented ones and add layers), a tanh cell overwriting the state "
    "(theirs is "
    "residual with a linear output; ours diverged that way without their 0.01 init shrink "
    "and gradient "
    "clipping), HBNODE without the restoring -xi h their code adds, raw gaps (their Walker2D "
    "divides "
    "by 64), dopri5 at 1e-3 in training (theirs 1e-7 with the adjoint)"
)

# ---- review Sect. 3.4.4, Fig. 13: Walker2D
# --------------------------------------------------------------------- (metric key, the loss in
# words, how the metric reads): the review compares training and test losses alike
LOSSES = (
    ("train_loss", "training loss", "last-epoch training loss"),
    ("test_mse", "test loss", "test MSE"),
)
for model, label in (("hbnode", "HBNODE-RNN"), ("ghbnode", "GHBNODE-RNN")):
    for base, base_label in (("node", "ODE-RNN"), ("anode", "ANODE-RNN")):
        for key, loss, reads in LOSSES:
            add_comparison(
                f"review.walker2d_{model}_{key}_vs_{base}",
                paper=REVIEW,
                claim=f"{label} has a much smaller {loss} than {base_label} on Walker2D",
                paper_figure=f"Fig. 13 ({loss}, no value given)",
                experiment="ode_rnn_walker2d",
                metric=f"{reads} {label} / {base_label} (simulated walker)",
                value=ratio(f"{model}.{key}", f"{base}.{key}"),
                rule=less(0.8, null=1.0),
            )
    # "significantly less NFEs in both training (forward and backward) and in testing than ODE-RNN
    # and ANODE-RNN"
    for base, base_label in (("node", "ODE-RNN"), ("anode", "ANODE-RNN")):
        suffix = "" if base == "node" else f"_vs_{base}"
        # measured on the trained model at rtol = atol = NFE_TOL (at the training tolerance 1e-3
        # every model sits on the solver's floor of 2 steps per interval), per interval solve
        for kind, key, what in (
            ("forward", "tight.forward_nfe_per_solve", "forward NFE of a training step"),
            ("backward", "tight.backward_nfe_per_solve", "backward NFE of a training step"),
            ("test", "tight.test_nfe_per_solve", "NFE over test windows"),
        ):
            what = f"{what} per interval solve, trained model, rtol 1e-6"
            add_comparison(
                f"review.walker2d_{model}_{kind}_nfe{suffix}",
                paper=REVIEW,
                claim=f"{label} needs significantly fewer NFE than {base_label} on Walker2D "
                f"({what})",
                paper_figure="Fig. 13 (NFE)",
                experiment="ode_rnn_walker2d",
                metric=f"{what}, {label} / {base_label}",
                value=ratio(f"{model}.{key}", f"{base}.{key}"),
                rule=less(0.8, null=1.0),
            )

# ---- review Sect. 3.3, Fig. 8: the adjoint of (G)HBNODE-RNN does not vanish
# ------------------------------------ value: log10(||a(t_1)|| / ||a(T)||) of the hybrid minus that
# of ODE-RNN over the 64 observations of a window; the review's figure shows ODE-RNN's adjoint
# vanishing by orders of magnitude while (G)HBNODE-RNN's stays flat, so "reproduced" asks for at
# least one order of magnitude (1.0) in favour of the heavy-ball hybrid.
for task in ("walker2d", "silverbox", "plane_vibration"):
    where = (
        "Fig. 8 (Walker2D)"
        if task == "walker2d"
        else f"Fig. 8's claim (made on Walker2D), tested on {task}"
    )
    for model, label in (("hbnode", "HBNODE-RNN"), ("ghbnode", "GHBNODE-RNN")):
        add_comparisons(
            REVIEW,
            f"ode_rnn_{task}",
            [
                RowValues(
                    f"review.{task}_{model}_adjoint_not_vanishing",
                    f"The adjoint [dL/dh, dL/dm] of {label} does not vanish through time while "
                    f"ODE-RNN's does",
                    where,
                    f"log10(||a(t_1)||/||a(T)||), {label} - ODE-RNN, 64 observations",
                    difference(f"{model}.adjoint_log10_ratio", "node.adjoint_log10_ratio"),
                    greater(1.0, null=0.0),
                ),
                # the same claim on the hybrid's own numbers, against an absolute criterion
                # (stated: it shrinks by less than one order of magnitude over the 64
                # observations; log10 ratio > -1)
                RowValues(
                    f"review.{task}_{model}_adjoint_own",
                    f"The adjoint [dL/dh, dL/dm] of {label} does not vanish through time (its "
                    f"own ratio, absolute)",
                    where,
                    f"log10(||a(t_1)||/||a(T)||) of {label} alone, 64 observations "
                    f"(criterion > -1)",
                    metric(f"{model}.adjoint_log10_ratio"),
                    greater(-1.0, sesoi=1.0),
                ),
            ],
        )

# ---- review Sect. 3.4.3, Fig. 12: plane vibration
# --------------------------------------------------------------
for model, label in (("hbnode", "HBNODE-RNN"), ("ghbnode", "GHBNODE-RNN")):
    add_comparisons(
        REVIEW,
        "ode_rnn_plane_vibration",
        [
            RowValues(
                f"review.plane_vibration_{model}_test_mse_vs_sonode",
                f"{label} predicts better than SONODE-RNN on plane vibration",
                "Fig. 12 (test loss, no value given)",
                f"8-stamp forecast test MSE {label} / SONODE-RNN",
                ratio(f"{model}.test_mse", "sonode.test_mse"),
                less(0.8, null=1.0),
            ),
            RowValues(
                f"review.plane_vibration_{model}_backward_nfe_vs_sonode",
                f"{label} uses fewer backward NFE than SONODE-RNN on plane vibration",
                "Fig. 12 (backward NFE)",
                f"backward NFE of a training step per interval solve, trained model, rtol 1e-6, "
                f"{label} / SONODE-RNN",
                ratio(
                    f"{model}.tight.backward_nfe_per_solve", "sonode.tight.backward_nfe_per_solve"
                ),
                less(0.8, null=1.0),
            ),
        ],
    )
add_comparisons(
    REVIEW,
    "ode_rnn_plane_vibration",
    (
        RowValues(
            f"review.plane_vibration_{base}_{row}",
            f"{base_label} learns the second-order dynamics very poorly: much larger {loss} than "
            f"HBNODE-RNN",
            "Fig. 12 and Sect. 3.4.3 text",
            f"{reads.replace('test', 'forecast test')} {base_label} / HBNODE-RNN",
            ratio(f"{base}.{key}", f"hbnode.{key}"),
            greater(2.0, null=1.0),
        )
        for base, base_label in (("node", "ODE-RNN"), ("anode", "ANODE-RNN"))
        for (key, loss, reads), row in zip(LOSSES, ("train_loss", "learns_poorly"))
    ),
)

# ---- what makes an ODE-RNN hybrid run valid
# ---------------------------------------------------------- Trained: the test error has plateaued,
# relative change <= 2 % over the last 3 epochs (the cpu scale decays the learning rate to 0 on a
# cosine: the plateau is where training ends, not a cut). Off the floor: the NFE rows are measured
# per interval solve on the trained model at rtol 1e-6; 2 accepted dopri5 steps cost 14 evaluations
# (2 for the initial step, 6 per step), and an NFE row needs 1.5x that floor.
NFE_FLOOR = 14
# Trained bar: each model's test MSE at least 10 % below the better trivial predictor's on the same
# test windows (persistence or the training mean, dynkit.experiments.judging.baselines), computed
# from the shard's config and seed.
BAR_MARGIN = 0.1
BAR_WHY = (
    "the better of persistence and the training mean on the same test windows, a stated margin "
    "of 10 %"
)


def _plateaued_off_floor(model: str, epochs: int) -> tuple[Check, Check]:
    """The checks that a hybrid ``model`` trained for ``epochs`` epochs has learned: its test error
    plateaued (relative change <= 2 % over the last 3 epochs) and its forward NFE at rtol 1e-6 off
    the solver's floor (:data:`NFE_FLOOR`)."""
    return (
        plateau(f"{model}.epoch{{epoch}}.test_mse", epochs, k=3, rtol=0.02),
        off_floor(
            f"{model}.tight.forward_nfe_per_solve",
            NFE_FLOOR,
            "dopri5 at rtol 1e-6, 2 accepted steps per interval solve",
            subject=model,
            when="tight",
        ),
    )


def _beats_trivial_predictor(model: str) -> Check:
    """The trained bar of a hybrid ``model``: its test MSE :data:`BAR_MARGIN` below the better
    trivial predictor's on the same test windows."""
    return beats_baseline(
        f"{model}.test_mse", "baseline.best.test_mse", BAR_MARGIN, BAR_WHY, subject=model
    )


for task in ("walker2d", "silverbox", "plane_vibration"):
    epochs = get(f"ode_rnn_{task}").config("cpu").epochs
    for model in ("node", "anode", "sonode", "hbnode", "ghbnode"):
        declare_validity(
            f"ode_rnn_{task}",
            *_plateaued_off_floor(model, epochs),
            at_most(
                f"{model}.adjoint_log10_ratio",
                3.0,
                "an adjoint that grows by more than 3 orders of magnitude explodes",
                kind="bounded",
                when="adjoint",
            ),
            _beats_trivial_predictor(model),
        )

# the same NFE claim with torchdiffeq, the papers' solver (the twin experiment of solver_variants):
# is the outcome the engine's or the model's?
add_comparisons(
    REVIEW,
    "ode_rnn_walker2d_torchdiffeq",
    [
        RowValues(
            "review.walker2d_hbnode_forward_nfe_torchdiffeq",
            "HBNODE-RNN needs significantly fewer NFE than ODE-RNN on Walker2D (forward NFE of a "
            "training step), "
            "solved with torchdiffeq instead of dk.solve: the same outcome with both engines?",
            "Fig. 13 (NFE)",
            "forward NFE of a training step per interval solve, trained model, rtol 1e-6, HBNODE-RNN "  # noqa: E501
            "/ ODE-RNN, "
            "torchdiffeq",
            ratio("hbnode.tight.forward_nfe_per_solve", "node.tight.forward_nfe_per_solve"),
            less(0.8, null=1.0),
        ),
    ],
)
for model in ("node", "hbnode"):
    declare_validity(
        "ode_rnn_walker2d_torchdiffeq",
        *_plateaued_off_floor(model, get("ode_rnn_walker2d").config("cpu").epochs),
        _beats_trivial_predictor(model),
    )

for _id, _claim in list(COMPARISONS.items()):
    if _claim.experiment.startswith("ode_rnn_"):
        design = HYBRID_DESIGNS.get(_claim.experiment.removesuffix("_torchdiffeq"), HYBRID_DESIGN)
        COMPARISONS[_id] = replace(_claim, design_note=design)
# each row says what its run's data were (measured, or the simulated stand-in), from the config its
# results record
for _task in ("walker2d", "plane_vibration", "silverbox"):
    declare_data(f"ode_rnn_{_task}", data_label)
declare_data("ode_rnn_walker2d_torchdiffeq", data_label)
