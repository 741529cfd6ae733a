"""The feed-forward networks F, G and H of the decomposable attention model.

Each is a stack of `Dense` layers with an activation, each followed by
dropout (Parikh et al., 2016, section 4: two ReLU layers of 200 units,
dropout 0.2). `dense_stack` makes the `Dense` layers, named
`{name}_dense_{i}`, for both users: the layers that own a network (F in
`SoftAlignment`, the intra-sentence network in `IntraSentenceAttention`)
build them with `build_feed_forward` and apply them with
`apply_feed_forward` and their seed generator; the model builder
(`decomposable_attention_model`) calls them in its functional graph with
`keras.layers.Dropout` between them.
"""

import keras

from keras_attention.utils.initializers import clone_initializer


def dense_stack(
    name,
    hidden_dim,
    num_layers,
    activation="relu",
    kernel_initializer="glorot_uniform",
    bias_initializer="zeros",
    dtype=None,
):
    """`num_layers` unbuilt `Dense` layers of `hidden_dim` units.

    Args:
        name: prefix of the layer names, `{name}_dense_{i}`.
        hidden_dim: int. Width of every `Dense` layer.
        num_layers: int. Number of `Dense` layers.
        activation: activation of every `Dense` layer.
        kernel_initializer: a Keras initializer, cloned for each layer.
        bias_initializer: a Keras initializer, cloned for each layer.
        dtype: the dtype policy of the layers.

    Returns:
        A list of `keras.layers.Dense`.
    """
    return [
        keras.layers.Dense(
            hidden_dim,
            activation=activation,
            kernel_initializer=clone_initializer(kernel_initializer),
            bias_initializer=clone_initializer(bias_initializer),
            dtype=dtype,
            name=f"{name}_dense_{index}",
        )
        for index in range(num_layers)
    ]


def build_feed_forward(
    owner,
    name,
    input_dim,
    hidden_dim,
    num_layers,
    activation,
    kernel_initializer,
    bias_initializer,
):
    """Builds the `dense_stack` of a layer that owns it.

    Args:
        owner: the layer that owns the sublayers (gives the dtype policy).
        input_dim: int. Width of the stack's input.
        Others: as in `dense_stack`.

    Returns:
        A list of built `keras.layers.Dense`.
    """
    stack = dense_stack(
        name,
        hidden_dim,
        num_layers,
        activation,
        kernel_initializer,
        bias_initializer,
        dtype=owner.dtype_policy,
    )
    width = input_dim
    for dense in stack:
        dense.build((None, None, width))
        width = hidden_dim
    return stack


def apply_feed_forward(stack, x, dropout, seed_generator, training):
    """`x -> dropout(activation(dense(x)))` for each `Dense` in `stack`."""
    for dense in stack:
        x = dense(x)
        if training and dropout > 0.0:
            x = keras.random.dropout(x, dropout, seed=seed_generator)
    return x
