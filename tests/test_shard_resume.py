"""A long shard resumes from its own checkpoints after an interruption, never from another
identity's.

The runner hands each shard ``out / WORK_DIR`` for resumable state. Planted: an interrupted run (it
resumes and does only the steps left), a work folder of another config, one without an identity, one
that is a link (each emptied first, so the run starts from step 0); then the hybrids' training
through it: an interrupted 3-epoch run continues to the same losses as an uninterrupted one.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

import dynkit.experiments as E
from dynkit.experiments.registry import WORK_DIR, Experiment
from dynkit.experiments.runner import WORK_IDENTITY

STEPS_DONE: list[int] = []  # the steps each run did itself
STOP_AFTER: list[int] = []  # planted interruption: raise after this many steps of the run


@dataclass(frozen=True)
class CountConfig:
    points: tuple[str, ...] = ("a",)
    point: str = "a"
    steps: int = 5


def count_run(config: CountConfig, *, seed: int, out: Path, device: str) -> dict:
    """Counts to ``steps``, one checkpoint per step in ``out / WORK_DIR``; each step 'costs' 1 s."""
    progress = out / WORK_DIR / "progress.json"
    done = json.loads(progress.read_text())["done"] if progress.exists() else 0
    start = done
    for _ in range(done, config.steps):
        if STOP_AFTER and done - start == STOP_AFTER[0]:
            raise KeyboardInterrupt("planted interruption")
        done += 1
        progress.write_text(json.dumps({"done": done}))
    STEPS_DONE.append(done - start)
    return {"metrics": {"a.count": float(done)}, "seconds_before": float(start)}


@pytest.fixture
def counter(monkeypatch):
    STEPS_DONE.clear()
    STOP_AFTER.clear()
    exp = Experiment(
        "count_shards",
        count_run,
        {"smoke": CountConfig(), "cpu": CountConfig(steps=7), "full": CountConfig(steps=9)},
        points=lambda c: [{"point": p} for p in c.points],
    )
    monkeypatch.setitem(E.EXPERIMENTS, "count_shards", exp)
    return exp


def _run(out: Path, scale: str = "smoke") -> dict:
    return E.run("count_shards", scale=scale, seeds=(0,), out=out, notice=lambda _: None)


def _work(out: Path) -> Path:
    (folder,) = [p.parent for p in out.rglob(WORK_IDENTITY)] or [None]
    return folder


def test_an_interrupted_shard_resumes_from_its_work_folder_and_counts_the_earlier_time(
    counter, tmp_path
):
    STOP_AFTER.append(2)
    with pytest.raises(KeyboardInterrupt):
        _run(tmp_path)
    work = _work(tmp_path)
    assert json.loads((work / "progress.json").read_text()) == {"done": 2}
    STOP_AFTER.clear()
    res = _run(tmp_path)
    assert STEPS_DONE == [3]  # only the steps left
    (record,) = [json.loads(p.read_text()) for p in tmp_path.rglob("shard.json")]
    assert record["metrics"]["a.count"] == 5.0
    assert record["seconds"] >= 2.0  # the 2 'seconds' of the interrupted run count
    assert not work.exists()  # the record stands for the run: the checkpoints are gone
    assert res is not None


@pytest.mark.parametrize("plant", ["other_config", "no_identity", "unreadable_identity", "a_link"])
def test_a_work_folder_it_cannot_verify_as_its_own_is_emptied_before_the_run(
    counter, tmp_path, plant
):
    """The scales of one seed and point share a shard folder: the cpu run's state is another
    config's."""
    STOP_AFTER.append(2)
    scale = "cpu" if plant == "other_config" else "smoke"
    with pytest.raises(KeyboardInterrupt):
        _run(tmp_path, scale=scale)
    work = _work(tmp_path)
    STOP_AFTER.clear()
    elsewhere = tmp_path / "elsewhere"
    if plant == "no_identity":
        (work / WORK_IDENTITY).unlink()
    elif plant == "unreadable_identity":
        (work / WORK_IDENTITY).write_bytes(b"\xff\xfe not json")
    elif plant == "a_link":
        work.rename(elsewhere)
        os.symlink(elsewhere, work)
    _run(tmp_path, scale="smoke")
    assert STEPS_DONE == [5]  # from step 0: nothing resumed from state it cannot verify
    if plant == "a_link":
        assert (elsewhere / "progress.json").exists()  # the link was removed, not its target


def test_the_planted_state_is_resumed_when_it_is_the_shard_s_own(counter, tmp_path):
    """The test above is not vacuous: the same interruption under the same identity is resumed."""
    STOP_AFTER.append(2)
    with pytest.raises(KeyboardInterrupt):
        _run(tmp_path, scale="smoke")
    STOP_AFTER.clear()
    _run(tmp_path, scale="smoke")
    assert STEPS_DONE == [3]


def _tiny_task():
    from dynkit.tasks.silverbox import silverbox_windows

    return silverbox_windows(300, length=8)


def _model():
    from dynkit.models.ode_rnn import ODERNN

    torch.manual_seed(0)
    return ODERNN("hbnode", 2, 1, 3, method="rk4", step_size=1.0)


def test_hybrid_training_interrupted_after_an_epoch_continues_to_the_same_losses(
    tmp_path, monkeypatch
):
    """Same code path twice, so the losses agree to float32 rounding of the same operations (rtol
    1e-6: a resume that restarted the data order, the schedule or Adam's moments moves them by >
    1e-3)."""
    from dynkit.tasks import time_series as T
    from dynkit.tasks import training

    task = _tiny_task()
    options = dict(epochs=3, batch_size=32, lr=1e-2, validate=False, lr_schedule="cosine")
    whole = T.train_hybrid(_model(), task, **options)["history"]

    real_epoch_generator = training.epoch_generator

    def stop_at_epoch_2(seed, epoch):
        if epoch == 2:
            raise KeyboardInterrupt("planted interruption")
        return real_epoch_generator(seed, epoch)

    monkeypatch.setattr(training, "epoch_generator", stop_at_epoch_2)
    with pytest.raises(KeyboardInterrupt):
        T.train_hybrid(_model(), task, checkpoint_dir=tmp_path, **options)
    monkeypatch.setattr(training, "epoch_generator", real_epoch_generator)
    resumed = T.train_hybrid(_model(), task, checkpoint_dir=tmp_path, **options)
    assert resumed["resumed_epochs"] == 2
    losses = [h["train_loss"] for h in resumed["history"]]
    assert all(
        math.isclose(a, h["train_loss"], rel_tol=1e-6) for a, h in zip(losses, whole, strict=True)
    ), (losses, [h["train_loss"] for h in whole])
    with pytest.raises(ValueError, match="batch_size"):  # another option: refused, named
        T.train_hybrid(_model(), task, checkpoint_dir=tmp_path, **{**options, "batch_size": 16})


def test_numpy_scalars_in_a_checkpoint_become_python_numbers():
    """np.float64 is a float subclass, and pickled it needs numpy's global: weights_only refuses
    it."""
    import numpy as np

    from dynkit.tasks.training import plain

    out = plain({"mse": np.float64(0.5), "n": np.int64(3), "xs": [np.float32(1.0)]})
    assert [type(v) for v in (out["mse"], out["n"], out["xs"][0])] == [float, int, float]
