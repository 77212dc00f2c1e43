"""Momentum attention of the Momentum Transformer: the recurrence (12) and the closed forms (13)
(causal) and (14) (non-causal) compute the same outputs.

The closed forms weight ``phi(k_j) v_j^T`` by ``gamma (1 - beta**(i - j + 1)) / (1 - beta)`` (``i`` the
query's position for (13), ``N`` for (14)). Batched over any leading axes of ``q, k, v``.
"""
from __future__ import annotations

import numpy as np

from ._core import CheckResult, as_real_array, as_scalar_batch, combine, verdict

__all__ = ["check_momentum_attention", "momentum_attention_recurrent", "momentum_attention_closed",
           "elu_feature_map"]

# Both sides sum the same O(N) positive terms in a different order; float64 rounding is
# ~N * eps ~ 1e-13 for N <= 64, so 1e-10 (relative) separates rounding from a wrong weight.
ATTENTION_TOL = 1e-10


def elu_feature_map(x: np.ndarray) -> np.ndarray:
    """``phi(x) = elu(x) + 1 > 0``, the feature map of linear transformers (Katharopoulos et al.)."""
    return np.where(x > 0, x + 1, np.exp(np.minimum(x, 0)))


def _inputs(q, k, v, beta, gamma, context="Momentum Transformer (12)-(14)"):
    q = as_real_array("q", q, context=context)
    k = as_real_array("k", k, context=context)
    v = as_real_array("v", v, context=context)
    if q.ndim < 2 or q.shape != k.shape or k.shape[:-1] != v.shape[:-1] or q.shape[-2] == 0:
        raise ValueError(f"q, k must have the same shape (..., N, d) and v shape (..., N, e) "
                         f"({context}); got {q.shape}, {k.shape}, {v.shape}")
    beta = float(as_scalar_batch("beta", beta, context=context, low=0.0, high=1.0, high_open=True))
    gamma = float(as_scalar_batch("gamma", gamma, context=context, low=0.0, low_open=True))
    return q, k, v, beta, gamma


def momentum_attention_recurrent(q, k, v, beta: float, gamma: float, phi=elu_feature_map):
    """Run (12) over the sequence axis (-2). Returns ``(causal outputs, final states (s_N, z_N))``."""
    q, k, v, beta, gamma = _inputs(q, k, v, beta, gamma)
    fq, fk = phi(q), phi(k)
    batch, N = q.shape[:-2], q.shape[-2]
    m = np.zeros(batch + (fk.shape[-1], v.shape[-1]))
    s = np.zeros_like(m)
    z = np.zeros(batch + (fk.shape[-1],))
    out = np.empty(batch + (N, v.shape[-1]))
    for i in range(N):
        m = beta * m - fk[..., i, :, None] * v[..., i, None, :]
        s = s - gamma * m
        z = z + fk[..., i, :]
        out[..., i, :] = np.einsum("...a,...ab->...b", fq[..., i, :], s) / \
            np.einsum("...a,...a->...", fq[..., i, :], z)[..., None]
    return out, (s, z)


def _weights(N: int, beta: float, causal: bool) -> np.ndarray:
    i = np.arange(N)[:, None]
    j = np.arange(N)[None, :]
    last = i if causal else np.full_like(i, N - 1)
    w = (1 - beta ** np.maximum(last - j + 1, 0)) / (1 - beta)
    return np.where(j <= last, w, 0.0)


def momentum_attention_closed(q, k, v, beta: float, gamma: float, *, causal: bool = True,
                              phi=elu_feature_map) -> np.ndarray:
    """(13) (``causal=True``) or (14): ``gamma phi(q_i)^T sum_j w_ij phi(k_j) v_j^T / phi(q_i)^T z``."""
    q, k, v, beta, gamma = _inputs(q, k, v, beta, gamma)
    fq, fk = phi(q), phi(k)
    N = q.shape[-2]
    scores = np.einsum("...ia,...ja->...ij", fq, fk)
    num = gamma * np.einsum("...ij,...jb->...ib", scores * _weights(N, beta, causal), v)
    mask = np.tril(np.ones((N, N))) if causal else np.ones((N, N))
    den = (scores * mask).sum(axis=-1)
    return num / den[..., None]


def check_momentum_attention(q, k, v, beta: float, gamma: float = 1.0) -> CheckResult:
    """Momentum Transformer (12) = (13) at every position (causal) and (14) = ``phi(q_i)^T s_N /
    phi(q_i)^T z_N`` from (12)'s final states (non-causal), to relative ``ATTENTION_TOL``.

    Parameters
    ----------
    q, k : array (..., N, d)
    v : array (..., N, e)
    beta : float in [0, 1)
    gamma : float > 0
    """
    q, k, v, beta, gamma = _inputs(q, k, v, beta, gamma)
    rec, (s, z) = momentum_attention_recurrent(q, k, v, beta, gamma)
    fq = elu_feature_map(q)
    rec_nc = np.einsum("...ia,...ab->...ib", fq, s) / np.einsum("...ia,...a->...i", fq, z)[..., None]
    scale = 1 + np.abs(rec).max(axis=(-1, -2))
    causal = np.abs(momentum_attention_closed(q, k, v, beta, gamma) - rec).max(axis=(-1, -2)) / scale
    scale_nc = 1 + np.abs(rec_nc).max(axis=(-1, -2))
    noncausal = np.abs(momentum_attention_closed(q, k, v, beta, gamma, causal=False) - rec_nc
                       ).max(axis=(-1, -2)) / scale_nc
    instances = dict(q=q, k=k, v=v)
    return combine("momentum_attention", [
        verdict("momentum_attention.causal", causal, ATTENTION_TOL, instances,
                "(13) vs recurrence (12), max relative difference", beta=beta, gamma=gamma),
        verdict("momentum_attention.noncausal", noncausal, ATTENTION_TOL, instances,
                "(14) vs (12)'s final states, max relative difference", beta=beta, gamma=gamma),
    ])
