"""TREC accuracy, forward NFE and epoch time of CSARK and CSAARK (Table 1 and Fig. 5 of the CSAODE
paper).

One shard trains every solver of :attr:`TrecConfig.solvers` on one seed, one after the other in the
same process, so the time row (``csaode.ark_faster``) pairs the two solvers within a seed on the
same machine load. Each model is trained to the accuracy bar of the ledger's validity rule
(``dynkit.experiments.csaode.comparisons``: test accuracy at least 0.8 for every solver of every
seed), which covers every row of the experiment, the NFE and time rows too: the NFE of a model that
did not learn counts the solver's structure, not the claim's.

    dynkit run csaode_trec --scale cpu --seeds 0,1,2,3,4

The settings against the paper, with the reason of every difference, are the experiment's recipe
(:mod:`dynkit.experiments.csaode.recipe`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from ...tasks.text import CPU_CONFIG, FULL_CONFIG, VARIANTS, default_data_dir, train_csaode
from ..registry import register

PAPER_TABLE1_TREC = {"rk": 94.8, "rkf": 95.4, "ark": 95.2}  # Table 1, TREC column


@dataclass(frozen=True)
class TrecConfig:
    """One scale of the TREC experiment: the solvers trained per shard and every training setting
    (:func:`dynkit.tasks.text.train_csaode`; ``schedule="paper"`` is
    :func:`~dynkit.tasks.text.paper_schedule`)."""

    solvers: tuple[str, ...] = ("rk", "ark")
    epochs: int = 10
    d: int = 64
    embed_dim: int = 64
    window: int = 2
    step: float = 0.2
    batch_size: int = 64
    lr: float = 2e-3
    weight_decay: float = 1e-5
    max_len: int = 40
    schedule: str = "paper"
    warmup_epochs: float = 1.0
    lr_decay: float = 0.9
    dropout: float = 0.1
    weight_norm: bool = False  # the paper's weight normalization of every weight matrix
    glove: bool = False
    train_subset: int | None = None

    def training(self) -> dict:
        """The keyword arguments of :func:`~dynkit.tasks.text.train_csaode` (all but the solver
        and seed)."""
        kwargs = asdict(self)
        del kwargs["solvers"]
        return kwargs


def _from(base: dict, **changes) -> TrecConfig:
    """A config from one of :mod:`dynkit.tasks.text`'s training dicts, with ``changes``."""
    fields = TrecConfig.__dataclass_fields__
    return TrecConfig(**{**{k: v for k, v in base.items() if k in fields}, **changes})


def render_trec(results: dict, out: Path) -> None:
    """Test accuracy per epoch, mean over seeds, one line per solver; dotted: the paper's Table
    1."""
    from ...io import save_figure
    from ..plotting import pyplot

    plt = pyplot()
    cfg, stats = results["config"], results["metrics"]
    fig, ax = plt.subplots(figsize=(5, 3.5))
    epochs = list(range(1, cfg["epochs"] + 1))
    for solver in cfg["solvers"]:
        keys = [f"{VARIANTS[solver]}.epoch{e}.test_accuracy" for e in epochs]
        if not all(k in stats for k in keys):
            continue
        ax.plot(epochs, [100 * stats[k]["mean"] for k in keys], marker="o", label=VARIANTS[solver])
        ax.axhline(PAPER_TABLE1_TREC[solver], ls=":", lw=0.8, color=ax.lines[-1].get_color())
    ax.axhline(
        80, ls="--", lw=0.8, color="grey"
    )  # the validity bar (dynkit.experiments.csaode.comparisons)
    ax.set_xlabel("epoch")
    ax.set_ylabel("TREC test accuracy (%)")
    ax.set_title(f"CSAODE on TREC, d = {cfg['d']} ({len(results['seeds'])} seeds); dotted: paper")
    ax.legend()
    fig.tight_layout()
    save_figure(fig, Path(out) / "accuracy.png", dpi=120)
    plt.close(fig)


@register(
    "csaode_trec",
    smoke=_from(CPU_CONFIG, epochs=1, d=16, embed_dim=16, train_subset=256),
    # cpu: the paper's 10 epochs (Fig. 6(b): 48 batches x 10 epochs) and its warm-up + decay
    # schedule, at d = 64 with random 64-d embeddings (1 epoch: 47-69 % accuracy, every row
    # invalid), the paper's weight normalization (until 2026-11-28 the cpu scale trained without it)
    cpu=_from(CPU_CONFIG, epochs=10, schedule="paper", weight_norm=True),
    full=_from(
        FULL_CONFIG, solvers=("rk", "rkf", "ark"), epochs=10, schedule="paper", weight_norm=True
    ),
    render=render_trec,
)
def csaode_trec(config: TrecConfig, *, seed: int, out: Path, device: str) -> dict:
    """CSARK vs CSAARK on TREC: test accuracy (Table 1), forward NFE per batch and epoch time
    (Fig. 5)."""
    torch.set_num_threads(
        1
    )  # the epoch times are compared: one thread, as on the shared 2-core machine
    metrics, runs = {}, {}
    for solver in config.solvers:
        run = train_csaode(
            "trec",
            default_data_dir(),
            solver=solver,
            seed=seed,
            quiet=True,
            device=device,
            **config.training(),
        )
        history = run["history"]
        name = VARIANTS[solver]
        metrics.update(
            {
                f"{name}.test_accuracy": run["test_accuracy"],
                f"{name}.best_test_accuracy": run["best_test_accuracy"],
                f"{name}.mean_epoch_seconds": sum(e["epoch_seconds"] for e in history)
                / len(history),
                f"{name}.forward_nfe_per_batch": history[-1]["nfe_forward"],
                f"{name}.n_parameters": run["n_parameters"],
            }
        )
        metrics.update(
            {f"{name}.epoch{e['epoch']}.test_accuracy": e["test_accuracy"] for e in history}
        )
        runs[name] = {
            "history": history,
            "n_parameters": run["n_parameters"],
            "paper_test_accuracy": PAPER_TABLE1_TREC[solver] / 100,
        }
    return {"metrics": metrics, "runs": runs}
