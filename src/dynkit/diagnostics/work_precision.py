"""Work-precision sweeps: error at the final time against the number of evaluations of ``f``.

Each problem in :data:`PROBLEMS` has a reference solution that is *published*, not computed by us:
a closed form or a period given in the literature.

* ``arenstorf`` — the restricted three-body orbit of [HNW] Sect. II.0, Eq. (0.1); the orbit is
  periodic with the period ``T`` given there to 30 digits, so ``y(T) = y(0)``.
* ``rigid_body`` — Euler's equations of a free rigid body, DETEST problem B5 [DETEST]; the solution
  is ``(sn, cn, dn)(t | m = 0.51)``, Jacobi's elliptic functions (scipy.special.ellipj).
* ``kepler`` — the two-body problem with eccentricity 0.5, DETEST problem D3 [DETEST]; the solution
  is the Kepler ellipse, ``x = cos E − e``, ``y = √(1−e²) sin E``, with ``E − e sin E = t`` solved
  by Newton's method to round-off.

References
----------
.. [HNW] E. Hairer, S. P. Nørsett, G. Wanner, *Solving Ordinary Differential Equations I*, 2nd ed.,
   Springer 1993.
.. [DETEST] T. E. Hull, W. H. Enright, B. M. Fellen, A. E. Sedgwick, "Comparing numerical methods for
   ordinary differential equations", SIAM J. Numer. Anal. 9 (1972) 603-637.
"""  # noqa: E501

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from ..solvers import METHODS, solve

__all__ = [
    "Problem",
    "PROBLEMS",
    "WorkPrecisionTable",
    "work_precision",
    "nfe_ratio_at_matched_error",
]

SCIPY_PEERS = ("RK45", "RK23")


@dataclass(frozen=True)
class Problem:
    """A test problem: ``f(t, y)``, ``y0``, ``t_span``, the reference ``y(t_span[1])`` and its
    source."""

    name: str
    f: Callable[[float, np.ndarray], np.ndarray]
    y0: np.ndarray
    t_span: tuple[float, float]
    reference: np.ndarray
    source: str


# -- Arenstorf orbit, [HNW] II.0 Eq. (0.1), initial values and period (0.2)
_MU = 0.012277471
_ARENSTORF_PERIOD = 17.0652165601579625588917206249
_ARENSTORF_Y0 = np.array([0.994, 0.0, 0.0, -2.00158510637908252240537862224])


def _arenstorf(t, y):
    mu1 = 1.0 - _MU
    x, v, vx, vy = y
    d1 = ((x + _MU) ** 2 + v**2) ** 1.5
    d2 = ((x - mu1) ** 2 + v**2) ** 1.5
    return np.array(
        [
            vx,
            vy,
            x + 2 * vy - mu1 * (x + _MU) / d1 - _MU * (x - mu1) / d2,
            v - 2 * vx - mu1 * v / d1 - _MU * v / d2,
        ]
    )


# -- DETEST B5: Euler's rigid body
_B5_M = 0.51


def _rigid_body(t, y):
    return np.array([y[1] * y[2], -y[0] * y[2], -_B5_M * y[0] * y[1]])


def _rigid_body_exact(t: float) -> np.ndarray:
    from scipy.special import ellipj

    sn, cn, dn, _ = ellipj(t, _B5_M)
    return np.array([sn, cn, dn])


# -- DETEST D3: Kepler orbit, eccentricity 0.5
_D3_E = 0.5


def _kepler(t, y):
    r3 = (y[0] ** 2 + y[1] ** 2) ** 1.5
    return np.array([y[2], y[3], -y[0] / r3, -y[1] / r3])


def _kepler_exact(t: float, e: float = _D3_E) -> np.ndarray:
    E = t  # Newton on Kepler's equation E - e sin E = t (mean motion 1)
    for _ in range(50):
        step = (E - e * math.sin(E) - t) / (1 - e * math.cos(E))
        E -= step
        if abs(step) < 1e-16:
            break
    s = math.sqrt(1 - e * e)
    dE = 1.0 / (1 - e * math.cos(E))
    return np.array([math.cos(E) - e, s * math.sin(E), -math.sin(E) * dE, s * math.cos(E) * dE])


PROBLEMS: dict[str, Problem] = {
    p.name: p
    for p in (
        Problem(
            "arenstorf",
            _arenstorf,
            _ARENSTORF_Y0,
            (0.0, _ARENSTORF_PERIOD),
            _ARENSTORF_Y0.copy(),
            "[HNW] II.0 Eq. (0.1)-(0.2): periodic orbit, y(T) = y(0) with T = 17.06521656015796...",
        ),
        Problem(
            "rigid_body",
            _rigid_body,
            np.array([0.0, 1.0, 1.0]),
            (0.0, 20.0),
            _rigid_body_exact(20.0),
            "DETEST B5 (Hull et al. 1972): y = (sn, cn, dn)(t | m=0.51), Jacobi elliptic functions",
        ),
        Problem(
            "kepler",
            _kepler,
            np.array([1 - _D3_E, 0.0, 0.0, math.sqrt((1 + _D3_E) / (1 - _D3_E))]),
            (0.0, 20.0),
            _kepler_exact(20.0),
            "DETEST D3 (Hull et al. 1972): Kepler ellipse, e = 0.5, via Kepler's equation",
        ),
    )
}


@dataclass
class WorkPrecisionTable:
    """Rows ``{problem, solver, tol, error, nfe, seconds}``; ``error`` is the max-norm error at the
    final time, ``seconds`` the wall-clock time of the one solve (a single run: indicative, not a
    benchmark).

    ``solver`` is ``"dynkit.<method>"`` or ``"scipy.<RK45|RK23>"``.
    """

    rows: list[dict]
    problems: dict[str, str] = field(default_factory=dict)  # name -> source of the reference

    def solvers(self) -> list[str]:
        return list(dict.fromkeys(r["solver"] for r in self.rows))

    def curve(self, problem: str, solver: str) -> tuple[np.ndarray, np.ndarray]:
        """``(error, nfe)`` of one solver on one problem, in tolerance order."""
        rows = [r for r in self.rows if r["problem"] == problem and r["solver"] == solver]
        return np.array([r["error"] for r in rows]), np.array([r["nfe"] for r in rows])

    def to_markdown(self) -> str:
        """One table per problem: a row per solver, a column per tolerance, cells
        ``nfe (error)``."""
        out = []
        for problem in self.problems:
            tols = list(dict.fromkeys(r["tol"] for r in self.rows if r["problem"] == problem))
            out.append(f"**{problem}** — reference: {self.problems[problem]}\n")
            out.append("| solver | " + " | ".join(f"tol {t:.0e}" for t in tols) + " |")
            out.append("|---|" + "---|" * len(tols))
            for solver in self.solvers():
                cells = {
                    r["tol"]: f"{r['nfe']} ({r['error']:.1e})"
                    for r in self.rows
                    if r["problem"] == problem and r["solver"] == solver
                }
                if cells:
                    out.append(f"| {solver} | " + " | ".join(cells.get(t, "") for t in tols) + " |")
            out.append("")
        return "\n".join(out)

    def to_dict(self) -> dict:
        return {"rows": [dict(r) for r in self.rows], "problems": dict(self.problems)}

    def to_pandas(self):
        """The rows (problem, solver, tol, error, nfe, seconds) as a ``pandas.DataFrame``; needs
        pandas."""
        from ..io import to_pandas

        return to_pandas([dict(r) for r in self.rows], "WorkPrecisionTable")

    def plot(self, path):
        """Error against NFE, log-log, one panel per problem; written atomically to ``path``."""
        # no matplotlib.use(): the caller's backend (Jupyter, a script) is kept
        import matplotlib.pyplot as plt

        from ..io import save_figure

        names = list(self.problems)
        fig, axes = plt.subplots(1, len(names), figsize=(4.2 * len(names), 3.6), squeeze=False)
        for ax, problem in zip(axes[0], names):
            for solver in self.solvers():
                err, nfe = self.curve(problem, solver)
                if len(err):
                    ax.loglog(
                        nfe,
                        np.maximum(err, 1e-17),
                        "o-" if solver.startswith("dynkit") else "s--",
                        label=solver,
                        ms=4,
                    )
            ax.set(title=problem, xlabel="NFE", ylabel="error at final time (max norm)")
            ax.grid(True, which="both", alpha=0.3)
        axes[0][0].legend(fontsize=8)
        fig.tight_layout()
        out = save_figure(fig, path, dpi=120)
        plt.close(fig)
        return out


def work_precision(
    problems: Sequence[str] | Sequence[Problem] | None = None,
    methods: Sequence[str] = ("dopri5", "rkf45", "bosh3"),
    tolerances: Sequence[float] = (1e-4, 1e-6, 1e-8, 1e-10),
    include_scipy: bool = True,
) -> WorkPrecisionTable:
    """Error at the final time against NFE for each problem, method and ``rtol = atol = tol``.

    Parameters
    ----------
    problems : sequence of names in :data:`PROBLEMS` or of :class:`Problem`, optional
        All of :data:`PROBLEMS` by default.
    methods : sequence of str
        Adaptive dynkit methods.
    tolerances : sequence of float
        Each is used as both ``rtol`` and ``atol``.
    include_scipy : bool
        Also run ``scipy.integrate.solve_ivp`` with ``RK45`` and ``RK23`` as peers (its ``nfev``).

    Returns
    -------
    WorkPrecisionTable
    """
    chosen = _resolve_problems(problems)
    for m in methods:
        if m not in METHODS or not METHODS[m].adaptive:
            adaptive = sorted(k for k, v in METHODS.items() if v.adaptive)
            raise ValueError(f"methods must be adaptive dynkit methods {adaptive}, got {m!r}")
    tols = [float(t) for t in tolerances]
    if not tols or any(not (t > 0 and math.isfinite(t)) for t in tols):
        raise ValueError(f"tolerances must be positive finite floats, got {tolerances!r}")
    rows = []
    for p in chosen:
        t = np.array(p.t_span, dtype=float)
        for m in methods:
            for tol in tols:
                start = time.perf_counter()
                sol = solve(p.f, p.y0.astype(float), t, method=m, rtol=tol, atol=tol)
                seconds = time.perf_counter() - start
                rows.append(_row(p, f"dynkit.{m}", tol, sol.ys[-1], sol.stats.nfe, seconds))
        if include_scipy:
            from scipy.integrate import solve_ivp

            for peer in SCIPY_PEERS:
                for tol in tols:
                    start = time.perf_counter()
                    res = solve_ivp(
                        p.f, p.t_span, p.y0.astype(float), method=peer, rtol=tol, atol=tol
                    )
                    seconds = time.perf_counter() - start
                    rows.append(_row(p, f"scipy.{peer}", tol, res.y[:, -1], int(res.nfev), seconds))
    return WorkPrecisionTable(rows, {p.name: p.source for p in chosen})


def _row(p: Problem, solver: str, tol: float, y_end, nfe: int, seconds: float) -> dict:
    error = float(np.max(np.abs(np.asarray(y_end, dtype=float) - p.reference)))
    return dict(
        problem=p.name, solver=solver, tol=tol, error=error, nfe=int(nfe), seconds=float(seconds)
    )


def _resolve_problems(problems) -> list[Problem]:
    if problems is None:
        return list(PROBLEMS.values())
    out = []
    for p in problems:
        if isinstance(p, Problem):
            out.append(p)
        elif isinstance(p, str) and p in PROBLEMS:
            out.append(PROBLEMS[p])
        else:
            raise ValueError(
                f"problems must be names from {sorted(PROBLEMS)} or Problem objects, got {p!r}"
            )
    return out


def nfe_ratio_at_matched_error(
    table: WorkPrecisionTable, problem: str, ours: str, peer: str
) -> float:
    """Geometric mean of ``nfe_ours / nfe_peer`` at equal error.

    The peer's ``log nfe`` is interpolated linearly in ``log error`` at each of our errors that lies
    inside the peer's error range. NaN when the ranges do not overlap.
    """
    err_a, nfe_a = table.curve(problem, ours)
    err_b, nfe_b = table.curve(problem, peer)
    if len(err_a) == 0 or len(err_b) < 2:
        return float("nan")
    order = np.argsort(err_b)
    le_b, ln_b = np.log(np.maximum(err_b[order], 1e-300)), np.log(nfe_b[order])
    le_a = np.log(np.maximum(err_a, 1e-300))
    inside = (le_a >= le_b[0]) & (le_a <= le_b[-1])
    if not inside.any():
        return float("nan")
    logs = np.log(nfe_a[inside]) - np.interp(le_a[inside], le_b, ln_b)
    return float(np.exp(np.mean(logs)))
