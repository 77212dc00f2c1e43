"""dynkit.io.read_regular_bytes: the one rule of every reader, each refusal planted (and instant,
never a hang)."""

from __future__ import annotations

import os

import pytest

from dynkit.io import read_regular_bytes, read_regular_text


@pytest.fixture
def files(tmp_path):
    good = tmp_path / "good.json"
    good.write_text('{"a": 1}')
    os.symlink("/dev/zero", tmp_path / "zero")
    os.mkfifo(tmp_path / "fifo")
    os.link(good, tmp_path / "second-name.json")
    os.symlink(good, tmp_path / "link.json")
    (tmp_path / "latin1.txt").write_bytes(b"caf\xe9")
    return tmp_path


@pytest.mark.parametrize(
    "name, words", [("zero", "a character device"), ("fifo", "a named pipe"), (".", "a folder")]
)
def test_special_files_are_refused_before_reading(files, name, words):
    with pytest.raises(ValueError, match=f"--results must be a regular file.*{words}"):
        read_regular_bytes(files / name, "--results")


def test_a_regular_file_and_a_link_to_one_are_read(files):
    assert read_regular_text(files / "good.json") == '{"a": 1}'
    assert read_regular_bytes(files / "link.json") == b'{"a": 1}'
    with pytest.raises(ValueError, match="symbolic link"):
        read_regular_bytes(files / "link.json", "shard", follow_links=False)


def test_a_second_name_is_refused_only_when_asked(files):
    assert read_regular_bytes(files / "second-name.json") == b'{"a": 1}'
    with pytest.raises(ValueError, match="shard must be a file with one name.*2"):
        read_regular_bytes(files / "second-name.json", "shard", single_link=True)


def test_size_bound_and_text(files):
    with pytest.raises(ValueError, match="at most 3 bytes"):
        read_regular_bytes(files / "good.json", max_bytes=3)
    assert (
        read_regular_bytes(files / "good.json", max_bytes=8) == b'{"a": 1}'
    )  # exactly at the bound
    with pytest.raises(ValueError, match="UTF-8"):
        read_regular_text(files / "latin1.txt", "plan")
    with pytest.raises(FileNotFoundError, match="'plan'|plan"):
        read_regular_text(files / "none.json", "plan")
    with pytest.raises(TypeError, match="max_bytes"):
        read_regular_bytes(files / "good.json", max_bytes=-1)
