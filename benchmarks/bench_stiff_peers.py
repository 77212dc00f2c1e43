"""Stiff solving against the fastest compiled peers, CPU time at matched error.

Two parts, each ratio dynkit / peer from one run of this process:

1. **Small systems against numbalsoda** (LSODA from ODEPACK, called with a numba ``cfunc``
   right-hand side written in place, so nothing of Python runs inside its steps): Robertson to 1e11,
   HIRES, OREGO (the published references of :data:`dynkit.diagnostics.testset.TESTSET`) and Van der
   Pol μ = 1000 on [0, 3000] (reference: scipy Radau at 1e-12), as in :mod:`benchmarks.bench_stiff`.
   numbalsoda takes no Jacobian (LSODA differences its own) and one scalar ``atol``; every contender
   gets the same scalar ``atol = rtol · ATOL_RATIO[problem]``. dynkit runs ``radau5``, ``bdf``,
   ``rodas4``, ``rodas5`` with ``compile=True``, in four modes: the same in-place formulas as
   numbalsoda's ``cfunc`` (:data:`IN_PLACE`, marked :func:`dynkit.in_place`) with difference
   Jacobians (like for like with LSODA, the goal); the test set's ``f`` returning its value; that
   ``f`` with the analytic ``jac=``; and the in-place ``f`` as a prepared solve
   (:func:`dynkit.solvers.prepare`, checked once outside the timed runs as numbalsoda's ``cfunc``
   is compiled once; the last three printed beside the goal's).
2. **Large sparse systems against CVODE** (SUNDIALS through scikit-sundae, BDF with its sparse
   direct solver and its own grouped-difference Jacobian from the same sparsity pattern): the 1-D
   Brusselator of [HW] IV.1 with 1k, 10k and 100k states, dynkit's ``bdf`` with ``jac_sparsity=``.
   Both call the same Python ``f`` (CVODE through a wrapper that copies its value into CVODE's
   array). Reference: CVODE at rtol = atol = 1e-10, checked against dynkit's ``radau5`` at the same
   tolerance where that fits (1k states).

Each contender runs a ladder of rtols; its log CPU time is interpolated in log achieved error at the
levels (:func:`benchmarks.bench_stiff.at_level`, no extrapolation). The small systems' ladders run
3 times in the process and each level reports the median ratio with the range (this shared machine
moved one ladder's ratios by a third between runs). Timing: ``time.process_time``,
contenders of one rtol interleaved with the order rotated each round, the minimum over 5 rounds of
the mean of a batch of runs lasting about 20 ms (a sub-millisecond run timed alone moved the small
systems' ratios by half between runs of this script; one round for a run slower than 0.1 s; the
sparse part's runs are all slower). Compile time (numba compiling dynkit's kernels and each ``f``,
numbalsoda's ``cfunc``) is measured apart and printed, never inside a timed run. Goals
(``GOAL … met | NOT met``): dynkit / numbalsoda ≤ 1.0 at every problem and level both reach
(difference Jacobians), dynkit / CVODE ≤ 1.0 at 100k states.

The peers are optional (``pip install numbalsoda scikit-sundae``; numbalsoda builds from source and
needs a Fortran compiler, Debian's ``gfortran``): a part whose peer is missing is skipped with a
message naming the package. Without ``gfortran``, LSODA alone (C++; only numbalsoda's ``dop853``
and ``solve_ivp`` are Fortran) builds from the sdist with the flags of its CMake release build,
``g++ -O3 -DNDEBUG -fPIC -std=c++11 -shared src/LSODA.cpp src/wrapper.cpp -o liblsoda.so``, beside
a copy of ``numbalsoda/driver.py`` and an ``__init__.py`` importing only ``lsoda`` from it, on
``PYTHONPATH`` (how the record of 2026-12-07 was made).

Run ``OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice -n 19 python -m benchmarks.bench_stiff_peers``
(``--quick``: fewer rtols, the sparse part at 1k and 10k states only; ``--part sparse``, ``--states
1000 100000``: one part, chosen sizes; only a full run is recorded). The sparse rows also print
each contender's calls of ``f`` at matched error (counted by one wrapper around ``f`` for both).

References
----------
.. [HW] E. Hairer, G. Wanner, *Solving ODEs II*, 2nd ed., Springer 1996, Sect. IV.1 and IV.10.
"""

from __future__ import annotations

import argparse
import importlib.util
import time

import numpy as np

import dynkit as dk
from benchmarks._goals import check_goal, interleaved_minimum, record
from benchmarks.bench_stiff import _brusselator, _vdp, at_level, reference, rel_error
from dynkit.diagnostics.testset import TESTSET

NAME = "bench_stiff_peers"
DYNKIT = ("radau5", "bdf", "rodas4", "rodas5")
LEVELS = (1e-4, 1e-5, 1e-6, 1e-7)
RTOLS = (1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9)
ATOL_RATIO = {"robertson": 1e-8, "hires": 1e-3, "orego": 1.0, "vdp1000": 1e-2}
SPARSE_STATES = (1_000, 10_000, 100_000)
SPARSE_RTOLS = (1e-3, 1e-4, 1e-5, 1e-6, 1e-7)
SPARSE_LEVELS = (1e-4, 1e-5, 1e-6)
SLOW_S = 0.1
ROUNDS, BATCH_S = 5, 0.02  # five rounds of about 20 ms each: a sub-millisecond run alone is noise
LADDERS = 3  # the small systems' ladders run this often; each level reports the median ratio
# dynkit's contenders per method: f written in place with difference Jacobians (like for like with
# numbalsoda's cfunc: the goal), the test set's f returning its value, that f with its jac, and the
# in-place f as a prepared solve (dk.solvers.prepare: checked once, like numbalsoda's cfunc address)
MODES = ("inplace", "diff", "jac", "prepared")


def _missing(package: str) -> bool:
    if importlib.util.find_spec(package) is None:
        print(
            f"SKIPPED: {package} is not installed (pip install "
            f"{package.replace('sksundae', 'scikit-sundae')})"
        )
        return True
    return False


# ---- part 1: small systems, numbalsoda
# --------------------------------------------------------------------


def robertson(t, u, du):
    a, b, c = 0.04 * u[0], 1e4 * u[1] * u[2], 3e7 * u[1] * u[1]
    du[0] = -a + b
    du[1] = a - b - c
    du[2] = c


def hires(t, y, d):
    r = 280.0 * y[5] * y[7]
    d[0] = -1.71 * y[0] + 0.43 * y[1] + 8.32 * y[2] + 0.0007
    d[1] = 1.71 * y[0] - 8.75 * y[1]
    d[2] = -10.03 * y[2] + 0.43 * y[3] + 0.035 * y[4]
    d[3] = 8.32 * y[1] + 1.71 * y[2] - 1.12 * y[3]
    d[4] = -1.745 * y[4] + 0.43 * y[5] + 0.43 * y[6]
    d[5] = -r + 0.69 * y[3] + 1.71 * y[4] - 0.43 * y[5] + 0.69 * y[6]
    d[6] = r - 1.81 * y[6]
    d[7] = -r + 1.81 * y[6]


def orego(t, y, d):
    s, q, w = 77.27, 8.375e-6, 0.161
    d[0] = s * (y[1] + y[0] * (1.0 - q * y[0] - y[1]))
    d[1] = (y[2] - (1.0 + y[0]) * y[1]) / s
    d[2] = w * (y[0] - y[2])


def vdp1000(t, y, d):
    d[0] = y[1]
    d[1] = 1000.0 * (1.0 - y[0] * y[0]) * y[1] - y[0]


# the problems' formulas written in place, once: numbalsoda's cfunc and dynkit's in_place f call
# the same function (tests/test_bench_stiff_peers checks them against the test set's f)
IN_PLACE = {"robertson": robertson, "hires": hires, "orego": orego, "vdp1000": vdp1000}


def _numbalsoda_rhs() -> dict:
    """numbalsoda's ``cfunc`` right-hand sides (its ``lsoda_sig``) calling :data:`IN_PLACE`."""
    import numba
    from numbalsoda import lsoda_sig

    def rhs(field):
        compiled = numba.njit(field)

        @numba.cfunc(lsoda_sig)
        def on_pointers(t, u, du, p):
            compiled(t, u, du)

        return on_pointers

    return {name: rhs(field) for name, field in IN_PLACE.items()}


class Small:
    """One small problem: ``f``, ``jac``, ``y0``, ``t_end``, its reference and the peer's
    right-hand side."""

    def __init__(self, name: str, rhs):
        if name == "vdp1000":
            self.f, self.jac = _vdp()
            self.y0, self.t_end, self.reference = np.array([2.0, 0.0]), 3000.0, None
        else:
            p = TESTSET[name]
            self.f, self.jac, self.y0, self.t_end, self.reference = (
                p.f,
                p.jac,
                p.y0,
                p.t_end,
                p.reference,
            )
        self.name, self.rhs = name, rhs
        self.ref = reference(self)

    def runner(self, solver: str, rtol: float, t_end: float | None = None):
        """A run of ``solver`` to ``t_end`` (default the problem's), returning the final state
        (None on failure)."""
        atol = rtol * ATOL_RATIO[self.name]
        t_end = self.t_end if t_end is None else t_end
        if solver == "numbalsoda":
            from numbalsoda import lsoda

            address, t_eval = self.rhs.address, np.array([0.0, t_end])

            def run():
                usol, ok = lsoda(address, self.y0, t_eval, rtol=rtol, atol=atol, mxstep=500_000)
                return usol[-1] if ok else None

            return run
        method, mode = solver.split(":")
        jac = self.jac if mode == "jac" else None
        f = dk.in_place(IN_PLACE[self.name]) if mode in ("inplace", "prepared") else self.f
        if mode == "prepared":  # checked and compiled here, outside the timed run
            prepared = dk.solvers.prepare(
                f, self.y0, [0.0, t_end], method, rtol, atol, max_steps=500_000, throw=False
            )

            def run():
                sol = prepared()
                return sol.ys[-1] if sol.success else None

            return run

        def run():
            sol = dk.solve(
                f,
                self.y0,
                [0.0, t_end],
                method=method,
                rtol=rtol,
                atol=atol,
                jac=jac,
                compile=True,
                max_steps=500_000,
                throw=False,
            )
            return sol.ys[-1] if sol.success else None

        return run


def ladder(problem, solvers, rtols, log) -> dict:
    """Per solver, its runs: rtol, achieved error, CPU time (interleaved rounds, the minimum)."""
    runs = {s: [] for s in solvers}
    alive = list(solvers)
    for rtol in rtols:
        contenders = {s: problem.runner(s, rtol) for s in alive}
        best, ys = interleaved_minimum(contenders, ROUNDS, SLOW_S, BATCH_S)
        for s in contenders:
            if ys[s] is None:
                runs[s].append(dict(rtol=rtol, failed=True))
                alive.remove(s)
            else:
                runs[s].append(dict(rtol=rtol, error=rel_error(ys[s], problem.ref), time=best[s]))
                if s in getattr(problem, "calls", {}):
                    runs[s][-1]["nfe"] = problem.calls[s]  # calls of f in the last run
        log(
            f"  {problem.name} rtol {rtol:.0e}: "
            + "  ".join(
                f"{s} {1e3 * best[s]:.2f}ms"
                + (
                    f" err {runs[s][-1]['error']:.1e} nfe {runs[s][-1]['nfe']}"
                    if "nfe" in runs[s][-1]
                    else ""
                )
                for s in contenders
                if ys[s] is not None
            )
        )
    return runs


def matched(runs: dict, levels, ours: str, peer: str) -> list[dict]:
    """Per level both reach: the best of ``ours`` (a prefix filter) and the peer, at matched
    error."""
    rows = []
    for level in levels:
        at = {
            s: at_level([p for p in pts if "error" in p], level, "time") for s, pts in runs.items()
        }
        mine = {s: v for s, v in at.items() if v is not None and s.startswith(ours)}
        if not mine or at.get(peer) is None:
            continue
        best = min(mine, key=mine.get)
        row = dict(
            level=level,
            dynkit=best,
            dynkit_s=mine[best],
            peer_s=at[peer],
            ratio=mine[best] / at[peer],
        )
        for s, key in ((best, "dynkit_nfe"), (peer, "peer_nfe")):
            pts = [p for p in runs[s] if "nfe" in p]
            if pts:  # calls of f at matched error, interpolated as the time is
                row[key] = at_level(pts, level, "nfe")
        rows.append(row)
    return rows


def small_systems(rtols, log, repeats: int = LADDERS) -> dict:
    start = time.perf_counter()
    rhs = _numbalsoda_rhs()
    compile_s = {"numbalsoda cfuncs": time.perf_counter() - start}
    out = {}
    for name in ("robertson", "hires", "orego", "vdp1000"):
        problem = Small(name, rhs[name])
        solvers = ["numbalsoda"] + [f"{m}:{mode}" for mode in MODES for m in DYNKIT]
        start = time.perf_counter()
        for s in (
            solvers
        ):  # compiling, loading the kernels, numba compiling f and jac: kept out of the timing
            problem.runner(s, 1e-3)()
        compile_s[f"{name}: first solves"] = time.perf_counter() - start
        ladders = [ladder(problem, solvers, rtols, log) for _ in range(repeats)]
        out[name] = dict(
            fixed_us=fixed_costs(problem),
            ladders=ladders,
            **{
                mode: median_rows([matched(runs, LEVELS, prefix, "numbalsoda") for runs in ladders])
                for mode, prefix in ((mode, tuple(f"{m}:{mode}" for m in DYNKIT)) for mode in MODES)
            },
        )
    out["compile_s"] = compile_s
    return out


def fixed_costs(problem) -> dict[str, float]:
    """Microseconds of CPU per solve over a span of ``1e-30 · t_end`` (one step): what a solve
    costs before its steps (validation, arguments, the result; with ``jac=`` its check: one call
    of ``jac`` and two of ``f``), numbalsoda's beside dynkit's."""
    who = ("numbalsoda", *(f"rodas5:{mode}" for mode in MODES))
    span = 1e-30 * problem.t_end
    best, _ = interleaved_minimum(
        {s: problem.runner(s, 1e-6, span) for s in who}, ROUNDS, SLOW_S, BATCH_S
    )
    return {s: 1e6 * best[s] for s in who}


def median_rows(per_ladder: list[list[dict]]) -> list[dict]:
    """Per level every ladder reaches: the row of the ladder with the median ratio (for an even
    count the upper middle, the one less kind to dynkit), with every ladder's ratio in
    ``ratios``."""
    levels = [{row["level"]: row for row in rows} for rows in per_ladder]
    common = [lv for lv in LEVELS if all(lv in by for by in levels)]
    out = []
    for level in common:
        rows = sorted((by[level] for by in levels), key=lambda row: row["ratio"])
        middle = dict(rows[len(rows) // 2])
        middle["ratios"] = [by[level]["ratio"] for by in levels]
        out.append(middle)
    return out


# ---- part 2: large sparse systems, CVODE
# ------------------------------------------------------------------


class Sparse:
    """The 1-D Brusselator with ``states`` unknowns, its sparsity pattern and a CVODE reference."""

    def __init__(self, states: int):
        self.f, _, self.y0, self.t_end, self.sparsity = _brusselator(states // 2)
        self.name, self.states = f"brusselator{states}", states
        self.calls: dict[str, int] = {}  # per contender: the calls of f in its last run
        self.ref = self._cvode(1e-10, 1e-10)
        if self.ref is None:
            raise RuntimeError(f"{self.name}: the CVODE reference at 1e-10 failed")

    def _cvode(self, rtol, atol):
        from sksundae.cvode import CVODE

        f = self.f

        def rhs(t, y, yp):
            yp[:] = f(t, y)

        solver = CVODE(
            rhs,
            method="BDF",
            rtol=rtol,
            atol=atol,
            linsolver="sparse",
            sparsity=self.sparsity,
            max_num_steps=500_000,
        )
        sol = solver.solve(np.array([0.0, self.t_end]), self.y0)
        return np.asarray(sol.y)[-1] if sol.success else None

    def _counted(self, solver: str):
        """``f`` counting its calls into ``self.calls[solver]`` (the same wrapper for both
        contenders, so its cost is shared)."""
        f, calls = self.f, self.calls
        calls[solver] = 0

        def counted(t, y):
            calls[solver] += 1
            return f(t, y)

        return counted

    def runner(self, solver: str, rtol: float):
        if solver == "cvode":

            def run_cvode():
                f = self.f
                self.f = self._counted(solver)
                try:
                    return self._cvode(rtol, rtol)
                finally:
                    self.f = f

            return run_cvode

        def run():
            sol = dk.solve(
                self._counted(solver),
                self.y0,
                [0.0, self.t_end],
                method=solver,
                rtol=rtol,
                atol=rtol,
                jac_sparsity=self.sparsity,
                max_steps=500_000,
                throw=False,
            )
            return sol.ys[-1] if sol.success else None

        return run


def sparse_systems(states, rtols, log) -> dict:
    out = {}
    for n in states:
        problem = Sparse(n)
        runs = ladder(problem, ["cvode", "bdf"], rtols, log)
        out[problem.name] = dict(runs=runs, rows=matched(runs, SPARSE_LEVELS, ("bdf",), "cvode"))
    return out


def report(small: dict | None, sparse: dict | None) -> list:
    goals = []
    if small is not None:
        print("\ndynkit (compiled) / numbalsoda, CPU time at matched error")
        print(
            f"{'problem':10} {'level':>7}  {'in-place f: median [range]':>30}"
            f"  {'returning f (median)':>22}  {'analytic jac (median)':>22}"
            f"  {'prepared (median)':>20}"
        )
        worst = 0.0
        for name, data in small.items():
            if name == "compile_s":
                continue
            others = [{r["level"]: r for r in data[mode]} for mode in ("diff", "jac", "prepared")]
            for row in data["inplace"]:
                worst = max(worst, row["ratio"])
                texts = [
                    f"{o['ratio']:.2f} ({o['dynkit'].split(':')[0]})" if o else "-"
                    for o in (by.get(row["level"]) for by in others)
                ]
                spread = f"[{min(row['ratios']):.2f}-{max(row['ratios']):.2f}]"
                print(
                    f"{name:10} {row['level']:7.0e}  {row['ratio']:>6.2f} {spread:>11} "
                    f"({row['dynkit'].split(':')[0]:>6})"
                    f"  {texts[0]:>22}  {texts[1]:>22}  {texts[2]:>20}"
                )
        for name, data in small.items():
            if name != "compile_s":
                fixed = data["fixed_us"]
                print(
                    f"  fixed cost per solve, {name}: numbalsoda {fixed['numbalsoda']:.0f} µs, "
                    f"dynkit rodas5 {fixed['rodas5:inplace']:.0f} µs in place, "
                    f"{fixed['rodas5:diff']:.0f} µs returning f, {fixed['rodas5:jac']:.0f} µs "
                    f"with jac= and its check, {fixed['rodas5:prepared']:.0f} µs prepared"
                )
        for what, seconds in small["compile_s"].items():
            print(f"  compile, apart: {what} {seconds:.1f} s")
        goals.append(
            check_goal(
                "stiff small systems: dynkit/numbalsoda, worst level (in-place f, difference "
                "Jacobians)",
                worst,
                1.0,
            )
        )
    if sparse is not None:
        print("\ndynkit bdf / CVODE (sparse), CPU time at matched error")
        for name, data in sparse.items():
            for row in data["rows"]:
                calls = (
                    f", f calls dynkit {row['dynkit_nfe']:.0f} CVODE {row['peer_nfe']:.0f}"
                    if "dynkit_nfe" in row and "peer_nfe" in row
                    else ""
                )
                print(
                    f"{name:20} {row['level']:7.0e}  {row['ratio']:.2f}  "
                    f"(dynkit {row['dynkit_s']:.3f} s, CVODE {row['peer_s']:.3f} s{calls})"
                )
        largest = max(sparse, key=lambda k: int(k.removeprefix("brusselator")))
        rows = sparse[largest]["rows"]
        if rows:
            goals.append(
                check_goal(
                    f"stiff sparse: dynkit/CVODE at {largest}, worst level",
                    max(r["ratio"] for r in rows),
                    1.0,
                )
            )
    return goals


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="fewer rtols, 1k and 10k states; nothing recorded"
    )
    parser.add_argument(
        "--part", choices=("all", "small", "sparse"), default="all", help="run one part only"
    )
    parser.add_argument(
        "--states", type=int, nargs="+", help="the sparse part's sizes (default 1k, 10k, 100k)"
    )
    args = parser.parse_args(argv)
    log = lambda line: print(line, flush=True)  # noqa: E731
    small = (
        None
        if args.part == "sparse" or _missing("numbalsoda")
        else small_systems(RTOLS[:5] if args.quick else RTOLS, log)
    )
    states = args.states or (SPARSE_STATES[:2] if args.quick else SPARSE_STATES)
    sparse = (
        None
        if args.part == "small" or _missing("sksundae")
        else sparse_systems(
            states,
            SPARSE_RTOLS[:3] if args.quick else SPARSE_RTOLS,
            log,
        )
    )
    goals = report(small, sparse)
    if not args.quick and args.part == "all" and args.states is None and goals:
        record(NAME, {"small": small, "sparse": sparse}, goals)


if __name__ == "__main__":
    main()
