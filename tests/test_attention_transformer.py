"""The small transformer: causality of the decoder, momentum connection (15), adaptive momentum
(18)."""

import pytest
import torch

from dynkit.models.transformer import MomentumTransformer, TransformerLayer
from dynkit.tasks.sequences import copy_task

torch.set_num_threads(1)
CONFIGS = [
    ("softmax", "residual"),
    ("linear", "residual"),
    ("momentum", "residual"),
    ("momentum", "momentum"),
    ("momentum", "adaptive"),
]


@pytest.mark.parametrize("attention, connection", CONFIGS)
def test_decoder_is_causal_and_trains(attention, connection):
    torch.manual_seed(0)
    data = copy_task(16, max_length=24, seed=0)
    model = MomentumTransformer(
        data.vocab_size,
        24,
        d_model=16,
        heads=2,
        layers=3,
        d_ff=32,
        attention=attention,
        connection=connection,
    ).double()
    tokens = data.inputs
    out = model(tokens)
    assert out.shape == (16, 23, data.vocab_size)
    changed = tokens.clone()
    changed[:, 12:] = (changed[:, 12:] + 3) % data.vocab_size
    out2 = model(changed)
    # float64: the prefix must be identical up to rounding from a different summation order
    torch.testing.assert_close(out[:, :12], out2[:, :12], rtol=1e-10, atol=1e-10)
    assert not torch.allclose(out[:, 12:], out2[:, 12:])
    loss = torch.nn.functional.cross_entropy(out[data.mask], data.targets[data.mask])
    loss.backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters())


def test_encoder_is_not_causal():
    torch.manual_seed(0)
    model = MomentumTransformer(12, 10, d_model=16, heads=2, causal=False)
    tokens = torch.randint(0, 12, (2, 10))
    changed = tokens.clone()
    changed[:, -1] = (changed[:, -1] + 1) % 12
    assert not torch.allclose(model(tokens)[:, 0], model(changed)[:, 0])


def test_momentum_connection_is_heavy_ball_step():
    torch.manual_seed(0)
    layer = TransformerLayer(
        8, 2, 16, "momentum", connection="momentum", connection_beta=0.7, connection_step=0.9
    ).double()
    x, x_prev = torch.randn(2, 5, 8, dtype=torch.float64), torch.randn(2, 5, 8, dtype=torch.float64)
    out, x_in, a = layer(x, x_prev, None)
    y = x + 0.9 * a + 0.7 * (x - x_prev)  # Eq. (15) with V_hat scaled by the connection's step
    torch.testing.assert_close(out, y + layer.ff(layer.norm2(y)))
    # first layer (no previous input): zero momentum, i.e. a residual connection with step 0.9
    out0, _, a0 = layer(x, None, None)
    y0 = x + 0.9 * a0
    torch.testing.assert_close(out0, y0 + layer.ff(layer.norm2(y0)))


def test_adaptive_connection_uses_eq18_per_token():
    torch.manual_seed(0)
    layer = TransformerLayer(8, 2, 16, "linear", connection="adaptive").double()
    x, x_prev = torch.randn(2, 5, 8, dtype=torch.float64), torch.randn(2, 5, 8, dtype=torch.float64)
    a_prev = torch.randn(2, 5, 8, dtype=torch.float64)
    out, _, a = layer(x, x_prev, a_prev)
    ratio = (a - a_prev).norm(dim=-1) / a_prev.norm(dim=-1)
    beta = ((1 - ratio.sqrt()) ** 2).clamp(0, 1 - 1e-3)[..., None]
    y = x + a + beta * (x - x_prev)
    torch.testing.assert_close(out, y + layer.ff(layer.norm2(y)))


def test_bad_configuration():
    with pytest.raises(ValueError, match="attention"):
        MomentumTransformer(12, 10, attention="performer")
    with pytest.raises(ValueError, match="connection"):
        MomentumTransformer(12, 10, connection="dense")
    with pytest.raises(ValueError, match="beta"):
        MomentumTransformer(12, 10, beta=1.0)
    with pytest.raises(ValueError, match="tokens"):
        MomentumTransformer(12, 10)(torch.zeros(2, 11, dtype=torch.long))
