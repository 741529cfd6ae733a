"""Pure functions on `keras.ops`: masks, masked softmax, attention maths.

Layers hold weights and call these; nothing here creates variables.
`ops.key_value_cache` holds the one layout of the decoding caches;
`ops.writes` the op that writes into them at every step.
`replica_sum` and `scale_for_replicas` are the two sums over the replicas
of a `tf.distribute` step that hand-written loss terms need.
"""

from keras_attention.ops.attention import scaled_dot_product_attention
from keras_attention.ops.attention import single_query_attention
from keras_attention.ops.key_value_cache import empty_cache
from keras_attention.ops.key_value_cache import from_stacked_cache
from keras_attention.ops.key_value_cache import reorder_cache
from keras_attention.ops.key_value_cache import to_stacked_cache
from keras_attention.ops.key_value_cache import update_cache
from keras_attention.ops.masking import causal_mask
from keras_attention.ops.masking import large_negative
from keras_attention.ops.masking import local_mask
from keras_attention.ops.masking import masked_mean
from keras_attention.ops.masking import masked_softmax
from keras_attention.ops.masking import masked_sum
from keras_attention.ops.masking import merge_masks
from keras_attention.ops.masking import pairwise_mask
from keras_attention.ops.multi_dimensional import directional_mask
from keras_attention.ops.multi_dimensional import multi_dimensional_attention
from keras_attention.ops.positions import sinusoidal_encoding
from keras_attention.ops.positions import sinusoidal_positions
from keras_attention.ops.replicas import replica_sum
from keras_attention.ops.replicas import scale_for_replicas
from keras_attention.ops.writes import core_tensorflow_writes
from keras_attention.ops.writes import slice_update

__all__ = [
    "causal_mask",
    "core_tensorflow_writes",
    "directional_mask",
    "empty_cache",
    "from_stacked_cache",
    "large_negative",
    "local_mask",
    "masked_mean",
    "masked_softmax",
    "masked_sum",
    "merge_masks",
    "multi_dimensional_attention",
    "pairwise_mask",
    "reorder_cache",
    "replica_sum",
    "scale_for_replicas",
    "scaled_dot_product_attention",
    "single_query_attention",
    "slice_update",
    "sinusoidal_encoding",
    "sinusoidal_positions",
    "to_stacked_cache",
    "update_cache",
]
