"""MomentumRNN family: one module, parametrised by cell and momentum rule (review Eqs.
(10)-(17))."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from dynkit.models.momentum_rnn import MOMENTUM_RULES, MomentumRNN, SequenceClassifier

torch.set_num_threads(1)
RULES = sorted(MOMENTUM_RULES)


def seq(b=3, t=12, d=4, seed=0, dtype=torch.float64):
    return torch.randn(b, t, d, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def rnn(cell, rule, seed=0, **kw):
    torch.manual_seed(seed)
    kw.setdefault("restart_every", 5)
    return MomentumRNN(4, 6, cell, rule, **kw).double()


@pytest.mark.parametrize("cell", ["rnn", "lstm"])
def test_rule_none_is_torch_rnn_and_lstm(cell):
    model = rnn(cell, "none")
    ref = (torch.nn.RNN if cell == "rnn" else torch.nn.LSTM)(4, 6, batch_first=True).double()
    with torch.no_grad():
        ref.weight_ih_l0.copy_(model.W.weight)
        ref.weight_hh_l0.copy_(model.U.weight)
        ref.bias_hh_l0.copy_(model.U.bias)
        ref.bias_ih_l0.zero_()
    x = seq()
    torch.testing.assert_close(
        model(x)[0], ref(x)[0], rtol=1e-12, atol=1e-12
    )  # float64, same arithmetic


@pytest.mark.parametrize("cell", ["rnn", "lstm"])
def test_zero_momentum_unit_step_is_plain_cell(cell):
    plain, mom = rnn(cell, "none"), rnn(cell, "momentum", mu=0.0, s=1.0)
    mom.load_state_dict(plain.state_dict())
    x = seq()
    torch.testing.assert_close(mom(x)[0], plain(x)[0], rtol=1e-14, atol=1e-14)


def test_momentum_rnn_satisfies_second_order_form():
    # Review Eq. (14): h_t = sigma(U(h_{t-1} - mu h_{t-2}) + mu sigma^{-1}(h_{t-1}) + s W x_t) (+ (1
    # - mu) b with our bias b), a consequence of Eq. (11) checked on the module's outputs in
    # float64.
    mu, s = 0.7, 0.4
    model = rnn("rnn", "momentum", mu=mu, s=s)
    with torch.no_grad():
        model.U.weight.mul_(0.5)  # keep tanh away from saturation so atanh is well conditioned
    x = seq(t=15)
    h = model(x)[0]
    U, b, W = model.U.weight, model.U.bias, model.W.weight
    for t in range(2, 15):
        pre = (
            (h[:, t - 1] - mu * h[:, t - 2]) @ U.T
            + mu * torch.atanh(h[:, t - 1])
            + s * x[:, t] @ W.T
            + (1 - mu) * b
        )
        torch.testing.assert_close(h[:, t], torch.tanh(pre), rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("cell", ["rnn", "lstm"])
@pytest.mark.parametrize("rule", ["none", "momentum", "nag", "restart"])
def test_remark_parametrization_equals_standard_with_W_equal_U_W_hat(cell, rule):
    # Remark 1 (review Eq. (12)): v = -p, W_hat = U^{-1} W gives the same dynamics as Eq. (11).
    remark = rnn(cell, rule, parametrization="remark", mu=0.8, s=0.3)
    standard = rnn(cell, rule, mu=0.8, s=0.3)
    with torch.no_grad():
        standard.U.load_state_dict(remark.U.state_dict())
        standard.W.weight.copy_(remark.U.weight @ remark.W.weight)
    x = seq()
    torch.testing.assert_close(remark(x)[0], standard(x)[0], rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("rule", ["adam", "rmsprop"])
@pytest.mark.parametrize("parametrization", ["standard", "remark"])
def test_adam_and_rmsprop_follow_eq17_and_remark4(rule, parametrization):
    mu, s, beta, eps = 0.6, 0.5, 0.8, 1e-8
    model = rnn("rnn", rule, mu=mu, s=s, beta=beta, eps=eps, parametrization=parametrization)
    x = seq()
    U, b, W = model.U.weight, model.U.bias, model.W.weight
    mu = 0.0 if rule == "rmsprop" else mu
    h = v = m = torch.zeros(3, 6, dtype=torch.float64)
    for t in range(x.shape[1]):  # the equations written out once more, independently of the module
        d = x[:, t] @ W.T
        v = mu * v + s * d
        m = beta * m + (1 - beta) * d * d
        drive = v @ U.T if parametrization == "remark" else v
        h = torch.tanh(h @ U.T + b + drive / torch.sqrt(m + eps))
        torch.testing.assert_close(model(x[:, : t + 1])[0][:, -1], h, rtol=1e-12, atol=1e-12)


def test_momentum_schedules():
    nag = rnn("rnn", "nag")
    assert [nag.mu_at(t) for t in (1, 2, 3, 10)] == [0.0, 1 / 4, 2 / 5, 9 / 12]
    sr = rnn("rnn", "restart", restart_every=4)
    assert [sr.mu_at(t) for t in range(1, 10)] == [
        1 / 4,
        2 / 5,
        3 / 6,
        0.0,
        1 / 4,
        2 / 5,
        3 / 6,
        0.0,
        1 / 4,
    ]
    assert rnn("rnn", "rmsprop", mu=0.9).mu_at(3) == 0.0
    assert rnn("rnn", "momentum", mu=0.3).mu_at(7) == 0.3


@settings(max_examples=12, deadline=None)
@given(rule=st.sampled_from(RULES), cell=st.sampled_from(["rnn", "lstm"]), split=st.integers(1, 11))
def test_state_continues_a_sequence(rule, cell, split):
    # For all rules: running [0, split) then [split, T) from the returned state equals one run
    # (schedules too).
    model, x = rnn(cell, rule, restart_every=3), seq()
    whole = model(x)[0]
    first, state = model(x[:, :split])
    second, _ = model(x[:, split:], state)
    torch.testing.assert_close(torch.cat([first, second], 1), whole, rtol=1e-13, atol=1e-13)


def test_return_states_gives_the_hidden_tensors_of_the_graph():
    model = SequenceClassifier(4, 6, 3, cell="rnn", rule="momentum").double()
    y, hs = model(seq(), return_states=True)
    for h in hs:
        h.retain_grad()
    y.sum().backward()
    norms = [float(h.grad.norm()) for h in hs]
    assert len(norms) == 12 and all(n > 0 for n in norms)
    # the last state's gradient is the head's weight applied to dL/dy only: check it exactly
    torch.testing.assert_close(hs[-1].grad, model.head.weight.sum(0).expand(3, 6))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"cell": "gru"}, "cell"),
        ({"rule": "sgd"}, "rule"),
        ({"mu": -0.1}, "mu"),
        ({"s": 0.0}, "s must"),
        ({"beta": 1.0}, "beta"),
        ({"eps": 0.0}, "eps"),
        ({"rule": "restart", "restart_every": None}, "restart_every"),
        ({"parametrization": "other"}, "parametrization"),
        ({"mu": float("nan")}, "mu"),
    ],
)
def test_bad_arguments(kwargs, message):
    args = {"cell": "rnn", "rule": "momentum", **kwargs}
    with pytest.raises(ValueError, match=message):
        MomentumRNN(4, 6, args.pop("cell"), args.pop("rule"), **args)


def test_bad_inputs():
    model = rnn("lstm", "momentum")
    with pytest.raises(ValueError, match="4 features"):
        model(seq(d=5))
    with pytest.raises(ValueError, match="shape"):
        model(seq()[0])
    x = seq()
    x[1, 3, 2] = float("nan")
    with pytest.raises(ValueError, match="finite"):
        model(x)


@pytest.mark.parametrize("rule", ["none", "momentum", "adam"])
def test_the_authors_initialisation_is_theirs_and_their_input_bias_enters_the_drive(rule):
    # MomentumRNN's reset_parameters (mnist-timit/momentumnet.py), written out here: x2h orthogonal,
    # h2h the identity on its first N rows (eye_ on 4N x N), biases 0 but the forget block (rows
    # N..2N) 1.0 in both
    torch.manual_seed(0)
    n, d = 5, 3
    rnn = MomentumRNN(d, n, cell="lstm", rule=rule, init="authors")
    w, u = rnn.W.weight.detach(), rnn.U.weight.detach()
    torch.testing.assert_close(
        w.T @ w, torch.eye(d), atol=1e-6, rtol=0
    )  # orthonormal columns (4N > d)
    torch.testing.assert_close(u, torch.cat([torch.eye(n), torch.zeros(3 * n, n)]))
    forget = torch.zeros(4 * n)
    forget[n : 2 * n] = 1.0
    for bias in (rnn.W.bias, rnn.U.bias):
        torch.testing.assert_close(bias.detach(), forget)
    # the input bias is part of the drive the momentum accumulates: with x = 0 the first step's
    # momentum is s * b_x
    state = rnn(torch.zeros(1, 1, d))[1]
    if rule == "momentum":
        torch.testing.assert_close(state["v"][0], rnn.s * forget)
    plain = MomentumRNN(d, n, cell="lstm", rule=rule)
    assert plain.W.bias is None and not torch.equal(
        plain.U.weight, u
    )  # planted: the default is not theirs
    with pytest.raises(ValueError, match="init must be one of"):
        MomentumRNN(d, n, init="xavier")
    with pytest.raises(ValueError, match="parametrization='standard'"):
        MomentumRNN(d, n, init="authors", parametrization="remark")


def test_nesterov_restart_is_the_authors_srlstm_written_out():
    # NesterovLSTMCell of MomentumRNN's code, driven as their mnist.py drives it (read, not copied):
    # k counts 1, 2, ..., F and starts again; y_k = h2h(h) - eps x2h(x); gates = y_k + (k-1)/(k+2)
    # (y_k - y_{k-1}). Float64: the two computations differ only in round-off (1e-12)
    torch.manual_seed(2)
    n, F_, steps = 4, 3, 8
    rnn = MomentumRNN(
        2, n, cell="lstm", rule="nesterov_restart", s=0.9, restart_every=F_, init="authors"
    ).double()
    with torch.no_grad():  # away from the identity init, so every term matters
        for p in rnn.parameters():
            p.add_(0.3 * torch.randn_like(p))
    x = torch.randn(3, steps, 2, dtype=torch.float64)
    h = c = torch.zeros(3, n, dtype=torch.float64)
    v = torch.zeros(3, 4 * n, dtype=torch.float64)
    k, expected = 0, []
    for t in range(steps):
        k += 1
        y = rnn.U(h) - 0.9 * rnn.W(x[:, t])
        gates = y + (k - 1.0) / (k + 2.0) * (y - v)
        v = y
        i_g, f_g, g_g, o_g = gates.chunk(4, 1)
        c = torch.sigmoid(f_g) * c + torch.sigmoid(i_g) * torch.tanh(g_g)
        h = torch.sigmoid(o_g) * torch.tanh(c)
        expected.append(h)
        if k == F_:
            k = 0
    out, _ = rnn(x)
    torch.testing.assert_close(out, torch.stack(expected, 1), atol=1e-12, rtol=0)
    restart = MomentumRNN(
        2, n, cell="lstm", rule="restart", s=0.9, restart_every=F_, init="authors"
    ).double()
    restart.load_state_dict(rnn.state_dict())
    assert not torch.allclose(
        restart(x)[0], out
    )  # planted: dynkit's restart rule is another recurrence
    with pytest.raises(ValueError, match="needs restart_every"):
        MomentumRNN(2, n, rule="nesterov_restart")
