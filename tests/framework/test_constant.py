"""constant(), its dtype/shape rules, and static folding with constant_value."""

import numpy as np
import pytest

import zps as tf
from zps.framework.constant import constant_value
from zps.framework.graph import numpy_value


def _run(t):
    with tf.Session() as sess:
        return sess.run(t)


def test_values_dtypes_and_shapes():
    with tf.Graph().as_default():
        c = tf.constant([[1, 2], [3, 4]], dtype=tf.float32, name="c")
        assert c.op.type == "Const" and c.op.name == "c" and c.dtype is tf.float32
        assert c.get_shape().as_list() == [2, 2]
        out = _run(c)
        assert out.dtype == np.float32 and out.tolist() == [[1.0, 2.0], [3.0, 4.0]]
        assert tf.constant(np.arange(3, dtype=np.int16)).dtype is tf.int16
        assert tf.constant(np.float64(2.5)).dtype is tf.float64
        assert tf.constant([True, False]).dtype is tf.bool


def test_string_constants_are_bytes():
    with tf.Graph().as_default():
        hello = tf.constant("Hello")
        arr = tf.constant([["a", b"b"], ["c", "d"]])
        assert hello.dtype is tf.string and hello.get_shape().as_list() == []
        assert _run(hello) == b"Hello"
        assert _run(arr).tolist() == [[b"a", b"b"], [b"c", b"d"]]
        assert constant_value(hello) == b"Hello"


def test_shape_argument_broadcasts_or_reshapes():
    with tf.Graph().as_default():
        np.testing.assert_array_equal(_run(tf.constant(7.0, shape=[2, 3])), np.full((2, 3), 7.0))
        np.testing.assert_array_equal(_run(tf.constant([1, 2, 3, 4], shape=[2, 2])), [[1, 2], [3, 4]])
        assert tf.constant(0, shape=3).get_shape().as_list() == [3]
        with pytest.raises(TypeError, match="shape \\[4\\] from 3 values"):
            tf.constant([1, 2, 3], shape=[4])
        with pytest.raises(TypeError, match="Expected Tensor's shape"):
            tf.constant([1, 2, 3], shape=[3, 1], verify_shape=True)


def test_lossy_or_impossible_values_are_rejected():
    with tf.Graph().as_default():
        with pytest.raises(TypeError, match="truncated"):
            tf.constant(1.5, dtype=tf.int32)
        with pytest.raises(TypeError, match="Cannot make a uint8 constant"):
            tf.constant(300, dtype=tf.uint8)
        with pytest.raises(TypeError, match="Cannot make a float32 constant"):
            tf.constant("abc", dtype=tf.float32)
        with pytest.raises(TypeError):
            tf.constant(tf.constant(1.0))
        assert tf.constant(np.array([1.5]), dtype=tf.int32).dtype is tf.int32  # numpy: caller's cast


def test_python_integers_out_of_a_dtypes_range_overflow_with_any_numpy():
    # numpy 2 refuses them; numpy 1 would wrap them around (with a warning): zps refuses them with
    # either, and a feed names the tensor.
    for value, dtype in ((300, tf.uint8), (-1, tf.uint8), ([1, 2 ** 40], tf.int32),
                         ([[0], [2 ** 70]], tf.int64), (-(2 ** 63) - 1, tf.int64)):
        with pytest.raises(OverflowError, match="out of bounds for"):
            numpy_value(value, dtype)
    assert numpy_value([0, 255], tf.uint8).dtype == np.uint8
    assert numpy_value(-(2 ** 63), tf.int64) == -(2 ** 63)
    assert numpy_value([], tf.int32).shape == (0,)
    with tf.Graph().as_default():
        ids = tf.placeholder(tf.int32, [None], name="ids")
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match="to ids:0 .*out of bounds"):
                sess.run(ids, {ids: [1, 2 ** 31]})
            assert sess.run(ids, {ids: [1, 2 ** 31 - 1]}).tolist() == [1, 2 ** 31 - 1]


def test_constant_storage_is_read_only_and_fetches_are_writable():
    with tf.Graph().as_default():
        src = np.array([1.0, 2.0], np.float32)
        c = tf.constant(src)
        src[0] = 100.0  # the constant does not see later changes of the source array
        stored = c.op.get_attr("value")
        assert not stored.flags.writeable
        with pytest.raises(ValueError):
            stored[0] = 5.0
        out = _run(c)
        out[0] = 5.0  # a fetched value is the caller's to modify
        np.testing.assert_array_equal(_run(c), [1.0, 2.0])


def test_constant_value_folds_constants_and_knows_what_it_cannot():
    with tf.Graph().as_default():
        c = tf.constant([1.0, 2.0])
        x = tf.placeholder(tf.float32, [2])
        np.testing.assert_array_equal(constant_value(c), [1.0, 2.0])
        assert constant_value(x) is None
        assert constant_value(x + c) is None
        np.testing.assert_array_equal(constant_value([3, 4]), [3, 4])
        shape = tf.shape(tf.zeros([2, 5]))
        np.testing.assert_array_equal(constant_value(shape), [2, 5])


def test_a_number_is_not_a_string():
    # TF1: "Expected string, but got 3 of type 'int'" (numpy would make 3 three zero bytes).
    with tf.Graph().as_default():
        for value in (3, [b"a", 2], True, 2.5):
            with pytest.raises(TypeError, match="Expected string, but got"):
                tf.constant(value, dtype=tf.string)
        x = tf.placeholder(tf.string, [None])
        with tf.Session() as sess:
            with pytest.raises(ValueError, match="Expected string, but got 1 of type 'int'"):
                sess.run(x, {x: [1, 2]})
            assert sess.run(x, {x: np.array(["a", "b"])}).tolist() == [b"a", b"b"]
            assert sess.run(x, {x: np.array([b"a", b"b"])}).tolist() == [b"a", b"b"]
