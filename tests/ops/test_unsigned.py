"""tf.uint16, tf.uint32 and tf.uint64 end to end, against TF 2.21's numbers: the dtypes, the ops
TF's kernels allow on them (and the TypeError where they refuse), bitwise ops, reductions, casts,
bitcast, serialize_tensor/parse_tensor, checkpoints (zps's and one TF wrote) and the wire.
"""

import glob
import json
import pathlib
import pickle
import struct

import numpy as np
import pytest

import zps as tf
from zps.testing.cluster import LocalCluster

UNSIGNED = [("uint16", 17, 2), ("uint32", 22, 4), ("uint64", 23, 8)]
TF_CHECKPOINT = (pathlib.Path(__file__).resolve().parent.parent / "fixtures"
                 / "tf_unsigned_checkpoint" / "model.ckpt")


def _run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


@pytest.mark.parametrize("name, enum, size", UNSIGNED)
def test_dtype_properties_match_tensorflow(name, enum, size):
    dtype = getattr(tf, name)
    np_type = getattr(np, name)
    assert dtype.as_datatype_enum == enum and tf.as_dtype(enum) is dtype
    assert tf.as_dtype(name) is dtype and tf.as_dtype(np_type) is dtype
    assert tf.as_dtype(np.dtype(name)) is dtype and tf.dtypes.as_dtype(name) is dtype
    assert getattr(tf.dtypes, name) is dtype and dtype.as_numpy_dtype is np_type
    assert dtype.is_integer and dtype.is_unsigned and not dtype.is_floating
    assert dtype.size == size and dtype.min == 0 and dtype.max == 2 ** (8 * size) - 1
    assert repr(dtype) == "tf.%s" % name and str(dtype) == "<dtype: '%s'>" % name
    assert pickle.loads(pickle.dumps(dtype)) is dtype and dtype == name and dtype != tf.int64
    assert not tf.int32.is_unsigned and tf.uint8.is_unsigned


def test_constants_and_conversion():
    with tf.Graph().as_default():
        assert tf.constant(2 ** 63).dtype == tf.uint64   # too large for int64, as TF
        assert tf.constant(2 ** 64 - 1).dtype == tf.uint64
        c = tf.constant([1, 65535], tf.uint16)
        t = tf.convert_to_tensor(np.array([2 ** 32 - 1], np.uint32))
        assert t.dtype == tf.uint32 and c.dtype == tf.uint16
        assert _run([c, t])[1].tolist() == [4294967295]
        with pytest.raises(TypeError, match="Expected uint16"):
            tf.constant(1.5, tf.uint16)
        with pytest.raises(TypeError, match="Cannot make a uint32 constant from -1"):
            tf.constant(-1, tf.uint32)   # zps refuses what does not fit (TF 2.21 wraps)


BINARY = [   # (op, x, y, TF 2.21's result; x, y are [3, 5, 7] and [2, 3, 1] unless given)
    (tf.add, None, None, [5, 8, 8]),
    (tf.subtract, None, None, [1, 2, 6]),
    (tf.multiply, None, None, [6, 15, 7]),
    (tf.div, None, None, [1, 1, 7]),
    (tf.floordiv, None, None, [1, 1, 7]),
    (tf.truncatediv, None, None, [1, 1, 7]),
    (tf.mod, None, None, [1, 2, 0]),
    (tf.maximum, None, None, [3, 5, 7]),
    (tf.minimum, None, None, [2, 3, 1]),
    (tf.bitwise.bitwise_and, None, None, [2, 1, 1]),
    (tf.bitwise.bitwise_or, None, None, [3, 7, 7]),
    (tf.bitwise.bitwise_xor, None, None, [1, 6, 6]),
    (tf.bitwise.left_shift, None, None, [12, 40, 14]),
    (tf.bitwise.right_shift, None, None, [0, 0, 3]),
]


@pytest.mark.parametrize("name", ["uint16", "uint32", "uint64"])
@pytest.mark.parametrize("op, x, y, expected", BINARY, ids=[b[0].__name__ for b in BINARY])
def test_binary_ops_tensorflow_allows(name, op, x, y, expected):
    dtype = getattr(tf, name)
    with tf.Graph().as_default():
        out = op(tf.constant(x or [3, 5, 7], dtype), tf.constant(y or [2, 3, 1], dtype))
        assert out.dtype == dtype
        assert _run(out).tolist() == expected


@pytest.mark.parametrize("name, float_type, quotient", [
    ("uint16", "float32", [1.5, 1.6666666269302368, 7.0]),
    ("uint32", "float64", [1.5, 1.6666666666666667, 7.0]),
    ("uint64", "float64", [1.5, 1.6666666666666667, 7.0])])
def test_truediv_casts_as_tensorflow(name, float_type, quotient):
    dtype = getattr(tf, name)
    with tf.Graph().as_default():
        out = tf.constant([3, 5, 7], dtype) / tf.constant([2, 3, 1], dtype)
        assert out.dtype == getattr(tf, float_type)
        assert _run(out).tolist() == quotient


def test_arithmetic_wraps_as_cpp():
    with tf.Graph().as_default():
        x = tf.constant([3, 5], tf.uint32)
        got = _run({"sub": x - tf.constant([5, 3], tf.uint32), "rsub": 2 - x, "mul": x * 2,
                    "square": tf.square(tf.constant([65535], tf.uint16)),
                    "sum16": tf.reduce_sum(tf.constant([65535, 2], tf.uint16)),
                    "cmp": tf.less(x, tf.constant([4, 4], tf.uint32))})
    assert got["sub"].tolist() == [4294967294, 2] and got["rsub"].tolist() == [4294967295,
                                                                             4294967293]
    assert got["mul"].tolist() == [6, 10] and got["sum16"] == 1 and got["square"].tolist() == [1]
    assert got["cmp"].tolist() == [True, False]


REFUSED = [   # TF's op defs list no unsigned type for these
    ("Neg", lambda x: -x, "float16, float32, float64, int8, int16, int32, int64, complex64"),
    ("Abs", tf.abs, "float16, float32, float64, int8, int16, int32, int64 "),
    ("Sign", tf.sign, "int64, complex64, complex128"),
    ("Reciprocal", tf.reciprocal, "int64, complex64, complex128"),
    ("Pow", lambda x: tf.pow(x, x), "int8, int16, int32, int64, complex64"),
    ("SquaredDifference", lambda x: tf.squared_difference(x, x),
     "float16, float32, float64, int32, int64, complex64"),
    ("TruncateMod", lambda x: tf.truncatemod(x, x), "int32, int64, float16, float32, float64 "),
]


@pytest.mark.parametrize("name", ["uint8", "uint16", "uint32", "uint64"])
@pytest.mark.parametrize("op_type, op, allowed", REFUSED, ids=[r[0] for r in REFUSED])
def test_ops_tensorflow_refuses_on_unsigned_types_are_type_errors(name, op_type, op, allowed):
    with tf.Graph().as_default():
        with pytest.raises(TypeError, match=r"of %s has DataType %s not in list of allowed "
                           r"values: .*%s" % (op_type, name, allowed)):
            op(tf.constant([1, 2], getattr(tf, name)))


@pytest.mark.parametrize("name", ["int8", "int16"])
def test_narrow_signed_types_tensorflow_refuses(name):
    with tf.Graph().as_default():
        x = tf.constant([1, 2], getattr(tf, name))
        for op, op_type in ((tf.squared_difference, "SquaredDifference"),
                            (tf.truncatemod, "TruncateMod")):
            with pytest.raises(TypeError, match="%s has DataType %s not in" % (op_type, name)):
                op(x, x)
        assert _run(tf.negative(x) + tf.abs(x) * tf.pow(x, x)).tolist() == [0, 6]


def test_bitwise_ops_and_shift_clamping():
    with tf.Graph().as_default():
        got = _run({
            "invert16": tf.bitwise.invert(tf.constant([3, 0], tf.uint16)),
            "invert32": tf.bitwise.invert(tf.constant([3], tf.uint32)),
            "invert64": tf.bitwise.invert(tf.constant([3], tf.uint64)),
            "shl32": tf.bitwise.left_shift(tf.constant([1, 1, 1], tf.uint32),
                                           tf.constant([31, 32, 100], tf.uint32)),
            "shr32": tf.bitwise.right_shift(tf.constant([2 ** 32 - 1] * 2, tf.uint32),
                                            tf.constant([31, 40], tf.uint32)),
            "shl64": tf.bitwise.left_shift(tf.constant([1, 1], tf.uint64),
                                           tf.constant([63, 64], tf.uint64))})
    assert got["invert16"].tolist() == [65532, 65535]
    assert got["invert32"].tolist() == [4294967292]
    assert got["invert64"].tolist() == [18446744073709551612]
    assert got["shl32"].tolist() == [2147483648] * 3   # shifts clamp to bits - 1, as TF
    assert got["shr32"].tolist() == [1, 1]
    assert got["shl64"].tolist() == [2 ** 63, 2 ** 63]
    with tf.Graph().as_default(), pytest.raises(TypeError, match="uint16, uint32, uint64"):
        tf.bitwise.invert(tf.constant([1.0]))


@pytest.mark.parametrize("name", ["uint16", "uint32", "uint64"])
def test_reductions_and_friends(name):
    dtype = getattr(tf, name)
    with tf.Graph().as_default():
        x = tf.constant([3, 5, 7], dtype)
        got = _run({"sum": tf.reduce_sum(x), "prod": tf.reduce_prod(x), "max": tf.reduce_max(x),
                    "min": tf.reduce_min(x), "mean": tf.reduce_mean(x), "cumsum": tf.cumsum(x),
                    "cumprod": tf.cumprod(x), "argmax": tf.argmax(x), "argmin": tf.argmin(x),
                    "sort": tf.sort(tf.constant([7, 3, 5], dtype), direction="DESCENDING"),
                    "segment": tf.unsorted_segment_sum(x, [0, 0, 1], 2),
                    "count": tf.count_nonzero(x), "clip": tf.clip_by_value(x, 4, 6)})
    assert [got[k].tolist() for k in ("sum", "prod", "max", "min", "mean")] == [15, 105, 7, 3, 5]
    assert got["cumsum"].tolist() == [3, 8, 15] and got["cumprod"].tolist() == [3, 15, 105]
    assert got["argmax"] == 2 and got["argmin"] == 0 and got["count"] == 3
    assert got["sort"].tolist() == [7, 5, 3] and got["segment"].tolist() == [8, 7]
    assert got["clip"].tolist() == [4, 5, 6]
    assert got["sum"].dtype == np.dtype(name) and got["mean"].dtype == np.dtype(name)


@pytest.mark.parametrize("values, name, mean", [   # TF 2.21: summed in 64 bits, divided toward 0
    ([2 ** 64 - 1, 2 ** 64 - 1], "uint64", 2 ** 63 - 1),
    ([4294967295, 4294967295, 1], "uint32", 2863311530),
    ([65535, 65535, 2], "uint16", 43690),
    ([255, 255, 1], "uint8", 170),
    ([2 ** 63 - 1, 2 ** 63 - 1], "int64", -1),
    ([2 ** 62 + 1, 2 ** 62 + 3], "int64", -4611686018427387902),
    ([-7, 2], "int32", -2),
    ([-7, 2, 0], "int8", -1)])
def test_integer_means_match_tensorflow(values, name, mean):
    with tf.Graph().as_default():
        got = _run(tf.reduce_mean(tf.constant(np.array(values, name))))
    assert got.dtype == np.dtype(name) and got == mean


def test_reduce_mean_over_an_axis_keeps_the_type():
    with tf.Graph().as_default():
        got = _run(tf.reduce_mean(tf.constant([[1, 2], [4, 8]], tf.uint16), axis=0,
                                  keepdims=True))
    assert got.dtype == np.uint16 and got.tolist() == [[2, 5]]


def test_casts_match_tensorflow():
    with tf.Graph().as_default():
        got = _run({
            "f2u16": tf.cast(tf.constant([-1.5, 3.7, 70000.0]), tf.uint16),
            "i2u16": tf.cast(tf.constant([-1, 70000], tf.int32), tf.uint16),
            "u64f": tf.cast(tf.constant([2 ** 64 - 1], tf.uint64), tf.float32),
            "u64i": tf.cast(tf.constant([2 ** 64 - 1], tf.uint64), tf.int64),
            "sat16": tf.saturate_cast(tf.constant([-5.0, 1e10, 7.0]), tf.uint16),
            "sat32": tf.saturate_cast(tf.constant([-5, 2 ** 40], tf.int64), tf.uint32)})
    assert got["f2u16"].tolist() == [65535, 3, 4464]
    assert got["i2u16"].tolist() == [65535, 4464]
    assert got["u64f"].tolist() == [np.float32(1.8446744e19)] and got["u64i"].tolist() == [-1]
    assert got["sat16"].tolist() == [0, 65535, 7] and got["sat32"].tolist() == [0, 4294967295]


def test_bitcast_matches_tensorflow():
    with tf.Graph().as_default():
        got = _run({"f2u32": tf.bitcast(tf.constant([1.0]), tf.uint32),
                    "u16_u32": tf.bitcast(tf.constant([[1, 2]], tf.uint16), tf.uint32),
                    "u64_u16": tf.bitcast(tf.constant([2 ** 64 - 1], tf.uint64), tf.uint16),
                    "u64_i64": tf.bitcast(tf.constant([2 ** 64 - 1], tf.uint64), tf.int64)})
    assert got["f2u32"].tolist() == [1065353216] and got["u16_u32"].tolist() == [131073]
    assert got["u64_u16"].tolist() == [[65535] * 4] and got["u64_i64"].tolist() == [-1]


# serialize_tensor's bytes from TF 2.21 (raw tensor_content), and TensorProtos TF wrote with the
# *_val field of each type (int_val for uint16), that TF's parse_tensor reads as [a, b, b].
SERIALIZED = [("uint16", [[1, 65535]], "08111208120208011202080222040100ffff"),
              ("uint32", [7, 4294967295], "0816120412020802220807000000ffffffff"),
              ("uint64", [2 ** 64 - 1, 3], "08171204120208022210ffffffffffffffff0300000000000000")]
VAL_PROTOS = [("uint16", "08111204120208033a04ffff0302", [65535, 2, 2]),
              ("uint32", "0816120412020803820106ffffffff0f09", [4294967295, 9, 9]),
              ("uint64", "08171204120208038a010bffffffffffffffffff0105", [2 ** 64 - 1, 5, 5])]


@pytest.mark.parametrize("name, values, hex_bytes", SERIALIZED)
def test_serialize_tensor_writes_tensorflows_bytes(name, values, hex_bytes):
    with tf.Graph().as_default():
        data = tf.io.serialize_tensor(tf.constant(np.array(values, name)))
        back = tf.io.parse_tensor(data, getattr(tf, name))
        data, back = _run([data, back])
    assert data.hex() == hex_bytes and back.dtype == np.dtype(name) and back.tolist() == values


@pytest.mark.parametrize("name, hex_bytes, values", VAL_PROTOS)
def test_parse_tensor_reads_each_types_val_field(name, hex_bytes, values):
    with tf.Graph().as_default():
        got = _run(tf.io.parse_tensor(bytes.fromhex(hex_bytes), getattr(tf, name)))
        assert got.dtype == np.dtype(name) and got.tolist() == values
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"\(%s\) and dtype \(int32\)"
                           % name):
            _run(tf.io.parse_tensor(bytes.fromhex(hex_bytes), tf.int32))


def test_zps_checkpoints_store_unsigned_types_as_safetensors_u16_u32_u64(tmp_path):
    values = {"u16": np.array([0, 65535], np.uint16), "u32": np.array([[2 ** 32 - 1]], np.uint32),
              "u64": np.array([2 ** 64 - 1, 2 ** 63], np.uint64)}
    with tf.Graph().as_default():
        variables = [tf.Variable(v, name=k) for k, v in values.items()]
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            prefix = saver.save(sess, str(tmp_path / "model"))
            sess.run([v.assign(tf.zeros_like(v)) for v in variables])
            saver.restore(sess, prefix)
            restored = sess.run({v.op.name: v for v in variables})
    for k, v in values.items():
        assert restored[k].dtype == v.dtype and restored[k].tolist() == v.tolist()
    shard, = glob.glob(str(tmp_path / "model.data-*.safetensors"))
    raw = pathlib.Path(shard).read_bytes()
    header = json.loads(raw[8:8 + struct.unpack("<Q", raw[:8])[0]])
    assert {k: header[k]["dtype"] for k in values} == {"u16": "U16", "u32": "U32", "u64": "U64"}
    reader = tf.train.NewCheckpointReader(prefix)
    assert reader.get_variable_to_dtype_map() == {"u16": tf.uint16, "u32": tf.uint32,
                                                   "u64": tf.uint64}


def test_a_checkpoint_tensorflow_wrote_reads_back():
    # Written by TF 2.21's SaveV2 (tests/fixtures/tf_unsigned_checkpoint/make.py).
    reader = tf.train.NewCheckpointReader(str(TF_CHECKPOINT))
    assert reader.get_variable_to_dtype_map() == {"u16": tf.uint16, "u32": tf.uint32,
                                                   "u64": tf.uint64}
    got = {k: reader.get_tensor(k) for k in ("u16", "u32", "u64")}
    assert got["u16"].dtype == np.uint16 and got["u16"].tolist() == [0, 1, 65535]
    assert got["u32"].dtype == np.uint32 and got["u32"].tolist() == [[7, 4294967295]]
    assert got["u64"].dtype == np.uint64 and got["u64"].tolist() == [2 ** 64 - 1, 2 ** 63, 5]


@pytest.mark.timeout(120)
def test_unsigned_variables_on_a_ps_process_read_and_assigned_from_a_worker():
    with LocalCluster({"ps": 1, "worker": 1}, in_process=[("worker", 0)]) as cluster:
        server = tf.train.Server(cluster.spec, job_name="worker", task_index=0)
        try:
            with tf.Graph().as_default():
                with tf.device("/job:ps/task:0"):
                    v = tf.Variable(np.array([1, 2 ** 32 - 1], np.uint32), name="v")
                    w = tf.Variable(np.array([2 ** 64 - 1], np.uint64), name="w")
                    h = tf.get_variable("h", [2], tf.uint16, initializer=tf.zeros_initializer())
                with tf.device("/job:worker/task:0"):
                    new = tf.constant(np.array([7, 4000000000], np.uint32))
                assign, add = v.assign(new), v.assign_add(tf.constant([1, 1], tf.uint32))
                with tf.Session(server.target) as sess:
                    sess.run(tf.global_variables_initializer())
                    first = sess.run([v, w, h])
                    assigned, added = sess.run(assign), sess.run(add)
                    w_new = sess.run(w.assign(tf.constant([2 ** 63 + 5], tf.uint64)))
                    h_new = sess.run(h.assign([65535, 1]))
                    last = sess.run(v)
        finally:
            server.stop()
    assert [a.dtype for a in first] == [np.uint32, np.uint64, np.uint16]
    assert first[0].tolist() == [1, 4294967295] and first[1].tolist() == [2 ** 64 - 1]
    assert assigned.tolist() == [7, 4000000000] and added.tolist() == [8, 4000000001]
    assert last.tolist() == [8, 4000000001] and last.dtype == np.uint32
    assert w_new.tolist() == [2 ** 63 + 5] and h_new.tolist() == [65535, 1]


def test_unsigned_and_complex_types_in_the_type_driven_helpers():
    # TF 2.21: is_numeric_tensor is True for them, decode_raw takes uint16 and complex64, and
    # the monotonicity checks compare unsigned elements (a difference would wrap around).
    with tf.Graph().as_default(), tf.Session() as sess:
        for dtype in (tf.uint16, tf.uint32, tf.uint64, tf.complex64, tf.complex128):
            assert tf.is_numeric_tensor(tf.constant([1], dtype))
        raw = tf.constant(b"\x01\x02\x03\x04\x01\x02\x03\x04")
        np.testing.assert_array_equal(sess.run(tf.decode_raw(raw, tf.uint16)),
                                      [513, 1027, 513, 1027])
        np.testing.assert_array_equal(sess.run(tf.decode_raw(raw, tf.complex64)),
                                      np.frombuffer(b"\x01\x02\x03\x04" * 2, "<c8"))
        assert sess.run(tf.is_non_decreasing(tf.constant([2, 1], tf.uint32))) is np.False_
        assert sess.run(tf.is_strictly_increasing(tf.constant([1, 2], tf.uint64))) is np.True_
