"""What the compiled stiff kernels (radau5, bdf, the Rosenbrock methods) share beyond
:mod:`.common`.

The controller's rules (initial step, last step, underflow, error norm, output times) are
:mod:`.common`'s; here: how a stiff kernel is compiled (:func:`compile_kernel`: once per method and
for both Jacobian modes, with ``f`` and ``jac`` as addresses of compiled code, :mod:`.addresses`),
the record of accepted step times (:func:`push_step`), and the driver that hands a kernel's tuple to
:class:`~.common.CompiledResult` (:class:`StiffDriver`).
"""

from __future__ import annotations

import numba
import numpy as np

from .addresses import function_addresses
from .common import CACHE, NFE, CompiledResult, initial_step
from .jacobian import difference_state

__all__ = [
    "compile_kernel",
    "StiffKernel",
    "push_step",
    "output_buffers",
    "first_slope_and_step",
    "StiffDriver",
]


def compile_kernel(loop, coefficients_example: tuple):
    """``loop`` compiled once for every problem, in one version: ``f`` and ``jac`` enter as
    addresses (:func:`.addresses.function_addresses`; :func:`.addresses.user_functions` makes them
    first-class functions of :data:`.common.FIELD_TYPE` / :data:`.common.JACOBIAN_TYPE` inside),
    not as specialisations, so the kernel compiles once per method (and is cached on disk, keyed on
    the package's sources: :data:`.common.CACHE`), not once per problem nor once per Jacobian mode
    (whether ``jac`` is given is decided at run time, :func:`.jacobian.jacobian`). Everything a
    kernel reads from outside this package (coefficients, the steppers' and the difference rule's
    constants) is an argument, so a cached kernel cannot go stale.

    The arguments: ``addresses, p, t0, t_end, y0, t_eval, rtol, atol, first_step, max_steps,
    coefficients, difference_state``.
    """
    t = numba.types
    vector = t.float64[::1]
    signature = (
        t.int64[::1],
        vector,
        t.float64,
        t.float64,
        vector,
        vector,
        t.float64,
        vector,
        t.float64,
        t.int64,
        numba.typeof(coefficients_example),
        t.float64[:, ::1],
    )
    return numba.njit([signature], cache=CACHE)(loop)


class StiffKernel:
    """A stiff method's loop, compiled on first use (:func:`compile_kernel`; ``example``:
    coefficients of the type every call passes), and its call with the arguments cast (``atol`` a
    per-component array)."""

    def __init__(self, loop, example):
        self.loop, self.example, self._compiled = loop, example, None

    def kernel(self):
        """The compiled loop (compiled, or loaded from numba's cache, on first use)."""
        if self._compiled is None:
            self._compiled = compile_kernel(self.loop, self.example())
        return self._compiled

    def __call__(
        self, f, jac, p, t0, t_end, y0, t_eval, rtol, atol, first_step, max_steps, coefficients
    ) -> tuple:
        """The compiled solve (``jac`` None: difference Jacobians); the kernel's tuple
        (:class:`StiffDriver`)."""
        y0 = _vector(y0)
        atol = _vector(np.broadcast_to(np.asarray(atol, dtype=np.float64), y0.shape))
        return self.kernel()(
            function_addresses(f, jac),
            p,
            float(t0),
            float(t_end),
            y0,
            _vector(t_eval),
            float(rtol),
            atol,
            float(first_step),
            int(max_steps),
            coefficients,
            difference_state(atol, float(rtol)),
        )


def _vector(x) -> np.ndarray:
    """``x`` as the kernels' signature takes it (C-contiguous, writable float64), copied only when
    it is not (the kernels never write to their inputs; a solve's arrays are fresh already)."""
    x = np.asarray(x)
    if x.dtype == np.float64 and x.flags.c_contiguous and x.flags.writeable and x.ndim == 1:
        return x
    return np.array(x, dtype=np.float64, order="C")


@numba.njit(cache=CACHE)
def push_step(steps, count, t):
    """Append ``t`` to the accepted step times (doubling the buffer when full); the buffer and
    the new count."""
    if count == steps.size:
        bigger = np.empty(2 * steps.size)
        bigger[:count] = steps
        steps = bigger
    steps[count] = t
    return steps, count + 1


@numba.njit(cache=CACHE)
def output_buffers(y0, t0, t_end, t_eval):
    """A kernel's records before its first step: ``(stats, ys, direction, signed, steps)`` (the
    counters in :class:`~dynkit.solvers.SolverStats` order, the outputs with ``y0`` in the first
    row and NaN after it, the direction of time, the output times times it, an empty buffer of
    accepted step times)."""
    stats = np.zeros(9, dtype=np.int64)
    ys = np.full((t_eval.size, y0.size), np.nan)
    ys[0] = y0
    direction = 1.0 if t_end > t0 else -1.0
    return stats, ys, direction, direction * t_eval, np.empty(64)


@numba.njit(cache=CACHE)
def first_slope_and_step(f, p, t0, t_end, y, y0, rtol, atol, direction, first_step, k, stats):
    """``(k1, h, finite)``: the slope ``f(t0, y)`` at the start (``y``: the kernel's copy of
    ``y0``; counted) and the first step, ``first_step`` or the engine's automatic one for order
    ``k`` (its probe counted); ``finite`` is False (and ``h`` 0) when ``f(t0, y0)`` has a NaN or
    an infinity, which ends the solve before any step."""
    k1 = f(t0, y, p)
    stats[NFE] += 1
    for i in range(k1.size):
        if not np.isfinite(k1[i]):
            return k1, 0.0, False
    if first_step != 0.0:
        return k1, first_step, True
    h = initial_step(f, p, t0, t_end, y0, k1, rtol, atol, direction, k)
    stats[NFE] += 1
    return k1, h, True


class StiffDriver:
    """A registered kernel driver
    (``driver(problem, t0, t_end, y0, t_eval, rtol, atol, first_step, max_steps)``):
    ``run(f, jac_or_None, p, t0, t_end, y0, t_eval, rtol, atol, first_step, max_steps)`` returns
    the kernel's tuple ``(status, t, h, ys, n_filled, stats, steps, y, k1)``."""

    def __init__(self, name: str, run):
        self.name, self.run = name, run

    def __call__(
        self, problem, t0, t_end, y0, t_eval, rtol, atol, first_step, max_steps
    ) -> CompiledResult:
        jac = (
            problem.jac if problem.has_jac else None
        )  # (compile_problem's functions return C-contiguous arrays)
        status, t, h, ys, n_filled, stats, steps, y, k1 = self.run(
            problem.f, jac, problem.p, t0, t_end, y0, t_eval, rtol, atol, first_step, max_steps
        )
        return CompiledResult(
            status=int(status),
            t_fail=float(t),
            ys=ys,
            n_filled=int(n_filled),
            stats=stats,
            steps=steps,
            h_last=float(h),
            y_last=y,
            f_last=k1,
        )
