"""The few array operations the engine needs, for numpy arrays and torch tensors.

The engine never branches on the array library; it asks a :class:`Backend` instead. Step-size
control reads plain Python floats (one device sync per step); the state arithmetic stays in the
caller's library so that torch solves remain differentiable by autograd.
"""

from __future__ import annotations

import math
import sys
from typing import Any, Callable, Sequence

import numpy as np

__all__ = ["NumpyBackend", "TorchBackend", "is_torch", "backend_for"]


class NumpyBackend:
    name = "numpy"

    def __init__(self, y0: np.ndarray):
        self.dtype = y0.dtype

    def time(self, t: float):
        return t

    def lincomb(self, y, ks: Sequence[Any], coeffs: Sequence[float]):
        """``y + sum_j coeffs[j] * ks[j]`` (``y`` may be None), skipping zero coefficients."""
        out = y
        for k, c in zip(ks, coeffs):
            if c != 0.0:
                term = k * float(
                    c
                )  # a Python float is "weak": float32 states stay float32 (NEP 50)
                out = term if out is None else out + term
        return out

    def error_scale(self, y, y_new, rtol: float, atol):
        return atol + rtol * np.maximum(np.abs(y), np.abs(y_new))

    def norms(self, err, scale, per_sample: bool) -> np.ndarray:
        """RMS of ``err / scale``: over everything (a 0-d array), or per leading index (shape
        (B,))."""
        if err.size == 0:
            return np.zeros(err.shape[0] if per_sample else ())
        ratio = err / scale
        if per_sample:
            return np.sqrt(np.square(ratio).reshape(len(ratio), -1).mean(axis=1, dtype=np.float64))
        ratio = ratio.reshape(-1)
        # a dot product: numpy's mean() costs several microseconds of Python on a tiny state
        return np.asarray(math.sqrt(float(np.dot(ratio, ratio)) / ratio.size))

    def lincomb_many(self, y, ks, weights: np.ndarray, h: float = 1.0):
        """``y + h sum_j weights[:, j] * ks[j]`` for each row of ``weights``: shape
        ``(m, *y.shape)``.

        ``ks`` is a sequence of arrays or a stage matrix from :meth:`new_stages` (whose ``y`` it
        is).
        """
        if isinstance(ks, _StageMatrix):  # its rows are y, h k_1, h k_2, ...
            out = (
                weights.astype(self.dtype, copy=False) @ ks.data[1 : 1 + weights.shape[1]]
            ).reshape((len(weights), *ks.shape))
        else:
            out = np.tensordot(weights * h, np.stack(ks), axes=1)
        if y is not None:
            out += y
        return out.astype(self.dtype, copy=False)

    # -- stage storage: one matrix per step with rows y, h k_1, h k_2, ...: a stage sum
    #    y + h sum_j a_ij k_j is then one dot product with (1, a_i1, ..., a_i,i-1)

    def coefficient_rows(self, rows):
        return [
            np.concatenate(([1.0], np.asarray(row, dtype=np.float64))).astype(self.dtype)
            for row in rows
        ]

    def new_stages(self, n: int, y, h: float):
        data = np.empty((n + 1, y.size), dtype=self.dtype)
        data[0] = y.reshape(-1)
        return _StageMatrix(data, y.shape, h)

    def set_stage(self, K, i: int, k) -> None:
        np.multiply(k.reshape(-1) if K.reshape else k, K.h, K.data[i + 1])  # positional out: faster

    def combine(self, y, K, n: int, row, h: float):
        """``y + h * sum_{j<n} row[j] K[j]`` (``y`` None: without it); ``y`` is the one in ``K``."""
        out = np.dot(row, K.data[: n + 1]) if y is not None else np.dot(row[1:], K.data[1 : n + 1])
        return out.reshape(K.shape) if K.reshape else out

    def cast(self, x):
        return x.astype(self.dtype)

    def to_numpy(self, x) -> np.ndarray:
        return np.asarray(x, dtype=np.float64)

    def output_buffer(self, n: int, y0):
        return _NumpyOutputs(n, y0)

    def scale(self, y, rtol: float, atol):
        return atol + rtol * np.abs(y)

    def all_finite(self, x) -> bool:
        return bool(np.isfinite(x).all())

    def stack(self, xs):
        return np.stack(xs)

    array_type = np.ndarray

    def output_times(self, t: np.ndarray):
        return t.astype(self.dtype, copy=False)


class TorchBackend:
    name = "torch"

    def __init__(self, y0):
        global torch
        import torch

        self.dtype = y0.dtype
        self.device = y0.device

    def time(self, t: float):
        return torch.full((), t, dtype=self.dtype, device=self.device)  # cheaper than torch.tensor

    def lincomb(self, y, ks, coeffs):
        out, fresh = y, False
        for k, c in zip(ks, coeffs):
            if c != 0.0:
                c = float(c)
                if fresh:  # accumulate in the buffer made below: no new tensor per term
                    out.add_(k, alpha=c)
                else:
                    # the first term makes a new tensor (y and the stages are never written to);
                    # add/mul save no inputs for backward, so accumulating in place is autograd-safe
                    out = k * c if out is None else torch.add(out, k, alpha=c)
                    fresh = True
        return out

    def error_scale(self, y, y_new, rtol, atol):
        with torch.no_grad():
            return torch.maximum(y.abs(), y_new.abs()).mul_(rtol).add_(atol)

    def norms(self, err, scale, per_sample: bool) -> np.ndarray:
        with torch.no_grad():
            if err.numel() == 0:
                return np.zeros(err.shape[0] if per_sample else ())
            ratio = torch.div(err.detach(), scale).square_()
            if per_sample:
                return (
                    ratio.reshape(len(ratio), -1)
                    .mean(dim=1)
                    .sqrt_()
                    .cpu()
                    .numpy()
                    .astype(np.float64)
                )
            return np.asarray(float(ratio.mean().sqrt_()))

    # -- stage storage: a list of tensors, sums accumulated in place (autograd-safe, see lincomb)

    def coefficient_rows(self, rows):
        return [tuple(float(x) for x in row) for row in rows]

    def new_stages(self, n: int, y, h: float):
        return []

    def set_stage(self, K, i: int, k) -> None:
        K.append(k)

    def combine(self, y, K, n: int, row, h: float):
        return self.lincomb(y, K[:n], [h * c for c in row])

    def lincomb_many(self, y, ks, weights: np.ndarray, h: float = 1.0):
        w = torch.as_tensor(weights * h, dtype=self.dtype, device=self.device)
        out = torch.tensordot(w, torch.stack(list(ks)), dims=1)
        return out if y is None else out + y

    def cast(self, x):
        return x.to(self.dtype)

    def to_numpy(self, x) -> np.ndarray:
        if isinstance(x, torch.Tensor):
            return x.detach().cpu().numpy().astype(np.float64)
        return np.asarray(x, dtype=np.float64)

    def output_buffer(self, n: int, y0):
        return _TorchOutputs(y0)

    def scale(self, y, rtol, atol):
        with torch.no_grad():
            return y.abs() * rtol + atol

    def all_finite(self, x) -> bool:
        with torch.no_grad():
            return bool(torch.isfinite(x).all())

    def stack(self, xs):
        return torch.stack(xs)

    @property
    def array_type(self):
        return torch.Tensor

    def output_times(self, t: np.ndarray):
        return torch.as_tensor(t, dtype=self.dtype, device=self.device)


class _StageMatrix:
    """The stages of one step as rows of a matrix (flattened states), with the state's shape."""

    __slots__ = ("data", "shape", "reshape", "h")

    def __init__(self, data: np.ndarray, shape: tuple, h: float):
        self.data, self.shape, self.h = data, shape, h
        self.reshape = len(shape) != 1  # a 1-D state is a row as it is


class _NumpyOutputs:
    """Output states written into one preallocated array as the solve passes them."""

    def __init__(self, n: int, y0):
        self.data = np.empty((n, *y0.shape), dtype=y0.dtype)
        self.data[0] = y0
        self.count = 1

    def put(self, states):
        """Append the stacked states ``states`` (leading axis: output times)."""
        self.data[self.count : self.count + len(states)] = states
        self.count += len(states)

    def result(self):
        return self.data if self.count == len(self.data) else self.data[: self.count].copy()


class _TorchOutputs:
    """Chunks of output states, concatenated once at the end (autograd-friendly, no in-place
    writes)."""

    def __init__(self, y0):
        self.chunks = [y0[None]]
        self.count = 1

    def put(self, states):
        self.chunks.append(states)
        self.count += len(states)

    def result(self):
        return torch.cat(self.chunks) if len(self.chunks) > 1 else self.chunks[0]


class LazyAutogradFunction:
    """A ``torch.autograd.Function`` built on first use (numpy-only users never import torch).

    Parameters
    ----------
    build : callable
        Returns the ``torch.autograd.Function`` subclass; called once, by the first :meth:`apply`.
    """

    def __init__(self, build: Callable[[], Any]):
        self._build = build
        self._cls = None

    def apply(self, *args: Any) -> Any:
        """``build().apply(*args)``, building the class on the first call."""
        if self._cls is None:
            self._cls = self._build()
        return self._cls.apply(*args)


def is_torch(x: Any) -> bool:
    # A tensor can only exist once torch is imported: numpy-only users never pay torch's import
    # time.
    module = sys.modules.get("torch")
    return module is not None and isinstance(x, module.Tensor)


def backend_for(y0: Any):
    return TorchBackend(y0) if is_torch(y0) else NumpyBackend(y0)
