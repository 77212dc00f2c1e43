"""The ledger's comparisons of MomentumRNN's Table 1 (the momentum LSTM on digits and Fashion-MNIST)
and their validity checks."""

from __future__ import annotations

from ..judging.ledger import (
    RowValues,
    add_comparisons,
    at_least,
    declare_validity,
    difference,
    greater,
)
from ..judging.papers import MOMRNN
from .momentum_lstm import PAPER as MOMRNN_TABLE, PAPER_COLUMN

# ---- MomentumRNN Table 1 (digits and Fashion-MNIST as the CPU stand-ins for MNIST)
# ------------------------------ (task, what it stands for, experiment, data in the metric); the
# effect size is the gain in the Table 1 column the task stands in for (PAPER_COLUMN)
MOMRNN_TASKS = (
    ("digits", "pixel-by-pixel digits (MNIST)", "momentum_lstm_digits", "8x8 digits"),
    ("digits_permuted", "permuted digits (PMNIST)", "momentum_lstm_digits", "8x8 digits"),
    (
        "fashion_mnist",
        "pixel-by-pixel Fashion-MNIST (for MNIST)",
        "momentum_lstm_fashion_mnist",
        "7x7 Fashion-MNIST",
    ),
    (
        "fashion_mnist_permuted",
        "permuted Fashion-MNIST (for PMNIST)",
        "momentum_lstm_fashion_mnist",
        "7x7 Fashion-MNIST",
    ),
)
for task, label, experiment, data in MOMRNN_TASKS:
    # every cell a row compares must have learned, the baseline and the momentum cell alike
    declare_validity(
        experiment,
        *(
            at_least(
                f"{task}.{cell}.best_accuracy",
                50.0,
                "10 classes, chance 10 %: a stated margin of 40 points",
            )
            for cell in ("LSTM", "MomentumLSTM", "AdamLSTM", "RMSPropLSTM", "SRLSTM")
        ),
    )
    table = MOMRNN_TABLE[PAPER_COLUMN[task]]
    where = (
        "Table 1"
        if task.startswith("digits")
        else "Table 1 (MNIST/PMNIST; the paper has no Fashion-MNIST row)"
    )
    gains = {
        cell: round(table[cell] - table["LSTM"], 2)
        for cell in ("MomentumLSTM", "AdamLSTM", "RMSPropLSTM", "SRLSTM")
    }
    add_comparisons(
        MOMRNN,
        experiment,
        [
            *(
                RowValues(
                    f"momentum_rnn.{task}_{cell}_beats_lstm",
                    f"{cell} has a better best test accuracy than the LSTM on {label}",
                    f"{where}: {table[cell]}% vs {table['LSTM']}% (+{gain} points)",
                    f"best test accuracy {cell} - LSTM (points), {data}",
                    difference(f"{task}.{cell}.best_accuracy", f"{task}.LSTM.best_accuracy"),
                    greater(gain, null=0.0),
                )
                for cell, gain in gains.items()
            ),
            # no full_scale here: "needs full scale" was set after the results, for the rows that
            # came out inconclusive; a row is marked only by its recipe, before its results
            RowValues(
                f"momentum_rnn.{task}_momentum_lstm_gradient_ratio",
                "Momentum alleviates vanishing gradients: ||dL/dh_1||/||dL/dh_T|| is larger for "
                "MomentumLSTM than "
                "for the LSTM during training",
                "Sect. 2 Eq. (13) (argument; Fig. 2 for the RNN)",
                f"log10 gradient ratio MomentumLSTM - LSTM, mean over epochs, {task}",
                difference(
                    f"{task}.MomentumLSTM.log10_grad_ratio", f"{task}.LSTM.log10_grad_ratio"
                ),
                greater(1.0, null=0.0),
            ),
        ],
    )
