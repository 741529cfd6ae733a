"""The NLI application trains ReSAN end to end in --smoke mode."""

import json
import pathlib

import helpers
import keras
import numpy as np
import pytest

from keras_attention import optimizers
from keras_attention.training import pair_tasks

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "applications" / "nli" / "train.py"


def load_script():
    return helpers.load_script(SCRIPT, "nli_train_resan")


# ReSAN trains through an application on jax in relatedness_test.py's smoke
# run; the NLI head is tested on jax in tests/models/resan_test.py.
@helpers.needs_data(*helpers.SICK_AND_GLOVE)
@helpers.not_on_jax
@pytest.mark.parametrize(
    "flags",
    [
        pytest.param([], id="shared"),
        pytest.param(
            ["--sampler-optimizer", "adadelta", "--ema-momentum", "0.9"],
            id="adadelta_ema",
            marks=helpers.second_smoke_run,
        ),
    ],
)
def test_resan_smoke_run_writes_metrics_and_a_loadable_model(tmp_path, flags):
    train = load_script()
    config = train.parse_args(
        [
            *flags,
            "--smoke",
            "--model",
            "resan",
            "--dataset",
            "sick",
            "--hidden-dim",
            "8",
            "--max-length",
            "12",
            "--output-dir",
            str(tmp_path),
            "--verbose",
            "0",
        ]
    )
    metrics = train.train(config)
    written = json.loads((tmp_path / "metrics.json").read_text())
    assert written["model"] == "resan"
    assert written["sampler_optimizer"] == config.sampler_optimizer
    assert written["backend"] == keras.backend.backend()
    assert 0.0 <= written["dev_accuracy"] <= 1.0
    assert 0.0 <= written["test_accuracy"] <= 1.0
    assert written["test_accuracy"] == pytest.approx(metrics["test_accuracy"])
    model = keras.saving.load_model(tmp_path / "model.keras", safe_mode=True)
    assert isinstance(model, train.MODEL_BUILDERS["resan"])
    assert tuple(model.output["probabilities"].shape) == (None, 3)
    assert tuple(model.output["selection_percentage"].shape) == (None, 2)
    for split in ("dev", "test"):
        assert 0.0 <= written[f"{split}_selection_percentage"] <= 1.0
    # The percentage that evaluation reports on length-bucketed batches (a
    # width step of 2 puts the 32 dev pairs in several widths) is the one
    # of padding every sentence to the full length.
    arrays = train.prepare_data(config)[0]
    x_dev, y_dev = arrays["dev"]
    config.bucket_width = 2
    batches = pair_tasks.bucketed(x_dev, y_dev, config).as_dataset()
    bucketed = model.evaluate(batches, verbose=0, return_dict=True)
    padded = model.predict(x_dev, verbose=0)["selection_percentage"]
    assert bucketed["selection_percentage"] == pytest.approx(
        float(np.mean(padded)), abs=1e-6
    )
    # evaluate.py reads a ReSAN run (its outputs are a dict) and reports
    # the accuracy and the samplers' selection percentage.
    evaluate = helpers.load_script(
        ROOT / "applications" / "nli" / "evaluate.py", "nli_evaluate_resan"
    )
    result = evaluate.main(["--run-dir", str(tmp_path), "--split", "dev"])
    assert 0.0 <= result["accuracy"] <= 1.0
    assert 0.0 <= result["selection_percentage"] <= 1.0
    everything = evaluate.main(
        ["--run-dir", str(tmp_path), "--split", "dev", "--selection", "all"]
    )
    assert everything["selection_percentage"] == pytest.approx(1.0)
    sampled = evaluate.main(
        ["--run-dir", str(tmp_path), "--split", "dev", "--selection", "sampled"]
    )
    assert 0.0 < sampled["selection_percentage"] < 1.0


def test_resan_schedule_defaults(tmp_path):
    # Samplers alone for the authors' 5,000 SNLI steps of 128 pairs
    # (1.16 epochs), after a soft phase of half the run, or none when a
    # trained model is loaded.
    train = load_script()
    config = train.parse_args(["--model", "resan", "--epochs", "10"])
    epochs = 5000 / (550152 / 128)
    assert train.resan_schedule(config, 300) == (1500, round(epochs * 300))
    weights = tmp_path / "w.weights.h5"
    weights.write_bytes(b"")  # --initial-weights must name an existing file
    config = train.parse_args(
        ["--model", "resan", "--initial-weights", str(weights)]
    )
    assert train.resan_schedule(config, 300)[0] == 0
    assert config.sparsity_penalty == 0.02


def test_initial_weights_start_the_schedule_again(tmp_path):
    # A second stage from an earlier run's weights has its own phases: the
    # earlier run's step counter (past its own samplers-only phase) must
    # not come with them.
    from keras_attention import models

    rng = np.random.default_rng(0)
    ids = rng.integers(1, 30, size=(2, 8, 6))
    x = {"premise": ids[0], "hypothesis": ids[1]}
    y = np.arange(8) % 3

    def build():
        return models.ReSANClassifier(
            vocabulary_size=30,
            embedding_dim=6,
            hidden_dim=4,
            seed=1,
            soft_only_steps=0,
            sampler_only_steps=2,
        )

    earlier = build()
    earlier.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    earlier.fit(x, y, batch_size=4, epochs=2, verbose=0)
    assert int(earlier.get_layer("training_schedule").step.numpy()) == 4
    path = str(tmp_path / "earlier.weights.h5")
    earlier.save_weights(path)
    model = build()
    pair_tasks.load_initial_weights(model, path, x, vocabulary=None)
    assert int(model.get_layer("training_schedule").step.numpy()) == 0
    for mine, theirs in zip(model.trainable_weights, earlier.trainable_weights):
        np.testing.assert_array_equal(
            keras.ops.convert_to_numpy(mine), keras.ops.convert_to_numpy(theirs)
        )


def test_sampler_optimizer_gives_the_samplers_their_own():
    train = load_script()
    config = train.parse_args(
        ["--model", "resan", "--sampler-optimizer", "adadelta"]
    )
    optimizer = train.make_optimizer(config)
    assert isinstance(optimizer, optimizers.GroupSkippingOptimizer)
    kinds = {type(inner).__name__: inner for inner in optimizer.optimizers}
    assert sorted(kinds) == ["Adadelta", "Adam"]
    # The authors' Adadelta: learning rate 0.5, rho 0.95, epsilon 1e-8.
    adadelta = kinds["Adadelta"]
    assert float(adadelta.learning_rate) == pytest.approx(0.5)
    assert (adadelta.rho, adadelta.epsilon) == (0.95, 1e-8)
    config = train.parse_args(
        [
            "--model",
            "resan",
            "--sampler-optimizer",
            "adam",
            "--sampler-learning-rate",
            "1e-5",
            "--ema-momentum",
            "0.99",
        ]
    )
    optimizer = train.make_optimizer(config)
    rates = sorted(float(o.learning_rate) for o in optimizer.optimizers)
    assert rates == pytest.approx([1e-5, 1e-3])
    assert all(o.use_ema for o in optimizer.optimizers)
    # "shared": an Adam of the same settings for each group, so that the
    # soft network's skips the samplers-only phase; no split without
    # samplers.
    shared = train.make_optimizer(train.parse_args(["--model", "resan"]))
    assert isinstance(shared, optimizers.GroupSkippingOptimizer)
    soft, samplers = shared.optimizers
    assert soft is not samplers
    assert soft.get_config() == samplers.get_config() | {"name": soft.name}
    assert isinstance(soft, keras.optimizers.Adam)
    plain = train.make_optimizer(train.parse_args(["--model", "decomposable"]))
    assert isinstance(plain, keras.optimizers.Adam)


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--sampler-optimizer", "adadelta"], "Received: --model decomposable"),
        (["--empty-context", "mean"], "Received: --model decomposable"),
        (["--sampler-keep-bias", "2"], "Received: --model decomposable"),
        (["--weight-decay", "1e-4"], "Received: --model decomposable"),
        (["--baseline", "none"], "Received: --model decomposable"),
        (["--model", "resan", "--baseline", "mean"], "--baseline"),
        (["--model", "resan", "--weight-decay", "-1"], "--weight-decay"),
        (
            ["--model", "resan", "--sampler-learning-rate", "0.1"],
            "Received: --sampler-optimizer shared",
        ),
    ],
)
def test_sampler_flags_that_do_not_apply_are_named(flags, message, capsys):
    train = load_script()
    with pytest.raises(SystemExit):
        train.parse_args(flags)
    assert message in capsys.readouterr().err


def test_corner_rule_and_keep_bias_flags_reach_the_model():
    train = load_script()
    config = train.parse_args(
        ["--model", "resan", "--empty-context", "mean"]
        + ["--sampler-keep-bias", "1.5", "--weight-decay", "5e-5"]
        + ["--baseline", "none"]
    )
    kwargs = train.model_kwargs(config)
    assert kwargs["empty_context"] == "mean"
    assert kwargs["sampler_keep_bias"] == 1.5
    assert kwargs["weight_decay"] == 5e-5
    assert kwargs["baseline"] == "none"
    defaults = train.model_kwargs(train.parse_args(["--model", "resan"]))
    assert defaults["empty_context"] == "authors"
    assert defaults["sampler_keep_bias"] == 0.0
    assert defaults["weight_decay"] == 0.0
    assert defaults["baseline"] == "leave_one_out"
