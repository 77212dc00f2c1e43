"""The gradient measurement behind the vanishing-gradient experiment (MomentumRNN Fig. 2, review
(13)-(15))."""

import pytest
import torch

from dynkit.experiments.momseq.momseq_vanishing import second_order_forward
from dynkit.models.momentum_rnn import SequenceClassifier

torch.set_num_threads(1)


def test_second_order_graph_same_function_different_hidden_sensitivities():
    torch.manual_seed(0)
    model = SequenceClassifier(3, 8, 4, cell="rnn", rule="momentum", mu=0.6, s=0.6).double()
    x = torch.randn(5, 20, 3, dtype=torch.float64)
    y = torch.randint(0, 4, (5,))
    grads, hidden = [], []
    for forward in (lambda: model(x, return_states=True), lambda: second_order_forward(model, x)):
        out, hs = forward()
        for h in hs:
            h.retain_grad()
        torch.nn.functional.cross_entropy(out, y).backward()
        grads.append([p.grad.clone() for p in model.parameters()])
        hidden.append(torch.stack([h.grad for h in hs]))
        model.zero_grad(set_to_none=True)
    # same function of the parameters: equal parameter gradients (float64; atanh of |h| < 1 well
    # conditioned at this initialisation, so agreement to ~1e-10)
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b, rtol=1e-8, atol=1e-10)
    # the last step's hidden gradient is the head's alone in both graphs ...
    torch.testing.assert_close(hidden[0][-1], hidden[1][-1])
    # ... earlier ones differ: dL/dh_t depends on what the graph holds fixed (v_t or h_{t-1})
    assert (hidden[0][:-1] - hidden[1][:-1]).abs().max() > 1e-3 * hidden[0][:-1].abs().max()


@pytest.mark.parametrize(
    "option, value", [("--tasks", "digits,sudoku"), ("--models", "RNN,GRU"), ("--tasks", "")]
)
def test_a_subset_outside_the_scale_is_refused_before_any_training(option, value, tmp_path, capsys):
    from dynkit.experiments.momseq import momseq_vanishing

    with pytest.raises(SystemExit) as err:
        momseq_vanishing.main([option, value, "--epochs", "1", "--out", str(tmp_path)])
    assert (
        err.value.code == 2
        and f"{option} must be a comma-separated subset" in capsys.readouterr().err
    )
    assert not any(tmp_path.iterdir())  # nothing written
