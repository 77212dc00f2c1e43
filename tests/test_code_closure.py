"""A shard's code identity follows the code its run imports: the import closure read from the
syntax trees, each module digested without its comments, docstrings, formatting or place.

The small synthetic packages below are written out here, so each expected closure is read off the
sources by eye, not from the code under test; the scenario at the end plants the three changes of
the design review (a comment in a paper's module of ``theory/claims/``, a move inside
``experiments/``, a code change in ``tasks/silverbox.py``) in a copy of the real package.
"""

from __future__ import annotations

import ast
import re
import shutil
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

import dynkit.experiments as E
from dynkit.experiments import code_closure as C
from dynkit.experiments.registry import Experiment
from dynkit.experiments.runner import SHARD_FILE


def package(**files: str) -> dict[str, bytes]:
    """Sources of a synthetic ``dynkit``: ``tasks__silverbox="..."`` is ``tasks/silverbox.py``,
    ``tasks__init`` is ``tasks/__init__.py``."""

    def path(key: str) -> str:
        parts = ("__init__" if part == "init" else part for part in key.split("__"))
        return "/".join(parts) + ".py"

    return {path(key): textwrap.dedent(text).encode() for key, text in files.items()}


BASE = dict(
    init='"""dynkit."""\nfrom .solvers import solve\n',
    solvers__init="from .engine import solve\n",
    solvers__engine="def solve(f):\n    return f(0)\n",
    tasks__init="from .silverbox import drive\n",
    tasks__silverbox="AMPLITUDE = 0.1\n\ndef drive(t):\n    return AMPLITUDE * t\n",
    tasks__walker='def walk():\n    """Steps."""\n    return 1\n',
    theory__init="",
    theory__claims__init="from . import review\n\nCLAIMS = review.CLAIMS\n",
    theory__claims__review="CLAIMS = ()\n",
    experiments__init="from .registry import register\nfrom . import blowup, other\n",
    experiments__registry="def register(name):\n    return name\n",
    experiments__runner="from .. import io\n",
    experiments__scripting=(
        "from .registry import register\n\ndef setup():\n    return register('x')\n"
    ),
    experiments__blowup=(
        "from .scripting import setup\n\ndef run():\n"
        "    from ..tasks.silverbox import drive  # function-local\n"
        "    return drive(setup())\n"
    ),
    experiments__other="def run():\n    return 2\n",
    io="import json\n",
)


def closure_of(sources: dict[str, bytes], root: str) -> list[str]:
    return C.closure([root, *C.MACHINERY], C.read_modules(sources))


def test_the_closure_follows_relative_function_local_and_parent_package_imports():
    names = closure_of(package(**BASE), "dynkit.experiments.blowup")
    # blowup -> scripting -> registry; blowup -> (inside run) tasks.silverbox, after its package;
    # every module's packages above it; the runner -> io; never the registration index, theory or
    # `other`
    assert names == [
        "dynkit",
        "dynkit.experiments.blowup",
        "dynkit.experiments.registry",
        "dynkit.experiments.runner",
        "dynkit.experiments.scripting",
        "dynkit.io",
        "dynkit.solvers",
        "dynkit.solvers.engine",
        "dynkit.tasks",
        "dynkit.tasks.silverbox",
    ]


SUB = "dynkit.experiments.sub.helpers"
WALKER = "dynkit.tasks.walker"


@pytest.mark.parametrize(
    "form, reached",
    [
        ("from . import helpers\n", SUB),  # a submodule by from-import
        ("from .helpers import x\n", SUB),  # relative, one level, in a subfolder
        ("from ...tasks import walker\n", WALKER),  # three levels up from a subfolder
        ("import dynkit.tasks.walker as w\n", WALKER),
        ("import dynkit as dk\n\ndef f():\n    return dk.tasks.walker.walk()\n", WALKER),  # lazy
        ("from importlib import import_module\nm = import_module('dynkit.tasks.walker')\n", WALKER),
        (
            "import importlib\nm = importlib.import_module('..helpers', __name__)\n",
            "dynkit.experiments.helpers",
        ),
    ],
)
def test_each_form_of_import_reaches_its_module(form, reached):
    files = dict(
        experiments__sub__init="",
        experiments__sub__helpers="x = 1\n",
        experiments__helpers="y = 2\n",
    )
    sources = package(**BASE, **files, experiments__sub__exp=form)
    assert reached in closure_of(sources, "dynkit.experiments.sub.exp")
    plain = package(**BASE, **files, experiments__sub__exp="x = 1\n")
    assert reached not in closure_of(plain, "dynkit.experiments.sub.exp")  # the import reaches it


def test_an_import_by_a_computed_name_reaches_its_package_s_modules_a_library_s_does_not():
    loader = (
        "import importlib\nNAMES = ('silverbox',)\n\ndef load():\n"
        "    for n in NAMES:\n        importlib.import_module(f'.{n}', __name__)\n"
    )
    sources = package(
        **{**BASE, "tasks__init": loader}, experiments__exp="from ..tasks import load\n"
    )
    reached = set(closure_of(sources, "dynkit.experiments.exp"))
    assert {"dynkit.tasks.silverbox", "dynkit.tasks.walker"} <= reached
    library = "def version(name):\n    return __import__(name).__version__\n"
    sources = package(
        **{**BASE, "tasks__init": library}, experiments__exp="from ..tasks import version\n"
    )
    assert "dynkit.tasks.walker" not in closure_of(sources, "dynkit.experiments.exp")


LAZY_TASKS = '_LAZY = {"silverbox": ("drive",), "walker": ("walk",)}\n'


@pytest.mark.parametrize(
    "form",
    [
        "from ..tasks import walk\n",
        "from dynkit.tasks import walk as w\n",
        "import dynkit as dk\n\ndef f():\n    return dk.tasks.walk()\n",
        "from .. import tasks\n\ndef f():\n    return tasks.walk()\n",
        "from dynkit.tasks import walker\n",
    ],
)
def test_a_name_of_a_lazy_table_reaches_the_submodule_providing_it_and_no_other(form):
    sources = package(**{**BASE, "tasks__init": LAZY_TASKS}, experiments__exp=form)
    reached = set(closure_of(sources, "dynkit.experiments.exp"))
    assert {"dynkit.tasks", WALKER} <= reached
    assert "dynkit.tasks.silverbox" not in reached
    eager = package(**BASE, experiments__exp=form.replace("walk", "drive"))  # BASE imports eagerly
    assert "dynkit.tasks.silverbox" in closure_of(eager, "dynkit.experiments.exp")


def test_a_name_the_table_does_not_list_reaches_no_submodule():
    sources = package(
        **{**BASE, "tasks__init": LAZY_TASKS + "HERE = 1\n"},
        experiments__exp="from ..tasks import HERE\n",
    )
    reached = set(closure_of(sources, "dynkit.experiments.exp"))
    assert "dynkit.tasks" in reached
    assert not {WALKER, "dynkit.tasks.silverbox"} & reached


def test_a_lazy_table_that_is_not_a_literal_is_refused_with_its_module_named():
    sources = package(
        **{**BASE, "tasks__init": "_LAZY = dict(walker=('walk',))\n"},
        experiments__exp="from ..tasks import walk\n",
    )
    with pytest.raises(ValueError, match=r"dynkit\.tasks\._LAZY must be a literal dict"):
        closure_of(sources, "dynkit.experiments.exp")


FAMILY = dict(  # a family folder: its __init__ and one experiment
    experiments__fam__init='"""A family: its modules are listed in the catalogue."""\n',
    experiments__fam__exp="from ..scripting import setup\n\ndef run():\n    return setup()\n",
)


@pytest.mark.parametrize(
    "init, digested",
    [
        ('"""A family: its modules are listed in the catalogue."""\n', False),
        ("", False),
        ('"""A family."""\nMODULES = ("exp",)\n', True),  # a statement: code like any module
        ("from ..tasks.silverbox import AMPLITUDE\n", True),
    ],
)
def test_a_family_s_init_is_followed_and_digested_only_when_it_holds_a_statement(init, digested):
    sources = package(**{**BASE, **FAMILY, "experiments__fam__init": init})
    root = "dynkit.experiments.fam.exp"
    assert "dynkit.experiments.fam" in C.closure([root, *C.MACHINERY], C.read_modules(sources))
    assert ("dynkit.experiments.fam" in digests(sources, root)) is digested


def digests(sources: dict[str, bytes], root: str = "dynkit.experiments.blowup") -> dict:
    modules = C.read_modules(sources)
    return {
        n: [modules[n].code, modules[n].links]
        for n in C.closure([root, *C.MACHINERY], modules)
        if not modules[n].empty
    }


def same(a: dict, b: dict) -> bool:
    return C.same_code({"modules": a}, {"modules": b})


def edit_silverbox(sources: dict[str, bytes], edit) -> bytes:
    return edit(sources["tasks/silverbox.py"].decode()).encode()


@pytest.mark.parametrize(
    "edit",
    [
        lambda s: "# a comment\n" + s.replace("AMPLITUDE * t", "AMPLITUDE*t  # formatted"),
        lambda s: '"""A docstring."""\n' + s.replace("(t):\n", '(t):\n    """Drive."""\n'),
        lambda s: s.replace(
            "return AMPLITUDE * t\n",
            "return (\n    AMPLITUDE\n    * t\n)\n".replace("\n", "\n    "),
        ),
    ],
)
def test_comments_docstrings_and_formatting_are_not_code(edit):
    sources = package(**BASE)
    edited = {**sources, "tasks/silverbox.py": edit_silverbox(sources, edit)}
    assert edited != sources and same(digests(sources), digests(edited))


@pytest.mark.parametrize(
    "edit",
    [
        lambda s: s.replace("0.1", "0.2"),
        lambda s: s.replace("AMPLITUDE * t", "AMPLITUDE * t * t"),
        lambda s: s + "\ndef unused():\n    return 0\n",  # new code in an imported module: stale
    ],
)
def test_a_code_change_in_an_imported_module_is_named(edit):
    sources = package(**BASE)
    edited = {**sources, "tasks/silverbox.py": edit_silverbox(sources, edit)}
    before, after = digests(sources), digests(edited)
    assert not same(before, after)
    change = C.describe_change({"modules": before}, {"modules": after})
    assert change == "code changed in dynkit.tasks.silverbox"


def test_a_change_outside_the_closure_keeps_the_identity():
    sources = package(**BASE)
    for path in (
        "theory/claims/__init__.py",
        "theory/claims/review.py",
        "experiments/other.py",
        "tasks/walker.py",
        "experiments/__init__.py",
    ):
        edited = {**sources, path: sources[path] + b"\nX = 1\n"}
        assert digests(sources) == digests(edited), path


def moved(sources: dict[str, bytes]) -> dict[str, bytes]:
    """``experiments/scripting.py`` moved into ``experiments/helpers/``, its imports updated."""
    out = {k: v for k, v in sources.items() if k != "experiments/scripting.py"}
    out["experiments/helpers/__init__.py"] = b""
    scripting, blowup = sources["experiments/scripting.py"], sources["experiments/blowup.py"]
    out["experiments/helpers/scripting.py"] = scripting.replace(b"from .", b"from ..")
    out["experiments/blowup.py"] = blowup.replace(b".scripting", b".helpers.scripting")
    return out


def test_a_moved_module_is_the_same_code_under_another_name():
    sources = package(**BASE)
    before, after = digests(sources), digests(moved(sources))
    assert "dynkit.experiments.helpers.scripting" in after
    assert "dynkit.experiments.scripting" not in after
    assert same(before, after)
    assert before["dynkit.experiments.blowup"] == after["dynkit.experiments.blowup"]
    # what the import normalisation absorbs: the importer's own syntax tree differs after the move
    trees = [ast.dump(ast.parse(s["experiments/blowup.py"])) for s in (sources, moved(sources))]
    assert trees[0] != trees[1]


def test_importing_the_same_names_from_another_module_is_a_change():
    user = "from ..tasks.{0} import drive\nfrom ..tasks.{1} import drive as other\n"
    mirror = "AMPLITUDE = 0.1\n\ndef drive(t):\n    return -AMPLITUDE * t\n"
    sources = package(
        **BASE, tasks__mirror=mirror, experiments__user=user.format("silverbox", "mirror")
    )
    switched = {**sources, "experiments/user.py": user.format("mirror", "silverbox").encode()}
    before = digests(sources, "dynkit.experiments.user")
    after = digests(switched, "dynkit.experiments.user")
    assert set(before) == set(after)  # the same modules: only which one supplies `drive` differs
    assert not same(before, after)
    change = C.describe_change({"modules": before}, {"modules": after})
    assert change == "imports changed in dynkit.experiments.user"


# ---------------------------------------------------------------------------------------------
# the design review's three planted changes, in a copy of the real package


@dataclass(frozen=True)
class Planted:
    size: int = 1


RUN = "\ndef run(config, *, seed, out, device):\n"
PLANTED = {  # two tiny experiments inside the copy: one reaches silverbox, one does not
    "planted_silverbox": (
        "from .scripting import setup  # noqa: F401\n"
        + RUN
        + "    from ..tasks.silverbox import silverbox  # noqa: F401\n"
        + "    return {'metrics': {'value': float(seed)}}\n"
    ),
    "planted_plain": (
        "from ..solvers import tableaus  # noqa: F401\n"
        + RUN
        + "    return {'metrics': {'value': float(seed)}}\n"
    ),
}
REAL = tuple(sorted(E.EXPERIMENTS))  # every registered experiment
WITH_SILVERBOX = {
    "node_blowup",  # imports tasks.silverbox
    "node_adjoint_norm",  # imports tasks.silverbox
    *(
        f"ode_rnn_{task}{engine}"
        for task in ("walker2d", "plane_vibration", "silverbox")
        for engine in ("", "_torchdiffeq")
    ),  # the hybrids: tasks.time_series imports silverbox
}
"""The experiments whose closure holds ``tasks/silverbox.py``, read off the sources. The packages
``dynkit``, ``dynkit.models`` and ``dynkit.tasks`` re-export lazily, so importing a name from one
of them runs only the submodule that provides it."""


@pytest.fixture
def copy(tmp_path, monkeypatch):
    root = tmp_path / "dynkit"
    shutil.copytree(C.PACKAGE_ROOT, root, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(C, "PACKAGE_ROOT", root)
    for name, text in PLANTED.items():
        path = root / "experiments" / f"{name}.py"
        path.write_text(text)
        module = type(sys)(name)
        module.__file__ = str(path)
        runnable = text.replace("from ..", "from dynkit.")
        runnable = runnable.replace("from .", "from dynkit.experiments.")
        exec(compile(runnable, str(path), "exec"), module.__dict__)
        monkeypatch.setitem(sys.modules, name, module)
        scales = dict.fromkeys(("smoke", "cpu", "full"), Planted())
        monkeypatch.setitem(E.EXPERIMENTS, name, Experiment(name, module.run, scales))
    return root


def move_scripting(root: Path) -> None:
    """Move ``experiments/scripting.py`` into ``experiments/helpers/``, its imports updated."""
    experiments = root / "experiments"
    (experiments / "helpers").mkdir()
    (experiments / "helpers" / "__init__.py").write_text("")
    text = (experiments / "scripting.py").read_text()
    moved_text = re.sub(r"^(\s*from )\.", r"\1..", text, flags=re.M)  # one level deeper
    (experiments / "helpers" / "scripting.py").write_text(moved_text)
    (experiments / "scripting.py").unlink()
    for path in experiments.rglob("*.py"):  # the importers, in the families' folders too
        source = path.read_text()
        moved_imports = re.sub(
            r"from (\.+)scripting import", r"from \1helpers.scripting import", source
        )
        if moved_imports != source:
            path.write_text(moved_imports)


def run_all(out: Path) -> dict[str, list[str]]:
    notices = {}
    for name in PLANTED:
        said: list[str] = []
        E.run(name, scale="smoke", seeds=(0,), out=out / name, notice=said.append)
        notices[name] = said
    return notices


def test_a_comment_and_a_move_reuse_shards_a_silverbox_edit_recomputes_importers(copy, tmp_path):
    identity = {name: E.EXPERIMENTS[name].code() for name in (*REAL, *PLANTED)}
    run_all(tmp_path)
    # (a) a comment in a paper's module of the theory claims
    claims = copy / "theory" / "claims" / "review.py"
    claims.write_text(claims.read_text() + "\n# a comment no run can see\n")
    assert run_all(tmp_path) == {name: [] for name in PLANTED}
    assert all(C.same_code(identity[n], E.EXPERIMENTS[n].code()) for n in identity)
    # (b) a module moved into a subfolder of experiments/, its importers updated
    move_scripting(copy)
    assert not (copy / "experiments" / "scripting.py").exists()
    assert run_all(tmp_path) == {name: [] for name in PLANTED}
    for name in identity:
        now = E.EXPERIMENTS[name].code()
        assert C.same_code(identity[name], now), (name, C.describe_change(identity[name], now))
    blowup = E.EXPERIMENTS["node_blowup"].code()["modules"]
    assert "dynkit.experiments.helpers.scripting" in blowup
    # its family's __init__ (a docstring) runs before it and computes nothing: followed, not
    # digested
    assert (
        "dynkit.experiments.node" not in blowup and "dynkit.experiments.node.node_blowup" in blowup
    )
    # (c) a code change in tasks/silverbox.py: exactly the shards whose closure holds it
    silverbox = copy / "tasks" / "silverbox.py"
    silverbox.write_text(silverbox.read_text() + "\nDRIVE_AMPLITUDE = 0.2\n")
    notices = run_all(tmp_path)
    assert notices["planted_plain"] == []
    (notice,) = notices["planted_silverbox"]
    assert str(tmp_path / "planted_silverbox" / "shards" / "seed0" / SHARD_FILE) in notice
    assert "code changed in dynkit.tasks.silverbox" in notice
    stale = {n for n in identity if not C.same_code(identity[n], E.EXPERIMENTS[n].code())}
    importers = {n for n in identity if "dynkit.tasks.silverbox" in identity[n]["modules"]}
    assert stale == importers == {*WITH_SILVERBOX, "planted_silverbox"}
