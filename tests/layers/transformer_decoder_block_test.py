import keras
import keras_hub
import numpy as np
import pytest
from keras import ops
from references import lengths_mask
from references import numpy_attention
from references import numpy_feedforward
from references import numpy_residual
from references import to_numpy

import keras_attention
from keras_attention import layers
from keras_attention.testing import LayerTestCase
from keras_attention.utils.masks import keras_mask

RNG = np.random.default_rng(12)
KEY_BIAS = ("key/bias",)


def random(*shape):
    return RNG.normal(size=shape).astype("float32")


def block(**kwargs):
    config = dict(num_heads=2, intermediate_dim=12, dropout=0.0)
    config.update(kwargs)
    return layers.TransformerDecoderBlock(**config)


def numpy_transformer_decoder_block(
    x, weights, self_mask, memory=None, cross_mask=None, norm_first=False
):
    """Float64 reference; weights in get_weights() order:
    [self-attention x8][norm x2]([cross-attention x8][norm x2])[dense x4]
    [norm x2]. Masks are the full pairwise masks (B, T, T) and (B, T, S)."""
    w = [np.float64(v) for v in weights]

    def sublayer(x, fn, gamma, beta):
        return numpy_residual(x, fn, gamma, beta, norm_first)

    self_att, (g1, b1), rest = w[:8], w[8:10], w[10:]
    x = sublayer(
        x, lambda h: numpy_attention(h, h, self_att, self_mask), g1, b1
    )
    if memory is not None:
        cross_att, (g2, b2), rest = rest[:8], rest[8:10], rest[10:]
        x = sublayer(
            x,
            lambda h: numpy_attention(h, memory, cross_att, cross_mask),
            g2,
            b2,
        )
    (f1, c1, f2, c2), (g3, b3) = rest[:4], rest[4:]
    return sublayer(x, lambda h: numpy_feedforward(h, f1, c1, f2, c2), g3, b3)


def causal(length):
    return np.tril(np.ones((length, length), bool))


def pairwise(query_mask, key_mask):
    return query_mask[:, :, None] & key_mask[:, None, :]


class TransformerDecoderBlockTest(LayerTestCase):
    def test_layer_contract_with_padding(self):
        self.run_layer_test(
            layers.TransformerDecoderBlock,
            init_kwargs={"num_heads": 2, "intermediate_dim": 8, "seed": 4},
            input_data={
                "inputs": random(2, 3, 8),
                "encoder_outputs": random(2, 4, 8),
                "padding_mask": lengths_mask([3, 2], 3),
                "encoder_padding_mask": lengths_mask([4, 1], 4),
            },
            expected_output_shape=(2, 3, 8),
            static_weights=KEY_BIAS,
            tolerance=1e-4,
        )

    def test_decoder_only_layer_contract_with_padding(self):
        self.run_layer_test(
            layers.TransformerDecoderBlock,
            init_kwargs={"num_heads": 2, "intermediate_dim": 8, "seed": 4},
            input_data={
                "inputs": random(2, 3, 8),
                "padding_mask": lengths_mask([3, 2], 3),
            },
            expected_output_shape=(2, 3, 8),
            static_weights=KEY_BIAS,
            tolerance=1e-4,
            # The SavedModel path is the encoder-decoder test's; this one
            # checks the decoder-only config, saving and padding contract.
            run_export_check=False,
        )


@pytest.mark.parametrize("norm_first", [False, True])
def test_matches_numpy_reference(norm_first):
    layer = block(norm_first=norm_first)
    x, memory = random(2, 4, 8), random(2, 5, 8)
    mask, memory_mask = lengths_mask([4, 3], 4), lengths_mask([5, 2], 5)
    actual = to_numpy(
        layer(x, memory, padding_mask=mask, encoder_padding_mask=memory_mask)
    )
    names = [w.path.split("/", 1)[1] for w in layer.weights]
    assert names[18] == "cross_attention_norm/gamma"
    assert names[-2:] == ["feedforward_norm/gamma", "feedforward_norm/beta"]
    expected = numpy_transformer_decoder_block(
        np.float64(x),
        layer.get_weights(),
        pairwise(mask, mask) & causal(4),
        np.float64(memory),
        pairwise(mask, memory_mask),
        norm_first,
    )
    np.testing.assert_allclose(actual[mask], expected[mask], atol=1e-4)


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_only_matches_numpy_reference(norm_first):
    layer = block(norm_first=norm_first)
    x = random(2, 5, 8)
    mask = lengths_mask([5, 3], 5)
    actual = to_numpy(layer(x, padding_mask=mask))
    expected = numpy_transformer_decoder_block(
        np.float64(x),
        layer.get_weights(),
        pairwise(mask, mask) & causal(5),
        norm_first=norm_first,
    )
    np.testing.assert_allclose(actual[mask], expected[mask], atol=1e-4)


def test_decoder_only_has_no_cross_attention_weights():
    built = block()
    built.build((None, 4, 8))
    called = block()
    called(random(2, 4, 8))
    with_encoder = block()
    with_encoder(random(2, 4, 8), random(2, 3, 8))
    for layer in (built, called):
        assert layer.cross_attention is None
        paths = [w.path for w in layer.weights]
        assert len(paths) == 16
        assert not [p for p in paths if "cross_attention" in p]
    cross = [
        w.path for w in with_encoder.weights if "cross_attention" in w.path
    ]
    assert len(cross) == 10
    assert len(with_encoder.weights) == 26


def test_mode_mismatches_are_clear_errors():
    x, memory = random(1, 2, 8), random(1, 3, 8)
    decoder_only = block()
    decoder_only(x)
    with pytest.raises(ValueError, match=r"encoder_outputs with shape \(1, "):
        decoder_only(x, memory)
    with pytest.raises(ValueError, match="encoder_padding_mask with shape"):
        decoder_only(x, encoder_padding_mask=np.ones((1, 3), bool))
    with pytest.raises(ValueError, match="decoder-only"):
        decoder_only.compute_cross_attention_cache(memory)
    encoder_decoder = block()
    encoder_decoder(x, memory)
    with pytest.raises(ValueError, match="Received: encoder_outputs=None"):
        encoder_decoder(x)
    with pytest.raises(ValueError, match="Received: cache_update_index=None"):
        encoder_decoder(
            x[:, :1],
            memory,
            self_attention_cache=np.zeros((1, 2, 4, 2, 4), "float32"),
        )
    # The same errors in a functional model.
    symbolic = keras.Input((2, 8))
    with pytest.raises(ValueError, match="Received: encoder_outputs=None"):
        encoder_decoder(symbolic)


@pytest.mark.parametrize("norm_first", [False, True])
def test_cached_steps_equal_full_decoding(norm_first):
    layer = block(intermediate_dim=8, norm_first=norm_first)
    x, memory = random(2, 5, 8), random(2, 6, 8)
    memory_mask = lengths_mask([6, 3], 6)
    full = to_numpy(layer(x, memory, encoder_padding_mask=memory_mask))
    cross = layer.compute_cross_attention_cache(memory)
    cache = np.zeros((2, 2, 5, 2, 4), "float32")
    steps = []
    for t in range(5):
        out, cache = layer(
            x[:, t : t + 1],
            encoder_padding_mask=memory_mask,
            self_attention_cache=cache,
            cross_attention_cache=cross,
            cache_update_index=t,
        )
        steps.append(to_numpy(out))
    np.testing.assert_allclose(np.concatenate(steps, 1), full, atol=1e-5)


def test_decoder_only_cache_with_left_padding_equals_full_decoding():
    # Left padding puts padded keys before real queries. With a cache the
    # padding mask covers the cache slots (B, L), as in keras-hub.
    layer = block()
    x = random(2, 6, 8)
    mask = ~lengths_mask([0, 2], 6)  # row 1: two padded tokens first
    full = to_numpy(layer(x, padding_mask=mask))
    unmasked = to_numpy(layer(x))
    assert not np.allclose(full[1, 2:], unmasked[1, 2:], atol=1e-3)
    cache = np.zeros((2, 2, 6, 2, 4), "float32")
    # A prefill of three tokens, then one token at a time.
    out, cache = layer(
        x[:, :3],
        padding_mask=mask,
        self_attention_cache=cache,
        cache_update_index=0,
    )
    steps = [to_numpy(out)]
    for t in range(3, 6):
        out, cache = layer(
            x[:, t : t + 1],
            padding_mask=mask,
            self_attention_cache=cache,
            cache_update_index=t,
        )
        steps.append(to_numpy(out))
    cached = np.concatenate(steps, 1)
    np.testing.assert_allclose(cached[mask], full[mask], atol=1e-5)
    with pytest.raises(ValueError, match=r"padding_mask with shape \(2, 1\)"):
        layer(
            x[:, :1],
            padding_mask=mask[:, :1],
            self_attention_cache=cache,
            cache_update_index=0,
        )


def test_keras_mask_of_new_tokens_enters_their_cache_slots():
    layer = block()
    ids = np.array([[3, 4, 5, 6], [3, 4, 0, 0]], "int32")
    embed = keras.layers.Embedding(10, 8, mask_zero=True)
    full = to_numpy(layer(embed(ids)))
    cache = np.zeros((2, 2, 4, 2, 4), "float32")
    steps = []
    for t in range(4):
        out, cache = layer(
            embed(ids[:, t : t + 1]),
            self_attention_cache=cache,
            cache_update_index=t,
        )
        steps.append(to_numpy(out))
    cached = np.concatenate(steps, 1)
    real = ids != 0
    np.testing.assert_allclose(cached[real], full[real], atol=1e-5)
    # Padded new tokens are padded queries: zero attention output, as in
    # the full call.
    np.testing.assert_allclose(cached[~real], full[~real], atol=1e-5)


def test_outputs_never_depend_on_later_targets():
    layer = block(intermediate_dim=8)
    x, memory = random(1, 5, 8), random(1, 3, 8)
    before = to_numpy(layer(x, memory))
    changed = x.copy()
    changed[:, 3:] += 5.0
    after = to_numpy(layer(changed, memory))
    np.testing.assert_allclose(after[:, :3], before[:, :3], atol=1e-5)
    assert not np.allclose(after[:, 3:], before[:, 3:])


@pytest.mark.parametrize("with_encoder", [False, True])
def test_use_causal_mask_false_attends_to_later_targets(with_encoder):
    layer = block()
    x, memory = random(2, 4, 8), random(2, 3, 8)
    mask = lengths_mask([4, 3], 4)
    args = (x, memory) if with_encoder else (x,)
    actual = to_numpy(layer(*args, padding_mask=mask, use_causal_mask=False))
    expected = numpy_transformer_decoder_block(
        np.float64(x),
        layer.get_weights(),
        pairwise(mask, mask),
        np.float64(memory) if with_encoder else None,
        pairwise(mask, np.ones((2, 3), bool)),
    )
    np.testing.assert_allclose(actual[mask], expected[mask], atol=1e-4)
    causal_output = to_numpy(layer(*args, padding_mask=mask))
    assert not np.allclose(actual[:, :3], causal_output[:, :3], atol=1e-3)
    # The default is causal.
    default = to_numpy(layer(*args, padding_mask=mask, use_causal_mask=True))
    np.testing.assert_array_equal(default, causal_output)


def test_attention_masks_are_merged_with_padding_and_causality():
    layer = block()
    x, memory = random(2, 5, 8), random(2, 4, 8)
    mask = lengths_mask([5, 4], 5)
    memory_mask = lengths_mask([4, 3], 4)
    self_pattern = RNG.random((2, 5, 5)) < 0.7
    self_pattern[:, np.arange(5), np.arange(5)] = True  # keep a key per row
    cross_pattern = RNG.random((2, 5, 4)) < 0.6
    cross_pattern[:, :, 0] = True
    actual = to_numpy(
        layer(
            x,
            memory,
            padding_mask=mask,
            attention_mask=self_pattern,
            encoder_padding_mask=memory_mask,
            encoder_attention_mask=cross_pattern,
        )
    )
    expected = numpy_transformer_decoder_block(
        np.float64(x),
        layer.get_weights(),
        pairwise(mask, mask) & causal(5) & self_pattern,
        np.float64(memory),
        pairwise(mask, memory_mask) & cross_pattern,
    )
    np.testing.assert_allclose(actual[mask], expected[mask], atol=1e-4)
    without = to_numpy(
        layer(x, memory, padding_mask=mask, encoder_padding_mask=memory_mask)
    )
    assert not np.allclose(actual[mask], without[mask], atol=1e-3)


def test_decoder_only_attention_mask():
    layer = block()
    x = random(2, 5, 8)
    pattern = RNG.random((2, 5, 5)) < 0.6
    pattern[:, :, 0] = True
    actual = to_numpy(layer(x, attention_mask=pattern))
    expected = numpy_transformer_decoder_block(
        np.float64(x), layer.get_weights(), causal(5) & pattern
    )
    np.testing.assert_allclose(actual, expected, atol=1e-4)


def test_bad_attention_mask_shapes_name_the_argument():
    layer = block()
    x, memory = random(2, 5, 8), random(2, 4, 8)
    with pytest.raises(ValueError, match=r"attention_mask with shape \(2, 5"):
        layer(x, memory, attention_mask=np.ones((2, 5, 4), bool))
    with pytest.raises(
        ValueError, match=r"encoder_attention_mask with shape \(2, 5, 5\)"
    ):
        layer(x, memory, encoder_attention_mask=np.ones((2, 5, 5), bool))


@pytest.mark.parametrize("with_encoder", [False, True])
def test_implicit_keras_masks_merge_with_explicit_ones(with_encoder):
    """Embedding masks (mask_zero) AND explicit masks == explicit AND."""
    layer = block()
    # Zeros before real tokens: causality alone does not hide them.
    target_ids = np.array([[3, 0, 5, 6, 0], [0, 4, 5, 0, 7]], "int32")
    source_ids = np.array([[3, 4, 5, 0], [0, 4, 5, 6]], "int32")
    embed = keras.layers.Embedding(10, 8, mask_zero=True)
    explicit = lengths_mask([5, 5], 5)
    explicit[0, 1] = False  # a position the Keras mask keeps
    encoder_explicit = lengths_mask([4, 2], 4)
    target, source = embed(target_ids), embed(source_ids)
    plain_target = ops.convert_to_tensor(ops.convert_to_numpy(target))
    plain_source = ops.convert_to_tensor(ops.convert_to_numpy(source))
    assert keras_mask(target) is not None and keras_mask(plain_target) is None
    implicit, encoder_implicit = target_ids != 0, source_ids != 0
    if with_encoder:
        merged = layer(
            target,
            source,
            padding_mask=explicit,
            encoder_padding_mask=encoder_explicit,
        )
        reference = layer(
            plain_target,
            plain_source,
            padding_mask=explicit & implicit,
            encoder_padding_mask=encoder_explicit & encoder_implicit,
        )
        explicit_only = layer(
            plain_target,
            plain_source,
            padding_mask=explicit,
            encoder_padding_mask=encoder_explicit,
        )
    else:
        merged = layer(target, padding_mask=explicit)
        reference = layer(plain_target, padding_mask=explicit & implicit)
        explicit_only = layer(plain_target, padding_mask=explicit)
    np.testing.assert_allclose(to_numpy(merged), to_numpy(reference), atol=1e-6)
    keep = explicit & implicit
    assert not np.allclose(
        to_numpy(merged)[keep], to_numpy(explicit_only)[keep], atol=1e-3
    )
    # The Keras mask alone is read too, and the output carries it on.
    alone = layer(target, source) if with_encoder else layer(target)
    reference = (
        layer(
            plain_target,
            plain_source,
            padding_mask=implicit,
            encoder_padding_mask=encoder_implicit,
        )
        if with_encoder
        else layer(plain_target, padding_mask=implicit)
    )
    np.testing.assert_allclose(to_numpy(alone), to_numpy(reference), atol=1e-6)
    np.testing.assert_array_equal(
        ops.convert_to_numpy(keras_mask(alone)), implicit
    )


def test_implicit_masks_in_a_functional_model():
    target_ids = keras.Input((None,), dtype="int32")
    source_ids = keras.Input((None,), dtype="int32")
    embed = keras.layers.Embedding(10, 8, mask_zero=True)
    layer = block()
    outputs = layer(embed(target_ids), embed(source_ids))
    model = keras.Model([target_ids, source_ids], outputs)
    targets = np.array([[3, 4, 5, 0], [3, 0, 0, 0]], "int32")
    sources = np.array([[3, 4, 0], [3, 4, 5]], "int32")
    actual = to_numpy(model([targets, sources]))
    expected = to_numpy(
        layer(
            embed(targets),
            embed(sources),
            padding_mask=targets != 0,
            encoder_padding_mask=sources != 0,
        )
    )
    np.testing.assert_allclose(actual, expected, atol=1e-6)
    appended = to_numpy(
        model(
            [
                np.pad(targets, ((0, 0), (0, 2))),
                np.pad(sources, ((0, 0), (0, 3))),
            ]
        )
    )
    real = targets != 0
    np.testing.assert_allclose(appended[:, :4][real], actual[real], atol=1e-5)


def _expected_structure(with_encoder, scores, cache):
    """Shapes of the returned values for T=3 new tokens, L=5, S=4, N=2."""
    if not (scores or cache):
        return (2, 3, 8)
    keys = 5 if cache else 3
    shapes = [(2, 3, 8)]
    if scores:
        shapes.append((2, 2, 3, keys))
        if with_encoder:
            shapes.append((2, 2, 3, 4))
    if cache:
        shapes.append((2, 2, 5, 2, 4))
    return shapes


@pytest.mark.parametrize("with_encoder", [False, True])
@pytest.mark.parametrize("scores", [False, True])
@pytest.mark.parametrize("cache", [False, True])
def test_return_structure(with_encoder, scores, cache):
    layer = block()
    x, memory = random(2, 3, 8), random(2, 4, 8)
    kwargs = {"return_attention_scores": scores}
    if cache:
        kwargs["self_attention_cache"] = np.zeros((2, 2, 5, 2, 4), "float32")
        kwargs["cache_update_index"] = 0
    args = (x, memory) if with_encoder else (x,)
    result = layer(*args, **kwargs)
    expected = _expected_structure(with_encoder, scores, cache)
    if isinstance(expected, tuple):
        assert not isinstance(result, (tuple, list))
        assert tuple(ops.shape(result)) == expected
    else:
        assert isinstance(result, tuple)
        assert [tuple(ops.shape(r)) for r in result] == expected
    # The symbolic call returns the same structure.
    symbolic = [keras.Input((3, 8), batch_size=2)]
    if with_encoder:
        symbolic.append(keras.Input((4, 8), batch_size=2))
    spec = layer(*symbolic, **kwargs)
    if isinstance(expected, tuple):
        assert tuple(spec.shape) == expected
    else:
        assert [tuple(s.shape) for s in spec] == expected


def test_attention_scores_are_causal_and_skip_padded_sources():
    layer = block(intermediate_dim=8)
    memory_mask = lengths_mask([3], 5)
    _, self_scores, cross_scores = layer(
        random(1, 4, 8),
        random(1, 5, 8),
        encoder_padding_mask=memory_mask,
        return_attention_scores=True,
    )
    self_scores, cross_scores = to_numpy(self_scores), to_numpy(cross_scores)
    assert np.all(self_scores[..., np.triu(np.ones((4, 4), bool), 1)] == 0)
    assert np.all(cross_scores[..., 3:] == 0.0)
    np.testing.assert_allclose(cross_scores.sum(-1), 1.0, atol=1e-5)


def test_constructor_is_keyword_only():
    # keras-hub's order is (intermediate_dim, num_heads): a positional port
    # must fail rather than build other shapes.
    with pytest.raises(TypeError):
        layers.TransformerDecoderBlock(16, 2)
    with pytest.raises(TypeError):
        layers.TransformerDecoderBlock(2, intermediate_dim=16)
    layer = layers.TransformerDecoderBlock(num_heads=2, intermediate_dim=16)
    assert (layer.num_heads, layer.intermediate_dim) == (2, 16)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("with_encoder", [False, True])
def test_keras_hub_weights_give_equal_outputs(norm_first, with_encoder):
    theirs = keras_hub.layers.TransformerDecoder(
        intermediate_dim=16,
        num_heads=2,
        normalize_first=norm_first,
        layer_norm_epsilon=1e-6,
    )
    ours = block(intermediate_dim=16, norm_first=norm_first)
    shapes = [(None, 5, 8)] + ([(None, 4, 8)] if with_encoder else [])
    theirs.build(*shapes)
    ours.build(*shapes)
    # Perturb keras-hub's weights so that norms and biases matter too.
    theirs.set_weights(
        [w + 0.1 * random(*w.shape) for w in theirs.get_weights()]
    )
    ours.set_weights(theirs.get_weights())
    x, memory = random(2, 5, 8), random(2, 4, 8)
    mask, memory_mask = lengths_mask([5, 3], 5), lengths_mask([4, 2], 4)
    if with_encoder:
        expected = theirs(
            x,
            memory,
            decoder_padding_mask=mask,
            encoder_padding_mask=memory_mask,
        )
        actual = ours(
            x, memory, padding_mask=mask, encoder_padding_mask=memory_mask
        )
    else:
        expected = theirs(x, decoder_padding_mask=mask)
        actual = ours(x, padding_mask=mask)
    # Real tokens only: keras-hub masks padded tokens as keys only.
    np.testing.assert_allclose(
        to_numpy(actual)[mask], to_numpy(expected)[mask], atol=1e-5
    )


def same_weight_decoders(norm_first, with_encoder):
    """keras-hub's `TransformerDecoder` and ours, holding the same weights."""
    theirs = keras_hub.layers.TransformerDecoder(
        intermediate_dim=16,
        num_heads=2,
        normalize_first=norm_first,
        layer_norm_epsilon=1e-6,
    )
    ours = block(intermediate_dim=16, norm_first=norm_first)
    shapes = [(None, 5, 8)] + ([(None, 4, 8)] if with_encoder else [])
    theirs.build(*shapes)
    ours.build(*shapes)
    theirs.set_weights(
        [w + 0.1 * random(*w.shape) for w in theirs.get_weights()]
    )
    ours.set_weights(theirs.get_weights())
    return ours, theirs


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("with_encoder", [False, True])
def test_keras_hub_cache_arguments_give_keras_hubs_outputs(
    norm_first, with_encoder
):
    # A keras-hub decoding loop, word for word, on both blocks: the first
    # step fills the cross-attention cache (`cross_attention_cache_update_
    # index=0`), the later ones reuse it (`None`).
    ours, theirs = same_weight_decoders(norm_first, with_encoder)
    assert ours.normalize_first == theirs.normalize_first == norm_first
    x, memory = random(2, 5, 8), random(2, 4, 8)
    caches = {}
    for name in ("ours", "theirs"):
        caches[name] = {"self_attention_cache": np.zeros((2, 2, 5, 2, 4))}
        if with_encoder:
            caches[name]["cross_attention_cache"] = np.zeros((2, 2, 4, 2, 4))
    args = (memory,) if with_encoder else ()
    for t in range(5):
        results = {}
        for name, layer in (("ours", ours), ("theirs", theirs)):
            kwargs = dict(caches[name], self_attention_cache_update_index=t)
            if with_encoder:
                kwargs["cross_attention_cache_update_index"] = (
                    0 if t == 0 else None
                )
            result = layer(x[:, t : t + 1], *args, **kwargs)
            assert len(result) == (3 if with_encoder else 2)
            results[name] = result
            caches[name]["self_attention_cache"] = result[1]
            if with_encoder:
                caches[name]["cross_attention_cache"] = result[2]
        for actual, expected in zip(results["ours"], results["theirs"]):
            np.testing.assert_allclose(
                to_numpy(actual), to_numpy(expected), atol=1e-5
            )


@pytest.mark.parametrize("with_encoder", [False, True])
def test_decode_step_equals_the_cached_call(with_encoder):
    # The named-argument step on heads-first pairs against the call on
    # stacked caches, with a padded source.
    layer = block(intermediate_dim=8)
    x, memory = random(2, 5, 8), random(2, 6, 8)
    memory_mask = lengths_mask([6, 3], 6) if with_encoder else None
    layer(x, memory) if with_encoder else layer(x)
    stacked = np.zeros((2, 2, 5, 2, 4), "float32")
    pair = keras_attention.ops.empty_cache(2, 2, 5, 4)
    kwargs, step_kwargs = {}, {}
    if with_encoder:
        kwargs = dict(
            encoder_padding_mask=memory_mask,
            cross_attention_cache=layer.compute_cross_attention_cache(memory),
        )
        step_kwargs = dict(
            encoder_padding_mask=memory_mask,
            cross_attention_cache=(
                layer.cross_attention.compute_key_value_cache(memory)
            ),
        )
    for t in range(5):
        expected, stacked = layer(
            x[:, t : t + 1],
            self_attention_cache=stacked,
            cache_update_index=t,
            **kwargs,
        )
        actual, pair = layer.decode_step(
            x[:, t : t + 1],
            self_attention_cache=pair,
            cache_update_index=t,
            **step_kwargs,
        )
        np.testing.assert_allclose(
            to_numpy(actual), to_numpy(expected), atol=1e-5
        )
    np.testing.assert_allclose(
        to_numpy(keras_attention.ops.to_stacked_cache(pair)),
        to_numpy(stacked),
        atol=1e-6,
    )


def test_both_index_names_at_once_is_a_clear_error():
    layer = block()
    x = random(1, 1, 8)
    layer(x)
    with pytest.raises(ValueError, match="not both"):
        layer(
            x,
            self_attention_cache=np.zeros((1, 2, 3, 2, 4), "float32"),
            cache_update_index=0,
            self_attention_cache_update_index=0,
        )
