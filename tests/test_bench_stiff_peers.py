"""The peers benchmark's own arithmetic (no timing here: the benchmark prints its ratios, tests
never time)."""

import math
import time

from benchmarks.bench_stiff_peers import _missing, matched


def test_a_missing_peer_is_skipped_with_the_package_named(capsys):
    assert _missing("no_such_peer_package_for_dynkit")
    assert "SKIPPED: no_such_peer_package_for_dynkit is not installed" in capsys.readouterr().out


def _runs(scale: float) -> list[dict]:
    # error falls tenfold per rung, time grows twofold: log time is linear in log error
    return [dict(rtol=10.0**-k, error=10.0**-k, time=scale * 2.0**k) for k in range(3, 8)]


def test_matched_error_ratio_is_the_interpolated_time_ratio():
    runs = {
        "numbalsoda": _runs(1.0),
        "radau5:diff": _runs(3.0),
        "bdf:diff": _runs(5.0),
        "radau5:jac": _runs(0.5),
    }
    rows = matched(runs, (1e-4, 3e-6), ("radau5:diff", "bdf:diff"), "numbalsoda")
    assert [r["dynkit"] for r in rows] == [
        "radau5:diff",
        "radau5:diff",
    ]  # the jac mode is not in the prefix
    for row in rows:  # both lines are straight in log-log with the same slope: ratio 3 at any level
        assert math.isclose(row["ratio"], 3.0, rel_tol=1e-12)


def test_levels_a_contender_does_not_reach_are_left_out():
    runs = {
        "numbalsoda": _runs(1.0),
        "bdf:diff": [dict(rtol=1e-3, error=1e-3, time=1.0), dict(rtol=1e-4, failed=True)],
    }
    assert matched(runs, (1e-4, 1e-6), ("bdf:diff",), "numbalsoda") == []


def test_interleaved_minimum_times_failed_and_slow_contenders_once():
    from benchmarks._goals import interleaved_minimum

    calls = []

    def contender(name, value, seconds=0.0):
        def run():
            calls.append(name)
            end = time.process_time() + seconds
            while time.process_time() < end:  # burn CPU time: the clock is the process's
                pass
            return value

        return run

    best, outputs = interleaved_minimum(
        {
            "fast": contender("fast", 1),
            "failed": contender("failed", None),
            "slow": contender("slow", 2, 0.02),
        },
        rounds=3,
        slow_s=0.01,
    )
    assert calls.count("fast") == 3 and calls.count("failed") == 1 and calls.count("slow") == 1
    assert outputs == {"fast": 1, "failed": None, "slow": 2}
    assert best["slow"] >= 0.02 - 1e-3  # process_time's resolution is far finer than 1 ms on Linux


def test_interleaved_minimum_batches_fast_runs_and_reports_one_runs_time():
    from benchmarks._goals import interleaved_minimum

    calls = []

    def run(name, seconds):
        def go():
            calls.append(name)
            end = time.process_time() + seconds
            while time.process_time() < end:
                pass
            return name

        return go

    best, outputs = interleaved_minimum(
        {"quick": run("quick", 0.001), "slow": run("slow", 0.03)},
        rounds=3,
        slow_s=0.02,
        batch_s=0.01,
    )
    # the first round sizes the batch (about 10 runs of 1 ms), the next two run it
    assert 1 + 2 * 5 <= calls.count("quick") <= 1 + 2 * 20
    assert calls.count("slow") == 1  # slower than slow_s: timed once, never batched
    # a batch's mean is one run's time, not the batch's
    assert 0.001 - 2e-4 <= best["quick"] < 0.003
    assert outputs == {"quick": "quick", "slow": "slow"}


def test_median_rows_takes_each_levels_middle_ladder_and_drops_levels_one_ladder_missed():
    from benchmarks.bench_stiff_peers import median_rows

    def row(level, ratio, who):
        return dict(level=level, ratio=ratio, dynkit=who)

    ladders = [
        [row(1e-4, 1.5, "a"), row(1e-5, 2.0, "a")],
        [row(1e-4, 0.9, "b"), row(1e-5, 1.0, "b")],
        [row(1e-4, 1.2, "c")],  # this ladder never reached 1e-5
    ]
    rows = median_rows(ladders)
    assert [r["level"] for r in rows] == [1e-4]
    assert rows[0]["ratio"] == 1.2 and rows[0]["dynkit"] == "c"
    assert rows[0]["ratios"] == [1.5, 0.9, 1.2]
    # an even count takes the upper middle: the one less kind to dynkit
    assert median_rows(ladders[:2])[0]["ratio"] == 1.5
    assert median_rows(ladders[:2])[1]["ratios"] == [2.0, 1.0]


def test_fixed_costs_time_a_one_step_span_of_each_contender_in_microseconds():
    from benchmarks.bench_stiff_peers import fixed_costs

    asked = []

    class Fake:
        t_end = 1e11

        def runner(self, solver, rtol, t_end=None):
            asked.append((solver, t_end))
            seconds = {
                "numbalsoda": 0.0005,
                "rodas5:inplace": 0.0008,
                "rodas5:diff": 0.001,
                "rodas5:jac": 0.002,
                "rodas5:prepared": 0.0003,
            }[solver]

            def run():
                end = time.process_time() + seconds
                while time.process_time() < end:
                    pass
                return 0.0

            return run

    fixed = fixed_costs(Fake())
    assert {t for _, t in asked} == {1e-30 * 1e11}  # the span, not the problem's
    assert 450 <= fixed["numbalsoda"] < 1500 and 950 <= fixed["rodas5:diff"] < 2500
    assert fixed["rodas5:jac"] > fixed["rodas5:diff"]


def _in_place_gap(name, field) -> float:
    """Largest relative gap between ``field`` written in place and the problem's own ``f``, on
    states scattered around its start."""
    import numpy as np

    from benchmarks.bench_stiff import _vdp
    from dynkit.diagnostics.testset import TESTSET

    if name == "vdp1000":
        f, y0 = _vdp()[0], np.array([2.0, 0.0])
    else:
        f, y0 = TESTSET[name].f, TESTSET[name].y0
    rng = np.random.default_rng(0)
    worst = 0.0
    for _ in range(20):
        y = y0 * rng.uniform(0.5, 1.5, y0.size) + rng.uniform(0.0, 0.1, y0.size)
        out = np.full(y.size, np.nan)
        field(0.0, y, out)
        expected = f(0.0, y)
        worst = max(worst, float(np.max(np.abs(out - expected) / (np.abs(expected) + 1e-300))))
    return worst


def test_the_in_place_formulas_are_the_problems():
    """numbalsoda and dynkit's in-place contender run IN_PLACE: the same f as the problem's,
    to rounding (the formulas group terms differently: 1e-12 relative, cancellation aside)."""
    from benchmarks.bench_stiff_peers import IN_PLACE

    for name, field in IN_PLACE.items():
        assert _in_place_gap(name, field) < 1e-9, name


def test_a_mistyped_in_place_formula_is_seen():
    def wrong_vdp(t, y, d):
        d[0] = y[1]
        d[1] = 100.0 * (1.0 - y[0] * y[0]) * y[1] - y[0]

    assert _in_place_gap("vdp1000", wrong_vdp) > 0.1
