"""Gradients of a torch solve by the continuous adjoint (optimise-then-discretise), with any dynkit
method.

For ``dy/dt = f(t, y; θ)`` and a loss ``L(y(t_0), …, y(t_N))`` the adjoint ``a(t) = ∂L/∂y(t)`` and
the parameter gradient ``g(t)`` obey, backward in time (Chen et al. 2018, Eqs. (4)-(5) and Alg. 1;
the review's Eqs. (13)-(15)),

.. math::

    \\frac{dy}{dt} = f(t, y), \\qquad \\frac{da}{dt} = -a^\\top \\frac{\\partial f}{\\partial y}, \\qquad
    \\frac{dg}{dt} = -a^\\top \\frac{\\partial f}{\\partial θ},

from ``a(t_N) = ∂L/∂y_N``, ``g(t_N) = 0``; at each earlier output time ``a`` jumps by ``∂L/∂y_i``.
Then ``∂L/∂y_0 = a(t_0)`` and ``∂L/∂θ = g(t_0)``. Output times do not move the trajectory, so
``∂L/∂t_i = ∂L/∂y_i · f(t_i, y_i)`` for ``i ≥ 1``, while moving the start moves everything after it:
``∂L/∂t_0 = -a_+(t_0) · f(t_0, y_0)`` with ``a_+`` the adjoint before the jump of ``∂L/∂y_0``.

The augmented system ``(y, a, g)`` is one flat tensor solved by :func:`dynkit.solve` itself, so
every method (adaptive pairs, fixed-step RK, the two-step ARK methods) has an adjoint. The forward
and backward solves keep no autograd graph: memory is that of a few augmented states, whatever the
number of steps. ``y`` restarts at each output time from the forward solution (no drift of the
backward reconstruction across intervals).

The backward solves measure their error part by part (:class:`PartwiseErrorMethod`): one RMS over
the concatenation ``z = (y, a, g)`` lets the many parameter components (``g``, often thousands)
dilute the error of the few that carry it (``y`` and ``a``), and the gradient came out 1.5-3.6× less
accurate than torchdiffeq's at the same forward error
(``python -m benchmarks.bench_adjoint --accuracy``). Each part (``y``, ``a``, each parameter tensor)
is weighted so that the norm is ``(Σ_p RMS_p²)^{1/2}``, at least the largest part's RMS: the mixed
norm of torchdiffeq's adjoint is the maximum of the same RMS values.

With the backward measured part by part, the gradient error that remains is the forward's: ``y`` is
reconstructed backward from the forward's final state, and that state's error is carried back along
it (the gradient error is 1.4-1.7× the forward error at dim 16; 1000× tighter backward tolerances
leave it unchanged to 3 %, and an exact forward at the same backward tolerance cuts it 3-15×;
torchdiffeq's adjoint shows the same, 1.4-2.0×:
``python -m benchmarks.bench_adjoint --attribution``). At matched forward error the two tools'
gradient errors then differ by how their forward errors project on the gradient (0.76-1.14× over
dims 2 and 16, errors 1e-4..1e-5), which no choice of the backward's tolerance or norm moves (the
maximum over the parts' RMS, torchdiffeq's: 0.80×, 0.97×, 1.14×).

Checkpoints (``adjoint_checkpoints=N``, :func:`check_adjoint_checkpoints`): the forward solve
also keeps its states at ``N + 1`` evenly spaced times from ``t[0]`` to ``t[-1]`` (from its dense
output: its steps and outputs are unchanged), and the backward solves restart ``y`` from each of
them as from each output time, so that the forward's error is carried back over
``(t[-1] − t[0]) / N`` at most, not over the whole span. Memory grows by ``N − 1`` states,
``O(N · dim)``; work by the restarts' first steps and, for methods whose interpolant calls ``f``
(``dop853``, the Rosenbrock methods' stiff steps), by the interpolation. On a forward of a few
long steps the interpolated states can be less accurate than the steps' ends (dopri5 on the dim-4
field of ``bench_adjoint`` at rtol 1e-4: 4 steps over the span, 3.4e-5 error at a checkpoint, 1.1e-5
at the end; ``N = 4`` then gave a larger gradient error than ``N = 0``, ``N = 8`` a smaller one).

Counting evaluations: ``sol.stats.nfe`` counts the forward calls of ``f``; after ``backward``,
``sol.backward_stats.nfe`` counts the calls of ``f`` in the backward pass. Each evaluation of the
augmented field is one call of ``f`` plus one vector-Jacobian product through its output, so an
:class:`~dynkit.diagnostics.NFECounter` wrapping ``f`` sees ``vjps == backward_stats.nfe -
backward_stats.time_calls``, where ``time_calls`` (``len(t)`` calls without a product) are the
evaluations ``f(t_i, y_i)`` needed only when ``t`` requires a gradient.
"""  # noqa: E501

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any, Callable, Sequence

import numpy as np

from .backend import LazyAutogradFunction, is_torch
from .engine import Solution, SolverStats, register_adjoint, solve
from .errors import SolverError
from .explicit import make_stepper
from .methods import METHODS

__all__ = [
    "BackwardStats",
    "AdjointSolution",
    "check_adjoint_checkpoints",
    "validated_adjoint_call",
    "solve_adjoint",
    "PartwiseErrorMethod",
]


@dataclass
class BackwardStats(SolverStats):
    """Work of the backward pass, summed over the backward solves between output times.

    ``nfe`` counts every call of ``f`` (each with one VJP, except the ``time_calls`` evaluations for
    time gradients); ``n_steps``, ``n_accepted``, ``n_rejected`` are those of the augmented solves.
    """

    time_calls: int = 0

    def as_dict(self) -> dict:
        return {**super().as_dict(), "time_calls": self.time_calls}


@dataclass
class AdjointSolution(Solution):
    """A :class:`Solution` whose ``ys`` backpropagate by the adjoint; ``backward_stats`` fills in
    on ``backward``."""

    backward_stats: BackwardStats = field(default_factory=BackwardStats)


def check_adjoint_checkpoints(value: Any) -> int:
    """``value`` as the number of checkpoint spans ``N`` of ``adjoint_checkpoints``, an int >= 0.

    ``0`` (and ``1``: its two states are the first and last outputs) keeps no more states than the
    outputs. Raises TypeError for a bool or a non-integer, ValueError for a negative number.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(
            f"adjoint_checkpoints must be a non-negative integer (the number of checkpoint spans, "
            f"0 for none), got {type(value).__name__} {value!r:.60}"
        )
    if value < 0:
        raise ValueError(
            f"adjoint_checkpoints must be a non-negative integer (the number of checkpoint spans, "
            f"0 for none), got {value!r}"
        )
    return int(value)


def validated_adjoint_call(
    f: Callable,
    y0: Any,
    t: Any,
    adjoint: Any,
    adjoint_params: Any,
    adjoint_checkpoints: Any = 0,
    **options,
) -> AdjointSolution:
    """Check ``solve``'s ``adjoint`` / ``adjoint_params`` / ``adjoint_checkpoints`` arguments, then
    :func:`solve_adjoint`."""
    if not isinstance(adjoint, (bool, np.bool_)):
        raise TypeError(f"adjoint must be True or False, got {adjoint!r}")
    if not adjoint:
        what = "adjoint_params" if adjoint_params is not None else "adjoint_checkpoints"
        raise ValueError(
            f"{what} is only used with adjoint=True, got adjoint=False "
            "(autograd through the solve differentiates every tensor f uses)"
        )
    return solve_adjoint(
        f,
        y0,
        t,
        adjoint_params=adjoint_params,
        adjoint_checkpoints=adjoint_checkpoints,
        **options,
    )


def solve_adjoint(
    f: Callable,
    y0: Any,
    t: Any,
    *,
    adjoint_params: Sequence[Any] | None = None,
    backward_options: dict | None = None,
    adjoint_checkpoints: int = 0,
    **options,
) -> AdjointSolution:
    """:func:`dynkit.solve` with gradients by the continuous adjoint (called by
    ``solve(..., adjoint=True)``).

    Parameters
    ----------
    f : callable or torch.nn.Module
        The vector field. When it is a module, its parameters that require grad receive gradients.
    y0 : torch.Tensor
        Initial state (numpy states have no autograd: a ValueError names ``adjoint``).
    t : 1-D tensor or array-like
        Output times; a tensor that requires grad receives ``∂L/∂t``.
    adjoint_params : sequence of tensors, optional
        The tensors ``f`` depends on that should receive gradients (replaces the module's
        parameters; required when ``f`` is not an ``nn.Module``: ``()`` when only ``y0`` and ``t``
        need gradients).
    backward_options : dict, optional
        ``method``, ``rtol``, ``atol``, ``step_size`` (signed as the forward step) of the backward
        solves where they differ from the forward's (torchdiffeq's ``adjoint_rtol``, ... in
        :func:`dynkit.odeint_adjoint`).
    adjoint_checkpoints : int
        ``N``: the forward keeps its states at ``N + 1`` evenly spaced times over the span and the
        backward solves restart their ``y`` from each (memory ``O(N · dim)``; ``0``, the default:
        from the output times only). See :func:`check_adjoint_checkpoints`.
    **options
        ``method``, ``rtol``, ``atol``, ``step_size``, ``first_step``, ``max_steps``, ``throw``:
        used by the forward solve and, with the step reversed, by every backward solve.
    """
    import torch

    n_checkpoints = check_adjoint_checkpoints(adjoint_checkpoints)
    if not is_torch(y0):
        raise ValueError(
            f"adjoint=True needs a torch tensor y0 (numpy solves have no autograd), "
            f"got {type(y0).__name__}"
        )
    if adjoint_params is None:
        if not isinstance(f, torch.nn.Module):
            # A plain function's tensors are invisible here: their gradients would silently stay
            # None.
            raise ValueError(
                f"adjoint=True with f that is not an nn.Module needs adjoint_params, the tensors f "
                f"uses that should receive gradients (adjoint_params=() when only y0 and t need "
                f"them); got f={getattr(f, '__qualname__', type(f).__name__)} and "
                f"adjoint_params=None"
            )
        params = tuple(p for p in f.parameters() if p.requires_grad)
    else:
        if isinstance(adjoint_params, torch.Tensor):
            adjoint_params = (adjoint_params,)
        params = tuple(adjoint_params)
        bad = [type(p).__name__ for p in params if not isinstance(p, torch.Tensor)]
        if bad:
            raise TypeError(
                f"adjoint_params must be a sequence of torch tensors, got elements of type {bad}"
            )
    t_in = (
        t
        if is_torch(t)
        else torch.as_tensor(np.asarray(t, dtype=np.float64), dtype=y0.dtype, device=y0.device)
    )
    holder: dict = {
        "backward_options": dict(backward_options or {}),
        "checkpoints": n_checkpoints,
    }
    ys = _AdjointFunction.apply(f, options, holder, y0, t_in, *params)
    forward = holder["solution"]
    values = {fl.name: getattr(forward, fl.name) for fl in fields(forward)}
    values["ys"] = ys
    solution = AdjointSolution(**values)
    holder["backward_stats"] = solution.backward_stats
    return solution


class PartwiseErrorMethod:
    """A method whose error is measured per part of a flat state: ``(Σ_p RMS_p²)^{1/2}`` over the
    slices ``sizes``.

    Wraps any adaptive method (a name's implementation, a tableau or a method object): its stepper
    is the wrapped one, with the error scaled by ``√(N / n_p)`` on part ``p`` (``N`` components in
    all, ``n_p`` in the part) before the engine's RMS, which then equals the root of the sum of the
    parts' mean squares.
    """

    adaptive = True

    def __init__(self, method: Any, sizes: Sequence[int]):
        self.method, self.sizes = method, [int(n) for n in sizes if n > 0]
        self.name = getattr(method, "name", str(method))

    def make_stepper(self, field, backend):
        return _PartwiseStepper(
            make_stepper(self.method, field, backend, None), self.sizes, backend
        )


class _PartwiseStepper:
    """The wrapped stepper with a part-by-part ``error_norm`` (everything else delegated)."""

    def __init__(self, inner, sizes: list[int], backend):
        import torch

        total = sum(sizes)
        weights = np.concatenate([np.full(n, np.sqrt(total / n)) for n in sizes])
        self.inner, self.backend = inner, backend
        self.weights = torch.as_tensor(weights, dtype=backend.dtype, device=backend.device)
        self.inner_norm = getattr(inner, "error_norm", None)

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def error_norm(self, trial, norm):
        weighted = lambda e: norm(e * self.weights)  # noqa: E731
        return (
            self.inner_norm(trial, weighted)
            if self.inner_norm is not None
            else weighted(trial.error)
        )


def _backward_method(options: dict, n_y: int, sizes: Sequence[int]):
    """The backward solves' method: the forward's (or ``backward_options``'), part by part if
    adaptive."""
    method = options.get("method", "dopri5")
    implementation = (
        METHODS[method].implementation if isinstance(method, str) and method in METHODS else method
    )
    if not getattr(implementation, "adaptive", False):
        return method
    control = options.get("control")
    if (
        control is not None and control.norm is not None
    ):  # the caller's norm (a seminorm, say) is the measure
        return method
    return PartwiseErrorMethod(implementation, [n_y, n_y, *sizes])


def _adjoint_options(options: dict, shape, n_params: int) -> dict:
    """The backward solves' options: same method and tolerances, the step reversed.

    An ``atol`` per state component applies to ``y`` and to ``a``; the parameter gradients get its
    smallest value.
    """
    import torch

    backward = {k: v for k, v in options.items() if k != "throw"}
    for step in ("step_size", "first_step"):
        if backward.get(step) is not None:
            backward[step] = -float(backward[step])
    atol = backward.get("atol")
    if atol is not None and np.ndim(atol) > 0:
        atol = torch.as_tensor(
            np.asarray(atol.detach().cpu() if is_torch(atol) else atol, dtype=np.float64),
            device="cpu",  # numpy below, whatever the default device (a GPU run's context)
        )
        per_state = torch.broadcast_to(atol, shape).reshape(-1)
        backward["atol"] = torch.cat([per_state, per_state, atol.min().expand(n_params)]).numpy()
    return backward


def _make_function():
    import torch

    class AdjointFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, f, options, holder, y0, t, *params):
            times, at_output = _checkpoint_grid(t.detach(), holder["checkpoints"])
            with torch.no_grad():
                try:
                    sol = solve(f, y0, times, **options)
                except SolverError as err:
                    if err.solution is not None:
                        err.solution = _outputs_only(err.solution, at_output)[0]
                    raise
            states = sol.ys
            sol, reached = _outputs_only(sol, at_output)
            holder["solution"] = sol
            ctx.f, ctx.options, ctx.holder = f, options, holder
            ctx.grid = (times, reached)  # the states at times[:len(states)], outputs at reached
            ctx.save_for_backward(t, sol.ys, states, *params)
            return sol.ys

        @staticmethod
        @torch.autograd.function.once_differentiable
        def backward(ctx, grad_ys):
            t, ys, states, *params = ctx.saved_tensors
            f, stats = ctx.f, ctx.holder.get("backward_stats") or BackwardStats()
            ctx.holder["backward_stats"] = stats
            options = {**ctx.options, **ctx.holder["backward_options"]}
            grads = _backward_pass(
                f,
                ys,
                t,
                params,
                grad_ys,
                options,
                (ctx.grid[0], states, ctx.grid[1]),
                stats,
                need_t=ctx.needs_input_grad[4],
            )
            grad_y0, grad_t, grad_params = grads
            return (None, None, None, grad_y0, grad_t, *grad_params)

    return AdjointFunction


_AdjointFunction = LazyAutogradFunction(_make_function)


def _checkpoint_grid(t, n_checkpoints: int):
    """The forward's times: the outputs ``t`` and ``n_checkpoints + 1`` evenly spaced ones from
    ``t[0]`` to ``t[-1]`` (those that are not outputs), in order; and each output's index there."""
    if n_checkpoints <= 1 or len(t) < 2:
        return t, np.arange(len(t))
    values = t.detach().cpu().numpy().astype(np.float64)
    extra = np.linspace(values[0], values[-1], n_checkpoints + 1)[1:-1]
    # rounded to t's dtype first: a float32 checkpoint may round onto an output time
    extra = np.unique(_tensor_like(extra, t).cpu().numpy().astype(np.float64))
    extra = extra[~np.isin(extra, values)]
    merged = np.concatenate([values, extra])
    order = np.argsort(merged * np.sign(values[-1] - values[0]), kind="stable")
    times = _tensor_like(merged[order], t)
    position = np.empty(len(merged), dtype=np.int64)
    position[order] = np.arange(len(merged))
    return times, position[: len(values)]


def _tensor_like(values: np.ndarray, like):
    """``values`` as a tensor of ``like``'s dtype and device."""
    import torch

    return torch.as_tensor(values, dtype=like.dtype, device=like.device)


def _outputs_only(sol: Solution, at_output: np.ndarray):
    """``sol`` restricted to the output times (those it reached), and their indices in ``sol``."""
    import torch

    reached = at_output[at_output < len(sol.ys)]
    if len(reached) == len(sol.ys):
        return sol, reached
    index = torch.as_tensor(reached, device=sol.ys.device)
    return replace(sol, ts=sol.ts[index], ys=sol.ys[index]), reached


def _augmented_field(f, params, shape, dtype):
    """The backward field of ``z = (y, a, g)`` flattened: ``(f, -a^T f_y, -a^T f_θ)``; one call
    of f, one VJP."""
    import torch

    n_y = int(np.prod(shape))
    sizes = [p.numel() for p in params]

    def augmented(tt, z):
        with torch.enable_grad():
            y = z[:n_y].view(shape).detach().requires_grad_(True)
            a = z[n_y : 2 * n_y].view(shape)
            fy = f(tt, y)
            # a field that depends on neither y nor the parameters (f = const, f(t)) has no graph:
            # zero VJPs
            vjps = (
                torch.autograd.grad(fy, (y, *params), -a, allow_unused=True)
                if fy.requires_grad
                else (None,) * (1 + len(params))
            )
        parts = [fy.detach().reshape(-1)]
        parts += [
            torch.zeros(n, dtype=dtype, device=z.device) if v is None else v.reshape(-1).to(dtype)
            for v, n in zip(vjps, [n_y, *sizes])
        ]
        return torch.cat(parts)

    return augmented


def _backward_pass(
    f, ys, t, params, grad_ys, options, grid: tuple, stats: BackwardStats, need_t: bool
):
    """The adjoint backward from the last output reached; ``grid = (times, states, at_output)``: the
    forward's times (outputs and checkpoints), its states there, and the outputs' indices in them.
    Each backward solve runs between neighbours of the grid from the forward's state."""
    import torch

    n_out = ys.shape[0]  # fewer than len(t) when a failed forward solve returned a partial solution
    times, states, at_output = grid
    grid_values = times.detach().to(torch.float64).cpu().numpy()
    output_at = {int(j): i for i, j in enumerate(at_output[:n_out])}
    shape, dtype = ys.shape[1:], ys.dtype
    n_y = int(np.prod(shape))
    sizes = [p.numel() for p in params]
    t_values = t.detach().to(torch.float64).cpu().numpy()

    augmented = _augmented_field(f, params, shape, dtype)

    def f_at(i):
        stats.nfe += 1
        stats.time_calls += 1
        with torch.no_grad():
            return f(torch.as_tensor(t_values[i], dtype=dtype, device=ys.device), ys[i])

    grad_t = torch.zeros(len(t_values), dtype=dtype, device=ys.device) if need_t else None
    a = grad_ys[n_out - 1].detach().clone()
    g = torch.zeros(sum(sizes), dtype=dtype, device=ys.device)
    backward_options = _adjoint_options(options, shape, sum(sizes))
    backward_options["method"] = _backward_method(backward_options, n_y, sizes)
    with torch.no_grad():
        for j in range(int(at_output[n_out - 1]), 0, -1):
            i = output_at.get(j)
            if need_t and i is not None:
                grad_t[i] = (grad_ys[i] * f_at(i)).sum()
            z = torch.cat([states[j].reshape(-1), a.reshape(-1), g])
            sol = solve(augmented, z, grid_values[[j, j - 1]], **backward_options)
            for name in ("nfe", "n_steps", "n_accepted", "n_rejected"):
                setattr(stats, name, getattr(stats, name) + getattr(sol.stats, name))
            z = sol.ys[-1]
            a = z[n_y : 2 * n_y].view(shape)
            g = z[2 * n_y :]
            before = output_at.get(j - 1)
            if before is not None and before > 0:
                a = a + grad_ys[before]
        if need_t:
            grad_t[0] = -(a * f_at(0)).sum() if n_out > 1 else 0.0
        grad_y0 = a + grad_ys[0] if n_out > 1 else grad_ys[0].clone()
    grad_params, offset = [], 0
    for p, n in zip(params, sizes):
        grad_params.append(g[offset : offset + n].view(p.shape).to(p.dtype))
        offset += n
    return grad_y0, grad_t, grad_params


register_adjoint(
    validated_adjoint_call
)  # solve(adjoint=True) comes here (engine does not import us)
