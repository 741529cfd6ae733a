import numpy as np
import pytest
from keras import ops

from keras_attention import layers
from keras_attention.testing import LayerTestCase

RNG = np.random.default_rng(13)
# The samplers' decisions are discrete: no gradient reaches them from the
# output. They are trained on the returned log-probability by policy
# gradient (tests/models/resan_test.py shows them moving under fit).
SAMPLERS = tuple(
    f"{sampler}/{dense}/{weight}"
    for sampler in ("head_sampler", "dependent_sampler")
    for dense in ("context_dense", "keep_dense")
    for weight in ("kernel", "bias")
)


def numpy_reinforced_self_attention(
    x, mask, heads, deps, weights, direction, rule="authors"
):
    """Float64 reference given the selections; weights in layer order
    after the samplers: Wq, Wk, bk, Wf, bf.

    `rule="authors"` follows the authors' released code (resan/resa.py):
    a selected head with no allowed dependent gets a zero context (its
    masked softmax is zeroed), an unselected token the mean over the
    other real tokens (their pooling mask `t != s`), and a padded token
    zero. `rule="mean"`: all get the mean of all real tokens (release 0.1).
    """
    wq, wk, bk, wf, bf = (np.float64(w) for w in weights)
    n = x.shape[1]
    t, s = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    allowed = {"forward": s < t, "backward": s > t, None: s != t}[direction]
    allowed = allowed[None] & heads[:, :, None] & deps[:, None, :]
    logits = 5 * np.tanh(((x @ wq)[:, :, None] + (x @ wk + bk)[:, None]) / 5)
    logits = np.where(allowed[..., None], logits, -np.inf)
    peak = np.max(logits, axis=2, keepdims=True)
    peak = np.where(np.isfinite(peak), peak, 0.0)
    exp = np.where(allowed[..., None], np.exp(logits - peak), 0.0)
    probs = exp / np.maximum(exp.sum(2, keepdims=True), 1e-300)
    context = (probs * x[:, None]).sum(2)
    m = mask[..., None].astype(float)
    mean = (x * m).sum(1, keepdims=True) / np.maximum(
        m.sum(1, keepdims=True), 1
    )
    if rule == "mean":
        context = np.where(allowed.any(-1)[..., None], context, mean)
    else:
        others = np.zeros_like(x)
        for b in range(x.shape[0]):
            for t in range(n):
                pool = mask[b] & (np.arange(n) != t)
                if pool.any() and mask[b, t]:
                    others[b, t] = x[b, pool].mean(0)
        context = np.where(heads[..., None], context, others)
    gate = 1 / (1 + np.exp(-(np.concatenate([x, context], -1) @ wf + bf)))
    return gate * x + (1 - gate) * context


def gradient_of(function, x):
    """d sum(function(x)) / dx on the current backend, as NumPy."""
    import keras

    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        x = tf.constant(x)
        with tf.GradientTape() as tape:
            tape.watch(x)
            value = tf.reduce_sum(function(x))
        zero = tf.UnconnectedGradients.ZERO
        return tape.gradient(value, x, unconnected_gradients=zero).numpy()
    if backend == "jax":
        import jax

        return np.asarray(jax.grad(lambda v: function(v).sum())(x))
    import torch

    x = torch.tensor(x, requires_grad=True)
    value = function(x).sum()
    if value.requires_grad:
        value.backward()
    # No path from x: no gradient was written.
    return np.zeros(x.shape) if x.grad is None else x.grad.numpy()


def lengths_mask(lengths, length):
    return np.arange(length)[None, :] < np.asarray(lengths)[:, None]


def to_numpy(x):
    return np.asarray(ops.convert_to_numpy(ops.cast(x, "float32")))


def attention_weights(layer):
    return [to_numpy(w) for w in layer.weights[8:]]


class ReinforcedSelfAttentionTest(LayerTestCase):
    def test_layer_contract_with_padding(self):
        self.run_layer_test(
            layers.ReinforcedSelfAttention,
            init_kwargs={
                "direction": None,
                "sampler_hidden_dim": 3,
                "threshold": 0.45,
                "seed": 3,
            },
            input_data={
                "inputs": RNG.normal(size=(3, 8, 4)).astype("float32"),
                "mask": lengths_mask([8, 3, 8], 8),
            },
            expected_output_shape=(3, 8, 4),
            static_weights=SAMPLERS,
        )

    def test_matches_numpy_reference(self):
        x = RNG.normal(size=(3, 7, 4))
        mask = lengths_mask([7, 4, 1], 7)
        for direction, training, rule in (
            ("forward", False, "authors"),
            ("forward", True, "authors"),
            (None, True, "authors"),
            ("backward", True, "mean"),
            (None, False, "mean"),
        ):
            layer = layers.ReinforcedSelfAttention(
                direction=direction,
                threshold=0.4,
                seed=1,
                empty_context=rule,
            )
            out, heads, deps, _ = layer(
                x.astype("float32"),
                mask=mask,
                training=training,
                return_selections=True,
            )
            heads, deps = to_numpy(heads) > 0, to_numpy(deps) > 0
            assert not (heads | deps)[~mask].any()
            expected = numpy_reinforced_self_attention(
                x,
                mask,
                heads,
                deps,
                attention_weights(layer),
                direction,
                rule,
            )
            real = mask[..., None]
            np.testing.assert_allclose(
                to_numpy(out) * real, expected * real, atol=1e-5
            )
            if rule == "authors":
                # Padded rows too: a zero context, as the authors' code.
                np.testing.assert_allclose(to_numpy(out), expected, atol=1e-5)

    def test_capacity_gathers_the_same_result(self):
        x = RNG.normal(size=(2, 8, 4)).astype("float32")
        full = layers.ReinforcedSelfAttention(threshold=0.6, seed=0)
        out, heads, deps, log_prob = full(x, return_selections=True)
        count = int(
            max(to_numpy(heads).sum(1).max(), to_numpy(deps).sum(1).max())
        )
        capacity = max(count, 1) / 8
        sparse = layers.ReinforcedSelfAttention(
            threshold=0.6, capacity=capacity, block_size=2, seed=0
        )
        sparse.build(x.shape)
        sparse.set_weights(full.get_weights())
        result = sparse(x, return_selections=True)
        for a, b in zip(result, (out, heads, deps, log_prob)):
            np.testing.assert_allclose(to_numpy(a), to_numpy(b), atol=1e-5)

    def test_capacity_drops_selections_beyond_it(self):
        x = RNG.normal(size=(2, 8, 4)).astype("float32")
        layer = layers.ReinforcedSelfAttention(threshold=0.01, capacity=0.25)
        _, heads, deps, _ = layer(x, return_selections=True)
        assert to_numpy(heads).sum(1).max() <= 2
        assert to_numpy(deps).sum(1).max() <= 2

    def test_nothing_selected_gives_the_mean_in_half_precision(self):
        x = (20 * RNG.normal(size=(3, 5, 4))).astype("float32")
        mask = lengths_mask([5, 1, 0], 5)
        for policy in ("mixed_float16", "mixed_bfloat16"):
            layer = layers.ReinforcedSelfAttention(
                threshold=0.9,
                use_fusion_gate=False,
                kernel_initializer="zeros",
                empty_context="mean",
                dtype=policy,
            )
            out, heads, _, log_prob = layer(
                x, mask=mask, return_selections=True
            )
            assert not to_numpy(heads).any()
            out = to_numpy(out)
            assert np.all(np.isfinite(out)) and np.all(
                np.isfinite(to_numpy(log_prob))
            )
            np.testing.assert_allclose(
                out[0],
                np.broadcast_to(x[0].mean(0), (5, 4)),
                rtol=0.02,
                atol=0.1,
            )
            np.testing.assert_array_equal(out[2], 0.0)

    def test_authors_corner_rules(self):
        # Every token a head and a dependent, forward: the first token is a
        # head with nothing before it (zero context); with nothing
        # selected, every token takes the mean of the other real tokens.
        x = RNG.normal(size=(2, 4, 3)).astype("float32")
        mask = lengths_mask([4, 3], 4)
        for threshold, expected_first in ((0.01, "zero"), (0.99, "others")):
            layer = layers.ReinforcedSelfAttention(
                direction="forward",
                threshold=threshold,
                use_fusion_gate=False,
                kernel_initializer="zeros",
            )
            out, heads, _, _ = layer(x, mask=mask, return_selections=True)
            out = to_numpy(out)
            if expected_first == "zero":
                assert to_numpy(heads)[mask].all()
                np.testing.assert_array_equal(out[:, 0], 0.0)
            else:
                assert not to_numpy(heads).any()
                np.testing.assert_allclose(
                    out[1, 0], x[1, 1:3].mean(0), atol=1e-6
                )
                np.testing.assert_allclose(
                    out[0, 2], x[0, [0, 1, 3]].mean(0), atol=1e-6
                )

    def test_files_without_empty_context_keep_the_mean_rule(self):
        layer = layers.ReinforcedSelfAttention(direction="forward", seed=2)
        config = layer.get_config()
        assert config["empty_context"] == "authors"
        del config["empty_context"]
        revived = layers.ReinforcedSelfAttention.from_config(config)
        assert revived.empty_context == "mean"

    def test_log_prob_sends_no_gradient_upstream(self):
        x = RNG.normal(size=(2, 5, 4)).astype("float32")
        layer = layers.ReinforcedSelfAttention(seed=4)
        upstream = gradient_of(
            lambda inputs: layer(inputs, return_selections=True)[3],
            x,
        )
        np.testing.assert_array_equal(upstream, 0.0)
        output = gradient_of(layer, x)
        assert np.abs(output).max() > 0.0

    def test_attention_matrix_is_zero_outside_the_selection(self):
        x = RNG.normal(size=(2, 6, 4)).astype("float32")
        layer = layers.ReinforcedSelfAttention(direction="backward", seed=5)
        _, heads, deps, _, scores = layer(
            x,
            training=True,
            return_selections=True,
            return_attention_scores=True,
        )
        heads, deps, scores = (
            to_numpy(heads) > 0,
            to_numpy(deps) > 0,
            to_numpy(scores),
        )
        assert scores.shape == (2, 6, 6)
        allowed = (
            heads[:, :, None]
            & deps[:, None, :]
            & np.triu(np.ones((6, 6), bool), 1)
        )
        assert np.all(scores[~allowed] == 0.0)
        rows = allowed.any(-1)
        np.testing.assert_allclose(scores.sum(-1)[rows], 1.0, atol=1e-5)

    def test_bad_arguments_are_rejected(self):
        with pytest.raises(ValueError, match="Received: direction='left'"):
            layers.ReinforcedSelfAttention(direction="left")
        with pytest.raises(ValueError, match="Received: capacity=0"):
            layers.ReinforcedSelfAttention(capacity=0)
        layer = layers.ReinforcedSelfAttention()
        layer(np.zeros((1, 3, 4), "float32"))
        with pytest.raises(ValueError, match=r"shape \(1, 3, 6\)"):
            layer(np.zeros((1, 3, 6), "float32"))


def test_figure_shows_selection_and_attention_matrix():
    from keras_attention.visualization import plot_reinforced_attention

    layer = layers.ReinforcedSelfAttention(threshold=0.4, seed=2)
    x = RNG.normal(size=(1, 6, 4)).astype("float32")
    tokens = ["a", "dog", "runs", "in", "the", "park"]
    figure = plot_reinforced_attention(layer, x, tokens, title="example")
    top, bottom = figure.axes[:2]
    _, heads, deps, _ = layer(x, return_selections=True)
    np.testing.assert_array_equal(
        top.images[0].get_array(),
        np.stack([to_numpy(heads)[0], to_numpy(deps)[0]]),
    )
    assert bottom.images[0].get_array().shape == (6, 6)
    assert [t.get_text() for t in bottom.get_xticklabels()] == tokens
    with pytest.raises(ValueError, match="has 7 tokens"):
        plot_reinforced_attention(layer, x, tokens + ["."])


def test_figure_draws_selections_made_outside_the_layer():
    # The ReSAN encoder's directions own no samplers; the figure takes the
    # shared samplers' selections.
    from keras_attention.visualization import plot_reinforced_attention

    layer = layers.ReinforcedSelfAttention(
        direction="forward", use_samplers=False
    )
    x = RNG.normal(size=(1, 5, 4)).astype("float32")
    heads = np.array([[True, False, True, True, False]])
    deps = np.array([True, True, False, True, True])
    figure = plot_reinforced_attention(
        layer, x, list("abcde"), heads=heads, dependents=deps
    )
    top, bottom = figure.axes[:2]
    np.testing.assert_array_equal(
        top.images[0].get_array(), np.stack([heads[0], deps]).astype(float)
    )
    scores = bottom.images[0].get_array()
    # Rows of unselected heads and columns of unselected dependents are
    # empty; the forward direction leaves the diagonal and above empty.
    assert np.all(scores[[1, 4]] == 0.0) and np.all(scores[:, 2] == 0.0)
    assert np.all(np.triu(scores) == 0.0)
    np.testing.assert_allclose(scores[3].sum(), 1.0, rtol=1e-5)
    with pytest.raises(ValueError, match="Pass both `heads` and"):
        plot_reinforced_attention(layer, x, list("abcde"), heads=heads)
