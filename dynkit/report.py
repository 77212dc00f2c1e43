"""The dynkit report: one self-contained HTML page (and a Markdown twin) of what dynkit checks.

:func:`build_report` runs the proposition checks (:mod:`dynkit.theory`), renders the symbolic
derivations (:mod:`dynkit.symbolic`), measures the steppers (:mod:`dynkit.solvers`), compares them
with scipy (work-precision, :mod:`dynkit.diagnostics`), runs a small NFE-vs-tolerance experiment
(HBNODE vs NODE) and records the run's metadata. It is the job behind ``make demo`` and
``dynkit report``.

A section whose component is not part of the build is marked *not available* (with the missing
name) instead of failing the whole report; a section whose check fails is marked *failed*; a section
that raises is marked *error* with the exception. Figures are embedded as base64 PNG and also
written next to the report; equations are typeset by MathJax when the page is online and are shown
with their LaTeX source either way.
"""
from __future__ import annotations

import base64
import html
import importlib
import json
import math
import sys
import time
import traceback
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from .io import atomic_write, versions, write_json

__all__ = ["build_report", "ComponentUnavailable", "require", "Section", "SECTIONS", "latex_of", "jsonable",
           "claim_holds", "held_text"]

MATHJAX_URL = "https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-chtml.js"


class ComponentUnavailable(RuntimeError):
    """A part of dynkit that a command or report section needs is not installed in this build."""


def require(dotted: str) -> Any:
    """Return the object ``dynkit.<module>.<name>`` named by ``dotted`` (e.g. ``"theory.run_all"``).

    Raises
    ------
    ComponentUnavailable
        When the module does not exist or lacks the name: the message says which.
    """
    module_name, _, attr = dotted.rpartition(".")
    full = f"dynkit.{module_name}"
    try:
        module = importlib.import_module(full)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (full == exc.name or full.startswith(exc.name + ".")):
            raise ComponentUnavailable(f"{full} is not installed in this build (needed: {full}.{attr})") from None
        raise
    try:
        return getattr(module, attr)
    except AttributeError:
        raise ComponentUnavailable(f"{full}.{attr} is not installed in this build") from None


# --------------------------------------------------------------------------------------------------
# Content blocks: each renders to HTML and to Markdown, so the two twins cannot drift apart.

@dataclass
class Paragraph:
    text: str  # plain text; inline math as \( ... \) is left to MathJax

    def html(self) -> str:
        return f"<p>{html.escape(self.text)}</p>"

    def markdown(self) -> str:
        return self.text


@dataclass
class Table:
    headers: list[str]
    rows: list[list[Any]]

    def html(self) -> str:
        head = "".join(f"<th>{html.escape(str(h))}</th>" for h in self.headers)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(_fmt(c))}</td>" for c in row) + "</tr>" for row in self.rows)
        return f'<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'

    def markdown(self) -> str:
        lines = ["| " + " | ".join(map(str, self.headers)) + " |", "|" + "---|" * len(self.headers)]
        lines += ["| " + " | ".join(_fmt(c).replace("|", "\\|") for c in row) + " |" for row in self.rows]
        return "\n".join(lines)


@dataclass
class Math:
    latex: str
    label: str = ""  # a short caption before the equation

    def html(self) -> str:
        tex = html.escape(self.latex)
        label = f'<div class="label">{html.escape(self.label)}</div>' if self.label else ""
        return (f'<div class="eq">{label}<div class="display">\\[{tex}\\]</div>'
                f'<details><summary>LaTeX source</summary><pre class="tex">{tex}</pre></details></div>')

    def markdown(self) -> str:
        label = f"{self.label}\n\n" if self.label else ""
        return f"{label}$$\n{self.latex}\n$$"


@dataclass
class Code:
    text: str
    summary: str = ""  # when set, the block is collapsed under this summary in HTML

    def html(self) -> str:
        pre = f"<pre>{html.escape(self.text)}</pre>"
        return f"<details><summary>{html.escape(self.summary)}</summary>{pre}</details>" if self.summary else pre

    def markdown(self) -> str:
        return ("" if not self.summary else f"{self.summary}:\n\n") + f"```\n{self.text}\n```"


@dataclass
class Figure:
    name: str  # file name under figures/
    png: bytes
    caption: str

    def html(self) -> str:
        data = base64.b64encode(self.png).decode("ascii")
        return (f'<figure><img alt="{html.escape(self.caption)}" src="data:image/png;base64,{data}">'
                f"<figcaption>{html.escape(self.caption)}</figcaption></figure>")

    def markdown(self) -> str:
        return f"![{self.caption}](figures/{self.name})\n\n*{self.caption}*"


@dataclass
class Heading:
    text: str
    badge: str = ""  # "ok" / "failed": shown next to the heading

    def html(self) -> str:
        badge = f' <span class="badge {self.badge}">{self.badge}</span>' if self.badge else ""
        return f"<h3>{html.escape(self.text)}{badge}</h3>"

    def markdown(self) -> str:
        return f"### {self.text}" + (f" ({self.badge})" if self.badge else "")


@dataclass
class Section:
    """One part of the report.

    ``status`` is ``"ok"``, ``"failed"`` (a check ran and did not hold), ``"unavailable"`` (the
    component is not in this build) or ``"error"`` (the section raised).
    """

    key: str
    title: str
    status: str = "ok"
    note: str = ""
    blocks: list = field(default_factory=list)
    data: dict = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def figures(self) -> list[Figure]:
        return [b for b in self.blocks if isinstance(b, Figure)]


def _fmt(x: Any) -> str:
    if isinstance(x, bool):
        return "yes" if x else "no"
    if not isinstance(x, (int, float, str)) and hasattr(x, "__float__"):
        x = float(x)  # mpmath / numpy / sympy numbers
    if isinstance(x, float):
        if x == 0 or math.isnan(x) or math.isinf(x):
            return str(x)
        return f"{x:.3g}" if 1e-3 <= abs(x) < 1e4 else f"{x:.2e}"
    return str(x)


def jsonable(x: Any) -> Any:
    """``x`` with every leaf made JSON-friendly: numbers (numpy, mpmath, sympy) to float, arrays to
    lists, anything else unknown to its ``str``."""
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    if hasattr(x, "tolist"):
        return jsonable(x.tolist())
    if isinstance(x, Path):
        return str(x)
    try:
        return float(x)
    except (TypeError, ValueError):
        return str(x)


def latex_of(expr: Any) -> str:
    """LaTeX of what a derivation step holds: a sympy object, a string (taken to be LaTeX already),
    a list/tuple (one aligned line each; equations aligned at ``=``) or a dict (``key = value`` lines;
    a string key with a backslash is LaTeX, another becomes a symbol)."""
    if expr is None:
        return ""
    if isinstance(expr, str):
        return expr
    import sympy

    def line(obj) -> str:
        if isinstance(obj, sympy.Equality):
            return f"{sympy.latex(obj.lhs)} &= {sympy.latex(obj.rhs)}"
        return obj if isinstance(obj, str) else f"& {sympy.latex(obj)}"

    def key(k) -> str:
        if isinstance(k, str):
            return k if "\\" in k else sympy.latex(sympy.Symbol(k))
        return sympy.latex(k)

    def rhs(v) -> str:
        return ",\\ ".join(map(sympy.latex, v)) if isinstance(v, (list, tuple)) else sympy.latex(v)

    if isinstance(expr, dict):
        lines = [f"{key(k)} &= {rhs(v)}" for k, v in expr.items()]
    elif isinstance(expr, (list, tuple)):
        lines = [line(o) for o in expr]
    else:
        return sympy.latex(expr)
    return "\\begin{aligned}" + " \\\\ ".join(lines) + "\\end{aligned}"


def _figure(name: str, caption: str, draw: Callable[[Path], Any], workdir: Path) -> Figure:
    """Run ``draw(path)`` (something that writes a PNG to ``path``) and keep the bytes."""
    path = workdir / "figures" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    draw(path)
    return Figure(name, path.read_bytes(), caption)


def _matplotlib():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


# --------------------------------------------------------------------------------------------------
# Sections. Each takes a context (out dir, quick, seed, quiet) and fills a Section.

@dataclass
class Context:
    out_dir: Path
    quick: bool
    seed: int
    quiet: bool


def _is_bool(x: Any) -> bool:
    return isinstance(x, bool) or type(x).__name__ == "bool_"  # numpy bools too


def claim_holds(row: Any) -> bool:
    """Verdict of one claim-table row: its ``holds`` if it has one, else ``held`` as a bool, or as
    the number of instances that held (then every instance must have)."""
    if hasattr(row, "holds"):
        return bool(row.holds)
    return bool(row.held) if _is_bool(row.held) else int(row.held) == int(row.instances)


def held_text(row: Any) -> str:
    """``held`` as shown in tables: ``k/n`` for a count, yes/no for a bool."""
    return ("yes" if row.held else "no") if _is_bool(row.held) else f"{int(row.held)}/{int(row.instances)}"


def section_propositions(ctx: Context, sec: Section) -> None:
    run_all = require("theory.run_all")
    n = 10 if ctx.quick else 200
    table = run_all(n_instances=n, seed=ctx.seed)
    sec.blocks.append(Paragraph(
        f"Each claim of the papers is checked numerically on {n} random instances (seed {ctx.seed}); a claim "
        "holds when its residual is within its tolerance on every instance."))
    sec.blocks.append(Table(
        ["claim", "paper", "equation", "instances", "held", "verdict", "worst residual", "tolerance", "seconds"],
        [[r.claim, r.paper, r.equation, r.instances, held_text(r), "holds" if claim_holds(r) else "FAILS",
          r.worst_residual, r.tolerance, r.seconds] for r in table.rows]))
    sec.data = {"n_instances": n, "all_hold": bool(table.all_hold), "table": table.to_dict()}
    failed = [r.claim for r in table.rows if not claim_holds(r)]
    if failed or not table.all_hold:
        sec.status, sec.note = "failed", f"claims that did not hold: {', '.join(failed) or '(see table)'}"


def section_derivations(ctx: Context, sec: Section) -> None:
    derivations = require("symbolic.DERIVATIONS")
    sec.blocks.append(Paragraph(
        "Every equation below is derived by sympy at report time (nothing is typed by hand); the last line of "
        "each derivation compares the derived result with the equation as the paper states it."))
    results, failed = {}, []
    for name, make in derivations.items():
        try:
            d = make()
        except Exception as exc:  # one broken derivation must not hide the others
            sec.blocks.append(Heading(name, "error"))
            sec.blocks.append(Code(f"{type(exc).__name__}: {exc}"))
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
            failed.append(name)
            continue
        ok = bool(d.check_passed)
        sec.blocks.append(Heading(f"{d.title} — {d.paper}, {d.equation}", "ok" if ok else "failed"))
        for step in d.steps:
            sec.blocks.append(Math(latex_of(step.expr), step.text) if step.expr is not None else Paragraph(step.text))
        if d.result is not None:
            sec.blocks.append(Math(latex_of(d.result), "Result"))
        if d.stated is not None:
            sec.blocks.append(Math(latex_of(d.stated), f"As stated in the paper: {d.equation}"))
        sec.blocks.append(Code(d.to_latex(), summary="Full LaTeX of this derivation"))
        results[name] = {"title": d.title, "paper": d.paper, "equation": d.equation, "check_passed": ok}
        if not ok:
            failed.append(name)
    sec.data = {"derivations": results}
    if failed:
        sec.status, sec.note = "failed", f"derivations that do not match the paper: {', '.join(failed)}"


def _test_problem():
    """The pendulum θ'' = -sin θ as a first-order system, from θ = 1, θ' = 0 on [0, 2]."""
    import numpy as np

    def f(t, y):
        return np.array([y[1], -np.sin(y[0])])

    return f, np.array([1.0, 0.0]), (0.0, 2.0)


def section_steppers(ctx: Context, sec: Section) -> None:
    """Method table and measured convergence order of the fixed-step methods (real solver)."""
    import numpy as np
    from scipy.integrate import solve_ivp

    from . import solvers

    f, y0, (t0, t1) = _test_problem()
    # Reference: scipy's DOP853 at tight tolerance, an implementation independent of dynkit's.
    ref = solve_ivp(f, (t0, t1), y0, method="DOP853", rtol=1e-13, atol=1e-13).y[:, -1]
    steps = (0.2, 0.1, 0.05) if ctx.quick else (0.2, 0.1, 0.05, 0.025)
    rows, curves = [], {}
    for name, info in solvers.METHODS.items():
        if info.adaptive:
            rows.append([name, info.order, info.stages, info.new_evaluations_per_step, "adaptive", "", info.description])
            continue
        errs, nfes = [], []
        for h in steps:
            sol = solvers.solve(f, y0, [t0, t1], method=name, step_size=h)
            errs.append(float(np.max(np.abs(sol.ys[-1] - ref))))
            nfes.append(sol.stats.nfe)
        observed = math.log2(errs[-2] / errs[-1])
        curves[name] = {"step_sizes": list(steps), "errors": errs, "nfe": nfes, "observed_order": observed}
        rows.append([name, info.order, info.stages, info.new_evaluations_per_step, "fixed", observed, info.description])
    sec.blocks.append(Paragraph(
        "The steppers of dk.solvers.METHODS. For each fixed-step method the observed order is log2 of the ratio "
        f"of the errors at the two smallest step sizes (h = {steps[-2]}, {steps[-1]}) on the pendulum "
        "θ'' = -sin θ, θ(0) = 1, θ'(0) = 0, t in [0, 2]; the reference is scipy's DOP853 at rtol = atol = 1e-13."))
    sec.blocks.append(Table(["method", "order", "stages", "new f evals / step", "kind", "observed order", "description"], rows))

    def draw(path: Path) -> None:
        plt = _matplotlib()
        fig, ax = plt.subplots(figsize=(6.4, 4.2))
        for name, c in curves.items():
            ax.loglog(c["nfe"], c["errors"], "o-", label=f"{name} (order {solvers.METHODS[name].order})")
        ax.set_xlabel("function evaluations (NFE)")
        ax.set_ylabel("max error at t = 2")
        ax.set_title("Fixed-step methods on the pendulum")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        from .io import save_figure

        save_figure(fig, path, dpi=110)
        plt.close(fig)

    sec.blocks.append(_figure("steppers_order.png", "Error vs NFE of the fixed-step methods (slope = -order).",
                              draw, ctx.out_dir))
    sec.data = {"problem": "pendulum, theta(0)=1, theta'(0)=0, t in [0, 2]", "fixed_step": curves}
    # Accept half an order of slack: the asymptotic regime is reached only approximately at these h.
    bad = [n for n, c in curves.items() if c["observed_order"] < solvers.METHODS[n].order - 0.5]
    if bad:
        sec.status, sec.note = "failed", f"observed order below the nominal one for: {', '.join(bad)}"


def section_work_precision(ctx: Context, sec: Section) -> None:
    work_precision = require("diagnostics.work_precision")
    tolerances = (1e-4, 1e-7) if ctx.quick else (1e-4, 1e-6, 1e-8, 1e-10)
    table = work_precision(tolerances=tolerances, include_scipy=True)
    sec.blocks.append(Paragraph(
        "Error against a reference solution vs the number of function evaluations, for dynkit's adaptive "
        f"steppers and scipy.integrate.solve_ivp at tolerances {', '.join(f'{t:g}' for t in tolerances)}."))
    # One row per (problem, solver), one column per tolerance: "error (NFE)".
    tols = sorted({r["tol"] for r in table.rows}, reverse=True)
    cells: dict = {}
    for r in table.rows:
        cells.setdefault((r["problem"], r["solver"]), {})[r["tol"]] = f"{_fmt(float(r['error']))} ({r['nfe']})"
    sec.blocks.append(Paragraph("Each cell: error (NFE)."))
    sec.blocks.append(Table(["problem", "solver", *[f"tol {t:g}" for t in tols]],
                            [[p, s, *[c.get(t, "") for t in tols]] for (p, s), c in cells.items()]))
    sec.blocks.append(_figure("work_precision.png", "Work-precision: error vs NFE (dynkit steppers and scipy).",
                              table.plot, ctx.out_dir))
    sec.data = {"tolerances": list(tolerances), "table": table.to_dict()}


def section_nfe(ctx: Context, sec: Section) -> None:
    nfe_vs_tolerance = require("experiments.nfe_vs_tolerance")
    plot = require("experiments.plot_nfe_vs_tolerance")
    tolerances = (1e-2, 1e-3) if ctx.quick else (1e-3, 1e-4, 1e-5, 1e-6)
    n_batches = 1 if ctx.quick else 2
    results = nfe_vs_tolerance(models=("node", "hbnode"), task="digits", tolerances=tolerances,
                               n_batches=n_batches, seed=ctx.seed, out=ctx.out_dir / "nfe_vs_tolerance",
                               quiet=ctx.quiet)
    sec.blocks.append(Paragraph(
        "Forward and backward NFE (mean ± std over batches) of NODE and HBNODE on the digits task, per "
        f"solver tolerance ({n_batches} batch(es) per point, seed {ctx.seed})."))
    rows = []
    for model, per_tol in results.items():
        for tol, r in per_tol.items():
            fw, bw = r["forward_nfe"], r["backward_nfe"]
            rows.append([model, tol, f"{fw['mean']:.1f} ± {fw['std']:.1f}", f"{bw['mean']:.1f} ± {bw['std']:.1f}"])
    sec.blocks.append(Table(["model", "tolerance", "forward NFE", "backward NFE"], rows))
    sec.blocks.append(_figure("nfe_vs_tolerance.png", "NFE vs tolerance, NODE vs HBNODE.",
                              lambda p: plot(results, p), ctx.out_dir))
    sec.data = {"tolerances": list(tolerances), "n_batches": n_batches, "results": results}


SECTIONS: list[tuple[str, str, Callable[[Context, Section], None]]] = [
    ("propositions", "Proposition checks", section_propositions),
    ("derivations", "Worked derivations", section_derivations),
    ("steppers", "Steppers and their convergence order", section_steppers),
    ("work_precision", "Work-precision: dynkit steppers vs scipy", section_work_precision),
    ("nfe_vs_tolerance", "NFE vs tolerance: HBNODE vs NODE", section_nfe),
]
"""(key, title, function) of every report section, in order; run metadata comes last."""


def _run_section(key: str, title: str, fn: Callable, ctx: Context, debug: bool) -> Section:
    sec = Section(key, title)
    start = time.perf_counter()
    try:
        fn(ctx, sec)
    except ComponentUnavailable as exc:
        sec.status, sec.note, sec.blocks = "unavailable", f"not available: {exc}", []
    except Exception as exc:
        if debug:
            raise
        sec.status, sec.blocks = "error", [Code(traceback.format_exc(), summary="Traceback")]
        sec.note = f"error: {type(exc).__name__}: {exc}"
    sec.seconds = time.perf_counter() - start
    return sec


def _metadata_section(ctx: Context, sections: list[Section], started: datetime, argv: list[str] | None) -> Section:
    sec = Section("metadata", "Run metadata")
    vers = versions()
    sec.blocks.append(Table(["item", "value"], [
        ["started (UTC)", started.isoformat(timespec="seconds")],
        ["command", " ".join(argv) if argv else "build_report(...)"],
        ["seed", ctx.seed], ["quick", ctx.quick],
        *[[f"version: {k}", v] for k, v in vers.items()],
    ]))
    sec.blocks.append(Table(["section", "status", "seconds", "note"],
                            [[s.title, s.status, round(s.seconds, 2), s.note] for s in sections]))
    sec.data = {"started": started.isoformat(), "seed": ctx.seed, "quick": ctx.quick, "versions": vers,
                "command": argv}
    return sec


CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;
color:#1d2430;line-height:1.5}
h1{margin-bottom:.2rem}h2{border-bottom:2px solid #dde3ea;padding-bottom:.2rem;margin-top:2.5rem}
table{border-collapse:collapse;margin:1rem 0;font-size:.9rem}th,td{border:1px solid #cfd6de;padding:.25rem .5rem;
text-align:left;vertical-align:top}th{background:#f1f4f7}
.badge{font-size:.75rem;padding:.1rem .45rem;border-radius:.6rem;color:#fff;vertical-align:middle}
.ok{background:#2e7d32}.failed,.error{background:#c62828}.unavailable{background:#8a8f98}
.note{padding:.5rem .8rem;border-left:4px solid #8a8f98;background:#f4f5f7}
.note.failed,.note.error{border-color:#c62828;background:#fdecec;color:#1d2430}
.note.unavailable{color:#1d2430}
.eq{margin:.6rem 0 1rem}.eq .label{font-size:.9rem;color:#4a5563}.display{overflow-x:auto}
details summary{cursor:pointer;color:#4a5563;font-size:.85rem}pre{background:#f6f8fa;padding:.6rem;overflow-x:auto;
font-size:.8rem;white-space:pre-wrap}
figure{margin:1rem 0}figure img{max-width:100%}figcaption{font-size:.9rem;color:#4a5563}
nav ul{columns:2}
"""


def _render_html(sections: list[Section], started: datetime) -> str:
    nav = "".join(f'<li><a href="#{s.key}">{html.escape(s.title)}</a> <span class="badge {s.status}">{s.status}</span></li>'
                  for s in sections)
    parts = []
    for s in sections:
        parts.append(f'<section id="{s.key}"><h2>{html.escape(s.title)} <span class="badge {s.status}">{s.status}</span></h2>')
        if s.note:
            parts.append(f'<p class="note {s.status}">{html.escape(s.note)}</p>')
        parts.extend(b.html() for b in s.blocks)
        parts.append("</section>")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>dynkit report</title>
<style>{CSS}</style>
<script>window.MathJax={{tex:{{inlineMath:[['$','$'],['\\\\(','\\\\)']],displayMath:[['\\\\[','\\\\]']]}}}};</script>
<script async src="{MATHJAX_URL}"></script>
</head><body>
<h1>dynkit report</h1>
<p>Generated {started.strftime('%Y-%m-%d %H:%M UTC')}. Equations are typeset by MathJax when online; each one's
LaTeX source is shown under it either way. Figures are embedded in this file.</p>
<nav><ul>{nav}</ul></nav>
{''.join(parts)}
</body></html>
"""


def _render_markdown(sections: list[Section], started: datetime) -> str:
    out = ["# dynkit report", "", f"Generated {started.strftime('%Y-%m-%d %H:%M UTC')}.", ""]
    for s in sections:
        out += [f"## {s.title} [{s.status}]", ""]
        if s.note:
            out += [f"> {s.note}", ""]
        for b in s.blocks:
            out += [b.markdown(), ""]
    return "\n".join(out)


def build_report(out_dir: str | Path, *, quick: bool = False, seed: int = 0, quiet: bool = True,
                 debug: bool = False, argv: list[str] | None = None) -> Path:
    """Build the report into ``out_dir`` and return the path of its HTML file.

    Parameters
    ----------
    out_dir : path
        Folder for ``report.html``, ``report.md`` (Markdown twin), ``report.json`` (every section's
        status and numbers, with versions) and ``figures/*.png``. Created if missing.
    quick : bool
        Smaller instance counts, tolerance grids and batches (for tests and CI).
    seed : int
        Seed of every random draw in every section.
    quiet : bool
        When False, print one progress line per section to stderr.
    debug : bool
        Re-raise a section's exception instead of recording it in the report.
    argv : list of str, optional
        The command line that asked for the report (recorded in the metadata).

    Returns
    -------
    pathlib.Path
        ``out_dir / "report.html"``.
    """
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise ValueError(f"seed must be an int, got {seed!r}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    ctx = Context(out_dir, bool(quick), seed, quiet)
    started = datetime.now(timezone.utc)
    sections = []
    for key, title, fn in SECTIONS:
        if not quiet:
            print(f"[report] {title} ...", file=sys.stderr, flush=True)
        sec = _run_section(key, title, fn, ctx, debug)
        if not quiet:
            print(f"[report] {title}: {sec.status} ({sec.seconds:.1f} s){' - ' + sec.note if sec.note else ''}",
                  file=sys.stderr, flush=True)
        sections.append(sec)
    sections.append(_metadata_section(ctx, sections, started, argv))
    atomic_write(out_dir / "report.md", lambda fh: fh.write(_render_markdown(sections, started)))
    write_json(out_dir / "report.json",
               {"sections": {s.key: {"title": s.title, "status": s.status, "note": s.note,
                                     "seconds": s.seconds, "data": jsonable(s.data)} for s in sections}},
               config={"quick": ctx.quick, "seed": seed}, command=" ".join(argv) if argv else None)
    return atomic_write(out_dir / "report.html", lambda fh: fh.write(_render_html(sections, started)))


def statuses(report_dir: str | Path) -> dict[str, str]:
    """Section key -> status, read back from ``report.json`` in ``report_dir``."""
    data = json.loads((Path(report_dir) / "report.json").read_text())
    return {k: v["status"] for k, v in data["sections"].items()}
