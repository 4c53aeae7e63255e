"""tf.nn.embedding_lookup over a single table."""

import numpy as np
import pytest

import zps as tf
from zps.testing.gradient_checker import GradCase, check_gradients

R = np.random.default_rng(11)

GRAD_CASES = [
    GradCase("Gather", lambda p, i: tf.nn.embedding_lookup(p, i), [R.standard_normal((5, 3)),
                                                                   np.array([[4, 0], [4, 2]])],
             name="embedding_lookup"),
    GradCase("Gather", lambda p, i: tf.nn.embedding_lookup([p], i, max_norm=1.0),
             [R.standard_normal((4, 3)) * 2, np.array([1, 3, 1])], name="embedding_lookup_max_norm"),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: c.name)
def test_gradient(case):
    check_gradients(case)


def _table():
    return np.arange(15, dtype=np.float32).reshape(5, 3)


def test_lookup_values_names_and_static_shape():
    with tf.Graph().as_default():
        ids = tf.placeholder(tf.int64, [None, 2])
        rows = tf.nn.embedding_lookup(_table(), ids)
        assert rows.get_shape().as_list() == [None, 2, 3]
        assert rows.op.name == "embedding_lookup/Identity"
        assert rows.op.inputs[0].op.name == "embedding_lookup"
        with tf.Session() as sess:
            out = sess.run(rows, {ids: [[4, 0], [1, 1]]})
    np.testing.assert_array_equal(out, _table()[[[4, 0], [1, 1]]])


def test_lookup_runs_where_the_table_lives():
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            table = tf.Variable(_table(), name="table")
        with tf.device("/job:worker/task:0"):
            rows = tf.nn.embedding_lookup(table, [3, 0, 3], name="lookup")
        assert rows.op.inputs[0].op.type == "Gather"
        assert rows.op.inputs[0].op.device == table.device  # no copy of the table crosses tasks
        assert rows.op.device == "/job:worker/task:0"


def test_lookup_in_a_variable_has_sparse_gradient():
    with tf.Graph().as_default():
        table = tf.Variable(_table(), name="table")
        rows = tf.nn.embedding_lookup([table], [3, 0, 3], name="lookup")
        loss = tf.reduce_sum(rows * tf.constant([[1.0], [2.0], [3.0]]))
        grad, = tf.gradients(loss, [table])
        assert isinstance(grad, tf.IndexedSlices)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            values, indices, dense_shape = sess.run([grad.values, grad.indices, grad.dense_shape])
    np.testing.assert_array_equal(indices, [3, 0, 3])
    np.testing.assert_array_equal(values, [[1.0] * 3, [2.0] * 3, [3.0] * 3])
    np.testing.assert_array_equal(dense_shape, [5, 3])


def test_max_norm_clips_each_embedding():
    table = np.array([[3.0, 4.0], [0.3, 0.4], [0.0, 0.0]], np.float32)
    with tf.Graph().as_default():
        rows = tf.nn.embedding_lookup(table, [[0, 1], [2, 0]], max_norm=1.0)
        out = tf.Session().run(rows)
    np.testing.assert_allclose(out, [[[0.6, 0.8], [0.3, 0.4]], [[0.0, 0.0], [0.6, 0.8]]], rtol=1e-6)


def test_out_of_range_ids_fail_when_run():
    with tf.Graph().as_default():
        ids = tf.placeholder(tf.int32, [None])
        rows = tf.nn.embedding_lookup(_table(), ids)
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices contains 5, which is "
                                                                      r"not in \[0, 5\)"):
                sess.run(rows, {ids: [0, 5]})


def test_errors():
    with tf.Graph().as_default():
        a, b = tf.zeros([2, 3]), tf.zeros([2, 3])
        with pytest.raises(NotImplementedError, match="list of 2 partitioned tables"):
            tf.nn.embedding_lookup([a, b], [0])
        with pytest.raises(ValueError, match="Need at least one param"):
            tf.nn.embedding_lookup([], [0])
        with pytest.raises(TypeError, match="ids must be int32 or int64, got float32"):
            tf.nn.embedding_lookup(a, [0.0])
