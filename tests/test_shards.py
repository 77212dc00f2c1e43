"""Shards you can trust a year later (issue 25, section 1): a stored ``shard.json`` is reused only
when it is well-formed, was made by the same code for the same shard, and matches its own content
hash; anything else is recomputed with one notice line naming the file; concurrent runners on one
``out`` never compute a shard twice.

Every case below ends in a correct result (the shard recomputed, the aggregate equal to a clean
run's, one notice naming the file) or it is counted against the suite: *raw* (a crash), *accepted*
(a damaged shard reused without a word), *wrong* (a forged or stale number reaching
``results.json``), *terse* (recomputed, but the notice does not name the file or the reason).
``python tests/test_shards.py`` runs every case and prints the counts.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dynkit
import dynkit.experiments as E
from dynkit.experiments.registry import Experiment
from dynkit.experiments.runner import (
    SHARD_FILE,
    ShardRecomputed,
    claimed,
    content_hash,
    finished,
    run_shard,
    shards,
)

ROOT = Path(__file__).resolve().parents[1]
CALLS: list = []
LEDGER: Counter = Counter()


@dataclass(frozen=True)
class ToyConfig:
    points: tuple[str, ...] = ("a", "b")
    point: str = "a"
    size: int = 3


def toy_run(config: ToyConfig, *, seed: int, out: Path, device: str) -> dict:
    """value = size + seed/10 (+1 for point b): known in closed form, so a forged 999 cannot pass
    for it."""
    CALLS.append((seed, config.point))
    return {"metrics": {f"{config.point}.value": config.size + seed / 10 + (config.point == "b")}}


def expected_value(seed: int, point: str, size: int = 3) -> float:
    return size + seed / 10 + (point == "b")


def _toy() -> Experiment:
    return Experiment(
        "toy_shards",
        toy_run,
        {"smoke": ToyConfig(), "cpu": ToyConfig(size=5), "full": ToyConfig(size=9)},
        points=lambda c: [{"point": p} for p in c.points],
    )


@pytest.fixture
def toy(monkeypatch):
    CALLS.clear()
    monkeypatch.setitem(E.EXPERIMENTS, "toy_shards", _toy())
    return E.EXPERIMENTS["toy_shards"]


def _run(out: Path, seeds=(0, 1)) -> tuple[dict, list[str]]:
    notices: list[str] = []
    res = E.run("toy_shards", scale="smoke", seeds=seeds, out=out, notice=notices.append)
    return res, notices


# --------------------------------------------------------------------------------------------------
# damaged, forged and stale records: (name, how to damage the valid record, expected words of the
# notice)


def _text(record: dict) -> bytes:
    return json.dumps(record, indent=2).encode()


def _edit(change, rehash: bool = True):
    """Bytes of the record after ``change(record)``; re-hashed (so only the structural check can
    catch it) unless ``rehash`` is False (a hand edit: the hash catches it)."""

    def damage(record: dict) -> bytes:
        record = json.loads(json.dumps(record))
        change(record)
        if rehash and isinstance(record, dict):
            record["sha256"] = content_hash(record)
        return _text(record)

    return damage


def _set(key, value):
    return lambda r: r.__setitem__(key, value)


def _drop(*keys):
    return lambda r: [r.pop(k) for k in keys]


def _forge(
    r,
):  # the audit's forgery: another dynkit version and metrics of 999, file otherwise intact
    r["code"]["dynkit"] = "0.0.1"
    r["metrics"] = {k: 999.0 for k in r["metrics"]}


def _stale_version(r):  # an honest record written by another dynkit version (its hash matches)
    r["code"]["dynkit"] = "0.0.1"


def _stale_source(r):  # an honest record written by another version of the experiment's module
    r["code"]["modules"][toy_run.__module__][0] = "0" * 32


def _stale_package(
    r,
):  # an honest record written when a module below the experiment (here io, which it imports)
    r["code"]["modules"]["dynkit.io"][0] = "0" * 32


def _stale_library(r):  # an honest record written under another torch
    r["code"]["libraries"]["torch"] = "1.0.0"


def _before_module_digests(r):  # an honest record of the earlier identity: whole-file hashes
    r["code"] = {
        "dynkit": r["code"]["dynkit"],
        "module": toy_run.__module__,
        "source_sha256": "0" * 64,
        "package_sha256": "0" * 64,
        "libraries": r["code"]["libraries"],
    }


CORRUPTIONS = {
    "a JSON list": (lambda r: b"[1, 2]", "not a JSON object (a list)"),
    "JSON null": (lambda r: b"null", "not a JSON object (a NoneType)"),
    "non-UTF-8 bytes": (lambda r: b"\xff\xfe\x00\x81garbage", "not UTF-8"),
    "truncated": (lambda r: _text(r)[: len(_text(r)) // 2], "not valid JSON"),
    "empty": (lambda r: b"", "not valid JSON"),
    "NaN (not JSON)": (
        lambda r: _text(r).replace(b'"seconds": ', b'"seconds": NaN, "x": ', 1),
        "NaN is not JSON",
    ),
    "deeply nested": (lambda r: b"[" * 200_000, "not valid JSON"),
    "missing metrics": (_edit(_drop("metrics")), "missing 'metrics'"),
    "missing seconds": (_edit(_drop("seconds")), "missing 'seconds'"),
    "string metrics": (_edit(_set("metrics", "x")), "'metrics' must map names to numbers"),
    "list metrics": (_edit(_set("metrics", [1, 2])), "'metrics' must map names to numbers"),
    "a string metric value": (
        _edit(lambda r: r["metrics"].update({"a.value": "high"})),
        "'metrics' must map names to numbers",
    ),
    "negative seconds": (_edit(_set("seconds", -1)), "'seconds' must be a number >= 0"),
    "string seconds": (_edit(_set("seconds", "3")), "'seconds' must be a number >= 0"),
    "edited metric": (
        _edit(lambda r: r["metrics"].update({k: 999.0 for k in r["metrics"]}), rehash=False),
        "does not match its sha256",
    ),
    "forged (other version, metrics 999)": (
        _edit(_forge, rehash=False),
        "does not match its sha256",
    ),
    "stale dynkit version": (_edit(_stale_version), "written by other code (dynkit 0.0.1"),
    "stale experiment source": (_edit(_stale_source), f"code changed in {toy_run.__module__}"),
    "stale package (a module below the experiment changed)": (
        _edit(_stale_package),
        "code changed in dynkit.io",
    ),
    "stale library version": (_edit(_stale_library), "torch 1.0.0"),
    "recorded with whole-file hashes": (
        _edit(_before_module_digests),
        "recorded with whole-file hashes",
    ),
    "another seed's record": (_edit(_set("seed", 7)), "its seed differs"),
    "another config": (_edit(lambda r: r["config"].update({"size": 4})), "its config differs"),
    "written before shards had code and hash": (
        _edit(_drop("code", "sha256"), rehash=False),
        "written before shards recorded their code",
    ),
}


def shard_case(name: str, tmp: Path) -> str:
    """Damage seed 1's point-a shard of a finished run as ``name`` says, rerun, classify what
    happens."""
    damage, words = CORRUPTIONS[name]
    out = tmp / "".join(c if c.isalnum() else "_" for c in name)
    _run(out)
    path = out / "shards" / "seed1-point=a" / SHARD_FILE
    path.write_bytes(damage(json.loads(path.read_text())))
    CALLS.clear()
    try:
        res, notices = _run(out)
    except Exception as err:  # noqa: BLE001 - exactly what this suite is looking for
        return _count("raw", f"{name}: {type(err).__name__}: {err}")
    values = res["metrics"]["a.value"]["values"]
    if values != [expected_value(0, "a"), expected_value(1, "a")]:
        return _count("wrong", f"{name}: results.json got a.value {values}")
    if CALLS != [(1, "a")] or not notices:
        return _count("accepted", f"{name}: reused without a notice (ran {CALLS})")
    if (
        len(notices) != 1
        or str(path) not in notices[0]
        or words not in notices[0]
        or "\n" in notices[0]
    ):
        return _count("terse", f"{name}: notice {notices}")
    if finished(shards("toy_shards", "smoke", [1], out)[0]) is None:
        return _count("wrong", f"{name}: the recomputed shard is not reusable")
    return _count("clear", notices[0])


def _count(outcome: str, detail: str) -> str:
    LEDGER["cases"] += 1
    LEDGER[outcome] += 1
    if outcome != "clear":
        raise AssertionError(f"{outcome}: {detail}")
    return detail


@pytest.mark.parametrize("name", CORRUPTIONS)
def test_a_damaged_forged_or_stale_shard_is_recomputed_with_a_notice_naming_it(toy, tmp_path, name):
    shard_case(name, tmp_path)


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    key=st.sampled_from(
        ["seed", "scale", "seconds", "metrics", "point", "device", "result", "versions"]
    ),
    value=st.one_of(
        st.integers(),
        st.floats(allow_nan=False),
        st.text(max_size=5),
        st.none(),
        st.dictionaries(st.text(max_size=3), st.floats(allow_nan=False), max_size=2),
    ),
)
def test_any_hand_edit_of_a_stored_field_is_caught(toy, tmp_path, key, value):
    # for every field and every JSON value that differs from the stored one: not reused
    shard = shards("toy_shards", "smoke", [0], tmp_path)[0]
    if finished(shard) is None:
        _run(tmp_path, seeds=(0,))
    record = json.loads(shard.path.read_text())
    edited = {**record, key: value}
    notices: list[str] = []
    shard.path.write_text(json.dumps(edited))
    reused = finished(shard, notices.append)
    shard.path.write_text(json.dumps(record))
    assert (reused is None) == (edited != record) and len(notices) == (edited != record)


def test_the_suite_sees_a_reused_forgery(toy, tmp_path, monkeypatch):
    # planted: a finished() that trusts any parsable record lets the forged 999 through -- counted
    # as wrong
    import dynkit.experiments.runner as R

    monkeypatch.setattr(
        R, "_flaw", lambda record, shard: None if isinstance(record, dict) else "not a record"
    )
    with pytest.raises(AssertionError, match="wrong: .*999"):
        shard_case("forged (other version, metrics 999)", tmp_path)
    LEDGER["cases"] -= 1
    LEDGER["wrong"] -= 1


def test_an_intact_shard_is_reused_silently_and_carries_its_identity_and_hash(toy, tmp_path):
    _run(tmp_path)
    CALLS.clear()
    res, notices = _run(tmp_path)
    assert CALLS == [] and notices == []
    record = json.loads((tmp_path / "shards" / "seed0-point=b" / SHARD_FILE).read_text())
    # the hash, recomputed here from its definition: SHA-256 of the canonical JSON of the rest of
    # the record
    body = {k: v for k, v in record.items() if k != "sha256"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    assert record["sha256"] == hashlib.sha256(canonical.encode()).hexdigest()
    import numpy
    import scipy
    import torch

    code = record["code"]
    assert code == E.EXPERIMENTS["toy_shards"].code()
    assert {k: v for k, v in code.items() if k != "modules"} == {
        "dynkit": dynkit.__version__,
        "python": "{0}.{1}".format(*sys.version_info),
        "libraries": {
            "numpy": numpy.__version__,
            "scipy": scipy.__version__,
            "torch": torch.__version__,
        },
    }
    # the toy's own module (this file) and the runner that ran it, each with its two digests
    assert {toy_run.__module__, "dynkit.experiments.runner", "dynkit.io"} <= set(code["modules"])
    assert all(len(c) == len(links) == 32 for c, links in code["modules"].values())
    assert res["metrics"]["b.value"]["values"] == [expected_value(0, "b"), expected_value(1, "b")]


def test_a_killed_writer_s_temporary_is_removed_when_the_shard_is_recomputed(toy, tmp_path):
    folder = tmp_path / "shards" / "seed0-point=a"
    folder.mkdir(parents=True)
    orphan = (
        folder / ".shard.json.dynkit-k3x9q2zz.tmp"
    )  # what atomic_write leaves when killed mid-write
    orphan.write_text('{"experiment": "toy_sh')
    _run(tmp_path, seeds=(0,))
    assert not orphan.exists() and (folder / SHARD_FILE).exists()


def test_the_notice_is_a_warning_when_no_notice_function_is_given(toy, tmp_path):
    _run(tmp_path, seeds=(0,))
    (tmp_path / "shards" / "seed0-point=a" / SHARD_FILE).write_text("null")
    with pytest.warns(ShardRecomputed, match="seed0-point=a.*not a JSON object"):
        E.run("toy_shards", scale="smoke", seeds=(0,), out=tmp_path)


def test_editing_the_module_s_code_makes_its_shards_stale_a_comment_does_not(tmp_path, monkeypatch):
    # the code identity digests the module's syntax tree: a comment or docstring is not code
    source = tmp_path / "edited_experiment.py"
    source.write_text(
        textwrap.dedent("""
        def run(config, *, seed, out, device):
            return {"metrics": {"value": float(seed)}}
    """)
    )
    spec = importlib.util.spec_from_file_location("edited_experiment", source)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "edited_experiment", module)
    spec.loader.exec_module(module)
    exp = Experiment("edited", module.run, {s: ToyConfig() for s in ("smoke", "cpu", "full")})
    monkeypatch.setitem(E.EXPERIMENTS, "edited", exp)
    out = tmp_path / "out"
    E.run("edited", scale="smoke", seeds=(0,), out=out)
    notices: list[str] = []
    E.run("edited", scale="smoke", seeds=(0,), out=out, notice=notices.append)
    assert notices == []
    source.write_text('"""A docstring."""\n' + source.read_text() + "# a comment\n")
    E.run("edited", scale="smoke", seeds=(0,), out=out, notice=notices.append)
    assert notices == []
    source.write_text(source.read_text() + "SCALE = 2\n")  # code: stale
    E.run("edited", scale="smoke", seeds=(0,), out=out, notice=notices.append)
    assert len(notices) == 1 and "written by other code" in notices[0]
    assert "code changed in edited_experiment" in notices[0]
    released = dynkit.__version__
    monkeypatch.setattr(dynkit, "__version__", "99.0")  # a new dynkit release: stale too
    E.run("edited", scale="smoke", seeds=(0,), out=out, notice=notices.append)
    assert len(notices) == 2 and f"dynkit {released} -> 99.0" in notices[1]


def test_registered_scripts_hash_the_script_module_not_only_the_adapter():
    exp = E.EXPERIMENTS["momres_cubic"]  # registered through scripting.register_script
    code = exp.code()
    names = set(code["modules"])
    assert {"dynkit.experiments.momres.momres_cubic", "dynkit.experiments.scripting"} <= names
    assert "dynkit.experiments.momres.momres_lista" not in names  # another script, same adapter


# -- issue 34: the code identity covers every module below the experiment; shards are read only
# inside out --

PLANTED_EXPERIMENT = textwrap.dedent("""
    def run(config, *, seed, out, device):
        from ..tasks.silverbox import silverbox  # noqa: F401 - what the identity must follow, as node_blowup does
        from .scripting import setup  # noqa: F401
        return {"metrics": {"value": float(seed)}}
""")  # noqa: E501


@pytest.fixture
def package_copy(tmp_path, monkeypatch):
    """A copy of the dynkit sources that the code identity hashes (``registry.PACKAGE_ROOT``),
    with a toy experiment module inside its ``experiments`` folder: planted changes go to the
    copy, never the package."""
    import shutil

    import dynkit.experiments.code_closure as closure

    copy = tmp_path / "dynkit"
    shutil.copytree(closure.PACKAGE_ROOT, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(closure, "PACKAGE_ROOT", copy)
    source = copy / "experiments" / "planted_experiment.py"
    source.write_text(PLANTED_EXPERIMENT)
    module = type(sys)("planted_experiment")
    module.__file__ = str(source)
    exec(
        compile(
            "def run(config, *, seed, out, device):\n    return {'metrics': {'value': "
            "float(seed)}}\n",
            str(source),
            "exec",
        ),
        module.__dict__,
    )
    monkeypatch.setitem(sys.modules, "planted_experiment", module)
    monkeypatch.setitem(
        E.EXPERIMENTS,
        "planted",
        Experiment("planted", module.run, {s: ToyConfig() for s in ("smoke", "cpu", "full")}),
    )
    return copy


def _append(path: Path, text: str) -> None:
    path.write_text(path.read_text() + text)


@pytest.mark.parametrize(
    "changed, stale",
    [
        ("tasks/silverbox.py", True),  # the case: node_blowup's data, two layers below
        ("solvers/engine.py", True),  # reached through dk.solve, imported by no experiment by name
        ("experiments/scripting.py", True),  # an experiments module the experiment imports
        ("experiments/runner.py", True),  # the machinery that runs every shard
        (
            "experiments/judging/ledger.py",
            False,
        ),  # another part of the experiments layer: not below this experiment
        ("cli.py", False),  # above the experiments layer
        ("report/render.py", False),
    ],
)
def test_a_change_to_a_module_below_the_experiment_recomputes_its_shards(
    package_copy, tmp_path, changed, stale
):
    out = tmp_path / "out"
    E.run("planted", scale="smoke", seeds=(0,), out=out)
    notices: list[str] = []
    E.run("planted", scale="smoke", seeds=(0,), out=out, notice=notices.append)
    assert notices == []  # unchanged code: reused
    _append(package_copy / changed, "\nDRIVE_AMPLITUDE = 0.2  # planted change\n")
    E.run("planted", scale="smoke", seeds=(0,), out=out, notice=notices.append)
    if stale:
        module = "dynkit." + changed.removesuffix(".py").replace("/", ".")
        assert len(notices) == 1 and "written by other code" in notices[0], notices
        assert f"code changed in {module}" in notices[0], notices
        assert str(out / "shards" / "seed0" / SHARD_FILE) in notices[0]
    else:
        assert notices == []


def test_the_identity_follows_node_blowup_into_its_task_module():
    names = set(E.EXPERIMENTS["node_blowup"].code()["modules"])
    assert {
        "dynkit.tasks.silverbox",
        "dynkit.experiments.node.node_blowup",
        "dynkit.experiments.scripting",
        "dynkit.solvers.engine",
        "dynkit.models.neural_ode",
        "dynkit.io",
        "dynkit.tasks",
        "dynkit",
    } <= names
    assert not names & {
        "dynkit.cli",
        "dynkit.experiments.judging.ledger",
        "dynkit.experiments.momres.momres_cubic",
        "dynkit.experiments",
        "dynkit.theory.claims",
    }
    assert not any(n.startswith("dynkit.report") for n in names)


def test_a_new_library_version_recomputes_the_shards(package_copy, tmp_path, monkeypatch):
    out = tmp_path / "out"
    E.run("planted", scale="smoke", seeds=(0,), out=out)
    numpy_version = sys.modules["numpy"].__version__
    monkeypatch.setattr(sys.modules["numpy"], "__version__", "0.0.planted")
    notices: list[str] = []
    E.run("planted", scale="smoke", seeds=(0,), out=out, notice=notices.append)
    assert len(notices) == 1 and "numpy " + numpy_version + " -> 0.0.planted" in notices[0]


def test_a_shard_linked_out_of_the_run_folder_is_never_read(toy, tmp_path):
    out = tmp_path / "out"
    _run(out)
    path = out / "shards" / "seed1-point=a" / SHARD_FILE
    outside = tmp_path / "elsewhere.json"
    record = json.loads(path.read_text())
    record["metrics"] = {k: 999.0 for k in record["metrics"]}  # a forgery with a recomputed hash
    record["sha256"] = content_hash(record)
    outside.write_text(json.dumps(record))
    path.unlink()
    path.symlink_to(outside)
    notices: list[str] = []
    assert (
        finished(shards("toy_shards", "smoke", [1], out)[0], notices.append) is None
    )  # not read: not reused
    assert len(notices) == 1 and str(path) in notices[0] and "symbolic link" in notices[0]
    with pytest.raises(
        ValueError, match=r"out must be a regular file .*seed1-point=a/shard\.json.*symbolic link"
    ):
        _run(out)  # refused before any work: a run never replaces the link
    assert path.is_symlink() and json.loads(outside.read_text())["metrics"] == record["metrics"]


def test_a_hard_link_to_a_forged_file_outside_out_is_recomputed_never_reused(toy, tmp_path):
    out = tmp_path / "out"
    _run(out)
    path = out / "shards" / "seed1-point=a" / SHARD_FILE
    forged = tmp_path / "forged.json"  # outside out, a forgery with a recomputed hash
    record = json.loads(path.read_text())
    record["metrics"] = {k: 999.0 for k in record["metrics"]}
    record["sha256"] = content_hash(record)
    forged.write_text(json.dumps(record))
    path.unlink()
    os.link(forged, path)  # the same file under a second name inside out: a regular file to lstat
    CALLS.clear()
    res, notices = _run(out)
    assert CALLS == [(1, "a")] and len(notices) == 1, (CALLS, notices)
    assert str(path) in notices[0] and "hard link" in notices[0]
    assert res["metrics"]["a.value"]["values"] == [expected_value(0, "a"), expected_value(1, "a")]
    assert os.stat(path).st_nlink == 1  # the recomputed record replaced the name
    assert json.loads(forged.read_text())["metrics"] == record["metrics"]  # the other: untouched
    # planted: a reader that does not count names reuses the forgery
    import dynkit.experiments.runner as R

    path.unlink()
    os.link(forged, path)
    original = R.read_regular_bytes
    try:
        R.read_regular_bytes = lambda p, option=None, **kw: original(p, option)
        assert finished(shards("toy_shards", "smoke", [1], out)[0])["metrics"]["a.value"] == 999.0
    finally:
        R.read_regular_bytes = original


def test_a_shard_folder_linked_out_of_the_run_folder_is_refused(toy, tmp_path):
    out = tmp_path / "out"
    _run(out)
    folder = out / "shards" / "seed1-point=a"
    elsewhere = tmp_path / "elsewhere"
    folder.rename(elsewhere)
    folder.symlink_to(elsewhere)
    notices: list[str] = []
    assert finished(shards("toy_shards", "smoke", [1], out)[0], notices.append) is None
    assert len(notices) == 1 and "outside out" in notices[0]
    with pytest.raises(ValueError, match="out must hold its shards inside it.*linked folder"):
        _run(out)
    # planted: without the check, the same record is reused from outside
    import dynkit.experiments.runner as R

    original = R._outside_flaw
    try:
        R._outside_flaw = lambda path, mode, root: None
        assert finished(shards("toy_shards", "smoke", [1], out)[0]) is not None
    finally:
        R._outside_flaw = original


def test_the_shard_audit_counts_what_a_rerun_would_reuse_and_why_not(toy, tmp_path):
    from analysis.shard_audit import audit

    _run(tmp_path / "toy_result")
    assert audit(tmp_path) == {"toy_result": Counter(reusable=4)}
    path = tmp_path / "toy_result" / "shards" / "seed1-point=a" / SHARD_FILE
    earlier = _edit(_before_module_digests)(json.loads(path.read_text()))  # planted: old identity
    path.write_bytes(earlier)
    other = tmp_path / "toy_result" / "shards" / "seed0-point=b" / SHARD_FILE
    other.write_bytes(_edit(_stale_package)(json.loads(other.read_text())))
    stored = path.read_bytes()
    assert audit(tmp_path) == {
        "toy_result": Counter(
            {"reusable": 2, "before per-module code digests": 1, "written by other code": 1}
        )
    }
    assert path.read_bytes() == stored  # read, never re-stamped


def nan_run(config: ToyConfig, *, seed: int, out: Path, device: str) -> dict:
    return {"metrics": {"x": float("nan") if seed == 1 else 2.0 + seed, "one": 1.0}}


def test_a_non_finite_metric_is_strict_json_and_makes_its_row_invalid(tmp_path, monkeypatch):
    from dynkit.experiments.judging.ledger import Comparison, evaluate, greater, ratio

    exp = Experiment("nan_toy", nan_run, {s: ToyConfig() for s in ("smoke", "cpu", "full")})
    monkeypatch.setitem(E.EXPERIMENTS, "nan_toy", exp)
    E.run("nan_toy", scale="smoke", seeds=(0, 1, 2), out=tmp_path)
    notices: list[str] = []
    res = E.run("nan_toy", scale="smoke", seeds=(0, 1, 2), out=tmp_path, notice=notices.append)
    assert notices == []  # a shard with a NaN metric is a valid record, reused
    text = (tmp_path / "results.json").read_text()
    stored = json.loads(
        text, parse_constant=lambda c: pytest.fail(f"{c} in results.json is not JSON")
    )
    assert stored["metrics"]["x"]["values"] == [2.0, "nan", 4.0] == res["metrics"]["x"]["values"]
    assert (stored["metrics"]["x"]["mean"], stored["metrics"]["x"]["n_seeds"]) == (3.0, 2)
    claim = Comparison(
        "t.nan",
        "P",
        "x grows",
        "Fig. 1",
        "nan_toy",
        "x / one",
        ratio("x", "one"),
        greater(1.5, null=1.0),
    )
    row = evaluate(
        claim, stored
    )  # the ledger reads it back as NaN: a diverged seed, named, never dropped
    assert row.outcome == "invalid" and "seed 1" in row.reason, (row.outcome, row.reason)


# --------------------------------------------------------------------------------------------------
# concurrent runners on one --out (two processes)

SLOW_EXPERIMENT = """
import os, time
from dataclasses import dataclass
from dynkit.experiments.registry import register

@dataclass(frozen=True)
class C:
    points: tuple = ("a", "b", "c")
    point: str = "a"

@register("slow_toy", smoke=C(), cpu=C(), full=C(), points=lambda c: [{"point": p} for p in c.points])
def slow_toy(config, *, seed, out, device):
    with open(os.environ["SLOW_TOY_LOG"], "a") as fh:
        fh.write(f"{os.getpid()} seed{seed}-point={config.point}\\n")
    time.sleep(float(os.environ.get("SLOW_TOY_SLEEP", "0.4")))
    return {"metrics": {f"{config.point}.value": seed * 10 + ord(config.point)}}
"""  # noqa: E501

DRIVER = """
import contextlib, os, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import slow_toy  # registers the experiment
import dynkit.experiments as E
import dynkit.experiments.runner as R
if os.environ.get("NO_CLAIMS"):  # planted: runners that do not claim their shards
    R.claimed = lambda shard, wait: contextlib.nullcontext(True)
E.EXPERIMENTS["slow_toy"].code()  # sources parsed before the start line: the race is in the shards
ready = Path(sys.argv[2])
ready.joinpath(str(os.getpid())).touch()
deadline = time.time() + 120
while len(list(ready.iterdir())) < int(sys.argv[3]) and time.time() < deadline:  # start together
    time.sleep(0.01)
E.run("slow_toy", scale="smoke", seeds=[int(s) for s in sys.argv[5].split(",")], out=sys.argv[4],
      progress=print, notice=print)
"""


def slow_toy(tmp: Path) -> tuple[Path, dict]:
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "slow_toy.py").write_text(SLOW_EXPERIMENT)
    (tmp / "driver.py").write_text(DRIVER)
    env = {
        **os.environ,
        "SLOW_TOY_LOG": str(tmp / "log"),
        "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}",
        "OMP_NUM_THREADS": "1",
    }
    return tmp, env


def start_runners(
    tmp: Path, env: dict, n: int, out: Path, seeds: str = "0,1", **extra
) -> list[subprocess.Popen]:
    ready = Path(tempfile.mkdtemp(prefix="ready-", dir=tmp))  # the runners' start line
    return [
        subprocess.Popen(
            [sys.executable, str(tmp / "driver.py"), str(tmp), str(ready), str(n), str(out), seeds],
            env={**env, **extra},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        for _ in range(n)
    ]


def computed(tmp: Path) -> Counter:
    log = tmp / "log"
    return (
        Counter(line.split()[1] for line in log.read_text().splitlines())
        if log.exists()
        else Counter()
    )


@pytest.mark.parametrize("holder_finishes", [True, False])
def test_a_claimed_shard_is_left_to_its_holder_and_taken_over_if_the_holder_stops(
    toy, tmp_path, holder_finishes
):
    # this test holds seed 0 point a's claim, as another runner computing it would
    shard = shards("toy_shards", "smoke", [0], tmp_path)[0]
    lines: list[str] = []
    runner = threading.Thread(
        target=lambda: E.run(
            "toy_shards", scale="smoke", seeds=(0, 1), out=tmp_path, progress=lines.append
        )
    )
    with claimed(shard, wait=False) as mine:
        assert mine
        runner.start()
        deadline = time.time() + 60
        while len(CALLS) < 3 and time.time() < deadline:
            time.sleep(0.01)
        assert sorted(CALLS) == [
            (0, "b"),
            (1, "a"),
            (1, "b"),
        ]  # the three others, not the claimed one
        if holder_finishes:
            run_shard(shard)
    runner.join(60)
    assert not runner.is_alive() and sorted(CALLS) == [
        (0, "a"),
        (0, "b"),
        (1, "a"),
        (1, "b"),
    ]  # each once
    last = (
        "reused (finished by a concurrent run)" if holder_finishes else "done in"
    )  # else: computed here
    assert f"seed0-point=a: {last}" in lines[-1], lines
    assert json.loads((tmp_path / "results.json").read_text())["metrics"]["a.value"]["values"] == [
        3.0,
        3.1,
    ]


def concurrent_case(tmp: Path, claims: bool = True) -> tuple[Counter, list[str]]:
    tmp, env = slow_toy(tmp)
    out = tmp / "out"
    procs = start_runners(tmp, env, 2, out, **({} if claims else {"NO_CLAIMS": "1"}))
    outputs = [p.communicate(timeout=300) for p in procs]
    for p, (so, se) in zip(procs, outputs):
        assert p.returncode == 0, se[-2000:]
    return computed(tmp), [so for so, _ in outputs]


def test_two_concurrent_runs_on_one_out_compute_each_shard_once(tmp_path):
    counts, outputs = concurrent_case(tmp_path)
    assert sorted(counts) == [f"seed{s}-point={p}" for s in (0, 1) for p in "abc"]
    assert set(counts.values()) == {1}, (
        counts
    )  # each of the 6 shards computed once, by one of the two
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert results["metrics"]["b.value"]["values"] == [ord("b"), 10 + ord("b")]
    assert all("reused" in text or "done" in text for text in outputs)
    LEDGER["cases"] += 1
    LEDGER["clear"] += 1


@pytest.mark.slow
def test_without_claims_the_concurrency_test_sees_duplicates(tmp_path):
    # planted: the same two runners with claims disabled compute shards twice, so the test above can
    # fail
    counts, _ = concurrent_case(tmp_path, claims=False)
    assert max(counts.values()) >= 2, counts


def main() -> int:
    CALLS.clear()
    E.EXPERIMENTS["toy_shards"] = _toy()
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in CORRUPTIONS:
            try:
                print(f"{name:42s} {shard_case(name, Path(tmp))}")
            except AssertionError as err:
                problems.append(str(err))
        try:
            test_two_concurrent_runs_on_one_out_compute_each_shard_once(Path(tmp) / "concurrent")
            print(f"{'two concurrent runs on one out':42s} each shard computed once")
        except AssertionError as err:
            LEDGER["cases"] += 1
            LEDGER["wrong"] += 1
            problems.append(f"concurrent: {err}")
    print(
        f"shard cases: {LEDGER['cases']}; clear: {LEDGER['clear']}; terse: {LEDGER['terse']}; "
        f"raw: {LEDGER['raw']}; accepted: {LEDGER['accepted']}; wrong: {LEDGER['wrong']}"
    )
    for problem in problems:
        print("  " + problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
