"""The engine's contracts inside dynkit.solvers: the stepper base class, the step-size controller,
the import structure (layers, no function-local import to dodge a cycle) and the public names."""

from __future__ import annotations

import ast
import math
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import dynkit as dk
from dynkit.solvers import compiled
from dynkit.solvers.stepper import Slope, Stepper, Trial, as_stepper
from dynkit.solvers.stepsize import (
    MAX_FACTOR,
    MIN_FACTOR,
    NONFINITE_FACTOR,
    PIController,
)

ROOT = Path(__file__).resolve().parents[1]
SOLVERS = ROOT / "src" / "dynkit" / "solvers"


# ---------------------------------------------------------------------------------------------
# the stepper protocol


class _EulerStepper(Stepper):
    """Explicit Euler with the difference to Heun as its error estimate (order 1, k = 2)."""

    k = 2

    def __init__(self, field, backend):
        self.field = field

    def attempt(self, t, y, h, k1):
        y_new = y + h * k1
        slope = Slope(self.field, t + h, y_new)
        error = 0.5 * h * (slope.get() - k1)
        return Trial(y_new, error, lambda theta: y[None] + np.outer(theta * h, k1), slope)


class _DuckEuler:
    """The same stepper without the base class: only ``k`` and ``attempt``."""

    k = 2

    def __init__(self, field, backend):
        self.inner = _EulerStepper(field, backend)

    def attempt(self, t, y, h, k1):
        return self.inner.attempt(t, y, h, k1)


class _Method:
    def __init__(self, stepper_class, adaptive=True):
        self.name, self.adaptive, self.stepper_class = "euler-pair", adaptive, stepper_class

    def make_stepper(self, field, backend):
        return self.stepper_class(field, backend)


def test_the_hooks_default_to_what_the_loops_did_without_them():
    stepper = _EulerStepper(None, None)
    trial = Trial(np.zeros(2), np.array([3.0, 4.0]), None, None)
    assert stepper.error_norm(trial, lambda e: np.float64(np.abs(e).max())) == 4.0
    assert stepper.step_factor(0.5, True, 1.7) == 1.7
    assert stepper.accepted(trial) is None and stepper.projected(np.zeros(2)) is None
    assert stepper.explicit is True and stepper.safety is None and stepper.pi_beta is None
    assert stepper.switch_log is None
    with pytest.raises(NotImplementedError, match="attempt"):
        Stepper().attempt(0.0, np.zeros(1), 0.1, np.zeros(1))


def test_a_stepper_without_the_base_class_takes_the_same_steps():
    """The protocol view forwards k and attempt: same steps, same numbers as the subclass."""
    f, y0, t = (lambda t, y: -y), np.array([1.0, 2.0]), [0.0, 1.0]
    based = dk.solve(f, y0, t, method=_Method(_EulerStepper), rtol=1e-4, dense=True)
    duck = dk.solve(f, y0, t, method=_Method(_DuckEuler), rtol=1e-4, dense=True)
    assert based.stats.as_dict() == duck.stats.as_dict() and based.stats.n_accepted > 5
    np.testing.assert_array_equal(based.ys, duck.ys)  # the same code path, the same operations
    # independent reference: exp(-1) to the tolerance of a first-order pair (rtol 1e-4, ~1e-2)
    np.testing.assert_allclose(based.ys[-1], y0 * math.exp(-1.0), rtol=2e-2)
    view = as_stepper(_DuckEuler(None, None))
    assert isinstance(view, Stepper) and view.k == 2 and view.explicit is True
    assert view.step_factor(2.0, False, 0.3) == 0.3


def test_a_fixed_step_stepper_subclass_needs_only_attempt():
    """Fixed steps: Euler on y' = -y, y(1) = (1 - h)^n exactly (the loop never reads k)."""

    class FixedEuler(_EulerStepper):
        def attempt(self, t, y, h, k1):
            trial = super().attempt(t, y, h, k1)
            trial.error = None
            return trial

    sol = dk.solve(
        lambda t, y: -y,
        np.array([1.0]),
        [0.0, 1.0],
        method=_Method(FixedEuler, False),
        step_size=0.1,
    )
    np.testing.assert_allclose(sol.ys[-1, 0], 0.9**10, rtol=1e-12)  # rounding of 10 products


# ---------------------------------------------------------------------------------------------
# the PI controller


def test_the_pi_controller_follows_its_formula():
    pi = PIController()
    pi.set_order(5)  # beta = 0.2 / 5, alpha = 1/5 - 0.75 beta, safety 0.9
    beta, alpha = 0.04, 0.2 - 0.75 * 0.04
    assert pi.beta == pytest.approx(beta, rel=1e-15) and pi.alpha == pytest.approx(alpha, rel=1e-15)
    first = pi.accept(0.5)
    assert first == pytest.approx(min(MAX_FACTOR, 0.9 * 0.5**-alpha * 1e-4**beta), rel=1e-14)
    second = pi.accept(0.25)  # remembers 0.5
    assert second == pytest.approx(0.9 * 0.25**-alpha * 0.5**beta, rel=1e-14)
    assert pi.reject(4.0) == pytest.approx(max(MIN_FACTOR, 0.9 * 4.0**-0.2), rel=1e-14)
    assert pi.accept(1e-12) <= 1.0  # no growth right after a rejection
    assert pi.accept(0.0) == MAX_FACTOR
    assert pi.reject(math.inf) == NONFINITE_FACTOR
    assert pi.reject(1e12) == MIN_FACTOR
    pi.set_order(3, safety=0.8, beta=0.1)  # a stepper's overrides
    assert (pi.safety, pi.beta, pi.alpha) == (0.8, 0.1, pytest.approx(1 / 3 - 0.075))


# ---------------------------------------------------------------------------------------------
# imports: layers, and no function-local import standing in for a cycle


def _local_relative_imports(source: str) -> list[tuple[int, str]]:
    """``(line, module)`` of every relative import inside a function or class body."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for inner in ast.walk(node):
                if isinstance(inner, ast.ImportFrom) and inner.level > 0:
                    found.append((inner.lineno, "." * inner.level + (inner.module or "")))
    return found


# numba is optional: the compiled package imports its numba modules only when it compiles
_NUMBA_MODULES = {".common", ".explicit_ensemble", "."}


def test_no_function_local_relative_import_in_the_solvers():
    planted = "def f():\n    from . import METHODS\n    return METHODS\n"
    assert _local_relative_imports(planted) == [(2, ".")]
    for path in sorted(SOLVERS.glob("*.py")):
        assert _local_relative_imports(path.read_text()) == [], path.name
    for path in sorted((SOLVERS / "compiled").glob("*.py")):
        local = {module for _, module in _local_relative_imports(path.read_text())}
        assert local <= _NUMBA_MODULES, (path.name, local)


def test_the_solvers_layers_hold_and_catch_a_planted_cycle(tmp_path):
    lint = Path(sys.executable).parent / "lint-imports"
    config = ROOT / "pyproject.toml"
    ok = subprocess.run(
        [str(lint), "--config", str(config)], cwd=ROOT, capture_output=True, text=True
    )
    assert ok.returncode == 0, ok.stdout
    shutil.copytree(ROOT / "src" / "dynkit", tmp_path / "dynkit")
    engine = tmp_path / "dynkit" / "solvers" / "engine.py"
    # planted: the engine reaching the compiled path by a function-local import (a hidden cycle)
    engine.write_text(
        engine.read_text() + "\n\ndef _planted():\n    from .compiled import solve_ensemble\n"
    )
    bad = subprocess.run(
        [str(lint), "--config", str(config)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    assert bad.returncode == 1, bad.stdout
    assert "dynkit.solvers.engine is not allowed to import dynkit.solvers.compiled" in bad.stdout


# ---------------------------------------------------------------------------------------------
# public names


def test_the_compiled_package_exports_no_registry():
    assert "KERNELS" not in compiled.__all__ and "register_kernel" not in compiled.__all__
    assert isinstance(compiled.KERNELS, dict) and callable(compiled.register_kernel)


def test_the_names_imported_from_the_engine_still_resolve():
    from dynkit.solvers.engine import Solution, SolverStats, register_adjoint, solve

    assert solve is dk.solve and Solution is dk.solvers.Solution
    assert SolverStats is dk.solvers.SolverStats and callable(register_adjoint)
    assert dk.solvers.METHODS["dopri5"].name == "dopri5"
    assert isinstance(dk.solvers.MethodInfo, type)
