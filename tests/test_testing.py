"""dynkit.testing: the assertions' messages, the strategies' promises, and the docs page's pytest
example (run here as a user would run it: two tests pass, the planted violation fails with a
readable message)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dynkit as dk
from dynkit.testing import (
    assert_holds,
    assert_violated,
    epsilons,
    invertible_matrices,
    log_uniform,
    matrices_with_spectrum,
    spd_matrices,
)

ROOT = Path(__file__).resolve().parent.parent
T = dk.theory


def _eigen_pairing(gamma_scale=1.0):
    rng = np.random.default_rng(0)
    return T.check_eigen_pairing(
        rng.uniform(0.1, 1, (5, 3)), rng.standard_normal((5, 3, 3)), 1.0 * gamma_scale
    )


def test_assert_holds_is_silent_on_a_true_claim_and_assert_violated_refuses_it():
    result = _eigen_pairing()
    assert_holds(result)
    with pytest.raises(
        AssertionError, match="Expected a violation, but the claim holds on every instance"
    ):
        assert_violated(result)


def test_the_failure_message_names_part_residual_tolerance_and_instance():
    result = T.check_f_eps_surjective(np.array([0.0, 2.0]), 1.0, f=np.exp)
    with pytest.raises(AssertionError) as info:
        assert_holds(result, err_msg="my theorem")
    text = str(info.value)
    assert text.startswith("my theorem\nClaim does not hold")
    assert "part that failed: f_eps_surjective.root" in text
    assert re.search(r"worst residual: [0-9.e-]+ > tolerance 1e-06", text)
    assert (
        "instances: 1 of 2 failed" in text and '"w": {"re": 0.0' in text and "Newton step" in text
    )
    assert_violated(result)


def test_undecided_is_not_a_violation():
    result = T.check_ghbnode_adjoint_not_heavy_ball(
        np.eye(2) * 1e-2, np.full(2, 1e-2), np.full(2, 1e-2), np.zeros(2), np.ones(4), 0.5, 0.5
    )
    with pytest.raises(AssertionError, match="is undecided"):
        assert_violated(result)
    with pytest.raises(AssertionError, match="1 undecided"):
        assert_holds(result)


@pytest.mark.parametrize("fn", [assert_holds, assert_violated])
def test_a_bool_is_refused(fn):
    with pytest.raises(TypeError, match="result must be a dynkit.theory.CheckResult"):
        fn(True)


@settings(max_examples=20, deadline=None)
@given(data=st.data(), n=st.integers(1, 5))
def test_the_strategies_draw_what_they_promise(data, n):
    """Eigenvalues of matrices_with_spectrum as asked (to 1e-8 relative: cond(V) <= 10);
    spd_matrices symmetric with positive eigenvalues and condition number <= 1e3;
    invertible_matrices cond <= 1e2 (+ rounding)."""
    values = data.draw(
        st.lists(st.floats(-5, 5).filter(lambda v: abs(v) > 0.1), min_size=n, max_size=n)
    )
    M = data.draw(matrices_with_spectrum(values))
    np.testing.assert_allclose(
        np.sort(np.linalg.eigvals(M).real), np.sort(values), rtol=1e-8, atol=1e-8
    )
    A = data.draw(spd_matrices(n))
    ev = np.linalg.eigvalsh(A)
    assert np.allclose(A, A.T) and ev[0] > 0 and ev[-1] / ev[0] <= 1e3 * (1 + 1e-9)
    assert np.linalg.cond(data.draw(invertible_matrices(n))) <= 1e2 * (1 + 1e-9)
    eps = data.draw(epsilons())
    assert 0.1 <= eps <= 100


def test_strategy_arguments_are_checked():
    with pytest.raises(ValueError, match="low and high"):
        log_uniform(0.0, 1.0)
    with pytest.raises(ValueError, match="n must be a positive integer"):
        spd_matrices(0)
    with pytest.raises(ValueError, match="cond_max"):
        invertible_matrices(2, cond_max=0.5)


def test_the_docs_example_fails_readably_on_its_planted_violation(tmp_path):
    """The pytest example of docs/guide/testing_claims.md, saved and run: 2 passed, 1 failed, and
    the failure carries the lines the page shows."""
    text = (ROOT / "docs" / "guide" / "testing_claims.md").read_text()
    (tmp_path / "test_my_claims.py").write_text(
        re.findall(r"```python\n(.*?)```", text, flags=re.S)[0]
    )
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_my_claims.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    out = proc.stdout
    assert proc.returncode == 1 and "1 failed, 2 passed" in out, out[-3000:]
    assert "FAILED test_my_claims.py::test_a_function_that_misses_zero_is_not_surjective" in out
    for line in (
        "Claim does not hold",
        "part that failed: f_eps_surjective.root",
        "> tolerance 1e-06",
        "instances: 1 of 1 failed",
        "worst instance:",
    ):
        assert line in out and line in text, line
