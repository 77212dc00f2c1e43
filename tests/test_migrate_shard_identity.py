"""The one-time migration re-stamps a stored shard only where git proves its code equals today's.

A throw-away git repository holds a copy of the package at three commits: A, B (a code change in
``tasks/silverbox.py``) and C (only a comment in ``theory/claims/review.py`` and a docstring in
silverbox); C is "today". Each planted shard's whole-file identity is computed from the files on
disk at its commit, by the old registry's definition written out here (independent of the script's
reading of git blobs).
"""

from __future__ import annotations

import ast
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import analysis.migrate_shard_identity as M
import dynkit
from dynkit.experiments import code_closure as C
from dynkit.experiments.runner import content_hash


def old_identity_on_disk(root: Path, module: str) -> tuple[str, str]:
    """The old ``registry.code_identity``'s (source_sha256, package_sha256), read from files."""

    def sha(path: Path) -> str:
        return hashlib.sha256(path.read_bytes()).hexdigest()

    experiments = root / "experiments"
    files = {
        p
        for p in root.rglob("*.py")
        if p.relative_to(root).parts[0] not in ("cli.py", "report", "experiments")
    }
    todo, seen = [experiments / "registry.py", experiments / "runner.py"], set()
    source = root.joinpath(*module.split(".")[1:]).with_suffix(".py")
    todo.append(source)
    while todo:
        path = todo.pop()
        if path in seen or not path.is_file():
            continue
        seen.add(path)
        for node in ast.walk(ast.parse(path.read_bytes())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level in (0, 1, 2):
                base = {0: node.module or "", 1: "dynkit.experiments", 2: "dynkit"}[node.level]
                if node.level and node.module:
                    base += "." + node.module
                names = [base] + [f"{base}.{a.name}" for a in node.names]
            for name in names:
                parts = name.split(".")
                if (
                    parts[:2] == ["dynkit", "experiments"]
                    and len(parts) >= 3
                    and (experiments / f"{parts[2]}.py").is_file()
                ):
                    todo.append(experiments / f"{parts[2]}.py")
    digest = hashlib.sha256()
    for path in sorted(files | seen):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + sha(path).encode() + b"\n")
    return sha(source), digest.hexdigest()


def shard(name: str, code: dict, **libraries) -> dict:
    """A stored shard of ``name`` with the identity ``code`` (``libraries`` override its
    versions), its content hash intact."""
    body = {
        "experiment": name,
        "scale": "cpu",
        "seed": 0,
        "point": {},
        "config": {},
        "code": {**code, "libraries": {**code["libraries"], **libraries}},
        "device": "cpu",
        "seconds": 1.0,
        "metrics": {"x": 1.0},
        "result": {},
        "versions": {"python": sys.version.split()[0]},
    }
    return {**body, "sha256": content_hash(body)}


def record(name: str, module: str, root: Path, **libraries) -> dict:
    source, package = old_identity_on_disk(root, module)
    code = {
        "dynkit": dynkit.__version__,
        "module": module,
        "source_sha256": source,
        "package_sha256": package,
        "libraries": C.library_versions(),
    }
    return shard(name, code, **libraries)


def commit(repo: Path, message: str) -> None:
    env = ["-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", *env, "commit", "-qm", message], cwd=repo, check=True)


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    repo = tmp_path_factory.mktemp("repo")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    root = repo / "dynkit"
    shutil.copytree(C.PACKAGE_ROOT, root, ignore=shutil.ignore_patterns("__pycache__"))
    commit(repo, "A")
    shards = {
        "node_blowup@A": record("node_blowup", "dynkit.experiments.node.node_blowup", root),
        "attention@A": record(
            "momseq_attention_scaling", "dynkit.experiments.momseq.momseq_attention_scaling", root
        ),
    }
    silverbox = root / "tasks" / "silverbox.py"
    silverbox.write_text(silverbox.read_text() + "\nDRIVE_AMPLITUDE = 0.2\n")
    commit(repo, "B: code in silverbox")
    shards["node_blowup@B"] = record("node_blowup", "dynkit.experiments.node.node_blowup", root)
    shards["node_blowup@B, other torch"] = record(
        "node_blowup", "dynkit.experiments.node.node_blowup", root, torch="1.0.0"
    )
    forged = record("node_blowup", "dynkit.experiments.node.node_blowup", root)
    forged["code"]["package_sha256"] = "0" * 64
    forged["sha256"] = content_hash(forged)
    shards["node_blowup, no such tree"] = forged
    claims = root / "theory" / "claims" / "review.py"
    claims.write_text(claims.read_text() + "\n# a comment\n")
    text = silverbox.read_text()
    assert text.startswith('"""Silverbox')  # its module docstring, reworded
    silverbox.write_text('"""The Silverbox' + text[len('"""Silverbox') :])
    commit(repo, "C: a comment and a docstring")
    results = repo / "results"
    for case, body in shards.items():
        path = results / case.replace(" ", "_").replace(",", "") / "shards" / "seed0" / "shard.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(body))
    return repo, root, results


@pytest.fixture
def today(history, monkeypatch):
    repo, root, results = history
    monkeypatch.setattr(M, "REPO", repo)
    monkeypatch.setattr(C, "PACKAGE_ROOT", root)
    return results


def test_the_old_identity_is_reproduced_from_git_blobs(today):
    root = C.PACKAGE_ROOT
    files = M.tree_files("HEAD")
    for module in ("dynkit.experiments.node.node_blowup", "dynkit.experiments.momres.momres_cubic"):
        assert M.whole_file_identity(files, module) == old_identity_on_disk(root, module)


def test_only_shards_whose_code_equals_today_s_are_re_stamped(today):
    before = {p: p.read_bytes() for p in today.glob("*/shards/*/shard.json")}
    table = M.migrate(today, write=True)
    assert table["node_blowup@B"] == {"migrated": 1}  # C changed a comment and a docstring only
    assert table["attention@A"] == {"migrated": 1}  # silverbox is not in its closure
    (why,) = table["node_blowup@A"]
    assert why.startswith("computed at") and "code changed in dynkit.tasks.silverbox" in why
    assert table["node_blowup@B_other_torch"] == {"other library versions": 1}
    assert table["node_blowup_no_such_tree"] == {"no commit has its code": 1}
    for path, data in before.items():
        stamped, stored = json.loads(path.read_text()), json.loads(data)
        if table[path.parents[2].name] == {"migrated": 1}:
            assert stamped["code"] == C.code_identity(stored["code"]["module"])  # today's
            assert stamped["sha256"] == content_hash(stamped)
            rest = [
                {k: v for k, v in r.items() if k not in ("code", "sha256")}
                for r in (stamped, stored)
            ]
            assert rest[0] == rest[1]  # nothing else changed
        else:
            assert path.read_bytes() == data  # left as it was: stale


# ---------------------------------------------------------------------------------------------
# --since: per-module identities taken before the lazy re-exports narrowed every closure

RINGS = "dynkit.experiments.momres.momres_rings"
PARENT_ONLY = "\nPARENT_ONLY = 1\n"  # the parent's models/__init__ differs from today's


@pytest.fixture
def since(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    root = repo / "dynkit"
    shutil.copytree(C.PACKAGE_ROOT, root, ignore=shutil.ignore_patterns("__pycache__"))
    models = root / "models" / "__init__.py"
    today_text = models.read_text()
    models.write_text(today_text + PARENT_ONLY)
    commit(repo, "P")
    parent = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.strip()
    parent_models = C.read_modules(C.read_package(root))["dynkit.models"]
    models.write_text(today_text)
    commit(repo, "today")
    monkeypatch.setattr(M, "REPO", repo)
    monkeypatch.setattr(C, "PACKAGE_ROOT", root)
    now = C.code_identity(RINGS)
    modules = now["modules"]
    assert "dynkit.models" in modules and "dynkit.models.momentum_resnet" in modules

    def stored(**changes) -> dict:
        return {**now, "modules": {**modules, **changes}}

    eager = {"dynkit.solvers.bdf": ["a" * 32, "b" * 32]}  # what the eager re-exports imported
    with_parent = {"dynkit.models": [parent_models.code, parent_models.links]}
    cases = {
        "today": shard("momres_rings_tied", now),
        "eager": shard("momres_rings_tied", stored(**eager, **with_parent)),
        "eager, today's models": shard("momres_rings_tied", stored(**eager)),
        "edited": shard(
            "momres_rings_tied",
            stored(**eager, **with_parent, **{"dynkit.models.momentum_resnet": ["c" * 32] * 2}),
        ),
        "other torch": shard("momres_rings_tied", stored(**eager, **with_parent), torch="1.0.0"),
        "unregistered": shard("no_such_experiment", stored(**eager, **with_parent)),
    }
    broken = shard("momres_rings_tied", stored(**eager, **with_parent))
    broken["metrics"] = {"x": 2.0}
    cases["broken"] = broken
    results = tmp_path / "results"
    for case, body in cases.items():
        path = results / case.replace(" ", "_").replace(",", "") / "shards" / "seed0" / "shard.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(body))
    return results, parent, now


def test_since_re_stamps_a_shard_whose_run_executed_today_s_code_and_more(since):
    results, parent, now = since
    assert M.LAYOUT_EDITS.keys() >= {"dynkit", "dynkit.models", "dynkit.tasks"}
    before = {p: p.read_bytes() for p in results.glob("*/shards/*/shard.json")}
    table = M.migrate_since(results, parent, write=True)
    assert table["today"] == {"already today's": 1}
    assert table["eager"] == {"migrated": 1}  # extra modules and the parent's lazified package
    # a lazified package is held to the parent's version: today's is not what the stored run ran
    assert table["eager_today's_models"] == {"code changed in dynkit.models": 1}
    assert table["edited"] == {"code changed in dynkit.models.momentum_resnet": 1}
    assert table["other_torch"] == {"other library versions": 1}
    assert table["unregistered"] == {"experiment no longer registered": 1}
    assert table["broken"] == {"content hash broken": 1}
    for path, data in before.items():
        stamped, stored = json.loads(path.read_text()), json.loads(data)
        if table[path.parents[2].name] == {"migrated": 1}:
            assert stamped["code"] == now and stamped["sha256"] == content_hash(stamped)
            rest = [
                {k: v for k, v in r.items() if k not in ("code", "sha256")}
                for r in (stamped, stored)
            ]
            assert rest[0] == rest[1]
        else:
            assert path.read_bytes() == data
