"""MomentumRNN's Table 1 at CPU size: pixel-by-pixel and permuted images, LSTM vs the momentum LSTM
cells.

Six cells (:class:`~dynkit.models.momentum_rnn.MomentumRNN` with ``cell="lstm"``): the plain LSTM,
MomentumLSTM, NAG-LSTM, scheduled-restart SRLSTM, AdamLSTM and RMSPropLSTM, each read pixel by pixel
and with one fixed pixel permutation (the PMNIST protocol). Registered as

* ``momentum_lstm_digits``: scikit-learn's 8x8 digits (64 steps; the offline stand-in for MNIST's
  784), the authors' training (RMSprop 1e-3, clipping 1.0, batch 128, 150 epochs, their cell
  parameters) at N = 32 hidden units;
* ``momentum_lstm_fashion_mnist``: Fashion-MNIST average-pooled to 7x7 (49 steps; ``pool=2`` gives
  14x14, 196 steps, where 5 epochs left the LSTM below 50 %), 4000 training and 1000 test images,
  the authors' training, initialisation and SRLSTM cell at N = 32; needs the Debian package
  ``dataset-fashion-mnist``. The paper has no Fashion-MNIST row: these are real 28x28 images
  standing in for its MNIST/PMNIST.

Recorded per (task, cell) and seed: the best and final test accuracy and the gradient-norm ratio
``||dL/dh_1|| / ||dL/dh_T||`` (MomentumRNN Sect. 2, Eq. (13)) on a fixed training batch at
initialisation and after every epoch.

    dynkit run momentum_lstm_digits --scale cpu --planned --out
    analysis/results/momentum_lstm_digits
"""

from __future__ import annotations

import copy
import functools
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ..registry import register

# The cells of Table 1 (mu = s = 0.6, beta = 0.9; the restart period F = 16 steps, a quarter of the
# 64-step digit sequences). NAG-LSTM has no row in Table 1.
CELLS = {
    "LSTM": dict(rule="none"),
    "MomentumLSTM": dict(rule="momentum", mu=0.6, s=0.6),
    "NAGLSTM": dict(rule="nag", s=0.6),
    "SRLSTM": dict(rule="restart", s=0.6, restart_every=16),
    "AdamLSTM": dict(rule="adam", mu=0.6, s=0.6, beta=0.9),
    "RMSPropLSTM": dict(rule="rmsprop", s=0.6, beta=0.9),
}
# The authors' settings of each cell for Table 1 (github.com/minhtannguyen/MomentumRNN,
# mnist-timit/recipes.md, read not copied): their epsilon is our s, their mus our beta; SRLSTM
# restarts its NAG schedule every `restart` steps of the sequence. They differ between MNIST
# ("pixel") and PMNIST ("permuted"); NAG-LSTM has no command there (ours kept).
AUTHORS_CELLS = {
    "pixel": {
        **CELLS,
        "MomentumLSTM": dict(rule="momentum", mu=0.6, s=0.6),
        "SRLSTM": dict(rule="restart", s=1.0, restart_every=2),
        "AdamLSTM": dict(rule="adam", mu=0.6, s=0.6, beta=0.1),
        "RMSPropLSTM": dict(rule="rmsprop", s=0.6, beta=0.9),
    },
    "permuted": {
        **CELLS,
        "MomentumLSTM": dict(rule="momentum", mu=0.6, s=1.0),
        "SRLSTM": dict(rule="restart", s=0.9, restart_every=40),
        "AdamLSTM": dict(rule="adam", mu=0.6, s=1.0, beta=0.01),
        "RMSPropLSTM": dict(rule="rmsprop", s=1.0, beta=0.01),
    },
}
CELL_SETTINGS = {"ours": {"pixel": CELLS, "permuted": CELLS}, "authors": AUTHORS_CELLS}
"""The cells' parameters by name: ``"ours"`` (one setting for every task, :data:`CELLS`) or
``"authors"``."""
OPTIMIZERS = {
    "adam": lambda params, lr: torch.optim.Adam(params, lr=lr),
    # the authors' mnist.py: RMSprop with smoothing constant alpha = 0.9
    "rmsprop": lambda params, lr: torch.optim.RMSprop(params, lr=lr, alpha=0.9),
}


def cell_kwargs(config: "MomentumLSTMConfig") -> dict:
    """The :class:`~dynkit.models.momentum_rnn.MomentumRNN` keywords of ``config.cell`` on
    ``config.task``."""
    kind = "permuted" if config.task.endswith("permuted") else "pixel"
    kwargs = dict(CELL_SETTINGS[config.cell_settings][kind][config.cell])
    if (
        config.cell == "SRLSTM" and config.srlstm == "authors"
    ):  # their NesterovLSTMCell, the same s and period
        kwargs["rule"] = "nesterov_restart"
    return kwargs


# Table 1 of MomentumRNN: best test accuracy (%), N = 256 hidden units; LSTM is the baseline of
# [22].
PAPER = {
    "digits": {
        "LSTM": 98.90,
        "MomentumLSTM": 99.08,
        "AdamLSTM": 99.09,
        "RMSPropLSTM": 99.15,
        "SRLSTM": 99.01,
    },
    "digits_permuted": {
        "LSTM": 92.29,
        "MomentumLSTM": 94.72,
        "AdamLSTM": 95.05,
        "RMSPropLSTM": 95.38,
        "SRLSTM": 93.82,
    },
}
TASKS = ("digits", "digits_permuted", "fashion_mnist", "fashion_mnist_permuted")
# The Table 1 column (MNIST or PMNIST, keyed by our digits stand-ins) each task stands in for
PAPER_COLUMN = {
    "digits": "digits",
    "digits_permuted": "digits_permuted",
    "fashion_mnist": "digits",
    "fashion_mnist_permuted": "digits_permuted",
}


def load_task(task: str, seed: int, train_subset: int | None = None, pool: int = 2):
    """``(x_train, y_train, x_test, y_test)``, sequences of shape (n, T, 1).

    Fashion-MNIST images are average-pooled by ``pool`` (2: 14x14, T = 196; 4: 7x7, T = 49)
    before being read pixel by pixel."""
    from ...tasks.sequences import digit_sequences

    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    if task.startswith("digits"):
        d = digit_sequences(permuted=task.endswith("permuted"), seed=seed)
        data = [d.x_train, d.y_train, d.x_test, d.y_test]
    else:
        from ...tasks import (
            images,
        )  # FASHION_MNIST_DIR read at call time (tests point it at planted files)

        if not images.fashion_mnist_available(images.FASHION_MNIST_DIR):
            raise ValueError(
                f"task {task!r} needs Fashion-MNIST's IDX files in "
                f"{str(images.FASHION_MNIST_DIR)!r}: "
                f"apt-get install -y dataset-fashion-mnist"
            )
        x_tr, y_tr, x_te, y_te = images.load_idx_images(
            images.FASHION_MNIST_DIR, n_train=4000, n_test=1000
        )

        def pooled(x):
            return torch.nn.functional.avg_pool2d(
                torch.as_tensor(x, dtype=torch.float32), pool
            ).flatten(1)

        x_tr, x_te = pooled(x_tr), pooled(x_te)
        if task.endswith("permuted"):
            perm = torch.from_numpy(np.random.default_rng(seed).permutation(x_tr.shape[1]))
            x_tr, x_te = x_tr[:, perm], x_te[:, perm]
        data = [
            x_tr[..., None],
            torch.as_tensor(y_tr).long(),
            x_te[..., None],
            torch.as_tensor(y_te).long(),
        ]
    if train_subset is not None:
        keep = torch.from_numpy(
            np.random.default_rng(seed).permutation(len(data[0]))[:train_subset]
        )
        data[0], data[1] = data[0][keep], data[1][keep]
    return data


def gradient_ratio(model, x: torch.Tensor, y: torch.Tensor) -> float:
    """``||dL/dh_1|| / ||dL/dh_T||`` of the cross-entropy on ``(x, y)`` (total derivatives through
    the recurrence).

    Computed in float64 on a copy of the model: over 196 steps an untrained LSTM's ``dL/dh_1`` falls
    below float32's range (it read exactly 0, a ratio of "1e-300", before this was done)."""
    probe = copy.deepcopy(model).double()
    with torch.enable_grad():
        out, hs = probe(x.double(), return_states=True)
        for h in hs:
            h.retain_grad()
        torch.nn.functional.cross_entropy(out, y).backward()
        return float(hs[0].grad.norm() / hs[-1].grad.norm())


@dataclass(frozen=True)
class MomentumLSTMConfig:
    """``(task, cell)`` is the config point."""

    tasks: tuple[str, ...] = ("digits", "digits_permuted")
    cells: tuple[str, ...] = tuple(CELLS)
    task: str = "digits"
    cell: str = "LSTM"
    hidden: int = 32
    epochs: int = 30
    batch: int = 64
    lr: float = 1e-2
    train_subset: int | None = None
    eval_batch: int = 128
    pool: int = (
        2  # Fashion-MNIST: average-pooling factor before reading pixel by pixel (2: 14x14, 4: 7x7)
    )
    optimizer: str = "adam"  # a key of OPTIMIZERS ("rmsprop": the authors')
    clip: float | None = None  # global gradient-norm clipping (the authors': 1.0); None: none
    cell_settings: str = (
        "ours"  # a key of CELL_SETTINGS ("authors": their per-task mu, s, beta and restart)
    )
    # dynkit.models.momentum_rnn.INITS ("authors": their orthogonal/identity/forget-bias one)
    init: str = "uniform"
    # SRLSTM's cell: "ours" (rule "restart") or "authors" (rule "nesterov_restart", theirs)
    srlstm: str = "ours"

    def __post_init__(self):
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(
                f"optimizer must be one of {sorted(OPTIMIZERS)}, got {self.optimizer!r}"
            )
        from ...models.momentum_rnn import INITS

        if self.srlstm not in ("ours", "authors"):
            raise ValueError(f"srlstm must be one of ('ours', 'authors'), got {self.srlstm!r}")
        if self.init not in INITS:
            raise ValueError(f"init must be one of {INITS}, got {self.init!r}")
        if self.cell_settings not in CELL_SETTINGS:
            raise ValueError(
                f"cell_settings must be one of {sorted(CELL_SETTINGS)}, got {self.cell_settings!r}"
            )
        if self.clip is not None and (
            isinstance(self.clip, bool)
            or not isinstance(self.clip, (int, float))
            or not self.clip > 0
        ):
            raise ValueError(f"clip must be None or a number > 0, got {self.clip!r}")


@functools.lru_cache(maxsize=2)
def _data(task: str, seed: int, train_subset, pool: int = 2):
    return load_task(task, seed, train_subset, pool)


def train_cell(config: MomentumLSTMConfig, seed: int, data) -> dict:
    """Train ``config.cell``; test accuracy per epoch and the gradient ratio at init and after
    each epoch."""
    from ...models.momentum_rnn import SequenceClassifier
    from ...tasks.training import fit

    x_tr, y_tr, x_te, y_te = data
    torch.manual_seed(seed)
    model = SequenceClassifier(
        x_tr.shape[2], config.hidden, 10, cell="lstm", init=config.init, **cell_kwargs(config)
    )
    optimizer = OPTIMIZERS[config.optimizer](model.parameters(), config.lr)
    x_eval, y_eval = x_tr[: config.eval_batch], y_tr[: config.eval_batch]
    ratios = [gradient_ratio(model, x_eval, y_eval)]

    def batches(generator):
        order = torch.randperm(len(x_tr), generator=generator, device=generator.device)
        return (
            (x_tr[order[i : i + config.batch]], y_tr[order[i : i + config.batch]])
            for i in range(0, len(order), config.batch)
        )

    def step(
        model, batch
    ):  # backward here, so that the gradient can be clipped before fit's optimiser step
        x, y = batch
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        if config.clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.clip)
        return loss, {}

    def evaluate(model):
        ratios.append(gradient_ratio(model, x_eval, y_eval))
        return {"test_accuracy": float((model(x_te).argmax(-1) == y_te).float().mean())}

    start = time.perf_counter()
    history = fit(
        model,
        optimizer,
        batches,
        step,
        config.epochs,
        seed=seed,
        evaluate=evaluate,
        progress=False,
        description=config.cell,
        backward=False,
    )
    return {
        "accuracy": [100 * h["test_accuracy"] for h in history.epochs],
        "grad_ratio": ratios,
        "seconds": time.perf_counter() - start,
        "n_parameters": sum(p.numel() for p in model.parameters()),
    }


def _points(config: MomentumLSTMConfig) -> list[dict]:
    return [{"task": t, "cell": c} for t in config.tasks for c in config.cells]


def render_momentum_lstm(results: dict, out: Path) -> None:
    """Best accuracy and the gradient ratio during training per cell, mean over seeds."""
    from ...io import save_figure
    from ..plotting import pyplot

    plt = pyplot()
    cfg, stats = results["config"], results["metrics"]
    tasks = cfg["tasks"]
    fig, axes = plt.subplots(1, len(tasks), figsize=(5 * len(tasks), 3.8), squeeze=False)
    for j, task in enumerate(tasks):
        ax = axes[0, j]
        for i, cell in enumerate(cfg["cells"]):
            keys = [f"{task}.{cell}.log10_grad_ratio@epoch{e}" for e in range(cfg["epochs"] + 1)]
            if all(k in stats for k in keys):
                acc = stats[f"{task}.{cell}.best_accuracy"]["mean"]
                ax.plot(
                    range(len(keys)),
                    [stats[k]["mean"] for k in keys],
                    marker="o",
                    color=f"C{i}",
                    label=f"{cell} (best acc {acc:.1f}%)",
                )
        ax.set(title=task, xlabel="epoch", ylabel="log10 ||dL/dh_1|| / ||dL/dh_T||")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, Path(out) / "momentum_lstm.png", dpi=100)
    plt.close(fig)
    _table(results, out)


def _table(results: dict, out: Path) -> None:
    """``table.md``: per task and cell, best and final accuracy and the gradient ratio, mean ±
    std over seeds."""
    from ..tables import cell, write_table

    cfg = results["config"]
    rows = []
    for task in cfg["tasks"]:
        column = PAPER[PAPER_COLUMN[task]]
        for c in cfg["cells"]:
            key = f"{task}.{c}"
            rows.append(
                [
                    task,
                    c,
                    cell(results, f"{key}.best_accuracy", ".1f"),
                    cell(results, f"{key}.final_accuracy", ".1f"),
                    cell(results, f"{key}.log10_grad_ratio_init"),
                    cell(results, f"{key}.log10_grad_ratio"),
                    column.get(c, "–"),
                ]
            )
    write_table(
        out,
        "MomentumRNN Table 1's cells at CPU size",
        [
            "task",
            "cell",
            "best test acc. (%)",
            "final test acc. (%)",
            "log10 ratio at init",
            "log10 ratio, mean over epochs",
            "paper (MNIST/PMNIST, %)",
        ],
        rows,
        note=f"Scale {results['scale']}, seeds {results['seeds']}, hidden {cfg['hidden']}, "
        f"{cfg['epochs']} epochs; ratio = ||dL/dh_1|| / ||dL/dh_T||. The paper's column is "
        f"its MNIST "
        f"(PMNIST for permuted tasks) figure at N = 256: it has no digits or Fashion-MNIST row.",
    )


FASHION = ("fashion_mnist", "fashion_mnist_permuted")
TABLE1_CELLS = ("LSTM", "MomentumLSTM", "SRLSTM", "AdamLSTM", "RMSPropLSTM")
"""The cells with a row in MomentumRNN's Table 1 (and in the ledger); NAG-LSTM has none."""
AUTHORS_TRAINING = dict(
    cells=TABLE1_CELLS,
    hidden=256,
    epochs=150,
    batch=128,
    lr=1e-3,
    optimizer="rmsprop",
    clip=1.0,
    cell_settings="authors",
)
"""The authors' training of Table 1 (``mnist-timit/recipes.md`` and ``mnist.py``; the recipe
names each source)."""


@register(
    "momentum_lstm_fashion_mnist",
    smoke=MomentumLSTMConfig(
        tasks=FASHION[:1],
        cells=("LSTM", "MomentumLSTM"),
        task=FASHION[0],
        hidden=8,
        epochs=1,
        batch=128,
        train_subset=256,
        eval_batch=64,
    ),
    # cpu: the authors' training, cells, initialisation and SRLSTM at N = 32 on 7x7 images (T = 49;
    # at 14x14 for 5 epochs of Adam the LSTM stayed at 18-48 %); pilot seed 100: 150 epochs in about
    # 100 s a shard, the LSTM's best accuracy 70.5 % (pixel), SRLSTM's 75.3 % (permuted). Was: Adam
    # 3e-3, batch 64, 30 epochs, no clipping, dynkit's cell settings, uniform initialisation, six
    # cells
    cpu=MomentumLSTMConfig(
        tasks=FASHION,
        task=FASHION[0],
        pool=4,
        init="authors",
        srlstm="authors",
        **{**AUTHORS_TRAINING, "hidden": 32},
    ),
    full=MomentumLSTMConfig(
        tasks=FASHION,
        task=FASHION[0],
        eval_batch=256,
        init="authors",
        srlstm="authors",
        **AUTHORS_TRAINING,
    ),
    points=_points,
    render=render_momentum_lstm,
    summary="MomentumRNN Table 1's cells on pixel-by-pixel (and permuted) Fashion-MNIST, 7x7 at cpu "  # noqa: E501
    "scale",
)
@register(
    "momentum_lstm_digits",
    smoke=MomentumLSTMConfig(
        tasks=("digits",),
        cells=("LSTM", "MomentumLSTM"),
        hidden=8,
        epochs=1,
        batch=128,
        train_subset=256,
        eval_batch=64,
    ),
    # cpu: the authors' training (RMSprop 1e-3, clipping 1.0, batch 128, 150 epochs, their per-task
    # cells and restart periods), initialisation and SRLSTM cell at N = 32 (timed: 0.27 s an epoch
    # against 4.4 s at N = 128), the five cells of Table 1 (NAG-LSTM has no row); was Adam 1e-2,
    # batch 64, 30 epochs, one cell setting for all, then (until 2026-11-28) torch's uniform
    # initialisation and dynkit's SRLSTM
    cpu=MomentumLSTMConfig(init="authors", srlstm="authors", **{**AUTHORS_TRAINING, "hidden": 32}),
    full=MomentumLSTMConfig(eval_batch=256, init="authors", srlstm="authors", **AUTHORS_TRAINING),
    points=_points,
    render=render_momentum_lstm,
)
def momentum_lstm(config: MomentumLSTMConfig, *, seed: int, out: Path, device: str) -> dict:
    """MomentumRNN Table 1 at CPU size: best test accuracy and ||dL/dh_1||/||dL/dh_T|| of six
    LSTM cells."""
    r = train_cell(config, seed, _data(config.task, seed, config.train_subset, config.pool))
    key = f"{config.task}.{config.cell}"
    ratios = np.log10(np.maximum(r["grad_ratio"], 1e-300))
    metrics = {
        f"{key}.best_accuracy": max(r["accuracy"]),
        f"{key}.final_accuracy": r["accuracy"][-1],
        f"{key}.log10_grad_ratio_init": float(ratios[0]),
        f"{key}.log10_grad_ratio": float(np.mean(ratios[1:])),  # mean over the epochs' ends
        f"{key}.seconds": r["seconds"],
        f"{key}.n_parameters": float(r["n_parameters"]),
    }
    for e, value in enumerate(ratios):
        metrics[f"{key}.log10_grad_ratio@epoch{e}"] = float(value)
    return {"metrics": metrics, "accuracy_per_epoch": r["accuracy"]}
