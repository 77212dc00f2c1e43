"""The continuous limit of any discrete momentum scheme.

A scheme is a recursion in iterates ``x[k + j]`` (any number of past iterates, one or several
sequences such as ``x`` and ``v``), with coefficients that may depend on the iteration ``k`` and on
a step parameter (``h`` or ``s``), and a time scaling ``t = k dt`` with ``dt`` a power of the step
(``dt = h``, ``dt = sqrt(s)``). The iterates are read as samples of smooth curves,
``x[k + j] = x(t + j dt)``, ``k = t / dt``; each equation's residual is expanded in ``dt``
(undefined functions such as ``grad F`` by Taylor's formula around the limit of their argument), and
the first nonzero coefficient is the leading-order ODE. The next nonzero coefficient gives the order
of the first correction.

>>> import sympy as sp
>>> from dynkit.symbolic import continuous_limit, iterate, k
>>> from dynkit.symbolic.schemes import t
>>> x, s, r = iterate("x"), sp.Symbol("s", positive=True), sp.Symbol("r", positive=True)
>>> grad = sp.Function("g")
>>> beta = (k - 1) / (k + r - 1)
>>> y = x[k] + beta * (x[k] - x[k - 1])
>>> X = sp.Function("x")(t)
>>> stated = sp.Eq(X.diff(t, 2) + r / t * X.diff(t) + grad(X), 0)   # Su, Boyd & Candes' limit, r for 3
>>> d = continuous_limit([sp.Eq(x[k + 1], y - s * grad(y))], step=s, dt=sp.sqrt(s), stated=[stated])
>>> d.check_passed, d.extra["limit"].correction_orders
(True, [1])
"""  # noqa: E501

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import sympy as sp
from sympy.core.function import AppliedUndef

from .derivation import Check, Derivation, Step, finish

__all__ = ["k", "t", "iterate", "continuous_limit", "SchemeLimit", "NoContinuousLimit"]

k = sp.Symbol("k", positive=True)
"""The iteration index of a scheme (``x[k + 1]``, coefficients such as ``(k - 1)/(k + 2)``)."""
t = sp.Symbol("t", real=True)
"""Continuous time, ``t = k dt``."""
_H = sp.Dummy("dt", positive=True)  # the expansion variable: never equal to a symbol of the scheme
_MAX_ORDER = 8  # series terms tried before a residual is called consistent to all computed orders


class NoContinuousLimit(ValueError):
    """The scheme has no non-trivial continuous limit at the time scaling asked; the message
    names the term."""


def iterate(name: str) -> sp.IndexedBase:
    """A sequence of iterates, indexed like ``x[k + 1]``, ``x[k]``, ``x[k - 1]`` (its limit is
    the curve ``Function(name)(t)``)."""
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"name must be an identifier such as 'x' or 'v'; got {name!r}")
    return sp.IndexedBase(name)


@dataclass(frozen=True)
class SchemeLimit:
    """What :func:`continuous_limit` found, per equation of the scheme.

    Attributes
    ----------
    odes : list of sympy.Eq
        The leading-order equations, ``c_q = 0`` (``c_q`` the first nonzero coefficient of the
        residual's series in ``dt``).
    leading_orders : list of sympy.Rational
        ``q`` per equation: the residual is ``c_q dt^q + ...``, so it is divided by ``dt^q``.
    correction_orders : list of sympy.Rational or None
        ``m`` per equation: the first correction is ``O(dt^m)`` relative to the leading term (the
        next nonzero coefficient, before the leading ODE is used to simplify it); None when every
        computed term vanished.
    corrections : list of sympy.Expr or None
        Those next coefficients.
    dt : sympy.Expr
        The time step of the scaling ``t = k dt`` that was used.
    tried : dict
        For an automatic scaling: each ``dt`` tried and why it was rejected.
    """

    odes: list
    leading_orders: list
    correction_orders: list
    corrections: list
    dt: sp.Expr
    tried: dict


def _as_equations(equations) -> list[sp.Eq]:
    if isinstance(equations, (sp.Eq, sp.Expr)):
        equations = [equations]
    try:
        items = list(equations)
    except TypeError:
        raise TypeError(
            f"equations must be a sympy Eq (or expression = 0) or a list of them; got "
            f"{type(equations).__name__}"
        ) from None
    if not items:
        raise ValueError("equations must hold at least one equation of the scheme")
    out = []
    for i, e in enumerate(items):
        if isinstance(e, sp.Eq):
            out.append(e)
        elif isinstance(e, sp.Expr):
            out.append(sp.Eq(e, 0, evaluate=False))
        else:
            raise TypeError(
                f"equations[{i}] must be a sympy Eq or expression; got {type(e).__name__} {e!r}"[
                    :160
                ]
            )
    return out


def _iterates(eqs: list[sp.Eq]) -> dict:
    """Every ``x[k + j]`` of the scheme -> the curve ``x(t + j dt)``; refuses an index that is
    not ``k + integer``."""
    found = {}
    for e in eqs:
        for item in (e.lhs - e.rhs).atoms(sp.Indexed):
            if len(item.indices) != 1:
                raise ValueError(
                    f"equations: iterate {item} must have one index k + j; got {len(item.indices)}"
                )
            shift = sp.simplify(item.indices[0] - k)
            if not shift.is_integer:
                raise ValueError(
                    f"equations: iterate {item}: its index must be k + an integer (e.g. x[k + 1], "
                    f"x[k - 1]); "
                    f"got k + {shift}"
                )
            found[item] = sp.Function(str(item.base))(t + int(shift) * _H)
    if not found:
        raise ValueError(
            "equations: the scheme has no iterate: write the sequences with "
            "dk.symbolic.iterate('x') "
            "and index them as x[k + 1], x[k], ..."
        )
    return found


def _series_terms(expr, order: int) -> dict:
    """``{power: coefficient}`` of the series of ``expr`` in ``_H`` up to ``_H**order`` (nonzero
    ones only)."""
    ser = sp.series(expr, _H, 0, order).removeO().doit()
    ser = sp.expand(ser)
    if ser.has(sp.log(_H)) or any(isinstance(a, sp.Order) for a in sp.preorder_traversal(ser)):
        raise NoContinuousLimit(f"no power series in dt: {ser}")
    out = {}
    for term in sp.Add.make_args(ser):
        coeff, power = sp.S.One, sp.S.Zero
        for factor in sp.Mul.make_args(term):
            base, exp = factor.as_base_exp()
            if base == _H:
                power += exp
            else:
                coeff *= factor
        if coeff.has(_H):
            raise NoContinuousLimit(f"the term {term} has no power series in dt")
        out[power] = out.get(power, 0) + coeff
    return {p: c for p, c in ((p, sp.expand(c)) for p, c in out.items()) if not _vanishes(c)}


def _vanishes(c) -> bool:
    return c == 0 or sp.simplify(c) == 0


def _taylor_functions(expr, curves: set, depth: int = 3):
    """Undefined functions of an argument that depends on dt
    (``grad F(x(t) + beta (x(t) - x(t - h)))``) expanded by Taylor's formula around the
    argument's limit: ``g(a0) + g'(a0)(a - a0) + ...`` (``g'`` a new undefined function), so the
    series in dt needs no derivative of an undefined function at a composite argument."""

    def expand(call):
        if call.func in curves or not call.has(_H):
            return call
        if len(call.args) != 1:
            raise ValueError(
                f"{call.func}: functions of several arguments are not supported in a scheme"
            )
        arg = call.args[0]
        a0 = sp.expand(sp.series(arg, _H, 0, 1).removeO().doit())
        if a0.has(_H):
            raise NoContinuousLimit(f"the argument of {call.func}, {arg}, has no limit as dt -> 0")
        delta = arg - a0
        name = call.func.__name__
        return call.func(a0) + sum(
            sp.Function(name + "'" * j)(a0) * delta**j / sp.factorial(j)
            for j in range(1, depth + 1)
        )

    return expr.replace(
        lambda e: isinstance(e, AppliedUndef) and e.func not in curves and e.has(_H), expand
    )


def _expand(eqs, step, dt):
    """Per equation: ``(q, c_q, m or None, c_{q+m} or None)`` of the residual's series in dt."""
    solved = sp.solve(sp.Eq(_H, dt), step, dict=True)
    if not solved:
        raise ValueError(
            f"dt must be an invertible expression of step {step} (e.g. {step} or "
            f"sqrt({step})); got {dt}"
        )
    step_of_h = solved[0][step]
    curves = _iterates(eqs)
    funcs = {c.func for c in curves.values()}
    out = []
    for number, e in enumerate(eqs):
        residual = (e.lhs - e.rhs).xreplace(curves).subs({k: t / _H, step: step_of_h})
        residual = _taylor_functions(residual, funcs)
        terms = {}
        for order in range(3, _MAX_ORDER + 1):
            terms = _series_terms(residual, order)
            if len(terms) >= 2:
                break
        if not terms:
            raise NoContinuousLimit(
                f"equation {number} of the scheme, {e}, vanishes to order dt^{_MAX_ORDER - 1}: "
                "it does not determine a limit"
            )
        powers = sorted(terms)
        q = powers[0]
        m = powers[1] - q if len(powers) > 1 else None
        out.append((q, terms[q], m, terms[powers[1]] if m is not None else None))
    return out, funcs


def _nontrivial(c, funcs) -> bool:
    """The leading equation moves the curves (a time derivative of one) and is driven by
    something besides its derivatives (a field, a force, the state itself): ``x' = 0`` or
    ``x'' = 0`` alone are trivial limits."""
    derivs = [d for d in c.atoms(sp.Derivative) if d.expr.func in funcs]
    if not derivs:
        return False
    rest = c.subs({d: 0 for d in derivs})
    return not _vanishes(rest)


def _divergent_terms(eqs, step, dt) -> list[str]:
    """The coefficients of the scheme that diverge as dt -> 0 at this scaling (named in the
    error)."""
    step_of_h = sp.solve(sp.Eq(_H, dt), step, dict=True)[0][step]
    named = []
    for e in eqs:
        for term in sp.Add.make_args(sp.expand(e.lhs - e.rhs)):
            coeff = term.subs({i: 1 for i in term.atoms(sp.Indexed)})
            coeff = coeff.replace(lambda a: isinstance(a, AppliedUndef), lambda a: sp.S.One)
            c = sp.limit(coeff.subs({k: t / _H, step: step_of_h}), _H, 0, "+")
            if c.is_infinite or c in (sp.oo, -sp.oo, sp.zoo):
                named.append(f"{term} (its coefficient {coeff} diverges as {step} -> 0)")
    return named


def continuous_limit(
    equations,
    *,
    step: sp.Symbol,
    dt: sp.Expr | None = None,
    stated=None,
    name: str = "scheme_limit",
    title: str = "Continuous limit of a discrete scheme",
    paper: str = "your scheme",
    equation: str = "continuous limit",
    notes: str = "",
) -> Derivation:
    r"""The continuous limit of a discrete scheme, as a :class:`Derivation` (steps, result, LaTeX).

    Parameters
    ----------
    equations : sympy.Eq or list of sympy.Eq
        The scheme: recursions in iterates ``x[k + j]`` made with :func:`iterate` (one or several
        sequences, any past iterates), coefficients that may depend on :data:`k` and on ``step``,
        and any undefined functions (``sp.Function("grad F")``) applied to iterates or combinations
        of them.
    step : sympy.Symbol
        The step parameter of the scheme (``h``, ``s``); positive.
    dt : sympy.Expr, optional
        The time step of the scaling ``t = k dt``, a power of ``step`` (``h``, ``sp.sqrt(s)``). None
        tries ``sqrt(step)`` then ``step`` and keeps the first with a non-trivial limit (the leading
        equation moves the curves and is driven by more than their own derivatives);
        ``SchemeLimit.tried`` says why others failed.
    stated : optional
        The limit you expect, in the curves ``Function(name)(t)`` of time ``t = sp.Symbol("t",
        real=True)`` (a sympy Eq, an expression = 0, or a list, one per equation of the scheme):
        compared exactly with the derived ODEs by :func:`equivalent` (``Derivation.check_passed``).
        Without it ``check_passed`` is False (nothing was compared) and the note says so.
    name, title, paper, equation, notes : str
        Labels of the derivation (a user's scheme is labelled "your scheme" unless told otherwise).

    Returns
    -------
    Derivation
        ``result`` is the list of leading-order ODEs (``Eq(c_q, 0)`` per equation);
        ``extra["limit"]`` the :class:`SchemeLimit` (orders of the leading term and of the first
        correction, the scaling used).

    Raises
    ------
    NoContinuousLimit
        When the scheme has no non-trivial limit at the scaling asked (or at any scaling tried); the
        message names the diverging term(s) or the trivial leading equation.
    ValueError, TypeError
        For a malformed scheme (an index that is not ``k + integer``, no iterate, a ``dt`` that is
        not a function of ``step``), before any expansion.
    """
    eqs = _as_equations(equations)
    if not isinstance(step, sp.Symbol):
        raise TypeError(f"step must be a sympy Symbol (h, s); got {type(step).__name__} {step!r}")
    if dt is not None:
        dt = sp.sympify(dt)
        if not dt.has(step) or dt.free_symbols - {step}:
            raise ValueError(
                f"dt must be a power of step {step} alone (e.g. {step} or sqrt({step})); got {dt}"
            )
    _iterates(eqs)  # refuse a malformed scheme before any work
    candidates = [dt] if dt is not None else [sp.sqrt(step), step]
    tried = {}
    for cand in candidates:
        try:
            expanded, funcs = _expand(eqs, step, cand)
        except NoContinuousLimit as exc:
            tried[cand] = str(exc)
            continue
        trivial = [i for i, (_, c, _, _) in enumerate(expanded) if not _nontrivial(c, funcs)]
        if not trivial:
            break
        divergent = _divergent_terms(eqs, step, cand)
        tried[cand] = (
            "the leading equation "
            + "; ".join(f"{sp.Eq(expanded[i][1], 0)} (equation {i})" for i in trivial)
            + " is trivial"
            + (
                ": " + "; ".join(divergent)
                if divergent
                else " (no forcing survives at this scaling: try another dt)"
            )
        )
    else:
        raise NoContinuousLimit(
            f"no non-trivial continuous limit with t = k dt for dt in "
            f"{[str(c) for c in candidates]}: "
            + " | ".join(f"dt = {c}: {why}" for c, why in tried.items())
        )
    chosen = cand
    odes = [sp.Eq(c, 0) for _, c, _, _ in expanded]
    limit = SchemeLimit(
        odes,
        [q for q, _, _, _ in expanded],
        [m for _, _, m, _ in expanded],
        [c1 for _, _, _, c1 in expanded],
        chosen,
        tried,
    )
    steps = [
        Step("The scheme:", eqs),
        Step(
            rf"Samples of smooth curves, $t = k\,\Delta t$ with $\Delta t = {sp.latex(chosen)}$: "
            rf"$x_{{k+j}} = x(t + j\Delta t)$, $k = t/\Delta t$; undefined functions "
            rf"expanded around the limit of "
            r"their argument; the series of each residual in $\Delta t$ starts at:",
            [sp.Eq(sp.Symbol(f"q_{i}"), q) for i, (q, _, _, _) in enumerate(expanded)],
        ),
        Step(r"Leading-order equations (the first nonzero coefficient of each series):", odes),
    ]
    corr = [(i, m, c1) for i, (_, _, m, c1) in enumerate(expanded) if m is not None]
    if corr:
        steps.append(
            Step(
                r"First correction: the next nonzero coefficient, of relative order $\Delta "
                r"t^{m}$:",
                [sp.Eq(sp.Symbol(f"m_{i}"), m) for i, m, _ in corr],
            )
        )
    if tried:
        steps.append(
            Step(
                "Scalings tried first and rejected: "
                + "; ".join(f"dt = {c}: {why}" for c, why in tried.items()),
                None,
            )
        )
    if stated is None:
        notes = (notes + " " if notes else "") + "No stated limit was given: check_passed is False."
        return finish(
            name,
            title,
            paper,
            equation,
            steps,
            odes,
            [Check("no stated limit was given to compare with", False)],
            notes,
            limit=limit,
        )
    stated_list = _as_equations(stated)
    if len(stated_list) != len(odes):
        raise ValueError(
            f"stated must give one equation per equation of the scheme ({len(odes)}); got "
            f"{len(stated_list)}"
        )
    d = finish(name, title, paper, equation, steps, odes, stated_list, notes, limit=limit)
    if (
        not d.check_passed
    ):  # the same ODE up to a constant factor: say so, but the exact check stays failed
        ratios = [sp.simplify((a.lhs - a.rhs) / (b.lhs - b.rhs)) for a, b in zip(odes, stated_list)]
        if all(r.is_number and r != 0 for r in ratios):
            d.notes = (
                d.notes + " " if d.notes else ""
            ) + f"The derived ODEs equal the stated ones up to the constant factors {ratios}."
    return d
