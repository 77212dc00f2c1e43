"""Softmax, linear and momentum attention (Momentum Transformer, Eqs. (5)-(18); review Eqs.
(72)-(77)).

All functions take ``q`` of shape ``(batch, heads, N, dim)``, ``k`` of shape
``(batch, heads, M, dim)`` and ``v`` of shape ``(batch, heads, M, dim_v)`` and return
``(batch, heads, N, dim_v)``.

Momentum attention replaces the linear-attention state ``s_i = s_{i-1} + phi(k_i) v_i^T`` by the
heavy-ball recursion (12)::

    m_i = beta m_{i-1} - phi(k_i) v_i^T,   s_i = s_{i-1} - gamma m_i,   z_i = z_{i-1} + phi(k_i),
    out_i = phi(q_i)^T s_i / (phi(q_i)^T z_i + eps),

whose closed form (13) weights ``phi(k_j) v_j^T`` by ``gamma g(i - j + 1)`` with
``g(n) = (1 - beta^n) / (1 - beta)``.

Numerical stability of the parallel form. The tempting rewrite
``sum_j beta^{i-j} a_j = beta^i sum_j beta^{-j} a_j`` overflows (``beta^{-j}`` is ``inf`` in float32
for ``beta = 0.5`` and ``j > 128``), and the split ``g(n) = (1 - beta * beta^{n-1}) / (1 - beta)``
into a plain minus a decayed cumulative sum cancels catastrophically when ``beta`` is near 1. We use
neither. The sequence is cut into chunks of ``chunk`` positions. Inside a chunk the exact weights
``g(i - j + 1)`` (``0 <= i - j < chunk``) form a small lower-triangular matrix. Across chunks we
carry the two heavy-ball states in their own scale, ``S = s / gamma`` and ``M = -m``, and use the
identity ``g(n + m) = g(m) + beta^m g(n)``:

    contribution of the past to position c0 + n - 1:   S_c + beta g(n) M_c,
    next chunk:  S_{c+1} = S_c + beta g(L) M_c + sum_j g(c1 - j) a_j,   M_{c+1} = beta^L M_c + sum_j beta^{c1-1-j} a_j.

Every power has a non-negative exponent (no overflow; underflow to 0 is the correct limit), every
weight is non-negative (no cancellation introduced by the algorithm) and the weights are computed in
float64 with ``expm1`` before casting. ``beta`` and ``gamma`` are first rounded to the dtype of the
inputs (the values the recurrent form multiplies by), so that both forms compute one function. Cost
O(N (L + d) d), memory O(N (L + d)): linear in N. The only sequential step is a loop over the N / L
chunks.
"""  # noqa: E501

from __future__ import annotations

import math
from typing import Callable, Union

import torch
import torch.nn.functional as F

__all__ = [
    "DEFAULT_CHUNK",
    "momentum_weights",
    "softmax_attention",
    "linear_attention",
    "momentum_attention",
    "momentum_attention_step",
    "momentum_attention_recurrent",
    "adaptive_momentum",
]

FeatureMap = Union[str, Callable[[torch.Tensor], torch.Tensor], None]

DEFAULT_CHUNK = 64


# ----------------------------------------------------------------------------------------------
# validation


def _check_beta(beta, name: str = "beta") -> float:
    if isinstance(beta, torch.Tensor):
        if beta.numel() != 1:
            raise ValueError(
                f"{name} must be a scalar in [0, 1), got a tensor of shape {tuple(beta.shape)}"
            )
        beta = float(beta)
    if isinstance(beta, bool) or not isinstance(beta, (int, float)):
        raise ValueError(f"{name} must be a real number in [0, 1), got {beta!r}")
    beta = float(beta)
    if not math.isfinite(beta) or not 0.0 <= beta < 1.0:
        raise ValueError(f"{name} must lie in [0, 1) (0 <= beta < 1, Eq. (12)), got {beta!r}")
    return beta


def _check_positive(value, name: str) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def _check_qkv(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> None:
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be a bool, got {causal!r}")
    for name, x in (("q", q), ("k", k), ("v", v)):
        if not isinstance(x, torch.Tensor):
            raise ValueError(
                f"{name} must be a torch.Tensor of shape (batch, heads, N, dim), got "
                f"{type(x).__name__}"
            )
        if x.dim() != 4:
            raise ValueError(
                f"{name} must have 4 dimensions (batch, heads, N, dim), got shape {tuple(x.shape)}"
            )
        if not x.is_floating_point():
            raise ValueError(f"{name} must be a floating-point tensor, got dtype {x.dtype}")
    if q.shape[:2] != k.shape[:2] or q.shape[:2] != v.shape[:2]:
        raise ValueError(
            "q, k, v must share (batch, heads); got "
            f"q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}"
        )
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"q and k must have the same feature dimension; got q dim {q.shape[-1]}, k dim "
            f"{k.shape[-1]}"
        )
    if k.shape[2] != v.shape[2]:
        raise ValueError(
            f"k and v must have the same sequence length; got k N={k.shape[2]}, v N={v.shape[2]}"
        )
    if causal and q.shape[2] != k.shape[2]:
        raise ValueError(
            f"causal attention needs as many queries as keys; got q N={q.shape[2]}, k "
            f"N={k.shape[2]}"
        )
    if k.shape[2] == 0:
        raise ValueError("k and v must hold at least one position, got sequence length 0")
    if q.dtype != k.dtype or q.dtype != v.dtype:
        raise ValueError(f"q, k, v must share a dtype; got {q.dtype}, {k.dtype}, {v.dtype}")
    for name, x in (("q", q), ("k", k), ("v", v)):
        if not bool(torch.isfinite(x).all()):
            raise ValueError(
                f"{name} must be finite, got {int((~torch.isfinite(x)).sum())} non-finite entries"
            )


def _feature_map(feature_map: FeatureMap) -> Callable[[torch.Tensor], torch.Tensor]:
    if feature_map is None:
        return lambda x: x
    if feature_map == "elu+1":
        return lambda x: F.elu(x) + 1.0
    if callable(feature_map):
        return feature_map
    raise ValueError(f"feature_map must be 'elu+1', None or a callable, got {feature_map!r}")


# ----------------------------------------------------------------------------------------------
# momentum weights


def momentum_weights(n: torch.Tensor, beta: float) -> torch.Tensor:
    """``g(n) = (1 - beta^n) / (1 - beta) = sum_{r<n} beta^r`` in float64, stable for beta -> 1 and
    n large.

    ``n`` must be >= 0. ``-expm1(n log beta)`` keeps full relative precision when ``beta^n`` is
    close to 1, and ``1 - beta`` is exact in float64 for beta in [1/2, 1) (Sterbenz's lemma)."""
    if not isinstance(n, torch.Tensor) or n.is_complex() or n.dtype == torch.bool:
        raise TypeError(
            f"n must be a real torch.Tensor of counts >= 0, got "
            f"{getattr(n, 'dtype', type(n).__name__)}"
        )
    if n.numel() and not bool((n >= 0).all()):  # also False for nan
        raise ValueError(f"n must be >= 0 (g(n) sums n powers of beta), got min {float(n.min())}")
    beta = _check_beta(beta)
    n = n.to(torch.float64)
    if beta == 0.0:
        return (n > 0).to(torch.float64)
    return -torch.expm1(n * math.log(beta)) / (1.0 - beta)


def _powers(n: torch.Tensor, beta: float) -> torch.Tensor:
    """``beta^n`` for integer ``n >= 0`` in float64 (``0^0 = 1``)."""
    return torch.pow(torch.tensor(beta, dtype=torch.float64), n.to(torch.float64))


# ----------------------------------------------------------------------------------------------
# baselines


def softmax_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = True
) -> torch.Tensor:
    """Scaled dot-product softmax attention (Eq. (4) of the Momentum Transformer): O(N^2) time
    and memory."""
    _check_qkv(q, k, v, causal)
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        n = q.shape[2]
        mask = torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def linear_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    causal: bool = True,
    feature_map: FeatureMap = "elu+1",
    eps: float = 1e-6,
    chunk: int = DEFAULT_CHUNK,
) -> torch.Tensor:
    """Linear attention, Eqs. (5)-(7) of the Momentum Transformer (phi = elu + 1 by default).

    Equal to :func:`momentum_attention` with ``beta = 0`` and ``gamma = 1``; computed chunk-wise in
    O(N).
    """
    _check_qkv(q, k, v, causal)
    eps = _check_positive(eps, "eps")
    phi = _feature_map(feature_map)
    return _momentum_core(phi(q), phi(k), v, 0.0, 1.0, causal, eps, _check_chunk(chunk))


# ----------------------------------------------------------------------------------------------
# momentum attention


def _check_chunk(chunk) -> int:
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
        raise ValueError(f"chunk must be a positive integer, got {chunk!r}")
    return chunk


def momentum_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    beta: float,
    gamma: float = 1.0,
    causal: bool = True,
    feature_map: FeatureMap = "elu+1",
    eps: float = 1e-6,
    chunk: int = DEFAULT_CHUNK,
) -> torch.Tensor:
    """Momentum attention, parallel O(N) form: Eq. (13) (causal) or Eq. (14) (non-causal).

    Parameters
    ----------
    q, k, v : torch.Tensor
        Shapes ``(batch, heads, N, dim)``, ``(batch, heads, M, dim)``, ``(batch, heads, M, dim_v)``;
        ``M == N`` when causal.
    beta : float
        Heavy-ball momentum, ``0 <= beta < 1``.
    gamma : float
        Step size ``gamma > 0``.
    causal : bool
        Eq. (13) if True (position i sees keys 1..i), else Eq. (14) (all keys, weights
        ``g(M - j + 1)``).
    feature_map : {"elu+1", None} or callable
        ``phi`` applied to q and k inside; None uses q and k as given (they are then already
        features).
    eps : float
        Added to the denominator ``phi(q_i)^T z_i`` (as in linear transformers), identically in
        :func:`momentum_attention_recurrent`.
    chunk : int
        Chunk length of the stable evaluation (see the module docstring); any value gives the same
        result.

    Returns
    -------
    torch.Tensor of shape ``(batch, heads, N, dim_v)``.

    Raises
    ------
    ValueError
        beta outside [0, 1), gamma <= 0, mismatched shapes, non-finite inputs — before any
        computation.
    """
    beta = _check_beta(beta)
    gamma = _check_positive(gamma, "gamma")
    eps = _check_positive(eps, "eps")
    chunk = _check_chunk(chunk)
    _check_qkv(q, k, v, causal)
    phi = _feature_map(feature_map)
    return _momentum_core(phi(q), phi(k), v, beta, gamma, causal, eps, chunk)


def _momentum_core(
    fq: torch.Tensor,
    fk: torch.Tensor,
    v: torch.Tensor,
    beta: float,
    gamma: float,
    causal: bool,
    eps: float,
    chunk: int,
) -> torch.Tensor:
    dtype = fq.dtype
    # Round beta and gamma to the working precision first, as the recurrent form does when it
    # multiplies its float32 state: a float32 beta = 0.999 is off by 1.3e-8, which g(inf) = 1/(1 -
    # beta) amplifies to a 1.3e-5 relative change of the output. Both forms then evaluate the same
    # function.
    beta, gamma = (float(torch.tensor(x, dtype=dtype)) for x in (beta, gamma))
    if not causal:  # Eq. (14): one weighted sum over all keys, weight g(M - j + 1)
        m = fk.shape[2]
        w = momentum_weights(torch.arange(m, 0, -1, device=fk.device), beta).to(dtype)
        state = torch.einsum("bhjd,bhje->bhde", fk * w[:, None], v)
        z = fk.sum(dim=2)
        num = gamma * torch.einsum("bhid,bhde->bhie", fq, state)
        return num / (torch.einsum("bhid,bhd->bhi", fq, z) + eps)[..., None]

    b, h, n, d = fq.shape
    dv = v.shape[-1]
    L = min(chunk, n)
    nc = -(-n // L)
    pad = nc * L - n
    # z_i: plain cumulative sum; positions padded at the end contribute nothing (zero features).
    denom = torch.einsum("bhid,bhid->bhi", fq, fk.cumsum(dim=2)) + eps
    if pad:
        fq, fk, v = (F.pad(x, (0, 0, 0, pad)) for x in (fq, fk, v))
    fq, fk, v = (x.reshape(b, h, nc, L, x.shape[-1]) for x in (fq, fk, v))

    idx = torch.arange(L, device=fq.device)
    lag = idx[:, None] - idx[None, :]  # i - j inside a chunk
    intra = torch.where(lag >= 0, momentum_weights(lag.clamp(min=0) + 1, beta), 0.0).to(dtype)
    scores = (fq @ fk.transpose(-1, -2)) * intra  # (b, h, nc, L, L)
    num = scores @ v

    if nc > 1:
        # Per-chunk contributions to the carried states, weights relative to the chunk's end c1:
        # A_c = sum_j g(c1 - j) a_j and B_c = sum_j beta^{c1-1-j} a_j, both in one product.
        to_end = L - idx  # c1 - j for j = c0 .. c1 - 1
        if beta > 0.0:
            w = torch.stack([momentum_weights(to_end, beta), _powers(to_end - 1, beta)], dim=-1).to(
                dtype
            )
            sums = fk.transpose(-1, -2) @ (v[..., None, :] * w[:, :, None]).flatten(
                -2
            )  # (b,h,nc,d,2dv)
            # views and unbind rather than slices: a slice's backward fills a zero tensor of the
            # full size
            a_sum, b_sum = sums.unflatten(-1, (2, dv)).unbind(dim=-2)
            # M_{c+1} = beta^L M_c + B_c (one fused op per chunk; the only sequential step)
            carry_p = beta**L
            b_chunks = b_sum.unbind(
                dim=2
            )  # not b_sum[:, :, c]: each select's backward fills a full-size zero tensor
            M = [torch.zeros_like(b_chunks[0])]
            for c in range(nc - 1):
                M.append(torch.add(b_chunks[c], M[c], alpha=carry_p))
            M = torch.stack(M, dim=2)  # M at each chunk's start
            # S_{c+1} = S_c + beta g(L) M_c + A_c: an exclusive cumulative sum over chunks
            carry_g = beta * float(momentum_weights(torch.tensor(L), beta))
            S = _exclusive_cumsum(a_sum + carry_g * M, dim=2)
            past = (beta * momentum_weights(idx + 1, beta)).to(dtype)  # beta g(n), n = 1 .. L
            # two products rather than one over [phi(q), beta g(n) phi(q)]: nothing of size N is
            # saved
            num = num + fq @ S + past[:, None] * (fq @ M)
        else:  # linear attention: g = 1, only the plain state S
            num = num + fq @ _exclusive_cumsum(fk.transpose(-1, -2) @ v, dim=2)
    num = num.reshape(b, h, nc * L, dv)[:, :, :n]
    return gamma * num / denom[..., None]


def _exclusive_cumsum(x: torch.Tensor, dim: int) -> torch.Tensor:
    """Sum of the entries strictly before each index along ``dim``."""
    head = torch.zeros_like(x.narrow(dim, 0, 1))
    return torch.cat([head, x.narrow(dim, 0, x.shape[dim] - 1).cumsum(dim)], dim=dim)


def _heavy_ball_update(
    state: tuple | None, fk_i: torch.Tensor, v_i: torch.Tensor, beta: float, gamma: float
) -> tuple:
    """Eq. (12): m_i = beta m_{i-1} - phi(k_i) v_i^T, s_i = s_{i-1} - gamma m_i, z_i = z_{i-1} +
    phi(k_i)."""
    kv = fk_i[..., :, None] * v_i[..., None, :]
    if state is None:  # m_0 = s_0 = z_0 = 0
        return -kv, gamma * kv, fk_i
    m, s, z = state
    m = beta * m - kv
    return m, s - gamma * m, z + fk_i


def _readout(fq: torch.Tensor, s: torch.Tensor, z: torch.Tensor, eps: float) -> torch.Tensor:
    """phi(q)^T s / (phi(q)^T z + eps) for queries of shape (b, h, dim) (one step) or (b, h, n,
    dim)."""
    single = fq.dim() == s.dim() - 1
    fq = fq.unsqueeze(-2) if single else fq
    out = (fq @ s) / ((fq @ z.unsqueeze(-1)) + eps)
    return out.squeeze(-2) if single else out


def momentum_attention_step(
    q_i: torch.Tensor,
    k_i: torch.Tensor,
    v_i: torch.Tensor,
    state: tuple | None,
    beta: float,
    gamma: float = 1.0,
    feature_map: FeatureMap = "elu+1",
    eps: float = 1e-6,
) -> tuple[torch.Tensor, tuple]:
    """One step of the causal recurrent form (12) for autoregressive inference: O(1) state.

    ``q_i, k_i``: ``(batch, heads, dim)``, ``v_i``: ``(batch, heads, dim_v)``; ``state`` is
    ``(m, s, z)`` from the previous step or None at the start. Returns ``(out_i, (m, s, z))``.
    Arguments are validated as by :func:`momentum_attention` (a few scalar and shape checks per
    step).
    """
    beta, gamma, eps = (
        _check_beta(beta),
        _check_positive(gamma, "gamma"),
        _check_positive(eps, "eps"),
    )
    # one step is (batch, heads, dim): check it as a length-1 sequence
    _check_qkv(
        *(
            t.unsqueeze(-2) if isinstance(t, torch.Tensor) and t.dim() == 3 else t
            for t in (q_i, k_i, v_i)
        ),
        causal=True,
    )
    if state is not None and (
        not isinstance(state, tuple)
        or len(state) != 3
        or not all(isinstance(t, torch.Tensor) for t in state)
    ):
        raise ValueError(
            f"state must be None or the (m, s, z) tuple of the previous step, got "
            f"{type(state).__name__}"
        )
    phi = _feature_map(feature_map)
    state = _heavy_ball_update(state, phi(k_i), v_i, beta, gamma)
    return _readout(phi(q_i), state[1], state[2], eps), state


def momentum_attention_recurrent(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    beta: float,
    gamma: float = 1.0,
    causal: bool = True,
    feature_map: FeatureMap = "elu+1",
    eps: float = 1e-6,
) -> torch.Tensor:
    """Momentum attention computed step by step with the recurrence (12): the same function as
    :func:`momentum_attention` (same arguments, same output), O(1) state per step.

    Causal: ``out_i`` reads the state after step i. Non-causal (14): the recurrence runs over all M
    keys and every query reads the final state ``(s_M, z_M)``.
    """
    beta = _check_beta(beta)
    gamma = _check_positive(gamma, "gamma")
    eps = _check_positive(eps, "eps")
    _check_qkv(q, k, v, causal)
    phi = _feature_map(feature_map)
    fq, fk = phi(q), phi(k)
    state, outs = None, []
    for i in range(k.shape[2]):
        state = _heavy_ball_update(state, fk[:, :, i], v[:, :, i], beta, gamma)
        if causal:
            outs.append(_readout(fq[:, :, i], state[1], state[2], eps))
    if causal:
        return torch.stack(outs, dim=2)
    return _readout(fq, state[1], state[2], eps)


# ----------------------------------------------------------------------------------------------
# adaptive momentum


def adaptive_momentum(
    grad: torch.Tensor,
    grad_prev: torch.Tensor,
    *,
    step: float | None = None,
    x: torch.Tensor | None = None,
    x_prev: torch.Tensor | None = None,
    delta: float = 1e-3,
    dim=None,
) -> torch.Tensor:
    """Adaptive heavy-ball momentum, Eq. (17)/(18) of the Momentum Transformer (review (76)/(77)).

    With ``x, x_prev`` and ``step`` (gamma): Eq. (17),
    ``proj_[0,1-delta] (1 - sqrt(gamma ||g_k - g_{k-1}|| / ||x_k - x_{k-1}||))^2``. Without them:
    Eq. (18), ``x_k - x_{k-1} ~ gamma g_{k-1}`` so the ratio is ``||g_k - g_{k-1}|| / ||g_{k-1}||``.
    ``dim`` selects the norm's dimensions (None: all, giving a scalar). A zero denominator gives the
    clamp's upper end (no information on curvature: keep the largest allowed momentum).
    """
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not 0.0 < delta <= 1.0:
        raise ValueError(f"delta must lie in (0, 1], got {delta!r}")
    for name, t in (("grad", grad), ("grad_prev", grad_prev), ("x", x), ("x_prev", x_prev)):
        if t is None and name.startswith("x"):
            continue
        if not isinstance(t, torch.Tensor) or not t.is_floating_point():
            got = getattr(t, "dtype", type(t).__name__)
            raise TypeError(f"{name} must be a floating-point torch.Tensor, got {got}")
        if not bool(torch.isfinite(t).all()):
            raise ValueError(
                f"{name} must be finite, got {int((~torch.isfinite(t)).sum())} non-finite entries"
            )
    if grad.shape != grad_prev.shape:
        raise ValueError(
            f"grad and grad_prev must have the same shape, got {tuple(grad.shape)} and "
            f"{tuple(grad_prev.shape)}"
        )
    num = torch.linalg.vector_norm(grad - grad_prev, dim=dim)
    if x is not None or x_prev is not None:
        if x is None or x_prev is None or step is None:
            raise ValueError(
                f"Eq. (17) needs x, x_prev and step together (pass none of them for Eq. (18)), got "
                f"x={'given' if x is not None else None}, x_prev="
                f"{'given' if x_prev is not None else None}, step={step!r}"
            )
        step = _check_positive(step, "step")
        if x.shape != x_prev.shape:
            raise ValueError(
                f"x and x_prev must have the same shape, got {tuple(x.shape)} and "
                f"{tuple(x_prev.shape)}"
            )
        ratio = step * num / torch.linalg.vector_norm(x - x_prev, dim=dim)
    else:
        ratio = num / torch.linalg.vector_norm(grad_prev, dim=dim)
    beta = (1.0 - torch.sqrt(ratio)) ** 2
    beta = torch.where(
        torch.isnan(beta) | (ratio == float("inf")), torch.full_like(beta, 1.0 - delta), beta
    )
    # (1 - sqrt(r))^2 grows again for r > 1; the projection only clamps (Eq. (17)): keep the paper's
    # formula.
    return beta.clamp(0.0, 1.0 - delta)
