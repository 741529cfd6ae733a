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
Word vectors: the staged 50-d GloVe subset, frozen.

Usage:

    python applications/relatedness/train.py --model resan \\
        --data-dir DATA --output-dir runs/relatedness

Writes to `--output-dir`: `model.keras` (the weights with the best dev
Pearson r), `vocabulary.txt`, `config.json`, `metrics.json` (test Pearson,
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

import argparse
import dataclasses
import json
import os
import sys
import time

import keras
import numpy as np
from scipy import stats

from keras_attention import data
from keras_attention import distribute
from keras_attention import models
from keras_attention.callbacks import BackupAndRestore
from keras_attention.utils import files


@dataclasses.dataclass
class Config:
    model: str = "resan"  # a key of MODEL_BUILDERS
    data_dir: str = None  # default: $KERAS_ATTENTION_DATA
    epochs: int = 20
    batch_size: int = 25
    learning_rate: float = 1e-3
    hidden_dim: int = 300
    dropout: float = 0.2
    sparsity_penalty: float = 0.006  # the authors' SICK lambda
    objective: str = "mse"  # "mse" (the authors' default) or "kl"
    soft_only_steps: int = None  # default: see resan_schedule
    sampler_only_steps: int = None  # default: see resan_schedule
    capacity: float = None
    trainable_embeddings: bool = False
    max_length: int = 40
    bucket_width: int = 8  # batch widths: multiples of this (0: longest)
    time_limit_minutes: float = 28.0  # stop training after this long
    output_dir: str = "runs/relatedness"
    seed: int = 1337
    smoke: bool = False  # a few dozen pairs (one epoch unless --epochs)
    strategy: str = "auto"  # see keras_attention.distribute.STRATEGIES
    mixed_precision: str = "none"  # "none", "float16" or "bfloat16"
    jit_compile: str = "auto"  # "auto", "true" or "false"
    verbose: int = 1  # Keras progress bar: 0 silent, 1 bar, 2 one line


# A builder takes the vocabulary size, the embedding matrix and keyword
# arguments, and returns a model with inputs {"sentence_a", "sentence_b"}
# (int ids, 0 = padding) whose output dict holds "probabilities" (B, 5) and
# "score" (B,).
MODEL_BUILDERS = {"resan": models.ReSANRelatedness}
SMOKE_SIZES = {"train": 64, "dev": 32, "test": 32}
SPLITS = {"train": "train", "dev": "trial", "test": "test"}


# Data.


def load_splits(config):
    splits = {}
    for name, split in SPLITS.items():
        rows = data.load_sick(split, data_dir=config.data_dir)
        columns = (rows["sentence_a"], rows["sentence_b"], rows["relatedness"])
        if config.smoke:
            columns = tuple(c[: SMOKE_SIZES[name]] for c in columns)
        splits[name] = (
            [data.tokenize(s) for s in columns[0]],
            [data.tokenize(s) for s in columns[1]],
            np.asarray(columns[2], "float32"),
        )
    return splits


def build_vocabulary(splits, glove_words):
    """Padding, unknown, training words, and dev/test words in GloVe."""
    train_a, train_b, _ = splits["train"]
    vocabulary = data.build_vocabulary(train_a + train_b)
    known = set(vocabulary)
    for name in ("dev", "test"):
        for sentence in splits[name][0] + splits[name][1]:
            for word in sentence:
                if word not in known and word in glove_words:
                    known.add(word)
                    vocabulary.append(word)
    return vocabulary


def to_ids(sentences, index, length):
    ids = np.zeros((len(sentences), length), "int32")
    for row, sentence in enumerate(sentences):
        sentence = sentence[:length]
        ids[row, : len(sentence)] = [index.get(w, 1) for w in sentence]
    return ids


def prepare_data(config):
    splits = load_splits(config)
    glove_words, _ = data.load_glove(data_dir=config.data_dir)
    vocabulary = build_vocabulary(splits, set(glove_words))
    matrix, found = data.load_glove(
        vocabulary, data_dir=config.data_dir, seed=config.seed
    )
    matrix[0] = 0.0
    index = {word: i for i, word in enumerate(vocabulary)}
    longest = max(
        len(s) for a, b, _ in splits.values() for s in list(a) + list(b)
    )
    length = max(1, min(config.max_length, longest))
    arrays = {
        name: (
            {
                "sentence_a": to_ids(a, index, length),
                "sentence_b": to_ids(b, index, length),
            },
            scores,
        )
        for name, (a, b, scores) in splits.items()
    }
    info = {
        "vocabulary_size": len(vocabulary),
        "glove_found": int(found),
        "padded_length": length,
        "pairs": {name: len(s) for name, (_, s) in arrays.items()},
    }
    return arrays, vocabulary, matrix, info


def correlations(model, x, scores, batch_size=256):
    """Pearson, Spearman and MSE of the predicted scores, and the mean
    selection rate of the token samplers (inference rule)."""
    outputs = model.predict(x, batch_size=batch_size, verbose=0)
    predicted = np.asarray(outputs["score"], "float64")
    rate = outputs["selection_percentage"]
    return {
        "pearson": float(stats.pearsonr(predicted, scores)[0]),
        "spearman": float(stats.spearmanr(predicted, scores)[0]),
        "mse": float(np.mean((predicted - scores) ** 2)),
        "selection_rate": float(np.mean(rate)),
    }


# Training.


# The authors' SICK schedule (SICK_rl_pub/configs.py): 200 epochs of 4,500
# pairs in batches of 128 (about 7,031 steps); the soft network alone to
# step 6,000, the samplers alone to 6,500, then both.
AUTHORS_STEPS = 200 * 4500 / 128


def resan_schedule(config, steps_per_epoch):
    """`(soft_only_steps, sampler_only_steps)`: by default the authors'
    phases as fractions of our run (`epochs * steps_per_epoch` steps)."""
    total = config.epochs * steps_per_epoch
    soft = config.soft_only_steps
    if soft is None:
        soft = round(6000 / AUTHORS_STEPS * total)
    samplers = config.sampler_only_steps
    if samplers is None:
        samplers = round(500 / AUTHORS_STEPS * total)
    return soft, samplers


class DevCorrelation(keras.callbacks.Callback):
    """Dev Pearson r after each epoch; keeps the best model; time limit."""

    def __init__(self, x, scores, path, seconds):
        super().__init__()
        self.x, self.scores, self.path = x, scores, path
        self.seconds = seconds
        self.best = -np.inf
        self.history = []

    def on_train_begin(self, logs=None):
        self.start = time.perf_counter()

    # Backed up with the model, so that a resumed run keeps a better
    # checkpoint from before the interruption and reports every epoch.
    def get_state(self):
        return {"best": float(self.best), "history": list(self.history)}

    def set_state(self, state):
        self.best = state["best"]
        self.history = list(state["history"])

    def on_epoch_end(self, epoch, logs=None):
        result = correlations(self.model, self.x, self.scores)
        self.history.append(result["pearson"])
        if logs is not None:
            logs["val_pearson"] = result["pearson"]
        print(f" - dev pearson {result['pearson']:.4f}")
        # A NaN r (constant predictions) ranks below every number; the
        # first epoch is kept whatever its r, so a checkpoint always exists.
        pearson = result["pearson"]
        score = pearson if np.isfinite(pearson) else -np.inf
        if score > self.best or not os.path.exists(self.path):
            self.best = max(self.best, score)
            files.atomic_save(self.model, self.path)
        if time.perf_counter() - self.start > self.seconds:
            print("Time limit reached; stopping.")
            self.model.stop_training = True


def train(config):
    # The strategy first: a multi-worker strategy must exist before
    # TensorFlow runs any operation.
    scope = distribute.strategy_scope(config.strategy)
    distribute.set_mixed_precision(config.mixed_precision)
    # Workers other than the chief write to a temporary folder.
    config.output_dir = distribute.worker_path(config.output_dir)
    os.makedirs(config.output_dir, exist_ok=True)
    keras.utils.set_random_seed(config.seed)
    arrays, vocabulary, matrix, info = prepare_data(config)
    print(
        f"SICK: {info['pairs']} pairs, vocabulary {info['vocabulary_size']} "
        f"({info['glove_found']} in GloVe), length {info['padded_length']}"
    )
    with open(os.path.join(config.output_dir, "vocabulary.txt"), "w") as f:
        f.write("\n".join(vocabulary) + "\n")
    with open(os.path.join(config.output_dir, "config.json"), "w") as f:
        json.dump(dataclasses.asdict(config), f, indent=2)

    # About one step per batch of `batch_size` pairs.
    steps = -(-len(arrays["train"][1]) // config.batch_size)
    soft, samplers = resan_schedule(config, steps)
    print(
        f"ReSAN schedule: soft alone {soft} steps, samplers alone "
        f"{samplers}, then both"
    )
    with scope:
        model = MODEL_BUILDERS[config.model](
            vocabulary_size=len(vocabulary),
            embeddings=matrix,
            hidden_dim=config.hidden_dim,
            dropout=config.dropout,
            capacity=config.capacity,
            sparsity_penalty=config.sparsity_penalty,
            objective=config.objective,
            soft_only_steps=soft,
            sampler_only_steps=samplers,
            trainable_embeddings=config.trainable_embeddings,
            seed=config.seed,
        )
        model.compile(
            optimizer=distribute.loss_scaled(
                keras.optimizers.Adam(config.learning_rate)
            ),
            # No compiled loss: the model trains its `objective`.
            jit_compile=distribute.jit_compile(config.jit_compile),
        )
    parameters = int(sum(np.prod(w.shape) for w in model.trainable_weights))
    print(f"{model.name}: {parameters:,} trainable parameters")

    (x_train, scores_train), (x_dev, scores_dev) = (
        arrays["train"],
        arrays["dev"],
    )
    # Under jax DataParallel every batch must divide among the devices: at
    # most (devices - 1) training and dev pairs are left out of training.
    distribute.check_batch_size(config.batch_size)
    x_train, scores_train = distribute.trim_to_batch_multiple(
        (x_train, scores_train)
    )
    checkpoint = os.path.join(config.output_dir, "checkpoint.keras")
    tracker = DevCorrelation(
        *distribute.trim_to_batch_multiple((x_dev, scores_dev)),
        checkpoint,
        60 * config.time_limit_minutes,
    )
    backup = BackupAndRestore(
        os.path.join(config.output_dir, "backup"),
        stateful_callbacks=[tracker],
    )
    # Batches group pairs of similar length and are cut to their longest
    # sentence (`--bucket-width`; attention costs grow with the padded
    # width). Each epoch's order depends on the seed and the epoch only,
    # and the stream starts at the backup's epoch: a resumed run sees the
    # batches an uninterrupted run sees. Under jax DataParallel only full
    # batches are kept, so that every batch divides among the devices.
    batches = data.BucketedBatches(
        x_train,
        scores_train,
        batch_size=config.batch_size,
        width_step=config.bucket_width or x_train["sentence_a"].shape[1],
        seed=config.seed,
        drop_remainder=distribute.batch_multiple() > 1,
    )
    callbacks = [tracker, backup]
    start = time.perf_counter()
    model.fit(
        batches.as_dataset(epochs=None, initial_epoch=backup.initial_epoch()),
        steps_per_epoch=len(batches),
        shuffle=False,  # the stream is shuffled, one order per epoch
        epochs=config.epochs,
        callbacks=callbacks,
        verbose=config.verbose,
    )
    train_seconds = time.perf_counter() - start
    distribute.end_data_parallel()  # evaluation takes batches of any size

    best = keras.saving.load_model(checkpoint)
    files.atomic_save(best, os.path.join(config.output_dir, "model.keras"))
    test = correlations(best, *arrays["test"])
    dev = correlations(best, x_dev, scores_dev)
    metrics = {
        "test_pearson": test["pearson"],
        "test_spearman": test["spearman"],
        "test_mse": test["mse"],
        "dev_pearson": dev["pearson"],
        "dev_spearman": dev["spearman"],
        "dev_mse": dev["mse"],
        "dev_pearson_per_epoch": tracker.history,
        "test_selection_rate": test["selection_rate"],
        "train_seconds": train_seconds,
        "epochs": len(tracker.history),
        "parameters": parameters,
        "backend": keras.backend.backend(),
        "model": config.model,
        **info,
    }
    with open(os.path.join(config.output_dir, "metrics.json"), "w") as f:
        json.dump(metrics, f, indent=2)
    print(json.dumps(metrics, indent=2))
    return metrics


def parse_args(argv=None):
    defaults = Config()
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--model", choices=sorted(MODEL_BUILDERS), default=defaults.model
    )
    parser.add_argument("--data-dir", default=defaults.data_dir)
    parser.add_argument(
        "--epochs",
        type=int,
        default=None,
        help=f"Default {defaults.epochs}, or 1 with --smoke.",
    )
    parser.add_argument("--batch-size", type=int, default=defaults.batch_size)
    parser.add_argument(
        "--learning-rate", type=float, default=defaults.learning_rate
    )
    parser.add_argument("--hidden-dim", type=int, default=defaults.hidden_dim)
    parser.add_argument("--dropout", type=float, default=defaults.dropout)
    parser.add_argument(
        "--sparsity-penalty", type=float, default=defaults.sparsity_penalty
    )
    parser.add_argument(
        "--objective", choices=("mse", "kl"), default=defaults.objective
    )
    parser.add_argument(
        "--soft-only-steps",
        type=int,
        default=None,
        help="Steps of the soft network alone. Default: the authors' 6,000 "
        "of about 7,031 steps, as a fraction of --epochs.",
    )
    parser.add_argument(
        "--sampler-only-steps",
        type=int,
        default=None,
        help="Then steps of the samplers alone. Default: the authors' 500 "
        "of about 7,031, as a fraction of --epochs.",
    )
    parser.add_argument("--capacity", type=float, default=defaults.capacity)
    parser.add_argument("--trainable-embeddings", action="store_true")
    parser.add_argument("--max-length", type=int, default=defaults.max_length)
    parser.add_argument(
        "--bucket-width",
        type=int,
        default=defaults.bucket_width,
        help="Batches hold pairs of similar length, padded to a multiple of "
        "this; 0 pads every batch to the longest sentence. Default: "
        f"{defaults.bucket_width}.",
    )
    parser.add_argument(
        "--time-limit-minutes",
        type=float,
        default=defaults.time_limit_minutes,
    )
    parser.add_argument("--output-dir", default=defaults.output_dir)
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--verbose", type=int, default=defaults.verbose)
    distribute.add_arguments(parser)
    args = parser.parse_args(argv)
    if args.bucket_width < 0:
        parser.error(
            "--bucket-width must be 0 (no buckets) or positive. Received: "
            f"--bucket-width {args.bucket_width}"
        )
    if args.epochs is None:
        args.epochs = 1 if args.smoke else defaults.epochs
    return Config(**{k.replace("-", "_"): v for k, v in vars(args).items()})


if __name__ == "__main__":
    train(parse_args(sys.argv[1:]))
