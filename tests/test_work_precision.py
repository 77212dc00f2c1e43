"""Work-precision sweeps: published references are right, the table is complete and consistent."""

import json
import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from dynkit.diagnostics.work_precision import (
    PROBLEMS,
    Problem,
    WorkPrecisionTable,
    nfe_ratio_at_matched_error,
    work_precision,
)
import importlib

# the package exports the function work_precision under the module's name: fetch the module itself
wp_module = importlib.import_module("dynkit.diagnostics.work_precision")


@pytest.mark.parametrize(
    "name, exact",
    [("rigid_body", wp_module._rigid_body_exact), ("kepler", wp_module._kepler_exact)],
)
def test_closed_form_references_solve_their_ode(name, exact):
    p = PROBLEMS[name]
    np.testing.assert_allclose(exact(0.0), p.y0, atol=1e-15)
    for t in (0.7, 5.3, 19.9):  # central difference of the closed form: O(dt^2) = 1e-8 truncation
        dt = 1e-4
        slope = (exact(t + dt) - exact(t - dt)) / (2 * dt)
        np.testing.assert_allclose(slope, p.f(t, exact(t)), atol=1e-7)


def test_arenstorf_period_is_the_published_one():
    p = PROBLEMS["arenstorf"]
    res = solve_ivp(p.f, p.t_span, p.y0, method="DOP853", rtol=1e-13, atol=1e-13)
    # an independent solver closes the orbit to ~1e-9 (the close lunar passage amplifies round-off);
    # a period off in its 6th digit would miss by ~1e-4
    assert np.max(np.abs(res.y[:, -1] - p.reference)) < 1e-7


def test_table_rows_errors_and_exports(tmp_path):
    table = work_precision(
        problems=["rigid_body", "kepler"],
        methods=("dopri5",),
        tolerances=(1e-5, 1e-9),
        include_scipy=True,
    )
    assert len(table.rows) == 2 * 3 * 2  # problems x (dopri5, RK45, RK23) x tolerances
    for problem in ("rigid_body", "kepler"):
        for solver in ("dynkit.dopri5", "scipy.RK45", "scipy.RK23"):
            err, nfe = table.curve(problem, solver)
            assert (
                err[1] < err[0] / 10 and nfe[1] > nfe[0]
            )  # 4 decades of tolerance buy >1 decade of error
    d = json.loads(json.dumps(table.to_dict()))
    assert set(d["problems"]) == {"rigid_body", "kepler"} and len(d["rows"]) == 12
    md = table.to_markdown()
    assert "**kepler**" in md and "| dynkit.dopri5 |" in md and "DETEST" in md
    out = table.plot(tmp_path / "wp.png")
    assert out.stat().st_size > 1000


def test_dopri5_matches_scipy_rk45_at_equal_error():
    table = work_precision(
        problems=["rigid_body"], methods=("dopri5",), tolerances=(1e-6, 1e-8, 1e-10)
    )
    ratio = nfe_ratio_at_matched_error(table, "rigid_body", "dynkit.dopri5", "scipy.RK45")
    # same Dormand-Prince pair and controller class: within 25% either way (measured 0.82)
    assert 0.75 < ratio < 1.25


def test_matched_error_ratio_on_known_curves():
    # peer: nfe = 100 err^(-1/5); ours needs exactly half the evaluations at every error
    errs = [1e-3, 1e-5, 1e-7, 1e-9]
    rows = [dict(problem="p", solver="peer", tol=e, error=e, nfe=100 * e**-0.2) for e in errs]
    rows += [
        dict(problem="p", solver="ours", tol=e, error=e * 3, nfe=50 * (e * 3) ** -0.2) for e in errs
    ]
    table = WorkPrecisionTable(rows, {"p": "synthetic"})
    # log-linear interpolation is exact on a power law; the last point (3e-3) is outside the range
    assert nfe_ratio_at_matched_error(table, "p", "ours", "peer") == pytest.approx(0.5, rel=1e-12)
    assert math.isnan(nfe_ratio_at_matched_error(table, "p", "ours", "missing"))


def test_user_problem():
    p = Problem(
        "decay", lambda t, y: -y, np.array([1.0]), (0.0, 1.0), np.array([math.exp(-1.0)]), "exp(-t)"
    )
    table = work_precision(
        problems=[p], methods=("bosh3",), tolerances=(1e-6,), include_scipy=False
    )
    (row,) = table.rows
    assert row["solver"] == "dynkit.bosh3" and row["error"] < 1e-5 and row["nfe"] > 0


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(problems=["nope"]), "problems"),
        (dict(methods=("rk4",)), "methods"),
        (dict(tolerances=(0.0,)), "tolerances"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        work_precision(**kwargs)
