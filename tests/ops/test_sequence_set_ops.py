"""tf.reverse_sequence, tf.unique_with_counts and tf.setdiff1d (zps.ops.array_ops).

Expected values were computed with TensorFlow (tf.compat.v1) on the same inputs.
"""

import numpy as np
import pytest

import zps as tf
from zps.testing.gradient_checker import GradCase, check_gradients

R = np.random.default_rng(3)

GRAD_CASES = [
    GradCase("ReverseSequence", lambda x: tf.reverse_sequence(x, [1, 3, 0], seq_axis=2,
                                                              batch_axis=1),
             [R.standard_normal((2, 3, 4))]),
    GradCase("ReverseSequence", lambda x: tf.reverse_sequence(x, [2, 4], seq_axis=0,
                                                              batch_axis=1),
             [R.standard_normal((4, 2))], name="reverse_sequence_batch_after_seq"),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: c.name)
def test_gradient(case):
    check_gradients(case)


def test_reverse_sequence_matches_tensorflow():
    x = np.arange(24.0).reshape(2, 3, 4)
    with tf.Graph().as_default():
        out = tf.reverse_sequence(x, [1, 3, 0], seq_axis=2, batch_axis=1)
        old_names = tf.reverse_sequence([[1, 2, 3], [4, 5, 6]], [2, 3], seq_dim=1)
        assert out.get_shape().as_list() == [2, 3, 4]
        with tf.Session() as sess:
            got, got_old = sess.run([out, old_names])
    want = x.copy()
    want[:, 1, :3] = x[:, 1, 2::-1]
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got[0, 1], [6.0, 5.0, 4.0, 7.0])
    np.testing.assert_array_equal(got_old, [[2, 1, 3], [6, 5, 4]])


def test_reverse_sequence_errors():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="distinct seq_axis and batch_axis"):
            tf.reverse_sequence(tf.zeros([2, 3]), [1, 1], seq_axis=0)
        with pytest.raises(ValueError, match="Length of seq_lengths != input.dims\\(0\\)"):
            tf.reverse_sequence(tf.zeros([2, 3]), [1, 1, 1], seq_axis=1)
        lengths = tf.placeholder(tf.int32, [2])
        out = tf.reverse_sequence(tf.zeros([2, 3]), lengths, seq_axis=1)
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match=r"seq_lens\(1\) > "
                                                                     r"input.dims\(1\)"):
                sess.run(out, {lengths: [1, 4]})


def test_unique_with_counts_and_setdiff1d_match_tensorflow():
    with tf.Graph().as_default():
        y, idx, count = tf.unique_with_counts([4, 4, 2, 4, 7, 2])
        out, where = tf.setdiff1d([5, 1, 2, 3, 4, 5, 6], [1, 3, 5])
        _, where64 = tf.setdiff1d([1.0, 2.0], [2.0], index_dtype=tf.int64)
        assert count.dtype == tf.int32 and where64.dtype == tf.int64
        with tf.Session() as sess:
            got = sess.run([y, idx, count, out, where])
        with pytest.raises(TypeError, match="one dtype"):
            tf.setdiff1d([1, 2], [1.0])
        bad = tf.setdiff1d([[1, 2]], [1])
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match="x should be a 1D vector"):
                sess.run(bad)
    for g, w in zip(got, [[4, 2, 7], [0, 0, 1, 0, 2, 1], [3, 2, 1], [2, 4, 6], [2, 4, 6]]):
        np.testing.assert_array_equal(g, w)
