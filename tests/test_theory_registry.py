"""dk.theory.CLAIMS and run_all: the table others (CLI, docs, report) are written against."""

import json

import pytest

import dynkit as dk


@pytest.fixture(scope="module")
def table():
    return dk.theory.run_all(n_instances=3, seed=0)


def test_claims_registry_fields():
    assert len(dk.theory.CLAIMS) >= 20
    for cid, claim in dk.theory.CLAIMS.items():
        assert claim.id == cid and cid.isidentifier() and cid == cid.lower()
        for text in (claim.paper, claim.equation, claim.statement, claim.hypotheses, claim.summary):
            assert isinstance(text, str) and text
        assert claim.expected_verdict in dk.theory.VERDICTS
        # a corrected statement is its own row, naming the correction; an erratum carries the
        # paper's text that shows the intent, the corrected statement and its own check
        assert (claim.correction is not None) == (
            claim.expected_verdict in ("holds with correction", "erratum")
        )
        assert (
            (claim.intent is not None)
            == (claim.expected_verdict == "erratum")
            == (claim.corrected_check is not None)
            == (claim.corrected_flip is not None)
        )
        assert (claim.informal is not None) == (claim.expected_verdict == "undecided")
        assert callable(claim.flip)


def test_every_row_quotes_its_sentence_beside_the_reading_checked():
    """Issue 22: every row carries the paper's sentence (quoted) and the reading that was
    checked; a corrected row quotes the same sentence as its false-as-stated twin and checks the
    corrected statement."""
    for cid, claim in dk.theory.CLAIMS.items():
        assert claim.statement and claim.reading and claim.reading != claim.statement, cid
    twins = {
        "adjoint_formula_commuting": "adjoint_formula",
        "heavy_ball_thm2_asymptotic": "heavy_ball_thm2",
        "heavy_ball_prop3_below": "heavy_ball_prop3",
        "linear_flow_thm3_smooth": "linear_flow_thm3",
        "momentum_rnn_eq15_companion": "momentum_rnn_eq15",
    }
    for corrected, false in twins.items():
        assert dk.theory.CLAIMS[corrected].statement == dk.theory.CLAIMS[false].statement
        assert dk.theory.CLAIMS[corrected].expected_verdict == "holds with correction"
        assert dk.theory.CLAIMS[false].expected_verdict == "false as stated"


def test_run_all_every_verdict_is_the_recorded_one(table):
    assert [row.claim for row in table.rows] == list(dk.theory.CLAIMS)
    for row in table.rows:
        assert row.error is None, row
        assert row.verdict == row.expected_verdict, row
        assert row.instances >= 1 and row.seconds >= 0
        if row.verdict in ("holds", "holds with correction", "undecided"):
            assert row.held == row.instances and row.worst_residual <= row.tolerance
            assert row.counterexample is None and row.corrected is None
            assert (row.reason is not None) == (row.verdict == "undecided")
        # false as stated / erratum: the counterexample with the instance, both sides and the gap
        else:
            assert row.held < row.instances
            assert (
                set(row.counterexample) >= {"instance", "sides", "gap"}
                and len(row.counterexample["sides"]) >= 2
            )
        if row.verdict == "erratum":  # the intended statement was checked in the same row and held
            assert row.intent and row.correction and row.corrected["holds"]
            assert row.corrected["held"] == row.corrected["instances"] >= 1
    assert not table.regressions and not table.all_hold  # some statements are false as written
    counts = table.verdict_counts()
    assert (
        counts["false as stated"] >= 5
        and counts["holds with correction"] >= 4
        and counts["erratum"] >= 4
    )
    assert sum(counts.values()) == len(table.rows)


def test_table_renderings(table):
    data = table.to_dict()
    json.dumps(data)  # JSON-able
    n = len(dk.theory.CLAIMS)
    assert data["all_hold"] is False and len(data["rows"]) == n and data["regressions"] == []
    for row in data["rows"]:  # the interface the report and docs render
        assert {
            "verdict",
            "expected_verdict",
            "statement",
            "counterexample",
            "correction",
            "reading",
            "intent",
            "corrected",
            "reason",
        } <= set(row)
    md = table.to_markdown()
    assert md.count("\n") == n + 1 and "| eigen_pairing | holds |" in md
    text = str(table)
    lines = text.splitlines()
    assert "verdict" in lines[0] and len({len(line) for line in lines[2 : 2 + n]}) == 1  # aligned
    summary = lines[2 + n :]
    assert any(line.startswith(f"{c} false as stated:") for line in summary for c in range(1, n))
    assert any(line.startswith(f"{c} erratum:") for line in summary for c in range(1, n))
    assert any(line.startswith("erratum hbnode_adjoint_prop1: intended") for line in summary)
    assert "every verdict is the one recorded in the code" in lines[-1]
    assert "<table>" in table._repr_html_() and "false as stated" in table._repr_markdown_()


def test_run_all_selects_and_is_reproducible():
    a = dk.theory.run_all(4, seed=3, claims=["momentum_attention", "eigen_pairing"])
    b = dk.theory.run_all(4, seed=3, claims=["eigen_pairing", "momentum_attention"])
    assert [r.claim for r in a.rows] == ["eigen_pairing", "momentum_attention"]
    strip = lambda t: [{k: v for k, v in r.to_dict().items() if k != "seconds"} for r in t.rows]  # noqa
    assert strip(a) == strip(b)
    # a claim's instances do not depend on which other claims run with it
    c = dk.theory.run_all(4, seed=3, claims="momentum_attention")
    assert strip(c) == strip(a)[1:]


def test_claim_row_counts_failures():
    row = dk.theory.ClaimRow("x", "p", "e", 5, 4, 2.0, 1.0, 0.1, verdict="false as stated")
    assert not row.holds and row.to_dict()["holds"] is False
    table = dk.theory.ClaimTable([row], 5, 0)
    assert not table.all_hold and "expected holds" in str(table) and table.regressions == [row]
    assert (
        dk.theory.ClaimRow("x", "p", "e", 5, 5, float("nan"), 1.0, 0.1).to_dict()["worst_residual"]
        == "nan"
    )


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(n_instances=0), "n_instances"),
        (dict(n_instances=2.5), "n_instances"),
        (dict(seed=-1), "seed"),
        (dict(claims=["no_such_claim"]), "claims"),
        (dict(claims=[]), "known claims: eigen_pairing"),
    ],
)
def test_run_all_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        dk.theory.run_all(**{"n_instances": 2, **kwargs})


def test_theory_does_not_import_models_or_tasks():
    """DESIGN.md: theory imports neither dynkit.models nor dynkit.tasks (checked on the source)."""
    import ast
    import pathlib

    for path in pathlib.Path(dk.theory.__file__).parent.rglob("*.py"):  # the claims package too
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else (
                    [("." * node.level) + (node.module or "")]
                    if isinstance(node, ast.ImportFrom)
                    else []
                )
            )
            for name in names:
                assert not any(bad in name for bad in ("models", "tasks")), (path.name, name)


def test_claim_sample_returns_the_full_result():
    result = dk.theory.CLAIMS["momentum_attention"].sample(5, seed=1)
    assert isinstance(result, dk.theory.CheckResult)
    assert result.holds and result.n_instances == 5 and result.message
    assert set(result.instance) == {"q", "k", "v"}


# ---------------------------------------------------------------------------------------------
# the registry's package: one module per paper


def test_each_paper_module_holds_the_rows_of_its_paper():
    from dynkit import _papers
    from dynkit.theory import claims

    expected = {
        "review": {_papers.REVIEW},
        "momentum_transformer": {_papers.MOMENTUM_TRANSFORMER},
        "momentum_rnn": {_papers.MOMENTUM_RNN},
        "momentum_resnets": {_papers.MOMENTUM_RESNETS},
        "csaode": {_papers.CSAODE, _papers.DYNKIT_ANALYSIS},
    }
    assert [m.__name__.rsplit(".", 1)[1] for m in claims.PAPERS] == list(expected)
    for module in claims.PAPERS:
        papers = {c.paper for c in module.CLAIMS}
        assert papers == expected[module.__name__.rsplit(".", 1)[1]], module.__name__
    assert sum(len(m.CLAIMS) for m in claims.PAPERS) == len(claims.CLAIMS)
    # the registry's order is the rows' numbers, the seeds of their instances
    assert [c.number for c in claims.CLAIMS.values()] == list(range(len(claims.CLAIMS)))


def _row(cid: str, number):
    return dk.theory.Claim(cid, "P", "(1)", "text", "h", lambda n, rng: None, number=number)


def test_collect_orders_by_number_and_refuses_a_gap_a_repeat_or_a_twice_used_id():
    from types import SimpleNamespace

    from dynkit.theory.claims import collect

    one = SimpleNamespace(CLAIMS=(_row("b", 2), _row("a", 0)))
    other = SimpleNamespace(CLAIMS=(_row("c", 1),))
    assert list(collect((one, other))) == ["a", "c", "b"]
    with pytest.raises(ValueError, match=r"claim numbers must be 0\.\.1.*b=2"):
        collect((one,))  # a gap: 0, 2
    with pytest.raises(ValueError, match="claim numbers"):
        collect((one, SimpleNamespace(CLAIMS=(_row("c", 2),))))  # 2 twice
    with pytest.raises(ValueError, match=r"unique.*\['a'\]"):
        collect((one, SimpleNamespace(CLAIMS=(_row("a", 1),))))


@pytest.mark.parametrize(
    "module, planted, message",
    [
        # a paper's module importing another paper's
        ("momentum_rnn", "from . import review", "momentum_rnn is not allowed to import"),
        # the shared machinery importing a paper's module
        ("_sampling", "from . import csaode", "_sampling is not allowed to import"),
    ],
)
def test_the_claims_import_contract_holds_and_catches_a_planted_import(
    tmp_path, module, planted, message
):
    """pyproject.toml's import-linter contract ``theory-claims``, run on the package and on a copy
    with one import planted."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    lint = Path(sys.executable).parent / "lint-imports"

    def lint_at(where: Path) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(lint), "--config", str(root / "pyproject.toml"), "--contract", "theory-claims"],
            cwd=where,
            capture_output=True,
            text=True,
            env={"PYTHONPATH": str(where), "PATH": "/usr/bin:/bin"},
        )

    ok = lint_at(root / "src")
    assert ok.returncode == 0 and "1 kept, 0 broken" in ok.stdout, ok.stdout
    shutil.copytree(
        root / "src" / "dynkit", tmp_path / "dynkit", ignore=shutil.ignore_patterns("__pycache__")
    )
    path = tmp_path / "dynkit" / "theory" / "claims" / f"{module}.py"
    path.write_text(path.read_text() + f"\n{planted}  # noqa: E402\n")
    bad = lint_at(tmp_path)
    assert bad.returncode == 1 and f"dynkit.theory.claims.{message}" in bad.stdout, bad.stdout
