"""The 0.1 beam search against the GNMT one, on one trained translator.

Usage: python benchmarks/search_comparison.py --run-dir RUN
    [--backend tensorflow] [--data-dir DIR] [--beam-size 4] [--alpha 0.6]
    [--rounds 3]

Translates Multi30k test2016 and test2017 with
`legacy_search.legacy_beam_search` (finished hypotheses
keep their beam slots) and `keras_attention.decoding.beam_search` (K live
hypotheses, a finished set, early stop), each after a warm-up pass over
the first 64 sentences (compilation is not timed). Per split the two
searches alternate for `--rounds` rounds, the first search of a round
swapping every round, so that neither always runs first. Records
SacreBLEU, tokenized lowercased BLEU (Moses on both sides), chrF, the
median decoding seconds (and every round's), the median over rounds of
GNMT / 0.1 time, and how many outputs differ. A search that translates
differently from one round to the next is an error. Writes
benchmarks/results/search_comparison.{json,md} (with `_beamK` before the
suffix when K is not 4).
"""

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--run-dir", required=True)
    parser.add_argument("--backend", default="tensorflow")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--beam-size", type=int, default=4)
    parser.add_argument("--alpha", type=float, default=0.6)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error(f"--rounds must be at least 1, received {args.rounds}")
    common.set_backend(args.backend)
    application = os.path.join(common.REPO_ROOT, "applications", "translation")
    sys.path.insert(0, application)
    import evaluate
    import legacy_search  # after the backend is set

    from keras_attention import data
    from keras_attention import decoding

    model, tokenizer = evaluate.load_translator(args.run_dir)
    searches = {
        "legacy (0.1)": legacy_search.legacy_beam_search,
        "GNMT": decoding.beam_search,
    }

    def translate(sentences, function):
        return decoding.translate(
            model,
            tokenizer,
            sentences,
            beam_size=args.beam_size,
            alpha=args.alpha,
            search=function,
        )

    rows, result = [], {"run_dir": os.path.basename(args.run_dir)}
    for split in ("test2016", "test2017"):
        sources, references = data.load_multi30k(split, args.data_dir)
        outputs = {name: None for name in searches}
        seconds = {name: [] for name in searches}
        for round_index in range(args.rounds):
            order = list(searches)
            if round_index % 2:
                order.reverse()
            for name in order:
                if round_index == 0:  # compiles the widths used most
                    translate(sources[:64], searches[name])
                start = time.perf_counter()
                hypotheses = translate(sources, searches[name])
                seconds[name].append(time.perf_counter() - start)
                if outputs[name] is not None and hypotheses != outputs[name]:
                    raise RuntimeError(
                        f"{name} translated {split} differently in round "
                        f"{round_index + 1} than in round 1"
                    )
                outputs[name] = hypotheses
                print(split, name, f"{seconds[name][-1]:.1f} s", flush=True)
        for name in searches:
            sacre, tok_lc, chrf = evaluate.bleu_scores(
                outputs[name], references
            )
            key = f"{split}_{'legacy' if 'legacy' in name else 'gnmt'}"
            median = float(np.median(seconds[name]))
            result[key] = {
                "bleu_sacrebleu": round(sacre, 2),
                "bleu_tok_lc": round(tok_lc, 2),
                "chrf": round(chrf, 2),
                "decoding_seconds": round(median, 1),
                "decoding_seconds_per_round": [
                    round(t, 1) for t in seconds[name]
                ],
            }
            rows.append(
                [split, name, f"{sacre:.2f}", f"{tok_lc:.2f}", f"{chrf:.2f}"]
                + [" / ".join(f"{t:.1f}" for t in seconds[name])]
                + [f"{median:.1f}"]
            )
            print(rows[-1], flush=True)
        legacy_seconds, gnmt_seconds = seconds.values()
        paired = np.median(np.divide(gnmt_seconds, legacy_seconds))
        result[f"{split}_gnmt_over_legacy_time"] = round(float(paired), 3)
        old, new = outputs.values()
        changed = sum(a != b for a, b in zip(old, new))
        result[f"{split}_outputs_changed"] = changed
        rows[-1] += [f"{paired:.2f}", f"{changed} of {len(new)}"]
        rows[-2] += ["", ""]
    result["beam_size"], result["alpha"] = args.beam_size, args.alpha
    result["rounds"] = args.rounds
    result["environment"] = common.environment(args.backend)
    headers = ["split", "search", "SacreBLEU", "tok. lc BLEU", "chrF"]
    headers += ["decoding s, per round", "median s", "GNMT / 0.1 time"]
    headers += ["outputs changed"]
    table = common.markdown_table(headers, rows)
    os.makedirs(common.RESULTS_DIR, exist_ok=True)
    name = "search_comparison"
    if args.beam_size != 4:
        name += f"_beam{args.beam_size}"
    path = os.path.join(common.RESULTS_DIR, name)
    common.write_json(path + ".json", result)
    with open(path + ".md", "w") as f:
        f.write(table)
    print(table)


if __name__ == "__main__":
    main()
