"""The review's time-series experiments (Sect. 3.4.3-3.4.4, Figs. 8, 12, 13): five ODE-RNN hybrids on
Walker2D, plane vibration and Silverbox.

For every task, model and seed: train with Adam (:func:`~dynkit.tasks.time_series.train_hybrid`),
record the test MSE, the forward/backward NFE per epoch, the seconds per epoch, and the adjoint norm
through time. Each (model, seed) is one JSON shard under ``out/shards``; an existing shard is reused.
Simulated systems stand in for the recorded data (see each task's ``note``).

    python -m dynkit.experiments.time_series_hybrids walker2d --scale cpu --seeds 0 1 2 --out analysis/results/ts_walker2d
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
from ..models.ode_rnn import HYBRIDS, LABELS

# Per task and scale: data options, training options, solver tolerance. The review's batch size and
# learning rate (Table 4) apply at "full" scale; "cpu" shrinks data and epochs to minutes on a CPU.
CONFIGS = {
    "walker2d": {
        "smoke": dict(data=dict(n_episodes=3, steps=140), epochs=1, batch_size=8, lr=3e-3, tol=1e-2),
        "cpu": dict(data=dict(n_episodes=6, steps=600), epochs=6, batch_size=16, lr=3e-3, tol=1e-3),
        "full": dict(data=dict(n_episodes=40, steps=1000), epochs=100, batch_size=256, lr=3e-3, tol=1e-3),
    },
    "plane_vibration": {
        "smoke": dict(data=dict(n_points=320), epochs=1, batch_size=8, lr=1e-3, tol=1e-2),
        "cpu": dict(data=dict(n_points=3000), epochs=6, batch_size=8, lr=3e-3, tol=1e-3),
        "full": dict(data=dict(n_points=73627), epochs=100, batch_size=64, lr=1e-4, tol=1e-7),
    },
    "silverbox": {
        "smoke": dict(data=dict(n_points=300), epochs=1, batch_size=8, lr=3e-3, tol=1e-2),
        "cpu": dict(data=dict(n_points=3000), epochs=6, batch_size=8, lr=3e-3, tol=1e-3),
        "full": dict(data=dict(n_points=40000), epochs=100, batch_size=64, lr=1e-3, tol=1e-5),
    },
}
TASKS = tuple(CONFIGS)
SCALES = ("smoke", "cpu", "full")
# The metric each task's test MSE means: plane vibration forecasts 8 stamps (Sect. 3.4.3), the others
# forecast one stamp ahead (auto-regressive, Sect. 3.4.4).
TEST_METRIC = {"walker2d": "test_one_step_mse", "plane_vibration": "test_forecast_mse",
               "silverbox": "test_one_step_mse"}


def config(task: str, scale: str) -> dict:
    if task not in CONFIGS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
    return CONFIGS[task][scale]


def run_one(task_name: str, model_name: str, seed: int, scale: str, task=None) -> dict:
    """Train one hybrid on one task with one seed; returns its JSON-ready record."""
    from ..models.node_paper import from_paper
    from ..models import count_parameters
    from ..tasks.time_series import load_time_series, train_hybrid

    cfg = config(task_name, scale)
    task = task if task is not None else load_time_series(task_name, **cfg["data"], seed=seed)
    torch.manual_seed(seed)
    model = from_paper(model_name, task_name, rtol=cfg["tol"], atol=cfg["tol"])
    start = time.perf_counter()
    result = train_hybrid(model, task, epochs=cfg["epochs"], batch_size=cfg["batch_size"], lr=cfg["lr"], seed=seed)
    hist = result["history"]
    norms = np.asarray(result["adjoint_norm"])
    return {"task": task_name, "model": model_name, "seed": seed, "n_parameters": count_parameters(model),
            "train_seconds": time.perf_counter() - start,
            "test_mse": float(hist[-1][TEST_METRIC[task_name]]),
            "nfe_forward_per_epoch": float(np.mean([h["nfe_forward"] for h in hist])),
            "nfe_backward_per_epoch": float(np.mean([h["nfe_backward"] for h in hist])),
            "seconds_per_epoch": float(np.mean([h["epoch_seconds"] for h in hist])),
            "adjoint_norm": norms.tolist(),
            # log10 of ||dL/dz|| at the first observation over that at the last: << 0 means it vanished
            "adjoint_log10_ratio": float(np.log10(max(norms[0], 1e-300) / norms[-1])),
            "history": hist, "note": task.note, "n_train_windows": len(task.train)}


def summarise(records: list[dict]) -> dict:
    """Mean and std over seeds of each scalar, per model."""
    keys = ("test_mse", "nfe_forward_per_epoch", "nfe_backward_per_epoch", "seconds_per_epoch", "train_seconds",
            "adjoint_log10_ratio")
    out = {}
    for model in HYBRIDS:
        rows = [r for r in records if r["model"] == model]
        if rows:
            out[model] = {k: {"mean": float(np.mean([r[k] for r in rows])), "std": float(np.std([r[k] for r in rows])),
                              "n": len(rows)} for k in keys}
            out[model]["n_parameters"] = rows[0]["n_parameters"]
    return out


def run(task: str, scale: str = "cpu", seeds=(0, 1, 2), out: str | Path = "results", models=HYBRIDS,
        command: str | None = None, quiet: bool = False) -> dict:
    """All ``models`` x ``seeds`` on ``task``; shards reused; writes ``results.json`` and ``hybrids.png``."""
    from ..tasks.time_series import load_time_series

    out = Path(out)
    (out / "shards").mkdir(parents=True, exist_ok=True)
    records = []
    for seed in seeds:
        data = None
        for model in models:
            shard = out / "shards" / f"{model}_seed{seed}.json"
            if shard.exists():
                records.append(json.loads(shard.read_text()))
                continue
            if data is None:
                data = load_time_series(task, **config(task, scale)["data"], seed=seed)
            record = run_one(task, model, seed, scale, task=data)
            write_json(shard, record)
            records.append(record)
            if not quiet:
                print(f"{task} {model} seed {seed}: test MSE {record['test_mse']:.4f}, NFE/epoch "
                      f"{record['nfe_forward_per_epoch']:.0f} fwd {record['nfe_backward_per_epoch']:.0f} bwd, "
                      f"{record['seconds_per_epoch']:.1f} s/epoch, adjoint log10 ratio "
                      f"{record['adjoint_log10_ratio']:.2f}", flush=True)
    summary = summarise(records)
    write_json(out / "results.json", {"task": task, "scale": scale, "seeds": list(seeds), "summary": summary,
                                      "note": records[0]["note"] if records else "",
                                      "runs": [{k: v for k, v in r.items() if k != "history"} for r in records]},
               config={"scale": scale, **config(task, scale)}, command=command)
    plot(records, out / "hybrids.png", task)
    return summary


def plot(records: list[dict], path: Path, task: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for i, model in enumerate(HYBRIDS):
        rows = [r for r in records if r["model"] == model]
        if not rows:
            continue
        norms = np.mean([r["adjoint_norm"] for r in rows], axis=0)
        axes[0].semilogy(np.arange(len(norms))[::-1], norms, color=f"C{i}", label=LABELS[model])
        mse = [[h[TEST_METRIC[task]] for h in r["history"]] for r in rows]
        axes[1].semilogy(np.arange(1, len(mse[0]) + 1), np.mean(mse, axis=0), color=f"C{i}", label=LABELS[model])
    axes[0].set(xlabel="observations before T", ylabel="||dL/dz_t|| (mean over seeds)", title=f"{task}: adjoint")
    axes[1].set(xlabel="epoch", ylabel=TEST_METRIC[task], title=f"{task}: test MSE")
    for ax in axes:
        ax.grid(alpha=0.3)
    axes[1].legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path, dpi=100)
    plt.close(fig)


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("task", choices=TASKS)
    p.add_argument("--scale", choices=SCALES, default="cpu")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--models", nargs="+", choices=HYBRIDS, default=list(HYBRIDS))
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    command = "python -m dynkit.experiments.time_series_hybrids " + " ".join(map(shlex.quote, argv or sys.argv[1:]))
    torch.set_num_threads(1)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "COMMAND").write_text(command + "\n")
    return run(args.task, args.scale, args.seeds, args.out, args.models, command=command)


if __name__ == "__main__":
    main()
