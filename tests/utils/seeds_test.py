import keras
import numpy as np
import pytest

from keras_attention import layers
from keras_attention import models
from keras_attention.utils.seeds import sub_seed


def test_sub_seed_is_deterministic_and_distinct_per_name():
    names = [("dropout",), ("sampler",), ("block", 0), ("block", 1)]
    seeds = [sub_seed(7, *n) for n in names]
    assert seeds == [sub_seed(7, *n) for n in names]
    assert len(set(seeds)) == len(seeds)
    assert sub_seed(7, "dropout") != sub_seed(8, "dropout")
    assert all(0 <= s < 2**31 - 1 for s in seeds)


def test_sub_seed_keeps_none_and_names_bad_seeds():
    assert sub_seed(None, "dropout") is None
    with pytest.raises(ValueError, match="seed=1.5"):
        sub_seed(1.5, "dropout")
    with pytest.raises(ValueError, match="names"):
        sub_seed(3)


def draw(seed, size):
    generator = keras.random.SeedGenerator(seed)
    return keras.ops.convert_to_numpy(
        keras.random.uniform((size,), seed=generator)
    )


def longest_shared_run(a, b):
    """The longest run of equal values of `a` and `b` at any relative shift.

    A stream equal to, a prefix of, or a slice of the other shares a run as
    long as itself; unrelated streams share none longer than a value or two.
    """
    longest = 0
    for shift in range(-len(b) + 1, len(a)):
        x = a[max(shift, 0) :]
        y = b[max(-shift, 0) :]
        size = min(len(x), len(y))
        equal = np.concatenate([[False], x[:size] == y[:size], [False]])
        edges = np.flatnonzero(np.diff(equal.astype("int8")))
        if len(edges):
            longest = max(longest, int(np.max(edges[1::2] - edges[::2])))
    return longest


def test_the_run_detector_finds_equal_streams():
    # The control: one seed for two consumers gives the same stream.
    assert longest_shared_run(draw(11, 512), draw(11, 512)) == 512


@pytest.mark.parametrize("seed", [0, 1, 1337])
def test_sub_seeded_consumers_draw_unrelated_streams(seed):
    # Different sizes too: on jax a smaller draw from one seed can be a
    # slice of a larger one (a sampler's uniforms inside dropout noise).
    for size_a, size_b in [(512, 512), (2048, 256), (256, 2048)]:
        a = draw(sub_seed(seed, "a"), size_a)
        b = draw(sub_seed(seed, "b"), size_b)
        assert longest_shared_run(a, b) <= 2


def test_encoder_block_dropouts_draw_different_masks():
    block = layers.TransformerEncoderBlock(
        num_heads=2, intermediate_dim=8, dropout=0.5, seed=3
    )
    block.build((2, 16, 8))
    ones = keras.ops.ones((2, 16, 8))
    residual = keras.ops.convert_to_numpy(
        block.self_attention_dropout(ones, training=True)
    )
    feedforward = keras.ops.convert_to_numpy(
        block.feedforward_dropout(ones, training=True)
    )
    # Both drop about half, but not the same half.
    assert 0.3 < np.mean(residual == 0) < 0.7
    assert 0.3 < np.mean(feedforward == 0) < 0.7
    assert np.mean((residual == 0) == (feedforward == 0)) < 0.7


def random_seeds(model):
    """The seeds of every random sublayer of a Transformer model."""
    seeds = [
        getattr(model, name).seed
        for name in (
            "encoder_embedding_dropout",
            "decoder_embedding_dropout",
            "embedding_dropout",
        )
        if hasattr(model, name)
    ]
    for block in getattr(model, "encoder_blocks", []) + model.decoder_blocks:
        for name in (
            "self_attention",
            "self_attention_dropout",
            "cross_attention",
            "cross_attention_dropout",
            "feedforward_dropout",
        ):
            sublayer = getattr(block, name, None)
            if sublayer is not None:
                seeds.append(sublayer.seed)
    return seeds


@pytest.mark.parametrize(
    "model_class", [models.Transformer, models.TransformerLanguageModel]
)
def test_transformer_models_seed_every_consumer_apart(model_class):
    model = model_class(
        vocabulary_size=11,
        num_layers=2,
        hidden_dim=8,
        num_heads=2,
        intermediate_dim=8,
        seed=5,
    )
    seeds = random_seeds(model)
    assert None not in seeds
    assert len(set(seeds)) == len(seeds)
