"""dk.tasks.run_training dispatches every experiment family and rejects mismatched arguments up
front."""

import json
import os
import stat

import pytest
import torch

import dynkit as dk
import dynkit.io
from shared_data import SENTENCE_DATA, needs_sentence_data

torch.set_num_threads(1)


@needs_sentence_data
def test_text_task_trains_the_named_csaode_variant(tmp_path):
    tiny = dict(d=8, embed_dim=8, train_subset=128, batch_size=64)
    result = dk.tasks.run_training(
        "csaark", "trec", epochs=1, out=tmp_path, quiet=True, data_dir=SENTENCE_DATA, **tiny
    )
    assert 0.0 <= result["test_accuracy"] <= 1.0 and len(result["history"]) == 1
    assert (tmp_path / "checkpoint.pt").exists()


def test_neural_ode_task_is_routed_to_its_trainer(tmp_path):
    result = dk.tasks.run_training(
        "hbnode", "point_cloud", epochs=1, out=tmp_path, quiet=True, tol=1e-3
    )
    assert (
        result["model"] == "hbnode"
        and result["task"] == "point_cloud"
        and len(result["history"]) == 1
    )


@pytest.mark.parametrize(
    "model,task,kwargs,match",
    [
        ("hbnode", "trec", {}, "model for the text task 'trec' must be one of"),
        ("csaark", "trec", {"tol": 1e-3}, "tol does not apply to CSAODE"),
        ("hbnode", "digits", {"data_dir": "x"}, "data_dir applies to the text tasks"),
        ("hbnode", "imagenet", {}, "task must be one of"),
    ],
)
def test_mismatched_arguments_are_rejected(model, task, kwargs, match):
    with pytest.raises(ValueError, match=match):
        dk.tasks.run_training(model, task, **kwargs)


# ---------------------------------------------------------------------------------------------
# The resume matrix (issue 14, section 2): what `--resume` does with the same or other options.
# Fast settings: the point cloud with rk4 (one step over [0, 1]).
FAST = dict(quiet=True, method="rk4", tol=1e-3)


def _run(out, epochs, **kwargs):
    return dk.tasks.run_training(
        kwargs.pop("model", "hbnode"), "point_cloud", epochs=epochs, out=out, **{**FAST, **kwargs}
    )


def numbers(history):
    """The per-epoch metrics without the wall-clock ones (which no two runs share)."""
    return [{k: v for k, v in e.items() if k != "batch_time"} for e in history]


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A run of 2 epochs, and its result.json as written."""
    out = tmp_path_factory.mktemp("finished")
    result = _run(out, 2)
    return out, result, (out / "result.json").read_text()


@pytest.mark.parametrize(
    "change,named",
    [
        ({"seed": 1}, "seed (run: 0, now: 1)"),
        ({"method": "euler"}, "method (run: 'rk4', now: 'euler')"),
        ({"model": "node"}, "model (run: 'hbnode', now: 'node')"),
        ({"tol": 1e-4}, "tol (run: 0.001, now: 0.0001)"),
        ({"lr": 0.05}, "lr (run: 0.01, now: 0.05)"),
    ],
)
def test_resume_with_a_different_option_is_refused_naming_it(finished, change, named):
    out, _, written = finished
    with pytest.raises(ValueError, match="resume refused") as info:
        _run(out, 3, resume=True, **change)
    assert named in str(info.value)
    assert (out / "result.json").read_text() == written  # the run is untouched


def test_resume_with_fewer_epochs_than_done_is_refused(finished):
    out, _, written = finished
    with pytest.raises(ValueError, match="epochs must be >= 2.*got 1"):
        _run(out, 1, resume=True)
    assert (out / "result.json").read_text() == written


def test_resume_of_a_finished_run_reports_it_unchanged(finished):
    out, result, _ = finished
    again = _run(out, 2, resume=True)
    assert again["history"] == result["history"] and again["final"] == result["final"]


def test_resume_with_more_epochs_continues_bit_exactly(finished, tmp_path):
    out, result, _ = finished
    extended = _run(tmp_path, 2)  # the same two epochs, then continued to three
    extended = _run(tmp_path, 3, resume=True)
    uninterrupted = _run(tmp_path / "whole", 3)
    assert numbers(extended["history"][:2]) == numbers(result["history"])
    assert numbers(extended["history"]) == numbers(
        uninterrupted["history"]
    )  # exact: every float equal


def test_a_run_folder_records_its_manifest(finished):
    out, _, _ = finished
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["options"]["model"] == "hbnode" and manifest["options"]["seed"] == 0
    assert (
        "epochs" not in manifest["options"] and manifest["versions"]["torch"] == torch.__version__
    )


def test_fresh_run_into_a_finished_folder_is_refused(finished):
    out, _, written = finished
    with pytest.raises(ValueError, match="already holds a run; pass resume=True"):
        _run(out, 2)
    assert (out / "result.json").read_text() == written


@needs_sentence_data
def test_text_run_resume_with_another_solver_or_seed_is_refused(tmp_path):
    tiny = dict(
        d=8, embed_dim=8, train_subset=64, batch_size=64, quiet=True, data_dir=SENTENCE_DATA
    )
    dk.tasks.run_training("csaark", "trec", epochs=1, out=tmp_path, **tiny)
    for model, seed, named in (
        ("csark", 0, "solver (run: 'ark', now: 'rk')"),
        ("csaark", 2, "seed (run: 0, now: 2)"),
    ):
        with pytest.raises(ValueError, match="resume refused") as info:
            dk.tasks.run_training(
                model, "trec", epochs=2, out=tmp_path, seed=seed, resume=True, **tiny
            )
        assert named in str(info.value)


def test_unwritable_out_fails_before_any_training(tmp_path, monkeypatch):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    monkeypatch.setattr(dk.tasks.node_runs, "load_task", lambda *a, **k: pytest.fail("loaded data"))
    with pytest.raises(ValueError, match=f"out must be a writable folder, got '{blocker / 'run'}'"):
        _run(blocker / "run", 1)


@pytest.mark.parametrize("solver, method", [("torchdiffeq", "ark4"), ("dynkit", "adaptive_heun")])
def test_method_the_solver_lacks_fails_before_any_training(monkeypatch, solver, method):
    monkeypatch.setattr(dk.tasks.node_runs, "load_task", lambda *a, **k: pytest.fail("loaded data"))
    with pytest.raises(
        ValueError,
        match=rf"method must be one of \(.*'dopri5'.*\) with solver='{solver}', "
        rf"got '{method}'",
    ):
        dk.tasks.run_training(
            "hbnode", "point_cloud", epochs=1, method=method, solver=solver, quiet=True
        )


def test_fixed_step_training_takes_one_step_over_the_interval_with_both_solvers():
    # dynkit train --method rk4: one RK4 step over [0, 1] (torchdiffeq's fixed-step default),
    # recorded; 4 evaluations forward for every batch.
    runs = {
        s: dk.tasks.run_training(
            "node", "point_cloud", epochs=1, method="rk4", solver=s, quiet=True
        )
        for s in ("dynkit", "torchdiffeq")
    }
    assert (
        runs["dynkit"]["config"]["step_size"] == 1.0
        and "step_size" not in runs["torchdiffeq"]["config"]
    )
    assert all(r["final"]["forward_nfe"] == 4 for r in runs.values())


def test_solver_is_refused_for_the_csaode_models():
    with pytest.raises(
        ValueError, match="solver must be 'dynkit' for the CSAODE models.*got 'torchdiffeq'"
    ):
        dk.tasks.run_training("csark", "trec", solver="torchdiffeq")


def test_cli_train_refuses_a_malicious_checkpoint_without_running_it(tmp_path, capsys):
    from dynkit.cli import main

    marker = tmp_path / "marker"
    out = tmp_path / "run"
    out.mkdir()

    class Payload:
        def __reduce__(self):
            return exec, (f"open({str(marker)!r}, 'w').write('ran')",)

    torch.save({"format": "dynkit-checkpoint/2", "model": Payload()}, out / "checkpoint.pt")
    code = main(
        [
            "train",
            "--model",
            "hbnode",
            "--task",
            "point_cloud",
            "--out",
            str(out),
            "--resume",
            "--epochs",
            "1",
            "--method",
            "rk4",
            "--quiet",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and "refused" in err and str(out / "checkpoint.pt") in err
    assert not marker.exists()


# ---------------------------------------------------------------------------------------------
# files (issue 14, section 3)


@pytest.mark.parametrize("umask,expected", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_atomic_write_honours_the_umask(tmp_path, umask, expected):
    old = os.umask(umask)
    try:
        path = dk.io.write_json(tmp_path / "r.json", {"a": 1})
        reference = tmp_path / "plain"
        reference.write_text("x")  # what open() gives under the same umask
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == expected == stat.S_IMODE(reference.stat().st_mode)


def test_atomic_write_keeps_the_mode_of_the_file_it_replaces(tmp_path):
    path = tmp_path / "r.json"
    path.write_text("{}")
    path.chmod(0o640)
    dk.io.write_json(path, {"a": 1})
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_write_errors_name_the_users_path_and_option_not_the_temporary(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    with pytest.raises(
        ValueError
    ) as info:  # a parent that is a file: refused before any write (was "File exists")
        dk.io.write_json(blocker / "r.json", {"a": 1}, option="--json")
    assert (
        f"--json must be a path inside a folder, got '{blocker / 'r.json'}', but '{blocker}' "
        f"is a regular file, "
        "not a folder" == str(info.value)
    )

    def disk_full(fh):
        fh.write("half")
        raise OSError(28, "No space left on device", fh.name)

    with pytest.raises(OSError) as info:
        dk.io.atomic_write(tmp_path / "r.json", disk_full, option="out")
    assert f"out '{tmp_path / 'r.json'}'" in str(info.value) and ".tmp" not in str(info.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file"]  # no temporary, no half file
