"""Flags generated from a dataclass, the same in every application."""

import dataclasses

import pytest

from keras_attention.training import cli


@dataclasses.dataclass
class Config:
    data_dir: str = None
    epochs: int = 30
    rate: float = cli.flag(0.5, "A rate.", aliases=("--old-rate",))
    bucket_width: int = 8
    smoke: bool = False
    shuffle: bool = True
    kind: str = cli.flag("a", choices=lambda: ("a", "b"))


def test_defaults_types_and_switches(tmp_path):
    assert cli.parse_config(Config, []) == Config()
    folder = str(tmp_path)
    config = cli.parse_config(
        Config,
        ["--data-dir", folder, "--epochs", "3", "--rate", "0.25"]
        + ["--no-shuffle"],
    )
    assert (config.data_dir, config.epochs, config.rate) == (folder, 3, 0.25)
    assert config.shuffle is False


def test_smoke_sets_one_epoch_unless_epochs_is_given():
    assert cli.parse_config(Config, ["--smoke"]).epochs == cli.SMOKE_EPOCHS
    assert cli.parse_config(Config, ["--smoke", "--epochs", "4"]).epochs == 4


def test_an_alias_sets_the_same_field():
    assert cli.parse_config(Config, ["--old-rate", "0.1"]).rate == 0.1


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--bucket-width", "-1"], "--bucket-width -1"),
        (["--epochs", "ten"], "invalid int value: 'ten'"),
        (["--kind", "c"], "invalid choice: 'c'"),
    ],
)
def test_bad_values_are_named(argv, message, capsys):
    with pytest.raises(SystemExit) as info:
        cli.parse_config(Config, argv)
    assert info.value.code == 2
    assert message in capsys.readouterr().err


def test_a_programs_check_ends_with_its_message(capsys):
    def check(config):
        return f"--kind b needs --smoke. Received: --kind {config.kind}"

    with pytest.raises(SystemExit):
        cli.parse_config(Config, ["--kind", "b"], check=check)
    assert "--kind b needs --smoke" in capsys.readouterr().err


def test_help_names_every_field_with_its_default(capsys):
    with pytest.raises(SystemExit):
        cli.parse_config(Config, ["--help"], description="A program.")
    text = capsys.readouterr().out
    for field in dataclasses.fields(Config):
        assert cli.flag_name(field.name) in text
    assert "A rate. Default: 0.5." in text
    assert cli.SHARED_FLAGS["data_dir"]["help"][:30] in " ".join(text.split())


def test_help_lists_an_applications_own_flags_before_the_shared_ones(capsys):
    @dataclasses.dataclass
    class Task(Config):
        model: str = "resan"
        epochs: int = 12  # a shared field given a new default

    with pytest.raises(SystemExit):
        cli.parse_config(Task, ["--help"])
    text = capsys.readouterr().out
    own = [text.index(f"--{name} ") for name in ("model", "epochs")]
    shared = [text.index(f"--{name} ") for name in ("data-dir", "rate")]
    assert max(own) < min(shared), text
    assert cli.parse_config(Task, []).epochs == 12


def test_a_non_dataclass_is_refused():
    with pytest.raises(TypeError, match="config_cls"):
        cli.add_config_flags(None, dict)


@pytest.mark.parametrize("name", ["cli", "precision", "strategies"])
def test_docstring_examples_run(name):
    import doctest
    import importlib

    module = importlib.import_module(f"keras_attention.training.{name}")
    results = doctest.testmod(module)
    assert results.attempted > 0 and results.failed == 0


@dataclasses.dataclass
class Checked:
    data_dir: str = None
    epochs: int = 30
    dropout: float = 0.1
    attention_dropout: float = 0.0
    learning_rate: float = None
    time_limit_minutes: float = 0.0
    vectors: str = "glove50"
    initial_weights: str = None
    ratio: float = cli.flag(0.5, maximum=1.0)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--epochs", "0"], "must be at least 1. Received: --epochs 0"),
        (["--epochs", "-1"], "must be at least 1. Received: --epochs -1"),
        (["--epochs", "abc"], "argument --epochs: invalid int value: 'abc'"),
        (["--dropout", "1"], "must be in [0.0, 1.0). Received: --dropout 1"),
        (["--dropout", "-0.1"], "Received: --dropout -0.1"),
        # A name that ends like a known one gets its rule.
        (["--attention-dropout", "1.5"], "Received: --attention-dropout 1.5"),
        (["--learning-rate", "0"], "must be greater than 0.0"),
        (["--time-limit-minutes", "-2"], "must be at least 0.0"),
        (["--ratio", "2"], "must be at most 1.0. Received: --ratio 2"),
        (["--data-dir", "/no/such/dir"], "must be an existing folder"),
        (["--vectors", "/no/such.txt"], "'/no/such.txt' does not exist"),
        (["--vectors", "glove5"], "must be one of ['glove50', 'spacy300']"),
        (["--initial-weights", "/no/w.h5"], "must be an existing file"),
    ],
)
def test_ranges_and_paths_are_checked_by_name(argv, message, capsys):
    with pytest.raises(SystemExit) as info:
        cli.parse_config(Checked, argv)
    assert info.value.code == 2
    error, usage = capsys.readouterr().err.splitlines()
    assert message in error
    assert error.startswith(f"{cli.make_parser('').prog}: error: ")
    assert usage.startswith("usage: ") and "--help" in usage


def test_values_in_range_and_existing_paths_pass(tmp_path):
    vectors = tmp_path / "vectors.txt"
    vectors.write_text("word 1.0 2.0\n")
    config = cli.parse_config(
        Checked,
        ["--epochs", "1", "--dropout", "0", "--learning-rate", "1e-4"]
        + ["--vectors", str(vectors), "--data-dir", str(tmp_path)]
        + ["--ratio", "1", "--vectors", "spacy300"],
    )
    assert (config.epochs, config.dropout, config.vectors) == (1, 0, "spacy300")


def test_user_errors_turn_data_errors_into_one_line(capsys):
    from keras_attention.data import DataError

    parser = cli.make_parser("A program.", Checked)
    with pytest.raises(SystemExit) as info:
        with cli.user_errors(parser, []):
            raise DataError("The file 'x.jsonl' is empty:\nexpected pairs.")
    assert info.value.code == 2
    error = capsys.readouterr().err
    assert "error: The file 'x.jsonl' is empty: expected pairs." in error
    assert "Traceback" not in error
    # With --debug the error propagates, traceback and all.
    with pytest.raises(DataError, match="x.jsonl"):
        with cli.user_errors(parser, ["--debug"]):
            raise DataError("The file 'x.jsonl' is empty.")
    # Anything else is a bug: it propagates as it is.
    with pytest.raises(KeyError):
        with cli.user_errors(parser, []):
            raise KeyError("bug")


def test_an_interrupt_ends_with_status_130_and_the_resume_hint(
    tmp_path, capsys
):
    parser = cli.make_parser("A program.", Checked)
    (tmp_path / "backup").mkdir()
    with pytest.raises(SystemExit) as info:
        with cli.user_errors(parser, [], output_dir=str(tmp_path)):
            raise KeyboardInterrupt
    assert info.value.code == cli.INTERRUPTED_STATUS == 130
    (line,) = capsys.readouterr().err.splitlines()
    assert "interrupted; run the same command again to resume" in line
    assert str(tmp_path / "backup") in line


def test_main_runs_the_program_and_ends_data_errors(capsys):
    from keras_attention.data import DataError

    def program(config):
        if config.epochs == 2:
            raise DataError("No pairs to use in the train split.")
        return config.epochs

    assert cli.main(program, Checked, ["--epochs", "3"]) == 3
    with pytest.raises(SystemExit) as info:
        cli.main(program, Checked, ["--epochs", "2"])
    assert info.value.code == 2
    assert "No pairs to use" in capsys.readouterr().err
    with pytest.raises(DataError):
        cli.main(program, Checked, ["--epochs", "2", "--debug"])
