"""The shared test case every keras_attention layer passes on every backend.

`LayerTestCase.run_layer_test` checks the contracts a Keras layer must keep:

1. config round trip (`get_config` -> `from_config` -> same config, and a
   public attribute for each constructor argument);
2. eager and symbolic calls agree on output shapes and dtypes;
3. one training step moves every trainable weight (a weight that never
   moves is dead, like a bias that cancels in a softmax);
4. outputs stay finite under `mixed_float16` and `mixed_bfloat16`, with
   padded inputs;
5. a `.keras` file reloads with `safe_mode=True` and no `custom_objects`,
   with identical outputs;
6. a SavedModel export reloads with `tf.saved_model.load` and gives the same
   outputs (tensorflow and jax backends, where TensorFlow is installed;
   `torch.export` cannot trace these models yet, so torch skips this check);
7. padding invariance: appending masked padding never changes the outputs at
   real positions;
8. unknown lengths: inside a functional model whose inputs have `None`
   batch and sequence lengths, the layer runs on data of two different
   lengths (as it does eagerly), and the model saves and reloads
   (`.keras`, `safe_mode=True`) with the same outputs at both lengths.

Each check is also a public method, for tests that need only one of them.
The class is shipped with the package so that users' own layers can reuse it.

Inputs are given as one array, or a dict of named arrays passed to the layer
as keyword arguments. In a dict, an entry named `mask` or ending in `_mask`
is a mask: boolean, `(B, T)` per sequence, or `(B, T, S)` for
`attention_mask`. Padding appends positions along axis 1 of every sequence
input (and along axis 2 of `attention_mask`), with random values in float
inputs, zeros in integer inputs and `False` in masks.
"""

import importlib.util
import os
import tempfile
import unittest

import keras
import numpy as np
from keras import ops

from keras_attention.utils.optional import import_optional

_PLAIN_TYPES = (bool, int, float, str, type(None), tuple, list)


class LayerTestCase(unittest.TestCase):
    """Base class for layer tests; see the module docstring."""

    def run_layer_test(
        self,
        layer_cls,
        init_kwargs,
        input_data,
        call_kwargs=None,
        expected_output_shape=None,
        run_training_check=True,
        run_mixed_precision_check=True,
        run_saving_check=True,
        run_export_check=True,
        run_padding_check=True,
        run_unknown_length_check=True,
        padding_inputs=None,
        training_output_index=0,
        static_weights=(),
        tolerance=1e-5,
    ):
        """Runs every check on `layer_cls(**init_kwargs)`.

        Args:
            layer_cls: the layer class.
            init_kwargs: dict of constructor arguments.
            input_data: an array, or a dict of named arrays passed as call
                keyword arguments.
            call_kwargs: dict of further (non-tensor) call arguments, such as
                `use_causal_mask=True`.
            expected_output_shape: the eager output shape, or a tuple of
                shapes for several outputs. Checked when given.
            run_*_check: bool. Turn one check off.
            padding_inputs: names of the dict entries padded by the padding
                check, and given a `None` sequence length by the unknown
                length check. Defaults to every entry of rank 2 or more.
            training_output_index: which output the training check's loss is
                computed on, for layers with several outputs.
            static_weights: path endings of weights that provably get no
                gradient (for example a key bias, which cancels in the
                softmax); the training check skips them. Say why in the test.
            tolerance: absolute tolerance of the output comparisons.
        """
        call_kwargs = call_kwargs or {}
        self.check_config_round_trip(layer_cls, init_kwargs)
        self.check_eager_and_symbolic(
            layer_cls,
            init_kwargs,
            input_data,
            call_kwargs,
            expected_output_shape,
        )
        if run_training_check:
            self.check_training_moves_weights(
                layer_cls,
                init_kwargs,
                input_data,
                call_kwargs,
                training_output_index,
                static_weights,
            )
        if run_padding_check:
            self.check_padding_invariance(
                layer_cls,
                init_kwargs,
                input_data,
                call_kwargs,
                padding_inputs,
                tolerance,
            )
        if run_mixed_precision_check:
            padded = input_data
            if run_padding_check:
                padded = pad_inputs(input_data, 3, padding_inputs)
            for policy in ("mixed_float16", "mixed_bfloat16"):
                self.check_finite_under_policy(
                    layer_cls, init_kwargs, padded, call_kwargs, policy
                )
        if run_saving_check:
            self.check_keras_saving(
                layer_cls, init_kwargs, input_data, call_kwargs, tolerance
            )
        if run_unknown_length_check:
            self.check_unknown_lengths(
                layer_cls,
                init_kwargs,
                input_data,
                call_kwargs,
                padding_inputs,
                tolerance,
            )
        if (
            run_export_check
            and keras.backend.backend() != "torch"
            and importlib.util.find_spec("tensorflow") is not None
        ):
            self.check_saved_model_export(
                layer_cls, init_kwargs, input_data, call_kwargs, tolerance
            )

    # 1. Config.
    def check_config_round_trip(self, layer_cls, init_kwargs):
        layer = layer_cls(**init_kwargs)
        config = layer.get_config()
        for name, value in init_kwargs.items():
            self.assertIn(name, config, f"get_config() lacks `{name}`")
            attribute = getattr(layer, name, None)
            if isinstance(value, _PLAIN_TYPES) and isinstance(
                attribute, _PLAIN_TYPES
            ):
                self.assertEqual(
                    _plain(attribute),
                    _plain(value),
                    f"Attribute `{name}` differs from the constructor value",
                )
        revived = layer_cls.from_config(config)
        self.assertEqual(revived.get_config(), config)
        registered = keras.saving.get_registered_name(layer_cls)
        self.assertIs(
            keras.saving.get_registered_object(registered),
            layer_cls,
            f"{layer_cls.__name__} is not registered as serializable",
        )

    # 2. Eager and symbolic calls.
    def check_eager_and_symbolic(
        self,
        layer_cls,
        init_kwargs,
        input_data,
        call_kwargs,
        expected_output_shape=None,
    ):
        layer = layer_cls(**init_kwargs)
        eager = _flatten(call_layer(layer, input_data, call_kwargs))
        if expected_output_shape is not None:
            expected = expected_output_shape
            if not isinstance(expected[0], (tuple, list)):
                expected = (expected,)
            self.assertEqual(
                [tuple(ops.shape(x)) for x in eager],
                [tuple(s) for s in expected],
            )
        model = build_model(layer_cls(**init_kwargs), input_data, call_kwargs)
        symbolic = _flatten(model.outputs)
        self.assertEqual(len(symbolic), len(eager))
        for sym, real in zip(symbolic, eager):
            real_shape = tuple(ops.shape(real))
            self.assertEqual(len(sym.shape), len(real_shape))
            for sym_dim, real_dim in zip(sym.shape[1:], real_shape[1:]):
                if sym_dim is not None:
                    self.assertEqual(sym_dim, real_dim)
            self.assertEqual(
                keras.backend.standardize_dtype(sym.dtype),
                keras.backend.standardize_dtype(real.dtype),
            )

    # 3. Training.
    def check_training_moves_weights(
        self,
        layer_cls,
        init_kwargs,
        input_data,
        call_kwargs,
        training_output_index=0,
        static_weights=(),
        min_change=1e-7,
    ):
        layer = layer_cls(**init_kwargs)
        model = build_model(layer, input_data, call_kwargs)
        outputs = _flatten(model.outputs)
        trained = keras.Model(model.inputs, outputs[training_output_index])
        trained.compile(optimizer=keras.optimizers.SGD(1.0), loss="mse")
        target_shape = (_batch_size(input_data),) + tuple(
            trained.output.shape[1:]
        )
        if None in target_shape:
            target_shape = tuple(
                ops.shape(trained(_as_model_inputs(input_data)))
            )
        target = np.random.default_rng(0).normal(size=target_shape)
        before = [np.array(w) for w in _numpy(layer.trainable_weights)]
        self.assertTrue(before, f"{layer_cls.__name__} has no weights")
        trained.train_on_batch(
            _as_model_inputs(input_data), target.astype("float32")
        )
        after = _numpy(layer.trainable_weights)
        for weight, old, new in zip(layer.trainable_weights, before, after):
            if weight.path.endswith(tuple(static_weights)):
                continue
            change = float(np.max(np.abs(new - old)))
            self.assertGreater(
                change,
                min_change,
                f"Weight {weight.path} did not move in a training step",
            )

    # 4. Mixed precision.
    def check_finite_under_policy(
        self, layer_cls, init_kwargs, input_data, call_kwargs, policy
    ):
        layer = layer_cls(**{**init_kwargs, "dtype": policy})
        for output in _flatten(call_layer(layer, input_data, call_kwargs)):
            values = _numpy([output])[0]
            if np.issubdtype(values.dtype, np.floating):
                self.assertTrue(
                    np.all(np.isfinite(values)),
                    f"Non-finite output under {policy}",
                )

    # 5. Keras saving.
    def check_keras_saving(
        self, layer_cls, init_kwargs, input_data, call_kwargs, tolerance=1e-5
    ):
        model = build_model(layer_cls(**init_kwargs), input_data, call_kwargs)
        expected = _numpy(_flatten(model(_as_model_inputs(input_data))))
        revived = reload_model(model)
        actual = _numpy(_flatten(revived(_as_model_inputs(input_data))))
        for a, e in zip(actual, expected):
            np.testing.assert_allclose(a, e, atol=tolerance, rtol=0)

    # 6. SavedModel export.
    def check_saved_model_export(
        self, layer_cls, init_kwargs, input_data, call_kwargs, tolerance=1e-5
    ):
        tf = import_optional("tensorflow", "tensorflow", "SavedModel export")
        model = build_model(layer_cls(**init_kwargs), input_data, call_kwargs)
        expected = _numpy(_flatten(model(_as_model_inputs(input_data))))
        with tempfile.TemporaryDirectory() as directory:
            model.export(directory, format="tf_saved_model", verbose=False)
            # Keep the loaded object referenced while it is called.
            loaded = tf.saved_model.load(directory)
            actual = loaded.serve(_as_model_inputs(input_data))
            actual = [np.asarray(x) for x in tf.nest.flatten(actual)]
        for a, e in zip(actual, expected):
            np.testing.assert_allclose(a, e, atol=tolerance, rtol=0)

    # 7. Padding invariance.
    def check_padding_invariance(
        self,
        layer_cls,
        init_kwargs,
        input_data,
        call_kwargs,
        padding_inputs=None,
        tolerance=1e-5,
        extra=5,
    ):
        layer = layer_cls(**init_kwargs)
        plain = _numpy(_flatten(call_layer(layer, input_data, call_kwargs)))
        padded_data = pad_inputs(input_data, extra, padding_inputs)
        padded = _numpy(_flatten(call_layer(layer, padded_data, call_kwargs)))
        for before, after in zip(plain, padded):
            real = tuple(slice(0, size) for size in before.shape)
            np.testing.assert_allclose(
                after[real],
                before,
                atol=tolerance,
                rtol=0,
                err_msg="Appending padding changed outputs at real positions",
            )

    # 8. Unknown lengths.
    def check_unknown_lengths(
        self,
        layer_cls,
        init_kwargs,
        input_data,
        call_kwargs,
        sequence_inputs=None,
        tolerance=1e-5,
        extra=3,
    ):
        layer = layer_cls(**init_kwargs)
        model = build_model(
            layer, input_data, call_kwargs, unknown_lengths=sequence_inputs
        )
        for symbolic in _flatten(model.inputs):
            self.assertIsNone(symbolic.shape[0], "batch size is not None")
        longer = pad_inputs(input_data, extra, sequence_inputs)
        expected = []
        for data in (input_data, longer):
            outputs = _numpy(_flatten(model(_as_model_inputs(data))))
            eager = _numpy(_flatten(call_layer(layer, data, call_kwargs)))
            for a, e in zip(outputs, eager):
                self.assertEqual(a.shape, e.shape)
                np.testing.assert_allclose(a, e, atol=tolerance, rtol=0)
            expected.append(outputs)
        self.assertNotEqual(
            _shapes(input_data),
            _shapes(longer),
            "no input has a sequence axis to change the length of",
        )
        revived = reload_model(model)
        for data, outputs in zip((input_data, longer), expected):
            actual = _numpy(_flatten(revived(_as_model_inputs(data))))
            for a, e in zip(actual, outputs):
                np.testing.assert_allclose(a, e, atol=tolerance, rtol=0)


def reload_model(model):
    """`model` saved to a `.keras` file and loaded with `safe_mode=True`."""
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "model.keras")
        model.save(path)
        return keras.saving.load_model(path, safe_mode=True)


def call_layer(layer, input_data, call_kwargs=None):
    """Calls `layer` on an array or on a dict of keyword arrays."""
    call_kwargs = call_kwargs or {}
    if isinstance(input_data, dict):
        return layer(**input_data, **call_kwargs)
    return layer(input_data, **call_kwargs)


def build_model(layer, input_data, call_kwargs=None, unknown_lengths=False):
    """Wraps `layer` in a functional model with inputs shaped like the data.

    Each `keras.Input` is named after its dict key, so that dict inputs
    reach the right argument. The batch size is `None`. With
    `unknown_lengths`, so are the sequence lengths: `True` (or `None`) for
    every input of rank 2 or more, or the names of the inputs to treat so;
    the sequence axes are those `pad_inputs` pads.
    """

    def make_input(name, value):
        shape = list(np.shape(value))
        if _is_sequence(name, value, unknown_lengths):
            axes = (1, 2) if name == "attention_mask" else (1,)
            for axis in axes:
                shape[axis] = None
        return keras.Input(
            shape=tuple(shape[1:]),
            dtype=_dtype(value),
            name=name,
        )

    if isinstance(input_data, dict):
        inputs = {
            name: make_input(name, value) for name, value in input_data.items()
        }
    else:
        inputs = make_input(None, input_data)
    outputs = call_layer(layer, inputs, call_kwargs)
    return keras.Model(inputs, outputs)


def _is_sequence(name, value, unknown_lengths):
    if unknown_lengths is False or np.ndim(value) < 2:
        return False
    if unknown_lengths in (True, None):
        return True
    return (name or "inputs") in unknown_lengths


def pad_inputs(input_data, extra, names=None, seed=0):
    """Appends `extra` padded positions to the sequence inputs.

    Masks get `False`, float inputs large random values (so leaks show),
    integer inputs zeros. `attention_mask` is padded on both sequence axes.
    """
    rng = np.random.default_rng(seed)

    def pad(name, value):
        value = np.asarray(value)
        if value.ndim < 2 or (names is not None and name not in names):
            return value
        axes = (1, 2) if name == "attention_mask" else (1,)
        for axis in axes:
            shape = list(value.shape)
            shape[axis] = extra
            if value.dtype == bool:
                block = np.zeros(shape, bool)
            elif np.issubdtype(value.dtype, np.integer):
                block = np.zeros(shape, value.dtype)
            else:
                block = (100.0 * rng.normal(size=shape)).astype(value.dtype)
            value = np.concatenate([value, block], axis=axis)
        return value

    if isinstance(input_data, dict):
        return {name: pad(name, value) for name, value in input_data.items()}
    return pad("inputs", input_data)


def _as_model_inputs(input_data):
    if isinstance(input_data, dict):
        return {k: np.asarray(v) for k, v in input_data.items()}
    return np.asarray(input_data)


def _batch_size(input_data):
    if isinstance(input_data, dict):
        return np.shape(next(iter(input_data.values())))[0]
    return np.shape(input_data)[0]


def _shapes(input_data):
    if isinstance(input_data, dict):
        return [np.shape(value) for value in input_data.values()]
    return [np.shape(input_data)]


def _dtype(value):
    return keras.backend.standardize_dtype(np.asarray(value).dtype)


def _flatten(outputs):
    if isinstance(outputs, (list, tuple)):
        return list(outputs)
    if isinstance(outputs, dict):
        return list(outputs.values())
    return [outputs]


def _numpy(tensors):
    return [
        np.asarray(ops.convert_to_numpy(ops.cast(t, "float32")))
        if _is_low_precision(t)
        else np.asarray(ops.convert_to_numpy(t))
        for t in tensors
    ]


def _is_low_precision(tensor):
    dtype = keras.backend.standardize_dtype(tensor.dtype)
    return dtype == "bfloat16"


def _plain(value):
    return list(value) if isinstance(value, tuple) else value
