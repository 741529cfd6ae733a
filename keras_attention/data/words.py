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
import re

import numpy as np

from keras_attention.utils.validation import check_positive_int

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
    if isinstance(min_count, bool) or not isinstance(min_count, int):
        raise ValueError(
            f"Expected `min_count` to be an integer >= 1. "
            f"Received: min_count={min_count!r}"
        )
    if min_count < 1:
        raise ValueError(
            f"Expected `min_count` to be an integer >= 1. "
            f"Received: min_count={min_count!r}"
        )
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
