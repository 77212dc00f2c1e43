"""The time-series tasks: irregular windows, the simulated plane vibration, Walker2D (MuJoCo) and
Silverbox."""

import numpy as np
import pytest
import torch

from dynkit.tasks import plane_vibration as pv
from dynkit.tasks import walker2d as wk
from dynkit.tasks.silverbox import silverbox_windows
from dynkit.tasks.time_series import load_time_series
from dynkit.tasks.windows import _cut_windows, _drop_samples, _split_series, _standardise


def test_drop_samples_removes_the_fraction_and_keeps_time_order():
    t = np.arange(100.0)
    kept_t, kept_v = _drop_samples(t, t[:, None] * 2, 0.1, np.random.default_rng(0))
    assert len(kept_t) == 90 and np.all(np.diff(kept_t) > 0)
    np.testing.assert_array_equal(kept_v[:, 0], 2 * kept_t)  # values travel with their times
    with pytest.raises(ValueError, match=r"drop must be a finite number in \[0.0, 1.0\), got 1.0"):
        _drop_samples(t, t, 1.0, np.random.default_rng(0))


def test_windows_shift_targets_by_one_stamp_and_forecast_the_next_ones():
    # a ramp with known values: every quantity of a window can be written down by hand
    t = np.array([0, 1, 3, 4, 5, 7, 8, 9, 11, 12, 13, 14], dtype=float)
    values = np.column_stack([t, 10 * t])
    w = _cut_windows(t, values, inputs=(0, 1), outputs=(1,), length=4, forecast=2)
    assert len(w) == 2  # 12 stamps // 6
    np.testing.assert_array_equal(w.x[0, :, 0], [0, 1, 3, 4])
    np.testing.assert_array_equal(w.gaps[0], [0, 1, 2, 1])
    np.testing.assert_array_equal(w.targets[0, :, 0], [10, 30, 40, 50])
    np.testing.assert_array_equal(w.future[1, :, 0], [130, 140])
    np.testing.assert_array_equal(w.future_gaps[1], [1, 1])
    with pytest.raises(
        ValueError, match=r"length \+ forecast must be at most the 5 samples.*got 4 \+ 2"
    ):
        _cut_windows(t[:5], values[:5], (0,), (0,), 4, 2)


def test_split_is_chronological_and_standardise_uses_the_reference():
    t = np.arange(20.0)
    parts = _split_series(t, t[:, None])
    assert [len(p[0]) for p in parts] == [10, 5, 5] and parts[1][0][0] == 10
    z = _standardise(parts[2][1], parts[0][1])
    np.testing.assert_allclose(z[:, 0], (parts[2][1][:, 0] - 4.5) / np.std(np.arange(10.0)))


def test_plane_vibration_force_follows_the_shaker_lag():
    # independent check of the simulation: tau dF/dt = g u - F, dF/dt by central differences (dt =
    # 0.1, O(dt^2) error on a smooth force: 2% of the force's scale is a safe bound)
    t, values = pv._simulate(600, 0.1, seed=1)
    u, force = values[:, 0], values[:, 1]
    dfdt = (force[2:] - force[:-2]) / 0.2
    residual = pv.SHAKER_LAG * dfdt - (pv.SHAKER_GAIN * u[1:-1] - force[1:-1])
    assert np.max(np.abs(residual)) < 0.02 * np.max(np.abs(force))
    assert values.shape == (600, 5) and np.all(
        np.std(values[100:, 2:], axis=0) > 0
    )  # the structure moves


def test_plane_vibration_protocol():
    task = pv.plane_vibration(900, length=16, forecast=8, seed=0)
    assert task.train.x.shape[1:] == (16, 5) and task.train.future.shape[1:] == (8, 5)
    assert (
        float(task.train.gaps[:, 1:].min()) >= 1 and float(task.train.gaps.max()) >= 2
    )  # irregular
    again = pv.plane_vibration(900, length=16, forecast=8, seed=0)
    torch.testing.assert_close(task.test.x, again.test.x, rtol=0, atol=0)  # seeded


def test_walker2d_simulates_mujoco_with_our_fixed_policy():
    assert wk._mujoco_available(), (
        "gymnasium[mujoco] is installed by `make install` (extra 'timeseries')"
    )
    t, obs = wk._simulate(50, seed=3)
    assert obs.shape == (50, 17) and np.all(np.isfinite(obs))
    np.testing.assert_allclose(np.diff(t), 0.008)
    _, again = wk._simulate(50, seed=3)
    _, other = wk._simulate(50, seed=4)
    np.testing.assert_array_equal(obs, again)
    assert not np.allclose(obs, other)
    assert np.all(np.abs(wk._policy(obs[10], 0.3)) <= 1.0)
    task = wk.walker2d(n_episodes=3, steps=80, length=16)
    assert task.train.x.shape[1:] == (16, 17)
    torch.testing.assert_close(task.train.targets[:, :-1], task.train.x[:, 1:], rtol=0, atol=0)


def test_walker2d_the_authors_loader_pairs_each_raw_observation_with_the_next_step():
    # the authors' odelstm_data.py loop (perturb_sequences, align_sequences) rebuilt step by step
    # from the raw episodes and the same uniform draws: a kept observation's time counts the steps
    # since the previous kept one, its target is the raw observation a step later (kept or not), no
    # standardisation, windows of 16 start every 4 (exact equality: the same float32 values are
    # copied, nothing is computed)
    task = wk.walker2d(n_episodes=7, steps=200, length=16, seed=5, preprocessing="authors")
    rng = np.random.default_rng(5)
    expected = []
    for e in range(7):
        obs = wk._simulate(200, seed=5 * 1000 + e)[1].astype(np.float32)
        x, y, u = obs[:-1], obs[1:], rng.random(199)
        xs, ts, ys, skip = [], [], [], 0
        for t in range(len(x)):
            skip += 1
            if u[t] >= 0.1:  # kept with probability 0.9
                xs.append(x[t]), ts.append(skip), ys.append(y[t])
                skip = 0
        expected.append(
            [(xs[s : s + 16], ts[s : s + 16], ys[s : s + 16]) for s in range(0, len(ys) - 16, 4)]
        )
    # 15 % test (1 episode), 10 % validation (int(0.25 * 7) - 1 = 0, at least 1), the rest training
    # (5)
    for split, episodes in (
        ("test", expected[:1]),
        ("val", expected[1:2]),
        ("train", expected[2:]),
    ):
        w, windows = getattr(task, split), [win for episode in episodes for win in episode]
        assert len(w) == len(windows), split
        np.testing.assert_array_equal(w.x.numpy(), np.array([win[0] for win in windows]))
        np.testing.assert_array_equal(
            w.gaps.numpy(), np.array([win[1] for win in windows], dtype=np.float32)
        )
        np.testing.assert_array_equal(w.targets.numpy(), np.array([win[2] for win in windows]))
        torch.testing.assert_close(
            w.ahead, w.gaps, rtol=0, atol=0
        )  # their model integrates the gap before
    assert (
        0.05 < float((task.train.gaps > 1).float().mean()) < 0.15
    )  # about 10 % of the stamps dropped
    # planted: dynkit's earlier loader standardises and cuts non-overlapping windows: not these
    ours = wk.walker2d(n_episodes=7, steps=200, length=16, seed=5)
    assert ours.train.ahead is None and ours.train.x.shape != task.train.x.shape
    with pytest.raises(ValueError, match="preprocessing must be one of"):
        wk.walker2d(n_episodes=3, steps=100, preprocessing="theirs")


def test_walker2d_without_mujoco_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(wk, "_mujoco_available", lambda: False)
    for build in (lambda: wk._simulate(10), wk.walker2d):
        with pytest.raises(ValueError, match=r"gymnasium\[mujoco\]"):
            build()
    with pytest.raises(ValueError, match="n_episodes must be an integer >= 3, got 2"):
        wk.walker2d(n_episodes=2)


def test_silverbox_windows_predict_the_next_output_voltage():
    task = silverbox_windows(400, length=16, seed=0)
    assert task.train.x.shape[2] == 2 and task.train.targets.shape[2] == 1
    torch.testing.assert_close(
        task.train.targets[:, :-1, 0], task.train.x[:, 1:, 1], rtol=0, atol=0
    )
    with pytest.raises(ValueError, match="name must be one of"):
        load_time_series("sunspots")


def test_train_hybrid_moves_the_windows_to_the_models_device():
    # the loaders build windows on the CPU; a model on another device (a lent GPU) trains on copies
    # there. The meta device stands in for CUDA on CI: every tensor of every split must land on it,
    # and nothing moves when the windows are already on the model's device
    from dynkit.tasks.time_series import _on_device

    task = load_time_series("silverbox", max_windows=2)
    assert _on_device(task, torch.device("cpu")) is task
    moved = _on_device(task, torch.device("meta"))
    for split in ("train", "val", "test"):
        for name in ("x", "gaps", "targets", "future", "future_gaps"):
            assert getattr(getattr(moved, split), name).device.type == "meta", (split, name)
    assert task.train.x.device.type == "cpu"  # the cached task itself is left as it was
