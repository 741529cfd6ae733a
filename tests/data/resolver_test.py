"""Tests for locating, verifying and reading data files."""

import gzip
import hashlib
import os
import shutil

import pytest

from keras_attention.data import checksums
from keras_attention.data import resolver


@pytest.fixture
def staged_dir():
    path = os.environ.get("KERAS_ATTENTION_DATA")
    if not path:
        pytest.skip("KERAS_ATTENTION_DATA is not set")
    return path


@pytest.fixture
def fake_known_file(monkeypatch):
    """Registers `fake/known.txt` with the sha256 of b"hello\\n"."""
    digest = hashlib.sha256(b"hello\n").hexdigest()
    monkeypatch.setitem(
        checksums.KNOWN_FILES,
        "fake/known.txt",
        checksums.KnownFile(digest, "https://example.invalid/known.txt"),
    )
    return digest


def _write(path, content):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return path


def test_known_files_list_every_file_in_sha256sums(staged_dir):
    with open(os.path.join(staged_dir, "SHA256SUMS")) as f:
        listed = dict(reversed(line.split()) for line in f if line.strip())
    table = {
        path: known.sha256 for path, known in checksums.KNOWN_FILES.items()
    }
    assert table == listed


def test_every_staged_file_matches_its_known_sha256(staged_dir):
    for relative_path in checksums.KNOWN_FILES:
        path = resolver.get_file(relative_path, data_dir=staged_dir)
        assert os.path.isfile(path)


def test_canonical_urls_are_pinned_to_commits():
    for relative_path, known in checksums.KNOWN_FILES.items():
        if known.url is None:
            continue
        assert known.url.startswith("https://raw.githubusercontent.com/")
        commit = known.url.split("/")[5]
        assert len(commit) == 40, relative_path


def test_explicit_data_dir_takes_precedence_over_env(tmp_path, monkeypatch):
    explicit = tmp_path / "explicit"
    from_env = tmp_path / "env"
    _write(explicit / "x" / "a.txt", b"explicit\n")
    _write(from_env / "x" / "a.txt", b"env\n")
    monkeypatch.setenv("KERAS_ATTENTION_DATA", str(from_env))
    path = resolver.get_file("x/a.txt", data_dir=explicit)
    assert path == str(explicit / "x" / "a.txt")
    assert resolver.get_data_dir(explicit) == str(explicit)


def test_env_var_is_used_without_data_dir(tmp_path, monkeypatch):
    _write(tmp_path / "x" / "a.txt", b"env\n")
    monkeypatch.setenv("KERAS_ATTENTION_DATA", str(tmp_path))
    assert resolver.get_data_dir() == str(tmp_path)
    assert resolver.get_file("x/a.txt") == str(tmp_path / "x" / "a.txt")


def test_no_data_dir_without_env(monkeypatch):
    monkeypatch.delenv("KERAS_ATTENTION_DATA", raising=False)
    assert resolver.get_data_dir() is None


def test_nonexistent_data_dir_raises(tmp_path):
    missing = tmp_path / "nowhere"
    with pytest.raises(FileNotFoundError, match="Received: data_dir="):
        resolver.get_data_dir(missing)


def test_missing_file_error_names_full_path_and_lookup(tmp_path):
    with pytest.raises(FileNotFoundError) as info:
        resolver.get_file("sick/SICK_train.txt", data_dir=tmp_path)
    message = str(info.value)
    assert str(tmp_path / "sick" / "SICK_train.txt") in message
    assert "KERAS_ATTENTION_DATA" in message
    assert "data_dir" in message


def test_sha256_mismatch_of_altered_copy_names_file_and_hashes(
    staged_dir, tmp_path
):
    relative_path = "sick/SICK_trial.txt"
    copy = tmp_path / "sick" / "SICK_trial.txt"
    copy.parent.mkdir()
    shutil.copyfile(os.path.join(staged_dir, relative_path), copy)
    content = bytearray(copy.read_bytes())
    content[100] ^= 1
    copy.write_bytes(bytes(content))
    expected = checksums.KNOWN_FILES[relative_path].sha256
    received = hashlib.sha256(bytes(content)).hexdigest()
    with pytest.raises(ValueError) as info:
        resolver.get_file(relative_path, data_dir=tmp_path)
    message = str(info.value)
    assert str(copy) in message
    assert expected in message
    assert received in message


def test_sha256_mismatch_is_detected(tmp_path, fake_known_file):
    _write(tmp_path / "fake" / "known.txt", b"tampered\n")
    with pytest.raises(ValueError, match="Checksum mismatch"):
        resolver.get_file("fake/known.txt", data_dir=tmp_path)


def test_verify_false_skips_checksum(tmp_path, fake_known_file):
    path = _write(tmp_path / "fake" / "known.txt", b"tampered\n")
    got = resolver.get_file("fake/known.txt", data_dir=tmp_path, verify=False)
    assert got == str(path)


def test_hash_is_cached_until_file_changes(
    tmp_path, fake_known_file, monkeypatch
):
    path = _write(tmp_path / "fake" / "known.txt", b"hello\n")
    calls = []
    original = hashlib.sha256

    def counting_sha256(*args):
        calls.append(args)
        return original(*args)

    monkeypatch.setattr(resolver.hashlib, "sha256", counting_sha256)
    for _ in range(3):
        resolver.get_file("fake/known.txt", data_dir=tmp_path)
    assert len(calls) == 1
    path.write_bytes(b"hello, changed\n")
    with pytest.raises(ValueError, match="Checksum mismatch"):
        resolver.get_file("fake/known.txt", data_dir=tmp_path)
    assert len(calls) == 2


def test_unknown_path_is_allowed_with_data_dir(tmp_path):
    path = _write(tmp_path / "mine" / "extra.txt", b"anything\n")
    assert resolver.get_file("mine/extra.txt", data_dir=tmp_path) == str(path)


def test_unknown_path_cannot_be_downloaded(monkeypatch):
    monkeypatch.delenv("KERAS_ATTENTION_DATA", raising=False)
    with pytest.raises(ValueError, match="cannot be downloaded"):
        resolver.get_file("mine/extra.txt")


def test_glove_without_data_dir_says_how_to_provide_it(monkeypatch):
    monkeypatch.delenv("KERAS_ATTENTION_DATA", raising=False)
    with pytest.raises(FileNotFoundError) as info:
        resolver.get_file("glove/glove.6B.50d.subset.txt.gz")
    message = str(info.value)
    assert "KERAS_ATTENTION_DATA" in message
    assert "data_dir" in message
    assert "no public download URL" in message


def test_download_calls_keras_get_file_with_sha256(monkeypatch):
    import keras

    monkeypatch.delenv("KERAS_ATTENTION_DATA", raising=False)
    received = {}

    def fake_get_file(**kwargs):
        received.update(kwargs)
        return "/cache/path"

    monkeypatch.setattr(keras.utils, "get_file", fake_get_file)
    path = resolver.get_file("snli/jsonl/snli_1.0_train_first1024.jsonl.gz")
    known = checksums.KNOWN_FILES[
        "snli/jsonl/snli_1.0_train_first1024.jsonl.gz"
    ]
    assert path == "/cache/path"
    assert received["origin"] == known.url
    assert received["origin"].endswith("/data/snli/tiny/1024.jsonl.gz")
    assert received["file_hash"] == known.sha256
    assert received["fname"] == "snli_1.0_train_first1024.jsonl.gz"
    assert received["cache_subdir"] == os.path.join(
        "keras_attention", "snli", "jsonl"
    )


def test_failed_download_is_a_connection_error_naming_file_and_url(
    monkeypatch,
):
    import keras

    monkeypatch.delenv("KERAS_ATTENTION_DATA", raising=False)

    def offline(**kwargs):
        raise Exception(f"URL fetch failure on {kwargs['origin']}: None")

    monkeypatch.setattr(keras.utils, "get_file", offline)
    relative = "snli/jsonl/snli_1.0_train_first1024.jsonl.gz"
    with pytest.raises(ConnectionError) as info:
        resolver.get_file(relative)
    message = str(info.value)
    assert f"relative_path={relative!r}" in message
    assert checksums.KNOWN_FILES[relative].url in message
    assert "KERAS_ATTENTION_DATA" in message


@pytest.mark.parametrize("bad", ["/abs/file.txt", "../up.txt", ""])
def test_non_relative_path_is_rejected(tmp_path, bad):
    with pytest.raises(ValueError, match="Received: relative_path="):
        resolver.get_file(bad, data_dir=tmp_path)


def test_read_lines_handles_crlf_and_missing_final_newline(tmp_path):
    path = _write(tmp_path / "a.txt", b"one\r\ntwo\r\nthree")
    assert resolver.read_lines(path) == ["one", "two", "three"]
    gz = _write(tmp_path / "a.txt.gz", gzip.compress(b"x\ny\n"))
    assert resolver.read_lines(gz) == ["x", "y"]


def test_read_lines_truncated_gzip_names_file(tmp_path):
    noise = b"".join(hashlib.sha256(bytes([i])).digest() for i in range(128))
    content = gzip.compress(noise)
    path = _write(tmp_path / "cut.txt.gz", content[: len(content) // 2])
    with pytest.raises(ValueError, match="truncated or corrupt") as info:
        resolver.read_lines(path)
    assert str(path) in str(info.value)


def test_read_lines_not_gzip_names_file(tmp_path):
    path = _write(tmp_path / "fake.gz", b"this is not gzip data\n")
    with pytest.raises(ValueError, match="fake.gz"):
        resolver.read_lines(path)


def test_read_lines_invalid_utf8_names_file(tmp_path):
    path = _write(tmp_path / "latin1.txt", "café\n".encode("latin-1"))
    with pytest.raises(ValueError, match="not valid UTF-8"):
        resolver.read_lines(path)


def test_unknown_split_message_names_argument():
    with pytest.raises(ValueError) as info:
        resolver.check_split("foo", ("train", "trial", "test"))
    assert str(info.value) == (
        "Unknown split. Expected one of ('train', 'trial', 'test'). "
        "Received: split='foo'"
    )
