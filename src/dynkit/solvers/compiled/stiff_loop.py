"""What the compiled stiff kernels (radau5, bdf, the Rosenbrock methods) share beyond
:mod:`.common`.

The controller's rules and the loop around a trial step (initial step, loop head, accept and
reject bookkeeping, output times, the record of accepted step times) are :mod:`.common`'s; here:
how a stiff kernel is compiled (:func:`compile_kernel`: once per method and for both Jacobian modes,
with ``f`` and ``jac`` as addresses of compiled code, :mod:`.addresses`), its records before the
first step (:func:`output_buffers`), and the driver that hands a kernel's tuple to
:class:`~.common.CompiledResult` (:class:`StiffDriver`).
"""

from __future__ import annotations

import warnings
from typing import Callable

import numba
import numpy as np

from .addresses import function_addresses
from .common import CACHE, CompiledResult, copy_into
from .jacobian import difference_state

__all__ = [
    "compile_kernel",
    "StiffKernel",
    "output_buffers",
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
            with warnings.catch_warnings():  # the kernels' own use of first-class functions
                warnings.simplefilter("ignore", numba.NumbaExperimentalFeatureWarning)
                self._compiled = compile_kernel(self.loop, self.example())
        return self._compiled

    def is_built(self) -> bool:
        """Whether this process has the compiled loop already (compiled or loaded)."""
        return self._compiled is not None

    def __call__(
        self, f, jac, p, t0, t_end, y0, t_eval, rtol, atol, first_step, max_steps, coefficients
    ) -> tuple:
        """The compiled solve (``jac`` None: difference Jacobians); the kernel's tuple
        (:class:`StiffDriver`)."""
        y0 = _vector(y0)
        if np.shape(atol) != y0.shape:
            atol = np.broadcast_to(np.asarray(atol, dtype=np.float64), y0.shape)
        atol = _vector(atol)
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
            difference_state(atol, float(rtol), scratch=jac is None),
        )


def _vector(x) -> np.ndarray:
    """``x`` as the kernels' signature takes it (C-contiguous, writable float64), copied only when
    it is not (the kernels never write to their inputs; a solve's arrays are fresh already)."""
    x = np.asarray(x)
    if x.dtype == np.float64 and x.flags.c_contiguous and x.flags.writeable and x.ndim == 1:
        return x
    return np.array(x, dtype=np.float64, order="C")


@numba.njit(cache=CACHE)
def output_buffers(y0, t0, t_end, t_eval):
    """A kernel's records before its first step: ``(stats, ys, direction, signed, steps)`` (the
    counters in :class:`~dynkit.solvers.SolverStats` order, the outputs with ``y0`` in the first
    row and NaN after it, the direction of time, the output times times it, an empty buffer of
    accepted step times)."""
    stats = np.zeros(9, dtype=np.int64)
    ys = np.full((t_eval.size, y0.size), np.nan)
    copy_into(ys[0], y0)
    direction = 1.0 if t_end > t0 else -1.0
    return stats, ys, direction, direction * t_eval, np.empty(64)


class StiffDriver:
    """A registered kernel driver
    (``driver(problem, t0, t_end, y0, t_eval, rtol, atol, first_step, max_steps)``): ``kernel``
    (a :class:`StiffKernel`) run with the numbers ``coefficients(rtol)`` of the method, its tuple
    ``(status, t, h, ys, n_filled, stats, steps, y, k1)`` as a :class:`~.common.CompiledResult`."""

    def __init__(self, name: str, kernel: StiffKernel, coefficients: Callable[[float], tuple]):
        self.name, self.kernel, self.coefficients = name, kernel, coefficients

    def __call__(
        self, problem, t0, t_end, y0, t_eval, rtol, atol, first_step, max_steps
    ) -> CompiledResult:
        # None: difference Jacobians (compile_problem's functions return C-contiguous arrays)
        jac = problem.jac if problem.has_jac else None
        status, t, h, ys, n_filled, stats, steps, y, k1 = self.kernel(
            problem.f,
            jac,
            problem.p,
            t0,
            t_end,
            y0,
            t_eval,
            rtol,
            atol,
            first_step,
            max_steps,
            self.coefficients(rtol),
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
