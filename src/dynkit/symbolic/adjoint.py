"""Adjoint equations of first-order systems, and the papers' specialisations.

For ``dz/dt = F(z, t, θ)`` and a terminal loss ``L(z(T))`` the adjoint row vector
``a(t) = ∂L/∂z(t)`` solves ``da/dt = -a ∂F/∂z`` with ``a(T) = ∂L/∂z_T`` and
``dL/dθ = ∫_{t0}^{T} a ∂F/∂θ dt`` (Eqs. (19)-(20) of the review). :func:`adjoint` computes these for
any system written in sympy, organised in named state blocks (``h``, ``m``, ...), so the result can
be read blockwise like the papers' Props. 1-3. Undefined sympy functions stand for arbitrary
networks: ``vector_function("f", 2, [*h, t])`` is a generic ``f: R^2 × R -> R^2``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import sympy as sp
from sympy.core.function import AppliedUndef

from .derivation import Derivation, Step, equivalent, finish

__all__ = [
    "ODESystem",
    "Adjoint",
    "adjoint",
    "vector_function",
    "state_block",
    "node_adjoint",
    "hbnode_adjoint_first_order",
    "hbnode_adjoint_second_order",
    "hbnode_adjoint_time_reversed",
    "hbnode_remark6",
    "ghbnode_adjoint",
    "sonode_adjoint",
    "hbnode_system",
    "ghbnode_system",
]

from ._validate import identifier, positive_int

t_sym = sp.Symbol("t", real=True)


def state_block(name: str, n: int) -> sp.Matrix:
    """Column vector of real symbols ``name_1..name_n``."""
    name, n = identifier("name", name), positive_int("n", n, what="the block's dimension")
    return sp.Matrix(sp.symbols(f"{name}_1:{n + 1}", real=True))


def vector_function(name: str, n: int, args: Sequence) -> sp.Matrix:
    """A generic (undefined) vector function ``name: args -> R^n`` as a column of applied
    functions."""
    name, n = identifier("name", name), positive_int("n", n, what="the function's output dimension")
    if isinstance(args, (str, bytes)) or not hasattr(args, "__iter__"):
        raise TypeError(
            f"args must be a sequence of sympy expressions; got {type(args).__name__} {args!r}"[
                :120
            ]
        )
    return sp.Matrix([sp.Function(f"{name}_{i + 1}")(*args) for i in range(n)])


def _column(value, what: str) -> sp.Matrix:
    if isinstance(value, (sp.MatrixBase, list, tuple)):
        m = sp.Matrix(value)
    elif isinstance(value, sp.Basic):
        m = sp.Matrix([value])
    else:
        raise ValueError(
            f"{what}: expected a sympy Matrix (column) or expression, got {type(value).__name__}"
        )
    if m.cols != 1:
        raise ValueError(f"{what}: expected a column vector, got shape {m.shape}")
    return m


@dataclass(frozen=True)
class ODESystem:
    """``dz/dt = F(z, t, θ)`` with the state split into named column blocks.

    Use :meth:`create` (validates the input).
    """

    state: dict
    rhs: dict
    params: tuple
    t: sp.Symbol

    @classmethod
    def create(cls, state, rhs, params: Sequence = (), t: sp.Symbol = t_sym) -> "ODESystem":
        """Build and validate a system.

        Parameters
        ----------
        state : Matrix or mapping name -> Matrix
            Column vector(s) of distinct sympy Symbols.
        rhs : Matrix or mapping name -> Matrix
            Right-hand side block(s), same names and shapes as ``state``.
        params : sequence of Symbol
            Parameters θ to differentiate the loss by.
        t : Symbol

        Raises
        ------
        ValueError
            For non-symbolic input, mismatched block names or shapes.
        """
        if not isinstance(state, Mapping):
            state = {"z": state}
        if not isinstance(rhs, Mapping):
            rhs = {"z": rhs}
        if set(state) != set(rhs):
            raise ValueError(f"rhs: expected blocks named {sorted(state)}, got {sorted(rhs)}")
        st, fr = {}, {}
        for name, block in state.items():
            col = _column(block, f"state[{name!r}]")
            if not all(isinstance(s, sp.Symbol) for s in col):
                raise ValueError(f"state[{name!r}]: expected sympy Symbols, got {list(col)}")
            f = _column(rhs[name], f"rhs[{name!r}]")
            if f.shape != col.shape:
                raise ValueError(
                    f"rhs[{name!r}]: expected shape {col.shape} (the state block's), got {f.shape}"
                )
            st[name], fr[name] = col, f
        symbols = [s for b in st.values() for s in b]
        if len(set(symbols)) != len(symbols):
            raise ValueError("state: the state symbols must be distinct")
        if not isinstance(t, sp.Symbol):
            raise ValueError(f"t: expected a sympy Symbol, got {t!r}")
        if isinstance(params, (str, bytes, sp.Basic)) or not hasattr(params, "__iter__"):
            raise TypeError(
                f"params: expected a sequence of sympy Symbols, got {type(params).__name__} "
                f"{params!r}"[:150]
            )
        params = tuple(params)
        if not all(isinstance(p, sp.Symbol) for p in params):
            raise ValueError(f"params: expected sympy Symbols, got {params}")
        return cls(st, fr, params, t)

    @property
    def z(self) -> sp.Matrix:
        return sp.Matrix.vstack(*self.state.values())

    @property
    def F(self) -> sp.Matrix:
        return sp.Matrix.vstack(*self.rhs.values())

    def blocks(self, row: sp.Matrix) -> dict:
        """Split a row (or column) over the state into the named blocks."""
        out, i = {}, 0
        flat = list(row)
        for name, b in self.state.items():
            out[name] = sp.Matrix([flat[i : i + len(b)]])
            i += len(b)
        return out


def _opaque(expr) -> set:
    return {a for a in sp.Matrix(expr).atoms(AppliedUndef)}


def _blockify(J: sp.Matrix, sys: ODESystem, known: Mapping[str, sp.Matrix]) -> sp.BlockMatrix:
    """Display form of a Jacobian: blocks that are 0, c·I, a known named matrix K or K + c·I."""
    names = list(sys.state)
    sizes = [len(sys.state[n]) for n in names]
    offs = np.cumsum([0, *sizes])
    rows = []
    for i, ni in enumerate(names):
        row = []
        for j, nj in enumerate(names):
            B = J[offs[i] : offs[i + 1], offs[j] : offs[j + 1]]
            row.append(_block_symbol(B, known))
        rows.append(row)
    return sp.BlockMatrix(rows)


def _block_symbol(B: sp.Matrix, known):
    def scalar_identity(D):
        if not D.is_square:
            return None
        off = all(sp.simplify(D[r, c]) == 0 for r in range(D.rows) for c in range(D.cols) if r != c)
        diag = [sp.simplify(D[k, k]) for k in range(D.rows)]
        if off and all(sp.simplify(d - diag[0]) == 0 for d in diag):
            return diag[0]
        return None

    for label, K in [(None, None), *known.items()]:
        if K is not None and K.shape != B.shape:
            continue
        D = B if K is None else B - K
        if all(sp.simplify(x) == 0 for x in D):
            return sp.ZeroMatrix(*B.shape) if K is None else sp.MatrixSymbol(label, *B.shape)
        c = scalar_identity(D)
        if c is not None:
            base = c * sp.Identity(B.rows)
            return base if K is None else sp.MatrixSymbol(label, *B.shape) + base
    return B


@dataclass
class Adjoint:
    """The adjoint of an :class:`ODESystem` (see :func:`adjoint`)."""

    system: ODESystem
    a: dict  # name -> row of adjoint symbols
    rhs: dict  # name -> row: da_name/dt
    terminal: dict  # name -> row: a_name(T)
    integrand: sp.Matrix  # row: a ∂F/∂θ (dL/dθ = ∫ integrand dt)
    jacobian: sp.Matrix
    param_jacobian: sp.Matrix
    loss: object = None

    @property
    def a_row(self) -> sp.Matrix:
        return sp.Matrix.hstack(*self.a.values())

    # -- numerics ----------------------------------------------------------------------------
    def numerical_check(
        self, seed: int = 0, n_points: int = 5, functions: Mapping | None = None
    ) -> float:
        """Max relative error of ``-a ∂F/∂z`` and ``a ∂F/∂θ`` against torch autograd vector-Jacobian
        products.

        Undefined functions in ``F`` are replaced by random smooth ones (``tanh`` of a random affine
        map of their arguments) unless ``functions`` (name -> sympy Lambda) is given; both sides use
        the same one. Points are drawn from N(0, 1) with ``seed``.
        """
        import torch

        rng = np.random.default_rng(seed)
        sys = self.system
        repl = dict(functions or {})
        for app in _opaque(sys.F):
            cls = app.func
            if str(cls) in repl or cls in repl:
                continue
            xs = sp.symbols(f"_u0:{len(app.args)}")
            w = rng.normal(size=len(xs))
            repl[cls] = sp.Lambda(
                xs, sp.tanh(sum(float(wi) * x for wi, x in zip(w, xs)) + float(rng.normal()))
            )
        repl = {(sp.Function(k) if isinstance(k, str) else k): v for k, v in repl.items()}

        # remaining free symbols (γ, ξ, ...) get random positive values
        fixed = set(sys.z) | set(sys.params) | {sys.t}
        others = sorted(sys.F.free_symbols - fixed, key=str)
        values = {s: float(0.1 + abs(rng.normal())) for s in others}

        def concrete(e):
            for k, v in repl.items():
                e = e.subs(k, v)
            return e.doit().subs(values)

        F = concrete(sys.F)
        rhs = concrete(sp.Matrix.hstack(*self.rhs.values()))
        integ = concrete(self.integrand)
        z, th, a = list(sys.z), list(sys.params), list(self.a_row)
        args = [sys.t, z, th]
        f_torch = sp.lambdify(args, list(F), modules="torch")
        rhs_np = sp.lambdify([sys.t, z, th, a], list(rhs), modules="numpy")
        int_np = sp.lambdify([sys.t, z, th, a], list(integ), modules="numpy") if th else None
        worst = 0.0
        for _ in range(n_points):
            tv, zv, thv, av = (
                rng.normal(),
                rng.normal(size=len(z)),
                rng.normal(size=len(th)),
                rng.normal(size=len(a)),
            )
            zt = torch.tensor(zv, dtype=torch.float64, requires_grad=True)
            tht = torch.tensor(thv, dtype=torch.float64, requires_grad=True)
            out = f_torch(
                torch.tensor(tv, dtype=torch.float64), list(zt.unbind()), list(tht.unbind())
            )
            out = torch.stack(
                [
                    o if torch.is_tensor(o) else torch.tensor(float(o), dtype=torch.float64)
                    for o in out
                ]
            )
            inputs = [zt, tht] if th else [zt]
            grads = torch.autograd.grad(out, inputs, torch.tensor(av), allow_unused=True)
            ref = -(grads[0] if grads[0] is not None else torch.zeros_like(zt)).numpy()
            got = np.array(rhs_np(tv, zv, thv, av), dtype=float)
            worst = max(worst, np.max(np.abs(got - ref)) / max(1.0, np.max(np.abs(ref))))
            if th:
                ref_t = (grads[1] if grads[1] is not None else torch.zeros_like(tht)).numpy()
                got_t = np.array(int_np(tv, zv, thv, av), dtype=float)
                worst = max(worst, np.max(np.abs(got_t - ref_t)) / max(1.0, np.max(np.abs(ref_t))))
        return float(worst)

    def gradient(
        self,
        z0,
        t0: float,
        T: float,
        param_values,
        method: str = "dopri5",
        rtol: float = 1e-10,
        atol: float = 1e-12,
    ):
        """``(dL/dz0, dL/dθ)`` by solving the forward system and then the adjoint system backwards
        with :func:`dynkit.solve` (numpy, float64). Needs an explicit ``F`` (no undefined functions)
        and ``loss``.
        """
        import dynkit as dk

        if self.loss is None:
            raise ValueError(
                "gradient: this adjoint was built without a loss; pass loss= to adjoint()"
            )
        sys = self.system
        if _opaque(sys.F):
            raise ValueError(
                f"gradient: F has undefined functions {sorted(map(str, _opaque(sys.F)))}; "
                "substitute concrete ones first"
            )
        z, th, a = list(sys.z), list(sys.params), list(self.a_row)
        pv = np.asarray(param_values, dtype=float)
        if pv.shape != (len(th),):
            raise ValueError(f"param_values: expected shape ({len(th)},), got {pv.shape}")
        z0 = np.asarray(z0, dtype=float)
        if z0.shape != (len(z),):
            raise ValueError(f"z0: expected shape ({len(z)},), got {z0.shape}")
        F = sp.lambdify([sys.t, z, th], list(sys.F), modules="numpy")
        rhs = sp.lambdify(
            [sys.t, z, th, a], list(sp.Matrix.hstack(*self.rhs.values())), modules="numpy"
        )
        integ = sp.lambdify([sys.t, z, th, a], list(self.integrand), modules="numpy")
        term = sp.lambdify(
            [z, th], list(sp.Matrix.hstack(*self.terminal.values())), modules="numpy"
        )
        n, p = len(z), len(th)

        def fwd(t, y):
            return np.array(F(t, y, pv), dtype=float)

        zT = dk.solve(fwd, z0, [t0, T], method=method, rtol=rtol, atol=atol).ys[-1]

        def back(t, y):
            zz, aa = y[:n], y[n : 2 * n]
            # dg/dt = -a ∂F/∂θ so that g(t0) = ∫_{t0}^{T} a ∂F/∂θ dt when g(T) = 0
            return np.concatenate(
                [
                    fwd(t, zz),
                    np.array(rhs(t, zz, pv, aa), dtype=float).ravel(),
                    -np.array(integ(t, zz, pv, aa), dtype=float).ravel(),
                ]
            )

        y_T = np.concatenate([zT, np.array(term(zT, pv), dtype=float).ravel(), np.zeros(p)])
        y_0 = dk.solve(back, y_T, [T, t0], method=method, rtol=rtol, atol=atol).ys[-1]
        return y_0[n : 2 * n], y_0[2 * n :]


def adjoint(
    system: ODESystem, loss=None, adjoint_names: Mapping[str, str] | None = None
) -> Adjoint:
    """Adjoint system of ``dz/dt = F(z, t, θ)`` (Eqs. (19)-(20) of the review).

    Parameters
    ----------
    system : ODESystem
    loss : sympy expression in the state symbols (read as the terminal state z(T)), optional
        Terminal loss; without it the terminal condition is left symbolic (``∂L/∂z_T``).
    adjoint_names : mapping, optional
        Symbol prefix per block (default ``a_<block>``).

    Returns
    -------
    Adjoint
        ``rhs[name]`` is ``da_name/dt`` (a row), ``terminal[name]`` is ``a_name(T)``,
        ``integrand`` is ``a ∂F/∂θ``.
    """
    if not isinstance(system, ODESystem):
        raise ValueError(
            f"system: expected an ODESystem (use ODESystem.create), got {type(system).__name__}"
        )
    if loss is not None and not isinstance(loss, sp.Basic):
        raise ValueError(f"loss: expected a sympy expression, got {type(loss).__name__}")
    names = dict(adjoint_names or {})
    a = {
        k: sp.Matrix([sp.symbols(f"{names.get(k, 'a_' + k)}_1:{len(b) + 1}", real=True)])
        for k, b in system.state.items()
    }
    z, F = system.z, system.F
    J = F.jacobian(z)
    Jp = F.jacobian(sp.Matrix(system.params)) if system.params else sp.zeros(F.rows, 0)
    a_row = sp.Matrix.hstack(*a.values())
    rhs = system.blocks(sp.expand(-a_row * J))
    integrand = sp.expand(a_row * Jp)
    if loss is None:
        terminal = {
            k: sp.Matrix([[sp.Symbol(rf"\partial L/\partial {s}_T") for s in b]])
            for k, b in system.state.items()
        }
    else:
        terminal = system.blocks(sp.Matrix([loss]).jacobian(z))
    return Adjoint(system, a, rhs, terminal, integrand, J, Jp, loss)


def adjoint_derivation(
    system: ODESystem,
    loss=None,
    stated=None,
    check_numerically: bool = False,
    known: Mapping[str, sp.Matrix] | None = None,
    name: str = "adjoint",
    title: str = "Adjoint equations",
    paper: str = "your system",
    equation: str = "adjoint of the stated system",
    seed: int = 0,
    notes: str = "",
    stated_latex: str | None = None,
) -> Derivation:
    """A worked :class:`Derivation` of the adjoint of ``system``.

    ``paper`` and ``equation`` label the result (its source line reads "``paper``, ``equation``"): a
    user's own system is labelled as such unless told otherwise (give e.g.
    ``paper="review (000)", equation="(19)-(20)"`` to cite the review's adjoint equations).

    ``stated`` (a dict block name -> row, like ``Adjoint.rhs``) is compared exactly; with
    ``check_numerically=True`` the derived equations are also compared with torch autograd at random
    points (relative error < 1e-10). Without either, ``check_passed`` is False (nothing was
    checked). ``stated_latex``, when given, is the statement as printed in the paper (shown beside
    the derived form in the report).
    """
    adj = adjoint(system, loss)
    known = dict(known or {})
    Jdisp = _blockify(adj.jacobian, system, known)
    a_sym = {k: sp.MatrixSymbol(rf"a_{{{k}}}", 1, len(b)) for k, b in system.state.items()}
    a_blocks = sp.BlockMatrix([[*a_sym.values()]])
    try:
        prod = sp.block_collapse(-a_blocks * Jdisp)
        block_rhs = (
            {k: prod.blocks[0, i] for i, k in enumerate(system.state)}
            if isinstance(prod, sp.BlockMatrix)
            else None
        )
    except Exception:  # block algebra is a display aid only
        block_rhs = None
    steps = [
        Step(
            "The forward system, block by block:",
            {rf"\dot{{{k}}}": v.T for k, v in system.rhs.items()},
        ),
        Step(r"Its Jacobian $\partial F/\partial z$ (block form):", Jdisp),
        Step(
            r"Adjoint $\dot a = -a\,\partial F/\partial z$ with $a = \partial L/\partial "
            r"z(t)$ a row vector, "
            "componentwise:",
            {rf"\dot a_{{{k}}}": v for k, v in adj.rhs.items()},
        ),
    ]
    if block_rhs:
        steps.append(Step("In block form:", {rf"\dot a_{{{k}}}": v for k, v in block_rhs.items()}))
    steps.append(
        Step(
            r"Terminal condition $a(T) = \partial L/\partial z_T$:",
            {rf"a_{{{k}}}(T)": v for k, v in adj.terminal.items()},
        )
    )
    if system.params:
        steps.append(
            Step(
                r"Parameter gradient $dL/d\theta = \int_{t_0}^T a\,\partial F/\partial\theta\,dt$, "
                "integrand:",
                adj.integrand,
            )
        )
    ok = equivalent(adj.rhs, stated) if stated is not None else None
    if check_numerically:
        err = adj.numerical_check(seed=seed)
        passed = (
            err < 1e-10
        )  # both sides are exact formulas evaluated in float64: only round-off differs
        steps.append(
            Step(
                f"Numerical check against torch autograd at 5 random points: max relative error "
                f"{err:.2e} ({'passed' if passed else 'FAILED'}, tolerance 1e-10).",
                None,
            )
        )
        ok = passed if ok is None else (ok and passed)
    labels = {k: rf"\dot a_{{{k}}}" for k in system.state}
    extra = {"adjoint": adj, "block_rhs": block_rhs, "labels": labels}
    if stated_latex is not None:
        extra["stated_latex"] = stated_latex
    return Derivation(name, title, paper, equation, steps, adj.rhs, stated, bool(ok), notes, extra)


# --------------------------------------------------------------------------------------------
# the papers' systems (generic f as undefined functions; n = 2 keeps the expressions readable —
# the algebra is blockwise, so nothing depends on n)


def hbnode_system(n: int = 2, f=None, gamma=None, params=()) -> ODESystem:
    """HBNODE (25): dh/dt = m, dm/dt = -γ m + f(h, t)."""
    n = positive_int("n", n, what="the dimension of h")
    h, m = state_block("h", n), state_block("m", n)
    gamma = sp.Symbol("gamma", positive=True) if gamma is None else gamma
    f = vector_function("f", n, [*h, t_sym]) if f is None else f(h)
    return ODESystem.create({"h": h, "m": m}, {"h": m, "m": -gamma * m + f}, params)


def ghbnode_system(n: int = 2, f=None, sigma=None, gamma=None, xi=None, params=()) -> ODESystem:
    """GHBNODE (48): dh/dt = σ(m), dm/dt = -γ m + f(h, t) - ξ h."""
    n = positive_int("n", n, what="the dimension of h")
    h, m = state_block("h", n), state_block("m", n)
    gamma = sp.Symbol("gamma", positive=True) if gamma is None else gamma
    xi = sp.Symbol("xi", positive=True) if xi is None else xi
    sigma = sp.Function("sigma") if sigma is None else sigma
    f = vector_function("f", n, [*h, t_sym]) if f is None else f(h)
    return ODESystem.create(
        {"h": h, "m": m}, {"h": m.applyfunc(sigma), "m": -gamma * m + f - xi * h}, params
    )


def _jac_f(sys: ODESystem, block: str = "h", name: str = "f") -> sp.Matrix:
    n = len(sys.state[block])
    f = vector_function(name, n, [*sys.state[block], t_sym])
    return f.jacobian(sys.state[block])


def node_adjoint() -> Derivation:
    """NODE adjoint (20), gradient (19) and the scalar closed form (54)."""
    n = 2
    h = state_block("h", n)
    theta = sp.symbols("theta_1:3", real=True)
    f = vector_function("f", n, [*h, t_sym, *theta])
    sys = ODESystem.create({"h": h}, {"h": f}, theta)
    adj = adjoint(sys)
    a = adj.a["h"]
    stated = {"h": -a * f.jacobian(h)}
    base = adjoint_derivation(
        sys,
        stated=stated,
        known={r"\partial f/\partial h": f.jacobian(h)},
        paper="review (000)",
        name="node_adjoint",
        title="NODE adjoint equation",
        equation="(19), (20), (54)",
    )
    integrand_ok = equivalent(adj.integrand, a * f.jacobian(sp.Matrix(theta)))
    # (54), scalar: a(t) = a(T) exp(-∫_T^t f_h ds) solves da/dt = -a f_h(t)
    s, T = sp.symbols("s T", real=True)
    aT = sp.Symbol("a_T", real=True)
    Jt = sp.Function(r"\partial f/\partial h")
    a54 = aT * sp.exp(-sp.Integral(Jt(s), (s, T, t_sym)))
    resid = sp.simplify(a54.diff(t_sym).doit() + a54 * Jt(t_sym))
    at_T = sp.simplify(a54.subs(t_sym, T).doit())
    base.steps.append(
        Step(
            r"Gradient (19): $dL/d\theta = \int a\,\partial f/\partial\theta\,dt$ "
            + ("(matches)" if integrand_ok else "(MISMATCH)"),
            adj.integrand,
        )
    )
    base.steps.append(
        Step(
            r"Scalar case: (54) solves the adjoint equation; residual of "
            r"$\dot a + a\,\partial f/\partial h$ and value at $T$:",
            [resid, at_T],
        )
    )
    base.result = {"rhs": base.result["h"], "integrand": adj.integrand, "eq54": [resid, at_T]}
    base.stated = {
        "rhs": stated["h"],
        "integrand": a * f.jacobian(sp.Matrix(theta)),
        "eq54": [0, aT],
    }
    base.check_passed = equivalent(base.result, base.stated)
    base.extra["labels"] = {
        "rhs": r"\dot a_h",
        "integrand": r"a\,\partial f/\partial\theta",
        "eq54": r"\text{(54): residual, } a(T)",
    }
    base.extra["stated_latex"] = (  # (20), (19) and (54) as printed
        r"\begin{aligned}\dot a_h &= -a_h\,\frac{\partial f}{\partial h} \\ "
        r"\frac{dL}{d\theta} &= \int_{t_0}^{T} a_h\,\frac{\partial f}{\partial\theta}\,dt \\ "
        r"a_h(t) &= a_h(T)\exp\left\{-\int_T^t \frac{\partial f}{\partial "
        r"h}\,ds\right\}\end{aligned}"
    )
    base.notes = (
        "(54) as written is exact for scalar h, or when the Jacobians at different times commute; "
        "for general matrices the solution is a time-ordered exponential."
    )
    return base


def hbnode_adjoint_first_order() -> Derivation:
    """Prop. 2, Eq. (41)/(46) of the review, with terminal conditions (45)."""
    sys = hbnode_system()
    gamma = sp.Symbol("gamma", positive=True)
    J = _jac_f(sys)
    a = adjoint(sys).a
    stated = {"h": -a["m"] * J, "m": -a["h"] + gamma * a["m"]}
    return adjoint_derivation(
        sys,
        stated=stated,
        known={r"\partial f/\partial h": J},
        paper="review (000)",
        name="hbnode_adjoint_first_order",
        title="Adjoint of the first-order HBNODE system",
        equation="(41), Prop. 2",
        stated_latex=(  # (41), as printed
            r"\begin{aligned}\dot a_h &= -a_m\,\frac{\partial f}{\partial h} \\ "
            r"\dot a_m &= -a_h + \gamma a_m\end{aligned}"
        ),
    )


def _as_functions(sys_adj: Adjoint):
    """Adjoint rows as functions of t, and the ODE as a substitution for their derivatives."""
    funcs = {
        k: sp.Matrix([[sp.Function(str(s))(t_sym) for s in row]]) for k, row in sys_adj.a.items()
    }
    to_f = {s: fs for k in sys_adj.a for s, fs in zip(sys_adj.a[k], funcs[k])}
    ode = {
        fs.diff(t_sym): sp.sympify(r).subs(to_f)
        for k in sys_adj.a
        for fs, r in zip(funcs[k], sys_adj.rhs[k])
    }
    return funcs, to_f, ode


def hbnode_adjoint_second_order() -> Derivation:
    """Prop. 1, Eq. (26) with terminal conditions (39): the adjoint of HBNODE is again a
    heavy-ball ODE."""
    sys = hbnode_system()
    gamma = sp.Symbol("gamma", positive=True)
    J = _jac_f(sys)
    Lfun = sp.Function("L")(*sys.state["h"])  # the loss sees h_T only
    adj = adjoint(sys, loss=Lfun)
    A, to_f, ode = _as_functions(adj)
    am, ah = A["m"], A["h"]
    # differentiate da_m/dt = -a_h + γ a_m once more and use the first-order system
    am_dot = am.diff(t_sym).subs(ode)
    am_ddot = am_dot.diff(t_sym).subs(ode)
    # eliminate a_h with the second equation: a_h = γ a_m - da_m/dt
    ah_elim = {x: y for x, y in zip(ah, gamma * am - am.diff(t_sym))}
    am_ddot = sp.expand(am_ddot.subs(ah_elim))
    lhs = am.diff(t_sym, 2) - gamma * am.diff(t_sym)
    result = sp.expand(am_ddot - gamma * am.diff(t_sym))
    stated = am * J
    # terminal conditions (39)
    aT_m = adj.terminal["m"]
    aT_mdot = sp.expand(-adj.terminal["h"] + gamma * adj.terminal["m"])
    dLdh = sp.Matrix([Lfun]).jacobian(sys.state["h"])
    steps = [
        Step(
            "First-order adjoint of (25) (Prop. 2):",
            {rf"\dot a_{{{k}}}": v for k, v in adj.rhs.items()},
        ),
        Step(
            r"Differentiate $\dot a_m = -a_h + \gamma a_m$ and substitute $\dot a_h$:",
            sp.Eq(am.diff(t_sym, 2), sp.expand(am_dot.diff(t_sym).subs(ode))),
        ),
        Step(
            r"Eliminate $a_h = \gamma a_m - \dot a_m$: Eq. (26) for $a := a_m$,", sp.Eq(lhs, result)
        ),
        Step(
            r"Terminal conditions: $L$ depends on $h_T$ only, so $a_m(T) = 0$ and "
            r"$\dot a_m(T) = -a_h(T) + \gamma a_m(T) = -\partial L/\partial h_T$ (39).",
            [aT_m, aT_mdot],
        ),
    ]
    return finish(
        "hbnode_adjoint_second_order",
        "Second-order adjoint of HBNODE",
        "review (000)",
        "(26), (39), Prop. 1",
        steps,
        {"eq26": result, "aT": aT_m, "aT_dot": aT_mdot},
        {"eq26": stated, "aT": sp.zeros(1, 2), "aT_dot": -dLdh},
        "The proof works with the adjoint of the velocity, a = a_m = dL/dm (Eqs. (33)-(38)); the "
        "proposition's wording 'a = dL/dh' refers to the same quantity only through this proof.",
        labels={"eq26": r"\ddot a_m - \gamma\dot a_m", "aT": r"a_m(T)", "aT_dot": r"\dot a_m(T)"},
        # (26) and (39) as printed (with a := a_m)
        stated_latex=r"\begin{aligned}\ddot a_m - \gamma\dot a_m &= a_m\,\frac{\partial f}{\partial h} \\ "  # noqa: E501
        r"a_m(T) &= 0 \\ \dot a_m(T) &= -\frac{\partial L}{\partial h_T}\end{aligned}",
    )


def hbnode_adjoint_time_reversed() -> Derivation:
    """Remark 5, Eq. (40): with τ = T - t, b(τ) = a(T - τ) solves b'' + γ b' = b ∂f/∂h(h(T - τ))."""
    gamma = sp.Symbol("gamma", positive=True)
    T, tau = sp.symbols("T tau", real=True)
    n = 2
    b = sp.Matrix([[sp.Function(f"b_{i + 1}")(tau) for i in range(n)]])
    Jt = sp.Matrix(n, n, lambda i, j: sp.Function(f"J_{i + 1}{j + 1}")(t_sym))  # ∂f/∂h along h(t)
    a_of_t = sp.Matrix([[sp.Function(f"b_{i + 1}")(T - t_sym) for i in range(n)]])
    res26 = a_of_t.diff(t_sym, 2) - gamma * a_of_t.diff(t_sym) - a_of_t * Jt  # (26) as a residual
    in_tau = sp.expand(res26.subs(t_sym, T - tau).doit())
    stated = sp.expand(b.diff(tau, 2) + gamma * b.diff(tau) - b * Jt.subs(t_sym, T - tau))
    steps = [
        Step(
            r"Residual of (26) for $a(t) = b(T - t)$; $J(t) = \partial f/\partial h(h(t), t, "
            r"\theta)$:",
            res26,
        ),
        Step(r"In the reversed time $\tau = T - t$ (each $d/dt$ becomes $-d/d\tau$):", in_tau),
    ]
    return finish(
        "hbnode_adjoint_time_reversed",
        "The HBNODE adjoint in reversed time is a heavy-ball ODE",
        "review (000)",
        "(40), Remark 5",
        steps,
        in_tau,
        stated,
        "Same damping γ, with the sign of the friction term restored: the backward solve is "
        "a damped "
        "heavy-ball ODE.",
    )


def hbnode_remark6() -> Derivation:
    """Remark 6, Eq. (47): a_m and its derivative form a first-order heavy-ball system; a_h = γ
    a_m - ã_m."""
    sys = hbnode_system()
    gamma = sp.Symbol("gamma", positive=True)
    J = _jac_f(sys)
    adj = adjoint(sys)
    A, to_f, ode = _as_functions(adj)
    am, ah = A["m"], A["h"]
    at = sp.Matrix([[sp.Function(rf"\tilde a_{{m,{i + 1}}}")(t_sym) for i in range(am.cols)]])
    am_dot = am.diff(t_sym).subs(ode)  # ã_m := da_m/dt
    at_dot = sp.expand(am_dot.diff(t_sym).subs(ode))  # dã_m/dt
    # express through (a_m, ã_m): a_h = γ a_m - ã_m
    ah_of = sp.expand(
        sp.Matrix([[sp.solve(sp.Eq(x, y), ahi)[0] for x, y, ahi in zip(at, am_dot, ah)]])
    )
    at_dot = sp.expand(at_dot.subs({x: y for x, y in zip(ah, ah_of)}))
    result = {"am_dot": at, "at_dot": at_dot, "a_h": ah_of}
    stated = {"am_dot": at, "at_dot": am * J + gamma * at, "a_h": gamma * am - at}
    steps = [
        Step(
            r"From Prop. 2: $\tilde a_m := \dot a_m = -a_h + \gamma a_m$, hence", sp.Eq(ah, ah_of)
        ),
        Step(
            r"Differentiating once more and using $\dot a_h = -a_m\,\partial f/\partial h$:",
            sp.Eq(at.diff(t_sym), at_dot),
        ),
    ]
    return finish(
        "hbnode_remark6",
        "First-order heavy-ball form of the HBNODE adjoint",
        "review (000)",
        "(47), Remark 6",
        steps,
        result,
        stated,
        labels={"am_dot": r"\dot a_m", "at_dot": r"\dot{\tilde a}_m", "a_h": "a_h"},
    )


def ghbnode_adjoint() -> Derivation:
    """Prop. 3, Eq. (49)/(53): adjoint of GHBNODE (48)."""
    sys = ghbnode_system()
    gamma, xi = sp.Symbol("gamma", positive=True), sp.Symbol("xi", positive=True)
    J = _jac_f(sys)
    m = sys.state["m"]
    sig_p = sp.diag(*[sp.Function("sigma")(x).diff(x) for x in m])
    a = adjoint(sys).a
    stated = {"h": -a["m"] * (J - xi * sp.eye(2)), "m": -a["h"] * sig_p + gamma * a["m"]}
    return adjoint_derivation(
        sys,
        stated=stated,
        known={r"\partial f/\partial h": J, r"\sigma'(m)": sig_p},
        paper="review (000)",
        name="ghbnode_adjoint",
        title="Adjoint of GHBNODE",
        equation="(49), (53), Prop. 3",
        stated_latex=(  # (49), as printed
            r"\begin{aligned}\dot a_h &= -a_m\left(\frac{\partial f}{\partial h} - \xi I\right) \\ "
            r"\dot a_m &= -a_h\,\sigma'(m) + \gamma a_m\end{aligned}"
        ),
    )


def sonode_adjoint() -> Derivation:
    """SONODE second-order adjoint (35) and terminal conditions (36), from the first-order
    adjoint (29)-(30)."""
    n = 2
    h, v = state_block("h", n), state_block("v", n)
    f = vector_function("f", n, [*h, *v, t_sym])
    sys = ODESystem.create({"h": h, "v": v}, {"h": v, "v": f})
    Lfun = sp.Function("L")(*h, *v)
    adj = adjoint(sys, loss=Lfun)
    A, to_f, ode = _as_functions(adj)
    H = sp.Matrix([sp.Function(f"H_{i + 1}")(t_sym) for i in range(n)])
    Vv = sp.Matrix([sp.Function(f"V_{i + 1}")(t_sym) for i in range(n)])
    along = {**dict(zip(h, H)), **dict(zip(v, Vv))}
    Jh, Jv = f.jacobian(h), f.jacobian(v)
    av, ah = A["v"], A["h"]
    av_dot = av.diff(t_sym).subs(ode).subs(along)
    av_ddot = av_dot.diff(t_sym).subs(ode).subs(along)
    ah_elim = sp.solve(list(av.diff(t_sym) - av_dot), list(ah), dict=True)[0]
    av_ddot = sp.expand(av_ddot.subs(ah_elim).doit())
    stated = sp.expand((av * Jh.subs(along) - (av * Jv.subs(along)).diff(t_sym)).doit())
    aT_v = adj.terminal["v"]
    aT_vdot = sp.expand(-adj.terminal["h"] - adj.terminal["v"] * Jv)
    dL = sp.Matrix([Lfun])
    steps = [
        Step(
            "First-order adjoint of (27) (Eqs. (29)-(30)):",
            {rf"\dot a_{{{k}}}": v_ for k, v_ in adj.rhs.items()},
        ),
        Step(
            r"Differentiate $\dot a_v$ along the trajectory and eliminate $a_h$:",
            sp.Eq(av.diff(t_sym, 2), av_ddot),
        ),
        Step(r"Terminal conditions (36): $a_v(T)$ and $\dot a_v(T)$", [aT_v, aT_vdot]),
    ]
    return finish(
        "sonode_adjoint",
        "Second-order adjoint of SONODE",
        "review (000)",
        "(35), (36)",
        steps,
        {"eq35": av_ddot, "aT": aT_v, "aT_dot": aT_vdot},
        {"eq35": stated, "aT": dL.jacobian(v), "aT_dot": -dL.jacobian(h) - dL.jacobian(v) * Jv},
        labels={"eq35": r"\ddot a_v", "aT": r"a_v(T)", "aT_dot": r"\dot a_v(T)"},
    )
