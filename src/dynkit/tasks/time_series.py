"""Training the ODE-RNN hybrids on the time-series tasks, and loading those tasks by name.

The windows and the protocol that cuts them are :mod:`dynkit.tasks.windows`; the data sets are
:mod:`~dynkit.tasks.walker2d`, :mod:`~dynkit.tasks.plane_vibration` and
:mod:`~dynkit.tasks.silverbox` (each imports only the windows: no import goes back up to this
module).
"""

from __future__ import annotations

import copy
import dataclasses
import time
from pathlib import Path

import numpy as np
import torch

from .. import _checks as check
from .plane_vibration import plane_vibration, plane_vibration_measured
from .silverbox import silverbox_measured, silverbox_windows
from .walker2d import walker2d  # gymnasium and MuJoCo load only when a Walker2D task is built
from .windows import SOURCES, TimeSeriesTask, Windows

LOADERS = {
    ("plane_vibration", "measured"): plane_vibration_measured,
    ("plane_vibration", "simulated"): plane_vibration,
    ("silverbox", "measured"): silverbox_measured,
    ("silverbox", "simulated"): silverbox_windows,
    ("walker2d", "simulated"): walker2d,
}  # the recorded walker set is not available offline
"""The function building each task from each source."""


# ---------------------------------------------------------------------------------------------
# training


LOSS_WEIGHTS = (1.0, 0.0, 1.0)
"""dynkit's earlier loss weights (one-step, reconstruction, forecast); the authors' are (0.1, 0.1, 1.0)
(``plane_vibration/trainpv.py``: ``0.1 * (one-step + reconstruction) + forecast``)."""  # noqa: E501


def _ahead(batch: Windows) -> torch.Tensor:
    """The interval from each read observation to its target: the windows' ``ahead`` where they
    carry one, else the gap to the next read observation, then the last target's."""
    if batch.ahead is not None:
        return batch.ahead
    return torch.cat([batch.gaps[:, 1:], batch.future_gaps[:, :1]], dim=1)


def _predict(model, batch: Windows, keep_states: bool = False):
    """``(one-step predictions, reconstructions or None, forecast, states)`` of ``model`` on
    ``batch``, in the model's order (:data:`~dynkit.models.ode_rnn.PREDICTIONS`)."""
    if (
        model.prediction == "after_gap"
    ):  # the state sits at the last target's time: forecast[0] is read there
        pred, recon, states, z = model.read_window(batch.x, _ahead(batch), keep_states=keep_states)
        later = batch.future_gaps[:, 1:]
        forecast = model.read(z)[:, None]
        if later.shape[1]:
            forecast = torch.cat([forecast, model.forecast(z, later)], dim=1)
        return pred, recon, forecast, states
    pred, states, z = model(batch.x, batch.gaps, keep_states=keep_states)
    return pred, None, model.forecast(z, batch.future_gaps), states


def _read_back(task: TimeSeriesTask) -> tuple[int, ...]:
    """The input column of each output channel of ``task``: what the reconstruction term compares
    the read-back with (an error naming the channel when an output is not observed)."""
    missing = [c for c in task.outputs if c not in task.inputs]
    if missing:
        raise ValueError(
            f"loss_weights must give the reconstruction weight 0 for task {task.name!r}: its "
            f"outputs "
            f"{missing} are not among its inputs {task.inputs}, so there is nothing to read back"
        )
    return tuple(task.inputs.index(c) for c in task.outputs)


def _losses(model, batch: Windows, weights=LOSS_WEIGHTS, read_back: tuple[int, ...] | None = None):
    """``(one-step MSE, forecast MSE, weighted loss)``; the reconstruction MSE (the read-back of
    each observation against its input columns ``read_back``, the authors' ``init`` term) enters
    the loss with ``weights[1]``."""
    pred, recon, forecast, _ = _predict(model, batch)
    one_step = (pred - batch.targets).pow(2).mean()
    future = (forecast - batch.future).pow(2).mean()
    loss = weights[0] * one_step + weights[2] * future
    if weights[1]:
        if recon is None:
            raise ValueError(
                f"loss_weights must give the reconstruction weight 0 for a model that predicts "
                f"{model.prediction!r} (it reads no observation back), got {weights[1]!r}"
            )
        observed = batch.x[..., list(range(recon.shape[-1]) if read_back is None else read_back)]
        loss = loss + weights[1] * (recon - observed).pow(2).mean()
    return one_step, future, loss


def _test_mse(
    model, data: Windows, weights=LOSS_WEIGHTS, read_back=None, batch_size: int = 256
) -> dict:
    """One-step-ahead and forecast MSE over ``data`` (sample-weighted means over batches)."""
    sums = np.zeros(2)
    for i in range(0, len(data), batch_size):
        batch = data.subset(slice(i, i + batch_size))
        one, fut, _ = _losses(model, batch, weights, read_back)
        sums += len(batch) * np.array([float(one), float(fut)])
    return {"one_step_mse": sums[0] / len(data), "forecast_mse": sums[1] / len(data)}


def _check_steps(steps) -> None:
    """``steps`` must be ``((epoch >= 1, rate > 0), ...)``."""
    if not isinstance(steps, (tuple, list)) or any(
        not isinstance(p, (tuple, list)) or len(p) != 2 for p in steps
    ):
        raise ValueError(f"lr_steps must be a tuple of (epoch, rate) pairs, got {steps!r:.80}")
    for e, rate in steps:
        check.integer(e, "lr_steps epoch", 1)
        check.real(rate, "lr_steps rate", low=0.0, low_open=True)


class StepRestarts:
    """The authors' step schedule (``lr_dict`` in their ``trainpv.py``): at the start of epoch
    ``e`` of ``steps`` (``((e, lr), ...)``) the rate becomes ``lr`` and Adam restarts (its
    moments and step count cleared, as their fresh ``torch.optim.Adam``). Stepped once per batch;
    ``batches_per_epoch`` converts."""

    def __init__(self, optimizer: torch.optim.Optimizer, steps, batches_per_epoch: int):
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise TypeError(
                f"optimizer must be a torch.optim.Optimizer, got {type(optimizer).__name__}"
            )
        _check_steps(steps)
        self.optimizer, self.batches = optimizer, 0
        self.batches_per_epoch = check.integer(batches_per_epoch, "batches_per_epoch", 1)
        self.steps = {int(e): float(lr) for e, lr in steps}

    def step(self) -> None:
        self.batches += 1
        epoch, start = divmod(self.batches, self.batches_per_epoch)
        if start == 0 and epoch in self.steps:
            self.optimizer.state.clear()
            for group in self.optimizer.param_groups:
                group["lr"] = self.steps[epoch]

    def get_last_lr(self) -> list[float]:
        return [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self) -> dict:
        return {"batches": self.batches}

    def load_state_dict(self, state: dict) -> None:
        self.batches = int(state["batches"])


def shrink_parameters(model: torch.nn.Module, factor: float) -> torch.nn.Module:
    """Every parameter of ``model`` times ``factor``, in place (the authors'
    ``shrink_parameters(model, 0.01)`` before training; buffers, e.g. a fixed coefficient, are
    left as they are)."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    check.real(factor, "factor", low=0.0, low_open=True)
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(factor)
    return model


def _adjoint_profile(model, data: Windows, n: int = 16) -> list[float]:
    """Mean over ``n`` windows of ``||dL/dz_k||`` for a loss on the last one-step prediction only
    (Fig. 8)."""
    from ..models.ode_rnn import adjoint_norms

    # in float64 on a copy: a gradient that decays below float32's range (~1e-38) is measured, not
    # floored
    probe = copy.deepcopy(model).double()
    batch = data.subset(slice(0, n)).map(torch.Tensor.double)
    pred, _, _, states = _predict(probe, batch, keep_states=True)
    (pred[:, -1] - batch.targets[:, -1]).pow(2).sum(-1).mean().backward()
    return adjoint_norms(states)


def _tight_nfe(model, task: TimeSeriesTask, tol: float, weights, n: int = 64) -> dict:
    """NFE per interval solve of the trained ``model`` at ``rtol = atol = tol``: the forward and
    backward pass of one training step over ``n`` training windows, and the forward pass over ``n``
    test windows.

    Per interval solve, so that the floor is the solver's (14 evaluations for 2 accepted dopri5
    steps) whatever the window length; the tolerance is restored afterwards.
    """
    from ..diagnostics.nfe import BatchNFE

    block, saved = model.block, (model.block.rtol, model.block.atol)
    solves = [0]
    hook = block.register_forward_hook(lambda *_: solves.__setitem__(0, solves[0] + 1))
    block.rtol = block.atol = float(tol)
    try:
        with BatchNFE(model) as train:
            _, _, loss = _losses(
                model,
                task.train.subset(slice(0, n)),
                weights,
                _read_back(task) if weights[1] else None,
            )
            train.mark_forward()
            loss.backward()
        model.zero_grad(set_to_none=True)
        train_solves, solves[0] = solves[0], 0
        with torch.no_grad(), BatchNFE(model) as test:
            _losses(
                model,
                task.test.subset(slice(0, n)),
                weights,
                _read_back(task) if weights[1] else None,
            )
            test.mark_forward()
    finally:
        hook.remove()
        block.rtol, block.atol = saved
    return {
        "tol": float(tol),
        "interval_solves": train_solves,
        "forward_per_solve": train.forward / train_solves,
        "backward_per_solve": train.backward / train_solves,
        "test_per_solve": test.forward / solves[0],
    }


def _on_device(task: TimeSeriesTask, device: torch.device) -> TimeSeriesTask:
    """``task`` with its windows on ``device`` (the model's): the loaders build them on the CPU."""
    if task.train.x.device == device:
        return task
    move = lambda w: w.map(lambda t: t.to(device))  # noqa: E731
    return dataclasses.replace(
        task, train=move(task.train), val=move(task.val), test=move(task.test)
    )


def train_hybrid(
    model,
    task: TimeSeriesTask,
    *,
    epochs: int,
    batch_size: int,
    lr: float,
    seed: int = 0,
    loss_weights: tuple[float, float, float] = LOSS_WEIGHTS,
    validate: bool = True,
    quiet: bool = True,
    lr_schedule: str = "constant",
    lr_steps: tuple = (),
    clip_norm: float | None = None,
    shrink: float = 1.0,
    nfe_tol: float | None = None,
    checkpoint_dir: str | Path | None = None,
) -> dict:
    """Train ``model`` (an :class:`~dynkit.models.ode_rnn.ODERNN`) with Adam via
    :func:`~dynkit.tasks.training.fit`.

    Each epoch records the training loss, the forward and backward NFE summed over the epoch's
    batches, the epoch's wall time, and the test (and with ``validate`` the validation) one-step and
    forecast MSE and the NFE of that pass (``test_nfe``). At the end,
    the adjoint norm through time on test windows (``_adjoint_profile``) and, with ``nfe_tol``, the
    NFE per interval solve of one training pass of the trained model at that tolerance
    (``tight_nfe``: at the training tolerance the solver may sit at its floor of 2 steps, and then
    the NFE measure the tolerance, not the model).

    ``lr_schedule`` is ``"constant"``, ``"cosine"`` (the rate decays to 0 over the run, per batch,
    so that the last epochs settle on a plateau) or ``"step"`` (the authors' ``lr_dict``: ``lr``
    from the start, then at the start of each epoch ``e`` of ``lr_steps = ((e, rate), ...)`` that
    rate with Adam restarted, :class:`StepRestarts`). ``loss_weights`` weigh the one-step,
    reconstruction and forecast MSE (the authors': ``(0.1, 0.1, 1.0)``); ``clip_norm`` clips the
    gradients' global norm before each step (the authors': 1.0); ``shrink`` multiplies every
    parameter once before training (the authors': 0.01). The windows train on the model's device
    (moved there once).

    With ``checkpoint_dir``, a checkpoint after every epoch goes there and a call finding one
    resumes from it (exactly: the batches, the schedule and the random states continue where they
    stopped; a checkpoint written with other options is refused, naming them); ``resumed_epochs`` in
    the result says how many epochs came from it.
    """
    from ..diagnostics.nfe import BatchNFE
    from ..models.ode_rnn import ODERNN
    from .training import fit

    if not isinstance(model, ODERNN):
        raise TypeError(f"model must be an ODERNN, got {type(model).__name__}")
    if not isinstance(task, TimeSeriesTask):
        raise TypeError(
            f"task must be a TimeSeriesTask (load_time_series), got {type(task).__name__}"
        )
    check.integer(epochs, "epochs", 1)
    check.integer(batch_size, "batch_size", 1)
    check.real(lr, "lr", low=0.0, low_open=True)
    check.integer(seed, "seed", 0)
    if not isinstance(loss_weights, (tuple, list)) or len(loss_weights) != 3:
        raise ValueError(
            f"loss_weights must be 3 weights (one-step, reconstruction, forecast), got "
            f"{loss_weights!r}"
        )
    weights = tuple(check.real(w, "loss_weights", low=0.0) for w in loss_weights)
    check.boolean(validate, "validate")
    check.boolean(quiet, "quiet")
    check.one_of(lr_schedule, "lr_schedule", ("constant", "cosine", "step"))
    _check_steps(lr_steps)
    if lr_steps and lr_schedule != "step":
        raise ValueError(
            f"lr_steps must be empty unless lr_schedule is 'step', got {lr_steps!r} with "
            f"lr_schedule={lr_schedule!r}"
        )
    if clip_norm is not None:
        check.real(clip_norm, "clip_norm", low=0.0, low_open=True)
    check.real(shrink, "shrink", low=0.0, low_open=True)
    if weights[1] and model.prediction != "after_gap":
        raise ValueError(
            f"loss_weights must give the reconstruction weight 0 for a model that predicts "
            f"{model.prediction!r} (it reads no observation back), got {weights[1]!r}"
        )
    if nfe_tol is not None:
        check.real(nfe_tol, "nfe_tol", low=0.0, low_open=True)
    if validate and len(task.val) == 0:
        raise ValueError(
            f"validate must be False for task {task.name!r}: it holds no validation windows "
            f"(the authors' split has none)"
        )
    if task.train.x.shape[2] != model.n_inputs:
        raise ValueError(
            f"model must read the task's {task.train.x.shape[2]} input channels, "
            f"got n_inputs={model.n_inputs}"
        )
    task = _on_device(task, next(model.parameters()).device)
    read_back = _read_back(task) if weights[1] else None
    if shrink != 1.0:
        shrink_parameters(model, shrink)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    n_train = len(task.train)
    n_batches = -(-n_train // batch_size)
    scheduler = (
        torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs * n_batches)
        if lr_schedule == "cosine"
        else StepRestarts(optimizer, lr_steps, n_batches)
        if lr_schedule == "step"
        else None
    )
    clock = {}

    def batches(generator):
        clock["start"] = time.perf_counter()
        order = torch.randperm(n_train, generator=generator, device=generator.device)
        return (task.train.subset(order[i : i + batch_size]) for i in range(0, n_train, batch_size))

    def step(model, batch):
        with BatchNFE(model) as nfe:
            _, _, loss = _losses(model, batch, weights, read_back)
            nfe.mark_forward()
            loss.backward()
        if clip_norm is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip_norm)
        return loss, {
            "nfe_forward": nfe.forward * n_batches,
            "nfe_backward": nfe.backward * n_batches,
        }

    def evaluate(model):
        seconds = time.perf_counter() - clock["start"]
        record = {"epoch_seconds": seconds}
        for split in ("val", "test") if validate else ("test",):
            with BatchNFE(model) as nfe:
                mse = _test_mse(model, getattr(task, split), weights, read_back)
                record[f"{split}_nfe"] = (
                    nfe.mark_forward()
                )  # every ODE evaluation of the pass over the split
            record.update({f"{split}_{k}": v for k, v in mse.items()})
        return record

    history = fit(
        model,
        optimizer,
        batches,
        step,
        epochs,
        seed=seed,
        evaluate=evaluate,
        progress=not quiet,
        backward=False,
        description=task.name,
        scheduler=scheduler,
        checkpoint_dir=checkpoint_dir,
        resume=checkpoint_dir is not None,
        manifest={
            "task": task.name,
            "batch_size": batch_size,
            "lr_schedule": lr_schedule,
            "lr_steps": [list(s) for s in lr_steps],
            "clip_norm": clip_norm,
            "shrink": shrink,
            "loss_weights": list(weights),
            "validate": validate,
        },
    )
    result = {
        "history": history.epochs,
        "resumed_epochs": history.resumed_after,
        "adjoint_norm": _adjoint_profile(model, task.test),
    }
    if nfe_tol is not None:
        result["tight_nfe"] = _tight_nfe(model, task, nfe_tol, weights)
    return result


def load_time_series(name: str, source: str = "measured", **options) -> TimeSeriesTask:
    """``"walker2d"``, ``"plane_vibration"`` or ``"silverbox"`` from ``source`` with its loader's
    ``options``.

    ``source="measured"`` reads the recorded series
    (:func:`~dynkit.tasks.plane_vibration.plane_vibration_measured`,
    :func:`~dynkit.tasks.silverbox.silverbox_measured`; options such as ``directory`` and
    ``max_windows``); ``"simulated"`` generates the stand-in
    (:func:`~dynkit.tasks.plane_vibration.plane_vibration`,
    :func:`~dynkit.tasks.silverbox.silverbox_windows`, :func:`~dynkit.tasks.walker2d.walker2d`;
    options such as ``n_points`` and ``seed``). Walker2D exists only simulated. The task's
    ``source`` says which.
    """
    check.one_of(name, "name", ("walker2d", "plane_vibration", "silverbox"))
    check.one_of(source, "source", SOURCES)
    if (name, source) not in LOADERS:
        raise ValueError(
            f"source must be 'simulated' for {name!r} (its recorded data are not available "
            f"offline: a "
            f"simulation stands in), got {source!r}"
        )
    return LOADERS[name, source](**options)


__all__ = [
    "LOADERS",
    "LOSS_WEIGHTS",
    "Windows",
    "TimeSeriesTask",
    "load_time_series",
    "train_hybrid",
]
