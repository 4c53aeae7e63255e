"""SparseTensor and the sparse ops, sparse segment reductions, unique, dynamic_partition and
dynamic_stitch. Expected values of the sparse ops were computed with TensorFlow (tf.compat.v1)."""

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
    GradCase("SparseTensorDenseMatMul",
             lambda v, b: tf.sparse_tensor_dense_matmul(_sp(v), b),
             [R.standard_normal(4), R.standard_normal((3, 2))]),
    GradCase("SparseTensorDenseMatMul",
             lambda v, b: tf.sparse_tensor_dense_matmul(_sp(v, [3, 4]), b, adjoint_a=True,
                                                        adjoint_b=True),
             [R.standard_normal(4), R.standard_normal((2, 3))], name="sparse_matmul_adjoint"),
    GradCase("SparseReduceSum", lambda v: tf.sparse_reduce_sum(_sp(v), 1),
             [R.standard_normal(4)]),
    GradCase("SparseReduceSum", lambda v: tf.sparse_reduce_sum(_sp(v, [3, 4]), [0, 1],
                                                               keepdims=True),
             [R.standard_normal(4)], name="sparse_reduce_sum_all_keepdims"),
    GradCase("SparseAdd",
             lambda a, b: tf.sparse_add(_sp(a), tf.SparseTensor([[0, 0], [2, 1]], b, [3, 3]),
                                        thresh=0.01).values,
             [R.standard_normal(4), R.standard_normal(2)]),
    GradCase("SparseTensorDenseAdd", lambda v, d: tf.sparse_add(_sp(v), d),
             [R.standard_normal(4), R.standard_normal((3, 3))]),
    GradCase("SparseReorder",
             lambda v: tf.sparse_reorder(tf.SparseTensor([[2, 0], [0, 2], [1, 1], [0, 0]], v,
                                                         [3, 3])).values,
             [R.standard_normal(4)]),
    GradCase("SparseFillEmptyRows",
             lambda v, d: tf.sparse_fill_empty_rows(
                 tf.SparseTensor([[0, 0], [0, 2], [3, 1]], v, [5, 3]), d)[0].values,
             [R.standard_normal(3), np.array(0.5)]),
    GradCase("SparseSlice",
             lambda v: tf.sparse_slice(_sp(v, [3, 4]), [0, 1], [3, 2]).values,
             [R.standard_normal(4)]),
    GradCase("SparseSoftmax", lambda v: tf.sparse_softmax(_sp(v, [3, 4])).values,
             [R.standard_normal(4)]),
]


def _sp(values, dense_shape=(3, 3)):
    """A SparseTensor of 4 entries in canonical order with the given values."""
    return sparse_ops.SparseTensor([[0, 0], [0, 2], [1, 1], [2, 0]], values, list(dense_shape))


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
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"indices\[0\] = \[5,0\] is out of bounds: need 0 <= index < \[4,5\]"):
            tf.Session().run(sparse_ops.sparse_tensor_to_dense(
                sparse_ops.SparseTensor([[5, 0]], [1.0], [4, 5])))


@pytest.mark.parametrize("indices, error", [
    ([[0, 2], [0, 1]], r"indices\[1\] = \[0,1\] is out of order"),
    ([[1, 0], [0, 3]], r"indices\[1\] = \[0,3\] is out of order"),
    ([[0, 1], [1, 0], [1, 0]], r"indices\[2\] = \[1,0\] is repeated"),
])
def test_sparse_tensor_to_dense_validates_the_order_of_indices(indices, error):
    # TF1: validate_indices=True (the default) refuses unsorted or repeated indices with these
    # messages; validate_indices=False writes them as they come (the last of a repeat wins).
    with tf.Graph().as_default(), tf.Session() as sess:
        st = sparse_ops.SparseTensor(indices, np.arange(1.0, len(indices) + 1), [2, 4])
        with pytest.raises(tf.errors.InvalidArgumentError, match="(?s)" + error + r".*tf\.sparse\.reorder"):
            sess.run(sparse_ops.sparse_tensor_to_dense(st))
        dense = sess.run(sparse_ops.sparse_tensor_to_dense(st, validate_indices=False))
        want = np.zeros((2, 4))
        for k, (i, j) in enumerate(indices):
            want[i, j] = k + 1.0
        np.testing.assert_array_equal(dense, want)
        np.testing.assert_array_equal(
            sess.run(sparse_ops.sparse_tensor_to_dense(tf.sparse.reorder(st)))
            if len(set(map(tuple, indices))) == len(indices) else want, want)


ST = ([[0, 0], [0, 2], [1, 1], [2, 0]], [1.0, -2.0, 3.0, 4.0], [3, 3])
ST3 = ([[0, 0, 1], [0, 1, 0], [1, 0, 1], [1, 1, 1]], [1.0, 2.0, 3.0, 4.0], [2, 2, 2])


def _assert_sparse(value, indices, values, dense_shape):
    assert isinstance(value, tf.SparseTensorValue)
    np.testing.assert_array_equal(value.indices, indices)
    np.testing.assert_allclose(value.values, values, rtol=1e-6)
    np.testing.assert_array_equal(value.dense_shape, dense_shape)


def test_sparse_tensor_dense_matmul_matches_tensorflow():
    d = np.arange(6.0, dtype=np.float32).reshape(3, 2)
    with tf.Graph().as_default():
        st = tf.SparseTensor(*ST)
        mm = tf.sparse_tensor_dense_matmul(st, d)
        adj = tf.sparse.matmul(st, d.T, adjoint_a=True, adjoint_b=True)
        assert mm.get_shape().as_list() == [3, 2] and adj.get_shape().as_list() == [3, 2]
        with pytest.raises(ValueError, match="inner dimension does not match: 3 vs. 2"):
            tf.sparse_tensor_dense_matmul(st, np.ones((2, 2), np.float32))
        with pytest.raises(TypeError, match="does not match type float32"):
            tf.sparse_tensor_dense_matmul(st, np.ones((3, 2)))
        oob = tf.sparse_tensor_dense_matmul(tf.SparseTensor([[0, 5]], [1.0], [3, 3]),
                                            np.ones((3, 2), np.float32))
        got = _run(mm, adj)
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"k \(5\) from index\[0,1\] out of bounds \(>=3\)"):
            _run(oob)
    np.testing.assert_array_equal(got[0], [[-8.0, -9.0], [6.0, 9.0], [0.0, 4.0]])
    np.testing.assert_array_equal(got[1], [[16.0, 21.0], [6.0, 9.0], [0.0, -2.0]])


def test_sparse_reductions_match_tensorflow():
    with tf.Graph().as_default():
        st, st3 = tf.SparseTensor(*ST), tf.SparseTensor(*ST3)
        sums = [tf.sparse_reduce_sum(st), tf.sparse_reduce_sum(st, 0),
                tf.sparse_reduce_sum(st, -1, keepdims=True), tf.sparse_reduce_sum(st3, [0, 2]),
                tf.sparse_reduce_sum(st3, 1, keepdims=True)]
        assert [s.get_shape().as_list() for s in sums] == [[], [3], [3, 1], [2], [2, 1, 2]]
        maxes = [tf.sparse_reduce_max(st, 1), tf.sparse_reduce_max(
            tf.SparseTensor([[0, 0], [0, 2], [1, 1]], [-1.0, -2.0, 3.0], [3, 3]), 1)]
        sparse_sum = tf.sparse_reduce_sum_sparse(st3, 1)
        sparse_max = tf.sparse.reduce_max_sparse(st3, 1)
        got = _run(*sums, *maxes, sparse_sum, sparse_max)
    want = [6.0, [5.0, 3.0, -2.0], [[-1.0], [3.0], [4.0]], [4.0, 6.0], [[[2.0, 1.0]], [[0.0, 7.0]]],
            [1.0, 3.0, 4.0], [-1.0, 3.0, 0.0]]   # a row without entries reduces to 0, as in TF
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w)
    _assert_sparse(got[7], [[0, 0], [0, 1], [1, 1]], [2.0, 1.0, 7.0], [2, 2])
    _assert_sparse(got[8], [[0, 0], [0, 1], [1, 1]], [2.0, 1.0, 4.0], [2, 2])


def test_sparse_add_and_extremes_match_tensorflow():
    with tf.Graph().as_default():
        a = tf.SparseTensor([[0, 0], [0, 2], [1, 1]], [-1.0, -2.0, 3.0], [3, 3])
        b = tf.SparseTensor([[0, 0], [2, 2]], [1.0, 5.0], [3, 3])
        c = tf.SparseTensor([[0, 0], [2, 2]], [1.0, -5.0], [3, 3])
        dense = tf.sparse_add(np.ones((3, 3), np.float32), a)
        assert dense.get_shape().as_list() == [3, 3]
        assert tf.sparse_add(a, b).get_shape().as_list() == [3, 3]
        got = _run(tf.sparse_add(a, b), tf.sparse_add(a, b, thresh=0.5), dense,
                   tf.sparse_maximum(a, c), tf.sparse_minimum(a, c))
        with pytest.raises(ValueError, match="one dense shape, got \\(3, 3\\) and \\(3, 4\\)"):
            tf.sparse_add(a, tf.SparseTensor([[0, 0]], [1.0], [3, 4]))
        fed = tf.sparse_placeholder(tf.float32)
        bad = tf.sparse_add(a, fed)
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match="shapes do not match"):
                sess.run(bad, {fed: ([[0, 0]], [1.0], [3, 4])})
        with pytest.raises(TypeError, match="at least one SparseTensor"):
            tf.sparse_add([1.0], [2.0])
    _assert_sparse(got[0], [[0, 0], [0, 2], [1, 1], [2, 2]], [0.0, -2.0, 3.0, 5.0], [3, 3])
    _assert_sparse(got[1], [[0, 2], [1, 1], [2, 2]], [-2.0, 3.0, 5.0], [3, 3])
    np.testing.assert_array_equal(got[2], [[0.0, 1.0, -1.0], [1.0, 4.0, 1.0], [1.0, 1.0, 1.0]])
    _assert_sparse(got[3], [[0, 0], [0, 2], [1, 1], [2, 2]], [1.0, 0.0, 3.0, 0.0], [3, 3])
    _assert_sparse(got[4], [[0, 0], [0, 2], [1, 1], [2, 2]], [-1.0, -2.0, 0.0, -5.0], [3, 3])


def test_sparse_reshape_concat_slice_split_match_tensorflow():
    st34 = ([[0, 0], [0, 4], [1, 2], [1, 6]], [1, 2, 3, 4], [2, 7])
    with tf.Graph().as_default():
        a = tf.SparseTensor([[0, 0], [0, 2], [1, 1]], [-1.0, -2.0, 3.0], [3, 3])
        reshaped = tf.sparse_reshape(a, [-1, 9])
        assert reshaped.get_shape().as_list() == [1, 9]
        concat = tf.sparse_concat(1, [a, tf.SparseTensor([[0, 0], [2, 1]], [7.0, 8.0], [3, 2])])
        assert concat.get_shape().as_list() == [3, 5]
        expanded = tf.sparse_concat(0, [a, tf.SparseTensor([[0, 3]], [9.0], [1, 4])],
                                    expand_nonconcat_dim=True)
        assert expanded.get_shape().as_list() == [4, 4]
        sliced = tf.sparse_slice(tf.SparseTensor(*st34), [0, 3], [5, 10])
        parts = tf.sparse_split(sp_input=tf.SparseTensor(*st34), num_split=3, axis=1)
        got = _run(reshaped, concat, expanded, sliced, *parts)
        with pytest.raises(ValueError, match="Cannot reshape a tensor with 9 elements"):
            tf.sparse_reshape(a, [4, 2])
        with pytest.raises(ValueError, match="differ in dimension 0"):
            tf.sparse_concat(1, [a, tf.SparseTensor([[0, 0]], [7.0], [2, 2])])
        with pytest.raises(ValueError, match="Keyword arguments are required"):
            tf.sparse_split(a, 2, 1)
        new_shape = tf.placeholder(tf.int64, [None])
        bad = tf.sparse_reshape(a, new_shape)
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match="Input to reshape is a "
                               "tensor with 9 dense values, but the requested shape has 8"):
                sess.run(bad, {new_shape: [4, 2]})
    _assert_sparse(got[0], [[0, 0], [0, 2], [0, 4]], [-1.0, -2.0, 3.0], [1, 9])
    _assert_sparse(got[1], [[0, 0], [0, 2], [0, 3], [1, 1], [2, 4]], [-1.0, -2.0, 7.0, 3.0, 8.0],
                   [3, 5])
    _assert_sparse(got[2], [[0, 0], [0, 2], [1, 1], [3, 3]], [-1.0, -2.0, 3.0, 9.0], [4, 4])
    _assert_sparse(got[3], [[0, 1], [1, 3]], [2, 4], [2, 4])
    _assert_sparse(got[4], [[0, 0], [1, 2]], [1, 3], [2, 3])
    _assert_sparse(got[5], [[0, 1]], [2], [2, 2])
    _assert_sparse(got[6], [[1, 1]], [4], [2, 2])


def test_sparse_structure_ops_match_tensorflow():
    with tf.Graph().as_default():
        a = tf.SparseTensor([[0, 0], [0, 2], [1, 1]], [-1.0, -2.0, 3.0], [3, 3])
        filled, empty = tf.sparse_fill_empty_rows(a, -5.0)
        ids = tf.SparseTensor([[0, 0], [0, 1], [1, 0]], [3, 1, 0], [2, 2])
        got = _run(filled, empty, tf.sparse_softmax(a), tf.sparse_to_indicator(ids, 4),
                   tf.sparse_retain(a, [True, False, True]), tf.sparse_transpose(a),
                   tf.sparse_reorder(tf.SparseTensor([[2, 0], [0, 1]], [1.0, 2.0], [3, 3])),
                   tf.sparse.from_dense([[0.0, 2.0], [3.0, 0.0]]),
                   tf.sparse_merge(ids, tf.SparseTensor(ids.indices, [0.5, 1.5, 2.5], [2, 2]), 4))
        assert tf.sparse_transpose(tf.SparseTensor([[0, 1]], [1.0], [2, 5])).get_shape() \
            .as_list() == [5, 2]
        with pytest.raises(ValueError, match="not compatible"):
            tf.sparse_retain(a, [True, False])
        bad = tf.sparse_to_indicator(tf.SparseTensor([[0, 0]], [7], [2, 2]), 4)
        with pytest.raises(tf.errors.InvalidArgumentError, match="out of bounds"):
            _run(bad)
    _assert_sparse(got[0], [[0, 0], [0, 2], [1, 1], [2, 0]], [-1.0, -2.0, 3.0, -5.0], [3, 3])
    np.testing.assert_array_equal(got[1], [False, False, True])
    _assert_sparse(got[2], [[0, 0], [0, 2], [1, 1]], [0.7310586, 0.26894143, 1.0], [3, 3])
    np.testing.assert_array_equal(got[3], [[False, True, False, True], [True, False, False, False]])
    _assert_sparse(got[4], [[0, 0], [1, 1]], [-1.0, 3.0], [3, 3])
    _assert_sparse(got[5], [[0, 0], [1, 1], [2, 0]], [-1.0, 3.0, -2.0], [3, 3])
    _assert_sparse(got[6], [[0, 1], [2, 0]], [2.0, 1.0], [3, 3])
    _assert_sparse(got[7], [[0, 1], [1, 0]], [2.0, 3.0], [2, 2])
    _assert_sparse(got[8], [[0, 1], [0, 3], [1, 0]], [1.5, 0.5, 2.5], [2, 4])


def test_sparse_softmax_groups_by_leading_indices():
    with tf.Graph().as_default():
        got, = _run(tf.sparse_softmax(tf.SparseTensor(*ST3)))
    np.testing.assert_allclose(got.values, [1.0, 1.0, 1.0, 1.0])


def test_shape_size_and_rank_of_a_sparse_tensor_are_of_its_dense_shape():
    # As TF1 (TensorFlow 2.21's tf.compat.v1 gave the same values and dtypes).
    with tf.Graph().as_default():
        sp = tf.SparseTensor([[0, 0], [1, 2]], [1.0, 2.0], [2, 3])
        value = tf.SparseTensorValue([[0, 0], [1, 2]], [1.0, 2.0], [2, 3])
        tensors = [tf.shape(sp), tf.shape(sp, out_type=tf.int64), tf.size(sp), tf.rank(sp),
                   tf.shape(value), tf.size(value, out_type=tf.int64)]
        assert [t.dtype for t in tensors] == [tf.int32, tf.int64, tf.int32, tf.int32, tf.int32,
                                              tf.int64]
        got = tf.Session().run(tensors)
    for g, (w, dtype) in zip(got, [([2, 3], np.int32), ([2, 3], np.int64), (6, np.int32),
                                   (2, np.int32), ([2, 3], np.int32), (6, np.int64)]):
        assert np.asarray(g).dtype == dtype and np.asarray(g).tolist() == w
