"""Regression tests from a side-by-side audit of tf.metrics, the sparse ops and the string ops
against TensorFlow 2.21 (tf.compat.v1 graph mode). Expected numbers were computed with TF."""

import numpy as np
import pytest

import zps as tf
from zps.ops import sparse_ops
from zps.testing.gradient_checker import GradCase, check_gradients

R = np.random.default_rng(18)
DATA = np.arange(15, dtype=np.float32).reshape(5, 3)

GRAD_CASES = [
    GradCase("SparseSegmentSumWithNumSegments",
             lambda d: sparse_ops.sparse_segment_sum(d, [0, 2, 1], [0, 0, 2], num_segments=4),
             [R.standard_normal((3, 2))]),
    GradCase("SparseSegmentMeanWithNumSegments",
             lambda d: sparse_ops.sparse_segment_mean(d, [0, 2, 2, 1], [0, 0, 1, 3],
                                                      num_segments=5),
             [R.standard_normal((3, 2))]),
    GradCase("SparseSegmentSqrtNWithNumSegments",
             lambda d: sparse_ops.sparse_segment_sqrt_n(d, [0, 2, 1], [0, 0, 2], num_segments=4),
             [R.standard_normal((3, 2))]),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: c.name)
def test_gradients(case):
    check_gradients(case)


def _run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


# -- sparse segment reductions with num_segments ---------------------------------------------------
@pytest.mark.parametrize("op, expected", [
    (tf.sparse_segment_sum, [[3, 4, 5], [0, 0, 0], [15, 17, 19], [0, 0, 0], [0, 0, 0]]),
    (tf.sparse_segment_mean, [[3, 4, 5], [0, 0, 0], [7.5, 8.5, 9.5], [0, 0, 0], [0, 0, 0]]),
    (tf.sparse_segment_sqrt_n, [[3, 4, 5], [0, 0, 0], [10.60660171, 12.0208149, 13.43502903],
                                [0, 0, 0], [0, 0, 0]]),
])
def test_sparse_segment_reductions_with_num_segments(op, expected):
    with tf.Graph().as_default():
        out = op(DATA, [1, 2, 3], [0, 2, 2], num_segments=5)
        assert out.op.type.endswith("WithNumSegments")
        assert out.get_shape().as_list() == [5, 3]
        np.testing.assert_allclose(_run(out), expected, rtol=1e-6)


def test_sparse_segment_num_segments_tensor_and_1d_data():
    with tf.Graph().as_default():
        n = tf.placeholder(tf.int32, [])
        total = tf.sparse.segment_sum(DATA[:3, :2], [0, 1], [0, 1], num_segments=n)
        assert total.get_shape().as_list() == [None, 2]
        mean = tf.sparse_segment_mean(np.array([1.0, 2.0, 4.0], np.float32), [0, 1, 2],
                                      [0, 0, 2], num_segments=tf.constant(4, tf.int64))
        got_total, got_mean = _run([total, mean], {n: 3})
        assert got_total.tolist() == [[0, 1], [3, 4], [0, 0]]
        assert got_mean.tolist() == [1.5, 0.0, 4.0, 0.0]


def test_sparse_segment_num_segments_too_small_is_an_error():
    with tf.Graph().as_default():
        out = tf.sparse_segment_sum(DATA, [0, 1, 2], [0, 1, 3], num_segments=2)
        with pytest.raises(tf.errors.InvalidArgumentError, match="num_segments"):
            _run(out)


def test_sparse_segment_sqrt_n_num_segments_gradient_matches_tf():
    with tf.Graph().as_default():
        d = tf.constant(np.arange(6, dtype=np.float32).reshape(3, 2))
        y = tf.sparse_segment_sqrt_n(d, [0, 2, 1], [0, 0, 2], num_segments=4)
        weights = tf.constant(np.arange(8, dtype=np.float32).reshape(4, 2))
        grad = tf.gradients(tf.reduce_sum(y * weights), d)[0]
        got_y, got_grad = _run([y, grad])
        np.testing.assert_allclose(got_y, [[2.828427, 4.2426405], [0, 0], [2, 3], [0, 0]],
                                   rtol=1e-6)
        np.testing.assert_allclose(got_grad, [[0, 0.70710677], [4, 5], [0, 0.70710677]],
                                   rtol=1e-6)


# -- sparse_add's thresh applies to sums only ----------------------------------------------------
def test_sparse_add_thresh_keeps_entries_of_one_operand():
    with tf.Graph().as_default():
        a = tf.SparseTensor([[0, 0], [0, 1], [1, 1]], [1.0, 0.0, 0.2], [2, 2])
        b = tf.SparseTensor([[0, 0], [1, 1]], [-0.95, 0.1], [2, 2])
        got = _run(tf.sparse_add(a, b, thresh=0.2))
        assert got.indices.tolist() == [[0, 1], [1, 1]]
        np.testing.assert_allclose(got.values, [0.0, 0.3], rtol=1e-6)
        a = tf.SparseTensor([[0, 0], [0, 2], [1, 1], [2, 3]], [1.0, 2.0, 3.0, 4.0], [3, 4])
        b = tf.SparseTensor([[0, 0], [1, 2], [2, 3]], [-0.5, 1.0, -4.0], [3, 4])
        got = _run(tf.sparse.add(a, b, 3.0))
        assert got.indices.tolist() == [[0, 2], [1, 1], [1, 2]]
        assert got.values.tolist() == [2.0, 3.0, 1.0]


# -- static shapes -------------------------------------------------------------------------------
def test_static_shapes_of_fill_empty_rows_and_reshaped_to_dense():
    with tf.Graph().as_default():
        sp = tf.SparseTensor([[1, 0], [1, 2], [3, 1]], [1.0, 2.0, 3.0], [5, 3])
        filled, empty = tf.sparse_fill_empty_rows(sp, 0.0)
        assert empty.get_shape().as_list() == [5]
        dense = tf.sparse_tensor_to_dense(tf.sparse_reshape(sp, [3, -1]))
        assert dense.get_shape().as_list() == [3, 5]
        assert _run(empty).tolist() == [True, False, True, False, True]


# -- strings -------------------------------------------------------------------------------------
def test_strings_split_whitespace_with_maxsplit_as_tf():
    with tf.Graph().as_default():
        source = ["  a b  c ", "x", "", "a  ", " a\tb\nc d"]
        one = _run(tf.strings.split(source, maxsplit=1))
        assert one.indices.tolist() == [[0, 0], [0, 1], [1, 0], [1, 1], [3, 0], [3, 1], [4, 0],
                                        [4, 1]]
        assert one.values.tolist() == [b"a", b"b  c ", b"x", b"", b"a", b"", b"a", b"b\nc d"]
        assert one.dense_shape.tolist() == [5, 2]
        zero = _run(tf.strings.split(source[:3], maxsplit=0))
        assert zero.values.tolist() == [b"  a b  c ", b"x", b""]
        two = _run(tf.strings.split(source[:3], maxsplit=2))
        assert two.values.tolist() == [b"a", b"b", b"c ", b"x"]
        assert two.dense_shape.tolist() == [3, 3]


def test_substr_negative_len():
    with tf.Graph().as_default():
        by_byte = tf.strings.substr(["hello", "hi", "ÀbÇ"], [1, 2, 1], [-1, -2, -1])
        by_char = tf.strings.substr(["hello", "ÀbÇ"], [1, 1], [-1, -1], unit="UTF8_CHAR")
        got_byte, got_char = _run([by_byte, by_char])
        assert got_byte.tolist() == [b"ello", b"", b"\x80b\xc3\x87"]
        assert got_char.tolist() == [b"", b""]


def test_string_to_number_reads_hexadecimal_floats():
    with tf.Graph().as_default():
        strings = ["0x10", "-0x1.8p1", "0X1F", " 0x10 "]
        f32, f64 = _run([tf.strings.to_number(strings), tf.strings.to_number(strings, tf.float64)])
        assert f32.tolist() == f64.tolist() == [16.0, -3.0, 31.0, 16.0]
        for bad, out_type in (("0x", tf.float32), ("0x1g", tf.float32), ("0x10", tf.int32)):
            with pytest.raises(tf.errors.InvalidArgumentError, match="could not correctly"):
                _run(tf.strings.to_number([bad], out_type))


# -- metrics -------------------------------------------------------------------------------------
def test_auc_careful_interpolation_tensor_names():
    with tf.Graph().as_default():
        value, update = tf.metrics.auc([0, 1, 1, 0], [0.1, 0.8, 0.4, 0.6], curve="PR",
                                       summation_method="careful_interpolation")
        assert (value.name, update.name) == ("auc/interpolate_pr_auc:0",
                                             "auc/interpolate_pr_auc_1:0")
