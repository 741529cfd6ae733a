"""
Title: ReSAN: hard token selection and soft attention
Author: keras_attention contributors
Date created: 2026/11/30
Last modified: 2026/12/07
Description: Train a small ReSAN sentence encoder on SICK relatedness (or load one trained by the application), then look at which tokens its samplers select and the soft attention among them.
Accelerator: None
"""

"""
## Introduction

Reinforced self-attention (ReSA, Shen et al., 2018) combines two kinds of
attention. Two *reinforced sequence samplers* (RSS) make hard, discrete
choices: one picks the **heads**, the tokens whose context is computed, the
other the **dependents**, the tokens that may be attended to. Soft
multi-dimensional attention then runs only among the selected tokens. The
samplers get no gradient from the output (their choices are discrete); they
learn by policy gradient (REINFORCE), with the task's result as reward.

ReSAN, the sentence encoder built from it, runs one forward and one backward
ReSA layer over the word vectors and pools the result into one vector with
source2token attention. `keras_attention.models.ReSANRelatedness` puts two
such encoders (shared weights) under a small head that predicts a SICK
relatedness score between 1 and 5; its `compute_loss` adds the REINFORCE
loss, so plain `fit` trains everything.

This walkthrough trains a small ReSAN on SICK for a few seconds, then draws,
for the paper's two example sentences, which tokens the samplers selected
and the soft attention matrix among them, the view of the paper's Figure 2.
A model trained this briefly has not learned what a fully trained one
selects, so the same pictures can be drawn from a model trained by an
application: pass its run folder as `--model-dir`. Both pair applications
work: `applications/relatedness/train.py` (the authors' encoder, loss,
reward and schedule; about 12 minutes on a 2-core CPU) and
`applications/nli/train.py --model resan`. With `--model-file last.keras`
a relatedness run gives the model at the end of training (it keeps its
best dev epoch as `model.keras`, which may come from before the samplers
trained). The figures in the README come from an SNLI run, seed 2 of
ReSAN on the first 100,000 pairs with 50-d GloVe, whose samplers keep
41.7% of the test tokens at inference (applications/nli/README.md, run
(8); about 130 minutes on one core):

```
python applications/nli/train.py --model resan --dataset snli \
    --train-data first100000 --vectors glove50 --epochs 13 \
    --ema-momentum 0.999 --sampler-optimizer adadelta \
    --time-limit-minutes 128 --seed 2 \
    --output-dir runs/snli100k_resan_glove50_seed2
python tutorials/resan.py --model-dir runs/snli100k_resan_glove50_seed2
```

Data comes from `keras_attention.data` (`--data-dir` or
`$KERAS_ATTENTION_DATA`): SICK and the 50-d GloVe subset. Without them the
tutorial trains on a few built-in pairs with random word vectors.
"""

import os

# TensorFlow's C++ start-up log (CUDA probes, CPU features) is noise to a
# user; a TF_CPP_MIN_LOG_LEVEL set by the user wins.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import argparse
import warnings

import keras
import matplotlib
import numpy as np
from keras import ops
from scipy import stats

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from keras_attention import data
from keras_attention import layers
from keras_attention import models
from keras_attention import visualization
from keras_attention.training import runs

parser = argparse.ArgumentParser()
parser.add_argument("--output-dir", default="tutorial_outputs")
parser.add_argument("--data-dir", default=None)
parser.add_argument("--train-pairs", type=int, default=2000)
parser.add_argument("--epochs", type=int, default=1)
parser.add_argument(
    "--model-dir",
    default=None,
    help="A run folder of applications/relatedness/train.py or of "
    "applications/nli/train.py --model resan (model.keras and "
    "vocabulary.txt): draw its model instead of training one here.",
)
parser.add_argument(
    "--model-file",
    default="model.keras",
    help="With --model-dir: the model file to draw, e.g. last.keras (the "
    "end of training; model.keras is the best dev epoch, which may come "
    "from before the samplers trained).",
)
args, _ = parser.parse_known_args()
os.makedirs(args.output_dir, exist_ok=True)
keras.utils.set_random_seed(0)

"""
## Data

SICK pairs two sentences with a relatedness score from 1 (unrelated) to 5
(same meaning), the mean of ten human ratings. We train on the first
pairs of the training split and measure on the 500-pair trial split.
"""

SENTENCES = [
    "The three men sit and talk about their lives.",
    "A group of adults are waiting for an event.",
]
# A few invented pairs with plausible scores, used only when SICK is not
# available.
BUILT_IN = [
    ("A man is playing a guitar.", "A person is playing a guitar.", 4.8),
    ("A man is playing a guitar.", "A woman is slicing an onion.", 1.1),
    ("Two dogs are running in a field.", "Two dogs are playing.", 3.9),
    ("Two dogs are running in a field.", "A man is cooking.", 1.0),
    ("A woman is cutting an onion.", "A woman is slicing an onion.", 4.7),
    ("The kids are playing in the park.", "Children play outside.", 4.2),
    ("The kids are playing in the park.", "A cat is sleeping.", 1.4),
    ("A man is riding a horse.", "A horse is being ridden by a man.", 4.9),
    ("A man is riding a horse.", "A man is driving a car.", 2.6),
    ("Three men sit and talk.", "A group of men are talking.", 4.3),
]


def load_pairs():
    try:
        train = data.load_sick("train", data_dir=args.data_dir)
        trial = data.load_sick("trial", data_dir=args.data_dir)
        words, vectors = data.load_glove(data_dir=args.data_dir)
    except Exception as error:  # no data directory and no network
        print(f"SICK or GloVe not available ({type(error).__name__}); using")
        print("the built-in pairs and random word vectors instead.")
        a, b, scores = (list(column) for column in zip(*BUILT_IN))
        pairs = (a * 10, b * 10, scores * 10)
        return pairs, (a, b, scores), None, "built-in"
    n = args.train_pairs
    columns = ("sentence_a", "sentence_b", "relatedness")
    train = tuple(list(train[c][:n]) for c in columns)
    trial = tuple(list(trial[c]) for c in columns)
    return train, trial, (words, vectors), "SICK"


train, trial, glove, source = load_pairs()
print(f"{source}: {len(train[0])} training pairs, {len(trial[0])} test pairs")

"""
Words are lowercased tokens (`keras_attention.data.tokenize`); id 0 is
padding and id 1 an unknown word. The word vectors are GloVe, frozen, as in
the paper.
"""

tokenized = {
    name: ([data.tokenize(s) for s in a], [data.tokenize(s) for s in b])
    for name, (a, b, _) in (("train", train), ("trial", trial))
}
examples = [data.tokenize(s) for s in SENTENCES]
if args.model_dir:
    # The trained run's own vocabulary (its word ids are the model's).
    vocabulary = runs.read_vocabulary(args.model_dir)
else:
    vocabulary = data.build_vocabulary(
        tokenized["train"][0] + tokenized["train"][1] + examples
    )
index = {word: i for i, word in enumerate(vocabulary)}
if args.model_dir:
    embeddings = None  # the saved model holds its word vectors
elif glove is not None:
    embeddings, found = data.load_glove(vocabulary, data_dir=args.data_dir)
    embeddings[0] = 0.0
    print(f"{len(vocabulary)} words, {found} found in GloVe")
else:
    embeddings = None
max_length = 20


def to_ids(sentences, length=max_length):
    ids = np.zeros((len(sentences), length), "int32")
    for row, words in enumerate(sentences):
        words = words[:length]
        ids[row, : len(words)] = [index.get(w, 1) for w in words]
    return ids


def inputs_of(name):
    a, b = tokenized[name]
    return {"sentence_a": to_ids(a), "sentence_b": to_ids(b)}


x_train, x_trial = inputs_of("train"), inputs_of("trial")
y_train = np.asarray(train[2], "float32")  # scores in [1, 5]
y_trial = np.asarray(trial[2], "float32")

"""
## The model

`ReSANRelatedness` predicts a distribution over the scores 1..5 and its
expectation, the predicted score. With no loss given to `compile` it
trains its own objective, the authors' default: the squared error of the
expected score, `0.5 (score - y)^2` (`objective="kl"` is the KL divergence
to Tai et al.'s sparse target). We use a hidden width of 32 instead of the
paper's 300.

The default encoder (`variant="authors"`) is the authors' arrangement: one
head and one dependent sampler, shared by both directions and reading the
word vectors, and per direction an ELU projection and a
`ReinforcedSelfAttention` layer that attends among the tokens they select.

Policy gradient on an untrained network is noisy: at first the soft
attention is random, and the cheapest way for the samplers to raise the
reward is to stop selecting. The authors therefore train in phases, and so
does the model, from a step counter saved with it: the soft network alone
on every real token for `soft_only_steps`, then the samplers alone for
`sampler_only_steps`, then both. Here the first phase lasts `--epochs`
epochs and the samplers then train with the rest for as many more.
`models.resan.with_sampler_optimizer` gives each part an Adam of its own
that takes no step while the schedule leaves it without a gradient (one
Adam for both would keep moving the idle part on its momentum).
"""

steps_per_epoch = -(-len(train[0]) // 50)  # batches of 50 pairs
if args.model_dir:
    model = runs.load_model(
        args.model_dir, file_name=args.model_file
    )  # safe_mode=True
    print(f"loaded {model.name} from {args.model_dir}")
else:
    model = models.ReSANRelatedness(
        vocabulary_size=len(vocabulary),
        embeddings=embeddings,
        embedding_dim=16,  # used only without GloVe
        hidden_dim=32,
        dropout=0.1,
        soft_only_steps=args.epochs * steps_per_epoch,
        seed=0,
    )
    model.compile(
        optimizer=models.resan.with_sampler_optimizer(
            keras.optimizers.Adam(2e-3)
        ),
        jit_compile=False,
    )


# An NLI run (`ReSANClassifier`) names its inputs premise and hypothesis
# and was measured on SNLI by its application; the rest is the same.
nli = isinstance(model, models.ReSANClassifier)
input_names = ("premise", "hypothesis") if nli else ("sentence_a", "sentence_b")


def evaluate():
    if nli:
        metrics = runs.read_metrics(args.model_dir)
        print(
            f"SNLI test accuracy {metrics['test_accuracy']:.4f}, "
            f"{metrics['test_selection_percentage']:.4f} of the tokens "
            "selected (measured by applications/nli/train.py)"
        )
        return None, None
    outputs = model.predict(x_trial, batch_size=256, verbose=0)
    predicted = outputs["score"]
    mse = float(np.mean((predicted - y_trial) ** 2))
    pearson = float(stats.pearsonr(predicted, y_trial)[0])
    return mse, pearson


mse_before, pearson_before = evaluate()
if not args.model_dir:
    # The samplers are meant to get no gradient in the soft-only phase.
    warnings.filterwarnings("ignore", message="Gradients do not exist")
    model.fit(x_train, y_train, batch_size=50, epochs=args.epochs, verbose=2)
    mse_after, pearson_after = evaluate()
    print(f"test MSE:       {mse_before:.3f} -> {mse_after:.3f}")
    print(f"test Pearson r: {pearson_before:.3f} -> {pearson_after:.3f}")
    assert mse_after < mse_before, (mse_before, mse_after)
elif not nli:
    print(f"test MSE {mse_before:.3f}, Pearson r {pearson_before:.3f}")

"""
The paper reports a Pearson r of 0.87 on the SICK test set after full
training (the application reaches 0.869 with the staged 50-d vectors);
seconds of training give a much weaker model, with the frozen GloVe
vectors doing most of the work.

## What the samplers select

Inside the encoder, `word_embedding` gives the word vectors, which the
shared `head_sampler` and `dependent_sampler` (two
`ReinforcedSequenceSampler`s) read; `forward_projection` maps them to the
hidden width for `forward_attention`, a `ReinforcedSelfAttention` whose
`FusionGate` mixes every token with its attended context; a
`Source2TokenAttention` layer named `pooling` turns the two directions into
the sentence vector. We run these pieces on the paper's two sentences,
padded by three positions.
"""

encoder = model.encoder
embedding = encoder.get_layer("word_embedding")
head_sampler = encoder.get_layer("head_sampler")
dependent_sampler = encoder.get_layer("dependent_sampler")
projection = encoder.get_layer("forward_projection")
forward = encoder.get_layer("forward_attention")
assert isinstance(head_sampler, layers.ReinforcedSequenceSampler)
assert isinstance(forward, layers.ReinforcedSelfAttention)
assert isinstance(forward.fusion_gate, layers.FusionGate)
assert isinstance(encoder.get_layer("pooling"), layers.Source2TokenAttention)
lengths = [len(words) for words in examples]
ids = to_ids(examples, max(lengths) + 3)  # (2, T)
mask = ids != 0  # (2, T)
words = embedding(ids)  # (2, T, E)
vectors = projection(words)  # (2, T, H): dropout is off at inference

"""
At inference (`training=False`) each sampler keeps the tokens whose keep
probability is above its threshold (0.5), so the selection is
deterministic: two calls agree exactly. In training, each token is kept
with its probability, so repeated calls differ. One exception: until
the samplers' first training step the model selects every real token at
inference too (its samplers have not been trained), so that is what we
draw for it, and what we draw here after the soft-only phase.
"""

# The model's own rule: its `training_phase` output says whether it
# selects every real token at inference.
phase = model(dict.fromkeys(input_names, ids))["training_phase"]
soft_phase = bool(ops.convert_to_numpy(phase)[0, 0] > 0.5)


def select(training):
    if soft_phase and not training:
        return mask, mask
    heads, _ = head_sampler(words, mask=mask, training=training)
    dependents, _ = dependent_sampler(words, mask=mask, training=training)
    return ops.convert_to_numpy(heads), ops.convert_to_numpy(dependents)


first, second = select(False), select(False)
for a, b in zip(first, second):
    np.testing.assert_array_equal(a, b)
heads, dependents = first
print("inference selections are deterministic")
samples = [select(True)[0] for _ in range(5)]
changed = sum(int(np.any(s != samples[0])) for s in samples[1:])
print(f"sampled head selections that differ from the first: {changed} of 4")

"""
The soft attention runs only where it is allowed: from a selected head `t`
to a selected dependent `s`, with `s` before `t` in the forward direction.
Everything else gets exactly zero weight: padding, unselected heads (they
take the mean of the other tokens instead), unselected dependents, the
token itself and the future. Each head that has at least one allowed
dependent distributes a total weight of one; a head with none (the first
selected token, in the forward direction) gets a zero context, as in the
authors' code.
"""

_, heads_out, _, _, scores = forward(
    vectors,
    mask=mask,
    heads=heads,
    dependents=dependents,
    return_selections=True,
    return_attention_scores=True,
)
scores = ops.convert_to_numpy(scores)
np.testing.assert_array_equal(ops.convert_to_numpy(heads_out), heads)
length = ids.shape[1]
before = np.tril(np.ones((length, length), bool), k=-1)  # s < t
allowed = heads[:, :, None] & dependents[:, None, :] & before[None]
assert not np.any(heads & ~mask) and not np.any(dependents & ~mask)
assert np.all(scores[~allowed] == 0.0)
attending = allowed.any(-1)  # (2, T)
np.testing.assert_allclose(scores.sum(-1)[attending], 1.0, atol=1e-5)
for number, n in enumerate(lengths):
    print(
        f"sentence {number + 1}: {int(heads[number].sum())} heads, "
        f"{int(dependents[number].sum())} dependents of {n} tokens"
    )

"""
Padding also never changes the sentence vector: encoding the sentences
with three more padded positions gives the same vectors.
"""

select_all = np.zeros((2,), "float32")  # the encoder's second input
short = encoder([to_ids(examples, max(lengths)), select_all])["sentence"]
padded = encoder([ids, select_all])["sentence"]
np.testing.assert_allclose(
    ops.convert_to_numpy(short), ops.convert_to_numpy(padded), atol=1e-5
)

"""
## The picture

`keras_attention.visualization.plot_reinforced_attention` draws, for one
sentence, the tokens selected as heads and as dependents (top) and the soft
attention matrix among them, averaged over features (bottom: rows are
heads, columns dependents). The forward direction leaves the upper
triangle empty; an empty row is an unselected head (or the first head,
which has nothing before it), an empty column an unselected dependent.
"""


def draw(prefix):
    for number, sentence in enumerate(examples, start=1):
        row = slice(number - 1, number)
        figure = visualization.plot_reinforced_attention(
            forward,
            vectors[row],
            sentence,
            mask=mask[row],
            heads=heads[row],
            dependents=dependents[row],
            title=f"forward ReSA, sentence {number}",
        )
        path = os.path.join(args.output_dir, f"{prefix}_{number}.png")
        figure.savefig(path, dpi=100)
        plt.close(figure)
        print("wrote", path)


draw("resan_sentence")

"""
## Training the samplers

Next the samplers: once the step counter leaves the soft-only phase,
`compute_loss` adds the REINFORCE loss of the two shared samplers, with
the authors' reward (minus the pair's squared error, minus
`sparsity_penalty` times each sentence's selection percentage), and only
the samplers learn from it: they read the word vectors through
`stop_gradient`. A loaded model has finished its schedule; we only read
its keep probabilities.
"""


def keep_probabilities():
    rows = []
    for sampler in (head_sampler, dependent_sampler):
        _, _, probabilities = sampler(
            words, mask=mask, return_probabilities=True
        )
        rows.append(ops.convert_to_numpy(probabilities))
    return np.stack(rows, axis=1)  # (2 sentences, 2 samplers, T)


stages = [("trained" if args.model_dir else "soft only", keep_probabilities())]
if not args.model_dir:
    model.fit(x_train, y_train, batch_size=50, epochs=args.epochs, verbose=2)
    stages.append(("joint", keep_probabilities()))
    mse_joint, pearson_joint = evaluate()
    print(f"after joint training: MSE {mse_joint:.3f}, r {pearson_joint:.3f}")
for name, values in stages:
    head, dependent = (values[:, i][mask].mean() for i in (0, 1))
    print(
        f"{name}: mean keep probability heads {head:.2f}, "
        f"dependents {dependent:.2f}"
    )

"""
The last figure shows the two samplers' keep probabilities, token by
token, after each phase (the dashed line is the 0.5 inference threshold).
One epoch of policy gradient moves them, but not to the paper's picture:
the reward is noisy while the soft attention is barely trained, and the
mean of the other tokens, which an unselected head takes, is often as good
a context as the attention. Trained fully by the applications, most of our
runs' samplers end keeping every token or none at inference. The figures in the README come from SNLI seed 2, the one run
whose samplers keep a sparse subset: its dependent sampler keeps every
token (p near 0.98), its head sampler about 4 in 10, with keep
probabilities between 0.38 and 0.61 on these two sentences. So the
threshold splits tokens whose probabilities barely differ, and selecting
every token scores 0.41 points higher on the SNLI test set; docs/resan.md
(section 8) measures why.
"""

fig, axes = plt.subplots(2, 1, figsize=(8, 6))
for number, axis in enumerate(axes):
    n = lengths[number]
    positions = np.arange(n)
    for (stage, values), style in zip(stages, ("o-", "s-")):
        axis.plot(
            positions, values[number, 0, :n], style, label=f"heads, {stage}"
        )
        axis.plot(
            positions,
            values[number, 1, :n],
            style,
            alpha=0.5,
            label=f"dependents, {stage}",
        )
    axis.axhline(0.5, color="gray", linestyle="--")
    axis.set_xticks(positions, labels=examples[number], rotation=30)
    axis.set_ylim(0.0, 1.0)
    axis.set_ylabel("keep probability")
axes[0].legend(fontsize=7, ncol=2)
fig.suptitle("shared ReSAN samplers: keep probabilities")
fig.tight_layout()
path = os.path.join(args.output_dir, "resan_keep_probabilities.png")
fig.savefig(path, dpi=100)
print("wrote", path)

"""
## Summary

- `ReSANRelatedness` trains with plain `fit`: its `compute_loss` adds the
  shared samplers' REINFORCE loss to the squared error once the schedule
  leaves the soft-only phase.
- `ReinforcedSelfAttention(..., heads=..., dependents=...,
  return_selections=True, return_attention_scores=True)` attends among
  selections made outside it and returns the soft attention matrix; at
  inference the samplers' selection is deterministic.
- Attention weight is exactly zero outside the selection, on padding, on
  the diagonal and against the direction; padding never changes the
  sentence vector.
- A minute of training shows the mechanics; `--model-dir` draws a model
  trained by the application.
"""
