import gzip
import json
import os
import sys

import numpy as np
import pytest

from keras_attention import data
from keras_attention import decoding
from keras_attention.data import translation
from keras_attention.models import Transformer
from keras_attention.testing.threads import single_torch_thread

APP = os.path.join(
    os.path.dirname(__file__), "..", "..", "applications", "translation"
)
CORPUS = [
    "A man rides a bike.",
    "Two dogs play in the snow.",
    "A woman is reading a book.",
    "Children are playing in the park.",
    "Ein Mann fährt Fahrrad.",
    "Zwei Hunde spielen im Schnee.",
    "Eine Frau liest ein Buch.",
    "Kinder spielen im Park.",
] * 20


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    path = tmp_path_factory.mktemp("tok") / translation.TOKENIZER_FILE
    return translation.train_tokenizer(
        CORPUS, vocabulary_size=60, path=str(path)
    )


def test_tokenizer_round_trip_and_reload(tokenizer, tmp_path):
    ids = translation.encode_sentences(tokenizer, ["A man rides a bike."])
    assert ids[0][-1] == translation.END_ID
    text = translation.decode_ids(tokenizer, [ids[0][:-1]])
    assert text == ["A man rides a bike."]
    path = str(tmp_path / "t.model")
    translation.train_tokenizer(CORPUS, vocabulary_size=60, path=path)
    reloaded = translation.load_tokenizer(path)
    assert translation.tokenizer_fingerprint(
        reloaded
    ) == translation.tokenizer_fingerprint(tokenizer)


def test_unknown_characters_warn_and_become_the_unknown_id(tokenizer):
    with pytest.warns(UserWarning, match="never saw in training"):
        ids = translation.encode_sentences(tokenizer, ["Ein Mann ☃ 漢"])
    assert translation.UNK_ID in ids[0]


def test_long_sources_are_truncated_keeping_the_end_id(tokenizer):
    long = " ".join(["Two dogs play in the snow."] * 20)
    (ids,) = translation.encode_sentences(tokenizer, [long], max_length=12)
    assert len(ids) == 12 and ids[-1] == translation.END_ID


def test_empty_sources_are_a_clear_error(tokenizer):
    model = Transformer(
        vocabulary_size=60,
        num_layers=1,
        hidden_dim=8,
        num_heads=2,
        intermediate_dim=8,
    )
    with pytest.raises(
        ValueError, match=r"Sentence 1 is empty.*sentences\[1\]"
    ):
        decoding.translate(model, tokenizer, ["A man.", "  "])


def test_tokenizer_that_does_not_match_the_model_is_refused(tokenizer):
    with pytest.raises(ValueError, match="vocabulary_size=61"):
        translation.check_tokenizer_matches(tokenizer, 61)
    with pytest.raises(ValueError, match="fingerprint"):
        translation.check_tokenizer_matches(tokenizer, 60, "0123456789abcdef")
    translation.check_tokenizer_matches(
        tokenizer, 60, translation.tokenizer_fingerprint(tokenizer)
    )


def test_mismatched_line_counts_are_a_clear_error(tmp_path):
    en, de = tmp_path / "x.en.gz", tmp_path / "x.de.gz"
    en.write_bytes(gzip.compress(b"a\nb\nc\n"))
    de.write_bytes(gzip.compress(b"a\nb\n"))
    with pytest.raises(ValueError, match="has 3 lines.*has 2 lines"):
        data.read_parallel(en, de)


def random_rows(seed, count):
    """`count` id lists of 2-19 random ids, each ending with the end id."""
    rng = np.random.default_rng(seed)
    return [
        rng.integers(4, 20, size=n).tolist() + [translation.END_ID]
        for n in rng.integers(2, 20, size=count)
    ]


def test_dataset_batches_are_bucketed_shifted_and_padded():
    rows = random_rows(seed=0, count=200)
    dataset, tokens = translation.make_dataset(
        rows, rows, tokens_per_batch=64, max_length=24, shuffle=False
    )
    assert tokens == sum(len(r) for r in rows)
    edges = translation.bucket_boundaries(24)
    for inputs, labels in dataset.as_numpy_iterator():
        source = inputs["encoder_token_ids"]
        decoder = inputs["decoder_token_ids"]
        assert source.shape[1] + 1 in edges  # padded to a bucket edge
        assert np.all(decoder[:, 0] == translation.START_ID)
        # The decoder reads the target shifted right, without its end id.
        shifted = labels[:, :-1]
        shifted = np.where(shifted == translation.END_ID, 0, shifted)
        np.testing.assert_array_equal(decoder[:, 1:], shifted)
        assert source.shape[0] * source.shape[1] <= 64 + source.shape[1]
    with pytest.raises(ValueError, match="2 sources and 1 targets"):
        translation.make_dataset(rows[:2], rows[:1])


def _batch_keys(stream, count):
    """Each batch's source ids as bytes, for `count` batches."""
    keys = []
    for inputs, _ in stream.take(count).as_numpy_iterator():
        keys.append(inputs["encoder_token_ids"].tobytes())
    return keys


@pytest.mark.parametrize("drop_remainder", [True, False])
def test_epoch_stream_resumes_with_the_batches_of_an_uninterrupted_run(
    drop_remainder,
):
    rows = random_rows(seed=1, count=300)

    def pipeline():
        dataset, _ = translation.make_dataset(
            rows,
            rows,
            tokens_per_batch=96,
            max_length=24,
            seed=7,
            drop_remainder=drop_remainder,
        )
        return dataset

    # Every pass has the same number of batches, in a new order.
    counted = pipeline()
    counts = [sum(1 for _ in counted) for _ in range(3)]
    assert len(set(counts)) == 1, counts
    full, steps = data.epoch_stream(pipeline())
    assert steps == counts[0]
    epochs = _batch_keys(full, 4 * steps)
    passes = [epochs[i * steps : (i + 1) * steps] for i in range(4)]
    assert len({tuple(p) for p in passes}) == 4
    # A new pipeline (as in a restarted process) resumed at epoch 2.
    resumed, resumed_steps = data.epoch_stream(pipeline(), initial_epoch=2)
    assert resumed_steps == steps
    assert _batch_keys(resumed, 2 * steps) == epochs[2 * steps :]


def test_make_batches_resume_at_an_epoch_with_the_same_batches():
    rows = random_rows(seed=2, count=200)
    batches, tokens = translation.make_batches(
        rows, rows, tokens_per_batch=96, max_length=24, seed=3
    )
    assert tokens == sum(len(r) for r in rows)
    steps = len(batches)
    full = _batch_keys(batches.as_dataset(epochs=None), 3 * steps)
    again, _ = translation.make_batches(
        rows, rows, tokens_per_batch=96, max_length=24, seed=3
    )
    resumed = again.as_dataset(epochs=None, initial_epoch=2)
    assert _batch_keys(resumed, steps) == full[2 * steps :]
    assert full[:steps] != full[steps : 2 * steps]


def test_epoch_stream_rejects_bad_arguments():
    dataset, _ = translation.make_dataset(
        [[4, 3]], [[5, 3]], drop_remainder=True
    )
    with pytest.raises(ValueError, match=r"initial_epoch=-1"):
        data.epoch_stream(dataset, initial_epoch=-1)
    with pytest.raises(ValueError, match=r"initial_epoch=1\.5"):
        data.epoch_stream(dataset, initial_epoch=1.5)
    with pytest.raises(ValueError, match="has no batches"):
        data.epoch_stream(dataset)


def test_smoke_copy_task_learns(tmp_path):
    sys.path.insert(0, os.path.abspath(APP))
    try:
        import train
    finally:
        sys.path.pop(0)
    # A shorter run than --smoke (600 steps, >= 95% exact match), to stay
    # within the test budget on every backend.
    with single_torch_thread():
        result = train.main(
            ["--smoke", "--smoke-steps", "240", "--output-dir", str(tmp_path)]
        )
    with open(tmp_path / "metrics.json") as f:
        written = json.load(f)
    assert written["exact_match"] == result["exact_match"]
    # Measured: 90% (torch), 91% (tensorflow), 98% (jax).
    assert result["exact_match"] >= 0.75, result


def test_training_without_tensorboard_skips_its_logs(monkeypatch, capsys):
    sys.path.insert(0, os.path.abspath(APP))
    try:
        import train
    finally:
        sys.path.pop(0)
    # `None` in sys.modules makes `import tensorboard` raise ImportError.
    monkeypatch.setitem(sys.modules, "tensorboard", None)
    assert train.tensorboard_callback("logs") == []
    assert "TensorBoard is not installed" in capsys.readouterr().out


def import_train():
    sys.path.insert(0, os.path.abspath(APP))
    try:
        import train
    finally:
        sys.path.pop(0)
    return train


def test_demo_trains_a_fixed_amount_of_work():
    # The demo's result must not depend on the machine's speed: a number
    # of epochs, no time limit, whatever flags a user adds for the output.
    train = import_train()
    config, options = train.parse_args(["--demo", "--seed", "3"])
    assert options.demo
    assert config.minutes == 0
    assert config.epochs == train.DEMO["epochs"] == 2
    assert config.seed == 3


def test_throughput_is_a_number_whenever_a_step_ran():
    train = import_train()
    # Two full epochs of 10 steps, 1000 target tokens each, in 4 s.
    assert train.target_throughput(1000, 10, [10, 10], [1.0, 3.0]) == (
        500.0,
        None,
    )
    # An epoch cut after 5 of 10 steps counts half its tokens, and says so.
    speed, note = train.target_throughput(1000, 10, [10, 5], [2.0, 1.0])
    assert speed == 500.0 and "estimated" in note
    # Only a cut epoch (a time limit inside epoch 1): still a number.
    speed, note = train.target_throughput(1000, 10, [3], [1.5])
    assert speed == 200.0 and "estimated" in note
    # A resumed run that had nothing left to train.
    speed, note = train.target_throughput(1000, 10, [], [])
    assert speed is None and "no training step" in note


def test_recipe_tiny_4x128_is_the_published_configuration():
    sys.path.insert(0, os.path.abspath(APP))
    try:
        import train
    finally:
        sys.path.pop(0)
    config, options = train.parse_args(["--recipe", "tiny-4x128"])
    assert options.recipe == "tiny-4x128"
    assert (config.beam_size, config.average_last, config.minutes) == (5, 5, 0)
    model = Transformer.from_preset(config.preset, vocabulary_size=50)
    sizes = (
        model.num_layers,
        model.hidden_dim,
        model.intermediate_dim,
        model.num_heads,
        model.dropout,
    )
    assert sizes == (4, 128, 256, 4, 0.3)
    # Flags given on the command line still win over the recipe.
    config, _ = train.parse_args(["--recipe", "tiny-4x128", "--beam-size", "3"])
    assert (config.preset, config.beam_size) == ("tiny_4x128", 3)
    with pytest.raises(SystemExit):
        train.parse_args(["--recipe", "tiny"])


def test_average_last_includes_the_epoch_cut_by_the_time_limit(tmp_path):
    import keras

    sys.path.insert(0, os.path.abspath(APP))
    try:
        import train
    finally:
        sys.path.pop(0)

    class StopInSecondEpoch(keras.callbacks.Callback):
        # What `callbacks.TimeLimit` does when the limit falls mid-epoch.
        def on_train_batch_end(self, batch, logs=None):
            if self.epoch == 1 and batch == 1:
                self.model.stop_training = True

        def on_epoch_begin(self, epoch, logs=None):
            self.epoch = epoch

    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    x = np.random.default_rng(0).normal(size=(32, 3)).astype("float32")
    y = np.zeros((32, 2), "float32")
    seen = []

    class Record(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            seen.append([w.copy() for w in self.model.get_weights()])

    model.fit(
        x,
        y,
        batch_size=4,
        epochs=5,
        verbose=0,
        callbacks=[
            StopInSecondEpoch(),
            Record(),
            keras.callbacks.ModelCheckpoint(
                str(tmp_path / "epoch-{epoch:03d}.weights.h5"),
                save_weights_only=True,
            ),
        ],
    )
    # The cut epoch has its checkpoint, holding the weights at the stop.
    assert sorted(os.listdir(tmp_path)) == [
        "epoch-001.weights.h5",
        "epoch-002.weights.h5",
    ]
    averaged = train.average_last(model, str(tmp_path), 5)
    assert [os.path.basename(p) for p in averaged] == [
        "epoch-001.weights.h5",
        "epoch-002.weights.h5",
    ]
    for got, first, second in zip(model.get_weights(), *seen):
        np.testing.assert_allclose(got, (first + second) / 2, rtol=1e-6)
    assert not np.allclose(seen[0][0], seen[1][0])
    # One checkpoint: nothing to average, the weights stay.
    os.remove(tmp_path / "epoch-001.weights.h5")
    before = model.get_weights()
    assert train.average_last(model, str(tmp_path), 5) == []
    for got, kept in zip(model.get_weights(), before):
        np.testing.assert_array_equal(got, kept)


DATA = os.environ.get("KERAS_ATTENTION_DATA")


def _tiny_translator(tokenizer, **kwargs):
    return Transformer(
        vocabulary_size=tokenizer.vocabulary_size(),
        num_layers=1,
        hidden_dim=16,
        num_heads=2,
        intermediate_dim=16,
        **kwargs,
    )


def _learning_curve():
    sys.path.insert(0, os.path.abspath(APP))
    try:
        import learning_curve
    finally:
        sys.path.pop(0)
    return learning_curve


def test_learning_curve_places_checkpoints_on_the_time_axis(tmp_path):
    curve = _learning_curve()
    (tmp_path / "checkpoints").mkdir()
    for name in ("epoch-001.weights.h5", "epoch-002.weights.h5", "x.txt"):
        (tmp_path / "checkpoints" / name).write_text("")
    info = {"epoch_seconds": [30.0, 90.0], "first_epoch": 1}
    (tmp_path / "training.json").write_text(json.dumps(info))
    points = curve.checkpoint_minutes(str(tmp_path))
    assert [(label, minutes) for label, _, minutes in points] == [
        ("epoch 1", 0.5),
        ("epoch 2", 2.0),
    ]
    assert curve.select_every(points * 2, 3) == [points[0], points[1]]
    with pytest.raises(ValueError, match="every=0"):
        curve.select_every(points, 0)
    info["first_epoch"] = 2  # a resumed run: earlier epochs have no times
    (tmp_path / "training.json").write_text(json.dumps(info))
    with pytest.raises(ValueError, match="resumed"):
        curve.checkpoint_minutes(str(tmp_path))


@pytest.mark.skipif(
    not DATA or not os.path.isdir(os.path.join(DATA or "", "multi30k")),
    reason="Multi30k is not staged (KERAS_ATTENTION_DATA)",
)
def test_learning_curve_scores_each_checkpoint_and_the_final_model(
    tmp_path, monkeypatch
):
    from keras_attention.utils import files

    curve = _learning_curve()
    tokenizer = translation.train_tokenizer(
        CORPUS,
        vocabulary_size=60,
        path=str(tmp_path / translation.TOKENIZER_FILE),
    )
    model = _tiny_translator(tokenizer, seed=3)
    model(
        {
            "encoder_token_ids": np.ones((1, 3), "int32"),
            "decoder_token_ids": np.ones((1, 3), "int32"),
        }
    )
    (tmp_path / "checkpoints").mkdir()
    weights = model.get_weights()
    for epoch in (1, 2):
        model.set_weights([w * epoch for w in weights])
        model.save_weights(
            str(tmp_path / "checkpoints" / f"epoch-00{epoch}.weights.h5")
        )
    files.atomic_save(model, str(tmp_path / "model.keras"))
    info = {
        "epoch_seconds": [60.0, 60.0],
        "first_epoch": 1,
        "training_time_s": 120.0,
        "preset": "test",
        "backend": "any",
        "config": {"mixed_precision": "none"},
    }
    (tmp_path / "training.json").write_text(json.dumps(info))
    argv = [
        "--run-dir",
        str(tmp_path),
        "--data-dir",
        DATA,
        "--limit",
        "3",
        "--beam-size",
        "2",
        "--figure",
        str(tmp_path / "curve.png"),
    ]
    summary = curve.main(argv)
    (run,) = summary
    assert run["label"] == "test, float32, any"
    assert sorted(run["points"]) == ["epoch 1", "epoch 2"]
    assert [run["points"][k]["minutes"] for k in ("epoch 1", "epoch 2")] == [
        1.0,
        2.0,
    ]
    assert run["final_model"]["minutes"] == 2.0
    for point in list(run["points"].values()) + [run["final_model"]]:
        assert 0.0 <= point["sacrebleu"] <= 100.0
    assert os.path.getsize(tmp_path / "curve.png") > 1000
    # A rerun reads the cache: nothing is decoded again.
    cached = json.loads((tmp_path / curve.CACHE_FILE).read_text())
    monkeypatch.setattr(decoding, "translate", None)  # fails if called
    assert curve.main(argv) == summary
    assert json.loads((tmp_path / curve.CACHE_FILE).read_text()) == cached


def test_evaluate_decodes_a_mixed_precision_model_in_float32(tmp_path):
    from keras_attention.utils import files

    sys.path.insert(0, os.path.abspath(APP))
    try:
        import evaluate
    finally:
        sys.path.pop(0)
    tokenizer = translation.train_tokenizer(
        CORPUS,
        vocabulary_size=60,
        path=str(tmp_path / translation.TOKENIZER_FILE),
    )
    model = _tiny_translator(tokenizer, dtype="mixed_bfloat16")
    ids = {
        "encoder_token_ids": np.array([[5, 6, 2]], "int32"),
        "decoder_token_ids": np.array([[1, 7, 8]], "int32"),
    }
    mixed = keras_ops_numpy(model(ids))
    files.atomic_save(model, str(tmp_path / "model.keras"))
    kept, _ = evaluate.load_translator(str(tmp_path))
    assert kept.dtype_policy.name == "mixed_bfloat16"
    rebuilt, _ = evaluate.load_translator(str(tmp_path), "float32")
    assert rebuilt.dtype_policy.name == "float32"
    assert rebuilt.decoder_blocks[0].compute_dtype == "float32"
    for a, b in zip(rebuilt.get_weights(), model.get_weights()):
        np.testing.assert_array_equal(a, b)
    exact = keras_ops_numpy(rebuilt(ids))
    # Same weights, other arithmetic: close, not equal.
    np.testing.assert_allclose(exact, mixed, atol=0.1)
    assert not np.array_equal(exact, mixed)


def keras_ops_numpy(x):
    import keras

    return keras.ops.convert_to_numpy(x).astype("float32")


PAIRS = list(zip(CORPUS[:4], CORPUS[4:8]))


def test_sampled_segmentations_differ_and_decode_to_the_same_text(tokenizer):
    sentences = CORPUS[:8]
    best = translation.encode_sentences(tokenizer, sentences)
    draws = [
        translation.sample_sentences(tokenizer, sentences, 0.1, seed=seed)
        for seed in range(4)
    ]
    for draw in draws:
        assert all(ids[-1] == translation.END_ID for ids in draw)
        texts = translation.decode_ids(tokenizer, [ids[:-1] for ids in draw])
        assert texts == sentences
    # Most sentences are split otherwise than by the best segmentation, and
    # the draws differ from each other; the same seed draws the same.
    assert sum(a != b for a, b in zip(draws[0], best)) >= 4
    assert draws[0] != draws[1]
    assert draws[0] == translation.sample_sentences(
        tokenizer, sentences, 0.1, seed=0
    )
    # `nbest_size` limits the draw to the best segmentations.
    two_best = translation.sample_sentences(
        tokenizer, sentences, 0.1, nbest_size=2, seed=1
    )
    texts = translation.decode_ids(tokenizer, [ids[:-1] for ids in two_best])
    assert texts == sentences


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"alpha": 0.0}, "Received: alpha=0.0"),
        ({"alpha": 1.5}, "Received: alpha=1.5"),
        ({"nbest_size": 0}, "Received: nbest_size=0"),
        ({"nbest_size": 1}, "Received: nbest_size=1"),
    ],
)
def test_sampling_rejects_bad_settings(tokenizer, kwargs, message):
    with pytest.raises(ValueError, match=message):
        translation.sample_sentences(tokenizer, ["A man."], **kwargs)
    with pytest.raises(ValueError, match=message):
        translation.SampledBatches(
            tokenizer, ["A man."], ["Ein Mann."], **kwargs
        )


def decoded_pairs(tokenizer, batch):
    """The (source, target) texts of a batch of `make_batches`' layout."""
    x, labels = batch
    pairs = []
    for source, target in zip(
        np.asarray(x["encoder_token_ids"]), np.asarray(labels)
    ):
        source = [int(i) for i in source if i not in (0, translation.END_ID)]
        target = [int(i) for i in target if i not in (0, translation.END_ID)]
        pairs.append(tuple(translation.decode_ids(tokenizer, [source, target])))
    return pairs


def test_sampled_batches_draw_a_new_segmentation_every_epoch(tokenizer):
    sources, targets = zip(*(PAIRS * 10))
    options = dict(alpha=0.1, tokens_per_batch=256, max_length=64, seed=5)
    batches = translation.SampledBatches(tokenizer, sources, targets, **options)
    assert len(batches) > 1
    epochs = [
        list(batches.as_dataset(epochs=1, initial_epoch=e)) for e in range(3)
    ]
    assert all(len(epoch) == len(batches) for epoch in epochs)
    # Every batch holds real pairs, whatever their segmentation.
    for epoch in epochs:
        for batch in epoch:
            assert set(decoded_pairs(tokenizer, batch)) <= set(PAIRS)
    ids = [
        sorted(
            tuple(row[row > 0].tolist())
            for x, _ in epoch
            for row in np.asarray(x["encoder_token_ids"])
        )
        for epoch in epochs
    ]
    assert ids[0] != ids[1] and ids[1] != ids[2]
    # An endless stream started at epoch 1 (a resumed run) sees epoch 1.
    again = translation.SampledBatches(tokenizer, sources, targets, **options)
    stream = iter(again.as_dataset(epochs=None, initial_epoch=1))
    for expected in epochs[1]:
        got = next(stream)
        np.testing.assert_array_equal(
            got[0]["encoder_token_ids"], expected[0]["encoder_token_ids"]
        )
        np.testing.assert_array_equal(got[1], expected[1])


def test_regularizer_flags_reach_the_model_and_the_loss(capsys):
    sys.path.insert(0, os.path.abspath(APP))
    try:
        import train
    finally:
        sys.path.pop(0)
    config, _ = train.parse_args([])
    # Off by default.
    assert (config.r_drop, config.sp_alpha) == (0.0, None)
    assert (config.attention_dropout, config.activation_dropout) == (0, 0)
    assert not isinstance(train.training_loss(config), train.losses.RDropLoss)
    config, _ = train.parse_args(
        [
            "--recipe=tiny-4x128",
            "--attention-dropout=0.1",
            "--activation-dropout=0.2",
            "--r-drop=0.7",
            "--sp-alpha=0.1",
            "--sp-nbest=64",
            "--vocabulary-size=3000",
            "--eval-splits=val",
        ]
    )
    assert (config.sp_alpha, config.sp_nbest) == (0.1, 64)
    assert config.vocabulary_size == 3000
    assert train.eval_splits(config) == ("val",)
    train.check_regularizers(config)
    model = Transformer.from_preset(
        config.preset, 50, **train.model_overrides(config)
    )
    block = model.decoder_blocks[0]
    assert (block.dropout, block.attention_dropout) == (0.3, 0.1)
    assert block.feedforward_activation_dropout.rate == 0.2
    loss = train.training_loss(config)
    assert isinstance(loss, train.losses.RDropLoss)
    assert (loss.alpha, loss.loss.epsilon) == (0.7, 0.1)
    # Bad values end the program with the value named.
    for flags, message in (
        (["--sp-alpha=1.5"], "alpha=1.5"),
        (["--sp-alpha=0.1", "--sp-nbest=0"], "nbest_size=0"),
        (["--eval-splits=train"], "eval_splits='train'"),
    ):
        config, _ = train.parse_args(flags)
        with pytest.raises(SystemExit, match=message):
            train.check_regularizers(config)
    # Out-of-range rates are refused while the flags are parsed.
    for flag in ("--r-drop=-1", "--activation-dropout=1.2"):
        with pytest.raises(SystemExit) as exit_info:
            train.parse_args([flag])
        assert exit_info.value.code == 2
        assert flag.split("=")[0] in capsys.readouterr().err


@pytest.mark.skipif(
    not __import__("helpers").data_available(
        "multi30k/raw/val.en.gz", "multi30k/raw/val.de.gz"
    ),
    reason="needs the data files multi30k/raw/val.{en,de}.gz",
)
def test_evaluate_scores_val_alone_with_averaged_checkpoints(tmp_path, capsys):
    from keras_attention.utils import files

    sys.path.insert(0, os.path.abspath(APP))
    try:
        import evaluate
    finally:
        sys.path.pop(0)
    tokenizer = translation.train_tokenizer(
        CORPUS,
        vocabulary_size=60,
        path=str(tmp_path / translation.TOKENIZER_FILE),
    )
    model = _tiny_translator(tokenizer, seed=1)
    (tmp_path / "checkpoints").mkdir()
    weights = []
    for epoch in (1, 2, 3):
        model.set_weights(
            [
                w + 0.01 * epoch
                for w in _tiny_translator(tokenizer).get_weights()
            ]
        )
        model.save_weights(
            str(tmp_path / "checkpoints" / f"epoch-{epoch:03d}.weights.h5")
        )
        weights.append(model.get_weights())
    files.atomic_save(model, str(tmp_path / "model.keras"))
    out = tmp_path / "sweep" / "val_avg2.json"
    evaluate.main(
        [
            f"--model-dir={tmp_path}",
            "--splits=val",
            "--limit=2",
            "--beam-size=1",
            "--average-last=2",
            f"--output-json={out}",
        ]
    )
    result = json.loads(out.read_text())
    assert result["averaged_checkpoints"] == [
        "epoch-002.weights.h5",
        "epoch-003.weights.h5",
    ]
    assert (result["beam_size"], result["average_last"]) == (1, 2)
    assert "bleu_tok_lc_val" in result and "chrf_val" in result
    assert not any("test2016" in key for key in result)
    # A sweep leaves the run's metrics.json alone.
    assert not (tmp_path / "metrics.json").exists()
    with pytest.raises(SystemExit):
        evaluate.main([f"--model-dir={tmp_path}", "--splits=train"])
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        evaluate.main([f"--model-dir={tmp_path}", "--average-last=5"])
    assert exit_info.value.code == 2
    assert "needs 5 epoch checkpoints" in capsys.readouterr().err
