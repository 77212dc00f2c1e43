"""The Sphinx docs: a fresh build with warnings as errors, and the pages generated from dynkit.

The full build runs on a fresh copy of docs/ and notebooks/ (no generated/ or _build/ left over)
exactly as `make docs` does: it executes the four notebooks and renders them with their figures, and
its pages are then loaded in headless Chromium, offline, to see their equations typeset. The page
generators are also checked directly with the contract fakes, so the derivation, claim and ledger
pages are tested whether or not those components are in this build.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "docs" / "_ext"))
import component_fakes as fakes  # noqa: E402
import dynkit_pages  # noqa: E402
from browser import layout, layout_problems, remote_references, rendered_dom, typeset_problems  # noqa: E402

from dynkit.report import ComponentUnavailable, require  # noqa: E402


SCREEN = (1280, 800)  # a laptop screen: the layout checks' window
CODE_COLUMN = (
    80  # characters: the landing page's code column holds about 90 at 1280 px (its probe below)
)


def _available(dotted: str) -> bool:
    try:
        require(dotted)
        return True
    except ComponentUnavailable:
        return False


@pytest.mark.slow
def test_docs_build_from_fresh_copy_with_warnings_as_errors(tmp_path):
    src = tmp_path / "docs"
    shutil.copytree(ROOT / "docs", src, ignore=shutil.ignore_patterns("_build", "generated"))
    shutil.copytree(ROOT / "notebooks", tmp_path / "notebooks")
    env = dict(
        os.environ,
        PYTHONPATH=str(ROOT / "src")
        + os.pathsep
        + str(ROOT)
        + os.pathsep
        + os.environ.get("PYTHONPATH", ""),
        DYNKIT_DOCS_INSTANCES="5",
    )
    out = tmp_path / "html"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "sphinx",
            "-W",
            "--keep-going",
            "-q",
            "-b",
            "html",
            str(src),
            str(out),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    guide = sorted(p.stem for p in (ROOT / "docs" / "guide").glob("*.md"))
    for page in (
        "index",
        "api",
        *[f"guide/{g}" for g in guide],
        "generated/cli",
        "generated/derivations/index",
        "generated/propositions/index",
        "generated/ledger",
    ):
        assert (out / f"{page}.html").exists(), page
    index = (out / "index.html").read_text()
    assert all(
        f'href="guide/{g}.html"' in index for g in guide
    )  # the toctree lists every guide page
    # The notebooks, executed, with their figures (each draws at least one) and no error output.
    for nb in sorted((ROOT / "notebooks").glob("*.py")):
        page = (out / "generated" / "notebooks" / f"{nb.stem}.html").read_text()
        assert re.search(r'<img[^>]+src="[^"]*\.png"', page), nb.stem
        assert "Traceback" not in page, nb.stem
    # Offline typesetting: dynkit's MathJax copy, and the pages' equations typeset in a real
    # browser.
    assert (out / "_static" / "mathjax" / "tex-svg-full.js").exists()
    pages = [
        out / "generated" / "derivations" / "psi_eps.html",
        out / "generated" / "notebooks" / "hbnode_adjoint.html",
    ]
    for page in pages:
        html = page.read_text()
        assert remote_references(html) == [], page
        expected = html.count('class="math notranslate nohighlight"')
        assert expected >= 3, page
        assert typeset_problems(rendered_dom(page), expected) == [], page
    # The layout at 1280 x 800 (tests/browser.py's LAYOUT_PROBE, overlay scrollbars;
    # tests/test_docs_layout.py plants each violation): no equation, table or code block cut off on
    # the derivation pages, the ledger and the landing page; the ledger's table and the landing
    # page's code fit without scrolling; every notebook opens with its figure on the first screen,
    # and cuts nothing off either.
    checked = [(page, ()) for page in sorted((out / "generated" / "derivations").glob("*.html"))]
    checked += [
        (out / "generated" / "ledger.html", ("table",)),
        (out / "index.html", ("code", "table")),
    ]
    for page, must_fit in checked:
        assert layout_problems(layout(page, *SCREEN), must_fit) == [], page
    for nb in sorted((ROOT / "notebooks").glob("*.py")):
        found = layout(out / "generated" / "notebooks" / f"{nb.stem}.html", *SCREEN)
        assert (
            found["first_figure_top"] is not None and found["first_figure_top"] < found["viewport"]
        ), (nb.stem, found)
        assert layout_problems(found) == [], nb.stem
    derivations = (out / "generated/derivations/index.html").read_text()
    assert ("Not available in this build" in derivations) != _available("symbolic.DERIVATIONS")
    propositions = (out / "generated/propositions/index.html").read_text()
    assert ("Not available in this build" in propositions) != _available("theory.run_all")
    # The methods table is computed at build time from the real solver, one row per method.
    steppers = (out / "guide/steppers.html").read_text()
    import dynkit as dk

    assert all(f'<span class="pre">{m}</span>' in steppers for m in dk.solvers.METHODS)
    assert "dynkit.solvers.solve" in (out / "api.html").read_text()
    assert "dynkit nfe-sweep" in (out / "generated/cli.html").read_text()


def test_derivation_pages_from_the_contract(tmp_path):
    warnings = []
    dynkit_pages.derivation_pages(tmp_path, fakes.DERIVATIONS, warn=warnings.append)
    ok = (tmp_path / "fake_heavy_ball.md").read_text()
    assert ok.startswith("# FAKE heavy-ball limit\n") and "*FAKE paper, Eq. (99)*" in ok
    assert "$$\n\\begin{aligned}\\beta \\frac{d}{d t} x{\\left(t \\right)}" in ok  # sympy's LaTeX
    assert "**matches the paper**" in ok
    assert "**differs from the paper**" in (tmp_path / "fake_failing.md").read_text()
    index = (tmp_path / "index.md").read_text()
    assert "```{toctree}" in index and "\nfake_heavy_ball\nfake_failing\n" in index
    assert warnings == []


WRONG_LEFT_HAND_SIDES = re.compile(
    r"\\text\{(h|m|rhs|eq\d+|aT|aT_dot|am_dot|at_dot|a_h|integrand)\}"
)


def test_derivation_pages_show_the_real_left_hand_sides_and_the_papers_statement(tmp_path):
    import dynkit as dk
    from dynkit.report.derivations import derivation_markdown, derivation_view

    dynkit_pages.derivation_pages(tmp_path, dk.symbolic.DERIVATIONS)
    pages = {p.stem: p.read_text() for p in tmp_path.glob("*.md") if p.stem != "index"}
    assert set(pages) == set(dk.symbolic.DERIVATIONS)
    for name, page in pages.items():
        assert not WRONG_LEFT_HAND_SIDES.search(page), (name, WRONG_LEFT_HAND_SIDES.search(page))
        shown = page[
            : page.index("LaTeX source:")
        ]  # the source block below is the raw fragment, for copying
        assert "(000)" not in shown and "(003)" not in shown, name  # file numbers are internal
        # one renderer: the page is the report's Markdown of the same view
        assert page.startswith(
            derivation_markdown(derivation_view(dk.symbolic.DERIVATIONS[name]()), level=1)
        ), name

    def stated(name):
        page = pages[name]
        return page[page.index("**As stated in the paper**") : page.index("Generated from")]

    assert "\\dot a_h &= -a_m\\,\\frac{\\partial f}{\\partial h}" in stated(
        "hbnode_adjoint_first_order"
    )  # block form (41)
    assert "\\ddot a_m - \\gamma\\dot a_m &= a_m" in stated("hbnode_adjoint_second_order")
    assert "\\Psi_\\varepsilon(\\theta)" in stated("psi_eps") and "verified exactly" not in stated(
        "psi_eps"
    )
    assert "symplectic" not in stated(
        "momentum_resnet_limit"
    )  # dynkit's own check is not the paper's words
    # Planted: the old rendering (dictionary keys as left-hand sides) is what the grep is for.
    from dynkit.symbolic.derivation import to_latex

    d = dk.symbolic.DERIVATIONS["node_adjoint"]()
    assert WRONG_LEFT_HAND_SIDES.search(to_latex(d.result)) and not WRONG_LEFT_HAND_SIDES.search(
        pages["node_adjoint"]
    )


def test_a_raising_derivation_is_a_build_warning(tmp_path):
    def broken():
        raise RuntimeError("sympy gave up")

    warnings = []
    dynkit_pages.derivation_pages(tmp_path, {"broken": broken}, warn=warnings.append)
    assert warnings == ["dynkit.symbolic.DERIVATIONS['broken'] raised RuntimeError: sympy gave up"]


def test_proposition_pages_from_the_contract(tmp_path):
    dynkit_pages.proposition_pages(tmp_path, fakes.CLAIMS, fakes.run_all, 7)
    page = (tmp_path / "fake_true.md").read_text()
    assert page.startswith("# fake_true: FAKE paper, Prop. 1")
    assert "**Verdict: holds**" in page
    assert "**Statement.** A statement that holds." in page and "- f is smooth" in page
    assert (
        "| {doc}`fake_true <fake_true>` | FAKE paper | Prop. 1 | holds | 7/7 | 1e-14 | 1e-10 |"
        in page
    )
    index = (tmp_path / "index.md").read_text()
    assert (
        "| {doc}`fake_false <fake_false>` | FAKE paper | Prop. 2 | did not hold | 6/7 | 0.5 "
        "| 1e-10 |" in index
    )
    assert (
        "**1** holds · **0** holds with correction · **0** erratum · **0** false as stated · "
        "**0** undecided · **1** did not hold" in index
    )


def test_claim_pages_show_verdicts_corrections_and_counterexamples(tmp_path):
    class Table:
        def to_dict(self):
            return {
                "rows": [
                    {
                        "claim": "fake_true",
                        "paper": "FAKE paper",
                        "equation": "Prop. 1",
                        "instances": 7,
                        "held": 7,
                        "holds": True,
                        "worst_residual": 0.0,
                        "tolerance": 1e-10,
                        "verdict": "holds with correction",
                        "expected_verdict": "holds with correction",
                        "correction": "only for gamma > 0",
                        "counterexample": None,
                    },
                    {
                        "claim": "fake_false",
                        "paper": "FAKE paper",
                        "equation": "Prop. 2",
                        "instances": 7,
                        "held": 2,
                        "holds": False,
                        "worst_residual": 0.5,
                        "tolerance": 1e-10,
                        "verdict": "false as stated",
                        "expected_verdict": "false as stated",
                        "correction": None,
                        "counterexample": {"gamma": -1.0},
                    },
                ]
            }

    dynkit_pages.proposition_pages(tmp_path, fakes.CLAIMS, lambda **kw: Table(), 7)
    page = (tmp_path / "fake_true.md").read_text()
    assert (
        "**Verdict: holds with correction** — about" in page and "expected" not in page
    )  # a test's business
    assert "**Correction.** only for gamma > 0" in page
    assert "**Counterexample.** gamma = -1.0" in (tmp_path / "fake_false.md").read_text()
    assert (
        "**0** holds · **1** holds with correction · **0** erratum · **1** false as stated · "
        "**0** undecided (2 claims)" in (tmp_path / "index.md").read_text()
    )


def test_ledger_page_from_the_contract(tmp_path):
    class Ledger:
        def to_dict(self):
            return {
                "rows": [
                    {
                        "id": "x1",
                        "paper": "review",
                        "claim": "fewer NFE",
                        "paper_figure": "Fig. 11",
                        "experiment": "nfe",
                        "metric": "ratio",
                        "ours": {"mean": 0.6, "ci_low": 0.5, "ci_high": 0.7, "n_seeds": 5},
                        "scale": "small",
                        "verdict": "partly reproduced",
                        "rule": "CI < 1",
                    }
                ]
            }

    dynkit_pages.ledger_page(tmp_path / "ledger.md", lambda: Ledger())
    text = (tmp_path / "ledger.md").read_text()
    assert (
        "**0** reproduced · **1** partly reproduced · **0** not reproduced at this scale · "
        "**0** contradicted" in text
    )
    assert (
        "| claim | paper | metric | effect [95% CI] | n (agree) | plan | verdict | reason or "
        "seeds needed | id |" in text
    )
    assert (
        "| fewer NFE | Wang et al., momentum review, Fig. 11 | ratio | 0.6 [0.5, 0.7] (5 "
        "seeds) |  | "
        "none | partly reproduced |  | `x1` |"
    ) in text  # a row from before issue 21: no n (agree), no plan

    # Rows that carry an outcome (and labels no list anticipates) are counted by it.
    class Outcomes:
        def to_dict(self):
            row = Ledger().to_dict()["rows"][0]
            return {
                "rows": [
                    dict(
                        row,
                        outcome="smaller effect",
                        plan="toy: n = 5, t interval, written after the results",
                    ),
                    dict(
                        row,
                        id="x2",
                        outcome="something new",
                        plan="toy: n = 5, t interval, prospective",
                    ),
                ]
            }

    dynkit_pages.ledger_page(tmp_path / "outcomes.md", lambda: Outcomes())
    text = (tmp_path / "outcomes.md").read_text()
    assert (
        "**1** smaller effect · **1** something new (2 results)" in text
        and "| outcome | reason or seeds needed |" in text
    )
    assert (
        "| retrospective | smaller effect |" in text and "| prospective | something new |" in text
    )

    # rows with an evidence level: the replications first, then the pilots, then what is not run
    class WithEvidence:
        def to_dict(self):
            row = dict(
                Ledger().to_dict()["rows"][0],
                summary="NFE ratio 0.6 over 5 seeds",
                reading="reproduced",
            )
            return {
                "headline": "1 of 3 rows replicate the paper's experiment",
                "rows": [
                    dict(
                        row,
                        id="p1",
                        evidence="pilot",
                        outcome="pilot agrees",
                        evidence_why="digits",
                    ),
                    dict(row, id="r1", evidence="replication", outcome="reproduced"),
                ],
                "not_run": [
                    {
                        "paper": "P",
                        "location": "Table 9",
                        "compares": "BLEU",
                        "needs": "IWSLT",
                        "kind": "data",
                    }
                ],
            }

    dynkit_pages.ledger_page(tmp_path / "evidence.md", lambda: WithEvidence())
    text = (tmp_path / "evidence.md").read_text()
    assert (
        text.index("1 of 3 rows replicate")
        < text.index("## Replications (1)")
        < text.index("## Pilots (1)")
        < text.index("## Not run (0 rows, 1 comparisons)")
        < text.index("## Every row in detail")
    )
    assert "| fewer NFE | reproduced | NFE ratio 0.6 over 5 seeds | `r1` |" in text
    assert (
        "| fewer NFE | pilot agrees | reproduced | digits | NFE ratio 0.6 over 5 seeds | `p1` |"
        in text
    )
    assert "| P | Table 9 | BLEU | IWSLT | data |" in text
    dynkit_pages.ledger_page(
        tmp_path / "absent.md", None, ComponentUnavailable("dynkit.experiments is not installed")
    )
    assert (
        "Not available in this build: dynkit.experiments is not installed"
        in (tmp_path / "absent.md").read_text()
    )


def test_absent_component_page_says_so(tmp_path):
    exc = ComponentUnavailable("dynkit.theory.run_all is not installed in this build")
    dynkit_pages.proposition_pages(tmp_path, None, None, 5, exc)
    assert (
        "Not available in this build: dynkit.theory.run_all is not installed"
        in (tmp_path / "index.md").read_text()
    )


def test_readme_and_pyproject_agree_and_the_package_is_typed():
    import tomllib

    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    requires = meta["project"]["requires-python"]  # e.g. ">=3.11"
    readme = (ROOT / "README.md").read_text()
    assert f"Python ≥ {requires.removeprefix('>=')}" in readme, requires
    assert (
        "--index-url https://download.pytorch.org/whl/cpu" in readme
    )  # how to get the CPU torch elsewhere
    assert "make demo" in readme and "make test" in readme
    data = meta["tool"]["setuptools"]["package-data"]["dynkit"]
    assert "py.typed" in data and (ROOT / "src" / "dynkit" / "py.typed").exists()
    templates = ROOT / "src" / "dynkit" / "report" / "templates"
    assert any(pattern == "report/templates/*" for pattern in data) and sorted(
        p.name for p in templates.iterdir()
    ) == ["html.j2", "md.j2", "report.css", "report.j2"]


def test_the_guide_is_ordered_as_a_reader_learns_one_page_per_topic():
    index = (ROOT / "docs" / "index.md").read_text()
    toc = index[index.index(":caption: User guide") :].split("```", 1)[0]
    listed = re.findall(r"^guide/(\w+)$", toc, flags=re.M)
    pages = sorted(p.stem for p in (ROOT / "docs" / "guide").glob("*.md"))
    assert ":glob:" not in toc and sorted(listed) == pages and len(set(listed)) == len(listed)
    assert listed[0] == "getting_started" and listed.index("steppers") < listed.index(
        "stiff"
    ) < listed.index("training")
    # one page per topic: the merged pairs are gone
    assert not {"nfe_vs_tolerance", "stiffness"} & set(pages)


def test_getting_started_covers_the_first_hour_and_its_code_runs(tmp_path, monkeypatch, capsys):
    text = (ROOT / "docs" / "guide" / "getting_started.md").read_text()
    headings = re.findall(r"^## \d\. (.+)$", text, flags=re.M)
    assert headings == [
        "Install",
        "A first solve",
        "An adjoint solve",
        "Choosing a solver",
        "Checking a claim",
        "Running an experiment",
    ]
    for method in ("dopri5", "dop853", "rodas4", "rosenbrock23", "auto", "ark4"):
        assert f"`{method}`" in text, method
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 5
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(
        compile("\n".join(blocks), "getting_started.md", "exec"), namespace
    )  # each block asserts its result
    out = capsys.readouterr().out
    assert "holds 50/50 instances" in out and "resnet.final_mse" in out


def test_the_solve_docstring_names_every_method():
    import dynkit as dk

    names = set(dk.solvers.METHODS) | {"auto"}
    missing = sorted(n for n in names if f"``{n}``" not in dk.solve.__doc__)
    assert missing == [], missing
    assert {
        "rosenbrock23",
        "rodas4",
    } <= names  # the check is not vacuous: the stiff methods are registered


def test_the_readme_opens_with_a_runnable_odeint_example_and_its_figure(monkeypatch, tmp_path):
    """The first screen (like torchdiffeq's and diffrax's): two commands, then a short odeint
    example that runs as written, then the figure it draws (a file of the repository, so GitHub
    shows it)."""
    readme = (ROOT / "README.md").read_text()
    first = readme[: readme.index("## The report and the docs")]
    block = re.findall(r"```python\n(.*?)```", first, flags=re.S)[0]
    assert "from dynkit import odeint" in block and len(block.strip().splitlines()) <= 8
    namespace: dict = {}
    exec(compile(block, "README.md", "exec"), namespace)  # noqa: S102 - the README's own example
    z = namespace["z"]
    assert (
        tuple(z.shape) == (601, 2) and abs(float(z[-1, 0])) < 0.2
    )  # friction 0.3: settled near x = 0 by t = 30
    figure = re.search(r"!\[[^]]+\]\(([^)]+\.png)\)", first).group(1)
    assert (ROOT / figure).is_file()
    monkeypatch.chdir(ROOT)
    import runpy

    runpy.run_path(str(ROOT / "examples" / "heavy_ball.py"), run_name="not_main")["main"](
        str(tmp_path / "f.png")
    )
    assert (tmp_path / "f.png").stat().st_size > 10_000


def _code_lines_wider_than_the_column(markdown: str) -> list[str]:
    blocks = re.findall(r"^```[^\n]*\n(.*?)^```", markdown, flags=re.S | re.M)
    return [line for block in blocks for line in block.splitlines() if len(line) > CODE_COLUMN]


def test_the_landing_page_and_the_readme_share_one_example_that_fits_the_code_column():
    """The README's first example is the landing page's, line for line; no code line on the
    landing page (nor in the example) is wider than the docs' code column. Planted: a long
    comment is caught."""
    readme, index = (ROOT / "README.md").read_text(), (ROOT / "docs" / "index.md").read_text()

    def example(text):
        return re.findall(r"```python\n(.*?)```", text, flags=re.S)[0]

    assert example(readme) == example(index)
    assert _code_lines_wider_than_the_column(index) == []
    assert _code_lines_wider_than_the_column(f"```python\n{example(readme)}```\n") == []
    planted = index.replace(
        "import torch\n", "import torch  # " + "so torch is there " * 4 + "\n", 1
    )
    assert _code_lines_wider_than_the_column(planted) == [
        "import torch  # " + "so torch is there " * 4
    ]
