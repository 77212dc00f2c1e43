"""The compiled path: whole stepping loops in numba for numpy problems
(``dk.solve(..., compile=True)``).

Why
---
For a small system the Python step loop costs far more than ``f``: a step of ``dopri5`` on a 2-state problem is a
few dozen small numpy operations and Python calls, tens of microseconds, where the arithmetic takes well under one.
A compiled loop pays that once per solve instead of once per step.

How it fits together
--------------------
:func:`compile_problem` turns the user's ``f(t, y)`` (a numba function as it is, or plain numpy code compiled with
``numba.njit`` and test-compiled on ``y0``) into the kernels' calling convention ``f(t, y, p, out)``, writing into
the kernel's array (:func:`~dynkit.solvers.in_place` marks an ``f`` that does so itself).
:data:`KERNELS` maps a method name to a *driver* ``driver(problem, t0, t_end, y0, t_eval, rtol, atol, first_step,
max_steps) -> CompiledResult`` (:mod:`.common`); each kernel module registers its methods with
:func:`register_kernel` when imported (:mod:`.explicit`: the embedded explicit pairs; the stiff modules theirs).
:func:`solve_compiled` maps the result onto the same :class:`~dynkit.solvers.Solution`,
:class:`~dynkit.solvers.SolverStats` and typed failures as the Python path. The kernels are loops only: the
coefficients are read from the methods' data (:mod:`dynkit.solvers.tableaus`), and the controller's rules are
:mod:`.common`'s twins of :mod:`dynkit.solvers.engine`'s, so both paths take the same steps (tests/
test_compiled_explicit.py checks the accepted step times, the counters and the states).

numba is optional (``pip install dynkit[jit]``): this module imports it only inside its functions,
so that ``import dynkit`` never does.
"""  # noqa: E501

from __future__ import annotations

import importlib
import importlib.util
import re
import warnings
import weakref
from typing import Any, Callable

import numpy as np

from .. import _diagnosis, _seam
from ..backend import backend_for
from ..engine import validated_arguments
from ..in_place_field import InPlace
from ..errors import (
    CompilationError,
    CompileWarning,
    MaxStepsExceeded,
    NonFiniteState,
    SolverError,
    StepSizeUnderflow,
    VectorFieldError,
)
from ..jacobian import check_jacobian
from ..methods import METHODS
from ..results import Solution, SolverStats

__all__ = [
    "numba_available",
    "compile_problem",
    "solve_compiled",
    "prepare",
    "PreparedSolve",
    "kernel_names",
    "JIT_HINT",
    "solve_ensemble",
    "EnsembleSolution",
]

JIT_HINT = "pip install dynkit[jit]"

# method name -> driver(problem, t0, t_end, y0, t_eval, rtol, atol, first_step, max_steps) ->
# CompiledResult
KERNELS: dict[str, Callable] = {}
# the modules that register kernels when imported (a module not present in this checkout is not one)
_KERNEL_MODULES = ("explicit", "radau", "bdf", "rosenbrock")
_loaded = False


def numba_available() -> bool:
    """Whether numba can be imported (the ``jit`` extra is installed)."""
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True


def register_kernel(name: str, driver: Callable) -> None:
    """Make ``driver`` the compiled kernel of the method ``name`` (called by the kernel modules
    on import)."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"register_kernel: name must be a method name (str), got {name!r}")
    if not callable(driver):
        raise TypeError(f"register_kernel: driver must be callable, got {type(driver).__name__}")
    KERNELS[name] = driver


def kernel_names() -> list[str]:
    """The method names that have a compiled kernel (imports the kernel modules, hence numba)."""
    global _loaded
    if not _loaded:
        for module in _KERNEL_MODULES:
            if importlib.util.find_spec(f"{__name__}.{module}") is not None:
                importlib.import_module(f".{module}", __name__)
        _loaded = True
    return sorted(KERNELS)


# ---------------------------------------------------------------------------------------------
# compiling the user's problem

# user function -> its wrapper in the kernels' convention, so that solving the same f again reuses
# the kernels numba compiled for it (a new wrapper would be a new type, and every kernel would
# compile again)
_WRAPPERS: "weakref.WeakKeyDictionary[Any, dict]" = weakref.WeakKeyDictionary()


def _condensed(exc: BaseException, limit: int = 400) -> str:
    """numba's error message in a few lines: its boilerplate, source listings and ANSI colours
    left out."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc))
    keep = []
    for line in text.splitlines():
        line = line.strip()
        if (
            not line
            or line.startswith(
                (
                    "During:",
                    'File "',
                    "^",
                    "This error may have been caused",
                    "For more information",
                    "See https",
                    "Failed in nopython mode pipeline",
                    "Resolution failure for",
                    "- Resolution",
                    "Rewrite",
                    ">",
                )
            )
            or set(line) <= set("-^ ")
        ):
            continue
        keep.append(line)
    message = " ".join(keep) or type(exc).__name__
    return message if len(message) <= limit else message[: limit - 3] + "..."


def _compiled_function(
    user: Callable,
    takes_params: bool,
    kind: str,
    t0: float,
    y0: np.ndarray,
    p: np.ndarray,
    shape: tuple,
):
    """``user`` test-compiled on ``(t0, y0[, p])`` and wrapped in the kernels' convention
    (:data:`.common.FIELD_SIGNATURE`: ``g(t, y, p, out)``, or ``JACOBIAN_SIGNATURE``); a
    :class:`CompilationError` saying why not. An ``f`` marked :func:`~dynkit.solvers.in_place`
    is called on the kernel's array; any other ``f`` returns its value, copied into it.

    The test call runs once per ``(user, kind, takes_params, shape)``: once it has given an
    array of the right shape, later solves go straight to the kernel, where an error of ``user``
    raises :class:`VectorFieldError` as the test call would (a solve of a small system would
    otherwise spend a sixth of its time here)."""
    writes = kind == "f" and isinstance(user, InPlace)
    if writes:  # the cache is the user's function's, whichever InPlace object marks it
        user = user.f
    tag = "f in place" if writes else kind  # the convention the wrapper calls user in
    try:
        checked = _WRAPPERS.get(user, {}).get((tag, takes_params, shape))
    except TypeError:  # not weak-referenceable: never cached
        checked = None
    if checked is not None:
        return checked
    import numba
    import numba.core.errors
    from numba.core.dispatcher import Dispatcher

    label = getattr(user, "__name__", type(user).__name__)
    try:
        cache = _WRAPPERS.setdefault(user, {})
    except TypeError:  # not weak-referenceable (a builtin, a callable object without __weakref__)
        cache = {}
    inner = cache.get("inner")
    if inner is None:
        inner = cache["inner"] = user if isinstance(user, Dispatcher) else numba.njit(user)
    args = (float(t0), y0.copy(), p) if takes_params else (float(t0), y0.copy())
    try:  # compiles inner for these argument types, and shows what it gives
        out = _written(inner, args, shape, label) if writes else inner(*args)
    except CompilationError:
        raise
    except (
        numba.core.errors.NumbaError
    ) as exc:  # TypingError, UnsupportedError, ...: numba cannot compile it
        raise CompilationError(
            f"{kind} ({label}) could not be compiled by numba ({type(exc).__name__}): "
            f"{_condensed(exc)}"
        ) from exc
    except (
        Exception
    ) as exc:  # it compiled, and raised on y0: what the Python path's first call would say
        raise VectorFieldError(
            f"{kind} raised {type(exc).__name__} at t={t0:.6g} (compiled, called on y0): {exc}",
            solution=None,
            t=float(t0),
        ) from exc
    if not isinstance(out, np.ndarray) or out.dtype != np.float64 or out.shape != shape:
        what = (
            f"an array of shape {out.shape} and dtype {out.dtype}"
            if isinstance(out, np.ndarray)
            else type(out).__name__
        )
        raise CompilationError(
            f"{kind} ({label}) must return a float64 array of shape {shape} in compiled code, "
            f"got {what}"
        )
    key = (tag, takes_params)
    if key not in cache:
        try:
            cache[key] = _in_convention(inner, tag, takes_params)
        except Exception as exc:
            raise CompilationError(
                f"{kind} ({label}) could not be compiled by numba in the kernels' convention "
                f"({type(exc).__name__}): {_condensed(exc)}"
            ) from exc
    cache[(tag, takes_params, shape)] = cache[key]
    return cache[key]


# what out holds before the two test calls of an in-place f: a component that keeps either, or whose
# value differs between them, was not overwritten
_SENTINELS = (1.2345678901234567e300, -9.876543210987654e299)


def _written(inner, args: tuple, shape: tuple, label: str) -> np.ndarray:
    """``out`` after ``inner(*args, out)``, called twice on two prefilled arrays; a
    :class:`CompilationError` when ``inner`` returns a value or leaves a component (or adds to
    it)."""
    outs = []
    for sentinel in _SENTINELS:
        out = np.full(shape, sentinel)
        returned = inner(*args[:1], args[1].copy(), *args[2:], out)
        if returned is not None:
            raise CompilationError(
                f"f ({label}), marked in_place, must write into out and return None, got "
                f"{type(returned).__name__}"
            )
        outs.append(out)
    kept = ~((outs[0] == outs[1]) | (np.isnan(outs[0]) & np.isnan(outs[1])))
    if kept.any():
        where = ", ".join(str(int(i)) for i in np.flatnonzero(kept)[:5])
        raise CompilationError(
            f"f ({label}), marked in_place, must overwrite every component of out: component(s) "
            f"{where} kept (or added to) what out held before the call"
        )
    return outs[0]


def _in_convention(inner, tag: str, takes_params: bool):
    """``inner`` wrapped as the kernels' ``f(t, y, p, out)`` or ``jac(t, y, p)``, compiled
    (``tag``: "f", "f in place" or "jac")."""
    import numba

    from .common import FIELD_SIGNATURE, JACOBIAN_SIGNATURE

    if tag == "jac":
        if takes_params:

            def wrapped(t, y, p):
                return np.ascontiguousarray(inner(t, y, p))
        else:

            def wrapped(t, y, p):
                return np.ascontiguousarray(inner(t, y))

        return numba.njit(JACOBIAN_SIGNATURE)(wrapped)
    if tag == "f in place":
        if takes_params:

            def wrapped(t, y, p, out):
                inner(t, y, p, out)
        else:

            def wrapped(t, y, p, out):
                inner(t, y, out)
    elif takes_params:

        def wrapped(t, y, p, out):
            value = inner(t, y, p)
            for i in range(out.shape[0]):
                out[i] = value[i]
    else:

        def wrapped(t, y, p, out):
            value = inner(t, y)
            for i in range(out.shape[0]):
                out[i] = value[i]

    return numba.njit(FIELD_SIGNATURE)(wrapped)


_NO_JACOBIAN: list = []  # the placeholder jac(t, y, p) of problems without one, made once


def _no_jacobian():
    if not _NO_JACOBIAN:
        import numba

        from .common import JACOBIAN_SIGNATURE

        @numba.njit(JACOBIAN_SIGNATURE)
        def no_jacobian(t, y, p):
            return np.empty((0, 0))

        _NO_JACOBIAN.append(no_jacobian)
    return _NO_JACOBIAN[0]


def compile_problem(
    f: Callable, y0: np.ndarray, t0: float = 0.0, *, params: Any = None, jac: Callable | None = None
):
    """The problem ``f`` (and ``jac``) in the compiled kernels' calling convention.

    Parameters
    ----------
    f : callable
        ``f(t, y)`` — or ``f(t, y, p)`` when ``params`` is given — returning ``dy/dt`` as a float64
        array of ``y``'s shape: a numba function (used as it is) or plain numpy code (compiled here
        with ``numba.njit``); or such a function ``f(t, y[, p], out)`` marked
        :func:`~dynkit.solvers.in_place`, writing ``dy/dt`` into ``out``.
    y0 : float64 array ``(n,)``
        A state to test-compile ``f`` on (``f`` is called once at ``(t0, y0)``, an in-place ``f``
        twice; the calls are not counted in a solve's ``nfe``).
    t0 : float
    params : 1-D float array, optional
        The parameter vector passed to ``f(t, y, p)`` (and ``jac(t, y, p)``).
    jac : callable, optional
        ``jac(t, y)`` (or ``jac(t, y, p)``) returning ``∂f/∂y`` as a float64 ``(n, n)`` array.

    Returns
    -------
    CompiledProblem
        See :class:`dynkit.solvers.compiled.common.CompiledProblem`.

    Raises
    ------
    CompilationError
        numba is not installed (``pip install dynkit[jit]``), or ``f`` / ``jac`` cannot be compiled
        (numba's message condensed), or returns something else than a float64 array of the right
        shape.
    VectorFieldError
        ``f`` / ``jac`` compiled but raised when called on ``(t0, y0)`` (the user's exception is
        ``__cause__``).
    """
    if not numba_available():
        raise CompilationError(f"the compiled path needs numba, which is not installed: {JIT_HINT}")
    from .common import CompiledProblem

    y0 = np.array(y0, dtype=np.float64, order="C")
    if params is None:  # dk.solve's problems: made once per (f, jac, size)
        try:
            problem = _WRAPPERS.get(f, {}).get(("problem", jac, y0.shape))
        except TypeError:  # f not weak-referenceable or jac unhashable: never cached
            problem = None
        if problem is not None:
            return problem
    kernel_names()  # KERNELS filled for whoever uses the problem next
    takes_params = params is not None
    p = np.empty(0) if params is None else np.array(params, dtype=np.float64, order="C")
    n = y0.shape[0]
    wrapped_f = _compiled_function(f, takes_params, "f", t0, y0, p, (n,))
    if jac is None:
        wrapped_jac, has_jac = _no_jacobian(), False
    else:
        wrapped_jac, has_jac = _compiled_function(jac, takes_params, "jac", t0, y0, p, (n, n)), True
    problem = CompiledProblem(f=wrapped_f, p=p, n=n, jac=wrapped_jac, has_jac=has_jac, source=f)
    if params is None:
        try:
            _WRAPPERS.setdefault(f, {})[("problem", jac, y0.shape)] = problem
        except TypeError:
            pass
    return problem


# ---------------------------------------------------------------------------------------------
# dk.solve(compile=...)


def validate_compile(compile: Any) -> Any:
    """``compile`` checked: False, True or "auto" (``dk.solve`` calls this before any work)."""
    if isinstance(compile, (bool, np.bool_)):
        return bool(compile)
    if isinstance(compile, str) and compile == "auto":
        return "auto"
    raise ValueError(f"compile must be False, True or 'auto', got {compile!r:.60}")


def unsupported_reason(method: Any, y0: Any, options: dict[str, bool]) -> str | None:
    """Why this solve cannot take the compiled path (None when it can), numba aside.

    ``options`` maps an option's name (``"events"``, ``"dense"``, ...) to whether the call uses it.
    """
    used = [name for name, value in options.items() if value]
    if used:
        return (
            f"the compiled path does not support {', '.join(used)} (solve with compile=False for "
            f"{'it' if len(used) == 1 else 'them'})"
        )
    if not isinstance(y0, np.ndarray):
        return (
            f"the compiled path takes numpy states, got a "
            f"{type(y0).__module__}.{type(y0).__name__} y0"
        )
    if y0.dtype != np.float64 or y0.ndim != 1:
        return (
            f"the compiled path takes a 1-D float64 y0, got shape {tuple(y0.shape)} dtype "
            f"{y0.dtype} (flatten "
            f"the state and cast it with y0.astype(np.float64).ravel(), f reshaping inside)"
        )
    if not isinstance(method, str):
        return (
            f"the compiled path runs methods named in METHODS, got the method object {method!r:.60}"
        )
    return None


def method_reason(method: str) -> str | None:
    """Why ``method`` has no compiled kernel (None when it has one); imports the kernel modules."""
    names = kernel_names()
    if method in KERNELS:
        return None
    return f"method {method!r} has no compiled kernel (compiled methods: {', '.join(names)})"


def solve_or_fallback(
    mode,
    f,
    y0,
    t_out: np.ndarray,
    method: Any,
    rtol: float,
    atol: Any,
    first_step,
    max_steps: int,
    throw: bool,
    options: dict[str, bool],
    jac=None,
    jac_check: bool = True,
):
    """``dk.solve``'s compiled branch: the :class:`Solution`, or None to run the Python path.

    With ``mode=True`` anything that prevents compiling raises (:class:`CompilationError` for numba
    missing or an ``f`` numba cannot compile, ValueError for an option or method the compiled path
    lacks); with ``"auto"`` the reason is warned about (:class:`CompileWarning`) and None returned.
    """
    reason, error = unsupported_reason(method, y0, options), ValueError
    if reason is None and not numba_available():
        reason, error = f"numba is not installed ({JIT_HINT})", CompilationError
    if reason is None:
        reason = method_reason(method)
    problem = None
    if reason is None:
        try:
            problem = compile_problem(f, y0, float(t_out[0]), jac=jac)
        except CompilationError as exc:
            reason, error = str(exc), CompilationError
    if reason is not None:
        refuse_or_warn(mode, reason, error, stacklevel=4)
        return None
    checked = jac is not None and jac_check
    if checked:
        check_problem_jacobian(problem, method, float(t_out[0]), y0, atol)
    return solve_compiled(
        problem, method, t_out, y0, rtol, atol, first_step, max_steps, throw, jac_checked=checked
    )


def check_problem_jacobian(problem, method: str, t0: float, y0: np.ndarray, atol: Any) -> None:
    """The Python path's check of a user's ``jac`` (:func:`~dynkit.solvers.jacobian.check_jacobian`:
    one call of ``jac``, two of ``f``) on the compiled ``f`` and ``jac``, before the kernel runs."""

    def call(name: str, function, t: float, y: np.ndarray):
        try:
            return function(float(t), y)
        except Exception as exc:  # the user's error, raised in compiled code
            where = f"in compiled code at t={t:.6g}"
            message = f"{method}: {name} raised {type(exc).__name__} {where}: {exc}"
            raise VectorFieldError(message, solution=None, t=t) from exc

    rows = np.asarray(y0, dtype=np.float64).reshape(1, -1)
    jac = lambda t, y: problem.jac(t, np.ascontiguousarray(y), problem.p)  # noqa: E731
    J = call("jac", jac, t0, rows[0])
    atol_rows = _per_component(atol, rows.shape)
    field = lambda t, y: call("f", problem.field, t, y[0]).reshape(1, -1)  # noqa: E731
    check_jacobian(field, J, t0, rows, atol_rows)


def _per_component(atol: Any, shape: tuple) -> np.ndarray:
    """``atol`` (a float or an array broadcastable to ``shape``) as a fresh C-ordered float64 array
    of ``shape`` (a float without numpy's broadcasting, which costs more than the solve's check)."""
    if isinstance(atol, float):
        return np.full(shape, atol)
    if isinstance(atol, np.ndarray) and atol.shape == shape and atol.dtype == np.float64:
        return np.array(atol, order="C")  # numpy's broadcast_to costs more than this solve's check
    return np.array(np.broadcast_to(np.asarray(atol, dtype=np.float64), shape), order="C")


def refuse_or_warn(mode, reason: str, error: type = ValueError, stacklevel: int = 3) -> None:
    """``compile=True``: raise ``error`` with the reason; ``"auto"``: warn
    (:class:`CompileWarning`) and return."""
    if mode is True:
        raise error(f"compile=True: {reason}")
    warnings.warn(
        f"compile='auto' runs the Python path: {reason}", CompileWarning, stacklevel=stacklevel
    )


class _FailureRecorder:
    """What ``_diagnosis.max_steps_failure`` needs of the recorder: ``failure(cls, message, t)``."""

    def __init__(self, method: str, build: Callable):
        self.method, self.build = method, build

    def failure(self, cls, message: str, t):
        message = f"{self.method}: {message}"
        return cls(message, solution=self.build(cls.result, message), t=t)


class _PythonField:
    """The compiled ``f`` called from Python and counted into ``stats.nfe`` (the failure
    diagnoses)."""

    def __init__(self, problem, stats):
        self.problem, self.stats = problem, stats

    def __call__(self, t: float, y):
        self.stats.nfe += 1
        return self.problem.field(t, y)


def solve_compiled(
    problem,
    method: str,
    t_out: np.ndarray,
    y0: np.ndarray,
    rtol: float,
    atol: Any,
    first_step: float | None,
    max_steps: int,
    throw: bool = True,
    jac_checked: bool = False,
):
    """Run the compiled kernel of ``method`` and return what ``dk.solve`` returns for it.

    Parameters
    ----------
    problem : CompiledProblem
        From :func:`compile_problem`.
    method : str
        A name in :data:`KERNELS`.
    t_out : float64 array
        The validated output times (``t_out[0]`` is the start).
    y0 : float64 array ``(n,)``
    rtol : float
    atol : float or array broadcastable to ``(n,)``
    first_step : float or None
        None (or 0) for the automatic initial step.
    max_steps : int
    throw : bool
        False: a failure returns the partial :class:`Solution` with the failure's ``result`` code.
    jac_checked : bool
        Whether :func:`check_problem_jacobian` ran before: its calls (two of ``f``, one of ``jac``)
        are counted in the stats, as the Python path counts them.

    Returns
    -------
    Solution
        ``ts``, ``ys``, ``stats`` (:class:`SolverStats`), ``result``, ``message``, ``method``, as
        the Python path.
    """
    from . import common

    kernel_names()
    if method not in KERNELS:
        raise ValueError(method_reason(method))
    # fresh writable C-ordered float64 arrays: what the kernels' signatures take (a caller's
    # read-only y0 included)
    y0 = np.array(y0, dtype=np.float64, order="C")
    t_out = np.array(t_out, dtype=np.float64, order="C")
    atol_vec = _per_component(atol, y0.shape)
    t0, t_end = float(t_out[0]), float(t_out[-1])
    try:
        result = KERNELS[method](
            problem,
            t0,
            t_end,
            y0,
            t_out,
            float(rtol),
            atol_vec,
            0.0 if first_step is None else float(first_step),
            int(max_steps),
        )
    except SolverError:
        raise
    except (
        Exception
    ) as exc:  # raised inside the compiled f (numba re-raises it); no partial solution survives
        message = f"{method}: f raised {type(exc).__name__} in compiled code: {exc}"
        error = VectorFieldError(message, solution=None, t=None)
        raise error from exc
    stats = SolverStats(*result.stats.tolist())
    if jac_checked:
        stats.nfe, stats.njev = stats.nfe + 2, stats.njev + 1

    def build(code: str = "success", message: str = "") -> Solution:
        n = int(result.n_filled)
        ys = result.ys if n == len(result.ys) else result.ys[:n].copy()
        return Solution(
            ts=t_out[:n].copy(), ys=ys, stats=stats, result=code, message=message, method=method
        )

    if result.status == common.SUCCESS:
        return build()
    rec = _FailureRecorder(method, build)
    t, h = float(result.t_fail), float(result.h_last)
    if result.status == common.MAX_STEPS:
        if result.y_last is not None and result.f_last is not None:
            # the Python path's diagnosis (stiffness, chattering), with its calls of f counted the
            # same way
            stepper = type("CompiledStepper", (), {"explicit": _is_explicit(method)})()
            error = _diagnosis.max_steps_failure(
                _PythonField(problem, stats),
                backend_for(y0),
                rec,
                stepper,
                t,
                result.y_last,
                result.f_last,
                h,
                max_steps,
            )
        else:
            error = rec.failure(
                MaxStepsExceeded,
                f"max_steps={max_steps} reached at t={t:.6g} (last step {h:.3g})",
                t,
            )
    elif result.status == common.STEP_UNDERFLOW:
        error = rec.failure(StepSizeUnderflow, _diagnosis.underflow_message(h, t, t0, t_end), t)
    elif result.status == common.NEWTON_FAILURE:
        error = rec.failure(
            StepSizeUnderflow,
            f"Newton iterations failed at every step size down to {h:.3g} at "
            f"t={t:.17g}; " + _diagnosis.underflow_message(h, t, t0, t_end),
            t,
        )
    elif result.status == common.NONFINITE_START:
        error = rec.failure(NonFiniteState, f"f returned NaN/Inf at the initial state (t={t:g})", t)
    elif result.status == common.RANGE_EDGE:
        error = rec.failure(
            NonFiniteState,
            _diagnosis.range_edge_message(backend_for(y0), result.y_last, t, h),
            t,
        )
    elif result.status == common.NONFINITE:
        error = rec.failure(
            NonFiniteState,
            f"f returned NaN/Inf on every trial step beyond t={t:.17g} (the step "
            f"shrank to {h:.3g})",
            t,
        )
    else:
        raise RuntimeError(
            f"compiled kernel of {method!r} returned an unknown status {result.status}"
        )
    if throw:
        raise error
    return error.solution


def prepare(
    f: Callable,
    y0: Any,
    t: Any,
    method: str = "dopri5",
    rtol: float = 1e-6,
    atol: float | Any = 1e-8,
    max_steps: int = 100_000,
    *,
    throw: bool = True,
    jac: Callable | None = None,
    first_step: float | None = None,
    jac_check: bool = True,
) -> "PreparedSolve":
    """``dk.solve(f, y0, t, method, ..., compile=True)`` checked and compiled once, to be run many
    times: for sweeps of many short solves, whose time is otherwise mostly ``solve``'s checks of its
    arguments (about 90 µs a solve against 15-20 µs of a compiled kernel's own).

    Parameters
    ----------
    f, y0, t, method, rtol, atol, max_steps, throw, jac, first_step, jac_check
        As :func:`dynkit.solvers.solve`, refused as it refuses them (the same checks, before any
        work); ``method`` one with a compiled kernel. ``y0`` is the default start.

    Returns
    -------
    PreparedSolve
        ``run()`` solves from ``y0``, ``run(y1)`` from another start of ``y0``'s shape: the
        :class:`~dynkit.solvers.Solution` ``dk.solve`` returns for it, except that the check of
        ``jac`` (two calls of ``f``, one of ``jac``, at ``y0``) ran once, here, and is counted in
        no run's ``stats``.

    Raises
    ------
    CompilationError, ValueError, TypeError
        What ``dk.solve(..., compile=True)`` raises for these arguments.

    Examples
    --------
    >>> import numpy as np, dynkit as dk
    >>> def decay(t, y, out):
    ...     out[0] = -y[0]
    >>> run = dk.solvers.prepare(dk.in_place(decay), np.array([1.0]), [0.0, 1.0])
    >>> [round(float(run(np.array([a])).ys[-1, 0]), 6) for a in (1.0, 2.0)]
    [0.367879, 0.735759]
    """
    method_obj, y0, t_out, rtol, atol, step_size = validated_arguments(
        f=f,
        y0=y0,
        t=t,
        method=method,
        rtol=rtol,
        atol=atol,
        step_size=None,
        max_steps=max_steps,
        first_step=first_step,
        throw=throw,
        dense=False,
        per_sample=False,
        jac=jac,
        jac_sparsity=None,
        control=None,
        jac_check=jac_check,
    )
    reason, error = unsupported_reason(method, y0, {}), ValueError
    if reason is None and not numba_available():
        reason, error = f"numba is not installed ({JIT_HINT})", CompilationError
    if reason is None:
        reason = method_reason(method)
    if reason is not None:
        raise error(f"prepare: {reason}")
    problem = compile_problem(f, y0, float(t_out[0]), jac=jac)
    if jac is not None and jac_check:
        check_problem_jacobian(problem, method, float(t_out[0]), y0, atol)
    first = step_size if getattr(method_obj, "adaptive", False) else None
    return PreparedSolve(problem, method, t_out, y0, rtol, atol, first, int(max_steps), throw)


class PreparedSolve:
    """A compiled solve checked once (:func:`prepare`); ``run(y0=None)`` solves it again."""

    def __init__(self, problem, method, t_out, y0, rtol, atol, first_step, max_steps, throw):
        self.problem, self.method, self.t_out = problem, method, t_out
        self.y0 = np.array(y0, dtype=np.float64, order="C")
        self.rtol, self.atol = rtol, _per_component(atol, self.y0.shape)
        self.first_step, self.max_steps, self.throw = first_step, max_steps, throw

    def __call__(self, y0: Any = None) -> Solution:
        """The solve from ``y0`` (default: the prepared start), a float64 array of its shape."""
        start = self.y0 if y0 is None else self._start(y0)
        return solve_compiled(
            self.problem,
            self.method,
            self.t_out,
            start,
            self.rtol,
            self.atol,
            self.first_step,
            self.max_steps,
            self.throw,
        )

    def _start(self, y0: Any) -> np.ndarray:
        start = np.asarray(y0)
        if start.shape != self.y0.shape or start.dtype != np.float64:
            raise ValueError(
                f"y0 must be a float64 array of shape {self.y0.shape} (the prepared solve's), got "
                f"shape {start.shape} dtype {start.dtype}"
            )
        if not np.isfinite(start).all():
            raise ValueError(f"y0 must be finite, got {start!r:.80}")
        return start

    def __repr__(self) -> str:
        name = getattr(self.problem.source, "__name__", "f")
        return f"PreparedSolve({name}, {self.method}, n={self.problem.n}, {len(self.t_out)} times)"


def _is_explicit(method: str) -> bool:
    """Whether ``method`` is an explicit method (a MaxStepsExceeded then may suggest a stiff
    one)."""
    info = METHODS.get(method)
    implementation = getattr(info, "implementation", None)
    return bool(getattr(implementation, "explicit", True)) and not hasattr(
        implementation, "make_stepper"
    )


# ---------------------------------------------------------------------------------------------
# ensembles (the public entry is dynkit.solve_ensemble); imported last: ensemble.py uses the names
# above

from .ensemble import EnsembleSolution, solve_ensemble  # noqa: E402

# solve(compile=...) reaches this path through the seam: the engine sits below this package
_seam.register_compiled(_seam.CompiledEntry(validate_compile, refuse_or_warn, solve_or_fallback))
