"""MomentumRNN's Table 1 at CPU size: pixel-by-pixel and permuted images, LSTM vs the momentum LSTM cells.

Six cells (:class:`~dynkit.models.momentum_rnn.MomentumRNN` with ``cell="lstm"``): the plain LSTM,
MomentumLSTM, NAG-LSTM, scheduled-restart SRLSTM, AdamLSTM and RMSPropLSTM, on scikit-learn's 8x8
digits read pixel by pixel (64 steps; the offline stand-in for MNIST's 784) and with one fixed pixel
permutation (PMNIST protocol); Fashion-MNIST (pooled to 14x14, 196 steps, a seeded subset) when the
Debian package ``dataset-fashion-mnist`` is installed. Recorded: test accuracy per epoch and the
gradient-norm ratio ``||dL/dh_1|| / ||dL/dh_T||`` (MomentumRNN Sect. 2, Eq. (13)) on a fixed training
batch at initialisation and after every epoch. Each (task, cell, seed) is one JSON shard.

    python -m dynkit.experiments.momentum_lstm --scale cpu --out analysis/results/momentum_lstm_digits
"""
from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

import numpy as np
import torch

from ..io import save_figure, write_json

# The cells of Table 1 (mu = 0.6, s = 0.6 and beta = 0.9 as in dynkit's MomentumRNN defaults; the
# restart period F = 16 steps, a quarter of the 64-step digit sequences).
CELLS = {
    "LSTM": dict(rule="none"),
    "MomentumLSTM": dict(rule="momentum", mu=0.6, s=0.6),
    "NAGLSTM": dict(rule="nag", s=0.6),
    "SRLSTM": dict(rule="restart", s=0.6, restart_every=16),
    "AdamLSTM": dict(rule="adam", mu=0.6, s=0.6, beta=0.9),
    "RMSPropLSTM": dict(rule="rmsprop", s=0.6, beta=0.9),
}
# Table 1 of MomentumRNN (best test accuracy, %, N = 256; MomentumLSTM also N = 128); LSTM: the
# baseline of [22] it quotes. NAG-LSTM has no row there.
PAPER = {"digits": {"LSTM": 98.90, "MomentumLSTM": 99.08, "AdamLSTM": 99.09, "RMSPropLSTM": 99.15, "SRLSTM": 99.01},
         "digits_permuted": {"LSTM": 92.29, "MomentumLSTM": 94.72, "AdamLSTM": 95.05, "RMSPropLSTM": 95.38,
                             "SRLSTM": 93.82}}
SIZES = {
    "smoke": dict(hidden=8, epochs=1, batch=128, lr=3e-3, train_subset=256, eval_batch=64),
    "cpu": dict(hidden=32, epochs=6, batch=64, lr=3e-3, train_subset=None, eval_batch=128),
    "full": dict(hidden=256, epochs=100, batch=128, lr=1e-3, train_subset=None, eval_batch=256),
}
SCALES = tuple(SIZES)
TASKS = ("digits", "digits_permuted", "fashion_mnist", "fashion_mnist_permuted")


def load_task(task: str, seed: int, train_subset: int | None):
    """``(x_train, y_train, x_test, y_test)``, sequences of shape (n, T, 1)."""
    from ..tasks.sequences import digit_sequences

    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    if task.startswith("digits"):
        d = digit_sequences(permuted=task.endswith("permuted"), seed=seed)
        data = [d.x_train, d.y_train, d.x_test, d.y_test]
    else:
        from ..tasks.images import fashion_mnist_available, load_idx_images

        if not fashion_mnist_available():
            raise ValueError("fashion_mnist needs the Debian package dataset-fashion-mnist installed")
        x_tr, y_tr, x_te, y_te = load_idx_images(n_train=4000, n_test=1000)
        pool = lambda x: torch.nn.functional.avg_pool2d(torch.as_tensor(x, dtype=torch.float32), 2).flatten(1)  # noqa: E731
        x_tr, x_te = pool(x_tr), pool(x_te)
        if task.endswith("permuted"):
            perm = torch.from_numpy(np.random.default_rng(seed).permutation(x_tr.shape[1]))
            x_tr, x_te = x_tr[:, perm], x_te[:, perm]
        data = [x_tr[..., None], torch.as_tensor(y_tr).long(), x_te[..., None], torch.as_tensor(y_te).long()]
    if train_subset is not None:
        keep = torch.from_numpy(np.random.default_rng(seed).permutation(len(data[0]))[:train_subset])
        data[0], data[1] = data[0][keep], data[1][keep]
    return data


def gradient_ratio(model, x: torch.Tensor, y: torch.Tensor) -> float:
    """``||dL/dh_1|| / ||dL/dh_T||`` of the cross-entropy on ``(x, y)`` (total derivatives through the recurrence)."""
    with torch.enable_grad():
        out, hs = model(x, return_states=True)
        for h in hs:
            h.retain_grad()
        torch.nn.functional.cross_entropy(out, y).backward()
        ratio = float(hs[0].grad.norm() / hs[-1].grad.norm())
    model.zero_grad(set_to_none=True)
    return ratio


def run_one(task: str, cell: str, seed: int, scale: str, data=None) -> dict:
    from ..models.momentum_rnn import SequenceClassifier
    from ..tasks.training import fit

    cfg = SIZES[scale]
    x_tr, y_tr, x_te, y_te = data if data is not None else load_task(task, seed, cfg["train_subset"])
    torch.manual_seed(seed)
    model = SequenceClassifier(x_tr.shape[2], cfg["hidden"], 10, cell="lstm", **CELLS[cell])
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg["lr"])
    x_eval, y_eval = x_tr[: cfg["eval_batch"]], y_tr[: cfg["eval_batch"]]
    ratios = [gradient_ratio(model, x_eval, y_eval)]

    def batches(generator):
        order = torch.randperm(len(x_tr), generator=generator)
        return ((x_tr[order[i:i + cfg["batch"]]], y_tr[order[i:i + cfg["batch"]]])
                for i in range(0, len(order), cfg["batch"]))

    def step(model, batch):
        x, y = batch
        return torch.nn.functional.cross_entropy(model(x), y), {}

    def evaluate(model):
        ratios.append(gradient_ratio(model, x_eval, y_eval))
        return {"test_accuracy": float((model(x_te).argmax(-1) == y_te).float().mean())}

    start = time.perf_counter()
    history = fit(model, optimizer, batches, step, cfg["epochs"], seed=seed, evaluate=evaluate, progress=False,
                  description=cell)
    acc = [h["test_accuracy"] for h in history.epochs]
    return {"task": task, "cell": cell, "seed": seed, "best_test_accuracy": 100 * max(acc),
            "final_test_accuracy": 100 * acc[-1], "grad_ratio": ratios,
            "n_parameters": sum(p.numel() for p in model.parameters()), "seconds": time.perf_counter() - start,
            "history": history.epochs}


def run(scale: str = "cpu", tasks=("digits", "digits_permuted"), seeds=(0, 1, 2), out: str | Path = "results",
        cells=tuple(CELLS), command: str | None = None, quiet: bool = False) -> dict:
    """All ``tasks`` x ``cells`` x ``seeds``; writes ``results.json`` (mean +- std beside the paper) and a figure."""
    if scale not in SIZES:
        raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
    out = Path(out)
    (out / "shards").mkdir(parents=True, exist_ok=True)
    records = []
    for task in tasks:
        for seed in seeds:
            data = None
            for cell in cells:
                shard = out / "shards" / f"{task}_{cell}_seed{seed}.json"
                if shard.exists():
                    records.append(json.loads(shard.read_text()))
                    continue
                data = data if data is not None else load_task(task, seed, SIZES[scale]["train_subset"])
                record = run_one(task, cell, seed, scale, data)
                write_json(shard, record)
                records.append(record)
                if not quiet:
                    print(f"{task} {cell} seed {seed}: best {record['best_test_accuracy']:.1f}%, grad ratio "
                          f"{record['grad_ratio'][0]:.2e} -> {record['grad_ratio'][-1]:.2e}", flush=True)
    summary = {}
    for task in tasks:
        summary[task] = {}
        for cell in cells:
            rows = [r for r in records if r["task"] == task and r["cell"] == cell]
            best = [r["best_test_accuracy"] for r in rows]
            log_ratio = [np.log10(np.mean(r["grad_ratio"][1:])) for r in rows]  # mean over training epochs
            summary[task][cell] = {"accuracy_mean": float(np.mean(best)), "accuracy_std": float(np.std(best)),
                                   "log10_grad_ratio_mean": float(np.mean(log_ratio)),
                                   "log10_grad_ratio_std": float(np.std(log_ratio)), "n_seeds": len(rows),
                                   "paper": PAPER.get(task, {}).get(cell), "n_parameters": rows[0]["n_parameters"]}
    write_json(out / "results.json", {"scale": scale, "summary": summary,
                                      "runs": [{k: v for k, v in r.items() if k != "history"} for r in records]},
               config={"scale": scale, **SIZES[scale], "cells": CELLS, "seeds": list(seeds)}, command=command)
    plot(records, tasks, out / "momentum_lstm.png")
    return summary


def plot(records, tasks, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, len(tasks), figsize=(4.5 * len(tasks), 6.5), squeeze=False)
    for j, task in enumerate(tasks):
        for i, cell in enumerate(CELLS):
            rows = [r for r in records if r["task"] == task and r["cell"] == cell]
            if not rows:
                continue
            acc = np.mean([[h["test_accuracy"] for h in r["history"]] for r in rows], axis=0)
            ratio = np.exp(np.mean(np.log([r["grad_ratio"] for r in rows]), axis=0))
            axes[0, j].plot(np.arange(1, len(acc) + 1), 100 * acc, color=f"C{i}", label=cell)
            axes[1, j].semilogy(np.arange(len(ratio)), ratio, color=f"C{i}", label=cell)
        axes[0, j].set(title=task, xlabel="epoch", ylabel="test accuracy (%)")
        axes[1, j].set(xlabel="epoch", ylabel="||dL/dh_1|| / ||dL/dh_T||")
        for ax in axes[:, j]:
            ax.grid(alpha=0.3)
    axes[0, 0].legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, path, dpi=100)
    plt.close(fig)


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scale", choices=SCALES, default="cpu")
    p.add_argument("--tasks", nargs="+", choices=TASKS, default=["digits", "digits_permuted"])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    command = "python -m dynkit.experiments.momentum_lstm " + " ".join(map(shlex.quote, argv or sys.argv[1:]))
    torch.set_num_threads(1)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "COMMAND").write_text(command + "\n")
    return run(args.scale, args.tasks, args.seeds, args.out, command=command)


if __name__ == "__main__":
    main()
