import keras
from keras import ops

from keras_attention.layers._positions import broadcast_to_inputs
from keras_attention.layers._positions import check_inputs
from keras_attention.layers._positions import check_positions
from keras_attention.layers._positions import check_start_index
from keras_attention.utils.validation import check_positive_int
from keras_attention.utils.validation import static_shape


@keras.saving.register_keras_serializable(package="keras_attention")
class PositionEmbedding(keras.layers.Layer):
    """Learned position embeddings, one trainable vector per position.

    For inputs of shape `(B, ..., T, F)` returns rows of a
    `(sequence_length, F)` table, broadcast to the input shape:

    ```
    ids = start_index + arange(T)           # or positions, (T,) or (B, T)
    output[b, ..., t, :] = embeddings[ids[t]]       # or ids[b, t]
    ```

    The position axis is the second-to-last. The paper found learned and
    sinusoidal positions to perform nearly identically (Table 3, row E).

    Masking: the embeddings do not depend on the mask; the input's Keras
    mask is passed on unchanged.

    Relation to keras-hub: the arguments, their order and the weight
    (`embeddings`, shape `(sequence_length, F)`) are those of
    `keras_hub.layers.PositionEmbedding`, so `set_weights` carries a table
    across and the outputs are equal; the table is also readable under
    keras-hub's attribute name, `position_embeddings`. Two differences:
    `positions` of shape `(B, T)` line up with the batch axis for inputs of
    rank 4 or more (keras-hub broadcasts them against the second axis), and
    `positions` with a `start_index` other than `0` is an error here
    (keras-hub ignores `start_index`).

    Args:
        sequence_length: int. The largest number of positions, `T_max`.
        initializer: initializer for the table. Defaults to
            `"glorot_uniform"`.
        **kwargs: base layer arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: tensor of shape `(B, ..., T, F)`, rank 3 or more; only its
            shape is used.
        start_index: int or scalar int tensor. Position of the first input
            token, for decoding with a cache. Defaults to `0`.
        positions: int tensor of position ids in `[0, sequence_length)`,
            shape `(T,)` for the whole batch or `(B, T)` per example, for
            packed or left-padded sequences. Replaces `start_index`, which
            must then stay `0`. Defaults to `None`.

    Returns:
        A tensor of the input's shape.

    Raises:
        ValueError: when positions fall outside the table and this can be
            seen when the layer is called: `start_index` (with a static `T`)
            or `positions` given as Python or NumPy values, or as tensors in
            an eager call. Inside compiled code (`tf.function`, `jax.jit`)
            tensor values are not checked, and what an id past the end gives
            depends on the backend.

    Example:

    >>> x = keras.ops.zeros((2, 6, 16))
    >>> layer = PositionEmbedding(sequence_length=32)
    >>> keras.ops.shape(layer(x))
    (2, 6, 16)
    >>> positions = np.array([[0, 1, 2, 0, 1, 2], [4, 5, 6, 7, 8, 9]])
    >>> keras.ops.shape(layer(x, positions=positions))
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
        check_inputs(inputs_shape)
        self.embeddings = self.add_weight(
            name="embeddings",
            shape=(self.sequence_length, inputs_shape[-1]),
            initializer=self.initializer,
        )
        self.built = True

    @property
    def position_embeddings(self):
        """keras-hub's name for the table, `embeddings`."""
        return self.embeddings

    def call(self, inputs, start_index=0, positions=None):
        shape = static_shape(inputs)
        check_inputs(shape)
        positions = check_positions(
            positions, start_index, shape, self.sequence_length
        )
        table = ops.cast(self.embeddings, self.compute_dtype)
        dynamic_shape = ops.shape(inputs)
        if positions is not None:
            # (T,) -> (T, F), or (B, T) -> (B, T, F); then (B, ..., T, F).
            rows = ops.take(table, positions, axis=0)
            return broadcast_to_inputs(
                rows, len(positions.shape), dynamic_shape
            )
        check_start_index(start_index, shape[-2], self.sequence_length)
        # (T, F) rows from the table, broadcast to (B, ..., T, F).
        rows = ops.slice(
            table, (start_index, 0), (dynamic_shape[-2], shape[-1])
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
