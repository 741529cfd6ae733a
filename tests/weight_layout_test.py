"""Stored weight layouts: a change here breaks checkpoints people saved.

Each entry lists the weight paths (below the layer's own name) and shapes,
in order, of a small configuration. Update an entry only on purpose, and say
in the change how old checkpoints are affected.
"""

import numpy as np
import pytest

from keras_attention import layers

X = np.zeros((2, 5, 8), "float32")
IDS = np.zeros((2, 5), "int32")


def attention_layout(name):
    return [
        (f"{name}/query/kernel", (8, 2, 4)),
        (f"{name}/query/bias", (2, 4)),
        (f"{name}/key/kernel", (8, 2, 4)),
        (f"{name}/key/bias", (2, 4)),
        (f"{name}/value/kernel", (8, 2, 4)),
        (f"{name}/value/bias", (2, 4)),
        (f"{name}/attention_output/kernel", (2, 4, 8)),
        (f"{name}/attention_output/bias", (8,)),
    ]


def norm_layout(name):
    return [(f"{name}/gamma", (8,)), (f"{name}/beta", (8,))]


FEEDFORWARD_LAYOUT = [
    ("feedforward_intermediate_dense/kernel", (8, 6)),
    ("feedforward_intermediate_dense/bias", (6,)),
    ("feedforward_output_dense/kernel", (6, 8)),
    ("feedforward_output_dense/bias", (8,)),
]

LAYOUTS = {
    "multi_head_attention": (
        lambda: layers.MultiHeadAttention(num_heads=2, key_dim=3, name="l"),
        {"query": X, "value": X},
        # Keras's sublayer names since release 0.2 (0.1: query_dense, ...).
        # Weight files are keyed by attribute, not by these names, and keep
        # their paths (tests/reliability/release_files_test.py).
        [
            ("query/kernel", (8, 2, 3)),
            ("query/bias", (2, 3)),
            ("key/kernel", (8, 2, 3)),
            ("key/bias", (2, 3)),
            ("value/kernel", (8, 2, 3)),
            ("value/bias", (2, 3)),
            ("attention_output/kernel", (2, 3, 8)),
            ("attention_output/bias", (8,)),
        ],
    ),
    "position_embedding": (
        lambda: layers.PositionEmbedding(sequence_length=7, name="l"),
        {"inputs": X},
        [("embeddings", (7, 8))],
    ),
    "transformer_encoder_block": (
        lambda: layers.TransformerEncoderBlock(
            num_heads=2, intermediate_dim=6, name="l"
        ),
        {"inputs": X},
        attention_layout("self_attention")
        + norm_layout("self_attention_norm")
        + norm_layout("feedforward_norm")
        + FEEDFORWARD_LAYOUT,
    ),
    # keras-hub's TransformerDecoder order: the feed-forward norm last.
    "transformer_decoder_block": (
        lambda: layers.TransformerDecoderBlock(
            num_heads=2, intermediate_dim=6, name="l"
        ),
        {"inputs": X, "encoder_outputs": X},
        attention_layout("self_attention")
        + norm_layout("self_attention_norm")
        + attention_layout("cross_attention")
        + norm_layout("cross_attention_norm")
        + FEEDFORWARD_LAYOUT
        + norm_layout("feedforward_norm"),
    ),
    "transformer_decoder_block_decoder_only": (
        lambda: layers.TransformerDecoderBlock(
            num_heads=2, intermediate_dim=6, name="l"
        ),
        {"inputs": X},
        attention_layout("self_attention")
        + norm_layout("self_attention_norm")
        + FEEDFORWARD_LAYOUT
        + norm_layout("feedforward_norm"),
    ),
    "token_and_position_embedding": (
        lambda: layers.TokenAndPositionEmbedding(
            20,
            embedding_dim=8,
            sequence_length=6,
            position="learned",
            name="l",
        ),
        {"inputs": IDS},
        [
            ("token_embedding/embeddings", (20, 8)),
            ("position_embedding/embeddings", (6, 8)),
        ],
    ),
}


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_weight_layout_is_stable(name):
    make_layer, inputs, expected = LAYOUTS[name]
    layer = make_layer()
    layer(**inputs)
    actual = [
        (weight.path.split("/", 1)[1], tuple(weight.shape))
        for weight in layer.weights
    ]
    assert actual == expected
