"""SavedModels of the sentence-pair models: text in, predictions out.

The graph holds the word tokenizer (`keras_attention.export.text`, the
`keras_attention.data.tokenize` rules in `tf.strings` ops), the vocabulary
(a `tf.lookup.StaticHashTable`, unknown words -> id 1), and the model.

Signatures (`serving_default`):

- classifier (NLI): `premise`, `hypothesis` (`tf.string`, `[None]`) ->
  `probabilities` (`tf.float32`, `[None, 3]`) and `label` (`tf.string`,
  `[None]`, one of `keras_attention.data.LABELS`).
- regressor (relatedness): `sentence_a`, `sentence_b` (`tf.string`,
  `[None]`) -> `score` (`tf.float32`, `[None]`, on the 1-5 scale).

Each input must be a 1-D batch, and the two batches must be the same size;
otherwise the signature fails with an `InvalidArgumentError` that names the
input and the received rank or sizes. A non-string input is refused by
TensorFlow before the graph runs ("input #1(zero-based) was expected to be
a string tensor but is a int32 tensor"; inputs are numbered in sorted name
order).

Serving rules, row by row (one row never changes another's result):

- Bytes that are not valid UTF-8 are replaced by U+FFFD (an unknown word).
- A sentence longer than `max_length` words is cut to its first
  `max_length` words, as the training scripts do (`--max-length`; the
  run's `config.json` gives it).
- An empty or blank sentence is all padding: the model's fully masked
  rows give zeros, so the prediction is defined (and the same for every
  empty sentence).
"""

import os

from keras_attention.data import LABELS
from keras_attention.data import words
from keras_attention.export import archive
from keras_attention.export import text
from keras_attention.training import runs
from keras_attention.utils.optional import import_optional
from keras_attention.utils.untracked import Untracked
from keras_attention.utils.validation import check_positive_int

tf = import_optional("tensorflow", "tensorflow", "SavedModel export")

DEFAULT_MAX_LENGTH = 100


class PairModule(tf.Module):
    """The exported object: vocabulary table, model variables, signature.

    Args:
        model: a Keras model on two int inputs (0 = padding).
        vocabulary: list of words, index = id.
        max_length: int. Words kept per sentence.
        input_names: the two input names (model inputs and signature
            inputs alike).
        head: function from the model's output to the signature's dict.
    """

    def __init__(self, model, vocabulary, max_length, input_names, head):
        super().__init__(name="pair_model")
        self._model = Untracked(model)
        self.model_variables = [v.value for v in model.variables]
        self.table = text.vocabulary_table(vocabulary)
        self.max_length = max_length
        self.input_names = tuple(input_names)
        self.head = head

    def signatures(self):
        """`{"serving_default": ...}`, a concrete function traced once."""
        specs = [
            tf.TensorSpec([None], tf.string, name=n) for n in self.input_names
        ]
        function = tf.function(
            self._predict, input_signature=specs, autograph=False
        )
        return {"serving_default": function.get_concrete_function()}

    def check_inputs(self, first, second):
        """The two batches, after in-graph checks of their rank and size.

        A wrong rank (`text.check_sentence_batch`), or batches of different
        sizes, fail here with an `InvalidArgumentError` that names the
        input and prints the received rank or sizes.
        """
        checks = [
            text.check_sentence_batch(name, sentences)
            for name, sentences in zip(self.input_names, (first, second))
        ]
        with tf.control_dependencies(checks):
            sizes = [tf.shape(first)[0], tf.shape(second)[0]]
            a, b = self.input_names
            same = tf.debugging.Assert(
                tf.equal(sizes[0], sizes[1]),
                [
                    f"Inputs `{a}` and `{b}` must hold the same number of "
                    f"sentences. Received: {a} with",
                    sizes[0],
                    f"sentences and {b} with",
                    sizes[1],
                ],
            )
        with tf.control_dependencies([same]):
            return tf.identity(first), tf.identity(second)

    def token_ids(self, sentences):
        """Int32 ids `(B, T)`, at least one column, 0-padded."""
        words = text.tokenize_words(text.clean_utf8(sentences))
        words = words[:, : self.max_length]
        ids = tf.ragged.map_flat_values(self.table.lookup, words)
        ids = ids.to_tensor(default_value=0)
        missing = tf.maximum(1 - tf.shape(ids)[1], 0)
        return tf.pad(ids, [[0, 0], [0, missing]])

    def _predict(self, first, second):
        first, second = self.check_inputs(first, second)
        inputs = {
            self.input_names[0]: self.token_ids(first),
            self.input_names[1]: self.token_ids(second),
        }
        return self.head(self._model.value(inputs, training=False))


def _classifier_head(labels):
    def head(outputs):
        # ReSANClassifier returns a dict holding "probabilities".
        probabilities = outputs
        if isinstance(outputs, dict):
            probabilities = outputs["probabilities"]
        probabilities = tf.cast(probabilities, tf.float32)
        index = tf.argmax(probabilities, axis=-1, output_type=tf.int32)
        label = tf.gather(tf.constant(list(labels)), index)
        return {"probabilities": probabilities, "label": label}

    return head


def _regressor_head(outputs):
    score = outputs["score"] if isinstance(outputs, dict) else outputs
    return {"score": tf.cast(tf.reshape(score, [-1]), tf.float32)}


def export_classifier(
    run_dir_or_model,
    export_dir,
    vocabulary=None,
    max_length=None,
    version=1,
):
    """Writes an NLI classifier SavedModel to `export_dir/<version>/`.

    Args:
        run_dir_or_model: a run folder of `applications/nli/train.py`
            (`model.keras`, `vocabulary.txt`, `config.json`), or a Keras
            model with inputs `premise` and `hypothesis` (int ids) and
            class probabilities (in the order of `LABELS`) as output.
        export_dir: folder of versions (TensorFlow Serving's model base
            path).
        vocabulary: with a model: the list of words (index = id) or the
            path of a `vocabulary.txt`. Ignored with a run folder.
        max_length: int. Words kept per sentence. Defaults to the run's
            `max_length`, else `100`.
        version: int. Defaults to `1`.

    Returns:
        The path of the version folder.
    """
    return _export_pair(
        "export_classifier",
        run_dir_or_model,
        export_dir,
        vocabulary,
        max_length,
        version,
        ("premise", "hypothesis"),
        _classifier_head(LABELS),
    )


def export_regressor(
    run_dir_or_model,
    export_dir,
    vocabulary=None,
    max_length=None,
    version=1,
):
    """Writes a relatedness SavedModel to `export_dir/<version>/`.

    Args:
        run_dir_or_model: a run folder of `applications/relatedness/
            train.py`, or a model with inputs `sentence_a`, `sentence_b`
            whose output is the score `(B,)` or a dict holding `"score"`
            (`keras_attention.models.ReSANRelatedness`).
        export_dir, vocabulary, max_length, version: as in
            `export_classifier`.

    Returns:
        The path of the version folder.
    """
    return _export_pair(
        "export_regressor",
        run_dir_or_model,
        export_dir,
        vocabulary,
        max_length,
        version,
        ("sentence_a", "sentence_b"),
        _regressor_head,
    )


def _export_pair(
    function_name,
    run_dir_or_model,
    export_dir,
    vocabulary,
    max_length,
    version,
    input_names,
    head,
):
    check_positive_int("max_length", max_length, allow_none=True)
    path = archive.version_path(export_dir, version)
    options = dict(version=version, max_length=max_length)
    if not isinstance(run_dir_or_model, (str, os.PathLike)):
        vocabulary = _vocabulary_list(vocabulary)

    def write(run_dir):
        run_dir_or_model.save(os.path.join(run_dir, runs.MODEL_FILE))
        runs.write_vocabulary(run_dir, vocabulary)
        return run_dir

    exported = archive.export_elsewhere(
        function_name, run_dir_or_model, export_dir, options, write
    )
    if exported is not None:
        return exported
    model = run_dir_or_model
    if isinstance(run_dir_or_model, (str, os.PathLike)):
        run_dir = os.fspath(run_dir_or_model)
        model = runs.load_model(run_dir)
        vocabulary = runs.read_vocabulary(
            os.path.join(run_dir, runs.VOCABULARY_FILE)
        )
        if max_length is None:
            max_length = runs.read_config(run_dir).get("max_length")
    max_length = max_length or DEFAULT_MAX_LENGTH
    module = PairModule(model, vocabulary, max_length, input_names, head)
    return archive.save_version(module, path, module.signatures())


def _vocabulary_list(vocabulary):
    if vocabulary is None:
        raise ValueError(
            "Exporting a model object needs its vocabulary (a list of words "
            "or a vocabulary.txt path). Received: vocabulary=None"
        )
    if isinstance(vocabulary, (str, os.PathLike)):
        return runs.read_vocabulary(os.fspath(vocabulary))
    words = list(vocabulary)
    if len(words) < 2 or not all(isinstance(w, str) for w in words):
        raise ValueError(
            "Argument `vocabulary` must list at least the padding and "
            f"unknown words, as strings. Received: vocabulary={words[:5]!r}"
        )
    return words


def python_token_ids(sentences, vocabulary, max_length):
    """The Python reference of the in-graph ids, `(B, T)` int32.

    `keras_attention.data.word_ids`: `tokenize`, cut to `max_length`
    words, looked up (unknown -> 1) and padded with 0 to the longest
    sentence (at least one column), as the exported graph does.
    """
    return words.word_ids(sentences, vocabulary, max_length=max_length)[0]
