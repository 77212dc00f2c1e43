"""Injected faults that run in CI in seconds (issue 25, section 4): a ``run`` killed mid-sweep
resumes to the results of an uninterrupted one; a full disk (a small file-size limit,
``RLIMIT_FSIZE``, in a subprocess) ends in one clear line naming the file and the OS reason, leaves
no partial file, and the run then resumes.

``RLIMIT_FSIZE`` makes a write past the limit fail with ``EFBIG`` ("File too large") instead of
``ENOSPC`` ("No space left on device"): the same path through the code, a different ``strerror``;
SIGXFSZ is ignored so that the write fails instead of killing the process.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from test_shards import ROOT, computed, slow_toy, start_runners  # noqa: E402

EXPECTED = {
    f"{p}.value": [10 * s + ord(p) for s in (0, 1)] for p in "abc"
}  # slow_toy's closed form
ALL = {f"seed{s}-point={p}" for s in (0, 1) for p in "abc"}


def _file_size_limit(limit: int):
    def apply():  # in the child, before exec: the limit and an ignored SIGXFSZ survive exec
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

    return apply


def _values(out: Path) -> dict:
    results = json.loads((out / "results.json").read_text())
    return {m: s["values"] for m, s in results["metrics"].items()}


def _leftovers(out: Path) -> list[Path]:
    return [p for p in out.rglob("*") if p.name.endswith(".tmp")]


def test_a_run_killed_mid_sweep_resumes_to_the_uninterrupted_results(tmp_path):
    tmp, env = slow_toy(tmp_path)
    out = tmp / "out"
    (victim,) = start_runners(tmp, env, 1, out, SLOW_TOY_SLEEP="1.0")
    second = out / "shards" / "seed0-point=b" / "shard.json"
    deadline = time.time() + 120

    def third_started() -> bool:
        return second.exists() and sum(computed(tmp).values()) > len(
            list(out.glob("shards/*/shard.json"))
        )

    while not third_started() and time.time() < deadline and victim.poll() is None:
        time.sleep(0.02)
    # SIGKILL: no cleanup, mid-way through the third shard (on a loaded machine, wait for its start)
    victim.kill()
    victim.communicate()
    assert second.exists(), "the run did not get through two shards"
    done_before = {p.parent.name for p in out.glob("shards/*/shard.json")}
    started_before = computed(tmp)
    assert done_before < ALL
    (tmp / "log").unlink()
    (resumed,) = start_runners(tmp, env, 1, out, SLOW_TOY_SLEEP="0")
    stdout, stderr = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, stderr[-2000:]
    assert set(computed(tmp)) == ALL - done_before and set(computed(tmp).values()) == {
        1
    }  # the rest, once
    assert stdout.count(": reused") == len(done_before)
    assert _values(out) == EXPECTED and not _leftovers(out)
    assert (
        "recomputing" not in stdout
    )  # the killed shard left no shard.json, hence nothing to recompute
    assert sum(started_before.values()) == len(done_before) + 1


DISK_FULL_RUN = """
import sys
sys.path.insert(0, sys.argv[1])
import slow_toy  # registers the experiment
from dynkit.cli import main
sys.exit(main(["run", "slow_toy", "--scale", "smoke", "--seeds", "0,1", "--out", sys.argv[2], "--quiet"]))
"""  # noqa: E501


def test_a_full_disk_during_run_names_the_file_leaves_nothing_partial_and_resumes(tmp_path):
    tmp, env = slow_toy(tmp_path)
    (tmp / "full_run.py").write_text(DISK_FULL_RUN)
    out = tmp / "out"
    env = {**env, "SLOW_TOY_SLEEP": "0", "PYTHONDONTWRITEBYTECODE": "1"}
    full = subprocess.run(
        [sys.executable, str(tmp / "full_run.py"), str(tmp), str(out)],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=_file_size_limit(600),
    )
    last = full.stderr.strip().splitlines()[-1]
    assert full.returncode == 2 and "Traceback" not in full.stderr, full.stderr[-2000:]
    assert (
        last.startswith("dynkit run: error: OSError")
        and "cannot write" in last
        # the first file past the limit: the work identity (written before training) or the record
        and ("shard.json" in last or "identity.json" in last)
    )
    assert (
        os.strerror(27) in last
    )  # EFBIG, what a file-size limit gives ("No space left on device" on a full disk)
    assert not list(out.glob("shards/*/shard.json")) and not _leftovers(out)
    resumed = subprocess.run(
        [sys.executable, str(tmp / "full_run.py"), str(tmp), str(out)],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert _values(out) == EXPECTED


CHECKPOINT = """
import sys, torch
from dynkit.tasks.training import History, save_checkpoint
model = torch.nn.Linear(100, 100)  # 40 kB of weights: past the limit
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
save_checkpoint(sys.argv[1], model, optimizer, 1, History())
"""


def test_a_full_disk_while_checkpointing_says_which_file_and_why(tmp_path):
    script = tmp_path / "checkpoint.py"
    script.write_text(CHECKPOINT)
    path = tmp_path / "run" / "checkpoint.pt"
    env = {
        **os.environ,
        "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    done = subprocess.run(
        [sys.executable, str(script), str(path)],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=_file_size_limit(16_000),
    )
    last = done.stderr.strip().splitlines()[-1]
    # was: RuntimeError: [enforce fail at inline_container.cc:672] . unexpected pos 1600 vs 1494
    assert (
        last == f"OSError: [Errno 27] cannot write checkpoint {str(path)!r}: {os.strerror(27)}"
    ), last
    assert list(path.parent.iterdir()) == []  # neither the checkpoint nor its temporary


@pytest.mark.slow
def test_a_full_disk_during_train_ends_in_one_line_naming_the_checkpoint(tmp_path):
    out = tmp_path / "run"
    env = {
        **os.environ,
        "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}",
        "PYTHONDONTWRITEBYTECODE": "1",
        "OMP_NUM_THREADS": "1",
    }
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "dynkit.cli",
            "train",
            "--model",
            "hbnode",
            "--task",
            "point_cloud",
            "--epochs",
            "1",
            "--out",
            str(out),
            "--quiet",
        ],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        preexec_fn=_file_size_limit(16_000),
    )
    last = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"cannot write checkpoint {str(out / 'checkpoint.pt')!r}: {os.strerror(27)}" in last, (
        last
    )
    assert not (out / "checkpoint.pt").exists() and not _leftovers(out)
