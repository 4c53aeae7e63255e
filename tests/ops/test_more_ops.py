"""Array, bitwise, base64, reduction and assertion ops added for TF1 programs
(zps/ops/array_ops_more.py, bitwise_ops.py, base64_ops.py, check_ops.py, deprecated_aliases.py,
zps/nest.py), against TF 2.21's numbers (tf.compat.v1, graph mode) written in below."""

import collections

import numpy as np
import pytest

import zps as tf
from zps.testing.gradient_checker import GradCase, check_gradients


@pytest.fixture(autouse=True)
def graph():
    with tf.Graph().as_default() as g:
        yield g


def run(fetch, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetch, feed_dict)


x4 = np.arange(16, dtype=np.float32).reshape(1, 2, 2, 4)
s4 = np.arange(32, dtype=np.int32).reshape(1, 4, 4, 2)

# (name, build, TF 2.21's value, dtype, static shape)
TF_CASES = [
    ("depth_to_space", lambda: tf.depth_to_space(x4, 2),
     [[[[0.0], [1.0], [4.0], [5.0]], [[2.0], [3.0], [6.0], [7.0]], [[8.0], [9.0], [12.0], [13.0]],
      [[10.0], [11.0], [14.0], [15.0]]]], "float32", [1, 4, 4, 1]),
    ("space_to_depth", lambda: tf.space_to_depth(s4, 2),
     [[[[0, 1, 2, 3, 8, 9, 10, 11], [4, 5, 6, 7, 12, 13, 14, 15]], [[16, 17, 18, 19, 24, 25, 26,
      27], [20, 21, 22, 23, 28, 29, 30, 31]]]], "int32", [1, 2, 2, 8]),
    ("space_to_batch_nd",
     lambda: tf.space_to_batch_nd(np.arange(12).reshape(1, 2, 3, 2), [2, 2], [[0, 0], [0, 1]]),
     [[[[0, 1], [4, 5]]], [[[2, 3], [0, 0]]], [[[6, 7], [10, 11]]], [[[8, 9], [0, 0]]]], "int64",
      [4, 1, 2, 2]),
    ("batch_to_space_nd",
     lambda: tf.batch_to_space_nd(np.arange(16).reshape(4, 2, 2, 1), [2, 2], [[0, 1], [1, 0]]),
     [[[[4], [1], [5]], [[12], [9], [13]], [[6], [3], [7]]]], "int64", [1, 3, 3, 1]),
    ("space_to_batch",
     lambda: tf.space_to_batch(np.arange(8.0).reshape(1, 2, 4, 1), [[0, 0], [0, 0]], 2),
     [[[[0.0], [2.0]]], [[[1.0], [3.0]]], [[[4.0], [6.0]]], [[[5.0], [7.0]]]], "float64", [4, 1, 2, 1]),
    ("batch_to_space",
     lambda: tf.batch_to_space(np.arange(8.0).reshape(4, 1, 2, 1), [[0, 0], [0, 0]], 2),
     [[[[0.0], [2.0], [1.0], [3.0]], [[4.0], [6.0], [5.0], [7.0]]]], "float64", [1, 2, 4, 1]),
    ("roll", lambda: tf.roll(np.arange(10).reshape(2, 5), [1, -2], [0, 1]),
     [[7, 8, 9, 5, 6], [2, 3, 4, 0, 1]], "int64", [2, 5]),
    ("roll_same_axis", lambda: tf.roll(np.arange(5), [2, 1], [0, 0]),
     [2, 3, 4, 0, 1], "int64", [5]),
    ("repeat", lambda: tf.repeat(np.array([[1, 2], [3, 4]]), [1, 3], axis=0),
     [[1, 2], [3, 4], [3, 4], [3, 4]], "int64", [None, 2]),
    ("repeat_flat", lambda: tf.repeat(np.array([[1, 2], [3, 4]]), 2),
     [1, 1, 2, 2, 3, 3, 4, 4], "int64", [8]),
    ("searchsorted_left",
     lambda: tf.searchsorted([[0.0, 1.0, 2.0, 2.0, 5.0], [1.0, 3.0, 4.0, 6.0, 9.0]], [[2.0, 6.0],
      [1.0, 10.0]]),
     [[2, 5], [0, 5]], "int32", [2, 2]),
    ("searchsorted_right",
     lambda: tf.searchsorted([[0.0, 1.0, 2.0, 2.0, 5.0]], [[2.0, -1.0]], side="right",
      out_type=tf.int64),
     [[4, 0]], "int64", [1, 2]),
    ("unravel_index", lambda: tf.unravel_index([2, 5, 7], [3, 3]),
     [[0, 1, 2], [2, 2, 1]], "int32", [2, 3]),
    ("unravel_scalar", lambda: tf.unravel_index(np.int64(7), np.array([2, 4], np.int64)),
     [1, 3], "int64", [2]),
    ("sparse_to_dense", lambda: tf.sparse_to_dense([[0, 1], [1, 2]], [2, 3], [5.0, 6.0], -1.0),
     [[-1.0, 5.0, -1.0], [-1.0, -1.0, 6.0]], "float32", [2, 3]),
    ("sparse_to_dense_1d", lambda: tf.sparse_to_dense([1, 3], [5], 7),
     [0, 7, 0, 7, 0], "int32", [5]),
    ("sparse_to_dense_unsorted_ok",
     lambda: tf.sparse_to_dense([3, 1], [5], [1, 2], validate_indices=False),
     [0, 2, 0, 1, 0], "int32", [5]),
    ("tensor_scatter_nd_update",
     lambda: tf.tensor_scatter_nd_update(np.arange(6.0).reshape(3, 2), [[0], [2]], [[9.0, 9.0],
      [7.0, 7.0]]),
     [[9.0, 9.0], [2.0, 3.0], [7.0, 7.0]], "float64", [3, 2]),
    ("tensor_scatter_nd_add",
     lambda: tf.tensor_scatter_nd_add([1, 2, 3, 4], [[1], [1], [3]], [10, 20, 30]),
     [1, 32, 3, 34], "int32", [4]),
    ("tensor_scatter_nd_sub", lambda: tf.tensor_scatter_nd_sub([1, 2, 3, 4], [[1], [3]], [10, 30]),
     [1, -8, 3, -26], "int32", [4]),
    ("tensor_scatter_nd_max",
     lambda: tf.tensor_scatter_nd_max([1, 5, 3, 4], [[1], [3], [0]], [2, 9, 0]),
     [1, 5, 3, 9], "int32", [4]),
    ("tensor_scatter_nd_min",
     lambda: tf.tensor_scatter_nd_min([[1, 5], [3, 4]], [[0, 1], [1, 0]], [2, 9]),
     [[1, 2], [3, 4]], "int32", [2, 2]),
    ("where_v2", lambda: tf.where_v2([[True], [False]], [1.0, 2.0, 3.0], -1.0),
     [[1.0, 2.0, 3.0], [-1.0, -1.0, -1.0]], "float32", [2, 3]),
    ("broadcast_dynamic_shape", lambda: tf.broadcast_dynamic_shape([2, 1, 3], [4, 1]),
     [2, 4, 3], "int32", [3]),
    ("segment_prod", lambda: tf.segment_prod([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], [0, 0, 2]),
     [[3.0, 8.0], [1.0, 1.0], [5.0, 6.0]], "float32", [None, 2]),
    ("unsorted_segment_prod", lambda: tf.unsorted_segment_prod([2, 3, 4, 5], [1, 1, 0, -1], 3),
     [4, 6, 1], "int32", [3]),
    ("batch_gather", lambda: tf.batch_gather(np.arange(12).reshape(2, 3, 2), [[2, 0], [1, 1]]),
     [[[4, 5], [0, 1]], [[8, 9], [8, 9]]], "int64", [2, 2, 2]),
    ("histogram_fixed_width_bins",
     lambda: tf.histogram_fixed_width_bins([-1.0, 0.0, 1.5, 2.0, 5.0, 15.0], [0.0, 5.0], nbins=5),
     [0, 0, 1, 2, 4, 4], "int32", [6]),
    ("bitcast_f2i", lambda: tf.bitcast(tf.constant([1.0, -2.0]), tf.int32),
     [1065353216, -1073741824], "int32", [2]),
    ("bitcast_i2u8", lambda: tf.bitcast(tf.constant([1, 256], tf.int32), tf.uint8),
     [[1, 0, 0, 0], [0, 1, 0, 0]], "uint8", [2, 4]),
    ("bitcast_u8_2_i16", lambda: tf.bitcast(tf.constant([[1, 2], [0, 1]], tf.uint8), tf.int16),
     [513, 256], "int16", [2]),
    ("bitwise_shift_i8",
     lambda: tf.bitwise.left_shift(np.array([1, 1, 1, -8], np.int8), np.array([7, 8, -1, 1], np.int8)),
     [-128, -128, 1, -16], "int8", [4]),
    ("bitwise_rshift_i8",
     lambda: tf.bitwise.right_shift(np.array([-128, 64, 1, -1], np.int8), np.array([7, 8, -1, 9],
      np.int8)),
     [-1, 0, 1, -1], "int8", [4]),
    ("encode_base64", lambda: tf.encode_base64([b"hello", b"", b"\xff\xfe?>", b"ab"]),
     [b'aGVsbG8', b'', b'__4_Pg', b'YWI'], "string", [4]),
    ("encode_base64_pad", lambda: tf.encode_base64([b"\xff\xfe?>", b"ab"], pad=True),
     [b'__4_Pg==', b'YWI='], "string", [2]),
    ("decode_base64", lambda: tf.decode_base64([b"aGVsbG8", b"__4_Pg", b"YWI=", b""]),
     [b'hello', b'\xff\xfe?>', b'ab', b''], "string", [4]),
    ("reduce_variance", lambda: tf.math.reduce_variance([[1.0, 2.0], [3.0, 5.0]], axis=0),
     [1.0, 2.25], "float32", [2]),
    ("reduce_std", lambda: tf.math.reduce_std([[1.0, 2.0], [3.0, 5.0]], keepdims=True),
     [[1.4790199995040894]], "float32", [1, 1]),
    ("reduce_euclidean_norm", lambda: tf.math.reduce_euclidean_norm([[3.0, 4.0], [5.0, 12.0]], 1),
     [5.0, 13.0], "float32", [2]),
    ("reduce_euclidean_norm_int", lambda: tf.math.reduce_euclidean_norm([[1, 2], [3, 4]]),
     5, "int32", []),
    ("cumulative_logsumexp",
     lambda: tf.math.cumulative_logsumexp([0.0, 1.0, 1000.0, -np.inf], exclusive=True),
     [-np.inf, 0.0, 1.3132617473602295, 1000.0], "float32", [4]),
    ("cumulative_logsumexp_rev",
     lambda: tf.math.cumulative_logsumexp(np.array([[0.0, 1.0], [2.0, 3.0]]), axis=1, reverse=True),
     [[1.3132616875182228, 1.0], [3.313261687518223, 3.0]], "float64", [2, 2]),
    ("polyval", lambda: tf.math.polyval([1.0, -2.0, 3.0], tf.constant([0.0, 1.0, 2.5])),
     [3.0, 2.0, 4.25], "float32", [3]),
    ("is_non_decreasing", lambda: tf.is_non_decreasing([[1, 1], [2, 3]]),
     True, "bool", []),
    ("is_strictly_increasing", lambda: tf.is_strictly_increasing([[1, 1], [2, 3]]),
     False, "bool", []),
    ("is_strictly_increasing_1", lambda: tf.is_strictly_increasing([4.0]),
     True, "bool", []),
    ("lbeta", lambda: tf.lbeta([[1.0, 2.0, 3.0], [0.5, 0.5, 0.5]]),
     [-4.094344615936279, 1.8378770351409912], "float32", [2]),
    ("lbeta_empty", lambda: tf.lbeta(np.zeros((2, 0), np.float32)),
     [-np.inf, -np.inf], "float32", [2]),
    ("floor_div", lambda: tf.floor_div([7, -7], [2, 2]),
     [3, -4], "int32", [2]),
]


@pytest.mark.parametrize("name, build, value, dtype, shape", TF_CASES, ids=[c[0] for c in TF_CASES])
def test_matches_tensorflow(name, build, value, dtype, shape):
    t = build()
    assert t.dtype.name == dtype
    assert (None if t.get_shape().ndims is None else t.get_shape().as_list()) == shape
    got = run(t)
    if np.asarray(got).dtype.kind == "f":
        np.testing.assert_allclose(got, value, rtol=1e-6)
    else:
        assert np.asarray(got).tolist() == value


# TF 2.21 raises InvalidArgumentError when these run; zps says what was wrong in its message.
@pytest.mark.parametrize("build, message", [
    (lambda: tf.sparse_to_dense([3, 1], [5], [1, 2]), r"indices\[1\] = \[1\] is out of order"),
    (lambda: tf.sparse_to_dense([1, 1], [5], [1, 2]), r"indices\[1\] = \[1\] is repeated"),
    (lambda: tf.tensor_scatter_nd_update([1, 2], [[5]], [1]), "does not index into shape"),
    (lambda: tf.broadcast_dynamic_shape([2, 3], [4]), "Incompatible shapes"),
    (lambda: tf.ensure_shape(tf.placeholder_with_default(np.zeros((2, 3), np.float32),
                                                         [None, None]), [None, 4]),
     "not compatible with expected shape"),
    (lambda: tf.decode_base64([b"a+b/"]), "Invalid character found in base64"),
    (lambda: tf.unravel_index([9], [2, 3]), "out of bound"),
    (lambda: tf.searchsorted([[1, 2]], [[1], [2]]), "Leading dim_size"),
])
def test_run_time_errors(build, message):
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        run(build())


@pytest.mark.parametrize("build, error, message", [
    (lambda: tf.depth_to_space(x4, 1), ValueError, "at least minimum 2"),
    (lambda: tf.depth_to_space(np.zeros((1, 2, 2, 3)), 2), ValueError, "divisible by 4"),
    (lambda: tf.space_to_depth(np.zeros((1, 3, 2, 1)), 2), ValueError, "divisible by 2"),
    (lambda: tf.space_to_batch_nd(np.zeros((1, 3, 2, 1)), [2, 2], [[0, 0], [0, 0]]), ValueError,
     "not divisible"),
    (lambda: tf.ensure_shape(tf.zeros([2, 3]), [3]), ValueError, "must be compatible"),
    (lambda: tf.searchsorted([1.0], [1.0], side="middle"), ValueError, "either 'right' or 'left'"),
    (lambda: tf.unravel_index([1.0], [2]), TypeError, "int32, int64"),
    (lambda: tf.bitwise.bitwise_and([1.0], [1.0]), TypeError, "int8, int16"),
    (lambda: tf.bitcast(tf.constant([1, 2], tf.uint8), tf.int32), ValueError, "must be 4"),
    (lambda: tf.where_v2([True, False], [1, 2, 3], 0), ValueError, "Dimensions must be equal"),
    (lambda: tf.broadcast_static_shape(tf.TensorShape([2]), tf.TensorShape([3])), ValueError,
     "Incompatible shapes for broadcasting"),
])
def test_graph_building_errors(build, error, message):
    with pytest.raises(error, match=message):
        build()


def test_bitwise_matches_tensorflow():
    a = np.array([5, -3, 12, 0], np.int32)
    b = np.array([3, 6, 10, 7], np.int32)
    bw = tf.bitwise
    assert run(bw.bitwise_and(a, b)).tolist() == [1, 4, 8, 0]
    assert run(bw.bitwise_or(a, b)).tolist() == [7, -1, 14, 7]
    assert run(bw.bitwise_xor(a, b)).tolist() == [6, -5, 6, 7]
    assert run(bw.left_shift(a, b)).tolist() == [40, -192, 12288, 0]
    assert run(bw.right_shift(a, b)).tolist() == [0, -1, 0, 0]
    assert run(bw.invert(a)).tolist() == [-6, 2, -13, -1]
    assert run(bw.invert(np.array([0, 255], np.uint8))).tolist() == [255, 0]


def test_static_shapes():
    p = tf.placeholder(tf.float32, [None, 4, 6, 8])
    assert tf.depth_to_space(p, 2).get_shape().as_list() == [None, 8, 12, 2]
    assert tf.space_to_depth(p, 2).get_shape().as_list() == [None, 2, 3, 32]
    assert tf.space_to_batch_nd(p, [2, 3], [[0, 0], [0, 0]]).get_shape().as_list() == [
        None, 2, 2, 8]
    b = tf.placeholder(tf.float32, [6, 2, 2, 1])
    assert tf.batch_to_space_nd(b, [2, 3], [[0, 1], [1, 1]]).get_shape().as_list() == [1, 3, 4, 1]
    e = tf.ensure_shape(tf.placeholder(tf.float32, [None, None]), [None, 3])
    assert e.get_shape().as_list() == [None, 3]
    assert tf.where_v2(tf.placeholder(tf.bool, [5, 1]), tf.zeros([3]), 1.0).get_shape().as_list() \
        == [5, 3]
    assert tf.broadcast_static_shape(tf.TensorShape([None, 1, 3]), tf.TensorShape([4, 1])) \
        .as_list() == [None, 4, 3]
    assert tf.bitcast(tf.zeros([2, 3]), tf.uint8).get_shape().as_list() == [2, 3, 4]


def test_identity_n_ensure_shape_and_static_values():
    a, b = tf.identity_n([tf.constant(1.0), tf.constant([2, 3])])
    assert run([a, b])[1].tolist() == [2, 3]
    x = tf.constant([1.0, 2.0])
    assert tf.is_tensor(x) and not tf.is_tensor(np.ones(2)) and not tf.is_tensor([1.0])
    assert tf.get_static_value(tf.stack([tf.shape(x)[0], 5])).tolist() == [2, 5]
    assert tf.get_static_value(x + 1) is None   # as TF's: Add is not folded
    assert tf.get_static_value(tf.placeholder(tf.float32)) is None
    assert tf.dimension_value(tf.TensorShape([None, 3])[1]) == 3
    assert tf.dimension_at_index(tf.TensorShape([None, 3]), 0).value is None
    g = tf.gradients(tf.reduce_sum(tf.ensure_shape(x, [2]) * 3.0), x)[0]
    assert run(g).tolist() == [3.0, 3.0]


def test_base64_round_trip_of_every_byte():
    data = bytes(range(256))
    enc = tf.encode_base64([data, data[:5]])
    assert run(tf.decode_base64(enc)).tolist() == [data, data[:5]]


def test_assertions():
    assert run(tf.assert_scalar(tf.constant(3))) == 3
    with pytest.raises(ValueError, match=r"Expected scalar shape for Const_1:0, saw shape: \(1,\)"):
        tf.assert_scalar(tf.constant([1]))
    with pytest.raises(ValueError, match="must have rank at least 2.  Received rank 1"):
        tf.assert_rank_at_least(tf.constant([1]), 2)
    with pytest.raises(ValueError, match=r"must have rank in \(0, 2\).  Received rank 1"):
        tf.assert_rank_in(tf.constant([1]), [0, 2])
    p = tf.placeholder(tf.float32)
    with tf.control_dependencies([tf.assert_rank_at_least(p, 2)]):
        out = tf.identity(p)
    assert run(out, {p: np.zeros((1, 1))}).shape == (1, 1)
    with pytest.raises(tf.errors.InvalidArgumentError):
        run(out, {p: np.zeros(1)})
    run(tf.assert_near(tf.constant([1.0]), tf.constant([1.0 + 1e-7])))
    with pytest.raises(tf.errors.InvalidArgumentError):
        run(tf.assert_near(tf.constant([1.0]), tf.constant([1.1])))
    assert tf.assert_same_float_dtype([tf.constant(1.0)]) == tf.float32
    assert tf.assert_same_float_dtype(None, tf.float64) == tf.float64
    with pytest.raises(ValueError, match="must be of the same type"):
        tf.assert_same_float_dtype([tf.constant(1.0), tf.constant(1.0, tf.float64)])
    with pytest.raises(ValueError, match="Expected floating point type"):
        tf.assert_same_float_dtype([tf.constant(1)])
    assert tf.assert_proper_iterable([1]) is None
    for bad in ("abc", np.array([1]), tf.constant([1])):
        with pytest.raises(TypeError, match='to be a "proper" iterable'):
            tf.assert_proper_iterable(bad)
    assert tf.debugging.assert_near is tf.assert_near


def test_deprecated_aliases():
    assert run(tf.arg_max([[1, 9], [7, 3]], 1)).tolist() == [1, 0]
    out = tf.arg_min([[1, 9], [7, 3]], dimension=1, output_type=tf.int32)
    assert out.dtype == tf.int32 and run(out).tolist() == [0, 1]
    v = tf.Variable(2.0)
    with tf.Session() as sess:
        sess.run(tf.initialize_variables([v]))
        sess.run([tf.initialize_all_tables(), tf.initialize_local_variables()])
        assert sess.run(v) == 2.0


def test_versions():
    assert tf.VERSION == "1.15.0+zps." + tf.__version__
    assert tuple(int(p) for p in tf.VERSION.split("+")[0].split(".")) == (1, 15, 0)
    assert tf.GIT_VERSION.startswith("zps-v") and tf.COMPILER_VERSION.startswith("Python ")


Point = collections.namedtuple("Point", "x y")


def test_nest():
    s = {"b": [1, Point(2, 3)], "a": (4, None)}
    assert tf.nest.flatten(s) == [4, None, 1, 2, 3]
    assert tf.nest.flatten("abc") == ["abc"]
    packed = tf.nest.pack_sequence_as(s, [10, 20, 30, 40, 50])
    assert packed == {"b": [30, Point(40, 50)], "a": (10, 20)}
    assert list(packed) == ["b", "a"]   # the structure's key order is kept
    assert tf.nest.map_structure(lambda u, v: u + v, [1, (2,)], [10, (20,)]) == [11, (22,)]
    assert tf.nest.is_nested([1]) and not tf.nest.is_nested("ab") and not tf.nest.is_nested(None)
    with pytest.raises(TypeError, match="same sequence type"):
        tf.nest.assert_same_structure([1, 2], (1, 2))
    tf.nest.assert_same_structure([1, 2], (1, 2), check_types=False)
    with pytest.raises(ValueError, match="same nested structure"):
        tf.nest.assert_same_structure([1, [2]], [1, 2])
    with pytest.raises(ValueError, match="same set of keys"):
        tf.nest.assert_same_structure({"a": 1}, {"b": 1})
    with pytest.raises(ValueError, match="Structure had 2 atoms, but flat_sequence had 3 items"):
        tf.nest.pack_sequence_as([1, 2], [1, 2, 3])



GRAD_CASES = [
    GradCase("EnsureShape", lambda x: tf.ensure_shape(x, [None, 2]), [np.ones((3, 2))]),
    GradCase("DepthToSpace", lambda x: tf.depth_to_space(x, 2), [np.random.RandomState(0).randn(1,
      2, 3, 8)]),
    GradCase("SpaceToDepth", lambda x: tf.space_to_depth(x, 2, data_format="NCHW"),
             [np.random.RandomState(1).randn(1, 2, 4, 2)]),
    GradCase("SpaceToBatchND", lambda x: tf.space_to_batch_nd(x, [2, 2], [[1, 0], [0, 1]]),
             [np.random.RandomState(2).randn(2, 3, 3, 1)]),
    GradCase("BatchToSpaceND", lambda x: tf.batch_to_space_nd(x, [2, 1], [[1, 0], [0, 1]]),
             [np.random.RandomState(3).randn(4, 2, 3)]),
    GradCase("Roll", lambda x: tf.roll(x, [1, -1], [0, 1]), [np.random.RandomState(4).randn(3, 4)]),
    GradCase("Gather", lambda x: tf.repeat(x, [2, 0, 1], axis=1),
             [np.random.RandomState(5).randn(2, 3)], name="repeat"),
    GradCase("TensorScatterUpdate", lambda x, u: tf.tensor_scatter_nd_update(x, [[1], [0]], u),
             [np.random.RandomState(6).randn(3, 2), np.random.RandomState(7).randn(2, 2)]),
    GradCase("TensorScatterAdd", lambda x, u: tf.tensor_scatter_nd_add(x, [[1], [1]], u),
             [np.random.RandomState(6).randn(3, 2), np.random.RandomState(7).randn(2, 2)]),
    GradCase("TensorScatterSub", lambda x, u: tf.tensor_scatter_nd_sub(x, [[2, 1]], u),
             [np.random.RandomState(6).randn(3, 2), np.random.RandomState(7).randn(1)]),
    GradCase("TensorScatterMax", lambda x, u: tf.tensor_scatter_nd_max(x, [[0], [2]], u),
             [np.array([1.0, 2.0, 3.0]), np.array([4.0, -1.0])]),
    GradCase("TensorScatterMin", lambda x, u: tf.tensor_scatter_nd_min(x, [[0], [2]], u),
             [np.array([1.0, 2.0, 3.0]), np.array([4.0, -1.0])]),
    GradCase("SelectV2", lambda x, y: tf.where_v2(np.array([[True], [False]]), x, y),
             [np.random.RandomState(8).randn(3), np.random.RandomState(9).randn(2, 1)]),
    GradCase("SparseToDense", lambda v, d: tf.sparse_to_dense([[0, 1], [1, 0]], [2, 3], v, d),
             [np.array([1.5, -2.0]), np.array(0.5)]),
    GradCase("SegmentProd", lambda x: tf.segment_prod(x, [0, 0, 0, 1]),
             [np.array([[2.0, 0.0], [3.0, 0.0], [0.5, 4.0], [1.5, 2.0]])]),
    GradCase("UnsortedSegmentProd", lambda x: tf.unsorted_segment_prod(x, [1, 0, 1, -1], 2),
             [np.array([2.0, 3.0, 0.0, 4.0])]),
    GradCase("CumulativeLogsumexp",
             lambda x: tf.math.cumulative_logsumexp(x, axis=1, reverse=True),
             [np.random.RandomState(10).randn(2, 4)]),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: c.name)
def test_gradients(case):
    check_gradients(case)


def test_segment_prod_gradient_matches_tensorflow():
    # TF 2.21: the gradient of sum(segment_prod(x, [0, 0, 0, 1])) at x below.
    x = tf.constant([2.0, 0.0, 3.0, 5.0])
    g = tf.gradients(tf.reduce_sum(tf.segment_prod(x, [0, 0, 0, 1])), x)[0]
    assert run(g).tolist() == [0.0, 6.0, 0.0, 1.0]


def test_tensor_scatter_max_gradient_splits_ties_as_tensorflow():
    # TF 2.21: out = [4, 2, 3]; at index 2 the input and the update tie (3) and share the gradient.
    y, u = tf.constant([1.0, 2.0, 3.0]), tf.constant([4.0, 3.0])
    out = tf.tensor_scatter_nd_max(y, [[0], [2]], u)
    gy, gu = tf.gradients(tf.reduce_sum(out * [1.0, 2.0, 3.0]), [y, u])
    assert run(gy).tolist() == [0.0, 2.0, 1.5] and run(gu).tolist() == [1.0, 1.5]
