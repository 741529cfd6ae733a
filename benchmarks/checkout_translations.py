"""Translations of one trained model by two checkouts of the library.

Usage: python benchmarks/checkout_translations.py --run-dir RUN
    [--before 132e97b] [--backend tensorflow] [--data-dir DIR]
    [--beam-sizes 4,1] [--name protocol_comparison]

Checks that a change to the decoding code left every output as it was: a
git worktree of `--before` (default 132e97b, the last commit before the
public decoding protocol, `initial_cache` / `decode_step`, replaced the
searches' private methods) and the current checkout each load
`RUN/model.keras` and `RUN/tokenizer.model`, and translate Multi30k
test2016 and test2017 (2,000 sentences) with `keras_attention.data.
translate` (beam search with alpha 0.6 for each beam size, greedy search
for beam size 1), each in a process of its own that imports only its
checkout's `keras_attention`. Reports, per split and search, how many of
the translations differ and each checkout's decoding seconds. Writes
`benchmarks/results/<name>_<backend>.{json,md}`.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

SPLITS = ("test2016", "test2017")


def worker(tree, run_dir, data_dir, beam_sizes, out_path):
    """Translates with the `keras_attention` of `tree`; writes JSON."""
    sys.path.insert(0, tree)
    import keras

    import keras_attention
    from keras_attention import data
    from keras_attention import losses  # noqa: F401  (registers classes)
    from keras_attention import metrics  # noqa: F401
    from keras_attention import models  # noqa: F401
    from keras_attention import schedules  # noqa: F401
    from keras_attention.data import translation

    package = os.path.dirname(os.path.abspath(keras_attention.__file__))
    if os.path.dirname(package) != os.path.abspath(tree):
        raise RuntimeError(f"imported {package}, not the package of {tree}")
    model = keras.saving.load_model(os.path.join(run_dir, "model.keras"))
    tokenizer = translation.load_tokenizer(
        os.path.join(run_dir, translation.TOKENIZER_FILE)
    )
    try:  # keras_attention.decoding.translate since 0.2.0
        from keras_attention.decoding import translate
    except ImportError:  # an earlier tree: keras_attention.data.translate
        translate = data.translate
    results = {}
    for split in SPLITS:
        sources, _ = data.load_multi30k(split, data_dir=data_dir)
        for beams in beam_sizes:
            translate(model, tokenizer, sources[:64], beam_size=beams)
            start = time.perf_counter()
            outputs = translate(model, tokenizer, sources, beam_size=beams)
            results[f"{split}/beam{beams}"] = {
                "seconds": time.perf_counter() - start,
                "outputs": outputs,
            }
    with open(out_path, "w") as f:
        json.dump(results, f)


def translate_in(tree, args, out_path):
    command = [
        sys.executable,
        os.path.abspath(__file__),
        "--worker",
        tree,
        "--run-dir",
        os.path.abspath(args.run_dir),
        "--beam-sizes",
        args.beam_sizes,
        "--out",
        out_path,
    ]
    if args.data_dir:
        command += ["--data-dir", args.data_dir]
    env = dict(os.environ, KERAS_BACKEND=args.backend)
    subprocess.run(command, check=True, env=env, cwd=tempfile.gettempdir())
    with open(out_path) as f:
        return json.load(f)


def compare(args):
    with tempfile.TemporaryDirectory() as folder:
        before_tree = os.path.join(folder, "before")
        subprocess.run(
            ["git", "worktree", "add", "--detach", before_tree, args.before],
            check=True,
            cwd=common.REPO_ROOT,
        )
        try:
            before = translate_in(
                before_tree, args, os.path.join(folder, "before.json")
            )
            now = translate_in(
                common.REPO_ROOT, args, os.path.join(folder, "now.json")
            )
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", before_tree],
                check=True,
                cwd=common.REPO_ROOT,
            )
    rows = []
    for key in before:
        old, new = before[key]["outputs"], now[key]["outputs"]
        rows.append(
            {
                "split_and_search": key,
                "sentences": len(old),
                "different_outputs": sum(a != b for a, b in zip(old, new)),
                "seconds_before": before[key]["seconds"],
                "seconds_now": now[key]["seconds"],
            }
        )
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", required=True)
    parser.add_argument("--before", default="132e97b")
    parser.add_argument("--backend", default="tensorflow")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--beam-sizes", default="4,1")
    parser.add_argument("--name", default="protocol_comparison")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--out", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    beam_sizes = common.parse_ints(args.beam_sizes)
    if args.worker:
        worker(args.worker, args.run_dir, args.data_dir, beam_sizes, args.out)
        return
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
        cwd=common.REPO_ROOT,
    ).stdout.strip()
    rows = compare(args)
    report = {
        "benchmark": "checkout_translations",
        "backend": args.backend,
        "before": args.before,
        "now": head,
        "run_dir": os.path.basename(os.path.normpath(args.run_dir)),
        "environment": common.environment(args.backend),
        "results": rows,
    }
    total = sum(r["different_outputs"] for r in rows)
    markdown = (
        f"# Translations at {args.before} and at {head}, {args.backend}\n\n"
        f"Command: `python benchmarks/checkout_translations.py --run-dir "
        f"RUN --before {args.before} --backend {args.backend} --beam-sizes "
        f"{args.beam_sizes}`\n\n"
        + common.markdown_table(
            [
                "split / search",
                "sentences",
                "different outputs",
                f"seconds at {args.before}",
                f"seconds at {head}",
            ],
            [
                (
                    r["split_and_search"],
                    r["sentences"],
                    r["different_outputs"],
                    f"{r['seconds_before']:.1f}",
                    f"{r['seconds_now']:.1f}",
                )
                for r in rows
            ],
        )
        + f"\nDifferent outputs in all: {total}.\n"
    )
    common.write_report(f"{args.name}_{args.backend}", report, markdown)
    print(markdown)


if __name__ == "__main__":
    main()
