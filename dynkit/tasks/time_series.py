"""Training the ODE-RNN hybrids on the time-series tasks, and loading those tasks by name.

The windows and the protocol that cuts them are :mod:`dynkit.tasks.windows`; the data sets are
:mod:`~dynkit.tasks.walker2d`, :mod:`~dynkit.tasks.plane_vibration` and :mod:`~dynkit.tasks.silverbox`
(each imports only the windows: no import goes back up to this module).
"""
from __future__ import annotations

import copy
import time

import numpy as np
import torch

from .. import _checks as check
from .plane_vibration import plane_vibration, plane_vibration_measured
from .silverbox import silverbox_measured, silverbox_windows
from .walker2d import walker2d  # gymnasium and MuJoCo load only when a Walker2D task is built
from .windows import SOURCES, TimeSeriesTask, Windows

LOADERS = {("plane_vibration", "measured"): plane_vibration_measured,
           ("plane_vibration", "simulated"): plane_vibration,
           ("silverbox", "measured"): silverbox_measured,
           ("silverbox", "simulated"): silverbox_windows,
           ("walker2d", "simulated"): walker2d}  # the recorded walker set is not available offline
"""The function building each task from each source."""


# ---------------------------------------------------------------------------------------------
# training


def _losses(model, batch: Windows, forecast_weight: float):
    pred, _, z = model(batch.x, batch.gaps)
    one_step = (pred - batch.targets).pow(2).mean()
    future = (model.forecast(z, batch.future_gaps) - batch.future).pow(2).mean()
    return one_step, future, one_step + forecast_weight * future


def _test_mse(model, data: Windows, forecast_weight: float, batch_size: int = 256) -> dict:
    """One-step-ahead and forecast MSE over ``data`` (sample-weighted means over batches)."""
    sums = np.zeros(2)
    for i in range(0, len(data), batch_size):
        batch = data.subset(slice(i, i + batch_size))
        one, fut, _ = _losses(model, batch, forecast_weight)
        sums += len(batch) * np.array([float(one), float(fut)])
    return {"one_step_mse": sums[0] / len(data), "forecast_mse": sums[1] / len(data)}


def _adjoint_profile(model, data: Windows, n: int = 16) -> list[float]:
    """Mean over ``n`` windows of ``||dL/dz_k||`` for a loss on the last one-step prediction only (Fig. 8)."""
    from ..models.ode_rnn import adjoint_norms

    # in float64 on a copy: a gradient that decays below float32's range (~1e-38) is measured, not floored
    probe = copy.deepcopy(model).double()
    batch = data.subset(slice(0, n))
    pred, states, _ = probe(batch.x.double(), batch.gaps.double(), keep_states=True)
    (pred[:, -1] - batch.targets[:, -1].double()).pow(2).sum(-1).mean().backward()
    return adjoint_norms(states)


def _tight_nfe(model, task: TimeSeriesTask, tol: float, forecast_weight: float, n: int = 64) -> dict:
    """NFE per interval solve of the trained ``model`` at ``rtol = atol = tol``: the forward and backward
    pass of one training step over ``n`` training windows, and the forward pass over ``n`` test windows.

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
            _, _, loss = _losses(model, task.train.subset(slice(0, n)), forecast_weight)
            train.mark_forward()
            loss.backward()
        model.zero_grad(set_to_none=True)
        train_solves, solves[0] = solves[0], 0
        with torch.no_grad(), BatchNFE(model) as test:
            _losses(model, task.test.subset(slice(0, n)), forecast_weight)
            test.mark_forward()
    finally:
        hook.remove()
        block.rtol, block.atol = saved
    return {"tol": float(tol), "interval_solves": train_solves, "forward_per_solve": train.forward / train_solves,
            "backward_per_solve": train.backward / train_solves, "test_per_solve": test.forward / solves[0]}


def train_hybrid(model, task: TimeSeriesTask, *, epochs: int, batch_size: int, lr: float, seed: int = 0,
                 forecast_weight: float = 1.0, validate: bool = True, quiet: bool = True,
                 lr_schedule: str = "constant", nfe_tol: float | None = None) -> dict:
    """Train ``model`` (an :class:`~dynkit.models.ode_rnn.ODERNN`) with Adam via :func:`~dynkit.tasks.training.fit`.

    Each epoch records the training loss, the forward and backward NFE summed over the epoch's
    batches, the epoch's wall time, and the test (and with ``validate`` the validation) one-step and
    forecast MSE and the NFE of that pass (``test_nfe``). At the end,
    the adjoint norm through time on test windows (``_adjoint_profile``) and, with ``nfe_tol``, the
    NFE per interval solve of one training pass of the trained model at that tolerance
    (``tight_nfe``: at the training tolerance the solver may sit at its floor of 2 steps, and then
    the NFE measure the tolerance, not the model).

    ``lr_schedule`` is ``"constant"`` or ``"cosine"`` (the rate decays to 0 over the run, per batch,
    so that the last epochs settle on a plateau).
    """
    from ..diagnostics.nfe import BatchNFE
    from ..models.ode_rnn import ODERNN
    from .training import fit

    if not isinstance(model, ODERNN):
        raise TypeError(f"model must be an ODERNN, got {type(model).__name__}")
    if not isinstance(task, TimeSeriesTask):
        raise TypeError(f"task must be a TimeSeriesTask (load_time_series), got {type(task).__name__}")
    check.integer(epochs, "epochs", 1)
    check.integer(batch_size, "batch_size", 1)
    check.real(lr, "lr", low=0.0, low_open=True)
    check.integer(seed, "seed", 0)
    check.real(forecast_weight, "forecast_weight", low=0.0)
    check.boolean(validate, "validate")
    check.boolean(quiet, "quiet")
    check.one_of(lr_schedule, "lr_schedule", ("constant", "cosine"))
    if nfe_tol is not None:
        check.real(nfe_tol, "nfe_tol", low=0.0, low_open=True)
    if validate and len(task.val) == 0:
        raise ValueError(f"validate must be False for task {task.name!r}: it holds no validation windows "
                         f"(the authors' split has none)")
    if task.train.x.shape[2] != model.n_inputs:
        raise ValueError(f"model must read the task's {task.train.x.shape[2]} input channels, "
                         f"got n_inputs={model.n_inputs}")
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    n_train = len(task.train)
    n_batches = -(-n_train // batch_size)
    scheduler = (torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs * n_batches)
                 if lr_schedule == "cosine" else None)
    clock = {}

    def batches(generator):
        clock["start"] = time.perf_counter()
        order = torch.randperm(n_train, generator=generator)
        return (task.train.subset(order[i:i + batch_size]) for i in range(0, n_train, batch_size))

    def step(model, batch):
        with BatchNFE(model) as nfe:
            _, _, loss = _losses(model, batch, forecast_weight)
            nfe.mark_forward()
            loss.backward()
        return loss, {"nfe_forward": nfe.forward * n_batches, "nfe_backward": nfe.backward * n_batches}

    def evaluate(model):
        seconds = time.perf_counter() - clock["start"]
        record = {"epoch_seconds": seconds}
        for split in ("val", "test") if validate else ("test",):
            with BatchNFE(model) as nfe:
                mse = _test_mse(model, getattr(task, split), forecast_weight)
                record[f"{split}_nfe"] = nfe.mark_forward()  # every ODE evaluation of the pass over the split
            record.update({f"{split}_{k}": v for k, v in mse.items()})
        return record

    history = fit(model, optimizer, batches, step, epochs, seed=seed, evaluate=evaluate, progress=not quiet,
                  backward=False, description=task.name, scheduler=scheduler)
    result = {"history": history.epochs, "adjoint_norm": _adjoint_profile(model, task.test)}
    if nfe_tol is not None:
        result["tight_nfe"] = _tight_nfe(model, task, nfe_tol, forecast_weight)
    return result


def load_time_series(name: str, source: str = "measured", **options) -> TimeSeriesTask:
    """``"walker2d"``, ``"plane_vibration"`` or ``"silverbox"`` from ``source`` with its loader's ``options``.

    ``source="measured"`` reads the recorded series (:func:`~dynkit.tasks.plane_vibration.plane_vibration_measured`,
    :func:`~dynkit.tasks.silverbox.silverbox_measured`; options such as ``directory`` and ``max_windows``);
    ``"simulated"`` generates the stand-in (:func:`~dynkit.tasks.plane_vibration.plane_vibration`,
    :func:`~dynkit.tasks.silverbox.silverbox_windows`, :func:`~dynkit.tasks.walker2d.walker2d`; options such as
    ``n_points`` and ``seed``). Walker2D exists only simulated. The task's ``source`` says which.
    """
    check.one_of(name, "name", ("walker2d", "plane_vibration", "silverbox"))
    check.one_of(source, "source", SOURCES)
    if (name, source) not in LOADERS:
        raise ValueError(f"source must be 'simulated' for {name!r} (its recorded data are not available offline: a "
                         f"simulation stands in), got {source!r}")
    return LOADERS[name, source](**options)


__all__ = ["LOADERS", "Windows", "TimeSeriesTask", "load_time_series", "train_hybrid"]
