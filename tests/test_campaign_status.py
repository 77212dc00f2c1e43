"""``python -m analysis.campaign status``: each shard sorted into done, running, stale or left,
read-only."""

from __future__ import annotations

import json
import multiprocessing
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

import dynkit.experiments as E
from analysis import campaign
from dynkit.experiments.registry import Experiment


@dataclass(frozen=True)
class Cfg:
    points: tuple[str, ...] = ("a", "b")
    point: str = "a"


def _run(config: Cfg, *, seed: int, out: Path, device: str) -> dict:
    return {"metrics": {"value": seed + (config.point == "b")}}


@pytest.fixture
def camp(monkeypatch, tmp_path):
    exp = Experiment(
        "camp_toy",
        _run,
        {"smoke": Cfg(), "cpu": Cfg(), "full": Cfg()},
        points=lambda c: [{"point": p} for p in c.points],
    )
    monkeypatch.setitem(E.EXPERIMENTS, "camp_toy", exp)
    monkeypatch.setattr(campaign, "PLANS", tmp_path / "plans")
    return tmp_path / "out"


def _hold(folder: str, ready, release) -> None:  # a runner holding a shard's claim
    import fcntl

    fd = os.open(os.path.join(folder, ".claim"), os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    ready.set()
    release.wait(30)


def test_status_sorts_done_running_stale_and_left(camp):
    E.run("camp_toy", scale="smoke", seeds=(0, 1), out=camp)
    before = {p: p.read_bytes() for p in camp.rglob("*") if p.is_file() and p.name != ".claim"}
    shard = camp / "shards" / "seed1-point=b" / "shard.json"
    record = json.loads(shard.read_text())
    record["metrics"]["value"] = 99.0  # edited: its sha256 no longer matches
    shard.write_text(json.dumps(record))
    (camp / "shards" / "seed2-point=a").mkdir(parents=True)
    ctx = multiprocessing.get_context("spawn")
    ready, release = ctx.Event(), ctx.Event()
    holder = ctx.Process(
        target=_hold, args=(str(camp / "shards" / "seed2-point=a"), ready, release)
    )
    holder.start()
    try:
        assert ready.wait(60)
        state = campaign.status("camp_toy", "smoke", (0, 1, 2), camp)
    finally:
        release.set()
        holder.join(30)
    assert sorted(state.done) == ["seed0-point=a", "seed0-point=b", "seed1-point=a"]
    assert state.running == ["seed2-point=a"]
    assert list(state.stale) == ["seed1-point=b"] and "sha256" in state.stale["seed1-point=b"]
    assert state.left == ["seed2-point=b"]
    assert state.total == 6
    # the estimate is the done shards' mean time times the shards not done (three of six)
    assert state.core_hours_left == pytest.approx(state.core_hours_done, rel=1e-12)
    text = "\n".join(state.lines())
    assert "done        3" in text and "left        1" in text
    after = {p: p.read_bytes() for p in camp.rglob("*") if p.is_file() and p.name != ".claim"}
    assert {p: b for p, b in after.items() if p != shard} == {
        p: b for p, b in before.items() if p != shard
    }


def test_status_takes_the_plans_seeds_and_refuses_without_any(camp):
    with pytest.raises(ValueError, match="seeds must be given"):
        campaign.status("camp_toy", "smoke", out=camp)
    (camp.parent / "plans").mkdir()
    (camp.parent / "plans" / "camp_toy.json").write_text(
        json.dumps({"experiment": "camp_toy", "looks": [2]})
    )
    state = campaign.status("camp_toy", "smoke", out=camp)
    assert state.left == ["seed0-point=a", "seed0-point=b", "seed1-point=a", "seed1-point=b"]
    assert state.core_hours_left is None and "unknown" in state.lines()[-1]


def test_status_cli_names_an_unknown_experiment(capsys):
    with pytest.raises(SystemExit) as exit_info:
        campaign.main(["status", "no_such_experiment", "--seeds", "0"])
    assert exit_info.value.code == 2 and "no_such_experiment" in capsys.readouterr().err


def test_status_counts_a_shard_s_own_resumable_state_and_no_other(camp):
    from dynkit.experiments.runner import WORK_IDENTITY, own_work_folder, shards

    own, foreign = shards("camp_toy", "smoke", (0,), camp)  # seed 0's two config points
    for shard in (own, foreign):
        shard.folder.mkdir(parents=True)
        work = own_work_folder(shard)  # the runner's: marked with the shard's identity
        (work / "checkpoints").mkdir()
        for name in ("a.json", "b.json"):
            (work / "checkpoints" / name).write_text("{}")
    # planted: the foreign folder's mark names another config, so a rerun would empty it
    mark = foreign.folder / "work" / WORK_IDENTITY
    identity = json.loads(mark.read_text())
    mark.write_text(json.dumps({**identity, "config": {"points": ["z"], "point": "z"}}))
    state = campaign.status("camp_toy", "smoke", (0, 1), camp)
    assert state.resumable == [own.key] and state.kept == {own.key: 2}
    assert foreign.key in state.left and state.total == 4
    assert f"resumable   1   {own.key} (2 files kept)" in "\n".join(state.lines())
