"""MomentumRNN (review Sect. 2.2-2.3; MomentumRNN paper): the momentum cell (11), its rewrite (14)
and the Jacobian factors (13) and (15), checked against torch autograd (float64, batched).

Conventions measured here:

* Jacobians are in numerator layout, ``dh_{k+1}/dh_k = D_k U`` for (8). Eq. (13) of the review
  writes the factor as ``D_k U^T`` (a row-vector convention); the literal product with ``U^T``
  agrees with autograd only for symmetric U — :func:`check_rnn_jacobian` reports that mismatch in
  ``details``.
* (15)'s factor ``D^_k (U + mu Sigma_k)`` is the partial derivative of (14) with respect to ``h_k``
  at fixed ``h_{k-1}``. (14) is a *two-step* recurrence, so the product of these factors is not the
  total ``dh_T/dh_t``; :func:`check_momentum_jacobian_product` measures that gap (it is not small).
"""

from __future__ import annotations

import numpy as np

from ._core import (
    CheckResult,
    as_real_array,
    as_scalar_batch,
    as_square,
    check_last_dim,
    combine,
    verdict,
)

__all__ = [
    "check_momentum_rnn",
    "check_rnn_jacobian",
    "check_momentum_jacobian_product",
    "check_inverse_activation_slope",
    "ACTIVATIONS",
    "adam_rnn_remark4",
    "check_adam_rnn_remark4",
    "ADAM_PRODUCTS",
    "check_gd_analogy",
    "GD_ANALOGY_PAIRS",
]

ACTIVATIONS = ("tanh", "sigmoid")
# float64 through <= 30 steps of a smooth cell: agreement ~1e-13; sigma^{-1} near the saturated ends
# of the range loses digits, so inputs keep |pre-activations| moderate and the tolerance is 1e-9.
RNN_TOL = 1e-9


def _torch():
    import torch

    return torch


def _act(name: str):
    torch = _torch()
    if name not in ACTIVATIONS:
        raise ValueError(
            f"activation must be one of {ACTIVATIONS} (review (14) needs an invertible "
            f"sigma); got {name!r}"
        )
    if name == "tanh":
        return torch.tanh, torch.atanh
    return torch.sigmoid, torch.logit


def _inputs(U, W, x, context):
    torch = _torch()
    U = as_square("U", U, context=context)
    n = U.shape[-1]
    W = as_real_array("W", W, context=context)
    x = as_real_array("x", x, context=context)
    if W.ndim < 2 or W.shape[-2] != n or x.ndim < 2 or x.shape[-1] != W.shape[-1]:
        raise ValueError(
            f"W must be (..., {n}, m) and x (..., T, m) ({context}); got W {W.shape}, x {x.shape}"
        )
    t = lambda a: torch.as_tensor(a, dtype=torch.float64)  # noqa: E731
    return t(U), t(W), t(x)


def _mv(M, v):
    return (M @ v.unsqueeze(-1)).squeeze(-1)


def _np_mv(M, v):
    """Batched matrix-vector product ``M v`` of numpy arrays."""
    return np.einsum("...ij,...j->...i", M, v)


def _cell_arrays(context, U, W, x, *, w_name="W", cols="m", **vectors):
    """Validated float arrays of a recurrent cell's inputs: ``U`` (..., n, n), the input weights
    ``W`` (..., n, cols) (its argument name ``w_name``), ``x`` (..., T, cols) and the state
    ``vectors`` (..., n), in that order; a mismatch is a ValueError naming the arguments."""
    U = as_square("U", U, context=context)
    W = as_real_array(w_name, W, context=context)
    x = as_real_array("x", x, context=context)
    vectors = {name: as_real_array(name, v, context=context) for name, v in vectors.items()}
    n = U.shape[-1]
    if W.ndim < 2:  # a 1-D W (one input column) would index a missing axis below
        raise ValueError(
            f"{w_name} must be a matrix (..., {n}, {cols}) ({context}; a single input column is "
            f"shape ({n}, 1)); got shape {W.shape}"
        )
    if (
        W.shape[-2] != n
        or x.ndim < 2
        or x.shape[-1] != W.shape[-1]
        or any(v.shape[-1:] != (n,) for v in vectors.values())
    ):
        raise ValueError(
            f"{w_name} must be (..., {n}, {cols}), x (..., T, {cols}), {' and '.join(vectors)} "
            f"(..., {n}) to match U ({context}); got {w_name} {W.shape}, x {x.shape}, "
            + ", ".join(f"{name} {v.shape}" for name, v in vectors.items())
        )
    return U, W, x, *vectors.values()


def cell14(U, Wx, h_prev, h_cur, mu: float, s: float, sig, inv):
    """The rewritten momentum cell (14):
    ``sigma(U (h_{t-1} - mu h_{t-2}) + mu sigma^{-1}(h_{t-1}) + s W x_t)`` (``Wx`` is ``W x_t``)."""
    return sig(_mv(U, h_cur - mu * h_prev) + mu * inv(h_cur) + s * Wx)


def factor15(dsig, dinv, U, mu: float):
    """(15)'s factor ``D^_k (U + mu Sigma_k)`` from the diagonals ``dsig = sigma'(.)``,
    ``dinv = (sigma^{-1})'(h_k)``."""
    torch = _torch()
    return dsig.unsqueeze(-1) * (U + mu * torch.diag_embed(dinv))


def _batched_jacobian(fn, h):
    """d fn(h) / d h for a batch of independent instances: (B, n) -> (B, n, n)."""
    torch = _torch()
    J = torch.autograd.functional.jacobian(lambda z: fn(z).sum(0), h, vectorize=True)  # (n, B, n)
    return J.permute(1, 0, 2)


def _momentum_cell(U, W, x, h_init, v0, mu, s, activation, context):
    """Validated inputs of the MomentumRNN cell checks and the one-step map
    ``step14(h_{k-1}, h_k, k)`` of review (14)."""
    torch = _torch()
    mu = float(as_scalar_batch("mu", mu, context=context, low=0.0))
    s = float(as_scalar_batch("s", s, context=context, low=0.0, low_open=True))
    Ut, Wt, xt = _inputs(U, W, x, context)
    sig, inv = _act(activation)
    n = Ut.shape[-1]
    h_m1 = torch.as_tensor(
        check_last_dim(
            "h_init",
            as_real_array("h_init", h_init, context=context),
            n,
            context=context,
            against="U",
        ),
        dtype=torch.float64,
    )
    v0t = torch.as_tensor(
        check_last_dim(
            "v0", as_real_array("v0", v0, context=context), n, context=context, against="U"
        ),
        dtype=torch.float64,
    )

    def step14(h_prev, h_cur, k):
        return cell14(Ut, _mv(Wt, xt[..., k, :]), h_prev, h_cur, mu, s, sig, inv)

    return mu, s, Ut, Wt, xt, sig, inv, h_m1, v0t, step14


def check_momentum_rnn(
    U, W, x, h_init, v0, mu: float, s: float, *, activation: str = "tanh"
) -> CheckResult:
    """Review (11) and (14) of the MomentumRNN cell agree step by step, and (15)'s factor
    ``D^_k (U + mu Sigma_k)`` with ``Sigma_k = diag((sigma^{-1})'(h_k))`` equals autograd's
    ``dh_{k+1}/dh_k`` of (14) at fixed ``h_{k-1}``, at every step.

    Parameters
    ----------
    U : (..., n, n); W : (..., n, m); x : (..., T, m) inputs x_1..x_T
    h_init : (..., n) ``h_{-1}``; v0 : (..., n) ``v_0``; the cell (11) starts from ``h_0 = sigma(U h_{-1} + v_0)``
    mu >= 0, s > 0; activation: "tanh" or "sigmoid".
    """  # noqa: E501
    torch = _torch()
    mu, s, Ut, Wt, xt, sig, inv, h_m1, v, step14 = _momentum_cell(
        U, W, x, h_init, v0, mu, s, activation, "review (11)/(14)/(15), MomentumRNN cell"
    )
    T = xt.shape[-2]
    # (11)
    h = sig(_mv(Ut, h_m1) + v)
    hs11 = [h_m1, h]
    for k in range(T):
        v = mu * v + s * _mv(Wt, xt[..., k, :])
        h = sig(_mv(Ut, h) + v)
        hs11.append(h)
    # (14) from (h_{-1}, h_0)
    hs14 = [hs11[0], hs11[1]]
    for k in range(T):
        hs14.append(step14(hs14[-2], hs14[-1], k))
    rewrite = torch.stack([(a - b).abs().amax(-1) for a, b in zip(hs11, hs14)]).amax(0)
    # (15) one step at a time, at the (11) trajectory
    worst_factor = torch.zeros_like(rewrite)
    n = Ut.shape[-1]
    for k in range(T):
        h_prev, h_cur = hs11[k], hs11[k + 1]
        auto = _batched_jacobian(lambda z: step14(h_prev, z, k), h_cur.reshape(-1, n)).reshape(
            h_cur.shape[:-1] + (n, n)
        )
        pre = _mv(Ut, h_cur - mu * h_prev) + mu * inv(h_cur) + s * _mv(Wt, xt[..., k, :])
        dsig = torch.func.vmap(torch.func.grad(lambda z: sig(z)))(pre.reshape(-1)).reshape(
            pre.shape
        )
        dinv = torch.func.vmap(torch.func.grad(lambda z: inv(z)))(h_cur.reshape(-1)).reshape(
            h_cur.shape
        )
        formula = factor15(dsig, dinv, Ut, mu)
        err = ((auto - formula).abs() / (1 + auto.abs())).amax((-1, -2))
        worst_factor = torch.maximum(worst_factor, err)
    instances = dict(U=np.asarray(U), h_init=np.asarray(h_init), v0=np.asarray(v0))
    return combine(
        "momentum_rnn",
        [
            verdict(
                "momentum_rnn.rewrite",
                rewrite.numpy(),
                RNN_TOL,
                instances,
                "(14) vs (11), max |h_t| difference over the sequence",
            ),
            verdict(
                "momentum_rnn.factor15",
                worst_factor.numpy(),
                RNN_TOL,
                instances,
                "(15) factor D^_k(U + mu Sigma_k) vs autograd dh_{k+1}/dh_k (relative)",
            ),
        ],
    )


def check_rnn_jacobian(
    U, W, x, h0, *, activation: str = "tanh", literal: bool = False
) -> CheckResult:
    """Review (13) for the plain cell (8): ``dh_T/dh_0 = D_{T-1} U ... D_0 U`` (numerator
    layout), ``D_k = diag(sigma'(U h_k + W x_{k+1}))``, equals autograd.
    ``details['literal_mismatch']`` is the relative difference when the factors are taken
    literally as ``D_k U^T``; ``literal=True`` makes that the residual (the review's (13) as
    written: it agrees with autograd only for symmetric U)."""
    torch = _torch()
    context = "review (8)/(13), recurrent cell"
    Ut, Wt, xt = _inputs(U, W, x, context)
    sig, _ = _act(activation)
    h0t = torch.as_tensor(
        check_last_dim(
            "h0",
            as_real_array("h0", h0, context=context),
            Ut.shape[-1],
            context=context,
            against="U",
        ),
        dtype=torch.float64,
    )
    n, T = Ut.shape[-1], xt.shape[-2]

    def run(h):
        for k in range(T):
            h = sig(_mv(Ut, h) + _mv(Wt, xt[..., k, :]))
        return h

    auto = _batched_jacobian(
        lambda z: run(z.reshape(h0t.shape)).reshape(-1, n), h0t.reshape(-1, n)
    ).reshape(h0t.shape[:-1] + (n, n))
    prod = torch.eye(n, dtype=torch.float64).expand(h0t.shape[:-1] + (n, n))
    transposed = prod
    h = h0t
    for k in range(T):
        pre = _mv(Ut, h) + _mv(Wt, xt[..., k, :])
        d = torch.func.vmap(torch.func.grad(lambda z: sig(z)))(pre.reshape(-1)).reshape(pre.shape)
        prod = (d.unsqueeze(-1) * Ut) @ prod
        transposed = (d.unsqueeze(-1) * Ut.transpose(-1, -2)) @ transposed
        h = sig(pre)
    scale = (
        auto.abs().amax((-1, -2)).clamp_min(1e-300)
    )  # relative: a tiny Jacobian must not hide the gap
    err = ((auto - prod).abs().amax((-1, -2)) / scale).numpy()
    lit = ((auto - transposed).abs().amax((-1, -2)) / scale).numpy()
    literal_prod = (transposed if literal else prod).numpy()
    return verdict(
        "rnn_jacobian",
        lit if literal else err,
        RNN_TOL,
        dict(U=np.asarray(U), h0=np.asarray(h0)),
        f"(13) product of D_k {'U^T' if literal else 'U'} vs autograd dh_T/dh_0 (relative)",
        literal_mismatch=lit,
        sides={"(13) product": literal_prod, "autograd": auto.numpy()},
    )


def companion15(dsig, dinv, U, mu: float):
    """The companion block ``B_k = [[D^_k (U + mu Sigma_k), -mu D^_k U], [I, 0]]`` of (14)
    (derived by sympy in ``dk.symbolic.DERIVATIONS["momentum_rnn_jacobian"]``):
    ``d(h_{k+1}, h_k) / d(h_k, h_{k-1})``."""
    torch = _torch()
    top = torch.cat([factor15(dsig, dinv, U, mu), -mu * dsig.unsqueeze(-1) * U], dim=-1)
    n = U.shape[-1]
    eye = torch.eye(n, dtype=U.dtype).expand(top.shape[:-2] + (n, n))
    return torch.cat([top, torch.cat([eye, torch.zeros_like(eye)], dim=-1)], dim=-2)


def check_momentum_jacobian_product(
    U, W, x, h_init, v0, mu: float, s: float, *, activation: str = "tanh", form: str = "paper"
) -> CheckResult:
    """Review (15) against autograd's ``dh_T/dh_0`` of (14) at fixed ``h_{-1}``.

    ``form="paper"``: (15) read as a total derivative, ``prod_k D^_k (U + mu Sigma_k)``. Expected
    to FAIL for T >= 2 and mu > 0 (the product omits the path through ``h_{k-1}``); exact for
    ``T = 1`` or ``mu = 0``. ``form="companion"``: the correction, the top-left n x n block of
    ``prod_k B_k`` with the 2n x 2n companion blocks of :func:`companion15` (must hold for any T,
    mu)."""
    torch = _torch()
    if form not in ("paper", "companion"):
        raise ValueError(
            f"form must be 'paper' (review (15)) or 'companion' (the 2n x 2n blocks); got {form!r}"
        )
    mu, s, Ut, Wt, xt, sig, inv, h_m1, v0t, step14 = _momentum_cell(
        U, W, x, h_init, v0, mu, s, activation, "review (14)/(15), MomentumRNN cell"
    )
    h0 = sig(_mv(Ut, h_m1) + v0t)
    n, T = Ut.shape[-1], xt.shape[-2]

    def run(h):
        prev, cur = h_m1, h
        for k in range(T):
            prev, cur = cur, step14(prev, cur, k)
        return cur

    auto = _batched_jacobian(
        lambda z: run(z.reshape(h0.shape)).reshape(-1, n), h0.reshape(-1, n)
    ).reshape(h0.shape[:-1] + (n, n))
    m = n if form == "paper" else 2 * n
    prod = torch.eye(m, dtype=torch.float64).expand(h0.shape[:-1] + (m, m))
    prev, cur = h_m1, h0
    for k in range(T):
        pre = _mv(Ut, cur - mu * prev) + mu * inv(cur) + s * _mv(Wt, xt[..., k, :])
        dsig = torch.func.vmap(torch.func.grad(lambda z: sig(z)))(pre.reshape(-1)).reshape(
            pre.shape
        )
        dinv = torch.func.vmap(torch.func.grad(lambda z: inv(z)))(cur.reshape(-1)).reshape(
            cur.shape
        )
        block = factor15(dsig, dinv, Ut, mu) if form == "paper" else companion15(dsig, dinv, Ut, mu)
        prod = block @ prod
        prev, cur = cur, sig(pre)
    prod = prod[..., :n, :n]  # d h_T / d h_0 at fixed h_{-1}: the top-left block
    err = ((auto - prod).abs().amax((-1, -2)) / (1 + auto.abs().amax((-1, -2)))).numpy()
    what = "(15) factors" if form == "paper" else "companion blocks"
    return verdict(
        "momentum_jacobian_product",
        err,
        RNN_TOL,
        dict(U=np.asarray(U), mu=np.full(err.shape, mu)),
        f"product of {what} vs total dh_T/dh_0 of (14) (relative)",
        sides={f"product of {what}": prod.numpy(), "autograd dh_T/dh_0": auto.numpy()},
    )


def check_inverse_activation_slope(
    y, *, activation: str = "tanh", strict: bool = False
) -> CheckResult:
    """Review Sect. 2.3: the paper states ``(sigma^{-1})'(.) > 1`` for sigmoid and tanh
    (``strict=True``); what holds is ``>= 1``: sigmoid's slope ``1/(y(1-y)) >= 4`` is > 1
    everywhere, tanh's ``1/(1-y**2)`` equals 1 at ``y = 0``. Residual: ``max(0, 1 - slope)``
    (``>= 1``), or 1 where ``slope <= 1`` (``strict``)."""
    torch = _torch()
    _, inv = _act(activation)
    y = as_real_array("y", y, context="review Sect. 2.3, (sigma^{-1})' on the range of sigma")
    lo, hi = (-1.0, 1.0) if activation == "tanh" else (0.0, 1.0)
    if np.any((y <= lo) | (y >= hi)):
        raise ValueError(
            f"y must lie in the open range ({lo}, {hi}) of {activation}; got "
            f"{y[(y <= lo) | (y >= hi)].reshape(-1)[0]!r}"
        )
    yt = torch.as_tensor(y, dtype=torch.float64).reshape(-1)
    slope = torch.func.vmap(torch.func.grad(lambda z: inv(z)))(yt).numpy().reshape(y.shape)
    residual = (slope <= 1).astype(float) if strict else np.maximum(1 - slope, 0)
    return verdict(
        "inverse_slope",
        residual,
        0.0,
        dict(y=y),
        f"(sigma^-1)' {'>' if strict else '>='} 1 for {activation}",
        min_slope=float(slope.min()),
        sides={"(sigma^-1)'(y)": slope, "1": np.ones_like(slope)},
    )


def check_reparametrisation(U, W, x, h0, v0, mu: float, s: float, *, w_hat=None) -> CheckResult:
    """MomentumRNN Remark 1 (review Remark 1, and Remark 4's use of it): with ``v_t = -p_t`` and
    ``W^ := U^{-1} W`` the cell (9) ``v_t = mu v_{t-1} + s W x_t, h_t = sigma(U h_{t-1} + v_t)``
    and (10) ``v_t = mu v_{t-1} + s W^ x_t, h_t = sigma(U h_{t-1} + U v_t)`` are "mathematically
    equivalent": from the same h_0 and v_0^{(10)} = U^{-1} v_0^{(9)} they give the same h_t
    (tanh). Residual: the largest ``|h_t(9) - h_t(10)|`` (tolerance 1e-10; U is well conditioned
    here). ``w_hat`` replaces U^{-1} W (``W`` itself plants a violation)."""
    context = "MomentumRNN Remark 1, (9) vs (10)"
    U, W, x, h0, v0 = _cell_arrays(context, U, W, x, h0=h0, v0=v0)
    mu = float(as_scalar_batch("mu", mu, context=context, low=0.0))
    s = float(as_scalar_batch("s", s, context=context, low=0.0, low_open=True))
    Uinv = np.linalg.inv(U)
    What = Uinv @ W if w_hat is None else as_real_array("w_hat", w_hat, context=context)
    mv = _np_mv
    h9, v9 = h0, v0
    h10, v10 = h0, mv(Uinv, v0)
    worst = np.zeros(h0.shape[:-1])
    for t in range(x.shape[-2]):
        v9 = mu * v9 + s * mv(W, x[..., t, :])
        h9 = np.tanh(mv(U, h9) + v9)
        v10 = mu * v10 + s * mv(What, x[..., t, :])
        h10 = np.tanh(mv(U, h10) + mv(U, v10))
        worst = np.maximum(worst, np.abs(h9 - h10).max(axis=-1))
    return verdict(
        "reparametrisation",
        worst,
        1e-10,
        dict(U=U, W=W),
        "(10) with W^ = U^-1 W vs (9), max |h_t - h_t|",
        sides={"h_T (9)": h9, "h_T (10)": h10},
    )


# ---------------------------------------------------------------- MomentumRNN (6) <=> (7) and (8)
# <=> (9)

GD_ANALOGY_PAIRS = ("(6)-(7)", "(8)-(9)")
"""The rewrites of MomentumRNN Sect. 2.2: the recurrent cell (6) as the 'gradient step' (7) with
phi = sigma(U .) and u_t = U^{-1} W x_t; the accelerated system (8) as the momentum cell (9) with
v_t := -U p_t."""


def check_gd_analogy(
    U, W, x, h0, *, pair: str = "(6)-(7)", mu: float = 0.5, s: float = 1.0, plant: bool = False
) -> CheckResult:
    """MomentumRNN Sect. 2.2: "let phi(.) := sigma(U(.)) and u_t := U^{-1} W x_t, we can rewrite (6)
    as (7)" and "let v_t := -U p_t, we arrive at" (9) from (8): from the same h_0 (and p_0 = v_0 =
    0) both sides give the same h_t at every step (tanh). Residual: the largest ``|h_t - h_t|``
    (tolerance 1e-10; U with cond <= 1e3 here, the rewrite solves with U once per step).

    Range: U invertible (any real n x n), any W (n, m), inputs x (T, m), h0 (n); mu >= 0, s > 0
    for (8)-(9). ``plant=True`` uses U^T for U^{-1} in u_t ((6)-(7)) or v_t := -p_t ((8)-(9)): a
    wrong rewrite the check flags."""
    context = f"MomentumRNN Sect. 2.2, {pair}"
    if pair not in GD_ANALOGY_PAIRS:
        raise ValueError(f"pair must be one of {GD_ANALOGY_PAIRS}; got {pair!r}")
    U, W, x, h0 = _cell_arrays(context, U, W, x, h0=h0)
    mu = float(as_scalar_batch("mu", mu, context=context, low=0.0))
    s = float(as_scalar_batch("s", s, context=context, low=0.0, low_open=True))
    mv = _np_mv
    Uinv = np.swapaxes(U, -1, -2) if (plant and pair == "(6)-(7)") else np.linalg.inv(U)
    phi = lambda y: np.tanh(mv(U, y))  # noqa: E731
    h_left, h_right, p, v = h0, h0, np.zeros_like(h0), np.zeros_like(h0)
    worst = np.zeros(np.broadcast_shapes(U.shape[:-2], h0.shape[:-1]))
    for t in range(x.shape[-2]):
        Wx = mv(W, x[..., t, :])
        u = mv(Uinv, Wx)
        if pair == "(6)-(7)":
            h_left = np.tanh(mv(U, h_left) + Wx)  # (6)
            h_right = phi(h_right + u)  # (7)
        else:
            p = mu * p - s * u  # (8)
            h_left = phi(h_left - p)
            v = mu * v + s * (mv(Uinv, Wx) if plant else Wx)  # (9); planted: v_t := -p_t (no U)
            h_right = np.tanh(mv(U, h_right) + v)
        worst = np.maximum(worst, np.abs(h_left - h_right).max(axis=-1))
    left, right = pair.split("-")
    return verdict(
        "gd_analogy",
        worst,
        1e-10,
        dict(U=U, W=W, x=x, h0=h0),
        f"{right} vs {left}{' (planted wrong rewrite)' if plant else ''}, max |h_t - h_t|",
        sides={f"h_T {left}": h_left, f"h_T {right}": h_right},
        pair=pair,
    )


# ------------------------------------------------------------------------ review Remark 4 (AdamRNN,
# RMSPropRNN)

ADAM_PRODUCTS = ("U(v/r)", "(Uv)/r")
"""Readings of Remark 4's ``U v_t / sqrt(m_t + eps)``: U times the entry-wise quotient, or the
entry-wise quotient of the vector ``U v_t``."""

# Both sides run <= 12 steps of the same elementwise arithmetic in another order (torch's optimizer
# keeps its own moments); float64 agreement is ~1e-14, so 1e-10 on h (tanh, |h| < 1) separates
# rounding from another rule.
ADAM_TOL = 1e-10


def adam_rnn_remark4(
    U,
    W_hat,
    x,
    h0,
    mu: float,
    beta: float,
    s: float,
    eps: float = 0.0,
    product: str = "U(v/r)",
    *,
    relaxed_moment: bool = False,
) -> np.ndarray:
    """Review Remark 4's AdamRNN (RMSPropRNN at ``mu = 0``), ``v_0 = m_0 = 0``, tanh::

        v_t = mu v_{t-1} + s W^ x_t,  m_t = beta m_{t-1} + (1 - beta) (W^ x_t)^2,
        h_t = tanh(U h_{t-1} + U v_t / sqrt(m_t + eps))

    ``product`` reads the last quotient (:data:`ADAM_PRODUCTS`); ``relaxed_moment`` uses (17)'s ``W x_t = U W^ x_t``
    in ``m_t`` instead (the relaxation Remark 4 says it avoids). Returns h_1..h_T, shape (..., T, n)."""  # noqa: E501
    if product not in ADAM_PRODUCTS:
        raise ValueError(f"product must be one of {ADAM_PRODUCTS}; got {product!r}")
    mv = _np_mv
    h, v, m, out = h0, np.zeros_like(h0), np.zeros_like(h0), []
    for t in range(x.shape[-2]):
        u = mv(W_hat, x[..., t, :])
        moment = mv(U, u) if relaxed_moment else u
        v = mu * v + s * u
        m = beta * m + (1 - beta) * moment * moment
        r = np.sqrt(m + eps)
        h = np.tanh(mv(U, h) + (mv(U, v / r) if product == "U(v/r)" else mv(U, v) / r))
        out.append(h)
    return np.stack(out, axis=-2)


def _optimizer_on_cell(U, W_hat, x, h0, mu: float, beta: float, s: float) -> np.ndarray:
    """The optimizer the cells come from, run by torch.optim (not by the formulas above): (9) ``h_t
    = phi(h_{t-1}
    + u_t)`` with ``phi = tanh(U .)``, ``u_t = W^ x_t`` and gradient ``-u_t`` (review Sect. 2.2),
      accelerated by
    Adam (``mu > 0``: betas (mu, beta), step s / (1 - mu), the (1 - mu) of (16) relaxed to s) or
    RMSProp (``mu = 0``: alpha = beta, step s); eps = 0, and Adam's bias correction undone
    through its learning rate (footnote 3: p_t, m_t are not normalised). One torch parameter
    holds the whole batch: both optimizers act entry-wise."""
    torch = _torch()
    y = torch.tensor(h0, dtype=torch.float64, requires_grad=True)
    Ut = torch.as_tensor(U, dtype=torch.float64)
    u = torch.as_tensor(np.einsum("...ij,...tj->...ti", W_hat, x), dtype=torch.float64)
    if mu > 0:
        opt = torch.optim.Adam([y], lr=s / (1 - mu), betas=(mu, beta), eps=0.0)
    else:
        opt = torch.optim.RMSprop([y], lr=s, alpha=beta, eps=0.0)
    out = []
    for t in range(u.shape[-2]):
        if (
            mu > 0
        ):  # Adam divides by (1 - mu^t) and sqrt(1 - beta^t): multiply them back into the step
            opt.param_groups[0]["lr"] = (
                s / (1 - mu) * (1 - mu ** (t + 1)) / np.sqrt(1 - beta ** (t + 1))
            )
        y.grad = -u[..., t, :].clone()
        opt.step()
        with torch.no_grad():
            y.copy_(torch.tanh(torch.einsum("...ij,...j->...i", Ut, y)))
        out.append(y.detach().clone())
    return torch.stack(out, dim=-2).numpy()


def check_adam_rnn_remark4(
    U,
    W_hat,
    x,
    h0,
    mu: float,
    beta: float,
    s: float,
    *,
    product: str = "U(v/r)",
    relaxed_moment: bool = False,
) -> CheckResult:
    """Review Remark 4: AdamRNN (RMSPropRNN for ``mu = 0``) written with ``v_t = -p_t`` and
    ``W^ = U^{-1} W`` is Adam (RMSProp) applied to (9) "without any relaxation":
    :func:`adam_rnn_remark4` (eps = 0) equals, at every step, torch.optim's Adam / RMSprop run on
    (9) (:func:`_optimizer_on_cell`), to ``ADAM_TOL``.

    Parameters
    ----------
    U : array (..., n, n)
    W_hat : array (..., n, k)
        At least 2-D (one input column is (n, 1)); a 1-D W_hat is a ValueError naming it (it raised
        a bare IndexError).
    x : array (..., T, k)
    h0 : array (..., n)
    mu : float in [0, 1)
        0 gives RMSPropRNN.
    beta : float in (0, 1)
    s : float > 0
    product : str
        Reading of ``U v_t / sqrt(m_t + eps)`` (:data:`ADAM_PRODUCTS`).
    relaxed_moment : bool
        Plant (17)'s relaxed second moment (a violation of Remark 4's formulas).
    """
    context = "review Remark 4, AdamRNN / RMSPropRNN"
    U, W_hat, x, h0 = _cell_arrays(context, U, W_hat, x, w_name="W_hat", cols="k", h0=h0)
    mu = float(as_scalar_batch("mu", mu, context=context, low=0.0, high=1.0, high_open=True))
    beta = float(
        as_scalar_batch(
            "beta", beta, context=context, low=0.0, high=1.0, low_open=True, high_open=True
        )
    )
    s = float(as_scalar_batch("s", s, context=context, low=0.0, low_open=True))
    if product not in ADAM_PRODUCTS:
        raise ValueError(f"product must be one of {ADAM_PRODUCTS} ({context}); got {product!r}")
    cell = adam_rnn_remark4(
        U, W_hat, x, h0, mu, beta, s, 0.0, product, relaxed_moment=relaxed_moment
    )
    reference = _optimizer_on_cell(U, W_hat, x, h0, mu, beta, s)
    gap = np.abs(cell - reference).max(axis=(-1, -2))
    name = "Adam" if mu > 0 else "RMSProp"
    return verdict(
        "adam_rnn_remark4",
        gap,
        ADAM_TOL,
        dict(U=U, W_hat=W_hat, x=x, h0=h0),
        f"Remark 4's {name}RNN ({product}) vs torch.optim.{'Adam' if mu > 0 else 'RMSprop'} "
        f"on (9), "
        f"max |h_t - h_t|",
        sides={"h_T (Remark 4)": cell[..., -1, :], f"h_T ({name})": reference[..., -1, :]},
        mu=mu,
        beta=beta,
        s=s,
        product=product,
    )
