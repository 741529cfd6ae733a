"""The compiled loop: a search traced once per input shape with
`tf.function` on tensorflow, compiled with `jax.jit` on jax (the model
weights passed in as arguments, so later training is seen), run eagerly
under `torch.no_grad()` on torch. Searches loop with `keras.ops.while_loop`.
"""

import contextlib
import weakref

import keras

from keras_attention.ops.writes import core_tensorflow_writes

_COMPILED = weakref.WeakKeyDictionary()


@contextlib.contextmanager
def fresh_traces(model):
    """Searches on `model` inside the block are traced anew, not reused.

    Compiled searches are kept per model and spec. An exporter that
    traces the search under other op substitutions (or for XLA) needs its
    own traces; the ones from before the block are kept for after it.
    """
    before = _COMPILED.pop(model, None)
    try:
        yield
    finally:
        _COMPILED.pop(model, None)
        if before is not None:
            _COMPILED[model] = before


def compile_search(model, spec, factory, jit_compile=False):
    """The search function `factory(model, spec)`, compiled for the
    backend and kept per model and spec.

    `spec` is a search spec (`decoding.specs`), kept by the part a trace
    depends on (`spec.traced()`: a sampling seed is an input, not part of
    the trace), or any other hashable key of the factory's own.
    """
    if not isinstance(jit_compile, bool):
        raise ValueError(
            "Argument `jit_compile` must be a bool. "
            f"Received: jit_compile={jit_compile!r}"
        )
    backend = keras.backend.backend()
    if jit_compile and backend not in ("tensorflow", "jax"):
        raise ValueError(
            "Argument `jit_compile=True` needs the tensorflow or jax "
            f"backend (XLA); the {backend} backend decodes eagerly. "
            f"Received: jit_compile={jit_compile!r}"
        )
    if hasattr(spec, "traced"):
        spec = spec.traced()
    per_model = _COMPILED.setdefault(model, {})
    # jax compiles with XLA either way: one function for both.
    key = (spec, jit_compile and backend == "tensorflow")
    if key in per_model:
        return per_model[key]
    fn = factory(model, spec)
    if backend == "tensorflow":
        import tensorflow as tf

        # `None` (not `False`) leaves tensorflow's own XLA settings alone.
        traced = tf.function(fn, jit_compile=True if jit_compile else None)
        # One trace per input shape is the design: callers pad to a few
        # bucket widths (`translate`, `generate`: multiples of 8), so the
        # traces are bounded by `max_sequence_length / 8`. TensorFlow's
        # frequent-retracing warning assumes unbounded shapes; it is told
        # so, as TensorFlow does for the functions of a loaded SavedModel.
        traced._omit_frequent_tracing_warning = True

        def compiled(*inputs):
            # Traced without XLA, the steps write with the core op
            # (`keras_attention.ops.writes`), unless the caller chose (an
            # exporter's XLA-compiled function around this one).
            with core_tensorflow_writes(not jit_compile, keep_enclosing=True):
                return traced(*inputs)

    elif backend == "jax":
        import jax

        def stateless(values, *inputs):
            mapping = list(zip(model.variables, values))
            with keras.StatelessScope(state_mapping=mapping):
                return fn(*inputs)

        jitted = jax.jit(stateless)

        def compiled(*inputs):
            values = [v.value for v in model.variables]
            return jitted(values, *inputs)

    elif backend == "torch":
        import torch

        def compiled(*inputs):
            with torch.no_grad():
                return fn(*inputs)

    else:
        compiled = fn
    per_model[key] = compiled
    return compiled
