"""Every reader of dynkit's own files refuses a special file before reading
(dynkit.io.read_regular_bytes).

Each reader meets, where its file should be, a named pipe (opened without a writer, a plain read
blocks for ever), a symbolic link to /dev/zero (a plain read never ends and fills the memory) and a
folder. Each must end at once with a clear error naming what it met; a deadline of a few seconds
(SIGALRM) turns a hang into a failure.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dynkit.cli import main
from test_bad_inputs_doors import deadline as _deadline  # one SIGALRM deadline for every hang test

SECONDS = 5  # each case answers in milliseconds; a hang is one that does not answer at all


def deadline(seconds: int = SECONDS):
    return _deadline(seconds)


SPECIAL = ("fifo", "link-to-dev-zero", "folder")
SAYS = {"fifo": "named pipe", "link-to-dev-zero": "character device", "folder": "folder"}


def plant(path: Path, kind: str) -> Path:
    """A ``kind`` of special file at ``path`` (its folder made)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "link-to-dev-zero":
        path.symlink_to("/dev/zero")
    else:
        path.mkdir()
    return path


def refused(kind: str, call, error=ValueError) -> str:
    """``call()`` raises ``error`` at once, saying what it met; its message."""
    with deadline(), pytest.raises(error) as info:
        call()
    message = str(info.value)
    assert SAYS[kind] in message, message
    return message


@pytest.mark.parametrize("kind", SPECIAL)
def test_a_plan(tmp_path, kind):
    from dynkit.experiments.judging.plans import load_plan

    path = plant(tmp_path / "plan.json", kind)
    assert "plan" in refused(kind, lambda: load_plan(path))


@pytest.mark.parametrize("kind", SPECIAL)
def test_dynkit_run_planned_with_a_special_plan_file(tmp_path, kind, capsys):
    """Was: a hang in plans.py's read_text(); now exit 2 naming --plan, before any folder is
    made."""
    path = plant(tmp_path / "plan.json", kind)
    out = tmp_path / "out"
    with deadline():
        code = main(
            [
                "run",
                "momseq_attention_scaling",
                "--scale",
                "smoke",
                "--planned",
                "--plan",
                str(path),
                "--out",
                str(out),
            ]
        )
    err = capsys.readouterr().err
    assert code == 2 and "--plan" in err and SAYS[kind] in err, err
    assert not out.exists()


@pytest.mark.parametrize("kind", SPECIAL)
def test_a_run_folders_manifest(tmp_path, kind):
    from dynkit.tasks.training import MANIFEST_NAME, CheckpointError, read_manifest

    plant(tmp_path / MANIFEST_NAME, kind)
    refused(kind, lambda: read_manifest(tmp_path), CheckpointError)


@pytest.mark.parametrize("kind", SPECIAL)
def test_a_measured_series(tmp_path, kind):
    from dynkit.tasks.measured import SeriesFile, read_series

    file = SeriesFile("series.csv", ("u", "y"), "0" * 8)
    plant(tmp_path / file.name, kind)
    refused(kind, lambda: read_series(file, tmp_path))


@pytest.mark.parametrize("kind", SPECIAL)
def test_a_sentence_file(tmp_path, kind):
    from dynkit.tasks.text import read_lines

    path = plant(tmp_path / "TREC.train", kind)
    refused(kind, lambda: list(read_lines(path)))


@pytest.mark.parametrize("kind", SPECIAL)
def test_a_reports_json(tmp_path, kind):
    from dynkit.report import statuses

    plant(tmp_path / "report.json", kind)
    refused(kind, lambda: statuses(tmp_path))


@pytest.mark.parametrize("kind", SPECIAL)
def test_a_reports_figure(tmp_path, kind):
    from dynkit.report.blocks import figure

    refused(kind, lambda: figure("f.png", "a figure", lambda path: plant(path, kind), tmp_path))


@pytest.mark.parametrize("kind", SPECIAL)
def test_the_reports_trained_nfe_results(tmp_path, kind, monkeypatch):
    import importlib

    from dynkit.report import sections

    monkeypatch.setattr(
        importlib.import_module("dynkit.experiments.judging.ledger"),
        "default_results_root",
        lambda: tmp_path,
    )
    plant(tmp_path / sections.TRAINED_NFE_EXPERIMENT / "results.json", kind)
    refused(kind, lambda: sections._trained_nfe(("node", "hbnode")))


@pytest.mark.parametrize("kind", SPECIAL)
def test_an_experiments_baselines(tmp_path, kind):
    from dynkit.experiments.judging import baselines

    plant(tmp_path / baselines.BASELINES_FILE, kind)
    refused(kind, lambda: baselines.load(tmp_path))


@pytest.mark.parametrize("kind", SPECIAL)
def test_the_paper_runs_logs(tmp_path, kind, monkeypatch):
    from dynkit.experiments.judging import paper_runs

    monkeypatch.setattr(paper_runs, "LOGS", plant(tmp_path / "hbnode_logs.json", kind))
    paper_runs.paper_runs.cache_clear()
    try:
        refused(kind, paper_runs.paper_runs)
    finally:
        paper_runs.paper_runs.cache_clear()
