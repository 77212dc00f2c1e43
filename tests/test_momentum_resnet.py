"""Momentum ResNet, Eq. (2)/(3): exact inversion, memory-free gradients, momentumnet parity, bad
input."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
import torch
from torch import nn

from dynkit.models.exact import to_fixed, to_float
from dynkit.models.momentum_resnet import MomentumResNet, ResidualBranch, to_momentum_resnet

D = 4


def mlp(d=D, hidden=16, dropout=0.0, seed=None, dtype=torch.float64):
    if seed is not None:
        torch.manual_seed(seed)
    layers = (
        [nn.Linear(d, hidden), nn.Tanh()]
        + ([nn.Dropout(dropout)] if dropout else [])
        + [nn.Linear(hidden, d)]
    )
    return nn.Sequential(*layers).to(dtype)


def on_grid(t):
    return to_float(to_fixed(t))


@pytest.mark.parametrize("gamma", [0.0, 0.1, 0.5, 0.9, 0.99])
def test_exact_inversion_over_1000_layers(gamma):
    g = torch.Generator().manual_seed(1)
    f = mlp(seed=0)
    net = MomentumResNet([f] * 1000, gamma)
    # inputs of both signs; on the fixed-point grid so that x_0 itself is the reference
    x0 = on_grid(3 * torch.randn(16, D, generator=g, dtype=torch.float64))
    v0 = on_grid(torch.randn(16, D, generator=g, dtype=torch.float64))
    assert (x0 < 0).any() and (x0 > 0).any() and (v0 < 0).any()
    with torch.no_grad():
        xL, vL = net(x0, v0)
        x_hat, v_hat = net.inverse(xL, vL)
    assert not torch.equal(xL, x0)
    assert torch.equal(x_hat, x0) and torch.equal(v_hat, v0)  # zero error, bit for bit


@pytest.mark.parametrize("gamma", [0.0, 0.5, 0.9])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_memory_free_gradients_equal_autograd(gamma, dtype):
    depth = 12
    functions = [mlp(dropout=0.2, seed=k, dtype=dtype) for k in range(depth)]
    y = torch.randn(3, D, dtype=dtype)  # a keyword argument passed to every block
    functions = [KwBlock(f) for f in functions]
    exact, plain = (MomentumResNet(functions, gamma, exact=e) for e in (True, False))
    x = (2 * torch.randn(8, D, dtype=dtype)).requires_grad_()
    results = []
    for net in (exact, plain):
        torch.manual_seed(123)  # same global seed -> same per-layer dropout masks
        xL, vL = net(x, shift=y[:1])
        loss = (xL**2).sum() + torch.sin(vL).sum()
        grads = torch.autograd.grad(loss, [x] + list(net.parameters()))
        results.append((xL.detach(), grads))
    (x_e, g_e), (x_p, g_p) = results
    # tolerance: the exact mode rounds to the 2**-40 grid (and gamma*v to < n grid units) at each of
    # the 12 layers; float32's own rounding (eps 6e-8) dominates in single precision
    rtol = 1e-4 if dtype == torch.float32 else 1e-8
    torch.testing.assert_close(x_e, x_p, rtol=rtol, atol=rtol)
    for a, b in zip(g_e, g_p):
        torch.testing.assert_close(a, b, rtol=rtol, atol=rtol * max(1.0, float(b.abs().max())))
    # the backward pass reconstructed the input bit for bit from the output
    assert torch.equal(exact._last.reconstructed[0], to_fixed(x))


class KwBlock(nn.Module):
    def __init__(self, f):
        super().__init__()
        self.f = f

    def forward(self, x, shift):
        return self.f(x + shift)


def test_keyword_tensor_gets_its_gradient():
    functions = [KwBlock(mlp(seed=k)) for k in range(5)]
    x = torch.randn(4, D, dtype=torch.float64)
    shift = torch.randn(1, D, dtype=torch.float64, requires_grad=True)
    grads = []
    for exact in (True, False):
        net = MomentumResNet(functions, 0.9, exact=exact)
        grads.append(torch.autograd.grad(net(x, shift=shift)[0].sum(), shift)[0])
    torch.testing.assert_close(grads[0], grads[1], rtol=1e-8, atol=1e-10)  # grid rounding only


def test_init_speed_and_tied_weights():
    f = mlp(seed=0)
    net = MomentumResNet([f] * 6, 0.5, init_speed=f)
    assert len(list(net.parameters())) == 4  # tied: one set of parameters
    x = torch.randn(2, D, dtype=torch.float64)
    with torch.no_grad():
        xL, _ = net(x)
        # transcription of Eq. (2) with v_0 = f(x_0)
        xr, vr = x.clone(), f(x)
        for _ in range(6):
            vr = 0.5 * vr + 0.5 * f(xr)
            xr = xr + vr
    torch.testing.assert_close(xL, xr, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("gamma", [0.0, 0.5, 0.9])
@pytest.mark.parametrize("exact", [True, False])
def test_same_forward_as_momentumnet(gamma, exact):
    momentumnet = pytest.importorskip(  # dev dependency: pip install --no-deps momentumnet==0.10
        "momentumnet", reason="momentumnet not installed (pip install --no-deps momentumnet==0.10)"
    )
    functions = [mlp(seed=k) for k in range(10)]
    x = torch.randn(8, D, dtype=torch.float64)
    with torch.no_grad():
        ref = momentumnet.MomentumNet(functions, gamma, use_backprop=True)(x)
        ours = MomentumResNet(functions, gamma, exact=exact)(x)[0]
    # float mode: the same float operations; exact mode: grid rounding 2**-40 per layer (and < 10
    # units of it for gamma = 9/10) amplified by at most the network's Lipschitz constant over 10
    # layers
    tol = 1e-13 if not exact else 1e-9
    torch.testing.assert_close(ours, ref, rtol=tol, atol=tol)


def test_converter_keeps_parameters_and_matches_resnet_at_gamma_zero():
    class BasicBlock(nn.Module):  # torchvision-style: relu(x + f(x)), optional downsample
        def __init__(self, cin, cout, stride=1):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1)
            self.downsample = (
                nn.Conv2d(cin, cout, 1, stride) if (cin != cout or stride != 1) else None
            )

        def forward(self, x):
            skip = x if self.downsample is None else self.downsample(x)
            return torch.relu(skip + self.conv2(torch.relu(self.conv1(x))))

    torch.manual_seed(0)
    stage = nn.Sequential(BasicBlock(3, 4, 2), BasicBlock(4, 4), BasicBlock(4, 4)).double()
    x = torch.randn(2, 3, 8, 8, dtype=torch.float64)
    for exact in (True, False):
        converted = to_momentum_resnet(stage, gamma=0.0, exact=exact)
        assert {id(p) for p in converted.parameters()} == {id(p) for p in stage.parameters()}
        assert converted[0] is stage[0]  # the shape-changing block is kept
        with torch.no_grad():
            torch.testing.assert_close(converted(x), stage(x), rtol=1e-10, atol=1e-10)
    momentum = to_momentum_resnet(stage, gamma=0.9)
    assert momentum(x).shape == stage(x).shape


def test_residual_branch():
    block = nn.Linear(3, 3)
    x = torch.randn(2, 3)
    torch.testing.assert_close(ResidualBranch(block)(x), block(x) - x)


@pytest.mark.parametrize("gamma", [-0.1, 1.5, float("nan"), "0.9", True])
def test_bad_gamma(gamma):
    with pytest.raises(ValueError, match="gamma"):
        MomentumResNet([mlp()], gamma)


def test_bad_inputs_fail_before_any_computation():
    calls = []

    class Spy(nn.Module):
        def forward(self, x):
            calls.append(1)
            return x

    net = MomentumResNet([Spy()] * 3, 0.9)
    for bad in (
        torch.tensor([[1.0, float("nan")]]),
        torch.tensor([[float("inf"), 0.0]]),
        torch.tensor([[1e300, 0.0]], dtype=torch.float64),
    ):
        with pytest.raises(ValueError, match="x"):
            net(bad)
    with pytest.raises(ValueError, match="v"):
        net(torch.zeros(1, 2), v=torch.tensor([[0.0, float("nan")]]))
    with pytest.raises(ValueError, match="v"):
        net(torch.zeros(1, 2), v=torch.zeros(2, 2))
    with pytest.raises(ValueError, match="functions"):
        MomentumResNet(nn.Linear(2, 2), 0.5)
    assert calls == []
    # the float mode accepts what it can compute with
    MomentumResNet([Spy()] * 3, 0.9, exact=False)(torch.tensor([[1e300, 0.0]], dtype=torch.float64))


def test_inverse_refuses_other_tensors_than_the_last_outputs():
    net = MomentumResNet([mlp(seed=0)] * 3, 0.9)
    x = torch.randn(2, D, dtype=torch.float64)
    xL, vL = net(x)
    with pytest.raises(ValueError, match="outputs of the last forward"):
        net.inverse(xL + 2.0**-20, vL)


@pytest.mark.parametrize("dtype, scale", [(torch.float32, 1.0), (torch.float64, 1e3)])
def test_exact_inverse_of_rounded_outputs(dtype, scale):
    # float32 outputs, and float64 ones above 2**12, are rounded views of the exact state: the
    # inverse still recovers the (grid-rounded) input exactly from the forward's own final state
    net = MomentumResNet([mlp(seed=0, dtype=dtype)] * 200, 1.0 if scale > 1 else 0.9)
    x0 = to_float(to_fixed(scale * torch.randn(4, D, dtype=dtype)), dtype=dtype)
    v0 = to_float(to_fixed(scale * torch.randn(4, D, dtype=dtype)), dtype=dtype)
    with torch.no_grad():
        x_hat, v_hat = net.inverse(*net(x0, v0))
    assert torch.equal(x_hat, x0) and torch.equal(v_hat, v0)


def test_float_mode_inverse_is_eq3():
    net = MomentumResNet([mlp(seed=k) for k in range(5)], 0.9, exact=False)
    x = torch.randn(2, D, dtype=torch.float64)
    with torch.no_grad():
        x_hat, v_hat = net.inverse(*net(x))
    torch.testing.assert_close(
        x_hat, x, rtol=1e-10, atol=1e-10
    )  # float round-off through 1/gamma^5
    with pytest.raises(ValueError, match="gamma"):
        zero = MomentumResNet([mlp(seed=0)], 0.0, exact=False)
        zero.inverse(*zero(x))


@settings(max_examples=25, deadline=None)
@given(
    gamma=st.floats(0.0, 1.0),
    depth=st.integers(1, 30),
    scale=st.floats(1e-3, 1e3),
    seed=st.integers(0, 2**16),
)
def test_exact_inversion_for_any_gamma(gamma, depth, scale, seed):
    g = torch.Generator().manual_seed(seed)
    net = MomentumResNet([mlp(seed=seed % 7)] * depth, gamma)
    x0 = on_grid(scale * torch.randn(3, D, generator=g, dtype=torch.float64))
    v0 = on_grid(scale * torch.randn(3, D, generator=g, dtype=torch.float64))
    with torch.no_grad():
        x_hat, v_hat = net.inverse(*net(x0, v0))
    assert torch.equal(x_hat, x0) and torch.equal(v_hat, v0)
    assert (
        net.buffer.information_bits() <= net.buffer.expected_bits() + 1
    )  # never more than Sect. 3.2's bits


def test_trajectory_ends_at_forward_output():
    net = MomentumResNet([mlp(seed=k) for k in range(4)], 0.7, exact=False)
    x = torch.randn(2, D, dtype=torch.float64)
    xs, vs = net.trajectory(x)
    assert xs.shape == (5, 2, D) and torch.equal(xs[0], x)
    torch.testing.assert_close((xs[-1], vs[-1]), net(x), rtol=0, atol=0)


def test_backward_twice_with_retained_graph():
    net = MomentumResNet([mlp(seed=k) for k in range(5)], 0.9)
    x = torch.randn(3, D, dtype=torch.float64, requires_grad=True)
    loss = net(x)[0].pow(2).sum()
    first = torch.autograd.grad(loss, x, retain_graph=True)[0]
    second = torch.autograd.grad(loss, x)[
        0
    ]  # the forward's buffer must be intact for a second pass
    assert torch.equal(first, second)
