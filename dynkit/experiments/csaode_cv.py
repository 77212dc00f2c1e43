"""CSAODE's Table 1 on SUBJ, MR, CR and MPQA: CSARK, CSARKF, CSAARK with the paper's 10-fold cross-validation.

Each (variant, fold) trains :func:`~dynkit.tasks.text.train_csaode` on the other nine folds and tests
on the held-out one (one fixed fold partition, seed 0); results are mean +- std over folds, beside the
paper's accuracies. GloVe 6B 50-d vectors initialise the embeddings (the offline stand-in for the
paper's 300-d GloVe). The CPU size is far below the paper's 0.63M-parameter models: see ``SIZES``.
Each (variant, fold) is one JSON shard under ``out/shards``; an existing shard is reused.

    python -m dynkit.experiments.csaode_cv mr --scale cpu --out analysis/results/csaode_cv_mr
"""
from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

import numpy as np

from ..io import write_json

DATASETS = ("subj", "mr", "cr", "mpqa")
VARIANTS = {"rk": "CSARK", "rkf": "CSARKF", "ark": "CSAARK"}
# Table 1 of CSAODE (test accuracy, %).
PAPER = {"CSARKF": {"cr": 86.5, "mr": 82.1, "mpqa": 90.8, "subj": 95.2},
         "CSARK": {"cr": 87.0, "mr": 81.6, "mpqa": 90.5, "subj": 95.9},
         "CSAARK": {"cr": 86.2, "mr": 82.2, "mpqa": 90.5, "subj": 95.2}}
# train_csaode overrides per scale. cpu: d = 32, 50-d GloVe embeddings, sentences cut at 32 tokens,
# 2 epochs on a seeded draw of 2500 training sentences of the nine training folds (minutes per set on
# a CPU); full: the paper-size configuration (d = 300, 30 epochs, all sentences).
SIZES = {
    "smoke": dict(d=16, embed_dim=50, max_len=16, epochs=1, train_subset=200),
    "cpu": dict(d=32, embed_dim=50, max_len=32, epochs=2, train_subset=2500),
    "full": dict(full=True, embed_dim=50),
}
SCALES = tuple(SIZES)
DEFAULT_DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "sentence-classification"


def run(dataset: str, scale: str = "cpu", folds=range(10), out: str | Path = "results", data_dir=DEFAULT_DATA,
        variants=tuple(VARIANTS), glove: bool = True, command: str | None = None, quiet: bool = False) -> dict:
    """All ``variants`` x ``folds`` on ``dataset``; writes ``results.json`` (mean +- std over folds vs the paper)."""
    from ..tasks.text import train_csaode

    if dataset not in DATASETS:
        raise ValueError(f"dataset must be one of {DATASETS}, got {dataset!r}")
    if scale not in SIZES:
        raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
    out = Path(out)
    (out / "shards").mkdir(parents=True, exist_ok=True)
    records = []
    for variant in variants:
        for fold in folds:
            shard = out / "shards" / f"{variant}_fold{fold}.json"
            if shard.exists():
                records.append(json.loads(shard.read_text()))
                continue
            result = train_csaode(dataset, data_dir, solver=variant, seed=0, fold=fold, glove=glove, quiet=True,
                                  **SIZES[scale])
            record = {k: result[k] for k in ("dataset", "solver", "fold", "test_accuracy", "n_parameters")}
            record["epoch_seconds"] = float(np.mean([h["epoch_seconds"] for h in result["history"]]))
            record["config"] = result["config"]
            write_json(shard, record)
            records.append(record)
            if not quiet:
                print(f"{dataset} {VARIANTS[variant]} fold {fold}: {100 * record['test_accuracy']:.1f}%", flush=True)
    summary = {}
    for variant in variants:
        acc = [100 * r["test_accuracy"] for r in records if r["solver"] == variant]
        name = VARIANTS[variant]
        summary[name] = {"mean": float(np.mean(acc)), "std": float(np.std(acc)), "n_folds": len(acc),
                         "paper": PAPER[name][dataset],
                         "n_parameters": next(r["n_parameters"] for r in records if r["solver"] == variant)}
    write_json(out / "results.json", {"dataset": dataset, "scale": scale, "summary": summary, "glove": glove,
                                      "runs": records},
               config={"scale": scale, **SIZES[scale], "folds": list(folds), "fold_seed": 0}, command=command)
    return summary


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("dataset", choices=DATASETS)
    p.add_argument("--scale", choices=SCALES, default="cpu")
    p.add_argument("--folds", type=int, nargs="+", default=list(range(10)))
    p.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    command = "python -m dynkit.experiments.csaode_cv " + " ".join(map(shlex.quote, argv or sys.argv[1:]))
    import torch

    torch.set_num_threads(1)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "COMMAND").write_text(command + "\n")
    return run(args.dataset, args.scale, args.folds, args.out, args.data_dir, command=command)


if __name__ == "__main__":
    main()
