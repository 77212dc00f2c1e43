"""``dynkit build-kernels`` (``make install`` runs it): the compiled path's kernels written to
numba's cache ahead of their first solve, and loaded, not compiled, by a later process.

The end-to-end case builds the Rosenbrock kernel (the smallest stiff one, 10-15 s of CPU from
nothing) into an empty cache folder in one process and reads it back in another; the outcome rule
(loaded / compiled / not kept) is checked on planted kernels in this process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("numba")

from dynkit.solvers.compiled import build  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def build_in(folder: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DYNKIT_CACHE_DIR": str(folder), "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run(
        [sys.executable, "-m", "dynkit.cli", "build-kernels", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_a_built_kernel_is_loaded_by_the_next_process(tmp_path):
    first = build_in(tmp_path, "--methods", "rodas5")
    assert first.returncode == 0, first.stderr[-3000:]
    assert first.stdout.strip() == first.stdout.strip().splitlines()[0]  # one kernel, one line
    assert "rodas4, rodas5, rosenbrock23: compiled in" in first.stdout
    assert "Warning" not in first.stderr  # numba's notice about first-class functions is ours
    second = build_in(tmp_path, "--methods", "rodas5,rosenbrock23")
    assert second.returncode == 0, second.stderr[-3000:]
    assert "rodas4, rodas5, rosenbrock23: loaded in" in second.stdout
    assert f"cache: {tmp_path}" in second.stderr  # the progress line names the folder


def test_an_unknown_method_is_refused_before_any_work(tmp_path):
    done = build_in(tmp_path, "--methods", "rodas5,rodas9")
    assert done.returncode == 2
    assert "methods must name methods with a compiled kernel" in done.stderr
    assert "'rodas9'" in done.stderr
    assert not (tmp_path / "numba").exists() or not any((tmp_path / "numba").iterdir())


def fake_kernel(hits: int, built: bool = False):
    compiled = SimpleNamespace(stats=SimpleNamespace(cache_hits={"sig": hits}))
    return build._Kernel(("m1", "m2"), lambda: compiled, lambda: built)


@pytest.mark.parametrize(
    "hits, cache, built, outcome",
    [
        (1, True, False, build.LOADED),
        (0, True, False, build.COMPILED),
        (0, False, False, build.NOT_KEPT),  # planted: the cache is off, nothing was kept
        (1, True, True, build.IN_PROCESS),
    ],
)
def test_each_outcome_is_read_off_numba_s_counters(monkeypatch, hits, cache, built, outcome):
    monkeypatch.setattr(build, "kernels", lambda: [fake_kernel(hits, built)])
    monkeypatch.setattr(build, "CACHE", cache)
    (only,) = build.build_kernels()
    assert only.outcome == outcome
    assert only.methods == ("m1", "m2")
    assert only.line().startswith(f"m1, m2: {outcome} in ")


def test_every_registered_compiled_method_has_exactly_one_kernel():
    from dynkit.solvers.compiled import kernel_names

    named = [name for k in build.kernels() for name in k.methods]
    assert sorted(named) == kernel_names()
    assert len(named) == len(set(named))
