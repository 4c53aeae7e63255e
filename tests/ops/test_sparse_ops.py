"""SparseTensor, sparse segment reductions, unique, dynamic_partition and dynamic_stitch."""

import numpy as np
import pytest

import zps as tf
from zps.ops import partition_ops, sparse_ops
from zps.testing.gradient_checker import GradCase, check_gradients

R = np.random.default_rng(5)

GRAD_CASES = [
    GradCase("DynamicPartition",
             lambda d, p: partition_ops.dynamic_partition(d, p, 3)[0] * 2.0
             + tf.reduce_sum(partition_ops.dynamic_partition(d, p, 3)[2]),
             [R.standard_normal((5, 2)), np.array([0, 2, 0, 1, 2])], name="dynamic_partition"),
    GradCase("DynamicStitch",
             lambda a, b: partition_ops.dynamic_stitch([[0, 2], [1, 3, 4]], [a, b]),
             [R.standard_normal((2, 3)), R.standard_normal((3, 3))], name="dynamic_stitch"),
    GradCase("SparseSegmentSum",
             lambda d: sparse_ops.sparse_segment_sum(d, [0, 2, 2, 1], [0, 0, 1, 3]),
             [R.standard_normal((3, 2))]),
    GradCase("SparseSegmentMean",
             lambda d: sparse_ops.sparse_segment_mean(d, [0, 2, 2, 1], [0, 0, 1, 3]),
             [R.standard_normal((3, 2))]),
    GradCase("SparseSegmentSqrtN",
             lambda d: sparse_ops.sparse_segment_sqrt_n(d, [0, 2, 2, 1, 0], [0, 0, 0, 2, 2]),
             [R.standard_normal((3, 2))]),
    GradCase("SparseToDense",
             lambda v, dv: sparse_ops.sparse_tensor_to_dense(
                 sparse_ops.SparseTensor([[0, 1], [2, 0], [2, 2]], v, [3, 3]), dv),
             [R.standard_normal(3), np.array(0.5)]),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: c.name)
def test_gradient(case):
    check_gradients(case)


def _run(*fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(list(fetches), feed)


def test_unique_keeps_first_occurrence_order():
    x = np.array([7, 3, 7, 9, 3, 3, -1], np.int64)
    with tf.Graph().as_default():
        y, idx = partition_ops.unique(x)
        y64, idx64 = partition_ops.unique(tf.constant(x), out_idx=tf.int64)
        assert idx.dtype == tf.int32 and idx64.dtype == tf.int64 and y.dtype == tf.int64
        assert idx.get_shape().as_list() == [7] and y.get_shape().as_list() == [None]
        yv, iv, iv64 = _run(y, idx, idx64)
    np.testing.assert_array_equal(yv, [7, 3, 9, -1])
    np.testing.assert_array_equal(iv, [0, 1, 0, 2, 1, 1, 3])
    np.testing.assert_array_equal(yv[iv], x)
    assert iv64.dtype == np.int64
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="1-D vector"):
            partition_ops.unique([[1, 2]])
        with pytest.raises(TypeError, match="out_idx must be int32 or int64"):
            partition_ops.unique([1], out_idx=tf.float32)
        empty, eidx = partition_ops.unique(tf.zeros([0], tf.int32))
        ev, ei = _run(empty, eidx)
    assert ev.shape == (0,) and ei.shape == (0,)


def test_unique_matches_a_first_occurrence_reference_on_random_inputs():
    rng = np.random.default_rng(7)
    cases = [rng.integers(0, 1 << 40, 5000), rng.integers(-3, 3, 5000).astype(np.int32),
             rng.integers(0, 20, 1), rng.random(3000).round(2)]
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, [None])
        xi = tf.placeholder(tf.int64, [None])
        outs = {np.float64: partition_ops.unique(x), np.int64: partition_ops.unique(xi)}
        with tf.Session() as sess:
            for case in cases:
                kind = np.float64 if case.dtype.kind == "f" else np.int64
                y, idx = sess.run(outs[kind], {x if kind is np.float64 else xi: case})
                want = list(dict.fromkeys(case.tolist()))   # first-occurrence order
                position = {v: i for i, v in enumerate(want)}
                np.testing.assert_array_equal(y, want)
                np.testing.assert_array_equal(idx, [position[v] for v in case.tolist()])


def test_dynamic_partition_and_stitch_round_trip():
    data = np.arange(24, dtype=np.float32).reshape(6, 2, 2)
    parts = np.array([[2, 0], [1, 2], [0, 0]])
    for n in (3, 7):  # masks for few partitions, a sort for many
        with tf.Graph().as_default():
            outs = partition_ops.dynamic_partition(data.reshape(3, 2, 2, 2), parts, n)
            assert len(outs) == n and outs[0].get_shape().as_list() == [None, 2, 2]
            positions = partition_ops.dynamic_partition(np.arange(6).reshape(3, 2), parts, n)
            merged = partition_ops.dynamic_stitch(positions, outs)
            vals = _run(*outs, merged)
        flat, fp = data.reshape(6, 2, 2), parts.ravel()
        for i in range(n):
            np.testing.assert_array_equal(vals[i], flat[fp == i])
        np.testing.assert_array_equal(vals[-1], flat)


def test_dynamic_partition_single_output_is_a_list_and_errors():
    with tf.Graph().as_default():
        one = partition_ops.dynamic_partition([1.0, 2.0], [0, 0], 1)
        assert isinstance(one, list) and len(one) == 1
        p = tf.placeholder(tf.int32, [None])
        bad = partition_ops.dynamic_partition([1.0, 2.0], p, 2)
        with pytest.raises(ValueError, match="num_partitions must be a positive int"):
            partition_ops.dynamic_partition([1.0], [0], 0)
        with pytest.raises(ValueError, match="must start with partitions shape"):
            partition_ops.dynamic_partition([1.0, 2.0], [0, 1, 1], 2)
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match=r"partitions contains 2, "
                                                                     r"which is not in \[0, 2\)"):
                sess.run(bad, {p: [0, 2]})


def test_dynamic_stitch_later_index_wins_and_gaps_are_zero():
    with tf.Graph().as_default():
        merged = partition_ops.dynamic_stitch([[0, 4], [4]], [[1.0, 2.0], [3.0]])
        out, = _run(merged)
        with pytest.raises(ValueError, match="as many data tensors as index tensors"):
            partition_ops.dynamic_stitch([[0]], [])
        with pytest.raises(TypeError, match="share one dtype"):
            partition_ops.dynamic_stitch([[0], [1]], [[1.0], [1]])
        i = tf.placeholder(tf.int32, [None])
        bad = partition_ops.dynamic_stitch([i], [[1.0, 2.0]])
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match="does not start with"):
                sess.run(bad, {i: [0, 1, 2]})
    np.testing.assert_array_equal(out, [1.0, 0.0, 0.0, 0.0, 3.0])


def test_sparse_segment_reductions_match_numpy():
    data = R.standard_normal((4, 3)).astype(np.float32)
    idx, seg = np.array([3, 0, 3, 1, 2]), np.array([0, 0, 0, 2, 2])
    with tf.Graph().as_default():
        s = sparse_ops.sparse_segment_sum(data, idx, seg)
        m = sparse_ops.sparse_segment_mean(data, idx, seg)
        q = sparse_ops.sparse_segment_sqrt_n(data, idx, seg)
        assert s.get_shape().as_list() == [None, 3]
        sv, mv, qv = _run(s, m, q)
    want = np.zeros((3, 3), np.float32)
    np.add.at(want, seg, data[idx])
    np.testing.assert_allclose(sv, want, rtol=1e-6)
    np.testing.assert_allclose(mv, want / np.array([[3], [1], [2]]), rtol=1e-6)
    np.testing.assert_allclose(qv, want / np.sqrt([[3], [1], [2]]), rtol=1e-6)


def test_sparse_segment_errors():
    with tf.Graph().as_default():
        with pytest.raises(TypeError, match="needs floating data"):
            sparse_ops.sparse_segment_sum([1, 2], [0], [0])
        with pytest.raises(TypeError, match="segment_ids must be int32 or int64"):
            sparse_ops.sparse_segment_sum([1.0], [0], [0.0])
        seg = tf.placeholder(tf.int32, [None])
        out = sparse_ops.sparse_segment_sum([[1.0], [2.0]], [0, 1], seg)
        oob = sparse_ops.sparse_segment_sum([[1.0], [2.0]], [0, 5], [0, 0])
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match="must be sorted"):
                sess.run(out, {seg: [1, 0]})
            with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices contains 5"):
                sess.run(oob)


def test_sparse_tensor_feed_fetch_and_to_dense():
    with tf.Graph().as_default():
        sp = sparse_ops.sparse_placeholder(tf.float32)
        dense = sparse_ops.sparse_tensor_to_dense(sp, default_value=-1.0)
        fixed = sparse_ops.sparse_placeholder(tf.int64, shape=[2, 3])
        assert fixed.get_shape().as_list() == [2, 3]
        assert sp.get_shape().ndims is None
        value = sparse_ops.SparseTensorValue(np.array([[0, 1], [1, 0]]), np.array([5.0, 6.0]),
                                             np.array([2, 2]))
        with tf.Session() as sess:
            fetched, d = sess.run([sp, dense], {sp: value})
            # A plain tuple works too, and a fully shaped sparse_placeholder's shape is optional.
            f2 = sess.run(fixed, {fixed: ([[1, 2]], [9], [2, 3])})
            f3 = sess.run(fixed, {fixed.indices: [[0, 0]], fixed.values: [4]})
            with pytest.raises(TypeError, match="fed a SparseTensorValue"):
                sess.run(dense, {sp: [1.0]})
    assert isinstance(fetched, sparse_ops.SparseTensorValue)
    np.testing.assert_array_equal(fetched.indices, [[0, 1], [1, 0]])
    np.testing.assert_array_equal(fetched.values, [5.0, 6.0])
    np.testing.assert_array_equal(d, [[-1.0, 5.0], [6.0, -1.0]])
    np.testing.assert_array_equal(f2.dense_shape, [2, 3])
    np.testing.assert_array_equal(f3.dense_shape, [2, 3])


def test_sparse_tensor_static_checks():
    with tf.Graph().as_default():
        st = sparse_ops.SparseTensor([[0, 0]], [1.0], [4, 5])
        assert st.dtype == tf.float32 and st.indices.dtype == tf.int64
        assert st.get_shape().as_list() == [4, 5]
        assert sparse_ops.SparseTensor.from_value(st) is st
        with pytest.raises(ValueError, match="do not fit dense_shape"):
            sparse_ops.SparseTensor([[0, 0, 0]], [1.0], [4, 5])
        with pytest.raises(TypeError, match="must be a SparseTensor"):
            sparse_ops.sparse_tensor_to_dense([1.0])
        with pytest.raises(tf.errors.InvalidArgumentError, match="out of bounds"):
            tf.Session().run(sparse_ops.sparse_tensor_to_dense(
                sparse_ops.SparseTensor([[5, 0]], [1.0], [4, 5])))
