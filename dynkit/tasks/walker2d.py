"""Walker2D kinematic trajectories (Sect. 3.4.4 of the review), simulated offline with MuJoCo.

The review uses recorded Walker2D kinematics from a pre-trained policy (Lechner & Hasani 2020).
Here gymnasium's ``Walker2d-v5`` (its model ships in the wheel; nothing is downloaded) is driven by a
fixed policy of our own -- a central pattern generator (phase-shifted sines per joint) plus a fixed,
seeded linear feedback on the observation -- with the episode's start randomised by its seed. The
17 observed quantities (joint positions and velocities) form the series. A simulated walker stands
in for the recorded data set.

Needs the optional extra ``dynkit[timeseries]`` (``gymnasium[mujoco]``).
"""
from __future__ import annotations

import numpy as np

from .. import _checks as check
from .windows import TimeSeriesTask, _concat, _cut_windows, _drop_samples, _standardise

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
    """Our fixed policy: a 1.25 Hz gait pattern with left/right legs in anti-phase plus small feedback."""
    rng = np.random.default_rng(POLICY_SEED)
    feedback = 0.05 * rng.standard_normal((ACTIONS, OBSERVATIONS))
    phases = np.array([0.0, 0.6, 1.2, np.pi, np.pi + 0.6, np.pi + 1.2])
    return np.clip(0.6 * np.sin(2 * np.pi * 1.25 * t + phases) + np.tanh(feedback @ observation), -1.0, 1.0)


def _simulate(n_steps: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """One episode of ``n_steps`` control steps (dt = 0.008 s): times (n,) and observations (n, 17)."""
    if not _mujoco_available():
        raise ValueError("the Walker2D task needs gymnasium[mujoco]: pip install 'dynkit[timeseries]'")
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


def walker2d(n_episodes: int = 8, steps: int = 1000, *, length: int = 64, drop: float = 0.1,
             seed: int = 0) -> TimeSeriesTask:
    """Windows of ``length`` + 1 stamps of simulated Walker2D episodes, 10% of the samples removed.

    Episodes are assigned to train/validation/test as 50/25/25% (whole episodes; at least one each);
    the target is the input shifted by one stamp (auto-regressive forecast, as in the review).
    """
    check.integer(n_episodes, "n_episodes", 3)  # train, validation, test
    check.integer(length, "length", 2)
    check.integer(steps, "steps", length + 1)
    check.real(drop, "drop", low=0.0, high=1.0, high_open=True)
    check.integer(seed, "seed", 0)
    if not _mujoco_available():
        raise ValueError("the Walker2D task needs gymnasium[mujoco] (pip install 'dynkit[timeseries]'), "
                         "got no gymnasium/mujoco")
    rng = np.random.default_rng(seed)
    # time in control steps (one stamp = 0.008 s), the unit of the review's data: a gap is 1 or more
    episodes = [_drop_samples(np.arange(steps, dtype=np.float64), _simulate(steps, seed=seed * 1000 + e)[1], drop, rng)
                for e in range(n_episodes)]
    n_val = n_test = max(1, n_episodes // 4)
    n_train = n_episodes - n_val - n_test
    reference = np.concatenate([v for _, v in episodes[:n_train]])
    channels = range(OBSERVATIONS)

    def part(chosen):
        return _concat([_cut_windows(t, _standardise(v, reference), channels, channels, length, 1) for t, v in chosen])

    note = ("simulated Walker2d-v5 (MuJoCo via gymnasium) driven by dynkit's fixed policy stands in for the "
            "recorded Walker2D kinematics of the review")
    return TimeSeriesTask("walker2d", part(episodes[:n_train]), part(episodes[n_train:n_train + n_val]),
                          part(episodes[n_train + n_val:]), tuple(channels), tuple(channels), note,
                          {"n_episodes": n_episodes, "steps": steps, "length": length, "drop": drop, "seed": seed})
