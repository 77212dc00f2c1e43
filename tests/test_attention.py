"""Momentum attention: parallel form (13)/(14) vs recurrent form (12) vs a direct float64
reference."""

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from dynkit.models import attention as att
from dynkit.models.attention import (
    adaptive_momentum,
    linear_attention,
    momentum_attention,
    momentum_attention_recurrent,
    momentum_attention_step,
    softmax_attention,
)

torch.set_num_threads(1)


def qkv(n, m=None, b=2, h=2, d=8, dv=5, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    m = n if m is None else m
    return (
        torch.randn(b, h, n, d, generator=g, dtype=dtype),
        torch.randn(b, h, m, d, generator=g, dtype=dtype),
        torch.randn(b, h, m, dv, generator=g, dtype=dtype),
    )


def direct(q, k, v, beta, gamma, causal, eps=1e-6):
    """Eq. (13)/(14) written out as an N x M weighted kernel matrix, in float64 (O(N^2),
    independent code)."""
    q, k, v = (x.double() for x in (q, k, v))
    fq, fk = F.elu(q) + 1, F.elu(k) + 1
    n, m = q.shape[2], k.shape[2]
    i = torch.arange(1, n + 1, dtype=torch.float64)[:, None]
    j = torch.arange(1, m + 1, dtype=torch.float64)[None, :]
    if causal:
        seen = (j <= i).double()
        weight = seen * (1 - beta ** (i - j + 1).clamp(min=0)) / (1 - beta)
    else:
        seen = torch.ones(n, m, dtype=torch.float64)
        weight = ((1 - beta ** (m - j + 1)) / (1 - beta)).expand(n, m)
    kernel = fq @ fk.transpose(-1, -2)
    return gamma * (kernel * weight) @ v / ((kernel * seen).sum(-1, keepdim=True) + eps)


def rel(a, b):
    """max |a - b| / max |b|: relative to the output's scale (single entries may be near 0)."""
    return float((a.double() - b.double()).abs().max() / b.double().abs().max())


# float32 evaluation of sums of up to a few hundred O(1) terms: errors ~1e-7 relative; 1e-5 leaves
# margin and would still catch an off-by-one in the weights (a relative change ~beta^N or 1/N, far
# above 1e-5).
@settings(max_examples=25, deadline=None)
@given(
    beta=st.sampled_from([0.0, 0.1, 0.5, 0.9, 0.99, 0.999]),
    n=st.integers(1, 150),
    chunk=st.integers(1, 70),
    gamma=st.floats(0.1, 2.0),
    causal=st.booleans(),
)
def test_parallel_form_equals_closed_form(beta, n, chunk, gamma, causal):
    q, k, v = qkv(n, seed=n)
    out = momentum_attention(q, k, v, beta, gamma, causal=causal, chunk=chunk)
    assert rel(out, direct(q, k, v, beta, gamma, causal)) < 1e-5


@pytest.mark.parametrize("beta", [0.0, 0.5, 0.9, 0.999, 0.9999])
@pytest.mark.parametrize("n", [1, 100, 4096])
def test_parallel_and_recurrent_forms_agree_in_float32(beta, n):
    # The contract: agreement to 1e-5 relative in float32 up to N = 4096.
    q, k, v = qkv(n, b=1, h=2, d=16, dv=16, seed=n)
    parallel = momentum_attention(q, k, v, beta, 0.6)
    recurrent = momentum_attention_recurrent(q, k, v, beta, 0.6)
    assert parallel.dtype == recurrent.dtype == torch.float32
    assert rel(parallel, recurrent) < 1e-5


def test_long_sequence_does_not_overflow():
    # beta^{-j} tricks overflow float32 for beta = 0.5 beyond j ~ 128; the chunked form has only
    # beta^{n>=0}.
    q, k, v = qkv(8192, b=1, h=1, seed=3)
    out = momentum_attention(q, k, v, 0.5)
    assert torch.isfinite(out).all()
    # the last position against the float64 closed form (13) restricted to it
    i = torch.arange(8192)
    fq, fk = F.elu(q.double()) + 1, F.elu(k.double()) + 1
    last = 8191
    w = torch.where(i <= last, (1 - 0.5 ** (last - i + 1.0)) / 0.5, torch.zeros(()).double())
    num = torch.einsum("d,jd,j,je->e", fq[0, 0, last], fk[0, 0], w, v[0, 0].double())
    den = fq[0, 0, last] @ fk[0, 0].sum(0) + 1e-6
    assert rel(out[0, 0, last], num / den) < 1e-5


@pytest.mark.parametrize("causal", [True, False])
def test_gradients_of_both_forms_agree(causal):
    q, k, v = (x.requires_grad_() for x in qkv(37, dtype=torch.float64))
    grads = []
    for form in (
        lambda: momentum_attention(q, k, v, 0.8, 0.7, causal=causal, chunk=8),
        lambda: momentum_attention_recurrent(q, k, v, 0.8, 0.7, causal=causal),
    ):
        (form() ** 2).sum().backward()
        grads.append([x.grad.clone() for x in (q, k, v)])
        for x in (q, k, v):
            x.grad = None
    for a, b in zip(*grads):
        torch.testing.assert_close(
            a, b, rtol=1e-10, atol=1e-12
        )  # float64, same function: rounding only


def test_non_causal_with_different_query_and_key_lengths():
    q, k, v = qkv(7, m=19)
    out = momentum_attention(q, k, v, 0.7, 1.3, causal=False)
    torch.testing.assert_close(out.double(), direct(q, k, v, 0.7, 1.3, False), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(
        out, momentum_attention_recurrent(q, k, v, 0.7, 1.3, causal=False), rtol=1e-5, atol=1e-6
    )


def test_step_api_reproduces_recurrent_form():
    q, k, v = qkv(20)
    state, outs = None, []
    for i in range(20):
        out, state = momentum_attention_step(q[:, :, i], k[:, :, i], v[:, :, i], state, 0.6, 0.9)
        outs.append(out)
    assert len(state) == 3 and state[1].shape == (
        2,
        2,
        8,
        5,
    )  # O(1) state: (m, s, z), no N dimension
    torch.testing.assert_close(
        torch.stack(outs, 2), momentum_attention_recurrent(q, k, v, 0.6, 0.9)
    )


def test_feature_map_none_uses_inputs_as_features():
    q, k, v = qkv(30)
    phi = lambda x: F.elu(x) + 1  # noqa: E731
    a = momentum_attention(phi(q), phi(k), v, 0.3, feature_map=None)
    torch.testing.assert_close(a, momentum_attention(q, k, v, 0.3))
    torch.testing.assert_close(a, momentum_attention(q, k, v, 0.3, feature_map=phi))


def test_linear_attention_is_eq7_and_momentum_with_beta_zero():
    q, k, v = qkv(90)
    fq, fk = F.elu(q) + 1, F.elu(k) + 1
    s = torch.einsum("bhjd,bhje->bhjde", fk, v).cumsum(2)  # Eq. (7): states s_i, z_i explicitly
    z = fk.cumsum(2)
    ref = torch.einsum("bhid,bhide->bhie", fq, s) / (
        torch.einsum("bhid,bhid->bhi", fq, z)[..., None] + 1e-6
    )
    torch.testing.assert_close(linear_attention(q, k, v), ref, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(momentum_attention(q, k, v, 0.0, 1.0), ref, rtol=1e-5, atol=1e-6)
    ref_nc = torch.einsum("bhid,bhde->bhie", fq, s[:, :, -1]) / (fq @ z[:, :, -1, :, None] + 1e-6)
    torch.testing.assert_close(
        linear_attention(q, k, v, causal=False), ref_nc, rtol=1e-5, atol=1e-6
    )


@pytest.mark.parametrize("causal", [True, False])
def test_softmax_attention_matches_torch(causal):
    q, k, v = qkv(33)
    torch.testing.assert_close(
        softmax_attention(q, k, v, causal=causal),
        F.scaled_dot_product_attention(q, k, v, is_causal=causal),
        rtol=1e-5,
        atol=1e-6,
    )


def test_causality_of_parallel_form():
    q, k, v = qkv(50)
    out = momentum_attention(q, k, v, 0.9, chunk=16)
    k2, v2 = k.clone(), v.clone()
    k2[:, :, 30:] += 1.0
    v2[:, :, 30:] -= 2.0
    out2 = momentum_attention(q, k2, v2, 0.9, chunk=16)
    torch.testing.assert_close(out[:, :, :30], out2[:, :, :30], rtol=0, atol=0)
    assert not torch.allclose(out[:, :, 30:], out2[:, :, 30:])


@pytest.mark.parametrize("beta", [1.0, 1.5, -0.1, float("nan"), float("inf"), "0.5", True])
def test_bad_beta_raises(beta):
    q, k, v = qkv(4)
    for fn in (momentum_attention, momentum_attention_recurrent):
        with pytest.raises(ValueError, match="beta"):
            fn(q, k, v, beta)


def test_bad_inputs_raise_before_any_work(monkeypatch):
    def boom(*args, **kwargs):
        raise AssertionError("computation started before validation")

    monkeypatch.setattr(att, "_momentum_core", boom)
    q, k, v = qkv(6)
    cases = [
        ((q, k, v, 0.5), {"gamma": 0.0}, "gamma"),
        ((q, k, v, 0.5), {"gamma": float("nan")}, "gamma"),
        ((q[0], k, v, 0.5), {}, "q must have 4 dimensions"),
        ((q, k[..., :3], v, 0.5), {}, "feature dimension"),
        ((q, k, v[:, :, :4], 0.5), {}, "same sequence length"),
        ((q[:, :, :5], k, v, 0.5), {}, "causal"),
        ((q, k, v[:1], 0.5), {}, "batch, heads"),
        ((q, k.double(), v, 0.5), {}, "dtype"),
        ((q, k, v, 0.5), {"feature_map": "relu"}, "feature_map"),
        ((q, k, v, 0.5), {"chunk": 0}, "chunk"),
    ]
    qn = q.clone()
    qn[0, 0, 2, 1] = float("nan")
    vi = v.clone()
    vi[1, 1, 0, 0] = float("inf")
    cases += [((qn, k, v, 0.5), {}, "q must be finite"), ((q, k, vi, 0.5), {}, "v must be finite")]
    for args, kwargs, message in cases:
        with pytest.raises(ValueError, match=message):
            momentum_attention(*args, **kwargs)


def test_adaptive_momentum_recovers_optimal_heavy_ball_momentum():
    # Prop. 3: along heavy-ball iterates on a quadratic, ||grad_k - grad_{k-1}|| / ||x_k - x_{k-1}||
    # -> nu (smallest eigenvalue), so Eq. (17) tends to Theorem 2's optimum (1 - sqrt(gamma nu))^2.
    torch.manual_seed(0)
    eig = torch.tensor([0.05, 0.3, 0.7, 1.0], dtype=torch.float64)
    grad = lambda x: eig * x  # noqa: E731  (A = diag(eig), b = 0)
    gamma, beta = 1.0, 0.5
    x_prev = torch.ones(4, dtype=torch.float64)
    x = x_prev - gamma * grad(x_prev)
    for _ in range(300):
        x, x_prev = x - gamma * grad(x) + beta * (x - x_prev), x
    got = adaptive_momentum(grad(x), grad(x_prev), step=gamma, x=x, x_prev=x_prev)
    assert abs(float(got) - (1 - math.sqrt(gamma * 0.05)) ** 2) < 1e-6  # limit reached to ~beta^300


def test_adaptive_momentum_eq18_and_clamp():
    g_prev = torch.tensor([3.0, 4.0])
    # ||g - g_prev|| / ||g_prev|| = 0.25 / 5 = 0.05 -> (1 - sqrt(0.05))^2
    got = adaptive_momentum(g_prev + torch.tensor([0.15, 0.2]), g_prev)
    assert abs(float(got) - (1 - math.sqrt(0.05)) ** 2) < 1e-6
    # identical gradients: ratio 0 -> (1 - 0)^2 = 1, projected to 1 - delta
    assert float(adaptive_momentum(g_prev, g_prev, delta=1e-3)) == pytest.approx(1 - 1e-3)
    # per-row norms with dim
    rows = adaptive_momentum(
        torch.stack([g_prev, 2 * g_prev]), torch.stack([g_prev, g_prev]), dim=1
    )
    assert rows.shape == (2,) and rows[1] == 0.0 and rows[0] == pytest.approx(1 - 1e-3)
    with pytest.raises(ValueError, match="delta"):
        adaptive_momentum(g_prev, g_prev, delta=0.0)
    with pytest.raises(ValueError, match="Eq. \\(17\\)"):
        adaptive_momentum(g_prev, g_prev, x=g_prev)
