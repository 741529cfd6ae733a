import helpers
import keras
import numpy as np
import pytest
from keras import ops

from keras_attention import decoding
from keras_attention.decoding import beam
from keras_attention.decoding import loop
from keras_attention.decoding import settings as search_settings
from keras_attention.decoding import state
from keras_attention.models import Transformer

# The beam search of release 0.1 left the library for benchmarks/.
legacy_search = helpers.load_script("benchmarks/legacy_search.py")
START, END = 1, 2
# Up to source length + 4 output tokens keeps the eager torch loop short.
SHORT = {"max_extra_length": 4}
SHORT2 = {"max_extra_length": 2}


def to_numpy(x):
    return np.asarray(ops.convert_to_numpy(x))


@pytest.fixture(scope="module")
def model():
    keras.utils.set_random_seed(3)
    return Transformer(
        vocabulary_size=37,
        num_layers=2,
        hidden_dim=16,
        num_heads=2,
        intermediate_dim=32,
        max_sequence_length=32,
    )


SOURCES = np.array(
    [[5, 6, 7, 8, 9, 2], [10, 11, 2, 0, 0, 0], [12, 13, 14, 2, 0, 0]], "int32"
)


def test_cached_greedy_equals_uncached(model):
    cached = decoding.greedy_search(model, SOURCES, START, END)
    uncached = decoding.greedy_search(
        model, SOURCES, START, END, use_cache=False
    )
    np.testing.assert_array_equal(to_numpy(cached), to_numpy(uncached))


def test_cached_beam_equals_uncached(model):
    cached, s1 = decoding.beam_search(
        model, SOURCES, START, END, beam_size=3, return_scores=True, **SHORT
    )
    uncached, s2 = decoding.beam_search(
        model,
        SOURCES,
        START,
        END,
        beam_size=3,
        return_scores=True,
        use_cache=False,
        **SHORT,
    )
    np.testing.assert_array_equal(to_numpy(cached), to_numpy(uncached))
    np.testing.assert_allclose(to_numpy(s1), to_numpy(s2), atol=1e-4)


def test_beam_one_with_alpha_zero_is_greedy(model):
    greedy = decoding.greedy_search(model, SOURCES, START, END, **SHORT)
    beam = decoding.beam_search(
        model, SOURCES, START, END, beam_size=1, alpha=0.0, **SHORT
    )
    np.testing.assert_array_equal(to_numpy(beam), to_numpy(greedy))


def test_outputs_end_within_source_length_plus_extra(model):
    tokens = to_numpy(
        decoding.greedy_search(model, SOURCES, START, END, max_extra_length=2)
    )
    lengths = (SOURCES != 0).sum(1)
    assert tokens.shape[1] == SOURCES.shape[1] + 2
    for row, limit in zip(tokens, lengths + 2):
        ends = np.flatnonzero(row == END)
        assert ends.size and ends[0] < limit
        assert np.all(row[ends[0] + 1 :] == 0)
    stripped = decoding.strip_special(tokens, END)
    assert all(END not in ids and 0 not in ids for ids in stripped)


def chain_model():
    """After any token, 'a' (id 3) has probability 0.6 and the end token
    0.4; after the start token both 0.5. Short outputs have the higher raw
    log-probability, long ones win under a strong length penalty."""
    rows = [[0, 0, 0.4, 0.6] for _ in range(4)]
    rows[START] = [0, 0, 0.5, 0.5]
    return TableModel(log_probability_rows(rows))


def test_length_penalty_changes_the_ranking():
    chain = chain_model()
    source = np.array([[5, 5, 5]], "int32")
    plain = decoding.beam_search(
        chain, source, START, END, beam_size=2, alpha=0.0, **SHORT2
    )
    assert to_numpy(plain)[0].tolist()[:1] == [END]
    long = decoding.beam_search(
        chain, source, START, END, beam_size=2, alpha=6.0, **SHORT2
    )
    row = to_numpy(long)[0].tolist()
    # Forced to end at source length + 2 = 5 tokens: "a a a a <end>".
    assert row[: row.index(END) + 1] == [3, 3, 3, 3, END]


def test_bad_arguments_name_the_value(model):
    with pytest.raises(ValueError, match="Received: beam_size=0"):
        decoding.beam_search(model, SOURCES, START, END, beam_size=0)
    with pytest.raises(ValueError, match="Received: alpha=-1"):
        decoding.beam_search(model, SOURCES, START, END, alpha=-1)
    with pytest.raises(ValueError, match="max_sequence_length=32"):
        decoding.greedy_search(model, np.ones((1, 40), "int32"), START, END)
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        decoding.greedy_search(model, np.ones((3,), "int32"), START, END)


def test_jit_compile_gives_the_same_outputs(model):
    plain, plain_scores = decoding.beam_search(
        model, SOURCES, START, END, beam_size=3, return_scores=True, **SHORT
    )
    if keras.backend.backend() not in ("tensorflow", "jax"):
        with pytest.raises(ValueError, match="Received: jit_compile=True"):
            decoding.beam_search(model, SOURCES, START, END, jit_compile=True)
        return
    compiled, compiled_scores = decoding.beam_search(
        model,
        SOURCES,
        START,
        END,
        beam_size=3,
        return_scores=True,
        jit_compile=True,
        **SHORT,
    )
    np.testing.assert_array_equal(to_numpy(compiled), to_numpy(plain))
    np.testing.assert_allclose(
        to_numpy(compiled_scores), to_numpy(plain_scores), atol=1e-5
    )
    greedy = decoding.greedy_search(model, SOURCES, START, END, **SHORT)
    greedy_xla = decoding.greedy_search(
        model, SOURCES, START, END, jit_compile=True, **SHORT
    )
    np.testing.assert_array_equal(to_numpy(greedy_xla), to_numpy(greedy))


def test_jit_compile_must_be_a_bool(model):
    with pytest.raises(ValueError, match="Received: jit_compile='auto'"):
        decoding.greedy_search(model, SOURCES, START, END, jit_compile="auto")


class TableModel:
    """Next-token log-probabilities from a table: the row of the last token
    plus, optionally, a row per position, `(V, V)` and `(L, V)`."""

    variables = []

    def __init__(self, table, positions=None):
        self.table = np.asarray(table, "float32")
        self.positions = positions
        if positions is not None:
            self.positions = np.asarray(positions, "float32")
        self.max_sequence_length = 16

    def logits(self, ids, index):
        rows = ops.take(self.table, ids, axis=0)  # (B, T, V)
        if self.positions is None:
            return rows
        return rows + ops.expand_dims(ops.take(self.positions, index, 0), 0)

    def encode(self, ids):
        batch, length = ops.shape(ids)
        return ops.zeros((batch, length, 1)), ops.not_equal(ids, 0)

    def initial_cache(self, encoded, length):
        return ops.zeros((ops.shape(encoded)[0], 1)), ops.zeros((1,))

    def decode_step(self, ids, index, self_cache, cross_cache, mask):
        return self.logits(ids, ops.reshape(index, (1,))), self_cache

    def decode(self, ids, encoded, mask):
        return self.logits(ids, ops.arange(ops.shape(ids)[1]))


def log_probability_rows(rows):
    """`(R, V)` probabilities (unlisted ones ~0) -> log-probabilities."""
    table = np.full((len(rows), max(len(r) for r in rows)), -30.0)
    for i, row in enumerate(rows):
        for token, p in enumerate(row):
            if p:
                table[i, token] = np.log(p)
    return table


A, C, B, B2, B3 = 3, 4, 5, 6, 7


def early_finisher():
    """After the start token: end 0.45, `a` 0.35, `b` 0.2. `a` leads only
    to `c c ...` (end 0.1 each time), `b` to `b2 b3 <end>` with certainty.
    With `alpha=2` the best output is `b b2 b3 <end>` (-1.61 / 2.25 =
    -0.72) and beats the early `<end>` (-0.80); but `b` is only the third
    extension of the start token, so a beam of two whose first slot holds
    the finished `<end>` never grows it."""
    rows = [[0] * 8 for _ in range(8)]
    rows[START][END], rows[START][A], rows[START][B] = 0.45, 0.35, 0.2
    rows[A][END], rows[A][C] = 0.1, 0.9
    rows[C][END], rows[C][C] = 0.1, 0.9
    rows[B][B2] = rows[B2][B3] = rows[B3][END] = 1.0
    rows[END][END] = rows[0][END] = 1.0
    return TableModel(log_probability_rows(rows))


def test_keeps_k_live_hypotheses_when_one_finishes_early():
    model = early_finisher()
    source = np.array([[5, 5, 5]], "int32")  # 3 + 2 = 5 tokens at most
    kwargs = dict(beam_size=2, alpha=2.0, return_scores=True, **SHORT2)
    tokens, score = decoding.beam_search(model, source, START, END, **kwargs)
    assert to_numpy(tokens)[0].tolist() == [B, B2, B3, END, 0]
    np.testing.assert_allclose(
        to_numpy(score), [np.log(0.2) / 1.5**2], rtol=1e-5
    )
    # The search of release 0.1 keeps the early end in one of its two
    # slots, grows only `a c c ...` and returns the early end.
    old = legacy_search.legacy_beam_search(model, source, START, END, **kwargs)[
        0
    ]
    assert to_numpy(old)[0].tolist()[:1] == [END]


def numpy_beam_search(model, sources, beams, alpha, extra):
    """GNMT beam search in float64 without early stop: each sentence runs
    to its length limit. Returns the best finished hypotheses, their
    scores and, per sentence, the first step after which no live
    hypothesis could beat the best finished one."""
    table = model.table.astype("float64")
    positions = model.positions.astype("float64")

    def log_softmax(x):
        x = x - x.max()
        return x - np.log(np.exp(x).sum())

    def penalty(n):
        return ((5.0 + n) / 6.0) ** alpha

    outputs, scores, stops = [], [], []
    for source in sources:
        limit = int((source != 0).sum()) + extra
        alive = [((), 0.0, START)]  # (tokens, log P, last token)
        finished = []
        stop = None
        for step in range(limit):
            candidates = []
            for tokens, log_p, last in alive:
                row = log_softmax(table[last] + positions[step])
                for token in range(1, len(row)):
                    if step + 1 >= limit and token != END:
                        continue
                    candidates.append((tokens + (token,), log_p + row[token]))
            candidates.sort(key=lambda c: -c[1])
            top = candidates[: 2 * beams]
            for tokens, log_p in top:
                if tokens[-1] == END:
                    finished.append((log_p / penalty(step + 1), tokens))
            alive = [(t, p, t[-1]) for t, p in top if t[-1] != END][:beams]
            best = max(finished)[0] if finished else -np.inf
            bound = max([p for _, p, _ in alive], default=-np.inf)
            if stop is None and best > bound / penalty(limit):
                stop = step + 1
        score, tokens = max(finished)
        outputs.append(list(tokens))
        scores.append(score)
        stops.append(stop)
    return outputs, np.array(scores), stops


@pytest.mark.parametrize("alpha", [0.0, 0.6, 2.0])
def test_early_stop_never_drops_a_hypothesis_that_could_win(alpha):
    rng = np.random.default_rng(int(alpha * 10))
    vocabulary, beams, extra = 9, 3, 6
    table = rng.normal(0.0, 2.0, (vocabulary, vocabulary))
    table[:, END] += 1.0  # hypotheses finish early and often
    positions = rng.normal(0.0, 1.0, (16, vocabulary))
    model = TableModel(table, positions)
    sources = np.zeros((8, 6), "int32")
    for i, n in enumerate(rng.integers(1, 7, 8)):
        sources[i, :n] = 5
    tokens, scores = decoding.beam_search(
        model,
        sources,
        START,
        END,
        beam_size=beams,
        alpha=alpha,
        max_extra_length=extra,
        return_scores=True,
    )
    expected, expected_scores, stops = numpy_beam_search(
        model, sources, beams, alpha, extra
    )
    stripped = decoding.strip_special(tokens, END)
    assert stripped == [row[:-1] for row in expected]
    np.testing.assert_allclose(to_numpy(scores), expected_scores, rtol=1e-4)
    # The comparison is about early stops: most sentences could stop
    # before their length limit.
    limits = (sources != 0).sum(1) + extra
    early = [s is not None and s < n for s, n in zip(stops, limits)]
    assert sum(early) >= len(early) // 2, (stops, limits)


def test_beam_of_one_is_greedy_and_matches_the_old_search(model):
    greedy = to_numpy(decoding.greedy_search(model, SOURCES, START, END))
    for alpha in (0.0, 0.6):
        tokens, scores = decoding.beam_search(
            model,
            SOURCES,
            START,
            END,
            beam_size=1,
            alpha=alpha,
            return_scores=True,
        )
        old, old_scores = legacy_search.legacy_beam_search(
            model,
            SOURCES,
            START,
            END,
            beam_size=1,
            alpha=alpha,
            return_scores=True,
        )
        np.testing.assert_array_equal(to_numpy(tokens), greedy)
        np.testing.assert_array_equal(to_numpy(old), greedy)
        np.testing.assert_allclose(
            to_numpy(scores), to_numpy(old_scores), rtol=1e-5
        )


def test_search_loop_with_one_beam_and_no_penalty_is_greedy(model):
    # `beam_search(beam_size=1)` runs greedy search; the GNMT loop itself
    # gives the same tokens with one live hypothesis and alpha = 0: a
    # hypothesis left live beside a finished one has a lower log P.
    spec = decoding.Beam(start_id=START, end_id=END, beam_size=1, alpha=0.0)
    run = loop.compile_search(model, spec, beam.beam_fn)
    tokens, _ = run(ops.convert_to_tensor(SOURCES))
    greedy = decoding.greedy_search(model, SOURCES, START, END)
    np.testing.assert_array_equal(to_numpy(tokens), to_numpy(greedy))


def _extensions_reference(logits, normalizers, alive, k):
    # Every extension's score, padding at NEGATIVE, ranked best first and
    # equal scores by position, as `top_k` ranks them on tensorflow and
    # jax: (scores, hypotheses, tokens).
    size = logits.shape[-1]
    totals = alive[:, :, None] + (logits - normalizers)
    totals[:, :, 0] = search_settings.NEGATIVE
    totals = totals.reshape(len(totals), -1)
    order = np.argsort(-totals, axis=1, kind="stable")[:, :k]
    return (
        np.take_along_axis(totals, order, axis=1),
        order // size,
        order % size,
    )


def _random_extensions_case(rng, beams, size):
    logits = rng.normal(size=(4, beams, size)).astype("float32")
    normalizers = np.log(np.exp(logits).sum(-1, keepdims=True))
    alive = -rng.uniform(1, 5, size=(4, beams)).astype("float32")
    # Row 0: the first step, one live hypothesis. Row 1: the best logits
    # of a hypothesis all in one block. Row 2: in the last (maybe padded)
    # block. Row 3: padding's logit is the largest, and must not count.
    alive[0, 1:] = search_settings.NEGATIVE
    logits[1, 1, 100:110] += 10.0
    logits[2, -1, -3:] += 10.0
    logits[3, :, 0] += 20.0
    return logits, normalizers, alive


@pytest.mark.parametrize(
    "beams, size", [(4, 8000), (4, 997), (3, 150), (4, 60)]
)
def test_best_extensions_equal_one_top_k_over_all_scores(beams, size):
    # 8000 words cut into blocks of 64; 997 has no divisor near its block
    # width, so the rows are padded; 60 is too short for blocks and takes
    # one `top_k`.
    logits, normalizers, alive = _random_extensions_case(
        np.random.default_rng(size), beams, size
    )
    k = 2 * beams
    inputs = [ops.convert_to_tensor(x) for x in (logits, normalizers, alive)]
    expected = _extensions_reference(logits, normalizers, alive, k)
    ways = {
        "chosen": beam.best_extensions(*inputs, k),
        "one top_k": beam.extensions_in_one_top_k(*inputs, k),
    }
    for way, got in ways.items():
        got = [to_numpy(x) for x in got]
        assert got[1].dtype == np.int32 and got[2].dtype == np.int32
        names = ("scores", "hypotheses", "tokens")
        for name, a, b in zip(names, got, expected):
            np.testing.assert_array_equal(a, b, err_msg=f"{way}: {name}")
        assert not (got[2] == 0).any()


def test_best_extensions_rank_ties_as_top_k():
    # Equal logits across many blocks, hypotheses of equal score: the
    # extensions must come in the order one `top_k` gives them.
    beams, size = 4, 8000
    logits = np.full((3, beams, size), -30.0, "float32")
    logits[0, 2, 5000:5003] = 0.0  # three winners, then ties
    logits[1, :, ::1000] = -1.0  # one per 1000: ties across blocks
    logits[2, 3, 7990:] = 2.0  # ties in the last block
    normalizers = np.zeros((3, beams, 1), "float32")
    alive = np.full((3, beams), -2.0, "float32")
    got = beam.best_extensions(
        ops.convert_to_tensor(logits),
        ops.convert_to_tensor(normalizers),
        ops.convert_to_tensor(alive),
        8,
    )
    scores, hypotheses, tokens = [to_numpy(x) for x in got]
    expected = _extensions_reference(logits, normalizers, alive, 8)
    np.testing.assert_array_equal(scores, expected[0])
    rows = np.arange(3)[:, None]
    np.testing.assert_array_equal(
        alive[rows, hypotheses] + logits[rows, hypotheses, tokens], scores
    )
    assert all(len(set(zip(h, t))) == 8 for h, t in zip(hypotheses, tokens))
    if keras.backend.backend() != "torch":
        # torch's own `topk` leaves the order of equal values unspecified.
        np.testing.assert_array_equal(hypotheses, expected[1])
        np.testing.assert_array_equal(tokens, expected[2])


def test_log_normalizers_equal_logsumexp():
    rng = np.random.default_rng(0)
    logits = (rng.normal(size=(6, 8000)) * 4).astype("float32")
    logits[0] += 80.0  # exp would overflow without the shift
    logits[1, 7] = 60.0  # one token takes nearly all the mass
    got = to_numpy(state.log_normalizers(ops.convert_to_tensor(logits)))
    shifted = logits.astype("float64") - logits.max(-1, keepdims=True)
    expected = logits.max(-1, keepdims=True) + np.log(
        np.exp(shifted).sum(-1, keepdims=True)
    )
    assert got.shape == (6, 1)
    np.testing.assert_allclose(got, expected, rtol=0, atol=2e-5)


def test_search_over_a_large_vocabulary_equals_one_top_k(monkeypatch):
    # 4 beams x 600 words take the blocks; the same search with one
    # `top_k` over the row gives the same tokens and scores.
    keras.utils.set_random_seed(4)
    large = Transformer(
        vocabulary_size=600,
        num_layers=1,
        hidden_dim=16,
        num_heads=2,
        intermediate_dim=32,
        max_sequence_length=16,
    )
    assert beam.block_width(600, 2) is not None
    sources = np.array([[5, 6, 7, 2], [9, 2, 0, 0]], "int32")

    def run():
        with loop.fresh_traces(large):
            return decoding.beam_search(
                large, sources, START, END, return_scores=True, **SHORT
            )

    blocked, blocked_scores = run()
    monkeypatch.setattr(beam, "block_width", lambda size, k: None)
    plain, plain_scores = run()
    np.testing.assert_array_equal(to_numpy(blocked), to_numpy(plain))
    np.testing.assert_array_equal(
        to_numpy(blocked_scores), to_numpy(plain_scores)
    )


def test_n_best_returns_all_beams_sorted_with_their_scores(model):
    best, best_score = decoding.beam_search(
        model, SOURCES, START, END, beam_size=3, return_scores=True, **SHORT
    )
    tokens, scores = decoding.beam_search(
        model, SOURCES, START, END, beam_size=3, n_best=True, **SHORT
    )
    tokens, scores = to_numpy(tokens), to_numpy(scores)
    assert tokens.shape[:2] == scores.shape == (3, 3)
    assert np.all(np.diff(scores, axis=1) <= 0)  # best first
    np.testing.assert_array_equal(tokens[:, 0], to_numpy(best))
    np.testing.assert_allclose(scores[:, 0], to_numpy(best_score), atol=1e-5)
    # Each hypothesis is distinct, ends with END, and its score is its
    # log-probability under the model over the GNMT penalty.
    encoded, mask = model.encode(SOURCES)
    for i in range(3):
        hypotheses = [
            tuple(row[: list(row).index(END) + 1]) for row in tokens[i]
        ]
        assert len(set(hypotheses)) == 3
        for hypothesis, score in zip(hypotheses, scores[i]):
            inputs = np.array([[START, *hypothesis[:-1]]], "int32")
            logits = to_numpy(
                model.decode(inputs, encoded[i : i + 1], mask[i : i + 1])
            )[0].astype("float64")
            log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
            total = log_probs[np.arange(len(hypothesis)), hypothesis].sum()
            penalty = ((5.0 + len(hypothesis)) / 6.0) ** 0.6
            np.testing.assert_allclose(score, total / penalty, rtol=1e-4)
