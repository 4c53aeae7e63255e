"""String ops against TensorFlow 2.21 (``tf.compat.v1``): the expected values and error messages
were produced there and are written in here (TF is not needed to run these tests)."""

import numpy as np
import pytest

import zps as tf


def run(fetch, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetch, feed_dict)


def run_error(fetch):
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        run(fetch)
    return info.value.message


@pytest.fixture(autouse=True)
def graph():
    with tf.Graph().as_default() as g:
        yield g


# -- string_split --------------------------------------------------------------------------------
@pytest.mark.parametrize("args, indices, values, shape", [
    ((["hello world", "a  b c", ""],), [[0, 0], [0, 1], [1, 0], [1, 1], [1, 2]],
     [b"hello", b"world", b"a", b"b", b"c"], [3, 3]),
    ((["hello world", "a  b c", ""], " ", False),
     [[0, 0], [0, 1], [1, 0], [1, 1], [1, 2], [1, 3]],
     [b"hello", b"world", b"a", b"", b"b", b"c"], [3, 4]),
    ((["a,b;c", "d"], ",;"), [[0, 0], [0, 1], [0, 2], [1, 0]], [b"a", b"b", b"c", b"d"], [2, 3]),
    ((["abc", "de"], ""), [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1]],
     [b"a", b"b", b"c", b"d", b"e"], [2, 3]),
])
def test_string_split_matches_tf(args, indices, values, shape):
    st = tf.string_split(*args)
    assert isinstance(st, tf.SparseTensor)
    out = run(st)
    assert out.indices.tolist() == indices
    assert out.values.tolist() == values
    assert out.dense_shape.tolist() == shape
    assert out.indices.dtype == np.int64 and out.values.dtype == object


def test_string_split_argument_names():
    assert run(tf.string_split(["a,b"], delimiter=",").values).tolist() == [b"a", b"b"]
    assert run(tf.string_split(["a,b"], sep=",").values).tolist() == [b"a", b"b"]
    with pytest.raises(ValueError, match="not both"):
        tf.string_split(["a"], sep=",", delimiter=",")
    with pytest.raises(ValueError, match="SparseTensor"):
        tf.string_split(["a"], result_type="RaggedTensor")
    assert run(tf.reduce_join([["a", "b"]], 1, keepdims=True)).tolist() == [[b"ab"]]


def test_string_split_fed_and_empty():
    src = tf.placeholder(tf.string, [None])
    out = run(tf.string_split(src), {src: []})
    assert out.indices.shape == (0, 2) and out.dense_shape.tolist() == [0, 0]


def test_string_split_needs_a_vector():
    with pytest.raises(ValueError):
        tf.string_split([["a b"]])


# -- string_to_number ----------------------------------------------------------------------------
def test_string_to_number_matches_tf():
    np.testing.assert_array_equal(run(tf.string_to_number(["1.5", "-2", "1e3", " 3"])),
                                  np.array([1.5, -2.0, 1000.0, 3.0], np.float32))
    ints = run(tf.string_to_number(["12", "-7"], out_type=tf.int32))
    assert ints.dtype == np.int32 and ints.tolist() == [12, -7]
    special = run(tf.string_to_number(["inf", "nan", "-Inf"]))
    assert np.isposinf(special[0]) and np.isnan(special[1]) and np.isneginf(special[2])


@pytest.mark.parametrize("strings, out_type, bad", [
    (["1.5", "abc"], tf.float32, "abc"), (["1.5"], tf.int32, "1.5"),
    (["99999999999"], tf.int32, "99999999999"), (["1_0"], tf.float64, "1_0"),
])
def test_string_to_number_names_the_bad_string(strings, out_type, bad):
    msg = run_error(tf.string_to_number(strings, out_type=out_type))
    assert "StringToNumberOp could not correctly convert string: %s" % bad in msg


def test_string_to_number_rejects_other_types():
    with pytest.raises(TypeError, match="out_type"):
        tf.string_to_number(["1"], out_type=tf.string)


# -- as_string -----------------------------------------------------------------------------------
@pytest.mark.parametrize("value, kwargs, expected", [
    ([1.5, 2.0, -3.25], {}, [b"1.500000", b"2.000000", b"-3.250000"]),
    ([1, -22], {}, [b"1", b"-22"]),
    ([1.5, 2.0], {"precision": 2}, [b"1.50", b"2.00"]),
    ([1.5e10, 2.0], {"scientific": True}, [b"1.500000e+10", b"2.000000e+00"]),
    ([1.5e10, 2.0], {"shortest": True}, [b"1.5e+10", b"2"]),
    ([3, 42], {"width": 5, "fill": "0"}, [b"00003", b"00042"]),
    ([3, 42], {"width": 4}, [b"   3", b"  42"]),
    ([True, False], {}, [b"true", b"false"]),
    (np.array([1.5], np.float64), {}, [b"1.500000"]),
    (np.array([7], np.int64), {"width": 3, "fill": "-"}, [b"7  "]),
    (np.array([-7.5], np.float32), {"width": 8, "fill": "+", "precision": 1}, [b"    -7.5"]),
])
def test_as_string_matches_tf(value, kwargs, expected):
    assert run(tf.as_string(value, **kwargs)).tolist() == expected


def test_as_string_bad_options():
    with pytest.raises(ValueError, match="both scientific and shortest"):
        tf.as_string([1.0], scientific=True, shortest=True)
    with pytest.raises(ValueError, match="only to floats"):
        tf.as_string([1], precision=2)
    with pytest.raises(ValueError, match="one or fewer"):
        tf.as_string([1], fill="00")


# -- substr --------------------------------------------------------------------------------------
def test_substr_matches_tf():
    assert run(tf.substr(["hello", "world"], 1, 3)).tolist() == [b"ell", b"orl"]
    assert run(tf.substr(["hello", "world"], [0, 2], [2, 10])).tolist() == [b"he", b"rld"]
    assert run(tf.substr(["hello"], -3, 2)).tolist() == [b"ll"]
    assert "pos 6 out of range for string b'hello' at index 0" in run_error(
        tf.substr(["hello"], 6, 2))


# -- reduce_join / string_join -------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, expected", [
    ({}, b"abcd"),
    ({"axis": 0}, [b"ac", b"bd"]),
    ({"axis": 1, "separator": "-"}, [b"a-b", b"c-d"]),
    ({"axis": [1, 0], "separator": "-"}, b"a-b-c-d"),
    ({"axis": [0, 1], "separator": "-"}, b"a-c-b-d"),
    ({"axis": -1, "keep_dims": True}, [[b"ab"], [b"cd"]]),
])
def test_reduce_join_matches_tf(kwargs, expected):
    t = tf.reduce_join([["a", "b"], ["c", "d"]], **kwargs)
    out = run(t)
    assert (out.tolist() if isinstance(out, np.ndarray) and out.ndim else out) == expected
    assert t.get_shape().as_list() == list(np.shape(expected))


def test_reduce_join_of_empty_and_scalar_inputs():
    x = tf.placeholder(tf.string, [None, 2])
    out = run([tf.reduce_join(x, 0), tf.reduce_join(x, 1), tf.reduce_join(x)],
              {x: np.zeros((0, 2), object)})
    assert [np.asarray(o).tolist() for o in out] == [[b"", b""], [], b""]
    assert run(tf.reduce_join("a")) == b"a"


def test_reduce_join_bad_axis():
    with pytest.raises(ValueError, match="duplicate"):
        tf.reduce_join([["a"]], axis=[0, -2])
    with pytest.raises(ValueError, match="Invalid axis 2"):
        tf.reduce_join([["a"]], axis=2)


def test_string_join_matches_tf():
    assert run(tf.string_join(["a", ["b", "c"]], separator="+")).tolist() == [b"a+b", b"a+c"]
    assert run(tf.string_join([["x", "y"], ["b", "c"]])).tolist() == [b"xb", b"yc"]
    with pytest.raises(ValueError, match="same shape"):
        tf.string_join([["x", "y"], ["b", "c", "d"]])


def test_string_join_fed_shapes_must_match():
    a = tf.placeholder(tf.string, [None])
    msg = run_error_feed(tf.string_join([a, ["b", "c"]]), {a: ["x", "y", "z"]})
    assert "Input shapes do not match" in msg


def run_error_feed(fetch, feed):
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        run(fetch, feed)
    return info.value.message


# -- decode_csv ----------------------------------------------------------------------------------
def test_decode_csv_matches_tf():
    a, b, c = run(tf.decode_csv(["1,2.5,abc", "3,,x"], [[0], [1.0], [""]]))
    assert a.dtype == np.int32 and a.tolist() == [1, 3]
    assert b.dtype == np.float32 and b.tolist() == [2.5, 1.0]
    assert c.tolist() == [b"abc", b"x"]


@pytest.mark.parametrize("records, defaults, kwargs, expected", [
    (['"a,b",2', '"he said ""hi""",3'], [[""], [0]], {}, [[b"a,b", b'he said "hi"'], [2, 3]]),
    (["1|2"], [[0], [0]], {"field_delim": "|"}, [[1], [2]]),
    (["1,NA,3"], [[0], [7], [np.int64(0)]], {"na_value": "NA"}, [[1], [7], [3]]),
    (["1,2,3,4"], [[0], [0.0]], {"select_cols": [1, 3]}, [[2], [4.0]]),
    ([["1,2"], ["3,4"]], [[0], [0]], {}, [[[1], [3]], [[2], [4]]]),
    (" 1 , 2.5", [[0], [0.0]], {}, [1, 2.5]),
])
def test_decode_csv_options_match_tf(records, defaults, kwargs, expected):
    out = run(tf.decode_csv(records, defaults, **kwargs))
    assert [np.asarray(o).tolist() for o in out] == expected


def test_decode_csv_types():
    outs = tf.decode_csv(["1,2,3,4,x"], [[0], np.zeros(1, np.int64), [0.0], np.zeros(1), [""]])
    assert [o.dtype for o in outs] == [tf.int32, tf.int64, tf.float32, tf.float64, tf.string]
    assert [o.get_shape().as_list() for o in outs] == [[1]] * 5


@pytest.mark.parametrize("records, defaults, kwargs, message", [
    (["1,2.5,abc"], [[0], [1.0]], {}, "Expect 2 fields but have 3 in record 0"),
    (["1,2.5"], [[0], [1.0], ["z"]], {}, "Expect 3 fields but have 2 in record 0"),
    (["x,2.5"], [[0], [1.0]], {}, "Field 0 in record 0 is not a valid int32: x"),
    (["1,y"], [[0], [1.0]], {}, "Field 1 in record 0 is not a valid float: y"),
    (["1,"], [[0], []], {}, "Field 1 is required but missing in record 0!"),
    (['"a,b",2'], [[""], [0]], {"use_quote_delim": False}, "Expect 2 fields but have 3 in record 0"),
    (['"ab"c,2'], [[""], [0]], {}, "Quote inside a string has to be escaped by another quote"),
    (["99999999999,2"], [[0], [0]], {}, "Field 0 in record 0 is not a valid int32: 99999999999"),
    (["1.5,2"], [[0], [0]], {}, "Field 0 in record 0 is not a valid int32: 1.5"),
    (["1,2"], [[0], [0]], {"field_delim": "ab"}, "field_delim should be only 1 char"),
    (["", "a"], [[""]], {}, "Expect 1 fields but have 0 in record 0"),
    (["1,2", ""], [[0], [1]], {}, "Expect 2 fields but have 0 in record 1"),
    (['"abc'], [[""]], {}, "Quoted field has to end with quote followed by delim or end"),
    (["1e2,0x10"], [[0.0], [0]], {}, "Field 1 in record 0 is not a valid int32: 0x10"),
])
def test_decode_csv_errors_match_tf(records, defaults, kwargs, message):
    assert message in run_error(tf.decode_csv(records, defaults, **kwargs))


def test_decode_csv_build_errors():
    with pytest.raises(ValueError, match="select_cols is not strictly increasing"):
        tf.decode_csv(["1,2"], [[0], [0]], select_cols=[1, 0])
    with pytest.raises(ValueError, match="at most one element"):
        tf.decode_csv(["1,2"], [[0, 1], [0]])
    with pytest.raises(TypeError, match="record_defaults\\[0\\]"):
        tf.decode_csv(["1"], [[True]])


def test_string_ops_are_host_only_and_not_differentiable():
    from zps.framework.registry import REGISTRY
    from zps.ops.cupy_kernels import CPU_ONLY
    for op_type in ("StringSplit", "StringToNumber", "AsString", "Substr", "ReduceJoin",
                    "StringJoin", "DecodeCSV"):
        assert op_type in CPU_ONLY
        assert REGISTRY[op_type].grad_fn is None
