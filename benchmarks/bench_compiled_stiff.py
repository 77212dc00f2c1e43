"""Compiled stiff methods against LSODA, scipy's Radau and BDF at matched error in CPU time (issue
36).

Problems, references, the achieved-error measure and the matched-error interpolation are
:mod:`benchmarks.bench_stiff`'s (imported, not copied): Robertson to 1e11, HIRES, OREGO (published
references) and Van der Pol μ = 1000 on [0, 3000] (scipy Radau at rtol 1e-12),
``atol = rtol · atol_ratio``, output at the end time only. Two Jacobian modes: the analytic ``jac=``
for every solver, and none (difference Jacobians: dynkit's rule, LSODA's own; the compiled methods
and LSODA only, to keep the run short: LSODA is the best scipy method at every point of the first
mode). Each solver runs a ladder of rtols; its log CPU time is interpolated in log achieved error at
the levels 1e-4 … 1e-8 (no extrapolation: a level outside a solver's achieved errors is left out for
it). rtol runs from 1e-3 to 1e-11 for the compiled methods and LSODA, to 1e-9 for the Python path
and scipy's Radau and BDF (their runs at 1e-10 and 1e-11 took four minutes; the best scipy method at
these problems and levels is LSODA throughout).

Contenders: dynkit's ``radau5``, ``bdf``, ``rodas4``, ``rodas5`` through
``dk.solve(..., compile=True)`` (after) and through the Python path (before), scipy's ``LSODA``,
``Radau``, ``BDF``. Timing: ``time.process_time`` (CPU time of this process, one BLAS thread: run
with ``OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1``), every contender of a (problem, rtol) run
interleaved round robin with the order rotated each round, the minimum of ``--repeats`` rounds (a
solver slower than 1 s is timed once). The compile time is measured apart (:func:`compile_times`):
each kernel's loading in this process (from numba's cache; ``--cold-compile`` measures a user's
first solves in fresh processes, from an empty cache and after ``dynkit build-kernels``, with two
goals of their own, recorded in ``cold_start.json``) and, per problem, numba compiling the user's
``f`` and ``jac`` with a first solve of every method, never inside the timed runs.

Goal (printed ``GOAL … met | NOT met``): at every problem and level both reach, the best compiled
dynkit method's CPU time ≤ 1.0× LSODA's. Printed beside it: the same ratio for the Python path
(before), and against the best scipy method.

Run
``OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice -n 19 python -m benchmarks.bench_compiled_stiff``
(about 2 min; ``--quick``: two problems, nothing recorded).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import scipy.integrate

import dynkit as dk
from benchmarks._goals import check_goal, interleaved_minimum, record
from benchmarks.bench_stiff import at_level, problems, reference, rel_error

NAME = "bench_compiled_stiff"
LEVELS = [1e-4, 1e-5, 1e-6, 1e-7, 1e-8]
RTOLS = [1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10, 1e-11]
# the Python path (before) and scipy's Radau and BDF stop here: their runs at 1e-10 and 1e-11 alone
# took four minutes
PYTHON_MIN_RTOL = 1e-9
DYNKIT = ("radau5", "bdf", "rodas4", "rodas5")
PEERS = ("LSODA", "Radau", "BDF")
PROBLEMS = ("robertson", "hires", "orego", "vdp1000")
SLOW_S = 0.1  # a run slower than this is timed once (its noise is small in relative terms)


def _runner(p, solver: str, rtol: float, with_jac: bool = True):
    """A no-argument callable solving ``p`` with ``solver`` ("compiled:radau5", "python:bdf",
    "scipy:LSODA")."""
    kind, method = solver.split(":")
    atol = rtol * p.atol_ratio
    if kind == "scipy":

        def run():
            res = scipy.integrate.solve_ivp(
                p.f,
                (0.0, p.t_end),
                p.y0,
                method=method,
                rtol=rtol,
                atol=atol,
                jac=p.jac if with_jac else None,
            )
            return res.y[:, -1] if res.success else None
    else:
        compiled = kind == "compiled"

        def run():
            sol = dk.solve(
                p.f,
                p.y0,
                [0.0, p.t_end],
                method=method,
                rtol=rtol,
                atol=atol,
                jac=p.jac if with_jac else None,
                compile=compiled,
                max_steps=200_000,
                throw=False,
            )
            return sol.ys[-1] if sol.success else None

    return run


def compile_times(ps) -> dict:
    """Seconds spent compiling, kept out of the timed runs: each kernel's loading in this process
    (from numba's cache, or its compilation the first time ever), then per problem numba
    compiling ``f`` and ``jac`` (:func:`dynkit.solvers.compiled.compile_problem`) and the first
    solve of every method in both Jacobian modes (the drivers' contiguous adapters of ``f`` and
    ``jac`` compile there)."""
    from dynkit.solvers.compiled import bdf, compile_problem, radau, rosenbrock

    out = {}
    for module in (radau, bdf, rosenbrock):
        start = time.perf_counter()
        module.kernel()
        out[f"kernel {module.__name__.rsplit('.', 1)[1]} (load)"] = time.perf_counter() - start
    for p in ps:
        start = time.perf_counter()
        compile_problem(p.f, p.y0, jac=p.jac)
        for method in DYNKIT:
            for with_jac in (True, False):
                _runner(p, f"compiled:{method}", 1e-3, with_jac)()
        out[f"{p.name}: f and jac"] = time.perf_counter() - start
    return out


FIRST_SOLVE_SCRIPT = """
import json, sys, time
import numpy as np
import dynkit as dk

def robertson(t, y):  # a user's plain numpy f: compile=True compiles it with numba
    return np.array([-0.04 * y[0] + 1e4 * y[1] * y[2],
                     0.04 * y[0] - 1e4 * y[1] * y[2] - 3e7 * y[1] ** 2, 3e7 * y[1] ** 2])

out = {}
for method in sys.argv[1:]:
    start = time.process_time()
    dk.solve(robertson, np.array([1.0, 0.0, 0.0]), np.array([0.0, 40.0]), method=method,
             rtol=1e-6, atol=1e-10, compile=True)
    out[method] = time.process_time() - start
out["process"] = time.process_time()  # imports included
print(json.dumps(out))
"""
FIRST_SOLVES = ("dopri5", "radau5", "bdf", "rodas5")  # one per kernel


def _fresh_process(folder: str, *args: str) -> str:
    env = {**os.environ, "DYNKIT_CACHE_DIR": folder, "NUMBA_CACHE_DIR": folder}
    done = subprocess.run(
        [sys.executable, *args], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip().splitlines()[-1]


def cold_start_times() -> dict:
    """CPU seconds of a user's first ``compile=True`` solves, each in a fresh process, from
    (a) an empty cache folder, one method per process (what the first solve with that method pays:
    its kernel compiled, the user's ``f`` compiled, the solve), and (b) a folder that ``dynkit
    build-kernels`` filled (its own time apart), all four methods in one process (the kernels
    loaded)."""
    out: dict = {"empty cache": {}, "after build-kernels": {}}
    for method in FIRST_SOLVES:
        with tempfile.TemporaryDirectory() as cache:
            first = json.loads(_fresh_process(cache, "-c", FIRST_SOLVE_SCRIPT, method))
        out["empty cache"][method] = {"first solve": first[method], "process": first["process"]}
    with tempfile.TemporaryDirectory() as cache:
        start = time.time()
        build = subprocess.run(
            [sys.executable, "-m", "dynkit.cli", "build-kernels"],
            env={**os.environ, "DYNKIT_CACHE_DIR": cache, "NUMBA_CACHE_DIR": cache},
            capture_output=True,
            text=True,
            check=True,
        )
        out["build-kernels"] = {"wall": time.time() - start, "lines": build.stdout.splitlines()}
        out["after build-kernels"] = json.loads(
            _fresh_process(cache, "-c", FIRST_SOLVE_SCRIPT, *FIRST_SOLVES)
        )
    return out


def break_even(runs: dict, compile_s: float, rtol: float = 1e-6) -> float | None:
    """Solves after which numba's compile time of ``f`` and ``jac`` is paid back against LSODA
    (at ``rtol``, best compiled method): ``compile / (LSODA's time − ours)``."""
    at = {
        s: next((pt["time"] for pt in pts if pt["rtol"] == rtol and "time" in pt), None)
        for s, pts in runs.items()
    }
    ours = [v for s, v in at.items() if s.startswith("compiled:") and v is not None]
    lsoda = at.get("scipy:LSODA")
    if not ours or lsoda is None or lsoda <= min(ours):
        return None
    return compile_s / (lsoda - min(ours))


def measure(p, solvers, rtols, repeats, log, with_jac: bool) -> dict:
    """Per solver, the runs of its ladder: rtol, achieved error, CPU time (interleaved, min over
    rounds)."""
    ref = reference(p)
    runs = {s: [] for s in solvers}
    alive = list(solvers)  # a solver that failed at one rtol is not run at tighter ones
    for rtol in rtols:
        contenders = {
            s: _runner(p, s, rtol, with_jac)
            for s in alive
            if not (
                s.split(":")[1] != "LSODA"
                and not s.startswith("compiled:")
                and rtol < PYTHON_MIN_RTOL
            )
        }
        best, ys = interleaved_minimum(contenders, repeats, SLOW_S)
        for s in contenders:
            if ys[s] is None:
                runs[s].append(dict(rtol=rtol, failed=True))
                alive.remove(s)
                continue
            runs[s].append(dict(rtol=rtol, error=rel_error(ys[s], ref), time=best[s]))
        log(
            f"  {p.name} {'jac' if with_jac else 'diff'} rtol {rtol:.0e}: "
            + "  ".join(
                f"{s.split(':')[0][0]}:{s.split(':')[1]} {1e3 * best[s]:.1f}ms"
                for s in contenders
                if ys[s] is not None
            )
        )
    return runs


def ratio_table(name: str, mode: str, runs: dict) -> list[dict]:
    """Per level: best compiled, best Python-path dynkit, LSODA and best scipy time at matched
    error."""
    rows = []
    for level in LEVELS:
        at = {
            s: at_level([pt for pt in pts if "error" in pt], level, "time")
            for s, pts in runs.items()
        }
        at = {s: v for s, v in at.items() if v is not None}
        compiled = {s: v for s, v in at.items() if s.startswith("compiled:")}
        python = {s: v for s, v in at.items() if s.startswith("python:")}
        scipy_ = {s: v for s, v in at.items() if s.startswith("scipy:")}
        if not compiled or "scipy:LSODA" not in at:
            continue
        bc = min(compiled, key=compiled.get)
        row = dict(
            problem=name,
            mode=mode,
            level=level,
            compiled=bc.split(":")[1],
            compiled_s=compiled[bc],
            lsoda_s=at["scipy:LSODA"],
            after_vs_lsoda=compiled[bc] / at["scipy:LSODA"],
        )
        bs = min(scipy_, key=scipy_.get)
        row.update(best_scipy=bs.split(":")[1], after_vs_best_scipy=compiled[bc] / scipy_[bs])
        if python:
            bp = min(python, key=python.get)
            row.update(
                python=bp.split(":")[1],
                python_s=python[bp],
                before_vs_lsoda=python[bp] / at["scipy:LSODA"],
                speedup=python[bp] / compiled[bc],
            )
        rows.append(row)
    return rows


def markdown(rows: list[dict], compile_s: dict) -> str:
    lines = [
        "| problem | jac | error | before: best Python dynkit / LSODA | after: best compiled "
        "dynkit / LSODA | "
        "after / best scipy | compiled method | speed-up over Python path |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        before = f"{r['before_vs_lsoda']:.2f} ({r['python']})" if "python" in r else "–"
        speedup = f"{r['speedup']:.1f}×" if "speedup" in r else "–"
        lines.append(
            f"| {r['problem']} | {r['mode']} | {r['level']:.0e} | {before} | "
            f"{r['after_vs_lsoda']:.2f} | "
            f"{r['after_vs_best_scipy']:.2f} ({r['best_scipy']}) | {r['compiled']} | {speedup} |"
        )
    lines += [
        "",
        "Compile time (s, not in the ratios): "
        + ", ".join(f"{k} {v:.2f}" for k, v in compile_s.items()),
    ]
    return "\n".join(lines)


def cold_start(argv) -> None:
    """``--cold-compile``: :func:`cold_start_times`, its two goals, recorded apart."""
    from benchmarks._goals import RESULTS

    cold = cold_start_times()
    for where in ("empty cache", "after build-kernels"):
        print(f"{where}:", json.dumps(cold[where], default=lambda v: round(v, 2)))
    print("build-kernels:", *cold["build-kernels"]["lines"], sep="\n  ")
    worst_empty = max(v["process"] for v in cold["empty cache"].values())
    after = cold["after build-kernels"]["process"]
    goals = [
        check_goal(
            "cold start, empty cache: CPU s of a fresh process's first compiled solve, worst "
            "method (imports, kernel compile, f compile, solve)",
            worst_empty,
            15.0,
        ),
        check_goal(
            "cold start after `dynkit build-kernels` (make install): CPU s of a fresh process "
            "making the first solve of each of dopri5, radau5, bdf, rodas5",
            after,
            15.0,
        ),
    ]
    from dynkit.io import write_json

    write_json(  # beside the timed runs' results.json, which it leaves as it is
        RESULTS / NAME / "cold_start.json",
        {**cold, "goals": [g.as_dict() for g in goals]},
        command="python -m benchmarks.bench_compiled_stiff --cold-compile",
    )


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--quick", action="store_true", help="Robertson and HIRES only, nothing recorded"
    )
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-python", action="store_true", help="leave the Python path (before) out")
    ap.add_argument(
        "--cold-compile",
        action="store_true",
        help="only measure a user's first compiled solves in fresh processes, from an empty cache "
        "and after `dynkit build-kernels` (about 3 min), recorded apart",
    )
    args = ap.parse_args(argv)
    if args.cold_compile:
        cold_start(argv)
        return
    ps = [p for p in problems(False) if p.name in PROBLEMS]
    if args.quick:
        ps = [p for p in ps if p.name in ("robertson", "hires")]
    solvers = [f"compiled:{m}" for m in DYNKIT] + [f"scipy:{m}" for m in PEERS]
    difference_solvers = [f"compiled:{m}" for m in DYNKIT] + ["scipy:LSODA"]
    if not args.no_python:
        solvers += [f"python:{m}" for m in DYNKIT]
    compile_s = compile_times(ps)
    print("compile time (s):", {k: round(v, 2) for k, v in compile_s.items()}, flush=True)
    data = dict(
        levels=LEVELS, rtols=RTOLS, repeats=args.repeats, compile_s=compile_s, runs={}, table=[]
    )
    for mode, with_jac, chosen in (
        ("jac", True, solvers),
        ("differences", False, difference_solvers),
    ):
        for p in ps:
            runs = measure(p, chosen, RTOLS, args.repeats, lambda s: print(s, flush=True), with_jac)
            data["runs"][f"{p.name} {mode}"] = runs
            data["table"] += ratio_table(p.name, mode, runs)
            if with_jac:
                data.setdefault("break_even_solves", {})[p.name] = break_even(
                    runs, compile_s[f"{p.name}: f and jac"]
                )
    table = markdown(data["table"], compile_s)
    table += (
        "\n\nSolves after which compiling f and jac is paid back against LSODA (rtol 1e-6, "
        "jac mode): "
        + ", ".join(
            f"{k} {v:.0f}" if v is not None else f"{k} –"
            for k, v in data["break_even_solves"].items()
        )
    )
    print("\n" + table, flush=True)
    worst = max(r["after_vs_lsoda"] for r in data["table"])
    goal = check_goal(
        "compiled stiff: best compiled dynkit CPU time / LSODA at matched error, worst over "
        "problems, "
        "Jacobian modes and levels 1e-4..1e-8",
        worst,
        1.0,
    )
    if not args.quick:
        path = record(NAME, data, [goal], argv=["bench_compiled_stiff", *(argv or [])])
        (path.parent / "README.md").write_text(
            f"# {NAME}\n\n{__doc__.split(chr(10))[0]}\n\n{table}\n\n{goal.line()}\n"
        )


if __name__ == "__main__":
    main()
