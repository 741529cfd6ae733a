"""Keras layers: `from keras_attention import layers`."""

from keras_attention.layers.directional_self_attention import (
    DirectionalSelfAttention,
)
from keras_attention.layers.fusion_gate import FusionGate
from keras_attention.layers.intra_sentence_attention import (
    IntraSentenceAttention,
)
from keras_attention.layers.multi_head_attention import MultiHeadAttention
from keras_attention.layers.position_embedding import PositionEmbedding
from keras_attention.layers.reinforced_self_attention import (
    ReinforcedSelfAttention,
)
from keras_attention.layers.reinforced_sequence_sampler import (
    ReinforcedSequenceSampler,
)
from keras_attention.layers.sinusoidal_position_encoding import (
    SinusoidalPositionEncoding,
)
from keras_attention.layers.soft_alignment import SoftAlignment
from keras_attention.layers.source2_token_attention import Source2TokenAttention
from keras_attention.layers.token_and_position_embedding import (
    TokenAndPositionEmbedding,
)
from keras_attention.layers.transformer_decoder_block import (
    TransformerDecoderBlock,
)
from keras_attention.layers.transformer_encoder_block import (
    TransformerEncoderBlock,
)

__all__ = [
    "DirectionalSelfAttention",
    "FusionGate",
    "IntraSentenceAttention",
    "ReinforcedSelfAttention",
    "ReinforcedSequenceSampler",
    "Source2TokenAttention",
    "MultiHeadAttention",
    "PositionEmbedding",
    "SinusoidalPositionEncoding",
    "SoftAlignment",
    "TokenAndPositionEmbedding",
    "TransformerDecoderBlock",
    "TransformerEncoderBlock",
]
