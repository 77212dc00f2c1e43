"""The prepared GPU script (analysis/gpu/paper_rows.py) works on the CPU first: its plan, its bad
inputs, its data check, its budget, and a dry run that builds every model, loads every data set
and takes one optimiser step per row, end to end through the same code the device runs."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from analysis.gpu import paper_rows as P
from dynkit.experiments.judging.plans import load_plan as load_experiment_plan
from shared_data import SHARED_DATA

REPO = Path(__file__).resolve().parents[1]
TIME_SERIES = SHARED_DATA / "time-series"
needs_time_series = pytest.mark.skipif(
    not (TIME_SERIES / "silverbox.csv").is_file(), reason=f"no measured series at {TIME_SERIES}"
)


def test_every_row_has_a_complete_recipe_and_the_first_look_of_its_committed_plan():
    _, rows = P.load_plan()
    assert [r.experiment for r in rows][:2] == ["node_blowup", "momseq_copy"]
    for row in rows:
        plan = load_experiment_plan(f"analysis/plans/{row.experiment}.json")
        assert row.seeds == tuple(range(plan.looks[0])), row.experiment


def test_the_plan_prints_rows_seeds_estimates_and_what_does_not_fit(capsys):
    assert P.main(["--plan"]) == 0
    out = capsys.readouterr().out
    _, rows = P.load_plan()
    for row in rows:
        assert row.experiment in out
    # the paper's plane-vibration recipe: hours a seed, never inside the budget
    assert (
        "not run: ode_rnn_plane_vibration seeds [0, 1, 2, 3, 4]: does not fit: 61500 s a seed"
        in out
    )
    # under the priors only momseq_copy's first seed fits 540 s
    assert re.search(r"momseq_copy +seeds \[0, 1, 2, 3, 4\] +360 s a seed +runs \[0\]\n", out)
    assert re.search(
        r"momres_cubic +seeds \[0, 1, 2, 3, 4, 5, 6, 7, 8, 9\] +470 s a seed +runs none\n", out
    )
    assert "DYNKIT_TIME_SERIES_DIR=.device_data/time-series" in out and "$OUT" in out


def _row(name, cost, seeds=(0, 1, 2)):
    return P.Row(name, tuple(seeds), cost, "", (), {}, None, None)


def test_the_schedule_takes_shards_in_order_while_they_fit_and_says_why_not():
    rows = [_row("a", 100), _row("b", 400), _row("c", 30, (0,))]
    shards, left = P.schedule(rows, {"a": 100, "b": 400, "c": 30}, 250)
    assert [(r.experiment, s) for r, s in shards] == [("a", 0), ("a", 1), ("c", 0)]
    assert [(r.experiment, s) for r, s, _ in left] == [("a", 2), ("b", 0), ("b", 1), ("b", 2)]
    assert all("does not fit: " in why for *_, why in left)


@pytest.mark.parametrize("budget", ["0", "-5", "nan", "inf", "ten"])
def test_a_budget_not_above_zero_is_refused_naming_the_option(budget, capsys, tmp_path):
    with pytest.raises(SystemExit) as info:
        P.main(["--budget", budget, "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert info.value.code == 2 and "--budget" in err and "must be a number of seconds > 0" in err
    assert not (tmp_path / "o").exists()


def test_an_unknown_row_is_refused_naming_the_option_and_the_rows(capsys, tmp_path):
    assert P.main(["--rows", "node_blowup", "no_such_row", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "--rows must name rows of the plan" in err and "'no_such_row'" in err
    assert "momseq_copy" in err and not (tmp_path / "o").exists()


def test_a_missing_gpu_is_refused_before_any_folder(monkeypatch, capsys, tmp_path):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    assert P.main(["--device", "cuda", "--out", str(tmp_path / "o")]) == 2
    assert "--device must be a device this machine has" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_missing_measured_series_are_named_with_how_to_bring_them(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("DYNKIT_TIME_SERIES_DIR", str(tmp_path / "empty"))
    assert P.main(["--rows", "node_blowup", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "node_blowup reads silverbox.csv" in err and "$DYNKIT_TIME_SERIES_DIR" in err
    assert "carry" in err and not (tmp_path / "o").exists()


def test_without_matplotlib_the_scripts_figures_are_skipped_and_restored(monkeypatch):
    from dynkit.experiments.momres import momres_cubic

    _, rows = P.load_plan()
    drawn = momres_cubic.plot
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib: ImportError
    with P.figures_where_possible(rows) as skipped:
        assert skipped and momres_cubic.plot is not drawn
        assert momres_cubic.plot({}, "nowhere.png") is None
    assert momres_cubic.plot is drawn


@pytest.mark.slow
@needs_time_series
def test_the_dry_run_builds_every_row_and_takes_one_step_with_the_devices_packages_only(tmp_path):
    """The whole path the device takes, at the paper's model sizes, one optimiser step a row, in a
    python where only the lent machine's packages import (tests/bare_device.py: no matplotlib, no
    pandas, no ray...); about 2 minutes on one shared core."""
    out = tmp_path / "gpu"
    env = {
        **os.environ,
        "PYTHONPATH": f"{REPO / 'src'}{os.pathsep}{REPO}",
        "DYNKIT_TIME_SERIES_DIR": str(TIME_SERIES),
    }
    done = subprocess.run(
        [sys.executable, str(REPO / "tests" / "bare_device.py"), "--dry-run", "--out", str(out)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    record = json.loads((out / P.RUN_FILE).read_text())
    _, rows = P.load_plan()
    dry = [r.experiment for r in rows if r.dry_run is not None]
    assert sorted(record["dry_run"]) == sorted(dry) and len(dry) == 7
    assert record["rows_not_dry_run"] == ["ode_rnn_plane_vibration"]
    assert record["device"] == "cpu" and record["device_name"] == "cpu"
    assert record["figures"] == "skipped: no matplotlib"  # the planted absence took hold
    assert all(math.isfinite(v["seconds"]) for v in record["dry_run"].values())
    # each row's script wrote its JSON results, as a shard does
    for name in dry:
        assert any((out / "dry_run" / name).glob("*.json")), name


def test_calibration_estimates_from_a_short_run_and_the_budget_leaves_out_what_does_not_fit(
    monkeypatch, tmp_path
):
    """momres_cubic's short run (1/50 of its steps; its prior, 470 s, lies within 4 budgets, so
    it is calibrated) planted at 3 s: 150 s for a whole seed exceeds what is left of a 120 s
    budget, so no shard starts and the record says why. (The short run's real seconds depend on
    the machine.)"""
    timed = []

    def planted_run_direct(experiment, config, seed, out, device):
        timed.append((experiment, dict(config.options())["iterations"], seed, device))
        return 3.0

    monkeypatch.setattr(P, "run_direct", planted_run_direct)
    out = tmp_path / "gpu"
    assert (
        P.main(["--rows", "momres_cubic", "--calibrate", "--budget", "120", "--out", str(out)]) == 0
    )
    assert timed == [("momres_cubic", 6, 0, "cpu")]  # the plan's calibration overrides
    record = json.loads((out / P.RUN_FILE).read_text())
    cal = record["calibration"]["momres_cubic"]
    assert cal["factor"] == 50 and cal["estimate_s_per_seed"] == 150.0
    assert record["estimates"]["used"]["momres_cubic"] == 150.0
    assert record["shards"] == [] and [n["seed"] for n in record["not_run"]] == list(range(10))
    assert all("does not fit: 150 s a seed" in n["why"] for n in record["not_run"])
    assert record["ledger_rows_paper_scale"] == [] and record["device_name"] == "cpu"


def test_rows_whose_prior_is_beyond_four_budgets_are_not_calibrated(monkeypatch, tmp_path):
    monkeypatch.setattr(P, "run_direct", lambda *a, **k: pytest.fail("calibrated"))
    out = tmp_path / "gpu"
    argv = ["--rows", "momres_lista", "--calibrate", "--budget", "540", "--out", str(out)]
    assert P.main(argv) == 0  # 80000 s a seed: hours, whatever a short run says
    record = json.loads((out / P.RUN_FILE).read_text())
    assert record["calibration"] == {} and record["shards"] == []


@pytest.mark.slow
def test_shards_run_through_the_runner_resume_and_give_the_paper_scale_ledger_rows(
    monkeypatch, tmp_path
):
    """momres_cubic's paper row with its training planted (seed 1's ResNet diverged, stored "nan"):
    the plan's ten shards through dynkit's runner, the record names them, the second call reuses
    them, and the ledger reads the row at the paper scale as invalid, naming the diverged seed."""
    from dynkit.experiments import registry

    exp = registry.get("momres_cubic")
    calls = []

    def planted(config, *, seed, out, device):
        calls.append(seed)
        resnet = math.nan if seed == 1 else 0.2
        return {"metrics": {"resnet.final_mse": resnet, "momentum.final_mse": 0.01}}

    monkeypatch.setitem(
        registry.EXPERIMENTS,
        "momres_cubic",
        dataclasses.replace(exp, run=planted, module=exp.module or exp.run.__module__),
    )
    out = tmp_path / "gpu"
    argv = ["--rows", "momres_cubic", "--budget", "5000", "--out", str(out)]  # 10 seeds of 470 s
    assert P.main(argv) == 0 and calls == list(range(10))
    assert (out / "COMMAND").read_text() == "python -m analysis.gpu.paper_rows " + " ".join(
        argv
    ) + "\n"
    record = json.loads((out / P.RUN_FILE).read_text())
    assert [(s["seed"], s["status"], s["device_name"]) for s in record["shards"]] == [
        (seed, "done", "cpu") for seed in range(10)
    ]
    assert record["commands"]["momres_cubic"] == (
        f"dynkit run momres_cubic --scale paper --seeds 0,1,2,3,4,5,6,7,8,9 --device cpu --out "
        f"{out / 'momres_cubic'}"
    )
    results = json.loads((out / "momres_cubic" / "results.json").read_text())
    assert (
        results["scale"] == "paper" and results["shards"][1]["metrics"]["resnet.final_mse"] == "nan"
    )
    (row,) = record["ledger_rows_paper_scale"]
    assert row["id"] == "momres.cubic" and row["run_scale"] == "paper" and row["n"] == 10
    assert row["outcome"] == "invalid" and "resnet.final_mse diverged" in row["reason"]
    assert "seed 1" in row["reason"]
    assert P.main(argv) == 0 and calls == list(range(10))  # resumed: every shard reused
    again = json.loads((out / P.RUN_FILE).read_text())
    assert [s["seed"] for s in again["shards"]] == list(range(10))


@pytest.mark.slow
def test_the_budget_stops_cleanly_between_shards_when_a_shard_ran_long(monkeypatch, tmp_path):
    """Two of momres_cubic's shards fit 1000 s at 470 s each; the first (planted) takes 600 s of
    a planted clock, so the second is not started and the record says why; the first stays
    finished."""
    from dynkit.experiments import registry

    exp = registry.get("momres_cubic")
    clock = [0.0]

    def planted(config, *, seed, out, device):
        clock[0] += 600.0
        return {"metrics": {"resnet.final_mse": 0.2, "momentum.final_mse": 0.01}}

    monkeypatch.setitem(
        registry.EXPERIMENTS,
        "momres_cubic",
        dataclasses.replace(exp, run=planted, module=exp.module or exp.run.__module__),
    )
    monkeypatch.setattr(P.time, "monotonic", lambda: clock[0])
    out = tmp_path / "gpu"
    assert P.main(["--rows", "momres_cubic", "--budget", "1000", "--out", str(out)]) == 0
    record = json.loads((out / P.RUN_FILE).read_text())
    assert [s["seed"] for s in record["shards"]] == [0]
    assert {
        "experiment": "momres_cubic",
        "seed": 1,
        "why": "budget: 400 s left, 470 s estimated",
    } in (record["not_run"])
    assert json.loads((out / "momres_cubic" / "results.json").read_text())["seeds"] == [0]
