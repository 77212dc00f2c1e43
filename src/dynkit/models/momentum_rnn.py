"""The MomentumRNN family: RNN and LSTM cells whose input drive follows an optimiser's momentum
rule.

One recurrent module, :class:`MomentumRNN`, parametrised by the cell (``"rnn"`` or ``"lstm"``) and
the momentum rule (review Sect. 2, Eqs. (10)-(17); MomentumRNN paper Eqs. (8)-(15)). With
``d_t = W x_t``:

=============  ==========================================================================================
rule           update of the cell's pre-activation ``a_t`` (then ``h_t = sigma(a_t)`` or the LSTM gates)
=============  ==========================================================================================
``none``       ``a_t = U h_{t-1} + d_t + b`` (the plain RNN/LSTM)
``momentum``   ``v_t = mu v_{t-1} + s d_t``, ``a_t = U h_{t-1} + v_t + b``            (review Eq. (11))
``nag``        as momentum with ``mu_t = (t - 1)/(t + 2)``                         (NAG, Sect. 2.4)
``restart``    as momentum with ``mu_t = (t mod F)/(t mod F + 3)`` (scheduled restart every F steps)
``adam``       ``v_t`` as momentum, ``m_t = beta m_{t-1} + (1 - beta) d_t^2``,
               ``a_t = U h_{t-1} + v_t / sqrt(m_t + eps) + b``                      (review Eq. (17))
``rmsprop``    adam with ``mu = 0``
``nesterov_    ``y_t = U h_{t-1} + b - s d_t``, ``a_t = y_t + (k-1)/(k+2) (y_t - y_{t-1})``, ``k`` counting
restart``      1..F and restarting (the MomentumRNN authors' SRLSTM, ``NesterovLSTMCell`` of their code)
=============  ==========================================================================================

``parametrization="remark"`` is the equivalent form of Remark 1 (Eq. (12)) / Remark 4:
``d_t = W_hat x_t`` lives in the hidden space and the drive enters through ``U``:
``a_t = U (h_{t-1} + v_t) + b``, and for adam/rmsprop
``a_t = U h_{t-1} + (U v_t) / sqrt(m_t + eps) + b`` (``m_t`` from ``(W_hat x_t)^2``, repeated over
the LSTM's four gates). For the momentum rules it equals the standard form with ``W = U W_hat``.
"""  # noqa: E501

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Optional

import torch
from torch import nn
from torch.nn import functional as F

__all__ = [
    "MomentumRule",
    "MOMENTUM_RULES",
    "CELLS",
    "PARAMETRIZATIONS",
    "INITS",
    "MomentumRNN",
    "SequenceClassifier",
]


@dataclass(frozen=True)
class MomentumRule:
    """A momentum rule as data: whether it keeps a velocity, a second moment, and its schedule of
    mu."""

    name: str
    velocity: bool  # keeps v_t (all but "none")
    second_moment: bool  # keeps m_t (adam, rmsprop)
    schedule: Optional[Callable[[int, float, Optional[int]], float]] = (
        None  # mu_t(t, mu, F), t = 1, 2, ...
    )
    preactivation: bool = (
        False  # extrapolates the whole pre-activation (Nesterov), not a velocity of the drive
    )

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"name must be a non-empty str, got {self.name!r}")
        for flag in ("velocity", "second_moment", "preactivation"):
            if not isinstance(getattr(self, flag), bool):
                raise TypeError(f"{flag} must be a bool, got {getattr(self, flag)!r}")
        if self.schedule is not None and not callable(self.schedule):
            raise TypeError(
                f"schedule must be a callable mu_t(t, mu, F) or None, got "
                f"{type(self.schedule).__name__}"
            )


MOMENTUM_RULES = {
    "none": MomentumRule("none", False, False, lambda t, mu, F: 0.0),
    "momentum": MomentumRule("momentum", True, False, lambda t, mu, F: mu),
    "nag": MomentumRule("nag", True, False, lambda t, mu, F: (t - 1) / (t + 2)),
    "restart": MomentumRule("restart", True, False, lambda t, mu, F: (t % F) / (t % F + 3)),
    "adam": MomentumRule("adam", True, True, lambda t, mu, F: mu),
    "rmsprop": MomentumRule("rmsprop", True, True, lambda t, mu, F: 0.0),
    # k = 1, ..., F, then 1 again: the authors' step counter, reset every F steps
    "nesterov_restart": MomentumRule(
        "nesterov_restart",
        True,
        False,
        lambda t, mu, F: ((t - 1) % F) / ((t - 1) % F + 3),
        preactivation=True,
    ),
}

CELLS = {"rnn": 1, "lstm": 4}  # number of gate blocks in the pre-activation
PARAMETRIZATIONS = ("standard", "remark")
INITS = ("uniform", "authors")
"""``uniform``: every parameter in ``±1/sqrt(hidden_size)`` (torch.nn.LSTM's); ``authors``: MomentumRNN's code
(``mnist-timit/momentumnet.py`` ``reset_parameters``, read not copied): an input bias, orthogonal input weights,
identity hidden weights (``eye_`` on the gates x hidden matrix), zero biases but the forget gate's 1.0 in both."""  # noqa: E501


def _real(value, name: str, low: float, high: float, closed_high: bool = False) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    ok = ok and low <= value and (value <= high if closed_high else value < high)
    if not ok:
        bracket = "]" if closed_high else ")"
        raise ValueError(f"{name} must be a real number in [{low}, {high}{bracket}, got {value!r}")
    return float(value)


class MomentumRNN(nn.Module):
    """A single-layer recurrent module over batch-first sequences with a momentum rule on its input
    drive.

    Parameters
    ----------
    input_size, hidden_size : int
    cell : {"rnn", "lstm"}
        The recurrent cell: ``h_t = tanh(a_t)`` or the LSTM gates (order i, f, g, o as in
        ``torch.nn.LSTM``).
    rule : {"none", "momentum", "nag", "restart", "adam", "rmsprop"}
        The momentum rule (table in the module docstring).
    mu : float
        Momentum ``mu >= 0`` (momentum and adam; ignored by the scheduled rules).
    s : float
        Step size ``s > 0`` of the drive (all rules but ``none``).
    beta : float
        Second-moment decay in ``[0, 1)`` (adam, rmsprop).
    eps : float
        ``eps > 0`` under the square root (adam, rmsprop); 1e-8 as in the paper.
    restart_every : int, optional
        The restart period F (required for ``rule="restart"``).
    parametrization : {"standard", "remark"}
        Eq. (11)/(17) or the equivalent Remark 1/4 form.
    init : {"uniform", "authors"}
        The initialisation (:data:`INITS`); ``"authors"`` adds a bias to the input drive (the
        authors' ``x2h``, which their momentum accumulates too) and needs
        ``parametrization="standard"``.

    Notes
    -----
    ``forward(x, state=None, return_states=False)`` takes ``x`` of shape ``(batch, T, input_size)`` and
    returns ``(outputs, state)`` with ``outputs`` of shape ``(batch, T, hidden_size)`` and ``state`` a dict
    (``h``, and ``c``, ``v``, ``m`` where used) to continue from. With ``return_states=True`` it returns
    also the list of the hidden tensors ``h_t`` that the recurrence used (call ``retain_grad()`` on them
    to read ``dL/dh_t``, Fig. 2 of MomentumRNN).
    """  # noqa: E501

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        cell: str = "rnn",
        rule: str = "momentum",
        *,
        mu: float = 0.6,
        s: float = 0.6,
        beta: float = 0.9,
        eps: float = 1e-8,
        restart_every: int | None = None,
        parametrization: str = "standard",
        init: str = "uniform",
    ):
        super().__init__()
        for name, value in (("input_size", input_size), ("hidden_size", hidden_size)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if cell not in CELLS:
            raise ValueError(f"cell must be one of {sorted(CELLS)}, got {cell!r}")
        if rule not in MOMENTUM_RULES:
            raise ValueError(f"rule must be one of {sorted(MOMENTUM_RULES)}, got {rule!r}")
        if parametrization not in PARAMETRIZATIONS:
            raise ValueError(
                f"parametrization must be one of {PARAMETRIZATIONS}, got {parametrization!r}"
            )
        if init not in INITS:
            raise ValueError(f"init must be one of {INITS}, got {init!r}")
        if init == "authors" and parametrization != "standard":
            raise ValueError(
                f"init='authors' needs parametrization='standard' (their cells), got "
                f"{parametrization!r}"
            )
        self.mu = _real(mu, "mu", 0.0, math.inf)
        self.s = _real(s, "s", 0.0, math.inf)
        if self.s == 0.0:
            raise ValueError(f"s must be > 0, got {s!r}")
        self.beta = _real(beta, "beta", 0.0, 1.0)
        self.eps = _real(eps, "eps", 0.0, math.inf)
        if self.eps == 0.0:
            raise ValueError(f"eps must be > 0, got {eps!r}")
        if rule in ("restart", "nesterov_restart") and (
            isinstance(restart_every, bool)
            or not isinstance(restart_every, int)
            or restart_every < 1
        ):
            raise ValueError(
                f"rule={rule!r} needs restart_every, a positive integer F; got {restart_every!r}"
            )
        if rule == "nesterov_restart" and parametrization != "standard":
            raise ValueError(
                f"rule='nesterov_restart' needs parametrization='standard', got {parametrization!r}"
            )
        self.input_size, self.hidden_size = input_size, hidden_size
        self.cell, self.rule, self.parametrization = cell, MOMENTUM_RULES[rule], parametrization
        self.restart_every = restart_every
        gates = CELLS[cell] * hidden_size
        drive = gates if parametrization == "standard" else hidden_size
        self.init = init
        self.W = nn.Linear(
            input_size, drive, bias=init == "authors"
        )  # W (standard) or W_hat (remark)
        self.U = nn.Linear(hidden_size, gates, bias=True)  # U and the bias b
        if init == "authors":
            nn.init.orthogonal_(self.W.weight)
            nn.init.eye_(self.U.weight)
            for bias in (self.W.bias, self.U.bias):
                nn.init.zeros_(bias)
                if cell == "lstm":  # gates i, f, g, o: the forget gate's block
                    nn.init.ones_(bias[hidden_size : 2 * hidden_size])
        else:
            bound = 1.0 / math.sqrt(hidden_size)  # torch.nn.RNN/LSTM's initialisation
            for p in self.parameters():
                nn.init.uniform_(p, -bound, bound)

    def extra_repr(self) -> str:
        return (
            f"{self.input_size}, {self.hidden_size}, cell={self.cell!r}, rule={self.rule.name!r}, "
            f"mu={self.mu}, s={self.s}, parametrization={self.parametrization!r}, "
            f"init={self.init!r}"
        )

    def mu_at(self, t: int) -> float:
        """The momentum mu_t used at step t = 1, 2, ... (constant, NAG or scheduled restart)."""
        return float(self.rule.schedule(t, self.mu, self.restart_every))

    def _check_input(self, x: torch.Tensor) -> None:
        if not isinstance(x, torch.Tensor) or x.dim() != 3:
            shape = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
            raise ValueError(
                f"x must be a tensor of shape (batch, T, {self.input_size}), got {shape}"
            )
        if x.shape[-1] != self.input_size:
            raise ValueError(
                f"x must have {self.input_size} features (last dimension), got shape "
                f"{tuple(x.shape)}"
            )
        if x.shape[1] == 0:
            raise ValueError("x must hold at least one time step, got T = 0")
        if not bool(torch.isfinite(x).all()):
            raise ValueError("x must be finite, got non-finite entries")

    def _check_state(self, state, x: torch.Tensor) -> None:
        if state is None:
            return
        if not isinstance(state, dict):
            raise TypeError(
                f"state must be None or the dict a previous call returned, got "
                f"{type(state).__name__}"
            )
        widths = {
            "h": self.hidden_size,
            "c": self.hidden_size,
            "v": self.W.out_features,
            "m": self.W.out_features,
        }
        for key, value in state.items():
            if key == "t":
                if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                    raise ValueError(f"state['t'] must be an integer >= 0, got {value!r}")
            elif key in widths:
                if not isinstance(value, torch.Tensor) or tuple(value.shape) != (
                    x.shape[0],
                    widths[key],
                ):
                    got = (
                        tuple(value.shape)
                        if isinstance(value, torch.Tensor)
                        else type(value).__name__
                    )
                    raise ValueError(
                        f"state[{key!r}] must be a tensor of shape ({x.shape[0]}, {widths[key]}), "
                        f"got {got}"
                    )
            else:
                raise ValueError(
                    f"state must have keys among ('h', 'c', 'v', 'm', 't'), got {key!r}"
                )

    def forward(self, x: torch.Tensor, state: dict | None = None, return_states: bool = False):
        self._check_input(x)
        if not isinstance(return_states, bool):
            raise TypeError(f"return_states must be a bool, got {return_states!r}")
        self._check_state(state, x)
        batch, steps, _ = x.shape
        H, G = self.hidden_size, CELLS[self.cell]
        zeros = x.new_zeros(batch, H)
        state = dict(state or {})
        h, c = state.get("h", zeros), state.get("c", zeros)
        v = state.get("v", torch.zeros_like(self.W(x[:, 0])))
        m = state.get("m", torch.zeros_like(v))
        t0 = int(state.get("t", 0))
        drives = self.W(x)  # d_t for all t in one product
        remark = self.parametrization == "remark"
        hs = []
        for i in range(steps):
            d = drives[:, i]
            if self.rule.preactivation:  # the authors' SRLSTM: Nesterov on the pre-activation
                y = self.U(h) - self.s * d
                pre, v = y + self.mu_at(t0 + i + 1) * (y - v), y
            elif not self.rule.velocity:  # plain cell
                pre = self.U(h) + (F.linear(d, self.U.weight) if remark else d)
            else:
                v = self.mu_at(t0 + i + 1) * v + self.s * d
                drive = v
                if self.rule.second_moment:
                    m = self.beta * m + (1.0 - self.beta) * d * d
                if remark:
                    drive = F.linear(drive, self.U.weight)  # U v_t
                if self.rule.second_moment:
                    scale = torch.sqrt(m + self.eps)
                    drive = drive / (scale.repeat(1, G) if remark else scale)
                pre = self.U(h) + drive
            if self.cell == "rnn":
                h = torch.tanh(pre)
            else:
                i_g, f_g, g_g, o_g = pre.chunk(4, dim=-1)
                c = torch.sigmoid(f_g) * c + torch.sigmoid(i_g) * torch.tanh(g_g)
                h = torch.sigmoid(o_g) * torch.tanh(c)
            hs.append(h)
        out_state = {"h": h, "t": t0 + steps}
        if self.cell == "lstm":
            out_state["c"] = c
        if self.rule.velocity:
            out_state["v"] = v
        if self.rule.second_moment:
            out_state["m"] = m
        outputs = torch.stack(hs, dim=1)
        return (outputs, out_state, hs) if return_states else (outputs, out_state)


class SequenceClassifier(nn.Module):
    """A :class:`MomentumRNN` followed by a linear read-out of the last hidden state (or of every
    step)."""

    def __init__(
        self, input_size: int, hidden_size: int, n_outputs: int, every_step: bool = False, **rnn
    ):
        super().__init__()
        if isinstance(n_outputs, bool) or not isinstance(n_outputs, int) or n_outputs < 1:
            raise ValueError(f"n_outputs must be a positive integer, got {n_outputs!r}")
        if not isinstance(every_step, bool):
            raise TypeError(f"every_step must be a bool, got {every_step!r}")
        self.rnn = MomentumRNN(input_size, hidden_size, **rnn)
        self.head = nn.Linear(hidden_size, n_outputs)
        self.every_step = every_step

    def forward(self, x: torch.Tensor, return_states: bool = False):
        out = self.rnn(x, return_states=return_states)
        y = self.head(out[0] if self.every_step else out[0][:, -1])
        return (y, out[2]) if return_states else y
