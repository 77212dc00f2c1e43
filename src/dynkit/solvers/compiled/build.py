"""The compiled path's kernels compiled ahead of their first solve (``dynkit build-kernels``, which
``make install`` and ``make test`` run).

numba compiles a kernel from nothing in 10–45 s of CPU (the explicit loop about 15 s, radau5's
the largest), once per cache key (:func:`.cache.kernel_stamp`: the kernels' code, the constants
they read, the numba, numpy and Python versions). :func:`build_kernels` pays that at install time
and writes the kernels to numba's cache (:data:`.common.CACHE_FOLDER`), so that a user's first
``compile=True`` solve in a later process loads them (under a second) instead of compiling. The
output is checked like the cache always is: a kernel whose key changed since the build (an
upgrade, an edit of its code) is compiled again on first use, and a build over an up-to-date cache
only loads. With the cache off (:data:`.common.CACHE_REASON`), nothing can be kept and the build
says so.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from . import KERNELS, kernel_names
from .common import CACHE, CACHE_FOLDER, CACHE_REASON
from .explicit import ExplicitDriver, march_kernel
from .stiff_loop import StiffDriver, StiffKernel

__all__ = ["KernelBuild", "kernels", "build_kernels", "where"]

LOADED = "loaded"  # from numba's cache: up to date
COMPILED = "compiled"  # and written to the cache
NOT_KEPT = "compiled, not kept"  # the cache is off: compiled in memory only
IN_PROCESS = "already in this process"  # compiled or loaded earlier in this process


@dataclass(frozen=True)
class KernelBuild:
    """One kernel's build: the methods it runs, what happened and its CPU seconds."""

    methods: tuple[str, ...]
    outcome: str
    cpu_seconds: float

    def line(self) -> str:
        """One line for a terminal, e.g. ``radau5: compiled in 22.5 s CPU``."""
        names = (
            ", ".join(self.methods)
            if len(self.methods) <= 3
            else f"{self.methods[0]} and {len(self.methods) - 1} more methods"
        )
        return f"{names}: {self.outcome} in {self.cpu_seconds:.1f} s CPU"


@dataclass(frozen=True)
class _Kernel:
    methods: tuple[str, ...]
    compiled: Callable[[], Any]  # compiles or loads on first call, then returns the same
    is_built: Callable[[], bool]


def kernels() -> list[_Kernel]:
    """Each compiled kernel with the method names it runs: the explicit loop (every adaptive
    explicit tableau), then the stiff kernels in the order of :func:`.kernel_names` (rodas4,
    rodas5 and rosenbrock23 share one)."""
    stiff: dict[StiffKernel, tuple[str, ...]] = {}
    explicit_methods = []
    for name in kernel_names():
        driver = KERNELS[name]
        if isinstance(driver, StiffDriver):
            stiff[driver.kernel] = (*stiff.get(driver.kernel, ()), name)
        elif isinstance(driver, ExplicitDriver):
            explicit_methods.append(name)
    march = _Kernel(
        tuple(explicit_methods), march_kernel, lambda: march_kernel.cache_info().currsize > 0
    )
    return [march] + [_Kernel(names, k.kernel, k.is_built) for k, names in stiff.items()]


def build_kernels(methods: Iterable[str] | None = None) -> list[KernelBuild]:
    """Compile (or load) the kernels of ``methods`` (default: all), one at a time.

    Parameters
    ----------
    methods : iterable of str, optional
        Method names with a compiled kernel (``dopri5``, ``radau5``, ``bdf``, ``rodas5``, ...);
        a kernel is built once for all of its methods.

    Returns
    -------
    list of KernelBuild
        One per kernel built: ``"loaded"`` (from an up-to-date cache), ``"compiled"`` (and
        written to the cache), ``"compiled, not kept"`` (the cache is off) or ``"already in this
        process"``.

    Raises
    ------
    ValueError
        A name of ``methods`` has no compiled kernel (before anything is compiled).
    """
    every = kernels()
    wanted = None if methods is None else list(methods)
    if wanted is not None:
        known = sorted(name for k in every for name in k.methods)
        unknown = [m for m in wanted if m not in known]
        if unknown:
            raise ValueError(
                f"methods must name methods with a compiled kernel ({', '.join(known)}), got "
                f"{', '.join(map(repr, unknown))}"
            )
    builds = []
    for k in every:
        if wanted is not None and not set(k.methods) & set(wanted):
            continue
        if k.is_built():
            builds.append(KernelBuild(k.methods, IN_PROCESS, 0.0))
            continue
        start = time.process_time()
        compiled = k.compiled()
        seconds = time.process_time() - start
        if not CACHE:
            outcome = NOT_KEPT
        elif sum(compiled.stats.cache_hits.values()):
            outcome = LOADED
        else:
            outcome = COMPILED
        builds.append(KernelBuild(k.methods, outcome, seconds))
    return builds


def where() -> str:
    """Where the kernels are kept, or why they are not (for the build's report)."""
    return f"cache: {CACHE_FOLDER}" if CACHE else f"cache off: {CACHE_REASON}"
