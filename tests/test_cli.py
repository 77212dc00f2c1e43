"""End-to-end tests of the `dynkit` command on tiny settings.

`solve` and the steppers run for real; the other components come from other branches, so their
commands are checked against small fakes of the contract (tests/component_fakes.py) for the wiring
(arguments passed, exit codes, files written) and, with the component removed, for the one-line
"not installed" error.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

sys.path.insert(0, os.path.dirname(__file__))
import component_fakes as fakes  # noqa: E402

import dynkit as dk  # noqa: E402
from dynkit.cli import main  # noqa: E402

from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

DECAY = """
import numpy as np
def f(t, y):
    return -2.0 * y
y0 = np.array([1.0, 3.0])
t = np.linspace(0.0, 1.0, 5)
def problem():
    return {"f": f, "y0": [0.5], "t": [0.0, 2.0]}
not_a_problem = 3
"""


@pytest.fixture
def decay_file(tmp_path):
    path = tmp_path / "decay.py"
    path.write_text(DECAY)
    return path


@pytest.fixture
def fake(monkeypatch):
    return fakes.install(monkeypatch)


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    "command",
    [[], ["verify"], ["derive"], ["solve"], ["stiffness"], ["nfe-sweep"], ["train"], ["report"]],
)
def test_help_everywhere(capsys, command):
    code, out, _ = run(capsys, *command, "--help")
    assert code == 0
    assert out.startswith("usage: dynkit")
    assert "--quiet" in out and "--debug" in out


def test_solve_file_prints_stats_and_writes_json(capsys, decay_file, tmp_path):
    out_json = tmp_path / "sol.json"
    code, out, err = run(
        capsys,
        "solve",
        str(decay_file),
        "--rtol",
        "1e-9",
        "--atol",
        "1e-12",
        "--json",
        str(out_json),
    )
    assert code == 0, err
    reference = dk.solve(
        lambda t, y: -2.0 * y, np.array([1.0, 3.0]), np.linspace(0, 1, 5), rtol=1e-9, atol=1e-12
    )
    assert f"nfe        {reference.stats.nfe}" in out
    data = json.loads(out_json.read_text())
    assert data["stats"] == reference.stats.as_dict()
    assert data["config"]["method"] == "dopri5" and data["config"]["rtol"] == 1e-9
    # rtol 1e-9 on exp(-2 t): the end state is right to ~1e-8 relative (a loose factor 100 over
    # rtol).
    np.testing.assert_allclose(data["ys"][-1], np.exp(-2.0) * np.array([1.0, 3.0]), rtol=1e-7)
    assert len(data["ts"]) == 5 and "versions" in data


def test_solve_function_spec_and_fixed_step(capsys, decay_file):
    code, out, err = run(
        capsys, "solve", f"{decay_file}:problem", "--method", "rk4", "--step-size", "0.1"
    )
    assert code == 0, err
    assert "nfe        80" in out  # 20 steps of 4 evaluations on [0, 2]
    assert "steps      20 (20 accepted, 0 rejected)" in out


def test_solve_module_spec(capsys, tmp_path, monkeypatch):
    (tmp_path / "my_ode_mod.py").write_text(DECAY)
    monkeypatch.syspath_prepend(str(tmp_path))
    code, out, err = run(capsys, "solve", "my_ode_mod:problem", "--method", "bosh3")
    assert code == 0, err
    assert "method     bosh3" in out


@pytest.mark.parametrize(
    "args, message",
    [
        (["--method", "rk4"], "step_size is required"),
        (["--method", "nope"], "invalid choice: 'nope'"),
        (["--rtol", "abc"], "invalid float value"),
    ],
)
def test_solve_bad_options_one_line(capsys, decay_file, args, message):
    code, out, err = run(capsys, "solve", str(decay_file), *args)
    assert code == 2
    assert message in err and "Traceback" not in err


@pytest.mark.parametrize(
    "suffix, message",
    [
        (":not_a_problem", "must be (or return) a mapping with keys f, y0, t"),
        (":missing", "has no attribute 'missing'"),
    ],
)
def test_solve_bad_spec(capsys, decay_file, suffix, message):
    code, _, err = run(capsys, "solve", f"{decay_file}{suffix}")
    assert code == 2 and message in err
    assert len(err.strip().splitlines()) == 1


def test_solve_missing_names_and_files(capsys, tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def f(t, y):\n    return y\n")
    code, _, err = run(capsys, "solve", str(bad))
    assert code == 2 and "missing: y0, t" in err
    code, _, err = run(capsys, "solve", str(tmp_path / "nope.py"))
    assert code == 2 and "does not exist" in err


def test_debug_shows_the_exception(capsys, decay_file):
    with pytest.raises(ValueError, match="step_size"):
        main(["solve", str(decay_file), "--method", "rk4", "--debug"])


def test_console_entry_point_no_traceback(decay_file):
    # The real process, as a user runs it: a solver failure is one line and exit code 3 (2 is for
    # usage errors).
    env = dict(
        os.environ,
        PYTHONPATH=os.path.join(os.getcwd(), "src") + os.pathsep + os.environ.get("PYTHONPATH", ""),
    )
    proc = subprocess.run(
        [sys.executable, "-m", "dynkit.cli", "solve", str(decay_file), "--max-steps", "2"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 3
    assert proc.stderr.startswith("dynkit solve: error:") and "Traceback" not in proc.stderr


# ---- commands whose components live on other branches: wiring against the contract
# ----------------


def test_verify_wiring_and_exit_codes(capsys, fake, tmp_path):
    code, out, err = run(
        capsys, "verify", "--instances", "7", "--seed", "3", "--json", str(tmp_path / "v.json")
    )
    assert code == 1 and "fake_false" in err  # the fake's second claim does not hold
    assert fake[-1] == ("run_all", {"n_instances": 7, "seed": 3, "claims": None, "progress": True})
    assert "fake_true" in out and "n=7" in out
    data = json.loads((tmp_path / "v.json").read_text())
    assert data["all_hold"] is False and len(data["rows"]) == 2 and data["config"]["instances"] == 7
    code, out, _ = run(capsys, "verify", "fake_true", "--instances", "5")
    assert code == 0 and fake[-1][1]["claims"] == ["fake_true"]


def _row(claim, verdict, expected, error=None):
    return dk.theory.ClaimRow(
        claim,
        "P",
        "(1)",
        3,
        0 if verdict == "false as stated" else 3,
        0.5,
        1e-9,
        0.01,
        verdict=verdict,
        expected_verdict=expected,
        statement="text",
        error=error,
    )


@pytest.mark.parametrize(
    "rows, code",
    [
        (
            [_row("a", "holds", "holds"), _row("b", "false as stated", "false as stated")],
            0,
        ),  # recorded: no failure
        (
            [_row("a", "holds", "holds"), _row("b", "holds", "false as stated")],
            1,
        ),  # verdict changed: regression
        ([_row("a", "false as stated", "holds")], 1),  # a claim that held now fails
        ([_row("a", "undecided", "holds", error="RuntimeError: boom")], 1),  # a check errored
    ],
)
def test_verify_exit_status_is_about_regressions(capsys, monkeypatch, rows, code):
    monkeypatch.setattr(dk.theory, "run_all", lambda **kw: dk.theory.ClaimTable(rows, 3, 0))
    got, out, err = run(capsys, "verify", "--instances", "3")
    assert got == code, (out, err)
    assert "verdict" in out.splitlines()[0]  # the verdict column
    for verdict in {r.verdict for r in rows}:  # one summary line per verdict
        assert sum(line.split(":")[0].endswith(verdict) for line in out.splitlines()) == 1
    if code:
        assert ("errored" in err) or ("differ from the recorded" in err)


def test_verify_list_and_unknown_claim(capsys, fake):
    code, out, _ = run(capsys, "verify", "--list")
    assert code == 0 and "fake_true: FAKE paper, Prop. 1" in out
    code, _, err = run(capsys, "verify", "no_such_claim")
    assert code == 2 and "unknown claim(s) no_such_claim; known: fake_true, fake_false" in err


def test_missing_component_is_one_line(capsys, monkeypatch):
    fakes.uninstall(monkeypatch, "theory")
    code, _, err = run(capsys, "verify")
    assert code == 3
    assert (
        err.strip() == "dynkit verify: error: dynkit.theory.run_all is not installed in this build"
    )


def test_derive_list_render_and_failure(capsys, fake):
    code, out, _ = run(capsys, "derive")
    assert code == 0 and out.split() == [
        "fake_heavy_ball",
        "fake_failing",
    ]  # the fakes have no docstring
    code, out, _ = run(capsys, "derive", "fake_heavy_ball", "--latex")
    assert code == 0 and "\\frac{d^{2}}{d t^{2}} x{\\left(t \\right)}" in out
    code, out, err = run(capsys, "derive", "--all")
    assert code == 1 and "fake_failing" in err and "### FAKE heavy-ball limit" in out
    code, _, err = run(capsys, "derive", "nope")
    assert code == 2 and "unknown derivation(s) nope" in err


def test_stiffness_wiring(capsys, fake, decay_file, tmp_path):
    code, out, err = run(
        capsys,
        "stiffness",
        str(decay_file),
        "--method",
        "rkf45",
        "--rtol",
        "1e-5",
        "--json",
        str(tmp_path / "s.json"),
    )
    assert code == 0, err
    assert "FAKE stiffness" in out
    # the fake's report is complete: the verdict is settled by the first, 250-step attempt
    assert fake[-1] == (
        "stiffness_report",
        {"method": "rkf45", "rtol": 1e-5, "atol": 1e-9, "max_steps": 250},
    )
    assert json.loads((tmp_path / "s.json").read_text())["stiffness_ratio"] == 1.0


def test_nfe_sweep_wiring(capsys, fake, tmp_path):
    out_dir = tmp_path / "sweep"
    code, out, err = run(
        capsys,
        "nfe-sweep",
        "--models",
        "node,hbnode,ghbnode",
        "--tolerances",
        "1e-3,1e-4",
        "--n-batches",
        "2",
        "--out",
        str(out_dir),
        "--quiet",
    )
    assert code == 0, err
    call = dict(fake)["nfe_vs_tolerance"]
    assert call["models"] == ("node", "hbnode", "ghbnode") and call["tolerances"] == (1e-3, 1e-4)
    assert call["n_batches"] == 2 and call["quiet"] is True
    assert call["out"] is None  # the sweep writes nothing itself: each file below is written once
    assert sorted(p.name for p in out_dir.iterdir()) == ["nfe_sweep.json", "nfe_sweep.png"]
    data = json.loads((out_dir / "nfe_sweep.json").read_text())
    assert set(data["results"]) == {"node", "hbnode", "ghbnode"}
    assert (out_dir / "nfe_sweep.png").read_bytes()[:4] == b"\x89PNG"
    assert out.count("forward NFE") == 6 and err == ""
    assert call["solver"] == "dynkit"  # the sweep's own default
    code, _, err = run(
        capsys, "nfe-sweep", "--solver", "torchdiffeq", "--out", str(tmp_path / "td"), "--quiet"
    )
    assert code == 0 and dict(fake)["nfe_vs_tolerance"]["solver"] == "torchdiffeq", err
    code, _, err = run(capsys, "nfe-sweep", "--tolerances", "1e-3,abc")
    assert code == 2 and "expected comma-separated numbers" in err


def test_train_wiring(capsys, fake, tmp_path):
    code, out, err = run(
        capsys,
        "train",
        "--model",
        "hbnode",
        "--task",
        "digits",
        "--epochs",
        "2",
        "--out",
        str(tmp_path / "run"),
        "--resume",
        "--method",
        "rk4",
        "--tol",
        "1e-4",
    )
    assert code == 0, err
    call = dict(fake)["run_training"]
    assert call["model"] == "hbnode" and call["epochs"] == 2 and call["resume"] is True
    assert (
        call["method"] == "rk4" and call["tol"] == 1e-4 and call["solver"] is None
    )  # the task's own
    code, _, err = run(
        capsys, "train", "--model", "hbnode", "--task", "digits", "--solver", "torchdiffeq"
    )
    assert code == 0 and dict(fake)["run_training"]["solver"] == "torchdiffeq", err
    assert "final.test_acc           0.5\n" in out and "model                    hbnode\n" in out
    assert "history" not in out and "per_class" not in out  # scalars only
    code, _, err = run(capsys, "train", "--task", "digits")
    assert code == 2 and "--model" in err


def test_report_exit_codes(capsys, fake, monkeypatch, tmp_path, only_sections):
    # With the fakes, one claim and one derivation fail: the report is written and the exit code
    # says so. Only the two sections the exit codes are about are built (the others' real work
    # is tests/test_report.py's: three whole reports here took half a minute).
    only_sections("propositions", "derivations")
    code, out, err = run(capsys, "report", "--out", str(tmp_path / "r"), "--quick", "--quiet")
    assert code == 1 and "propositions (failed)" in err and "derivations (failed)" in err
    assert (tmp_path / "r" / "report.html").exists() and err.count("\n") == 1
    # A missing component is fine by default, an error under --strict.
    fakes.uninstall(monkeypatch, "theory")
    monkeypatch.setattr(fakes, "DERIVATIONS", {"fake_heavy_ball": fakes._fake_heavy_ball})
    monkeypatch.setattr(dk.symbolic, "DERIVATIONS", fakes.DERIVATIONS)
    code, out, err = run(capsys, "report", "--out", str(tmp_path / "r2"), "--quick")
    assert code == 0, err
    assert "[report] Claims of the papers (theory)" in err  # progress lines without --quiet
    assert "propositions       unavailable" in out
    code, _, err = run(
        capsys, "report", "--out", str(tmp_path / "r3"), "--quick", "--strict", "--quiet"
    )
    assert code == 1 and "propositions (unavailable)" in err


def test_cli_module_docstring_example_is_what_load_problem_accepts(tmp_path):
    # The docstring's example file must keep working.
    from dynkit import cli
    from dynkit.cli import load_problem

    example = cli.__doc__.split("Example file ``decay.py``::")[1].split("then ``dynkit solve")[0]
    path = tmp_path / "doc_decay.py"
    path.write_text(textwrap.dedent(example))
    problem = load_problem(str(path))
    assert problem["y0"].shape == (1,) and problem["t"].shape == (5,)


# ---- researcher habits: --version, defaults in --help, "-" for standard output, parameters, plots
# ------


def test_version(capsys):
    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.strip() == f"dynkit {dk.__version__}"


@pytest.mark.parametrize(
    "command", ["verify", "solve", "stiffness", "nfe-sweep", "train", "report"]
)
def test_help_shows_every_default(capsys, command):
    from dynkit.cli import build_parser

    parser = build_parser()
    sub = next(
        a for a in parser._actions if isinstance(a, __import__("argparse")._SubParsersAction)
    ).choices[command]
    _, out, _ = run(capsys, command, "--help")
    text = " ".join(out.split())
    for action in sub._actions:
        default = action.default
        if (
            not action.option_strings
            or default is None
            or default is False
            or default == []
            or action.help is None
            or default == __import__("argparse").SUPPRESS
        ):
            continue
        shown = ",".join(map(str, default)) if isinstance(default, (list, tuple)) else str(default)
        assert f"default: {shown})" in text or f"default {shown})" in text, (
            command,
            action.dest,
            shown,
        )


def test_verify_json_to_stdout_keeps_stdout_pure_json(capsys, fake):
    code, out, err = run(capsys, "verify", "--instances", "5", "--json", "-")
    assert code == 1  # the fake has a failing claim
    data = json.loads(out)  # nothing but the JSON on stdout
    assert [r["claim"] for r in data["rows"]] == ["fake_true", "fake_false"] and data[
        "command"
    ].startswith("dynkit")
    assert "fake_true" in err  # the human-readable table went to stderr


VDP = """
import numpy as np
mu = 1.0
def f(t, y):
    return np.array([y[1], mu * (1 - y[0] ** 2) * y[1] - y[0]])
y0 = np.array([2.0, 0.0])
t = np.array([0.0, 1.0])
def problem(mu=1.0, t_end=1.0):
    return {"f": lambda t, y: np.array([y[1], mu * (1 - y[0] ** 2) * y[1] - y[0]]), "y0": [2.0, 0.0],
            "t": [0.0, t_end]}
"""  # noqa: E501


def test_solve_params_overrides_and_plot(capsys, tmp_path):
    from scipy.integrate import solve_ivp

    path = tmp_path / "vdp.py"
    path.write_text(VDP)
    png = tmp_path / "vdp.png"
    for spec in (
        str(path),
        f"{path}:problem",
    ):  # a module global f reads, and a problem-function argument
        code, out, err = run(
            capsys,
            "solve",
            spec,
            "--param",
            "mu=5",
            "--t",
            "0,2",
            "--y0",
            "1,0.5",
            "--rtol",
            "1e-10",
            "--atol",
            "1e-12",
            "--json",
            "-",
            "--plot",
            str(png),
        )
        assert code == 0, err
        data = json.loads(out)
        # Independent reference: scipy's DOP853 on the same problem with mu = 5 from (1, 0.5) to t =
        # 2.
        ref = solve_ivp(
            lambda t, y: [y[1], 5 * (1 - y[0] ** 2) * y[1] - y[0]],
            (0, 2),
            [1.0, 0.5],
            method="DOP853",
            rtol=1e-12,
            atol=1e-12,
        ).y[:, -1]
        np.testing.assert_allclose(
            data["ys"][-1], ref, rtol=1e-7
        )  # both solvers at tight tolerances
        assert data["ts"] == [0.0, 2.0] and data["config"]["params"] == {"mu": 5}
        assert png.read_bytes()[:4] == b"\x89PNG"
    code, _, err = run(capsys, "solve", str(path), "--param", "nu=5")
    assert code == 2 and "has no global 'nu'" in err
    code, _, err = run(capsys, "solve", str(path), "--param", "5=mu")
    assert code == 2 and "expected NAME=VALUE" in err
    code, _, err = run(capsys, "solve", str(path), "--y0", "1,2,3")
    assert code == 2 and "--y0: expected 2 values" in err


def test_plot_to_stdout_is_a_png(capsysbinary, decay_file):
    code = main(["solve", str(decay_file), "--plot", "-"])
    out, err = capsysbinary.readouterr()
    assert code == 0 and out[:4] == b"\x89PNG" and b"nfe" in err


def test_stiffness_passes_max_steps(capsys, fake, decay_file):
    code, out, err = run(
        capsys, "stiffness", str(decay_file), "--max-steps", "50", "--method", "rkf45"
    )
    assert code == 0, err
    call = dict(fake)["stiffness_report"]
    assert call["method"] == "rkf45" and call["max_steps"] == 50


def test_train_offers_only_methods_the_models_can_use_and_says_when_it_resumes(
    capsys, fake, tmp_path
):
    import importlib

    torchdiffeq_methods = importlib.import_module("torchdiffeq._impl.odeint").SOLVERS
    from dynkit.cli import TRAIN_METHODS

    assert set(TRAIN_METHODS) == {m for m in dk.solvers.METHODS if m in torchdiffeq_methods}
    code, _, err = run(capsys, "train", "--model", "hbnode", "--task", "digits", "--method", "ark4")
    assert code == 2 and "invalid choice: 'ark4'" in err
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "checkpoint.pt").write_bytes(b"")
    code, _, err = run(
        capsys, "train", "--model", "hbnode", "--task", "digits", "--out", str(run_dir), "--resume"
    )
    assert code == 0 and f"resuming from {run_dir / 'checkpoint.pt'}" in err
    if not torch.cuda.is_available():  # the device reaching the loop: tests/test_devices.py
        code, _, err = run(
            capsys, "train", "--model", "hbnode", "--task", "digits", "--device", "cuda"
        )
        assert (
            code == 2
            and "--device must be a device this machine has (cpu), got 'cuda'" in err
            and "CUDA" in err
        )


def test_derive_lists_one_line_each_and_draws_math_on_a_terminal(capsys):
    """The real registry: each name with its one-line description; --text draws the equations (no
    LaTeX)."""
    code, out, _ = run(capsys, "derive")
    lines = out.strip().splitlines()
    assert code == 0 and len(lines) == len(dk.symbolic.DERIVATIONS)
    assert all(len(line.split(None, 1)) == 2 for line in lines), (
        "a derivation listed without its description"
    )
    code, out, _ = run(capsys, "derive", "heavy_ball_limit", "--text")
    assert code == 0 and "x[k+1] = β⋅(-x[k-1] + x[k]) - s⋅∇F(x[k]) + x[k]" in out
    assert "\\nabla" not in out and "$" not in out and "\\begin" not in out
    code, out, _ = run(
        capsys, "derive", "heavy_ball_limit"
    )  # capsys is no terminal: Markdown, as ledger
    assert code == 0 and out.startswith("### ")


def test_a_bad_flag_shows_the_commands_usage(capsys):
    code, _, err = run(capsys, "ledger", "--bogus")
    assert (
        code == 2
        and err.startswith("usage: dynkit ledger")
        and "unrecognized arguments: --bogus" in err
    )


README_EXAMPLE_COMMANDS = [
    line.split("#")[0].split()
    for line in (ROOT / "README.md").read_text().splitlines()
    if line.startswith("dynkit ") and "examples/" in line
]


@pytest.mark.parametrize("argv", README_EXAMPLE_COMMANDS, ids=lambda a: " ".join(a[1:4]))
def test_the_readmes_example_commands_run_on_the_shipped_problem(
    argv, tmp_path, monkeypatch, capsys
):
    """Every README line that runs the shipped examples/ problem succeeds as written (from the
    repository root)."""
    monkeypatch.chdir(ROOT)
    argv = [str(tmp_path / a) if a.endswith(".png") else a for a in argv[1:]]
    code, out, err = run(capsys, *argv)
    assert code == 0, err


def test_the_readme_runs_the_shipped_example():
    assert len(README_EXAMPLE_COMMANDS) >= 3 and (ROOT / "examples" / "vdp.py").is_file()
