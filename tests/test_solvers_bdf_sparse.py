"""bdf on large sparse systems (issue 46, item 3): the column colouring, the band LU, and CVODE's
Jacobian and LU reuse rules on the sparse path (:mod:`dynkit.solvers.bdf`)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.integrate
import scipy.sparse
import scipy.sparse.linalg
from hypothesis import given, settings, strategies as st

import dynkit as dk
from dynkit.solvers import bdf, linalg
from dynkit.solvers.jacobian import SparsityPattern, _column_groups

T_END = 10.0


def _brusselator(N):
    from benchmarks.bench_stiff import _brusselator as brusselator

    f, jac, y0, _, sparsity = brusselator(N)
    return f, jac, y0, sparsity


@pytest.fixture(scope="module")
def brusselator200():
    """200 states on [0, 10] and scipy's BDF at rtol 1e-10, atol 1e-12 with the analytic sparse
    Jacobian (it differs from scipy Radau at rtol 1e-12 by 7e-10, 1/14 of the tightest bound
    below)."""
    f, jac, y0, sparsity = _brusselator(100)
    ref = scipy.integrate.solve_ivp(
        f, (0.0, T_END), y0, method="BDF", rtol=1e-10, atol=1e-12, jac=jac
    ).y[:, -1]
    return f, y0, sparsity, ref


def _solve(problem, rtol):
    f, y0, sparsity, _ = problem
    return dk.solve(f, y0, [0.0, T_END], method="bdf", rtol=rtol, atol=rtol, jac_sparsity=sparsity)


@pytest.mark.parametrize("lu", ["band", "superlu"])
@pytest.mark.parametrize("rtol", [1e-4, 1e-8])
def test_sparse_brusselator_agrees_with_scipy_bdf(brusselator200, monkeypatch, lu, rtol):
    # bdf holds the global error within a few tolerances (tolerance proportionality, module
    # docstring of bdf): measured 2.3 rtol at 1e-4 and 1.9-2.0 at 1e-8 (max abs error, |y| ≤ 4),
    # with the band LU and with SuperLU (BAND_FILL = 0 refuses every band). Bound: 10 rtol, room
    # for the reference's own 7e-10 and for a changed step sequence
    if lu == "superlu":
        monkeypatch.setattr(linalg, "BAND_FILL", 0.0)
    sol = _solve(brusselator200, rtol)
    assert sol.success
    assert np.abs(sol.ys[-1] - brusselator200[3]).max() <= 10 * rtol


def test_jacobian_reuse_makes_fewer_calls_of_f(brusselator200, monkeypatch):
    # one difference Jacobian (6 groups: 6 calls) for the whole solve against one a step: measured
    # 191 calls of f against 1363 at rtol 1e-4. Planted: reuse_jacobian = False recomputes J at
    # every step; the reuse must save at least half the calls
    reused = _solve(brusselator200, 1e-4).stats
    monkeypatch.setattr(bdf.BDFStepper, "reuse_jacobian", False)
    fresh = _solve(brusselator200, 1e-4).stats
    assert fresh.njev >= fresh.n_accepted  # the planted variant does recompute J at every step
    assert reused.njev <= 3
    assert reused.nfe < 0.5 * fresh.nfe


def test_lu_reuse_factorises_less_and_stays_accurate(brusselator200, monkeypatch):
    # the LU kept while α moves by at most 30 % (CVODE's rule) against a new LU at every change
    # of h or k (LU_REUSE_RATIO = 0): fewer factorisations, the same accuracy bound as above
    kept = _solve(brusselator200, 1e-6)
    monkeypatch.setattr(bdf, "LU_REUSE_RATIO", 0.0)
    every = _solve(brusselator200, 1e-6)
    assert kept.stats.nlu < every.stats.nlu
    for sol in (kept, every):
        assert np.abs(sol.ys[-1] - brusselator200[3]).max() <= 10 * 1e-6


def _greedy_by_row_masks(indptr, indices, d):
    """The colouring as first written (a group's occupied rows tested column by column): the
    reference the graph colouring must reproduce."""
    used, members = [], []
    for j in range(d):
        rows = indices[indptr[j] : indptr[j + 1]]
        for g, occupied in enumerate(used):
            if not occupied[rows].any():
                occupied[rows] = True
                members[g].append(j)
                break
        else:
            occupied = np.zeros(d, bool)
            occupied[rows] = True
            used.append(occupied)
            members.append([j])
    return [np.array(m) for m in members]


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 40), st.floats(0.0, 0.4), st.integers(0, 2**31 - 1))
def test_column_groups_are_the_greedy_groups(n, density, seed):
    S = scipy.sparse.random(n, n, density=density, random_state=seed, format="csc")
    S.sort_indices()
    new = _column_groups(S.indptr, S.indices, n)
    old = _greedy_by_row_masks(S.indptr, S.indices, n)
    assert len(new) == len(old) and all(np.array_equal(a, b) for a, b in zip(new, old))


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 30), st.floats(0.0, 0.4), st.integers(0, 2**31 - 1))
def test_entries_of_lists_the_columns_entries(n, density, seed):
    S = scipy.sparse.random(n, n, density=density, random_state=seed, format="csc")
    pattern = SparsityPattern(S != 0, n)
    cols = np.random.default_rng(seed).permutation(n)[: max(n // 2, 1)]
    expected = [k for j in cols for k in range(pattern.indptr[j], pattern.indptr[j + 1])]
    assert pattern.entries_of(cols).tolist() == expected


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_band_lu_solves_a_permuted_banded_system(seed):
    # a tridiagonal-plus-coupling matrix shuffled by a random symmetric permutation: reverse
    # Cuthill-McKee finds a narrow band again, and the band LU solves σI − J to rounding (residual
    # within 1e-10 of the right-hand side's size; the matrix is diagonally dominant, condition < 10)
    rng = np.random.default_rng(seed)
    n = 300
    J = scipy.sparse.diags(
        [rng.uniform(-1, 1, n - 1), rng.uniform(-4, -2, n), rng.uniform(-1, 1, n - 1)], [-1, 0, 1]
    ).tocsc()
    p = rng.permutation(n)
    J = J[p][:, p].tocsc()
    plan = linalg.band_plan(J)
    assert plan is not None and plan.kl <= 2 and plan.ku <= 2
    b = rng.normal(size=n)
    lu = plan.factor(J, 10.0)
    W = scipy.sparse.identity(n, format="csc") * 10.0 - J
    assert np.abs(W @ lu.solve(b) - b).max() <= 1e-10 * np.abs(b).max()


def test_band_plan_refuses_a_wide_band():
    # a 2-D 5-point Laplacian on a 40 × 40 grid: its best band is ~40 wide, storage 120 n against
    # 6 n entries: SuperLU, not the band LU
    m = 40
    T = scipy.sparse.diags([1.0, -2.0, 1.0], [-1, 0, 1], shape=(m, m))
    lap = scipy.sparse.kronsum(T, T).tocsc()
    assert linalg.band_plan(lap) is None
