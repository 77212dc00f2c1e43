"""The review's plane-vibration data (Sect. 3.4.3): the measured F-16 series, and a simulated
stand-in.

:func:`plane_vibration_measured` reads the measured series (:data:`MEASURED`: the file, the authors'
preprocessing, split and windows, each setting with its source). :func:`plane_vibration` simulates a
structure with the same observables, the stand-in used before the measured series were available
offline.

The review's data (Noël & Schoukens, F-16 ground vibration test) records 5 attributes per stamp: the
shaker's input voltage, the force applied to the aircraft and the accelerations at 3 spots. The
simulation is a structure with the same observables: a chain of masses (fuselage, wing root,
mid-wing, wing tip) joined by damped springs, one connection with a cubic stiffness (the
nonlinearity of the real test), excited at the wing by a shaker whose force follows the input
voltage (a random multisine) through a first-order lag. The 5 observed channels are
``[voltage, force, a_root, a_mid, a_tip]``. Its results say that a simulated system stands in for
the measured benchmark.
"""

from __future__ import annotations

import os

import numpy as np

from .. import _checks as check
from .measured import MeasuredProtocol, SeriesFile, load_measured
from .silverbox import Multisine
from .windows import TimeSeriesTask, _cut_windows, _drop_samples, _split_series, _standardise

__all__ = [
    "CHANNELS",
    "MASSES",
    "STIFFNESS",
    "DAMPING",
    "CUBIC",
    "MEASURED",
    "plane_vibration_measured",
    "plane_vibration",
]

CHANNELS = ("voltage", "force", "accel_root", "accel_mid", "accel_tip")
MASSES = np.array([4.0, 1.0, 0.8, 0.5])  # fuselage, wing root, mid-wing, tip
STIFFNESS = np.array([6.0, 5.0, 4.0, 3.0])  # ground-fuselage, then between neighbours
DAMPING = np.array([0.08, 0.05, 0.05, 0.04])
CUBIC = 2.0  # cubic stiffness of the fuselage-root connection
SHAKER_LAG, SHAKER_GAIN = 0.3, 1.5  # force lag (time units) and gain

MEASURED = MeasuredProtocol(
    name="plane_vibration",
    # the authors' data/pv.csv (hedixia/HeavyBallNODE, commit cd1065f), unchanged (sha256 as their
    # file's at cd1065f); shared/data/README.md 1b
    file=SeriesFile(
        "plane_vibration_f16_gvt.csv",
        ("Force", "Voltage", "Acceleration1", "Acceleration2", "Acceleration3", "Fs"),
        sha256_prefix="b72a9d063e39",
        first_row_only=("Fs",),
    ),  # pvdat.py drops Fs (data[:, :-2])
    # every channel is read and predicted (review Sect. 3.4.3: "5 attributes are recorded per time
    # stamp")
    inputs=("Force", "Voltage", "Acceleration1", "Acceleration2", "Acceleration3"),
    outputs=("Force", "Voltage", "Acceleration1", "Acceleration2", "Acceleration3"),
    scaling="standardise",
    factor=1.0,  # pvdat.py: (data - mean) / std per channel over the whole series
    span=None,
    margin=100,  # pvdat.py: full_len = len(data) - 100 start indices (stamps 0..73627)
    keep=0.9,  # pvdat.py throwout_rate=0.1; review: "randomly take out 10% of the data"
    noise_draw=True,  # pvdat.py: np.random.seed(1), randn(*data.shape) (error_var=0), then choice
    split=(2, 1, 1),  # pvdat.py tvt_ratio; review: first 50% train, next 25% validation, rest test
    split_seed=1,  # pvdat.py: np.random.seed(1)
    length=64,  # trainpv.py seqlen = 64; review: "64 time stamps" per input instance
    forecast=8,  # trainpv.py forelen = 8 (pvdat.py's default is 30); review: "8 consecutive
    # time stamps starting from the last time stamp of the segment"
    description="F-16 ground vibration test (Noël & Schoukens 2017), 5 channels, 400 Hz",
    sources="hedixia/HeavyBallNODE pvdat.py, plane_vibration/trainpv.py; review Sect. 3.4.3",
)
"""The measured series and the authors' protocol (``pvdat.py`` with ``trainpv.py``'s window and forecast)."""  # noqa: E501


def _chain_forces(x: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Spring/damper forces on each mass of the chain (mass 0 is tied to the ground)."""
    dx = np.diff(np.concatenate([[0.0], x]))
    dv = np.diff(np.concatenate([[0.0], v]))
    link = STIFFNESS * dx + DAMPING * dv
    link[1] += CUBIC * dx[1] ** 3
    return -link + np.concatenate([link[1:], [0.0]])


def _simulate(
    n_points: int = 4000, dt: float = 0.1, *, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Times (n,) and the 5 channels (n, 5), from rest, shaker on the mid-wing mass."""
    from ..solvers import solve

    if n_points < 2 or not dt > 0:
        raise ValueError(f"need n_points >= 2 and dt > 0, got n_points={n_points!r}, dt={dt!r}")
    voltage = Multisine.random(n=12, max_frequency=2.5, amplitude=1.0, seed=seed)
    n = len(MASSES)

    def accelerations(x, v, force):
        external = np.zeros(n)
        external[2] = force
        return (_chain_forces(x, v) + external) / MASSES

    def rhs(t, z):
        x, v, force = z[:n], z[n : 2 * n], z[2 * n]
        return np.concatenate(
            [v, accelerations(x, v, force), [(SHAKER_GAIN * voltage(t) - force) / SHAKER_LAG]]
        )

    t = np.arange(n_points) * dt
    zs = solve(rhs, np.zeros(2 * n + 1), t, rtol=1e-8, atol=1e-10).ys
    acc = np.array([accelerations(z[:n], z[n : 2 * n], z[2 * n]) for z in zs])
    return t, np.column_stack([voltage(t), zs[:, 2 * n], acc[:, 1], acc[:, 2], acc[:, 3]])


def plane_vibration_measured(
    directory: str | os.PathLike | None = None,
    *,
    length: int | None = None,
    forecast: int | None = None,
    split_seed: int | None = None,
    max_windows: int | None = None,
    verify: bool = True,
) -> TimeSeriesTask:
    """The measured F-16 series with the authors' preprocessing, split and windows
    (:data:`MEASURED`).

    Each channel standardised over the whole series; 90% of the start indices 0..n-101 drawn at
    random (seed 1, as the authors) and split in time order 2:1:1 into train, validation and test;
    windows of 65 consecutive kept indices (64 read, each one's next predicted) and an 8-stamp
    forecast from the 65th on. About 509 / 254 / 254 windows; ``max_windows`` keeps the first of
    each part. ``directory``: see :mod:`dynkit.tasks.measured`.
    """
    return load_measured(
        MEASURED,
        directory,
        length=length,
        forecast=forecast,
        split_seed=split_seed,
        max_windows=max_windows,
        verify=verify,
    )


def plane_vibration(
    n_points: int = 4000, *, length: int = 64, forecast: int = 8, drop: float = 0.1, seed: int = 0
) -> TimeSeriesTask:
    """The simulated stand-in, cut by the review's protocol: 10% removed, 50/25/25% chronological
    split, windows of 64 inputs + 8 forecast stamps (the measured series:
    :func:`plane_vibration_measured`).

    All 5 channels are inputs and outputs (one-step-ahead targets and the 8-stamp forecast).
    """
    check.integer(n_points, "n_points", 2)
    check.integer(length, "length", 2)
    check.integer(forecast, "forecast", 1)
    check.real(drop, "drop", low=0.0, high=1.0, high_open=True)
    check.integer(seed, "seed", 0)
    rng = np.random.default_rng(seed)
    _, values = _simulate(n_points, seed=seed)
    # time in stamps (as the review's data, stamps 0..73627): a gap is 1 or more
    t, values = _drop_samples(np.arange(n_points, dtype=np.float64), values, drop, rng)
    parts = _split_series(t, values)
    reference = parts[0][1]
    channels = range(len(CHANNELS))
    train, val, test = (
        _cut_windows(tp, _standardise(vp, reference), channels, channels, length, forecast)
        for tp, vp in parts
    )
    note = (
        "a simulated 4-mass vibrating structure with a shaker (5 channels: voltage, force, 3 "
        "accelerations) "
        "stands in for the measured aircraft vibration data of the review"
    )
    return TimeSeriesTask(
        "plane_vibration",
        train,
        val,
        test,
        CHANNELS,
        CHANNELS,
        note,
        {"n_points": n_points, "length": length, "forecast": forecast, "drop": drop, "seed": seed},
    )
