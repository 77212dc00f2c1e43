"""The ledger's comparisons of the momentum sequence models (Momentum Transformer, MomentumRNN's
vanishing gradient) and their validity checks."""

from __future__ import annotations

from ..judging.ledger import (
    add_comparison,
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
for model, label in (("momentum", "momentum"), ("adaptive", "adaptive-momentum")):
    add_comparison(
        f"momtr.copy_{model}_vs_linear",
        paper=MOMTR,
        claim=f"On the copy task the {label} transformer learns faster than the linear one",
        paper_figure="Fig. 1",
        experiment="momseq_copy",
        metric=f"mean test accuracy over the epochs (area under the learning curve), {label} - "
        f"linear",
        value=difference(f"{model}.mean_test_accuracy", "linear.mean_test_accuracy"),
        rule=greater(0.0, sesoi=0.05),
    )  # sesoi chosen: 5 points of token accuracy
add_comparison(
    "momtr.attention_linear_memory",
    paper=MOMTR,
    claim="Momentum attention's memory grows linearly in N, softmax attention's quadratically",
    paper_figure="Sect. 3 (complexity)",
    experiment="momseq_attention_scaling",
    metric="exponent p of saved bytes ∝ N^p, momentum attention",
    value=metric("momentum.memory_exponent"),
    rule=less(1.2, null=1.8),
)
add_comparison(
    "momtr.attention_softmax_quadratic",
    paper=MOMTR,
    claim="Softmax attention's memory grows quadratically in N",
    paper_figure="Sect. 3 (complexity)",
    experiment="momseq_attention_scaling",
    metric="exponent p of saved bytes ∝ N^p, softmax attention",
    value=metric("softmax.memory_exponent"),
    rule=greater(1.8, null=1.2),
)
add_comparison(
    "momtr.attention_time",
    paper=MOMTR,
    claim="Momentum attention's time grows more slowly in N than softmax attention's",
    paper_figure="Sect. 3 (complexity)",
    experiment="momseq_attention_scaling",
    metric="time exponent, softmax - momentum",
    value=difference("softmax.time_exponent", "momentum.time_exponent"),
    rule=greater(0.5, null=0.0),
)
for task in ("digits", "digits_permuted"):
    add_comparison(
        f"momrnn.vanishing_{task}",
        paper=MOMRNN,
        claim="MomentumRNN's gradient reaches early steps better than the RNN's (less vanishing)",
        paper_figure="Fig. 2",
        experiment="momseq_vanishing",
        metric=f"log10 ‖dL/dh_1‖ / ‖dL/dh_T‖ after training, MomentumRNN - RNN "
        f"({task.replace('_', ' ')})",
        value=difference(
            f"{task}.MomentumRNN.log10_first_over_last", f"{task}.RNN.log10_first_over_last"
        ),
        rule=greater(0.0, sesoi=0.5),
    )  # sesoi chosen: half an order of magnitude
add_comparison(
    "momrnn.accuracy_permuted",
    paper=MOMRNN,
    claim="MomentumRNN is more accurate than the RNN on (permuted) pixel-by-pixel images",
    paper_figure="Table 1 (PMNIST)",
    experiment="momseq_vanishing",
    metric="test accuracy, MomentumRNN - RNN (permuted 8x8 digits)",
    value=difference("digits_permuted.MomentumRNN.test_metric", "digits_permuted.RNN.test_metric"),
    rule=greater(0.0, sesoi=0.02),
)  # sesoi chosen: 2 points of accuracy
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
