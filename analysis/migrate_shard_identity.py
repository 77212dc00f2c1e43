"""Re-stamp the stored shards with the per-module code identity, once, where git proves the code unchanged.

    PYTHONPATH=$PWD python -m analysis.migrate_shard_identity [--write] [RESULTS_FOLDER]
    PYTHONPATH=$PWD python -m analysis.migrate_shard_identity --verify node_blowup:5 [--verify NAME:SEED ...]

Shards recorded before :mod:`dynkit.experiments.code_closure` carry the whole-file identity: a SHA-256 of the
experiment module's bytes (``source_sha256``) and one over the paths and bytes of every package file below
the experiments layer plus the experiments modules it imports (``package_sha256``). A shard is re-stamped
only when all of this holds:

1. its own content hash is intact, and its dynkit, Python (minor) and numpy/scipy/torch versions are today's;
2. a commit of this repository (since the whole-file identity was introduced) has a ``dynkit/`` tree whose
   whole-file identity, computed here exactly as the old ``registry.code_identity`` did, equals the stored
   one -- so that tree *is* the code the shard was computed with (up to a SHA-256 collision);
3. the per-module identity of that tree equals today's (:func:`~dynkit.experiments.code_closure.same_code`:
   the same module digests, whatever moved).

Then ``code`` becomes today's identity and the content hash is recomputed; nothing else in the record
changes. Any other shard is left as it is (stale: a rerun recomputes it). Without ``--write`` it only
counts. Printed per result: migrated, and why the others were not.

``--verify RESULT:SEED`` recomputes that stored shard (every config point of the seed) with today's runner in a
temporary folder and prints the largest relative difference of its metrics from the stored ones: evidence for
what the stored numbers stand for, whatever their identity says.
"""
from __future__ import annotations

import argparse
import ast
import hashlib
import json
import subprocess
import sys
from collections import Counter
from functools import lru_cache
from pathlib import Path, PurePosixPath

from dynkit import __version__
from dynkit.experiments import code_closure
from dynkit.experiments.runner import content_hash
from dynkit.io import read_regular_bytes, write_json

FIRST = "4bea921"
"""The commit that introduced ``package_sha256``: the whole-file identity is defined from there on."""
ABOVE_EXPERIMENTS = ("cli.py", "report")
MACHINERY = ("registry.py", "runner.py")


def git(*args: str) -> str:
    return subprocess.run(["git", *args], check=True, capture_output=True, text=True).stdout


@lru_cache(maxsize=None)
def blob(sha: str) -> bytes:
    return subprocess.run(["git", "cat-file", "blob", sha], check=True, capture_output=True).stdout


@lru_cache(maxsize=None)
def blob_sha256(sha: str) -> str:
    return hashlib.sha256(blob(sha)).hexdigest()


def tree_files(commit: str) -> dict[str, str]:
    """``{path below dynkit/: blob id}`` of the ``.py`` files of ``commit``."""
    files = {}
    for line in git("ls-tree", "-r", commit, "--", "dynkit").splitlines():
        meta, path = line.split("\t", 1)
        if path.endswith(".py") and meta.split()[1] == "blob":
            files[path.removeprefix("dynkit/")] = meta.split()[2]
    return files


@lru_cache(maxsize=None)
def experiment_imports(sha: str, inside: bool, experiments: frozenset[str]) -> frozenset[str]:
    """The old ``registry._experiment_imports``: experiments modules (file names) a file imports."""
    try:
        tree = ast.parse(blob(sha))
    except (SyntaxError, ValueError):
        return frozenset()
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            dotted = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                base = node.module or ""
            elif inside and node.level == 1:
                base = "dynkit.experiments" + (f".{node.module}" if node.module else "")
            elif inside and node.level == 2:
                base = "dynkit" + (f".{node.module}" if node.module else "")
            else:
                continue
            dotted = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in dotted:
            parts = name.split(".")
            if parts[:2] == ["dynkit", "experiments"] and len(parts) >= 3 and f"{parts[2]}.py" in experiments:
                found.add(f"{parts[2]}.py")
    return frozenset(found)


def whole_file_identity(files: dict[str, str], module: str) -> tuple[str | None, str]:
    """(source_sha256, package_sha256) of ``module`` over the tree ``files``, as the old registry computed."""
    below = {p for p in files if PurePosixPath(p).parts[0] not in (*ABOVE_EXPERIMENTS, "experiments")}
    experiments = frozenset(PurePosixPath(p).name for p in files
                            if PurePosixPath(p).parent == PurePosixPath("experiments"))
    source = "experiments/" + module.rsplit(".", 1)[1] + ".py"
    todo = [f"experiments/{name}" for name in MACHINERY] + [source]
    seen: set[str] = set()
    while todo:
        path = todo.pop()
        if path in seen or path not in files:
            continue
        seen.add(path)
        inside = PurePosixPath(path).parent == PurePosixPath("experiments")
        todo.extend(f"experiments/{name}" for name in experiment_imports(files[path], inside, experiments))
    digest = hashlib.sha256()
    for path in sorted(below | seen, key=lambda p: PurePosixPath(p).parts):  # Path order, as the registry's
        digest.update(path.encode() + b"\0" + blob_sha256(files[path]).encode() + b"\n")
    return (blob_sha256(files[source]) if source in files else None), digest.hexdigest()


def computed_with(stored: set[tuple[str, str, str]]) -> dict[tuple[str, str, str], str]:
    """``{(module, source_sha256, package_sha256): the first commit whose tree has that identity}``."""
    found = {}
    modules = {m for m, _, _ in stored}
    seen_trees = set()
    for commit in git("rev-list", "--reverse", f"{FIRST}^..HEAD", "--", "dynkit").split():
        tree = git("rev-parse", f"{commit}:dynkit").strip()
        if tree in seen_trees:
            continue
        seen_trees.add(tree)
        files = tree_files(commit)
        for module in modules:
            key = (module, *whole_file_identity(files, module))
            if key in stored and key not in found:
                found[key] = commit
    return found


def new_identity_at(commit: str, module: str) -> dict:
    files = tree_files(commit)
    return code_closure.code_identity(module, sources={p: blob(sha) for p, sha in files.items()})


def migrate(folder: Path, write: bool) -> dict[str, Counter]:
    paths = sorted(folder.glob("*/shards/*/shard.json"))
    records = {p: json.loads(read_regular_bytes(p, "shard", single_link=True)) for p in paths}
    old = {p: r for p, r in records.items() if isinstance(r.get("code"), dict) and "package_sha256" in r["code"]}
    commits = computed_with({(r["code"]["module"], r["code"]["source_sha256"], r["code"]["package_sha256"])
                             for r in old.values()})
    today = {}
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    libraries = code_closure.library_versions()
    table: dict[str, Counter] = {}
    for path, record in records.items():
        counts = table.setdefault(path.parents[2].name, Counter())
        code = record.get("code")
        if path not in old:
            counts["already per-module" if isinstance(code, dict) and "modules" in code
                   else "no code recorded"] += 1
            continue
        if record.get("sha256") != content_hash(record):
            counts["content hash broken"] += 1
            continue
        recorded_python = ".".join(str(record.get("versions", {}).get("python", "")).split(".")[:2])
        if code.get("dynkit") != __version__ or code.get("libraries") != libraries or recorded_python != python:
            counts["other versions"] += 1
            continue
        commit = commits.get((code["module"], code["source_sha256"], code["package_sha256"]))
        if commit is None:
            counts["no commit has its code"] += 1
            continue
        module = code["module"]
        if module not in today:
            today[module] = code_closure.code_identity(module)
        then = new_identity_at(commit, module)
        if not code_closure.same_code(then, today[module]):
            counts[f"computed at {commit[:8]}, since then {code_closure.describe_change(then, today[module])}"] += 1
            continue
        counts["migrated"] += 1
        if write:
            stamped = {**record, "code": today[module]}
            stamped["sha256"] = content_hash(stamped)
            write_json(path, stamped)
    return table


def verify(folder: Path, sample: str) -> float:
    """The largest relative difference between the stored metrics of ``RESULT:SEED`` and a recomputation."""
    import math
    import tempfile

    import dynkit.experiments as E

    name, seed = sample.rsplit(":", 1)
    results = json.loads(read_regular_bytes(folder / name / "results.json", "results"))
    stored = {}
    for path in sorted((folder / name / "shards").glob(f"seed{seed}*/shard.json")):
        if path.parent.name == f"seed{seed}" or path.parent.name.startswith(f"seed{seed}-"):
            stored.update(json.loads(read_regular_bytes(path, "shard", single_link=True))["metrics"])
    with tempfile.TemporaryDirectory() as out:
        again = E.run(results["experiment"], scale=results["scale"], seeds=(int(seed),), out=out)
    now = {m: v for shard in again["shards"] for m, v in shard["metrics"].items()}
    if set(now) != set(stored):
        raise ValueError(f"{sample}: metrics differ in name ({sorted(set(now) ^ set(stored))[:4]})")
    worst = 0.0
    for metric, value in sorted(stored.items()):
        a, b = float(value), float(now[metric])
        gap = 0.0 if a == b else abs(a - b) / max(abs(a), abs(b)) if math.isfinite(a - b) else math.inf
        worst = max(worst, gap)
        print(f"  {sample} {metric:40s} stored {a:.12g}  recomputed {b:.12g}  rel. diff {gap:.1e}")
    return worst


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", type=Path, default=Path("analysis/results"))
    parser.add_argument("--write", action="store_true", help="re-stamp (default: only count)")
    parser.add_argument("--verify", action="append", default=[], metavar="RESULT:SEED",
                        help="recompute a stored shard and compare its metrics")
    args = parser.parse_args(argv)
    if args.verify:
        for sample in args.verify:
            print(f"{sample}: largest relative difference {verify(args.folder, sample):.1e}")
        return 0
    table = migrate(args.folder, args.write)
    total: Counter = Counter()
    for name, counts in table.items():
        total.update({"code differs" if k.startswith("computed at") else k: v for k, v in counts.items()})
        print(f"{name:30s} " + "; ".join(f"{v} {k}" for k, v in sorted(counts.items())))
    print(f"{'all':30s} " + ", ".join(f"{k}: {v}" for k, v in sorted(total.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
