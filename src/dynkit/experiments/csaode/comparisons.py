"""The ledger's comparisons of the CSAODE experiments (TREC, sensitivity, attention, Table 1 on the
four cross-validated sets) and their validity checks."""

from __future__ import annotations

from ..judging.ledger import (
    RowValues,
    add_comparison,
    add_comparisons,
    at_least,
    declare_validity,
    difference,
    greater,
    less,
    metric,
    ratio,
)
from ..judging.papers import CSAODE
from .csaode_cv import DATASETS, MAJORITY, PAPER as CSAODE_TABLE, VARIANTS

# ---- CSAODE --------------------------------------------------------------------------------------
for experiment, rows in {
    "csaode_trec": [
        RowValues(
            "csaode.ark_fewer_nfe",
            "The accelerated RK solver (CSAARK) needs fewer function evaluations than RK (CSARK)",
            "Fig. 5, Eq. (9)",
            "forward NFE per batch, CSAARK / CSARK (TREC)",
            ratio("CSAARK.forward_nfe_per_batch", "CSARK.forward_nfe_per_batch"),
            less(0.9, null=1.0),
        ),
        RowValues(
            "csaode.ark_faster",
            "CSAARK trains faster than CSARK (1.21x at r = 0.2)",
            "Fig. 5",
            "epoch time, CSAARK / CSARK (TREC)",
            ratio("CSAARK.mean_epoch_seconds", "CSARK.mean_epoch_seconds"),
            less(1 / 1.213, null=1.0),
        ),
        RowValues(
            "csaode.ark_accuracy",
            "CSAARK is as accurate as CSARK on TREC",
            "Table 1",
            "test accuracy, CSAARK - CSARK",
            difference("CSAARK.test_accuracy", "CSARK.test_accuracy"),
            greater(0.0, null=-0.02),
        ),
    ],
    "csaode_sensitivity": [
        RowValues(
            "csaode.conv_helps",
            "Removing the N-gram convolution lowers accuracy (95.2 -> 92.8)",
            "Table 2",
            "TREC test accuracy, base - w/o conv",
            difference("base.test_accuracy", "w/o_conv.test_accuracy"),
            greater(0.02, null=0.0),
        ),
        RowValues(
            "csaode.ode_vs_one_block",
            "The ODE block beats a single self-attention block (95.2 vs 93.7)",
            "Table 2",
            "TREC test accuracy, base - 1 block",
            difference("base.test_accuracy", "1_block.test_accuracy"),
            greater(0.015, null=0.0),
        ),
        RowValues(
            "csaode.larger_d",
            "A larger hidden size d is more accurate (91.6 -> 94.3 -> 95.2)",
            "Table 3",
            "TREC test accuracy, d medium - d small",
            difference("d_medium.test_accuracy", "d_small.test_accuracy"),
            greater(0.02, null=0.0),
        ),
    ],
    "csaode_attention": [
        RowValues(
            "csaode.attention_evolves",
            "Self-attention scores change continuously with ODE time: "
            "state -> Bighorn rises from 0.0023 to 0.57",
            "Fig. 4",
            "A[state, bighorn](t = 1) - A(t = 0)",
            metric("pair_score_rise"),
            greater(0.1, null=0.0),
        ),
    ],
}.items():
    add_comparisons(CSAODE, experiment, rows)
# both solvers' models, for every row (the NFE and time rows too: a trained bar for every model of
# every row; an NFE of an untrained model is a count of the method's structure, not the claim's)
for _solver in ("CSARK", "CSAARK"):
    declare_validity(
        "csaode_trec",
        at_least(
            f"{_solver}.test_accuracy",
            0.8,
            "TREC, 6 classes: trained means within 15 points of the paper's 95.2 %",
            subject="",
        ),
    )
for variant in ("base", "d_small", "d_medium", "w/o_conv", "1_block"):
    declare_validity(
        "csaode_sensitivity",
        at_least(
            f"{variant}.test_accuracy",
            0.8,
            "TREC, 6 classes: trained means within 15 points of the paper's 95.2 %",
        ),
    )
declare_validity(
    "csaode_attention",
    at_least(
        "test_accuracy",
        0.8,
        "TREC, 6 classes: trained means within 15 points of the paper's 95.2 %",
        subject="",
    ),
)
# the row reads A[state, bighorn]: a word outside the model's vocabulary is the unknown token, not
# the paper's word (the paper's GloVe vectors know "bighorn"; TREC's training questions never use
# it): measured, not assumed
declare_validity(
    "csaode_attention",
    at_least(
        "data.pair_in_vocabulary",
        1.0,
        "both words of the pair in the "
        "vocabulary the model was trained with (else the score is the unknown "
        "token's)",
        kind="data",
        subject="",
    ),
)

# ---- CSAODE Table 1 on the four cross-validated sets
# ----------------------------------------------------------- One value per CV fold. A criterion
# row: the paper's figure P is its effect, the majority-class accuracy (what a model that learned
# nothing scores: 50% on SUBJ and MR, 63.8% on CR, 68.8% on MPQA) its null, so a CI above the null
# that falls short of P reads "smaller effect".
for dataset in DATASETS:
    for solver, name in VARIANTS.items():
        paper = CSAODE_TABLE[name][dataset]
        add_comparison(
            f"csaode.{dataset}_{solver}_accuracy",
            paper=CSAODE,
            claim=f"{name} reaches {paper}% test accuracy on {dataset.upper()} (10-fold CV)",
            paper_figure=f"Table 1: {paper}%",
            experiment=f"csaode_cv_{dataset}",
            metric=f"{name} test accuracy (%) per fold, CPU size",
            value=metric(f"{name}.accuracy"),
            rule=greater(paper, null=MAJORITY[dataset]),
        )
    add_comparison(
        f"csaode.{dataset}_ark_weaker_than_rk",
        paper=CSAODE,
        claim=f"CSAARK loses a little accuracy against CSARK (paper: 'for most tasks'; on "
        f"{dataset.upper()} {CSAODE_TABLE['CSARK'][dataset]} vs {CSAODE_TABLE['CSAARK'][dataset]})",
        paper_figure="Table 1 and its discussion",
        experiment=f"csaode_cv_{dataset}",
        metric="accuracy CSARK - CSAARK (points) per fold",
        value=difference("CSARK.accuracy", "CSAARK.accuracy"),
        # the paper's own gap where it is positive, else (MR, MPQA: no loss in the paper) half a
        # point, stated
        rule=greater(gap, null=0.0)
        if (gap := round(CSAODE_TABLE["CSARK"][dataset] - CSAODE_TABLE["CSAARK"][dataset], 2)) > 0
        else greater(0.0, sesoi=0.5),
    )
    # every variant a row speaks of must have learned (the ARK/RKF rows are about their own
    # accuracy)
    declare_validity(
        f"csaode_cv_{dataset}",
        *(
            at_least(
                f"{variant}.accuracy",
                MAJORITY[dataset] + 5.0,
                f"trained: 5 points above the majority class, {MAJORITY[dataset]} %",
            )
            for variant in ("CSARK", "CSARKF", "CSAARK")
        ),
    )
