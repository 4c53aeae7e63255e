"""``tf.test``: ``TestCase`` (a unittest.TestCase with sessions and array assertions), ``main``,
``is_gpu_available`` and the gradient checks.

    import zps as tf

    class SquareTest(tf.test.TestCase):
        def test_square(self):
            with self.cached_session():
                self.assertAllClose(self.evaluate(tf.square([2.0, 3.0])), [4.0, 9.0])

    if __name__ == "__main__":
        tf.test.main()
"""
# ruff: noqa: N802 - TF1's assertion names (assertAllClose ...)

import atexit as _atexit
import contextlib as _contextlib
import inspect as _inspect
import json as _json
import logging as _logging
import math as _math
import numbers as _numbers
import os as _os
import random as _random
import shutil as _shutil
import tempfile as _tempfile
import time as _time
import unittest as _unittest
from unittest import mock

import numpy as _np

from zps import app as _app
from zps.client.session import Session as _Session
from zps.framework import default_session as _default_session
from zps.framework import device as _device
from zps.framework.errors import OpError as _OpError
from zps.framework.errors import UnavailableError as _UnavailableError
from zps.framework.graph import Tensor as _Tensor
from zps.framework.graph import reset_default_graph as _reset_default_graph
from zps.ops.random_ops import DEFAULT_GRAPH_SEED as _SEED
from zps.ops.random_ops import set_random_seed as _set_random_seed
from zps.testing.gradient_checker import compute_gradient, compute_gradient_error

__all__ = ["Benchmark", "TestCase", "compute_gradient", "compute_gradient_error",
           "create_local_cluster", "get_temp_dir", "gpu_device_name", "is_built_with_cuda",
           "is_built_with_gpu_support", "is_built_with_rocm", "is_built_with_xla",
           "is_gpu_available", "main", "mock", "test_src_dir_path"]

_log = _logging.getLogger("zps.test")
_TEST_REPORTER_TEST_ENV = "TEST_REPORT_FILE_PREFIX"   # where report_benchmark writes, if set
_CLUSTER_ATTEMPTS = 5   # tries of create_local_cluster when a port it picked was taken meanwhile

_temp_dir = None


def get_temp_dir():
    """A temporary directory for this process's tests, removed at exit: ``tf.test.get_temp_dir()``."""
    global _temp_dir
    if _temp_dir is None:
        _temp_dir = _tempfile.mkdtemp(prefix="zps_test_")
        _atexit.register(_shutil.rmtree, _temp_dir, ignore_errors=True)
    return _temp_dir


def is_gpu_available(cuda_only=False, min_cuda_compute_capability=None):
    """Whether cupy sees a GPU (of at least ``(major, minor)`` compute capability if given):
    ``if tf.test.is_gpu_available(): ...``."""
    n = _device.visible_gpu_count()
    if n == 0 or min_cuda_compute_capability is None:
        return n > 0
    import cupy
    return any(divmod(int(cupy.cuda.Device(i).compute_capability), 10)
               >= tuple(min_cuda_compute_capability) for i in range(n))


def _cupy_is_hip():
    """None without cupy; else whether cupy was built for ROCm (HIP) rather than CUDA."""
    try:
        import cupy
    except ImportError:
        return None
    return bool(getattr(cupy.cuda.runtime, "is_hip", False))


def is_built_with_gpu_support():
    """Whether zps can run ops on a GPU here: cupy (its optional ``gpu`` extra) is importable.
    It says nothing of whether a GPU is present (``is_gpu_available``)."""
    return _cupy_is_hip() is not None


def is_built_with_cuda():
    """Whether zps's GPU backend is CUDA: cupy is importable and built for CUDA."""
    return _cupy_is_hip() is False


def is_built_with_rocm():
    """Whether zps's GPU backend is ROCm: cupy is importable and built for ROCm (HIP)."""
    return _cupy_is_hip() is True


def is_built_with_xla():
    """False: zps has no XLA compiler (its kernels are numpy / cupy calls)."""
    return False


def test_src_dir_path(relative_path):
    """The absolute path of ``relative_path`` under the root of the zps source tree (TF's is
    under its ``tensorflow/`` directory): ``tf.test.test_src_dir_path("tests/fixtures")``."""
    root = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
    return _os.path.join(root, relative_path)


def create_local_cluster(num_workers, num_ps, protocol="grpc", worker_config=None,
                         ps_config=None):
    """Start ``num_workers`` worker and ``num_ps`` ps ``tf.train.Server``s of one cluster in
    this process, on free ports of 127.0.0.1; returns ``(workers, ps_servers)``. Stop them with
    ``server.stop()`` (they also stop when the process exits).

    Between-graph replicated training works as across processes: each worker builds its graph
    with ``tf.train.replica_device_setter(cluster=workers[0].server_def["cluster"])`` and runs
    it in ``tf.Session(workers[i].target)``; the variables live on the ps servers.

    >>> import zps as tf
    >>> workers, ps = tf.test.create_local_cluster(num_workers=1, num_ps=1)
    >>> with tf.Graph().as_default():
    ...     with tf.device("/job:ps/task:0"):
    ...         v = tf.Variable(3.0)
    ...     with tf.Session(workers[0].target) as sess:
    ...         sess.run(v.initializer)
    ...         print(sess.run(v * 2))
    6.0
    >>> for server in workers + ps:
    ...     server.stop()
    """
    from zps.distributed.cluster_spec import ClusterSpec
    from zps.distributed.server import Server
    from zps.transport.ports import free_ports
    jobs = [("worker", int(num_workers), worker_config), ("ps", int(num_ps), ps_config)]
    for attempt in range(_CLUSTER_ATTEMPTS):
        ports = iter(free_ports(num_workers + num_ps, "127.0.0.1"))
        cluster = ClusterSpec({job: ["127.0.0.1:%d" % next(ports) for _ in range(n)]
                               for job, n, _ in jobs if n})
        started = []
        try:
            for job, n, config in jobs:
                for i in range(n):
                    started.append(Server(cluster, job_name=job, task_index=i, protocol=protocol,
                                          config=config, start=True))
        except _UnavailableError as e:   # a port picked was taken before its server bound it
            for server in started:
                server.stop()
            if attempt + 1 == _CLUSTER_ATTEMPTS:
                raise
            _log.info("create_local_cluster: %s; trying other ports", e)
            continue
        return started[:num_workers], started[num_workers:]


class Benchmark:
    """TF's ``tf.test.Benchmark``: subclass it, and report measurements from its methods with
    ``report_benchmark`` (or time a graph with ``run_op_benchmark``).

    An entry is named ``ClassName.method`` (or ``ClassName.<name>``), logged, and printed; with
    ``TEST_REPORT_FILE_PREFIX`` set it is written to ``<prefix><name>`` instead, as JSON (TF
    writes a BenchmarkEntries proto there).
    """

    def _get_name(self, overwrite_name=None):
        """``ClassName.method`` of the outermost Benchmark method on the stack."""
        for frame in _inspect.stack()[::-1]:
            if isinstance(frame.frame.f_locals.get("self"), Benchmark):
                calling = frame.frame.f_locals["self"]
                return "%s.%s" % (type(calling).__name__, overwrite_name or frame.function)
        raise ValueError("Unable to determine calling Benchmark class.")

    def report_benchmark(self, iters=None, cpu_time=None, wall_time=None, throughput=None,
                         extras=None, name=None, metrics=None):
        """Report one benchmark entry: ``iters`` run, ``cpu_time`` / ``wall_time`` seconds
        (per iteration, by TF's convention), ``throughput`` (MB/s), ``extras`` (a dict of
        numbers or strings) and ``metrics`` (a list of dicts with ``name`` and ``value``)."""
        entry = {"name": self._get_name(name)}
        for key, value in (("iters", iters), ("cpu_time", cpu_time), ("wall_time", wall_time),
                           ("throughput", throughput)):
            if value is not None:
                entry[key] = value
        if extras is not None:
            if not isinstance(extras, dict):
                raise TypeError("extras must be a dict")
            entry["extras"] = {k: v if isinstance(v, _numbers.Number) else str(v)
                               for k, v in extras.items()}
        if metrics is not None:
            if not isinstance(metrics, list):
                raise TypeError("metrics must be a list")
            for metric in metrics:
                for field in ("name", "value"):
                    if field not in metric:
                        raise TypeError("metric must has a '%s' field" % field)
            entry["metrics"] = [dict(m) for m in metrics]
        _log.info("Benchmark [%s] %s", entry["name"], entry)
        prefix = _os.environ.get(_TEST_REPORTER_TEST_ENV)
        if prefix is None:
            print(_json.dumps(entry, sort_keys=True))
            return
        path = prefix + entry["name"].replace("/", "__")
        if _os.path.exists(path):
            raise OSError("File already exists: %s" % path)
        with open(path, "w") as f:
            _json.dump(entry, f, sort_keys=True)

    def run_op_benchmark(self, sess, op_or_tensor, feed_dict=None, burn_iters=2, min_iters=10,
                         store_trace=False, store_memory_usage=True, name=None, extras=None,
                         mbs=0):
        """Run ``op_or_tensor`` ``burn_iters`` times, then time ``min_iters`` runs; report and
        return ``{"iters", "wall_time" (the median seconds per run), "extras", "name",
        "throughput" (mbs / wall_time)}``, the extras then also holding the runs' mean and
        standard deviation (``wall_time_mean``, ``wall_time_stdev``). ``store_trace`` and
        ``store_memory_usage`` are accepted (zps records no step traces here)."""
        for _ in range(burn_iters):
            sess.run(op_or_tensor, feed_dict=feed_dict)
        deltas = []
        for _ in range(min_iters):
            start = _time.time()
            sess.run(op_or_tensor, feed_dict=feed_dict)
            deltas.append(_time.time() - start)
        ordered = sorted(deltas)
        median = (ordered[len(ordered) // 2] + ordered[(len(ordered) - 1) // 2]) / 2.0 \
            if ordered else -1
        values = {"iters": min_iters, "wall_time": median,
                  "extras": dict(extras) if extras is not None else {}, "name": name,
                  "throughput": mbs / median if median > 0 else 0.0}
        self.report_benchmark(**values)
        mean = sum(deltas) / len(deltas) if deltas else -1
        stdev = _math.sqrt(sum((d - mean) ** 2 for d in deltas) / (len(deltas) - 1)) \
            if len(deltas) > 1 else -1
        values["extras"].update(wall_time_mean=mean, wall_time_stdev=stdev)
        return values


def gpu_device_name():
    """``"/device:GPU:0"`` if a GPU is available, else ``""``: ``tf.test.gpu_device_name()``."""
    return "/device:GPU:0" if is_gpu_available() else ""


def main(argv=None):
    """Parse the defined flags, then run ``__main__``'s tests with unittest: ``tf.test.main()``."""
    _app.run(lambda remaining: _unittest.main(module="__main__", argv=remaining), argv)


class TestCase(_unittest.TestCase):
    """A unittest.TestCase on a fresh default graph (seeded as TF seeds it), with sessions::

        class AddTest(tf.test.TestCase):
            def test_add(self):
                with self.session() as sess:
                    self.assertAllEqual(sess.run(tf.add(1, 2)), 3)
    """

    def setUp(self):
        super().setUp()
        if self.id().endswith(".test_session"):   # unittest collects the method of that name
            self.skipTest("Not a test: test_session is TestCase's session context manager.")
        self._cached = None   # (session, graph, config, force_gpu) of cached_session()
        self._tempdir = None
        _random.seed(_SEED)
        _np.random.seed(_SEED)
        _reset_default_graph()
        _set_random_seed(_SEED)
        self.addCleanup(self._close_cached_session)

    def _close_cached_session(self):
        if self._cached is not None:
            self._cached[0].close()
            self._cached = None

    def get_temp_dir(self):
        """A temporary directory of this test (under :func:`get_temp_dir`)."""
        if self._tempdir is None:
            self._tempdir = _tempfile.mkdtemp(dir=get_temp_dir())
        return self._tempdir

    @_contextlib.contextmanager
    def _as_default(self, sess, use_gpu, force_gpu):
        """Make ``sess`` and its graph the defaults; ops go to the CPU unless a GPU is allowed."""
        if force_gpu:
            placement = sess.graph.device("/device:GPU:0")
        else:
            placement = _contextlib.nullcontext() if use_gpu else sess.graph.device("/device:CPU:0")
        with sess.as_default(), placement:
            yield sess

    @_contextlib.contextmanager
    def session(self, graph=None, config=None, use_gpu=False, force_gpu=False):
        """A new Session on ``graph`` (default: the default graph), closed at the end of the block:
        ``with self.session() as sess: sess.run(x)``."""
        with _Session(graph=graph, config=config) as sess, \
                self._as_default(sess, use_gpu, force_gpu):
            yield sess

    @_contextlib.contextmanager
    def cached_session(self, graph=None, config=None, use_gpu=False, force_gpu=False):
        """One Session per test, made at the first call and closed when the test ends:
        ``with self.cached_session() as sess: ...``."""
        sess = self._cached_session(graph, config, force_gpu, strict=True)
        with self._as_default(sess, use_gpu, force_gpu):
            yield sess

    @_contextlib.contextmanager
    def test_session(self, graph=None, config=None, use_gpu=False, force_gpu=False):
        """TF1's older name: the cached session, or a new one if ``graph`` is given."""
        if graph is not None:
            with self.session(graph, config, use_gpu, force_gpu) as sess:
                yield sess
            return
        sess = self._cached_session(graph, config, force_gpu, strict=False)
        with self._as_default(sess, use_gpu, force_gpu):
            yield sess

    def _cached_session(self, graph, config, force_gpu, strict):
        if self._cached is None:
            self._cached = (_Session(graph=graph, config=config), graph, config, force_gpu)
        sess, cached_graph, cached_config, cached_force_gpu = self._cached
        if strict and (cached_graph, cached_config, cached_force_gpu) != (graph, config, force_gpu):
            raise ValueError(
                "cached_session() was called with other graph/config/force_gpu arguments than the "
                "call that created this test's cached session; use self.session() for a new one.")
        return sess

    def evaluate(self, tensors):
        """Run ``tensors`` (any nest) in the default session, or the cached session if none:
        ``self.evaluate([x, y])``."""
        sess = _default_session.get()
        if sess is None:
            with self.test_session() as sess:
                return sess.run(tensors)
        return sess.run(tensors)

    def _as_array(self, a):
        if isinstance(a, _Tensor):
            a = self.evaluate(a)
        return a if isinstance(a, _np.ndarray) else _np.array(a)

    def _assert_array_like_all_close(self, a, b, rtol, atol, msg):
        a, b = self._as_array(a), self._as_array(b)
        self.assertEqual(a.shape, b.shape, "Shape mismatch: expected %s, got %s. %s"
                         % (a.shape, b.shape, msg or ""))
        if not _np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True):
            _np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=msg or "",
                                        equal_nan=True)

    def _assert_all_close_recursive(self, a, b, rtol, atol, path, msg):
        where = "".join("[%r]" % p for p in path)
        if isinstance(a, dict) != isinstance(b, dict):
            raise ValueError("Can't compare dict to non-dict, a%s vs b%s. %s" % (where, where,
                                                                                msg or ""))
        if isinstance(a, dict):
            self.assertEqual(sorted(a, key=repr), sorted(b, key=repr),
                             "mismatched keys at a%s and b%s. %s" % (where, where, msg or ""))
            for k in a:
                self._assert_all_close_recursive(a[k], b[k], rtol, atol, path + [k], msg)
            return
        detail = "Mismatched value: a%s is different from b%s. %s" % (where, where, msg or "")
        if isinstance(a, (list, tuple)):
            try:   # a nest of numbers compares as one array; one of arrays item by item
                a_arr, b_arr = self._as_array(a), self._as_array(b)
            except (ValueError, TypeError):
                if len(a) != len(b):
                    raise ValueError("Mismatched length: a%s has %d items, but b%s has %d items. %s"
                                     % (where, len(a), where, len(b), msg or "")) from None
                for i, (x, y) in enumerate(zip(a, b)):
                    self._assert_all_close_recursive(x, y, rtol, atol, path + [i], msg)
                return
            self._assert_array_like_all_close(a_arr, b_arr, rtol, atol, detail)
            return
        self._assert_array_like_all_close(a, b, rtol, atol, detail)

    def assertAllClose(self, a, b, rtol=1e-6, atol=1e-6, msg=None):
        """Assert ``a`` and ``b`` (arrays, Tensors, or nests of lists/tuples/dicts of them) have
        the same structure and shapes and are elementwise close: ``self.assertAllClose(y, [1.0])``."""
        self._assert_all_close_recursive(a, b, rtol, atol, [], msg)

    def assertNotAllClose(self, a, b, **kwargs):
        """Assert :meth:`assertAllClose` fails: ``self.assertNotAllClose(x, x + 1)``."""
        try:
            self.assertAllClose(a, b, **kwargs)
        except AssertionError:
            return
        raise AssertionError("The two values are close at all elements")

    def assertAllEqual(self, a, b, msg=None):
        """Assert same shape and equal elements (NaN equals NaN): ``self.assertAllEqual(i, [1, 2])``."""
        a, b = self._as_array(a), self._as_array(b)
        self.assertEqual(a.shape, b.shape, "Shape mismatch: expected %s, got %s. %s"
                         % (a.shape, b.shape, msg or ""))
        same = a == b
        if a.dtype.kind == "f":
            same = _np.logical_or(same, _np.logical_and(_np.isnan(a), _np.isnan(b)))
        if not _np.all(same):
            _np.testing.assert_array_equal(a, b, err_msg=msg or "")

    def assertNear(self, f1, f2, err, msg=None):
        """Assert ``|f1 - f2| <= err``: ``self.assertNear(loss, 0.5, 1e-3)``."""
        self.assertTrue(f1 == f2 or _math.fabs(f1 - f2) <= err, "%f != %f +/- %f%s"
                        % (f1, f2, err, " (%s)" % msg if msg is not None else ""))

    def assertArrayNear(self, farray1, farray2, err, msg=None):
        """:meth:`assertNear` element by element of two equally long lists of floats."""
        self.assertEqual(len(farray1), len(farray2), msg=msg)
        for f1, f2 in zip(farray1, farray2):
            self.assertNear(float(f1), float(f2), err, msg=msg)

    def assertShapeEqual(self, np_array, tf_tensor, msg=None):
        """Assert a numpy array's shape equals a Tensor's static shape:
        ``self.assertShapeEqual(np.zeros([2, 3]), y)``."""
        if not isinstance(np_array, (_np.ndarray, _np.generic)):
            raise TypeError("np_array must be a Numpy ndarray or Numpy scalar")
        if not isinstance(tf_tensor, _Tensor):
            raise TypeError("tf_tensor must be a Tensor")
        self.assertAllEqual(np_array.shape, tf_tensor.get_shape().as_list(), msg=msg)

    def assertAllInRange(self, target, lower_bound, upper_bound, open_lower_bound=False,
                         open_upper_bound=False):
        """Assert every element lies in ``[lower_bound, upper_bound]`` (ends open if asked):
        ``self.assertAllInRange(probs, 0.0, 1.0)``."""
        target = self._as_array(target)
        if target.dtype.kind not in "iuf":
            raise AssertionError("The value of %s does not have an ordered numeric type, instead "
                                 "it has type: %s" % (target, target.dtype))
        if _np.isnan(target).any():
            raise AssertionError("%d of the %d element(s) are NaN: %s"
                                 % (_np.isnan(target).sum(), target.size, target))
        low = target <= lower_bound if open_lower_bound else target < lower_bound
        high = target >= upper_bound if open_upper_bound else target > upper_bound
        bad = _np.argwhere(low | high)
        if bad.size:
            span = "%s%s, %s%s" % ("(" if open_lower_bound else "[", lower_bound, upper_bound,
                                   ")" if open_upper_bound else "]")
            raise AssertionError("%d of the %d element(s) are outside the range %s. Subscript(s) "
                                 "and value(s) of the offending elements:\n%s"
                                 % (len(bad), target.size, span, "\n".join(
                                     "%s : %s" % (tuple(i), target[tuple(i)]) for i in bad)))

    def assertRaisesOpError(self, expected_err_re_or_predicate):
        """Expect a ``tf.errors.OpError`` whose message matches the regex (or predicate):
        ``with self.assertRaisesOpError("Incompatible shapes"): sess.run(y)``."""
        if callable(expected_err_re_or_predicate):
            return _RaisesPredicate(self, expected_err_re_or_predicate)
        return self.assertRaisesRegex(_OpError, expected_err_re_or_predicate)


class _RaisesPredicate:
    """``with``-block that expects an OpError accepted by a predicate."""

    def __init__(self, test, predicate):
        self.test, self.predicate = test, predicate

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None or not issubclass(exc_type, _OpError):
            raise AssertionError("expected a tf.errors.OpError, got %r" % (exc,))
        if not self.predicate(exc):
            raise AssertionError("the predicate rejected %s: %s" % (exc_type.__name__, exc))
        return True

