"""A small transformer assembling softmax, linear and momentum attention with residual, momentum
(15) or adaptive-momentum (18) connections (Momentum Transformer Sect. 3; review Eqs. (72)-(77)).

``causal=True`` gives the decoder (autoregressive language model, as used for the copy task);
``causal=False`` the encoder (non-causal momentum attention, Eq. (14)).

Momentum connection (15), ``T_l(X) = f_l(V_hat + X + beta~ (X - T_{l-1}(X)))``: read as the
heavy-ball step ``x_{l+1} = x_l + gamma~ V_hat_l + beta~ (x_l - x_{l-1})`` where ``x_l`` is the
input of layer ``l`` and ``V_hat_l`` plays ``-gamma grad f`` (the first layer has no previous input:
its momentum term is zero). Adaptive momentum sets ``beta~_l`` per token from Eq. (18) with
``grad f`` ~ ``V_hat``, clamped to ``[0, 1 - delta]``; like a step-size rule it is not
differentiated through (detached). Per token, not per sequence: a norm over the whole sequence would
make an early position depend on later tokens and break the decoder's causality (our test caught
exactly that).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .. import _checks as check
from .attention import (
    _check_beta,
    adaptive_momentum,
    linear_attention,
    momentum_attention,
    softmax_attention,
)

__all__ = [
    "ATTENTIONS",
    "CONNECTIONS",
    "MultiHeadAttention",
    "TransformerLayer",
    "MomentumTransformer",
]

ATTENTIONS = ("softmax", "linear", "momentum")
CONNECTIONS = ("residual", "momentum", "adaptive")


class MultiHeadAttention(nn.Module):
    """Projections to heads, one of the three attentions, projection back."""

    def __init__(
        self,
        d_model: int,
        heads: int,
        attention: str = "momentum",
        *,
        beta: float = 0.1,
        gamma: float = 0.6,
        causal: bool = True,
    ):
        super().__init__()
        if attention not in ATTENTIONS:
            raise ValueError(f"attention must be one of {ATTENTIONS}, got {attention!r}")
        check.integer(d_model, "d_model", 1)
        check.integer(heads, "heads", 1)
        check.real(gamma, "gamma", low=0.0, low_open=True)
        check.boolean(causal, "causal")
        if d_model % heads:
            raise ValueError(
                f"d_model must be divisible by heads, got d_model={d_model}, heads={heads}"
            )
        self.attention, self.heads, self.causal = attention, heads, causal
        self.beta = _check_beta(beta)
        self.gamma = gamma
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check.tensor(x, "x", ndim=3, floating=True, shape_hint="(batch, n, d_model)")
        if x.shape[-1] != self.qkv.in_features:
            raise ValueError(
                f"x must have d_model={self.qkv.in_features} features (last dimension), "
                f"got shape {tuple(x.shape)}"
            )
        b, n, d = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        if self.attention == "softmax":
            y = softmax_attention(q, k, v, causal=self.causal)
        elif self.attention == "linear":
            y = linear_attention(q, k, v, causal=self.causal)
        else:
            y = momentum_attention(q, k, v, self.beta, self.gamma, causal=self.causal)
        return self.out(y.transpose(1, 2).reshape(b, n, d))


class TransformerLayer(nn.Module):
    """Pre-norm layer: attention with a residual / momentum / adaptive connection, then a
    feed-forward block."""

    def __init__(
        self,
        d_model: int,
        heads: int,
        d_ff: int,
        attention: str = "momentum",
        *,
        connection: str = "residual",
        connection_beta: float = 0.99,
        connection_step: float = 1.0,
        delta: float = 1e-3,
        dropout: float = 0.0,
        **attention_kwargs,
    ):
        super().__init__()
        if connection not in CONNECTIONS:
            raise ValueError(f"connection must be one of {CONNECTIONS}, got {connection!r}")
        self.connection = connection
        check.integer(d_ff, "d_ff", 1)
        check.real(connection_step, "connection_step", low=0.0, low_open=True)
        check.real(delta, "delta", low=0.0, high=1.0, low_open=True)
        check.real(dropout, "dropout", low=0.0, high=1.0, high_open=True)
        self.connection_beta = _check_beta(connection_beta, "connection_beta")
        self.connection_step, self.delta = connection_step, delta
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.attn = MultiHeadAttention(d_model, heads, attention, **attention_kwargs)
        self.ff = nn.Sequential(
            nn.Linear(d_model, d_ff), nn.GELU(), nn.Linear(d_ff, d_model), nn.Dropout(dropout)
        )

    def forward(self, x: torch.Tensor, x_prev: torch.Tensor | None, attn_prev: torch.Tensor | None):
        """Returns ``(output, x, V_hat)``: the next layer's input, this layer's input and
        attention."""
        check.tensor(x, "x", ndim=3, floating=True, shape_hint="(batch, n, d_model)")
        if x.shape[-1] != self.norm1.normalized_shape[0]:
            raise ValueError(
                f"x must have d_model={self.norm1.normalized_shape[0]} features (last dimension), "
                f"got shape {tuple(x.shape)}"
            )
        a = self.attn(self.norm1(x))
        if self.connection == "residual":
            y = x + a
        else:
            if x_prev is None:
                beta = torch.zeros((), dtype=x.dtype, device=x.device)
            elif self.connection == "momentum":
                beta = torch.tensor(self.connection_beta, dtype=x.dtype, device=x.device)
            # Eq. (18) per token: a norm over the sequence would let later tokens leak into earlier
            # ones
            else:
                beta = adaptive_momentum(a.detach(), attn_prev.detach(), delta=self.delta, dim=-1)[
                    ..., None
                ]
            momentum = 0.0 if x_prev is None else beta * (x - x_prev)
            y = x + self.connection_step * a + momentum
        return y + self.ff(self.norm2(y)), x, a


class MomentumTransformer(nn.Module):
    """Token embedding + learned positions + ``layers`` :class:`TransformerLayer` + a linear head.

    Parameters
    ----------
    vocab_size, max_length : int
    d_model, heads, layers, d_ff : int
    attention : {"softmax", "linear", "momentum"}
    beta, gamma : float
        Momentum attention's beta (in [0, 1)) and gamma (Table 1, copy task: 0.1 and 0.6).
    connection : {"residual", "momentum", "adaptive"}
    connection_beta, connection_step : float
        beta~ and the step of the momentum connection (Table 1, copy task: 0.99 and 0.99).
    causal : bool
        Decoder (True) or encoder (False).
    """

    def __init__(
        self,
        vocab_size: int,
        max_length: int,
        *,
        d_model: int = 64,
        heads: int = 4,
        layers: int = 2,
        d_ff: int = 128,
        attention: str = "momentum",
        beta: float = 0.1,
        gamma: float = 0.6,
        connection: str = "residual",
        connection_beta: float = 0.99,
        connection_step: float = 1.0,
        causal: bool = True,
        dropout: float = 0.0,
    ):
        super().__init__()
        check.integer(vocab_size, "vocab_size", 1)
        check.integer(max_length, "max_length", 1)
        check.integer(layers, "layers", 1)
        check.integer(d_model, "d_model", 1)
        self.embed = nn.Embedding(vocab_size, d_model)
        self.position = nn.Parameter(torch.randn(max_length, d_model) / math.sqrt(d_model))
        self.layers = nn.ModuleList(
            TransformerLayer(
                d_model,
                heads,
                d_ff,
                attention,
                connection=connection,
                connection_beta=connection_beta,
                connection_step=connection_step,
                dropout=dropout,
                beta=beta,
                gamma=gamma,
                causal=causal,
            )
            for _ in range(layers)
        )
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        check.tensor(tokens, "tokens", ndim=2, floating=False, shape_hint="(batch, n)")
        vocab = self.embed.num_embeddings
        if tokens.numel() and (int(tokens.min()) < 0 or int(tokens.max()) >= vocab):
            raise ValueError(
                f"tokens must be ids in [0, {vocab}) (vocab_size), got values in "
                f"[{int(tokens.min())}, {int(tokens.max())}]"
            )
        if tokens.dim() != 2 or not 0 < tokens.shape[1] <= self.position.shape[0]:
            raise ValueError(
                f"tokens must have shape (batch, n) with 0 < n <= {self.position.shape[0]} "
                f"(max_length), "
                f"got {tuple(tokens.shape)}"
            )
        x = self.embed(tokens) + self.position[: tokens.shape[1]]
        x_prev = attn_prev = None
        for layer in self.layers:
            x, x_prev, attn_prev = layer(x, x_prev, attn_prev)
        return self.head(self.norm(x))
