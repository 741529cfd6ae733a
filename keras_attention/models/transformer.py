"""The encoder-decoder Transformer of "Attention Is All You Need"."""

import types

import keras
from keras import ops

from keras_attention.decoding.generation import generate
from keras_attention.layers.transformer_decoder_block import (
    TransformerDecoderBlock,
)
from keras_attention.layers.transformer_encoder_block import (
    TransformerEncoderBlock,
)
from keras_attention.models import transformer_base
from keras_attention.models.transformer_base import TransformerModelBase

ENCODER_INPUT = "encoder_token_ids"
DECODER_INPUT = "decoder_token_ids"


@keras.saving.register_keras_serializable(package="keras_attention")
class Transformer(TransformerModelBase):
    """Encoder-decoder Transformer with a shared vocabulary and tied weights.

    ```
    source = dropout(embedding(encoder_token_ids))        # (B, S, F)
    for block in encoder_blocks: source = block(source, source_mask)
    target = dropout(embedding(decoder_token_ids))        # (B, T, F)
    for block in decoder_blocks:
        target = block(target, source, target_mask, source_mask)
    logits = target @ transpose(embedding.token_embeddings)  # (B, T, V)
    ```

    One `TokenAndPositionEmbedding` embeds the source and the target and,
    transposed, projects the decoder output to logits: the three-way weight
    tying of section 3.4, with token embeddings scaled by `sqrt(F)`. Source
    and target therefore share one subword vocabulary.

    Token id `0` is padding. The model takes a dict with
    `"encoder_token_ids"` `(B, S)` and `"decoder_token_ids"` `(B, T)` (the
    target shifted right, starting with a start token) and returns logits
    `(B, T, V)` for the next target token at every position. Padding masks
    are computed from the ids; padded positions give finite, meaningless
    logits, which the loss ignores.

    For decoding, `encode`, `initial_cache`, `decode_step` (one token, with
    caches) and `decode` (the whole decoder, no cache) expose the parts;
    `keras_attention.decoding` builds greedy and beam search on them.

    Args:
        vocabulary_size: int. Size of the shared subword vocabulary, `V`.
        num_layers: int. Encoder and decoder blocks each. Defaults to `6`.
        hidden_dim: int. Model width `F` (the paper's `d_model`). Defaults
            to `512`.
        num_heads: int. Attention heads. Defaults to `8`.
        intermediate_dim: int. Feed-forward width (`d_ff`). Defaults to
            `2048`.
        dropout: float. Residual and embedding dropout. Defaults to `0.1`.
        attention_dropout: float. Dropout on attention weights. Defaults to
            `0.0`.
        activation_dropout: float. Dropout on the feed-forward network's
            inner activation (fairseq's `--activation-dropout`). Defaults
            to `0.0`.
        norm_first: bool. Pre-norm blocks (with a final layer norm after
            each stack) instead of the paper's post-norm. Defaults to
            `False`.
        position: str. `"sinusoidal"` (the paper's default) or
            `"learned"`. Defaults to `"sinusoidal"`.
        max_sequence_length: int. Longest source and target the model
            accepts (learned positions have this many rows). Decoding
            truncates longer sources to it. Defaults to `256`.
        layer_norm_epsilon: float. Defaults to `1e-6`.
        seed: int. Seed for dropout. Defaults to `None`.
        **kwargs: `keras.Model` arguments (`name`, `dtype`).

    Example:

    >>> model = Transformer(vocabulary_size=50, num_layers=1, hidden_dim=16,
    ...                     num_heads=2, intermediate_dim=32)
    >>> logits = model({"encoder_token_ids": keras.ops.ones((2, 7), "int32"),
    ...                 "decoder_token_ids": keras.ops.ones((2, 5), "int32")})
    >>> keras.ops.shape(logits)
    (2, 5, 50)

    From a preset:

    ```python
    model = Transformer.from_preset("small", vocabulary_size=8000)
    model.compile(
        optimizer=keras.optimizers.Adam(
            NoamSchedule(256), beta_1=0.9, beta_2=0.98, epsilon=1e-9
        ),
        loss=LabelSmoothedSparseCategoricalCrossentropy(),
    )
    ```

    References:
        - [Vaswani et al., 2017](https://arxiv.org/abs/1706.03762).
        - [Press and Wolf, 2017](https://arxiv.org/abs/1608.05859).
    """

    def _build_parts(self, arguments, dtype):
        return types.SimpleNamespace(
            token_embedding=transformer_base.token_embedding(arguments, dtype),
            encoder_embedding_dropout=transformer_base.embedding_dropout(
                arguments, dtype, "encoder_embedding_dropout"
            ),
            decoder_embedding_dropout=transformer_base.embedding_dropout(
                arguments, dtype, "decoder_embedding_dropout"
            ),
            encoder_blocks=transformer_base.blocks(
                TransformerEncoderBlock, "encoder_block", arguments, dtype
            ),
            decoder_blocks=transformer_base.blocks(
                TransformerDecoderBlock, "decoder_block", arguments, dtype
            ),
            encoder_norm=transformer_base.final_norm(
                arguments, dtype, "encoder_norm"
            ),
            decoder_norm=transformer_base.final_norm(
                arguments, dtype, "decoder_norm"
            ),
        )

    def _build_graph(self, parts):
        encoder_ids = keras.Input((None,), dtype="int32", name=ENCODER_INPUT)
        decoder_ids = keras.Input((None,), dtype="int32", name=DECODER_INPUT)
        encoder_outputs, encoder_mask = _encode(parts, encoder_ids, None)
        logits = _decode(parts, decoder_ids, encoder_outputs, encoder_mask)
        inputs = {ENCODER_INPUT: encoder_ids, DECODER_INPUT: decoder_ids}
        return inputs, logits

    def encode(self, encoder_token_ids):
        """Runs the encoder (inference mode).

        Args:
            encoder_token_ids: int tensor `(B, S)`, `0` = padding.

        Returns:
            `(encoder_outputs, encoder_padding_mask)`: `(B, S, F)` and the
            boolean `(B, S)`.
        """
        encoder_token_ids = ops.convert_to_tensor(encoder_token_ids, "int32")
        return _encode(self, encoder_token_ids, False)

    def decode(self, decoder_token_ids, encoder_outputs, encoder_padding_mask):
        """Runs the whole decoder on `decoder_token_ids` `(B, T)`, no cache.

        Returns logits `(B, T, V)`.
        """
        decoder_token_ids = ops.convert_to_tensor(decoder_token_ids, "int32")
        return _decode(
            self,
            decoder_token_ids,
            encoder_outputs,
            encoder_padding_mask,
            training=False,
        )

    def initial_cache(self, encoder_outputs, max_length):
        """The caches `decode_step` starts from.

        Each is a tuple of one heads-first `(keys, values)` pair per
        decoder block, the layout of `keras_attention.ops.key_value_cache`.

        Args:
            encoder_outputs: `(B, S, F)` from `encode`.
            max_length: int. Number of target positions the self-attention
                cache holds.

        Returns:
            `(self_attention_cache, cross_attention_cache)`: pairs of zeros
            `(B, N, max_length, H)`, and of the projected encoder outputs
            `(B, N, S, H)`.
        """
        cross = tuple(
            block.cross_attention.compute_key_value_cache(encoder_outputs)
            for block in self.decoder_blocks
        )
        empty = transformer_base.empty_self_attention_cache(
            self, ops.shape(encoder_outputs)[0], max_length, cross[0][0].dtype
        )
        return empty, cross

    def decode_step(
        self,
        token_ids,
        index,
        self_attention_cache,
        cross_attention_cache,
        encoder_padding_mask,
        output_kernel=None,
    ):
        """Decodes the tokens at positions `index, index + 1, ...` with the
        caches: one step of incremental decoding.

        Gives the logits `decode` gives at those positions
        (`tests/models/transformer_test.py`).

        Args:
            token_ids: int tensor `(B, T)`, usually `T = 1`.
            index: int or scalar int tensor, the position of the first one.
            self_attention_cache: from `initial_cache` or the previous step
                (keras-hub's stacked `(B, num_layers, 2, L, N, H)` is
                accepted too and returned stacked).
            cross_attention_cache: from `initial_cache`.
            encoder_padding_mask: boolean `(B, S)` from `encode`.
            output_kernel: optional `(F, V)`, the transposed token
                embeddings computed once before the loop
                (`keras_attention.models.transformer_base.output_kernel`);
                the same logits, a faster product on tensorflow.

        Returns:
            `(logits, self_attention_cache)`: logits `(B, T, V)` for the
            next tokens and the updated cache.

        Example:

        ```python
        encoder_outputs, mask = model.encode(source_ids)
        self_cache, cross_cache = model.initial_cache(encoder_outputs, 50)
        token = keras.ops.full((batch_size, 1), start_id)
        for t in range(50):
            logits, self_cache = model.decode_step(
                token, t, self_cache, cross_cache, mask
            )
            token = keras.ops.argmax(logits, axis=-1)
        ```
        """
        return transformer_base.decode_cached(
            self,
            token_ids,
            index,
            self_attention_cache,
            cross_attention_cache,
            encoder_padding_mask,
            output_kernel,
        )

    def generate(
        self,
        sources,
        search="greedy",
        start_id=None,
        end_id=None,
        max_length=None,
        jit_compile=False,
    ):
        """Decodes sources: token ids in, token ids out; strings in,
        strings out when `self.tokenizer` is set.

        The compiled search is kept on the model per search spec, and the
        inputs are padded to a multiple of 8 tokens, so a later call with
        the same spec and a width in the same bucket reuses its trace.
        Greedy search gives the tokens of `decoding.greedy_search`.

        Args:
            sources: int array `(B, S)` of sources right-padded with `0`
                (each ending with the end id, as the translation recipe
                encodes them), or a string or a list of strings (with a
                tokenizer; the end id is appended, and a source is cut to
                `max_sequence_length` tokens keeping it).
            search: a `keras_attention.decoding.Greedy`, `Sampling` or
                `Beam`, or keras-hub's sampler names with keras-hub's
                defaults: `"greedy"`, `"top_k"` (`Sampling(top_k=5)`),
                `"top_p"` (`Sampling(top_p=0.1)`) or `"beam"`
                (`Beam(beam_size=5, alpha=0.0)`). Defaults to `"greedy"`.
            start_id: int. The first token the decoder reads. Defaults to
                the spec's, else the tokenizer's start token
                (`start_token_id`, or SentencePiece's `<s>`).
            end_id: int or a list of ints. Defaults to the spec's, else
                the tokenizer's end token (`end_token_id` or `</s>`).
            max_length: int. Cap on output tokens. Defaults to the
                spec's, else `max_sequence_length`. An output also ends
                after `source_length + max_extra_length` tokens (the
                spec's, `50`).
            jit_compile: bool. XLA on tensorflow; see
                `decoding.greedy_search`. Defaults to `False`.

        Returns:
            A NumPy int32 array `(B, L)`, each row ending with an end id,
            then `0`s (`(B, K, L)` for `Beam(n_best=True)`); or the
            decoded strings, cut at the end id, one string for one string.

        Example:

        >>> from keras_attention.decoding import Beam
        >>> model = Transformer(vocabulary_size=20, num_layers=1,
        ...                     hidden_dim=8, num_heads=2,
        ...                     intermediate_dim=16, max_sequence_length=16)
        >>> sources = np.array([[5, 6, 7, 2], [8, 2, 0, 0]])
        >>> model.generate(sources, start_id=1, end_id=2).shape
        (2, 16)
        >>> beam = Beam(beam_size=3, max_extra_length=2)
        >>> model.generate(sources, beam, start_id=1, end_id=2).shape
        (2, 6)

        With the translation recipe's SentencePiece tokenizer (start and
        end ids from its `<s>` and `</s>`):

        ```python
        model.tokenizer = keras_attention.data.translation.load_tokenizer(
            "runs/translation/tokenizer.model"
        )
        model.generate("Ein Mann fährt Fahrrad.", "beam")  # one string
        ```
        """
        return generate(
            self,
            sources,
            search=search,
            start_id=start_id,
            end_id=end_id,
            max_length=max_length,
            jit_compile=jit_compile,
        )


# The forward pass, shared by the functional graph (built from the layers
# before the model exists) and by the decoding methods.
def _encode(parts, encoder_token_ids, training):
    # (B, S) -> (B, S, F)
    mask = ops.not_equal(encoder_token_ids, 0)
    x = parts.token_embedding(encoder_token_ids)
    x = parts.encoder_embedding_dropout(x, training=training)
    for block in parts.encoder_blocks:
        x = block(x, padding_mask=mask, training=training)
    if parts.encoder_norm is not None:
        x = parts.encoder_norm(x)
    return x, mask


def _decode(
    parts, decoder_token_ids, encoder_outputs, encoder_mask, training=None
):
    # (B, T) -> (B, T, F) -> (B, T, V)
    mask = ops.not_equal(decoder_token_ids, 0)
    x = parts.token_embedding(decoder_token_ids)
    x = parts.decoder_embedding_dropout(x, training=training)
    for block in parts.decoder_blocks:
        x = block(
            x,
            encoder_outputs,
            padding_mask=mask,
            encoder_padding_mask=encoder_mask,
            training=training,
        )
    if parts.decoder_norm is not None:
        x = parts.decoder_norm(x)
    return parts.token_embedding(x, reverse=True)
