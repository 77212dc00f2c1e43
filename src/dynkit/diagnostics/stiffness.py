"""Stiffness along a solve: is the explicit solver's step limited by stability or by accuracy?

A problem is *stiff* for an explicit method when, along the solution, the step-size controller is
held back by the method's stability region rather than by the local error: the accepted steps ``h``
sit at ``h |λ| ≈ r``, with ``λ`` a decaying eigenvalue of the Jacobian and ``r`` the radius of the
stability region ([HW] IV.1-IV.2; the same idea drives the automatic stiffness detection of Hairer's
DOPRI5 code and OrdinaryDiffEq.jl's ``AutoSwitch``). A large eigenvalue ratio alone is not
stiffness: a conservative or oscillatory system has eigenvalues on (or near) the imaginary axis, and
resolving its oscillations keeps ``h |λ|`` far below ``r`` — accuracy, not stability, limits the
step.

:func:`stiffness_report` therefore runs the solve itself (with :func:`dynkit.solve`), recovers every
accepted step from the recorded calls of ``f`` (the stages), and for each accepted step computes

* the Jacobian ``J = ∂f/∂y`` at the step's start (``torch.func.jacrev`` for torch states, central
  differences or a user-given ``jac`` for numpy states) and its eigenvalues;
* the spectral radius ``ρ(J)`` and ``h ρ(J)``;
* the *stability use* ``u = h max{|λ| : Re λ < 0} / r``, ``r`` the method's stability boundary on
  the negative real axis computed from its tableau (3.31 for dopri5, 2.51 for bosh3, 3.0 for rkf45's
  propagated 4th-order solution); ``u ≈ 1`` means the step is pinned to the stability boundary;
* Hairer's per-step estimate of the dominant eigenvalue from two stages at the same time ([HW] IV.2,
  Eq. (2.11)): ``ρ̂ = ‖k_i − k_j‖ / ‖Y_i − Y_j‖`` for stages ``i ≠ j`` with ``c_i = c_j`` (dopri5:
  stages 6 and 7; rkf45: stage 5 and ``f(t+h, y_{n+1})``; bosh3 has no such pair → NaN).

Verdict: ``is_stiff`` when at least ``min_run`` consecutive analysed steps have ``u ≥ threshold``
(defaults 15 and 0.5: Hairer's code declares stiffness after 15 steps with ``h ρ̂`` near the
boundary; 0.5 leaves room for the controller oscillating below the boundary).

References
----------
.. [HW] E. Hairer, G. Wanner, *Solving Ordinary Differential Equations II: Stiff and
   Differential-Algebraic Problems*, 2nd ed., Springer 1996, Sects. IV.1 and IV.2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..solvers import METHODS, RungeKuttaTableau, SolverError, SolverStats, VectorFieldError, solve
from ..solvers.backend import is_torch

# the stability boundary and the step counting live with the solvers (method="auto" runs them
# without importing the diagnostics); they are this module's public names too
from ..solvers.stability import (
    DEFAULT_MIN_RUN,
    StiffnessDetector,
    stability_boundary,
    stability_polynomial,
)

__all__ = [
    "StiffnessReport",
    "StiffnessDetector",
    "stiffness_report",
    "stability_boundary",
    "stability_polynomial",
]

DEFAULT_THRESHOLD = 0.5
# two stage times closer than this fraction of the step are "the same time"
_SAME_TIME = 1e-9


@dataclass
class StiffnessReport:
    """What :func:`stiffness_report` found. Arrays are indexed by analysed accepted step.

    Attributes
    ----------
    is_stiff : bool
        The explicit solver's step was limited by stability (see the module docstring).
    stiffness_ratio : float
        ``max |Re λ| / min |Re λ|`` of the Jacobian, maximised over the analysed steps (and over the
        batch). ``inf`` where some eigenvalue has ``Re λ = 0`` and another not; 1 where all do.
        Reported for reference only: it does not decide ``is_stiff``.
    times : ndarray, shape (n,)
        Start times of the analysed accepted steps (where the Jacobians were taken).
    eigenvalues : ndarray of complex
        ``(n, d)`` with ``d = y0.size``, or ``(n, B, d)`` with ``d = y0[0].size`` for
        ``batch=True``.
    stats : SolverStats
        The solve's statistics (the Jacobians' evaluations of ``f`` are not counted in them).
    step_sizes, spectral_radius, h_rho, stability_use, hairer_rho : ndarray, shape (n,)
        Accepted step ``h``; ``ρ(J)``; ``|h| ρ(J)``; ``u``; Hairer's two-stage estimate (NaN where
        the method has no two stages at the same time). Batched: the maximum over the batch.
    stability_boundary : float
        ``r``, the method's stability boundary on the negative real axis.
    threshold, min_run : float, int
        The verdict's parameters.
    method : str
    reason : str
        One sentence explaining the verdict with the numbers behind it.
    complete : bool
        False when the solve stopped before ``t[-1]`` (``max_steps`` reached — the usual fate of an
        explicit method on a stiff problem — or another solver failure): the verdict is then on the
        part integrated, ``[t[0], t_reached]``, and ``result`` holds the failure's code.
    t_reached, t_end : float
    result : str
    """

    is_stiff: bool
    stiffness_ratio: float
    times: np.ndarray
    eigenvalues: np.ndarray
    stats: SolverStats
    step_sizes: np.ndarray
    spectral_radius: np.ndarray
    h_rho: np.ndarray
    stability_use: np.ndarray
    hairer_rho: np.ndarray
    stability_boundary: float
    threshold: float
    min_run: int
    method: str
    reason: str
    n_accepted_steps: int = 0
    longest_run: int = 0
    complete: bool = True
    t_reached: float = float("nan")
    t_end: float = float("nan")
    result: str = "success"

    def __bool__(self) -> bool:  # pragma: no cover - guard against `if report:` by mistake
        raise TypeError("use report.is_stiff, not the report itself, as a truth value")

    def summary(self) -> str:
        """A few lines for a human: verdict, reason and the main figures."""
        limited = float(np.mean(self.stability_use >= self.threshold)) if len(self.times) else 0.0
        partial = (
            []
            if self.complete
            else [
                f"  on the part integrated: the solve stopped at t = {self.t_reached:.6g} of "
                f"{self.t_end:.6g} "
                f"({self.result}); the verdict needs only {self.min_run} consecutive steps"
            ]
        )
        return "\n".join(
            [
                f"{'STIFF' if self.is_stiff else 'not stiff'} for {self.method}: {self.reason}",
                *partial,
                f"  steps: {self.stats.n_accepted} accepted, {self.stats.n_rejected} "
                f"rejected, nfe {self.stats.nfe}; "
                f"{len(self.times)} analysed, {100 * limited:.0f}% stability-limited",
                f"  max h·ρ(J) = {_fmax(self.h_rho):.3g} (stability boundary r = "
                f"{self.stability_boundary:.3g}), "
                f"max stability use u = {_fmax(self.stability_use):.3g}",
                f"  stiffness ratio max|Re λ|/min|Re λ| = {self.stiffness_ratio:.3g}",
            ]
        )

    def _repr_markdown_(self) -> str:
        """Jupyter: the verdict in bold, then the figures as a small table."""
        rows = [
            ("verdict", f"**{'STIFF' if self.is_stiff else 'not stiff'}** for {self.method}"),
            ("reason", self.reason),
            (
                "integrated",
                f"to t = {self.t_reached:.6g} of {self.t_end:.6g}"
                + ("" if self.complete else f" ({self.result}: verdict on the part integrated)"),
            ),
            (
                "steps",
                f"{self.stats.n_accepted} accepted, {self.stats.n_rejected} rejected, nfe "
                f"{self.stats.nfe}",
            ),
            (
                "max h·ρ(J)",
                f"{_fmax(self.h_rho):.3g} (stability boundary r = {self.stability_boundary:.3g})",
            ),
            (
                "longest stability-limited run",
                f"{self.longest_run} steps (stiff from {self.min_run})",
            ),
            ("stiffness ratio", f"{self.stiffness_ratio:.3g}"),
        ]
        return "| | |\n|---|---|\n" + "\n".join(f"| {k} | {v} |" for k, v in rows)

    def to_dict(self) -> dict:
        """JSON-ready: complex eigenvalues as ``[re, im]`` pairs, arrays as lists."""
        eig = np.asarray(self.eigenvalues)
        return dict(
            is_stiff=bool(self.is_stiff),
            stiffness_ratio=_json_float(self.stiffness_ratio),
            reason=self.reason,
            method=self.method,
            stats=self.stats.as_dict(),
            threshold=self.threshold,
            min_run=self.min_run,
            stability_boundary=self.stability_boundary,
            n_accepted_steps=self.n_accepted_steps,
            longest_run=self.longest_run,
            complete=self.complete,
            t_reached=_json_float(self.t_reached),
            t_end=_json_float(self.t_end),
            result=self.result,
            times=self.times.tolist(),
            step_sizes=self.step_sizes.tolist(),
            spectral_radius=self.spectral_radius.tolist(),
            h_rho=self.h_rho.tolist(),
            stability_use=self.stability_use.tolist(),
            hairer_rho=[_json_float(x) for x in self.hairer_rho],
            eigenvalues=np.stack([eig.real, eig.imag], axis=-1).tolist(),
        )


def _fmax(x) -> float:
    x = np.asarray(x, dtype=float)
    return float(np.nanmax(x)) if x.size and not np.isnan(x).all() else float("nan")


def _json_float(x: float):
    x = float(x)
    return x if math.isfinite(x) else str(x)


def _tableau(method) -> RungeKuttaTableau:
    if isinstance(method, RungeKuttaTableau):
        tableau = method
    elif isinstance(method, str) and method in METHODS:
        tableau = METHODS[method].implementation
    else:
        raise ValueError(
            f"method must be the name of an adaptive method (bosh3, rkf45, dopri5) or an "
            f"adaptive RungeKuttaTableau, got {method!r}"
        )
    if not isinstance(tableau, RungeKuttaTableau) or not tableau.adaptive:
        raise ValueError(
            f"method must be an adaptive Runge-Kutta method (bosh3, rkf45, dopri5): the "
            f"stiffness test watches the step-size controller; got {method!r}"
        )
    return tableau


# ---------------------------------------------------------------------------------------------
# recovering the accepted steps from the calls of f


@dataclass
class _Call:
    t: float
    y: np.ndarray
    k: np.ndarray


@dataclass
class _Step:
    t: float
    h: float
    y: np.ndarray
    hairer_rho: float


class _Recorder:
    """Wraps ``f``; keeps a float64 numpy copy of every call's time, state and value."""

    def __init__(self, f):
        self.f, self.calls = f, []

    def __call__(self, t, y):
        out = self.f(t, y)
        self.calls.append(_Call(float(t), _to_numpy(y), _to_numpy(out)))
        return out

    def in_dtype(self, dtype):
        """The recording field for a float64 solve that evaluates ``f`` in ``dtype``."""

        def call(t, y):
            out = self.f(t.to(dtype), y.to(dtype))
            self.calls.append(_Call(float(t), _to_numpy(y), _to_numpy(out)))
            return out.double()

        return call


def _to_numpy(x) -> np.ndarray:
    if is_torch(x):
        return x.detach().cpu().double().numpy()
    return np.array(x, dtype=np.float64)


def _replay(
    calls: list[_Call], tableau: RungeKuttaTableau, stats: SolverStats, batch: bool
) -> list[_Step]:
    """Group the recorded calls into step attempts and keep the accepted steps.

    The engine evaluates ``f`` once at ``t0``, once more for the automatic initial step, then
    ``s − 1`` stages per attempt at ``t + c_i h`` (the first stage is reused), and for a method
    without FSAL one more call at ``(t + h, y_{n+1})`` after an accepted step. An attempt was
    accepted iff the next call starts from its end time (FSAL: lies beyond it).
    """
    c, b = tableau.c, tableau.b
    s = tableau.stages
    base = calls[0]
    i = 2  # skip f(t0, y0) and the initial-step probe
    steps: list[_Step] = []
    n_attempts = 0
    while (
        i < len(calls) and n_attempts < stats.n_steps
    ):  # calls after the last attempt (a failure's
        stage_calls = calls[i : i + s - 1]  # probes) are not steps
        if len(stage_calls) < s - 1:
            break
        i += s - 1
        n_attempts += 1
        h = (stage_calls[0].t - base.t) / c[1]
        t_new = base.t + h
        tol = _SAME_TIME * abs(h)
        points = [base] + stage_calls  # (t, Y_i, k_i) of every stage
        last = n_attempts == stats.n_steps  # its fate is in the counts, not in the calls after it
        if tableau.fsal:
            new = stage_calls[-1]
            accepted = (
                len(steps) < stats.n_accepted
                if last
                else i >= len(calls) or (calls[i].t - t_new) * np.sign(h) > tol
            )
        else:
            y_new = base.y + h * sum(bj * p.k for bj, p in zip(b, points) if bj != 0.0)
            slope_next = (
                i < len(calls) and abs(calls[i].t - t_new) <= tol and calls[i].k is not None
            )
            accepted = len(steps) < stats.n_accepted if last else (slope_next or i >= len(calls))
            slope_next = slope_next and accepted
            new = calls[i] if slope_next else _Call(t_new, y_new, None)
            if slope_next:
                i += 1
                points = points + [new]
        if accepted:
            steps.append(
                _Step(base.t, h, base.y, _hairer_estimate(points, c, tableau.fsal, h, batch))
            )
            base = new
    if n_attempts != stats.n_steps or len(steps) != stats.n_accepted:
        raise RuntimeError(
            f"could not replay the solve from its calls of f ({n_attempts} attempts and "
            f"{len(steps)} accepted steps recovered, the solver reports {stats.n_steps} and "
            f"{stats.n_accepted}); the engine's evaluation order must have changed"
        )
    return steps


def _hairer_estimate(
    points: list[_Call], c: np.ndarray, fsal: bool, h: float, batch: bool
) -> float:
    """``‖k_i − k_j‖ / ‖Y_i − Y_j‖`` for the last pair of evaluations at the same time, NaN if
    none."""
    base_t = points[0].t
    times = [base_t + ci * h for ci in c] + ([base_t + h] if len(points) > len(c) else [])
    for j in range(len(points) - 1, 0, -1):
        for i in range(j - 1, -1, -1):
            if abs(times[i] - times[j]) <= _SAME_TIME * abs(h) and points[i].k is not None:
                dy, dk = points[j].y - points[i].y, points[j].k - points[i].k
                axes = tuple(range(1, dy.ndim)) if batch else None
                num, den = np.sqrt((dk**2).sum(axis=axes)), np.sqrt((dy**2).sum(axis=axes))
                with np.errstate(divide="ignore", invalid="ignore"):
                    ratio = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
                return float(np.nanmax(ratio)) if not np.isnan(ratio).all() else float("nan")
    return float("nan")


# ---------------------------------------------------------------------------------------------
# Jacobians


def _jacobian_fn(
    f, y0, jac, batch: bool, fd_step: float | None
) -> Callable[[float, np.ndarray], np.ndarray]:
    """A function ``(t, y_numpy) -> J`` of shape ``(d, d)``, or ``(B, d, d)`` for a batch."""
    shape = tuple(y0.shape)
    d = int(np.prod(shape[1:] if batch else shape))
    if jac is not None:

        def user_jac(t, y):
            J = _to_numpy(jac(t, _like(y, y0)))
            want = (shape[0], d, d) if batch else (d, d)
            if J.shape != want:
                raise ValueError(
                    f"jac must return an array of shape {want} (see batch=), got {J.shape}"
                )
            return J

        return user_jac
    if is_torch(y0):
        return _torch_jacobian(f, y0, batch, d)
    return _finite_difference_jacobian(f, shape, batch, d, fd_step)


def _like(y: np.ndarray, y0):
    if is_torch(y0):
        import torch

        return torch.as_tensor(y, dtype=y0.dtype, device=y0.device)
    return y.astype(y0.dtype)


def _torch_jacobian(f, y0, batch: bool, d: int):
    import torch
    from torch.func import jacrev, vmap

    shape = tuple(y0.shape)

    def flat_field(t):
        if batch:  # one sample as a batch of one: f only sees states shaped like y0[:1]
            return lambda yi: f(t, yi.reshape(1, *shape[1:])).reshape(d)
        return lambda y: f(t, y.reshape(shape)).reshape(d)

    def jacobian(t, y):
        tt = torch.tensor(t, dtype=y0.dtype, device=y0.device)
        yt = torch.as_tensor(y, dtype=y0.dtype, device=y0.device)
        if batch:
            J = vmap(jacrev(flat_field(tt)))(yt.reshape(shape[0], d))
        else:
            J = jacrev(flat_field(tt))(yt.reshape(d))
        return J.detach().cpu().double().numpy()

    return jacobian


def _finite_difference_jacobian(f, shape, batch: bool, d: int, fd_step: float | None):
    """Central differences, ``h_j = ε^{1/3} max(1, |y_j|)``: 2d calls of ``f`` (a batch of
    independent systems is perturbed in the same component of every sample at once)."""
    eps = fd_step if fd_step is not None else np.finfo(np.float64).eps ** (1 / 3)

    def jacobian(t, y):
        ys = y.reshape(shape[0], d) if batch else y.reshape(1, d)
        J = np.empty((ys.shape[0], d, d))
        for j in range(d):
            step = eps * np.maximum(1.0, np.abs(ys[:, j]))
            plus, minus = ys.copy(), ys.copy()
            plus[:, j] += step
            minus[:, j] -= step
            fp = np.asarray(f(t, plus.reshape(shape)), dtype=np.float64).reshape(ys.shape)
            fm = np.asarray(f(t, minus.reshape(shape)), dtype=np.float64).reshape(ys.shape)
            J[:, :, j] = (fp - fm) / (2 * step[:, None])
        return J if batch else J[0]

    return jacobian


# ---------------------------------------------------------------------------------------------
# the report


def stiffness_report(
    f: Callable[[Any, Any], Any],
    y0: Any,
    t: Any,
    method: str | RungeKuttaTableau = "dopri5",
    rtol: float = 1e-6,
    atol: float = 1e-9,
    *,
    jac: Callable[[Any, Any], Any] | None = None,
    batch: bool = False,
    threshold: float = DEFAULT_THRESHOLD,
    min_run: int = DEFAULT_MIN_RUN,
    max_jacobians: int = 2000,
    max_steps: int = 20_000,
    fd_step: float | None = None,
) -> StiffnessReport:
    """Solve ``dy/dt = f(t, y)`` with an explicit adaptive method and say whether it was stiff.

    Parameters
    ----------
    f : callable
        ``f(t, y) -> dy/dt``, numpy or torch, exactly as for :func:`dynkit.solve`.
    y0 : numpy.ndarray or torch.Tensor
        Initial state, any shape. A float32 torch state is integrated in float64 (``f`` is still
        called in float32), because the steps are recovered from the exact stage times.
    t : 1-D array-like
        Output times; the solve runs from ``t[0]`` to ``t[-1]``.
    method : {"dopri5", "rkf45", "bosh3"} or adaptive RungeKuttaTableau
    rtol, atol : float
        Tolerances of the solve.
    jac : callable, optional
        ``jac(t, y) -> ∂f/∂y`` of shape ``(d, d)`` (``(B, d, d)`` with ``batch=True``); by default
        ``torch.func.jacrev`` for torch states and central differences for numpy states.
    batch : bool
        False (default): the whole state, of any shape, is one system of ``d = y0.size``
        components. True: ``y0[b]`` are ``B`` independent systems solved together (``f`` must not
        mix samples; under ``torch.func.vmap`` it is called on one sample shaped ``(1, ...)``).
        Eigenvalues are then per sample, ``(n, B, d)``; the per-step figures and the stiffness
        ratio take the maximum over the batch, because the joint solve's step is limited by its
        stiffest member.
    threshold, min_run : float, int
        A step is stability-limited when ``u = h max{|λ| : Re λ < 0} / r ≥ threshold``; the solve
        is stiff when ``min_run`` consecutive analysed steps are.
    max_jacobians : int
        At most this many accepted steps are analysed (evenly spaced when there are more;
        "consecutive" then means consecutive among those analysed).
    max_steps : int
        Most steps of the solve. A diagnosis need not finish the integration: an explicit method on
        a stiff problem would take millions of steps (Van der Pol μ = 1000), while the verdict needs
        ``min_run`` of them. When the solve stops at ``max_steps`` (or fails otherwise) the report
        is on the part integrated: ``complete`` is False and ``t_reached`` says how far it got.
    fd_step : float, optional
        Relative finite-difference step (default ``ε^{1/3}``).

    Returns
    -------
    StiffnessReport

    Raises
    ------
    ValueError
        Bad arguments (fixed-step or unknown method, threshold ≤ 0, min_run < 1, batch with a 0-d
        state).
    SolverError
        Never for a failed solve (see ``max_steps``); ``f``'s own errors still propagate.
    """
    tableau = _tableau(method)
    if not (isinstance(threshold, (int, float)) and threshold > 0):
        raise ValueError(f"threshold must be a positive float, got {threshold!r}")
    if not (isinstance(min_run, (int, np.integer)) and min_run >= 1):
        raise ValueError(f"min_run must be a positive integer, got {min_run!r}")
    if not (isinstance(max_jacobians, (int, np.integer)) and max_jacobians >= 1):
        raise ValueError(f"max_jacobians must be a positive integer, got {max_jacobians!r}")
    if batch and getattr(y0, "ndim", 0) < 2:
        raise ValueError(
            f"batch=True needs y0 of shape (B, ...) with at least 2 dimensions, "
            f"got shape {tuple(getattr(y0, 'shape', ()))}"
        )

    recorder = _Recorder(f)
    if is_torch(y0):
        import torch

        run_f, run_y0 = recorder, y0
        if y0.dtype != torch.float64:
            # the replay identifies steps by their stage times, which a float32 time tensor rounds:
            # integrate in float64 and evaluate f in the caller's dtype
            dtype = y0.dtype
            run_y0 = y0.double()
            run_f = recorder.in_dtype(dtype)
        with torch.no_grad():
            sol = _solve_part(run_f, run_y0, t, tableau, rtol, atol, max_steps)
    else:
        sol = _solve_part(recorder, y0, t, tableau, rtol, atol, max_steps)
    steps = _replay(recorder.calls, tableau, sol.stats, batch)
    if not steps:
        raise ValueError("the solve took no accepted step: nothing to diagnose (raise max_steps?)")

    picked = np.unique(
        np.linspace(0, len(steps) - 1, min(max_jacobians, len(steps))).round().astype(int)
    )
    jacobian = _jacobian_fn(f, y0, jac, batch, fd_step)
    r = stability_boundary(tableau)
    eigs, ratios, radius, decaying = [], [], [], []
    for n in picked:
        J = jacobian(steps[n].t, steps[n].y)
        lam = np.linalg.eigvals(J)  # (d,) or (B, d)
        eigs.append(lam)
        mod = np.abs(lam)
        radius.append(float(mod.max()))
        decaying.append(float(np.where(lam.real < 0, mod, 0.0).max()))
        ratios.append(_real_part_ratio(lam))
    times = np.array([steps[n].t for n in picked])
    h = np.abs(np.array([steps[n].h for n in picked]))
    radius, decaying = np.array(radius), np.array(decaying)
    use = h * decaying / r
    limited = use >= threshold
    run = _longest_run(limited)
    is_stiff = run >= min_run
    ratio = float(np.nanmax(ratios)) if ratios and not np.isnan(ratios).all() else float("nan")
    name = tableau.name
    if is_stiff:
        reason = (
            f"{run} consecutive analysed steps (of {len(picked)}) were pinned near the stability "
            f"boundary: h·max|λ| over decaying modes ≥ {threshold:g} × r = {threshold * r:.3g} "
            f"(r = {r:.3g} for {name}); stability, not accuracy, limited the step"
        )
    else:
        reason = (
            f"the step was limited by accuracy: at most {run} consecutive steps (< {min_run}) "
            f"had h·max|λ| over decaying modes ≥ {threshold:g} × r, and the largest was "
            f"{_fmax(use):.3g} × r (r = {r:.3g} for {name})"
        )
        if ratio > 100:
            reason += f"; the eigenvalue ratio {ratio:.3g} alone does not make it stiff"
    return StiffnessReport(
        is_stiff=bool(is_stiff),
        stiffness_ratio=ratio,
        times=times,
        eigenvalues=np.array(eigs),
        stats=sol.stats,
        step_sizes=np.array([steps[n].h for n in picked]),
        spectral_radius=radius,
        h_rho=h * radius,
        stability_use=use,
        hairer_rho=np.array([steps[n].hairer_rho for n in picked]),
        stability_boundary=r,
        threshold=float(threshold),
        min_run=int(min_run),
        method=name,
        reason=reason,
        n_accepted_steps=len(steps),
        longest_run=int(run),
        complete=sol.result == "success",
        t_reached=float(steps[-1].t + steps[-1].h),
        t_end=float(np.asarray(t, dtype=float)[-1]),
        result=sol.result,
    )


def _solve_part(f, y0, t, tableau, rtol, atol, max_steps):
    """The solve, or the part of it done before a solver failure (``f``'s own errors propagate)."""
    try:
        return solve(f, y0, t, method=tableau, rtol=rtol, atol=atol, max_steps=max_steps)
    except VectorFieldError:
        raise
    except SolverError as err:
        if err.solution is None or err.solution.stats.n_accepted == 0:
            raise
        return err.solution


def _real_part_ratio(lam: np.ndarray) -> float:
    """``max|Re λ| / min|Re λ|`` per system (max over a batch); inf if some but not all Re λ are
    0."""
    re = np.abs(np.atleast_2d(lam.real))
    hi, lo = re.max(axis=-1), re.min(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(hi == 0, 1.0, hi / lo)
    return float(r.max())


def _longest_run(flags: np.ndarray) -> int:
    best = cur = 0
    for flag in flags:
        cur = cur + 1 if flag else 0
        best = max(best, cur)
    return best
