"""The op library on the cupy backend: every op case run on ``/gpu:0`` must match the CPU run.

Without a GPU the cases run on ``zps.testing.fake_cupy`` (numpy storage, cupy's strictness: a numpy
array reaching a cupy operation, an implicit device->host conversion or ``ufunc.at`` fails), so a
kernel that only works on numpy is caught in CI. With real cupy and a GPU (``tools/gpu_check.sh``)
the same cases run against the GPU: ``ZPS_GPU_TESTS=real`` makes a missing GPU an error instead
of falling back to the stand-in.

Each ``GRAD_CASES`` case of tests/ops/test_*.py is built twice, on the CPU and under
``tf.device('/gpu:0')``, and its output and gradients are compared.
"""

import importlib
import os
import pkgutil

import numpy as np
import pytest

import tests.ops
import zps as tf
from zps.testing import fake_cupy
from zps.testing.gradient_checker import case_inputs

REAL = fake_cupy.real_gpu()
if os.environ.get("ZPS_GPU_TESTS") == "real" and not REAL:
    raise RuntimeError("ZPS_GPU_TESTS=real but cupy or a GPU is missing")
RTOL, ATOL = (1e-5, 1e-6) if REAL else (1e-12, 1e-12)


@pytest.fixture(autouse=True)
def gpu_backend(monkeypatch):
    """Real cupy when a GPU is there, else the stand-in with two GPUs, all visible."""
    if REAL:
        yield None
        return
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    with fake_cupy.installed(num_gpus=2) as cupy:
        yield cupy


def _grad_cases():
    cases = []
    for mod in pkgutil.iter_modules(tests.ops.__path__):
        if mod.name.startswith("test_") and mod.name != "test_gpu_ops":
            module = importlib.import_module("tests.ops." + mod.name)
            cases.extend(getattr(module, "GRAD_CASES", []))
    return cases


GRAD_CASES = []   # none of its own: the cases below are the other modules' cases on a GPU
CASES = _grad_cases()


def _run_case(case, device):
    graph = tf.Graph()
    with graph.as_default():
        values, wrt, phs = case_inputs(case)
        with tf.device(device):
            y = tf.convert_to_tensor(case.build(*phs))
            if y.get_shape().ndims is None:   # of unknown rank: the shape it has when run
                with tf.Session(graph=graph) as sess:
                    dims = list(sess.run(y, dict(zip(phs, values))).shape)
            else:
                dims = [d if d is not None else 1 for d in y.get_shape().as_list()]
            direction = np.random.default_rng(0).standard_normal(dims)
            proj = tf.reduce_sum(y * tf.constant(direction.astype(y.dtype.as_numpy_dtype)))
            grads = [tf.convert_to_tensor(g) for g in tf.gradients(proj, [phs[i] for i in wrt])]
        with tf.Session(graph=graph) as sess:
            return sess.run([y] + grads, dict(zip(phs, values)))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_grad_case_on_gpu(case, gpu_backend):
    from zps.ops import cupy_kernels
    if case.op_type in cupy_kernels.CPU_ONLY or case.op_type.startswith(
            cupy_kernels.CPU_ONLY_PREFIXES):
        pytest.skip("%s has no GPU kernel (a host resource op)" % case.op_type)
    expected = _run_case(case, "/cpu:0")
    if gpu_backend is not None:
        fake_cupy.reset_stats()
    got = _run_case(case, "/gpu:0")
    if gpu_backend is not None:
        assert fake_cupy.stats["kernels"] > 0, "nothing ran on the (fake) GPU"
    for e, g in zip(expected, got):
        assert type(g) is type(e), (type(g), type(e))
        np.testing.assert_allclose(g, e, rtol=RTOL, atol=ATOL, err_msg=case.name)


# -- ops outside the gradient cases: integer/boolean outputs, random ops, shape arithmetic -------
_X = np.array([[1.5, -2.0, 0.0], [np.inf, -0.5, 3.25]], np.float32)
_I = np.array([[3, -7, 0], [5, 2, -1]], np.int32)


def _forward_cases():
    return [
        ("compare_cast", lambda x, i: [tf.equal(x, 0.0), tf.not_equal(i, 0), tf.greater(x, -1.0),
                                       tf.less(i, 1), tf.cast(x > 0, tf.int32), tf.cast(i, tf.float64)]),
        ("logical", lambda x, i: [tf.logical_and(x > 0, i > 0), tf.logical_or(x > 0, i > 0),
                                  tf.logical_not(x > 0), tf.reduce_any(x > 2, 1),
                                  tf.reduce_all(i > -10)]),
        ("float_tests", lambda x, i: [tf.is_finite(x), tf.round(x * 1.5), tf.sign(x), tf.ceil(x),
                                      tf.floor(x), tf.erf(tf.clip_by_value(x, -3.0, 3.0))]),
        ("int_math", lambda x, i: [tf.floordiv(i, 3), tf.floormod(i, 4), i * 2 + 1, tf.abs(i),
                                   tf.reduce_sum(i, 0), tf.reduce_prod(i + 10, 1),
                                   tf.count_nonzero(i)]),
        ("index_ops", lambda x, i: [tf.argmax(x, 1), tf.argmin(i, 0), tf.one_hot(i[0] + 7, 12),
                                    tf.where(i > 0), tf.boolean_mask(x, i > 0),
                                    tf.unsorted_segment_sum(x, [1, 1], 3)]),
        ("shape_ops", lambda x, i: [tf.range(2, 11, 3), tf.range(0.0, 1.0, 0.25),
                                    tf.fill(tf.shape(x), 7.0), tf.zeros_like(i), tf.ones_like(x),
                                    tf.tile(i, [2, 1]), tf.slice(x, [0, 1], [2, 2]),
                                    tf.strided_slice(i, [1, 2], [0, 0], [-1, -2]),
                                    tf.reverse(i, [1]), tf.pad(i, [[1, 0], [0, 2]]),
                                    tf.size(x), tf.rank(i)]),
        ("defaults", lambda x, i: [tf.placeholder_with_default(x, [2, 3]) * 2.0,
                                   tf.reduce_logsumexp(tf.where(tf.is_finite(x), x,
                                                                tf.zeros_like(x)), 1)]),
        ("control_const", lambda x, i: [_const_after(x)]),
    ]


def _const_after(x):
    with tf.control_dependencies([tf.reduce_sum(x)]):
        return tf.constant([1.0, 2.0]) * 3.0   # a Const that runs as a kernel (control input)


FORWARD_CASES = _forward_cases()


def _run_forward(build, device):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, _X.shape)
        i = tf.placeholder(tf.int32, _I.shape)
        with tf.device(device):
            out = build(x, i)
        with tf.Session() as sess:
            return sess.run(out, {x: _X, i: _I})


@pytest.mark.parametrize("name,build", FORWARD_CASES, ids=[c[0] for c in FORWARD_CASES])
def test_forward_ops_on_gpu(name, build):
    expected = _run_forward(build, "/cpu:0")
    got = _run_forward(build, "/gpu:0")
    for k, (e, g) in enumerate(zip(expected, got)):
        assert type(g) is type(e), (name, k, type(g), type(e))
        assert np.asarray(g).dtype == np.asarray(e).dtype, (name, k)
        np.testing.assert_allclose(g, e, rtol=RTOL, atol=ATOL, err_msg="%s output %d" % (name, k))


def test_random_ops_on_gpu_match_the_cpu_draws():
    def draw(device):
        with tf.Graph().as_default():
            tf.set_random_seed(3)
            with tf.device(device):
                out = [tf.random_normal([4]), tf.random_uniform([2, 2]), tf.truncated_normal([3]),
                       tf.random_uniform([5], 0, 100, dtype=tf.int64),
                       tf.multinomial(tf.log([[0.5, 0.5], [0.1, 0.9]]), 4),
                       tf.random_shuffle(tf.range(6)),
                       tf.nn.dropout(tf.ones([8]), 0.5)]
            with tf.Session() as sess:
                return sess.run(out)

    for g, c in zip(draw("/gpu:0"), draw("/cpu:0")):
        assert type(g) is np.ndarray and g.dtype == c.dtype
        np.testing.assert_array_equal(g, c)


@pytest.mark.parametrize("make_opt", [
    lambda: tf.train.GradientDescentOptimizer(0.1),
    lambda: tf.train.MomentumOptimizer(0.1, 0.9),
    lambda: tf.train.MomentumOptimizer(0.1, 0.9, use_nesterov=True),
    lambda: tf.train.AdagradOptimizer(0.1),
    lambda: tf.train.AdamOptimizer(0.05),
    lambda: tf.train.RMSPropOptimizer(0.05, momentum=0.5),
], ids=["sgd", "momentum", "nesterov", "adagrad", "adam", "rmsprop"])
def test_optimizer_updates_on_gpu_match_the_cpu(make_opt):
    # The dense updates run as fused kernels on a GPU (cupy_kernels._FUSED_SOURCES).
    def train(device):
        with tf.Graph().as_default():
            x = tf.placeholder(tf.float32, [None, 3])
            with tf.device(device):
                w = tf.Variable(np.linspace(-0.5, 0.5, 6, dtype=np.float32).reshape(3, 2))
                b = tf.Variable(np.zeros(2, np.float32))
                loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - 1.0))
                step = make_opt().minimize(loss)
            feed = {x: np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)}
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                for _ in range(5):
                    sess.run(step, feed)
                return sess.run([w, b])

    for g, c in zip(train("/gpu:0"), train("/cpu:0")):
        assert type(g) is np.ndarray
        np.testing.assert_allclose(g, c, rtol=max(RTOL, 1e-5), atol=max(ATOL, 1e-6))


def test_placement_sets_name_registered_ops_only():
    # A misspelled or removed op type in these sets would silently mean nothing.
    from zps.framework import registry
    from zps.ops import cupy_kernels
    for name in ("CPU_ONLY", "METADATA", "HOST_OPS", "HOST_INPUTS", "ON_HOST"):
        ops = getattr(cupy_kernels, name)
        assert not sorted(op for op in ops if op not in registry.REGISTRY), name
