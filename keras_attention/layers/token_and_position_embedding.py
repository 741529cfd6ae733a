import keras
from keras import ops

from keras_attention.layers.position_embedding import PositionEmbedding
from keras_attention.layers.sinusoidal_position_encoding import (
    SinusoidalPositionEncoding,
)
from keras_attention.utils.validation import check_choice
from keras_attention.utils.validation import check_positive_int
from keras_attention.utils.validation import check_rank
from keras_attention.utils.validation import static_shape


@keras.saving.register_keras_serializable(package="keras_attention")
class TokenAndPositionEmbedding(keras.layers.Layer):
    """Token embeddings scaled by `sqrt(F)` plus position encodings.

    ```
    output = embeddings[token_ids] * sqrt(F) + positions(start_index, T)
    logits = hidden @ transpose(embeddings)        # reverse=True
    ```

    The reverse call reuses the embedding matrix as the pre-softmax
    projection (the paper's weight tying, section 3.4), so one instance can
    embed the source, the target and produce the output logits.
    `positions(start_index, T)` are the encodings of positions
    `start_index ... start_index + T - 1`, or of the given `positions`.

    Masking: with `mask_zero=True`, token id 0 is padding and the forward
    call returns a Keras mask `token_ids != 0` of shape `(B, T)`; padded
    positions still get an embedding (masking happens downstream). The
    reverse call returns no mask.

    Relation to keras-hub: `keras_hub.layers.TokenAndPositionEmbedding`
    takes `(vocabulary_size, sequence_length, embedding_dim)` in that order;
    here everything after `vocabulary_size` is keyword-only, so a call
    written for keras-hub with positional arguments raises a `TypeError`
    instead of building other shapes. Every other argument name of its
    constructor and call (`tie_weights`, `start_index`, `positions`, ...)
    means the same as there, and `token_embedding` is a
    `keras.layers.ReversibleEmbedding`, so keras-hub's
    `embedding.token_embedding(hidden, reverse=True)` works too. keras-hub's
    layer always learns its positions and does not scale the token
    embeddings; this one defaults to the paper's sinusoidal positions and
    `sqrt(F)` scaling (pass `position="learned"` and
    `scale_embeddings=False` for keras-hub's arithmetic, or use
    `keras_attention.compat.keras_hub.layers.TokenAndPositionEmbedding`,
    keras-hub's constructor verbatim).

    Args:
        vocabulary_size: int. Number of token ids, `V`. The only positional
            argument; the others are keyword-only.
        embedding_dim: int. Embedding width, `F`.
        sequence_length: int. Largest number of positions. Required for
            `position="learned"`; ignored by sinusoidal positions, which work
            for any length. Defaults to `None`.
        position: str. `"sinusoidal"` (default) or `"learned"`.
        scale_embeddings: bool. Multiply token embeddings by `sqrt(F)`.
            Defaults to `True`, as in the paper.
        mask_zero: bool. Treat token id 0 as padding. Defaults to `False`.
        embeddings_initializer: initializer for the token embeddings.
            Defaults to a normal distribution with standard deviation
            `F ** -0.5`, which keeps scaled embeddings and tied logits at unit
            scale.
        max_wavelength: float. For sinusoidal positions. Defaults to
            `10000.0`.
        tie_weights: bool. The reverse call uses the transposed token
            table; `False` gives it a table of its own, `(F, V)`. Defaults
            to `True`.
        **kwargs: base layer arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: int tensor of token ids `(B, T)`; or, with `reverse=True`,
            float hidden states `(B, T, F)`.
        start_index: int or scalar int tensor. Position of the first token,
            for decoding with a cache. Defaults to `0`.
        positions: int tensor of position ids, `(T,)` for the whole batch or
            `(B, T)` per example, for packed or left-padded sequences.
            Replaces `start_index`, which must then stay `0`. Defaults to
            `None`.
        reverse: bool. Project hidden states to vocabulary logits with the
            transposed embedding matrix (or the untied reverse table).
            Defaults to `False`.

    Returns:
        Embeddings `(B, T, F)`, or logits `(B, T, V)` with `reverse=True`.

    Example:

    >>> layer = TokenAndPositionEmbedding(vocabulary_size=100, embedding_dim=8)
    >>> x = layer(keras.ops.ones((2, 5), dtype="int32"))
    >>> keras.ops.shape(x)
    (2, 5, 8)
    >>> keras.ops.shape(layer(x, reverse=True))
    (2, 5, 100)
    >>> positions = np.array([[0, 1, 2, 0, 1], [3, 4, 5, 6, 7]])
    >>> ids = keras.ops.ones((2, 5), dtype="int32")
    >>> keras.ops.shape(layer(ids, positions=positions))
    (2, 5, 8)

    In a model with tied output weights:

    ```python
    embedding = TokenAndPositionEmbedding(
        8000, embedding_dim=256, mask_zero=True
    )
    tokens = keras.Input((None,), dtype="int32")
    hidden = embedding(tokens)
    # ... decoder blocks ...
    logits = embedding(hidden, reverse=True)
    ```

    References:
        - [Vaswani et al., 2017](https://arxiv.org/abs/1706.03762),
          sections 3.4 and 3.5.
        - [Press and Wolf, 2017](https://arxiv.org/abs/1608.05859).
    """

    def __init__(
        self,
        vocabulary_size,
        *,
        embedding_dim,
        sequence_length=None,
        position="sinusoidal",
        scale_embeddings=True,
        mask_zero=False,
        embeddings_initializer=None,
        max_wavelength=10000.0,
        tie_weights=True,
        **kwargs,
    ):
        check_positive_int("vocabulary_size", vocabulary_size)
        check_positive_int("embedding_dim", embedding_dim)
        check_choice("position", position, ("sinusoidal", "learned"))
        check_positive_int(
            "sequence_length",
            sequence_length,
            allow_none=position == "sinusoidal",
        )
        super().__init__(**kwargs)
        self.vocabulary_size = vocabulary_size
        self.embedding_dim = embedding_dim
        self.sequence_length = sequence_length
        self.position = position
        self.scale_embeddings = scale_embeddings
        self.mask_zero = mask_zero
        if embeddings_initializer is None:
            embeddings_initializer = keras.initializers.RandomNormal(
                stddev=embedding_dim**-0.5
            )
        self.embeddings_initializer = keras.initializers.get(
            embeddings_initializer
        )
        self.max_wavelength = max_wavelength
        self.tie_weights = tie_weights
        self.supports_masking = mask_zero

    def build(self, inputs_shape):
        self.token_embedding = keras.layers.ReversibleEmbedding(
            self.vocabulary_size,
            self.embedding_dim,
            tie_weights=self.tie_weights,
            embeddings_initializer=self.embeddings_initializer,
            dtype=self.dtype_policy,
            name="token_embedding",
        )
        self.token_embedding.build(inputs_shape)
        embedded_shape = tuple(inputs_shape) + (self.embedding_dim,)
        if self.position == "learned":
            self.position_embedding = PositionEmbedding(
                sequence_length=self.sequence_length,
                dtype=self.dtype_policy,
                name="position_embedding",
            )
        else:
            self.position_embedding = SinusoidalPositionEncoding(
                max_wavelength=self.max_wavelength,
                dtype=self.dtype_policy,
                name="position_embedding",
            )
        self.position_embedding.build(embedded_shape)
        self.built = True

    def call(self, inputs, start_index=0, positions=None, reverse=False):
        if reverse:
            if positions is not None:
                raise ValueError(
                    "Argument `positions` is for the forward call; the "
                    "reverse call (reverse=True) has no positions. Received: "
                    "positions with reverse=True"
                )
            # (B, T, F) @ (F, V) -> (B, T, V)
            shape = static_shape(inputs)
            check_rank("inputs", shape, 3)
            if shape[-1] not in (None, self.embedding_dim):
                raise ValueError(
                    "With reverse=True the last dimension of `inputs` must "
                    f"be embedding_dim={self.embedding_dim}. Received: "
                    f"inputs with shape {shape}"
                )
            return self.token_embedding(inputs, reverse=True)
        check_rank("inputs", static_shape(inputs), 2)
        # (B, T) -> (B, T, F)
        embedded = self.token_embedding(inputs)
        if self.scale_embeddings:
            embedded = embedded * ops.cast(
                self.embedding_dim**0.5, embedded.dtype
            )
        return embedded + self.position_embedding(
            embedded, start_index=start_index, positions=positions
        )

    def compute_mask(self, inputs, mask=None):
        if not self.mask_zero or "int" not in str(inputs.dtype):
            return None
        return ops.not_equal(inputs, 0)

    def compute_output_spec(
        self, inputs, start_index=0, positions=None, reverse=False
    ):
        if reverse:
            shape = tuple(inputs.shape[:-1]) + (self.vocabulary_size,)
        else:
            shape = tuple(inputs.shape) + (self.embedding_dim,)
        return keras.KerasTensor(shape, dtype=self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary_size": self.vocabulary_size,
                "embedding_dim": self.embedding_dim,
                "sequence_length": self.sequence_length,
                "position": self.position,
                "scale_embeddings": self.scale_embeddings,
                "mask_zero": self.mask_zero,
                "embeddings_initializer": keras.initializers.serialize(
                    self.embeddings_initializer
                ),
                "max_wavelength": self.max_wavelength,
                "tie_weights": self.tie_weights,
            }
        )
        return config
