"""The ledger's comparisons of the momentum sequence models (Momentum Transformer, MomentumRNN's
vanishing gradient) and their validity checks."""

from __future__ import annotations

from ..judging.ledger import (
    RowValues,
    add_comparisons,
    at_least,
    declare_validity,
    difference,
    greater,
    less,
    metric,
)
from ..judging.papers import DIGIT_CHANCE, MOMRNN, MOMTR

# ---- Momentum Transformer / MomentumRNN
# -----------------------------------------------------------------------------
add_comparisons(
    MOMTR,
    "momseq_copy",
    (
        RowValues(
            f"momtr.copy_{model}_vs_linear",
            f"On the copy task the {label} transformer learns faster than the linear one",
            "Fig. 1",
            f"mean test accuracy over the epochs (area under the learning curve), {label} - linear",
            difference(f"{model}.mean_test_accuracy", "linear.mean_test_accuracy"),
            greater(0.0, sesoi=0.05),  # sesoi chosen: 5 points of token accuracy
        )
        for model, label in (("momentum", "momentum"), ("adaptive", "adaptive-momentum"))
    ),
)
add_comparisons(
    MOMTR,
    "momseq_attention_scaling",
    [
        RowValues(
            "momtr.attention_linear_memory",
            "Momentum attention's memory grows linearly in N, softmax attention's quadratically",
            "Sect. 3 (complexity)",
            "exponent p of saved bytes ∝ N^p, momentum attention",
            metric("momentum.memory_exponent"),
            less(1.2, null=1.8),
        ),
        RowValues(
            "momtr.attention_softmax_quadratic",
            "Softmax attention's memory grows quadratically in N",
            "Sect. 3 (complexity)",
            "exponent p of saved bytes ∝ N^p, softmax attention",
            metric("softmax.memory_exponent"),
            greater(1.8, null=1.2),
        ),
        RowValues(
            "momtr.attention_time",
            "Momentum attention's time grows more slowly in N than softmax attention's",
            "Sect. 3 (complexity)",
            "time exponent, softmax - momentum",
            difference("softmax.time_exponent", "momentum.time_exponent"),
            greater(0.5, null=0.0),
        ),
    ],
)
add_comparisons(
    MOMRNN,
    "momseq_vanishing",
    [
        *(
            RowValues(
                f"momrnn.vanishing_{task}",
                "MomentumRNN's gradient reaches early steps better than the RNN's (less vanishing)",
                "Fig. 2",
                f"log10 ‖dL/dh_1‖ / ‖dL/dh_T‖ after training, MomentumRNN - RNN "
                f"({task.replace('_', ' ')})",
                difference(
                    f"{task}.MomentumRNN.log10_first_over_last", f"{task}.RNN.log10_first_over_last"
                ),
                greater(0.0, sesoi=0.5),  # sesoi chosen: half an order of magnitude
            )
            for task in ("digits", "digits_permuted")
        ),
        RowValues(
            "momrnn.accuracy_permuted",
            "MomentumRNN is more accurate than the RNN on (permuted) pixel-by-pixel images",
            "Table 1 (PMNIST)",
            "test accuracy, MomentumRNN - RNN (permuted 8x8 digits)",
            difference(
                "digits_permuted.MomentumRNN.test_metric", "digits_permuted.RNN.test_metric"
            ),
            greater(0.0, sesoi=0.02),  # sesoi chosen: 2 points of accuracy
        ),
    ],
)
for model in ("linear", "momentum", "adaptive"):  # every model a copy row compares
    declare_validity(
        "momseq_copy",
        at_least(
            f"{model}.test_accuracy",
            0.5,
            "copy task: chance 0.1 per token; the model must have learned to copy",
        ),
    )
for task in ("digits", "digits_permuted"):
    for cell in ("RNN", "MomentumRNN"):
        declare_validity(
            "momseq_vanishing", at_least(f"{task}.{cell}.test_metric", 0.5, DIGIT_CHANCE)
        )
