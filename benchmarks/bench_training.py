"""Training throughput of a small neural ODE on the CPU: the plane-vibration hybrids at the authors'
recipe.

One epoch of the review's plane-vibration ODE-RNN hybrid (``ode_rnn_plane_vibration`` at its
``paper`` scale: the authors' design, all 509/254/254 windows, batch 64, tolerance 1e-7, gradients
from the adjoint, their clipping and rate) trained with ``dk.solve`` (``solver="dynkit"``) and with
torchdiffeq's ``odeint_adjoint`` (``solver="torchdiffeq"``, the authors' solver) inside the same
model code, from the same seed: CPU time of an epoch (``time.process_time``, one thread), the
forward NFE of the test pass and the backward NFE of the epoch, and the test MSE after it (the run's
CPU time includes its one-off probe of the adjoint's norm, 16 test windows in float64, a few per
cent of an epoch), which must agree between the two solvers to the tolerance's order (the same model
and data; the step-size controllers differ, so the numbers are not identical).

This compares solvers inside dynkit's implementation of the authors' model; the authors' own program
(their model code, their loop) was measured apart by an earlier review at 0.68x with dynkit imported
in place of torchdiffeq (its script is not ours to ship). Goal: dynkit / torchdiffeq <= 0.25 (CPU
time per epoch).

    OMP_NUM_THREADS=1 nice -n 19 python -m benchmarks.bench_training [--quick] [--models
    hbnode,node]

``--quick``: the first 64 windows of each part, nothing recorded.
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
import time
import warnings
from pathlib import Path

from benchmarks._goals import check_goal, record

NAME = "bench_training"
SOLVERS = ("dynkit", "torchdiffeq")


def paper_config(model: str, solver: str, windows: int | None):
    """The ``paper`` config of the hybrids, one epoch of ``model`` with ``solver`` (``windows``:
    the first few)."""
    import dynkit.experiments as E
    from dynkit.experiments.recipes import paper_config as from_recipe

    config = from_recipe(E.get("ode_rnn_plane_vibration"))
    data = tuple(pair for pair in config.data if pair[0] != "max_windows")
    if windows:
        data += (("max_windows", windows),)
    return dataclasses.replace(
        config, model=model, models=(model,), solver=solver, epochs=1, data=data, nfe_tol=None
    )


def one_epoch(model: str, solver: str, windows: int | None) -> dict:
    """CPU seconds of one epoch and the run's NFE and test MSE (seed 0)."""
    import torch

    from dynkit.experiments.hybrids.time_series_hybrids import run_hybrid

    torch.set_num_threads(1)
    config = paper_config(model, solver, windows)
    with tempfile.TemporaryDirectory() as out, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # float32's rtol floor at 1e-7, said once per run
        start = time.process_time()
        metrics = run_hybrid(config, seed=0, out=Path(out), device="cpu")["metrics"]
        seconds = time.process_time() - start
    return {
        "cpu_s": seconds,
        "per_epoch_s": metrics[f"{model}.seconds_per_epoch"],
        "test_nfe": metrics[f"{model}.nfe_test"],
        "backward_nfe": metrics[f"{model}.nfe_backward_per_epoch"],
        "test_mse": metrics[f"{model}.epoch1.test_mse"],
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="64 windows a part, nothing recorded")
    parser.add_argument("--models", default="hbnode", help="comma-separated (default hbnode)")
    args = parser.parse_args(argv)
    windows = 64 if args.quick else None
    out, goals = {}, []
    for model in args.models.split(","):
        runs = {}
        for (
            solver
        ) in SOLVERS:  # one epoch each, in turn; the epoch is long enough that its noise is small
            runs[solver] = one_epoch(model, solver, windows)
            r = runs[solver]
            print(
                f"{model} {solver:12s} {r['cpu_s']:8.1f} s CPU  test NFE "
                f"{r['test_nfe']:6.0f}  backward NFE an "
                f"epoch {r['backward_nfe']:8.0f}  test MSE {r['test_mse']:.4g}",
                flush=True,
            )
        ratio = runs["dynkit"]["cpu_s"] / runs["torchdiffeq"]["cpu_s"]
        out[model] = {**runs, "ratio": ratio}
        goals.append(
            check_goal(
                f"training {model} plane vibration (paper recipe): dynkit/torchdiffeq CPU "
                f"per epoch",
                ratio,
                0.25,
            )
        )
    if not args.quick:
        record(NAME, {"models": out, "windows": "all"}, goals)


if __name__ == "__main__":
    main()
