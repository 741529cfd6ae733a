"""Steady-state training speed of one NLI model of a checkout, at its
application's defaults: for comparing two checkouts of this repository.

`nli_throughput.py` compares settings within one checkout; a code change
that speeds up every setting (for example a faster attention op) shows
only here. Point `--repo` at each checkout (a `git worktree` of the older
commit) and alternate the two commands, e.g. with a command timer that
runs them in turn; each prints one line of JSON with the median pairs per
second of `--epochs` epochs after a warm-up epoch.

Usage (from the repository root):

    KERAS_ATTENTION_DATA=DATA python benchmarks/nli_epoch_speed.py \\
        --repo . --model resan --pairs 4096

The application of the checkout builds, compiles and batches the model:
its `build_model` where it has one, otherwise (older checkouts) its
`MODEL_BUILDERS`, `model_kwargs`, `make_optimizer` and `bucketed`, as
its `train` did.
"""

import argparse
import importlib.util
import json
import os
import statistics
import sys
import time


def load_application(repo):
    path = os.path.join(repo, "applications", "nli", "train.py")
    spec = importlib.util.spec_from_file_location("nli_train", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build(train, config, arrays, vocabulary, matrix):
    """The model and its training batches, as the checkout's `train`."""
    if hasattr(train, "build_model"):
        from keras_attention.training import pair_tasks

        model = train.build_model(config, arrays, vocabulary, matrix)
        return model, lambda x, y: pair_tasks.bucketed(x, y, config)
    from keras_attention import training

    model = train.MODEL_BUILDERS[config.model](
        vocabulary_size=len(vocabulary),
        embeddings=matrix,
        **train.model_kwargs(config),
    )
    model.compile(
        optimizer=training.loss_scaled(train.make_optimizer(config)),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
        jit_compile=training.jit_compile(config.jit_compile),
    )
    return model, lambda x, y: train.bucketed(x, y, config)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", default=".")
    parser.add_argument("--backend", default="tensorflow")
    parser.add_argument("--model", default="resan")
    parser.add_argument("--pairs", type=int, default=4096)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args(argv)
    repo = os.path.abspath(args.repo)
    sys.path.insert(0, repo)
    os.environ["KERAS_BACKEND"] = args.backend
    import keras

    from keras_attention import training

    train = load_application(repo)
    flags = ["--model", args.model]
    flags += ["--data-dir", args.data_dir] if args.data_dir else []
    config = train.parse_args(flags)
    arrays, vocabulary, matrix, _ = train.prepare_data(config)
    training.set_mixed_precision(config.mixed_precision)
    keras.utils.set_random_seed(config.seed)
    model, batches_of = build(train, config, arrays, vocabulary, matrix)
    x, y = arrays["train"]
    x = {name: ids[: args.pairs] for name, ids in x.items()}
    batches = batches_of(x, y[: args.pairs])
    model.fit(batches.as_dataset(), epochs=1, verbose=0)  # compiles
    seconds = []
    for _ in range(args.epochs):
        start = time.perf_counter()
        model.fit(batches.as_dataset(), epochs=1, verbose=0)
        seconds.append(time.perf_counter() - start)
    pairs = len(y[: args.pairs])
    print(
        json.dumps(
            {
                "repo": repo,
                "model": args.model,
                "backend": args.backend,
                "batch_size": config.batch_size,
                "pairs": pairs,
                "pairs_per_second": pairs / statistics.median(seconds),
                "seconds_per_epoch": seconds,
            }
        )
    )


if __name__ == "__main__":
    main()
