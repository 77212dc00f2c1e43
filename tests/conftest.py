"""Shared test set-up."""
import pytest

from dynkit.solvers import engine


@pytest.fixture(autouse=True)
def _fresh_once_per_process_warnings():
    """Some warnings are said once per process (a raised rtol); each test starts as a fresh process would."""
    engine._RAISED_RTOLS.clear()
    yield
