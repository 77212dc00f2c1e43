"""Shared test set-up."""

import pytest

from dynkit.solvers import _validation


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
