"""The HTML report: summary first, every section present, self-contained, Markdown twin, truthful
statuses.

The steppers section runs the real solver. Sections backed by components from other branches are
checked with the contract fakes (tests/component_fakes.py), and with each component removed.
"""

from __future__ import annotations

import base64
import json
import os
import re
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, os.path.dirname(__file__))
import component_fakes as fakes  # noqa: E402

import dynkit as dk  # noqa: E402
from dynkit import report  # noqa: E402

TITLES = [title for _, title, _ in report.SECTIONS] + ["Run metadata"]


@pytest.fixture(scope="module")
def real_report(quick_report):
    """The report with whatever this build holds (absent components -> 'unavailable')."""
    return quick_report


def _sections(out) -> dict:
    return json.loads((out / "report.json").read_text())["sections"]


def test_every_section_present_in_html_and_markdown(real_report):
    html = (real_report / "report.html").read_text()
    md = (real_report / "report.md").read_text()
    for key, title in zip([k for k, _, _ in report.SECTIONS] + ["metadata"], TITLES):
        assert f'<a href="#{key}">{title}</a>' in html and f'<h2 id="{key}">{title}' in html, title
        assert re.search(rf"^## {re.escape(title)}( \[\w+\])?$", md, flags=re.M), title
    # The order a reader meets: summary (one screen), figures, then the details with derivations
    # collapsed.
    for text in (html, md):
        assert (
            text.index("Summary")
            < text.index("Figures")
            < text.index("\n## Worked derivations" if text is md else '<h2 id="derivations"')
        )
    assert html.count('<details class="derivation"') == len(dk.symbolic.DERIVATIONS)
    assert '<details class="derivation" open' not in html
    # The report must never hide a crash: any section is ok, failed (a check) or unavailable, never
    # error.
    statuses = {k: v["status"] for k, v in _sections(real_report).items()}
    assert set(statuses.values()) <= {"ok", "unavailable", "failed"}, statuses
    assert statuses["steppers"] == "ok" and statuses["metadata"] == "ok"


def test_unavailable_sections_say_which_component(real_report):
    for key, sec in _sections(real_report).items():
        if sec["status"] == "unavailable":
            assert re.fullmatch(
                r"not available: dynkit\.\w+(\.\w+)? .*is not installed in this build.*",
                sec["note"],
            ), sec


def test_steppers_section_measures_the_real_solver(real_report):
    data = _sections(real_report)["steppers"]["data"]["fixed_step"]
    assert set(data) == {n for n, m in dk.solvers.METHODS.items() if not m.adaptive}
    for name, curve in data.items():
        order = dk.solvers.METHODS[name].order
        # Half an order of slack: h = 0.1 -> 0.05 is close to, not inside, the asymptotic regime.
        assert abs(curve["observed_order"] - order) < 0.5, (name, curve)
        # NFE per step is the method's new evaluations per step (plus the starter for ARK).
        assert curve["nfe"][-1] >= dk.solvers.METHODS[name].new_evaluations_per_step * round(
            2 / 0.05
        )


def test_html_is_self_contained(real_report):
    html = (real_report / "report.html").read_text()
    srcs = re.findall(r'src="([^"]+)"', html)
    assert all(s.startswith("data:image/png;base64,") for s in srcs), (
        srcs
    )  # nothing fetched when viewed
    assert 'rel="stylesheet"' not in html and "https://" not in html
    assert (
        "<script" not in html.lower()
    )  # equations are MathML typeset at generation time: no math engine
    assert html.count("<math") > 100 and "<merror" not in html
    images = [s for s in srcs if s.startswith("data:")]
    assert images and all(base64.b64decode(s.split(",", 1)[1])[:4] == b"\x89PNG" for s in images)
    assert (real_report / "figures" / "steppers_order.png").exists()
    assert "![Error vs NFE" in (real_report / "report.md").read_text()


def test_metadata_records_versions_and_seed(real_report):
    meta = _sections(real_report)["metadata"]["data"]
    assert meta["seed"] == 0 and meta["quick"] is True
    assert meta["versions"]["numpy"] and meta["versions"]["dynkit"] == dk.__version__


def test_sections_with_fake_components(tmp_path, monkeypatch):
    calls = fakes.install(monkeypatch)
    report.build_report(tmp_path, quick=True, seed=5)
    sections = _sections(tmp_path)
    assert {k: v["status"] for k, v in sections.items()} == {
        "propositions": "failed",
        "ledger": sections["ledger"]["status"],
        "derivations": "failed",
        "steppers": "ok",
        "work_precision": "ok",
        "nfe_vs_tolerance": "ok",
        "metadata": "ok",
    }
    assert sections["propositions"]["note"] == "claims that did not hold: fake_false"
    assert (
        sections["derivations"]["note"] == "derivations that do not match the paper: fake_failing"
    )
    by_name = dict(calls)
    assert by_name["run_all"]["seed"] == 5 and by_name["run_all"]["n_instances"] == 10
    assert (
        by_name["nfe_vs_tolerance"]["models"] == ("node", "hbnode")
        and by_name["nfe_vs_tolerance"]["seed"] == 5
    )
    assert by_name["work_precision"]["include_scipy"] is True
    html = (tmp_path / "report.html").read_text()
    # Derivations: display math (MathML typeset from sympy's LaTeX) plus the LaTeX source.
    tex = "\\frac{d^{2}}{d t^{2}} x{\\left(t \\right)}"
    assert re.search(r'<pre class="tex">[^<]*' + re.escape(tex), html)
    assert '<div class="display"><math display="block">' in html and "<mfrac>" in html
    assert re.search(
        r'<summary><h3>FAKE heavy-ball limit</h3> <span class="source">FAKE paper, Eq. '
        r"\(99\)</span> "
        r'<span class="badge good">matches the paper</span>',
        html,
    )
    # steppers, work-precision, NFE of the trained models of record (analysis/results/node_trained)
    # and of untrained ones
    assert html.count("data:image/png;base64,") == 4
    md = (tmp_path / "report.md").read_text()
    # Summary: counts per verdict and links, no table; details (after the figures): the full table.
    summary = md[md.index("## Summary") : md.index("## Figures")]
    assert (
        "**1** holds · **0** holds with correction · **0** erratum · **0** false as stated · "
        "**0** undecided · **1** did not hold"
        in summary
        and "|" not in summary
    )
    assert re.search(
        r"\| fake_true \| FAKE\ paper,\ Prop\.\ 1 \|[^|]*\| holds\ \|\ 10\ \|\ 10/10 \|", md
    )
    assert re.search(
        r"\| fake_false \| FAKE\ paper,\ Prop\.\ 2 \|[^|]*\| did\ not\ hold\ \|\ 10\ \|\ 9/10 \|",
        md,
    )
    assert "| hbnode | 0.001 | 21.0 ± 1.0 | 30.0 ± 2.0 |" in md
    assert (
        "| problem | solver | tol 0.0001 | tol 1e-07 |" in md
    )  # work-precision: one column per tolerance
    assert "| fake_decay | scipy:RK45 | 3.00e-04 (17) | 3.00e-07 (17) |" in md
    assert re.search(r"\$\$\n[^$]*" + re.escape(tex), md)


def test_a_raising_section_is_recorded_not_fatal(tmp_path, monkeypatch, only_sections):
    fakes.install(monkeypatch)
    only_sections("work_precision")

    def broken(**kwargs):
        raise RuntimeError("boom in work_precision")

    monkeypatch.setattr(dk.diagnostics, "work_precision", broken)
    report.build_report(tmp_path, quick=True)
    sec = _sections(tmp_path)["work_precision"]
    assert sec["status"] == "error" and sec["note"] == "error: RuntimeError: boom in work_precision"
    assert "Traceback" in (tmp_path / "report.html").read_text()
    with pytest.raises(RuntimeError, match="boom"):
        report.build_report(tmp_path / "debug", quick=True, debug=True)


def test_each_missing_component_degrades_only_its_sections(tmp_path, monkeypatch):
    fakes.install(monkeypatch)
    fakes.uninstall(monkeypatch, "diagnostics")
    fakes.uninstall(monkeypatch, "experiments")
    report.build_report(tmp_path, quick=True)
    statuses = {k: v["status"] for k, v in _sections(tmp_path).items()}
    assert statuses["work_precision"] == statuses["nfe_vs_tolerance"] == "unavailable"
    notes = {k: v.get("note") for k, v in _sections(tmp_path).items()}
    assert statuses["propositions"] == "failed" and statuses["steppers"] == "ok", notes
    assert (
        "not available: dynkit.diagnostics.work_precision is not installed in this build"
        in (tmp_path / "report.html").read_text()
    )


def test_bad_seed_rejected():
    with pytest.raises(ValueError, match="seed must be an int, got '1'"):
        report.build_report("unused", seed="1")


def test_require_names_the_missing_piece(monkeypatch):
    with pytest.raises(report.ComponentUnavailable, match=r"dynkit\.nosuchmodule is not installed"):
        report.require("nosuchmodule.thing")
    fakes.uninstall(monkeypatch, "theory")
    with pytest.raises(
        report.ComponentUnavailable, match=r"dynkit\.theory\.run_all is not installed"
    ):
        report.require("theory.run_all")
    assert report.require("solvers.METHODS") is dk.solvers.METHODS


def test_numbers_from_any_library_are_written(tmp_path, monkeypatch, only_sections):
    # Checks may report residuals as mpmath / numpy / sympy numbers: tables and JSON must take them.
    import mpmath
    import numpy as np
    import sympy

    fakes.install(monkeypatch)
    only_sections("propositions")
    row = fakes.ClaimRow(
        "mp_claim",
        "P",
        "Eq. (1)",
        np.int64(3),
        np.int64(3),
        mpmath.mpf("1e-40"),
        sympy.Rational(1, 10**30),
        np.float64(0.5),
    )
    monkeypatch.setattr(dk.theory, "run_all", lambda **kw: fakes.ClaimTable([row]))
    report.build_report(tmp_path, quick=True)
    sec = _sections(tmp_path)["propositions"]
    assert sec["status"] == "ok"
    assert sec["data"]["table"]["rows"][0]["worst_residual"] == 1e-40
    md = (tmp_path / "report.md").read_text()
    assert re.search(
        r"\| mp_claim \| P,\ Eq\.\ \(1\) \|[^|]*\| "
        r"holds\ \|\ 3\ \|\ 3/3\ \|\ 1\.00e\-40\ \|\ 1\.00e\-30 \|",
        md,
    )


@pytest.mark.parametrize(
    "held, instances, expected, text",
    [(True, 5, True, "yes"), (False, 5, False, "no"), (5, 5, True, "5/5"), (4, 5, False, "4/5")],
)
def test_claim_verdict_from_bool_or_count(held, instances, expected, text):
    row = fakes.ClaimRow("c", "p", "e", instances, held, 0.0, 1.0, 0.0)
    assert report.claim_holds(row) is expected and report.held_text(row) == text


# ---- verdicts (theory contract) and the empirical ledger (experiments contract)
# ---------------------------

VERDICT_ROWS = [
    {
        "claim": "a",
        "paper": "P",
        "equation": "(1)",
        "instances": 10,
        "held": 10,
        "holds": True,
        "worst_residual": 0.0,
        "tolerance": 1e-9,
        "seconds": 0.1,
        "verdict": "holds",
        "expected_verdict": "holds",
        "statement": "S_a",
        "counterexample": None,
        "correction": None,
    },
    {
        "claim": "b",
        "paper": "P",
        "equation": "(2)",
        "instances": 10,
        "held": 3,
        "holds": False,
        "worst_residual": 0.5,
        "tolerance": 1e-9,
        "seconds": 0.1,
        "verdict": "false as stated",
        "expected_verdict": "false as stated",
        "statement": "S_b",
        "counterexample": {"gamma": 0.5},
        "correction": "needs gamma > 1",
    },
]


class _Table:
    def __init__(self, rows):
        self.rows = rows

    def to_dict(self):
        return {"rows": self.rows}


def test_claim_verdicts_are_counted_and_an_expected_false_is_not_a_failure(
    tmp_path, monkeypatch, only_sections
):
    fakes.install(monkeypatch)
    only_sections("propositions")
    monkeypatch.setattr(dk.theory, "run_all", lambda **kw: _Table(VERDICT_ROWS))
    report.build_report(tmp_path, quick=True)
    sec = _sections(tmp_path)["propositions"]
    assert sec["status"] == "ok" and sec["data"]["verdicts"] == {
        "holds": 1,
        "holds with correction": 0,
        "erratum": 0,
        "false as stated": 1,
        "undecided": 0,
    }
    md = (tmp_path / "report.md").read_text()
    assert (
        "**1** holds · **0** holds with correction · **0** erratum · **1** false as stated · "
        "**0** undecided (2 claims)" in md
    )
    assert "| b | S_b | needs gamma > 1 | gamma = 0.5 |" in md
    html = (tmp_path / "report.html").read_text()
    assert '<td class="verdict bad">false as stated</td>' in html
    # Planted: a verdict other than the expected one fails the section and names the claim.
    wrong = [dict(VERDICT_ROWS[0], verdict="undecided"), VERDICT_ROWS[1]]
    monkeypatch.setattr(dk.theory, "run_all", lambda **kw: _Table(wrong))
    report.build_report(tmp_path / "wrong", quick=True)
    sec = _sections(tmp_path / "wrong")["propositions"]
    assert sec["status"] == "failed" and sec["note"] == "verdicts other than expected: a"


LEDGER_ROWS = [  # the ledger's row contract (dk.experiments.LedgerRow.to_dict), two outcomes
    {
        "id": "hbnode-nfe",
        "paper": "review",
        "claim": "HBNODE needs fewer NFE",
        "paper_figure": "Fig. 11",
        "experiment": "nfe_sweep",
        "metric": "NFE ratio",
        "scale": "log",
        "effect": -0.21,
        "ci_low": -0.26,
        "ci_high": -0.17,
        "n": 5,
        "n_agree": 5,
        "outcome": "reproduced",
        "reason": "",
        "seeds_needed": None,
    },
    {
        "id": "csa-acc",
        "paper": "CSAODE",
        "claim": "CSAARK is more accurate",
        "paper_figure": "Table 2",
        "experiment": "trec",
        "metric": "accuracy gain",
        "scale": "difference",
        "effect": -0.01,
        "ci_low": -0.03,
        "ci_high": 0.01,
        "n": 5,
        "n_agree": 3,
        "outcome": "inconclusive",
        "reason": "CI holds 0 and the paper's 0.02",
        "seeds_needed": 14,
    },
]


def test_ledger_section_renders_the_experiments_contract(tmp_path, monkeypatch):
    import types

    fakes.install(monkeypatch)
    module = types.ModuleType("dynkit.experiments")
    module.ledger = lambda: _Table(LEDGER_ROWS)
    monkeypatch.setitem(sys.modules, "dynkit.experiments", module)
    report.build_report(tmp_path, quick=True)
    sec = _sections(tmp_path)["ledger"]
    assert sec["status"] == "ok" and sec["data"]["counts"] == {"reproduced": 1, "inconclusive": 1}
    md = (tmp_path / "report.md").read_text()
    assert (
        "| hbnode-nfe | Wang et al., momentum review, Fig. 11 | HBNODE needs fewer NFE | NFE "
        "ratio | "
        "log -0.21 [-0.26, -0.17] | 5 (5) | reproduced |  |"
    ) in md
    assert (
        "| difference -0.01 [-0.03, 0.01] | 5 (3) | inconclusive | CI holds 0 and the "
        "paper's 0.02; seeds "
        "needed 14 |"
    ) in md
    summary = md[md.index("## Summary") : md.index("## Figures")]
    assert "**1** reproduced" in summary and "**1** inconclusive" in summary


SETUPS = {
    "nfe_sweep": [  # the ledger's setup contract (dk.experiments.recipes.setup_table)
        {
            "setting": "solver tolerance",
            "paper": "1e-07",
            "source": "trainpv.py",
            "cpu": "0.001",
            "as_paper": {"cpu": False},
            "why": {"cpu": "CPU time"},
            "missing": "",
        },
        {
            "setting": "optimiser",
            "paper": "Adam",
            "source": "Sect. 3.4",
            "cpu": "Adam",
            "as_paper": {"cpu": True},
            "why": {"cpu": ""},
            "missing": "",
        },
    ]
}


def test_ledger_section_shows_each_setup_against_the_paper(tmp_path, monkeypatch, only_sections):
    import types

    class WithSetups(_Table):
        def to_dict(self):
            return {"rows": self.rows, "setups": SETUPS}

    fakes.install(monkeypatch)
    only_sections("ledger")
    module = types.ModuleType("dynkit.experiments")
    module.ledger = lambda: WithSetups(LEDGER_ROWS)
    monkeypatch.setitem(sys.modules, "dynkit.experiments", module)
    report.build_report(tmp_path, quick=True)
    md = (tmp_path / "report.md").read_text()
    assert "Setup against the paper: nfe_sweep" in md
    assert "| solver tolerance | 1e-07 (trainpv.py) | 0.001 | CPU time |" in md
    assert "| optimiser | Adam (Sect. 3.4) | Adam | as the paper |" in md
    assert _sections(tmp_path)["ledger"]["data"]["setups"] == SETUPS
    # without setups (an older ledger), no such table
    module.ledger = lambda: _Table(LEDGER_ROWS)
    report.build_report(tmp_path / "old", quick=True)
    assert "Setup against the paper" not in (tmp_path / "old" / "report.md").read_text()


def test_ledger_section_opens_with_the_replications_then_pilots_then_not_run(tmp_path, monkeypatch):
    import types

    class WithEvidence(_Table):
        def to_dict(self):
            return {
                "rows": self.rows,
                "headline": "1 of 2 rows replicate the paper's experiment",
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

    rows = [
        dict(
            LEDGER_ROWS[1],
            evidence="pilot",
            outcome="pilot inconclusive",
            reading="inconclusive",
            evidence_why="a stand-in",
            summary="accuracy gain -0.01 over 5 seeds",
        ),
        dict(
            LEDGER_ROWS[0],
            evidence="replication",
            reading="reproduced",
            summary="NFE ratio 0.62 over 5 seeds",
        ),
    ]
    fakes.install(monkeypatch)
    module = types.ModuleType("dynkit.experiments")
    module.ledger = lambda: WithEvidence(rows)
    monkeypatch.setitem(sys.modules, "dynkit.experiments", module)
    report.build_report(tmp_path, quick=True)
    md = (tmp_path / "report.md").read_text()
    assert (
        md.index("1 of 2 rows replicate")
        < md.index("Replications (1)")
        < md.index("Pilots (1)")
        < md.index("Not run: 0 rows")
        < md.index("Every row in detail")
    )
    assert (
        "| HBNODE needs fewer NFE | reproduced | NFE ratio 0.62 over 5 seeds | hbnode-nfe |" in md
    )
    assert "| CSAARK is more accurate | pilot inconclusive | inconclusive | a stand-in |" in md
    summary = md[md.index("## Summary") : md.index("## Figures")]
    assert (
        "**1** reproduced (1 replications)" in summary
        and "**1** pilot inconclusive (1 pilots)" in summary
    )
    sec = _sections(tmp_path)["ledger"]
    assert sec["data"]["by_evidence"]["replication"] == {"reproduced": 1}
    assert sec["data"]["headline"].startswith(
        "replications: 1 reproduced; pilots: 1 pilot inconclusive"
    )


def test_without_the_experiments_module_the_ledger_says_not_available(tmp_path, monkeypatch):
    fakes.install(monkeypatch)
    monkeypatch.setitem(sys.modules, "dynkit.experiments", None)  # import fails as if absent
    report.build_report(tmp_path, quick=True)
    sec = _sections(tmp_path)["ledger"]
    assert sec["status"] == "unavailable" and sec["note"].startswith(
        "not available: dynkit.experiments"
    )


def test_work_precision_has_a_wall_clock_panel(real_report):
    sec = _sections(real_report)["work_precision"]
    if sec["status"] == "unavailable":
        pytest.fail("dk.diagnostics.work_precision is part of every build")
    rows = sec["data"]["table"]["rows"]
    assert rows and all(r["seconds"] > 0 for r in rows)
    assert "vs wall-clock time (bottom)" in (real_report / "report.md").read_text()


def test_library_code_never_picks_the_matplotlib_backend(tmp_path):
    import ast
    from pathlib import Path

    def offenders(root: Path) -> list[str]:
        found = []
        for path in root.rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "use"
                    and isinstance(node.func.value, ast.Name)
                    and node.func.value.id in ("matplotlib", "mpl")
                ):
                    found.append(f"{path.name}:{node.lineno}")
        return found

    assert offenders(Path(dk.__file__).parent) == []  # it blanks figures in Jupyter
    (tmp_path / "planted.py").write_text("import matplotlib\nmatplotlib.use('Agg')\n")
    assert offenders(tmp_path) == ["planted.py:2"]


@settings(max_examples=200, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.complex_numbers() | st.text(),
        lambda kids: (
            st.lists(kids, max_size=4)
            | st.tuples(kids, kids)
            | st.dictionaries(st.integers() | st.text(max_size=5), kids, max_size=4)
        ),
        max_leaves=20,
    )
)
def test_jsonable_gives_strict_json_and_keeps_finite_numbers(x):
    # the one JSON-cleaning function (dynkit.io.jsonable, used by the report, the theory and the
    # CLI): its output is strict JSON (no NaN/Infinity tokens) and every finite float survives the
    # round trip
    import json
    import math

    from dynkit.io import jsonable

    text = json.dumps(jsonable(x), allow_nan=False)

    def finite_floats(v):
        if isinstance(v, dict):
            return [f for w in v.values() for f in finite_floats(w)]
        if isinstance(v, (list, tuple)):
            return [f for w in v for f in finite_floats(w)]
        if isinstance(v, complex):
            return finite_floats([v.real, v.imag])
        return [v] if isinstance(v, float) and math.isfinite(v) else []

    assert finite_floats(json.loads(text)) == finite_floats(x)


def test_jsonable_converts_numpy_sympy_mpmath_and_torch_leaves():
    import mpmath
    import numpy as np
    import sympy
    import torch

    from dynkit.io import jsonable

    got = jsonable(
        {
            "a": np.float32(1.5),
            "b": np.arange(2),
            "c": np.nan,
            "d": np.complex128(1j),
            "e": mpmath.mpf(2),
            "f": sympy.Integer(3),
            "g": sympy.Rational(1, 2),
            "h": torch.tensor([1.0]),
            "i": np.bool_(True),
        }
    )
    assert got == {
        "a": 1.5,
        "b": [0, 1],
        "c": "nan",
        "d": {"re": 0.0, "im": 1.0},
        "e": 2.0,
        "f": 3,
        "g": 0.5,
        "h": [1.0],
        "i": True,
    }


# ---- what a reader sees first, and what they must not see
# ----------------------------------------------


def test_the_summary_is_counts_and_links_and_the_tables_come_after_the_figures(
    tmp_path, monkeypatch
):
    fakes.install(monkeypatch)
    monkeypatch.setattr(dk.theory, "run_all", lambda **kw: _Table(VERDICT_ROWS))
    report.build_report(tmp_path, quick=True)
    html = (tmp_path / "report.html").read_text()
    summary = html[html.index('<h2 id="summary">') : html.index('<h2 id="figures">')]
    assert (
        summary.count("<table") == 1 and 'class="summary"' in summary
    )  # one line per part, no data table
    assert all(f'<a href="#{k}">' in summary for k, _, _ in report.SECTIONS)
    assert '<span class="chip good"><b>1</b> holds</span>' in summary
    assert ">ok<" not in html  # "ok" only says the code ran: never shown as a status
    details = html[html.index('<h2 id="propositions">') :]
    assert "<td>a</td><td>P, (1)</td>" in details and "<td>a</td>" not in summary
    assert (
        "expected" not in details.split("<table", 1)[1].split("</thead>")[0]
    )  # a regression check, not a column
    # Planted: a summary that inlines a table is what the first check is for.
    planted = summary.replace("</table>", "</table><table><tr><td>a</td></tr></table>")
    assert planted.count("<table") != 1


def test_each_claim_row_shows_its_own_instance_count(tmp_path, monkeypatch, only_sections):
    fakes.install(monkeypatch)
    only_sections("propositions")
    rows = [
        dict(VERDICT_ROWS[0], instances=100, held=100),
        dict(VERDICT_ROWS[1], instances=7, held=3),
    ]
    monkeypatch.setattr(dk.theory, "run_all", lambda **kw: _Table(rows))
    report.build_report(tmp_path, quick=True)
    md = (tmp_path / "report.md").read_text()
    assert re.search(
        r"\| a \| P,\ \(1\) \|[^|]*\| holds\ \|\ 100\ \|\ 100/100 \|", md
    ) and re.search(r"\| b \| P,\ \(2\) \|[^|]*\| false\ as\ stated\ \|\ 7\ \|\ 3/7 \|", md)
    assert "10 random instances" not in md  # the number asked for is not claimed for every row
    assert _sections(tmp_path)["propositions"]["data"]["instances"] == {"a": 100, "b": 7}


def test_ledger_rows_with_an_outcome_are_counted_by_it_and_show_their_metric(
    tmp_path, monkeypatch, only_sections
):
    import types

    fakes.install(monkeypatch)
    only_sections("ledger")
    rows = [
        dict(LEDGER_ROWS[0], outcome="smaller effect", reason="effect half the paper's"),
        dict(LEDGER_ROWS[1], outcome="needs full scale"),
        dict(LEDGER_ROWS[1], id="x", outcome="a new label"),
    ]
    module = types.ModuleType("dynkit.experiments")
    module.ledger = lambda: _Table(rows)
    monkeypatch.setitem(sys.modules, "dynkit.experiments", module)
    report.build_report(tmp_path, quick=True)
    sec = _sections(tmp_path)["ledger"]
    # Counted by the label the rows carry (outcome over verdict), whatever its values: none is
    # hard-coded.
    assert sec["data"]["counted_by"] == "outcome"
    assert sec["data"]["counts"] == {"smaller effect": 1, "needs full scale": 1, "a new label": 1}
    md = (tmp_path / "report.md").read_text()
    assert (
        "| id | paper | claim | metric | effect [95% CI] | n (agree) | outcome | reason or "
        "seeds needed |" in md
    )
    assert (
        "| NFE ratio | log -0.21 [-0.26, -0.17] | 5 (5) | smaller effect | effect half the "
        "paper's |" in md
    )
    summary = md[md.index("## Summary") : md.index("## Figures")]
    assert (
        "**1** smaller effect · **1** needs full scale · **1** a new label (3 results)" in summary
    )


def test_no_internal_labels_reach_the_page(real_report):
    html = (real_report / "report.html").read_text()
    text = re.sub(
        r"<pre\b.*?</pre>", " ", html, flags=re.S
    )  # the LaTeX source blocks are meant to be raw
    for internal in (
        "(000)",
        "(003)",
        "(004)",
        "eps -> ",
        "-> 0",
        "sqrt(s)",
        r"\text{rhs}",
        r"\text{eq26}",
    ):
        assert internal not in text, internal
    assert "Wang et al., momentum review" in text and "Sander et al., Momentum ResNets" in text


def test_paper_names_drop_file_numbers():
    from dynkit.report.common import paper_name

    assert paper_name("review (000)") == "Wang et al., momentum review"
    assert (
        paper_name("CSAODE (004), Udwadia & Farahani") == "Zhang et al., CSAODE, Udwadia & Farahani"
    )
    assert paper_name("An unknown paper") == "An unknown paper"


def test_every_shipped_equation_converts_to_mathml_and_a_bad_one_is_an_error_node():
    from dynkit.report.derivations import derivation_view
    from dynkit.report.mathml import mathml_problem, text_with_math, to_mathml

    n = 0
    for name, make in dk.symbolic.DERIVATIONS.items():
        view = derivation_view(make())
        for tex in [t for _, t in view.steps if t] + [view.result, view.stated]:
            if tex:
                n += 1
                assert mathml_problem(to_mathml(tex)) == "", (name, tex[:200])
        for sentence in [s for s, _ in view.steps] + [view.notes, view.title]:
            assert mathml_problem(text_with_math(sentence)) == "", (name, sentence)
    assert n > 100
    # aligned becomes a two-column table; \text escapes are undone; planted errors become <merror>
    # with the TeX
    out = to_mathml(r"\begin{aligned}\dot a_h &= x \\ \text{a\_b} &: 1\end{aligned}")
    assert (
        out.count("<mtr>") == 2
        and 'columnalign="right"' in out
        and "a_b" in out
        and "\\" not in out
    )
    for bad in (r"\nosuchmacro{x}", "x^1^2"):
        assert (
            mathml_problem(to_mathml(bad))
            and "<merror>" in to_mathml(bad)
            and "x" in to_mathml(bad)
        )
    assert text_with_math("a < b and $x^2$") == "a &lt; b and " + to_mathml("x^2", display=False)
    with pytest.raises(TypeError, match="latex: expected a str"):
        to_mathml(None)


def test_every_nfe_figure_runs_the_tolerance_axis_loose_to_tight():
    # dynkit's figure shares the x axis between its panels: inverting it once per panel undid the
    # inversion.
    per_tol = {
        t: {"forward_nfe": {"mean": m, "std": 0.0}, "backward_nfe": {"mean": 2 * m, "std": 0.0}}
        for t, m in (("1e-03", 20.0), ("1e-05", 44.0))
    }
    fig = dk.experiments.plot_nfe_vs_tolerance({"node": per_tol})
    assert all(ax.xaxis_inverted() for ax in fig.axes)
    import matplotlib.pyplot as plt

    plt.close(fig)


def test_the_nfe_section_says_which_models_are_trained(tmp_path, monkeypatch, only_sections):
    """The trained models' figure comes from the results of record and says so; the live
    measurement is labelled untrained (planted: without the results of record, only the untrained
    one remains, and the headline says so)."""
    calls = fakes.install(monkeypatch)
    only_sections("nfe_vs_tolerance")
    report.build_report(tmp_path, quick=True, seed=5)
    nfe = _sections(tmp_path)["nfe_vs_tolerance"]
    html = (tmp_path / "report.html").read_text()
    assert (
        "results of record" in html
        and "UNTRAINED" in html
        and "trained (results of record)" in nfe["data"]["headline"]
    )
    assert nfe["data"]["trained"]["seeds"] and set(nfe["data"]["trained"]["results"]) == {
        "node",
        "hbnode",
    }
    from dynkit.report import sections

    monkeypatch.setattr(sections, "TRAINED_NFE_EXPERIMENT", "no_such_experiment")
    report.build_report(tmp_path / "without", quick=True, seed=5)
    nfe = _sections(tmp_path / "without")["nfe_vs_tolerance"]
    assert nfe["data"]["trained"] is None and nfe["data"]["headline"].endswith("untrained only")
    assert calls
