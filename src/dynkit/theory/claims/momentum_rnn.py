"""The claims of the MomentumRNN paper (Nguyen, Baraniuk, Bertozzi, Osher, Wang): the momentum
cell and its Jacobian products, the NAG, scheduled-restart and Adam/RMSProp cells, and the
optimisation rates of Sect. 2.4.
"""

from __future__ import annotations

import numpy as np

from ..._papers import MOMENTUM_RNN
from .. import optimizers
from .._core import Claim
from . import _rnn_checks as rnn_checks
from ._sampling import by_size, random_psd

__all__ = ["CLAIMS"]


def _nag(n_inst, rng, momentum=optimizers.nag_momentum):
    return by_size(
        "nag_rate",
        n_inst,
        rng,
        lambda n, c: optimizers.check_nag_rate(
            random_psd(rng, c, n, singular=n > 1 and rng.uniform() < 0.5),
            rng.standard_normal((c, n)),
            n_steps=500,
            momentum=momentum,
        ),
    )


def _nag_gd(rng):
    A = np.diag(np.geomspace(1e-6, 1.0, 8))[None]
    return optimizers.check_nag_rate(A, np.ones((1, 8)), n_steps=500, momentum=lambda t: 0.0)


def _gd_form(n_inst, rng, gradient_at="x_t", linear=False, reference_mu=None, p0="x0"):
    def make(n, c):
        A = random_psd(rng, c, n, singular=n > 1 and rng.uniform() < 0.3) * (0.0 if linear else 1.0)
        mu = float(rng.uniform(0.05, 0.95))
        # linear f from x_0 = 0: where (3) as printed is heavy ball (implicit = explicit,
        # p_0 = x_0 = 0)
        x0 = rng.standard_normal((c, n)) * (0.0 if linear else 1.0)
        return optimizers.check_momentum_gd_form(
            A,
            rng.standard_normal((c, n)),
            x0,
            mu,
            float(rng.uniform(0.1, 1.0)),
            gradient_at=gradient_at,
            p0=p0,
            reference_mu=None if reference_mu is None else mu + reference_mu,
        )

    return by_size("momentum_gd_form", min(n_inst, 400), rng, make)


CLAIMS: tuple[Claim, ...] = (
    Claim(
        id="nag_rate",
        paper=MOMENTUM_RNN,
        equation="Sect. 2.4",
        statement=rnn_checks.NAG_RATE_STATEMENT,
        hypotheses="Convex quadratics (PSD A, possibly singular, eigenvalues over 6 decades), "
        "step 1/L, mu_t = (t-1)/(t+2), constant 2 ||x0 - x*||^2 / s (Su, Boyd, Candes), 500 steps.",
        check=_nag,
        summary="(t+1)^2 (f(x_t) - f*) s / (2 ||x0 - x*||^2) <= 1",
        expected_verdict="holds",
        flip=_nag_gd,
        reading="f(x_t) - f* <= 2 ||x0 - x*||^2 / (s (t + 1)^2) (Su, Boyd, Candes' constant) for "
        "t <= 500",
        number=16,
    ),
    Claim(
        id="restart_rate",
        paper=MOMENTUM_RNN,
        equation="Sect. 2.4",
        statement="Scheduled restart not only accelerates NAG to a linear convergence rate "
        "O(alpha^{-t}) (0 < alpha < 1) under mild extra assumptions but also stabilizes the NAG "
        "iteration.",
        hypotheses="Strongly convex quadratics (kappa <= 1e3), mu_t = (t mod F)/(t mod F + 3), F "
        "= ceil(2 sqrt(kappa)).",
        check=rnn_checks.restart_literal_check,
        summary="measured per-step factor vs alpha^{-1} > 1; corrected: factor <= exp(-0.4 / "
        "sqrt(kappa)) (accelerated)",
        expected_verdict="erratum",
        correction="Scheduled restart accelerates NAG to a linear convergence rate O(alpha^t), 0 "
        "< alpha < 1 (measured: alpha <= exp(-0.4 / sqrt(kappa)), an accelerated rate that "
        "gradient descent's (1 - 1/kappa)^2 misses for kappa > 30) on strongly convex quadratics.",
        flip=rnn_checks.restart_growing,
        reading=rnn_checks.RESTART_READING,
        intent=rnn_checks.RESTART_INTENT,
        corrected_check=rnn_checks.restart_check,
        corrected_flip=rnn_checks.restart_unit_momentum,
        number=17,
    ),
    Claim(
        id="momentum_rnn_reparametrisation",
        paper=MOMENTUM_RNN,
        equation="Remark 1, (9)-(10)",
        statement="Remark 1 Different parameterizations of (8) can result in different momentum "
        "cell architectures. For instance, if we let v_t = -p_t, we end up with [...] v_t = mu "
        "v_{t-1} + s W^ x_t; h_t = sigma(U h_{t-1} + U v_t), (10) where W^ := U^{-1} W is the "
        "trainable weight matrix. Even though (9) and (10) are mathematically equivalent [...]",
        hypotheses="U well conditioned (cond <= 10), n <= 12, T = 8, mu in [0, 0.95), s in [0.1, "
        "1], tanh; the review's Remarks 1 and 4 use the same reparametrisation.",
        check=rnn_checks.reparam_check,
        summary="(10) with W^ = U^-1 W vs (9), h_t step by step",
        expected_verdict="holds",
        flip=rnn_checks.reparam_wrong,
        reading="from the same h_0 and v_0^(10) = U^-1 v_0^(9), (9) and (10) with W^ = U^-1 W "
        "give the same h_t",
        number=45,
    ),
    Claim(
        id="momentum_rnn_paper_eq11",
        paper=MOMENTUM_RNN,
        equation="(11)",
        statement="dL/dh_t = dL/dh_T . prod_{k=t}^{T-1} dh_{k+1}/dh_k = dL/dh_T . "
        "prod_{k=t}^{T-1} (D_k U^T), (11) where U^T is the transpose of U and D_k = diag(sigma'(U "
        "h_k + W x_{k+1})).",
        hypotheses="As the review's rnn_jacobian_13 (the same content, the MomentumRNN paper's "
        "own numbering).",
        check=rnn_checks.jacobian_literal_check,
        summary="(11) with U^T vs autograd; corrected: D_k U",
        expected_verdict="erratum",
        correction="dh_T/dh_t = prod_k D_k U (numerator layout; U^T D_k in the gradient's row "
        "layout): a layout typo.",
        flip=rnn_checks.jacobian_literal_symmetric,
        reading="dh_T/dh_t (numerator layout) equals the product of D_k U^T",
        intent="dL/dh_t = dL/dh_T . prod_{k=t}^{T-1} dh_{k+1}/dh_k: the chain rule's own factor "
        "dh_{k+1}/dh_k of h_{k+1} = sigma(U h_k + W x_{k+1}) is D_k U; ||prod (D_k U^T)||_2 tends "
        "to either vanish or explode (the argument uses only norms, unchanged)",
        corrected_check=rnn_checks.jacobian_check,
        corrected_flip=rnn_checks.rnn_jacobian_wrong,
        number=46,
    ),
    Claim(
        id="momentum_rnn_paper_eq12",
        paper=MOMENTUM_RNN,
        equation="(12)",
        statement="We can rewrite (9) as h_t = sigma(U(h_{t-1} - mu h_{t-2}) + mu "
        "sigma^{-1}(h_{t-1}) + s W x_t), (12)",
        hypotheses="As the review's momentum_rnn_rewrite.",
        check=rnn_checks.rewrite_check,
        summary="(12) vs (9)",
        expected_verdict="holds",
        flip=rnn_checks.perturbed_rewrite,
        reading="(12) and (9) give the same h_t at every step from the same (h_{-1}, v_0)",
        number=47,
    ),
    Claim(
        id="momentum_rnn_paper_eq13",
        paper=MOMENTUM_RNN,
        equation="(13)",
        statement="dL/dh_t = dL/dh_T . prod_{k=t}^{T-1} dh_{k+1}/dh_k = dL/dh_T . "
        "prod_{k=t}^{T-1} D^_k [U^T + mu Sigma_k], (13)",
        hypotheses="As the review's momentum_rnn_eq15.",
        check=rnn_checks.momentum_product_check,
        summary="product of (13)'s factors vs the total dh_T/dh_0",
        expected_verdict="false as stated",
        flip=rnn_checks.momentum_product_without_momentum,
        reading="the product of D^_k (U^T + mu Sigma_k) equals dh_T/dh_t of (12) (autograd); the "
        "correct product is of 2n x 2n companion blocks (row momentum_rnn_eq15_companion)",
        number=48,
    ),
    Claim(
        id="momentum_rnn_paper_inverse_slope",
        paper=MOMENTUM_RNN,
        equation="Sect. 2.3",
        statement=rnn_checks.INVERSE_SLOPE_STATEMENT,
        hypotheses="As the review's inverse_slope.",
        check=rnn_checks.slope_strict_check,
        summary="(sigma^-1)' > 1 (strict); corrected: >= 1",
        expected_verdict="erratum",
        correction=rnn_checks.INVERSE_SLOPE_CORRECTION,
        flip=rnn_checks.slope_strict_off_zero,
        reading=rnn_checks.INVERSE_SLOPE_READING,
        intent="[...] and mu Sigma_k dominates U^T. Therefore, with an appropriate choice of mu, "
        "the momentum cell can alleviate vanishing gradient: the argument needs Sigma_k >= I "
        "(equality only at tanh's y = 0)",
        corrected_check=rnn_checks.slope_corrected_check,
        corrected_flip=rnn_checks.slope_wrong,
        number=49,
    ),
    Claim(
        id="momentum_rnn_gd_analogy_6_7",
        paper=MOMENTUM_RNN,
        equation="(6)-(7)",
        statement="Moreover, let phi(.) := sigma(U(.)) and u_t := U^{-1} W x_t, we can rewrite "
        "(6) as h_t = phi(h_{t-1} + u_t). (7)",
        hypotheses="U invertible (cond <= 1e3), W, x any, T <= 8, tanh.",
        check=rnn_checks.plain_analogy_check,
        summary="(7) vs (6) step by step",
        expected_verdict="holds",
        flip=rnn_checks.plain_analogy_planted,
        reading="from the same h_0, (6) h_t = sigma(U h_{t-1} + W x_t) and (7) with phi = sigma(U "
        ".), u_t = U^-1 W x_t give the same h_t (1e-10)",
        number=58,
    ),
    Claim(
        id="momentum_rnn_gd_analogy_8_9",
        paper=MOMENTUM_RNN,
        equation="(8)-(9)",
        statement="p_t = mu p_{t-1} - s u_t; h_t = phi(h_{t-1} - p_t), (8) [...] Let v_t := -U "
        "p_t, we arrive at the following dynamical system: v_t = mu v_{t-1} + s W x_t; h_t = "
        "sigma(U h_{t-1} + v_t). (9)",
        hypotheses="U invertible (cond <= 1e3), mu in [0, 0.95), s in [0.1, 1], T <= 8, tanh.",
        check=rnn_checks.momentum_analogy_check,
        summary="(9) vs (8) step by step",
        expected_verdict="holds",
        flip=rnn_checks.momentum_analogy_planted,
        reading="from the same h_0 and p_0 = v_0 = 0, (8) with phi = sigma(U .), u_t = U^-1 W x_t "
        "and (9) give the same h_t (1e-10)",
        number=59,
    ),
    Claim(
        id="momentum_rnn_eq3",
        paper=MOMENTUM_RNN,
        equation="(3)",
        statement="Starting from x_0, GD iterates as x_t = x_{t-1} - s grad f(x_t) with s > 0 "
        "being the step size. This can be significantly accelerated by using the momentum [55], "
        "which results in p_0 = x_0; p_t = mu p_{t-1} + s grad f(x_t); x_t = x_{t-1} - p_t, t >= "
        "1, (3)",
        hypotheses="f = x^T A x / 2 + b^T x, A PSD (eigenvalues over 6 decades, possibly "
        "singular), mu in [0.05, 0.95), s in [0.1, 1], 30 steps.",
        check=_gd_form,
        summary="(3) vs Polyak's heavy ball from rest, t >= 1; corrected: grad f(x_{t-1}), p_0 = 0",
        expected_verdict="erratum",
        correction="p_0 = 0; p_t = mu p_{t-1} + s grad f(x_{t-1}); x_t = x_{t-1} - p_t: Polyak's "
        "heavy ball x_t = x_{t-1} - s grad f(x_{t-1}) + mu (x_{t-1} - x_{t-2}) from rest (an "
        "explicit step; the printed grad f(x_t) makes every step implicit, the same slip as the "
        "GD sentence x_t = x_{t-1} - s grad f(x_t) and the LMC update (4); the printed p_0 = x_0 "
        "makes the first step x_1 = (1 - mu) x_0 - s grad f(x_0), which depends on where the "
        "origin is).",
        flip=lambda rng: _gd_form(3, rng, linear=True),
        reading="the iterates of (3) as printed (grad f at x_t: (I + s A) x_t = x_{t-1} - mu "
        "p_{t-1} - s b; p_0 = x_0) satisfy Polyak's heavy-ball recurrence x_t = x_{t-1} - s grad "
        "f(x_{t-1}) + mu (x_{t-1} - x_{t-2}) for every t >= 1, from rest (x_{-1} = x_0)",
        intent="This can be significantly accelerated by using the momentum [55] (Polyak 1964: "
        "the gradient at the current iterate, before the step, from rest), and Sect. 2.2 applies "
        "(3) explicitly: p_t = mu p_{t-1} - s u_t (8) with the 'gradient' -u_t known before h_t; "
        "the same index t is used for GD's own gradient, x_t = x_{t-1} - s grad f(x_t), which the "
        "paper calls GD (explicit), and for LMC (4), while HMC (5) has grad f(x_{t-1})",
        corrected_check=lambda n, rng: _gd_form(n, rng, gradient_at="x_{t-1}", p0="zero"),
        corrected_flip=lambda rng: _gd_form(
            3, rng, gradient_at="x_{t-1}", p0="zero", reference_mu=0.01
        ),
        number=60,
    ),
    Claim(
        id="momentum_rnn_paper_remark4",
        paper=MOMENTUM_RNN,
        equation="Remark 4 (AdamRNN, RMSPropRNN)",
        statement="Remark 4 Both AdamRNN and RMSPropRNN can also be derived by letting v_t = -p_t "
        "and W^ := U^{-1} W as in Remark 1. This parameterization yields the following "
        "formulation for AdamRNN v_t = mu v_{t-1} + s W^ x_t; m_t = beta m_{t-1} + (1 - beta)(W^ "
        "x_t . W^ x_t); h_t = sigma(U h_{t-1} + U v_t / sqrt(m_t + eps)). Here, we simply need to "
        "learn W^ and U without any relaxation.",
        hypotheses="As adam_rnn_remark4 (the review repeats this Remark): tanh, U with cond <= 10 "
        "(n <= 8), T = 8, mu = 0 (RMSPropRNN) or in [0.05, 0.95), beta in [0.5, 0.999), s in "
        "[0.1, 1], eps = 0.",
        check=rnn_checks.adam_rnn_check,
        summary="the printed cell (U v_t, then the entry-wise quotient) vs torch.optim Adam / "
        "RMSprop on (7)",
        expected_verdict="erratum",
        correction="h_t = sigma(U h_{t-1} + U (v_t / sqrt(m_t + eps))) (U applied after the "
        "entry-wise quotient): Adam / RMSProp applied to (7) h_t = phi(h_{t-1} + u_t), phi = "
        "sigma(U .), as (14) does.",
        flip=rnn_checks.adam_rnn_diagonal,
        reading="the printed U v_t / sqrt(m_t + eps) is the entry-wise quotient of the vector U "
        "v_t; the cell then equals, step by step (1e-10), Adam (mu > 0) / RMSProp (mu = 0) run by "
        "torch.optim on (7) with gradient -u_t = -W^ x_t (step s / (1 - mu), bias correction "
        "undone: footnote 3)",
        intent="(14) applies Adam to (7) as h_t = phi(h_{t-1} - s p_t / sqrt(r_t + eps)), phi(.) "
        "= sigma(U(.)); letting v_t = -p_t 'without any relaxation' gives sigma(U h_{t-1} + s U "
        "(v_t / sqrt(m_t + eps))): the entry-wise quotient does not commute with U unless U is "
        "diagonal",
        corrected_check=rnn_checks.adam_rnn_corrected_check,
        corrected_flip=rnn_checks.adam_rnn_relaxed_moment,
        number=77,
    ),
)
