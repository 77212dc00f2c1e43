"""csaode_attention's row reads A[state, bighorn]: it is valid only when both words are in the
vocabulary the model was trained with (a word outside it is the unknown token). The reference is
the raw TREC training file, read here."""

from __future__ import annotations

import pytest

from dynkit.experiments import get
from dynkit.experiments.judging.baselines import baseline_of
from dynkit.experiments.csaode.csaode_attention import PAIR
from dynkit.experiments.judging.ledger import COMPARISONS, VALIDITY
from dynkit.tasks.text import default_data_dir

TREC_TRAIN = default_data_dir() / "TREC.train"


def _check():
    checks = [c for c in VALIDITY["csaode_attention"] if c.metrics == ("data.pair_in_vocabulary",)]
    assert len(checks) == 1
    return checks[0]


def test_the_pair_check_fails_when_a_word_is_the_unknown_token_and_applies_to_the_row():
    check = _check()
    assert (
        check.test(1.0)[0] and not check.test(0.0)[0]
    )  # planted: a pair with a word outside the vocabulary
    assert check.kind == "data" and check.applies(
        COMPARISONS["csaode.attention_evolves"].value.metrics
    )


@pytest.mark.skipif(not TREC_TRAIN.exists(), reason=f"needs the shared TREC files ({TREC_TRAIN})")
def test_bighorn_is_not_in_trecs_training_questions_so_the_cpu_rows_seeds_are_invalid():
    words = {
        w
        for line in TREC_TRAIN.read_bytes().decode("latin-1").lower().splitlines()
        for w in line.split()[1:]
    }
    assert PAIR[0] in words and PAIR[1] not in words  # independent of dynkit's loader
    config = {"args": list(get("csaode_attention").config("cpu").args)}
    assert baseline_of("csaode_attention")(config, seed=0) == {"data.pair_in_vocabulary": 0.0}
