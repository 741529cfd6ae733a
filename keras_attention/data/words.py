"""Words: the tokenizer, the vocabulary, and words -> padded id arrays.

The word-level models (NLI, relatedness, their exports) share one route
from text to model input:

```python
tokens = [tokenize(s) for s in sentences]   # lowercase words, punctuation
vocabulary = build_vocabulary(tokens)       # "<pad>", "<unk>", then by count
ids, cut = word_ids(tokens, vocabulary)     # (B, T) int32, 0 = padding
```

Id 0 is padding (`PAD_ID`) and id 1 the unknown word (`UNK_ID`), the first
two entries of a vocabulary built with the default `reserved` tokens. The
vocabulary file of a run folder is written and read by
`keras_attention.training.runs`.
"""

import collections
import os
import re

import keras
import numpy as np

from keras_attention.utils.validation import check_positive_int

VOCABULARY_FILE = "vocabulary.txt"

PAD_ID = 0
UNK_ID = 1
RESERVED = ("<pad>", "<unk>")

# Contractions are split the Penn Treebank way ("don't" -> "do", "n't";
# "it's" -> "it", "'s"), other inner apostrophes are kept ("o'clock");
# "..." and "--" stay whole, other punctuation becomes one token per
# character.
_CLITICS = r"(?:s|re|ve|ll|d|m)\b"
_TOKEN_PATTERN = re.compile(
    rf"\w+(?=n't\b)|n't\b|'{_CLITICS}|\w+(?:'(?!{_CLITICS})\w+)*"
    r"|\.\.\.|--|[^\w\s]"
)


def tokenize(text):
    """Splits a sentence into lowercase word and punctuation tokens.

    Punctuation is split off as separate tokens and contractions are split
    the Penn Treebank way, which matches the GloVe vocabulary. Already
    tokenized text (such as the InferSent files) is left as it is, apart
    from lowercasing.

    Example: `tokenize("A man isn't riding.")` returns
    `["a", "man", "is", "n't", "riding", "."]`.

    Args:
        text: The sentence, a string.

    Returns:
        A list of token strings.

    Raises:
        TypeError: If `text` is not a string.
    """
    if not isinstance(text, str):
        raise TypeError(
            f"Expected `text` to be a string. Received: text={text!r} of "
            f"type {type(text).__name__}"
        )
    return _TOKEN_PATTERN.findall(text.lower())


def build_vocabulary(sentences, min_count=1, reserved=RESERVED, max_size=None):
    """Builds a word vocabulary from sentences.

    Args:
        sentences: Iterable of sentences. Strings are split with
            `tokenize`; lists or tuples are taken as already tokenized.
        min_count: Minimum number of occurrences for a word to be kept.
        reserved: Tokens placed first, in this order (by default padding
            at index 0 and the unknown-word token at index 1). They are not
            repeated if they also occur in the sentences.
        max_size: Optional maximum vocabulary size, reserved tokens
            included.

    Returns:
        A list of words: the reserved tokens, then the kept words by
        decreasing count, ties broken by first occurrence. Index `i` of the
        list is the id of the word.

    Raises:
        ValueError: If `min_count` is smaller than 1, if `max_size` is
            smaller than the number of reserved tokens, or if `reserved`
            contains duplicates.
    """
    check_positive_int("min_count", min_count)
    reserved = tuple(reserved)
    if len(set(reserved)) != len(reserved):
        raise ValueError(
            "Expected distinct reserved tokens. "
            f"Received: reserved={reserved!r}"
        )
    if max_size is not None and max_size < len(reserved):
        raise ValueError(
            "Expected `max_size` to be at least the number of reserved "
            f"tokens ({len(reserved)}). Received: max_size={max_size!r}"
        )
    counts = collections.Counter()
    for sentence in sentences:
        tokens = tokenize(sentence) if isinstance(sentence, str) else sentence
        counts.update(tokens)
    # Counter keeps first-insertion order, and sorted() is stable.
    words = sorted(counts, key=lambda word: -counts[word])
    reserved_set = set(reserved)
    vocabulary = list(reserved)
    for word in words:
        if counts[word] < min_count:
            break
        if word in reserved_set:
            continue
        if max_size is not None and len(vocabulary) >= max_size:
            break
        vocabulary.append(word)
    return vocabulary


def add_pretrained_words(vocabulary, sentences, pretrained):
    """`vocabulary` with the words of `sentences` that have a pretrained
    vector appended, in order of first occurrence.

    The applications build their vocabulary from the training words and
    add the dev and test words that GloVe knows: those enter the model
    only through their fixed pretrained vectors; a dev or test word
    without one stays unknown.

    Args:
        vocabulary: list of str.
        sentences: iterable of token lists.
        pretrained: set of the words that have a pretrained vector.

    Returns:
        A new list.

    Example:

    >>> add_pretrained_words(["<pad>", "<unk>", "a"], [["a", "b", "c"]], {"b"})
    ['<pad>', '<unk>', 'a', 'b']
    """
    vocabulary = list(vocabulary)
    known = set(vocabulary)
    for sentence in sentences:
        for word in sentence:
            if word not in known and word in pretrained:
                known.add(word)
                vocabulary.append(word)
    return vocabulary


def vocabulary_index(vocabulary):
    """`{word: id}`; a word listed twice keeps its first id."""
    if isinstance(vocabulary, dict):
        return vocabulary
    index = {}
    for i, word in enumerate(vocabulary):
        index.setdefault(word, i)
    return index


def word_ids(sentences, vocabulary, length=None, max_length=None):
    """Words -> one right-padded int32 array `(B, T)`.

    Args:
        sentences: list of token lists, or of strings (split with
            `tokenize`).
        vocabulary: list of words (index = id) or a `{word: id}` dict.
            Words not in it get `UNK_ID`.
        length: int. Width `T` of the array; longer sentences are cut.
            Defaults to the longest sentence (after `max_length`), at least
            one column, so an empty sentence is all padding.
        max_length: int. Words kept per sentence before padding (the
            applications' `--max-length`). Defaults to no limit.

    Returns:
        `(ids, cut)`: the array and the number of sentences that lost
        words (to `max_length` or `length`).

    Example:

    >>> ids, cut = word_ids([["a", "dog", "a"], ["cat"], []],
    ...                     ["<pad>", "<unk>", "a", "dog"], length=2)
    >>> ids.tolist(), cut
    ([[2, 3], [1, 0], [0, 0]], 1)
    """
    check_positive_int("length", length, allow_none=True)
    check_positive_int("max_length", max_length, allow_none=True)
    index = vocabulary_index(vocabulary)
    tokens = [tokenize(s) if isinstance(s, str) else list(s) for s in sentences]
    limits = [x for x in (length, max_length) if x is not None]
    limit = min(limits) if limits else None
    kept = [t[:limit] for t in tokens]
    if length is None:
        length = max([1] + [len(t) for t in kept])
    ids = np.zeros((len(kept), length), dtype="int32")
    for row, sentence in enumerate(kept):
        ids[row, : len(sentence)] = [index.get(w, UNK_ID) for w in sentence]
    cut = sum(len(t) > len(k) for t, k in zip(tokens, kept))
    return ids, int(cut)


@keras.saving.register_keras_serializable(package="keras_attention")
class WordTokenizer:
    """Text -> word ids for the word-level models, as a preset asset.

    The route of the NLI and relatedness models from text to input,
    `tokenize` then `word_ids`, with the vocabulary the model was trained
    on: lowercase words and punctuation, unknown words `UNK_ID`, right
    padding with `PAD_ID`. It follows keras-hub's tokenizer contract for
    presets (`get_config`, `save_assets`, `load_assets`, `config_file`),
    so `keras_attention.presets` saves it as `tokenizer.json` and
    `assets/tokenizer/vocabulary.txt` (one word per line, line `i` = id
    `i`, the applications' `vocabulary.txt`).

    Args:
        vocabulary: list of str (index = id), or `None` until
            `load_assets` reads one.
        max_length: int. Words kept per sentence (the applications'
            `--max-length`). Defaults to `None` (no limit).

    Example:

    >>> tokenizer = WordTokenizer(["<pad>", "<unk>", "a", "dog", "."])
    >>> tokenizer(["A dog.", "A cat"]).tolist()
    [[2, 3, 4], [2, 1, 0]]
    >>> tokenizer.detokenize([[2, 3, 4], [2, 1, 0]])
    ['a dog .', 'a <unk>']
    """

    def __init__(self, vocabulary=None, max_length=None, config_file=None):
        check_positive_int("max_length", max_length, allow_none=True)
        self.vocabulary = None
        if vocabulary is not None:
            self.set_vocabulary(vocabulary)
        self.max_length = max_length
        self.config_file = config_file or "tokenizer.json"

    def set_vocabulary(self, vocabulary):
        words = list(vocabulary)
        if len(words) <= UNK_ID or not all(isinstance(w, str) for w in words):
            raise ValueError(
                "Argument `vocabulary` must list at least the padding and "
                f"unknown words, as strings. Received: vocabulary={words[:5]!r}"
            )
        self.vocabulary = words
        self._index = vocabulary_index(words)

    def __call__(self, texts):
        return self.tokenize(texts)

    def tokenize(self, texts):
        """Strings (or one string) -> int32 ids `(B, T)` (`(T,)` for one)."""
        self._check_vocabulary()
        single = isinstance(texts, str)
        ids, _ = word_ids(
            [texts] if single else list(texts),
            self._index,
            max_length=self.max_length,
        )
        return ids[0] if single else ids

    def detokenize(self, ids):
        """Ids `(B, T)` (or `(T,)`) -> strings, words joined by spaces,
        padding dropped."""
        self._check_vocabulary()
        ids = np.asarray(keras.ops.convert_to_numpy(ids))
        rows = ids[None] if ids.ndim == 1 else ids
        texts = [
            " ".join(self.vocabulary[int(i)] for i in row if i != PAD_ID)
            for row in rows
        ]
        return texts[0] if ids.ndim == 1 else texts

    def vocabulary_size(self):
        self._check_vocabulary()
        return len(self.vocabulary)

    def get_vocabulary(self):
        self._check_vocabulary()
        return list(self.vocabulary)

    def save_assets(self, dir_path):
        self._check_vocabulary()
        path = os.path.join(dir_path, VOCABULARY_FILE)
        with open(path, "w", encoding="utf-8") as file:
            file.write("\n".join(self.vocabulary) + "\n")

    def load_assets(self, dir_path):
        path = os.path.join(dir_path, VOCABULARY_FILE)
        with open(path, encoding="utf-8") as file:
            self.set_vocabulary(file.read().splitlines())

    def get_config(self):
        # The vocabulary is an asset (`save_assets`), as in keras-hub.
        return {"max_length": self.max_length, "config_file": self.config_file}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def _check_vocabulary(self):
        if self.vocabulary is None:
            raise ValueError(
                "This WordTokenizer has no vocabulary yet: pass "
                "`vocabulary=` or call `load_assets`."
            )
