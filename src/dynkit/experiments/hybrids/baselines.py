"""The ODE-RNN hybrids' trivial predictors: persistence and the training mean on the same test
windows (:mod:`dynkit.experiments.judging.baselines` reads them beside the results)."""

from __future__ import annotations

from typing import Mapping

import numpy as np

from ..judging.baselines import BASELINES


def _forecast_baselines(config: Mapping, seed: int) -> dict:
    """Persistence and mean predictors on the test windows of one ODE-RNN task, scored like the
    models' ``test_mse`` (:data:`~dynkit.experiments.hybrids.time_series_hybrids.TEST_METRIC`)."""
    from .time_series_hybrids import TEST_METRIC, _task, task_options

    # the data the shard trained on: a config recorded before the measured series is read as
    # simulated
    task = _task(config["task"], task_options(dict(config)), seed)
    test, train = task.test, task.train
    out_idx = [task.inputs.index(c) for c in task.outputs]  # the outputs' channels among the inputs
    x = test.x.double().numpy()[..., out_idx]
    mean = train.targets.double().numpy().reshape(-1, len(out_idx)).mean(0)
    targets, future = test.targets.double().numpy(), test.future.double().numpy()
    if TEST_METRIC[config["task"]] == "test_one_step_mse":
        truth, persistence = (
            targets,
            x,
        )  # the stamp after each observation; persistence repeats the observation
    else:  # forecast: every future stamp predicted by the last observed one
        truth, persistence = future, np.repeat(x[:, -1:], future.shape[1], axis=1)
    values = {
        "persistence": float(np.mean((persistence - truth) ** 2)),
        "mean": float(np.mean((mean - truth) ** 2)),
    }
    values["best"] = min(values.values())
    return {f"baseline.{k}.test_mse": v for k, v in values.items()}


for _task_name in ("walker2d", "plane_vibration", "silverbox"):
    BASELINES[f"ode_rnn_{_task_name}"] = _forecast_baselines
BASELINES["ode_rnn_walker2d_torchdiffeq"] = _forecast_baselines
