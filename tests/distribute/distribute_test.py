"""The flags and helpers of `keras_attention.distribute` on one device."""

import argparse
import pathlib

import helpers
import keras
import pytest

from keras_attention import distribute

ROOT = pathlib.Path(__file__).parents[2]


def load_app(name):
    return helpers.load_script(f"applications/{name}/train.py", f"{name}_train")


@pytest.fixture
def restore_policy():
    yield
    distribute.set_mixed_precision("none")


def test_unknown_strategy_is_a_clear_error():
    with pytest.raises(ValueError, match="Received: strategy='ring'"):
        distribute.resolve_strategy("ring")


def test_strategy_of_another_backend_is_a_clear_error():
    other = {
        "tensorflow": "data_parallel",
        "jax": "mirrored",
        "torch": "multi_worker",
    }[keras.backend.backend()]
    with pytest.raises(
        ValueError, match=f"not available on the .*strategy='{other}'"
    ):
        distribute.resolve_strategy(other)


def test_auto_strategy_is_none_on_one_cpu_device():
    assert distribute.resolve_strategy("auto") == "none"
    assert distribute.num_replicas() == 1
    with distribute.strategy_scope("auto"):
        layer = keras.layers.Dense(2)
        layer.build((None, 3))
    assert distribute.is_chief()


def test_worker_path_is_the_path_itself_without_a_cluster():
    assert distribute.worker_path("runs/model.keras") == "runs/model.keras"


def test_chief_is_the_chief_task_or_worker_zero():
    workers = {"worker": ["a:1", "b:2"]}
    with_chief = {"chief": ["c:3"], "worker": ["a:1", "b:2"]}
    assert distribute.is_chief_task("worker", 0, workers)
    assert not distribute.is_chief_task("worker", 1, workers)
    assert not distribute.is_chief_task("worker", 0, with_chief)
    assert distribute.is_chief_task("chief", 0, with_chief)


@pytest.mark.parametrize(
    "name, policy",
    [
        ("float16", "mixed_float16"),
        ("bfloat16", "mixed_bfloat16"),
        ("none", "float32"),
    ],
)
def test_mixed_precision_flag_sets_the_policy(name, policy, restore_policy):
    assert distribute.set_mixed_precision(name) == policy
    assert keras.config.dtype_policy().name == policy
    assert keras.layers.Dense(2).compute_dtype == policy.replace("mixed_", "")


def test_unknown_mixed_precision_is_a_clear_error():
    with pytest.raises(ValueError, match="Received: mixed_precision='fp8'"):
        distribute.set_mixed_precision("fp8")


def test_loss_scaling_only_under_mixed_float16(restore_policy):
    plain = keras.optimizers.SGD()
    assert distribute.loss_scaled(plain) is plain
    distribute.set_mixed_precision("bfloat16")
    assert distribute.loss_scaled(plain) is plain
    distribute.set_mixed_precision("float16")
    scaled = distribute.loss_scaled(plain)
    assert isinstance(scaled, keras.optimizers.LossScaleOptimizer)
    assert distribute.loss_scaled(scaled) is scaled


def test_jit_compile_flag_values():
    assert distribute.jit_compile("auto") == "auto"
    assert distribute.jit_compile("true") is True
    assert distribute.jit_compile("False") is False
    with pytest.raises(ValueError, match="Received: jit_compile='xla'"):
        distribute.jit_compile("xla")


def test_replica_helpers_are_identities_on_one_device():
    value = keras.ops.convert_to_tensor([1.0, 2.0])
    assert keras.ops.convert_to_numpy(
        distribute.scale_for_replicas(value)
    ).tolist() == [1.0, 2.0]
    assert keras.ops.convert_to_numpy(
        distribute.replica_sum(value)
    ).tolist() == [1.0, 2.0]


def test_flags_parse_with_their_defaults_and_choices():
    parser = argparse.ArgumentParser()
    distribute.add_arguments(parser)
    args = parser.parse_args([])
    assert (args.strategy, args.mixed_precision, args.jit_compile) == (
        "auto",
        "none",
        "auto",
    )
    args = parser.parse_args(
        ["--strategy", "mirrored", "--mixed-precision", "bfloat16"]
    )
    assert (args.strategy, args.mixed_precision) == ("mirrored", "bfloat16")


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
    assert distribute.batch_multiple() == 1
    assert distribute.trim_to_batch_multiple(rows) is rows
    distribute.check_batch_size(3)  # no error
