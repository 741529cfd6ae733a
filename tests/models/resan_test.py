import os
import tempfile

import keras
import numpy as np
import pytest
from keras import ops

from keras_attention import models
from keras_attention import optimizers
from keras_attention.layers import ReinforcedSequenceSampler

RNG = np.random.default_rng(17)


def pair_data(n=64, length=8, vocabulary=40):
    lengths = RNG.integers(1, length + 1, size=(2, n))
    ids = RNG.integers(1, vocabulary, size=(2, n, length))
    ids = np.where(np.arange(length) < lengths[..., None], ids, 0)
    labels = (ids[0, :, 0] % 3).astype("int32")
    return {"premise": ids[0], "hypothesis": ids[1]}, labels


def sampler_weights(model):
    return [
        np.array(ops.convert_to_numpy(w))
        for w in model.trainable_weights
        if "sampler" in w.path
    ]


def selection_rate(model, x):
    # Inference rule (keep probability > 0.5), through a compiled predict.
    return float(np.mean(model.predict(x, verbose=0)["selection_percentage"]))


def gradients(model, loss_of_outputs, x):
    """d loss / d every trainable variable of `model`, on this backend.

    `loss_of_outputs` maps the model's training-mode outputs to a scalar.
    """
    backend = keras.backend.backend()
    variables = model.trainable_variables
    if backend == "tensorflow":
        import tensorflow as tf

        with tf.GradientTape() as tape:
            loss = loss_of_outputs(model(x, training=True))
        grads = tape.gradient(loss, variables)
    elif backend == "jax":
        import jax

        values = [v.value for v in variables]
        others = [v.value for v in model.non_trainable_variables]

        def loss_fn(trainable):
            outputs, _ = model.stateless_call(
                trainable, others, x, training=True
            )
            return loss_of_outputs(outputs)

        grads = jax.grad(loss_fn)(values)
    else:
        for v in variables:
            v.value.grad = None
        loss_of_outputs(model(x, training=True)).backward()
        grads = [v.value.grad for v in variables]
    return {
        v.path: np.zeros(v.shape)
        if g is None
        else np.asarray(ops.convert_to_numpy(g))
        for v, g in zip(variables, grads)
    }


@pytest.mark.parametrize("variant,count", [("authors", 8), ("release_0_1", 16)])
def test_policy_gradient_reaches_exactly_the_samplers(variant, count):
    # Trainable embeddings: the samplers' inputs come from trainable
    # layers (embedding, input projection), which must get no policy
    # gradient; the task loss must give the samplers none either.
    x, y = pair_data(n=8)
    model = classifier(trainable_embeddings=True, dropout=0.0, variant=variant)
    cost = ops.convert_to_tensor(RNG.uniform(size=(8,)).astype("float32"))

    def policy_loss(outputs):
        reward = models.resan.policy_reward(
            cost, outputs["selection_percentage"], 0.02
        )
        return models.resan.policy_gradient_loss(reward, outputs["log_prob"])

    def task_loss(outputs):
        return ops.mean(model.task_cost(y, outputs))

    policy = gradients(model, policy_loss, x)
    task = gradients(model, task_loss, x)
    samplers = [path for path in policy if "sampler" in path]
    others = [path for path in policy if "sampler" not in path]
    assert len(samplers) == count and len(others) > 10
    for path in others:
        np.testing.assert_array_equal(policy[path], 0.0, err_msg=path)
    for path in samplers:
        assert np.abs(policy[path]).max() > 0.0, path
        np.testing.assert_array_equal(task[path], 0.0, err_msg=path)
    assert max(np.abs(task[path]).max() for path in others) > 0.0
    (embedding,) = [path for path in task if "word_embedding" in path]
    assert np.abs(task[embedding]).max() > 0.0


def sampler_layer_paths(model):
    # The variables of every `ReinforcedSequenceSampler`, found by type.
    return {
        v.path
        for layer in model._flatten_layers(include_self=False)
        if isinstance(layer, ReinforcedSequenceSampler)
        for v in layer.trainable_variables
    }


@pytest.mark.parametrize("variant,count", [("authors", 8), ("release_0_1", 16)])
def test_sampler_optimizer_updates_exactly_the_samplers(variant, count):
    # Each set moves only by its own optimizer: a zero learning rate on
    # the other one leaves it exactly where it was.
    x, y = pair_data(n=16)
    for frozen in ("samplers", "others"):
        model = classifier(dropout=0.0, variant=variant)
        rates = {"samplers": 0.5, "others": 0.01, frozen: 0.0}
        model.compile(
            optimizer=models.resan.with_sampler_optimizer(
                keras.optimizers.SGD(rates["others"]),
                keras.optimizers.Adadelta(rates["samplers"]),
            ),
            loss="sparse_categorical_crossentropy",
        )
        before = {
            v.path: np.array(ops.convert_to_numpy(v))
            for v in model.trainable_variables
        }
        model.fit(x, y, batch_size=8, epochs=1, verbose=0)
        samplers = sampler_layer_paths(model)
        assert len(samplers) == count
        for v in model.trainable_variables:
            moved = np.abs(ops.convert_to_numpy(v) - before[v.path]).max()
            is_frozen = (v.path in samplers) == (frozen == "samplers")
            if is_frozen:
                assert moved == 0.0, (frozen, v.path)
        moving = [
            np.abs(ops.convert_to_numpy(v) - before[v.path]).max()
            for v in model.trainable_variables
            if (v.path in samplers) != (frozen == "samplers")
        ]
        assert max(moving) > 0.0, frozen
        adadelta = [
            o
            for o in model.optimizer.optimizers
            if isinstance(o, keras.optimizers.Adadelta)
        ]
        assert {v.path for v in adadelta[0]._trainable_variables} == samplers


def test_with_sampler_optimizer_rejects_what_is_not_two_optimizers():
    adam = keras.optimizers.Adam()
    with pytest.raises(TypeError, match="Received: sampler_optimizer='adam'"):
        models.resan.with_sampler_optimizer(adam, "adam")
    with pytest.raises(ValueError, match="the same object twice"):
        models.resan.with_sampler_optimizer(adam, adam)
    with pytest.raises(TypeError, match="Received: optimizer=None"):
        models.resan.with_sampler_optimizer(None)


def test_sampler_inference_sets_and_restores_the_rule():
    x, _ = pair_data(n=16)
    model = classifier(dropout=0.0)
    model.compile(loss="sparse_categorical_crossentropy")
    own = model.predict(x, verbose=0)["selection_percentage"]
    assert np.mean(own) < 0.9  # Untrained samplers keep about half.
    samplers = [
        layer
        for layer in model._flatten_layers()
        if isinstance(layer, ReinforcedSequenceSampler)
    ]
    assert len(samplers) == 2
    with models.resan.sampler_inference(model, "all"):
        assert {s.inference for s in samplers} == {"all"}
        # Through the compiled predict and evaluate, traced again.
        every = model.predict(x, verbose=0)["selection_percentage"]
        model.evaluate(x, np.zeros(16, "int32"), verbose=0)
    np.testing.assert_allclose(every, 1.0)
    assert {s.inference for s in samplers} == {"threshold"}
    np.testing.assert_array_equal(
        model.predict(x, verbose=0)["selection_percentage"], own
    )
    with pytest.raises(ValueError, match="Received: rule='sampled'"):
        with models.resan.sampler_inference(model, "sampled"):
            pass
    plain = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    with pytest.raises(ValueError, match="must contain a Reinforced"):
        with models.resan.sampler_inference(plain, "all"):
            pass


def numpy_percentage(heads, dependents, mask):
    real = np.maximum(mask.sum(-1), 1)
    return ((heads & mask).sum(-1) / real) * (
        (dependents & mask).sum(-1) / real
    )


def test_reward_and_percentage_match_numpy():
    mask = np.arange(6)[None] < np.array([[6], [3], [1], [0]])
    heads = RNG.uniform(size=(4, 6)) < 0.5
    dependents = RNG.uniform(size=(4, 6)) < 0.7
    percentage = models.resan.selection_percentage(
        ops.convert_to_tensor(heads),
        ops.convert_to_tensor(dependents),
        ops.convert_to_tensor(mask),
    )
    np.testing.assert_allclose(
        ops.convert_to_numpy(percentage),
        numpy_percentage(heads, dependents, mask),
        atol=1e-6,
    )
    cost = RNG.uniform(size=(4,))
    pct = RNG.uniform(size=(4, 2))
    reward = models.resan.policy_reward(cost, pct, 0.006)
    expected = -(cost[:, None] + 0.006 * pct)
    np.testing.assert_allclose(
        ops.convert_to_numpy(reward), expected, atol=1e-6
    )
    log_prob = RNG.normal(size=(4, 2))
    others = (expected.sum(0) - expected) / 3.0
    for baseline, advantage in (
        ("leave_one_out", expected - others),
        ("none", expected),
    ):
        loss = models.resan.policy_gradient_loss(
            reward, log_prob, baseline=baseline
        )
        np.testing.assert_allclose(
            float(ops.convert_to_numpy(loss)),
            -np.mean((advantage * log_prob).sum(-1)),
            rtol=1e-5,
        )
    with pytest.raises(ValueError, match="Received: baseline='mean'"):
        models.resan.policy_gradient_loss(reward, log_prob, baseline="mean")


def test_task_costs_match_numpy():
    x, labels = pair_data(n=6)
    nli = classifier()
    out = nli(x)
    p = np.asarray(ops.convert_to_numpy(out["probabilities"]), "float64")
    np.testing.assert_allclose(
        ops.convert_to_numpy(nli.task_cost(labels, out)),
        -np.log(p[np.arange(6), labels]),
        rtol=1e-5,
    )
    pairs = {"sentence_a": x["premise"], "sentence_b": x["hypothesis"]}
    scores = RNG.uniform(1, 5, size=(6,)).astype("float32")
    for objective in ("mse", "kl"):
        model = models.ReSANRelatedness(
            vocabulary_size=40,
            embedding_dim=8,
            hidden_dim=6,
            objective=objective,
            seed=2,
        )
        out = model(pairs)
        p = np.asarray(ops.convert_to_numpy(out["probabilities"]), "float64")
        s_hat = p @ np.arange(1, 6)
        # The authors' SICK KL clips both distributions at 1e-10.
        target = np.clip(models.relatedness_target(scores), 1e-10, 1)
        expected = {
            "mse": 0.5 * (s_hat - scores) ** 2,
            "kl": (target * np.log(target / np.clip(p, 1e-10, 1))).sum(-1),
        }[objective]
        for y in (scores, models.relatedness_target(scores)):
            np.testing.assert_allclose(
                ops.convert_to_numpy(model.task_cost(y, out)),
                expected,
                rtol=1e-4,
                atol=1e-6,
            )


def test_relatedness_files_without_objective_keep_the_kl_loss():
    model = models.ReSANRelatedness(vocabulary_size=20, embedding_dim=4)
    config = model.get_config()
    assert config["objective"] == "mse" and config["sparsity_penalty"] == 0.006
    del config["objective"]
    assert models.ReSANRelatedness.from_config(config).objective == "kl"


def test_relatedness_encoder_dropout_is_its_own_rate():
    model = models.ReSANRelatedness(
        vocabulary_size=20, embedding_dim=4, dropout=0.3, encoder_dropout=0.0
    )
    encoder_rates = {
        layer.name: layer.rate
        for layer in model.encoder.layers
        if isinstance(layer, keras.layers.Dropout)
    }
    assert encoder_rates == {"forward_dropout": 0.0, "backward_dropout": 0.0}
    assert model.get_layer("head_dropout").rate == 0.3
    config = model.get_config()
    assert config["encoder_dropout"] == 0.0
    revived = models.ReSANRelatedness.from_config(config)
    assert revived.encoder.get_layer("forward_dropout").rate == 0.0
    # Unset, the encoder takes `dropout`, as before the argument existed.
    shared = models.ReSANRelatedness(
        vocabulary_size=20, embedding_dim=4, dropout=0.3
    )
    assert shared.encoder.get_layer("backward_dropout").rate == 0.3
    with pytest.raises(ValueError, match="Received: encoder_dropout=1.5"):
        models.ReSANRelatedness(
            vocabulary_size=20, embedding_dim=4, encoder_dropout=1.5
        )


def classifier(**kwargs):
    return models.ReSANClassifier(
        vocabulary_size=40, embedding_dim=8, hidden_dim=6, seed=1, **kwargs
    )


def test_fit_trains_samplers_and_sparsity_penalty_lowers_selection():
    x, y = pair_data()
    model = classifier(sparsity_penalty=20.0, dropout=0.0)
    model.compile(
        optimizer=keras.optimizers.Adam(0.05),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    before_weights = sampler_weights(model)
    before_rate = selection_rate(model, x)
    history = model.fit(x, y, epochs=3, batch_size=32, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    assert "accuracy" in history.history
    after_rate = selection_rate(model, x)
    moved = [
        np.abs(a - b).max()
        for a, b in zip(sampler_weights(model), before_weights)
    ]
    assert len(moved) == 8 and min(moved) > 0.0, moved
    assert after_rate < before_rate - 0.1, (before_rate, after_rate)
    # `fit` and `evaluate` report the selection percentage: in training
    # of the sampled selections, in evaluation of the inference rule's.
    assert np.all(np.array(history.history["selection_percentage"]) >= 0.0)
    results = model.evaluate(x, y, batch_size=64, verbose=0, return_dict=True)
    assert results["selection_percentage"] == pytest.approx(
        after_rate, abs=1e-6
    )

    # Inference is deterministic; saving and reloading keeps the outputs.
    first = model.predict(x, verbose=0)["probabilities"]
    second = model.predict(x, verbose=0)["probabilities"]
    np.testing.assert_array_equal(first, second)
    padded = {k: np.pad(v, [(0, 0), (0, 5)]) for k, v in x.items()}
    np.testing.assert_allclose(
        model.predict(padded, verbose=0)["probabilities"], first, atol=1e-5
    )
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "resan.keras")
        model.save(path)
        revived = keras.saving.load_model(path, safe_mode=True)
    np.testing.assert_allclose(
        revived.predict(x, verbose=0)["probabilities"], first, atol=1e-5
    )
    assert revived.sparsity_penalty == 20.0


def test_without_reward_the_samplers_do_not_learn():
    x, y = pair_data(n=16)
    model = classifier(reward_weight=0.0)
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    before = sampler_weights(model)
    other = [np.array(ops.convert_to_numpy(w)) for w in model.trainable_weights]
    model.fit(x, y, epochs=1, batch_size=16, verbose=0)
    for a, b in zip(sampler_weights(model), before):
        np.testing.assert_array_equal(a, b)
    after = [np.array(ops.convert_to_numpy(w)) for w in model.trainable_weights]
    assert sum(np.abs(a - b).max() > 0 for a, b in zip(after, other)) > 10


@pytest.mark.parametrize("baseline", ["leave_one_out", "none"])
def test_compute_loss_uses_the_baseline(baseline):
    # Compiled without a loss: the model's mean cross-entropy, plus the
    # REINFORCE term with the chosen baseline, on the same forward pass.
    x, y = pair_data(n=8)
    model = classifier(baseline=baseline, dropout=0.0)
    model.compile(optimizer="adam")
    y_pred = model(x, training=True)
    loss = model.compute_loss(x=x, y=y, y_pred=y_pred, training=True)
    cost = ops.convert_to_numpy(model.task_cost(y, y_pred))
    reward = -(
        cost[:, None]
        + 0.02 * ops.convert_to_numpy(y_pred["selection_percentage"])
    )
    if baseline == "leave_one_out":
        reward = reward - (reward.sum(0) - reward) / (len(reward) - 1)
    log_prob = ops.convert_to_numpy(y_pred["log_prob"])
    expected = cost.mean() - np.mean((reward * log_prob).sum(-1))
    np.testing.assert_allclose(
        float(ops.convert_to_numpy(loss)), expected, rtol=1e-5
    )


def test_baseline_is_in_the_config_and_checked():
    model = classifier(baseline="none")
    assert model.get_config()["baseline"] == "none"
    assert models.ReSANClassifier.from_config(model.get_config()).baseline == (
        "none"
    )
    # Files saved before the argument existed load with the default.
    config = classifier().get_config()
    del config["baseline"]
    revived = models.ReSANClassifier.from_config(config)
    assert revived.baseline == "leave_one_out"
    relatedness = models.ReSANRelatedness(
        vocabulary_size=20, embedding_dim=4, baseline="none"
    )
    assert relatedness.get_config()["baseline"] == "none"
    with pytest.raises(ValueError, match="Received: baseline=None"):
        classifier(baseline=None)
    with pytest.raises(ValueError, match="Received: baseline='zero'"):
        models.ReSANRelatedness(
            vocabulary_size=20, embedding_dim=4, baseline="zero"
        )


def test_relatedness_target_has_the_score_as_expectation():
    scores = np.array([1.0, 2.5, 3.2, 5.0])
    target = models.relatedness_target(scores)
    np.testing.assert_allclose(target.sum(-1), 1.0, atol=1e-6)
    np.testing.assert_allclose(target @ np.arange(1, 6), scores, atol=1e-5)
    with pytest.raises(ValueError, match=r"Received: scores=\[5.5\]"):
        models.relatedness_target([3.0, 5.5])


def test_bad_embeddings_are_rejected():
    with pytest.raises(ValueError, match=r"embeddings with shape \(5, 3\)"):
        models.resan_encoder(vocabulary_size=6, embeddings=np.zeros((5, 3)))


def variables_by_group(model):
    values = {
        w.path: np.array(ops.convert_to_numpy(w))
        for w in model.trainable_weights
    }
    return values


# (samplers moved, soft network moved) at steps 0..4 of a schedule of 2
# soft-only and 2 samplers-only steps.
SCHEDULED_MOVES = [
    (False, True),
    (False, True),
    (True, False),
    (True, False),
    (True, True),
]


def scheduled_classifier(optimizer):
    # 2 soft-only steps, then 2 samplers-only steps, then both.
    model = classifier(soft_only_steps=2, sampler_only_steps=2)
    model.compile(optimizer=optimizer, loss="sparse_categorical_crossentropy")
    return model


def moves_under_schedule(model, x, y, steps=5):
    moved = []
    for _ in range(steps):
        before = variables_by_group(model)
        model.fit(x, y, batch_size=16, epochs=1, shuffle=False, verbose=0)
        after = variables_by_group(model)
        changed = {p for p in after if np.abs(after[p] - before[p]).max() > 0}
        moved.append(
            (
                any("sampler" in p for p in changed),
                any("sampler" not in p for p in changed),
            )
        )
    return moved


def test_schedule_soft_then_samplers_then_both_and_resumes(tmp_path):
    # SGD without momentum: a zero gradient leaves a variable unchanged.
    x, y = pair_data(n=16)
    model = scheduled_classifier(keras.optimizers.SGD(0.1))
    moved = moves_under_schedule(model, x, y)
    assert moved == SCHEDULED_MOVES, moved
    schedule = model.get_layer("training_schedule")
    assert int(ops.convert_to_numpy(schedule.step)) == 5
    path = str(tmp_path / "scheduled.keras")
    model.save(path)
    revived = keras.saving.load_model(path, safe_mode=True)
    revived_step = revived.get_layer("training_schedule").step
    assert int(ops.convert_to_numpy(revived_step)) == 5
    assert (revived.soft_only_steps, revived.sampler_only_steps) == (2, 2)


def test_with_sampler_optimizer_keeps_adam_to_the_schedule(tmp_path):
    # Adam with one optimizer for every variable moves the soft network on
    # its first moment through the samplers-only steps (zero gradient);
    # `with_sampler_optimizer` gives each group its own Adam, and the idle
    # group takes no step: moments and iteration count included.
    x, y = pair_data(n=16)
    plain = scheduled_classifier(keras.optimizers.Adam(0.01))
    drifting = moves_under_schedule(plain, x, y)
    assert [soft for _, soft in drifting] == [True] * 5, drifting

    model = scheduled_classifier(
        models.resan.with_sampler_optimizer(keras.optimizers.Adam(0.01))
    )
    moved = moves_under_schedule(model, x, y)
    assert moved == SCHEDULED_MOVES, moved
    mapping = model.optimizer._optimizer_map
    soft = mapping.default_optimizer
    samplers = mapping[models.resan.SAMPLER_VARIABLES]
    assert isinstance(model.optimizer, optimizers.GroupSkippingOptimizer)
    assert isinstance(samplers, keras.optimizers.Adam)
    assert type(samplers) is type(soft) and samplers is not soft
    assert samplers.get_config() == soft.get_config() | {"name": samplers.name}
    # Steps taken: the soft network 2 + 1, the samplers 2 + 1.
    assert int(ops.convert_to_numpy(soft.iterations)) == 3
    assert int(ops.convert_to_numpy(samplers.iterations)) == 3
    assert int(ops.convert_to_numpy(model.optimizer.iterations)) == 5
    path = str(tmp_path / "grouped.keras")
    model.save(path)
    revived = keras.saving.load_model(path, safe_mode=True)
    assert isinstance(revived.optimizer, optimizers.GroupSkippingOptimizer)
    for saved, loaded in zip(
        model.optimizer.variables, revived.optimizer.variables
    ):
        np.testing.assert_array_equal(
            ops.convert_to_numpy(saved), ops.convert_to_numpy(loaded)
        )


def test_soft_only_phase_selects_every_real_token():
    x, _ = pair_data(n=8)
    model = classifier(soft_only_steps=10)
    out = model(x, training=True)
    np.testing.assert_allclose(
        ops.convert_to_numpy(out["selection_percentage"])[:, 0],
        (x["premise"] > 0).any(-1).astype("float32"),
    )
    np.testing.assert_array_equal(
        ops.convert_to_numpy(out["training_phase"])[0], [1.0, 1.0, 0.0]
    )
    # Inference before the samplers' first step: the soft network on every
    # real token, as it was trained (the authors' evaluation in that phase).
    inference = model(x)
    np.testing.assert_array_equal(
        ops.convert_to_numpy(inference["training_phase"])[0], [1.0, 1.0, 1.0]
    )
    np.testing.assert_allclose(
        ops.convert_to_numpy(inference["selection_percentage"])[:, 0],
        (x["premise"] > 0).any(-1).astype("float32"),
    )
    # After the last soft step (counter == soft_only_steps) the samplers
    # are still untrained; after their first step they decide.
    schedule = model.get_layer("training_schedule")
    for step, select_all in ((10, 1.0), (11, 0.0)):
        schedule.step.assign(step)
        inference = model(x)
        np.testing.assert_array_equal(
            ops.convert_to_numpy(inference["training_phase"])[0],
            [select_all, 1.0, 1.0],
        )
    # Without a soft-only phase the samplers decide from the start.
    inference = classifier()(x)
    np.testing.assert_array_equal(
        ops.convert_to_numpy(inference["training_phase"])[0], [0.0, 1.0, 1.0]
    )


def test_padding_widths_never_change_inference():
    # Training batches pad each sentence to its own bucket width; that
    # must give what one common, wider width gives, in both phases.
    x, _ = pair_data(n=16)
    wide = {k: np.pad(v, [(0, 0), (0, 24 - v.shape[1])]) for k, v in x.items()}
    uneven = {"premise": x["premise"], "hypothesis": wide["hypothesis"][:, :16]}
    for soft_only_steps in (10, 0):
        model = classifier(soft_only_steps=soft_only_steps)
        reference = {k: ops.convert_to_numpy(v) for k, v in model(wide).items()}
        for inputs in (x, uneven):
            outputs = model(inputs)
            for name in ("probabilities", "selection_percentage"):
                np.testing.assert_allclose(
                    ops.convert_to_numpy(outputs[name]),
                    reference[name],
                    atol=1e-6,
                    err_msg=f"{name}, soft_only_steps={soft_only_steps}",
                )


def test_bad_schedule_is_rejected():
    with pytest.raises(ValueError, match="Received: soft_only_steps=-1"):
        classifier(soft_only_steps=-1)
    with pytest.raises(ValueError, match="variant='release_0_1'"):
        classifier(variant="release_0_1", sampler_only_steps=3)


def test_corner_rule_and_keep_bias_reach_the_encoder_and_its_config():
    model = classifier(empty_context="mean", sampler_keep_bias=2.0)
    for direction in ("forward", "backward"):
        layer = model.encoder.get_layer(f"{direction}_attention")
        assert layer.empty_context == "mean"
    for role in ("head", "dependent"):
        sampler = model.encoder.get_layer(f"{role}_sampler")
        # The keep logit's bias only; the fusion layer's stays zero.
        np.testing.assert_array_equal(
            ops.convert_to_numpy(sampler.keep_dense.bias), [2.0]
        )
        np.testing.assert_array_equal(
            ops.convert_to_numpy(sampler.context_dense.bias), 0.0
        )
    revived = models.ReSANClassifier.from_config(model.get_config())
    assert revived.empty_context == "mean"
    assert revived.sampler_keep_bias == 2.0
    assert revived.encoder.get_layer("backward_attention").empty_context == (
        "mean"
    )
    # Defaults: the authors' rule and zero biases; release 0.1's rule for
    # its variant.
    default = classifier()
    assert default.encoder.get_layer("forward_attention").empty_context == (
        "authors"
    )
    old = classifier(variant="release_0_1")
    assert old.encoder.get_layer("forward_attention").empty_context == "mean"
    # Files saved before the two arguments existed load with the defaults.
    config = default.get_config()
    del config["empty_context"], config["sampler_keep_bias"]
    assert models.ReSANClassifier.from_config(config).empty_context is None


def test_bad_corner_rule_or_keep_bias_is_rejected():
    with pytest.raises(ValueError, match="Received: empty_context='zero'"):
        classifier(empty_context="zero")
    with pytest.raises(ValueError, match="Received: sampler_keep_bias=nan"):
        classifier(sampler_keep_bias=float("nan"))
    with pytest.raises(ValueError, match="variant='release_0_1'"):
        classifier(variant="release_0_1", empty_context="authors")
    with pytest.raises(ValueError, match="sampler_keep_bias=1.0"):
        models.resan_encoder(
            vocabulary_size=20,
            embedding_dim=4,
            variant="release_0_1",
            sampler_keep_bias=1.0,
        )


def matrices(model):
    # The variables the authors decay: rank 2 or more, not the embedding.
    return {
        w.path: np.array(ops.convert_to_numpy(w))
        for w in model.trainable_weights
        if len(w.shape) >= 2 and "word_embedding" not in w.path
    }


def test_weight_decay_terms_match_numpy():
    model = classifier(weight_decay=0.01, trainable_embeddings=True)
    values = matrices(model)
    soft, samplers = (
        float(ops.convert_to_numpy(t)) for t in model.weight_decay_terms()
    )
    expected = {True: 0.0, False: 0.0}
    for path, value in values.items():
        expected["sampler" in path] += 0.005 * float(np.sum(value**2))
    # Two samplers with two kernels each; the rest includes ReSA's, the
    # pooling's and the head's matrices.
    assert sum("sampler" in path for path in values) == 4
    assert sum("sampler" not in path for path in values) > 10
    np.testing.assert_allclose(samplers, expected[True], rtol=1e-5)
    np.testing.assert_allclose(soft, expected[False], rtol=1e-5)
    assert models.ReSANClassifier.from_config(
        model.get_config()
    ).weight_decay == (0.01)
    # Files saved before the argument existed load without decay.
    config = model.get_config()
    del config["weight_decay"]
    assert models.ReSANClassifier.from_config(config).weight_decay == 0.0


@pytest.mark.parametrize(
    "phase,steps,decayed",
    [
        ("soft only", (1, 0), {"soft"}),
        ("samplers only", (0, 1), {"samplers"}),
        ("both", (0, 0), {"soft", "samplers"}),
    ],
)
def test_weight_decay_joins_the_loss_of_each_group_in_its_phase(
    phase, steps, decayed
):
    # One SGD step of two models alike but for the decay: the difference
    # of their updates is -learning_rate * weight_decay * v for exactly
    # the matrices the phase trains, and nothing for the rest.
    x, y = pair_data(n=16)
    rate, decay = 0.1, 0.05
    trained = {}
    for weight_decay in (0.0, decay):
        keras.utils.set_random_seed(3)  # the same initial weights
        model = classifier(
            dropout=0.0,
            weight_decay=weight_decay,
            soft_only_steps=steps[0],
            sampler_only_steps=steps[1],
        )
        model.compile(
            optimizer=keras.optimizers.SGD(rate),
            loss="sparse_categorical_crossentropy",
            # One step of the same train_step, uncompiled: compiling six
            # models for one step each cost 59 s on jax and 26 s on
            # tensorflow; the compiled step's losses are checked by the
            # other fit tests here.
            run_eagerly=True,
        )
        before = variables_by_group(model)
        model.fit(x, y, batch_size=16, epochs=1, shuffle=False, verbose=0)
        trained[weight_decay] = variables_by_group(model)
    decayed_paths = set(matrices(model))
    for path, value in before.items():
        group = "samplers" if "sampler" in path else "soft"
        difference = trained[decay][path] - trained[0.0][path]
        if path in decayed_paths and group in decayed:
            np.testing.assert_allclose(
                difference,
                -rate * decay * value,
                rtol=1e-3,
                atol=1e-7,
                err_msg=f"{phase}: {path}",
            )
            assert np.abs(difference).max() > 0, (phase, path)
        else:
            np.testing.assert_allclose(
                difference, 0.0, atol=1e-7, err_msg=f"{phase}: {path}"
            )


def test_bad_weight_decay_is_rejected():
    for bad in (-1e-4, float("inf"), "1e-4"):
        with pytest.raises(ValueError, match="Received: weight_decay="):
            classifier(weight_decay=bad)
