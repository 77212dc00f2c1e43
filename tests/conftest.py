"""Shared test set-up."""

import pytest

from dynkit.solvers import _validation

QUICK_REPORT_MODULES = ("tests/test_report.py", "tests/test_browser.py")
"""The modules that read the shared quick report: xdist sends them to one worker (below), so that
it is built once (about a minute of CPU)."""


@pytest.hookimpl(optionalhook=True)  # a run without pytest-xdist has no such hook
def pytest_xdist_make_scheduler(config, log):
    """xdist's ``load`` distribution, except that the quick report's readers go to one worker.

    (xdist's own ``--dist loadgroup`` does not group under pytest 9, whose items no longer take the
    group's suffix on their ``_nodeid``.)"""
    if config.getvalue("dist") != "load":
        return None  # another distribution asked for by name
    from xdist.scheduler import LoadScopeScheduling

    class QuickReportOnOneWorker(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return "quick_report" if nodeid.startswith(QUICK_REPORT_MODULES) else nodeid

    return QuickReportOnOneWorker(config, log)


@pytest.fixture(scope="session")
def quick_report(tmp_path_factory):
    """The whole quick report (``report.build_report(quick=True, seed=0)``) with whatever this build
    holds, built once per worker and only read by the tests that take it."""
    from dynkit import report

    out = tmp_path_factory.mktemp("quick_report")
    report.build_report(out, quick=True, seed=0)
    return out


@pytest.fixture
def only_sections(monkeypatch):
    """``only_sections(*keys)``: the report builds only these sections, in its order, for the rest
    of the test (a whole report with the component fakes takes about 7 s, mostly the real ledger
    and the figures)."""
    from dynkit import report

    def keep(*keys: str) -> None:
        kept = [s for s in report.SECTIONS if s[0] in keys]
        assert [s[0] for s in kept] == [k for k, _, _ in report.SECTIONS if k in keys] and len(
            kept
        ) == len(keys), keys
        monkeypatch.setattr(report, "SECTIONS", kept)

    return keep


@pytest.fixture(autouse=True)
def _fresh_once_per_process_warnings():
    """Some warnings are said once per process (a raised rtol); each test starts as a fresh
    process would."""
    _validation.RAISED_RTOLS.clear()
    yield


@pytest.fixture
def clip_calls(monkeypatch):
    """The ``max_norm`` of every ``torch.nn.utils.clip_grad_norm_`` call the test makes (the
    clipping still runs)."""
    import torch

    calls, real = [], torch.nn.utils.clip_grad_norm_

    def spy(params, max_norm, *args, **kwargs):
        calls.append(max_norm)
        return real(params, max_norm, *args, **kwargs)

    monkeypatch.setattr(torch.nn.utils, "clip_grad_norm_", spy)
    return calls
