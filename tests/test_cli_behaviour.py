"""The `dynkit` command behaving like one (issue 24 §4): plots of the dense output, a LaTeX
fragment that compiles, quiet exits on a closed pipe, distinct exit codes, progress,
early-stopping stiffness, the training bars, the ledger's formats and ``to_pandas()``."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
import types

import numpy as np
import pytest
import torch

import dynkit as dk
from dynkit import cli
from dynkit.cli import main

VDP = """
import numpy as np
mu = 5.0
def f(t, y):
    return np.array([y[1], mu * (1 - y[0] ** 2) * y[1] - y[0]])
y0 = np.array([2.0, 0.0])
t = np.array([0.0, 20.0])
"""
ENV = dict(
    os.environ,
    PYTHONPATH=os.path.join(os.getcwd(), "src") + os.pathsep + os.environ.get("PYTHONPATH", ""),
)


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def vdp_file(tmp_path):
    path = tmp_path / "vdp.py"
    path.write_text(VDP)
    return path


# -- solve --plot ---------------------------------------------------------------------------------


def test_plot_curve_follows_the_solution_between_two_output_times():
    """Van der Pol (mu = 5) asked for at t = 0 and 20 only: the plotted curve is the dense
    output, which matches scipy's Radau at rtol 1e-10 (an independent solver) to the solve's own
    accuracy; a straight line between the two outputs (the old plot) misses it by O(1)."""
    from scipy.integrate import solve_ivp

    ns = {}
    exec(VDP, ns)
    sol = dk.solve(ns["f"], ns["y0"], ns["t"], rtol=1e-8, atol=1e-10, dense=True)
    t, y, t_steps = cli.plot_curve(sol)
    assert (
        len(t) >= cli.PLOT_POINTS
        and np.isin(t_steps, t).all()
        and len(t_steps) == sol.stats.n_accepted + 1
    )
    ref = solve_ivp(
        ns["f"], (0.0, 20.0), ns["y0"], method="Radau", rtol=1e-10, atol=1e-12, t_eval=t
    ).y.T
    # 1e-3: the dopri5 interpolant at rtol 1e-8 on a mildly stiff relaxation oscillation (fast
    # jumps)
    assert np.abs(y - ref).max() <= 1e-3
    straight = np.interp(t, sol.ts, sol.ys[:, 0])
    assert (
        np.abs(straight - ref[:, 0]).max() > 1.0
    )  # the planted failure: two points joined by a line


def test_solve_plot_writes_a_png(capsys, vdp_file, tmp_path):
    png = tmp_path / "vdp.png"
    code, _, err = run(capsys, "solve", str(vdp_file), "--plot", str(png))
    assert code == 0, err
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_help_says_the_file_runs_with_the_users_privileges(capsys):
    for command in ("solve", "stiffness"):
        code, out, _ = run(capsys, command, "--help")
        assert code == 0 and "with your privileges" in " ".join(out.split())
    assert "with your privileges" in " ".join(cli.__doc__.split())


# -- derive --latex
# ---------------------------------------------------------------------------------

# LaTeX2e, amsmath and amssymb commands the fragments may use (sympy's printer and the derivations'
# prose).
KNOWN_COMMANDS = set(
    """
subsection noindent emph item paragraph texttt textbf text textasciicircum textasciitilde textbackslash textless
textgreater textbar begin end left right frac dfrac sqrt cdot cdots ldots dots times partial nabla int sum prod
lim log ln exp sin cos tan sinh cosh tanh det mathbb mathrm mathbf mathcal operatorname dot ddot hat tilde bar
vec overline substack top to infty le leq ge geq ne neq approx equiv in quad qquad alpha beta gamma delta epsilon
varepsilon zeta eta theta vartheta iota kappa lambda mu nu xi pi rho sigma tau upsilon phi varphi chi psi omega
Gamma Delta Theta Lambda Xi Pi Sigma Phi Psi Omega bullet circ pm mp surd displaystyle mid
""".split()  # noqa: E501
)
KNOWN_ENVIRONMENTS = {"enumerate", "aligned", "matrix", "pmatrix", "bmatrix", "cases"}


def latex_problems(fragment: str) -> list[str]:
    """What would stop ``fragment`` from compiling in an article with amsmath and amssymb (an
    empty list when nothing does): unknown commands or environments, unbalanced braces,
    environments or display math, Markdown markup, text-mode specials outside math."""
    body = "\n".join(line for line in fragment.splitlines() if not line.startswith("%"))
    body = body.replace("\\\\", " ")  # aligned's line breaks
    problems = [
        f"unknown command \\{c}"
        for c in sorted(set(re.findall(r"\\([A-Za-z]+)", body)) - KNOWN_COMMANDS)
    ]
    unescaped = re.sub(r"\\[{}]", "", body)
    depth = 0
    for ch in unescaped:
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if depth < 0:
            problems.append("a } closes nothing")
            break
    if depth > 0:
        problems.append(f"{depth} unclosed {{")
    stack = []
    for kind, env in re.findall(r"\\(begin|end)\{([^}]*)\}", body):
        if env not in KNOWN_ENVIRONMENTS:
            problems.append(f"unknown environment {env}")
        if kind == "begin":
            stack.append(env)
        elif not stack or stack.pop() != env:
            problems.append(f"\\end{{{env}}} without its \\begin")
    problems += [f"unclosed environment {env}" for env in stack]
    if body.count(r"\[") != body.count(r"\]"):
        problems.append("unbalanced \\[ \\]")
    problems += [f"Markdown {token!r}" for token in ("**", "###", "$$", "`") if token in body]
    text = re.sub(r"\\\[.*?\\\]", "", body, flags=re.S)  # outside display math ...
    text = re.sub(r"(?<!\\)\$.*?(?<!\\)\$", "", text)  # ... and inline math
    problems += [
        f"unescaped {c!r} in text" for c in "_^&#%" if re.search(rf"(?<!\\){re.escape(c)}", text)
    ]
    if text.count("$") != text.count(r"\$"):
        problems.append("unbalanced $")
    return problems


@pytest.mark.parametrize("name", sorted(dk.symbolic.DERIVATIONS))
def test_derivation_latex_is_a_fragment_that_compiles(name):
    d = dk.symbolic.DERIVATIONS[name]()
    assert latex_problems(d.to_latex()) == []


def test_the_latex_checker_rejects_markdown_and_bad_latex():
    """Planted: the Markdown rendering (what --latex printed before) and broken LaTeX fail the
    checker."""
    d = dk.symbolic.DERIVATIONS["heavy_ball_limit"]()
    assert any("Markdown" in p for p in latex_problems(d.to_markdown()))
    assert latex_problems(r"\item x_1 and \frac{1}{2") == ["1 unclosed {", "unescaped '_' in text"]
    assert latex_problems(r"\begin{enumerate}\foo\end{aligned}")[:2] == [
        "unknown command \\foo",
        "\\end{aligned} without its \\begin",
    ]


def test_derive_latex_into_a_closed_pipe_exits_quietly():
    """`dynkit derive NAME --latex | head -c 100`: ~90 kB of output against a reader that stops
    after 100 bytes."""
    argv = [sys.executable, "-m", "dynkit.cli", "derive", *["heavy_ball_limit"] * 30, "--latex"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV)
    head = proc.stdout.read(100)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == cli.EXIT_BROKEN_PIPE
    assert head.startswith(b"% dynkit derivation heavy_ball_limit") and err == ""


# -- exit codes ------------------------------------------------------------------------------------


def test_exit_codes_are_distinct_and_documented(capsys, vdp_file):
    assert len(set(cli.EXIT_CODES)) == len(cli.EXIT_CODES) == 5
    code, out, _ = run(capsys, "--help")
    assert code == 0 and all(
        f"{c} {what}" in " ".join(out.split()) for c, what in cli.EXIT_CODES.items()
    )
    code, _, err = run(capsys, "solve", str(vdp_file), "--rtol", "abc")
    assert code == cli.EXIT_USAGE == 2
    code, _, err = run(
        capsys, "solve", str(vdp_file), "--method", "rk4"
    )  # fixed step without --step-size
    assert code == cli.EXIT_USAGE and "step_size" in err
    code, _, err = run(capsys, "solve", str(vdp_file), "--max-steps", "3")
    assert code == cli.EXIT_FAILED == 3 and "MaxStepsExceeded" in err


def test_an_exception_in_the_users_f_is_a_failed_solve(capsys, tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import numpy as np\ny0 = np.ones(2)\nt = [0, 1]\ndef f(t, y):\n    return y[:1]\n"
    )
    code, _, err = run(capsys, "solve", str(bad))
    assert code == cli.EXIT_FAILED and "shape" in err


# -- progress and early stopping
# --------------------------------------------------------------------


def test_verify_shows_progress_unless_quiet(capsys):
    claim = next(iter(dk.theory.CLAIMS))
    code, _, err = run(capsys, "verify", claim, "--instances", "3")
    assert code in (0, 1) and "dk.theory claims" in err and "1/1" in err
    code, _, err = run(capsys, "verify", claim, "--instances", "3", "--quiet")
    assert "dk.theory claims" not in err


def test_stiffness_stops_once_the_verdict_is_settled(capsys, vdp_file):
    """Van der Pol mu = 1000 over [0, 3000] (millions of explicit steps): stiff within the first
    250 steps, where the command stops; --to-end integrates up to --max-steps."""
    code, out, err = run(
        capsys, "stiffness", str(vdp_file), "--param", "mu=1000", "--t", "0,3000", "--json", "-"
    )
    assert code == 0, err
    report = json.loads(out)
    assert report["is_stiff"] is True and report["config"]["steps_budget"] == 250
    assert "verdict settled" in err and "stopped after 250 steps" in err
    code, out, err = run(
        capsys,
        "stiffness",
        str(vdp_file),
        "--param",
        "mu=1000",
        "--t",
        "0,3000",
        "--to-end",
        "--max-steps",
        "3000",
        "--json",
        "-",
    )
    report = json.loads(out)
    assert code == 0 and report["is_stiff"] is True and report["config"]["steps_budget"] == 3000
    assert report["n_accepted_steps"] > 250 and "stopped after" not in err


def test_stiffness_of_a_non_stiff_problem_runs_to_the_end(capsys, vdp_file):
    code, out, err = run(
        capsys, "stiffness", str(vdp_file), "--param", "mu=0.5", "--t", "0,5", "--json", "-"
    )
    report = json.loads(out)
    assert code == 0 and report["is_stiff"] is False and report["complete"] is True


def test_training_bars_have_a_total_and_one_final_bar(capsys):
    from dynkit.tasks.training import fit

    model = torch.nn.Linear(2, 1)
    data = torch.randn(6, 2)

    def batches(generator):  # a generator: no len(), so the total comes from batches_per_epoch
        for i in range(0, 6, 2):
            yield data[i : i + 2]

    batches.batches_per_epoch = 3
    step = lambda m, b: (m(b).pow(2).mean(), {})  # noqa: E731
    fit(
        model,
        torch.optim.SGD(model.parameters(), lr=0.1),
        batches,
        step,
        2,
        progress=True,
        description="tiny",
    )
    err = capsys.readouterr().err.replace("\r", "\n")
    assert "epoch 1/2:   0%" in err and "0/3 [" in err  # the batch bar's total
    assert (
        sum(line.startswith("tiny: 100%") for line in err.splitlines()) == 1
    )  # drawn once, by close()
    del batches.batches_per_epoch  # without it: the second epoch's total is the first epoch's count
    fit(
        model,
        torch.optim.SGD(model.parameters(), lr=0.1),
        batches,
        step,
        2,
        progress=True,
        description="tiny",
    )
    err = capsys.readouterr().err.replace("\r", "\n")
    assert "epoch 1/2: 0batch" in err and "epoch 2/2:   0%" in err and "0/3 [" in err


# -- the ledger -----------------------------------------------------------------------------------


def test_ledger_formats(capsys, monkeypatch):
    n_claims = len(dk.experiments.ledger().rows)
    code, out, _ = run(capsys, "ledger", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and len(rows) == n_claims
    assert {
        "id",
        "metric",
        "scale",
        "effect",
        "ci_low",
        "ci_high",
        "n",
        "n_agree",
        "outcome",
        "reason",
        "seeds_needed",
    } <= set(rows[0])
    code, out, _ = run(capsys, "ledger", "--format", "json")
    assert code == 0 and len(json.loads(out)["rows"]) == n_claims
    code, md, _ = run(capsys, "ledger", "--format", "md")
    assert code == 0 and md.startswith(
        f"{sum(r.evidence == 'replication' for r in dk.experiments.ledger().rows)} of "
        f"{n_claims} rows replicate"
    )  # the replications first, then pilots, not run
    assert (
        md.index("## Replications")
        < md.index("## Pilots")
        < md.index("## Not run")
        < md.index("| id | paper |")
    )
    code, piped, _ = run(capsys, "ledger")
    assert (
        code == 0 and piped == md
    )  # into a pipe or a file (not a terminal) the default is Markdown
    monkeypatch.setenv("COLUMNS", "80")
    code, table, _ = run(capsys, "ledger", "--format", "table")
    widths = [len(line) for line in table.splitlines()]
    assert code == 0 and max(widths) <= 80 and f"{n_claims} empirical claims" in table
    assert (
        max(len(line) for line in md.splitlines()) > 80
    )  # planted: the Markdown lines overflow a terminal


def test_ledger_table_without_rich_falls_back_to_markdown(capsys, monkeypatch):
    for name in ("rich", "rich.console", "rich.table"):
        monkeypatch.setitem(sys.modules, name, None)
    code, out, err = run(capsys, "ledger", "--format", "table")
    assert (
        code == 0 and "## Replications" in out and "| id | paper |" in out and "dynkit[cli]" in err
    )


def test_to_pandas_on_tables(monkeypatch):
    """pandas is optional: a stand-in module receives the records; without pandas, the error
    names it."""
    received = []
    fake = types.SimpleNamespace(
        DataFrame=types.SimpleNamespace(from_records=lambda r: received.append(r) or r)
    )
    monkeypatch.setitem(sys.modules, "pandas", fake)
    ledger = dk.experiments.ledger()
    frame = ledger.to_pandas()
    assert (
        len(frame) == len(ledger.rows)
        and frame[0]["id"] == ledger.rows[0].claim.id
        and "metric" in frame[0]
    )
    claims = dk.theory.run_all(n_instances=2, claims=[next(iter(dk.theory.CLAIMS))])
    assert claims.to_pandas()[0]["claim"] == claims.rows[0].claim
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match="pip install pandas"):
        ledger.to_pandas()


def test_ledger_says_what_it_is_doing_and_quiet_silences_it(capsys):
    code, out, err = run(capsys, "ledger", "--format", "json")
    assert (
        code == 0
        and err.startswith("ledger: computing")
        and re.search(r"ledger: \d+ rows in [\d.]+ s", err)
    )
    assert json.loads(out)["rows"]  # the progress goes to stderr, never into the data
    code, _, err = run(capsys, "ledger", "--format", "json", "--quiet")
    assert code == 0 and err == ""
