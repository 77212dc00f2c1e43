"""Peak memory of one training step vs depth: ResNet, our Momentum ResNet, momentumnet's memory-free
mode.

Setting of Fig. 2 of the Momentum ResNets paper (tied weights, f = W2^T tanh(W1 x + b),
gamma = 1 - 1/(50 depth)), at CPU size.

Method: every (model, depth) runs in a fresh Python subprocess with glibc's mmap threshold pinned at
64 KiB (``MALLOC_MMAP_THRESHOLD_``), so every activation-sized tensor is its own mapping, given back
to the OS when freed. After one warm-up step the kernel's peak-RSS counter is reset
(``/proc/self/clear_refs``) and a second step (forward, loss, backward) runs; we report
``VmHWM - VmRSS`` (peak resident memory of the step above what was resident before it). As a
cross-check we also report the bytes of the distinct storages autograd saved for backward
(``torch.autograd.graph.saved_tensors_hooks``); a memory-free autograd Function keeps its state on
``ctx``, which those hooks do not see, so that column is 0 for both memory-free models by design.

Run ``python -m benchmarks.bench_momres_memory [--quick]``; the goals printed as ratios:
ours(depth max) / ours(depth 10) <= 1.1 and ours(depth max) / momentumnet(depth max) <= 1.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from benchmarks._goals import check_goal, record

MODELS = ("resnet", "momentum", "momentumnet")


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def _worker(model: str, depth: int, batch: int, dim: int) -> dict:
    import torch
    from torch import nn

    torch.set_num_threads(1)
    torch.manual_seed(0)
    f = nn.Sequential(
        nn.Linear(dim, dim), nn.Tanh(), nn.Linear(dim, dim)
    )  # tied: one f for all layers
    gamma = 1 - 1 / (50 * depth)
    if model == "resnet":

        def net(x):
            for _ in range(depth):
                x = x + f(x)
            return x
    elif model == "momentum":
        from dynkit.models.momentum_resnet import MomentumResNet

        ours = MomentumResNet([f] * depth, gamma, exact=True)

        def net(x):
            return ours(x)[0]
    else:
        from momentumnet import MomentumNet

        net = MomentumNet([f] * depth, gamma, use_backprop=False)
    x = torch.randn(batch, dim)

    def step():
        saved = {}

        def pack(t):  # count each storage once (weights and shared outputs are saved many times)
            saved[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            loss = net(x).pow(2).mean()
        loss.backward()
        return sum(saved.values())

    step()  # warm-up: lazy initialisation, .grad buffers
    before = _status_kib("VmRSS")
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")  # reset the peak-RSS counter VmHWM to the current RSS
    saved = step()
    peak = _status_kib("VmHWM")
    return {
        "model": model,
        "depth": depth,
        "peak_step_mib": (peak - before) / 1024,
        "saved_mib": saved / 2**20,
        "activation_mib": batch * dim * 4 / 2**20,
    }


def measure(model: str, depth: int, batch: int, dim: int) -> dict:
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="65536", OMP_NUM_THREADS="1")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.bench_momres_memory",
            "--worker",
            model,
            str(depth),
            str(batch),
            str(dim),
        ],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(f"{model} depth {depth} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="depths 10, 100, 300 only")
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument(
        "--repeats", type=int, default=None, help="processes per measurement (median kept)"
    )
    parser.add_argument("--out", default=None, help="write the numbers as JSON to this file")
    parser.add_argument(
        "--worker", nargs=4, metavar=("MODEL", "DEPTH", "BATCH", "DIM"), help=argparse.SUPPRESS
    )
    args = parser.parse_args(argv)
    if args.worker:
        model, depth, batch, dim = args.worker
        print(json.dumps(_worker(model, int(depth), int(batch), int(dim))))
        return {}
    depths = [10, 100, 300] if args.quick else [10, 30, 100, 300, 1000]
    print(__doc__.split("\n\n")[2].replace("\n", " "))
    print(
        f"batch {args.batch}, width {args.dim}, float32: one activation = "
        f"{args.batch * args.dim * 4 / 2**20:.3f} MiB"
    )
    print(
        f"{'depth':>6} "
        + " ".join(f"{m + ' peak MiB':>22}" for m in MODELS)
        + f" {'resnet saved MiB':>18}"
    )
    repeats = args.repeats or (2 if args.quick else 3)
    rows = []
    for depth in depths:
        # each measurement is a fresh process; the contenders alternate and the median peak is kept
        runs = {m: [] for m in MODELS}
        for _ in range(repeats):
            for m in MODELS:
                runs[m].append(measure(m, depth, args.batch, args.dim))
        row = {
            m: sorted(rs, key=lambda r: r["peak_step_mib"])[(len(rs) - 1) // 2]
            for m, rs in runs.items()
        }
        rows.append(row)
        print(
            f"{depth:>6} "
            + " ".join(f"{row[m]['peak_step_mib']:>22.2f}" for m in MODELS)
            + f" {row['resnet']['saved_mib']:>18.2f}",
            flush=True,
        )
    ours = [r["momentum"]["peak_step_mib"] for r in rows]
    theirs = rows[-1]["momentumnet"]["peak_step_mib"]
    ratios = {
        "ours_deepest_over_ours_depth10": ours[-1] / ours[0],
        "ours_deepest_over_momentumnet_deepest": ours[-1] / theirs,
        "resnet_deepest_over_ours_deepest": rows[-1]["resnet"]["peak_step_mib"] / ours[-1],
    }
    goals = [
        check_goal(
            f"momentum peak memory depth {depths[-1]} / depth 10",
            ratios["ours_deepest_over_ours_depth10"],
            1.1,
        ),
        check_goal(
            f"momentum / momentumnet peak memory at depth {depths[-1]}",
            ratios["ours_deepest_over_momentumnet_deepest"],
            1.0,
        ),
    ]
    print(
        f"ratio resnet(depth {depths[-1]}) / ours(depth {depths[-1]}) = "
        f"{ratios['resnet_deepest_over_ours_deepest']:.1f}"
    )
    result = {
        "rows": rows,
        "ratios": ratios,
        "batch": args.batch,
        "dim": args.dim,
        "depths": depths,
        "repeats": repeats,
        "median_of_repeats": True,
    }
    record(
        "bench_momres_memory",
        result,
        goals,
        argv=["bench_momres_memory", *(sys.argv[1:] if argv is None else argv)],
    )
    if args.out:
        from dynkit.io import write_json

        command = "python -m benchmarks.bench_momres_memory " + " ".join(
            sys.argv[1:] if argv is None else argv
        )
        write_json(args.out, result, command=command)
    return result


if __name__ == "__main__":
    main()
