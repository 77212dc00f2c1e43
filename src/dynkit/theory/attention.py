"""Momentum attention of the Momentum Transformer: the recurrence (12) and the closed forms (13)
(causal) and (14) (non-causal) compute the same outputs; the momentum connection (15) is the
heavy-ball method (9)/(10) run over the layers.

The closed forms weight ``phi(k_j) v_j^T`` by ``gamma (1 - beta**(i - j + 1)) / (1 - beta)`` (``i``
the query's position for (13), ``N`` for (14)). Batched over any leading axes of ``q, k, v``.
"""

from __future__ import annotations

import numpy as np

from ._core import CheckResult, as_real_array, as_scalar_batch, combine, verdict

__all__ = [
    "check_momentum_attention",
    "check_attention_reweighting",
    "momentum_attention_recurrent",
    "momentum_attention_closed",
    "check_linear_attention_rnn",
    "elu_feature_map",
    "momentum_connection_stack",
    "check_momentum_connection",
    "CONNECTION_READINGS",
]

# Both sides sum the same O(N) positive terms in a different order; float64 rounding is
# ~N * eps ~ 1e-13 for N <= 64, so 1e-10 (relative) separates rounding from a wrong weight.
ATTENTION_TOL = 1e-10


def elu_feature_map(x: np.ndarray) -> np.ndarray:
    """``phi(x) = elu(x) + 1 > 0``, the feature map of linear transformers (Katharopoulos et
    al.)."""
    return np.where(x > 0, x + 1, np.exp(np.minimum(x, 0)))


def _inputs(q, k, v, beta, gamma, context="Momentum Transformer (12)-(14)"):
    q = as_real_array("q", q, context=context)
    k = as_real_array("k", k, context=context)
    v = as_real_array("v", v, context=context)
    if q.ndim < 2 or q.shape != k.shape or k.shape[:-1] != v.shape[:-1] or q.shape[-2] == 0:
        raise ValueError(
            f"q, k must have the same shape (..., N, d) and v shape (..., N, e) "
            f"({context}); got {q.shape}, {k.shape}, {v.shape}"
        )
    beta = float(as_scalar_batch("beta", beta, context=context, low=0.0, high=1.0, high_open=True))
    gamma = float(as_scalar_batch("gamma", gamma, context=context, low=0.0, low_open=True))
    return q, k, v, beta, gamma


def momentum_attention_recurrent(q, k, v, beta: float, gamma: float, phi=elu_feature_map):
    """Run (12) over the sequence axis (-2). Returns
    ``(causal outputs, final states (s_N, z_N))``."""
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
        out[..., i, :] = (
            np.einsum("...a,...ab->...b", fq[..., i, :], s)
            / np.einsum("...a,...a->...", fq[..., i, :], z)[..., None]
        )
    return out, (s, z)


def _weights(N: int, beta: float, causal: bool) -> np.ndarray:
    i = np.arange(N)[:, None]
    j = np.arange(N)[None, :]
    last = i if causal else np.full_like(i, N - 1)
    w = (1 - beta ** np.maximum(last - j + 1, 0)) / (1 - beta)
    return np.where(j <= last, w, 0.0)


def momentum_attention_closed(
    q, k, v, beta: float, gamma: float, *, causal: bool = True, phi=elu_feature_map
) -> np.ndarray:
    """(13) (``causal=True``) or (14):
    ``gamma phi(q_i)^T sum_j w_ij phi(k_j) v_j^T / phi(q_i)^T z``."""
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
    rec_nc = (
        np.einsum("...ia,...ab->...ib", fq, s) / np.einsum("...ia,...a->...i", fq, z)[..., None]
    )
    scale = 1 + np.abs(rec).max(axis=(-1, -2))
    causal = (
        np.abs(momentum_attention_closed(q, k, v, beta, gamma) - rec).max(axis=(-1, -2)) / scale
    )
    scale_nc = 1 + np.abs(rec_nc).max(axis=(-1, -2))
    noncausal = (
        np.abs(momentum_attention_closed(q, k, v, beta, gamma, causal=False) - rec_nc).max(
            axis=(-1, -2)
        )
        / scale_nc
    )
    instances = dict(q=q, k=k, v=v)
    return combine(
        "momentum_attention",
        [
            verdict(
                "momentum_attention.causal",
                causal,
                ATTENTION_TOL,
                instances,
                "(13) vs recurrence (12), max relative difference",
                beta=beta,
                gamma=gamma,
            ),
            verdict(
                "momentum_attention.noncausal",
                noncausal,
                ATTENTION_TOL,
                instances,
                "(14) vs (12)'s final states, max relative difference",
                beta=beta,
                gamma=gamma,
            ),
        ],
    )


# ------------------------------------------------------------------------------ linear attention
# (7) <=> (8)


def _linear_attention_closed(fq: np.ndarray, fk: np.ndarray, v: np.ndarray) -> np.ndarray:
    """(7): ``phi(q_i)^T sum_{j<=i} phi(k_j) v_j^T / phi(q_i)^T sum_{j<=i} phi(k_j)`` with a
    causal mask."""
    N = fq.shape[-2]
    scores = np.einsum("...ia,...ja->...ij", fq, fk) * np.tril(np.ones((N, N)))
    return np.einsum("...ij,...jb->...ib", scores, v) / scores.sum(axis=-1)[..., None]


def _linear_attention_rnn(
    fq: np.ndarray, fk: np.ndarray, v: np.ndarray, *, z_weight: float = 1.0
) -> np.ndarray:
    """(8): ``s_i = s_{i-1} + phi(k_i) v_i^T, z_i = z_{i-1} + phi(k_i)``, ``s_0 = z_0 = 0``, step
    by step (``z_weight`` scales the z update: anything but 1 plants a violation)."""
    batch, N = fq.shape[:-2], fq.shape[-2]
    s = np.zeros(batch + (fk.shape[-1], v.shape[-1]))
    z = np.zeros(batch + (fk.shape[-1],))
    out = np.empty(batch + (N, v.shape[-1]))
    for i in range(N):
        s = s + fk[..., i, :, None] * v[..., i, None, :]
        z = z + z_weight * fk[..., i, :]
        out[..., i, :] = (
            np.einsum("...a,...ab->...b", fq[..., i, :], s)
            / np.einsum("...a,...a->...", fq[..., i, :], z)[..., None]
        )
    return out


def check_linear_attention_rnn(q, k, v, *, z_weight: float = 1.0) -> CheckResult:
    """Momentum Transformer (7) <=> (8) (and the review's (70) <=> (71)): causal linear attention in
    closed form equals its RNN form at every position (feature map elu + 1), to relative
    ``ATTENTION_TOL``.

    Range: any real q, k (..., N, d), v (..., N, e), N >= 1. ``z_weight`` != 1 plants a wrong
    normaliser."""
    q, k, v, _, _ = _inputs(q, k, v, 0.0, 1.0, context="Momentum Transformer (7)-(8)")
    z_weight = float(
        as_scalar_batch(
            "z_weight", z_weight, context="Momentum Transformer (7)-(8)", low=0.0, low_open=True
        )
    )
    fq, fk = elu_feature_map(q), elu_feature_map(k)
    closed = _linear_attention_closed(fq, fk, v)
    rnn = _linear_attention_rnn(fq, fk, v, z_weight=z_weight)
    gap = np.abs(closed - rnn).max(axis=(-1, -2)) / (1 + np.abs(closed).max(axis=(-1, -2)))
    return verdict(
        "linear_attention_rnn",
        gap,
        ATTENTION_TOL,
        dict(q=q, k=k, v=v),
        "(8) RNN form vs (7) causal closed form, max relative difference",
        sides={"(7) last output": closed[..., -1, :], "(8) last output": rnn[..., -1, :]},
    )


# ------------------------------------------------------------------------------- momentum
# connection (15)

CONNECTION_READINGS = ("previous_input", "layer_applied", "previous_output")
"""Readings of ``T_{l-1}(X)`` in (15), X the input of layer l: the input of layer l - 1 (heavy
ball's x^{k-1}), layer l - 1 applied to X itself, or the output of layer l - 1 (which is X)."""

# The stack and the heavy-ball recursion add the same O(L) terms in another order; float64 rounding
# is ~L * eps * (growth) ~ 1e-13 for L <= 24 layers, so 1e-10 (relative) separates rounding from
# another rule.
CONNECTION_TOL = 1e-10


def _layer_attention(X: np.ndarray, W: np.ndarray) -> np.ndarray:
    """V^ of one layer: non-causal linear attention (6) of X (..., N, d) with W (..., 3, d, d) =
    (W_Q, W_K, W_V)."""
    q, k, v = (np.einsum("...nd,...ed->...ne", X, W[..., i, :, :]) for i in range(3))
    return momentum_attention_closed(q, k, v, 0.0, 1.0, causal=False)


def _connection_inputs(X, W, beta_tilde, reading, context="Momentum Transformer (15)"):
    if reading not in CONNECTION_READINGS:
        raise ValueError(
            f"reading must be one of {CONNECTION_READINGS} ({context}); got {reading!r}"
        )
    X = as_real_array("X", X, context=context)
    W = as_real_array("W", W, context=context)
    if (
        X.ndim < 2
        or W.ndim < 4
        or W.shape[-3:] != (3, X.shape[-1], X.shape[-1])
        or W.shape[:-4] != X.shape[:-2]
        or W.shape[-4] == 0
    ):
        raise ValueError(
            f"X must have shape (..., N, d) and W shape (..., L, 3, d, d) with the same "
            f"leading axes, "
            f"L >= 1 ({context}); got X {X.shape}, W {W.shape}"
        )
    beta_tilde = float(
        as_scalar_batch(
            "beta_tilde", beta_tilde, context=context, low=0.0, high=1.0, high_open=True
        )
    )
    return X, W, beta_tilde


def momentum_connection_stack(
    X, W, beta_tilde: float, reading: str = "previous_input"
) -> np.ndarray:
    """Run L layers of (15) with f_l = identity from the input ``X`` (..., N, d); ``W`` (..., L,
    3, d, d) holds each layer's (W_Q, W_K, W_V). ``reading`` (one of :data:`CONNECTION_READINGS`)
    says what ``T_{l-1}(X)`` is; the first layer has no predecessor and uses ``T_0(X) := X`` (no
    momentum yet, as m_0 = 0 in (12)). Returns the inputs of layers 1..L+1, shape (..., L + 1, N,
    d) (the last is the stack's output)."""
    X, W, beta_tilde = _connection_inputs(X, W, beta_tilde, reading)
    states, previous = [X], X
    for layer in range(W.shape[-4]):
        V = _layer_attention(X, W[..., layer, :, :, :])
        if reading == "previous_input" or layer == 0:
            before = previous
        elif reading == "layer_applied":  # T_{l-1}(X) = X + V^_{l-1}(X)
            before = X + _layer_attention(X, W[..., layer - 1, :, :, :])
        else:  # the output of layer l - 1 is X itself
            before = X
        previous, X = X, V + X + beta_tilde * (X - before)
        states.append(X)
    return np.stack(states, axis=-3)


def check_momentum_connection(
    X, W, beta_tilde: float, reading: str = "previous_input"
) -> CheckResult:
    """Momentum Transformer (15) is the heavy-ball method over the layers: the stack of L layers of
    (15) (f_l = identity, ``T_{l-1}(X)`` read as ``reading``) equals, at every layer, (i) the
    heavy-ball recursion in its momentum form (10), ``m^{k+1} = beta~ m^k + grad_k``,
    ``x^{k+1} = x^k - gamma m^{k+1}`` with ``gamma grad_k := -V^_k(x^k)`` and ``m^0 = 0``, and (ii)
    its unrolled form ``x^{k+1} = x^1 + sum_{j<=k} (1 - beta~^{k-j+1}) / (1 - beta~) V^_j(x^j)``
    (the reweighting of (13)), both computed here from their own recursions, to relative
    ``CONNECTION_TOL``. ``details['other_readings']`` holds the distance from (i) of the two other
    readings of ``T_{l-1}(X)``.

    Parameters
    ----------
    X : array (..., N, d)
        The input of the first layer.
    W : array (..., L, 3, d, d)
        Per-layer attention weights (W_Q, W_K, W_V) of (2).
    beta_tilde : float in [0, 1)
    reading : str
        One of :data:`CONNECTION_READINGS`.
    """
    X, W, beta_tilde = _connection_inputs(X, W, beta_tilde, reading)
    L = W.shape[-4]

    def heavy_ball():  # (10) with gamma = 1: its own state m, never the stack's differences
        x, m, xs, steps = X, np.zeros_like(X), [X], []
        for layer in range(L):
            step = _layer_attention(x, W[..., layer, :, :, :])  # = -gamma grad f(x^k)
            m = beta_tilde * m - step
            x = x - m
            xs.append(x)
            steps.append(step)
        return np.stack(xs, axis=-3), np.stack(steps, axis=-3)

    hb, steps = heavy_ball()
    k = np.arange(1, L + 1)[:, None]
    j = np.arange(1, L + 1)[None, :]
    weights = np.where(j <= k, (1 - beta_tilde ** np.maximum(k - j + 1, 0)) / (1 - beta_tilde), 0.0)
    unrolled = np.concatenate(
        [X[..., None, :, :], X[..., None, :, :] + np.einsum("kj,...jnd->...knd", weights, steps)],
        axis=-3,
    )
    scale = 1 + np.abs(hb).max(axis=(-1, -2, -3))

    def distance(a, b):
        return np.abs(a - b).max(axis=(-1, -2, -3)) / scale

    stack = momentum_connection_stack(X, W, beta_tilde, reading)
    others = {
        r: float(distance(momentum_connection_stack(X, W, beta_tilde, r), hb).max())
        for r in CONNECTION_READINGS
        if r != reading
    }
    instances = dict(X=X, W=W)
    return combine(
        "momentum_connection",
        [
            verdict(
                "momentum_connection.heavy_ball",
                distance(stack, hb),
                CONNECTION_TOL,
                instances,
                f"(15) (T_(l-1)(X) as {reading}) vs heavy ball (10), max relative difference "
                f"over layers",
                sides={"(15)": stack[..., -1, :, :], "heavy ball (10)": hb[..., -1, :, :]},
                beta_tilde=beta_tilde,
                reading=reading,
                other_readings=others,
            ),
            verdict(
                "momentum_connection.unrolled",
                distance(stack, unrolled),
                CONNECTION_TOL,
                instances,
                "(15) vs the unrolled weighted sum of the layers' V^, max relative difference",
                beta_tilde=beta_tilde,
                reading=reading,
            ),
        ],
    )


def check_attention_reweighting(beta, N: int, gamma: float = 1.0) -> CheckResult:
    """Momentum Transformer Remark 1 / review Remark 7: momentum reweights the terms phi(k_j) v_j^T
    of linear attention, "opposite to that used for reweighting the local attention" (which weighs
    near tokens more). Read as: in the causal form (13)/(73) the weight of phi(k_j) v_j^T in the
    i-th output grows with the distance i - j. Measured from the recurrence (12)/(72) itself: with a
    unit impulse g_j = 1 at one position j (scalar keys and values, the recurrences are linear), s_N
    / gamma is the weight at distance N - j, for every j. Residual: the largest decrease from one
    distance to the next (relative to the largest weight), or 1 when the farthest weight does not
    exceed the nearest one (no growth at all); tolerance 1e-13 (rounding of the recurrence).

    Range: beta in (0, 1), N >= 2, gamma > 0. beta = 0 (equal weights: plain linear attention) or
    beta < 0 (alternating weights) plant violations."""
    context = "Momentum Transformer Remark 1 / review Remark 7"
    beta = np.atleast_1d(
        as_scalar_batch("beta", beta, context=context, high=1.0, high_open=True)
    ).reshape(-1)
    if isinstance(N, bool) or not isinstance(N, (int, np.integer)) or N < 2:
        raise ValueError(f"N must be an integer >= 2 ({context}); got {N!r}")
    gamma = float(as_scalar_batch("gamma", gamma, context=context, low=0.0, low_open=True))
    impulses = np.eye(N)  # row j: g = e_j
    m = np.zeros((beta.size, N))
    s = np.zeros((beta.size, N))
    for i in range(N):  # (12)/(72): m_i = beta m_{i-1} - g_i, s_i = s_{i-1} - gamma m_i
        m = beta[:, None] * m - impulses[:, i][None, :]
        s = s - gamma * m
    by_distance = (s / gamma)[
        :, ::-1
    ]  # column d: the impulse at j = N - 1 - d, distance d from the last token
    drops = np.maximum(by_distance[:, :-1] - by_distance[:, 1:], 0).max(axis=1) / np.abs(
        by_distance
    ).max(axis=1)
    no_growth = by_distance[:, -1] <= by_distance[:, 0]
    residual = np.where(no_growth, 1.0, drops)
    return verdict(
        "attention_reweighting",
        residual,
        1e-13,
        dict(beta=beta),
        f"weight of phi(k_j) v_j^T in (13) against the distance i - j (N = {N}): largest decrease",
        sides={
            "weight at distance 0": by_distance[:, 0],
            f"weight at distance {N - 1}": by_distance[:, -1],
        },
    )
