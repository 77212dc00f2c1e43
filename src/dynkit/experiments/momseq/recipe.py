"""The recipes (:mod:`~dynkit.experiments.recipes`) of the sequence experiments: ``momseq_copy``
(Momentum Transformer, Sect. 4.1, Fig. 1, Table 1), ``momseq_attention_scaling`` (Momentum
Transformer, Sect. 3.1, the cost of attention in the sequence length) and ``momseq_vanishing``
(MomentumRNN, Sect. 3, Fig. 2).

The paper's values are read from the Momentum Transformer paper (``shared/papers/001``), the
MomentumRNN paper (``shared/papers/002``) and the MomentumRNN authors' public code,
github.com/minhtannguyen/MomentumRNN (read, never copied). Our values are read from each script's
``options`` (what its command line runs with) or from the config dataclass. Kept apart from the
experiment modules so that a recipe's wording is not part of the shards' code identity.
"""

from __future__ import annotations

from ..recipes import NOT_STATED, Recipe, Setting, add_recipe, plan_seeds

MT = "Momentum Transformer"
MRNN = "MomentumRNN"
SCALES = ("smoke", "cpu", "full")
SMOKE = {"smoke": "smoke: seconds for the tests, nothing is decided from it"}
NONE_STATED = {s: "the paper states none: ours" for s in SCALES}
RECORD = {
    "cpu": "kept as the results of record ran it (their registered arguments stay)",
    "full": "the registered full scale predates the recipe and stays (the paper scale writes the "
    "authors')",
}
SEEDS = {
    "cpu": "a decision needs the seeds its plan fixes in advance",
    "full": "a decision needs the seeds its plan fixes in advance",
}

S41 = f"{MT}, Sect. 4.1"
TABLE1 = f"{MT}, Table 1 (copy task)"
COPY_CPU = (
    "CPU time: at most 12 stamps (|w| <= 5) where the paper's go to 128 (the cost of a step "
    "grows with the "
    "length); at the paper's 4 layers of 8 heads and its training a shard of the five models "
    "took 54 s (pilot "
    "seed 100, 2026-11-28: softmax 0.975, the linear-attention models 0.90-0.94 test "
    "accuracy after 30 epochs)"
)
SIZE_CUT = {"cpu": COPY_CPU, "full": RECORD["full"]}

add_recipe(
    Recipe(
        "momseq_copy",
        f"{S41}, Fig. 1",
        (
            Setting(
                "longest sequence",
                128,
                f"{S41} (maximum length 128)",
                field="max_length",
                reasons=SIZE_CUT,
            ),
            Setting(
                "symbols", 10, f"{S41} (10 different symbols and a separator)", field="symbols"
            ),
            Setting(
                "layers", 4, f"{S41} (a 4-layer transformer)", field="layers", reasons=SIZE_CUT
            ),
            Setting(
                "attention heads", 8, f"{S41} (8 attention heads)", field="heads", reasons=SIZE_CUT
            ),
            Setting(
                "model width D",
                32,
                f"{S41} (D = 32; whether per head, as in Katharopoulos et al.'s copy task, or in "
                "total is not said: read as d_model)",
                field="d_model",
            ),
            Setting("feed-forward width", NOT_STATED, S41, field="d_ff", reasons=NONE_STATED),
            Setting("optimiser", "RAdam", S41, field="optimiser"),
            Setting("learning rate", 0.001, f"{S41} (10^-3)", field="lr"),
            Setting(
                "learning-rate drop to 1e-4 after (iterations)",
                3000,
                f"{S41} (reduced to 10^-4 after 3000 iterations)",
                field="lr_drop_after",
            ),
            Setting("batch size", 64, S41, field="batch"),
            Setting(
                "epochs",
                NOT_STATED,
                f"{S41}, Fig. 1 (its axis; the text states none)",
                field="epochs",
                reasons=NONE_STATED,
            ),
            Setting(
                "batches per epoch", NOT_STATED, S41, field="steps_per_epoch", reasons=NONE_STATED
            ),
            Setting("test sequences", NOT_STATED, S41, field="test_size", reasons=NONE_STATED),
            Setting("momentum attention beta", 0.1, TABLE1, field="beta"),
            Setting("momentum attention step gamma", 0.6, TABLE1, field="step"),
            Setting("momentum connection beta~", 0.99, TABLE1, field="connection_beta"),
            Setting("momentum connection step", 0.99, TABLE1, field="connection_step"),
            Setting("adaptive connection step", 0.99, TABLE1, field="adaptive_step"),
            Setting(
                "models",
                "softmax, Reformer, linear, momentum, momentum + connection, adaptive",
                f"{S41}, Fig. 1",
                fixed="softmax, linear, momentum, momentum + connection, adaptive "
                "(momseq_copy.model_settings)",
                reasons={
                    s: "dynkit has no Reformer; no row compares it and it changes no other "
                    "model's run"
                    for s in SCALES
                },
            ),
            plan_seeds(NOT_STATED, S41, NONE_STATED),
        ),
        default_reasons={**SMOKE, **RECORD},
    )
)
"""Fig. 1: the copy task 0w0w, loss and accuracy curves of the five transformers."""

S31 = f"{MT}, Sect. 3.1"
add_recipe(
    Recipe(
        "momseq_attention_scaling",
        S31,
        (
            Setting(
                "sequence lengths N",
                NOT_STATED,
                f"{S31} (O(N) for momentum and linear attention, the softmax's "
                "quadratic cost: Sect. 1; Fig. 1 times one epoch at N = 128 only)",
                field="lengths",
                reasons=NONE_STATED,
            ),
            Setting("attention heads", NOT_STATED, S31, field="heads", reasons=NONE_STATED),
            Setting("head dimension", NOT_STATED, S31, field="dim", reasons=NONE_STATED),
            Setting("timing repeats", NOT_STATED, S31, field="repeats", reasons=NONE_STATED),
            Setting(
                "momentum attention (beta, step)",
                NOT_STATED,
                f"{S31} (the cost does not depend on them)",
                fixed="0.9, 0.6 (momseq_attention_scaling.METHODS)",
                reasons=NONE_STATED,
            ),
            Setting(
                "cost measured",
                NOT_STATED,
                S31,
                fixed="bytes autograd saves for backward, CPU time of forward + "
                "backward (best of the repeats)",
                reasons=NONE_STATED,
            ),
        ),
        default_reasons=SMOKE,
        no_paper_run="the paper states the complexities (Sect. 3.1: O(N) memory and computation "
        "for momentum attention, as for linear attention) and measures no cost against N",
    )
)
"""Sect. 3.1: the growth of attention's memory and time with N."""

S3 = f"{MRNN}, Sect. 3.2, Fig. 2"
APPA = (
    f"{MRNN}, Appendix A (not in shared/papers' copy; the authors' code has no plain-RNN run: "
    "mnist-timit/mnist.py trains LSTM and orthogonal cells only)"
)
add_recipe(
    Recipe(
        "momseq_vanishing",
        S3,
        (
            Setting(
                "data set",
                ("PMNIST",),
                f"{S3} (trained on the PMNIST classification task)",
                field="tasks",
                missing="MNIST (not available offline)",
                reasons={
                    s: "MNIST is not available offline: scikit-learn's 8x8 digits stand in, "
                    "pixel by pixel, plain "
                    "and permuted"
                    for s in SCALES
                },
            ),
            Setting(
                "sequence length",
                784,
                f"{S3} (28 x 28 pixels, one per step)",
                fixed="64 (8x8 digits)",
                reasons={s: "8x8 digits have 64 pixels" for s in SCALES},
            ),
            Setting(
                "models",
                ("RNN", "MomentumRNN"),
                f"{S3} (an RNN and its MomentumRNN)",
                field="models",
                reasons={
                    "full": "the full scale adds the LSTM cells of Sect. 2.3 to the figure (no row "
                    "compares them)"
                },
            ),
            Setting(
                "quantity",
                "||dL/dh_t||_2 for each step t",
                S3,
                fixed="||dL/dh_t||_2 for each step t on a fixed batch "
                "of training sequences, after every epoch",
                reasons={
                    s: "the paper does not say on which data or when; "
                    "ours: every epoch, one fixed batch"
                    for s in SCALES
                },
            ),
            Setting("hidden size", NOT_STATED, APPA, field="hidden", reasons=NONE_STATED),
            Setting("momentum mu", NOT_STATED, APPA, field="mu", reasons=NONE_STATED),
            Setting("step s", NOT_STATED, APPA, field="s", reasons=NONE_STATED),
            Setting("optimiser", NOT_STATED, APPA, field="optimiser", reasons=NONE_STATED),
            Setting("learning rate", NOT_STATED, APPA, field="lr", reasons=NONE_STATED),
            Setting("gradient clipping", NOT_STATED, APPA, field="clip", reasons=NONE_STATED),
            Setting("batch size", NOT_STATED, APPA, field="batch", reasons=NONE_STATED),
            Setting("epochs", NOT_STATED, APPA, field="epochs", reasons=NONE_STATED),
            plan_seeds(NOT_STATED, APPA, NONE_STATED),
        ),
        default_reasons={**SMOKE, **RECORD},
    )
)
"""MomentumRNN Fig. 2: the gradient reaching each step, RNN against MomentumRNN."""
