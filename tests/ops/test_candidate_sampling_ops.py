"""Candidate samplers, accidental hits and the sampled losses against TensorFlow 2.21.

TF's random draws are not reproduced; what is exact is everything given the drawn candidates:
the expected counts, the accidental hits, and nce_loss / sampled_softmax_loss with
``sampled_values`` passed to both, over one table split in two shards ("mod" and "div").
"""

import numpy as np
import pytest

import zps as tf
from zps.testing.cluster import InProcessCluster

GRAD_CASES = []   # the ops here are not differentiable; the losses are built from other ops

# tf.compat.v1.nn.nce_loss and sampled_softmax_loss (TF 2.21) for _sampled_losses(): per
# (loss, partition_strategy, remove_accidental_hits), the loss, then the gradients of
# sum(loss * [1, 2, 3]) with respect to the inputs, the two weight shards, the two bias shards.
TF_SAMPLED = {
    ("nce", "div", False): [
        [12.238426, 10.318208, 9.5976343],
        [[-4.3094335, -1.5966251, -1.1029384],
         [-5.8416061, -1.6876507, -2.0860682],
         [-10.156207, -2.5768814, -1.9476587]],
        [[-0.0054714531, 1.0700914, -1.9801087],
         [-0.00088545628, 0.00042596061, -0.0019530748],
         [-0.21816653, -0.16606896, 0.56409264],
         [-0.26981854, 0.81915879, -1.6093258]],
        [[-0.23130977, 0.88572162, -1.8139198],
         [-0.41770527, 0.87359285, -1.9669588],
         [0.27815995, 0.46049964, -0.84724528]],
        [5.9116349, 0.0019344687, 1.0429828, 5.3708615],
        [5.2551222, 5.366137, 1.2958217],
    ],
    ("nce", "div", True): [
        [10.028462, 10.318208, 7.9461308],
        [[-3.6574993, -1.1120738, -0.82133782],
         [-5.8416061, -1.6876507, -2.0860682],
         [-10.461067, -2.2565646, -3.5005014]],
        [[-0.52595878, 0.20841366, -0.39476037],
         [-0.00088545628, 0.00042596061, -0.0019530748],
         [-0.21816653, -0.16606896, 0.56409264],
         [-0.26981854, 0.81915879, -1.6093258]],
        [[-0.23130977, 0.88572162, -1.8139198],
         [-0.010194033, 0.67755413, -1.0681003],
         [0.27815995, 0.46049964, -0.84724528]],
        [3.4869194, 0.0019344687, 1.0429828, 5.3708615],
        [5.2551222, 4.475841, 1.2958217],
    ],
    ("nce", "mod", False): [
        [12.238426, 10.318208, 9.5976343],
        [[-4.3094335, -1.5966251, -1.1029384],
         [-5.8416061, -1.6876507, -2.0860682],
         [-10.156207, -2.5768814, -1.9476587]],
        [[-0.0054714531, 1.0700914, -1.9801087],
         [-0.21816653, -0.16606896, 0.56409264],
         [-0.23130977, 0.88572162, -1.8139198],
         [0.27815995, 0.46049964, -0.84724528]],
        [[-0.00088545628, 0.00042596061, -0.0019530748],
         [-0.26981854, 0.81915879, -1.6093258],
         [-0.41770527, 0.87359285, -1.9669588]],
        [5.9116349, 1.0429828, 5.2551222, 1.2958217],
        [0.0019344687, 5.3708615, 5.366137],
    ],
    ("nce", "mod", True): [
        [10.028462, 10.318208, 7.9461308],
        [[-3.6574993, -1.1120738, -0.82133782],
         [-5.8416061, -1.6876507, -2.0860682],
         [-10.461067, -2.2565646, -3.5005014]],
        [[-0.52595878, 0.20841366, -0.39476037],
         [-0.21816653, -0.16606896, 0.56409264],
         [-0.23130977, 0.88572162, -1.8139198],
         [0.27815995, 0.46049964, -0.84724528]],
        [[-0.00088545628, 0.00042596061, -0.0019530748],
         [-0.26981854, 0.81915879, -1.6093258],
         [-0.010194033, 0.67755413, -1.0681003]],
        [3.4869194, 1.0429828, 5.2551222, 1.2958217],
        [0.0019344687, 5.3708615, 4.475841],
    ],
    ("ssm", "div", False): [
        [3.4321136, 2.5292919, 1.6377671],
        [[-1.4281605, 0.19360039, -0.79850549],
         [-3.7927055, -2.2977865, 1.1330323],
         [-2.3372214, -0.92505997, -1.2362998]],
        [[-0.29572201, -0.36865121, 0.77107334],
         [0.22364998, -0.10758981, 0.49331075],
         [0.35165304, 0.26767924, -0.90923613],
         [-0.13185941, 0.080788352, -0.068701468]],
        [[-0.21074359, 0.28527018, -0.83088738],
         [0.15934873, 0.0019741505, 0.2510401],
         [-0.096326806, -0.15947106, 0.29340109]],
        [-0.3564285, -0.48861122, -1.6811382, 1.3454645],
        [1.3745421, 0.25491422, -0.44874313],
    ],
    ("ssm", "div", True): [
        [3.3359199, 2.5292919, 1.5236334],
        [[-1.5301, 0.21358231, -0.84490824],
         [-3.7927055, -2.2977865, 1.1330323],
         [-2.5679474, -0.82388091, -1.5252237]],
        [[-0.35842419, -0.46895245, 0.95344591],
         [0.22312361, -0.1073366, 0.49214974],
         [0.35165304, 0.26767924, -0.90923613],
         [-0.12786096, 0.10384795, -0.12128922]],
        [[-0.22474107, 0.32166404, -0.93466532],
         [0.20529331, -0.0025987998, 0.30929518],
         [-0.069043815, -0.11430348, 0.21030004]],
        [-0.63730812, -0.48746127, -1.6811382, 1.4167473],
        [1.5001211, 0.21068293, -0.32164398],
    ],
    ("ssm", "mod", False): [
        [3.4321136, 2.5292919, 1.6377671],
        [[-1.4281605, 0.19360039, -0.79850549],
         [-3.7927055, -2.2977865, 1.1330323],
         [-2.3372214, -0.92505997, -1.2362998]],
        [[-0.29572201, -0.36865121, 0.77107334],
         [0.35165304, 0.26767924, -0.90923613],
         [-0.21074359, 0.28527018, -0.83088738],
         [-0.096326806, -0.15947106, 0.29340109]],
        [[0.22364998, -0.10758981, 0.49331075],
         [-0.13185941, 0.080788352, -0.068701468],
         [0.15934873, 0.0019741505, 0.2510401]],
        [-0.3564285, -1.6811382, 1.3745421, -0.44874313],
        [-0.48861122, 1.3454645, 0.25491422],
    ],
    ("ssm", "mod", True): [
        [3.3359199, 2.5292919, 1.5236334],
        [[-1.5301, 0.21358231, -0.84490824],
         [-3.7927055, -2.2977865, 1.1330323],
         [-2.5679474, -0.82388091, -1.5252237]],
        [[-0.35842419, -0.46895245, 0.95344591],
         [0.35165304, 0.26767924, -0.90923613],
         [-0.22474107, 0.32166404, -0.93466532],
         [-0.069043815, -0.11430348, 0.21030004]],
        [[0.22312361, -0.1073366, 0.49214974],
         [-0.12786096, 0.10384795, -0.12128922],
         [0.20529331, -0.0025987998, 0.30929518]],
        [-0.63730812, -1.6811382, 1.5001211, -0.32164398],
        [-0.48746127, 1.4167473, 0.21068293],
    ],
}

RNG = np.random.default_rng(0)
W = RNG.standard_normal((7, 3)).astype(np.float32)
B = RNG.standard_normal(7).astype(np.float32)
X = RNG.standard_normal((3, 3)).astype(np.float32)
LABELS = np.array([[1, 5], [2, 2], [6, 0]], np.int64)   # a repeated class in row 1
SAMPLED = ([5, 3, 0, 4], [[.3, .1], [.2, .2], [.05, .6]], [.1, .25, .6, .2])


def _shards(strategy):
    if strategy == "mod":
        return [W[0::2], W[1::2]], [B[0::2], B[1::2]]
    return [W[:4], W[4:]], [B[:4], B[4:]]


@pytest.mark.parametrize("key", sorted(TF_SAMPLED), ids=lambda k: "%s-%s-%s" % k)
def test_sampled_losses_and_gradients_match_tensorflow(key):
    loss_name, strategy, remove_hits = key
    loss_fn = {"nce": tf.nn.nce_loss, "ssm": tf.nn.sampled_softmax_loss}[loss_name]
    with tf.Graph().as_default():
        parts, bias_parts = _shards(strategy)
        w = [tf.Variable(p) for p in parts]
        b = [tf.Variable(p) for p in bias_parts]
        x = tf.constant(X)
        sampled = (tf.constant(SAMPLED[0], tf.int64), tf.constant(SAMPLED[1], tf.float32),
                   tf.constant(SAMPLED[2], tf.float32))
        loss = loss_fn(w, b, LABELS, x, 4, 7, num_true=2, sampled_values=sampled,
                       remove_accidental_hits=remove_hits, partition_strategy=strategy)
        grads = tf.gradients(tf.reduce_sum(loss * tf.constant([1., 2., 3.])), [x] + w + b)
        # the shards' gradients are the rows used, never a dense table
        assert all(isinstance(g, tf.IndexedSlices) for g in grads[1:])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            out = sess.run([loss] + [tf.convert_to_tensor(g) for g in grads])
    for got, want in zip(out, TF_SAMPLED[key]):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-7)


def test_a_partitioned_variable_is_a_table():
    with tf.Graph().as_default():
        w = tf.get_variable("w", [7, 3], partitioner=tf.fixed_size_partitioner(2))
        assert isinstance(w, tf.PartitionedVariable)
        load = [part.assign(value) for part, value in zip(w, _shards("div")[0])]
        b = tf.Variable(B)
        sampled = tuple(tf.constant(v) for v in (np.array(SAMPLED[0], np.int64),
                                                 np.array(SAMPLED[1], np.float32),
                                                 np.array(SAMPLED[2], np.float32)))
        loss = tf.nn.sampled_softmax_loss(w, b, LABELS, X, 4, 7, num_true=2,
                                          sampled_values=sampled, partition_strategy="div")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(load)
            np.testing.assert_allclose(sess.run(loss), TF_SAMPLED[("ssm", "div", True)][0],
                                       rtol=1e-5)


# TF 2.21's true_expected_count for true classes [[0, 3], [7, 99]] (range 100, 5 draws, not
# unique: p * 5), and for [[1, 3]] under unigrams [1, 4, 9, 16] ** 0.5 after one reserved id.
TF_LOG_UNIFORM_EXPECTED = [[0.7509524, 0.24175268], [0.12760559, 0.01078014]]
TF_UNIGRAM_EXPECTED = [[0.4, 1.2]]


def test_samplers_expected_counts_match_tensorflow():
    with tf.Graph().as_default():
        tc = tf.constant([[0, 3], [7, 99]], tf.int64)
        log_uniform = tf.nn.log_uniform_candidate_sampler(tc, 2, 5, False, 100, seed=1)
        uniform = tf.nn.uniform_candidate_sampler(tc, 2, 5, False, 100, seed=1)
        unigram = tf.nn.fixed_unigram_candidate_sampler(
            tf.constant([[1, 3]], tf.int64), 2, 4, False, 5, distortion=0.5, num_reserved_ids=1,
            unigrams=[1., 4., 9., 16.], seed=1)
        assert log_uniform[0].dtype == tf.int64 and log_uniform[1].get_shape().as_list() == [2, 2]
        with tf.Session() as sess:
            lu, un, ug = sess.run([log_uniform, uniform, unigram])
    np.testing.assert_allclose(lu[1], TF_LOG_UNIFORM_EXPECTED, rtol=1e-6)
    np.testing.assert_allclose(un[1], np.full((2, 2), 0.05), rtol=1e-6)
    np.testing.assert_allclose(ug[1], TF_UNIGRAM_EXPECTED, rtol=1e-6)
    p = (np.log(lu[0] + 2.0) - np.log(lu[0] + 1.0)) / np.log(101.0)
    np.testing.assert_allclose(lu[2], p * 5, rtol=1e-6)
    assert ((lu[0] >= 0) & (lu[0] < 100)).all() and set(ug[0].tolist()) <= {1, 2, 3, 4}


def test_unique_samplers_draw_distinct_candidates_and_count_the_tries():
    with tf.Graph().as_default():
        tf.set_random_seed(3)
        sampled, true_count, sampled_count = tf.nn.log_uniform_candidate_sampler(
            [[0]], 1, 8, True, 10)
        with tf.Session() as sess:
            runs = [sess.run([sampled, true_count, sampled_count]) for _ in range(3)]
        with tf.Session() as sess:   # a seeded graph draws the same in a new session
            again = sess.run(sampled)
    np.testing.assert_array_equal(again, runs[0][0])
    for s, t, e in runs:
        assert len(set(s.tolist())) == 8 and ((s >= 0) & (s < 10)).all()
        # every count is 1 - (1 - p) ** tries with one number of tries (>= 8) for the step
        p = (np.log(s + 2.0) - np.log(s + 1.0)) / np.log(11.0)
        tries = np.log1p(-e.astype(np.float64)) / np.log1p(-p)
        np.testing.assert_allclose(tries, np.round(tries[0]), rtol=1e-4)
        assert round(tries[0]) >= 8
        p_true = np.log(2.0) / np.log(11.0)   # class 0
        np.testing.assert_allclose(t, [[-np.expm1(round(tries[0]) * np.log1p(-p_true))]],
                                   rtol=1e-5)


def test_samplers_reject_bad_arguments():
    with tf.Graph().as_default():
        s = tf.nn.uniform_candidate_sampler([[1]], 1, 5, True, 3)
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match="range is too small"):
                sess.run(s)
        with pytest.raises(ValueError, match="vocab_file or unigrams"):
            tf.nn.fixed_unigram_candidate_sampler([[1]], 1, 2, True, 5)
        with pytest.raises(ValueError, match="must be positive"):
            tf.nn.log_uniform_candidate_sampler([[1]], 1, 0, True, 5)


def test_fixed_unigram_reads_a_vocab_file_and_draws_only_its_shard(tmp_path):
    vocab = tmp_path / "vocab.csv"
    vocab.write_text("the,10\nof,6\nand,3\nzebra,1\n")
    with tf.Graph().as_default():
        sampled, _, _ = tf.nn.fixed_unigram_candidate_sampler(
            [[0]], 1, 50, False, 4, vocab_file=str(vocab), num_shards=2, shard=1, seed=2)
        with tf.Session() as sess:
            drawn = sess.run(sampled)
    assert set(drawn.tolist()) <= {1, 3} and 1 in drawn


# TF 2.21: (indices, ids) of the accidental hits (weights are all -FLT_MAX)
TF_HITS = ([0, 1, 1, 2], [4, 3, 3, 2])


def test_compute_accidental_hits_matches_tensorflow():
    with tf.Graph().as_default():
        hits = tf.nn.compute_accidental_hits(tf.constant(LABELS), [5, 3, 0, 2, 5], 2)
        with tf.Session() as sess:
            indices, ids, weights = sess.run(hits)
    assert indices.tolist() == TF_HITS[0] and ids.tolist() == TF_HITS[1]
    assert indices.dtype == np.int32 and ids.dtype == np.int64
    np.testing.assert_array_equal(weights, np.full(4, -np.finfo(np.float32).max, np.float32))


def test_word2vec_step_on_a_partitioned_embedding_in_a_cluster():
    """Skip-gram with NCE: the embedding and the softmax weights are split over two ps tasks;
    the worker's step sends each ps only the gradient rows of the ids it holds."""
    vocab, dim, batch = 50, 8, 16
    rng = np.random.default_rng(1)
    centers = rng.integers(0, vocab, batch)
    contexts = (centers + 1) % vocab
    with InProcessCluster({"ps": 2, "worker": 1}) as cluster, tf.Graph().as_default():
        tf.set_random_seed(7)
        with tf.device(tf.train.replica_device_setter(ps_tasks=2)):
            partitioner = tf.fixed_size_partitioner(2)
            embeddings = tf.get_variable("embeddings", [vocab, dim], partitioner=partitioner,
                                         initializer=tf.random_uniform_initializer(-1.0, 1.0))
            nce_w = tf.get_variable("nce_w", [vocab, dim], partitioner=partitioner,
                                    initializer=tf.truncated_normal_initializer(stddev=0.3))
            nce_b = tf.get_variable("nce_b", [vocab], initializer=tf.zeros_initializer())
            x = tf.placeholder(tf.int64, [batch])
            y = tf.placeholder(tf.int64, [batch, 1])
            embedded = tf.nn.embedding_lookup(embeddings, x, partition_strategy="div")
            loss = tf.reduce_mean(tf.nn.nce_loss(nce_w, nce_b, y, embedded, num_sampled=6,
                                                 num_classes=vocab, partition_strategy="div"))
            opt = tf.train.GradientDescentOptimizer(0.5)
            grads_and_vars = opt.compute_gradients(loss)
            train = opt.apply_gradients(grads_and_vars)
        assert {v.device for v in tf.global_variables()} == {"/job:ps/task:0", "/job:ps/task:1"}
        assert all(isinstance(g, tf.IndexedSlices) for g, v in grads_and_vars
                   if v.op.name.startswith(("embeddings", "nce_w")))
        with tf.Session(cluster.target("worker", 0)) as sess:
            sess.run(tf.global_variables_initializer())
            feed = {x: centers, y: contexts[:, None]}
            losses = [sess.run([loss, train], feed)[0] for _ in range(30)]
    assert np.isfinite(losses).all() and losses[-1] < 0.5 * losses[0], losses
