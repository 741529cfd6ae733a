"""Keras-mask bookkeeping."""

# Keras has no public way to detach the Keras mask that an upstream layer
# attached to a tensor. Layers that consume masks themselves detach them
# before calling sublayers that do not support masking, which would
# otherwise warn that the mask is destroyed. keras.layers.MultiHeadAttention
# does the same.
from keras.src.backend import set_keras_mask


def drop_keras_masks(*tensors):
    """Detaches Keras masks from `tensors` (already read by the caller)."""
    for tensor in tensors:
        if (
            tensor is not None
            and getattr(tensor, "_keras_mask", None) is not None
        ):
            set_keras_mask(tensor, None)
