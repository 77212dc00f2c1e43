"""One experiment, one folder: the catalogue (``dynkit.experiments.FAMILIES``) lists each family's
modules that register, and importing ``dynkit.experiments`` registers nothing until a registry or a
lookup is read."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import dynkit.experiments as E

ROOT = Path(E.__file__).parent
HELPERS = {"node.nfe_tolerance", "csaode.options", "momres.measurements", "momres.options"}
"""Family modules that register nothing and are imported by one that does (read off the sources:
``node_trained`` imports the NFE sweep, ``csaode_sensitivity`` and ``csaode_attention`` their
options, the two momres measurement scripts their shared parts, ``momres_cubic`` and
``momres_rings`` their shared options)."""


def _probe(code: str) -> dict:
    """Run ``code`` in a fresh interpreter (this one has imported every family) and read its
    JSON."""
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT.parents[1],
        timeout=600,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_importing_the_package_imports_no_family_reading_a_registry_imports_all():
    seen = _probe(
        "import json, sys\n"
        "import dynkit.experiments as E\n"
        "before = sorted(m for m in sys.modules if m.startswith('dynkit.experiments.'))\n"
        "n = len(E.EXPERIMENTS)\n"
        "after = sorted(m for m in sys.modules if m.startswith('dynkit.experiments.'))\n"
        "print(json.dumps({'before': before, 'after': after, 'n': n}))\n"
    )
    assert seen["before"] == []
    expected = {f"dynkit.experiments.{f}.{m}" for f in E.FAMILIES for m in E.FAMILIES[f]}
    assert expected <= set(seen["after"]) and seen["n"] == len(E.EXPERIMENTS)


def test_the_catalogue_names_every_family_folder():
    folders = {p.parent.name for p in ROOT.glob("*/__init__.py")} - {"judging"}
    assert set(E.FAMILIES) == folders


@pytest.mark.parametrize("family", E.FAMILIES)
def test_each_family_lists_its_modules(family):
    files = {p.stem for p in (ROOT / family).glob("*.py")} - {"__init__"}
    listed = set(E.FAMILIES[family])
    assert listed <= files, f"FAMILIES[{family!r}] names missing files {sorted(listed - files)}"
    unlisted = {f"{family}.{name}" for name in files - listed}
    assert unlisted == {h for h in HELPERS if h.startswith(f"{family}.")}


def test_every_experiment_and_comparison_belongs_to_a_family_module():
    for name, exp in E.EXPERIMENTS.items():
        module = exp.module or exp.run.__module__
        parts = module.split(".")
        assert parts[:2] == ["dynkit", "experiments"] and parts[2] in E.FAMILIES, (name, module)


def test_the_public_surface_is_the_declared_one():
    assert set(E.__all__) <= set(dir(E))
    for leaked in ("VERDICTS", "MODULES", "CLAIMS", "Claim", "add_claim"):
        assert not hasattr(E, leaked), leaked
    with pytest.raises(AttributeError, match="has no attribute 'VERDICTS'"):
        E.VERDICTS


@pytest.mark.parametrize("family", E.FAMILIES)
def test_a_family_s_init_holds_only_its_docstring(family):
    # so that a shard's code identity follows it and finds nothing to digest (code_closure)
    tree = ast.parse((ROOT / family / "__init__.py").read_text())
    assert len(tree.body) == 1 and ast.get_docstring(tree)


@pytest.mark.parametrize(
    "importer, line, broken",
    [
        (  # judging imports no family
            "judging/ledger.py",
            "from ..node import node_blowup  # planted\n",
            "dynkit.experiments.judging.ledger -> dynkit.experiments.node.node_blowup",
        ),
        (  # no family imports another
            "momres/comparisons.py",
            "from ..csaode import csaode_cv  # planted\n",
            "dynkit.experiments.momres.comparisons -> dynkit.experiments.csaode.csaode_cv",
        ),
        (  # the machinery imports neither
            "scripting.py",
            "from .judging import papers  # planted\n",
            "dynkit.experiments.scripting -> dynkit.experiments.judging.papers",
        ),
        (  # the recipes read the registry, never the reverse (a function-local import counts)
            "registry.py",
            "\n\ndef _planted():\n    from .recipes import paper_config  # planted\n\n"
            "    return paper_config\n",
            "dynkit.experiments.registry -> dynkit.experiments.recipes",
        ),
    ],
)
def test_the_sub_layer_contracts_catch_a_planted_import(tmp_path, importer, line, broken):
    import shutil

    repo = ROOT.parents[1]
    shutil.copytree(
        repo / "dynkit", tmp_path / "dynkit", ignore=shutil.ignore_patterns("__pycache__")
    )
    path = tmp_path / "dynkit" / "experiments" / importer
    path.write_text(path.read_text() + line)
    shutil.copy(repo.parent / "pyproject.toml", tmp_path / "pyproject.toml")
    lint = Path(sys.executable).parent / "lint-imports"
    bad = subprocess.run(
        [str(lint), "--config", str(tmp_path / "pyproject.toml"), "--no-cache"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
        timeout=600,
    )
    assert bad.returncode == 1 and broken in bad.stdout, bad.stdout[-2000:]  # the chain is named


def _wrong_command_lines(module: str, source: str) -> list[str]:
    """The literal module paths that ``source`` (the code of ``module``) passes to
    ``command_line(...)`` or ``run_script(...)`` (which builds the command line from it) and that
    are not ``module`` itself or cannot be imported."""
    import importlib.util

    wrong = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Call)
            and getattr(node.func, "id", getattr(node.func, "attr", None))
            in ("command_line", "run_script")
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            path = node.args[0].value
            try:
                found = importlib.util.find_spec(path) is not None
            except ModuleNotFoundError:
                found = False
            if path != module or not found:
                wrong.append(path)
    return wrong


def _experiment_modules() -> dict[str, str]:
    return {name: exp.module or exp.run.__module__ for name, exp in E.EXPERIMENTS.items()}


@pytest.mark.parametrize("name", sorted(_experiment_modules()))
def test_a_script_names_its_own_module_in_its_command_line(name):
    import importlib

    module = _experiment_modules()[name]
    source = Path(importlib.import_module(module).__file__).read_text()
    assert _wrong_command_lines(module, source) == []


@pytest.mark.parametrize(
    "planted",
    [
        "dynkit.experiments.momres_cubic",  # the path from before the family folders
        "dynkit.experiments.momres.momres_rings",  # importable, but another experiment's
    ],
)
def test_a_planted_command_line_path_is_caught(planted):
    module = "dynkit.experiments.momres.momres_cubic"
    source = Path(ROOT / "momres" / "momres_cubic.py").read_text()
    assert _wrong_command_lines(module, source) == []
    planted_source = source.replace(f'"{module}"', f'"{planted}"')
    assert planted_source != source
    assert _wrong_command_lines(module, planted_source) == [planted]
