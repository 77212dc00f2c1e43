"""The shared validators of dynkit.theory and the CLI's exit status for lists of problems."""

from __future__ import annotations

import numpy as np
import pytest

from dynkit import cli
from dynkit.theory._core import check_count, check_seed, matching_vectors


def test_matching_vectors_returns_arrays_and_names_every_vector_on_a_mismatch():
    b, x0 = matching_vectors(3, "W", context="ctx", b=[1, 2, 3], x0=np.zeros((2, 3)))
    assert b.dtype == float and b.shape == (3,) and x0.shape == (2, 3)
    # planted: x0 one entry short
    with pytest.raises(ValueError, match=r"b and x0 must have shape \(\.\.\., 3\) to match W"):
        matching_vectors(3, "W", context="ctx", b=np.ones(3), x0=np.ones(2))
    with pytest.raises(ValueError, match=r"got b \(3,\), x0 \(2,\)"):
        matching_vectors(3, "W", context="ctx", b=np.ones(3), x0=np.ones(2))


@pytest.mark.parametrize("bad", [0, -1, True, 1.0, "2"])
def test_check_count_wants_a_positive_integer(bad):
    with pytest.raises(ValueError, match="n must be a positive integer"):
        check_count("n", bad)


@pytest.mark.parametrize("bad", [-1, False, 0.0])
def test_check_seed_wants_a_non_negative_integer(bad):
    with pytest.raises(ValueError, match="seed must be a non-negative integer"):
        check_seed("seed", bad)


def test_counts_and_seeds_come_back_as_int():
    assert check_count("n", np.int64(3)) == 3 and type(check_count("n", np.int64(3))) is int
    assert check_seed("seed", 0) == 0


def test_check_status_says_each_problem_and_fails(capsys):
    assert cli._check_status({"a": [], "b": []}) == cli.EXIT_OK
    assert capsys.readouterr().err == ""
    status = cli._check_status({"things that broke": ["x", "y"], "quiet": []})
    assert status == cli.EXIT_CHECK_FAILED
    assert capsys.readouterr().err == "dynkit: things that broke: x, y\n"
