"""A small, resumable training loop shared by the experiments.

Every epoch ends with an atomic checkpoint (model, optimiser, history and all random states), so a
run interrupted at any point resumes from its last completed epoch and finishes with exactly the
metrics of an uninterrupted run with the same seed. Each epoch's data order comes from a generator
seeded by ``(seed, epoch)``, not from the global random state, so resuming does not perturb it. An
optional learning-rate scheduler is stepped after every optimiser step and checkpointed with it.

Checkpoints hold tensors and plain data only (dicts, lists, numbers, strings): they are read with
``torch.load(weights_only=True)``, which refuses any other pickled object, so loading a checkpoint
can never run code (:func:`load_checkpoint` turns such a refusal into :class:`CheckpointError`).

A run folder also holds ``manifest.json``: every option that changes the numbers (the caller's
``manifest``, plus the seed, the model's class and size, the optimiser and its hyperparameters, the
scheduler) and the versions. A resume with different options is refused, naming them; so is a fresh
run into a folder that already holds a checkpoint, and a resume asking for fewer epochs than the run
has finished (``result.json`` would no longer match its history).
"""

from __future__ import annotations

import io
import json
import math
import random
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np
import torch

from ..io import (
    atomic_write,
    check_output_path,
    check_writable_dir,
    jsonable,
    read_regular_text,
    remove_orphan_temporaries,
    versions,
    write_json,
)

__all__ = [
    "CHECKPOINT_NAME",
    "MANIFEST_NAME",
    "CHECKPOINT_FORMAT",
    "MANIFEST_FORMAT",
    "TrainingError",
    "CheckpointError",
    "History",
    "epoch_generator",
    "plain",
    "save_checkpoint",
    "load_checkpoint",
    "run_manifest",
    "read_manifest",
    "check_resume",
    "fit",
]

CHECKPOINT_NAME = "checkpoint.pt"
MANIFEST_NAME = "manifest.json"
CHECKPOINT_FORMAT = "dynkit-checkpoint/2"
MANIFEST_FORMAT = "dynkit-run/1"


class TrainingError(RuntimeError):
    """Training stopped (e.g. a solver failure); the last good checkpoint is kept on disk."""

    def __init__(self, message: str, *, epoch: int, batch: int, checkpoint: Path | None):
        super().__init__(message)
        self.epoch, self.batch, self.checkpoint = epoch, batch, checkpoint


class CheckpointError(ValueError):
    """A checkpoint that cannot be loaded safely, or a run folder that does not match the
    request."""


@dataclass
class History:
    """Per-epoch records: each a dict of metrics (``epoch`` and ``train_loss`` at least);
    ``resumed_after``: how many of them a checkpoint restored (0: all trained in this call)."""

    epochs: list = field(default_factory=list)
    resumed_after: int = 0

    def __post_init__(self):
        if not isinstance(self.epochs, list) or not all(isinstance(e, dict) for e in self.epochs):
            raise TypeError(f"epochs must be a list of per-epoch dicts, got {self.epochs!r:.80}")

    def column(self, key: str) -> list:
        return [e.get(key) for e in self.epochs]


def epoch_generator(seed: int, epoch: int) -> torch.Generator:
    """The generator that orders (shuffles) the data of ``epoch``: same seed, same order."""
    for name, value in (("seed", seed), ("epoch", epoch)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
    return torch.Generator().manual_seed(int(seed) * 1_000_003 + int(epoch))


# ---------------------------------------------------------------------------------------------
# plain data: what a checkpoint may hold

_SCALARS = (str, int, float, bool, type(None))


def plain(value: Any, where: str = "value") -> Any:
    """``value`` as tensors and plain data only (dict with str/int keys, list, tuple, str, number,
    None).

    numpy scalars and arrays become Python numbers and tensors. Anything else raises ``TypeError``
    naming ``where`` (the key path): a checkpoint that could not be reloaded safely is never
    written.
    """
    if isinstance(value, np.generic):  # first: np.float64 is also a float, and pickles as numpy's
        return value.item()
    if isinstance(value, _SCALARS) or isinstance(value, torch.Tensor):
        return value
    if isinstance(value, np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(value))
    if isinstance(value, (torch.dtype, torch.Size)):
        return value
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if not isinstance(key, (str, int)) or isinstance(key, bool):
                raise TypeError(f"{where} must have str or int keys, got the key {key!r}")
            out[key] = plain(item, f"{where}[{key!r}]")
        return out
    if isinstance(value, (list, tuple)):
        items = [plain(item, f"{where}[{i}]") for i, item in enumerate(value)]
        return items if isinstance(value, list) else tuple(items)
    raise TypeError(
        f"{where} must hold only tensors and plain data (dict, list, str, number, None), "
        f"got a {type(value).__name__}: a checkpoint never stores other objects"
    )


def _random_states() -> dict:
    numpy_state = np.random.get_state()
    python_state = random.getstate()
    # CUDA generators only when CUDA is in use (reading them would initialise CUDA otherwise)
    cuda = (
        torch.cuda.get_rng_state_all()
        if torch.cuda.is_available() and torch.cuda.is_initialized()
        else []
    )
    return {
        "torch": torch.get_rng_state(),
        "cuda": list(cuda),
        "numpy": {
            "bit_generator": numpy_state[0],
            "key": torch.from_numpy(numpy_state[1].astype(np.int64)),
            "pos": int(numpy_state[2]),
            "has_gauss": int(numpy_state[3]),
            "cached_gaussian": float(numpy_state[4]),
        },
        "python": {
            "version": python_state[0],
            "internal": torch.tensor(python_state[1], dtype=torch.int64),
            "gauss_next": python_state[2],
        },
    }


def _set_random_states(states: dict) -> None:
    torch.set_rng_state(states["torch"])
    cuda = states.get("cuda") or []
    if cuda and torch.cuda.is_available() and len(cuda) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all(cuda)
    n = states["numpy"]
    np.random.set_state(
        (
            n["bit_generator"],
            n["key"].numpy().astype(np.uint32),
            n["pos"],
            n["has_gauss"],
            n["cached_gaussian"],
        )
    )
    p = states["python"]
    random.setstate((p["version"], tuple(int(x) for x in p["internal"].tolist()), p["gauss_next"]))


def save_checkpoint(
    path: str | Path,
    model: torch.nn.Module,
    optimizer,
    epoch: int,
    history: History,
    extra: dict | None = None,
    scheduler=None,
    manifest: dict | None = None,
) -> Path:
    """Write a checkpoint of tensors and plain data (see :func:`plain`) atomically to ``path``."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(
            f"optimizer must be a torch.optim.Optimizer, got {type(optimizer).__name__}"
        )
    if isinstance(epoch, bool) or not isinstance(epoch, (int, np.integer)) or epoch < 0:
        raise ValueError(f"epoch must be an integer >= 0, got {epoch!r}")
    if not isinstance(history, History):
        raise TypeError(f"history must be a History, got {type(history).__name__}")
    state = {
        "format": CHECKPOINT_FORMAT,
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "epoch": int(epoch),
        "history": history.epochs,
        "random": _random_states(),
        "extra": extra or {},
        "scheduler": scheduler.state_dict() if scheduler is not None else None,
        "manifest": manifest or {},
    }
    state = plain(state, "checkpoint")
    # Serialise in memory, then write the bytes ourselves: torch's writer turns a failed write (a
    # full disk) into "unexpected pos"; ours says "cannot write checkpoint PATH: No space left on
    # device".
    buffer = io.BytesIO()
    torch.save(state, buffer)
    return atomic_write(
        path, lambda fh: fh.write(buffer.getbuffer()), mode="wb", option="checkpoint"
    )


_REQUIRED = {
    "format": str,
    "model": dict,
    "optimizer": dict,
    "epoch": int,
    "history": list,
    "random": dict,
    "extra": dict,
    "manifest": dict,
}


def load_checkpoint(path: str | Path) -> dict:
    """Read a checkpoint written by :func:`save_checkpoint` without ever running pickled code.

    Raises
    ------
    CheckpointError
        (a ``ValueError``) when the file holds anything but tensors and plain data -- it is refused
        unread, since unpickling it could run code -- or is not a dynkit checkpoint of this format.
    """
    if (
        isinstance(path, bool)
        or not isinstance(path, (str, Path))
        and not hasattr(path, "__fspath__")
    ):
        raise TypeError(f"checkpoint path must be a str or os.PathLike, got {type(path).__name__}")
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint must be an existing file, got {str(path)!r}")
    try:
        state = torch.load(path, weights_only=True, map_location="cpu")
    except Exception as err:  # noqa: BLE001 - the restricted unpickler's refusal, or a damaged file
        text = re.sub(
            r"\x1b\[[0-9;]*m", "", str(err)
        ).strip()  # torch's message carries terminal colours
        first = text.splitlines()[0] if text else type(err).__name__
        raise CheckpointError(
            f"checkpoint {str(path)!r} refused: expected a file of tensors and plain data "
            f"that loads safely "
            f"(weights_only=True), got one that does not ({type(err).__name__}: "
            f"{first[:200]}); it may hold code "
            f"and was not loaded. Only checkpoints written by dynkit's save_checkpoint are "
            f"accepted."
        ) from None
    if not isinstance(state, dict) or state.get("format") != CHECKPOINT_FORMAT:
        found = state.get("format") if isinstance(state, dict) else type(state).__name__
        raise CheckpointError(
            f"checkpoint {str(path)!r} must be a {CHECKPOINT_FORMAT!r} file, got format "
            f"{found!r} (written by another program or an older dynkit; start a new run)"
        )
    for key, kind in _REQUIRED.items():
        if not isinstance(state.get(key), kind):
            raise CheckpointError(
                f"checkpoint {str(path)!r} is damaged: {key!r} must be a {kind.__name__}, "
                f"got {type(state.get(key)).__name__}"
            )
    return state


# ---------------------------------------------------------------------------------------------
# the run manifest


# param_group entries that are bookkeeping or implementation choices, not hyperparameters
_NOT_HYPERPARAMETERS = {"params", "initial_lr", "foreach", "fused", "differentiable", "capturable"}


def run_manifest(
    model: torch.nn.Module,
    optimizer,
    seed: int,
    scheduler=None,
    backward: bool = True,
    options: dict | None = None,
) -> dict:
    """The options of a run that change its numbers: the caller's ``options`` and what
    :func:`fit` sees."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(
            f"optimizer must be a torch.optim.Optimizer, got {type(optimizer).__name__}"
        )
    if options is not None and not isinstance(options, dict):
        raise TypeError(f"options must be a dict or None, got {type(options).__name__}")
    group = optimizer.param_groups[0] if optimizer.param_groups else {}
    hyper = {f"optimizer.{k}": v for k, v in group.items() if k not in _NOT_HYPERPARAMETERS}
    own = {
        "seed": int(seed),
        "model_class": type(model).__qualname__,
        "n_parameters": sum(p.numel() for p in model.parameters()),
        "optimizer": type(optimizer).__qualname__,
        **jsonable(hyper),
        "scheduler": None if scheduler is None else type(scheduler).__qualname__,
        "backward": bool(backward),
    }
    caller = jsonable(options or {})  # what JSON would give back, for comparison
    return {**caller, **{k: v for k, v in own.items() if k not in caller}}


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def _differences(recorded: dict, requested: dict) -> list[str]:
    keys = sorted(set(recorded) | set(requested), key=str)
    missing = object()
    return [
        f"{k} (run: {recorded.get(k, '(absent)')!r}, now: {requested.get(k, '(absent)')!r})"
        for k in keys
        if not _same(recorded.get(k, missing), requested.get(k, missing))
    ]


def read_manifest(folder: str | Path) -> dict | None:
    """The ``manifest.json`` of a run folder (plain JSON), or ``None`` if it has none."""
    if (
        isinstance(folder, bool)
        or not isinstance(folder, (str, Path))
        and not hasattr(folder, "__fspath__")
    ):
        raise TypeError(f"folder must be a str or os.PathLike, got {type(folder).__name__}")
    path = Path(folder) / MANIFEST_NAME
    if not path.exists() and not path.is_symlink():
        return None
    try:
        manifest = json.loads(read_regular_text(path, "manifest"))
    except (OSError, ValueError) as err:
        raise CheckpointError(
            f"{MANIFEST_NAME} of the run folder {str(folder)!r} must be JSON, got a file that "
            f"cannot be read: {err}"
        ) from None
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        raise CheckpointError(
            f"{str(path)!r} must be a {MANIFEST_FORMAT!r} manifest, got {manifest!r:.200}"
        )
    return manifest


def check_resume(folder: str | Path, options: dict, recorded: dict | None) -> None:
    """Refuse to continue the run in ``folder`` with ``options`` other than its ``recorded``
    ones."""
    if not isinstance(options, dict):
        raise TypeError(f"options must be a dict, got {type(options).__name__}")
    if recorded is None:
        return
    diffs = _differences(recorded, options)
    if diffs:
        raise CheckpointError(
            f"resume refused: the options must be those of the run in {str(folder)!r} (else two "
            f"runs would mix), got different: {'; '.join(diffs)}. Resume with the run's options "
            f"or start a new run in another folder."
        )


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
    manifest: dict | None = None,
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
    manifest : dict, optional
        The caller's options that change the numbers (model and task names, solver, data, ...), JSON
        values. With ``checkpoint_dir`` they go, with :func:`run_manifest`'s own, into
        ``manifest.json`` and every checkpoint; a resume with any of them different is refused.
        ``epochs`` does not belong here: a finished run may be extended.

    Returns
    -------
    History

    Raises
    ------
    ValueError
        ``epochs`` < 1, ``resume`` without ``checkpoint_dir``, a ``scheduler`` of another
        optimiser, or resuming with a ``scheduler`` from a checkpoint written without one; an
        unwritable ``checkpoint_dir`` (before any training).
    CheckpointError
        (a ``ValueError``) resuming with options other than the run's (naming them) or with fewer
        ``epochs`` than it has finished; a fresh run (``resume=False``) into a folder holding a
        checkpoint; a checkpoint that cannot be loaded safely.
    TrainingError
        A batch raised (a solver failure, a non-finite loss); names the epoch and batch, keeps the
        last good checkpoint.
    """
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(
            f"optimizer must be a torch.optim.Optimizer, got {type(optimizer).__name__}"
        )
    for name, fn in (("batches", batches), ("step", step)):
        if not callable(fn):
            raise TypeError(f"{name} must be callable, got {type(fn).__name__}")
    if evaluate is not None and not callable(evaluate):
        raise TypeError(f"evaluate must be callable or None, got {type(evaluate).__name__}")
    if not isinstance(epochs, int) or isinstance(epochs, bool) or epochs < 1:
        raise ValueError(f"epochs must be a positive integer, got {epochs!r}")
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
    if resume and checkpoint_dir is None:
        raise ValueError(
            "resume=True needs checkpoint_dir (where the checkpoint was written), got None"
        )
    if not isinstance(backward, bool):
        raise ValueError(f"backward must be a bool, got {backward!r}")
    if not isinstance(progress, bool):
        raise TypeError(f"progress must be a bool, got {progress!r}")
    if scheduler is not None and getattr(scheduler, "optimizer", None) is not optimizer:
        raise ValueError(
            f"scheduler must schedule the optimizer passed to fit, got {scheduler!r} "
            f"for {getattr(scheduler, 'optimizer', None)!r}"
        )
    if manifest is not None and not isinstance(manifest, dict):
        raise TypeError(
            f"manifest must be a dict of options or None, got {type(manifest).__name__}"
        )
    history, start = History(), 0
    ckpt = options = None
    if checkpoint_dir is not None:
        folder = check_writable_dir(checkpoint_dir, "checkpoint_dir")
        remove_orphan_temporaries(folder)  # left by a write that a crash interrupted
        ckpt = folder / CHECKPOINT_NAME
        for name in (CHECKPOINT_NAME, MANIFEST_NAME):  # regular files only, before the first epoch
            check_output_path(folder / name, "checkpoint_dir")
        options = run_manifest(model, optimizer, seed, scheduler, backward, manifest)
        recorded = read_manifest(folder)
        if not resume and ckpt.exists():
            raise CheckpointError(
                f"checkpoint_dir {str(folder)!r} already holds a run; pass resume=True to "
                f"continue it, or choose another folder (nothing was overwritten)"
            )
        check_resume(folder, options, None if recorded is None else recorded["options"])
        if resume and ckpt.exists():
            state = load_checkpoint(ckpt)
            check_resume(
                folder, options, state["manifest"]
            )  # the checkpoint's own record is the authority
            done = state["epoch"] + 1
            if epochs < done:
                raise CheckpointError(
                    f"epochs must be >= {done}, the epochs the run in {str(folder)!r} has "
                    f"finished, got {epochs} (a shorter run would not match its history; "
                    f"train into another folder instead)"
                )
            if recorded is not None and recorded.get("versions") != versions():
                warnings.warn(
                    f"resuming {str(folder)!r} with other versions than it was started with "
                    f"({recorded.get('versions')} vs {versions()}): the result may differ in "
                    f"the last "
                    f"bits from an uninterrupted run",
                    RuntimeWarning,
                    stacklevel=2,
                )
            model.load_state_dict(state["model"])
            optimizer.load_state_dict(state["optimizer"])
            if scheduler is not None:
                if (
                    state.get("scheduler") is None
                ):  # restarting the schedule would silently break exact resume
                    raise ValueError(
                        f"scheduler given but checkpoint {ckpt} was written without one"
                    )
                scheduler.load_state_dict(state["scheduler"])
            history.epochs = list(state["history"])
            history.resumed_after = done
            _set_random_states(state["random"])
            start = done
        if recorded is None:
            record = {"format": MANIFEST_FORMAT, "options": options, "versions": versions()}
            write_json(folder / MANIFEST_NAME, record, option="checkpoint_dir")
    if start == 0:
        torch.manual_seed(seed)
        np.random.seed(seed)
        random.seed(seed)
    bar = None
    if progress:
        from tqdm.auto import tqdm

        # One bar over the whole run (total, rate, ETA, last loss); the per-epoch bar below counts
        # batches.
        bar = tqdm(total=epochs, initial=start, desc=description, unit="epoch", dynamic_ncols=True)
        if start:
            bar.write(f"{description}: resumed from {ckpt} after epoch {start} of {epochs}")
    # The per-epoch bar's total: len() of the epoch's batches, else batches.batches_per_epoch, else
    # the count of the previous epoch (epochs of one run have the same number of batches).
    per_epoch = getattr(batches, "batches_per_epoch", None)
    for epoch in range(start, epochs):
        model.train()
        sums: dict[str, float] = {}
        n_batches = 0
        iterator = batches(epoch_generator(seed, epoch))
        if progress:
            total = len(iterator) if hasattr(iterator, "__len__") else per_epoch
            iterator = tqdm(
                iterator,
                total=total,
                desc=f"epoch {epoch + 1}/{epochs}",
                unit="batch",
                leave=False,
                dynamic_ncols=True,
            )
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
                kept = (
                    f"; last good checkpoint: {ckpt}" if ckpt is not None and ckpt.exists() else ""
                )
                raise TrainingError(
                    f"training stopped at {where}: {type(err).__name__}: {err}{kept}",
                    epoch=epoch,
                    batch=n_batches,
                    checkpoint=ckpt,
                ) from err
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
            save_checkpoint(
                ckpt, model, optimizer, epoch, history, scheduler=scheduler, manifest=options
            )
        per_epoch = n_batches
        if bar is not None:
            bar.set_postfix(
                {
                    k: f"{v:.4g}"
                    for k, v in record.items()
                    if k in ("train_loss", "test_acc", "test_loss")
                },
                refresh=False,
            )
            if epoch + 1 < epochs:
                bar.update()
            else:  # counted without drawing: close() draws the final bar, once
                bar.n = epochs
    if bar is not None:
        bar.close()
    return history
