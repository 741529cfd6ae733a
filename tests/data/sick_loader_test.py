"""Tests for the SICK loaders."""

import collections
import os

import numpy as np
import pytest

from keras_attention.data import sick

HEADER = (
    "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n"
)


@pytest.fixture
def staged_dir():
    path = os.environ.get("KERAS_ATTENTION_DATA")
    if not path:
        pytest.skip("KERAS_ATTENTION_DATA is not set")
    return path


def _write_sick(path, body, header=HEADER):
    path.write_text(header + body)
    return path


@pytest.mark.parametrize(
    "split, count, neutral, entailment, contradiction",
    [
        ("train", 4500, 2536, 1299, 665),
        ("trial", 500, 282, 144, 74),
        ("dev", 500, 282, 144, 74),
        ("test", 4927, 2793, 1414, 720),
    ],
)
def test_sick_counts_match_readme(
    staged_dir, split, count, neutral, entailment, contradiction
):
    data = sick.load_sick(split, data_dir=staged_dir)
    for key in ("pair_id", "sentence_a", "sentence_b", "relatedness"):
        assert len(data[key]) == count
    assert collections.Counter(data["entailment"]) == {
        "neutral": neutral,
        "entailment": entailment,
        "contradiction": contradiction,
    }


def test_sick_scores_are_float32_in_range(staged_dir):
    data = sick.load_sick("train", data_dir=staged_dir)
    assert data["relatedness"].dtype == np.float32
    assert data["relatedness"].min() >= 1.0
    assert data["relatedness"].max() <= 5.0


def test_sick_splits_are_disjoint_with_unique_ids(staged_dir):
    ids = [
        set(sick.load_sick(s, data_dir=staged_dir)["pair_id"].tolist())
        for s in ("train", "trial", "test")
    ]
    assert sum(len(x) for x in ids) == len(set.union(*ids)) == 9927


def test_sick_test_crlf_endings_are_removed(staged_dir):
    data = sick.load_sick("test", data_dir=staged_dir)
    for key in ("sentence_a", "sentence_b", "entailment"):
        assert not any("\r" in text for text in data[key])


def test_sick_unknown_split_names_received_value():
    with pytest.raises(ValueError) as info:
        sick.load_sick("foo")
    assert str(info.value) == (
        "Unknown split. Expected one of ('train', 'trial', 'test'). "
        "Received: split='foo'"
    )


def test_read_sick_file_parses_crlf_rows(tmp_path):
    path = tmp_path / "ok.txt"
    path.write_bytes(
        (HEADER + "7\tA b\tC d\t4.5\tENTAILMENT\n")
        .replace("\n", "\r\n")
        .encode()
    )
    data = sick.read_sick_file(path)
    assert data["pair_id"].tolist() == [7]
    assert data["sentence_a"] == ["A b"]
    assert data["relatedness"].tolist() == [4.5]
    assert data["entailment"] == ["entailment"]


def test_wrong_field_count_names_file_and_line(tmp_path):
    path = _write_sick(
        tmp_path / "bad.txt",
        "1\tA\tB\t3.0\tNEUTRAL\n2\tA\tB\t3.0\n",
    )
    with pytest.raises(ValueError) as info:
        sick.read_sick_file(path)
    message = str(info.value)
    assert str(path) in message
    assert "line 3" in message
    assert "expected 5 tab-separated fields" in message


def test_score_out_of_range_names_line(tmp_path):
    path = _write_sick(tmp_path / "bad.txt", "1\tA\tB\t6.5\tNEUTRAL\n")
    with pytest.raises(ValueError, match="line 2.*Received: '6.5'"):
        sick.read_sick_file(path)


def test_non_numeric_score_names_line(tmp_path):
    path = _write_sick(tmp_path / "bad.txt", "1\tA\tB\thigh\tNEUTRAL\n")
    with pytest.raises(ValueError, match="line 2.*relatedness_score"):
        sick.read_sick_file(path)


def test_unknown_judgment_names_line(tmp_path):
    path = _write_sick(tmp_path / "bad.txt", "1\tA\tB\t2.0\tMAYBE\n")
    with pytest.raises(ValueError, match="line 2.*Received: 'MAYBE'"):
        sick.read_sick_file(path)


def test_missing_header_names_line_1(tmp_path):
    path = _write_sick(tmp_path / "bad.txt", "1\tA\tB\t2.0\tNEUTRAL\n", "")
    with pytest.raises(ValueError, match="line 1: expected the header"):
        sick.read_sick_file(path)
