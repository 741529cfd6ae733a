"""Strategies, precision, replica sums and the shared flags, on one device."""

import dataclasses
import pathlib

import helpers
import keras
import pytest

from keras_attention.ops import replicas
from keras_attention.training import cli
from keras_attention.training import precision
from keras_attention.training import strategies

ROOT = pathlib.Path(__file__).parents[2]


def load_app(name):
    return helpers.load_script(f"applications/{name}/train.py", f"{name}_train")


@pytest.fixture
def restore_policy():
    yield
    precision.set_mixed_precision("none")


def test_unknown_strategy_is_a_clear_error():
    with pytest.raises(ValueError, match="Received: strategy='ring'"):
        strategies.resolve_strategy("ring")


def test_strategy_of_another_backend_is_a_clear_error():
    other = {
        "tensorflow": "data_parallel",
        "jax": "mirrored",
        "torch": "multi_worker",
    }[keras.backend.backend()]
    with pytest.raises(
        ValueError, match=f"not available on the .*strategy='{other}'"
    ):
        strategies.resolve_strategy(other)


def test_auto_strategy_is_none_on_one_cpu_device():
    assert strategies.resolve_strategy("auto") == "none"
    assert strategies.num_replicas() == 1
    with strategies.strategy_scope("auto"):
        layer = keras.layers.Dense(2)
        layer.build((None, 3))
    assert strategies.is_chief()


def test_worker_path_is_the_path_itself_without_a_cluster():
    assert strategies.worker_path("runs/model.keras") == "runs/model.keras"


def test_chief_is_the_chief_task_or_worker_zero():
    workers = {"worker": ["a:1", "b:2"]}
    with_chief = {"chief": ["c:3"], "worker": ["a:1", "b:2"]}
    assert strategies.is_chief_task("worker", 0, workers)
    assert not strategies.is_chief_task("worker", 1, workers)
    assert not strategies.is_chief_task("worker", 0, with_chief)
    assert strategies.is_chief_task("chief", 0, with_chief)


@pytest.mark.parametrize(
    "name, policy",
    [
        ("float16", "mixed_float16"),
        ("bfloat16", "mixed_bfloat16"),
        ("none", "float32"),
    ],
)
def test_mixed_precision_flag_sets_the_policy(name, policy, restore_policy):
    assert precision.set_mixed_precision(name) == policy
    assert keras.config.dtype_policy().name == policy
    assert keras.layers.Dense(2).compute_dtype == policy.replace("mixed_", "")


def test_unknown_mixed_precision_is_a_clear_error():
    with pytest.raises(ValueError, match="Received: mixed_precision='fp8'"):
        precision.set_mixed_precision("fp8")


def test_loss_scaling_only_under_mixed_float16(restore_policy):
    plain = keras.optimizers.SGD()
    assert precision.loss_scaled(plain) is plain
    precision.set_mixed_precision("bfloat16")
    assert precision.loss_scaled(plain) is plain
    precision.set_mixed_precision("float16")
    scaled = precision.loss_scaled(plain)
    assert isinstance(scaled, keras.optimizers.LossScaleOptimizer)
    assert precision.loss_scaled(scaled) is scaled


def test_jit_compile_flag_values():
    assert precision.jit_compile("auto") == "auto"
    assert precision.jit_compile("true") is True
    assert precision.jit_compile("False") is False
    with pytest.raises(ValueError, match="Received: jit_compile='xla'"):
        precision.jit_compile("xla")


def test_replica_helpers_are_identities_on_one_device():
    value = keras.ops.convert_to_tensor([1.0, 2.0])
    assert keras.ops.convert_to_numpy(
        replicas.scale_for_replicas(value)
    ).tolist() == [1.0, 2.0]
    assert keras.ops.convert_to_numpy(replicas.replica_sum(value)).tolist() == [
        1.0,
        2.0,
    ]


@dataclasses.dataclass
class DeviceConfig:
    strategy: str = "auto"
    mixed_precision: str = "none"
    jit_compile: str = "auto"


def test_flags_parse_with_their_defaults_and_choices(capsys):
    config = cli.parse_config(DeviceConfig, [])
    assert (config.strategy, config.mixed_precision, config.jit_compile) == (
        "auto",
        "none",
        "auto",
    )
    config = cli.parse_config(
        DeviceConfig,
        ["--strategy", "mirrored", "--mixed-precision", "bfloat16"],
    )
    assert (config.strategy, config.mixed_precision) == ("mirrored", "bfloat16")
    with pytest.raises(SystemExit):
        cli.parse_config(DeviceConfig, ["--strategy", "ring"])
    assert "--strategy: invalid choice: 'ring'" in capsys.readouterr().err


@pytest.mark.parametrize("app", ["translation", "nli", "relatedness"])
def test_every_application_takes_the_flags(app):
    flags = [
        "--strategy",
        "none",
        "--mixed-precision",
        "bfloat16",
        "--jit-compile",
        "false",
    ]
    train = load_app(app)
    config = train.parse_args(flags)
    if app == "translation":
        config = config[0]
    assert config.strategy == "none"
    assert config.mixed_precision == "bfloat16"
    assert config.jit_compile == "false"


def test_batch_helpers_change_nothing_on_one_device():
    rows = {"a": [1, 2, 3], "b": [4, 5, 6]}
    assert strategies.batch_multiple() == 1
    assert strategies.trim_to_batch_multiple(rows) is rows
    strategies.check_batch_size(3)  # no error


# The flags the issue asks every application to share, and --bucket-width
# where batches are bucketed by a width.
SHARED_FLAGS = [
    "--data-dir",
    "--output-dir",
    "--seed",
    "--epochs",
    "--strategy",
    "--mixed-precision",
    "--jit-compile",
]
BUCKETED = ("nli", "relatedness")


@pytest.mark.parametrize("app", ["translation", "nli", "relatedness"])
def test_every_application_has_the_shared_flags_with_one_help(app, capsys):
    train = load_app(app)
    with pytest.raises(SystemExit):
        train.parse_args(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    expected = SHARED_FLAGS + (["--bucket-width"] if app in BUCKETED else [])
    for flag in expected:
        assert flag in text, flag
        name = flag[2:].replace("-", "_")
        # The help comes from cli.SHARED_FLAGS, not from the application.
        assert cli.SHARED_FLAGS[name]["help"] in text, flag
