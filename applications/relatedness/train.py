"""Trains a semantic relatedness model on SICK and writes metrics.json.

Model (`--model`): `resan` (Shen et al., 2018): a shared ReSAN encoder for
both sentences, `[s_1 * s_2; |s_1 - s_2|]` features, a distribution over
the scores 1..5 whose expectation is the predicted score, trained, as the
authors' code does by default, with `0.5 (score - y)^2` (`--objective kl`:
KL divergence against the sparse target of Tai et al.). The token samplers
learn by REINFORCE inside `model.fit` (see
`keras_attention.models.ReSANRelatedness`), on the authors' schedule: the
soft network alone, then the samplers alone, then both
(`--soft-only-steps`, `--sampler-only-steps`).
Word vectors (`--vectors`): the staged 50-d GloVe subset, the staged 300-d
spaCy vectors or any GloVe-format file, frozen.

Usage:

    python applications/relatedness/train.py --model resan \\
        --data-dir DATA --output-dir runs/relatedness

Writes to `--output-dir`: `model.keras` (the weights with the best dev
Pearson r), `last.keras` (the weights at the end of training),
`vocabulary.txt`, `config.json`, `metrics.json` (test Pearson,
Spearman and MSE, the same on dev, training time, trainable parameters,
backend, selection rate) and, during training, `checkpoint.keras` and a
`backup/` folder for resuming: run the same command again and training
continues from the last completed epoch, with the same batch order, random
draws and best checkpoint as an uninterrupted run. `--smoke` trains on a
few dozen pairs (one epoch unless `--epochs` is given), to check the
pipeline in seconds.

Several devices, mixed precision and XLA: `--strategy`, `--mixed-precision`
and `--jit-compile`, as in the translation application (see
docs/distributed_training.md).
"""

import os
import sys

# Before anything imports TensorFlow: a quiet start (quiet_start.py).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import quiet_start  # noqa: E402, F401, I001

import dataclasses

import keras
import numpy as np
from scipy import stats

from keras_attention import data
from keras_attention import models
from keras_attention import training
from keras_attention.training import cli
from keras_attention.training import pair_tasks
from keras_attention.training import runs
from keras_attention.utils import files


@dataclasses.dataclass
class Config(pair_tasks.PairTaskConfig):
    # Besides the flags of both pair tasks and the ReSAN model
    # (`pair_tasks.PairTaskConfig`):
    model: str = cli.flag(
        "resan", "Model.", choices=lambda: sorted(MODEL_BUILDERS)
    )
    epochs: int = cli.flag(12, default_text="12, or 1 with --smoke")
    batch_size: int = cli.flag(25, "Pairs per batch.", minimum=1)
    learning_rate: float = 1e-3
    ema_momentum: float = cli.flag(
        0.997,
        "Momentum of a moving average of the weights, used to evaluate and "
        "to keep the best model (0 = none; the authors' 0.999 suits their "
        "7,031 steps, not our 2,196: see the README).",
    )
    hidden_dim: int = 300
    encoder_dropout: float = cli.flag(
        0.0,
        "Dropout on the word vectors inside the sentence encoder (it "
        "biases the predicted scores: see the README).",
    )
    sparsity_penalty: float = pair_tasks.PairTaskConfig.default_for(
        "sparsity_penalty", 0.006
    )
    objective: str = cli.flag(
        "mse",
        "ReSAN's training objective: the MSE of the expected score (the "
        "authors' default) or KL to the Tai et al. target.",
        choices=("mse", "kl"),
    )
    capacity: float = None
    max_length: int = cli.flag(40, "Longer sentences are cut.", minimum=1)
    time_limit_minutes: float = cli.flag(28.0, "Stop training after this long.")
    output_dir: str = "runs/relatedness"


# A builder takes the vocabulary size, the embedding matrix and keyword
# arguments, and returns a model with inputs {"sentence_a", "sentence_b"}
# (int ids, 0 = padding) whose output dict holds "probabilities" (B, 5) and
# "score" (B,).
MODEL_BUILDERS = {"resan": models.ReSANRelatedness}
SMOKE_SIZES = {"train": 64, "dev": 32, "test": 32}
LAST_MODEL_FILE = "last.keras"


# Data.


def prepare_data(config):
    """`(arrays, vocabulary, embeddings, info)` (`data.prepare_pairs`):
    rows of words without a vector drawn from N(0, 0.1), words looked up
    lowercased too."""
    splits = data.load_relatedness_splits(config.data_dir)
    if config.smoke:
        splits = data.first_rows(splits, SMOKE_SIZES)
    pairs = data.prepare_pairs(
        splits,
        data.RELATEDNESS_INPUTS,
        vectors=config.vectors,
        max_length=config.max_length,
        seed=config.seed,
        data_dir=config.data_dir,
        oov_stddev=0.1,
        lowercase=True,
    )
    return pairs.arrays, pairs.vocabulary, pairs.embeddings, pairs.info


def correlations(model, x, scores, batch_size=256):
    """Pearson, Spearman and MSE of the predicted scores, and the mean
    selection rate of the token samplers (inference rule)."""
    outputs = data.predict_in_buckets(model, x, batch_size=batch_size)
    predicted = np.asarray(outputs["score"], "float64")
    rate = outputs["selection_percentage"]
    return {
        "pearson": float(stats.pearsonr(predicted, scores)[0]),
        "spearman": float(stats.spearmanr(predicted, scores)[0]),
        "mse": float(np.mean((predicted - scores) ** 2)),
        "selection_rate": float(np.mean(rate)),
    }


# Training.


def resan_schedule(config, steps_per_epoch):
    """`(soft_only_steps, sampler_only_steps)` (`pair_tasks.resan_phases`):
    by default the authors' phases as fractions of our run."""
    return pair_tasks.resan_phases(
        "relatedness",
        config.epochs,
        steps_per_epoch,
        config.soft_only_steps,
        config.sampler_only_steps,
    )


def make_optimizer(config):
    """Adam for the soft network and `--sampler-optimizer` for the
    samplers (`pair_tasks.pair_optimizer`)."""
    return pair_tasks.pair_optimizer(
        "adam",
        config.learning_rate,
        config.sampler_optimizer if config.model == "resan" else None,
        config.sampler_learning_rate,
    )


class DevCorrelation(keras.callbacks.Callback):
    """Dev Pearson r after each epoch; keeps the best model.

    With a moving average of the weights (`--ema-momentum`), the averaged
    model is the one evaluated and kept; the r of the trained weights is
    recorded beside it (`raw_history`), so one run measures both.
    """

    def __init__(self, x, scores, path):
        super().__init__()
        self.x, self.scores, self.path = x, scores, path
        self.best = -np.inf
        self.history = []
        self.raw_history = []

    # Backed up with the model, so that a resumed run keeps a better
    # checkpoint from before the interruption and reports every epoch.
    def get_state(self):
        return {
            "best": float(self.best),
            "history": list(self.history),
            "raw_history": list(self.raw_history),
        }

    def set_state(self, state):
        self.best = state["best"]
        self.history = list(state["history"])
        self.raw_history = list(state.get("raw_history", []))

    def on_epoch_end(self, epoch, logs=None):
        if training.uses_moving_average(self.model):
            raw = correlations(self.model, self.x, self.scores)["pearson"]
            self.raw_history.append(raw)
            print(f" - dev pearson of the trained weights {raw:.4f}")
        with training.moving_average_weights(self.model):
            result = correlations(self.model, self.x, self.scores)
            self.history.append(result["pearson"])
            if logs is not None:
                logs["val_pearson"] = result["pearson"]
            print(f" - dev pearson {result['pearson']:.4f}")
            # A NaN r (constant predictions) ranks below every number; the
            # first epoch is kept whatever its r, so a checkpoint always
            # exists.
            pearson = result["pearson"]
            score = pearson if np.isfinite(pearson) else -np.inf
            if score > self.best or not os.path.exists(self.path):
                self.best = max(self.best, score)
                files.atomic_save(self.model, self.path)


def build_model(config, arrays, vocabulary, matrix):
    steps = pair_tasks.steps_per_epoch(arrays["train"][1], config.batch_size)
    soft, samplers = resan_schedule(config, steps)
    print(f"ReSAN schedule: soft alone {soft}, samplers alone {samplers}")
    model = MODEL_BUILDERS[config.model](
        vocabulary_size=len(vocabulary),
        embeddings=matrix,
        capacity=config.capacity,
        encoder_dropout=config.encoder_dropout,
        objective=config.objective,
        soft_only_steps=soft,
        sampler_only_steps=samplers,
        **config.resan_arguments(),
    )
    optimizer = training.with_moving_average(
        make_optimizer(config), config.ema_momentum
    )
    model.compile(
        optimizer=training.loss_scaled(optimizer),
        # No compiled loss: the model trains its `objective`.
        jit_compile=training.jit_compile(config.jit_compile),
    )
    return model


def final_metrics(config, model, arrays, tracker):
    """Test and dev figures of the best-dev model, and test figures of the
    model at the end of training (`last.keras`, kept beside it: its
    samplers have been through every phase of the schedule, which the best
    epoch's may not have)."""
    files.atomic_save(model, os.path.join(config.output_dir, LAST_MODEL_FILE))
    last = correlations(model, *arrays["test"])
    best = keras.saving.load_model(tracker.path)
    files.atomic_save(best, os.path.join(config.output_dir, runs.MODEL_FILE))
    metrics = {}
    for split in ("test", "dev"):
        result = correlations(best, *arrays[split])
        for name in ("pearson", "spearman", "mse"):
            metrics[f"{split}_{name}"] = result[name]
        if split == "test":
            metrics["test_selection_rate"] = result["selection_rate"]
    history = np.nan_to_num(tracker.history, nan=-np.inf)
    metrics.update(
        dev_pearson_per_epoch=tracker.history,
        dev_pearson_trained_weights_per_epoch=tracker.raw_history,
        best_epoch=int(np.argmax(history)) + 1,
        epochs=len(tracker.history),
    )
    for name in ("pearson", "spearman", "mse", "selection_rate"):
        metrics[f"last_test_{name}"] = last[name]
    return metrics


def train(config):
    arrays, model, info = pair_tasks.set_up(
        config, prepare_data, build_model, "SICK"
    )
    # Under jax DataParallel every batch must divide among the devices.
    tracker = DevCorrelation(
        *training.trim_to_batch_multiple(arrays["dev"]),
        os.path.join(config.output_dir, "checkpoint.keras"),
    )
    timer = pair_tasks.TrainingTimer()
    limit = pair_tasks.TimeLimit(60 * config.time_limit_minutes)
    backup = pair_tasks.backup_callback(config.output_dir, [tracker, timer])
    callbacks = [tracker, timer, limit, backup]
    _, seconds = pair_tasks.fit_pairs(
        model, arrays["train"], config, callbacks, backup
    )
    metrics = {
        **final_metrics(config, model, arrays, tracker),
        "ema_momentum": config.ema_momentum,
        "sampler_optimizer": config.sampler_optimizer,
        "weight_decay": config.weight_decay,
        "baseline": config.baseline,
        "vectors": config.vectors,
        "mixed_precision": config.mixed_precision,
        "seed": config.seed,
        # A resumed run's time includes the earlier processes'.
        "train_seconds": timer.run_seconds(seconds),
        "backend": keras.backend.backend(),
        "model": config.model,
        **pair_tasks.time_limit_record(callbacks),
        **info,
    }
    runs.write_metrics(config.output_dir, metrics)
    headline = {
        "test pearson": metrics["test_pearson"],
        "spearman": metrics["test_spearman"],
        "mse": metrics["test_mse"],
    }
    print(
        runs.summary(
            config.output_dir,
            headline,
            metrics["train_seconds"],
            names=(
                runs.MODEL_FILE,
                LAST_MODEL_FILE,
                runs.METRICS_FILE,
                runs.CONFIG_FILE,
            ),
        )
    )
    return metrics


def check_flags(config):
    """The message for flags that do not go together, or `None`."""
    if (
        config.sampler_learning_rate is not None
        and config.sampler_optimizer == "shared"
    ):
        return (
            "--sampler-learning-rate needs a --sampler-optimizer of the "
            "samplers' own. Received: --sampler-optimizer shared"
        )
    return None


def parse_args(argv=None):
    return cli.parse_config(
        Config, argv, description=__doc__.split("\n")[0], check=check_flags
    )


def main(argv=None):
    """Trains with the flags of `argv`; a data or flag error ends the
    program with one line and exit status 2, Ctrl-C with status 130."""
    return cli.main(
        train, Config, argv, __doc__.split("\n")[0], check=check_flags
    )


if __name__ == "__main__":
    main()
