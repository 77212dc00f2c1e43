"""The recipes (:mod:`~dynkit.experiments.recipes`) of ``momentum_lstm_digits`` and
``momentum_lstm_fashion_mnist``: MomentumRNN's Table 1 (pixel-by-pixel MNIST and PMNIST, LSTM
against MomentumLSTM, AdamLSTM, RMSPropLSTM, SRLSTM).

The paper's values are read from the MomentumRNN paper (Sect. 4.1, Table 1) and from its authors'
public code, github.com/minhtannguyen/MomentumRNN (``mnist-timit/recipes.md``: the Table 1 commands;
``mnist-timit/mnist.py``: optimiser and clipping; ``mnist-timit/momentumnet.py``: the cells), read,
never copied. Kept apart from :mod:`~dynkit.experiments.momentum_rnn.momentum_lstm` so that a
recipe's wording is not part of the shards' code identity.
"""

from __future__ import annotations

from ..recipes import PLAN_SEEDS_WHY, Recipe, Setting, add_recipe, plan_seeds

RECIPES_MD = "MomentumRNN mnist-timit/recipes.md (Table 1 commands)"
MNIST_PY = "MomentumRNN mnist-timit/mnist.py"
CELLS_PY = "MomentumRNN mnist-timit/momentumnet.py"
SMOKE = {"smoke": "smoke: seconds for the tests, nothing is decided from it"}
SEQUENCE_CUT = (
    "CPU time: a 784-step LSTM costs about 12x a 64-step one per image, and the five cells x "
    "two tasks x "
    "the plan's seeds are trained one after another on 2 shared cores"
)


HIDDEN_CUT = (
    "CPU time: timed on the shared machine, one thread, 64 steps, N = 128 trains an epoch in "
    "4.4 s and N = 32 "
    "in 0.27 s; 150 epochs x 5 cells x 2 tasks x 5 seeds at N = 128 would take about 9 hours"
)


def _common(cpu: dict) -> tuple[Setting, ...]:
    """The training settings both experiments share; ``cpu``: the reason per setting name where
    the cpu scale differs from the authors'."""

    def why(name: str) -> dict:
        return {"cpu": cpu[name]} if name in cpu else {}

    return (
        Setting(
            "hidden size N",
            256,
            "MomentumRNN paper, Table 1 (N = 256); " + RECIPES_MD + " (--hidden_size 256)",
            field="hidden",
            reasons=why("hidden size N"),
        ),
        Setting(
            "optimiser",
            "rmsprop",
            MNIST_PY + " (RMSprop, alpha 0.9)",
            field="optimizer",
            reasons=why("optimiser"),
        ),
        Setting(
            "learning rate",
            1e-3,
            RECIPES_MD + " (--lr 0.001)",
            field="lr",
            reasons=why("learning rate"),
        ),
        Setting(
            "gradient clipping",
            1.0,
            MNIST_PY + " (clip_grad_norm_ 1.0)",
            field="clip",
            reasons=why("gradient clipping"),
        ),
        Setting(
            "batch size",
            128,
            RECIPES_MD + " (--batch_size 128)",
            field="batch",
            reasons=why("batch size"),
        ),
        Setting(
            "epochs", 150, RECIPES_MD + " (--epochs 150)", field="epochs", reasons=why("epochs")
        ),
        Setting(
            "cells",
            ("LSTM", "MomentumLSTM", "SRLSTM", "AdamLSTM", "RMSPropLSTM"),
            "MomentumRNN paper, Table 1",
            field="cells",
            reasons=why("cells"),
        ),
        Setting(
            "cell parameters (mu, s, beta; SRLSTM restart period)",
            "authors",
            RECIPES_MD + ": MNIST MomentumLSTM mu 0.6, s 0.6; AdamLSTM mu 0.6, s 0.6, beta 0.1; "
            "RMSPropLSTM s 0.6, "
            "beta 0.9; SRLSTM s 1.0, restart every 2 steps. PMNIST: s 1.0 (SRLSTM 0.9), "
            "AdamLSTM and RMSPropLSTM "
            "beta 0.01, SRLSTM restart every 40 steps "
            "(dynkit.experiments.momentum_rnn.momentum_lstm.AUTHORS_CELLS)",
            field="cell_settings",
            reasons=why("cell parameters (mu, s, beta; SRLSTM restart period)"),
        ),
        Setting(
            "initialisation",
            "authors",
            CELLS_PY + " (reset_parameters of every cell: input weights orthogonal_, "
            "hidden weights eye_ on the 4N x N matrix, biases 0 but the forget gate's 1.0 "
            "(fg_init) in both the "
            "input and the hidden bias; dynkit.models.momentum_rnn.INITS)",
            field="init",
            reasons=why("initialisation"),
        ),
        Setting(
            "SRLSTM cell",
            "authors",
            CELLS_PY + " (NesterovLSTMCell: gates = y + (k-1)/(k+2) (y - v_prev), "
            "y = h2h(h) - s x2h(x), k = 1..F restarted by mnist.py; dynkit's rule "
            "'nesterov_restart'; ours: "
            "momentum on the input drive with mu_t = (t mod F)/(t mod F + 3), rule 'restart')",
            field="srlstm",
            reasons=why("SRLSTM cell"),
        ),
        plan_seeds(
            "one run per command (--manualSeed 0)",
            RECIPES_MD,
            PLAN_SEEDS_WHY,
        ),
    )


MNIST_MISSING = "MNIST (not available offline)"
DIGITS_CPU = {"hidden size N": HIDDEN_CUT}
FASHION_CPU = {
    "hidden size N": (
        "CPU time: timed on the shared machine, one thread, 49 steps, N = 32 trains 150 "
        "epochs of 4000 images in about 100 s (pilot seed 100); N = 256 costs tens of times "
        "more per step (digits: N = 128 took 16x N = 32), hours per shard for 50 shards"
    )
}


def _table1_recipe(
    experiment: str,
    stand_in: dict[str, str],
    length: Setting,
    images: str,
    images_why: dict[str, str],
    cpu: dict,
) -> Recipe:
    """The recipe of one stand-in for Table 1's MNIST and PMNIST: ``stand_in``, per scale, the
    data set that stands in for MNIST (not available offline); ``length``, how the sequence length
    is set; ``images``, our training and test images, ``images_why`` why they differ; ``cpu``: as
    for :func:`_common`."""
    return add_recipe(
        Recipe(
            experiment,
            "MomentumRNN paper, Table 1",
            (
                Setting(
                    "data set",
                    ("MNIST", "PMNIST"),
                    "MomentumRNN paper, Table 1",
                    field="tasks",
                    missing=MNIST_MISSING,
                    reasons=stand_in,
                ),
                length,
                Setting(
                    "training images",
                    60000,
                    "MomentumRNN paper, Sect. 4.1 (MNIST's training set)",
                    fixed=images,
                    reasons=images_why,
                ),
                *_common(cpu),
            ),
            default_reasons=SMOKE,
        )
    )


DIGITS = _table1_recipe(
    "momentum_lstm_digits",
    {
        "cpu": "MNIST is not available offline: scikit-learn's 8x8 digits stand in, "
        "pixel by pixel and "
        "permuted",
        "full": "MNIST is not available offline: scikit-learn's 8x8 digits stand in",
    },
    Setting(
        "sequence length",
        784,
        "MomentumRNN paper, Sect. 4.1 (28x28 pixels, one per step)",
        fixed="64 (8x8 digits)",
        reasons={"cpu": SEQUENCE_CUT, "full": "8x8 digits have 64 pixels"},
    ),
    "1347 of scikit-learn's 1797 8x8 digits, 450 test images "
    "(dynkit.tasks.sequences.digit_sequences)",
    {
        scale: "the stand-in's size: at batch 128 an epoch is 11 optimiser steps "
        "against MNIST's 469, so "
        "the authors' 150 epochs are 1650 steps against about 70000"
        for scale in ("cpu", "full")
    },
    DIGITS_CPU,
)

FASHION = _table1_recipe(
    "momentum_lstm_fashion_mnist",
    {
        "cpu": "MNIST is not available offline: Fashion-MNIST (real 28x28 images) "
        "stands in, pixel by "
        "pixel and permuted; the paper has no Fashion-MNIST row",
        "full": "MNIST is not available offline: Fashion-MNIST stands in",
    },
    Setting(
        "pooling before reading (sequence length 784 / pool^2)",
        1,
        "MomentumRNN paper, Sect. 4.1 (28x28 pixels, 784 steps)",
        field="pool",
        reasons={
            "cpu": SEQUENCE_CUT + " (pool 4: 7x7, 49 steps)",
            "full": "14x14 (196 steps): CPU time",
        },
    ),
    "4000 of Fashion-MNIST's 60000, 1000 test images "
    "(dynkit.experiments.momentum_rnn.momentum_lstm.load_task)",
    {"cpu": "CPU time", "full": "CPU time"},
    FASHION_CPU,
)
