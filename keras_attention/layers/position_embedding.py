import keras
from keras import ops

from keras_attention.utils.validation import check_positive_int
from keras_attention.utils.validation import check_rank
from keras_attention.utils.validation import static_shape


@keras.saving.register_keras_serializable(package="keras_attention")
class PositionEmbedding(keras.layers.Layer):
    """Learned position embeddings, one trainable vector per position.

    For inputs of shape `(B, T, F)` returns rows
    `start_index ... start_index + T - 1` of a `(sequence_length, F)` table,
    broadcast to the input shape. The paper found learned and sinusoidal
    positions to perform nearly identically (Table 3, row E).

    Masking: the embeddings do not depend on the mask; the input's Keras
    mask is passed on unchanged.

    Args:
        sequence_length: int. The largest number of positions, `T_max`.
        initializer: initializer for the table. Defaults to
            `"glorot_uniform"`.
        **kwargs: base layer arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: tensor of shape `(B, T, F)`; only its shape is used.
        start_index: int or scalar int tensor. Position of the first input
            token, for decoding with a cache. Defaults to `0`.

    Returns:
        A tensor of the input's shape.

    Raises:
        ValueError: when `start_index + T` exceeds `sequence_length` and both
            are known when the layer is called (a Python int `start_index`
            and a static `T`). A tensor `start_index` past the end is not
            checked inside compiled code.

    Example:

    >>> x = keras.ops.zeros((2, 6, 16))
    >>> positions = PositionEmbedding(sequence_length=32)(x)
    >>> keras.ops.shape(positions)
    (2, 6, 16)

    In a model:

    ```python
    tokens = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(1000, 64)(tokens)
    x = x + PositionEmbedding(sequence_length=128)(x)
    ```

    References:
        - [Vaswani et al., 2017](https://arxiv.org/abs/1706.03762),
          section 3.5.
        - [Gehring et al., 2017](https://arxiv.org/abs/1705.03122).
    """

    def __init__(self, sequence_length, initializer="glorot_uniform", **kwargs):
        check_positive_int("sequence_length", sequence_length)
        super().__init__(**kwargs)
        self.sequence_length = sequence_length
        self.initializer = keras.initializers.get(initializer)
        self.supports_masking = True

    def build(self, inputs_shape):
        check_rank("inputs", inputs_shape, 3)
        self.embeddings = self.add_weight(
            name="embeddings",
            shape=(self.sequence_length, inputs_shape[-1]),
            initializer=self.initializer,
        )
        self.built = True

    def call(self, inputs, start_index=0):
        shape = static_shape(inputs)
        check_rank("inputs", shape, 3)
        length = shape[1]
        if isinstance(start_index, int) and length is not None:
            if start_index < 0 or start_index + length > self.sequence_length:
                raise ValueError(
                    "Positions past the end of the learned table: the layer "
                    f"holds sequence_length={self.sequence_length} positions. "
                    f"Received: inputs with length {length} and "
                    f"start_index={start_index}"
                )
        dynamic_shape = ops.shape(inputs)
        # (T, F) rows from the table, broadcast to (B, T, F).
        rows = ops.slice(
            ops.cast(self.embeddings, self.compute_dtype),
            (start_index, 0),
            (dynamic_shape[1], shape[-1]),
        )
        return ops.broadcast_to(rows, dynamic_shape)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "sequence_length": self.sequence_length,
                "initializer": keras.initializers.serialize(self.initializer),
            }
        )
        return config
