"""Damaged data files are refused with the file (and line) named.

One table of faults, each written as a small file under `tmp_path` (never
the staged data): a checksum mismatch, truncated and corrupt gzip files,
parallel files of different lengths, malformed lines, bad encodings. Each
must raise a `ValueError` whose message names the file and, for a bad
line, its 1-based number. The loaders' own tests (tests/data/) cover the
same readers in more detail; this table is the count in RELIABILITY.md.
"""

import collections
import gzip
import hashlib
import json

import pytest

from keras_attention.data import checksums
from keras_attention.data import glove
from keras_attention.data import multi30k
from keras_attention.data import resolver
from keras_attention.data import sick
from keras_attention.data import snli

Fault = collections.namedtuple("Fault", ["files", "read", "expected"])

SICK_HEADER = "\t".join(sick.HEADER)
SICK_ROW = "1\tA man runs.\tA man is running.\t4.5\tENTAILMENT"
SNLI_ROW = json.dumps(
    {"sentence1": "A dog.", "sentence2": "An animal.", "gold_label": "neutral"}
)
TRUNCATED = gzip.compress(b"line one\nline two\n" * 50)[:-20]


def gz(text):
    return gzip.compress(text.encode("utf-8"))


FAULTS = {
    "multi30k_truncated_gzip": Fault(
        {"a.en.gz": TRUNCATED, "a.de.gz": gz("x\n")},
        lambda p: multi30k.read_parallel(p["a.en.gz"], p["a.de.gz"]),
        ["a.en.gz", "truncated or corrupt"],
    ),
    "multi30k_not_gzip": Fault(
        {"b.en.gz": b"plain text, not gzip\n", "b.de.gz": gz("x\n")},
        lambda p: multi30k.read_parallel(p["b.en.gz"], p["b.de.gz"]),
        ["b.en.gz", "truncated or corrupt"],
    ),
    "multi30k_line_counts_differ": Fault(
        {"c.en.gz": gz("a\nb\nc\n"), "c.de.gz": gz("a\nb\n")},
        lambda p: multi30k.read_parallel(p["c.en.gz"], p["c.de.gz"]),
        ["c.en.gz' has 3 lines", "c.de.gz' has 2 lines"],
    ),
    "snli_jsonl_truncated_gzip": Fault(
        {"d.jsonl.gz": TRUNCATED},
        lambda p: snli.read_snli_jsonl(p["d.jsonl.gz"]),
        ["d.jsonl.gz", "truncated or corrupt"],
    ),
    "snli_jsonl_malformed_json": Fault(
        {"e.jsonl": SNLI_ROW + "\n{not json\n"},
        lambda p: snli.read_snli_jsonl(p["e.jsonl"]),
        ["e.jsonl", "line 2"],
    ),
    "snli_jsonl_missing_field": Fault(
        {"f.jsonl": SNLI_ROW + "\n" + json.dumps({"sentence1": "x"}) + "\n"},
        lambda p: snli.read_snli_jsonl(p["f.jsonl"]),
        ["f.jsonl", "line 2", "sentence2"],
    ),
    "snli_jsonl_unknown_label": Fault(
        {"g.jsonl": SNLI_ROW.replace("neutral", "maybe") + "\n"},
        lambda p: snli.read_snli_jsonl(p["g.jsonl"]),
        ["g.jsonl", "line 1", "maybe"],
    ),
    "snli_tokenized_line_counts_differ": Fault(
        {"h.s1": "a\nb\n", "h.s2": "a\n", "h.labels": "neutral\nneutral\n"},
        lambda p: snli.read_snli_tokenized(p["h.s1"], p["h.s2"], p["h.labels"]),
        ["h.s1' has 2 lines", "h.s2' has 1 lines"],
    ),
    "snli_tokenized_unknown_label": Fault(
        {"i.s1": "a\nb\n", "i.s2": "a\nb\n", "i.labels": "neutral\nyes\n"},
        lambda p: snli.read_snli_tokenized(p["i.s1"], p["i.s2"], p["i.labels"]),
        ["i.labels", "line 2"],
    ),
    "sick_wrong_header": Fault(
        {"j.txt": "pair\tsentence\n" + SICK_ROW + "\n"},
        lambda p: sick.read_sick_file(p["j.txt"]),
        ["j.txt", "line 1"],
    ),
    "sick_score_out_of_range": Fault(
        {"k.txt": SICK_HEADER + "\n" + SICK_ROW.replace("4.5", "6.5") + "\n"},
        lambda p: sick.read_sick_file(p["k.txt"]),
        ["k.txt", "line 2", "6.5"],
    ),
    "sick_missing_column": Fault(
        {"l.txt": SICK_HEADER + "\n" + SICK_ROW + "\n1\tonly two\n"},
        lambda p: sick.read_sick_file(p["l.txt"]),
        ["l.txt", "line 3"],
    ),
    "glove_value_not_a_number": Fault(
        {"m.txt": "the 0.1 0.2\nof 0.3 abc\n"},
        lambda p: glove.read_glove_file(p["m.txt"]),
        ["m.txt", "line 2"],
    ),
    "glove_vector_length_differs": Fault(
        {"n.txt": "the 0.1 0.2\nof 0.3\n"},
        lambda p: glove.read_glove_file(p["n.txt"]),
        ["n.txt", "line 2"],
    ),
    "glove_truncated_gzip": Fault(
        {"o.txt.gz": TRUNCATED},
        lambda p: glove.read_glove_file(p["o.txt.gz"]),
        ["o.txt.gz", "truncated or corrupt"],
    ),
    "text_not_utf8": Fault(
        {"p.en.gz": gzip.compress(b"caf\xe9\n"), "p.de.gz": gz("x\n")},
        lambda p: multi30k.read_parallel(p["p.en.gz"], p["p.de.gz"]),
        ["p.en.gz", "not valid UTF-8"],
    ),
}


@pytest.mark.parametrize("name", sorted(FAULTS))
def test_damaged_file_is_refused_naming_file_and_line(tmp_path, name):
    fault = FAULTS[name]
    paths = {}
    for file_name, content in fault.files.items():
        path = tmp_path / file_name
        if isinstance(content, str):
            content = content.encode("utf-8")
        path.write_bytes(content)
        paths[file_name] = str(path)
    with pytest.raises(ValueError) as info:
        fault.read(paths)
    message = str(info.value)
    for part in fault.expected:
        assert part in message, message


def test_checksum_mismatch_names_the_file_and_both_hashes(
    tmp_path, monkeypatch
):
    expected = hashlib.sha256(b"the published bytes\n").hexdigest()
    monkeypatch.setitem(
        checksums.KNOWN_FILES,
        "fake/known.txt",
        checksums.KnownFile(expected, None),
    )
    path = tmp_path / "fake" / "known.txt"
    path.parent.mkdir()
    path.write_bytes(b"other bytes\n")
    received = hashlib.sha256(b"other bytes\n").hexdigest()
    with pytest.raises(ValueError) as info:
        resolver.get_file("fake/known.txt", data_dir=tmp_path)
    message = str(info.value)
    assert str(path) in message
    assert expected in message and received in message


def test_pairs_without_a_gold_label_are_skipped_and_counted(tmp_path):
    no_gold = SNLI_ROW.replace('"neutral"', '"-"')
    path = tmp_path / "q.jsonl"
    path.write_text("\n".join([SNLI_ROW, no_gold, no_gold, SNLI_ROW]) + "\n")
    rows = snli.read_snli_jsonl(str(path))
    assert rows["skipped"] == 2
    assert rows["label"] == ["neutral", "neutral"]
