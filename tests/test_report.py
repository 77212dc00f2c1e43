"""The HTML report: every section present, self-contained, Markdown twin, statuses that tell the truth.

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

sys.path.insert(0, os.path.dirname(__file__))
import component_fakes as fakes  # noqa: E402

import dynkit as dk  # noqa: E402
from dynkit import report  # noqa: E402

TITLES = [title for _, title, _ in report.SECTIONS] + ["Run metadata"]


@pytest.fixture(scope="module")
def real_report(tmp_path_factory):
    """The report with whatever this build holds (absent components -> 'unavailable')."""
    out = tmp_path_factory.mktemp("real")
    report.build_report(out, quick=True, seed=0)
    return out


def _sections(out) -> dict:
    return json.loads((out / "report.json").read_text())["sections"]


def test_every_section_present_in_html_and_markdown(real_report):
    html = (real_report / "report.html").read_text()
    md = (real_report / "report.md").read_text()
    for title in TITLES:
        assert f">{title}</a>" in html and f"<h2>{title} <span" in html, title  # nav entry + heading
        assert f"## {title} [" in md, title
    # The report must never hide a crash: any section is ok, failed (a check) or unavailable, never error.
    statuses = {k: v["status"] for k, v in _sections(real_report).items()}
    assert set(statuses.values()) <= {"ok", "unavailable", "failed"}, statuses
    assert statuses["steppers"] == "ok" and statuses["metadata"] == "ok"


def test_unavailable_sections_say_which_component(real_report):
    for key, sec in _sections(real_report).items():
        if sec["status"] == "unavailable":
            assert re.fullmatch(r"not available: dynkit\.\w+(\.\w+)? .*is not installed in this build.*", sec["note"]), sec


def test_steppers_section_measures_the_real_solver(real_report):
    data = _sections(real_report)["steppers"]["data"]["fixed_step"]
    assert set(data) == {n for n, m in dk.solvers.METHODS.items() if not m.adaptive}
    for name, curve in data.items():
        order = dk.solvers.METHODS[name].order
        # Half an order of slack: h = 0.1 -> 0.05 is close to, not inside, the asymptotic regime.
        assert abs(curve["observed_order"] - order) < 0.5, (name, curve)
        # NFE per step is the method's new evaluations per step (plus the starter for ARK).
        assert curve["nfe"][-1] >= dk.solvers.METHODS[name].new_evaluations_per_step * round(2 / 0.05)


def test_html_is_self_contained(real_report):
    html = (real_report / "report.html").read_text()
    srcs = re.findall(r'src="([^"]+)"', html)
    external = [s for s in srcs if not s.startswith("data:image/png;base64,")]
    assert external == [report.MATHJAX_URL]  # the only remote resource; math stays readable as LaTeX without it
    assert 'rel="stylesheet"' not in html
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
        "propositions": "failed", "derivations": "failed", "steppers": "ok",
        "work_precision": "ok", "nfe_vs_tolerance": "ok", "metadata": "ok"}
    assert sections["propositions"]["note"] == "claims that did not hold: fake_false"
    assert sections["derivations"]["note"] == "derivations that do not match the paper: fake_failing"
    by_name = dict(calls)
    assert by_name["run_all"]["seed"] == 5 and by_name["run_all"]["n_instances"] == 10
    assert by_name["nfe_vs_tolerance"]["models"] == ("node", "hbnode") and by_name["nfe_vs_tolerance"]["seed"] == 5
    assert by_name["work_precision"]["include_scipy"] is True
    html = (tmp_path / "report.html").read_text()
    # Derivations: typeset display math plus the LaTeX source, both from sympy's output.
    tex = "\\frac{d^{2}}{d t^{2}} x{\\left(t \\right)}"
    assert re.search(r'<div class="display">\\\[[^<]*' + re.escape(tex), html)
    assert re.search(r'<pre class="tex">[^<]*' + re.escape(tex), html)
    assert "FAKE heavy-ball limit — FAKE paper, Eq. (99)" in html
    assert html.count("data:image/png;base64,") == 3  # steppers, work-precision, NFE
    md = (tmp_path / "report.md").read_text()
    assert "| fake_true | FAKE paper | Prop. 1 | 10 | 10/10 | holds |" in md
    assert "| fake_false | FAKE paper | Prop. 2 | 10 | 9/10 | FAILS |" in md
    assert "| hbnode | 0.001 | 21.0 ± 1.0 | 30.0 ± 2.0 |" in md
    assert "| problem | solver | tol 0.0001 | tol 1e-07 |" in md  # work-precision: one column per tolerance
    assert "| fake_decay | scipy:RK45 | 3.00e-04 (17) | 3.00e-07 (17) |" in md
    assert re.search(r"\$\$\n[^$]*" + re.escape(tex), md)


def test_a_raising_section_is_recorded_not_fatal(tmp_path, monkeypatch):
    fakes.install(monkeypatch)

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
    assert statuses["propositions"] == "failed" and statuses["steppers"] == "ok"
    assert "not available: dynkit.diagnostics.work_precision is not installed in this build" in \
        (tmp_path / "report.html").read_text()


def test_bad_seed_rejected():
    with pytest.raises(ValueError, match="seed must be an int, got '1'"):
        report.build_report("unused", seed="1")


def test_require_names_the_missing_piece(monkeypatch):
    with pytest.raises(report.ComponentUnavailable, match=r"dynkit\.nosuchmodule is not installed"):
        report.require("nosuchmodule.thing")
    fakes.uninstall(monkeypatch, "theory")
    with pytest.raises(report.ComponentUnavailable, match=r"dynkit\.theory\.run_all is not installed"):
        report.require("theory.run_all")
    assert report.require("solvers.METHODS") is dk.solvers.METHODS


def test_numbers_from_any_library_are_written(tmp_path, monkeypatch):
    # Checks may report residuals as mpmath / numpy / sympy numbers: tables and JSON must take them.
    import mpmath
    import numpy as np
    import sympy

    fakes.install(monkeypatch)
    row = fakes.ClaimRow("mp_claim", "P", "Eq. (1)", np.int64(3), np.int64(3), mpmath.mpf("1e-40"),
                         sympy.Rational(1, 10**30), np.float64(0.5))
    monkeypatch.setattr(dk.theory, "run_all", lambda **kw: fakes.ClaimTable([row]))
    report.build_report(tmp_path, quick=True)
    sec = _sections(tmp_path)["propositions"]
    assert sec["status"] == "ok"
    assert sec["data"]["table"]["rows"][0]["worst_residual"] == 1e-40
    assert "| mp_claim | P | Eq. (1) | 3 | 3/3 | holds | 1.00e-40 | 1.00e-30 | 0.5 |" in (tmp_path / "report.md").read_text()


@pytest.mark.parametrize("held, instances, expected, text", [
    (True, 5, True, "yes"), (False, 5, False, "no"), (5, 5, True, "5/5"), (4, 5, False, "4/5")])
def test_claim_verdict_from_bool_or_count(held, instances, expected, text):
    row = fakes.ClaimRow("c", "p", "e", instances, held, 0.0, 1.0, 0.0)
    assert report.claim_holds(row) is expected and report.held_text(row) == text
