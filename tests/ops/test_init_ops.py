"""Initializers: values, TF1's constant layout rules, distributions and fan computations."""

import math

import numpy as np
import pytest

import zps as tf
from zps.ops import init_ops

N = 100_000


def _value(init, shape, dtype=None, **kwargs):
    with tf.Graph().as_default():
        t = init(shape, dtype=dtype, **kwargs) if dtype is not None else init(shape, **kwargs)
        with tf.Session() as sess:
            return sess.run(t)


# -- constants -----------------------------------------------------------------------------------
def test_zeros_and_ones():
    z = _value(tf.zeros_initializer(), [2, 3])
    assert z.dtype == np.float32 and z.shape == (2, 3) and not z.any()
    o = _value(tf.ones_initializer(dtype=tf.int64), (4,))
    assert o.dtype == np.int64 and o.tolist() == [1, 1, 1, 1]
    assert _value(tf.zeros_initializer(), [2], dtype=tf.bool).tolist() == [False, False]
    assert _value(tf.ones_initializer(), tf.TensorShape([1, 1]), dtype=tf.float64).dtype == np.float64


def test_zeros_with_a_dynamic_shape():
    with tf.Graph().as_default():
        n = tf.placeholder(tf.int32, [2])
        t = tf.zeros_initializer()(n)
        with tf.Session() as sess:
            assert sess.run(t, {n: [2, 5]}).shape == (2, 5)


def test_large_filled_constants_stay_small_in_the_graph():
    with tf.Graph().as_default() as g:
        t = tf.constant_initializer(0.5)([300, 400])
        assert t.op.type == "Fill" and t.get_shape().as_list() == [300, 400]
        assert all(op.get_attr("value").size <= 2 for op in g.get_operations() if op.type == "Const")
        with tf.Session() as sess:
            v = sess.run(t)
    assert v.shape == (300, 400) and (v == 0.5).all()


def test_constant_layout_rules():
    value = [0, 1, 2, 3, 4, 5, 6, 7]
    init = tf.constant_initializer(value)
    np.testing.assert_array_equal(_value(init, [2, 4]), np.arange(8).reshape(2, 4))
    # Fewer values than elements: the last one repeats (TF1's rule).
    np.testing.assert_array_equal(_value(init, [3, 4]),
                                  [[0, 1, 2, 3], [4, 5, 6, 7], [7, 7, 7, 7]])
    np.testing.assert_array_equal(_value(tf.constant_initializer(2.5), [2, 2]), np.full((2, 2), 2.5))
    np.testing.assert_array_equal(_value(tf.constant_initializer(np.eye(2)), [2, 2]), np.eye(2))
    v = _value(tf.constant_initializer([1, 2], dtype=tf.int32), [3])
    assert v.dtype == np.int32 and v.tolist() == [1, 2, 2]


def test_constant_errors():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="Too many elements provided. Needed at most 6, but "
                                             "received 8"):
            tf.constant_initializer(list(range(8)))([2, 3])
        with pytest.raises(TypeError, match=r"Expected Tensor's shape: \(3, 4\), got \(8,\)"):
            tf.constant_initializer(list(range(8)), verify_shape=True)([3, 4])
        with pytest.raises(TypeError, match="Invalid type for initial value"):
            tf.constant_initializer({"a": 1})
        with pytest.raises(TypeError, match="constant_initializer: cannot make a int32 tensor"):
            tf.constant_initializer("abc")([2], dtype=tf.int32)
        with pytest.raises(TypeError, match="a non-integer value would be truncated"):
            tf.constant_initializer(0.5, dtype=tf.int32)([2])
        with pytest.raises(ValueError, match="needs a fully defined shape"):
            tf.constant_initializer(1.0)([None, 2])


# -- random initializers --------------------------------------------------------------------------
def test_random_uniform_initializer():
    v = _value(tf.random_uniform_initializer(-0.5, 1.5, seed=1), [N])
    assert v.min() >= -0.5 and v.max() < 1.5 and abs(v.mean() - 0.5) < 0.02
    i = _value(tf.random_uniform_initializer(0, 3, seed=1, dtype=tf.int32), [1000])
    assert i.dtype == np.int32 and set(i.tolist()) == {0, 1, 2}


def test_random_normal_initializer():
    v = _value(tf.random_normal_initializer(1.0, 0.1, seed=2), [N])
    assert abs(v.mean() - 1.0) < 0.003 and abs(v.std() - 0.1) < 0.003


def test_truncated_normal_initializer():
    v = _value(tf.truncated_normal_initializer(0.0, 0.1, seed=3), [N], dtype=tf.float64)
    assert v.dtype == np.float64
    assert np.abs(v).max() < 0.2
    assert abs(v.std() - 0.1 * 0.87962566103423978) < 0.002


def test_seeded_initializer_is_reproducible():
    a = _value(tf.glorot_normal_initializer(seed=5), [3, 4])
    b = _value(tf.glorot_normal_initializer(seed=5), [3, 4])
    c = _value(tf.glorot_normal_initializer(seed=6), [3, 4])
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_float_only_initializers_reject_other_dtypes():
    for make in (tf.random_normal_initializer, tf.truncated_normal_initializer,
                 tf.glorot_uniform_initializer, tf.variance_scaling_initializer):
        with pytest.raises(ValueError, match="Expected floating point type, got int32"):
            make(dtype=tf.int32)
    with tf.Graph().as_default(), pytest.raises(ValueError, match="Expected floating point type"):
        tf.glorot_uniform_initializer()([2, 2], dtype=tf.int64)


# -- variance scaling -----------------------------------------------------------------------------
@pytest.mark.parametrize("shape,fans", [
    ([], (1, 1)),
    ([7], (7, 7)),
    ([3, 5], (3, 5)),
    ([3, 3, 16, 32], (9 * 16, 9 * 32)),
    ([2, 2, 2, 4, 6], (8 * 4, 8 * 6)),
])
def test_compute_fans(shape, fans):
    assert init_ops._compute_fans(shape) == fans


SHAPE = [4, 5, 20, 50]  # a conv kernel: fan_in = 20*20 = 400, fan_out = 20*50 = 1000


@pytest.mark.parametrize("mode,n", [("fan_in", 400), ("fan_out", 1000), ("fan_avg", 700)])
def test_variance_scaling_uniform(mode, n):
    v = _value(tf.variance_scaling_initializer(2.0, mode, "uniform", seed=1), SHAPE)
    limit = math.sqrt(3.0 * 2.0 / n)
    assert np.abs(v).max() <= limit and np.abs(v).max() > 0.99 * limit
    assert abs(v.var() - 2.0 / n) < 0.03 * 2.0 / n


@pytest.mark.parametrize("distribution", ["truncated_normal", "normal"])
def test_variance_scaling_truncated_normal(distribution):
    v = _value(tf.variance_scaling_initializer(3.0, "fan_in", distribution, seed=2), SHAPE)
    stddev = math.sqrt(3.0 / 400) / 0.87962566103423978
    assert np.abs(v).max() < 2 * stddev
    assert abs(v.std() - math.sqrt(3.0 / 400)) < 0.02 * math.sqrt(3.0 / 400)


def test_variance_scaling_untruncated_normal_and_default():
    v = _value(tf.variance_scaling_initializer(1.0, "fan_out", "untruncated_normal", seed=3), SHAPE)
    assert abs(v.std() - math.sqrt(1.0 / 1000)) < 0.02 * math.sqrt(1.0 / 1000)
    assert np.abs(v).max() > 2 * math.sqrt(1.0 / 1000)  # not truncated
    default = tf.variance_scaling_initializer()
    assert (default.scale, default.mode, default.distribution) == (1.0, "fan_in", "truncated_normal")


def test_variance_scaling_errors():
    with pytest.raises(ValueError, match="`scale` must be positive float"):
        tf.variance_scaling_initializer(0.0)
    with pytest.raises(ValueError, match="Invalid `mode` argument: 'fan'"):
        tf.variance_scaling_initializer(mode="fan")
    with pytest.raises(ValueError, match="Invalid `distribution` argument: 'gamma'"):
        tf.variance_scaling_initializer(distribution="gamma")


def test_glorot_uniform_limit():
    v = _value(tf.glorot_uniform_initializer(seed=4), [200, 300])
    limit = math.sqrt(6.0 / (200 + 300))
    assert np.abs(v).max() <= limit and np.abs(v).max() > 0.99 * limit
    assert abs(v.mean()) < 0.01 * limit


def test_glorot_normal_stddev():
    v = _value(tf.glorot_normal_initializer(seed=4), [200, 300])
    stddev = math.sqrt(2.0 / (200 + 300))
    assert abs(v.std() - stddev) < 0.02 * stddev
    assert np.abs(v).max() < 2 * stddev / 0.87962566103423978


def test_uniform_unit_scaling():
    v = _value(tf.uniform_unit_scaling_initializer(factor=1.5, seed=1), [3, 3, 10, 8])
    limit = math.sqrt(3.0 / 90) * 1.5
    assert np.abs(v).max() <= limit and np.abs(v).max() > 0.95 * limit


# -- tf.initializers ------------------------------------------------------------------------------
def test_initializers_namespace():
    ns = tf.initializers
    assert ns.zeros is tf.zeros_initializer and ns.glorot_uniform is tf.glorot_uniform_initializer
    assert not _value(ns.zeros(), [2]).any()
    he = ns.he_normal(seed=1)
    assert (he.scale, he.mode, he.distribution) == (2.0, "fan_in", "truncated_normal")
    assert (ns.he_uniform().scale, ns.he_uniform().distribution) == (2.0, "uniform")
    assert (ns.lecun_normal().scale, ns.lecun_uniform().distribution) == (1.0, "uniform")
    v = _value(ns.lecun_uniform(seed=2), [50, 10])
    assert np.abs(v).max() <= math.sqrt(3.0 / 50)
    np.testing.assert_array_equal(_value(ns.identity(gain=2.0), [2, 3]), 2 * np.eye(2, 3))
    with tf.Graph().as_default(), pytest.raises(ValueError, match="only be used for 2D matrices"):
        ns.identity()([2, 2, 2])
    with tf.Graph().as_default():
        v = tf.Variable(1.0)
        init = ns.global_variables()
        with tf.Session() as sess:
            sess.run(init)
            assert sess.run(v) == 1.0


def test_config_round_trip():
    init = tf.random_normal_initializer(mean=1.0, stddev=2.0, seed=3, dtype=tf.float64)
    again = tf.random_normal_initializer.from_config(init.get_config())
    assert (again.mean, again.stddev, again.seed, again.dtype) == (1.0, 2.0, 3, tf.float64)
    g = tf.glorot_uniform_initializer.from_config(tf.glorot_uniform_initializer(seed=1).get_config())
    assert (g.seed, g.mode, g.distribution) == (1, "fan_avg", "uniform")
    assert tf.constant_initializer([1, 2]).get_config() == {"value": [1, 2], "dtype": "float32"}


# -- orthogonal ----------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [[4, 4], [6, 3], [3, 6], [2, 3, 4], [3, 2, 2, 8]])
def test_orthogonal_is_orthogonal_times_the_gain(shape):
    w = _value(tf.orthogonal_initializer(gain=2.0, seed=3), shape)
    assert w.shape == tuple(shape) and w.dtype == np.float32
    m = w.reshape(-1, shape[-1])   # rank > 2: [product of the leading dims, last]
    gram = m.T @ m if m.shape[0] >= m.shape[1] else m @ m.T
    np.testing.assert_allclose(gram, 4.0 * np.eye(min(m.shape)), atol=1e-5)


def test_orthogonal_dtypes_config_errors_and_variables():
    w = _value(tf.initializers.orthogonal(seed=1), [3, 3], dtype=tf.float64)
    assert w.dtype == np.float64
    np.testing.assert_allclose(w @ w.T, np.eye(3), atol=1e-12)
    assert tf.initializers.orthogonal is tf.orthogonal_initializer
    init = tf.orthogonal_initializer(gain=0.5, seed=7)
    assert init.get_config() == {"gain": 0.5, "seed": 7, "dtype": "float32"}
    again = tf.orthogonal_initializer.from_config(init.get_config())
    np.testing.assert_array_equal(_value(again, [5, 2]), _value(init, [5, 2]))  # seeded
    with pytest.raises(ValueError, match="at least two-dimensional. Received shape=\\[3\\]"):
        tf.orthogonal_initializer()([3])
    with pytest.raises(ValueError, match="floating point"):
        tf.orthogonal_initializer(dtype=tf.int32)
    with tf.Graph().as_default():
        v = tf.get_variable("v", [3, 5], initializer=tf.orthogonal_initializer())
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            value = sess.run(v)
    np.testing.assert_allclose(value @ value.T, np.eye(3), atol=1e-5)
