"""Length-bucketed batches: every example once per epoch, cut to its bucket,
the order a function of (seed, epoch), and `model.fit` on every backend."""

import keras
import numpy as np
import pytest

from keras_attention.data.batching import BucketedBatches
from keras_attention.data.batching import padded_lengths
from keras_attention.data.batching import predict_in_buckets


def make_pairs(num_examples=50, length=20, seed=0):
    rng = np.random.default_rng(seed)
    lengths_a = rng.integers(1, length + 1, size=num_examples)
    lengths_b = rng.integers(1, length + 1, size=num_examples)
    a = np.zeros((num_examples, length), "int32")
    b = np.zeros((num_examples, length), "int32")
    for i in range(num_examples):
        a[i, : lengths_a[i]] = rng.integers(1, 30, size=lengths_a[i])
        b[i, : lengths_b[i]] = rng.integers(1, 30, size=lengths_b[i])
    targets = np.arange(num_examples)
    return {"premise": a, "hypothesis": b}, targets


def test_padded_lengths_count_to_the_last_real_token():
    ids = np.array([[4, 0, 5, 0], [0, 0, 0, 0], [1, 2, 3, 4], [7, 0, 0, 0]])
    np.testing.assert_array_equal(padded_lengths(ids), [3, 0, 4, 1])


def test_every_example_appears_once_per_epoch_and_is_never_cut():
    inputs, targets = make_pairs()
    batches = BucketedBatches(inputs, targets, batch_size=8, width_step=4)
    for epoch in range(3):
        seen = []
        for rows, width in batches.batches(epoch):
            x, y = batches.batch(rows, width)
            np.testing.assert_array_equal(y, targets[rows])
            for name, ids in inputs.items():
                assert x[name].shape == (len(rows), width)
                # Nothing beyond the width is a real token.
                assert not ids[rows, width:].any()
                np.testing.assert_array_equal(x[name], ids[rows, :width])
            # Each batch is as narrow as its bucket allows.
            assert width % 4 == 0 or width == 20
            longest = max(
                padded_lengths(ids[rows]).max() for ids in inputs.values()
            )
            assert width - 4 < longest <= width
            seen.extend(rows.tolist())
        assert sorted(seen) == list(range(len(targets)))


def test_order_depends_only_on_seed_and_epoch():
    inputs, targets = make_pairs()
    first = BucketedBatches(inputs, targets, batch_size=8, seed=3)
    second = BucketedBatches(inputs, targets, batch_size=8, seed=3)

    def order(batches, epoch):
        return [rows.tolist() for rows, _ in batches.batches(epoch)]

    assert order(first, 2) == order(second, 2)
    assert order(first, 1) != order(first, 2)
    other_seed = BucketedBatches(inputs, targets, batch_size=8, seed=4)
    assert order(first, 1) != order(other_seed, 1)
    unshuffled = BucketedBatches(inputs, targets, batch_size=8, shuffle=False)
    assert order(unshuffled, 0) == order(unshuffled, 5)


def test_drop_remainder_keeps_only_full_batches():
    inputs, targets = make_pairs()
    batches = BucketedBatches(
        inputs, targets, batch_size=8, width_step=4, drop_remainder=True
    )
    sizes = [len(rows) for rows, _ in batches.batches(0)]
    assert sizes and set(sizes) == {8}
    assert len(batches) == len(sizes)


def test_stream_starts_at_the_given_epoch():
    inputs, targets = make_pairs(num_examples=30, length=12)
    batches = BucketedBatches(inputs, targets, batch_size=8, width_step=4)
    steps = len(batches)
    stream = iter(batches.as_dataset(epochs=None, initial_epoch=2))
    for epoch in (2, 3):
        for rows, width in batches.batches(epoch):
            x, y = next(stream)
            np.testing.assert_array_equal(y.numpy(), targets[rows])
            assert x["premise"].shape == (len(rows), width)
    finite = list(batches.as_dataset(epochs=2))
    assert len(finite) == 2 * steps


def test_fit_on_the_stream_takes_one_step_per_batch():
    inputs, targets = make_pairs(num_examples=24, length=12)
    targets = (targets % 3).astype("int32")
    batches = BucketedBatches(inputs, targets, batch_size=8, width_step=4)
    assert len(batches.widths) > 1

    premise = keras.Input((None,), dtype="int32", name="premise")
    hypothesis = keras.Input((None,), dtype="int32", name="hypothesis")
    embed = keras.layers.Embedding(30, 4, mask_zero=True)
    pooled = [
        keras.layers.GlobalAveragePooling1D()(embed(x))
        for x in (premise, hypothesis)
    ]
    outputs = keras.layers.Dense(3, activation="softmax")(
        keras.layers.Concatenate()(pooled)
    )
    model = keras.Model({"premise": premise, "hypothesis": hypothesis}, outputs)
    model.compile("adam", "sparse_categorical_crossentropy")
    history = model.fit(
        batches.as_dataset(epochs=None),
        steps_per_epoch=len(batches),
        epochs=3,
        verbose=0,
    )
    assert np.all(np.isfinite(history.history["loss"]))
    assert int(model.optimizer.iterations) == 3 * len(batches)
    # A finite pass evaluates every example once.
    results = model.evaluate(batches.as_dataset(), verbose=0, return_dict=True)
    assert np.isfinite(results["loss"])


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"batch_size": 0}, "batch_size=0"),
        ({"batch_size": 2.5}, "batch_size=2.5"),
        ({"width_step": 0}, "width_step=0"),
        ({"targets": np.zeros(3)}, "targets with 3 rows"),
        ({"tokens_per_batch": 0}, "tokens_per_batch=0"),
        ({"widths": [4, 8]}, "widest bucket"),
        ({"widths": [0, 20]}, "widths=0"),
        ({"cut_targets": True}, "cut_targets"),
    ],
)
def test_bad_arguments_are_named(kwargs, message):
    inputs, targets = make_pairs(num_examples=10)
    kwargs = {"targets": targets, **kwargs}
    with pytest.raises((ValueError, TypeError), match=message):
        BucketedBatches(inputs, **kwargs)


def test_inputs_of_different_shapes_are_rejected():
    with pytest.raises(ValueError, match="same shape"):
        BucketedBatches(
            {"a": np.ones((4, 5), "int32"), "b": np.ones((4, 6), "int32")}
        )
    with pytest.raises(ValueError, match="2D integer array"):
        BucketedBatches({"a": np.ones((4, 5), "float32")})


def test_given_widths_take_the_narrowest_bucket_that_holds_each_example():
    inputs, targets = make_pairs(num_examples=60)
    batches = BucketedBatches(
        inputs, targets, batch_size=4, widths=[7, 11, 20], shuffle=False
    )
    longest = np.maximum(
        padded_lengths(inputs["premise"]), padded_lengths(inputs["hypothesis"])
    )
    expected = np.where(longest <= 7, 7, np.where(longest <= 11, 11, 20))
    np.testing.assert_array_equal(batches.example_widths, expected)
    assert set(batches.widths) <= {7, 11, 20}


def test_a_token_budget_sets_each_buckets_batch_size():
    inputs, targets = make_pairs(num_examples=80)
    batches = BucketedBatches(
        inputs,
        targets,
        widths=[5, 10, 20],
        tokens_per_batch=40,
        drop_remainder=True,
    )
    sizes = {}
    for rows, width in batches.batches(epoch=1):
        sizes.setdefault(width, set()).add(len(rows))
    assert sizes and all(
        found == {40 // width} for width, found in sizes.items()
    ), sizes


def test_sequence_targets_are_cut_with_the_inputs():
    inputs, _ = make_pairs(num_examples=20)
    labels = inputs["hypothesis"].copy()
    batches = BucketedBatches(
        inputs, labels, batch_size=4, width_step=4, cut_targets=True
    )
    for rows, width in batches.batches(epoch=0):
        x, y = batches.batch(rows, width)
        np.testing.assert_array_equal(y, labels[rows, :width])
    x, y = next(iter(batches.as_dataset()))
    assert y.shape == x["premise"].shape


def test_new_order_per_pass_moves_on_one_epoch_per_pass():
    inputs, targets = make_pairs(num_examples=30, length=12)
    batches = BucketedBatches(inputs, targets, batch_size=8, width_step=4)
    dataset = batches.as_dataset(epochs=1, new_order_per_pass=True)

    def labels(stream):
        return [y.numpy().tolist() for _, y in stream]

    def epoch(e):
        return [targets[rows].tolist() for rows, _ in batches.batches(e)]

    assert labels(dataset) == epoch(0)
    assert labels(dataset) == epoch(1)
    # A new dataset starts again at the first epoch.
    again = batches.as_dataset(epochs=1, new_order_per_pass=True)
    assert labels(again) == epoch(0)
    # Without it, every pass repeats the same epoch.
    fixed = batches.as_dataset(epochs=1)
    assert labels(fixed) == labels(fixed) == epoch(0)


def test_docstring_example_runs():
    import doctest

    from keras_attention.data import batching

    results = doctest.testmod(batching)
    assert results.attempted > 0 and results.failed == 0


def _masked_pair_model():
    """Mean of embedded tokens per sentence (padding masked), two heads."""
    premise = keras.Input((None,), dtype="int32", name="premise")
    hypothesis = keras.Input((None,), dtype="int32", name="hypothesis")
    embed = keras.layers.Embedding(30, 4, mask_zero=True)
    pool = keras.layers.GlobalAveragePooling1D()
    joined = keras.layers.Concatenate()(
        [pool(embed(premise)), pool(embed(hypothesis))]
    )
    outputs = {
        "probabilities": keras.layers.Dense(3, activation="softmax")(joined),
        "score": keras.layers.Reshape(())(keras.layers.Dense(1)(joined)),
    }
    return keras.Model({"premise": premise, "hypothesis": hypothesis}, outputs)


def test_predict_in_buckets_equals_the_padded_prediction_in_order():
    inputs, _ = make_pairs(num_examples=37, length=20)
    # Arrays of different lengths, as `model.predict` takes them.
    inputs["hypothesis"] = inputs["hypothesis"][:, :15]
    model = _masked_pair_model()
    padded = model.predict(inputs, batch_size=37, verbose=0)
    bucketed = predict_in_buckets(model, inputs, batch_size=8, width_step=4)
    # Several widths, so the rows really were regrouped and put back.
    premises = BucketedBatches(inputs["premise"], width_step=4)
    widths = {width for _, width in premises.batches()}
    assert len(widths) > 2
    assert set(bucketed) == {"probabilities", "score"}
    for name in padded:
        assert bucketed[name].shape == padded[name].shape
        np.testing.assert_allclose(
            bucketed[name], padded[name], rtol=1e-5, atol=1e-6
        )


def test_predict_in_buckets_refuses_outputs_that_follow_the_width():
    inputs = np.array([[3, 4, 5, 6, 7, 8, 9, 1], [2, 0, 0, 0, 0, 0, 0, 0]])
    tokens = keras.Input((None,), dtype="int32")
    model = keras.Model(tokens, keras.layers.Embedding(10, 2)(tokens))
    with pytest.raises(ValueError, match="same shape per example"):
        predict_in_buckets(model, inputs, batch_size=1, width_step=2)


def test_per_input_widths_cut_each_input_to_its_own_bucket():
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 13, size=(2, 40))
    first, second = (
        np.where(np.arange(12) < n[:, None], 5, 0) for n in lengths
    )
    batches = BucketedBatches(
        {"first": first, "second": second},
        np.arange(40),
        batch_size=4,
        width_step=4,
        seed=3,
        per_input_widths=True,
    )
    seen = []
    for rows, widths in batches.batches(epoch=1):
        x, y = batches.batch(rows, widths)
        seen += y.tolist()
        for name, lengths_of, width in zip(x, lengths, widths):
            # Each input: its own width, the smallest step that holds it.
            assert x[name].shape == (len(rows), width)
            assert width == 4 * -(-lengths_of[rows].max() // 4)
            assert np.all(lengths_of[rows] > width - 4)
    assert sorted(seen) == list(range(40))
    assert any(a != b for a, b in batches.widths)
    with pytest.raises(ValueError, match="per_input_widths"):
        BucketedBatches(
            {"first": first, "second": second},
            per_input_widths=True,
            tokens_per_batch=64,
        )


@pytest.mark.parametrize("per_input_widths", [False, True])
def test_no_example_raises_instead_of_an_endless_stream(per_input_widths):
    inputs, targets = make_pairs(num_examples=0)
    batches = BucketedBatches(
        inputs, targets, batch_size=4, per_input_widths=per_input_widths
    )
    assert len(batches) == 0
    with pytest.raises(ValueError, match="holds no batch.*Received: 0 exam"):
        batches.as_dataset(epochs=None)
    # A finite number of epochs of nothing is empty, not endless.
    assert list(batches.as_dataset(epochs=3)) == []


def test_an_epoch_left_empty_by_drop_remainder_raises():
    # Three examples, batches of four: the only batch is incomplete.
    inputs, targets = make_pairs(num_examples=3)
    batches = BucketedBatches(
        inputs, targets, batch_size=4, width_step=20, drop_remainder=True
    )
    with pytest.raises(ValueError, match="drop_remainder=True drops"):
        batches.as_dataset(epochs=None, initial_epoch=5)
    # The same examples without drop_remainder make one batch per epoch.
    batches.drop_remainder = False
    stream = iter(batches.as_dataset(epochs=None))
    for _ in range(3):
        x, y = next(stream)
        assert sorted(np.asarray(y).tolist()) == [0, 1, 2]


def test_the_generator_itself_refuses_an_empty_epoch():
    # A subclass whose later epochs are empty: the stream ends with the
    # error instead of looking for a next batch forever.
    inputs, targets = make_pairs(num_examples=4)

    class FirstEpochOnly(BucketedBatches):
        def batches(self, epoch=0):
            return super().batches(epoch) if epoch == 0 else []

    batches = FirstEpochOnly(inputs, targets, batch_size=4, width_step=20)
    stream = iter(batches.as_dataset(epochs=None))
    next(stream)
    with pytest.raises(Exception, match="holds no batch"):
        next(stream)
