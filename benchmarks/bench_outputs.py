"""Per-step cost and many output times (issue 13, Sect. 6), against scipy in the same run.

1. Many outputs: the rigid body ([HNW] II.10's Euler equations) on [0, 20] at rtol = atol = 1e-8
   with 100,000 output times, dynkit dopri5 vs scipy ``solve_ivp(RK45, t_eval=...)``: wall time
   (paired medians) and peak traced memory (``tracemalloc``, which sees numpy's buffers), each as a
   ratio dynkit / scipy (goals ≤ 2) and as a multiple of the output array's own size.
2. Per step: a 2-state numpy oscillator on [0, 200] at rtol 1e-6, µs per step (accepted and
   rejected) of dynkit dopri5 vs scipy RK45 (goal: ratio ≤ 1), with the share of the time spent in
   the user's ``f`` measured by timing the same ``f`` alone.

Run ``python -m benchmarks.bench_outputs`` (``--quick``: fewer repeats). Threads: numpy/BLAS as set
by the environment (OMP_NUM_THREADS etc.); the states are tiny, so one thread either way.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np

import dynkit as dk
from benchmarks._goals import check_goal, paired_medians, record

N_OUT = 100_000


def rigid_body(t, y):
    return np.array([-2.0 * y[1] * y[2], 1.25 * y[0] * y[2], -0.5 * y[0] * y[1]])


def oscillator(t, y):
    return np.array([y[1], -y[0]])


def _peak_bytes(fn) -> int:
    tracemalloc.start()
    tracemalloc.reset_peak()
    try:
        base = tracemalloc.get_traced_memory()[0]
        fn()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def bench_many_outputs(repeats: int) -> tuple[dict, list]:
    from scipy.integrate import solve_ivp

    y0, t = np.array([1.0, 0.0, 0.9]), np.linspace(0.0, 20.0, N_OUT)

    def ours():
        return dk.solve(rigid_body, y0, t, method="dopri5", rtol=1e-8, atol=1e-8).ys

    def scipy():
        return solve_ivp(
            rigid_body, (0.0, 20.0), y0, method="RK45", t_eval=t, rtol=1e-8, atol=1e-8
        ).y

    a, b = ours(), scipy()
    agreement = float(np.abs(a - b.T).max())  # two 5th-order pairs at 1e-8: same accuracy class
    times = paired_medians({"dynkit": ours, "scipy": scipy}, repeats=repeats)
    out_bytes = a.nbytes
    mem = {"dynkit": _peak_bytes(ours), "scipy": _peak_bytes(scipy)}
    fig = dict(
        n_outputs=N_OUT,
        seconds=times,
        peak_bytes=mem,
        output_array_bytes=out_bytes,
        peak_over_output={k: v / out_bytes for k, v in mem.items()},
        max_difference=agreement,
    )
    print(
        f"{N_OUT} outputs: dynkit {times['dynkit'] * 1e3:.1f} ms, scipy "
        f"{times['scipy'] * 1e3:.1f} ms; "
        f"peak memory dynkit {mem['dynkit'] / 1e6:.2f} MB ({mem['dynkit'] / out_bytes:.2f}x "
        f"the output), "
        f"scipy {mem['scipy'] / 1e6:.2f} MB ({mem['scipy'] / out_bytes:.2f}x); max "
        f"|difference| {agreement:.1e}"
    )
    goals = [
        check_goal("100k outputs: time dynkit / scipy", times["dynkit"] / times["scipy"], 2.0),
        check_goal("100k outputs: peak memory dynkit / scipy", mem["dynkit"] / mem["scipy"], 2.0),
    ]
    return fig, goals


def bench_per_step(repeats: int) -> tuple[dict, list]:
    from scipy.integrate import solve_ivp

    y0, t_end = np.array([1.0, 0.0]), 200.0
    steps = {}

    def ours():
        sol = dk.solve(oscillator, y0, [0.0, t_end], method="dopri5", rtol=1e-6, atol=1e-8)
        steps["dynkit"] = sol.stats.n_steps
        steps["dynkit_nfe"] = sol.stats.nfe

    def scipy():
        out = solve_ivp(oscillator, (0.0, t_end), y0, method="RK45", rtol=1e-6, atol=1e-8)
        steps["scipy"] = (out.nfev - 2) / 6  # 6 evaluations per step (FSAL), 2 at the start
        steps["scipy_nfe"] = out.nfev

    def field_alone():
        for _ in range(steps["dynkit_nfe"]):
            oscillator(0.0, y0)

    ours(), scipy()
    times = paired_medians(
        {"dynkit": ours, "scipy": scipy, "f alone": field_alone}, repeats=repeats
    )
    per_step = {k: times[k] / steps[k] * 1e6 for k in ("dynkit", "scipy")}
    f_share = times["f alone"] / times["dynkit"]
    print(
        f"per step (2 states): dynkit {per_step['dynkit']:.1f} µs ({steps['dynkit']} steps), scipy "
        f"{per_step['scipy']:.1f} µs ({steps['scipy']:.0f} steps); the user's f is "
        f"{f_share:.0%} of dynkit's time"
    )
    fig = dict(us_per_step=per_step, steps=steps, seconds=times, f_share=f_share)
    return fig, [
        check_goal(
            "per-step cost dynkit / scipy (2-state numpy, dopri5 vs RK45)",
            per_step["dynkit"] / per_step["scipy"],
            1.0,
        )
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    args = parser.parse_args(argv)
    repeats = 3 if args.quick else 9
    outputs, goals_a = bench_many_outputs(repeats)
    step, goals_b = bench_per_step(repeats)
    if not args.quick:
        record("bench_outputs", dict(many_outputs=outputs, per_step=step), goals_a + goals_b)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
