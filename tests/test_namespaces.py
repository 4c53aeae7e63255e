"""TF 1.13-1.15's namespaces (``tf.math``, ``tf.random``, ``tf.debugging``, ``tf.dtypes``,
``tf.io.gfile``) and the other names of existing functions (``tf.train.piecewise_constant_decay``,
``tf.nn.silu`` ...): each alias is the very function it names, and a few real calls. The expected
values were produced with TensorFlow 2.21's ``tf.compat.v1`` and are written in here (TF is not
needed to run these tests)."""

import os

import numpy as np
import pytest

import zps as tf
from zps import gfile
from zps.ops import random_more, special_math_ops

# namespace -> {exported name: the zps object it is} (None: a wrapper, tested by behaviour below)
SAME = {
    "math": {**{n: getattr(tf, n) for n in tf.math.__all__ if hasattr(tf, n)},
             "divide_no_nan": tf.div_no_nan, "in_top_k": tf.nn.in_top_k,
             "l2_normalize": tf.nn.l2_normalize, "log_softmax": tf.nn.log_softmax,
             "softmax": tf.nn.softmax, "softplus": tf.nn.softplus, "softsign": tf.nn.softsign,
             "top_k": tf.nn.top_k, "zero_fraction": tf.nn.zero_fraction,
             # TF 1.15 has these in tf.math only:
             **{n: getattr(special_math_ops, n) for n in (
                 "bessel_i0", "bessel_i0e", "bessel_i1", "bessel_i1e", "cumulative_logsumexp",
                 "erfinv", "multiply_no_nan", "ndtri", "nextafter", "polyval",
                 "reciprocal_no_nan", "reduce_euclidean_norm", "reduce_std", "reduce_variance",
                 "xdivy", "xlog1py", "xlogy")}},
    "random": {"fixed_unigram_candidate_sampler": tf.nn.fixed_unigram_candidate_sampler,
               "get_seed": tf.get_seed,
               "log_uniform_candidate_sampler": tf.nn.log_uniform_candidate_sampler,
               "multinomial": tf.multinomial, "normal": tf.random_normal,
               "set_random_seed": tf.set_random_seed, "shuffle": tf.random_shuffle,
               "truncated_normal": tf.truncated_normal, "uniform": tf.random_uniform,
               "uniform_candidate_sampler": tf.nn.uniform_candidate_sampler,
               "gamma": tf.random_gamma, "poisson": tf.random_poisson,
               "stateless_normal": random_more.stateless_random_normal,
               "stateless_uniform": random_more.stateless_random_uniform,
               **{n: getattr(random_more, n) for n in (
                   "categorical", "fold_in", "split", "stateless_categorical",
                   "stateless_truncated_normal")}},
    "debugging": {**{n: getattr(tf, n) for n in tf.debugging.__all__ if hasattr(tf, n)},
                  "assert_all_finite": None},
    "dtypes": {n: getattr(tf, n) for n in tf.dtypes.__all__},
    "io.gfile": {"GFile": gfile.GFile, **{n: None for n in tf.io.gfile.__all__ if n != "GFile"}},
}

OTHER_NAMES = [
    ("train.piecewise_constant_decay", "train.piecewise_constant"),
    ("nn.conv3d_backprop_filter", "nn.conv3d_backprop_filter_v2"),
    ("nn.depthwise_conv2d_backprop_filter", "nn.depthwise_conv2d_native_backprop_filter"),
    ("nn.depthwise_conv2d_backprop_input", "nn.depthwise_conv2d_native_backprop_input"),
    ("nn.silu", "nn.swish"),
    ("linalg.tensor_diag", "diag"),
    ("linalg.global_norm", "global_norm"),
    ("linalg.l2_normalize", "nn.l2_normalize"),
    ("image.resize", "image.resize_images"),
    ("image.resize_with_crop_or_pad", "image.resize_image_with_crop_or_pad"),
    ("image.transpose", "image.transpose_image"),
    ("sparse.SparseConditionalAccumulator", "SparseConditionalAccumulator"),
]


def _resolve(path):
    obj = tf
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def run(fetch, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetch, feed_dict)


@pytest.fixture(autouse=True)
def graph():
    with tf.Graph().as_default() as g:
        yield g


@pytest.mark.parametrize("namespace", sorted(SAME))
def test_every_exported_name_has_a_case(namespace):
    assert sorted(SAME[namespace]) == sorted(_resolve(namespace).__all__)


@pytest.mark.parametrize("namespace,name", [(ns, n) for ns in sorted(SAME)
                                            for n, o in sorted(SAME[ns].items()) if o is not None])
def test_alias_is_the_same_function(namespace, name):
    assert getattr(_resolve(namespace), name) is SAME[namespace][name]


@pytest.mark.parametrize("alias,original", OTHER_NAMES)
def test_other_names_are_the_same_function(alias, original):
    assert _resolve(alias) is _resolve(original)


def test_namespace_modules_leave_the_dtypes_and_the_stdlib_alone():
    import math
    import random

    from zps.framework import dtypes

    assert dtypes.float32 is tf.float32 is tf.dtypes.float32
    assert isinstance(tf.float32, tf.DType) and tf.dtypes.as_dtype("int64") is tf.int64
    assert math.sqrt(4.0) == 2.0 and hasattr(random, "Random")


def test_math_calls():
    x = tf.constant([[1.0, 5.0, 3.0], [4.0, 2.0, 6.0]])
    y = tf.constant([[0.0, 1.0, 2.0], [1.0, 0.0, 2.0]])
    s, am, dnn, sm, (vals, idx) = run([
        tf.math.reduce_sum(x, axis=1), tf.math.argmax(x, dimension=1),
        tf.math.divide_no_nan(x, y), tf.math.softmax(tf.constant([0.0, np.log(3.0)])),
        tf.math.top_k([3, 1, 2], k=2)])
    np.testing.assert_array_equal(s, [9.0, 12.0])
    assert am.tolist() == [1, 2] and am.dtype == np.int64
    np.testing.assert_array_equal(dnn, [[0.0, 5.0, 1.5], [4.0, 0.0, 3.0]])
    np.testing.assert_allclose(sm, [0.25, 0.75], rtol=1e-6)
    assert vals.tolist() == [3, 2] and idx.tolist() == [0, 2]
    assert run(tf.math.segment_sum([1, 2, 3], [0, 0, 1])).tolist() == [3, 3]


def test_random_calls_follow_the_graph_seed():
    tf.random.set_random_seed(7)
    u = tf.random.uniform([3], minval=1.0, maxval=2.0, seed=1)
    n = tf.random.normal([2, 2], dtype=tf.float64, seed=2)
    first = run([u, n])
    assert first[0].dtype == np.float32 and ((first[0] >= 1.0) & (first[0] < 2.0)).all()
    assert first[1].shape == (2, 2) and first[1].dtype == np.float64
    again = run([u, n])   # a new session replays the seeded streams
    np.testing.assert_array_equal(first[0], again[0])
    np.testing.assert_array_equal(first[1], again[1])
    assert sorted(run(tf.random.shuffle([1, 2, 3, 4])).tolist()) == [1, 2, 3, 4]


def test_debugging_assert_equal_fails_at_run_time():
    x = tf.placeholder(tf.int32, [2])
    check = tf.debugging.assert_equal(x, tf.constant([1, 3]), message="mismatch")
    run(check, {x: [1, 3]})
    with pytest.raises(tf.errors.InvalidArgumentError, match="mismatch"):
        run(check, {x: [1, 2]})


def test_assert_all_finite_takes_both_argument_names():
    assert run(tf.debugging.assert_all_finite(x=[1.0, 2.0], message="m")).tolist() == [1.0, 2.0]
    assert run(tf.debugging.assert_all_finite([3.0], "m")).tolist() == [3.0]
    with pytest.raises(tf.errors.InvalidArgumentError, match="bad input : Tensor had NaN values"):
        run(tf.debugging.assert_all_finite(t=[1.0, np.nan], msg="bad input"))
    with pytest.raises(ValueError, match="Cannot specify both 't' and 'x'"):
        tf.debugging.assert_all_finite(t=[1.0], x=[1.0], msg="m")
    with pytest.raises(ValueError, match="Cannot specify both 'msg' and 'message'"):
        tf.debugging.assert_all_finite(x=[1.0], msg="a", message="b")


def test_dtypes_cast():
    out = run(tf.dtypes.cast([1.7, -1.7], tf.dtypes.int32))
    assert out.tolist() == [1, -1] and out.dtype == np.int32


def test_piecewise_constant_decay():
    step = tf.placeholder(tf.int64, [])
    lr = tf.train.piecewise_constant_decay(step, [1, 2], [1.0, 0.5, 0.1])
    with tf.Session() as sess:
        got = [sess.run(lr, {step: i}) for i in range(4)]
    np.testing.assert_allclose(got, [1.0, 1.0, 0.5, 0.1])


def test_io_gfile_file_operations(tmp_path):
    g = tf.io.gfile
    top = os.path.join(str(tmp_path), "a")
    g.makedirs(os.path.join(top, "b"))
    g.mkdir(top)   # exists already: nothing to do, as TF
    with g.GFile(os.path.join(top, "z.txt"), "w") as f:
        f.write("hi")
    assert g.exists(top) and g.isdir(top) and not g.isdir(os.path.join(top, "z.txt"))
    assert g.listdir(top) == ["b", "z.txt"]
    assert g.glob(os.path.join(top, "*.txt")) == [os.path.join(top, "z.txt")]
    assert g.stat(os.path.join(top, "z.txt")).length == 2
    assert list(g.walk(top, topdown=False)) == [(os.path.join(top, "b"), [], []),
                                                (top, ["b"], ["z.txt"])]
    g.copy(os.path.join(top, "z.txt"), os.path.join(top, "c.txt"))
    with pytest.raises(tf.errors.AlreadyExistsError):
        g.copy(os.path.join(top, "z.txt"), os.path.join(top, "c.txt"))
    g.rename(os.path.join(top, "c.txt"), os.path.join(top, "z.txt"), overwrite=True)
    g.remove(os.path.join(top, "z.txt"))
    with pytest.raises(tf.errors.NotFoundError):
        g.remove(os.path.join(top, "z.txt"))
    with pytest.raises(tf.errors.NotFoundError):
        g.listdir(os.path.join(top, "nope"))
    g.rmtree(top)
    assert not g.exists(top)


def test_io_gfile_walk_reports_a_missing_top_to_onerror(tmp_path):
    missing = os.path.join(str(tmp_path), "nope")
    seen = []
    walker = tf.io.gfile.walk(missing, onerror=seen.append)
    assert seen == []   # a generator: nothing happens before the first next()
    assert list(walker) == []
    assert [type(e) for e in seen] == [tf.errors.NotFoundError] and missing in seen[0].message
    assert list(tf.io.gfile.walk(missing)) == []
