"""SavedModel of a decoder-only language model: token ids in, token ids out.

The graph holds the `keras_attention.models.TransformerLanguageModel`
weights and the token-by-token search of `keras_attention.decoding` (the
prefill of the prompts, the self-attention cache, a `tf.while_loop`); no
tokenizer, so a client sends and reads ids of its own vocabulary.

Signatures:

- `serving_default`: greedy search. `token_ids` (`tf.int32`, `[None,
  None]`, the prompts, right-padded with `0`) -> `token_ids` (`tf.int32`,
  `[None, W]`, the continuations, as `decoding.greedy_search` returns
  them: each row ends with an end id, then `0`s; `W =
  min(max_extra_length, max_sequence_length)` whatever the prompts'
  width), `lengths` (`tf.int32`, `[None]`, tokens of each continuation,
  its end id included) and `scores` (`tf.float32`, `[None]`, the sum of
  the model's log-probabilities of those tokens).
- `sample`: the same inputs and outputs, plus `seed` (`tf.int32`
  scalar); temperature, top-k and top-p are fixed at export time. The
  scores are the model's log-probabilities, before temperature, top-k and
  top-p. (A loaded signature does not check the shapes it declares, and
  the graph cannot tell a seed of another shape from a scalar: one fails
  with TensorFlow's own shape error.)

Sampling draws its uniform numbers in the graph with the stateless
`tf.random.stateless_uniform` from `seed` (`sampling_uniforms`), as
`keras.random.uniform(seed=seed)` draws them on the tensorflow backend,
and hands them to `decoding.sample`'s sampler (`decoding.compiled_search`
of the `Sampling` spec): the same seed gives the same tokens at every
call, and on the tensorflow backend the tokens of `decoding.sample(model,
prompts, seed=seed)` for the prompts padded to the same width (below).

Request rules (a bad request fails with an `InvalidArgumentError` that
names the input and prints what it received):

- `token_ids` must be of rank 2 and hold ids in `[0, vocabulary_size)`.
- Each row is a prompt followed by padding: no id after a `0`. A row of
  zeros is an empty prompt (the continuation follows the start id).
- Columns of padding beyond the longest prompt are dropped, so prompts
  may come padded to any width; the longest prompt must be shorter than
  the model's `max_sequence_length` (as `decoding.greedy_search` requires,
  to leave room for a continuation). A longer prompt is refused, not cut:
  the client chooses which tokens to keep.

Prompts are padded to the next of a few fixed widths (`prompt_widths`: the
translator's source widths, multiples of 8 up to 64, then of 32, below
`max_sequence_length`, and `max_sequence_length - 1`); the search is
traced once per width. Padding does not change a row's tokens: each row
is limited by its own prompt's length.

Keras's tensorflow backend writes `keras.ops.slice_update` as the XLA op
`XlaDynamicUpdateSlice`; the exporter traces the searches with the core
op instead (`ops.writes.core_tensorflow_writes`), so the graph holds core
TensorFlow ops only. `jit_compile=True` compiles each width's search with
XLA instead (and keeps that op), for servers with XLA.
"""

import os

from keras_attention import decoding
from keras_attention.export import archive
from keras_attention.export.translator import bucket_widths
from keras_attention.ops.writes import core_tensorflow_writes
from keras_attention.training import runs
from keras_attention.utils.optional import import_optional
from keras_attention.utils.untracked import Untracked
from keras_attention.utils.validation import check_positive_int

tf = import_optional("tensorflow", "tensorflow", "SavedModel export")


def prompt_widths(max_sequence_length):
    """Padded prompt widths, ascending, ending with the longest prompt a
    model takes, `max_sequence_length - 1`."""
    return bucket_widths(max_sequence_length - 1)


def sampling_uniforms(seed, length, batch_size):
    """The uniform numbers of the `sample` signature, float32 `(L, B)`.

    `tf.random.stateless_uniform` with the seed pair `[seed, 0]` (each
    entry taken modulo `2**31 - 2`), which is what
    `keras.random.uniform((L, B), seed=seed)` draws on the tensorflow
    backend.

    Args:
        seed: int or int32 scalar tensor.
        length: int or scalar tensor `L`, the search's token buffer length
            (`decoding.Sampling.output_length`).
        batch_size: int or scalar tensor `B`.
    """
    seed = tf.math.floormod(tf.cast(seed, tf.int32), tf.int32.max - 1)
    pair = tf.stack([seed, tf.zeros_like(seed)])
    return tf.random.stateless_uniform(
        tf.stack([length, batch_size]), seed=pair, dtype=tf.float32
    )


class LanguageModelModule(tf.Module):
    """The exported object: the model variables and the two signatures.

    Args:
        model: a decoder-only language model.
        greedy_spec: the `decoding.Greedy` of `serving_default`.
        sample_spec: the `decoding.Sampling` of `sample` (its seed comes
            with each request).
        jit_compile: bool. Compile each width's search with XLA.
    """

    def __init__(self, model, greedy_spec, sample_spec, jit_compile):
        super().__init__(name="language_model")
        # Weights as plain variables; the Keras model out of tracking (see
        # `translator.TranslatorModule`).
        self._model = Untracked(model)
        self.model_variables = [v.value for v in model.variables]
        self.greedy_spec = greedy_spec
        self.sample_spec = sample_spec
        self.jit_compile = bool(jit_compile)
        self.widths = prompt_widths(model.max_sequence_length)

    def signatures(self):
        """`{"serving_default": greedy, "sample": sampling}`, concrete
        functions traced once (not module attributes, which saving would
        trace again)."""
        ids = tf.TensorSpec([None, None], tf.int32, name="token_ids")
        seed = tf.TensorSpec([], tf.int32, name="seed")

        def greedy(token_ids):
            return self._generate(token_ids, None)

        def sample(token_ids, seed):
            return self._generate(token_ids, seed)

        return {
            "serving_default": tf.function(
                greedy, input_signature=[ids], autograph=False
            ).get_concrete_function(),
            "sample": tf.function(
                sample, input_signature=[ids, seed], autograph=False
            ).get_concrete_function(),
        }

    def check_prompts(self, token_ids):
        """The prompts `(B, P)` cut to the longest one, and `P`, after
        in-graph checks of the module docstring's request rules."""
        shape = tf.shape(token_ids)
        # Counting the runtime shape's entries: `tf.rank` would be folded
        # to the traced rank 2.
        rank = tf.math.count_nonzero(shape >= 0, dtype=tf.int32)
        rank_check = tf.debugging.Assert(
            tf.equal(rank, 2),
            [
                "Input `token_ids` must be prompts of shape [batch, length]. "
                "Received: token_ids of rank",
                rank,
                "and shape",
                shape,
            ],
        )
        with tf.control_dependencies([rank_check]):
            ids = tf.identity(token_ids)
        size = self._model.value.vocabulary_size
        real = tf.cast(tf.not_equal(ids, 0), tf.int32)  # (B, T)
        longest = tf.maximum(tf.reduce_max(tf.reduce_sum(real, 1)), 0)
        checks = [
            tf.debugging.Assert(
                tf.reduce_all((ids >= 0) & (ids < size)),
                [
                    f"Input `token_ids` must hold ids in [0, {size}) (the "
                    "model's vocabulary_size; 0 is padding). Received: "
                    "token_ids with ids from",
                    tf.reduce_min(ids),
                    "to",
                    tf.reduce_max(ids),
                ],
            ),
            tf.debugging.Assert(
                tf.reduce_all(real[:, 1:] <= real[:, :-1]),
                [
                    "Input `token_ids` must hold prompts right-padded with "
                    "0 (no id after a 0). Received: token_ids with an id "
                    "after a 0 in row",
                    tf.argmax(
                        tf.reduce_any(real[:, 1:] > real[:, :-1], axis=1)
                    ),
                ],
            ),
            tf.debugging.Assert(
                longest <= self.widths[-1],
                [
                    "Input `token_ids` must hold prompts of at most "
                    f"{self.widths[-1]} tokens (shorter than the model's "
                    "max_sequence_length, to leave room for a "
                    "continuation). Received: token_ids with a prompt of",
                    longest,
                    "tokens",
                ],
            ),
        ]
        with tf.control_dependencies(checks):
            return tf.identity(ids[:, :longest]), tf.identity(longest)

    def _generate(self, token_ids, seed):
        ids, longest = self.check_prompts(token_ids)
        model = self._model.value
        spec = self.greedy_spec if seed is None else self.sample_spec
        search = decoding.compiled_search(model, spec, self.jit_compile)
        branch = tf.reduce_sum(
            tf.cast(tf.constant(self.widths[:-1], tf.int32) < longest, tf.int32)
        )

        def padded_search(width):
            def run():
                padded = tf.pad(ids, [[0, 0], [0, width - longest]])
                padded = spec.check_inputs(
                    model, tf.ensure_shape(padded, [None, width])
                )
                if seed is None:
                    return search(padded)
                length = spec.output_length(model, width)
                uniforms = sampling_uniforms(seed, length, tf.shape(ids)[0])
                return search(padded, uniforms)

            return run

        tokens, scores, lengths = tf.switch_case(
            branch, [padded_search(w) for w in self.widths]
        )
        return {
            "token_ids": tokens,
            "lengths": lengths,
            "scores": tf.cast(scores, tf.float32),
        }


def export_language_model(
    model_or_path,
    export_dir,
    start_id,
    end_id,
    version=1,
    max_extra_length=50,
    temperature=1.0,
    top_k=None,
    top_p=None,
    min_length=0,
    no_repeat_ngram_size=0,
    jit_compile=False,
):
    """Writes a language model SavedModel to `export_dir/<version>/`.

    Token ids in, token ids out: `serving_default` continues the prompts
    by greedy search, `sample` by sampling with a seed (the module
    docstring gives the signatures and the request rules).

    Args:
        model_or_path: a `keras_attention.models.TransformerLanguageModel`
            (or another decoder-only model with its decoding protocol), or
            the path of its `.keras` file (or of a folder holding
            `model.keras`).
        export_dir: folder of versions, as TensorFlow Serving's
            `--model_base_path` expects.
        start_id: int. First token the decoder reads, before the prompt.
        end_id: int, or a list of ints: the tokens that end a
            continuation (the length limit forces the first).
        version: int. Version folder to write. Defaults to `1`.
        max_extra_length: int. A continuation ends after at most
            `max_extra_length` tokens (fewer where the prompt and it would
            pass `max_sequence_length`). Defaults to `50`.
        temperature: float `>= 0`. Of the `sample` signature; `0` samples
            greedily. Defaults to `1.0`.
        top_k: int or `None`. Of the `sample` signature. Defaults to `None`
            (all tokens).
        top_p: float in `(0, 1]` or `None`. Of the `sample` signature.
            Defaults to `None` (all tokens).
        min_length: int. Tokens of a continuation before its end id, in
            both signatures. Defaults to `0`.
        no_repeat_ngram_size: int. No n-gram of this many tokens twice in
            a row's tokens, in both signatures. Defaults to `0` (off).
        jit_compile: bool. Compile each search with XLA: the graph then
            holds `XlaDynamicUpdateSlice` and needs a TensorFlow with XLA
            (TF Serving on CPU: `--xla_cpu_compilation_enabled=true`).
            Defaults to `False` (core TensorFlow ops only).

    Returns:
        The path of the version folder.

    Example:

    ```python
    path = keras_attention.export.export_language_model(
        model, "lm_export", start_id=1, end_id=2, max_extra_length=20,
        temperature=0.8, top_k=40,
    )
    served = tf.saved_model.load(path)
    prompts = tf.constant([[5, 6, 7], [8, 9, 0]])  # right-padded with 0
    greedy = served.signatures["serving_default"](token_ids=prompts)
    drawn = served.signatures["sample"](token_ids=prompts, seed=7)
    greedy["token_ids"], drawn["token_ids"]  # (2, 20) each
    ```
    """
    options = _check_options(
        start_id=start_id,
        end_id=end_id,
        version=version,
        max_extra_length=max_extra_length,
        temperature=temperature,
        top_k=top_k,
        top_p=top_p,
        min_length=min_length,
        no_repeat_ngram_size=no_repeat_ngram_size,
        jit_compile=jit_compile,
    )
    path = archive.version_path(export_dir, version)
    source = model_or_path
    if isinstance(model_or_path, (str, os.PathLike)):
        folder, name = _model_file(os.fspath(model_or_path))
        source = os.path.join(folder, name)
    else:
        _check_model(model_or_path, model_or_path, start_id, end_id)

    def write(run_dir):
        model_path = os.path.join(run_dir, runs.MODEL_FILE)
        model_or_path.save(model_path)
        return model_path

    exported = archive.export_elsewhere(
        "export_language_model", source, export_dir, options, write
    )
    if exported is not None:
        return exported
    model = model_or_path
    if isinstance(source, str):
        model = runs.load_model(folder, file_name=name)
        _check_model(model, model_or_path, start_id, end_id)
    greedy_spec, sample_spec = _specs(options)
    module = LanguageModelModule(model, greedy_spec, sample_spec, jit_compile)
    # Searches traced for this graph, with the core slice update unless
    # XLA compiles them.
    writes = core_tensorflow_writes(not jit_compile)
    with decoding.fresh_traces(model), writes:
        archive.save_version(module, path, module.signatures())
    return path


def _check_options(**options):
    """Checks the arguments that need no model; returns them (JSON)."""
    check_positive_int("start_id", options["start_id"])
    check_positive_int("max_extra_length", options["max_extra_length"])
    if not isinstance(options["jit_compile"], bool):
        raise ValueError(
            "Argument `jit_compile` must be True or False. Received: "
            f"jit_compile={options['jit_compile']!r}"
        )
    _specs(options)  # the specs check the rest
    end_id = options["end_id"]
    options["end_id"] = end_id if isinstance(end_id, int) else list(end_id)
    return options


def _specs(options):
    """The `decoding.Greedy` and `decoding.Sampling` of the two
    signatures: the cache, the prefill and the model's own length limit."""
    shared = dict(
        start_id=options["start_id"],
        end_id=options["end_id"],
        max_extra_length=options["max_extra_length"],
        min_length=options["min_length"],
        no_repeat_ngram_size=options["no_repeat_ngram_size"],
    )
    sampling = dict(
        temperature=options["temperature"],
        top_k=options["top_k"],
        top_p=options["top_p"],
    )
    return decoding.Greedy(**shared), decoding.Sampling(**shared, **sampling)


def _model_file(path):
    """`(folder, file name)` of the `.keras` file at or in `path`."""
    if os.path.isdir(path):
        folder, name = path, runs.MODEL_FILE
    else:
        folder, name = os.path.split(os.path.abspath(path))
    if not os.path.isfile(os.path.join(folder, name)):
        raise ValueError(
            "Argument `model_or_path` must be a model, a .keras file or a "
            f"folder holding {runs.MODEL_FILE}. Received: "
            f"model_or_path={path!r}"
        )
    return folder, name


def _check_model(model, model_or_path, start_id, end_id):
    """A decoder-only model whose vocabulary holds the start and end ids
    and whose length leaves room for a prompt and a continuation."""
    if not (
        hasattr(model, "decode_step")
        and decoding.decoder_only(model)
        and hasattr(model, "vocabulary_size")
        and hasattr(model, "max_sequence_length")
    ):
        raise ValueError(
            "Argument `model_or_path` must be a decoder-only language model "
            "(a keras_attention.models.TransformerLanguageModel) or its "
            f".keras file. Received: model_or_path={model_or_path!r}"
        )
    if model.max_sequence_length < 2:
        raise ValueError(
            "The model's max_sequence_length must be at least 2 (a prompt "
            "token and a continuation token). Received: model with "
            f"max_sequence_length={model.max_sequence_length}"
        )
    size = model.vocabulary_size
    if start_id >= size:
        raise ValueError(
            f"Argument `start_id` must be below the model's vocabulary_size="
            f"{size}. Received: start_id={start_id}"
        )
    end_ids = [end_id] if isinstance(end_id, int) else list(end_id)
    if max(end_ids) >= size:
        raise ValueError(
            f"Argument `end_id` must hold ids below the model's "
            f"vocabulary_size={size}. Received: end_id={end_id!r}"
        )
