"""The NLI application runs end to end in --smoke mode on every backend."""

import dataclasses
import json
import pathlib

import helpers
import keras
import numpy as np
import pytest

from keras_attention import data
from keras_attention import models
from keras_attention.training import pair_tasks

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "applications" / "nli" / "train.py"
METRIC_KEYS = (
    "dev_accuracy",
    "test_accuracy",
    "train_seconds",
    "parameters",
    "pairs_per_second",
    "backend",
    "model",
    "dataset",
    "stopped_by_time_limit",
)


def load_script():
    return helpers.load_script(SCRIPT, "nli_train")


needs_data = helpers.needs_data(*helpers.SICK_AND_GLOVE)


@needs_data
def test_smoke_run_writes_metrics_and_a_loadable_model(tmp_path, capsys):
    train = load_script()
    config = train.parse_args(
        [
            "--smoke",
            "--model",
            "decomposable",
            "--intra",
            "--dataset",
            "sick",
            "--hidden-dim",
            "16",
            "--optimizer",
            "adagrad",
            "--output-dir",
            str(tmp_path),
            "--verbose",
            "0",
        ]
    )
    metrics = train.train(config)
    written = json.loads((tmp_path / "metrics.json").read_text())
    assert written.keys() == metrics.keys()
    assert written["test_accuracy"] == pytest.approx(metrics["test_accuracy"])
    for key in METRIC_KEYS:
        assert key in written, key
    assert written["backend"] == keras.backend.backend()
    assert written["model"] == "decomposable_intra"
    assert written["dataset"] == "sick"
    assert 0.0 <= written["dev_accuracy"] <= 1.0
    assert 0.0 <= written["test_accuracy"] <= 1.0
    assert written["pairs_per_second"] > 0
    assert written["pairs"] == {"train": 64, "dev": 32, "test": 32}
    # Trainable parameters exclude the frozen 50-d word vectors.
    model = keras.saving.load_model(tmp_path / "model.keras", safe_mode=True)
    embedding = model.get_layer("word_embedding")
    assert not embedding.trainable
    assert written["parameters"] == sum(
        int(np.prod(w.shape)) for w in model.trainable_weights
    )
    vocabulary = (tmp_path / "vocabulary.txt").read_text().split("\n")[:-1]
    assert vocabulary[:2] == ["<pad>", "<unk>"]
    assert len(vocabulary) == embedding.input_dim
    # evaluate.py scores the run and draws an alignment; the samplers'
    # selection rules are refused by name for a model without samplers.
    evaluate = helpers.load_script(
        ROOT / "applications" / "nli" / "evaluate.py", "nli_evaluate"
    )
    result = evaluate.main(["--run-dir", str(tmp_path), "--split", "dev"])
    assert 0.0 <= result["accuracy"] <= 1.0
    assert "selection_percentage" not in result
    assert (tmp_path / "alignment_0.png").stat().st_size > 0
    with pytest.raises(SystemExit):
        evaluate.main(["--run-dir", str(tmp_path), "--selection", "sampled"])
    assert "--selection sampled needs a ReSAN run" in capsys.readouterr().err


@pytest.mark.parametrize(
    "train_data, source",
    [
        ("subset", "infersent"),
        ("first100000", "jsonl"),
        ("/no/longer/there/snli_1.0_train.jsonl", "jsonl"),
        (None, "infersent"),  # a run from before --train-data
    ],
)
def test_evaluate_reads_snli_from_the_runs_training_source(
    train_data, source, monkeypatch, tmp_path
):
    evaluate = helpers.load_script(
        ROOT / "applications" / "nli" / "evaluate.py", "nli_evaluate"
    )
    config = {"model": "decomposable", "dataset": "snli"}
    if train_data is not None:
        config["train_data"] = train_data
    model = models.decomposable_attention_model(
        4, embedding_dim=4, hidden_dim=4, seed=0
    )
    vocabulary = ["<pad>", "<unk>", "a", "b"]
    monkeypatch.setattr(
        evaluate, "load_run", lambda run_dir: (config, vocabulary, model)
    )
    read = []

    def load_snli(split, data_dir=None, source="infersent"):
        read.append((split, source))
        return {
            "premise": ["a b", "b"],
            "hypothesis": ["b", "a a"],
            "label": ["neutral", "entailment"],
            "skipped": 0,
        }

    monkeypatch.setattr(evaluate.data, "load_snli", load_snli)
    for name in ("model.keras", "vocabulary.txt", "config.json"):
        (tmp_path / name).write_text("")  # --run-dir must be a run folder
    result = evaluate.main(
        ["--run-dir", str(tmp_path), "--split", "dev", "--examples"]
    )
    assert read == [("dev", source)]
    assert 0.0 <= result["accuracy"] <= 1.0


def test_every_builder_has_the_shared_interface():
    train = load_script()
    assert {"decomposable", "bow"} <= set(train.MODEL_BUILDERS)
    vectors = np.random.default_rng(0).normal(size=(12, 4)).astype("float32")
    for name, builder in train.MODEL_BUILDERS.items():
        config = train.Config(model=name, hidden_dim=4)
        model = builder(
            vocabulary_size=12, embeddings=vectors, **train.model_kwargs(config)
        )
        assert set(model.input) == {"premise", "hypothesis"}, name
        output = model.output
        if isinstance(output, dict):
            # ReSAN also outputs its samplers' policy tensors.
            output = output["probabilities"]
        assert tuple(output.shape) == (None, 3), name


def test_embedding_matrix_has_unit_glove_rows_and_a_zero_padding_row():
    train = load_script()
    config = train.parse_args(["--smoke"])
    vocabulary = ["<pad>", "<unk>", "a", "dog"]
    # The options the application passes to `data.prepare_pairs`.
    matrix, found = data.embedding_matrix(
        vocabulary,
        ["dog", "a"],
        np.array([[3.0, 4.0], [1.0, 0.0]]),
        seed=config.seed,
        unit_norm=True,
        padding_id=0,
    )
    assert found == 2
    np.testing.assert_array_equal(matrix[0], 0.0)
    np.testing.assert_allclose(matrix[3], [0.6, 0.8], atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(matrix[1:], axis=1), 1.0)


def test_intra_needs_the_decomposable_model():
    train = load_script()
    with pytest.raises(SystemExit):
        train.parse_args(["--model", "bow", "--intra"])


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--extra-training", "snli", "--dataset", "snli"], "--dataset snli"),
        (["--bucket-width", "-1"], "--bucket-width -1"),
        (["--average-last", "-2"], "--average-last -2"),
    ],
)
def test_inconsistent_flags_are_named(flags, message, capsys):
    train = load_script()
    with pytest.raises(SystemExit):
        train.parse_args(flags)
    assert message in capsys.readouterr().err


@needs_data
def test_extra_training_adds_the_snli_pairs_to_sick_training_only():
    sick = data.load_nli_splits("sick")
    joint = data.load_nli_splits("sick", extra_training="snli")
    snli = data.load_snli("train")
    assert len(joint["train"][0]) == len(sick["train"][0]) + len(
        snli["premise"]
    )
    assert joint["train"][2][-1] == data.encode_labels(snli["label"])[-1]
    for split in ("dev", "test"):
        assert joint[split][:2] == sick[split][:2]
        np.testing.assert_array_equal(joint[split][2], sick[split][2])


@needs_data
def test_bucketed_batches_cover_every_pair_once_and_cut_padding():
    train = load_script()
    config = train.parse_args(["--smoke", "--dataset", "sick"])
    arrays, _, _, info = train.prepare_data(config)
    x, y = arrays["train"]
    batches = pair_tasks.bucketed(x, y, config, shuffle=True)
    rows = np.concatenate([r for r, _ in batches.batches(epoch=0)])
    assert sorted(rows.tolist()) == list(range(len(y)))
    # One width per sentence by default (premise, hypothesis).
    widths = {w for _, w in batches.batches(epoch=0)}
    assert min(min(w) for w in widths) < info["padded_length"]
    assert any(p != h for p, h in widths)
    longest = pair_tasks.bucketed(
        x, y, train.parse_args(["--smoke", "--no-per-input-widths"])
    )
    assert all(isinstance(w, int) for w in longest.widths)
    length = info["padded_length"]
    padded = pair_tasks.bucketed(
        x, y, train.parse_args(["--smoke", "--bucket-width", "0"])
    )
    assert padded.widths == [(length, length)]


@needs_data
@helpers.not_on_jax
def test_initial_weights_continue_an_earlier_run(tmp_path):
    train = load_script()
    common = ["--smoke", "--model", "bow", "--dataset", "sick"]
    common += ["--hidden-dim", "8", "--verbose", "0"]
    first = train.parse_args(
        common + ["--trainable-embeddings", "--output-dir", str(tmp_path / "a")]
    )
    metrics = train.train(first)
    saved = keras.saving.load_model(tmp_path / "a" / "model.keras")
    assert saved.get_layer("word_embedding").trainable
    # The trainable word vectors count as parameters.
    assert metrics["parameters"] == sum(
        int(np.prod(w.shape)) for w in saved.trainable_weights
    )
    assert metrics["parameters"] > metrics["vocabulary_size"] * 50

    # A fresh model starts from exactly the earlier run's best weights.
    checkpoint = str(tmp_path / "a" / "checkpoint.weights.h5")
    arrays, vocabulary, matrix, _ = train.prepare_data(first)
    model = train.MODEL_BUILDERS["bow"](
        vocabulary_size=len(vocabulary),
        embeddings=matrix,
        **train.model_kwargs(first),
    )
    pair_tasks.load_initial_weights(
        model, checkpoint, arrays["train"][0], vocabulary
    )
    for mine, theirs in zip(model.weights, saved.weights):
        np.testing.assert_array_equal(
            keras.ops.convert_to_numpy(mine),
            keras.ops.convert_to_numpy(theirs),
        )

    # ... and the script trains from them.
    second = train.parse_args(
        common
        + ["--initial-weights", checkpoint, "--learning-rate", "1e-4"]
        + ["--output-dir", str(tmp_path / "b")]
    )
    assert 0.0 <= train.train(second)["test_accuracy"] <= 1.0


@needs_data
@helpers.not_on_jax
def test_initial_weights_that_do_not_fit_are_named(tmp_path):
    train = load_script()
    config = train.parse_args(
        ["--smoke", "--model", "bow", "--dataset", "sick", "--hidden-dim", "8"]
        + ["--verbose", "0", "--output-dir", str(tmp_path / "a")]
    )
    train.train(config)
    checkpoint = tmp_path / "a" / "checkpoint.weights.h5"
    arrays, vocabulary, matrix, _ = train.prepare_data(config)

    def fresh(hidden_dim=8):
        return train.MODEL_BUILDERS["bow"](
            vocabulary_size=len(vocabulary),
            embeddings=matrix,
            **train.model_kwargs(
                dataclasses.replace(config, hidden_dim=hidden_dim)
            ),
        )

    x_train = arrays["train"][0]
    missing = str(tmp_path / "nowhere.weights.h5")
    with pytest.raises(FileNotFoundError, match="--initial-weights"):
        pair_tasks.load_initial_weights(fresh(), missing, x_train, vocabulary)
    with pytest.raises(ValueError, match="--initial-weights does not fit"):
        pair_tasks.load_initial_weights(
            fresh(16), str(checkpoint), x_train, vocabulary
        )
    # A run over other data has another vocabulary.
    other = tmp_path / "other"
    other.mkdir()
    (other / "checkpoint.weights.h5").write_bytes(checkpoint.read_bytes())
    (other / "vocabulary.txt").write_text("\n".join(vocabulary[:-1]) + "\n")
    with pytest.raises(ValueError, match="another vocabulary"):
        pair_tasks.load_initial_weights(
            fresh(), str(other / "checkpoint.weights.h5"), x_train, vocabulary
        )


@needs_data
@helpers.not_on_jax
def test_average_last_ends_with_the_mean_of_the_last_epochs(tmp_path):
    train = load_script()
    config = train.parse_args(
        ["--smoke", "--model", "bow", "--dataset", "sick", "--hidden-dim", "8"]
        + ["--epochs", "3", "--average-last", "2", "--verbose", "0"]
        + ["--output-dir", str(tmp_path)]
    )
    metrics = train.train(config)
    kept = sorted(p.name for p in (tmp_path / "checkpoints").iterdir())
    assert kept == ["epoch-002.weights.h5", "epoch-003.weights.h5"]
    assert metrics["averaged_epochs"] == 2
    assert set(metrics["best_epoch"]) == {"dev_accuracy", "test_accuracy"}

    model = keras.saving.load_model(tmp_path / "model.keras")
    epochs = []
    for name in kept:
        model.load_weights(tmp_path / "checkpoints" / name)
        epochs.append([np.array(w) for w in model.get_weights()])
    final = keras.saving.load_model(tmp_path / "model.keras").get_weights()
    changed = 0
    for second, third, mean in zip(*epochs, final):
        if second.dtype.kind == "f":
            np.testing.assert_allclose(mean, (second + third) / 2, atol=1e-6)
            changed += not np.array_equal(second, third)
    assert changed > 0  # the two epochs differ, so the mean is checked
    # The averaged model's accuracy is what metrics.json reports.
    arrays = train.prepare_data(config)[0]
    dev = pair_tasks.bucketed(*arrays["dev"], config).as_dataset()
    final_model = keras.saving.load_model(tmp_path / "model.keras")
    final_model.compile(
        loss="sparse_categorical_crossentropy", metrics=["accuracy"]
    )
    assert final_model.evaluate(dev, verbose=0, return_dict=True)[
        "accuracy"
    ] == pytest.approx(metrics["dev_accuracy"])


def test_moving_average_callbacks_show_the_average_between_them():
    # Callbacks between MovingAverageIn and MovingAverageOut (the
    # checkpoints) see the averaged weights; the next epoch trains on.
    model = keras.Sequential(
        [keras.Input((3,)), keras.layers.Dense(2, activation="softmax")]
    )
    model.compile(
        optimizer=keras.optimizers.SGD(0.5, use_ema=True, ema_momentum=0.5),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    x = np.random.default_rng(0).normal(size=(16, 3)).astype("float32")
    y = (x[:, 0] > 0).astype("int32")
    dev = (x[:8], y[:8])
    # As in the application: the dev set is a dataset of (x, y) batches.
    import tensorflow as tf

    dev_batches = tf.data.Dataset.from_tensor_slices(dev).batch(4)

    class Probe(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.seen = []

        def on_epoch_end(self, epoch, logs=None):
            self.seen.append(
                ([np.array(w) for w in self.model.get_weights()], dict(logs))
            )

        def on_train_end(self, logs=None):
            # `fit` then copies the averages into the model.
            self.averages = [
                np.array(v)
                for v in self.model.optimizer._model_variables_moving_average
            ]

    swap_in = pair_tasks.MovingAverageIn(dev_batches)
    between, after = Probe(), Probe()
    model.fit(
        x,
        y,
        batch_size=4,
        epochs=2,
        validation_data=dev,
        callbacks=[
            swap_in,
            between,
            pair_tasks.MovingAverageOut(swap_in),
            after,
        ],
        verbose=0,
    )
    seen, logs = between.seen[-1]
    trained = after.seen[-1][0]
    for inside, average in zip(seen, after.averages):
        np.testing.assert_allclose(inside, average, atol=1e-6)
    assert not np.allclose(seen[0], trained[0])  # the average lags
    # Between the two, val_accuracy is the average's, the trained
    # weights' figure sits beside it.
    for key in ("val_accuracy_trained_weights", "val_loss_trained_weights"):
        assert key in logs
    with_average = keras.models.clone_model(model)
    with_average.set_weights(seen)
    with_average.compile(loss="sparse_categorical_crossentropy")
    assert logs["val_loss"] == pytest.approx(
        with_average.evaluate(*dev, verbose=0, return_dict=True)["loss"],
        rel=1e-5,
    )


@needs_data
@helpers.not_on_jax
def test_ema_momentum_keeps_the_best_averaged_model(tmp_path):
    train = load_script()
    config = train.parse_args(
        ["--smoke", "--model", "bow", "--dataset", "sick", "--hidden-dim", "8"]
        + ["--epochs", "3", "--ema-momentum", "0.5", "--verbose", "0"]
        + ["--output-dir", str(tmp_path)]
    )
    metrics = train.train(config)
    assert metrics["ema_momentum"] == 0.5
    assert len(metrics["dev_accuracy_by_epoch"]) == 3
    assert len(metrics["dev_accuracy_by_epoch_trained_weights"]) == 3
    # The kept model is the best epoch's average.
    assert metrics["dev_accuracy"] == pytest.approx(
        max(metrics["dev_accuracy_by_epoch"])
    )
