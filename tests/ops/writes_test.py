import keras
import numpy as np
import pytest
from keras import ops

from keras_attention import decoding
from keras_attention.models import TransformerLanguageModel
from keras_attention.ops.writes import core_tensorflow_writes
from keras_attention.ops.writes import slice_update

tensorflow_only = pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="the op choice exists on tensorflow only",
)


def random_case(seed=0):
    rng = np.random.default_rng(seed)
    inputs = rng.normal(size=(2, 3, 7, 4)).astype("float32")
    updates = rng.normal(size=(2, 3, 2, 4)).astype("float32")
    return inputs, updates


@pytest.mark.parametrize("core", [False, True])
def test_writes_what_keras_slice_update_writes(core):
    inputs, updates = random_case()
    expected = inputs.copy()
    expected[:, :, 4:6] = updates
    with core_tensorflow_writes(core):
        written = slice_update(inputs, [0, 0, 4, 0], updates)
    np.testing.assert_array_equal(ops.convert_to_numpy(written), expected)
    np.testing.assert_array_equal(
        ops.convert_to_numpy(ops.slice_update(inputs, [0, 0, 4, 0], updates)),
        expected,
    )


def test_casts_the_update_to_the_inputs_dtype():
    tokens = np.zeros((2, 5), "int32")
    with core_tensorflow_writes():
        written = slice_update(tokens, [0, 3], np.array([[7], [8]], "int32"))
    written = ops.convert_to_numpy(written)
    assert written.dtype == np.int32
    np.testing.assert_array_equal(written[:, 3], [7, 8])


def test_the_block_restores_the_choice_before_it():
    from keras_attention.ops import writes

    assert getattr(writes._TRACING, "core", None) is None
    with core_tensorflow_writes():
        with core_tensorflow_writes(False):
            assert writes._TRACING.core is False
        assert writes._TRACING.core is True
        with core_tensorflow_writes(False, keep_enclosing=True):
            assert writes._TRACING.core is True
    assert writes._TRACING.core is None
    with core_tensorflow_writes(False, keep_enclosing=True):
        assert writes._TRACING.core is False


def traced_op_types(fn, *args):
    import tensorflow as tf

    graph = tf.function(fn).get_concrete_function(*args).graph
    return {op.type for op in graph.get_operations()}


@tensorflow_only
def test_the_block_chooses_the_core_op_when_tracing():
    import tensorflow as tf

    inputs, updates = random_case()
    index = tf.constant(4)

    def write(x, u, i):
        return slice_update(x, [0, 0, i, 0], u)

    keras_op = traced_op_types(write, inputs, updates, index)
    assert "XlaDynamicUpdateSlice" in keras_op
    assert "TensorStridedSliceUpdate" not in keras_op

    def write_core(x, u, i):
        with core_tensorflow_writes():
            return write(x, u, i)

    core_op = traced_op_types(write_core, inputs, updates, index)
    assert "TensorStridedSliceUpdate" in core_op
    assert "XlaDynamicUpdateSlice" not in core_op


def small_model():
    keras.utils.set_random_seed(3)
    return TransformerLanguageModel(
        vocabulary_size=40,
        num_layers=2,
        num_heads=2,
        hidden_dim=16,
        intermediate_dim=32,
        max_sequence_length=24,
        dropout=0.0,
    )


@tensorflow_only
@pytest.mark.parametrize("search", ["greedy", "beam"])
def test_searches_give_the_same_tokens_with_and_without_xla(search):
    # Without XLA the searches write with the core op, with XLA with
    # Keras's: the same tokens.
    model = small_model()
    prompts = np.random.default_rng(1).integers(3, 39, (3, 5)).astype("int32")
    prompts[0, 3:] = 0
    run = dict(
        greedy=lambda jit: decoding.greedy_search(
            model, prompts, 1, 2, max_extra_length=12, jit_compile=jit
        ),
        beam=lambda jit: decoding.beam_search(
            model,
            prompts,
            1,
            2,
            beam_size=3,
            max_extra_length=12,
            jit_compile=jit,
        ),
    )[search]
    np.testing.assert_array_equal(
        ops.convert_to_numpy(run(False)), ops.convert_to_numpy(run(True))
    )
