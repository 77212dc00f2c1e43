"""Sphinx extension: write the pages that come from dynkit itself, at build time, into
docs/generated/.

- ``generated/derivations/``: one page per entry of ``dynkit.symbolic.DERIVATIONS`` (sympy output,
  never typed by hand) and an index;
- ``generated/propositions/``: one page per ``dynkit.theory.CLAIMS`` entry (statement, hypotheses,
  how it is checked) with the table of a check run at build time (``DYNKIT_DOCS_INSTANCES``
  instances, default 50, seed 0);
- ``generated/methods.md``: the steppers of ``dynkit.solvers.METHODS`` with the NFE each spends on
  a test problem;
- ``generated/ledger.md``: the empirical ledger of ``dynkit.experiments.ledger()``;
- ``generated/notebooks/``: the notebooks of ``notebooks/`` (jupytext percent format) as ``.ipynb``,
  executed and rendered with their figures by myst-nb;
- ``generated/cli.md``: the ``--help`` of every ``dynkit`` command.

MathJax comes from the ``sphinx-mathjax-offline`` package (``conf.py`` points ``mathjax_path`` at
it; ``mathjax_static`` copies it into the static files), so the pages typeset without a network.

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


def derivation_pages(
    out: Path,
    derivations: dict[str, Callable] | None,
    missing: Exception | None = None,
    warn: Callable[[str], None] = logger.warning,
) -> None:
    """Write ``out/index.md`` and ``out/<name>.md`` for every derivation.

    A page is the report's own rendering of the derivation
    (:func:`dynkit.report.derivations.derivation_view` and its Markdown), so the docs and the report
    show the same left-hand sides and the same paper statement.
    """
    from dynkit.report.derivations import derivation_markdown, derivation_view

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
            _write(
                out / f"{name}.md",
                f"# {name}\n\nThis derivation raised `{type(exc).__name__}: {exc}`.\n",
            )
            toc.append(name)
            continue
        page = derivation_markdown(derivation_view(d), level=1)
        lines = [
            page,
            f"Generated from `dynkit.symbolic.DERIVATIONS[{name!r}]` when these docs were built.",
            "",
            "LaTeX source:",
            "",
            "```latex",
            d.to_latex().rstrip(),
            "```",
            "",
        ]
        _write(out / f"{name}.md", "\n".join(lines))
        toc.append(name)
    index = [
        f"# {title}",
        "",
        "Each page below is produced by sympy from `dynkit.symbolic.DERIVATIONS` at build "
        "time: no equation is typed by hand, so the pages cannot drift from the code. The report "
        "(`dynkit report`) shows the same derivations, rendered by the same code.",
        "",
        "```{toctree}",
        ":maxdepth: 1",
        "",
        *toc,
        "```",
        "",
    ]
    _write(out / "index.md", "\n".join(index))


def _table(headers: list[str], rows: list[list]) -> str:
    def fmt(x):
        if isinstance(x, bool):
            return "yes" if x else "**NO**"
        if not isinstance(x, (int, str)) and hasattr(x, "__float__"):
            return f"{float(x):.3g}"  # float, numpy, mpmath, sympy numbers
        return str(x).replace("|", "\\|")

    return (
        "\n".join(
            ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
            + ["| " + " | ".join(fmt(c) for c in r) + " |" for r in rows]
        )
        + "\n"
    )


HOW_CHECKED = (
    "`dynkit.theory.CLAIMS[{id!r}].run(n_instances, seed)` draws random instances that satisfy the "
    "hypotheses, evaluates both sides of the claim on each and records the worst residual; "
    "the claim "
    "holds when that residual is within the tolerance. Run it yourself with "
    "`dynkit verify {id} --instances 1000`."
)


def _counts_line(counts: list[tuple[str, int]], what: str) -> str:
    return (
        " · ".join(f"**{n}** {verdict}" for verdict, n in counts)
        + f" ({sum(n for _, n in counts)} {what})"
    )


def proposition_pages(
    out: Path,
    claims: dict | None,
    run_all: Callable | None,
    n_instances: int,
    missing: Exception | None = None,
    warn: Callable[[str], None] = logger.warning,
) -> None:
    """Write ``out/index.md`` (counts per verdict, summary table) and ``out/<id>.md`` for every
    claim."""
    from dynkit.report import CLAIM_VERDICTS, claim_verdict, held_text
    from dynkit.report.common import count_by, paper_name

    title = "Claims of the papers"
    if claims is None or run_all is None:
        _write(out / "index.md", _unavailable(title, missing))
        return
    try:
        rows = {r["claim"]: r for r in run_all(n_instances=n_instances, seed=0).to_dict()["rows"]}
    except Exception as exc:
        warn(f"dynkit.theory.run_all raised {type(exc).__name__}: {exc}")
        rows = {}

    headers = [
        "claim",
        "paper",
        "equation",
        "verdict",
        "held",
        "worst residual",
        "tolerance",
    ]  # held = k/n instances

    def row(r):
        return [
            f"{{doc}}`{r['claim']} <{r['claim']}>`" if r["claim"] in claims else r["claim"],
            paper_name(r["paper"]),
            r["equation"],
            claim_verdict(r),
            held_text(r),
            r["worst_residual"],
            r["tolerance"],
        ]

    for cid, claim in claims.items():
        hyps = (
            claim.hypotheses if isinstance(claim.hypotheses, (list, tuple)) else [claim.hypotheses]
        )
        how = HOW_CHECKED.format(id=cid)
        check = getattr(
            claim, "check", None
        )  # the real Claim keeps its check function: quote its summary
        doc = (
            (inspect.getdoc(check) or "").split("\n\n")[0].replace("\n", " ")
            if callable(check)
            else ""
        )
        if doc:
            how += f" The check, `{check.__module__}.{check.__name__}`: {doc}"
        lines = [f"# {cid}: {paper_name(claim.paper)}, {claim.equation}", ""]
        r = rows.get(cid)
        if r is not None:
            lines += [
                f"**Verdict: {claim_verdict(r)}** — about the statement as the paper writes it.",
                "",
            ]
        lines += ["**Statement.** " + str(claim.statement), ""]
        if getattr(claim, "reading", ""):
            lines += ["**Reading checked.** " + str(claim.reading), ""]
        lines += ["**Hypotheses.**", "", *[f"- {h}" for h in hyps], ""]
        if getattr(claim, "intent", None):
            lines += [f"**Intent** (the paper's own text). {claim.intent}", ""]
        if r is not None and r.get("correction"):
            lines += [f"**Correction.** {r['correction']}", ""]
        if r is not None and r.get("reason"):
            lines += [f"**Why undecided.** {r['reason']}", ""]
        if r is not None and r.get("counterexample"):
            ce = r["counterexample"]
            text = (
                "; ".join(f"{k} = {v}" for k, v in ce.items()) if isinstance(ce, dict) else str(ce)
            )
            lines += [f"**Counterexample.** {text}", ""]
        lines += [
            "**How dynkit checks it.** " + how,
            "",
            f"**Check run at build time** (seed 0; the *held* column gives the instances it ran):",
            "",
        ]
        lines.append(
            _table(headers, [row(r)]) if r is not None else "*(no result: the check run failed)*\n"
        )
        _write(out / f"{cid}.md", "\n".join(lines))
    verdicts = [claim_verdict(r) for r in rows.values()]
    index = [
        f"# {title}",
        "",
        f"Every claim below was checked when these docs were built, on random instances "
        f"with seed 0 ({n_instances} asked for; the *held* column gives each check's own "
        f"count, k of n: some "
        "draw fewer or more by design). `dynkit verify` runs the same checks with more. The "
        "verdict is about "
        "the paper's statement as written.",
        "",
        _counts_line(count_by(verdicts, CLAIM_VERDICTS), "claims"),
        "",
        _table(headers, [row(r) for r in rows.values()]),
        "```{toctree}",
        ":hidden:",
        ":maxdepth: 1",
        "",
        *claims,
        "```",
        "",
    ]
    _write(out / "index.md", "\n".join(index))


def _by_evidence(rows: list[dict], not_run: list[dict], headline: str) -> list[str]:
    """The ledger page's opening: the replications and their outcomes, then the pilots, then what is
    not run; each row's question, outcome and what it measured in words, its id in a column of its
    own."""
    from dynkit.report.common import count_by, reason_text, row_label

    groups = {
        e: [r for r in rows if r.get("evidence") == e] for e in ("replication", "pilot", "not run")
    }

    def replication(r):
        return [
            r.get("question") or r.get("claim"),
            row_label(r),
            r.get("summary") or reason_text(r),
            f"`{r.get('id')}`",
        ]

    def pilot(r):
        cells = replication(r)
        return cells[:2] + [r.get("reading"), r.get("evidence_why")] + cells[2:]

    out = [headline, ""] if headline else []
    for evidence, title, head, cells in (
        (
            "replication",
            "Replications",
            ["question", "outcome", "what we measured", "id"],
            replication,
        ),
        (
            "pilot",
            "Pilots",
            [
                "question",
                "outcome",
                "what the interval reads",
                "why a pilot",
                "what we measured",
                "id",
            ],
            pilot,
        ),
    ):
        these = groups[evidence]
        out += [f"## {title} ({len(these)})", ""]
        if these:
            out += [
                _counts_line(count_by([row_label(r) for r in these], ()), title.lower()),
                "",
                _table(head, [cells(r) for r in these]),
                "",
            ]
        else:
            out += ["None.", ""]
    missing = [
        [
            r.get("paper"),
            r.get("paper_figure"),
            r.get("question") or r.get("claim"),
            r.get("evidence_why"),
            "results",
        ]
        for r in groups["not run"]
    ]
    missing += [
        [c.get("paper"), c.get("location"), c.get("compares"), c.get("needs"), c.get("kind")]
        for c in not_run
    ]
    out += [
        f"## Not run ({len(groups['not run'])} rows, {len(not_run)} comparisons)",
        "",
        _table(["paper", "table or figure", "compares", "what it needs", "need"], missing),
        "",
        "## Every row in detail",
        "",
    ]
    return out


def ledger_page(
    out: Path,
    ledger: Callable | None,
    missing: Exception | None = None,
    warn: Callable[[str], None] = logger.warning,
) -> None:
    """Write ``out`` (one page): the empirical ledger, with counts per outcome (or verdict).

    Rows are counted by the label they carry (``outcome`` where the ledger has one, else
    ``verdict``; no list of labels is assumed). The table keeps to what a reader needs to read a
    number: the claim and where the paper makes it, the metric, our mean and CI, the label and its
    rule; the page's CSS (``_static/dynkit.css``) wraps long cells so the table fits its column.
    """
    from dynkit.report import LEDGER_VERDICTS
    from dynkit.report.common import count_by, effect_text, paper_name, reason_text, row_label

    title = "Empirical ledger"
    if ledger is None:
        _write(out, _unavailable(title, missing))
        return
    from dynkit.experiments.judging.ledger import (
        plan_kind,
    )  # the plan column, as `dynkit ledger` prints it

    try:
        data = ledger().to_dict()
        rows, setups = data["rows"], data.get("setups") or {}
    except Exception as exc:
        warn(f"dynkit.experiments.judging.ledger raised {type(exc).__name__}: {exc}")
        data, rows, setups = {}, [], {}
    uses_outcome = any(r.get("outcome") for r in rows)
    label = "outcome" if uses_outcome else "verdict"
    counts = count_by([row_label(r) for r in rows], () if uses_outcome else LEDGER_VERDICTS)

    def where(r):
        return ", ".join(filter(None, [paper_name(r.get("paper") or ""), r.get("paper_figure")]))

    opening = (
        _by_evidence(rows, data.get("not_run") or [], data.get("headline") or "")
        if any("evidence" in r for r in rows)
        else []
    )
    text = [
        f"# {title}",
        "",
        *opening,
        "Each experimental claim of the papers, the metric dynkit measured, the paired "
        "per-seed effect on its scale with its 95% confidence interval, n with how many "
        "seeds agree in sign "
        "(from the committed results in `analysis/results`), whether the plan fixing its "
        "seeds was written "
        f"before the results (prospective) or after them (retrospective), and the {label} "
        f"its rule gives after "
        "the validity checks; undecided rows say why or how many seeds would decide them. "
        "`dynkit ledger` prints "
        "the same table.",
        "",
        _counts_line(counts, "results"),
        "",
        _table(
            [
                "claim",
                "paper",
                "metric",
                "effect [95% CI]",
                "n (agree)",
                "plan",
                label,
                "reason or seeds needed",
                "id",
            ],
            [
                [
                    r.get("question") or r.get("claim"),
                    where(r),
                    r.get("metric"),
                    effect_text(r),
                    f"{r.get('n', '')} ({r.get('n_agree', '')})" if "n" in r else "",
                    plan_kind(r.get("plan")),
                    row_label(r),
                    reason_text(r),
                    f"`{r.get('id')}`",
                ]
                for r in rows
            ],
        ),
    ]
    if setups:
        text += [
            "",
            "## Setup against the paper",
            "",
            "Per experiment with a recipe (`dynkit.experiments.recipes`): "
            "each setting that can change an outcome, the paper's value and where it is "
            "stated, ours at the "
            "`cpu` scale (read from the experiment's config) and why they differ. `dynkit "
            "run NAME --scale "
            "paper` runs the paper's column, or says which piece of it the code still lacks.",
        ]
        for name, table in setups.items():
            text += [
                "",
                f"### {name}",
                "",
                _table(
                    ["setting", "paper (source)", "cpu", "why"],
                    [
                        [
                            r.get("setting"),
                            f"{r.get('paper')} ({r.get('source')})",
                            r.get("cpu"),
                            (r.get("why") or {}).get("cpu")
                            or ("as the paper" if (r.get("as_paper") or {}).get("cpu") else "–"),
                        ]
                        for r in table
                    ],
                ),
            ]
    _write(out, "\n".join(text))


def notebook_pages(out: Path, sources: Path) -> list[str]:
    """Convert each percent-format notebook of ``sources`` to ``out/<name>.ipynb`` (executed by
    myst-nb)."""
    import jupytext

    names = []
    for path in sorted(sources.glob("*.py")):
        nb = jupytext.read(path)
        nb.metadata["kernelspec"] = {
            "name": "python3",
            "display_name": "Python 3",
            "language": "python",
        }
        target = out / f"{path.stem}.ipynb"
        _write(target, jupytext.writes(nb, fmt="ipynb"))
        names.append(path.stem)
    return names


MATHJAX_PACKAGE = (
    "sphinx-mathjax-offline"  # a docs dependency (the report itself typesets to MathML)
)
MATHJAX_BUNDLE = (
    "tex-svg-full.js"  # TeX in, SVG out, every extension compiled in: nothing loaded on demand
)


def mathjax_bundle() -> Path:
    """Path of MathJax 3's ``tex-svg-full.js`` as the ``sphinx-mathjax-offline`` package installs
    it.

    Raises
    ------
    FileNotFoundError
        If the package (or the bundle in it) is not installed.
    """
    import importlib.util

    spec = importlib.util.find_spec(MATHJAX_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            f"the docs typeset with MathJax from the package {MATHJAX_PACKAGE!r} "
            f"(pip install {MATHJAX_PACKAGE}, or the docs extra); it is not installed"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / "static" / "mathjax" / MATHJAX_BUNDLE
    if not path.is_file():
        raise FileNotFoundError(f"{MATHJAX_PACKAGE} is installed but has no {path}")
    return path


def mathjax_static(out: Path) -> None:
    """Copy the MathJax bundle to ``out/mathjax/`` (the docs' static files): nothing from a CDN."""
    target = out / "mathjax" / MATHJAX_BUNDLE
    target.parent.mkdir(parents=True, exist_ok=True)
    if not target.exists() or target.stat().st_size != mathjax_bundle().stat().st_size:
        target.write_bytes(mathjax_bundle().read_bytes())


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
        rows.append(
            [
                f"`{name}`",
                m.order,
                "adaptive" if m.adaptive else "fixed",
                m.new_evaluations_per_step,
                setting,
                sol.stats.nfe,
                float(np.max(np.abs(sol.ys[-1] - exact))),
                m.description,
            ]
        )
    text = (
        "<!-- generated by docs/_ext/dynkit_pages.py from dynkit.solvers.METHODS -->\n\n"
        + _table(
            [
                "method",
                "order",
                "kind",
                "new f evals / step",
                "setting",
                "NFE",
                "error at t = 2",
                "description",
            ],
            rows,
        )
    )
    _write(out, text)


def cli_page(out: Path) -> None:
    from dynkit.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    lines = [
        "# The `dynkit` command",
        "",
        "Generated from the command's own `--help` at build time.",
        "",
        "```text",
        parser.format_help().rstrip(),
        "```",
        "",
    ]
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
    ledger, missing_l = _lookup("experiments.ledger")
    ledger_page(out / "ledger.md", ledger, missing_l)
    methods_page(out / "methods.md")
    notebook_pages(out / "notebooks", Path(app.srcdir).parent / "notebooks")
    with redirect_stdout(io.StringIO()):
        cli_page(out / "cli.md")


def setup(app):
    app.connect("builder-inited", generate, priority=100)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
