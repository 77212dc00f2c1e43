"""The ledger's reader: results.json is verified against the shards beside it, and every bad door is
a clear error naming the file (exit non-zero), never a hang or a quiet exit 0."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

import dynkit.experiments as E
from dynkit.cli import main
from dynkit.experiments.ledger import LedgerError

RECORD = Path(__file__).resolve().parents[1] / "analysis" / "results"
NAME = "momres_rings_tied"  # 5 shards, each with its content hash


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "results"
    shutil.copytree(RECORD / NAME, root / NAME, ignore=shutil.ignore_patterns("*.png"))
    return root


def _refused(root: Path, match: str, capsys) -> None:
    path = root / NAME / "results.json"
    with pytest.raises(LedgerError, match=match) as err:
        E.ledger(root, claims=[E.CLAIMS["momres.rings_tied"]])
    assert str(path) in str(err.value)
    assert main(["ledger", "--results", str(root), "--format", "json"]) != 0
    assert str(path) in capsys.readouterr().err


def test_the_results_of_record_verify_against_their_shards(tmp_path):
    (row,) = E.ledger(_copy(tmp_path), claims=[E.CLAIMS["momres.rings_tied"]]).rows
    assert row.n == 5


def test_a_results_file_edited_alone_is_refused(tmp_path, capsys):
    # planted: one seed's metric edited in results.json, the shards' hashes unchanged (before: a row
    # flipped, exit 0)
    root = _copy(tmp_path)
    path = root / NAME / "results.json"
    data = json.loads(path.read_text())
    data["shards"][0]["metrics"]["momentum.test_accuracy"] = 1.0
    path.write_text(json.dumps(data))
    _refused(root, "differs from its shard", capsys)


def test_an_edited_shard_is_refused(tmp_path, capsys):
    root = _copy(tmp_path)
    shard = next((root / NAME / "shards").glob("*/shard.json"))
    record = json.loads(shard.read_text())
    record["metrics"]["momentum.test_accuracy"] = 1.0
    shard.write_text(json.dumps(record))
    _refused(root, "does not match its sha256", capsys)


def test_a_results_file_with_a_shard_left_out_is_refused(tmp_path, capsys):
    root = _copy(tmp_path)
    path = root / NAME / "results.json"
    data = json.loads(path.read_text())
    data["shards"] = data["shards"][:-1]
    path.write_text(json.dumps(data))
    _refused(root, "not in the results file", capsys)


@pytest.mark.parametrize("kind", ["dev_zero", "fifo"])
def test_a_special_file_is_refused_before_reading(tmp_path, kind, capsys):
    root = tmp_path / "results"
    (root / NAME).mkdir(parents=True)
    path = root / NAME / "results.json"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    # a hang before (read_bytes() on a pipe or an endless device); a link out of the folder is
    # refused too
    _refused(root, "regular file" if kind == "fifo" else "must lie in .*/dev/zero", capsys)


@pytest.mark.parametrize(
    "text, match",
    [
        (
            '{"scale": "cpu", "shards": [{"seed": 0, "metrics": {"momentum.test_accuracy": NaN}}]}',
            "NaN is not JSON",
        ),
        (
            '{"scale": "cpu", "shards": [{"seed": 0, "metrics": '
            '{"momentum.test_accuracy": 1e999}}]}',
            "beyond float",
        ),
        (
            '{"experiment": "momres_rings", "scale": "cpu", "shards": []}',
            "of experiment 'momres_rings'",
        ),
    ],
)
def test_a_results_file_that_is_not_what_it_says_is_refused(tmp_path, text, match, capsys):
    root = tmp_path / "results"
    (root / NAME).mkdir(parents=True)
    (root / NAME / "results.json").write_text(text)
    _refused(root, match, capsys)


def test_a_results_file_linking_out_of_its_folder_is_refused(tmp_path, capsys):
    root = tmp_path / "a" / "b" / "results"
    (root / NAME).mkdir(parents=True)
    outside = tmp_path / "forged.json"
    outside.write_text('{"scale": "cpu", "shards": []}')
    (root / NAME / "results.json").symlink_to(Path("..", "..", "..", "..", "forged.json"))
    assert (root / NAME / "results.json").resolve() == outside.resolve()
    _refused(root, "must lie in", capsys)
