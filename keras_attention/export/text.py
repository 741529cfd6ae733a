"""Text preprocessing as TensorFlow graph ops, for exported models.

These functions run inside a SavedModel, where there is no Python: they
use only `tf.strings`, `tf.lookup` and ragged ops, which every TensorFlow
Serving build has.

`tokenize_words` reproduces `keras_attention.data.tokenize` (lowercase,
Penn Treebank contractions, punctuation split off). That tokenizer is a
Python regular expression with look-ahead, which RE2 (the regex engine of
`tf.strings`) lacks, so the graph version works in three passes:

1. Text is lowercased, whitespace becomes a space, and a marker (U+0001)
   is written after every piece: a maximal run of word characters, `...`,
   `--`, or any other single non-space character.
2. One RE2 pass regroups pieces into tokens, trying at each token start
   what the Python pattern tries, in its order: a word ending in `n`
   followed by `'t` (split as `do` + `n't`), a clitic (`'s`, `'re`, `'ve`,
   `'ll`, `'d`, `'m`), a word with inner apostrophes not followed by a
   clitic (`o'clock`), any other piece. The markers make the look-ahead
   unnecessary: every piece visibly ends.
3. The remaining markers (inside joined words) are deleted and the text
   is split on spaces.

Word and space characters follow Python's definitions (`\\w` is a letter,
a number or `_`; whitespace is what `str.isspace` accepts).
`tests/export/text_test.py` checks every code point and every sentence of
the staged SICK and SNLI files against the Python tokenizer.

Known differences, both from TensorFlow's older Unicode tables: 40
uppercase letters added in Unicode 14 (U+2C2F, U+A7C0, U+A7D0, U+A7D6,
U+A7D8, U+10570-U+10595) are not lowercased, and Greek capital sigma is
always lowercased to `σ` (Python writes `ς` at the end of a word).

Input bytes that are not valid UTF-8 are replaced by U+FFFD before
anything else (`clean_utf8`), so every request gives a defined result;
U+FFFD is a punctuation token, normally out of the vocabulary.
"""

from keras_attention.utils.optional import import_optional

tf = import_optional("tensorflow", "tensorflow", "SavedModel export")

MARKER = "\x01"
# What replaces a marker character found in the input (both are
# punctuation tokens; `vocabulary_table` refuses vocabularies with either).
MARKER_STANDIN = "\x02"
REPLACEMENT_CHARACTER = 0xFFFD

_WORD = r"[\p{L}\p{N}_]"
# Python's `str.isspace()` characters.
_SPACE = (
    r"[\t\n\x0b\x0c\r\x1c-\x1f \x{85}\x{a0}\x{1680}\x{2000}-\x{200a}"
    r"\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}]"
)
_PIECE = rf"({_WORD}+|\.\.\.|--|[^\p{{L}}\p{{N}}_ ])"
# A whole word (it ends at a marker) other than a clitic: 3+ characters,
# 2 characters other than re/ve/ll, 1 character other than s/d/m.
_OTHER = r"[\p{N}_]"
_NOT_CLITIC = (
    rf"(?:{_WORD}{{3,}}"
    rf"|[^\P{{L}}rvl]{_WORD}|{_OTHER}{_WORD}"
    rf"|[rv][^\P{{L}}e]|[rv]{_OTHER}|l[^\P{{L}}l]|l{_OTHER}"
    rf"|[^\P{{L}}sdm]|{_OTHER})"
)
_M = MARKER
_TOKEN = (
    # 1-4: "don't" -> "do" + "n't" (or "n't" alone).
    rf"({_WORD}*)(n){_M}(')\x01(t){_M}"
    # 5-6: a clitic.
    rf"|(')\x01(s|re|ve|ll|d|m){_M}"
    # 7: a word, with inner apostrophes when no clitic follows them.
    rf"|({_WORD}+{_M}(?:'{_M}{_NOT_CLITIC}{_M})*)"
    # 8: any other piece.
    rf"|([^ {_M}]+){_M}"
)
_TOKEN_REWRITE = r" \1 \2\3\4 \5\6 \7 \8 "


def check_sentence_batch(name, sentences):
    """An in-graph check that `sentences` is a 1-D batch `[batch]`.

    A loaded signature checks only the dtype of what it is given, not the
    `[None]` shape it declares: a scalar or a `[N, 1]` batch would reach
    the tokenizer. A wrong rank fails with an `InvalidArgumentError` that
    names the input and prints the received rank and shape. (`tf.rank`
    would be folded to the traced rank 1; counting the entries of the
    runtime shape is not.)

    Returns:
        The assertion op, for `tf.control_dependencies`.
    """
    shape = tf.shape(sentences)
    rank = tf.math.count_nonzero(shape >= 0, dtype=tf.int32)
    return tf.debugging.Assert(
        tf.equal(rank, 1),
        [
            f"Input `{name}` must be a 1-D batch of strings [batch]. "
            f"Received: {name} of rank",
            rank,
            "and shape",
            shape,
        ],
    )


def clean_utf8(texts):
    """Replaces bytes that are not valid UTF-8 by U+FFFD.

    Args:
        texts: `tf.string` tensor of any shape.

    Returns:
        A `tf.string` tensor of the same shape, valid UTF-8.
    """
    return tf.strings.unicode_transcode(
        texts,
        input_encoding="UTF-8",
        output_encoding="UTF-8",
        errors="replace",
        replacement_char=REPLACEMENT_CHARACTER,
    )


def lowercase(texts):
    """Unicode lowercasing of valid UTF-8 text, `(B,)` strings.

    Character by character: `tf.strings.lower` stops at a NUL character,
    which is kept as it is.
    """
    characters = tf.strings.unicode_split(texts, "UTF-8")  # (B, C) ragged
    flat = characters.flat_values
    lowered = tf.where(
        tf.equal(flat, "\x00"), flat, tf.strings.lower(flat, encoding="utf-8")
    )
    characters = characters.with_flat_values(lowered)
    return tf.strings.reduce_join(characters, axis=-1)


def tokenize_words(texts):
    """`keras_attention.data.tokenize` as graph ops.

    Args:
        texts: `tf.string` tensor `(B,)` of valid UTF-8 (see `clean_utf8`).

    Returns:
        A `tf.RaggedTensor` of token strings `(B, None)`.
    """
    texts = lowercase(texts)
    texts = tf.strings.regex_replace(texts, _M, MARKER_STANDIN)
    texts = tf.strings.regex_replace(texts, _SPACE, " ")
    texts = tf.strings.regex_replace(texts, _PIECE, r"\1" + _M)
    texts = tf.strings.regex_replace(texts, _TOKEN, _TOKEN_REWRITE)
    texts = tf.strings.regex_replace(texts, _M, "")
    tokens = tf.strings.split(texts, sep=" ")
    return tf.ragged.boolean_mask(tokens, tf.strings.length(tokens) > 0)


def vocabulary_table(vocabulary, unknown_id=1):
    """A `tf.lookup.StaticHashTable` from words to their row in the list.

    Args:
        vocabulary: list of words; index `i` is the id of word `i`.
        unknown_id: int. Id of words not in the list. Defaults to `1`.

    Returns:
        The table, int32 values. Track it on the exported module.
    """
    vocabulary = list(vocabulary)
    for word in (MARKER, MARKER_STANDIN):
        if word in vocabulary:
            raise ValueError(
                "The vocabulary contains a control character that the "
                "in-graph tokenizer uses as a marker. Received: "
                f"vocabulary with {word!r} at index {vocabulary.index(word)}"
            )
    initializer = tf.lookup.KeyValueTensorInitializer(
        tf.constant(vocabulary, tf.string),
        tf.range(len(vocabulary), dtype=tf.int32),
    )
    return tf.lookup.StaticHashTable(initializer, default_value=unknown_id)
