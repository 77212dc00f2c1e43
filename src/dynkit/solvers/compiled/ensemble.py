"""Ensembles: one problem from many initial states or parameter sets in one call, each trajectory
with its own steps.

What users of diffrax's ``vmap`` over ``diffeqsolve`` and DifferentialEquations.jl's
``EnsembleProblem`` expect, with one difference: a trajectory here is an independent solve (its own
step sizes, rejections and failure), not one lane of a batched solve that shares steps. Compiled,
the trajectories run in a numba ``prange`` over the explicit loop of :mod:`.explicit` (each exactly
the steps ``dk.solve(..., compile=True)`` takes for it); without numba the same results come from a
Python loop over :func:`dynkit.solve`. The kernel is :func:`.explicit_ensemble.march_many`.

This module imports numba only when it compiles.
"""

from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .._validation import real_array as _real_array
from .._validation import validate_step_size as _validate_step_size
from .._validation import validate_times as _validate_times
from .._validation import validate_tolerances as _validate_tolerances
from ..engine import solve
from ..errors import CompilationError, CompileWarning, SolverError
from ..methods import METHODS
from ..results import STAT_FIELDS, Solution, SolverStats
from ..tableaus import RungeKuttaTableau
from . import JIT_HINT, compile_problem, numba_available, validate_compile

__all__ = ["solve_ensemble", "EnsembleSolution"]


@dataclass
class EnsembleSolution:
    """Result of :func:`solve_ensemble` for ``m`` trajectories.

    Attributes
    ----------
    ts : float64 array ``(n_t,)``
        The output times.
    ys : float64 array ``(m, n_t, n)``
        ``ys[i, j]`` is trajectory ``i``'s state at ``ts[j]``; NaN past a failed trajectory's last
        output.
    stats : dict of int64 arrays ``(m,)``
        Per trajectory, the counters of :class:`~dynkit.solvers.SolverStats` (``stats["nfe"][i]``
        ...). Compiled, a trajectory that ran out of steps counts the step loop's evaluations only:
        :func:`dynkit.solve` adds those of its diagnosis (stiffness, chattering) to the
        ``MaxStepsExceeded`` it raises, which an ensemble does not run.
    results : array of str ``(m,)``
        ``"success"`` or the failure's code (``"max_steps_exceeded"``, ``"step_size_underflow"``,
        ``"non_finite_state"``, ...), as :attr:`Solution.result <dynkit.solvers.Solution.result>`;
        ``"vector_field_error"`` for a trajectory whose compiled ``f`` raised (numba drops the
        exception inside its parallel loop, so its message is lost: rerun that trajectory with
        :func:`dynkit.solve` to see it).
    t_stop : float64 array ``(m,)``
        Where each trajectory stopped (``ts[-1]`` on success).
    method : str
    compiled : bool
        Whether the compiled kernel ran (False: the Python loop).
    """

    ts: np.ndarray
    ys: np.ndarray
    stats: dict
    results: np.ndarray
    t_stop: np.ndarray
    method: str
    compiled: bool

    @property
    def success(self) -> np.ndarray:
        """Boolean mask of the trajectories that reached ``ts[-1]``."""
        return self.results == "success"

    def __len__(self) -> int:
        return self.ys.shape[0]

    def solution(self, i: int):
        """Trajectory ``i`` as a :class:`~dynkit.solvers.Solution` (the output times it reached)."""
        if (
            isinstance(i, bool)
            or not isinstance(i, (int, np.integer))
            or not -len(self) <= i < len(self)
        ):
            raise IndexError(f"i must be a trajectory index in [0, {len(self)}), got {i!r}")
        filled = int(np.count_nonzero(~np.isnan(self.ys[i]).any(axis=1)))
        result = str(self.results[i])
        message = (
            "" if result == "success" else f"{self.method}: {result} at t={self.t_stop[i]:.6g}"
        )
        return Solution(
            ts=self.ts[:filled].copy(),
            ys=self.ys[i, :filled].copy(),
            stats=SolverStats(*(int(self.stats[k][i]) for k in STAT_FIELDS)),
            result=result,
            message=message,
            method=self.method,
        )

    def __repr__(self) -> str:
        m, n_t, n = self.ys.shape
        failed = int((~self.success).sum())
        return (
            f"EnsembleSolution(method: {self.method}, {m} trajectories of {n} states at "
            f"{n_t} times, "
            f"{'compiled' if self.compiled else 'Python loop'}, {failed} failed, nfe total "
            f"{int(self.stats['nfe'].sum())})"
        )


def _float_matrix(value, name: str, what: str) -> np.ndarray:
    return _real_array(value, name, what)


def _validate(f, y0s, t, params, method, rtol, atol, first_step, max_steps, threads):
    """Everything checked before any work:
    ``(Y0 (m, n), P (m, n_p) or None, t_out, rtol, atol, first_step)``."""
    if not callable(f):
        raise TypeError(
            f"f must be a callable f(t, y) (or f(t, y, p) with params), got {type(f).__name__}"
        )
    ensemble_methods = sorted(
        name
        for name, info in METHODS.items()
        if isinstance(info.implementation, RungeKuttaTableau) and info.implementation.adaptive
    )
    if not isinstance(method, str) or method not in ensemble_methods:
        raise ValueError(
            f"method must be one of {', '.join(ensemble_methods)} (the adaptive explicit methods), "
            f"got {method!r:.60}"
        )
    Y = _float_matrix(
        y0s, "y0s", "a (m, n) array of initial states (or one (n,) state shared by all)"
    )
    if Y.ndim not in (1, 2) or Y.size == 0:
        raise ValueError(
            f"y0s must be a non-empty (m, n) array of initial states, or one (n,) state shared by "
            f"every parameter set, got shape {Y.shape}"
        )
    if not np.isfinite(Y).all():
        raise ValueError("y0s must be finite; it contains NaN or Inf")
    P = None
    if params is not None:
        P = _float_matrix(
            params, "params", "a (m, n_p) array of parameter sets (or one (n_p,) set shared by all)"
        )
        if P.ndim not in (1, 2) or P.shape[-1] == 0:
            raise ValueError(
                f"params must be a (m, n_p) array of parameter sets with n_p >= 1, or one "
                f"(n_p,) set, "
                f"got shape {P.shape}"
            )
        if not np.isfinite(P).all():
            raise ValueError("params must be finite; it contains NaN or Inf")
    m = Y.shape[0] if Y.ndim == 2 else (P.shape[0] if P is not None and P.ndim == 2 else None)
    if m is None:
        raise ValueError(
            f"y0s of shape {Y.shape} is one state and params "
            f"{'is None' if P is None else 'one set'}: "
            f"give several initial states (y0s of shape (m, n)) or several parameter sets "
            f"(params of "
            f"shape (m, n_p)); for one trajectory use dk.solve"
        )
    if P is not None and P.ndim == 2 and Y.ndim == 2 and P.shape[0] != Y.shape[0]:
        raise ValueError(
            f"y0s and params must have one row per trajectory: got {Y.shape[0]} initial states and "
            f"{P.shape[0]} parameter sets"
        )
    Y = np.array(
        np.broadcast_to(Y, (m, Y.shape[-1])), order="C"
    )  # fresh, writable, C-ordered: the kernel signature
    if P is not None:
        P = np.array(np.broadcast_to(P, (m, P.shape[-1])), order="C")
    t_out = _validate_times(t)
    rtol, atol = _validate_tolerances(rtol, atol, Y[0])
    if np.ndim(atol) > 1 or (np.ndim(atol) == 1 and np.shape(atol)[0] not in (1, Y.shape[1])):
        raise ValueError(
            f"atol must be a float or a ({Y.shape[1]},) array (one per state component), got shape "
            f"{np.shape(atol)}"
        )
    if (
        not isinstance(max_steps, (int, np.integer))
        or isinstance(max_steps, (bool, np.bool_))
        or max_steps < 1
    ):
        raise ValueError(
            f"max_steps must be a positive integer, got {type(max_steps).__name__} "
            f"{max_steps!r:.60}"
        )
    direction = 1.0 if t_out[-1] > t_out[0] else -1.0
    if first_step is not None:
        first_step = _validate_step_size(
            first_step, direction, True, method, float(t_out[0]), float(t_out[-1]), "first_step"
        )
    if threads is not None and (
        isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 1
    ):
        raise ValueError(
            f"threads must be None (numba's default) or a positive integer, got {threads!r:.60}"
        )
    cores = os.cpu_count() or 1
    if threads is not None and threads > cores:  # more threads than cores only share them
        raise ValueError(
            f"threads must be at most the machine's {cores} cores (os.cpu_count()), got {threads}"
        )
    _probe(f, Y, P, float(t_out[0]))
    return Y, P, t_out, rtol, atol, first_step


def _probe(f, Y, P, t0: float) -> None:
    """One call of ``f`` on the first trajectory's start, as :func:`dynkit.solve` makes it first.

    An ``f`` that cannot be called so (arity), indexes past ``y`` or ``p``, or returns no array
    of ``y``'s shape (``None``, a list, another shape or a non-real dtype) is a programming error
    of ``f``, raised here naming it, not a failure of every trajectory. Any other exception is
    left to the loop: it may belong to that trajectory's values."""
    call = "f(t, y, p)" if P is not None else "f(t, y)"
    args = (t0, Y[0].copy()) if P is None else (t0, Y[0].copy(), P[0].copy())
    try:
        out = f(*args)
    except (TypeError, IndexError) as err:
        shapes = f"a state of shape {Y[0].shape}" + (
            "" if P is None else f" and parameters of shape {P[0].shape}"
        )
        raise TypeError(
            f"f must be callable as {call} on {shapes}, got an f that raised "
            f"{type(err).__name__} on trajectory 0 at t={t0:g}: {err}"
        ) from err
    except Exception:  # noqa: BLE001 - this trajectory's own failure: the loop reports it as solve does
        return
    if not isinstance(out, np.ndarray) or out.shape != Y[0].shape or out.dtype.kind not in "fiub":
        got = (
            f"an array of shape {out.shape} and dtype {out.dtype}"
            if isinstance(out, np.ndarray)
            else f"{type(out).__name__} {out!r:.60}"
        )
        raise ValueError(
            f"f must return dy/dt as a real numpy array of y's shape {Y[0].shape}, "
            f"got {got} from {call} on trajectory 0 at t={t0:g}"
        )


def solve_ensemble(
    f: Callable,
    y0s: Any,
    t: Any,
    params: Any = None,
    *,
    method: str = "tsit5",
    rtol: float = 1e-6,
    atol: float | Any = 1e-8,
    first_step: float | None = None,
    max_steps: int = 100_000,
    compile: bool | str = "auto",
    threads: int | None = None,
) -> EnsembleSolution:
    """Solve one ODE from many initial states and/or parameter sets, each trajectory with its own
    adaptive steps.

    Parameters
    ----------
    f : callable
        ``f(t, y)``, or ``f(t, y, p)`` when ``params`` is given, returning ``dy/dt`` as a float64
        array of ``y``'s shape: numba code or plain numpy code numba can compile (see
        :func:`dynkit.solve`'s ``compile``); or ``f(t, y[, p], out)`` writing it into ``out``,
        marked :func:`~dynkit.solvers.in_place`.
    y0s : array ``(m, n)`` or ``(n,)``
        The initial states, one row per trajectory (one state shared by every parameter set).
    t : 1-D array
        The output times, shared by every trajectory (strictly monotone, at least two).
    params : array ``(m, n_p)`` or ``(n_p,)``, optional
        The parameter vector ``p`` of each trajectory (one set shared by every initial state).
    method : str
        An adaptive explicit method: ``bosh3``, ``rkf45``, ``dopri5``, ``tsit5`` (default) or
        ``dop853``.
    rtol, atol, first_step, max_steps
        As in :func:`dynkit.solve`, for each trajectory (``atol`` a float or one value per
        component).
    compile : bool or "auto"
        ``"auto"`` (default): compiled when numba is installed and compiles ``f``, else the Python
        loop with a :class:`~dynkit.solvers.CompileWarning`; ``True``: compiled or
        :class:`~dynkit.solvers.CompilationError`; ``False``: a Python loop over
        :func:`dynkit.solve` (the reference the compiled path is tested against).
    threads : int, optional
        numba threads for the trajectories (default numba's, the number of cores), at most
        ``os.cpu_count()``; restored afterwards.

    Raises
    ------
    TypeError, ValueError
        Before any work, for bad arguments, and for an ``f`` that is wrong on the first trajectory's
        start (it cannot be called as ``f(t, y[, p])``, indexes past ``y`` or ``p``, or returns no
        real array of ``y``'s shape): a programming error, not a failure of every trajectory.

    Returns
    -------
    EnsembleSolution
        ``ys`` ``(m, len(t), n)``, per-trajectory ``stats``, ``results`` and ``t_stop``; a failed
        trajectory does not stop the others (its ``results`` entry says why, its rows past the
        failure are NaN).

    Examples
    --------
    >>> import numpy as np, dynkit as dk
    >>> def vdp(t, y, p):
    ...     return np.array([y[1], p[0] * (1 - y[0] ** 2) * y[1] - y[0]])
    >>> ens = dk.solve_ensemble(vdp, np.array([2.0, 0.0]), [0.0, 1.0], params=[[0.5], [1.0]],
    ...                         compile=False)
    >>> ens.ys.shape, bool(ens.success.all())
    ((2, 2, 2), True)

    Notes
    -----
    Each trajectory takes exactly the steps :func:`dynkit.solve` takes for it with the same method and tolerances
    (tests/test_ensemble.py compares them), so an ensemble is many solves' work without many solves' interpreter
    cost: for a 2-state problem the Python loop spends nearly all its time in the interpreter, once per step.
    """  # noqa: E501
    mode = validate_compile(compile)
    Y, P, t_out, rtol, atol, first_step = _validate(
        f, y0s, t, params, method, rtol, atol, first_step, max_steps, threads
    )
    if mode is not False:
        reason = None
        if not numba_available():
            reason = f"numba is not installed ({JIT_HINT})"
        else:
            try:
                problem = compile_problem(
                    f, Y[0], float(t_out[0]), params=None if P is None else P[0]
                )
            except CompilationError as exc:
                reason = str(exc)
        if reason is None:
            return _compiled(
                problem, Y, P, t_out, method, rtol, atol, first_step, max_steps, threads
            )
        if mode is True:
            raise CompilationError(f"compile=True: {reason}")
        warnings.warn(
            f"compile='auto' runs the ensemble as a Python loop over dk.solve: {reason}",
            CompileWarning,
            stacklevel=2,
        )
    return _python_loop(f, Y, P, t_out, method, rtol, atol, first_step, max_steps)


def _python_loop(f, Y, P, t_out, method, rtol, atol, first_step, max_steps) -> EnsembleSolution:
    m, n = Y.shape
    ys = np.full((m, len(t_out), n), np.nan)
    stats = {k: np.zeros(m, dtype=np.int64) for k in STAT_FIELDS}
    results = np.empty(m, dtype=object)
    t_stop = np.empty(m)
    for i in range(m):
        field = f if P is None else (lambda t, y, p=P[i]: f(t, y, p))
        try:
            sol = solve(
                field,
                Y[i],
                t_out,
                method=method,
                rtol=rtol,
                atol=atol,
                first_step=first_step,
                max_steps=max_steps,
            )
            t_stop[i] = t_out[-1]
        except SolverError as err:  # this trajectory failed; the others go on
            sol, t_stop[i] = err.solution, math.nan if err.t is None else err.t
        ys[i, : len(sol.ts)] = sol.ys
        for k in STAT_FIELDS:
            stats[k][i] = getattr(sol.stats, k)
        results[i] = sol.result
    return EnsembleSolution(
        ts=t_out.copy(),
        ys=ys,
        stats=stats,
        results=results.astype(str),
        t_stop=t_stop,
        method=method,
        compiled=False,
    )


def _compiled(
    problem, Y, P, t_out, method, rtol, atol, first_step, max_steps, threads
) -> EnsembleSolution:
    import numba

    from . import KERNELS
    from .common import ABORTED, STATUS_RESULTS
    from .explicit_ensemble import march_many

    m, n = Y.shape
    driver = KERNELS[method]
    ys = np.full((m, len(t_out), n), np.nan)
    stats = np.zeros((m, len(STAT_FIELDS)), dtype=np.int64)
    status = np.full(
        m, ABORTED, dtype=np.int64
    )  # what a trajectory whose f raised keeps (see common.ABORTED)
    t_stop = np.full(m, math.nan)
    params = np.zeros((m, 0)) if P is None else P
    atol_vec = np.array(np.broadcast_to(np.asarray(atol, dtype=np.float64), (n,)), order="C")
    previous = numba.get_num_threads()
    if threads is not None:
        numba.set_num_threads(min(int(threads), numba.config.NUMBA_NUM_THREADS))
    try:
        march_many(
            problem.f,
            params,
            driver.coefficients.arrays(),
            t_out,
            Y,
            float(rtol),
            atol_vec,
            0.0 if first_step is None else float(first_step),
            int(max_steps),
            ys,
            stats,
            status,
            t_stop,
        )
    except Exception:  # noqa: BLE001 - a trajectory's f raised: numba's parallel loop re-raises it unreliably
        _one_by_one(
            problem,
            driver,
            params,
            Y,
            t_out,
            rtol,
            atol_vec,
            first_step,
            max_steps,
            ys,
            stats,
            status,
            t_stop,
        )
    finally:
        numba.set_num_threads(previous)
    results = np.array([STATUS_RESULTS[int(code)] for code in status])
    return EnsembleSolution(
        ts=t_out.copy(),
        ys=ys,
        stats={k: stats[:, j].copy() for j, k in enumerate(STAT_FIELDS)},
        results=results,
        t_stop=t_stop,
        method=method,
        compiled=True,
    )


def _one_by_one(
    problem,
    driver,
    params,
    Y,
    t_out,
    rtol,
    atol_vec,
    first_step,
    max_steps,
    ys,
    stats,
    status,
    t_stop,
) -> None:
    """The trajectories in turn with the single-solve kernel, those whose ``f`` raises marked
    ``ABORTED``.

    numba drops an exception raised inside its parallel loop, or leaves it set and raises a
    SystemError, depending on the threads' timing; one by one, each trajectory's exception is caught
    where it happens.
    """
    import dataclasses

    from .common import ABORTED

    ys[:] = np.nan
    for i in range(Y.shape[0]):
        try:
            result = driver(
                dataclasses.replace(problem, p=params[i]),
                float(t_out[0]),
                float(t_out[-1]),
                Y[i],
                t_out,
                float(rtol),
                atol_vec,
                0.0 if first_step is None else float(first_step),
                int(max_steps),
            )
        except Exception:  # noqa: BLE001 - this trajectory's f raised
            status[i], t_stop[i], stats[i] = ABORTED, math.nan, 0
            continue
        status[i], t_stop[i], stats[i], ys[i] = (
            result.status,
            result.t_fail,
            result.stats,
            result.ys,
        )
