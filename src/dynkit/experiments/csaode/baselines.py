"""CSAODE's data check: whether the attention row's word pair is in the trained vocabulary
(:mod:`dynkit.experiments.judging.baselines` reads it beside the results)."""

from __future__ import annotations

from typing import Mapping

from ..judging.baselines import BASELINES


def _attention_pair_in_vocabulary(config: Mapping, seed: int) -> dict:
    """csaode_attention (a migrated script): ``data.pair_in_vocabulary``, 1 when both words of
    the pair the row reads (:data:`~dynkit.experiments.csaode.csaode_attention.PAIR`) are in the
    vocabulary the seed's model was trained with (TREC's training split, built as
    :func:`~dynkit.tasks.text.train_csaode` builds it), else 0: a word outside it is the unknown
    token, and its attention score is not the paper's."""
    from ...tasks.text import Vocabulary, load_dataset, training_split
    from .csaode_attention import PAIR, build_parser, options

    args = list(config["args"])
    settings, data_dir = options(args), build_parser().parse_args(args).data_dir
    data = load_dataset("trec", data_dir, seed=seed)
    train_idx, _ = training_split(data, 0, seed, settings["train_subset"])
    vocab = Vocabulary([data.sentences[i] for i in train_idx])
    return {"data.pair_in_vocabulary": float(all(w in vocab.index for w in PAIR))}


BASELINES["csaode_attention"] = _attention_pair_in_vocabulary
