"""Tests for the SNLI loaders."""

import collections
import gzip
import json
import os

import pytest

from keras_attention.data import snli


@pytest.fixture
def staged_dir():
    path = os.environ.get("KERAS_ATTENTION_DATA")
    if not path:
        pytest.skip("KERAS_ATTENTION_DATA is not set")
    return path


def _row(gold, premise="A dog runs.", hypothesis="An animal moves."):
    return json.dumps(
        {"gold_label": gold, "sentence1": premise, "sentence2": hypothesis}
    )


@pytest.mark.parametrize(
    "split, count", [("train", 9987), ("dev", 9842), ("test", 9824)]
)
def test_infersent_counts_match_readme(staged_dir, split, count):
    data = snli.load_snli(split, data_dir=staged_dir)
    assert len(data["premise"]) == len(data["hypothesis"]) == count
    assert len(data["label"]) == count
    assert data["skipped"] == 0


def test_infersent_train_label_counts_match_readme(staged_dir):
    data = snli.load_snli("train", data_dir=staged_dir)
    assert collections.Counter(data["label"]) == {
        "entailment": 3336,
        "neutral": 3322,
        "contradiction": 3329,
    }


@pytest.mark.parametrize(
    "split, count, skipped",
    [("train", 1022, 2), ("dev", 9842, 158), ("test", 9824, 176)],
)
def test_jsonl_counts_and_skipped_rows_match_readme(
    staged_dir, split, count, skipped
):
    data = snli.load_snli(split, data_dir=staged_dir, source="jsonl")
    assert len(data["premise"]) == len(data["hypothesis"]) == count
    assert len(data["label"]) == count
    assert data["skipped"] == skipped
    assert set(data["label"]) == set(snli.LABELS)


def test_infersent_dev_labels_equal_jsonl_gold_labels(staged_dir):
    infersent = snli.load_snli("dev", data_dir=staged_dir)
    jsonl = snli.load_snli("dev", data_dir=staged_dir, source="jsonl")
    assert infersent["label"] == jsonl["label"]


def test_infersent_trailing_spaces_are_stripped(staged_dir):
    data = snli.load_snli("test", data_dir=staged_dir)
    assert data["premise"][0].endswith(" .")
    for key in ("premise", "hypothesis"):
        assert not any(text != text.strip() for text in data[key])


def test_unknown_split_names_received_value():
    with pytest.raises(ValueError) as info:
        snli.load_snli("validation")
    assert str(info.value) == (
        "Unknown split. Expected one of ('train', 'dev', 'test'). "
        "Received: split='validation'"
    )


def test_unknown_source_names_received_value(tmp_path):
    with pytest.raises(ValueError, match="Received: source='csv'"):
        snli.load_snli("dev", data_dir=tmp_path, source="csv")


def test_jsonl_skips_rows_without_gold_label(tmp_path):
    path = tmp_path / "small.jsonl.gz"
    lines = [_row("neutral"), _row("-"), "", _row("contradiction")]
    path.write_bytes(gzip.compress("\n".join(lines).encode()))
    data = snli.read_snli_jsonl(path)
    assert data["label"] == ["neutral", "contradiction"]
    assert data["premise"] == ["A dog runs.", "A dog runs."]
    assert data["skipped"] == 1


def test_bad_json_names_file_and_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(_row("neutral") + "\n" + '{"gold_label": "neut\n')
    with pytest.raises(ValueError) as info:
        snli.read_snli_jsonl(path)
    message = str(info.value)
    assert str(path) in message
    assert "line 2" in message
    assert "Malformed JSON" in message


def test_missing_field_names_file_and_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    row = json.dumps({"gold_label": "neutral", "sentence1": "A dog runs."})
    path.write_text(_row("neutral") + "\n" + _row("neutral") + "\n" + row)
    with pytest.raises(ValueError, match="line 3.*'sentence2'"):
        snli.read_snli_jsonl(path)


def test_unknown_gold_label_names_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(_row("Neutral") + "\n")
    with pytest.raises(ValueError, match="line 1.*gold_label='Neutral'"):
        snli.read_snli_jsonl(path)


def test_tokenized_files_strip_trailing_space(tmp_path):
    (tmp_path / "x.s1").write_text("A dog runs . \nA cat sits . \n")
    (tmp_path / "x.s2").write_text("An animal moves . \nNo cat . \n")
    (tmp_path / "x.labels").write_text("entailment\ncontradiction\n")
    data = snli.read_snli_tokenized(
        tmp_path / "x.s1", tmp_path / "x.s2", tmp_path / "x.labels"
    )
    assert data["premise"] == ["A dog runs .", "A cat sits ."]
    assert data["hypothesis"] == ["An animal moves .", "No cat ."]
    assert data["label"] == ["entailment", "contradiction"]


def test_misaligned_tokenized_files_name_files_and_counts(tmp_path):
    (tmp_path / "x.s1").write_text("a\nb\n")
    (tmp_path / "x.s2").write_text("a\n")
    (tmp_path / "x.labels").write_text("neutral\nneutral\n")
    with pytest.raises(ValueError) as info:
        snli.read_snli_tokenized(
            tmp_path / "x.s1", tmp_path / "x.s2", tmp_path / "x.labels"
        )
    message = str(info.value)
    assert f"'{tmp_path / 'x.s2'}' has 1 lines" in message
    assert f"'{tmp_path / 'x.s1'}' has 2 lines" in message


def test_bad_label_in_labels_file_names_line(tmp_path):
    (tmp_path / "x.s1").write_text("a\nb\n")
    (tmp_path / "x.s2").write_text("a\nb\n")
    (tmp_path / "x.labels").write_text("neutral\nhmm\n")
    with pytest.raises(ValueError, match="x.labels', line 2"):
        snli.read_snli_tokenized(
            tmp_path / "x.s1", tmp_path / "x.s2", tmp_path / "x.labels"
        )


def test_evaluation_source_follows_the_training_pairs():
    # The InferSent subset is tokenized: its dev and test are too; the
    # official training lines go with the official (jsonl) dev and test.
    assert snli.snli_evaluation_source("subset") == "infersent"
    assert snli.snli_evaluation_source("first1024") == "jsonl"
    assert snli.snli_evaluation_source("first100000") == "jsonl"
    assert snli.snli_evaluation_source("any/snli_1.0_train.jsonl") == "jsonl"
    for name, (source, _) in snli.TRAINING_SETS.items():
        assert snli.snli_evaluation_source(name) == source
