"""Keras-mask bookkeeping."""

import contextlib

# Keras has no public way to read or detach the Keras mask that an upstream
# layer attached to a tensor (on jax it is not even an attribute of the
# array). Layers that consume masks themselves read them, and detach them
# before calling sublayers that do not support masking, which would
# otherwise warn that the mask is destroyed. keras.layers.MultiHeadAttention
# does the same.
from keras.src.backend import get_keras_mask
from keras.src.backend import set_keras_mask


def keras_mask(tensor):
    """The Keras mask attached to `tensor`, or `None` (also for `None`)."""
    if tensor is None:
        return None
    return get_keras_mask(tensor)


def drop_keras_masks(*tensors):
    """Detaches Keras masks from `tensors` (already read by the caller)."""
    # Through Keras's accessor, not the attribute: where a tensor takes no
    # attributes (jax arrays), Keras keeps the mask in a table by id.
    for tensor in tensors:
        if keras_mask(tensor) is not None:
            set_keras_mask(tensor, None)


@contextlib.contextmanager
def kept_keras_masks(*tensors):
    """Reads the Keras masks of `tensors` and puts them back on exit.

    Yields the masks (`None` where there is none). A layer that reads its
    inputs' masks itself uses this around its body, so that sublayers which
    detach masks (as `MultiHeadAttention` does with its inputs) leave the
    caller's tensors as they were: a tensor fed to two layers keeps its
    mask for the second.
    """
    masks = [keras_mask(tensor) for tensor in tensors]
    try:
        yield masks
    finally:
        for tensor, mask in zip(tensors, masks):
            if mask is not None:
                set_keras_mask(tensor, mask)
