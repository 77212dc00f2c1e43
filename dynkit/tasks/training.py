"""A small, resumable training loop shared by the experiments.

Every epoch ends with an atomic checkpoint (model, optimiser, history and all random states), so a
run interrupted at any point resumes from its last completed epoch and finishes with exactly the
metrics of an uninterrupted run with the same seed. Each epoch's data order comes from a generator
seeded by ``(seed, epoch)``, not from the global random state, so resuming does not perturb it. An
optional learning-rate scheduler is stepped after every optimiser step and checkpointed with it.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np
import torch

from ..io import atomic_write

CHECKPOINT_NAME = "checkpoint.pt"


class TrainingError(RuntimeError):
    """Training stopped (e.g. a solver failure); the last good checkpoint is kept on disk."""

    def __init__(self, message: str, *, epoch: int, batch: int, checkpoint: Path | None):
        super().__init__(message)
        self.epoch, self.batch, self.checkpoint = epoch, batch, checkpoint


@dataclass
class History:
    """Per-epoch records: each a dict of metrics (``epoch`` and ``train_loss`` at least)."""

    epochs: list = field(default_factory=list)

    def column(self, key: str) -> list:
        return [e.get(key) for e in self.epochs]


def epoch_generator(seed: int, epoch: int) -> torch.Generator:
    """The generator that orders (shuffles) the data of ``epoch``: same seed, same order."""
    return torch.Generator().manual_seed(int(seed) * 1_000_003 + int(epoch))


def _random_states() -> dict:
    return {"torch": torch.get_rng_state(), "numpy": np.random.get_state(), "python": random.getstate()}


def _set_random_states(states: dict) -> None:
    torch.set_rng_state(states["torch"])
    np.random.set_state(states["numpy"])
    random.setstate(states["python"])


def save_checkpoint(path: Path, model: torch.nn.Module, optimizer, epoch: int, history: History,
                    extra: dict | None = None, scheduler=None) -> Path:
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch,
             "history": history.epochs, "random": _random_states(), "extra": extra or {},
             "scheduler": scheduler.state_dict() if scheduler is not None else None}
    return atomic_write(path, lambda fh: torch.save(state, fh), mode="wb")


def fit(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    batches: Callable[[torch.Generator], Iterable[Any]],
    step: Callable[[torch.nn.Module, Any], tuple[torch.Tensor, dict]],
    epochs: int,
    *,
    seed: int = 0,
    evaluate: Callable[[torch.nn.Module], dict] | None = None,
    checkpoint_dir: str | Path | None = None,
    resume: bool = False,
    progress: bool = True,
    description: str = "train",
    scheduler: torch.optim.lr_scheduler.LRScheduler | None = None,
    backward: bool = True,
) -> History:
    """Train ``model`` for ``epochs`` epochs, checkpointing after each.

    Parameters
    ----------
    batches : callable
        ``batches(generator)`` yields the epoch's batches, drawing any randomness (shuffling) from
        ``generator`` (see :func:`epoch_generator`).
    step : callable
        ``step(model, batch) -> (loss, metrics)``: the loss to minimise and a dict of floats to
        average over the epoch (e.g. forward/backward NFE). With ``backward=False`` the step has
        already called ``loss.backward()`` itself (to measure the backward pass, say); the loss
        returned is then only checked for finiteness and logged.
    evaluate : callable, optional
        ``evaluate(model) -> dict`` after each epoch (test accuracy, …), run under ``no_grad``.
    checkpoint_dir : path, optional
        Where ``checkpoint.pt`` is written after every epoch (atomically).
    resume : bool
        Continue from ``checkpoint_dir/checkpoint.pt`` if it exists.
    scheduler : torch.optim.lr_scheduler.LRScheduler, optional
        Stepped after every optimiser step (a per-batch schedule); its state is checkpointed and
        restored on resume, and each epoch's record gains ``lr``, the rate at the epoch's end.
    backward : bool
        Whether ``fit`` differentiates the loss (default) or ``step`` does (``False``).

    Returns
    -------
    History

    Raises
    ------
    ValueError
        ``epochs`` < 1, ``resume`` without ``checkpoint_dir``, a ``scheduler`` of another
        optimiser, or resuming with a ``scheduler`` from a checkpoint written without one.
    TrainingError
        A batch raised (a solver failure, a non-finite loss); names the epoch and batch, keeps the
        last good checkpoint.
    """
    if not isinstance(epochs, int) or epochs < 1:
        raise ValueError(f"epochs must be a positive integer, got {epochs!r}")
    if resume and checkpoint_dir is None:
        raise ValueError("resume=True needs checkpoint_dir (where the checkpoint was written)")
    if not isinstance(backward, bool):
        raise ValueError(f"backward must be a bool, got {backward!r}")
    if scheduler is not None and getattr(scheduler, "optimizer", None) is not optimizer:
        raise ValueError(f"scheduler must schedule the optimizer passed to fit, got {scheduler!r} "
                         f"for {getattr(scheduler, 'optimizer', None)!r}")
    ckpt = Path(checkpoint_dir) / CHECKPOINT_NAME if checkpoint_dir is not None else None
    history, start = History(), 0
    if resume and ckpt.exists():
        state = torch.load(ckpt, weights_only=False)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        if scheduler is not None:
            if state.get("scheduler") is None:  # restarting the schedule would silently break exact resume
                raise ValueError(f"scheduler given but checkpoint {ckpt} was written without one")
            scheduler.load_state_dict(state["scheduler"])
        history.epochs = list(state["history"])
        _set_random_states(state["random"])
        start = state["epoch"] + 1
    else:
        torch.manual_seed(seed)
        np.random.seed(seed)
        random.seed(seed)
    bar = None
    if progress:
        from tqdm.auto import tqdm

        # One bar over the whole run (total, rate, ETA, last loss); the per-epoch bar below counts batches.
        bar = tqdm(total=epochs, initial=start, desc=description, unit="epoch", dynamic_ncols=True)
        if start:
            bar.write(f"{description}: resumed from {ckpt} after epoch {start} of {epochs}")
    for epoch in range(start, epochs):
        model.train()
        sums: dict[str, float] = {}
        n_batches = 0
        iterator = batches(epoch_generator(seed, epoch))
        if progress:
            iterator = tqdm(iterator, desc=f"epoch {epoch + 1}/{epochs}", leave=False, dynamic_ncols=True)
        for n_batches, batch in enumerate(iterator, start=1):
            try:
                optimizer.zero_grad(set_to_none=True)
                loss, metrics = step(model, batch)
                if not torch.isfinite(loss):
                    raise FloatingPointError(f"non-finite loss {float(loss.detach())}")
                if backward:
                    loss.backward()
                optimizer.step()
                if scheduler is not None:
                    scheduler.step()
            except Exception as err:  # noqa: BLE001 - re-raised with the batch named
                where = f"epoch {epoch + 1}, batch {n_batches}"
                kept = f"; last good checkpoint: {ckpt}" if ckpt is not None and ckpt.exists() else ""
                raise TrainingError(f"training stopped at {where}: {type(err).__name__}: {err}{kept}",
                                    epoch=epoch, batch=n_batches, checkpoint=ckpt) from err
            sums["train_loss"] = sums.get("train_loss", 0.0) + float(loss.detach())
            if progress:
                iterator.set_postfix(loss=f"{float(loss.detach()):.4g}", refresh=False)
            for key, value in metrics.items():
                sums[key] = sums.get(key, 0.0) + float(value)
        record = {"epoch": epoch + 1, **{k: v / max(n_batches, 1) for k, v in sums.items()}}
        if scheduler is not None:
            record["lr"] = float(scheduler.get_last_lr()[0])
        if evaluate is not None:
            model.eval()
            with torch.no_grad():
                record.update(evaluate(model))
        history.epochs.append(record)
        if ckpt is not None:
            save_checkpoint(ckpt, model, optimizer, epoch, history, scheduler=scheduler)
        if bar is not None:
            bar.set_postfix({k: f"{v:.4g}" for k, v in record.items() if k in ("train_loss", "test_acc", "test_loss")},
                            refresh=False)
            bar.update()
    if bar is not None:
        bar.close()
    return history
