"""Many independent copies of one torch ODE solved together, each with its own adaptive steps.

``y0`` carries a leading seed axis of size ``S``: seed ``s`` is the ODE ``dy_s/dt = f_s(t, y_s)``,
and ``f(t, y)`` evaluates every seed at once (``t``: shape ``(S,)``, each seed's own time; ``y``:
``(S, ...)``). Seeds must not interact: seed ``s``'s output may depend only on ``t[s]``, ``y[s]``
and seed ``s``'s parameters. Each seed then takes the steps that :func:`dynkit.solve` would take on
it alone (the same first-step estimate, error test, PI controller and last-step rule, with that
seed's own RMS error; the same decisions up to rounding, which can tip one where the error
estimate is itself rounding noise, float32 at rtol 1e-7), in lockstep with the others: every call
of ``f`` advances every seed that has not yet reached the end, so ``S`` seeds cost about one seed's
number of calls. This is how ``S`` training runs of a small model share the per-call overhead of
torch (one dispatch per operation for all seeds), where ``solve(per_sample=True)`` would give every
sample the step of the hardest one.

With ``adjoint=True`` the gradients come from the continuous adjoint (as
:mod:`dynkit.solvers.adjoint`, whose conventions it keeps): the backward solve of ``(y, a, g)``
also runs per seed, each seed's error measured part by part over its own slices of ``y``, ``a``
and of each parameter gradient (:class:`~dynkit.solvers.adjoint.PartwiseErrorMethod`'s norm), so
every parameter in ``adjoint_params`` must carry the leading seed axis too.

``sol.stats`` and ``sol.backward_stats`` count per seed (:class:`SeedStats`: arrays of shape
``(S,)``), each seed's count being what its own solve reports; ``calls`` is the number of batched
calls of ``f``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from ._validation import validate_state, validate_times, validate_tolerances
from .backend import LazyAutogradFunction
from .errors import MaxStepsExceeded, NonFiniteState, StepSizeUnderflow, VectorFieldShapeError
from .methods import METHODS
from .results import Solution
from .stepsize import (
    ERR_PREV_FLOOR,
    MAX_FACTOR,
    MIN_FACTOR,
    NONFINITE_FACTOR,
    PI_BETA_TIMES_K,
    SAFETY,
)
from .tableaus import RungeKuttaTableau

__all__ = ["SeedStats", "SeedSolution", "solve_seeds"]


@dataclass
class SeedStats:
    """Work per seed (arrays of shape ``(S,)``) and the batched calls of ``f`` that did it."""

    nfe: np.ndarray
    n_steps: np.ndarray
    n_accepted: np.ndarray
    n_rejected: np.ndarray
    calls: int = 0

    @classmethod
    def zeros(cls, n_seeds: int) -> SeedStats:
        return cls(*(np.zeros(n_seeds, dtype=np.int64) for _ in range(4)))

    def add(self, other: SeedStats) -> None:
        for name in ("nfe", "n_steps", "n_accepted", "n_rejected", "calls"):
            setattr(self, name, getattr(self, name) + getattr(other, name))


@dataclass
class SeedSolution(Solution):
    """:class:`~dynkit.solvers.Solution` of :func:`solve_seeds`: ``ys`` of shape ``(2, S, ...)``,
    ``stats`` a :class:`SeedStats`; ``backward_stats`` fills in on ``backward`` (adjoint)."""

    backward_stats: SeedStats | None = field(default=None)


def _tableau(method) -> RungeKuttaTableau:
    tableau = (
        METHODS[method].implementation if isinstance(method, str) and method in METHODS else method
    )
    if not (
        isinstance(tableau, RungeKuttaTableau) and tableau.e is not None and tableau.e2 is None
    ):
        names = sorted(
            name
            for name, m in METHODS.items()
            if isinstance(m.implementation, RungeKuttaTableau)
            and m.implementation.e is not None
            and m.implementation.e2 is None
        )
        raise ValueError(
            f"method must be an explicit embedded pair with one error estimate ({', '.join(names)} "
            f"or such a RungeKuttaTableau), got {method!r:.60}"
        )
    return tableau


class _Seeds:
    """The lockstep adaptive loop: ``S`` copies of :func:`dynkit.solve`'s, one per seed."""

    def __init__(self, f, tableau: RungeKuttaTableau, rtol, atol, max_steps, weights=None):
        self.f, self.tableau, self.rtol, self.atol = f, tableau, rtol, atol
        self.max_steps, self.weights = max_steps, weights
        self.k = min(tableau.order, tableau.error_order or tableau.order) + 1
        self.beta = PI_BETA_TIMES_K / self.k if tableau.pi_beta is None else tableau.pi_beta
        self.alpha = 1.0 / self.k - 0.75 * self.beta
        self.safety = tableau.safety or SAFETY
        stages = tableau.stages
        self.last = stages - 1 if tableau.fsal else stages
        self.a = [tuple(float(x) for x in tableau.a[i, :i]) for i in range(stages)]
        self.b = tuple(float(x) for x in tableau.b[: self.last])
        self.e = tuple(float(x) for x in tableau.e)
        self.c = tuple(float(x) for x in tableau.c)

    # -- per-seed pieces

    def call(self, t: np.ndarray, y, stats: SeedStats, counted: np.ndarray):
        import torch

        stats.nfe += counted
        stats.calls += 1
        out = self.f(torch.as_tensor(t, dtype=y.dtype, device=y.device), y)
        if not isinstance(out, torch.Tensor) or out.shape != y.shape:
            got = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
            raise VectorFieldShapeError(
                f"f must return a tensor of the state's shape {tuple(y.shape)}, got {got}",
                t=float(t[0]),
            )
        return out

    def norms(self, err, scale) -> np.ndarray:
        """Each seed's RMS of ``err / scale`` (weighted part by part with ``weights``)."""
        import torch

        with torch.no_grad():
            ratio = err.detach() / scale
            if self.weights is not None:
                ratio = ratio * self.weights
            per_seed = ratio.square().reshape(len(ratio), -1).mean(dim=1).sqrt()
            return per_seed.cpu().numpy().astype(np.float64)

    def per_seed(self, values: np.ndarray, like):
        """``values`` (S,) as a tensor broadcasting against ``like`` (S, ...)."""
        import torch

        shape = (len(values),) + (1,) * (like.dim() - 1)
        return torch.as_tensor(values, dtype=like.dtype, device=like.device).view(shape)

    def combine(self, y, ks, coefficients: Sequence[float], h):
        """``y + h_s sum_j coefficients[j] ks[j]`` per seed (``y`` may be None; ``h``: the steps
        as from :meth:`per_seed`): the sum with scalar coefficients, then one product with the
        steps, so that the operations do not grow with the seeds."""
        import torch

        total = None
        for k, c in zip(ks, coefficients):
            if c != 0.0:
                # a fresh tensor first, then in place: add/mul save no inputs for backward
                total = k * c if total is None else total.add_(k, alpha=c)
        return total * h if y is None else torch.addcmul(y, total, h)

    def first_steps(self, t0, t_end, y0, f0, stats, direction) -> np.ndarray:
        """[HNW] II.4's first step per seed, as :func:`~dynkit.solvers.stepsize.initial_step`."""
        import torch

        n_seeds, span = len(y0), abs(t_end - t0)
        with torch.no_grad():
            scale = (y0.abs() * self.rtol + self.atol).reshape(n_seeds, -1).double().cpu().numpy()
            y_np = y0.reshape(n_seeds, -1).double().cpu().numpy()
            f0_np = f0.reshape(n_seeds, -1).double().cpu().numpy()
            d0, d1 = _safe_rms(y_np / scale), _safe_rms(f0_np / scale)
            with np.errstate(divide="ignore", invalid="ignore"):
                h0 = np.where((d0 < 1e-5) | (d1 < 1e-5), 1e-6, 0.01 * d0 / d1)
            h0 = np.minimum(h0, span)
            h0 = np.where(h0 > 0, h0, min(1e-6, span) * 1e-6)
            probe = self.call(
                np.full(n_seeds, t0) + direction * h0,
                self.combine(y0, (f0,), (1.0,), self.per_seed(direction * h0, y0)),
                stats,
                np.ones(n_seeds, dtype=np.int64),
            )
            f1_np = probe.reshape(n_seeds, -1).double().cpu().numpy()
            d2 = _safe_rms((f1_np - f0_np) / scale) / h0
        d2 = np.where(np.isfinite(d1) & np.isfinite(d2), d2, math.inf)
        dmax = np.maximum(d1, d2)
        with np.errstate(divide="ignore"):
            h1 = np.where(
                dmax <= 1e-15, np.maximum(1e-6, h0 * 1e-3), (0.01 / dmax) ** (1.0 / self.k)
            )
        h = np.minimum(np.minimum(100 * h0, h1), span)
        h = np.where(h > 0, h, h0 * 1e-3)
        return direction * np.maximum(h, 64 * np.spacing(max(abs(t0), abs(t_end))))

    def factors(self, norm, accepted, state) -> np.ndarray:
        """The PI controller's factors (:class:`~dynkit.solvers.stepsize.PIController`) per seed;
        ``state = (err_prev, rejected_last)`` is updated for the seeds that stepped."""
        err_prev, rejected_last = state
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            grow = self.safety * norm ** (-self.alpha) * err_prev**self.beta
            shrink = np.maximum(MIN_FACTOR, self.safety * norm ** (-1.0 / self.k))
        grow = np.clip(np.where(norm == 0.0, MAX_FACTOR, grow), MIN_FACTOR, MAX_FACTOR)
        grow = np.where(rejected_last, np.minimum(1.0, grow), grow)
        shrink = np.where(np.isfinite(norm), shrink, NONFINITE_FACTOR)
        return np.where(accepted, grow, shrink)

    # -- the loop

    def march(self, y0, t0: float, t_end: float, stats: SeedStats, h=None):
        import torch

        n_seeds, direction = len(y0), 1.0 if t_end > t0 else -1.0
        everyone = np.ones(n_seeds, dtype=np.int64)
        t, y = np.full(n_seeds, t0), y0
        k1 = self.call(t, y, stats, everyone)
        if not bool(torch.isfinite(k1).all()):
            raise NonFiniteState(f"f returned NaN/Inf at the initial state (t={t0:g})", t=t0)
        if h is None:
            h = self.first_steps(t0, t_end, y0, k1, stats, direction)
        else:
            h = np.full(n_seeds, float(h))
        state = (np.full(n_seeds, ERR_PREV_FLOOR), np.zeros(n_seeds, dtype=bool))
        active = direction * (t_end - t) > 0
        while active.any():
            if (stats.n_steps[active] >= self.max_steps).any():
                s = int(np.flatnonzero(active & (stats.n_steps >= self.max_steps))[0])
                raise MaxStepsExceeded(
                    f"seed {s}: max_steps={self.max_steps} reached at t={t[s]:g}", t=float(t[s])
                )
            resolution = 16 * np.spacing(np.maximum(np.abs(t), abs(t_end)))
            last = direction * (t_end - (t + h)) < resolution
            h = np.where(last, t_end - t, h)
            small = active & (np.abs(h) < 16 * np.spacing(np.maximum(np.abs(t), np.abs(t + h))))
            if small.any():
                s = int(np.flatnonzero(small)[0])
                raise StepSizeUnderflow(
                    f"seed {s}: the step shrank to {h[s]:.3g} at t={t[s]:.17g}", t=float(t[s])
                )
            t_new = np.where(last, t_end, t + h)
            step = np.where(active, h, 0.0)  # finished seeds stand still, uncounted
            counted = active.astype(np.int64)
            h_seeds = self.per_seed(step, y)
            ks = [k1]
            for i in range(1, self.last):
                y_i = self.combine(y, ks, self.a[i], h_seeds)
                ks.append(self.call(t + self.c[i] * step, y_i, stats, counted))
            y_new = self.combine(y, ks, self.b, h_seeds)
            k_last = self.call(t + step, y_new, stats, counted) if self.tableau.fsal else None
            error = self.combine(
                None, ks + ([k_last] if k_last is not None else []), self.e, h_seeds
            )
            with torch.no_grad():
                scale = torch.maximum(y.abs(), y_new.abs()) * self.rtol + self.atol
            norm = self.norms(error, scale)
            norm = np.where(np.isnan(norm), math.inf, norm)
            accepted = active & (norm <= 1.0)
            stats.n_steps += counted
            stats.n_accepted += accepted
            stats.n_rejected += active & ~accepted
            factor = self.factors(norm, accepted, state)
            err_prev, rejected_last = state
            state = (
                np.where(accepted, np.maximum(norm, ERR_PREV_FLOOR), err_prev),
                np.where(active, ~accepted, rejected_last),
            )
            # a seed that has finished steps by 0 and stays where it is (y + 0 · k = y); only a
            # rejected seed must be held back
            held = (active & ~accepted).any()
            keep = self.per_seed(accepted.astype(np.float64), y) > 0 if held else None
            y = torch.where(keep, y_new, y) if held else y_new
            t = np.where(accepted, t_new, t)
            h = np.where(active, h * np.where(active, factor, 1.0), h)
            active = direction * (t_end - t) > 0
            if k_last is None:  # the next first stage, where a seed goes on
                if (accepted & active).any():
                    fresh = self.call(t, y, stats, (accepted & active).astype(np.int64))
                    k1 = torch.where(keep, fresh, k1) if held else fresh
            else:
                k1 = torch.where(keep, k_last, k1) if held else k_last
        return y


def _safe_rms(x: np.ndarray) -> np.ndarray:
    """Row-wise RMS without overflow in the squares (:func:`~dynkit.solvers.stepsize.safe_rms`)."""
    big = np.max(np.abs(x), axis=1)
    safe = np.where((big > 0) & np.isfinite(big), big, 1.0)
    rms = big * np.sqrt(np.mean(np.square(x / safe[:, None]), axis=1))
    return np.where((big > 0) & np.isfinite(big), rms, big)


def solve_seeds(
    f: Callable[[Any, Any], Any],
    y0: Any,
    t: Any,
    method: str | RungeKuttaTableau = "dopri5",
    rtol: float = 1e-6,
    atol: float = 1e-8,
    max_steps: int = 100_000,
    *,
    first_step: float | None = None,
    adjoint: bool = False,
    adjoint_params: Sequence[Any] | None = None,
) -> SeedSolution:
    """Solve ``S`` independent copies of an ODE at once, each with its own adaptive steps.

    Parameters
    ----------
    f : callable or torch.nn.Module
        ``f(t, y) -> dy/dt`` for every seed: ``t`` a tensor of shape ``(S,)`` (each seed's time),
        ``y`` and the result of shape ``(S, ...)``. Seed ``s``'s slice may depend only on
        ``t[s]``, ``y[s]`` and seed ``s``'s parameters.
    y0 : torch.Tensor
        ``(S, ...)``, float32 or float64: the leading axis indexes the seeds.
    t : sequence of two times
        ``[t0, t1]`` (increasing or decreasing), shared by every seed.
    method : str or RungeKuttaTableau
        An explicit embedded pair with one error estimate (``dopri5``, ``tsit5``, ``bosh3``, ...).
    rtol, atol : float
        Each seed's tolerances, as :func:`dynkit.solve`'s (scalars).
    max_steps : int
        Most steps of any one seed.
    first_step : float, optional
        Every seed's first step (default: each seed's own estimate, [HNW] II.4).
    adjoint : bool
        Gradients by the continuous adjoint, per seed (see the module's description).
    adjoint_params : sequence of tensors, optional
        With ``adjoint=True``: the tensors ``f`` uses that receive gradients, each with the leading
        seed axis (default: the parameters of ``f`` when it is an ``nn.Module``).

    Returns
    -------
    SeedSolution
        ``ys`` (2, S, ...) at ``t``; ``stats`` per seed; ``backward_stats`` after ``backward``.

    Raises
    ------
    ValueError, TypeError
        Bad arguments, named, before any work.
    MaxStepsExceeded, StepSizeUnderflow, NonFiniteState
        When any one seed fails (the message names the first such seed); no partial solution.
    """
    import torch

    if not isinstance(y0, torch.Tensor):
        raise TypeError(f"y0 must be a torch tensor (S, ...), got {type(y0).__name__}")
    y0 = validate_state(y0)
    if y0.dim() < 1:
        raise ValueError(f"y0 must have a leading seed axis, got shape {tuple(y0.shape)}")
    times = validate_times(t)
    if len(times) != 2:
        raise ValueError(f"t must hold two times [t0, t1], got {len(times)}")
    if isinstance(t, torch.Tensor) and t.requires_grad:
        raise ValueError("t must not require grad (solve_seeds gives no time gradients)")
    rtol, atol = validate_tolerances(rtol, atol, y0)
    if not isinstance(atol, float):
        raise ValueError("atol must be a scalar for solve_seeds (every seed's, every component's)")
    if isinstance(max_steps, bool) or not isinstance(max_steps, (int, np.integer)) or max_steps < 1:
        raise ValueError(f"max_steps must be a positive integer, got {max_steps!r:.60}")
    if not isinstance(adjoint, bool):
        raise TypeError(f"adjoint must be True or False, got {adjoint!r}")
    if first_step is not None and (
        isinstance(first_step, bool)
        or not isinstance(first_step, (int, float))
        or not math.isfinite(first_step)
        or first_step == 0
        or math.copysign(1.0, first_step) != np.sign(times[1] - times[0])
    ):
        raise ValueError(
            f"first_step must be finite, non-zero and signed as t[1] - t[0], got {first_step!r}"
        )
    loop = _Seeds(f, _tableau(method), rtol, atol, int(max_steps))
    t0, t1 = float(times[0]), float(times[1])
    ts = torch.as_tensor(times, dtype=y0.dtype, device=y0.device)
    if not adjoint:
        if adjoint_params is not None:
            raise ValueError("adjoint_params is only used with adjoint=True, got adjoint=False")
        stats = SeedStats.zeros(len(y0))
        y1 = loop.march(y0.clone(), t0, t1, stats, first_step)
        return SeedSolution(ts=ts, ys=torch.stack([y0, y1]), stats=stats, method=loop.tableau.name)
    params = _seeded_params(f, adjoint_params, len(y0))
    holder = {"first_step": first_step}
    ys = _SeedAdjoint.apply(loop, (t0, t1), holder, y0, *params)
    return SeedSolution(
        ts=ts,
        ys=ys,
        stats=holder["stats"],
        method=loop.tableau.name,
        backward_stats=holder["backward_stats"],
    )


def _seeded_params(f, adjoint_params, n_seeds: int) -> tuple:
    import torch

    if adjoint_params is None:
        if not isinstance(f, torch.nn.Module):
            raise ValueError(
                "adjoint=True with f that is not an nn.Module needs adjoint_params (the seeded "
                "tensors f uses, () for none), got adjoint_params=None"
            )
        params = tuple(p for p in f.parameters() if p.requires_grad)
    else:
        params = (
            (adjoint_params,) if isinstance(adjoint_params, torch.Tensor) else tuple(adjoint_params)
        )
    for i, p in enumerate(params):
        if not isinstance(p, torch.Tensor) or p.dim() < 1 or p.shape[0] != n_seeds:
            shape = tuple(p.shape) if isinstance(p, torch.Tensor) else type(p).__name__
            raise ValueError(
                f"adjoint_params[{i}] must be a tensor with the leading seed axis of size "
                f"{n_seeds} (a parameter shared by the seeds would couple their gradients), "
                f"got {shape}"
            )
    return params


def _make_function():
    import torch

    class SeedAdjoint(torch.autograd.Function):
        @staticmethod
        def forward(ctx, loop, span, holder, y0, *params):
            stats = SeedStats.zeros(len(y0))
            with torch.no_grad():
                y1 = loop.march(y0.clone(), span[0], span[1], stats, holder["first_step"])
            holder["stats"], holder["backward_stats"] = stats, SeedStats.zeros(len(y0))
            ctx.loop, ctx.span, ctx.holder = loop, span, holder
            ctx.save_for_backward(y1, *params)
            return torch.stack([y0.detach().clone(), y1])

        @staticmethod
        @torch.autograd.function.once_differentiable
        def backward(ctx, grad_ys):
            y1, *params = ctx.saved_tensors
            grad_y0, grad_params = _backward(ctx.loop, ctx.span, y1, params, grad_ys, ctx.holder)
            return (None, None, None, grad_y0, *grad_params)

    return SeedAdjoint


_SeedAdjoint = LazyAutogradFunction(_make_function)


def _backward(loop: _Seeds, span, y1, params, grad_ys, holder):
    """The adjoint ``(y, a, g)`` per seed from ``span[1]`` back to ``span[0]``."""
    import torch

    n_seeds, shape = len(y1), y1.shape
    n_y = y1[0].numel()
    sizes = [p[0].numel() for p in params]
    total = 2 * n_y + sum(sizes)
    parts = [n for n in (n_y, n_y, *sizes) if n > 0]
    weights = np.concatenate([np.full(n, np.sqrt(total / n)) for n in parts])
    weights = torch.as_tensor(weights, dtype=y1.dtype, device=y1.device)

    def augmented(tt, z):
        with torch.enable_grad():
            y = z[:, :n_y].reshape(shape).detach().requires_grad_(True)
            a = z[:, n_y : 2 * n_y].reshape(shape)
            fy = loop.f(tt, y)
            vjps = (
                torch.autograd.grad(fy, (y, *params), -a, allow_unused=True)
                if fy.requires_grad
                else (None,) * (1 + len(params))
            )
        pieces = [fy.detach().reshape(n_seeds, -1)]
        pieces += [
            z.new_zeros(n_seeds, n) if v is None else v.reshape(n_seeds, -1).to(z.dtype)
            for v, n in zip(vjps, [n_y, *sizes])
        ]
        return torch.cat(pieces, dim=1)

    backward = _Seeds(augmented, loop.tableau, loop.rtol, loop.atol, loop.max_steps, weights)
    first = holder["first_step"]
    with torch.no_grad():
        z = torch.cat(
            [
                y1.reshape(n_seeds, -1),
                grad_ys[1].reshape(n_seeds, -1),
                y1.new_zeros(n_seeds, sum(sizes)),
            ],
            dim=1,
        )
        z = backward.march(
            z, span[1], span[0], holder["backward_stats"], None if first is None else -first
        )
        grad_y0 = z[:, n_y : 2 * n_y].reshape(shape) + grad_ys[0]
    grads, offset = [], 2 * n_y
    for p, n in zip(params, sizes):
        grads.append(z[:, offset : offset + n].reshape(p.shape).to(p.dtype))
        offset += n
    return grad_y0, grads
