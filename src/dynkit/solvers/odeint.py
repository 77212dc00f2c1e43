"""torchdiffeq's ``odeint`` / ``odeint_adjoint`` calling conventions, on top of
:func:`dynkit.solve`.

A torchdiffeq user switches by changing one import::

    from dynkit import odeint, odeint_adjoint     # was: from torchdiffeq import odeint, odeint_adjoint

Same signature, defaults (``rtol=1e-7``, ``atol=1e-9``, ``method="dopri5"``), tuple states,
``options``, ``event_fn`` returning ``(event_t, solution)`` and return values (a tensor, or a tuple
of tensors, of shape ``(len(t), *y0.shape)``). Every integration is a :func:`dynkit.solve` call (no
second engine); what differs from torchdiffeq is listed in the docs page "Coming from torchdiffeq"
(``docs/guide/torchdiffeq.md``).

Method names (:data:`TORCHDIFFEQ_METHODS`): ``dopri5``, ``bosh3``, ``euler``, ``midpoint``, ``rk4``,
``heun2`` (dynkit's ``heun``) and ``dopri8`` (dynkit's ``dop853``: Dormand–Prince of order 8 with
another error estimator) map to dynkit's methods; the names in :data:`NO_EQUIVALENT` raise a
ValueError that names the nearest dynkit method; any name of :data:`dynkit.solvers.METHODS`
(``tsit5``, ``rodas4``, ``auto``, ...) is accepted as well.

Options: adaptive methods take ``first_step`` (dynkit's ``step_size`` of an adaptive method),
``max_num_steps`` (``max_steps``, a positive int) and ``dtype`` (a floating torch dtype, checked and
then ignored: dynkit's times are always float64); fixed-step methods take ``step_size``,
``grid_constructor(func, y0, t) -> grid``, ``perturb`` (evaluate ``func`` just inside each step at
its ends, for a ``func`` discontinuous at grid points) and ``interp="cubic"``. Any other option
raises a ValueError naming it.

Every argument is checked before any step, with an error naming it; what the user's callables do
wrong is reported as in :func:`dynkit.solve`: an exception raised in ``func``, ``event_fn`` or
``options["grid_constructor"]`` becomes a :class:`~dynkit.VectorFieldError` naming the callable (the
exception as ``__cause__``); a value of the wrong kind (``event_fn`` returning None, a bool or a
string, ``func`` returning a tensor on another device such as ``meta``) a TypeError naming it. An
``event_fn`` that is zero at ``t[0]`` is refused: its event would be the initial time itself.
"""  # noqa: E501

from __future__ import annotations

import contextlib
import math
from numbers import Integral
import warnings
from typing import Any, Callable

import numpy as np

from .adjoint import check_adjoint_checkpoints, solve_adjoint
from .ark import TwoStepRK
from .control import StepControl
from .engine import solve
from .errors import MaxStepsExceeded, VectorFieldError
from .methods import METHODS

__all__ = ["odeint", "odeint_adjoint", "TORCHDIFFEQ_METHODS", "NO_EQUIVALENT"]

# torchdiffeq name -> dynkit name: the same method, or (dopri8) the same order and kind
TORCHDIFFEQ_METHODS = {
    "dopri5": "dopri5",
    "dopri8": "dop853",
    "bosh3": "bosh3",
    "tsit5": "tsit5",
    "euler": "euler",
    "midpoint": "midpoint",
    "rk4": "rk4",
    "heun2": "heun",
}
# torchdiffeq names without a dynkit equivalent -> what they are and the nearest dynkit method
NO_EQUIVALENT = {
    "fehlberg2": "Runge–Kutta–Fehlberg 2(1); nearest in dynkit: 'bosh3' (3(2)) or 'rkf45'",
    "adaptive_heun": "adaptive Heun 2(1); nearest in dynkit: 'bosh3' (3(2))",
    "heun3": "Heun's third-order method; nearest in dynkit: 'rk4' or the two-step 'ark3'",
    "explicit_adams": "Adams–Bashforth (multistep); nearest in dynkit: the two-step 'ark3' / 'ark4'",  # noqa: E501
    "implicit_adams": "Adams–Bashforth–Moulton (multistep); nearest in dynkit: the two-step 'ark4'",
    "fixed_adams": "Adams–Bashforth–Moulton (multistep); nearest in dynkit: the two-step 'ark4'",
    "scipy_solver": "torchdiffeq's wrapper of scipy.integrate.solve_ivp; use dk.solve with a numpy y0 "  # noqa: E501
    "('rodas4', 'auto' for stiff problems) or scipy itself",
}
# torchdiffeq's implicit (stiff) methods: dynkit's stiff methods are the linearly implicit
# Rosenbrock ones (torch and numpy states) and radau5 / bdf (numpy states, through dk.solve)
_STIFF = (
    "nearest in dynkit: {torch} with a torch state (L-stable Rosenbrock, Jacobian by autograd), or "
    "dk.solve(..., method={numpy}) with a numpy state"
)
NO_EQUIVALENT.update(
    {
        "implicit_euler": "implicit Euler, order 1; "
        + _STIFF.format(torch="'rosenbrock23'", numpy="'bdf'"),
        "implicit_midpoint": "implicit midpoint, order 2; "
        + _STIFF.format(torch="'rosenbrock23'", numpy="'radau5'"),
        "trapezoid": "implicit trapezoid, order 2; "
        + _STIFF.format(torch="'rosenbrock23'", numpy="'radau5'"),
        "sdirk2": "SDIRK of order 2; " + _STIFF.format(torch="'rosenbrock23'", numpy="'radau5'"),
        "trbdf2": "TR-BDF2, order 2; " + _STIFF.format(torch="'rosenbrock23'", numpy="'bdf'"),
        "radauIIA3": "Radau IIA of order 3; " + _STIFF.format(torch="'rodas4'", numpy="'radau5'"),
        "radauIIA5": "Radau IIA of order 5; " + _STIFF.format(torch="'rodas5'", numpy="'radau5'"),
        "gl4": "Gauss–Legendre of order 4 (fixed step, symplectic); "
        + _STIFF.format(torch="'rodas4'", numpy="'radau5'"),
        "gl6": "Gauss–Legendre of order 6 (fixed step, symplectic); "
        + _STIFF.format(torch="'rodas5'", numpy="'radau5'"),
    }
)
ADAPTIVE_OPTIONS = (
    "first_step",
    "max_num_steps",
    "dtype",
    "norm",
    "min_step",
    "max_step",
    "step_t",
    "jump_t",
)
FIXED_OPTIONS = ("step_size", "grid_constructor", "perturb", "interp", "max_num_steps", "dtype")
MAX_NUM_STEPS = 100_000  # dk.solve's default max_steps (torchdiffeq's is 2**31 - 1)
# Two grid steps equal to this relative precision make a uniform grid (one dk.solve call).
UNIFORM_RTOL = 1e-10
# Event search: the horizon of each further attempt doubles, up to this many attempts (2**10 - 1 =
# 1023 times |t[1] - t[0]| in all: an event that never fires ends the search there, in a bounded
# time, instead of torchdiffeq's endless integration).
EVENT_HORIZONS = 10


def odeint(
    func: Callable,
    y0: Any,
    t: Any,
    *,
    rtol: float = 1e-7,
    atol: Any = 1e-9,
    method: str | None = None,
    options: dict | None = None,
    event_fn: Callable | None = None,
):
    """Integrate ``dy/dt = func(t, y)``, ``y(t[0]) = y0`` with torchdiffeq's calling conventions.

    Parameters
    ----------
    func : callable
        ``func(t, y)`` with ``t`` a 0-d tensor and ``y`` a tensor (or a tuple of tensors, like
        ``y0``).
    y0 : torch.Tensor or tuple of torch.Tensor
        Initial state, float32 or float64 (all tuple elements of one dtype and device).
    t : 1-D torch.Tensor (or array-like)
        Strictly increasing or decreasing output times; ``t[0]`` is the initial time. With
        ``event_fn``, exactly two times: ``t[0]`` and any later (or earlier) time that sets the
        direction.
    rtol, atol : float
        Tolerances of the adaptive methods (dynkit's error test: RMS of
        ``err / (atol + rtol max(|y|, |y_new|))`` at most 1). ``atol`` may be a tuple (one value or
        tensor per element of a tuple state) or a tensor broadcastable to the state.
    method : str, optional
        A torchdiffeq name (:data:`TORCHDIFFEQ_METHODS`) or any name of
        :data:`dynkit.solvers.METHODS`; default ``"dopri5"``.
    options : dict, optional
        ``first_step``, ``max_num_steps``, ``dtype`` (adaptive methods); ``step_size``,
        ``grid_constructor``, ``perturb``, ``interp="cubic"``, ``max_num_steps`` (fixed-step
        methods).
    event_fn : callable, optional
        ``event_fn(t, y) -> tensor``: the solve stops where any component first changes sign (the
        components are made positive at ``t[0]`` and their minimum is located, as in torchdiffeq);
        the zero is located on the method's interpolant to machine precision (Brent). The search
        runs over horizons doubling from ``|t[1] - t[0]|``; an event that has not fired by
        ``t[0] + 1023 (t[1] - t[0])`` ends the solve there (that time is returned, with a
        ``RuntimeWarning``).

    Returns
    -------
    torch.Tensor or tuple of torch.Tensor
        States at ``t``: shape ``(len(t), *y0.shape)`` (per element for a tuple state). With
        ``event_fn``: ``(event_t, solution)``, ``solution`` holding the states at ``t[0]`` and at
        the event. Differentiable by autograd through the steps (discretise-then-optimise); the
        event time itself carries no gradient (as torchdiffeq's ``odeint``).

    Raises
    ------
    ValueError, TypeError
        A method without a dynkit equivalent (the message names the nearest one), an unknown
        option, bad arguments (naming the argument, before any step); ``event_fn`` returning None, a
        bool or a string; an ``event_fn`` that is zero at ``t[0]``.
    dynkit.SolverError
        Solver failures (step-size underflow, too many steps, non-finite states), as in
        :func:`dynkit.solve`; :class:`~dynkit.solvers.VectorFieldError` when ``func``, ``event_fn``
        or ``grid_constructor`` raises (the exception is its ``__cause__``) or ``func`` returns
        something unusable.

    References
    ----------
    R. T. Q. Chen, *torchdiffeq* (2018), https://github.com/rtqichen/torchdiffeq: the interface followed here.
    """  # noqa: E501
    return _odeint(func, y0, t, rtol, atol, method, options, event_fn, adjoint=None)


def odeint_adjoint(
    func: Callable,
    y0: Any,
    t: Any,
    *,
    rtol: float = 1e-7,
    atol: Any = 1e-9,
    method: str | None = None,
    options: dict | None = None,
    event_fn: Callable | None = None,
    adjoint_rtol: float | None = None,
    adjoint_atol: Any = None,
    adjoint_method: str | None = None,
    adjoint_options: dict | None = None,
    adjoint_params: Any = None,
    adjoint_checkpoints: int = 0,
):
    """:func:`odeint` with gradients by the continuous adjoint (:mod:`dynkit.solvers.adjoint`).

    Memory stays flat in the number of steps: the forward solve keeps no graph, and the gradients
    of ``y0``, ``t`` and the parameters come from the adjoint ODE solved backward (Chen et al. 2018,
    Eqs. (4)-(5); the review's Eqs. (13)-(15)).

    Parameters
    ----------
    func, y0, t, rtol, atol, method, options, event_fn
        As in :func:`odeint`.
    adjoint_rtol, adjoint_atol, adjoint_method, adjoint_options
        The backward solves' settings (default: the forward's; ``adjoint_options`` default to
        ``options`` when the method is the same, as in torchdiffeq). Only ``step_size`` and
        ``first_step`` are read from ``adjoint_options``.
    adjoint_params : sequence of torch.Tensor, optional
        The tensors ``func`` uses that receive gradients. Default: ``func.parameters()``, which
        needs ``func`` to be an ``nn.Module``: a plain function without ``adjoint_params`` is
        refused, as in torchdiffeq (pass ``adjoint_params=()`` when only ``y0``/``t`` need
        gradients).
    adjoint_checkpoints : int
        dynkit's own (not in torchdiffeq): ``N``, the forward keeps its states at ``N + 1`` evenly
        spaced times and the backward restarts its ``y`` from each (memory ``O(N · dim)``; default
        0: from the output times only); see
        :func:`dynkit.solvers.adjoint.check_adjoint_checkpoints`.

    Returns
    -------
    As :func:`odeint`.
    """
    import torch

    n_checkpoints = check_adjoint_checkpoints(adjoint_checkpoints)
    if adjoint_params is None:
        if not isinstance(func, torch.nn.Module):
            raise ValueError(
                "odeint_adjoint needs func to be an nn.Module (whose parameters receive gradients) "
                "or the tensors it uses given as adjoint_params (adjoint_params=() when there are "
                f"none); got func={getattr(func, '__qualname__', type(func).__name__)} and "
                "adjoint_params=None"
            )
        adjoint_params = tuple(func.parameters())
    elif isinstance(adjoint_params, torch.Tensor):
        adjoint_params = (adjoint_params,)
    try:
        params = tuple(adjoint_params)
    except TypeError:
        raise TypeError(
            f"adjoint_params must be a sequence of torch tensors, got "
            f"{type(adjoint_params).__name__}"
        ) from None
    bad = [type(p).__name__ for p in params if not isinstance(p, torch.Tensor)]
    if bad:
        raise TypeError(
            f"adjoint_params must be a sequence of torch tensors, got elements of type {bad}"
        )
    backward = {
        "method": method if adjoint_method is None else adjoint_method,
        "rtol": rtol if adjoint_rtol is None else adjoint_rtol,
        "atol": atol if adjoint_atol is None else adjoint_atol,
        "options": (options if adjoint_method in (None, method) else None)
        if adjoint_options is None
        else adjoint_options,
        "checkpoints": n_checkpoints,
    }
    return _odeint(
        func,
        y0,
        t,
        rtol,
        atol,
        method,
        options,
        event_fn,
        adjoint=(tuple(p for p in params if p.requires_grad), backward),
    )


# ---------------------------------------------------------------------------------------------


class _State:
    """A tensor or a tuple of tensors as one flat tensor, and back (torchdiffeq's tuple states)."""

    def __init__(self, y0):
        import torch

        self.is_tuple = isinstance(y0, tuple)
        parts = y0 if self.is_tuple else (y0,)
        if self.is_tuple and not parts:
            raise ValueError(
                "y0 must be a tensor or a non-empty tuple of tensors, got an empty tuple"
            )
        for i, p in enumerate(parts):
            if not isinstance(p, torch.Tensor):
                where = f"y0[{i}]" if self.is_tuple else "y0"
                raise TypeError(
                    f"{where} must be a torch.Tensor (odeint follows torchdiffeq: a tensor "
                    f"or a tuple "
                    f"of tensors; dk.solve takes numpy arrays), got {type(p).__name__}"
                )
            if p.dtype != parts[0].dtype or p.device != parts[0].device:
                raise ValueError(
                    f"y0's tensors must share one dtype and device, got {p.dtype} on {p.device} at "
                    f"y0[{i}] and {parts[0].dtype} on {parts[0].device} at y0[0]"
                )
        self.shapes = [p.shape for p in parts]
        self.sizes = [p.numel() for p in parts]
        self.flat = torch.cat([p.reshape(-1) for p in parts]) if self.is_tuple else y0
        self.dtype, self.device = self.flat.dtype, self.flat.device

    def unflatten(self, y, lead: tuple = ()):
        if not self.is_tuple:
            return y
        chunks = y.split(self.sizes, dim=len(lead))
        return tuple(c.reshape(tuple(lead) + tuple(s)) for c, s in zip(chunks, self.shapes))

    def flatten(self, value, what: str):
        import torch

        if not self.is_tuple:
            return value
        if not isinstance(value, (tuple, list)) or len(value) != len(self.shapes):
            raise TypeError(
                f"{what} must return a tuple of {len(self.shapes)} tensors like y0, got "
                f"{type(value).__name__}"
                + (f" of length {len(value)}" if isinstance(value, (tuple, list)) else "")
            )
        return torch.cat([torch.as_tensor(v).reshape(-1) for v in value])

    def field(self, func):
        if not self.is_tuple:
            return func
        return lambda t, y: self.flatten(func(t, self.unflatten(y)), "func")

    def tolerance(self, tol, name: str):
        """``atol`` for the flat state: a scalar, a tensor like the state, or one per tuple
        element."""
        import torch

        if self.is_tuple and isinstance(tol, (tuple, list)):
            if len(tol) != len(self.shapes):
                raise ValueError(
                    f"{name} must be a scalar or one value per element of y0 ({len(self.shapes)}), "
                    f"got {len(tol)} values"
                )
            return torch.cat(
                [
                    torch.broadcast_to(torch.as_tensor(v, dtype=torch.float64), s).reshape(-1)
                    for v, s in zip(tol, self.shapes)
                ]
            )
        if not self.is_tuple and isinstance(tol, (tuple, list)):
            raise TypeError(
                f"{name} must be a float or a tensor broadcastable to y0 (a tuple gives one "
                f"value per "
                f"element of a tuple y0, and y0 is one tensor), got {type(tol).__name__} "
                f"{tol!r:.60}"
            )
        if isinstance(tol, torch.Tensor) and tol.ndim == 0:
            return float(tol)
        return tol


def _resolve_method(method) -> tuple[str, bool]:
    if method is None:
        method = "dopri5"
    if not isinstance(method, str):
        raise TypeError(
            f"method must be a method name (str), got {type(method).__name__} {method!r:.60}"
        )
    if method in NO_EQUIVALENT:
        raise ValueError(
            f"method must be one of {sorted(TORCHDIFFEQ_METHODS)} or a dynkit method "
            f"({', '.join(METHODS)}), got {method!r} ({NO_EQUIVALENT[method]}), which has no "
            f"dynkit "
            f"equivalent"
        )
    name = TORCHDIFFEQ_METHODS.get(method, method)
    if name not in METHODS:
        raise ValueError(
            f"method must be a torchdiffeq name ({', '.join(sorted(TORCHDIFFEQ_METHODS))}) "
            f"or a dynkit "
            f"method ({', '.join(METHODS)}), got {method!r}"
        )
    return name, METHODS[name].adaptive


def _resolve_options(options, adaptive: bool, method: str) -> dict:
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise TypeError(f"options must be a dict, got {type(options).__name__}")
    allowed = ADAPTIVE_OPTIONS if adaptive else FIXED_OPTIONS
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise ValueError(
            f"options must be a subset of {list(allowed)} with the "
            f"{'adaptive' if adaptive else 'fixed-step'} method {method!r}, got {unknown}, which "
            f"dynkit.odeint does not support (see the 'Coming from torchdiffeq' docs page)"
        )
    if options.get("interp", "cubic") != "cubic":
        raise ValueError(
            f"options['interp'] must be 'cubic' (dynkit's fixed-step outputs between grid "
            f"points are "
            f"cubic Hermite), got {options['interp']!r}"
        )
    if not isinstance(options.get("perturb", False), bool):
        raise TypeError(f"options['perturb'] must be True or False, got {options['perturb']!r}")
    if options.get("step_size") is not None and options.get("grid_constructor") is not None:
        raise ValueError(
            "options 'step_size' and 'grid_constructor' are mutually exclusive; got both"
        )
    for key in ("step_size", "first_step"):
        value = options.get(key)
        if value is not None and not (
            isinstance(value, (int, float))
            and not isinstance(value, bool)
            and 0 < value < math.inf
            or _positive_scalar_tensor(value)
        ):
            raise ValueError(
                f"options[{key!r}] must be a positive finite number (its sign follows t), "
                f"got {value!r}"
            )
    steps = options.get("max_num_steps")
    if steps is not None and (
        isinstance(steps, bool) or not isinstance(steps, Integral) or steps < 1
    ):
        raise TypeError(
            f"options['max_num_steps'] must be a positive int, got {type(steps).__name__} "
            f"{steps!r:.40}"
        )
    dtype = options.get("dtype")
    if dtype is not None and not _floating_dtype(dtype):
        raise TypeError(
            f"options['dtype'] must be a floating torch dtype (torch.float32 or "
            f"torch.float64; dynkit "
            f"keeps its times in float64), got {type(dtype).__name__} {dtype!r:.40}"
        )
    grid = options.get("grid_constructor")
    if grid is not None and not callable(grid):
        raise TypeError(
            f"options['grid_constructor'] must be a callable grid_constructor(func, y0, t) "
            f"-> grid, got "
            f"{type(grid).__name__} {grid!r:.40}"
        )
    options = dict(options)
    for key in ("min_step", "max_step"):
        if key in options:
            value = options[key]
            value = float(value) if _scalar_tensor(value) else value
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
                raise ValueError(
                    f"options[{key!r}] must be a number >= 0 (a bound on |step|), got {value!r}"
                )
            options[key] = float(value)
    if (
        options.get("norm") is not None
        and not callable(options["norm"])
        and options["norm"] != "seminorm"
    ):
        raise TypeError(
            f"options['norm'] must be a callable norm(tensor) -> scalar (or 'seminorm' in "
            f"adjoint_options), got {options['norm']!r:.60}"
        )
    for key in ("step_t", "jump_t"):
        if options.get(key) is not None:
            options[key] = _time_points(options[key], f"options[{key!r}]")
    if "step_t" in options and "jump_t" in options:
        shared = set(options["step_t"].tolist()) & set(options["jump_t"].tolist())
        if shared:
            raise ValueError(
                f"options 'step_t' and 'jump_t' must not share times (as in torchdiffeq), got "
                f"{sorted(shared)} in both"
            )
    return options


def _scalar_tensor(value) -> bool:
    import torch

    return isinstance(value, torch.Tensor) and value.numel() == 1


def _time_points(value, name: str) -> np.ndarray:
    """``step_t`` / ``jump_t`` as a sorted 1-D float64 array of distinct finite times."""
    import torch

    raw = (
        value.detach().to(torch.float64).cpu().numpy() if isinstance(value, torch.Tensor) else value
    )
    try:
        points = np.asarray(raw, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise TypeError(
            f"{name} must be a 1-D tensor (or sequence) of times, got {type(value).__name__}"
        ) from None
    if not np.isfinite(points).all():
        raise ValueError(f"{name} must hold finite times, got {points.tolist()}")
    return np.unique(points)


def _floating_dtype(dtype) -> bool:
    import torch

    return isinstance(dtype, torch.dtype) and dtype.is_floating_point


def _positive_scalar_tensor(value) -> bool:
    return _scalar_tensor(value) and value.is_floating_point() and 0 < float(value) < math.inf


def _times(t, state: _State):
    import torch

    if isinstance(t, torch.Tensor):
        if not t.is_floating_point():
            raise TypeError(f"t must be a floating-point tensor, got dtype {t.dtype}")
        return t
    expected = "a 1-D tensor (or array) of real times"
    if t is None or isinstance(t, (str, bytes, dict, set)):
        raise TypeError(f"t must be {expected}, got {type(t).__name__} {t!r:.40}")
    try:
        raw = np.asarray(t)
    except (TypeError, ValueError):
        raise TypeError(f"t must be {expected}, got a ragged or mixed {type(t).__name__}") from None
    if raw.dtype.kind not in "fiu":
        raise TypeError(f"t must be {expected}, got {type(t).__name__} of dtype {raw.dtype}")
    return torch.as_tensor(raw.astype(np.float64), dtype=state.dtype, device=state.device)


def _step_key(adaptive: bool) -> str:
    """The :func:`dynkit.solve` argument a step takes: an adaptive method's is only its first
    step."""
    return "first_step" if adaptive else "step_size"


CALLBACKS = ("callback_step", "callback_accept_step", "callback_reject_step")
"""torchdiffeq's per-step callbacks, read from ``func`` (a module) when present; ``NAME_adjoint`` for the
backward solves of :func:`odeint_adjoint`."""  # noqa: E501


def _callbacks(func, adaptive: bool, name: str, suffix: str = "") -> dict:
    """``func``'s torchdiffeq callbacks (``callback_step{suffix}``, ...) as
    ``{"on_step": callable, ...}``."""
    found = {
        key: getattr(func, key + suffix)
        for key in CALLBACKS
        if callable(getattr(func, key + suffix, None))
    }
    if not adaptive:
        ignored = [key + suffix for key in CALLBACKS[1:] if key in found]
        if ignored:
            warnings.warn(
                f"{', '.join(ignored)} of func are never called by the fixed-step method {name!r} "
                f"(every step is accepted; callback_step{suffix} is called)",
                UserWarning,
                stacklevel=4,
            )
        found = {k: v for k, v in found.items() if k == "callback_step"}
    return {
        "on_" + key.removeprefix("callback_").removesuffix("_step"): cb for key, cb in found.items()
    }


def _with_tensors(callback, unflatten):
    """A callback called as torchdiffeq calls it: ``(t0, y0, dt)``, times as tensors, ``y0`` like
    the state."""
    import torch

    def call(t, y, h):
        dtype = y.dtype if isinstance(y, torch.Tensor) else torch.float64
        callback(torch.as_tensor(t, dtype=dtype), unflatten(y), torch.as_tensor(h, dtype=dtype))

    return call


def _control(options: dict, callbacks: dict, unflatten, norm=None) -> StepControl | None:
    """The :class:`StepControl` of a solve: its norm, step bounds and callbacks (None when there
    are none)."""
    kwargs = {key: _with_tensors(callback, unflatten) for key, callback in callbacks.items()}
    if norm is not None:
        kwargs["norm"] = norm
    for key in ("min_step", "max_step"):
        if key in options:
            kwargs[key] = options[key]
    return StepControl(**kwargs) if kwargs else None


class _Runner:
    """One :func:`dynkit.solve` (or :func:`~dynkit.solvers.adjoint.solve_adjoint`) call with
    fixed settings."""

    def __init__(
        self, name, adaptive, rtol, atol, max_steps, adjoint, state: _State, func=None, options=None
    ):
        self.name, self.rtol, self.atol, self.max_steps, self.adjoint = (
            name,
            rtol,
            atol,
            max_steps,
            adjoint,
        )
        self.step_key = _step_key(adaptive)
        options = options or {}
        user_norm = options.get("norm")
        if user_norm == "seminorm":
            raise ValueError(
                "options['norm']='seminorm' is for the backward solves: pass it in adjoint_options "
                "(adjoint_options=dict(norm='seminorm')) of odeint_adjoint"
            )
        # the user's norm sees the error shaped like y0 (a 0-d y0 is solved as one component)
        norm = (
            None
            if user_norm is None
            else (lambda e: user_norm(state.unflatten(e.reshape(state.flat.shape))))
        )
        self.control = _control(options, _callbacks(func, adaptive, name), state.unflatten, norm)
        self.backward = None
        if adjoint is not None:
            params, spec = adjoint
            b_name, b_adaptive = _resolve_method(spec["method"])
            b_options = _resolve_options(spec["options"], b_adaptive, b_name)
            if not b_adaptive and b_options.get("norm") is not None:
                raise ValueError(
                    f"adjoint_options['norm'] needs an adaptive adjoint method, got {b_name!r}"
                )
            self.checkpoints = spec.get("checkpoints", 0)
            self.backward = {
                "method": b_name,
                "rtol": spec["rtol"],
                "atol": state.tolerance(spec["atol"], "adjoint_atol"),
                "control": _control(
                    b_options,
                    _callbacks(func, b_adaptive, b_name, "_adjoint"),
                    lambda z: z,
                    _adjoint_norm(b_options.get("norm"), state, params),
                ),
            }
            self.backward_step_key = _step_key(b_adaptive)
            b_step = b_options.get(self.backward_step_key)
            self.backward_step = None if b_step is None else float(b_step)

    def __call__(self, f, y0, t, step_size=None):
        kwargs = dict(
            method=self.name,
            rtol=self.rtol,
            atol=self.atol,
            max_steps=self.max_steps,
            control=self.control,
        )
        kwargs[self.step_key] = step_size
        if self.adjoint is None:
            return solve(f, y0, t, **kwargs).ys
        params, _ = self.adjoint
        backward = dict(self.backward)
        if self.backward_step is not None:
            backward[self.backward_step_key] = math.copysign(
                self.backward_step, float(t[-1]) - float(t[0])
            )
        return solve_adjoint(
            f,
            y0,
            t,
            adjoint_params=params,
            backward_options=backward,
            adjoint_checkpoints=self.checkpoints,
            **kwargs,
        ).ys


def _adjoint_norm(norm, state: _State, params):
    """The backward solves' error measure over the flat augmented state ``z = (y, a, g)``.

    ``"seminorm"``: the default's part-by-part measure over ``y`` and ``a`` only
    (``(RMS_y² + RMS_a²)^{1/2}``), leaving the parameter gradients ``g`` out of the step control
    (Kidger, Chen & Lyons 2021: they do not feed back into the dynamics, so their error need not
    limit the step). A callable gets torchdiffeq's tuple ``(t, *y, *a, *g)``, ``t`` a 0-d zero
    (dynkit's augmented state carries no time; the gradient of ``t`` is formed from ``f`` at the
    outputs), ``y`` and ``a`` shaped like ``y0``'s elements, each ``g`` like its parameter.
    """
    import torch

    if norm is None:
        return None
    n_y = sum(state.sizes)
    if (
        norm == "seminorm"
    ):  # the default's part-by-part measure (adjoint.PartwiseErrorMethod) without the g parts
        return lambda z: torch.sqrt(torch.mean(z[:n_y] ** 2) + torch.mean(z[n_y : 2 * n_y] ** 2))
    sizes = [p.numel() for p in params]

    def parts(flat):  # the elements of y0's shape(s) (a 0-d y0 is solved as one component)
        return state.unflatten(flat) if state.is_tuple else (flat.reshape(state.shapes[0]),)

    def tupled(z):
        ys, adj = parts(z[:n_y]), parts(z[n_y : 2 * n_y])
        gs = tuple(g.reshape(p.shape) for g, p in zip(z[2 * n_y :].split(sizes), params))
        return norm((torch.zeros((), dtype=z.dtype, device=z.device), *ys, *adj, *gs))

    return tupled


def _odeint(func, y0, t, rtol, atol, method, options, event_fn, adjoint):
    import torch

    if not callable(func):
        raise TypeError(f"func must be a callable func(t, y), got {type(func).__name__}")
    state = _State(y0)
    t = _times(t, state)
    name, adaptive = _resolve_method(method)
    options = _resolve_options(options, adaptive, name)
    if event_fn is not None and not callable(event_fn):
        raise TypeError(
            f"event_fn must be a callable event_fn(t, y) -> tensor, got {type(event_fn).__name__} "
            f"{event_fn!r:.40}"
        )
    rtol = float(rtol) if isinstance(rtol, torch.Tensor) and rtol.numel() == 1 else rtol
    max_steps = int(options.get("max_num_steps", MAX_NUM_STEPS))
    run = _Runner(
        name,
        adaptive,
        rtol,
        state.tolerance(atol, "atol"),
        max_steps,
        adjoint,
        state,
        func,
        options,
    )
    f = state.field(func)
    t_np = t.detach().to(torch.float64).cpu().numpy() if t.ndim == 1 else None
    if t_np is None or len(t_np) < 1 or (event_fn is not None and len(t_np) < 2):
        raise ValueError(
            f"t must be a 1-D tensor of at least {2 if event_fn is not None else 1} time(s), got "
            f"shape {tuple(t.shape)}"
        )
    if len(t_np) == 1:  # torchdiffeq returns y0 at its one time, without calling func
        return state.unflatten(state.flat.unsqueeze(0), (1,))
    direction = 1.0 if t_np[-1] > t_np[0] else -1.0

    if event_fn is not None:
        if len(t_np) != 2:
            raise ValueError(
                f"t must hold 2 times with event_fn (t[0] and a time that sets the direction), "
                f"got len(t)={len(t_np)}"
            )
        step = options.get("step_size" if not adaptive else "first_step")
        if not adaptive and step is None:
            raise ValueError(
                f"event_fn with the fixed-step method {name!r} needs options['step_size'], got None"
            )
        step = None if step is None else direction * float(step)
        event_t, y_event = _until_event(f, event_fn, state, t, t_np, step, run)
        ys = torch.stack([state.flat, y_event])
        return event_t, state.unflatten(ys, (2,))

    if adaptive:
        first = options.get("first_step")
        first = None if first is None else direction * float(first)
        breaks = _breakpoints(options, t_np, direction)
        if breaks and adjoint is None and t.requires_grad and torch.is_grad_enabled():
            raise ValueError(
                "t requires grad, but dynkit.odeint with step_t/jump_t solves each piece "
                "between them "
                "separately and gives no gradient in t; use dynkit.odeint_adjoint, or t.detach()"
            )
        ys = (
            run(f, state.flat, t, first)
            if not breaks
            else _segmented(f, state, t_np, breaks, first, run)
        )
    else:
        ys = _fixed_grid(f, func, state, t, t_np, direction, options, run)
    return state.unflatten(ys, (len(t_np),))


def _fixed_grid(f, func, state: _State, t, t_np, direction, options, run):
    """torchdiffeq's fixed grid: from ``step_size`` (last step shortened to end on ``t[-1]``),
    from ``grid_constructor``, or ``t`` itself. A uniform grid is one dk.solve call; any other
    grid, or ``perturb``, one dk.solve call of one step per grid interval (outputs inside by
    cubic Hermite)."""
    import torch

    span = t_np[-1] - t_np[0]
    step = options.get("step_size")
    if step is not None:
        h = abs(float(step))
        n = round(span / (direction * h))
        if (
            n >= 1
            and abs(n * direction * h - span) <= UNIFORM_RTOL * abs(span)
            and not options.get("perturb")
        ):
            return run(f, state.flat, t, direction * h)
        count = math.ceil(abs(span) / h + 1)
        grid = t_np[0] + direction * h * np.arange(count)
        grid[-1] = t_np[-1]
    elif options.get("grid_constructor") is not None:
        try:
            raw = options["grid_constructor"](func, state.unflatten(state.flat), t)
        except Exception as exc:  # the user's error, named as dk.solve names an exception in f
            raise VectorFieldError(
                f"options['grid_constructor'] raised {type(exc).__name__} at t={t_np[0]:.6g}: "
                f"{exc}",
                t=float(t_np[0]),
            ) from exc
        grid = _grid_array(raw)
        if grid.ndim != 1 or len(grid) < 2 or grid[0] != t_np[0] or grid[-1] != t_np[-1]:
            raise ValueError(
                f"options['grid_constructor'] must return a 1-D grid from t[0] = {t_np[0]!r} to "
                f"t[-1] = {t_np[-1]!r}, got shape {grid.shape}"
                + (f" from {grid[0]!r} to {grid[-1]!r}" if grid.ndim == 1 and len(grid) else "")
            )
        if not (np.diff(grid) * direction > 0).all():
            raise ValueError(
                f"options['grid_constructor'] must return a strictly monotone grid in the "
                f"direction of "
                f"t, got {np.array2string(grid, threshold=8)}"
            )
    else:
        grid = t_np
    steps = np.diff(grid)
    if not options.get("perturb") and np.abs(steps - steps[0]).max() <= UNIFORM_RTOL * abs(
        steps[0]
    ):
        return run(f, state.flat, t, float(steps[0]))
    if isinstance(METHODS[run.name].implementation, TwoStepRK):
        raise ValueError(
            f"the two-step method {run.name!r} needs a uniform grid (options['step_size'] dividing "
            f"t[-1] - t[0], no perturb); got a non-uniform grid or perturb=True"
        )
    return _stepwise(f, state, t_np, grid, bool(options.get("perturb")), run, bool(t.requires_grad))


def _grid_array(raw) -> np.ndarray:
    """What ``grid_constructor`` returned, as float64 times; a TypeError naming it for anything
    else."""
    import torch

    real = isinstance(raw, torch.Tensor) and not (raw.is_complex() or raw.dtype == torch.bool)
    if real:
        return raw.detach().to(torch.float64).cpu().numpy()
    expected = "must return a 1-D tensor of times"
    if raw is None or isinstance(
        raw, (str, bytes, dict, set, torch.Tensor)
    ):  # a tensor here: complex or bool
        what = (
            f"dtype {raw.dtype}"
            if isinstance(raw, torch.Tensor)
            else f"{type(raw).__name__} {raw!r:.40}"
        )
        raise TypeError(f"options['grid_constructor'] {expected}, got {what}")
    try:
        array = np.asarray(raw)
    except (TypeError, ValueError):
        array = np.asarray([None])
    if array.dtype.kind not in "fiu":
        raise TypeError(
            f"options['grid_constructor'] {expected}, got {type(raw).__name__} {raw!r:.40}"
        )
    return array.astype(np.float64)


def _breakpoints(options: dict, t_np, direction: float) -> list[tuple[float, bool]]:
    """The ``step_t`` and ``jump_t`` strictly inside the span, in the direction of ``t``:
    ``(time, is_jump)``."""
    points = [
        (float(p), key == "jump_t")
        for key in ("step_t", "jump_t")
        for p in options.get(key, ())
        if direction * (p - t_np[0]) > 0 and direction * (t_np[-1] - p) > 0
    ]
    return sorted(points, key=lambda p: direction * p[0])


def _segmented(f, state: _State, t_np, breaks, first, run):
    """``step_t`` / ``jump_t``: one solve per segment between them, so that a step ends on each.
    A segment that starts or ends on a ``jump_t`` samples ``f`` just inside itself there (the
    side of the step being taken), as torchdiffeq does for a ``func`` discontinuous at that time."""
    edges = [float(t_np[0]), *(p for p, _ in breaks), float(t_np[-1])]
    jumps = {p for p, jump in breaks if jump}
    return _piecewise(
        f,
        state,
        t_np,
        edges,
        run,
        nudge=lambda a, b: a in jumps or b in jumps,
        step=lambda a, b: first if a == edges[0] else None,
    )


def _stepwise(f, state: _State, t_np, grid, perturb: bool, run, t_requires_grad: bool = False):
    """One dk.solve of one step per grid interval, the outputs inside each interval interpolated."""
    import torch

    if run.adjoint is None and t_requires_grad and torch.is_grad_enabled():
        # one solve per grid interval between numpy times: a gradient in t would silently stay None
        raise ValueError(
            "t requires grad, but dynkit.odeint on a non-uniform grid or with perturb=True "
            "solves each "
            "grid interval separately and gives no gradient in t; use a uniform grid "
            "(options['step_size'] dividing the span), dynkit.odeint_adjoint, or t.detach()"
        )
    return _piecewise(
        f, state, t_np, grid, run, nudge=lambda a, b: perturb, step=lambda a, b: b - a
    )


def _piecewise(f, state: _State, t_np, edges, run, nudge, step):
    """One dk.solve per interval ``[a, b]`` of ``edges`` (the outputs inside it from that solve),
    chained: ``nudge(a, b)`` says whether ``f`` is sampled just inside the interval at its ends,
    ``step(a, b)`` gives the solve's (first) step."""
    import torch

    direction = 1.0 if edges[-1] > edges[0] else -1.0
    rows, y, j = [state.flat], state.flat, 1
    for a, b in zip(edges[:-1], edges[1:]):
        tol = 1e-9 * abs(b - a)
        inner = []
        while j < len(t_np) and direction * (t_np[j] - b) < -tol:
            inner.append(float(t_np[j]))
            j += 1
        ends_on_output = j < len(t_np) and abs(t_np[j] - b) <= tol
        ys = run(_nudged(f, a, b) if nudge(a, b) else f, y, np.array([a, *inner, b]), step(a, b))
        rows.extend(ys[1 : 1 + len(inner)])
        y = ys[-1]
        if ends_on_output:
            rows.append(y)
            j += 1
    return torch.stack(rows)


def _nudged(f, a: float, b: float):
    """``f`` evaluated just inside ``[a, b]`` at its ends (torchdiffeq's ``perturb``): a ``f``
    discontinuous at a grid point is sampled on the side of the step being taken."""
    import torch

    def field(t, y):
        theta = (float(t) - a) / (b - a)
        if theta <= 1e-9:
            t = torch.nextafter(t, torch.full_like(t, b))
        elif theta >= 1 - 1e-9:
            t = torch.nextafter(t, torch.full_like(t, a))
        return f(t, y)

    return field


class _EventFnError(Exception):
    """Carries the error that ``event_fn`` (or its value) caused through dk.solve's event
    machinery."""

    def __init__(self, error: Exception):
        super().__init__(str(error))
        self.error = error


def _event_value(event_fn, t, y):
    """``event_fn(t, y)`` as a real floating tensor: an exception in it becomes a
    VectorFieldError naming ``event_fn``, a value of the wrong kind (None, a bool, a string,
    complex) a TypeError naming it."""
    import torch

    try:
        raw = event_fn(t, y)
    except Exception as exc:  # the user's error, named as dk.solve(events=) names it
        error = VectorFieldError(
            f"event_fn raised {type(exc).__name__} at t={float(t):.6g}: {exc}", t=float(t)
        )
        error.__cause__ = exc
        raise _EventFnError(error) from exc
    expected = (
        "event_fn must return a real-valued tensor (or float) whose sign change marks the event, "
        "got "
    )
    if (
        isinstance(raw, (bool, np.bool_))
        or isinstance(raw, torch.Tensor)
        and raw.dtype == torch.bool
    ):
        raise _EventFnError(
            TypeError(
                expected + f"a boolean {raw!r:.40} (a bool has no sign change to "
                "locate: return a difference such as y[0] - 1.0)"
            )
        )
    if isinstance(raw, torch.Tensor):
        value = raw
    elif isinstance(raw, (int, float, np.integer, np.floating)):
        value = torch.as_tensor(float(raw), dtype=torch.float64)
    else:
        raise _EventFnError(TypeError(expected + f"{type(raw).__name__} {raw!r:.40}"))
    if value.is_complex() or not (
        value.is_floating_point() or value.dtype in (torch.int32, torch.int64)
    ):
        raise _EventFnError(TypeError(expected + f"dtype {value.dtype}"))
    return value.detach().to(torch.float64)


def _differentiable_event(f, event_fn, state: _State, signs, event_t, y_event):
    """The event time and state carrying their gradients (implicit function theorem).

    At the event ``g(t*, y(t*)) = 0`` for the component ``g`` that crossed zero, so a change of
    ``y(t*)`` (through ``y0`` or the parameters) moves ``t*`` by ``-∂g/∂y · δy / (dg/dt)``,
    ``dg/dt = ∂g/∂t + ∂g/∂y · f``, and the state returned at the event moves along ``f`` with it.
    Both are first-order terms with value 0 added to the values found, so the values are
    unchanged and autograd (or the adjoint behind ``y_event``) gives torchdiffeq's
    ``odeint_adjoint`` gradients of ``event_t``."""
    import torch

    if not torch.is_grad_enabled() or not (y_event.requires_grad or event_t.requires_grad):
        return event_t, y_event
    t_d = event_t.detach().requires_grad_(True)
    y_d = y_event.detach().requires_grad_(True)
    with torch.enable_grad():
        values = torch.as_tensor(event_fn(t_d, state.unflatten(y_d))).reshape(-1) * signs.reshape(
            -1
        )
        if (
            not values.requires_grad
        ):  # a value without a graph (a float): no first-order dependence to follow
            return event_t, y_event
        which = int(torch.argmin(values.detach().abs()))
        dg_dt, dg_dy = torch.autograd.grad(values[which], (t_d, y_d), allow_unused=True)
        slope = f(t_d, y_d).detach()
    rate = (0.0 if dg_dt is None else dg_dt) + (0.0 if dg_dy is None else (dg_dy * slope).sum())
    if not float(rate) != 0.0:
        return (
            event_t,
            y_event,
        )  # a tangential crossing: t* does not move to first order we can compute
    live = (
        torch.as_tensor(event_fn(event_t.detach(), state.unflatten(y_event))).reshape(-1)
        * signs.reshape(-1)
    )[which]
    shift = -(live - live.detach()) / rate.detach()
    return event_t.detach() + shift.to(event_t.dtype), y_event + slope * shift.to(slope.dtype)


def _until_event(f, event_fn, state: _State, t, t_np, step, run):
    """The first time where a component of ``event_fn`` changes sign, and the state there.

    Solves over ``[t0, t1]``, then over horizons doubling from there, until the event is found
    (torchdiffeq integrates without an end time), for at most :data:`EVENT_HORIZONS` horizons: an
    event that never fires ends the solve at the last time reached, ``t0 + 1023 (t1 - t0)``, with a
    ``RuntimeWarning`` (torchdiffeq's search would not end). Returns ``(event_t, y_event)``.
    """
    import torch

    t0 = t[0]
    try:
        with torch.no_grad():
            first = _event_value(event_fn, t0, state.unflatten(state.flat))
    except _EventFnError as err:
        raise err.error from err.error.__cause__
    zero = (first == 0).nonzero()
    if len(zero):
        where = "" if first.ndim == 0 else f" (component {tuple(int(i) for i in zero[0])})"
        raise ValueError(
            f"event_fn must be nonzero at t[0] = {float(t0):.6g}, got 0{where}: the event "
            f"would be the "
            f"initial time itself (odeint looks for the first sign change after t[0]; start "
            f"after it or "
            f"shift event_fn)"
        )
    signs = torch.sign(first)

    def combined(tt, y):
        with torch.no_grad():
            return float(torch.min(_event_value(event_fn, tt, state.unflatten(y)) * signs))

    combined.terminal = True
    name, max_steps = run.name, run.max_steps
    start, span, y, steps = float(t_np[0]), float(t_np[1] - t_np[0]), state.flat, 0
    grad_free = run.adjoint is not None  # the adjoint re-solves [t0, event_t] with gradients below
    for _ in range(EVENT_HORIZONS):
        with (
            torch.no_grad() if grad_free else contextlib.nullcontext()
        ):  # else: the caller's grad mode
            try:
                sol = solve(
                    f,
                    y.detach() if grad_free else y,
                    [start, start + span],
                    method=name,
                    rtol=run.rtol,
                    atol=run.atol,
                    max_steps=max_steps - steps,
                    events=combined,
                    control=run.control,
                    **{run.step_key: step},
                )
            except (
                VectorFieldError
            ) as err:  # dk.solve names event_fn "events[0]": name it as the caller knows it
                cause = err.__cause__
                if isinstance(cause, _EventFnError):
                    if isinstance(
                        cause.error, VectorFieldError
                    ):  # with what was reached, as dk.solve's
                        cause.error.solution, cause.error.t = err.solution, err.t
                    raise cause.error from cause.error.__cause__
                raise
        steps += sol.stats.n_steps
        if sol.result == "event":
            event_time = float(sol.t_events[0][0])
            event_t = torch.as_tensor(event_time, dtype=t.dtype, device=t.device)
            if run.adjoint is None:
                y_event = sol.y_events[0][0]
            else:
                y_event = run(f, state.flat, np.array([float(t_np[0]), event_time]), step)[-1]
            return _differentiable_event(f, event_fn, state, signs, event_t, y_event)
        start, y, span = start + span, sol.ys[-1], 2 * span
        if steps >= max_steps:
            break
    else:  # every horizon searched without a sign change: the solve ends at the last time
        warnings.warn(
            f"{name}: event_fn had no sign change from t={float(t_np[0]):.6g} to t={start:.6g} "
            f"({2**EVENT_HORIZONS - 1} times |t[1] - t[0]|): the solve ends there and returns that "
            f"time as event_t, which is not an event",
            RuntimeWarning,
            stacklevel=4,
        )
        last_t = torch.as_tensor(start, dtype=t.dtype, device=t.device)
        if run.adjoint is None:
            return last_t, y
        return last_t, run(f, state.flat, np.array([float(t_np[0]), start]), step)[-1]
    raise MaxStepsExceeded(
        f"{name}: event_fn had no sign change within {steps} steps (t reached {start:.6g}; "
        f"max_num_steps={max_steps})",
        solution=sol,
        t=start,
    )
