"""Parity with TF 2.21's compat.v1 (values and names recorded from TF): the name scopes of sparse
and string ops, Saver's key check, assign_moving_average's names, serialize/parse_tensor."""

import numpy as np
import pytest

import zps as tf
from zps.train.moving_averages import assign_moving_average


def _new_ops(graph, build):
    before = {op.name for op in graph.get_operations()}
    out = build()
    return out, [op.name for op in graph.get_operations() if op.name not in before]


def _sp():
    return tf.SparseTensor([[0, 0], [1, 1]], [1.0, 2.0], [2, 2])


# -- 1. sparse and string ops: TF names the op inside a scope of the same name -----------------
def test_sparse_ops_are_named_inside_their_scope_as_tf():
    with tf.Graph().as_default():
        sp = _sp()
        assert tf.sparse.softmax(sp).values.name == "SparseSoftmax/SparseSoftmax:0"
        assert tf.sparse.softmax(sp, name="sm").values.name == "sm/SparseSoftmax:0"
        assert tf.sparse_tensor_dense_matmul(sp, tf.ones([2, 2])).name == \
            "SparseTensorDenseMatMul/SparseTensorDenseMatMul:0"
        assert tf.sparse_tensor_dense_matmul(sp, tf.ones([2, 2]), name="mm").name == \
            "mm/SparseTensorDenseMatMul:0"
        filled, empty = tf.sparse.fill_empty_rows(sp, 0.0)
        assert (filled.indices.name, filled.values.name, empty.name) == (
            "SparseFillEmptyRows/SparseFillEmptyRows:0", "SparseFillEmptyRows/SparseFillEmptyRows:1",
            "SparseFillEmptyRows/SparseFillEmptyRows:2")
        filled, _ = tf.sparse.fill_empty_rows(sp, 0.0, name="fe")
        assert filled.values.name == "fe/SparseFillEmptyRows:1"


def test_fill_empty_rows_default_is_a_constant_in_its_scope():
    g = tf.Graph()
    with g.as_default():
        sp = _sp()
        _, names = _new_ops(g, lambda: tf.sparse.fill_empty_rows(sp, 0.0))
    assert names == ["SparseFillEmptyRows/Const", "SparseFillEmptyRows/SparseFillEmptyRows"]


def test_sparse_reshape_names_and_constant_dense_shape_as_tf():
    g = tf.Graph()
    with g.as_default():
        sp = _sp()
        r, names = _new_ops(g, lambda: tf.sparse.reshape(sp, tf.placeholder(tf.int64, [1])))
        # TF: the output dense_shape is a constant once it is known when the graph is built
        assert names[1:] == ["SparseReshape", "SparseReshape/Const", "SparseReshape/Identity"]
        assert (r.indices.name, r.values.name, r.dense_shape.name) == (
            "SparseReshape:0", "SparseReshape/Identity:0", "SparseReshape/Const:0")
        r2 = tf.sparse.reshape(sp, [-1, 1], name="rs")
        assert (r2.indices.name, r2.values.name, r2.dense_shape.name) == (
            "rs:0", "rs/Identity:0", "rs/Const:0")
        unknown = tf.sparse.reshape(tf.sparse_placeholder(tf.float32), [4])
        assert unknown.dense_shape.name == "SparseReshape_1:1"
        with tf.Session() as sess:
            assert sess.run(r.dense_shape, {"Placeholder:0": [4]}).tolist() == [4]
            v = sess.run(r2)
        assert v.indices.tolist() == [[0, 0], [3, 0]] and v.dense_shape.tolist() == [4, 1]
        assert r2.get_shape().as_list() == [4, 1]
        with pytest.raises(ValueError, match=r"At most one dimension can be inferred \(-1\)"):
            tf.sparse.reshape(sp, [-1, -1])
        with pytest.raises(ValueError, match=r"Cannot reshape a tensor with 4 elements to shape "
                                             r"\[3, None\] \(3 elements\)"):
            tf.sparse.reshape(sp, [3, -1])


def test_sparse_retain_uses_tf_gather_names():
    with tf.Graph().as_default():
        r = tf.sparse.retain(_sp(), [True, False])
        assert (r.indices.name, r.values.name, r.dense_shape.name) == (
            "GatherV2:0", "GatherV2_1:0", "Identity:0")
        v = tf.Session().run(r)
    assert v.indices.tolist() == [[0, 0]] and v.values.tolist() == [1.0]


def test_string_split_and_reduce_join_names_as_tf():
    g = tf.Graph()
    with g.as_default():
        st, names = _new_ops(g, lambda: tf.string_split(["a b"]))
        assert names == ["StringSplit/Const", "StringSplit/Const_1", "StringSplit/StringSplit"]
        assert (st.indices.name, st.values.name, st.dense_shape.name) == (
            "StringSplit/StringSplit:0", "StringSplit/StringSplit:1", "StringSplit/StringSplit:2")
        assert tf.string_split(["a b"], name="ss").values.name == "ss/StringSplit:1"
        joined = tf.strings.reduce_join(["a", "b"])
        assert joined.name == "ReduceJoin/ReduceJoin:0"
        # TF1 opens the ReduceJoin scope always and gives ``name`` to the op inside it
        assert tf.strings.reduce_join(["a", "b"], name="rj").name == "ReduceJoin_1/rj:0"
        assert tf.reduce_join(["a", "b"]).name == "ReduceJoin_2/ReduceJoin:0"
        sess = tf.Session()
        assert sess.run(joined) == b"ab"
        assert sess.run(st.values).tolist() == [b"a", b"b"]


# -- 2. Saver keys --------------------------------------------------------------------------------
@pytest.mark.parametrize("key", [1, b"x", None, ("a",)])
def test_saver_rejects_a_key_that_is_not_a_string(key):
    with tf.Graph().as_default():
        x = tf.Variable(1.0, name="x")
        with pytest.raises(TypeError, match="names_to_saveables must be a dict mapping string "
                                            "names to trackable operations. Name is not a "
                                            "string: "):
            tf.train.Saver({key: x})
        assert tf.train.Saver({"x": x}) is not None


# -- 3. assign_moving_average names ---------------------------------------------------------------
def test_assign_moving_average_without_debias_takes_its_name_as_tf():
    g = tf.Graph()
    with g.as_default():
        v, x = tf.Variable(1.0, name="v"), tf.constant(2.0)
        op, names = _new_ops(g, lambda: assign_moving_average(v, x, 0.9, zero_debias=False))
        assert (op.name, names) == ("AssignMovingAvg:0", [
            "AssignMovingAvg/decay", "AssignMovingAvg/sub", "AssignMovingAvg/mul",
            "AssignMovingAvg"])
        op, names = _new_ops(g, lambda: assign_moving_average(v, x, 0.9, zero_debias=False,
                                                              name="x"))
        assert (op.name, names) == ("x:0", ["x/decay", "x/sub", "x/mul", "x"])
        d = tf.constant(0.9, name="d")
        op, names = _new_ops(g, lambda: assign_moving_average(v, x, d, zero_debias=False,
                                                              name="t"))
        assert (op.name, names) == ("t:0", ["t/sub/x", "t/sub", "t/sub_1", "t/mul", "t"])
        sess = tf.Session()
        sess.run(tf.global_variables_initializer())
        assert sess.run(op) == pytest.approx(1.1)


def test_assign_moving_average_with_debias_names_as_tf():
    g = tf.Graph()
    with g.as_default():
        v, x = tf.Variable(0.0, name="v"), tf.constant(2.0)
        op, names = _new_ops(g, lambda: assign_moving_average(v, x, 0.9, name="y"))
    ours = [n for n in names if not n.startswith("v/")]
    assert op.name == "y:0" and ours == [
        "y/decay", "y/sub", "y/mul", "y/AssignSub", "y/AssignAdd/value", "y/AssignAdd",
        "y/sub_1/x", "y/sub_1", "y/Pow", "y/sub_2/x", "y/sub_2", "y/truediv", "y"]
    with g.as_default():
        sess = tf.Session()
        sess.run(tf.global_variables_initializer())
        assert sess.run(op) == pytest.approx(2.0)


def test_exponential_moving_average_op_names_as_tf():
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable(1.0, name="v")
        ema = tf.train.ExponentialMovingAverage(0.9)
        op, names = _new_ops(g, lambda: ema.apply([v]))
        assert names[-7:] == [
            "ExponentialMovingAverage/decay", "ExponentialMovingAverage/AssignMovingAvg/sub/x",
            "ExponentialMovingAverage/AssignMovingAvg/sub",
            "ExponentialMovingAverage/AssignMovingAvg/sub_1",
            "ExponentialMovingAverage/AssignMovingAvg/mul",
            "ExponentialMovingAverage/AssignMovingAvg", "ExponentialMovingAverage"]
        assert op.name == "ExponentialMovingAverage"


# -- 4. serialize_tensor / parse_tensor -----------------------------------------------------------
# (value, dtype, the bytes TF 2.21's tf.io.serialize_tensor writes, as hex)
_SERIALIZED = [
    (np.array([[1.5, -2], [3, 4]], np.float32), tf.float32,
     "08011208120208021202080222100000c03f000000c00000404000008040"),
    (np.array(7, np.int64), tf.int64, "0809120022080700000000000000"),
    (np.array([True, False]), tf.bool, "080a12041202080222020100"),
    (np.array([b"ab", b"", b"xyz"], object), tf.string, "0807120412020803420261624200420378797a"),
    (np.array(b"s", object), tf.string, "08071200420173"),
    (np.zeros([0, 3], np.float32), tf.float32, "08011206120012020803"),
    (np.array([1, 2], np.float16), tf.float16, "08131204120208022204003c0040"),
    (np.array([255, 0], np.uint8), tf.uint8, "08041204120208022202ff00"),
    (np.array([[1]], np.int32), tf.int32, "080312081202080112020801220401000000"),
    (np.array([1.0], np.float64), tf.float64, "08021204120208012208000000000000f03f"),
    (np.zeros([2, 0], object), tf.string, "08071206120208021200"),
]


@pytest.mark.parametrize("value,dtype,hexed", _SERIALIZED)
def test_serialize_tensor_writes_tf_bytes_and_parse_tensor_reads_them(value, dtype, hexed):
    with tf.Graph().as_default():
        data = tf.io.serialize_tensor(tf.constant(value, dtype=dtype))
        back = tf.io.parse_tensor(data, dtype)
        from_tf = tf.parse_tensor(bytes.fromhex(hexed), dtype)
        sess = tf.Session()
        assert sess.run(data).hex() == hexed
        for got in sess.run([back, from_tf]):
            got = np.asarray(got)   # a scalar string is fetched as bytes, as TF
            assert got.shape == value.shape and got.tolist() == value.tolist()


def test_serialize_tensor_names_shapes_and_top_level_aliases():
    with tf.Graph().as_default():
        data = tf.io.serialize_tensor(tf.constant([1.0]))
        parsed = tf.io.parse_tensor(data, tf.float32)
        assert (data.name, data.get_shape().ndims) == ("SerializeTensor:0", 0)
        assert (parsed.name, parsed.get_shape().ndims) == ("ParseTensor:0", None)
        assert tf.serialize_tensor([1.0], name="st").name == "st:0"
        assert tf.parse_tensor(data, tf.float32, name="pt").name == "pt:0"


def test_parse_tensor_fills_val_fields_as_tf():
    # float_val [2.5] for 3 elements: TF repeats the last value; extra values are dropped
    short = bytes.fromhex("0801120412020803") + bytes([0x2a, 4]) + np.float32(2.5).tobytes()
    extra = bytes.fromhex("0801120412020802") + bytes([0x2a, 12]) + \
        np.array([1, 2, 3], np.float32).tobytes()
    none = bytes.fromhex("08011204120208021200")[:8]   # DT_FLOAT, shape [2], no values: zeros
    with tf.Graph().as_default():
        sess = tf.Session()
        assert sess.run(tf.io.parse_tensor(short, tf.float32)).tolist() == [2.5, 2.5, 2.5]
        assert sess.run(tf.io.parse_tensor(extra, tf.float32)).tolist() == [1.0, 2.0]
        assert sess.run(tf.io.parse_tensor(none, tf.float32)).tolist() == [0.0, 0.0]


@pytest.mark.parametrize("data,dtype,message", [
    (b"\xff\xff", tf.float32, "Could not parse `serialized` as TensorProto, base64: //8="),
    (bytes.fromhex("08011204120208012204") + np.float32(1).tobytes(), tf.int32,
     r"Type mismatch between parsed tensor \(float\) and dtype \(int32\)"),
    (bytes.fromhex("08081200"), tf.float32,
     r"Type mismatch between parsed tensor \(complex64\) and dtype \(float\)"),
    (bytes.fromhex("08011204120208012203000000"), tf.float32, "Cannot parse tensor from proto"),
    ([b"a"], tf.float32, r"Expected `serialized` to be a scalar, got shape: \[1\]"),
])
def test_parse_tensor_errors_as_tf(data, dtype, message):
    with tf.Graph().as_default():
        parsed = tf.io.parse_tensor(data, dtype)
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            tf.Session().run(parsed)


# -- 6. a second linear_model: column scopes are made unique in the caller's scope (TF1) ---------
def _linear_model_variables(build):
    g = tf.Graph()
    with g.as_default():
        price = tf.feature_column.numeric_column("price")
        build(lambda: tf.feature_column.linear_model({"price": tf.constant([[1.0]])}, [price]))
        return [v.op.name for v in g.get_collection(tf.GraphKeys.GLOBAL_VARIABLES)]


def test_second_linear_model_variable_names_as_tf():
    def twice(model):
        model()
        model()
    assert _linear_model_variables(twice) == [
        "linear_model/price/weights", "linear_model/bias_weights",
        "linear_model_1/price_1/weights", "linear_model_1/bias_weights"]

    def root_scoped_root(model):
        model()
        with tf.variable_scope("s"):
            model()
        model()
    assert _linear_model_variables(root_scoped_root) == [
        "linear_model/price/weights", "linear_model/bias_weights",
        "s/linear_model/price/weights", "s/linear_model/bias_weights",
        "linear_model_1/price_1/weights", "linear_model_1/bias_weights"]

    def auto_reuse(model):
        with tf.variable_scope("lm", reuse=tf.AUTO_REUSE):
            model()
            model()
    assert _linear_model_variables(auto_reuse) == [
        "lm/linear_model/price/weights", "lm/linear_model/bias_weights",
        "lm/linear_model_1/price_1/weights", "lm/linear_model_1/bias_weights"]

    def reused(model):
        with tf.variable_scope("s"):
            model()
        with tf.variable_scope("s", reuse=True):
            model()
    assert _linear_model_variables(reused) == ["s/linear_model/price/weights",
                                               "s/linear_model/bias_weights"]
