"""Irregularly sampled windows of a multivariate series: the review's time-series protocol.

The protocol (Sect. 3.4.3-3.4.4 of the review): remove 10% of the samples at random (the series
becomes irregularly sampled), split it chronologically (50% train, 25% validation, 25% test), cut
each part into non-overlapping windows of ``length + forecast`` stamps. The first ``length`` stamps
are read by the hybrid; the target of each is the next stamp (one-step-ahead); the last ``forecast``
stamps are predicted from the final state by the ODE alone (Sect. 3.4.3: "by changing the time
duration of the last step of the ODE integration").

This module is below the data sets (:mod:`~dynkit.tasks.walker2d`,
:mod:`~dynkit.tasks.plane_vibration`, :mod:`~dynkit.tasks.silverbox`), which build a
:class:`TimeSeriesTask` from it, and they are below :mod:`~dynkit.tasks.time_series` (loading them
by name, training the hybrids on them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch

from .. import _checks as check

SOURCES = ("measured", "simulated")
"""What a task's data are: a recorded benchmark series, or a simulated system standing in for one."""  # noqa: E501


FIELDS = ("x", "gaps", "targets", "future", "future_gaps", "ahead")


@dataclass
class Windows:
    """``x`` (N, L, d_in) observations after ``gaps`` (N, L); ``targets`` (N, L, d_out) the next
    stamp; ``future`` (N, F, d_out) the forecast stamps after ``future_gaps`` (N, F). ``ahead``
    (N, L), optional: the interval a model that predicts after the gap integrates from each
    observation to its target; ``None``: the gap to the next observation, then the first forecast
    stamp's (the authors' Walker2D loader feeds the gap before each observation instead,
    :func:`~dynkit.tasks.walker2d.walker2d`)."""

    x: torch.Tensor
    gaps: torch.Tensor
    targets: torch.Tensor
    future: torch.Tensor
    future_gaps: torch.Tensor
    ahead: torch.Tensor | None = None

    def __post_init__(self):
        for name, ndim in (
            ("x", 3),
            ("gaps", 2),
            ("targets", 3),
            ("future", 3),
            ("future_gaps", 2),
            ("ahead", 2),
        ):
            if name != "ahead" or self.ahead is not None:
                check.tensor(getattr(self, name), name, ndim=ndim, floating=True)
        sizes = {
            name: getattr(self, name).shape[0] for name in FIELDS if getattr(self, name) is not None
        }
        if len(set(sizes.values())) != 1:
            raise ValueError(
                f"x, gaps, targets, future, future_gaps (and ahead) must hold the same number of "
                f"windows, got {sizes}"
            )
        if self.ahead is not None and tuple(self.ahead.shape) != tuple(self.gaps.shape):
            raise ValueError(
                f"ahead must have the shape of gaps {tuple(self.gaps.shape)}, got "
                f"{tuple(self.ahead.shape)}"
            )

    def __len__(self) -> int:
        return self.x.shape[0]

    def map(self, fn) -> "Windows":
        """These windows with ``fn`` applied to every tensor (``ahead`` stays ``None`` when it
        is)."""
        return Windows(
            *(None if getattr(self, k) is None else fn(getattr(self, k)) for k in FIELDS)
        )

    def subset(self, index) -> "Windows":
        return self.map(lambda a: a[index])


@dataclass
class TimeSeriesTask:
    """A windowed task: splits, channel names and the note saying what stands in for what.

    ``source`` labels the data: ``"measured"`` (a recorded benchmark series,
    :mod:`~dynkit.tasks.measured`) or ``"simulated"`` (a generated system standing in for one).
    """

    name: str
    train: Windows
    val: Windows
    test: Windows
    inputs: tuple
    outputs: tuple
    note: str
    config: dict = field(default_factory=dict)
    source: str = "simulated"

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(
                f"name must be a non-empty str, got {type(self.name).__name__} {self.name!r:.60}"
            )
        for split in ("train", "val", "test"):
            value = getattr(self, split)
            if not isinstance(value, Windows):
                raise TypeError(f"{split} must be Windows, got {type(value).__name__}")
        for label in ("inputs", "outputs"):
            value = getattr(self, label)
            if not isinstance(value, tuple) or not value:
                raise TypeError(
                    f"{label} must be a non-empty tuple of channel names, got {value!r:.60}"
                )
        if not isinstance(self.note, str):
            raise TypeError(f"note must be a str, got {type(self.note).__name__}")
        if not isinstance(self.config, dict):
            raise TypeError(f"config must be a dict, got {type(self.config).__name__}")
        check.one_of(self.source, "source", SOURCES)


def _drop_samples(t: np.ndarray, values: np.ndarray, fraction: float, rng: np.random.Generator):
    """Remove ``fraction`` of the samples at random (kept in time order): an irregularly sampled
    series."""
    check.real(fraction, "drop", low=0.0, high=1.0, high_open=True)
    keep = np.sort(rng.permutation(len(t))[: len(t) - int(round(fraction * len(t)))])
    return t[keep], values[keep]


def _cut_windows(
    t: np.ndarray,
    values: np.ndarray,
    inputs: Sequence[int],
    outputs: Sequence[int],
    length: int,
    forecast: int,
) -> Windows:
    """Non-overlapping windows of ``length + forecast`` stamps of one (irregular) series."""
    check.integer(length, "length", 2)
    check.integer(forecast, "forecast", 1)
    span = length + forecast
    n = len(t) // span
    if n < 1:
        raise ValueError(
            f"length + forecast must be at most the {len(t)} samples of each part of the series, "
            f"got {length} + {forecast}"
        )
    idx = np.arange(n)[:, None] * span + np.arange(span)[None]
    tw, vw = t[idx], values[idx]
    gaps = np.diff(tw, axis=1, prepend=tw[:, :1])
    as_t = lambda a: torch.tensor(np.ascontiguousarray(a), dtype=torch.float32)  # noqa: E731
    out = list(outputs)
    return Windows(
        as_t(vw[:, :length][..., list(inputs)]),
        as_t(gaps[:, :length]),
        as_t(vw[:, 1 : length + 1][..., out]),
        as_t(vw[:, length:][..., out]),
        as_t(gaps[:, length:]),
    )


def _concat_windows(parts: Sequence[Windows]) -> Windows:
    """The windows of ``parts`` one after the other (e.g. of several episodes)."""
    if len({p.ahead is None for p in parts}) > 1:
        raise ValueError("parts must all carry ahead or none of them, got a mix")
    return Windows(
        *(
            None if getattr(parts[0], k) is None else torch.cat([getattr(p, k) for p in parts])
            for k in FIELDS
        )
    )


def _split_series(t: np.ndarray, values: np.ndarray, fractions=(0.5, 0.25, 0.25)):
    """Chronological train/validation/test parts of one series."""
    edges = np.cumsum([0, *fractions])
    bounds = (edges * len(t)).astype(int)
    return [(t[a:b], values[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]


def _standardise(values: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """Zero mean, unit variance per channel, with the statistics of ``reference`` (the training
    part)."""
    mean, std = reference.mean(0), reference.std(0)
    return (values - mean) / np.where(std > 0, std, 1.0)


# the helpers are the tasks package's own (the data sets cut with them)
__all__ = ["SOURCES", "Windows", "TimeSeriesTask"]
