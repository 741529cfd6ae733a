"""The training recipe the sentence-pair applications share.

NLI (`applications/nli`) and relatedness (`applications/relatedness`)
train their models the same way; this module holds that way once:

```python
# Strategy, precision, seed; data (keras_attention.data.pairs); a model
# built with pair_optimizer and, for ReSAN, resan_phases.
arrays, model, info = pair_tasks.set_up(config, prepare_data, build_model,
                                        "SNLI")
backup = pair_tasks.backup_callback(config.output_dir, [stateful, ...])
history, seconds = pair_tasks.fit_pairs(model, pairs.arrays["train"],
                                        config, callbacks, backup)
```

The config object is the application's dataclass; the functions read the
fields they need (`output_dir`, `seed`, `strategy`, `mixed_precision`,
`batch_size`, `bucket_width`, `epochs`, `verbose`).
"""

import dataclasses
import glob
import os
import time
import warnings

import keras
import numpy as np

from keras_attention import data
from keras_attention import models
from keras_attention.callbacks import BackupAndRestore
from keras_attention.training import averaging
from keras_attention.training import cli
from keras_attention.training import precision
from keras_attention.training import runs
from keras_attention.training import strategies

OPTIMIZERS = ("adam", "adagrad", "adadelta")
SAMPLER_OPTIMIZERS = ("shared",) + OPTIMIZERS
DEFAULT_LEARNING_RATES = {"adam": 1e-3, "adagrad": 0.05, "adadelta": 0.5}

# The authors' schedules. SNLI (SNLI_rl_pub/configs.py): from a trained
# soft model, the samplers alone for 5,000 steps of 128 pairs (1.16 epochs
# of SNLI's 550,152 pairs), then both. SICK (SICK_rl_pub/configs.py): 200
# epochs of 4,500 pairs in batches of 128 (about 7,031 steps); the soft
# network alone to step 6,000, the samplers alone to 6,500, then both.
AUTHORS_SAMPLER_ONLY_EPOCHS = 5000 / (550152 / 128)
AUTHORS_SICK_STEPS = 200 * 4500 / 128
PHASE_TASKS = ("nli", "relatedness")


@dataclasses.dataclass
class PairTaskConfig:
    """The flags the sentence-pair applications share, and the one ReSAN
    configuration of `ReSANClassifier` (NLI) and `ReSANRelatedness`.

    Each application's `Config` subclasses it and adds its own flags; a
    flag whose default differs between the tasks is declared again with
    `PairTaskConfig.default_for(name, value)` (same help, other default).
    `resan_arguments()` gives the constructor arguments both ReSAN models
    take from these flags.
    """

    vectors: str = cli.flag(
        "glove50",
        "Word vectors: glove50 (the staged 50-d GloVe subset), spacy300 (the "
        "staged 300-d spaCy vectors, not GloVe), or the path of any "
        "GloVe-format text file (its width is read from the file).",
    )
    data_dir: str = None
    hidden_dim: int = 200
    dropout: float = 0.2
    trainable_embeddings: bool = cli.flag(
        False, "Fine-tune the word vectors too (default: frozen GloVe)."
    )
    sampler_optimizer: str = cli.flag(
        "shared",
        "resan: the samplers' optimizer. shared: the soft network's (same "
        "kind and rate); adadelta (the authors'), adam or adagrad: with "
        "--sampler-learning-rate. Each group skips the schedule's steps "
        "that give its loss the weight 0.",
        SAMPLER_OPTIMIZERS,
    )
    sampler_learning_rate: float = cli.flag(
        None,
        default_text="adadelta 0.5 (the authors'), adam 1e-3, adagrad 0.05",
    )
    sparsity_penalty: float = cli.flag(
        0.02,
        "resan: lambda, the reward's selection-percentage penalty (the "
        "authors' values: 0.02 for SNLI, 0.006 for SICK).",
    )
    weight_decay: float = cli.flag(
        0.0,
        "resan: the authors' L2 penalty on the trainable matrices (their "
        "5e-5 for SNLI, 1e-4 for SICK; not measured here).",
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
        default_text="nli: half the run, 0 with --initial-weights; "
        "relatedness: the authors' 6,000 of about 7,031 steps, as a "
        "fraction of --epochs",
    )
    sampler_only_steps: int = cli.flag(
        None,
        "resan: then steps of the samplers alone.",
        default_text="nli: the authors' 5,000 SNLI steps scaled to 1.16 "
        "epochs; relatedness: the authors' 500 of about 7,031 steps, as a "
        "fraction of --epochs",
    )
    bucket_width: int = 8
    per_input_widths: bool = cli.flag(
        True,
        "Bucket and cut the two sentences of a pair each to its own width "
        "(a short second sentence is not padded to the first's length); "
        "--no-per-input-widths pads both to the longer, as before.",
    )
    seed: int = 1337
    smoke: bool = False
    strategy: str = "auto"
    mixed_precision: str = "none"
    jit_compile: str = "auto"
    verbose: int = 1

    @classmethod
    def default_for(cls, name, default):
        """The field `name` with the same flag help and another default."""
        field = cls.__dataclass_fields__[name]
        return dataclasses.field(default=default, metadata=field.metadata)

    def resan_arguments(self):
        """The constructor arguments of `ReSANClassifier` and
        `ReSANRelatedness` that these flags set (the schedule's steps are
        resolved by `resan_phases`, the vocabulary by the data, and each
        task adds its own: relatedness its `capacity`, `encoder_dropout`
        and `objective`)."""
        return {
            "hidden_dim": self.hidden_dim,
            "dropout": self.dropout,
            "trainable_embeddings": self.trainable_embeddings,
            "sparsity_penalty": self.sparsity_penalty,
            "weight_decay": self.weight_decay,
            "baseline": self.baseline,
            "empty_context": self.empty_context,
            "sampler_keep_bias": self.sampler_keep_bias,
            "seed": self.seed,
        }


def start_run(config):
    """Starts a training run; returns the strategy scope to build in.

    The strategy first: a multi-worker strategy must exist before
    TensorFlow runs any operation. Then the mixed-precision policy, the
    output folder (workers other than the chief write to a temporary one:
    `config.output_dir` is replaced) and the seed.
    """
    scope = strategies.strategy_scope(config.strategy)
    precision.set_mixed_precision(config.mixed_precision)
    config.output_dir = strategies.worker_path(config.output_dir)
    os.makedirs(config.output_dir, exist_ok=True)
    keras.utils.set_random_seed(config.seed)
    return scope


def set_up(config, prepare_data, build_model, title):
    """Starts the run, prepares the data, writes the run files and builds
    the model in the strategy scope.

    Args:
        config: the application's config.
        prepare_data: `config -> (arrays, vocabulary, embeddings, info)`.
        build_model: `(config, arrays, vocabulary, embeddings) -> model`,
            compiled.
        title: the data's name in the printed summary.

    Returns:
        `(arrays, model, info)`; `info` holds the data's counts and the
        model's trainable `parameters`.
    """
    scope = start_run(config)
    arrays, vocabulary, matrix, info = prepare_data(config)
    print(
        f"{title}: {info['pairs']} pairs, vocabulary "
        f"{info['vocabulary_size']} ({info['vectors_found']} with a "
        f"{info['embedding_dim']}-d vector, {info['vectors_distinct']} "
        f"distinct), {info['sentences_cut']} "
        f"sentences cut to {info['padded_length']} words"
    )
    runs.write_vocabulary(config.output_dir, vocabulary)
    runs.write_config(config.output_dir, config)
    with scope:
        model = build_model(config, arrays, vocabulary, matrix)
    parameters = trainable_parameters(model)
    print(f"{model.name}: {parameters:,} trainable parameters")
    return arrays, model, {**info, "parameters": parameters}


# Optimizers.


def new_optimizer(kind, learning_rate=None):
    """A new optimizer of `OPTIMIZERS`; `adadelta` is the authors' (rho
    0.95, epsilon 1e-8). The learning rate defaults by kind."""
    rate = learning_rate or DEFAULT_LEARNING_RATES[kind]
    if kind == "adagrad":
        return keras.optimizers.Adagrad(learning_rate=rate)
    if kind == "adadelta":
        return models.resan.authors_sampler_optimizer(rate)
    return keras.optimizers.Adam(learning_rate=rate)


def pair_optimizer(
    kind="adam",
    learning_rate=None,
    sampler_kind=None,
    sampler_learning_rate=None,
    ema_momentum=0.0,
):
    """The optimizer of a pair model.

    With `sampler_kind` (ReSAN), the samplers get an optimizer of their
    own (`models.resan.with_sampler_optimizer`), even when `"shared"` (one
    like the soft network's): each group then skips the schedule's steps
    that give its loss the weight 0 (in the samplers-only phase the soft
    network's gradient is 0, but Adam's moments would keep moving it).
    `ema_momentum` > 0 keeps a moving average of the weights.
    """
    optimizer = new_optimizer(kind, learning_rate)
    if sampler_kind is not None:
        samplers = None
        if sampler_kind != "shared":
            samplers = new_optimizer(sampler_kind, sampler_learning_rate)
        optimizer = models.resan.with_sampler_optimizer(optimizer, samplers)
    return averaging.with_moving_average(optimizer, ema_momentum)


# ReSAN's phases.


def resan_phases(
    task,
    epochs,
    steps_per_epoch,
    soft_only_steps=None,
    sampler_only_steps=None,
    initial_weights=False,
):
    """`(soft_only_steps, sampler_only_steps)` of a ReSAN run.

    A given value is kept; the defaults scale the authors' schedule to
    the run (`epochs * steps_per_epoch` steps):

    - `"nli"`: 1.16 epochs of samplers alone, and before them the soft
      network alone for half of the run, standing in for the authors'
      separately trained soft model (none with `initial_weights`, which
      loads one);
    - `"relatedness"`: the authors' SICK phases as fractions of the run
      (6,000 and 500 of about 7,031 steps).
    """
    if task not in PHASE_TASKS:
        raise ValueError(
            f"Argument `task` must be one of {PHASE_TASKS}. "
            f"Received: task={task!r}"
        )
    total = epochs * steps_per_epoch
    if task == "nli":
        soft = 0 if initial_weights else total // 2
        samplers = round(AUTHORS_SAMPLER_ONLY_EPOCHS * steps_per_epoch)
    else:
        soft = round(6000 / AUTHORS_SICK_STEPS * total)
        samplers = round(500 / AUTHORS_SICK_STEPS * total)
    if soft_only_steps is not None:
        soft = soft_only_steps
    if sampler_only_steps is not None:
        samplers = sampler_only_steps
    return soft, samplers


def steps_per_epoch(targets, batch_size):
    """About one step per batch of `batch_size` pairs."""
    return -(-len(targets) // batch_size)


# Batches and fitting.


def bucketed(x, y, config, shuffle=False):
    """Length-bucketed batches of `config.batch_size` pairs.

    Widths are multiples of `config.bucket_width` (0: every batch padded to
    the longest sentence), one per sentence with `config.per_input_widths`.
    Training batches are shuffled with one order per epoch drawn from the
    seed; under jax DataParallel only full batches are kept, so that every
    batch divides among the devices.
    """
    return data.BucketedBatches(
        x,
        y,
        batch_size=config.batch_size,
        width_step=config.bucket_width or next(iter(x.values())).shape[1],
        shuffle=shuffle,
        seed=config.seed,
        drop_remainder=shuffle and strategies.batch_multiple() > 1,
        per_input_widths=config.per_input_widths,
    )


def backup_callback(output_dir, stateful_callbacks=()):
    """The run's crash-safe backup, which also saves these callbacks."""
    return BackupAndRestore(
        os.path.join(output_dir, "backup"),
        stateful_callbacks=list(stateful_callbacks),
    )


def fit_pairs(model, train, config, callbacks, backup, validation=None):
    """Fits `model` on the training pairs; returns `(history, seconds)`.

    Batches group pairs of similar length and are cut to their longest
    sentence (attention costs grow with the padded width). Each epoch's
    order depends on the seed and the epoch only, and the stream starts at
    the backup's epoch: a resumed run sees the batches an uninterrupted run
    sees. Under jax DataParallel every batch must divide among the
    devices: at most (devices - 1) pairs are left out of training.
    """
    strategies.check_batch_size(config.batch_size)
    x, y = strategies.trim_to_batch_multiple(train)
    batches = bucketed(x, y, config, shuffle=True)
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
    seconds = time.perf_counter() - start
    strategies.end_data_parallel()  # evaluation takes batches of any size
    return history, seconds


def trainable_parameters(model):
    return int(sum(np.prod(w.shape) for w in model.trainable_weights))


class TrainingTimer(keras.callbacks.Callback):
    """Wall time of the training batches of each epoch (no validation), the
    run's training time, and chosen figures of each epoch's logs.

    Backed up with the model (`backup_callback`), so a resumed run reports
    every epoch, its first process's included: `epoch_seconds`,
    `logged[key]` (one value per epoch, `None` where the logs lacked it)
    and `run_seconds(seconds)`. `pairs_per_second(pairs)` gives the
    throughput over the epochs after the first, which includes compiling.

    Args:
        keys: log keys to record at each epoch's end, e.g.
            `("val_accuracy",)`. The callback sees the logs as the
            callbacks before it left them.
    """

    def __init__(self, keys=()):
        super().__init__()
        self.keys = tuple(keys)

    def on_train_begin(self, logs=None):
        self.epoch_seconds = []
        self.logged = {key: [] for key in self.keys}
        self.earlier_seconds = 0.0  # training time of earlier processes
        self._fit_start = time.perf_counter()

    def on_epoch_begin(self, epoch, logs=None):
        self._start = time.perf_counter()
        self._last = self._start

    def on_train_batch_end(self, batch, logs=None):
        self._last = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        self.epoch_seconds.append(self._last - self._start)
        for key in self.keys:
            value = (logs or {}).get(key)
            self.logged[key].append(None if value is None else float(value))

    def pairs_per_second(self, pairs):
        seconds = self.epoch_seconds[1:] or self.epoch_seconds
        return pairs * len(seconds) / sum(seconds)

    def run_seconds(self, seconds):
        """This process's `seconds` of training plus the earlier processes'
        (up to their last backed-up epoch)."""
        return self.earlier_seconds + seconds

    def get_state(self):
        elapsed = time.perf_counter() - self._fit_start
        return {
            "epoch_seconds": list(self.epoch_seconds),
            "logged": {key: list(v) for key, v in self.logged.items()},
            "run_seconds": self.earlier_seconds + elapsed,
        }

    def set_state(self, state):
        self.epoch_seconds = list(state["epoch_seconds"])
        # Backups written before these were kept have neither: their
        # earlier epochs' figures and time are unknown, and left out.
        logged = state.get("logged", {})
        self.logged = {key: list(logged.get(key, [])) for key in self.keys}
        self.earlier_seconds = float(state.get("run_seconds", 0.0))


class TimeLimit(keras.callbacks.Callback):
    """Stops training after the first epoch that ends past `seconds` of
    this process's training (0: no limit). `stopped_early` says whether it
    did: the run then trained as many epochs as the machine's speed
    allowed, and its figures are not comparable with other runs."""

    def __init__(self, seconds):
        super().__init__()
        self.seconds = seconds
        self.stopped_early = False

    def on_train_begin(self, logs=None):
        self.start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        elapsed = time.perf_counter() - self.start
        if self.seconds and elapsed > self.seconds:
            print(
                f"Time limit reached after {elapsed / 60:.1f} minutes, in "
                f"epoch {epoch + 1}: the figures of this run depend on the "
                "machine's speed and are not comparable with other runs."
            )
            self.model.stop_training = True
            self.stopped_early = True


def time_limit_record(callbacks):
    """What metrics.json says of the run's `TimeLimit` among `callbacks`:
    `stopped_by_time_limit`, with a note when it cut the run short."""
    (limit,) = [c for c in callbacks if isinstance(c, TimeLimit)]
    record = {"stopped_by_time_limit": limit.stopped_early}
    if limit.stopped_early:
        record["notes"] = {
            "stopped_by_time_limit": (
                f"the time limit of {limit.seconds / 60:g} minutes stopped "
                "training: the figures depend on the machine's speed and "
                "are not comparable with other runs"
            )
        }
    return record


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
        self.active = averaging.moving_average_weights(self.model)
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
