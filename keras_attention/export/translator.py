"""SavedModel of a translation Transformer: text in, text out.

The graph holds the SentencePiece model (TensorFlow Text ops), the
Transformer weights, beam search and greedy search with the decoder caches
(`keras_attention.decoding`, a `tf.while_loop` on the tensorflow backend),
and detokenization.

Signatures:

- `serving_default`: `inputs` (`tf.string`, `[None]`) -> `outputs`
  (`tf.string`, `[None]`, the translations) and `scores` (`tf.float32`,
  `[None]`, the length-penalised log-probability of each translation,
  `log P(Y | X) / ((5 + |Y|) / 6) ** alpha`); beam search.
- `greedy`: the same inputs and outputs with greedy decoding (beam search
  with one beam, which gives exactly greedy search's tokens).

Serving rules, row by row (one row never changes another's result):

- Bytes that are not valid UTF-8 are replaced by U+FFFD, then translated.
- A source longer than the model's `max_sequence_length` subwords (end
  token included) is cut to it, as `keras_attention.data.encode_sentences`
  does.
- A source with no subwords (empty or blank) gives `""` with score `0`.

Sources are padded to the next of a few fixed widths (`bucket_widths`:
multiples of 8 up to 64, as `keras_attention.data.translate` pads, then
multiples of 32 up to `max_sequence_length`); the search is traced once
per width. The width sets the length of the decoder's self-attention cache
(`width + max_extra_length`), which every step reads and reorders, so
coarser widths cost time: padding a batch of 35-subword sources to 64
instead of 40 made beam search 22-33% slower. The batch size stays
unknown (`[None]`); tracing for a fixed batch of 32 measured no faster.

Keras's tensorflow backend writes `keras.ops.slice_update` (decoder caches,
decoded tokens) as the XLA op `XlaDynamicUpdateSlice`, which is not a core
TensorFlow op (`tf.raw_ops`) and runs only where TensorFlow has XLA. The
exporter traces the graph under `ops.writes.core_tensorflow_writes()`, so
those writes are the core op `TensorStridedSliceUpdate` and TF Serving
needs no XLA.

`jit_compile=True` compiles each width's search (encoder, caches and the
decoding loop) with XLA instead, keeping `XlaDynamicUpdateSlice`: 2-3x
less CPU time per sentence (`benchmarks/serving_latency.py
--jit-compile`), for servers with XLA (TF Serving on CPU:
`--xla_cpu_compilation_enabled=true`). Tokenization and detokenization
stay outside XLA. The first call of each width compiles it (seconds).
"""

import os

import tensorflow as tf
import tensorflow_text as tf_text

from keras_attention import decoding
from keras_attention.data import translation
from keras_attention.export import archive
from keras_attention.export import text
from keras_attention.ops.writes import core_tensorflow_writes
from keras_attention.training import runs
from keras_attention.utils.untracked import Untracked
from keras_attention.utils.validation import check_positive_int


def bucket_widths(max_sequence_length):
    """Padded source widths, ascending, ending with `max_sequence_length`.

    Multiples of 8 up to 64 (where most sources are, and the widths
    `keras_attention.data.translate` pads to), then multiples of 32: few
    traced searches for the rare long sources.
    """
    fine = range(8, 65, 8)
    coarse = range(96, max_sequence_length, 32)
    widths = [w for w in (*fine, *coarse) if w < max_sequence_length]
    return widths + [max_sequence_length]


class TranslatorModule(tf.Module):
    """The exported object: tokenizer, model variables and signatures."""

    def __init__(
        self, model, proto, beam_size, alpha, max_extra_length, jit_compile
    ):
        super().__init__(name="translator")
        # The weights are tracked as plain variables; the Keras model is
        # kept out of tracking, or saving would serialize its own
        # functions too (several times slower, and nothing uses them).
        self._model = Untracked(model)
        self.model_variables = [v.value for v in model.variables]
        self.tokenizer = tf_text.SentencepieceTokenizer(
            model=proto, out_type=tf.int32
        )
        self.beam_size = beam_size
        self.alpha = float(alpha)
        self.max_extra_length = max_extra_length
        self.jit_compile = bool(jit_compile)
        self.widths = bucket_widths(model.max_sequence_length)

    def signatures(self):
        """`{"serving_default": beam search, "greedy": greedy search}`,
        each a concrete function traced once.

        They are not attributes of the module: saving traces a module's
        `tf.function` attributes again.
        """
        spec = tf.TensorSpec([None], tf.string, name="inputs")
        functions = {
            "serving_default": lambda inputs: self._translate(
                inputs, self.beam_size
            ),
            "greedy": lambda inputs: self._translate(inputs, 1),
        }
        return {
            name: tf.function(
                function, input_signature=[spec], autograph=False
            ).get_concrete_function()
            for name, function in functions.items()
        }

    def encode(self, inputs):
        """Source ids `(B, S)`, 0-padded, each ending with the end id."""
        limit = self._model.value.max_sequence_length
        pieces = self.tokenizer.tokenize(text.clean_utf8(inputs))
        pieces = pieces[:, : limit - 1]
        ends = tf.fill([tf.shape(inputs)[0], 1], translation.END_ID)
        ids = tf.concat([pieces, tf.RaggedTensor.from_tensor(ends)], axis=1)
        return ids.to_tensor(default_value=translation.PAD_ID), pieces

    def _search(self, ids, beams):
        width = tf.shape(ids)[1]
        branch = tf.reduce_sum(
            tf.cast(tf.constant(self.widths[:-1], tf.int32) < width, tf.int32)
        )

        def search(padded):
            return decoding.beam_search(
                self._model.value,
                padded,
                translation.START_ID,
                translation.END_ID,
                beam_size=beams,
                alpha=self.alpha,
                max_extra_length=self.max_extra_length,
                return_scores=True,
            )

        if self.jit_compile:
            # One XLA cluster per width: encoder, caches and the whole
            # search loop; tokenization stays outside (TF Text ops).
            search = tf.function(search, jit_compile=True, autograph=False)

        def padded_search(target):
            def run():
                padded = tf.pad(ids, [[0, 0], [0, target - width]])
                return search(tf.ensure_shape(padded, [None, target]))

            return run

        branches = [padded_search(w) for w in self.widths]
        tokens, scores = tf.switch_case(branch, branches)
        return tokens, scores

    def decode(self, tokens):
        """Detokenizes `(B, L)` ids, each row cut at its end or padding."""
        stop = tf.logical_or(
            tf.equal(tokens, translation.END_ID),
            tf.equal(tokens, translation.PAD_ID),
        )
        lengths = tf.where(
            tf.reduce_any(stop, axis=1),
            tf.argmax(tf.cast(stop, tf.int32), axis=1, output_type=tf.int32),
            tf.shape(tokens)[1],
        )
        rows = tf.RaggedTensor.from_tensor(tokens, lengths=lengths)
        return self.tokenizer.detokenize(rows)

    def _translate(self, inputs, beams):
        with tf.control_dependencies(
            [text.check_sentence_batch("inputs", inputs)]
        ):
            inputs = tf.identity(inputs)
        ids, pieces = self.encode(inputs)
        tokens, scores = self._search(ids, beams)
        outputs = self.decode(tokens)
        empty = tf.equal(pieces.row_lengths(), 0)
        outputs = tf.where(empty, tf.constant(""), outputs)
        scores = tf.where(empty, 0.0, tf.cast(scores, tf.float32))
        return {"outputs": outputs, "scores": scores}


def export_translator(
    run_dir_or_model,
    export_dir,
    tokenizer=None,
    version=1,
    beam_size=4,
    alpha=0.6,
    max_extra_length=50,
    jit_compile=False,
):
    """Writes a translation SavedModel to `export_dir/<version>/`.

    Args:
        run_dir_or_model: a run folder of `applications/translation/
            train.py` (`model.keras`, `tokenizer.model`), or a
            `keras_attention.models.Transformer`.
        export_dir: folder of versions, as TensorFlow Serving's
            `--model_base_path` expects.
        tokenizer: with a model: its SentencePiece model, as a
            `keras_hub.tokenizers.SentencePieceTokenizer`, the model bytes
            or a file path. Ignored with a run folder.
        version: int. Version folder to write. Defaults to `1`.
        beam_size: int. Beams of `serving_default`. Defaults to `4`.
        alpha: float. Length penalty exponent. Defaults to `0.6`.
        max_extra_length: int. A translation ends after `source length +
            max_extra_length` subwords. Defaults to `50`.
        jit_compile: bool. Compile each search with XLA
            (`tf.function(jit_compile=True)`). About 2-3x less CPU time
            per sentence, but the graph then holds XLA ops
            (`XlaDynamicUpdateSlice`) and needs a TensorFlow with XLA:
            TF Serving on CPU runs it only with
            `--xla_cpu_compilation_enabled=true`. Defaults to `False`.

    Returns:
        The path of the version folder.
    """
    check_positive_int("beam_size", beam_size)
    check_positive_int("max_extra_length", max_extra_length)
    if not isinstance(jit_compile, bool):
        raise ValueError(
            "Argument `jit_compile` must be True or False. Received: "
            f"jit_compile={jit_compile!r}"
        )
    path = archive.version_path(export_dir, version)
    options = dict(
        version=version,
        beam_size=beam_size,
        alpha=alpha,
        max_extra_length=max_extra_length,
        jit_compile=jit_compile,
    )
    if not isinstance(run_dir_or_model, (str, os.PathLike)):
        proto = _proto_bytes(tokenizer)

    def write(run_dir):
        run_dir_or_model.save(os.path.join(run_dir, runs.MODEL_FILE))
        with open(os.path.join(run_dir, translation.TOKENIZER_FILE), "wb") as f:
            f.write(proto)
        return run_dir

    exported = archive.export_elsewhere(
        "export_translator", run_dir_or_model, export_dir, options, write
    )
    if exported is not None:
        return exported
    model = run_dir_or_model
    if isinstance(run_dir_or_model, (str, os.PathLike)):
        run_dir = os.fspath(run_dir_or_model)
        model = runs.load_model(run_dir)
        proto = _read_proto(os.path.join(run_dir, translation.TOKENIZER_FILE))
    _check_vocabulary_size(model, proto)
    module = TranslatorModule(
        model, proto, beam_size, alpha, max_extra_length, jit_compile
    )
    # The search is traced for this graph (not reused from earlier
    # decoding in this process), with core ops where XLA is not used.
    writes = core_tensorflow_writes(not jit_compile)
    with decoding.fresh_traces(model), writes:
        archive.save_version(module, path, module.signatures())
    return path


def _read_proto(path):
    if not os.path.isfile(path):
        raise ValueError(
            f"No SentencePiece model at '{path}'. Received: tokenizer path "
            f"{path!r}"
        )
    with open(path, "rb") as f:
        return f.read()


def _proto_bytes(tokenizer):
    if tokenizer is None:
        raise ValueError(
            "Exporting a model object needs its tokenizer (a keras-hub "
            "SentencePieceTokenizer, model bytes or a file path). Received: "
            "tokenizer=None"
        )
    if isinstance(tokenizer, bytes):
        return tokenizer
    if isinstance(tokenizer, (str, os.PathLike)):
        return _read_proto(os.fspath(tokenizer))
    proto = getattr(tokenizer, "proto", None)
    if isinstance(proto, bytes):
        return proto
    raise ValueError(
        "Argument `tokenizer` must be a SentencePieceTokenizer, bytes or a "
        f"path. Received: tokenizer={tokenizer!r}"
    )


def _check_vocabulary_size(model, proto):
    size = int(tf_text.SentencepieceTokenizer(model=proto).vocab_size().numpy())
    if size != model.vocabulary_size:
        raise ValueError(
            f"The tokenizer has {size} subwords but the model expects "
            f"vocabulary_size={model.vocabulary_size}: they were not "
            f"trained together. Received: tokenizer with {size} subwords"
        )
