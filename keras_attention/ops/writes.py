"""Writing new values into a slice of a tensor, as decoding does at every
step (the caches, the decoded tokens).

Keras's tensorflow backend writes `keras.ops.slice_update` as the XLA op
`XlaDynamicUpdateSlice`. Outside an XLA-compiled function that op runs on
its own and copies its whole input, so a decoding step without XLA copies
every cache. The core op `TensorStridedSliceUpdate` writes the same values
faster there (greedy generation of `tiny` about 15% faster,
`benchmarks/keras_hub_generate.py`) and needs no XLA at all (TF Serving),
but XLA cannot compile it when the write position changes at run time (a
loop's step). So the op is chosen when a graph is traced: inside
`core_tensorflow_writes()` the core op, elsewhere Keras's. The searches
trace under it when they are not compiled with XLA, and so do the
exporters.
"""

import contextlib
import threading

import keras
from keras import ops

from keras_attention.utils.optional import import_optional

_TRACING = threading.local()


@contextlib.contextmanager
def core_tensorflow_writes(enabled=True, keep_enclosing=False):
    """Inside the block, `slice_update` on tensorflow writes with the core
    op `TensorStridedSliceUpdate` instead of `XlaDynamicUpdateSlice`.

    Args:
        enabled: bool. `False` keeps Keras's op (what a function that XLA
            compiles needs).
        keep_enclosing: bool. If an enclosing block already chose, keep
            its choice: a search traced inside an exporter's XLA-compiled
            function keeps Keras's op. Defaults to `False`.
    """
    before = getattr(_TRACING, "core", None)
    if not (keep_enclosing and before is not None):
        _TRACING.core = bool(enabled)
    try:
        yield
    finally:
        _TRACING.core = before


def slice_update(inputs, start_indices, updates):
    """`keras.ops.slice_update`: `inputs` with `updates` written at
    `start_indices` (one start per axis, the update inside `inputs`).

    On tensorflow inside `core_tensorflow_writes()`, with the core op
    `TensorStridedSliceUpdate`; the same values either way.
    """
    if (
        getattr(_TRACING, "core", None)
        and keras.backend.backend() == "tensorflow"
    ):
        return _strided_slice_update(inputs, start_indices, updates)
    return ops.slice_update(inputs, start_indices, updates)


def _strided_slice_update(inputs, start_indices, updates):
    """`slice_update` with tensorflow's core op (tensorflow only)."""
    tf = import_optional("tensorflow", "tensorflow", "slice_update")
    inputs = tf.convert_to_tensor(inputs)
    updates = tf.cast(updates, inputs.dtype)
    begin = tf.stack([tf.cast(i, "int32") for i in start_indices])
    return tf.raw_ops.TensorStridedSliceUpdate(
        input=inputs,
        begin=begin,
        end=begin + tf.shape(updates, out_type="int32"),
        strides=tf.ones_like(begin),
        value=updates,
    )
