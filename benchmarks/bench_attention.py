"""Time and memory of one forward + backward of causal attention vs sequence length N.

Momentum attention (parallel form (13)) against linear attention (its peer: same chunked O(N) engine
without the momentum state) and softmax attention (O(N^2)). Prints, for each N, the
median-of-``repeats`` CPU time (median over repeats, the methods interleaved; wall time is recorded
too) and the bytes of activations saved for backward (counted exactly through autograd's
saved-tensor hooks, unique storages only — a deterministic proxy of training memory that CPU torch
can report), then the fitted exponents ``time ~ N^p`` and the ratios momentum / linear.

``linear_cumsum`` is causal linear attention written the common plain-PyTorch way (all states s_i
materialised, O(N d^2) memory), shown for context. Goals (issue 7): momentum's time exponent <= 1.1
and momentum / linear <= 1.3. Softmax stops at the N where its N x N score matrices would exceed
``--softmax-limit-mib`` (it is quadratic: it would explode), linear_cumsum where its N d^2 states
would.

    python -m benchmarks.bench_attention [--quick] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
import torch

from benchmarks._goals import check_goal, record
from dynkit.models.attention import linear_attention, momentum_attention, softmax_attention

FULL_NS = [256, 512, 1024, 2048, 4096, 8192, 16384]
QUICK_NS = [256, 512, 1024, 2048, 4096]


def _saved_bytes(fn, *inputs) -> tuple[torch.Tensor, int]:
    seen, total = set(), 0

    def pack(t):
        nonlocal total
        storage = t.untyped_storage()
        key = storage.data_ptr()
        if key not in seen:
            seen.add(key)
            total += storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn(*inputs)
    return out, total


def measure(
    fns: dict, n: int, *, batch: int, heads: int, dim: int, repeats: int, seed: int = 0
) -> dict:
    """Median over ``repeats`` of the CPU and wall time of forward + backward of each function,
    interleaved (round ``r`` runs the functions rotated by ``r``, so machine load falls on all
    alike).

    CPU time (``time.process_time``, one thread) is what the fits use: on a shared machine the wall
    time also counts other people's processes, CPU time much less so.
    """
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(batch, heads, n, dim, generator=g).requires_grad_() for _ in range(3))
    grad = torch.randn(batch, heads, n, dim, generator=g)
    result = {name: {"saved_bytes": _saved_bytes(fn, q, k, v)[1]} for name, fn in fns.items()}
    samples = {name: ([], []) for name in fns}
    names = list(fns)
    for r in range(repeats + 1):  # round 0 warms up
        for name in names[r % len(names) :] + names[: r % len(names)]:
            wall, cpu = time.perf_counter(), time.process_time()
            fns[name](q, k, v).backward(grad)
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            q.grad = k.grad = v.grad = None
            if r > 0:
                samples[name][0].append(cpu)
                samples[name][1].append(wall)
    for name, (cpus, walls) in samples.items():
        result[name]["cpu_s"], result[name]["wall_s"] = (
            float(np.median(cpus)),
            float(np.median(walls)),
        )
    return result


def linear_attention_cumsum(q, k, v, eps=1e-6):
    """Causal linear attention (7) as often written in plain PyTorch: every state s_i
    materialised by a cumulative sum of outer products, O(N d^2) memory. A context peer for the
    chunked implementation."""
    fq, fk = torch.nn.functional.elu(q) + 1, torch.nn.functional.elu(k) + 1
    s = torch.einsum("bhjd,bhje->bhjde", fk, v).cumsum(2)
    num = torch.einsum("bhid,bhide->bhie", fq, s)
    return num / (torch.einsum("bhid,bhid->bhi", fq, fk.cumsum(2)) + eps)[..., None]


def fit_exponent(ns, values) -> float:
    return float(np.polyfit(np.log(ns), np.log(values), 1)[0])


def run(
    ns,
    *,
    batch=1,
    heads=4,
    dim=32,
    repeats=3,
    beta=0.9,
    gamma=0.6,
    softmax_limit_mib=1024.0,
    quiet=False,
) -> dict:
    torch.set_num_threads(1)
    methods = {
        "momentum": lambda q, k, v: momentum_attention(q, k, v, beta, gamma),
        "linear": lambda q, k, v: linear_attention(q, k, v),
        "linear_cumsum": linear_attention_cumsum,
        "softmax": lambda q, k, v: softmax_attention(q, k, v),
    }
    rows = []
    for n in ns:
        # softmax keeps ~3 N x N float32 matrices per head (scores, probabilities, their gradient),
        # linear_cumsum ~3 N d^2 states: skip them where that exceeds the limit
        too_big = {
            "softmax": 3 * batch * heads * n * n * 4,
            "linear_cumsum": 3 * batch * heads * n * dim * dim * 4,
        }
        run_now = {
            name: fn
            for name, fn in methods.items()
            if too_big.get(name, 0) / 2**20 <= softmax_limit_mib
        }
        measured = measure(run_now, n, batch=batch, heads=heads, dim=dim, repeats=repeats)
        row = {"N": n, **{name: measured.get(name) for name in methods}}
        rows.append(row)
        if not quiet:
            cells = [f"N={n:6d}"] + [
                f"{name}: "
                + (
                    "capped"
                    if row[name] is None
                    else f"{row[name]['cpu_s'] * 1e3:9.1f} ms "
                    f"{row[name]['saved_bytes'] / 2**20:6.1f} MiB"
                )
                for name in methods
            ]
            print("  ".join(cells), flush=True)
    summary = {}
    for name in methods:
        pts = [(r["N"], r[name]) for r in rows if r[name] is not None]
        if len(pts) >= 2:
            ns_, ms = zip(*pts)
            summary[f"{name}_time_exponent"] = fit_exponent(ns_, [m["cpu_s"] for m in ms])
            summary[f"{name}_wall_time_exponent"] = fit_exponent(ns_, [m["wall_s"] for m in ms])
            summary[f"{name}_memory_exponent"] = fit_exponent(ns_, [m["saved_bytes"] for m in ms])
            upper = pts[len(pts) // 2 :]
            if len(upper) >= 2:
                summary[f"{name}_time_exponent_upper_half"] = fit_exponent(
                    [p[0] for p in upper], [p[1]["cpu_s"] for p in upper]
                )
    ratios = [r["momentum"]["cpu_s"] / r["linear"]["cpu_s"] for r in rows]
    mem_ratios = [r["momentum"]["saved_bytes"] / r["linear"]["saved_bytes"] for r in rows]
    summary.update(
        momentum_over_linear_time=ratios,
        momentum_over_linear_time_max=max(ratios),
        momentum_over_linear_time_median=float(np.median(ratios)),
        momentum_over_linear_memory_max=max(mem_ratios),
        softmax_capped_from=next((r["N"] for r in rows if r["softmax"] is None), None),
    )
    return {
        "config": {
            "ns": list(ns),
            "batch": batch,
            "heads": heads,
            "dim": dim,
            "repeats": repeats,
            "beta": beta,
            "gamma": gamma,
            "softmax_limit_mib": softmax_limit_mib,
            "threads": torch.get_num_threads(),
        },
        "rows": rows,
        "summary": summary,
    }


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="N up to 4096, 2 repeats")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--softmax-limit-mib", type=float, default=1024.0)
    parser.add_argument("--json", default=None, help="also write the numbers to this JSON file")
    args = parser.parse_args(argv)
    ns = QUICK_NS if args.quick else FULL_NS
    repeats = args.repeats or (2 if args.quick else 3)
    result = run(ns, repeats=repeats, softmax_limit_mib=args.softmax_limit_mib)
    s = result["summary"]
    print(
        f"momentum time exponent      {s['momentum_time_exponent']:.3f}   (goal <= 1.1; "
        f"upper half of N: {s.get('momentum_time_exponent_upper_half', float('nan')):.3f})"
    )
    print(f"linear   time exponent      {s['linear_time_exponent']:.3f}")
    print(
        f"softmax  time exponent      {s.get('softmax_time_exponent', float('nan')):.3f}   "
        f"(capped from N = {s['softmax_capped_from']}: N x N scores over "
        f"{args.softmax_limit_mib:.0f} MiB)"
    )
    print(
        f"momentum memory exponent    {s['momentum_memory_exponent']:.3f};  softmax "
        f"{s.get('softmax_memory_exponent', float('nan')):.3f}"
    )
    print(
        f"momentum / linear time      max {s['momentum_over_linear_time_max']:.3f}, "
        f"median {s['momentum_over_linear_time_median']:.3f}   (goal <= 1.3)"
    )
    print(f"momentum / linear memory    max {s['momentum_over_linear_memory_max']:.3f}")
    last = result["rows"][-1]
    if last["linear_cumsum"] is not None:
        print(
            f"momentum / linear_cumsum time at N = {last['N']}: "
            f"{last['momentum']['cpu_s'] / last['linear_cumsum']['cpu_s']:.3f}"
        )
    goals = [
        check_goal("momentum attention time exponent", s["momentum_time_exponent"], 1.1),
        check_goal(
            "momentum / linear attention time (max over N)",
            s["momentum_over_linear_time_max"],
            1.3,
            note=f"median over N {s['momentum_over_linear_time_median']:.3f}",
        ),
    ]
    record(
        "bench_attention",
        result,
        goals,
        argv=["bench_attention", *(argv if argv is not None else sys.argv[1:])],
    )
    if args.json:
        from dynkit.io import write_json

        write_json(
            args.json,
            result,
            command="python -m benchmarks.bench_attention "
            + " ".join(argv if argv is not None else __import__("sys").argv[1:]),
        )
    return result


if __name__ == "__main__":
    main()
