"""Stiff solvers against scipy's Radau and BDF on the Bari IVP test set (issue 13, Sect. 1).

Problems (:data:`dynkit.diagnostics.testset.TESTSET`): Robertson to t = 1e11, HIRES, Van der Pol
μ = 1000 in the test set's scaled form (VDPOL, ε = 1e-6, t ∈ [0, 2]) and OREGO, each with its
published reference value, checked here independently against scipy Radau at rtol = 1e-12.

Every solver gets the problem's analytic Jacobian (``jac=``), so that no solver's count hides
finite-difference calls; dynkit's ``jac`` also says ``∂f/∂t = 0`` (the problems are autonomous;
Radau and BDF do not use ∂f/∂t). Counts: ``nfe`` (dynkit: every call of ``f``; scipy: ``nfev``), ``njev``, ``nlu``; *work* = nfe + njev + nlu, each weighed 1
(one analytic Jacobian of these ≤ 8-dimensional problems costs about one call of ``f``; one LU of an
≤ 8×8 matrix less). Wall time: the best of 3 runs of each point.

Error: ``max_i |y_i − r_i| / max(|r_i|, 1e-6 max_j |r_j|)`` at the final time (relative per
component; components below 1e-6 of the largest, Robertson's y2 ≈ 8e-14, measured against that floor).

Goals, in one run:

1. accuracy: rodas4 and auto at rtol = 1e-6 (atol = 1e-10): error ≤ 1e-3 on every problem;
2. work and NFE at matched error ≤ scipy Radau and ≤ scipy BDF: the peer's log work (log NFE,
   log time) interpolated linearly in log error at our rtol = 1e-6 error (peers run at
   rtol = 1e-3 … 1e-11; where the peer never got as accurate, its most accurate point stands in);
   the ratio ours / peer ≤ 1 for each problem.

Run ``python -m benchmarks.bench_stiff`` (``--quick``: fewer peer tolerances, no record).
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import scipy.integrate

import dynkit as dk
from benchmarks._goals import check_goal, record
from dynkit.diagnostics.testset import TESTSET

NAME = "bench_stiff"
ATOL = 1e-10
RTOL = 1e-6
OURS = ("rodas4", "auto")
PEERS = ("Radau", "BDF")


def rel_error(y, ref) -> float:
    ref = np.asarray(ref, float)
    floor = 1e-6 * np.abs(ref).max()
    return float(np.max(np.abs(np.asarray(y, float) - ref) / np.maximum(np.abs(ref), floor)))


def run_dynkit(problem, method: str, rtol: float) -> dict:
    def go():
        # the test-set problems are autonomous: jac returns (J, ∂f/∂t = 0), as scipy needs no ∂f/∂t either
        return dk.solve(problem.f, problem.y0, [0.0, problem.t_end], method=method, rtol=rtol, atol=ATOL,
                        jac=lambda t, y: (problem.jac(t, y), 0), max_steps=1_000_000)

    sol, best = None, np.inf
    for _ in range(3):
        start = time.perf_counter()
        sol = go()
        best = min(best, time.perf_counter() - start)
    s = sol.stats
    return dict(solver=method, rtol=rtol, error=rel_error(sol.ys[-1], problem.reference), nfe=s.nfe,
                njev=s.njev, nlu=s.nlu, work=s.nfe + s.njev + s.nlu, time=best, steps=s.n_steps,
                switches=s.switches)


def run_scipy(problem, method: str, rtol: float, atol: float = ATOL, repeats: int = 3) -> dict:
    best, res = np.inf, None
    for _ in range(repeats):
        start = time.perf_counter()
        res = scipy.integrate.solve_ivp(problem.f, (0.0, problem.t_end), problem.y0, method=method, rtol=rtol,
                                        atol=atol, jac=problem.jac)
        best = min(best, time.perf_counter() - start)
    return dict(solver=method, rtol=rtol, error=rel_error(res.y[:, -1], problem.reference), nfe=res.nfev,
                njev=res.njev, nlu=res.nlu, work=res.nfev + res.njev + res.nlu, time=best,
                success=bool(res.success))


def matched(peer_points: list[dict], error: float, key: str) -> tuple[float | None, str]:
    """The peer's ``key`` at ``error``, interpolated linearly in log-log, and how it was matched.

    Below the peer's smallest error (it never got as accurate at any tolerance run), the peer's most
    accurate point stands in: a comparison in the peer's favour (less accuracy for its work). Above
    its largest error: None.
    """
    pts = sorted((p["error"], p[key]) for p in peer_points if p["error"] > 0 and p.get("success", True))
    if not pts or error > pts[-1][0]:
        return None, "our error above every peer point"
    if error < pts[0][0]:
        return pts[0][1], f"peer never reached our error: its most accurate point (error {pts[0][0]:.2e})"
    le = np.log([e for e, _ in pts])
    lv = np.log([v for _, v in pts])
    order = np.argsort(le)
    return float(np.exp(np.interp(np.log(error), le[order], lv[order]))), "interpolated"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer peer tolerances; nothing recorded")
    args = parser.parse_args(argv)
    peer_rtols = [1e-3, 1e-5, 1e-7, 1e-9] if args.quick else [1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10, 1e-11]
    data, goals = {}, []
    for name, problem in TESTSET.items():
        check = run_scipy(problem, "Radau", 1e-12, atol=1e-14, repeats=1)
        print(f"{name}: published reference vs scipy Radau at rtol 1e-12: relative difference {check['error']:.2e}")
        ours = {m: run_dynkit(problem, m, RTOL) for m in OURS}
        peers = {p: [run_scipy(problem, p, r) for r in peer_rtols] for p in PEERS}
        for m, point in ours.items():
            print(f"  {m:8s} rtol {RTOL:g}: error {point['error']:.2e}, nfe {point['nfe']}, njev {point['njev']}, "
                  f"nlu {point['nlu']}, work {point['work']}, {1e3 * point['time']:.1f} ms, switches {point['switches']}")
        for p, pts in peers.items():
            for pt in pts:
                print(f"  {p:8s} rtol {pt['rtol']:g}: error {pt['error']:.2e}, nfe {pt['nfe']}, njev {pt['njev']}, "
                      f"nlu {pt['nlu']}, work {pt['work']}, {1e3 * pt['time']:.1f} ms")
        data[name] = dict(reference_check=check["error"], ours=ours, peers=peers)
        for m, point in ours.items():
            goals.append(check_goal(f"{name} {m} error at rtol 1e-6 ≤ 1e-3", point["error"], 1e-3))
            for p in PEERS:
                for key in ("nfe", "work", "time"):
                    peer, how = matched(peers[p], point["error"], key)
                    label = f"{name} {m} {key} / {p} {key} at matched error ≤ 1"
                    if peer is None:
                        goals.append(check_goal(label, np.inf, 1.0, note=f"our error {point['error']:.2e}: {how}"))
                    else:
                        goals.append(check_goal(label, point[key] / peer, 1.0, note=f"{point[key]:.4g} vs "
                                                f"{peer:.4g} at error {point['error']:.2e} ({how})"))
    if not args.quick:
        record(NAME, data, goals)


if __name__ == "__main__":
    main()
