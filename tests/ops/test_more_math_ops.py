"""truncatediv/mod, sort/argsort, invert_permutation, accumulate_n, setdiff1d's named tuple,
argmax/argmin with NaN, bool arithmetic, and the names of the constants operators make: the
expected values, names and messages were produced by TensorFlow 2.21's ``tf.compat.v1`` and are
written in here (TF is not needed to run these tests)."""

import numpy as np
import pytest

import zps as tf
from zps.testing.gradient_checker import GradCase, check_gradients

# tf.sort differentiates through TopKV2 (and Neg, Transpose for an ascending sort on axis 0).
GRAD_CASES = [GradCase("TopKV2", lambda v: tf.sort(v, axis=0),
                       [np.array([[0.3, -1.2], [2.5, 0.7], [-0.4, 1.9]])], name="sort_axis0")]


def run(fetch, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetch, feed_dict)


@pytest.fixture(autouse=True)
def graph():
    with tf.Graph().as_default() as g:
        yield g


def new_ops(graph, build):
    before = {op.name for op in graph.get_operations()}
    out = build()
    return out.name, [(op.name, op.type) for op in graph.get_operations() if op.name not in before]


# -- operator naming -----------------------------------------------------------------------------
@pytest.mark.parametrize("build, result, ops", [
    (lambda x: x + 2, "add:0", [("add/y", "Const"), ("add", "Add")]),
    (lambda x: 2 + x, "add:0", [("add/x", "Const"), ("add", "Add")]),
    (lambda x: x * 2, "mul:0", [("mul/y", "Const"), ("mul", "Mul")]),
    (lambda x: 2 * x, "mul:0", [("mul/x", "Const"), ("mul", "Mul")]),
    (lambda x: x / 2, "truediv:0", [("truediv/y", "Const"), ("truediv", "RealDiv")]),
    (lambda x: 2 / x, "truediv:0", [("truediv/x", "Const"), ("truediv", "RealDiv")]),
    (lambda x: x - 2, "sub:0", [("sub/y", "Const"), ("sub", "Sub")]),
    (lambda x: -x, "Neg:0", [("Neg", "Neg")]),
    (lambda x: x ** 2, "pow:0", [("pow/y", "Const"), ("pow", "Pow")]),
    (lambda x: x // 2, "floordiv:0", [("floordiv/y", "Const"), ("floordiv", "FloorDiv")]),
    (lambda x: x % 2, "mod:0", [("mod/y", "Const"), ("mod", "FloorMod")]),
    (lambda x: x < 2, "Less:0", [("Less/y", "Const"), ("Less", "Less")]),
    (lambda x: x <= 2, "LessEqual:0", [("LessEqual/y", "Const"), ("LessEqual", "LessEqual")]),
    (lambda x: x > 2, "Greater:0", [("Greater/y", "Const"), ("Greater", "Greater")]),
    (lambda x: 2 < x, "Greater:0", [("Greater/y", "Const"), ("Greater", "Greater")]),
    (lambda x: x >= 2, "GreaterEqual:0",
     [("GreaterEqual/y", "Const"), ("GreaterEqual", "GreaterEqual")]),
    (lambda x: x * x, "mul:0", [("mul", "Mul")]),
    (lambda x: tf.multiply(x, 2), "Mul:0", [("Mul/y", "Const"), ("Mul", "Mul")]),
    (lambda x: tf.maximum(x, 2), "Maximum:0", [("Maximum/y", "Const"), ("Maximum", "Maximum")]),
    (lambda x: tf.equal(x, 2), "Equal:0", [("Equal/y", "Const"), ("Equal", "Equal")]),
    (lambda x: tf.div(x, 2), "div:0", [("div/y", "Const"), ("div", "RealDiv")]),
    (lambda x: tf.mod(x, 2), "FloorMod:0", [("FloorMod/y", "Const"), ("FloorMod", "FloorMod")]),
    (lambda x: tf.truncatediv(x, 2), "TruncateDiv:0",
     [("TruncateDiv/y", "Const"), ("TruncateDiv", "TruncateDiv")]),
])
def test_operators_name_their_constants_as_tf1(graph, build, result, ops):
    x = tf.placeholder(tf.float32, [3], name="x")
    assert new_ops(graph, lambda: build(x)) == (result, ops)


def test_operator_names_are_made_unique_and_scoped(graph):
    x = tf.placeholder(tf.float32, [3], name="x")
    _ = x * 2
    assert new_ops(graph, lambda: x * 2) == ("mul_1:0", [("mul_1/y", "Const"), ("mul_1", "Mul")])
    with tf.name_scope("s"):
        assert new_ops(graph, lambda: x * 2) == ("s/mul:0", [("s/mul/y", "Const"),
                                                             ("s/mul", "Mul")])


def test_integer_truediv_casts_inside_its_scope(graph):
    i = tf.placeholder(tf.int32, [3], name="i")
    assert new_ops(graph, lambda: i / 2) == ("truediv:0", [
        ("truediv/y", "Const"), ("truediv/Cast", "Cast"), ("truediv/Cast_1", "Cast"),
        ("truediv", "RealDiv")])


def test_logical_and_matmul_operators(graph):
    b = tf.constant(True, name="b")
    assert new_ops(graph, lambda: b & True) == ("and:0", [("and/y", "Const"),
                                                          ("and", "LogicalAnd")])
    m = tf.ones([2, 2], name="m")
    assert new_ops(graph, lambda: m @ [[1.0, 2.0], [3.0, 4.0]]) == (
        "matmul:0", [("matmul/b", "Const"), ("matmul", "MatMul")])


# -- bool arithmetic -----------------------------------------------------------------------------
@pytest.mark.parametrize("build, op_type", [
    (lambda b, c: b + c, "Add"),
    (lambda b, c: b - c, "Sub"),
    (lambda b, c: tf.multiply(b, c), "Mul"),
    (lambda b, c: b // c, "FloorDiv"),
    (lambda b, c: b % c, "FloorMod"),
    (lambda b, c: b ** c, "Pow"),
    (lambda b, c: tf.maximum(b, c), "Maximum"),
    (lambda b, c: tf.minimum(b, c), "Minimum"),
    (lambda b, c: tf.squared_difference(b, c), "SquaredDifference"),
    (lambda b, c: tf.truncatediv(b, c), "TruncateDiv"),
    (lambda b, c: b < c, "Less"),
    (lambda b, c: b >= c, "GreaterEqual"),
    (lambda b, c: -b, "Neg"),
    (lambda b, c: tf.abs(b), "Abs"),
])
def test_numeric_ops_refuse_bool(build, op_type):
    b, c = tf.constant(True), tf.constant(False)
    with pytest.raises(TypeError, match="parameter 'x' of %s has DataType bool not in list of "
                                        "allowed values" % op_type):
        build(b, c)


def test_truediv_refuses_bool():
    with pytest.raises(TypeError, match="Invalid dtype bool in __truediv__"):
        tf.constant(True) / tf.constant(False)


def test_equality_takes_bool_and_add_takes_strings():
    b, c = tf.constant([True, False]), tf.constant([True, True])
    assert run(tf.equal(b, c)).tolist() == [True, False]
    assert run(tf.not_equal(b, c)).tolist() == [False, True]
    assert run(tf.constant("a") + "b") == b"ab"
    with pytest.raises(TypeError, match="parameter 'x' of Mul has DataType string"):
        tf.constant("a") * tf.constant("b")


def test_bool_times_bool_operator_is_and(graph):
    # TF 2.21's ``*``: an int32 product cast back to bool (tf.multiply still refuses bool).
    b, c = tf.constant([True, True, False]), tf.constant([True, False, False])
    name, ops = new_ops(graph, lambda: b * c)
    assert name == "mul/Cast_2:0"
    assert ops == [("mul/Cast", "Cast"), ("mul/Cast_1", "Cast"), ("mul", "Mul"),
                   ("mul/Cast_2", "Cast")]
    assert run(b * c).tolist() == [True, False, False]
    assert run(b * True).tolist() == [True, True, False]


# -- argmax / argmin with NaN --------------------------------------------------------------------
LOWEST = np.finfo(np.float32).min


@pytest.mark.parametrize("values, argmax, argmin", [
    ([1.0, np.nan, 2.0], 2, 0),
    ([np.nan, np.nan], 0, 0),
    ([np.nan, 1.0], 1, 1),
    ([3.0, np.nan, 2.0], 0, 2),
    ([2.0, np.nan, 3.0, np.nan], 2, 0),
    ([-np.inf, np.nan], 0, 0),
    ([np.nan, -np.inf], 0, 1),
    ([np.nan, -np.inf, 1.0], 2, 1),
    ([np.nan, LOWEST], 0, 1),
    ([-np.inf, LOWEST], 0, 0),
    ([np.inf, np.nan], 0, 0),
    ([1.0, 3.0, 3.0], 1, 0),
])
def test_argmax_argmin_with_nan_as_tf(values, argmax, argmin):
    x = np.array(values, np.float32)
    assert run([tf.argmax(x), tf.argmin(x)]) == [argmax, argmin]


def test_argmax_with_nan_along_an_axis_skips_nan():
    rng = np.random.RandomState(0)
    x = rng.randint(0, 5, size=(20, 30)).astype(np.float64)
    x[rng.rand(20, 30) < 0.3] = np.nan
    x[0] = np.nan
    got_max, got_min = run([tf.argmax(x, axis=1), tf.argmin(x, axis=1)])
    np.testing.assert_array_equal(got_max, np.where(np.isnan(x), -np.inf, x).argmax(1))
    np.testing.assert_array_equal(got_min, np.where(np.isnan(x), np.inf, x).argmin(1))
    assert got_max[0] == got_min[0] == 0


# -- truncatediv, truncatemod --------------------------------------------------------------------
def test_truncatediv_truncatemod_round_toward_zero():
    x, y = [7, -7, 7, -7, 6], [2, 2, -2, -2, 3]
    q, r = run([tf.truncatediv(x, y), tf.truncatemod(x, y)])
    assert q.tolist() == [3, -3, -3, 3, 2] and q.dtype == np.int32
    assert r.tolist() == [1, -1, 1, -1, 0]
    qf, rf = run([tf.truncatediv([7.0, -7.0], 2.0), tf.truncatemod([7.5, -7.5], 2.0)])
    assert qf.tolist() == [3.0, -3.0] and rf.tolist() == [1.5, -1.5]
    assert run(tf.truncatediv(tf.constant([7, 8], tf.int64), 2)).tolist() == [3, 4]


def test_truncatediv_by_zero_fails_when_run():
    with pytest.raises(tf.errors.InvalidArgumentError, match="Integer division by zero"):
        run(tf.truncatediv([7], [0]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Integer division by zero"):
        run(tf.truncatemod([7], [0]))


def test_truncatediv_has_no_gradient_and_truncatemod_none_registered():
    x = tf.constant([7.0, 8.0])
    assert tf.gradients(tf.reduce_sum(tf.truncatediv(x, 2.0)), x) == [None]
    with pytest.raises(LookupError, match="TruncateMod"):
        tf.gradients(tf.reduce_sum(tf.truncatemod(x, 2.0)), x)


# -- sort, argsort -------------------------------------------------------------------------------
@pytest.mark.parametrize("fn, args, kwargs, expected", [
    ("sort", ([3.0, 1.0, 2.0],), {}, [1.0, 2.0, 3.0]),
    ("sort", ([[3, 1, 2], [0, 5, 4]],), {"direction": "DESCENDING"}, [[3, 2, 1], [5, 4, 0]]),
    ("sort", ([[3, 1, 2], [0, 5, 4]],), {"axis": 0}, [[0, 1, 2], [3, 5, 4]]),
    ("argsort", ([3, 1, 2, 1],), {}, [1, 3, 2, 0]),
    ("argsort", ([3, 1, 2, 1],), {"direction": "DESCENDING"}, [0, 2, 1, 3]),
    ("argsort", ([3, 1, 2, 1, 3],), {"direction": "DESCENDING", "stable": True},
     [0, 4, 2, 1, 3]),
    ("argsort", ([[3, 1, 2], [0, 5, 4]],), {"axis": 0}, [[1, 0, 0], [0, 1, 1]]),
    ("sort", (np.array([3, 1, 0, 255], np.uint8),), {"direction": "DESCENDING"},
     [255, 3, 1, 0]),
    ("sort", (np.array([3, 1, 0, 255], np.uint8),), {}, [0, 1, 3, 255]),
    ("sort", (np.array([3, -2147483648, 0], np.int32),), {"direction": "DESCENDING"},
     [3, 0, -2147483648]),
    ("argsort", (np.array([3, -2147483648, 0], np.int32),), {"direction": "DESCENDING"},
     [0, 2, 1]),
    ("sort", ([3, 1],), {"axis": tf.constant(0)}, [1, 3]),
])
def test_sort_and_argsort_as_tf(fn, args, kwargs, expected):
    out = getattr(tf, fn)(*args, **kwargs)
    value = run(out)
    assert value.tolist() == expected
    if fn == "argsort":
        assert value.dtype == np.int32


def test_sort_keeps_dtype_shape_and_order_of_equal_values(graph):
    x = tf.placeholder(tf.float64, [2, 3])
    out = tf.sort(x, axis=0)
    assert out.dtype == tf.float64 and out.get_shape().as_list() == [2, 3]
    assert out.name.startswith("sort/")
    # 0.0 and -0.0 are equal: they keep their order
    assert np.signbit(run(tf.sort([0.0, -0.0, 1.0, -1.0]))).tolist() == [True, False, True, False]


def test_sort_gradient_goes_back_to_each_value():
    x = tf.constant([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
    for direction, weights, expected in [("ASCENDING", [1.0, 2.0, 3.0], [[3, 1, 2], [1, 3, 2]]),
                                         ("DESCENDING", [1.0, 2.0, 3.0], [[1, 3, 2], [3, 1, 2]])]:
        loss = tf.reduce_sum(tf.sort(x, direction=direction) * weights)
        assert run(tf.gradients(loss, x)[0]).tolist() == expected


@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: c.name)
def test_gradients(case):
    check_gradients(case)


@pytest.mark.parametrize("kwargs, error, message", [
    ({"values": [3, 1], "direction": "UP"}, ValueError,
     "Argument `direction` should be one of ASCENDING, DESCENDING. Received: direction=UP"),
    ({"values": 3}, ValueError, "axis -1 is out of range"),
    ({"values": [3, 1], "axis": 1}, ValueError, "axis 1 is out of range"),
    ({"values": [3, 1], "axis": [0]}, ValueError, "must be a constant scalar"),
    ({"values": ["b", "a"]}, TypeError, "has dtype string"),
    ({"values": [True, False]}, TypeError, "has dtype bool"),
])
def test_sort_errors(kwargs, error, message):
    with pytest.raises(error, match=message.replace("[", r"\[")):
        tf.sort(**kwargs)


def test_sort_needs_a_known_rank_and_a_constant_axis():
    with pytest.raises(ValueError, match="known rank"):
        tf.argsort(tf.placeholder(tf.float32))
    with pytest.raises(ValueError, match="constant scalar"):
        tf.sort([1, 2], axis=tf.placeholder(tf.int32, []))


# -- invert_permutation --------------------------------------------------------------------------
def test_invert_permutation():
    out = tf.invert_permutation([3, 4, 0, 2, 1])
    assert out.name == "InvertPermutation:0" and out.get_shape().as_list() == [5]
    assert run(out).tolist() == [2, 4, 3, 0, 1]
    wide = run(tf.invert_permutation(np.array([1, 0], np.int64)))
    assert wide.tolist() == [1, 0] and wide.dtype == np.int64
    assert run(tf.invert_permutation(np.zeros([0], np.int32))).tolist() == []


@pytest.mark.parametrize("perm, message", [
    ([0, 0], "0 is duplicated in the input."),
    ([1, 2, 2, 1], "2 is duplicated in the input."),
    ([0, 5], "5 is not between 0 and 2"),
    ([-1, 0], "-1 is not between 0 and 2"),
])
def test_invert_permutation_bad_input_fails_when_run(perm, message):
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        run(tf.invert_permutation(perm))


def test_invert_permutation_build_errors():
    with pytest.raises(ValueError, match="Shape must be rank 1 but is rank 2"):
        tf.invert_permutation([[0]])
    with pytest.raises(TypeError, match="DataType float32 not in list of allowed values: int32"):
        tf.invert_permutation([0.0])


# -- accumulate_n --------------------------------------------------------------------------------
def test_accumulate_n(graph):
    a, b = tf.constant([1.0, 2.0]), tf.constant([3.0, 4.0])
    total = tf.accumulate_n([a, b])
    assert total.op.type == "AddN" and run(total).tolist() == [4.0, 6.0]
    assert run(tf.accumulate_n([[1.0, 2.0], [3.0, 4.0]], shape=[2])).tolist() == [4.0, 6.0]
    assert tf.accumulate_n([a]) is a
    assert tf.accumulate_n([a], name="one").name == "one:0"


@pytest.mark.parametrize("build, error, message", [
    (lambda a: tf.accumulate_n([]), ValueError,
     "inputs must be a list of at least one Tensor with the same dtype and shape"),
    (lambda a: tf.accumulate_n([a, tf.constant([1, 2])]), ValueError,
     "inputs must be a list of at least one Tensor with the same dtype and shape"),
    (lambda a: tf.accumulate_n([a, tf.constant([1.0, 2.0, 3.0])]), ValueError,
     "Shapes (2,) and (3,) are not compatible"),
    (lambda a: tf.accumulate_n([a], shape=[3]), ValueError,
     "Shapes (3,) and (2,) are not compatible"),
    (lambda a: tf.accumulate_n([a], tensor_dtype=tf.int32), TypeError,
     "The `tensor_dtype` argument is int32, but `input` is of type float32"),
])
def test_accumulate_n_errors(build, error, message):
    with pytest.raises(error) as info:
        build(tf.constant([1.0, 2.0]))
    assert message in str(info.value)


# -- setdiff1d -----------------------------------------------------------------------------------
def test_setdiff1d_returns_tf_named_tuple():
    result = tf.setdiff1d([1, 2, 3, 4], [2, 4])
    assert type(result).__name__ == "ListDiff" and result._fields == ("out", "idx")
    assert (result.out.name, result.idx.name) == ("ListDiff:0", "ListDiff:1")
    out, idx = run(result)
    assert out.tolist() == [1, 3] and idx.tolist() == [0, 2]
    assert run(result.idx).tolist() == [0, 2]
