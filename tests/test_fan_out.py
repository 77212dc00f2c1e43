"""``analysis.fan_out``: the planned shards of several experiments, claimed by worker processes,
the costliest first, none started after the deadline, and every finished one reusable by
``dynkit run --planned``."""

from __future__ import annotations

import pytest

from analysis import fan_out
from dynkit.experiments.runner import finished

pytestmark = pytest.mark.filterwarnings("ignore")


def test_the_queue_starts_the_costliest_models_first(tmp_path):
    queue = fan_out.queue(["ode_rnn_silverbox"], tmp_path, "smoke")
    models = [shard.point["model"] for shard in queue]
    assert models == sorted(models, key=lambda m: -fan_out.MODEL_COST[m])
    assert {shard.seed for shard in queue} == set(range(5))  # the committed plan's seeds 0-4


def test_workers_run_every_shard_once_and_start_none_after_the_deadline(tmp_path, capsys):
    # node_adjoint_norm's 5 smoke shards: the fan-out's bookkeeping at a third of silverbox's time
    assert (
        fan_out.main(
            [
                "--workers",
                "2",
                "--scale",
                "smoke",
                "--start-until",
                "0",
                "--results",
                str(tmp_path),
                "node_adjoint_norm",
            ]
        )
        == 0
    )
    assert not any(
        finished(s) for s in fan_out.queue(["node_adjoint_norm"], tmp_path, "smoke")
    )  # planted: no time
    assert (
        fan_out.main(
            ["--workers", "2", "--scale", "smoke", "--results", str(tmp_path), "node_adjoint_norm"]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "5 of 5 shards finished; left: []" in out
    assert all(finished(s) for s in fan_out.queue(["node_adjoint_norm"], tmp_path, "smoke"))


def test_bad_arguments_are_refused_before_any_work(tmp_path):
    with pytest.raises(SystemExit):
        fan_out.main(["--workers", "0", "--results", str(tmp_path), "ode_rnn_silverbox"])
    with pytest.raises(FileNotFoundError):
        fan_out.main(["--results", str(tmp_path), "no_such_experiment"])
    assert not any(tmp_path.iterdir())
