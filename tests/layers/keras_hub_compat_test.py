"""keras-hub's layer signatures on ours, driven by keras-hub's classes.

Every constructor and call parameter is read from the installed
`keras_hub.layers` classes with `inspect.signature`, so an argument that a
new keras-hub adds fails here until ours accept it. Both of our spellings
are checked: the layers of `keras_attention.layers` given keras-hub's
keywords, and `keras_attention.compat.keras_hub.layers`, keras-hub's
constructors verbatim. Weights are copied from keras-hub's layer, and the
outputs, caches and public attributes compared.
"""

import doctest
import inspect

import keras
import keras_hub
import numpy as np
import pytest
from references import to_numpy

from keras_attention import layers
from keras_attention.compat import keras_hub as compat
from keras_attention.utils.masks import keras_mask

RNG = np.random.default_rng(54)
B, T, S, F, N, V = 2, 5, 3, 8, 2, 20

# keras-hub's class -> (ours, our arguments that select keras-hub's
# arithmetic where our defaults follow the paper; docs/usage.md).
OURS = {
    "TransformerEncoder": (layers.TransformerEncoderBlock, {}),
    "TransformerDecoder": (layers.TransformerDecoderBlock, {}),
    "TokenAndPositionEmbedding": (
        layers.TokenAndPositionEmbedding,
        {"position": "learned", "scale_embeddings": False},
    ),
    "PositionEmbedding": (layers.PositionEmbedding, {}),
    "SinePositionEncoding": (layers.SinusoidalPositionEncoding, {}),
}
NAMES = sorted(OURS)
# Values for keras-hub's required constructor arguments.
REQUIRED = {
    "intermediate_dim": 16,
    "num_heads": N,
    "vocabulary_size": V,
    "sequence_length": T + 1,
    "embedding_dim": F,
}
# A value other than keras-hub's default for each optional argument.
OTHER = {
    "dropout": 0.25,
    "activation": "gelu",
    "layer_norm_epsilon": 1e-3,
    "kernel_initializer": "he_normal",
    "bias_initializer": "ones",
    "normalize_first": True,
    "tie_weights": False,
    "embeddings_initializer": "glorot_uniform",
    "mask_zero": True,
    "initializer": "uniform",
    "max_wavelength": 500,
}


def keras_hub_class(name):
    return getattr(keras_hub.layers, name)


def parameters(function):
    """The named parameters of `function`, without `self` and `**kwargs`."""
    return [
        p
        for p in inspect.signature(function).parameters.values()
        if p.name != "self" and p.kind is not p.VAR_KEYWORD
    ]


def keras_hub_arguments(name, **overrides):
    """Every constructor argument of keras-hub's class `name`, by keyword:
    `REQUIRED` values and keras-hub's defaults, then `overrides`."""
    arguments = {}
    for parameter in parameters(keras_hub_class(name).__init__):
        if parameter.default is parameter.empty:
            assert parameter.name in REQUIRED, (
                f"keras-hub's {name} requires `{parameter.name}`: "
                "give it a value in REQUIRED"
            )
            arguments[parameter.name] = REQUIRED[parameter.name]
        else:
            arguments[parameter.name] = parameter.default
    arguments.update(overrides)
    return arguments


def constructor_cases():
    """`(layer, argument)` for every optional keras-hub argument."""
    cases = []
    for name in NAMES:
        for parameter in parameters(keras_hub_class(name).__init__):
            if parameter.default is not parameter.empty:
                cases.append((name, parameter.name))
    return cases


def inputs_for(name, with_encoder=False):
    """Call arguments for a layer built on them: `(args, shapes)`."""
    if name == "TokenAndPositionEmbedding":
        ids = RNG.integers(1, V, size=(B, T)).astype("int32")
        ids[1, 3:] = 0
        return (ids,), [(B, T)]
    x = RNG.normal(size=(B, T, F)).astype("float32")
    if name == "TransformerDecoder" and with_encoder:
        memory = RNG.normal(size=(B, S, F)).astype("float32")
        return (x, memory), [(B, T, F), (B, S, F)]
    return (x,), [(B, T, F)]


def same_weights(theirs, ours, shapes):
    """Builds both on `shapes` and copies keras-hub's (perturbed) weights."""
    theirs.build(*shapes)
    ours.build(*shapes)
    weights = theirs.get_weights()
    theirs.set_weights([w + 0.1 * RNG.normal(size=w.shape) for w in weights])
    ours.set_weights(theirs.get_weights())


def assert_same(actual, expected, atol=1e-5):
    """Equal nested structures (tuple lengths included) and values."""
    actual, expected = keras.tree.flatten(actual), keras.tree.flatten(expected)
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        np.testing.assert_allclose(to_numpy(a), to_numpy(e), atol=atol)


def public_attributes(layer):
    base = set(vars(keras.layers.Layer()))
    return sorted(
        k for k in vars(layer) if not k.startswith("_") and k not in base
    )


def assert_same_attribute(name, ours, theirs):
    if isinstance(theirs, keras.Variable):
        np.testing.assert_allclose(to_numpy(ours), to_numpy(theirs))
    elif isinstance(theirs, keras.layers.Layer):
        assert isinstance(ours, keras.layers.Layer), name
        assert_same(ours.get_weights(), theirs.get_weights(), atol=0)
    elif isinstance(theirs, keras.initializers.Initializer):
        assert keras.initializers.serialize(
            ours
        ) == keras.initializers.serialize(theirs), name
    else:
        assert ours == theirs, (name, ours, theirs)


def both(name, compatible, **overrides):
    """keras-hub's layer and ours from keras-hub's full keyword arguments;
    `compatible` picks the compat class over ours plus `OURS` extras."""
    arguments = keras_hub_arguments(name, **overrides)
    theirs = keras_hub_class(name)(**arguments)
    if compatible:
        ours = getattr(compat.layers, name)(**arguments)
    else:
        our_class, extras = OURS[name]
        ours = our_class(**arguments, **extras)
    return theirs, ours


@pytest.mark.parametrize("name", NAMES)
def test_compat_constructor_is_keras_hubs(name):
    # Names, order, kinds and defaults: a positional port runs unchanged.
    theirs = inspect.signature(keras_hub_class(name).__init__)
    ours = inspect.signature(getattr(compat.layers, name).__init__)
    assert [(p.name, p.kind, p.default) for p in ours.parameters.values()] == [
        (p.name, p.kind, p.default) for p in theirs.parameters.values()
    ]


@pytest.mark.parametrize("compatible", [False, True], ids=["ours", "compat"])
@pytest.mark.parametrize("name, argument", constructor_cases())
def test_every_constructor_argument_means_keras_hubs(
    name, argument, compatible
):
    # Each optional argument at a value other than keras-hub's default:
    # accepted, stored under keras-hub's attribute name, equal outputs with
    # copied weights, and a config that rebuilds the layer.
    theirs, ours = both(name, compatible, **{argument: OTHER[argument]})
    with_encoder = name == "TransformerDecoder"
    args, shapes = inputs_for(name, with_encoder)
    same_weights(theirs, ours, shapes)
    actual, expected = ours(*args), theirs(*args)
    assert_same(actual, expected)
    # The Keras mask the outputs carry (mask_zero=True).
    assert (keras_mask(actual) is None) == (keras_mask(expected) is None)
    if keras_mask(expected) is not None:
        assert_same(keras_mask(actual), keras_mask(expected), atol=0)
    for attribute in public_attributes(theirs):
        assert_same_attribute(
            attribute, getattr(ours, attribute), getattr(theirs, attribute)
        )
    if argument == "dropout" and compatible:
        # keras-hub's one rate also drops attention weights.
        assert ours.attention_dropout == OTHER["dropout"]
    config = ours.get_config()
    assert type(ours).from_config(config).get_config() == config


@pytest.mark.parametrize("name", NAMES)
def test_keras_hub_configs_load_into_the_compat_classes(name):
    theirs = keras_hub_class(name)(**keras_hub_arguments(name))
    args, shapes = inputs_for(name, with_encoder=True)
    theirs.build(*shapes)
    ours = getattr(compat.layers, name).from_config(theirs.get_config())
    if not ours.built:
        ours.build(*shapes)
    ours.set_weights(theirs.get_weights())
    assert_same(ours(*args), theirs(*args))


def call_arguments(name):
    """A value for every call parameter of keras-hub's class `name`,
    keyed by keras-hub's names: `(layer, arguments, shapes, real)`, where
    `real` `(B, T)` marks the query rows both define."""
    theirs, ours = both(name, compatible=False)
    args, shapes = inputs_for(name, with_encoder=True)
    real = np.ones((B, T), bool)
    values = {"training": False}
    if name == "TransformerEncoder":
        real[1, 3:] = False
        values.update(
            inputs=args[0],
            padding_mask=real,
            attention_mask=_attention_mask(T, T),
            return_attention_scores=False,
        )
    elif name == "TransformerDecoder":
        # A prefill: the whole sequence written into caches of its length.
        real[1, 3:] = False
        head = F // N
        values.update(
            decoder_sequence=args[0],
            encoder_sequence=args[1],
            decoder_padding_mask=real,
            decoder_attention_mask=_attention_mask(T, T),
            encoder_padding_mask=np.array([[1, 1, 1], [1, 1, 0]], bool),
            encoder_attention_mask=_attention_mask(T, S),
            self_attention_cache=np.zeros((B, 2, T, N, head), "float32"),
            self_attention_cache_update_index=0,
            cross_attention_cache=np.zeros((B, 2, S, N, head), "float32"),
            cross_attention_cache_update_index=0,
            use_causal_mask=True,
        )
    else:
        values.update(inputs=args[0], start_index=1, positions=None)
    keywords = [p.name for p in parameters(keras_hub_class(name).call)]
    missing = sorted(set(keywords) - set(values))
    assert not missing, f"no test value for {name}'s {missing}"
    return theirs, ours, {k: values[k] for k in keywords}, shapes, real


def _attention_mask(queries, keys):
    """A random `(B, queries, keys)` mask in which every query keeps key 0
    and itself, so no row is empty (keras-hub spreads an empty row
    uniformly, ours gives zeros)."""
    mask = RNG.random((B, queries, keys)) < 0.6
    mask[:, :, 0] = True
    diagonal = np.arange(min(queries, keys))
    mask[:, diagonal, diagonal] = True
    return mask


def real_rows(result, real):
    """The outputs at real query rows, caches as they are."""
    if isinstance(result, tuple):
        return (real_rows(result[0], real),) + result[1:]
    return to_numpy(result)[real]


@pytest.mark.parametrize("name", NAMES)
def test_every_call_argument_by_keras_hubs_name(name):
    theirs, ours, arguments, shapes, real = call_arguments(name)
    same_weights(theirs, ours, shapes)
    expected = theirs(**arguments)
    actual = ours(**arguments)
    assert type(actual) is type(expected)
    assert_same(real_rows(actual, real), real_rows(expected, real))


@pytest.mark.parametrize("normalize_first", [False, True])
@pytest.mark.parametrize("with_encoder", [False, True])
def test_cached_loop_as_keras_hubs_samplers(normalize_first, with_encoder):
    # A prompt of 2 tokens written at once, then one token per step; the
    # first call fills the cross-attention cache, later ones reuse it.
    theirs, ours = both(
        "TransformerDecoder", True, normalize_first=normalize_first
    )
    args, shapes = inputs_for("TransformerDecoder", with_encoder)
    same_weights(theirs, ours, shapes[: 1 + with_encoder])
    x = args[0]
    caches = {"self_attention_cache": np.zeros((B, 2, T, N, F // N))}
    if with_encoder:
        caches["cross_attention_cache"] = np.zeros((B, 2, S, N, F // N))
    caches = {"theirs": dict(caches), "ours": dict(caches)}
    steps = [(0, 2)] + [(t, t + 1) for t in range(2, T)]
    outputs = {"theirs": [], "ours": []}
    for start, end in steps:
        for who, layer in (("theirs", theirs), ("ours", ours)):
            kwargs = dict(caches[who], self_attention_cache_update_index=start)
            if with_encoder:
                kwargs["encoder_sequence"] = args[1]
                kwargs["cross_attention_cache_update_index"] = (
                    0 if start == 0 else None
                )
            result = layer(decoder_sequence=x[:, start:end], **kwargs)
            assert isinstance(result, tuple)
            assert len(result) == (3 if with_encoder else 2)
            outputs[who].append(result[0])
            caches[who]["self_attention_cache"] = result[1]
            if with_encoder:
                caches[who]["cross_attention_cache"] = result[2]
    assert_same(outputs["ours"], outputs["theirs"])
    assert_same(caches["ours"], caches["theirs"])
    # ... and the loop gives the full causal call's outputs.
    full = ours(*args) if with_encoder else ours(x)
    steps = [to_numpy(output) for output in outputs["ours"]]
    assert_same(np.concatenate(steps, axis=1), full)


@pytest.mark.parametrize("use_causal_mask", [True, False])
@pytest.mark.parametrize("with_encoder", [False, True])
@pytest.mark.parametrize(
    "masks", ["padding", "attention", "both"], ids=lambda m: m
)
def test_masks_as_keras_hubs(masks, with_encoder, use_causal_mask):
    theirs, ours = both("TransformerDecoder", True)
    args, shapes = inputs_for("TransformerDecoder", with_encoder)
    same_weights(theirs, ours, shapes)
    real = np.ones((B, T), bool)
    real[0, 4:] = False
    kwargs = dict(decoder_sequence=args[0], use_causal_mask=use_causal_mask)
    if masks in ("padding", "both"):
        kwargs["decoder_padding_mask"] = real
    if masks in ("attention", "both"):
        kwargs["decoder_attention_mask"] = _attention_mask(T, T)
    if with_encoder:
        kwargs["encoder_sequence"] = args[1]
        if masks in ("padding", "both"):
            kwargs["encoder_padding_mask"] = np.array(
                [[1, 1, 0], [1, 1, 1]], bool
            )
        if masks in ("attention", "both"):
            kwargs["encoder_attention_mask"] = _attention_mask(T, S)
    assert_same(
        real_rows(ours(**kwargs), real), real_rows(theirs(**kwargs), real)
    )
    # The encoder on the same masks.
    theirs, ours = both("TransformerEncoder", True)
    same_weights(theirs, ours, shapes[:1])
    kwargs = {"inputs": args[0]}
    if masks in ("padding", "both"):
        kwargs["padding_mask"] = real
    if masks in ("attention", "both"):
        kwargs["attention_mask"] = _attention_mask(T, T)
    assert_same(
        real_rows(ours(**kwargs), real), real_rows(theirs(**kwargs), real)
    )


@pytest.mark.parametrize("with_encoder", [False, True])
def test_return_structures_without_caches(with_encoder):
    theirs, ours = both("TransformerDecoder", True)
    args, shapes = inputs_for("TransformerDecoder", with_encoder)
    same_weights(theirs, ours, shapes)
    names = ("decoder_sequence", "encoder_sequence")
    kwargs = dict(zip(names, args))
    assert_same(ours(**kwargs), theirs(**kwargs))
    theirs, ours = both("TransformerEncoder", True)
    same_weights(theirs, ours, shapes[:1])
    for scores in (False, True):
        expected = theirs(args[0], return_attention_scores=scores)
        actual = ours(args[0], return_attention_scores=scores)
        assert isinstance(actual, tuple) == isinstance(expected, tuple)
        assert_same(actual, expected)


def test_token_embedding_reverses_as_keras_hubs():
    # keras-hub's idiom for tied (or untied) output logits.
    for tie_weights in (True, False):
        theirs, ours = both("TokenAndPositionEmbedding", True)
        theirs, ours = both(
            "TokenAndPositionEmbedding", True, tie_weights=tie_weights
        )
        args, shapes = inputs_for("TokenAndPositionEmbedding")
        same_weights(theirs, ours, shapes)
        hidden = RNG.normal(size=(B, T, F)).astype("float32")
        assert_same(
            ours.token_embedding(hidden, reverse=True),
            theirs.token_embedding(hidden, reverse=True),
        )
        assert_same(
            ours(hidden, reverse=True),
            theirs.token_embedding(hidden, reverse=True),
        )


def test_both_names_of_one_argument_is_a_clear_error():
    with pytest.raises(ValueError, match="normalize_first"):
        layers.TransformerEncoderBlock(
            num_heads=2,
            intermediate_dim=8,
            norm_first=False,
            normalize_first=True,
        )
    layer = layers.TransformerDecoderBlock(num_heads=2, intermediate_dim=8)
    x = RNG.normal(size=(B, T, F)).astype("float32")
    with pytest.raises(ValueError, match="decoder_sequence"):
        layer(x, decoder_sequence=x)
    # Equal values under both names are accepted.
    layer = layers.TransformerEncoderBlock(
        num_heads=2, intermediate_dim=8, norm_first=True, normalize_first=True
    )
    assert layer.norm_first and layer.normalize_first


def test_keras_hub_names_in_a_functional_model():
    tokens = keras.Input((None,), dtype="int32")
    x = compat.layers.TokenAndPositionEmbedding(V, T, F, mask_zero=True)(tokens)
    x = compat.layers.TransformerDecoder(16, N)(decoder_sequence=x)
    model = keras.Model(tokens, x)
    ids = RNG.integers(1, V, size=(B, T)).astype("int32")
    assert keras.ops.shape(model(ids)) == (B, T, F)


def test_compat_docstring_examples_run():
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    globs = {"keras": keras, "np": np, **vars(compat.layers)}
    tests = finder.find(compat.layers, globs=globs)
    examples = [test for test in tests if test.examples]
    assert len(examples) >= 3
    for test in examples:
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0
