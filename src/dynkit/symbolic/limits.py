"""Continuous limits and closed (unrolled) forms of discrete momentum schemes.

Each limit is taken from the discrete update and the stated scaling by
:func:`dynkit.symbolic.continuous_limit` (the public engine for any scheme): the iterates are
written as samples ``x^k = X(t)``, ``x^{k±1} = X(t ± h)`` of smooth curves, the update is expanded
in a series in the step ``h`` and the leading term is kept (``h -> 0``). The gradient/residual
function is an undefined sympy function, so each result holds for every (componentwise) vector
field. The functions here add the paper's steps (how the scheme is rewritten, the elimination of the
momentum).
"""

from __future__ import annotations

import sympy as sp

from .derivation import Check, Derivation, Step, finish
from .schemes import continuous_limit, iterate
from .schemes import k as K_INDEX

__all__ = [
    "heavy_ball_limit",
    "momentum_resnet_limit",
    "momentum_resnet_eps_limits",
    "nesterov_limit",
    "momentum_rnn_unrolled",
    "momentum_attention_unrolled",
    "leading_term",
]

t = sp.Symbol("t", real=True)
h = sp.Symbol("h", positive=True)
X, M, V = sp.Function("x"), sp.Function("m"), sp.Function("v")


def leading_term(expr, step=h):
    """``lim_{step -> 0} expr`` by a series expansion in ``step`` (undefined functions allowed)."""
    series = sp.series(expr, step, 0, 1).removeO().doit()
    return sp.expand(series.subs(step, 0))


def heavy_ball_limit() -> Derivation:
    """HB method (1)/(2) of the review -> first-order system (22) and HBODE (23)."""
    s, gamma = sp.symbols("s gamma", positive=True)
    grad = sp.Function(r"\nabla F")
    xk1, xk, xkm1, mk1, mk = sp.symbols("x^{k+1} x^k x^{k-1} m^{k+1} m^k")
    beta = 1 - gamma * sp.sqrt(s)
    hb = sp.Eq(xk1, xk - s * grad(xk) + sp.Symbol("beta") * (xk - xkm1))
    # m^{k+1} := (x^{k+1} - x^k)/sqrt(s) and m^k := (x^k - x^{k-1})/sqrt(s)
    sub = {xk1: xk + sp.sqrt(s) * mk1, xkm1: xk - sp.sqrt(s) * mk, sp.Symbol("beta"): beta}
    m_update = sp.solve(hb.subs(sub), mk1)[0]
    eq21 = [sp.Eq(mk1, sp.expand(m_update)), sp.Eq(xk1, xk + sp.sqrt(s) * mk1)]
    # continuum: h = sqrt(s), x^k = x(t), m^k = m(t), m^{k+1} = m(t+h), x^{k+1} = x(t+h)
    m_, x_ = iterate("m"), iterate("x")
    indexed = {mk1: m_[K_INDEX + 1], mk: m_[K_INDEX], xk: x_[K_INDEX], xk1: x_[K_INDEX + 1]}
    limit = continuous_limit([e.subs(indexed) for e in eq21], step=s, dt=sp.sqrt(s)).extra["limit"]
    m_res, x_res = (ode.lhs for ode in limit.odes)
    mdot = sp.solve(m_res, M(t).diff(t))[0]
    xdot = sp.solve(x_res, X(t).diff(t))[0]
    eq22 = [sp.Eq(X(t).diff(t), xdot), sp.Eq(M(t).diff(t), mdot)]
    # eliminate m = dx/dt
    second = sp.expand(mdot.subs(M(t), X(t).diff(t)))
    eq23 = sp.Eq(X(t).diff(t, 2) + gamma * X(t).diff(t), sp.expand(second + gamma * X(t).diff(t)))
    stated = [
        sp.Eq(X(t).diff(t), M(t)),
        sp.Eq(M(t).diff(t), -gamma * M(t) - grad(X(t))),
        sp.Eq(X(t).diff(t, 2) + gamma * X(t).diff(t), -grad(X(t))),
    ]
    steps = [
        Step(
            "Heavy-ball update, Eq. (1) of the review (componentwise; the gradient is an "
            "arbitrary function).",
            hb,
        ),
        Step(
            r"Introduce the momentum $m^{k+1} = (x^{k+1}-x^k)/\sqrt{s}$ and $\beta = "
            r"1-\gamma\sqrt{s}$ "
            r"and solve for $m^{k+1}$: this is Eq. (21).",
            eq21,
        ),
        Step(
            r"Write $h=\sqrt{s}$, $x^k = x(t)$, $m^k = m(t)$, $x^{k+1} = x(t+h)$, "
            r"$m^{k+1}=m(t+h)$, divide by "
            r"$h$ and keep the leading term of the series in $h$ (the limit $s\to 0$): Eq. (22).",
            eq22,
        ),
        Step(r"Eliminate $m = \dot x$: the heavy-ball ODE (23).", eq23),
    ]
    notes = (
        r"The review writes (21) with $m^k := (x^{k+1}-x^k)/\sqrt{s}$; the update (21) as "
        r"printed holds for the "
        r"backward difference $m^{k+1} = (x^{k+1}-x^k)/\sqrt{s}$, which is what is used "
        r"here. The index shift "
        "does not change the limit."
    )
    return finish(
        "heavy_ball_limit",
        "Heavy-ball method to the heavy-ball ODE",
        "review (000)",
        "(21)-(23)",
        steps,
        [*eq22, eq23],
        stated,
        notes,
    )


def momentum_resnet_limit() -> Derivation:
    """Momentum ResNet (2) -> eps x'' + x' = f(x) with eps = 1/(1 - gamma) (Sect. 3.4)."""
    gamma, eps = sp.symbols("gamma varepsilon", positive=True)
    f = sp.Function("f")
    vn1, vn, xn1, xn = sp.symbols("v_{n+1} v_n x_{n+1} x_n")
    mr = [sp.Eq(vn1, gamma * vn + (1 - gamma) * f(xn)), sp.Eq(xn1, xn + vn1)]
    with_eps = [sp.Eq(vn1, sp.expand(mr[0].rhs.subs(gamma, 1 - 1 / eps))), mr[1]]
    # symplectic Euler with step h on x' = v, v' = (f(x) - v)/eps; h = 1 gives (2)
    verlet = [sp.Eq(vn1, vn + h * (f(xn) - vn) / eps), sp.Eq(xn1, xn + h * vn1)]
    same_at_h1 = sp.simplify(verlet[0].rhs.subs(h, 1) - with_eps[0].rhs) == 0
    v_, x_ = iterate("v"), iterate("x")
    indexed = {vn1: v_[K_INDEX + 1], vn: v_[K_INDEX], xn1: x_[K_INDEX + 1], xn: x_[K_INDEX]}
    limit = continuous_limit([e.subs(indexed) for e in verlet], step=h, dt=h).extra["limit"]
    v_res, x_res = (ode.lhs for ode in limit.odes)
    vdot = sp.solve(v_res, V(t).diff(t))[0]
    xdot = sp.solve(x_res, X(t).diff(t))[0]
    system = [sp.Eq(X(t).diff(t), xdot), sp.Eq(V(t).diff(t), vdot)]
    second = sp.expand(eps * vdot.subs(V(t), X(t).diff(t)) + X(t).diff(t))
    result = sp.Eq(eps * X(t).diff(t, 2) + X(t).diff(t), second)
    stated = sp.Eq(eps * X(t).diff(t, 2) + X(t).diff(t), f(X(t)))
    steps = [
        Step("Momentum ResNet forward rule, Eq. (2) of the Momentum-ResNet paper.", mr),
        Step(r"With $\varepsilon = 1/(1-\gamma)$, i.e. $\gamma = 1 - 1/\varepsilon$:", with_eps),
        Step(
            r"This is the symplectic-Euler (Verlet) step with $h=1$ of $\dot x = v$, "
            r"$\dot v = (f(x)-v)/\varepsilon$ ("
            + ("checked exactly" if same_at_h1 else "MISMATCH")
            + ")",
            verlet,
        ),
        Step(r"Samples of smooth curves, divide by $h$, leading term as $h\to 0$:", system),
        Step(r"Eliminate $v = \dot x$ and multiply by $\varepsilon$:", result),
    ]
    return finish(
        "momentum_resnet_limit",
        "Momentum ResNet to the second-order ODE",
        "Momentum ResNets (003)",
        "(2), Sect. 3.4",
        steps,
        [result, Check(VERLET_LABEL, same_at_h1)],
        [stated, Check(VERLET_LABEL, True)],
    )


VERLET_LABEL = "the Momentum ResNet step is the symplectic-Euler step with h = 1"


def momentum_resnet_eps_limits() -> Derivation:
    """The eps -> 0 (Prop. 2) and rescaled eps -> oo (Prop. 5) limits of eps x'' + x' = f."""
    eps, theta_pos, omega = sp.symbols("varepsilon theta omega", positive=True)
    x0, v0 = sp.symbols("x_0 v_0", real=True)
    f, fr = sp.Function("f"), sp.Function(r"\tilde f")
    ode = sp.Eq(eps * X(t).diff(t, 2) + X(t).diff(t), f(X(t)))
    first_order = sp.Eq(X(t).diff(t), sp.solve(ode.subs(eps, 0), X(t).diff(t))[0])
    rescaled = sp.Eq(
        sp.expand(ode.lhs / eps), sp.expand(ode.rhs.subs(f(X(t)), eps * fr(X(t))) / eps)
    )
    lhs_inf = sp.limit(rescaled.lhs.subs(X(t).diff(t), sp.Symbol("xd")), eps, sp.oo).subs(
        sp.Symbol("xd"), X(t).diff(t)
    )
    second_order = sp.Eq(lhs_inf, fr(X(t)))
    # linear check of both limits: solve the linear problems exactly and take the limits of the
    # solutions
    tp = sp.Symbol("t", positive=True)
    lin0 = sp.dsolve(
        sp.Eq(eps * X(tp).diff(tp, 2) + X(tp).diff(tp), theta_pos * X(tp)),
        X(tp),
        ics={X(0): x0, X(tp).diff(tp).subs(tp, 0): v0},
    ).rhs
    lim0 = sp.simplify(sp.limit(lin0, eps, 0, "+"))
    lininf = sp.dsolve(
        sp.Eq(X(tp).diff(tp, 2) + X(tp).diff(tp) / eps, -(omega**2) * X(tp)),
        X(tp),
        ics={X(0): x0, X(tp).diff(tp).subs(tp, 0): v0},
    ).rhs
    liminf = sp.simplify(sp.expand_complex(sp.limit(lininf, eps, sp.oo).rewrite(sp.cos)))
    steps = [
        Step("The second-order model, Eq. (6) of the Momentum-ResNet paper.", ode),
        Step(
            r"$\varepsilon \to 0$ (Prop. 2): the inertial term drops, leaving the "
            r"first-order model (5).",
            first_order,
        ),
        Step(
            r"$\varepsilon\to\infty$ needs $f = \varepsilon\tilde f$ (rescaling); dividing "
            r"by $\varepsilon$:",
            rescaled,
        ),
        Step(r"and letting $\varepsilon\to\infty$ (Prop. 5):", second_order),
        Step(
            r"Linear check of Prop. 2: exact solution of $\varepsilon\ddot x+\dot x=\theta x$, "
            r"$x(0)=x_0$, $\dot x(0)=v_0$, and its limit $\varepsilon\to 0^+$ for $t>0$ (any "
            r"$v_0$):",
            sp.Eq(sp.Symbol("x_\\varepsilon(t)"), lin0),
        ),
        Step(
            r"Linear check of Prop. 5: solution of $\ddot x + \dot x/\varepsilon = -\omega^2 "
            r"x$ and its limit "
            r"$\varepsilon\to\infty$:",
            sp.Eq(sp.Symbol("x_\\varepsilon(t)"), lininf),
        ),
    ]
    result = [first_order, second_order, lim0, liminf]
    stated = [
        sp.Eq(X(t).diff(t), f(X(t))),
        sp.Eq(X(t).diff(t, 2), fr(X(t))),
        x0 * sp.exp(theta_pos * tp),
        x0 * sp.cos(omega * tp) + v0 * sp.sin(omega * tp) / omega,
    ]
    return finish(
        "momentum_resnet_eps_limits",
        "Limits ε → 0 and ε → ∞ of Momentum ResNets",
        "Momentum ResNets (003)",
        "Prop. 2, Prop. 5",
        steps,
        result,
        stated,
    )


def nesterov_limit() -> Derivation:
    """Nesterov's method (4) with beta_k = (k-1)/(k+2) -> x'' + (3/t) x' + grad F(x) = 0."""
    s = sp.Symbol("s", positive=True)
    k = sp.Symbol("k", positive=True)
    tt = t  # one time symbol for the whole module (sympy caches series by symbol)
    grad = sp.Function(r"\nabla F")
    mk1, mk, mkm1, xk = sp.symbols("m^{k+1} m^k m^{k-1} x^k")
    beta = lambda j: (j - 1) / (j + 2)  # noqa: E731  (the NAG schedule)
    scheme = [sp.Eq(mk1, xk - s * grad(xk)), sp.Eq(xk, mk + beta(k - 1) * (mk - mkm1))]
    one_seq = sp.Eq(mk1, scheme[0].rhs.subs(xk, scheme[1].rhs))
    # ansatz m^k = x(k sqrt(s)); h = sqrt(s), k = t/h
    cont = {mk1: X(tt + h), mk: X(tt), mkm1: X(tt - h), s: h**2, k: tt / h}
    # the gradient's argument tends to x(t) (continuity of grad F)
    arg_lim = leading_term(scheme[1].rhs.subs(cont))
    x_ = iterate("x")
    indexed = {mk1: x_[K_INDEX + 1], mk: x_[K_INDEX], mkm1: x_[K_INDEX - 1]}
    limit = continuous_limit(one_seq.subs(indexed).subs(k, K_INDEX), step=s, dt=sp.sqrt(s)).extra[
        "limit"
    ]
    ode = sp.expand(limit.odes[0].lhs)
    stated = X(tt).diff(tt, 2) + 3 / tt * X(tt).diff(tt) + grad(X(tt))
    steps = [
        Step(r"Nesterov's method, Eq. (4) of the review, with $\beta_k = (k-1)/(k+2)$.", scheme),
        Step(r"Eliminate $x^k$: one recurrence for $m^k$.", one_seq),
        Step(
            r"Ansatz $m^k = x(k\sqrt s)$, $h=\sqrt s$, $k = t/h$; the gradient's argument "
            r"tends to:",
            arg_lim,
        ),
        Step(r"Divide by $s = h^2$ and keep the leading term of the series in $h$:", sp.Eq(ode, 0)),
    ]
    return finish(
        "nesterov_limit",
        "Nesterov's accelerated gradient to its ODE",
        "review (000)",
        "(4) with (k-1)/(k+2)",
        steps,
        sp.Eq(ode, 0),
        sp.Eq(stated, 0),
        r"The ODE $\ddot x + \frac{3}{t}\dot x + \nabla F(x) = 0$ is Su, Boyd and Candès' "
        r"limit, cited in the review.",
    )


def momentum_rnn_unrolled() -> Derivation:
    """MomentumRNN cell (11) -> the single recurrence (14) for h_t (argument of sigma)."""
    n, d = sp.symbols("n d", integer=True, positive=True)
    U, W = sp.MatrixSymbol("U", n, n), sp.MatrixSymbol("W", n, d)
    h1, h2, x_t = (
        sp.MatrixSymbol("h_{t-1}", n, 1),
        sp.MatrixSymbol("h_{t-2}", n, 1),
        sp.MatrixSymbol("x_t", d, 1),
    )
    v1 = sp.MatrixSymbol("v_{t-1}", n, 1)
    sinv_h1 = sp.MatrixSymbol(r"\sigma^{-1}(h_{t-1})", n, 1)
    mu, s = sp.symbols("mu s", positive=True)
    v_t = mu * v1 + s * W * x_t
    arg = U * h1 + v_t  # h_t = sigma(arg)
    # invert the cell at t-1: sigma^{-1}(h_{t-1}) = U h_{t-2} + v_{t-1}
    v1_solved = sinv_h1 - U * h2
    arg14 = (U * h1 + mu * v1_solved + s * W * x_t).expand()
    stated = U * (h1 - mu * h2) + mu * sinv_h1 + s * W * x_t
    steps = [
        Step(
            r"MomentumRNN cell (11): $v_t = \mu v_{t-1} + s W x_t$, $h_t = \sigma(U h_{t-1} "
            r"+ v_t)$; "
            r"the argument of $\sigma$ is",
            arg,
        ),
        Step(
            r"Inverting the cell at $t-1$: $v_{t-1} = \sigma^{-1}(h_{t-1}) - U h_{t-2}$.",
            sp.Eq(v1, v1_solved),
        ),
        Step(r"Substituting gives the argument of $\sigma$ in (14):", arg14),
    ]
    return finish(
        "momentum_rnn_unrolled",
        "MomentumRNN cell as one recurrence",
        "review (000)",
        "(11) → (14)",
        steps,
        arg14,
        stated,
        "Compared as matrix expressions with symbolic sizes n, d.",
    )


def momentum_attention_unrolled() -> Derivation:
    """Causal momentum attention (72) -> closed forms (73) (causal) and (74) (non-causal)."""
    i, j, l, N = sp.symbols("i j l N", integer=True, positive=True)
    beta, gamma = sp.symbols("beta gamma", positive=True)
    g = sp.IndexedBase("g")  # g_j = phi(k_j) v_j^T (the recurrences are linear in it)
    m_closed = -sp.Sum(beta ** (i - j) * g[j], (j, 1, i))
    # s_i = -gamma sum_{l<=i} m_l = gamma sum_j g_j sum_{l=j}^{i} beta^(l-j): exchange the sums
    inner = sp.summation(beta ** (l - j), (l, j, i))
    # keep the beta != 1 branch of sympy's Piecewise answer
    weight = inner.replace(lambda e: isinstance(e, sp.Piecewise), lambda e: e.args[-1][0])
    weight = sp.simplify(sp.powsimp(sp.expand(weight), force=True))
    s_closed = gamma * sp.Sum(weight * g[j], (j, 1, i))
    stated_weight = (1 - beta ** (i - j + 1)) / (1 - beta)
    # verify against the recurrence unrolled for the first few steps (exact, with beta symbolic)
    m_prev, s_prev, ok = 0, 0, True
    for step in range(1, 7):
        m_now = beta * m_prev - g[step]
        s_now = s_prev - gamma * m_now
        ok &= sp.simplify(s_now - s_closed.subs(i, step).doit()) == 0
        ok &= sp.simplify(m_now - m_closed.subs(i, step).doit()) == 0
        m_prev, s_prev = m_now, s_now
    steps = [
        Step(
            r"Recurrence (72): $m_i = \beta m_{i-1} - \phi(k_i)v_i^\top$, $s_i = s_{i-1} - "
            r"\gamma m_i$, "
            r"$m_0 = s_0 = 0$; write $g_j = \phi(k_j)v_j^\top$. Unrolling $m$:",
            sp.Eq(sp.Symbol("m_i"), m_closed),
        ),
        Step(
            r"$s_i = -\gamma\sum_{l\le i} m_l$; exchanging the sums, the weight of $g_j$ is "
            r"$\gamma\sum_{l=j}^{i}\beta^{l-j}$ (for $\beta\ne 1$):",
            weight,
        ),
        Step(
            r"Causal closed form; the numerator of (73) is $\phi(q_i)^\top s_i$:",
            sp.Eq(sp.Symbol("s_i"), s_closed),
        ),
        Step(
            "Non-causal momentum attention (74) sums to N: the weights at i = N.", weight.subs(i, N)
        ),
        Step(
            "Checked against the recurrence unrolled for i = 1..6: "
            + ("exact" if ok else "MISMATCH"),
            None,
        ),
    ]
    label = "the closed form equals the recurrence unrolled for i = 1..6"
    result = [weight, weight.subs(i, N), Check(label, bool(ok))]
    stated = [stated_weight, stated_weight.subs(i, N), Check(label, True)]
    return finish(
        "momentum_attention_unrolled",
        "Causal momentum attention in closed form",
        "review (000)",
        "(72) → (73), (74)",
        steps,
        result,
        stated,
    )


def momentum_rnn_jacobian() -> Derivation:
    """The Jacobian of the MomentumRNN recurrence (14) as a product of 2n x 2n companion blocks (the
    correction of the review's (15), which keeps only the top-left block).

    (14) is a second-order recurrence, ``h_{k+1} = sigma(a_k)`` with ``a_k = U(h_k - mu h_{k-1}) +
    mu sigma^{-1}(h_k)
    + s W x_{k+1}``: its state is ``z_k = (h_k, h_{k-1})`` and ``dz_{k+1}/dz_k`` is computed here by
      sympy,
    entry by entry, for n = 2 with sigma and sigma^{-1} undefined functions (the block structure
    - diagonal ``D^_k``, ``Sigma_k`` - does not depend on n). Then ``dh_T/dh_t`` (at fixed
    ``h_{t-1}``) is the top-left n x n block of ``prod_{k=t}^{T-1} B_k``,
    ``B_k = [[D^_k (U + mu Sigma_k), -mu D^_k U], [I, 0]]``."""
    n = 2
    mu, s = sp.symbols("mu s", positive=True)
    U = sp.Matrix(n, n, lambda i, j: sp.Symbol(f"U_{i + 1}{j + 1}"))
    hk = sp.Matrix(n, 1, lambda i, _: sp.Symbol(f"h_k{i + 1}"))
    hp = sp.Matrix(n, 1, lambda i, _: sp.Symbol(f"h_km1_{i + 1}"))
    wx = sp.Matrix(n, 1, lambda i, _: sp.Symbol(f"wx_{i + 1}"))
    sigma, sinv = sp.Function("sigma"), sp.Function("sigma_inv")
    a = U * (hk - mu * hp) + mu * hk.applyfunc(sinv) + s * wx
    h_next = a.applyfunc(sigma)
    state_next = h_next.col_join(hk)  # z_{k+1} = (h_{k+1}, h_k)
    jac = state_next.jacobian(hk.col_join(hp))  # computed by sympy
    x = sp.Dummy("x")
    D_hat = sp.diag(*[sp.diff(sigma(x), x).subs(x, a[i]) for i in range(n)])
    Sigma = sp.diag(*[sp.diff(sinv(x), x).subs(x, hk[i]) for i in range(n)])
    eye, zero = sp.eye(n), sp.zeros(n)
    stated = sp.BlockMatrix(
        [[D_hat * (U + mu * Sigma), -mu * D_hat * U], [eye, zero]]
    ).as_explicit()
    steps = [
        Step(
            r"(14): $h_{k+1} = \sigma(a_k)$, $a_k = U(h_k - \mu h_{k-1}) + "
            r"\mu\sigma^{-1}(h_k) + s W x_{k+1}$; a "
            r"second-order recurrence, state $z_k = (h_k, h_{k-1})$. Argument of $\sigma$ (n = 2):",
            a,
        ),
        Step(r"$\partial z_{k+1} / \partial z_k$, differentiated by sympy entry by entry:", jac),
        Step(
            r"Read as blocks, with $\hat D_k = \mathrm{diag}(\sigma'(a_k))$ and "
            r"$\Sigma_k = \mathrm{diag}((\sigma^{-1})'(h_k))$: $B_k = [[\hat D_k(U + "
            r"\mu\Sigma_k), -\mu\hat D_k U], "
            r"[I, 0]]$, so $dh_T/dh_t = [I\ 0] \prod_{k=t}^{T-1} B_k [I; 0]$ (later factors "
            r"on the left). The "
            r"review's (15) keeps only the top-left blocks: it drops the path through $h_{k-1}$ "
            r"($-\mu \hat D_k U$), and writes $U^\top$ for $U$.",
            None,
        ),
    ]
    return finish(
        "momentum_rnn_jacobian",
        "MomentumRNN Jacobian as companion blocks (correcting (15))",
        "review (000)",
        "(14) → (15), corrected",
        steps,
        jac,
        stated,
        "Entry-by-entry for n = 2 with sigma, sigma^{-1} undefined functions; the numerical check "
        "dk.theory.check_momentum_jacobian_product(..., form='companion') compares the "
        "product with "
        "torch autograd for any n.",
    )
