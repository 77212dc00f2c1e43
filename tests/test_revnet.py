"""RevNet, Eq. (4): exact inversion, gradients, tied/untied weights, bad input."""

import pytest
import torch
from torch import nn

from dynkit.models.exact import to_fixed, to_float
from dynkit.models.revnet import RevNet

D = 4


def mlp(seed):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(D, 8), nn.Tanh(), nn.Linear(8, D)).double()


def test_eq4_transcription_and_tied_weights():
    phi, psi = mlp(0), mlp(1)
    net = RevNet.tied(phi, psi, depth=7, exact=False)
    assert len(list(net.parameters())) == 8
    x = torch.randn(3, D, dtype=torch.float64)
    with torch.no_grad():
        xL, vL = net(x)
        xr, vr = x.clone(), x.clone()  # activations duplicated: v_0 = x_0
        for _ in range(7):
            vr = vr + phi(xr)
            xr = xr + psi(vr)
    torch.testing.assert_close((xL, vL), (xr, vr), rtol=0, atol=0)


@pytest.mark.parametrize("depth", [1, 300])
def test_exact_inversion_untied(depth):
    net = RevNet(
        [mlp(k) for k in range(min(depth, 5))] * (depth // min(depth, 5)),
        [mlp(10 + k) for k in range(min(depth, 5))] * (depth // min(depth, 5)),
    )
    g = torch.Generator().manual_seed(0)
    x0 = to_float(to_fixed(torch.randn(5, D, generator=g, dtype=torch.float64)))
    v0 = to_float(to_fixed(-torch.randn(5, D, generator=g, dtype=torch.float64)))
    with torch.no_grad():
        xL, vL = net(x0, v0)
        x_hat, v_hat = net.inverse(xL, vL)
    assert torch.equal(x_hat, x0) and torch.equal(v_hat, v0)


def test_gradients_equal_autograd_untied():
    phis, psis = [mlp(k) for k in range(6)], [mlp(10 + k) for k in range(6)]
    x = torch.randn(4, D, dtype=torch.float64, requires_grad=True)
    grads = []
    for exact in (True, False):
        net = RevNet(phis, psis, exact=exact)
        xL, vL = net(x)
        grads.append(torch.autograd.grad((xL**2).sum() + vL.sum(), [x] + list(net.parameters())))
    # tolerance: 2**-40 grid rounding per half-step, amplified through 6 layers
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b, rtol=1e-8, atol=1e-8)


def test_bad_arguments():
    with pytest.raises(ValueError, match="psi_functions"):
        RevNet([mlp(0)] * 3, [mlp(1)] * 2)
    with pytest.raises(ValueError, match="depth"):
        RevNet.tied(mlp(0), mlp(1), depth=0)
    with pytest.raises(ValueError, match="x"):
        RevNet.tied(mlp(0), mlp(1), depth=2)(
            torch.tensor([[float("nan")] * D], dtype=torch.float64)
        )
