"""tf.contrib.seq2seq against numpy and TF 1.15's own test numbers.

``sequence_loss`` and the attention scores (Bahdanau with weight norm, Luong with scale, masked
memory) are checked against numpy re-implementations of contrib's formulas, using the variables'
values; ``gather_tree``, ``_mask_probs`` and ``_beam_search_step`` against the expected outputs
written in TF 1.15's beam_search_ops_test.py and beam_search_decoder_test.py; a greedy
``dynamic_decode`` against the same cell stepped by hand; beam search against greedy decoding
(beam width 1) and against the best sequence found by enumerating all of them; and a small
attention seq2seq model learns to copy its input."""

import itertools

import numpy as np
import pytest

import zps as tf
from zps.contrib.seq2seq import beam_search_decoder as bsd

s2s = tf.contrib.seq2seq
f32 = np.float32


def _log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def _softmax(x):
    return np.exp(_log_softmax(x))


def _session():
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    return sess


# -- sequence_loss ----------------------------------------------------------------------------
@pytest.mark.parametrize("avg_t,avg_b,sum_t,sum_b", [
    (True, True, False, False), (False, True, False, False), (True, False, False, False),
    (False, False, False, False), (False, False, True, True), (False, False, True, False),
    (False, False, False, True)])
def test_sequence_loss_matches_numpy(avg_t, avg_b, sum_t, sum_b):
    rng = np.random.RandomState(0)
    logits = rng.randn(3, 4, 5).astype(f32)
    targets = rng.randint(0, 5, [3, 4]).astype(np.int32)
    weights = np.array([[1, 1, 1, 0], [1, 0.5, 0, 0], [2, 1, 1, 1]], f32)
    xent = -np.take_along_axis(_log_softmax(logits), targets[..., None], 2)[..., 0] * weights
    if avg_t and avg_b:
        want = xent.sum() / weights.sum()
    elif sum_t and sum_b:
        want = xent.sum() / np.count_nonzero(weights)
    elif avg_t or avg_b:
        axis = 0 if avg_b else 1
        want = xent.sum(axis) / weights.sum(axis)
    elif sum_t or sum_b:
        axis = 0 if sum_b else 1
        want = xent.sum(axis) / np.count_nonzero(weights, axis)
    else:
        want = xent
    with tf.Graph().as_default():
        loss = s2s.sequence_loss(logits, targets, weights, average_across_timesteps=avg_t,
                                 average_across_batch=avg_b, sum_over_timesteps=sum_t,
                                 sum_over_batch=sum_b)
        np.testing.assert_allclose(tf.Session().run(loss), want, rtol=1e-5)


def test_sequence_loss_custom_function_and_errors():
    with tf.Graph().as_default():
        logits, targets, weights = tf.ones([2, 3, 4]), tf.zeros([2, 3], tf.int32), tf.ones([2, 3])
        seen = []

        def loss_fn(labels, logits):
            seen.append((labels.shape.as_list(), logits.shape.as_list()))
            return tf.ones_like(labels, dtype=tf.float32) * 2.0
        loss = s2s.sequence_loss(logits, targets, weights, softmax_loss_function=loss_fn)
        assert tf.Session().run(loss) == pytest.approx(2.0)
        assert seen == [([6], [6, 4])]
        with pytest.raises(ValueError, match="Logits must be a"):
            s2s.sequence_loss(tf.ones([2, 3]), targets, weights)
        with pytest.raises(ValueError, match="average_across_timesteps and sum_over_timesteps"):
            s2s.sequence_loss(logits, targets, weights, sum_over_timesteps=True)
        with pytest.raises(ValueError, match="average_across_batch and sum_over_batch"):
            s2s.sequence_loss(logits, targets, weights, average_across_timesteps=False,
                              sum_over_batch=True)


# -- attention ----------------------------------------------------------------------------------
MEMORY = np.random.RandomState(1).randn(2, 5, 3).astype(f32)
LENGTHS = [5, 3]


def _masked_softmax(score, lengths):
    score = np.where(np.arange(score.shape[1])[None] < np.array(lengths)[:, None], score,
                     -np.inf)
    return _softmax(score)


def test_luong_attention_scaled_matches_numpy():
    query = np.random.RandomState(2).randn(2, 4).astype(f32)
    with tf.Graph().as_default():
        mech = s2s.LuongAttention(4, MEMORY, memory_sequence_length=LENGTHS, scale=True)
        alignments, state = mech(tf.constant(query), mech.initial_state(2, tf.float32))
        g = [v for v in tf.global_variables() if v.op.name.endswith("attention_g")][0]
        sess = _session()
        sess.run(g.assign(1.7))
        got, w = sess.run([alignments, mech.memory_layer.kernel])
    masked = MEMORY * (np.arange(5)[None, :, None] < np.array(LENGTHS)[:, None, None])
    score = 1.7 * np.einsum("bd,btd->bt", query, masked @ w)
    np.testing.assert_allclose(got, _masked_softmax(score, LENGTHS), rtol=1e-5, atol=1e-7)
    assert got[1, 3:].tolist() == [0.0, 0.0]


def test_bahdanau_attention_normalized_matches_numpy():
    query = np.random.RandomState(3).randn(2, 6).astype(f32)
    with tf.Graph().as_default():
        mech = s2s.BahdanauAttention(4, MEMORY, memory_sequence_length=LENGTHS, normalize=True)
        alignments, _ = mech(tf.constant(query), mech.initial_state(2, tf.float32))
        names = sorted(v.op.name for v in tf.global_variables())
        assert names == ["bahdanau_attention/attention_b", "bahdanau_attention/attention_g",
                         "bahdanau_attention/attention_v",
                         "bahdanau_attention/query_layer/kernel", "memory_layer/kernel"]
        sess = _session()
        by_name = {v.op.name: v for v in tf.global_variables()}
        sess.run(by_name["bahdanau_attention/attention_b"].assign([0.1, -0.2, 0.3, 0.0]))
        values = sess.run({n: v for n, v in by_name.items()})
        got = sess.run(alignments)
    v, g, b = (values["bahdanau_attention/attention_" + k] for k in "vgb")
    assert g == pytest.approx(np.sqrt(1 / 4))
    keys = (MEMORY * (np.arange(5)[None, :, None] < np.array(LENGTHS)[:, None, None])) @ values[
        "memory_layer/kernel"]
    pq = query @ values["bahdanau_attention/query_layer/kernel"]
    score = (g * v / np.sqrt((v * v).sum()) * np.tanh(keys + pq[:, None] + b)).sum(2)
    np.testing.assert_allclose(got, _masked_softmax(score, LENGTHS), rtol=1e-5, atol=1e-7)


def test_attention_wrapper_step_matches_numpy():
    inputs = np.random.RandomState(4).randn(2, 2).astype(f32)
    with tf.Graph().as_default():
        mech = s2s.LuongAttention(3, MEMORY, memory_sequence_length=LENGTHS,
                                  probability_fn=s2s.hardmax)
        cell = s2s.AttentionWrapper(tf.nn.rnn_cell.BasicRNNCell(3), mech,
                                    attention_layer_size=4, alignment_history=True)
        state0 = cell.zero_state(2, tf.float32)
        out1, state1 = cell(tf.constant(inputs), state0)
        out2, state2 = cell(tf.constant(inputs), state1)
        history = state2.alignment_history.stack()
        assert cell.output_size == 4 and cell.state_size.attention == 4
        sess = _session()
        values = {v.op.name: v for v in tf.global_variables()}
        values = sess.run(values)
        got = sess.run({"out1": out1, "out2": out2, "align": state2.alignments,
                        "history": history, "time": state2.time})
    assert sorted(values) == ["attention_wrapper/attention_layer/kernel",
                              "attention_wrapper/basic_rnn_cell/bias",
                              "attention_wrapper/basic_rnn_cell/kernel", "memory_layer/kernel"]
    assert len(cell.variables) == 3        # the memory layer is the mechanism's, as in TF1
    keys = MEMORY * (np.arange(5)[None, :, None] < np.array(LENGTHS)[:, None, None])
    attention, outs, aligns = np.zeros([2, 4], f32), [], []
    h = np.zeros([2, 3], f32)
    for _ in range(2):
        x = np.concatenate([inputs, attention], 1)
        h = np.tanh(np.concatenate([x, h], 1) @ values["attention_wrapper/basic_rnn_cell/kernel"]
                    + values["attention_wrapper/basic_rnn_cell/bias"])
        score = np.einsum("bd,btd->bt", h, keys @ values["memory_layer/kernel"])
        score = np.where(np.arange(5)[None] < np.array(LENGTHS)[:, None], score, -np.inf)
        align = np.eye(5, dtype=f32)[score.argmax(1)]
        context = np.einsum("bt,btd->bd", align, keys)
        attention = np.concatenate([h, context], 1) @ values[
            "attention_wrapper/attention_layer/kernel"]
        outs.append(attention)
        aligns.append(align)
    np.testing.assert_allclose(got["out1"], outs[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["out2"], outs[1], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got["history"], np.stack(aligns))
    assert got["time"] == 2


def test_hardmax_and_safe_cumprod():
    with tf.Graph().as_default():
        x = np.array([[0.5, 0.9, 0.1], [0.0, 0.7, 0.5]], f32)
        hard, cum = tf.Session().run([s2s.hardmax(x), s2s.safe_cumprod(x, axis=1,
                                                                       exclusive=True)])
    np.testing.assert_array_equal(hard, [[0, 1, 0], [0, 1, 0]])
    np.testing.assert_allclose(cum[0], [1.0, 0.5, 0.45], rtol=1e-5)
    tiny = np.finfo(f32).tiny      # a zero is clipped to tiny: no log(0) = -inf
    np.testing.assert_allclose(cum[1], [1.0, tiny, tiny * 0.7], rtol=1e-5)


# -- gather_tree (TF 1.15's test cases) ---------------------------------------------------------
def _tbt(x):
    return np.transpose(np.array(x), [1, 0, 2]).astype(np.int32)


def _gather_tree(step_ids, parent_ids, lengths, end_token):
    with tf.Graph().as_default():
        return tf.Session().run(s2s.gather_tree(step_ids, parent_ids, lengths, end_token))


def test_gather_tree_tf_cases():
    ids = _tbt([[[1, 2, 3], [4, 5, 6], [7, 8, 9]], [[2, 3, 4], [5, 6, 7], [8, 9, 10]]])
    parents = _tbt([[[0, 0, 0], [0, 1, 1], [2, 1, 2]], [[0, 0, 0], [1, 2, 0], [2, 1, 1]]])
    np.testing.assert_array_equal(
        _gather_tree(ids, parents, [3, 3], 11),
        _tbt([[[2, 2, 2], [6, 5, 6], [7, 8, 9]], [[2, 4, 4], [7, 6, 6], [8, 9, 10]]]))
    ids = _tbt([[[1, 2, 3], [4, 5, 6], [7, 8, 9], [-1, -1, -1]]])
    parents = _tbt([[[0, 0, 0], [0, 1, 1], [2, 1, 2], [-1, -1, -1]]])
    np.testing.assert_array_equal(_gather_tree(ids, parents, [3], 10),
                                  _tbt([[[2, 2, 2], [6, 5, 6], [7, 8, 9], [10, 10, 10]]]))
    bad = _tbt([[[0, 0, 0], [0, -1, 1], [2, 1, 2], [-1, -1, -1]]])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"parent id -1 at \(batch, time, beam\) == \(0, 0, 1\)"):
        _gather_tree(ids, bad, [3], 10)


def test_gather_tree_batch_and_end_token():
    step_ids = _tbt([[[3, 4, 0, 4, 0], [4, 2, 0, 3, 1], [1, 1, 3, 2, 2], [3, 1, 2, 3, 4]],
                     [[3, 4, 0, 4, 0], [4, 2, 0, 3, 1], [1, 1, 3, 2, 2], [3, 1, 2, 3, 4]],
                     [[1, 2, 3, 4, 2], [2, 1, 1, 3, 2], [3, 0, 1, 0, 0], [3, 4, 0, 2, 4]],
                     [[0, 2, 2, 3, 1], [3, 2, 2, 2, 3], [3, 4, 3, 0, 3], [1, 2, 2, 2, 4]]])
    parent_ids = _tbt([[[4, 2, 4, 3, 4], [3, 4, 0, 2, 0], [3, 1, 3, 2, 2], [0, 2, 1, 4, 2]],
                       [[4, 2, 4, 3, 4], [3, 4, 0, 2, 0], [3, 1, 3, 2, 2], [0, 2, 1, 4, 2]],
                       [[3, 0, 0, 4, 0], [1, 2, 4, 2, 2], [4, 4, 0, 3, 0], [2, 4, 4, 3, 0]],
                       [[3, 1, 4, 1, 3], [3, 2, 4, 0, 4], [1, 0, 1, 4, 2], [0, 3, 2, 0, 1]]])
    e = 5
    expected = _tbt([[[e] * 5] * 4,
                     [[3, 4, 0, 4, 0], [e] * 5, [e] * 5, [e] * 5],
                     [[2, 3, 2, 3, 3], [2, 1, 1, 3, 2], [e] * 5, [e] * 5],
                     [[2, 3, 2, 1, 1], [2, 3, 2, 3, 2], [3, 4, 3, 0, 3], [e] * 5]])
    np.testing.assert_array_equal(_gather_tree(step_ids, parent_ids, [0, 1, 2, 3], e), expected)
    # With end token 2, a beam that reaches a 2 is all 2s after it.
    got = _gather_tree(step_ids, parent_ids, [0, 1, 2, 3], 2)
    np.testing.assert_array_equal(got[:, 3].T, [[2, 2, 2, 2], [3, 3, 4, 2], [2, 2, 2, 2],
                                                [1, 3, 0, 2], [1, 2, 2, 2]])


# -- one beam-search step (TF 1.15's test numbers) ----------------------------------------------
def test_mask_probs_tf_case():
    probs = np.array([[[-.2, -.2, -.2, -.2, -.2], [-.3, -.3, -.3, 3, 0], [5, 6, 0, 0, 0]],
                      [[-.2, -.2, -.2, -.2, 0], [-.3, -.3, -.1, 3, 0], [5, 6, 3, 0, 0]]], f32)
    finished = np.array([[0, 1, 0], [0, 1, 1]], bool)
    with tf.Graph().as_default():
        masked = tf.Session().run(bsd._mask_probs(tf.constant(probs), 0, tf.constant(finished)))
    np.testing.assert_array_equal(masked[~finished], probs[~finished])
    lowest = np.finfo(f32).min
    np.testing.assert_array_equal(masked[finished], [[0] + [lowest] * 4] * 3)


LOGITS = np.full([2, 3, 5], 0.0001)
LOGITS[0, 0, 2], LOGITS[0, 0, 3], LOGITS[0, 1, 3], LOGITS[0, 1, 4] = 1.9, 2.1, 3.1, 0.9
LOGITS[1, 0, 1], LOGITS[1, 1, 2], LOGITS[1, 2, 2], LOGITS[1, 2, 3] = 0.5, 2.7, 10.0, 0.2


def _step(logits, lengths, finished, log_probs=None, beam_width=3):
    with tf.Graph().as_default():
        dummy = tf.zeros([2, beam_width])
        state = bsd.BeamSearchDecoderState(
            cell_state=dummy,
            log_probs=(tf.nn.log_softmax(tf.ones([2, beam_width])) if log_probs is None
                       else tf.constant(log_probs)),
            lengths=tf.constant(lengths, tf.int64), finished=tf.constant(finished),
            accumulated_attention_probs=())
        out, next_state = bsd._beam_search_step(
            time=2, logits=tf.constant(logits, tf.float32), next_cell_state=dummy,
            beam_state=state, batch_size=tf.convert_to_tensor(2), beam_width=beam_width,
            end_token=0, length_penalty_weight=0.6)
        return tf.Session().run([out, next_state, state])


def test_beam_search_step_tf_case():
    out, nxt, state = _step(LOGITS, [[2] * 3] * 2, np.zeros([2, 3], bool))
    np.testing.assert_array_equal(out.predicted_ids, [[3, 3, 2], [2, 2, 1]])
    np.testing.assert_array_equal(out.parent_ids, [[1, 0, 0], [2, 1, 0]])
    np.testing.assert_array_equal(nxt.lengths, [[3, 3, 3], [3, 3, 3]])
    assert not nxt.finished.any()
    lp = _log_softmax(LOGITS.astype(f32))
    want = [state.log_probs[0][[1, 0, 0]] + [lp[0, 1, 3], lp[0, 0, 3], lp[0, 0, 2]],
            state.log_probs[1][[2, 1, 0]] + [lp[1, 2, 2], lp[1, 1, 2], lp[1, 0, 1]]]
    np.testing.assert_allclose(nxt.log_probs, want, rtol=1e-6)
    np.testing.assert_allclose(out.scores, np.array(want) / ((5 + 3) / 6) ** 0.6, rtol=1e-6)


def test_beam_search_step_with_eos_tf_case():
    logits = LOGITS.copy()
    logits[1, 1, 2], logits[1, 2, 2] = 5.7, 1.0
    out, nxt, state = _step(logits, [[2, 1, 2], [2, 2, 1]],
                            np.array([[False, True, False], [False, False, True]]))
    np.testing.assert_array_equal(out.parent_ids, [[1, 0, 0], [1, 2, 0]])
    np.testing.assert_array_equal(out.predicted_ids, [[0, 3, 2], [2, 0, 1]])
    np.testing.assert_array_equal(nxt.lengths, [[1, 3, 3], [3, 1, 3]])
    np.testing.assert_array_equal(nxt.finished, [[True, False, False], [False, True, False]])
    lp = _log_softmax(logits.astype(f32))
    want = [state.log_probs[0][[1, 0, 0]] + [0, lp[0, 0, 3], lp[0, 0, 2]],
            state.log_probs[1][[1, 2, 0]] + [lp[1, 1, 2], 0, lp[1, 0, 1]]]
    np.testing.assert_allclose(nxt.log_probs, want, rtol=1e-6)


def test_large_beam_step_tf_case():
    logits = np.full([2, 8, 5], 0.0001)
    logits[:, :3] = LOGITS
    log_probs = np.where(np.arange(8) == 0, 0.0, -np.inf)[None].repeat(2, 0).astype(f32)
    out, nxt, _ = _step(logits, [[2] * 8] * 2, np.zeros([2, 8], bool), log_probs, beam_width=8)
    assert (out.predicted_ids[0, 0], out.predicted_ids[0, 1], out.predicted_ids[1, 0]) == (3, 2, 1)
    assert np.isneginf(nxt.log_probs[:, -3:]).all() and (nxt.log_probs[:, :-3] > -np.inf).all()
    np.testing.assert_array_equal(out.parent_ids[:, :5], 0)   # only beam 0 was alive


def test_tile_batch():
    with tf.Graph().as_default():
        t = tf.placeholder(tf.float32, [None, 2])
        tiled = s2s.tile_batch({"a": t, "b": tf.constant([1, 2])}, 3)
        assert tiled["a"].shape.as_list() == [None, 2] and tiled["b"].shape.as_list() == [6]
        got = tf.Session().run(tiled, {t: [[1, 2], [3, 4]]})
    np.testing.assert_array_equal(got["a"], [[1, 2]] * 3 + [[3, 4]] * 3)
    np.testing.assert_array_equal(got["b"], [1, 1, 1, 2, 2, 2])


# -- decoding -----------------------------------------------------------------------------------
VOCAB, END, BATCH = 5, 4, 3
EMBEDDING = np.random.RandomState(5).randn(VOCAB, 3).astype(f32)


def _perturbed_state(cell, batch, seed=7):
    state = cell.zero_state(batch, tf.float32)
    rng = np.random.RandomState(seed)
    return tf.nest.map_structure(
        lambda z: z + rng.randn(*z.shape.as_list()).astype(f32), state)


def test_greedy_dynamic_decode_matches_the_cell_stepped_by_hand():
    with tf.Graph().as_default():
        tf.set_random_seed(1)
        cell = tf.nn.rnn_cell.LSTMCell(4)
        layer = tf.layers.Dense(VOCAB)
        initial = _perturbed_state(cell, BATCH)
        helper = s2s.GreedyEmbeddingHelper(EMBEDDING, tf.fill([BATCH], 1), END)
        decoder = s2s.BasicDecoder(cell, helper, initial, output_layer=layer)
        outputs, final_state, lengths = s2s.dynamic_decode(decoder, maximum_iterations=6)
        assert isinstance(outputs, s2s.BasicDecoderOutput)
        assert sorted(v.op.name for v in tf.global_variables()) == [
            "decoder/dense/bias", "decoder/dense/kernel", "decoder/lstm_cell/bias",
            "decoder/lstm_cell/kernel"]
        # The same cell and layer (same variables), stepped in Python.
        state, ids, by_hand = initial, tf.fill([BATCH], 1), []
        for _ in range(6):
            out, state = cell(tf.nn.embedding_lookup(EMBEDDING, ids), state)
            logits = layer(out)
            ids = tf.argmax(logits, -1, output_type=tf.int32)
            by_hand.append((logits, ids, state))
        sess = _session()
        got, hand = sess.run([(outputs, final_state, lengths), by_hand])
    (out, fstate, lens) = got
    hand_ids = np.stack([h[1] for h in hand], 1)
    hand_logits = np.stack([h[0] for h in hand], 1)
    ended = np.cumsum(hand_ids == END, 1) > 0
    want_lens = np.where(ended.any(1), ended.argmax(1) + 1, 6)
    np.testing.assert_array_equal(lens, want_lens)
    assert len(set(map(tuple, hand_ids))) > 1      # the examples decode differently
    steps = out.sample_id.shape[1]
    assert steps == want_lens.max()
    np.testing.assert_array_equal(out.sample_id, hand_ids[:, :steps])
    np.testing.assert_allclose(out.rnn_output, hand_logits[:, :steps], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(fstate.h, hand[steps - 1][2].h, rtol=1e-5, atol=1e-6)


def test_training_helper_impute_finished_and_time_major():
    inputs = np.random.RandomState(8).randn(BATCH, 4, 2).astype(f32)
    with tf.Graph().as_default():
        cell = tf.nn.rnn_cell.GRUCell(3)
        helper = s2s.TrainingHelper(np.transpose(inputs, [1, 0, 2]), [4, 2, 3], time_major=True)
        decoder = s2s.BasicDecoder(cell, helper, cell.zero_state(BATCH, tf.float32))
        outputs, state, lengths = s2s.dynamic_decode(decoder, output_time_major=True,
                                                     impute_finished=True)
        ref_out, ref_state = tf.nn.dynamic_rnn(cell, tf.constant(inputs),
                                               sequence_length=[4, 2, 3], dtype=tf.float32)
        sess = _session()
        (out, st, n), (r_out, r_st) = sess.run([(outputs, state, lengths), (ref_out, ref_state)])
    np.testing.assert_array_equal(n, [4, 2, 3])
    assert out.rnn_output.shape == (4, BATCH, 3)
    np.testing.assert_allclose(np.transpose(out.rnn_output, [1, 0, 2]), r_out, rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(st, r_st, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(out.sample_id, np.transpose(r_out.argmax(-1)) * (
        np.arange(4)[:, None] < [4, 2, 3]))


def test_custom_helper_and_errors():
    with tf.Graph().as_default():
        cell = tf.nn.rnn_cell.BasicRNNCell(2)
        helper = s2s.CustomHelper(
            lambda: (tf.zeros([2], tf.bool), tf.ones([2, 3])),
            lambda time, outputs, state: tf.fill([2], time),
            lambda time, outputs, state, sample_ids: (time + 1 >= 3, tf.ones([2, 3]), state))
        with pytest.raises(ValueError, match="batch_size accessed before initialize"):
            _ = helper.batch_size
        outputs, _, lengths = s2s.dynamic_decode(
            s2s.BasicDecoder(cell, helper, cell.zero_state(2, tf.float32)))
        sess = _session()
        ids, n = sess.run([outputs.sample_id, lengths])
        np.testing.assert_array_equal(ids, [[0, 1, 2]] * 2)
        np.testing.assert_array_equal(n, [3, 3])
        with pytest.raises(TypeError, match="Expected decoder to be type Decoder"):
            s2s.dynamic_decode(helper)
        with pytest.raises(TypeError, match="helper must be a Helper"):
            s2s.BasicDecoder(cell, object(), None)
        with pytest.raises(ValueError, match="start_tokens must be a vector"):
            s2s.GreedyEmbeddingHelper(EMBEDDING, 1, END)


def test_sample_embedding_helper_samples_valid_ids():
    with tf.Graph().as_default():
        cell = tf.nn.rnn_cell.GRUCell(4)
        helper = s2s.SampleEmbeddingHelper(EMBEDDING, tf.fill([BATCH], 1), END, seed=3)
        outputs, _, lengths = s2s.dynamic_decode(
            s2s.BasicDecoder(cell, helper, cell.zero_state(BATCH, tf.float32),
                             output_layer=tf.layers.Dense(VOCAB)), maximum_iterations=5)
        ids, n = _session().run([outputs.sample_id, lengths])
    assert ((0 <= ids) & (ids < VOCAB)).all() and (n <= 5).all() and ids.shape[1] == n.max()


def _beam_decode(cell, layer, initial, beam_width, steps, penalty=0.0):
    tiled = s2s.tile_batch(initial, beam_width)
    decoder = s2s.BeamSearchDecoder(cell, EMBEDDING, tf.fill([BATCH], 1), END, tiled,
                                    beam_width, output_layer=layer,
                                    length_penalty_weight=penalty)
    return s2s.dynamic_decode(decoder, maximum_iterations=steps)


def test_beam_width_one_is_greedy():
    with tf.Graph().as_default():
        tf.set_random_seed(2)
        cell, layer = tf.nn.rnn_cell.GRUCell(4), tf.layers.Dense(VOCAB)
        initial = _perturbed_state(cell, BATCH)
        greedy, _, glens = s2s.dynamic_decode(s2s.BasicDecoder(
            cell, s2s.GreedyEmbeddingHelper(EMBEDDING, tf.fill([BATCH], 1), END), initial,
            output_layer=layer), maximum_iterations=7)
        beams, bstate, _ = _beam_decode(cell, layer, initial, 1, 7)
        assert isinstance(beams, s2s.FinalBeamSearchDecoderOutput)
        assert isinstance(bstate, s2s.BeamSearchDecoderState)
        sess = _session()
        g, glens, b, blens = sess.run([greedy.sample_id, glens, beams.predicted_ids,
                                       bstate.lengths])
    np.testing.assert_array_equal(blens[:, 0], glens)
    for i, n in enumerate(glens):
        np.testing.assert_array_equal(b[i, :n, 0], g[i, :n])


def _gru_numpy(values, prefix):
    gk, gb = values[prefix + "gates/kernel"], values[prefix + "gates/bias"]
    ck, cb = values[prefix + "candidate/kernel"], values[prefix + "candidate/bias"]

    def step(x, h):
        sig = 1 / (1 + np.exp(-(np.concatenate([x, h]) @ gk + gb)))
        r, u = sig[:h.size], sig[h.size:]
        c = np.tanh(np.concatenate([x, r * h]) @ ck + cb)
        return u * h + (1 - u) * c
    return step


def test_best_beam_is_the_best_sequence_by_enumeration():
    steps, width = 3, VOCAB * VOCAB
    with tf.Graph().as_default():
        tf.set_random_seed(3)
        cell = tf.nn.rnn_cell.GRUCell(4)
        layer = tf.layers.Dense(VOCAB, kernel_initializer=tf.random_normal_initializer(
            stddev=1.5, seed=3))
        initial = _perturbed_state(cell, BATCH, seed=9)
        beams, bstate, _ = _beam_decode(cell, layer, initial, width, steps)
        sess = _session()
        values = sess.run({v.op.name: v for v in tf.global_variables()})
        got, scores, h0 = sess.run([beams.predicted_ids,
                                    beams.beam_search_decoder_output.scores, initial])
    step = _gru_numpy(values, "decoder/gru_cell/")
    kernel, bias = values["decoder/dense/kernel"], values["decoder/dense/bias"]
    for b in range(BATCH):
        best, best_ids = -np.inf, None
        for seq in itertools.product(range(VOCAB), repeat=steps):
            h, prev, total = h0[b], 1, 0.0
            for t, tok in enumerate(seq):
                h = step(EMBEDDING[prev], h)
                total += _log_softmax(h @ kernel + bias)[tok]
                prev = tok
                if tok == END:
                    seq = seq[:t + 1] + (END,) * (steps - t - 1)
                    break
            if total > best + 1e-9:
                best, best_ids = total, seq
        np.testing.assert_array_equal(got[b, :, 0], best_ids)
        assert scores[b, -1, 0] == pytest.approx(best, rel=1e-5)


def test_attention_seq2seq_learns_to_copy():
    go, eos, length, vocab = 0, 1, 3, 6        # tokens 2..5 are the symbols to copy
    data = np.array(list(itertools.product(range(2, vocab), repeat=length)), np.int32)
    with tf.Graph().as_default():
        tf.set_random_seed(0)
        src = tf.placeholder(tf.int32, [None, length])
        batch = tf.shape(src)[0]
        emb = tf.get_variable("embedding", [vocab, 8])
        memory, enc_state = tf.nn.dynamic_rnn(
            tf.nn.rnn_cell.GRUCell(16), tf.nn.embedding_lookup(emb, src), dtype=tf.float32,
            scope="encoder")
        cell = s2s.AttentionWrapper(tf.nn.rnn_cell.GRUCell(16), s2s.LuongAttention(16, memory),
                                    attention_layer_size=16)
        initial = cell.zero_state(batch, tf.float32).clone(cell_state=enc_state)
        layer = tf.layers.Dense(vocab)
        teacher = tf.nn.embedding_lookup(emb, tf.concat([tf.fill([batch, 1], go), src], 1))
        with tf.variable_scope("decode"):
            train_out, _, _ = s2s.dynamic_decode(s2s.BasicDecoder(
                cell, s2s.TrainingHelper(teacher, tf.fill([batch], length + 1)), initial, layer))
        loss = s2s.sequence_loss(train_out.rnn_output,
                                 tf.concat([src, tf.fill([batch, 1], eos)], 1),
                                 tf.ones([batch, length + 1]))
        train = tf.train.AdamOptimizer(0.02).minimize(loss)
        with tf.variable_scope("decode", reuse=True):
            infer_out, _, lengths = s2s.dynamic_decode(s2s.BasicDecoder(
                cell, s2s.GreedyEmbeddingHelper(emb, tf.fill([batch], go), eos), initial, layer),
                maximum_iterations=length + 2)
        sess = _session()
        first = sess.run(loss, {src: data})
        for _ in range(100):
            last, _ = sess.run([loss, train], {src: data})
        ids, n = sess.run([infer_out.sample_id, lengths], {src: data})
    assert last < first / 100
    np.testing.assert_array_equal(ids, np.concatenate([data, np.full([64, 1], eos)], 1))
    np.testing.assert_array_equal(n, length + 1)


# -- monotonic attention --------------------------------------------------------------------------
def _monotonic_numpy(p, previous):
    """The recurrence of monotonic_attention's docstring: q[i] = (1 - p[i-1]) q[i-1] + a[i]."""
    q = np.zeros_like(p)
    for i in range(p.shape[1]):
        q[:, i] = (1 - p[:, i - 1]) * q[:, i - 1] + previous[:, i] if i else previous[:, 0]
    return p * q


def test_monotonic_attention_modes():
    rng = np.random.RandomState(10)
    p = rng.uniform(0.1, 0.6, [2, 6]).astype(f32)
    previous = _softmax(rng.randn(2, 6)).astype(f32)
    hard_p = np.array([[0, 1, 0, 1, 1, 0], [1, 0, 0, 0, 1, 1]], f32)
    hard_prev = np.eye(6, dtype=f32)[[2, 0]]
    with tf.Graph().as_default():
        got = tf.Session().run({m: s2s.monotonic_attention(p, previous, m)
                                for m in ("recursive", "parallel")}
                               | {"hard": s2s.monotonic_attention(hard_p, hard_prev, "hard")})
        with pytest.raises(ValueError, match="mode must be 'recursive', 'parallel', or 'hard'"):
            s2s.monotonic_attention(p, previous, "soft")
    want = _monotonic_numpy(p, previous)
    np.testing.assert_allclose(got["recursive"], want, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(got["parallel"], want, rtol=1e-4, atol=1e-6)
    np.testing.assert_array_equal(got["hard"], np.eye(6)[[3, 0]])   # first choice at or after


@pytest.mark.parametrize("mechanism", ["BahdanauMonotonicAttention", "LuongMonotonicAttention"])
def test_monotonic_mechanisms_in_a_wrapper(mechanism):
    with tf.Graph().as_default():
        mech = getattr(s2s, mechanism)(3, MEMORY, memory_sequence_length=LENGTHS,
                                       score_bias_init=-1.0, mode="recursive")
        cell = s2s.AttentionWrapper(tf.nn.rnn_cell.GRUCell(3), mech)
        state0 = cell.zero_state(2, tf.float32)
        _, state1 = cell(tf.ones([2, 4]), state0)
        sess = _session()
        values = sess.run({v.op.name: v for v in tf.global_variables()})
        a0, a1 = sess.run([state0.alignments, state1.alignments])
    np.testing.assert_array_equal(a0, np.eye(5)[[0, 0]])
    bias = [k for k in values if k.endswith("attention_score_bias")]
    assert len(bias) == 1 and values[bias[0]] == -1.0
    assert (a1 >= 0).all() and (a1.sum(1) <= 1 + 1e-6).all()
    assert a1[1, 3:].tolist() == [0.0, 0.0]        # masked memory: sigmoid(-inf) = 0


# -- the other helpers ----------------------------------------------------------------------------
class IdentityCell(tf.nn.rnn_cell.RNNCell):
    """Outputs its inputs: what a helper feeds is what comes out."""

    def __init__(self, depth):
        super().__init__()
        self._depth = depth

    @property
    def state_size(self):
        return 1

    @property
    def output_size(self):
        return self._depth

    def call(self, inputs, state):
        return inputs, state


def _identity_decode(helper, depth, **kwargs):
    cell = IdentityCell(depth)
    return s2s.dynamic_decode(s2s.BasicDecoder(cell, helper, cell.zero_state(BATCH, tf.float32)),
                              **kwargs)


def test_scheduled_embedding_training_helper():
    emb = np.random.RandomState(11).randn(VOCAB, VOCAB).astype(f32)
    inputs = np.random.RandomState(12).randn(BATCH, 4, VOCAB).astype(f32)
    with tf.Graph().as_default():
        never, _, _ = _identity_decode(s2s.ScheduledEmbeddingTrainingHelper(
            inputs, [4] * BATCH, emb, 0.0), VOCAB)
        always, _, _ = _identity_decode(s2s.ScheduledEmbeddingTrainingHelper(
            inputs, [4] * BATCH, emb, 1.0, seed=1), VOCAB)
        never, always = tf.Session().run([never, always])
    np.testing.assert_array_equal(never.rnn_output, inputs)
    np.testing.assert_array_equal(never.sample_id, -1)
    ids = always.sample_id
    assert ((0 <= ids) & (ids < VOCAB)).all()
    np.testing.assert_array_equal(always.rnn_output[:, 0], inputs[:, 0])
    np.testing.assert_array_equal(always.rnn_output[:, 1:], emb[ids[:, :-1]])


def test_scheduled_output_training_helper_and_inference_helper():
    inputs = np.random.RandomState(13).randn(BATCH, 4, 2).astype(f32)
    with tf.Graph().as_default():
        never, _, _ = _identity_decode(s2s.ScheduledOutputTrainingHelper(
            inputs, [4] * BATCH, 0.0), 2)
        always, _, _ = _identity_decode(s2s.ScheduledOutputTrainingHelper(
            inputs, [4] * BATCH, 1.0, next_inputs_fn=lambda o: o * 2.0), 2)
        doubling = s2s.InferenceHelper(
            sample_fn=lambda outputs: outputs * 2.0, sample_shape=[2], sample_dtype=tf.float32,
            start_inputs=tf.ones([BATCH, 2]) * [[1.0], [2.0], [3.0]],
            end_fn=lambda ids: tf.reduce_any(ids > 10.0, -1))
        inferred, _, lengths = _identity_decode(doubling, 2, maximum_iterations=10)
        never, always, inferred, lengths = tf.Session().run([never, always, inferred, lengths])
    np.testing.assert_array_equal(never.rnn_output, inputs)
    np.testing.assert_array_equal(never.sample_id, 0)
    np.testing.assert_array_equal(always.sample_id, 1)
    np.testing.assert_allclose(always.rnn_output, inputs[:, :1] * 2.0 ** np.arange(4)[:, None])
    np.testing.assert_array_equal(lengths, [4, 3, 2])     # 1: 2 4 8 16; 2: 4 8 16; 3: 6 12
    np.testing.assert_array_equal(inferred.sample_id[0, :, 0], [2, 4, 8, 16])


# -- beam search with attention -------------------------------------------------------------------
def test_coverage_penalty_matches_numpy():
    rng = np.random.RandomState(14)
    log_probs = rng.randn(2, 3, 4).astype(f32)
    lengths = rng.randint(1, 5, [2, 3, 4])
    finished = np.array([[True, False, True], [False, True, False]])
    acc = rng.uniform(0, 1.5, [2, 3, 6]).astype(f32)
    acc[0, 0, 4:] = 0.0                       # padded memory: no coverage penalty there
    with tf.Graph().as_default():
        got = tf.Session().run(bsd._get_scores(
            tf.constant(log_probs), tf.constant(lengths), 0.6, 0.3, tf.constant(finished),
            tf.constant(acc)))
    coverage = np.log(np.minimum(np.where(acc == 0, 1.0, acc), 1.0)).sum(2) * finished * 0.3
    want = log_probs / ((5.0 + lengths) / 6.0) ** 0.6 + coverage[..., None]
    np.testing.assert_allclose(got, want, rtol=1e-5)


def _attention_cell(memory, batch, beam_width=None):
    lengths = np.array([5, 3, 4])
    if beam_width:
        memory, lengths = s2s.tile_batch(memory, beam_width), s2s.tile_batch(lengths,
                                                                              beam_width)
    with tf.variable_scope("att", reuse=tf.AUTO_REUSE):
        mech = s2s.BahdanauAttention(4, memory, memory_sequence_length=lengths)
    return s2s.AttentionWrapper(tf.nn.rnn_cell.GRUCell(4), mech, attention_layer_size=3)


def test_beam_search_with_attention_width_one_is_greedy():
    memory = np.random.RandomState(15).randn(BATCH, 5, 3).astype(f32)
    with tf.Graph().as_default():
        tf.set_random_seed(4)
        layer = tf.layers.Dense(VOCAB)
        cell = _attention_cell(memory, BATCH)
        greedy, _, glens = s2s.dynamic_decode(s2s.BasicDecoder(
            cell, s2s.GreedyEmbeddingHelper(EMBEDDING, tf.fill([BATCH], 1), END),
            cell.zero_state(BATCH, tf.float32), output_layer=layer), maximum_iterations=6,
            scope="dec")
        beam_cell = _attention_cell(memory, BATCH, beam_width=1)
        decoder = s2s.BeamSearchDecoder(beam_cell, EMBEDDING, tf.fill([BATCH], 1), END,
                                        beam_cell.zero_state(BATCH, tf.float32), 1,
                                        output_layer=layer, coverage_penalty_weight=0.2)
        with tf.variable_scope("", reuse=True):
            beams, bstate, _ = s2s.dynamic_decode(decoder, maximum_iterations=6, scope="dec")
        wide = _attention_cell(memory, BATCH, beam_width=4)
        with tf.variable_scope("", reuse=True):
            wide_out, wide_state, _ = s2s.dynamic_decode(s2s.BeamSearchDecoder(
                wide, EMBEDDING, tf.fill([BATCH], 1), END, wide.zero_state(BATCH * 4, tf.float32),
                4, output_layer=layer, length_penalty_weight=0.5, coverage_penalty_weight=0.2),
                maximum_iterations=6, scope="dec")
        sess = _session()
        names = sorted(v.op.name for v in tf.global_variables())
        g, glens, b, blens, w, wscores = sess.run(
            [greedy.sample_id, glens, beams.predicted_ids, bstate.lengths,
             wide_out.predicted_ids, wide_out.beam_search_decoder_output.scores])
    # One set of variables, shared by the three decoders.
    assert len(names) == 10 and not any("_1" in n for n in names), names
    np.testing.assert_array_equal(blens[:, 0], glens)
    for i, n in enumerate(glens):
        np.testing.assert_array_equal(b[i, :n, 0], g[i, :n])
    assert w.shape[0] == BATCH and w.shape[2] == 4 and ((0 <= w) & (w < VOCAB)).all()
    assert (np.diff(wscores[:, -1], axis=1) <= 1e-6).all()       # best beam first


def test_attention_wrapper_batch_mismatch_is_reported():
    with tf.Graph().as_default():
        cell = s2s.AttentionWrapper(tf.nn.rnn_cell.GRUCell(3), s2s.LuongAttention(3, MEMORY))
        with pytest.raises(ValueError, match="tile_batch"):
            cell.zero_state(6, tf.float32)
        with pytest.raises(TypeError, match="must be an AttentionMechanism"):
            s2s.AttentionWrapper(tf.nn.rnn_cell.GRUCell(3), MEMORY)


def test_beam_search_reorders_the_alignment_history():
    memory = np.random.RandomState(16).randn(BATCH, 5, 3).astype(f32)
    width = 3
    with tf.Graph().as_default():
        tf.set_random_seed(5)
        layer = tf.layers.Dense(VOCAB)
        results = []
        for reorder in (True, False):
            tiled = s2s.tile_batch(memory, width)
            with tf.variable_scope("att", reuse=tf.AUTO_REUSE):
                mech = s2s.LuongAttention(4, tiled)
            cell = s2s.AttentionWrapper(tf.nn.rnn_cell.GRUCell(4), mech, alignment_history=True)
            with tf.variable_scope("", reuse=tf.AUTO_REUSE):
                out, state, _ = s2s.dynamic_decode(s2s.BeamSearchDecoder(
                    cell, EMBEDDING, tf.fill([BATCH], 1), END,
                    cell.zero_state(BATCH * width, tf.float32), width, output_layer=layer,
                    reorder_tensor_arrays=reorder), maximum_iterations=5, scope="dec")
            history = state.cell_state.alignment_history
            results.append((history if reorder else history.stack(),
                            out.beam_search_decoder_output.parent_ids, state.lengths))
        (ordered, parents, lengths), (raw, parents2, _) = _session().run(results)
    np.testing.assert_array_equal(parents, parents2)
    steps = raw.shape[0]
    raw = raw.reshape(steps, BATCH, width, 5)
    parents = np.transpose(parents, [1, 0, 2])            # [time, batch, beam]
    want = raw.copy()
    for b in range(BATCH):
        last = lengths[b].max()
        for k in range(width):
            beam, ids = k, {}
            for t in range(last - 1, -1, -1):
                ids[t] = beam
                beam = parents[t, b, beam]
            for t in range(steps):
                if t < lengths[b, k]:
                    want[t, b, k] = raw[t, b, ids[t]]
    np.testing.assert_array_equal(ordered.reshape(steps, BATCH, width, 5), want)
    assert not np.array_equal(ordered, raw.reshape(ordered.shape))     # something moved
