"""Training throughput of the NLI models: the application's settings, side
by side, in one process.

Each model of the NLI application (mean of word vectors, the decomposable
attention model without and with intra-sentence attention, and the ReSAN
classifier with its REINFORCE-trained token samplers) is built and
compiled exactly as `applications/nli/train.py` builds it (its
`build_model`, optimizer included), once per setting, and trained with
`model.fit` on the same SNLI training pairs in the application's
length-bucketed batches. A setting is a list of the application's flags:

- `old`: the defaults before they changed (`--batch-size 32
  --mixed-precision none --jit-compile auto --no-per-input-widths`);
- `new`: the application's defaults today (no flags);
- any other: `--setting "name=--batch-size 128 --jit-compile true"`.

Every (model, setting) first fits one warm-up epoch over the timed pairs
(so that each batch width is compiled); then one epoch of each is timed
round-robin, `--repeats` times, the order rotating every round
(`common.time_interleaved`). The table gives the median pairs per second,
the range, and each setting's median ratio to the first setting, paired
round by round.

Usage (from the repository root):

    KERAS_ATTENTION_DATA=DATA python benchmarks/nli_throughput.py \\
        --backend tensorflow --pairs 2048 --repeats 5

Writes `benchmarks/results/nli_throughput_<backend>.json` and `.md`.
"""

import argparse
import importlib.util
import os
import shlex
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402

MODELS = ("bow", "decomposable", "decomposable_intra", "resan")
OLD_DEFAULTS = (
    "--batch-size 32 --mixed-precision none --jit-compile auto "
    "--no-per-input-widths"
)
SETTINGS = {"old": OLD_DEFAULTS, "new": ""}
APPLICATION = os.path.join(common.REPO_ROOT, "applications", "nli", "train.py")


def load_application():
    spec = importlib.util.spec_from_file_location("nli_train", APPLICATION)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def parse_settings(texts):
    """`["old", "new", "name=--flag value"]` -> `{name: flags}`."""
    settings = {}
    for text in texts:
        name, _, flags = text.partition("=")
        if not _ and name not in SETTINGS:
            raise SystemExit(
                f"--setting: {name!r} is neither {sorted(SETTINGS)} nor "
                "name=FLAGS"
            )
        settings[name] = flags if _ else SETTINGS[name]
    return settings


def model_flags(name):
    if name == "decomposable_intra":
        return ["--model", "decomposable", "--intra"]
    return ["--model", name]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="tensorflow")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--pairs", type=int, default=2048)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument(
        "--setting",
        action="append",
        help="old, new, or name=FLAGS (repeatable; default: old and new).",
    )
    parser.add_argument("--json-out", default=None)
    args = parser.parse_args(argv)
    names = [n for n in args.models.split(",") if n]
    unknown = sorted(set(names) - set(MODELS))
    if unknown:
        parser.error(f"--models: unknown {unknown}; choose from {MODELS}")
    settings = parse_settings(args.setting or ["old", "new"])

    common.set_backend(args.backend)
    import keras

    from keras_attention import training
    from keras_attention.training import pair_tasks

    train = load_application()
    base = ["--data-dir", args.data_dir] if args.data_dir else []
    arrays, vocabulary, matrix, info = train.prepare_data(
        train.parse_args(base)
    )
    x, y = arrays["train"]
    x = {key: ids[: args.pairs] for key, ids in x.items()}
    y = y[: args.pairs]
    pairs = len(y)

    configurations = []
    for name in names:
        for setting, flags in settings.items():
            config = train.parse_args(
                base + model_flags(name) + shlex.split(flags)
            )
            training.set_mixed_precision(config.mixed_precision)
            keras.utils.set_random_seed(config.seed)
            model = train.build_model(config, arrays, vocabulary, matrix)
            batches = pair_tasks.bucketed(x, y, config)
            configurations.append(
                {
                    "model": name,
                    "setting": setting,
                    "flags": flags,
                    "batch_size": config.batch_size,
                    "mixed_precision": config.mixed_precision,
                    "jit_compile": config.jit_compile,
                    "keras_model": model,
                    "batches": batches,
                }
            )
            training.set_mixed_precision("none")
            start = time.perf_counter()
            model.fit(batches.as_dataset(), epochs=1, verbose=0)
            warmup = time.perf_counter() - start
            configurations[-1]["warmup_seconds"] = warmup
            print(f"{name} {setting}: warm-up {warmup:.1f} s", flush=True)

    def step(configuration):
        def run():
            dataset = configuration["batches"].as_dataset()
            configuration["keras_model"].fit(dataset, epochs=1, verbose=0)

        return run

    times = common.time_interleaved(
        [step(c) for c in configurations], args.repeats
    )
    results = []
    first = {}
    for configuration, seconds in zip(configurations, times):
        model = configuration.pop("keras_model")
        configuration.pop("batches")
        rates = [pairs / s for s in seconds]
        first.setdefault(configuration["model"], seconds)
        ratios = [
            base_s / s
            for base_s, s in zip(first[configuration["model"]], seconds)
        ]
        results.append(
            {
                **configuration,
                "pairs_per_second": statistics.median(rates),
                "pairs_per_second_all": rates,
                "ratio_to_first_setting": statistics.median(ratios),
                "ratios_by_round": ratios,
                "seconds_per_epoch": seconds,
                "trainable_parameters": pair_tasks.trainable_parameters(model),
            }
        )
    report = {
        "benchmark": "nli_throughput",
        "backend": args.backend,
        "pairs": pairs,
        "repeats": args.repeats,
        "settings": settings,
        "padded_length": info["padded_length"],
        "environment": common.environment(args.backend),
        "results": results,
    }
    rows = [
        (
            r["model"],
            r["setting"],
            f"`{r['flags'] or '(defaults)'}`",
            f"{r['pairs_per_second']:.0f}",
            f"{min(r['pairs_per_second_all']):.0f}-"
            f"{max(r['pairs_per_second_all']):.0f}",
            f"{r['ratio_to_first_setting']:.2f}",
        )
        for r in results
    ]
    table = common.markdown_table(
        (
            "model",
            "setting",
            "flags",
            "pairs/s (median)",
            "range",
            f"vs {next(iter(settings))} (paired median)",
        ),
        rows,
    )
    command = " ".join(
        ["python benchmarks/nli_throughput.py", "--backend", args.backend]
        + ["--pairs", str(args.pairs), "--repeats", str(args.repeats)]
        + ["--models", ",".join(names)]
        + [f"--setting {shlex.quote(s)}" for s in (args.setting or [])]
    )
    header = (
        f"# NLI training throughput ({args.backend}, the application's "
        f"settings, {pairs} SNLI training pairs, {args.repeats} interleaved "
        f"repeats)\n\n`{command}`\n\n"
        f"Load average at the end: "
        f"{report['environment']['load_average_1_5_15min']}.\n\n"
    )
    common.write_report(
        f"nli_throughput_{args.backend}", report, header + table, args.json_out
    )


if __name__ == "__main__":
    main()
