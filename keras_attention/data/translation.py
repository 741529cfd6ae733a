"""Subword tokenizer and length-bucketed batches for translation.

One SentencePiece model is trained on the source and target sides of the
training split together (a shared vocabulary, as the tied Transformer
embeddings need) and used through keras-hub's `SentencePieceTokenizer`.
The trained model is a single file saved next to the translation model.

Reserved ids: `0` padding, `1` unknown, `2` start, `3` end. Characters
never seen in training become the unknown id; `encode_sentences` warns when
that happens.

Subword regularization (Kudo, 2018): `sample_sentences` draws one of the
many segmentations of each sentence instead of the best one, and
`SampledBatches` feeds training a new draw every epoch; evaluation keeps
the tokenizer's one deterministic segmentation.
"""

import hashlib
import io
import math
import os
import warnings

import numpy as np

from keras_attention.data.batching import BucketedBatches
from keras_attention.utils.optional import import_optional
from keras_attention.utils.validation import check_non_negative_int

PAD_ID = 0
UNK_ID = 1
START_ID = 2
END_ID = 3
TOKENIZER_FILE = "tokenizer.model"


def train_tokenizer(
    sentences, vocabulary_size=8000, model_type="unigram", path=None
):
    """Trains a SentencePiece subword model on `sentences`.

    Args:
        sentences: list of strings (for translation, both languages).
        vocabulary_size: int. Number of subwords, reserved ids included.
        model_type: `"unigram"` or `"bpe"`.
        path: optional file to write the trained model to.

    Returns:
        A `keras_hub.tokenizers.SentencePieceTokenizer`.
    """
    keras_hub = import_optional("keras_hub", "applications", "Tokenizers")
    sentencepiece = import_optional(
        "sentencepiece", "applications", "Tokenizer training"
    )

    if model_type not in ("unigram", "bpe"):
        raise ValueError(
            "Argument `model_type` must be 'unigram' or 'bpe'. "
            f"Received: model_type={model_type!r}"
        )
    sentences = [s for s in sentences if s.strip()]
    if not sentences:
        raise ValueError(
            "Cannot train a tokenizer without text. Received: 0 non-empty "
            "sentences"
        )
    buffer = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(sentences),
        model_writer=buffer,
        vocab_size=vocabulary_size,
        model_type=model_type,
        pad_id=PAD_ID,
        unk_id=UNK_ID,
        bos_id=START_ID,
        eos_id=END_ID,
        character_coverage=1.0,
        minloglevel=2,
    )
    proto = buffer.getvalue()
    if path is not None:
        with open(path, "wb") as f:
            f.write(proto)
    return keras_hub.tokenizers.SentencePieceTokenizer(proto=proto)


def load_tokenizer(path):
    """Loads a tokenizer written by `train_tokenizer(..., path=...)`."""
    keras_hub = import_optional("keras_hub", "applications", "Tokenizers")

    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"No tokenizer file at '{path}'. Train one with train_tokenizer "
            f"(applications: train.py writes {TOKENIZER_FILE} next to the "
            f"model). Received: path={path!r}"
        )
    with open(path, "rb") as f:
        proto = f.read()
    return keras_hub.tokenizers.SentencePieceTokenizer(proto=proto)


def tokenizer_fingerprint(tokenizer):
    """A short hash of the tokenizer's vocabulary, stored with a model."""
    vocabulary = "\n".join(tokenizer.get_vocabulary())
    return hashlib.sha256(vocabulary.encode("utf-8")).hexdigest()[:16]


def check_tokenizer_matches(tokenizer, vocabulary_size, fingerprint=None):
    """Raises a `ValueError` if a tokenizer does not belong to a model.

    Args:
        tokenizer: the loaded tokenizer.
        vocabulary_size: int. The model's vocabulary size.
        fingerprint: optional `tokenizer_fingerprint` saved at training time.
    """
    size = tokenizer.vocabulary_size()
    if size != vocabulary_size:
        raise ValueError(
            f"The tokenizer has {size} subwords but the model expects "
            f"vocabulary_size={vocabulary_size}: they were not trained "
            "together. Load the tokenizer saved next to the model."
        )
    if fingerprint is not None:
        actual = tokenizer_fingerprint(tokenizer)
        if actual != fingerprint:
            raise ValueError(
                "The tokenizer's vocabulary differs from the one the model "
                f"was trained with (fingerprint {actual}, expected "
                f"{fingerprint}). Load the tokenizer saved next to the "
                "model."
            )


def encode_sentences(
    tokenizer, sentences, max_length=None, add_end=True, allow_empty=True
):
    """Tokenizes sentences into lists of ids.

    Args:
        tokenizer: a `SentencePieceTokenizer` from `train_tokenizer`.
        sentences: list of strings.
        max_length: int. Longer sentences are truncated to `max_length`
            ids (the end id, when added, is kept as the last one).
        add_end: bool. Append `END_ID`. Defaults to `True`.
        allow_empty: bool. If `False`, an empty (or blank) sentence raises
            a `ValueError` naming its index.

    Returns:
        A list of lists of ints.
    """
    sentences = list(sentences)
    if not allow_empty:
        for i, sentence in enumerate(sentences):
            if not sentence.strip():
                raise ValueError(
                    f"Sentence {i} is empty; there is nothing to translate. "
                    f"Received: sentences[{i}]={sentence!r}"
                )
    if not sentences:
        return []
    encoded = [list(map(int, ids)) for ids in tokenizer(sentences)]
    unknown = [i for i, ids in enumerate(encoded) if UNK_ID in ids]
    if unknown:
        warnings.warn(
            f"{len(unknown)} sentence(s) contain characters the tokenizer "
            f"never saw in training (first: sentence {unknown[0]}: "
            f"{sentences[unknown[0]][:60]!r}); they are encoded as the "
            "unknown id.",
            stacklevel=2,
        )
    return [_finish(ids, add_end, max_length) for ids in encoded]


def _finish(ids, add_end, max_length):
    """`ids` with `END_ID` appended, truncated to `max_length` (keeping the
    end id last)."""
    if add_end:
        ids = ids + [END_ID]
    if max_length is not None and len(ids) > max_length:
        ids = ids[: max_length - 1] + [END_ID] if add_end else ids
        ids = ids[:max_length]
    return ids


def check_sampling(alpha, nbest_size):
    """Checks subword-sampling settings; see `sample_sentences`."""
    if (
        isinstance(alpha, bool)
        or not isinstance(alpha, (int, float))
        or not math.isfinite(alpha)
        or not 0 < alpha <= 1
    ):
        raise ValueError(
            "Argument `alpha` must be a number in (0, 1]. Received: "
            f"alpha={alpha!r}"
        )
    if (
        isinstance(nbest_size, bool)
        or not isinstance(nbest_size, int)
        or not (nbest_size == -1 or nbest_size > 1)
    ):
        raise ValueError(
            "Argument `nbest_size` must be -1 (sample from every "
            "segmentation) or an int > 1 (from the best `nbest_size`). "
            f"Received: nbest_size={nbest_size!r}"
        )


def sample_sentences(
    tokenizer,
    sentences,
    alpha=0.1,
    nbest_size=-1,
    seed=0,
    max_length=None,
    add_end=True,
):
    """Tokenizes sentences with subword sampling (subword regularization).

    Each sentence gets one segmentation drawn from the unigram model's
    distribution over segmentations (`P(x)^alpha`, over the best
    `nbest_size` or, with `-1`, over all of them: Kudo, 2018); for a BPE
    model, BPE-dropout with merge-dropout probability `alpha` (Provilkov
    et al., 2020). Every segmentation decodes to the same text. The draw
    is a function of `seed` (one thread, SentencePiece's generator seeded
    with it), so a resumed run draws what an uninterrupted one drew.

    Args:
        tokenizer: a `SentencePieceTokenizer` from `train_tokenizer` or
            `load_tokenizer`.
        sentences: list of strings.
        alpha: float in `(0, 1]`. Smaller spreads the draws over more
            segmentations (unigram); the dropout probability (BPE).
        nbest_size: int. `-1` samples from all segmentations, `k > 1` from
            the `k` best (unigram only).
        seed: int. Seed of the draw.
        max_length, add_end: as in `encode_sentences`.

    Returns:
        A list of lists of ints.
    """
    check_sampling(alpha, nbest_size)
    sentencepiece = import_optional(
        "sentencepiece", "applications", "Subword sampling"
    )
    processor = sentencepiece.SentencePieceProcessor(
        model_proto=tokenizer.proto
    )
    sentencepiece.set_random_generator_seed(int(seed) % (2**31 - 1) + 1)
    encoded = processor.encode(
        list(sentences),
        out_type=int,
        enable_sampling=True,
        alpha=alpha,
        nbest_size=nbest_size,
        num_threads=1,
    )
    return [_finish(list(ids), add_end, max_length) for ids in encoded]


def decode_ids(tokenizer, rows):
    """Turns lists of ids (without start/end/padding) back into text."""
    texts = [""] * len(rows)
    filled = [i for i, r in enumerate(rows) if len(r)]
    if filled:
        decoded = tokenizer.detokenize([list(rows[i]) for i in filled])
        for i, text in zip(filled, decoded):
            texts[i] = _as_str(text)
    return texts


def _as_str(text):
    if isinstance(text, bytes):
        return text.decode("utf-8")
    if hasattr(text, "numpy"):
        return _as_str(text.numpy())
    return str(text)


def bucket_boundaries(max_length, step=4, start=8):
    """Bucket edges `start, start + step, ...`, growing 1.5x past 32."""
    edges, edge = [], start
    while edge <= max_length:
        edges.append(edge)
        edge = edge + step if edge < 32 else int(edge * 1.5)
    return edges + [max_length + 1]


def make_batches(
    source_ids,
    target_ids,
    tokens_per_batch=4096,
    max_length=128,
    shuffle=True,
    seed=0,
    drop_remainder=True,
):
    """Length-bucketed translation batches, a `BucketedBatches`.

    Pairs are grouped by length into the buckets of `bucket_boundaries`;
    each batch holds about `tokens_per_batch` padded target tokens (batch
    size = tokens / bucket width) and is padded to its bucket's width (few
    distinct shapes, so compiled training steps are reused). Pairs with a
    side longer than `max_length` are dropped. The order of each epoch is
    a function of `(seed, epoch)`, so
    `batches.as_dataset(epochs=None, initial_epoch=...)` resumes a run with
    the batches of an uninterrupted one.

    Each batch is `(inputs, labels)` with `inputs` a dict of
    `"encoder_token_ids"` `(B, S)` and `"decoder_token_ids"` `(B, T)` (the
    target with `START_ID` in front) and `labels` `(B, T)` (the target
    followed by `END_ID`, which `target_ids` must already end with); the
    source and target of a batch are padded to the same width.

    Args:
        source_ids: list of lists of ints.
        target_ids: list of lists of ints (ending with `END_ID`).
        tokens_per_batch: int. About this many tokens per batch.
        max_length: int. Longest sequence kept.
        shuffle: bool. A new order of pairs and batches every epoch.
        seed: int. Shuffle seed.
        drop_remainder: bool. Drop incomplete batches of a bucket.

    Returns:
        `(batches, target_tokens)`: the `BucketedBatches` and the number of
        real target tokens in one pass over the kept pairs.
    """
    if len(source_ids) != len(target_ids):
        raise ValueError(
            "Source and target lists must have the same length. Received: "
            f"{len(source_ids)} sources and {len(target_ids)} targets"
        )
    pairs = [
        (s, t)
        for s, t in zip(source_ids, target_ids)
        if 0 < len(s) <= max_length and 0 < len(t) <= max_length
    ]
    if not pairs:
        raise ValueError(
            f"No sentence pair fits max_length={max_length}. Received: "
            f"{len(source_ids)} pairs"
        )
    sources = np.full((len(pairs), max_length), PAD_ID, "int32")
    decoder_inputs = np.full((len(pairs), max_length), PAD_ID, "int32")
    labels = np.full((len(pairs), max_length), PAD_ID, "int32")
    for row, (source, target) in enumerate(pairs):
        sources[row, : len(source)] = source
        # The decoder reads the target shifted right by one.
        decoder_inputs[row, : len(target)] = [START_ID] + list(target[:-1])
        labels[row, : len(target)] = target
    # Buckets are [.., edges[0]), [edges[0], edges[1]), ...; pad to edge - 1.
    widths = [edge - 1 for edge in bucket_boundaries(max_length)]
    batches = BucketedBatches(
        {"encoder_token_ids": sources, "decoder_token_ids": decoder_inputs},
        labels,
        widths=widths,
        tokens_per_batch=tokens_per_batch,
        cut_targets=True,
        shuffle=shuffle,
        seed=seed,
        drop_remainder=drop_remainder,
    )
    return batches, sum(len(t) for _, t in pairs)


class SampledBatches:
    """Translation batches with a new subword segmentation every epoch.

    Subword regularization for `model.fit`: epoch `e` tokenizes the
    training pairs with `sample_sentences` (both sides, seeded by `(seed,
    e)`) and batches them with `make_batches`, in that epoch's order. A
    sampled epoch's batch count varies a little from epoch to epoch (the
    segmentations differ in length), so that `steps_per_epoch` means one
    pass, every epoch is cut or filled to the batch count of epoch 0: an
    epoch with more batches leaves its last (randomly ordered) ones out,
    one with fewer starts its order again. Each epoch is then a function
    of `(seed, e)` alone, and a run resumed at an epoch sees the batches
    of an uninterrupted one, as with `make_batches`.

    Tokenizing costs about 3.5 s per epoch for Multi30k's 29,000 pairs on
    one CPU core, done in the input pipeline's thread when the epoch
    begins.

    Args:
        tokenizer: a `SentencePieceTokenizer` from `train_tokenizer`.
        source_sentences, target_sentences: lists of strings.
        alpha, nbest_size: as in `sample_sentences`.
        tokens_per_batch, max_length, seed, drop_remainder: as in
            `make_batches` (`max_length` also truncates the sampled ids,
            as `encode_sentences` does).

    Example:

    ```python
    batches = SampledBatches(tokenizer, train_en, train_de, alpha=0.1)
    model.fit(
        batches.as_dataset(epochs=None), steps_per_epoch=len(batches),
        epochs=20,
    )
    ```
    """

    def __init__(
        self,
        tokenizer,
        source_sentences,
        target_sentences,
        alpha=0.1,
        nbest_size=-1,
        tokens_per_batch=4096,
        max_length=128,
        seed=0,
        drop_remainder=True,
    ):
        check_sampling(alpha, nbest_size)
        if len(source_sentences) != len(target_sentences):
            raise ValueError(
                "Source and target lists must have the same length. "
                f"Received: {len(source_sentences)} sources and "
                f"{len(target_sentences)} targets"
            )
        self.tokenizer = tokenizer
        self.source_sentences = list(source_sentences)
        self.target_sentences = list(target_sentences)
        self.alpha = alpha
        self.nbest_size = nbest_size
        self.tokens_per_batch = tokens_per_batch
        self.max_length = max_length
        self.seed = seed
        self.drop_remainder = drop_remainder
        self._cached = None
        first, self.target_tokens = self._epoch(0)
        self.steps = len(first.batches(epoch=0))

    def _epoch(self, epoch):
        """`(BucketedBatches, target_tokens)` of epoch `epoch`'s draw."""
        if self._cached is not None and self._cached[0] == epoch:
            return self._cached[1]
        seeds = np.random.default_rng([self.seed, epoch]).integers(
            2**31 - 1, size=2
        )
        sources, targets = (
            sample_sentences(
                self.tokenizer,
                sentences,
                self.alpha,
                self.nbest_size,
                seed=int(seed),
                max_length=self.max_length,
            )
            for sentences, seed in zip(
                (self.source_sentences, self.target_sentences), seeds
            )
        )
        result = make_batches(
            sources,
            targets,
            tokens_per_batch=self.tokens_per_batch,
            max_length=self.max_length,
            seed=self.seed,
            drop_remainder=self.drop_remainder,
        )
        self._cached = (epoch, result)
        return result

    def __len__(self):
        """Batches per epoch: those of epoch 0, for every epoch."""
        return self.steps

    def epoch_batches(self, epoch):
        """The `BucketedBatches` of epoch `epoch`'s segmentation."""
        return self._epoch(epoch)[0]

    def batches(self, epoch=0):
        """`[(row_indices, width), ...]` of epoch `epoch`, `len(self)` of
        them (rows of `epoch_batches(epoch)`)."""
        order = self.epoch_batches(epoch).batches(epoch)
        if len(order) < self.steps:
            order = (order * (self.steps // len(order) + 1))[: self.steps]
        return order[: self.steps]

    def as_dataset(self, epochs=None, initial_epoch=0):
        """A `tf.data.Dataset` of the batches of `epochs` epochs (`None`:
        endless) from `initial_epoch` on, for `model.fit(...,
        steps_per_epoch=len(batches))`."""
        check_non_negative_int("initial_epoch", initial_epoch)
        tf = import_optional("tensorflow", "tensorflow", "as_dataset")
        ids = tf.TensorSpec((None, None), tf.int32)
        signature = (
            {"encoder_token_ids": ids, "decoder_token_ids": ids},
            ids,
        )

        def generate():
            epoch = initial_epoch
            while epochs is None or epoch < initial_epoch + epochs:
                batches = self.epoch_batches(epoch)
                for rows, width in self.batches(epoch):
                    yield batches.batch(rows, width)
                epoch += 1

        dataset = tf.data.Dataset.from_generator(
            generate, output_signature=signature
        )
        if epochs is not None:
            dataset = dataset.apply(
                tf.data.experimental.assert_cardinality(self.steps * epochs)
            )
        return dataset.prefetch(2)


def make_dataset(source_ids, target_ids, **options):
    """A `tf.data` dataset of one epoch of `make_batches`, reshuffled on
    every pass.

    Each pass over the dataset (each `iter`, each pass of `repeat()`) is
    the next epoch of the seed's order, as with a reshuffling `tf.data`
    pipeline; the dataset works with `model.fit` on every Keras backend.

    Args:
        source_ids, target_ids: as in `make_batches`.
        **options: the other arguments of `make_batches`
            (`tokens_per_batch`, `max_length`, `shuffle`, `seed`,
            `drop_remainder`).

    Returns:
        `(dataset, target_tokens)`.
    """
    batches, count = make_batches(source_ids, target_ids, **options)
    return batches.as_dataset(epochs=1, new_order_per_pass=True), count


def epoch_stream(dataset, initial_epoch=0):
    """One endless stream of epochs of `dataset`, starting at an epoch.

    `model.fit(stream, steps_per_epoch=steps, initial_epoch=...)` then sees
    the batches an uninterrupted run sees: epoch `e` is the `e`-th pass
    over `dataset`, whichever process trains it. A dataset from
    `make_dataset` reshuffles every pass in an order fixed by its seed, and
    has the same number of batches in every pass (each length bucket holds
    the same pairs), so a run resumed at `initial_epoch` (for example
    `BackupAndRestore.initial_epoch()`) skips exactly the batches of the
    epochs already trained. Skipping reads the pipeline for those epochs
    without training on them.

    The batches are counted with one pass over `dataset`, which moves its
    shuffle on by one order: pass a newly built dataset, as a restarted
    process does, so that both runs start from the same order.

    Args:
        dataset: a finite `tf.data.Dataset` whose passes all have the same
            number of elements.
        initial_epoch: int. Passes to skip.

    Returns:
        `(stream, steps_per_epoch)`.
    """
    tf = import_optional("tensorflow", "tensorflow", "tf.data streams")

    check_non_negative_int("initial_epoch", initial_epoch)
    steps = int(dataset.reduce(tf.constant(0, "int64"), lambda n, _: n + 1))
    if steps == 0:
        raise ValueError(
            "Argument `dataset` has no batches: nothing to train on. "
            f"Received: dataset={dataset!r}"
        )
    stream = dataset.repeat().skip(int(initial_epoch) * steps)
    return stream, steps


def __getattr__(name):
    # `translate` moved to `keras_attention.decoding` in 0.2.0; the data
    # package imports neither models nor decoding.
    if name == "translate":
        raise AttributeError(
            f"`{__name__}.translate` moved to "
            "`keras_attention.decoding.translate` in 0.2.0 (same "
            "arguments)."
        )
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
