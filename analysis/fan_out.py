"""Run the planned shards of several experiments with one worker process per core (a lent device's
16 cores).

    OMP_NUM_THREADS=1 python -m analysis.fan_out --workers 16 --start-until 300 \\
        ode_rnn_plane_vibration ode_rnn_silverbox

Each experiment runs the seeds of its committed plan (``analysis/plans/NAME.json``) at the ``cpu``
scale (``--scale``) into ``analysis/results/NAME`` (``--results`` another folder). The shards of all
experiments are queued in the order given, within one the costliest models first
(:data:`MODEL_COST`), and each worker claims the next unfinished one (the runner's claim: no shard
runs twice, a finished one is reused). A worker starts no shard after ``--start-until`` seconds, so
a run inside a time limit ends with whole shards: the ones left are computed by a later run or by
``dynkit run NAME --planned`` (resumable). Each finished shard prints its seconds. Nothing is
aggregated here: ``dynkit run NAME --planned`` reuses the shards and writes ``results.json`` once
all of them are done.
"""

from __future__ import annotations

import argparse
import multiprocessing
import time
from pathlib import Path

MODEL_COST = {"sonode": 4.0, "ghbnode": 2.5, "hbnode": 2.5, "anode": 1.5, "node": 1.0}
"""Relative cost of a hybrid shard by model (cpu scale, pilot seed 100), to start the long ones
first."""


def queue(names: list[str], results: Path, scale: str = "cpu") -> list:
    """The shards of each experiment's plan, in the order to start them."""
    from dynkit.experiments import load_all
    from dynkit.experiments.judging.plans import load_plan
    from dynkit.experiments.runner import shards

    load_all()
    todo = []
    for name in names:
        plan = load_plan(Path("analysis/plans") / f"{name}.json")
        mine = shards(name, scale, plan.seeds, results / name)
        todo += sorted(mine, key=lambda s: -MODEL_COST.get(s.point.get("model", ""), 1.0))
    return todo


def work(names: list[str], results: Path, scale: str, deadline: float, worker: int) -> None:
    """One worker: claim and run shards until none is left or the deadline to start one has
    passed."""
    import torch

    from dynkit.experiments.runner import claimed, finished, run_shard

    torch.set_num_threads(1)
    for shard in queue(names, results, scale):
        if time.time() > deadline:
            print(f"worker {worker}: deadline to start a shard passed", flush=True)
            return
        if finished(shard, lambda line: None) is not None:
            continue
        with claimed(shard, wait=False) as mine:
            if not mine or finished(shard, lambda line: None) is not None:
                continue
            start = time.perf_counter()
            try:
                run_shard(shard)
            except Exception as exc:  # one broken shard must not stop the others; it stays missing
                print(f"worker {worker}: {shard.experiment} {shard.key} raised {exc!r}", flush=True)
                continue
            print(
                f"worker {worker}: {shard.experiment} {shard.key} done in "
                f"{time.perf_counter() - start:.0f} s",
                flush=True,
            )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("names", nargs="+", metavar="NAME", help="experiments with a committed plan")
    p.add_argument(
        "--workers", type=int, default=2, help="worker processes, one per core (default 2)"
    )
    p.add_argument(
        "--start-until",
        type=float,
        default=float("inf"),
        help="seconds after which no worker starts a shard (default: no limit)",
    )
    p.add_argument(
        "--results", default="analysis/results", help="folder of the experiments' result folders"
    )
    p.add_argument(
        "--scale", default="cpu", choices=["smoke", "cpu"], help="cpu (default); smoke: to try it"
    )
    args = p.parse_args(argv)
    if args.workers < 1:
        p.error(f"--workers must be an integer >= 1, got {args.workers}")
    results = Path(args.results)
    todo = queue(
        args.names, results, args.scale
    )  # before any work: every name has a plan and a registered cpu scale
    print(f"{len(todo)} shards of {', '.join(args.names)}; {args.workers} workers", flush=True)
    deadline = time.time() + args.start_until
    context = multiprocessing.get_context(
        "spawn"
    )  # each worker imports torch afresh, one thread each
    workers = [
        context.Process(target=work, args=(args.names, results, args.scale, deadline, k))
        for k in range(args.workers)
    ]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    from dynkit.experiments.runner import finished

    left = [
        s.key
        for s in queue(args.names, results, args.scale)
        if finished(s, lambda line: None) is None
    ]
    print(f"{len(todo) - len(left)} of {len(todo)} shards finished; left: {left}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
