"""
Title: Translation with a small Transformer
Author: keras_attention contributors
Date created: 2026/11/30
Last modified: 2026/11/30
Description: Train a small Transformer on Multi30k for half a minute, translate with greedy and beam search, and plot the encoder-decoder attention.
Accelerator: None
"""

"""
## Introduction

The Transformer (Vaswani et al., 2017) translates with an encoder that reads
the source sentence and a decoder that writes the translation one subword at
a time. Every decoder layer has two attentions: causal self-attention over
the words written so far, and encoder-decoder (cross) attention over the
source. The cross-attention weights are the closest thing the model has to a
word alignment, and plotting them is the classic way to look inside it.

This walkthrough:

1. trains a subword tokenizer and a deliberately small
   `keras_attention.models.Transformer` on a slice of Multi30k
   English-German, for about half a minute on a CPU;
2. translates a few sentences with `keras_attention.decoding.greedy_search`
   and `beam_search`, and checks that the cached decoder (one token per
   step) gives the same hypotheses as rerunning the whole decoder;
3. reads the cross-attention weights out of the decoder blocks and draws
   them for one sentence.

**Be warned: the translations are poor.** Half a minute of CPU training on a
few thousand pairs teaches the model frequent words and the shape of a
German caption, not translation. The application in
`applications/translation/` trains the same model properly (a 37-minute CPU
run of the `small` preset reaches about 35 BLEU on Multi30k test2016). What
this tutorial shows is how the pieces fit together, and facts that hold for
any trained or untrained model: masks, caching and the attention weights.

Data comes from `keras_attention.data.load_multi30k` (a data directory given
with `--data-dir` or `$KERAS_ATTENTION_DATA`, else a download). When neither
works, the tutorial falls back to a few built-in sentence pairs, so it still
runs from top to bottom.
"""

import os

# TensorFlow's C++ start-up log (CUDA probes, CPU features) is noise to a
# user; a TF_CPP_MIN_LOG_LEVEL set by the user wins.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import argparse
import time

import keras
import matplotlib
import numpy as np
from keras import ops

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from keras_attention import data
from keras_attention import decoding
from keras_attention import layers
from keras_attention import losses
from keras_attention import models
from keras_attention.data import translation

parser = argparse.ArgumentParser()
parser.add_argument("--output-dir", default="tutorial_outputs")
parser.add_argument("--data-dir", default=None)
parser.add_argument("--train-pairs", type=int, default=3000)
parser.add_argument("--epochs", type=int, default=3)
args, _ = parser.parse_known_args()
os.makedirs(args.output_dir, exist_ok=True)
keras.utils.set_random_seed(0)

"""
## Data

Multi30k pairs short English image captions with German translations. We
keep the first few thousand training pairs and three validation sentences
to translate at the end.
"""

# A tiny parallel corpus, used only when Multi30k cannot be found.
BUILT_IN = [
    ("A man is riding a bike.", "Ein Mann fährt Fahrrad."),
    ("A woman is riding a horse.", "Eine Frau reitet ein Pferd."),
    ("A dog runs in the park.", "Ein Hund rennt im Park."),
    ("Two dogs run on the beach.", "Zwei Hunde rennen am Strand."),
    ("A child plays in the snow.", "Ein Kind spielt im Schnee."),
    ("Two children play on the beach.", "Zwei Kinder spielen am Strand."),
    ("A man is reading a book.", "Ein Mann liest ein Buch."),
    ("A woman is reading a newspaper.", "Eine Frau liest eine Zeitung."),
    ("A man in a red shirt is walking.", "Ein Mann in einem roten Hemd geht."),
    (
        "A woman in a blue dress sings.",
        "Eine Frau in einem blauen Kleid singt.",
    ),
    ("Three men are sitting on a bench.", "Drei Männer sitzen auf einer Bank."),
    ("A girl is eating an apple.", "Ein Mädchen isst einen Apfel."),
    ("A boy is jumping into the water.", "Ein Junge springt ins Wasser."),
    ("People are walking down the street.", "Leute gehen die Straße entlang."),
    ("A dog is playing with a ball.", "Ein Hund spielt mit einem Ball."),
    ("A man is playing the guitar.", "Ein Mann spielt Gitarre."),
]


def load_pairs():
    try:
        train_en, train_de = data.load_multi30k("train", data_dir=args.data_dir)
        val_en, val_de = data.load_multi30k("val", data_dir=args.data_dir)
    except Exception as error:  # no data directory and no network
        print(f"Multi30k not available ({type(error).__name__}); using the")
        print("built-in sentence pairs instead.")
        english = [en for en, _ in BUILT_IN]
        german = [de for _, de in BUILT_IN]
        return english * 40, german * 40, english[:3], german[:3], "built-in"
    n = args.train_pairs
    return train_en[:n], train_de[:n], val_en[:3], val_de[:3], "Multi30k"


train_en, train_de, test_en, test_de, source = load_pairs()
print(f"{source}: {len(train_en)} training pairs")
print("example:", train_en[0], "->", train_de[0])

"""
## A shared subword vocabulary

The model ties its input embedding, output embedding and output projection
(section 3.4 of the paper), so English and German share one vocabulary. A
SentencePiece model trained on both sides gives it;
`keras_attention.data.train_tokenizer` reserves id 0 for padding, 1 for
unknown characters, 2 for the start and 3 for the end of a sentence. A small
vocabulary keeps the output softmax cheap.
"""

vocabulary_size = 1000 if source == "Multi30k" else 120
tokenizer = data.train_tokenizer(
    sorted(set(train_en + train_de)), vocabulary_size=vocabulary_size
)
max_length = 24
source_ids = data.encode_sentences(tokenizer, train_en, max_length=max_length)
target_ids = data.encode_sentences(tokenizer, train_de, max_length=max_length)
print("subwords:", [tokenizer.id_to_token(i) for i in source_ids[0]])


def pad(rows, width):
    batch = np.zeros((len(rows), width), "int32")
    for i, row in enumerate(rows):
        batch[i, : len(row)] = row[:width]
    return batch


# The decoder reads the target shifted right behind the start token and
# predicts the target followed by the end token (already appended).
encoder_inputs = pad(source_ids, max_length)
decoder_inputs = pad(
    [[translation.START_ID] + t[:-1] for t in target_ids], max_length
)
labels = pad(target_ids, max_length)
inputs = {
    "encoder_token_ids": encoder_inputs,
    "decoder_token_ids": decoder_inputs,
}

"""
## The model

The paper's base model has 6 encoder and 6 decoder layers of width 512.
Here we use one of each, of width 64 with 4 heads, small enough to train
for a few epochs in seconds (`num_layers` stacks more).
The loss is the paper's label-smoothed cross-entropy, with padding ignored.

The model is a functional Keras model assembled from the package's layers:
one `TokenAndPositionEmbedding` shared by source, target and output
projection, then `TransformerEncoderBlock`s and `TransformerDecoderBlock`s.
"""

model = models.Transformer(
    vocabulary_size=tokenizer.vocabulary_size(),
    num_layers=1,
    hidden_dim=64,
    num_heads=4,
    intermediate_dim=128,
    dropout=0.1,
    max_sequence_length=64,
    seed=0,
)
assert isinstance(model.token_embedding, layers.TokenAndPositionEmbedding)
assert all(
    isinstance(block, layers.TransformerEncoderBlock)
    for block in model.encoder_blocks
)
assert all(
    isinstance(block, layers.TransformerDecoderBlock)
    for block in model.decoder_blocks
)
model.compile(
    optimizer=keras.optimizers.Adam(2e-3, beta_1=0.9, beta_2=0.98),
    loss=losses.LabelSmoothedSparseCategoricalCrossentropy(epsilon=0.1),
    # XLA compilation takes longer than it saves in a run this short.
    jit_compile=False,
)
held_out = {k: v[:256] for k, v in inputs.items()}


def held_out_loss():
    # The loss without dropout on the first 256 training pairs.
    logits = model(held_out, training=False)
    return float(model.loss(labels[:256], logits))


loss_before = held_out_loss()
start = time.time()
history = model.fit(
    inputs, labels, batch_size=64, epochs=args.epochs, verbose=2
)
print(f"trained for {time.time() - start:.0f} s")
loss_after = held_out_loss()
print(f"loss on the first 256 pairs: {loss_before:.2f} -> {loss_after:.2f}")
assert loss_after < loss_before - 1.0, (loss_before, loss_after)

"""
## Greedy and beam search

`greedy_search` takes the most probable subword at every step. `beam_search`
keeps the `beam_size` best unfinished translations and, apart, the
`beam_size` best finished ones, ranked by log-probability divided by the
GNMT length penalty `((5 + |Y|) / 6) ** alpha` (the paper uses 4 beams and
`alpha = 0.6`); it stops once no unfinished one can still win. Both decode
one subword per step, with the keys and values of earlier steps held in a
cache, inside one compiled loop.
"""

sources = pad(data.encode_sentences(tokenizer, test_en, max_length=24), 24)
greedy = decoding.greedy_search(
    model,
    sources,
    translation.START_ID,
    translation.END_ID,
    max_extra_length=10,
)
beam = decoding.beam_search(
    model,
    sources,
    translation.START_ID,
    translation.END_ID,
    beam_size=4,
    alpha=0.6,
    max_extra_length=10,
)
greedy_text = data.decode_ids(
    tokenizer, decoding.strip_special(greedy, translation.END_ID)
)
beam_text = data.decode_ids(
    tokenizer, decoding.strip_special(beam, translation.END_ID)
)
for english, german, g, b in zip(test_en, test_de, greedy_text, beam_text):
    print(f"source:    {english}\nreference: {german}")
    print(f"greedy:    {g}\nbeam (4):  {b}\n")

"""
As promised, the translations are poor; they may get a few frequent words
right. One property holds whatever the quality: the cache changes only
the speed. Rerunning the whole decoder at every step (`use_cache=False`)
gives the same hypotheses.
"""

uncached = decoding.beam_search(
    model,
    sources,
    translation.START_ID,
    translation.END_ID,
    beam_size=4,
    alpha=0.6,
    max_extra_length=10,
    use_cache=False,
)
np.testing.assert_array_equal(
    ops.convert_to_numpy(uncached), ops.convert_to_numpy(beam)
)
print("cached beam search == uncached beam search")

"""
## Encoder-decoder attention

`Transformer.encode` runs the encoder. To see the cross-attention we run the
decoder blocks ourselves on the beam-search output (teacher forcing on the
model's own translation), asking each `TransformerDecoderBlock` for its
weights with `return_attention_scores=True`. It returns the self-attention
weights `(B, N, T, T)` and the cross-attention weights `(B, N, T, S)`.

The sources are padded to 24 subwords. Padded source positions must receive
exactly zero weight, and every real target row must sum to one over the real
source subwords.
"""

encoder_outputs, source_mask = model.encode(sources)
# Decoder input: the start token and the translation without its end
# token, so that row t of the weights is where the model looked while it
# chose output subword t.
beam = ops.convert_to_numpy(beam)  # (B, L)
outputs = np.where(beam == translation.END_ID, 0, beam)
decoder_ids = np.concatenate(
    [np.full((len(sources), 1), translation.START_ID, "int32"), outputs],
    axis=1,
)[:, :-1]
target_mask = ops.not_equal(decoder_ids, 0)
x = model.token_embedding(decoder_ids)
cross_weights = []
for block in model.decoder_blocks:
    x, _, cross = block(
        x,
        encoder_outputs,
        padding_mask=target_mask,
        encoder_padding_mask=source_mask,
        return_attention_scores=True,
    )
    cross_weights.append(ops.convert_to_numpy(cross))  # (B, N, T, S)

# The hand-run decoder reproduces the model's own logits.
logits = model.token_embedding(x, reverse=True)
expected = model.decode(decoder_ids, encoder_outputs, source_mask)
np.testing.assert_allclose(
    ops.convert_to_numpy(logits), ops.convert_to_numpy(expected), atol=1e-4
)

real_source = ops.convert_to_numpy(source_mask)  # (B, S)
real_target = ops.convert_to_numpy(target_mask)  # (B, T)
for weights in cross_weights:
    padded = ~real_source[:, None, None, :]  # (B, 1, 1, S)
    assert np.all(np.where(padded, weights, 0.0) == 0.0)
    row_sums = weights.sum(-1)  # (B, N, T)
    np.testing.assert_allclose(
        row_sums[np.broadcast_to(real_target[:, None], row_sums.shape)],
        1.0,
        atol=1e-5,
    )
print("padded source subwords get zero weight; real rows sum to one")

"""
The figure shows the last decoder layer's cross-attention for the first
sentence, averaged over the heads: one row per German subword the model
wrote (where the decoder looked while choosing it), one column per English
subword. After this little training expect broad, diffuse rows; a trained
model typically shows a near-diagonal band, with jumps where German word
order differs from English.
"""

sentence = 0
source_tokens = [
    tokenizer.id_to_token(int(i)) for i in sources[sentence] if i != 0
]
target_length = int(real_target[sentence].sum())
target_tokens = [
    tokenizer.id_to_token(int(i)) for i in beam[sentence, :target_length]
]
average = cross_weights[-1][sentence].mean(0)  # (T, S)
average = average[:target_length, : len(source_tokens)]

fig, axis = plt.subplots(
    figsize=(1.5 + 0.45 * len(source_tokens), 1.5 + 0.35 * target_length)
)
image = axis.imshow(average, cmap="viridis", vmin=0.0, aspect="auto")
axis.set_xticks(range(len(source_tokens)), labels=source_tokens, rotation=60)
axis.set_yticks(range(target_length), labels=target_tokens)
axis.set_xlabel("source subword (English)")
axis.set_ylabel("output subword (German)")
axis.set_title("encoder-decoder attention, mean of heads")
fig.colorbar(image, ax=axis, fraction=0.046, pad=0.04)
fig.tight_layout()
path = os.path.join(args.output_dir, "cross_attention.png")
fig.savefig(path, dpi=100)
print("wrote", path)

"""
## Summary

- `keras_attention.models.Transformer` trains with plain `fit` on a dict of
  `encoder_token_ids` and `decoder_token_ids`; id 0 is padding everywhere.
- `greedy_search` and `beam_search` decode with caches; the cache never
  changes the output.
- `TransformerDecoderBlock(..., return_attention_scores=True)` returns the
  cross-attention weights: exactly zero on padded source positions, rows
  summing to one.
- Good translations need the full training run of
  `applications/translation/`, not half a minute.
"""
