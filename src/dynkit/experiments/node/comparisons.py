"""The ledger's comparisons of the neural-ODE experiments (the momentum review: trained HBNODE and
GHBNODE, the point cloud, the images, the blow-up, the adjoint), their validity checks and data."""

from __future__ import annotations

from dataclasses import replace

from ..judging.baselines import above_measured_floor, beats_baseline
from ..judging.checks import Check
from ..judging.ledger import (
    COMPARISONS,
    RowValues,
    add_comparisons,
    at_least,
    declare_data,
    declare_validity,
    difference,
    greater,
    less,
    metric,
    ratio,
    ratio_of_ratios,
)
from ..judging.papers import DIGIT_CHANCE, REVIEW
from .node_blowup import data_label as blowup_data_label

# ---- trained heavy-ball neural ODEs (review Sect. 3.4), experiment node_trained
# --------------------------------
GROWTH_SESOI = 0.079
"""log10(1.2): a 20 % change of the NFE over training is the smallest of interest (stated; the
review gives none)."""

add_comparisons(
    REVIEW,
    "node_trained",
    [
        *(
            RowValues(
                f"review.{model}_{kind}_nfe_per_epoch",
                f"{label} needs fewer {kind} NFE per training batch than NODE",
                "Figs. 6, 10 (MNIST; digits here)",
                f"{kind} NFE {label} / NODE, last training epoch (digits, trained at rtol 1e-5)",
                ratio(f"{model}.last_epoch.{kind}_nfe", f"node.last_epoch.{kind}_nfe"),
                less(0.8, null=1.0),
            )
            for model, label in (("hbnode", "HBNODE"), ("ghbnode", "GHBNODE"))
            for kind in ("forward", "backward")
        ),
        RowValues(
            "review.hbnode_nfe_tolerance_forward",
            "At tight tolerance HBNODE's forward NFE stays below NODE's",
            "Fig. 11",
            "forward NFE HBNODE / NODE at rtol = atol = 1e-7, trained models",
            ratio("hbnode.forward_nfe@1e-07", "node.forward_nfe@1e-07"),
            less(0.8, null=1.0),
        ),
        RowValues(
            "review.hbnode_nfe_tolerance_backward",
            "At tight tolerance HBNODE's backward (adjoint) NFE stays below NODE's",
            "Fig. 11",
            "backward NFE HBNODE / NODE at rtol = atol = 1e-7, trained models",
            ratio("hbnode.backward_nfe@1e-07", "node.backward_nfe@1e-07"),
            less(0.8, null=1.0),
        ),
        RowValues(
            "review.hbnode_field_less_stiff",
            "Heavy-ball damping keeps the learned dynamics benign: HBNODE's trained field is less "
            "stiff than "
            "NODE's",
            "Sect. 3.3-3.4 (argument, no figure)",
            "log10 stiffness ratio of the trained field, HBNODE - NODE (digits)",
            difference("hbnode.log10_stiffness_ratio_after", "node.log10_stiffness_ratio_after"),
            less(0.0, sesoi=0.3),  # sesoi chosen: a factor 2 in stiffness
        ),
        RowValues(
            "review.node_nfe_grows_in_training",
            "NODE's forward NFE grows as training proceeds",
            "Figs. 6, 10",
            "NODE forward NFE per batch, epoch 3 / epoch 1 (digits, trained at rtol 1e-5)",
            ratio("node.epoch3.forward_nfe", "node.epoch1.forward_nfe"),
            greater(1.0, sesoi=GROWTH_SESOI),
        ),
        RowValues(
            "review.hbnode_nfe_grows_less",
            "HBNODE's forward NFE grows less during training than NODE's",
            "Figs. 6, 10",
            "(HBNODE epoch 3 / epoch 1) / (NODE epoch 3 / epoch 1), forward NFE",
            ratio_of_ratios(
                "hbnode.epoch3.forward_nfe",
                "hbnode.epoch1.forward_nfe",
                "node.epoch3.forward_nfe",
                "node.epoch1.forward_nfe",
            ),
            less(1.0, sesoi=GROWTH_SESOI),
        ),
        RowValues(
            "review.hbnode_trained_not_stiff",
            "The trained HBNODE field is not stiff (its step is accuracy-limited; Sect. 3.3's "
            "motivation)",
            "Sect. 3.3 (no figure)",
            "fraction of seeds whose trained HBNODE field is stiff (stiffness_report)",
            metric("hbnode.is_stiff_after"),
            less(0.5, sesoi=0.25),
        ),
    ],
)

# ---- point cloud (review Sect. 3.4.1, Fig. 9), experiment node_point_cloud
# ------------------------------------
# A difference of MSEs, not a log ratio: the authors' models train by the MSE against labels -1 and
# 1, which HBNODE drives to exactly 0 (seeds 4, 7, 9 of look 2), where a log ratio is undefined.
# Changed after look 2 had been seen (the plan says so: analysis/plans/node_point_cloud.json); the
# floor is a tenth of the best constant output's loss (8/9), fixed from the objective, not from the
# data.
POINT_CLOUD_LOSS_FLOOR = 0.1 * 8 / 9

add_comparisons(
    REVIEW,
    "node_point_cloud",
    [
        *(
            RowValues(
                f"review.point_cloud_{model}_forward_nfe",
                f"On the point cloud {label} needs fewer forward NFE than NODE",
                "Fig. 9",
                f"mean forward NFE per batch over training, {label} / NODE",
                ratio(f"{model}.forward_nfe_mean", "node.forward_nfe_mean"),
                less(0.8, null=1.0),
            )
            for model, label in (("hbnode", "HBNODE"), ("ghbnode", "GHBNODE"))
        ),
        RowValues(
            "review.point_cloud_hbnode_backward_nfe",
            "On the point cloud HBNODE needs fewer backward NFE than NODE",
            "Fig. 9",
            "mean backward NFE per batch over training, HBNODE / NODE",
            ratio("hbnode.backward_nfe_mean", "node.backward_nfe_mean"),
            less(0.8, null=1.0),
        ),
        # a difference of MSEs held to POINT_CLOUD_LOSS_FLOOR (above)
        RowValues(
            "review.point_cloud_hbnode_loss",
            "On the point cloud HBNODE reaches a lower training loss than NODE in the same epochs",
            "Fig. 9",
            "final training loss (MSE against labels -1 and 1), NODE - HBNODE",
            difference("node.final_loss_median", "hbnode.final_loss_median"),
            greater(0.0, sesoi=POINT_CLOUD_LOSS_FLOOR),
        ),
    ],
)

# ---- image classification, the other baselines (Figs. 6, 10), experiment node_images
# --------------------------
add_comparisons(
    REVIEW,
    "node_images",
    [
        *(
            RowValues(
                f"review.images_hbnode_vs_{ref}_forward_nfe",
                f"HBNODE needs fewer forward NFE than {label} on image classification",
                "Figs. 6, 10",
                f"forward NFE per batch, last epoch, HBNODE / {label} "
                f"(digits, trained at rtol 1e-5)",
                ratio("hbnode.forward_nfe", f"{ref}.forward_nfe"),
                less(0.8, null=1.0),
            )
            for ref, label in (("anode", "ANODE"), ("sonode", "SONODE"))
        ),
        RowValues(
            "review.images_hbnode_accuracy",
            "HBNODE is as accurate as ANODE with the same budget",
            "Figs. 6, 10",
            "test accuracy HBNODE - ANODE (digits)",
            difference("hbnode.test_acc", "anode.test_acc"),
            greater(0.0, null=-0.02),
        ),
    ],
)

# ---- blow-up and adjoint decay (Figs. 7, 8)
# -----------------------------------------------------------------------
add_comparisons(
    REVIEW,
    "node_blowup",
    [
        RowValues(
            "review.ghbnode_controls_blowup",
            "GHBNODE's state stays bounded where HBNODE's grows (blow-up control)",
            "Fig. 7",
            "median log10 ‖h(T)‖, GHBNODE - HBNODE",
            difference("ghbnode.median_final_log10_norm", "hbnode.median_final_log10_norm"),
            less(-1.0, null=0.0),
        ),
        RowValues(
            "review.ghbnode_blowup_fraction",
            "HBNODE's state blows up from some initialisations, GHBNODE's from none "
            "(blow-up control)",
            "Fig. 7",
            "fraction of inits with ‖h(T)‖ > 1e8, HBNODE - GHBNODE",
            difference("hbnode.blow_up_fraction", "ghbnode.blow_up_fraction"),
            greater(0.0, sesoi=0.1),  # sesoi chosen: one init in ten
        ),
        RowValues(
            "review.node_growth_vs_ghbnode",
            "NODE's state grows more than GHBNODE's over a long horizon",
            "Fig. 7",
            "fraction of inits with ‖h(T)‖ > 10, NODE - GHBNODE",
            difference("node.growth_fraction", "ghbnode.growth_fraction"),
            greater(0.0, sesoi=0.1),  # sesoi chosen: one init in ten
        ),
    ],
)
declare_data(
    "node_blowup", blowup_data_label
)  # each row says which drive its run had (measured or simulated)
add_comparisons(
    REVIEW,
    "node_adjoint_norm",
    (
        RowValues(
            f"review.{model}_adjoint_no_vanishing",
            f"The adjoint of {label}-RNN decays less over a long horizon than ODE-RNN's",
            "Fig. 8",
            f"log10 ‖dL/dz‖ decay from T to the start, {label} - NODE (orders of magnitude)",
            difference(f"{model}.decay_orders_of_magnitude", "node.decay_orders_of_magnitude"),
            less(-1.0, null=0.0),
        )
        for model, label in (("hbnode", "HBNODE"), ("ghbnode", "GHBNODE"))
    ),
)

ADJOINT_NORM_DESIGN = (
    "the review authors' residual jump cell (HBNODE-RNN with their restoring term, parameters "
    "shrunk by 0.01, gradients clipped at 1.0) on a tanh 3-layer field, RK4 one step per gap "
    "(theirs: dopri5 at 1e-7 with the adjoint), 300 Adam iterations of 4 windows"
)


def _adjoint_norm_data(config) -> str:
    """node_adjoint_norm's data, whatever its recorded config: always the simulated stand-in
    (Fig. 8 is Walker2D)."""
    return (
        "a simulated Duffing oscillator (Silverbox-like, 10 % of the samples dropped) "
        "standing in for the review's "
        "Walker2D kinematics (a stand-in, not the paper's data)"
    )


declare_data("node_adjoint_norm", _adjoint_norm_data)

# ---- one-model claims against an absolute criterion: the adjoint of (G)HBNODE does not vanish
# ----------- Fig. 8 shows the heavy-ball adjoint staying within about an order of magnitude over
# the horizon; a difference between models cannot say that (both may vanish by 20 orders). Criterion
# stated here: it decays by less than one order of magnitude (log10 decay < 1); an adjoint that
# grows by more than 3 orders (explodes) is not "not vanishing": such a run is invalid, not a
# success.
add_comparisons(
    REVIEW,
    "node_adjoint_norm",
    (
        RowValues(
            f"review.{model}_adjoint_own_decay",
            f"The adjoint of {label} does not vanish over a long horizon (its own decay, absolute)",
            "Fig. 8",
            f"log10 ‖dL/dz‖ decay from T to the start, {label} alone (orders of magnitude; "
            f"criterion < 1)",
            metric(f"{model}.decay_orders_of_magnitude"),
            less(1.0, sesoi=1.0),
        )
        for model, label in (("hbnode", "HBNODE"), ("ghbnode", "GHBNODE"))
    ),
)
# ---- what makes a run valid for its claims
# ----------------------------------------------------------- NFE floors: torchdiffeq's dopri5
# spends 2 evaluations choosing the first step and 6 per accepted step (FSAL), so one solve of 2
# accepted steps costs 14; an NFE within 1.5x that floor measures the tolerance, not the model.
# node_adjoint_norm's trained bar: the one-step-ahead MSE at least 10 % below the better of
# persistence and the training mean on the same stamps (the margin of the ODE-RNN forecasting rows,
# dynkit.experiments.hybrids.comparisons)
ADJOINT_BAR_MARGIN = 0.1
ADJOINT_BAR_WHY = (
    "the better of persistence and the training mean on the same {split} stamps, a stated "
    "margin of "
    "10 %"
)
# node_point_cloud's trained bar: the final training loss at most half the trivial predictor's on
# the same cloud (the best constant output: 8/9 under the authors' MSE against labels -1 and 1,
# 0.637 under cross-entropy, class prior 2/3), held by HBNODE and GHBNODE. NODE, which the review
# says cannot separate the cloud, is held to a lower bar: a loss at least 10 % below the constant's
# (a NODE worse than predicting a constant did not train, and its NFE is not the claim's: every row
# reads a NODE metric)
POINT_CLOUD_BAR_MARGIN = 0.5
POINT_CLOUD_BAR_WHY = "the best constant output's loss on the same cloud, a stated margin of 50 %"
POINT_CLOUD_NODE_WHY = "the best constant output's loss on the same cloud, a stated margin of 10 %"
for model, margin, why in (
    ("hbnode", POINT_CLOUD_BAR_MARGIN, POINT_CLOUD_BAR_WHY),
    ("ghbnode", POINT_CLOUD_BAR_MARGIN, POINT_CLOUD_BAR_WHY),
    ("node", 0.1, POINT_CLOUD_NODE_WHY),
):
    declare_validity(
        "node_point_cloud",
        beats_baseline(
            f"{model}.final_loss_median", "baseline.final_loss", margin, why, subject=model
        ),
    )
for model in (
    "node",
    "hbnode",
    "ghbnode",
):  # the NFE rows: each model off its untrained NFE at the training 1e-7
    declare_validity(
        "node_point_cloud",
        above_measured_floor(
            f"{model}.forward_nfe_mean",
            f"floor.{model}.forward_nfe@train",
            "the untrained model's forward NFE per batch at the training tolerance 1e-7",
        ),
    )


def _trained_on_digits(model: str, forward_nfe: str, **floor_options: str) -> tuple[Check, Check]:
    """The checks of a model trained on the digits at rtol 1e-5: its test accuracy above chance by
    a stated margin, and its forward NFE ``forward_nfe`` (a metric of ``model``) above the same
    model's as initialised at the training tolerance (``floor_options``: ``when`` and ``subject``
    of :func:`~dynkit.experiments.judging.baselines.above_measured_floor`)."""
    return (
        at_least(f"{model}.test_acc", 0.5, DIGIT_CHANCE),
        above_measured_floor(
            f"{model}.{forward_nfe}",
            f"floor.{model}.forward_nfe@train",
            "the untrained model's forward NFE at the training tolerance 1e-5",
            **floor_options,
        ),
    )


for model in ("node", "hbnode", "ghbnode"):
    # off the floor: above the same model's NFE as initialised at the same tolerance, measured
    # (dynkit.experiments.judging.baselines.untrained_forward_nfe; 38-44 per batch at rtol 1e-5),
    # not a solver count of 14 x 1.5 that no model of this size comes near
    declare_validity(
        "node_trained",
        *_trained_on_digits(model, "last_epoch.forward_nfe", when=r"epoch", subject=model),
        above_measured_floor(
            f"{model}.forward_nfe@1e-07",
            f"floor.{model}.forward_nfe@1e-07",
            "the untrained model's forward NFE at rtol 1e-7",
            when="@1e-07",
            subject=model,
        ),
    )
    declare_validity(
        "node_adjoint_norm",
        at_least(
            f"{model}.decay_orders_of_magnitude",
            -3.0,
            "an adjoint that grows by more than 3 orders of magnitude explodes",
            kind="bounded",
        ),
        # trained bar: the adjoint of a model that did not learn to forecast is not Fig. 8's; held
        # on the windows it trained on and on the held-out window whose adjoint is measured, the
        # shard records both and its trivial predictors' on the same stamps
        *(
            beats_baseline(
                f"{model}.{split}_mse",
                f"baseline.best.{split}_mse",
                ADJOINT_BAR_MARGIN,
                ADJOINT_BAR_WHY.format(split=split),
                subject=model,
            )
            for split in ("train", "test")
        ),
    )
for model in ("anode", "sonode", "hbnode"):
    declare_validity("node_images", *_trained_on_digits(model, "forward_nfe"))

for _id, _claim in list(COMPARISONS.items()):  # every Fig. 8 row names the design it ran
    if _claim.experiment == "node_adjoint_norm":
        COMPARISONS[_id] = replace(_claim, design_note=ADJOINT_NORM_DESIGN)
