"""Evaluates a trained English->German Transformer on Multi30k.

Usage:
    python applications/translation/evaluate.py --model-dir runs/translation \
        [--data-dir DIR] [--beam-size 4] [--alpha 0.6] [--limit N] \
        [--dtype float32] [--splits val] [--average-last K] \
        [--output-json FILE]

Settings are chosen on `val` alone: `--splits val --average-last K
--beam-size B --alpha A --output-json runs/x/val_K_B_A.json` scores one
choice of averaged checkpoints (the last `K` epoch checkpoints of
`checkpoints/`, instead of the saved model's weights), beam size and
length penalty on the 1,014 validation pairs, without touching
`metrics.json` or the test sets.

Reads `model.keras`, `tokenizer.model` and `training.json` from the model
directory, translates test2016 and test2017 with beam search, and writes
`metrics.json` there with:

- `bleu_sacrebleu_test2016`, `bleu_sacrebleu_test2017`: SacreBLEU on
  detokenized, cased output against the raw references (13a tokenization);
- `bleu_tok_lc_test2016`, `bleu_tok_lc_test2017`: BLEU on lowercased
  text, hypotheses and references both tokenized with the Moses tokenizer
  (`keras_attention.metrics.tokenized_bleu`; the references then equal
  Multi30k's `*.lc.norm.tok.de` files): the figure Multi30k papers print;
- `chrf_test2016`, `chrf_test2017`: chrF (sacrebleu) on detokenized text;
- the training figures from `training.json` (time, parameters, tokens per
  second).
"""

import os
import sys

# Before anything imports TensorFlow: a quiet start (quiet_start.py).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import quiet_start  # noqa: E402, F401, I001
import json
import time

import keras

from keras_attention import data
from keras_attention import decoding

# Registers the model (and its loss, metric and schedule classes) that
# `keras.saving.load_model` looks up by name.
from keras_attention import losses  # noqa: F401
from keras_attention import metrics as registered_metrics  # noqa: F401
from keras_attention import models  # noqa: F401
from keras_attention import schedules  # noqa: F401
from keras_attention.checkpoints import average_checkpoints
from keras_attention.checkpoints import last_checkpoints
from keras_attention.data import translation
from keras_attention.training import cli
from keras_attention.training import runs

SAMPLES = 5
# What `--model-dir` must hold.
RUN_FILES = (runs.MODEL_FILE, translation.TOKENIZER_FILE)


def bleu_scores(hypotheses, references):
    """SacreBLEU (cased, 13a), tokenized lowercased BLEU (Moses on both
    sides) and chrF."""
    return (
        registered_metrics.sacre_bleu(hypotheses, references),
        registered_metrics.tokenized_bleu(hypotheses, references, "de"),
        registered_metrics.chrf(hypotheses, references),
    )


def load_translator(model_dir, dtype=None):
    """Loads the model and its tokenizer, checking that they match.

    `dtype` (for example `"float32"`) rebuilds the model under that dtype
    policy with the same weights, to decode in float32 what was trained
    under a mixed policy; `None` keeps the policy it was saved with.
    """
    model = keras.saving.load_model(os.path.join(model_dir, "model.keras"))
    if dtype is not None and model.dtype_policy.name != dtype:
        config = model.get_config()
        config["dtype"] = dtype
        rebuilt = model.__class__.from_config(config)
        rebuilt.set_weights(model.get_weights())
        model = rebuilt
    tokenizer = translation.load_tokenizer(
        os.path.join(model_dir, translation.TOKENIZER_FILE)
    )
    fingerprint = None
    info_path = os.path.join(model_dir, "training.json")
    if os.path.isfile(info_path):
        with open(info_path) as f:
            fingerprint = json.load(f).get("tokenizer_fingerprint")
    translation.check_tokenizer_matches(
        tokenizer, model.vocabulary_size, fingerprint
    )
    return model, tokenizer


def evaluate(
    model,
    tokenizer,
    data_dir=None,
    beam_size=4,
    alpha=0.6,
    limit=None,
    splits=("test2016", "test2017"),
):
    """Translates each split and returns a dict of BLEU figures."""
    results = {}
    for split in splits:
        sources, references = data.load_multi30k(split, data_dir=data_dir)
        if limit:
            sources, references = sources[:limit], references[:limit]
        start = time.monotonic()
        hypotheses = decoding.translate(
            model, tokenizer, sources, beam_size=beam_size, alpha=alpha
        )
        seconds = time.monotonic() - start
        sacre, tok_lc, chrf = bleu_scores(hypotheses, references)
        results[f"bleu_sacrebleu_{split}"] = round(sacre, 2)
        results[f"bleu_tok_lc_{split}"] = round(tok_lc, 2)
        results[f"chrf_{split}"] = round(chrf, 2)
        results[f"decoding_seconds_{split}"] = round(seconds, 1)
        print(
            f"{split}: SacreBLEU {sacre:.2f} | tokenized lowercased BLEU "
            f"{tok_lc:.2f} | chrF {chrf:.2f} | {len(sources)} sentences in "
            f"{seconds:.0f}s "
            f"(beam {beam_size}, alpha {alpha})"
        )
        if split == splits[0]:
            for source, hypothesis, reference in list(
                zip(sources, hypotheses, references)
            )[:SAMPLES]:
                print(
                    f"  EN:  {source}\n  OUT: {hypothesis}\n  REF: {reference}"
                )
    return results


def write_metrics(model_dir, results, merge=False):
    """Writes `metrics.json`: the training figures and `results` (added to
    the file's figures when `merge`)."""
    metrics = dict(runs.read_metrics(model_dir) or {}) if merge else {}
    info = runs.read_json(model_dir, runs.TRAINING_FILE)
    if info:
        for key in (
            "training_time_s",
            "parameter_count",
            "tokens_per_second",
            "preset",
            "backend",
            "epochs",
            "epochs_planned",
            "steps",
            "stopped_by_time_limit",
        ):
            if key in info:
                metrics[key] = info[key]
        if info.get("notes"):
            metrics["notes"] = dict(metrics.get("notes") or {}, **info["notes"])
    metrics.update(results)
    path = runs.write_metrics(model_dir, metrics, sort_keys=True)
    print(f"Wrote {path}")
    return metrics


def average_last_checkpoints(model, model_dir, k):
    """Sets `model`'s weights to the mean of the last `k` epoch checkpoints
    in `model_dir/checkpoints` (the weights train.py averages)."""
    paths = last_checkpoints(
        os.path.join(model_dir, "checkpoints"), k, pattern="epoch-*.weights.h5"
    )
    if len(paths) < k:
        raise data.DataError(
            f"--average-last {k} needs {k} epoch checkpoints; "
            f"{model_dir}/checkpoints has {len(paths)}. Received: "
            f"average_last={k}"
        )
    if k == 1:
        model.load_weights(paths[0])
    else:
        average_checkpoints(model, paths)
    return [os.path.basename(p) for p in paths]


def main(argv=None):
    parser = cli.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--model-dir",
        default="runs/translation",
        type=cli.run_folder("model_dir", *RUN_FILES),
    )
    parser.add_argument(
        "--data-dir", default=None, type=cli.typed(str, "data_dir")
    )
    parser.add_argument(
        "--beam-size", type=cli.typed(int, "beam_size"), default=4
    )
    parser.add_argument("--alpha", type=cli.typed(float, "alpha"), default=0.6)
    parser.add_argument("--limit", type=cli.typed(int, "limit"), default=None)
    parser.add_argument(
        "--dtype",
        default=None,
        choices=("float32",),
        help="Decode under this dtype policy (default: the saved one).",
    )
    parser.add_argument(
        "--splits",
        default="test2016,test2017",
        help="Comma-separated splits to score: val, test2016, test2017 "
        "(default: test2016,test2017).",
    )
    parser.add_argument(
        "--average-last",
        type=int,
        default=None,
        help="Average the last K epoch checkpoints of checkpoints/ instead "
        "of using the saved model's weights.",
    )
    parser.add_argument(
        "--output-json",
        default=None,
        help="Write the figures and settings to this file instead of "
        "metrics.json (for sweeps on val).",
    )
    args = parser.parse_args(argv)
    splits = tuple(s.strip() for s in args.splits.split(",") if s.strip())
    for split in splits or ("",):
        if split not in ("val", "test2016", "test2017"):
            parser.error(
                "--splits takes val, test2016 and test2017. Received: "
                f"splits={args.splits!r}"
            )
    if args.average_last is not None and args.average_last < 1:
        parser.error(
            "--average-last must be >= 1. Received: "
            f"average_last={args.average_last}"
        )
    with cli.user_errors(parser, argv):
        return evaluate_run(args, splits)


def evaluate_run(args, splits):
    model, tokenizer = load_translator(args.model_dir, args.dtype)
    averaged = None
    if args.average_last is not None:
        averaged = average_last_checkpoints(
            model, args.model_dir, args.average_last
        )
    results = evaluate(
        model,
        tokenizer,
        data_dir=args.data_dir,
        beam_size=args.beam_size,
        alpha=args.alpha,
        limit=args.limit,
        splits=splits,
    )
    if args.output_json:
        settings = {
            "model_dir": args.model_dir,
            "beam_size": args.beam_size,
            "alpha": args.alpha,
            "average_last": args.average_last,
            "averaged_checkpoints": averaged,
            "limit": args.limit,
            "dtype": args.dtype,
        }
        folder = os.path.dirname(os.path.abspath(args.output_json))
        os.makedirs(folder, exist_ok=True)
        with open(args.output_json, "w") as f:
            json.dump({**settings, **results}, f, indent=2, sort_keys=True)
        print(f"Wrote {args.output_json}")
        return
    if args.dtype is not None:
        # Beside the figures of the saved policy, not over them.
        results = {f"{k}_{args.dtype}": v for k, v in results.items()}
    return write_metrics(args.model_dir, results, merge=args.dtype is not None)


if __name__ == "__main__":
    main()
