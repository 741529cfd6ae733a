"""The feed-forward networks F, G and H of the decomposable attention model.

Each is a stack of `Dense` layers with an activation, followed by dropout
(Parikh et al., 2016, section 4: two ReLU layers of 200 units, dropout
0.2). The helpers below build the `Dense` sublayers for a layer that owns
them and apply the stack with the owner's seed generator.
"""

import keras


def clone_initializer(initializer):
    """A fresh copy of `initializer`, so same-shaped kernels differ."""
    return initializer.__class__.from_config(initializer.get_config())


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
    """Builds `num_layers` `Dense` sublayers named `{name}_dense_{i}`.

    Args:
        owner: the layer that owns the sublayers (gives the dtype policy).
        name: prefix of the sublayer names.
        input_dim: int. Width of the stack's input.
        hidden_dim: int. Width of every `Dense` layer.
        num_layers: int. Number of `Dense` layers.
        activation: activation of every `Dense` layer.
        kernel_initializer: a Keras initializer, cloned for each layer.
        bias_initializer: a Keras initializer, cloned for each layer.

    Returns:
        A list of built `keras.layers.Dense`.
    """
    stack = []
    width = input_dim
    for index in range(num_layers):
        dense = keras.layers.Dense(
            hidden_dim,
            activation=activation,
            kernel_initializer=clone_initializer(kernel_initializer),
            bias_initializer=clone_initializer(bias_initializer),
            dtype=owner.dtype_policy,
            name=f"{name}_dense_{index}",
        )
        dense.build((None, None, width))
        stack.append(dense)
        width = hidden_dim
    return stack


def apply_feed_forward(stack, x, dropout, seed_generator, training):
    """`x -> dropout(activation(dense(x)))` for each `Dense` in `stack`."""
    for dense in stack:
        x = dense(x)
        if training and dropout > 0.0:
            x = keras.random.dropout(x, dropout, seed=seed_generator)
    return x
