"""Silverbox, the Duffing-like electronic circuit of the review's Fig. 7: the measured series and a
simulation.

:func:`silverbox_measured` reads the measured benchmark (Wigren & Schoukens 2013; :data:`MEASURED`:
the file, the authors' preprocessing and split, each setting with its source). :func:`silverbox`
simulates the system it realises, ``y'' + 2 zeta w y' + w^2 y + a y^3 = b u(t)``, driven by a random
multisine ``u(t)`` (input voltage V1) with output ``y`` (voltage V2): the stand-in used before the
measured series were available offline, and the driven system of the blow-up experiment
(:mod:`dynkit.experiments.node.node_blowup`).
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

import numpy as np

from .. import _checks as check
from .measured import MeasuredProtocol, SeriesFile, _scale, load_measured, read_series
from .windows import TimeSeriesTask, _cut_windows, _drop_samples, _split_series, _standardise

__all__ = [
    "MEASURED",
    "Multisine",
    "silverbox",
    "silverbox_measured",
    "silverbox_measured_drive",
    "silverbox_windows",
]


MEASURED = MeasuredProtocol(
    name="silverbox",
    # the authors' data/sb.csv (hedixia/HeavyBallNODE, commit cd1065f), unchanged;
    # shared/data/README.md 1b. The digest is that of their file at cd1065f (sha256
    # e7076735427b0b9b...); the README's "e70767354271" is a typo of it (11 digits agree, the 12th
    # is "b")
    file=SeriesFile("silverbox.csv", ("V1", "V2"), sha256_prefix="e7076735427b"),
    # review Sect. 3.2.3 (Fig. 7): "the input voltage V1(t) is used to predict the output V2(t)";
    # the hybrids read both voltages and predict the next V2 (one step ahead, as the review's
    # Walker2D task, Sect. 3.4.4)
    inputs=("V1", "V2"),
    outputs=("V2",),
    scaling="centre",
    factor=100.0,  # sonode_data_loader.py load_data: 100 * (v - mean(v)) per voltage,
    # rescaling=100 in silverbox_init.py
    span=5000,
    margin=0,  # silverbox_init.py: trsize = 1000, tssize = 4000 (the first 5,000 samples)
    keep=1.0,
    noise_draw=False,  # silverbox_init.py: regularly sampled, nothing removed, no random draw
    split=(1, 0, 4),  # silverbox_init.py: data[:1000] train, data[1000:5000] test, no validation
    split_seed=0,  # unused (nothing is drawn)
    length=64,  # dynkit's windows: the authors integrate one sequence (silverbox_init.py
    # evaluates 64 stamps, evaluation_times=arange(64); SONODE's Silverbox
    # trains on the 1,000 samples as one series); 65-sample runs give 15 / 61
    forecast=1,  # one step ahead: the next V2 (as dynkit's simulated Silverbox windows)
    description="Silverbox electronic Duffing oscillator (Wigren & Schoukens 2013), voltages V1 (input), "  # noqa: E501
    "V2",
    sources="hedixia/HeavyBallNODE sonode_data_loader.py, silverbox_init.py; review Sect. 3.2.3, "
    "Fig. 7",
)
"""The measured series and the authors' scaling and split (their ``silverbox_init.py``); windows are dynkit's."""  # noqa: E501


@dataclass(frozen=True)
class Multisine:
    """``u(t) = amplitude * sum_k sin(w_k t + phi_k) / sqrt(K)``: smooth, defined at every time."""

    frequencies: np.ndarray
    phases: np.ndarray
    amplitude: float

    def __post_init__(self):
        for name in ("frequencies", "phases"):
            value = getattr(self, name)
            if (
                not isinstance(value, np.ndarray)
                or value.ndim != 1
                or not np.all(np.isfinite(value))
            ):
                raise ValueError(f"{name} must be a 1-D array of finite numbers, got {value!r:.80}")
        if self.frequencies.shape != self.phases.shape:
            raise ValueError(
                f"phases must match frequencies in length, got {len(self.phases)} and "
                f"{len(self.frequencies)}"
            )
        check.real(self.amplitude, "amplitude")

    @classmethod
    def random(
        cls, n: int = 8, max_frequency: float = 1.5, amplitude: float = 0.5, seed: int = 0
    ) -> "Multisine":
        check.integer(n, "n", 1)
        check.real(max_frequency, "max_frequency", low=0.05, low_open=True)
        check.real(amplitude, "amplitude")
        check.integer(seed, "seed", 0)
        rng = np.random.default_rng(seed)
        return cls(
            np.sort(rng.uniform(0.05, max_frequency, n)),
            rng.uniform(0, 2 * np.pi, n),
            float(amplitude),
        )

    def __call__(self, t):
        try:
            t = np.asarray(t, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"t must be a number or an array of numbers, got {t!r:.80}") from None
        if not np.all(np.isfinite(t)):
            raise ValueError(f"t must be finite, got {t!r:.80}")
        waves = np.sin(np.multiply.outer(t, self.frequencies) + self.phases)
        return self.amplitude * waves.sum(-1) / np.sqrt(len(self.frequencies))


def silverbox(
    t_end: float = 200.0,
    n_points: int = 2001,
    *,
    omega: float = 1.0,
    zeta: float = 0.05,
    cubic: float = 1.0,
    gain: float = 1.0,
    seed: int = 0,
):
    """Simulate the Duffing oscillator from rest; returns ``(t, u, y, input)`` with ``input`` the
    multisine."""
    from ..solvers import solve

    check.real(t_end, "t_end", low=0.0, low_open=True)
    check.integer(n_points, "n_points", 2)
    for name, value in (("omega", omega), ("zeta", zeta), ("cubic", cubic), ("gain", gain)):
        check.real(value, name)
    check.integer(seed, "seed", 0)
    u = Multisine.random(seed=seed)
    t = np.linspace(0.0, t_end, n_points)

    def rhs(s, z):
        y, v = z
        return np.array([v, gain * u(s) - 2 * zeta * omega * v - omega**2 * y - cubic * y**3])

    sol = solve(rhs, np.zeros(2), t, rtol=1e-8, atol=1e-10)
    return t, u(t), sol.ys[:, 0], u


def silverbox_measured(
    directory: str | os.PathLike | None = None,
    *,
    length: int | None = None,
    max_windows: int | None = None,
    verify: bool = True,
) -> TimeSeriesTask:
    """The measured Silverbox with the authors' scaling and split (:data:`MEASURED`), cut into
    windows.

    Both voltages centred on their means over the whole series and multiplied by 100; samples 0..999
    train, 1000..4999 test (no validation part: ``val`` holds no windows); windows of 65 consecutive
    samples (64 read, each one's next V2 predicted): 15 training and 61 test windows.
    ``max_windows`` keeps the first of each part. ``directory``: see :mod:`dynkit.tasks.measured`.
    """
    return load_measured(MEASURED, directory, length=length, max_windows=max_windows, verify=verify)


def silverbox_measured_drive(directory: str | os.PathLike | None = None, *, verify: bool = True):
    """The measured Silverbox's training part as a driven system, like :func:`silverbox`:
    ``(t, u, y, input)``.

    ``t`` the 1,000 training samples' times (in samples, 0..999), ``u`` and ``y`` the voltages V1
    and V2 with the authors' scaling (:data:`MEASURED`: centred, times 100), ``input`` V1 as a
    function of time, linear between samples and held at the ends (the authors' ``v1_func`` in
    ``silverbox_init.py``, the drive of their Fig. 3, the review's Fig. 7). ``directory``: see
    :mod:`dynkit.tasks.measured`.
    """
    values, _ = read_series(
        MEASURED.file,
        directory,
        min_rows=MEASURED.span,
        verify=verify,
        needed_for="the authors' split",
    )
    n_train = (
        MEASURED.span * MEASURED.split[0] // sum(MEASURED.split)
    )  # 1,000 (silverbox_init.py trsize)
    scaled = _scale(values, MEASURED)[:n_train]
    t = np.arange(n_train, dtype=np.float64)
    u, y = scaled[:, 0], scaled[:, 1]
    return t, u, y, functools.partial(np.interp, xp=t, fp=u)


def silverbox_windows(
    n_points: int = 4000, *, length: int = 64, drop: float = 0.1, seed: int = 0
) -> TimeSeriesTask:
    """The simulated stand-in (:func:`silverbox`) cut by the review's protocol
    (:mod:`dynkit.tasks.windows`).

    Inputs ``[u, y]`` (voltages V1, V2), output the next ``y``; times in samples (0.15 time units
    each).
    """
    check.integer(n_points, "n_points", 2)
    check.integer(length, "length", 2)
    check.real(drop, "drop", low=0.0, high=1.0, high_open=True)
    check.integer(seed, "seed", 0)
    t, u, y, _ = silverbox(t_end=0.15 * (n_points - 1), n_points=n_points, seed=seed)
    rng = np.random.default_rng(seed)
    # time in samples (one stamp = 0.15 time units): a gap is 1 or more
    t, values = _drop_samples(
        np.arange(n_points, dtype=np.float64), np.column_stack([u, y]), drop, rng
    )
    parts = _split_series(t, values)
    reference = parts[0][1]
    train, val, test = (
        _cut_windows(tp, _standardise(vp, reference), (0, 1), (1,), length, 1) for tp, vp in parts
    )
    note = (
        "the simulated Duffing circuit of dk.tasks.silverbox stands in for the measured "
        "Silverbox benchmark"
    )
    return TimeSeriesTask(
        "silverbox",
        train,
        val,
        test,
        ("u", "y"),
        ("y",),
        note,
        {"n_points": n_points, "length": length, "drop": drop, "seed": seed},
    )
