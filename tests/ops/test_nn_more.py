"""tf.nn's later additions against TF 2.21's tf.compat.v1 numbers: safe_embedding_lookup_sparse
(pruning, default_id, combiners, partitioned tables, rank > 2 ids), log_poisson_loss,
compute_average_loss, scale_regularization_loss, collapse_repeated and max_pool_with_argmax
(outputs, argmax indices and gradient).
"""

# ruff: noqa: E501 - the case tables keep one call per line, as run under TF

import numpy as np
import pytest

import zps as tf
from zps.testing.gradient_checker import GradCase, check_gradients

T = np.arange(24, dtype=np.float32).reshape(6, 4) / 10.0
X = np.array([[[[1.], [5.], [2.], [0.]], [[3.], [5.], [7.], [7.]], [[0.], [1.], [2.], [8.]]]], np.float32)
X2 = np.concatenate([X, X[:, ::-1] * 2], axis=0)
X2 = np.concatenate([X2, -X2], axis=3)


def ids():
    return tf.SparseTensor([[0, 0], [0, 1], [1, 0], [2, 0], [2, 1], [3, 0]], tf.constant([0, 5, -1, 2, 3, 4], tf.int64), [5, 3])


def w():
    return tf.SparseTensor([[0, 0], [0, 1], [1, 0], [2, 0], [2, 1], [3, 0]], tf.constant([1.0, 2.0, 3.0, -1.0, 0.5, 0.0]), [5, 3])


def part():
    with tf.variable_scope("emb", reuse=tf.AUTO_REUSE):
        return tf.get_variable("t", initializer=tf.constant(T), partitioner=tf.fixed_size_partitioner(3))


# (name, build, TF's values (flattened; tuples concatenated), TF's shape(s))
CASES = [
    ('safe_mean', lambda: tf.nn.safe_embedding_lookup_sparse(tf.constant(T), ids()),
     [1.0, 1.1, 1.2, 1.3, 0.0, 0.0, 0.0, 0.0, 1.0, 1.1, 1.2, 1.3, 1.6, 1.7, 1.8, 1.9, 0.0, 0.0, 0.0, 0.0], [5, 4]),
    ('safe_sum_w', lambda: tf.nn.safe_embedding_lookup_sparse(tf.constant(T), ids(), w(), combiner="sum"),
     [4.0, 4.3, 4.6, 4.9, 0.0, 0.0, 0.0, 0.0, -0.2, -0.25, -0.3, -0.35, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [5, 4]),
    ('safe_mean_w', lambda: tf.nn.safe_embedding_lookup_sparse(tf.constant(T), ids(), w()),
     [1.333333, 1.433333, 1.533333, 1.633333, 0.0, 0.0, 0.0, 0.0, 1.2, 1.3, 1.4, 1.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [5, 4]),
    ('safe_sqrtn_w_def', lambda: tf.nn.safe_embedding_lookup_sparse(tf.constant(T), ids(), w(), combiner="sqrtn", default_id=1),
     [1.788854, 1.923018, 2.057183, 2.191347, 0.4, 0.5, 0.6, 0.7, 1.2, 1.3, 1.4, 1.5, 0.4, 0.5, 0.6, 0.7, 0.4, 0.5, 0.6, 0.7], [5, 4]),
    ('safe_part', lambda: tf.nn.safe_embedding_lookup_sparse(part(), ids(), w(), combiner="mean", default_id=5),
     [1.333333, 1.433333, 1.533333, 1.633333, 2.0, 2.1, 2.2, 2.3, 1.2, 1.3, 1.4, 1.5, 2.0, 2.1, 2.2, 2.3, 2.0, 2.1, 2.2, 2.3], [5, 4]),
    ('safe_list_mod', lambda: tf.nn.safe_embedding_lookup_sparse([tf.constant(T[0::2]), tf.constant(T[1::2])], ids(), None, combiner="sum", partition_strategy="mod"),
     [2.0, 2.2, 2.4, 2.6, 0.0, 0.0, 0.0, 0.0, 2.0, 2.2, 2.4, 2.6, 1.6, 1.7, 1.8, 1.9, 0.0, 0.0, 0.0, 0.0], [5, 4]),
    ('safe_rank3', lambda: tf.nn.safe_embedding_lookup_sparse(tf.constant(T), tf.SparseTensor([[0, 0, 0], [0, 1, 0], [0, 1, 1], [1, 0, 0]], tf.constant([1, 2, 3, 4], tf.int64), [2, 2, 2])),
     [0.4, 0.5, 0.6, 0.7, 1.0, 1.1, 1.2, 1.3, 1.6, 1.7, 1.8, 1.9, 0.0, 0.0, 0.0, 0.0], [2, 2, 4]),
    ('lpl', lambda: tf.nn.log_poisson_loss([0.0, 0.5, 1.0, 2.0, 7.0], [0.3, -1.0, 0.0, 1.0, 2.0]),
     [1.349859, 0.867879, 1.0, 0.718282, -6.610944], [5]),
    ('lpl_full', lambda: tf.nn.log_poisson_loss([0.0, 0.5, 1.0, 2.0, 7.0], [0.3, -1.0, 0.0, 1.0, 2.0], compute_full_loss=True),
     [1.349859, 0.867879, 1.0, 1.370088, 1.90232], [5]),
    ('cal', lambda: tf.nn.compute_average_loss([1.0, 2.0, 6.0]),
     [3.0], []),
    ('cal_gbs', lambda: tf.nn.compute_average_loss([[1.0, 2.0], [3.0, 6.0]], global_batch_size=8),
     [1.5], []),
    ('cal_w', lambda: tf.nn.compute_average_loss([[1.0, 2.0], [3.0, 6.0]], sample_weight=[0.5, 2.0]),
     [9.75], []),
    ('cal_w2', lambda: tf.nn.compute_average_loss([1.0, 2.0, 4.0], sample_weight=[[0.5], [2.0], [1.0]]),
     [2.833333], []),
    ('cal_zero', lambda: tf.nn.compute_average_loss([1.0], global_batch_size=0),
     [0.0], []),
    ('srl', lambda: tf.nn.scale_regularization_loss([1.0, 2.5]),
     [3.5], []),
    ('collapse', lambda: tf.nn.collapse_repeated([[1, 1, 2, 2, 3], [4, 4, 4, 5, 5], [7, 7, 7, 7, 7]], [5, 3, 2]),
     [1.0, 2.0, 3.0, 4.0, 0.0, 0.0, 7.0, 0.0, 0.0, 3.0, 1.0, 1.0], [[3, 3], [3]]),
    ('collapse0', lambda: tf.nn.collapse_repeated(tf.constant([[1, 2, 1, 1]], tf.int64), tf.constant([0], tf.int64)),
     [0.0], [[1, 0], [1]]),
    ('mpa_valid', lambda: tf.nn.max_pool_with_argmax(X2, [1, 2, 2, 1], [1, 1, 1, 1], "VALID"),
     [5.0, -1.0, 7.0, -2.0, 7.0, -0.0, 5.0, -0.0, 7.0, -1.0, 8.0, -2.0, 10.0, -0.0, 14.0, -2.0, 16.0, -4.0, 10.0, -2.0, 14.0, -4.0, 14.0, -0.0, 2.0, 1.0, 12.0, 5.0, 12.0, 7.0, 10.0, 17.0, 12.0, 19.0, 22.0, 21.0, 10.0, 1.0, 12.0, 3.0, 6.0, 5.0, 10.0, 17.0, 12.0, 21.0, 12.0, 23.0], [[2, 2, 3, 2], [2, 2, 3, 2]]),
    ('mpa_same', lambda: tf.nn.max_pool_with_argmax(X2, [1, 2, 3, 1], [1, 2, 2, 1], "SAME"),
     [7.0, -1.0, 7.0, -0.0, 2.0, -0.0, 8.0, -2.0, 14.0, -0.0, 16.0, -4.0, 10.0, -2.0, 4.0, -0.0, 12.0, 1.0, 12.0, 7.0, 20.0, 17.0, 22.0, 21.0, 12.0, 1.0, 6.0, 5.0, 18.0, 17.0, 20.0, 23.0], [[2, 2, 2, 2], [2, 2, 2, 2]]),
    ('mpa_batch', lambda: tf.nn.max_pool_with_argmax(X2, [1, 3, 3, 1], [1, 1, 2, 1], "SAME", include_batch_in_index=True),
     [7.0, -1.0, 7.0, -0.0, 7.0, -0.0, 8.0, -0.0, 7.0, -0.0, 8.0, -2.0, 14.0, -0.0, 16.0, -4.0, 14.0, -0.0, 16.0, -0.0, 14.0, -2.0, 14.0, -0.0, 12.0, 1.0, 12.0, 7.0, 12.0, 17.0, 22.0, 7.0, 12.0, 17.0, 22.0, 21.0, 36.0, 25.0, 30.0, 29.0, 36.0, 25.0, 30.0, 47.0, 36.0, 41.0, 36.0, 47.0], [[2, 3, 2, 2], [2, 3, 2, 2]]),
    ('mpa_i32', lambda: tf.nn.max_pool_with_argmax(X2, [1, 2, 2, 1], [1, 2, 2, 1], "VALID", Targmax=tf.int32),
     [5.0, -1.0, 7.0, -0.0, 10.0, -0.0, 16.0, -4.0, 2.0, 1.0, 12.0, 7.0, 10.0, 1.0, 6.0, 5.0], [[2, 1, 2, 2], [2, 1, 2, 2]]),
    ('mpa_grad', lambda: (lambda x: tf.gradients(tf.reduce_sum(tf.nn.max_pool_with_argmax(x, [1, 2, 3, 1], [1, 1, 1, 1], "SAME")[0] * np.arange(48, dtype=np.float32).reshape(2, 3, 4, 2)), x))(tf.constant(X2)),
     [0.0, 4.0, 0.0, 0.0, 0.0, 0.0, 0.0, 12.0, 0.0, 0.0, 8.0, 0.0, 22.0, 0.0, 0.0, 0.0, 0.0, 56.0, 16.0, 34.0, 18.0, 38.0, 68.0, 0.0, 0.0, 52.0, 0.0, 29.0, 0.0, 31.0, 58.0, 0.0, 0.0, 0.0, 56.0, 0.0, 134.0, 0.0, 0.0, 0.0, 0.0, 152.0, 126.0, 0.0, 46.0, 0.0, 0.0, 168.0], [[2, 3, 4, 2]]),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0])
def test_matches_tf(case):
    _, build, expected, shape = case
    with tf.Graph().as_default():
        out = build()
        sess = tf.Session()
        sess.run(tf.global_variables_initializer())
        if isinstance(out, tuple | list):
            got = sess.run(list(out))
            assert [list(g.shape) for g in got] == shape
            got = np.concatenate([np.ravel(g) for g in got])
        else:
            got = sess.run(out)
            assert list(got.shape) == shape
    np.testing.assert_allclose(np.ravel(got).astype(np.float64), expected, rtol=1e-5, atol=1e-6)


def test_safe_embedding_lookup_sparse_gradient_reaches_the_kept_rows():
    with tf.Graph().as_default():
        table = tf.Variable(T)
        out = tf.nn.safe_embedding_lookup_sparse(table, ids(), w(), combiner="sum")
        grad = tf.convert_to_tensor(tf.gradients(tf.reduce_sum(out), table)[0])
        sess = tf.Session()
        sess.run(tf.global_variables_initializer())
        g = sess.run(grad)
    # ids 0, 5 (weights 1, 2), 2, 3 (weights -1, 0.5: "sum" keeps them), 4 (weight 0); -1 pruned
    np.testing.assert_allclose(g[:, 0], [1.0, 0.0, -1.0, 0.5, 0.0, 2.0])


def test_errors_and_dtypes():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="same shape"):
            tf.nn.log_poisson_loss([1.0, 2.0], [1.0])
        with pytest.raises(ValueError, match="at least rank 1"):
            tf.nn.compute_average_loss(3.0)
        with pytest.raises(ValueError, match="combiner"):
            tf.nn.safe_embedding_lookup_sparse(tf.constant(T), ids(), combiner="max")
        out, argmax = tf.nn.max_pool_with_argmax(X2, [1, 2, 2, 1], [1, 2, 2, 1], "VALID",
                                                 output_dtype=tf.int32)
        assert argmax.dtype == tf.int32 and out.get_shape().as_list() == [2, 1, 2, 2]
        assert tf.nn.max_pool_with_argmax(X2, 2, 1, "SAME")[1].dtype == tf.int64
        with pytest.raises(ValueError, match="NHWC"):
            tf.nn.max_pool_with_argmax(X2, 2, 1, "SAME", data_format="NCHW")
        labels, lengths = tf.nn.collapse_repeated(tf.constant([[1, 1]], tf.int64), tf.constant([2], tf.int64))
        assert labels.dtype == tf.int64 and lengths.dtype == tf.int64


GRAD_CASES = [
    GradCase("MaxPoolWithArgmax",
             lambda x: tf.nn.max_pool_with_argmax(x, [1, 2, 3, 1], [1, 1, 2, 1], "SAME")[0],
             [np.random.default_rng(0).permutation(48).reshape(2, 3, 4, 2) / 7.0],
             name="max_pool_with_argmax"),
    GradCase("MaxPoolWithArgmax",
             lambda x: tf.nn.max_pool_with_argmax(x, [1, 2, 2, 1], [1, 1, 1, 1], "VALID",
                                                  include_batch_in_index=True)[0],
             [np.random.default_rng(1).permutation(48).reshape(2, 3, 4, 2) / 7.0],
             name="max_pool_with_argmax_batch_index"),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: c.name)
def test_gradient(case):
    check_gradients(case)
