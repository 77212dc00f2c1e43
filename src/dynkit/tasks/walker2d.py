"""Walker2D kinematic trajectories (Sect. 3.4.4 of the review), simulated offline with MuJoCo.

The review uses recorded Walker2D kinematics from a pre-trained policy (Lechner & Hasani 2020). Here
gymnasium's ``Walker2d-v5`` (its model ships in the wheel; nothing is downloaded) is driven by a
fixed policy of our own -- a central pattern generator (phase-shifted sines per joint) plus a fixed,
seeded linear feedback on the observation -- with the episode's start randomised by its seed. The 17
observed quantities (joint positions and velocities) form the series. A simulated walker stands in
for the recorded data set.

Needs the optional extra ``dynkit[timeseries]`` (``gymnasium[mujoco]``).
"""

from __future__ import annotations

import numpy as np

from .. import _checks as check
import torch

from .windows import (
    TimeSeriesTask,
    Windows,
    _concat_windows,
    _cut_windows,
    _drop_samples,
    _standardise,
)

__all__ = ["OBSERVATIONS", "ACTIONS", "POLICY_SEED", "PREPROCESSING", "walker2d"]

OBSERVATIONS = 17
ACTIONS = 6
POLICY_SEED = 20240601  # the policy is fixed: the same for every episode and every run


def _mujoco_available() -> bool:
    try:
        import gymnasium  # noqa: F401
        import mujoco  # noqa: F401
    except ImportError:
        return False
    return True


def _policy(observation: np.ndarray, t: float) -> np.ndarray:
    """Our fixed policy: a 1.25 Hz gait pattern with left/right legs in anti-phase plus small
    feedback."""
    rng = np.random.default_rng(POLICY_SEED)
    feedback = 0.05 * rng.standard_normal((ACTIONS, OBSERVATIONS))
    phases = np.array([0.0, 0.6, 1.2, np.pi, np.pi + 0.6, np.pi + 1.2])
    return np.clip(
        0.6 * np.sin(2 * np.pi * 1.25 * t + phases) + np.tanh(feedback @ observation), -1.0, 1.0
    )


def _simulate(n_steps: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """One episode of ``n_steps`` control steps (dt = 0.008 s): times (n,) and observations (n,
    17)."""
    if not _mujoco_available():
        raise ValueError(
            "the Walker2D task needs gymnasium[mujoco]: pip install 'dynkit[timeseries]'"
        )
    import gymnasium as gym

    env = gym.make("Walker2d-v5", terminate_when_unhealthy=False, max_episode_steps=n_steps + 1)
    try:
        obs, _ = env.reset(seed=int(seed))
        dt = float(env.unwrapped.dt)
        observations = []
        for k in range(n_steps):
            observations.append(obs)
            obs, *_ = env.step(_policy(obs, k * dt))
    finally:
        env.close()
    return np.arange(n_steps) * dt, np.asarray(observations, dtype=np.float64)


PREPROCESSING = ("dynkit", "authors")
"""How episodes become windows: dynkit's earlier protocol (:mod:`~dynkit.tasks.windows`: standardised, split
50/25/25, non-overlapping windows, the target the next kept stamp) or the review authors' (:func:`_authors_windows`)."""  # noqa: E501


def _authors_windows(
    observations: np.ndarray, length: int, drop: float, rng: np.random.Generator
) -> Windows:
    """One episode as the review authors' loader cuts it (hedixia/HeavyBallNODE ``odelstm_data.py``,
    ``Walker2dImitationData``): the raw observations (no standardisation), each paired with the one
    a control step after it (the target, kept whatever is dropped); each pair dropped with
    probability ``drop``, a kept one's time the number of steps since the previous kept one; windows
    of ``length`` kept pairs starting every ``length // 4``. The authors' model integrates each
    prediction over that time, the gap *before* its observation: ``ahead`` is it.
    """
    x, y = observations[:-1], observations[1:]
    kept = np.flatnonzero(rng.random(len(x)) >= drop)
    times = np.diff(kept, prepend=-1).astype(
        np.float64
    )  # steps since the previous kept stamp (their ``skip``)
    starts = np.arange(0, len(kept) - length, length // 4)
    if len(starts) == 0:
        raise ValueError(
            f"steps must leave more than length={length} kept stamps per episode, got {len(kept)}"
        )
    idx = starts[:, None] + np.arange(length)[None]
    as_t = lambda a: torch.tensor(np.ascontiguousarray(a), dtype=torch.float32)  # noqa: E731
    gaps, targets = times[idx], y[kept][idx]
    # no forecast in their task: the "future" stamp is the last target (its loss weight is 0), after
    # its interval
    return Windows(
        as_t(x[kept][idx]),
        as_t(gaps),
        as_t(targets),
        as_t(targets[:, -1:]),
        as_t(gaps[:, -1:]),
        ahead=as_t(gaps),
    )


def walker2d(
    n_episodes: int = 8,
    steps: int = 1000,
    *,
    length: int = 64,
    drop: float = 0.1,
    seed: int = 0,
    preprocessing: str = "dynkit",
) -> TimeSeriesTask:
    """Windows of ``length`` (+ 1) stamps of simulated Walker2D episodes, 10% of the samples
    removed.

    ``preprocessing="dynkit"``: episodes are assigned to train/validation/test as 50/25/25% (whole
    episodes; at least one each), standardised with the training part's statistics, cut into
    non-overlapping windows; the target is the input shifted by one stamp (auto-regressive forecast,
    as in the review). ``"authors"``: the review authors' loader (:func:`_authors_windows`), the
    first 15 % of the episodes for testing, the next 10 % for validation, the rest for training (at
    least one each); time in control steps either way (the authors' model divides it by 64: the
    hybrid's ``time_scale``).
    """
    check.integer(n_episodes, "n_episodes", 3)  # train, validation, test
    check.integer(length, "length", 2)
    check.integer(steps, "steps", length + 1)
    check.real(drop, "drop", low=0.0, high=1.0, high_open=True)
    check.integer(seed, "seed", 0)
    check.one_of(preprocessing, "preprocessing", PREPROCESSING)
    if not _mujoco_available():
        raise ValueError(
            "the Walker2D task needs gymnasium[mujoco] (pip install 'dynkit[timeseries]'), "
            "got no gymnasium/mujoco"
        )
    rng = np.random.default_rng(seed)
    note = (
        "simulated Walker2d-v5 (MuJoCo via gymnasium) driven by dynkit's fixed policy stands "
        "in for the "
        "recorded Walker2D kinematics of the review"
    )
    config = {
        "n_episodes": n_episodes,
        "steps": steps,
        "length": length,
        "drop": drop,
        "seed": seed,
    }
    channels = tuple(range(OBSERVATIONS))
    if preprocessing == "authors":
        episodes = [
            _authors_windows(_simulate(steps, seed=seed * 1000 + e)[1], length, drop, rng)
            for e in range(n_episodes)
        ]
        n_test = max(1, int(0.15 * n_episodes))
        n_val = max(1, int(0.25 * n_episodes) - n_test)
        return TimeSeriesTask(
            "walker2d",
            _concat_windows(episodes[n_test + n_val :]),
            _concat_windows(episodes[n_test : n_test + n_val]),
            _concat_windows(episodes[:n_test]),
            channels,
            channels,
            note + " (the authors' preprocessing: raw, overlapping windows)",
            {**config, "preprocessing": preprocessing},
        )
    # time in control steps (one stamp = 0.008 s), the unit of the review's data: a gap is 1 or more
    episodes = [
        _drop_samples(
            np.arange(steps, dtype=np.float64), _simulate(steps, seed=seed * 1000 + e)[1], drop, rng
        )
        for e in range(n_episodes)
    ]
    n_val = n_test = max(1, n_episodes // 4)
    n_train = n_episodes - n_val - n_test
    reference = np.concatenate([v for _, v in episodes[:n_train]])

    def part(chosen):
        return _concat_windows(
            [
                _cut_windows(t, _standardise(v, reference), channels, channels, length, 1)
                for t, v in chosen
            ]
        )

    return TimeSeriesTask(
        "walker2d",
        part(episodes[:n_train]),
        part(episodes[n_train : n_train + n_val]),
        part(episodes[n_train + n_val :]),
        channels,
        channels,
        note,
        config,
    )
