"""tf.saturate_cast, tf.clip_by_average_norm and the global norm of no gradients, against TF 2.21's
numbers."""

import numpy as np
import pytest

import zps as tf


def _run(t):
    with tf.Session() as sess:
        return sess.run(t)


@pytest.mark.parametrize("values,src,dst,expected", [
    ([-1e10, -3.7, 2.5, 1e10], tf.float32, tf.int32, [-2147483648, -3, 2, 2147483520]),
    ([-300, 5, 300], tf.int32, tf.uint8, [0, 5, 255]),
    ([-1e39, 1e300], tf.float64, tf.float32, [-3.4028235e38, 3.4028235e38]),
    ([-1e300, 1e300], tf.float64, tf.int64, [-9223372036854775808, 9223372036854774784]),
    ([-5, 70000, -70000], tf.int64, tf.int16, [-5, 32767, -32768]),
    ([1.5, -2.5], tf.float32, tf.float64, [1.5, -2.5]),
])
def test_saturate_cast_clamps_to_what_the_target_holds(values, src, dst, expected):
    with tf.Graph().as_default():
        out = tf.saturate_cast(tf.constant(values, src), dst)
        assert out.dtype == dst and out.op.name == "saturate_cast"
        got = _run(out)
    assert got.dtype == dst.as_numpy_dtype
    np.testing.assert_array_equal(got, np.array(expected, dst.as_numpy_dtype))


def test_clip_by_average_norm():
    with tf.Graph().as_default():
        x = tf.constant([[3.0, 4.0], [0.0, 0.0]])
        out = tf.clip_by_average_norm(x, 1.0)
        small = tf.clip_by_average_norm(x, 10.0)   # norm/size 1.25 < 10: unchanged
        assert out.op.name == "clip_by_average_norm"
        np.testing.assert_allclose(_run(out), [[2.4, 3.2], [0.0, 0.0]], rtol=1e-6)
        np.testing.assert_allclose(_run(small), [[3.0, 4.0], [0.0, 0.0]], rtol=1e-6)


def test_global_norm_of_only_missing_gradients_is_zero():
    with tf.Graph().as_default():
        clipped, norm = tf.clip_by_global_norm([None, None], 1.0)
        assert clipped == [None, None]
        assert _run(norm) == 0.0 and _run(tf.global_norm([None])) == 0.0
