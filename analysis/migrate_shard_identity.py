"""Re-stamp stored shards with the per-module code identity, once, where git proves it unchanged.

    PYTHONPATH=$PWD python -m analysis.migrate_shard_identity [--write] [RESULTS_FOLDER]
    PYTHONPATH=$PWD python -m analysis.migrate_shard_identity --since PARENT [--write]
    PYTHONPATH=$PWD python -m analysis.migrate_shard_identity --verify node_blowup:5 [--verify ...]

Shards recorded before :mod:`dynkit.experiments.code_closure` carry the whole-file identity: a
SHA-256 of the experiment module's bytes (``source_sha256``) and one over the paths and bytes of
every package file below the experiments layer and the experiments modules it imports
(``package_sha256``). A shard is re-stamped only when all of this holds:

1. its content hash is intact; its dynkit, Python (minor), numpy, scipy and torch are today's;
2. a commit of this repository has a ``dynkit/`` tree whose whole-file identity, computed here as
   the old ``registry.code_identity`` did, equals the stored one: that tree *is* the code the shard
   was computed with (up to a SHA-256 collision);
3. the per-module identity of that tree equals today's
   (:func:`~dynkit.experiments.code_closure.same_code`: the same module digests, whatever moved).

Then ``code`` becomes today's identity and the content hash is recomputed; nothing else in the
record changes. Every other shard is left as it is (stale: a rerun recomputes it). Without
``--write`` it only counts. Printed per result: how many were re-stamped, and why not the others.

``--since PARENT`` re-stamps shards whose per-module identity was taken by the closure rule before
the lazy re-exports (the commit after ``PARENT``): ``dynkit``, ``dynkit.models``, ``dynkit.tasks``
imported every submodule eagerly, so every closure held all of ``solvers/`` and most of ``models/``
and ``tasks/``, and an edit of a solver made every shard stale. A shard is re-stamped only when

1. its content hash is intact and its versions are today's (as above);
2. every module of today's (narrower) closure is in the stored identity with today's ``code``
   digest: the shard was computed by exactly the code that today's run executes;
3. except the modules of :data:`LAYOUT_EDITS`, which that change edited on purpose without changing
   what they compute (re-exports made lazy, constants moved): each is stored with ``PARENT``'s
   version of it, or is new.

Modules the stored run imported beyond today's closure (the eager re-exports) are not run today;
they defined functions at import and computed nothing of the shard. ``--verify`` samples check it.

``--verify RESULT:SEED`` recomputes that stored shard (every config point of the seed) with today's
runner in a temporary folder and prints each metric beside the stored one with their relative
difference: evidence of what the stored numbers stand for, whatever their identity says.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import math
import subprocess
import sys
import tempfile
from collections import Counter
from functools import lru_cache
from pathlib import Path, PurePosixPath

from dynkit import __version__
from dynkit.experiments import code_closure
from dynkit.experiments.runner import content_hash
from dynkit.io import read_regular_bytes, write_json

REPO = Path(".")
"""The git repository whose history is searched (its ``dynkit/`` folder)."""
FIRST = "4bea921"
"""The commit that introduced ``package_sha256`` (where it is missing, a shallow clone: all)."""
ABOVE_EXPERIMENTS = ("cli.py", "report")
MACHINERY = ("registry.py", "runner.py")


def git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], check=True, capture_output=True, text=True, cwd=REPO
    ).stdout


PACKAGE_PATHS = ("dynkit", "src/dynkit")
"""Where the package stood in the tree, before and since the src layout."""


@lru_cache(maxsize=None)
def blob(sha: str) -> bytes:
    return subprocess.run(
        ["git", "cat-file", "blob", sha], check=True, capture_output=True, cwd=REPO
    ).stdout


@lru_cache(maxsize=None)
def blob_sha256(sha: str) -> str:
    return hashlib.sha256(blob(sha)).hexdigest()


def tree_files(commit: str) -> dict[str, str]:
    """``{path below the package: blob id}`` of the ``.py`` files of ``commit`` (the package at
    ``dynkit/`` before the src layout, at ``src/dynkit/`` since)."""
    files = {}
    for line in git("ls-tree", "-r", commit, "--", *PACKAGE_PATHS).splitlines():
        meta, path = line.split("\t", 1)
        kind, sha = meta.split()[1:3]
        if path.endswith(".py") and kind == "blob":
            files[path.removeprefix("src/").removeprefix("dynkit/")] = sha
    return files


def _experiments_base(node: ast.ImportFrom, inside: bool) -> str | None:
    if node.level == 0:
        return node.module or ""
    if inside and node.level in (1, 2):
        package = "dynkit.experiments" if node.level == 1 else "dynkit"
        return package + (f".{node.module}" if node.module else "")
    return None


@lru_cache(maxsize=None)
def experiment_imports(sha: str, inside: bool, experiments: frozenset[str]) -> frozenset[str]:
    """The old ``registry._experiment_imports``: the experiments modules (file names) a file
    imports, for a flat ``experiments/`` folder."""
    try:
        tree = ast.parse(blob(sha))
    except (SyntaxError, ValueError):
        return frozenset()
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            dotted = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _experiments_base(node, inside)
            if base is None:
                continue
            dotted = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in dotted:
            parts = name.split(".")
            if (
                parts[:2] == ["dynkit", "experiments"]
                and len(parts) >= 3
                and f"{parts[2]}.py" in experiments
            ):
                found.add(f"{parts[2]}.py")
    return frozenset(found)


def whole_file_identity(files: dict[str, str], module: str) -> tuple[str | None, str]:
    """(source_sha256, package_sha256) of ``module`` over the tree ``files``, as the old registry
    computed them."""
    folder = PurePosixPath("experiments")
    below = {
        p for p in files if PurePosixPath(p).parts[0] not in (*ABOVE_EXPERIMENTS, "experiments")
    }
    experiments = frozenset(
        PurePosixPath(p).name for p in files if PurePosixPath(p).parent == folder
    )
    source = "/".join(module.split(".")[1:]) + ".py"  # the flat layout's experiments/<name>.py
    todo = [f"experiments/{name}" for name in MACHINERY] + [source]
    seen: set[str] = set()
    while todo:
        path = todo.pop()
        if path in seen or path not in files:
            continue
        seen.add(path)
        inside = PurePosixPath(path).parent == folder
        todo.extend(
            f"experiments/{name}" for name in experiment_imports(files[path], inside, experiments)
        )
    digest = hashlib.sha256()
    for path in sorted(below | seen, key=lambda p: PurePosixPath(p).parts):  # Path's order
        digest.update(path.encode() + b"\0" + blob_sha256(files[path]).encode() + b"\n")
    return (blob_sha256(files[source]) if source in files else None), digest.hexdigest()


def _commits() -> list[str]:
    """The commits that changed the package, oldest first, from :data:`FIRST` where it is there."""
    try:
        git("rev-parse", "--verify", "--quiet", f"{FIRST}^")
        span = f"{FIRST}^..HEAD"
    except subprocess.CalledProcessError:
        span = "HEAD"
    return git("rev-list", "--reverse", span, "--", *PACKAGE_PATHS).split()


def computed_with(stored: set[tuple[str, str, str]]) -> dict[tuple[str, str, str], str]:
    """``{(module, source_sha256, package_sha256): the first commit whose tree has it}``."""
    found, trees = {}, set()
    modules = {m for m, _, _ in stored}
    for commit in _commits():
        tree = git("rev-parse", f"{commit}:dynkit").strip()
        if tree in trees:
            continue
        trees.add(tree)
        files = tree_files(commit)
        for module in modules:
            key = (module, *whole_file_identity(files, module))
            if key in stored and key not in found:
                found[key] = commit
    return found


def identity_at(commit: str, module: str) -> dict:
    """The per-module code identity of ``module`` over the tree of ``commit``."""
    sources = {path: blob(sha) for path, sha in tree_files(commit).items()}
    return code_closure.code_identity(module, sources=sources)


LAYOUT_EDITS = {
    "dynkit": "its re-exports made lazy (dynkit._lazy)",
    "dynkit.models": "its re-exports made lazy",
    "dynkit.tasks": "its re-exports made lazy",
    "dynkit._lazy": "new: the lazy re-export helper",
    "dynkit.models.engines": "new: SOLVERS and DEFAULT_SOLVER moved here from models.ode_block",
    "dynkit.models.ode_block": "imports SOLVERS and DEFAULT_SOLVER from models.engines",
    "dynkit.experiments.scripting": "the CSAODE options moved to experiments.csaode.options",
    "dynkit.experiments.csaode.options": "new: the CSAODE options moved here from scripting",
}
"""The modules the lazy re-export change edited or added, and why each computes what it did."""


def migrate_since(folder: Path, parent: str, write: bool) -> dict[str, Counter]:
    """``{result: Counter(migrated=..., <why not>=...)}`` of the ``--since`` migration."""
    import dynkit.experiments as E

    then = code_closure.read_modules({path: blob(sha) for path, sha in tree_files(parent).items()})
    today: dict[str, dict] = {}
    table: dict[str, Counter] = {}
    for path in sorted(folder.glob("*/shards/*/shard.json")):
        record = json.loads(read_regular_bytes(path, "shard", single_link=True))
        counts = table.setdefault(path.parents[2].name, Counter())
        code = record.get("code") if isinstance(record, dict) else None
        if not isinstance(code, dict) or not isinstance(code.get("modules"), dict):
            counts["no per-module identity recorded"] += 1
            continue
        if flaw := _record_flaw(record):
            counts[flaw] += 1
            continue
        experiment = E.EXPERIMENTS.get(record.get("experiment"))
        if experiment is None:
            counts["experiment no longer registered"] += 1
            continue
        module = experiment.module or experiment.run.__module__
        now = today.setdefault(module, code_closure.code_identity(module))
        if code_closure.same_code(code, now):
            counts["already today's"] += 1
            continue
        stored = {name: digests[0] for name, digests in code["modules"].items()}
        changed = sorted(
            name
            for name, (digest, _) in now["modules"].items()
            if stored.get(name)
            != (digest if name not in LAYOUT_EDITS else then[name].code if name in then else None)
        )
        if changed:
            more = f" and {len(changed) - 4} more" if len(changed) > 4 else ""
            counts[f"code changed in {', '.join(changed[:4])}{more}"] += 1
            continue
        counts["migrated"] += 1
        if write:
            stamped = {**record, "code": now}
            stamped["sha256"] = content_hash(stamped)
            write_json(path, stamped)
    return table


def _whole_file(record: dict) -> tuple[str, str, str] | None:
    code = record.get("code")
    if isinstance(code, dict) and {"module", "source_sha256", "package_sha256"} <= set(code):
        return code["module"], code["source_sha256"], code["package_sha256"]
    return None


def _record_flaw(record: dict) -> str | None:
    """Why a stored record cannot be re-stamped whatever its code: a broken content hash or
    versions other than today's; None if neither."""
    if record.get("sha256") != content_hash(record):
        return "content hash broken"
    return _versions_flaw(record)


def _versions_flaw(record: dict) -> str | None:
    code = record["code"]
    python = ".".join(str(record.get("versions", {}).get("python", "")).split(".")[:2])
    if code.get("dynkit") != __version__ or python != "{0}.{1}".format(*sys.version_info):
        return "other dynkit or Python"
    if code.get("libraries") != code_closure.library_versions():
        return "other library versions"
    return None


def migrate(folder: Path, write: bool) -> dict[str, Counter]:
    """``{result: Counter(migrated=..., <why not>=...)}``; with ``write``, the shards re-stamped."""
    paths = sorted(folder.glob("*/shards/*/shard.json"))
    records = {p: json.loads(read_regular_bytes(p, "shard", single_link=True)) for p in paths}
    old = {p: key for p, r in records.items() if isinstance(r, dict) and (key := _whole_file(r))}
    commits = computed_with(set(old.values()))
    today: dict[str, dict] = {}
    table: dict[str, Counter] = {}
    for path, record in records.items():
        counts = table.setdefault(path.parents[2].name, Counter())
        if path not in old:
            code = record.get("code") if isinstance(record, dict) else None
            if not isinstance(code, dict):
                counts["no code recorded"] += 1
            else:
                counts[
                    "already per-module"
                    if "modules" in code
                    else "no package hash recorded (nothing to verify)"
                ] += 1
            continue
        if flaw := _record_flaw(record):
            counts[flaw] += 1
            continue
        module, commit = old[path][0], commits.get(old[path])
        if commit is None:
            counts["no commit has its code"] += 1
            continue
        if module not in today:
            today[module] = code_closure.code_identity(module)
        then = identity_at(commit, module)
        if not code_closure.same_code(then, today[module]):
            change = code_closure.describe_change(then, today[module])
            counts[f"computed at {commit[:8]}, since then {change}"] += 1
            continue
        counts["migrated"] += 1
        if write:
            stamped = {**record, "code": today[module]}
            stamped["sha256"] = content_hash(stamped)
            write_json(path, stamped)
    return table


def verify(folder: Path, sample: str) -> float:
    """The largest relative difference between the stored metrics of ``RESULT:SEED`` and a
    recomputation by today's runner."""
    import dynkit.experiments as E

    name, seed = sample.rsplit(":", 1)
    results = json.loads(read_regular_bytes(folder / name / "results.json", "results"))
    stored = {}
    for path in sorted((folder / name / "shards").glob(f"seed{seed}*/shard.json")):
        if path.parent.name == f"seed{seed}" or path.parent.name.startswith(f"seed{seed}-"):
            record = json.loads(read_regular_bytes(path, "shard", single_link=True))
            stored.update(record["metrics"])
    with tempfile.TemporaryDirectory() as out:
        again = E.run(results["experiment"], scale=results["scale"], seeds=(int(seed),), out=out)
    now = {m: v for shard in again["shards"] for m, v in shard["metrics"].items()}
    if set(now) != set(stored):
        differ = sorted(set(now) ^ set(stored))[:4]
        raise ValueError(f"{sample}: the metrics differ in name: {differ}")
    worst = 0.0
    for metric, value in sorted(stored.items()):
        a, b = float(value), float(now[metric])
        if a == b:
            gap = 0.0
        else:
            gap = abs(a - b) / max(abs(a), abs(b)) if math.isfinite(a - b) else math.inf
        worst = max(worst, gap)
        print(f"  {sample} {metric:40s} stored {a:.12g}  recomputed {b:.12g}  rel. diff {gap:.1e}")
    return worst


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", type=Path, default=Path("analysis/results"))
    parser.add_argument("--write", action="store_true", help="re-stamp (default: only count)")
    parser.add_argument(
        "--verify",
        action="append",
        default=[],
        metavar="RESULT:SEED",
        help="recompute a stored shard and compare its metrics",
    )
    parser.add_argument(
        "--since",
        metavar="PARENT",
        help="re-stamp per-module identities of PARENT's closure rule (see the module docstring)",
    )
    args = parser.parse_args(argv)
    if args.verify:
        for sample in args.verify:
            print(f"{sample}: largest relative difference {verify(args.folder, sample):.1e}")
        return 0
    total: Counter = Counter()
    table = (
        migrate_since(args.folder, args.since, args.write)
        if args.since
        else migrate(args.folder, args.write)
    )
    for name, counts in table.items():
        total.update(
            {
                "code differs"
                if k.startswith(("computed at", "code changed", "stale at"))
                else k: v
                for k, v in counts.items()
            }
        )
        print(f"{name:30s} " + "; ".join(f"{v} {k}" for k, v in sorted(counts.items())))
    print(f"{'all':30s} " + ", ".join(f"{k}: {v}" for k, v in sorted(total.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
