"""Small doors: each bad input is a clear error naming the argument, before any work, and nothing
written over an input; dynkit's own temporaries are recognised exactly."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import dynkit as dk
from dynkit.cli import main
from dynkit.experiments import recipes


# ---- remove_orphan_temporaries
# ---------------------------------------------------------------------------------


def test_only_dynkits_own_temporaries_are_removed(tmp_path):
    """Was: any ``.*.tmp`` with three dots went, a user's ``.my.notes.tmp`` among them."""
    users = [
        ".my.notes.tmp",
        ".a.b.c.tmp",
        ".results.json.k3x9q2zz.tmp",
        ".x.dynkit-short.tmp",
        "dynkit-.tmp",
    ]
    for name in users:
        (tmp_path / name).write_text("the user's")
    written = dk.io.atomic_write(tmp_path / "results.json", lambda fh: fh.write("{}"))
    orphan = tmp_path / ".results.json.dynkit-k3x9q2zz.tmp"  # as atomic_write names its temporary
    orphan.write_text('{"half')
    link = tmp_path / ".other.json.dynkit-abcdefgh.tmp"
    link.symlink_to(written)  # a link named like ours is not a temporary we wrote: left alone
    assert dk.io.remove_orphan_temporaries(tmp_path) == [orphan]
    assert (
        all((tmp_path / name).read_text() == "the user's" for name in users) and link.is_symlink()
    )


def test_atomic_write_and_the_writability_probe_name_their_temporaries_so(tmp_path, monkeypatch):
    import tempfile

    made = []
    real = tempfile.mkstemp

    def spy(*args, **kwargs):
        fd, name = real(*args, **kwargs)
        made.append(Path(name).name)
        return fd, name

    monkeypatch.setattr(tempfile, "mkstemp", spy)
    dk.io.atomic_write(tmp_path / "a.json", lambda fh: fh.write("{}"))
    dk.io.check_writable_dir(tmp_path / "sub", "out")
    assert len(made) == 2 and all(dk.io.is_temporary(name) for name in made), made


# ---- dynkit solve: no output over an input
# ---------------------------------------------------------------------

VICTIM = (
    "import numpy as np\ndef f(t, y):\n    return -y\ny0 = np.array([1.0])\nt = np.linspace(0.0, "
    "1.0, 3)\n"
)


@pytest.mark.parametrize("how", ["same name", "hard link", "symbolic link"])
@pytest.mark.parametrize("option", ["--json", "--plot"])
def test_solve_refuses_to_write_over_its_input_module(tmp_path, capsys, how, option):
    """Was: ``dynkit solve victim.py --json victim.py`` replaced the module with its own result."""
    victim = tmp_path / "victim.py"
    victim.write_text(VICTIM)
    target = victim
    if how == "hard link":
        target = tmp_path / "other_name.json"
        os.link(victim, target)
    elif how == "symbolic link":
        target = tmp_path / "pointer.json"
        target.symlink_to(victim)
    code = main(
        [
            "solve",
            f"{victim}:f" if how == "same name" and option == "--plot" else str(victim),
            option,
            str(target),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and option in err and victim.read_text() == VICTIM, err
    assert (
        "must not be a file the command reads" in err or "symbolic link" in err
    )  # a link: refused as an output


def test_solve_refuses_one_file_for_both_outputs(tmp_path, capsys):
    victim = tmp_path / "victim.py"
    victim.write_text(VICTIM)
    out = tmp_path / "out"
    code = main(["solve", str(victim), "--json", str(out), "--plot", str(out)])
    assert code == 2 and "--plot must be another file than --json" in capsys.readouterr().err
    assert not out.exists()


# ---- dynkit run: the folder, --plan without --planned
# ---------------------------------------------------------

RUN = ["run", "momseq_attention_scaling", "--scale", "smoke", "--seeds", "0"]


def test_run_refuses_the_filesystem_root(capsys):
    """Was: ``--out /`` wrote /results.json."""
    before = os.path.exists("/results.json")
    code = main([*RUN, "--out", "/"])
    assert code == 2 and "root of a filesystem" in capsys.readouterr().err
    assert os.path.exists("/results.json") == before


def test_run_refuses_a_folder_of_other_files_and_accepts_its_own(tmp_path, capsys):
    foreign = tmp_path / "project"
    foreign.mkdir()
    (foreign / "results.csv").write_text("the user's")
    code = main([*RUN, "--out", str(foreign)])
    assert code == 2 and "--out must be a new or empty folder" in capsys.readouterr().err
    assert sorted(p.name for p in foreign.iterdir()) == ["results.csv"]
    with pytest.raises(ValueError, match="out must be a new or empty folder"):
        dk.experiments.run("momseq_attention_scaling", scale="smoke", seeds=(0,), out=foreign)
    ours = tmp_path / "ours"
    assert main([*RUN, "--out", str(ours), "--quiet"]) == 0  # new: made and filled
    assert main([*RUN, "--out", str(ours), "--quiet"]) == 0  # its own: reused


def test_run_plan_without_planned_is_a_usage_error(tmp_path, capsys):
    """Was: the plan was silently ignored and the --seeds ran."""
    out = tmp_path / "out"
    code = main([*RUN, "--plan", str(tmp_path / "plan.json"), "--out", str(out)])
    assert code == 2 and "--plan" in capsys.readouterr().err and not out.exists()


# ---- solve_ensemble: a wrong f, threads
# ----------------------------------------------------------------------

Y0 = np.array([[1.0, 0.0], [0.5, 0.0]])


@pytest.mark.parametrize(
    "f, error, says",
    [
        (lambda t, y, p: -y, TypeError, "callable as f(t, y)"),
        (lambda t, y: np.zeros(3), ValueError, "shape (3,)"),
        (lambda t, y: None, ValueError, "got NoneType None"),
        (lambda t, y: [-y[0], -y[1]], ValueError, "got list"),
        (lambda t, y: -y[:, None], ValueError, "shape (2, 1)"),
        (lambda t, y: np.array([y[0], y[5]]), TypeError, "IndexError"),
    ],
    ids=["arity", "shape", "None", "list", "2-d", "index"],
)
def test_solve_ensemble_raises_for_a_wrong_f_before_the_loop(f, error, says):
    """Was (compile=False): every trajectory marked failed, "2 failed", no error."""
    with pytest.raises(error, match="^f must") as info:
        dk.solve_ensemble(f, Y0, [0.0, 1.0], compile=False)
    assert says in str(info.value)


def test_solve_ensemble_keeps_a_trajectorys_own_failure_per_trajectory():
    def f(t, y):  # fine at the start; fails once y[0] passes 0.9, which only trajectory 0 does
        if y[0] > 0.9 and t > 0.1:
            raise ArithmeticError("planted")
        return np.array([y[1], -y[0]])

    ens = dk.solve_ensemble(f, np.array([[1.0, 0.0], [0.5, 0.0]]), [0.0, 0.5], compile=False)
    assert list(ens.success) == [False, True]


def test_solve_ensemble_refuses_more_threads_than_cores():
    cores = os.cpu_count() or 1
    with pytest.raises(
        ValueError, match=rf"threads must be at most the machine's {cores} cores.*got 10000"
    ):
        dk.solve_ensemble(lambda t, y: -y, Y0, [0.0, 1.0], compile=False, threads=10000)


# ---- recipes
# --------------------------------------------------------------------------------------------------


def test_setup_table_names_the_experiments_for_a_bad_name():
    """Was: [] for any name; then [] when it was a process's first use of the registry (the
    public door now loads the families first, as ``get`` does)."""
    code = (
        "import dynkit.experiments as E\n"
        "try:\n"
        "    E.setup_table('nosuch')\n"
        "except ValueError as exc:\n"
        "    print(exc)\n"
    )
    fresh = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300
    )
    assert re.search(r"experiment must be one of \[.*'node_trained'.*got 'nosuch'", fresh.stdout), (
        fresh.stdout + fresh.stderr
    )
    with pytest.raises(TypeError, match="name must be an experiment's name"):
        recipes.setup_table(None)
    assert dk.experiments.setup_table("node_trained")  # a registered one with a recipe


def test_paper_config_of_none_is_a_clear_type_error():
    """Was: AttributeError: 'NoneType' object has no attribute 'name'."""
    with pytest.raises(
        TypeError, match="experiment must be a registered Experiment.*got NoneType None"
    ):
        recipes.paper_config(None)
