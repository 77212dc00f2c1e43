"""How attention's cost grows with the sequence length N (Momentum Transformer, Sect. 3; review Eqs.
(72)-(77)).

Softmax attention stores ``N x N`` scores for the backward pass and does ``O(N^2)`` work; linear and
momentum attention keep ``O(N)``. Measured per method: the bytes autograd saves for backward
(``saved_tensors_hooks``, exact) and the CPU time of forward + backward (best of ``repeats``), each
fitted as ``cost ∝ N^p`` over the lengths; ``p`` is the metric.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ...io import save_figure
from ...models.attention import linear_attention, momentum_attention, softmax_attention
from ..registry import register

METHODS = {
    "softmax": lambda q, k, v: softmax_attention(q, k, v),
    "linear": lambda q, k, v: linear_attention(q, k, v),
    "momentum": lambda q, k, v: momentum_attention(q, k, v, 0.9, 0.6),
}


@dataclass(frozen=True)
class ScalingConfig:
    lengths: tuple[int, ...] = (256, 512, 1024, 2048)
    heads: int = 2
    dim: int = 16
    repeats: int = 3


def saved_bytes(fn, *inputs) -> int:
    """Bytes of the distinct storages autograd saves while ``fn(*inputs)`` runs."""
    seen, total = set(), 0

    def pack(t):
        nonlocal total
        storage = t.untyped_storage()
        if storage.data_ptr() not in seen:
            seen.add(storage.data_ptr())
            total += storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn(*inputs)
    return total


def exponent(ns, values) -> float:
    """Least-squares slope of log(value) against log(N)."""
    return float(np.polyfit(np.log(ns), np.log(values), 1)[0])


@register(
    "momseq_attention_scaling",
    smoke=ScalingConfig(lengths=(64, 128), repeats=1),
    cpu=ScalingConfig(),
    full=ScalingConfig(lengths=(256, 512, 1024, 2048, 4096, 8192), heads=4, dim=32),
)
def momseq_attention_scaling(config: ScalingConfig, *, seed: int, out: Path, device: str) -> dict:
    """Growth exponent of attention's saved memory and time in N: softmax vs linear vs momentum."""
    g = torch.Generator(device=device).manual_seed(seed)
    rows = []
    for n in config.lengths:
        q, k, v = (
            torch.randn(1, config.heads, n, config.dim, generator=g, device=device).requires_grad_()
            for _ in range(3)
        )
        row = {"N": n}
        for name, fn in METHODS.items():
            row[f"{name}.saved_bytes"] = saved_bytes(fn, q, k, v)
            best = float("inf")
            for _ in range(config.repeats + 1):  # the first round warms up
                start = time.process_time()
                fn(q, k, v).sum().backward()
                best = min(best, time.process_time() - start)
                q.grad = k.grad = v.grad = None
            row[f"{name}.cpu_s"] = best
        rows.append(row)
    ns = [r["N"] for r in rows]
    metrics = {}
    for name in METHODS:
        metrics[f"{name}.memory_exponent"] = exponent(ns, [r[f"{name}.saved_bytes"] for r in rows])
        metrics[f"{name}.time_exponent"] = exponent(
            ns, [max(r[f"{name}.cpu_s"], 1e-9) for r in rows]
        )
    from ..plotting import pyplot

    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.2))
    for name in METHODS:
        axes[0].loglog(ns, [r[f"{name}.saved_bytes"] for r in rows], "-o", label=name)
        axes[1].loglog(ns, [r[f"{name}.cpu_s"] for r in rows], "-o", label=name)
    axes[0].set_title("saved for backward (bytes)")
    axes[1].set_title("CPU time, forward + backward (s)")
    for ax in axes:
        ax.set_xlabel("sequence length N")
        ax.grid(alpha=0.3)
    axes[0].legend()
    fig.tight_layout()
    save_figure(fig, Path(out) / "attention_scaling.png", dpi=100)
    plt.close(fig)
    return {"metrics": metrics, "rows": rows}
