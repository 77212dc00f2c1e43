"""Training throughput of several seeds at once: a plane-vibration hybrid as one seed-batched
model.

One epoch of one of the review's five plane-vibration hybrids (``--models``, HBNODE-RNN by
default) at the authors' recipe (the ``paper`` config
of ``ode_rnn_plane_vibration``, as :mod:`benchmarks.bench_training`: batch 64, tolerance 1e-7,
adjoint, clipping at 1.0, Adam at 1e-3, parameters shrunk by 0.01) for ``S`` seeds trained together
by :class:`~dynkit.models.seed_batch.SeedBatchedODERNN` (``S`` in 1, 4, 8; every seed its own
initialisation, batch order, steps and optimiser), against one seed's epoch with torchdiffeq's
``odeint_adjoint`` in the same model code. The figure is CPU time per seed-epoch
(``time.process_time`` of the training batches, one thread) over torchdiffeq's per epoch; each
seed's test NFE and test (forecast) MSE after the epoch are printed beside those of the same seed
trained alone with ``dk.solve`` (the same model, data and order). In float32 at the recipe's
tolerance (1e-7, the float32 floor) the error estimates are rounding noise, so a seed's steps
follow the rounding of its products, which a batched product does not reproduce bit for bit: the
per-seed NFE differ from the lone runs' by a few tenths of a per cent (one solve's start differing
by 2e-8, rounding, moves ``dk.solve`` itself from 38 to 44 evaluations there); in float64 they are
equal (``tests/test_seed_batch.py``).

    OMP_NUM_THREADS=1 nice -n 19 python -m benchmarks.bench_training_batched [--quick]
    [--seeds 1,4,8] [--alone N] [--models node,anode,sonode,hbnode,ghbnode]

Each batched run also prints the CPU time of its test pass (the 254 test windows, forward only,
every seed), which a training epoch of ``train_hybrid`` adds: the two together are what an epoch
of a paper-scale campaign costs a seed.

``--alone N``: only seeds 0..N-1 are also trained alone for the comparison. ``--quick``: the
first 64 windows of each part, nothing recorded. Goal: batched / torchdiffeq
<= 0.25 (CPU time per seed-epoch) at the largest ``S``.
"""

from __future__ import annotations

import argparse
import time
import warnings
from types import SimpleNamespace

from benchmarks._goals import check_goal, record
from benchmarks.bench_training import paper_config

NAME = "bench_training_batched"


def load(model: str, windows: int | None):
    from dynkit.experiments.hybrids.time_series_hybrids import _task, task_options

    config = paper_config(model, "dynkit", windows)
    return config, _task(config.task, task_options(config), 0)


def build(config, task, seed: int, solver: str):
    """Seed ``seed``'s model as :func:`~dynkit.experiments.hybrids.time_series_hybrids.run_hybrid`
    builds it (then shrunk as ``train_hybrid`` does)."""
    import torch

    from dynkit.models.node_paper import from_paper
    from dynkit.tasks.time_series import shrink_parameters

    torch.manual_seed(seed)
    options = {"restoring": config.restoring} if config.model == "hbnode" else {}
    model = from_paper(
        config.model,
        config.task,
        design=config.design,
        rtol=config.tol,
        atol=config.tol,
        solver=solver,
        residual=config.cell == "residual",
        initial_state=config.initial_state,
        time_scale=config.time_scale,
        adjoint=config.adjoint,
        window=task.train.x.shape[1],
        **options,
    )
    return shrink_parameters(model, config.shrink)


def epoch_batches(task, seed: int, batch_size: int, epoch: int = 0):
    """Seed ``seed``'s batches of ``epoch``, in ``train_hybrid``'s order."""
    import torch

    from dynkit.tasks.training import epoch_generator

    n = len(task.train)
    order = torch.randperm(n, generator=epoch_generator(seed, epoch))
    return [task.train.subset(order[i : i + batch_size]) for i in range(0, n, batch_size)]


def stacked(windows) -> SimpleNamespace:
    """The seeds' batches with a seed axis in front (``ahead`` as the loss reads it)."""
    import torch

    from dynkit.tasks.time_series import _ahead

    fields = ("x", "targets", "future", "future_gaps")
    out = {name: torch.stack([getattr(w, name) for w in windows]) for name in fields}
    return SimpleNamespace(ahead=torch.stack([_ahead(w) for w in windows]), **out)


def train_alone(config, task, seed: int, solver: str) -> dict:
    """One epoch of one seed (``train_hybrid``'s step: loss, backward, clipping, Adam)."""
    import torch

    from dynkit.diagnostics.nfe import forward_nfe, reset_nfe
    from dynkit.tasks.time_series import _losses, _read_back, _test_mse

    model = build(config, task, seed, solver)
    read_back = _read_back(task) if config.loss_weights[1] else None
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
    batches = epoch_batches(task, seed, config.batch_size)
    start = time.process_time()
    for batch in batches:
        optimizer.zero_grad(set_to_none=True)
        _losses(model, batch, config.loss_weights, read_back)[2].backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.clip_norm)
        optimizer.step()
    seconds = time.process_time() - start
    reset_nfe(model)
    with torch.no_grad():
        mse = _test_mse(model, task.test, config.loss_weights, read_back)["forecast_mse"]
    return {"cpu_s": seconds, "test_nfe": forward_nfe(model), "test_mse": mse}


def train_together(config, task, seeds: list[int]) -> dict:
    """One epoch of ``seeds`` as one :class:`~dynkit.models.seed_batch.SeedBatchedODERNN`."""
    import numpy as np
    import torch

    from dynkit.models.seed_batch import SeedBatchedODERNN
    from dynkit.tasks.time_series import _read_back

    model = SeedBatchedODERNN([build(config, task, seed, "dynkit") for seed in seeds])
    read_back = _read_back(task) if config.loss_weights[1] else None
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
    per_seed = [epoch_batches(task, seed, config.batch_size) for seed in seeds]
    start = time.process_time()
    for windows in zip(*per_seed):
        optimizer.zero_grad(set_to_none=True)
        model.losses(stacked(windows), config.loss_weights, read_back)[2].sum().backward()
        model.clip_grad_norms_(config.clip_norm)
        optimizer.step()
        model.take_nfe()
    seconds = time.process_time() - start
    sums = np.zeros(len(seeds))
    start = time.process_time()
    with torch.no_grad():  # _test_mse's sample-weighted mean over batches of 256
        for i in range(0, len(task.test), 256):
            batch = task.test.subset(slice(i, i + 256))
            future = model.losses(stacked([batch] * len(seeds)), config.loss_weights, read_back)[1]
            sums += len(batch) * future.double().numpy()
    test_seconds = time.process_time() - start
    test_nfe = model.take_nfe()[0]
    return {
        "cpu_s": seconds,
        "test_cpu_s": test_seconds,
        "test_nfe": test_nfe.tolist(),
        "test_mse": (sums / len(task.test)),
    }


def main(argv=None) -> None:
    import torch

    from dynkit.models.ode_rnn import HYBRIDS

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="64 windows a part, nothing recorded")
    parser.add_argument("--seeds", default="1,4,8", help="numbers of seeds trained together")
    parser.add_argument(
        "--alone", type=int, default=None, help="seeds also trained alone (default: all)"
    )
    parser.add_argument("--models", default="hbnode", help=f"comma-separated, among {HYBRIDS}")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.seeds.split(",")]
    models = args.models.split(",")
    unknown = [m for m in models if m not in HYBRIDS]
    if unknown:
        parser.error(f"--models must be among {HYBRIDS}, got {unknown}")
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")  # float32's rtol floor at 1e-7, said once per run
    recorded, goals = {}, []
    for model in models:
        config, task = load(model, 64 if args.quick else None)
        out = measure(config, task, sizes, args.alone)
        recorded[model] = out
        for n, batched in out["batched"].items():
            goals.append(
                check_goal(
                    f"training {model} plane vibration (paper recipe), {n} seeds batched: CPU "
                    f"per seed-epoch / torchdiffeq's epoch",
                    batched["ratio"],
                    0.25,
                )
            )
    if not args.quick:
        record(NAME, {"windows": "all", "models": recorded}, goals)


def measure(config, task, sizes: list[int], n_alone: int | None) -> dict:
    """torchdiffeq's epoch, ``n_alone`` seeds alone and each batch size ``sizes`` of one model,
    printed as they finish."""
    model = config.model
    peer = train_alone(config, task, 0, "torchdiffeq")
    print(
        f"{model}: torchdiffeq 1 seed   {peer['cpu_s']:7.1f} s CPU  test NFE "
        f"{peer['test_nfe']:6.0f}  test MSE {peer['test_mse']:.4g}",
        flush=True,
    )
    alone = {}
    for seed in range(max(sizes) if n_alone is None else max(1, n_alone)):
        alone[seed] = train_alone(config, task, seed, "dynkit")
        r = alone[seed]
        print(
            f"{model}: dynkit seed {seed} alone {r['cpu_s']:7.1f} s CPU  test NFE "
            f"{r['test_nfe']:6.0f}  test MSE {r['test_mse']:.4g}",
            flush=True,
        )
    out = {"torchdiffeq": peer, "alone": alone, "batched": {}}
    for n in sizes:
        together = train_together(config, task, list(range(n)))
        per_seed = together["cpu_s"] / n
        ratio = per_seed / peer["cpu_s"]
        compared = [s for s in range(n) if s in alone]
        nfe_equal = sum(together["test_nfe"][s] == alone[s]["test_nfe"] for s in compared)
        nfe_gap = max(
            abs(together["test_nfe"][s] - alone[s]["test_nfe"]) / alone[s]["test_nfe"]
            for s in compared
        )
        mse_gap = max(
            abs(together["test_mse"][s] - alone[s]["test_mse"]) / alone[s]["test_mse"]
            for s in compared
        )
        print(
            f"{model}: batched S={n:<2d} {together['cpu_s']:7.1f} s CPU, {per_seed:6.1f} s a "
            f"seed-epoch: {ratio:.3f} of torchdiffeq's epoch ({per_seed / alone[0]['cpu_s']:.3f} "
            f"of dynkit alone), test pass {together['test_cpu_s'] / n:.1f} s a seed; test NFE "
            f"{together['test_nfe']} (equal to alone: {nfe_equal}/{len(compared)}, largest "
            f"relative gap {nfe_gap:.2g}); test MSE largest relative gap to alone {mse_gap:.2g}",
            flush=True,
        )
        out["batched"][n] = {**together, "test_mse": list(together["test_mse"]), "ratio": ratio}
    return out


if __name__ == "__main__":
    main()
