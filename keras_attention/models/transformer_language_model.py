"""A decoder-only (GPT-style) Transformer language model."""

import types

import keras
from keras import ops

from keras_attention.decoding.generation import generate
from keras_attention.layers.transformer_decoder_block import (
    TransformerDecoderBlock,
)
from keras_attention.models import transformer_base
from keras_attention.models.transformer_base import TransformerModelBase

TOKEN_INPUT = "token_ids"


@keras.saving.register_keras_serializable(package="keras_attention")
class TransformerLanguageModel(TransformerModelBase):
    """Decoder-only Transformer language model with tied output weights.

    ```
    x = dropout(embedding(token_ids))                    # (B, T, F)
    for block in decoder_blocks: x = block(x, padding_mask)  # causal
    logits = x @ transpose(embedding.token_embeddings)   # (B, T, V)
    ```

    A stack of decoder-only `TransformerDecoderBlock`s (causal
    self-attention and a feed-forward net, no cross-attention) between one
    `TokenAndPositionEmbedding` and, through the same embedding with
    `reverse=True`, the logits: the input and output embeddings are tied,
    with token embeddings scaled by `sqrt(F)`. It is the decoder of
    `Transformer` without its encoder.

    Token id `0` is padding. The model takes token ids `(B, T)` and returns
    logits `(B, T, V)` for the next token at every position, so it trains
    with `fit(token_ids[:, :-1], token_ids[:, 1:])`. The padding mask is
    computed from the ids; padded positions give finite, meaningless
    logits, which the loss ignores (for example with `sample_weight`).

    For decoding, `initial_cache`, `decode_step` (one token, with the
    self-attention cache) and `decode` (the whole stack, no cache) expose
    the parts; `keras_attention.decoding.greedy_search` and `beam_search`
    take the prompts as their `encoder_token_ids` and return the
    continuations.

    Args:
        vocabulary_size: int. Size of the vocabulary, `V`.
        num_layers: int. Decoder blocks. Defaults to `6`.
        hidden_dim: int. Model width `F`. Defaults to `512`.
        num_heads: int. Attention heads. Defaults to `8`.
        intermediate_dim: int. Feed-forward width. Defaults to `2048`.
        dropout: float. Residual and embedding dropout. Defaults to `0.1`.
        attention_dropout: float. Dropout on attention weights. Defaults to
            `0.0`.
        activation_dropout: float. Dropout on the feed-forward network's
            inner activation (fairseq's `--activation-dropout`). Defaults
            to `0.0`.
        norm_first: bool. Pre-norm blocks (with a final layer norm after
            the stack, as in GPT-2) instead of post-norm. Defaults to
            `False`.
        position: str. `"sinusoidal"` or `"learned"`. Defaults to
            `"sinusoidal"`.
        max_sequence_length: int. Longest sequence (prompt and
            continuation) the model accepts. Defaults to `256`.
        layer_norm_epsilon: float. Defaults to `1e-6`.
        seed: int. Seed for dropout. Defaults to `None`.
        **kwargs: `keras.Model` arguments (`name`, `dtype`).

    Example:

    >>> model = TransformerLanguageModel(vocabulary_size=50, num_layers=1,
    ...                                  hidden_dim=16, num_heads=2,
    ...                                  intermediate_dim=32)
    >>> logits = model(keras.ops.ones((2, 7), "int32"))
    >>> keras.ops.shape(logits)
    (2, 7, 50)

    Training and a continuation of two prompts:

    ```python
    model = TransformerLanguageModel.from_preset("tiny", vocabulary_size=V)
    model.compile(
        optimizer="adam",
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    model.fit(sequences[:, :-1], sequences[:, 1:], epochs=10)
    prompts = np.array([[5, 6, 7], [8, 9, 0]])  # right-padded with 0
    continuations = keras_attention.decoding.greedy_search(
        model, prompts, start_id=1, end_id=2, max_extra_length=20
    )
    ```

    References:
        - [Liu et al., 2018](https://arxiv.org/abs/1801.10198) (the
          decoder-only Transformer).
        - [Vaswani et al., 2017](https://arxiv.org/abs/1706.03762).
        - [Press and Wolf, 2017](https://arxiv.org/abs/1608.05859).
    """

    def _build_parts(self, arguments, dtype):
        return types.SimpleNamespace(
            token_embedding=transformer_base.token_embedding(arguments, dtype),
            embedding_dropout=transformer_base.embedding_dropout(
                arguments, dtype, "embedding_dropout"
            ),
            decoder_blocks=transformer_base.blocks(
                TransformerDecoderBlock, "decoder_block", arguments, dtype
            ),
            decoder_norm=transformer_base.final_norm(
                arguments, dtype, "decoder_norm"
            ),
        )

    def _build_graph(self, parts):
        # Called without encoder inputs, the blocks build decoder-only.
        token_ids = keras.Input((None,), dtype="int32", name=TOKEN_INPUT)
        return token_ids, _forward(parts, token_ids, None)

    def decode(self, token_ids):
        """Runs the whole stack on `token_ids` `(B, T)`, no cache.

        Returns logits `(B, T, V)` (inference mode).
        """
        token_ids = ops.convert_to_tensor(token_ids, "int32")
        return _forward(self, token_ids, False)

    def initial_cache(self, batch_size, max_length):
        """The empty self-attention cache `decode_step` starts from.

        Args:
            batch_size: int. Number of sequences decoded together.
            max_length: int. Number of positions the cache holds.

        Returns:
            A tuple of one heads-first `(keys, values)` pair of zeros `(B,
            N, max_length, H)` per decoder block, the layout of
            `keras_attention.ops.key_value_cache`.
        """
        return transformer_base.empty_self_attention_cache(
            self, batch_size, max_length, self.compute_dtype
        )

    def decode_step(
        self, token_ids, index, self_attention_cache, output_kernel=None
    ):
        """Decodes the tokens at positions `index, index + 1, ...` with the
        cache: one step of incremental decoding, or, with all the prompt's
        tokens at once, its prefill.

        Gives the logits `decode` gives at those positions
        (`tests/models/transformer_language_model_test.py`).

        Args:
            token_ids: int tensor `(B, T)`.
            index: int or scalar int tensor, the position of the first one.
            self_attention_cache: from `initial_cache` or the previous step
                (keras-hub's stacked `(B, num_layers, 2, L, N, H)` is
                accepted too and returned stacked).
            output_kernel: optional `(F, V)`, the transposed token
                embeddings computed once before the loop
                (`keras_attention.models.transformer_base.output_kernel`);
                the same logits, a faster product on tensorflow.

        Returns:
            `(logits, self_attention_cache)`: logits `(B, T, V)` for the
            next tokens and the updated cache.

        Example:

        >>> from keras import ops
        >>> model = TransformerLanguageModel(vocabulary_size=50, num_layers=1,
        ...                                  hidden_dim=16, num_heads=2,
        ...                                  intermediate_dim=32)
        >>> cache = model.initial_cache(batch_size=2, max_length=8)
        >>> prompt = ops.convert_to_tensor([[3, 4, 5], [6, 7, 8]], "int32")
        >>> logits, cache = model.decode_step(prompt, 0, cache)  # prefill
        >>> token = ops.cast(ops.argmax(logits[:, -1:], axis=-1), "int32")
        >>> logits, cache = model.decode_step(token, 3, cache)
        >>> ops.shape(logits)
        (2, 1, 50)
        """
        return transformer_base.decode_cached(
            self,
            token_ids,
            index,
            self_attention_cache,
            output_kernel=output_kernel,
        )

    def generate(
        self,
        prompts,
        search="greedy",
        start_id=None,
        end_id=None,
        max_length=None,
        jit_compile=False,
    ):
        """Continues prompts: token ids in, token ids out; strings in,
        strings out when `self.tokenizer` is set.

        The compiled search is kept on the model per search spec, and the
        inputs are padded to a multiple of 8 tokens, so a later call with
        the same spec and a width in the same bucket reuses its trace.
        Greedy search gives the tokens of `decoding.greedy_search`.

        Args:
            prompts: int array `(B, P)` of prompts right-padded with `0`,
                or a string or a list of strings (with a tokenizer).
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
            max_length: int. Cap on prompt and continuation tokens
                together, as keras-hub's `max_length`. Defaults to the
                spec's, else `max_sequence_length`. A continuation also
                ends after the spec's `max_extra_length` tokens (`50`).
            jit_compile: bool. XLA on tensorflow; see
                `decoding.greedy_search`. Defaults to `False`.

        Returns:
            The continuations without the prompts (keras-hub's
            `strip_prompt=True`): a NumPy int32 array `(B, W)`, each row
            ending with an end id, then `0`s (`(B, K, W)` for
            `Beam(n_best=True)`); or the decoded strings, cut at the end
            id, one string for one string.

        Example:

        >>> from keras_attention.decoding import Sampling
        >>> lm = TransformerLanguageModel(vocabulary_size=20, num_layers=1,
        ...                               hidden_dim=8, num_heads=2,
        ...                               intermediate_dim=16,
        ...                               max_sequence_length=16)
        >>> prompts = np.array([[5, 6, 7], [8, 0, 0]])
        >>> lm.generate(prompts, start_id=1, end_id=2, max_length=12).shape
        (2, 12)
        >>> top_k = Sampling(top_k=3, seed=4, max_extra_length=5)
        >>> lm.generate(prompts, top_k, start_id=1, end_id=2).shape
        (2, 5)

        With a tokenizer, strings:

        ```python
        lm.tokenizer = keras_hub.tokenizers.SentencePieceTokenizer(proto)
        lm.generate(["A man", "Two dogs"], "top_p")  # two strings
        ```
        """
        return generate(
            self,
            prompts,
            search=search,
            start_id=start_id,
            end_id=end_id,
            max_length=max_length,
            jit_compile=jit_compile,
        )


# The forward pass, shared by the functional graph (built from the layers
# before the model exists) and by `decode`.
def _forward(parts, token_ids, training):
    # (B, T) -> (B, T, F) -> (B, T, V)
    mask = ops.not_equal(token_ids, 0)
    x = parts.token_embedding(token_ids)
    x = parts.embedding_dropout(x, training=training)
    for block in parts.decoder_blocks:
        x = block(x, padding_mask=mask, training=training)
    if parts.decoder_norm is not None:
        x = parts.decoder_norm(x)
    return parts.token_embedding(x, reverse=True)
