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


def test_defaults_types_and_switches():
    assert cli.parse_config(Config, []) == Config()
    config = cli.parse_config(
        Config,
        ["--data-dir", "d", "--epochs", "3", "--rate", "0.25", "--no-shuffle"],
    )
    assert (config.data_dir, config.epochs, config.rate) == ("d", 3, 0.25)
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
