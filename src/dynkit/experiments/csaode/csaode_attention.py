"""Continuity analysis (Fig. 4 of the CSAODE paper): a self-attention score over ODE time t in [0,
1].

``python -m dynkit.experiments.csaode.csaode_attention --out analysis/results/csaode_attention``
trains CSAARK with window 1 (so attention rows are words) and ``r = 0.2`` on TREC at CPU size, then
follows the self-attention matrix ``A(t)`` of Eq. (5), evaluated on the ODE state ``G(t) + P``, for
the TREC test question "What state did the Battle of Bighorn take place in ?" on a fine grid of t
(grid points and the solver's interpolation between them). Writes ``results.json`` (``A(t)`` for the
pair state -> bighorn and the whole matrix at t = 1) and ``attention.png`` (heat map at t = 1, the
pair's score over t, and its rate of change). "bighorn" never occurs in TREC's training questions,
so with a vocabulary built from the training split it is the unknown token (recorded in the JSON).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from dynkit.io import save_figure, write_json
from dynkit.tasks.text import pad_batch, train_csaode

from ..scripting import command_line, register_script
from .options import trec_parser, trec_settings

SENTENCE = "what state did the battle of bighorn take place in ?".split()
PAIR = ("state", "bighorn")


def build_parser():
    return trec_parser(__doc__, "csaode_attention", epochs=4)


def options(argv: list[str] | None = None) -> dict:
    """The settings ``main(argv)`` runs with (the recipe reads them:
    :mod:`~dynkit.experiments.csaode.recipe`): the base configuration
    (:data:`dynkit.tasks.text.CPU_CONFIG`, ``FULL_CONFIG`` with ``--full``) with Fig. 4's window
    1 and step 0.2, CSAARK, the epochs and the times the attention is read at."""
    args = build_parser().parse_args(argv)
    return {
        **trec_settings(args),
        "window": 1,
        "step": 0.2,
        "n_times": 51,
    }


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
    n_times: int,
    weight_norm: bool,
) -> tuple[dict, tuple]:
    """CSAODE trained on TREC with these settings (:func:`~dynkit.tasks.text.train_csaode`), then
    ``A(t)`` of :data:`SENTENCE` at ``n_times`` times on ``[0, 1]``: ``(data, figure)``, what
    ``results.json`` records and the arguments of the figure after its path."""
    trained = train_csaode(
        "trec",
        data_dir,
        solver=solver,
        epochs=epochs,
        out=checkpoints,
        seed=seed,
        resume=resume,
        quiet=quiet,
        full=full,
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
        return_model=True,
    )
    model, vocab = trained.pop("model"), trained.pop("vocab")
    tokens = pad_batch([vocab.encode(SENTENCE)])
    times = np.round(np.linspace(0.0, 1.0, n_times), 10).tolist()
    ts, scores = model.attention_over_time(tokens, times)
    scores = scores[:, 0].numpy()  # (times, M, M): row = query word, column = key word
    ts = np.asarray(ts, dtype=float)
    i, j = SENTENCE.index(PAIR[0]), SENTENCE.index(PAIR[1])
    pair = scores[:, i, j]
    change = np.abs(scores[-1] - scores[0])
    mi, mj = np.unravel_index(int(np.argmax(change)), change.shape)
    grid = [k for k, t in enumerate(ts) if abs(t / step - round(t / step)) < 1e-5]  # ts are float32
    data = {
        "sentence": SENTENCE,
        "pair": PAIR,
        "in_vocabulary": {w: w in vocab.index for w in SENTENCE},
        "t": ts.tolist(),
        "score_pair": pair.tolist(),
        "score_pair_reverse": scores[:, j, i].tolist(),
        "score_pair_on_step_grid": pair[grid].tolist(),
        "attention_t1": scores[-1].tolist(),
        "attention_t0": scores[0].tolist(),
        "most_changing_pair": [SENTENCE[mi], SENTENCE[mj]],
        "score_most_changing_pair": scores[:, mi, mj].tolist(),
        "max_score_t1_per_row": scores[-1].max(-1).tolist(),
        "test_accuracy": trained["test_accuracy"],
        "training": trained,
        "paper": "Fig. 4: state -> Bighorn rises from 0.0023 to 0.57 (d=300, GloVe, trained to "
        "convergence)",
    }
    if not quiet:
        print(
            f"A[{PAIR[0]}, {PAIR[1]}](t) on the step grid: "
            + ", ".join(f"{x:.4f}" for x in pair[grid])
        )
        print(
            f"largest change: A[{SENTENCE[mi]}, {SENTENCE[mj]}](t) on the step grid: "
            + ", ".join(f"{x:.4f}" for x in scores[grid, mi, mj])
        )
    return data, (ts, scores, pair, i, j, (mi, mj))


def main(argv=None) -> dict:
    args = build_parser().parse_args(argv)
    torch.set_num_threads(1)
    settings = options(argv)
    data, figure = run(
        args.seed, args.quiet, args.data_dir, args.checkpoints, args.resume, **settings
    )
    write_json(
        args.out / "results.json",
        data,
        config={
            "seed": args.seed,
            "epochs": args.epochs,
            "window": settings["window"],
            "step": settings["step"],
            "solver": settings["solver"],
            "full": args.full,
        },
        command=command_line(),
    )
    _figure(*figure, args.out / "attention.png")
    return data


def _figure(ts, scores, pair, i, j, most, path) -> None:
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    im = axes[0].imshow(scores[-1], cmap="viridis")
    axes[0].set_xticks(range(len(SENTENCE)), SENTENCE, rotation=90)
    axes[0].set_yticks(range(len(SENTENCE)), SENTENCE)
    axes[0].set_title("A at t = 1")
    fig.colorbar(im, ax=axes[0], fraction=0.046)
    axes[1].plot(ts, pair, "-", label=f"A[{PAIR[0]}, {PAIR[1]}]")
    axes[1].plot(ts, scores[:, j, i], "--", label=f"A[{PAIR[1]}, {PAIR[0]}]")
    axes[1].plot(
        ts,
        scores[:, most[0], most[1]],
        ":",
        label=f"A[{SENTENCE[most[0]]}, {SENTENCE[most[1]]}] (largest change)",
    )
    axes[1].set_xlabel("ODE time t")
    axes[1].set_ylabel("attention score")
    axes[1].legend()
    curve = scores[:, most[0], most[1]]
    rate = np.gradient(curve, ts)
    axes[2].quiver(ts[::2], curve[::2], np.ones_like(ts[::2]), rate[::2], angles="xy", width=0.004)
    axes[2].plot(ts, curve, lw=0.8)
    axes[2].set_xlabel("ODE time t")
    axes[2].set_title(f"A[{SENTENCE[most[0]]}, {SENTENCE[most[1]]}] and its direction of change")
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)


def _metrics(data: dict) -> dict:
    pair = data["score_pair"]
    return {
        "pair_score_t0": pair[0],
        "pair_score_t1": pair[-1],
        "pair_score_rise": pair[-1] - pair[0],
        "test_accuracy": data["test_accuracy"],
    }


register_script(
    "csaode_attention",
    main,
    metrics=_metrics,
    checkpoints=True,
    smoke=("--epochs", "1"),
    # cpu: the paper's schedule and weight normalization (until 2026-11-28 a constant rate, none)
    cpu=("--epochs", "10", "--schedule", "paper", "--weight-norm"),
    full=("--full", "--schedule", "paper", "--weight-norm"),
    options=options,
)


if __name__ == "__main__":
    main()
