"""Loaders of the sentence-classification sets (dynkit.tasks.text) on the shared files and on bad
input."""

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch

from dynkit.tasks.text import (
    DATASETS,
    TREC_CLASSES,
    Vocabulary,
    decode_line,
    load_dataset,
    pad_batch,
)
from shared_data import SENTENCE_DATA, needs_sentence_data

DATA = SENTENCE_DATA
needs_data = needs_sentence_data


@needs_data
def test_trec_official_split_and_class_counts():
    data = load_dataset("trec", DATA)
    train, test = data.split()
    assert (len(train), len(test)) == (5452, 500)
    assert data.classes == TREC_CLASSES
    # coarse-class counts of the standard TREC files (Li & Roth 2002)
    assert Counter(data.labels[test].tolist()) == {0: 9, 1: 138, 2: 94, 3: 65, 4: 81, 5: 113}
    assert Counter(data.labels[train].tolist()) == {
        0: 86,
        1: 1162,
        2: 1250,
        3: 1223,
        4: 835,
        5: 896,
    }
    assert data.sentences[0][:3] == ["how", "did", "serfdom"]


@needs_data
# Kim (2014) Table 1 sizes N: SUBJ 10000, MR 10662, CR 3775, MPQA 10606. CR and MPQA contain blank
# lines (4 and 3), which we skip and record.
@pytest.mark.parametrize(
    "name, n_kim, n_blank",
    [("subj", 10000, 0), ("mr", 10662, 0), ("cr", 3775, 4), ("mpqa", 10606, 3)],
)
def test_binary_sets_counts_and_folds(name, n_kim, n_blank):
    data = load_dataset(name, DATA, seed=0)
    assert len(data) == n_kim - n_blank
    blank_inside = [s for s in data.skipped if int(s.split(":")[1]) <= _line_count(s.split(":")[0])]
    assert len(blank_inside) == n_blank
    train, test = data.split(3)
    assert len(train) + len(test) == len(data) and not set(train) & set(test)
    assert np.bincount(data.folds).min() >= len(data) // 10  # 10 folds of near-equal size
    again = load_dataset(name, DATA, seed=0)
    assert np.array_equal(again.folds, data.folds)  # seeded
    assert not np.array_equal(load_dataset(name, DATA, seed=1).folds, data.folds)


def _line_count(filename: str) -> int:
    return (
        (DATA / filename).read_bytes().count(b"\n")
    )  # lines ended by a newline (not the empty tail)


@needs_data
def test_latin1_lines_decode_without_losing_lines():
    # rt-polarity has ~100 non-UTF-8 lines; every non-blank line becomes one sentence
    data = load_dataset("mr", DATA)
    raw = (DATA / "rt-polarity.pos").read_bytes().split(b"\n")
    assert sum(1 for line in raw if line.strip()) == int((data.labels == 1).sum())
    assert all(len(s) > 0 for s in data.sentences)


def test_decode_line_is_total():
    assert decode_line("café".encode("utf-8")) == "café"
    assert decode_line(b"caf\xe9 \x85 ok\r") == "café … ok"  # cp1252
    assert decode_line(b"\x81\x8d") == "\x81\x8d"  # bytes cp1252 lacks: Latin-1


def _write(tmp_path, name, data: bytes):
    (tmp_path / name).write_bytes(data)


def test_trec_unknown_label_raises_naming_file_and_line(tmp_path):
    _write(tmp_path, "TREC.train", b"HUM:ind Who is it ?\nFOO:bar What ?\n")
    _write(tmp_path, "TREC.test", b"LOC:city Where ?\n")
    with pytest.raises(ValueError, match=r"TREC.train:2: .*'FOO:bar'"):
        load_dataset("trec", tmp_path)


def test_trec_line_without_label_or_text_raises(tmp_path):
    _write(tmp_path, "TREC.test", b"LOC:city Where ?\n")
    _write(tmp_path, "TREC.train", b"Who is it ?\n")
    with pytest.raises(ValueError, match="TREC.train:1"):
        load_dataset("trec", tmp_path)
    _write(tmp_path, "TREC.train", b"HUM:ind\n")
    with pytest.raises(ValueError, match="without question text"):
        load_dataset("trec", tmp_path)


def test_blank_lines_are_skipped_and_recorded(tmp_path):
    _write(tmp_path, "TREC.train", b"HUM:ind Who is it ?\n\n  \r\nNUM:date When \xe9 ?\n")
    _write(tmp_path, "TREC.test", b"LOC:city Where ?")
    data = load_dataset("trec", tmp_path)
    assert data.labels.tolist() == [
        TREC_CLASSES.index("HUM"),
        TREC_CLASSES.index("NUM"),
        TREC_CLASSES.index("LOC"),
    ]
    assert data.sentences[1] == ["when", "é", "?"]
    assert [s.split(": ")[0] for s in data.skipped] == [
        "TREC.train:2",
        "TREC.train:3",
        "TREC.train:5",
    ]


def test_x85_is_not_a_line_break(tmp_path):
    _write(tmp_path, "custrev.pos", b"good \x85 very good\n")
    _write(tmp_path, "custrev.neg", b"bad\n")
    data = load_dataset("cr", tmp_path)
    assert len(data) == 2 and data.labels.tolist() == [0, 1]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(name="sst"), "name must be one of"),
        (dict(name="cr", data_dir="/nonexistent"), "data_dir must be"),
        (dict(name="cr", n_folds=1), "n_folds"),
    ],
)
def test_bad_arguments(tmp_path, kwargs, match):
    kwargs.setdefault("data_dir", tmp_path)
    with pytest.raises(ValueError, match=match):
        load_dataset(**kwargs)


def test_missing_file_is_named(tmp_path):
    _write(tmp_path, "mpqa.pos", b"x\n")
    with pytest.raises(ValueError, match="mpqa.neg"):
        load_dataset("mpqa", tmp_path)


def test_vocabulary_and_padding():
    vocab = Vocabulary([["a", "b", "a"], ["c"]])
    assert vocab.tokens[:3] == ["<pad>", "<unk>", "a"]
    ids = [vocab.encode(["a", "zzz"]), vocab.encode(["c", "b", "a"])]
    assert ids[0] == [2, 1]
    batch = pad_batch(ids)
    assert batch.tolist() == [[2, 1, 0], [vocab.index["c"], vocab.index["b"], 2]]
    assert pad_batch(ids, max_len=2).shape == (2, 2)
    with pytest.raises(ValueError):
        pad_batch([[]])


def test_datasets_listed():
    assert set(DATASETS) == {"trec", "subj", "mr", "cr", "mpqa"}
    assert torch.is_tensor(pad_batch([[1]]))


@pytest.mark.parametrize(
    "content",
    [b"", b"\n   \n\t\r\n", bytes(range(256)) * 4, b"good words\x00\n"],
    ids=["empty", "blank", "binary", "nul"],
)
def test_files_without_sentences_are_refused_before_any_training(tmp_path, content):
    # Before: such files loaded as a data set, and training on 0 sentences reported an accuracy.
    (tmp_path / "rt-polarity.neg").write_bytes(content)
    (tmp_path / "rt-polarity.pos").write_bytes(b"a fine sentence\n")
    with pytest.raises(
        ValueError, match=r"data_dir file .*rt-polarity\.neg.* must (be a text file|hold at least)"
    ):
        load_dataset("mr", tmp_path)
    from dynkit.tasks.text import train_csaode

    with pytest.raises(ValueError, match="rt-polarity.neg"):
        train_csaode("mr", tmp_path, epochs=1, quiet=True)


def test_a_few_stray_control_bytes_in_real_text_are_tolerated(tmp_path):
    # 1 control byte in ~60: above the 1% that marks a binary file, so refused ...
    (tmp_path / "rt-polarity.neg").write_bytes(b"a sentence with a form feed\x01 in it\n" * 2)
    (tmp_path / "rt-polarity.pos").write_bytes(b"fine\n")
    with pytest.raises(ValueError, match="binary"):
        load_dataset("mr", tmp_path)
    # ... while one in a long file (below 1%) is kept as text
    (tmp_path / "rt-polarity.neg").write_bytes(
        b"a sentence\x01\n" + b"an ordinary sentence of words\n" * 20
    )
    assert len(load_dataset("mr", tmp_path, n_folds=2)) == 22


@needs_sentence_data
def test_default_data_dir_finds_the_shared_sets_beside_the_checkout(tmp_path, monkeypatch):
    from dynkit.tasks.text import default_data_dir

    # resolved on both sides: on CI shared/ beside the clone is a link
    assert default_data_dir().resolve() == SENTENCE_DATA.resolve()
    monkeypatch.chdir(
        tmp_path
    )  # the working directory does not matter while the checkout has them beside it
    assert default_data_dir().resolve() == SENTENCE_DATA.resolve()
