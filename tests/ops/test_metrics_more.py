"""The metrics and loss added after the first pass, against TF 2.21's tf.compat.v1 numbers.

Each metric case runs ``value`` (before any update), ``update_op`` twice, then ``value``: the
numbers are TF's for the same calls, as are the dtypes and the local variables' names.
"""

# ruff: noqa: E501 - the case tables keep one call per line, as run under TF

import math

import numpy as np
import pytest

import zps as tf

pred = np.array([[0.1, 0.3, 0.2, 0.4], [0.1, 0.2, 0.3, 0.4], [0.4, 0.3, 0.2, 0.1]], np.float32)
pred2 = np.array([[0.5, 0.1, 0.3, 0.2], [0.2, 0.4, 0.3, 0.1], [0.1, 0.2, 0.6, 0.05]], np.float32)
lab = np.array([[2, 3], [0, 1], [0, 3]], np.int64)
lab2 = np.array([[3, -1], [2, 1], [0, 0]], np.int64)
idx = np.array([[3, 1], [3, 2], [0, 1]], np.int32)


def sp():
    return tf.SparseTensor([[0, 0], [1, 0], [1, 1], [2, 0], [2, 2]],
                           tf.constant([2, 0, 1, 3, 3], tf.int64), [3, 3])


# (name, metric, TF's [value, update, update, value], dtype, local variables)
METRIC_CASES = [
    ('cos', lambda: tf.metrics.mean_cosine_distance(np.array([[0.6, 0.8, 0.0], [0.0, 0.0, 1.0], [1, 0, 0]], np.float32), np.array([[1.0, 0, 0], [0, 0.6, 0.8], [0.6, 0.8, 0]], np.float32), dim=1, weights=[[1.0], [0.0], [2.0]]),
     [1.0, 0.399999976158, 0.399999976158, 0.399999976158], 'float32', ['mean_cosine_distance/count:0', 'mean_cosine_distance/total:0']),
    ('cos0', lambda: tf.metrics.mean_cosine_distance(np.array([[0.6, 0.8], [1.0, 0.0]], np.float32), np.array([[0.0, 1.0], [0.6, 0.8]], np.float32), dim=0),
     [1.0, 0.299999952316, 0.299999952316, 0.299999952316], 'float32', ['mean_cosine_distance/count:0', 'mean_cosine_distance/total:0']),
    ('rel', lambda: tf.metrics.mean_relative_error([1.0, 2.0, 4.0, 0.0], [1.5, 1.0, 4.0, 3.0], normalizer=[1.0, 2.0, 0.0, 4.0]),
     [0.0, 0.4375, 0.4375, 0.4375], 'float32', ['mean_relative_error/count:0', 'mean_relative_error/total:0']),
    ('relw', lambda: tf.metrics.mean_relative_error([[1.0], [2.0], [4.0]], [1.5, 1.0, 2.0], normalizer=[1.0, 2.0, 4.0], weights=[1.0, 2.0, 0.5]),
     [0.0, 0.5, 0.5, 0.5], 'float32', ['mean_relative_error/count:0', 'mean_relative_error/total:0']),
    ('ptop', lambda: tf.metrics.precision_at_top_k(lab, tf.constant(idx)),
     [None, 0.333333333333, 0.333333333333, 0.333333333333], 'float64', ['precision_at_k/false_positive_at_k:0', 'precision_at_k/true_positive_at_k:0']),
    ('rtop', lambda: tf.metrics.recall_at_top_k(lab, tf.constant(idx)),
     [None, 0.333333333333, 0.333333333333, 0.333333333333], 'float64', ['recall_at_k/false_negative_at_k:0', 'recall_at_k/true_positive_at_k:0']),
    ('ptop_c3', lambda: tf.metrics.precision_at_top_k(lab, tf.constant(idx), class_id=3),
     [None, 0.5, 0.5, 0.5], 'float64', ['precision_at_k_class3/false_positive_at_k_class3:0', 'precision_at_k_class3/true_positive_at_k_class3:0']),
    ('rtop_k1w', lambda: tf.metrics.recall_at_top_k(lab, tf.constant(idx[:, :1]), k=1, weights=[1.0, 2.0, 3.0]),
     [None, 0.333333333333, 0.333333333333, 0.333333333333], 'float64', ['recall_at_1/false_negative_at_1:0', 'recall_at_1/true_positive_at_1:0']),
    ('rtop_rank1', lambda: tf.metrics.recall_at_top_k(np.array([3, 2, 1]), tf.constant(idx)),
     [None, 1.0, 1.0, 1.0], 'float64', ['recall_at_k/false_negative_at_k:0', 'recall_at_k/true_positive_at_k:0']),
    ('sp_p2', lambda: tf.metrics.sparse_precision_at_k(lab, pred, 2),
     [None, 0.333333333333, 0.333333333333, 0.333333333333], 'float64', ['precision_at_2/false_positive_at_2:0', 'precision_at_2/true_positive_at_2:0']),
    ('p2_neg', lambda: tf.metrics.precision_at_k(lab2, pred, 2),
     [None, 0.5, 0.5, 0.5], 'float64', ['precision_at_2/false_positive_at_2:0', 'precision_at_2/true_positive_at_2:0']),
    ('r2_neg', lambda: tf.metrics.recall_at_k(lab2, pred, 2),
     [None, 0.6, 0.6, 0.6], 'float64', ['recall_at_2/false_negative_at_2:0', 'recall_at_2/true_positive_at_2:0']),
    ('r2_sparse', lambda: tf.metrics.recall_at_k(sp(), pred2, 2),
     [None, 0.5, 0.5, 0.5], 'float64', ['recall_at_2/false_negative_at_2:0', 'recall_at_2/true_positive_at_2:0']),
    ('p2_sparse', lambda: tf.metrics.precision_at_k(sp(), pred2, 2),
     [None, 0.333333333333, 0.333333333333, 0.333333333333], 'float64', ['precision_at_2/false_positive_at_2:0', 'precision_at_2/true_positive_at_2:0']),
    ('rtop_sparse_c1', lambda: tf.metrics.recall_at_top_k(sp(), tf.constant(idx), class_id=1),
     [None, 0.0, 0.0, 0.0], 'float64', ['recall_at_k_class1/false_negative_at_k_class1:0', 'recall_at_k_class1/true_positive_at_k_class1:0']),
    ('ap2', lambda: tf.metrics.average_precision_at_k(lab, pred, 2),
     [0.0, 0.333333333333, 0.333333333333, 0.333333333333], 'float64', ['average_precision_at_2/max_1:0', 'average_precision_at_2/total:0']),
    ('ap3', lambda: tf.metrics.average_precision_at_k(lab, pred, 3),
     [0.0, 0.5, 0.5, 0.5], 'float64', ['average_precision_at_3/max_1:0', 'average_precision_at_3/total:0']),
    ('ap3b', lambda: tf.metrics.average_precision_at_k(lab, pred2, 3),
     [0.0, 0.527777777778, 0.527777777778, 0.527777777778], 'float64', ['average_precision_at_3/max_1:0', 'average_precision_at_3/total:0']),
    ('ap4w', lambda: tf.metrics.average_precision_at_k(lab, pred2, 4, weights=[1.0, 0.5, 2.0]),
     [0.0, 0.52380952381, 0.52380952381, 0.52380952381], 'float64', ['average_precision_at_4/max_1:0', 'average_precision_at_4/total:0']),
    ('ap_neg', lambda: tf.metrics.average_precision_at_k(np.array([[2, -1], [0, 1], [3, 3]]), pred2, 3),
     [0.0, 0.444444444444, 0.444444444444, 0.444444444444], 'float64', ['average_precision_at_3/max_1:0', 'average_precision_at_3/total:0']),
    ('ap_oob', lambda: tf.metrics.average_precision_at_k(np.array([[2, 7], [0, 9], [3, 1]]), pred2, 2),
     [0.0, 0.25, 0.25, 0.25], 'float64', ['average_precision_at_2/max_1:0', 'average_precision_at_2/total:0']),
    ('ap_rank1', lambda: tf.metrics.average_precision_at_k(np.array([3, 0, 2]), pred2, 2),
     [0.0, 0.333333333333, 0.333333333333, 0.333333333333], 'float64', ['average_precision_at_2/max_1:0', 'average_precision_at_2/total:0']),
    ('sap', lambda: tf.metrics.sparse_average_precision_at_k(lab, pred2, 1),
     [0.0, 0.333333333333, 0.333333333333, 0.333333333333], 'float64', ['average_precision_at_1/max_1:0', 'average_precision_at_1/total:0']),
    ('ap_sparse', lambda: tf.metrics.average_precision_at_k(sp(), pred2, 3),
     [0.0, 0.444444444444, 0.444444444444, 0.444444444444], 'float64', ['average_precision_at_3/max_1:0', 'average_precision_at_3/total:0']),
    ('ap_wscalar', lambda: tf.metrics.average_precision_at_k(lab, pred2, 2, weights=2.0),
     [0.0, 0.25, 0.25, 0.25], 'float64', ['average_precision_at_2/max_1:0', 'average_precision_at_2/total:0']),
]


@pytest.mark.parametrize("case", METRIC_CASES, ids=lambda c: c[0])
def test_metric_matches_tf(case):
    _, build, expected, dtype, var_names = case
    with tf.Graph().as_default():
        value, update = build()
        sess = tf.Session()
        sess.run(tf.local_variables_initializer())
        got = [sess.run(value), sess.run(update), sess.run(update), sess.run(value)]
        assert value.dtype.name == dtype and update.dtype.name == dtype
        assert sorted(v.name for v in tf.local_variables()) == var_names
        assert sorted(v.name for v in tf.get_collection(tf.GraphKeys.METRIC_VARIABLES)) == var_names
    for g, e in zip(got, expected):
        if e is None:
            assert math.isnan(float(g))
        else:
            assert float(g) == pytest.approx(e, rel=1e-6, abs=1e-7)


def test_update_folds_in_each_batch():
    with tf.Graph().as_default():
        labels = tf.placeholder(tf.int64, [None, 2])
        value, update = tf.metrics.average_precision_at_k(labels, tf.constant(pred2), 2)
        sess = tf.Session()
        sess.run(tf.local_variables_initializer())
        first = sess.run(update, {labels: lab})
        second = sess.run(update, {labels: [[0, 1], [1, 2], [2, 0]]})
        # the rows' average precisions: 1/4, 1/2, 0; then 1/2, 1, 1/2
        assert first == pytest.approx(0.75 / 3)
        assert second == pytest.approx((0.75 + 2.0) / 6)
        assert sess.run(value) == pytest.approx(second)


def test_collections_and_names():
    with tf.Graph().as_default():
        value, update = tf.metrics.precision_at_top_k(lab, tf.constant(idx), metrics_collections=["m"],
                                                      updates_collections=["u"], name="p")
        assert tf.get_collection("m") == [value] and tf.get_collection("u") == [update]
        assert value.name == "p:0" and update.name == "p/update:0"
        value, update = tf.metrics.average_precision_at_k(lab, pred, 2)
        assert value.name == "average_precision_at_2/mean:0"
        assert update.name == "average_precision_at_2:0"


def test_errors():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="Invalid k=0"):
            tf.metrics.average_precision_at_k(lab, pred, 0)
        with pytest.raises(ValueError, match="Unexpected labels shape"):
            tf.metrics.precision_at_top_k(np.zeros([3, 2, 2], np.int64), tf.constant(idx))
    assert tf.metrics.sparse_precision_at_k is tf.metrics.precision_at_k
    assert tf.metrics.sparse_average_precision_at_k is tf.metrics.average_precision_at_k


# -- tf.losses.mean_pairwise_squared_error -----------------------------------------------------
L = np.array([[0.0, 1.0, 3.0], [2.0, -1.0, 0.5]], np.float32)
P = np.array([[1.0, 1.0, 1.0], [0.0, 2.0, 1.5]], np.float32)
L3 = np.arange(12, dtype=np.float32).reshape(2, 3, 2) / 3.0
P3 = np.cos(np.arange(12, dtype=np.float32)).reshape(2, 3, 2)

LOSS_CASES = [
    ('basic', lambda: tf.losses.mean_pairwise_squared_error(L, P), 17.333334),
    ('w_scalar', lambda: tf.losses.mean_pairwise_squared_error(L, P, weights=2.5), 43.333336),
    ('w_col', lambda: tf.losses.mean_pairwise_squared_error(L, P, weights=[[1.0], [0.5]]), 11.0),
    ('w_elem', lambda: tf.losses.mean_pairwise_squared_error(L, P, weights=[[1.0, 0.0, 2.0], [1.0, 1.0, 0.0]]), 75.0),
    ('w_zero', lambda: tf.losses.mean_pairwise_squared_error(L, P, weights=0.0), 0.0),
    ('rank3', lambda: tf.losses.mean_pairwise_squared_error(L3, P3), 6.357277),
    ('rank3w', lambda: tf.losses.mean_pairwise_squared_error(L3, P3, weights=[[[1.0]], [[3.0]]]), 13.098068),
    ('one_elem', lambda: tf.losses.mean_pairwise_squared_error([[1.0], [2.0]], [[3.0], [5.0]]), 0.0),
]


@pytest.mark.parametrize("case", LOSS_CASES, ids=lambda c: c[0])
def test_mean_pairwise_squared_error_matches_tf(case):
    _, build, expected = case
    with tf.Graph().as_default():
        loss = build()
        assert loss.dtype == tf.float32 and loss.get_shape().ndims == 0
        assert tf.get_collection(tf.GraphKeys.LOSSES) == [loss]
        assert loss.name == "mean_pairwise_squared_error/value_2:0"   # TF's name
        assert float(tf.Session().run(loss)) == pytest.approx(expected, rel=1e-6)


def test_mean_pairwise_squared_error_matches_the_pairs():
    rng = np.random.default_rng(3)
    labels, predictions = rng.standard_normal((3, 5)), rng.standard_normal((3, 5))
    d = predictions - labels
    # the mean over each example's ordered pairs, summed over the examples
    pairs = sum(((d[b, i] - d[b, j]) ** 2).sum() for b in range(3)
                for i in range(5) for j in range(5) if i != j) / (5 * 4)
    with tf.Graph().as_default():
        loss = tf.losses.mean_pairwise_squared_error(labels, predictions)
        assert float(tf.Session().run(loss)) == pytest.approx(pairs, rel=1e-5)


def test_mean_pairwise_squared_error_refuses_bad_weights():
    with tf.Graph().as_default():
        # TF: weights of shape [batch] do not broadcast against [batch, n] values
        with pytest.raises(ValueError, match="weights can not be broadcast"):
            tf.losses.mean_pairwise_squared_error(L, P, weights=[1.0, 0.5])
        with pytest.raises(ValueError, match="must not be None"):
            tf.losses.mean_pairwise_squared_error(None, P)
