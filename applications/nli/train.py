"""Trains an NLI model on SICK or SNLI and writes metrics.json.

Models (`--model`): `decomposable` (Parikh et al., 2016; `--intra` adds
intra-sentence attention), `resan` (Shen et al., 2018) and `bow` (mean of
word vectors, the baseline).
Word vectors: the staged 50-d GloVe subset, each row scaled to unit norm,
frozen, and projected by the model, as in the paper.

Usage:

    python applications/nli/train.py --model decomposable --intra \\
        --dataset snli --data-dir DATA --output-dir runs/da_intra_snli

Writes to `--output-dir`: `model.keras` (the weights with the best dev
accuracy), `vocabulary.txt`, `config.json`, `metrics.json` (dev and test
accuracy, training time, trainable parameters, training pairs per second,
backend, model, dataset) and, during training, `checkpoint.weights.h5` and a
`backup/` folder for resuming an interrupted run: run the same command
again and training continues from the last completed epoch, with the same
batch order, random draws and best checkpoint as an uninterrupted run.
`--average-last K` keeps the last K epochs' weights in `checkpoints/` and
ends with their mean instead of the best-dev epoch's weights;
`--initial-weights` starts from an earlier run's `checkpoint.weights.h5`
(for example to continue at a lower learning rate).
`--smoke` trains on a few dozen pairs (one epoch unless `--epochs` is
given), to check the pipeline in seconds.

Training batches hold pairs of similar length, cut to a multiple of
`--bucket-width` tokens (default 8; 0 pads every batch to the longest
sentence). `--dataset sick --extra-training snli` trains on SICK's and the
SNLI subset's pairs together and keeps SICK's dev and test sets.

Several devices, mixed precision and XLA: `--strategy`, `--mixed-precision`
and `--jit-compile`, as in the translation application (see
docs/distributed_training.md).
"""

import dataclasses
import glob
import json
import os
import sys
import time
import warnings

import keras
import numpy as np

from keras_attention import data
from keras_attention import models
from keras_attention import training
from keras_attention.callbacks import BackupAndRestore
from keras_attention.callbacks import ModelCheckpoint
from keras_attention.checkpoints import average_checkpoints
from keras_attention.checkpoints import last_checkpoints
from keras_attention.training import cli
from keras_attention.training import runs
from keras_attention.utils import files


@dataclasses.dataclass
class Config:
    model: str = cli.flag(
        "decomposable", "Model.", choices=lambda: sorted(MODEL_BUILDERS)
    )
    intra: bool = cli.flag(
        False, "Decomposable model: intra-sentence attention."
    )
    dataset: str = cli.flag(
        "snli", "sick, or snli (a 9,987-pair train subset).", ("sick", "snli")
    )
    extra_training: str = cli.flag(
        "none",
        "snli: train on the SNLI subset's pairs too (with --dataset sick; "
        "dev and test stay SICK's).",
        ("none", "snli"),
    )
    data_dir: str = None
    epochs: int = cli.flag(30, default_text="30, or 1 with --smoke")
    batch_size: int = cli.flag(32, "Pairs per batch.", minimum=1)
    optimizer: str = cli.flag(
        "adam", "adam, or adagrad (the paper's).", ("adam", "adagrad")
    )
    learning_rate: float = cli.flag(
        None, default_text="adam 1e-3, adagrad 0.05"
    )
    sampler_optimizer: str = cli.flag(
        "shared",
        "resan: the samplers' optimizer. shared: one like --optimizer "
        "(same kind and rate); adadelta (the authors'), adam or adagrad: "
        "with --sampler-learning-rate. Each group skips the schedule's "
        "steps that give its loss the weight 0.",
        ("shared", "adadelta", "adam", "adagrad"),
    )
    sampler_learning_rate: float = cli.flag(
        None,
        default_text="adadelta 0.5 (the authors'), adam 1e-3, adagrad 0.05",
    )
    hidden_dim: int = 200
    dropout: float = 0.2
    trainable_embeddings: bool = cli.flag(
        False, "Fine-tune the word vectors too (default: frozen GloVe)."
    )
    sparsity_penalty: float = cli.flag(
        0.02,
        "resan: lambda, the reward's selection-percentage penalty (the "
        "authors' SNLI value).",
    )
    weight_decay: float = cli.flag(
        0.0,
        "resan: the authors' L2 penalty on the trainable matrices (their "
        "SNLI value 5e-5; not measured here).",
        minimum=0.0,
    )
    baseline: str = cli.flag(
        "leave_one_out",
        "resan: the REINFORCE baseline. leave_one_out: the mean reward of "
        "the batch's other pairs; none: no baseline (the authors').",
        ("leave_one_out", "none"),
    )
    empty_context: str = cli.flag(
        "authors",
        "resan: ReSA's corner rule. authors: a selected head with no "
        "dependent before it gets a zero context, an unselected one the "
        "mean of the other real tokens; mean: both get the mean of all real "
        "tokens (release 0.1's).",
        ("authors", "mean"),
    )
    sampler_keep_bias: float = cli.flag(
        0.0,
        "resan: initial bias of the samplers' keep logit (first keep "
        "probability about sigmoid(bias); the authors' 0 gives 0.5).",
    )
    soft_only_steps: int = cli.flag(
        None,
        "resan: steps of the soft network alone.",
        default_text="half the run; 0 with --initial-weights",
    )
    sampler_only_steps: int = cli.flag(
        None,
        "resan: then steps of the samplers alone.",
        default_text="the authors' 5,000 SNLI steps scaled to 1.16 epochs",
    )
    initial_weights: str = cli.flag(
        None,
        "Start from these weights (a checkpoint.weights.h5 of an earlier "
        "run with the same model and data), e.g. to continue with a lower "
        "--learning-rate.",
    )
    average_last: int = cli.flag(
        0,
        "Keep the weights of the last K epochs and end with their "
        "element-wise mean instead of the best-dev epoch's weights (0 or 1: "
        "the best-dev epoch). metrics.json then also holds the best epoch's "
        "accuracies under best_epoch.",
        minimum=0,
    )
    ema_momentum: float = cli.flag(
        0.0,
        "Momentum of a moving average of the weights (0 = none; the "
        "authors' 0.999). With it, the averaged weights are the ones "
        "validated, kept and evaluated, and the trained weights' dev "
        "accuracy is recorded beside them.",
    )
    max_length: int = cli.flag(
        100, "Longer sentences are cut (and counted).", minimum=1
    )
    bucket_width: int = 8
    output_dir: str = "runs/nli"
    seed: int = 1337
    smoke: bool = False
    strategy: str = "auto"
    mixed_precision: str = "none"
    jit_compile: str = "auto"
    verbose: int = 1


# A model builder takes the vocabulary size, the embedding matrix and the
# keyword arguments from `model_kwargs`, and returns a Keras model with
# inputs {"premise", "hypothesis"} (int ids, 0 = padding) and class
# probabilities as output.
MODEL_BUILDERS = {
    "decomposable": models.decomposable_attention_model,
    "bow": models.bag_of_words_model,
    "resan": models.ReSANClassifier,
}
DEFAULT_LEARNING_RATES = {"adam": 1e-3, "adagrad": 0.05, "adadelta": 0.5}
SMOKE_SIZES = {"train": 64, "dev": 32, "test": 32}


def model_kwargs(config):
    """Builder arguments for `config.model` beyond the shared ones."""
    kwargs = {
        "hidden_dim": config.hidden_dim,
        "dropout": config.dropout,
        "trainable_embeddings": config.trainable_embeddings,
        "seed": config.seed,
    }
    if config.model == "decomposable":
        kwargs["intra_attention"] = config.intra
    if config.model == "resan":
        kwargs["sparsity_penalty"] = config.sparsity_penalty
        kwargs["empty_context"] = config.empty_context
        kwargs["sampler_keep_bias"] = config.sampler_keep_bias
        kwargs["weight_decay"] = config.weight_decay
        kwargs["baseline"] = config.baseline
    return kwargs


# The authors' SNLI schedule (SNLI_rl_pub/configs.py): from a trained soft
# model, the samplers alone for 5,000 steps of 128 pairs (1.16 epochs of
# SNLI's 550,152 pairs), then both.
AUTHORS_SAMPLER_ONLY_EPOCHS = 5000 / (550152 / 128)


def resan_schedule(config, steps_per_epoch):
    """`(soft_only_steps, sampler_only_steps)` for ReSAN.

    Defaults scale the authors' schedule to our epochs: 1.16 epochs of
    samplers alone; before them, the soft network alone for half of the
    run, standing in for their separately trained soft model (none with
    `--initial-weights`, which loads one).
    """
    total = config.epochs * steps_per_epoch
    soft = config.soft_only_steps
    if soft is None:
        soft = 0 if config.initial_weights else total // 2
    samplers = config.sampler_only_steps
    if samplers is None:
        samplers = round(AUTHORS_SAMPLER_ONLY_EPOCHS * steps_per_epoch)
    return soft, samplers


# Data: sentences -> tokens -> ids -> padded arrays.


def load_splits(dataset, data_dir, extra_training="none"):
    """`{"train"|"dev"|"test": (premises, hypotheses, labels)}`, strings.

    `extra_training="snli"` appends the SNLI training subset to the
    training pairs (SICK and SNLI share the three labels); dev and test
    stay those of `dataset`.
    """
    splits = {}
    for split in ("train", "dev", "test"):
        if dataset == "sick":
            rows = data.load_sick(split, data_dir=data_dir)
            splits[split] = (
                rows["sentence_a"],
                rows["sentence_b"],
                rows["entailment"],
            )
        else:
            rows = data.load_snli(split, data_dir=data_dir)
            splits[split] = (rows["premise"], rows["hypothesis"], rows["label"])
    if extra_training == "snli":
        rows = data.load_snli("train", data_dir=data_dir)
        extra = (rows["premise"], rows["hypothesis"], rows["label"])
        splits["train"] = tuple(
            list(mine) + list(theirs)
            for mine, theirs in zip(splits["train"], extra)
        )
    return splits


def build_vocabulary(tokenized, glove_words):
    """Padding, unknown, every training word, and dev/test words in GloVe.

    Dev and test words enter only through their fixed pretrained vectors;
    a dev or test word without one maps to `<unk>`.
    """
    vocabulary = data.build_vocabulary(
        tokenized["train"][0] + tokenized["train"][1]
    )
    others = [
        sentence
        for split in ("dev", "test")
        for sentence in tokenized[split][0] + tokenized[split][1]
    ]
    return data.add_pretrained_words(vocabulary, others, glove_words)


def embedding_matrix(vocabulary, words, vectors, seed):
    """GloVe rows scaled to unit norm; random unit rows for other words.

    Row 0 (padding) is zero. Returns the matrix and the number of words
    found in GloVe.
    """
    index = {}
    for i, word in enumerate(words):
        index.setdefault(word, i)
    rng = np.random.default_rng(seed)
    matrix = rng.normal(size=(len(vocabulary), vectors.shape[1]))
    found = 0
    for i, word in enumerate(vocabulary):
        if word in index:
            matrix[i] = vectors[index[word]]
            found += 1
    matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-6)
    matrix[0] = 0.0
    return matrix.astype("float32"), found


def prepare_data(config):
    """Loads, tokenizes and encodes the dataset; builds the embeddings."""
    splits = load_splits(config.dataset, config.data_dir, config.extra_training)
    if config.smoke:
        splits = {
            name: tuple(column[: SMOKE_SIZES[name]] for column in columns)
            for name, columns in splits.items()
        }
    tokenized = {
        name: (
            [data.tokenize(s) for s in premises],
            [data.tokenize(s) for s in hypotheses],
            labels,
        )
        for name, (premises, hypotheses, labels) in splits.items()
    }
    glove_words, glove_vectors = data.load_glove(data_dir=config.data_dir)
    vocabulary = build_vocabulary(tokenized, set(glove_words))
    matrix, found = embedding_matrix(
        vocabulary, glove_words, glove_vectors, config.seed
    )
    vocabulary_index = data.vocabulary_index(vocabulary)
    # One length for every split, so that each step compiles only once.
    longest = max(
        len(sentence)
        for premises, hypotheses, _ in tokenized.values()
        for sentence in premises + hypotheses
    )
    length = max(1, min(config.max_length, longest))
    arrays, cut = {}, 0
    for name, (premises, hypotheses, labels) in tokenized.items():
        premise_ids, cut_p = data.word_ids(premises, vocabulary_index, length)
        hypothesis_ids, cut_h = data.word_ids(
            hypotheses, vocabulary_index, length
        )
        cut += cut_p + cut_h
        arrays[name] = (
            {"premise": premise_ids, "hypothesis": hypothesis_ids},
            data.encode_labels(labels),
        )
    info = {
        "vocabulary_size": len(vocabulary),
        "padded_length": length,
        "glove_found": found,
        "sentences_cut": cut,
        "pairs": {name: len(y) for name, (_, y) in arrays.items()},
    }
    return arrays, vocabulary, matrix, info


# Training.


class TrainingTimer(keras.callbacks.Callback):
    """Wall time of the training batches of each epoch (no validation)."""

    def on_epoch_begin(self, epoch, logs=None):
        self._start = time.perf_counter()
        self._last = self._start

    def on_train_batch_end(self, batch, logs=None):
        self._last = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        self.epoch_seconds.append(self._last - self._start)

    def on_train_begin(self, logs=None):
        self.epoch_seconds = []

    # Backed up with the model: a resumed run reports every epoch.
    def get_state(self):
        return {"epoch_seconds": list(self.epoch_seconds)}

    def set_state(self, state):
        self.epoch_seconds = list(state["epoch_seconds"])


def new_optimizer(kind, learning_rate=None):
    rate = learning_rate or DEFAULT_LEARNING_RATES[kind]
    if kind == "adagrad":
        return keras.optimizers.Adagrad(learning_rate=rate)
    if kind == "adadelta":
        return models.resan.authors_sampler_optimizer(rate)
    return keras.optimizers.Adam(learning_rate=rate)


def make_optimizer(config):
    optimizer = new_optimizer(config.optimizer, config.learning_rate)
    if config.model == "resan":
        # Two optimizers even when "shared": the soft network's takes no
        # step in the samplers-only phase (its gradient is 0 there, but
        # Adam's moments would keep moving it).
        samplers = None
        if config.sampler_optimizer != "shared":
            samplers = new_optimizer(
                config.sampler_optimizer, config.sampler_learning_rate
            )
        optimizer = models.resan.with_sampler_optimizer(optimizer, samplers)
    return training.with_moving_average(optimizer, config.ema_momentum)


class MovingAverageIn(keras.callbacks.Callback):
    """At an epoch's end, puts the moving average of the weights in the
    model, for the callbacks after it, until `MovingAverageOut` runs.

    `fit` validated the trained weights; this callback validates the
    averaged ones, reports them as `val_accuracy` and `val_loss` (so the
    best-dev checkpoint monitors and saves the averaged model) and keeps the
    trained weights' figures as `val_accuracy_trained_weights` and
    `val_loss_trained_weights`.
    """

    def __init__(self, dev):
        super().__init__()
        self.dev = dev
        self.active = None

    def on_epoch_end(self, epoch, logs=None):
        self.active = training.moving_average_weights(self.model)
        if not self.active.__enter__() or logs is None:
            return
        for key in ("accuracy", "loss"):
            logs[f"val_{key}_trained_weights"] = logs.get(f"val_{key}")
        averaged = self.model.evaluate(self.dev, verbose=0, return_dict=True)
        logs.update({f"val_{k}": v for k, v in averaged.items()})
        print(
            f" - dev accuracy: trained weights "
            f"{logs['val_accuracy_trained_weights']:.4f}, moving average "
            f"{logs['val_accuracy']:.4f}"
        )


class MovingAverageOut(keras.callbacks.Callback):
    """Puts the trained weights back after `MovingAverageIn`."""

    def __init__(self, swap_in):
        super().__init__()
        self.swap_in = swap_in

    def on_epoch_end(self, epoch, logs=None):
        if self.swap_in.active is not None:
            self.swap_in.active.__exit__(None, None, None)
            self.swap_in.active = None


def bucketed(x, y, config, shuffle=False):
    """Length-bucketed batches of `config.batch_size` pairs.

    Widths are multiples of `config.bucket_width` (0: every batch padded to
    the longest sentence). Training batches are shuffled with one order per
    epoch drawn from the seed; under jax DataParallel only full batches are
    kept, so that every batch divides among the devices.
    """
    return data.BucketedBatches(
        x,
        y,
        batch_size=config.batch_size,
        width_step=config.bucket_width or next(iter(x.values())).shape[1],
        shuffle=shuffle,
        seed=config.seed,
        drop_remainder=shuffle and training.batch_multiple() > 1,
    )


def load_initial_weights(model, path, x_train, vocabulary):
    """Starts from the weights of an earlier run (`--initial-weights`).

    The earlier run must have the same model and vocabulary: when a
    `vocabulary.txt` sits next to `path` it is compared with this run's.
    A ReSAN schedule starts again from step 0 (the earlier run's step
    counter is not kept). A backup of this run, when there is one, still
    takes precedence (it is restored when `fit` starts), so an interrupted
    run resumes exactly.
    """
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"--initial-weights: no such file. Received: {path!r}"
        )
    saved = os.path.join(os.path.dirname(path), runs.VOCABULARY_FILE)
    if os.path.isfile(saved):
        theirs = runs.read_vocabulary(saved)
        if theirs != vocabulary:
            raise ValueError(
                "--initial-weights comes from a run with another vocabulary "
                f"({len(theirs)} words, this run has {len(vocabulary)}): "
                "train it with the same --dataset, --extra-training and data. "
                f"Received: {path!r}"
            )
    # Variables exist once the model has seen a batch.
    model({name: ids[:2] for name, ids in x_train.items()}, training=False)
    try:
        with warnings.catch_warnings():
            # Model weights only: the optimizer starts afresh, with this
            # run's learning rate.
            warnings.filterwarnings(
                "ignore", message="Skipping variable loading for optimizer"
            )
            model.load_weights(path)
    except ValueError as error:
        raise ValueError(
            "--initial-weights does not fit this model (same --model, "
            f"--hidden-dim and options needed): {error}. Received: {path!r}"
        ) from error
    for layer in model.layers:
        if isinstance(layer, models.resan.TrainingSchedule):
            # The schedule's step counter came with the weights; this run's
            # phases count from its own first step, as its optimizer does.
            layer.step.assign(0)


class KeepNewest(keras.callbacks.Callback):
    """After each epoch, deletes all but the newest `keep` weight files of
    `directory` (per-epoch files written by `ModelCheckpoint`, whose
    zero-padded epoch numbers sort by name)."""

    def __init__(self, directory, keep):
        super().__init__()
        self.directory = directory
        self.keep = keep

    def on_epoch_end(self, epoch, logs=None):
        saved = sorted(glob.glob(os.path.join(self.directory, "*.weights.h5")))
        for old in saved[: -self.keep]:
            os.remove(old)


def trainable_parameters(model):
    return int(sum(np.prod(w.shape) for w in model.trainable_weights))


def train(config):
    # The strategy first: a multi-worker strategy must exist before
    # TensorFlow runs any operation.
    scope = training.strategy_scope(config.strategy)
    training.set_mixed_precision(config.mixed_precision)
    # Workers other than the chief write to a temporary folder.
    config.output_dir = training.worker_path(config.output_dir)
    os.makedirs(config.output_dir, exist_ok=True)
    keras.utils.set_random_seed(config.seed)
    arrays, vocabulary, matrix, info = prepare_data(config)
    print(
        f"{config.dataset}: {info['pairs']} pairs, vocabulary "
        f"{info['vocabulary_size']} ({info['glove_found']} in GloVe), "
        f"{info['sentences_cut']} sentences cut to {config.max_length}"
    )
    runs.write_vocabulary(config.output_dir, vocabulary)
    runs.write_config(config.output_dir, config)

    kwargs = model_kwargs(config)
    if config.model == "resan":
        # About one step per batch of `batch_size` pairs.
        steps = -(-len(arrays["train"][1]) // config.batch_size)
        soft, samplers = resan_schedule(config, steps)
        kwargs.update(soft_only_steps=soft, sampler_only_steps=samplers)
        print(
            f"ReSAN schedule: soft alone {soft} steps, samplers alone "
            f"{samplers}, then both"
        )
    with scope:
        model = MODEL_BUILDERS[config.model](
            vocabulary_size=len(vocabulary),
            embeddings=matrix,
            **kwargs,
        )
        model.compile(
            optimizer=training.loss_scaled(make_optimizer(config)),
            loss="sparse_categorical_crossentropy",
            metrics=["accuracy"],
            jit_compile=training.jit_compile(config.jit_compile),
        )
        if config.initial_weights:
            load_initial_weights(
                model, config.initial_weights, arrays["train"][0], vocabulary
            )
    parameters = trainable_parameters(model)
    print(f"{model.name}: {parameters:,} trainable parameters")

    checkpoint = os.path.join(config.output_dir, "checkpoint.weights.h5")
    timer = TrainingTimer()
    best = ModelCheckpoint(
        checkpoint,
        monitor="val_accuracy",
        save_best_only=True,
        save_weights_only=True,
    )
    (x_train, y_train), dev = arrays["train"], arrays["dev"]
    # Under jax DataParallel every batch must divide among the devices: at
    # most (devices - 1) training and dev pairs are left out of training.
    training.check_batch_size(config.batch_size)
    x_train, y_train = training.trim_to_batch_multiple((x_train, y_train))
    backup = BackupAndRestore(
        os.path.join(config.output_dir, "backup"),
        stateful_callbacks=[best, timer],
    )
    # Batches group pairs of similar length and are cut to their longest
    # sentence (`--bucket-width`): attention costs grow with the padded
    # width, and most sentences are far shorter than the longest. Each
    # epoch's order depends on the seed and the epoch only, and the stream
    # starts at the backup's epoch: a resumed run sees the batches an
    # uninterrupted run sees.
    batches = bucketed(x_train, y_train, config, shuffle=True)
    validation = training.divisible_batches(bucketed(*dev, config).as_dataset())
    callbacks = [best, timer, backup]
    epoch_dir = os.path.join(config.output_dir, "checkpoints")
    if config.average_last > 1:
        # Before the backup: a backed-up epoch always has its weight file.
        callbacks[:0] = [
            ModelCheckpoint(
                os.path.join(epoch_dir, "epoch-{epoch:03d}.weights.h5"),
                save_weights_only=True,
            ),
            KeepNewest(epoch_dir, config.average_last),
        ]
    if config.ema_momentum:
        # The checkpoints above see the averaged weights; the backup (and
        # the next epoch) the trained ones.
        swap_in = MovingAverageIn(validation)
        # The timer first: epoch times leave out the extra evaluation.
        callbacks = [timer, swap_in, *callbacks[:-2]]
        callbacks += [MovingAverageOut(swap_in), backup]
    start = time.perf_counter()
    history = model.fit(
        batches.as_dataset(epochs=None, initial_epoch=backup.initial_epoch()),
        steps_per_epoch=len(batches),
        shuffle=False,  # the stream is shuffled, one order per epoch
        validation_data=validation,
        epochs=config.epochs,
        callbacks=callbacks,
        verbose=config.verbose,
    )
    train_seconds = time.perf_counter() - start
    training.end_data_parallel()  # evaluation takes batches of any size

    def evaluate():
        results = {}
        for split in ("dev", "test"):
            batches = bucketed(*arrays[split], config).as_dataset()
            evaluated = model.evaluate(batches, verbose=0, return_dict=True)
            results[f"{split}_accuracy"] = evaluated["accuracy"]
            if config.model == "resan":
                # ReSAN's own metric: the samplers' percentage at inference
                # (the authors' head fraction times dependent fraction of
                # the real tokens), averaged over premises and hypotheses.
                results[f"{split}_selection_percentage"] = evaluated[
                    "selection_percentage"
                ]
        return results

    # The weights of the epoch with the best dev accuracy ...
    model.load_weights(checkpoint)
    results = evaluate()
    averaged = {}
    if config.average_last > 1:
        # ... or, when asked, the mean of the last epochs' weights.
        last = last_checkpoints(epoch_dir, config.average_last)
        average_checkpoints(model, last)
        averaged = {"averaged_epochs": len(last), "best_epoch": results}
        results = evaluate()
        print(
            f"Averaged the last {len(last)} epochs: dev accuracy "
            f"{averaged['best_epoch']['dev_accuracy']:.4f} (best epoch) -> "
            f"{results['dev_accuracy']:.4f}"
        )
    files.atomic_save(model, os.path.join(config.output_dir, runs.MODEL_FILE))
    # Throughput over the epochs after the first, which includes compiling.
    seconds = timer.epoch_seconds[1:] or timer.epoch_seconds
    pairs_per_second = len(y_train) * len(seconds) / sum(seconds)
    metrics = {
        **results,
        **averaged,
        "train_seconds": train_seconds,
        "epochs": len(timer.epoch_seconds),
        "parameters": parameters,
        "pairs_per_second": pairs_per_second,
        "backend": keras.backend.backend(),
        "model": config.model + ("_intra" if config.intra else ""),
        "dataset": config.dataset,
        "extra_training": config.extra_training,
        "optimizer": config.optimizer,
        **info,
    }
    if config.model == "resan":
        metrics["sampler_optimizer"] = config.sampler_optimizer
        metrics["empty_context"] = config.empty_context
        metrics["sampler_keep_bias"] = config.sampler_keep_bias
        metrics["weight_decay"] = config.weight_decay
        metrics["baseline"] = config.baseline
    if config.ema_momentum:
        # Dev accuracy per epoch of this process's `fit` (a resumed run
        # lists the epochs after the resume), averaged and trained weights.
        metrics["ema_momentum"] = config.ema_momentum
        metrics["dev_accuracy_by_epoch"] = history.history["val_accuracy"]
        metrics["dev_accuracy_by_epoch_trained_weights"] = history.history.get(
            "val_accuracy_trained_weights", []
        )
    runs.write_metrics(config.output_dir, metrics)
    print(json.dumps(metrics, indent=2))
    return metrics


def check_flags(config):
    """The message for flags that do not go together, or `None`."""
    if config.intra and config.model != "decomposable":
        return (
            f"--intra needs --model decomposable. Received: --model "
            f"{config.model}"
        )
    sampler_flags = (
        config.sampler_optimizer != "shared"
        or config.sampler_learning_rate is not None
        or config.empty_context != "authors"
        or config.sampler_keep_bias != 0.0
        or config.weight_decay != 0.0
        or config.baseline != "leave_one_out"
    )
    if sampler_flags and config.model != "resan":
        return (
            "--sampler-optimizer, --sampler-learning-rate, --empty-context, "
            "--sampler-keep-bias, --weight-decay and --baseline need --model "
            "resan. "
            "Received: --model "
            f"{config.model}"
        )
    if (
        config.sampler_learning_rate is not None
        and config.sampler_optimizer == "shared"
    ):
        return (
            "--sampler-learning-rate needs a --sampler-optimizer of the "
            "samplers' own. Received: --sampler-optimizer shared"
        )
    if config.extra_training == "snli" and config.dataset != "sick":
        return (
            "--extra-training snli adds SNLI pairs to SICK training; it needs "
            f"--dataset sick. Received: --dataset {config.dataset}"
        )
    return None


def parse_args(argv=None):
    return cli.parse_config(
        Config, argv, description=__doc__.split("\n")[0], check=check_flags
    )


if __name__ == "__main__":
    train(parse_args(sys.argv[1:]))
