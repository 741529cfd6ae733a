"""Trains a Transformer for English->German translation on Multi30k.

The paper's recipe end to end, with `model.fit`: a shared SentencePiece
vocabulary, three-way tied embeddings, label smoothing 0.1, Adam
(0.9, 0.98, 1e-9) with the warm-up / inverse-square-root schedule,
length-bucketed batches, averaging of the last checkpoints, and beam search
(beam 4, alpha 0.6) for evaluation.

Usage:
    python applications/translation/train.py --preset small --minutes 60 \
        --data-dir DIR --output-dir runs/translation
    python applications/translation/train.py --demo    # a few CPU minutes
    python applications/translation/train.py --smoke   # synthetic copy task

Several devices, mixed precision and XLA: `--strategy
none|mirrored|multi_worker|data_parallel` (default `auto`: MirroredStrategy
with several GPUs on tensorflow, DataParallel with several devices on jax),
`--mixed-precision auto|none|float16|bfloat16` (default `auto`: bfloat16
when training on tensorflow on a CPU with native bfloat16, float32
elsewhere; measured on Multi30k in applications/translation/README.md),
`--jit-compile auto|true|false`; see docs/distributed_training.md.

Set the backend with KERAS_BACKEND (tensorflow, jax or torch). The output
directory receives `model.keras`, `tokenizer.model`, `training.json`,
`metrics.json`, per-epoch weight checkpoints, TensorBoard logs and a
BackupAndRestore directory (an interrupted run resumes from its last
epoch when the same command is run again). `--smoke` backs up too: a
resumed copy-task run continues the same stream of batches and ends with
the weights of an uninterrupted one. `--smoke-epochs` sets its epochs.
"""

import os
import sys

# Before anything imports TensorFlow: a quiet start (quiet_start.py).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import quiet_start  # noqa: E402, F401, I001

import dataclasses
import time

import keras
import numpy as np

from keras_attention import callbacks
from keras_attention import data
from keras_attention import decoding
from keras_attention import losses
from keras_attention import metrics
from keras_attention import schedules
from keras_attention import training
from keras_attention.checkpoints import average_checkpoints
from keras_attention.checkpoints import last_checkpoints
from keras_attention.data import translation
from keras_attention.models import Transformer
from keras_attention.training import cli
from keras_attention.training import runs
from keras_attention.utils import files
from keras_attention.utils.validation import check_rate

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import evaluate  # noqa: E402


@dataclasses.dataclass
class Config:
    preset: str = "small"
    vocabulary_size: int = cli.flag(
        8000,
        "Subwords of the shared SentencePiece vocabulary (reserved ids "
        "included); the model's vocabulary is the tokenizer's.",
        minimum=8,
    )
    tokens_per_batch: int = 4096
    max_length: int = 100
    epochs: int = 100
    minutes: float = 60.0
    warmup_steps: int = 1000
    learning_rate_scale: float = 1.0
    label_smoothing: float = 0.1
    dropout: float = cli.flag(
        None,
        "Residual and embedding dropout.",
        default_text="the preset's",
    )
    attention_dropout: float = cli.flag(
        0.0, "Dropout on the attention weights.", minimum=0.0
    )
    activation_dropout: float = cli.flag(
        0.0,
        "Dropout on the feed-forward network's inner activation.",
        minimum=0.0,
    )
    r_drop: float = cli.flag(
        0.0,
        "R-Drop: weight alpha of the symmetric KL divergence between two "
        "dropout passes (Liang et al., 2021; doubles the work of a "
        "step); 0 is off.",
        minimum=0.0,
    )
    sp_alpha: float = cli.flag(
        None,
        "Subword regularization: sample a SentencePiece segmentation of "
        "every training pair each epoch with this alpha in (0, 1] "
        "(Kudo, 2018); evaluation keeps the best segmentation.",
        default_text="off",
    )
    sp_nbest: int = cli.flag(
        -1,
        "With --sp-alpha: sample from the best N segmentations (N > 1), "
        "or from all of them (-1).",
    )
    average_last: int = 5
    beam_size: int = 4
    alpha: float = 0.6
    eval_limit: int = None
    eval_splits: str = cli.flag(
        "test2016,test2017",
        "Comma-separated Multi30k splits scored after training; a sweep "
        "that selects settings scores 'val' alone.",
    )
    data_dir: str = None
    output_dir: str = "runs/translation"
    strategy: str = "auto"
    mixed_precision: str = "auto"
    jit_compile: str = "auto"
    seed: int = 0


@dataclasses.dataclass
class Options:
    """What to run, beside the training settings of `Config`."""

    demo: bool = cli.flag(
        False,
        "A tiny model trained for 2 epochs of Multi30k, about 4 minutes on "
        "a quiet 2-core CPU; a fixed amount of work, so a slower machine "
        "takes longer but reaches the same BLEU (the copy task without "
        "data).",
    )
    recipe: str = cli.flag(
        None,
        "A named published configuration (flags given still win): "
        "tiny-4x128 is the Transformer-tiny Multi30k run (4+4 layers of "
        "width 128, feed-forward 256, 4 heads, dropout 0.3, shared "
        "embeddings, beam 5, the last 5 checkpoints averaged), 100 epochs "
        "with no time limit.",
        choices=("tiny-4x128",),
    )
    smoke: bool = False
    smoke_steps: int = cli.flag(
        None, "Training steps of the copy task.", default_text=600
    )
    smoke_epochs: int = cli.flag(
        None, "Epochs the copy task's steps are split into.", default_text=4
    )


# A fixed amount of work (epochs, no time limit): the demo's BLEU does not
# depend on how fast or busy the machine is.
DEMO = dict(
    preset="tiny",
    vocabulary_size=4000,
    tokens_per_batch=3072,
    epochs=2,
    minutes=0.0,
    warmup_steps=300,
    learning_rate_scale=1.0,
    average_last=1,
    beam_size=4,
    eval_limit=200,
)


# Published configurations, by what they are. The model's sizes and dropout
# are the `Transformer` preset of the same name; the embeddings are shared
# (source, target and output: the `Transformer`'s only arrangement).
RECIPES = {
    "tiny-4x128": dict(
        preset="tiny_4x128",
        beam_size=5,
        average_last=5,
        epochs=100,
        minutes=0.0,  # no time limit: the epochs end the run
        output_dir="runs/translation_tiny_4x128",
    ),
}


def parse_args(argv=None):
    """`(config, options)`: flags given > `--recipe`'s or `--demo`'s values
    > defaults."""
    parser = cli.make_parser(__doc__.split("\n")[0], Config, Options)
    given = cli.given_values(parser, argv)
    options = cli.build_config(Options, given)
    values = {}
    if options.demo:
        values.update(DEMO, output_dir="runs/translation_demo")
    if options.recipe:
        values.update(RECIPES[options.recipe])
    values.update(given)
    return cli.build_config(Config, values), options


def model_overrides(config):
    """The `Transformer.from_preset` arguments the flags set."""
    overrides = {
        "max_sequence_length": 256,
        "seed": config.seed,
        "attention_dropout": config.attention_dropout,
        "activation_dropout": config.activation_dropout,
    }
    if config.dropout is not None:
        overrides["dropout"] = config.dropout
    return overrides


def training_loss(config):
    """Label-smoothed cross-entropy, wrapped in R-Drop when `--r-drop`."""
    loss = losses.LabelSmoothedSparseCategoricalCrossentropy(
        epsilon=config.label_smoothing
    )
    if config.r_drop:
        loss = losses.RDropLoss(loss, alpha=config.r_drop)
    return loss


def check_regularizers(config):
    """Ends the program with a clear message for a bad regularizer flag."""
    try:
        for name in ("attention_dropout", "activation_dropout"):
            check_rate(name, getattr(config, name))
        if config.sp_alpha is not None:
            translation.check_sampling(config.sp_alpha, config.sp_nbest)
    except ValueError as error:
        raise SystemExit(str(error)) from None
    eval_splits(config)


def eval_splits(config):
    """The splits of `--eval-splits`, checked."""
    splits = tuple(
        s.strip() for s in config.eval_splits.split(",") if s.strip()
    )
    for split in splits:
        if split not in data.multi30k.SPLITS or split == "train":
            raise SystemExit(
                "--eval-splits takes val, test2016 and test2017. Received: "
                f"eval_splits={config.eval_splits!r}"
            )
    if not splits:
        raise SystemExit(
            f"--eval-splits names no split. Received: "
            f"eval_splits={config.eval_splits!r}"
        )
    return splits


def compile_model(model, config):
    optimizer = keras.optimizers.Adam(
        schedules.NoamSchedule(
            model.hidden_dim,
            warmup_steps=config.warmup_steps,
            scale=config.learning_rate_scale,
        ),
        beta_1=0.9,
        beta_2=0.98,
        epsilon=1e-9,
    )
    model.compile(
        optimizer=training.loss_scaled(optimizer),
        loss=training_loss(config),
        metrics=[metrics.MaskedAccuracy(), metrics.Perplexity()],
        jit_compile=training.jit_compile(config.jit_compile),
    )


def tensorboard_callback(log_dir):
    """`[TensorBoard(log_dir)]`, or `[]` with a note if it is not installed."""
    try:
        import tensorboard  # noqa: F401
    except ImportError:
        print("TensorBoard is not installed: no TensorBoard logs.")
        return []
    return [keras.callbacks.TensorBoard(log_dir)]


# --- Synthetic copy task -------------------------------------------------


def copy_task(count, rng, symbols=16, min_length=3, max_length=8):
    """Random sequences over `symbols` ids (after the reserved ones)."""
    rows = []
    for _ in range(count):
        length = rng.integers(min_length, max_length + 1)
        ids = rng.integers(4, 4 + symbols, size=length).tolist()
        rows.append(ids + [translation.END_ID])
    return rows


def run_smoke(config, steps=None, scope=None, epochs=None):
    """Trains on copying random sequences; reports exact-match accuracy.

    Writes `model.keras` and `metrics.json` to `config.output_dir`, and a
    `backup/` folder while training (a run started again with the same
    command resumes from its last completed epoch).
    """
    steps = steps or 600
    epochs = epochs or 4
    for name, value in (("smoke_steps", steps), ("smoke_epochs", epochs)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(
                f"Argument `{name}` must be a positive int. "
                f"Received: {name}={value!r}"
            )
    if steps < epochs:
        raise ValueError(
            "The copy task needs at least one step per epoch. Received: "
            f"smoke_steps={steps}, smoke_epochs={epochs}"
        )
    scope = scope or training.strategy_scope(config.strategy)
    # Workers other than the chief write to a temporary folder.
    config.output_dir = training.worker_path(config.output_dir)
    keras.utils.set_random_seed(config.seed)
    rng = np.random.default_rng(config.seed)
    train = copy_task(4000, rng)
    test = copy_task(200, rng)
    dataset, tokens = translation.make_dataset(
        train, train, tokens_per_batch=512, max_length=16, seed=config.seed
    )
    # Under jax DataParallel every batch must divide among the devices.
    dataset = training.divisible_batches(dataset)
    config.warmup_steps = 100
    config.learning_rate_scale = 0.5
    config.label_smoothing = 0.0
    backup = callbacks.BackupAndRestore(
        os.path.join(config.output_dir, "backup")
    )
    # One endless stream of batches split into epochs: a resumed run skips
    # the batches of the epochs its backup has done.
    steps_per_epoch = steps // epochs
    steps = steps_per_epoch * epochs
    done = backup.initial_epoch()
    dataset = dataset.repeat().skip(done * steps_per_epoch)
    with scope:
        model = Transformer(
            vocabulary_size=20,
            num_layers=2,
            hidden_dim=64,
            num_heads=4,
            intermediate_dim=128,
            dropout=0.0,
            max_sequence_length=16,
            seed=config.seed,
        )
        compile_model(model, config)
    start = time.monotonic()
    model.fit(
        dataset,
        steps_per_epoch=steps_per_epoch,
        epochs=epochs,
        shuffle=False,  # the stream is shuffled already
        callbacks=[backup],
        verbose=2,
    )
    seconds = time.monotonic() - start
    replicas = training.num_replicas()
    training.end_data_parallel()  # decoding takes batches of any size
    sources = np.zeros((len(test), 16), "int32")
    for i, row in enumerate(test):
        sources[i, : len(row)] = row
    outputs = decoding.strip_special(
        decoding.greedy_search(
            model,
            sources,
            translation.START_ID,
            translation.END_ID,
            max_extra_length=4,
        ),
        translation.END_ID,
    )
    exact = float(np.mean([o == t[:-1] for o, t in zip(outputs, test)]))
    print(
        f"Copy task: exact-match {exact:.1%} of {len(test)} sequences after "
        f"{steps} steps, {seconds:.0f}s of training "
        f"({keras.backend.backend()})"
    )
    os.makedirs(config.output_dir, exist_ok=True)
    files.atomic_save(model, os.path.join(config.output_dir, runs.MODEL_FILE))
    result = {
        "task": "copy",
        "exact_match": exact,
        "steps": steps,
        "training_time_s": round(seconds, 1),
        "parameter_count": int(model.count_params()),
        "backend": keras.backend.backend(),
        "replicas": replicas,
        "dtype_policy": keras.config.dtype_policy().name,
    }
    runs.write_metrics(config.output_dir, result)
    return result


# --- Multi30k ------------------------------------------------------------


def data_available(data_dir):
    """Whether Multi30k can be read (local directory or download)."""
    try:
        data.load_multi30k("val", data_dir=data_dir)
        return True
    except Exception as error:  # missing directory, file or network
        return str(error).split(". ")[0]


def average_last(model, checkpoint_dir, k):
    """Sets `model`'s weights to the mean of the last `k` epoch checkpoints.

    An epoch cut by the time limit has its checkpoint too (Keras ends the
    epoch, callbacks included, after `stop_training`), holding the weights
    at the limit, so the last `k` files are `k` distinct sets of weights.

    Returns:
        The files averaged (none when `k < 2` or only one exists; the
        weights are then left as they are).
    """
    last = last_checkpoints(checkpoint_dir, k, pattern="epoch-*.weights.h5")
    if len(last) < 2:
        return []
    average_checkpoints(model, last)
    print(f"Averaged the last {len(last)} checkpoints")
    return last


def run_multi30k(config, scope=None):
    check_regularizers(config)
    scope = scope or training.strategy_scope(config.strategy)
    keras.utils.set_random_seed(config.seed)
    # Workers other than the chief write to a temporary folder.
    config.output_dir = training.worker_path(config.output_dir)
    os.makedirs(config.output_dir, exist_ok=True)
    train_en, train_de = data.load_multi30k("train", data_dir=config.data_dir)
    tokenizer_path = os.path.join(config.output_dir, translation.TOKENIZER_FILE)
    if os.path.isfile(tokenizer_path):
        # A resumed run keeps its tokenizer; one of another size is
        # another run's.
        tokenizer = translation.load_tokenizer(tokenizer_path)
        if tokenizer.vocabulary_size() != config.vocabulary_size:
            raise SystemExit(
                f"{tokenizer_path} has {tokenizer.vocabulary_size()} "
                "subwords, another run's: use another --output-dir. "
                f"Received: vocabulary_size={config.vocabulary_size}"
            )
    else:
        tokenizer = translation.train_tokenizer(
            train_en + train_de,
            vocabulary_size=config.vocabulary_size,
            path=tokenizer_path,
        )
    if config.sp_alpha is not None:
        # A new segmentation of every pair each epoch (subword
        # regularization); evaluation tokenizes as usual.
        batches = translation.SampledBatches(
            tokenizer,
            train_en,
            train_de,
            alpha=config.sp_alpha,
            nbest_size=config.sp_nbest,
            tokens_per_batch=config.tokens_per_batch,
            max_length=config.max_length,
            seed=config.seed,
        )
        target_tokens = batches.target_tokens
    else:
        sources = translation.encode_sentences(
            tokenizer, train_en, max_length=config.max_length
        )
        targets = translation.encode_sentences(
            tokenizer, train_de, max_length=config.max_length
        )
        batches, target_tokens = translation.make_batches(
            sources,
            targets,
            tokens_per_batch=config.tokens_per_batch,
            max_length=config.max_length,
            seed=config.seed,
        )
    with scope:
        model = Transformer.from_preset(
            config.preset,
            tokenizer.vocabulary_size(),
            **model_overrides(config),
        )
        compile_model(model, config)
    checkpoints = os.path.join(config.output_dir, "checkpoints")
    os.makedirs(checkpoints, exist_ok=True)
    # `--minutes 0`: no time limit.
    time_limit = callbacks.TimeLimit(config.minutes * 60.0 or float("inf"))
    backup = callbacks.BackupAndRestore(
        os.path.join(config.output_dir, "backup")
    )
    # Epoch e's batches are a function of the seed and e in every process,
    # and the stream starts at the backup's epoch: a resumed run trains on
    # the batches an uninterrupted run would.
    done = backup.initial_epoch()
    # Under jax DataParallel every batch must divide among the devices (a
    # few pairs per batch are dropped; the token count is not adjusted).
    stream = training.divisible_batches(
        batches.as_dataset(epochs=None, initial_epoch=done)
    )
    multiple = training.batch_multiple()
    steps_per_epoch = sum(
        len(rows) >= multiple for rows, _ in batches.batches(epoch=0)
    )
    epoch_times = []
    epoch_steps = []

    class EpochTimer(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.start = time.monotonic()
            self.steps = 0

        def on_train_batch_end(self, batch, logs=None):
            self.steps += 1

        def on_epoch_end(self, epoch, logs=None):
            epoch_times.append(time.monotonic() - self.start)
            epoch_steps.append(self.steps)

    if config.minutes:
        print(
            f"Training for {config.epochs} epochs of {steps_per_epoch} "
            f"steps, or until {config.minutes:g} minutes have passed "
            "(--minutes), whichever comes first."
        )
    else:
        print(
            f"Training for {config.epochs} epochs of {steps_per_epoch} steps "
            "(no time limit: the result does not depend on the machine's "
            "speed)."
        )
    start = time.monotonic()
    history = model.fit(
        stream,
        steps_per_epoch=steps_per_epoch,
        epochs=config.epochs,
        shuffle=False,  # each epoch's batches are shuffled by the seed
        callbacks=[
            time_limit,
            EpochTimer(),
            callbacks.ModelCheckpoint(
                os.path.join(checkpoints, "epoch-{epoch:03d}.weights.h5"),
                save_weights_only=True,
            ),
            backup,
        ]
        + tensorboard_callback(os.path.join(config.output_dir, "logs")),
    )
    seconds = time.monotonic() - start
    training.end_data_parallel()  # evaluation takes batches of any size
    # Epochs of this run and of the interrupted runs it resumed.
    epochs_run = done + len(history.history.get("loss", []))
    tokens_per_second, throughput_note = target_throughput(
        target_tokens, steps_per_epoch, epoch_steps, epoch_times
    )
    averaged = average_last(model, checkpoints, config.average_last)
    files.atomic_save(model, os.path.join(config.output_dir, runs.MODEL_FILE))
    info = {
        "preset": config.preset,
        "backend": keras.backend.backend(),
        "epochs": epochs_run,
        "steps": int(model.optimizer.iterations.numpy())
        if hasattr(model.optimizer.iterations, "numpy")
        else int(keras.ops.convert_to_numpy(model.optimizer.iterations)),
        "training_time_s": round(seconds, 1),
        "parameter_count": int(model.count_params()),
        "dtype_policy": keras.config.dtype_policy().name,
        "tokens_per_second": tokens_per_second,
        "target_tokens_per_epoch": target_tokens,
        # Wall seconds of each epoch of this process (a resumed run lists
        # only its own epochs): with the per-epoch checkpoints they give
        # BLEU against training minutes.
        "epoch_seconds": [round(t, 1) for t in epoch_times],
        "first_epoch": done + 1,
        "epochs_planned": config.epochs,
        # A run cut by `--minutes` trained as far as the machine's speed
        # allowed: its figures say more about the machine than the model.
        "stopped_by_time_limit": time_limit.stopped_early,
        "tokenizer_fingerprint": translation.tokenizer_fingerprint(tokenizer),
        "averaged_checkpoints": [os.path.basename(p) for p in averaged],
        "config": dataclasses.asdict(config),
    }
    notes = {}
    if throughput_note:
        notes["tokens_per_second"] = throughput_note
    if time_limit.stopped_early:
        notes["stopped_by_time_limit"] = (
            f"--minutes {config.minutes:g} stopped training in epoch "
            f"{epochs_run} of {config.epochs}: the figures depend on the "
            "machine's speed and are not comparable with other runs"
        )
    if notes:
        info["notes"] = notes
    runs.write_json(config.output_dir, runs.TRAINING_FILE, info)
    speed = (
        f"{tokens_per_second:.0f} target tokens/s"
        if tokens_per_second is not None
        else "no training step in this process"
    )
    print(
        f"Trained {epochs_run} epochs in {seconds / 60:.1f} min, {speed}, "
        f"{info['parameter_count']:,} parameters"
    )
    results = evaluate.evaluate(
        model,
        tokenizer,
        data_dir=config.data_dir,
        beam_size=config.beam_size,
        alpha=config.alpha,
        limit=config.eval_limit,
        splits=eval_splits(config),
    )
    metrics = evaluate.write_metrics(config.output_dir, results)
    if time_limit.stopped_early:
        print(
            f"Not comparable: the {config.minutes:g}-minute limit "
            f"(--minutes) stopped training in epoch {epochs_run} of "
            f"{config.epochs}, so these figures depend on this machine's "
            "speed."
        )
    return metrics


def target_throughput(target_tokens, steps_per_epoch, epoch_steps, seconds):
    """`(target tokens per second, note)` over the epochs of this process.

    A full epoch holds `target_tokens`; an epoch cut short (by the time
    limit) is counted by its share of the steps, an estimate that the note
    says. With no step trained (a resumed run that had finished), `(None,
    note)`.
    """
    steps = sum(epoch_steps)
    if not steps or not sum(seconds):
        return None, "no training step ran in this process"
    tokens = target_tokens * steps / steps_per_epoch
    note = None
    if any(count != steps_per_epoch for count in epoch_steps):
        note = (
            "estimated: an epoch cut short is counted by its share of the steps"
        )
    return round(tokens / sum(seconds), 1), note


def main(argv=None):
    parser = cli.make_parser(__doc__.split("\n")[0], Config, Options)
    config, args = parse_args(argv)
    if (args.smoke_steps or 600) < (args.smoke_epochs or 4):
        parser.error(
            "--smoke-steps must be at least --smoke-epochs (one step per "
            f"epoch). Received: --smoke-steps {args.smoke_steps}, "
            f"--smoke-epochs {args.smoke_epochs}"
        )
    with cli.user_errors(parser, argv, config.output_dir):
        results = run(config, args)
    print(summary(config, results))
    return results


def summary(config, results):
    """The run's last lines: the headline figures (exact match of the copy
    task; SacreBLEU and chrF of each evaluated split), the training time
    and the files written (`runs.summary`)."""
    headline = {
        name.replace("bleu_sacrebleu_", "SacreBLEU ").replace("_", " "): value
        for name, value in results.items()
        if name == "exact_match"
        or name.startswith(("bleu_sacrebleu_", "chrf_"))
    }
    names = (
        runs.MODEL_FILE,
        translation.TOKENIZER_FILE,
        runs.METRICS_FILE,
        runs.TRAINING_FILE,
    )
    seconds = results.get("training_time_s")
    return runs.summary(config.output_dir, headline, seconds, names=names)


def run(config, args):
    # The strategy first: a multi-worker strategy must exist before
    # TensorFlow runs any operation.
    scope = training.strategy_scope(config.strategy)
    training.set_mixed_precision(config.mixed_precision)
    if args.smoke:
        return run_smoke(config, args.smoke_steps, scope, args.smoke_epochs)
    available = data_available(config.data_dir)
    if available is not True:
        if not args.demo:
            raise data.DataError(f"Multi30k is not available: {available}")
        print(
            "No Multi30k data (no --data-dir, no $KERAS_ATTENTION_DATA, no "
            "network): running the synthetic copy task instead."
        )
        return run_smoke(config, scope=scope)
    return run_multi30k(config, scope)


if __name__ == "__main__":
    main()
