"""Metrics for sequence models that ignore padding, and corpus-level
translation scores (SacreBLEU, tokenized BLEU, chrF)."""

import keras
from keras import ops

from keras_attention.losses import label_smoothed_cross_entropy
from keras_attention.utils.optional import import_optional

__all__ = [
    "MaskedAccuracy",
    "Perplexity",
    "chrf",
    "moses_tokenize",
    "sacre_bleu",
    "tokenized_bleu",
]


@keras.saving.register_keras_serializable(package="keras_attention")
class MaskedAccuracy(keras.metrics.Metric):
    """Token accuracy over positions whose label is not `ignore_index`.

    ```
    accuracy = sum(argmax(logits) == y_true and y_true != pad) / sum(y != pad)
    ```

    Args:
        ignore_index: int. Padding label id. Defaults to `0`.
        name: str. Defaults to `"accuracy"`.
    """

    def __init__(self, ignore_index=0, name="accuracy", dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.ignore_index = ignore_index
        self.correct = self.add_variable((), "zeros", name="correct")
        self.count = self.add_variable((), "zeros", name="count")

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = ops.cast(y_true, "int32")
        keep = ops.not_equal(y_true, self.ignore_index)
        predicted = ops.cast(ops.argmax(y_pred, axis=-1), "int32")
        hit = ops.logical_and(keep, ops.equal(predicted, y_true))
        self.correct.assign_add(ops.sum(ops.cast(hit, self.dtype)))
        self.count.assign_add(ops.sum(ops.cast(keep, self.dtype)))

    def result(self):
        return self.correct / ops.maximum(self.count, 1.0)

    def reset_state(self):
        self.correct.assign(0.0)
        self.count.assign(0.0)

    def get_config(self):
        return {"ignore_index": self.ignore_index, **super().get_config()}


@keras.saving.register_keras_serializable(package="keras_attention")
class Perplexity(keras.metrics.Metric):
    """`exp` of the mean cross-entropy (no smoothing) over real tokens.

    Args:
        ignore_index: int. Padding label id. Defaults to `0`.
        name: str. Defaults to `"perplexity"`.
    """

    def __init__(self, ignore_index=0, name="perplexity", dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.ignore_index = ignore_index
        self.total = self.add_variable((), "zeros", name="total")
        self.count = self.add_variable((), "zeros", name="count")

    def update_state(self, y_true, y_pred, sample_weight=None):
        nll = label_smoothed_cross_entropy(
            y_true, y_pred, epsilon=0.0, ignore_index=self.ignore_index
        )
        keep = ops.not_equal(ops.cast(y_true, "int32"), self.ignore_index)
        self.total.assign_add(ops.cast(ops.sum(nll), self.dtype))
        self.count.assign_add(ops.sum(ops.cast(keep, self.dtype)))

    def result(self):
        return ops.exp(self.total / ops.maximum(self.count, 1.0))

    def reset_state(self):
        self.total.assign(0.0)
        self.count.assign(0.0)

    def get_config(self):
        return {"ignore_index": self.ignore_index, **super().get_config()}


def _sacrebleu():
    return import_optional("sacrebleu", "applications", "Translation scores")


def _check_corpus(hypotheses, references):
    hypotheses, references = list(hypotheses), list(references)
    if len(hypotheses) != len(references):
        raise ValueError(
            "`hypotheses` and `references` must have the same length. "
            f"Received: {len(hypotheses)} hypotheses and "
            f"{len(references)} references"
        )
    return hypotheses, references


def sacre_bleu(hypotheses, references):
    """Corpus SacreBLEU on detokenized, cased text (13a tokenization, the
    default signature): the figure to compare across papers.

    Args:
        hypotheses: list of str, one per sentence.
        references: list of str, the same length.

    Returns:
        float, BLEU in `[0, 100]`.
    """
    hypotheses, references = _check_corpus(hypotheses, references)
    return _sacrebleu().corpus_bleu(hypotheses, [references]).score


def moses_tokenize(sentences, language="de"):
    """Lowercases, normalizes punctuation and tokenizes with the Moses
    tokenizer (sacremoses), as Multi30k's `*.lc.norm.tok.*` files were made:
    `&`, `"`, `'` come out escaped (`&amp;`, `&quot;`, `&apos;`).

    Args:
        sentences: list of str.
        language: str. Moses language code. Defaults to `"de"`.

    Returns:
        A list of str, tokens separated by single spaces.
    """
    sacremoses = import_optional("sacremoses", "applications", "Tokenized BLEU")
    normalizer = sacremoses.MosesPunctNormalizer(lang=language)
    tokenizer = sacremoses.MosesTokenizer(lang=language)
    return [
        tokenizer.tokenize(
            normalizer.normalize(sentence.lower()), return_str=True
        )
        for sentence in sentences
    ]


def tokenized_bleu(hypotheses, references, language="de"):
    """Corpus BLEU on lowercased text, hypotheses and references tokenized
    alike by `moses_tokenize` (the tokenized figure Multi30k papers print).

    ```
    BLEU = BP * exp(mean(log p_n), n = 1..4)
    BP = min(1, exp(1 - |references| / |hypotheses|))
    ```

    with `p_n` the clipped n-gram precisions over the corpus and `|.|` the
    total token counts.

    Args:
        hypotheses: list of str, detokenized model outputs.
        references: list of str, raw references (not tokenized).
        language: str. Moses language code. Defaults to `"de"`.

    Returns:
        float, BLEU in `[0, 100]`.

    Example:

    >>> round(tokenized_bleu(["Ein Hund läuft."], ["ein Hund läuft ."]), 2)
    100.0
    """
    hypotheses, references = _check_corpus(hypotheses, references)
    return (
        _sacrebleu()
        .corpus_bleu(
            moses_tokenize(hypotheses, language),
            [moses_tokenize(references, language)],
            tokenize="none",
            force=True,
        )
        .score
    )


def chrf(hypotheses, references):
    """Corpus chrF (sacrebleu's default: character 6-grams, beta 2, no word
    n-grams) on detokenized, cased text.

    Args:
        hypotheses: list of str.
        references: list of str, the same length.

    Returns:
        float, chrF in `[0, 100]`.
    """
    hypotheses, references = _check_corpus(hypotheses, references)
    return _sacrebleu().corpus_chrf(hypotheses, [references]).score
