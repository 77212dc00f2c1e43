"""CSAODE: continuous self-attention with an ODE solver (Zhang et al., AAAI 2021).

Equation numbers refer to ``shared/papers/004_*.txt``. The pipeline for a sentence of ``L`` words:

1. look-up (1) and N-gram convolution (2) -> local representation ``H^L`` (``M x d``; the rows
   whose phrase would run past the sentence are zero, as in the paper);
2. the self-attention ODE (7) ``dG/dt = F(G + P)``, ``G(0) = H^L``, with ``F`` the self-attention
   block (4)-(5) and ``P`` the fixed position encoding (3), solved with step ``r`` by RK4 (8),
   RKF45 (adaptive, ``r`` is the initial step) or the two-step ARK4 (9)-(10), always through
   :func:`dynkit.solve` (NFE counted, the derived ARK coefficients of :mod:`dynkit.solvers.ark`);
   ``H^G = G(t_T)``;
3. Euclidean attention (11)-(12) of the global rows over the local rows, the gate (13) with two
   learnable scalars, max pooling and the classifier (14).

Choices where the paper is ambiguous (each tested in ``tests/test_csaode.py``)
-----------------------------------------------------------------------------
* **Horizon.** The paper takes ``T = ceil(1/r)`` steps of exactly ``r`` and outputs ``G(t_T)``
  (Eq. (8)), so ``r = 0.4`` integrates to ``t = 1.2``. We follow that reading for all three
  solvers: the ODE is solved on ``[0, ceil(1/r) r]`` (:func:`horizon`), which puts the final time
  on the step grid -- no interpolation past the grid and no extra evaluation.
* **Eq. (10)'s extra r.** With ``Z_j = r F(...)`` *and* ``a_j r Z_{j-1}`` inside the argument, the
  stage would be ``O(r^2)``: a typo (Eq. (8) has ``Z_j = F(...)`` and ``r`` outside). We use the
  consistent form ``k_j = f(t + a_j r, y + a_j r k_{j-1})`` of :class:`dynkit.solvers.TwoStepRK`.
* **ARK needs r < 1.** With ``r = 1`` there is one step, taken by the RK4 starter; the paper says
  the ARK form needs ``0 < r < 1``. ``solver="ark"`` with ``step >= 1`` raises ``ValueError``
  (use ``solver="rk"``: the paper notes the two coincide at ``r = 1``).
* **Euclidean attention.** Eq. (11) gives reciprocal distances; Fig. 6(a) shows them as
  probabilities, so each global row's scores are L1-normalised over the sentence's local rows, and
  the distance is ``sqrt(sum (.)^2 + eps)`` so a zero distance cannot divide by zero.
* **Gate.** ``W_1, W_2`` start at 0.5 and are used L1-normalised (Fig. 6(b): "always satisfy L1
  normalization").
* **Parameter count.** The literal equations give ``2 d_e d + 4 d^2`` (+ vectors), 0.54M for
  Table 1's model, not 0.63M. Every single-model size the paper reports (Tables 1-3: 0.63M, 0.54M,
  0.72M, 0.32M, 0.043M, and 0.45M without the convolution) fits one more ``d x d`` layer, so the
  classifier (14) -- "the parameters of a FFN layer" -- gets a hidden ``d x d`` ReLU layer by
  default (``ffn_hidden=True``). This reading misses one number: 5 stacked blocks count 2.08M, not
  Table 2's 1.62M (which no per-block count consistent with the other six matches).
* **Masking.** Padding never influences a prediction: padded positions are masked as keys of the
  self-attention (5) and as local rows of the Euclidean attention (11), and excluded from pooling.
  A sentence shorter than the window keeps one convolution row (its phrase completed by zeros).
* **Attention scale.** Eq. (5) has no ``1/sqrt(d)``; we follow it.
* **Time.** ``F`` has no time input in Eq. (4)-(5), so the vector field is autonomous.
* **RKF over a batch.** The adaptive solver integrates the whole batch as one state, so its steps
  (and, within its tolerance, a sentence's scores) depend on the batch; RK and ARK do not.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .. import _checks as check
from .. import solvers as _solvers
from ..solvers import solve

__all__ = [
    "SOLVERS",
    "ARCHITECTURES",
    "EPS_DISTANCE",
    "position_encoding",
    "horizon",
    "SelfAttentionBlock",
    "CSAODE",
    "expected_nfe",
]

SOLVERS = {"rk": "rk4", "rkf": "rkf45", "ark": "ark4"}
ARCHITECTURES = ("ode", "blocks")
EPS_DISTANCE = 1e-12  # added to squared distances in Eq. (11): no division by zero


def position_encoding(length: int, d: int, c: float = 1e-4) -> torch.Tensor:
    """The fixed position encoding ``P`` of Eq. (3), ``length x d``.

    With 1-based indices ``i`` (position) and ``j`` (dimension):
    ``P[i, j] = sin(i c^{j/d})`` for even ``j`` and ``cos(i c^{(j-1)/d})`` for odd ``j``, with
    ``c = 10^-4``. Since ``c^{j/d} = 10000^{-j/d}`` this is the usual frequency ladder of Vaswani et
    al.; the paper's 1-based convention shifts the pairs: dimension 1 is ``cos(i)`` alone, and
    dimensions ``(2k, 2k+1)`` share the frequency ``10000^{-2k/d}`` (sin, cos) -- the usual
    0-based encoding pairs ``(2k, 2k+1)`` counted from 0 with ``sin`` first.
    """
    check.integer(length, "length", 1)
    check.integer(d, "d", 1)
    check.real(c, "c", low=0.0, low_open=True)
    i = torch.arange(1, length + 1, dtype=torch.float64)[:, None]
    j = torch.arange(1, d + 1, dtype=torch.float64)[None, :]
    even = j % 2 == 0
    exponent = torch.where(even, j, j - 1) / d
    angle = i * c**exponent
    return torch.where(even, torch.sin(angle), torch.cos(angle)).float()


def horizon(step: float) -> float:
    """End time ``t_T = T r`` with ``T = ceil(1/r)`` steps (Eq. (8)): 1.2 for ``r = 0.4``."""
    check.real(step, "step", low=0.0, high=1.0, low_open=True)
    return math.ceil(1.0 / step - 1e-9) * step


class SelfAttentionBlock(nn.Module):
    """``F(X)``: Encoding with Position (4) followed by the Self-Attention Layer (5).

    ``X`` is ``H + P`` (the caller adds ``P``). ``key_mask`` (``B x M``, True for real tokens)
    keeps padded positions out of every real position's attention.
    """

    def __init__(self, d: int):
        super().__init__()
        check.integer(d, "d", 1)
        self.encode = nn.Linear(d, d)  # W_P, b_P
        self.norm_p = nn.LayerNorm(d)
        self.query = nn.Linear(d, d, bias=False)
        self.key = nn.Linear(d, d, bias=False)
        self.value = nn.Linear(d, d, bias=False)
        self.norm_a = nn.LayerNorm(d)

    def attention(self, x: torch.Tensor, key_mask: torch.Tensor | None) -> torch.Tensor:
        """The score matrix ``A = softmax(x W_Q (x W_K)^T)`` of Eq. (5), ``B x M x M``."""
        scores = self.query(x) @ self.key(x).transpose(-1, -2)
        if key_mask is not None:
            scores = scores.masked_fill(~key_mask[:, None, :], float("-inf"))
        return torch.softmax(scores, dim=-1)

    def encode_position(self, h_plus_p: torch.Tensor) -> torch.Tensor:
        """``x = ReLU(Norm((H + P) W_P + b_P))``, Eq. (4)."""
        return torch.relu(self.norm_p(self.encode(h_plus_p)))

    def forward(self, h_plus_p: torch.Tensor, key_mask: torch.Tensor | None = None) -> torch.Tensor:
        d = self.encode.in_features
        check.tensor(h_plus_p, "h_plus_p", ndim=3, floating=True, shape_hint=f"(batch, M, {d})")
        if h_plus_p.shape[-1] != d:
            raise ValueError(
                f"h_plus_p must have shape (batch, M, {d}), got {tuple(h_plus_p.shape)}"
            )
        if key_mask is not None and (
            not isinstance(key_mask, torch.Tensor)
            or key_mask.dtype != torch.bool
            or key_mask.shape != h_plus_p.shape[:2]
        ):
            raise ValueError(
                f"key_mask must be a bool tensor of shape {tuple(h_plus_p.shape[:2])}, got "
                f"{getattr(key_mask, 'dtype', type(key_mask).__name__)} "
                f"{tuple(getattr(key_mask, 'shape', ()))}"
            )
        x = self.encode_position(h_plus_p)
        return torch.relu(self.norm_a(self.attention(x, key_mask) @ self.value(x)))


class CSAODE(nn.Module):
    """Continuous self-attention model with an ODE solver (CSARK, CSARKF, CSAARK).

    Parameters
    ----------
    vocab_size : int
        Number of token ids; id 0 is padding (its embedding is zero and never trained).
    n_classes : int
    d : int
        Hidden size (number of convolution feature maps).
    embed_dim : int
        Word-embedding size ``d_e``.
    window : int
        ``N`` of the N-gram convolution (2).
    solver : {"rk", "rkf", "ark"}
        RK4 (8), RKF45 (adaptive, ``step`` is the initial step), ARK4 (9)-(10).
    step : float
        ``r`` in ``(0, 1]`` (``(0, 1)`` for ``"ark"``); the horizon is ``ceil(1/r) r``.
    rtol, atol : float
        Tolerances of the adaptive ``"rkf"`` solver.
    architecture : {"ode", "blocks"}
        ``"blocks"`` replaces the ODE by ``n_blocks`` distinct blocks with residual connections,
        ``G <- G + F_k(G + P)`` (Table 2's "w/o ODE" ablations: ``n_blocks`` 1 or 5).
    n_blocks : int
    convolution : bool
        False: Table 2's "w/o conv", ``H^L`` is the embedding matrix (needs ``embed_dim == d``).
    ffn_hidden : bool
        Hidden ``d x d`` ReLU layer in the classifier (14); see the module docstring.
    dropout : float
        On the embeddings and before the classifier.
    weight_norm : bool
        Reparametrise every weight matrix by weight normalization (Salimans and Kingma 2016) after
        its Xavier initialisation, as the paper's training setup does (the function at
        initialisation is unchanged).
    adjoint : bool
        Differentiate the ODE by the continuous adjoint (:func:`dynkit.solve` with ``adjoint=True``,
        solved backward with the same method): memory independent of the number of steps, gradients
        equal to backpropagation through the solver up to its discretisation error. The ReLU in the
        attention block makes the field piecewise smooth, which slows that convergence: the largest
        per-parameter relative gap to backprop measured on a small model is 2.8e-3 (RK4) and 6.5e-3
        (ARK4) at ``step=0.1``, 6e-8 and 1.7e-3 at ``step=0.025``.

    Raises
    ------
    ValueError
        Bad sizes, an unknown ``solver``/``architecture``, ``step`` outside ``(0, 1]``,
        ``solver="ark"`` with ``step >= 1``, ``convolution=False`` with ``embed_dim != d``.
    """

    def __init__(
        self,
        vocab_size: int,
        n_classes: int,
        d: int = 300,
        embed_dim: int = 300,
        window: int = 2,
        solver: str = "ark",
        step: float = 0.2,
        *,
        rtol: float = 1e-3,
        atol: float = 1e-4,
        architecture: str = "ode",
        n_blocks: int = 1,
        convolution: bool = True,
        ffn_hidden: bool = True,
        dropout: float = 0.1,
        adjoint: bool = False,
        weight_norm: bool = False,
    ):
        super().__init__()
        for name, value, low in (
            ("vocab_size", vocab_size, 2),
            ("n_classes", n_classes, 2),
            ("d", d, 1),
            ("embed_dim", embed_dim, 1),
            ("window", window, 1),
            ("n_blocks", n_blocks, 1),
        ):
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
        if solver not in SOLVERS:
            raise ValueError(f"solver must be one of {sorted(SOLVERS)}, got {solver!r}")
        if architecture not in ARCHITECTURES:
            raise ValueError(f"architecture must be one of {ARCHITECTURES}, got {architecture!r}")
        if not isinstance(step, (int, float)) or isinstance(step, bool) or not 0.0 < step <= 1.0:
            raise ValueError(f"step must be a float in (0, 1], got {step!r}")
        if solver == "ark" and architecture == "ode" and step >= 1.0:
            raise ValueError(
                f"step must be < 1 for solver='ark' (the two-step ARK form (9) needs at least "
                f"two steps of r on [0, 1]), got {step!r}; use solver='rk', which the paper "
                f"says is equivalent at r = 1"
            )
        if not convolution and embed_dim != d:
            raise ValueError(
                f"convolution=False needs embed_dim == d (H^L is the embedding matrix), "
                f"got embed_dim={embed_dim}, d={d}"
            )
        check.real(dropout, "dropout", low=0.0, high=1.0, high_open=True)
        check.real(rtol, "rtol", low=0.0, low_open=True)
        check.real(atol, "atol", low=0.0, low_open=True)
        for name, flag in (
            ("convolution", convolution),
            ("ffn_hidden", ffn_hidden),
            ("adjoint", adjoint),
            ("weight_norm", weight_norm),
        ):
            check.boolean(flag, name)
        self.d, self.window, self.solver, self.step = d, window, solver, float(step)
        self.rtol, self.atol, self.adjoint = rtol, atol, adjoint
        self.architecture, self.convolution = architecture, convolution
        self.embedding = nn.Embedding(vocab_size, embed_dim, padding_idx=0)
        self.conv = nn.Linear(window * embed_dim, d) if convolution else None  # W_L, b_L of Eq. (2)
        n = n_blocks if architecture == "blocks" else 1
        self.blocks = nn.ModuleList(SelfAttentionBlock(d) for _ in range(n))
        self.gate = nn.Parameter(torch.full((2,), 0.5))  # W_1, W_2 of Eq. (13)
        self.norm_o = nn.LayerNorm(d)
        hidden = [nn.Linear(d, d), nn.ReLU()] if ffn_hidden else []
        self.classifier = nn.Sequential(nn.Dropout(dropout), *hidden, nn.Linear(d, n_classes))
        self.dropout = nn.Dropout(dropout)
        self.last_stats = None  # SolverStats of the latest forward solve (NFE)
        self._reset_parameters()
        # the paper's training setup: "all other parameters ... normalized by weight normalization"
        if weight_norm:
            for module in self.modules():
                if isinstance(module, nn.Linear):
                    nn.utils.parametrizations.weight_norm(module)

    def _reset_parameters(self):
        # Xavier for every weight matrix, as in the paper's experiments
        for module in self.modules():
            if isinstance(module, nn.Linear):
                nn.init.xavier_uniform_(module.weight)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)

    @property
    def block(self) -> SelfAttentionBlock:
        return self.blocks[0]

    def count_parameters(self, include_embedding: bool = False) -> int:
        """Number of trainable parameters (the paper's ``|θ|`` excludes the word embeddings)."""
        return sum(
            p.numel()
            for name, p in self.named_parameters()
            if p.requires_grad and (include_embedding or not name.startswith("embedding."))
        )

    # -- the pieces --------------------------------------------------------------------------

    def local_representation(self, tokens: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """``H^L`` (Eq. (1)-(2)), ``B x M x d``, zero on rows without a full phrase and on
        padding."""
        h = self.dropout(self.embedding(tokens)) * mask[..., None]
        if self.conv is None:
            return h
        n, (b, m, e) = self.window, h.shape
        padded = torch.cat([h, h.new_zeros(b, n - 1, e)], dim=1)
        phrases = padded.unfold(1, n, 1).transpose(-1, -2).reshape(b, m, n * e)  # R_j, row-major
        local = torch.relu(self.conv(phrases))
        lengths = mask.sum(1, keepdim=True)
        j = torch.arange(m, device=tokens.device)[None, :]
        keep = (j + n <= lengths) | ((j == 0) & (lengths > 0))
        return local * keep[..., None]

    def vector_field(self, mask: torch.Tensor, p: torch.Tensor):
        """``f(t, G) = F(G + P)``, the right-hand side of Eq. (7)."""
        block = self.block
        return lambda t, g: block(g + p, mask)

    def global_representation(
        self, h_local: torch.Tensor, mask: torch.Tensor, times: list[float] | None = None
    ):
        """``H^G = G(t_T)``; with ``times`` also the states ``G(t)`` at those times
        (``len x B x M x d``)."""
        p = position_encoding(h_local.shape[1], self.d).to(h_local)
        if self.architecture == "blocks":
            g = h_local
            for block in self.blocks:
                g = g + block(g + p, mask)
            return g, None
        t_end = horizon(self.step)
        t = [0.0, t_end] if times is None else sorted(set(times) | {0.0, t_end})
        # rkf45 is adaptive: the step is only its first one (step_size= would be warned about as
        # reinterpreted)
        options = (
            dict(rtol=self.rtol, atol=self.atol, first_step=self.step)
            if self.solver == "rkf"
            else dict(step_size=self.step)
        )
        if self.adjoint and torch.is_grad_enabled():
            options.update(adjoint=True, adjoint_params=tuple(self.block.parameters()))
        sol = solve(self.vector_field(mask, p), h_local, t, method=SOLVERS[self.solver], **options)
        self.last_stats = sol.stats
        return sol.ys[-1], (sol.ts, sol.ys)

    def fuse(
        self, h_local: torch.Tensor, h_global: torch.Tensor, mask: torch.Tensor
    ) -> torch.Tensor:
        """Euclidean attention (11)-(12) and the gate (13): ``H^O``, ``B x M x d``."""
        scores = self.euclidean_attention(h_local, h_global, mask)
        h_e = scores @ h_local
        w = self.gate / self.gate.abs().sum()
        return self.norm_o(w[0] * h_local + w[1] * h_e)

    def euclidean_attention(
        self, h_local: torch.Tensor, h_global: torch.Tensor, mask: torch.Tensor
    ) -> torch.Tensor:
        """``E[g, l] ∝ 1/||h^G_g - h^L_l||`` over the sentence's local rows ``l`` (Eq. (11)),
        rows summing to 1."""
        diff = h_global[:, :, None, :] - h_local[:, None, :, :]
        inverse = torch.rsqrt((diff * diff).sum(-1) + EPS_DISTANCE) * mask[:, None, :]
        return inverse / inverse.sum(-1, keepdim=True)

    def check_tokens(self, tokens: torch.Tensor) -> None:
        """``tokens`` must be a ``B x M`` integer tensor of ids in ``[0, vocab_size)``."""
        check.tensor(tokens, "tokens", ndim=2, floating=False, shape_hint="(batch, length)")
        vocab = self.embedding.num_embeddings
        if tokens.numel() and (int(tokens.min()) < 0 or int(tokens.max()) >= vocab):
            raise ValueError(
                f"tokens must be ids in [0, {vocab}) (vocab_size), got values in "
                f"[{int(tokens.min())}, {int(tokens.max())}]"
            )

    def forward(self, tokens: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Class scores ``o`` (Eq. (14)) for ``tokens`` (``B x M`` ids, 0 = padding)."""
        self.check_tokens(tokens)
        if mask is not None and (not isinstance(mask, torch.Tensor) or mask.shape != tokens.shape):
            raise ValueError(
                f"mask must be a tensor of the shape of tokens {tuple(tokens.shape)}, "
                f"got "
                f"{tuple(mask.shape) if isinstance(mask, torch.Tensor) else type(mask).__name__}"
            )
        mask = tokens != 0 if mask is None else mask.bool()
        if not bool(mask.any(1).all()):
            raise ValueError(
                "every sentence needs at least one token (a row of tokens is all padding)"
            )
        h_local = self.local_representation(tokens, mask)
        h_global, _ = self.global_representation(h_local, mask)
        h_out = self.fuse(h_local, h_global, mask)
        pooled = h_out.masked_fill(~mask[..., None], float("-inf")).amax(1)
        return self.classifier(pooled)

    @torch.no_grad()
    def attention_over_time(
        self, tokens: torch.Tensor, times: list[float]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Self-attention score matrices ``A(t)`` (Eq. (5)) of the ODE state at ``times`` (Fig. 4).

        Returns ``(ts, A)`` with ``A[i]`` the ``B x M x M`` scores at ``ts[i]`` (``ts`` contains 0
        and the horizon as well). Intermediate times are on the step grid or interpolated by the
        solver.
        """
        if self.architecture != "ode":
            raise ValueError("attention_over_time needs architecture='ode'")
        self.check_tokens(tokens)
        times = list(times)
        if not all(
            isinstance(t, (int, float)) and not isinstance(t, bool) and 0 <= t <= horizon(self.step)
            for t in times
        ):
            raise ValueError(
                f"times must be numbers in [0, {horizon(self.step)}] (the horizon), got "
                f"{times!r:.200}"
            )
        mask = tokens != 0
        h_local = self.local_representation(tokens, mask)
        ts, ys = self.global_representation(h_local, mask, times=list(times))[1]
        p = position_encoding(h_local.shape[1], self.d).to(h_local)
        scores = [self.block.attention(self.block.encode_position(g + p), mask) for g in ys]
        return ts, torch.stack(scores)


def expected_nfe(solver: str, step: float) -> int:
    """NFE of one forward solve with a fixed-step solver: ``4T`` for RK4, ``3T + 2`` for ARK4 (T >
    1).

    ARK4's first step is an RK4 step (4 evaluations); the ARK chain at ``t_0`` reuses RK4's first
    two stages and needs one more; each later step costs 3 (``dynkit.solvers.ark``). The ratio
    ``(3T + 2) / 4T`` tends to 3/4.
    """
    if solver not in ("rk", "ark"):
        raise ValueError(f"solver must be 'rk' or 'ark' (fixed-step), got {solver!r}")
    check.real(step, "step", low=0.0, high=1.0, low_open=True)
    n_steps = round(horizon(step) / step)
    if solver == "rk" or n_steps == 1:
        return _solvers.METHODS["rk4"].new_evaluations_per_step * n_steps
    ark = _solvers.ARK4
    return 4 + (ark.stages - ark.starter_reuse()) + ark.stages * (n_steps - 1)
