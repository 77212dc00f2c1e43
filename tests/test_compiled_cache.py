"""numba's disk cache of the compiled kernels: a private per-user folder, keyed on code, not files.

Each case runs a fresh Python process on one small cached kernel (``compiled.jacobian._rescale``,
about a second to compile) with ``DYNKIT_CACHE_DIR`` pointing into ``tmp_path``, and reads numba's
own hit/miss counters.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("numba")

from dynkit.solvers.compiled import cache  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PROBE = """
import json, sys, warnings
import numpy as np
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    from dynkit.solvers.compiled import common, jacobian
st = jacobian.difference_state(np.full(2, 1e-8), 1e-6)
jacobian._rescale(np.ones(2), st)
print(json.dumps({"cache": bool(common.CACHE), "reason": common.CACHE_REASON,
                  "hits": sum(jacobian._rescale.stats.cache_hits.values()),
                  "misses": sum(jacobian._rescale.stats.cache_misses.values()),
                  "warnings": [str(w.message) for w in caught]}))
"""


def run_probe(folder: Path, package_root: Path = ROOT / "src") -> dict:
    env = {**os.environ, "DYNKIT_CACHE_DIR": str(folder), "PYTHONPATH": str(package_root)}
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=package_root,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def package_copy(tmp_path: Path, edit=None) -> Path:
    root = tmp_path / f"copy{len(list(tmp_path.glob('copy*')))}"
    shutil.copytree(
        ROOT / "src" / "dynkit", root / "dynkit", ignore=shutil.ignore_patterns("__pycache__")
    )
    if edit is not None:
        edit(root / "dynkit" / "solvers")
    return root


class Planted:
    """Unpickling it creates ``marker``: what a forged cache index does."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return open, (self.marker, "w")


def index_files(folder: Path) -> list[Path]:
    return sorted((folder / "numba").glob("*.nbi"))


def plant(folder: Path, names: list[str], marker: Path) -> None:
    (folder / "numba").mkdir(parents=True, exist_ok=True, mode=0o700)
    for name in names:
        (folder / "numba" / name).write_bytes(pickle.dumps(Planted(marker)))


def test_a_planted_index_is_loaded_only_from_a_private_folder(tmp_path):
    good = tmp_path / "good"
    first = run_probe(good)
    assert first["cache"] and first["misses"] == 1 and first["hits"] == 0
    names = [p.name for p in index_files(good)]
    assert names and oct(good.stat().st_mode & 0o777) == oct(0o700)
    assert oct((good / "numba").stat().st_mode & 0o777) == oct(0o700)
    # control: planted in the user's own private folder, the forged index does run (only the user
    # can put it there), so the cases below would see the marker if the folder check let numba read
    # it
    marker = tmp_path / "ran"
    plant(good, names, marker)
    run_probe(good)
    assert marker.exists()
    marker.unlink()
    cases = {
        "group/others may write": lambda p: p.chmod(0o777),
        "group may read": lambda p: p.chmod(0o750),
        "owned by another user": lambda p: os.chown(p, 65534, 65534),
    }
    for case, spoil in cases.items():
        folder = tmp_path / case.replace(" ", "_").replace("/", "_")
        plant(folder, names, marker)
        folder.chmod(0o700)
        if case == "owned by another user" and os.geteuid() != 0:
            continue  # chown needs root: the two mode cases stand for it
        spoil(folder)
        result = run_probe(folder)
        assert not marker.exists(), case
        assert not result["cache"] and result["hits"] == 0, case
        assert any("not cached on disk" in w and str(folder) in w for w in result["warnings"]), case
    # a folder that is a symbolic link to a private one is refused too
    link = tmp_path / "link"
    link.symlink_to(good, target_is_directory=True)
    plant(good, names, marker)
    result = run_probe(link)
    assert not marker.exists() and not result["cache"] and "symbolic link" in result["reason"]


def test_the_default_folder_is_per_user_and_never_in_the_package(monkeypatch, tmp_path):
    monkeypatch.delenv("DYNKIT_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_root() == tmp_path / "xdg" / "dynkit"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/path")  # relative: ignored (XDG spec)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.cache_root() == tmp_path / "home" / ".cache" / "dynkit"
    monkeypatch.setenv("DYNKIT_CACHE_DIR", str(tmp_path / "mine"))
    folder, reason = cache.kernel_folder()
    assert reason is None and folder == tmp_path / "mine" / "numba"
    assert ROOT / "src" / "dynkit" not in folder.parents


def test_a_docstring_edit_reuses_the_kernels_and_a_code_edit_does_not(tmp_path):
    folder = tmp_path / "cache"
    assert run_probe(folder, package_copy(tmp_path))["misses"] == 1

    def prose(solvers: Path):
        engine = solvers / "engine.py"
        text = engine.read_text()
        engine.write_text(text.replace('"""', '"""An edited docstring.\n\n', 1) + "\n# a comment\n")
        kernel = solvers / "compiled" / "jacobian.py"
        text = kernel.read_text()
        edits = (
            ('"""``∂f/∂y``', '"""An edited module docstring: ``∂f/∂y``'),  # the module's
            ('    """The rule\'s state at the start', '    """Edited. The rule\'s state'),
            ("def _rescale(y, st) -> None:\n", "def _rescale(y, st) -> None:  # comment\n\n"),
        )
        for old, new in edits:
            assert old in text, old
            text = text.replace(old, new, 1)
        kernel.write_text(text)

    reused = run_probe(folder, package_copy(tmp_path, prose))
    assert reused["hits"] == 1 and reused["misses"] == 0

    def constant(solvers: Path):  # planted: a constant the kernels compile in
        stepsize = solvers / "stepsize.py"
        text = stepsize.read_text()
        assert "\nSAFETY = 0.9" in text
        stepsize.write_text(text.replace("\nSAFETY = 0.9", "\nSAFETY = 0.91", 1))

    changed = run_probe(folder, package_copy(tmp_path, constant))
    assert changed["hits"] == 0 and changed["misses"] == 1

    def kernel_code(solvers: Path):  # planted: a code change in one kernel's loop (not the probe's)
        kernel = solvers / "compiled" / "radau.py"
        text = kernel.read_text()
        assert "            ratio = 0.5\n" in text
        kernel.write_text(
            text.replace("            ratio = 0.5\n", "            ratio = 0.25\n", 1)
        )

    recompiled = run_probe(folder, package_copy(tmp_path, kernel_code))
    assert recompiled["hits"] == 0 and recompiled["misses"] == 1


def test_the_key_ignores_prose_and_follows_code():
    source = "def f(x):\n    '''Doc.'''\n    # comment\n    return x + 1\n"
    assert cache.code_tree(source) == cache.code_tree("def f(x):\n\n    return x + 1  # other\n")
    assert cache.code_tree(source) != cache.code_tree("def f(x):\n    return x + 2\n")
    assert cache._fingerprint({"a": (1, 2.5)}) != cache._fingerprint({"a": (1, 2.25)})


def test_a_folder_another_process_creates_meanwhile_is_accepted(tmp_path, monkeypatch):
    """Two test workers start at once: the folder appears between the existence check and mkdir."""
    from dynkit.solvers.compiled import cache

    folder = tmp_path / "made-by-the-other"
    folder.mkdir(mode=0o700)
    monkeypatch.setattr(cache.os.path, "lexists", lambda path: False)
    assert cache.private_folder(folder) is None
    folder.chmod(0o755)
    assert "mode 0755" in cache.private_folder(folder)
