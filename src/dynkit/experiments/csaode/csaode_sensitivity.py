"""Tables 3 and 2 of the CSAODE paper at CPU size: CSAARK's TREC accuracy and size against d,
window, r.

``python -m dynkit.experiments.csaode.csaode_sensitivity --out analysis/results/csaode_sensitivity``
trains CSAARK on TREC for each configuration below (one seed, ``--epochs`` epochs each) and writes
``results.json`` and ``sensitivity.png``. The CPU grid scales the paper's d in {50, 200, 300} to
{16, 32, 64} (with 64-d embeddings); windows {1, 2, 3} and steps {0.1, 0.2, 0.5} are the paper's;
then Table 2's ablations (one block or five residual blocks instead of the ODE, no convolution).
``--full`` uses the paper's d and 300-d embeddings. The default (3 epochs, 10 runs) takes about 10
minutes on a loaded 2-core machine; ``--epochs 8 --resume`` continues the same runs (exact resume)
to 8 epochs.
"""

from __future__ import annotations

from pathlib import Path

import torch

from dynkit.io import save_figure, write_json
from dynkit.tasks.text import train_csaode

from ..scripting import command_line, register_script
from .options import trec_parser, trec_settings

# (label, overrides, paper test accuracy %, paper |θ|) -- Table 3, rows in the paper's order
PAPER_TABLE3 = [
    ("d small", {"d": 50}, 91.6, 0.043e6),
    ("d medium", {"d": 200}, 94.3, 0.32e6),
    ("window 1", {"window": 1}, 94.1, 0.54e6),
    ("window 3", {"window": 3}, 94.5, 0.72e6),
    ("r 0.5", {"step": 0.5}, 94.6, 0.63e6),
    ("r 0.1", {"step": 0.1}, 95.0, 0.63e6),
    ("base", {}, 95.2, 0.63e6),
    # Table 2's ablations
    ("1 block", {"architecture": "blocks", "n_blocks": 1}, 93.7, 0.63e6),
    ("5 blocks", {"architecture": "blocks", "n_blocks": 5}, 94.2, 1.62e6),
    ("w/o conv", {"convolution": False}, 92.8, 0.45e6),
]
CPU_D = {50: 16, 200: 32}


def build_parser():
    return trec_parser(__doc__, "csaode_sensitivity", epochs=3)


def options(argv: list[str] | None = None) -> dict:
    """The settings ``main(argv)`` runs with (the recipe reads them:
    :mod:`~dynkit.experiments.csaode.recipe`): the base configuration every row starts from
    (:data:`dynkit.tasks.text.CPU_CONFIG`, ``FULL_CONFIG`` with ``--full``), the epochs, and the
    hidden sizes standing for Table 3's d = 50 and 200."""
    args = build_parser().parse_args(argv)
    return {
        **trec_settings(args),
        "d_grid": (50, 200) if args.full else (CPU_D[50], CPU_D[200]),
    }


def main(argv=None) -> dict:
    args = build_parser().parse_args(argv)
    torch.set_num_threads(1)
    settings = options(argv)
    rows = run(args.seed, args.quiet, args.data_dir, args.checkpoints, args.resume, **settings)
    data = {
        "rows": rows,
        "note": "CPU size: one seed, few epochs; differences of ~1% are within seed noise",
    }
    write_json(
        args.out / "results.json",
        data,
        config={"seed": args.seed, "epochs": args.epochs, "full": args.full},
        command=command_line(),
    )
    _figure(rows, args.out / "sensitivity.png")
    return data


def run(
    seed: int,
    quiet: bool,
    data_dir: Path,
    checkpoints: Path,
    resume: bool,
    *,
    solver: str,
    epochs: int,
    full: bool,
    d_grid: tuple[int, int],
    d: int,
    embed_dim: int,
    window: int,
    step: float,
    batch_size: int,
    lr: float,
    weight_decay: float,
    max_len: int,
    train_subset: int | None,
    schedule: str,
    warmup_epochs: float,
    lr_decay: float,
    weight_norm: bool,
) -> list[dict]:
    """One row per configuration of :data:`PAPER_TABLE3`: the base configuration (the keywords
    after ``d_grid``) with the row's change, Table 3's d = 50 and 200 as ``d_grid``; each trained
    on TREC by ``solver`` for ``epochs`` epochs (checkpoints under ``checkpoints``)."""
    base = dict(
        d=d,
        embed_dim=embed_dim,
        window=window,
        step=step,
        batch_size=batch_size,
        lr=lr,
        weight_decay=weight_decay,
        max_len=max_len,
        train_subset=train_subset,
        schedule=schedule,
        warmup_epochs=warmup_epochs,
        lr_decay=lr_decay,
        weight_norm=weight_norm,
    )
    rows = []
    for label, overrides, paper_acc, paper_params in PAPER_TABLE3:
        ours = dict(overrides)
        if "d" in ours:
            ours["d"] = dict(zip((50, 200), d_grid))[ours["d"]]
        trained = train_csaode(
            "trec",
            data_dir,
            solver=solver,
            epochs=epochs,
            seed=seed,
            out=checkpoints / label.replace(" ", "_").replace("/", ""),
            resume=resume,
            quiet=quiet,
            full=full,
            **{**base, **ours},
        )
        rows.append(
            {
                "label": label,
                "overrides": ours,
                "test_accuracy": trained["test_accuracy"],
                "best_test_accuracy": trained["best_test_accuracy"],
                "n_parameters": trained["n_parameters"],
                "forward_nfe": trained["history"][-1]["nfe_forward"],
                "mean_epoch_seconds": sum(e["epoch_seconds"] for e in trained["history"])
                / len(trained["history"]),
                "paper_test_accuracy": paper_acc / 100,
                "paper_n_parameters": paper_params,
            }
        )
        if not quiet:
            print(
                f"{label:9s} {ours}: acc {100 * trained['test_accuracy']:.1f}% |θ| "
                f"{trained['n_parameters']} "
                f"(paper {paper_acc}%, {paper_params / 1e6:.3g}M)"
            )
    return rows


def _figure(rows, path) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 3.8))
    x = range(len(rows))
    ax.bar(
        [k - 0.2 for k in x],
        [100 * r["test_accuracy"] for r in rows],
        width=0.4,
        label="ours (CPU size)",
    )
    ax.bar(
        [k + 0.2 for k in x],
        [100 * r["paper_test_accuracy"] for r in rows],
        width=0.4,
        label="paper (Tables 3 and 2, full size)",
    )
    ax.set_xticks(
        list(x), [f"{r['label']}\n{r['n_parameters'] / 1e3:.0f}k" for r in rows], fontsize=8
    )
    ax.set_ylim(50, 105)
    ax.set_ylabel("TREC test accuracy (%)")
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)


def _metrics(data: dict) -> dict:
    return {
        f"{r['label'].replace(' ', '_')}.test_accuracy": r["test_accuracy"] for r in data["rows"]
    }


register_script(
    "csaode_sensitivity",
    main,
    metrics=_metrics,
    checkpoints=True,
    smoke=("--epochs", "1"),
    cpu=("--epochs", "10"),
    full=("--full", "--epochs", "8", "--weight-norm"),
    options=options,
)


if __name__ == "__main__":
    main()
