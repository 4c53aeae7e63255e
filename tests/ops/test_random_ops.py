"""Random ops: TF1's seed rules, per-op generators across runs and sessions, distributions."""

import numpy as np
import pytest

import zps as tf
from zps.framework.registry import get_op_def
from zps.ops import random_ops

N = 100_000


def _run(t, feed=None):
    with tf.Session() as sess:
        return sess.run(t, feed)


# -- seeds ---------------------------------------------------------------------------------------
def test_get_seed_rules():
    with tf.Graph().as_default() as g:
        assert tf.get_seed(None) == (None, None)
        assert tf.get_seed(7) == (random_ops.DEFAULT_GRAPH_SEED, 7)
        tf.set_random_seed(42)
        assert g.seed == 42
        tf.constant(1.0)
        assert tf.get_seed(None) == (42, g.version)
        first = tf.get_seed(None)
        tf.constant(2.0)
        assert tf.get_seed(None) != first  # each new op gets its own stream
        assert tf.get_seed(5) == (42, 5)
        assert tf.get_seed(2**31 - 1 + 3) == (42, 3)  # truncated to 31 bits
        tf.set_random_seed(0)
        assert tf.get_seed(0) == (0, 2**31 - 1)  # (0, 0) would mean "nondeterministic"


def test_op_seed_reproduces_across_sessions_and_graphs():
    values = []
    for _ in range(2):
        with tf.Graph().as_default():
            x = tf.random_normal([5], seed=3)
            with tf.Session() as sess:
                values.append([sess.run(x), sess.run(x)])
            with tf.Session() as sess:
                values.append([sess.run(x), sess.run(x)])
    for run in values[1:]:
        np.testing.assert_array_equal(run, values[0])
    assert not np.array_equal(values[0][0], values[0][1])  # the sequence moves on between runs


def test_graph_seed_gives_distinct_reproducible_streams():
    with tf.Graph().as_default():
        tf.set_random_seed(1234)
        a = tf.random_uniform([4])
        b = tf.random_uniform([4])
        with tf.Session() as sess:
            a1, b1 = sess.run([a, b])
            a2 = sess.run(a)
        with tf.Session() as sess:
            a3, b3 = sess.run([a, b])
    assert not np.array_equal(a1, b1)
    assert not np.array_equal(a1, a2)
    np.testing.assert_array_equal(a1, a3)
    np.testing.assert_array_equal(b1, b3)


def test_unseeded_ops_differ_between_sessions_and_runs():
    with tf.Graph().as_default():
        x = tf.random_uniform([8])
        with tf.Session() as sess:
            r1, r2 = sess.run(x), sess.run(x)
        r3 = _run(x)
    assert not np.array_equal(r1, r2)
    assert not np.array_equal(r1, r3)


def test_seed_attrs_and_op_defs():
    with tf.Graph().as_default():
        x = tf.random_normal([2], stddev=2.0, seed=9, name="noise")
        rnd = x.op.inputs[0].op
        assert (rnd.type, rnd.get_attr("seed"), rnd.get_attr("seed2")) == (
            "RandomStandardNormal", random_ops.DEFAULT_GRAPH_SEED, 9)
        assert (x.op.name, x.op.type, rnd.name) == ("noise", "Mul", "noise/RandomStandardNormal")
        y = tf.random_uniform([2])
        assert (y.op.type, y.op.name, y.op.get_attr("seed"), y.op.get_attr("seed2")) == (
            "RandomUniform", "random_uniform", 0, 0)
    for op_type in ("RandomStandardNormal", "TruncatedNormal", "RandomUniform", "RandomUniformInt",
                    "RandomShuffle", "Multinomial"):
        opdef = get_op_def(op_type)
        assert opdef.stateful and opdef.grad_fn is None and opdef.needs_op_name


# -- distributions -------------------------------------------------------------------------------
def test_random_normal_statistics():
    with tf.Graph().as_default():
        x = tf.random_normal([N], mean=3.0, stddev=2.0, seed=1)
        assert x.get_shape().as_list() == [N] and x.dtype == tf.float32
        v = _run(x)
    assert v.dtype == np.float32
    assert abs(v.mean() - 3.0) < 0.03
    assert abs(v.std() - 2.0) < 0.03


def test_truncated_normal_stays_within_two_stddev():
    with tf.Graph().as_default():
        v = _run(tf.truncated_normal([N], mean=-1.0, stddev=0.5, dtype=tf.float64, seed=2))
    assert v.dtype == np.float64
    assert np.abs(v + 1.0).max() < 1.0
    assert abs(v.mean() + 1.0) < 0.01
    assert abs(v.std() - 0.5 * 0.87962566103423978) < 0.01


def test_random_uniform_float_statistics():
    with tf.Graph().as_default():
        v = _run(tf.random_uniform([N], minval=-2.0, maxval=6.0, seed=3))
    assert v.dtype == np.float32
    assert v.min() >= -2.0 and v.max() < 6.0
    assert abs(v.mean() - 2.0) < 0.05
    assert abs(v.std() - 8.0 / np.sqrt(12.0)) < 0.05


@pytest.mark.parametrize("dtype", [tf.int32, tf.int64])
def test_random_uniform_int(dtype):
    with tf.Graph().as_default():
        x = tf.random_uniform([N], minval=-3, maxval=4, dtype=dtype, seed=4)
        v = _run(x)
    assert x.dtype == dtype and v.dtype == dtype.as_numpy_dtype
    assert sorted(set(v.tolist())) == list(range(-3, 4))
    assert abs(v.mean()) < 0.05


def test_random_uniform_default_is_one_op_in_unit_interval():
    with tf.Graph().as_default() as g:
        x = tf.random_uniform([3, 4])
        assert [op.type for op in g.get_operations()] == ["Const", "RandomUniform"]
        v = _run(x)
    assert v.shape == (3, 4) and v.min() >= 0.0 and v.max() < 1.0


def test_tensor_bounds_and_float16():
    with tf.Graph().as_default():
        lo = tf.placeholder(tf.float32, [])
        x = tf.random_uniform([1000], minval=lo, maxval=lo + 1.0, seed=5)
        v = _run(x, {lo: 10.0})
        h = _run(tf.random_normal([10], dtype=tf.float16, seed=1))
    assert v.min() >= 10.0 and v.max() < 11.0
    assert h.dtype == np.float16


def test_variable_stddev_is_read_each_run():
    with tf.Graph().as_default():
        stddev = tf.Variable(0.0)
        x = tf.random_normal([3], stddev=stddev, seed=1)
        with tf.Session() as sess:
            sess.run(stddev.initializer)
            assert not sess.run(x).any()
            sess.run(stddev.assign(1.0))
            assert sess.run(x).all()


def test_dynamic_shape_from_a_tensor():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3])
        noise = tf.random_normal(tf.shape(x))
        n = tf.placeholder(tf.int32, [])
        mixed = tf.random_uniform([n, 2])
        assert mixed.get_shape().ndims == 2
        with tf.Session() as sess:
            assert sess.run(noise, {x: np.zeros((5, 3))}).shape == (5, 3)
            assert sess.run(mixed, {n: 4}).shape == (4, 2)


def test_static_shapes():
    with tf.Graph().as_default():
        assert tf.truncated_normal((2, 3)).get_shape().as_list() == [2, 3]
        assert tf.random_uniform(tf.TensorShape([4])).get_shape().as_list() == [4]
        assert tf.random_normal([]).get_shape().as_list() == []


def test_random_op_errors():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="Must specify maxval for integer dtype int32"):
            tf.random_uniform([2], dtype=tf.int32)
        with pytest.raises(ValueError, match="Invalid dtype bool"):
            tf.random_uniform([2], dtype=tf.bool)
        with pytest.raises(ValueError, match="random_normal needs a floating point dtype.*int32"):
            tf.random_normal([2], dtype=tf.int32)
        with pytest.raises(ValueError, match="non-negative"):
            tf.truncated_normal([2, -1])
        with pytest.raises(ValueError, match="partially known shape"):
            tf.random_normal(tf.TensorShape([None, 2]))
        with pytest.raises(TypeError, match="must be int32 or int64"):
            tf.random_normal(tf.constant([2.0]))
        bad = tf.random_uniform([2], minval=5, maxval=5, dtype=tf.int32)
        with pytest.raises(tf.errors.InvalidArgumentError, match="Need minval < maxval: 5 >= 5"):
            _run(bad)
        n = tf.placeholder(tf.int32, [None])
        with pytest.raises(tf.errors.InvalidArgumentError, match="must be non-negative"):
            _run(tf.random_normal(n), {n: [2, -3]})


def test_gradient_flows_to_mean_and_stddev_not_to_the_draw():
    with tf.Graph().as_default():
        mean = tf.constant(1.0)
        stddev = tf.constant(2.0)
        x = tf.random_normal([4], mean=mean, stddev=stddev, seed=1)
        g_mean, g_std = tf.gradients(tf.reduce_sum(x), [mean, stddev])
        with tf.Session() as sess:
            xv, gm, gs = sess.run([x, g_mean, g_std])
    assert gm == 4.0
    np.testing.assert_allclose(gs, ((xv - 1.0) / 2.0).sum(), rtol=1e-5)


# -- random_shuffle, multinomial -----------------------------------------------------------------
def test_random_shuffle_permutes_rows():
    data = np.arange(20).reshape(10, 2)
    with tf.Graph().as_default():
        s = tf.random_shuffle(data, seed=7)
        assert s.get_shape().as_list() == [10, 2]
        with tf.Session() as sess:
            a, b = sess.run(s), sess.run(s)
        c = _run(s)
    for v in (a, b):
        assert sorted(map(tuple, v)) == sorted(map(tuple, data))
        np.testing.assert_array_equal(v[:, 1] - v[:, 0], 1)  # rows move whole
    assert not np.array_equal(a, b)
    np.testing.assert_array_equal(a, c)


def test_multinomial_frequencies():
    logits = np.log([[0.2, 0.0, 0.8], [0.5, 0.5, 0.0]] + np.float64(1e-300))
    with tf.Graph().as_default():
        s = tf.multinomial(logits.astype(np.float32), 20000, seed=11)
        assert s.get_shape().as_list() == [2, 20000] and s.dtype == tf.int64
        v = _run(s)
        v32 = _run(tf.multinomial([[0.0, 0.0]], 3, output_dtype=tf.int32))
    assert v32.dtype == np.int32 and v32.shape == (1, 3)
    freq0 = np.bincount(v[0], minlength=3) / 20000
    freq1 = np.bincount(v[1], minlength=3) / 20000
    np.testing.assert_allclose(freq0, [0.2, 0.0, 0.8], atol=0.015)
    np.testing.assert_allclose(freq1, [0.5, 0.5, 0.0], atol=0.015)


def test_multinomial_errors():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="logits must be 2-D"):
            tf.multinomial([0.0, 1.0], 2)
        with pytest.raises(TypeError, match="logits must be floating point"):
            tf.multinomial([[0, 1]], 2)
        with pytest.raises(ValueError, match="output_dtype must be int32 or int64"):
            tf.multinomial([[0.0, 1.0]], 2, output_dtype=tf.float32)
