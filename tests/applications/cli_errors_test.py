"""Bad invocations of the applications end at once with one clear line.

Every entry point (train, evaluate and export of each application, and the
translation learning curve) checks its flags, paths and data before it
builds a model: a bad value ends the program with exit status 2, one line
that names the flag or file, the value and what was expected, then the
usage line, and no traceback (unless `--debug`).

Most cases call each program's `main(argv)` in this process (one import of
each script, then milliseconds per case); `test_end_to_end` runs a few as
real commands, for the exit status and the time a user waits.
"""

import functools
import os
import pathlib
import subprocess
import sys
import time

import helpers
import keras
import pytest

# The checks run before any model is built, in the applications' own
# Python, the same on every backend: run once, on the tensorflow run.
pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="backend-independent argument checks: run on tensorflow only",
)
ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPTS = {
    "nli": "applications/nli/train.py",
    "nli_evaluate": "applications/nli/evaluate.py",
    "nli_export": "applications/nli/export.py",
    "relatedness": "applications/relatedness/train.py",
    "relatedness_evaluate": "applications/relatedness/evaluate.py",
    "relatedness_export": "applications/relatedness/export.py",
    "translation": "applications/translation/train.py",
    "translation_evaluate": "applications/translation/evaluate.py",
    "translation_export": "applications/translation/export.py",
    "learning_curve": "applications/translation/learning_curve.py",
}
# Each bad invocation must end within this many seconds.
LIMIT_SECONDS = 20
UNLABELED = (
    '{"sentence1": "A man sleeps.", "sentence2": "A person rests.", '
    '"gold_label": "-"}\n'
)
SICK_HEADER = (
    "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n"
)


@functools.cache
def script(name):
    return helpers.load_script(SCRIPTS[name], f"cli_errors_{name}")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """`{name: path}` of bad inputs: data files, vectors and folders."""
    root = tmp_path_factory.mktemp("bad_inputs")
    contents = {
        "empty.jsonl": "",
        "unlabeled.jsonl": UNLABELED * 3,
        "not_json.jsonl": "premise\thypothesis\tlabel\n",
        "empty_vectors.txt": "",
        "word2vec.txt": "2 3\nthe 0.1 0.2 0.3\ncat 0.4 0.5 0.6\n",
        "json_vectors.txt": '{"the": [0.1, 0.2]}\n',
        "ragged_vectors.txt": "the 0.1 0.2\ncat 0.3\n",
    }
    paths = {}
    for name, text in contents.items():
        paths[name] = root / name
        paths[name].write_text(text)
    # Data folders: SICK's training file empty, or its header alone.
    for name, text in (("empty_sick", ""), ("header_sick", SICK_HEADER)):
        (root / name / "sick").mkdir(parents=True)
        (root / name / "sick" / "SICK_train.txt").write_text(text)
        paths[name] = root / name
    paths["not_a_run"] = root / "not_a_run"
    paths["not_a_run"].mkdir()
    (paths["not_a_run"] / "notes.txt").write_text("not a run\n")
    paths["no_data"] = root / "no_data"
    paths["no_data"].mkdir()
    paths["output"] = root / "output"
    return {name: str(path) for name, path in paths.items()}


def with_files(argv, files):
    """`argv` with `{name}` placeholders replaced by the fixture's paths."""
    replaced = []
    for part in argv:
        for name, path in files.items():
            part = part.replace("{" + name + "}", path)
        replaced.append(part)
    return replaced


# (program, argv, text the error line must hold). `{name}` is a path of
# the `files` fixture.
CASES = [
    # Numbers out of range, or not numbers.
    ("nli", ["--epochs", "0"], "--epochs 0"),
    ("nli", ["--epochs", "-1"], "must be at least 1. Received: --epochs -1"),
    ("nli", ["--epochs", "abc"], "--epochs: invalid int value: 'abc'"),
    ("nli", ["--batch-size", "0"], "--batch-size 0"),
    ("nli", ["--dropout", "1"], "must be in [0.0, 1.0). Received: --dropout"),
    ("nli", ["--learning-rate", "-0.1"], "greater than 0.0"),
    ("nli", ["--max-length", "0"], "--max-length 0"),
    ("nli", ["--time-limit-minutes", "-5"], "--time-limit-minutes -5"),
    ("relatedness", ["--epochs", "0"], "--epochs 0"),
    ("relatedness", ["--epochs", "abc"], "invalid int value: 'abc'"),
    ("relatedness", ["--ema-momentum", "1"], "--ema-momentum 1"),
    ("relatedness", ["--encoder-dropout", "-0.5"], "--encoder-dropout"),
    ("translation", ["--epochs", "-1"], "--epochs -1"),
    ("translation", ["--minutes", "-1"], "--minutes -1"),
    ("translation", ["--tokens-per-batch", "0"], "--tokens-per-batch 0"),
    ("translation", ["--label-smoothing", "1.0"], "--label-smoothing 1.0"),
    (
        "translation",
        ["--smoke", "--smoke-steps", "2", "--smoke-epochs", "4"],
        "--smoke-steps 2",
    ),
    ("translation_export", ["--version", "0"], "--version 0"),
    ("translation_evaluate", ["--beam-size", "0"], "--beam-size 0"),
    (
        "nli_evaluate",
        ["--examples", "-1", "--run-dir", "{not_a_run}"],
        "must be at least 0. Received: --examples -1",
    ),
    # Missing files and folders.
    ("nli", ["--vectors", "/does/not/exist"], "'/does/not/exist' does not"),
    ("relatedness", ["--vectors", "/does/not/exist.txt"], "does not exist"),
    ("nli", ["--data-dir", "/does/not/exist"], "--data-dir /does/not/exist"),
    ("nli", ["--train-data", "/no/train.jsonl"], "'/no/train.jsonl' does"),
    ("nli", ["--initial-weights", "/no/w.h5"], "must be an existing file"),
    ("translation", ["--data-dir", "/does/not/exist"], "--data-dir"),
    # Not a run folder.
    ("nli_evaluate", ["--run-dir", "{not_a_run}"], "has no model.keras"),
    ("nli_export", ["--run-dir", "{not_a_run}"], "has no model.keras"),
    ("nli_export", ["--run-dir", "/no/run"], "'/no/run' does not exist"),
    ("relatedness_evaluate", ["--run-dir", "{not_a_run}"], "vocabulary.txt"),
    ("relatedness_export", ["--run-dir", "{not_a_run}"], "has no model"),
    ("translation_evaluate", ["--model-dir", "{not_a_run}"], "tokenizer"),
    ("translation_export", ["--run-dir", "{empty.jsonl}"], "is a file"),
    ("learning_curve", ["--run-dir", "{not_a_run}"], "training.json"),
    # Empty, malformed or unusable data (read before any model is built).
    ("nli", ["--train-data", "{empty.jsonl}"], "empty.jsonl' holds no pair"),
    (
        "nli",
        ["--train-data", "{unlabeled.jsonl}"],
        "unlabeled.jsonl' holds no pair with a gold label (3 without one)",
    ),
    ("nli", ["--train-data", "{not_json.jsonl}"], "Malformed JSON in"),
    (
        "relatedness",
        ["--data-dir", "{empty_sick}"],
        "SICK_train.txt' is empty",
    ),
    # SICK's files are checked against their checksums before they are
    # read: a training file with no scored pair is refused by name.
    ("relatedness", ["--data-dir", "{header_sick}"], "SICK_train.txt'"),
    (
        "translation",
        ["--data-dir", "{no_data}", "--mixed-precision", "none"],
        "Multi30k is not available",
    ),
]
# Vectors files of the wrong format: read after the staged pairs.
VECTOR_CASES = [
    ("nli", ["--vectors", "{empty_vectors.txt}"], "empty_vectors.txt' is"),
    ("nli", ["--vectors", "{word2vec.txt}"], "a word2vec header"),
    ("nli", ["--vectors", "{json_vectors.txt}"], "json_vectors.txt', line 1"),
    ("relatedness", ["--vectors", "{ragged_vectors.txt}"], "line 2"),
    ("relatedness", ["--vectors", "{word2vec.txt}"], "word2vec.txt"),
]


def refuse(program, argv, expected, files, capsys):
    """Runs `main(argv)`; checks the exit status, the line and the time."""
    argv = with_files(argv, files)
    if program in ("nli", "relatedness", "translation"):
        argv += ["--output-dir", files["output"]]
    main = script(program).main
    policy = keras.config.dtype_policy()
    start = time.monotonic()
    try:
        with pytest.raises(SystemExit) as info:
            main(argv)
    finally:
        keras.config.set_dtype_policy(policy)
    seconds = time.monotonic() - start
    err = capsys.readouterr().err
    assert info.value.code == 2, err
    assert seconds < LIMIT_SECONDS
    assert "Traceback" not in err
    error, usage = err.strip().splitlines()[-2:]
    assert ": error: " in error and expected in error, err
    assert usage.startswith("usage: "), err


@pytest.mark.parametrize("program, argv, expected", CASES)
def test_bad_invocation_ends_with_one_line(
    program, argv, expected, files, capsys
):
    refuse(program, argv, expected, files, capsys)


@helpers.needs_data(*helpers.SICK_AND_GLOVE, "snli/infersent_tok/dev.s1")
@pytest.mark.parametrize("program, argv, expected", VECTOR_CASES)
def test_vectors_of_the_wrong_format_end_with_one_line(
    program, argv, expected, files, capsys
):
    refuse(program, argv, expected, files, capsys)


def test_at_least_25_bad_invocations():
    assert len(CASES) + len(VECTOR_CASES) >= 25
    assert {program for program, _, _ in CASES} == set(SCRIPTS)


def test_debug_shows_the_traceback(files):
    from keras_attention.data import DataError

    argv = ["--train-data", files["empty.jsonl"], "--debug"]
    with pytest.raises(DataError, match="empty.jsonl"):
        script("nli").main(argv + ["--output-dir", files["output"]])


def test_end_to_end(files, tmp_path):
    """Real commands: exit status 2, the line, no traceback, in seconds;
    with `--debug` the traceback.

    The time asserted is each process's CPU time (what it costs on an idle
    machine, mostly importing TensorFlow and Keras): its wall time depends
    on what else the machine runs.
    """
    commands = {
        "unlabeled": (
            "applications/nli/train.py",
            ["--train-data", files["unlabeled.jsonl"]],
        ),
        "not a run": (
            "applications/relatedness/export.py",
            ["--run-dir", files["not_a_run"]],
        ),
        "debug": (
            "applications/nli/train.py",
            ["--train-data", files["empty.jsonl"], "--debug"],
        ),
    }
    env = dict(os.environ, KERAS_BACKEND="tensorflow", TF_CPP_MIN_LOG_LEVEL="3")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    processes = {}
    for i, (name, (path, argv)) in enumerate(commands.items()):
        if path.endswith("train.py"):
            argv = argv + ["--output-dir", files["output"]]
        err = open(tmp_path / f"{i}.err", "w+")
        process = subprocess.Popen(
            [sys.executable, str(ROOT / path), *argv],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
        processes[name] = (process, err)
    results = {}
    for name, (process, err) in processes.items():
        # The child's own CPU time, from the kernel's accounting.
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        seconds = usage.ru_utime + usage.ru_stime
        results[name] = (process.returncode, err.read(), seconds)
        err.close()
    for name in ("unlabeled", "not a run"):
        code, err, seconds = results[name]
        assert code == 2, err[-3000:]
        assert "Traceback" not in err, err[-3000:]
        assert seconds < LIMIT_SECONDS, (name, seconds)
    assert "unlabeled.jsonl' holds no pair" in results["unlabeled"][1]
    assert "has no model.keras" in results["not a run"][1]
    code, err, _ = results["debug"]
    assert code == 1
    assert "Traceback" in err and "DataError" in err, err[-3000:]
