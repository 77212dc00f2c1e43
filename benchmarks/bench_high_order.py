"""High-order and modern 5th-order pairs at matched error (issue 13, Sect. 2).

Goals, each a ratio against a peer measured in this run:

1. ``dop853`` NFE / scipy ``DOP853`` NFE at matched error ≤ 1, for dynkit's points at
   rtol = atol ∈ [1e-13, 1e-10], on Arenstorf, Pleiades, Lotka–Volterra and the rigid body;
2. ``tsit5`` NFE / ``dopri5`` NFE at matched error ≤ 1 (rtol 1e-5 … 1e-10, same problems).

Matched error: the peer's log NFE is interpolated linearly in log error at each of our errors that
lies inside the peer's error range; a point whose relative error exceeds 1e-2 (the orbit was lost)
is neither ours nor the peer's to match. Errors are relative, ``|y - y_ref|_∞ / |y_ref|_∞`` at the
final time, against references from independent computations: Arenstorf's period (y(T) = y(0)),
the rigid body's Jacobi elliptic closed form (DETEST B5), and 24-digit Taylor-series solutions
(``mpmath.odefun``) for Lotka–Volterra and Pleiades, cached in
``analysis/results/bench_high_order/references.json``.

Run ``python -m benchmarks.bench_high_order`` (``--quick``: fewer tolerances).
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

import dynkit as dk
from benchmarks._goals import RESULTS, check_goal, record
from dynkit.diagnostics.work_precision import PROBLEMS as DIAG_PROBLEMS

LOST = 1e-2  # relative error beyond which a solver has lost the solution: not a matched point
NAME = "bench_high_order"


def lotka_volterra(t, y):
    return np.array([1.5 * y[0] - y[0] * y[1], -3.0 * y[1] + y[0] * y[1]])


_PL_X = [3, 3, -1, -3, 2, -2, 2]
_PL_Y = [3, -3, 2, 0, 0, -4, 4]
_PL_VX = [0, 0, 0, 0, 0, 1.75, -1.5]
_PL_VY = [0, 0, 0, -1.25, 1, 0, 0]
_PL_M = np.arange(1.0, 8.0)


def pleiades(t, u):
    """Seven bodies in the plane, masses 1..7 ([HNW] II.10, Eq. (10.3))."""
    x, y = u[0:7], u[7:14]
    dx, dy = x[None, :] - x[:, None], y[None, :] - y[:, None]
    r3 = (dx * dx + dy * dy) ** 1.5
    np.fill_diagonal(r3, np.inf)
    return np.concatenate([u[14:28], (_PL_M * dx / r3).sum(axis=1), (_PL_M * dy / r3).sum(axis=1)])


def _mp_reference(name: str) -> list[str]:
    """Taylor-series solution in 24 digits (mpmath.odefun): independent of every RK method here."""
    import mpmath

    mpmath.mp.dps = 24
    if name == "lotka_volterra":

        def f(t, y):
            return [1.5 * y[0] - y[0] * y[1], -3 * y[1] + y[0] * y[1]]

        y0, t_end = [1, 1], 12
    else:

        def f(t, u):
            x, y = u[0:7], u[7:14]
            ax, ay = [0] * 7, [0] * 7
            for i in range(7):
                for j in range(7):
                    if i != j:
                        dx, dy = x[j] - x[i], y[j] - y[i]
                        r3 = (dx * dx + dy * dy) ** mpmath.mpf(1.5)
                        ax[i] += (j + 1) * dx / r3
                        ay[i] += (j + 1) * dy / r3
            return list(u[14:28]) + ax + ay

        y0, t_end = _PL_X + _PL_Y + _PL_VX + _PL_VY, 3
    values = mpmath.odefun(f, 0, [mpmath.mpf(v) for v in y0])(t_end)
    return [mpmath.nstr(v, 25) for v in values]


def references() -> dict:
    from dynkit.io import write_json

    path = RESULTS / NAME / "references.json"
    cached = json.loads(path.read_text()) if path.exists() else {}
    missing = [n for n in ("lotka_volterra", "pleiades") if n not in cached]
    for name in missing:
        print(
            f"computing the {name} reference with mpmath.odefun (24 digits; Pleiades takes "
            f"~10 minutes) ...",
            flush=True,
        )
        cached[name] = _mp_reference(name)
    if missing:
        write_json(
            path,
            {k: v for k, v in cached.items() if k in ("lotka_volterra", "pleiades")},
            command="python -m benchmarks.bench_high_order (references computed on first run)",
        )
    return cached


def problems() -> dict:
    refs = references()
    arenstorf, rigid = DIAG_PROBLEMS["arenstorf"], DIAG_PROBLEMS["rigid_body"]
    return {
        "arenstorf": (arenstorf.f, arenstorf.y0, arenstorf.t_span[1], arenstorf.reference),
        "pleiades": (
            pleiades,
            np.array(_PL_X + _PL_Y + _PL_VX + _PL_VY, dtype=float),
            3.0,
            np.array([float(v) for v in refs["pleiades"]]),
        ),
        "lotka_volterra": (
            lotka_volterra,
            np.array([1.0, 1.0]),
            12.0,
            np.array([float(v) for v in refs["lotka_volterra"]]),
        ),
        "rigid_body": (rigid.f, rigid.y0, rigid.t_span[1], rigid.reference),
    }


def run(solver: str, problem, tol: float) -> tuple[float, int, float]:
    """(relative error, NFE, seconds) of one solve."""
    from scipy.integrate import solve_ivp

    f, y0, t_end, ref = problem
    start = time.perf_counter()
    if solver.startswith("scipy:"):
        out = solve_ivp(f, (0.0, t_end), y0, method=solver[6:], rtol=tol, atol=tol)
        y_end, nfe = out.y[:, -1], out.nfev
    else:
        sol = dk.solve(
            f, y0, [0.0, t_end], method=solver, rtol=tol, atol=tol, max_steps=10**6, throw=False
        )
        y_end, nfe = (sol.ys[-1] if sol.success else np.full_like(y0, np.nan)), sol.stats.nfe
    seconds = time.perf_counter() - start
    err = float(np.abs(y_end - ref).max() / np.abs(ref).max())
    return (err if np.isfinite(err) else 1.0), nfe, seconds


def curve(solver, problem, tols):
    return [
        dict(tol=tol, **dict(zip(("error", "nfe", "seconds"), run(solver, problem, tol))))
        for tol in tols
    ]


def ratio_at_matched_error(
    ours: list[dict], peer: list[dict], tol_range
) -> tuple[float, float, int]:
    """(geometric mean, worst) of nfe_ours / nfe_peer(at our error); count of matched points."""
    lo, hi = tol_range
    peer_ok = sorted((p["error"], p["nfe"]) for p in peer if p["error"] < LOST)
    if len(peer_ok) < 2:
        return float("nan"), float("nan"), 0
    le = np.log([e for e, _ in peer_ok])
    ln = np.log([n for _, n in peer_ok])
    logs = []
    for p in ours:
        if not (lo <= p["tol"] <= hi) or p["error"] >= LOST:
            continue
        x = np.log(p["error"])
        if le[0] <= x <= le[-1]:
            logs.append(np.log(p["nfe"]) - np.interp(x, le, ln))
    if not logs:
        return float("nan"), float("nan"), 0
    return float(np.exp(np.mean(logs))), float(np.exp(np.max(logs))), len(logs)


def plot(table: dict, path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from dynkit.io import save_figure

    fig, axes = plt.subplots(1, len(table), figsize=(4 * len(table), 3.6))
    for ax, (name, curves) in zip(axes, table.items()):
        for solver, points in curves.items():
            pts = [p for p in points if p["error"] < LOST]
            ax.loglog([p["error"] for p in pts], [p["nfe"] for p in pts], "o-", ms=3, label=solver)
        ax.set_title(name)
        ax.set_xlabel("relative error at t_end")
        ax.invert_xaxis()
    axes[0].set_ylabel("NFE")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer tolerances")
    args = parser.parse_args(argv)
    step = 2 if args.quick else 1
    high = [10.0**-k for k in np.arange(6, 14.01, 0.5)][::step]  # peers' range covers ours
    mid = [10.0**-k for k in np.arange(4, 11.01, 0.5)][::step]
    probs = problems()
    table, goals, figures = {}, [], {}
    for name, problem in probs.items():
        curves = {s: curve(s, problem, high) for s in ("dop853", "scipy:DOP853")}
        curves.update({s: curve(s, problem, mid) for s in ("tsit5", "dopri5")})
        table[name] = curves
        mean_853, worst_853, n_853 = ratio_at_matched_error(
            curves["dop853"], curves["scipy:DOP853"], (1e-13, 1e-10)
        )
        mean_t5, worst_t5, n_t5 = ratio_at_matched_error(
            curves["tsit5"], curves["dopri5"], (1e-10, 1e-5)
        )
        figures[name] = dict(
            dop853_vs_scipy_mean=mean_853,
            dop853_vs_scipy_worst=worst_853,
            matched_853=n_853,
            tsit5_vs_dopri5_mean=mean_t5,
            tsit5_vs_dopri5_worst=worst_t5,
            matched_t5=n_t5,
        )
        print(
            f"{name}: dop853/scipy DOP853 NFE at matched error: mean {mean_853:.3f}, worst "
            f"{worst_853:.3f} "
            f"({n_853} points); tsit5/dopri5: mean {mean_t5:.3f}, worst {worst_t5:.3f} "
            f"({n_t5} points)"
        )
        goals.append(
            check_goal(
                f"dop853 NFE / scipy DOP853 at matched error, rtol 1e-10..1e-13, {name}",
                mean_853,
                1.0,
                note=f"worst point {worst_853:.3f}, {n_853} matched",
            )
        )
        goals.append(
            check_goal(
                f"tsit5 NFE / dopri5 at matched error, {name}",
                mean_t5,
                1.0,
                note=f"worst point {worst_t5:.3f}, {n_t5} matched",
            )
        )
    if not args.quick:
        plot(table, RESULTS / NAME / "work_precision.png")
        record(NAME, dict(figures=figures, curves=table, lost_threshold=LOST), goals)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
