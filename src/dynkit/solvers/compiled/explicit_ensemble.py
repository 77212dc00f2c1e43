"""The ensemble kernel: :func:`.explicit.march` for many trajectories in a numba ``prange``.

A module of its own so that the parallel kernel compiles (or loads from the disk cache) only when an
ensemble is solved, not with every compiled ``dk.solve``.
"""

from __future__ import annotations

import numba
import numpy as np

from .common import CACHE, FIELD_TYPE
from .explicit import COEFFICIENTS, F8, I8, IVEC, MAT, VEC, march_kernel

_march = march_kernel()  # compiled before march_many, which calls it

__all__ = ["march_many"]


@numba.njit(
    numba.types.void(
        FIELD_TYPE,
        MAT,
        COEFFICIENTS,
        VEC,
        MAT,
        F8,
        VEC,
        F8,
        I8,
        F8[:, :, ::1],
        I8[:, ::1],
        IVEC,
        VEC,
    ),
    parallel=True,
    cache=CACHE,
)
def march_many(
    f,
    P,
    coefficients,
    t_out,
    Y,
    rtol,
    atol,
    first_step,
    max_steps,
    ys,
    stats,
    status,
    t_stop,
):
    """:func:`march` for each row of ``Y`` (initial states) and ``P`` (parameter vectors), in a
    ``prange``.

    Trajectory ``i`` writes ``ys[i]``, ``stats[i]``, ``status[i]`` and ``t_stop[i]``; each has its
    own steps.
    """
    no_steps = np.empty(0)
    for i in numba.prange(Y.shape[0]):
        y_last = np.empty(Y.shape[1])
        f_last = np.empty(Y.shape[1])
        code, t_end, h, n_filled, steps, n_recorded = _march(
            f,
            P[i],
            coefficients,
            t_out,
            Y[i],
            rtol,
            atol,
            first_step,
            max_steps,
            ys[i],
            stats[i],
            y_last,
            f_last,
            no_steps,
        )
        status[i] = code
        t_stop[i] = t_end
