"""Linear models and linearised spectra: Ψ_ε (Prop. 4 of the Momentum-ResNet paper), f_ε, G_ε,
Prop. 8, the eigenvalue pairing (60)-(62) of the review and the RevNet Jacobian (Prop. 1)."""

from __future__ import annotations

import sympy as sp

from .derivation import Check, Derivation, Step, equivalent, finish

__all__ = [
    "psi_eps",
    "psi_eps_appendix",
    "eigen_pairing_charpoly",
    "revnet_jacobian",
    "psi_closed_form",
    "heavy_ball_block_charpoly",
]

eps = sp.Symbol("varepsilon", positive=True)
theta = sp.Symbol("theta", real=True)
t = sp.Symbol("t", nonnegative=True)
x0 = sp.Symbol("x_0", real=True)
n = sp.Symbol("n", integer=True, nonnegative=True)
X = sp.Function("x")


def _stated_series(u):
    """Prop. 4's series Σ (1/(2n)! + 1/(2ε(2n+1)!)) u^n times e^{-1/(2ε)}, summed by sympy."""
    s = sp.summation(u**n / sp.factorial(2 * n), (n, 0, sp.oo)) + sp.summation(
        u**n / (2 * eps * sp.factorial(2 * n + 1)), (n, 0, sp.oo)
    )
    return sp.exp(-1 / (2 * eps)) * s


def psi_closed_form(theta_=theta):
    """e^{-1/(2ε)} (cosh ω + sinh ω / (2εω)), ω² = θ/ε + 1/(4ε²): the scalar Ψ_ε(θ) in closed
    form."""
    w = sp.sqrt(theta_ / eps + 1 / (4 * eps**2))
    return sp.exp(-1 / (2 * eps)) * (sp.cosh(w) + sp.sinh(w) / (2 * eps * w))


def _same_function(a, b, var, points=(sp.Rational(3, 7), sp.Rational(-5, 3), 2)) -> bool:
    """Exact equality of two closed forms: symbolic simplification, else exact rational samples
    of eps."""
    d = sp.simplify((a - b).rewrite(sp.exp))
    if d == 0:
        return True
    return all(sp.simplify(d.subs(var, p).subs(eps, sp.Rational(2, 3))) == 0 for p in points)


def psi_eps() -> Derivation:
    """Prop. 4: the time-1 map of εẍ + ẋ = θx, x(0) = x0, ẋ(0) = 0 is Ψ_ε(θ) x0."""
    ode = sp.Eq(eps * X(t).diff(t, 2) + X(t).diff(t), theta * X(t))
    sol = sp.dsolve(ode, X(t), ics={X(0): x0, X(t).diff(t).subs(t, 0): 0}).rhs
    psi_scalar = sp.simplify(sol.subs(t, 1) / x0)
    u = sp.Symbol("u", positive=True)  # u = θ/ε + 1/(4ε²)
    series = _stated_series(u).subs(u, theta / eps + 1 / (4 * eps**2))
    scalar_ok = _same_function(psi_scalar, series, theta)
    # matrices: B = [[0, I], [θ/ε, -I/ε]]; C = B + I/(2ε) squares to diag(Ω, Ω), Ω = θ/ε + I/(4ε²)
    d = sp.Symbol("d", integer=True, positive=True)
    Th, Id = sp.MatrixSymbol(r"\theta", d, d), sp.Identity(d)
    Om = Th / eps + Id / (4 * eps**2)
    C = sp.BlockMatrix([[Id / (2 * eps), Id], [Th / eps, -Id / (2 * eps)]])
    C2 = sp.block_collapse(C * C)
    blocks_ok = all(
        equivalent(C2.blocks[i, j], (Om if i == j else sp.ZeroMatrix(d, d)))
        for i in range(2)
        for j in range(2)
    )
    # hence C^{2k} = diag(Ω^k, Ω^k), C^{2k+1} = diag(Ω^k, Ω^k) C; the (1,1) block of C^{2k+1} is
    # Ω^k/(2ε)
    top_left_odd = sp.block_collapse(
        sp.BlockMatrix([[Om, sp.ZeroMatrix(d, d)], [sp.ZeroMatrix(d, d), Om]]) * C
    ).blocks[0, 0]
    odd_ok = equivalent(top_left_odd, Om / (2 * eps))
    steps = [
        Step("Eq. (7): the linear second-order model with zero initial velocity.", ode),
        Step("Scalar θ: sympy's solution, at t = 1, divided by x_0:", psi_scalar),
        Step(
            r"Prop. 4's series, summed by sympy ($u = \theta/\varepsilon + 1/(4\varepsilon^2)$):",
            series,
        ),
        Step(
            r"Matrix θ: $\exp\begin{pmatrix}0 & I\\ \theta/\varepsilon & "
            r"-I/\varepsilon\end{pmatrix} = "
            r"e^{-1/(2\varepsilon)}\exp C$ with $C$ squaring to a block diagonal (block "
            r"algebra, symbolic size d):",
            sp.Eq(sp.MatPow(sp.MatrixSymbol("C", 2 * d, 2 * d), 2), C2, evaluate=False),
        ),
        Step(
            r"so $C^{2k} = \mathrm{diag}(\Omega^k, \Omega^k)$ and the (1,1) block of $C^{2k+1}$ is "
            r"$\Omega^k/(2\varepsilon)$: the top-left block of $e^{-1/(2\varepsilon)}\exp C$ "
            r"is Prop. 4's series.",
            top_left_odd,
        ),
    ]
    labels = (
        "scalar θ: the solution at t = 1 equals Prop. 4's series",
        "matrix θ: the top-left block of the exponential equals Prop. 4's series",
    )
    result = [Check(labels[0], scalar_ok), Check(labels[1], blocks_ok and odd_ok)]
    return finish(
        "psi_eps",
        "Solution of the linear second-order model (Ψ_ε)",
        "Momentum ResNets (003)",
        "Prop. 4",
        steps,
        result,
        [Check(label, True) for label in labels],
        "The scalar comparison is exact (simplification, or exact rational sample points of θ).",
        psi=psi_scalar,
        # Prop. 4
        stated_latex=r"\Psi_\varepsilon(\theta) = e^{-\frac{1}{2\varepsilon}} \sum_{n=0}^{\infty} "
        r"\left(\frac{1}{(2n)!} + \frac{1}{2\varepsilon(2n+1)!}\right)"
        r"\left(\frac{\theta}{\varepsilon} + \frac{I_d}{4\varepsilon^2}\right)^n",
    )


def psi_eps_appendix() -> Derivation:
    """Appendix A.4: f_ε(θ) = Ψ_ε(εθ - I/(4ε)), F_ε(z) = f_ε(z²), G_ε(α) = f_ε(-α²), and Prop. 8
    (x(1) = -x0 e^{-1/(2ε)})."""
    alpha = sp.Symbol("alpha", positive=True)
    psi = psi_closed_form(theta)
    f_eps = sp.simplify(psi.subs(theta, eps * theta - 1 / (4 * eps)))
    u = sp.Symbol("u", positive=True)
    f_stated = _stated_series(u).subs(u, theta)
    f_ok = _same_function(f_eps, f_stated, theta)
    z = sp.Symbol(
        "z", positive=True
    )  # F_ε is even and entire; z > 0 fixes the branch of sqrt(z²) = z
    F_eps = sp.simplify(f_eps.subs(theta, z**2))
    F_stated = sp.exp(-1 / (2 * eps)) * (sp.cosh(z) + sp.sinh(z) / (2 * eps * z))
    G = sp.simplify(
        sp.expand_complex(f_eps.subs(theta, -(alpha**2)).rewrite(sp.exp)).rewrite(sp.cos)
    )
    G_stated = sp.exp(-1 / (2 * eps)) * (sp.cos(alpha) + sp.sin(alpha) / (2 * eps * alpha))
    # Prop. 8
    ode = sp.Eq(X(t).diff(t, 2) + X(t).diff(t) / eps, (-(sp.pi**2) - 1 / (4 * eps**2)) * X(t))
    sol = sp.dsolve(ode, X(t), ics={X(0): x0, X(t).diff(t).subs(t, 0): 0}).rhs
    sol = sp.simplify(sp.expand_complex(sol.rewrite(sp.exp)).rewrite(sp.cos))
    x1 = sp.simplify(sol.subs(t, 1))
    sol_stated = (
        x0 * sp.exp(-t / (2 * eps)) * (sp.cos(sp.pi * t) + sp.sin(sp.pi * t) / (2 * sp.pi * eps))
    )
    steps = [
        Step(
            r"$f_\varepsilon(\theta) = \Psi_\varepsilon(\varepsilon\theta - "
            r"1/(4\varepsilon))$ from the closed "
            r"form of $\Psi_\varepsilon$; it equals the series "
            r"$e^{-1/(2\varepsilon)}\sum(\frac{1}{(2n)!} + "
            r"\frac{1}{2\varepsilon(2n+1)!})\theta^n$: " + ("exact" if f_ok else "MISMATCH"),
            f_eps,
        ),
        Step(r"$F_\varepsilon(z) = f_\varepsilon(z^2)$ (Lemma 1):", F_eps),
        Step(r"$G_\varepsilon(\alpha) = f_\varepsilon(-\alpha^2)$ (A.4.3):", G),
        Step("Prop. 8: solution of Eq. (14) with x(0) = x_0, x'(0) = 0:", sp.Eq(X(t), sol)),
        Step("at t = 1:", sp.Eq(sp.Symbol("x(1)"), x1)),
    ]
    return finish(
        "psi_eps_appendix",
        "f_ε, F_ε, G_ε and Prop. 8",
        "Momentum ResNets (003)",
        "A.4, Prop. 8",
        steps,
        [Check(F_LABEL, f_ok), F_eps, G, sol, x1],
        [Check(F_LABEL, True), F_stated, G_stated, sol_stated, -x0 * sp.exp(-1 / (2 * eps))],
    )


F_LABEL = "f_ε(θ) = Ψ_ε(εθ - 1/(4ε)) equals the series of Appendix A.4"


def _generic(name, k):
    return sp.Matrix(k, k, lambda i, j: sp.Symbol(f"{name}_{i + 1}{j + 1}"))


def heavy_ball_block_charpoly(J, F, gamma, lam=sp.Symbol("lambda")):
    """``(det(λI - H), ch_JF(λ(λ + γ)))`` for ``H = [[0, J], [F, -γI]]`` (Eq. (59)-(60) of the
    review).

    Raises
    ------
    ValueError
        If J or F is not a square sympy Matrix, or their sizes differ.
    """
    for name, M in (("J", J), ("F", F)):
        if not isinstance(M, sp.MatrixBase):
            raise ValueError(f"{name}: expected a sympy Matrix, got {type(M).__name__}")
        if not M.is_square:
            raise ValueError(f"{name}: expected a square block, got shape {M.shape}")
    if J.shape != F.shape:
        raise ValueError(f"F: expected the shape of J {J.shape}, got {F.shape}")
    k = J.rows
    x = sp.Dummy("x")
    H = sp.BlockMatrix([[sp.zeros(k), J], [F, -gamma * sp.eye(k)]]).as_explicit()
    chH = sp.expand((lam * sp.eye(2 * k) - H).det(method="berkowitz"))
    chJF = sp.expand((x * sp.eye(k) - J * F).det(method="berkowitz"))
    return chH, sp.expand(chJF.subs(x, lam * (lam + gamma)))


def eigen_pairing_charpoly(sizes=(1, 2)) -> Derivation:
    """(60)-(62) of the review: ch_H(λ) = ch_JF(λ(λ + γ)) for H = [[0, J], [F, -γI]]; roots pair
    with sum -γ."""
    lam, gamma, mu = sp.symbols("lambda gamma mu")
    results, stated, steps = [], [], []
    for k in sizes:
        chH, chJF_sub = heavy_ball_block_charpoly(_generic("J", k), _generic("F", k), gamma, lam)
        results.append(chH)
        stated.append(chJF_sub)
        steps.append(
            Step(
                rf"Block size n = {k}: $\det(\lambda I - H)$ with generic J, F (compared with "
                r"$ch_{JF}(\lambda(\lambda+\gamma))$):",
                sp.factor(chH) if k == 1 else None,
            )
        )
    roots = sp.solve(lam * (lam + gamma) - mu, lam)
    pair_sum = sp.simplify(sum(roots))
    steps.append(
        Step(
            r"Each eigenvalue $\mu$ of $JF$ gives the pair of roots of (62), with sum (Vieta):",
            pair_sum,
        )
    )
    return finish(
        "eigen_pairing_charpoly",
        "Eigenvalue pairing of the GHBNODE adjoint",
        "review (000)",
        "(60)-(62), Prop. 4",
        steps,
        [*results, pair_sum],
        [*stated, -gamma],
        "Eq. (60) as printed reads ch_H(λ) = -ch_JF(λ(λ+γ)); both sides are monic of degree 2n, so "
        "the minus sign is a typo: the identity holds without it (the roots, hence the "
        "pairing, are "
        "unaffected). The printed form is rejected by the exact check.",
    )


def revnet_jacobian(k: int = 2) -> Derivation:
    """Prop. 1 of the Momentum-ResNet paper: J(A, B) = [[I, A], [B, I + BA]] and λ² - (2 + μ)λ +
    1 = 0."""
    A, B = _generic("A", k), _generic("B", k)
    d = sp.Matrix(sp.symbols(f"delta_1:{k + 1}"))
    e = sp.Matrix(sp.symbols(f"epsilon_1:{k + 1}"))
    # first-order expansion at the fixed point: φ(x* + e) = A e, ψ(v* + w) = B w (φ(x*) = ψ(v*) = 0)
    v_new = d + A * e
    x_new = e + B * v_new
    Jac = sp.Matrix.vstack(v_new, x_new).jacobian(sp.Matrix.vstack(d, e))
    stated = sp.BlockMatrix([[sp.eye(k), A], [B, sp.eye(k) + B * A]]).as_explicit()
    lam, mu = sp.symbols("lambda mu")
    chJ = sp.expand((lam * sp.eye(2 * k) - Jac).det(method="berkowitz"))
    # ch_J(λ) = λ^k ch_AB((λ-1)²/λ): each eigenvalue μ of AB gives λ² - (2+μ)λ + 1 = 0
    y = sp.Symbol("y")
    chAB = (y * sp.eye(k) - A * B).det(method="berkowitz")
    via_AB = sp.expand(sp.cancel(lam**k * chAB.subs(y, (lam - 1) ** 2 / lam)))
    a, b = sp.symbols("a b")
    scalar_quad = sp.expand((lam * sp.eye(2) - sp.Matrix([[1, a], [b, 1 + b * a]])).det())
    steps = [
        Step(
            r"Linearise $\Psi(v, x) = (v + \varphi(x), x + \psi(v + \varphi(x)))$ at the "
            r"fixed point "
            r"($\varphi \approx A\,\epsilon$, $\psi \approx B\,\delta$) and differentiate:",
            Jac,
        ),
        Step(
            r"Characteristic polynomial: $\det(\lambda I - J) = "
            r"\lambda^d\,ch_{AB}((\lambda-1)^2/\lambda)$, "
            r"checked exactly for generic A, B of size " + str(k) + ".",
            None,
        ),
        Step(r"Scalar case ($\mu = ab$): the quadratic of the proof,", scalar_quad),
    ]
    return finish(
        "revnet_jacobian",
        "Jacobian of the RevNet iteration and its spectrum",
        "Momentum ResNets (003)",
        "Prop. 1",
        steps,
        [Jac, chJ, scalar_quad],
        [stated, via_AB, sp.expand((lam**2 - (2 + mu) * lam + 1).subs(mu, a * b))],
    )
