"""Trains an NLI model on SICK or SNLI and writes metrics.json.

Models (`--model`): `decomposable` (Parikh et al., 2016; `--intra` adds
intra-sentence attention), `resan` (Shen et al., 2018) and `bow` (mean of
word vectors, the baseline).
Word vectors (`--vectors`): the staged 50-d GloVe subset, the staged 300-d
spaCy vectors or any GloVe-format file, each row scaled to unit norm,
frozen, and projected by the model, as in the paper. Training pairs
(`--train-data`): the 9,987-pair SNLI subset, the first 100,000 lines of
the official training file, or any file in the official format.

Usage:

    python applications/nli/train.py --model decomposable --intra \\
        --dataset snli --data-dir DATA --output-dir runs/da_intra_snli

Writes to `--output-dir`: `model.keras` (the weights with the best dev
accuracy), `vocabulary.txt`, `config.json`, `metrics.json` (dev and test
accuracy, the dev accuracy of each epoch, training time, trainable
parameters, training pairs per second, backend, model, dataset) and, during
training, `checkpoint.weights.h5` and a `backup/` folder for resuming an
interrupted run: run the same command again and training continues from
the last completed epoch, with the same batch order, random draws and best
checkpoint as an uninterrupted run; its metrics.json covers every epoch,
and its training time adds the earlier processes' (up to their last
completed epoch). `--time-limit-minutes` counts this process's training.
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

import os
import sys

# Before anything imports TensorFlow: a quiet start (quiet_start.py).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import quiet_start  # noqa: E402, F401, I001

import dataclasses

import keras

from keras_attention import data
from keras_attention import models
from keras_attention import training
from keras_attention.callbacks import ModelCheckpoint
from keras_attention.checkpoints import average_checkpoints
from keras_attention.checkpoints import last_checkpoints
from keras_attention.training import cli
from keras_attention.training import pair_tasks
from keras_attention.training import runs
from keras_attention.utils import files


@dataclasses.dataclass
class Config(pair_tasks.PairTaskConfig):
    # Besides the flags of both pair tasks and the ReSAN model
    # (`pair_tasks.PairTaskConfig`):
    model: str = cli.flag(
        "decomposable", "Model.", choices=lambda: sorted(MODEL_BUILDERS)
    )
    intra: bool = cli.flag(
        False, "Decomposable model: intra-sentence attention."
    )
    dataset: str = cli.flag("snli", "sick, or snli.", ("sick", "snli"))
    train_data: str = cli.flag(
        "subset",
        "SNLI's training pairs: subset (the 9,987-pair InferSent subset), "
        "first100000 (the first 100,000 lines of the official file), or the "
        "path of a file in the official JSON Lines format, such as the full "
        "snli_1.0_train.jsonl. Dev and test come from the same source.",
    )
    extra_training: str = cli.flag(
        "none",
        "snli: train on the --train-data SNLI pairs too (with --dataset "
        "sick; dev and test stay SICK's).",
        ("none", "snli"),
    )
    epochs: int = cli.flag(30, default_text="30, or 1 with --smoke")
    batch_size: int = cli.flag(32, "Pairs per batch.", minimum=1)
    optimizer: str = cli.flag(
        "adam", "adam, or adagrad (the paper's).", ("adam", "adagrad")
    )
    learning_rate: float = cli.flag(
        None, default_text="adam 1e-3, adagrad 0.05"
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
    time_limit_minutes: float = cli.flag(
        0.0,
        "Stop after the epoch that ends past this many minutes of training "
        "(0: no limit; a resumed run counts from its restart).",
        minimum=0.0,
    )
    output_dir: str = "runs/nli"


# A model builder takes the vocabulary size, the embedding matrix and the
# keyword arguments from `model_kwargs`, and returns a Keras model with
# inputs {"premise", "hypothesis"} (int ids, 0 = padding) and class
# probabilities as output.
MODEL_BUILDERS = {
    "decomposable": models.decomposable_attention_model,
    "bow": models.bag_of_words_model,
    "resan": models.ReSANClassifier,
}
SMOKE_SIZES = {"train": 64, "dev": 32, "test": 32}


def model_kwargs(config):
    """Builder arguments for `config.model` beyond the shared ones."""
    if config.model == "resan":
        return config.resan_arguments()
    kwargs = {
        "hidden_dim": config.hidden_dim,
        "dropout": config.dropout,
        "trainable_embeddings": config.trainable_embeddings,
        "seed": config.seed,
    }
    if config.model == "decomposable":
        kwargs["intra_attention"] = config.intra
    return kwargs


def resan_schedule(config, steps_per_epoch):
    """`(soft_only_steps, sampler_only_steps)` (`pair_tasks.resan_phases`)."""
    return pair_tasks.resan_phases(
        "nli",
        config.epochs,
        steps_per_epoch,
        config.soft_only_steps,
        config.sampler_only_steps,
        initial_weights=bool(config.initial_weights),
    )


def make_optimizer(config):
    return pair_tasks.pair_optimizer(
        config.optimizer,
        config.learning_rate,
        config.sampler_optimizer if config.model == "resan" else None,
        config.sampler_learning_rate,
        config.ema_momentum,
    )


def prepare_data(config):
    """`(arrays, vocabulary, embeddings, info)` (`data.prepare_pairs`)."""
    splits = data.load_nli_splits(
        config.dataset,
        config.train_data,
        config.extra_training,
        config.data_dir,
    )
    if config.smoke:
        splits = data.first_rows(splits, SMOKE_SIZES)
    pairs = data.prepare_pairs(
        splits,
        data.NLI_INPUTS,
        vectors=config.vectors,
        max_length=config.max_length,
        seed=config.seed,
        data_dir=config.data_dir,
        unit_norm=True,
    )
    return pairs.arrays, pairs.vocabulary, pairs.embeddings, pairs.info


def build_model(config, arrays, vocabulary, matrix):
    kwargs = model_kwargs(config)
    if config.model == "resan":
        steps = pair_tasks.steps_per_epoch(
            arrays["train"][1], config.batch_size
        )
        soft, samplers = resan_schedule(config, steps)
        kwargs.update(soft_only_steps=soft, sampler_only_steps=samplers)
        print(f"ReSAN schedule: soft alone {soft}, samplers alone {samplers}")
    model = MODEL_BUILDERS[config.model](
        vocabulary_size=len(vocabulary), embeddings=matrix, **kwargs
    )
    model.compile(
        optimizer=training.loss_scaled(make_optimizer(config)),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
        jit_compile=training.jit_compile(config.jit_compile),
    )
    if config.initial_weights:
        pair_tasks.load_initial_weights(
            model, config.initial_weights, arrays["train"][0], vocabulary
        )
    return model


def epoch_callbacks(config, timer, validation):
    """The best-dev checkpoint, the timer and the backup, with the
    per-epoch weight files of `--average-last` and the moving average's
    swaps of `--ema-momentum`, in the order they must run."""
    best = ModelCheckpoint(
        os.path.join(config.output_dir, "checkpoint.weights.h5"),
        monitor="val_accuracy",
        save_best_only=True,
        save_weights_only=True,
    )
    backup = pair_tasks.backup_callback(config.output_dir, [best, timer])
    limit = pair_tasks.TimeLimit(60 * config.time_limit_minutes)
    callbacks = [best, timer, limit, backup]
    epoch_dir = os.path.join(config.output_dir, "checkpoints")
    if config.average_last > 1:
        # Before the backup: a backed-up epoch always has its weight file.
        callbacks[:0] = [
            ModelCheckpoint(
                os.path.join(epoch_dir, "epoch-{epoch:03d}.weights.h5"),
                save_weights_only=True,
            ),
            pair_tasks.KeepNewest(epoch_dir, config.average_last),
        ]
    if config.ema_momentum:
        # The checkpoints above see the averaged weights; the backup (and
        # the next epoch) the trained ones. The timer records both dev
        # figures (its epoch times end at the last batch either way).
        swap_in = pair_tasks.MovingAverageIn(validation)
        callbacks = [swap_in, *callbacks[:-3], timer, limit]
        callbacks += [pair_tasks.MovingAverageOut(swap_in), backup]
    return callbacks, backup


def evaluate(model, arrays, config):
    """Dev and test accuracy; for ReSAN also the samplers' selection
    percentage at inference (the authors' head fraction times dependent
    fraction of the real tokens), averaged over premises and hypotheses."""
    results = {}
    for split in ("dev", "test"):
        batches = pair_tasks.bucketed(*arrays[split], config).as_dataset()
        evaluated = model.evaluate(batches, verbose=0, return_dict=True)
        results[f"{split}_accuracy"] = evaluated["accuracy"]
        if config.model == "resan":
            results[f"{split}_selection_percentage"] = evaluated[
                "selection_percentage"
            ]
    return results


def final_results(model, arrays, config):
    """The best-dev epoch's results or, with `--average-last`, those of
    the mean of the last epochs' weights (the best epoch's beside them)."""
    model.load_weights(os.path.join(config.output_dir, "checkpoint.weights.h5"))
    results = evaluate(model, arrays, config)
    if config.average_last <= 1:
        return results
    epoch_dir = os.path.join(config.output_dir, "checkpoints")
    last = last_checkpoints(epoch_dir, config.average_last)
    average_checkpoints(model, last)
    averaged = evaluate(model, arrays, config)
    print(
        f"Averaged the last {len(last)} epochs: dev accuracy "
        f"{results['dev_accuracy']:.4f} (best epoch) -> "
        f"{averaged['dev_accuracy']:.4f}"
    )
    return {**averaged, "averaged_epochs": len(last), "best_epoch": results}


def run_metrics(config, timer, pairs_trained):
    """What metrics.json records of the run besides the results."""
    metrics = {
        "epochs": len(timer.epoch_seconds),
        "pairs_per_second": timer.pairs_per_second(pairs_trained),
        "backend": keras.backend.backend(),
        "model": config.model + ("_intra" if config.intra else ""),
        "dataset": config.dataset,
        "train_data": config.train_data,
        "vectors": config.vectors,
        "extra_training": config.extra_training,
        "optimizer": config.optimizer,
        "mixed_precision": config.mixed_precision,
        "seed": config.seed,
    }
    if config.model == "resan":
        for name in (
            "sampler_optimizer",
            "empty_context",
            "sampler_keep_bias",
            "weight_decay",
            "baseline",
        ):
            metrics[name] = getattr(config, name)
    # Dev accuracy per epoch, every epoch of a resumed run included (with
    # `--ema-momentum`: the averaged weights', and the trained weights').
    metrics["dev_accuracy_by_epoch"] = timer.logged["val_accuracy"]
    if config.ema_momentum:
        metrics["ema_momentum"] = config.ema_momentum
        metrics["dev_accuracy_by_epoch_trained_weights"] = timer.logged[
            "val_accuracy_trained_weights"
        ]
    return metrics


def train(config):
    arrays, model, info = pair_tasks.set_up(
        config, prepare_data, build_model, config.dataset
    )
    validation = training.divisible_batches(
        pair_tasks.bucketed(*arrays["dev"], config).as_dataset()
    )
    timer = pair_tasks.TrainingTimer(
        keys=("val_accuracy", "val_accuracy_trained_weights")
    )
    callbacks, backup = epoch_callbacks(config, timer, validation)
    _, seconds = pair_tasks.fit_pairs(
        model, arrays["train"], config, callbacks, backup, validation
    )
    results = final_results(model, arrays, config)
    files.atomic_save(model, os.path.join(config.output_dir, runs.MODEL_FILE))
    trained = len(training.trim_to_batch_multiple(arrays["train"])[1])
    metrics = {
        **results,
        "train_seconds": timer.run_seconds(seconds),
        **run_metrics(config, timer, trained),
        **pair_tasks.time_limit_record(callbacks),
        **info,
    }
    runs.write_metrics(config.output_dir, metrics)
    headline = {
        "dev accuracy": metrics["dev_accuracy"],
        "test accuracy": metrics["test_accuracy"],
    }
    print(
        runs.summary(
            config.output_dir,
            headline,
            metrics["train_seconds"],
            names=(runs.MODEL_FILE, runs.METRICS_FILE, runs.CONFIG_FILE),
        )
    )
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
    if (
        config.train_data != "subset"
        and config.dataset == "sick"
        and config.extra_training == "none"
    ):
        return (
            "--train-data chooses SNLI's training pairs: with --dataset sick "
            "it needs --extra-training snli. Received: --train-data "
            f"{config.train_data}"
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


def main(argv=None):
    """Trains with the flags of `argv`; a data or flag error ends the
    program with one line and exit status 2, Ctrl-C with status 130."""
    return cli.main(
        train, Config, argv, __doc__.split("\n")[0], check=check_flags
    )


if __name__ == "__main__":
    main()
