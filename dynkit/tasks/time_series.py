"""Irregularly sampled windows of a multivariate series, and training of the ODE-RNN hybrids on them.

The review's time-series protocol (Sect. 3.4.3-3.4.4): remove 10% of the samples at random (the
series becomes irregularly sampled), split it chronologically (50% train, 25% validation, 25% test),
cut each part into non-overlapping windows of ``length + forecast`` stamps. The first ``length``
stamps are read by the hybrid; the target of each is the next stamp (one-step-ahead); the last
``forecast`` stamps are predicted from the final state by the ODE alone (Sect. 3.4.3: "by changing
the time duration of the last step of the ODE integration").
"""
from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch

from .. import _checks as check


@dataclass
class Windows:
    """``x`` (N, L, d_in) observations after ``gaps`` (N, L); ``targets`` (N, L, d_out) the next stamp;
    ``future`` (N, F, d_out) the forecast stamps after ``future_gaps`` (N, F)."""

    x: torch.Tensor
    gaps: torch.Tensor
    targets: torch.Tensor
    future: torch.Tensor
    future_gaps: torch.Tensor

    def __post_init__(self):
        for name, ndim in (("x", 3), ("gaps", 2), ("targets", 3), ("future", 3), ("future_gaps", 2)):
            check.tensor(getattr(self, name), name, ndim=ndim, floating=True)
        sizes = {name: getattr(self, name).shape[0] for name in ("x", "gaps", "targets", "future", "future_gaps")}
        if len(set(sizes.values())) != 1:
            raise ValueError(f"x, gaps, targets, future and future_gaps must hold the same number of windows, "
                             f"got {sizes}")

    def __len__(self) -> int:
        return self.x.shape[0]

    def subset(self, index) -> "Windows":
        return Windows(*(getattr(self, k)[index] for k in ("x", "gaps", "targets", "future", "future_gaps")))


@dataclass
class TimeSeriesTask:
    """A windowed task: splits, channel names and the note saying what stands in for what."""

    name: str
    train: Windows
    val: Windows
    test: Windows
    inputs: tuple
    outputs: tuple
    note: str
    config: dict = field(default_factory=dict)

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"name must be a non-empty str, got {type(self.name).__name__} {self.name!r:.60}")
        for split in ("train", "val", "test"):
            value = getattr(self, split)
            if not isinstance(value, Windows):
                raise TypeError(f"{split} must be Windows, got {type(value).__name__}")
        for label in ("inputs", "outputs"):
            value = getattr(self, label)
            if not isinstance(value, tuple) or not value:
                raise TypeError(f"{label} must be a non-empty tuple of channel names, got {value!r:.60}")
        if not isinstance(self.note, str):
            raise TypeError(f"note must be a str, got {type(self.note).__name__}")
        if not isinstance(self.config, dict):
            raise TypeError(f"config must be a dict, got {type(self.config).__name__}")


def _drop_samples(t: np.ndarray, values: np.ndarray, fraction: float, rng: np.random.Generator):
    """Remove ``fraction`` of the samples at random (kept in time order): an irregularly sampled series."""
    check.real(fraction, "drop", low=0.0, high=1.0, high_open=True)
    keep = np.sort(rng.permutation(len(t))[: len(t) - int(round(fraction * len(t)))])
    return t[keep], values[keep]


def _cut_windows(t: np.ndarray, values: np.ndarray, inputs: Sequence[int], outputs: Sequence[int], length: int,
                 forecast: int) -> Windows:
    """Non-overlapping windows of ``length + forecast`` stamps of one (irregular) series."""
    check.integer(length, "length", 2)
    check.integer(forecast, "forecast", 1)
    span = length + forecast
    n = len(t) // span
    if n < 1:
        raise ValueError(f"length + forecast must be at most the {len(t)} samples of each part of the series, "
                         f"got {length} + {forecast}")
    idx = np.arange(n)[:, None] * span + np.arange(span)[None]
    tw, vw = t[idx], values[idx]
    gaps = np.diff(tw, axis=1, prepend=tw[:, :1])
    as_t = lambda a: torch.tensor(np.ascontiguousarray(a), dtype=torch.float32)  # noqa: E731
    out = list(outputs)
    return Windows(as_t(vw[:, :length][..., list(inputs)]), as_t(gaps[:, :length]),
                   as_t(vw[:, 1:length + 1][..., out]), as_t(vw[:, length:][..., out]), as_t(gaps[:, length:]))


def _concat(parts: Sequence[Windows]) -> Windows:
    return Windows(*(torch.cat([getattr(p, k) for p in parts]) for k in ("x", "gaps", "targets", "future",
                                                                          "future_gaps")))


def _split_series(t: np.ndarray, values: np.ndarray, fractions=(0.5, 0.25, 0.25)):
    """Chronological train/validation/test parts of one series."""
    edges = np.cumsum([0, *fractions])
    bounds = (edges * len(t)).astype(int)
    return [(t[a:b], values[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]


def _standardise(values: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """Zero mean, unit variance per channel, with the statistics of ``reference`` (the training part)."""
    mean, std = reference.mean(0), reference.std(0)
    return (values - mean) / np.where(std > 0, std, 1.0)


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


def train_hybrid(model, task: TimeSeriesTask, *, epochs: int, batch_size: int, lr: float, seed: int = 0,
                 forecast_weight: float = 1.0, validate: bool = True, quiet: bool = True) -> dict:
    """Train ``model`` (an :class:`~dynkit.models.ode_rnn.ODERNN`) with Adam via :func:`~dynkit.tasks.training.fit`.

    Each epoch records the training loss, the forward and backward NFE summed over the epoch's
    batches, the epoch's wall time, and the test (and with ``validate`` the validation) one-step and
    forecast MSE and the NFE of that pass (``test_nfe``). At the end,
    the adjoint norm through time on test windows (``_adjoint_profile``).
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
    if task.train.x.shape[2] != model.n_inputs:
        raise ValueError(f"model must read the task's {task.train.x.shape[2]} input channels, "
                         f"got n_inputs={model.n_inputs}")
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    n_train = len(task.train)
    n_batches = -(-n_train // batch_size)
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
                  backward=False, description=task.name)
    return {"history": history.epochs, "adjoint_norm": _adjoint_profile(model, task.test)}


def _silverbox_windows(n_points: int = 4000, *, length: int = 64, drop: float = 0.1, seed: int = 0) -> TimeSeriesTask:
    """The simulated Silverbox (:func:`~dynkit.tasks.silverbox.silverbox`) in the same protocol.

    Inputs ``[u, y]`` (voltages V1, V2), output the next ``y``; times in samples (0.15 time units each).
    """
    from .silverbox import silverbox

    check.integer(n_points, "n_points", 2)
    check.integer(length, "length", 2)
    check.real(drop, "drop", low=0.0, high=1.0, high_open=True)
    check.integer(seed, "seed", 0)
    t, u, y, _ = silverbox(t_end=0.15 * (n_points - 1), n_points=n_points, seed=seed)
    rng = np.random.default_rng(seed)
    # time in samples (one stamp = 0.15 time units): a gap is 1 or more
    t, values = _drop_samples(np.arange(n_points, dtype=np.float64), np.column_stack([u, y]), drop, rng)
    parts = _split_series(t, values)
    reference = parts[0][1]
    train, val, test = (_cut_windows(tp, _standardise(vp, reference), (0, 1), (1,), length, 1) for tp, vp in parts)
    note = "the simulated Duffing circuit of dk.tasks.silverbox stands in for the measured Silverbox benchmark"
    return TimeSeriesTask("silverbox", train, val, test, ("u", "y"), ("y",), note,
                          {"n_points": n_points, "length": length, "drop": drop, "seed": seed})


def load_time_series(name: str, **options) -> TimeSeriesTask:
    """``"walker2d"``, ``"plane_vibration"`` or ``"silverbox"`` with its generator's ``options``."""
    check.one_of(name, "name", ("walker2d", "plane_vibration", "silverbox"))
    if name == "walker2d":
        from .walker2d import walker2d
        return walker2d(**options)
    if name == "plane_vibration":
        from .plane_vibration import plane_vibration
        return plane_vibration(**options)
    return _silverbox_windows(**options)
