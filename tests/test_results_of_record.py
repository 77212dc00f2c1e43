"""The results of record (issue 21 §4): every ``analysis/results/*/COMMAND`` names something that
still runs."""

from __future__ import annotations

import importlib.util
import re
import shlex
from pathlib import Path

import pytest

import dynkit.experiments as E

RESULTS = Path(__file__).resolve().parents[1] / "analysis" / "results"


def command_problems(text: str, folder: str) -> list[str]:
    """What in a COMMAND file no longer runs: an unknown ``dynkit run NAME``, a
    ``python -m MODULE`` that does not import, a run writing elsewhere than its own folder, or no
    command at all."""
    problems, commands = [], 0
    for line in text.splitlines():
        line = line.split(" #")[0].strip()
        if not line or line.startswith("#"):
            continue
        words = shlex.split(line)
        for i, w in enumerate(words):
            if w == "-m" and i + 1 < len(words):
                commands += 1
                if importlib.util.find_spec(words[i + 1]) is None:
                    problems.append(f"module {words[i + 1]} does not exist")
            if w == "run" and i > 0 and words[i - 1].endswith("dynkit") and i + 1 < len(words):
                commands += 1
                if words[i + 1] not in E.EXPERIMENTS:
                    problems.append(f"experiment {words[i + 1]} is not registered")
                if (
                    "--out" in words
                    and words[words.index("--out") + 1].rstrip("/") != f"analysis/results/{folder}"
                ):
                    problems.append(
                        f"writes to {words[words.index('--out') + 1]}, not its own folder"
                    )
    if not commands:
        problems.append("no command")
    return problems


@pytest.mark.parametrize("folder", sorted(p.name for p in RESULTS.iterdir() if p.is_dir()))
def test_every_result_of_record_has_a_command_that_still_runs(folder):
    command = RESULTS / folder / "COMMAND"
    assert command.exists(), f"{folder} has no COMMAND"
    assert command_problems(command.read_text(), folder) == []


def test_the_command_check_catches_stale_commands():
    assert command_problems(
        "PYTHONPATH=$PWD python -m analysis.node_nfe_tolerance --out x", "x"
    ) == ["module analysis.node_nfe_tolerance does not exist"]
    assert command_problems("dynkit run no_such_experiment --out analysis/results/x", "x") == [
        "experiment no_such_experiment is not registered"
    ]
    assert command_problems("dynkit run momres_cubic --out analysis/results/y", "x") == [
        "writes to analysis/results/y, not its own folder"
    ]
    assert command_problems("# only a comment", "x") == ["no command"]
    assert (
        command_problems("OMP_NUM_THREADS=1 dynkit run momres_cubic --out analysis/results/x", "x")
        == []
    )
