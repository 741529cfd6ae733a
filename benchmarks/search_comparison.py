"""The 0.1 beam search against the GNMT one, on one trained translator.

Usage: python benchmarks/search_comparison.py --run-dir RUN
    [--backend tensorflow] [--data-dir DIR] [--beam-size 4] [--alpha 0.6]

Translates Multi30k test2016 and test2017 with
`keras_attention.decoding.search.legacy_beam_search` (finished hypotheses
keep their beam slots) and `keras_attention.decoding.beam_search` (K live
hypotheses, a finished set, early stop), one after the other per split,
each after a warm-up pass over the first 64 sentences (compilation is not
timed). Records SacreBLEU, tokenized lowercased BLEU (Moses on both
sides), chrF, decoding seconds and how many outputs differ. Writes
benchmarks/results/search_comparison.{json,md}.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--run-dir", required=True)
    parser.add_argument("--backend", default="tensorflow")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--beam-size", type=int, default=4)
    parser.add_argument("--alpha", type=float, default=0.6)
    args = parser.parse_args()
    common.set_backend(args.backend)
    application = os.path.join(common.REPO_ROOT, "applications", "translation")
    sys.path.insert(0, application)
    import evaluate

    from keras_attention import data
    from keras_attention import decoding
    from keras_attention.data import translation
    from keras_attention.decoding import search

    model, tokenizer = evaluate.load_translator(args.run_dir)
    searches = {
        "legacy (0.1)": search.legacy_beam_search,
        "GNMT": decoding.beam_search,
    }
    rows, result = [], {"run_dir": os.path.basename(args.run_dir)}
    for split in ("test2016", "test2017"):
        sources, references = data.load_multi30k(split, args.data_dir)
        outputs = {}
        for name, function in searches.items():

            def run(sentences, function=function):
                return translation.translate(
                    model,
                    tokenizer,
                    sentences,
                    beam_size=args.beam_size,
                    alpha=args.alpha,
                    search=function,
                )

            run(sources[:64])  # compiles the widths used most
            start = time.perf_counter()
            hypotheses = run(sources)
            seconds = time.perf_counter() - start
            outputs[name] = hypotheses
            sacre, tok_lc, chrf = evaluate.bleu_scores(hypotheses, references)
            key = f"{split}_{'legacy' if 'legacy' in name else 'gnmt'}"
            result[key] = {
                "bleu_sacrebleu": round(sacre, 2),
                "bleu_tok_lc": round(tok_lc, 2),
                "chrf": round(chrf, 2),
                "decoding_seconds": round(seconds, 1),
            }
            rows.append(
                [split, name, f"{sacre:.2f}", f"{tok_lc:.2f}", f"{chrf:.2f}"]
                + [f"{seconds:.1f}"]
            )
            print(rows[-1], flush=True)
        old, new = outputs.values()
        changed = sum(a != b for a, b in zip(old, new))
        result[f"{split}_outputs_changed"] = changed
        rows[-1].append(f"{changed} of {len(new)}")
        rows[-2].append("")
    result["beam_size"], result["alpha"] = args.beam_size, args.alpha
    result["environment"] = common.environment(args.backend)
    headers = ["split", "search", "SacreBLEU", "tok. lc BLEU", "chrF"]
    headers += ["decoding s", "outputs changed"]
    table = common.markdown_table(headers, rows)
    os.makedirs(common.RESULTS_DIR, exist_ok=True)
    path = os.path.join(common.RESULTS_DIR, "search_comparison")
    common.write_json(path + ".json", result)
    with open(path + ".md", "w") as f:
        f.write(table)
    print(table)


if __name__ == "__main__":
    main()
