"""Math ops: values against numpy, dtypes, static shapes, gradients, operators and error messages."""

import math
import re

import numpy as np
import pytest

import zps as tf
from zps.testing.gradient_checker import GradCase, check_gradients

R = np.random.default_rng(7)


def _r(*shape):
    return R.standard_normal(shape)


def _pos(*shape):
    return R.uniform(0.5, 2.0, shape)


def _nonzero(*shape):
    return R.uniform(0.5, 2.0, shape) * R.choice([-1.0, 1.0], shape)


def _run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


def _second_derivative(fn):
    return lambda x: tf.gradients(tf.reduce_sum(fn(x)), [x])[0]


GRAD_CASES = [
    GradCase("Abs", tf.abs, [_nonzero(3, 4)]),
    GradCase("Sign", tf.sign, [_nonzero(3)]),
    GradCase("Sqrt", tf.sqrt, [_pos(3, 2)]),
    GradCase("Sqrt", _second_derivative(tf.sqrt), [_pos(3)], name="Sqrt_2nd"),
    GradCase("Rsqrt", tf.rsqrt, [_pos(3)]),
    GradCase("Exp", tf.exp, [_r(2, 3)]),
    GradCase("Log", tf.log, [_pos(2, 3)]),
    GradCase("Log1p", tf.log1p, [_pos(3)]),
    GradCase("Tanh", tf.tanh, [_r(2, 3)]),
    GradCase("Sin", tf.sin, [_r(2, 3)]),
    GradCase("Sin", _second_derivative(tf.sin), [_r(3)], name="Sin_2nd"),
    GradCase("Cos", tf.cos, [_r(2, 3)]),
    GradCase("Tan", tf.tan, [R.uniform(-1.2, 1.2, (2, 3))]),
    GradCase("Asin", tf.asin, [R.uniform(-0.8, 0.8, (2, 3))]),
    GradCase("Acos", tf.acos, [R.uniform(-0.8, 0.8, (2, 3))]),
    GradCase("Atan", tf.atan, [_r(2, 3)]),
    GradCase("Sinh", tf.sinh, [_r(2, 3)]),
    GradCase("Cosh", tf.cosh, [_r(2, 3)]),
    GradCase("Expm1", tf.expm1, [_r(2, 3)]),
    GradCase("Erfc", tf.erfc, [_r(2, 3)]),
    GradCase("Atan2", tf.atan2, [_r(2, 3), _nonzero(3)]),   # broadcasting x
    GradCase("Atan2", tf.atan2, [_nonzero(2, 1), _r(2, 3)], name="Atan2_broadcast_y"),
    GradCase("Tanh", _second_derivative(tf.tanh), [_r(3)], name="Tanh_2nd"),
    GradCase("Sigmoid", tf.sigmoid, [3 * _r(2, 3)]),
    GradCase("Sigmoid", _second_derivative(tf.sigmoid), [_r(3)], name="Sigmoid_2nd"),
    GradCase("Reciprocal", tf.reciprocal, [_nonzero(3)]),
    GradCase("Erf", tf.erf, [_r(4)]),
    GradCase("Maximum", tf.maximum, [_r(3, 4), _r(4)]),
    GradCase("Minimum", tf.minimum, [_r(3, 1), _r(1, 4)]),
    GradCase("FloorMod", tf.floormod, [3 * _r(2, 3), R.uniform(1, 2, (3,))]),
    GradCase("Pow", tf.pow, [_pos(2, 3), _r(2, 3)]),
    GradCase("Pow", tf.pow, [_r(4), np.full(4, 3.0)], wrt=[0], name="Pow_negative_base"),
    GradCase("Pow", lambda x: x ** 2.5, [_pos(3)], name="Pow_operator"),
    GradCase("SquaredDifference", tf.squared_difference, [_r(3, 4), _r(4)]),
    GradCase("Max", lambda x: tf.reduce_max(x, axis=1), [_r(3, 4)], name="Max_axis"),
    GradCase("Max", tf.reduce_max, [_r(3, 4)], name="Max_all"),
    GradCase("Min", lambda x: tf.reduce_min(x, axis=[0], keepdims=True), [_r(3, 4)]),
    GradCase("Prod", lambda x: tf.reduce_prod(x, axis=1), [_r(3, 4)], name="Prod_axis"),
    GradCase("Prod", lambda x: tf.reduce_prod(x, axis=0),
             [np.array([[0.0, 2.0], [3.0, 0.0], [0.0, 5.0]])], name="Prod_zeros"),
    GradCase("Prod", tf.reduce_prod, [np.array([[1.5, 0.0], [-2.0, 0.7]])], name="Prod_all_one_zero"),
    GradCase("ProdOfOthers", lambda x: tf.gradients(tf.reduce_prod(x, axis=[0, 2]), [x])[0],
             [_nonzero(2, 3, 2)]),
    GradCase("ReduceLogSumExp", lambda x: tf.reduce_logsumexp(x, axis=1), [_r(3, 4)],
             name="ReduceLogSumExp_axis"),
    GradCase("ReduceLogSumExp", lambda x: tf.reduce_logsumexp(x, keepdims=True), [_r(2, 3)],
             name="ReduceLogSumExp_all"),
    GradCase("Softplus", tf.log_sigmoid, [3 * _r(2, 3)], name="log_sigmoid"),
    GradCase("Cumsum", lambda x: tf.cumsum(x, 1), [_r(2, 4)]),
    GradCase("Cumsum", lambda x: tf.cumsum(x, 0, exclusive=True, reverse=True), [_r(3, 2)],
             name="Cumsum_exclusive_reverse"),
    GradCase("Cumprod", lambda x: tf.cumprod(x, -1), [_nonzero(2, 4)]),
    GradCase("Cumprod", lambda x: tf.cumprod(x, 0, exclusive=True), [_nonzero(3, 2)],
             name="Cumprod_exclusive"),
    GradCase("Cumprod", lambda x: tf.cumprod(x, 1, reverse=True), [_nonzero(2, 3)],
             name="Cumprod_reverse"),
    GradCase("MatMul", lambda a, b: tf.tensordot(a, b, [[0, 2], [1, 0]]), [_r(2, 3, 4), _r(4, 2, 5)],
             name="tensordot"),
    GradCase("Einsum", lambda a, b: tf.einsum("ij,jk->ik", a, b), [_r(2, 3), _r(3, 4)]),
    GradCase("Einsum", lambda a, b: tf.einsum("ij,kj", a, b), [_r(2, 3), _r(4, 3)],
             name="Einsum_implicit"),
    GradCase("Einsum", lambda x: tf.einsum("ijk->kj", x), [_r(2, 3, 4)], name="Einsum_reduce"),
    GradCase("Einsum", lambda a, b: tf.einsum("ij,k->", a, b), [_r(2, 3), _r(4)],
             name="Einsum_sum_each"),
    GradCase("Einsum", lambda a, b: tf.einsum("...ij,...jk->...ik", a, b),
             [_r(2, 2, 3), _r(2, 3, 2)], name="Einsum_ellipsis"),
    GradCase("Einsum", lambda a, b, c: tf.einsum("ij,jk,kl->il", a, b, c),
             [_r(2, 3), _r(3, 2), _r(2, 2)], name="Einsum_three"),
    GradCase("Einsum", lambda x: tf.einsum("ii", x), [_r(3, 3)], name="Einsum_trace"),
    GradCase("Einsum", lambda a, b: tf.einsum("iij,jk->ik", a, b), [_r(2, 2, 3), _r(3, 2)],
             name="Einsum_diagonal"),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: c.name)
def test_gradient(case):
    check_gradients(case)


# -- unary ---------------------------------------------------------------------------------------
X = np.array([[-2.5, -0.5, 0.0], [0.5, 1.5, 3.7]], dtype=np.float32)
P = np.array([0.25, 1.0, 4.0, 9.0], dtype=np.float32)

UNARY = [
    (tf.abs, np.abs, X), (tf.sign, np.sign, X), (tf.negative, np.negative, X),
    (tf.square, np.square, X), (tf.sqrt, np.sqrt, P), (tf.rsqrt, lambda v: 1 / np.sqrt(v), P),
    (tf.exp, np.exp, X), (tf.log, np.log, P), (tf.log1p, np.log1p, X + 3), (tf.tanh, np.tanh, X),
    (tf.sigmoid, lambda v: 1 / (1 + np.exp(-v)), X), (tf.reciprocal, np.reciprocal, P),
    (tf.floor, np.floor, X), (tf.ceil, np.ceil, X), (tf.round, np.round, X),
    (tf.erf, np.vectorize(math.erf), X), (tf.erfc, np.vectorize(math.erfc), X),
    (tf.expm1, np.expm1, X), (tf.sin, np.sin, X), (tf.cos, np.cos, X), (tf.tan, np.tan, X),
    (tf.asin, np.arcsin, X / 4), (tf.acos, np.arccos, X / 4), (tf.atan, np.arctan, X),
    (tf.sinh, np.sinh, X), (tf.cosh, np.cosh, X),
    (tf.abs, np.abs, np.array([-3, 0, 4], np.int32)), (tf.sign, np.sign, np.array([-3, 0, 4], np.int64)),
    (tf.square, np.square, np.array([-3, 4], np.int32)),
]


@pytest.mark.parametrize("fn,np_fn,x", UNARY, ids=lambda v: getattr(v, "__name__", None))
def test_unary_values(fn, np_fn, x):
    with tf.Graph().as_default():
        y = fn(tf.constant(x))
        assert y.dtype == tf.as_dtype(x.dtype)
        out = _run(y)
    assert out.dtype == x.dtype
    np.testing.assert_allclose(out, np_fn(x).astype(x.dtype), rtol=1e-6, atol=1e-7)


def test_round_is_half_to_even_and_passes_integers_through():
    with tf.Graph().as_default():
        i = tf.constant([1, 2])
        assert tf.round(i) is i
        out = _run(tf.round(tf.constant([0.5, 1.5, 2.5, -0.5, -1.5])))
    np.testing.assert_array_equal(out, [0.0, 2.0, 2.0, -0.0, -2.0])


def test_sigmoid_is_accurate_in_both_tails():
    with tf.Graph().as_default():
        out = _run(tf.sigmoid(tf.constant([-800.0, -40.0, 0.0, 40.0, 800.0], tf.float64)))
    np.testing.assert_allclose(out, [0.0, math.exp(-40) / (1 + math.exp(-40)), 0.5, 1.0, 1.0],
                               rtol=1e-12)


def test_reciprocal_of_ints_truncates():
    with tf.Graph().as_default():
        out = _run(tf.reciprocal(tf.constant([1, 2, -1], tf.int32)))
    np.testing.assert_array_equal(out, [1, 0, -1])


def test_is_finite_nan_inf():
    v = np.array([1.0, np.inf, -np.inf, np.nan], np.float32)
    with tf.Graph().as_default():
        c = tf.constant(v)
        out = _run([tf.is_finite(c), tf.is_nan(c), tf.is_inf(c)])
    assert [o.tolist() for o in out] == [[True, False, False, False], [False, False, False, True],
                                         [False, True, True, False]]


def test_atan2_takes_y_first_broadcasts_and_covers_every_quadrant():
    y = np.array([1.0, 1.0, -1.0, -1.0, 0.0], np.float32)
    x = np.array([1.0, -1.0, -1.0, 1.0, -2.0], np.float32)
    with tf.Graph().as_default():
        out, row = _run([tf.atan2(tf.constant(y), tf.constant(x)),
                         tf.atan2(tf.constant([[1.0], [-1.0]]), tf.constant([2.0, -2.0]))])
    np.testing.assert_allclose(out, np.arctan2(y, x), rtol=1e-6)
    np.testing.assert_allclose(row, np.arctan2([[1.0], [-1.0]], [2.0, -2.0]), rtol=1e-6)
    with tf.Graph().as_default(), pytest.raises(TypeError, match="parameter 'y' of Atan2"):
        tf.atan2(tf.constant([1, 2]), tf.constant([1, 2]))


@pytest.mark.parametrize("fn", [tf.sqrt, tf.exp, tf.log, tf.sigmoid, tf.tanh, tf.floor, tf.erf,
                                tf.sin, tf.cos, tf.atan, tf.expm1, tf.erfc])
def test_float_only_unary_rejects_ints_naming_op_and_dtype(fn):
    with tf.Graph().as_default():
        with pytest.raises(TypeError, match=r"DataType int32 not in list of allowed values"):
            fn(tf.constant([1, 2]))


def test_unary_shape_is_kept_partially_unknown():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3])
        for fn in (tf.abs, tf.sqrt, tf.exp, tf.sigmoid, tf.floor, tf.erf):
            assert fn(x).get_shape().as_list() == [None, 3]
        assert tf.is_nan(x).dtype == tf.bool
        assert tf.exp(tf.placeholder(tf.float32)).get_shape().ndims is None


def test_piecewise_constant_ops_pass_no_gradient():
    with tf.Graph().as_default():
        x = tf.constant([1.5, 2.5])
        for fn in (tf.floor, tf.ceil, tf.round):
            assert tf.gradients(tf.reduce_sum(fn(x)), [x]) == [None]


# -- binary --------------------------------------------------------------------------------------
A = np.array([[-3.5, -1.0, 0.5], [2.0, 4.5, 7.0]], np.float32)
B = np.array([1.5, -2.0, 0.5], np.float32)
IM = np.array([[-7, -1, 0], [5, 8, 9]], np.int32)
J = np.array([2, -3, 4], np.int32)

BINARY = [
    (tf.add, np.add, A, B), (tf.subtract, np.subtract, A, B), (tf.multiply, np.multiply, A, B),
    (tf.truediv, np.true_divide, A, B), (tf.divide, np.true_divide, A, B),
    (tf.realdiv, np.true_divide, A, B), (tf.div, np.true_divide, A, B),
    (tf.maximum, np.maximum, A, B), (tf.minimum, np.minimum, A, B),
    (tf.floordiv, np.floor_divide, A, B), (tf.floormod, np.mod, A, B), (tf.mod, np.mod, A, B),
    (tf.pow, np.power, np.abs(A), B), (tf.squared_difference, lambda x, y: (x - y) ** 2, A, B),
    (tf.add, np.add, IM, J), (tf.maximum, np.maximum, IM, J), (tf.minimum, np.minimum, IM, J),
    (tf.floordiv, np.floor_divide, IM, J), (tf.floormod, np.mod, IM, J), (tf.div, np.floor_divide, IM, J),
    (tf.pow, np.power, IM, np.abs(J)), (tf.squared_difference, lambda x, y: (x - y) ** 2, IM, J),
    (tf.multiply, np.multiply, IM[:, :1], J),
]


@pytest.mark.parametrize("fn,np_fn,x,y", BINARY, ids=lambda v: getattr(v, "__name__", None))
def test_binary_values_with_broadcasting(fn, np_fn, x, y):
    with tf.Graph().as_default():
        z = fn(tf.constant(x), tf.constant(y))
        expected = np_fn(x, y).astype(x.dtype)
        assert z.get_shape().as_list() == list(expected.shape)
        out = _run(z)
    assert out.dtype == expected.dtype
    np.testing.assert_allclose(out, expected, rtol=1e-6)


@pytest.mark.parametrize("dtype,result", [
    (tf.int8, tf.float32), (tf.int16, tf.float32), (tf.uint8, tf.float32), (tf.int32, tf.float64),
    (tf.int64, tf.float64), (tf.float16, tf.float16), (tf.float32, tf.float32),
])
def test_truediv_casts_integers_as_tf1(dtype, result):
    with tf.Graph().as_default():
        q = tf.truediv(tf.constant([7, 9], dtype), tf.constant([2, 4], dtype))
        op_via_operator = tf.constant([7, 9], dtype) / tf.constant([2, 4], dtype)
        divide = tf.divide(tf.constant([7, 9], dtype), 2)
        assert q.dtype == op_via_operator.dtype == divide.dtype == result
        np.testing.assert_allclose(_run(q), [3.5, 2.25])
        np.testing.assert_allclose(_run(divide), [3.5, 4.5])


def test_realdiv_of_ints_truncates_toward_zero():
    with tf.Graph().as_default():
        out = _run(tf.realdiv(tf.constant([7, -7]), tf.constant([2, 2])))
    np.testing.assert_array_equal(out, [3, -3])


@pytest.mark.parametrize("fn", [tf.floordiv, tf.floormod])
def test_integer_division_by_zero_is_an_error(fn):
    with tf.Graph().as_default():
        z = fn(tf.constant([4, 5]), tf.constant([2, 0]), name="divide_me")
        with pytest.raises(tf.errors.InvalidArgumentError, match="Integer division by zero") as e:
            _run(z)
        assert e.value.op_name == "divide_me"


def test_binary_dtype_mismatch_names_both_dtypes():
    with tf.Graph().as_default():
        f = tf.constant([1.0])
        i = tf.constant([1])
        for fn in (tf.add, tf.maximum, tf.equal, tf.pow, tf.truediv, lambda x, y: x * y):
            with pytest.raises(TypeError, match=r"int32.*float32|float32.*int32"):
                fn(f, i)


def test_broadcast_error_names_op_and_shapes():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=r"3 and 4 for shapes \(2, 3\) and \(4,\) \(op 'big_max'"):
            tf.maximum(tf.zeros([2, 3]), tf.zeros([4]), name="big_max")


def test_binary_static_shapes_partially_unknown():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3])
        col = tf.placeholder(tf.float32, [None, 1])
        assert tf.maximum(x, [1.0, 2.0, 3.0]).get_shape().as_list() == [None, 3]
        assert tf.pow(col, tf.zeros([1, 4])).get_shape().as_list() == [None, 4]
        assert tf.squared_difference(x, tf.placeholder(tf.float32)).get_shape().ndims is None
        assert tf.less(x, 2.0).get_shape().as_list() == [None, 3]


def test_maximum_minimum_ties_send_the_gradient_to_x():
    with tf.Graph().as_default():
        x = tf.constant([1.0, 2.0, 3.0])
        y = tf.constant([1.0, 5.0, 0.0])
        out = _run(tf.gradients(tf.reduce_sum(tf.maximum(x, y)), [x, y])
                   + tf.gradients(tf.reduce_sum(tf.minimum(x, y)), [x, y]))
    np.testing.assert_array_equal(out, [[1, 0, 1], [0, 1, 0], [1, 1, 0], [0, 0, 1]])


def test_maximum_gradient_is_summed_back_to_broadcast_input():
    with tf.Graph().as_default():
        x = tf.constant([[1.0, -1.0], [3.0, -2.0]])
        gy, = tf.gradients(tf.reduce_sum(tf.maximum(x, 0.0)), [x])
        zero = tf.constant(0.0)
        gz, = tf.gradients(tf.reduce_sum(tf.maximum(x, zero)), [zero])
        assert gz.get_shape().as_list() == []
        np.testing.assert_array_equal(_run(gy), [[1, 0], [1, 0]])
        assert _run(gz) == 2.0


def test_pow_gradient_wrt_exponent_is_zero_for_nonpositive_base():
    with tf.Graph().as_default():
        x = tf.constant([-2.0, 0.0, 2.0])
        y = tf.constant([2.0, 2.0, 2.0])
        gx, gy = _run(tf.gradients(tf.reduce_sum(tf.pow(x, y)), [x, y]))
    np.testing.assert_allclose(gx, [-4.0, 0.0, 4.0])
    np.testing.assert_allclose(gy, [0.0, 0.0, 4.0 * math.log(2.0)], rtol=1e-6)


def test_scalar_mul():
    with tf.Graph().as_default():
        out = _run(tf.scalar_mul(2, tf.constant([1.0, 2.0])))
        with pytest.raises(ValueError, match="Only scalar multiply"):
            tf.scalar_mul([1.0, 2.0], tf.constant([1.0, 2.0]))
    np.testing.assert_array_equal(out, [2.0, 4.0])


# -- comparisons and logic -----------------------------------------------------------------------
COMPARISONS = [
    (tf.equal, np.equal), (tf.not_equal, np.not_equal), (tf.less, np.less),
    (tf.less_equal, np.less_equal), (tf.greater, np.greater), (tf.greater_equal, np.greater_equal),
]


@pytest.mark.parametrize("fn,np_fn", COMPARISONS, ids=lambda v: getattr(v, "__name__", None))
@pytest.mark.parametrize("x,y", [(A, B), (IM, J), (IM, np.int32(0))], ids=["float", "int", "scalar"])
def test_comparisons(fn, np_fn, x, y):
    with tf.Graph().as_default():
        z = fn(tf.constant(x), y)
        assert z.dtype == tf.bool
        assert z.get_shape().as_list() == list(x.shape)
        np.testing.assert_array_equal(_run(z), np_fn(x, y))


def test_equal_on_strings_and_bools():
    with tf.Graph().as_default():
        s = tf.equal(tf.constant(["a", "b"]), "a")
        b = tf.not_equal(tf.constant([True, False]), True)
        assert _run([s, b]) and _run(s).tolist() == [True, False] and _run(b).tolist() == [False, True]


def test_logical_ops():
    p = np.array([[True, False], [True, True]])
    q = np.array([True, False])
    with tf.Graph().as_default():
        tp, tq = tf.constant(p), tf.constant(q)
        out = _run([tf.logical_and(tp, tq), tf.logical_or(tp, tq), tf.logical_xor(tp, tq),
                    tf.logical_not(tp), tf.logical_and(tp, True)])
        assert tf.logical_or(tp, tq).get_shape().as_list() == [2, 2]
    for got, want in zip(out, [p & q, p | q, p ^ q, ~p, p]):
        np.testing.assert_array_equal(got, want)


def test_logical_ops_reject_non_bool():
    with tf.Graph().as_default():
        f = tf.constant([1.0])
        with pytest.raises(TypeError, match=r"LogicalAnd takes bool tensors.*float32"):
            tf.logical_and(f, f)
        with pytest.raises(TypeError, match=r"LogicalNot takes bool tensors"):
            tf.logical_not(f)
        with pytest.raises(TypeError, match=r"reduce_any takes bool tensors"):
            tf.reduce_any(f)


def test_comparisons_have_no_gradient():
    with tf.Graph().as_default():
        x = tf.constant([1.0, 2.0])
        y = tf.cast(tf.less(x, 1.5), tf.float32) + tf.cast(tf.argmax(x), tf.float32)
        assert tf.gradients(tf.reduce_sum(y), [x]) == [None]


# -- reductions ----------------------------------------------------------------------------------
M = np.array([[[3.0, -1.0, 2.0], [0.5, 4.0, -2.0]], [[1.0, 1.0, -3.0], [2.5, 0.0, 6.0]]],
             np.float32)
REDUCTIONS = [
    (tf.reduce_sum, np.sum), (tf.reduce_mean, np.mean), (tf.reduce_max, np.max),
    (tf.reduce_min, np.min), (tf.reduce_prod, np.prod),
    (tf.reduce_logsumexp, lambda v, axis=None, keepdims=False:
     np.log(np.sum(np.exp(v.astype(np.float64)), axis=axis, keepdims=keepdims))),
]


@pytest.mark.parametrize("fn,np_fn", REDUCTIONS, ids=lambda v: getattr(v, "__name__", None))
@pytest.mark.parametrize("axis,keepdims", [(None, False), (None, True), (1, False), ([0, 2], True),
                                           (-1, False), ((), False)])
def test_reduction_values(fn, np_fn, axis, keepdims):
    np_axis = tuple(axis) if isinstance(axis, list) else axis
    expected = np_fn(M, axis=np_axis, keepdims=keepdims)
    with tf.Graph().as_default():
        y = fn(tf.constant(M), axis=axis, keepdims=keepdims)
        assert y.get_shape().as_list() == list(np.shape(expected))
        assert y.dtype == tf.float32
        np.testing.assert_allclose(_run(y), expected, rtol=1e-5)


def test_reductions_of_ints_and_bools():
    b = np.array([[True, False], [True, True]])
    with tf.Graph().as_default():
        i = tf.constant(IM)
        out = _run([tf.reduce_max(i, 1), tf.reduce_min(i), tf.reduce_prod(i + 10, 0),
                    tf.reduce_any(tf.constant(b), 1), tf.reduce_all(tf.constant(b), 0),
                    tf.reduce_all(tf.constant(b))])
    np.testing.assert_array_equal(out[0], IM.max(1))
    assert out[1] == IM.min() and out[1].dtype == np.int32
    np.testing.assert_array_equal(out[2], (IM + 10).prod(0))
    np.testing.assert_array_equal(out[3], [True, True])
    np.testing.assert_array_equal(out[4], [True, False])
    assert not out[5]


def test_reduction_legacy_argument_names():
    with tf.Graph().as_default():
        c = tf.constant(M)
        y = tf.reduce_max(c, reduction_indices=[1], keep_dims=True)
        assert y.get_shape().as_list() == [2, 1, 3]
        np.testing.assert_array_equal(_run(y), M.max(axis=1, keepdims=True))
        with pytest.raises(ValueError, match="both 'axis' and 'reduction_indices'"):
            tf.reduce_min(c, axis=0, reduction_indices=0)
        with pytest.raises(ValueError, match="both 'keepdims' and 'keep_dims'"):
            tf.reduce_prod(c, keepdims=True, keep_dims=True)


def test_reduction_shapes_partially_unknown():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3, 5])
        assert tf.reduce_max(x, axis=1).get_shape().as_list() == [None, 5]
        assert tf.reduce_prod(x, axis=-1, keepdims=True).get_shape().as_list() == [None, 3, 1]
        assert tf.reduce_logsumexp(x).get_shape().as_list() == []
        assert tf.reduce_any(tf.placeholder(tf.bool), axis=0).get_shape().ndims is None
        with pytest.raises(ValueError, match="Invalid axis 3 for Max of a rank-3 tensor"):
            tf.reduce_max(x, axis=3)
        gx, = tf.gradients(tf.reduce_max(x, axis=1), [x])
        assert gx.get_shape().as_list() == [None, 3, 5]


def test_reduce_max_min_ties_share_the_gradient():
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    with tf.Graph().as_default():
        c = tf.constant(x)
        gmax, = tf.gradients(tf.reduce_max(c, axis=1), [c])
        gmin, = tf.gradients(tf.reduce_min(c), [c])
        out = _run([gmax, gmin])
    np.testing.assert_allclose(out[0], [[0, 0.5, 0.5], [1 / 3, 1 / 3, 1 / 3]])
    np.testing.assert_allclose(out[1], [[1, 0, 0], [0, 0, 0]])


def test_reductions_keep_small_integer_dtypes_and_of_nothing_give_the_identity():
    # TensorFlow 2.21's tf.compat.v1 gave these: sums and products in the input's dtype (wrapping
    # as it does), max/min over nothing -inf/+inf (the dtype's extremes for integers).
    with tf.Graph().as_default():
        i8 = tf.constant([100, 3], tf.int8)
        u8 = tf.constant([100, 200], tf.uint8)
        empty, empty_i = tf.zeros([0, 3]), tf.zeros([0, 3], tf.int32)
        got = tf.Session().run([
            tf.reduce_prod(i8), tf.reduce_sum(u8), tf.reduce_sum(tf.constant([2, 3])),
            tf.reduce_prod(tf.constant([[2, 3]], tf.int16), 1),
            tf.reduce_max(empty), tf.reduce_min(empty), tf.reduce_max(empty, 0),
            tf.reduce_max(empty_i), tf.reduce_min(empty_i, 0),
            tf.reduce_max(tf.zeros([2, 0]), 1, keepdims=True)])
    want = [np.int8(44), np.uint8(44), np.int32(5), np.array([6], np.int16),
            np.float32(-np.inf), np.float32(np.inf), np.full(3, -np.inf, np.float32),
            np.int32(-2 ** 31), np.full(3, 2 ** 31 - 1, np.int32), np.full((2, 1), -np.inf, np.float32)]
    for g, w in zip(got, want):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_array_equal(g, w)
    with tf.Graph().as_default():
        for reduce in (tf.reduce_sum, tf.reduce_prod, tf.reduce_mean):
            with pytest.raises(TypeError, match="DataType bool not in list of allowed values"):
                reduce(tf.constant([True, False]))


def test_reduce_prod_gradient_with_zeros():
    x = np.array([[0.0, 2.0, 3.0], [0.0, 0.0, 4.0], [1.0, 2.0, 3.0]])
    with tf.Graph().as_default():
        c = tf.constant(x)
        g, = tf.gradients(tf.reduce_prod(c, axis=1), [c])
        out = _run(g)
    np.testing.assert_allclose(out, [[6, 0, 0], [0, 0, 0], [6, 3, 2]])


def test_reduce_logsumexp_is_stable():
    x = np.array([[1000.0, 1000.0], [-np.inf, -np.inf], [np.inf, 0.0], [-1000.0, -1000.0]])
    with tf.Graph().as_default():
        out = _run(tf.reduce_logsumexp(tf.constant(x), axis=1))
        with pytest.raises(TypeError, match="reduce_logsumexp takes a float tensor"):
            tf.reduce_logsumexp(tf.constant([1, 2]))
    np.testing.assert_allclose(out, [1000 + math.log(2), -np.inf, np.inf, -1000 + math.log(2)])


def test_count_nonzero():
    with tf.Graph().as_default():
        c = tf.constant([[0.0, 1.5, 0.0], [2.0, -1.0, 0.0]])
        y = tf.count_nonzero(c, axis=1)
        z = tf.count_nonzero(c, keepdims=True, dtype=tf.int32)
        assert y.dtype == tf.int64 and z.dtype == tf.int32
        out = _run([y, z, tf.count_nonzero(tf.constant(["", "a", "b"]))])
    np.testing.assert_array_equal(out[0], [1, 2])
    np.testing.assert_array_equal(out[1], [[3]])
    assert out[2] == 2


# -- argmax / argmin -----------------------------------------------------------------------------
def test_argmax_argmin():
    x = np.array([[1.0, 9.0, 9.0], [7.0, 3.0, -1.0]], np.float32)
    with tf.Graph().as_default():
        c = tf.constant(x)
        ys = [tf.argmax(c, axis=1), tf.argmin(c, 1), tf.argmax(c), tf.argmin(c, dimension=0),
              tf.argmax(c, -1, output_type=tf.int32), tf.argmax(tf.constant(IM), 1)]
        assert [y.dtype for y in ys] == [tf.int64] * 4 + [tf.int32, tf.int64]
        assert [y.get_shape().as_list() for y in ys] == [[2], [2], [3], [3], [2], [2]]
        out = _run(ys)
    for got, want in zip(out, [x.argmax(1), x.argmin(1), x.argmax(0), x.argmin(0), x.argmax(1),
                               IM.argmax(1)]):
        np.testing.assert_array_equal(got, want)
    assert out[4].dtype == np.int32


def test_argmax_shapes_and_errors():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 4])
        assert tf.argmax(x, -1).get_shape().as_list() == [None]
        assert tf.argmin(x, 0).get_shape().as_list() == [4]
        assert tf.argmax(tf.placeholder(tf.float32), 1).get_shape().ndims is None
        with pytest.raises(ValueError, match="Cannot specify both 'axis' and 'dimension'"):
            tf.argmax(x, axis=0, dimension=0)
        with pytest.raises(ValueError, match="Invalid axis 2 for ArgMax"):
            tf.argmax(x, 2)
        with pytest.raises(TypeError, match="output_type must be int32 or int64"):
            tf.argmax(x, 0, output_type=tf.float32)
        with pytest.raises(ValueError, match="rank >= 1"):
            tf.argmin(tf.constant(1.0))


# -- Tensor operators ----------------------------------------------------------------------------
T = np.array([1.0, 2.0, 4.0], np.float32)
U = np.array([0.5, -2.0, 3.0], np.float32)
K = np.array([7, -7, 9], np.int32)

OPERATORS = [
    ("t + u", lambda t, u, k: t + u, T + U), ("t - u", lambda t, u, k: t - u, T - U),
    ("t * u", lambda t, u, k: t * u, T * U), ("t / u", lambda t, u, k: t / u, T / U),
    ("t // u", lambda t, u, k: t // u, T // U), ("t % u", lambda t, u, k: t % u, T % U),
    ("t ** 2", lambda t, u, k: t ** 2, T ** 2), ("-t", lambda t, u, k: -t, -T),
    ("abs(u)", lambda t, u, k: abs(u), np.abs(U)),
    ("2.0 - t", lambda t, u, k: 2.0 - t, 2.0 - T), ("2 + t", lambda t, u, k: 2 + t, 2 + T),
    ("3.0 / t", lambda t, u, k: 3.0 / t, 3.0 / T), ("2.0 ** t", lambda t, u, k: 2.0 ** t, 2.0 ** T),
    ("5.0 // t", lambda t, u, k: 5.0 // t, 5.0 // T), ("5.0 % t", lambda t, u, k: 5.0 % t, 5.0 % T),
    ("np32 * t", lambda t, u, k: np.float32(2) * t, 2 * T),
    ("np64 - t", lambda t, u, k: np.float64(2) - t, 2 - T),
    ("npint + k", lambda t, u, k: np.int32(3) + k, 3 + K),
    ("array + t", lambda t, u, k: U + t, U + T),
    ("k // 2", lambda t, u, k: k // 2, K // 2), ("k % 4", lambda t, u, k: k % 4, K % 4),
    ("20 // k", lambda t, u, k: 20 // k, 20 // K), ("k / 2", lambda t, u, k: k / 2, K / 2),
    ("k ** 2", lambda t, u, k: k ** 2, K ** 2),
    ("t < u", lambda t, u, k: t < u, T < U), ("t <= 2", lambda t, u, k: t <= 2, T <= 2),
    ("t > u", lambda t, u, k: t > u, T > U), ("t >= 2.0", lambda t, u, k: t >= 2.0, T >= 2.0),
    ("2 < t", lambda t, u, k: 2 < t, 2 < T),
    ("&", lambda t, u, k: (t > 1) & (u > 0), (T > 1) & (U > 0)),
    ("|", lambda t, u, k: (t > 1) | (u > 0), (T > 1) | (U > 0)),
    ("^", lambda t, u, k: (t > 1) ^ (u > 0), (T > 1) ^ (U > 0)),
    ("~", lambda t, u, k: ~(t > 1), ~(T > 1)),
    ("True & b", lambda t, u, k: True & (t > 1), T > 1),
]


@pytest.mark.parametrize("expr,build,expected", OPERATORS, ids=[o[0] for o in OPERATORS])
def test_operators(expr, build, expected):
    with tf.Graph().as_default():
        y = build(tf.constant(T), tf.constant(U), tf.constant(K))
        assert isinstance(y, tf.Tensor)
        assert y.dtype == tf.as_dtype(expected.dtype), expr
        np.testing.assert_allclose(_run(y), expected, rtol=1e-6)


def test_matmul_operator_both_ways():
    a = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    b = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    with tf.Graph().as_default():
        ta, tb = tf.constant(a), tf.constant(b)
        out = _run([ta @ tb, a @ tb, ta @ b])
    for o in out:
        np.testing.assert_allclose(o, a @ b)


def test_operators_name_ops_as_tf1():
    with tf.Graph().as_default():
        t = tf.constant([1.0])
        names = [(t + t).op.name, (t * 2).op.name, (2 - t).op.name, (t / t).op.name]
    assert names == ["add", "mul", "sub", "truediv"]


def test_operator_dtype_rules():
    with tf.Graph().as_default():
        f32 = tf.constant([1.0, 2.0])
        f64 = tf.constant([1.0, 2.0], tf.float64)
        i32 = tf.constant([1, 2])
        assert (f64 * np.float32(2)).dtype == tf.float64  # Python/numpy values adopt the tensor's
        assert (np.float32(2) * f64).dtype == tf.float64
        assert (i32 + 2).dtype == tf.int32
        with pytest.raises(TypeError, match=r"int32.*float32"):
            f32 + i32
        with pytest.raises(TypeError, match=r"float64.*float32"):
            f32 - f64
        with pytest.raises(TypeError, match=r"int32.*2\.5"):
            i32 * 2.5
        with pytest.raises(TypeError, match="LogicalAnd takes bool tensors"):
            i32 & i32


def test_tensor_is_not_usable_as_bool():
    with tf.Graph().as_default():
        with pytest.raises(TypeError, match="as a Python bool"):
            bool(tf.constant(1.0) < 2.0)


# -- casts ---------------------------------------------------------------------------------------
def test_casts_and_their_constant_folding():
    from zps.framework.constant import constant_value
    with tf.Graph().as_default():
        c = tf.constant([1.7, -1.7])
        ys = [tf.to_int32(c), tf.to_int64(c), tf.to_double(c), tf.to_float(tf.constant([1, 2]))]
        assert [y.dtype for y in ys] == [tf.int32, tf.int64, tf.float64, tf.float32]
        np.testing.assert_array_equal(constant_value(ys[0]), [1, -1])
        out = _run(ys)
    np.testing.assert_array_equal(out[0], [1, -1])
    assert out[2].dtype == np.float64


def test_the_gradient_of_a_scalar_loss_does_not_compute_the_loss():
    """As TF1 (grad_ys is a fill of the folded static shape): training without fetching a
    scalar loss does not run the loss op; a loss of unknown shape is still needed for its shape."""
    from zps.runtime.executor import prune
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [3])
        loss = tf.reduce_sum(tf.square(x), name="loss")
        g, = tf.gradients(loss, [x])
        assert loss.op not in prune([g], [], set())
        np.testing.assert_allclose(tf.Session().run(g, {x: [1.0, 2.0, 3.0]}), [2.0, 4.0, 6.0])
        v = tf.placeholder(tf.float32, [None])
        sq = tf.square(v, name="sq")
        gv, = tf.gradients(sq, [v])
        assert sq.op in prune([gv], [], set())
        np.testing.assert_allclose(tf.Session().run(gv, {v: [1.0, -2.0]}), [2.0, -4.0])


def test_add_n_sums_same_shaped_tensors_only():
    # TF1's AddN does not broadcast: a scalar among vectors is an error, not a silent sum.
    with tf.Graph().as_default():
        a, b = tf.constant([1.0, 2.0]), tf.constant([10.0, 20.0])
        np.testing.assert_array_equal(_run(tf.add_n([a, b, a])), [12.0, 24.0])
        with pytest.raises(ValueError, match=r"add_n: inputs must have the same shape"):
            tf.add_n([a, tf.constant(1.0)])
        x = tf.placeholder(tf.float32, [None])
        total = tf.add_n([x, a])
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"input 0 is \[3\], input 1 is \[2\]"):
            _run(total, {x: [1.0, 2.0, 3.0]})


def test_div_no_nan_is_zero_where_the_divisor_is_and_so_is_its_gradient():
    with tf.Graph().as_default():
        x = tf.constant([1.0, 2.0, 3.0])
        y = tf.constant([2.0, 0.0, -4.0])
        q = tf.div_no_nan(x, y)
        gx, gy = tf.gradients(tf.reduce_sum(q), [x, y])
        out, dx, dy = _run([q, gx, gy])
    np.testing.assert_array_equal(out, [0.5, 0.0, -0.75])
    np.testing.assert_array_equal(dx, [0.5, 0.0, -0.25])
    np.testing.assert_array_equal(dy, [-0.25, 0.0, -3.0 / 16])


# -- Cumsum, Cumprod -----------------------------------------------------------------------------
# Expected values in this and the following sections were computed with TensorFlow 2.21
# (tensorflow.compat.v1, graph mode); TensorFlow is not needed to run these tests.
SCAN_X = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], np.float32)
SCAN_CASES = [  # (axis, exclusive, reverse, cumsum, cumprod)
    (0, False, False, [[1, 2, 3], [5, 7, 9]], [[1, 2, 3], [4, 10, 18]]),
    (0, False, True, [[5, 7, 9], [4, 5, 6]], [[4, 10, 18], [4, 5, 6]]),
    (0, True, False, [[0, 0, 0], [1, 2, 3]], [[1, 1, 1], [1, 2, 3]]),
    (0, True, True, [[4, 5, 6], [0, 0, 0]], [[4, 5, 6], [1, 1, 1]]),
    (1, False, False, [[1, 3, 6], [4, 9, 15]], [[1, 2, 6], [4, 20, 120]]),
    (1, False, True, [[6, 5, 3], [15, 11, 6]], [[6, 6, 3], [120, 30, 6]]),
    (-1, True, False, [[0, 1, 3], [0, 4, 9]], [[1, 1, 2], [1, 4, 20]]),
    (-1, True, True, [[5, 3, 0], [11, 6, 0]], [[6, 3, 1], [30, 6, 1]]),
]


@pytest.mark.parametrize("axis,exclusive,reverse,sums,prods", SCAN_CASES)
def test_cumsum_cumprod_match_tf(axis, exclusive, reverse, sums, prods):
    with tf.Graph().as_default():
        x = tf.constant(SCAN_X)
        s = tf.cumsum(x, axis, exclusive=exclusive, reverse=reverse)
        p = tf.cumprod(x, axis, exclusive=exclusive, reverse=reverse)
        assert (s.op.type, p.op.type) == ("Cumsum", "Cumprod")
        assert s.get_shape().as_list() == [2, 3] and s.dtype == tf.float32
        out_s, out_p = _run([s, p])
    np.testing.assert_array_equal(out_s, np.array(sums, np.float32))
    np.testing.assert_array_equal(out_p, np.array(prods, np.float32))


def test_cumsum_cumprod_integer_dtypes_wrap_as_tf():
    with tf.Graph().as_default():
        out = _run([tf.cumsum(tf.constant([3, -1, 4, 1], tf.int32), exclusive=True),
                    tf.cumprod(tf.constant([3, -1, 4, 1], tf.int64), reverse=True),
                    tf.cumsum(tf.constant([200, 100], tf.uint8)),
                    tf.cumsum(tf.constant([0.1] * 5, tf.float16)),
                    tf.cumsum(tf.zeros([0, 2]), exclusive=True)])
    assert [o.dtype for o in out] == [np.int32, np.int64, np.uint8, np.float16, np.float32]
    np.testing.assert_array_equal(out[0], [0, 3, 2, 6])
    np.testing.assert_array_equal(out[1], [-12, -4, 4, 1])
    np.testing.assert_array_equal(out[2], [200, 44])
    np.testing.assert_array_equal(out[3], np.array([0.1, 0.2, 0.2998, 0.4, 0.5], np.float16))
    assert out[4].shape == (0, 2)


def test_cumsum_static_shape_and_axis_as_a_constant_tensor():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3])
        assert tf.cumsum(x, 1).get_shape().as_list() == [None, 3]
        assert tf.cumprod(tf.placeholder(tf.float32)).get_shape().ndims is None
        y = tf.cumsum(x, tf.constant(1, tf.int64))
        np.testing.assert_array_equal(_run(y, {x: SCAN_X}), [[1, 3, 6], [4, 9, 15]])


def test_scan_errors_as_tf():
    with tf.Graph().as_default():
        with pytest.raises(TypeError, match="parameter 'x' of Cumsum has DataType bool"):
            tf.cumsum(tf.constant([True]))
        with pytest.raises(TypeError, match="parameter 'axis' of Cumprod has DataType float"):
            tf.cumprod(SCAN_X, 1.0)
        # A bad axis is found when the op runs, as TF's ScanOp does.
        x = tf.constant(SCAN_X)
        for bad, msg in [(2, r"range \[-2, 2\), but got 2"), (-3, r"range \[-2, 2\), but got -1"),
                         ([1], r"axis must be a scalar, not \[1\]")]:
            y = tf.cumsum(x, bad)
            with pytest.raises(tf.errors.InvalidArgumentError, match=msg):
                _run(y)
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"range \[0, 0\), but got 0"):
            _run(tf.cumsum(tf.constant(3.0)))


def test_cumsum_gradient_is_a_reversed_cumsum():
    with tf.Graph().as_default():
        x = tf.constant(SCAN_X)
        y = tf.cumsum(x, 1, exclusive=True)
        g, = tf.gradients(tf.reduce_sum(y * tf.constant([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]])), [x])
        np.testing.assert_array_equal(_run(g), [[5.0, 3.0, 0.0], [2.5, 2.0, 0.0]])


@pytest.mark.parametrize("exclusive,reverse,expected", [
    (False, False, [[1.0, 0.0, 0.0], [1.0, 0.25, 0.0]]),
    (False, True, [[0.0, 0.0, 3.0], [0.0, 0.0, 0.0]]),
    (True, False, [[2.0, 0.0, 0.0], [8.5, 1.0, 0.0]]),
    (True, True, [[0.0, 0.0, 2.0], [0.0, 0.0, 0.0]]),
])
def test_cumprod_gradient_with_zeros_is_tfs(exclusive, reverse, expected):
    # TF's _CumprodGrad divides by x (div_no_nan): not the true gradient where x is 0, but TF's.
    with tf.Graph().as_default():
        x = tf.constant([[2.0, 0.0, 3.0], [0.5, 4.0, 0.0]], tf.float64)
        y = tf.cumprod(x, 1, exclusive=exclusive, reverse=reverse)
        w = tf.constant([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]], tf.float64)
        g, = tf.gradients(tf.reduce_sum(y * w), [x])
        np.testing.assert_allclose(_run(g), expected, rtol=1e-12)


# -- tensordot, einsum ---------------------------------------------------------------------------
TD_A = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 10
TD_B = np.arange(12, dtype=np.float32).reshape(4, 3) - 5
TD_1 = [[[1.2, 1.8000001, 2.4], [0.39999986, 2.6000001, 4.8], [-0.4000001, 3.4, 7.2]],
        [[-1.2000003, 4.2, 9.599999], [-1.9999995, 4.9999995, 12.0], [-2.8000002, 5.799999, 14.4]]]
TD_NEG = [[[-4.0, -0.4, 3.2, 6.8], [-5.2, -0.7, 3.8, 8.3], [-6.4, -1.0, 4.4, 9.8],
           [-7.6000004, -1.3, 5.0, 11.3]],
          [[-18.4, -4.0, 10.4, 24.8], [-19.6, -4.3, 11.0, 26.3], [-20.8, -4.6, 11.6, 27.8],
           [-22.0, -4.9, 12.2, 29.3]]]


@pytest.mark.parametrize("axes,expected", [
    (1, TD_1), ((2, 0), TD_1), ([[2], [0]], TD_1), ([[1, 2], [1, 0]], [11.0, 18.199999]),
    ([[-2], [-1]], TD_NEG),
])
def test_tensordot_matches_tf(axes, expected):
    with tf.Graph().as_default():
        out = tf.tensordot(tf.constant(TD_A), tf.constant(TD_B), axes)
        assert out.get_shape().as_list() == list(np.shape(expected)) and out.dtype == tf.float32
        np.testing.assert_allclose(_run(out), expected, rtol=1e-6, atol=1e-6)


def test_tensordot_outer_product_and_ints():
    with tf.Graph().as_default():
        outer = tf.tensordot(tf.constant(SCAN_X), tf.constant([1.0, -1.0]), 0)
        ints = tf.tensordot(tf.constant(np.arange(6, dtype=np.int32).reshape(2, 3)),
                            tf.constant(np.arange(3, dtype=np.int32)), 1)
        assert outer.get_shape().as_list() == [2, 3, 2] and ints.dtype == tf.int32
        o, i = _run([outer, ints])
    np.testing.assert_array_equal(o, np.stack([SCAN_X, -SCAN_X], axis=-1))
    np.testing.assert_array_equal(i, [5, 14])


def test_tensordot_static_shape_with_unknown_dims_as_tf():
    with tf.Graph().as_default():
        a = tf.placeholder(tf.float32, [None, 3, 4])
        b = tf.placeholder(tf.float32, [4, None])
        assert tf.tensordot(a, b, 1).get_shape().as_list() == [None, 3, None]
        assert tf.tensordot(a, b, [[2], [0]]).get_shape().as_list() == [None, 3, None]
        assert tf.tensordot(a, b, 0).get_shape().as_list() == [None, 3, 4, 4, None]
        c = tf.tensordot(a, tf.placeholder(tf.float32, [4, 3]), [[1, 2], [1, 0]])
        assert c.get_shape().as_list() == [None]
        assert (c.op.type, c.op.name) == ("Reshape", "Tensordot_3")
        v = tf.tensordot(tf.constant([1.0, 2.0, 3.0]), tf.placeholder(tf.float32, [3, None]), 1)
        assert v.get_shape().as_list() == [None]   # no free dims of a: [] + [None]
        out = _run(tf.tensordot(a, b, [[2], [0]]), {a: TD_A, b: TD_B})
    np.testing.assert_allclose(out, TD_1, rtol=1e-6, atol=1e-6)


def test_tensordot_axes_as_numpy_ints_and_constant_tensors():
    with tf.Graph().as_default():
        a, b = tf.constant(TD_A), tf.constant(TD_B)
        outs = _run([tf.tensordot(a, b, np.int64(1)),
                     tf.tensordot(a, b, tf.constant([[2], [0]])),
                     tf.tensordot(a, b, tf.constant([[1, 2], [1, 0]]))])
        with pytest.raises(TypeError, match="must be known when the graph is built"):
            tf.tensordot(a, b, tf.placeholder(tf.int32, [2, 1]))
    np.testing.assert_allclose(outs[0], TD_1, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(outs[1], TD_1, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(outs[2], [11.0, 18.199999], rtol=1e-6)


def test_tensordot_errors():
    with tf.Graph().as_default():
        a, b = tf.constant(TD_A), tf.constant(TD_B)
        for axes, error, msg in [
                ([[1]], ValueError, "must be an integer or have length 2"),
                ([[0, 1], [0]], ValueError, "Different number of contraction axes"),
                (4, ValueError, "must not be larger than the number of dimensions"),
                (-1, ValueError, "must be at least 0"),
                ([[3], [0]], IndexError, "axis 3 is out of range"),
                ([[0], [0]], ValueError, "Dimensions must be equal, but are 2 and 4")]:
            with pytest.raises(error, match=msg):
                tf.tensordot(a, b, axes)
        with pytest.raises(ValueError, match="needs inputs of known rank"):
            tf.tensordot(tf.placeholder(tf.float32), b, 1)


EIN_M = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], np.float32)
EIN_N = np.array([[1.0, -1.0], [0.5, 2.0], [3.0, 0.0]], np.float32)
EIN_V = np.array([2.0, -1.0, 0.5], np.float32)
EIN_T = np.arange(12, dtype=np.float32).reshape(2, 2, 3) / 4
EIN_NN = np.stack([EIN_N, 2 * EIN_N])
EIN_BATCH = [[[1.625, 0.5], [5.0, 1.25]], [[16.75, 4.0], [23.5, 5.5]]]
EINSUM_CASES = [
    ("ij,jk->ik", (EIN_M, EIN_N), [[11.0, 3.0], [24.5, 6.0]]),
    ("ij,jk", (EIN_M, EIN_N), [[11.0, 3.0], [24.5, 6.0]]),
    ("ab , bc -> ac", (EIN_M, EIN_N), [[11.0, 3.0], [24.5, 6.0]]),
    ("ij,jk->ki", (EIN_M, EIN_N), [[11.0, 24.5], [3.0, 6.0]]),
    ("ij->j", (EIN_M,), [5.0, 7.0, 9.0]),
    ("ij->", (EIN_M,), 21.0),
    ("ij", (EIN_M,), EIN_M),
    ("ji", (EIN_M,), EIN_M.T),
    ("i,j->ij", (EIN_V, EIN_V[:2]), [[4.0, -2.0], [-2.0, 1.0], [1.0, -0.5]]),
    ("i,i->", (EIN_V, EIN_V), 5.25),
    ("ij,j->i", (EIN_M, EIN_V), [1.5, 6.0]),
    ("bij,bjk->bik", (EIN_T, EIN_NN), EIN_BATCH),
    ("...ij,...jk->...ik", (EIN_T, EIN_NN), EIN_BATCH),
    ("...j,j->...", (EIN_T, EIN_V), [[0.0, 1.125], [2.25, 3.375]]),
    ("i...->...", (EIN_T,), [[1.5, 2.0, 2.5], [3.0, 3.5, 4.0]]),
    ("ij,jk,kl->il", (EIN_M, EIN_N, EIN_M[:, :2]), [[23.0, 37.0], [48.5, 79.0]]),
    ("ii->i", (EIN_M[:, :2],), [1.0, 5.0]),
    ("ii", (EIN_M[:, :2],), 6.0),   # a trace (TF1 had only this one of the diagonal equations)
]


@pytest.mark.parametrize("equation,inputs,expected", EINSUM_CASES, ids=[c[0] for c in EINSUM_CASES])
def test_einsum_matches_tf(equation, inputs, expected):
    with tf.Graph().as_default():
        out = tf.einsum(equation, *[tf.constant(v) for v in inputs])
        assert out.op.type == "Einsum" and out.dtype == tf.float32
        assert out.get_shape().as_list() == list(np.shape(expected))
        np.testing.assert_allclose(_run(out), expected, rtol=1e-6)


def test_einsum_ints_static_shapes_and_name():
    with tf.Graph().as_default():
        ints = tf.einsum("ij,j->i", np.arange(6, dtype=np.int32).reshape(2, 3),
                         np.array([1, 2, 3], np.int32))
        assert ints.dtype == tf.int32
        np.testing.assert_array_equal(_run(ints), [8, 26])
        e = tf.einsum("ij,jk->ik", tf.placeholder(tf.float32, [None, 3]),
                      tf.placeholder(tf.float32, [3, None]))
        assert e.get_shape().as_list() == [None, None]
        e = tf.einsum("...ij,jk->...ik", tf.placeholder(tf.float32, [5, None, 3]),
                      tf.placeholder(tf.float32, [3, 2]), name="proj")
        assert e.get_shape().as_list() == [5, None, 2] and e.op.name == "proj"
        # a size known on one input only fills in the output's
        e = tf.einsum("ij,jk->ik", tf.placeholder(tf.float32, [None, 3]), tf.constant(EIN_N))
        assert e.get_shape().as_list() == [None, 2]


@pytest.mark.parametrize("equation,n,msg", [
    ("ij,jk->ik->", 2, "Indices have incorrect format"),
    ("i1,jk->ik", 2, "Indices have incorrect format"),
    ("ij,jk->ik", 1, 'Got 1 arguments for equation "ij,jk->ik", expecting 2'),
    ("ij->k", 1, "output label k is in no input"),
    ("ij->ii", 1, "output label i appears more than once"),
    ("i.j->ij", 1, "Period '.' found outside of an ellipsis"),
    ("...i...->i", 1, "more than one '...'"),
    ("ijk->ik", 1, "has rank 2, not 3"),
])
def test_einsum_malformed_equations_raise_value_error(equation, n, msg):
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=re.escape(msg)):
            tf.einsum(equation, *[tf.constant(EIN_M)] * n)


def test_einsum_dimension_and_dtype_errors():
    with tf.Graph().as_default():
        m = tf.constant(EIN_M)
        with pytest.raises(ValueError, match="dimension mismatch on axis j: found 3 and 2"):
            tf.einsum("ij,jk->ik", m, m)
        with pytest.raises(TypeError, match="does not match type float32"):
            tf.einsum("ij,jk->ik", m, tf.constant(EIN_N, tf.float64))
        with pytest.raises(ValueError, match="rank is unknown"):
            tf.einsum("...i->i", tf.placeholder(tf.float32))
        # sizes unknown when built are checked when the op runs (numpy would broadcast a 1)
        a = tf.placeholder(tf.float32, [2, None])
        y = tf.einsum("ij,jk->ik", a, tf.constant(EIN_N))
        with pytest.raises(tf.errors.InvalidArgumentError, match="mismatch on axis j"):
            _run(y, {a: np.ones((2, 1), np.float32)})
        with pytest.raises(TypeError, match="Expected: name"):
            tf.einsum("ij", m, optimize="greedy")


# -- bincount, histogram_fixed_width --------------------------------------------------------------
@pytest.mark.parametrize("kwargs,dtype,expected", [
    (dict(arr=[1, 1, 3, 0, 5, 1]), np.int32, [1, 3, 0, 1, 0, 1]),
    (dict(arr=np.array([], np.int32)), np.int32, []),
    (dict(arr=[1, 1, 3], minlength=6), np.int32, [0, 2, 0, 1, 0, 0]),
    (dict(arr=[1, 1, 3, 0, 5, 1], maxlength=3), np.int32, [1, 3, 0]),
    (dict(arr=[[1, 1], [3, 0]], weights=np.array([[0.5, 1.25], [2.0, -1.0]], np.float32)),
     np.float32, [-1.0, 1.75, 0.0, 2.0]),
    (dict(arr=[1, 1, 3, 0], weights=np.array([0.5, 1.25, 2.0, -1.0]), maxlength=2),
     np.float64, [-1.0, 1.75]),
    (dict(arr=[2, 2], dtype=tf.float32), np.float32, [0.0, 0.0, 2.0]),
    (dict(arr=[2, 2], dtype=tf.int64), np.int64, [0, 0, 2]),
])
def test_bincount_matches_tf(kwargs, dtype, expected):
    with tf.Graph().as_default():
        out = tf.bincount(**kwargs)
        assert out.op.type == "Bincount" and out.get_shape().as_list() == [None]
        assert out.dtype == tf.as_dtype(dtype)
        value = _run(out)
    assert value.dtype == dtype
    np.testing.assert_array_equal(value, expected)


def test_bincount_errors():
    with tf.Graph().as_default():
        with pytest.raises(tf.errors.InvalidArgumentError, match="must be non-negative"):
            _run(tf.bincount([1, -1]))
        with pytest.raises(ValueError, match="requested dtype int32 for Tensor with dtype int64"):
            tf.bincount(tf.constant([1, 2], tf.int64))   # TF1 takes int32 values only
        with pytest.raises(tf.errors.InvalidArgumentError, match="same shape"):
            _run(tf.bincount([1, 2], weights=[1.0, 2.0, 3.0]))



def test_bincount_is_a_host_op():
    from zps.testing import fake_cupy
    with fake_cupy.installed(num_gpus=1), tf.Graph().as_default():
        with tf.device("/gpu:0"):
            counts = tf.bincount([1, 2, 2])
        with pytest.raises(tf.errors.InvalidArgumentError, match="Bincount has no GPU kernel"):
            _run(counts)
        config = tf.ConfigProto(allow_soft_placement=True)
        with tf.Session(config=config) as sess:
            np.testing.assert_array_equal(sess.run(counts), [0, 1, 2])


@pytest.mark.parametrize("values,value_range,nbins,dtype,expected", [
    ([-1.0, 0.0, 1.5, 2.0, 5.0, 15.0], [0.0, 5.0], 5, tf.int32, [2, 1, 1, 0, 2]),
    (np.linspace(-3, 3, 41), np.array([-2.5, 2.5]), 7, tf.int32, [9, 4, 5, 5, 5, 4, 9]),
    (np.array([0, 1, 2, 3, 4, 5, 9, -3], np.int32), np.array([0, 10], np.int32), 4, tf.int64,
     [4, 2, 1, 1]),
    (np.array([0.3, 0.6, 0.9, 0.1], np.float32), [0.0, 0.9], 3, tf.int32, [1, 1, 2]),
])
def test_histogram_fixed_width_matches_tf(values, value_range, nbins, dtype, expected):
    with tf.Graph().as_default():
        out = tf.histogram_fixed_width(values, value_range, nbins=nbins, dtype=dtype)
        assert out.op.type == "HistogramFixedWidth" and out.op.name == "histogram_fixed_width"
        assert out.get_shape().as_list() == [nbins] and out.dtype == dtype
        value = _run(out)
    assert value.dtype == dtype.as_numpy_dtype
    np.testing.assert_array_equal(value, expected)


def test_histogram_fixed_width_bin_edges_as_tf_on_a_dense_grid():
    # 2001 float32 values: many fall on or next to a bin edge, where the order of TF's float32
    # and double steps decides the bin.
    with tf.Graph().as_default():
        h = tf.histogram_fixed_width(np.linspace(-1, 1, 2001, dtype=np.float32),
                                     np.array([-0.7, 0.3], np.float32), nbins=37)
        h_int = tf.histogram_fixed_width(np.arange(-50, 50, dtype=np.int64) * 7,
                                         np.array([-100, 200], np.int64), nbins=9)
        out, out_int = _run([h, h_int])
    np.testing.assert_array_equal(out, [328] + [27] * 35 + [728])
    np.testing.assert_array_equal(out_int, [41, 5, 4, 5, 5, 5, 5, 4, 26])


def test_histogram_fixed_width_default_bins_shapes_and_errors():
    with tf.Graph().as_default():
        out = _run(tf.histogram_fixed_width(np.array([0.05, 0.995, 0.5], np.float32), [0.0, 1.0]))
        assert out.shape == (100,) and out.sum() == 3 and out[5] == out[50] == out[99] == 1
        n = tf.placeholder(tf.int32, [])
        h = tf.histogram_fixed_width([1.0], [0.0, 1.0], nbins=n)
        assert h.get_shape().as_list() == [None]
        with pytest.raises(tf.errors.InvalidArgumentError, match="nbins should be a positive"):
            _run(h, {n: 0})
        with pytest.raises(ValueError, match="Requires nbins > 0"):
            tf.histogram_fixed_width([1.0], [0.0, 1.0], nbins=0)
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"value_range\[0\] < value_range\[1\]"):
            _run(tf.histogram_fixed_width([1.0], [2.0, 1.0], nbins=3))
        with pytest.raises(TypeError, match="does not match type float32"):
            tf.histogram_fixed_width(tf.constant([1.0]), tf.constant([0, 1]))


def test_histogram_fixed_width_on_gpu_matches_the_cpu():
    from zps.testing import fake_cupy
    values = np.random.default_rng(3).standard_normal(50)

    def hist(device):
        with tf.Graph().as_default():
            with tf.device(device):
                h = tf.histogram_fixed_width(values, [-1.0, 1.0], nbins=6)
            return _run(h)
    with fake_cupy.installed(num_gpus=1):
        np.testing.assert_array_equal(hist("/gpu:0"), hist("/cpu:0"))


# -- log_sigmoid -----------------------------------------------------------------------------------
def test_log_sigmoid_matches_tf_in_both_tails():
    with tf.Graph().as_default():
        y = tf.log_sigmoid(np.array([-1000.0, -20.0, -1.0, 0.0, 1.0, 20.0, 1000.0], np.float32))
        y64 = tf.log_sigmoid(np.array([-50.0, 0.5, 50.0]))
        assert (y.op.name, y.op.type, y.dtype) == ("LogSigmoid", "Neg", tf.float32)
        x = tf.constant([-3.0, 0.0, 2.5], tf.float64)
        g, = tf.gradients(tf.reduce_sum(tf.log_sigmoid(x)), [x])
        out, out64, grad = _run([y, y64, g])
    np.testing.assert_allclose(out, [-1000.0, -20.0, -1.3132616, -0.69314718, -0.31326169,
                                     -2.0611537e-09, -0.0], rtol=1e-6)
    np.testing.assert_allclose(out64, [-50.0, -0.47407698418010669, -1.9287498479639178e-22],
                               rtol=1e-14)
    np.testing.assert_allclose(grad, [0.9525741268224333, 0.5, 0.07585818002124356], rtol=1e-14)
    with tf.Graph().as_default(), pytest.raises(TypeError, match="DataType int32"):
        tf.log_sigmoid(np.array([1], np.int32))


def test_confusion_matrix():
    with tf.Graph().as_default():
        labels, predictions = tf.placeholder(tf.int32, [None]), tf.placeholder(tf.int32, [None])
        counted = tf.confusion_matrix(labels, predictions)
        bounded = tf.confusion_matrix(labels, predictions, num_classes=3)
        weighted = tf.confusion_matrix([1, 2, 4], [2, 2, 4], num_classes=5, dtype=tf.float32,
                                       weights=[1.5, 2.0, 3.0])
        squeezed = tf.confusion_matrix([[1], [2]], tf.constant([2.7, 2.0]), num_classes=3)
        assert counted.name == "confusion_matrix/ScatterNd:0" and counted.dtype == tf.int32
        assert counted.get_shape().as_list() == [None, None]
        assert bounded.get_shape().as_list() == [3, 3] and weighted.dtype == tf.float32
        with pytest.raises(ValueError, match="incompatible"):
            tf.confusion_matrix([1, 2], [0, 1, 2])
        with pytest.raises(ValueError, match=r"\(weights\) are incompatible"):
            tf.confusion_matrix([1, 2], [0, 1], weights=[1.0, 2.0, 3.0])
        with tf.Session() as sess:
            feed = {labels: [1, 2, 4], predictions: [2, 2, 4]}
            expected = np.zeros((5, 5), np.int32)
            expected[1, 2] = expected[2, 2] = expected[4, 4] = 1
            np.testing.assert_array_equal(sess.run(counted, feed), expected)
            np.testing.assert_array_equal(sess.run(weighted), expected * [[0], [1.5], [2], [0],
                                                                          [3]])
            np.testing.assert_array_equal(sess.run(squeezed), [[0, 0, 0], [0, 0, 1], [0, 0, 1]])
            for lab, pred, message in [([1, -2], [0, 1], "`labels` contains negative values"),
                                       ([1, 2], [0, 3], "`predictions` out of bound"),
                                       ([1, 5], [0, 1], "`labels` out of bound")]:
                with pytest.raises(tf.errors.InvalidArgumentError, match=message):
                    sess.run(bounded, {labels: lab, predictions: pred})
