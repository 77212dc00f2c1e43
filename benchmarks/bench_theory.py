"""Speed of ``dk.theory.run_all``: the 10 claims x 1000 instances against the 60 s goal, and the batching
speed-up of one check against the naive per-instance loop (the peer, measured in the same run).

    python -m benchmarks.bench_theory            # 1000 instances per claim
    python -m benchmarks.bench_theory --quick    # 100 instances per claim
"""
from __future__ import annotations

import argparse
import time

import numpy as np

BUDGET_S = 60.0


def _pairing_instances(n_instances: int, seed: int):
    from dynkit.theory._core import random_matrices, split_by_size
    rng = np.random.default_rng(seed)
    groups = []
    for n, count in split_by_size(n_instances, rng):
        F = random_matrices(rng, count, n, log10_cond=6, scale=3.0)
        groups.append((10 ** rng.uniform(-3, 0, (count, n)), F, rng.uniform(0, 4, count)))
    return groups


def batching_speedup(n_instances: int, seed: int = 0) -> dict:
    """check_eigen_pairing batched (one call per size) vs one call per instance, same instances."""
    import dynkit as dk
    from dynkit.theory._core import single_threaded_blas
    groups = _pairing_instances(n_instances, seed)
    with single_threaded_blas():
        start = time.perf_counter()
        batched = all(dk.theory.check_eigen_pairing(J, F, g).holds for J, F, g in groups)
        t_batched = time.perf_counter() - start
        start = time.perf_counter()
        looped = all(dk.theory.check_eigen_pairing(J[i], F[i], g[i]).holds
                     for J, F, g in groups for i in range(len(g)))
        t_loop = time.perf_counter() - start
    return dict(batched_s=t_batched, loop_s=t_loop, speedup=t_loop / t_batched,
                verdicts_agree=batched == looped)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 instances per claim")
    parser.add_argument("--instances", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    import torch
    torch.set_num_threads(1)
    import dynkit as dk

    n = args.instances or (100 if args.quick else 1000)
    start = time.perf_counter()
    table = dk.theory.run_all(n, seed=args.seed)
    total = time.perf_counter() - start
    print(table)
    print(f"\nrun_all: {len(table.rows)} claims x {n} instances in {total:.1f} s; "
          f"ratio to the {BUDGET_S:.0f} s budget: {total / BUDGET_S:.2f}"
          + ("" if n == 1000 else f" (budget is for 1000 instances; scaled: {total * 1000 / n / BUDGET_S:.2f})"))
    speed = batching_speedup(n, args.seed)
    print(f"check_eigen_pairing on {n} instances: batched {speed['batched_s']:.3f} s, per-instance loop "
          f"{speed['loop_s']:.3f} s -> batching speed-up x{speed['speedup']:.1f} "
          f"(verdicts agree: {speed['verdicts_agree']})")
    return dict(total_s=total, budget_ratio=total / BUDGET_S, all_hold=table.all_hold, **speed)


if __name__ == "__main__":
    main()
