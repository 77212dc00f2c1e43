"""The dynkit report: one self-contained HTML page (and a Markdown twin) of what dynkit checks.

:func:`build_report` runs the claim checks (:mod:`dynkit.theory`), reads the empirical ledger
(:mod:`dynkit.experiments`), renders the symbolic derivations (:mod:`dynkit.symbolic`), measures the
steppers (:mod:`dynkit.solvers`), compares them with scipy (work-precision,
:mod:`dynkit.diagnostics`) and runs a small NFE-vs-tolerance experiment (HBNODE vs NODE). It is the
job behind ``make demo`` and ``dynkit report``.

The page opens with a one-screen summary (one line per part with a link: the claims, the ledger and
the derivations as counts per verdict or outcome, the measurements as a headline), then the figures,
then the details (the tables, each derivation collapsed under its statement). It reads offline and
has no script: figures are embedded, and the equations are typeset to MathML when the page is
generated (:mod:`dynkit.report.mathml`), which the browser draws itself. The layout is one Jinja2
template (``templates/report.j2``) rendered into HTML and Markdown (:mod:`dynkit.report.render`).

A section whose component is not part of the build is marked *not available* (with the missing
name) instead of failing the whole report; a section whose check fails is marked *failed*; a section
that raises is marked *error* with the exception.
"""

from __future__ import annotations

import json
import sys
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from ..io import atomic_write, check_output_path, read_regular_text, versions, write_json
from .blocks import Code, Section, Table
from .common import (
    CLAIM_VERDICTS,
    LEDGER_VERDICTS,
    ComponentUnavailable,
    claim_holds,
    claim_verdict,
    jsonable,
    latex_of,
    require,
)
from .common import held_text
from .render import render_html, render_markdown
from .sections import SECTIONS, Context, _test_problem  # noqa: F401  (_test_problem: the docs' steppers page)

__all__ = [
    "build_report",
    "statuses",
    "ComponentUnavailable",
    "require",
    "Section",
    "SECTIONS",
    "latex_of",
    "jsonable",
    "claim_holds",
    "claim_verdict",
    "held_text",
    "CLAIM_VERDICTS",
    "LEDGER_VERDICTS",
]


def _run_section(key: str, title: str, fn: Callable, ctx: Context, debug: bool) -> Section:
    sec = Section(key, title)
    start = time.perf_counter()
    try:
        fn(ctx, sec)
    except ComponentUnavailable as exc:
        sec.status, sec.note = "unavailable", f"not available: {exc}"
        sec.summary, sec.figures, sec.blocks = [], [], []
    except Exception as exc:
        if debug:
            raise
        sec.status, sec.summary, sec.figures = "error", [], []
        sec.blocks = [Code(traceback.format_exc(), summary="Traceback")]
        sec.note = f"error: {type(exc).__name__}: {exc}"
    sec.seconds = time.perf_counter() - start
    return sec


def _metadata_section(
    ctx: Context, sections: list[Section], started: datetime, argv: list[str] | None
) -> Section:
    sec = Section("metadata", "Run metadata")
    vers = versions()
    sec.blocks.append(
        Table(
            ["item", "value"],
            [
                ["started (UTC)", started.isoformat(timespec="seconds")],
                ["command", " ".join(argv) if argv else "build_report(...)"],
                ["seed", ctx.seed],
                ["quick", ctx.quick],
                *[[f"version: {k}", v] for k, v in vers.items()],
            ],
        )
    )
    sec.blocks.append(
        Table(
            ["section", "status", "seconds", "note"],
            [
                [s.title, "ran" if s.status == "ok" else s.status, round(s.seconds, 2), s.note]
                for s in sections
            ],
        )
    )
    sec.data = {
        "started": started.isoformat(),
        "seed": ctx.seed,
        "quick": ctx.quick,
        "versions": vers,
        "command": argv,
        "headline": f"seed {ctx.seed}{', quick sizes' if ctx.quick else ''}",
    }
    return sec


REPORT_FILES = ("report.md", "report.json", "report.html")
"""The files :func:`build_report` writes into its folder (besides ``figures/``)."""


def build_report(
    out_dir: str | Path,
    *,
    quick: bool = False,
    seed: int = 0,
    quiet: bool = True,
    debug: bool = False,
    argv: list[str] | None = None,
) -> Path:
    """Build the report into ``out_dir`` and return the path of its HTML file.

    Parameters
    ----------
    out_dir : path
        Folder for ``report.html`` (self-contained), ``report.md`` (Markdown twin), ``report.json``
        (every section's status and numbers, with versions) and ``figures/*.png``. Created if
        missing.
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

    Raises
    ------
    ValueError
        If ``seed`` is not an int.
    """
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise ValueError(f"seed must be an int, got {seed!r}")
    out_dir = Path(out_dir)
    for name in (
        REPORT_FILES
    ):  # before the sections run: a device node or a link there is refused, not replaced
        check_output_path(out_dir / name, "out")
    out_dir.mkdir(parents=True, exist_ok=True)
    ctx = Context(out_dir, bool(quick), seed, quiet)
    started = datetime.now(timezone.utc)
    sections = []
    for key, title, fn in SECTIONS:
        if not quiet:
            print(f"[report] {title} ...", file=sys.stderr, flush=True)
        sec = _run_section(key, title, fn, ctx, debug)
        if not quiet:
            print(
                f"[report] {title}: {sec.status} ({sec.seconds:.1f} "
                f"s){' - ' + sec.note if sec.note else ''}",
                file=sys.stderr,
                flush=True,
            )
        sections.append(sec)
    sections.append(_metadata_section(ctx, sections, started, argv))
    generated = started.strftime("%Y-%m-%d %H:%M UTC")
    atomic_write(out_dir / "report.md", lambda fh: fh.write(render_markdown(sections, generated)))
    write_json(
        out_dir / "report.json",
        {
            "sections": {
                s.key: {
                    "title": s.title,
                    "status": s.status,
                    "note": s.note,
                    "seconds": s.seconds,
                    "data": jsonable(s.data),
                }
                for s in sections
            }
        },
        config={"quick": ctx.quick, "seed": seed},
        command=" ".join(argv) if argv else None,
    )
    return atomic_write(
        out_dir / "report.html", lambda fh: fh.write(render_html(sections, generated))
    )


def statuses(report_dir: str | Path) -> dict[str, str]:
    """Section key -> status, read back from ``report.json`` in ``report_dir``."""
    data = json.loads(
        read_regular_text(Path(report_dir) / "report.json", "report.json of report_dir")
    )
    return {k: v["status"] for k, v in data["sections"].items()}
