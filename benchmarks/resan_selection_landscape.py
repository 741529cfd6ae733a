"""The task cost a trained ReSAN model pays for each head and dependent rate.

The samplers learn from REINFORCE, which follows the expected reward of
their selections under the soft network as it is. This script measures
that reward surface directly: every sampler keeps each real token with a
fixed probability (its keep logit's kernel set to zero and its bias to
`logit(q)`), the model predicts the `--split` pairs with those sampled
selections (`--draws` times per cell, dropout off), and the mean task cost
is recorded for every pair of head rate `q_h` and dependent rate `q_d`:

```
cost(q_h, q_d) = mean over pairs and draws of the model's task_cost:
                 0.5 * (score - y)^2      (relatedness, MSE objective)
                 cross-entropy            (NLI)
reward(q_h, q_d) = -(cost + lambda * percentage)  (the measured mean
                                                   percentage, ~ q_h * q_d)
```

Beside the grid it records the model's own selection (the inference
rule; its head and dependent columns give the share of real tokens each
sampler keeps, and the JSON their mean keep probabilities) and every real
token selected. `--rates none` measures only those two. The model is the
run's; its weights are changed only in this process. A model saved in its
soft-only phase is measured as the samplers find it when their phase
starts (the schedule's counter is moved past it here).

Usage (from the repository root):

    KERAS_ATTENTION_DATA=DATA python benchmarks/resan_selection_landscape.py \\
        --backend jax --run-dir RUN --split dev --name NAME

Writes `benchmarks/results/NAME.json` and `.md`.
"""

import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402

DEFAULT_RATES = "0.02,0.14,0.5,0.86,0.98"


def parse_rates(text):
    if text.strip() == "none":
        return []
    try:
        rates = [float(part) for part in text.split(",") if part.strip()]
    except ValueError:
        rates = []
    if not rates or any(not 0.0 < q < 1.0 for q in rates):
        raise ValueError(
            f"--rates must be probabilities in (0, 1). Received: {text!r}"
        )
    return rates


def samplers(model):
    from keras_attention.layers import ReinforcedSequenceSampler

    found = {
        layer.name: layer
        for layer in model._flatten_layers(include_self=False)
        if isinstance(layer, ReinforcedSequenceSampler)
    }
    if sorted(found) != ["dependent_sampler", "head_sampler"]:
        raise ValueError(
            "Expected a ReSAN model of the authors' encoder (one head and "
            f"one dependent sampler). Received samplers: {sorted(found)}"
        )
    return found["head_sampler"], found["dependent_sampler"]


def fix_rate(sampler, rate):
    # Every token kept with probability `rate`, whatever its features.
    import numpy as np

    kernel = sampler.keep_dense.kernel
    sampler.keep_dense.kernel.assign(np.zeros(kernel.shape, "float32"))
    sampler.keep_dense.bias.assign([math.log(rate / (1.0 - rate))])


def keep_rates(model, x, batch_size=256, band=0.1):
    """Each sampler's share of real tokens kept by its inference rule, its
    mean keep probability, and the share of real tokens whose keep
    probability lies within `band` of the 0.5 threshold (how near its
    inference selection is to a coin toss), over every sentence of `x`."""
    import numpy as np
    from keras import ops

    embedding = model.encoder.get_layer("word_embedding")
    pair = samplers(model)
    totals = {"head": [0.0, 0.0, 0.0], "dependent": [0.0, 0.0, 0.0]}
    real_tokens = 0.0
    for ids in x.values():
        for start in range(0, len(ids), batch_size):
            batch = ids[start : start + batch_size]
            mask = batch != 0
            vectors = embedding(batch)
            for role, sampler in zip(totals, pair):
                selection, _, probabilities = sampler(
                    vectors, mask=mask, return_probabilities=True
                )
                totals[role][0] += float(
                    np.sum(ops.convert_to_numpy(selection))
                )
                probabilities = ops.convert_to_numpy(probabilities)
                totals[role][1] += float(
                    np.sum(np.where(mask, probabilities, 0))
                )
                near = np.abs(probabilities - 0.5) < band
                totals[role][2] += float(np.sum(mask & near))
            real_tokens += float(mask.sum())
    names = ("kept", "keep_probability", "near_threshold")
    return {
        f"{role}_{name}": value / real_tokens
        for role, values in totals.items()
        for name, value in zip(names, values)
    }


def load_pairs(run_dir, config, split, data_dir):
    """Inputs, targets and the task of a relatedness or NLI run."""
    import numpy as np

    from keras_attention import data
    from keras_attention.training import runs

    index = data.vocabulary_index(runs.read_vocabulary(run_dir))

    def ids(sentences):
        # Strings are split with `data.tokenize`, as the applications do.
        return data.word_ids(sentences, index, max_length=config["max_length"])[
            0
        ]

    if "objective" in config:
        rows = data.load_sick(split, data_dir=data_dir)
        x = {n: ids(rows[n]) for n in ("sentence_a", "sentence_b")}
        return x, np.asarray(rows["relatedness"], "float64"), "relatedness"
    if config["dataset"] == "sick":
        rows = data.load_sick(split, data_dir=data_dir)
        first, second, labels = "sentence_a", "sentence_b", "entailment"
    else:
        rows = data.load_snli(split, data_dir=data_dir)
        first, second, labels = "premise", "hypothesis", "label"
    x = {"premise": ids(rows[first]), "hypothesis": ids(rows[second])}
    return x, data.encode_labels(rows[labels]), "nli"


def task_figures(model, task, outputs, y):
    """`(mean cost, quality)`: the model's own training cost
    (`model.task_cost`, the one its reward uses) and r or accuracy."""
    import numpy as np
    from keras import ops

    cost = float(np.mean(ops.convert_to_numpy(model.task_cost(y, outputs))))
    if task == "relatedness":
        score = np.asarray(outputs["score"], "float64")
        return cost, float(np.corrcoef(score, y)[0, 1])
    predicted = np.argmax(outputs["probabilities"], -1)
    return cost, float(np.mean(predicted == y))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="jax")
    parser.add_argument("--run-dir", required=True)
    parser.add_argument("--model-file", default="model.keras")
    parser.add_argument("--split", choices=("dev", "test"), default="dev")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--rates", default=DEFAULT_RATES)
    parser.add_argument("--draws", type=int, default=3)
    parser.add_argument(
        "--pairs",
        type=int,
        default=0,
        help="Measure the split's first N pairs only (0: all of them).",
    )
    parser.add_argument("--name", default="resan_selection_landscape")
    parser.add_argument("--json-out", default=None)
    args = parser.parse_args(argv)
    try:
        rates = parse_rates(args.rates)
    except ValueError as error:
        parser.error(str(error))
    if args.draws < 1:
        parser.error(f"--draws must be at least 1. Received: {args.draws}")
    if args.pairs < 0:
        parser.error(f"--pairs must be 0 or more. Received: {args.pairs}")

    common.set_backend(args.backend)
    import numpy as np

    from keras_attention import data
    from keras_attention.models.resan import sampler_inference
    from keras_attention.training import runs

    config = runs.read_config(args.run_dir)
    model = runs.load_model(args.run_dir, file_name=args.model_file)
    x, y, task = load_pairs(args.run_dir, config, args.split, args.data_dir)
    if args.pairs:
        x = {name: ids[: args.pairs] for name, ids in x.items()}
        y = y[: args.pairs]
    head, dependent = samplers(model)

    def predict():
        return data.predict_in_buckets(model, x, batch_size=256)

    rows = []
    schedule = [
        layer for layer in model.layers if layer.name == "training_schedule"
    ]
    step = int(np.asarray(schedule[0].step.numpy())) if schedule else None
    if schedule:
        # In the soft-only phase the schedule selects every token at
        # inference; past it, the samplers decide.
        schedule[0].step.assign(schedule[0].soft_only_steps + 1)
    outputs = predict()
    cost, quality = task_figures(model, task, outputs, y)
    own_rate = float(np.mean(outputs["selection_percentage"]))
    own = keep_rates(model, x)
    rows.append(
        (
            "model's samplers",
            round(own["head_kept"], 4),
            round(own["dependent_kept"], 4),
            own_rate,
            cost,
            quality,
        )
    )
    saved = [
        (s.keep_dense.kernel.numpy(), s.keep_dense.bias.numpy())
        for s in (head, dependent)
    ]
    # The samplers draw at inference too (the rest stays in inference
    # mode: no dropout).
    with sampler_inference(model, "sample"):
        for head_rate in rates:
            for dependent_rate in rates:
                fix_rate(head, head_rate)
                fix_rate(dependent, dependent_rate)
                draws = [predict() for _ in range(args.draws)]
                figures = [task_figures(model, task, out, y) for out in draws]
                percentage = np.mean(
                    [np.mean(out["selection_percentage"]) for out in draws]
                )
                rows.append(
                    (
                        "fixed rates",
                        head_rate,
                        dependent_rate,
                        float(percentage),
                        float(np.mean([c for c, _ in figures])),
                        float(np.mean([q for _, q in figures])),
                    )
                )
                print(rows[-1], flush=True)
    for sampler, (kernel, bias) in zip((head, dependent), saved):
        sampler.keep_dense.kernel.assign(kernel)
        sampler.keep_dense.bias.assign(bias)
    if schedule and schedule[0].soft_only_steps > 0:
        # Back in the soft-only phase: every real token at inference.
        schedule[0].step.assign(0)
        outputs = predict()
        cost, quality = task_figures(model, task, outputs, y)
        rows.append(("every real token", 1.0, 1.0, 1.0, cost, quality))

    penalty = float(model.sparsity_penalty)
    quality_name = "pearson" if task == "relatedness" else "accuracy"
    report = {
        "run_dir": args.run_dir
        if not os.path.isabs(args.run_dir)
        else os.path.basename(os.path.normpath(args.run_dir)),
        "model_file": args.model_file,
        "split": args.split,
        "pairs": int(len(y)),
        "task": task,
        "draws": args.draws,
        "schedule_step_saved": step,
        "sparsity_penalty": penalty,
        # The model's own samplers, per sampler: share of real tokens kept
        # at inference, mean keep probability, and share of real tokens
        # with a keep probability within 0.1 of the 0.5 threshold.
        "own_samplers": own,
        "rows": [
            {
                "selection": kind,
                "head_rate": h,
                "dependent_rate": d,
                "selection_percentage": pct,
                "mean_cost": cost,
                "reward": -(cost + penalty * pct),
                quality_name: quality,
            }
            for kind, h, d, pct, cost, quality in rows
        ],
        "environment": common.environment(args.backend),
    }
    table = common.markdown_table(
        [
            "selection",
            "head rate",
            "dependent rate",
            "percentage",
            "mean cost",
            "reward",
            quality_name,
        ],
        [
            (
                row["selection"],
                row["head_rate"],
                row["dependent_rate"],
                f"{row['selection_percentage']:.4f}",
                f"{row['mean_cost']:.4f}",
                f"{row['reward']:.4f}",
                f"{row[quality_name]:.4f}",
            )
            for row in report["rows"]
        ],
    )
    command = "python benchmarks/resan_selection_landscape.py " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    samplers_line = "; ".join(
        f"{role}s kept {own[f'{role}_kept']:.4f}, mean keep probability "
        f"{own[f'{role}_keep_probability']:.3f}, within 0.1 of the "
        f"threshold {own[f'{role}_near_threshold']:.4f}"
        for role in ("head", "dependent")
    )
    markdown = (
        f"`{command}`\n\nThe model's samplers (share of real tokens): "
        f"{samplers_line}.\n\n{table}"
    )
    common.write_report(args.name, report, markdown, args.json_out)
    return report


if __name__ == "__main__":
    main()
