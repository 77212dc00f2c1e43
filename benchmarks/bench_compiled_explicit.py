"""The compiled explicit path (issue 36): per-step cost against jitted diffrax, and ensembles
against LSODA.

1. Per step: the 2-state oscillator ``y'' = -y`` at rtol 1e-6, atol 1e-8, Tsitouras 5(4) everywhere:
   dynkit ``tsit5`` compiled (``dk.solve(..., compile=True)``) and diffrax's ``Tsit5`` inside
   ``jax.jit`` (float64, ``PIDController``, the end state saved) on [0, 2000] (~10,000 steps, so
   that the per-call overheads of both are amortised), dynkit's Python path and scipy's RK45 on [0,
   200] (~1,100 steps: their per-step cost does not depend on the span). µs per step (accepted and
   rejected), CPU time, paired medians. Goal: compiled ≤ 5× diffrax.
2. Compile time, reported apart: numba compiling the explicit kernel, and the ensemble's, on first
   use (a fresh process with an empty numba cache) and loading them from the disk cache (a second
   fresh process), the user's ``f`` (once per ``f`` and process), diffrax's jit (once per function
   and shapes); amortised over a sweep of 100 solves of the ~1,100-step problem with one ``f`` (a
   parameter sweep's pattern), against the Python path's time for the same sweep.
3. Ensemble: 10,000 Van der Pol trajectories (mu = 1, starts uniform in [-2, 2]², t in [0, 10], 11
   outputs, rtol 1e-6, atol 1e-8) with ``dk.solve_ensemble`` (tsit5, one numba thread, and all
   threads) against a loop over scipy's LSODA (``scipy.integrate.odeint``, its Fortran driver, and
   ``solve_ivp(method="LSODA")``) with the same tolerances. The loops are timed on 200 trajectories
   and extrapolated linearly to 10,000 (each trajectory is an independent solve of similar cost).
   Accuracy of each on those 200 against dop853 at rtol 1e-12. Goal: the one-thread ensemble faster
   than the odeint loop.

Run ``nice python -m benchmarks.bench_compiled_explicit`` (``--quick``: fewer repeats, not
recorded). One thread for BLAS and XLA (set below before jax loads); numba's single solves are
single-threaded.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault(
    "XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
)

import numpy as np  # noqa: E402

import dynkit as dk  # noqa: E402
from benchmarks._goals import RESULTS, check_goal, paired_medians, record  # noqa: E402

RTOL, ATOL = 1e-6, 1e-8
SPAN_COMPILED, SPAN_PYTHON = 2000.0, 200.0
N_ENSEMBLE, N_LOOP_SUBSET = 10_000, 200
SWEEP = 100
CLOCK = time.process_time  # CPU time: the shared machine's other processes leave it alone


def oscillator(t, y):
    return np.array([y[1], -y[0]])


def van_der_pol(t, y, p):
    return np.array([y[1], p[0] * (1.0 - y[0] ** 2) * y[1] - y[0]])


def _diffrax_tsit5(span: float):
    """A jitted diffrax Tsit5 solve of the oscillator, returning (end state, steps); None if not
    installed."""
    try:
        import diffrax
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    term = diffrax.ODETerm(lambda t, y, args: jnp.stack([y[1], -y[0]]))

    @jax.jit
    def run(y0):
        sol = diffrax.diffeqsolve(
            term,
            diffrax.Tsit5(),
            0.0,
            span,
            None,
            y0,
            stepsize_controller=diffrax.PIDController(rtol=RTOL, atol=ATOL),
            saveat=diffrax.SaveAt(t1=True),
            max_steps=1_000_000,
        )
        return sol.ys, sol.stats["num_steps"]

    y0 = jnp.array([1.0, 0.0])

    def solve():
        ys, steps = run(y0)
        jax.block_until_ready(ys)
        return int(steps)

    return solve, diffrax.__version__


def bench_per_step(repeats: int) -> tuple[dict, list]:
    from scipy.integrate import solve_ivp

    y0 = np.array([1.0, 0.0])
    steps: dict[str, float] = {}

    def compiled():
        sol = dk.solve(
            oscillator, y0, [0.0, SPAN_COMPILED], method="tsit5", rtol=RTOL, atol=ATOL, compile=True
        )
        steps["dynkit compiled"] = sol.stats.n_steps

    def python():
        sol = dk.solve(oscillator, y0, [0.0, SPAN_PYTHON], method="tsit5", rtol=RTOL, atol=ATOL)
        steps["dynkit Python"] = sol.stats.n_steps

    def scipy():
        out = solve_ivp(oscillator, (0.0, SPAN_PYTHON), y0, method="RK45", rtol=RTOL, atol=ATOL)
        steps["scipy RK45"] = (out.nfev - 2) / 6  # 6 evaluations per step (FSAL), 2 at the start

    contenders = {"dynkit compiled": compiled, "dynkit Python": python, "scipy RK45": scipy}
    start = CLOCK()
    compiled()  # numba: the kernel (if this process has not yet) and f
    first_compiled = CLOCK() - start
    peer = _diffrax_tsit5(SPAN_COMPILED)
    jit_seconds = None
    if peer is not None:
        solve_diffrax, diffrax_version = peer

        def diffrax_run():
            steps["diffrax Tsit5 (jit)"] = solve_diffrax()

        start = CLOCK()
        diffrax_run()
        jit_seconds = CLOCK() - start
        contenders["diffrax Tsit5 (jit)"] = diffrax_run
    times = paired_medians(contenders, repeats=repeats, clock=CLOCK)
    per_step = {name: times[name] / steps[name] * 1e6 for name in contenders}
    for name, us in per_step.items():
        print(
            f"per step {name}: {us:.3f} µs ({steps[name]:.0f} steps, {times[name] * 1e3:.2f} ms)",
            flush=True,
        )
    fig = dict(
        us_per_step=per_step,
        steps=steps,
        seconds=times,
        first_compiled_solve_seconds=first_compiled,
        diffrax_first_call_seconds=jit_seconds,
        spans={
            "dynkit compiled": SPAN_COMPILED,
            "diffrax Tsit5 (jit)": SPAN_COMPILED,
            "dynkit Python": SPAN_PYTHON,
            "scipy RK45": SPAN_PYTHON,
        },
    )
    goals = []
    if peer is not None:
        fig["diffrax_version"] = diffrax_version
        goals.append(
            check_goal(
                "per step dynkit compiled tsit5 / jitted diffrax Tsit5 (2-state)",
                per_step["dynkit compiled"] / per_step["diffrax Tsit5 (jit)"],
                5.0,
            )
        )
        fig["python_over_diffrax"] = per_step["dynkit Python"] / per_step["diffrax Tsit5 (jit)"]
    else:
        print(
            "diffrax/jax not installed (pip install -e .[bench]): no per-step goal against it",
            flush=True,
        )
    fig["compiled_over_scipy"] = per_step["dynkit compiled"] / per_step["scipy RK45"]
    fig["python_over_compiled"] = per_step["dynkit Python"] / per_step["dynkit compiled"]
    print(
        f"compiled / scipy RK45 {fig['compiled_over_scipy']:.3f}; Python / compiled "
        f"{fig['python_over_compiled']:.1f}",
        flush=True,
    )
    return fig, goals


_COMPILE_PROBE = """
import time, numpy as np, dynkit
start = time.process_time()
from dynkit.solvers.compiled import compile_problem, kernel_names
kernel_names()
kernel = time.process_time() - start
def oscillator(t, y):
    return np.array([y[1], -y[0]])
start = time.process_time()
compile_problem(oscillator, np.array([1.0, 0.0]), 0.0)
f_seconds = time.process_time() - start
start = time.process_time()
import dynkit.solvers.compiled.explicit_ensemble
print(kernel, f_seconds, time.process_time() - start)
"""


def bench_compile(repeats: int) -> tuple[dict, list]:
    """Compile times (fresh processes: an empty numba cache, then the cache it wrote) and the
    sweep they amortise over."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(
            os.environ,
            NUMBA_CACHE_DIR=cache,
            PYTHONPATH=os.pathsep.join(
                [
                    str(RESULTS.parent.parent / "src"),
                    str(RESULTS.parent.parent),
                    os.environ.get("PYTHONPATH", ""),
                ]
            ),
        )
        probes = [
            subprocess.run(
                [sys.executable, "-c", _COMPILE_PROBE],
                capture_output=True,
                text=True,
                check=True,
                env=env,
            ).stdout.split()
            for _ in range(2)
        ]
    (
        (kernel_seconds, f_seconds, ensemble_seconds),
        (cached_kernel_seconds, _, cached_ensemble_seconds),
    ) = [tuple(map(float, p)) for p in probes]
    y0 = np.array([1.0, 0.0])
    starts = np.linspace(0.5, 1.5, SWEEP)

    def sweep(compile_mode):
        def run():
            for a in starts:
                dk.solve(
                    oscillator,
                    a * y0,
                    [0.0, SPAN_PYTHON],
                    method="tsit5",
                    rtol=RTOL,
                    atol=ATOL,
                    compile=compile_mode,
                )

        return run

    times = paired_medians(
        {"compiled": sweep(True), "Python": sweep(False)}, repeats=max(1, repeats // 3), clock=CLOCK
    )
    saved = times["Python"] / SWEEP - times["compiled"] / SWEEP  # per solve
    fig = dict(
        kernel_compile_seconds=kernel_seconds,
        kernel_cached_load_seconds=cached_kernel_seconds,
        f_compile_seconds=f_seconds,
        ensemble_kernel_compile_seconds=ensemble_seconds,
        ensemble_kernel_cached_load_seconds=cached_ensemble_seconds,
        sweep_solves=SWEEP,
        sweep_seconds=times,
    )
    for label, compile_total in (
        ("first_use", kernel_seconds + f_seconds),
        ("cached", cached_kernel_seconds + f_seconds),
    ):
        fig[f"sweep_ratio_with_compile_{label}"] = (compile_total + times["compiled"]) / times[
            "Python"
        ]
        fig[f"break_even_solves_{label}"] = compile_total / max(saved, 1e-12)
    print(
        f"compile: kernel {kernel_seconds:.2f} s on first use (then cached on disk: "
        f"{cached_kernel_seconds:.2f} s "
        f"per process), f {f_seconds:.3f} s (once per f and process), the ensemble kernel "
        f"{ensemble_seconds:.2f} s "
        f"on first use ({cached_ensemble_seconds:.2f} s cached); sweep of {SWEEP} solves: compiled "
        f"{times['compiled']:.3f} s vs Python {times['Python']:.3f} s; with compile time included "
        f"{fig['sweep_ratio_with_compile_first_use']:.3f}x on first use (break-even after "
        f"{fig['break_even_solves_first_use']:.0f} solves), "
        f"{fig['sweep_ratio_with_compile_cached']:.3f}x with the "
        f"kernel cached (break-even after {fig['break_even_solves_cached']:.0f})",
        flush=True,
    )
    return fig, []


def bench_ensemble(repeats: int, n: int) -> tuple[dict, list]:
    from scipy.integrate import odeint, solve_ivp

    rng = np.random.default_rng(36)
    starts = rng.uniform(-2.0, 2.0, (n, 2))
    mu = np.array([1.0])
    t = np.linspace(0.0, 10.0, 11)
    subset = starts[:N_LOOP_SUBSET]

    def ensemble(threads):
        return lambda: dk.solve_ensemble(
            van_der_pol,
            starts,
            t,
            params=mu,
            method="tsit5",
            rtol=RTOL,
            atol=ATOL,
            compile=True,
            threads=threads,
        )

    def vdp_scipy(y, t_):  # odeint's argument order
        return van_der_pol(t_, y, mu)

    def odeint_loop():
        return np.stack([odeint(vdp_scipy, y0, t, rtol=RTOL, atol=ATOL) for y0 in subset])

    def solve_ivp_loop():
        return np.stack(
            [
                solve_ivp(
                    lambda t_, y: van_der_pol(t_, y, mu),
                    (0.0, 10.0),
                    y0,
                    method="LSODA",
                    t_eval=t,
                    rtol=RTOL,
                    atol=ATOL,
                ).y.T
                for y0 in subset
            ]
        )

    start = CLOCK()
    result = ensemble(1)()
    first = CLOCK() - start  # includes numba compiling the parallel ensemble kernel
    assert result.success.all(), result
    times = paired_medians(
        {
            "ensemble, 1 thread": ensemble(1),
            "odeint loop (subset)": odeint_loop,
            "solve_ivp LSODA loop (subset)": solve_ivp_loop,
        },
        repeats=repeats,
        warmup=0,
        clock=CLOCK,
    )
    start = time.perf_counter()  # all threads: wall time (CPU time would add the threads up)
    ensemble(None)()
    all_threads_wall = time.perf_counter() - start
    scale = n / len(subset)
    projected = {
        "odeint loop": times["odeint loop (subset)"] * scale,
        "solve_ivp LSODA loop": times["solve_ivp LSODA loop (subset)"] * scale,
    }
    reference = dk.solve_ensemble(
        van_der_pol, subset, t, params=mu, method="dop853", rtol=1e-12, atol=1e-14, compile=True
    ).ys
    errors = {
        "ensemble tsit5": float(np.abs(result.ys[: len(subset)] - reference).max()),
        "odeint": float(np.abs(odeint_loop() - reference).max()),
        "solve_ivp LSODA": float(np.abs(solve_ivp_loop() - reference).max()),
    }
    print(
        f"ensemble of {n} Van der Pol (mu=1): {times['ensemble, 1 thread']:.3f} s CPU on one "
        f"thread "
        f"(first call {first:.2f} s with compile), {all_threads_wall:.3f} s wall on all "
        f"threads; odeint loop "
        f"{projected['odeint loop']:.2f} s, solve_ivp LSODA loop "
        f"{projected['solve_ivp LSODA loop']:.2f} s "
        f"(timed on {len(subset)}, x{scale:g}); max errors vs dop853 at 1e-12: "
        + ", ".join(f"{k} {v:.1e}" for k, v in errors.items()),
        flush=True,
    )
    fig = dict(
        n_trajectories=n,
        loop_subset=len(subset),
        seconds=times,
        projected_loop_seconds=projected,
        ensemble_first_call_seconds=first,
        ensemble_all_threads_wall_seconds=all_threads_wall,
        max_error_vs_reference=errors,
        nfe_total=int(result.stats["nfe"].sum()),
    )
    goals = [
        check_goal(
            f"ensemble of {n} Van der Pol: dynkit (1 thread) / odeint LSODA loop",
            times["ensemble, 1 thread"] / projected["odeint loop"],
            1.0,
            note=f"loop timed on {len(subset)} trajectories, extrapolated",
        ),
        check_goal(
            f"ensemble of {n} Van der Pol: dynkit (1 thread) / solve_ivp LSODA loop",
            times["ensemble, 1 thread"] / projected["solve_ivp LSODA loop"],
            1.0,
            note=f"loop timed on {len(subset)} trajectories, extrapolated",
        ),
    ]
    return fig, goals


def _markdown(per_step: dict, compile_fig: dict, ens: dict, goals: list) -> str:
    lines = [
        "# bench_compiled_explicit",
        "",
        "CPU time, paired medians; see the module docstring for the setup.",
        "",
        "## Per step (2-state oscillator, rtol 1e-6, atol 1e-8)",
        "",
        "| contender | µs per step | steps |",
        "| --- | ---: | ---: |",
    ]
    for name, us in per_step["us_per_step"].items():
        lines.append(f"| {name} | {us:.3f} | {per_step['steps'][name]:.0f} |")
    lines += [
        "",
        "## Compile time",
        "",
        f"- numba, the explicit kernels: {compile_fig['kernel_compile_seconds']:.2f} s on "
        f"first use, then "
        f"cached on disk ({compile_fig['kernel_cached_load_seconds']:.2f} s per process to "
        f"load); the user's f: "
        f"{compile_fig['f_compile_seconds']:.3f} s once per f and process; the ensemble kernel: "
        f"{compile_fig['ensemble_kernel_compile_seconds']:.2f} s on first use, "
        f"{compile_fig['ensemble_kernel_cached_load_seconds']:.2f} s cached",
        f"- diffrax jit, first call: "
        f"{per_step['diffrax_first_call_seconds'] or float('nan'):.2f} s",
        f"- sweep of {compile_fig['sweep_solves']} solves "
        f"({compile_fig['sweep_seconds']['compiled']:.3f} s "
        f"compiled, {compile_fig['sweep_seconds']['Python']:.3f} s Python): compiled incl. "
        f"compile / Python = "
        f"{compile_fig['sweep_ratio_with_compile_first_use']:.3f} on first use (break-even after "
        f"{compile_fig['break_even_solves_first_use']:.0f} solves), "
        f"{compile_fig['sweep_ratio_with_compile_cached']:.3f} with the kernels cached "
        f"(break-even after "
        f"{compile_fig['break_even_solves_cached']:.0f})",
        "",
        f"## Ensemble of {ens['n_trajectories']} Van der Pol trajectories (mu = 1)",
        "",
        "| contender | seconds | max error vs dop853 1e-12 |",
        "| --- | ---: | ---: |",
        f"| dk.solve_ensemble tsit5, 1 thread (CPU) | {ens['seconds']['ensemble, 1 thread']:.3f} | "
        f"{ens['max_error_vs_reference']['ensemble tsit5']:.1e} |",
        f"| dk.solve_ensemble tsit5, all threads (wall) | "
        f"{ens['ensemble_all_threads_wall_seconds']:.3f} | |",
        f"| odeint (LSODA) loop, extrapolated from {ens['loop_subset']} | "
        f"{ens['projected_loop_seconds']['odeint loop']:.2f} | "
        f"{ens['max_error_vs_reference']['odeint']:.1e} |",
        f"| solve_ivp LSODA loop, extrapolated from {ens['loop_subset']} | "
        f"{ens['projected_loop_seconds']['solve_ivp LSODA loop']:.2f} | "
        f"{ens['max_error_vs_reference']['solve_ivp LSODA']:.1e} |",
        "",
        "## Goals",
        "",
    ]
    lines += [f"- {g.line()}" for g in goals]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--quick", action="store_true", help="fewer repeats, 1,000 trajectories, not recorded"
    )
    args = parser.parse_args(argv)
    repeats = 3 if args.quick else 7
    per_step, goals_a = bench_per_step(repeats)
    compile_fig, _ = bench_compile(repeats)
    ens, goals_b = bench_ensemble(max(1, repeats // 2), 1_000 if args.quick else N_ENSEMBLE)
    goals = goals_a + goals_b
    if not args.quick:
        path = record(
            "bench_compiled_explicit",
            dict(per_step=per_step, compile=compile_fig, ensemble=ens),
            goals,
        )
        (path.parent / "results.md").write_text(_markdown(per_step, compile_fig, ens, goals))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
