"""Sphinx extension: write the pages that come from dynkit itself, at build time, into docs/generated/.

- ``generated/derivations/``: one page per entry of ``dynkit.symbolic.DERIVATIONS`` (sympy output,
  never typed by hand) and an index;
- ``generated/propositions/``: one page per ``dynkit.theory.CLAIMS`` entry (statement, hypotheses,
  how it is checked) with the table of a check run at build time (``DYNKIT_DOCS_INSTANCES``
  instances, default 50, seed 0);
- ``generated/methods.md``: the steppers of ``dynkit.solvers.METHODS`` with the NFE each spends on
  a test problem;
- ``generated/cli.md``: the ``--help`` of every ``dynkit`` command.

A component that is not installed gives a page that says so (the build does not fail); a
derivation or check that raises is a Sphinx warning, hence an error under ``-W``.
"""
from __future__ import annotations

import inspect
import io
import os
from contextlib import redirect_stdout
from pathlib import Path
from typing import Callable

from sphinx.util import logging

logger = logging.getLogger(__name__)


def _write(path: Path, text: str) -> None:
    # Rewrite only on change, so an incremental build does not re-read every generated page.
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def _unavailable(title: str, exc: Exception) -> str:
    return f"# {title}\n\n```{{note}}\nNot available in this build: {exc}\n```\n"


def _math(latex: str) -> str:
    return f"```{{math}}\n{latex}\n```\n"


def derivation_pages(out: Path, derivations: dict[str, Callable] | None, missing: Exception | None = None,
                     warn: Callable[[str], None] = logger.warning) -> None:
    """Write ``out/index.md`` and ``out/<name>.md`` for every derivation."""
    from dynkit.report import latex_of

    title = "Worked derivations"
    if derivations is None:
        _write(out / "index.md", _unavailable(title, missing))
        return
    toc = []
    for name, make in derivations.items():
        try:
            d = make()
        except Exception as exc:
            warn(f"dynkit.symbolic.DERIVATIONS[{name!r}] raised {type(exc).__name__}: {exc}")
            _write(out / f"{name}.md", f"# {name}\n\nThis derivation raised `{type(exc).__name__}: {exc}`.\n")
            toc.append(name)
            continue
        verdict = ("The derived result **matches** the paper's equation." if d.check_passed else
                   "**The derived result does not match the paper's equation** (see the last two equations).")
        lines = [f"# {d.title}", "", f"*{d.paper}, {d.equation}.* Generated from "
                 f"`dynkit.symbolic.DERIVATIONS[{name!r}]` when these docs were built.", ""]
        for i, step in enumerate(d.steps, 1):
            lines += [f"**Step {i}.** {step.text}", ""]
            if step.expr is not None:
                lines += [_math(latex_of(step.expr))]
        if d.result is not None:
            lines += ["**Result.**", "", _math(latex_of(d.result))]
        if d.stated is not None:
            lines += [f"**As stated in the paper** ({d.equation}).", "", _math(latex_of(d.stated))]
        lines += [verdict, ""]
        lines += ["LaTeX source:", "", "```latex", d.to_latex(), "```", ""]
        _write(out / f"{name}.md", "\n".join(lines))
        toc.append(name)
    index = [f"# {title}", "", "Each page below is produced by sympy from `dynkit.symbolic.DERIVATIONS` at build "
             "time: no equation is typed by hand, so the pages cannot drift from the code.", "",
             "```{toctree}", ":maxdepth: 1", "", *toc, "```", ""]
    _write(out / "index.md", "\n".join(index))


def _table(headers: list[str], rows: list[list]) -> str:
    def fmt(x):
        if isinstance(x, bool):
            return "yes" if x else "**NO**"
        if not isinstance(x, (int, str)) and hasattr(x, "__float__"):
            return f"{float(x):.3g}"  # float, numpy, mpmath, sympy numbers
        return str(x).replace("|", "\\|")

    return "\n".join(["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
                     + ["| " + " | ".join(fmt(c) for c in r) + " |" for r in rows]) + "\n"


HOW_CHECKED = ("`dynkit.theory.CLAIMS[{id!r}].run(n_instances, seed)` draws random instances that satisfy the "
               "hypotheses, evaluates both sides of the claim on each and records the worst residual; the claim "
               "holds when that residual is within the tolerance. Run it yourself with "
               "`dynkit verify {id} --instances 1000`.")


def proposition_pages(out: Path, claims: dict | None, run_all: Callable | None, n_instances: int,
                      missing: Exception | None = None, warn: Callable[[str], None] = logger.warning) -> None:
    """Write ``out/index.md`` (summary table) and ``out/<id>.md`` for every claim."""
    title = "Proposition checks"
    if claims is None or run_all is None:
        _write(out / "index.md", _unavailable(title, missing))
        return
    try:
        table = run_all(n_instances=n_instances, seed=0)
        rows = {r.claim: r for r in table.rows}
    except Exception as exc:
        warn(f"dynkit.theory.run_all raised {type(exc).__name__}: {exc}")
        rows = {}
    from dynkit.report import claim_holds, held_text

    headers = ["claim", "paper", "equation", "instances", "held", "verdict", "worst residual", "tolerance"]

    def row(r):
        return [r.claim, r.paper, r.equation, r.instances, held_text(r), "holds" if claim_holds(r) else "**FAILS**",
                r.worst_residual, r.tolerance]

    for cid, claim in claims.items():
        hyps = claim.hypotheses if isinstance(claim.hypotheses, (list, tuple)) else [claim.hypotheses]
        how = HOW_CHECKED.format(id=cid)
        check = getattr(claim, "check", None)  # the real Claim keeps its check function: quote its summary
        doc = (inspect.getdoc(check) or "").split("\n\n")[0].replace("\n", " ") if callable(check) else ""
        if doc:
            how += f" The check, `{check.__module__}.{check.__name__}`: {doc}"
        lines = [f"# {cid}: {claim.paper}, {claim.equation}", "", "**Statement.** " + str(claim.statement), "",
                 "**Hypotheses.**", "", *[f"- {h}" for h in hyps], "", "**How dynkit checks it.** " + how, "",
                 f"**Check run at build time** ({n_instances} instances, seed 0):", ""]
        lines.append(_table(headers, [row(rows[cid])]) if cid in rows else "*(no result: the check run failed)*\n")
        _write(out / f"{cid}.md", "\n".join(lines))
    index = [f"# {title}", "", f"Every claim below was checked when these docs were built, on {n_instances} random "
             "instances with seed 0 (`dynkit verify` runs the same checks with more).", "",
             _table(headers, [row(r) for r in rows.values()]), "```{toctree}", ":maxdepth: 1", "", *claims, "```", ""]
    _write(out / "index.md", "\n".join(index))


def methods_page(out: Path) -> None:
    """The stepper table with the NFE each method spends on the pendulum test problem."""
    import numpy as np

    import dynkit as dk
    from dynkit.report import _test_problem

    f, y0, (t0, t1) = _test_problem()
    exact = dk.solve(f, y0, [t0, t1], method="dopri5", rtol=1e-12, atol=1e-12).ys[-1]
    rows = []
    for name, m in dk.solvers.METHODS.items():
        opts = {"rtol": 1e-6, "atol": 1e-9} if m.adaptive else {"step_size": 0.05}
        sol = dk.solve(f, y0, [t0, t1], method=name, **opts)
        setting = "rtol 1e-6, atol 1e-9" if m.adaptive else "h = 0.05"
        rows.append([f"`{name}`", m.order, "adaptive" if m.adaptive else "fixed", m.new_evaluations_per_step,
                     setting, sol.stats.nfe, float(np.max(np.abs(sol.ys[-1] - exact))), m.description])
    text = ("<!-- generated by docs/_ext/dynkit_pages.py from dynkit.solvers.METHODS -->\n\n"
            + _table(["method", "order", "kind", "new f evals / step", "setting", "NFE", "error at t = 2",
                      "description"], rows))
    _write(out, text)


def cli_page(out: Path) -> None:
    from dynkit.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    lines = ["# The `dynkit` command", "", "Generated from the command's own `--help` at build time.", "",
             "```text", parser.format_help().rstrip(), "```", ""]
    for name, p in sub.choices.items():
        lines += [f"## `dynkit {name}`", "", "```text", p.format_help().rstrip(), "```", ""]
    _write(out, "\n".join(lines))


def _lookup(dotted: str):
    from dynkit.report import ComponentUnavailable, require

    try:
        return require(dotted), None
    except ComponentUnavailable as exc:
        return None, exc


def generate(app) -> None:
    out = Path(app.srcdir) / "generated"
    derivations, missing = _lookup("symbolic.DERIVATIONS")
    derivation_pages(out / "derivations", derivations, missing)
    claims, missing_c = _lookup("theory.CLAIMS")
    run_all, missing_r = _lookup("theory.run_all")
    n = int(os.environ.get("DYNKIT_DOCS_INSTANCES", "50"))
    proposition_pages(out / "propositions", claims, run_all, n, missing_c or missing_r)
    methods_page(out / "methods.md")
    with redirect_stdout(io.StringIO()):
        cli_page(out / "cli.md")


def setup(app):
    app.connect("builder-inited", generate)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
